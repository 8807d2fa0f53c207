package dev.rediscell.jedis;

import dev.rediscell.Cell;
import dev.rediscell.CellException;
import dev.rediscell.Request;
import dev.rediscell.Transport;
import java.nio.charset.StandardCharsets;
import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The limiters over Jedis: a server's client ({@code RedisClient}, {@code JedisPooled}) or a
 * cluster's ({@code RedisClusterClient}, {@code JedisCluster}), each call sent to the node that
 * serves its key.
 *
 * <p>A call the server holds ({@code BLOCK}) goes as Jedis sends its own blocking commands: the
 * connection's read timeout is lifted for it (to {@code blockingSocketTimeoutMillis}, if the
 * client sets one shorter than the hold, which then cuts it). On a cluster it goes once, on a
 * connection to its slot's node, outside the client's retries, which would send it again after
 * a connection error. Other calls take the client's own path: a client built with retries
 * ({@code maxAttempts}, a cluster's default) sends a call again after a connection error, so
 * one in flight then may take its units twice.
 */
public final class JedisCell {
  private JedisCell() {}

  public static Cell over(UnifiedJedis jedis) {
    return new Cell(transport(jedis));
  }

  public static Transport transport(UnifiedJedis jedis) {
    return new Transport() {
      @Override
      public Object send(Request request) {
        return execute(() -> jedis.executeCommand(arguments(request)));
      }

      @Override
      @SuppressWarnings("deprecation") // JedisCluster, deprecated in Jedis 8, is 7's cluster client
      public Object sendHeld(Request request) {
        CommandObject<Object> held =
            new CommandObject<>(arguments(request).blocking(), BuilderFactory.RAW_OBJECT);
        String key = request.key();
        if (key == null || !(jedis instanceof RedisClusterClient || jedis instanceof JedisCluster)) {
          return execute(() -> jedis.executeCommand(held));
        }
        int slot = JedisClusterCRC16.getSlot(key);
        try (Connection node = jedis instanceof RedisClusterClient cluster
            ? cluster.getConnectionFromSlot(slot)
            : ((JedisCluster) jedis).getConnectionFromSlot(slot)) {
          return execute(() -> node.executeCommand(held));
        }
      }
    };
  }

  private static CommandArguments arguments(Request request) {
    byte[] name = request.words().get(0).getBytes(StandardCharsets.UTF_8);
    ProtocolCommand command = () -> name;
    CommandArguments args = new CommandArguments(command);
    for (int at = 1; at < request.words().size(); at++) {
      String word = request.words().get(at);
      if (request.isKey(at)) {
        args.key(word);
      } else {
        args.add(word);
      }
    }
    return args;
  }

  private static Object execute(java.util.function.Supplier<Object> call) {
    try {
      return call.get();
    } catch (JedisDataException error) {
      throw new CellException(error.getMessage(), error);
    }
  }
}
