#!/usr/bin/env bash
# Tool lists (issue 37): MaskBench object schemas as the parameters of 1..500 tools, in Qwen 3's
# tool-call format (an XGrammar structural tag), on the Llama 3 and Qwen 3 tokenizers. Prints
# one table per tokenizer (cold compile, compile + first mask, the same list again through the
# compile cache, one tool changed; medians, one thread) and writes target/tool-lists-*.json.
#
#   bench/scripts/tool-lists.sh [SIZES] [REPS]     # defaults: 1,10,50,100,200,500 and 5
#
# XGrammar is not run here: `../shared/tools/peerbench.py` shows how to drive it, and round 2
# measured 7.8-11.6 s for 1-10 tools with internal errors from 20 tools on.
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=${1:-1,10,50,100,200,500}
reps=${2:-5}
shared=${SIEVE_SHARED:-../shared}
cargo build -q --release -p sieve-bench --bin sieve
mkdir -p target
for tok in llama3 qwen3; do
  path="$shared/tokenizers/$tok.json"
  if [ ! -f "$path" ]; then
    echo "SKIP: tool lists on $tok: $path is missing"
    continue
  fi
  ./target/release/sieve toolbench --tokenizer "$path" --sizes "$sizes" --reps "$reps" \
    --format qwen3 --json "target/tool-lists-$tok.json" "$shared/data/maskbench"
  echo
done
