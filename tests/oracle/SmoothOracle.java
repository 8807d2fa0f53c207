// Replays a trace of rate-limiter calls against Guava's own SmoothBursty / SmoothWarmingUp and
// prints Guava's decision and state after each call, so the Rust tests can compare a server's
// answers to Guava's call by call.
//
// It lives in Guava's package because the pieces we need are package-private: the two
// SmoothRateLimiter constructors (the public factories hide coldFactor and read the real clock),
// SleepingStopwatch (to fake time), and the storedPermits / maxPermits fields. Guava 31's jar is
// not sealed, so a class of ours may join the package on the plain class path.
//
//   javac -cp /usr/share/java/guava.jar -d OUT tests/oracle/SmoothOracle.java
//   java -cp OUT:/usr/share/java/guava.jar com.google.common.util.concurrent.SmoothOracle <trace
//
// Input, one call a line (blank lines and lines starting with '#' are skipped):
//   call <key> <now_us> <bursty|warmup> <permits> <period> <s|ms> <span> <cold> <quantity>
//        <timeout_us> <fresh>
// Output, one line a call:
//   <admitted 0|1> <wait_us> <next_free_us> <stored_bits> <max_bits> <early 0|1>
// A malformed line is reported on stderr and ends the run with exit status 2.
package com.google.common.util.concurrent;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

public final class SmoothOracle {

  /** A clock that stands still at whatever we set, and records sleeps instead of sleeping. */
  static final class FakeStopwatch extends RateLimiter.SleepingStopwatch {
    long nowMicros;
    long sleptMicros;

    @Override
    protected long readMicros() {
      return nowMicros;
    }

    @Override
    protected void sleepMicrosUninterruptibly(long micros) {
      sleptMicros += micros;
    }
  }

  /** One key's limiter, with the rate it was last set to (to notice a rate change). */
  static final class Entry {
    final SmoothRateLimiter limiter;
    double permitsPerSecond;

    Entry(SmoothRateLimiter limiter, double permitsPerSecond) {
      this.limiter = limiter;
      this.permitsPerSecond = permitsPerSecond;
    }
  }

  static final class BadLine extends Exception {
    private static final long serialVersionUID = 1L;

    BadLine(String message) {
      super(message);
    }
  }

  private static final Pattern BLANKS = Pattern.compile("\\s+");

  // All limiters share one stopwatch: calls are replayed one at a time, each setting the time.
  private final FakeStopwatch clock = new FakeStopwatch();
  private final Map<String, Entry> limiters = new HashMap<>();

  public static void main(String[] args) throws Exception {
    SmoothOracle oracle = new SmoothOracle();
    StringBuilder out = new StringBuilder(1 << 16);
    PrintStream stdout = new PrintStream(System.out, false, StandardCharsets.US_ASCII);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
    int lineNo = 0;
    for (String line; (line = in.readLine()) != null; ) {
      lineNo++;
      String trimmed = line.trim();
      if (trimmed.isEmpty() || trimmed.startsWith("#")) {
        continue;
      }
      try {
        oracle.call(BLANKS.split(trimmed), out);
      } catch (BadLine | IllegalArgumentException | ArithmeticException e) {
        // Print what was decided so far, so the caller can see where the trace went wrong.
        stdout.print(out);
        stdout.flush();
        System.err.println("SmoothOracle: line " + lineNo + ": " + e.getMessage() + ": " + line);
        System.exit(2);
      }
    }
    stdout.print(out);
    stdout.flush();
  }

