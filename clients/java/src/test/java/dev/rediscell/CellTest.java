package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rediscell.jedis.JedisCell;
import dev.rediscell.lettuce.LettuceCell;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class CellTest {
  @AfterEach
  void closeClients() {
    Clients.closeAll();
  }

  /** A run of calls, each as [limited, limit, remaining]: what two routes must agree on. */
  private static List<List<Long>> run(Cell cell) {
    List<Function<Cell, Outcome>> calls = List.of(
        c -> c.throttle("t", 2, 1, 60),
        c -> c.throttle("t", 2, 1, 60, Options.none().quantity(2)),
        c -> c.throttle("t", 2, 1, 60),
        c -> c.throttle("t", 2, 1, 60, Options.none().quantity(0)),
        c -> c.fixed("f", 3, 60),
        c -> c.fixed("f", 3, 60, Options.none().quantity(2).dryRun()),
        c -> c.fixed("f", 3, 60, Options.none().quantity(2)),
        c -> c.fixed("f", 3, 60),
        c -> c.fixed("f", 3, 60, Options.none().refund()),
        c -> c.window("w", 2, 60_000, Options.none().ms()),
        c -> c.window("w", 2, 60_000, Options.none().ms().quantity(2)),
        c -> c.window("w", 2, 60_000, Options.none().ms()),
        c -> c.window("b", 3, 3600, Options.none().buckets(60).quantity(3)),
        c -> c.window("b", 3, 3600, Options.none().buckets(60)),
        c -> c.fixed("m", 1, Calendar.MONTH, Options.none()),
        c -> c.fixed("m", 1, Calendar.MONTH, Options.none().countDenied()),
        c -> c.smooth("s", 2, 60, Options.none()),
        c -> c.smooth("s", 2, 60, Options.none().quantity(5)),
        c -> c.lease("l", 1, 60, "alice", Options.none()),
        c -> c.lease("l", 1, 60, "bob", Options.none()),
        c -> c.all(List.of(new Limiter.Throttle("a1", 1, 1, 60), new Limiter.Fixed("a2", 1, 60)), Options.none()),
        c -> c.all(List.of(new Limiter.Throttle("a1", 1, 1, 60), new Limiter.Fixed("a2", 1, 60)), Options.none()),
        c -> c.throttle("g", 4, 1, 60, Options.none().quantity(9).atMost()));
    List<List<Long>> outcomes = new ArrayList<>();
    for (Function<Cell, Outcome> call : calls) {
      Outcome outcome = call.apply(cell);
      outcomes.add(List.of(outcome.limited() ? 1L : 0L, outcome.limit(), outcome.remaining(),
          outcome.granted().orElse(-1)));
    }
    // Leases and CL.ALL's detail, after the run.
    outcomes.add(List.of(cell.holders("l", Options.none()).size() + 0L,
        cell.release("l", "alice") ? 1L : 0L, cell.release("l", "alice") ? 1L : 0L));
    for (Outcome each : cell.allDetail(
        List.of(new Limiter.Throttle("a1", 1, 1, 60), new Limiter.Window("a3", 2, 60)),
        Options.none().dryRun())) {
      outcomes.add(List.of(each.limited() ? 1L : 0L, each.limit(), each.remaining()));
    }
    return outcomes;
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void theModuleAndTheLibraryDecideAlike(Clients client) throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE);
        Servers library = Servers.start(Servers.With.LIBRARY)) {
      Cell viaModule = client.cell(module);
      Cell viaLibrary = client.cell(library);
      assertEquals(Route.MODULE, viaModule.route());
      assertEquals(Route.LIBRARY, viaLibrary.route());
      List<List<Long>> expected = run(viaModule);
      assertEquals(expected, run(viaLibrary));
      // The run has admissions and denials both, so a route that answered one way always
      // would fail it.
      assertTrue(expected.stream().anyMatch(o -> o.get(0) == 1L));
      assertTrue(expected.stream().anyMatch(o -> o.get(0) == 0L));
    }
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void aServerWithNeitherSaysWhatToLoad(Clients client) throws Exception {
    try (Servers bare = Servers.start(Servers.With.NEITHER)) {
      Cell cell = client.cell(bare);
      ModuleMissingException missing =
          assertThrows(ModuleMissingException.class, () -> cell.throttle("k", 1, 1, 60));
      assertTrue(missing.getMessage().contains("MODULE LOAD"), missing.getMessage());
      assertTrue(missing.getMessage().contains("FUNCTION LOAD"), missing.getMessage());
      // Loaded later, the library is found on the next call, without a new client.
      bare.client.functionLoadReplace(Servers.library());
      assertFalse(cell.throttle("k", 1, 1, 60).limited());
      assertEquals(Route.LIBRARY, cell.route());
    }
  }

  @Test
  void aFlushedLibraryIsFoundAgainOnTheCallThatMissesIt() throws Exception {
    try (Servers library =
        Servers.start(Servers.With.LIBRARY, "--enable-module-command", "yes")) {
      Cell cell = JedisCell.over(library.client);
      assertEquals(Route.LIBRARY, cell.route());
      // The module loaded meanwhile, and the library flushed: the call that misses the
      // library finds the module and is answered there, taking its unit once.
      library.command("MODULE", "LOAD", System.getenv("REDIS_CELL_MODULE"));
      library.client.functionFlush();
      Outcome first = cell.fixed("k", 2, 60);
      assertEquals(Route.MODULE, cell.route());
      assertEquals(1, first.remaining());
      // With neither, the same miss says what to load.
      library.command("MODULE", "UNLOAD", "redis-cell");
      assertThrows(ModuleMissingException.class, () -> cell.fixed("k", 2, 60));
    }
  }

  @Test
  void aUserWhoMayNotAskCommandStillReachesTheLibrary() throws Exception {
    for (Servers.With with : List.of(Servers.With.LIBRARY, Servers.With.NEITHER)) {
      try (Servers server = Servers.start(with)) {
        server.command("ACL", "SETUSER", "alice", "on", ">secret", "~*", "+@all", "-command");
        var config = redis.clients.jedis.DefaultJedisClientConfig.builder()
            .user("alice").password("secret").build();
        try (var alice = Jedises.standalone(server.port, config)) {
          Cell cell = JedisCell.over(alice);
          if (with == Servers.With.LIBRARY) {
            assertEquals(0, cell.fixed("k", 1, 60).remaining());
            assertEquals(Route.LIBRARY, cell.route());
          } else {
            assertThrows(ModuleMissingException.class, () -> cell.fixed("k", 1, 60));
          }
        }
      }
    }
  }

  @Test
  void eachCallSendsItsOwnWords() throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE)) {
      Cell cell = JedisCell.over(module.client);
      assertEquals(new Outcome(false, 3, 2, -1, 60, java.util.OptionalLong.empty()),
          cell.throttle("t", 2, 1, 60));
      assertEquals(0, cell.throttle("t", 2, 1, 60, Options.none().quantity(2)).remaining());
      assertTrue(cell.throttle("t", 2, 1, 60).limited());
      assertEquals(1, cell.fixed("f", 3, 60, Options.none().quantity(2).dryRun()).remaining());
      assertEquals(2, cell.fixed("f", 3, 60).remaining());
      Outcome ms = cell.window("w", 2, 60_000, Options.none().ms());
      assertTrue(ms.resetAfter() > 59_000 && ms.resetAfter() <= 60_000, ms.toString());
      assertEquals(3, cell.window("w3", 5, 60, Options.none().quantity(2)).remaining());
      Outcome granted = cell.throttle("g", 4, 1, 60, Options.none().quantity(9).atMost());
      assertEquals(java.util.OptionalLong.of(5), granted.granted());
      assertEquals(4, cell.all(List.of(new Limiter.Fixed("a", 5, 60)),
          Options.none()).remaining());
      assertEquals(2, cell.all(List.of(new Limiter.Fixed("a", 5, 60)),
          Options.none().quantity(2)).remaining());
      assertThrows(IllegalArgumentException.class,
          () -> cell.all(List.of(new Limiter.Fixed("a", 5, 60)), Options.none().detail()));
      // A holder may be called what a keyword is: it is a value, not DETAIL or BLOCK.
      for (String holder : List.of("DETAIL", "BLOCK")) {
        assertFalse(cell.all(List.of(new Limiter.Lease("lease:" + holder, 1, 60)),
            Options.none().holder(holder)).limited());
      }
      // Three of five taken by CL.ALL: a look at one more leaves one.
      assertEquals(1, cell.fixed("a", 5, 60, Options.none().dryRun()).remaining());
    }
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void badInputIsTheLimitersErrorAndWritesNothing(Clients client) throws Exception {
    for (Servers.With with : List.of(Servers.With.MODULE, Servers.With.LIBRARY)) {
      try (Servers server = Servers.start(with)) {
        Cell cell = client.cell(server);
        CellException bad =
            assertThrows(CellException.class, () -> cell.throttle("k", -1, 1, 60));
        assertEquals("ERR max_burst must be >= 0", bad.getMessage(), with.name());
        assertFalse(server.client.exists("k"), with.name());
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void theModulesOwnCommandsAreRefusedOnTheLibrary(Clients client) throws Exception {
    try (Servers library = Servers.start(Servers.With.LIBRARY)) {
      Cell cell = client.cell(library);
      NeedsModuleException needs =
          assertThrows(NeedsModuleException.class, () -> cell.top(Options.none()));
      assertTrue(needs.getMessage().startsWith("CL.TOP needs the redis-cell module"));
      assertThrows(NeedsModuleException.class, () -> cell.ban("k", 60, Options.none()));
      assertThrows(NeedsModuleException.class, () -> cell.unban("k"));
    }
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void theModulesOwnCommandsAnswerOnTheModule(Clients client) throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE)) {
      Cell cell = client.cell(module);
      assertFalse(cell.throttle("x", 0, 1, 60).limited());
      assertTrue(cell.throttle("x", 0, 1, 60).limited());
      List<Denied> top = cell.top(Options.none().count(5));
      assertEquals("x", top.get(0).key());
      assertEquals(1, top.get(0).denied());
      long end = cell.ban("y", 60, Options.none());
      assertTrue(end > System.currentTimeMillis() / 1000, Long.toString(end));
      assertTrue(cell.throttle("y", 5, 1, 60).limited());
      assertTrue(cell.unban("y"));
      assertFalse(cell.unban("y"));
    }
  }

  @Test
  void aLettuceCellWithoutAUriForHoldsRefusesThemUnsent() throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE)) {
      RedisClient lettuce = RedisClient.create(RedisURI.create("127.0.0.1", module.port));
      Clients.closeLater(lettuce::shutdown);
      var connection = lettuce.connect();
      Clients.closeLater(connection);
      Cell cell = LettuceCell.over(connection);
      assertThrows(UnsupportedOperationException.class,
          () -> cell.throttle("z", 0, 1, 60, Options.none().block(100)));
      assertFalse(module.client.exists("z"));
    }
  }

  /** A Cell whose client gives up on a reply after 300 ms, as its read or command timeout. */
  private static Cell impatient(Clients client, Servers server) {
    if (client == Clients.JEDIS) {
      var jedis = Jedises.standalone(server.port,
          redis.clients.jedis.DefaultJedisClientConfig.builder().socketTimeoutMillis(300).build());
      Clients.closeLater(jedis);
      return JedisCell.over(jedis);
    }
    RedisURI uri = RedisURI.builder().withHost("127.0.0.1").withPort(server.port)
        .withTimeout(java.time.Duration.ofMillis(300)).build();
    RedisClient lettuce = RedisClient.create(uri);
    Clients.closeLater(lettuce::shutdown);
    var connection = lettuce.connect();
    Clients.closeLater(connection);
    return LettuceCell.over(connection, uri);
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void aHeldCallOutlastsTheClientsTimeout(Clients client) throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE)) {
      Cell cell = impatient(client, module);
      Options oneASecond = Options.none().ms();
      assertFalse(cell.throttle("h", 0, 1, 1000, oneASecond).limited());
      long start = System.nanoTime();
      Outcome held = cell.throttle("h", 0, 1, 1000, oneASecond.block(5000));
      long waitedMs = (System.nanoTime() - start) / 1_000_000;
      assertFalse(held.limited());
      assertTrue(waitedMs >= 500, "waited " + waitedMs + " ms");
      // The connection a hold went on serves the next; closing the Cell closes it.
      assertFalse(cell.throttle("h", 0, 1, 1000, oneASecond.block(5000)).limited());
      int before = module.text("CLIENT", "LIST").split("\n").length;
      cell.close();
      int after = module.text("CLIENT", "LIST").split("\n").length;
      for (int tries = 0; tries < 100 && client == Clients.LETTUCE && after >= before; tries++) {
        Thread.sleep(10);
        after = module.text("CLIENT", "LIST").split("\n").length;
      }
      if (client == Clients.LETTUCE) {
        assertTrue(after < before, "the hold's connection is still open: " + before + " " + after);
        // Closed, it opens nothing more.
        assertThrows(IllegalStateException.class,
            () -> cell.throttle("h", 0, 1, 1000, oneASecond.block(5000)));
      }
    }
  }

  /**
   * A held call whose connection is cut fails, and is not sent again: a client that re-sent it
   * on a new connection would take the unit it waited for once that unit came.
   */
  @ParameterizedTest
  @EnumSource(Clients.class)
  void aCutHoldIsNotSentAgain(Clients client) throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE)) {
      Cell cell = client.cell(module);
      Options oneASecond = Options.none().ms();
      assertFalse(cell.throttle("c", 0, 1, 1000, oneASecond).limited());
      module.cutWhileHeld(() -> cell.throttle("c", 0, 1, 1000, oneASecond.block(5000)), () -> { });
      Thread.sleep(1_500);
      Outcome look = cell.throttle("c", 0, 1, 1000, oneASecond.dryRun());
      assertFalse(look.limited(), "the cut call was sent again and took the unit");
    }
  }
}
