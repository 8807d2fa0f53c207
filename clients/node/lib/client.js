'use strict';

const { explained } = require('./errors');

// The one place that knows the clients apart: ioredis, a server or a Cluster (`call`, and
// `multi().exec()` answering [error, result] pairs), and node-redis 4+ (`sendCommand` with
// string arguments, and `multi().exec()` answering results, rejecting on an error), a client
// or a cluster (`createCluster`), which is told the key that routes each command. Every
// command here has its key second, after its name, but CL.ALL, whose keys follow numkeys.
//
// An ioredis Cluster knows the keys of the commands it has a table for, and the module's are
// not among them: it sends one to any primary and follows the MOVED to the key's. The MULTI
// beside a GET is routed by the GET's key.

function isIoredis(client) {
  return typeof client.call === 'function';
}

function isNodeRedisCluster(client) {
  return !isIoredis(client) && typeof client.getSlotMaster === 'function';
}

// A client's own `keyPrefix` (ioredis; node-redis 6.1 and later, as `_keyPrefix`, since
// node-redis 4 and 5 keep an unknown keyPrefix option and put it nowhere) goes on the keys of
// the commands the client knows, and the module's are not among them: the prefix is added
// here, as it is on the GET beside them and on RateLimiterRedis's own commands.
function prefixOf(client) {
  const prefix = isIoredis(client) ? client.options && client.options.keyPrefix : client._keyPrefix;
  return prefix === undefined || prefix === null ? '' : String(prefix);
}

/**
 * Where a module command's keys are among its words: CL.ALL's follow numkeys, CL.TOP has
 * none (it speaks of the node).
 */
function keysOf(words) {
  const command = String(words[0]).toUpperCase();
  if (command === 'CL.TOP') return [1, 1];
  if (command !== 'CL.ALL') return [1, 2];
  const count = Number(words[1]);
  return [2, 2 + (Number.isInteger(count) && count > 0 ? count : 0)];
}

function withPrefix(client, words) {
  const prefix = prefixOf(client);
  const [from, to] = keysOf(words);
  return words.map((word, i) => (i >= from && i < to ? `${prefix}${word}` : word));
}

const asIs = (words) => words;

/**
 * What goes on the wire for a module command's `words`: `wire(words)`, the module command
 * itself or the library's call of it (lib/route.js), with the keys prefixed by whoever does
 * not prefix them: ioredis does on FCALL, EVALSHA and EVAL, whose keys it knows. Answers the
 * first prefixed key, which routes the command on a node-redis cluster, and the words.
 */
function onTheWire(client, words, wire) {
  const prefixed = withPrefix(client, words);
  const key = prefixed[keysOf(words)[0]];
  if (wire === asIs || !isIoredis(client)) return [key, wire(prefixed)];
  return [key, wire(words)];
}

/**
 * One command; its reply, or a rejection with the server's error (`explained`). `wire` is
 * how the command goes (lib/route.js), the module's own by default.
 */
async function send(client, words, wire = asIs) {
  const [key, command] = onTheWire(client, words, wire);
  try {
    if (isIoredis(client)) {
      return await client.call(...command);
    }
    const args = command.map(String);
    if (isNodeRedisCluster(client)) {
      return await client.sendCommand(key, false, args);
    }
    return await client.sendCommand(args);
  } catch (error) {
    throw explained(error);
  }
}

/** One command and `GET` of its key in one MULTI: both see the key at the same instant. */
async function sendThenGet(client, words, wire = asIs) {
  try {
    return await commandThenGet(client, words, wire);
  } catch (error) {
    // Only the module's own command can be unknown: the library's are the server's.
    throw explained(wire === asIs ? await withReason(client, words[0], error) : error);
  }
}

/** A command with no key, to any one node: its reply, or a rejection with the error. */
async function askAny(client, words) {
  if (isIoredis(client)) return client.call(...words);
  if (isNodeRedisCluster(client)) return client.sendCommand(undefined, true, words.map(String));
  return client.sendCommand(words.map(String));
}

/**
 * A sender of keyless commands for each primary of a cluster, or for the one server. A
 * cluster client that has not connected yet (ioredis' lazyConnect) is made to first.
 */
async function primaries(client) {
  if (isIoredis(client) && client.isCluster) {
    if (client.nodes('master').length === 0) await client.call('PING');
    const nodes = client.nodes('master');
    if (nodes.length === 0) throw new Error('the cluster has no primary to ask');
    return nodes.map((node) => (words) => node.call(...words));
  }
  if (isNodeRedisCluster(client)) {
    // node-redis 4.0 to 4.5 list them with getMasters(); later ones as masters.
    const clients = Array.isArray(client.masters) && typeof client.nodeClient === 'function'
      ? await Promise.all(client.masters.map((master) => client.nodeClient(master)))
      : client.getMasters().map((node) => node.client);
    if (clients.length === 0) throw new Error('the cluster has no primary to ask');
    return clients.map((node) => (words) => node.sendCommand(words.map(String)));
  }
  return [(words) => askAny(client, words)];
}

/**
 * node-redis 4 rejects a transaction the server refused to run with EXECABORT alone, where
 * the refusal was an unknown command's when the server lacks the module: asked of the server
 * then (COMMAND INFO reads nothing of the keyspace), so that the caller learns why.
 */
async function withReason(client, command, error) {
  if (!/^EXECABORT/.test(String(error && error.message))) return error;
  const info = await askAny(client, ['COMMAND', 'INFO', command]);
  const known = Array.isArray(info) && info.some((entry) => entry);
  return known ? error : new Error(`unknown command '${command}' (asked after ${error.message})`);
}

async function commandThenGet(client, words, wire) {
  const key = words[1];
  const [prefixed, command] = onTheWire(client, words, wire);
  if (isIoredis(client)) {
    let replies;
    try {
      replies = await client.multi().call(...command).get(key).exec();
    } catch (error) {
      // A command the server refused to queue (an unknown one) aborts the EXEC: the
      // refusal is among the errors before it.
      throw (error && error.previousErrors && error.previousErrors[0]) || error;
    }
    const [[error, reply], [getError, value]] = replies;
    if (error || getError) throw error || getError;
    return [reply, value];
  }
  let replies;
  try {
    // The raw command carries the prefix; get() and a cluster transaction's routing key get
    // it from node-redis.
    const args = command.map(String);
    if (!isNodeRedisCluster(client)) {
      replies = await client.multi().addCommand(args).get(key).exec();
    } else if (client.multi(key).addCommand.length === 3) {
      // node-redis 4's cluster transaction takes (firstKey, args); 5 and 6 (firstKey,
      // isReadonly, args).
      replies = await client.multi(key).addCommand(prefixed, args).get(key).exec();
    } else {
      replies = await client.multi(key).addCommand(prefixed, false, args).get(key).exec();
    }
  } catch (error) {
    // node-redis 5 rejects with every reply; the server's error is among them.
    const failed = error && error.replies && error.errorIndexes;
    throw failed ? error.replies[error.errorIndexes[0]] : error;
  }
  const failed = replies.find((reply) => reply instanceof Error);
  if (failed) throw failed;
  return replies;
}

module.exports = { askAny, primaries, send, sendThenGet };
