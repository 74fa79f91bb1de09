#!/usr/bin/env python3
"""Gate on a `sieve maskbench --json` summary: the acceptance bars of the JSON Schema issue.

Usage: maskbench-gate.py SUMMARY.json [--compiled PCT] [--valid PCT] [--invalid PCT]

- compiled: schemas compiled / schema files (default 95);
- valid: valid instances accepted / valid instances of compiled schemas (default 99.5);
- invalid: invalid instances rejected / invalid instances of compiled schemas, not counting
  those accepted under a superset approximation the coverage report names (default 99.5).
Prints the numbers, exits 1 when a bar is missed.
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("summary")
    ap.add_argument("--compiled", type=float, default=95.0)
    ap.add_argument("--valid", type=float, default=99.5)
    ap.add_argument("--invalid", type=float, default=99.5)
    a = ap.parse_args()
    s = json.load(open(a.summary))
    approx = s.get("invalid_accepted_approx", 0)
    rows = [
        ("compiled", s["compiled"], s["schemas"], a.compiled),
        ("valid accepted", s["valid_accepted"], s["valid_total"], a.valid),
        (
            "invalid rejected (excl. reported approximations)",
            s["invalid_rejected"],
            s["invalid_total"] - approx,
            a.invalid,
        ),
    ]
    ok = True
    for name, num, den, bar in rows:
        pct = 100.0 * num / den if den else 100.0
        good = pct >= bar
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} {name}: {num} / {den} = {pct:.2f}% (bar {bar}%)")
    print(f"     invalid accepted under a reported superset: {approx}")
    print(f"     mask us: {s['mask_us']}  ttfm us: {s['ttfm_us']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
