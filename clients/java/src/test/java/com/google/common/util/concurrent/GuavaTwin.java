package com.google.common.util.concurrent;

import java.util.concurrent.TimeUnit;

/**
 * Guava 31's own limiter, on a clock the test sets, to hold the fleet-wide facade to: what a
 * Guava limiter would decide, and the state it would hold, at the same instants. It sits in
 * Guava's package because the pieces it needs are package-private there (the SmoothRateLimiter
 * constructors, SleepingStopwatch, storedPermits and maxPermits), as tests/oracle's does.
 */
public final class GuavaTwin {
  private static final class Clock extends RateLimiter.SleepingStopwatch {
    long nowMicros;

    @Override
    protected long readMicros() {
      return nowMicros;
    }

    @Override
    protected void sleepMicrosUninterruptibly(long micros) {
      // A decision's wait is what the test compares, not time spent.
    }
  }

  private final Clock clock = new Clock();
  private final SmoothRateLimiter limiter;
  /** The rate last set, as given: Guava's getRate answers it through a division. */
  private double rate;

  /**
   * A limiter of {@code permitsPerSecond}, bursty (a second stored) or warming up over {@code
   * warmupMicros}, idle long enough before {@code nowMicros} to be full: what a key that does
   * not exist stands for.
   */
  public GuavaTwin(double permitsPerSecond, long warmupMicros, long nowMicros) {
    clock.nowMicros = nowMicros - 2 * warmupMicros - 2_000_000;
    limiter = warmupMicros == 0
        ? new SmoothRateLimiter.SmoothBursty(clock, 1.0)
        : new SmoothRateLimiter.SmoothWarmingUp(clock, warmupMicros, TimeUnit.MICROSECONDS, 3.0);
    limiter.setRate(permitsPerSecond);
    rate = permitsPerSecond;
    clock.nowMicros = nowMicros;
  }

  /** Guava's tryAcquire at {@code nowMicros}, taking {@code rate} first if it will admit. */
  public boolean tryAcquire(int permits, long timeoutMicros, long nowMicros, double newRate) {
    clock.nowMicros = nowMicros;
    if (newRate != rate && admits(timeoutMicros, nowMicros)) {
      limiter.setRate(newRate);
      rate = newRate;
    }
    return limiter.tryAcquire(permits, timeoutMicros, TimeUnit.MICROSECONDS);
  }

  /** Whether a call with this timeout would be admitted now. */
  public boolean admits(long timeoutMicros, long nowMicros) {
    return limiter.queryEarliestAvailable(nowMicros) - timeoutMicros <= nowMicros;
  }

  public long nextFreeMicros(long nowMicros) {
    return limiter.queryEarliestAvailable(nowMicros);
  }

  public double storedPermits() {
    return limiter.storedPermits;
  }

  public double maxPermits() {
    return limiter.maxPermits;
  }

  /** Whether, resynced at {@code nowMicros}, it would be a new limiter again: free and full. */
  public boolean idle(long nowMicros) {
    long nextFree = limiter.queryEarliestAvailable(nowMicros);
    if (nextFree > nowMicros) {
      return false;
    }
    double stored = Math.min(limiter.maxPermits,
        limiter.storedPermits + (nowMicros - nextFree) / limiter.coolDownIntervalMicros());
    return stored == limiter.maxPermits;
  }
}
