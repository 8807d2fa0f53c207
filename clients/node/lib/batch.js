'use strict';

// Local batches: one limit for a whole fleet, most calls decided without a round trip; the
// peer of the Python client's redis_cell/batch.py, in milliseconds. A Batched limiter takes
// units from the server with ATMOST and spends them in the process, each after the server
// granted it and before `horizon` ms after its request was sent; units left are given back
// with one REFUND by then (and all of them on close), or, once that moment has passed,
// never. When the server grants nothing, the denial is answered locally until its
// retry_after has passed. What the fleet's spending keeps, and why, is docs/fleet.md's.
//
// The rules are BatchCore's, which is given the time and makes no call; Batched adds the
// calls, one in flight at a time, and the timers that give units back.

const { performance } = require('node:perf_hooks');


// Spending stops this part of the horizon early, and giving back half that part early: the
// other half is the time a refund may take to reach the server, which must be within the
// horizon (docs/fleet.md).
const SPEND_MARGIN = 0.1;
const REFUND_MARGIN = 0.05;

/**
 * Whether a call may go ahead; `retryAfter` (ms) when denied and known; whether it was
 * decided without a round trip; and `at`, the instant on the limiter's clock its units were
 * spent (the one the bound speaks of), when allowed.
 */
const decision = (allowed, { retryAfter = null, local = false, at = null } = {}) => (
  Object.freeze({ allowed, retryAfter, local, at }));

class BatchCore {
  constructor({ horizon, refresh, share, maxBatch, fixedWindow, fallbackRate = null }) {
    if (!(refresh > 0 && refresh <= horizon)) throw new RangeError('refresh must be positive and at most the horizon');
    if (!(share > 0 && share <= 1)) throw new RangeError('share must be in (0, 1]');
    Object.assign(this, { horizon, refresh, share, maxBatch, fixedWindow, fallbackRate });
    // Each grant: { units, spendUntil, refundUntil }, the oldest first.
    this.grants = [];
    this.denyUntil = null;
    // The server's remaining after the last grant, and the demand seen since the last ask.
    this.remaining = null;
    this.rate = 0;
    this.askedAt = null;
    this.spent = 0;
    this.fallbackTokens = 0;
    this.fallbackAt = null;
  }

  /** Drops the grants whose horizon has passed; returns how many of their units to give back. */
  lapsed(now) {
    let back = 0;
    while (this.grants.length > 0 && this.grants[0].spendUntil <= now) {
      const grant = this.grants.shift();
      if (now < grant.refundUntil) back += grant.units;
    }
    return back;
  }

  held() {
    return this.grants.reduce((sum, grant) => sum + grant.units, 0);
  }

  /** When the newest grant stops being spent, if any is held. */
  newestLapse() {
    return this.grants.length > 0 ? this.grants[this.grants.length - 1].spendUntil : null;
  }

  /**
   * Decides a call for `n` units locally, if it can: from the units held (the oldest first),
   * or by the deny cache; null when the server must be asked. Also returns the units that
   * lapsed, to give back.
   */
  spend(now, n) {
    const back = this.lapsed(now);
    if (n <= this.held()) {
      this.spent += n;
      let left = n;
      while (left > 0) {
        const grant = this.grants[0];
        const taken = Math.min(left, grant.units);
        grant.units -= taken;
        left -= taken;
        if (grant.units === 0) this.grants.shift();
      }
      return [decision(true, { local: true, at: now }), back];
    }
    if (this.denyUntil !== null && now < this.denyUntil) {
      return [decision(false, { retryAfter: this.denyUntil - now, local: true }), back];
    }
    return [null, back];
  }

