'use strict';

// The typed client (lib/cell.js), Express middleware (lib/express.js), express-rate-limit's
// store (lib/store.js) and rate-limiter-flexible's adapter (lib/adapter.js).

const { Cell, Reply, commands, throttle, fixed, window, lease } = require('./lib/cell');
const { LibraryTooOldError, ModuleMissingError, NeedsModuleError } = require('./lib/errors');
const {
  RouteLimiter, clientAddress, header, user,
} = require('./lib/express');
const { CellStore } = require('./lib/store');
const { Batched, BatchCore } = require('./lib/batch');
const { librarySource, scriptSource } = require('./lib/route');

/**
 * The adapter where rate-limiter-flexible is installed; without it (an optional peer, which
 * the client alone does not need), a class that says what to install when constructed. An
 * export of its own either way, so that ESM's named imports find it.
 */
function adapter() {
  try {
    return require('./lib/adapter').RateLimiterCell;
  } catch (error) {
    const missing = error && error.code === 'MODULE_NOT_FOUND'
      && String(error.message).includes("'rate-limiter-flexible'");
    if (!missing) throw error;
    return class RateLimiterCell {
      constructor() {
        throw new Error('RateLimiterCell is rate-limiter-flexible\'s RateLimiterRedis: install it beside '
          + 'redis-cell (npm install rate-limiter-flexible@~11.4)');
      }
    };
  }
}
const RateLimiterCell = adapter();

module.exports = {
  BatchCore,
  Batched,
  Cell,
  CellStore,
  Reply,
  RouteLimiter,
  clientAddress,
  commands,
  fixed,
  header,
  lease,
  LibraryTooOldError,
  librarySource,
  NeedsModuleError,
  ModuleMissingError,
  RateLimiterCell,
  scriptSource,
  throttle,
  user,
  window,
};
