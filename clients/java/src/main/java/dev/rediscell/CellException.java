package dev.rediscell;

/** A limiter's error reply, as the module or the library words it, or a reply no limiter gives. */
public class CellException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CellException(String message) {
    super(message);
  }

  /** The server's error reply, as the client raised it. */
  public CellException(String message, Throwable cause) {
    super(message, cause);
  }
}
