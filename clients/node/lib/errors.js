'use strict';

// The failures a server without the limiters gives, named for what they are: the module's
// commands are unknown there, and the raw "unknown command 'CL.FIXED'" says nothing of the
// module or of the library that can stand in for it.

const HOW_TO_LOAD = "the server has no redis-cell module loaded, so its CL.* commands are "
  + 'unknown there, and no redis-cell Functions library either: load the module with MODULE '
  + "LOAD /path/to/libredis_cell.so (or a loadmodule line in the server's configuration), or, "
  + "where no module can be loaded, the library with FUNCTION LOAD and the package's "
  + 'lua/redis_cell.lua (the adapter loads it itself unless loadLibrary is false)';

/**
 * The server has loaded neither the redis-cell module nor its library; `cause` is the
 * server's own error, where it gave one.
 */
class ModuleMissingError extends Error {
  constructor(cause) {
    super(cause ? `${HOW_TO_LOAD} (the server said: ${cause.message})` : HOW_TO_LOAD, { cause });
    this.name = 'ModuleMissingError';
  }
}

/**
 * A command only the module answers (CL.TOP, which lists what the node has seen; CL.BAN and
 * CL.UNBAN, until the library locks keys out), called where the calls go to the Functions
 * library.
 */
class NeedsModuleError extends Error {
  constructor(command) {
    super(`${command} needs the redis-cell module: the Functions library does not answer it; `
      + 'load the module (MODULE LOAD /path/to/libredis_cell.so)');
    this.name = 'NeedsModuleError';
  }
}

/** The server's library is older than this adapter, which was told not to replace it. */
class LibraryTooOldError extends Error {
  constructor(theirs, ours) {
    super(`the server's redis-cell library is ${theirs}, older than this adapter's ${ours}: `
      + "load the package's lua/redis_cell.lua with FUNCTION LOAD REPLACE, or let the adapter "
      + 'load it (loadLibrary: true)');
    this.name = 'LibraryTooOldError';
  }
}

/**
 * A limiter's error: ModuleMissingError for an unknown CL.* command (quoted with backticks by
 * Redis 6.2, with quotes by later servers), or a script's call of one, else itself.
 */
function explained(error) {
  const text = String(error && error.message).toLowerCase();
  const missing = /unknown command [`']cl\./.test(text)
    || text.includes('unknown redis command called from script');
  return missing ? new ModuleMissingError(error) : error;
}

module.exports = {
  LibraryTooOldError, ModuleMissingError, NeedsModuleError, explained,
};
