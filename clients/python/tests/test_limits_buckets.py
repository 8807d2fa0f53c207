"""redis_cell.limits' "sliding-window-buckets": limits' hit, test and stats on
CL.WINDOW … BUCKETS n, sync and asyncio, n from the period and the storage's ``buckets``."""

import math
import re
import time

import pytest
import redis
from limits import (RateLimitItemPerDay, RateLimitItemPerMinute, RateLimitItemPerSecond,
                    strategies as limits_strategies)
from limits.aio import strategies as aio_strategies
from limits.aio.storage import MemoryStorage as AsyncMemoryStorage
from limits.errors import StorageError
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import STRATEGIES

import redis_cell.limits
from redis_cell.limits import SlidingWindowBucketsRateLimiter, aio as cell_aio, core

NAME = "sliding-window-buckets"


@pytest.fixture
def uri(server, r):
    return f"cell+redis://127.0.0.1:{server}"


def cells_of(call, key: str) -> int:
    """The n a key holds, as the module names it when an exact call is refused there."""
    with pytest.raises(redis.ResponseError, match="holds a sliding window of BUCKETS") as no:
        call("CL.WINDOW", key, 1, 1)
    return int(re.search(r"BUCKETS (\d+)", str(no.value)).group(1))


def key_of(item, identifier: str) -> str:
    return "LIMITS:buckets:" + item.key_for(identifier)


def test_the_strategy_is_registered_beside_limits_own():
    assert STRATEGIES[NAME] is SlidingWindowBucketsRateLimiter
    assert redis_cell.limits.SlidingWindowBucketsRateLimiter is SlidingWindowBucketsRateLimiter
    assert aio_strategies.STRATEGIES[NAME] is cell_aio.SlidingWindowBucketsRateLimiter
    assert STRATEGIES["sliding-window-counter"] is limits_strategies.SlidingWindowCounterRateLimiter


def test_hit_test_and_stats_count_the_cells(uri, r, call):
    limiter = STRATEGIES[NAME](storage_from_string(uri))
    three = RateLimitItemPerMinute(3)
    started = time.time()
    assert limiter.test(three, "u")
    assert [limiter.hit(three, "u") for _ in range(4)] == [True, True, True, False]
    assert not limiter.test(three, "u")
    assert limiter.test(three, "u", cost=0)
    stats = limiter.get_window_stats(three, "u")
    assert stats.remaining == 0
    # 60 cells of a second: the units leave with the first one's cell, within 59 to 60 s.
    assert started + 59 < stats.reset_time <= time.time() + 60.01
    assert cells_of(call, key_of(three, "u")) == 60
    limiter.clear(three, "u")
    assert r.keys("LIMITS:*") == []
    empty = limiter.get_window_stats(three, "u")
    assert empty.remaining == 3
    # A cost larger than the limit never fits; one that fits takes its share.
    assert not limiter.hit(three, "u", cost=4)
    assert limiter.hit(three, "u", cost=2)
    assert limiter.get_window_stats(three, "u").remaining == 1


@pytest.mark.parametrize("most, item, n", [
    (None, RateLimitItemPerSecond(1), 50),      # 1000 ms: 60 to 51 do not divide it
    (None, RateLimitItemPerSecond(1, 7), 56),   # 7000 ms
    (None, RateLimitItemPerMinute(1), 60),
    (None, RateLimitItemPerDay(1), 60),
    (30, RateLimitItemPerSecond(1), 25),
    (30, RateLimitItemPerSecond(1, 7), 28),
    (30, RateLimitItemPerMinute(1), 30),
    (1024, RateLimitItemPerDay(1), 1024),       # 86,400,000 ms = 2^10 · 84,375
])
def test_n_is_the_largest_divisor_of_the_period_up_to_buckets(most, item, n, uri, r, call):
    options = {} if most is None else {"buckets": most}
    limiter = STRATEGIES[NAME](storage_from_string(uri, **options))
    assert limiter.hit(item, "n")
    assert cells_of(call, key_of(item, "n")) == n


@pytest.mark.parametrize("most", [1, 1025, "30", True])
def test_buckets_out_of_the_module_s_bounds_are_refused(most, uri):
    with pytest.raises(ValueError, match="buckets must be an integer from 2 to 1024"):
        storage_from_string(uri, buckets=most)


