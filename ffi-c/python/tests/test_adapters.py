"""The vLLM-, SGLang- and transformers-shaped adapters drive a grammar the way those
engines call them."""

import json

import numpy as np
import pytest

import sieve
import sieve.sglang
from sieve.sglang import SieveGrammarBackend
from sieve.vllm import SieveBackend


def greedy_text(tok, matcher_step, fill, steps=200):
    """Drives a grammar by always taking the lowest allowed non-EOS token; returns bytes."""
    out = []
    for _ in range(steps):
        allowed = fill()
        non_eos = [t for t in allowed if t not in tok.eos_token_ids]
        if not non_eos:
            break
        t = non_eos[-1] if len(out) % 2 else non_eos[0]
        matcher_step(t)
        out.append(t)
    return tok.decode_bytes(out)


def test_vllm_shape(llama3):
    torch = pytest.importorskip("torch")
    backend = SieveBackend(None, tokenizer=llama3, vocab_size=llama3.vocab_size)
    bitmask = backend.allocate_token_bitmask(12)
    assert bitmask.shape == (12, llama3.mask_words) and bitmask.dtype == torch.int32
    g = backend.compile_grammar("CHOICE", json.dumps(["yes", "no", "maybe"]))
    yes = llama3.greedy_tokenize(b"yes")
    assert g.validate_tokens(yes + [llama3.greedy_tokenize(b"!")[0]]) == yes
    assert g.accept_tokens("r1", yes)
    g.fill_bitmask(bitmask, 3)
    allowed = np.flatnonzero(sieve.unpack_bitmask(bitmask[3].numpy(), llama3.vocab_size))
    assert set(allowed.tolist()) == set(llama3.eos_token_ids)
    assert g.accept_tokens("r1", [llama3.eos_token_ids[0]]) and g.is_terminated()
    g.rollback(1)
    assert not g.is_terminated()
    g.reset()
    assert not g.accept_tokens("r1", llama3.greedy_tokenize(b"nope"))

    gs = [backend.compile_grammar(kind, spec) for kind, spec in [
        ("JSON", json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}})),
        ("JSON_OBJECT", ""),
        ("REGEX", "[a-c]{2,4}"),
        ("GRAMMAR", 'root ::= "x" [0-9]+'),
        ("GRAMMAR", 'start: "y" /[0-9]+/'),
        ("STRUCTURAL_TAG", json.dumps({"type": "structural_tag", "format": {
            "type": "const_string", "value": "hi"}})),
    ]]
    drafts = [llama3.greedy_tokenize(t) for t in (b'{"a', b"{", b"ab", b"x1", b"y2", b"h")]
    rows = sum(len(d) + 1 for d in drafts)
    bm = torch.zeros((rows, llama3.mask_words), dtype=torch.int32)
    filled = backend.fill_bitmasks(gs, bm, drafts)
    assert filled == [len(d) + 1 for d in drafts]
    for g in gs:
        assert g.matcher.num_tokens == 0
    with pytest.raises(ValueError):
        backend.compile_grammar("XML", "<a/>")


def test_sglang_shape(llama3):
    pytest.importorskip("torch")
    backend = SieveGrammarBackend(llama3)
    bad = backend.dispatch_ebnf("root ::= (")
    assert bad.error_message and backend.last_error is not None
    assert not isinstance(bad, sieve.sglang.SieveGrammarObject)
    g = backend.dispatch_json('{"type": "object", "properties": {"k": {"const": "v"}}, '
                              '"required": ["k"], "additionalProperties": false}')
    mask = g.allocate_vocab_mask(llama3.vocab_size, 2, "cpu")

    def fill():
        g.fill_vocab_mask(mask, 1)
        return np.flatnonzero(sieve.unpack_bitmask(mask[1].numpy(), llama3.vocab_size)).tolist()

    text = greedy_text(llama3, g.accept_token, fill)
    assert json.loads(text) == {"k": "v"}
    assert g.matcher.is_accepting()
    copy = g.copy()
    assert copy.matcher.num_tokens == 0
    assert copy.try_jump_forward(None) is None, "'{' may start a longer token: not forced"
    r = backend.dispatch_regex("hello, world[0-9]")
    forced = r.try_jump_forward(None)
    assert forced is not None and forced[1] == "hello, world"
    assert llama3.decode_bytes(forced[0]) == b"hello, world"
    with pytest.raises(ValueError):
        g.accept_token(llama3.greedy_tokenize(b"x")[0])
    logits = __import__("torch").zeros((2, llama3.vocab_size))
    g.apply_vocab_mask(logits, mask)
    assert (logits[1] == float("-inf")).sum() > llama3.vocab_size - 100


def test_logits_processor_with_a_fake_model(llama3):
    torch = pytest.importorskip("torch")
    from sieve.hf import SieveLogitsProcessor

    g = sieve.Grammar.regex(llama3, "(cat|dog)s?")
    proc = SieveLogitsProcessor(g)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    text = [b"", b""]
    for step in range(6):
        scores = torch.zeros((2, llama3.vocab_size))
        scores[:, llama3.greedy_tokenize(b"dog")[0]] = 5.0  # the "model" prefers dog
        scores[:, llama3.eos_token_ids[0]] = 1.0 if step else 0.0
        out = proc(ids, scores)
        nxt = out.argmax(dim=1)
        if (nxt == llama3.eos_token_ids[0]).all():
            break
        for i in range(2):
            text[i] += llama3.decode_bytes([int(nxt[i])])
        ids = torch.cat([ids, nxt[:, None]], dim=1)
    assert all(t in (b"cat", b"cats", b"dog", b"dogs") for t in text), text
    assert all(m.is_accepting() for m in proc.matchers)
