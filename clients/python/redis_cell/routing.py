"""Where each call goes: the module's commands on a server that has loaded the module, and
the same limiters as the redis-cell Functions library (``FCALL``) on one that has not, or as
its script form (``EVALSHA``; redis-py's ``Script`` loads it on ``NOSCRIPT``) where the server
has no Functions (Redis 6.2) or refuses them to the user.

What the server has is asked once per connection pool, on first use (a client's
construction does no I/O), and remembered once found; a server with neither is asked again
on the next call, so that loading the module or the library later is seen without a restart,
and a route that stops answering (the module gone after a failover, the library flushed) is
asked again once, on the call that misses it. ``via="module"`` and ``via="library"`` skip the
question for that path.

The questions are one plan (``_plan``), a generator of the commands to send, and a call is
another (``_calling``): the sync and asyncio routers run both with one driver each, so that
they ask and send the same things in the same order.
"""

from __future__ import annotations

import asyncio
import re
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Generator, List, Optional, Sequence, Tuple

from redis.exceptions import (
    ClusterDownError,
    ConnectionError,
    RedisClusterException,
    ResponseError,
    TimeoutError,
)

from .errors import LibraryTooOldError, ModuleMissingError, NeedsModuleError, explained

try:  # valkey-py, which limits' valkey:// storages use, has errors of its own.
    from valkey.exceptions import ResponseError as ValkeyResponseError
except ImportError:  # pragma: no cover (valkey-py is optional)
    ValkeyResponseError = ResponseError

# The server's error replies, as either client raises them.
ERRORS = (ResponseError, ValkeyResponseError)

VIAS = ("auto", "module", "library")

MODULE, FUNCTIONS, SCRIPT = "module", "functions", "script"
# The module's commands, taken on trust where the user may not ask (COMMAND refused).
ASSUMED = "assumed"

# The module's probe: COMMAND INFO of a command the server does not know is an empty entry.
# As one word, so that redis-py gives the raw reply (its COMMAND parser fails on the empty
# entry).
_PROBE = ("COMMAND INFO", "CL.THROTTLE")
# Asked of every primary, each answering its version or its error.
_VERSION = ("FCALL_RO", "cl_version", 0)
# FUNCTION LOAD REPLACE, on the primaries named with it.
_LOAD = "load"


# The repository, when this package is its clients/python/redis_cell (a checkout, not an
# installed copy): its library is lua/dist, which the build copies into the package.
_HERE = Path(__file__).resolve().parent
_CHECKOUT = _HERE.parents[2] if _HERE.parent.parent.name == "clients" and _HERE.parent.name == "python" else None


def _source(name: str) -> str:
    """One of the library's forms: lua/dist's in a checkout, else the package's own
    (redis_cell/lua/, which the build put in)."""
    found = _CHECKOUT / "lua" / "dist" / name if _CHECKOUT else _HERE / "lua" / name
    if not found.is_file():
        raise RuntimeError(f"redis_cell ships no {name} ({found}): reinstall the package")
    return found.read_text(encoding="utf-8")


def library_source() -> str:
    """The library, as ``FUNCTION LOAD`` takes it (lua/dist/redis_cell.lua)."""
    return _source("redis_cell.lua")


def script_source() -> str:
    """The script form, as ``EVAL`` takes it: ``EVAL script numkeys key… name arg…``."""
    return _source("redis_cell.script.lua")


def shipped_version() -> str:
    """The version of the library this package ships, which a server's must reach."""
    found = re.search(r"^local CELL_VERSION = '([^']+)'", library_source(), re.M)
    if found is None:  # pragma: no cover (lua_forms.py writes it)
        raise RuntimeError("the shipped library names no version")
    return found.group(1)


def version_key(text) -> Tuple[int, int, int]:
    """A version's order: the leading digits of its first three parts, missing ones 0
    ("0.2.0-rc1" is 0.2.0)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    parts = [re.match(r"\d*", part).group() for part in str(text).split(".")[:3]]
    numbers = [int(part) if part else 0 for part in parts] + [0, 0, 0]
    return numbers[0], numbers[1], numbers[2]


@dataclass(frozen=True)
class Route:
    """How calls reach the limiters on one server: ``kind`` is MODULE, FUNCTIONS or SCRIPT;
    ``script`` is redis-py's Script of the script form, which sends EVALSHA and loads the
    script on NOSCRIPT."""

    kind: str
    script: Any = None
    # The module taken on trust (ASSUMED): a call that misses it looks for the library.
    assumed: bool = False


def _said(error: Exception, *texts: str) -> bool:
    said = str(error).lower()
    return any(text in said for text in texts)


def _refused(error: Exception) -> bool:
    """Not this user's to run (redis-py keeps NOPERM's text without its code)."""
    return _said(error, "noperm", "no permissions")


def _no_functions(error: Exception) -> bool:
    """FCALL_RO or FUNCTION is unknown (Redis 6.2), or not the user's to run."""
    return _said(error, "unknown command") or _refused(error)


