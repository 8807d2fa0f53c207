"""Local batches (redis_cell/batch.py): the rules under a controlled clock, then the limiters
over real servers, with the module and with the library, under threads and tasks."""

import asyncio
import threading

import pytest
import redis
import redis.asyncio

from redis_cell import AsyncClient, Client, Fixed, Throttle, Window
from redis_cell.batch import AsyncBatched, Batched, BatchCore
from redis_cell.client import Reply


def core(**options):
    settings = dict(horizon=1.0, refresh=0.5, share=0.25, max_batch=1000, fixed_window=False)
    settings.update(options)
    return BatchCore(**settings)


def reply(granted, remaining=100, retry_after=None, reset_after=1000):
    limited = granted == 0
    return Reply(limited, 1000, remaining, retry_after, reset_after, granted)


def test_units_are_spent_within_the_horizon_and_what_is_left_goes_back():
    c = core()
    assert c.spend(0.0, 1) == (None, 0)
    assert c.granted(0.0, 0.0, 1, reply(10)).allowed
    for at in (0.1, 0.5, 0.89):
        decision, back = c.spend(at, 1)
        assert decision.allowed and decision.local and back == 0
    # Spending stops a tenth of the horizon early, so that the refund comes within it.
    decision, back = c.spend(0.9, 1)
    assert decision is None and back == 6
    assert c.held() == 0


def test_a_fixed_window_s_units_go_back_only_while_their_window_is_open():
    c = core(fixed_window=True)
    # The window ends 300 ms after the server's instant, which is after 0.0.
    c.granted(0.0, 0.0, 1, reply(10, reset_after=300))
    assert c.lapsed(0.95) == 0
    c.granted(1.0, 1.0, 1, reply(10, reset_after=5000))
    assert c.close(1.5) == 9
    c.granted(2.0, 2.0, 1, reply(10, reset_after=5000))
    # Past the horizon nothing goes back either: a late refund would stand for newer units.
    assert c.close(3.0) == 0


def test_a_fixed_window_on_the_clock_or_the_calendar_is_refused():
    """The batch's windows are a period long from their first call: it refuses what it cannot
    follow, where the limiter is built."""
    for fixed in (Fixed("m", 10, "MONTH"), Fixed("a", 10, 60, align=True),
                  Fixed("o", 10, "DAY", offset=60)):
        with pytest.raises(TypeError, match="not laid on the clock"):
            Batched(None, fixed)


def test_the_batch_follows_the_demand_and_never_takes_much_of_what_is_left():
    c = core()
    assert c.ask(0.0, 1) == 1
    c.granted(0.0, 0.0, 1, reply(1, remaining=1000))
    # 200 units a second seen: half a second's worth, within a quarter of what is left.
    for i in range(99):
        c.grants.clear()
        c.spent += 1
    assert c.ask(0.5, 1) == 100
    c.granted(0.5, 0.5, 1, reply(100, remaining=40))
    assert c.ask(0.6, 1) == 10
    c.granted(0.6, 0.6, 1, reply(10, remaining=2))
    # Near the limit: one at a time.
    assert c.ask(0.7, 1) == 1


def test_an_answer_that_comes_past_the_horizon_spends_nothing():
    c = core()
    late = c.granted(0.0, 0.95, 1, reply(10))
    assert not late.allowed
    # Held as lapsed: given back at once, while the horizon (less a refund's way) lasts.
    assert c.lapsed(0.92) == 10


def test_a_denial_is_answered_locally_until_its_wait_is_over():
    c = core()
    denied = c.granted(0.0, 0.0, 1, reply(0, remaining=0, retry_after=250))
    assert not denied.allowed and not denied.local and denied.retry_after == 0.25
    decision, _ = c.spend(0.1, 1)
    assert not decision.allowed and decision.local
    assert decision.retry_after == pytest.approx(0.15)
    # Then the next call asks the server.
    assert c.spend(0.25, 1) == (None, 0)
    # A call that can never fit is not cached.
    c.granted(0.3, 0.3, 1, reply(0, remaining=0, retry_after=None))
    assert c.spend(0.3, 1) == (None, 0)


