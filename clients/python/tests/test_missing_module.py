"""A server with neither the module nor the library, where the client may not load the
library: every path says so, by one error that names both and how to load them, and limits'
health check sees a broken storage, so Flask-Limiter's in-memory fallback holds instead of
flapping."""

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

NAMES_BOTH = "no redis-cell module loaded.*MODULE LOAD.*FUNCTION LOAD"


def test_the_client_names_what_to_load(bare_server):
    client = Client(redis.Redis(port=bare_server), load_library=False)
    with pytest.raises(ModuleMissingError, match=NAMES_BOTH) as e:
        client.throttle("k", 1, 1, 60)
    # Still the ResponseError every caller already catches.
    assert isinstance(e.value, redis.ResponseError)
    # Told to call the module, the server's own words are kept.
    with pytest.raises(ModuleMissingError, match="unknown command"):
        Client(redis.Redis(port=bare_server), via="module").throttle("k", 1, 1, 60)
    # Nothing was loaded on the way.
    assert redis.Redis(port=bare_server).function_list() == []


def test_the_asyncio_client_names_it_too(bare_server):
    async def call(**options):
        connection = redis.asyncio.Redis(port=bare_server)
        try:
            await AsyncClient(connection, **options).fixed("k", 1, 60)
        finally:
            await connection.aclose()

    with pytest.raises(ModuleMissingError, match=NAMES_BOTH):
        asyncio.run(call(load_library=False))
    with pytest.raises(ModuleMissingError, match="unknown command"):
        asyncio.run(call(via="module"))


def test_the_module_s_own_errors_reach_the_caller_as_they_are(module_server):
    client = Client(redis.Redis(port=module_server))
    with pytest.raises(redis.ResponseError, match="limit must be >= 1") as e:
        client.fixed("k", 0, 60)
    assert not isinstance(e.value, ModuleMissingError)


@pytest.mark.parametrize("strategy", ["fixed-window", "moving-window", "gcra",
                                      "sliding-window-buckets"])
def test_limits_raises_one_storage_error_naming_the_module(bare_server, strategy):
    uri = f"cell+redis://127.0.0.1:{bare_server}"
    store = storage.storage_from_string(uri, wrap_exceptions=True, load_library=False)
    limiter = strategies.STRATEGIES[strategy](store)
    with pytest.raises(StorageError) as e:
        limiter.hit(RateLimitItemPerMinute(3), "user")
    assert isinstance(e.value.storage_error, ModuleMissingError), e.value.storage_error
    # Unwrapped, the error itself; and the stats alike.
    store = storage.storage_from_string(uri, load_library=False)
    with pytest.raises(ModuleMissingError):
        strategies.STRATEGIES[strategy](store).hit(RateLimitItemPerMinute(3), "user")
    with pytest.raises(ModuleMissingError):
        strategies.STRATEGIES[strategy](store).get_window_stats(RateLimitItemPerMinute(3), "u")


def test_the_health_check_sees_neither_as_a_broken_storage(module_server, bare_server):
    bare = f"cell+redis://127.0.0.1:{bare_server}"
    assert not storage.storage_from_string(bare, load_library=False).check()
    assert storage.storage_from_string(f"cell+redis://127.0.0.1:{module_server}").check()
    down = storage.storage_from_string("cell+redis://127.0.0.1:1?socket_connect_timeout=1")
    assert not down.check()
    # Allowed to, the check loads the library, and the storage is healthy.
    assert storage.storage_from_string(bare).check()
    assert storage.storage_from_string(bare, load_library=False).check()
    redis.Redis(port=bare_server).function_flush()


def test_the_asyncio_health_check_sees_it_too(module_server, bare_server):
    async def checks():
        missing = storage.storage_from_string(f"async+cell+redis://127.0.0.1:{bare_server}",
                                              load_library=False)
        loaded = storage.storage_from_string(f"async+cell+redis://127.0.0.1:{module_server}")
        return await missing.check(), await loaded.check()

    assert asyncio.run(checks()) == (False, True)


def test_flask_limiter_falls_back_and_stays_there_without_either(bare_server):
    app = flask.Flask(__name__)
    app.config.update(
        RATELIMIT_STRATEGY="gcra",
        RATELIMIT_STORAGE_URI=f"cell+redis://127.0.0.1:{bare_server}",
        RATELIMIT_STORAGE_OPTIONS={"load_library": False},
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
