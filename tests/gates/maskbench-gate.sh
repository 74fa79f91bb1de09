#!/usr/bin/env bash
# Proves the MaskBench gate can fail (issue 39): `.ci/maskbench-gate.py` on summaries made to
# differ from an expectation by one count either way, on an empty run, and on a run name with
# no expectation, must fail; the exact counts must pass. (Before, rates were rounded-down bars:
# 95% compiled, 99.5% valid, 99% invalid rejected, an empty denominator counted as 100%.)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
gate="$here/.ci/maskbench-gate.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/expected.json" <<'JSON'
{"run": {"not_compiled": 1, "valid_rejected": 0, "invalid_accepted": 3, "unexplained": 1}}
JSON
summary() { # schemas compiled valid_total valid_accepted invalid_total invalid_rejected unexplained
  cat >"$tmp/s.json" <<JSON
{"schemas": $1, "compiled": $2, "valid_total": $3, "valid_accepted": $4,
 "invalid_total": $5, "invalid_rejected": $6, "invalid_accepted_unexplained": $7,
 "invalid_accepted_explained": 0, "mask_us": {}, "ttfm_us": {}, "failures": []}
JSON
}
expect() { # pass|fail description
  local want=$1
  shift
  if python3 "$gate" "$tmp/s.json" --name "${NAME:-run}" --expected "$tmp/expected.json" >"$tmp/out" 2>&1; then
    got=pass
  else
    got=fail
  fi
  if [ "$got" != "$want" ]; then
    cat "$tmp/out"
    echo "maskbench gate self-test: $* should $want, did $got"
    exit 1
  fi
}
summary 10 9 5 5 20 17 1; expect pass "the expected counts"
summary 10 8 5 5 20 17 1; expect fail "one more schema not compiled"
summary 10 9 5 4 20 17 1; expect fail "one valid instance rejected"
summary 10 9 5 5 20 16 1; expect fail "one more invalid instance accepted"
summary 10 9 5 5 20 17 2; expect fail "one more unexplained acceptance"
summary 10 9 5 5 20 18 1; expect fail "one fewer invalid acceptance (a stale allowance)"
summary 10 9 5 5 20 17 0; expect fail "one fewer unexplained acceptance (a stale allowance)"
summary 10 9 0 0 20 17 1; expect fail "no valid instance measured"
summary 10 9 5 5 20 17 1; NAME=other expect fail "a run with no expectation"
echo "maskbench gate self-test: every changed count, an empty run and an unknown run fail the gate"