  /**
   * How many units to ask for, at most: enough to refill about once per `refresh` at the
   * demand seen, never more than `share` of what the server last had left (near the limit,
   * just `n`).
   */
  ask(now, n) {
    if (this.askedAt !== null && now > this.askedAt) {
      const seen = this.spent / (now - this.askedAt);
      this.rate = this.rate === 0 ? seen : (this.rate + seen) / 2;
    }
    this.askedAt = now;
    this.spent = 0;
    let size = Math.max(n, Math.ceil(this.rate * this.refresh));
    if (this.remaining !== null) size = Math.min(size, Math.max(n, Math.floor(this.remaining * this.share)));
    return Math.max(n, Math.min(size, this.maxBatch));
  }

  /**
   * Takes the server's reply (waits in ms), received at `receivedAt`, to a request sent at
   * `sentAt`: the call for `n` units goes ahead if `n` were granted and the answer came
   * before the horizon; the rest are held until it.
   */
  granted(sentAt, receivedAt, n, reply) {
    const granted = reply.granted || 0;
    this.remaining = reply.remaining;
    this.denyUntil = null;
    if (granted === 0) {
      // Sent before the server decided: the cache ends no later than the server's wait.
      if (reply.retryAfter !== null) this.denyUntil = sentAt + reply.retryAfter;
      return decision(false, { retryAfter: reply.retryAfter });
    }
    let refundUntil = sentAt + this.horizon * (1 - REFUND_MARGIN);
    // A fixed window ends reset_after (rounded up to the ms) after the server's instant,
    // which is after sentAt; a refund must reach the server before it does.
    if (this.fixedWindow) {
      refundUntil = Math.min(refundUntil, sentAt + reply.resetAfter - 1 - this.horizon * REFUND_MARGIN);
    }
    const spendUntil = sentAt + this.horizon * (1 - SPEND_MARGIN);
    // An answer that came too late is held as a grant that has already lapsed.
    const spends = granted >= n && receivedAt < spendUntil;
    const left = spends ? granted - n : granted;
    if (left > 0) this.grants.push({ units: left, spendUntil, refundUntil });
    if (!spends) return decision(false);
    this.spent += n;
    return decision(true, { at: receivedAt });
  }

  /**
   * The server could not be reached: denied, or with a fallback rate (units a second),
   * allowed while a local bucket of that rate, holding up to one `refresh` of it, has room.
   */
  failed(now, n) {
    if (this.fallbackRate === null) return decision(false, { local: true });
    const perMs = this.fallbackRate / 1000;
    if (this.fallbackAt !== null) this.fallbackTokens += (now - this.fallbackAt) * perMs;
    this.fallbackAt = now;
    this.fallbackTokens = Math.min(this.fallbackTokens, Math.max(1, perMs * this.refresh));
    if (this.fallbackTokens >= n) {
      this.fallbackTokens -= n;
      return decision(true, { local: true, at: now });
    }
    return decision(false, { retryAfter: (n - this.fallbackTokens) / perMs, local: true });
  }

  /** Drops every grant; returns how many units to give back. */
  close(now) {
    const back = this.grants.reduce((sum, grant) => sum + (now < grant.refundUntil ? grant.units : 0), 0);
    this.grants = [];
    return back;
  }
}

/**
 * A CL.ALL limiter (lib/cell.js's throttle, fixed or window) as its own command's call in
 * milliseconds: the command, and the numbers after the key.
 */
function callOf(limiter, ms) {
  const [keyword, ...rest] = limiter.words;
  const kind = String(keyword).toLowerCase();
  const numbers = kind === 'throttle' ? rest.slice(0, 3) : rest.slice(0, 2);
  const period = Number(numbers[numbers.length - 1]);
  numbers[numbers.length - 1] = ms ? period : period * 1000;
  const buckets = kind === 'window' && rest[2] === 'BUCKETS' ? rest[3] : undefined;
  if (!['throttle', 'fixed', 'window'].includes(kind)) {
    throw new TypeError('a batched limiter is a throttle, a fixed or a window');
  }
  // The batch's windows are a period long from their first call: one on the clock ends
  // elsewhere.
  if (kind === 'fixed' && (rest.length > 2 || !Number.isFinite(period))) {
    throw new TypeError('a batched fixed window has a period in seconds or ms, not laid on the clock or the calendar');
  }
  return { kind, numbers, buckets, periodMs: numbers[numbers.length - 1] };
}

