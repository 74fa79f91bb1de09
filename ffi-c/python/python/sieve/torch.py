"""LLGuidance- and XGrammar-shaped helpers over torch.

Masks are filled in CPU memory (pinned memory works: it is CPU memory); move them to the
logits' device with `.to(device, non_blocking=True)`. `apply_token_bitmask_inplace` uses
sieve's kernels for CPU logits and torch operations on other devices.
"""

import torch

from . import _sieve
from ._sieve import Matcher, fill_next_token_bitmask_batch

__all__ = [
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "fill_next_token_bitmask",
    "fill_next_token_bitmask_par",
]


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, pin_memory: bool = False):
    """`(batch_size, ceil(vocab_size / 32))` int32 on the CPU, every bit set."""
    words = (vocab_size + 31) // 32
    return torch.full((batch_size, words), -1, dtype=torch.int32, pin_memory=pin_memory)


def fill_next_token_bitmask(matcher: Matcher, bitmask: torch.Tensor, index: int = 0) -> bool:
    return matcher.fill_next_token_bitmask(bitmask, index)


def fill_next_token_bitmask_par(matchers, bitmask: torch.Tensor, indices=None):
    return fill_next_token_bitmask_batch(list(matchers), bitmask, indices)


_SHIFTS = {}


def _unpack(bitmask: torch.Tensor, vocab: int) -> torch.Tensor:
    """Boolean `(rows, vocab)` allowed-token matrix on the bitmask's device."""
    key = bitmask.device
    if key not in _SHIFTS:
        _SHIFTS[key] = torch.arange(32, dtype=torch.int32, device=key)
    bits = (bitmask.unsqueeze(-1) >> _SHIFTS[key]) & 1
    allowed = bits.reshape(bitmask.shape[0], -1).bool()
    width = allowed.shape[1]
    if width >= vocab:
        return allowed[:, :vocab]
    pad = torch.zeros(allowed.shape[0], vocab - width, dtype=torch.bool, device=key)
    return torch.cat([allowed, pad], dim=1)


def apply_token_bitmask_inplace(logits: torch.Tensor, bitmask: torch.Tensor, indices=None):
    """Sets disallowed logits to -inf, in place. `logits`: `(batch, vocab)` or `(vocab,)`;
    `bitmask`: int32 `(batch, words)` or `(words,)`; `indices`: the rows to apply (all by
    default; bitmask row `i` applies to logits row `i`)."""
    if logits.device.type == "cpu" and bitmask.device.type == "cpu" and logits.is_contiguous():
        _sieve.apply_token_bitmask_inplace(logits, bitmask.contiguous(), indices)
        return
    flat = logits.dim() == 1
    lg = logits.unsqueeze(0) if flat else logits
    bm = bitmask.to(lg.device)
    bm = bm.unsqueeze(0) if bm.dim() == 1 else bm
    rows = list(range(lg.shape[0])) if indices is None else list(indices)
    idx = torch.tensor(rows, dtype=torch.long, device=lg.device)
    allowed = _unpack(bm.index_select(0, idx), lg.shape[1])
    sub = lg.index_select(0, idx).masked_fill_(~allowed, float("-inf"))
    lg.index_copy_(0, idx, sub)
