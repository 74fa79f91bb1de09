"""The method names of vLLM's structured-output backend (`vllm/v1/structured_output/`).

`SieveBackend` is shaped like vLLM's `StructuredOutputBackend` and `SieveGrammar` like its
`StructuredOutputGrammar`; vLLM is not imported (register the classes in a vLLM build, or
call them from your own engine loop the way vLLM does):

| vLLM                                      | sieve                                             |
|-------------------------------------------|---------------------------------------------------|
| `compile_grammar(request_type, spec)`     | `Grammar(...)` for JSON, JSON_OBJECT, REGEX, GRAMMAR (GBNF or Lark), CHOICE, STRUCTURAL_TAG, then `Matcher` |
| `allocate_token_bitmask(max_num_seqs)`    | int32 `(max_num_seqs * (1 + num_spec_tokens), words)` torch tensor |
| `grammar.accept_tokens(request_id, toks)` | `Matcher.validate_tokens`, then `consume_tokens` (all or nothing) |
| `grammar.validate_tokens(toks)`           | `Matcher.validate_tokens` -> the accepted prefix  |
| `grammar.rollback(n)`                     | `Matcher.rollback(n)`                             |
| `grammar.fill_bitmask(bitmask, idx)`      | `Matcher.fill_next_token_bitmask(bitmask, idx)`   |
| `grammar.is_terminated()`                 | `Matcher.is_stopped()`                            |
| `grammar.reset()`                         | `Matcher.reset()`                                 |
| manager's per-request / speculative loop  | `SieveBackend.fill_bitmasks(grammars, bitmask, drafts)`: one call, thread pool, GIL released |
"""

import json

from ._sieve import Grammar, JsonOptions, Matcher, Tokenizer, fill_next_token_bitmask_batch
from ._sieve import fill_next_token_bitmask_draft

__all__ = ["SieveBackend", "SieveGrammar"]


def _kind(request_type) -> str:
    """The option's name, whether vLLM's enum member or a string."""
    return str(getattr(request_type, "name", request_type)).upper()


def _choice_regex(choices) -> str:
    import re

    if isinstance(choices, str):
        choices = json.loads(choices)
    return "|".join(re.escape(str(c)) for c in choices)


class SieveGrammar:
    """One request: vLLM's `StructuredOutputGrammar` methods over a `sieve.Matcher`."""

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
        return tokens[: self.matcher.validate_tokens(tokens)]

    def rollback(self, num_tokens: int) -> None:
        self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(bitmask, idx)

    def is_terminated(self) -> bool:
        return self.matcher.is_stopped()

    def reset(self) -> None:
        self.matcher.reset()


class SieveBackend:
    """vLLM's `StructuredOutputBackend` methods. `tokenizer`: a `sieve.Tokenizer` or a
    Hugging Face tokenizer; `vocab_size`: the model's logits width.

    `compile_cache_bytes` (default 512 MiB, as vLLM's XGrammar compiler cache): turns on the
    tokenizer's compile cache if it is off, so that a schema or tool list sent again
    compiles in microseconds (0 leaves it as it is)."""

    def __init__(self, tokenizer, vocab_size: int, *, json_options: JsonOptions = None,
                 num_speculative_tokens: int = 0, compile_cache_bytes: int = 512 << 20):
        if not isinstance(tokenizer, Tokenizer):
            tokenizer = Tokenizer.from_huggingface(tokenizer, n_vocab=vocab_size)
        if compile_cache_bytes and tokenizer.compile_cache_stats()["max_bytes"] == 0:
            tokenizer.set_compile_cache(compile_cache_bytes)
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.json_options = json_options
        self.num_speculative_tokens = num_speculative_tokens

    def compile_grammar(self, request_type, grammar_spec: str) -> SieveGrammar:
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
        import torch

        rows = max_num_seqs * (1 + self.num_speculative_tokens)
        return torch.full((rows, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_bitmasks(self, grammars, bitmask, drafts=None, offsets=None):
        """The manager's loop in one call: row `i` for `grammars[i]`, or, with `drafts`,
        a row per draft position (`fill_next_token_bitmask_draft`)."""
        matchers = [g.matcher for g in grammars]
        if drafts is None:
            return fill_next_token_bitmask_batch(matchers, bitmask, offsets)
        return fill_next_token_bitmask_draft(matchers, [list(d) for d in drafts], bitmask, offsets)

    def destroy(self) -> None:
        pass
