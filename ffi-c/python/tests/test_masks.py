"""The Python package's masks equal the Rust matcher's, read through the C ABI (another
shell over the same core), on random walks over MaskBench schemas with the Llama 3
tokenizer; and the zero-copy paths (numpy, torch, bytes) agree with each other."""

import random

import numpy as np
import pytest

import sieve

from conftest import maskbench_schemas, shared_dir, skip


def walk(py_matcher, c_matcher, capi, words, rng, steps):
    """Steps both matchers with the same random allowed tokens; returns the masks seen."""
    bitmask = np.zeros((3, words), dtype=np.int32)
    seen = 0
    for _ in range(steps):
        ok = py_matcher.fill_next_token_bitmask(bitmask, 1)
        st, c_mask = capi.mask(c_matcher, words)
        assert ok == (st == 0)
        assert bitmask[1].tobytes() == c_mask, "mask differs from the C ABI's"
        assert not bitmask[0].any() and not bitmask[2].any(), "other rows were written"
        seen += 1
        allowed = np.flatnonzero(sieve.unpack_bitmask(bitmask[1], 32 * words))
        if len(allowed) == 0:
            break
        t = int(rng.choice(list(allowed)))
        assert py_matcher.consume_token(t)
        assert capi.consume(c_matcher, t) == 0
        if py_matcher.is_stopped():
            break
    return seen


def test_maskbench_walks_match_the_c_abi(shared, llama3, capi):
    tok_json = (shared / "tokenizers" / "llama3.json").read_bytes()
    ctok = capi.tokenizer(tok_json)
    rng = random.Random(7)
    masks = compiled = 0
    for name, schema in maskbench_schemas(shared, 24):
        cg = capi.grammar(ctok, 3, schema)
        try:
            g = sieve.Grammar.json_schema(llama3, schema)
        except sieve.GrammarError:
            assert cg is None, f"{name}: the C ABI compiles what Python refuses"
            continue
        assert cg is not None, f"{name}: Python compiles what the C ABI refuses"
        compiled += 1
        masks += walk(sieve.Matcher(g), capi.matcher(cg), capi, llama3.mask_words, rng, 40)
    assert compiled >= 18, f"only {compiled} of 24 schemas compiled"
    assert masks >= 300, f"only {masks} masks compared"


@pytest.mark.parametrize("kind,syntax,text", [
    (1, "lark", 'start: "say " NAME\nNAME: /[a-z]{1,8}/'),
    (2, "regex", r"-?(0|[1-9][0-9]{0,5})(\.[0-9]{1,3})?"),
    (5, "gbnf", 'root ::= "[" item ("," item)* "]"\nitem ::= [0-9]+ | "\\"" [a-z]* "\\""'),
])
def test_other_syntaxes_match_the_c_abi(shared, llama3, capi, kind, syntax, text):
    ctok = capi.tokenizer((shared / "tokenizers" / "llama3.json").read_bytes())
    g = sieve.Grammar(llama3, syntax, text)
    cg = capi.grammar(ctok, kind, text)
    assert cg is not None
    rng = random.Random(kind)
    for _ in range(5):
        assert walk(sieve.Matcher(g), capi.matcher(cg), capi, llama3.mask_words, rng, 30) > 1


def test_numpy_torch_and_bytes_agree(llama3):
    torch = pytest.importorskip("torch")
    g = sieve.Grammar.json_schema(llama3, {"type": "array", "items": {"type": "integer"}})
    m = sieve.Matcher(g)
    assert m.consume_tokens(llama3.greedy_tokenize(b"[1, 2"))
    a = sieve.allocate_token_bitmask(2, llama3.vocab_size, backend="numpy")
    t = sieve.allocate_token_bitmask(2, llama3.vocab_size, backend="torch")
    m.fill_next_token_bitmask(a, 1)
    m.fill_next_token_bitmask(t, 0)
    assert a[1].tobytes() == t[0].numpy().tobytes() == m.compute_bitmask()
    assert (a[0] == -1).all(), "a row not filled keeps its contents"
    allowed = set(m.allowed_tokens())
    unpacked = set(np.flatnonzero(sieve.unpack_bitmask(a[1], llama3.vocab_size)).tolist())
    assert allowed == unpacked
    assert llama3.greedy_tokenize(b"]")[0] in allowed
    assert all(m.is_allowed(x) for x in list(allowed)[:50])


def test_wider_rows_are_zeroed_past_the_vocabulary(small_vocab):
    g = sieve.Grammar.regex(small_vocab, "ab|12")
    m = sieve.Matcher(g)
    bm = np.full((1, 8), -1, dtype=np.int32)  # 256 bits for 60 tokens
    assert m.fill_next_token_bitmask(bm)
    assert not bm[0, 2:].any()
    allowed = {small_vocab.token_bytes(t) for t in m.allowed_tokens()}
    assert allowed == {b"a", b"ab", b"1", b"12"}


def test_tiktoken_and_huggingface_constructors(shared):
    tokenizers = pytest.importorskip("tokenizers")
    path = shared / "tokenizers" / "llama3.json"
    hf = tokenizers.Tokenizer.from_file(str(path))
    a = sieve.Tokenizer.from_huggingface(hf)
    b = sieve.Tokenizer.from_file(str(path))
    assert a.vocab_size == b.vocab_size == hf.get_vocab_size()
    assert a.eos_token_ids == b.eos_token_ids
    for t in (0, 1000, 128000, 128009):
        assert a.token_bytes(t) == b.token_bytes(t)
    padded = sieve.Tokenizer.from_huggingface(hf, n_vocab=a.vocab_size + 100)
    assert padded.vocab_size == a.vocab_size + 100
    o200k = sieve.Tokenizer.from_tiktoken("o200k_base")
    assert o200k.vocab_size > 199_000 and o200k.eos_token_ids
    assert o200k.decode_bytes(o200k.greedy_tokenize(b"hello world")) == b"hello world"