def test_a_period_no_n_divides_falls_back_to_the_exact_window(call):
    assert core.buckets_for(1, 60) is None
    assert core.buckets_for(61, 60) is None
    assert core.buckets_for(61, 1024) == 61
    assert core.buckets_option(1, 60) == []
    reply = call("CL.WINDOW", "one-ms", 1, 1, 1, "MS", *core.buckets_option(1, 60))
    assert core.admitted(reply)


def test_a_unit_comes_back_when_its_cell_leaves_before_a_period_has_passed(server, r):
    limiter = STRATEGIES[NAME](storage_from_string(f"cell+redis://127.0.0.1:{server}",
                                                   buckets=2))
    two = RateLimitItemPerSecond(2, 2)  # two cells of a second, on whole seconds
    # Hit well inside a cell, so that it leaves well before a period after the hits.
    time.sleep((0.3 - time.time() % 1) % 1)
    hit_at = time.time()
    assert [limiter.hit(two, "edge") for _ in range(3)] == [True, True, False]
    assert math.floor(time.time()) == math.floor(hit_at), "the hits spilled into the next cell"
    cell_leaves = math.floor(hit_at) + 2
    assert abs(limiter.get_window_stats(two, "edge").reset_time - cell_leaves) < 0.1
    time.sleep(cell_leaves + 0.05 - time.time())
    # An exact window would keep both units until hit_at + 2, at least 0.25 s later.
    assert limiter.hit(two, "edge")
    assert time.time() < hit_at + 2


def test_an_exact_and_a_bucketed_window_of_one_limit_live_apart(uri, r):
    storage = storage_from_string(uri)
    item = RateLimitItemPerMinute(1)
    assert STRATEGIES["moving-window"](storage).hit(item, "both")
    assert STRATEGIES[NAME](storage).hit(item, "both")
    assert sorted(r.keys("LIMITS:*")) == [key_of(item, "both").encode(),
                                          b"LIMITS:window:" + item.key_for("both").encode()]


def test_a_key_of_another_type_raises_as_limits_raises(uri, r):
    item = RateLimitItemPerMinute(4)
    r.rpush(key_of(item, "typed"), "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        STRATEGIES[NAME](storage_from_string(uri)).hit(item, "typed")
    with pytest.raises(StorageError):
        STRATEGIES[NAME](storage_from_string(uri, wrap_exceptions=True)).hit(item, "typed")


def test_on_memory_it_is_limits_moving_window():
    limiter = STRATEGIES[NAME](MemoryStorage())
    three = RateLimitItemPerMinute(3)
    assert [limiter.hit(three, "m") for _ in range(4)] == [True, True, True, False]
    stats = limiter.get_window_stats(three, "m")
    assert stats.remaining == 0 and 59 < stats.reset_time - time.time() <= 60


async def test_asyncio_hits_tests_and_stats_alike(server, r, call):
    storage = storage_from_string(f"async+cell+redis://127.0.0.1:{server}", buckets=30)
    limiter = aio_strategies.STRATEGIES[NAME](storage)
    three = RateLimitItemPerMinute(3)
    started = time.time()
    assert await limiter.test(three, "a", cost=3)
    assert [await limiter.hit(three, "a") for _ in range(4)] == [True, True, True, False]
    assert not await limiter.test(three, "a")
    stats = await limiter.get_window_stats(three, "a")
    # 30 cells of 2 s: the units leave with the first one's cell, within 58 to 60 s.
    assert stats.remaining == 0
    assert started + 58 < stats.reset_time <= time.time() + 60.01
    assert cells_of(call, key_of(three, "a")) == 30
    await limiter.clear(three, "a")
    assert (await limiter.get_window_stats(three, "a")).remaining == 3
    assert r.keys("LIMITS:*") == []


async def test_asyncio_takes_the_default_n_and_falls_back_on_memory(server, r, call):
    storage = storage_from_string(f"async+cell+redis://127.0.0.1:{server}")
    second = RateLimitItemPerSecond(5)
    assert await aio_strategies.STRATEGIES[NAME](storage).hit(second, "d", cost=5)
    assert cells_of(call, key_of(second, "d")) == 50
    memory = aio_strategies.STRATEGIES[NAME](AsyncMemoryStorage())
    assert [await memory.hit(second, "d", cost=3) for _ in range(2)] == [True, False]
