#!/usr/bin/env bash
# Builds the firmware example (release) for thumbv7em-none-eabihf and aarch64-unknown-none and
# runs each under qemu: Cortex-M4F on `-M mps2-an386` (qemu-system-arm), Cortex-A53 on
# `-M virt` (qemu-system-aarch64); both from the Debian package qemu-system-arm, installed
# with apt-get when missing and possible. The firmware checks its own masks and heap peaks
# and exits non-zero on a mismatch; this script also requires its "RESULT: PASS" line and the
# mask lines. A missing piece (rustup target, qemu) prints "SKIP: <reason>" for that target.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="$PWD/target"
export CARGO_TERM_COLOR=never

skip() { printf 'SKIP: firmware example: %s\n' "$*"; }

if ! command -v qemu-system-arm >/dev/null || ! command -v qemu-system-aarch64 >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "installing qemu-system-arm with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-arm; } \
      >/dev/null 2>&1 || true
  fi
fi

installed=$(rustup target list --installed 2>/dev/null || true)
status=0
ran=0
for target in thumbv7em-none-eabihf aarch64-unknown-none; do
  case $target in
    thumbv7em-*)
      qemu=(qemu-system-arm -M mps2-an386)
      ;;
    aarch64-*)
      qemu=(qemu-system-aarch64 -M virt -cpu cortex-a53)
      ;;
  esac
  if ! grep -qx "$target" <<<"$installed"; then
    rustup target add "$target" >/dev/null 2>&1 || true
    installed=$(rustup target list --installed 2>/dev/null || true)
  fi
  if ! grep -qx "$target" <<<"$installed"; then
    skip "$target: the rust target is not installed and 'rustup target add' failed"
    continue
  fi
  if ! command -v "${qemu[0]}" >/dev/null; then
    skip "$target: ${qemu[0]} not found and not installable (Debian package qemu-system-arm)"
    continue
  fi
  printf '\n-- %s under %s\n' "$target" "${qemu[*]}"
  t0=$SECONDS
  cargo build --release --locked --target "$target"
  echo "build: $((SECONDS - t0)) s"
  elf="target/$target/release/sieve-embedded"
  echo "size: $(stat -c %s "$elf") bytes ELF; $(size -A "$elf" 2>/dev/null | awk '$1==".text"{print ".text " $2 " bytes"}')"
  log="target/$target.log"
  t0=$SECONDS
  rc=0
  timeout 120 "${qemu[@]}" -nographic -semihosting-config enable=on,target=native \
    -kernel "$elf" >"$log" 2>&1 || rc=$?
  cat "$log"
  echo "run: $((SECONDS - t0)) s, exit status $rc"
  ran=$((ran + 1))
  if [ "$rc" != 0 ] || ! grep -qx 'RESULT: PASS' "$log" \
    || [ "$(grep -c '^masks .*: ok' "$log")" != 2 ] || grep -q '^FAIL' "$log"; then
    echo "firmware example failed on $target"
    status=1
  fi
done
[ "$status" = 0 ] && [ "$ran" -gt 0 ] && echo "firmware example: $ran target(s) passed"
exit "$status"