def _function_missing(error: Exception) -> bool:
    return _said(error, "function not found")


def _plan(via: str, load: bool, ours: str) -> Generator[Any, Any, str]:
    """What the server has, as a route kind. Each yield is a step for the driver: _PROBE,
    answered by its reply or thrown its error; _VERSION, answered by each primary's reply or
    error, as (node, answer) pairs; (_LOAD, nodes), FUNCTION LOAD REPLACE on those nodes."""
    if via != "library":
        try:
            info = yield _PROBE
        except ERRORS as error:
            if not _refused(error):
                raise
            # COMMAND is not the user's to run: the module's commands, as before the clients
            # knew of the library.
            return ASSUMED
        if _names_a_command(info):
            return MODULE
        if via == "module":
            raise ModuleMissingError()
    behind = []
    for node, answer in (yield _VERSION):
        if isinstance(answer, ERRORS):
            if _no_functions(answer):
                return SCRIPT
            if not _function_missing(answer):
                raise answer
            behind.append((node, None))
        elif version_key(answer) < version_key(ours):
            behind.append((node, answer))
    if not behind:
        return FUNCTIONS
    if not load:
        older = [version for _, version in behind if version is not None]
        if older:
            raise LibraryTooOldError(min(older, key=version_key), ours)
        raise ModuleMissingError()
    try:
        # Only where it is missing or older: a primary with a newer library keeps it.
        yield (_LOAD, [node for node, _ in behind])
    except ERRORS as error:
        # Functions refused to this user (or by the service): the script form may be allowed.
        if _no_functions(error):
            return SCRIPT
        raise
    return FUNCTIONS


# A call's steps, as _calling yields them: the route to send by, a send on a route, and a
# detection of what to look for.
_ROUTE, _SEND, _DETECT = "route", "send", "detect"


def _calling(router: "_Router") -> Generator[Any, Any, Any]:
    """A call, as a plan of steps: send it by its route; where that misses what the route
    calls (the library flushed, the module gone after a failover), ask again, not from the
    cache, which a detection begun before the miss may have filled with what just missed,
    and send it once more."""
    route = yield (_ROUTE,)
    try:
        return (yield (_SEND, route))
    except ERRORS as error:
        if not router._gone(route, error):
            _raise(error)
    again = yield (_DETECT, router._again(route))
    try:
        return (yield (_SEND, again))
    except ERRORS as error:
        _raise(error)


def _names_a_command(info) -> bool:
    """COMMAND INFO's answer names the command: a list with an entry, or redis-py's dict of
    the entries it parsed."""
    if isinstance(info, dict):
        return any(info.values())
    if isinstance(info, (list, tuple)):
        return any(entry for entry in info)
    return bool(info)


# The commands only the module answers (clients/protocol.json).
_MODULE_ONLY = frozenset({"cl_top", "cl_ban", "cl_unban"})


def function_call(words: Sequence) -> Tuple[str, List, List]:
    """A module command's words as the library's ``(function, keys, args)``: CL.ALL's keys are
    its ``numkeys``, every other command's its one key."""
    name = str(words[0]).lower().replace(".", "_")
    if name in _MODULE_ONLY:
        raise NeedsModuleError(name.upper().replace("_", "."))
    if name == "cl_all":
        count = int(words[1])
        return name, list(words[2:2 + count]), list(words[2 + count:])
    return name, [words[1]], list(words[2:])


def fcall_words(words: Sequence) -> Tuple[List, List]:
    """``FCALL`` (``FCALL_RO`` for what only reads) of a module command's words, and its
    keys."""
    name, keys, args = function_call(words)
    command = "FCALL_RO" if name == "cl_holders" else "FCALL"
    return [command, name, len(keys), *keys, *args], keys


def _raise(error: Exception):
    """The server's error, as :func:`~redis_cell.errors.explained` names it."""
    named = explained(error)
    if named is error:
        raise error
    raise named from error


