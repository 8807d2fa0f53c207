package dev.rediscell;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A real cluster of three primaries on loopback, each serving a third of the slots, each with
 * the module or the library (FUNCTION LOAD goes to every node, as a user's deploy must).
 */
final class Cluster implements AutoCloseable {
  final List<Servers> nodes;

  private Cluster(List<Servers> nodes) {
    this.nodes = nodes;
  }

  static Cluster start(Servers.With with) throws IOException, InterruptedException {
    List<Servers> nodes = new ArrayList<>();
    try {
      for (int at = 0; at < 3; at++) {
        nodes.add(Servers.start(with, "--cluster-enabled", "yes", "--cluster-node-timeout", "3000"));
      }
      int[] bounds = {0, 5461, 10923, 16384};
      for (int at = 0; at < 3; at++) {
        nodes.get(at).command("CLUSTER", "ADDSLOTSRANGE",
            Integer.toString(bounds[at]), Integer.toString(bounds[at + 1] - 1));
      }
      for (Servers other : nodes.subList(1, 3)) {
        nodes.get(0).command("CLUSTER", "MEET", "127.0.0.1", Integer.toString(other.port));
      }
      for (Servers each : nodes) {
        for (int tries = 0; !each.text("CLUSTER", "INFO").contains("cluster_state:ok"); tries++) {
          if (tries > 300) {
            throw new IllegalStateException("the cluster did not form: " + each.text("CLUSTER", "INFO"));
          }
          Thread.sleep(50);
        }
      }
      return new Cluster(nodes);
    } catch (IOException | InterruptedException | RuntimeException failed) {
      for (Servers started : nodes) {
        started.close();
      }
      throw failed;
    }
  }

  /** The node that serves {@code key}'s slot. */
  Servers nodeOf(String key) {
    long slot = (Long) nodes.get(0).command("CLUSTER", "KEYSLOT", key);
    return nodes.get(slot < 5461 ? 0 : slot < 10923 ? 1 : 2);
  }

  @Override
  public void close() throws IOException {
    for (Servers node : nodes) {
      node.close();
    }
  }
}
