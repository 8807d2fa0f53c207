"""The module's commands, as functions over a redis-py client (sync) or its asyncio client.

Each function builds the command's arguments (``commands``, shared by both clients) and reads
its reply into a :class:`Reply`. The calls go to the module's commands, or where the server
has not loaded the module to the same limiters in its Functions library (``routing``).
Errors are redis-py's: a bad argument or a key of another type raises
``redis.ResponseError`` with the module's message, and a server with neither its subclass
:class:`~redis_cell.errors.ModuleMissingError`, which says how to load them.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable, ClassVar, List, Optional, Sequence, Tuple, TypeVar, Union

from .routing import AsyncRouter, Router

KeyT = Union[str, bytes]
# A fixed window's period: a span, or a calendar's unit by its word (CALENDAR).
Period = Union[int, str]
CALENDAR = ("DAY", "WEEK", "MONTH", "YEAR")


@dataclass(frozen=True)
class Reply:
    """``[limited, limit, remaining, retry_after, reset_after]``, and with ``at_most=True``
    ``granted`` sixth: the units the call took (``None`` without it).

    ``retry_after`` is ``None`` when the call was admitted, or when its quantity can never
    fit (the module answers -1 for both); waits are in the call's unit.
    """

    limited: bool
    limit: int
    remaining: int
    retry_after: Optional[int]
    reset_after: int
    granted: Optional[int] = None

    @property
    def allowed(self) -> bool:
        return not self.limited

    @classmethod
    def of(cls, values: Sequence[int]) -> "Reply":
        limited, limit, remaining, retry_after, reset_after, *rest = (int(v) for v in values)
        return cls(
            limited=limited == 1,
            limit=limit,
            remaining=remaining,
            retry_after=None if retry_after < 0 else retry_after,
            reset_after=reset_after,
            granted=rest[0] if rest else None,
        )


@dataclass(frozen=True)
class Throttle:
    """A CL.ALL limiter: GCRA, ``count`` per ``period`` with bursts of ``max_burst + 1``."""

    key: KeyT
    max_burst: int
    count: int
    period: int

    def words(self) -> List[object]:
        return ["THROTTLE", self.max_burst, self.count, self.period]


@dataclass(frozen=True)
class _Rate:
    key: KeyT
    limit: int
    period: int

    KEYWORD: ClassVar[str] = ""

    def words(self) -> List[object]:
        return [self.KEYWORD, self.limit, self.period]


@dataclass(frozen=True)
class Fixed(_Rate):
    """A CL.ALL limiter: at most ``limit`` per fixed window of ``period``, or of a calendar's
    unit, ``"DAY"``, ``"WEEK"``, ``"MONTH"`` or ``"YEAR"``, in ``period``'s place. ``align``
    lays a period's windows on the clock; ``offset`` (minutes ahead of UTC) lays the clock's
    or the calendar's in a local time."""

    period: Period
    align: bool = False
    offset: Optional[int] = None

    KEYWORD = "FIXED"

    def words(self) -> List[object]:
        return super().words() + _grid(self.align, self.offset)


@dataclass(frozen=True)
class Window(_Rate):
    """A CL.ALL limiter: at most ``limit`` in any ``period`` (an exact sliding window), or
    with ``buckets`` the sliding window of that many sub-windows."""

    buckets: Optional[int] = None

    KEYWORD = "WINDOW"

    def words(self) -> List[object]:
        return super().words() + _buckets(self.buckets)


@dataclass(frozen=True)
class Lease:
    """A CL.ALL limiter: at most ``limit`` holders at once, leases of ``lease_time``."""

    key: KeyT
    limit: int
    lease_time: int

    def words(self) -> List[object]:
        return ["LEASE", self.limit, self.lease_time]


Limiter = Union[Throttle, Fixed, Window, Lease]


def _grid(align: bool, offset: Optional[int]) -> List[object]:
    """A fixed window's ``ALIGN`` and ``OFFSET minutes``, as given."""
    return (["ALIGN"] if align else []) + ([] if offset is None else ["OFFSET", offset])


def _buckets(buckets: Optional[int]) -> List[object]:
    return [] if buckets is None else ["BUCKETS", buckets]