# Routes found, by connection pool (a cluster client is its own) and by what was asked for.
_ROUTES: "weakref.WeakKeyDictionary[object, Dict[Tuple[str, bool], Route]]" = (
    weakref.WeakKeyDictionary())

# Where the slot cache is stale or the cluster in trouble, FCALL sent to its key's node falls
# back on redis-py's own routing and retries, which a module command gets from the start.
_CLUSTER_TROUBLE = (ConnectionError, TimeoutError, ClusterDownError, RedisClusterException)


def _cluster(client) -> bool:
    return hasattr(client, "get_default_node")


def _primaries(client) -> list:
    """The nodes a keyless step goes to, one at a time: a cluster's primaries, or the one
    server (None)."""
    return client.get_primaries() if _cluster(client) else [None]


def _on(nodes) -> dict:
    """execute_command's options for a step on these nodes (redis-py's own routing would ask
    the server for FCALL_RO's keys, which Redis 6.2 does not know; a flag such as PRIMARIES
    would too)."""
    if nodes is None or nodes == [None]:
        return {}
    return {"target_nodes": nodes}


def _pool(client) -> object:
    return getattr(client, "connection_pool", None) or client


def check_options(via: str, load_library: bool) -> None:
    """Refuses a ``via`` or ``load_library`` the router could not read, before anything is
    built on them."""
    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, not {via!r}")
    # A string such as "false" would be truthy: only a bool says what the caller meant.
    if not isinstance(load_library, bool):
        raise TypeError(f"load_library must be True or False, not {load_library!r}")


class _Router:
    def __init__(self, client, via: str = "auto", load_library: bool = True) -> None:
        check_options(via, load_library)
        self.client = client
        self.via = via
        self.load = load_library

    def _known(self) -> Optional[Route]:
        if self.via == "module":
            return Route(MODULE)
        return _ROUTES.get(_pool(self.client), {}).get((self.via, self.load))

    def _found(self, kind: str) -> Route:
        script = self.client.register_script(script_source()) if kind == SCRIPT else None
        route = Route(MODULE, assumed=True) if kind == ASSUMED else Route(kind, script)
        _ROUTES.setdefault(_pool(self.client), {})[(self.via, self.load)] = route
        return route

    def _gone(self, route: Route, error: Exception) -> bool:
        """The call missed what its route calls: the library (flushed, or a restart without
        it), or, found by asking or taken on trust, the module (a failover to a server
        without it)."""
        if route.kind == FUNCTIONS:
            return _function_missing(error)
        return (route.kind == MODULE and (self.via == "auto" or route.assumed)
                and isinstance(explained(error), ModuleMissingError))

    def _again(self, route: Route) -> str:
        """What to ask for after a miss: the library, where the module was taken on trust."""
        return "library" if route.assumed else self.via

    def _fcall(self, words):
        """FCALL's words and, on a cluster, its key's node (or None)."""
        fcall, keys = fcall_words(words)
        node = None
        if _cluster(self.client) and keys:
            try:
                node = self.client.get_node_from_key(keys[0])
            except _CLUSTER_TROUBLE:
                node = None
        return fcall, node


