#!/usr/bin/env bash
# Runs every check and test: formatting, clippy, unit and property tests, and the
# integration tests against real Redis 7.0 and 8.0, Valkey 8.1 and 9.1, and Redis 6.2 servers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. scripts/env.sh
"$REDIS_SERVER" --version
"$VALKEY_SERVER" --version

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
# The layers of docs/design.md: no import points up, and the graph has no cycle.
python3 scripts/layers.py --check docs/design.md >/dev/null
# The Redis Functions library's two generated forms (lua/dist) are what its sources give.
python3 scripts/lua_forms.py --check
cargo build --examples
# The unit and property tests, then the integration tests: one binary (tests/it/).
cargo test --all-targets
# The integration tests again on Debian 13's Redis 8.0 and Valkey 8.1 (scripts/servers.sh),
# and the sentence in the docs that says which servers CI runs checked against all four.
# Neither runs under libfaketime (their jemalloc deadlocks as it sets up), so the tests that
# need a controlled clock, which the first pass ran on Valkey 9.1, are left out by name.
servers=$(bash scripts/servers.sh)
if [ -n "$servers" ]; then
  { read -r trixie_redis; read -r trixie_valkey; } <<<"$servers"
  "$trixie_redis" --version
  "$trixie_valkey" --version
  REDIS_SERVER="$trixie_redis" VALKEY_SERVER="$trixie_valkey" \
    cargo test --test it -- --skip under_a_controlled_clock
  python3 scripts/tested_servers.py --check README.md docs/operations.md -- \
    "$REDIS_SERVER" "$VALKEY_SERVER" "$trixie_redis" "$trixie_valkey"
fi
# The Python client (clients/python) and the Node adapter (clients/node), with the module just
# built, as installed packages: the version matrix's two lanes (clients/matrix.json), every
# floor together and every newest together, and its table in docs/clients.md held to it.
cargo build --lib
python3 scripts/client_matrix.py --check docs/clients.md
bash scripts/client_lanes.sh floor
bash scripts/client_lanes.sh newest
# The Node adapter from the source tree too, on every major of its clients between the lanes'
# (ioredis 5 and 6, node-redis 4, 5 and 6), on both servers.
for server in "$REDIS_SERVER" "$VALKEY_SERVER"; do
  (cd clients/node && REDIS_SERVER="$server" REDIS_CELL_MODULE="$PWD/../../target/debug/libredis_cell.so" \
    timeout -k 30 900 node --test test/*.test.js)
done
# The Java client (clients/java) with Maven, against the module just built and against the
# Functions library, installed into the local repository, then docs/clients.md's Java examples
# (clients/java/examples, a Spring Boot app and the recipes) built on that jar: on Redis,
# fetching what they need, then on Valkey offline, as a build that has everything already
# must pass without the network.
# On Valkey, which runs under libfaketime, the tests that need a controlled clock (the Guava
# differential) must run: REDIS_CELL_REQUIRE_CLOCK fails them where they would skip.
module_debug="$PWD/target/debug/libredis_cell.so"
for run in "$REDIS_SERVER::" "$VALKEY_SERVER:-o:1"; do
  IFS=: read -r server offline require_clock <<<"$run"
  (cd clients/java && REDIS_SERVER="$server" REDIS_CELL_MODULE="$module_debug" \
    REDIS_CELL_REQUIRE_CLOCK="$require_clock" timeout -k 30 900 mvn $offline -q -B install)
  (cd clients/java/examples && REDIS_SERVER="$server" REDIS_CELL_MODULE="$module_debug" \
    timeout -k 30 600 mvn $offline -q -B verify)
done
# The Go client (clients/go, and clients/go/ratetest: redis_rate itself beside the drop-in,
# and apidiff): vet, then the tests under the race detector against the module just built and
# the library, over go-redis and valkey-go, on one server and a cluster: on Redis, fetching
# the modules, then on Valkey with GOPROXY=off, as a build that has everything already must
# pass offline. On Valkey, under libfaketime, the redis_rate differential must run.
for run in "$REDIS_SERVER::" "$VALKEY_SERVER:off:1"; do
  IFS=: read -r server proxy require_clock <<<"$run"
  (
    export GOPROXY="${proxy:-$(go env GOPROXY)}"
    for dir in clients/go clients/go/ratetest; do
      (cd "$dir" && go vet ./... &&
        REDIS_SERVER="$server" REDIS_CELL_MODULE="$module_debug" REDIS_CELL_REQUIRE_CLOCK="$require_clock" \
          timeout -k 30 900 go test -race -count=1 ./...)
    done
    # The benchmark's module (make bench runs it): vetted and built here, so that it cannot
    # break first where it is measured.
    cd clients/go/bench && go vet ./... && go test -run '^$' -bench '^$' ./...
  )
done

# The packages as a user installs them (docs/clients.md, "Installing"): into a fresh
# virtualenv and a fresh npm project, each serving an app against the module.
bash scripts/install_check.sh

# The release bundle (docs/operations.md, "Installing"): both binaries built against glibc
# 2.17 and held to it, the sums verified, the x86_64 module loaded by real servers and by one
# on Debian 11's glibc 2.31, and the aarch64 one by an aarch64 Valkey under emulation.
bash scripts/dist.sh
(cd dist && sha256sum -c SHA256SUMS)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
REDIS_CELL_MODULE="$PWD/dist/libredis_cell-$version-linux-x86_64.so" cargo test --test it -- operability:: contract:: lease::
bash scripts/old_glibc_lane.sh
bash scripts/aarch64_lane.sh

# The Docker lane: the image built from the Dockerfile, and the bundle's images for amd64
# and arm64 from its modules, tested through testcontainers, on an engine and base images the
# lane gets itself (docs/reliability.md, "The Docker lane").
cargo clippy --features docker --tests -- -D warnings
bash scripts/docker-lane.sh

# Coverage-guided fuzzing, bounded: `make fuzz FUZZ_SECONDS=600` for the long run.
FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz.sh
