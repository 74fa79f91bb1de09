#!/usr/bin/env bash
# The Python package's CI (run by .ci/run): a fresh virtual environment, the README's one
# install command (`pip install ./ffi-c/python`), pytest, the batch benchmark against
# LLGuidance, the serving engines' tests, and the aarch64 wheel under qemu (aarch64.sh). A
# missing piece prints a SKIP line (and the tests that need it print theirs).
#
#   ffi-c/python/ci.sh            # from anywhere; the venv is target/pyvenv
#   SIEVE_PY_E2E=0 ffi-c/python/ci.sh   # without torch/transformers (no end-to-end test)
#   SIEVE_PY_ENGINES=0 ffi-c/python/ci.sh   # without vLLM and SGLang (tests/test_engines.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
venv=${SIEVE_PY_VENV:-$repo/target/pyvenv}
export SIEVE_SHARED=${SIEVE_SHARED:-$repo/../shared}
start=$SECONDS

if ! python3 -m venv --clear "$venv" >/dev/null 2>&1; then
  echo "SKIP: python: 'python3 -m venv' failed (install python3-venv); the Python package is untested"
  exit 0
fi
# shellcheck disable=SC1091
. "$venv/bin/activate"
pip install -q --upgrade pip >/dev/null 2>&1 || true

echo "--- pip install ./ffi-c/python"
pip install -q ./ffi-c/python
echo "installed in $((SECONDS - start)) s"

pip install -q pytest numpy tokenizers
# The vocabularies of tests/test_tokenizers.py: SentencePiece and tekken files (packaged in
# mistral_common), and the `regex` package's partial matching as the brute-force oracle.
pip install -q sentencepiece protobuf mistral_common regex gguf \
  || echo "SKIP: python: pip install sentencepiece mistral_common regex gguf failed; tests/test_tokenizers.py skips"
# The end to end test needs torch + transformers (+ gguf, accelerate to load the GGUF);
# torch's Linux wheels bring CUDA libraries (about 4 GB), so they can be left out.
if [ "${SIEVE_PY_E2E:-1}" = 1 ]; then
  t=$SECONDS
  if pip install -q torch transformers gguf accelerate >/dev/null 2>&1; then
    echo "torch, transformers: $((SECONDS - t)) s"
  else
    echo "SKIP: python: pip install torch transformers gguf accelerate failed; the torch and end-to-end tests skip"
  fi
else
  echo "SKIP: python: SIEVE_PY_E2E=0, torch and transformers not installed; the torch and end-to-end tests skip"
fi

echo "--- pytest"
mkdir -p target
# The engine tests run last, in their own step (below), once vLLM and SGLang are installed.
engines_later=()
[ "${SIEVE_PY_ENGINES:-1}" = 1 ] && engines_later=(--ignore=ffi-c/python/tests/test_engines.py)
python -m pytest -q -rs "${engines_later[@]}" ffi-c/python/tests 2>&1 | tee target/pytest.log
# pytest captures the tests' stderr; its -rs summary names each skip and why.
sed -n 's/^SKIPPED \[[0-9]*\] /SKIP: python test /p' target/pytest.log

# Recorded, not gated: timing ratios on a shared 2-core CI machine are noise-prone (the bar:
# speed is measured in benchmarks and recorded numbers, never in timed tests).
echo "--- batch benchmark against LLGuidance (bench/scripts/python-batch.py; numbers in target/python-batch.json)"
if pip install -q llguidance==1.9.1 >/dev/null 2>&1; then
  python bench/scripts/python-batch.py --json-out target/python-batch.json
else
  echo "SKIP: python: pip install llguidance==1.9.1 failed; the batch benchmark did not run"
fi
# The serving engines, last: vLLM brings its own pins of torch and transformers, which
# replace the ones above in this venv (the tests above have run). SGLang's wheel is
# installed without its dependencies: they include CUDA-only packages (flash-attn,
# sgl-kernel's CUDA builds) that a CPU machine does not need to import its grammar code;
# the two it does need and vLLM does not bring are added.
if [ "${SIEVE_PY_ENGINES:-1}" = 1 ]; then
  echo "--- serving engines: vLLM and SGLang from PyPI (CPU), tests/test_engines.py"
  t=$SECONDS
  if pip install -q vllm==0.33.0 >/dev/null 2>&1 \
      && pip install -q --no-deps sglang==0.5.23 >/dev/null 2>&1 \
      && pip install -q ipython gguf >/dev/null 2>&1; then
    echo "vllm, sglang: $((SECONDS - t)) s"
  else
    echo "SKIP: python: pip install vllm==0.33.0 / sglang==0.5.23 failed; the engine tests skip"
  fi
  python -m pytest -q -rs -p no:warnings ffi-c/python/tests/test_engines.py 2>&1 \
    | grep -v '^W[0-9]' | tee target/pytest-engines.log
  sed -n 's/^SKIPPED \[[0-9]*\] /SKIP: python test /p' target/pytest-engines.log
else
  echo "SKIP: python: SIEVE_PY_ENGINES=0, vLLM and SGLang not installed; tests/test_engines.py skips"
fi
# The aarch64 wheel: cross-compiled, its smoke test run under qemu-aarch64 and compared with
# this venv's x86-64 build (about 2-3 minutes from a cold target/aarch64-unknown-linux-gnu).
SIEVE_HOST_PYTHON="$venv/bin/python" bash ffi-c/python/aarch64.sh
echo "python: $((SECONDS - start)) s"
