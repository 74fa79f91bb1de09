#!/usr/bin/env python3
"""Scaling with threads: sieve's and LLGuidance's Python batch APIs side by side (issue 36).

From a fresh clone (repository root; building the wheel takes a minute or two):

    python3 -m venv target/scaling-venv
    target/scaling-venv/bin/pip install ./ffi-c/python numpy tokenizers llguidance==1.9.1
    target/scaling-venv/bin/python bench/scripts/scaling.py --json target/scaling.json

It needs $SIEVE_SHARED (default: ../shared next to the repository) with
tokenizers/llama3.json and data/maskbench. Install the package from the same checkout: the
commit printed is that of the checkout, not read from the installed package.

What it runs, with the Llama 3 tokenizer, at each thread count (default 1,2,4,8 and
os.cpu_count()): sieve's `fill_next_token_bitmask_batch` after `sieve.set_num_threads(n)`,
and LLGuidance's `fill_next_token_bitmask_par` on an `LLExecutor(num_threads=n)`.

Workloads:
  (a) one schema x 64 requests (--schema; default the held-out `Github_medium---o6256.json`
      when the MaskBench directory has it, else the first schema in sample order that both
      engines compile);
  (b) 64 requests over 64 different schemas (the first 64 that both engines compile);
  (c) one batch step of 16 requests, 15 ordinary ones (requests of (a) halfway through their
      walks) and, last in the batch, one whose mask is a full walk of the Llama 3 trie.

The full-walk mask of (c): a fresh regex grammar `[^~]*` (any text without a tilde), compiled
anew every round, at its first mask. Why this one:
  - Both engines skip most of the trie inside a JSON string with precomputed vocabulary
    "slices" (JSON string text, `~` included). A state in which every string of a slice is
    allowed takes the slice's mask and walks only the rest of the trie (about 0.1 ms, not 2).
    Excluding a character that the slices contain means no slice applies, while nearly every
    token stays allowed, so every node of the trie is visited.
  - Once computed, a state's mask is remembered by the grammar, and the next mask in that
    state is a copy. A fresh grammar every round makes each timed mask a real walk.
  - `{"type": "string"}` just after the opening quote is *not* a full walk for either
    engine, for the first reason.
The script checks that the mask allows over 90% of the vocabulary, `~` excluded.

Method (each engine, thread count and round):
  - The walks are recorded once, untimed, by python-batch.py's `walk`: for each request, a
    token allowed by both engines is drawn (seeded) and consumed in both; a request ends at
    EOS, on an empty intersection, or after --steps masks.
  - A replay compiles fresh grammars (one per schema, shared by its requests; LLGuidance:
    one LLMatcher per schema, deep-copied per request), then one batch call per step over
    the live requests. Only the batch calls are timed (time.perf_counter_ns). After each
    call, every walked token must be allowed in its request's row, else the script stops.
    Tokens are consumed between calls, untimed.
  - Rounds are outermost (every thread count and engine once a round), so that other load
    falls on all alike; each figure is the best (least) wall time over the rounds.
  - Speed-up: the 1-thread wall time over the n-thread one, per engine. Ratio: sieve's wall
    time over LLGuidance's at the same thread count (below 1: sieve is faster).
  - (c): the step's wall time at n threads, and the full-walk mask alone (a batch of that one
    request, 1 thread); step / walk below 1 means the step ended before one thread could
    have done the walk alone.

Scaling numbers are recorded (stdout, --json), never asserted.

Usage: scaling.py [--threads 1,2,4,8] [--rounds 3] [--step-rounds 10] [--requests 64]
                  [--schemas 64] [--schema NAME] [--steps 512] [--seed 0] [--json FILE]
                  [--shared DIR] [--tokenizer FILE] [--maskbench DIR]
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HELD_OUT_DEFAULT = "Github_medium---o6256.json"
FREE_TEXT = "[^~]*"
STEP_REQUESTS = 16


def load_python_batch():
    """python-batch.py as a module: its schema picking, tokenizer setup and walk."""
    spec = importlib.util.spec_from_file_location("python_batch", HERE / "python-batch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pb = load_python_batch()
sieve, llguidance, llg_np = pb.sieve, pb.llguidance, pb.llg_np


# ------------------------------------------------------------------------------------------
# The two engines, behind the same four calls


class SieveSide:
    name = "sieve"

    def __init__(self, setup):
        self.setup = setup

    def use_threads(self, n):
        sieve.set_num_threads(n)
        self.warm()

    def warm(self):
        """One small batch, so that the pool's threads exist before anything is timed."""
        ms = self.matchers_of([self.setup.sieve_grammar('{"type": "integer"}')], 2)
        self.fill(ms, self.bitmask(2), [0, 1])

    def grammars(self, schemas):
        return [self.setup.sieve_grammar(text) for _, text, _ in schemas]

    def matchers_of(self, grammars, n_req):
        return [sieve.Matcher(grammars[r % len(grammars)]) for r in range(n_req)]

    def matchers(self, schemas, n_req):
        return self.matchers_of(self.grammars(schemas), n_req)

    def free_text_matcher(self):
        return sieve.Matcher(sieve.Grammar.regex(self.setup.tok, FREE_TEXT))

    def bitmask(self, n):
        return sieve.allocate_token_bitmask(n, self.setup.vocab, backend="numpy")

    def fill(self, ms, bm, rows):
        """One batch call; its wall time in ns."""
        t0 = time.perf_counter_ns()
        sieve.fill_next_token_bitmask_batch(ms, bm, rows)
        return time.perf_counter_ns() - t0


