'use strict';

// The module's commands as methods with typed replies: the peer of the Python client
// (clients/python/redis_cell/client.py). Each call goes where lib/route.js finds the limiters
// (the module, the Functions library, or a ModuleMissingError that says what to load), by
// the one routing the adapter (index.js) goes through too. Options are named as the
// grammar's rows are (clients/grammar.json), camel-cased: `dryRun` for DRYRUN.

const { send } = require('./client');
const { call, routing } = require('./route');

/**
 * `[limited, limit, remaining, retry_after, reset_after]`, and with `atMost` `granted` sixth:
 * the units the call took (null without it). `retryAfter` is null when the call was
 * admitted, or when its quantity can never fit (the server answers -1 for both); waits are
 * in the call's unit, seconds or, with `ms`, milliseconds.
 */
class Reply {
  constructor(limited, limit, remaining, retryAfter, resetAfter, granted = null) {
    this.limited = limited;
    this.limit = limit;
    this.remaining = remaining;
    this.retryAfter = retryAfter;
    this.resetAfter = resetAfter;
    this.granted = granted;
    Object.freeze(this);
  }

  get allowed() {
    return !this.limited;
  }

  /** A reply as the server sends it: five integers, or six with ATMOST. */
  static of(values) {
    if (!Array.isArray(values) || (values.length !== 5 && values.length !== 6)) {
      throw new TypeError(`a limiter's reply is five or six integers, not ${JSON.stringify(values)}`);
    }
    const [limited, limit, remaining, retryAfter, resetAfter, granted] = values.map(Number);
    return new Reply(limited === 1, limit, remaining, retryAfter < 0 ? null : retryAfter, resetAfter,
      granted === undefined ? null : granted);
  }
}

// The options each command takes, and the words each puts on the wire, in the order the
// module documents them (any order would do: the grammar takes options in any order).
const FLAG = (keyword) => (value) => (value ? [keyword] : []);
const VALUED = (keyword) => (value) => (value === undefined || value === null ? [] : [keyword, value]);
const OPTIONS = {
  buckets: VALUED('BUCKETS'),
  ms: FLAG('MS'),
  burst: VALUED('BURST'),
  warmup: VALUED('WARMUP'),
  cold: VALUED('COLD'),
  refund: FLAG('REFUND'),
  dryRun: FLAG('DRYRUN'),
  countDenied: FLAG('COUNTDENIED'),
  align: FLAG('ALIGN'),
  offset: VALUED('OFFSET'),
  ban: VALUED('BAN'),
  detail: FLAG('DETAIL'),
  holder: VALUED('HOLDER'),
  atMost: FLAG('ATMOST'),
  count: VALUED('COUNT'),
  block: VALUED('BLOCK'),
};
// The commands that take a quantity first (the limiters'), or, CL.ALL, as QUANTITY.
const QUANTITY = new Set(['CL.THROTTLE', 'CL.FIXED', 'CL.WINDOW', 'CL.SMOOTH', 'CL.ALL']);
const TAKES = {
  'CL.THROTTLE': ['ms', 'refund', 'dryRun', 'ban', 'atMost', 'block'],
  'CL.FIXED': ['ms', 'refund', 'dryRun', 'countDenied', 'align', 'offset', 'ban', 'atMost', 'block'],
  'CL.WINDOW': ['buckets', 'ms', 'refund', 'dryRun', 'ban', 'atMost', 'block'],
  'CL.LEASE': ['ms', 'dryRun', 'block'],
  'CL.RELEASE': [],
  'CL.HOLDERS': ['ms'],
  'CL.SMOOTH': ['ms', 'burst', 'warmup', 'cold', 'dryRun', 'ban', 'block'],
  'CL.ALL': ['ms', 'refund', 'dryRun', 'ban', 'detail', 'holder', 'atMost', 'block'],
  'CL.TOP': ['count'],
  'CL.BAN': ['ms'],
  'CL.UNBAN': [],
};

/**
 * A command's words: its name, its parameters, then its options. An option the command
 * does not take is a TypeError here, as a misspelt keyword argument is in Python, rather
 * than a word the server refuses.
 */
