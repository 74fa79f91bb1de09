"""Batch and draft-token masks equal the masks of the same matchers filled one by one."""

import random

import numpy as np
import pytest

import sieve

from conftest import maskbench_schemas


def random_walk(m, tok, rng, steps):
    """Consumes up to `steps` random allowed tokens (never EOS); returns them."""
    taken = []
    for _ in range(steps):
        allowed = [t for t in m.allowed_tokens() if t not in tok.eos_token_ids]
        if not allowed:
            break
        t = rng.choice(allowed)
        assert m.consume_token(t)
        taken.append(t)
    return taken


@pytest.fixture(scope="module")
def grammars(shared, llama3):
    out = []
    for _, schema in maskbench_schemas(shared, 12):
        try:
            out.append(sieve.Grammar.json_schema(llama3, schema))
        except sieve.GrammarError:
            pass
    assert len(out) >= 8
    return out


def make_batch(grammars, tok, n, seed):
    rng = random.Random(seed)
    ms = []
    for i in range(n):
        m = sieve.Matcher(grammars[i % len(grammars)])
        random_walk(m, tok, rng, rng.randrange(0, 12))
        ms.append(m)
    return ms


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_batch_equals_sequential(grammars, llama3, threads):
    sieve.set_num_threads(threads)
    try:
        ms = make_batch(grammars, llama3, 40, threads)
        batch = sieve.allocate_token_bitmask(40, llama3.vocab_size)
        ok = sieve.fill_next_token_bitmask_batch(ms, batch)
        assert ok == [True] * 40
        for i, m in enumerate(ms):
            one = sieve.allocate_token_bitmask(1, llama3.vocab_size)
            m.fill_next_token_bitmask(one, 0)
            assert (one[0] == batch[i]).all(), f"row {i}"
    finally:
        sieve.set_num_threads(2)


def test_batch_indices_torch_and_duplicates(grammars, llama3):
    torch = pytest.importorskip("torch")
    ms = make_batch(grammars, llama3, 6, 11)
    bm = torch.full((10, llama3.mask_words), -1, dtype=torch.int32)
    rows = [9, 0, 4, 2, 7, 5]
    sieve.fill_next_token_bitmask_batch(ms, bm, rows)
    for m, r in zip(ms, rows):
        assert bm[r].numpy().tobytes() == m.compute_bitmask()
    for r in (1, 3, 6, 8):
        assert (bm[r] == -1).all()
    with pytest.raises(ValueError, match="twice"):
        sieve.fill_next_token_bitmask_batch(ms[:2], bm, [3, 3])
    with pytest.raises(IndexError):
        sieve.fill_next_token_bitmask_batch(ms[:1], bm, [10])
    with pytest.raises(ValueError):
        sieve.fill_next_token_bitmask_batch(ms[:2], bm, [1])
    # The same matcher twice is served one row at a time.
    sieve.fill_next_token_bitmask_batch([ms[0], ms[0]], bm, [1, 3])
    assert (bm[1] == bm[3]).all()


def test_batch_rejects_mixed_vocabularies(llama3, small_vocab):
    a = sieve.Matcher(sieve.Grammar.regex(llama3, "a+"))
    b = sieve.Matcher(sieve.Grammar.regex(small_vocab, "a+"))
    bm = sieve.allocate_token_bitmask(2, llama3.vocab_size)
    with pytest.raises(ValueError, match="different sizes"):
        sieve.fill_next_token_bitmask_batch([a, b], bm)


def sequential_drafts(m, draft, words):
    """vLLM's loop: fill, accept, fill, ..., then roll back; rows as int32 arrays."""
    rows = []
    consumed = 0
    for k in range(len(draft) + 1):
        row = np.zeros((1, words), dtype=np.int32)
        m.fill_next_token_bitmask(row)
        rows.append(row[0])
        if k == len(draft) or not m.is_allowed(draft[k]):
            break
        assert m.consume_token(draft[k])
        consumed += 1
    m.rollback(consumed)
    return rows


