package dev.rediscell;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The limiters, typed: each call decides atomically in the server and answers an {@link
 * Outcome}. The calls go to the module's commands, or to its Functions library on a server
 * that has no module; a server with neither answers {@link ModuleMissingException}. Periods,
 * spans and waits are seconds, or milliseconds with {@link Options#ms()}.
 */
public final class Cell {
  private final Router router;

  /** The limiters over a {@link Transport}: {@code JedisCell} and {@code LettuceCell} make one. */
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
    return decide(CellCommand.THROTTLE, options, key, maxBurst, count, period);
  }

  /** {@code CL.FIXED key limit period}: a count that starts again each period. */
  public Outcome fixed(String key, long limit, long period) {
    return fixed(key, limit, period, Options.none());
  }

  public Outcome fixed(String key, long limit, long period, Options options) {
    return decide(CellCommand.FIXED, options, key, limit, period);
  }

  /** {@code CL.FIXED key limit MONTH}: a count that starts again with each calendar unit. */
  public Outcome fixed(String key, long limit, Calendar unit, Options options) {
    return decide(CellCommand.FIXED, options, key, limit, unit.name());
  }

  /** {@code CL.WINDOW key limit period}: an exact sliding window, or {@code BUCKETS n} cells. */
  public Outcome window(String key, long limit, long period) {
    return window(key, limit, period, Options.none());
  }

  public Outcome window(String key, long limit, long period, Options options) {
    return decide(CellCommand.WINDOW, options, key, limit, period);
  }

  /** {@code CL.SMOOTH key permits period}: Guava's RateLimiter, {@code tryAcquire}. */
  public Outcome smooth(String key, long permits, long period, Options options) {
    return decide(CellCommand.SMOOTH, options, key, permits, period);
  }

  /** {@code CL.LEASE key limit lease_time holder}: one of at most {@code limit} leases. */
  public Outcome lease(String key, long limit, long leaseTime, String holder, Options options) {
    if (options.quantity() != 1) {
      throw new IllegalArgumentException("CL.LEASE takes one lease a call, not a quantity");
    }
    List<String> args = words(key, Long.toString(limit), Long.toString(leaseTime), holder);
    args.addAll(options.words());
    return Outcome.of(call(CellCommand.LEASE, args, options));
  }

  /** {@code CL.RELEASE key holder}: whether the holder had a lease to give back. */
  public boolean release(String key, String holder) {
    return integer(router.call(CellCommand.RELEASE, words(key, holder))) == 1;
  }

  /** {@code CL.HOLDERS key}: the leases held, each with the time it has left. */
  public List<Holder> holders(String key, Options options) {
    List<String> args = words(key);
    args.addAll(options.words());
    List<?> items = list(router.call(CellCommand.HOLDERS, args));
    List<Holder> holders = new ArrayList<>(items.size() / 2);
    for (int at = 0; at + 1 < items.size(); at += 2) {
      holders.add(new Holder(text(items.get(at)), integer(items.get(at + 1))));
    }
    return holders;
  }

  /** {@code CL.ALL}: every limiter admits the call, or none takes anything. */
  public Outcome all(List<Limiter> limiters, Options options) {
    return Outcome.of(call(CellCommand.ALL, allArgs(limiters, options), options));
  }

  /** {@code CL.ALL … DETAIL}: each limiter's answer, in the order given. */
  public List<Outcome> allDetail(List<Limiter> limiters, Options options) {
    List<?> replies = list(call(CellCommand.ALL, allArgs(limiters, options.detail()), options));
    List<Outcome> outcomes = new ArrayList<>(replies.size());
    for (Object reply : replies) {
      outcomes.add(Outcome.of(reply));
    }
    return outcomes;
  }

  /** {@code CL.TOP}: the keys this node denied most; the module's alone. */
  public List<Denied> top(Options options) {
    List<?> items = list(router.call(CellCommand.TOP, options.words()));
    List<Denied> denied = new ArrayList<>(items.size() / 3);
    for (int at = 0; at + 2 < items.size(); at += 3) {
      denied.add(new Denied(text(items.get(at)), integer(items.get(at + 1)), integer(items.get(at + 2))));
    }
    return denied;
  }

  /** {@code CL.BAN key span}: locks the key out from now; the ban's end. The module's alone. */
  public long ban(String key, long span, Options options) {
    List<String> args = words(key, Long.toString(span));
    args.addAll(options.words());
    return integer(router.call(CellCommand.BAN, args));
  }

  /** {@code CL.UNBAN key}: whether the key was banned. The module's alone. */
  public boolean unban(String key) {
    return integer(router.call(CellCommand.UNBAN, words(key))) == 1;
  }

  private Outcome decide(CellCommand command, Options options, String key, Object... params) {
    List<String> args = words(key);
    for (Object param : params) {
      args.add(String.valueOf(param));
    }
    // The quantity is positional for these; one unit is what a call that gives none takes.
    if (options.quantity() != 1) {
      args.add(Long.toString(options.quantity()));
    }
    args.addAll(options.words());
    return Outcome.of(call(command, args, options));
  }

  private static List<String> allArgs(List<Limiter> limiters, Options options) {
    if (limiters.isEmpty()) {
      throw new IllegalArgumentException("CL.ALL takes at least one limiter");
    }
    List<String> args = words(Integer.toString(limiters.size()));
    for (Limiter limiter : limiters) {
      args.add(limiter.key());
    }
    for (Limiter limiter : limiters) {
      args.addAll(limiter.words());
    }
    if (options.quantity() != 1) {
      args.add("QUANTITY");
      args.add(Long.toString(options.quantity()));
    }
    args.addAll(options.words());
    return args;
  }

  private Object call(CellCommand command, List<String> args, Options options) {
    return options.blocks() ? router.callHeld(command, args) : router.call(command, args);
  }

  private static List<String> words(String... first) {
    return new ArrayList<>(List.of(first));
  }

  private static List<?> list(Object reply) {
    if (reply instanceof List<?> items) {
      return items;
    }
    throw new CellException("not an array reply: " + reply);
  }

  private static long integer(Object reply) {
    if (reply instanceof Long value) {
      return value;
    }
    // A lone integer, as Lettuce's generic output gives it.
    if (reply instanceof List<?> one && one.size() == 1 && one.get(0) instanceof Long value) {
      return value;
    }
    throw new CellException("not an integer reply: " + reply);
  }

  private static String text(Object reply) {
    if (reply instanceof byte[] bytes) {
      return new String(bytes, StandardCharsets.UTF_8);
    }
    if (reply instanceof String string) {
      return string;
    }
    throw new CellException("not a string reply: " + reply);
  }
}
