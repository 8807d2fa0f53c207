'use strict';

// The typed client (lib/cell.js), express-rate-limit's store (lib/store.js) and
// rate-limiter-flexible's adapter (lib/adapter.js). The adapter is loaded when asked for, so
// that the client needs no rate-limiter-flexible.

const { Cell, Reply, commands, throttle, fixed, window, lease } = require('./lib/cell');
const { LibraryTooOldError, ModuleMissingError } = require('./lib/errors');
const { CellStore } = require('./lib/store');

module.exports = {
  Cell, CellStore, Reply, commands, throttle, fixed, window, lease, LibraryTooOldError, ModuleMissingError,
};
Object.defineProperty(module.exports, 'RateLimiterCell', {
  enumerable: true,
  get: () => require('./lib/adapter').RateLimiterCell,
});
