'use strict';

// RateLimiterCell against a real server with the module, and against one without it (where
// the adapter loads and calls the library), on each ioredis and node-redis installed
// (test/clients.js): the fixed window side by side with RateLimiterRedis, GCRA, the sliding
// window, waits in the server (the module's alone), and the limits on numbers.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');

const { RateLimiterCell } = require('redis-cell');
const { CLIENTS } = require('./clients');
const { FLAVORS, WAITS, startServer } = require('./server');

/** What a consume answered, resolved or rejected, without the time, which drifts. */
async function outcome(promise) {
  try {
    const res = await promise;
    return { ok: true, consumed: res.consumedPoints, remaining: res.remainingPoints, first: res.isFirstInDuration, ms: res.msBeforeNext };
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    return { ok: false, consumed: res.consumedPoints, remaining: res.remainingPoints, first: res.isFirstInDuration, ms: res.msBeforeNext };
  }
}

function sameBut(ms, a, b, what) {
  assert.deepEqual({ ...a, ms: undefined }, { ...b, ms: undefined }, what);
  assert.ok(Math.abs(a.ms - b.ms) <= 1500, `${what}: ${a.ms} ms against ${b.ms} ms`);
}

/** A seeded sequence, so that a failure repeats. */
function* costs(seed, count) {
  let state = seed;
  for (let i = 0; i < count; i += 1) {
    state = (state * 1103515245 + 12345) % 2147483648;
    yield [1, 1, 2, 3, 0][state % 5];
  }
}

