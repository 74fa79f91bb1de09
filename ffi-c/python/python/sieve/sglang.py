"""The method names of SGLang's grammar backends
(`python/sglang/srt/constrained/base_grammar_backend.py`); SGLang is not imported.

| SGLang                                         | sieve                                        |
|------------------------------------------------|----------------------------------------------|
| `BaseGrammarBackend.dispatch_json(key)`        | `Grammar.json_schema` (`"$$ANY$$"`: any JSON object) |
| `dispatch_regex` / `dispatch_ebnf` / `dispatch_structural_tag` | `Grammar.regex` / `Grammar.gbnf` / `Grammar.structural_tag` |
| `BaseGrammarObject.accept_token(token)`        | `Matcher.consume_token` (raises on a rejected token) |
| `rollback(k)`, `is_terminated()`, `copy()`     | `Matcher.rollback`, `is_stopped`, a new matcher on the same grammar |
| `allocate_vocab_mask(vocab_size, batch, device)` | int32 `(batch, words)` CPU tensor          |
| `fill_vocab_mask(mask, idx)`                   | `Matcher.fill_next_token_bitmask(mask, idx)` |
| `move_vocab_mask(mask, device)` (static)       | `mask.to(device, non_blocking=True)`         |
| `apply_vocab_mask(logits, mask)` (static)      | `sieve.torch.apply_token_bitmask_inplace`    |
| `try_jump_forward(tokenizer)`                  | `Matcher.compute_ff_tokens` (None when nothing is forced) |
"""

from ._sieve import Grammar, GrammarError, JsonOptions, Matcher, Tokenizer

__all__ = ["SieveGrammarBackend", "SieveGrammarObject"]


class SieveGrammarObject:
    def __init__(self, grammar: Grammar, matcher: Matcher = None):
        self.grammar = grammar
        self.matcher = matcher if matcher is not None else Matcher(grammar)
        self.finished = False

    def accept_token(self, token: int) -> None:
        if not self.matcher.consume_token(token):
            raise ValueError(f"token {token} rejected: {self.matcher.get_error()}")

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_stopped()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device):
        import torch

        return torch.full((batch_size, (vocab_size + 31) // 32), -1, dtype=torch.int32)

    def fill_vocab_mask(self, vocab_mask, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def move_vocab_mask(vocab_mask, device):
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits, vocab_mask) -> None:
        from .torch import apply_token_bitmask_inplace

        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> "SieveGrammarObject":
        return SieveGrammarObject(self.grammar)

    def try_jump_forward(self, tokenizer):
        """`(forced token ids, forced text)` when the grammar forces a continuation, else
        None."""
        ff = self.matcher.compute_ff_tokens()
        if not ff:
            return None
        return ff, self.matcher.compute_ff_bytes().decode("utf-8", "replace")

    def jump_forward_str_state(self, helper):
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids, new_output_ids, next_state) -> None:
        """Re-synchronizes after SGLang retokenized the output: roll back the tokens that
        changed and consume the new ones."""
        k = 0
        while k < min(len(old_output_ids), len(new_output_ids)) and \
                old_output_ids[k] == new_output_ids[k]:
            k += 1
        self.matcher.rollback(len(old_output_ids) - k)
        self.matcher.consume_tokens(list(new_output_ids[k:]))


class SieveGrammarBackend:
    """SGLang's `BaseGrammarBackend` dispatch methods. Invalid grammars return None (SGLang
    treats that as "no grammar"; the error is kept in `last_error`).

    `compile_cache_bytes` (default 512 MiB): turns on the tokenizer's compile cache if it is
    off (0 leaves it as it is); a request sent again compiles in microseconds."""

    def __init__(self, tokenizer, vocab_size: int = None, *, json_options: JsonOptions = None,
                 compile_cache_bytes: int = 512 << 20):
        if not isinstance(tokenizer, Tokenizer):
            tokenizer = Tokenizer.from_huggingface(tokenizer, n_vocab=vocab_size)
        if compile_cache_bytes and tokenizer.compile_cache_stats()["max_bytes"] == 0:
            tokenizer.set_compile_cache(compile_cache_bytes)
        self.tokenizer = tokenizer
        self.json_options = json_options
        self.last_error = None

    def _make(self, build):
        try:
            return SieveGrammarObject(build())
        except GrammarError as e:
            self.last_error = e
            return None

    def dispatch_json(self, key_string: str):
        schema = '{"type": "object"}' if key_string == "$$ANY$$" else key_string
        return self._make(lambda: Grammar.json_schema(self.tokenizer, schema,
                                                      options=self.json_options))

    def dispatch_regex(self, key_string: str):
        return self._make(lambda: Grammar.regex(self.tokenizer, key_string))

    def dispatch_ebnf(self, key_string: str):
        return self._make(lambda: Grammar.gbnf(self.tokenizer, key_string))

    def dispatch_structural_tag(self, key_string: str):
        return self._make(lambda: Grammar.structural_tag(self.tokenizer, key_string,
                                                         json_options=self.json_options))
