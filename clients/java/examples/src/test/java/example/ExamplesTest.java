package example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rediscell.Cell;
import dev.rediscell.jedis.JedisCell;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;

/** docs/clients.md's Java examples, against a real server with the module and a real Tomcat. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"server.address=127.0.0.1", "spring.main.banner-mode=off", "logging.level.root=WARN"})
class ExamplesTest {
  private static Process server;
  private static Path dir;
  private static int redisPort;

  @LocalServerPort
  private int port;

  /** The server REDIS_SERVER names, with the module REDIS_CELL_MODULE names, on a free port. */
  @DynamicPropertySource
  static void redis(DynamicPropertyRegistry registry) throws Exception {
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      redisPort = probe.getLocalPort();
    }
    dir = Files.createTempDirectory("redis-cell-examples");
    String binary = System.getenv().getOrDefault("REDIS_SERVER", "/usr/bin/redis-server");
    server = new ProcessBuilder(binary, "--port", Integer.toString(redisPort), "--bind", "127.0.0.1",
        "--save", "", "--dir", dir.toString(), "--loadmodule", System.getenv("REDIS_CELL_MODULE"))
        .redirectErrorStream(true)
        .redirectOutput(dir.resolve("server.log").toFile())
        .start();
    for (int tries = 0; !answers(); tries++) {
      if (tries == 100) {
        throw new IllegalStateException("the server did not start: " + Files.readString(dir.resolve("server.log")));
      }
      Thread.sleep(50);
    }
    registry.add("spring.data.redis.host", () -> "127.0.0.1");
    registry.add("spring.data.redis.port", () -> redisPort);
  }

  private static boolean answers() {
    try (JedisPooled probe = new JedisPooled(new HostAndPort("127.0.0.1", redisPort))) {
      return "PONG".equals(probe.ping());
    } catch (RuntimeException notYet) {
      return false;
    }
  }

  @AfterAll
  static void stop() throws IOException, InterruptedException {
    server.destroy();
    server.waitFor();
    try (var files = Files.walk(dir)) {
      files.sorted((a, b) -> b.compareTo(a)).forEach(path -> path.toFile().delete());
    }
  }

  @Test
  void theAppAdmits3ThenAnswers429WithItsHeaders() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest get = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/")).build();
    for (long left : List.of(2L, 1L, 0L)) {
      HttpResponse<String> ok = http.send(get, HttpResponse.BodyHandlers.ofString());
      assertEquals(200, ok.statusCode());
      assertEquals("{\"ok\":true}", ok.body());
      assertEquals("\"per-address\";q=3;w=60", ok.headers().firstValue("RateLimit-Policy").orElseThrow());
      assertTrue(ok.headers().firstValue("RateLimit").orElseThrow().startsWith("\"per-address\";r=" + left + ";t="));
      assertTrue(ok.headers().firstValue("Retry-After").isEmpty());
    }
    HttpResponse<String> denied = http.send(get, HttpResponse.BodyHandlers.ofString());
    assertEquals(429, denied.statusCode());
    long retry = Long.parseLong(denied.headers().firstValue("Retry-After").orElseThrow());
    // One unit of 3 a minute comes back 20 s after the first was taken, rounded up.
    assertTrue(retry == 20 || retry == 19, Long.toString(retry));
    assertEquals("\"per-address\";r=0;t=" + retry, denied.headers().firstValue("RateLimit").orElseThrow());
  }

  @Test
  void eachRecipeIsOneCallThatLimits() throws Exception {
    try (JedisPooled redis = new JedisPooled(new HostAndPort("127.0.0.1", redisPort))) {
      Cell cell = JedisCell.over(redis);
      for (int at = 0; at < 3; at++) {
        assertTrue(Recipes.slidingWindow(cell, "bob", 3, 60_000));
        assertTrue(Recipes.funnel(cell, "bob", 3, 1, 60));
        assertTrue(Recipes.counter(cell, "bob", 3, 60));
      }
      assertFalse(Recipes.slidingWindow(cell, "bob", 3, 60_000));
      assertFalse(Recipes.funnel(cell, "bob", 3, 1, 60));
      assertFalse(Recipes.counter(cell, "bob", 3, 60));
      assertTrue(redis.exists("actions:bob") && redis.exists("funnel:bob") && redis.exists("calls:bob"));
      Recipes.main(new String[] {Integer.toString(redisPort)});
      assertTrue(redis.exists("actions:alice"));
    }
  }
}
