"""A typed client for the redis-cell module: one function per command, each answering a
frozen :class:`Reply` of the five integers every limiter answers, with the waits in the
unit the call asked for (seconds, or milliseconds with ``ms=True``). Where the server has not
loaded the module, the same limiters run in its Functions library (``FCALL``)."""

# Before the imports: the router compares the server's library with it.
__version__ = "0.1.0"

from .client import AsyncClient, Client, Fixed, Lease, Reply, Throttle, Window  # noqa: E402
from .errors import LibraryTooOldError, ModuleMissingError  # noqa: E402

__all__ = [
    "AsyncClient",
    "Client",
    "Fixed",
    "Lease",
    "LibraryTooOldError",
    "ModuleMissingError",
    "Reply",
    "Throttle",
    "Window",
]
