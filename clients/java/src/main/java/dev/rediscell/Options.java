package dev.rediscell;

import java.util.ArrayList;
import java.util.List;

/**
 * What a call asks beyond its parameters: a quantity, milliseconds for its periods and waits,
 * a look that takes nothing, units given back. Immutable: each method returns a new set.
 */
public final class Options {
  private final long quantity;
  private final boolean ms;
  private final boolean dryRun;
  private final boolean refund;

  private Options(long quantity, boolean ms, boolean dryRun, boolean refund) {
    this.quantity = quantity;
    this.ms = ms;
    this.dryRun = dryRun;
    this.refund = refund;
  }

  /** One unit, periods in seconds, taken. */
  public static Options none() {
    return new Options(1, false, false, false);
  }

  public Options quantity(long units) {
    return new Options(units, ms, dryRun, refund);
  }

  /** The periods and waits in milliseconds ({@code MS}). */
  public Options ms() {
    return new Options(quantity, true, dryRun, refund);
  }

  /** Asks, and takes nothing ({@code DRYRUN}). */
  public Options dryRun() {
    return new Options(quantity, ms, true, refund);
  }

  /** Gives the quantity back ({@code REFUND}). */
  public Options refund() {
    return new Options(quantity, ms, dryRun, true);
  }

  /** The words after a call's parameters. */
  List<String> words() {
    List<String> words = new ArrayList<>(4);
    words.add(Long.toString(quantity));
    if (ms) {
      words.add("MS");
    }
    if (dryRun) {
      words.add("DRYRUN");
    }
    if (refund) {
      words.add("REFUND");
    }
    return words;
  }
}
