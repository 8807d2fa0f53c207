"""The sync half: limits' ``RedisStorage`` on a server with the module, and the strategies
that decide in it."""

from __future__ import annotations

from typing import Optional, Tuple

from limits import strategies
from limits.storage import (
    MemoryStorage,
    RedisClusterStorage,
    RedisSentinelStorage,
    RedisStorage,
)
from limits.util import WindowStats

from . import core
from .. import routing


class CellStorage:
    """What a storage on a server with the module (or its library) adds to limits' Redis
    storage of the same kind (a server, a cluster, a sentinel's primary): the limiters, the
    moving window's stats, and a health check that asks for them. ``buckets`` (2 to 1024, 60
    unless given) bounds the cells of the ``sliding-window-buckets`` strategy: each limit gets
    the largest number up to it that divides its period in milliseconds. ``via`` and
    ``load_library`` are :class:`~redis_cell.Client`'s."""

    def __init__(self, uri: str, buckets: int = core.MOST_BUCKETS, via: str = "auto",
                 load_library: bool = True, ban: Optional[int] = None, **options) -> None:
        self.buckets = core.check_buckets(buckets)
        self.ban = core.check_ban(ban)
        routing.check_options(via, load_library)
        super().__init__(uri.removeprefix("cell+"), **options)
        self.lua_cell_moving_window = self.storage.register_script(core.MOVING_WINDOW_SCRIPT)
        self.calls = routing.Router(self.storage, via, load_library)

    def cell(self, words) -> list:
        """One limiter's call; its errors raised as limits raises a storage's, a server with
        neither the module nor its library's as
        :class:`~redis_cell.errors.ModuleMissingError`."""
        try:
            return self.calls(*words)
        except core.caught(self.base_exceptions) as error:
            raise core.failure(error, self.wrap_exceptions) from error

    def moving_window(self, key: str, limit: int, period_ms: int, options=()) -> list:
        """The moving window's script's reply: on the module the script, on the library its
        two calls."""
        try:
            if self.calls.route().kind == routing.MODULE:
                return self.lua_cell_moving_window([key], [limit, period_ms, *options])
        except core.caught(self.base_exceptions) as error:
            raise core.failure(error, self.wrap_exceptions) from error
        peek = self.cell(core.moving_window_peek(key, limit, period_ms, options))
        oldest = core.moving_window_oldest(key, limit, period_ms, options, peek)
        return core.moving_window_count(limit, peek, oldest and self.cell(oldest))

    def check(self) -> bool:
        """limits' health check (Flask-Limiter's fallback asks it): the server answers, and
        has the module or the library (loaded here when allowed); a server with neither is a
        broken storage, not a healthy one."""
        try:
            return bool(self.storage.ping()) and self.calls.available()
        except Exception:  # noqa: BLE001 (limits' own check answers False on any failure)
            return False

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount == 0:
            # limits acquires nothing, and says it did, even when the window is over-full.
            return True
        return core.admitted(self.cell(core.window_words(self.key_prefix, key, limit, expiry,
                                                         amount, self.ban)))

    def get_moving_window(self, key: str, limit: int, expiry: int) -> Tuple[float, int]:
        reply = self.moving_window(core.window_key(self.key_prefix, key), limit, expiry * 1000)
        return core.moving_window(reply, expiry)

    def get_bucket_window(self, key: str, limit: int, expiry: int) -> Tuple[float, int]:
        """``get_moving_window`` of the bucketed window: its oldest cell stands for the
        oldest unit."""
        period_ms = expiry * 1000
        reply = self.moving_window(core.buckets_key(self.key_prefix, key), limit, period_ms,
                                   core.buckets_option(period_ms, self.buckets))
        return core.moving_window(reply, expiry)

    def clear(self, key: str) -> None:
        self.storage.delete(*core.every_key(self.key_prefix, key))


class CellRedisStorage(CellStorage, RedisStorage):
    """limits' Redis storage, on a server with the module loaded: ``cell+redis://host:port``
    (and ``cell+rediss://``, ``cell+redis+unix://``; ``cell+valkey://``, ``cell+valkeys://``
    and ``cell+valkey+unix://`` on valkey-py, as limits' ``valkey://``), the URI limits is
    given without ``cell+``. Its moving window is ``CL.WINDOW``'s log, under
    ``<prefix>:window:``."""

    STORAGE_SCHEME = ["cell+redis", "cell+rediss", "cell+redis+unix", "cell+valkey",
                      "cell+valkeys", "cell+valkey+unix"]


class CellRedisClusterStorage(CellStorage, RedisClusterStorage):
    """limits' Redis Cluster storage with the module on every node:
    ``cell+redis+cluster://host:port[,host:port…]`` (``cell+valkey+cluster://`` on valkey-py).
    Each key is one slot's, so every command goes to its key's node."""

    STORAGE_SCHEME = ["cell+redis+cluster", "cell+valkey+cluster"]


class CellRedisSentinelStorage(CellStorage, RedisSentinelStorage):
    """limits' Sentinel storage, on a primary with the module (and its replicas):
    ``cell+redis+sentinel://host:port/service`` (``cell+valkey+sentinel://`` on valkey-py).
    Every call writes, so every call goes to the primary."""

    STORAGE_SCHEME = ["cell+redis+sentinel", "cell+valkey+sentinel"]


