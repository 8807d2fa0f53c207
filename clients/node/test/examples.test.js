'use strict';

// docs/clients.md's Express example (clients/examples/express_limits.js), served as the page
// shows it: in a process of its own that resolves the package and its dependencies as an app
// that installed them would.

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');

const { startServer } = require('./server');

const ROOT = process.env.REDIS_CELL_ROOT || path.join(__dirname, '..', '..', '..');
const EXAMPLE = path.join(ROOT, 'clients', 'examples', 'express_limits.js');

/** Where the example finds `redis-cell` (this package) and express and ioredis. */
function nodePath() {
  const linked = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-example-'));
  fs.symlinkSync(path.dirname(require.resolve('redis-cell/package.json')), path.join(linked, 'redis-cell'));
  const deps = path.dirname(path.dirname(require.resolve('express/package.json')));
  return { linked, value: [linked, deps].join(path.delimiter) };
}

describe("docs/clients.md's Express example", () => {
  let server;
  let app;
  let paths;
  before(async () => {
    server = await startServer();
    paths = nodePath();
    const serving = `const app = require(${JSON.stringify(EXAMPLE)});
      const s = app.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
    app = spawn(process.execPath, ['-e', serving], {
      env: { ...process.env, NODE_PATH: paths.value, REDIS_URL: `redis://127.0.0.1:${server.port}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    app.port = await new Promise((resolve, reject) => {
      app.stdout.once('data', (data) => resolve(Number(String(data).trim())));
      app.once('exit', (code) => reject(new Error(`the example exited with ${code}`)));
    });
  });
  after(async () => {
    if (app) app.kill();
    if (paths) fs.rmSync(paths.linked, { recursive: true, force: true });
    await server.stop();
  });

  it('admits 3, then answers 429 with Retry-After and the draft-11 fields', async () => {
    const statuses = [];
    let last;
    for (let i = 0; i < 4; i += 1) {
      last = await fetch(`http://127.0.0.1:${app.port}/`);
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const retry = Number(last.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 20, `Retry-After ${retry}`);
    assert.equal(last.headers.get('ratelimit-policy'), '"per-address";q=3;w=60');
  });
});
