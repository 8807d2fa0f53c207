package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rediscell.jedis.JedisCell;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

class CellTest {
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
        c -> c.window("w", 2, 60_000, Options.none().ms()));
    List<List<Long>> outcomes = new ArrayList<>();
    for (Function<Cell, Outcome> call : calls) {
      Outcome outcome = call.apply(cell);
      outcomes.add(List.of(outcome.limited() ? 1L : 0L, outcome.limit(), outcome.remaining()));
    }
    return outcomes;
  }

  @Test
  void theModuleAndTheLibraryDecideAlike() throws Exception {
    try (Servers module = Servers.start(Servers.With.MODULE);
        Servers library = Servers.start(Servers.With.LIBRARY)) {
      Cell viaModule = JedisCell.over(module.client);
      Cell viaLibrary = JedisCell.over(library.client);
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

  @Test
  void aServerWithNeitherSaysWhatToLoad() throws Exception {
    try (Servers bare = Servers.start(Servers.With.NEITHER)) {
      Cell cell = JedisCell.over(bare.client);
      ModuleMissingException missing =
          assertThrows(ModuleMissingException.class, () -> cell.throttle("k", 1, 1, 60));
      assertTrue(missing.getMessage().contains("MODULE LOAD"), missing.getMessage());
      assertTrue(missing.getMessage().contains("FUNCTION LOAD"), missing.getMessage());
      // Loaded later, the library is found on the next call, without a new client.
      bare.client.functionLoadReplace(
          java.nio.file.Files.readString(Servers.root().resolve("lua/dist/redis_cell.lua")));
      assertFalse(cell.throttle("k", 1, 1, 60).limited());
      assertEquals(Route.LIBRARY, cell.route());
    }
  }

  @Test
  void aFlushedLibraryIsFoundAgainOnTheCallThatMissesIt() throws Exception {
    try (Servers library = Servers.start(Servers.With.LIBRARY)) {
      Cell cell = JedisCell.over(library.client);
      assertEquals(Route.LIBRARY, cell.route());
      library.client.functionFlush();
      assertThrows(ModuleMissingException.class, () -> cell.fixed("k", 1, 60));
    }
  }

  @Test
  void badInputIsTheLimitersErrorAndWritesNothing() throws Exception {
    for (Servers.With with : List.of(Servers.With.MODULE, Servers.With.LIBRARY)) {
      try (Servers server = Servers.start(with)) {
        Cell cell = JedisCell.over(server.client);
        CellException bad =
            assertThrows(CellException.class, () -> cell.throttle("k", -1, 1, 60));
        assertEquals("ERR max_burst must be >= 0", bad.getMessage(), with.name());
        assertFalse(server.client.exists("k"), with.name());
      }
    }
  }

  @Test
  void theModulesOwnCommandsAreRefusedOnTheLibrary() throws Exception {
    try (Servers library = Servers.start(Servers.With.LIBRARY)) {
      Router router = new Router(JedisCell.transport(library.client));
      NeedsModuleException needs = assertThrows(
          NeedsModuleException.class, () -> router.call(CellCommand.TOP, List.of()));
      assertTrue(needs.getMessage().startsWith("CL.TOP needs the redis-cell module"));
    }
  }
}
