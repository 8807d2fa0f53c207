#!/usr/bin/env bash
# The servers CI tests on beside the default pair (scripts/env.sh): Debian 13's redis-server
# and valkey-server, the newest Redis and the Valkey 8 that the machines can get. They come
# from a Debian trixie root made with debootstrap and kept between runs; each runs on this
# machine through that root's own loader and libraries, with no container, by a launcher
# written beside the root. Prints the two launchers' paths, Redis's first.
#
# With CI=true the servers must be had, and a failure to make them fails; elsewhere, without
# root, the script prints nothing and the caller skips them.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/debs.sh

home=${REDIS_CELL_SERVERS_HOME:-/var/tmp/redis-cell-servers}
root="$home/trixie"
mkdir -p "$home"

if [ ! -x "$root/usr/bin/redis-server" ] || [ ! -x "$root/usr/bin/valkey-server" ]; then
  if [ "$(id -u)" != 0 ]; then
    [ "${CI:-}" = true ] && { echo "servers: making Debian 13's servers needs root (CI=true)" >&2; exit 1; }
    echo "servers: skipped: making Debian 13's servers needs root" >&2
    exit 0
  fi
  debs servers debootstrap
  # Made aside and moved into place whole, so that a run cut short leaves no half a root.
  rm -rf "$root.new"
  echo "servers: making a Debian trixie root for its redis-server and valkey-server" >&2
  debootstrap --variant=minbase trixie "$root.new" http://deb.debian.org/debian >"$home/debootstrap.log" 2>&1 \
    || { tail -20 "$home/debootstrap.log" >&2; exit 1; }
  # No service starts inside the root.
  printf '#!/bin/sh\nexit 101\n' >"$root.new/usr/sbin/policy-rc.d"
  chmod +x "$root.new/usr/sbin/policy-rc.d"
  chroot "$root.new" /bin/sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server valkey-server' \
    >"$home/apt.log" 2>&1 || { tail -20 "$home/apt.log" >&2; exit 1; }
  rm -rf "$root.new/var/cache/apt/archives"/*.deb "$root.new/var/lib/apt/lists"/*_Packages
  rm -rf "$root"
  mv "$root.new" "$root"
fi

# A launcher per server: the root's loader, with the root's libraries first, runs the root's
# binary, with the same pid and arguments (the module the tests load, built here against an
# older glibc, loads there too).
mkdir -p "$home/bin"
for server in redis-server valkey-server; do
  launcher="$home/bin/trixie-$server"
  cat >"$launcher.new" <<EOF
#!/bin/sh
exec "$root/lib64/ld-linux-x86-64.so.2" --library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" "$root/usr/bin/$server" "\$@"
EOF
  chmod +x "$launcher.new"
  mv "$launcher.new" "$launcher"
done
echo "$home/bin/trixie-redis-server"
echo "$home/bin/trixie-valkey-server"
