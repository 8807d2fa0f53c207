'use strict';

// CellStore under express-rate-limit's own middleware, in a real Express app served on a
// loopback port and driven over HTTP: the counts are CL.FIXED's in Redis, on the module and
// on the library, on each ioredis and node-redis installed.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const express = require('express');
const { rateLimit } = require('express-rate-limit');

const { CellStore } = require('redis-cell');
const { CLIENTS } = require('./clients');
const { FLAVORS, startServer } = require('./server');

/** An app whose one route express-rate-limit limits with `options`, listening. */
async function serve(options) {
  const app = express();
  const limiter = rateLimit({ windowMs: 60000, limit: 3, standardHeaders: 'draft-8', legacyHeaders: false, ...options });
  app.get('/', limiter, (req, res) => res.status(Number(req.query.status || 200)).send('ok'));
  const server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const url = `http://127.0.0.1:${server.address().port}/`;
  return { url, limiter, close: () => new Promise((resolve) => server.close(resolve)) };
}

for (const flavor of FLAVORS) describe(`CellStore under express-rate-limit, ${flavor}`, () => {
  let server;
  before(async () => { server = await startServer({ module: flavor === 'module' }); });
  after(async () => { await server.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      let client;
      const raw = (words) => (typeof client.call === 'function' ? client.call(...words) : client.sendCommand(words.map(String)));
      before(async () => { client = await kind.connect(server.port); });
      after(async () => { await kind.close(client); });

      it('answers 429 with its headers past the limit, each request counted in Redis', async () => {
        const app = await serve({ store: new CellStore({ client, prefix: `${name}:a:` }) });
        try {
          const statuses = [];
          let last;
          for (let i = 0; i < 5; i += 1) {
            last = await fetch(app.url);
            statuses.push(last.status);
          }
          assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
          assert.match(last.headers.get('ratelimit'), /r=0/);
          assert.match(last.headers.get('ratelimit-policy'), /q=3; w=60/);
          const retry = Number(last.headers.get('retry-after'));
          assert.ok(retry > 55 && retry <= 60, `Retry-After ${retry}`);
          // Denied requests are counted, as express-rate-limit's own stores count them.
          const [key] = await raw(['KEYS', `${name}:a:*`]);
          assert.equal(String(await raw(['GET', key])), '5');
          const ttl = Number(await raw(['PTTL', key]));
          assert.ok(ttl > 55000 && ttl <= 60000, `PTTL ${ttl}`);
        } finally {
          await app.close();
        }
      });

      it('gives a request back, reads a count and resets a key', async () => {
        const store = new CellStore({ client, prefix: `${name}:b:` });
        const app = await serve({ store, skipFailedRequests: true });
        try {
          assert.equal((await fetch(`${app.url}?status=500`)).status, 500);
          assert.equal((await fetch(app.url)).status, 200);
          const [key] = await raw(['KEYS', `${name}:b:*`]);
          // The failed request was given back once its response ended.
          assert.equal(String(await raw(['GET', key])), '1');
          const id = key.slice(`${name}:b:`.length);
          const info = await store.get(id);
          assert.equal(info.totalHits, 1);
          assert.ok(info.resetTime.getTime() > Date.now() + 55000);
          await app.limiter.resetKey(id);
          assert.equal(await store.get(id), undefined);
        } finally {
          await app.close();
        }
      });
    });
  }
});
