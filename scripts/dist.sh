#!/usr/bin/env bash
# The release bundle, in dist/: the module for x86_64 and aarch64 Linux, each linked against
# glibc 2.17 and checked to ask for nothing newer; the Functions library's two forms; and
# SHA256SUMS and a MANIFEST over all of it, with the one version Cargo.toml gives.
#
# The cross builds use cargo-zigbuild, with Zig from PyPI's ziglang (a virtualenv of their
# own, below); the Rust standard library for aarch64 from rustup; and, for bindgen, the
# aarch64 C headers from Debian's libc6-dev-arm64-cross. This script installs what is
# missing (apt with sudo when not run as root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# The oldest glibc the binaries load on: manylinux2014's floor (RHEL 7; Amazon Linux 2 has
# 2.26, Ubuntu 20.04 and Debian 11 2.31). docs/operations.md ("Installing") says the same.
GLIBC_FLOOR=2.17
targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

if ! dpkg-query -W -f='${Status}' libc6-dev-arm64-cross 2>/dev/null | grep -q "install ok installed"; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "dist: installing libc6-dev-arm64-cross" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libc6-dev-arm64-cross >/dev/null
fi
# Zig and cargo-zigbuild live in a virtualenv of their own, outside the checkout: zig names
# its library by a path relative to the directory it runs in when it lies below it, and
# bindgen, which runs in the dependency's directory, would not find Zig's C headers there.
tools=${REDIS_CELL_DIST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/redis-cell/dist-tools}
if ! "$tools/bin/python3" -c "import ziglang" 2>/dev/null || [ ! -x "$tools/bin/cargo-zigbuild" ]; then
  echo "dist: installing ziglang and cargo-zigbuild into $tools" >&2
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check ziglang cargo-zigbuild
fi
for target in "${targets[@]}"; do
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
rm -rf dist
mkdir -p dist
manifest=()
for target in "${targets[@]}"; do
  arch=${target%%-*}
  # cargo-zigbuild reads the glibc version from the target's suffix, and puts the build in
  # target/<target>/ as cargo does; zig is found as the tools' `python3 -m ziglang`.
  PATH="$tools/bin:$PATH" \
    BINDGEN_EXTRA_CLANG_ARGS_aarch64_unknown_linux_gnu="--sysroot=/usr/aarch64-linux-gnu -isystem /usr/aarch64-linux-gnu/include" \
    cargo zigbuild --release --locked --quiet --target "$target.$GLIBC_FLOOR"
  name="libredis_cell-$version-linux-$arch.so"
  cp "$target_dir/$target/release/libredis_cell.so" "dist/$name"
  # The newest glibc symbol version the file asks for, read from the file itself.
  needs=$(readelf -V -W "dist/$name" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
  if [ "$(printf '%s\n%s\n' "$needs" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
    echo "dist: $name asks for glibc $needs, newer than $GLIBC_FLOOR" >&2
    exit 1
  fi
  manifest+=("$name  module  $target, glibc >= $needs  $version")
done
# The Functions library, for a server that loads no module: FUNCTION LOAD's form, and the
# script form for a server where Functions are missing or refused (docs/without-the-module.md).
cp lua/dist/redis_cell.lua "dist/redis_cell-$version.lua"
cp lua/dist/redis_cell.script.lua "dist/redis_cell-$version.script.lua"
manifest+=("redis_cell-$version.lua  library  FUNCTION LOAD  $version")
manifest+=("redis_cell-$version.script.lua  library  EVAL  $version")
printf '%s\n' "${manifest[@]}" >dist/MANIFEST
(cd dist && sha256sum -- * >SHA256SUMS && cat SHA256SUMS)
