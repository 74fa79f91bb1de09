#!/usr/bin/env python3
"""The side-by-side table of `side-by-side.sh`: sieve vs LLGuidance (llgbench).

Statistics are recomputed from the per-token mask times (`--raw-masks` files of both tools)
and the per-schema TTFM records, over the schemas both engines compiled, with the same
nearest-rank percentiles as both tools. Each engine's own summary over everything it
compiled is shown as well. Python 3 standard library only.

With several runs of each engine (`--llg-raw` and `--sieve-raw` repeated, runs alternated by
the caller), each mask counts at its minimum over its engine's runs, which removes most of
the run-to-run variation (LLGuidance's mean varied 47-65 µs between runs on one machine),
and each pair of runs' own ratios are listed too.
"""

import argparse
import json
import math

LLG_ENGINE = "llguidance-rust"


def pct(sorted_vals, p):
    """Nearest rank, as llgbench/peerbench and sieve compute it."""
    if not sorted_vals:
        return None
    n = len(sorted_vals)
    k = min(max(math.ceil(p / 100.0 * n) - 1, 0), n - 1)
    return sorted_vals[k]


def stats(vals, ps):
    v = sorted(vals)
    out = {"mean": (sum(v) / len(v)) if v else None}
    for name, p in ps:
        out[name] = pct(v, p)
    out["max"] = v[-1] if v else None
    return out


def read_runs(paths):
    """Per id, each mask's minimum over the runs (the first run's list where they differ)."""
    runs = [read_raw(p) for p in paths]
    out = {}
    for i, first in runs[0].items():
        lists = [r.get(i) for r in runs]
        if all(x is not None and len(x) == len(first) for x in lists):
            out[i] = [min(v) for v in zip(*lists)]
        else:
            out[i] = first
    return out


def read_raw(path):
    masks = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                masks[rec["id"]] = rec["mask_us"]
    return masks


def fmt(x):
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


