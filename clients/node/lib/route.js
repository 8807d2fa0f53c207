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

const { askAny, primaries } = require('./client');
const { LibraryTooOldError, ModuleMissingError, NeedsModuleError } = require('./errors');

const VIAS = ['auto', 'module', 'library'];
const MODULE = 'module';
const FUNCTIONS = 'functions';
const SCRIPT = 'script';
// The module's commands, taken on trust where the user may not ask (COMMAND refused): a
// call that misses them looks for the library.
const ASSUMED = 'assumed';

const sources = {};

// The repository, when this package is its clients/node (a checkout, not an installed copy):
// its library is lua/dist, which `npm pack` copies into the package.
const PACKAGE = path.resolve(__dirname, '..');
const CHECKOUT = path.resolve(PACKAGE, '..', '..', 'clients', 'node') === PACKAGE
  ? path.resolve(PACKAGE, '..', '..') : null;

/** One of the library's two forms: lua/dist's in a checkout, else the package's own (lua/). */
function source(name) {
  if (!(name in sources)) {
    const found = CHECKOUT ? path.join(CHECKOUT, 'lua', 'dist', name) : path.join(PACKAGE, 'lua', name);
    if (!fs.existsSync(found)) throw new Error(`redis-cell ships no ${name} (${found}): reinstall the package`);
    sources[name] = fs.readFileSync(found, 'utf8');
  }
  return sources[name];
}

/** The library as FUNCTION LOAD takes it (lua/dist/redis_cell.lua), for loading by hand. */
const librarySource = () => source('redis_cell.lua');

/** The library's script form, as EVAL takes it: `EVAL script numkeys key… name arg…`. */
const scriptSource = () => source('redis_cell.script.lua');

/** The version of the library this package ships, which a server's must reach. */
function shippedVersion() {
  const found = /^local CELL_VERSION = '([^']+)'/m.exec(librarySource());
  if (!found) throw new Error('the shipped library names no version');
  return found[1];
}

/** A version's order: the leading digits of its first three parts, missing ones 0. */
function versionKey(text) {
  const parts = String(text).split('.').slice(0, 3).map((part) => Number(/^\d*/.exec(part)[0] || 0));
  while (parts.length < 3) parts.push(0);
  return parts;
}

function older(theirs, ours) {
  const [a, b] = [versionKey(theirs), versionKey(ours)];
  const differs = a.findIndex((x, i) => x !== b[i]);
  return differs >= 0 && a[differs] < b[differs];
}

// What a server's error means, as clients/protocol.json says (the Python package reads
// replies alike, held to the same table).
const said = (error, ...texts) => {
  const message = String(error && error.message).toLowerCase();
  return texts.some((text) => message.includes(text));
};
const refused = (error) => said(error, 'noperm', 'no permissions');
// FCALL_RO or FUNCTION unknown (Redis 6.2), or not this user's to run.
const noFunctions = (error) => said(error, 'unknown command') || refused(error);
const functionMissing = (error) => said(error, 'function not found');
const scriptMissing = (error) => said(error, 'noscript');

/** What the server has, as a route kind. */
async function find(client, via, load) {
  if (via !== 'library') {
    let info;
    try {
      info = await askAny(client, ['COMMAND', 'INFO', 'CL.THROTTLE']);
    } catch (error) {
      // COMMAND is not this user's to run: the module's commands, as before the adapter
      // knew of the library.
      if (refused(error)) return ASSUMED;
      throw error;
    }
    if (Array.isArray(info) && info.some((entry) => entry)) return MODULE;
  }
  const ours = shippedVersion();
  // Every primary's version, each on its own: one without the library, or with an older
  // one, gets ours; one with a newer library keeps it.
  const senders = await primaries(client);
  const answers = await Promise.allSettled(senders.map((ask) => ask(['FCALL_RO', 'cl_version', 0])));
  const behind = [];
  for (const [i, answer] of answers.entries()) {
    if (answer.status === 'rejected') {
      if (noFunctions(answer.reason)) return SCRIPT;
      if (!functionMissing(answer.reason)) throw answer.reason;
      behind.push({ ask: senders[i], version: null });
    } else if (older(answer.value, ours)) {
      behind.push({ ask: senders[i], version: answer.value });
    }
  }
  if (behind.length === 0) return FUNCTIONS;
  if (!load) {
    const versions = behind.map((b) => b.version).filter((v) => v !== null);
    if (versions.length === 0) throw new ModuleMissingError();
    throw new LibraryTooOldError(versions.reduce((a, b) => (older(b, a) ? b : a)), ours);
  }
  try {
    await Promise.all(behind.map((b) => b.ask(['FUNCTION', 'LOAD', 'REPLACE', librarySource()])));
  } catch (error) {
    if (noFunctions(error)) return SCRIPT;
    throw error;
  }
  return FUNCTIONS;
}

