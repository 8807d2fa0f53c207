"""End to end: a Flask app with Flask-Limiter on cell+redis:// and RATELIMIT_STRATEGY "gcra"
gets 200s, then a 429 with Retry-After and Flask-Limiter's rate-limit headers."""

import pytest

flask = pytest.importorskip("flask")
flask_limiter = pytest.importorskip("flask_limiter")

import redis_cell.limits  # noqa: E402,F401  (registers the scheme and the strategy)
from flask_limiter import Limiter  # noqa: E402
from flask_limiter.util import get_remote_address  # noqa: E402


def test_flask_limiter_on_gcra_answers_429_with_retry_after(server, r):
    app = flask.Flask(__name__)
    app.config.update(
        RATELIMIT_STORAGE_URI=f"cell+redis://127.0.0.1:{server}",
        RATELIMIT_STRATEGY="gcra",
        RATELIMIT_HEADERS_ENABLED=True,
    )
    limiter = Limiter(get_remote_address, app=app)

    @app.route("/")
    @limiter.limit("3/minute")
    def index():
        return "ok"

    client = app.test_client()
    for _ in range(3):
        ok = client.get("/")
        assert ok.status_code == 200
        assert ok.headers["X-RateLimit-Limit"] == "3"
    refused = client.get("/")
    assert refused.status_code == 429
    # GCRA: the next unit is back within 20 s (a minute over 3 units).
    assert 0 < int(refused.headers["Retry-After"]) <= 20
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    assert r.keys("LIMITS:gcra:*"), "the decisions were the module's"
