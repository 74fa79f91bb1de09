"""A smoke test of an installed `sieve` wheel with nothing but the standard library (no
pytest, no numpy): run by `ffi-c/python/aarch64.sh` with the host's x86-64 build and, under
qemu-aarch64, with the cross-compiled aarch64 wheel. Both runs must print the same `digest`
line (a SHA-256 of every allowed-token list and mask along the walks below).

    python ffi-c/python/tests/aarch64_smoke.py ../shared/tokenizers/llama3.json

Not a pytest module (its name does not start with `test_`). Exits non-zero on a failed check.

What it checks, on the Llama 3 tokenizer:
- a regex with a finite language: at each step of a walk, the allowed tokens equal those
  computed here in Python (a token is allowed when the text so far followed by its bytes is a
  prefix of a word of the language; EOS when the text is a word);
- a JSON Schema: a valid document walked token by token (greedy tokenization), each token
  allowed (`is_allowed`, `allowed_tokens()`, `compute_bitmask()`) and a wrong token rejected;
- the batch call (`fill_next_token_bitmask_batch`, the thread pool) into a ctypes buffer
  exposing `__array_interface__`, against `compute_bitmask()`.
"""

import hashlib
import json
import platform
import sys

import sieve

digest = hashlib.sha256()
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")


def bits(mask: bytes, vocab_size: int):
    """The allowed ids of a little-endian int32 mask."""
    out = []
    for i, byte in enumerate(mask):
        if byte:
            for b in range(8):
                t = 8 * i + b
                if byte >> b & 1 and t < vocab_size:
                    out.append(t)
    return out


def record(name, step, m, vocab_size):
    """Adds the matcher's allowed tokens and mask to the digest; checks they agree."""
    allowed = m.allowed_tokens()
    mask = m.compute_bitmask()
    check(bits(mask, vocab_size) == allowed, f"{name} step {step}: compute_bitmask != allowed_tokens")
    digest.update(f"{name}:{step}:{len(allowed)}:".encode())
    digest.update(b",".join(str(t).encode() for t in allowed))
    digest.update(mask)
    return allowed


def regex_walk(tok):
    """A finite language: every expected mask is computed here from the token bytes."""
    pattern = r"(cat|dog|bird)s?( [0-9]{1,2})?"
    words = set()
    for a in ("cat", "dog", "bird"):
        for s in ("", "s"):
            words.add(f"{a}{s}".encode())
            for n in [f"{i}" for i in range(10)] + [f"{i:02}" for i in range(100)]:
                words.add(f"{a}{s} {n}".encode())
    prefixes = {w[:i] for w in words for i in range(len(w) + 1)}
    vocab = tok.vocab_size
    special = set(tok.special_token_ids)
    eos = set(tok.eos_token_ids)
    table = [b"" if t in special else tok.token_bytes(t) for t in range(vocab)]

    g = sieve.Grammar.regex(tok, pattern)
    walked = 0
    for k, text in enumerate((b"birds 42", b"dog", b"cats 07")):
        m = sieve.Matcher(g)
        ids = tok.greedy_tokenize(text)
        walked += len(ids)
        done = b""
        for step, t in enumerate(ids + [None]):
            allowed = record(f"regex{k}", step, m, vocab)
            expected = [i for i in range(vocab) if table[i] and done + table[i] in prefixes]
            if done in words:
                expected = sorted(set(expected) | eos)
            check(allowed == expected, f"regex step {step} after {done!r}: {len(allowed)} "
                  f"allowed, {len(expected)} expected (first differences: "
                  f"{sorted(set(allowed) ^ set(expected))[:5]})")
            if t is None:
                break
            check(m.is_allowed(t), f"regex step {step}: the walked token {t} is not allowed")
            check(m.consume_token(t), f"regex step {step}: consume_token({t}) failed")
            done += table[t]
        check(m.is_accepting(), f"regex: not accepting after {text!r}")
        wrong = tok.greedy_tokenize(b"x")[0]
        check(not m.is_allowed(wrong), f"regex: 'x' allowed after {text!r}")
    print(f"regex {pattern!r}: {walked} tokens walked, every mask as computed here")