function words(command, params, options) {
  const out = [command, ...params];
  const given = options || {};
  const takes = TAKES[command];
  for (const [name, value] of Object.entries(given)) {
    // An option left undefined is an option not given, as a keyword argument's default is.
    if (value === undefined) continue;
    if (name === 'quantity' ? !QUANTITY.has(command) : !takes.includes(name)) {
      throw new TypeError(`${command} takes no option ${name}`);
    }
  }
  for (const name of takes) {
    const value = given[name];
    // A wait is a number of milliseconds: `block: false` is no wait, not `BLOCK false`.
    if (name === 'block' && value === false) continue;
    out.push(...OPTIONS[name](value));
  }
  return out;
}

/** The quantity, where the command takes it first: 1 unless the call says otherwise. */
const quantityOf = (options) => (options && options.quantity !== undefined ? options.quantity : 1);

// CL.ALL's limiters, one per key, each with its command's numbers (clients/grammar.json's
// params); a window may count in `buckets`, a fixed window lie on the clock (`align`) in a
// local time (`offset`), its period a span or a calendar's unit ('DAY', 'WEEK', 'MONTH',
// 'YEAR').
const throttle = (key, maxBurst, count, period) => ({ key, words: ['THROTTLE', maxBurst, count, period] });
const fixed = (key, limit, period, { align, offset } = {}) => ({
  key, words: ['FIXED', limit, period, ...OPTIONS.align(align), ...OPTIONS.offset(offset)],
});
const window = (key, limit, period, { buckets } = {}) => ({
  key, words: ['WINDOW', limit, period, ...OPTIONS.buckets(buckets)],
});
const lease = (key, limit, leaseTime) => ({ key, words: ['LEASE', limit, leaseTime] });

/** Each command's words, as the client sends them: for a caller's own pipeline or tests. */
const commands = {
  throttle: (key, maxBurst, count, period, options = {}) => words('CL.THROTTLE',
    [key, maxBurst, count, period, quantityOf(options)], options),
  fixed: (key, limit, period, options = {}) => words('CL.FIXED', [key, limit, period, quantityOf(options)], options),
  window: (key, limit, period, options = {}) => words('CL.WINDOW', [key, limit, period, quantityOf(options)], options),
  lease: (key, limit, leaseTime, holder, options = {}) => words('CL.LEASE', [key, limit, leaseTime, holder], options),
  release: (key, holder, options = {}) => words('CL.RELEASE', [key, holder], options),
  holders: (key, options = {}) => words('CL.HOLDERS', [key], options),
  smooth: (key, permits, period, options = {}) => words('CL.SMOOTH', [key, permits, period, quantityOf(options)], options),
  top: (options = {}) => words('CL.TOP', [], options),
  ban: (key, span, options = {}) => words('CL.BAN', [key, span], options),
  unban: (key) => words('CL.UNBAN', [key], {}),
  all(limiters, options) {
    if (!Array.isArray(limiters) || limiters.length === 0) {
      throw new TypeError('CL.ALL takes at least one limiter');
    }
    const { quantity, ...rest } = options || {};
    return words('CL.ALL', [
      limiters.length,
      ...limiters.map((limiter) => limiter.key),
      ...limiters.flatMap((limiter) => limiter.words),
      'QUANTITY', quantityOf({ quantity }),
    ], rest);
  },
};

/** CL.HOLDERS' flat reply, as `{ holder, left }` pairs, the soonest to end first. */
function holdersOf(reply) {
  const pairs = [];
  for (let i = 0; i + 1 < reply.length; i += 2) {
    pairs.push({ holder: String(reply[i]), left: Number(reply[i + 1]) });
  }
  return pairs;
}

/** CL.TOP's flat reply, as `{ key, denied, error }`, the most denied first. */
function topOf(reply) {
  const listed = [];
  for (let i = 0; i + 2 < reply.length; i += 3) {
    listed.push({ key: String(reply[i]), denied: Number(reply[i + 1]), error: Number(reply[i + 2]) });
  }
  return listed;
}

/**
 * The module's commands over an ioredis or node-redis client, a server's or a cluster's.
 *
 * `via: 'auto'` (the default) calls the module where the server has it, and the Functions
 * library where it does not, loading the library when it is missing or older than this
 * package, unless `loadLibrary: false`; `via: 'module'` or `'library'` forces either. Waiting
 * (`block`) needs the module: the library refuses it with its own error. A server with
 * neither rejects with ModuleMissingError. The limiters' errors (a bad argument, a key of
 * another type) reject as the client library's Error, with the module's message.
 *
 * `onDecision`, if given, is called with `{ limiter, key, allowed, reply }` after every call
 * that decides (each limiter's; not a refund nor a dry run), before the call's promise
 * settles: `limiter` is the command's word ('throttle', 'fixed', 'window', 'lease', 'smooth',
 * 'all'), `key` the call's key (for `all`, the array of its limiters' keys), `reply` its Reply
 * (for `all` with `detail`, the array of them); not for a refund, a dry run or a peek. A plain
 * function, not an async one; what it throws, the call rejects with.
 *
 * A call that waits (`block`) holds its connection until it is answered: give waiting calls
 * a client of their own.
 */
