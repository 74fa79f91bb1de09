"""sieve as vLLM's structured-output backend (`vllm/v1/structured_output/`).

With vLLM installed, `SieveBackend` and `SieveGrammar` subclass vLLM's own
`StructuredOutputBackend` and `StructuredOutputGrammar` ABCs (`backend_types.py`); without
it they are plain classes with the same methods.

vLLM picks its backend from a fixed list (`StructuredOutputsConfig.backend` is a `Literal`;
the RFC for pluggable backends is open), so no option can name sieve. What
`pip install ./ffi-c/python` offers instead is a `vllm.general_plugins` entry point
(`sieve = sieve.vllm:register`): with `SIEVE_VLLM_REPLACE=guidance` (or `xgrammar`) in
the environment, every request that vLLM routes to that backend is compiled and masked by
sieve. Start vLLM with that backend named (`--structured-outputs-config.backend guidance`)
so that every request goes there. Without the variable the plugin changes nothing.
Limits of this route: vLLM validates a request with the replaced backend's own checks before
sieve sees it (a schema LLGuidance refuses is refused even though sieve compiles it), and
its options (`disable_any_whitespace`, ...) are not passed on.

| vLLM                                      | sieve                                             |
|-------------------------------------------|---------------------------------------------------|
| `compile_grammar(request_type, spec, stop_token_ids)` | `Grammar(...)` for JSON, JSON_OBJECT, REGEX, GRAMMAR (GBNF or Lark), CHOICE, STRUCTURAL_TAG, then `Matcher`; a grammar that fails raises (vLLM fails that request only) |
| `allocate_token_bitmask(n)`               | int32 `(n, words)` torch tensor (vLLM passes rows for every speculative position) |
| `grammar.accept_tokens(request_id, toks)` | `Matcher.validate_tokens`, then `consume_tokens` (all or nothing) |
| `grammar.validate_tokens(toks)`           | `Matcher.validate_tokens` -> the accepted prefix (`-1` padding stripped) |
| `grammar.rollback(n)`                     | `Matcher.rollback(n)`                             |
| `grammar.fill_bitmask(bitmask, idx)`      | `Matcher.fill_next_token_bitmask(bitmask, idx)`   |
| `grammar.is_terminated()`                 | `Matcher.is_stopped()`                            |
| `grammar.reset()`                         | `Matcher.reset()`                                 |
| manager's per-request / speculative loop  | `SieveBackend.fill_bitmasks(grammars, bitmask, drafts)`: one call, thread pool, GIL released |

Reasoning (`--reasoning-parser`) is vLLM's own: its manager holds the grammar back until
the reasoning ends, whatever the backend.
"""

import json
import os

from ._sieve import Grammar, JsonOptions, Matcher, Tokenizer, fill_next_token_bitmask_batch
from ._sieve import fill_next_token_bitmask_draft
from .tokenizers import from_any

try:  # vLLM's own ABCs when it is installed.
    from vllm.v1.structured_output.backend_types import (
        StructuredOutputBackend as _BackendBase,
        StructuredOutputGrammar as _GrammarBase,
    )

    HAVE_VLLM = True
except Exception:  # noqa: BLE001 -- not installed, or an import that fails without a GPU
    _BackendBase = object
    _GrammarBase = object
    HAVE_VLLM = False

__all__ = ["HAVE_VLLM", "SieveBackend", "SieveGrammar", "register"]


def _kind(request_type) -> str:
    """The option's name, whether vLLM's enum member or a string."""
    return str(getattr(request_type, "name", request_type)).upper()


def _choice_regex(choices) -> str:
    import re

    if isinstance(choices, str):
        choices = json.loads(choices)
    return "|".join(re.escape(str(c)) for c in choices)


class SieveGrammar(_GrammarBase):
    """One request: vLLM's `StructuredOutputGrammar` over a `sieve.Matcher`."""

    def __init__(self, matcher: Matcher, vocab_size: int):
        self.matcher = matcher
        self.vocab_size = vocab_size

    def accept_tokens(self, request_id, tokens) -> bool:
        tokens = list(tokens)
        if self.matcher.validate_tokens(tokens) != len(tokens):
            return False
        return self.matcher.consume_tokens(tokens)

    def validate_tokens(self, tokens):
        tokens = list(tokens)
        if -1 in tokens:  # vLLM pads speculative drafts with -1
            tokens = tokens[: tokens.index(-1)]
        return tokens[: self.matcher.validate_tokens(tokens)]

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        return self.matcher.is_stopped()

    def reset(self) -> None:
        self.matcher.reset()


