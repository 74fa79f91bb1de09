#!/usr/bin/env bash
# Runs the sieve-kernels tests (the NEON level included) under qemu user-mode emulation:
# - aarch64-unknown-linux-gnu under qemu-aarch64 (NEON chosen at compile time);
# - armv7-unknown-linux-gnueabihf with `-C target-feature=+neon` under qemu-arm (the 32-bit
#   NEON level, `src/arm/neon.rs`, selected by the `sieve_arm_neon` cfg that build.rs sets).
# Needs the rustup targets, cross linkers (gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf)
# and qemu-user; installs the Debian packages when apt-get can. For each target prints one
# "SKIP: <reason>" line and goes on when a piece is missing; exits non-zero only when a test
# fails.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  printf 'SKIP: NEON tests under qemu (%s): %s\n' "$1" "$2"
}

# have_target <rust target> <qemu binary> <linker> <debian linker package>: 0 when all there.
have_target() {
  local target=$1 qemu=$2 linker=$3 package=$4
  if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    if ! rustup target add "$target" >/dev/null 2>&1; then
      skip "$target" "rust target $target is not installed and 'rustup target add' failed"
      return 1
    fi
  fi
  if ! command -v "$qemu" >/dev/null || ! command -v "$linker" >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      echo "installing qemu-user and $package with apt-get"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user "$package"; } \
        >/dev/null 2>&1 || true
    fi
    if ! command -v "$qemu" >/dev/null; then
      skip "$target" "$qemu not found (Debian package qemu-user)"
      return 1
    fi
    if ! command -v "$linker" >/dev/null; then
      skip "$target" "$linker not found (Debian package $package)"
      return 1
    fi
  fi
}

# Release: the exhaustive differential tests are slow when unoptimized and emulated.
if have_target aarch64-unknown-linux-gnu qemu-aarch64 aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu; then
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
    cargo test -p sieve-kernels --release --target aarch64-unknown-linux-gnu
fi

# `+neon` draws rustc's "unstable feature specified for -Ctarget-feature" warning on stable
# (the feature works; only its name is not stabilized for 32-bit ARM).
if have_target armv7-unknown-linux-gnueabihf qemu-arm arm-linux-gnueabihf-gcc gcc-arm-linux-gnueabihf; then
  CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_LINKER=arm-linux-gnueabihf-gcc \
  CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_RUNNER="qemu-arm -L /usr/arm-linux-gnueabihf" \
  CARGO_TARGET_ARMV7_UNKNOWN_LINUX_GNUEABIHF_RUSTFLAGS="-C target-feature=+neon" \
    cargo test -p sieve-kernels --release --target armv7-unknown-linux-gnueabihf
fi
