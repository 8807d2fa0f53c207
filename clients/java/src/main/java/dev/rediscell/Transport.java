package dev.rediscell;

/**
 * One command to a server or a cluster, over whichever client the application uses: the words
 * go as they are, keys marked for a cluster's routing, and the reply comes back as the client
 * gives raw replies (integers as {@link Long}, strings as {@code byte[]} or {@link String},
 * arrays as {@link java.util.List}, nil as null). An error reply is thrown as a {@link
 * CellException} carrying the server's text.
 */
public interface Transport extends AutoCloseable {
  Object send(Request request);

  /**
   * A call the server may hold ({@code BLOCK}): sent where no read timeout of the client's
   * cuts the hold, and, where the client allows it, never sent twice.
   */
  Object sendHeld(Request request);

  /** Closes what the transport opened itself; the application's client stays open. */
  @Override
  default void close() {}
}
