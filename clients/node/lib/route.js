'use strict';

// Where each call goes: the module's commands on a server that has loaded the module, and
// the same limiters as the redis-cell Functions library (FCALL) on one that has not, or as
// its script form (EVALSHA, sent again as EVAL on NOSCRIPT) where the server has no
// Functions or refuses them to this user.
//
// What the server has is asked once per client (a client is a connection, or a cluster's
// connections), on first use, and remembered once found; a server with neither is asked
// again on the next call, so that loading the module or the library later is seen.
// `via: 'module'` and `via: 'library'` skip the question for that path.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const { askAny, askPrimaries } = require('./client');
const { LibraryTooOldError, ModuleMissingError } = require('./errors');
const { version: OURS } = require('../package.json');

const VIAS = ['auto', 'module', 'library'];
const MODULE = 'module';
const FUNCTIONS = 'functions';
const SCRIPT = 'script';

const sources = {};

/** One of the library's two forms, as the package ships them (lua/). */
function source(name) {
  if (!(name in sources)) {
    sources[name] = fs.readFileSync(path.join(__dirname, '..', 'lua', name), 'utf8');
  }
  return sources[name];
}

const said = (error, ...texts) => {
  const message = String(error && error.message).toLowerCase();
  return texts.some((text) => message.includes(text));
};
// FCALL_RO or FUNCTION unknown (Redis 6.2), or not this user's to run.
const noFunctions = (error) => said(error, 'unknown command', 'noperm');
const functionMissing = (error) => said(error, 'function not found');

function older(theirs, ours) {
  const a = String(theirs).split('.').map(Number);
  const b = ours.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    const x = a[i] || 0;
    const y = b[i] || 0;
    if (Number.isNaN(x) || x < y) return true;
    if (x > y) return false;
  }
  return false;
}

/** What the server has, as a route kind. */
async function find(client, via, load) {
  if (via === 'auto') {
    const info = await askAny(client, ['COMMAND', 'INFO', 'CL.THROTTLE']);
    if (Array.isArray(info) && info.some((entry) => entry)) return MODULE;
  }
  let version = null;
  try {
    version = await askAny(client, ['FCALL_RO', 'cl_version', 0]);
  } catch (error) {
    if (noFunctions(error)) return SCRIPT;
    if (!functionMissing(error)) throw error;
  }
  if (version !== null && !older(version, OURS)) return FUNCTIONS;
  if (!load) throw version === null ? new ModuleMissingError() : new LibraryTooOldError(version, OURS);
  try {
    await askPrimaries(client, ['FUNCTION', 'LOAD', 'REPLACE', source('redis_cell.lua')]);
  } catch (error) {
    if (noFunctions(error)) return SCRIPT;
    throw error;
  }
  return FUNCTIONS;
}

// Routes found (or being found), by client and by what was asked for.
const found = new WeakMap();

function routeOf(client, { via, loadLibrary }) {
  if (via === 'module') return Promise.resolve(MODULE);
  const asked = `${via} ${loadLibrary}`;
  if (!found.has(client)) found.set(client, new Map());
  const routes = found.get(client);
  if (!routes.has(asked)) {
    const route = find(client, via, loadLibrary);
    routes.set(asked, route);
    // A failure is not remembered: the next call asks again.
    route.catch(() => routes.get(asked) === route && routes.delete(asked));
  }
  return routes.get(asked);
}

function forget(client, { via, loadLibrary }) {
  const routes = found.get(client);
  if (routes) routes.delete(`${via} ${loadLibrary}`);
}

let sha;

/**
 * How a module command's words go on `route`: a function of the words. The commands are
 * named in lower case, as ioredis's table of commands has them: older ioredis (5.0) looks a
 * name up as it is given, and puts its keyPrefix only on the keys of commands it finds.
 */
function wireOf(route, { evalAgain = false } = {}) {
  if (route === MODULE) return undefined;
  const name = (command) => String(command).toLowerCase().replace('.', '_');
  if (route === FUNCTIONS) {
    return ([command, key, ...rest]) => ['fcall', name(command), 1, key, ...rest];
  }
  const script = source('redis_cell.script.lua');
  if (sha === undefined) sha = crypto.createHash('sha1').update(script).digest('hex');
  return ([command, key, ...rest]) => [evalAgain ? 'eval' : 'evalsha', evalAgain ? script : sha, 1,
    key, name(command), ...rest];
}

/** The options `via` and `loadLibrary`, checked, with their defaults. */
function routing({ via = 'auto', loadLibrary = true } = {}) {
  if (!VIAS.includes(via)) throw new Error(`via must be one of ${VIAS.join(', ')}`);
  return { via, loadLibrary: loadLibrary !== false };
}

/**
 * A module command's `words` sent by `how` (lib/client.js's send or sendThenGet) the way
 * the server takes it: once more as EVAL where the script cache lost the script, and once
 * more after finding the library again where it went (a FUNCTION FLUSH, a restart).
 */
async function call(client, options, how, words) {
  const route = await routeOf(client, options);
  try {
    return await how(client, words, wireOf(route));
  } catch (error) {
    if (route === SCRIPT && said(error, 'noscript')) {
      return how(client, words, wireOf(route, { evalAgain: true }));
    }
    if (route !== FUNCTIONS || !functionMissing(error)) throw error;
  }
  forget(client, options);
  return how(client, words, wireOf(await routeOf(client, options)));
}

module.exports = { call, routing };
