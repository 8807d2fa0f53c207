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

/** A free port whose cluster bus port (10000 more) is free too. */
async function clusterPort() {
  for (;;) {
    const port = await freePort();
    if (port + 10000 >= 65536) continue;
    const free = await new Promise((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port + 10000, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** What the server on `port` answers to an inline command, as text (enough for INFO). */
function ask(port, command) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (data) => {
      text += data.toString();
      const header = /^\$(\d+)\r\n/.exec(text);
      if (!header || text.length >= header[0].length + Number(header[1])) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.once('error', () => resolve(''));
  });
}

/**
 * A Redis Cluster of three primaries, the module on each (unless `{ module: false }`), joined
 * by `redis-cli --cluster create` as the module's own cluster tests join theirs.
 */
async function startCluster({ module: withModule = true } = {}) {
  const servers = [];
  try {
    for (let i = 0; i < 3; i += 1) {
      servers.push(await startServer({ module: withModule, port: await clusterPort(),
        options: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'] }));
    }
    const ports = servers.map((server) => server.port);
    const create = spawn('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'ignore' });
    const killer = setTimeout(() => create.kill('SIGKILL'), 60000);
    const code = await new Promise((resolve, reject) => {
      create.once('error', reject);
      create.once('exit', resolve);
    }).finally(() => clearTimeout(killer));
    if (code !== 0) throw new Error(`redis-cli --cluster create exited with ${code}`);
    const deadline = Date.now() + 30000;
    for (const port of ports) {
      while (!(await ask(port, 'CLUSTER INFO')).includes('cluster_state:ok')) {
        if (Date.now() > deadline) throw new Error('the cluster did not become ok in 30 s');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (error) {
    await Promise.all(servers.map((server) => server.stop()));
    throw error;
  }
  return {
    ports: servers.map((server) => server.port),
    async stop() { await Promise.all(servers.map((server) => server.stop())); },
  };
}

/**
 * A server; with `{ module: false }`, one that has not loaded the module; on `port`, or a
 * free one; with more `options`; `binary`, or the one REDIS_SERVER names.
 */
async function startServer({ module: withModule = true, port: wanted, options = [], binary: named } = {}) {
  const binary = named || process.env.REDIS_SERVER || '/usr/bin/redis-server';
  const module = process.env.REDIS_CELL_MODULE || path.join(ROOT, 'target', 'debug', 'libredis_cell.so');
  if (!fs.existsSync(module)) throw new Error(`${module} is missing: build the crate first`);
  const load = withModule ? ['--loadmodule', module] : [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-cell-node-'));
  const port = wanted || await freePort();
  const child = spawn(binary, ['--bind', '127.0.0.1', '--port', String(port), '--save', '',
    '--dir', dir, ...load, ...options], { stdio: 'ignore' });
  const deadline = Date.now() + 10000;
  while (!(await answers(port))) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('the server did not start in 10 s');
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    port,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// Each suite runs on a server with the module, and on one without it, where the adapter
// loads and calls the Functions library; waiting (waitMs) is the module's alone.
const FLAVORS = ['module', 'library'];
const WAITS = { module: {}, library: { skip: 'waiting (waitMs) needs the module' } };

module.exports = { FLAVORS, WAITS, ask, startCluster, startServer };
