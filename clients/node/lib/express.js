'use strict';

// Rate limits for Express routes, decided by the module (or its library) through a Cell: the
// peer of clients/python/redis_cell/asgi.py, with the same keys, the same rule for limits of
// several identities, and the same fields (docs/clients.md, "Web middleware").
//
// A request is charged once on each limit, or on none. The limits that count one identity
// share its hash tag, so they are decided in one CL.ALL, all or nothing, on the node that
// holds them. Limits on different identities may sit on different nodes of a cluster, where
// no single call can take them: each identity's are decided in turn, in the order the route
// first names it, and when one denies, what the earlier ones took is given back (REFUND).

const { checkedHook } = require('./cell');

const STANDARD_HEADERS = ['draft-6', 'draft-7', 'draft-11'];
// A policy's name goes into keys and, as a Structured Field String, into headers: kept to
// characters that need no escaping in either.
const NAME = /^[A-Za-z0-9_.-]+$/;
// CL.ALL's numkeys is at most 16.
const MOST_LIMITS = 16;

/**
 * The client's address, as Express reads it (behind a proxy, set `trust proxy`), an IPv4
 * client of a dual-stack server as its IPv4 address, as uvicorn gives it.
 */
const clientAddress = (req) => {
  const address = req.ip || (req.socket && req.socket.remoteAddress) || null;
  return address && address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
};

/**
 * The request's header `name` (an API key, say), its first value where it came more than once
 * (Node joins them, and a second value must not make a new identity); a request without it is
 * not counted.
 */
const header = (name) => {
  const wanted = name.toLowerCase();
  return (req) => {
    const raw = req.rawHeaders || [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if (raw[i].toLowerCase() === wanted) return raw[i + 1];
    }
    return null;
  };
};

/** The `id` of the user an authentication middleware left on `req.user`; else uncounted. */
const user = (req) => {
  const id = req.user && req.user.id;
  return (typeof id === 'string' && id !== '') || Number.isFinite(id) ? String(id) : null;
};

// A programming error (a wrong option, a bad limiter) is the app's, not the server's: it goes
// to Express's error handling, never to failOpen.
const PROGRAMMING = [TypeError, RangeError, ReferenceError, SyntaxError];

/** The identity as a hash tag's content: braces escaped (with `%`), as the Python does. */
const tag = (identity) => identity.replace(/%/g, '%25').replace(/\{/g, '%7B').replace(/\}/g, '%7D');

/**
 * The policy as the draft states one: `q` units in a window of `w` seconds. A window's are
 * its limit and period (a calendar's unit: its longest length); GCRA's `maxBurst + 1` units
 * come back one every `period / count`, so the window is their whole return, rounded up (a
 * rate stated under the true one, never over).
 */
function quota([kind, ...numbers]) {
  const [first, second, third] = numbers.map(Number);
  if (kind === 'THROTTLE') {
    const units = first + 1;
    return [units, Math.max(1, Math.ceil((units * third) / second))];
  }
  const calendar = CALENDAR_SECONDS[String(numbers[1]).toUpperCase()];
  return [first, calendar === undefined ? second : calendar];
}

// A calendar window's `w`: its unit's longest length, in seconds (a month of 31 days, a year
// of 366), so that the rate the policy states is never over the true one.
const CALENDAR_SECONDS = { DAY: 86400, WEEK: 604800, MONTH: 2678400, YEAR: 31622400 };

/**
 * The limit the fields describe. Denied: the denying limit with the longest wait (one that
 * never fits, longest of all), as CL.ALL picks it, so that a retry after Retry-After finds
 * every limit open. Admitted: the fewest units left relative to the limit, ties to the
 * longest resetAfter, then to the first declared.
 */
function binding(decided) {
  const denied = decided.filter(([, reply]) => reply.limited);
  const wait = (reply) => (reply.retryAfter === null ? Infinity : reply.retryAfter);
  if (denied.length > 0) {
    return denied.reduce((best, pair) => (wait(pair[1]) > wait(best[1]) ? pair : best));
  }
  const closer = (a, b) => {
    const [x, y] = [a.remaining * b.limit, b.remaining * a.limit];
    return x !== y ? x < y : a.resetAfter > b.resetAfter;
  };
  return decided.reduce((best, pair) => (closer(pair[1], best[1]) ? pair : best));
}

/** `t`: the wait until this request fits when denied, else until the whole quota is back. */
const waitOf = (reply) => (reply.limited && reply.retryAfter !== null ? reply.retryAfter : reply.resetAfter);

