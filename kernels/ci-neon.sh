#!/usr/bin/env bash
# Builds sieve-kernels for aarch64-unknown-linux-gnu and runs its tests (the NEON level
# included) under qemu-aarch64. Needs the rustup target, a cross linker
# (gcc-aarch64-linux-gnu) and qemu-user; installs the two Debian packages when apt-get can.
# Prints one "SKIP: <reason>" line and exits 0 when a piece is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
skip() {
  printf 'SKIP: NEON tests under qemu: %s\n' "$*"
  exit 0
}

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  rustup target add "$target" >/dev/null 2>&1 || skip "rust target $target is not installed and 'rustup target add' failed"
fi

if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-gcc >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing qemu-user and gcc-aarch64-linux-gnu with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user gcc-aarch64-linux-gnu; } \
      >/dev/null 2>&1 || true
  fi
  command -v qemu-aarch64 >/dev/null || skip "qemu-aarch64 not found (Debian package qemu-user)"
  command -v aarch64-linux-gnu-gcc >/dev/null || skip "aarch64-linux-gnu-gcc not found (Debian package gcc-aarch64-linux-gnu)"
fi

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
# Release: the exhaustive differential tests are slow when unoptimized and emulated.
cargo test -p sieve-kernels --release --target "$target"
