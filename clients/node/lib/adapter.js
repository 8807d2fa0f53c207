'use strict';

// rate-limiter-flexible's RateLimiterRedis over the typed client (lib/cell.js): the adapter
// sends every module command through it, by the same routing.

const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');
const { Cell } = require('./cell');
const { send, sendThenGet } = require('./client');

const ALGORITHMS = ['fixed', 'gcra', 'window'];

// A count with no expiry, which CL.FIXED refuses and RateLimiterRedis's script gives one.
const NEVER_ENDING_WINDOW = /not a valid state/;

/**
 * A fixed window's count as GET reads it beside the call: 0 for no key, and none for a key
 * the count is not (a banned one, whose count is beside the ban): the reply tells then.
 */
function countOf(value) {
  if (value === null) return 0;
  const count = Number(value);
  return Number.isSafeInteger(count) ? count : undefined;
}

/**
 * RateLimiterRedis with each decision made by the redis-cell module inside Redis.
 *
 * - `algorithm: 'fixed'` (the default) is RateLimiterRedis itself, on the same keys: a consume
 *   (and a penalty) is one `CL.FIXED … COUNTDENIED`, which counts denied consumes as
 *   RateLimiterRedis's script does; everything else (`reward`, `get`, `set`, `block`,
 *   `delete`, `blockDuration`, the insurance limiter, …) is RateLimiterRedis's own.
 * - `'gcra'` is `CL.THROTTLE` (bursts of `points`, a point back every `duration / points`),
 *   and `'window'` `CL.WINDOW` (at most `points` in any `duration`), each under a key prefix
 *   of its own. `msBeforeNext` is `retry_after` when denied and `reset_after` when admitted.
 *   A denied consume takes nothing; `reward` is a REFUND; `blockDuration` locks the key out
 *   for that many seconds from a consume the limiter denies (BAN), keeping its state; a
 *   consume with `waitMs` waits instead, and bans nothing. `penalty`, `set` and `block` have
 *   no meaning there and throw.
 * - `consume(key, points, { waitMs })` waits in the server, first come first served, up to
 *   `waitMs` ms (0: as long as it takes) for the points to fit (`BLOCK`): it resolves when
 *   they are taken and rejects with the denial when the wait ends. A connection waits with
 *   its call: give waiting calls a client of their own.
 *
 * Points and durations must be safe integers (node-redis reads integers past 2^53 − 1
 * lossily), so that every number sent and read back stays exact.
 *
 * Where the server has not loaded the module, the same decisions run in the redis-cell
 * Functions library (`via: 'auto'`, the default): the adapter loads it (FUNCTION LOAD
 * REPLACE) when it is missing or older than the adapter, unless `loadLibrary: false`, and
 * falls back on its script form (EVALSHA) where the server has no Functions. `via: 'module'`
 * or `via: 'library'` forces either. Waiting (`waitMs`) needs the module: the library
 * refuses it. A server with neither rejects with a ModuleMissingError that says what to load
 * and how; the limiters' own errors reject as the server's Error, never as a denial.
 */
class RateLimiterCell extends RateLimiterRedis {
  constructor(opts = {}) {
    super(opts);
    this._cellClient = new Cell(this.client, opts);
    this.algorithm = opts.algorithm === undefined ? 'fixed' : opts.algorithm;
    if (!ALGORITHMS.includes(this.algorithm)) {
      throw new Error(`algorithm must be one of ${ALGORITHMS.join(', ')}`);
    }
    const exact = Number.isSafeInteger(this.points) && this.points >= 1
      && Number.isSafeInteger(this.duration * 1000);
    // The fixed window keeps RateLimiterRedis's own path where the module cannot follow:
    // no expiry (duration 0), points that are not a whole number, or a script of the user's.
    this._decidedInCell = exact && (this.algorithm !== 'fixed'
      || (this.duration >= 1 && !opts.customIncrTtlLuaScript));
    if (this.algorithm !== 'fixed') {
      if (!exact || this.duration * 1000 < 1) {
        throw new Error(`algorithm '${this.algorithm}' needs integer points ≥ 1 and a duration of at least 1 ms`);
      }
      if (this.blockDuration > 0 && !Number.isSafeInteger(this.blockDuration * 1000)) {
        throw new Error(`blockDuration must be whole milliseconds with algorithm '${this.algorithm}'`);
      }
    }
  }

