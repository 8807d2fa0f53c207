"""End to end: a Starlette app with SlowAPI's ``strategy="gcra"`` on cell+redis:// gets 200s,
then a 429 with Retry-After and SlowAPI's rate-limit headers."""

import pytest
from slowapi import Limiter, _rate_limit_exceeded_handler
from slowapi.errors import RateLimitExceeded
from slowapi.util import get_remote_address
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import redis_cell.limits  # noqa: F401  (registers the scheme and the strategy)
from conftest import refused_after


@pytest.mark.parametrize("strategy, prefix", [("gcra", "LIMITS:gcra:*"),
                                              ("moving-window", "LIMITS:window:*"),
                                              ("sliding-window-buckets", "LIMITS:buckets:*")])
def test_slowapi_decides_in_the_module(strategy, prefix, server, r):
    limiter = Limiter(key_func=get_remote_address, strategy=strategy,
                      storage_uri=f"cell+redis://127.0.0.1:{server}", headers_enabled=True)

    @limiter.limit("3/minute")
    async def index(request: Request):
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", index)])
    app.state.limiter = limiter
    app.add_exception_handler(RateLimitExceeded, _rate_limit_exceeded_handler)
    client = TestClient(app)
    # GCRA gives a unit back every 20 s; the windows' oldest unit (or cell) leaves within a
    # minute.
    refused_after(lambda: client.get("/"), 3, 20 if strategy == "gcra" else 60)
    assert r.keys(prefix), "the decisions were the module's"
