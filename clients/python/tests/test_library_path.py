"""How the client finds the library where the module is missing: loaded when missing or
older, kept when newer, found again when flushed, forced either way, refused to wait, and in
its script form where the server has no Functions or refuses them to the client."""

import os

import pytest
import redis
import redis.asyncio

import redis_cell
import redis_cell.limits  # noqa: F401  (registers the schemes)
from redis_cell import AsyncClient, Client, LibraryTooOldError, Reply
from redis_cell.routing import library_source, script_source
from conftest import serve


@pytest.fixture
def bare(bare_server):
    client = redis.Redis(port=bare_server)
    client.flushall()
    client.function_flush()
    yield client
    client.close()


def loaded_version(client) -> bytes:
    return client.fcall_ro("cl_version", 0)


def with_version(version: str) -> str:
    ours = f"local CELL_VERSION = '{redis_cell.__version__}'"
    assert ours in library_source()
    return library_source().replace(ours, f"local CELL_VERSION = '{version}'")


def test_a_missing_library_is_loaded_and_called(bare):
    assert Client(bare).fixed("f", 3, 60) == Reply(False, 3, 2, None, 60)
    assert loaded_version(bare) == redis_cell.__version__.encode()
    assert bare.get("f") == b"1"
    stats = bare.info("commandstats")
    assert stats["cmdstat_fcall"]["calls"] == 1
    assert not any(name.startswith("cmdstat_cl.") for name in stats)


def test_an_older_library_is_replaced_and_a_newer_kept(bare):
    bare.function_load(with_version("0.0.1"))
    with pytest.raises(LibraryTooOldError, match="0.0.1, older than this client"):
        Client(bare, load_library=False).fixed("f", 3, 60)
    assert loaded_version(bare) == b"0.0.1"
    assert Client(bare).fixed("f", 3, 60).allowed
    assert loaded_version(bare) == redis_cell.__version__.encode()
    # A new pool asks again, and keeps the newer library (a prerelease's too).
    for newer in ["99.0.0", f"{redis_cell.__version__}-rc1", "0.10"]:
        bare.function_load(with_version(newer), replace=True)
        fresh = redis.Redis(port=bare.connection_pool.connection_kwargs["port"])
        assert Client(fresh).fixed(f"f{newer}", 3, 60).remaining == 2
        assert loaded_version(bare) == newer.encode()
        fresh.close()


def test_versions_order_by_their_numbers():
    from redis_cell.routing import shipped_version, version_key

    assert shipped_version() == redis_cell.__version__
    assert version_key("0.10.0") > version_key("0.9.9")
    assert version_key("0.1") == version_key("0.1.0")
    assert version_key(b"1.2.3-rc1") == (1, 2, 3)
    assert version_key("junk") == (0, 0, 0)


def test_a_flushed_library_is_found_again(bare):
    client = Client(bare)
    assert client.fixed("f", 3, 60).remaining == 2
    bare.function_flush()
    assert client.fixed("f", 3, 60).remaining == 1


def test_via_library_on_a_server_with_the_module_shares_its_keys(module_server):
    r = redis.Redis(port=module_server)
    r.flushall()
    library, module = Client(r, via="library"), Client(r, via="module")
    assert library.throttle("t", 4, 5, 60) == module.throttle("t2", 4, 5, 60)
    # One key, either way: the library's count is the module's, and back.
    assert library.fixed("f", 3, 60).remaining == 2
    assert module.fixed("f", 3, 60).remaining == 1
    assert library.fixed("f", 3, 60).remaining == 0
    assert r.info("commandstats")["cmdstat_fcall"]["calls"] == 3
    with pytest.raises(ValueError, match="via must be one of"):
        Client(r, via="lua")
    with pytest.raises(TypeError, match="load_library must be True or False"):
        Client(r, load_library="false")


def test_waiting_on_the_library_is_refused_as_needing_the_module(bare):
    client = Client(bare)
    with pytest.raises(redis.ResponseError, match="BLOCK needs the redis-cell module"):
        client.throttle("q", 0, 1, 300, block=10)
    assert bare.exists("q") == 0


