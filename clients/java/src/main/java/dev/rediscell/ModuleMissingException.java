package dev.rediscell;

/**
 * The server has loaded neither the redis-cell module nor its Functions library: its
 * {@code CL.*} commands are unknown there. The message says what to load.
 */
public final class ModuleMissingException extends CellException {
  private static final long serialVersionUID = 1L;

  static final String HOW_TO_LOAD =
      "the server has no redis-cell module loaded, so its CL.* commands are unknown there, and"
          + " no redis-cell Functions library either: load the module with MODULE LOAD"
          + " /path/to/libredis_cell.so (or a loadmodule line in the server's configuration), or,"
          + " where no module can be loaded, the library with FUNCTION LOAD and redis_cell.lua"
          + " (lua/dist in a checkout, or the release bundle)";

  ModuleMissingException(String reply) {
    super(reply.isEmpty() ? HOW_TO_LOAD : HOW_TO_LOAD + " (the server said: " + reply + ")");
  }
}