def test_draft_masks_equal_sequential(grammars, llama3):
    rng = random.Random(5)
    ms = make_batch(grammars, llama3, 16, 3)
    drafts = []
    for i, m in enumerate(ms):
        probe = m.fork()
        d = random_walk(probe, llama3, rng, rng.randrange(0, 5))
        if i % 3 == 0 and d:  # a rejected draft token cuts the rows short
            d = d[:1] + [llama3.greedy_tokenize(b"\x01")[0]] + d[1:]
        drafts.append(d)
    before = [m.compute_bitmask() for m in ms]
    counts_before = [m.num_tokens for m in ms]
    rows_total = sum(len(d) + 1 for d in drafts)
    bm = np.full((rows_total, llama3.mask_words), -1, dtype=np.int32)
    filled = sieve.fill_next_token_bitmask_draft(ms, drafts, bm)
    # The matchers are back where they were.
    assert [m.num_tokens for m in ms] == counts_before
    assert [m.compute_bitmask() for m in ms] == before
    offset = 0
    for m, d, n in zip(ms, drafts, filled):
        expect = sequential_drafts(m, d, llama3.mask_words)
        assert n == len(expect)
        for k in range(len(d) + 1):
            got = bm[offset + k]
            if k < n:
                assert (got == expect[k]).all(), f"draft row {k}"
            else:
                assert not got.any(), "rows after a rejected draft token are zeroed"
        offset += len(d) + 1
    assert any(n < len(d) + 1 for d, n in zip(drafts, filled)), "no draft was cut short"
    assert any(n == len(d) + 1 and d for d, n in zip(drafts, filled))


def test_consume_token_batch(grammars, llama3):
    rng = random.Random(9)
    ms = make_batch(grammars, llama3, 8, 21)
    twins = [m.fork() for m in ms]
    toks = [rng.choice(m.allowed_tokens()) for m in ms]
    toks[3] = llama3.greedy_tokenize(b"\x01")[0]  # rejected
    ok = sieve.consume_token_batch(ms, toks)
    for i, (m, t, twin) in enumerate(zip(ms, toks, twins)):
        assert ok[i] == twin.consume_token(t)
        assert m.is_error() == twin.is_error()
        if ok[i]:
            assert m.compute_bitmask() == twin.compute_bitmask()
    assert ok[3] is False
    with pytest.raises(ValueError):
        sieve.consume_token_batch(ms[:1], [llama3.vocab_size])


def pool_threads():
    """sieve's pool threads the OS lists (Linux), or None."""
    import os
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    n = 0
    for t in tasks:
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                n += f.read().startswith("sieve-")
        except OSError:
            pass
    return n


def settled_pool_threads(want):
    """pool_threads(), polled for up to 2 s until it is `want`: the kernel may list a
    joined thread a moment longer."""
    import time

    deadline = time.monotonic() + 2
    n = pool_threads()
    while n is not None and n != want and time.monotonic() < deadline:
        time.sleep(0.01)
        n = pool_threads()
    return want if n is None else n


def test_pool_size_and_shutdown(grammars, llama3):
    with pytest.raises(ValueError, match="at least 1"):
        sieve.set_num_threads(0)
    ms = make_batch(grammars, llama3, 24, 5)
    want = []
    for m in ms:
        one = sieve.allocate_token_bitmask(1, llama3.vocab_size)
        m.fill_next_token_bitmask(one, 0)
        want.append(one[0].copy())
    try:
        sieve.set_num_threads(3)
        assert sieve.get_num_threads() == 3
        batch = sieve.allocate_token_bitmask(24, llama3.vocab_size)
        sieve.fill_next_token_bitmask_batch(ms, batch)
        assert settled_pool_threads(2) == 2, "two parked pool threads"
        sieve.shutdown_threads()
        sieve.shutdown_threads()
        assert settled_pool_threads(0) == 0
        # The next batch starts the pool again, with the same masks.
        batch2 = sieve.allocate_token_bitmask(24, llama3.vocab_size)
        sieve.fill_next_token_bitmask_batch(ms, batch2)
        for i in range(24):
            assert (batch[i] == want[i]).all() and (batch2[i] == want[i]).all(), f"row {i}"
    finally:
        sieve.set_num_threads(2)
