package dev.rediscell;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.UnifiedJedis;

/**
 * A Jedis client of one server, by whichever class the Jedis on the class path has: the lanes
 * run Jedis 5 to 8, and no class spans them (7 adds RedisClient, 8 drops JedisPooled).
 */
final class Jedises {
  private Jedises() {}

  static UnifiedJedis standalone(int port) {
    return standalone(port, DefaultJedisClientConfig.builder().build());
  }

  static UnifiedJedis standalone(int port, JedisClientConfig config) {
    HostAndPort server = new HostAndPort("127.0.0.1", port);
    try {
      Class<?> redisClient;
      try {
        redisClient = Class.forName("redis.clients.jedis.RedisClient");
      } catch (ClassNotFoundException beforeSeven) {
        return (UnifiedJedis) Class.forName("redis.clients.jedis.JedisPooled")
            .getConstructor(HostAndPort.class, JedisClientConfig.class)
            .newInstance(server, config);
      }
      Object builder = redisClient.getMethod("builder").invoke(null);
      builder = builder.getClass().getMethod("hostAndPort", HostAndPort.class).invoke(builder, server);
      builder = builder.getClass().getMethod("clientConfig", JedisClientConfig.class).invoke(builder, config);
      return (UnifiedJedis) builder.getClass().getMethod("build").invoke(builder);
    } catch (ReflectiveOperationException unexpected) {
      throw new IllegalStateException("no Jedis client of one server: " + unexpected, unexpected);
    }
  }
}
