// The classic Redis recipes for limiting, each as one call: a sorted set of timestamps
// (trim, add, count, expire, in a pipeline) becomes CL.WINDOW, exact; the funnel (a leaky
// bucket kept in a hash, read and rewritten) becomes CL.THROTTLE; and the INCR-then-EXPIRE
// script becomes CL.FIXED. Each decides atomically in the server. Served by clients/java/examples' test.
package example;

import dev.rediscell.Cell;
import dev.rediscell.Options;
import dev.rediscell.jedis.JedisCell;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;

public final class Recipes {
  private Recipes() {}

  /** At most {@code limit} actions in any {@code periodMs} milliseconds. */
  public static boolean slidingWindow(Cell cell, String user, long limit, long periodMs) {
    return cell.window("actions:" + user, limit, periodMs, Options.none().ms()).allowed();
  }

  /** A funnel of {@code capacity} that drains {@code leaks} every {@code seconds}. */
  public static boolean funnel(Cell cell, String user, long capacity, long leaks, long seconds) {
    return cell.throttle("funnel:" + user, capacity - 1, leaks, seconds).allowed();
  }

  /** At most {@code limit} calls in each {@code seconds} from the first. */
  public static boolean counter(Cell cell, String user, long limit, long seconds) {
    return cell.fixed("calls:" + user, limit, seconds).allowed();
  }

  public static void main(String[] args) {
    try (JedisPooled redis = new JedisPooled(new HostAndPort("127.0.0.1", Integer.parseInt(args[0])))) {
      Cell cell = JedisCell.over(redis);
      System.out.println("window " + slidingWindow(cell, "alice", 5, 60_000));
      System.out.println("funnel " + funnel(cell, "alice", 15, 30, 60));
      System.out.println("counter " + counter(cell, "alice", 100, 3600));
    }
  }
}
