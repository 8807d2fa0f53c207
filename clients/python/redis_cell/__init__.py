"""A typed client for the redis-cell module: one function per command, each answering a
frozen :class:`Reply` of the five integers every limiter answers, with the waits in the
unit the call asked for (seconds, or milliseconds with ``ms=True``). Where the server has not
loaded the module, the same limiters run in its Functions library (``FCALL``)."""

from .client import AsyncClient, Client, Decided, Fixed, Lease, Reply, Throttle, Window
from .errors import LibraryTooOldError, ModuleMissingError, NeedsModuleError

__all__ = [
    "AsyncClient",
    "Client",
    "Decided",
    "Fixed",
    "Lease",
    "LibraryTooOldError",
    "ModuleMissingError",
    "NeedsModuleError",
    "Reply",
    "Throttle",
    "Window",
]
__version__ = "0.1.0"
