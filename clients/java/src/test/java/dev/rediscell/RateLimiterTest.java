package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.GuavaTwin;
import dev.rediscell.jedis.JedisCell;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.HostAndPort;

/** The fleet-wide RateLimiter: Guava's decisions, its refusals, and what it adds. */
class RateLimiterTest {
  private static final long BASE_US = 1_900_000_000_000_000L;

  @AfterEach
  void closeClients() {
    Clients.closeAll();
  }

  /** [nextFreeMicros, storedPermits bits, maxPermits bits] of a CL.SMOOTH key, or null. */
  private static long[] state(Servers server, String key) {
    byte[] value = server.client.get(key.getBytes(StandardCharsets.UTF_8));
    if (value == null) {
      return null;
    }
    ByteBuffer bytes = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
    return new long[] {bytes.getLong(0), bytes.getLong(8), bytes.getLong(16)};
  }

  private static long[] state(GuavaTwin twin, long nowMicros) {
    return new long[] {
      twin.nextFreeMicros(nowMicros),
      Double.doubleToRawLongBits(twin.storedPermits()),
      Double.doubleToRawLongBits(twin.maxPermits())
    };
  }

  /** One key, its fleet-wide limiter and Guava's limiter for it. */
  private static final class Key {
    final String name;
    final long warmupMicros;
    final RateLimiter facade;
    double rate;
    GuavaTwin twin;

    Key(Cell cell, String name, double rate, long warmupMicros) {
      this.name = name;
      this.rate = rate;
      this.warmupMicros = warmupMicros;
      this.facade = limiter(cell);
    }

    RateLimiter limiter(Cell cell) {
      return warmupMicros == 0
          ? RateLimiter.create(cell, name, rate)
          : RateLimiter.create(cell, name, rate, Duration.ofNanos(warmupMicros * 1000));
    }
  }

  /**
   * Thousands of random calls of every method on keys bursty and warming up, at rates that
   * change, against Guava's own limiter at the same microseconds: the same admissions, and the
   * same state to the bit. A call the server holds (its timers stand still under this clock)
   * is cut by closing its connection, and keeps its reservation, as the server promises.
   */
  @Test
  void decisionsAreGuavasUnderAControlledClock() throws Exception {
    FakeClock.assumeControls();
    double[] rates = {0.5, 1, 2, 2.5, 10, 1 / 3.0, 0.1, 7.25, 100};
    long[] warmups = {0, 0, 0, 1_000_000, 2_500_000, 300_000};
    long now = BASE_US;
    try (FakeClock clock = new FakeClock(now);
        Servers server = Servers.start(Servers.With.MODULE, clock)) {
      Cell cell = JedisCell.over(server.client);
      Random rng = new Random(49);
      List<Key> keys = new ArrayList<>();
      for (int at = 0; at < 8; at++) {
        keys.add(new Key(cell, "k" + at, rates[rng.nextInt(rates.length)],
            warmups[at % warmups.length]));
      }
      int denied = 0;
      int held = 0;
      int expired = 0;
      for (int call = 0; call < 2_000; call++) {
        Key key = keys.get(rng.nextInt(keys.size()));
        now += switch (rng.nextInt(8)) {
          case 0, 1 -> 0;
          case 2, 3 -> rng.nextInt(1_000);
          case 4, 5 -> rng.nextInt(500_000);
          case 6 -> rng.nextInt(2_000_000);
          default -> rng.nextInt(6_000_000);
        };
        if (rng.nextInt(10) == 0) {
          key.rate = rates[rng.nextInt(rates.length)];
          key.facade.setRate(key.rate);
        }
        int permits = rng.nextInt(5) == 0 ? 1 + rng.nextInt(12) : 1;
        int form = rng.nextInt(10);
        clock.setMicros(now);
        String where = "call " + call + " on " + key.name + " at " + now;
        if (!server.client.exists(key.name)) {
          if (key.twin != null) {
            assertTrue(key.twin.idle(now), where + ": the key expired before Guava's was idle");
            expired++;
          }
          key.twin = new GuavaTwin(key.rate, key.warmupMicros, now);
        }
        long timeoutMs = form < 3 ? 1 + rng.nextInt(1_500) : 0;
        long busyMicros = key.twin.nextFreeMicros(now) - now;
        if (form < 3 && busyMicros > 0 && rng.nextBoolean()) {
          // On the edge: the shortest timeout that admits, or the longest that does not.
          timeoutMs = (busyMicros + 999) / 1000 - rng.nextInt(2);
        }
        long timeoutMicros = form == 3 ? Long.MAX_VALUE : timeoutMs * 1000;
        boolean holds = timeoutMicros > 0 && key.twin.admits(timeoutMicros, now)
            && key.twin.nextFreeMicros(now) > now;
        Supplier<Boolean> decide = facadeCall(key.facade, form, permits, timeoutMs);
        boolean expected = key.twin.tryAcquire(permits, timeoutMicros, now, key.rate);
        if (holds) {
          held++;
          heldAndCut(server, key, form, permits, timeoutMs);
        } else {
          assertEquals(expected, answered(decide, where), where);
        }
        denied += expected ? 0 : 1;
        assertArrayEquals(state(key.twin, now), state(server, key.name), where);
      }
      assertTrue(denied > 100 && held > 20 && expired > 5,
          denied + " denied, " + held + " held, " + expired + " expired");
    }
  }

