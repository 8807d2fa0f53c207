'use strict';

// A server with neither the module nor the library, where the adapter may not load the
// library: every client's consume rejects with one ModuleMissingError that names both and how
// to load them, never with a denial; the module's own errors reject as the server's Error.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const { RateLimiterRes } = require('rate-limiter-flexible');

const { ModuleMissingError, RateLimiterCell } = require('redis-cell');
const { CLIENTS } = require('./clients');
const { startServer } = require('./server');

// One suite around the file: Node 20.0's runner does not run a file's top-level hooks
// before its tests, and a suite's hooks it does.
describe('RateLimiterCell on a server with neither the module nor the library', () => {
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
        it(`${algorithm}: a consume rejects with ModuleMissingError`, async () => {
          const client = await kind.connect(bare.port);
          try {
            const options = { ...kind.options, storeClient: client, points: 3, duration: 60, algorithm };
            const limiter = new RateLimiterCell({ ...options, loadLibrary: false });
            const error = await limiter.consume('user').then(() => null, (e) => e);
            assert.ok(error instanceof ModuleMissingError, `${error}`);
            assert.ok(!(error instanceof RateLimiterRes));
            assert.match(error.message, /no redis-cell module loaded.*MODULE LOAD.*FUNCTION LOAD/);
            // Told to call the module, the server's own words are kept.
            const module = new RateLimiterCell({ ...options, via: 'module' });
            const unknown = await module.consume('user').then(() => null, (e) => e);
            assert.ok(unknown instanceof ModuleMissingError, `${unknown}`);
            assert.match(String(unknown.cause && unknown.cause.message), /unknown command/i);
            // Nothing was loaded on the way.
            assert.deepEqual(await (typeof client.call === 'function' ? client.call('FUNCTION', 'LIST') : client.sendCommand(['FUNCTION', 'LIST'])), []);
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
