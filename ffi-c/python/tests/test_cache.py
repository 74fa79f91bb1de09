"""The tokenizer's compile cache from Python: the same request again is a hit whose masks
are a cold compile's, an error comes back the same, and off compiles anew."""

import numpy as np
import pytest

import sieve

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 2},
                                           "b": {"enum": ["x", "yz"]}},
          "required": ["a"]}


def masks(grammar, tokens, words):
    m = sieve.Matcher(grammar)
    out = []
    bitmask = np.zeros((1, words), dtype=np.int32)
    for t in tokens:
        m.fill_next_token_bitmask(bitmask, 0)
        out.append(bitmask[0].tobytes())
        assert m.consume_token(t)
    assert m.is_accepting()
    return out


def test_compile_cache_hits_and_matches_a_cold_compile(small_vocab):
    tok = small_vocab
    assert tok.compile_cache_stats()["max_bytes"] == 0  # off until asked
    cold = sieve.Grammar.json_schema(tok, SCHEMA)
    tok.set_compile_cache(8 << 20)
    try:
        first = sieve.Grammar.json_schema(tok, SCHEMA)
        again = sieve.Grammar.json_schema(tok, dict(SCHEMA))
        st = tok.compile_cache_stats()
        assert (st["hits"], st["misses"], st["entries"]) == (1, 1, 1)
        assert 0 < st["bytes"] <= st["max_bytes"]
        # `{"a":5}` spelled with the table's tokens.
        ids = [0, 6, 17, 6, 5, 12, 1]
        words = tok.mask_words
        want = masks(cold, ids, words)
        assert masks(first, ids, words) == want
        assert masks(again, ids, words) == want

        bad = {"$ref": "https://example.invalid/s.json"}
        errors = []
        for _ in range(2):
            with pytest.raises(sieve.GrammarError) as e:
                sieve.Grammar.json_schema(tok, bad)
            errors.append(str(e.value))
        assert errors[0] == errors[1]
        st = tok.compile_cache_stats()
        assert (st["hits"], st["misses"]) == (2, 2)
    finally:
        tok.set_compile_cache(0)
    st = tok.compile_cache_stats()
    assert (st["entries"], st["bytes"], st["max_bytes"]) == (0, 0, 0)


def test_engine_backends_turn_the_cache_on(small_vocab):
    from sieve.sglang import SieveGrammarBackend
    from sieve.vllm import SieveBackend

    tok = small_vocab
    try:
        backend = SieveBackend(None, tokenizer=tok, vocab_size=tok.vocab_size)
        assert tok.compile_cache_stats()["max_bytes"] == 512 << 20
        spec = '{"type": "object", "properties": {"a": {"type": "integer"}}}'
        before = tok.compile_cache_stats()
        backend.compile_grammar("JSON", spec)
        backend.compile_grammar("JSON", spec)
        after = tok.compile_cache_stats()
        assert (after["misses"], after["hits"]) == (before["misses"] + 1, before["hits"] + 1)
        # A cache already on is left as it is; 0 does not touch it.
        tok.set_compile_cache(1 << 20)
        SieveGrammarBackend(tok)
        SieveBackend(None, tokenizer=tok, vocab_size=tok.vocab_size, compile_cache_bytes=0)
        assert tok.compile_cache_stats()["max_bytes"] == 1 << 20
        assert SieveGrammarBackend(tok).dispatch_json(spec) is not None
        assert tok.compile_cache_stats()["hits"] == after["hits"] + 1
    finally:
        tok.set_compile_cache(0)
