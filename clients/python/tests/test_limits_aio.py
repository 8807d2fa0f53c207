"""redis_cell.limits for limits.aio: the async+cell+redis:// storage on redis-py's asyncio
client, and each strategy deciding in the module as the sync half does."""

import random
import time

import pytest
import redis
from limits import RateLimitItemPerHour, RateLimitItemPerMinute
from limits.aio import strategies as aio_strategies
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.errors import StorageError
from limits.storage import storage_from_string

import redis_cell.limits  # noqa: F401  (registers the schemes and strategies)
from redis_cell.limits import CellAsyncRedisStorage
from redis_cell.limits import aio as cell_aio

STRATEGIES = aio_strategies.STRATEGIES


@pytest.fixture
def cell(server, r):
    return storage_from_string(f"async+cell+redis://127.0.0.1:{server}")


@pytest.fixture
def plain(server, r):
    return RedisStorage(f"async+redis://127.0.0.1:{server}", implementation="redispy",
                        key_prefix="PLAIN")


async def test_the_scheme_and_the_strategies_are_registered(cell):
    assert isinstance(cell, CellAsyncRedisStorage)
    assert await cell.check()
    assert STRATEGIES["gcra"] is cell_aio.GCRARateLimiter
    assert STRATEGIES["fixed-window"] is cell_aio.FixedWindowRateLimiter


@pytest.mark.parametrize("name", ["fixed-window", "moving-window"])
async def test_each_window_decides_as_limits_own_path(name, cell, plain, r):
    # On limits' own storage, the registered fixed window is limits' own.
    ours, theirs = STRATEGIES[name](cell), STRATEGIES[name](plain)
    item = RateLimitItemPerHour(6)
    rng = random.Random(name)
    for cost in [0] + [rng.choice([0, 1, 1, 2, 3]) for _ in range(40)]:
        assert await ours.test(item, "a", cost=cost) == await theirs.test(item, "a", cost=cost)
        assert await ours.hit(item, "a", cost=cost) == await theirs.hit(item, "a", cost=cost)
        ours_stats = await ours.get_window_stats(item, "a")
        theirs_stats = await theirs.get_window_stats(item, "a")
        assert ours_stats.remaining == theirs_stats.remaining
        assert abs(ours_stats.reset_time - theirs_stats.reset_time) <= 1.5
    prefix = "LIMITS:" if name == "fixed-window" else "LIMITS:window:"
    assert r.exists(prefix + item.key_for("a"))


@pytest.mark.parametrize("backend", ["cell", "memory"])
async def test_gcra_admits_a_burst_then_one_unit_a_period(backend, cell):
    limiter = STRATEGIES["gcra"](cell if backend == "cell" else MemoryStorage())
    three = RateLimitItemPerMinute(3)
    assert await limiter.test(three, "g")
    assert [await limiter.hit(three, "g") for _ in range(4)] == [True, True, True, False]
    stats = await limiter.get_window_stats(three, "g")
    assert stats.remaining == 0
    assert 19 < stats.reset_time - time.time() <= 20
    await limiter.clear(three, "g")
    assert (await limiter.get_window_stats(three, "g")).remaining == 3


async def test_a_key_of_another_type_raises_as_limits_raises(server, r):
    item = RateLimitItemPerMinute(4)
    r.rpush(f"LIMITS:gcra:{item.key_for('typed')}", "x")
    plain = storage_from_string(f"async+cell+redis://127.0.0.1:{server}")
    wrapped = storage_from_string(f"async+cell+redis://127.0.0.1:{server}",
                                  wrap_exceptions=True)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        await STRATEGIES["gcra"](plain).hit(item, "typed")
    with pytest.raises(StorageError):
        await STRATEGIES["gcra"](wrapped).hit(item, "typed")


def test_other_storages_are_refused_by_gcra():
    with pytest.raises(NotImplementedError, match="async\\+cell\\+redis"):
        cell_aio.GCRARateLimiter(object())
