#!/usr/bin/env bash
# The Docker lane: the image built from the Dockerfile, and tests/it/docker.rs run against a
# container of it through testcontainers; then the release bundle's images for amd64 and
# arm64 (Dockerfile.bundle, with dist/'s modules), each through the same tests, arm64's under
# emulation (qemu-user-static, registered with binfmt_misc by the lane where nothing has).
#
# - The engine: one that answers already (DOCKER_HOST, or the default socket); otherwise, as
#   root, a dockerd of the lane's own (Debian's docker.io installed when no dockerd is), its
#   data root, exec root, pidfile, socket, configuration and containerd namespace its own,
#   stopped by its pid at the end. No other engine's state is touched; the docker0 bridge and
#   its iptables rules are made as any dockerd makes them.
# - The base images: the Dockerfile's defaults (the official rust and redis images) where
#   they can be pulled; otherwise stand-ins made from Debian trixie's packages (debootstrap,
#   then docker load, as images that name their platform), passed as the Dockerfile's build
#   arguments, and kept in the lane's
#   engine between runs. Debian's rustc is 1.85, the crate's rust-version: the image's build
#   proves it.
# - The crates: vendored on the host into the build context, so the build runs offline.
#
# With CI=true the lane must run, and a failure to start it fails; elsewhere, without root
# and without an engine, it is skipped with one line.
set -euo pipefail
# A failure inside $(...) stops the lane too, where it happens.
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
. scripts/debs.sh

