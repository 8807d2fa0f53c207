"""The storages beyond one Redis server: valkey-py (``cell+valkey://``), a Redis Cluster of
three primaries with the module on each (``cell+redis+cluster://``), and a primary and its
replica behind a sentinel (``cell+redis+sentinel://``): each decides every strategy in the
module, and its health check asks for the module. Without the module, the same in the
library, which the storage loads (on a cluster, on every primary)."""

import os
import subprocess
import tempfile
import time

import pytest
import redis
from limits import RateLimitItemPerMinute, storage, strategies

import redis_cell.limits
from conftest import cluster_port, free_port, loads, serve

STRATEGIES = ["fixed-window", "moving-window", "gcra", "sliding-window-buckets"]


def decides_in_the_module(uri: str, keys) -> None:
    """Every strategy admits 3 a minute and denies the fourth, on the module's keys (``keys()``
    lists them), with window stats, and the storage's check finds the module."""
    store = storage.storage_from_string(uri)
    assert isinstance(store, redis_cell.limits.CellStorage)
    assert store.check()
    for strategy in STRATEGIES:
        limiter = strategies.STRATEGIES[strategy](store)
        item = RateLimitItemPerMinute(3)
        assert [limiter.hit(item, strategy) for _ in range(4)] == [True, True, True, False]
        assert limiter.get_window_stats(item, strategy).remaining == 0
        limiter.clear(item, strategy)
        assert limiter.hit(item, strategy)
    prefixes = {key.split(":")[1] for key in keys()}
    assert {"gcra", "window", "buckets"} <= prefixes, prefixes


def test_valkey_py_serves_cell_valkey_urls(server):
    client = redis.Redis(port=server, decode_responses=True)
    client.flushall()
    decides_in_the_module(f"cell+valkey://127.0.0.1:{server}", lambda: client.keys("LIMITS:*"))


def wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {seconds} s"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster(flavor):
    """Three primaries, no replicas, the module on each, joined by redis-cli."""
    servers = [serve(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                      *loads(flavor)], cluster_port()) for _ in range(3)]
    ports = [next(server) for server in servers]
    try:
        subprocess.run(
            ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{port}" for port in ports],
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        wait_for(lambda: all(
            redis.Redis(port=port).cluster("info")["cluster_state"] == "ok" for port in ports),
            "the cluster's state ok")
        yield ports
    finally:
        for server in servers:
            server.close()


def test_a_cluster_serves_cell_redis_cluster_urls(cluster, flavor):
    client = redis.RedisCluster(host="127.0.0.1", port=cluster[0], decode_responses=True)
    nodes = ",".join(f"127.0.0.1:{port}" for port in cluster)
    decides_in_the_module(f"cell+redis+cluster://{nodes}", lambda: client.keys(
        "LIMITS:*", target_nodes=redis.RedisCluster.ALL_NODES))
    if flavor == "library":
        # Loaded on every primary, so that each key's node has it.
        for port in cluster:
            [library] = redis.Redis(port=port).function_list("redis_cell")
            assert b"redis_cell" in library


@pytest.fixture(scope="module")
def sentinel(flavor):
    """A primary and its replica, the module on both, and one sentinel watching them."""
    primary = serve(loads(flavor))
    primary_port = next(primary)
    replica = serve([*loads(flavor), "--replicaof", "127.0.0.1", str(primary_port)])
    next(replica)
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "sentinel.conf")
        with open(config, "w") as f:
            f.write(f"bind 127.0.0.1\nport {port}\ndir {work}\n"
                    f"sentinel monitor cell 127.0.0.1 {primary_port} 1\n")
        binary = os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")
        process = subprocess.Popen([binary, config, "--sentinel"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            def knows_primary():
                try:
                    return redis.Redis(port=port).sentinel_get_master_addr_by_name("cell")
                except redis.ConnectionError:
                    return None

            wait_for(knows_primary, "the sentinel's knowing the primary")
            yield port, primary_port
        finally:
            process.terminate()
            process.wait(timeout=10)
            replica.close()
            primary.close()


def test_a_sentinel_serves_cell_redis_sentinel_urls(sentinel):
    port, primary_port = sentinel
    client = redis.Redis(port=primary_port, decode_responses=True)
    decides_in_the_module(f"cell+redis+sentinel://127.0.0.1:{port}/cell",
                          lambda: client.keys("LIMITS:*"))


def test_a_primary_with_a_newer_library_keeps_it_and_the_others_get_ours(cluster, flavor):
    if flavor != "library":
        pytest.skip("the library's versions across primaries: the library flavor's")
    from redis_cell import Client
    from redis_cell.routing import library_source

    nodes = [redis.Redis(port=port) for port in cluster]
    for node in nodes:
        node.function_flush()
    ours = f"local CELL_VERSION = '{redis_cell.__version__}'"
    nodes[0].function_load(library_source().replace(ours, "local CELL_VERSION = '99.0.0'"))
    client = redis.RedisCluster(host="127.0.0.1", port=cluster[0])
    try:
        cell = Client(client)
        for k in range(12):
            assert cell.fixed(f"newer{k}", 3, 60).remaining == 2
    finally:
        client.close()
    versions = [node.fcall_ro("cl_version", 0) for node in nodes]
    assert versions == [b"99.0.0", redis_cell.__version__.encode(), redis_cell.__version__.encode()]