/** The fields of a decided response, in the forms asked for. */
function fields(applied, bound, reply, standard, legacy) {
  const wait = waitOf(reply);
  const out = {};
  if (standard === 'draft-11') {
    out['RateLimit-Policy'] = applied.map((each) => {
      const [q, w] = quota(each.limiter.words);
      return `"${each.name}";q=${q};w=${w}`;
    }).join(', ');
    out.RateLimit = `"${bound.name}";r=${reply.remaining};t=${wait}`;
  } else if (standard === 'draft-6' || standard === 'draft-7') {
    out['RateLimit-Policy'] = applied.map((each) => quota(each.limiter.words).join(';w=')).join(', ');
    if (standard === 'draft-7') {
      out.RateLimit = `limit=${reply.limit}, remaining=${reply.remaining}, reset=${wait}`;
    } else {
      out['RateLimit-Limit'] = String(reply.limit);
      out['RateLimit-Remaining'] = String(reply.remaining);
      out['RateLimit-Reset'] = String(wait);
    }
  }
  if (legacy) {
    out['X-RateLimit-Limit'] = String(reply.limit);
    out['X-RateLimit-Remaining'] = String(reply.remaining);
    // An instant (Unix seconds), as these headers have always sent it, by this host's clock.
    out['X-RateLimit-Reset'] = String(Math.ceil(Date.now() / 1000) + wait);
  }
  if (reply.limited) out['Retry-After'] = String(wait);
  return out;
}

/**
 * The limiter's numbers as the module bounds them (in seconds: the middleware never sends MS),
 * checked where the route is declared: numbers the server refuses would refuse every request,
 * or, failing open, let every one through.
 */
function checkNumbers([kind, ...rest]) {
  const calendar = kind === 'FIXED' && Object.hasOwn(CALENDAR_SECONDS, String(rest[1]).toUpperCase());
  const [names, least] = kind === 'THROTTLE'
    ? [['maxBurst', 'count', 'period'], [0, 1, 1]]
    : [calendar ? ['limit'] : ['limit', 'period'], [1, 1]];
  if (kind === 'FIXED') checkGrid(rest.slice(2), calendar);
  names.forEach((name, i) => {
    if (!Number.isSafeInteger(rest[i]) || rest[i] < least[i]) {
      throw new TypeError(`${name} is an integer of at least ${least[i]}, not ${rest[i]}`);
    }
  });
  const buckets = rest[3];
  if (rest[2] === 'BUCKETS' && (!Number.isSafeInteger(buckets) || buckets < 2 || buckets > 1024
    || (rest[1] * 1000) % buckets !== 0)) {
    throw new TypeError(`buckets is 2 to 1024 cells that cut the period into whole milliseconds, not ${buckets}`);
  }
}

/** A fixed window's ALIGN and OFFSET words, as the module's rules hold them. */
function checkGrid(words, calendar) {
  const align = words.includes('ALIGN');
  const at = words.indexOf('OFFSET');
  if (align && calendar) {
    throw new TypeError('align is for a period in seconds: a calendar period keeps to the calendar already');
  }
  if (at >= 0) {
    const offset = words[at + 1];
    if (!Number.isSafeInteger(offset) || offset < -1439 || offset > 1439) {
      throw new TypeError(`offset is minutes ahead of UTC, -1439 to 1439, not ${offset}`);
    }
    if (!align && !calendar) throw new TypeError('offset moves a grid: give align or a calendar period');
  }
}

/** One limit of a route: a THROTTLE, FIXED or WINDOW limiter named for its policy, and `by`. */
function checked({ limiter, by = clientAddress }) {
  if (!limiter || !Array.isArray(limiter.words) || !['THROTTLE', 'FIXED', 'WINDOW'].includes(limiter.words[0])) {
    throw new TypeError("a route's limiter is throttle(…), fixed(…) or window(…)");
  }
  if (typeof limiter.key !== 'string' || !NAME.test(limiter.key)) {
    throw new TypeError(`a policy's name is letters, digits, '_', '-' and '.', not ${JSON.stringify(limiter.key)}`);
  }
  if (typeof by !== 'function') throw new TypeError('a limit\'s `by` is a function of the request');
  checkNumbers(limiter.words);
  return { limiter, by, name: limiter.key };
}

/**
 * The limits of an app's routes, decided on one Cell (its `via` and `loadLibrary` choose the
 * module or the library).
 *
 * - `prefix`: what every key starts with; a key is `<prefix><policy>:{<identity>}`, so routes
 *   that name the same policy share its count.
 * - `failOpen`: when the server fails to answer, let the request through without fields
 *   (true), or refuse it with a 503 (false, the default).
 * - `standardHeaders`: 'draft-11' (the default), 'draft-7', 'draft-6', or false;
 *   `legacyHeaders`: the X-RateLimit-* triple too.
 * - `onDenied(req, res, next)` and `onFailed(req, res, next, error)`: what answers a 429 or a
 *   503 once its fields are set; by default a short text body.
 * - `onDecision({ limiter, key, allowed, reply })`: called once a request's outcome is
 *   settled, for each limit an admitted request was charged on, or for each limit that denied
 *   a denied one (the others took nothing, or gave it back); `limiter` is the policy's name and
 *   `key` the identity it counted. A plain function, for an app's own metrics; what it throws
 *   goes to Express's error handling, after any refund is done.
 * - `log(message, error)`: where an undecided request is told of (console.warn).
 */
