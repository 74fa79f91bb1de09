"""A Hugging Face `transformers` logits processor under a sieve grammar.

    from transformers import LogitsProcessorList
    tok = sieve.Tokenizer.from_huggingface(hf_tokenizer, n_vocab=model.config.vocab_size)
    grammar = sieve.Grammar.json_schema(tok, schema)
    out = model.generate(ids, logits_processor=LogitsProcessorList([SieveLogitsProcessor(grammar)]))

One matcher per batch row, created at the first call (the prompt is not consumed: the
grammar constrains what is generated). For greedy search and sampling; beam search reorders
rows, which this processor does not follow. Use a new processor for each `generate` call.

With `gate` (a `sieve.Gate`: a reasoning phase, triggers) the grammar waits behind it:
`SieveLogitsProcessor(grammar, gate=sieve.presets.reasoning_gate(tok, "qwen3"))` lets the
model think freely until `</think>`, then constrains the answer.
"""

from ._sieve import Gate, Grammar, Matcher, fill_next_token_bitmask_batch

try:  # transformers' base class, when installed (it only fixes the call signature)
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover - transformers is optional
    _Base = object

__all__ = ["SieveLogitsProcessor"]


class SieveLogitsProcessor(_Base):
    def __init__(self, grammar: Grammar, gate: Gate = None):
        self.grammar = grammar
        self.gate = gate
        self.matchers = None
        self._seen = 0
        self._bitmask = None

    def __call__(self, input_ids, scores):
        import torch

        from .torch import apply_token_bitmask_inplace

        batch, length = input_ids.shape
        if self.matchers is None:
            self.matchers = [Matcher(self.grammar, gate=self.gate) for _ in range(batch)]
            self._seen = length
            words = (self.grammar.vocab_size + 31) // 32
            self._bitmask = torch.empty((batch, words), dtype=torch.int32)
        elif length > self._seen:
            new = input_ids[:, self._seen:].tolist()
            self._seen = length
            for m, toks in zip(self.matchers, new):
                for t in toks:
                    if m.is_stopped() or m.is_error():
                        break
                    m.consume_token(int(t))
        fill_next_token_bitmask_batch(self.matchers, self._bitmask)
        apply_token_bitmask_inplace(scores, self._bitmask)
        return scores
