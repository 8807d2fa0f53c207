package dev.rediscell.spring;

import dev.rediscell.CellException;
import dev.rediscell.Request;
import dev.rediscell.Transport;
import dev.rediscell.lettuce.LettuceCell;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.springframework.dao.InvalidDataAccessApiUsageException;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;

/** SpringCell over a LettuceConnectionFactory: the template's connections, and holds of their own. */
final class LettuceRoute implements Transport {
  private final RedisTemplate<?, ?> template;
  private final LettuceConnectionFactory factory;
  /** Made on the first held call, when the factory has started its client. */
  private volatile Transport holds;
  /** Guarded by this: set once the Cell is closed, after which nothing is opened. */
  private boolean closed;

  LettuceRoute(RedisTemplate<?, ?> template) {
    this.template = template;
    this.factory = (LettuceConnectionFactory) template.getConnectionFactory();
  }

  static boolean takes(RedisConnectionFactory factory) {
    return factory instanceof LettuceConnectionFactory;
  }

  @Override
  public Object send(Request request) {
    return template.execute((RedisCallback<Object>) connection -> {
      if (!(connection.getNativeConnection() instanceof BaseRedisAsyncCommands<?, ?> commands)) {
        throw new CellException("not a Lettuce connection: " + connection.getNativeConnection());
      }
      try {
        return LettuceFutures.awaitOrCancel(
            LettuceCell.dispatch(commands, request), factory.getTimeout(), TimeUnit.MILLISECONDS);
      } catch (RedisCommandExecutionException error) {
        throw new CellException(error.getMessage(), error);
      }
    });
  }

  @Override
  public Object sendHeld(Request request) {
    Transport made = holds;
    if (made == null) {
      synchronized (this) {
        if (closed) {
          throw new IllegalStateException("the Cell is closed");
        }
        if (holds == null) {
          holds = sameServer(holdsTo(factory));
        }
        made = holds;
      }
    }
    return made.sendHeld(request);
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (holds != null) {
      holds.close();
    }
  }

  /**
   * The holds' transport, once the server it reaches is the template's (the same run_id): a
   * factory of a static primary and replicas has a one-server configuration too, a default
   * that names another server.
   */
  private Transport sameServer(Transport made) {
    Request info = Request.keyless("INFO", "server");
    if (!runId(send(info)).equals(runId(made.send(info)))) {
      made.close();
      throw new InvalidDataAccessApiUsageException("SpringCell's held calls would reach another"
          + " server than the template's: the factory is not of one server");
    }
    return made;
  }

  private static String runId(Object reply) {
    Object text = reply instanceof List<?> one && !one.isEmpty() ? one.get(0) : reply;
    String info = text instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(text);
    for (String line : info.split("\r?\n")) {
      if (line.startsWith("run_id:")) {
        return line.substring("run_id:".length()).trim();
      }
    }
    throw new CellException("INFO server names no run_id");
  }

  /**
   * Held calls' connections, to the server the factory's standalone configuration names. A
   * factory of Sentinel, a cluster or a socket has one too, a default that names another
   * server: it is refused.
   */
  @SuppressWarnings("deprecation") // isVerifyPeer: 4.1 deprecates it; 3.2 has nothing else
  private static Transport holdsTo(LettuceConnectionFactory factory) {
    if (factory.isRedisSentinelAware() || factory.isClusterAware() || factory.getSocketConfiguration() != null) {
      throw new InvalidDataAccessApiUsageException("SpringCell holds calls on one server's"
          + " connections, and this factory is not of one server (Sentinel, a cluster or a"
          + " socket): make the Cell with LettuceCell over the native client for calls that wait");
    }
    RedisStandaloneConfiguration server = factory.getStandaloneConfiguration();
    RedisURI.Builder uri = RedisURI.builder()
        .withHost(server.getHostName())
        .withPort(server.getPort())
        .withDatabase(server.getDatabase())
        .withSsl(factory.isUseSsl())
        .withVerifyPeer(factory.isVerifyPeer())
        .withStartTls(factory.isStartTls());
    if (factory.getClientName() != null) {
      uri.withClientName(factory.getClientName());
    }
    server.getPassword().toOptional().ifPresent(password -> {
      if (server.getUsername() != null) {
        uri.withAuthentication(server.getUsername(), password);
      } else {
        uri.withPassword(password);
      }
    });
    AbstractRedisClient client = factory.getNativeClient();
    return LettuceCell.holds(client.getResources(), client.getOptions(), uri.build());
  }
}
