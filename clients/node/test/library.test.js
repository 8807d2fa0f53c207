'use strict';

// How the adapter finds the library where the module is missing, on each client: loaded when
// missing or older, kept when newer, found again when flushed, forced either way, refused to
// wait, and in its script form where the server refuses Functions to the user or has none
// (Redis 6.2).

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');

const {
  LibraryTooOldError, RateLimiterCell, librarySource, scriptSource,
} = require('redis-cell');
const { version } = require('redis-cell/package.json');
const { CLIENTS } = require('./clients');
const { startServer } = require('./server');

const LIBRARY = librarySource();

function withVersion(v) {
  const ours = `local CELL_VERSION = '${version}'`;
  assert.ok(LIBRARY.includes(ours));
  return LIBRARY.replace(ours, `local CELL_VERSION = '${v}'`);
}

// The repository: in a lane of the version matrix, the tests run from a copy elsewhere.
const ROOT = process.env.REDIS_CELL_ROOT || path.join(__dirname, '..', '..', '..');

it("the package's library is the repository's (lua/dist), both forms", () => {
  const dist = path.join(ROOT, 'lua', 'dist');
  assert.equal(librarySource(), fs.readFileSync(path.join(dist, 'redis_cell.lua'), 'utf8'));
  assert.equal(scriptSource(), fs.readFileSync(path.join(dist, 'redis_cell.script.lua'), 'utf8'));
});

describe('RateLimiterCell finds the library', () => {
  let bare;
  before(async () => { bare = await startServer({ module: false }); });
  after(async () => { await bare.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    describe(name, () => {
      let client;
      const raw = (words) => (typeof client.call === 'function' ? client.call(...words) : client.sendCommand(words.map(String)));
      const limiter = (opts) => new RateLimiterCell({ ...kind.options, storeClient: client, points: 3, duration: 60, keyPrefix: name, ...opts });
      const loaded = () => raw(['FCALL_RO', 'cl_version', 0]);
      before(async () => { client = await kind.connect(bare.port); });
      after(async () => { await kind.close(client); });

      it('an older library is replaced, a newer one kept, a flushed one loaded again', async () => {
        await raw(['FUNCTION', 'FLUSH']);
        await raw(['FUNCTION', 'LOAD', withVersion('0.0.1')]);
        await assert.rejects(limiter({ loadLibrary: false }).consume('o'), LibraryTooOldError);
        assert.equal(await loaded(), '0.0.1');
        const cell = limiter({ algorithm: 'gcra' });
        assert.equal((await cell.consume('o')).remainingPoints, 2);
        assert.equal(await loaded(), version);
        // A new client asks again, and keeps a newer library (a prerelease's too).
        for (const newer of ['99.0.0', `${version}-rc1`, '0.10']) {
          await raw(['FUNCTION', 'LOAD', 'REPLACE', withVersion(newer)]);
          const fresh = await kind.connect(bare.port);
          try {
            const other = new RateLimiterCell({ ...kind.options, storeClient: fresh, points: 3, duration: 60, keyPrefix: `${name}-${newer}`, algorithm: 'window' });
            assert.equal((await other.consume('o')).remainingPoints, 2);
          } finally {
            await kind.close(fresh);
          }
          assert.equal(await loaded(), newer);
        }
        await raw(['FUNCTION', 'FLUSH']);
        assert.equal((await cell.consume('o')).remainingPoints, 1);
        assert.equal(await loaded(), version);
      });

      it('a user who may not run COMMAND gets the module, as before', async () => {
        const loaded = await startServer();
        const admin = await kind.connect(loaded.port);
        try {
          const ask = (words) => (typeof admin.call === 'function' ? admin.call(...words) : admin.sendCommand(words.map(String)));
          await ask(['ACL', 'SETUSER', 'nocommand', 'on', '>pw', '~*', '+@all', '-command']);
          const user = await kind.connect(loaded.port, { username: 'nocommand', password: 'pw' });
          try {
            const cell = new RateLimiterCell({ ...kind.options, storeClient: user, algorithm: 'gcra', keyPrefix: name, points: 3, duration: 60 });
            assert.equal((await cell.consume('n')).remainingPoints, 2);
            assert.match(String(await ask(['INFO', 'commandstats'])), /cmdstat_cl\.throttle:calls=1,/);
          } finally {
            await kind.close(user);
          }
        } finally {
          await kind.close(admin);
          await loaded.stop();
        }
      });

      it('waitMs is refused on the library: waiting needs the module', async () => {
        const cell = limiter({ algorithm: 'gcra', keyPrefix: `${name}-wait` });
        await assert.rejects(cell.consume('w', 1, { waitMs: 10 }), /BLOCK needs the redis-cell module/);
        assert.equal(await raw(['EXISTS', `${name}-wait:gcra:w`]), 0);
      });

      it('where Functions are refused, the script form decides', async () => {
        await raw(['FUNCTION', 'FLUSH']);
        await raw(['ACL', 'SETUSER', 'scripts', 'on', '>pw', '~*', '+@all', '-function']);
        const scripts = await kind.connect(bare.port, { username: 'scripts', password: 'pw' });
        try {
          await raw(['CONFIG', 'RESETSTAT']);
          for (const algorithm of ['fixed', 'gcra', 'window']) {
            const cell = new RateLimiterCell({ ...kind.options, storeClient: scripts, algorithm, keyPrefix: `${name}-s`, points: 1, duration: 60 });
            assert.equal((await cell.consume('k')).remainingPoints, 0, algorithm);
            await raw(['SCRIPT', 'FLUSH']);
            await assert.rejects(cell.consume('k'), (res) => res.remainingPoints === 0, algorithm);
          }
          const stats = String(await raw(['INFO', 'commandstats']));
          assert.match(stats, /cmdstat_evalsha:calls=[1-9]/);
          assert.doesNotMatch(stats, /cmdstat_fcall:/);
          assert.deepEqual(await raw(['FUNCTION', 'LIST']), []);
        } finally {
          await kind.close(scripts);
          await raw(['ACL', 'DELUSER', 'scripts']);
        }
      });
    });
  }
});

describe('RateLimiterCell on Redis 6.2, which has no Functions', { skip: !process.env.REDIS6_SERVER && 'REDIS6_SERVER names no Redis 6.2 server' }, () => {
  let old;
  before(async () => { old = await startServer({ module: false, binary: process.env.REDIS6_SERVER }); });
  after(async () => { await old.stop(); });

  for (const [name, kind] of Object.entries(CLIENTS)) {
    it(`${name}: the script form decides every algorithm`, async () => {
      const client = await kind.connect(old.port);
      try {
        for (const algorithm of ['fixed', 'gcra', 'window']) {
          const cell = new RateLimiterCell({ ...kind.options, storeClient: client, algorithm, keyPrefix: `${name}-62`, points: 2, duration: 60 });
          assert.equal((await cell.consume('k')).remainingPoints, 1, algorithm);
          assert.equal((await cell.consume('k')).remainingPoints, 0, algorithm);
          await assert.rejects(cell.consume('k'), (res) => res.remainingPoints === 0, algorithm);
        }
      } finally {
        await kind.close(client);
      }
    });
  }
});
