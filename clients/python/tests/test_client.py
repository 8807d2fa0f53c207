"""The typed client against a real server: sync and asyncio alike."""

import time

import pytest
import redis
import redis.asyncio

from redis_cell import (AsyncClient, Client, Decided, Fixed, Lease, NeedsModuleError, Reply, Throttle,
                        Window)
from redis_cell.client import commands


def test_throttle_answers_the_worked_example(r):
    cell = Client(r)
    for i in range(1, 17):
        assert cell.throttle("user123", 15, 30, 60) == Reply(False, 16, 16 - i, None, 2 * i)
    denied = cell.throttle("user123", 15, 30, 60)
    assert denied == Reply(True, 16, 0, 2, 32)
    assert not denied.allowed


def test_each_window_and_a_quantity_too_large_to_fit(r):
    cell = Client(r)
    assert cell.fixed("login:alice", 3, 60) == Reply(False, 3, 2, None, 60)
    assert cell.window("api:key42", 100, 60) == Reply(False, 100, 99, None, 60)
    # More than the limit never fits: denied, with no retry time.
    assert cell.window("api:key42", 100, 60, 101) == Reply(True, 100, 99, None, 60)
    assert cell.fixed("ms", 5, 1000, 2, ms=True) == Reply(False, 5, 3, None, 1000)


def test_refund_and_dry_run(r):
    cell = Client(r)
    cell.fixed("f", 3, 60, 2)
    assert cell.fixed("f", 3, 60, 2, dry_run=True) == Reply(True, 3, 1, 60, 60)
    assert r.get("f") == b"2"
    assert cell.fixed("f", 3, 60, 1, refund=True) == Reply(False, 3, 2, None, 60)
    assert r.get("f") == b"1"


def test_a_fixed_window_can_count_denied_calls(r):
    cell = Client(r)
    assert cell.fixed("c", 2, 60, 3, count_denied=True) == Reply(True, 2, 0, None, 60)
    assert cell.fixed("c", 2, 60, 1, count_denied=True) == Reply(True, 2, 0, 60, 60)
    assert r.get("c") == b"4"


def test_cl_all_answers_the_binding_limiter_or_each_with_detail(r):
    cell = Client(r)
    limiters = [Throttle("burst", 9, 10, 1), Fixed("daily", 10000, 86400), Window("w", 5, 60)]
    assert cell.all(limiters, detail=True) == [
        Reply(False, 10, 9, None, 1),
        Reply(False, 10000, 9999, None, 86400),
        Reply(False, 5, 4, None, 60),
    ]
    assert cell.all(limiters, 4) == Reply(False, 5, 0, None, 60)
    assert cell.all(limiters).limited


def test_a_window_of_buckets_counts_whole_cells(r):
    cell = Client(r)
    # Six cells of 10 s: the units leave with the current cell, 50 to 60 s from now.
    taken = cell.window("b", 10, 60, 3, buckets=6)
    assert (taken.limited, taken.remaining) == (False, 7)
    assert 50 < taken.reset_after <= 60
    too_many = cell.window("b", 10, 60, 8, buckets=6, dry_run=True)
    assert too_many.limited and too_many.remaining == 7
    assert 50 < too_many.retry_after <= 60
    with pytest.raises(redis.ResponseError, match="BUCKETS 6, not an exact one"):
        cell.window("b", 10, 60)
    with pytest.raises(redis.ResponseError, match="multiple of BUCKETS"):
        cell.window("c", 10, 60, buckets=7)
    assert commands.window("q", 1, 1000, ms=True, buckets=4, block=5000) == [
        "CL.WINDOW", "q", 1, 1000, 1, "BUCKETS", 4, "MS", "BLOCK", 5000]


@pytest.mark.waits
def test_a_waiter_on_buckets_is_admitted_when_the_first_cell_leaves(r):
    cell = Client(r)
    # One a second in cells of 250 ms: a waiter is admitted when the first cell leaves.
    assert cell.window("q", 1, 1000, ms=True, buckets=4).allowed
    asked = time.monotonic()
    assert cell.window("q", 1, 1000, ms=True, buckets=4, block=5000).allowed
    assert 0.7 <= time.monotonic() - asked < 4


def test_cl_all_takes_a_window_of_buckets(r):
    cell = Client(r)
    limiters = [Window("wb", 5, 60, buckets=6), Fixed("f", 10, 60)]
    assert Window("wb", 5, 60, buckets=6).words() == ["WINDOW", 5, 60, "BUCKETS", 6]
    window, fixed = cell.all(limiters, 2, detail=True)
    assert (window.limited, window.remaining, fixed.remaining) == (False, 3, 8)
    assert 50 < window.reset_after <= 60
    assert cell.all(limiters, 4).limited
    with pytest.raises(redis.ResponseError, match="BUCKETS 6, not an exact one"):
        cell.all([Window("wb", 5, 60)])