  /**
   * The call's answer, which must come at once: under this clock a call the server holds is
   * never released, and would hang the test.
   */
  private static boolean answered(Supplier<Boolean> call, String where) throws Exception {
    var caller = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      return caller.submit(call::get).get(5, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException held) {
      throw new AssertionError(where + ": held, where Guava's would not wait");
    } finally {
      // A call left held ends with its server, which the test stops on its way out.
      caller.shutdownNow();
    }
  }

  /**
   * One of the facade's calls: {@code form} 3 is acquire, forms 0 to 2 wait up to {@code
   * timeoutMs} through each of tryAcquire's timed methods, the rest ask for now.
   */
  private static Supplier<Boolean> facadeCall(RateLimiter limiter, int form, int permits, long timeoutMs) {
    boolean one = permits == 1;
    return switch (form) {
      case 0 -> () -> one ? limiter.tryAcquire(Duration.ofMillis(timeoutMs))
          : limiter.tryAcquire(permits, Duration.ofMillis(timeoutMs));
      case 1 -> () -> one ? limiter.tryAcquire(timeoutMs, TimeUnit.MILLISECONDS)
          : limiter.tryAcquire(permits, timeoutMs, TimeUnit.MILLISECONDS);
      case 2 -> () -> limiter.tryAcquire(permits, timeoutMs * 1000, TimeUnit.MICROSECONDS);
      case 3 -> () -> (one ? limiter.acquire() : limiter.acquire(permits)) >= 0;
      case 4 -> () -> one ? limiter.tryAcquire() : limiter.tryAcquire(permits);
      default -> () -> limiter.tryAcquire(permits, Duration.ZERO);
    };
  }

  /**
   * A call the server holds, made by an instance at the same rate on a client of its own: once
   * its reservation is written, its connection is closed, and the call fails while the
   * reservation stays.
   */
  private static void heldAndCut(Servers server, Key key, int form, int permits, long timeoutMs)
      throws Exception {
    long[] before = state(server, key.name);
    try (var own = Jedises.standalone(server.port)) {
      RateLimiter other = key.limiter(JedisCell.over(own));
      server.cutWhileHeld(() -> facadeCall(other, form, permits, timeoutMs).get(),
          () -> assertFalse(java.util.Arrays.equals(before, state(server, key.name)), "no reservation"));
    }
  }

  /** Two instances at two rates on one key: each call decides at its caller's rate. */
  @Test
  void instancesAtTwoRatesShareOneKey() throws Exception {
    FakeClock.assumeControls();
    try (FakeClock clock = new FakeClock(BASE_US);
        Servers server = Servers.start(Servers.With.MODULE, clock)) {
      Cell cell = JedisCell.over(server.client);
      RateLimiter slow = RateLimiter.create(cell, "shared", 2);
      RateLimiter fast = RateLimiter.create(cell, "shared", 4);
      // Two stored permits and one that pays: the next free instant is 500 ms away.
      assertTrue(slow.tryAcquire() && slow.tryAcquire() && slow.tryAcquire());
      assertFalse(slow.tryAcquire());
      assertFalse(fast.tryAcquire(), "the next free instant is the key's, whatever the rate");
      assertEquals(Double.doubleToRawLongBits(2.0), state(server, "shared")[2]);
      clock.setMicros(BASE_US + 500_000);
      assertTrue(fast.tryAcquire());
      // The admitted call made its rate the key's: Guava's setRate(4), then tryAcquire.
      assertEquals(Double.doubleToRawLongBits(4.0), state(server, "shared")[2]);
      assertEquals(BASE_US + 750_000, state(server, "shared")[0]);
      slow.setRate(8);
      assertEquals(8.0, slow.getRate());
      assertEquals(4.0, fast.getRate());
      assertEquals(Double.doubleToRawLongBits(4.0), state(server, "shared")[2], "setRate writes nothing");
      clock.setMicros(BASE_US + 750_000);
      assertTrue(slow.tryAcquire());
      assertEquals(Double.doubleToRawLongBits(8.0), state(server, "shared")[2]);
      assertEquals(BASE_US + 875_000, state(server, "shared")[0]);
    }
  }

