"""A typed client for the redis-cell module: one function per command, each answering a
frozen :class:`Reply` of the five integers every limiter answers, with the waits in the
unit the call asked for (seconds, or milliseconds with ``ms=True``)."""

from .client import AsyncClient, Client, Fixed, Lease, Reply, Throttle, Window
from .errors import ModuleMissingError

__all__ = [
    "AsyncClient",
    "Client",
    "Fixed",
    "Lease",
    "ModuleMissingError",
    "Reply",
    "Throttle",
    "Window",
]
__version__ = "0.1.0"
