// An Express app limited to 3 a minute by RateLimiterCell, decided by the module (GCRA): the
// app docs/clients.md installs, compiled with tsc --strict and run by scripts/install_check.sh.
import express from 'express';
import Redis from 'ioredis';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { ModuleMissingError, RateLimiterCell } from 'redis-cell';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
const limiter = new RateLimiterCell({ storeClient: redis, points: 3, duration: 60, algorithm: 'gcra' });

const app = express();
app.use((req, res, next) => {
  limiter.consume(req.ip ?? 'anonymous')
    .then(() => next())
    .catch((rejection: RateLimiterRes | Error) => {
      // An Error is a failure (ModuleMissingError, or the server's), not a denial.
      if (rejection instanceof ModuleMissingError) console.error(rejection.message);
      if (rejection instanceof Error) return next(rejection);
      res.set('Retry-After', String(Math.ceil(rejection.msBeforeNext / 1000))).status(429).end();
    });
});
app.get('/', (_req, res) => { res.send('ok'); });

const server = app.listen(Number(process.env.PORT ?? 3000), () => console.log('listening'));
process.on('SIGTERM', () => { server.close(); redis.disconnect(); });
