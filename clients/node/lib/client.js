'use strict';

// The one place that knows the two clients apart: ioredis (`call`, and `multi().exec()`
// answering [error, result] pairs) and node-redis 4+ (`sendCommand` with string arguments, and
// `multi().exec()` answering results, rejecting on an error). Every command here has its key
// second, after its name.

function isIoredis(client) {
  return typeof client.call === 'function';
}

// ioredis puts its `keyPrefix` on the keys of the commands it knows, and the module's are
// not among them: the prefix is added here, as it is on the GET beside them and on
// RateLimiterRedis's own commands.
function withPrefix(client, [command, key, ...rest]) {
  const prefix = (client.options && client.options.keyPrefix) || '';
  return [command, `${prefix}${key}`, ...rest];
}

/** One command; its reply, or a rejection with the server's error. */
function send(client, words) {
  if (isIoredis(client)) {
    return client.call(...withPrefix(client, words));
  }
  return client.sendCommand(words.map(String));
}

/** One command and `GET` of its key in one MULTI: both see the key at the same instant. */
async function sendThenGet(client, words) {
  const key = words[1];
  if (isIoredis(client)) {
    const [[error, reply], [getError, value]] = await client.multi()
      .call(...withPrefix(client, words)).get(key).exec();
    if (error || getError) throw error || getError;
    return [reply, value];
  }
  let replies;
  try {
    replies = await client.multi().addCommand(words.map(String)).get(key).exec();
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
