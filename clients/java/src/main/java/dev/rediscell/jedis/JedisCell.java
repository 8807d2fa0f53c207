package dev.rediscell.jedis;

import dev.rediscell.Cell;
import dev.rediscell.CellException;
import dev.rediscell.Request;
import dev.rediscell.Transport;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisMovedDataException;
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
    Method slots = slotConnections(jedis);
    Function<ProtocolCommand, CommandArguments> start = slots == null ? CommandArguments::new : clusterArguments();
    return new Transport() {
      @Override
      public Object send(Request request) {
        return execute(() -> jedis.executeCommand(arguments(start, request)));
      }

      @Override
      public Object sendHeld(Request request) {
        CommandObject<Object> held =
            new CommandObject<>(arguments(start, request).blocking(), BuilderFactory.RAW_OBJECT);
        String key = request.key();
        if (slots == null || key == null) {
          return execute(() -> jedis.executeCommand(held));
        }
        int slot = JedisClusterCRC16.getSlot(key);
        try (Connection node = slotConnection(slots, jedis, slot)) {
          return execute(() -> node.executeCommand(held));
        } catch (CellException error) {
          if (!(error.getCause() instanceof JedisMovedDataException moved)) {
            throw error;
          }
          // The slot has moved, and the node ran nothing: the call goes once more, to the
          // node the reply names. (An ASK, a slot being migrated, fails as the server said.)
          try (Connection node = nodeConnection(jedis, moved.getTargetNode(), slots, slot)) {
            return execute(() -> node.executeCommand(held));
          } finally {
            renewSlots(jedis, start, key);
          }
        }
      }
    };
  }

  /**
   * A connection to {@code target} from the cluster client's pools; for a node it does not
   * know yet, the slot's as its map has it (which answers MOVED again: the call fails, and
   * the map is renewed for the next).
   */
  private static Connection nodeConnection(UnifiedJedis jedis, HostAndPort target, Method slots, int slot) {
    try {
      Object nodes = jedis.getClass().getMethod("getClusterNodes").invoke(jedis);
      if (nodes instanceof Map<?, ?> pools && pools.get(target.toString()) instanceof ConnectionPool pool) {
        return pool.getResource();
      }
    } catch (ReflectiveOperationException noPools) {
      // Then as for a node it does not know.
    }
    return slotConnection(slots, jedis, slot);
  }

  /**
   * Has the client renew its slot map, through a plain look at the key (which follows MOVED
   * and renews it); what that look answers does not matter.
   */
  private static void renewSlots(UnifiedJedis jedis, Function<ProtocolCommand, CommandArguments> start, String key) {
    try {
      jedis.executeCommand(arguments(start, new Request(List.of("EXISTS", key), 1, 1)));
    } catch (RuntimeException notNow) {
      // The next call that meets the old map renews it.
    }
  }

  /**
   * A cluster's client's {@code getConnectionFromSlot(int)}: JedisCluster's, or Jedis 7's
   * RedisClusterClient's, which share no type that has it; null for a server's client.
   */
  private static Method slotConnections(UnifiedJedis jedis) {
    try {
      Method method = jedis.getClass().getMethod("getConnectionFromSlot", int.class);
      return Connection.class.isAssignableFrom(method.getReturnType()) ? method : null;
    } catch (NoSuchMethodException notACluster) {
      return null;
    }
  }

  private static Connection slotConnection(Method slots, UnifiedJedis jedis, int slot) {
    try {
      return (Connection) slots.invoke(jedis, slot);
    } catch (InvocationTargetException failed) {
      if (failed.getCause() instanceof RuntimeException cause) {
        throw cause;
      }
      throw new CellException("no connection to slot " + slot, failed.getCause());
    } catch (IllegalAccessException refused) {
      throw new CellException("no connection to slot " + slot, refused);
    }
  }

  /**
   * A cluster's command arguments: before Jedis 7 the cluster client takes only its own
   * subclass, ClusterCommandArguments, which reads the slot from the keys; since, every
   * CommandArguments does.
   */
  private static Function<ProtocolCommand, CommandArguments> clusterArguments() {
    try {
      var made = Class.forName("redis.clients.jedis.ClusterCommandArguments")
          .asSubclass(CommandArguments.class)
          .getConstructor(ProtocolCommand.class);
      return command -> {
        try {
          return made.newInstance(command);
        } catch (ReflectiveOperationException unexpected) {
          throw new CellException("cannot make a cluster's command: " + unexpected, unexpected);
        }
      };
    } catch (ClassNotFoundException | NoSuchMethodException sinceSeven) {
      return CommandArguments::new;
    }
  }

  /**
   * Sends a request on one {@link Jedis} connection (what Spring Data Redis hands out before
   * 4.1), held as Jedis sends its own blocking commands when {@code held}; its error reply a
   * CellException.
   */
  public static Object send(Jedis jedis, Request request, boolean held) {
    ProtocolCommand command = command(request);
    String[] args = request.words().subList(1, request.words().size()).toArray(String[]::new);
    return execute(() -> held ? jedis.sendBlockingCommand(command, args) : jedis.sendCommand(command, args));
  }

  /** The request's command name, as Jedis sends a command it does not know. */
  private static ProtocolCommand command(Request request) {
    byte[] name = request.words().get(0).getBytes(StandardCharsets.UTF_8);
    return () -> name;
  }

  private static CommandArguments arguments(Function<ProtocolCommand, CommandArguments> start, Request request) {
    CommandArguments args = start.apply(command(request));
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

  private static Object execute(Supplier<Object> call) {
    try {
      return call.get();
    } catch (JedisDataException error) {
      throw new CellException(error.getMessage(), error);
    }
  }
}
