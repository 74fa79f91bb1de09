"""LLGuidance-shaped helpers over numpy (`llguidance.numpy`'s names)."""

import numpy as np

from ._sieve import Matcher, apply_token_bitmask_inplace, fill_next_token_bitmask_batch

__all__ = [
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "fill_next_token_bitmask",
    "fill_next_token_bitmask_par",
]


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """`(batch_size, ceil(vocab_size / 32))` int32, every bit set."""
    return np.full((batch_size, (vocab_size + 31) // 32), -1, dtype=np.int32)


def fill_next_token_bitmask(matcher: Matcher, bitmask: np.ndarray, index: int = 0) -> bool:
    return matcher.fill_next_token_bitmask(bitmask, index)


def fill_next_token_bitmask_par(matchers, bitmask: np.ndarray, indices=None):
    """`sieve.fill_next_token_bitmask_batch` (LLGuidance's executor is sieve's pool)."""
    return fill_next_token_bitmask_batch(list(matchers), bitmask, indices)