def test_the_asyncio_client_loads_and_calls_the_library(bare, bare_server):
    async def calls():
        connection = redis.asyncio.Redis(port=bare_server)
        try:
            cell = AsyncClient(connection)
            first = await cell.window("w", 2, 60)
            await connection.function_flush()
            return first, await cell.window("w", 2, 60)
        finally:
            await connection.aclose()

    import asyncio

    first, second = asyncio.run(calls())
    assert (first.remaining, second.remaining) == (1, 0)


def script_form_serves(client: redis.Redis) -> None:
    """Every limiter answers through EVALSHA, and again after the script cache is flushed."""
    client.config_resetstat()
    cell = Client(client)
    assert cell.fixed("f", 3, 60) == Reply(False, 3, 2, None, 60)
    assert cell.throttle("t", 15, 30, 60) == Reply(False, 16, 15, None, 2)
    client.script_flush()
    assert cell.window("w", 2, 60).remaining == 1
    assert cell.lease("p", 1, 60, "h").remaining == 0
    assert cell.holders("p")[0][0] == b"h"
    assert cell.release("p", "h")
    stats = client.info("commandstats")
    assert stats["cmdstat_evalsha"]["calls"] >= 5
    assert "cmdstat_fcall" not in stats


def test_where_functions_are_refused_the_script_form_serves(bare, bare_server):
    bare.acl_setuser("scripts", enabled=True, passwords=["+pw"], keys=["~*"],
                     commands=["+@all", "-function"])
    try:
        script_form_serves(redis.Redis(port=bare_server, username="scripts", password="pw"))
        assert bare.function_list() == []
    finally:
        bare.acl_deluser("scripts")


def test_redis_6_2_runs_the_script_form():
    binary = os.environ.get("REDIS6_SERVER")
    if not binary:
        pytest.skip("REDIS6_SERVER names no Redis 6.2 server")
    server = serve([], binary=binary)
    port = next(server)
    try:
        client = redis.Redis(port=port)
        assert client.info("server")["redis_version"].startswith("6.2")
        script_form_serves(client)
    finally:
        server.close()


def test_the_shipped_forms_are_the_repository_s():
    """The package's forms are lua/dist's: in the checkout, read from there; installed, the
    copies the build hook (setup.py) put into the package."""
    import os
    from importlib import resources
    from pathlib import Path

    dist = Path(__file__).resolve().parents[3] / "lua" / "dist"
    assert library_source() == (dist / "redis_cell.lua").read_text()
    assert script_source() == (dist / "redis_cell.script.lua").read_text()
    carried = [resources.files("redis_cell").joinpath("lua", form).is_file()
               for form in ("redis_cell.lua", "redis_cell.script.lua")]
    assert carried == [bool(os.environ.get("REDIS_CELL_INSTALLED"))] * 2


def test_a_user_who_may_not_run_command_calls_the_module(module_server):
    admin = redis.Redis(port=module_server)
    admin.acl_setuser("nocommand", enabled=True, passwords=["+pw"], keys=["~*"],
                      commands=["+@all", "-command"])
    try:
        r = redis.Redis(port=module_server, username="nocommand", password="pw")
        admin.config_resetstat()
        assert Client(r).fixed("nc", 3, 60).remaining == 2
        assert admin.info("commandstats")["cmdstat_cl.fixed"]["calls"] == 1
    finally:
        admin.acl_deluser("nocommand")


def test_forced_to_the_module_the_health_check_asks_for_it(bare_server, module_server):
    from limits import storage

    uri = "cell+redis://127.0.0.1:{}"
    assert not storage.storage_from_string(uri.format(bare_server), via="module").check()
    assert storage.storage_from_string(uri.format(module_server), via="module").check()


