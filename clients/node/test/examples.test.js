'use strict';

// docs/clients.md's Express examples (clients/examples/express_limits.js and
// express_metrics.js), served as the page shows them: each in a process of its own that
// resolves the package and its dependencies as an app that installed them would.

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, before, describe, it } = require('node:test');

const { startServer } = require('./server');

const ROOT = process.env.REDIS_CELL_ROOT || path.join(__dirname, '..', '..', '..');
const EXAMPLES = path.join(ROOT, 'clients', 'examples');

/** Where the example finds `redis-cell` (this package) and express and ioredis. */
function nodePath() {
  const linked = fs.mkdtempSync(path.join(os.tmpdir(), 'cell-example-'));
  fs.symlinkSync(path.dirname(require.resolve('redis-cell/package.json')), path.join(linked, 'redis-cell'));
  const deps = path.dirname(path.dirname(require.resolve('express/package.json')));
  return { linked, value: [linked, deps].join(path.delimiter) };
}

/** Serves an example on a loopback port, against a server of its own; stopped after the suite. */
function served(example) {
  const serving = { port: null };
  let server;
  let app;
  let paths;
  before(async () => {
    server = await startServer();
    paths = nodePath();
    const listening = `const app = require(${JSON.stringify(path.join(EXAMPLES, example))});
      const s = app.listen(0, '127.0.0.1', () => console.log(s.address().port));`;
    app = spawn(process.execPath, ['-e', listening], {
      env: { ...process.env, NODE_PATH: paths.value, REDIS_URL: `redis://127.0.0.1:${server.port}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    serving.port = await new Promise((resolve, reject) => {
      app.stdout.once('data', (data) => resolve(Number(String(data).trim())));
      app.once('exit', (code) => reject(new Error(`the example exited with ${code}`)));
    });
  });
  after(async () => {
    if (app) app.kill();
    if (paths) fs.rmSync(paths.linked, { recursive: true, force: true });
    await server.stop();
  });
  return serving;
}

describe("docs/clients.md's Express example", () => {
  const app = served('express_limits.js');

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

describe("docs/clients.md's metrics example", () => {
  const app = served('express_metrics.js');

  it('counts each decision by policy and outcome at /metrics', async () => {
    const statuses = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await fetch(`http://127.0.0.1:${app.port}/`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    const metrics = await (await fetch(`http://127.0.0.1:${app.port}/metrics`)).text();
    assert.match(metrics, /^ratelimit_decisions_total\{policy="per-address",outcome="allowed"\} 3$/m);
    assert.match(metrics, /^ratelimit_decisions_total\{policy="per-address",outcome="denied"\} 2$/m);
  });
});