class LlgSide:
    name = "LLGuidance"

    def __init__(self, setup):
        self.setup = setup
        self.executors = {}
        self.executor = None

    def use_threads(self, n):
        if n not in self.executors:
            self.executors[n] = llguidance.LLExecutor(num_threads=n)
        self.executor = self.executors[n]
        self.warm()

    def warm(self):
        g = llguidance.LLMatcher.grammar_from_json_schema('{"type": "integer"}')
        ms = self.matchers([("warm", None, g)], 2)
        self.fill(ms, self.bitmask(2), [0, 1])

    def matchers(self, schemas, n_req):
        base = [self.setup.llg_matcher(g) for _, _, g in schemas]
        return [base[r % len(base)].deep_copy() for r in range(n_req)]

    def free_text_matcher(self):
        return self.setup.llg_matcher(llguidance.LLMatcher.grammar_from_regex(FREE_TEXT))

    def bitmask(self, n):
        return llg_np.allocate_token_bitmask(n, self.setup.vocab)

    def fill(self, ms, bm, rows):
        pairs = list(zip(ms, rows))
        t0 = time.perf_counter_ns()
        llg_np.fill_next_token_bitmask_par(self.executor, pairs, bm)
        return time.perf_counter_ns() - t0


# ------------------------------------------------------------------------------------------
# Workloads and checks


@dataclass
class Workload:
    key: str
    title: str
    schemas: list  # (file name, schema text, LLGuidance grammar)
    tokens: list  # per request, the walked tokens
    n_masks: list  # per request, the masks its walk took

    @property
    def masks(self):
        return sum(self.n_masks)


def allowed(bm, rows, toks):
    """Whether token toks[i] is allowed in row rows[i] of the int32 bitmask, per i."""
    rows, toks = np.asarray(rows), np.asarray(toks)
    words = bm[rows, toks >> 5].view(np.uint32)
    return (words >> (toks & 31).astype(np.uint32)) & 1 == 1


def check_walked(side, bm, wl, live, step):
    """Every live request's walked token at `step` must be allowed in its row."""
    rows = [r for r in live if step < len(wl.tokens[r])]
    if not rows:
        return
    toks = [wl.tokens[r][step] for r in rows]
    ok = allowed(bm, rows, toks)
    if not ok.all():
        r = rows[int(np.flatnonzero(~ok)[0])]
        raise RuntimeError(f"{side.name}, {wl.key}: request {r}'s walked token "
                           f"{wl.tokens[r][step]} is not allowed at step {step}")


def record_walk(setup, key, title, schemas, n_req, args):
    t0 = time.perf_counter()
    tokens, n_masks, diff = pb.walk(setup, schemas, n_req, args.steps, args.seed)
    wl = Workload(key, title, schemas, tokens, n_masks)
    print(f"walk ({key}): {wl.masks} masks, {len(schemas)} schema(s), ended: "
          f"{diff['ended_eos']} at EOS, {diff['ended_empty']} on an empty intersection, "
          f"{diff['ended_steps']} after --steps ({time.perf_counter() - t0:.1f} s)",
          file=sys.stderr)
    return wl


def pick_one_schema(setup, files, name):
    """--schema NAME, else the held-out default if present, else the first both compile."""
    wanted = name or HELD_OUT_DEFAULT
    named = [f for f in files if f.name == wanted]
    if name and not named:
        sys.exit(f"scaling.py: no MaskBench file named {name}")
    chosen, _ = pb.pick_schemas(setup, named or files, 1)
    if not chosen:
        sys.exit(f"scaling.py: {wanted if named else 'no schema'} compiles in both engines")
    return chosen


# ------------------------------------------------------------------------------------------
# Timing


def replay(side, wl):
    """Replays `wl` on fresh grammars at the current thread count; batch calls' ns."""
    n_req = len(wl.tokens)
    ms = side.matchers(wl.schemas, n_req)
    bm = side.bitmask(n_req)
    total, step = 0, 0
    while True:
        live = [r for r in range(n_req) if step < wl.n_masks[r]]
        if not live:
            return total
        total += side.fill([ms[r] for r in live], bm, live)
        check_walked(side, bm, wl, live, step)
        for r in live:
            if step < len(wl.tokens[r]):
                ms[r].consume_token(wl.tokens[r][step])
        step += 1


