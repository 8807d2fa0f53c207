// The Express app of express_limits.js, counting its decisions in Prometheus: RouteLimiter's
// onDecision feeds a counter by policy and outcome (never by address, which would make a
// series for every client), served at /metrics; served by clients/node/test/examples.test.js.
const express = require('express');
const Redis = require('ioredis');
const prometheus = require('prom-client');
const { Cell, RouteLimiter, throttle } = require('redis-cell');

const registry = new prometheus.Registry();
const decisions = new prometheus.Counter({
  name: 'ratelimit_decisions_total',
  help: 'Rate-limit decisions, by policy and outcome',
  labelNames: ['policy', 'outcome'],
  registers: [registry],
});

const cell = new Cell(new Redis(process.env.REDIS_URL || 'redis://localhost:6379'));
const limits = new RouteLimiter(cell, {
  onDecision: ({ limiter, allowed }) => decisions.inc({ policy: limiter, outcome: allowed ? 'allowed' : 'denied' }),
});

const app = express();
app.get('/metrics', async (req, res) => res.type(registry.contentType).send(await registry.metrics()));
app.get('/', limits.limit({ limiter: throttle('per-address', 2, 3, 60) }), (req, res) => res.json({ ok: true }));

module.exports = app;