// Routes found (or being found), by client and by what was asked for.
const found = new WeakMap();

/** The route for these options; `ask`, where given, is what to look for instead. */
function routeOf(client, { via, loadLibrary }, ask = via) {
  if (via === 'module') return Promise.resolve(MODULE);
  const asked = `${via} ${loadLibrary}`;
  if (!found.has(client)) found.set(client, new Map());
  const routes = found.get(client);
  if (!routes.has(asked)) {
    const route = find(client, ask, loadLibrary);
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

// The commands that only read, sent as FCALL_RO, and those only the module answers
// (clients/protocol.json).
const READ_ONLY = new Set(['cl_holders']);
const MODULE_ONLY = new Set(['cl_top', 'cl_ban', 'cl_unban']);

/**
 * A module command's words as the library's function: its name, its keys (CL.ALL's are its
 * numkeys, every other command's its one key) and the rest.
 */
function functionCall([command, ...words]) {
  const name = String(command).toLowerCase().replace('.', '_');
  if (MODULE_ONLY.has(name)) throw new NeedsModuleError(name.toUpperCase().replace('_', '.'));
  const count = name === 'cl_all' ? Number(words[0]) : 1;
  // As Python's int() refuses it: a count that lays out no keys is no call to send.
  if (!Number.isInteger(count) || count < 0) throw new TypeError(`numkeys must be a whole number, not ${words[0]}`);
  const keys = name === 'cl_all' ? words.slice(1, 1 + count) : words.slice(0, 1);
  return { name, keys, args: words.slice(keys.length + (name === 'cl_all' ? 1 : 0)) };
}

/** FCALL (FCALL_RO for what only reads) of a module command's words. */
function fcallWords(words) {
  const { name, keys, args } = functionCall(words);
  return [READ_ONLY.has(name) ? 'fcall_ro' : 'fcall', name, keys.length, ...keys, ...args];
}

/**
 * How a module command's words go on `route`: a function of the words. The commands are
 * named in lower case, as ioredis's table of commands has them: older ioredis (5.0) looks a
 * name up as it is given, and puts its keyPrefix only on the keys of commands it finds.
 */
function wireOf(route, { evalAgain = false } = {}) {
  if (route === MODULE || route === ASSUMED) return undefined;
  if (route === FUNCTIONS) return fcallWords;
  const script = scriptSource();
  if (sha === undefined) sha = crypto.createHash('sha1').update(script).digest('hex');
  return (words) => {
    const { name, keys, args } = functionCall(words);
    return [evalAgain ? 'eval' : 'evalsha', evalAgain ? script : sha, keys.length, ...keys, name, ...args];
  };
}

/** The options `via` and `loadLibrary`, checked, with their defaults. */
function routing({ via = 'auto', loadLibrary = true } = {}) {
  if (!VIAS.includes(via)) throw new Error(`via must be one of ${VIAS.join(', ')}`);
  // A string such as 'false' would be truthy: only a boolean says what the caller meant.
  if (typeof loadLibrary !== 'boolean') throw new TypeError('loadLibrary must be true or false');
  return { via, loadLibrary };
}

/**
 * A module command's `words` sent by `how` (lib/client.js's send or sendThenGet) the way
 * the server takes it: once more as EVAL where the script cache lost the script, and once
 * more after asking again where what the route calls went (the library flushed, or after a
 * restart; the module, found by asking, gone after a failover).
 */
async function call(client, options, how, words) {
  const route = await routeOf(client, options);
  try {
    return await how(client, words, wireOf(route));
  } catch (error) {
    if (route === SCRIPT && scriptMissing(error)) {
      return how(client, words, wireOf(route, { evalAgain: true }));
    }
    const gone = route === FUNCTIONS ? functionMissing(error)
      : ((route === MODULE && options.via === 'auto') || route === ASSUMED)
        && error instanceof ModuleMissingError;
    if (!gone) throw error;
  }
  forget(client, options);
  const again = await routeOf(client, options, route === ASSUMED ? 'library' : options.via);
  return how(client, words, wireOf(again));
}

module.exports = {
  call, routing, refused, noFunctions, functionMissing, scriptMissing, fcallWords, librarySource,
  scriptSource,
};
