"""Batch fills release the GIL: a Python thread keeps running while one fills.

A spinning thread counts iterations during one call. With a tiny switch interval it gets
the GIL within microseconds whenever the GIL is free; a call that holds the GIL throughout
(the control: building a tokenizer from a table, which runs with the GIL held) leaves it
almost nothing.
"""

import sys
import threading
import time

import numpy as np

import sieve


def iterations_during(call):
    done = threading.Event()
    count = [0]

    def spin():
        while not done.is_set():
            count[0] += 1

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.01)
        before = count[0]
        start = time.perf_counter()
        call()
        elapsed = time.perf_counter() - start
        during = count[0] - before
    finally:
        done.set()
        t.join()
        sys.setswitchinterval(old)
    return during, elapsed


def test_python_runs_while_a_batch_fills(llama3):
    # 256 fresh grammars: every first mask is computed from scratch, so one call is long
    # (64 were enough until first masks got cheaper: 2.4 ms for 64 in stop 51).
    n = 256
    schema = {"type": "object", "properties": {
        f"k{i}": {"type": "string", "pattern": "^[a-z]{2,9}-[0-9]{1,4}$"} for i in range(12)}}
    grammars = [sieve.Grammar.json_schema(llama3, {**schema, "title": str(i)})
                for i in range(n)]
    matchers = [sieve.Matcher(g) for g in grammars]
    bitmask = np.zeros((n, llama3.mask_words), dtype=np.int32)

    sieve.set_num_threads(1)
    try:
        during, elapsed = iterations_during(
            lambda: sieve.fill_next_token_bitmask_batch(matchers, bitmask))
    finally:
        sieve.set_num_threads(2)
    assert bitmask.any(axis=1).all()
    assert elapsed > 0.005, elapsed

    table = [bytes([i % 256]) * (1 + i % 7) + str(i).encode() for i in range(150_000)]
    held, held_elapsed = iterations_during(lambda: sieve.Tokenizer.from_table(table))
    print(f"GIL: {during} iterations in {elapsed * 1e3:.1f} ms of batch fill; "
          f"{held} in {held_elapsed * 1e3:.1f} ms of a call that holds it", file=sys.stderr)
    assert held_elapsed > 0.005
    # Per millisecond, the thread ran at least 10 times as often during the batch fill
    # (measured here: 50 to 100 times).
    assert during / (elapsed * 1e3) > 10 * max(held, 1) / (held_elapsed * 1e3), \
        (during, elapsed, held, held_elapsed)
    assert during > 1000
