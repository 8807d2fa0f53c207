package dev.rediscell.lettuce;

import dev.rediscell.Cell;
import dev.rediscell.CellException;
import dev.rediscell.Transport;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The limiters over Lettuce: a {@link StatefulRedisConnection} of strings. Replies come back as
 * Lettuce's generic output gives them: an array as a list, and a lone integer or string as a
 * list of one. Lettuce sends a command again after it reconnects (its default, {@code
 * autoReconnect(true)}), so a call in flight when the connection drops may take its units
 * twice: where that matters, give it a connection whose client does not reconnect by itself. A
 * held call ({@code BLOCK}) is refused here for now: it would also be cut at the command
 * timeout, and needs a connection of its own (#49).
 */
public final class LettuceCell {
  private LettuceCell() {}

  public static Cell over(StatefulRedisConnection<String, String> connection) {
    return new Cell(transport(connection));
  }

  public static Transport transport(StatefulRedisConnection<String, String> connection) {
    return new Transport() {
      @Override
      public Object send(List<String> words) {
        return dispatch(connection, words);
      }

      @Override
      public Object sendHeld(List<String> words) {
        throw new UnsupportedOperationException(
            "BLOCK over Lettuce is not offered yet: use Jedis for calls that wait");
      }
    };
  }

  private static Object dispatch(StatefulRedisConnection<String, String> connection, List<String> words) {
    byte[] name = words.get(0).getBytes(StandardCharsets.UTF_8);
    ProtocolKeyword command = new ProtocolKeyword() {
      @Override
      public byte[] getBytes() {
        return name;
      }

      @Override
      public String toString() {
        return words.get(0);
      }
    };
    CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8);
    for (String word : words.subList(1, words.size())) {
      args.add(word);
    }
    try {
      return connection.sync().dispatch(command, new NestedMultiOutput<>(StringCodec.UTF8), args);
    } catch (RedisCommandExecutionException error) {
      throw new CellException(error.getMessage(), error);
    }
  }
}
