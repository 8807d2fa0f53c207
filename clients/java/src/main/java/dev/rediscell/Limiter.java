package dev.rediscell;

import java.util.ArrayList;
import java.util.List;

/** One of a {@code CL.ALL} call's limiters: its key, and the words that name it. */
public sealed interface Limiter {
  String key();

  /** The limiter's words after the keys: its keyword and its numbers. */
  List<String> words();

  /** GCRA: {@code count} per {@code period}, with bursts of {@code maxBurst + 1}. */
  record Throttle(String key, long maxBurst, long count, long period) implements Limiter {
    public List<String> words() {
      return List.of("THROTTLE", Long.toString(maxBurst), Long.toString(count), Long.toString(period));
    }
  }

  /**
   * At most {@code limit} per fixed window of {@code period} (a number, or a {@link Calendar}
   * unit's name), laid on the clock with {@code align}, in a local time {@code offset} minutes
   * ahead of UTC when not null.
   */
  record Fixed(String key, long limit, String period, boolean align, Long offset)
      implements Limiter {
    public Fixed(String key, long limit, long period) {
      this(key, limit, Long.toString(period), false, null);
    }

    public Fixed(String key, long limit, Calendar unit) {
      this(key, limit, unit.name(), false, null);
    }

    public List<String> words() {
      List<String> words = new ArrayList<>(List.of("FIXED", Long.toString(limit), period));
      if (align) {
        words.add("ALIGN");
      }
      if (offset != null) {
        words.add("OFFSET");
        words.add(offset.toString());
      }
      return words;
    }
  }

  /** At most {@code limit} in any {@code period}; in {@code buckets} cells when not null. */
  record Window(String key, long limit, long period, Long buckets) implements Limiter {
    public Window(String key, long limit, long period) {
      this(key, limit, period, null);
    }

    public List<String> words() {
      List<String> words = new ArrayList<>(List.of("WINDOW", Long.toString(limit), Long.toString(period)));
      if (buckets != null) {
        words.add("BUCKETS");
        words.add(buckets.toString());
      }
      return words;
    }
  }

  /** At most {@code limit} holders at once, each lease {@code leaseTime} long. */
  record Lease(String key, long limit, long leaseTime) implements Limiter {
    public List<String> words() {
      return List.of("LEASE", Long.toString(limit), Long.toString(leaseTime));
    }
  }
}
