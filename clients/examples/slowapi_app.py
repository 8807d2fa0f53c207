"""A Starlette app whose one route SlowAPI limits to 3 a minute, decided by the module (GCRA):
the app docs/clients.md shows, served by clients/python/tests/test_examples.py."""

import os

from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

import redis_cell.limits  # noqa: F401  (registers cell+redis:// and the "gcra" strategy)

limiter = Limiter(
    key_func=get_remote_address,
    storage_uri=os.environ.get("REDIS_URL", "cell+redis://localhost:6379"),
    strategy="gcra",
    headers_enabled=True,
)


@limiter.limit("3/minute")
async def index(request: Request):
    return PlainTextResponse("ok")


app = Starlette(routes=[Route("/", index)])
app.state.limiter = limiter
app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)
