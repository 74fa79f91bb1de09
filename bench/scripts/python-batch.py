#!/usr/bin/env python3
"""Batch masks from Python: sieve's batch call vs its own Rust time vs LLGuidance (issue 21).

Acceptance (issue 21): a batch fill of 64 requests over MaskBench schemas costs, per request,
at most 1.2x the Rust matcher's own mask time, and is at least 1.5x faster than calling
LLGuidance's LLMatcher per request from Python, on the same data, in one run.

Method:
- Schemas: the MaskBench files of $SHARED/data/maskbench in the order `sieve maskbench` samples
  them (sha256 of the file name), the first K that compile in BOTH sieve
  (`Grammar.json_schema(..., options=JsonOptions.llguidance())`) and LLGuidance
  (`LLMatcher.grammar_from_json_schema`, matcher not in error). Requests cycle over them.
- Walk (untimed): for each live request, both masks; a token allowed by both is drawn
  (seeded; half the time among those that close a string, value or member, or EOS, so that
  the walk moves through the schema instead of staying in one string) and consumed in both.
  A request ends at EOS, when the intersection is empty or after --steps masks. The tokens
  are recorded; every configuration below replays them.
- Configurations, each on freshly compiled grammars (one per schema, shared by its
  requests; LLGuidance: one compiled LLMatcher per schema, deep-copied per request before
  its first mask), timing only the mask calls with time.perf_counter_ns:
    (a) sieve batch: one `sieve.fill_next_token_bitmask_batch(live, bitmask, rows)` per step;
        per-request cost = call time / live requests
    (b) sieve per request: `m.fill_next_token_bitmask(bitmask, row)` in a Python loop
    (c) Rust: `m._fill_timed(bitmask, row)`, nanoseconds measured inside Rust
    (d) LLGuidance per request: `llguidance.numpy.fill_next_token_bitmask(m, bitmask, row)`
    (e) LLGuidance batch (information): `llguidance.numpy.fill_next_token_bitmask_par`
        on an `LLExecutor` with the same thread count as sieve's pool
- Rounds (--rounds, default 11): every configuration replays the walk once a round, one
  after the other in an order rotated every round (the machine may be shared; a
  configuration's mean is the median of its round means, its p50 is over all its masks).
  With --lockstep all configurations replay together, step by step (order rotated every
  step): other load falls on all alike, and the batch pools' threads sleep between two
  batch calls, as they do in a decode loop while the model runs (back to back, they are
  still awake).
- Ratios: (a)/(c) <= 1.2 and (d)/(a) >= 1.5 (means per request); also (b)/(c), (d)/(b).
  `--check` exits non-zero if one of the two acceptance ratios fails.
- Masks are compared during the walk and the differing ones counted (they may
  legitimately differ; this is not an assertion).

Usage: python-batch.py [--shared DIR] [--tokenizer FILE] [--requests 64] [--steps 128]
                       [--schemas 32] [--seed 0] [--threads N] [--rounds 11]
                       [--lockstep] [--show-diffs 3] [--json-out FILE] [--check]
"""

import argparse
import gc
import hashlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import sieve

try:
    import llguidance
    import llguidance.numpy as llg_np
except ImportError:  # pragma: no cover
    sys.exit("python-batch.py needs llguidance: pip install llguidance==1.9.1")
try:
    import tokenizers
except ImportError:  # pragma: no cover
    sys.exit("python-batch.py needs the `tokenizers` package (for LLGuidance's tokenizer)")

REPO = Path(__file__).resolve().parents[2]


