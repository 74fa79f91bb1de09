#!/usr/bin/env python3
"""Cross-checks conformance.json against XGrammar itself (the format's reference).

Setup (no torch/transformers needed for these APIs): a venv with `pip install --no-deps
xgrammar` plus `apache-tvm-ffi pydantic numpy typing-extensions`, and stand-in `torch` and
`transformers` packages (an empty module whose attributes are dummies, and one defining
`PreTrainedTokenizerBase`/`PreTrainedTokenizerFast`) so that `import xgrammar` works.

Run: python xgrammar_crosscheck.py conformance.json

1. Text cases (no tokenizer field, no control tokens, no `grammar`/legacy): every accept and
   reject string via `accept_string`. Expected disagreements (sieve's documented rules):
   `any_text` followed by a literal in a `sequence` stops at it; `max_tokens` is unsupported.
2. Token-level and tokenizer-specific cases, walked token by token over a toy vocabulary
   (single characters plus the control-token names as tokens). XGrammar has no control-token
   rule (a token `<think>` is also its text), so rejects that differ from an accept only by
   text-vs-token spelling are printed in lower case, for review, not as disagreements.
"""
import json
import re
import sys

import xgrammar as xgr
from xgrammar.testing import _is_grammar_accept_string

cases = json.load(open(sys.argv[1]))


def types(v, out):
    if isinstance(v, dict):
        t = v.get("type")
        if isinstance(t, str):
            out.add(t)
        for k, x in v.items():
            if k not in ("json_schema", "schema"):
                types(x, out)
    elif isinstance(v, list):
        for x in v:
            types(x, out)


def has_tok(c):
    return any("⟨tok:" in s for s in c["accept"] + c["reject"])


SPECIALS = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>", "<|im_end|>",
            "<|im_start|>", "<|endoftext|>", "<|start_header_id|>", "<|end_header_id|>",
            "<|eot_id|>", "<|end_of_text|>", "<eos>"]
CHARS = sorted({chr(c) for c in range(32, 127)} | {"\n", "\t"}
               | {ch for c in cases for s in c["accept"] + c["reject"]
                  for ch in re.sub("⟨tok:[^⟩]*⟩", "", s)})
VOCAB = CHARS + SPECIALS
SID = {n: len(CHARS) + i for i, n in enumerate(SPECIALS)}
EOS = SID["<eos>"]
# Qwen 3 ids used in the cases.
IDMAP = {151644: SID["<|im_start|>"], 151657: SID["<tool_call>"], 151667: SID["<think>"]}
TOKEN_LEVEL = {"token", "exclude_token", "any_tokens", "token_triggered_tags", "token_dispatch"}


def remap(v):
    if isinstance(v, dict):
        return {k: (IDMAP.get(x, x) if isinstance(x, int) else remap(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [IDMAP.get(x, x) if isinstance(x, int) else remap(x) for x in v]
    return v


def toks(s):
    out = []
    for m in re.finditer("⟨tok:([^⟩]*)⟩|(.)", s, re.S):
        out.append(SID[m.group(1)] if m.group(1) else VOCAB.index(m.group(2)))
    return out


def walk(cg, ids):
    m = xgr.GrammarMatcher(cg)
    return all(m.accept_token(t) for t in ids) and m.accept_token(EOS)


bad = 0
comp = xgr.GrammarCompiler(xgr.TokenizerInfo(VOCAB, stop_token_ids=[EOS]))
for c in cases:
    ts = set()
    types(c["tag"], ts)
    if "grammar" in ts or "structures" in c["tag"]:
        continue
    tag = c["tag"]
    if tag.get("type") != "structural_tag":
        tag = {"type": "structural_tag", "format": tag}
    token_mode = bool(ts & TOKEN_LEVEL) or bool(c.get("tokenizers")) or has_tok(c)
    try:
        if token_mode:
            cg = comp.compile_structural_tag(json.dumps(remap(tag)))
        else:
            g = xgr.Grammar.from_structural_tag(json.dumps(tag))
    except Exception as e:  # noqa: BLE001
        if c.get("error") is None:
            print("COMPILE-ERR", c["name"], str(e)[:200])
            bad += 1
        continue
    if c.get("error") is not None:
        print("NO-ERROR", c["name"])
        bad += 1
        continue
    for s in c["accept"]:
        ok = walk(cg, toks(s)) if token_mode else _is_grammar_accept_string(g, s)
        if not ok:
            print("XGR-REJECTS-ACCEPT", c["name"], repr(s))
            bad += 1
    for s in c["reject"]:
        ok = walk(cg, toks(s)) if token_mode else _is_grammar_accept_string(g, s)
        if ok:
            if token_mode:
                print("  xgr-accepts-reject", c["name"], repr(s))
            else:
                print("XGR-ACCEPTS-REJECT", c["name"], repr(s))
                bad += 1
print("disagreements:", bad)
