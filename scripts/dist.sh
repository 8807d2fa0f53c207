#!/usr/bin/env bash
# The release: the module built in release mode, named with its version and platform, and
# its SHA-256, in dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
name="libredis_cell-$version-$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m).so"
mkdir -p dist
cp target/release/libredis_cell.so "dist/$name"
(cd dist && sha256sum "$name" > "$name.sha256" && cat "$name.sha256")
