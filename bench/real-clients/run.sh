#!/usr/bin/env bash
# llama.cpp's common/llguidance.cpp, compiled unchanged, linked once to LLGuidance 1.9.1 and
# once to libsieve.a, run by the same host (llama_cpp_host.cc: a small vocabulary and
# llama.cpp's sampling loop over pseudo-random logits, with clones); the two transcripts
# (allowed-token count and pick at every step) must be identical.
#
# usage: bench/real-clients/run.sh LLAMA_CPP_LLGUIDANCE_CPP [TOKENIZER_JSON [ORT_CPP]]
#   the path of llama.cpp's common/llguidance.cpp (not in this repository: it is
#   llama.cpp's code). LLGuidance 1.9.1 comes from crates.io (bench/real-clients/llgc).
#   TOKENIZER_JSON (default ../shared/tokenizers/llama3.json): a second run over that
#   vocabulary (dump_vocab.py), besides the host's small one.
#   ORT_CPP: onnxruntime-genai's src/constrained_logits_processor.cpp (commit 05f5749's
#   layout), compared the same way.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
src=${1:?usage: run.sh path/to/llama.cpp/common/llguidance.cpp [tokenizer.json]}
tokjson=${2:-$repo/../shared/tokenizers/llama3.json}
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
compare() { # label, then env for both runs
    local label=$1; shift
    env "$@" "$out/with_llguidance" > "$out/llguidance.$label.txt" 2>/dev/null
    env "$@" "$out/with_sieve" > "$out/sieve.$label.txt" 2>/dev/null
    if diff -u "$out/llguidance.$label.txt" "$out/sieve.$label.txt" > "$out/diff.$label.txt"; then
        echo "llama.cpp sampler, $label: identical transcripts ($(grep -ac step "$out/sieve.$label.txt") steps)"
    else
        echo "llama.cpp sampler, $label: transcripts differ (see $out/diff.$label.txt)"
        head -20 "$out/diff.$label.txt"
        return 1
    fi
}
compare small-vocabulary TOKEN_TABLE=
python3 "$here/dump_vocab.py" "$tokjson" "$out/vocab.tbl"
compare "$(basename "$tokjson")" TOKEN_TABLE="$out/vocab.tbl"

# onnxruntime-genai's src/constrained_logits_processor.cpp (optional third argument), with
# stand-in headers (ort-stub/) and the generator's loop (ort_host.cc), over the same vocabulary.
ort_src=${3:-}
if [ -n "$ort_src" ]; then
    cxx20="g++ -std=c++20 -O1 -I$here/ort-stub"
    cp "$ort_src" "$out/constrained_logits_processor.cpp"
    mkdir -p "$out/model" && ln -sf "$tokjson" "$out/model/tokenizer.json"
    $cxx20 -I"$llg_inc" -c "$out/constrained_logits_processor.cpp" -o "$out/ort_real.o" 2>/dev/null
    $cxx20 -I"$repo/ffi-c/include" -c "$out/constrained_logits_processor.cpp" -o "$out/ort_sieve.o"
    $cxx20 -I"$repo/ffi-c/include" -c "$here/ort_host.cc" -o "$out/ort_host.o"
    $cxx20 "$out/ort_host.o" "$out/ort_real.o" "$out/llgc-target/release/libllgc.a" -lpthread -ldl -lm -o "$out/ort_with_llguidance"
    $cxx20 "$out/ort_host.o" "$out/ort_sieve.o" "$repo/target/release/libsieve.a" -lpthread -ldl -lm -o "$out/ort_with_sieve"
    "$out/ort_with_llguidance" "$out/model" "$out/vocab.tbl" > "$out/ort.llguidance.txt" 2>/dev/null
    "$out/ort_with_sieve" "$out/model" "$out/vocab.tbl" > "$out/ort.sieve.txt" 2>/dev/null
    if diff -u "$out/ort.llguidance.txt" "$out/ort.sieve.txt" > "$out/ort.diff.txt"; then
        echo "onnxruntime-genai processor: identical transcripts ($(grep -c step "$out/ort.sieve.txt") lines)"
    else
        echo "onnxruntime-genai processor: transcripts differ (see $out/ort.diff.txt)"
        head -20 "$out/ort.diff.txt"
        exit 1
    fi
fi
