"""The asyncio half, for ``limits.aio``: its ``RedisStorage`` on redis-py's asyncio client
(``async+cell+redis://``, ``async+cell+rediss://``, ``async+cell+redis+unix://``) and the
strategies that decide in the module, as the sync half does."""

from __future__ import annotations

from typing import Optional, Tuple

from limits.aio import strategies
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.util import WindowStats

from . import core
from .. import routing


class CellAsyncRedisStorage(RedisStorage):
    """``limits.aio``'s Redis storage on a server with the module loaded, always through
    redis-py's asyncio client: ``async+cell+redis://host:port`` is limits'
    ``async+redis://host:port``. ``buckets`` as the sync storage's."""

    STORAGE_SCHEME = ["async+cell+redis", "async+cell+rediss", "async+cell+redis+unix"]

    def __init__(self, uri: str, buckets: int = core.MOST_BUCKETS, via: str = "auto",
                 load_library: bool = True, ban: Optional[int] = None, **options) -> None:
        self.buckets = core.check_buckets(buckets)
        self.ban = core.check_ban(ban)
        routing.check_options(via, load_library)
        options["implementation"] = "redispy"
        super().__init__("async+" + uri.removeprefix("async+cell+"), **options)
        self.lua_cell_moving_window = self.connection.register_script(
            core.MOVING_WINDOW_SCRIPT)
        self.calls = routing.AsyncRouter(self.connection, via, load_library)

    @property
    def connection(self):
        return self.bridge.get_connection()

    @property
    def key_prefix(self) -> str:
        return self.bridge.key_prefix

    async def cell(self, words) -> list:
        """One limiter's call, its errors raised as the sync storage's."""
        try:
            return await self.calls(*words)
        except core.caught(self.base_exceptions) as error:
            raise core.failure(error, self.wrap_exceptions) from error

    async def moving_window(self, key: str, limit: int, period_ms: int, options=()) -> list:
        """The moving window's script's reply, as the sync storage's."""
        try:
            if (await self.calls.route()).kind == routing.MODULE:
                return await self.lua_cell_moving_window(keys=[key],
                                                         args=[limit, period_ms, *options])
        except core.caught(self.base_exceptions) as error:
            raise core.failure(error, self.wrap_exceptions) from error
        peek = await self.cell(core.moving_window_peek(key, limit, period_ms, options))
        oldest = core.moving_window_oldest(key, limit, period_ms, options, peek)
        return core.moving_window_count(limit, peek, oldest and await self.cell(oldest))

    async def check(self) -> bool:
        """limits' health check: the server answers, and has the module or the library."""
        try:
            return bool(await self.connection.ping()) and await self.calls.available()
        except Exception:  # noqa: BLE001 (limits' own check answers False on any failure)
            return False

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount == 0:
            # limits acquires nothing, and says it did, even when the window is over-full.
            return True
        return core.admitted(await self.cell(core.window_words(self.key_prefix, key, limit,
                                                               expiry, amount, self.ban)))

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> Tuple[float, int]:
        reply = await self.moving_window(core.window_key(self.key_prefix, key), limit,
                                         expiry * 1000)
        return core.moving_window(reply, expiry)

    async def get_bucket_window(self, key: str, limit: int, expiry: int) -> Tuple[float, int]:
        period_ms = expiry * 1000
        reply = await self.moving_window(core.buckets_key(self.key_prefix, key), limit,
                                         period_ms, core.buckets_option(period_ms, self.buckets))
        return core.moving_window(reply, expiry)

    async def clear(self, key: str) -> None:
        await self.connection.delete(*core.every_key(self.key_prefix, key))


class _DecidedByTheModule:
    """``hit`` and ``test`` as one command of the module's, which ``_cell`` makes, on a
    :class:`CellAsyncRedisStorage`; limits' own elsewhere."""

    # A hit of 0 opens a fixed window in limits (INCRBY 0, then EXPIRE), where the module's
    # peek opens nothing: limits' own script keeps that exact.
    _zero_hit_in_limits = False

    async def hit(self, item, *identifiers, cost: int = 1) -> bool:
        on_cell = isinstance(self.storage, CellAsyncRedisStorage)
        if not on_cell or (cost == 0 and self._zero_hit_in_limits):
            return await super().hit(item, *identifiers, cost=cost)
        return (await self._cell(item, identifiers, cost, dry_run=False))[0]

    async def test(self, item, *identifiers, cost: int = 1) -> bool:
        if not isinstance(self.storage, CellAsyncRedisStorage):
            return await super().test(item, *identifiers, cost=cost)
        return (await self._cell(item, identifiers, cost, dry_run=True))[0]


