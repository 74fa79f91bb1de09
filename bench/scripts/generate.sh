#!/usr/bin/env bash
# The README's first command: a real model (SmolLM2-135M-Instruct, fetched with pip on first
# use) writes JSON under sieve's masks, and the summary says what the constraint cost.
#
#   bench/scripts/generate.sh                      # the example schema below
#   bench/scripts/generate.sh --schema FILE [...]  # any `sieve generate` arguments
#
# `sieve generate` runs the model on llama.cpp, whose build needs cmake, a C++ compiler and
# libclang (bindgen). A fresh machine may lack them: this installs them with apt-get when
# missing (as root, or through sudo), saying so. If that is impossible it says why and runs
# `sieve demo` (a random sampler under the same masks, no model) instead.
set -euo pipefail
cd "$(dirname "$0")/../.."

have_libclang() {
  # libclang itself (libclang-dev, libclang1-N); not libclang-cpp, which a fresh image has.
  [ -n "${LIBCLANG_PATH:-}" ] && return 0
  local p
  for p in '/usr/lib/llvm-*/lib/libclang.so*' '/usr/lib/llvm-*/lib/libclang-[0-9]*.so*' \
    '/usr/lib/*-linux-gnu/libclang.so*' '/usr/lib/*-linux-gnu/libclang-[0-9]*.so*'; do
    compgen -G "$p" >/dev/null && return 0
  done
  return 1
}

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v c++ >/dev/null || need+=(g++)
have_libclang || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "sieve generate builds llama.cpp, which needs: ${need[*]}; installing with apt-get" >&2
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  if ! { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${need[@]}"; } >&2; then
    echo "could not install ${need[*]}: running the random-sampler demo instead" >&2
    exec cargo run --release -p sieve-bench --bin sieve -- demo
  fi
fi

if [ $# -eq 0 ]; then
  set -- --schema bench/grammars/person.schema.json \
    --prompt "Describe a fictional person as JSON: name, age, email and a few hobbies."
fi
exec cargo run --release -p sieve-bench --features generate --bin sieve -- generate "$@"
