'use strict';

// Local batches (lib/batch.js): the rules under a controlled clock, then the limiter over
// real servers, with the module and with the library: concurrent calls share one request,
// the deny cache makes no call while it holds, what is held goes back, and a fleet of
// processes on one key keeps the bound docs/fleet.md states.

const assert = require('node:assert/strict');
const { fork } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');
const Redis = require('ioredis');

const {
  BatchCore, Batched, Cell, Reply, fixed, throttle, window,
} = require('redis-cell');
const { FLAVORS, ask, startServer } = require('./server');

const core = (options = {}) => new BatchCore({
  horizon: 1000, refresh: 500, share: 0.25, maxBatch: 1000, fixedWindow: false, ...options,
});
const reply = (granted, { remaining = 100, retryAfter = null, resetAfter = 1000 } = {}) => (
  new Reply(granted === 0, 1000, remaining, retryAfter, resetAfter, granted));

describe('the rules of a batch, under a controlled clock', () => {
  it('spends units within the horizon and gives back what is left', () => {
    const c = core();
    assert.deepEqual(c.spend(0, 1), [null, 0]);
    assert.equal(c.granted(0, 0, 1, reply(10)).allowed, true);
    for (const at of [100, 500, 899]) {
      const [decision, back] = c.spend(at, 1);
      assert.equal(decision.allowed && decision.local && decision.at === at, true);
      assert.equal(back, 0);
    }
    // Spending stops a tenth of the horizon early, so that the refund comes within it.
    assert.deepEqual(c.spend(900, 1), [null, 6]);
  });

  it("gives a fixed window's units back only while it is open and the horizon lasts", () => {
    const c = core({ fixedWindow: true });
    c.granted(0, 0, 1, reply(10, { resetAfter: 300 }));
    assert.equal(c.lapsed(950), 0);
    c.granted(1000, 1000, 1, reply(10, { resetAfter: 5000 }));
    assert.equal(c.close(1500), 9);
    c.granted(2000, 2000, 1, reply(10, { resetAfter: 5000 }));
    assert.equal(c.close(3000), 0);
  });

  it('refuses a fixed window on the clock or the calendar', () => {
    for (const limiter of [fixed('m', 10, 'MONTH'), fixed('a', 10, 60, { align: true })]) {
      assert.throws(() => new Batched(null, limiter), /not laid on the clock/);
    }
  });

  it('sizes a batch by the demand seen, within a share of what is left', () => {
    const c = core();
    assert.equal(c.ask(0, 1), 1);
    c.granted(0, 0, 1, reply(1, { remaining: 1000 }));
    c.spent += 99;
    assert.equal(c.ask(500, 1), 100);
    c.granted(500, 500, 1, reply(100, { remaining: 40 }));
    assert.equal(c.ask(600, 1), 10);
    c.granted(600, 600, 1, reply(10, { remaining: 2 }));
    assert.equal(c.ask(700, 1), 1);
  });

  it('answers a denial locally until its wait is over', () => {
    const c = core();
    const denied = c.granted(0, 0, 1, reply(0, { remaining: 0, retryAfter: 250 }));
    assert.equal(denied.allowed || denied.local, false);
    const [held] = c.spend(100, 1);
    assert.equal(held.allowed, false);
    assert.equal(held.local, true);
    assert.equal(held.retryAfter, 150);
    assert.deepEqual(c.spend(250, 1), [null, 0]);
    // An answer past the horizon spends nothing, and gives its units back at once, while the
    // horizon (less a refund's way) lasts.
    assert.equal(c.granted(300, 1250, 1, reply(10)).allowed, false);
    assert.equal(c.lapsed(1220), 10);
  });

  it('denies, or allows a fallback rate, while the server is away', () => {
    assert.equal(core().failed(0, 1).allowed, false);
    const c = core({ fallbackRate: 10 });
    assert.equal(c.failed(0, 1).allowed, false);
    assert.equal(c.failed(100, 1).allowed, true);
    assert.equal(c.failed(100, 1).allowed, false);
    let allowed = 0;
    for (let i = 0; i < 10; i += 1) allowed += c.failed(100000, 1).allowed ? 1 : 0;
    assert.equal(allowed, 5);
  });
});

/** How many times the server ran `command` (or, without the module, any function). */
async function ran(port, flavor, command) {
  const stats = await ask(port, 'INFO commandstats');
  const name = flavor === 'library' ? 'fcall' : command;
  const found = new RegExp(`cmdstat_${name.replace('.', '\\.')}:calls=(\\d+)`).exec(stats);
  return found ? Number(found[1]) : 0;
}

