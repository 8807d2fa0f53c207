#!/usr/bin/env bash
# Builds the module and runs a redis-server with it loaded on 127.0.0.1:${PORT:-6379}.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
module="$PWD/target/release/libredis_cell.so"
echo "Starting redis-server on 127.0.0.1:${PORT:-6379} with $module" >&2
exec /usr/bin/redis-server --bind 127.0.0.1 --port "${PORT:-6379}" --save "" --loadmodule "$module"
