package dev.rediscell;

/** Where a client's calls go: the module's commands, or the Functions library's functions. */
public enum Route {
  MODULE,
  LIBRARY
}
