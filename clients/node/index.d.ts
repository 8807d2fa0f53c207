import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/** RateLimiterRedis's options, and the algorithm. */
export type RateLimiterCellOptions = ConstructorParameters<typeof RateLimiterRedis>[0] & {
  /** 'fixed' (the default: RateLimiterRedis's fixed window), 'gcra' or 'window'. */
  algorithm?: 'fixed' | 'gcra' | 'window';
};

export interface CellConsumeOptions {
  [key: string]: unknown;
  /** Wait in the server up to this many ms (0: as long as it takes) for the points to fit. */
  waitMs?: number;
}

export class RateLimiterCell extends RateLimiterRedis {
  constructor(opts: RateLimiterCellOptions);
  readonly algorithm: 'fixed' | 'gcra' | 'window';
  /** RateLimiterRedis's consume; with `waitMs`, waits in the server for the points to fit. */
  consume(key: string | number, pointsToConsume?: number, options?: CellConsumeOptions): Promise<RateLimiterRes>;
}

/** The server has not loaded the redis-cell module: its message says how to load it. */
export class ModuleMissingError extends Error {
  constructor(cause?: Error);
  readonly name: 'ModuleMissingError';
}
