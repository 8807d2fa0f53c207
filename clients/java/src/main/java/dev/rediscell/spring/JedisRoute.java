package dev.rediscell.spring;

import dev.rediscell.CellException;
import dev.rediscell.Request;
import dev.rediscell.Transport;
import dev.rediscell.jedis.JedisCell;
import java.util.Map;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.RedisTemplate;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;

/** SpringCell over a JedisConnectionFactory: each call on the Jedis connection it takes. */
final class JedisRoute implements Transport {
  private final RedisTemplate<?, ?> template;

  JedisRoute(RedisTemplate<?, ?> template) {
    this.template = template;
  }

  static boolean takes(RedisConnectionFactory factory) {
    return factory instanceof JedisConnectionFactory;
  }

  @Override
  public Object send(Request request) {
    return call(request, false);
  }

  @Override
  public Object sendHeld(Request request) {
    return call(request, true);
  }

  /** The factory's one client, and the transport over it, kept: making one looks it over. */
  private volatile Map.Entry<UnifiedJedis, Transport> last;

  private Transport transportOf(UnifiedJedis client) {
    Map.Entry<UnifiedJedis, Transport> known = last;
    if (known == null || known.getKey() != client) {
      known = Map.entry(client, JedisCell.transport(client));
      last = known;
    }
    return known.getValue();
  }

  private Object call(Request request, boolean held) {
    return template.execute((RedisCallback<Object>) connection -> {
      Object client = connection.getNativeConnection();
      // Spring Data Redis 4.1 hands out Jedis 7's client (a UnifiedJedis); before, a Jedis.
      if (client instanceof UnifiedJedis unified) {
        Transport over = transportOf(unified);
        return held ? over.sendHeld(request) : over.send(request);
      }
      if (!(client instanceof Jedis jedis)) {
        throw new CellException("not a Jedis connection: " + client);
      }
      return JedisCell.send(jedis, request, held);
    });
  }
}