class SieveBackend(_BackendBase):
    """vLLM's `StructuredOutputBackend`, constructed as vLLM constructs its backends:
    `SieveBackend(vllm_config, tokenizer=..., vocab_size=...)`. `tokenizer`: a
    `sieve.Tokenizer` or a Hugging Face tokenizer; `vocab_size`: the model's logits width;
    `vllm_config` may be None outside vLLM.

    `compile_cache_bytes` (default 512 MiB, as vLLM's XGrammar compiler cache): turns on the
    tokenizer's compile cache if it is off, so that a schema or tool list sent again
    compiles in microseconds (0 leaves it as it is)."""

    def __init__(self, vllm_config=None, tokenizer=None, vocab_size: int = None, *,
                 json_options: JsonOptions = None, compile_cache_bytes: int = 512 << 20):
        if tokenizer is None or vocab_size is None:
            raise TypeError("SieveBackend needs tokenizer= and vocab_size=")
        if not isinstance(tokenizer, Tokenizer):
            tokenizer = from_any(tokenizer, n_vocab=vocab_size)
        if compile_cache_bytes and tokenizer.compile_cache_stats()["max_bytes"] == 0:
            tokenizer.set_compile_cache(compile_cache_bytes)
        self.vllm_config = vllm_config
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.json_options = json_options

    def compile_grammar(self, request_type, grammar_spec: str,
                        stop_token_ids=None) -> SieveGrammar:
        """A grammar for one request; raises `sieve.GrammarError` when it does not compile
        (vLLM then fails that request alone). `stop_token_ids` is accepted for vLLM's
        signature; EOS is allowed where the grammar may end, as the built-in backends do."""
        kind = _kind(request_type)
        tok = self.tokenizer
        if kind == "JSON":
            g = Grammar.json_schema(tok, grammar_spec, options=self.json_options)
        elif kind == "JSON_OBJECT":
            g = Grammar.json_schema(tok, {"type": "object"}, options=self.json_options)
        elif kind == "REGEX":
            g = Grammar.regex(tok, grammar_spec)
        elif kind == "CHOICE":
            g = Grammar.regex(tok, _choice_regex(grammar_spec))
        elif kind == "GRAMMAR":
            syntax = "gbnf" if "::=" in grammar_spec else "lark"
            g = Grammar(tok, syntax, grammar_spec, json_options=self.json_options)
        elif kind == "STRUCTURAL_TAG":
            g = Grammar.structural_tag(tok, grammar_spec, json_options=self.json_options)
        else:
            raise ValueError(f"unsupported structured output type {request_type!r}")
        return SieveGrammar(Matcher(g), self.vocab_size)

    def allocate_token_bitmask(self, max_num_seqs: int):
        """`max_num_seqs` rows (vLLM's manager already counts a row per speculative
        position)."""
        import torch

        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_bitmasks(self, grammars, bitmask, drafts=None, offsets=None):
        """The manager's loop in one call: row `i` for `grammars[i]`, or, with `drafts`,
        a row per draft position (`fill_next_token_bitmask_draft`)."""
        matchers = [g.matcher for g in grammars]
        if drafts is None:
            return fill_next_token_bitmask_batch(matchers, bitmask, offsets)
        return fill_next_token_bitmask_draft(matchers, [list(d) for d in drafts], bitmask, offsets)

    def destroy(self) -> None:
        pass


def _replacing_grammar_init(original, target):
    """`StructuredOutputManager.grammar_init`, building a `SieveBackend` where vLLM would
    build `target`."""

    def grammar_init(self, request):
        so = getattr(request.sampling_params, "structured_outputs", None)
        if (self.backend is None and request.structured_output_request is not None
                and so is not None and so._backend == target):
            self.backend = SieveBackend(
                self.vllm_config, tokenizer=self.tokenizer,
                vocab_size=self.vllm_config.model_config.get_vocab_size())
            self.backend_name = target
        return original(self, request)

    grammar_init.__sieve_replaces__ = target
    return grammar_init


def register() -> None:
    """The `vllm.general_plugins` entry point. With `SIEVE_VLLM_REPLACE` set to a backend
    name (`guidance`, `xgrammar`, ...), sieve serves the requests vLLM routes to it; unset,
    nothing changes. Safe to run more than once, in every vLLM process."""
    target = os.environ.get("SIEVE_VLLM_REPLACE", "").strip()
    if not target or not HAVE_VLLM:
        return
    from vllm.v1.structured_output import StructuredOutputManager

    current = StructuredOutputManager.grammar_init
    if getattr(current, "__sieve_replaces__", None) == target:
        return
    original = getattr(current, "__wrapped_original__", current)
    patched = _replacing_grammar_init(original, target)
    patched.__wrapped_original__ = original
    StructuredOutputManager.grammar_init = patched
