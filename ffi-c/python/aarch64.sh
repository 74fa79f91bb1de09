#!/usr/bin/env bash
# The aarch64 Linux wheel (issue 40 item 6): cross-compiles the abi3 wheel for
# aarch64-unknown-linux-gnu with maturin and the Debian cross linker, checks that its
# extension is an ARM aarch64 ELF, and runs tests/aarch64_smoke.py with it under qemu-aarch64
# on Debian's arm64 CPython (extracted into a sysroot under target/, the host's Python is
# untouched). The smoke test also runs with the host's x86-64 build; both must print the same
# digest of every mask along their walks. Run by ffi-c/python/ci.sh (so by .ci/run).
#
#   ffi-c/python/aarch64.sh     # from anywhere; the wheel lands in target/wheels/
#
# Needs: rustup (the aarch64-unknown-linux-gnu target), aarch64-linux-gnu-gcc (Debian
# gcc-aarch64-linux-gnu), qemu-aarch64 (Debian qemu-user), python3 with venv and PyPI access
# (maturin, in target/pyvenv-aarch64), apt (arm64 packages: `dpkg --add-architecture arm64`).
# Installs what is missing when running as root with apt-get, like .ci/qemu-tests.sh. A piece
# that cannot be had prints "SKIP: ..." and the script exits 0; a wrong wheel or a digest that
# differs from the host's fails (exit 1).
#
# SIEVE_HOST_PYTHON: a Python with the host's build of this source installed (ci.sh passes
# its venv's); unset, the host wheel is built here with maturin (target/wheels-host/).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
target=aarch64-unknown-linux-gnu
shared=${SIEVE_SHARED:-$repo/../shared}
venv=$repo/target/pyvenv-aarch64
root=$repo/target/arm64-root
site=$repo/target/site-aarch64
start=$SECONDS

skip() {
  echo "SKIP: python aarch64 wheel: $*"
  echo "aarch64 wheel: $((SECONDS - start)) s"
  exit 0
}
can_apt() { command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; }

echo "--- aarch64 wheel: cross build ($target) and smoke test under qemu-aarch64"
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  rustup target add "$target" >/dev/null 2>&1 || true
fi
rustup target list --installed 2>/dev/null | grep -qx "$target" \
  || skip "the rust target $target is not installed and 'rustup target add' failed"
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  if can_apt; then
    echo "installing gcc-aarch64-linux-gnu and qemu-user with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        gcc-aarch64-linux-gnu qemu-user; } >/dev/null 2>&1 || true
  fi
fi
command -v aarch64-linux-gnu-gcc >/dev/null \
  || skip "aarch64-linux-gnu-gcc not found (Debian package gcc-aarch64-linux-gnu)"

# maturin from PyPI, in a venv of its own (ci.sh's venv gets maturin only inside pip's
# isolated build).
if [ ! -x "$venv/bin/maturin" ]; then
  python3 -m venv --clear "$venv" >/dev/null 2>&1 || skip "'python3 -m venv' failed (install python3-venv)"
  "$venv/bin/pip" install -q 'maturin>=1.5,<2' >/dev/null 2>&1 || skip "pip install maturin failed"
fi
maturin=$venv/bin/maturin

# abi3 needs no target interpreter: maturin and pyo3 build an abi3 extension for another
# architecture without PYO3_CROSS_* settings (the .so links no libpython).
t=$SECONDS
rm -f target/wheels/sieve-*_aarch64.whl
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  "$maturin" build --release --target "$target" -m ffi-c/python/Cargo.toml --out target/wheels 2>&1 \
  | grep -v '^ *Compiling '
wheel=$(ls target/wheels/sieve-*-abi3-*_aarch64.whl)
build_s=$((SECONDS - t))
echo "built $wheel in $build_s s"
unzip -l "$wheel"
rm -rf "$site" && mkdir -p "$site" && unzip -q "$wheel" -d "$site"
so=$(ls "$site"/sieve/_sieve*.so)
desc=$(file -b "$so" 2>/dev/null || true)
echo "$so: ${desc:-(no 'file' command)}"
# e_machine (bytes 18-19 of the ELF header, little-endian) is 183 for aarch64.
machine=$(od -An -tu2 -j18 -N2 "$so" | tr -d ' ')
if [ "$machine" != 183 ] || { [ -n "$desc" ] && [[ "$desc" != *"ARM aarch64"* ]]; }; then
  echo "FAIL: $so is not an aarch64 ELF (e_machine $machine)"
  exit 1