def test_leases_are_held_released_and_listed(r):
    cell = Client(r)
    assert cell.lease("pool", 1, 60, "job:1") == Reply(False, 1, 0, None, 60)
    assert cell.lease("pool", 1, 60, "job:2").limited
    assert cell.holders("pool") == [(b"job:1", 60)]
    assert cell.all([Lease("pool", 1, 60)], holder="job:1") == Reply(False, 1, 0, None, 60)
    assert cell.release("pool", "job:1") is True
    assert cell.release("pool", "job:1") is False
    assert cell.holders("pool") == []


def test_smooth_is_guava_s_rate_limiter(r):
    cell = Client(r)
    # RateLimiter.create(2), idle: two stored permits go at once, a third pays for itself and
    # the fourth is denied until the next second.
    assert cell.smooth("api", 2, 1) == Reply(False, 3, 2, None, 1)
    assert cell.smooth("api", 2, 1) == Reply(False, 3, 1, None, 1)
    assert cell.smooth("api", 2, 1) == Reply(False, 3, 0, None, 2)
    assert cell.smooth("api", 2, 1, dry_run=True) == Reply(True, 3, 0, 1, 2)
    assert cell.smooth("api", 2, 1) == Reply(True, 3, 0, 1, 2)
    # Warming up: a cold limiter admits one at a time.
    assert cell.smooth("cache", 10, 1, warmup=1) == Reply(False, 1, 0, None, 1)
    assert cell.smooth("cold", 10, 1000, 1, ms=True, warmup=1000, cold=5).allowed
    # Ten seconds of idle time stored: 100 permits and one that pays.
    assert cell.smooth("burst", 10, 1, burst=10).limit == 101
    assert cell.smooth("none", 10, 1, 0) == Reply(False, 11, 11, None, 0)
    assert r.exists("none") == 0
    with pytest.raises(redis.ResponseError, match="COLD is given, but no WARMUP"):
        cell.smooth("x", 10, 1, cold=5)
    assert commands.smooth("k", 2, 1000, 3, ms=True, warmup=500, cold=4, dry_run=True) == [
        "CL.SMOOTH", "k", 2, 1000, 3, "MS", "WARMUP", 500, "COLD", 4, "DRYRUN"]


@pytest.mark.waits
def test_smooth_holds_a_reply_until_its_reserved_instant(r):
    cell = Client(r)
    # Two permits a second, bursty with none stored: each call pays 500 ms for the next.
    for _ in range(3):
        cell.smooth("held", 2, 1000, ms=True)
    asked = time.monotonic()
    assert cell.smooth("held", 2, 1000, ms=True, block=2000).allowed
    assert 0.3 <= time.monotonic() - asked < 4
    assert cell.smooth("held", 2, 1000, ms=True, block=10).limited


@pytest.mark.waits
def test_a_blocked_call_waits_for_its_unit(r):
    cell = Client(r)
    assert cell.throttle("q", 0, 1, 300, ms=True).allowed
    asked = time.monotonic()
    waited = cell.throttle("q", 0, 1, 300, ms=True, block=5000)
    assert waited.allowed
    assert 0.2 <= time.monotonic() - asked < 4


def test_top_lists_the_keys_denied_most_where_the_module_is_loaded(flavor, r):
    for _ in range(3):
        assert Client(r).fixed("top:key", 1, 60, 2).limited
    if flavor == "library":
        with pytest.raises(NeedsModuleError, match="CL.TOP needs the redis-cell module"):
            Client(r).top()
        return
    listed = Client(r).top(count=1000)
    mine = [item for item in listed if item.key == b"top:key"]
    assert mine and mine[0].denied >= 3 and mine[0].denied - mine[0].error <= 3, listed


