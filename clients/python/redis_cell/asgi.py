"""Rate limits for FastAPI and Starlette routes, decided by the module (or its library).

A route declares its limits, each a limiter (:class:`~redis_cell.Throttle`,
:class:`~redis_cell.Fixed` or :class:`~redis_cell.Window`, whose key is the policy's name)
and whose count it is (a key function: the client's address, a header, the user)::

    limiter = RateLimiter(AsyncClient(redis.asyncio.Redis()))
    api = limiter.limit(Limit(Throttle("burst", 9, 10, 1), by=client_address),
                        Limit(Window("daily", 1000, 86400, buckets=24), by=header("X-API-Key")))

    @app.get("/", dependencies=[Depends(api)])           # FastAPI
    Route("/", api.wrap(endpoint))                        # Starlette

A request is charged once on each limit, or on none. The limits that count one identity share
its hash tag (``{identity}``), so they are decided in one ``CL.ALL`` call, all or nothing, on
whichever node holds them. Limits on different identities (an address and an API key) may sit
on different nodes of a cluster, where no single call can take them: each identity's limits are
decided in turn, in the order the route first names each identity, and when one denies, what
the earlier ones took is given back (``CL.ALL … REFUND``).

Every decided response carries ``RateLimit-Policy`` (every limit that applied) and
``RateLimit`` (the binding one) as draft-ietf-httpapi-ratelimit-headers-11 writes them; a
denial is a 429 with ``Retry-After``. A server that fails to answer is no denial: the request
is refused with a 503 (``fail_open=False``, the default) or let through undecided.
"""

import dataclasses
import functools
import inspect
import logging
import math
import re
import time
from fractions import Fraction
from typing import (
    Awaitable,
    Callable,
    Dict,
    List,
    Optional,
    Sequence,
    Tuple,
    Type,
    Union,
    cast,
)

from redis.exceptions import RedisError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .client import AsyncClient, Decided, Fixed, OnDecision, Reply, Throttle, Window, checked_hook

# The server did not decide: none of these is a denial.
FAILURES: Tuple[Type[BaseException], ...] = (RedisError, OSError)
try:  # an AsyncClient over valkey-py fails with valkey-py's errors.
    from valkey.exceptions import ValkeyError

    FAILURES += (ValkeyError,)
except ImportError:  # pragma: no cover (valkey-py is optional)
    pass

logger = logging.getLogger(__name__)

RateLimiterKind = Union[Throttle, Fixed, Window]
KeyFunc = Callable[[Request], Union[Optional[str], Awaitable[Optional[str]]]]
Endpoint = Callable[[Request], Union[Response, Awaitable[Response]]]

STANDARD_HEADERS = ("draft-6", "draft-7", "draft-11")

# A policy's name is written into keys and, as a Structured Field String, into headers: kept to
# characters that need no escaping in either, and that no identity's hash tag can be confused
# with.
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# CL.ALL's numkeys is at most 16.
MOST_LIMITS = 16


def client_address(request: Request) -> Optional[str]:
    """The client's address, as the server saw it (behind a proxy, the proxy's, unless the
    server is told to trust its forwarding headers: uvicorn's ``--forwarded-allow-ips``)."""
    return request.client.host if request.client else None


def header(name: str) -> Callable[[Request], Optional[str]]:
    """The value of the request's header ``name`` (an API key, say); a request without it is not
    counted by that limit."""

    def value(request: Request) -> Optional[str]:
        return request.headers.get(name)

    return value


def user(request: Request) -> Optional[str]:
    """The authenticated user's identity, as Starlette's ``AuthenticationMiddleware`` sets it; an
    anonymous request is not counted by that limit."""
    found = request.scope.get("user")
    if found is None or not found.is_authenticated:
        return None
    return str(found.identity)


# A calendar window's `w`: its unit's longest length, in seconds (a month of 31 days, a year
# of 366), so that the rate the policy states is never over the true one.
_CALENDAR_SECONDS = {"DAY": 86_400, "WEEK": 604_800, "MONTH": 2_678_400, "YEAR": 31_622_400}


def _calendar(period: object) -> bool:
    """Whether a fixed window's period is a calendar's unit, by its word."""
    return isinstance(period, str) and period.upper() in _CALENDAR_SECONDS