def default_shared():
    env = os.environ.get("SIEVE_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def sample_order(directory):
    """`*.json` files (no dot files), sorted by the sha256 of the file name, as
    `sieve maskbench` (bench/src/maskbench.rs, list_files) samples them."""
    files = sorted(p for p in directory.iterdir()
                   if p.is_file() and p.name.endswith(".json") and not p.name.startswith("."))
    return sorted(files, key=lambda p: hashlib.sha256(p.name.encode()).hexdigest())


def unpack(row):
    """The allowed tokens of a mask row (int32 words) as a bool array, bit t%32 of word t//32."""
    return np.unpackbits(row.view(np.uint8), bitorder="little").astype(bool)


class Setup:
    def __init__(self, tok_path, threads):
        self.tok = sieve.Tokenizer.from_file(str(tok_path))
        self.vocab = self.tok.vocab_size
        self.eos = list(self.tok.eos_token_ids)
        hf = tokenizers.Tokenizer.from_file(str(tok_path))
        # The same EOS set on both sides, so the walk ends the same way.
        self.llt = llguidance.LLTokenizer(hf.to_str(), n_vocab=self.vocab, eos_token=self.eos)
        assert self.llt.vocab_size == self.vocab, (self.llt.vocab_size, self.vocab)
        self.opts = sieve.JsonOptions.llguidance()
        self.executor = llguidance.LLExecutor(num_threads=threads)

    def sieve_grammar(self, text):
        return sieve.Grammar.json_schema(self.tok, text, options=self.opts)

    def llg_matcher(self, llg_grammar):
        return llguidance.LLMatcher(self.llt, llg_grammar, log_level=0)


def pick_schemas(setup, files, k):
    """The first k files whose schema compiles in both engines: (name, text, llg grammar)."""
    chosen, rejected = [], {"sieve": 0, "llguidance": 0, "read": 0}
    for f in files:
        if len(chosen) >= k:
            break
        try:
            text = json.dumps(json.loads(f.read_text(encoding="utf-8"))["schema"])
        except (ValueError, KeyError, UnicodeDecodeError):
            rejected["read"] += 1
            continue
        try:
            setup.sieve_grammar(text)
        except sieve.SieveError:
            rejected["sieve"] += 1
            continue
        try:
            g = llguidance.LLMatcher.grammar_from_json_schema(text)
            m = setup.llg_matcher(g)
            ok = not m.is_error()
        except Exception:  # noqa: BLE001 - LLGuidance raises ValueError and others
            ok = False
        if not ok:
            rejected["llguidance"] += 1
            continue
        chosen.append((f.name, text, g))
    return chosen, rejected


STRUCTURAL = frozenset(b'",:}]')


def structural_tokens(setup):
    """Tokens that contain a character closing a JSON value or member (`"`, `,`, `:`, `}`,
    `]`), as a bool array; EOS included."""
    out = np.zeros(setup.vocab, dtype=bool)
    for t in range(setup.vocab):
        if not setup.tok.is_special(t) and STRUCTURAL.intersection(setup.tok.token_bytes(t)):
            out[t] = True
    out[setup.eos] = True
    return out


def choose(allowed, rng, structural, eos):
    """A token of `allowed` (ascending ids): with probability 1/2, one that closes something
    (EOS first when allowed), else any. A uniform choice alone would stay in a string or
    a number for the whole walk (almost every token continues one) and measure only those
    states; this one walks through the schema's structure, as real outputs do."""
    if rng.random() < 0.5:
        ends = [t for t in eos if np.any(allowed == t)]
        if ends:
            return ends[0]
        closing = allowed[structural[allowed]]
        if closing.size:
            return int(closing[rng.randrange(closing.size)])
    return int(allowed[rng.randrange(allowed.size)])


def walk(setup, schemas, n_req, steps, seed, show_diffs=0):
    """Drives both engines with tokens both allow. Returns (tokens, masks): per request, the
    tokens consumed and the number of masks taken (tokens, plus one if it ended on an
    empty intersection or on EOS), and mask comparison counts."""
    rng = random.Random(seed)
    grammars = [setup.sieve_grammar(t) for _, t, _ in schemas]
    s_ms = [sieve.Matcher(grammars[r % len(schemas)]) for r in range(n_req)]
    l_base = [setup.llg_matcher(g) for _, _, g in schemas]
    l_ms = [l_base[r % len(schemas)].deep_copy() for r in range(n_req)]
    s_bm = sieve.allocate_token_bitmask(n_req, setup.vocab, backend="numpy")
    l_bm = llg_np.allocate_token_bitmask(n_req, setup.vocab)
    tokens = [[] for _ in range(n_req)]
    n_masks = [0] * n_req
    live = list(range(n_req))
    diff = {"masks": 0, "differ": 0, "only_sieve_tokens": 0, "only_llg_tokens": 0,
            "ended_eos": 0, "ended_empty": 0, "ended_steps": 0, "examples": []}
    eos = set(setup.eos)
    structural = structural_tokens(setup)
    for _step in range(steps):
        if not live:
            break
        still = []
        for r in live:
            s_ms[r].fill_next_token_bitmask(s_bm, r)
            llg_np.fill_next_token_bitmask(l_ms[r], l_bm, r)
            n_masks[r] += 1
            diff["masks"] += 1
            a, b = unpack(s_bm[r])[: setup.vocab], unpack(l_bm[r])[: setup.vocab]
            if not np.array_equal(a, b):
                diff["differ"] += 1
                diff["only_sieve_tokens"] += int(np.count_nonzero(a & ~b))
                diff["only_llg_tokens"] += int(np.count_nonzero(b & ~a))
                if len(diff["examples"]) < show_diffs:
                    diff["examples"].append({
                        "schema": schemas[r % len(schemas)][0],
                        "after": setup.tok.decode_bytes(tokens[r]).decode("utf-8", "replace"),
                        "only_sieve": [setup.tok.token_bytes(int(t)).decode("utf-8", "replace")
                                       for t in np.flatnonzero(a & ~b)[:8]],
                        "only_llguidance": [
                            setup.tok.token_bytes(int(t)).decode("utf-8", "replace")
                            for t in np.flatnonzero(b & ~a)[:8]],
                    })
            both = np.flatnonzero(a & b)
            if both.size == 0:
                diff["ended_empty"] += 1
                continue
            t = choose(both, rng, structural, setup.eos)
            if t in eos:
                diff["ended_eos"] += 1
                continue
            ok_s = s_ms[r].consume_token(t)
            ok_l = l_ms[r].consume_token(t)
            if not (ok_s and ok_l):  # cannot happen for a token both masks allow
                raise RuntimeError(f"request {r}: token {t} allowed but rejected "
                                   f"(sieve {ok_s}, llguidance {ok_l}: {l_ms[r].get_error()})")
            tokens[r].append(t)
            still.append(r)
        live = still
    diff["ended_steps"] = len(live)
    return tokens, n_masks, diff


class Replay:
    """One configuration replaying the walk on freshly compiled grammars."""

    def __init__(self, setup, schemas, tokens, n_masks, mode):
        self.setup, self.tokens, self.n_masks, self.mode = setup, tokens, n_masks, mode
        n_req = len(tokens)
        if mode in ("sieve_batch", "sieve_loop", "rust"):
            grammars = [setup.sieve_grammar(t) for _, t, _ in schemas]
            self.ms = [sieve.Matcher(grammars[r % len(schemas)]) for r in range(n_req)]
            self.bm = sieve.allocate_token_bitmask(n_req, setup.vocab, backend="numpy")
        else:
            base = [setup.llg_matcher(g) for _, _, g in schemas]
            self.ms = [base[r % len(schemas)].deep_copy() for r in range(n_req)]
            self.bm = llg_np.allocate_token_bitmask(n_req, setup.vocab)
        self.costs = []

    def masks(self, live):
        """The masks of the live requests; only the mask calls are timed."""
        mode, ms, bm, costs = self.mode, self.ms, self.bm, self.costs
        clock = time.perf_counter_ns
        if mode == "sieve_batch":
            lm = [ms[r] for r in live]
            fill_batch = sieve.fill_next_token_bitmask_batch
            t0 = clock()
            fill_batch(lm, bm, live)
            dt = clock() - t0
            costs.extend([dt / len(live)] * len(live))
        elif mode == "sieve_loop":
            for r in live:
                m = ms[r]
                t0 = clock()
                m.fill_next_token_bitmask(bm, r)
                costs.append(clock() - t0)
        elif mode == "rust":
            for r in live:
                costs.append(ms[r]._fill_timed(bm, r))
        elif mode == "llg_loop":
            llg_fill = llg_np.fill_next_token_bitmask
            for r in live:
                m = ms[r]
                t0 = clock()
                llg_fill(m, bm, r)
                costs.append(clock() - t0)
        elif mode == "llg_par":
            pairs = [(ms[r], r) for r in live]
            llg_par, executor = llg_np.fill_next_token_bitmask_par, self.setup.executor
            t0 = clock()
            llg_par(executor, pairs, bm)
            dt = clock() - t0
            costs.extend([dt / len(live)] * len(live))
        else:
            raise ValueError(mode)

    def consume(self, live, step):
        for r in live:
            if step < len(self.tokens[r]):
                if not self.ms[r].consume_token(self.tokens[r][step]):
                    raise RuntimeError(f"{self.mode}: request {r} rejected its recorded token "
                                       f"{self.tokens[r][step]} at step {step}")


def replay_round(setup, schemas, tokens, n_masks, modes):
    """Replays the walk in every configuration, fresh, in lockstep: at each step each
    configuration takes its masks (in an order rotated every step), so that load from other
    processes falls on all of them alike. Returns {mode: per-mask costs in ns} (for the batch
    modes, the call time / live requests, once per request of the step)."""
    replays = [Replay(setup, schemas, tokens, n_masks, mode) for mode in modes]
    n_req = len(tokens)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        step = 0
        while True:
            live = [r for r in range(n_req) if step < n_masks[r]]
            if not live:
                break
            k = step % len(replays)
            for rp in replays[k:] + replays[:k]:
                rp.masks(live)
            for rp in replays:
                rp.consume(live, step)
            step += 1
    finally:
        if gc_was:
            gc.enable()
    return {rp.mode: rp.costs for rp in replays}


MODES = [
    ("a", "sieve_batch", "sieve batch (fill_next_token_bitmask_batch)"),
    ("b", "sieve_loop", "sieve per request from Python"),
    ("c", "rust", "Rust matcher's own time (_fill_timed)"),
    ("d", "llg_loop", "LLGuidance per request from Python"),
    ("e", "llg_par", "LLGuidance batch (LLExecutor, information)"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", type=Path, default=None,
                    help="the shared data directory (default $SIEVE_SHARED or ../shared "
                         "relative to the repo)")
    ap.add_argument("--tokenizer", type=Path, default=None,
                    help="tokenizer.json (default SHARED/tokenizers/llama3.json)")
    ap.add_argument("--maskbench", type=Path, default=None,
                    help="MaskBench directory (default SHARED/data/maskbench)")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--steps", type=int, default=128, help="at most this many masks a request")
    ap.add_argument("--schemas", type=int, default=32, help="distinct schemas K")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None,
                    help="sieve pool and LLExecutor threads (default: sieve's default, one "
                         "per CPU)")
    ap.add_argument("--rounds", type=int, default=11,
                    help="measure every configuration this many times (median reported)")
    ap.add_argument("--lockstep", action="store_true",
                    help="replay all configurations together, step by step, instead of one "
                         "after the other: other load falls on all alike, and the pools' "
                         "threads sleep between two batch calls, as in a decode loop")
    ap.add_argument("--show-diffs", type=int, default=3,
                    help="print this many examples of masks that differ")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if (a)/(c) > 1.2 or (d)/(a) < 1.5")
    args = ap.parse_args()

    shared = args.shared or default_shared()
    tok_path = args.tokenizer or shared / "tokenizers" / "llama3.json"
    mb_dir = args.maskbench or shared / "data" / "maskbench"
    for p in (tok_path, mb_dir):
        if not p.exists():
            sys.exit(f"python-batch.py: {p} does not exist (set --shared or $SIEVE_SHARED)")

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if args.threads:
        sieve.set_num_threads(args.threads)
    threads = args.threads or cpus
    t_start = time.perf_counter()
    setup = Setup(tok_path, threads)
    files = sample_order(mb_dir)
    schemas, rejected = pick_schemas(setup, files, args.schemas)
    if not schemas:
        sys.exit("python-batch.py: no schema compiles in both engines")
    print(f"sieve {sieve.__version__}, llguidance {llguidance.get_version()}, "
          f"tokenizer {tok_path.name} ({setup.vocab} tokens, EOS {setup.eos})")
    pool = "--threads" if args.threads else "default, one per CPU"
    print(f"threads: {threads} (sieve pool: {pool}"
          f"; LLExecutor: {threads}); CPUs available: {cpus}")
    print(f"schemas: {len(schemas)} compiled in both (skipped: {rejected['sieve']} sieve, "
          f"{rejected['llguidance']} llguidance, {rejected['read']} unreadable), "
          f"{args.requests} requests cycling over them, up to {args.steps} masks each, "
          f"seed {args.seed}")

    # Warm the thread pools (their start-up is not a mask cost).
    g0 = setup.sieve_grammar(schemas[0][1])
    warm = sieve.allocate_token_bitmask(2, setup.vocab, backend="numpy")
    sieve.fill_next_token_bitmask_batch([sieve.Matcher(g0), sieve.Matcher(g0)], warm)
    lm0 = setup.llg_matcher(schemas[0][2])
    llg_np.fill_next_token_bitmask_par(setup.executor, [(lm0, 0), (lm0.deep_copy(), 1)], warm)

    t0 = time.perf_counter()
    tokens, n_masks, diff = walk(setup, schemas, args.requests, args.steps, args.seed,
                                 args.show_diffs)
    t_walk = time.perf_counter() - t0
    total = sum(n_masks)
    print(f"walk: {total} masks, {sum(len(t) for t in tokens)} tokens in {t_walk:.1f} s; "
          f"ended: {diff['ended_eos']} at EOS, {diff['ended_empty']} on an empty intersection, "
          f"{diff['ended_steps']} after --steps")
    print(f"masks differing between sieve and LLGuidance: {diff['differ']} of {diff['masks']} "
          f"(tokens only sieve allows: {diff['only_sieve_tokens']}, only LLGuidance: "
          f"{diff['only_llg_tokens']})")
    for ex in diff["examples"]:
        print(f"  e.g. {ex['schema']} after {ex['after'][-60:]!r}: only sieve allows "
              f"{ex['only_sieve']}, only LLGuidance {ex['only_llguidance']}")

    # Rounds: every configuration once a round (one after the other, or in lockstep); a
    # configuration's mean is the median of its round means, its p50 that of all its masks.
    per_round = {key: [] for key, _, _ in MODES}
    pooled = {key: [] for key, _, _ in MODES}
    all_modes = [m for _, m, _ in MODES]
    for rnd in range(args.rounds):
        if args.lockstep:
            costs_of = replay_round(setup, schemas, tokens, n_masks, all_modes)
        else:
            costs_of = {}
            k = rnd % len(all_modes)
            for mode in all_modes[k:] + all_modes[:k]:
                costs_of.update(replay_round(setup, schemas, tokens, n_masks, [mode]))
        for key, mode, _label in MODES:
            costs = costs_of[mode]
            assert len(costs) == total, (mode, len(costs), total)
            per_round[key].append(statistics.fmean(costs) / 1e3)
            pooled[key].extend(costs)
    results = {}
    for key, mode, label in MODES:
        results[key] = {
            "mode": mode, "label": label, "masks": total,
            "mean_us": statistics.median(per_round[key]),
            "p50_us": statistics.median(pooled[key]) / 1e3,
            "round_means_us": per_round[key],
        }
    round_ratio = {
        "a/c": [a / c for a, c in zip(per_round["a"], per_round["c"])],
        "d/a": [d / a for d, a in zip(per_round["d"], per_round["a"])],
    }

    print()
    print(f"{total} masks a configuration, {args.rounds} rounds "
          f"({'lockstep' if args.lockstep else 'one configuration after the other'}); "
          f"mean = median of the round "
          f"means (min-max in brackets), p50 over all rounds' masks; (a) and (e) spread each "
          f"call's time evenly over its requests")
    print(f"{'':4}{'configuration':<46}{'mean µs':>9}{'(min-max)':>15}{'p50 µs':>9}")
    for key, _mode, label in MODES:
        r = results[key]
        rng_txt = f"({min(per_round[key]):.1f}-{max(per_round[key]):.1f})"
        print(f"({key}) {label:<46}{r['mean_us']:>9.1f}{rng_txt:>15}{r['p50_us']:>9.1f}")
    mean = {k: v["mean_us"] for k, v in results.items()}
    ratios = {
        "a/c": mean["a"] / mean["c"],
        "d/a": mean["d"] / mean["a"],
        "b/c": mean["b"] / mean["c"],
        "d/b": mean["d"] / mean["b"],
        "d/e": mean["d"] / mean["e"],
    }
    ok_ac = ratios["a/c"] <= 1.2
    ok_da = ratios["d/a"] >= 1.5
    print()
    def spread(k):
        v = round_ratio[k]
        return f"per round {min(v):.2f}-{max(v):.2f}"
    print(f"(a)/(c) = {ratios['a/c']:.3f}  (acceptance: <= 1.2)  {'ok' if ok_ac else 'FAIL'}"
          f"  [{spread('a/c')}]")
    print(f"(d)/(a) = {ratios['d/a']:.3f}  (acceptance: >= 1.5)  {'ok' if ok_da else 'FAIL'}"
          f"  [{spread('d/a')}]")
    print(f"(b)/(c) = {ratios['b/c']:.2f}  (per-request call overhead over Rust)")
    print(f"(d)/(b) = {ratios['d/b']:.2f}  (LLGuidance vs sieve, both per request from Python)")
    print(f"total time {time.perf_counter() - t_start:.1f} s")

    if args.json_out:
        out = {
            "sieve_version": sieve.__version__,
            "llguidance_version": llguidance.get_version(),
            "tokenizer": str(tok_path), "vocab_size": setup.vocab,
            "threads": threads, "cpus": cpus, "requests": args.requests,
            "steps": args.steps, "seed": args.seed,
            "schemas": [name for name, _, _ in schemas], "skipped": rejected,
            "rounds": args.rounds, "lockstep": args.lockstep, "masks": total, "walk": diff,
            "results": results,
            "ratios": ratios, "round_ratios": round_ratio,
            "acceptance": {"a/c<=1.2": ok_ac, "d/a>=1.5": ok_da},
        }
        args.json_out.write_text(json.dumps(out, indent=2) + "\n")
    if args.check and not (ok_ac and ok_da):
        fails = []
        if not ok_ac:
            fails.append(f"(a)/(c) = {ratios['a/c']:.3f} > 1.2")
        if not ok_da:
            fails.append(f"(d)/(a) = {ratios['d/a']:.3f} < 1.5")
        sys.exit("python-batch.py: acceptance failed: " + "; ".join(fails))


if __name__ == "__main__":
    main()
