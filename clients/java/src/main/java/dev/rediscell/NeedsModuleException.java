package dev.rediscell;

/**
 * A command only the module answers ({@code CL.TOP}, {@code CL.BAN}, {@code CL.UNBAN}), called
 * where the calls go to the Functions library.
 */
public final class NeedsModuleException extends CellException {
  private static final long serialVersionUID = 1L;

  NeedsModuleException(CellCommand command) {
    super(
        command.command()
            + " needs the redis-cell module: the Functions library does not answer it; load the"
            + " module (MODULE LOAD /path/to/libredis_cell.so)");
  }
}