def _flags(ms: bool, refund: bool, dry_run: bool, block: Optional[int],
           at_most: bool = False, ban: Optional[int] = None) -> List[object]:
    words: List[object] = []
    if ms:
        words.append("MS")
    if refund:
        words.append("REFUND")
    if dry_run:
        words.append("DRYRUN")
    if ban is not None:
        words += ["BAN", ban]
    if at_most:
        words.append("ATMOST")
    if block is not None:
        words += ["BLOCK", block]
    return words


class commands:
    """Each command's arguments, as redis-py's ``execute_command`` takes them."""

    @staticmethod
    def throttle(key, max_burst, count, period, quantity=1, *, ms=False, refund=False,
                 dry_run=False, ban: Optional[int] = None, at_most=False,
                 block=None) -> List[object]:
        return ["CL.THROTTLE", key, max_burst, count, period, quantity,
                *_flags(ms, refund, dry_run, block, at_most, ban)]

    @staticmethod
    def fixed(key, limit, period, quantity=1, *, ms=False, refund=False, dry_run=False,
              count_denied=False, align=False, offset: Optional[int] = None,
              ban: Optional[int] = None, at_most=False, block=None) -> List[object]:
        words = ["CL.FIXED", key, limit, period, quantity, *_flags(ms, refund, dry_run, None)]
        if count_denied:
            words.append("COUNTDENIED")
        return words + _grid(align, offset) + _flags(False, False, False, block, at_most, ban)

    @staticmethod
    def window(key, limit, period, quantity=1, *, ms=False, refund=False, dry_run=False,
               buckets: Optional[int] = None, ban: Optional[int] = None, at_most=False,
               block=None) -> List[object]:
        return ["CL.WINDOW", key, limit, period, quantity, *_buckets(buckets),
                *_flags(ms, refund, dry_run, block, at_most, ban)]

    @staticmethod
    def lease(key, limit, lease_time, holder, *, ms=False, dry_run=False,
              block=None) -> List[object]:
        return ["CL.LEASE", key, limit, lease_time, holder,
                *_flags(ms, False, dry_run, block)]

    @staticmethod
    def release(key, holder) -> List[object]:
        return ["CL.RELEASE", key, holder]

    @staticmethod
    def holders(key, *, ms=False) -> List[object]:
        return ["CL.HOLDERS", key, *_flags(ms, False, False, None)]

    @staticmethod
    def smooth(key, permits, period, quantity=1, *, ms=False, burst: Optional[int] = None,
               warmup: Optional[int] = None, cold: Optional[int] = None, dry_run=False,
               ban: Optional[int] = None, block=None) -> List[object]:
        words: List[object] = ["CL.SMOOTH", key, permits, period, quantity]
        if ms:
            words.append("MS")
        for keyword, value in (("BURST", burst), ("WARMUP", warmup), ("COLD", cold)):
            if value is not None:
                words += [keyword, value]
        return words + _flags(False, False, dry_run, block, False, ban)

    @staticmethod
    def all(limiters: Sequence[Limiter], quantity=1, *, ms=False, refund=False, dry_run=False,
            ban: Optional[int] = None, detail=False, holder=None, at_most=False,
            block=None) -> List[object]:
        if not limiters:
            raise ValueError("CL.ALL takes at least one limiter")
        words: List[object] = ["CL.ALL", len(limiters), *(l.key for l in limiters)]
        for limiter in limiters:
            words += limiter.words()
        words += ["QUANTITY", quantity]
        if detail:
            words.append("DETAIL")
        if holder is not None:
            words += ["HOLDER", holder]
        return words + _flags(ms, refund, dry_run, block, at_most, ban)

    @staticmethod
    def top(*, count: Optional[int] = None) -> List[object]:
        return ["CL.TOP", *([] if count is None else ["COUNT", count])]

    @staticmethod
    def ban(key, span, *, ms=False) -> List[object]:
        return ["CL.BAN", key, span, *_flags(ms, False, False, None)]

    @staticmethod
    def unban(key) -> List[object]:
        return ["CL.UNBAN", key]


@dataclass(frozen=True)
class Denied:
    """One of the keys a node denied most: its denied calls over this minute and the one
    before, at least the truth, and the most that may exceed it."""

    key: bytes
    denied: int
    error: int


