'use strict';

// A Store for express-rate-limit: its middleware, its options and its headers, unchanged,
// with each count kept in Redis by one CL.FIXED … COUNTDENIED, the fixed window it keeps in
// memory by default (the window opens at a key's first request and lasts `windowMs`). The
// count comes back with the reply, read by a GET in the same MULTI, because
// express-rate-limit decides on the count itself (`totalHits` past `limit`), and the reply's
// `remaining` stops at 0.

const { Cell } = require('./cell');
const { sendThenGet } = require('./client');

// The limit CL.FIXED counts against when express-rate-limit's is a function of the request,
// which a store never sees: the count, the expiry and the reset are the same whatever it is.
const ANY_LIMIT = Number.MAX_SAFE_INTEGER;

class CellStore {
  /**
   * `client`: an ioredis or node-redis client, a server's or a cluster's; `prefix`: what
   * each key starts with (default 'rl:'); `via` and `loadLibrary` as the client's.
   */
  constructor({ client, prefix = 'rl:', via, loadLibrary } = {}) {
    this.cell = new Cell(client, { via, loadLibrary });
    this.prefix = prefix;
    this.localKeys = false;
    this.windowMs = undefined;
    this.limit = ANY_LIMIT;
  }

  /** Takes the window and the limit from the middleware's options. */
  init(options) {
    this.windowMs = options.windowMs;
    if (Number.isSafeInteger(options.limit) && options.limit >= 1) this.limit = options.limit;
  }

  /** One CL.FIXED of `quantity` on `key`, with the count after it. */
  async _fixed(key, quantity, refund = false) {
    if (!Number.isSafeInteger(this.windowMs) || this.windowMs < 1) {
      throw new Error(`CellStore needs a windowMs of whole milliseconds, at least 1, not ${this.windowMs}`);
    }
    const words = ['CL.FIXED', `${this.prefix}${key}`, this.limit, this.windowMs, quantity, 'MS',
      ...(refund ? ['REFUND'] : ['COUNTDENIED'])];
    const [reply, count] = await this.cell.command(words, sendThenGet);
    const resetAfter = Number(reply[4]);
    return {
      totalHits: count === null ? 0 : Number(count),
      resetTime: new Date(Date.now() + resetAfter),
    };
  }

  increment(key) {
    return this._fixed(key, 1);
  }

  async decrement(key) {
    await this._fixed(key, 1, true);
  }

  /** The count and reset of a window, or undefined for none: a peek writes nothing. */
  async get(key) {
    const info = await this._fixed(key, 0);
    return info.totalHits === 0 ? undefined : info;
  }

  async resetKey(key) {
    await this.cell.client.del(`${this.prefix}${key}`);
  }
}

module.exports = { CellStore };
