"""sieve: exact token masks for grammar-constrained decoding.

A compiled `Grammar` (JSON Schema, Lark, GBNF, regex, structural tag) is shared by one
`Matcher` per request. Masks are int32 bitmasks, `(batch, ceil(vocab_size / 32))`, bit
`t % 32` of word `t // 32` allowing token `t` (LLGuidance's and XGrammar's layout), written
straight into numpy arrays or CPU torch tensors.

    tok = sieve.Tokenizer.from_huggingface(hf_tokenizer)
    grammar = sieve.Grammar.json_schema(tok, {"type": "object"})
    matchers = [sieve.Matcher(grammar) for _ in range(batch)]
    bitmask = sieve.allocate_token_bitmask(batch, tok.vocab_size)
    sieve.fill_next_token_bitmask_batch(matchers, bitmask)   # GIL released, thread pool
    sieve.apply_token_bitmask_inplace(logits, bitmask)
    for m, t in zip(matchers, sampled): m.consume_token(t)

Adapters: `sieve.hf` (a transformers LogitsProcessor), `sieve.vllm` and `sieve.sglang`
(the method names those engines' structured-output backends call), `sieve.numpy` and
`sieve.torch` (LLGuidance-shaped helpers).
"""

from ._sieve import (
    Gate,
    Grammar,
    GrammarError,
    JsonOptions,
    Matcher,
    MatcherError,
    SieveError,
    Tokenizer,
    __version__,
    apply_token_bitmask_inplace,
    consume_token_batch,
    fill_next_token_bitmask_batch,
    fill_next_token_bitmask_draft,
    fill_next_token_bitmask_draft_tree,
    get_num_threads,
    set_num_threads,
    shutdown_threads,
)

__all__ = [
    "Gate",
    "Grammar",
    "GrammarError",
    "JsonOptions",
    "Matcher",
    "MatcherError",
    "SieveError",
    "Tokenizer",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_words",
    "consume_token_batch",
    "fill_next_token_bitmask",
    "fill_next_token_bitmask_batch",
    "fill_next_token_bitmask_draft",
    "fill_next_token_bitmask_draft_tree",
    "get_num_threads",
    "set_num_threads",
    "shutdown_threads",
    "unpack_bitmask",
]


def bitmask_words(vocab_size: int) -> int:
    """int32 words per mask row: ceil(vocab_size / 32)."""
    return (vocab_size + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, backend: str = "auto"):
    """A `(batch_size, ceil(vocab_size / 32))` int32 bitmask with every bit set (a row
    nobody fills allows everything). `backend`: "numpy", "torch" or "auto" (numpy if
    installed, else torch)."""
    if backend not in ("auto", "numpy", "torch"):
        raise ValueError(f"backend must be 'auto', 'numpy' or 'torch', not {backend!r}")
    if backend in ("auto", "numpy"):
        try:
            import numpy as np

            return np.full((batch_size, bitmask_words(vocab_size)), -1, dtype=np.int32)
        except ImportError:
            if backend == "numpy":
                raise
    import torch

    return torch.full((batch_size, bitmask_words(vocab_size)), -1, dtype=torch.int32)


def fill_next_token_bitmask(matcher: Matcher, bitmask, index: int = 0) -> bool:
    """LLGuidance's spelling of `matcher.fill_next_token_bitmask(bitmask, index)`."""
    return matcher.fill_next_token_bitmask(bitmask, index)


def unpack_bitmask(bitmask, vocab_size: int):
    """A boolean numpy array `(batch, vocab_size)` (or `(vocab_size,)`) from a bitmask:
    True where the token is allowed. For tests and debugging."""
    import numpy as np

    words = np.asarray(bitmask).view(np.uint32)
    flat = words.ndim == 1
    words = np.atleast_2d(words)
    bits = (words[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1
    out = bits.reshape(words.shape[0], -1)[:, :vocab_size].astype(bool)
    return out[0] if flat else out
