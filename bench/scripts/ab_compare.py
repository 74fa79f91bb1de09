#!/usr/bin/env python3
"""Compare the runs bench/scripts/ab.sh wrote: per run and at each mask's minimum over the
runs, the mask mean, p50 and p99 of builds a and b over the masks of the files both ran
alike, then b's time by position in a file (the first mask, masks 1-9, 10-99, 100 on)."""
import json
import sys


def load(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        out[r["id"]] = r["mask_us"]
    return out


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    out, reps = sys.argv[1], int(sys.argv[2])
    runs = {s: [load(f"{out}/{s}-{i}.raw.jsonl") for i in range(1, reps + 1)] for s in "ab"}
    first = runs["a"][0]
    ids = [k for k in first
           if all(k in r and len(r[k]) == len(first[k]) for s in "ab" for r in runs[s])]
    mins = {}
    for s in "ab":
        for i, r in enumerate(runs[s], 1):
            v = [x for k in ids for x in r[k]]
            print(f"{s} run {i}: {len(v)} masks, mean {sum(v) / len(v):.2f} "
                  f"p50 {pct(v, .5):.2f} p99 {pct(v, .99):.1f} µs")
        mins[s] = {k: [min(x) for x in zip(*[r[k] for r in runs[s]])] for k in ids}
    stats = {}
    for s in "ab":
        v = [x for k in ids for x in mins[s][k]]
        stats[s] = (sum(v) / len(v), pct(v, .5), pct(v, .99))
        print(f"{s} min of {reps}: mean {stats[s][0]:.2f} p50 {stats[s][1]:.2f} "
              f"p99 {stats[s][2]:.1f} µs")
    ratio = [b / a for a, b in zip(stats["a"], stats["b"])]
    print("b / a: mean {:.3f} p50 {:.3f} p99 {:.3f}".format(*ratio))
    buckets = [(0, 1), (1, 10), (10, 100), (100, 1 << 30)]
    for s in "ab":
        t = [sum(sum(mins[s][k][lo:hi]) for k in ids) / 1e3 for lo, hi in buckets]
        print(f"{s} ms by position (0, 1-9, 10-99, 100+): " + ", ".join(f"{x:.0f}" for x in t))


if __name__ == "__main__":
    main()
