package dev.rediscell;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What a call asks beyond its parameters, one method for each option of the module's grammar
 * (clients/grammar.json, which a test holds this to), named as the grammar names it in camel
 * case: {@code dryRun()} for {@code DRYRUN}. One set serves every command; a command answers an
 * option it does not take with the limiter's own error, as the module and the library do. The
 * quantity goes only to the calls that take one (a rate limiter's, and CL.ALL's).
 * Immutable: each method returns a new set.
 */
public final class Options {
  private final List<String> words;
  /** The keywords among the words: a value (a holder's name) may spell one too. */
  private final Set<String> named;
  private final long quantity;
  /** The longest hold the server takes, in ms: 2^62 ns. */
  private static final long MAX_BLOCK_MS = (1L << 62) / 1_000_000L;

  /** BLOCK's timeout, -1 without BLOCK. */
  private final long block;

  private Options(long quantity, List<String> words, Set<String> named, long block) {
    this.quantity = quantity;
    this.words = List.copyOf(words);
    this.named = Set.copyOf(named);
    this.block = block;
  }

  /** One unit, periods in seconds, and nothing else. */
  public static Options none() {
    return new Options(1, List.of(), Set.of(), -1);
  }

  /** How many units the call takes (0 looks and takes none). */
  public Options quantity(long units) {
    return new Options(units, words, named, block);
  }

  /** The periods, spans and waits in milliseconds ({@code MS}). */
  public Options ms() {
    return with("MS");
  }

  /** Asks, and takes nothing ({@code DRYRUN}). */
  public Options dryRun() {
    return with("DRYRUN");
  }

  /** Gives the quantity back ({@code REFUND}). */
  public Options refund() {
    return with("REFUND");
  }

  /** Takes what fits now, up to the quantity ({@code ATMOST}): the outcome's {@code granted}. */
  public Options atMost() {
    return with("ATMOST");
  }

  /** CL.FIXED counts denied calls too, as the INCR recipe does ({@code COUNTDENIED}). */
  public Options countDenied() {
    return with("COUNTDENIED");
  }

  /** CL.FIXED's windows on the epoch's multiples of the period ({@code ALIGN}). */
  public Options align() {
    return with("ALIGN");
  }

  /** CL.FIXED's calendar or aligned windows in a local time ({@code OFFSET minutes}). */
  public Options offset(long minutes) {
    return with("OFFSET", minutes);
  }

  /** CL.WINDOW in {@code n} cells ({@code BUCKETS n}). */
  public Options buckets(long n) {
    return with("BUCKETS", n);
  }

  /** Locks the key out for this span when its limiter denies ({@code BAN span}). */
  public Options ban(long span) {
    return with("BAN", span);
  }

  /** CL.SMOOTH's stored permits, as a span of its rate ({@code BURST span}). */
  public Options burst(long span) {
    return with("BURST", span);
  }

  /** CL.SMOOTH's warm-up ({@code WARMUP span}). */
  public Options warmup(long span) {
    return with("WARMUP", span);
  }

  /** CL.SMOOTH's cold factor during a warm-up ({@code COLD factor}). */
  public Options cold(long factor) {
    return with("COLD", factor);
  }

  /** CL.ALL's answer for each limiter ({@code DETAIL}): {@link Cell#allDetail} gives it. */
  public Options detail() {
    return with("DETAIL");
  }

  /** CL.ALL's lease holder ({@code HOLDER holder}). */
  public Options holder(String holder) {
    return with("HOLDER", holder);
  }

  /** CL.TOP's count of keys ({@code COUNT n}). */
  public Options count(long n) {
    return with("COUNT", n);
  }

  /**
   * Waits up to {@code timeout} (0: as long as it takes) for a denied call to fit ({@code BLOCK
   * timeout}), on a connection held for it. Only the module waits.
   */
  public Options block(long timeout) {
    if (timeout < 0 || timeout > MAX_BLOCK_MS) {
      throw new IllegalArgumentException("BLOCK takes 0 to " + MAX_BLOCK_MS + " ms, not " + timeout);
    }
    Options with = with("BLOCK", timeout);
    return new Options(with.quantity, with.words, with.named, timeout);
  }

  /** Whether the set names the option (its keyword). */
  boolean names(String keyword) {
    return named.contains(keyword);
  }

  /** Whether the call may be held by the server. */
  boolean blocks() {
    return names("BLOCK");
  }

  /** BLOCK's timeout in milliseconds (0: as long as it takes), -1 without BLOCK. */
  long block() {
    return block;
  }

  long quantity() {
    return quantity;
  }

  /** The option words, in the order given. */
  List<String> words() {
    return words;
  }

  private Options with(String keyword, Object... value) {
    List<String> more = new ArrayList<>(words);
    more.add(keyword);
    for (Object part : value) {
      more.add(String.valueOf(part));
    }
    Set<String> keywords = new HashSet<>(named);
    keywords.add(keyword);
    return new Options(quantity, more, keywords, block);
  }
}
