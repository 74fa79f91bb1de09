#!/usr/bin/env bash
# Flash used by sieve-core per feature configuration: builds src/main.rs (compile a Lark grammar
# and a regex over a tiny vocabulary, compute masks) for thumbv7em-none-eabihf with opt-level
# "s", fat LTO, panic=abort, codegen-units=1, and prints .text, .rodata, .data and their sum.
# The last row is the minimal configuration at opt-level "z" (what a size-bound firmware uses).
# `--check`: build only that row and fail if its flash exceeds 250 KB (250,000 bytes): the CI gate.
# Prints a SKIP line and exits 0 when the target or a size tool is missing.
set -euo pipefail
cd "$(dirname "$0")"
target=thumbv7em-none-eabihf
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/../../target}/embedded-size"
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  echo "SKIP: size table: target $target is not installed"
  exit 0
fi
size_tool=$(command -v arm-none-eabi-size || command -v llvm-size || true)
if [ -z "$size_tool" ]; then
  echo "SKIP: size table: neither arm-none-eabi-size nor llvm-size is installed"
  exit 0
fi
# name|features; the first is the minimal configuration (regex + Lark + GBNF).
configs=(
  "minimal (regex + Lark)|"
  "minimal + unicode|unicode"
  "+ json-schema|json-schema"
  "+ json-schema + unicode|json-schema,unicode"
  "default (all front ends + unicode)|json-schema,structural,llguidance,unicode"
  "minimal (regex + Lark), opt-level z|"
)
limit=250000
if [ "${1:-}" = "--check" ]; then
  configs=("${configs[-1]}")
fi
printf '%-38s %9s %9s %7s %9s\n' configuration .text .rodata .data flash
for c in "${configs[@]}"; do
  name=${c%%|*}
  features=${c#*|}
  opt=s
  case "$name" in *"opt-level z"*) opt=z ;; esac
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$opt cargo build -q --release --target "$target" --features "$features" >/dev/null
  bin="$CARGO_TARGET_DIR/$target/release/sieve-embedded-size"
  # The size tool's own output first (a failing tool stops the script under `set -e`; read
  # from a process substitution, its failure was lost and the sizes read as 0 bytes).
  sections=$("$size_tool" -A "$bin")
  read -r text rodata data < <(printf '%s\n' "$sections" | awk '
    $1==".text"{t=$2} $1==".rodata"{r=$2} $1==".data"{d=$2} END{print t+0, r+0, d+0}')
  if [ "$text" -eq 0 ]; then
    echo "size table: $size_tool -A $bin gave no .text section:"
    printf '%s\n' "$sections"
    exit 1
  fi
  flash=$((text + rodata + data))
  printf '%-38s %9d %9d %7d %9d\n' "$name" "$text" "$rodata" "$data" "$flash"
done
if [ "${1:-}" = "--check" ] && [ "$flash" -gt "$limit" ]; then
  echo "minimal configuration: $flash bytes of flash, over the $limit-byte budget"
  exit 1
fi
