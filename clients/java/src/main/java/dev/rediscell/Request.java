package dev.rediscell;

import java.util.List;

/**
 * One command as it goes to the server: its words, name first, and which of them are keys
 * ({@code keyCount} words from {@code firstKey}), so that a cluster's client sends it to the
 * node that serves them. A command without keys goes to whichever node the client picks.
 */
public record Request(List<String> words, int firstKey, int keyCount) {
  public Request {
    words = List.copyOf(words);
    if (keyCount < 0 || (keyCount > 0 && (firstKey < 1 || firstKey + keyCount > words.size()))) {
      throw new IllegalArgumentException("keys outside the command's words: " + words);
    }
  }

  /** A command of the server's own, without keys. */
  static Request keyless(String... words) {
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