class RouteLimiter {
  constructor(cell, {
    prefix = 'ratelimit:', failOpen = false, standardHeaders = 'draft-11', legacyHeaders = false,
    onDenied, onFailed, onDecision, log = (message, error) => console.warn(message, error),
  } = {}) {
    if (!cell || typeof cell.all !== 'function') throw new TypeError('RouteLimiter takes a Cell');
    if (standardHeaders !== false && !STANDARD_HEADERS.includes(standardHeaders)) {
      throw new TypeError(`standardHeaders is one of ${STANDARD_HEADERS.join(', ')} or false`);
    }
    Object.assign(this, {
      cell, prefix, failOpen, standardHeaders, legacyHeaders, log, onDecision: checkedHook(onDecision),
    });
    this.policies = new Map();
    this.onDenied = onDenied || ((req, res) => res.status(429).send('Too Many Requests'));
    this.onFailed = onFailed || ((req, res) => res.status(503).send('Service Unavailable'));
  }

  /** A route's limits, as Express middleware. */
  limit(...given) {
    if (given.length === 0) throw new TypeError('a route takes at least one limit');
    if (given.length > MOST_LIMITS) throw new TypeError(`a route takes at most ${MOST_LIMITS} limits, as CL.ALL does`);
    const limits = given.map(checked);
    const names = limits.map((each) => each.name);
    if (new Set(names).size !== names.length) throw new TypeError(`a route names each policy once, not ${names}`);
    this.claim(limits);
    return (req, res, next) => {
      this.decide(req, limits).then(({ status, headers, error }) => {
        // Answered already (a timeout's middleware, say): nothing to add.
        if (res.headersSent) return undefined;
        res.set(headers);
        res.locals.rateLimitHeaders = headers;
        if (status === 429) return this.onDenied(req, res, next);
        if (status === 503) return this.onFailed(req, res, next, error);
        return next();
      }).catch(next);
    };
  }

  /**
   * Holds a policy's name to one limiter and one identity across this limiter's routes: the
   * key names neither, so a route counting the same policy by another identity could spend a
   * victim's units by sending the victim's address as its API key, and one with other numbers
   * would find a key of another shape.
   */
  claim(limits) {
    for (const { name, limiter, by } of limits) {
      const held = this.policies.get(name);
      const same = held && held.by === by && held.words.join(' ') === limiter.words.join(' ');
      if (held && !same) {
        throw new TypeError(`the policy ${name} is declared already, with another limiter or identity`);
      }
      this.policies.set(name, { by, words: limiter.words });
    }
  }

  /** Charges the request on every limit that applies to it, or on none. */
  async decide(req, limits) {
    const groups = new Map();
    for (const limit of limits) {
      const identity = await limit.by(req);
      if (identity === null || identity === undefined || identity === '') continue;
      const id = String(identity);
      if (!groups.has(id)) groups.set(id, []);
      groups.get(id).push(limit);
    }
    const applied = [...groups.values()].flat();
    if (applied.length === 0) return { status: null, headers: {} };
    const decided = [];
    const charged = [];
    for (const [identity, group] of groups) {
      const keyed = group.map(({ limiter, name }) => ({ ...limiter, key: `${this.prefix}${name}:{${tag(identity)}}` }));
      let replies;
      try {
        replies = await this.cell.all(keyed, { detail: true });
      } catch (error) {
        if (PROGRAMMING.some((kind) => error instanceof kind)) throw error;
        if (this.failOpen) {
          // What was taken stays taken: the request goes on, as if every limit admitted.
          this.log('rate limits undecided, the request let through:', error);
          return { status: null, headers: {} };
        }
        this.log('rate limits undecided, the request refused (503):', error);
        await this.giveBack(charged);
        return { status: 503, headers: {}, error };
      }
      group.forEach((limit, i) => decided.push([limit, replies[i], identity]));
      if (replies.some((reply) => reply.limited)) {
        await this.giveBack(charged);
        break;
      }
      charged.push(keyed);
    }
    this.tell(decided);
    const [bound, reply] = binding(decided);
    const headers = fields(applied, bound, reply, this.standardHeaders, this.legacyHeaders);
    return { status: reply.limited ? 429 : null, headers };
  }

  /** Tells `onDecision` of what a request was charged on, or of what denied it. */
  tell(decided) {
    if (!this.onDecision) return;
    const denied = decided.some(([, reply]) => reply.limited);
    for (const [limit, reply, identity] of decided) {
      if (reply.limited || !denied) {
        this.onDecision({
          limiter: limit.name, key: identity, allowed: !reply.limited, reply,
        });
      }
    }
  }

  /** Refunds what earlier identities' calls took; a refund that fails is logged. */
  async giveBack(charged) {
    for (const keyed of charged) {
      try {
        await this.cell.all(keyed, { refund: true });
      } catch (error) {
        this.log('a refund of rate limits failed:', error);
      }
    }
  }
}

module.exports = {
  RouteLimiter, clientAddress, header, user, binding, fields, quota,
};
