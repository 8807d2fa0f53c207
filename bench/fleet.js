'use strict';

// bench/fleet.py's runs with the Node client (ioredis): 8 processes on one hot key, per call
// or batched (lib/batch.js's Batched), SECONDS a run. Usage: node fleet.js PORT [SECONDS]

const { fork } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const NODE = path.join(__dirname, '..', 'clients', 'node');
const Redis = require(require.resolve('ioredis', { paths: [NODE] }));
const { Batched, Cell, window } = require(NODE);

// A worker has them from its parent.
const PORT = Number(process.env.FLEET_PORT || process.argv[2]);
const SECONDS = Number(process.env.FLEET_SECONDS || process.argv[3] || 3);
const PROCESSES = 8;
const PERIOD_MS = 1000;
const HORIZON_MS = 100;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function worker([key, limit, demand, batched, startAt]) {
  const client = new Redis({ port: PORT, host: '127.0.0.1' });
  const cell = new Cell(client, { via: 'module' });
  const limiter = batched === 'true' ? new Batched(cell, window(key, Number(limit), PERIOD_MS), { ms: true, clock: now }) : null;
  const spent = [];
  let decisions = 0;
  while (now() < Number(startAt)) await sleep(1);
  const end = Number(startAt) + SECONDS * 1000;
  for (;;) {
    const at = now();
    if (at >= end) break;
    const due = demand === 'none' ? 64 : Math.floor(((at - Number(startAt)) / 1000) * Number(demand)) - decisions;
    if (due <= 0) {
      await sleep(0.5);
      continue;
    }
    for (let i = 0; i < Math.min(due, 64); i += 1) {
      decisions += 1;
      if (limiter) {
        const decision = await limiter.acquire();
        if (decision.allowed) spent.push(decision.at);
      } else if (!(await cell.window(key, Number(limit), PERIOD_MS, { ms: true })).limited) {
        spent.push(now());
      }
    }
  }
  if (limiter) await limiter.close();
  client.disconnect();
  process.send({ decisions, spent });
}

async function serverCpu(client) {
  const pid = /process_id:(\d+)/.exec(await client.info('server'))[1];
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
  // utime and stime in clock ticks (100 a second on Linux).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function serverCalls(client) {
  const stats = await client.info('commandstats');
  let calls = 0;
  for (const found of stats.matchAll(/cmdstat_cl\.[a-z]+:calls=(\d+)/g)) calls += Number(found[1]);
  return calls;
}

async function run(client, key, limit, demand, batched) {
  await client.del(key);
  const startAt = now() + 1500;
  const share = demand === null ? 'none' : String(demand / PROCESSES);
  const children = Array.from({ length: PROCESSES }, () => fork(__filename,
    ['worker', key, String(limit), share, String(batched), String(startAt)],
    { env: { ...process.env, FLEET_PORT: String(PORT), FLEET_SECONDS: String(SECONDS) } }));
  const results = children.map((child) => new Promise((resolve) => child.once('message', resolve)));
  await sleep(Math.max(0, startAt - now()));
  const [cpu0, calls0] = [await serverCpu(client), await serverCalls(client)];
  const done = await Promise.all(results);
  const [cpu, calls] = [await serverCpu(client) - cpu0, await serverCalls(client) - calls0];
  await Promise.all(children.map((child) => new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)))));
  const decisions = done.reduce((sum, r) => sum + r.decisions, 0);
  const spent = done.flatMap((r) => r.spent).sort((a, b) => a - b);
  const span = PERIOD_MS - 2 * HORIZON_MS;
  let most = 0;
  let start = 0;
  for (let end = 0; end < spent.length; end += 1) {
    while (spent[end] - spent[start] >= span) start += 1;
    most = Math.max(most, end - start + 1);
  }
  return { decisions, calls, cpu, spent: spent.length, most };
}

async function main() {
  const client = new Redis({ port: PORT, host: '127.0.0.1' });
  const fmt = (n) => Math.round(n).toLocaleString('en-US');
  console.log(`One hot key, ${PROCESSES} processes, Node client (ioredis), ${SECONDS} s a run (exact window of one second; batched: H = ${HORIZON_MS} ms)`);
  console.log();
  console.log('| run | decisions/s | server calls/s | calls per decision | server CPU µs per decision |');
  console.log('|---|---|---|---|---|');
  for (const [name, batched] of [['per call', false], ['batched', true]]) {
    const r = await run(client, 'fleet:free', 1e12, null, batched);
    console.log(`| ${name} | ${fmt(r.decisions / SECONDS)} | ${fmt(r.calls / SECONDS)} | ${(r.calls / r.decisions).toFixed(4)} | ${((r.cpu * 1e6) / r.decisions).toFixed(2)} |`);
  }
  console.log();
  console.log('| demand | limit | decisions/s | calls per decision | share of the limit used | most in any 0.8 s | bound |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [demand, limit] of [[100000, 50000], [100000, 200000]]) {
    const r = await run(client, 'fleet:limited', limit, demand, true);
    const used = Math.min(1, r.spent / (limit * SECONDS));
    console.log(`| ${fmt(demand)}/s | ${fmt(limit)}/s | ${fmt(r.decisions / SECONDS)} | ${(r.calls / Math.max(r.decisions, 1)).toFixed(4)} | ${(used * 100).toFixed(1)}% | ${fmt(r.most)} | ${fmt(limit)} |`);
  }
  client.disconnect();
}

if (process.argv[2] === 'worker') {
  worker(process.argv.slice(3)).catch((error) => { console.error(error); process.exit(1); });
} else {
  main().catch((error) => { console.error(error); process.exit(1); });
}
