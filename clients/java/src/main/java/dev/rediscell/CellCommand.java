package dev.rediscell;

import java.util.Locale;

/**
 * The clients' route table (clients/protocol.json, which a test holds this to): each command,
 * how the Functions library is called for it, and where its keys are.
 */
public enum CellCommand {
  THROTTLE(Call.FCALL, Keys.FIRST),
  FIXED(Call.FCALL, Keys.FIRST),
  WINDOW(Call.FCALL, Keys.FIRST),
  ALL(Call.FCALL, Keys.NUMKEYS),
  LEASE(Call.FCALL, Keys.FIRST),
  RELEASE(Call.FCALL, Keys.FIRST),
  HOLDERS(Call.FCALL_RO, Keys.FIRST),
  SMOOTH(Call.FCALL, Keys.FIRST),
  TOP(Call.NONE, Keys.NONE),
  BAN(Call.NONE, Keys.FIRST),
  UNBAN(Call.NONE, Keys.FIRST);

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

  private final Call call;
  private final Keys keys;

  CellCommand(Call call, Keys keys) {
    this.call = call;
    this.keys = keys;
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
}
