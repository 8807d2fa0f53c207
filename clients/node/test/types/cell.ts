// Compiled by `tsc --strict --noEmit` (test/types.test.js): the typed client as a TypeScript
// user calls it, on ioredis and on node-redis. A wrong type here fails the compile.

import { rateLimit } from 'express-rate-limit';
import Redis from 'ioredis';
import { createClient } from 'redis';
import {
  Cell, CellStore, Decided, Reply, RateLimiterCell, RouteLimiter, ModuleMissingError, commands, header, throttle, fixed,
  window, lease, Period,
} from 'redis-cell';
import express from 'express';

export async function calls(): Promise<void> {
  const cell = new Cell(new Redis(), { via: 'auto', loadLibrary: true });
  const byNodeRedis = new Cell(createClient(), { via: 'library' });
  const counted = new Cell(new Redis(), {
    onDecision: (decided: Decided) => {
      const limiter: string = decided.limiter;
      const outcome: 'allowed' | 'denied' = decided.allowed ? 'allowed' : 'denied';
      void [limiter, outcome, decided.key, decided.reply];
    },
  });
  void counted;

  const reply: Reply = await cell.throttle('user', 15, 30, 60, { quantity: 2, ms: true, block: 100 });
  const allowed: boolean = reply.allowed;
  const retry: number | null = reply.retryAfter;
  const reset: number = reply.resetAfter;
  await cell.fixed('f', 10, 60, { countDenied: true, refund: false, dryRun: true, align: true });
  const month: Period = 'MONTH';
  await cell.fixed('quota', 10000, month, { offset: -300 });
  await cell.all([fixed('q', 5, 'DAY', { offset: 60 }), fixed('h', 2, 3600, { align: true })]);
  await byNodeRedis.window('w', 10, 60, { buckets: 6, quantity: 1n });
  await cell.lease('pool', 3, 60, 'job:1', { ms: true, block: 0 });
  const released: boolean = await cell.release('pool', 'job:1');
  const [first] = await cell.holders('pool', { ms: true });
  const holder: string = first.holder;
  await cell.smooth('api', 2, 1, { warmup: 1, cold: 5, dryRun: true });
  const each: Reply[] = await cell.all([throttle('a', 1, 2, 3), fixed('b', 1, 2), window('c', 1, 2, { buckets: 2 }), lease('d', 1, 2)], { detail: true, holder: 'h' });
  const binding: Reply = await cell.all([fixed('b', 1, 2)], { quantity: 3 });
  const words = commands.smooth('k', 1, 1, { burst: 2 });
  const limiter = new RateLimiterCell({ storeClient: new Redis(), points: 5, duration: 60, algorithm: 'gcra', via: 'module' });
  const error = new ModuleMissingError();
  // The store is one express-rate-limit takes.
  const middleware = rateLimit({ windowMs: 60000, limit: 5, store: new CellStore({ client: new Redis(), prefix: 'rl:' }) });

  // @ts-expect-error: CL.SMOOTH gives nothing back.
  await cell.smooth('api', 2, 1, { refund: true });
  // @ts-expect-error: a reply's fields are read-only.
  reply.remaining = 1;

  const app = express();
  const routes = new RouteLimiter(cell, {
    failOpen: true, standardHeaders: 'draft-11', legacyHeaders: false, onDecision: (decided: Decided) => void decided.allowed,
  });
  app.get('/', routes.limit({ limiter: throttle('burst', 9, 10, 1) }, { limiter: fixed('daily', 1000, 86400), by: header('x-api-key') }));
  // @ts-expect-error: no such draft.
  void new RouteLimiter(cell, { standardHeaders: 'draft-9' });

  void [allowed, retry, reset, released, holder, each, binding, words, limiter, error, middleware];
}
