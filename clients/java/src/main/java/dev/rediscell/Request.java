package dev.rediscell;

import java.util.List;

/**
 * One command as it goes to the server: its words, name first, which of them are keys
 * ({@code keyCount} words from {@code firstKey}), so that a cluster's client sends it to the
 * node that serves them, and how long the server may hold it: {@code hold} milliseconds, 0 as
 * long as it takes, -1 not at all. A command without keys goes to whichever node the client
 * picks.
 */
public record Request(List<String> words, int firstKey, int keyCount, long hold) {
  public Request {
    words = List.copyOf(words);
    if (keyCount < 0 || (keyCount > 0 && (firstKey < 1 || firstKey + keyCount > words.size()))) {
      throw new IllegalArgumentException("keys outside the command's words: " + words);
    }
  }

  /** A command the server answers at once. */
  public Request(List<String> words, int firstKey, int keyCount) {
    this(words, firstKey, keyCount, -1);
  }

  /** The same command, held up to {@code millis} (0: as long as it takes). */
  Request held(long millis) {
    return new Request(words, firstKey, keyCount, millis);
  }

  /** A command of the server's own, without keys. */
  public static Request keyless(String... words) {
    return new Request(List.of(words), 0, 0);
  }

  /** Whether the word at {@code index} is a key. */
  public boolean isKey(int index) {
    return keyCount > 0 && index >= firstKey && index < firstKey + keyCount;
  }

  /** The first key, which names the slot a cluster serves the command from; null if none. */
  public String key() {
    return keyCount == 0 ? null : words.get(firstKey);
  }
}
