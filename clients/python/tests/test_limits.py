"""redis_cell.limits: the cell+redis:// storage and the "gcra" strategy, on a real server and
on limits' MemoryStorage."""

import time

import pytest
import redis
from limits import RateLimitItemPerMinute, RateLimitItemPerSecond
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import STRATEGIES

import redis_cell.limits
from redis_cell.limits import CellRedisStorage, GCRARateLimiter


@pytest.fixture
def storage(server, r):
    return storage_from_string(f"cell+redis://127.0.0.1:{server}")


def test_the_scheme_and_the_strategy_are_registered(storage):
    assert isinstance(storage, CellRedisStorage)
    assert storage.check()
    assert STRATEGIES["gcra"] is GCRARateLimiter is redis_cell.limits.GCRARateLimiter


@pytest.mark.parametrize("backend", ["cell", "memory"])
def test_gcra_admits_a_burst_of_the_limit_then_refills_one_by_one(backend, storage):
    limiter = STRATEGIES["gcra"](storage if backend == "cell" else MemoryStorage())
    three = RateLimitItemPerMinute(3)
    assert limiter.test(three, "user")
    assert [limiter.hit(three, "user") for _ in range(4)] == [True, True, True, False]
    assert not limiter.test(three, "user")
    stats = limiter.get_window_stats(three, "user")
    assert stats.remaining == 0
    # Full: a unit comes back every 20 s, the first 20 s from now.
    assert 19 < stats.reset_time - time.time() <= 20
    assert limiter.hit(three, "other")
    limiter.clear(three, "user")
    untouched = limiter.get_window_stats(three, "user")
    assert untouched.remaining == 3
    assert untouched.reset_time <= time.time()
    # A cost larger than the limit never fits; a cost that fits takes its share.
    assert not limiter.hit(three, "user", cost=4)
    assert limiter.hit(three, "user", cost=2)
    assert limiter.get_window_stats(three, "user").remaining == 1


def test_the_module_and_the_in_process_gcra_decide_alike(storage):
    cell, memory = GCRARateLimiter(storage), GCRARateLimiter(MemoryStorage())
    item = RateLimitItemPerSecond(5)
    costs = [1, 2, 1, 3, 1, 0, 1, 5, 6, 1]
    assert [cell.hit(item, "k", cost=c) for c in costs] == [
        memory.hit(item, "k", cost=c) for c in costs
    ]


def test_gcra_keys_have_a_prefix_of_their_own(storage, r):
    limiter = GCRARateLimiter(storage)
    item = RateLimitItemPerMinute(10)
    limiter.hit(item, "alice")
    assert r.keys("LIMITS:gcra:*") == [b"LIMITS:gcra:" + item.key_for("alice").encode()]
    # A fixed window's key of the same limit is another key: nothing is misread.
    STRATEGIES["fixed-window"](storage).hit(item, "alice")
    assert len(r.keys("LIMITS:*")) == 2


def test_a_key_of_another_type_raises_the_module_error(storage, r):
    limiter = GCRARateLimiter(storage)
    item = RateLimitItemPerMinute(10)
    r.rpush("LIMITS:gcra:" + item.key_for("bob"), "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        limiter.hit(item, "bob")


def test_other_storages_are_refused():
    with pytest.raises(NotImplementedError, match="cell\\+redis"):
        GCRARateLimiter(object())


@pytest.mark.parametrize("strategy", ["gcra", "fixed-window", "moving-window",
                                      "sliding-window-buckets"])
def test_the_ban_option_locks_a_key_out_from_the_hit_its_limit_denies(server, r, strategy):
    storage = storage_from_string(f"cell+redis://127.0.0.1:{server}", ban=600)
    limiter = STRATEGIES[strategy](storage)
    two = RateLimitItemPerSecond(2)
    assert [limiter.hit(two, "mallory") for _ in range(3)] == [True, True, False]
    assert not limiter.hit(two, "mallory")
    assert limiter.hit(two, "someone else")
    # The window is a second; the key is kept, banned, for ten minutes.
    [key] = r.keys("*mallory*")
    assert r.get(key).startswith(b"CLX") and r.pttl(key) > 590_000
    # The stats tell the ban's wait: a Retry-After that comes no sooner.
    assert limiter.get_window_stats(two, "mallory").reset_time - time.time() > 590
    with pytest.raises(ValueError, match="ban is a whole number of seconds"):
        storage_from_string(f"cell+redis://127.0.0.1:{server}", ban=0)
