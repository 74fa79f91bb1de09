#!/usr/bin/env python3
"""Gate on a `sieve maskbench --json` summary: exact counts, not rounded-down rates.

Usage: maskbench-gate.py SUMMARY.json --name NAME [--expected .ci/maskbench-expected.json]

The expected file maps a run name to today's measured counts:
- not_compiled: schema files that did not compile;
- valid_rejected: valid instances (of compiled schemas) the grammar rejects;
- invalid_accepted: invalid instances (of compiled schemas) the grammar accepts, explained or
  not (nothing is dropped from the denominator);
- unexplained: of those, the ones no superset entry of the coverage report explains
  (`invalid_accepted_unexplained`: the independent validator fails them at a schema location
  no Superset/Unsupported entry covers; see bench/src/trace.rs). These are bugs.

Each count must equal its expectation: more is a regression; fewer fails too, until the
expectation is lowered to the new count (so an allowance never drifts above the truth). A run
that measured nothing (no schema, no valid or no invalid instance) fails. A name without an
expectation fails, printing the entry to add. Rates are printed for information.
"""
import argparse
import json
import os
import sys

KEYS = ("not_compiled", "valid_rejected", "invalid_accepted", "unexplained")


def counts(s):
    return {
        "not_compiled": s["schemas"] - s["compiled"],
        "valid_rejected": s["valid_total"] - s["valid_accepted"],
        "invalid_accepted": s["invalid_total"] - s["invalid_rejected"],
        "unexplained": s["invalid_accepted_unexplained"],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("summary")
    ap.add_argument("--name", required=True)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--expected", default=os.path.join(here, "maskbench-expected.json"))
    a = ap.parse_args()
    s = json.load(open(a.summary))
    got = counts(s)
    ok = True
    for what, den in (("schemas", s["schemas"]), ("valid instances", s["valid_total"]),
                      ("invalid instances", s["invalid_total"])):
        if not den:
            print(f"FAIL {a.name}: no {what} measured")
            ok = False
    expected = json.load(open(a.expected)).get(a.name)
    if expected is None:
        print(f"FAIL {a.name}: no expectation in {a.expected}; today's counts: "
              f'"{a.name}": {json.dumps(got)}')
        return 1
    for key in KEYS:
        want = expected[key]
        if got[key] > want:
            verdict = "FAIL (more than expected: a regression)"
            ok = False
        elif got[key] < want:
            verdict = f"FAIL (fewer than expected: lower {a.name}.{key} to {got[key]} in {a.expected})"
            ok = False
        else:
            verdict = "ok"
        print(f"{verdict:<4} {a.name}: {key} {got[key]} (expected {want})")
    rate = lambda num, den: f"{100.0 * num / den:.2f}%" if den else "n/a"
    print(f"     compiled {s['compiled']} / {s['schemas']} = {rate(s['compiled'], s['schemas'])}; "
          f"valid accepted {s['valid_accepted']} / {s['valid_total']} = "
          f"{rate(s['valid_accepted'], s['valid_total'])}; invalid rejected "
          f"{s['invalid_rejected']} / {s['invalid_total']} = "
          f"{rate(s['invalid_rejected'], s['invalid_total'])}; explained acceptances "
          f"{s['invalid_accepted_explained']}")
    print(f"     mask us: {s['mask_us']}  ttfm us: {s['ttfm_us']}")
    mb = s.get("matcher_bytes", {})
    print(f"     matcher bytes p50 {mb.get('p50')} max {mb.get('max')}; "
          f"peak RSS {s.get('peak_rss_kb')} KiB; wall {s.get('wall_s')} s")
    if got["unexplained"] != expected["unexplained"]:
        for f in s.get("failures", []):
            if f["kind"] == "invalid_accepted":
                print(f"     unexplained: {f['file']}: {f['detail']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
