#!/usr/bin/env python3
"""SGLang's EAGLE tree path (speculative/spec_utils.traverse_tree) over a sieve grammar:
SGLang's own per-node Python DFS against sieve's AROUND hook (one native
fill_next_token_bitmask_draft_tree call). Needs SGLang installed (ffi-c/python/ci.sh does,
with SIEVE_PY_ENGINES=1) and ../shared (or SIEVE_SHARED). Run from the repository root:

    python bench/scripts/sglang-eagle.py
"""
import json, os, random, statistics, sys, time
from pathlib import Path
sys.path.insert(0, "ffi-c/python/tests")
import torch, sieve, sieve.sglang
from test_engines import SCHEMA, walk_tokens, hf_tokenizer
import sglang.srt.speculative.spec_utils as su

from sglang.srt.plugins import load_plugins as _lp; _lp()
original = getattr(su.traverse_tree, "__wrapped__", su.traverse_tree)
from sglang.srt.plugins import load_plugins
load_plugins()
hooked = su.traverse_tree
assert hooked is not original
hf = hf_tokenizer(Path(os.environ.get("SIEVE_SHARED", "../shared")), "llama3")
tok = sieve.Tokenizer.from_huggingface(hf)
backend = sieve.sglang.SieveGrammarBackend(tok)
schema = json.dumps(SCHEMA)
walk = walk_tokens(tok, '{"name": "Ada Lovelace", "age": 36}', tok.eos_token_ids[0])
# 16 draft nodes + the root, levels 4-3-3-2-2-2 under a chain of real tokens (like the Rust bench)
def tree(start):
    parents, tokens, level_first = [-1], [walk[start - 1]], 0
    rng = random.Random(start)
    for depth, width in enumerate([4, 3, 3, 2, 2, 2]):
        first = len(tokens)
        for k in range(width):
            parents.append(level_first)
            tokens.append(walk[min(start + depth, len(walk) - 2)] if k == 0 else rng.choice(walk[:-1]))
        level_first = first
    n = len(tokens)
    nt, ns = [-1] * n, [-1] * n
    for i in range(n - 1, 0, -1):
        p = parents[i]; ns[i], nt[p] = nt[p], i
    return torch.tensor(nt), torch.tensor(ns), torch.tensor(tokens)
for start in (5, 9):
    obj = backend.dispatch_json(schema)
    for t in walk[:start]:
        obj.accept_token(t)
    nt, ns, dt = tree(start)
    mask = obj.allocate_vocab_mask(tok.vocab_size, len(dt), "cpu")
    res = {}
    for name, fn in (("sglang_dfs", original), ("sieve_hook", hooked)):
        ts = []
        for r in range(300):
            mask.fill_(-1)
            t0 = time.perf_counter(); fn(nt, ns, dt, obj, mask, vocab_size=tok.vocab_size); ts.append(time.perf_counter() - t0)
        res[name] = (statistics.median(ts) * 1e6, mask.clone())
    assert torch.equal(res["sglang_dfs"][1], res["sieve_hook"][1])
    print(f"after {tok.decode_bytes(walk[:start])!r}: SGLang DFS {res['sglang_dfs'][0]:.1f} us, sieve hook {res['sieve_hook'][0]:.1f} us, ratio {res['sglang_dfs'][0]/res['sieve_hook'][0]:.2f}x (rows equal)")
