// An Express app whose one route allows each client address 3 at once and 3 a minute (GCRA),
// decided by the module in one CL.ALL call: the app docs/clients.md shows, served by
// clients/node/test/examples.test.js.
const express = require('express');
const Redis = require('ioredis');
const { Cell, RouteLimiter, throttle } = require('redis-cell');

const limits = new RouteLimiter(new Cell(new Redis(process.env.REDIS_URL || 'redis://localhost:6379')));
const app = express();
app.get('/', limits.limit({ limiter: throttle('per-address', 2, 3, 60) }), (req, res) => res.json({ ok: true }));

module.exports = app;
