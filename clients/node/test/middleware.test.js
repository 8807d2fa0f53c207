'use strict';

// RouteLimiter in real Express apps served on loopback ports and driven over HTTP, on the
// module and on the library, on each ioredis and node-redis installed: the draft-11 fields
// parsed as Structured Fields, 429 and Retry-After at the right request, two limits of one
// identity denied all or nothing, two identities' limits given back when a later one denies,
// and a server that fails to answer refused (503) or let through.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const express = require('express');
const { parseItem, parseList } = require('structured-headers');

const {
  Cell, RouteLimiter, clientAddress, fixed, header, throttle, user, window,
} = require('redis-cell');
const { CLIENTS } = require('./clients');
const { FLAVORS, startServer } = require('./server');

/** An app whose one route `limits` guards, listening on a loopback port. */
async function serve(limiter, ...limits) {
  const app = express();
  app.get('/', limiter.limit(...limits), (req, res) => res.send('ok'));
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  return {
    get: (headers = {}) => fetch(`http://127.0.0.1:${server.address().port}/`, { headers }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** The draft-11 fields of a response, parsed: each policy's name and q, w; the r and t. */
function draft11(response) {
  const policies = parseList(response.headers.get('ratelimit-policy')).map(([name, params]) => {
    assert.equal(typeof name, 'string', 'a policy is named by a String');
    return [name, Object.fromEntries(params)];
  });
  const [name, params] = parseItem(response.headers.get('ratelimit'));
  assert.equal(typeof name, 'string');
  return { policies, name, ...Object.fromEntries(params) };
}

const silent = () => {};

for (const flavor of FLAVORS) describe(`RouteLimiter, ${flavor}`, () => {
  let server;
  before(async () => { server = await startServer({ module: flavor === 'module' }); });
  after(async () => { await server.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      let client;
      const raw = (words) => (typeof client.call === 'function' ? client.call(...words) : client.sendCommand(words.map(String)));
      before(async () => { client = await kind.connect(server.port); });
      after(async () => { await kind.close(client); });
      const limiter = (options) => new RouteLimiter(new Cell(client), { log: silent, ...options, prefix: `${name}:${options.prefix}:` });

      it('sends the draft-11 fields, and a 429 with Retry-After past the limit', async () => {
        const app = await serve(limiter({ prefix: 'gcra' }), { limiter: throttle('per-address', 2, 3, 60) });
        try {
          const seen = [];
          for (let i = 0; i < 4; i += 1) {
            const response = await app.get();
            seen.push([response.status, draft11(response), response.headers.get('retry-after')]);
          }
          for (const [, fieldsOf] of seen) {
            assert.deepEqual(fieldsOf.policies, [['per-address', { q: 3, w: 60 }]]);
            assert.equal(fieldsOf.name, 'per-address');
          }
          assert.deepEqual(seen.map(([status, f]) => [status, f.r]), [[200, 2], [200, 1], [200, 0], [429, 0]]);
          assert.deepEqual(seen.slice(0, 3).map(([, f]) => f.t), [20, 40, 60]);
          assert.equal(seen[3][1].t, 20);
          assert.equal(seen[3][2], '20');
          assert.equal(seen[0][2], null);
        } finally {
          await app.close();
        }
      });

      it("denies two limits of one identity in one call, the longer one uncharged", async () => {
        const routes = limiter({ prefix: 'two' });
        const app = await serve(routes,
          { limiter: fixed('minute', 2, 60) },
          { limiter: window('day', 10, 86400, { buckets: 24 }) });
        try {
          const statuses = [];
          for (let i = 0; i < 3; i += 1) statuses.push((await app.get()).status);
          assert.deepEqual(statuses, [200, 200, 429]);
          const denied = await app.get();
          // The binding limit is the one that denied; the policy lists both.
          const f = draft11(denied);
          assert.equal(f.name, 'minute');
          assert.deepEqual(f.policies.map(([policy]) => policy), ['minute', 'day']);
          const [day] = await raw(['KEYS', `${name}:two:day:*`]);
          const peek = await new Cell(client).window(day, 10, 86400, { quantity: 0, buckets: 24 });
          assert.equal(peek.remaining, 8);
        } finally {
          await app.close();
        }
      });

      it("gives an earlier identity's units back when a later one denies", async () => {
        const app = await serve(limiter({ prefix: 'ids' }),
          { limiter: fixed('address', 10, 60) },
          { limiter: fixed('api-key', 1, 60), by: header('x-api-key') });
        try {
          assert.equal((await app.get({ 'x-api-key': 'k1' })).status, 200);
          assert.equal((await app.get({ 'x-api-key': 'k1' })).status, 429);
          // Without a key, the key's limit does not apply.
          assert.equal((await app.get()).status, 200);
          const [address] = await raw(['KEYS', `${name}:ids:address:*`]);
          // Two requests served; the denied one's unit was given back.
          assert.equal(String(await raw(['GET', address])), '2');
          assert.equal(String(await raw(['GET', `${name}:ids:api-key:{k1}`])), '1');
        } finally {
          await app.close();
        }
      });

      it('tells its hook what a request was charged on, or what denied it', async () => {
        const told = [];
        const app = await serve(
          limiter({ prefix: 'hook', onDecision: (decided) => told.push(decided) }),
          { limiter: fixed('per-address', 5, 60) },
          { limiter: fixed('burst', 2, 60) },
          { limiter: fixed('per-key', 1, 60), by: header('x-api-key') },
        );
        try {
          assert.equal((await app.get({ 'x-api-key': 'k1' })).status, 200);
          // Denied on the key, after the address's limits admitted and gave their units back.
          assert.equal((await app.get({ 'x-api-key': 'k1' })).status, 429);
          // Denied on the burst, in one call with the address's limit, which took nothing.
          assert.equal((await app.get()).status, 200);
          assert.equal((await app.get()).status, 429);
        } finally {
          await app.close();
        }
        assert.deepEqual(told.map(({ limiter, key, allowed }) => [limiter, key, allowed]), [
          ['per-address', '127.0.0.1', true], ['burst', '127.0.0.1', true], ['per-key', 'k1', true],
          ['per-key', 'k1', false],
          ['per-address', '127.0.0.1', true], ['burst', '127.0.0.1', true],
          ['burst', '127.0.0.1', false],
        ]);
        assert.ok(told[6].reply.limited && told[6].reply.limit === 2);
        assert.throws(() => limiter({ prefix: 'x', onDecision: async () => {} }), TypeError);
      });

      it("states a calendar month's quota as its longest, 31 days", async () => {
        const app = await serve(limiter({ prefix: 'calendar' }),
          { limiter: fixed('monthly', 10000, 'month', { offset: 60 }) });
        try {
          const response = await app.get();
          assert.equal(response.status, 200);
          assert.deepEqual(draft11(response).policies, [['monthly', { q: 10000, w: 31 * 86400 }]]);
        } finally {
          await app.close();
        }
      });

      it('sends the older forms when asked', async () => {
        const app = await serve(limiter({ prefix: 'old', standardHeaders: 'draft-6', legacyHeaders: true }),
          { limiter: fixed('old', 5, 60) });
        try {
          const response = await app.get();
          assert.equal(response.headers.get('ratelimit-policy'), '5;w=60');
          assert.equal(response.headers.get('ratelimit-limit'), '5');
          assert.equal(response.headers.get('ratelimit-remaining'), '4');
          assert.equal(response.headers.get('ratelimit-reset'), '60');
          assert.equal(response.headers.get('x-ratelimit-remaining'), '4');
          const reset = Number(response.headers.get('x-ratelimit-reset'));
          assert.ok(Math.abs(reset - (Date.now() / 1000 + 60)) < 5, `X-RateLimit-Reset ${reset}`);
        } finally {
          await app.close();
        }
      });
    });
  }
});

describe("RouteLimiter's identities and declarations", () => {
  it('reads identities as the Python middleware does', () => {
    assert.equal(clientAddress({ ip: '::ffff:10.0.0.1' }), '10.0.0.1');
    assert.equal(clientAddress({ ip: '2001:db8::1' }), '2001:db8::1');
    // A header sent twice is its first value, not a new identity.
    assert.equal(header('X-API-Key')({ rawHeaders: ['x-api-key', 'a', 'X-Api-Key', 'b'] }), 'a');
    assert.equal(header('X-API-Key')({ rawHeaders: [] }), null);
    assert.equal(user({ user: { id: 7 } }), '7');
    for (const anonymous of [undefined, null, {}, { id: null }, { id: '' }, { id: {} }]) {
      assert.equal(user({ user: anonymous }), null, JSON.stringify(anonymous));
    }
  });

  it('holds a policy to one limiter and one identity across routes', () => {
    const routes = new RouteLimiter({ all() {} });
    routes.limit({ limiter: fixed('shared', 5, 60) });
    routes.limit({ limiter: fixed('shared', 5, 60) });
    assert.throws(() => routes.limit({ limiter: fixed('shared', 5, 60), by: header('x-api-key') }), /declared already/);
    assert.throws(() => routes.limit({ limiter: fixed('shared', 6, 60) }), /declared already/);
    assert.throws(() => routes.limit({ limiter: fixed('bad name', 1, 1) }), /policy's name/);
    // Numbers the server would refuse, refused where the route is declared.
    for (const limiter of [throttle('t', -1, 1, 1), throttle('t', 1, 0, 1), fixed('f', 0, 60), fixed('f', 1, 1.5),
      window('w', 1, 60, { buckets: 7 }), window('w', 1, 60, { buckets: 1 }), fixed('f', '1', 60)]) {
      assert.throws(() => routes.limit({ limiter }), /integer|buckets/, JSON.stringify(limiter));
    }
    // A calendar's unit in a fixed window's period, and the grid's words, as the module takes them.
    routes.limit({ limiter: fixed('monthly', 10000, 'MONTH', { offset: 60 }) });
    routes.limit({ limiter: fixed('hourly', 5, 3600, { align: true, offset: -300 }) });
    assert.throws(() => routes.limit({ limiter: fixed('m', 1, 'MONTHS') }), /period is an integer/);
    assert.throws(() => routes.limit({ limiter: fixed('m', 1, 'MONTH', { align: true }) }), /keeps to the calendar/);
    assert.throws(() => routes.limit({ limiter: fixed('h', 1, 60, { offset: 60 }) }), /moves a grid/);
    assert.throws(() => routes.limit({ limiter: fixed('h', 1, 60, { align: true, offset: 1440 }) }), /-1439 to 1439/);
    assert.throws(() => routes.limit(), TypeError);
  });

  it("sends a programming error to Express's error handling, not to failOpen", async () => {
    const cell = { all: async () => { throw new TypeError('a bug'); } };
    const app = await serve(new RouteLimiter(cell, { failOpen: true, log: silent }), { limiter: fixed('bug', 1, 60) });
    try {
      assert.equal((await app.get()).status, 500);
    } finally {
      await app.close();
    }
  });
});

describe('RouteLimiter when the server fails to answer', () => {
  // ioredis, told not to queue while it cannot connect: each call fails at once.
  const ioredis = Object.values(CLIENTS).find((kind) => kind.library === 'ioredis');
  const skip = ioredis ? false : 'no ioredis installed here';
  const Redis = ioredis && require('ioredis');
  const dead = () => new Redis({ port: 1, host: '127.0.0.1', lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null });

  for (const [failOpen, status] of [[false, 503], [true, 200]]) {
    it(`answers ${status} with failOpen ${failOpen}, never a 429`, { skip }, async () => {
      const client = dead();
      const logged = [];
      const routes = new RouteLimiter(new Cell(client, { via: 'module' }), { failOpen, log: (message) => logged.push(message) });
      const app = await serve(routes, { limiter: fixed('down', 1, 60) });
      try {
        for (let i = 0; i < 3; i += 1) {
          const response = await app.get();
          assert.equal(response.status, status);
          assert.equal(response.headers.get('ratelimit'), null);
        }
        assert.equal(logged.length, 3);
      } finally {
        await app.close();
        client.disconnect();
      }
    });
  }
});