def step_requests(side, wl):
    """(c)'s batch: 15 requests of `wl` halfway through their walks (fresh grammar), then
    one fresh free-text matcher. Returns (matchers, the walked token of each of the 15)."""
    ms = side.matchers(wl.schemas, STEP_REQUESTS - 1)
    nexts = []
    for r, m in enumerate(ms):
        toks = wl.tokens[r % len(wl.tokens)]
        half = len(toks) // 2
        for t in toks[:half]:
            m.consume_token(t)
        nexts.append(toks[half] if half < len(toks) else None)
    return ms + [side.free_text_matcher()], nexts


def check_step(side, setup, bm, nexts):
    rows = [r for r, t in enumerate(nexts) if t is not None]
    ok = allowed(bm, rows, [nexts[r] for r in rows])
    if not ok.all():
        raise RuntimeError(f"{side.name}, step: a walked token is not allowed")
    check_full_walk(side, setup, bm, len(nexts))


def check_full_walk(side, setup, bm, row):
    """The free-text row allows over 90% of the vocabulary and no token with a tilde."""
    bits = np.unpackbits(bm[row].view(np.uint8), bitorder="little")[: setup.vocab]
    tilde = setup.tok.greedy_tokenize(b"~")[0]
    if bits.sum() < 0.9 * setup.vocab or bits[tilde]:
        raise RuntimeError(f"{side.name}: the free-text mask is not what (c) needs "
                           f"({int(bits.sum())} of {setup.vocab} tokens, `~` {bits[tilde]})")


def time_step(side, setup, wl):
    """(c) once at the current thread count: the step's wall ns."""
    ms, nexts = step_requests(side, wl)
    bm = side.bitmask(len(ms))
    ns = side.fill(ms, bm, list(range(len(ms))))
    check_step(side, setup, bm, nexts)
    return ns


def time_walk_alone(side, setup):
    """The full-walk mask alone, a batch of one (call at 1 thread): its wall ns."""
    bm = side.bitmask(1)
    ns = side.fill([side.free_text_matcher()], bm, [0])
    check_full_walk(side, setup, bm, 0)
    return ns


def best(values):
    return min(values) / 1e6


def measure(sides, workloads, setup, counts, args):
    """Best wall ms per (workload key, engine, threads), and (c)'s walk-alone ms."""
    runs = {}
    for rnd in range(max(args.rounds, args.step_rounds)):
        for n in counts:
            for side in sides:
                side.use_threads(n)
                if rnd < args.rounds:
                    for wl in workloads:
                        runs.setdefault((wl.key, side.name, n), []).append(replay(side, wl))
                if rnd < args.step_rounds:
                    runs.setdefault(("c", side.name, n), []).append(
                        time_step(side, setup, workloads[0]))
                    if n == 1:
                        runs.setdefault(("walk", side.name, 1), []).append(
                            time_walk_alone(side, setup))
        print(f"round {rnd + 1} done", file=sys.stderr)
    return {k: best(v) for k, v in runs.items()}


# ------------------------------------------------------------------------------------------
# Reporting


def rows_of(key, ms, counts, sides):
    """Per thread count: wall ms, speed-up over 1 thread per engine, sieve / LLGuidance."""
    s, l = (side.name for side in sides)
    rows = []
    for n in counts:
        a, b = ms[(key, s, n)], ms[(key, l, n)]
        rows.append({"threads": n, "sieve_ms": a, "llguidance_ms": b,
                     "sieve_speedup": ms[(key, s, 1)] / a,
                     "llguidance_speedup": ms[(key, l, 1)] / b,
                     "sieve_over_llguidance": a / b})
    return rows


def step_rows(ms, counts, sides):
    rows = rows_of("c", ms, counts, sides)
    s, l = (side.name for side in sides)
    for r in rows:
        r["sieve_step_over_walk"] = r["sieve_ms"] / ms[("walk", s, 1)]
        r["llguidance_step_over_walk"] = r["llguidance_ms"] / ms[("walk", l, 1)]
    return rows


def print_table(title, rows, step=False):
    print(f"\n{title}\n")
    if step:
        print("| threads | sieve step ms | sieve step / walk | LLGuidance step ms "
              "| LLGuidance step / walk | sieve / LLGuidance |")
    else:
        print("| threads | sieve ms | sieve speed-up | LLGuidance ms | LLGuidance speed-up "
              "| sieve / LLGuidance |")
    print("|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        a, b = (("sieve_step_over_walk", "llguidance_step_over_walk") if step
                else ("sieve_speedup", "llguidance_speedup"))
        print(f"| {r['threads']} | {r['sieve_ms']:.2f} | {r[a]:.2f}x | "
              f"{r['llguidance_ms']:.2f} | {r[b]:.2f}x | {r['sieve_over_llguidance']:.3f} |")


