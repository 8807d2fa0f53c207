package dev.rediscell;

/** A limiter's error reply, as the module or the library words it, or a reply no limiter gives. */
public class CellException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CellException(String message) {
    super(message);
  }
}
