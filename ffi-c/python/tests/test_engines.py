"""sieve inside the real serving engines, installed from PyPI (CPU): SGLang selects it
through its plugin entry point and backend registry, vLLM through its general-plugin hook.
Each test drives the engine's own code (SGLang's `GrammarManager` and
`SamplingBatchInfo.update_regex_vocab_mask`, vLLM's `StructuredOutputManager`) in the
engine's call order, walks a valid document per request, and compares every mask row with a
`sieve.Matcher` on the same grammar driven directly.

What the engines' own objects need and cannot have here is stubbed, and nothing else: the
scheduler and model config (SGLang), `VllmConfig` and the request object (vLLM); no GPU,
no model weights. Without SGLang or vLLM installed the tests skip with a SKIP line
(`ffi-c/python/ci.sh` installs them with SIEVE_PY_ENGINES=1).
"""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

import sieve
import sieve.sglang
import sieve.vllm
from conftest import skip

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
TAG = {"type": "structural_tag", "format": {
    "type": "triggered_tags", "triggers": ["<f>"], "tags": [{
        "type": "tag", "begin": "<f>", "end": "</f>",
        "content": {"type": "json_schema", "json_schema": {
            "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}]}}

# (kind, spec, a valid output); kinds as SGLang names them.
REQUESTS = [
    ("json", json.dumps(SCHEMA), '{"name": "Ada", "age": 36}'),
    ("regex", r"\d{3}-\d{4}", "555-1234"),
    ("ebnf", 'root ::= "yes" | "no" | "maybe"', "maybe"),
    ("ebnf", 'start: "x" /[0-9]+/', "x42"),
    ("structural_tag", json.dumps(TAG), 'ok <f>{"a": 7}</f> done'),
    ("json", json.dumps(SCHEMA), '{"name": "Bo", "age": 1}'),  # the same schema again
]
EOS = {"llama3": "<|eot_id|>", "qwen3": "<|im_end|>", "llama3-r1": "<|eot_id|>"}
# The reasoning parser SGLang and vLLM pair with each tokenizer (None: not a reasoning model).
REASONING = {"llama3": None, "qwen3": "qwen3", "llama3-r1": "deepseek-r1"}
# Llama 3's vocabulary as DeepSeek's R1 distills of Llama 3 ship it: two of its reserved
# special tokens renamed `<think>` and `</think>` (the only change), so the think-end is
# one special token as on Qwen 3.
R1_THINK = {128013: "<think>", 128014: "</think>"}


def hf_tokenizer(shared, name, tmp=None):
    transformers = pytest.importorskip("transformers")
    path = shared / "tokenizers" / f"{name}.json"
    if name == "llama3-r1":
        data = json.loads((shared / "tokenizers" / "llama3.json").read_text())
        for added in data["added_tokens"]:
            if added["id"] in R1_THINK:
                added["content"] = R1_THINK[added["id"]]
        path = tmp / "llama3-r1.json"
        path.write_text(json.dumps(data))
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token=EOS[name])


def reference(tok, kind, spec, gate=None):
    """The Rust matcher, compiled and driven directly (no engine, no adapter)."""
    if kind == "json":
        g = sieve.Grammar.json_schema(tok, spec)
    elif kind == "regex":
        g = sieve.Grammar.regex(tok, spec)
    elif kind == "ebnf":
        g = sieve.Grammar(tok, "gbnf" if "::=" in spec else "lark", spec)
    else:
        g = sieve.Grammar.structural_tag(tok, spec)
    return sieve.Matcher(g, gate=gate)


def ref_row(m, words):
    row = np.zeros(words, dtype=np.int32)
    m.fill_next_token_bitmask(row)
    return row


def walk_tokens(tok, text, eos):
    ids = tok.greedy_tokenize(text.encode())
    assert ids is not None
    return ids + [eos]


# ------------------------------------------------------------------------------- SGLang


def sglang_modules():
    try:
        from sglang.srt.constrained import base_grammar_backend as base
        from sglang.srt.constrained.grammar_manager import GrammarManager
        from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
        from sglang.srt.runtime_context import get_context
    except Exception as e:  # noqa: BLE001
        skip(f"SGLang is not importable here ({type(e).__name__}: {e}); "
             "ffi-c/python/ci.sh installs it with SIEVE_PY_ENGINES=1")
    return base, GrammarManager, SamplingBatchInfo, get_context


class FakeReq:
    """The fields of SGLang's `Req` that `GrammarManager` reads and writes."""

    def __init__(self, rid, kind, spec, reasoning=False, budget=None):
        sp = dict(json_schema=None, regex=None, ebnf=None, structural_tag=None)
        sp[{"json": "json_schema"}.get(kind, kind)] = spec
        custom = {"thinking_budget": budget} if budget is not None else None
        self.sampling_params = SimpleNamespace(ebnf_full_assistant=False, custom_params=custom,
                                               **sp)
        self.rid, self.origin_input_ids, self.require_reasoning = rid, [1, 2, 3], reasoning
        self.grammar, self.grammar_key, self.grammar_wait_ct = None, None, 0
        self.aborted = None

    def set_finish_with_abort(self, msg):
        self.aborted = msg

    def finished(self):
        return self.aborted is not None


def sglang_manager(hf, vocab_size, reasoning_parser):
    _, GrammarManager, _, _ = sglang_modules()
    scheduler = SimpleNamespace(
        server_args=None, tokenizer=hf,
        model_config=SimpleNamespace(vocab_size=vocab_size, hf_eos_token_id={hf.eos_token_id},
                                     think_end_ids=None),
        dp_tp_cpu_group=None, pp_group=None,
        dp_tp_group=SimpleNamespace(world_size=1, first_rank=0, is_first_rank=True))
    from sglang.srt.runtime_context import get_parallel

    with get_parallel().override(pp_rank=0, pp_size=1):  # one process, no pipeline
        return GrammarManager(scheduler)


def sglang_admit(manager, reqs):
    """`process_req_with_grammar`, then `get_ready_grammar_requests` until all are out."""
    for r in reqs:
        manager.process_req_with_grammar(r)
    ready, deadline = [], time.monotonic() + 120
    while manager.has_waiting_grammars() and time.monotonic() < deadline:
        ready += manager.get_ready_grammar_requests()
    assert not manager.has_waiting_grammars()
    return ready


def sglang_decode(SamplingBatchInfo, reqs, walks, refs, vocab_size):
    """SGLang's decode loop: `update_regex_vocab_mask` (allocate, `fill_vocab_mask_batched`,
    move), `GrammarMask.apply` on the logits, the sampled token, `accept_token`, then
    `grammar.finished`. The "model" prefers the next token of each walk."""
    import torch

    steps = max(len(w) for w in walks)
    for step in range(steps):
        live = [i for i, w in enumerate(walks) if step < len(w)]
        info = SimpleNamespace(grammars=[reqs[i].grammar for i in live], vocab_size=vocab_size,
                               temperatures=torch.ones(len(live)), device="cpu")
        SamplingBatchInfo.update_regex_vocab_mask(info)
        mask = info.grammar_mask.vocab_mask
        logits = torch.zeros((len(live), vocab_size))
        for row, i in enumerate(live):
            logits[row, walks[i][step]] = 10.0
        info.grammar_mask.apply(logits)
        for row, i in enumerate(live):
            words = mask.shape[1]
            assert np.array_equal(mask[row].numpy(), ref_row(refs[i], words)), \
                f"request {i} step {step}: SGLang's mask differs from the matcher's"
            t = int(logits[row].argmax())
            assert t == walks[i][step], f"request {i} step {step}: the walk's token is masked"
            reqs[i].grammar.accept_token(t)
            reqs[i].grammar.finished = False
            assert refs[i].consume_token(t)
    for i in range(len(walks)):
        assert reqs[i].grammar.is_terminated(), f"request {i} did not end"


@pytest.mark.parametrize("name", ["llama3", "qwen3", "llama3-r1"])
def test_sglang_selects_sieve_and_matches_the_matcher(shared, name, tmp_path):
    pytest.importorskip("torch")
    base, _, SamplingBatchInfo, get_context = sglang_modules()
    from importlib.metadata import entry_points

    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.plugins import load_plugins

    assert any(ep.value == "sieve.sglang:register"
               for ep in entry_points(group="sglang.srt.plugins")), "entry point not installed"
    load_plugins()
    assert "sieve" in GRAMMAR_BACKEND_CHOICES and "sieve" in base.GRAMMAR_BACKEND_REGISTRY

    hf = hf_tokenizer(shared, name, tmp_path)
    vocab_size = len(hf)
    reasoning = REASONING[name]
    with get_context().override_server_args(grammar_backend="sieve",
                                            reasoning_parser=reasoning):
        manager = sglang_manager(hf, vocab_size, reasoning)
    backend = manager.grammar_backend
    assert isinstance(backend, sieve.sglang.SieveGrammarBackend)
    assert isinstance(backend, base.BaseGrammarBackend)

    tok = sieve.Tokenizer.from_huggingface(hf, n_vocab=vocab_size)
    eos = tok.eos_token_ids[0]
    reqs = [FakeReq(f"r{i}", k, s) for i, (k, s, _) in enumerate(REQUESTS)]
    walks = [walk_tokens(tok, text, eos) for _, _, text in REQUESTS]
    refs = [reference(tok, k, s) for k, s, _ in REQUESTS]
    if reasoning:
        think_end = hf.convert_tokens_to_ids("</think>")
        gate = sieve.Gate(tok, reasoning_end=[think_end])
        thought = tok.greedy_tokenize(b"Let me think.")
        reqs.append(FakeReq("think", "json", json.dumps(SCHEMA), reasoning=True))
        walks.append(thought + [think_end] + walk_tokens(tok, '{"name": "Cy", "age": 2}', eos))
        refs.append(reference(tok, "json", json.dumps(SCHEMA), gate))
    bad = FakeReq("bad", "regex", "(unclosed")
    ready = sglang_admit(manager, reqs[:3] + [bad] + reqs[3:])
    assert len(ready) == len(reqs) + 1
    assert bad.aborted and "Failed to compile regex grammar" in bad.aborted
    assert isinstance(bad.grammar, base.InvalidGrammarObject)
    for r in reqs:
        assert r.aborted is None and isinstance(r.grammar, base.BaseGrammarObject)
    sglang_decode(SamplingBatchInfo, reqs, walks, refs, vocab_size)

    # A schema seen before: SGLang's cache hands a copy back at once (not queued).
    hit = FakeReq("hit", "json", json.dumps(SCHEMA))
    assert manager.process_req_with_grammar(hit) is False
    assert isinstance(hit.grammar, sieve.sglang.SieveGrammarObject)
    assert hit.grammar.matcher.num_tokens == 0
    # The same bad grammar again: SGLang's cache hands back the error at once.
    again = FakeReq("bad2", "regex", "(unclosed")
    sglang_admit(manager, [again])
    assert again.aborted and "Failed to compile" in again.aborted


def test_sglang_thinking_budget(shared):
    pytest.importorskip("torch")
    base, _, SamplingBatchInfo, get_context = sglang_modules()
    from sglang.srt.plugins import load_plugins

    load_plugins()
    hf = hf_tokenizer(shared, "qwen3")
    with get_context().override_server_args(grammar_backend="sieve", reasoning_parser="qwen3"):
        manager = sglang_manager(hf, len(hf), "qwen3")
    req = FakeReq("b", "regex", "[0-9]+", reasoning=True, budget=2)
    sglang_admit(manager, [req])
    g = req.grammar
    think_end = hf.convert_tokens_to_ids("</think>")
    tok = sieve.Tokenizer.from_huggingface(hf)
    assert len(g.matcher.allowed_tokens()) == tok.vocab_size, "free while reasoning"
    for text in (b"a", b"b"):  # two reasoning tokens: the budget
        g.accept_token(tok.greedy_tokenize(text)[0])
    allowed = g.matcher.allowed_tokens()
    assert allowed == [think_end], "after the budget only the think-end token is allowed"
    g.accept_token(think_end)
    g.rollback(1)
    assert g.matcher.allowed_tokens() == [think_end]
    # A negative budget is no budget (SGLang's convention); a full-assistant EBNF describes
    # the reasoning itself, so no gate goes in front of it.
    unlimited = FakeReq("u", "regex", "[0-9]+", reasoning=True, budget=-1)
    full = FakeReq("f", "ebnf", 'root ::= "<think>" [a-z]* "</think>" [0-9]+', reasoning=True)
    full.sampling_params.ebnf_full_assistant = True
    sglang_admit(manager, [unlimited, full])
    for text in (b"a", b"b", b"c"):
        unlimited.grammar.accept_token(tok.greedy_tokenize(text)[0])
    assert len(unlimited.grammar.matcher.allowed_tokens()) == tok.vocab_size
    assert full.grammar.matcher.gate_phase() is None


# --------------------------------------------------------------------------------- vLLM


def vllm_modules():
    try:
        from vllm.sampling_params import SamplingParams, StructuredOutputsParams
        from vllm.v1.structured_output import StructuredOutputManager
        from vllm.v1.structured_output.backend_types import StructuredOutputBackend
        from vllm.v1.structured_output.request import StructuredOutputRequest
    except Exception as e:  # noqa: BLE001
        skip(f"vLLM is not importable here ({type(e).__name__}: {e}); "
             "ffi-c/python/ci.sh installs it with SIEVE_PY_ENGINES=1")
    return SamplingParams, StructuredOutputsParams, StructuredOutputManager, \
        StructuredOutputBackend, StructuredOutputRequest


# (StructuredOutputsParams field, value, a valid output)
VLLM_REQUESTS = [
    ("json", SCHEMA, '{"name": "Ada", "age": 36}'),
    ("regex", r"\d{3}-\d{4}", "555-1234"),
    ("choice", ["yes", "no", "maybe"], "no"),
    ("grammar", 'root ::= "a" [0-9]+', "a12"),
    ("grammar", 'start: "b" /[0-9]+/', "b7"),
    ("structural_tag", json.dumps(TAG), 'x <f>{"a": 1}</f>'),
]


def vllm_request(mods, rid, field, value, backend_name):
    SamplingParams, StructuredOutputsParams, _, _, StructuredOutputRequest = mods
    params = StructuredOutputsParams(**{field: value})
    params._backend = backend_name  # what vLLM's input processor sets
    sp = SimpleNamespace(structured_outputs=params, all_stop_token_ids=set())
    return SimpleNamespace(request_id=rid, sampling_params=sp, use_structured_output=True,
                           structured_output_request=StructuredOutputRequest(params=params),
                           all_token_ids=[1, 2], prompt_token_ids=[1, 2])


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_vllm_plugin_serves_the_replaced_backend(shared, name, monkeypatch):
    pytest.importorskip("torch")
    mods = vllm_modules()
    _, _, StructuredOutputManager, StructuredOutputBackend, _ = mods
    from importlib.metadata import entry_points

    import sieve.vllm

    assert any(ep.value == "sieve.vllm:register"
               for ep in entry_points(group="vllm.general_plugins")), "entry point not installed"
    monkeypatch.setenv("SIEVE_VLLM_REPLACE", "guidance")
    original = StructuredOutputManager.grammar_init
    import vllm.plugins

    monkeypatch.setattr(vllm.plugins, "plugins_loaded", False)
    vllm.plugins.load_general_plugins()  # runs sieve.vllm:register through the entry point
    try:
        assert StructuredOutputManager.grammar_init.__sieve_replaces__ == "guidance"
        vllm_drive(shared, name, mods)
    finally:
        StructuredOutputManager.grammar_init = original


def vllm_manager(StructuredOutputManager, hf, vocab_size, max_seqs, spec, workers,
                 reasoning_parser=""):
    """vLLM's real `StructuredOutputManager` on a stub `VllmConfig` (no model, no GPU)."""
    config = SimpleNamespace(
        parallel_config=SimpleNamespace(distributed_executor_backend="mp"),
        scheduler_config=SimpleNamespace(max_num_seqs=max_seqs),
        model_config=SimpleNamespace(skip_tokenizer_init=True, is_diffusion=False,
                                     get_vocab_size=lambda: vocab_size),
        structured_outputs_config=SimpleNamespace(enable_in_reasoning=False,
                                                  reasoning_parser=reasoning_parser,
                                                  reasoning_parser_plugin=""),
        num_speculative_tokens=spec)
    manager = StructuredOutputManager(config)
    # skip_tokenizer_init keeps vLLM from loading a model's tokenizer by name; these are
    # what __init__ would have set up from it.
    manager.tokenizer, manager.executor = hf, ThreadPoolExecutor(workers)
    return manager


def vllm_drive(shared, name, mods):
    _, _, StructuredOutputManager, StructuredOutputBackend, _ = mods
    hf = hf_tokenizer(shared, name)
    vocab_size, spec = len(hf), 2
    manager = vllm_manager(StructuredOutputManager, hf, vocab_size, 16, spec, workers=2)

    tok = sieve.Tokenizer.from_huggingface(hf, n_vocab=vocab_size)
    eos = tok.eos_token_ids[0]
    reqs = [vllm_request(mods, f"r{i}", f, v, "guidance") for i, (f, v, _) in
            enumerate(VLLM_REQUESTS)]
    bad = vllm_request(mods, "bad", "regex", "(unclosed", "guidance")
    for r in reqs[:2] + [bad] + reqs[2:]:
        manager.grammar_init(r)
    assert isinstance(manager.backend, sieve.vllm.SieveBackend)
    assert isinstance(manager.backend, StructuredOutputBackend)
    manager.executor.shutdown(wait=True)
    assert isinstance(bad.structured_output_request.grammar, Exception), "per-request error"
    walks = [walk_tokens(tok, text, eos) for _, _, text in VLLM_REQUESTS]
    kinds = {"json": "json", "regex": "regex", "grammar": "ebnf", "structural_tag":
             "structural_tag"}
    refs = []
    for f, v, _ in VLLM_REQUESTS:
        if f == "choice":
            refs.append(sieve.Matcher(sieve.Grammar.regex(tok, "yes|no|maybe")))
        else:
            refs.append(reference(tok, kinds[f], v if isinstance(v, str) else json.dumps(v)))
    vllm_steps(manager, reqs, walks, refs, spec)


def vllm_steps(manager, reqs, walks, refs, spec):
    """vLLM's scheduler order per step: `validate_tokens` on the drafts, `grammar_bitmask`
    (a row per draft position and the bonus row), then `accept_tokens` with what the target
    model kept. The drafts are the walk's next `spec` tokens, the last one replaced by a
    wrong token every third step; the target keeps the drafts that match the walk and adds
    the walk's next token as the bonus token."""
    requests = {r.request_id: r for r in reqs}
    pos, rows, cut = [0] * len(reqs), 0, 0
    for step in range(200):
        live = [i for i in range(len(reqs)) if pos[i] < len(walks[i])]
        if not live:
            break
        drafts = {}
        for i in live:
            d = list(walks[i][pos[i]: pos[i] + spec])
            if step % 3 == 2 and d:
                d[-1] = walks[i][0]
            v = manager.validate_tokens(reqs[i], d)
            cut += len(v) < len(d)
            drafts[reqs[i].request_id] = v + [-1] * (spec - len(v))
        ids = [reqs[i].request_id for i in live]
        bitmask = manager.grammar_bitmask(requests, ids, drafts)
        words = bitmask.shape[1]
        for block, i in enumerate(live):
            v = [t for t in drafts[reqs[i].request_id] if t != -1]
            ref = refs[i]
            for k in range(len(v) + 1):
                # vLLM leaves a terminated grammar's row unconstrained (its manager's rule).
                want = np.full(words, -1, np.int32) if ref.is_stopped() else ref_row(ref, words)
                assert np.array_equal(bitmask[block * (spec + 1) + k], want), \
                    f"request {i} step {step} row {k}: vLLM's mask differs from the matcher's"
                rows += 1
                if k < len(v):
                    assert ref.consume_token(v[k])
            ref.rollback(len(v))
            kept = []
            for t in v:
                if t != walks[i][pos[i] + len(kept)]:
                    break
                kept.append(t)
            if pos[i] + len(kept) < len(walks[i]):
                kept.append(walks[i][pos[i] + len(kept)])  # the bonus token
            assert manager.accept_tokens(reqs[i], kept), f"request {i} step {step}: rejected"
            for t in kept:
                assert ref.consume_token(t)
            pos[i] += len(kept)
    for r in reqs:
        assert r.structured_output_request.grammar.is_terminated()
    assert rows > 3 * len(reqs) and cut > 0, (rows, cut)


def seen_rows(parents, tokens, mask, tok):
    """The nodes SGLang's DFS fills: accepted through filled parents, not after EOS."""
    filled = {0}
    for i in range(1, len(tokens)):
        p, t = parents[i], tokens[i]
        if p in filled and sieve.unpack_bitmask(mask[p].numpy(), tok.vocab_size)[t] \
                and t not in tok.eos_token_ids:
            filled.add(i)
    return filled


def test_sglang_eagle_tree_masks(shared):
    """SGLang's own EAGLE path (`speculative/spec_utils.generate_token_bitmask`: a DFS over
    the draft tree with `accept_token`, `fill_vocab_mask`, `rollback`) over sieve's grammar
    objects, on random trees; each filled row equals a fresh matcher's mask after the node's
    path, and the grammar ends where it started."""
    torch = pytest.importorskip("torch")
    sglang_modules()
    import random

    from sglang.srt.plugins import load_plugins
    from sglang.srt.speculative.spec_utils import generate_token_bitmask

    load_plugins()  # sieve's AROUND hook on traverse_tree: one native call per tree
    native_before = sieve.sglang._traverse_tree_around.native_calls
    hf = hf_tokenizer(shared, "llama3")
    tok = sieve.Tokenizer.from_huggingface(hf)
    backend = sieve.sglang.SieveGrammarBackend(tok)
    schema, doc = json.dumps(SCHEMA), '{"name": "Ada", "age": 36}'
    walk = walk_tokens(tok, doc, tok.eos_token_ids[0])
    rng = random.Random(7)
    n, checked = 12, 0
    for trial in range(40):
        obj = backend.dispatch_json(schema)
        start = rng.randrange(len(walk) - 1)
        for t in walk[:start]:
            obj.accept_token(t)
        parents = [-1] + [rng.randrange(i) for i in range(1, n)]
        depth = [0] * n
        for i in range(1, n):
            depth[i] = depth[parents[i]] + 1
        # Mostly the walk's tokens at that depth (deep valid paths), some random ones.
        tokens = [walk[start - 1] if start else 0] + [
            walk[min(start + depth[i] - 1, len(walk) - 1)] if rng.random() < 0.8
            else rng.randrange(tok.vocab_size) for i in range(1, n)]
        next_token, next_sibling = [-1] * n, [-1] * n
        for i in range(n - 1, 0, -1):  # children in index order
            p = parents[i]
            next_sibling[i], next_token[p] = next_token[p], i
        req = SimpleNamespace(grammar=obj)
        mask, _ = generate_token_bitmask(
            [req], torch.tensor([next_token]), torch.tensor([next_sibling]),
            torch.tensor([tokens]), tok.vocab_size)
        assert obj.matcher.num_tokens == start, "the tree walk must end where it started"
        for i in range(n):
            path, node = [], i
            while node > 0:
                path.append(tokens[node])
                node = parents[node]
            ref = sieve.Matcher(sieve.Grammar.json_schema(tok, schema))
            ok = ref.consume_tokens(walk[:start])
            for t in reversed(path):
                ok = ok and ref.is_allowed(t) and ref.consume_token(t)
            if not ok or ref.is_stopped():
                continue  # SGLang fills no row there
            want = ref_row(ref, mask.shape[1])
            assert np.array_equal(mask[i].numpy(), want), f"trial {trial} node {i}"
            checked += 1
        # The rows SGLang's DFS leaves alone keep the allocation's all-ones.
        for i in range(n):
            if i not in seen_rows(parents, tokens, mask, tok):
                assert (mask[i].numpy() == -1).all(), f"trial {trial} node {i} was written"
    assert checked > 100, checked
    assert sieve.sglang._traverse_tree_around.native_calls == native_before + 40


@pytest.mark.parametrize("name,parser", [("qwen3", "qwen3"), ("llama3-r1", "deepseek_r1")])
def test_vllm_reasoning_then_json(shared, monkeypatch, tmp_path, name, parser):
    """vLLM's own reasoning handling (`--reasoning-parser qwen3` or `deepseek_r1`) in front of
    sieve: rows are unconstrained until `</think>`, then the grammar's (equal to a
    `sieve.Gate`d matcher's); the grammar sees only what follows the reasoning. No
    speculative tokens."""
    pytest.importorskip("torch")
    mods = vllm_modules()
    _, _, StructuredOutputManager, _, _ = mods
    from vllm.reasoning import ReasoningParserManager

    monkeypatch.setenv("SIEVE_VLLM_REPLACE", "guidance")
    original = StructuredOutputManager.grammar_init
    sieve.vllm.register()
    try:
        hf = hf_tokenizer(shared, name, tmp_path)
        vocab_size = len(hf)
        manager = vllm_manager(StructuredOutputManager, hf, vocab_size, 4, 0, workers=1,
                               reasoning_parser=parser)
        manager.reasoner_cls = ReasoningParserManager.get_reasoning_parser(parser)
        req = vllm_request(mods, "think", "json", SCHEMA, "guidance")
        manager.grammar_init(req)
        manager.executor.shutdown(wait=True)
        assert isinstance(req.structured_output_request.grammar, sieve.vllm.SieveGrammar)

        tok = sieve.Tokenizer.from_huggingface(hf, n_vocab=vocab_size)
        end = hf.convert_tokens_to_ids("</think>")
        walk = tok.greedy_tokenize(b"Ages are integers.") + [end] + \
            walk_tokens(tok, '{"name": "Di", "age": 5}', tok.eos_token_ids[0])
        ref = sieve.Matcher(sieve.Grammar.json_schema(tok, json.dumps(SCHEMA)),
                            gate=sieve.Gate(tok, reasoning_end=[end]))
        constrained = 0
        for t in walk:
            bitmask = manager.grammar_bitmask({"think": req}, ["think"], {})
            words = bitmask.shape[1]
            if ref.gate_phase() == "reasoning":
                # vLLM masks the implicit reasoning ends (e.g. `<tool_call>`) that sieve's
                # grammar would reject as the first content token (asked by validate_tokens).
                masked = req.structured_output_request.masked_reasoning_end_ids or ()
                start = sieve.Matcher(sieve.Grammar.json_schema(tok, json.dumps(SCHEMA)))
                assert all(not start.is_allowed(m) for m in masked)
                want = np.full(words, -1, np.int32).view(np.uint32)
                for m in masked:
                    want[m // 32] &= ~np.uint32(1 << (m % 32))
                want = want.view(np.int32)
            else:
                want, constrained = ref_row(ref, words), constrained + 1
            assert np.array_equal(bitmask[0], want), f"after {ref.num_tokens} tokens"
            req.all_token_ids.append(t)
            assert manager.accept_tokens(req, [t])
            assert ref.consume_token(t)
        assert constrained > 5 and req.structured_output_request.grammar.is_terminated()
    finally:
        StructuredOutputManager.grammar_init = original


def test_sglang_strict_thinking(shared, monkeypatch):
    """`--enable-strict-thinking` with the qwen3 parser: while reasoning, the parser's
    excluded tokens (`<tool_call>`, `<|im_end|>`, ...) are masked and refused, and
    `SGLANG_MAX_THINK_TOKENS` forces `</think>`; a request with a grammar then follows it,
    and one without gets SGLang's filter-only object, free after the reasoning."""
    pytest.importorskip("torch")
    base, _, SamplingBatchInfo, get_context = sglang_modules()
    from sglang.srt.plugins import load_plugins

    load_plugins()
    monkeypatch.setenv("SGLANG_MAX_THINK_TOKENS", "4")
    hf = hf_tokenizer(shared, "qwen3")
    with get_context().override_server_args(grammar_backend="sieve", reasoning_parser="qwen3",
                                            enable_strict_thinking=True):
        manager = sglang_manager(hf, len(hf), "qwen3")
    assert manager.grammar_backend.enable_strict_thinking
    tok = sieve.Tokenizer.from_huggingface(hf)
    excluded = [hf.convert_tokens_to_ids(t) for t in ("<tool_call>", "<|im_end|>")]
    end = hf.convert_tokens_to_ids("</think>")
    with_grammar = FakeReq("g", "regex", "[0-9]+", reasoning=True)
    free = FakeReq("free", "json", None, reasoning=True)
    free.sampling_params.json_schema = None  # no grammar: strict filter only
    sglang_admit(manager, [with_grammar])
    assert manager.process_req_with_grammar(free) is False
    assert free.grammar is not None and not isinstance(free.grammar, base.InvalidGrammarObject)
    vocab_size = len(hf)
    for req in (with_grammar, free):
        g = req.grammar
        mask = g.allocate_vocab_mask(vocab_size, 1, "cpu")
        g.fill_vocab_mask(mask, 0)
        allowed = set(np.flatnonzero(sieve.unpack_bitmask(mask[0].numpy(), vocab_size)))
        assert not allowed & set(excluded) and len(allowed) > vocab_size - 10
        with pytest.raises(ValueError):
            g.accept_token(excluded[0])
        for text in (b"a", b"b", b"c", b"d"):
            g.accept_token(tok.greedy_tokenize(text)[0])
        mask.fill_(-1)
        g.fill_vocab_mask(mask, 0)
        assert np.flatnonzero(sieve.unpack_bitmask(mask[0].numpy(), vocab_size)).tolist() \
            == [end], "the budget spent: only </think>"
        g.accept_token(end)
        g.fill_vocab_mask(mask, 0)
        allowed = np.flatnonzero(sieve.unpack_bitmask(mask[0].numpy(), vocab_size))
        if req is free:
            assert len(allowed) == vocab_size, "free after the reasoning"
            g.accept_token(excluded[1])
            g.rollback(2)
            assert g.matcher.gate_phase() == "reasoning"
        else:
            digits = sieve.Matcher(sieve.Grammar.regex(tok, "[0-9]+")).allowed_tokens()
            assert allowed.tolist() == digits
