package dev.rediscell;

import java.math.BigInteger;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Guava's {@code RateLimiter} calls, for a whole fleet: the same public methods, each deciding
 * with {@code CL.SMOOTH} on one key, so that every instance that shares the key shares one
 * limiter. Code written against Guava's class compiles against this one once its import
 * changes and {@code create} is given a {@link Cell} and a key.
 *
 * <p>What differs from Guava (docs/clients.md, "Guava's RateLimiter, for a fleet" has the table):
 *
 * <ul>
 *   <li>A new key is an idle limiter, full (bursty) or cold (warm-up); Guava's {@code create}
 *       starts a bursty limiter empty.
 *   <li>{@code acquire} returns the seconds the call took, measured, where Guava returns the
 *       wait it computed.
 *   <li>{@link #setRate} takes effect at this instance's next admitted call, and {@link
 *       #getRate} answers this instance's rate; another instance may call the key at its own.
 *   <li>What {@code CL.SMOOTH} cannot carry is refused with {@link IllegalArgumentException}:
 *       a rate that is no ratio of integers the server reads back as the same {@code double},
 *       a warm-up or a timeout whose microseconds (Guava's reading; it drops what is under
 *       one) are no whole milliseconds (the commands carry milliseconds; the server decides
 *       in microseconds), a warm-up of zero or of more than 2^62 ns.
 *   <li>A timeout beyond the longest the server holds (2^62 ns, 146 years) waits as {@code
 *       acquire} does.
 * </ul>
 *
 * <p>A call that waits is held by the server on a connection of its own ({@code BLOCK}); the
 * Functions library cannot hold one and answers its error, a {@link CellException}.
 */
public final class RateLimiter {
  /** The longest period, in seconds, and the longest span or hold, in µs, the server takes. */
  private static final long MAX_PERIOD_SECONDS = (1L << 62) / 1_000_000_000L;

  private static final long MAX_SPAN_MICROS = (1L << 62) / 1_000L;

  private final Cell cell;
  private final String key;
  /** The warm-up in microseconds, a whole number of milliseconds; 0 for the bursty shape. */
  private final long warmupMicros;

  private volatile Rate rate;

  private RateLimiter(Cell cell, String key, double permitsPerSecond, long warmupMicros) {
    this.cell = java.util.Objects.requireNonNull(cell, "cell");
    this.key = java.util.Objects.requireNonNull(key, "key");
    this.warmupMicros = warmupMicros;
    this.rate = Rate.of(permitsPerSecond);
  }

  /** A bursty limiter: one second of idleness stored, as Guava's {@code create(double)}. */
  public static RateLimiter create(Cell cell, String key, double permitsPerSecond) {
    return new RateLimiter(cell, key, permitsPerSecond, 0);
  }

  /** A limiter that warms up over {@code warmupPeriod}, with Guava's cold factor of 3. */
  public static RateLimiter create(
      Cell cell, String key, double permitsPerSecond, Duration warmupPeriod) {
    return create(cell, key, permitsPerSecond, nanos(warmupPeriod), TimeUnit.NANOSECONDS);
  }

  /** A limiter that warms up over {@code warmupPeriod}, with Guava's cold factor of 3. */
  public static RateLimiter create(
      Cell cell, String key, double permitsPerSecond, long warmupPeriod, TimeUnit unit) {
    if (warmupPeriod < 0) {
      throw new IllegalArgumentException("the warm-up period is negative: " + warmupPeriod);
    }
    // Read in microseconds, as Guava reads it.
    long micros = unit.toMicros(warmupPeriod);
    if (micros > MAX_SPAN_MICROS) {
      throw new IllegalArgumentException("CL.SMOOTH takes a warm-up of at most 2^62 ns; "
          + warmupPeriod + " " + unit + " is longer");
    }
    if (micros == 0 || micros % 1000 != 0) {
      throw new IllegalArgumentException("CL.SMOOTH takes a warm-up of whole milliseconds, at"
          + " least one; " + warmupPeriod + " " + unit + " is not");
    }
    return new RateLimiter(cell, key, permitsPerSecond, micros);
  }

  /** This instance's rate; the next admitted call makes it the key's. */
  public void setRate(double permitsPerSecond) {
    rate = Rate.of(permitsPerSecond);
  }

  /**
   * This instance's rate, in permits a second, as Guava answers it: through its stable
   * interval, {@code 1e6 / (1e6 / rate)}, which may differ from the rate given in its last bit.
   */
  public double getRate() {
    return 1e6 / (1e6 / rate.perSecond);
  }

  /** Waits for one permit; the seconds the call took. */
  public double acquire() {
    return acquire(1);
  }

  /** Waits for {@code permits}, held by the server; the seconds the call took. */
  public double acquire(int permits) {
    checkPermits(permits);
    long start = System.nanoTime();
    Outcome outcome = decide(permits, Options.none().block(0));
    if (outcome.limited()) {
      // A server holds a BLOCK 0 call until it is admitted; a denial means it could not hold.
      throw new CellException("the server answered at once instead of holding the call: " + outcome);
    }
    return (System.nanoTime() - start) / 1e9;
  }

  /** Takes one permit if it is free now. */
  public boolean tryAcquire() {
    return tryAcquire(1, 0, TimeUnit.MICROSECONDS);
  }

  /** Takes {@code permits} if they are free now. */
  public boolean tryAcquire(int permits) {
    return tryAcquire(permits, 0, TimeUnit.MICROSECONDS);
  }

  /** Takes one permit if it is free within {@code timeout}, waiting for it. */
  public boolean tryAcquire(Duration timeout) {
    return tryAcquire(1, nanos(timeout), TimeUnit.NANOSECONDS);
  }

  /** Takes one permit if it is free within {@code timeout}, waiting for it. */
  public boolean tryAcquire(long timeout, TimeUnit unit) {
    return tryAcquire(1, timeout, unit);
  }

  /** Takes {@code permits} if they are free within {@code timeout}, waiting for them. */
  public boolean tryAcquire(int permits, Duration timeout) {
    return tryAcquire(permits, nanos(timeout), TimeUnit.NANOSECONDS);
  }

  /**
   * Takes {@code permits} if they are free within {@code timeout}, waiting for them: the
   * server holds the reply until the instant the permits are paid for. A timeout of zero or
   * less asks only whether they are free now, and sends no {@code BLOCK} ({@code BLOCK 0}
   * would wait as long as it takes).
   */
  public boolean tryAcquire(int permits, long timeout, TimeUnit unit) {
    // Read in microseconds, as Guava reads it: what is under a microsecond Guava drops too.
    long timeoutMicros = Math.max(unit.toMicros(timeout), 0);
    checkPermits(permits);
    Options options = Options.none();
    if (timeoutMicros > MAX_SPAN_MICROS) {
      options = options.block(0);
    } else if (timeoutMicros > 0) {
      if (timeoutMicros % 1000 != 0) {
        throw new IllegalArgumentException("CL.SMOOTH takes a timeout of whole milliseconds; "
            + timeout + " " + unit + " is not");
      }
      options = options.block(timeoutMicros / 1000);
    }
    return decide(permits, options).allowed();
  }

  @Override
  public String toString() {
    return "RateLimiter{key=" + key + ", permitsPerSecond=" + getRate()
        + (warmupMicros == 0 ? "" : ", warmupMicros=" + warmupMicros) + "}";
  }

  /** One CL.SMOOTH call at this instance's rate and shape. */
  private Outcome decide(int permits, Options given) {
    Rate now = rate;
    Options options = given.quantity(permits);
    if (warmupMicros == 0) {
      return cell.smooth(key, now.permits, now.periodSeconds, options);
    }
    if (warmupMicros % 1_000_000 == 0) {
      return cell.smooth(key, now.permits, now.periodSeconds, options.warmup(warmupMicros / 1_000_000));
    }
    // In milliseconds, the period is carried as exactly: (q × 1000) / 1000.0 is q.
    return cell.smooth(key, now.permits, now.periodSeconds * 1000, options.ms().warmup(warmupMicros / 1000));
  }

  private static void checkPermits(int permits) {
    if (permits <= 0) {
      throw new IllegalArgumentException("permits must be at least 1: " + permits);
    }
  }

  /** A duration in nanoseconds, saturated at a long's bounds, as Guava reads one. */
  private static long nanos(Duration duration) {
    try {
      return duration.toNanos();
    } catch (ArithmeticException tooLong) {
      return duration.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }

  /**
   * A rate as CL.SMOOTH carries it: {@code permits} per {@code periodSeconds}, two integers
   * the server turns back into exactly {@code perSecond} ({@code permits as f64 / period as
   * f64}), so that its arithmetic is Guava's to the bit.
   */
  private record Rate(double perSecond, long permits, long periodSeconds) {
    static Rate of(double perSecond) {
      if (!(perSecond > 0.0) || Double.isInfinite(perSecond)) {
        throw new IllegalArgumentException("the rate must be positive and finite: " + perSecond);
      }
      // The continued fraction of the double, exact: each convergent p/q is the closest
      // fraction with a denominator up to q, so the first that reads back as the double has
      // the smallest period among the convergents.
      BigInteger[] fraction = exact(perSecond);
      BigInteger num = fraction[0];
      BigInteger den = fraction[1];
      BigInteger p0 = BigInteger.ZERO;
      BigInteger q0 = BigInteger.ONE;
      BigInteger p1 = BigInteger.ONE;
      BigInteger q1 = BigInteger.ZERO;
      BigInteger maxPermits = BigInteger.valueOf(Long.MAX_VALUE);
      BigInteger maxPeriod = BigInteger.valueOf(MAX_PERIOD_SECONDS);
      while (den.signum() != 0) {
        BigInteger[] step = num.divideAndRemainder(den);
        BigInteger p = step[0].multiply(p1).add(p0);
        BigInteger q = step[0].multiply(q1).add(q0);
        if (q.compareTo(maxPeriod) > 0 || p.compareTo(maxPermits) > 0) {
          // Out of bounds: the fractions between this convergent and the last,
          // (p0 + j·p1) / (q0 + j·q1), come nearer the double as j grows; the largest in
          // bounds reads back if any does, and the first that does is found by halving.
          if (q1.signum() == 0) {
            break;
          }
          BigInteger most = step[0].subtract(BigInteger.ONE).min(maxPeriod.subtract(q0).divide(q1));
          if (p1.signum() > 0) {
            most = most.min(maxPermits.subtract(p0).divide(p1));
          }
          if (most.signum() <= 0 || !reads(p0, q0, p1, q1, most, perSecond)) {
            break;
          }
          BigInteger low = BigInteger.ONE;
          while (low.compareTo(most) < 0) {
            BigInteger middle = low.add(most).shiftRight(1);
            if (reads(p0, q0, p1, q1, middle, perSecond)) {
              most = middle;
            } else {
              low = middle.add(BigInteger.ONE);
            }
          }
          BigInteger j = most;
          return new Rate(perSecond, p0.add(j.multiply(p1)).longValue(), q0.add(j.multiply(q1)).longValue());
        }
        if (p.signum() > 0 && (double) p.longValue() / (double) q.longValue() == perSecond) {
          return new Rate(perSecond, p.longValue(), q.longValue());
        }
        p0 = p1;
        q0 = q1;
        p1 = p;
        q1 = q;
        num = den;
        den = step[1];
      }
      throw new IllegalArgumentException("CL.SMOOTH carries a rate as permits per period, two"
          + " integers (a period of at most " + MAX_PERIOD_SECONDS + " s), and no such pair"
          + " gives " + perSecond + " exactly");
    }

    /** Whether the fraction (p0 + j·p1) / (q0 + j·q1) reads back, as the server divides, as the rate. */
    private static boolean reads(BigInteger p0, BigInteger q0, BigInteger p1, BigInteger q1,
        BigInteger j, double rate) {
      long p = p0.add(j.multiply(p1)).longValue();
      long q = q0.add(j.multiply(q1)).longValue();
      return p > 0 && (double) p / (double) q == rate;
    }

    /** The double as a fraction of two integers, exactly (a double is m × 2^e). */
    private static BigInteger[] exact(double value) {
      java.math.BigDecimal decimal = new java.math.BigDecimal(value);
      BigInteger num = decimal.unscaledValue();
      BigInteger den = BigInteger.ONE;
      if (decimal.scale() > 0) {
        den = BigInteger.TEN.pow(decimal.scale());
      } else {
        num = num.multiply(BigInteger.TEN.pow(-decimal.scale()));
      }
      return new BigInteger[] {num, den};
    }
  }
}