# The lane's own directories: the data root persists (it caches the stand-ins); the exec root
# holds sockets, whose paths must stay short.
home=${REDIS_CELL_DOCKER_HOME:-/var/tmp/redis-cell-docker}
exec_root=${REDIS_CELL_DOCKER_EXEC:-/run/redis-cell-docker}
started=$(date +%s)
mkdir -p "$home"

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
  # Each build leaves its layers (about 3 GB: the builder's target directory) and the image
  # it replaced; only the stand-ins are worth keeping. Only in the lane's own engine.
  docker image prune -f >/dev/null 2>&1 || true
  docker builder prune -af >/dev/null 2>&1 || true
  kill "$own_engine" 2>/dev/null || true
  # dockerd takes up to 15 s to stop its containers.
  for _ in $(seq 1 250); do
    kill -0 "$own_engine" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$own_engine" 2>/dev/null || true
}
# Running an arm64 image here needs the kernel to hand aarch64 programs to qemu: Debian's
# qemu-user-static registration, whose F flag opens the interpreter at once, so that it is
# found inside containers. The lane registers it, as root, where nothing has, and takes it
# away again at the end.
binfmt=/proc/sys/fs/binfmt_misc
registered=""
unregister_arm64() {
  [ -z "$registered" ] || echo -1 >"$binfmt/qemu-aarch64" 2>/dev/null || true
}
# An entry that serves containers: enabled, with F.
arm64_entry_serves() {
  [ -r "$binfmt/qemu-aarch64" ] && grep -qx enabled "$binfmt/qemu-aarch64" \
    && grep -q '^flags:.*F' "$binfmt/qemu-aarch64"
}
arm64_emulated() {
  arm64_entry_serves && return 0
  # An entry that does not serve (disabled, or without F) is someone else's to change.
  [ ! -e "$binfmt/qemu-aarch64" ] && [ "$(id -u)" = 0 ] || return 1
  debs "docker lane" qemu-user-static || return 1
  [ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || return 1
  # Installing the package registers it itself where binfmt-support runs.
  if [ ! -e "$binfmt/qemu-aarch64" ]; then
    cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register" 2>/dev/null || return 1
    registered=1
  fi
  arm64_entry_serves
}
trap 'stop_own_engine; unregister_arm64' EXIT
# A lane stopped by a signal (a CI timeout) cleans up as one that ends.
trap 'exit 143' TERM
trap 'exit 130' INT

if ! command -v docker >/dev/null || ! engine_answers; then
  [ "$(id -u)" = 0 ] || skip_or_fail "no Docker engine answers, and starting one needs root"
  # Only what is missing: docker.io conflicts with Docker CE's packages, whose dockerd serves.
  command -v dockerd >/dev/null || debs "docker lane" --no-install-recommends docker.io
  mkdir -p "$home/data" "$exec_root"
  socket="$home/docker.sock"
  # An empty configuration, not /etc/docker/daemon.json, and containerd objects in a
  # namespace of the lane's own where a system containerd serves.
  echo '{}' >"$home/daemon.json"
  dockerd --config-file "$home/daemon.json" --data-root "$home/data" --exec-root "$exec_root" \
    --pidfile "$home/dockerd.pid" -H "unix://$socket" \
    --containerd-namespace redis-cell-lane --containerd-plugins-namespace redis-cell-lane-plugins \
    >"$home/dockerd.log" 2>&1 &
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

# Stand-ins for the official images, made from Debian trixie's packages for a platform
# (amd64, or arm64, whose packages are set up under emulation), each printing its name.
# The root goes in by `docker load`, as an image whose configuration names its platform:
# `docker import` labels every image with the engine's own (dockerd 20.10 ignores its
# --platform), and the legacy builder then refuses to COPY into an arm64 build on it.
debian_image() {
  local image=redis-cell-lane/debian:trixie-$1 made layer
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    made=$(mktemp -d "$home/rootfs.XXXXXX")
    debootstrap --arch="$1" --variant=minbase trixie "$made/root" http://deb.debian.org/debian \
      >"$home/debootstrap.log" 2>&1 || { tail -20 "$home/debootstrap.log" >&2; rm -rf "$made"; exit 1; }
    tar -C "$made/root" -cf "$made/layer.tar" .
    layer=$(sha256sum "$made/layer.tar" | cut -d' ' -f1)
    printf '{"architecture":"%s","os":"linux","config":{},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
      "$1" "$layer" >"$made/config.json"
    printf '[{"Config":"config.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$image" >"$made/manifest.json"
    tar -C "$made" -c manifest.json config.json layer.tar | docker load >/dev/null
    rm -rf "$made"
  fi
  echo "$image"
}
# As the official image: redis-server from /data, dropped from root to its own user.
server_stand_in() {
  local image=redis-cell-lane/redis:trixie-$1 base
  base=$(debian_image "$1")
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    docker build -q --platform "linux/$1" -t "$image" - >>"$home/stand-ins.log" 2>&1 <<EOF || { tail -20 "$home/stand-ins.log" >&2; exit 1; }
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
  echo "$image"
}

# The base images: the official ones, with the builder at the declared rust-version, where
# both can be pulled; otherwise stand-ins made here.
rust_version=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
builder_image=${REDIS_CELL_BUILDER_IMAGE:-}
server_image=${REDIS_CELL_SERVER_IMAGE:-}
stand_ins=""
pulled() { timeout 600 docker pull -q "$1" >/dev/null 2>&1; }
if [ -z "$builder_image" ] && pulled "rust:$rust_version-bookworm" && pulled redis:7.4-bookworm; then
  builder_image="rust:$rust_version-bookworm"
elif [ -z "$builder_image" ]; then
  echo "docker lane: the official images cannot be pulled; using stand-ins from Debian trixie"
  stand_ins=1
  # debootstrap needs root.
  [ "$(id -u)" = 0 ] || skip_or_fail "the official images cannot be pulled, and making stand-ins needs root"
  debs "docker lane" debootstrap
  base=$(debian_image amd64)
  builder_image=redis-cell-lane/builder:trixie
  if ! docker image inspect "$builder_image" >/dev/null 2>&1; then
    docker build -q -t "$builder_image" - >>"$home/stand-ins.log" 2>&1 <<EOF || { tail -20 "$home/stand-ins.log" >&2; exit 1; }
FROM $base
RUN apt-get update \\
 && apt-get install -y --no-install-recommends cargo rustc libclang-dev gcc libc6-dev \\
 && rm -rf /var/lib/apt/lists/*
EOF
  fi
  server_image=$(server_stand_in amd64)
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
cargo test --features docker --test it -- --test-threads 1 docker:: 2>&1 | tee "$home/test.log"
# A filter that matched nothing would pass too: each image test must have passed by name.
ran() {
  for test in the_image_serves_the_worked_examples_a_wait_and_its_version \
    the_server_runs_as_its_own_user_and_keeps_an_aof_in_data_across_a_restart; do
    grep -q "^test docker::$test \.\.\. ok\$" "$home/test.log" \
      || { echo "docker lane: docker::$test did not pass" >&2; exit 1; }
  done
}
ran

# The bundle's images (Dockerfile.bundle): the release bundle's module for each platform, on
# that platform's server image, built with no compile and no emulation; each holds the
# bundle's file byte for byte, and runs the same tests, arm64's under emulation.
# The bundle of this tree: dist.sh rebuilds only what changed.
bash scripts/dist.sh >/dev/null
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
for platform in amd64 arm64; do
  case $platform in amd64) arch=x86_64 ;; arm64) arch=aarch64 ;; esac
  if [ "$platform" = arm64 ] && ! arm64_emulated; then
    echo "docker lane: no arm64 image: this machine cannot run arm64 programs in containers (binfmt_misc's qemu-aarch64 entry, enabled and with F; registering one needs root)" >&2
    [ "${CI:-}" != true ] || exit 1
    continue
  fi
  module=libredis_cell-$version-linux-$arch.so
  # The server image the first half ran on: a stand-in for this platform, the one named
  # (which must have this platform), or the official default, pulled for it.
  if [ -n "$stand_ins" ]; then
    base=(--build-arg "SERVER_IMAGE=$(server_stand_in "$platform")")
  elif [ -n "$server_image" ]; then
    base=(--build-arg "SERVER_IMAGE=$server_image")
  else
    base=(--pull)
  fi
  image=redis-cell-lane/bundle:$platform
  docker build -q --platform "linux/$platform" -f Dockerfile.bundle "${base[@]}" \
    --build-arg "MODULE=$module" -t "$image" dist >/dev/null
  container=$(docker create "$image")
  docker cp "$container:/usr/local/lib/redis/modules/libredis_cell.so" - | tar -xO | cmp -s - "dist/$module" \
    || { docker rm "$container" >/dev/null; echo "docker lane: $image does not hold dist/$module" >&2; exit 1; }
  docker rm "$container" >/dev/null
  architecture=$(docker image inspect --format '{{.Architecture}}' "$image")
  [ "$architecture" = "$platform" ] || { echo "docker lane: $image is for $architecture" >&2; exit 1; }
  echo "docker lane: $image from dist/$module; testing it"
  REDIS_CELL_IMAGE=$image cargo test --features docker --test it -- --test-threads 1 docker:: 2>&1 \
    | tee "$home/test.log"
  ran
done
echo "docker lane: passed in $(($(date +%s) - started)) s"
