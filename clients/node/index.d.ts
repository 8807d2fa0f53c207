import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/** RateLimiterRedis's options, and the algorithm. */
export type RateLimiterCellOptions = ConstructorParameters<typeof RateLimiterRedis>[0] & {
  /** 'fixed' (the default: RateLimiterRedis's fixed window), 'gcra' or 'window'. */
  algorithm?: 'fixed' | 'gcra' | 'window';
  /**
   * 'auto' (the default): the module where the server has it, else the Functions library;
   * 'module' or 'library' forces either.
   */
  via?: 'auto' | 'module' | 'library';
  /** Load the library where it is missing or older than the adapter (true by default). */
  loadLibrary?: boolean;
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

/** The server's library is older than the adapter, which was told not to replace it. */
export class LibraryTooOldError extends Error {
  constructor(theirs: string, ours: string);
  readonly name: 'LibraryTooOldError';
}
