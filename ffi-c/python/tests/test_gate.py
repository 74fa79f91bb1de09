"""`sieve.Gate` and `sieve.presets`: the phases seen from Python, against what they mean
(every token free while reasoning, then exactly the plain grammar's masks)."""

import json

import pytest

import sieve
import sieve.presets

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.fixture(scope="module")
def qwen3(shared):
    return sieve.Tokenizer.from_file(str(shared / "tokenizers" / "qwen3.json"))


def test_reasoning_then_the_grammar(qwen3):
    tok = qwen3
    g = sieve.Grammar.json_schema(tok, SCHEMA)
    gate = sieve.presets.reasoning_gate(tok, "qwen3")
    (end,) = gate.reasoning_end_tokens
    m, plain = sieve.Matcher(g, gate=gate), sieve.Matcher(g)
    assert m.gate_phase() == "reasoning" and m.is_unconstrained()
    for t in tok.greedy_tokenize(b"I think {so}."):
        assert len(m.allowed_tokens()) == tok.vocab_size
        assert m.consume_token(t)
    assert m.consume_token(end) and m.gate_phase() == "active"
    for t in tok.greedy_tokenize(b'{"a": 12}') + [tok.eos_token_id]:
        assert m.allowed_tokens() == plain.allowed_tokens()
        assert m.consume_token(t) and plain.consume_token(t)
    assert m.is_stopped()
    n = len(tok.greedy_tokenize(b'{"a": 12}')) + 2
    m.rollback(n)
    assert m.gate_phase() == "reasoning", "rolled back across the end token"


def test_budget_forces_the_end(qwen3):
    tok = qwen3
    gate = sieve.Gate(tok, reasoning_end=["</think>"], reasoning_budget=3)
    assert gate.reasoning_budget == 3
    m = sieve.Matcher(sieve.Grammar.regex(tok, "[0-9]+"), gate=gate)
    for text in (b"a", b"b", b"c"):
        m.consume_token(tok.greedy_tokenize(text)[0])
    assert m.allowed_tokens() == gate.reasoning_end_tokens
    assert not m.is_unconstrained()


def test_triggers(qwen3):
    tok = qwen3
    tag = sieve.presets.tool_calls("qwen3", [{"type": "function", "function": {
        "name": "f", "parameters": SCHEMA}}])
    assert tag["type"] == "structural_tag"
    g = sieve.Grammar.regex(tok, "<x>[0-9]+</x>")
    gate = sieve.Gate(tok, trigger_strings=["<x>"])
    assert gate.lazy
    m = sieve.Matcher(g, gate=gate)
    assert m.gate_phase() == "waiting"
    for t in tok.greedy_tokenize(b"free text <x>"):
        assert m.consume_token(t)
    assert m.gate_phase() == "active"
    plain = sieve.Matcher(g)
    assert plain.consume_tokens(tok.greedy_tokenize(b"<x>"))
    assert m.allowed_tokens() == plain.allowed_tokens(), "fed from the trigger's start"
    for t in tok.greedy_tokenize(b"42</x>"):
        assert m.is_allowed(t) and m.consume_token(t)
    assert m.is_accepting()


def test_errors(qwen3, llama3):
    tok = qwen3
    with pytest.raises(ValueError, match="not a special token"):
        sieve.Gate(tok, reasoning_end=["</thinking>"])
    with pytest.raises(ValueError, match="needs reasoning_end"):
        sieve.Gate(tok, reasoning_budget=4)
    with pytest.raises(sieve.GrammarError):
        sieve.Gate(tok, trigger_patterns=["a*"])  # matches the empty string
    with pytest.raises(sieve.GrammarError):
        sieve.Gate(tok, reasoning_end=[tok.vocab_size])
    with pytest.raises(ValueError, match="different sieve.Tokenizer"):
        sieve.Matcher(sieve.Grammar.regex(llama3, "a"), gate=sieve.Gate(tok, reasoning_end=[0]))
    with pytest.raises(sieve.GrammarError):
        sieve.presets.tool_calls("nope", [])
    assert "qwen3" in sieve.presets.families()
    assert json.dumps(sieve.presets.tool_calls("llama3", "[]", tool_choice="none"))