  getKey(key) {
    const own = this.algorithm === 'fixed' ? key : `${this.algorithm}:${key}`;
    return super.getKey(own);
  }

  parseKey(rlKey) {
    const own = super.parseKey(rlKey);
    return this.algorithm === 'fixed' ? own : own.substring(this.algorithm.length + 1);
  }

  penalty(key, points = 1, options = {}) {
    return this._onlyFixed('penalty') || super.penalty(key, points, options);
  }

  set(key, points, secDuration, options = {}) {
    return this._onlyFixed('set') || super.set(key, points, secDuration, options);
  }

  block(key, secDuration, options = {}) {
    return this._onlyFixed('block') || super.block(key, secDuration, options);
  }

  /** A rejection, as the call's own would reject, where the algorithm has no such call. */
  _onlyFixed(what) {
    if (this.algorithm === 'fixed') return undefined;
    return Promise.reject(new Error(`${what} has no meaning with algorithm '${this.algorithm}'`));
  }

  /**
   * A call to the module (or the library), sent by `how` (one command, or one with a GET
   * beside it), refused as RateLimiterRedis refuses one (rejectIfRedisNotReady).
   */
  async _cell(rlKey, words, { readonly = false, how = send } = {}) {
    if (!this._isRedisReady(rlKey, readonly)) {
      throw new Error('Redis connection is not ready');
    }
    return this._cellClient.command(words, how);
  }

  /** 'gcra' or 'window' on `rlKey` over `periodMs`, before the quantity. */
  _rateWords(rlKey, periodMs) {
    return this.algorithm === 'gcra'
      ? ['CL.THROTTLE', rlKey, this.points - 1, this.points, periodMs]
      : ['CL.WINDOW', rlKey, this.points, periodMs];
  }

  async _upsert(rlKey, points, msDuration, forceExpire = false, options = {}) {
    const waitMs = options && options.waitMs;
    if (waitMs !== undefined && !(Number.isSafeInteger(waitMs) && waitMs >= 0)) {
      throw new Error('waitMs must be a whole number of milliseconds, 0 or more');
    }
    if (this.algorithm === 'fixed') {
      return this._upsertFixed(rlKey, points, msDuration, forceExpire, waitMs);
    }
    if (!Number.isSafeInteger(points)) {
      throw new Error('points to consume must be a safe integer');
    }
    const words = this._rateWords(rlKey, Math.floor(msDuration));
    // A reward gives points back.
    words.push(Math.abs(points), 'MS');
    if (points < 0) words.push('REFUND');
    if (waitMs !== undefined && points > 0) words.push('BLOCK', waitMs);
    // A denial locks the key out for blockDuration, as RateLimiterRedis blocks it.
    else if (points > 0 && this.blockDuration > 0) words.push('BAN', this.blockDuration * 1000);
    return { cell: await this._cell(rlKey, words) };
  }

  async _upsertFixed(rlKey, points, msDuration, forceExpire, waitMs) {
    const secDuration = Math.floor(msDuration / 1000);
    // A consume of 0 opens a window in RateLimiterRedis (SET … NX before INCRBY), a reward
    // counts down past 0, and set and block write a value: its own script does those.
    const own = forceExpire || !this._decidedInCell || !Number.isSafeInteger(points)
      || points <= 0 || secDuration < 1;
    if (own && waitMs === undefined) {
      return super._upsert(rlKey, points, msDuration, forceExpire);
    }
    if (own) {
      throw new Error('waitMs needs integer points ≥ 1 and a duration of at least 1 s');
    }
    const words = ['CL.FIXED', rlKey, this.points, secDuration * 1000, points, 'MS'];
    if (waitMs !== undefined) {
      // A call that waits counts only once admitted, as RateLimiterQueue's would.
      return { cell: await this._cell(rlKey, [...words, 'BLOCK', waitMs]) };
    }
    try {
      const [reply, count] = await this._cell(rlKey, [...words, 'COUNTDENIED'], { how: sendThenGet });
      // No key: a call held back by waiters on an empty limiter took nothing.
      return { cell: reply, count: countOf(count) };
    } catch (error) {
      if (!NEVER_ENDING_WINDOW.test(String(error && error.message))) throw error;
      return super._upsert(rlKey, points, msDuration, forceExpire);
    }
  }

