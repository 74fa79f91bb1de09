"""`fill_next_token_bitmask_draft_tree`: masks for every node of a draft token tree equal a
sequential Python reference (a fork of the matcher consumes the node's path token by token,
then fills its row; a zero row when a token is refused)."""

import random

import numpy as np
import pytest

import sieve

from test_batch import grammars, make_batch  # noqa: F401  (the fixture is used by name)


def random_tree(rng, n):
    """Parents for `n` nodes: a chain, a star, EAGLE-like levels, or random."""
    kind = rng.randrange(4)
    if kind == 0:
        return [i - 1 for i in range(n)]
    if kind == 1:
        return [-1] * n
    if kind == 2:
        width, parents, top = rng.randrange(1, 4), [], -1
        while len(parents) < n:
            start = len(parents)
            w = min(width, n - start)
            parents += [top] * w
            top = start + rng.randrange(w)
        return parents
    return [rng.randrange(-1, i) for i in range(n)]


def reference_row(m, tokens, parents, node, words):
    """The mask after the path to `node` (-1: now), from a fork consuming it one by one."""
    path = []
    while node >= 0:
        path.append(tokens[node])
        node = parents[node]
    f = m.fork()
    row = np.zeros((1, words), dtype=np.int32)
    for t in reversed(path):
        if not f.is_allowed(t) or not f.consume_token(t):
            return row[0]
    f.fill_next_token_bitmask(row)
    return row[0]


def random_tokens(m, tok, parents, rng, words):
    """Tokens mostly allowed by the parent's reference row (so paths go deep), some not;
    returns them and the reference rows."""
    tokens, want = [], [reference_row(m, [], [], -1, words)]
    for i, p in enumerate(parents):
        row = want[p + 1]
        allowed = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little"))
        allowed = [int(t) for t in allowed if t < tok.vocab_size]
        if allowed and rng.random() < 0.85:
            tokens.append(rng.choice(allowed))
        else:
            tokens.append(rng.randrange(tok.vocab_size))
        want.append(reference_row(m, tokens, parents, i, words))
    return tokens, want


@pytest.mark.parametrize("threads", [1, 2])
def test_draft_tree_equals_sequential(grammars, llama3, threads):  # noqa: F811
    sieve.set_num_threads(threads)
    try:
        rng = random.Random(17 + threads)
        words = llama3.mask_words
        total, accepted = 0, 0
        for round_ in range(10):
            ms = make_batch(grammars, llama3, 6, 100 * threads + round_)
            parents = [random_tree(rng, rng.randrange(0, 17)) for _ in ms]
            tokens, want = [], []
            for m, p in zip(ms, parents):
                t, w = random_tokens(m, llama3, p, rng, words)
                tokens.append(t)
                want.append(w)
            before = [m.compute_bitmask() for m in ms]
            counts = [m.num_tokens for m in ms]
            rows = sum(len(p) + 1 for p in parents)
            bm = np.full((rows, words), -1, dtype=np.int32)
            filled = sieve.fill_next_token_bitmask_draft_tree(ms, tokens, parents, bm)
            assert [m.num_tokens for m in ms] == counts
            assert [m.compute_bitmask() for m in ms] == before
            offset = 0
            for i, w in enumerate(want):
                for k, row in enumerate(w):
                    assert (bm[offset + k] == row).all(), f"request {i} row {k}"
                live = sum(1 for row in w if row.any())
                assert filled[i] == live
                total += len(w) - 1
                accepted += live - 1
                offset += len(w)
        print(f"draft tree: {total} nodes, {accepted} accepted")
        assert accepted * 2 > total, (accepted, total)
    finally:
        sieve.set_num_threads(2)


def test_draft_tree_offsets_and_errors(grammars, llama3):  # noqa: F811
    ms = make_batch(grammars, llama3, 2, 7)
    words = llama3.mask_words
    a = ms[0].allowed_tokens()[0]
    bm = np.full((8, words), -1, dtype=np.int32)
    filled = sieve.fill_next_token_bitmask_draft_tree(
        ms, [[a], []], [[-1], []], bm, offsets=[5, 1]
    )
    assert filled[1] == 1 and filled[0] >= 1
    assert bm[1].tobytes() == ms[1].compute_bitmask()
    assert bm[5].tobytes() == ms[0].compute_bitmask()
    for r in (0, 2, 3, 4, 7):
        assert (bm[r] == -1).all()
    fresh = np.full((8, words), -1, dtype=np.int32)
    for tokens, parents, offsets, err in [
        ([[a, a]], [[-1, 1]], None, ValueError),  # a parent not before its node
        ([[a, a]], [[-1, -2]], None, ValueError),
        ([[a]], [[-1, 0]], None, ValueError),  # lengths differ
        ([[llama3.vocab_size]], [[-1]], None, ValueError),  # out of range
        ([[a]], [[-1]], [7], IndexError),  # rows past the bitmask
    ]:
        with pytest.raises(err):
            sieve.fill_next_token_bitmask_draft_tree(ms[:1], tokens, parents, fresh, offsets)
    with pytest.raises(ValueError):
        sieve.fill_next_token_bitmask_draft_tree(ms, [[a]], [[-1]], fresh)
    assert (fresh == -1).all(), "a refused call writes nothing"


def test_draft_tree_matcher_in_error(llama3):
    m = sieve.Matcher(sieve.Grammar.regex(llama3, "ab"))
    bad = llama3.greedy_tokenize(b"x")[0]
    assert not m.consume_token(bad)
    bm = np.full((3, llama3.mask_words), -1, dtype=np.int32)
    filled = sieve.fill_next_token_bitmask_draft_tree([m], [[bad, bad]], [[-1, 0]], bm)
    assert filled == [1]
    # As fill_next_token_bitmask_draft: the row of a matcher in error allows only EOS.
    allowed = np.flatnonzero(np.unpackbits(bm[0].view(np.uint8), bitorder="little"))
    assert sorted(int(t) for t in allowed) == sorted(llama3.eos_token_ids)
    assert not bm[1:].any()
