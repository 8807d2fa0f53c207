'use strict';

// The typed client (Cell) against a real server with the module, and against one without it
// (where it loads and calls the Functions library), on each ioredis and node-redis installed:
// every command and every option, the same answers on both paths, waiting (the module's
// alone), and every option row of the grammar (clients/grammar.json) sent and read as one.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');

const {
  Cell, NeedsModuleError, Reply, commands, throttle, fixed, window, lease,
} = require('redis-cell');
const { CLIENTS } = require('./clients');
const { FLAVORS, WAITS, startServer } = require('./server');

const ROOT = process.env.REDIS_CELL_ROOT || path.join(__dirname, '..', '..', '..');
const GRAMMAR = JSON.parse(fs.readFileSync(path.join(ROOT, 'clients', 'grammar.json'), 'utf8'));

const reply = (limited, limit, remaining, retryAfter, resetAfter) => new Reply(limited, limit, remaining, retryAfter, resetAfter);

// Each command's builder and a call of it that any one option can join and stay right.
const CALLS = {
  'CL.THROTTLE': ['throttle', ['t', 10, 10, 60]],
  'CL.FIXED': ['fixed', ['f', 10, 60]],
  'CL.WINDOW': ['window', ['w', 10, 60]],
  'CL.LEASE': ['lease', ['l', 3, 60, 'h']],
  'CL.RELEASE': ['release', ['l', 'h']],
  'CL.HOLDERS': ['holders', ['l']],
  'CL.SMOOTH': ['smooth', ['s', 10, 1]],
  'CL.ALL': ['all', [[fixed('a', 10, 60)]]],
  'CL.TOP': ['top', []],
  'CL.BAN': ['ban', ['b', 60]],
  'CL.UNBAN': ['unban', ['b']],
};
// The commands this client does not offer yet, and the issue that adds them: the test fails
// once one is offered, so that it is held to the table too.
const NOT_YET = {};
// A right value of each kind of option (src/grammar.rs's Value).
const VALUES = {
  flag: true, quantity: 2, cells: 4, span: 1, factor: 2, holder: 'h', timeout: 10, listed: 3, offset: -300,
};
const camel = (name) => name.replace(/_(.)/g, (_, c) => c.toUpperCase());

/** Every (command, option) a client sends: AT is the replication stream's alone. */
function* sendable() {
  for (const row of GRAMMAR.options) {
    if (row.replication_only) continue;
    for (const command of [...row.takers, ...row.positional]) yield [command, row];
  }
}

function built(command, row) {
  const [name, args] = CALLS[command];
  const options = { [camel(row.name)]: VALUES[row.value] };
  // COLD shapes a warm-up; a holder holds a LEASE limiter's lease.
  if (row.keyword === 'COLD') options.warmup = VALUES.span;
  // OFFSET moves an aligned grid.
  if (row.keyword === 'OFFSET') options.align = true;
  const params = row.keyword === 'HOLDER' ? [[lease('a', 3, 60)]] : args;
  return commands[name](...params, options);
}

describe('the client is held to the grammar', () => {
  it('offers every command, with its parameters in order', () => {
    assert.deepEqual(Object.keys(CALLS).sort(), GRAMMAR.commands.filter((c) => !NOT_YET[c]).sort());
    for (const command of Object.keys(NOT_YET)) {
      assert.equal(commands[command.split('.')[1].toLowerCase()], undefined, `${command} is offered: hold it here`);
    }
    for (const [command, params] of Object.entries(GRAMMAR.params)) {
      if (command === 'CL.ALL' || NOT_YET[command]) continue;
      const [name, args] = CALLS[command];
      const words = commands[name](...args);
      assert.equal(words[0], command);
      // The parameters, in the table's order, are the call's first words.
      assert.equal(words.length >= params.length + 1, true, command);
    }
  });

  for (const [command, row] of sendable()) {
    if (NOT_YET[command]) continue;
    it(`sends ${command}'s ${row.keyword}`, () => {
      const words = built(command, row);
      const value = VALUES[row.value];
      if (row.positional.includes(command)) {
        assert.equal(words[CALLS[command][1].length + 1], value);
      } else {
        const at = words.indexOf(row.keyword);
        assert.ok(at > 0, `${row.keyword} in ${words}`);
        if (row.value !== 'flag') assert.equal(words[at + 1], value);
      }
    });
  }

  it('refuses an option its command does not take, and reads an undefined one as none', () => {
    assert.throws(() => commands.lease('k', 1, 60, 'h', { quantity: 5 }), /takes no option quantity/);
    assert.throws(() => commands.holders('k', { quantity: 5 }), TypeError);
    assert.deepEqual(commands.lease('k', 1, 60, 'h', { refund: undefined, block: false }), ['CL.LEASE', 'k', 1, 60, 'h']);
    assert.deepEqual(commands.all([fixed('a', 1, 2)], null), ['CL.ALL', 1, 'a', 'FIXED', 1, 2, 'QUANTITY', 1]);
    assert.throws(() => commands.release('k', 'h', { ms: true }), TypeError);
    assert.throws(() => commands.smooth('k', 1, 1, { refund: true }), /takes no option refund/);
    assert.throws(() => commands.all([]), TypeError);
  });
});