class FixedWindowRateLimiter(_DecidedByTheModule, strategies.FixedWindowRateLimiter):
    """``limits.aio``'s fixed window; on a :class:`CellAsyncRedisStorage` each hit is one
    ``CL.FIXED`` that counts denied hits, on limits' own keys."""

    _zero_hit_in_limits = True

    async def _cell(self, item, identifiers, cost: int, dry_run: bool):
        return core.decision(await self.storage.cell(core.fixed_words(
            self.storage.key_prefix, item.key_for(*identifiers), item.amount,
            item.get_expiry(), cost, dry_run, self.storage.ban)), unit_ms=1000)

    async def get_window_stats(self, item, *identifiers) -> WindowStats:
        if not isinstance(self.storage, CellAsyncRedisStorage):
            return await super().get_window_stats(item, *identifiers)
        _, remaining, reset_after_ms = await self._cell(item, identifiers, 0, dry_run=True)
        return WindowStats(core.window_stats_reset(reset_after_ms), remaining)


class SlidingWindowBucketsRateLimiter(_DecidedByTheModule,
                                      strategies.MovingWindowRateLimiter):
    """The sync half's bucketed window (see
    ``redis_cell.limits.SlidingWindowBucketsRateLimiter``), for ``limits.aio``: on a
    :class:`CellAsyncRedisStorage`, ``CL.WINDOW … BUCKETS n``; elsewhere limits' moving
    window."""

    async def _cell(self, item, identifiers, cost: int, dry_run: bool):
        return core.decision(await self.storage.cell(core.buckets_words(
            self.storage.key_prefix, item.key_for(*identifiers), item.amount,
            item.get_expiry(), self.storage.buckets, cost, dry_run,
            self.storage.ban)))

    async def get_window_stats(self, item, *identifiers) -> WindowStats:
        if not isinstance(self.storage, CellAsyncRedisStorage):
            return await super().get_window_stats(item, *identifiers)
        start, count = await self.storage.get_bucket_window(
            item.key_for(*identifiers), item.amount, item.get_expiry())
        return WindowStats(start + item.get_expiry(), item.amount - count)


class GCRARateLimiter(strategies.RateLimiter):
    """The sync half's GCRA strategy (see ``redis_cell.limits.GCRARateLimiter``), for
    ``limits.aio``: ``CL.THROTTLE`` on a :class:`CellAsyncRedisStorage`, the same algorithm
    in process on ``limits.aio``'s ``MemoryStorage``."""

    def __init__(self, storage) -> None:
        if not isinstance(storage, (CellAsyncRedisStorage, MemoryStorage)):
            raise NotImplementedError(
                "the gcra strategy needs an async+cell+redis:// or async+memory:// storage, "
                f"not {type(storage).__name__}"
            )
        super().__init__(storage)

    async def _decide(self, item, identifiers, cost: int, dry_run: bool):
        key = item.key_for(*identifiers)
        if isinstance(self.storage, CellAsyncRedisStorage):
            return core.decision(await self.storage.cell(core.gcra_words(
                self.storage.key_prefix, key, item.amount, item.get_expiry(), cost, dry_run,
                self.storage.ban)))
        return core.in_memory(self.storage).decide(key, item.amount, item.get_expiry(), cost,
                                                   dry_run)

    async def hit(self, item, *identifiers, cost: int = 1) -> bool:
        return (await self._decide(item, identifiers, cost, dry_run=False))[0]

    async def test(self, item, *identifiers, cost: int = 1) -> bool:
        return (await self._decide(item, identifiers, cost, dry_run=True))[0]

    async def get_window_stats(self, item, *identifiers) -> WindowStats:
        admitted, remaining, reset_after_ms = await self._decide(item, identifiers, 0,
                                                                 dry_run=True)
        # A look is denied only by a ban: nothing comes back before it ends.
        next_unit_ms = reset_after_ms if not admitted else core.gcra_next_unit_ms(
            item.amount, item.get_expiry(), remaining, reset_after_ms)
        return WindowStats(core.window_stats_reset(next_unit_ms), remaining)

    async def clear(self, item, *identifiers) -> None:
        key = item.key_for(*identifiers)
        if isinstance(self.storage, CellAsyncRedisStorage):
            await self.storage.clear(key)
        else:
            core.in_memory(self.storage).clear(key)


strategies.STRATEGIES["gcra"] = GCRARateLimiter
strategies.STRATEGIES["fixed-window"] = FixedWindowRateLimiter
strategies.STRATEGIES["sliding-window-buckets"] = SlidingWindowBucketsRateLimiter