// One suite around the file: Node 20.0's runner does not run a file's top-level hooks
// before its tests, and a suite's hooks it does.
for (const flavor of FLAVORS) describe(`RateLimiterCell on a server, ${flavor}`, () => {
  let server;
  before(async () => { server = await startServer({ module: flavor === 'module' }); });
  after(async () => { await server.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      let client;
      before(async () => { client = await kind.connect(server.port); });
      after(async () => { await kind.close(client); });

      const limiter = (opts) => new RateLimiterCell({ storeClient: client, ...kind.options, ...opts });
      const raw = (words) => (typeof client.call === 'function' ? client.call(...words) : client.sendCommand(words));
      /**
       * How many times the server ran `command` (without the module, any of the library's
       * functions), so that a test shows the limiter decided.
       */
      const calls = async (command) => {
        const ran = flavor === 'module' ? command : 'fcall';
        const stats = String(await raw(['INFO', 'commandstats']));
        const line = stats.split('\n').find((l) => l.startsWith(`cmdstat_${ran}:`));
        return line ? Number(/calls=(\d+)/.exec(line)[1]) : 0;
      };

      it('fixed: consumes decide as RateLimiterRedis, denied consumes counted, on its keys', async () => {
        const prefix = `${name}-fixed`;
        const cell = limiter({ keyPrefix: `${prefix}-cell`, points: 5, duration: 3600 });
        const own = new RateLimiterRedis({ storeClient: client, ...kind.options, keyPrefix: `${prefix}-own`, points: 5, duration: 3600 });
        const before = await calls('cl.fixed');
        let decided = 0;
        for (const cost of costs(7, 40)) {
          decided += cost > 0 ? 1 : 0;
          const [a, b] = [await outcome(cell.consume('u', cost)), await outcome(own.consume('u', cost))];
          sameBut(1500, a, b, `consume ${cost}`);
        }
        // Each consume but those of 0 points was the module's, counted there.
        assert.equal(await calls('cl.fixed') - before, decided);
        sameBut(1500, await outcome(cell.penalty('u', 2)), await outcome(own.penalty('u', 2)), 'penalty');
        sameBut(1500, await outcome(cell.reward('u', 30)), await outcome(own.reward('u', 30)), 'reward');
        sameBut(1500, await outcome(cell.get('u')), await outcome(own.get('u')), 'get');
        assert.equal(await raw(['GET', `${prefix}-cell:u`]), await raw(['GET', `${prefix}-own:u`]));
        const peek = flavor === 'module' ? ['CL.FIXED', `${prefix}-cell:u`] : ['FCALL', 'cl_fixed', '1', `${prefix}-cell:u`];
        assert.equal(await raw([...peek, '5', '3600', '0']).then((r) => r.length), 5);
        assert.equal(await cell.delete('u'), true);
        assert.equal(await cell.get('u'), null);
      });

      it('fixed: RateLimiterRedis keys carry over, and blockDuration blocks as it does', async () => {
        const opts = { storeClient: client, ...kind.options, keyPrefix: `${name}-carry`, points: 2, duration: 60, blockDuration: 120 };
        const own = new RateLimiterRedis(opts);
        await own.consume('k');
        const cell = limiter(opts);
        assert.equal((await outcome(cell.consume('k'))).ok, true);
        const blocked = await outcome(cell.consume('k'));
        assert.equal(blocked.ok, false);
        assert.equal(blocked.consumed, 3);
        // The first consume past the limit blocks for blockDuration, as RateLimiterRedis's does.
        assert.ok(blocked.ms > 60000 && blocked.ms <= 120000, `${blocked.ms}`);
        const ttl = await raw(['PTTL', `${name}-carry:k`]);
        assert.ok(ttl > 60000, `${ttl}`);
        // A key blocked forever (no expiry) is RateLimiterRedis's to repair: a new window.
        await cell.block('forever', 0);
        const after = await outcome(cell.consume('forever'));
        assert.equal(after.ok, false);
        assert.ok(await raw(['PTTL', `${name}-carry:forever`]) > 0);
      });

      for (const algorithm of ['gcra', 'window']) {
        it(`${algorithm}: blockDuration locks the key out from the first denied consume`, async () => {
          const cell = limiter({ algorithm, keyPrefix: `${name}-block-${algorithm}`, points: 2, duration: 60, blockDuration: 600 });
          assert.equal((await outcome(cell.consume('b', 2))).ok, true);
          const denied = await outcome(cell.consume('b'));
          assert.equal(denied.ok, false);
          // Banned from the denial: every consume denied until its end, a reward gives nothing.
          const banned = await outcome(cell.consume('b'));
          assert.equal(banned.ok, false);
          assert.ok(banned.ms > 599000 && banned.ms <= 600000, `${banned.ms}`);
          assert.equal((await outcome(cell.reward('b', 2))).remaining, 0);
          const value = await raw(['GET', `${name}-block-${algorithm}:${algorithm}:b`]);
          assert.equal(String(value).slice(0, 3), 'CLX');
          assert.ok(await raw(['PTTL', `${name}-block-${algorithm}:${algorithm}:b`]) > 599000);
          // The wait is the server's: a ban shortened by hand is reported as it stands.
          if (flavor === 'module') {
            await raw(['CL.BAN', `${name}-block-${algorithm}:${algorithm}:b`, '5']);
            const shorter = await outcome(cell.consume('b'));
            assert.ok(shorter.ms > 4000 && shorter.ms <= 5000, `${shorter.ms}`);
          }
        });
      }

      it('fixed: a banned key is denied, and get reports it past its points', async () => {
        if (flavor !== 'module') return;
        const cell = limiter({ keyPrefix: `${name}-banned`, points: 5, duration: 60, blockDuration: 10 });
        assert.equal((await outcome(cell.consume('alice'))).ok, true);
        await raw(['CL.BAN', `${name}-banned:alice`, '600']);
        for (let i = 0; i < 3; i += 1) {
          const denied = await outcome(cell.consume('alice'));
          assert.equal(denied.ok, false);
          assert.ok(denied.consumed > 5 && denied.ms > 599000, JSON.stringify(denied));
        }
        const got = await cell.get('alice');
        assert.equal(got.remainingPoints, 0);
        assert.ok(got.consumedPoints > 5, `${got.consumedPoints}`);
        assert.ok(got.msBeforeNext > 599000, `${got.msBeforeNext}`);
        // blockDuration never shortens the ban the module keeps.
        assert.ok(await raw(['PTTL', `${name}-banned:alice`]) > 599000);
        assert.equal(String(await raw(['GET', `${name}-banned:alice`])).slice(0, 3), 'CLX');
      });

      it('gcra: bursts of points, then a point back every duration / points', async () => {
        const cell = limiter({ algorithm: 'gcra', keyPrefix: `${name}-gcra`, points: 3, duration: 60 });
        const burst = [];
        for (let i = 0; i < 4; i += 1) burst.push(await outcome(cell.consume('g')));
        assert.deepEqual(burst.map((o) => o.ok), [true, true, true, false]);
        assert.deepEqual(burst.map((o) => o.remaining), [2, 1, 0, 0]);
        assert.equal(burst[0].first, true);
        // Denied: msBeforeNext is retry_after, the next point's 20 s; admitted, reset_after.
        assert.ok(burst[3].ms > 19000 && burst[3].ms <= 20000, `${burst[3].ms}`);
        assert.ok(burst[2].ms > 59000 && burst[2].ms <= 60000, `${burst[2].ms}`);
        assert.equal((await cell.reward('g', 1)).remainingPoints, 1);
        assert.equal((await cell.get('g')).remainingPoints, 1);
        assert.deepEqual(await raw(['EXISTS', `${name}-gcra:gcra:g`]), 1);
        await assert.rejects(cell.penalty('g'), /no meaning/);
        await assert.rejects(cell.block('g', 10), /no meaning/);
        await cell.delete('g');
        assert.equal(await cell.get('g'), null);
      });

      it('window: at most points in any duration, the oldest unit leaving first', async () => {
        const cell = limiter({ algorithm: 'window', keyPrefix: `${name}-win`, points: 4, duration: 60 });
        assert.equal((await outcome(cell.consume('w', 3))).remaining, 1);
        const denied = await outcome(cell.consume('w', 2));
        assert.equal(denied.ok, false);
        assert.ok(denied.ms > 59000 && denied.ms <= 60000, `${denied.ms}`);
        // More than the limit never fits.
        assert.equal((await outcome(cell.consume('w', 5))).ok, false);
        assert.equal((await outcome(cell.consume('w', 1))).ok, true);
        assert.equal(await raw(['TYPE', `${name}-win:window:w`]), 'string');
      });

      it('waitMs waits in the server until the points fit, and rejects when the wait ends', WAITS[flavor], async () => {
        // A client of its own: a connection waits with its call.
        const waiting = await kind.connect(server.port);
        try {
          const opts = { algorithm: 'gcra', keyPrefix: `${name}-wait`, points: 1, duration: 0.3 };
          const cell = limiter(opts);
          const waiter = new RateLimiterCell({ storeClient: waiting, ...kind.options, ...opts });
          await cell.consume('q');
          const started = Date.now();
          const res = await waiter.consume('q', 1, { waitMs: 5000 });
          assert.equal(res.remainingPoints, 0);
          assert.ok(Date.now() - started >= 250, `${Date.now() - started} ms`);
          const fixed = new RateLimiterCell({ storeClient: waiting, ...kind.options, keyPrefix: `${name}-wait`, points: 1, duration: 3600 });
          await fixed.consume('f');
          const timedOut = await outcome(fixed.consume('f', 1, { waitMs: 50 }));
          assert.equal(timedOut.ok, false);
          // A wait that ended took nothing.
          assert.equal(await raw(['GET', `${name}-wait:f`]), '1');
        } finally {
          await kind.close(waiting);
        }
      });

      it('a consume held back by a waiter is denied and takes nothing', WAITS[flavor], async () => {
        const waiting = await kind.connect(server.port);
        try {
          const opts = { keyPrefix: `${name}-held`, points: 2, duration: 3600 };
          const cell = limiter(opts);
          await cell.consume('h', 2);
          const waiter = new RateLimiterCell({ storeClient: waiting, ...kind.options, ...opts });
          const parked = waiter.consume('h', 2, { waitMs: 10000 });
          // One point back leaves the waiter waiting, with one point free.
          await cell.reward('h', 1);
          for (let i = 0; !/cl_waiting:now=1,/.test(String(await raw(['INFO', 'redis-cell']))); i += 1) {
            assert.ok(i < 500, 'the waiter never parked');
            await new Promise((r) => setTimeout(r, 10));
          }
          const held = await outcome(cell.consume('h', 1));
          assert.equal(held.ok, false);
          assert.equal(await raw(['GET', `${name}-held:h`]), '1');
          await cell.reward('h', 1);
          assert.equal((await parked).consumedPoints, 2);
        } finally {
          await kind.close(waiting);
        }
      });

      it("a client's own key prefix is on every key, the module's calls' too", async function () {
        if (!kind.keyPrefix) return; // node-redis before 6 has no key prefix of its own
        const prefixed = await kind.connect(server.port, { keyPrefix: 'app:' });
        try {
          for (const algorithm of ['fixed', 'gcra', 'window']) {
            const cell = new RateLimiterCell({ storeClient: prefixed, ...kind.options, algorithm, keyPrefix: `pre-${algorithm}`, points: 1, duration: 60 });
            assert.equal((await outcome(cell.consume('p'))).ok, true, algorithm);
            assert.equal((await outcome(cell.consume('p'))).ok, false, algorithm);
            const own = algorithm === 'fixed' ? 'p' : `${algorithm}:p`;
            assert.equal(await client.exists(`app:pre-${algorithm}:${own}`), 1, algorithm);
            assert.equal(await cell.delete('p'), true, algorithm);
            assert.equal(await client.exists(`app:pre-${algorithm}:${own}`), 0, algorithm);
          }
        } finally {
          await kind.close(prefixed);
        }
      });

      it('refuses numbers it could not keep exact, and options it cannot read', () => {
        assert.throws(() => limiter({ algorithm: 'gcra', points: 2 ** 53, duration: 1 }), /integer points/);
        assert.throws(() => limiter({ algorithm: 'window', points: 1.5, duration: 1 }), /integer points/);
        assert.throws(() => limiter({ algorithm: 'gcra', points: 1, duration: 1, blockDuration: 0.0001 }), /blockDuration/);
        assert.throws(() => limiter({ algorithm: 'leaky', points: 1, duration: 1 }), /algorithm/);
        assert.throws(() => limiter({ points: 1, duration: 1, via: 'lua' }), /via must be one of/);
        assert.throws(() => limiter({ points: 1, duration: 1, loadLibrary: 'false' }), /loadLibrary must be true or false/);
      });
    });
  }
});