def json_walk(tok):
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
            "ok": {"type": "boolean"},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    g = sieve.Grammar.json_schema(tok, schema, options=sieve.JsonOptions(whitespace="compact"))
    doc = json.dumps({"name": "Ada Lovelace", "age": 36, "tags": ["a", "c"], "ok": True},
                     separators=(",", ":")).encode()
    ids = tok.greedy_tokenize(doc)
    check(ids is not None, "json: the document does not tokenize")
    m = sieve.Matcher(g)
    wrong = tok.greedy_tokenize(b"x")[0]
    counts = []
    for step, t in enumerate(ids):
        allowed = record("json", step, m, tok.vocab_size)
        counts.append(len(allowed))
        check(t in set(allowed), f"json step {step}: the walked token {t} not in allowed_tokens()")
        check(m.is_allowed(t), f"json step {step}: the walked token {t} not allowed")
        if step == 0 or tok.token_bytes(t) in (b":", b'":'):
            check(not m.is_allowed(wrong), f"json step {step}: the wrong token 'x' is allowed")
        check(m.consume_token(t), f"json step {step}: consume_token({t}) failed")
    record("json", len(ids), m, tok.vocab_size)
    check(m.is_accepting(), "json: not accepting after the document")
    eos = tok.eos_token_id
    check(eos is not None and m.is_allowed(eos), "json: EOS not allowed at the end")
    # A rejected token puts a fresh matcher in the error state.
    bad = sieve.Matcher(g)
    check(not bad.consume_token(wrong) and bad.is_error(), "json: 'x' consumed at the start")
    print(f"json schema: {len(ids)} tokens walked; allowed counts {counts[:8]}...")
    return g, ids


class Mask:
    """A (rows, words) int32 buffer in ctypes with numpy's `__array_interface__`."""

    def __init__(self, ctypes, rows, words):
        self.buf = (ctypes.c_int32 * (rows * words))()
        self.rows, self.words = rows, words
        self.__array_interface__ = {
            "shape": (rows, words), "typestr": "<i4", "version": 3,
            "data": (ctypes.addressof(self.buf), False),
        }

    def row(self, r):
        return bytes(memoryview(self.buf).cast("B")[4 * self.words * r:4 * self.words * (r + 1)])


def batch(tok, g, ids):
    try:
        import ctypes
    except ImportError as e:
        print(f"SKIP: aarch64 smoke: ctypes not importable ({e}); the batch call is not checked")
        return
    n = min(len(ids), 8)
    matchers = []
    for k in range(n):
        m = sieve.Matcher(g)
        check(m.consume_tokens(ids[:k]), f"batch: consume_tokens(ids[:{k}]) failed")
        matchers.append(m)
    mask = Mask(ctypes, n, g.mask_words)
    sieve.fill_next_token_bitmask_batch(matchers, mask)
    for k, m in enumerate(matchers):
        check(mask.row(k) == m.compute_bitmask(), f"batch: row {k} != compute_bitmask()")
        digest.update(mask.row(k))
    print(f"batch: {n} rows filled by fill_next_token_bitmask_batch "
          f"({sieve.get_num_threads()} threads), equal to compute_bitmask()")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: aarch64_smoke.py TOKENIZER_JSON")
    tok = sieve.Tokenizer.from_file(sys.argv[1])
    print(f"sieve {sieve.__version__} on {platform.machine()}, Python {platform.python_version()}; "
          f"vocab {tok.vocab_size}")
    regex_walk(tok)
    g, ids = json_walk(tok)
    batch(tok, g, ids)
    print(f"digest {digest.hexdigest()}")
    if failures:
        sys.exit(f"{len(failures)} checks failed")
    print("ok")


if __name__ == "__main__":
    main()