def _check_numbers(limiter: RateLimiterKind) -> None:
    """The limiter's numbers as the module bounds them (in seconds: the middleware never sends
    MS), checked where the route is declared: numbers the server refuses would refuse every
    request, or, failing open, let every one through."""
    least = {"max_burst": 0, "count": 1, "period": 1} if isinstance(limiter, Throttle) \
        else {"limit": 1, "period": 1}
    if isinstance(limiter, Fixed) and _calendar(limiter.period):
        del least["period"]
        if limiter.align:
            raise ValueError("align is for a period in seconds: a calendar period keeps to the "
                             "calendar already")
    if isinstance(limiter, Fixed) and limiter.offset is not None:
        offset = limiter.offset
        if isinstance(offset, bool) or not isinstance(offset, int) or not -1439 <= offset <= 1439:
            raise ValueError(f"offset is minutes ahead of UTC, -1439 to 1439, not {offset!r}")
        if not (limiter.align or _calendar(limiter.period)):
            raise ValueError("offset moves a grid: give align=True or a calendar period")
    for name, low in least.items():
        value = getattr(limiter, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} is an integer of at least {low}, not {value!r}")
    buckets = getattr(limiter, "buckets", None)
    if buckets is not None and (isinstance(buckets, bool) or not isinstance(buckets, int)
                                or not 2 <= buckets <= 1024 or limiter.period * 1000 % buckets):
        raise ValueError("buckets is 2 to 1024 cells that cut the period into whole "
                         f"milliseconds, not {buckets!r}")


@dataclasses.dataclass(frozen=True)
class Limit:
    """One limit of a route: the limiter, whose key is the policy's name (letters, digits,
    ``_``, ``-`` and ``.``), and ``by``, the request's identity that it counts.

    ``by`` may be a coroutine function. When it answers None or an empty string, the limit does
    not apply to that request: an API key's limit, say, says nothing of a request without one,
    which an address limit on the same route catches."""

    limiter: RateLimiterKind
    by: KeyFunc = client_address

    def __post_init__(self) -> None:
        if not isinstance(self.limiter, (Throttle, Fixed, Window)):
            raise TypeError(f"a route's limiter is a Throttle, Fixed or Window, not {self.limiter!r}")
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"a policy's name is letters, digits, '_', '-' and '.', not {self.name!r}")
        _check_numbers(self.limiter)

    @property
    def name(self) -> str:
        return cast(str, self.limiter.key)  # __post_init__ holds it to a str

    @property
    def quota(self) -> Tuple[int, int]:
        """The policy as the draft states one: ``q`` units in a window of ``w`` seconds.

        A window's are its limit and period. GCRA has no window: its ``max_burst + 1`` units
        (the reply's ``limit``, which ``r`` counts down) come back one every ``period / count``,
        so an empty limiter is whole again after ``(max_burst + 1) · period / count``, rounded up
        to whole seconds (a rate stated a little under the true one, never over). A calendar
        window's is its unit's longest: a month of 31 days, a year of 366."""
        if isinstance(self.limiter, Throttle):
            units = self.limiter.max_burst + 1
            return units, max(1, math.ceil(Fraction(units * self.limiter.period, self.limiter.count)))
        period = self.limiter.period
        if isinstance(period, str):
            return self.limiter.limit, _CALENDAR_SECONDS[period.upper()]
        return self.limiter.limit, period


@dataclasses.dataclass(frozen=True)
class Decision:
    """What a request was answered: ``status`` None (admitted, or undecided and let through),
    429 (denied) or 503 (undecided and refused), and the fields to send with it."""

    status: Optional[int]
    headers: Dict[str, str]


def binding(decided: Sequence[Tuple[Limit, Reply]]) -> Tuple[Limit, Reply]:
    """The limit closest to denial, the one the fields describe.

    Denied: the denying limit with the longest wait (one that never fits, longest of all), as
    CL.ALL's own reply picks it, so that a retry after ``Retry-After`` finds every limit open.
    Admitted: the fewest units left relative to the limit (1 of 10 binds before 50 of 1000),
    ties to the longest ``reset_after``. Further ties go to the first declared."""
    denied = [pair for pair in decided if pair[1].limited]
    if denied:
        return max(denied, key=lambda pair: math.inf if pair[1].retry_after is None
                   else pair[1].retry_after)
    return min(decided, key=lambda pair: (Fraction(pair[1].remaining, pair[1].limit),
                                          -pair[1].reset_after))


def _wait(reply: Reply) -> int:
    """The draft's ``t``: when denied, the wait until this request fits (``Retry-After``'s);
    when admitted, the wait until the whole quota is back (for GCRA and the sliding windows,
    some of it comes back sooner, which the draft allows ``t`` to leave unsaid)."""
    if reply.limited and reply.retry_after is not None:
        return reply.retry_after
    return reply.reset_after