def test_errors_are_redis_py_errors_with_the_module_message(r):
    cell = Client(r)
    with pytest.raises(redis.ResponseError, match="limit must be >= 1"):
        cell.fixed("f", 0, 60)
    r.rpush("list", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        cell.window("list", 5, 60)
    with pytest.raises(redis.ResponseError, match="not compatible"):
        cell.fixed("f", 3, 60, refund=True, block=10)
    with pytest.raises(ValueError):
        cell.all([])


async def test_the_asyncio_client_answers_alike(server, r):
    client = redis.asyncio.Redis(port=server)
    try:
        cell = AsyncClient(client)
        assert await cell.throttle("a", 15, 30, 60) == Reply(False, 16, 15, None, 2)
        assert await cell.fixed("af", 3, 60, 3) == Reply(False, 3, 0, None, 60)
        assert (await cell.fixed("af", 3, 60, dry_run=True)).limited
        assert await cell.window("aw", 2, 60, refund=True) == Reply(False, 2, 2, None, 0)
        assert await cell.all([Fixed("af", 3, 60)], 0) == Reply(False, 3, 0, None, 60)
        assert (await cell.window("ab", 2, 60, buckets=6)).remaining == 1
        assert (await cell.all([Window("ab", 2, 60, buckets=6)])).remaining == 0
        with pytest.raises(redis.ResponseError, match="BUCKETS 6"):
            await cell.window("ab", 2, 60)
        assert await cell.lease("ap", 2, 60, "h") == Reply(False, 2, 1, None, 60)
        [(holder, left)] = await cell.holders("ap", ms=True)
        assert holder == b"h" and 59_000 < left <= 60_000
        assert await cell.release("ap", "h")
        assert await cell.smooth("as", 2, 1) == Reply(False, 3, 2, None, 1)
        assert (await cell.smooth("aw", 2, 1, warmup=1)).limit == 1
    finally:
        await client.aclose()


def test_the_package_version_is_the_module_s():
    """One version: the package's is the crate's, which MODULE LIST reports."""
    import re
    from pathlib import Path

    import redis_cell

    cargo = (Path(__file__).resolve().parents[3] / "Cargo.toml").read_text()
    crate = re.search(r'^version = "([^"]+)"', cargo, re.MULTILINE).group(1)
    assert redis_cell.__version__ == crate


def test_an_aligned_window_ends_on_a_multiple_of_its_period(r):
    cell = Client(r)
    reply = cell.fixed("aligned", 2, 3600, align=True)
    assert reply.allowed and 0 < reply.reset_after <= 3600
    assert r.pexpiretime("aligned") % 3_600_000 == 0


def test_a_calendar_window_ends_where_its_unit_does_in_cl_fixed_and_cl_all(r):
    """A month's window ends on a 1st at midnight in the local time OFFSET names; a day's
    at UTC's midnight; CL.ALL's Fixed takes the word and the offset too."""
    cell = Client(r)
    reply = cell.fixed("monthly", 10_000, "MONTH", offset=120)
    assert reply.allowed and reply.remaining == 9_999 and reply.reset_after <= 31 * 86_400
    end = r.pexpiretime("monthly")
    # UTC+02:00's midnight is 22:00 UTC the day before: a 1st, shifted back two hours.
    assert time.gmtime((end + 2 * 3_600_000) / 1000)[2:6] == (1, 0, 0, 0)
    both = cell.all([Fixed("daily", 5, "DAY"), Fixed("hourly", 2, 3600, align=True, offset=-330)],
                    detail=True)
    assert [each.remaining for each in both] == [4, 1]
    assert r.pexpiretime("daily") % 86_400_000 == 0
    assert (r.pexpiretime("hourly") - 1_800_000) % 3_600_000 == 0


def test_a_ban_locks_a_key_out_by_hand_and_by_a_denial(flavor, r):
    cell = Client(r)
    # A denial with ban= locks the key out beside its count, in the module and the library.
    assert cell.fixed("tries", 1, 60).allowed
    assert cell.fixed("tries", 1, 60, ban=600).retry_after == 600
    assert r.get("tries").startswith(b"CLX")
    if flavor == "library":
        with pytest.raises(NeedsModuleError, match="CL.BAN needs the redis-cell module"):
            cell.ban("locked", 60)
        return
    end = cell.ban("locked", 60)
    assert end * 1000 >= r.pexpiretime("locked")
    denied = cell.fixed("locked", 5, 60)
    assert denied.limited and denied.remaining == 0 and denied.retry_after == 60
    assert cell.unban("locked") and not cell.unban("locked")
    assert cell.fixed("locked", 5, 60).allowed


def test_the_hook_is_told_of_each_decision_and_of_nothing_else(r):
    told = []
    cell = Client(r, on_decision=told.append)
    admitted = cell.fixed("h", 1, 60)
    denied = cell.fixed("h", 1, 60)
    cell.fixed("h", 1, 60, dry_run=True)
    cell.fixed("h", 1, 60, 0)  # a peek
    cell.fixed("h", 1, 60, refund=True)
    cell.lease("l", 1, 60, "x")
    cell.release("l", "x")
    cell.holders("l")
    both = cell.all([Throttle("t", 0, 1, 60), Fixed("h", 1, 60)], detail=True)
    again = cell.all([Throttle("t", 0, 1, 60), Fixed("h", 1, 60)])
    assert admitted.allowed and denied.limited and not both[0].limited and again.limited
    assert [told[0], told[1]] == [Decided("fixed", "h", True, admitted),
                                  Decided("fixed", "h", False, denied)]
    assert told[2].limiter == "lease" and told[2].key == "l" and told[2].allowed
    assert told[3:] == [Decided("all", ("t", "h"), True, both),
                        Decided("all", ("t", "h"), False, again)]


def test_what_the_hook_raises_the_call_raises(r):
    def broken(decided):
        raise RuntimeError("metrics down")

    cell = Client(r, on_decision=broken)
    with pytest.raises(RuntimeError, match="metrics down"):
        cell.throttle("k", 1, 1, 60)
    assert Client(r).throttle("k", 1, 1, 60).remaining == 0  # the first call was decided

    async def later(decided):
        pass

    with pytest.raises(TypeError, match="plain function"):
        Client(r, on_decision=later)


async def test_the_asyncio_client_tells_its_hook_alike(server, r):
    told = []
    client = redis.asyncio.Redis(port=server)
    try:
        cell = AsyncClient(client, on_decision=told.append)
        first = await cell.smooth("s", 1, 60)
        second = await cell.smooth("s", 1, 60)
        await cell.window("w", 1, 60, dry_run=True)
        assert told == [Decided("smooth", "s", True, first), Decided("smooth", "s", False, second)]
    finally:
        await client.aclose()