class _DecidedByTheModule:
    """``hit`` and ``test`` as one command of the module's, which ``_cell`` makes, on a
    :class:`CellStorage`; limits' own elsewhere."""

    # A hit of 0 opens a fixed window in limits (INCRBY 0, then EXPIRE), where the module's
    # peek opens nothing: limits' own script keeps that exact.
    _zero_hit_in_limits = False

    def hit(self, item, *identifiers, cost: int = 1) -> bool:
        on_cell = isinstance(self.storage, CellStorage)
        if not on_cell or (cost == 0 and self._zero_hit_in_limits):
            return super().hit(item, *identifiers, cost=cost)
        return self._cell(item, identifiers, cost, dry_run=False)[0]

    def test(self, item, *identifiers, cost: int = 1) -> bool:
        if not isinstance(self.storage, CellStorage):
            return super().test(item, *identifiers, cost=cost)
        return self._cell(item, identifiers, cost, dry_run=True)[0]


class FixedWindowRateLimiter(_DecidedByTheModule, strategies.FixedWindowRateLimiter):
    """limits' fixed window; on a :class:`CellStorage` each hit is one ``CL.FIXED``
    that counts denied hits, as limits' own ``incr`` then compare does, on the same keys."""

    _zero_hit_in_limits = True

    def _cell(self, item, identifiers, cost: int, dry_run: bool):
        return core.decision(self.storage.cell(core.fixed_words(
            self.storage.key_prefix, item.key_for(*identifiers), item.amount,
            item.get_expiry(), cost, dry_run, self.storage.ban)), unit_ms=1000)

    def get_window_stats(self, item, *identifiers) -> WindowStats:
        if not isinstance(self.storage, CellStorage):
            return super().get_window_stats(item, *identifiers)
        _, remaining, reset_after_ms = self._cell(item, identifiers, 0, dry_run=True)
        return WindowStats(core.window_stats_reset(reset_after_ms), remaining)


class SlidingWindowBucketsRateLimiter(_DecidedByTheModule,
                                      strategies.MovingWindowRateLimiter):
    """At most ``amount`` in the last n cells of ``window / n``: on a
    :class:`CellStorage`, ``CL.WINDOW … BUCKETS n``, n counters a key whatever the
    traffic. Elsewhere (Flask-Limiter's in-memory fallback) it is limits' exact moving
    window, which admits no more than any n would."""

    def _cell(self, item, identifiers, cost: int, dry_run: bool):
        return core.decision(self.storage.cell(core.buckets_words(
            self.storage.key_prefix, item.key_for(*identifiers), item.amount,
            item.get_expiry(), self.storage.buckets, cost, dry_run,
            self.storage.ban)))

    def get_window_stats(self, item, *identifiers) -> WindowStats:
        """As the moving window's: the reset is when the oldest unit's cell leaves."""
        if not isinstance(self.storage, CellStorage):
            return super().get_window_stats(item, *identifiers)
        start, count = self.storage.get_bucket_window(item.key_for(*identifiers), item.amount,
                                                      item.get_expiry())
        return WindowStats(start + item.get_expiry(), item.amount - count)


class GCRARateLimiter(strategies.RateLimiter):
    """``amount`` per window as GCRA: bursts of up to ``amount``, refilled one unit every
    ``window / amount``, with no boundary at which twice the limit gets through."""

    def __init__(self, storage) -> None:
        if not isinstance(storage, (CellStorage, MemoryStorage)):
            raise NotImplementedError(
                "the gcra strategy needs a cell+redis:// or memory:// storage, not "
                f"{type(storage).__name__}"
            )
        super().__init__(storage)

    def _decide(self, item, identifiers, cost: int, dry_run: bool):
        key = item.key_for(*identifiers)
        if isinstance(self.storage, CellStorage):
            return core.decision(self.storage.cell(core.gcra_words(
                self.storage.key_prefix, key, item.amount, item.get_expiry(), cost, dry_run,
                self.storage.ban)))
        return core.in_memory(self.storage).decide(key, item.amount, item.get_expiry(), cost,
                                                   dry_run)

    def hit(self, item, *identifiers, cost: int = 1) -> bool:
        return self._decide(item, identifiers, cost, dry_run=False)[0]

    def test(self, item, *identifiers, cost: int = 1) -> bool:
        return self._decide(item, identifiers, cost, dry_run=True)[0]

    def get_window_stats(self, item, *identifiers) -> WindowStats:
        """What remains, and when the next unit comes back (now, when none is taken):
        Flask-Limiter's Retry-After is then the wait for one more request."""
        admitted, remaining, reset_after_ms = self._decide(item, identifiers, 0, dry_run=True)
        # A look is denied only by a ban: nothing comes back before it ends.
        next_unit_ms = reset_after_ms if not admitted else core.gcra_next_unit_ms(
            item.amount, item.get_expiry(), remaining, reset_after_ms)
        return WindowStats(core.window_stats_reset(next_unit_ms), remaining)

    def clear(self, item, *identifiers) -> None:
        key = item.key_for(*identifiers)
        if isinstance(self.storage, CellStorage):
            self.storage.clear(key)
        else:
            core.in_memory(self.storage).clear(key)


strategies.STRATEGIES["gcra"] = GCRARateLimiter
strategies.STRATEGIES["fixed-window"] = FixedWindowRateLimiter
strategies.STRATEGIES["sliding-window-buckets"] = SlidingWindowBucketsRateLimiter
