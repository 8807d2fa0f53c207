"""A server without the module: every path says so, by one error that names the module and
how to load it, and limits' health check sees a broken storage, so Flask-Limiter's in-memory
fallback holds instead of flapping."""

import asyncio

import flask
import pytest
import redis
import redis.asyncio
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from limits import RateLimitItemPerMinute, storage, strategies
from limits.errors import StorageError

import redis_cell.limits  # noqa: F401  (registers the schemes and strategies)
from redis_cell import AsyncClient, Client, ModuleMissingError


def test_the_client_names_the_missing_module(bare_server):
    client = Client(redis.Redis(port=bare_server))
    with pytest.raises(ModuleMissingError, match="no redis-cell module loaded.*MODULE LOAD") as e:
        client.throttle("k", 1, 1, 60)
    # Still the ResponseError every caller already catches, with the server's words kept.
    assert isinstance(e.value, redis.ResponseError)
    assert "unknown command" in str(e.value)


def test_the_asyncio_client_names_the_missing_module(bare_server):
    async def call():
        connection = redis.asyncio.Redis(port=bare_server)
        try:
            await AsyncClient(connection).fixed("k", 1, 60)
        finally:
            await connection.aclose()

    with pytest.raises(ModuleMissingError):
        asyncio.run(call())


def test_the_module_s_own_errors_reach_the_caller_as_they_are(server):
    client = Client(redis.Redis(port=server))
    with pytest.raises(redis.ResponseError, match="limit must be >= 1") as e:
        client.fixed("k", 0, 60)
    assert not isinstance(e.value, ModuleMissingError)


@pytest.mark.parametrize("strategy", ["fixed-window", "moving-window", "gcra",
                                      "sliding-window-buckets"])
def test_limits_raises_one_storage_error_naming_the_module(bare_server, strategy):
    store = storage.storage_from_string(f"cell+redis://127.0.0.1:{bare_server}",
                                        wrap_exceptions=True)
    limiter = strategies.STRATEGIES[strategy](store)
    with pytest.raises(StorageError) as e:
        limiter.hit(RateLimitItemPerMinute(3), "user")
    assert isinstance(e.value.storage_error, ModuleMissingError), e.value.storage_error
    # Unwrapped, the error itself.
    store = storage.storage_from_string(f"cell+redis://127.0.0.1:{bare_server}")
    with pytest.raises(ModuleMissingError):
        strategies.STRATEGIES[strategy](store).hit(
            RateLimitItemPerMinute(3), "user")


def test_the_health_check_sees_a_missing_module_as_a_broken_storage(server, bare_server):
    assert not storage.storage_from_string(f"cell+redis://127.0.0.1:{bare_server}").check()
    assert storage.storage_from_string(f"cell+redis://127.0.0.1:{server}").check()
    down = storage.storage_from_string("cell+redis://127.0.0.1:1?socket_connect_timeout=1")
    assert not down.check()


def test_the_asyncio_health_check_sees_it_too(server, bare_server):
    async def checks():
        missing = storage.storage_from_string(f"async+cell+redis://127.0.0.1:{bare_server}")
        loaded = storage.storage_from_string(f"async+cell+redis://127.0.0.1:{server}")
        return await missing.check(), await loaded.check()

    assert asyncio.run(checks()) == (False, True)


def test_flask_limiter_falls_back_and_stays_there_without_the_module(bare_server):
    app = flask.Flask(__name__)
    app.config.update(
        RATELIMIT_STRATEGY="gcra",
        RATELIMIT_STORAGE_URI=f"cell+redis://127.0.0.1:{bare_server}",
        RATELIMIT_IN_MEMORY_FALLBACK_ENABLED=True,
        RATELIMIT_IN_MEMORY_FALLBACK="2/minute",
    )
    limiter = Limiter(get_remote_address, app=app)

    @app.route("/")
    @limiter.limit("5/minute")
    def index():
        return "ok"

    client = app.test_client()
    # The fallback's 2 a minute, never a 500, and never back to the broken storage.
    assert [client.get("/").status_code for _ in range(6)] == [200, 200, 429, 429, 429, 429]
    assert limiter._storage_dead
