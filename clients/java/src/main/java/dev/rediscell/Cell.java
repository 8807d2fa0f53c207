package dev.rediscell;

import java.util.ArrayList;
import java.util.List;

/**
 * The limiters, typed: each call decides atomically in the server and answers an {@link
 * Outcome}. The calls go to the module's commands, or to its Functions library on a server
 * that has no module; a server with neither answers {@link ModuleMissingException}.
 */
public final class Cell {
  private final Router router;

  /** The limiters over a {@link Transport}; {@code dev.rediscell.jedis.JedisCell} makes one for Jedis. */
  public Cell(Transport transport) {
    this.router = new Router(transport);
  }

  /** Where the calls go, asked of the server on first use. */
  public Route route() {
    return router.route();
  }

  /** {@code CL.THROTTLE key max_burst count period}: GCRA, redis-cell's own. */
  public Outcome throttle(String key, long maxBurst, long count, long period) {
    return throttle(key, maxBurst, count, period, Options.none());
  }

  public Outcome throttle(String key, long maxBurst, long count, long period, Options options) {
    return decide(CellCommand.THROTTLE, key, options, maxBurst, count, period);
  }

  /** {@code CL.FIXED key limit period}: a count that starts again each period. */
  public Outcome fixed(String key, long limit, long period) {
    return fixed(key, limit, period, Options.none());
  }

  public Outcome fixed(String key, long limit, long period, Options options) {
    return decide(CellCommand.FIXED, key, options, limit, period);
  }

  /** {@code CL.WINDOW key limit period}: an exact sliding window. */
  public Outcome window(String key, long limit, long period) {
    return window(key, limit, period, Options.none());
  }

  public Outcome window(String key, long limit, long period, Options options) {
    return decide(CellCommand.WINDOW, key, options, limit, period);
  }

  private Outcome decide(CellCommand command, String key, Options options, long... params) {
    List<String> args = new ArrayList<>(params.length + 5);
    args.add(key);
    for (long param : params) {
      args.add(Long.toString(param));
    }
    args.addAll(options.words());
    return Outcome.of(router.call(command, args));
  }
}
