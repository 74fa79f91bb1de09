#!/usr/bin/env bash
# sieve vs LLGuidance (llgbench, the llguidance crate called from Rust) on the same
# deterministic MaskBench sample, tokenizer and CPU, one engine after the other.
#
# usage: bench/scripts/side-by-side.sh [N] [TOKENIZER_JSON]
#   N               first N files of ../shared/data/maskbench by sha256(file name)
#                   (default 1000; 0 = all)
#   TOKENIZER_JSON  default ../shared/tokenizers/llama3.json
# env: SHARED (default ../shared next to the repository), OUT (default
#      /tmp/sieve-side-by-side), CPU (default: the last allowed CPU), SIEVE_ARGS (extra
#      arguments to `sieve maskbench`, e.g. --strict), REPS (default 1: runs of each engine,
#      alternated; with more, each mask counts at its minimum over its engine's runs).
#
# Prints both engines' statistics over the schemas both compile, and the ratios
# sieve / LLGuidance (bench/scripts/side_by_side.py).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
shared=${SHARED:-$(cd "$repo/../shared" && pwd)}
n=${1:-1000}
tok=${2:-$shared/tokenizers/llama3.json}
out=${OUT:-/tmp/sieve-side-by-side}
cpu=${CPU:-$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')}
data=$shared/data/maskbench
mkdir -p "$out"

echo "== building llgbench and sieve (release)" >&2
CARGO_TARGET_DIR=/tmp/llgbench-target cargo build --release --quiet \
    --manifest-path "$shared/tools/llgbench/Cargo.toml"
sieve_target=${CARGO_TARGET_DIR:-$repo/target}
(cd "$repo" && CARGO_TARGET_DIR=$sieve_target cargo build --release --quiet -p sieve-bench --bin sieve)

# One thread each, pinned to the same CPU (llgbench pins itself with --cpu).
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false

reps=${REPS:-1}
llg_raws=() sieve_raws=()
for ((r = 1; r <= reps; r++)); do
    sfx=$([ "$reps" -gt 1 ] && echo ".$r" || true)
    echo "== llgbench: $n files, cpu $cpu (run $r of $reps)" >&2
    # llgbench does not report its peak RSS: the wrapper writes the child's high-water mark
    # (KiB).
    python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)' "$out/llg.rss_kb" \
        /tmp/llgbench-target/release/llgbench --tokenizer "$tok" --limit "$n" --cpu "$cpu" \
        --out "$out/llg.json" --raw-masks "$out/llg.raw$sfx.jsonl" "$data" >"$out/llg.txt"
    cat "$out/llg.txt" >&2
    llg_raws+=(--llg-raw "$out/llg.raw$sfx.jsonl")

    echo "== sieve maskbench: $n files, cpu $cpu (run $r of $reps)" >&2
    # shellcheck disable=SC2086
    taskset -c "$cpu" "$sieve_target/release/sieve" maskbench --tokenizer "$tok" --limit "$n" \
        --json "$out/sieve.json" --raw-masks "$out/sieve.raw$sfx.jsonl" ${SIEVE_ARGS:-} "$data" \
        >"$out/sieve.txt"
    cat "$out/sieve.txt" >&2
    sieve_raws+=(--sieve-raw "$out/sieve.raw$sfx.jsonl")
done

python3 "$here/side_by_side.py" --llg "$out/llg.json" "${llg_raws[@]}" \
    --sieve "$out/sieve.json" "${sieve_raws[@]}" \
    --llg-rss-kb "$(cat "$out/llg.rss_kb")" | tee "$out/table.md"
echo "(outputs in $out)" >&2
