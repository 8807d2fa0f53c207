'use strict';

// One process of a fleet (test/batch.test.js): asks for a unit `demand` times a second from
// `startAt` (on the monotonic clock every process shares, CLOCK_MONOTONIC in ms) for `ms`,
// through its own Batched limiter, and writes the instant it spent each unit to `log`.

const fs = require('node:fs');
const Redis = require('ioredis');
const { Batched, Cell, fixed, window, throttle } = require('redis-cell');

const [port, kind, demand, ms, startAt, log] = process.argv.slice(2);
const LIMITERS = {
  window: () => window('window', 100, 1000),
  fixed: () => fixed('fixed', 100, 1000),
  throttle: () => throttle('throttle', 9, 100, 1000),
};

// Every process reads the same clock: hrtime is CLOCK_MONOTONIC.
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function main() {
  const client = new Redis({ port: Number(port), host: '127.0.0.1' });
  const limiter = new Batched(new Cell(client), LIMITERS[kind](), { ms: true, clock: now });
  const spent = [];
  while (now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
  const end = Number(startAt) + Number(ms);
  for (let at = Number(startAt); at < end; at += 1000 / Number(demand)) {
    const pause = at - now();
    if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    const decision = await limiter.acquire();
    if (decision.allowed) spent.push(decision.at);
  }
  await limiter.close();
  fs.writeFileSync(log, JSON.stringify({ spent, givenBack: limiter.givenBack }));
  client.disconnect();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
