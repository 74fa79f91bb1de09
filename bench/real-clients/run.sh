#!/usr/bin/env bash
# llama.cpp's common/llguidance.cpp, compiled unchanged, linked once to LLGuidance 1.9.1 and
# once to libsieve.a, run by the same host (llama_cpp_host.cc: a small vocabulary and
# llama.cpp's sampling loop over pseudo-random logits, with clones); the two transcripts
# (allowed-token count and pick at every step) must be identical.
#
# usage: bench/real-clients/run.sh LLAMA_CPP_LLGUIDANCE_CPP
#   the path of llama.cpp's common/llguidance.cpp (not in this repository: it is
#   llama.cpp's code). LLGuidance 1.9.1 comes from crates.io (bench/real-clients/llgc).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=${1:?usage: run.sh path/to/llama.cpp/common/llguidance.cpp}
out=${OUT:-/tmp/sieve-real-clients}
mkdir -p "$out"
CARGO_TARGET_DIR=$out/llgc-target cargo build --release --quiet --manifest-path "$here/llgc/Cargo.toml"
llg_inc=$(dirname "$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*llguidance-1.9.1/llguidance.h' | head -1)")
(cd "$repo" && cargo build --release --quiet -p sieve-ffi-c)
cp "$src" "$out/llguidance.cpp"
cxx="g++ -std=c++17 -O1 -g -I$here/stub"
$cxx -I"$llg_inc" -c "$out/llguidance.cpp" -o "$out/real.o" 2>/dev/null
$cxx -I"$repo/ffi-c/include" -c "$out/llguidance.cpp" -o "$out/sieve.o"
$cxx -c "$here/llama_cpp_host.cc" -o "$out/host.o"
$cxx "$out/host.o" "$out/real.o" "$out/llgc-target/release/libllgc.a" -lpthread -ldl -lm -o "$out/with_llguidance"
$cxx "$out/host.o" "$out/sieve.o" "$repo/target/release/libsieve.a" -lpthread -ldl -lm -o "$out/with_sieve"
"$out/with_llguidance" > "$out/llguidance.txt" 2>/dev/null
"$out/with_sieve" > "$out/sieve.txt" 2>/dev/null
if diff -u "$out/llguidance.txt" "$out/sieve.txt" > "$out/diff.txt"; then
    echo "llama.cpp sampler: identical transcripts ($(grep -c step "$out/sieve.txt") steps)"
else
    echo "llama.cpp sampler: transcripts differ (see $out/diff.txt)"; head -20 "$out/diff.txt"; exit 1
fi