def commit():
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (with uncommitted changes)" if dirty else "")


def machine():
    return {"cpus": os.cpu_count(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version()}


# ------------------------------------------------------------------------------------------
# Main


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2,4,8",
                    help="thread counts; 1 and os.cpu_count() are always added")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of (a) and (b); best kept")
    ap.add_argument("--step-rounds", type=int, default=10,
                    help="rounds of (c) (one ~2 ms step, so more are cheap); best kept")
    ap.add_argument("--requests", type=int, default=64, help="requests of (a) and (b)")
    ap.add_argument("--schemas", type=int, default=64, help="distinct schemas of (b)")
    ap.add_argument("--schema", default=None,
                    help=f"MaskBench file name of (a) (default {HELD_OUT_DEFAULT} if present, "
                         f"else the first schema both engines compile)")
    ap.add_argument("--steps", type=int, default=512, help="at most this many masks a request")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--shared", type=Path, default=None,
                    help="shared data directory (default $SIEVE_SHARED or ../shared)")
    ap.add_argument("--tokenizer", type=Path, default=None,
                    help="tokenizer.json (default SHARED/tokenizers/llama3.json)")
    ap.add_argument("--maskbench", type=Path, default=None,
                    help="MaskBench directory (default SHARED/data/maskbench)")
    return ap.parse_args()


def thread_counts(text):
    counts = {int(t) for t in text.split(",") if t.strip()} | {1, os.cpu_count() or 1}
    return sorted(n for n in counts if n > 0)


def main():
    args = parse_args()
    shared = args.shared or pb.default_shared()
    tok_path = args.tokenizer or shared / "tokenizers" / "llama3.json"
    mb_dir = args.maskbench or shared / "data" / "maskbench"
    for p in (tok_path, mb_dir):
        if not p.exists():
            sys.exit(f"scaling.py: {p} does not exist (set --shared or $SIEVE_SHARED)")
    counts = thread_counts(args.threads)
    setup = pb.Setup(tok_path, 1)
    files = pb.sample_order(mb_dir)
    one = pick_one_schema(setup, files, args.schema)
    many, skipped = pb.pick_schemas(setup, files, args.schemas)
    workloads = [
        record_walk(setup, "a", f"(a) one schema × {args.requests} requests: `{one[0][0]}`",
                    one, args.requests, args),
        record_walk(setup, "b", f"(b) {args.requests} requests over {len(many)} schemas",
                    many, args.requests, args),
    ]
    sides = [SieveSide(setup), LlgSide(setup)]
    ms = measure(sides, workloads, setup, counts, args)
    report(args, setup, tok_path, counts, workloads, skipped, sides, ms)


def report(args, setup, tok_path, counts, workloads, skipped, sides, ms):
    s, l = (side.name for side in sides)
    head = (f"sieve {sieve.__version__} at commit {commit()}, "
            f"llguidance {llguidance.get_version()}; {tok_path.name} ({setup.vocab} tokens); "
            f"{os.cpu_count()} CPUs; best of {args.rounds} rounds ((c): "
            f"{args.step_rounds}); wall ms of the batch calls only")
    print(head)
    out = {"commit": commit(), "machine": machine(), "sieve_version": sieve.__version__,
           "llguidance_version": llguidance.get_version(), "tokenizer": str(tok_path),
           "vocab_size": setup.vocab, "threads": counts, "rounds": args.rounds,
           "step_rounds": args.step_rounds, "seed": args.seed, "steps": args.steps,
           "skipped_schemas": skipped, "workloads": {}}
    for wl in workloads:
        rows = rows_of(wl.key, ms, counts, sides)
        print_table(f"{wl.title}, {wl.masks} masks", rows)
        out["workloads"][wl.key] = {"title": wl.title, "masks": wl.masks,
                                    "requests": len(wl.tokens),
                                    "schemas": [name for name, _, _ in wl.schemas],
                                    "rows": rows}
    walk_s, walk_l = ms[("walk", s, 1)], ms[("walk", l, 1)]
    title = (f"(c) one step of {STEP_REQUESTS} requests, one a full trie walk (`{FREE_TEXT}`, "
             f"fresh grammar); that mask alone on 1 thread: sieve {walk_s:.2f} ms, "
             f"LLGuidance {walk_l:.2f} ms")
    rows = step_rows(ms, counts, sides)
    print_table(title, rows, step=True)
    out["workloads"]["c"] = {"title": title, "requests": STEP_REQUESTS,
                             "full_walk_grammar": FREE_TEXT, "sieve_walk_alone_ms": walk_s,
                             "llguidance_walk_alone_ms": walk_l, "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