fi

command -v qemu-aarch64 >/dev/null || skip "qemu-aarch64 not found (Debian package qemu-user); the wheel was built, not run"
[ -f "$shared/tokenizers/llama3.json" ] \
  || skip "$shared/tokenizers/llama3.json is missing; the wheel was built, not run"

# Debian's arm64 CPython and the libraries it and the extension load, unpacked (dpkg -x,
# nothing installed) into target/arm64-root: qemu-aarch64 -L finds the loader and libraries
# there. libssl3 and most of libpython3.11-stdlib's libraries are not needed by the test.
t=$SECONDS
pyver=3.11
debs=(python$pyver-minimal libpython$pyver-minimal libpython$pyver-stdlib libc6 libgcc-s1 zlib1g
  libexpat1 libffi8)
if [ ! -x "$root/usr/bin/python$pyver" ]; then
  can_apt || skip "no arm64 CPython in $root and no apt-get as root to fetch it"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64 || skip "'dpkg --add-architecture arm64' failed"
    apt-get update -qq >/dev/null 2>&1 || skip "apt-get update (with arm64) failed"
  fi
  rm -rf target/arm64-debs && mkdir -p target/arm64-debs
  # `apt-get download` as root into a folder _apt cannot write: no sandbox user.
  (cd target/arm64-debs && apt-get download -q -o APT::Sandbox::User=root "${debs[@]/%/:arm64}" \
    >/dev/null 2>&1) \
    || { apt-get update -qq >/dev/null 2>&1 && (cd target/arm64-debs \
      && apt-get download -q -o APT::Sandbox::User=root "${debs[@]/%/:arm64}" >/dev/null 2>&1); } \
    || skip "apt-get download of the arm64 packages (${debs[*]}) failed"
  rm -rf "$root" && mkdir -p "$root"
  for d in target/arm64-debs/*.deb; do dpkg -x "$d" "$root"; done
  echo "arm64 CPython: $(cd target/arm64-debs && echo *.deb) unpacked in $root"
fi
sysroot_s=$((SECONDS - t))

# The reference: the same script with the host build.
t=$SECONDS
host_py=("${SIEVE_HOST_PYTHON:-}")
if [ -z "${SIEVE_HOST_PYTHON:-}" ]; then
  "$maturin" build --release -m ffi-c/python/Cargo.toml --out target/wheels-host 2>&1 | grep -v '^ *Compiling '
  rm -rf target/site-host && mkdir -p target/site-host
  unzip -q "$(ls -t target/wheels-host/sieve-*.whl | head -1)" -d target/site-host
  host_py=(env PYTHONPATH="$repo/target/site-host" python3)
fi
echo "--- host ($(uname -m)): tests/aarch64_smoke.py"
"${host_py[@]}" ffi-c/python/tests/aarch64_smoke.py "$shared/tokenizers/llama3.json" | tee target/aarch64-smoke-host.log
host_s=$((SECONDS - t))

t=$SECONDS
echo "--- qemu-aarch64: tests/aarch64_smoke.py with $(basename "$wheel")"
env -u PYTHONHOME -u VIRTUAL_ENV PYTHONPATH="$site" PYTHONNOUSERSITE=1 \
  qemu-aarch64 -L "$root" "$root/usr/bin/python$pyver" \
  ffi-c/python/tests/aarch64_smoke.py "$shared/tokenizers/llama3.json" | tee target/aarch64-smoke-qemu.log
qemu_s=$((SECONDS - t))

host_digest=$(grep '^digest ' target/aarch64-smoke-host.log)
arm_digest=$(grep '^digest ' target/aarch64-smoke-qemu.log)
if [ -z "$arm_digest" ] || [ "$host_digest" != "$arm_digest" ]; then
  echo "FAIL: the aarch64 masks differ from the host's (host: '$host_digest', aarch64: '$arm_digest')"
  exit 1
fi
echo "aarch64 masks equal the host's ($arm_digest)"
echo "aarch64 wheel: $((SECONDS - start)) s (cross build $build_s s, arm64 sysroot $sysroot_s s, host run $host_s s, qemu run $qemu_s s)"
