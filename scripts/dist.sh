#!/usr/bin/env bash
# The release bundle, in dist/: the module for x86_64 and aarch64 Linux, each linked against
# glibc 2.17 and checked to ask for nothing newer; the Functions library's two forms; the
# client packages (Python wheel and sdist, npm tarball, each carrying the library, and the
# Java jar); and
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
# The toolchain that makes the release, held so that two machines make the same one.
ZIG=0.17.1
ZIGBUILD=0.24.1
# PyPA's build and the setuptools it runs (not an isolated one of the day's version), which
# build the Python packages by the package's own hooks (setup.py).
BUILD=1.6.1
SETUPTOOLS=84.2.1
targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

command -v rustup >/dev/null || {
  echo "dist: the cross builds need rustup (https://rustup.rs) for the aarch64 standard library" >&2
  exit 1
}
. scripts/debs.sh
debs dist libc6-dev-arm64-cross binutils
# Zig and cargo-zigbuild live in a virtualenv of their own, outside the checkout: zig names
# its library by a path relative to the directory it runs in when it lies below it, and
# bindgen, which runs in the dependency's directory, would not find Zig's C headers there.
tools=${REDIS_CELL_DIST_TOOLS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/redis-cell/zig-$ZIG-zigbuild-$ZIGBUILD}
if ! "$tools/bin/python3" -c "import ziglang" 2>/dev/null || [ ! -x "$tools/bin/cargo-zigbuild" ]; then
  echo "dist: installing ziglang $ZIG and cargo-zigbuild $ZIGBUILD into $tools" >&2
  python3 -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "ziglang==$ZIG" "cargo-zigbuild==$ZIGBUILD"
fi
held=$("$tools/bin/python3" -c 'import build, setuptools; print(build.__version__, setuptools.__version__)' 2>/dev/null || true)
if [ "$held" != "$BUILD $SETUPTOOLS" ]; then
  echo "dist: installing build $BUILD and setuptools $SETUPTOOLS into $tools" >&2
  "$tools/bin/pip" install -q --disable-pip-version-check "build==$BUILD" "setuptools==$SETUPTOOLS"
fi
for target in "${targets[@]}"; do
  rustup target list --installed | grep -x "$target" >/dev/null || rustup target add "$target"
