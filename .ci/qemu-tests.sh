#!/usr/bin/env bash
# Runs the Rust tests of sieve-core and sieve-kernels, and a subset of sieve-tests' integration
# tests, for aarch64-unknown-linux-gnu under qemu-aarch64 and for armv7-unknown-linux-gnueabihf
# (32-bit) under qemu-arm (issue 20 item 6). Needs the rustup targets, the cross linkers
# (Debian gcc-aarch64-linux-gnu, gcc-arm-linux-gnueabihf) and qemu-user; installs the Debian
# packages when apt-get can. A missing piece prints "SKIP: <reason>" for that target.
#
# Release builds: the oracles are slow unoptimized and emulated. Doctests are not run (cargo
# does not run doctests for a cross target on stable).
set -euo pipefail
cd "$(dirname "$0")/.."

# sieve-tests' integration tests that run here: those that need neither a native toolchain
# (C, C++, CMake, valgrind) nor a real tokenizer, and take at most about 80 s emulated.
tests=(
  oracle lark_cyk_oracle emptiness_oracle matcher_ops memory_budget no_alloc errors lark_cases
  fuzz_regressions budget
)
# Left out, with the reason (printed as SKIP lines). Times: under qemu on the 2-core development
# machine shared with other builds, 2026-11-26 (this script's own tests: 83 s for aarch64, 67 s
# for armv7, once built).
left_out=(
  "c_api, cxx_and_cmake: build and run C/C++/CMake programs with host tools"
  "adversarial_lark, adversarial_json: slow emulated (60k chained rules compile in 2.6 s, prometheus.json in 2.0 s); their bounds are fuel counts since 2026-11-28, the same on every machine, so only time keeps them out"
  "gbnf_oracle (121-143 s), adversarial_matcher (106 s): too slow emulated (fixed proptest case counts); core's own tests cover their front ends"
  "maskbench_ratchet, maskbench_pretty, json_maskbench_bytes, schema_suite_ratchet, json_exact, special_tokens, grammar_info, gbnf_lark_diff, llguidance_requests, lark_json, structural_conformance: real tokenizers or the large shared suites, slow emulated"
)

skip() { printf 'SKIP: tests under qemu-user: %s\n' "$*"; }

# sieve-tests' cross build (its dependencies: tokenizers, sieve-bench, ...) takes 5-12 minutes
# per target on the 2-core machine, too long for every CI run: it runs with
# SIEVE_QEMU_TESTS=full (the run of 2026-11-26: every listed test passed on both targets).
full=0
[ "${SIEVE_QEMU_TESTS:-}" = full ] && full=1

for entry in "aarch64-unknown-linux-gnu:aarch64-linux-gnu:qemu-aarch64:gcc-aarch64-linux-gnu" \
  "armv7-unknown-linux-gnueabihf:arm-linux-gnueabihf:qemu-arm:gcc-arm-linux-gnueabihf"; do
  IFS=: read -r target triple qemu gccpkg <<<"$entry"
  printf '\n-- %s under %s\n' "$target" "$qemu"
  if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    rustup target add "$target" >/dev/null 2>&1 || true
  fi
  if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    skip "$target: the rust target is not installed and 'rustup target add' failed"
    continue
  fi
  if ! command -v "$qemu" >/dev/null || ! command -v "$triple-gcc" >/dev/null; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      echo "installing qemu-user and $gccpkg with apt-get"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user "$gccpkg"; } \
        >/dev/null 2>&1 || true
    fi
  fi
  if ! command -v "$qemu" >/dev/null; then
    skip "$target: $qemu not found (Debian package qemu-user)"
    continue
  fi
  if ! command -v "$triple-gcc" >/dev/null; then
    skip "$target: $triple-gcc not found (Debian package $gccpkg)"
    continue
  fi
  env_target=$(tr 'a-z-' 'A-Z_' <<<"$target")
  export "CARGO_TARGET_${env_target}_LINKER=$triple-gcc"
  export "CARGO_TARGET_${env_target}_RUNNER=$qemu -L /usr/$triple"
  t0=$SECONDS
  cargo test --release --target "$target" -p sieve-core -p sieve-kernels --no-run 2>&1 | sed '/^ *Executable/d'
  if [ "$full" = 1 ]; then
    cargo test --release --target "$target" -p sieve-tests "${tests[@]/#/--test=}" --no-run 2>&1 \
      | sed '/^ *Executable/d'
  fi
  echo "$target: build $((SECONDS - t0)) s"
  t0=$SECONDS
  cargo test --release --target "$target" -p sieve-core -p sieve-kernels
  if [ "$full" = 1 ]; then
    cargo test --release --target "$target" -p sieve-tests "${tests[@]/#/--test=}"
  else
    skip "$target: sieve-tests' integration tests (${tests[*]}) run only with SIEVE_QEMU_TESTS=full (a 5-12 min cross build)"
  fi
  echo "$target: tests $((SECONDS - t0)) s"
done
for reason in "${left_out[@]}"; do
  skip "sieve-tests left out: $reason"
done
