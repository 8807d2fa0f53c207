package dev.rediscell.lettuce;

import dev.rediscell.Cell;
import dev.rediscell.CellException;
import dev.rediscell.Request;
import dev.rediscell.Transport;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import io.lettuce.core.api.sync.BaseRedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import io.lettuce.core.resource.ClientResources;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The limiters over Lettuce: a server's {@link StatefulRedisConnection} of strings, or a
 * cluster's {@link StatefulRedisClusterConnection}, each call sent to the node that serves its
 * key. Replies come back as Lettuce's generic output gives them: an array as a list, and a lone
 * integer or string as a list of one.
 *
 * <p>Lettuce sends a command again after it reconnects (its default, {@code
 * autoReconnect(true)}), so a call in flight when the connection drops may take its units
 * twice: where that matters, give the connection's client {@code autoReconnect(false)}, or
 * (Lettuce 6.8 and later) a {@code replayFilter} that drops them. A call the server holds
 * ({@code BLOCK}) goes on a connection of its own (to its slot's primary, on a cluster), opened
 * from the {@link RedisURI} given for holds (its host and port replaced by the node's, on a
 * cluster), one that never reconnects and has no command timeout (the hold is the server's to
 * end): sent once, and never cut by the client. Without that URI, such a call is refused
 * before it is sent. Closing the Cell closes those connections.
 */
public final class LettuceCell {
  /** The most connections kept open for holds between them, per node. */
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

  /**
   * Plain calls on the cluster's {@code connection}, and held calls on connections of their own
   * to the primary that serves the key, as {@code holds} says to connect (its credentials,
   * timeouts and TLS; its host and port are the node's).
   */
  public static Cell over(StatefulRedisClusterConnection<String, String> connection, RedisURI holds) {
    Holds held = holds == null ? null : new Holds(connection.getResources(), connection.getOptions(), holds,
        request -> {
          RedisClusterNode node = connection.getPartitions().getMasterBySlot(SlotHash.getSlot(request.key()));
          if (node == null) {
            throw new CellException("no primary serves the slot of " + request.key() + " yet");
          }
          return RedisURI.builder(holds).withHost(node.getUri().getHost())
              .withPort(node.getUri().getPort()).build();
        });
    return new Cell(transport(request -> dispatch(connection.sync(), request), held));
  }

  public static Transport transport(StatefulRedisConnection<String, String> connection, RedisURI holds) {
    Holds held = holds == null ? null
        : new Holds(connection.getResources(), connection.getOptions(), holds, request -> holds);
    return transport(request -> dispatch(connection.sync(), request), held);
  }

  /**
   * A transport that sends held calls on connections of its own to {@code uri}, made with the
   * given resources and options (less their reconnect and command timeout), for a framework
   * that owns the application's connections (SpringCell). Its plain calls go the same way.
   */
  public static Transport holds(ClientResources resources, ClientOptions options, RedisURI uri) {
    Holds held = new Holds(resources, options, uri, request -> uri);
    return transport(held::send, held);
  }

  /**
   * Sends a request on any Lettuce connection's async commands, whatever their codec: the
   * request's words and its reply go through this client's own string codec.
   */
  @SuppressWarnings("unchecked")
  public static RedisFuture<List<Object>> dispatch(BaseRedisAsyncCommands<?, ?> commands, Request request) {
    return ((BaseRedisAsyncCommands<String, String>) commands)
        .dispatch(keyword(request), output(), args(request));
  }

  /** Sends a request and waits for its reply as the connection's own commands wait. */
  private static Object dispatch(BaseRedisCommands<String, String> commands, Request request) {
    return commands.dispatch(keyword(request), output(), args(request));
  }

  private static Transport transport(Function<Request, Object> dispatch, Holds held) {
    return new Transport() {
      @Override
      public Object send(Request request) {
        try {
          return dispatch.apply(request);
        } catch (RedisCommandExecutionException error) {
          throw new CellException(error.getMessage(), error);
        }
      }

      @Override
      public Object sendHeld(Request request) {
        if (held == null) {
          throw new UnsupportedOperationException("a call that waits (BLOCK) needs a connection"
              + " of its own: make the Cell with LettuceCell.over(connection, uri)");
        }
        return held.send(request);
      }

      @Override
      public void close() {
        if (held != null) {
          held.close();
        }
      }
    };
  }

  /**
   * Connections for held calls, kept per node: from a client of their own that shares the
   * connection's resources and options, but never reconnects and never times a command out.
   * A call with a timeout is given up (and its connection closed, never reused) once the
   * timeout and a margin (see deadline) have passed with no reply: the server would have
   * answered by then, so the connection is taken for gone.
   */
  private static final class Holds {
    private final RedisClient client;
    private final RedisURI template;
    private final Function<Request, RedisURI> node;
    private final Map<RedisURI, Deque<StatefulRedisConnection<String, String>>> idle =
        new ConcurrentHashMap<>();
    /** Where a MOVED reply sent each slot's calls. */
    private final Map<Integer, RedisURI> moved = new ConcurrentHashMap<>();
    private volatile boolean closed;

    Holds(ClientResources resources, ClientOptions options, RedisURI template,
        Function<Request, RedisURI> node) {
      this.template = template;
      this.node = node;
      client = RedisClient.create(resources);
      client.setOptions(ClientOptions.copyOf(options).mutate()
          .autoReconnect(false)
          .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
          .timeoutOptions(TimeoutOptions.builder().timeoutCommands(false).build())
          .build());
    }

    /**
     * Sends the call to its node, or to where a MOVED reply last sent a call of its slot; a
     * MOVED or ASK reply (the node ran nothing) sends it once more, to the node the reply
     * names, ASKING first for an ASK. A MOVED is remembered for the slot, as the cluster's
     * own connection may not learn of it.
     */
    Object send(Request request) {
      if (closed) {
        throw new IllegalStateException("the Cell is closed");
      }
      Integer slot = request.key() == null ? null : SlotHash.getSlot(request.key());
      RedisURI first = slot == null ? null : moved.get(slot);
      if (first == null) {
        first = node.apply(request);
      }
      try {
        return send(request, first, false);
      } catch (CellException error) {
        String[] redirect = String.valueOf(error.getMessage()).split(" ");
        boolean ask = redirect[0].equals("ASK");
        if (redirect.length != 3 || !(ask || redirect[0].equals("MOVED"))) {
          throw error;
        }
        RedisURI to = endpoint(redirect[2], first);
        if (!ask && slot != null) {
          moved.put(slot, to);
        }
        return send(request, to, ask);
      }
    }

    /**
     * A redirect's {@code host:port} as a URI with the template's credentials; an unknown
     * host ({@code ?}, or none) is the host the call went to.
     */
    private RedisURI endpoint(String hostPort, RedisURI asked) {
      int colon = hostPort.lastIndexOf(':');
      String host = colon <= 0 ? "?" : hostPort.substring(0, colon);
      try {
        return RedisURI.builder(template)
            .withHost(host.equals("?") ? asked.getHost() : host)
            .withPort(Integer.parseInt(hostPort.substring(colon + 1)))
            .build();
      } catch (RuntimeException unreadable) {
        throw new CellException("a redirect to an endpoint that cannot be read: " + hostPort, unreadable);
      }
    }

    private Object send(Request request, RedisURI uri, boolean asking) {
      Deque<StatefulRedisConnection<String, String>> open =
          idle.computeIfAbsent(uri, ignored -> new ConcurrentLinkedDeque<>());
      StatefulRedisConnection<String, String> connection = open.pollFirst();
      while (connection != null && !connection.isOpen()) {
        connection = open.pollFirst();
      }
      if (connection == null) {
        connection = client.connect(StringCodec.UTF8, uri);
      }
      boolean reusable = false;
      try {
        if (asking) {
          dispatch(connection.async(), Request.keyless("ASKING"));
        }
        Object reply = await(dispatch(connection.async(), request), deadline(request.hold(), uri));
        reusable = true;
        return reply;
      } catch (RedisCommandExecutionException error) {
        reusable = true;
        throw new CellException(error.getMessage(), error);
      } finally {
        if (reusable && !closed && open.size() < IDLE_HOLDS) {
          open.offerFirst(connection);
        } else {
          connection.closeAsync();
        }
      }
    }

    /**
     * How long a call is waited for, in ms (0: as long as it takes): a hold's timeout, then a
     * margin for a server that stalls (a fork, a failover's pause) of at least 30 s or the
     * URI's timeout, whichever is longer.
     */
    private static long deadline(long hold, RedisURI uri) {
      if (hold <= 0) {
        return 0;
      }
      long margin = Math.max(uri.getTimeout().toMillis(), 30_000);
      return hold > Long.MAX_VALUE - margin ? 0 : hold + margin;
    }

    void close() {
      closed = true;
      for (Deque<StatefulRedisConnection<String, String>> open : idle.values()) {
        for (StatefulRedisConnection<String, String> connection; (connection = open.pollFirst()) != null; ) {
          connection.close();
        }
      }
      client.shutdown();
    }

    /**
     * The reply, waited for up to {@code millis} (0: however long the server holds it). As
     * Guava's acquire, an interrupt does not end the wait (the reservation is made either
     * way), and is kept for the caller.
     */
    private static <T> T await(Future<T> reply, long millis) {
      boolean interrupted = false;
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
      try {
        while (true) {
          try {
            if (millis == 0) {
              return reply.get();
            }
            return reply.get(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
          } catch (InterruptedException interrupt) {
            interrupted = true;
          } catch (TimeoutException silent) {
            throw new CellException("no reply " + millis + " ms after a held call was sent: its"
                + " connection is taken for lost (the call may have been decided)");
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

  private static ProtocolKeyword keyword(Request request) {
    String first = request.words().get(0);
    byte[] name = first.getBytes(StandardCharsets.UTF_8);
    return new ProtocolKeyword() {
      @Override
      public byte[] getBytes() {
        return name;
      }

      // Lettuce 6 asks a keyword for its name(); 7 deprecates it and no longer asks.
      @SuppressWarnings("deprecation")
      public String name() {
        return first;
      }

      @Override
      public String toString() {
        return first;
      }
    };
  }

  /** The words after the name, keys marked: a cluster's connection routes by the first. */
  private static CommandArgs<String, String> args(Request request) {
    CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8);
    for (int at = 1; at < request.words().size(); at++) {
      if (request.isKey(at)) {
        args.addKey(request.words().get(at));
      } else {
        args.add(request.words().get(at));
      }
    }
    return args;
  }
}
