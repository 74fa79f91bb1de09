"""Bad input raises a Python exception with what went wrong (and where); nothing crashes."""

import random

import numpy as np
import pytest

import sieve


def test_grammar_errors_carry_typed_locations(small_vocab):
    with pytest.raises(sieve.GrammarError) as e:
        sieve.Grammar.lark(small_vocab, 'start: "a" b\nb: "x" | c')
    err = e.value
    assert err.kind == "undefined_symbol"
    assert (err.line, err.column) == (2, 10)
    assert err.end_line == 2 and err.end_column > err.column
    assert err.pointer is None
    assert "c" in err.message and not err.message.startswith("2:")

    with pytest.raises(sieve.GrammarError) as e:
        sieve.Grammar.json_schema(small_vocab, {"type": "object",
                                                "properties": {"a": {"type": "strin"}}})
    assert e.value.pointer == "/properties/a"
    assert e.value.line is None

    with pytest.raises(sieve.GrammarError) as e:
        sieve.Grammar.gbnf(small_vocab, 'root ::= item\nitem ::= "a" item2')
    assert e.value.kind == "undefined_symbol" and e.value.line == 2

    with pytest.raises(sieve.GrammarError) as e:
        sieve.Grammar.gbnf(small_vocab, 'expr ::= expr "+" "1" | "1"', root="expr")
    assert e.value.kind in ("unsupported", "syntax")
    sieve.Grammar.gbnf(small_vocab, 'expr ::= expr "+" "1" | "1"', root="expr",
                       allow_left_recursion=True)

    with pytest.raises(sieve.GrammarError) as e:
        sieve.Grammar.regex(small_vocab, "(a")
    assert e.value.kind == "invalid_regex"

    assert issubclass(sieve.GrammarError, sieve.SieveError)


def test_limits_are_typed_errors(small_vocab):
    with pytest.raises(sieve.GrammarError) as e:
        sieve.Grammar.regex(small_vocab, "a{1000}", limits={"max_repeat": 10})
    assert e.value.kind == "limit:max_repeat"
    with pytest.raises(ValueError, match="unknown limit"):
        sieve.Grammar.regex(small_vocab, "a", limits={"max_nothing": 1})


def test_bad_arguments_raise(small_vocab):
    with pytest.raises(ValueError, match="unknown grammar syntax"):
        sieve.Grammar(small_vocab, "yaml", "a: b")
    with pytest.raises(ValueError):
        sieve.JsonOptions(whitespace="lots")
    with pytest.raises(ValueError):
        sieve.JsonOptions(property_order="alphabetical")
    with pytest.raises(ValueError):
        sieve.Tokenizer.from_json("{not json")
    with pytest.raises(ValueError):
        sieve.Tokenizer.from_tiktoken("p50k_base")
    with pytest.raises(ValueError):
        sieve.Tokenizer.from_table([b"a"], special=[], eos=[5])
    with pytest.raises(TypeError):
        sieve.Tokenizer.from_huggingface(object())
    with pytest.raises(ValueError):
        sieve.Tokenizer.from_file("/nonexistent/tokenizer.json")
    with pytest.raises(TypeError):
        sieve.Grammar.json_schema(small_vocab, {"a": object()})


def test_bad_tokens_and_rollbacks(small_vocab):
    m = sieve.Matcher(sieve.Grammar.regex(small_vocab, "ab"))
    with pytest.raises(ValueError, match="out of range"):
        m.consume_token(small_vocab.vocab_size)
    with pytest.raises(OverflowError):
        m.consume_token(-1)
    with pytest.raises(ValueError):
        m.validate_tokens([0, 10_000])
    assert not m.is_error(), "a refused argument does not change the matcher"
    with pytest.raises(ValueError):
        m.rollback(1)
    with pytest.raises(OverflowError):
        m.rollback(-1)
    x = small_vocab.greedy_tokenize(b"x")[0]
    assert not m.consume_token(x)
    assert m.is_error() and "not allowed" in m.get_error()
    bm = np.zeros((1, small_vocab.mask_words), dtype=np.int32)
    assert m.fill_next_token_bitmask(bm) is False
    allowed = np.flatnonzero(sieve.unpack_bitmask(bm[0], small_vocab.vocab_size)).tolist()
    assert allowed == small_vocab.eos_token_ids, "an errored matcher allows only EOS"
    m.reset()
    assert not m.is_error() and m.consume_token(small_vocab.greedy_tokenize(b"a")[0])


def test_bad_bitmasks_raise(small_vocab):
    m = sieve.Matcher(sieve.Grammar.regex(small_vocab, "ab"))
    w = small_vocab.mask_words
    bad = [
        (np.zeros((1, w), dtype=np.int64), TypeError),
        (np.zeros((1, w), dtype=np.float32), TypeError),
        (np.zeros((1, w - 1), dtype=np.int32), ValueError),
        (np.zeros((2, w, 1), dtype=np.int32), ValueError),
        (np.zeros((w, 2), dtype=np.int32).T, ValueError),  # not C-contiguous
        (np.zeros((1, 2 * w), dtype=np.int32)[:, ::2], ValueError),
        ([0] * w, TypeError),
        (b"\0" * 4 * w, TypeError),
    ]
    ro = np.zeros((1, w), dtype=np.int32)
    ro.setflags(write=False)
    bad.append((ro, ValueError))
    for arr, exc in bad:
        with pytest.raises(exc):
            m.fill_next_token_bitmask(arr)
        with pytest.raises(exc):
            sieve.fill_next_token_bitmask_batch([m], arr)
    with pytest.raises(IndexError):
        m.fill_next_token_bitmask(np.zeros((2, w), dtype=np.int32), 2)
    with pytest.raises(OverflowError):
        m.fill_next_token_bitmask(np.zeros((2, w), dtype=np.int32), -1)


def test_bad_torch_tensors_raise(small_vocab):
    torch = pytest.importorskip("torch")
    m = sieve.Matcher(sieve.Grammar.regex(small_vocab, "ab"))
    w = small_vocab.mask_words
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask(torch.zeros((1, w), dtype=torch.int64))
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(torch.zeros((w, 2), dtype=torch.int32).t())
    if hasattr(torch, "device"):
        meta = torch.zeros((1, w), dtype=torch.int32, device="meta")
        with pytest.raises(ValueError, match="meta"):
            m.fill_next_token_bitmask(meta)


def test_random_garbage_grammars_never_crash(small_vocab):
    """Random texts in every syntax: each compiles or raises GrammarError."""
    rng = random.Random(1)
    alphabet = 'ab()[]{}|*+?:"\\/^$.-=<>!%#\n ' + "root::=start:"
    compiled = raised = 0
    for i in range(600):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        syntax = ["lark", "gbnf", "regex", "json_schema", "structural_tag", "llguidance"][i % 6]
        try:
            g = sieve.Grammar(small_vocab, syntax, text)
            sieve.Matcher(g).allowed_tokens()
            compiled += 1
        except sieve.GrammarError:
            raised += 1
    assert compiled + raised == 600 and raised > 0