/**
 * `onDecision` as given, once it is a plain function: an async one's rejection would go
 * unhandled, which ends a Node process.
 */
function checkedHook(hook) {
  if (hook === undefined) return undefined;
  if (typeof hook !== 'function' || Object.prototype.toString.call(hook) === '[object AsyncFunction]') {
    throw new TypeError('onDecision is a plain function of the decision, not an async one');
  }
  return hook;
}

class Cell {
  constructor(client, options = {}) {
    if (!client) throw new TypeError('Cell needs an ioredis or node-redis client');
    const { onDecision, ...routed } = options;
    this.client = client;
    this.routing = routing(routed);
    this.onDecision = checkedHook(onDecision);
  }

  /**
   * Tells `onDecision` of a call that decided (not a refund, which gives units back, nor a
   * dry run or a peek, quantity 0, which take none: the calls CL.TOP leaves out), and
   * answers its reply.
   */
  told(limiter, key, reply, options = {}) {
    const decided = !options.refund && !options.dryRun && Number(options.quantity ?? 1) !== 0;
    if (this.onDecision && decided) {
      const replies = Array.isArray(reply) ? reply : [reply];
      this.onDecision({
        limiter, key, allowed: replies.every((each) => !each.limited), reply,
      });
    }
    return reply;
  }

  /** A command's words sent by `how` (lib/client.js's send, or sendThenGet). */
  command(commandWords, how = send) {
    return call(this.client, this.routing, how, commandWords);
  }

  async throttle(key, maxBurst, count, period, options) {
    return this.told('throttle', key, Reply.of(await this.command(commands.throttle(key, maxBurst, count, period, options))), options);
  }

  async fixed(key, limit, period, options) {
    return this.told('fixed', key, Reply.of(await this.command(commands.fixed(key, limit, period, options))), options);
  }

  async window(key, limit, period, options) {
    return this.told('window', key, Reply.of(await this.command(commands.window(key, limit, period, options))), options);
  }

  async lease(key, limit, leaseTime, holder, options) {
    return this.told('lease', key, Reply.of(await this.command(commands.lease(key, limit, leaseTime, holder, options))), options);
  }

  /** Whether the holder held a live lease, now given back. */
  async release(key, holder) {
    return Number(await this.command(commands.release(key, holder))) === 1;
  }

  async holders(key, options) {
    return holdersOf(await this.command(commands.holders(key, options)));
  }

  /**
   * Guava's `tryAcquire(quantity)` on a limiter every caller of `key` shares; `block: ms` is
   * `tryAcquire(quantity, ms)` and `block: 0` `acquire(quantity)`: the module holds the
   * reply until the reserved instant.
   */
  async smooth(key, permits, period, options) {
    return this.told('smooth', key, Reply.of(await this.command(commands.smooth(key, permits, period, options))), options);
  }

  /**
   * The keys this node denied most over this minute and the one before (`count`, default
   * 10): the module's alone; where the calls go to the library, NeedsModuleError.
   */
  async top(options) {
    return topOf(await this.command(commands.top(options)));
  }

  /**
   * Locks `key` out for `span` from now (seconds, or ms with `ms`), its limiter's state kept:
   * the ban's end, unix seconds rounded up (or ms). The module's alone, as `top`.
   */
  async ban(key, span, options) {
    return Number(await this.command(commands.ban(key, span, options)));
  }

  /** Lifts `key`'s ban, its limiter's state as it was: whether a ban held. */
  async unban(key) {
    return Number(await this.command(commands.unban(key))) === 1;
  }

  /** All of `limiters` or none; the binding limiter's reply, or each one's with `detail`. */
  async all(limiters, options) {
    const reply = await this.command(commands.all(limiters, options));
    const answered = options && options.detail ? reply.map((each) => Reply.of(each)) : Reply.of(reply);
    return this.told('all', limiters.map((each) => each.key), answered, options);
  }
}

module.exports = {
  Cell, Reply, checkedHook, commands, throttle, fixed, window, lease,
};
