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

The questions are one plan (``_plan``), a generator of the commands to send, which the sync
and asyncio drivers run: both ask the same things in the same order.
"""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, Generator, List, Optional, Sequence, Tuple

from redis.exceptions import AskError, MovedError, ResponseError

from .errors import LibraryTooOldError, ModuleMissingError, explained

try:  # valkey-py, which limits' valkey:// storages use, has errors of its own.
    from valkey.exceptions import ResponseError as ValkeyResponseError
except ImportError:  # pragma: no cover (valkey-py is optional)
    ValkeyResponseError = ResponseError

# The server's error replies, as either client raises them.
ERRORS = (ResponseError, ValkeyResponseError)

VIAS = ("auto", "module", "library")

MODULE, FUNCTIONS, SCRIPT = "module", "functions", "script"

# The module's probe: COMMAND INFO of a command the server does not know is an empty entry.
# As one word, so that redis-py gives the raw reply (its COMMAND parser fails on the empty
# entry).
_PROBE = ("COMMAND INFO", "CL.THROTTLE")
_VERSION = ("FCALL_RO", "cl_version", 0)


def _source(name: str) -> str:
    return resources.files(__package__).joinpath("lua", name).read_text(encoding="utf-8")


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


def _plan(via: str, load: bool, ours: str) -> Generator[tuple, Any, str]:
    """What the server has, as a route kind: each yield is a command to send, answered by its
    reply (on a cluster, the primaries' replies by node) or thrown its error."""
    if via != "library":
        try:
            info = yield _PROBE
        except ERRORS as error:
            if not _refused(error):
                raise
            # COMMAND is not the user's to run: the module's commands, as before the clients
            # knew of the library.
            return MODULE
        if _names_a_command(info):
            return MODULE
        if via == "module":
            raise ModuleMissingError()
    try:
        replies = yield _VERSION
    except ERRORS as error:
        if _no_functions(error):
            return SCRIPT
        if not _function_missing(error):
            raise
        replies = None
    # On a cluster, the oldest primary's.
    versions = list(replies.values()) if isinstance(replies, dict) else [replies]
    version = None if replies is None else min(versions, key=version_key)
    if version is not None and version_key(version) >= version_key(ours):
        return FUNCTIONS
    if not load:
        if version is None:
            raise ModuleMissingError()
        raise LibraryTooOldError(version, ours)
    try:
        yield ("FUNCTION", "LOAD", "REPLACE", library_source())
    except ERRORS as error:
        # Functions refused to this user (or by the service): the script form may be allowed.
        if _no_functions(error):
            return SCRIPT
        raise
    return FUNCTIONS


def _names_a_command(info) -> bool:
    """COMMAND INFO's answer names the command: a list with an entry, or redis-py's dict of
    the entries it parsed."""
    if isinstance(info, dict):
        return any(info.values())
    if isinstance(info, (list, tuple)):
        return any(entry for entry in info)
    return bool(info)


def function_call(words: Sequence) -> Tuple[str, List, List]:
    """A module command's words as the library's ``(function, keys, args)``: CL.ALL's keys are
    its ``numkeys``, every other command's its one key."""
    name = str(words[0]).lower().replace(".", "_")
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


# Routes found, by connection pool and by what the caller asked for.
_ROUTES: "weakref.WeakKeyDictionary[object, Dict[Tuple[str, bool], Route]]" = (
    weakref.WeakKeyDictionary())
# One detection at a time in a process: concurrent first calls wait for the first's answer
# rather than each loading the library.
_DETECTING = threading.Lock()


def _cluster(client) -> bool:
    return hasattr(client, "get_default_node")


def _where(client, command) -> dict:
    """Where a cluster client sends the plan's keyless commands: the module's probe to one
    node, the version question and FUNCTION LOAD to every primary (redis-py would otherwise
    ask the server for the keys of FCALL_RO, which Redis 6.2 does not know)."""
    if not _cluster(client):
        return {}
    if command is _PROBE:
        return {"target_nodes": client.get_default_node()}
    # The nodes themselves: a flag such as PRIMARIES still has redis-py look for keys.
    return {"target_nodes": client.get_primaries()}


def _keyed(client, keys) -> dict:
    """Where a cluster client sends FCALL: its key's node, which redis-py would otherwise ask
    a node for (COMMAND GETKEYS) on every call, FCALL's keys being movable."""
    if not _cluster(client) or not keys:
        return {}
    return {"target_nodes": client.get_node_from_key(keys[0])}


def _pool(client) -> object:
    return getattr(client, "connection_pool", None) or client


def _check(via: str) -> str:
    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, not {via!r}")
    return via


class _Router:
    def __init__(self, client, via: str = "auto", load_library: bool = True) -> None:
        self.client = client
        self.via = _check(via)
        self.load = bool(load_library)

    def _known(self) -> Optional[Route]:
        if self.via == "module":
            return Route(MODULE)
        return _ROUTES.get(_pool(self.client), {}).get((self.via, self.load))

    def _found(self, kind: str) -> Route:
        script = self.client.register_script(script_source()) if kind == SCRIPT else None
        route = Route(kind, script)
        _ROUTES.setdefault(_pool(self.client), {})[(self.via, self.load)] = route
        return route

    def _forget(self) -> None:
        _ROUTES.get(_pool(self.client), {}).pop((self.via, self.load), None)

    def _gone(self, route: Route, error: Exception) -> bool:
        """The call missed what its route calls: the library (flushed, or a restart without
        it), or, found by asking, the module (a failover to a server without it)."""
        if route.kind == FUNCTIONS:
            return _function_missing(error)
        return (route.kind == MODULE and self.via == "auto"
                and isinstance(explained(error), ModuleMissingError))


class Router(_Router):
    """The calls of one redis-py client (or RedisCluster)."""

    def _detect(self) -> Route:
        plan = _plan(self.via, self.load, shipped_version())
        reply: Any = None
        error: Optional[Exception] = None
        while True:
            try:
                command = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as done:
                return self._found(done.value)
            try:
                reply = self.client.execute_command(*command, **_where(self.client, command))
                error = None
            except ERRORS as failure:
                reply, error = None, failure

    def route(self) -> Route:
        known = self._known()
        if known is not None:
            return known
        with _DETECTING:
            return self._known() or self._detect()

    def __call__(self, *words):
        route = self.route()
        try:
            return self._send(route, words)
        except ERRORS as error:
            if not self._gone(route, error):
                _raise(error)
        self._forget()
        try:
            return self._send(self.route(), words)
        except ERRORS as error:
            _raise(error)

    def _send(self, route: Route, words):
        if route.kind == MODULE:
            return self.client.execute_command(*words)
        if route.kind == FUNCTIONS:
            fcall, keys = fcall_words(words)
            try:
                return self.client.execute_command(*fcall, **_keyed(self.client, keys))
            except (MovedError, AskError):
                # The slot moved: redis-py's own routing follows it.
                return self.client.execute_command(*fcall)
        name, keys, args = function_call(words)
        return route.script(keys=keys, args=[name, *args], client=self.client)

    def available(self) -> bool:
        """The limiters can be called: the module (asked, even when forced), or the library
        (loaded here if allowed)."""
        try:
            if self.via == "module":
                with _DETECTING:
                    self._detect()
            else:
                self.route()
            return True
        except ERRORS:
            return False


class AsyncRouter(_Router):
    """The calls of one redis-py asyncio client, as :class:`Router`'s."""

    async def _detect(self) -> Route:
        if _cluster(self.client):
            # An asyncio cluster learns its nodes on its first command; the plan names them.
            await self.client.initialize()
        plan = _plan(self.via, self.load, shipped_version())
        reply: Any = None
        error: Optional[Exception] = None
        while True:
            try:
                command = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as done:
                return self._found(done.value)
            try:
                reply = await self.client.execute_command(*command,
                                                          **_where(self.client, command))
                error = None
            except ERRORS as failure:
                reply, error = None, failure

    async def route(self) -> Route:
        return self._known() or await self._detect()

    async def __call__(self, *words):
        route = await self.route()
        try:
            return await self._send(route, words)
        except ERRORS as error:
            if not self._gone(route, error):
                _raise(error)
        self._forget()
        try:
            return await self._send(await self.route(), words)
        except ERRORS as error:
            _raise(error)

    async def _send(self, route: Route, words):
        if route.kind == MODULE:
            return await self.client.execute_command(*words)
        if route.kind == FUNCTIONS:
            fcall, keys = fcall_words(words)
            try:
                return await self.client.execute_command(*fcall, **_keyed(self.client, keys))
            except (MovedError, AskError):
                return await self.client.execute_command(*fcall)
        name, keys, args = function_call(words)
        return await route.script(keys=keys, args=[name, *args], client=self.client)

    async def available(self) -> bool:
        try:
            await (self._detect() if self.via == "module" else self.route())
            return True
        except ERRORS:
            return False
