package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Calls on a real cluster go to the node that serves their keys, by either client. */
class ClusterTest {
  @AfterEach
  void closeClients() {
    Clients.closeAll();
  }

  @ParameterizedTest
  @EnumSource(Clients.class)
  void eachCallReachesItsKeysNode(Clients client) throws Exception {
    for (Servers.With with : List.of(Servers.With.MODULE, Servers.With.LIBRARY)) {
      try (Cluster cluster = Cluster.start(with)) {
        Cell cell = client.cell(cluster);
        assertEquals(with == Servers.With.MODULE ? Route.MODULE : Route.LIBRARY, cell.route());
        for (int at = 0; at < 30; at++) {
          String key = "k" + at;
          assertFalse(cell.throttle(key, 0, 1, 60).limited(), key);
          assertTrue(cell.throttle(key, 0, 1, 60).limited(), key);
          assertTrue(cluster.nodeOf(key).client.exists(key), key + " on its node");
        }
        for (Servers node : cluster.nodes) {
          assertTrue(node.client.dbSize() > 0, "every node serves some of the keys");
        }
        // CL.ALL's keys, in one slot by their hash tag.
        List<Limiter> both = List.of(new Limiter.Fixed("{u}a", 1, 60), new Limiter.Fixed("{u}b", 2, 60));
        assertFalse(cell.all(both, Options.none()).limited());
        assertTrue(cell.all(both, Options.none()).limited());
        assertTrue(cluster.nodeOf("{u}a").client.exists("{u}b"));
        // A held call, on each node's keys, waits there; the library cannot hold one.
        for (String key : List.of("h0", "h1", "h2")) {
          Options perSecond = Options.none().ms();
          assertFalse(cell.throttle(key, 0, 1, 1000, perSecond).limited());
          if (with == Servers.With.MODULE) {
            long start = System.nanoTime();
            assertFalse(cell.throttle(key, 0, 1, 1000, perSecond.block(5000)).limited());
            assertTrue(System.nanoTime() - start > 300_000_000L, key + " was not held");
          } else {
            CellException refused = assertThrows(CellException.class,
                () -> cell.throttle(key, 0, 1, 1000, perSecond.block(5000)));
            assertTrue(refused.getMessage().contains("BLOCK"), refused.getMessage());
          }
        }
        Clients.closeAll();
      }
    }
  }

  /**
   * A held call whose slot has moved since the client last looked is answered MOVED, having
   * run nothing, and goes once more to the node the reply names.
   */
  @ParameterizedTest
  @EnumSource(Clients.class)
  void aHeldCallFollowsItsSlotToANewNode(Clients client) throws Exception {
    try (Cluster cluster = Cluster.start(Servers.With.MODULE)) {
      Cell cell = client.cell(cluster);
      // The client learns the slots, with a call on each node.
      for (String key : List.of("h0", "h1", "h2")) {
        assertFalse(cell.throttle(key, 0, 1, 60).limited());
      }
      String key = "moved";
      Servers from = cluster.nodeOf(key);
      Servers to = cluster.nodes.get((cluster.nodes.indexOf(from) + 1) % 3);
      String slot = Long.toString((Long) from.command("CLUSTER", "KEYSLOT", key));
      String owner = to.text("CLUSTER", "MYID");
      to.command("CLUSTER", "SETSLOT", slot, "NODE", owner);
      for (Servers node : cluster.nodes) {
        node.command("CLUSTER", "SETSLOT", slot, "NODE", owner);
      }
      Options perSecond = Options.none().ms();
      assertFalse(cell.throttle(key, 0, 1, 1000, perSecond.block(5000)).limited());
      assertTrue(to.client.exists(key), "the call was decided on the slot's new node");
      // Taken once: the next waits for the unit.
      long start = System.nanoTime();
      assertFalse(cell.throttle(key, 0, 1, 1000, perSecond.block(5000)).limited());
      assertTrue(System.nanoTime() - start > 300_000_000L, "not held");
    }
  }
}
