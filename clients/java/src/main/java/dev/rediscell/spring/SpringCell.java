package dev.rediscell.spring;

import dev.rediscell.Cell;
import org.springframework.dao.InvalidDataAccessApiUsageException;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.util.ClassUtils;

/**
 * The limiters through Spring Data Redis: a {@code RedisTemplate} or {@code
 * StringRedisTemplate} (any serializers: the calls bypass them), on one server, over the
 * connection factory's own client, Lettuce or Jedis. Each call takes a connection as the
 * template does and sends the command on the client beneath it.
 *
 * <p>A call the server holds ({@code BLOCK}) never goes on the template's shared connection,
 * which it would stall for every other user and which the factory's command timeout would cut:
 * with Lettuce it goes on a connection of its own, made from the factory's client and its
 * standalone configuration (host, port, database, user, password, TLS), never reconnected nor
 * timed out by the client; with Jedis, on the pooled connection the call takes, its read
 * timeout lifted for the hold as Jedis does for its own blocking commands.
 */
public final class SpringCell {
  private SpringCell() {}

  public static Cell over(RedisTemplate<?, ?> template) {
    RedisConnectionFactory factory = template.getConnectionFactory();
    ClassLoader loader = SpringCell.class.getClassLoader();
    // Each client's classes are touched only where the application has that client.
    if (ClassUtils.isPresent("io.lettuce.core.RedisClient", loader) && LettuceRoute.takes(factory)) {
      return new Cell(new LettuceRoute(template));
    }
    if (ClassUtils.isPresent("redis.clients.jedis.Jedis", loader) && JedisRoute.takes(factory)) {
      return new Cell(new JedisRoute(template));
    }
    throw new InvalidDataAccessApiUsageException("SpringCell works over Lettuce's or Jedis's"
        + " connection factory; this template's is " + factory);
  }
}
