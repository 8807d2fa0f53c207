package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rediscell.spring.SpringCell;
import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisClientConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisTemplate;
import org.springframework.data.redis.core.StringRedisTemplate;

/** The limiters through Spring Data Redis's templates, over each of its factories. */
class SpringCellTest {
  enum Factory {
    LETTUCE,
    JEDIS
  }

  /** Gives the template a started factory whose client gives up on a reply after 300 ms. */
  private static AutoCloseable connect(Factory kind, int port, RedisTemplate<?, ?> template) {
    var server = new RedisStandaloneConfiguration("127.0.0.1", port);
    if (kind == Factory.LETTUCE) {
      var lettuce = new LettuceConnectionFactory(server,
          LettuceClientConfiguration.builder().commandTimeout(Duration.ofMillis(300)).build());
      lettuce.afterPropertiesSet();
      lettuce.start();
      template.setConnectionFactory(lettuce);
      template.afterPropertiesSet();
      return lettuce::destroy;
    }
    var jedis = new JedisConnectionFactory(server,
        JedisClientConfiguration.builder().readTimeout(Duration.ofMillis(300)).build());
    jedis.afterPropertiesSet();
    jedis.start();
    template.setConnectionFactory(jedis);
    template.afterPropertiesSet();
    return jedis::destroy;
  }

  @ParameterizedTest
  @EnumSource(Factory.class)
  @SuppressWarnings("try") // the factories are closed by name only
  void aTemplateCarriesTheCallsAndHoldsOutlastItsTimeout(Factory kind) throws Exception {
    for (Servers.With with : new Servers.With[] {Servers.With.MODULE, Servers.With.LIBRARY}) {
      StringRedisTemplate template = new StringRedisTemplate();
      RedisTemplate<Object, Object> objects = new RedisTemplate<>();
      try (Servers server = Servers.start(with);
          AutoCloseable strings = connect(kind, server.port, template);
          AutoCloseable serialized = connect(kind, server.port, objects)) {
        Cell cell = SpringCell.over(template);
        assertEquals(with == Servers.With.MODULE ? Route.MODULE : Route.LIBRARY, cell.route());
        assertFalse(cell.throttle("t", 0, 1, 60).limited());
        assertTrue(cell.throttle("t", 0, 1, 60).limited());
        assertEquals(1, cell.lease("l", 2, 60, "a", Options.none()).remaining());
        assertEquals(1, cell.holders("l", Options.none()).size());
        // A template of any serializers: the calls bypass them.
        assertTrue(SpringCell.over(objects).fixed("f", 1, 60).allowed());
        assertTrue(SpringCell.over(objects).fixed("f", 1, 60).limited());
        if (with == Servers.With.MODULE) {
          Options perSecond = Options.none().ms();
          assertFalse(cell.throttle("h", 0, 1, 1000, perSecond).limited());
          long start = System.nanoTime();
          var held = java.util.concurrent.CompletableFuture.supplyAsync(
              () -> cell.throttle("h", 0, 1, 1000, perSecond.block(5000)));
          assertTrue(server.heldClient() != null, "the call was not held");
          // Meanwhile the template's own connection serves at once: the hold is not on it.
          long asked = System.nanoTime();
          assertEquals(1L, template.opsForValue().increment("n"));
          assertTrue(System.nanoTime() - asked < 200_000_000L, "the template waited on the hold");
          assertFalse(held.get(10, java.util.concurrent.TimeUnit.SECONDS).limited());
          assertTrue(System.nanoTime() - start > 500_000_000L, "not held");
          cell.close();
        }
      }
    }
  }
}
