"""The one failure a server without the module gives, named for what it is.

A server that has not loaded the module answers its commands with ``unknown command``, and
a script that calls one with ``Unknown Redis command called from script``: raw texts that say
nothing of the module, and that libraries turn into 500s or a flapping fallback. Both become
:class:`ModuleMissingError`, a redis-py ``ResponseError`` (so every ``except`` that caught the
raw error still catches it) whose message names the module and how to load it.
"""

from __future__ import annotations

import weakref

from redis.exceptions import ResponseError

HOW_TO_LOAD = (
    "the server has no redis-cell module loaded, so its CL.* commands are unknown there: load "
    "it with MODULE LOAD /path/to/libredis_cell.so, or a loadmodule line in the server's "
    "configuration"
)


class ModuleMissingError(ResponseError):
    """The server has not loaded the redis-cell module."""

    def __init__(self, reply: str = "") -> None:
        super().__init__(f"{HOW_TO_LOAD} (the server said: {reply})" if reply else HOW_TO_LOAD)


def explained(error: Exception) -> Exception:
    """A module command's error: :class:`ModuleMissingError` for an unknown CL.* command, the
    error itself otherwise (the module's own replies reach the caller as they are)."""
    if isinstance(error, ModuleMissingError) or not isinstance(error, ResponseError):
        return error
    text = str(error).lower()
    if (text.startswith("unknown command") and "'cl." in text) or (
        "unknown redis command called from script" in text
    ):
        return ModuleMissingError(str(error))
    return error


# Servers found to have the module, by connection pool: a pool is one server (or one cluster),
# and once loaded the module stays (an unload while clients run is not a state to serve).
_LOADED: "weakref.WeakKeyDictionary[object, bool]" = weakref.WeakKeyDictionary()

# COMMAND INFO of a command the server does not know is an empty entry.
_PROBE = ("COMMAND", "INFO", "CL.THROTTLE")


def _pool(client) -> object:
    return getattr(client, "connection_pool", None) or client


def module_loaded(client) -> bool:
    """Whether the server behind this redis-py client has the module: asked once per
    connection pool, and remembered once it has."""
    pool = _pool(client)
    if _LOADED.get(pool):
        return True
    info = client.execute_command(*_PROBE)
    loaded = _names_a_command(info)
    if loaded:
        _LOADED[pool] = True
    return loaded


async def module_loaded_async(client) -> bool:
    """:func:`module_loaded` for redis-py's asyncio client."""
    pool = _pool(client)
    if _LOADED.get(pool):
        return True
    info = await client.execute_command(*_PROBE)
    loaded = _names_a_command(info)
    if loaded:
        _LOADED[pool] = True
    return loaded


def _names_a_command(info) -> bool:
    """COMMAND INFO's answer names the command: a list with an entry, or redis-py's dict of
    the entries it parsed."""
    if isinstance(info, dict):
        return any(info.values())
    if isinstance(info, (list, tuple)):
        return any(entry for entry in info)
    return bool(info)