class Router(_Router):
    """The calls of one redis-py client (or RedisCluster)."""

    def __init__(self, client, via: str = "auto", load_library: bool = True) -> None:
        super().__init__(client, via, load_library)
        # One detection at a time: concurrent first calls wait for the first's answer rather
        # than each loading the library.
        self._detecting = threading.Lock()

    def _step(self, step):
        if step is _PROBE:
            return self.client.execute_command(*_PROBE, **_on(
                self.client.get_default_node() if _cluster(self.client) else None))
        if step is _VERSION:
            answers = []
            for node in _primaries(self.client):
                try:
                    answers.append((node, self.client.execute_command(*_VERSION, **_on(node))))
                except ERRORS as error:
                    answers.append((node, error))
            return answers
        _, nodes = step
        return self.client.execute_command("FUNCTION", "LOAD", "REPLACE", library_source(),
                                           **_on(nodes))

    @staticmethod
    def _drive(plan, do):
        """Runs a plan to its end: each step done by `do`, its reply sent back in, or its
        error thrown in."""
        reply: Any = None
        error: Optional[Exception] = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as done:
                return done.value
            try:
                reply, error = do(step), None
            except ERRORS as failure:
                reply, error = None, failure

    def _run(self, via: str) -> Route:
        """The plan, run to its route; the caller holds the lock."""
        return self._found(self._drive(_plan(via, self.load, shipped_version()), self._step))

    def _detect(self, via: Optional[str] = None) -> Route:
        with self._detecting:
            return self._run(via or self.via)

    def route(self) -> Route:
        known = self._known()
        if known is not None:
            return known
        # Under the lock, so that a call that waited for another's detection takes its answer.
        with self._detecting:
            return self._known() or self._run(self.via)

    def __call__(self, *words):
        def do(step):
            if step[0] == _ROUTE:
                return self.route()
            if step[0] == _SEND:
                return self._send(step[1], words)
            return self._detect(step[1])

        return self._drive(_calling(self), do)

    def _send(self, route: Route, words):
        if route.kind == MODULE:
            return self.client.execute_command(*words)
        if route.kind == FUNCTIONS:
            fcall, node = self._fcall(words)
            if node is not None:
                try:
                    return self.client.execute_command(*fcall, target_nodes=node)
                except _CLUSTER_TROUBLE:
                    pass
            return self.client.execute_command(*fcall)
        name, keys, args = function_call(words)
        return route.script(keys=keys, args=[name, *args], client=self.client)

    def available(self) -> bool:
        """The limiters can be called: the module (asked, even when forced), or the library
        (loaded here if allowed)."""
        try:
            if self.via == "module":
                self._detect()
            else:
                self.route()
            return True
        except ERRORS:
            return False


class AsyncRouter(_Router):
    """The calls of one redis-py asyncio client, as :class:`Router`'s."""

    def __init__(self, client, via: str = "auto", load_library: bool = True) -> None:
        super().__init__(client, via, load_library)
        # Made on first use, in the loop that uses it.
        self._detecting: Optional[asyncio.Lock] = None

    async def _step(self, step):
        if step is _PROBE:
            return await self.client.execute_command(*_PROBE, **_on(
                self.client.get_default_node() if _cluster(self.client) else None))
        if step is _VERSION:
            answers = []
            for node in _primaries(self.client):
                try:
                    answers.append((node, await self.client.execute_command(*_VERSION,
                                                                            **_on(node))))
                except ERRORS as error:
                    answers.append((node, error))
            return answers
        _, nodes = step
        return await self.client.execute_command("FUNCTION", "LOAD", "REPLACE",
                                                 library_source(), **_on(nodes))

    @staticmethod
    async def _drive(plan, do):
        """Runs a plan to its end, as Router's driver does, each step awaited."""
        reply: Any = None
        error: Optional[Exception] = None
        while True:
            try:
                step = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as done:
                return done.value
            try:
                reply, error = await do(step), None
            except ERRORS as failure:
                reply, error = None, failure

    async def _run(self, via: str) -> Route:
        """The plan, run to its route; the caller holds the lock."""
        if _cluster(self.client):
            # An asyncio cluster learns its nodes on its first command; the plan names them.
            await self.client.initialize()
        plan = _plan(via, self.load, shipped_version())
        return self._found(await self._drive(plan, self._step))

    def _lock(self) -> asyncio.Lock:
        if self._detecting is None:
            self._detecting = asyncio.Lock()
        return self._detecting

    async def _detect(self, via: Optional[str] = None) -> Route:
        async with self._lock():
            return await self._run(via or self.via)

    async def route(self) -> Route:
        known = self._known()
        if known is not None:
            return known
        async with self._lock():
            return self._known() or await self._run(self.via)

    async def __call__(self, *words):
        async def do(step):
            if step[0] == _ROUTE:
                return await self.route()
            if step[0] == _SEND:
                return await self._send(step[1], words)
            return await self._detect(step[1])

        return await self._drive(_calling(self), do)

    async def _send(self, route: Route, words):
        if route.kind == MODULE:
            return await self.client.execute_command(*words)
        if route.kind == FUNCTIONS:
            fcall, node = self._fcall(words)
            if node is not None:
                try:
                    return await self.client.execute_command(*fcall, target_nodes=node)
                except _CLUSTER_TROUBLE:
                    pass
            return await self.client.execute_command(*fcall)
        name, keys, args = function_call(words)
        return await route.script(keys=keys, args=[name, *args], client=self.client)

    async def available(self) -> bool:
        try:
            await (self._detect() if self.via == "module" else self.route())
            return True
        except ERRORS:
            return False