  private void call(String[] f, StringBuilder out) throws BadLine {
    if (f.length != 12 || !f[0].equals("call")) {
      throw new BadLine("expected 12 fields starting with 'call'");
    }
    String key = f[1];
    long now = parseLong(f[2], "now_us", Long.MIN_VALUE);
    boolean warmup = oneOf(f[3], "form", "bursty", "warmup");
    long permits = parseLong(f[4], "permits", 1);
    long period = parseLong(f[5], "period", 1);
    boolean seconds = oneOf(f[6], "unit", "ms", "s");
    long span = parseLong(f[7], "span", 0);
    long cold = parseLong(f[8], "cold", Long.MIN_VALUE);
    long quantity = parseLong(f[9], "quantity", 1);
    if (quantity > Integer.MAX_VALUE) {
      throw new BadLine("quantity does not fit an int");
    }
    long timeout = parseLong(f[10], "timeout_us", -1);
    boolean fresh = oneOf(f[11], "fresh", "0", "1");

    double periodSeconds = seconds ? (double) period : (double) period / 1000.0;
    double permitsPerSecond = (double) permits / periodSeconds;
    clock.nowMicros = now;

    // 1. The server forgot this key: note whether Guava's limiter had not yet refilled (then the
    //    server forgot it early), and start over with a fresh one as the server did.
    Entry entry = limiters.get(key);
    boolean early = false;
    if (fresh && entry != null) {
      early = !wouldBeFull(entry.limiter, now);
      entry = null;
    }

    if (entry == null) {
      // 2. A new limiter, built as RateLimiter.create does (construct, then setRate), but long
      //    enough ago to have filled up: a server key that does not exist is an idle limiter.
      //    Bursty starts empty and fills in maxBurst time; warm-up starts full (cold) anyway.
      long spanMicros = Math.multiplyExact(span, seconds ? 1_000_000L : 1_000L);
      clock.nowMicros =
          Math.subtractExact(now, Math.addExact(Math.multiplyExact(2L, spanMicros), 1_000_000L));
      SmoothRateLimiter limiter =
          warmup
              ? new SmoothRateLimiter.SmoothWarmingUp(
                  clock, span, seconds ? TimeUnit.SECONDS : TimeUnit.MILLISECONDS, (double) cold)
              : new SmoothRateLimiter.SmoothBursty(clock, seconds ? (double) span : span / 1000.0);
      limiter.setRate(permitsPerSecond);
      clock.nowMicros = now;
      entry = new Entry(limiter, permitsPerSecond);
      limiters.put(key, entry);
    } else if (permitsPerSecond != entry.permitsPerSecond) {
      // 3. A changed rate takes effect only for a call that will be admitted; a denial must leave
      //    the limiter untouched, and setRate itself resyncs and rescales storedPermits. This is
      //    the same test tryAcquire makes (RateLimiter.canAcquire).
      if (timeout == -1 || entry.limiter.queryEarliestAvailable(now) - timeout <= now) {
        entry.limiter.setRate(permitsPerSecond);
        entry.permitsPerSecond = permitsPerSecond;
      }
    }

    // 4. The call itself.
    SmoothRateLimiter limiter = entry.limiter;
    clock.sleptMicros = 0;
    boolean admitted;
    if (timeout == -1) {
      limiter.acquire((int) quantity);
      admitted = true;
    } else {
      admitted = limiter.tryAcquire((int) quantity, timeout, TimeUnit.MICROSECONDS);
    }

    // 5. Decision and state. A denial reports how much longer a wait would have had to be.
    long nextFree = limiter.queryEarliestAvailable(now);
    long waitMicros = admitted ? clock.sleptMicros : nextFree - timeout - now;
    out.append(admitted ? '1' : '0').append(' ').append(waitMicros).append(' ').append(nextFree);
    appendBits(out.append(' '), limiter.storedPermits);
    appendBits(out.append(' '), limiter.maxPermits);
    out.append(' ').append(early ? '1' : '0').append('\n');
  }

  /**
   * Whether resyncing the limiter to now would leave it exactly as a freshly created one: nothing
   * reserved into the future and storedPermits at maxPermits. Mirrors SmoothRateLimiter.resync
   * without calling it, so the old limiter is not changed.
   */
  private static boolean wouldBeFull(SmoothRateLimiter limiter, long now) {
    long nextFree = limiter.queryEarliestAvailable(now);
    if (nextFree > now) {
      return false;
    }
    double stored =
        Math.min(
            limiter.maxPermits,
            limiter.storedPermits + (double) (now - nextFree) / limiter.coolDownIntervalMicros());
    return stored == limiter.maxPermits;
  }

  private static void appendBits(StringBuilder out, double value) {
    String hex = Long.toHexString(Double.doubleToRawLongBits(value));
    for (int i = hex.length(); i < 16; i++) {
      out.append('0');
    }
    out.append(hex);
  }

  private static long parseLong(String s, String name, long min) throws BadLine {
    long v;
    try {
      v = Long.parseLong(s);
    } catch (NumberFormatException e) {
      throw new BadLine(name + " is not an integer");
    }
    if (v < min) {
      throw new BadLine(name + " must be at least " + min);
    }
    return v;
  }

  /** Returns false for the first choice, true for the second; anything else is malformed. */
  private static boolean oneOf(String s, String name, String no, String yes) throws BadLine {
    if (s.equals(yes)) {
      return true;
    }
    if (!s.equals(no)) {
      throw new BadLine(name + " must be " + no + " or " + yes);
    }
    return false;
  }
}
