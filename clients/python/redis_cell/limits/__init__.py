"""The module as storages and strategies of the ``limits`` library (Flask-Limiter, SlowAPI),
sync and asyncio.

Importing it registers:

- the storage schemes ``cell+redis://``, ``cell+rediss://`` and ``cell+redis+unix://``
  (:class:`CellRedisStorage`, limits' ``RedisStorage`` on a server with the module; with
  ``valkey`` for ``redis``, on valkey-py), ``cell+redis+cluster://``
  (:class:`CellRedisClusterStorage`) and ``cell+redis+sentinel://``
  (:class:`CellRedisSentinelStorage`), and for
  ``limits.aio`` ``async+cell+redis://``, ``async+cell+rediss://`` and
  ``async+cell+redis+unix://`` (:class:`CellAsyncRedisStorage`, on redis-py's asyncio client);
- on those storages, each strategy decided in the module, with limits' semantics:
  ``fixed-window`` on ``CL.FIXED`` (denied hits counted, on limits' own keys, so existing
  counters carry over), ``moving-window`` on ``CL.WINDOW`` (exact, O(log n) a call),
  ``sliding-window-counter`` as limits runs it;
- a strategy named ``"sliding-window-buckets"``: at most ``amount`` in the last n cells of
  ``window / n``, on ``CL.WINDOW … BUCKETS n``, n the largest divisor of the period in ms up
  to the storage option ``buckets`` (60 by default); limits' moving window on other storages;
- a strategy named ``"gcra"`` in ``limits.strategies.STRATEGIES`` and
  ``limits.aio.strategies.STRATEGIES``: ``amount`` per window as GCRA with bursts of
  ``amount``, on ``CL.THROTTLE``, and in process on limits' ``MemoryStorage`` (Flask-Limiter's
  in-memory fallback builds ``STRATEGIES[name](MemoryStorage())``).

Each algorithm keeps its keys under a prefix of its own: ``<key_prefix>:<key>`` for the fixed
window (limits' own), ``<key_prefix>:window:<key>``, ``<key_prefix>:buckets:<key>`` and
``<key_prefix>:gcra:<key>``.
"""

from .aio import CellAsyncRedisStorage
from .sync import (
    CellRedisClusterStorage,
    CellRedisSentinelStorage,
    CellRedisStorage,
    CellStorage,
    FixedWindowRateLimiter,
    GCRARateLimiter,
    SlidingWindowBucketsRateLimiter,
)

__all__ = [
    "CellAsyncRedisStorage",
    "CellRedisClusterStorage",
    "CellRedisSentinelStorage",
    "CellRedisStorage",
    "CellStorage",
    "FixedWindowRateLimiter",
    "GCRARateLimiter",
    "SlidingWindowBucketsRateLimiter",
]
