"""The failures a server without the limiters gives, named for what they are.

A server that has loaded neither the module nor its Functions library answers the module's
commands with ``unknown command``, and a script that calls one with ``Unknown Redis command
called from script``: raw texts that say nothing of the module, and that libraries turn into
500s or a flapping fallback. Both become :class:`ModuleMissingError`, a redis-py
``ResponseError`` (so every ``except`` that caught the raw error still catches it) whose
message says what to load and how. A library older than the client, which the client was told
not to replace, is :class:`LibraryTooOldError`.
"""

from __future__ import annotations

import re

from redis.exceptions import ResponseError

HOW_TO_LOAD = (
    "the server has no redis-cell module loaded, so its CL.* commands are unknown there, and "
    "no redis-cell Functions library either: load the module with MODULE LOAD "
    "/path/to/libredis_cell.so (or a loadmodule line in the server's configuration), or, "
    "where no module can be loaded, the library with FUNCTION LOAD and the package's "
    "redis_cell.lua (the client loads it itself unless load_library=False)"
)


class ModuleMissingError(ResponseError):
    """The server has loaded neither the redis-cell module nor its library."""

    def __init__(self, reply: str = "") -> None:
        super().__init__(f"{HOW_TO_LOAD} (the server said: {reply})" if reply else HOW_TO_LOAD)


class NeedsModuleError(ResponseError):
    """A command only the module answers (CL.TOP, which lists what the node has seen; CL.BAN
    and CL.UNBAN, until the library locks keys out), called where the calls go to the
    Functions library."""

    def __init__(self, command: str) -> None:
        super().__init__(
            f"{command} needs the redis-cell module: the Functions library does not answer it; "
            "load the module (MODULE LOAD /path/to/libredis_cell.so)"
        )


class LibraryTooOldError(ResponseError):
    """The server's redis-cell library is older than this client, which may not replace it."""

    def __init__(self, theirs, ours: str) -> None:
        if isinstance(theirs, bytes):
            theirs = theirs.decode(errors="replace")
        super().__init__(
            f"the server's redis-cell library is {theirs}, older than this client's {ours}: "
            "load the package's redis_cell.lua with FUNCTION LOAD REPLACE, or let the client "
            "load it (load_library=True)"
        )


def explained(error: Exception) -> Exception:
    """A limiter's error: :class:`ModuleMissingError` for an unknown CL.* command, the error
    itself otherwise (the module's and the library's own replies reach the caller as they
    are)."""
    if isinstance(error, ModuleMissingError) or type(error).__name__ != "ResponseError":
        return error
    text = str(error).lower()
    # Redis 6.2 quotes the command with backticks, later servers with quotes.
    if re.match(r"unknown command [`']cl\.", text) or (
        "unknown redis command called from script" in text
    ):
        return ModuleMissingError(str(error))
    return error
