// rate-limiter-flexible is an optional peer: a project without it, which has no use for
// RateLimiterCell, still compiles these types (RateLimiterCell's base is then `any`).
// @ts-ignore
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/** A key or a holder: sent as a string. */
export type Key = string;
/** A number the client sends as its decimal digits. */
export type Integer = number | bigint;
/** A fixed window's period: a span, or a calendar's unit (its windows the calendar's). */
export type Period = Integer | 'DAY' | 'WEEK' | 'MONTH' | 'YEAR';

/**
 * `[limited, limit, remaining, retry_after, reset_after]`, and with `atMost` `granted`: the
 * units the call took (null without it). `retryAfter` is null when the call was admitted, or
 * when its quantity can never fit; waits are in the call's unit.
 */
export class Reply {
  constructor(limited: boolean, limit: number, remaining: number, retryAfter: number | null, resetAfter: number, granted?: number | null);
  readonly limited: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfter: number | null;
  readonly resetAfter: number;
  readonly granted: number | null;
  readonly allowed: boolean;
  static of(values: unknown[]): Reply;
}

/** Where the calls go, for the client and the adapter alike. */
export interface RoutingOptions {
  /**
   * 'auto' (the default): the module where the server has it, else the Functions library;
   * 'module' or 'library' forces either.
   */
  via?: 'auto' | 'module' | 'library';
  /** Load the library where it is missing or older than this package (true by default). */
  loadLibrary?: boolean;
}

interface Waits {
  /** Milliseconds to wait in the server (0: as long as it takes); the module only. */
  block?: Integer;
}
interface Looks {
  /** Answer what the call would, and change nothing. */
  dryRun?: boolean;
}
interface Bans {
  /** When the limiter itself denies the call, lock the key out this long (seconds, or ms
   * with `ms`); the module only. */
  ban?: Integer;
}
interface InMilliseconds {
  /** The period and the waits in the reply are in milliseconds. */
  ms?: boolean;
}
interface Takes {
  /** Units this call takes (default 1); 0 only looks. */
  quantity?: Integer;
  /** Give the units back instead of taking them. */
  refund?: boolean;
  /** Take the most units up to quantity that fit now; the reply's `granted` says how many. */
  atMost?: boolean;
}

export interface ThrottleOptions extends Takes, InMilliseconds, Looks, Waits, Bans {}
export interface FixedOptions extends ThrottleOptions {
  /** Count a denied call's units too, as INCR then compare does. */
  countDenied?: boolean;
  /** Lay the windows on the clock: the multiples of the period since the Unix epoch. */
  align?: boolean;
  /** With `align` or a calendar period, in the local time this many minutes ahead of UTC
   * (-1439 to 1439). */
  offset?: Integer;
}
export interface WindowOptions extends ThrottleOptions {
  /** Count in this many cells of period / n (2 to 1024) instead of exactly. */
  buckets?: Integer;
}
export interface LeaseOptions extends InMilliseconds, Looks, Waits {}
export interface HoldersOptions extends InMilliseconds {}
export interface SmoothOptions extends InMilliseconds, Looks, Waits, Bans {
  /** Permits this call takes (default 1, at most 2147483647); 0 only looks. */
  quantity?: Integer;
  /** Idle time stored as free permits, Guava's maxBurstSeconds (default 1 second). */
  burst?: Integer;
  /** Warm up as Guava's SmoothWarmingUp over this span. */
  warmup?: Integer;
  /** With warmup: how many times slower than stable a cold limiter starts (default 3). */
  cold?: Integer;
}
export interface AllOptions extends Takes, InMilliseconds, Looks, Waits, Bans {
  /** The LEASE limiters' holder. */
  holder?: Key;
}

/** One limiter of CL.ALL: its key and its words. */
export interface Limiter {
  readonly key: Key;
  readonly words: readonly (string | Integer)[];
}
export function throttle(key: Key, maxBurst: Integer, count: Integer, period: Integer): Limiter;
export function fixed(key: Key, limit: Integer, period: Period, options?: { align?: boolean; offset?: Integer }): Limiter;
export function window(key: Key, limit: Integer, period: Integer, options?: { buckets?: Integer }): Limiter;
export function lease(key: Key, limit: Integer, leaseTime: Integer): Limiter;

/** A lease's holder and its time left, in the call's unit. */
export interface Held {
  holder: string;
  left: number;
}

/** A command's words: its name, its arguments. */
export type Words = (string | Integer | Key)[];

