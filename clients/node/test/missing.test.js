'use strict';

// A server without the module: every client's consume rejects with one ModuleMissingError
// that names the module and how to load it, never with a denial; the module's own errors
// reject as the server's Error.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const { RateLimiterRes } = require('rate-limiter-flexible');

const { ModuleMissingError, RateLimiterCell } = require('redis-cell');
const { CLIENTS } = require('./clients');
const { startServer } = require('./server');

// One suite around the file: Node 20.0's runner does not run a file's top-level hooks
// before its tests, and a suite's hooks it does.
describe('RateLimiterCell on a server without the module', () => {
  let bare;
  let loaded;
  before(async () => {
    bare = await startServer({ module: false });
    loaded = await startServer();
  });
  after(async () => {
    await bare.stop();
    await loaded.stop();
  });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      for (const algorithm of ['fixed', 'gcra', 'window']) {
        it(`${algorithm}: a consume without the module rejects with ModuleMissingError`, async () => {
          const client = await kind.connect(bare.port);
          try {
            const limiter = new RateLimiterCell({ ...kind.options, storeClient: client, points: 3, duration: 60, algorithm });
            const error = await limiter.consume('user').then(() => null, (e) => e);
            assert.ok(error instanceof ModuleMissingError, `${error}`);
            assert.ok(!(error instanceof RateLimiterRes));
            assert.match(error.message, /no redis-cell module loaded.*MODULE LOAD/);
            assert.match(String(error.cause && error.cause.message), /unknown command/i);
          } finally {
            await kind.close(client);
          }
        });
      }

      it("the module's own errors reject as the server's Error", async () => {
        const client = await kind.connect(loaded.port);
        try {
          const limiter = new RateLimiterCell({ ...kind.options, storeClient: client, points: 3, duration: 60, algorithm: 'gcra' });
          // A billion points of a limiter of 3 a minute: past the span GCRA can look ahead.
          const error = await limiter.consume('typed', 1e9).then(() => null, (e) => e);
          assert.ok(error instanceof Error && !(error instanceof ModuleMissingError), `${error}`);
          assert.match(error.message, /quantity is too large/);
        } finally {
          await kind.close(client);
        }
      });
    });
  }
});
