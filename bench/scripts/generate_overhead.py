#!/usr/bin/env python3
"""What the constraint costs a real model: constrained vs unconstrained tokens/s.

Runs `sieve generate` (which decodes the same prompts for the same token counts once under
sieve's masks and once without) RUNS times per setting and prints the medians. Settings:
batch 1 (greedy) and batch 4 (temperature 0.8, seeds 0..3), each with budget mode on (the
default with --max-tokens) and off.

Usage: generate_overhead.py SIEVE_BIN [--runs 5] [--threads 1] [--max-tokens 128]
"""

import argparse
import re
import statistics
import subprocess
import sys

SCHEMA = "bench/grammars/person.schema.json"
PROMPT = "Describe a fictional person as JSON: name, age, email and a few hobbies."


def one(sieve, batch, budget, threads, max_tokens):
    cmd = [sieve, "generate", "--schema", SCHEMA, "--prompt", PROMPT, "--batch", str(batch),
           "--max-tokens", str(max_tokens), "--threads", str(threads)]
    if batch > 1:
        cmd += ["--temperature", "0.8", "--seed", "0"]
    if not budget:
        cmd.append("--no-budget")
    p = subprocess.run(cmd, capture_output=True, text=True)
    out = p.stdout + p.stderr
    con = re.search(r"^constrained:\s+([\d.]+) tok/s", out, re.M)
    unc = re.search(r"^unconstrained:\s+([\d.]+) tok/s", out, re.M)
    exp = re.search(r"^exposed mask time.*?mean ([\d.]+) µs", out, re.M)
    mask = re.search(r"^mask: mean (\d+) µs, p99 (\d+) µs", out, re.M)
    tokens = re.search(r"^tokens: (\d+)", out, re.M)
    if not (con and unc):
        sys.exit(f"could not read tok/s from:\n{out}")
    return (float(con[1]), float(unc[1]), float(exp[1]) if exp else float("nan"),
            int(mask[1]) if mask else 0, int(mask[2]) if mask else 0,
            int(tokens[1]) if tokens else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sieve")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    print(f"llama.cpp threads {args.threads}; {args.runs} runs per row; medians")
    print("| batch | budget mode | tokens | constrained tok/s | unconstrained tok/s | ratio "
          "| mask mean / p99 µs | exposed µs/step |")
    print("|--:|:--|--:|--:|--:|--:|--:|--:|")
    for batch in (1, 4):
        for budget in (False, True):
            runs = [one(args.sieve, batch, budget, args.threads, args.max_tokens)
                    for _ in range(args.runs)]
            med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
            ratio = statistics.median(r[0] / r[1] for r in runs)
            print(f"| {batch} | {'on' if budget else 'off'} | {med(5):.0f} | {med(0):.1f} "
                  f"| {med(1):.1f} | {ratio:.3f} | {med(3):.0f} / {med(4):.0f} "
                  f"| {med(2):.1f} |", flush=True)


if __name__ == "__main__":
    main()
