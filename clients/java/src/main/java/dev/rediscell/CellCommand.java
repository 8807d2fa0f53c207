package dev.rediscell;

import java.util.Locale;

/**
 * The clients' route table (clients/protocol.json, which a test holds this to): each command,
 * how the Functions library is called for it, and where its keys are.
 */
public enum CellCommand {
  THROTTLE(Call.FCALL, Keys.FIRST, Quantity.POSITIONAL),
  FIXED(Call.FCALL, Keys.FIRST, Quantity.POSITIONAL),
  WINDOW(Call.FCALL, Keys.FIRST, Quantity.POSITIONAL),
  ALL(Call.FCALL, Keys.NUMKEYS, Quantity.KEYWORD),
  LEASE(Call.FCALL, Keys.FIRST, Quantity.NONE),
  RELEASE(Call.FCALL, Keys.FIRST, Quantity.NONE),
  HOLDERS(Call.FCALL_RO, Keys.FIRST, Quantity.NONE),
  SMOOTH(Call.FCALL, Keys.FIRST, Quantity.POSITIONAL),
  TOP(Call.NONE, Keys.NONE, Quantity.NONE),
  BAN(Call.NONE, Keys.FIRST, Quantity.NONE),
  UNBAN(Call.NONE, Keys.FIRST, Quantity.NONE);

  /** How the library is called: {@code NONE} for the module's own commands. */
  public enum Call {
    FCALL,
    FCALL_RO,
    NONE
  }

  /** Where a call's keys are: its first argument, or {@code numkeys} and then the keys. */
  public enum Keys {
    FIRST,
    NUMKEYS,
    NONE
  }

  /**
   * Where a call's quantity goes: after the parameters, as {@code QUANTITY n}, or nowhere (the
   * command takes none). The grammar's (clients/grammar.json), which a test holds this to.
   */
  public enum Quantity {
    POSITIONAL,
    KEYWORD,
    NONE
  }

  private final Call call;
  private final Keys keys;
  private final Quantity quantity;

  CellCommand(Call call, Keys keys, Quantity quantity) {
    this.call = call;
    this.keys = keys;
    this.quantity = quantity;
  }

  /** The module's command, {@code CL.THROTTLE}. */
  public String command() {
    return "CL." + name();
  }

  /** The library's function, {@code cl_throttle}. */
  public String function() {
    return "cl_" + name().toLowerCase(Locale.ROOT);
  }

  public Call call() {
    return call;
  }

  public Keys keys() {
    return keys;
  }

  public Quantity quantity() {
    return quantity;
  }
}
