"""apply_token_bitmask_inplace (sieve's kernels) equals a plain numpy/torch reference."""

import numpy as np
import pytest

import sieve


def reference(logits, bitmask, rows):
    out = logits.copy()
    vocab = logits.shape[-1]
    allowed = sieve.unpack_bitmask(bitmask, 32 * bitmask.shape[-1])
    pad = max(0, vocab - allowed.shape[-1])
    allowed = np.pad(allowed, ((0, 0), (0, pad)))[:, :vocab]
    for r in rows:
        out[r][~allowed[r]] = -np.inf
    return out


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 1000, 50_001])
def test_numpy_float32_and_float16(vocab):
    rng = np.random.default_rng(vocab)
    words = (vocab + 31) // 32
    for dtype in (np.float32, np.float16):
        logits = rng.standard_normal((4, vocab)).astype(dtype)
        bitmask = rng.integers(-2**31, 2**31, size=(4, words), dtype=np.int64).astype(np.int32)
        for rows in (None, [2, 0]):
            got = logits.copy()
            sieve.apply_token_bitmask_inplace(got, bitmask, rows)
            want = reference(logits, bitmask, range(4) if rows is None else rows)
            assert np.array_equal(got, want)


def test_narrow_bitmask_masks_the_rest():
    logits = np.zeros((1, 100), dtype=np.float32)
    bitmask = np.full((1, 2), -1, dtype=np.int32)  # 64 tokens
    sieve.apply_token_bitmask_inplace(logits, bitmask)
    assert np.isfinite(logits[0, :64]).all() and np.isneginf(logits[0, 64:]).all()


def test_torch_dtypes():
    torch = pytest.importorskip("torch")
    import sieve.torch as st

    vocab, words = 1000, 32
    gen = torch.Generator().manual_seed(3)
    bitmask = torch.randint(-2**31, 2**31 - 1, (3, words), dtype=torch.int32, generator=gen)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        logits = torch.randn((3, vocab), generator=gen).to(dtype)
        a = logits.clone()
        sieve.apply_token_bitmask_inplace(a, bitmask)  # the kernels
        b = logits.clone()
        allowed = st._unpack(bitmask, vocab)
        b.masked_fill_(~allowed, float("-inf"))  # torch operations
        assert torch.equal(a, b), dtype
        c = logits.clone()
        st.apply_token_bitmask_inplace(c, bitmask, indices=[1])
        assert torch.equal(c[1], b[1]) and torch.equal(c[0], logits[0])


def test_bad_logits_raise():
    bm = np.zeros((1, 4), dtype=np.int32)
    with pytest.raises(TypeError):
        sieve.apply_token_bitmask_inplace(np.zeros((1, 100), dtype=np.float64), bm)
    with pytest.raises(TypeError):
        sieve.apply_token_bitmask_inplace(np.zeros((1, 100), dtype=np.int32), bm)
    with pytest.raises(IndexError):
        sieve.apply_token_bitmask_inplace(np.zeros((2, 100), dtype=np.float32), bm)
    with pytest.raises(ValueError):
        sieve.apply_token_bitmask_inplace(np.zeros((100, 2), dtype=np.float32).T, bm)


def test_overlapping_buffers_raise():
    buf = np.zeros(200, dtype=np.float32)
    logits = buf[:100].reshape(1, 100)
    inside = buf[50:54].view(np.int32).reshape(1, 4)  # overlaps the logits
    with pytest.raises(ValueError, match="share memory"):
        sieve.apply_token_bitmask_inplace(logits, inside)
    apart = buf[100:104].view(np.int32).reshape(1, 4)  # right after them: fine
    apart[:] = [-1, 0, 0, 0]  # tokens 0..31 allowed
    sieve.apply_token_bitmask_inplace(logits, apart)
    assert np.isfinite(logits[0, :32]).all() and np.isneginf(logits[0, 32:]).all()