  _getRateLimiterRes(rlKey, changedPoints, result) {
    if (!result || !result.cell) {
      return super._getRateLimiterRes(rlKey, changedPoints, result);
    }
    const [limited, , remaining, retryAfter, resetAfter] = result.cell.map(Number);
    // What the call took, or for a denial what it would have: past `points` exactly when
    // denied, which is how RateLimiterRedis's callers (and _afterConsume) tell a denial. A
    // counted denial's count is past it already; a call held back by waiters took nothing.
    const taken = result.count !== undefined ? result.count : this.points - remaining;
    // A denied look (get) is a ban's: past `points`, as a blocked key is to RateLimiterRedis.
    const consumed = limited === 1 && taken <= this.points
      ? this.points - remaining + Math.max(Math.abs(changedPoints), 1)
      : taken;
    const msBeforeNext = limited === 1 && retryAfter >= 0 ? retryAfter : resetAfter;
    const res = new RateLimiterRes();
    res.consumedPoints = consumed;
    res.remainingPoints = Math.max(this.points - consumed, 0);
    res.msBeforeNext = msBeforeNext;
    res.isFirstInDuration = consumed === changedPoints;
    return res;
  }

  /**
   * With blockDuration, 'gcra' and 'window' are locked out in the server (BAN) by the consume
   * that was denied: RateLimiterRedis's own block, which would overwrite the server's wait and
   * send a call of its own, is left out.
   */
  _afterConsume(resolve, reject, rlKey, changedPoints, storeResult, options = {}) {
    // A fixed window blocks as RateLimiterRedis does, but never over a ban the module keeps
    // (a count GET could not read): RateLimiterRedis's block would overwrite it.
    const banned = this.algorithm === 'fixed' && storeResult && storeResult.cell
      && storeResult.count === undefined;
    if (!(this.blockDuration > 0) || (this.algorithm === 'fixed' && !banned)) {
      return super._afterConsume(resolve, reject, rlKey, changedPoints, storeResult, options);
    }
    const blockDuration = this.blockDuration;
    // Read synchronously by the call below, and restored at once.
    this.blockDuration = 0;
    try {
      return super._afterConsume(resolve, reject, rlKey, changedPoints, storeResult, options);
    } finally {
      this.blockDuration = blockDuration;
    }
  }

  async _get(rlKey) {
    if (this.algorithm === 'fixed') {
      if (!this._decidedInCell) return super._get(rlKey);
      // A look at the window in the module, which reads a banned key as the ban answers.
      const words = ['CL.FIXED', rlKey, this.points, Math.floor(this.duration) * 1000, 0, 'MS'];
      try {
        const [reply, count] = await this._cell(rlKey, words, { readonly: true, how: sendThenGet });
        return count === null ? null : { cell: reply, count: countOf(count) };
      } catch (error) {
        if (!NEVER_ENDING_WINDOW.test(String(error && error.message))) throw error;
        return super._get(rlKey);
      }
    }
    const words = [...this._rateWords(rlKey, this.duration * 1000), 0, 'MS'];
    const reply = await this._cell(rlKey, words, { readonly: true });
    // An untouched limiter, as a missing key is to RateLimiterRedis.
    return Number(reply[4]) === 0 ? null : { cell: reply };
  }
}

module.exports = { RateLimiterCell };
