#!/usr/bin/env bash
# The Docker lane: the image built from the Dockerfile, and tests/it/docker.rs run against a
# container of it through testcontainers.
#
# - The engine: one that answers already (DOCKER_HOST, or the default socket); otherwise, as
#   root, Debian's docker.io (with debootstrap) installed if missing and a dockerd of the
#   lane's own, its data root, exec root, pidfile and socket under the lane's directories,
#   stopped by its pid at the end. No other engine's state is touched.
# - The base images: the Dockerfile's defaults (the official rust and redis images) where
#   they can be pulled; otherwise stand-ins made from Debian trixie's packages (debootstrap,
#   then docker import), passed as the Dockerfile's build arguments, and kept in the lane's
#   engine between runs. Debian's rustc is 1.85, the crate's rust-version: the image's build
#   proves it.
# - The crates: vendored on the host into the build context, so the build runs offline.
#
# With CI=true the lane must run, and a failure to start it fails; elsewhere, without root
# and without an engine, it is skipped with one line.
set -euo pipefail
cd "$(dirname "$0")/.."

# The lane's own directories: the data root persists (it caches the stand-ins); the exec root
# holds sockets, whose paths must stay short.
home=${REDIS_CELL_DOCKER_HOME:-/var/tmp/redis-cell-docker}
exec_root=${REDIS_CELL_DOCKER_EXEC:-/run/redis-cell-docker}
started=$(date +%s)

skip_or_fail() {
  if [ "${CI:-}" = true ]; then
    echo "docker lane: $1 (CI=true: the lane must run)" >&2
    exit 1
  fi
  echo "docker lane skipped: $1"
  exit 0
}

engine_answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

own_engine=""
stop_own_engine() {
  [ -n "$own_engine" ] || return 0
  kill "$own_engine" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$own_engine" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$own_engine" 2>/dev/null || true
}
trap stop_own_engine EXIT

if ! command -v docker >/dev/null || ! engine_answers; then
  [ "$(id -u)" = 0 ] || skip_or_fail "no Docker engine answers, and starting one needs root"
  if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    echo "docker lane: installing docker.io and debootstrap"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
  fi
  mkdir -p "$home/data" "$exec_root"
  socket="$home/docker.sock"
  dockerd --data-root "$home/data" --exec-root "$exec_root" --pidfile "$home/dockerd.pid" \
    -H "unix://$socket" >"$home/dockerd.log" 2>&1 &
  own_engine=$!
  export DOCKER_HOST="unix://$socket"
  for _ in $(seq 1 300); do
    engine_answers && break
    kill -0 "$own_engine" 2>/dev/null || break
    sleep 0.2
  done
  if ! engine_answers; then
    tail -20 "$home/dockerd.log" >&2
    skip_or_fail "the lane's own dockerd did not come up"
  fi
  echo "docker lane: started dockerd $(docker version --format '{{.Server.Version}}') (pid $own_engine) at $DOCKER_HOST"
else
  echo "docker lane: using the engine at ${DOCKER_HOST:-the default socket}"
fi

# The base images: pulled, or made here.
builder_image=${REDIS_CELL_BUILDER_IMAGE:-}
server_image=${REDIS_CELL_SERVER_IMAGE:-}
if [ -z "$builder_image" ] && ! timeout 120 docker pull -q rust:1-bookworm >/dev/null 2>&1; then
  echo "docker lane: the official images cannot be pulled; using stand-ins from Debian trixie"
  if ! command -v debootstrap >/dev/null; then
    [ "$(id -u)" = 0 ] || skip_or_fail "making the stand-ins needs debootstrap, and installing it root"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  base=redis-cell-lane/debian:trixie
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    rootfs=$(mktemp -d "$home/rootfs.XXXXXX")
    debootstrap --variant=minbase trixie "$rootfs" http://deb.debian.org/debian >"$home/debootstrap.log" 2>&1 \
      || { tail -20 "$home/debootstrap.log" >&2; exit 1; }
    tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
    rm -rf "$rootfs"
  fi
  builder_image=redis-cell-lane/builder:trixie
  if ! docker image inspect "$builder_image" >/dev/null 2>&1; then
    docker build -q -t "$builder_image" - >>"$home/stand-ins.log" 2>&1 <<EOF || { tail -20 "$home/stand-ins.log" >&2; exit 1; }
FROM $base
RUN apt-get update \\
 && apt-get install -y --no-install-recommends cargo rustc libclang-dev gcc libc6-dev \\
 && rm -rf /var/lib/apt/lists/*
EOF
  fi
  # As the official image: redis-server from /data, dropped from root to its own user.
  server_image=redis-cell-lane/redis:trixie
  if ! docker image inspect "$server_image" >/dev/null 2>&1; then
    docker build -q -t "$server_image" - >>"$home/stand-ins.log" 2>&1 <<EOF || { tail -20 "$home/stand-ins.log" >&2; exit 1; }
FROM $base
RUN apt-get update \\
 && apt-get install -y --no-install-recommends redis-server \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /data && chown redis:redis /data \\
 && printf '%s\n' '#!/bin/sh' 'set -e' \\
    'if [ "\$1" = redis-server ] && [ "\$(id -u)" = 0 ]; then' \\
    '  find . \\! -user redis -exec chown redis {} +' \\
    '  exec setpriv --reuid=redis --regid=redis --init-groups "\$@"' \\
    'fi' 'exec "\$@"' >/usr/local/bin/docker-entrypoint.sh \\
 && chmod +x /usr/local/bin/docker-entrypoint.sh
WORKDIR /data
VOLUME /data
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
EOF
  fi
fi
export REDIS_CELL_BUILDER_IMAGE=${builder_image}
export REDIS_CELL_SERVER_IMAGE=${server_image}

# The crates, vendored into a build context of their own (the checkout's .cargo is not
# touched): the test adds them to the image's context.
# Kept while the lock is the same, so that the image's layers can be reused.
vendor_dir="$home/vendor"
if ! cmp -s Cargo.lock "$vendor_dir/Cargo.lock"; then
  rm -rf "$vendor_dir"
  mkdir -p "$vendor_dir/.cargo"
  cargo vendor --locked --versioned-dirs --quiet "$vendor_dir/vendor" >/dev/null
  cp Cargo.lock "$vendor_dir/Cargo.lock"
fi
# What `cargo vendor` prints, with the directory as the context will hold it.
cat >"$vendor_dir/.cargo/config.toml" <<'EOF'
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "vendor"
EOF
export REDIS_CELL_VENDOR="$vendor_dir"

echo "docker lane: building the image (builder ${REDIS_CELL_BUILDER_IMAGE:-official}, server ${REDIS_CELL_SERVER_IMAGE:-official})"
cargo test --features docker --test it -- --test-threads 1 docker::
echo "docker lane: passed in $(($(date +%s) - started)) s"