  /** What CL.SMOOTH cannot carry is refused as Guava refuses bad input, and writes nothing. */
  @Test
  void inputTheCommandCannotCarryIsRefused() throws Exception {
    try (Servers server = Servers.start(Servers.With.MODULE)) {
      Cell cell = JedisCell.over(server.client);
      for (double rate : new double[] {0, -1, Double.NaN, Double.POSITIVE_INFINITY, 1e-12, 1e19}) {
        assertThrows(IllegalArgumentException.class, () -> RateLimiter.create(cell, "k", rate),
            Double.toString(rate));
      }
      RateLimiter limiter = RateLimiter.create(cell, "k", 2.5);
      assertThrows(IllegalArgumentException.class, () -> limiter.setRate(0));
      assertEquals(2.5, limiter.getRate());
      assertThrows(IllegalArgumentException.class,
          () -> RateLimiter.create(cell, "k", 2, Duration.ofNanos(999_999)));
      assertThrows(IllegalArgumentException.class,
          () -> RateLimiter.create(cell, "k", 2, 1500, TimeUnit.MICROSECONDS));
      assertThrows(IllegalArgumentException.class,
          () -> RateLimiter.create(cell, "k", 2, 0, TimeUnit.SECONDS));
      assertThrows(IllegalArgumentException.class,
          () -> RateLimiter.create(cell, "k", 2, -1, TimeUnit.SECONDS));
      assertThrows(IllegalArgumentException.class, () -> limiter.acquire(0));
      assertThrows(IllegalArgumentException.class, () -> limiter.tryAcquire(0));
      assertThrows(IllegalArgumentException.class, () -> limiter.tryAcquire(-1, Duration.ZERO));
      assertThrows(IllegalArgumentException.class,
          () -> limiter.tryAcquire(Duration.ofMillis(1).plusNanos(500_000)));
      assertThrows(IllegalArgumentException.class,
          () -> RateLimiter.create(cell, "k", 2, Duration.ofDays(365 * 200)));
      assertFalse(server.client.exists("k"));
      // A timeout past the longest hold waits as acquire does: free now, admitted at once.
      assertTrue(limiter.tryAcquire(Long.MAX_VALUE, TimeUnit.NANOSECONDS));
      assertTrue(limiter.tryAcquire(Duration.ofSeconds(Long.MAX_VALUE)));
      // A rate of integers, or of a decimal's, is the server's to the bit: 1/3 a second is
      // one permit per 3 seconds, and 0.1 one per 10; the last is 3196663 per 4276301466 s, a
      // fraction between two convergents of its continued fraction.
      for (double rate : new double[] {1 / 3.0, 0.1, 123.456, 1e9, 0.000747529851535495}) {
        // Two seconds' worth (at least 2), so that the key outlives the look that follows: a
        // full key expires, and at 1e9 a second one permit refills within the millisecond.
        int permits = (int) Math.max(2, 2 * rate);
        assertTrue(RateLimiter.create(cell, "r" + rate, rate).tryAcquire(permits), Double.toString(rate));
        assertEquals(Double.doubleToRawLongBits(rate), state(server, "r" + rate)[2]);
      }
    }
  }

  /**
   * acquire answers the seconds it was held; a timeout of zero or less sends no BLOCK, which
   * the library would refuse, where acquire's is refused with the library's error.
   */
  @ParameterizedTest
  @EnumSource(Clients.class)
  void acquireIsHeldAndMeasuredAndZeroTimeoutsNeverWait(Clients client) throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE);
        Servers library = Servers.start(Servers.With.LIBRARY)) {
      RateLimiter held = RateLimiter.create(client.cell(module), "a", 2);
      assertTrue(held.acquire() < 0.4);
      // Two permits, one stored and one paid for: the next is free 500 ms after this call.
      long paid = System.nanoTime();
      held.acquire(2);
      double waited = held.acquire();
      double sincePaid = (System.nanoTime() - paid) / 1e9;
      assertTrue(sincePaid > 0.49 && waited <= sincePaid && waited > 0, waited + " " + sincePaid);
      // One permit in 10 s: the first goes and pays, so the next is refused for seconds.
      RateLimiter slow = RateLimiter.create(client.cell(module), "slow", 0.1);
      assertTrue(slow.tryAcquire());
      assertFalse(slow.tryAcquire(-5, TimeUnit.SECONDS));
      RateLimiter viaLibrary = RateLimiter.create(client.cell(library), "a", 2);
      assertTrue(viaLibrary.tryAcquire(Duration.ZERO));
      assertTrue(viaLibrary.tryAcquire(-1, TimeUnit.MILLISECONDS));
      CellException refused = assertThrows(CellException.class, () -> viaLibrary.acquire());
      assertTrue(refused.getMessage().contains("BLOCK"), refused.getMessage());
    }
  }
}
