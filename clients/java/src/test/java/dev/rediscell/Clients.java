package dev.rediscell;

import dev.rediscell.jedis.JedisCell;
import dev.rediscell.lettuce.LettuceCell;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.util.ArrayList;
import java.util.List;

/** The clients a Cell runs over, and the Lettuce clients a test opened, to close after it. */
enum Clients {
  JEDIS,
  LETTUCE;

  private static final List<AutoCloseable> OPENED = new ArrayList<>();

  /** A Cell over the server's port by this client; Lettuce's holds on connections of their own. */
  Cell cell(Servers server) {
    if (this == JEDIS) {
      return JedisCell.over(server.client);
    }
    RedisURI uri = RedisURI.create("127.0.0.1", server.port);
    RedisClient lettuce = RedisClient.create(uri);
    var connection = lettuce.connect();
    OPENED.add(connection);
    OPENED.add(lettuce::shutdown);
    return LettuceCell.over(connection, uri);
  }

  /**
   * A Cell over a cluster by this client's cluster client, seeded with its first node: Jedis's
   * JedisCluster, which every Jedis the lanes run has (8 deprecates it for RedisClusterClient,
   * which JedisCell takes alike).
   */
  @SuppressWarnings("deprecation")
  Cell cell(Cluster cluster) {
    int seed = cluster.nodes.get(0).port;
    if (this == JEDIS) {
      var jedis = new redis.clients.jedis.JedisCluster(
          new redis.clients.jedis.HostAndPort("127.0.0.1", seed));
      OPENED.add(jedis);
      return JedisCell.over(jedis);
    }
    RedisURI uri = RedisURI.create("127.0.0.1", seed);
    var lettuce = io.lettuce.core.cluster.RedisClusterClient.create(uri);
    var connection = lettuce.connect();
    OPENED.add(connection);
    OPENED.add(lettuce::shutdown);
    return LettuceCell.over(connection, uri);
  }

  /** Closes the Lettuce clients opened since the last close, before their servers stop. */
  static void closeAll() {
    for (AutoCloseable opened : OPENED) {
      try {
        opened.close();
      } catch (Exception ignored) {
        // Closing the rest matters more than why one would not close.
      }
    }
    OPENED.clear();
  }

  /** Registers something a test opened, to close with the rest. */
  static void closeLater(AutoCloseable opened) {
    OPENED.add(opened);
  }
}