done
# The library's files are generated: they must be what lua/ gives before they ship.
python3 scripts/lua_forms.py --check

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
# Made aside and moved into place whole: a build that fails leaves no half a bundle.
rm -rf dist.new
mkdir -p dist.new
manifest=()
for target in "${targets[@]}"; do
  arch=${target%%-*}
  # cargo-zigbuild reads the glibc version from the target's suffix, and puts the build in
  # target/<target>/ as cargo does; zig is found as the tools' `python3 -m ziglang`.
  PATH="$tools/bin:$PATH" \
    BINDGEN_EXTRA_CLANG_ARGS_aarch64_unknown_linux_gnu="--sysroot=/usr/aarch64-linux-gnu -isystem /usr/aarch64-linux-gnu/include" \
    cargo zigbuild --release --locked --quiet --target "$target.$GLIBC_FLOOR"
  name="libredis_cell-$version-linux-$arch.so"
  file="dist.new/$name"
  # Executable, as the servers want a module to be.
  install -m 0755 "$target_dir/$target/release/libredis_cell.so" "$file"

  # Read from the file itself: its machine, the libraries it needs (glibc's own, which every
  # such system has), and the newest glibc symbol version it asks for.
  machine=$(readelf -h "$file" | sed -n 's/^ *Machine: *//p')
  case "$arch:$machine" in
    x86_64:*X86-64* | aarch64:*AArch64*) ;;
    *) echo "dist: $name is for '$machine'" >&2; exit 1 ;;
  esac
  needed=$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  others=$(grep -vxE 'libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12]' <<<"$needed" || true)
  [ -z "$others" ] || { echo "dist: $name needs $others, beyond glibc" >&2; exit 1; }
  versions=$(readelf -V -W "$file" | grep -o 'GLIBC_[A-Za-z0-9_.]*' | sort -u || true)
  [ -n "$versions" ] || { echo "dist: $name names no glibc version" >&2; exit 1; }
  # GLIBC_PRIVATE or GLIBC_ABI_DT_RELR, say, are needs no floor's number says.
  odd=$(grep -vxE 'GLIBC_[0-9]+(\.[0-9]+)*' <<<"$versions" || true)
  [ -z "$odd" ] || { echo "dist: $name needs $odd" >&2; exit 1; }
  needs=$(sed 's/^GLIBC_//' <<<"$versions" | sort -V | tail -1)
  if [ "$(printf '%s\n%s\n' "$needs" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
    echo "dist: $name asks for glibc $needs, newer than $GLIBC_FLOOR" >&2
    exit 1
  fi
  manifest+=("$name	module	$target, glibc $needs or later	$version")
done
# The Functions library, for a server that loads no module: FUNCTION LOAD's form, and the
# script form for a server where Functions are missing or refused (docs/without-the-module.md).
cp lua/dist/redis_cell.lua "dist.new/redis_cell-$version.lua"
cp lua/dist/redis_cell.script.lua "dist.new/redis_cell-$version.script.lua"
manifest+=("redis_cell-$version.lua	library	FUNCTION LOAD	$version")
manifest+=("redis_cell-$version.script.lua	library	EVAL	$version")
# The client packages, each built by its own tools and hooks, which put the library in from
# lua/dist: the Python sdist, and the wheel built from that sdist (so the sdist is proven to
# carry what a build needs), and the npm tarball. The commit's time stands for the wheel's
# files' (SOURCE_DATE_EPOCH), so that two builds of a commit give the same wheel.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}
rm -rf clients/python/build clients/python/*.egg-info
built=$("$tools/bin/python3" -m build --no-isolation --outdir dist.new clients/python 2>&1) || { echo "$built" >&2; exit 1; }
rm -rf clients/python/build clients/python/*.egg-info
(cd clients/node && npm pack --silent --pack-destination ../../dist.new >/dev/null)
# The Java client's jar, by Maven from clients/java (its tests run in scripts/test.sh), its
# version the pom's, which must be Cargo.toml's.
jar_version=$(sed -n '0,/<version>/s/.*<version>\(.*\)<\/version>.*/\1/p' clients/java/pom.xml | tail -1)
[ "$jar_version" = "$version" ] || { echo "dist: clients/java/pom.xml says $jar_version, Cargo.toml $version" >&2; exit 1; }
# Built afresh, the tests neither compiled nor run, so that no class a lane or an edit left
# in target/ reaches the jar.
rm -rf clients/java/target
(cd clients/java && mvn -q -B package -Dmaven.test.skip=true)
cp "clients/java/target/redis-cell-$version.jar" dist.new/
wheel="redis_cell-$version-py3-none-any.whl"
sdist="redis_cell-$version.tar.gz"
tarball="redis-cell-$version.tgz"
for name in "$wheel" "$sdist" "$tarball"; do
  [ -f "dist.new/$name" ] || {
    echo "dist: no $name among $(ls dist.new | tr '\n' ' '): does a package's version differ from Cargo.toml's?" >&2
    exit 1
  }
done
# Each carries both forms, byte for byte lua/dist's.
python3 - "$version" <<'PY'
import sys, tarfile, zipfile
version = sys.argv[1]
for form in ("redis_cell.lua", "redis_cell.script.lua"):
    want = open(f"lua/dist/{form}", "rb").read()
    wheel = zipfile.ZipFile(f"dist.new/redis_cell-{version}-py3-none-any.whl")
    sdist = tarfile.open(f"dist.new/redis_cell-{version}.tar.gz")
    tarball = tarfile.open(f"dist.new/redis-cell-{version}.tgz")
    for where, got in [("the wheel", lambda: wheel.read(f"redis_cell/lua/{form}")),
                       ("the sdist", lambda: sdist.extractfile(f"redis_cell-{version}/redis_cell/lua/{form}").read()),
                       ("the npm tarball", lambda: tarball.extractfile(f"package/lua/{form}").read())]:
        try:
            same = got() == want
        except KeyError:
            same = False
        if not same:
            sys.exit(f"dist: {where} does not carry lua/dist/{form}")
PY
manifest+=("$wheel	python	py3, CPython 3.10 or later	$version")
manifest+=("$sdist	python	source	$version")
manifest+=("$tarball	node	Node 20 or later	$version")
manifest+=("redis-cell-$version.jar	java	Java 17 or later, with Jedis, Lettuce or Spring Data Redis	$version")
{
  echo "# file	what	target	version (tab-separated; built with zig $ZIG, cargo-zigbuild $ZIGBUILD)"
  printf '%s\n' "${manifest[@]}"
} >dist.new/MANIFEST
(cd dist.new && sha256sum -- * >SHA256SUMS)
rm -rf dist
mv dist.new dist
cat dist/SHA256SUMS
