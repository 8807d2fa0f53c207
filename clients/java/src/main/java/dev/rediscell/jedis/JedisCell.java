package dev.rediscell.jedis;

import dev.rediscell.Cell;
import dev.rediscell.CellException;
import dev.rediscell.Transport;
import java.nio.charset.StandardCharsets;
import java.util.List;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The limiters over Jedis: a {@code RedisClient} or {@code JedisPooled}, which send each command
 * once. A {@link UnifiedJedis} built with retries ({@code maxAttempts}) sends a command again
 * after a connection error, so a call in flight then may take its units twice; a cluster's
 * client is not offered yet (#49).
 */
public final class JedisCell {
  private JedisCell() {}

  public static Cell over(UnifiedJedis jedis) {
    return new Cell(transport(jedis));
  }

  /**
   * Each call as one command on the client's connections, its error reply a CellException. A
   * held call goes as Jedis sends its own blocking commands: the connection's read timeout is
   * lifted for it (to {@code blockingSocketTimeoutMillis}, if the client sets one shorter than
   * the hold, which then cuts it), so that the client does not cut the hold.
   */
  public static Transport transport(UnifiedJedis jedis) {
    return new Transport() {
      @Override
      public Object send(List<String> words) {
        return execute(jedis, arguments(words));
      }

      @Override
      public Object sendHeld(List<String> words) {
        return execute(jedis, arguments(words).blocking());
      }
    };
  }

  private static CommandArguments arguments(List<String> words) {
    byte[] name = words.get(0).getBytes(StandardCharsets.UTF_8);
    ProtocolCommand command = () -> name;
    CommandArguments args = new CommandArguments(command);
    for (String word : words.subList(1, words.size())) {
      args.add(word);
    }
    return args;
  }

  private static Object execute(UnifiedJedis jedis, CommandArguments args) {
    try {
      return jedis.executeCommand(args);
    } catch (JedisDataException error) {
      throw new CellException(error.getMessage(), error);
    }
  }
}
