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
public final class Cell implements AutoCloseable {
  private final Transport transport;
  private final Router router;

  /** The limiters over a {@link Transport}: {@code JedisCell} and {@code LettuceCell} make one. */
  public Cell(Transport transport) {
    this.transport = transport;
    this.router = new Router(transport);
  }

  /**
   * Closes what the Cell opened itself (Lettuce's connections for held calls); the client it
   * was made over stays open, the application's.
   */
  @Override
  public void close() {
    transport.close();
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
  public Outcome fixed(String key, long limit, Calendar unit) {
    return fixed(key, limit, unit, Options.none());
  }

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
    return decide(CellCommand.LEASE, options, key, limit, leaseTime, holder);
  }

  /** {@code CL.RELEASE key holder}: whether the holder had a lease to give back. */
  public boolean release(String key, String holder) {
    return integer(send(CellCommand.RELEASE, Options.none(), key, holder)) == 1;
  }

  /** {@code CL.HOLDERS key}: the leases held, each with the time it has left. */
  public List<Holder> holders(String key, Options options) {
    List<?> items = list(send(CellCommand.HOLDERS, options, key));
    List<Holder> holders = new ArrayList<>(items.size() / 2);
    for (int at = 0; at + 1 < items.size(); at += 2) {
      holders.add(new Holder(text(items.get(at)), integer(items.get(at + 1))));
    }
    return holders;
  }

  /** {@code CL.ALL}: every limiter admits the call, or none takes anything. */
  public Outcome all(List<Limiter> limiters, Options options) {
    // Refused before it is sent: its reply would be each limiter's, after units were taken.
    if (options.names("DETAIL")) {
      throw new IllegalArgumentException("CL.ALL with DETAIL answers each limiter: allDetail");
    }
    return Outcome.of(call(CellCommand.ALL, allArgs(limiters, options), options));
  }

  /** {@code CL.ALL … DETAIL}: each limiter's answer, in the order given. */
  public List<Outcome> allDetail(List<Limiter> limiters, Options options) {
    Options detailed = options.names("DETAIL") ? options : options.detail();
    List<?> replies = list(call(CellCommand.ALL, allArgs(limiters, detailed), options));
    List<Outcome> outcomes = new ArrayList<>(replies.size());
    for (Object reply : replies) {
      outcomes.add(Outcome.of(reply));
    }
    return outcomes;
  }

  /** {@code CL.TOP}: the keys this node denied most; the module's alone. */
  public List<Denied> top(Options options) {
    List<?> items = list(send(CellCommand.TOP, options));
    List<Denied> denied = new ArrayList<>(items.size() / 3);
    for (int at = 0; at + 2 < items.size(); at += 3) {
      denied.add(new Denied(text(items.get(at)), integer(items.get(at + 1)), integer(items.get(at + 2))));
    }
    return denied;
  }

  /** {@code CL.BAN key span}: locks the key out from now; the ban's end. The module's alone. */
  public long ban(String key, long span, Options options) {
    return integer(send(CellCommand.BAN, options, key, span));
  }

  /** {@code CL.UNBAN key}: whether the key was banned. The module's alone. */
  public boolean unban(String key) {
    return integer(send(CellCommand.UNBAN, Options.none(), key)) == 1;
  }

  private Outcome decide(CellCommand command, Options options, Object... params) {
    return Outcome.of(send(command, options, params));
  }

  /** Sends a command with its parameters and options; a call that may wait, as held. */
  private Object send(CellCommand command, Options options, Object... params) {
    return call(command, args(command, options, params), options);
  }

  /**
   * A call's arguments after its name: its parameters, its quantity where the command takes
   * one (one unit is what a call that gives none takes, so it is left out), then its options.
   */
  private static List<String> args(CellCommand command, Options options, Object... params) {
    List<String> args = new ArrayList<>(params.length + options.words().size() + 2);
    for (Object param : params) {
      args.add(String.valueOf(java.util.Objects.requireNonNull(param, "a call's parameter")));
    }
    if (options.quantity() != 1) {
      switch (command.quantity()) {
        case POSITIONAL -> args.add(Long.toString(options.quantity()));
        case KEYWORD -> args.addAll(List.of("QUANTITY", Long.toString(options.quantity())));
        case NONE -> throw new IllegalArgumentException(command.command() + " takes no quantity");
      }
    }
    args.addAll(options.words());
    return args;
  }

  private static List<String> allArgs(List<Limiter> limiters, Options options) {
    if (limiters.isEmpty()) {
      throw new IllegalArgumentException("CL.ALL takes at least one limiter");
    }
    List<Object> params = new ArrayList<>();
    params.add(limiters.size());
    for (Limiter limiter : limiters) {
      params.add(limiter.key());
    }
    for (Limiter limiter : limiters) {
      params.addAll(limiter.words());
    }
    return args(CellCommand.ALL, options, params.toArray());
  }

  private Object call(CellCommand command, List<String> args, Options options) {
    return options.blocks() ? router.callHeld(command, args, options.block()) : router.call(command, args);
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