def fields(applied: Sequence[Limit], bound: Limit, reply: Reply, standard: Optional[str],
           legacy: bool) -> Dict[str, str]:
    """The rate-limit fields of a decided response: the policies of every limit that applied,
    the state of the binding one, in the forms asked for."""
    limit, remaining, wait = reply.limit, reply.remaining, _wait(reply)
    headers: Dict[str, str] = {}
    if standard == "draft-11":
        headers["RateLimit-Policy"] = ", ".join(
            f'"{each.name}";q={each.quota[0]};w={each.quota[1]}' for each in applied)
        headers["RateLimit"] = f'"{bound.name}";r={remaining};t={wait}'
    elif standard in ("draft-6", "draft-7"):
        headers["RateLimit-Policy"] = ", ".join(
            f"{each.quota[0]};w={each.quota[1]}" for each in applied)
        if standard == "draft-7":
            headers["RateLimit"] = f"limit={limit}, remaining={remaining}, reset={wait}"
        else:
            headers["RateLimit-Limit"] = str(limit)
            headers["RateLimit-Remaining"] = str(remaining)
            headers["RateLimit-Reset"] = str(wait)
    if legacy:
        headers["X-RateLimit-Limit"] = str(limit)
        headers["X-RateLimit-Remaining"] = str(remaining)
        # An instant (Unix seconds), as these headers have always sent it, by this host's clock.
        headers["X-RateLimit-Reset"] = str(math.ceil(time.time()) + wait)
    if reply.limited:
        headers["Retry-After"] = str(wait)
    return headers


def _tag(identity: str) -> str:
    """The identity as a hash tag's content: braces escaped (with ``%`` itself), so that every
    key of one identity hashes by the whole identity, whatever a header sent."""
    return identity.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")


class RateLimiter:
    """The limits of an app's routes, decided on one :class:`~redis_cell.AsyncClient` (its
    ``via`` and ``load_library`` choose the module or the library).

    - ``prefix``: what every key starts with; a key is ``<prefix><policy>:{<identity>}``, so
      routes that name the same policy share its count.
    - ``fail_open``: when the server fails to answer (down, unreachable, an error reply), let
      the request through without fields (True), or refuse it with a 503 (False, the default).
    - ``standard_headers``: ``"draft-11"`` (the default: ``RateLimit-Policy`` and
      ``RateLimit``), ``"draft-7"``, ``"draft-6"``, or None for neither;
      ``legacy_headers``: the ``X-RateLimit-*`` triple too.
    - ``on_decision``: called with a :class:`~redis_cell.Decided` (the policy's name, the
      identity, admitted or not, the limit's reply) once a request's outcome is settled: for
      each limit an admitted request was charged on, or for each limit that denied a denied
      one (the others took nothing, or gave it back). A plain function, for an app's own
      metrics; what it raises, the request raises, after any refund is done.
    """

    def __init__(self, cell: AsyncClient, *, prefix: str = "ratelimit:", fail_open: bool = False,
                 standard_headers: Optional[str] = "draft-11", legacy_headers: bool = False,
                 on_decision: Optional[OnDecision] = None):
        if standard_headers is not None and standard_headers not in STANDARD_HEADERS:
            raise ValueError(f"standard_headers is one of {', '.join(STANDARD_HEADERS)} or "
                             f"None, not {standard_headers!r}")
        self.cell = cell
        self.prefix = prefix
        self.fail_open = fail_open
        self.standard_headers = standard_headers
        self.legacy_headers = legacy_headers
        self.on_decision = checked_hook(on_decision)
        self._policies: Dict[str, Limit] = {}

    def limit(self, *limits: Limit) -> "RouteLimits":
        """A route's limits: a FastAPI dependency, and a wrapper of Starlette endpoints."""
        if not limits:
            raise ValueError("a route takes at least one limit")
        if len(limits) > MOST_LIMITS:
            raise ValueError(f"a route takes at most {MOST_LIMITS} limits, as CL.ALL does")
        names = [each.name for each in limits]
        if len(set(names)) != len(names):
            raise ValueError(f"a route names each policy once, not {names}")
        self._claim(limits)
        return RouteLimits(self, limits)

    def _claim(self, limits: Sequence[Limit]) -> None:
        """Holds a policy's name to one limiter and one identity across this limiter's routes: the
        key names neither, so a route counting the same policy by another identity could spend a
        victim's units by sending the victim's address as its API key, and one with other
        numbers would find a key of another shape."""
        for limit in limits:
            held = self._policies.setdefault(limit.name, limit)
            if held.by is not limit.by or held.limiter.words() != limit.limiter.words():
                raise ValueError(f"the policy {limit.name} is declared already, with another "
                                 "limiter or identity")

    def _key(self, limit: Limit, identity: str) -> str:
        return f"{self.prefix}{limit.name}:{{{_tag(identity)}}}"

    async def decide(self, request: Request, limits: Sequence[Limit]) -> Decision:
        """Charges the request on every limit that applies to it, or on none."""
        groups: Dict[str, List[Limit]] = {}
        for limit in limits:
            identity = limit.by(request)
            if inspect.isawaitable(identity):
                identity = await identity
            # None or "": the limit does not apply (as the Express middleware reads them).
            if identity is not None and identity != "":
                groups.setdefault(str(identity), []).append(limit)
        applied = [limit for group in groups.values() for limit in group]
        if not applied:
            return Decision(None, {})
        decided: List[Tuple[Limit, str, Reply]] = []
        charged: List[List[RateLimiterKind]] = []
        for identity, group in groups.items():
            keyed = [dataclasses.replace(limit.limiter, key=self._key(limit, identity))
                     for limit in group]
            try:
                replies = await self.cell.all(keyed, detail=True)
            except FAILURES as error:
                if self.fail_open:
                    # What was taken stays taken: the request goes on, as if every limit admitted.
                    logger.warning("rate limits undecided, the request let through: %r", error)
                    return Decision(None, {})
                logger.error("rate limits undecided, the request refused (503): %r", error)
                await self._give_back(charged)
                return Decision(503, {})
            decided += [(limit, identity, reply) for limit, reply in zip(group, replies)]
            if any(reply.limited for reply in replies):
                await self._give_back(charged)
                break
            charged.append(keyed)
        self._tell(decided)
        bound, reply = binding([(limit, reply) for limit, _, reply in decided])
        headers = fields(applied, bound, reply, self.standard_headers, self.legacy_headers)
        return Decision(429 if reply.limited else None, headers)

    def _tell(self, decided: Sequence[Tuple[Limit, str, Reply]]) -> None:
        """Tells ``on_decision`` of what a request was charged on, or of what denied it."""
        if self.on_decision is None:
            return
        denied = any(reply.limited for _, _, reply in decided)
        for limit, identity, reply in decided:
            if reply.limited or not denied:
                self.on_decision(Decided(limit.name, identity, not reply.limited, reply))

    async def _give_back(self, charged: List[List[RateLimiterKind]]) -> None:
        """Refunds what the earlier identities' calls took, for a request that is not served. A
        refund that fails leaves those units taken, as an error after the call would have: it
        is logged, and the request is answered all the same."""
        for keyed in charged:
            try:
                await self.cell.all(keyed, refund=True)
            except FAILURES as error:
                logger.warning("a refund of rate limits failed: %r", error)


