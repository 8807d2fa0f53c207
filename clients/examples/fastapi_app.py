"""A FastAPI app whose one route allows each client address 3 at once and 3 a minute (GCRA),
decided by the module in one CL.ALL call: the app docs/clients.md shows, served by
clients/python/tests/test_examples.py."""

import os

import redis.asyncio
from fastapi import Depends, FastAPI

from redis_cell import AsyncClient, Throttle
from redis_cell.asgi import Limit, RateLimiter, client_address

cell = AsyncClient(redis.asyncio.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379")))
per_address = RateLimiter(cell).limit(Limit(Throttle("per-address", 2, 3, 60), by=client_address))

app = FastAPI()


@app.get("/", dependencies=[Depends(per_address)])
async def index():
    return {"ok": True}
