"""End to end: a Flask app with Flask-Limiter on cell+redis:// and RATELIMIT_STRATEGY "gcra"
(or "sliding-window-buckets") gets 200s, then a 429 with Retry-After and Flask-Limiter's
rate-limit headers."""

import flask
import pytest
import redis
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

import redis_cell.limits  # noqa: F401  (registers the scheme and the strategy)
from conftest import refused_after


def limited_app(limit: str, strategy: str = "gcra", **config):
    """A Flask app whose one route Flask-Limiter limits to ``limit``, with this strategy and
    the rate-limit headers, on this configuration."""
    app = flask.Flask(__name__)
    app.config.update(RATELIMIT_STRATEGY=strategy, RATELIMIT_HEADERS_ENABLED=True, **config)
    limiter = Limiter(get_remote_address, app=app)

    @app.route("/")
    @limiter.limit(limit)
    def index():
        return "ok"

    return app, limiter


def test_flask_limiter_on_gcra_answers_429_with_retry_after(server, r):
    app, _ = limited_app("3/minute", RATELIMIT_STORAGE_URI=f"cell+redis://127.0.0.1:{server}")
    client = app.test_client()
    # GCRA: the next unit is back within 20 s (a minute over 3 units).
    refused_after(lambda: client.get("/"), 3, 20)
    assert r.keys("LIMITS:gcra:*"), "the decisions were the module's"


def test_flask_limiter_falls_back_to_gcra_in_memory_when_the_server_is_down():
    app, limiter = limited_app(
        "5/minute",
        # Nothing listens on port 1 of the loopback.
        RATELIMIT_STORAGE_URI="cell+redis://127.0.0.1:1?socket_connect_timeout=1",
        RATELIMIT_IN_MEMORY_FALLBACK_ENABLED=True,
        RATELIMIT_IN_MEMORY_FALLBACK="2/minute",
    )
    client = app.test_client()
    assert [client.get("/").status_code for _ in range(3)] == [200, 200, 429]
    refused = client.get("/")
    assert refused.status_code == 429
    # The fallback's GCRA: 2 a minute, the next back within 30 s.
    assert 0 < int(refused.headers["Retry-After"]) <= 30
    assert isinstance(limiter._fallback_limiter, redis_cell.limits.GCRARateLimiter)


def test_flask_limiter_on_sliding_window_buckets_takes_n_from_the_storage_options(server, r, call):
    app, _ = limited_app("3/minute", "sliding-window-buckets",
                         RATELIMIT_STORAGE_URI=f"cell+redis://127.0.0.1:{server}",
                         RATELIMIT_STORAGE_OPTIONS={"buckets": 6})
    client = app.test_client()
    # Six cells of 10 s: the first hit's cell leaves 50 to 60 s from now.
    refused = refused_after(lambda: client.get("/"), 3, 60)
    assert int(refused.headers["Retry-After"]) >= 49
    [key] = r.keys("LIMITS:buckets:*")
    with pytest.raises(redis.ResponseError, match="BUCKETS 6, not an exact one"):
        call("CL.WINDOW", key, 3, 60)