/** Each command's words, as the client sends them. */
export const commands: {
  throttle(key: Key, maxBurst: Integer, count: Integer, period: Integer, options?: ThrottleOptions): Words;
  fixed(key: Key, limit: Integer, period: Period, options?: FixedOptions): Words;
  window(key: Key, limit: Integer, period: Integer, options?: WindowOptions): Words;
  lease(key: Key, limit: Integer, leaseTime: Integer, holder: Key, options?: LeaseOptions): Words;
  release(key: Key, holder: Key, options?: {}): Words;
  holders(key: Key, options?: HoldersOptions): Words;
  smooth(key: Key, permits: Integer, period: Integer, options?: SmoothOptions): Words;
  all(limiters: readonly Limiter[], options?: AllOptions & { detail?: boolean }): Words;
  top(options?: TopOptions): Words;
  ban(key: Key, span: Integer, options?: InMilliseconds): Words;
  unban(key: Key): Words;
};

export interface TopOptions {
  /** How many keys to list (default 10). */
  count?: Integer;
}

/** One of the keys a node denied most: its denied calls, and the most that may exceed the truth. */
export interface Denied {
  key: string;
  denied: number;
  error: number;
}

/**
 * One decision, as an `onDecision` hook is told of it. From a Cell: `limiter` is the
 * command's word and `key` the call's key (for 'all', its limiters' keys), `reply` its Reply
 * (for 'all' with `detail`, each limiter's). From a RouteLimiter: one for each limit a request
 * was charged on, or that denied it, `limiter` the policy's name and `key` the identity.
 */
export interface Decided {
  readonly limiter: string;
  readonly key: Key | Key[];
  readonly allowed: boolean;
  readonly reply: Reply | Reply[];
}

export interface CellOptions extends RoutingOptions {
  /**
   * Called after every call that decides (not a refund, a dry run or a peek), before its
   * promise settles; not async. What it throws, the call rejects with.
   */
  onDecision?: (decided: Decided) => void;
}

/**
 * The module's commands over an ioredis or node-redis client, a server's or a cluster's,
 * routed to the module or the Functions library.
 */
export class Cell {
  constructor(client: object, options?: CellOptions);
  readonly client: object;
  throttle(key: Key, maxBurst: Integer, count: Integer, period: Integer, options?: ThrottleOptions): Promise<Reply>;
  fixed(key: Key, limit: Integer, period: Period, options?: FixedOptions): Promise<Reply>;
  window(key: Key, limit: Integer, period: Integer, options?: WindowOptions): Promise<Reply>;
  lease(key: Key, limit: Integer, leaseTime: Integer, holder: Key, options?: LeaseOptions): Promise<Reply>;
  /** Whether the holder held a live lease, now given back. */
  release(key: Key, holder: Key): Promise<boolean>;
  holders(key: Key, options?: HoldersOptions): Promise<Held[]>;
  smooth(key: Key, permits: Integer, period: Integer, options?: SmoothOptions): Promise<Reply>;
  /** The binding limiter's reply, or with `detail` each limiter's in key order. */
  all(limiters: readonly Limiter[], options: AllOptions & { detail: true }): Promise<Reply[]>;
  all(limiters: readonly Limiter[], options?: AllOptions & { detail?: false }): Promise<Reply>;
  all(limiters: readonly Limiter[], options?: AllOptions & { detail?: boolean }): Promise<Reply | Reply[]>;
  /** The keys this node denied most over this minute and the one before: the module's alone. */
  top(options?: TopOptions): Promise<Denied[]>;
  /** Lock `key` out for `span` (seconds, or ms with `ms`); the ban's end. The module only. */
  ban(key: Key, span: Integer, options?: InMilliseconds): Promise<number>;
  /** Lift `key`'s ban; whether one held. The module only. */
  unban(key: Key): Promise<boolean>;
  /** A command's words, sent as routed; its raw reply. */
  command(words: Words): Promise<unknown>;
}

/** RateLimiterRedis's options, the algorithm and the routing. */
export type RateLimiterCellOptions = ConstructorParameters<typeof RateLimiterRedis>[0] & RoutingOptions & {
  /** 'fixed' (the default: RateLimiterRedis's fixed window), 'gcra' or 'window'. */
  algorithm?: 'fixed' | 'gcra' | 'window';
};

export interface CellConsumeOptions {
  [key: string]: unknown;
  /**
   * Wait in the server up to this many ms (0: as long as it takes) for the points to fit;
   * the module only (the library refuses it).
   */
  waitMs?: number;
}

export class RateLimiterCell extends RateLimiterRedis {
  constructor(opts: RateLimiterCellOptions);
  readonly algorithm: 'fixed' | 'gcra' | 'window';
  /** RateLimiterRedis's consume; with `waitMs`, waits in the server for the points to fit. */
  consume(key: string | number, pointsToConsume?: number, options?: CellConsumeOptions): Promise<RateLimiterRes>;
}

/**
 * The server has loaded neither the redis-cell module nor its library: its message says
 * what to load and how.
 */
export class ModuleMissingError extends Error {
  constructor(cause?: Error);
  readonly name: 'ModuleMissingError';
}

/** A command only the module answers (CL.TOP), called where the calls go to the library. */
export class NeedsModuleError extends Error {
  constructor(command: string);
  readonly name: 'NeedsModuleError';
}

