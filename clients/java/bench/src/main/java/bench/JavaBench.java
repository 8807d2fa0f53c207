package bench;

import dev.rediscell.Cell;
import dev.rediscell.RateLimiter;
import dev.rediscell.Route;
import dev.rediscell.jedis.JedisCell;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;
import org.redisson.Redisson;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;

/**
 * The Java client's figures (docs/benchmark.md, "The Java client"), run by scripts/bench.sh
 * (PARTS=java):
 *
 * <pre>
 *   instructions PORT PID DUMPS CALLS   server instructions per tryAcquire, ours and Redisson's,
 *                                       counted by callgrind on the server PID runs (its dumps
 *                                       in DUMPS), only while the measured calls run
 *   throughput MODULE LIBRARY THREADS SECONDS   tryAcquire calls a second from this JVM, on a
 *                                       server with the module and on one with the library
 * </pre>
 */
public final class JavaBench {
  private JavaBench() {}

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "instructions" -> instructions(Integer.parseInt(args[1]), args[2], new File(args[3]),
          Integer.parseInt(args[4]));
      case "throughput" -> throughput(Integer.parseInt(args[1]), Integer.parseInt(args[2]),
          Integer.parseInt(args[3]), Integer.parseInt(args[4]));
      default -> throw new IllegalArgumentException("instructions or throughput, not " + args[0]);
    }
  }

  private static RedisClient jedis(int port, int connections) {
    ConnectionPoolConfig pool = new ConnectionPoolConfig();
    pool.setMaxTotal(connections);
    pool.setMaxIdle(connections);
    return RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", port)).poolConfig(pool).build();
  }

  private static RedissonClient redisson(int port, int connections) {
    Config config = new Config();
    config.useSingleServer()
        .setAddress("redis://127.0.0.1:" + port)
        .setConnectionPoolSize(connections)
        .setConnectionMinimumIdleSize(1);
    return Redisson.create(config);
  }

  /** One tryAcquire of the limiter at {@code at}, made before any is measured. */
  private static List<BooleanSupplier> ours(Cell cell, String prefix, int keys, double rate) {
    List<BooleanSupplier> calls = new ArrayList<>(keys);
    for (int at = 0; at < keys; at++) {
      RateLimiter limiter = RateLimiter.create(cell, prefix + at, rate);
      calls.add(limiter::tryAcquire);
    }
    return calls;
  }

  private static List<BooleanSupplier> theirs(RedissonClient redisson, String prefix, int keys,
      long rate, Duration interval) {
    List<BooleanSupplier> calls = new ArrayList<>(keys);
    for (int at = 0; at < keys; at++) {
      RRateLimiter limiter = redisson.getRateLimiter(prefix + at);
      limiter.trySetRate(RateType.OVERALL, rate, interval);
      calls.add(limiter::tryAcquire);
    }
    return calls;
  }

  private static void instructions(int port, String pid, File dumps, int calls) throws Exception {
    try (RedisClient jedis = jedis(port, 1)) {
      RedissonClient redisson = redisson(port, 1);
      try {
        Cell cell = JedisCell.over(jedis);
        System.out.println("| workload | server instructions per call | admitted |");
        System.out.println("|---|---|---|");
        row("RateLimiter.tryAcquire (CL.SMOOTH), 1,000 keys at 1,000 a second", pid, dumps, calls,
            ours(cell, "cell:", 1000, 1000));
        row("Redisson RRateLimiter.tryAcquire, 1,000 keys at 1,000 a second", pid, dumps, calls,
            theirs(redisson, "redisson:", 1000, 1000, Duration.ofSeconds(1)));
        row("RateLimiter.tryAcquire (CL.SMOOTH), one key at 10^6 a second", pid, dumps, calls,
            ours(cell, "cell:hot", 1, 1_000_000));
        // Redisson keeps each permit it grants for the interval: its one key holds every call.
        List<BooleanSupplier> kept = theirs(redisson, "redisson:hot", 1, 1_000_000, Duration.ofHours(1));
        row("Redisson, one key at 10^6 an hour, the first " + calls + " permits kept", pid, dumps, calls, kept);
        for (int more = 0; more < 10_000 - calls; more++) {
          kept.get(0).getAsBoolean();
        }
        row("Redisson, the same key holding 10,000 permits", pid, dumps, calls, kept);
      } finally {
        redisson.shutdown();
      }
    }
  }

  /** One row: {@code calls} calls round the limiters, counted by callgrind alone. */
  private static void row(String workload, String pid, File dumps, int calls, List<BooleanSupplier> limiters)
      throws IOException, InterruptedException {
    for (BooleanSupplier first : limiters) {
      first.getAsBoolean();
    }
    callgrind("-z", pid);
    callgrind("-i", "on", pid);
    int admitted = 0;
    for (int at = 0; at < calls; at++) {
      admitted += limiters.get(at % limiters.size()).getAsBoolean() ? 1 : 0;
    }
    callgrind("-i", "off", pid);
    File[] old = dumps.listFiles((dir, name) -> name.matches("out\\..*\\.\\d+"));
    for (File each : old == null ? new File[0] : old) {
      Files.delete(each.toPath());
    }
    callgrind("-d", pid);
    File newest = null;
    for (File each : dumps.listFiles((dir, name) -> name.startsWith("out."))) {
      newest = newest == null || each.lastModified() > newest.lastModified() ? each : newest;
    }
    long total = 0;
    for (String line : Files.readAllLines(newest.toPath())) {
      if (line.startsWith("totals:")) {
        total = Long.parseLong(line.split("\\s+")[1]);
      }
    }
    System.out.printf("| %s | %,d | %d of %d |%n", workload, total / calls, admitted, calls);
  }

  private static void callgrind(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("callgrind_control"));
    command.addAll(List.of(args));
    Process control = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    if (control.waitFor() != 0) {
      throw new IllegalStateException("callgrind_control " + String.join(" ", args) + " failed");
    }
  }

  private static void throughput(int modulePort, int libraryPort, int threads, int seconds)
      throws Exception {
    int keys = 10_000;
    System.out.printf("| client | route | calls a second (%d threads, %d connections, %,d keys) |%n",
        threads, threads, keys);
    System.out.println("|---|---|---|");
    for (int port : new int[] {modulePort, libraryPort}) {
      try (RedisClient jedis = jedis(port, threads)) {
        Cell cell = JedisCell.over(jedis);
        Route route = cell.route();
        List<BooleanSupplier> limiters = ours(cell, "tp:", keys, 1000);
        System.out.printf("| RateLimiter.tryAcquire over Jedis | %s | %,.0f |%n", route,
            rate(threads, seconds, at -> limiters.get(at)));
      }
    }
    RedissonClient redisson = redisson(modulePort, threads);
    try {
      List<BooleanSupplier> limiters = theirs(redisson, "tp-redisson:", keys, 1000, Duration.ofSeconds(1));
      System.out.printf("| Redisson RRateLimiter.tryAcquire | its script | %,.0f |%n",
          rate(threads, seconds, at -> limiters.get(at)));
    } finally {
      redisson.shutdown();
    }
  }

  /**
   * Calls a second: {@code threads} threads calling random limiters for {@code seconds}, after
   * as long again unmeasured, for the JIT.
   */
  private static double rate(int threads, int seconds, IntFunction<BooleanSupplier> limiter)
      throws InterruptedException {
    run(threads, seconds, limiter);
    return run(threads, seconds, limiter);
  }

  private static double run(int threads, int seconds, IntFunction<BooleanSupplier> limiter)
      throws InterruptedException {
    LongAdder done = new LongAdder();
    long end = System.nanoTime() + seconds * 1_000_000_000L;
    List<Thread> running = new ArrayList<>();
    for (int at = 0; at < threads; at++) {
      Thread caller = new Thread(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        while (System.nanoTime() < end) {
          limiter.apply(random.nextInt(10_000)).getAsBoolean();
          done.increment();
        }
      });
      caller.start();
      running.add(caller);
    }
    for (Thread caller : running) {
      caller.join();
    }
    return done.sum() / (double) seconds;
  }
}
