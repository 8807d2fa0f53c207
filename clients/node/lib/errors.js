'use strict';

// The one failure a server without the module gives, named for what it is: its commands are
// unknown there, and the raw "unknown command 'CL.FIXED'" says nothing of the module.

const HOW_TO_LOAD = "the server has no redis-cell module loaded, so its CL.* commands are "
  + 'unknown there: load it with MODULE LOAD /path/to/libredis_cell.so, or a loadmodule line '
  + "in the server's configuration";

/** The server has not loaded the redis-cell module; `cause` is the server's own error. */
class ModuleMissingError extends Error {
  constructor(cause) {
    super(cause ? `${HOW_TO_LOAD} (the server said: ${cause.message})` : HOW_TO_LOAD, { cause });
    this.name = 'ModuleMissingError';
  }
}

/** A module command's error: ModuleMissingError for an unknown CL.* command, else itself. */
function explained(error) {
  const text = String(error && error.message).toLowerCase();
  return text.includes('unknown command') && text.includes("'cl.")
    ? new ModuleMissingError(error)
    : error;
}

module.exports = { ModuleMissingError, explained };
