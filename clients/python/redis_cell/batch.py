"""Local batches: one limit for a whole fleet, most calls decided without a round trip.

A :class:`Batched` limiter takes units from the server with ``ATMOST`` and spends them in the
process; an :class:`AsyncBatched` does the same for asyncio. Each unit is spent after the
server granted it and before ``horizon`` seconds after its request was sent; units left are
given back with one ``REFUND`` by then (and all of them on ``close``), or, when that moment
has passed, never. When the server
grants nothing, the denial is answered locally until its ``retry_after`` has passed. What
the fleet's spending keeps, and why, is docs/fleet.md's.

The rules live in :class:`BatchCore`, which is given the time and makes no call, so that they
are tested with a controlled clock; the two limiters add the calls and the locking.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Optional, Set, Tuple, Union

import redis

from .client import AsyncClient, Client, Fixed, Reply, Throttle, Window

Spec = Union[Throttle, Fixed, Window]

# The server away, not an answer from it: a limiter's error reply (a ResponseError, and
# ModuleMissingError among them) is raised to the caller.
_UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)


@dataclass(frozen=True)
class Decision:
    """Whether a call may go ahead; ``retry_after`` (seconds) when denied and known; whether
    it was decided without a round trip; and ``at``, the instant on the limiter's clock its
    units were spent (the one the bound speaks of), when allowed."""

    allowed: bool
    retry_after: Optional[float] = None
    local: bool = False
    at: Optional[float] = None


@dataclass
class _Grant:
    """Units one call was granted: spent until ``spend_until``, given back until
    ``refund_until``: the horizon, or sooner a fixed window's end (a unit refunded after it
    would credit the next window)."""

    units: int
    spend_until: float
    refund_until: float


# Spending stops this part of the horizon early, and giving back half that part early: the
# other half is the time a refund may take to reach the server, which must be within the
# horizon (docs/fleet.md).
_SPEND_MARGIN = 0.1
_REFUND_MARGIN = 0.05


class BatchCore:
    """The rules of a batched limiter, on a monotonic clock the caller reads.

    ``spend`` decides from what the process holds; ``ask`` sizes the next request;
    ``granted`` takes the server's reply; ``lapsed`` and ``close`` say what to give back.
    """

    def __init__(self, *, horizon: float, refresh: float, share: float, max_batch: int,
                 fixed_window: bool, fallback_rate: Optional[float] = None):
        if not 0 < refresh <= horizon:
            raise ValueError("refresh must be positive and at most the horizon")
        if not 0 < share <= 1:
            raise ValueError("share must be in (0, 1]")
        self.horizon, self.refresh, self.share = horizon, refresh, share
        self.max_batch, self.fixed_window = max_batch, fixed_window
        self.grants: Deque[_Grant] = deque()
        self.deny_until: Optional[float] = None
        # The server's remaining after the last grant, and the demand seen since the last ask.
        self.remaining: Optional[int] = None
        self.rate = 0.0
        self.asked_at: Optional[float] = None
        self.spent = 0
        self.fallback_rate = fallback_rate
        self.fallback_tokens = 0.0
        self.fallback_at: Optional[float] = None

    def lapsed(self, now: float) -> int:
        """Drops the grants whose horizon has passed; returns how many of their units to give
        back."""
        back = 0
        while self.grants and self.grants[0].spend_until <= now:
            grant = self.grants.popleft()
            if now < grant.refund_until:
                back += grant.units
        return back

    def newest_lapse(self) -> Optional[float]:
        """When the newest grant stops being spent, if any is held: a timer then gives back
        what it left, even if no call comes."""
        return self.grants[-1].spend_until if self.grants else None

    def held(self) -> int:
        return sum(grant.units for grant in self.grants)

    def spend(self, now: float, n: int) -> Tuple[Optional[Decision], int]:
        """Decides a call for ``n`` units locally, if it can: from the units held (the oldest
        first), or by the deny cache. Also returns the units that lapsed, to give back."""
        back = self.lapsed(now)
        if n <= self.held():
            self.spent += n
            while n > 0:
                grant = self.grants[0]
                taken = min(n, grant.units)
                grant.units -= taken
                n -= taken
                if grant.units == 0:
                    self.grants.popleft()
            return Decision(True, local=True, at=now), back
        if self.deny_until is not None and now < self.deny_until:
            return Decision(False, self.deny_until - now, local=True), back
        return None, back

    def ask(self, now: float, n: int) -> int:
        """How many units to ask the server for, at most: enough to refill about once per
        ``refresh`` at the demand seen, never more than ``share`` of what the server last had
        left (near the limit, just ``n``)."""
        if self.asked_at is not None and now > self.asked_at:
            seen = self.spent / (now - self.asked_at)
            self.rate = seen if self.rate == 0 else (self.rate + seen) / 2
        self.asked_at, self.spent = now, 0
        size = max(n, math.ceil(self.rate * self.refresh))
        if self.remaining is not None:
            size = min(size, max(n, int(self.remaining * self.share)))
        return max(n, min(size, self.max_batch))

    def granted(self, sent_at: float, received_at: float, n: int, reply: Reply) -> Decision:
        """Takes the server's answer, received at ``received_at``, to a request sent at
        ``sent_at`` (waits in ms): the call for ``n`` units goes ahead if ``n`` were granted
        and the answer came before the horizon, and the rest are held until it."""
        granted = reply.granted or 0
        self.remaining = reply.remaining
        self.deny_until = None
        if granted == 0:
            # Sent before the server decided: the cache ends no later than the server's wait.
            if reply.retry_after is not None:
                self.deny_until = sent_at + reply.retry_after / 1000
            retry = None if reply.retry_after is None else reply.retry_after / 1000
            return Decision(False, retry)
        refund_until = sent_at + self.horizon * (1 - _REFUND_MARGIN)
        if self.fixed_window:
            # The window ends reset_after (rounded up to the ms) after the server's instant,
            # which is after sent_at; a refund must reach the server before it does.
            window_end = sent_at + (reply.reset_after - 1) / 1000
            refund_until = min(refund_until, window_end - self.horizon * _REFUND_MARGIN)
        spend_until = sent_at + self.horizon * (1 - _SPEND_MARGIN)
        # An answer that came too late is held as a grant that has already lapsed.
        spends = granted >= n and received_at < spend_until
        left = granted - n if spends else granted
        if left > 0:
            self.grants.append(_Grant(left, spend_until, refund_until))
        if not spends:
            return Decision(False, None)
        self.spent += n
        return Decision(True, at=received_at)

    def failed(self, now: float, n: int) -> Decision:
        """The server could not be reached: denied, or with a fallback rate, allowed while a
        local bucket of that rate (holding up to one ``refresh`` of it) has room."""
        if self.fallback_rate is None:
            return Decision(False, None, local=True)
        if self.fallback_at is not None:
            self.fallback_tokens += (now - self.fallback_at) * self.fallback_rate
        self.fallback_at = now
        self.fallback_tokens = min(self.fallback_tokens, max(1.0, self.fallback_rate * self.refresh))
        if self.fallback_tokens >= n:
            self.fallback_tokens -= n
            return Decision(True, local=True)
        return Decision(False, (n - self.fallback_tokens) / self.fallback_rate, local=True)

    def close(self, now: float) -> int:
        """Drops every grant; returns how many units to give back."""
        back = sum(grant.units for grant in self.grants if now < grant.refund_until)
        self.grants.clear()
        return back


def _period_ms(spec: Spec, ms: bool) -> int:
    return spec.period if ms else spec.period * 1000


def _words(spec: Spec, ms: bool):
    """The call's command and numbers after the key, in milliseconds, with the quantity
    last."""
    if isinstance(spec, Throttle):
        return "throttle", (spec.max_burst, spec.count, _period_ms(spec, ms))
    if isinstance(spec, Window):
        return "window", (spec.limit, _period_ms(spec, ms))
    if isinstance(spec, Fixed):
        # The batch's windows are a period long from their first call: a window on the clock
        # ends elsewhere.
        if not isinstance(spec.period, int) or spec.align or spec.offset is not None:
            raise TypeError("a batched Fixed has a period in seconds or ms, not laid on the "
                            "clock or the calendar")
        return "fixed", (spec.limit, _period_ms(spec, ms))
    raise TypeError("a batched limiter is a Throttle, a Fixed or a Window")


def _options(spec: Spec):
    return {"buckets": spec.buckets} if isinstance(spec, Window) and spec.buckets else {}


class _Batching:
    """What both limiters share: the core, built from the options, and the calls' words.

    ``limiter`` is a :class:`Throttle`, :class:`Fixed` or :class:`Window` on one key, its
    period in seconds or with ``ms=True`` in milliseconds. ``horizon`` (H, seconds; default a
    tenth of the period, at most 1 s), ``refresh`` (default H / 2), ``share`` (default 0.25),
    ``max_batch``, ``fallback_rate`` (units a second while the server is away; default none:
    deny) and ``clock`` (monotonic, in seconds) are docs/fleet.md's knobs."""

    def __init__(self, client, limiter: Spec, *, ms: bool = False,
                 horizon: Optional[float] = None, refresh: Optional[float] = None,
                 share: float = 0.25, max_batch: int = 1_000_000,
                 fallback_rate: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.client, self.limiter, self.clock = client, limiter, clock
        self.command, self.numbers = _words(limiter, ms)
        self.options = _options(limiter)
        period = self.numbers[-1] / 1000
        # A tenth of the period, at most a second: the bound's 2H stays small next to it.
        horizon = min(1.0, period / 10) if horizon is None else horizon
        self.core = BatchCore(horizon=horizon, refresh=horizon / 2 if refresh is None else refresh,
                              share=share, max_batch=max_batch,
                              fixed_window=isinstance(limiter, Fixed),
                              fallback_rate=fallback_rate)

    def call_args(self, quantity: int, **flags):
        return (self.limiter.key, *self.numbers, quantity), dict(ms=True, **self.options, **flags)


class Batched(_Batching):
    """A limiter of one key decided mostly in the process, over a :class:`Client` (the
    options are :class:`_Batching`'s); safe under threads, with one ATMOST request to the
    server in flight at a time."""

    def __init__(self, client: Client, limiter: Spec, **options):
        super().__init__(client, limiter, **options)
        self._lock = threading.Lock()
        self._answered = threading.Condition(self._lock)
        self._asking = False
        # Requests sent (grants and refunds), and the units sent back (whether or not the
        # server's answer came).
        self.calls = 0
        self.given_back = 0

    def acquire(self, n: int = 1) -> Decision:
        while True:
            with self._lock:
                now = self.clock()
                decision, back = self.core.spend(now, n)
                asking = decision is None and not self._asking and not back
                if asking:
                    self._asking = True
                    quantity = self.core.ask(now, n)
                elif decision is None and not back:
                    # Another thread is asking: its grant may serve this call too.
                    self._answered.wait(self.core.horizon)
                    continue
            # What lapsed goes back now, before anything else: its time is short.
            self._give_back(back)
            if decision is not None:
                return decision
            if asking:
                return self._ask_server(now, n, quantity)

    def _ask_server(self, now: float, n: int, quantity: int) -> Decision:
        """Asks the server for ``quantity`` at most, and records its answer before the next
        caller may ask."""
        try:
            reply: Optional[Reply] = self._ask(quantity)
        except _UNREACHABLE:
            reply = None
        except BaseException:
            with self._lock:
                self._asking = False
                self._answered.notify_all()
            raise
        with self._lock:
            self._asking = False
            self._answered.notify_all()
            if reply is None:
                decision = self.core.failed(self.clock(), n)
            else:
                decision = self.core.granted(now, self.clock(), n, reply)
            lapse = self.core.newest_lapse()
        self._lapse_at(lapse)
        return decision

    def _lapse_at(self, at: Optional[float]) -> None:
        """Gives back what lapses at ``at``, when it does, even if no call comes then."""
        if at is None:
            return
        timer = threading.Timer(max(0.0, at - self.clock()), self._lapse)
        timer.daemon = True
        timer.start()

    def _lapse(self) -> None:
        with self._lock:
            back = self.core.lapsed(self.clock())
        self._give_back(back)

    def _ask(self, quantity: int) -> Reply:
        with self._lock:
            self.calls += 1
        args, options = self.call_args(quantity, at_most=True)
        return getattr(self.client, self.command)(*args, **options)

    def _give_back(self, units: int) -> None:
        if units <= 0:
            return
        args, options = self.call_args(units, refund=True)
        with self._lock:
            self.calls += 1
            self.given_back += units
        try:
            getattr(self.client, self.command)(*args, **options)
        except redis.RedisError:
            pass  # Unreturned units lapse: counted as spent, which errs toward denying.

    def close(self) -> None:
        with self._lock:
            back = self.core.close(self.clock())
        self._give_back(back)

    def __enter__(self) -> "Batched":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncBatched(_Batching):
    """:class:`Batched` for asyncio, over an :class:`AsyncClient`: safe under tasks, with one
    ATMOST request to the server in flight at a time."""

    def __init__(self, client: AsyncClient, limiter: Spec, **options):
        super().__init__(client, limiter, **options)
        self._asking: Optional[asyncio.Future] = None
        # Refunds run as tasks of their own, held here until done, so that a local decision
        # never waits for one.
        self._refunds: Set[asyncio.Task] = set()
        # Requests sent (grants and refunds), and the units sent back (whether or not the
        # server's answer came).
        self.calls = 0
        self.given_back = 0

    async def acquire(self, n: int = 1) -> Decision:
        while True:
            now = self.clock()
            decision, back = self.core.spend(now, n)
            self._give_back_soon(back)
            if decision is not None:
                return decision
            if self._asking is not None:
                await asyncio.shield(self._asking)
                continue
            self._asking = asyncio.get_running_loop().create_future()
            quantity = self.core.ask(now, n)
            reply = None
            try:
                reply = await self._ask(quantity)
            except _UNREACHABLE:
                pass
            finally:
                asking, self._asking = self._asking, None
                asking.set_result(None)
            if reply is None:
                return self.core.failed(self.clock(), n)
            decision = self.core.granted(now, self.clock(), n, reply)
            self._lapse_at(self.core.newest_lapse())
            return decision

    def _lapse_at(self, at: Optional[float]) -> None:
        """Gives back what lapses at ``at``, when it does, even if no call comes then."""
        if at is not None:
            asyncio.get_running_loop().call_later(
                max(0.0, at - self.clock()),
                lambda: self._give_back_soon(self.core.lapsed(self.clock())))

    def _give_back_soon(self, units: int) -> None:
        if units > 0:
            task = asyncio.get_running_loop().create_task(self._give_back(units))
            self._refunds.add(task)
            task.add_done_callback(self._refunds.discard)

    async def _ask(self, quantity: int) -> Reply:
        self.calls += 1
        args, options = self.call_args(quantity, at_most=True)
        return await getattr(self.client, self.command)(*args, **options)

    async def _give_back(self, units: int) -> None:
        if units <= 0:
            return
        args, options = self.call_args(units, refund=True)
        self.calls += 1
        self.given_back += units
        try:
            await getattr(self.client, self.command)(*args, **options)
        except redis.RedisError:
            pass  # Unreturned units lapse: counted as spent, which errs toward denying.

    async def close(self) -> None:
        await self._give_back(self.core.close(self.clock()))
        if self._refunds:
            await asyncio.gather(*self._refunds)

    async def __aenter__(self) -> "AsyncBatched":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