def _top(raw) -> List[Denied]:
    items = list(raw)
    return [Denied(items[i], int(items[i + 1]), int(items[i + 2]))
            for i in range(0, len(items) - 2, 3)]


@dataclass(frozen=True)
class Decided:
    """One decision, as an ``on_decision`` hook is told of it.

    From a client: ``limiter`` is the command's word (``"throttle"``, ``"fixed"``,
    ``"window"``, ``"lease"``, ``"smooth"`` or ``"all"``), ``key`` the call's key (for
    ``all``, the tuple of its limiters' keys), ``allowed`` whether the call was admitted, and
    ``reply`` its :class:`Reply` (for ``all`` with ``detail=True``, the list of them). From
    the ASGI middleware: one for each limit a request was decided on, ``limiter`` the
    policy's name and ``key`` the identity it counted."""

    limiter: str
    key: Union[KeyT, Tuple[KeyT, ...]]
    allowed: bool
    reply: Union[Reply, List[Reply]]


OnDecision = Callable[[Decided], None]
R = TypeVar("R", Reply, List[Reply])


def checked_hook(hook: Optional[OnDecision]) -> Optional[OnDecision]:
    """``on_decision`` as given, once it is a plain function: an ``async def`` one would be
    called and never awaited."""
    if hook is not None and (not callable(hook) or inspect.iscoroutinefunction(hook)):
        raise TypeError(f"on_decision is a plain function of a Decided, not {hook!r}")
    return hook


def _told(hook: Optional[OnDecision], limiter: str, key, reply: R, quantity, options) -> R:
    """Tells ``hook`` of a call that decided: not a refund, which gives units back, nor a dry
    run or a peek (quantity 0), which take none (the calls CL.TOP leaves out)."""
    decided = not options.get("refund") and not options.get("dry_run") and quantity != 0
    if hook is not None and decided:
        replies = reply if isinstance(reply, list) else [reply]
        hook(Decided(limiter, key, not any(each.limited for each in replies), reply))
    return reply


def _all_reply(raw, detail: bool):
    if detail:
        return [Reply.of(values) for values in raw]
    return Reply.of(raw)


def _holders(raw) -> List[Tuple[bytes, int]]:
    items = list(raw)
    return [(items[i], int(items[i + 1])) for i in range(0, len(items), 2)]


