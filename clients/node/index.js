'use strict';

// The typed client (lib/cell.js), Express middleware (lib/express.js), express-rate-limit's
// store (lib/store.js) and rate-limiter-flexible's adapter (lib/adapter.js). The adapter is
// loaded when asked for, so that the client needs no rate-limiter-flexible.

const { Cell, Reply, commands, throttle, fixed, window, lease } = require('./lib/cell');
const { LibraryTooOldError, ModuleMissingError } = require('./lib/errors');
const {
  RouteLimiter, clientAddress, header, user,
} = require('./lib/express');
const { CellStore } = require('./lib/store');

module.exports = {
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
  ModuleMissingError,
  throttle,
  user,
  window,
};
Object.defineProperty(module.exports, 'RateLimiterCell', {
  enumerable: true,
  get: () => require('./lib/adapter').RateLimiterCell,
});