@pytest.mark.parametrize("scheme", ["cell+redis", "async+cell+redis"])
def test_a_storage_refuses_options_it_cannot_read_when_it_is_made(scheme):
    from limits import storage

    # Nothing listens on port 1: made, the storage has asked the server nothing yet.
    uri = f"{scheme}://127.0.0.1:1"
    with pytest.raises(TypeError, match="load_library must be True or False"):
        storage.storage_from_string(uri, load_library="false")
    with pytest.raises(ValueError, match="via must be one of"):
        storage.storage_from_string(uri, via="lua")


def test_a_module_gone_after_the_route_was_found_is_asked_for_again():
    from conftest import loads

    server = serve([*loads("module"), "--enable-module-command", "yes"])
    port = next(server)
    try:
        r = redis.Redis(port=port)
        client = Client(r)
        assert client.fixed("g", 3, 60).remaining == 2
        # A failover to a server without the module, as far as the client can tell.
        r.module_unload("redis-cell")
        assert client.fixed("g", 3, 60).remaining == 1
        assert r.function_list() != []
    finally:
        server.close()


def test_valkey_py_storages_wrap_the_named_errors(bare_server):
    from limits import RateLimitItemPerMinute, storage, strategies
    from limits.errors import StorageError

    pytest.importorskip("valkey")
    store = storage.storage_from_string(f"cell+valkey://127.0.0.1:{bare_server}",
                                        wrap_exceptions=True, load_library=False)
    with pytest.raises(StorageError) as e:
        strategies.STRATEGIES["gcra"](store).hit(RateLimitItemPerMinute(3), "v")
    assert isinstance(e.value.storage_error, redis_cell.ModuleMissingError)


def one_node_cluster(binary):
    """A cluster of one primary holding every slot, on `binary`."""
    from conftest import cluster_port

    server = serve(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
                   cluster_port(), binary=binary)
    port = next(server)
    node = redis.Redis(port=port)
    node.execute_command("CLUSTER", "ADDSLOTS", *range(16384))
    import time

    deadline = time.monotonic() + 30
    while node.cluster("info")["cluster_state"] != "ok":
        assert time.monotonic() < deadline, "the cluster's state never became ok"
        time.sleep(0.1)
    return server, port


def test_a_redis_6_2_cluster_runs_the_script_form():
    binary = os.environ.get("REDIS6_SERVER")
    if not binary:
        pytest.skip("REDIS6_SERVER names no Redis 6.2 server")
    server, port = one_node_cluster(binary)
    try:
        cluster = redis.RedisCluster(host="127.0.0.1", port=port)
        cell = Client(cluster)
        assert cell.fixed("f", 3, 60) == Reply(False, 3, 2, None, 60)
        assert cell.throttle("t", 15, 30, 60).remaining == 15
        assert redis.Redis(port=port).info("commandstats")["cmdstat_evalsha"]["calls"] >= 2
        # Told to call the module, 6.2's own words for an unknown command are named too.
        with pytest.raises(redis_cell.ModuleMissingError):
            Client(redis.Redis(port=port), via="module").fixed("f", 3, 60)
        cluster.close()
    finally:
        server.close()


def test_an_asyncio_cluster_loads_the_library_and_routes_by_key():
    server, port = one_node_cluster(os.environ.get("REDIS_SERVER", "/usr/bin/redis-server"))

    async def calls():
        from redis.asyncio.cluster import RedisCluster

        cluster = RedisCluster(host="127.0.0.1", port=port)
        try:
            cell = AsyncClient(cluster)
            return [(await cell.fixed(f"k{i}", 3, 60)).remaining for i in range(10)]
        finally:
            await cluster.aclose()

    import asyncio

    try:
        node = redis.Redis(port=port)
        node.config_resetstat()
        assert asyncio.run(calls()) == [2] * 10
        stats = node.info("commandstats")
        assert stats["cmdstat_fcall"]["calls"] == 10
        # Each FCALL went to its key's node: redis-py asked no node for FCALL's keys.
        assert "cmdstat_command|getkeys" not in stats
    finally:
        server.close()
