"""The module as a storage and a strategy of the ``limits`` library (Flask-Limiter, SlowAPI).

Importing this module registers:

- the storage schemes ``cell+redis://``, ``cell+rediss://`` and ``cell+redis+unix://``, as
  :class:`CellRedisStorage`, limits' ``RedisStorage`` on the same server;
- a strategy named ``"gcra"`` in ``limits.strategies.STRATEGIES``, :class:`GCRARateLimiter`:
  ``amount`` per window as GCRA, with bursts of ``amount``, decided by ``CL.THROTTLE`` on a
  :class:`CellRedisStorage`, and by the same algorithm in process on limits'
  ``MemoryStorage`` (Flask-Limiter's in-memory fallback builds
  ``STRATEGIES[name](MemoryStorage())``).

The other strategies run as limits runs them, on the same connection (issue 21 moves them
onto the module next). Each algorithm keeps its keys under a prefix of its own: a GCRA key is
``<key_prefix>:gcra:<limits' key>``.
"""

from __future__ import annotations

import threading
import time
from typing import Dict

from limits.storage import MemoryStorage, RedisStorage
from limits.strategies import STRATEGIES, RateLimiter
from limits.util import WindowStats

NANOS = 1_000_000_000
MILLIS = 1_000_000


class CellRedisStorage(RedisStorage):
    """limits' Redis storage, on a server with the module loaded: ``cell+redis://host:port``
    (and ``cell+rediss://``, ``cell+redis+unix://``), the URI redis-py is given without
    ``cell+``."""

    STORAGE_SCHEME = ["cell+redis", "cell+rediss", "cell+redis+unix"]

    def __init__(self, uri: str, **options) -> None:
        super().__init__(uri.removeprefix("cell+"), **options)

    def gcra(self, key: str, amount: int, expiry: int, cost: int, dry_run: bool):
        """``CL.THROTTLE`` with a burst of ``amount`` refilling ``amount`` per ``expiry``
        seconds: ``(admitted, remaining, reset_after_ms)``."""
        words = [
            "CL.THROTTLE",
            f"{self.key_prefix}:gcra:{key}",
            amount - 1,
            amount,
            expiry * 1000,
            cost,
            "MS",
        ]
        if dry_run:
            words.append("DRYRUN")
        limited, _, remaining, _, reset_after = self.storage.execute_command(*words)
        return limited == 0, int(remaining), int(reset_after)

    def clear_gcra(self, key: str) -> None:
        self.storage.delete(f"{self.key_prefix}:gcra:{key}")


class _MemoryGcra:
    """The same algorithm as ``CL.THROTTLE``, in process, for limits' ``MemoryStorage``: the
    theoretical arrival time of each key, in nanoseconds, under a lock."""

    # Drained keys are dropped when the table has doubled since the last sweep: a sweep per
    # call would cost every hit the whole table.
    SWEEP_FROM = 1024

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tats: Dict[str, int] = {}
        self.sweep_at = self.SWEEP_FROM

    def decide(self, key: str, amount: int, expiry: int, cost: int, dry_run: bool):
        interval = expiry * NANOS // amount
        tolerance = interval * amount
        now = time.time_ns()
        with self.lock:
            tat = max(self.tats.get(key, now), now)
            new_tat = tat + interval * cost
            admitted = new_tat - tolerance <= now
            if admitted and cost > 0 and not dry_run:
                self.tats[key] = new_tat
            held = (new_tat if admitted else tat) - now
            if len(self.tats) >= self.sweep_at:
                # Drained keys go, as the module's expire.
                for stale in [k for k, t in self.tats.items() if t <= now]:
                    del self.tats[stale]
                self.sweep_at = max(self.SWEEP_FROM, 2 * len(self.tats))
        remaining = min(max(tolerance - held, 0) // interval, amount)
        return admitted, remaining, -(-held // MILLIS)

    def clear(self, key: str) -> None:
        with self.lock:
            self.tats.pop(key, None)


_memory_lock = threading.Lock()


def _in_memory(storage: MemoryStorage) -> _MemoryGcra:
    """The storage's own TATs, kept on it, so that they live and go with it."""
    with _memory_lock:
        gcra = getattr(storage, "_redis_cell_gcra", None)
        if gcra is None:
            gcra = _MemoryGcra()
            storage._redis_cell_gcra = gcra
        return gcra


class GCRARateLimiter(RateLimiter):
    """``amount`` per window as GCRA: bursts of up to ``amount``, refilled one unit every
    ``window / amount``, with no boundary at which twice the limit gets through."""

    def __init__(self, storage) -> None:
        if not isinstance(storage, (CellRedisStorage, MemoryStorage)):
            raise NotImplementedError(
                f"the gcra strategy needs a cell+redis:// or memory:// storage, not {type(storage).__name__}"
            )
        super().__init__(storage)

    def _decide(self, item, identifiers, cost: int, dry_run: bool):
        key = item.key_for(*identifiers)
        if isinstance(self.storage, CellRedisStorage):
            return self.storage.gcra(key, item.amount, item.get_expiry(), cost, dry_run)
        return _in_memory(self.storage).decide(
            key, item.amount, item.get_expiry(), cost, dry_run
        )

    def hit(self, item, *identifiers, cost: int = 1) -> bool:
        return self._decide(item, identifiers, cost, dry_run=False)[0]

    def test(self, item, *identifiers, cost: int = 1) -> bool:
        return self._decide(item, identifiers, cost, dry_run=True)[0]

    def get_window_stats(self, item, *identifiers) -> WindowStats:
        """What remains, and when the next unit comes back (now, when none is taken), as
        limits' moving and sliding windows report their reset: Flask-Limiter's Retry-After
        is then the wait for one more request. The whole limit is back ``reset_after`` after
        that, one unit every ``window / amount``."""
        _, remaining, reset_after_ms = self._decide(item, identifiers, 0, dry_run=True)
        interval_ms = item.get_expiry() * 1000 / item.amount
        taken = item.amount - remaining
        next_unit_ms = max(0.0, reset_after_ms - (taken - 1) * interval_ms) if taken else 0.0
        return WindowStats(time.time() + next_unit_ms / 1000, remaining)

    def clear(self, item, *identifiers) -> None:
        key = item.key_for(*identifiers)
        if isinstance(self.storage, CellRedisStorage):
            self.storage.clear_gcra(key)
        else:
            _in_memory(self.storage).clear(key)


STRATEGIES["gcra"] = GCRARateLimiter
