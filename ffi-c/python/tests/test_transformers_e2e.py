"""End to end: a `transformers` generation on CPU under a sieve JSON Schema.

SmolLM2-135M-Instruct, loaded by transformers from a GGUF file ($SIEVE_MODEL_GGUF, default
~/.cache/sieve/SmolLM2-135M-Instruct.Q4_1.gguf), decodes greedily with
`sieve.hf.SieveLogitsProcessor` in its logits processors; the output must be JSON that
satisfies the schema, and the processor's matcher must have reached the end of the grammar
(so its masks, not luck, shaped the output).

Skips (torch, transformers or gguf missing, no GGUF file) are announced on stderr with a
line starting `SKIP:` as well as through pytest.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

import sieve

DEFAULT_GGUF = Path.home() / ".cache" / "sieve" / "SmolLM2-135M-Instruct.Q4_1.gguf"

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}

MAX_NEW_TOKENS = 48


def skip(reason):
    print(f"SKIP: test_transformers_e2e: {reason}", file=sys.stderr, flush=True)
    pytest.skip(reason)


def check_schema(value):
    """SCHEMA by hand (jsonschema too, when installed)."""
    assert isinstance(value, dict), f"not an object: {value!r}"
    assert set(value) == {"name", "age"}, f"keys {sorted(value)}, want ['age', 'name']"
    assert isinstance(value["name"], str), f"name is not a string: {value['name']!r}"
    assert isinstance(value["age"], int) and not isinstance(value["age"], bool), (
        f"age is not an integer: {value['age']!r}")
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(value, SCHEMA)


@pytest.fixture(scope="module")
def model_and_tokenizer():
    # Before transformers (huggingface_hub reads it at import): the model is a local file.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for module in ("torch", "transformers", "gguf"):
        try:
            __import__(module)
        except ImportError:
            skip(f"the `{module}` package is not installed")
    path = Path(os.environ.get("SIEVE_MODEL_GGUF") or DEFAULT_GGUF).expanduser()
    if not path.is_file():
        skip(f"no GGUF model at {path} (set SIEVE_MODEL_GGUF)")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    hf_tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    model.eval()
    return model, hf_tok


def test_generate_json_schema(model_and_tokenizer):
    import torch
    from transformers import LogitsProcessorList

    from sieve.hf import SieveLogitsProcessor

    model, hf_tok = model_and_tokenizer
    tok = sieve.Tokenizer.from_huggingface(hf_tok, n_vocab=model.config.vocab_size)
    assert tok.vocab_size == model.config.vocab_size
    grammar = sieve.Grammar.json_schema(tok, SCHEMA)
    processor = SieveLogitsProcessor(grammar)

    messages = [
        {"role": "system", "content": "You reply with JSON only."},
        {"role": "user", "content": "Describe a person as a JSON object with a string "
                                    "\"name\" and an integer \"age\"."},
    ]
    prompt = hf_tok.apply_chat_template(messages, add_generation_prompt=True,
                                        return_tensors="pt", return_dict=True)
    input_ids = prompt["input_ids"]
    attention_mask = prompt.get("attention_mask")
    eos = list(tok.eos_token_ids)
    assert eos, "the tokenizer has no EOS token"

    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(
            input_ids,
            attention_mask=attention_mask,
            logits_processor=LogitsProcessorList([processor]),
            do_sample=False,
            max_new_tokens=MAX_NEW_TOKENS,
            eos_token_id=eos,
            pad_token_id=eos[0],
        )
    elapsed = time.perf_counter() - start
    new_tokens = out[0, input_ids.shape[1]:].tolist()
    text = hf_tok.decode(new_tokens, skip_special_tokens=True)
    print(f"generated {len(new_tokens)} tokens in {elapsed:.1f} s: {text!r}", file=sys.stderr)

    value = json.loads(text)
    check_schema(value)

    # sieve's masks were used: the processor made the matcher, and the matcher followed the
    # generated tokens to the end of the grammar.
    assert processor.matchers is not None and len(processor.matchers) == 1
    m = processor.matchers[0]
    assert not m.is_error(), m.get_error()
    # The processor feeds its matcher the tokens generated since its previous call, and there
    # is no call after the last token: the matcher has consumed all but that one, which its
    # mask allowed.
    assert m.num_tokens == len(new_tokens) - 1, (m.num_tokens, len(new_tokens))
    assert m.is_allowed(new_tokens[-1])
    if new_tokens[-1] in eos:
        # Ended on EOS, which the grammar allows only where the document is complete.
        assert m.is_accepting()
    else:
        assert len(new_tokens) == MAX_NEW_TOKENS
    # Replaying the output through a fresh matcher: every generated token was allowed.
    replay = sieve.Matcher(grammar)
    for t in new_tokens:
        assert replay.is_allowed(t), f"token {t} ({hf_tok.decode([t])!r}) was not allowed"
        assert replay.consume_token(t)
    assert replay.is_accepting() or replay.is_stopped()


def test_generate_reasoning_then_json(model_and_tokenizer):
    """A reasoning gate in front of the schema: free text until the end token, then JSON.
    SmolLM2 has no `</think>` token, so its `<|im_start|>` stands in for it; a reasoning
    budget of 12 tokens makes the gate force it, so the test does not depend on the model
    choosing to stop thinking."""
    import torch
    from transformers import LogitsProcessorList

    from sieve.hf import SieveLogitsProcessor

    model, hf_tok = model_and_tokenizer
    tok = sieve.Tokenizer.from_huggingface(hf_tok, n_vocab=model.config.vocab_size)
    end = "<|im_start|>"
    end_id = hf_tok.convert_tokens_to_ids(end)
    gate = sieve.Gate(tok, reasoning_end=[end], reasoning_budget=12)
    assert gate.reasoning_end_tokens == [end_id]
    grammar = sieve.Grammar.json_schema(tok, SCHEMA)
    processor = SieveLogitsProcessor(grammar, gate=gate)
    messages = [
        {"role": "system", "content": "Think step by step, then reply with JSON."},
        {"role": "user", "content": "Describe a person as a JSON object with a string "
                                    "\"name\" and an integer \"age\"."},
    ]
    prompt = hf_tok.apply_chat_template(messages, add_generation_prompt=True,
                                        return_tensors="pt", return_dict=True)
    input_ids = prompt["input_ids"]
    eos = list(tok.eos_token_ids)
    with torch.no_grad():
        out = model.generate(input_ids, attention_mask=prompt.get("attention_mask"),
                             logits_processor=LogitsProcessorList([processor]),
                             do_sample=False, max_new_tokens=12 + 1 + MAX_NEW_TOKENS,
                             eos_token_id=eos, pad_token_id=eos[0])
    new_tokens = out[0, input_ids.shape[1]:].tolist()
    assert end_id in new_tokens, "the reasoning never ended"
    cut = new_tokens.index(end_id)
    assert cut <= 12, f"the reasoning ran {cut} tokens past its budget of 12"
    thought = hf_tok.decode(new_tokens[:cut], skip_special_tokens=True)
    answer = hf_tok.decode(new_tokens[cut + 1:], skip_special_tokens=True)
    print(f"reasoning {thought!r}, then {answer!r}", file=sys.stderr)
    check_schema(json.loads(answer))
    replay = sieve.Matcher(grammar, gate=gate)
    for t in new_tokens:
        assert replay.is_allowed(t), f"token {t} ({hf_tok.decode([t])!r}) was not allowed"
        assert replay.consume_token(t)
    assert replay.gate_phase() == "active"
    assert replay.is_accepting() or replay.is_stopped()
