'use strict';

// End to end: an Express app limited by RateLimiterCell, with the middleware and headers of
// rate-limiter-flexible's Express example, gets 200s, then a 429 with Retry-After.

const assert = require('node:assert/strict');
const { after, before, describe, it } = require('node:test');
const express = require('express');
const IORedis = require('ioredis');

const { RateLimiterCell } = require('redis-cell');
const { FLAVORS, startServer } = require('./server');

// One suite around the file: Node 20.0's runner does not run a file's top-level hooks
// before its tests, and a suite's hooks it does.
for (const flavor of FLAVORS) describe(`an Express app limited by RateLimiterCell, ${flavor}`, () => {
  let server;
  let redis;
  before(async () => {
    server = await startServer({ module: flavor === 'module' });
    redis = new IORedis({ port: server.port, host: '127.0.0.1' });
  });
  after(async () => {
    redis.disconnect();
    await server.stop();
  });

  function limitedApp(limiter, points) {
    const app = express();
    app.use((req, res, next) => {
      const headers = (rl) => ({
        'Retry-After': String(Math.ceil(rl.msBeforeNext / 1000)),
        'X-RateLimit-Limit': String(points),
        'X-RateLimit-Remaining': String(rl.remainingPoints),
        'X-RateLimit-Reset': new Date(Date.now() + rl.msBeforeNext).toISOString(),
      });
      limiter.consume(req.ip)
        .then((rl) => { res.set(headers(rl)); next(); })
        .catch((rl) => {
          if (rl instanceof Error) return next(rl);
          return res.set(headers(rl)).status(429).send('Too Many Requests');
        });
    });
    app.get('/', (req, res) => res.send('ok'));
    return app;
  }

  for (const algorithm of ['fixed', 'gcra', 'window']) {
    it(`an Express app on algorithm '${algorithm}' answers 200s, then 429 with Retry-After`, async () => {
      const limiter = new RateLimiterCell({ storeClient: redis, algorithm, keyPrefix: `express-${algorithm}`, points: 3, duration: 60 });
      const listener = limitedApp(limiter, 3).listen(0, '127.0.0.1');
      await new Promise((r) => listener.once('listening', r));
      try {
        const url = `http://127.0.0.1:${listener.address().port}/`;
        for (let i = 0; i < 3; i += 1) {
          const ok = await fetch(url);
          assert.equal(ok.status, 200);
          assert.equal(ok.headers.get('x-ratelimit-remaining'), String(2 - i));
        }
        const refused = await fetch(url);
        assert.equal(refused.status, 429);
        const retryAfter = Number(refused.headers.get('retry-after'));
        // GCRA gives a point back every 20 s; the windows end or slide after a minute.
        assert.ok(retryAfter > 0 && retryAfter <= (algorithm === 'gcra' ? 20 : 60), `${retryAfter}`);
        assert.equal(refused.headers.get('x-ratelimit-limit'), '3');
        assert.equal(refused.headers.get('x-ratelimit-remaining'), '0');
        const keys = await redis.keys(`express-${algorithm}:*`);
        assert.equal(keys.length, 1, 'the decisions were the module\'s, on one key');
      } finally {
        await new Promise((r) => listener.close(r));
      }
    });
  }
});
