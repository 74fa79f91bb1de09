#!/usr/bin/env bash
# Guest instruction counts per kernel call under qemu-user (bench/perf.md, "Kernels in the
# engine"): builds the counting plugin bench/scripts/qemu_insn.c and runs
# kernels/examples/levels.rs once per (kernel, level), 8 calls each, minus a run with no
# kernel.
#
# usage: bench/scripts/qemu-count.sh QEMU SYSROOT LEVELS_BINARY LEVEL...
#   e.g. bench/scripts/qemu-count.sh qemu-aarch64 /usr/aarch64-linux-gnu \
#          target/aarch64-unknown-linux-gnu/release/examples/levels neon scalar
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
q=$1
root=$2
bin=$3
shift 3
plugin=${TMPDIR:-/tmp}/sieve-qemu-insn.so
cc -shared -fPIC -O2 -o "$plugin" "$here/qemu_insn.c"
count() {
    "$q" -L "$root" -plugin "$plugin" -d plugin "$bin" 1 "$1" "$2" 2>&1 >/dev/null | sed -n 's/insns: //p'
}
base=$(count none scalar)
printf '%-34s' kernel
for l in "$@"; do printf '%14s' "$l"; done
echo
for k in or_into and_into popcount single_set_bit "apply_mask_f32 (random)" \
    "apply_mask_f32 (mostly" apply_mask_bf16 batch sparse; do
    printf '%-34s' "$k"
    for l in "$@"; do
        n=$(count "$k" "$l")
        printf '%14d' $(((n - base) / 8))
    done
    echo
done
