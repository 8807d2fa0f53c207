"""The typed client, without a library: each call answers the five integers as a frozen
Reply. Run by clients/python/tests/test_examples.py."""

import os

import redis
from redis_cell import Client

cell = Client(redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379")))
print(cell.fixed("login:alice", 3, 60))            # Reply(limited=False, limit=3, remaining=2, ...)
cell.fixed("api:bob", 100, 60, count_denied=True)  # count denials too, as INCR does
cell.window("api:key42", 100, 60, dry_run=True)    # would it fit? changes nothing
cell.window("quota:key42", 10000, 2592000, buckets=30)  # BUCKETS 30: a month in days
cell.fixed("plan:key42", 10000, "MONTH", offset=60)     # a calendar month, from the 1st in UTC+01:00
