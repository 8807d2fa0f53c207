'use strict';

// RateLimiterCell on a Redis Cluster of three primaries with the module on each, through each
// installed client's cluster client (ioredis' Cluster, node-redis' createCluster): keys on
// every primary are decided there by the module, the fixed window's GET beside its command
// included. Without the module, the same in the library, which the adapter loads on every
// primary.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const { RateLimiterRes } = require('rate-limiter-flexible');

const {
  Cell, RateLimiterCell, fixed, librarySource, throttle,
} = require('redis-cell');
const { CLIENTS } = require('./clients');
const { FLAVORS, ask, startCluster } = require('./server');

const COMMANDS = { fixed: 'cl.fixed', gcra: 'cl.throttle', window: 'cl.window' };

/** How many times each primary ran `command`. */
async function calls(ports, command) {
  return Promise.all(ports.map(async (port) => {
    const line = (await ask(port, 'INFO commandstats')).split('\r\n')
      .find((l) => l.startsWith(`cmdstat_${command}:`));
    return line ? Number(/calls=(\d+)/.exec(line)[1]) : 0;
  }));
}

// A client that never answers fails its test rather than holding the run.
for (const flavor of FLAVORS) describe(`RateLimiterCell on a Redis Cluster, ${flavor}`, { timeout: 120000 }, () => {
  let cluster;
  before(async () => { cluster = await startCluster({ module: flavor === 'module' }); });
  const command = (algorithm) => (flavor === 'module' ? COMMANDS[algorithm] : 'fcall');
  after(async () => { if (cluster) await cluster.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      let client;
      before(async () => { client = await kind.connectCluster(cluster.ports); });
      after(async () => { if (client) await kind.close(client); });

      for (const algorithm of ['fixed', 'gcra', 'window']) {
        it(`${algorithm}: keys on every primary admit 2, then deny, decided there`, async () => {
          const limiter = new RateLimiterCell({ storeClient: client, ...kind.options, algorithm,
            keyPrefix: `${name}-${algorithm}`, points: 2, duration: 60 });
          const before = await calls(cluster.ports, command(algorithm));
          // Twelve keys: their slots fall on all three primaries.
          for (let k = 0; k < 12; k += 1) {
            assert.equal((await limiter.consume(`k${k}`)).remainingPoints, 1);
            assert.equal((await limiter.consume(`k${k}`)).remainingPoints, 0);
            const denied = await limiter.consume(`k${k}`).then(() => null, (res) => res);
            assert.ok(denied instanceof RateLimiterRes, `k${k}: ${denied}`);
            assert.equal(denied.consumedPoints, 3);
          }
          const after = await calls(cluster.ports, command(algorithm));
          after.forEach((count, i) => assert.ok(count > before[i], `primary ${i} ran no ${command(algorithm)}`));
          assert.equal(after.reduce((a, b) => a + b) - before.reduce((a, b) => a + b), 36);
        });
      }

      it("Cell decides CL.ALL on its keys' node, all or nothing, on every primary", async () => {
        const cell = new Cell(client);
        // Twelve hash tags: their slots fall on all three primaries.
        for (let k = 0; k < 12; k += 1) {
          const tag = `{${name}-all-${k}}`;
          const limiters = [fixed(`${tag}:fixed`, 2, 60), throttle(`${tag}:gcra`, 4, 5, 60)];
          assert.equal((await cell.all(limiters, { quantity: 2 })).remaining, 0);
          assert.equal((await cell.all(limiters)).limited, true);
          // The denial charged neither limiter.
          assert.equal((await cell.throttle(`${tag}:gcra`, 4, 5, 60, { quantity: 0 })).remaining, 3);
          assert.equal((await cell.smooth(`${tag}:smooth`, 2, 1)).remaining, 2);
        }
      });

      it('a primary with a newer library keeps it, and the others get ours', { skip: flavor === 'module' && 'the library flavor\'s' }, async () => {
        const { version } = require('redis-cell/package.json');
        const newer = librarySource().replace(`local CELL_VERSION = '${version}'`, "local CELL_VERSION = '99.0.0'");
        for (const port of cluster.ports) await ask(port, 'FUNCTION FLUSH');
        const first = await kind.connect(cluster.ports[0]);
        try {
          await (typeof first.call === 'function' ? first.call('FUNCTION', 'LOAD', newer) : first.sendCommand(['FUNCTION', 'LOAD', newer]));
        } finally {
          await kind.close(first);
        }
        const fresh = await kind.connectCluster(cluster.ports);
        try {
          const limiter = new RateLimiterCell({ storeClient: fresh, ...kind.options, algorithm: 'gcra',
            keyPrefix: `${name}-newer`, points: 2, duration: 60 });
          for (let k = 0; k < 12; k += 1) assert.equal((await limiter.consume(`k${k}`)).remainingPoints, 1);
        } finally {
          await kind.close(fresh);
        }
        const versions = await Promise.all(cluster.ports.map((port) => ask(port, 'FCALL_RO cl_version 0')));
        assert.match(versions[0], /99\.0\.0/);
        for (const v of versions.slice(1)) assert.match(v, new RegExp(version.replace(/\./g, '\\.')));
      });

      it("a client's own key prefix is on every key, on every primary", async () => {
        if (!kind.keyPrefix) return; // node-redis before 6 has no key prefix of its own
        const prefixed = await kind.connectCluster(cluster.ports, { keyPrefix: 'app:' });
        try {
          for (const algorithm of ['fixed', 'gcra', 'window']) {
            const limiter = new RateLimiterCell({ storeClient: prefixed, ...kind.options, algorithm,
              keyPrefix: `${name}-pre-${algorithm}`, points: 1, duration: 60 });
            for (let k = 0; k < 12; k += 1) {
              assert.equal((await limiter.consume(`k${k}`)).remainingPoints, 0);
              await assert.rejects(limiter.consume(`k${k}`), RateLimiterRes);
              const own = algorithm === 'fixed' ? `k${k}` : `${algorithm}:k${k}`;
              assert.equal(await client.exists(`app:${name}-pre-${algorithm}:${own}`), 1, own);
            }
          }
          const tag = `{${name}-pre-all}`;
          const reply = await new Cell(prefixed).all([fixed(`${tag}:a`, 1, 60), fixed(`${tag}:b`, 1, 60)]);
          assert.equal(reply.remaining, 0);
          for (const own of ['a', 'b']) assert.equal(await client.exists(`app:${tag}:${own}`), 1, own);
        } finally {
          await kind.close(prefixed);
        }
      });
    });
  }
});
