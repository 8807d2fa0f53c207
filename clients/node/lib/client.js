'use strict';

const { explained } = require('./errors');

// The one place that knows the clients apart: ioredis, a server or a Cluster (`call`, and
// `multi().exec()` answering [error, result] pairs), and node-redis 4+ (`sendCommand` with
// string arguments, and `multi().exec()` answering results, rejecting on an error), a client
// or a cluster (`createCluster`), which is told the key that routes each command. Every
// command here has its key second, after its name.
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

function withPrefix(client, [command, key, ...rest]) {
  return [command, `${prefixOf(client)}${key}`, ...rest];
}

/** One command; its reply, or a rejection with the server's error (`explained`). */
async function send(client, words) {
  try {
    if (isIoredis(client)) {
      return await client.call(...withPrefix(client, words));
    }
    const args = withPrefix(client, words).map(String);
    if (isNodeRedisCluster(client)) {
      return await client.sendCommand(args[1], false, args);
    }
    return await client.sendCommand(args);
  } catch (error) {
    throw explained(error);
  }
}

/** One command and `GET` of its key in one MULTI: both see the key at the same instant. */
async function sendThenGet(client, words) {
  try {
    return await commandThenGet(client, words);
  } catch (error) {
    throw explained(await withReason(client, words[0], error));
  }
}

/**
 * node-redis 4 rejects a transaction the server refused to run with EXECABORT alone, where
 * the refusal was an unknown command's when the server lacks the module: asked of the server
 * then (COMMAND INFO reads nothing of the keyspace), so that the caller learns why.
 */
async function withReason(client, command, error) {
  if (!/^EXECABORT/.test(String(error && error.message))) return error;
  const words = ['COMMAND', 'INFO', command];
  let info;
  if (isIoredis(client)) info = await client.call(...words);
  else if (isNodeRedisCluster(client)) info = await client.sendCommand(undefined, true, words);
  else info = await client.sendCommand(words);
  const known = Array.isArray(info) && info.some((entry) => entry);
  return known ? error : new Error(`unknown command '${command}' (asked after ${error.message})`);
}

async function commandThenGet(client, words) {
  const key = words[1];
  if (isIoredis(client)) {
    let replies;
    try {
      replies = await client.multi().call(...withPrefix(client, words)).get(key).exec();
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
    const args = withPrefix(client, words).map(String);
    if (!isNodeRedisCluster(client)) {
      replies = await client.multi().addCommand(args).get(key).exec();
    } else if (client.multi(key).addCommand.length === 3) {
      // node-redis 4's cluster transaction takes (firstKey, args); 5 and 6 (firstKey,
      // isReadonly, args).
      replies = await client.multi(key).addCommand(args[1], args).get(key).exec();
    } else {
      replies = await client.multi(key).addCommand(args[1], false, args).get(key).exec();
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

module.exports = { send, sendThenGet };
