package dev.rediscell;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;

/**
 * A server's clock under libfaketime, read from a file the test rewrites: every reading, to the
 * microsecond, is the instant last set. Servers whose allocator deadlocks under libfaketime
 * (Debian's Redis) never start under it; {@link #controls} asks the server under test.
 */
final class FakeClock implements AutoCloseable {
  static final Path LIBFAKETIME = Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1");

  private static final DateTimeFormatter CIVIL =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

  private final Path dir;
  private final Path file;

  FakeClock(long unixMicros) throws IOException {
    dir = Files.createTempDirectory("redis-cell-clock");
    file = dir.resolve("faketime");
    setMicros(unixMicros);
  }

  private static Boolean controls;

  /** Whether the server under test runs under libfaketime and reads its clock from it. */
  static synchronized boolean controls() throws IOException, InterruptedException {
    if (controls == null) {
      controls = Files.exists(LIBFAKETIME) && probe();
    }
    return controls;
  }

  /**
   * Skips the test where the server under test does not run under libfaketime, saying so; or,
   * where REDIS_CELL_REQUIRE_CLOCK is set and not empty (scripts/test.sh's Valkey run), fails
   * it.
   */
  static void assumeControls() throws IOException, InterruptedException {
    boolean controls = controls();
    String required = System.getenv("REDIS_CELL_REQUIRE_CLOCK");
    if (!controls && required != null && !required.isEmpty()) {
      throw new AssertionError("REDIS_CELL_REQUIRE_CLOCK is set, and the server under test does"
          + " not run under libfaketime (" + LIBFAKETIME + ")");
    }
    org.junit.jupiter.api.Assumptions.assumeTrue(controls,
        "skipped: the server under test does not run under libfaketime");
  }

  private static boolean probe() throws IOException, InterruptedException {
    long at = 1_900_000_000_000_000L;
    try (FakeClock clock = new FakeClock(at);
        Servers server = Servers.start(Servers.With.NEITHER, clock)) {
      Object seconds = ((List<?>) server.command("TIME")).get(0);
      return new String((byte[]) seconds, java.nio.charset.StandardCharsets.US_ASCII)
          .equals(Long.toString(at / 1_000_000));
    } catch (IllegalStateException neverAnswered) {
      return false;
    }
  }

  /**
   * Moves the clock to microsecond {@code unixMicros}. libfaketime reads the fraction as a
   * double and truncates it: half a microsecond more keeps the reading on the microsecond. The
   * file is written beside its place and moved there whole.
   */
  void setMicros(long unixMicros) throws IOException {
    long ms = Math.floorDiv(unixMicros, 1000);
    long us = Math.floorMod(unixMicros, 1000);
    Path next = dir.resolve("faketime.next");
    Files.writeString(next, CIVIL.format(Instant.ofEpochMilli(ms)) + String.format("%03d5%n", us));
    Files.move(next, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  /** Makes a server started with this environment read this clock. */
  void steer(Map<String, String> environment) {
    environment.put("LD_PRELOAD", LIBFAKETIME.toString());
    environment.put("FAKETIME_TIMESTAMP_FILE", file.toString());
    environment.put("FAKETIME_NO_CACHE", "1");
  }

  @Override
  public void close() throws IOException {
    try (var files = Files.walk(dir)) {
      files.sorted((a, b) -> b.compareTo(a)).forEach(path -> path.toFile().delete());
    }
  }
}
