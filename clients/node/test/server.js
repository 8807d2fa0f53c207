'use strict';

// A real server with the module loaded, on a free loopback port, for one test file: the
// binary REDIS_SERVER names, the module REDIS_CELL_MODULE names (default: the debug build).

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function answers(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => { socket.destroy(); resolve(data.toString().startsWith('+PONG')); });
    socket.once('error', () => resolve(false));
  });
}

/** A server; with `{ module: false }`, one that has not loaded the module. */
async function startServer({ module: withModule = true } = {}) {
  const binary = process.env.REDIS_SERVER || '/usr/bin/redis-server';
  const module = process.env.REDIS_CELL_MODULE || path.join(ROOT, 'target', 'debug', 'libredis_cell.so');
  if (!fs.existsSync(module)) throw new Error(`${module} is missing: build the crate first`);
  const load = withModule ? ['--loadmodule', module] : [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-cell-node-'));
  const port = await freePort();
  const child = spawn(binary, ['--bind', '127.0.0.1', '--port', String(port), '--save', '',
    '--dir', dir, ...load], { stdio: 'ignore' });
  const deadline = Date.now() + 10000;
  while (!(await answers(port))) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('the server did not start in 10 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    port,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

module.exports = { startServer };
