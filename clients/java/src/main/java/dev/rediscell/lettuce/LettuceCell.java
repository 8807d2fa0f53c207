package dev.rediscell.lettuce;

import dev.rediscell.Cell;
import dev.rediscell.CellException;
import dev.rediscell.Transport;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * The limiters over Lettuce: a {@link StatefulRedisConnection} of strings. Replies come back as
 * Lettuce's generic output gives them: an array as a list, and a lone integer or string as a
 * list of one.
 *
 * <p>Lettuce sends a command again after it reconnects (its default, {@code
 * autoReconnect(true)}), so a call in flight when the connection drops may take its units
 * twice: where that matters, give the connection's client a {@code replayFilter} that drops
 * them, or one that does not reconnect by itself. A call the server holds ({@code BLOCK}) goes
 * on a connection of its own, opened from the {@link RedisURI} given for holds, one that never
 * reconnects and has no command timeout (the hold is the server's to end): sent once, and never
 * cut by the client. Without that URI, such a call is refused before it is sent.
 */
public final class LettuceCell {
  /** The most connections kept open for holds between them. */
  private static final int IDLE_HOLDS = 4;

  private LettuceCell() {}

  /** Plain calls on {@code connection}; a call that would wait is refused. */
  public static Cell over(StatefulRedisConnection<String, String> connection) {
    return new Cell(transport(connection, null));
  }

  /** Plain calls on {@code connection}, and held calls on connections of their own to {@code holds}. */
  public static Cell over(StatefulRedisConnection<String, String> connection, RedisURI holds) {
    return new Cell(transport(connection, holds));
  }

  public static Transport transport(StatefulRedisConnection<String, String> connection, RedisURI holds) {
    Holds held = holds == null ? null : new Holds(connection, holds);
    return new Transport() {
      @Override
      public Object send(List<String> words) {
        try {
          return connection.sync().dispatch(keyword(words), output(), args(words));
        } catch (RedisCommandExecutionException error) {
          throw new CellException(error.getMessage(), error);
        }
      }

      @Override
      public Object sendHeld(List<String> words) {
        if (held == null) {
          throw new UnsupportedOperationException("a call that waits (BLOCK) needs a connection"
              + " of its own: make the Cell with LettuceCell.over(connection, uri)");
        }
        return held.send(words);
      }
    };
  }

  /** Connections for held calls: from a client of their own that shares the connection's resources. */
  private static final class Holds {
    private final RedisClient client;
    private final Deque<StatefulRedisConnection<String, String>> idle = new ConcurrentLinkedDeque<>();

    Holds(StatefulRedisConnection<String, String> connection, RedisURI uri) {
      client = RedisClient.create(connection.getResources(), uri);
      client.setOptions(connection.getOptions().mutate()
          .autoReconnect(false)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .timeoutOptions(TimeoutOptions.builder().timeoutCommands(false).build())
          .build());
    }

    Object send(List<String> words) {
      StatefulRedisConnection<String, String> connection = idle.pollFirst();
      while (connection != null && !connection.isOpen()) {
        connection = idle.pollFirst();
      }
      if (connection == null) {
        connection = client.connect(StringCodec.UTF8);
      }
      boolean reusable = false;
      try {
        Object reply = await(connection.async().dispatch(keyword(words), output(), args(words)));
        reusable = true;
        return reply;
      } catch (RedisCommandExecutionException error) {
        reusable = true;
        throw new CellException(error.getMessage(), error);
      } finally {
        if (reusable && idle.size() < IDLE_HOLDS) {
          idle.offerFirst(connection);
        } else {
          connection.closeAsync();
        }
      }
    }

    /**
     * The reply, however long the server holds it: as Guava's acquire, an interrupt does not
     * end the wait (the reservation is made either way), and is kept for the caller.
     */
    private static <T> T await(Future<T> reply) {
      boolean interrupted = false;
      try {
        while (true) {
          try {
            return reply.get();
          } catch (InterruptedException interrupt) {
            interrupted = true;
          } catch (ExecutionException failed) {
            if (failed.getCause() instanceof RuntimeException cause) {
              throw cause;
            }
            throw new CellException(String.valueOf(failed.getCause()), failed.getCause());
          }
        }
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  private static NestedMultiOutput<String, String> output() {
    return new NestedMultiOutput<>(StringCodec.UTF8);
  }

  private static ProtocolKeyword keyword(List<String> words) {
    byte[] name = words.get(0).getBytes(StandardCharsets.UTF_8);
    return new ProtocolKeyword() {
      @Override
      public byte[] getBytes() {
        return name;
      }

      @Override
      public String toString() {
        return words.get(0);
      }
    };
  }

  private static CommandArgs<String, String> args(List<String> words) {
    CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8);
    for (String word : words.subList(1, words.size())) {
      args.add(word);
    }
    return args;
  }
}
