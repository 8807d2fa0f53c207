"""Where each call goes: the module's commands on a server that has loaded the module, and
the same limiters as the redis-cell Functions library (``FCALL``) on one that has not, or as
its script form (``EVALSHA``, loaded by ``EVAL`` on ``NOSCRIPT``) where the server has no
Functions (Redis 6.2, services that allow only scripts).

What the server has is asked once per connection pool, on first use (a client's
construction does no I/O), and remembered once found; a server with neither is asked again
on the next call, so that loading the module or the library later is seen without a restart.
``via="module"`` and ``via="library"`` skip the question for that path.

The questions are one plan (``_plan``), a generator of the commands to send, which the sync
and asyncio drivers run: both ask the same things in the same order.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from importlib import resources
from typing import Any, Dict, Generator, List, Optional, Sequence, Tuple

from redis.exceptions import ResponseError

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
# entry); a cluster client is told which node to ask, as it cannot route a keyless command.
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


@dataclass(frozen=True)
class Route:
    """How calls reach the limiters on one server: ``kind`` is MODULE, FUNCTIONS or SCRIPT;
    ``script`` is redis-py's Script of the script form, which sends EVALSHA and loads the
    script on NOSCRIPT."""

    kind: str
    script: Any = None


def _version(text) -> Tuple[int, ...]:
    if isinstance(text, bytes):
        text = text.decode()
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return ()


def _said(error: Exception, *texts: str) -> bool:
    said = str(error).lower()
    return any(text in said for text in texts)


def _no_functions(error: Exception) -> bool:
    """FCALL_RO is unknown (Redis 6.2) or not the caller's to run (redis-py keeps NOPERM's
    text without its code)."""
    return _said(error, "unknown command", "noperm", "no permissions")


def _function_missing(error: Exception) -> bool:
    return _said(error, "function not found")


def _plan(via: str, load: bool, ours: str) -> Generator[tuple, Any, str]:
    """What the server has, as a route kind: each yield is a command to send, answered by its
    reply or thrown its ResponseError."""
    if via == "auto":
        info = yield _PROBE
        if _names_a_command(info):
            return MODULE
    try:
        version = yield _VERSION
    except ERRORS as error:
        if _no_functions(error):
            return SCRIPT
        if not _function_missing(error):
            raise
        version = None
    if version is not None and _version(version) >= _version(ours):
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


def fcall_words(words: Sequence) -> List:
    name, keys, args = function_call(words)
    command = "FCALL_RO" if name == "cl_holders" else "FCALL"
    return [command, name, len(keys), *keys, *args]


def _raise(error: Exception):
    """The server's error, as :func:`~redis_cell.errors.explained` names it."""
    named = explained(error)
    if named is error:
        raise error
    raise named from error


# Routes found, by connection pool and by what the caller asked for.
_ROUTES: "weakref.WeakKeyDictionary[object, Dict[Tuple[str, bool], Route]]" = (
    weakref.WeakKeyDictionary())


def _where(client, command) -> dict:
    """Where a cluster client sends the module's probe, which it cannot route (FUNCTION LOAD
    goes to every primary, and FCALL_RO without keys to any node, by redis-py's own
    routing)."""
    if command is not _PROBE or not hasattr(client, "get_default_node"):
        return {}
    return {"target_nodes": client.get_default_node()}


def _pool(client) -> object:
    return getattr(client, "connection_pool", None) or client


def _check(via: str) -> str:
    if via not in VIAS:
        raise ValueError(f"via must be one of {', '.join(VIAS)}, not {via!r}")
    return via


class _Router:
    def __init__(self, client, via: str, load_library: bool, version: str) -> None:
        self.client = client
        self.via = _check(via)
        self.load = bool(load_library)
        self.version = version

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


class Router(_Router):
    """The calls of one redis-py client (or RedisCluster)."""

    def route(self) -> Route:
        known = self._known()
        if known is not None:
            return known
        plan = _plan(self.via, self.load, self.version)
        reply: Any = None
        error: Optional[Exception] = None
        while True:
            try:
                command = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as done:
                return self._found(done.value)
            try:
                reply, error = self.client.execute_command(*command, **_where(self.client, command)), None
            except ERRORS as failure:
                reply, error = None, failure

    def __call__(self, *words):
        try:
            return self._send(self.route(), words)
        except ERRORS as error:
            if not _function_missing(error):
                _raise(error)
        # The library went (a FUNCTION FLUSH, a restart without its data): find it again.
        self._forget()
        try:
            return self._send(self.route(), words)
        except ERRORS as error:
            _raise(error)

    def _send(self, route: Route, words):
        if route.kind == MODULE:
            return self.client.execute_command(*words)
        if route.kind == FUNCTIONS:
            return self.client.execute_command(*fcall_words(words))
        name, keys, args = function_call(words)
        return route.script(keys=keys, args=[name, *args], client=self.client)

    def available(self) -> bool:
        """The limiters can be called: the module, or the library (loaded here if allowed)."""
        try:
            self.route()
            return True
        except ERRORS:
            return False


class AsyncRouter(_Router):
    """The calls of one redis-py asyncio client, as :class:`Router`'s."""

    async def route(self) -> Route:
        known = self._known()
        if known is not None:
            return known
        plan = _plan(self.via, self.load, self.version)
        reply: Any = None
        error: Optional[Exception] = None
        while True:
            try:
                command = plan.throw(error) if error is not None else plan.send(reply)
            except StopIteration as done:
                return self._found(done.value)
            try:
                reply, error = (await self.client.execute_command(*command,
                                                                  **_where(self.client, command)), None)
            except ERRORS as failure:
                reply, error = None, failure

    async def __call__(self, *words):
        try:
            return await self._send(await self.route(), words)
        except ERRORS as error:
            if not _function_missing(error):
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
            return await self.client.execute_command(*fcall_words(words))
        name, keys, args = function_call(words)
        return await route.script(keys=keys, args=[name, *args], client=self.client)

    async def available(self) -> bool:
        try:
            await self.route()
            return True
        except ERRORS:
            return False