/**
 * A limiter of one key decided mostly in the process, over a Cell: one request to the server
 * in flight at a time, which concurrent calls share.
 */
class Batched {
  constructor(cell, limiter, {
    ms = false, horizon, refresh, share = 0.25, maxBatch = 1000000, fallbackRate = null,
    clock = () => performance.now(),
  } = {}) {
    this.cell = cell;
    this.key = limiter.key;
    this.call = callOf(limiter, ms);
    this.clock = clock;
    // A tenth of the period, at most a second: the bound's 2H stays small next to it.
    const h = horizon === undefined ? Math.min(1000, this.call.periodMs / 10) : horizon;
    this.core = new BatchCore({
      horizon: h,
      refresh: refresh === undefined ? h / 2 : refresh,
      share,
      maxBatch,
      fixedWindow: this.call.kind === 'fixed',
      fallbackRate,
    });
    this.asking = null;
    // Requests sent (grants and refunds), and the units sent back (whether or not the
    // server's answer came).
    this.calls = 0;
    this.givenBack = 0;
  }

  /** Takes `n` units (1 by default): resolves to a decision. */
  async acquire(n = 1) {
    for (;;) {
      const now = this.clock();
      const [local, back] = this.core.spend(now, n);
      this.giveBack(back);
      if (local !== null) return local;
      if (this.asking !== null) {
        await this.asking;
        continue;
      }
      let answered;
      this.asking = new Promise((resolve) => { answered = resolve; });
      const quantity = this.core.ask(now, n);
      let reply = null;
      try {
        reply = await this.send(quantity, { atMost: true });
      } catch (error) {
        if (!isUnreachable(error)) throw error;
      } finally {
        this.asking = null;
        answered();
      }
      if (reply === null) return this.core.failed(this.clock(), n);
      const granted = this.core.granted(now, this.clock(), n, reply);
      this.lapseAt(this.core.newestLapse());
      return granted;
    }
  }

  send(quantity, flags) {
    this.calls += 1;
    const { kind, numbers, buckets } = this.call;
    return this.cell[kind](this.key, ...numbers, { quantity, ms: true, buckets, ...flags });
  }

  /** Gives back what lapses at `at`, when it does, even if no call comes then. */
  lapseAt(at) {
    if (at === null) return;
    const timer = setTimeout(() => this.giveBack(this.core.lapsed(this.clock())), Math.max(0, at - this.clock()));
    if (timer.unref) timer.unref();
  }

  giveBack(units) {
    if (units <= 0) return Promise.resolve();
    this.givenBack += units;
    // Unreturned units lapse: counted as spent, which errs toward denying.
    return this.send(units, { refund: true }).catch(() => {});
  }

  /** Gives back every unit held. */
  close() {
    return this.giveBack(this.core.close(this.clock()));
  }
}

// The server away, as each client says it: a socket's error code, ioredis's and node-redis's
// own errors for a closed or given-up connection, and the replies of a server that is
// loading its data or busy. Anything else (a limiter's error, ModuleMissingError, a bad
// argument) is thrown to the caller.
const AWAY_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH',
  'ENETUNREACH', 'ENOTCONN', 'ECONNABORTED']);
const AWAY_NAMES = /MaxRetriesPerRequest|ClientClosed|ClientOffline|ConnectionTimeout|SocketClosed|SocketTimeout|Disconnects/;
const AWAY_MESSAGES = /^(Connection is closed|The client is closed|Socket closed|connect E|Stream isn't writeable|Reached the max retries|LOADING |BUSY |MASTERDOWN )/;

function isUnreachable(error) {
  if (!(error instanceof Error)) return false;
  return AWAY_CODES.has(error.code) || AWAY_NAMES.test(error.name) || AWAY_MESSAGES.test(error.message || '');
}

module.exports = { Batched, BatchCore };