for (const flavor of FLAVORS) describe(`Cell on a server, ${flavor}`, () => {
  let server;
  before(async () => { server = await startServer({ module: flavor === 'module' }); });
  after(async () => { await server.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      let client;
      let cell;
      let n = 0;
      // A key of this client's and this test's own.
      const key = (what) => `${name}:${n}:${what}`;
      before(async () => { client = await kind.connect(server.port); cell = new Cell(client); });
      after(async () => { await kind.close(client); });

      it('throttles: the worked example of docs/commands.md', async () => {
        n += 1;
        for (let i = 1; i <= 16; i += 1) {
          assert.deepEqual(await cell.throttle(key('u'), 15, 30, 60), reply(false, 16, 16 - i, null, 2 * i));
        }
        const denied = await cell.throttle(key('u'), 15, 30, 60);
        assert.deepEqual(denied, reply(true, 16, 0, 2, 32));
        assert.equal(denied.allowed, false);
        assert.equal((await cell.throttle(key('u'), 15, 30, 60, { quantity: 2, refund: true })).remaining, 2);
        assert.deepEqual(await cell.throttle(key('m'), 0, 1, 500, { ms: true, dryRun: true }), reply(false, 1, 0, null, 500));
      });

      it('counts fixed windows and windows, exact and in buckets', async () => {
        n += 1;
        assert.deepEqual(await cell.fixed(key('f'), 3, 60), reply(false, 3, 2, null, 60));
        assert.deepEqual(await cell.fixed(key('f'), 3, 60, { quantity: 3, countDenied: true }), reply(true, 3, 0, 60, 60));
        assert.deepEqual(await cell.fixed(key('f'), 3, 60, { dryRun: true }), reply(true, 3, 0, 60, 60));
        assert.deepEqual(await cell.window(key('w'), 100, 60, { quantity: 101 }), reply(true, 100, 100, null, 0));
        assert.deepEqual(await cell.window(key('w'), 2, 1000, { ms: true }), reply(false, 2, 1, null, 1000));
        assert.deepEqual(await cell.window(key('w'), 2, 1000, { ms: true, refund: true }), reply(false, 2, 2, null, 0));
        const cells = await cell.window(key('b'), 10, 60, { quantity: 3, buckets: 6 });
        assert.equal(cells.remaining, 7);
        assert.ok(cells.resetAfter > 50 && cells.resetAfter <= 60);
        await assert.rejects(cell.window(key('b'), 10, 60), /BUCKETS 6, not an exact one/);
      });

      it('lays an aligned window on a multiple of its period', async () => {
        n += 1;
        const reply = await cell.fixed(key('aligned'), 2, 3600, { align: true });
        assert.ok(reply.allowed && reply.resetAfter > 0 && reply.resetAfter <= 3600);
        const raw = (words) => (typeof client.call === 'function' ? client.call(...words) : client.sendCommand(words.map(String)));
        assert.equal(Number(await raw(['PEXPIRETIME', key('aligned')])) % 3600000, 0);
      });

      it('lays a calendar window on its unit, in CL.FIXED and CL.ALL', async () => {
        n += 1;
        const raw = (words) => (typeof client.call === 'function' ? client.call(...words) : client.sendCommand(words.map(String)));
        const monthly = await cell.fixed(key('monthly'), 10000, 'MONTH', { offset: 120 });
        assert.ok(monthly.allowed && monthly.remaining === 9999 && monthly.resetAfter <= 31 * 86400);
        // UTC+02:00's midnight is 22:00 UTC the day before: a 1st, shifted back two hours.
        const end = new Date(Number(await raw(['PEXPIRETIME', key('monthly')])) + 2 * 3600000);
        assert.deepEqual([end.getUTCDate(), end.getUTCHours(), end.getUTCMinutes()], [1, 0, 0]);
        const both = await cell.all([fixed(key('daily'), 5, 'DAY'), fixed(key('hourly'), 2, 3600, { align: true, offset: -330 })], { detail: true });
        assert.deepEqual(both.map((each) => each.remaining), [4, 1]);
        assert.equal(Number(await raw(['PEXPIRETIME', key('daily')])) % 86400000, 0);
        assert.equal((Number(await raw(['PEXPIRETIME', key('hourly')])) - 1800000) % 3600000, 0);
      });

      it('tells its hook of each decision and of nothing else', async () => {
        n += 1;
        const told = [];
        const hooked = new Cell(client, { onDecision: (decided) => told.push(decided) });
        const admitted = await hooked.fixed(key('h'), 1, 60);
        const denied = await hooked.fixed(key('h'), 1, 60);
        await hooked.fixed(key('h'), 1, 60, { dryRun: true });
        await hooked.fixed(key('h'), 1, 60, { quantity: 0 });
        await hooked.fixed(key('h'), 1, 60, { refund: true });
        await hooked.lease(key('l'), 1, 60, 'x');
        await hooked.release(key('l'), 'x');
        await hooked.holders(key('l'));
        const both = await hooked.all([throttle(key('t'), 0, 1, 60), fixed(key('h'), 1, 60)], { detail: true });
        const again = await hooked.all([throttle(key('t'), 0, 1, 60), fixed(key('h'), 1, 60)]);
        assert.ok(admitted.allowed && denied.limited && both.every((each) => each.allowed) && again.limited);
        assert.deepEqual(told.slice(0, 2), [
          { limiter: 'fixed', key: key('h'), allowed: true, reply: admitted },
          { limiter: 'fixed', key: key('h'), allowed: false, reply: denied },
        ]);
        assert.deepEqual([told[2].limiter, told[2].key, told[2].allowed], ['lease', key('l'), true]);
        assert.deepEqual(told.slice(3), [
          { limiter: 'all', key: [key('t'), key('h')], allowed: true, reply: both },
          { limiter: 'all', key: [key('t'), key('h')], allowed: false, reply: again },
        ]);
        const broken = new Cell(client, { onDecision: () => { throw new Error('metrics down'); } });
        await assert.rejects(broken.throttle(key('b'), 1, 1, 60), /metrics down/);
        assert.throws(() => new Cell(client, { onDecision: 'yes' }), TypeError);
        assert.throws(() => new Cell(client, { onDecision: async () => {} }), TypeError);
      });

      it('leases, lists and releases', async () => {
        n += 1;
        assert.deepEqual(await cell.lease(key('p'), 1, 60, 'job:1'), reply(false, 1, 0, null, 60));
        assert.equal((await cell.lease(key('p'), 1, 60, 'job:2')).limited, true);
        assert.equal((await cell.lease(key('p'), 1, 60, 'job:2', { dryRun: true })).limited, true);
        const [held] = await cell.holders(key('p'), { ms: true });
        assert.equal(held.holder, 'job:1');
        assert.ok(held.left > 59000 && held.left <= 60000);
        assert.deepEqual(await cell.holders(key('p')), [{ holder: 'job:1', left: 60 }]);
        assert.equal(await cell.release(key('p'), 'job:1'), true);
        assert.equal(await cell.release(key('p'), 'job:1'), false);
        assert.deepEqual(await cell.holders(key('p')), []);
      });

      it("smooths as Guava's RateLimiter", async () => {
        n += 1;
        assert.deepEqual(await cell.smooth(key('s'), 2, 1), reply(false, 3, 2, null, 1));
        assert.deepEqual(await cell.smooth(key('s'), 2, 1), reply(false, 3, 1, null, 1));
        assert.deepEqual(await cell.smooth(key('s'), 2, 1), reply(false, 3, 0, null, 2));
        assert.deepEqual(await cell.smooth(key('s'), 2, 1, { dryRun: true }), reply(true, 3, 0, 1, 2));
        assert.deepEqual(await cell.smooth(key('c'), 10, 1, { warmup: 1 }), reply(false, 1, 0, null, 1));
        assert.equal((await cell.smooth(key('k'), 10, 1000, { ms: true, warmup: 1000, cold: 5 })).allowed, true);
        assert.equal((await cell.smooth(key('b'), 10, 1, { burst: 10 })).limit, 101);
        await assert.rejects(cell.smooth(key('x'), 10, 1, { cold: 5 }), /COLD is given, but no WARMUP/);
      });

      it('lists the keys denied most, where the module is loaded', async () => {
        const denied = key('top');
        for (let i = 0; i < 3; i += 1) await cell.fixed(denied, 1, 60, { quantity: 2 });
        if (flavor === 'library') {
          await assert.rejects(cell.top(), NeedsModuleError);
          return;
        }
        const listed = await cell.top({ count: 1000 });
        const mine = listed.find((item) => item.key === denied);
        assert.ok(mine && mine.denied >= 3 && mine.denied - mine.error <= 3, JSON.stringify(listed));
        // A client's key prefix goes on keys, and CL.TOP has none: its COUNT stays a keyword.
        if (kind.keyPrefix) {
          const prefixed = await kind.connect(server.port, { keyPrefix: 'p:' });
          try {
            assert.ok(Array.isArray(await new Cell(prefixed).top({ count: 5 })));
          } finally {
            await kind.close(prefixed);
          }
        }
      });

      it('decides several limiters at once, all or nothing', async () => {
        n += 1;
        const limiters = [throttle(key('t'), 9, 10, 1), fixed(key('d'), 10000, 86400), window(key('w'), 5, 60)];
        assert.deepEqual(await cell.all(limiters, { detail: true }), [
          reply(false, 10, 9, null, 1), reply(false, 10000, 9999, null, 86400), reply(false, 5, 4, null, 60),
        ]);
        assert.deepEqual(await cell.all(limiters, { quantity: 4 }), reply(false, 5, 0, null, 60));
        assert.equal((await cell.all(limiters)).limited, true);
        assert.equal((await cell.all(limiters, { quantity: 1, refund: true })).remaining, 1);
        const bucketed = await cell.all([window(key('wb'), 5, 60, { buckets: 6 })], { quantity: 2, dryRun: true });
        assert.equal(bucketed.remaining, 3);
        assert.deepEqual(await cell.all([lease(key('l'), 1, 60)], { holder: 'h' }), reply(false, 1, 0, null, 60));
        await assert.rejects(cell.all([lease(key('l2'), 1, 60)]), /HOLDER/);
      });

      it("rejects with the module's message, and waits only on the module", async () => {
        n += 1;
        await assert.rejects(cell.fixed(key('f'), 0, 60), /limit must be >= 1/);
        await assert.rejects(cell.fixed(key('f'), 3, 60, { refund: true, block: 10 }), /not compatible/);
        if (flavor === 'library') {
          await assert.rejects(cell.throttle(key('q'), 0, 1, 300, { ms: true, block: 10 }), /BLOCK|wait/);
        }
      });

      it('waits in the server for a unit, and holds a smooth reply', WAITS[flavor], async () => {
        n += 1;
        // A connection waits with its call: a client of its own.
        const own = await kind.connect(server.port);
        try {
          const waiter = new Cell(own);
          assert.equal((await waiter.throttle(key('q'), 0, 1, 300, { ms: true })).allowed, true);
          let asked = Date.now();
          assert.equal((await waiter.throttle(key('q'), 0, 1, 300, { ms: true, block: 5000 })).allowed, true);
          assert.ok(Date.now() - asked >= 200);
          for (let i = 0; i < 3; i += 1) await waiter.smooth(key('h'), 2, 1000, { ms: true });
          asked = Date.now();
          assert.equal((await waiter.smooth(key('h'), 2, 1000, { ms: true, block: 2000 })).allowed, true);
          assert.ok(Date.now() - asked >= 300);
        } finally {
          await kind.close(own);
        }
      });

      for (const [command, row] of sendable()) {
        if (NOT_YET[command]) continue;
        if (row.keyword === 'BLOCK' && flavor === 'library') continue;
        // CL.TOP, CL.BAN and CL.UNBAN are the module's alone: below.
        if (['CL.TOP', 'CL.BAN', 'CL.UNBAN'].includes(command) && flavor === 'library') continue;
        it(`the server reads ${command}'s ${row.keyword} as the client sends it`, async () => {
          // An option the server did not read as one would be a syntax error, rejected here.
          const words = built(command, row);
          // A key of the row's own: a BUCKETS window is no exact one, a warm-up no burst.
          const at = command === 'CL.ALL' ? 2 : 1;
          if (command !== 'CL.TOP') words[at] = `${name}:grammar:${row.keyword}:${words[at]}`;
          assert.notEqual(await cell.command(words), undefined);
        });
      }
    });
  }
});
