#!/usr/bin/env bash
# Two sieve builds on the same MaskBench sample, alternated and pinned to one CPU, compared
# mask by mask (each mask at its minimum over the runs): sieve against sieve, without
# LLGuidance's run-to-run variation (bench/perf.md, "Budget bookkeeping off the mask path").
#
# usage: bench/scripts/ab.sh BIN_A BIN_B [REPS] [N] [TOKENIZER_JSON]
#   BIN_A, BIN_B    two `sieve` binaries (copy each build's target/release/sieve aside)
#   REPS            runs of each (default 4; even, for the ABBA order below)
#   N               first N files of ../shared/data/maskbench by sha256(file name) (1000)
#   TOKENIZER_JSON  default ../shared/tokenizers/llama3.json
# env: SHARED (default ../shared next to the repository), OUT (default /tmp/sieve-ab),
#      CPU (default: the last allowed CPU).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
shared=${SHARED:-$(cd "$repo/../shared" && pwd)}
a=$1
b=$2
reps=${3:-4}
n=${4:-1000}
tok=${5:-$shared/tokenizers/llama3.json}
out=${OUT:-/tmp/sieve-ab}
cpu=${CPU:-$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')}
mkdir -p "$out"
# ABBA order (odd runs a then b, even runs b then a): whichever binary runs second in a
# pair measured a few percent faster on this machine, so a fixed order biases the ratio.
for i in $(seq "$reps"); do
    order="a b"
    [ $((i % 2)) -eq 0 ] && order="b a"
    for side in $order; do
        bin=$a
        [ "$side" = b ] && bin=$b
        echo "== run $i of $side ($bin), cpu $cpu" >&2
        taskset -c "$cpu" "$bin" maskbench --tokenizer "$tok" --limit "$n" \
            --raw-masks "$out/$side-$i.raw.jsonl" "$shared/data/maskbench" >"$out/$side-$i.txt"
    done
done
python3 "$here/ab_compare.py" "$out" "$reps"
