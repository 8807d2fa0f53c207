package dev.rediscell;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;

/**
 * A real server on a free loopback port, started and stopped by the test: the one {@code
 * REDIS_SERVER} names (Debian's redis-server by default), with the module {@code
 * REDIS_CELL_MODULE} names loaded, or with the Functions library from lua/dist, or with
 * neither.
 */
final class Servers implements AutoCloseable {
  enum With {
    MODULE,
    LIBRARY,
    NEITHER
  }

  private final Process process;
  private final Path dir;
  /** Under a clock that stands still, a server's shutdown waits on timers that never fire. */
  private final boolean frozen;
  final int port;
  final UnifiedJedis client;

  private Servers(Process process, Path dir, int port, UnifiedJedis client, boolean frozen) {
    this.process = process;
    this.frozen = frozen;
    this.dir = dir;
    this.port = port;
    this.client = client;
  }

  static Servers start(With with, String... config) throws IOException, InterruptedException {
    return start(with, null, config);
  }

  /**
   * As {@link #start(With, String...)}, under libfaketime when {@code clock} is given: the
   * server's clock, wall and monotonic, stands at the clock's instant until the test moves it
   * (its timers stand still too, so a held reply is never released).
   */
  static Servers start(With with, FakeClock clock, String... config)
      throws IOException, InterruptedException {
    // A cluster's node also listens on its bus port, 10000 above its own.
    boolean node = List.of(config).contains("--cluster-enabled");
    int port = freePort();
    for (int tries = 0; node && (port > 55535 || !free(port + 10000)); tries++) {
      if (tries == 100) {
        throw new IllegalStateException("no free port whose cluster bus port is free too");
      }
      port = freePort();
    }
    List<String> command = new ArrayList<>(List.of(
        env("REDIS_SERVER", "/usr/bin/redis-server"),
        "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no"));
    command.addAll(List.of(config));
    if (with == With.MODULE) {
      command.add("--loadmodule");
      command.add(module());
    }
    Path dir = Files.createTempDirectory("redis-cell-java");
    command.add("--dir");
    command.add(dir.toString());
    Process process;
    try {
      ProcessBuilder builder = new ProcessBuilder(command);
      if (clock != null) {
        clock.steer(builder.environment());
      }
      process = builder
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("server.log").toFile())
          .start();
    } catch (IOException notStarted) {
      delete(dir);
      throw notStarted;
    }
    UnifiedJedis client = null;
    try {
      for (int tries = 0; tries < 100 && client == null; tries++) {
        UnifiedJedis attempt = Jedises.standalone(port);
        try {
          attempt.ping();
          client = attempt;
        } catch (RuntimeException notYet) {
          attempt.close();
          if (!process.isAlive()) {
            throw new IllegalStateException("the server did not start: "
                + Files.readString(dir.resolve("server.log")));
          }
          Thread.sleep(50);
        }
      }
      if (client == null) {
        throw new IllegalStateException("the server did not answer on port " + port);
      }
      if (with == With.LIBRARY) {
        client.functionLoadReplace(library());
      }
      return new Servers(process, dir, port, client, clock != null);
    } catch (RuntimeException | IOException failed) {
      if (client != null) {
        client.close();
      }
      process.destroyForcibly();
      process.waitFor();
      delete(dir);
      throw failed;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return probe.getLocalPort();
    }
  }

  private static boolean free(int port) {
    try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return probe.getLocalPort() == port;
    } catch (IOException taken) {
      return false;
    }
  }

  /** Sends a command of the server's own to it, as an operator would. */
  Object command(String... words) {
    byte[] name = words[0].getBytes(java.nio.charset.StandardCharsets.UTF_8);
    var args = new redis.clients.jedis.CommandArguments(() -> name);
    for (int at = 1; at < words.length; at++) {
      args.add(words[at]);
    }
    return client.executeCommand(args);
  }

  /** A command whose reply is text (a bulk string), as text. */
  String text(String... words) {
    return new String((byte[]) command(words), java.nio.charset.StandardCharsets.UTF_8);
  }

  /**
   * Makes {@code call} on a thread of its own, waits until the server holds it, runs {@code
   * whileHeld}, then cuts the held client's connection (CLIENT KILL): the call must end, and
   * fail, within 10 s.
   */
  void cutWhileHeld(Runnable call, Runnable whileHeld) throws InterruptedException {
    var failed = new java.util.concurrent.atomic.AtomicReference<Throwable>();
    Thread caller = new Thread(() -> {
      try {
        call.run();
      } catch (Throwable cut) {
        failed.set(cut);
      }
    });
    caller.start();
    String blocked = heldClient();
    if (blocked == null) {
      throw new AssertionError("the call was not held");
    }
    whileHeld.run();
    command("CLIENT", "KILL", "ID", blocked);
    caller.join(10_000);
    if (caller.isAlive()) {
      throw new AssertionError("a cut hold still waits");
    }
    if (failed.get() == null) {
      throw new AssertionError("a cut hold fails its call");
    }
  }

  /** The id of a client the server holds (a blocked one), once there is one; null after 5 s. */
  String heldClient() throws InterruptedException {
    for (int tries = 0; tries < 500; tries++) {
      for (String client : text("CLIENT", "LIST").split("\n")) {
        if (client.matches(".* flags=b .*")) {
          return client.replaceAll("^id=(\\d+) .*$", "$1").trim();
        }
      }
      Thread.sleep(10);
    }
    return null;
  }

  /** The Functions library, as FUNCTION LOAD takes it. */
  static String library() throws IOException {
    return Files.readString(root().resolve("lua/dist/redis_cell.lua"));
  }

  /** Stops the server, after the clients the test opened (which would try to reconnect). */
  @Override
  public void close() throws IOException {
    Clients.closeAll();
    client.close();
    if (frozen) {
      process.destroyForcibly();
    } else {
      process.destroy();
    }
    try {
      if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException interrupted) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    delete(dir);
  }

  private static void delete(Path dir) throws IOException {
    try (var files = Files.walk(dir)) {
      files.sorted((a, b) -> b.compareTo(a)).forEach(path -> path.toFile().delete());
    }
  }

  private static String module() {
    String module = System.getenv("REDIS_CELL_MODULE");
    if (module == null || module.isEmpty()) {
      throw new IllegalStateException("REDIS_CELL_MODULE must name the module to load");
    }
    return module;
  }

  /** The repository's root, where lua/dist and clients/protocol.json are. */
  static Path root() {
    return Path.of(System.getProperty("redis.cell.root", "../.."));
  }

  private static String env(String name, String otherwise) {
    String value = System.getenv(name);
    return value == null || value.isEmpty() ? otherwise : value;
  }
}