MASK_PS = [("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)]
TTFM_PS = [("p50", 50), ("p90", 90), ("p99", 99)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--llg", required=True, help="llgbench --out JSON")
    ap.add_argument("--llg-raw", required=True, action="append",
                    help="llgbench --raw-masks JSONL (repeat for several runs)")
    ap.add_argument("--sieve", required=True, help="sieve maskbench --json JSON")
    ap.add_argument("--sieve-raw", required=True, action="append",
                    help="sieve maskbench --raw-masks JSONL (repeat for several runs)")
    ap.add_argument("--llg-rss-kb", type=int, help="llgbench's peak RSS in KiB")
    args = ap.parse_args()

    llg = json.load(open(args.llg))
    sv = json.load(open(args.sieve))
    llg_sum = llg["engines"][LLG_ENGINE]
    llg_recs = {r["id"]: r for r in llg.get("per_schema", {}).get(LLG_ENGINE, [])}
    sv_recs = {r["id"]: r for r in sv.get("per_schema", [])}
    llg_masks = read_runs(args.llg_raw)
    sv_masks = read_runs(args.sieve_raw)

    both = sorted(set(llg_masks) & set(sv_masks))
    only_llg = sorted(set(llg_masks) - set(sv_masks))
    only_sv = sorted(set(sv_masks) - set(llg_masks))

    def engine_stats(masks, recs):
        m = [x for i in both for x in masks[i]]
        t = [recs[i]["ttfm_us"] for i in both if recs.get(i, {}).get("ttfm_us") is not None]
        return stats(m, MASK_PS), stats(t, TTFM_PS), len(m)

    l_mask, l_ttfm, l_n = engine_stats(llg_masks, llg_recs)
    s_mask, s_ttfm, s_n = engine_stats(sv_masks, sv_recs)

    attempted = llg_sum.get("schemas_attempted")
    print(f"# sieve vs LLGuidance {llg_sum.get('version', '?')} (llgbench), "
          f"{attempted} files, tokenizer {llg['meta'].get('tokenizer')}")
    print()
    print(f"Schemas compiled: LLGuidance {llg_sum['compiled']}, sieve {sv['compiled']}; "
          f"both {len(both)} (only LLGuidance {len(only_llg)}, only sieve {len(only_sv)}).")
    print(f"Masks over the schemas both compile: LLGuidance {l_n}, sieve {s_n}.")
    runs = min(len(args.llg_raw), len(args.sieve_raw))
    if runs > 1:
        print(f"Runs: {len(args.llg_raw)} of LLGuidance, {len(args.sieve_raw)} of sieve, "
              "alternated; each mask at its minimum over its engine's runs.")
    print()
    print("| statistic (schemas both compile) | LLGuidance | sieve | sieve / LLG |")
    print("|:--|--:|--:|--:|")
    for key in ["mean", "p50", "p90", "p99", "p999", "max"]:
        print(f"| mask µs {key} | {fmt(l_mask[key])} | {fmt(s_mask[key])} | "
              f"{ratio(s_mask[key], l_mask[key])} |")
    for key in ["mean", "p50", "p90", "p99", "max"]:
        print(f"| TTFM µs {key} | {fmt(l_ttfm[key])} | {fmt(s_ttfm[key])} | "
              f"{ratio(s_ttfm[key], l_ttfm[key])} |")
    if runs > 1:
        print()
        print("Each pair of runs alone (mask µs over the schemas both compile):")
        print()
        print("| run | LLG mean | sieve mean | ratio | LLG p50 | sieve p50 | ratio "
              "| LLG p99 | sieve p99 | ratio |")
        print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for k in range(runs):
            lm = read_raw(args.llg_raw[k])
            sm = read_raw(args.sieve_raw[k])
            ls = stats([x for i in both for x in lm.get(i, [])], MASK_PS)
            ss = stats([x for i in both for x in sm.get(i, [])], MASK_PS)
            cells = []
            for key in ["mean", "p50", "p99"]:
                cells += [fmt(ls[key]), fmt(ss[key]), ratio(ss[key], ls[key])]
            print(f"| {k + 1} | " + " | ".join(cells) + " |")
    print()
    print("Each engine over everything it compiled (its own summary):")
    print()
    print("| | LLGuidance | sieve |")
    print("|:--|--:|--:|")
    rows = [
        ("compiled", llg_sum["compiled"], sv["compiled"]),
        ("valid accepted", f"{llg_sum['valid_accepted']} / {llg_sum['valid_total']}",
         f"{sv['valid_accepted']} / {sv['valid_total']}"),
        ("invalid rejected", f"{llg_sum['invalid_rejected']} / {llg_sum['invalid_total']}",
         f"{sv['invalid_rejected']} / {sv['invalid_total']}"),
        ("masks", llg_sum["tokens_checked"], sv["masks"]),
        ("mask µs mean / p50 / p99",
         " / ".join(fmt(llg_sum["mask_us"].get(k)) for k in ["mean", "p50", "p99"]),
         " / ".join(fmt(sv["mask_us"].get(k)) for k in ["mean", "p50", "p99"])),
        ("TTFM µs mean / p50 / p99",
         " / ".join(fmt(llg_sum["ttfm_us"].get(k)) for k in ["mean", "p50", "p99"]),
         " / ".join(fmt(sv["ttfm_us"].get(k)) for k in ["mean", "p50", "p99"])),
        ("wall s", llg_sum.get("wall_s"), sv.get("wall_s")),
        ("peak RSS KiB", fmt(args.llg_rss_kb) if args.llg_rss_kb else "?",
         fmt(sv.get("peak_rss_kb")) if sv.get("peak_rss_kb") is not None else "?"),
        ("matcher bytes p50 / max", "",
         f"{fmt(sv['matcher_bytes'].get('p50'))} / {fmt(sv['matcher_bytes'].get('max'))}"),
    ]
    for name, a, b in rows:
        print(f"| {name} | {a} | {b} |")
    print()
    print("Peak RSS: each process's high-water mark (getrusage), tokenizer loading included. "
          f"sieve grammar bytes mean {fmt(sv['grammar_bytes']['mean'])}, matcher bytes mean "
          f"{fmt(sv['matcher_bytes']['mean'])}.")


if __name__ == "__main__":
    main()
