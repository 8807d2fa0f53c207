"""Real servers on free loopback ports, for each test module: with the module loaded, or
without it (the client then calls the Functions library)."""

import gc
import os
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[3]


def pytest_report_header(config):
    import redis_cell

    return f"redis_cell {redis_cell.__version__} from {Path(redis_cell.__file__).parent}"


def pytest_configure(config):
    config.addinivalue_line("markers", "waits: waits in the server (BLOCK), which needs the module")
    # A lane of the version matrix (scripts/client_lanes.sh) tests the package as installed.
    import redis_cell

    source = ROOT / "clients" / "python"
    if os.environ.get("REDIS_CELL_INSTALLED") and Path(redis_cell.__file__).resolve().is_relative_to(source):
        raise pytest.UsageError(f"redis_cell was imported from the source tree ({redis_cell.__file__}), not the installed package")


def module_path() -> str:
    built = os.environ.get("REDIS_CELL_MODULE") or ROOT / "target" / "debug" / "libredis_cell.so"
    assert Path(built).exists(), f"{built} is missing: build the crate first"
    return str(built)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def finalized_between_tests():
    """Runs the finalizers of what a test left behind once it is done. redis-py 5.2's asyncio
    connections, left to theirs, fail once their loop is closed; pytest formats that failure,
    and CPython 3.11 parses source to format a traceback. Run in the middle of another test's
    compile (werkzeug compiles its routes), that parse breaks CPython 3.11's AST with
    "SystemError: AST constructor recursion depth mismatch"; here it breaks nothing."""
    yield
    gc.collect()


# Each test that takes `server` runs twice: on a server with the module, and on one without
# it, where the client loads and calls the Functions library. Tests of waiting (BLOCK), which
# only the module does, are marked `waits` and skipped on the second.
FLAVORS = ["module", "library"]


@pytest.fixture(scope="module", params=FLAVORS)
def flavor(request):
    return request.param


def loads(flavor: str) -> list:
    """A server's options for a flavor: the module, or nothing."""
    return ["--loadmodule", module_path()] if flavor == "module" else []


@pytest.fixture(scope="module")
def server(flavor):
    yield from serve(loads(flavor))


@pytest.fixture(scope="module")
def module_server():
    """A server with the module loaded, for what only the module does."""
    yield from serve(loads("module"))


@pytest.fixture(autouse=True)
def waits_need_the_module(request):
    if request.node.get_closest_marker("waits") and "flavor" in request.fixturenames:
        if request.getfixturevalue("flavor") == "library":
            pytest.skip("waiting (BLOCK) needs the module; the library refuses it")


@pytest.fixture(scope="module")
def bare_server():
    """A server that has not loaded the module."""
    yield from serve([])


def cluster_port() -> int:
    """A free port whose cluster bus port (10000 more) is free too, and a port."""
    while True:
        port = free_port()
        if port + 10000 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                    return port
                except OSError:
                    continue


def serve(options, port=None, binary=None):
    """A server on a free loopback port (or this one), with these options, until the tests
    are done: `binary`, or the one REDIS_SERVER names."""
    binary = binary or os.environ.get("REDIS_SERVER", "/usr/bin/redis-server")
    port = port or free_port()
    with tempfile.TemporaryDirectory() as work:
        process = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
             "--dir", work, *options],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    redis.Redis(port=port).ping()
                    break
                except redis.ConnectionError:
                    assert time.monotonic() < deadline, "the server did not start"
                    assert process.poll() is None, "the server exited"
                    time.sleep(0.02)
            yield port
        finally:
            process.terminate()
            process.wait(timeout=10)


@contextmanager
def served(app):
    """An ASGI app served by uvicorn on a free loopback port, in a thread, until the block
    ends (its lifespan run at both ends); yields an httpx2 client on it."""
    import httpx2
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive(), "uvicorn exited"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=20) as client:
            yield client
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        assert not thread.is_alive(), "uvicorn did not stop"


@pytest.fixture
def r(server):
    client = redis.Redis(port=server, socket_timeout=20)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def call(r):
    """A limiter's command, as the clients send it: to the module's command, or as the
    library's function."""
    from redis_cell.routing import Router

    return Router(r)


@pytest.fixture
def ran(flavor, r):
    """How many times the server ran ``command`` (or, without the module, any of the
    library's functions), so that a test shows the limiter decided."""

    def calls(command: str) -> int:
        ran = "fcall" if flavor == "library" else command
        return r.info("commandstats").get(f"cmdstat_{ran}", {}).get("calls", 0)

    return calls


def refused_after(get, limit: int, retry_at_most: int):
    """Calls ``get()`` until the limit is spent: ``limit`` 200s with the X-RateLimit
    headers, then a 429 with a Retry-After of at most ``retry_at_most`` seconds and none
    remaining, which it returns."""
    for _ in range(limit):
        ok = get()
        assert ok.status_code == 200
        assert ok.headers["X-RateLimit-Limit"] == str(limit)
    refused = get()
    assert refused.status_code == 429
    assert 0 < int(refused.headers["Retry-After"]) <= retry_at_most
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    return refused