/** The server's library is older than the adapter, which was told not to replace it. */
export class LibraryTooOldError extends Error {
  constructor(theirs: string, ours: string);
  readonly name: 'LibraryTooOldError';
}

/** The Functions library this package ships, as `FUNCTION LOAD` takes it, to load by hand. */
export function librarySource(): string;
/** The library's script form, as `EVAL` takes it: `EVAL script numkeys key… name arg…`. */
export function scriptSource(): string;

/** express-rate-limit's Store, counting in Redis with CL.FIXED … COUNTDENIED. */
export class CellStore {
  constructor(options: RoutingOptions & {
    /** An ioredis or node-redis client, a server's or a cluster's. */
    client: object;
    /** What each key starts with (default 'rl:'). */
    prefix?: string;
  });
  readonly prefix: string;
  readonly localKeys: false;
  init(options: { windowMs: number; limit: unknown }): void;
  increment(key: string): Promise<{ totalHits: number; resetTime: Date | undefined }>;
  decrement(key: string): Promise<void>;
  get(key: string): Promise<{ totalHits: number; resetTime: Date | undefined } | undefined>;
  resetKey(key: string): Promise<void>;
}

/** A function of the request that names the identity a limit counts; null: not counted. */
export type IdentityOf = (req: any) => string | null | undefined | Promise<string | null | undefined>;

/** One limit of a route: a throttle, fixed or window limiter named for its policy, and `by`. */
export interface RouteLimit {
  limiter: Limiter;
  /** The identity it counts (default: the client's address). */
  by?: IdentityOf;
}

/** The client's address, as Express reads it (`req.ip`). */
export const clientAddress: IdentityOf;
/** The request's header `name`. */
export function header(name: string): IdentityOf;
/** The user an authentication middleware left on `req.user` (its `id`). */
export const user: IdentityOf;

export interface RouteLimiterOptions {
  /** What every key starts with (default 'ratelimit:'). */
  prefix?: string;
  /** Let a request through when the server fails to answer (default false: a 503). */
  failOpen?: boolean;
  /** 'draft-11' (the default), 'draft-7', 'draft-6', or false. */
  standardHeaders?: 'draft-6' | 'draft-7' | 'draft-11' | false;
  /** The X-RateLimit-* triple too. */
  legacyHeaders?: boolean;
  /** What answers a 429, once its fields are set. */
  onDenied?: (req: any, res: any, next: (error?: unknown) => void) => void;
  /** What answers a 503, once decided. */
  onFailed?: (req: any, res: any, next: (error?: unknown) => void, error: unknown) => void;
  /** Where an undecided request is told of (console.warn). */
  log?: (message: string, error: unknown) => void;
  /**
   * Called once a request's outcome is settled: for each limit an admitted request was charged
   * on, or each limit that denied a denied one; the policy's name, the identity. Not async.
   */
  onDecision?: (decided: Decided) => void;
}

/** Express middleware for a route's limits, decided on one Cell. */
export class RouteLimiter {
  constructor(cell: Cell, options?: RouteLimiterOptions);
  /** A route's limits, as Express middleware. */
  limit(...limits: RouteLimit[]): (req: any, res: any, next: (error?: unknown) => void) => void;
}

/** A batched limiter's answer: waits and instants in ms, on its clock. */
export interface Decision {
  readonly allowed: boolean;
  /** When denied, how long until a unit may fit (null when unknown or never). */
  readonly retryAfter: number | null;
  /** Decided without a round trip: from units held, the deny cache, or a fallback. */
  readonly local: boolean;
  /** When allowed, the instant its units were spent. */
  readonly at: number | null;
}

export interface BatchOptions {
  /** The limiter's period is in milliseconds (default: seconds). */
  ms?: boolean;
  /** H, in ms: a unit is spent before H after its request was sent (default: a tenth of the period, at most 1000). */
  horizon?: number;
  /** How often, in ms, a batch aims to refill at the demand seen (default: H / 2). */
  refresh?: number;
  /** The most of the server's remaining one request takes (default 0.25). */
  share?: number;
  /** The most units one request asks for. */
  maxBatch?: number;
  /** Units a second allowed locally while the server is away (default: none, deny). */
  fallbackRate?: number | null;
  /** A monotonic clock in ms (default: performance.now). */
  clock?: () => number;
}

/** One limit for a whole fleet: units taken with ATMOST and spent locally (docs/fleet.md). */
export class Batched {
  constructor(cell: Cell, limiter: Limiter, options?: BatchOptions);
  /** Requests to the server made so far, grants and refunds. */
  readonly calls: number;
  /** Units sent back as they lapsed or on close, whether or not the server's answer came. */
  readonly givenBack: number;
  acquire(n?: number): Promise<Decision>;
  /** Gives back every unit held. */
  close(): Promise<void>;
}