class Client:
    """The module's commands over a redis-py ``Redis`` (or ``RedisCluster``) client.

    ``via="auto"`` (the default) calls the module where the server has it, and the Functions
    library where it does not, loading the library (``FUNCTION LOAD REPLACE``) when it is
    missing or older than this client, unless ``load_library=False``; ``via="module"`` and
    ``via="library"`` force either. Waiting (``block=``) needs the module: the library refuses
    it. A server with neither raises :class:`~redis_cell.errors.ModuleMissingError`.

    ``on_decision``, if given, is called with a :class:`Decided` after every call that
    decides (every limiter's, not a refund, a dry run or a peek), in the calling thread,
    before the call returns: a place to count decisions in an app's own metrics. It is a plain
    function, not an ``async def`` one. What it raises, the call raises."""

    def __init__(self, redis, *, via: str = "auto", load_library: bool = True,
                 on_decision: Optional[OnDecision] = None):
        self.redis = redis
        self.on_decision = checked_hook(on_decision)
        self._call = Router(redis, via, load_library)

    def throttle(self, key, max_burst, count, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "throttle", key, Reply.of(self._call(
            *commands.throttle(key, max_burst, count, period, quantity, **options))), quantity, options)

    def fixed(self, key, limit, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "fixed", key, Reply.of(self._call(
            *commands.fixed(key, limit, period, quantity, **options))), quantity, options)

    def window(self, key, limit, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "window", key, Reply.of(self._call(
            *commands.window(key, limit, period, quantity, **options))), quantity, options)

    def lease(self, key, limit, lease_time, holder, **options) -> Reply:
        return _told(self.on_decision, "lease", key, Reply.of(self._call(
            *commands.lease(key, limit, lease_time, holder, **options))), 1, options)

    def release(self, key, holder) -> bool:
        return int(self._call(*commands.release(key, holder))) == 1

    def holders(self, key, *, ms=False) -> List[Tuple[bytes, int]]:
        return _holders(self._call(*commands.holders(key, ms=ms)))

    def smooth(self, key, permits, period, quantity=1, **options) -> Reply:
        """Guava's ``tryAcquire(quantity)`` on a limiter of ``permits`` per ``period`` that
        every caller of ``key`` shares; ``block=ms`` is ``tryAcquire(quantity, ms)``, and
        ``block=0`` ``acquire(quantity)`` (the module holds the reply until the reserved
        instant; the library refuses it)."""
        return _told(self.on_decision, "smooth", key, Reply.of(self._call(
            *commands.smooth(key, permits, period, quantity, **options))), quantity, options)

    def all(self, limiters: Sequence[Limiter], quantity=1, *, detail=False, **options):
        raw = self._call(*commands.all(limiters, quantity, detail=detail, **options))
        return _told(self.on_decision, "all", tuple(each.key for each in limiters),
                     _all_reply(raw, detail), quantity, options)

    def top(self, *, count: Optional[int] = None) -> List[Denied]:
        """The keys this node denied most over this minute and the one before (``count``,
        default 10): the module's alone; where the calls go to the library,
        :class:`~redis_cell.errors.NeedsModuleError`."""
        return _top(self._call(*commands.top(count=count)))

    def ban(self, key, span, *, ms=False) -> int:
        """Locks ``key`` out for ``span`` from now (seconds, or ms with ``ms=True``), its
        limiter's state kept: the ban's end, unix seconds rounded up (or ms). The module's
        alone, as :meth:`top`."""
        return int(self._call(*commands.ban(key, span, ms=ms)))

    def unban(self, key) -> bool:
        """Lifts ``key``'s ban, its limiter's state as it was: whether a ban held."""
        return int(self._call(*commands.unban(key))) == 1


class AsyncClient:
    """The same commands over redis-py's asyncio client (``redis.asyncio.Redis``), with the
    same options; ``on_decision`` is a plain function here too, called as the call returns."""

    def __init__(self, redis, *, via: str = "auto", load_library: bool = True,
                 on_decision: Optional[OnDecision] = None):
        self.redis = redis
        self.on_decision = checked_hook(on_decision)
        self._call = AsyncRouter(redis, via, load_library)

    async def throttle(self, key, max_burst, count, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "throttle", key, Reply.of(await self._call(
            *commands.throttle(key, max_burst, count, period, quantity, **options))), quantity, options)

    async def fixed(self, key, limit, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "fixed", key, Reply.of(await self._call(
            *commands.fixed(key, limit, period, quantity, **options))), quantity, options)

    async def window(self, key, limit, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "window", key, Reply.of(await self._call(
            *commands.window(key, limit, period, quantity, **options))), quantity, options)

    async def lease(self, key, limit, lease_time, holder, **options) -> Reply:
        return _told(self.on_decision, "lease", key, Reply.of(await self._call(
            *commands.lease(key, limit, lease_time, holder, **options))), 1, options)

    async def release(self, key, holder) -> bool:
        return int(await self._call(*commands.release(key, holder))) == 1

    async def holders(self, key, *, ms=False) -> List[Tuple[bytes, int]]:
        return _holders(await self._call(*commands.holders(key, ms=ms)))

    async def smooth(self, key, permits, period, quantity=1, **options) -> Reply:
        return _told(self.on_decision, "smooth", key, Reply.of(await self._call(
            *commands.smooth(key, permits, period, quantity, **options))), quantity, options)

    async def all(self, limiters: Sequence[Limiter], quantity=1, *, detail=False, **options):
        raw = await self._call(*commands.all(limiters, quantity, detail=detail, **options))
        return _told(self.on_decision, "all", tuple(each.key for each in limiters),
                     _all_reply(raw, detail), quantity, options)

    async def top(self, *, count: Optional[int] = None) -> List[Denied]:
        return _top(await self._call(*commands.top(count=count)))

    async def ban(self, key, span, *, ms=False) -> int:
        return int(await self._call(*commands.ban(key, span, ms=ms)))

    async def unban(self, key) -> bool:
        return int(await self._call(*commands.unban(key))) == 1