for (const flavor of FLAVORS) describe(`Batched on a server, ${flavor}`, () => {
  let server;
  let client;
  before(async () => {
    server = await startServer({ module: flavor === 'module' });
    client = new Redis({ port: server.port, host: '127.0.0.1' });
  });
  after(async () => {
    client.disconnect();
    await server.stop();
  });

  it('shares one request among concurrent calls, and the server counts what was spent', async () => {
    const cell = new Cell(client);
    let now = 0;
    let most = 0;
    // The ATMOST requests at once (refunds, which timers send too, aside).
    const counted = {
      fixed: async (...args) => {
        if (!args[args.length - 1].atMost) return cell.fixed(...args);
        now += 1;
        most = Math.max(most, now);
        try { return await cell.fixed(...args); } finally { now -= 1; }
      },
    };
    const limiter = new Batched(counted, fixed('shared', 300, 60));
    const decisions = await Promise.all(Array.from({ length: 900 }, () => limiter.acquire()));
    const spent = decisions.filter((d) => d.allowed).length;
    assert.equal(spent, 300);
    assert.equal(most, 1);
    assert.ok(limiter.calls < 300, `${limiter.calls} calls`);
    await limiter.close();
    assert.equal(Number(await client.get('shared')), 300);
  });

  it('gives back what it holds on close', async () => {
    const cell = new Cell(client);
    const limiter = new Batched(cell, window('held', 1000, 60));
    for (let i = 0; i < 50; i += 1) await limiter.acquire();
    await limiter.close();
    assert.equal((await cell.window('held', 1000, 60, { quantity: 0 })).remaining, 950);
  });

  it('makes no call while the deny cache holds, then lets one through', async () => {
    let now = 100000;
    const limiter = new Batched(new Cell(client), throttle('denied', 4, 1, 60), { clock: () => now });
    for (let i = 0; i < 5; i += 1) assert.equal((await limiter.acquire()).allowed, true);
    const denied = await limiter.acquire();
    assert.equal(denied.allowed || denied.local, false);
    assert.ok(denied.retryAfter > 59000 && denied.retryAfter <= 60000, String(denied.retryAfter));
    const calls = await ran(server.port, flavor, 'cl.throttle');
    for (const step of [0, 1000, denied.retryAfter - 1]) {
      now = 100000 + step;
      const held = await limiter.acquire();
      assert.equal(held.allowed, false);
      assert.equal(held.local, true);
    }
    assert.equal(await ran(server.port, flavor, 'cl.throttle'), calls);
    now = 100000 + denied.retryAfter;
    await limiter.acquire();
    assert.equal(await ran(server.port, flavor, 'cl.throttle'), calls + 1);
  });

  it("rejects with a limiter's error, and the next call may ask", async () => {
    await client.rpush('list', 'x');
    const limiter = new Batched(new Cell(client), fixed('list', 10, 60));
    for (let i = 0; i < 2; i += 1) await assert.rejects(limiter.acquire(), /WRONGTYPE/);
  });

  it('denies while the server is away', async () => {
    const away = new Redis({ port: 1, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0,
      retryStrategy: () => null, enableOfflineQueue: false });
    const limiter = new Batched(new Cell(away, { via: 'module' }), fixed('x', 10, 1));
    const decision = await limiter.acquire();
    assert.equal(decision.allowed, false);
    assert.equal(decision.local, true);
    away.disconnect();
  });

  // A fleet: three processes at twice the limit between them, holding the bound
  // docs/fleet.md proves: for a fixed window 2L in any P − H (checked over (P + H) − 2H),
  // for the others B(S) plus the units given back in any S − 0.9 H − 1 ms (H a tenth of the
  // period).
  const KINDS = { window: [1000, 100], fixed: [1100, 200], throttle: [1000, 110] };
  for (const [kind, [spanMs, promise]] of Object.entries(KINDS)) {
    it(`a fleet of processes keeps the bound on a ${kind}`, async () => {
      await client.del(kind);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-cell-fleet-'));
      const startAt = Number(process.hrtime.bigint()) / 1e6 + 1500;
      const logs = [0, 1, 2].map((i) => path.join(dir, `${i}.log`));
      const children = logs.map((log) => fork(path.join(__dirname, 'fleet', 'worker.js'),
        [server.port, kind, 200 / 3, 2500, startAt, log], { stdio: 'inherit' }));
      const codes = await Promise.all(children.map((child) => new Promise((r) => child.once('exit', r))));
      assert.deepEqual(codes, [0, 0, 0]);
      const runs = logs.map((log) => JSON.parse(fs.readFileSync(log, 'utf8')));
      fs.rmSync(dir, { recursive: true, force: true });
      const instants = runs.flatMap((run) => run.spent).sort((a, b) => a - b);
      const givenBack = runs.reduce((sum, run) => sum + run.givenBack, 0);
      // Less a step of the server's clock, which counts places to the millisecond.
      const [span, bound] = kind === 'fixed' ? [spanMs - 200, promise] : [spanMs - 91, promise + givenBack];
      let most = 0;
      let start = 0;
      for (let end = 0; end < instants.length; end += 1) {
        while (instants[end] - instants[start] >= span) start += 1;
        most = Math.max(most, end - start + 1);
      }
      assert.ok(most <= bound, `${most} units in ${span} ms, over ${bound}`);
      assert.ok(instants.length >= 100, `only ${instants.length} units spent`);
    });
  }
});