def _is_async(endpoint: object) -> bool:
    """Whether calling the endpoint gives a coroutine: an async function, a partial of one, or
    an object whose ``__call__`` is one."""
    while isinstance(endpoint, functools.partial):
        endpoint = endpoint.func
    return inspect.iscoroutinefunction(endpoint) or inspect.iscoroutinefunction(
        getattr(endpoint, "__call__", None))


class RouteLimits:
    """One route's limits, as FastAPI takes them (``Depends(limits)``) and as a wrapper of a
    Starlette endpoint (``Route(path, limits.wrap(endpoint))``).

    A denial raises ``HTTPException(429)`` with the fields and ``Retry-After``, and a refusal
    ``HTTPException(503)``, so that the app's exception handlers shape their bodies. The fields
    of an admitted request are also at ``request.state.rate_limit_headers``, for a FastAPI
    endpoint that returns a ``Response`` of its own (FastAPI leaves out a dependency's headers
    then)."""

    def __init__(self, limiter: RateLimiter, limits: Sequence[Limit]):
        self.limiter = limiter
        self.limits = tuple(limits)

    async def check(self, request: Request) -> Dict[str, str]:
        """The fields to send with the response; raises HTTPException for a 429 or a 503."""
        decision = await self.limiter.decide(request, self.limits)
        request.state.rate_limit_headers = decision.headers
        if decision.status is not None:
            raise HTTPException(decision.status, headers=decision.headers or None)
        return decision.headers

    async def __call__(self, request: Request, response: Response) -> None:
        response.headers.update(await self.check(request))

    def wrap(self, endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
        """A Starlette endpoint (a function of the request, sync or async) behind these
        limits."""

        async def limited(request: Request) -> Response:
            headers = await self.check(request)
            if _is_async(endpoint):
                response: Response = await endpoint(request)
            else:
                sync = cast(Callable[[Request], Response], endpoint)
                response = await run_in_threadpool(sync, request)
            response.headers.update(headers)
            return response

        limited.__name__ = getattr(endpoint, "__name__", "limited")
        limited.__doc__ = getattr(endpoint, "__doc__", None)
        return limited
