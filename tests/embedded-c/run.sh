#!/usr/bin/env bash
# Builds sieve's C library without std for thumbv7em-none-eabihf (libsieve.a, features
# panic-handler and c-alloc, profile firmware), links the C firmware of this folder against it
# with arm-none-eabi-gcc (newlib with semihosting: librdimon), and runs it on QEMU's
# mps2-an386 (Cortex-M4F). Passes when the firmware prints "embedded-c: PASS" and exits 0.
# Installs the Debian packages it needs when apt-get can; otherwise prints one
# "SKIP: <reason>" line and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=thumbv7em-none-eabihf
skip() {
  printf 'SKIP: C firmware under qemu: %s\n' "$*"
  exit 0
}

if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  rustup target add "$target" >/dev/null 2>&1 || skip "rust target $target is not installed and 'rustup target add' failed"
fi

cpu_flags=(-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16)
have_newlib() {
  # librdimon.a of the hard-float Cortex-M4 multilib (Debian package libnewlib-arm-none-eabi).
  local lib
  lib=$(arm-none-eabi-gcc "${cpu_flags[@]}" -print-file-name=librdimon.a 2>/dev/null) || return 1
  [ -f "$lib" ]
}
if ! command -v arm-none-eabi-gcc >/dev/null || ! have_newlib || ! command -v qemu-system-arm >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing gcc-arm-none-eabi, libnewlib-arm-none-eabi and qemu-system-arm with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm; } >/dev/null 2>&1 || true
  fi
  command -v arm-none-eabi-gcc >/dev/null || skip "arm-none-eabi-gcc not found (Debian package gcc-arm-none-eabi)"
  have_newlib || skip "newlib for arm-none-eabi not found (Debian package libnewlib-arm-none-eabi)"
  command -v qemu-system-arm >/dev/null || skip "qemu-system-arm not found (Debian package qemu-system-arm)"
fi

t0=$SECONDS
# `cargo rustc --crate-type staticlib`: the target has no dynamic linking, so only the
# staticlib of the package's crate types is built.
cargo rustc -p sieve-ffi-c --crate-type staticlib --profile firmware --target "$target" \
  --no-default-features --features panic-handler,c-alloc
target_dir=${CARGO_TARGET_DIR:-target}
lib=$target_dir/$target/firmware/libsieve.a
echo "libsieve.a ($target, no_std): $(du -k "$lib" | cut -f1) KiB, built in $((SECONDS - t0)) s"

out=$target_dir/embedded-c
mkdir -p "$out"
src=tests/embedded-c
arm-none-eabi-gcc "${cpu_flags[@]}" -std=c11 -Os -g -Wall -Wextra -Werror \
  -ffunction-sections -fdata-sections -I ffi-c/include \
  "$src/main.c" "$src/startup.c" "$lib" \
  -nostartfiles --specs=rdimon.specs -T "$src/mps2-an386.ld" \
  -Wl,--gc-sections -Wl,-z,noexecstack -Wl,-Map="$out/firmware.map" -lm -o "$out/firmware.elf"
arm-none-eabi-size "$out/firmware.elf"

t1=$SECONDS
status=0
timeout 120 qemu-system-arm -M mps2-an386 -nographic -monitor none -serial none \
  -semihosting-config enable=on,target=native -kernel "$out/firmware.elf" \
  >"$out/output.txt" 2>&1 || status=$?
cat "$out/output.txt"
echo "qemu: exit status $status after $((SECONDS - t1)) s"
if [ "$status" != 0 ] || ! grep -qx 'embedded-c: PASS' "$out/output.txt"; then
  echo "the C firmware failed under qemu (exit status $status; 124 is the timeout)"
  exit 1
fi
