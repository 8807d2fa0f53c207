"""Calling CL.THROTTLE from a service with redis-py: the reply read into named fields, and a
denied request retried after the wait the limiter gives.

    python3 examples/throttle.py        # against redis://127.0.0.1:6379/, or set REDIS_URL
"""
import os
import time
from typing import NamedTuple, Optional

import redis


class Throttle(NamedTuple):
    limited: bool
    limit: int
    remaining: int
    retry_after_ms: Optional[int]  # when denied: the wait until this request fits; None if never
    reset_after_ms: int  # the wait until the limiter is full again


def throttle(client: redis.Redis, key: str, max_burst: int, count: int, period_ms: int) -> Throttle:
    limited, limit, remaining, retry_after, reset_after = client.execute_command(
        "CL.THROTTLE", key, max_burst, count, period_ms, 1, "MS"
    )
    return Throttle(
        limited == 1,
        limit,
        remaining,
        retry_after if retry_after >= 0 else None,
        reset_after,
    )


def main() -> None:
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/"))
    # Five requests a second, in bursts of up to three.
    for request in range(1, 6):
        while True:
            answer = throttle(client, "example:user42", 2, 5, 1000)
            if not answer.limited:
                print(f"request {request}: allowed, {answer.remaining} of {answer.limit} left")
                break
            if answer.retry_after_ms is None:
                print(f"request {request}: larger than the limit, dropped")
                break
            print(f"request {request}: limited, retrying in {answer.retry_after_ms} ms")
            time.sleep(answer.retry_after_ms / 1000)


if __name__ == "__main__":
    main()