def test_an_unreachable_server_denies_or_allows_a_fallback_rate():
    assert not core().failed(0.0, 1).allowed
    c = core(fallback_rate=10.0)
    assert not c.failed(0.0, 1).allowed
    assert c.failed(0.1, 1).allowed
    assert not c.failed(0.1, 1).allowed
    # Its bucket holds at most one refresh of the rate: five after a long outage.
    allowed = sum(c.failed(100.0, 1).allowed for _ in range(10))
    assert allowed == 5


class Counting(Client):
    """The real client, counting the ATMOST requests it sends and the most sent at once
    (refunds, which timers send too, aside)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lock = threading.Lock()
        self.now = self.most = self.sent = 0

    def fixed(self, *args, **kwargs):
        if not kwargs.get("at_most"):
            return super().fixed(*args, **kwargs)
        with self.lock:
            self.now += 1
            self.sent += 1
            self.most = max(self.most, self.now)
        try:
            return super().fixed(*args, **kwargs)
        finally:
            with self.lock:
                self.now -= 1


def test_threads_share_one_request_and_the_server_counts_what_was_spent(r):
    client = Counting(r)
    limiter = Batched(client, Fixed("fleet", 500, 60))
    allowed = []

    def work():
        mine = 0
        for _ in range(150):
            if limiter.acquire().allowed:
                mine += 1
        allowed.append(mine)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    spent = sum(allowed)
    assert spent == 500
    assert client.most == 1
    assert client.sent < 200, client.sent
    limiter.close()
    assert int(r.get("fleet")) == spent


def test_what_is_held_goes_back_on_close(r):
    limiter = Batched(Client(r), Window("held", 1000, 60))
    for _ in range(50):
        assert limiter.acquire().allowed
    limiter.close()
    # The window's log holds the units spent alone.
    assert Client(r).window("held", 1000, 60, 0).remaining == 950


def test_the_deny_cache_makes_no_call_while_it_holds_then_lets_one_through(r, ran):
    now = [100.0]
    limiter = Batched(Client(r), Throttle("denied", 4, 1, 60), clock=lambda: now[0])
    for _ in range(5):
        assert limiter.acquire().allowed
    before = ran("cl.throttle")
    denied = limiter.acquire()
    assert not denied.allowed and not denied.local
    assert 59 < denied.retry_after <= 60
    calls = ran("cl.throttle")
    assert calls > before
    for step in (0.0, 1.0, denied.retry_after - 0.01):
        now[0] = 100.0 + step
        held = limiter.acquire()
        assert not held.allowed and held.local
    assert ran("cl.throttle") == calls
    now[0] = 100.0 + denied.retry_after
    limiter.acquire()
    assert ran("cl.throttle") == calls + 1


def test_tasks_share_one_request(server):
    async def main():
        r = redis.asyncio.Redis(port=server)
        await r.delete("tasks")
        client = AsyncClient(r)
        asking = {"now": 0, "most": 0}
        fixed = client.fixed

        async def counted(*args, **kwargs):
            if not kwargs.get("at_most"):
                return await fixed(*args, **kwargs)
            asking["now"] += 1
            asking["most"] = max(asking["most"], asking["now"])
            try:
                return await fixed(*args, **kwargs)
            finally:
                asking["now"] -= 1

        client.fixed = counted
        limiter = AsyncBatched(client, Fixed("tasks", 300, 60))

        async def work():
            return sum([(await limiter.acquire()).allowed for _ in range(100)])

        spent = sum(await asyncio.gather(*(work() for _ in range(6))))
        calls = limiter.calls
        await limiter.close()
        count = int(await r.get("tasks"))
        await r.aclose()
        return spent, calls, count, asking["most"]

    spent, calls, count, most = asyncio.run(main())
    assert spent == 300 == count
    assert most == 1
    assert calls < 150, calls


def test_an_unreachable_server_denies_by_default():
    dead = redis.Redis(port=1, socket_connect_timeout=0.2)
    limiter = Batched(Client(dead, via="module"), Fixed("x", 10, 1))
    decision = limiter.acquire()
    assert not decision.allowed and decision.local


def test_a_limiter_s_error_is_raised_and_the_next_call_may_ask(r):
    r.rpush("list", "x")
    limiter = Batched(Client(r), Fixed("list", 10, 60))
    for _ in range(2):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            limiter.acquire()
