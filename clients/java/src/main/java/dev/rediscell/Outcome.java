package dev.rediscell;

import java.util.List;
import java.util.OptionalLong;

/**
 * A limiter's answer, {@code [limited, limit, remaining, retry_after, reset_after]}, and with
 * {@code ATMOST} the units granted. The waits are in the call's unit, seconds or (with
 * {@code MS}) milliseconds, rounded up as the server rounds them; {@code retryAfter} is -1
 * when the call was admitted, or when no wait would admit it.
 */
public record Outcome(
    boolean limited,
    long limit,
    long remaining,
    long retryAfter,
    long resetAfter,
    OptionalLong granted) {

  /** Whether the call was admitted. */
  public boolean allowed() {
    return !limited;
  }

  /** The server's reply, five integers or six. */
  static Outcome of(Object reply) {
    if (!(reply instanceof List<?> values) || values.size() < 5 || values.size() > 6) {
      throw new CellException("not a limiter's reply: " + reply);
    }
    long[] numbers = new long[values.size()];
    for (int at = 0; at < numbers.length; at++) {
      if (!(values.get(at) instanceof Long number)) {
        throw new CellException("not a limiter's reply: " + reply);
      }
      numbers[at] = number;
    }
    return new Outcome(
        numbers[0] != 0,
        numbers[1],
        numbers[2],
        numbers[3],
        numbers[4],
        numbers.length == 6 ? OptionalLong.of(numbers[5]) : OptionalLong.empty());
  }
}
