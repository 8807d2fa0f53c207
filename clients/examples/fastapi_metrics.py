"""The FastAPI app of fastapi_app.py, counting its decisions in Prometheus: the limiter's
``on_decision`` hook feeds a counter by policy and outcome (never by address, which would
make a series for every client), served at /metrics; run by
clients/python/tests/test_examples.py."""

import os

import redis.asyncio
from fastapi import Depends, FastAPI
from prometheus_client import CollectorRegistry, Counter, make_asgi_app

from redis_cell import AsyncClient, Throttle
from redis_cell.asgi import Limit, RateLimiter, client_address

registry = CollectorRegistry()
decisions = Counter("ratelimit_decisions", "Rate-limit decisions, by policy and outcome",
                    ["policy", "outcome"], registry=registry)


def count(decided):
    decisions.labels(decided.limiter, "allowed" if decided.allowed else "denied").inc()


cell = AsyncClient(redis.asyncio.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379")))
limiter = RateLimiter(cell, on_decision=count)
per_address = limiter.limit(Limit(Throttle("per-address", 2, 3, 60), by=client_address))

app = FastAPI()
app.mount("/metrics", make_asgi_app(registry))


@app.get("/", dependencies=[Depends(per_address)])
async def index():
    return {"ok": True}
