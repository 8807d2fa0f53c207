"""redis_cell.limits' fixed and moving windows: each decision in the module, with limits'
own semantics, checked side by side against limits' own Redis path on the same server."""

import random
import time

import pytest
import redis
from limits import RateLimitItemPerHour, RateLimitItemPerMinute
from limits import strategies as limits_strategies
from limits.errors import StorageError
from limits.storage import RedisStorage, storage_from_string
from limits.strategies import STRATEGIES

import redis_cell.limits  # noqa: F401  (registers the schemes and strategies)
from redis_cell.limits import CellRedisStorage, FixedWindowRateLimiter


@pytest.fixture
def cell(server, r):
    return storage_from_string(f"cell+redis://127.0.0.1:{server}")


@pytest.fixture
def plain(server, r):
    """limits' own storage and scripts, under a prefix of their own on the same server."""
    return RedisStorage(f"redis://127.0.0.1:{server}", key_prefix="PLAIN")


def count_of(r, key):
    return int(r.get(key) or 0)


def test_the_fixed_window_counts_denied_hits_as_limits_does(cell, plain, r, ran):
    assert STRATEGIES["fixed-window"] is FixedWindowRateLimiter
    ours, theirs = STRATEGIES["fixed-window"](cell), limits_strategies.FixedWindowRateLimiter(plain)
    item = RateLimitItemPerHour(5)
    rng = random.Random(21)
    before, decided = ran("cl.fixed"), 0
    # A first hit of 0 opens limits' window too.
    for cost in [0] + [rng.choice([0, 1, 1, 2, 3]) for _ in range(60)]:
        decided += 1 if cost else 0
        assert ours.test(item, "u", cost=cost) == theirs.test(item, "u", cost=cost)
        assert ours.hit(item, "u", cost=cost) == theirs.hit(item, "u", cost=cost)
        key = item.key_for("u")
        assert count_of(r, f"LIMITS:{key}") == count_of(r, f"PLAIN:{key}")
        ours_stats, theirs_stats = ours.get_window_stats(item, "u"), theirs.get_window_stats(item, "u")
        assert ours_stats.remaining == theirs_stats.remaining
        assert abs(ours_stats.reset_time - theirs_stats.reset_time) <= 1.5
    assert count_of(r, f"LIMITS:{item.key_for('u')}") > 5
    # Every hit but those of 0, every test and every stats call was the module's.
    assert ran("cl.fixed") - before == decided + 2 * 61


def test_limits_own_fixed_window_keys_carry_over(cell, r):
    item = RateLimitItemPerMinute(3)
    # What limits itself left, before the switch: two hits.
    theirs = limits_strategies.FixedWindowRateLimiter(cell)
    assert theirs.hit(item, "carry") and theirs.hit(item, "carry")
    ours = STRATEGIES["fixed-window"](cell)
    assert [ours.hit(item, "carry") for _ in range(3)] == [True, False, False]
    # And back: limits' own path reads the module's count.
    assert theirs.get_window_stats(item, "carry").remaining == 0
    assert count_of(r, f"LIMITS:{item.key_for('carry')}") == 5


def test_the_moving_window_decides_as_limits_does(cell, plain, r, ran):
    ours, theirs = STRATEGIES["moving-window"](cell), STRATEGIES["moving-window"](plain)
    item = RateLimitItemPerHour(7)
    started = time.time()
    rng = random.Random(7)
    before = ran("cl.window")
    for cost in [0] + [rng.choice([0, 1, 1, 2, 4]) for _ in range(40)]:
        assert ours.test(item, "m", cost=cost) == theirs.test(item, "m", cost=cost)
        assert ours.hit(item, "m", cost=cost) == theirs.hit(item, "m", cost=cost)
        ours_stats, theirs_stats = ours.get_window_stats(item, "m"), theirs.get_window_stats(item, "m")
        assert ours_stats.remaining == theirs_stats.remaining
        # The oldest unit entered at the first hit: the window resets an hour after it.
        assert started + 3600 - 0.01 <= ours_stats.reset_time <= time.time() + 3600 + 0.01
    # Hits of 0 make no call; every other hit, and each test's and stats' script, does.
    assert ran("cl.window") - before > 41
    key = item.key_for("m")
    assert r.type(f"LIMITS:window:{key}") == b"string"
    assert r.type(f"PLAIN:{key}") == b"list"


def test_an_empty_moving_window_starts_now(cell):
    limiter = STRATEGIES["moving-window"](cell)
    item = RateLimitItemPerMinute(2)
    before = time.time()
    start, count = cell.get_moving_window(item.key_for("none"), 2, 60)
    assert count == 0 and before <= start <= time.time()
    assert limiter.get_window_stats(item, "none").remaining == 2


def test_clear_removes_each_algorithm_s_key(cell, r):
    item = RateLimitItemPerMinute(4)
    for name in ["fixed-window", "moving-window", "sliding-window-buckets", "gcra"]:
        STRATEGIES[name](cell).hit(item, "gone")
    assert len(r.keys("LIMITS:*")) == 4
    STRATEGIES["moving-window"](cell).clear(item, "gone")
    assert r.keys("LIMITS:*") == []


def test_a_key_of_another_type_raises_as_limits_raises(server, r):
    item = RateLimitItemPerMinute(4)
    r.rpush(f"LIMITS:{item.key_for('typed')}", "x")
    r.rpush(f"LIMITS:window:{item.key_for('typed')}", "x")
    plain = storage_from_string(f"cell+redis://127.0.0.1:{server}")
    wrapped = storage_from_string(f"cell+redis://127.0.0.1:{server}", wrap_exceptions=True)
    for name in ["fixed-window", "moving-window"]:
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            STRATEGIES[name](plain).hit(item, "typed")
        with pytest.raises(StorageError):
            STRATEGIES[name](wrapped).hit(item, "typed")


def test_other_storages_keep_limits_own_fixed_window(plain):
    limiter = STRATEGIES["fixed-window"](plain)
    assert not isinstance(plain, CellRedisStorage)
    item = RateLimitItemPerMinute(1)
    assert [limiter.hit(item, "x"), limiter.hit(item, "x")] == [True, False]
