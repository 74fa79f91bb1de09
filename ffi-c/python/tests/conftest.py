"""Shared fixtures: the repository, `../shared` (tokenizers, MaskBench), and the C ABI
(`libsieve.so`, through ctypes) as the reference the Python masks are compared with.

A test that cannot run skips with `skip()`, which also prints a `SKIP:` line to stderr so
that `.ci/run` (pytest `-rs`) and a reader of the log see it.
"""

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def skip(reason: str):
    print(f"SKIP: {reason}", file=sys.stderr)
    pytest.skip(reason)


def shared_dir() -> Path:
    return Path(os.environ.get("SIEVE_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def shared():
    d = shared_dir()
    if not (d / "tokenizers").is_dir():
        skip(f"../shared not found at {d} (set SIEVE_SHARED)")
    return d


@pytest.fixture(scope="session")
def llama3(shared):
    import sieve

    return sieve.Tokenizer.from_file(str(shared / "tokenizers" / "llama3.json"))


@pytest.fixture(scope="session")
def small_vocab():
    """A 60-token vocabulary: bytes of JSON and a few multi-byte tokens, EOS = 59."""
    import sieve

    pieces = [bytes([b]) for b in b'{}[],:"0123456789abcdefghijklmnopqrstuvwxyz -.']
    pieces += [b'{"', b'":', b'",', b'"}', b'true', b'false', b'null', b'ab', b'12',
               b'\n  ', b'  ', b'"a"', b'"b"']
    pieces = pieces[:59]
    tokens = pieces + [b"</s>"]
    return sieve.Tokenizer.from_table(tokens, special=[59], eos=[59])


def maskbench_schemas(shared: Path, n: int):
    """The first `n` MaskBench schemas (sorted by file name, every 40th file, so that the
    families are mixed), as JSON text."""
    files = sorted((shared / "data" / "maskbench").glob("*.json"))
    out = []
    for f in files[::40]:
        out.append((f.name, json.dumps(json.loads(f.read_text())["schema"])))
        if len(out) == n:
            break
    return out


class CApi:
    """The C ABI's tokenizer, grammar and matcher, for comparing masks."""

    def __init__(self, path: Path):
        lib = ctypes.CDLL(str(path))
        p = ctypes.c_void_p
        lib.sieve_tokenizer_from_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                                  ctypes.POINTER(p), ctypes.POINTER(p)]
        lib.sieve_grammar_new_json_schema.argtypes = [p, ctypes.c_char_p, ctypes.c_size_t, p,
                                                      p, ctypes.POINTER(p), ctypes.POINTER(p)]
        lib.sieve_grammar_new.argtypes = [p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t,
                                          p, ctypes.POINTER(p), ctypes.POINTER(p)]
        lib.sieve_matcher_new.argtypes = [p, ctypes.POINTER(p)]
        lib.sieve_matcher_compute_mask.argtypes = [p, ctypes.POINTER(ctypes.c_uint32),
                                                   ctypes.c_size_t]
        lib.sieve_matcher_consume_token.argtypes = [p, ctypes.c_uint32]
        lib.sieve_matcher_free.argtypes = [p]
        lib.sieve_grammar_free.argtypes = [p]
        lib.sieve_tokenizer_free.argtypes = [p]
        lib.sieve_error_free.argtypes = [p]
        self.lib = lib

    def tokenizer(self, json_text: bytes):
        out, err = ctypes.c_void_p(), ctypes.c_void_p()
        st = self.lib.sieve_tokenizer_from_json(json_text, len(json_text), ctypes.byref(out),
                                                ctypes.byref(err))
        assert st == 0, f"sieve_tokenizer_from_json: status {st}"
        return out

    def grammar(self, tok, kind: int, text: str):
        """kind: 1 lark, 2 regex, 3 json schema, 4 structural tag, 5 gbnf (sieve.h)."""
        data = text.encode()
        out, err = ctypes.c_void_p(), ctypes.c_void_p()
        if kind == 3:
            st = self.lib.sieve_grammar_new_json_schema(tok, data, len(data), None, None,
                                                        ctypes.byref(out), ctypes.byref(err))
        else:
            st = self.lib.sieve_grammar_new(tok, kind, data, len(data), None, ctypes.byref(out),
                                            ctypes.byref(err))
        if st != 0:
            self.lib.sieve_error_free(err)
            return None
        return out

    def matcher(self, grammar):
        out = ctypes.c_void_p()
        assert self.lib.sieve_matcher_new(grammar, ctypes.byref(out)) == 0
        return out

    def mask(self, matcher, words: int):
        buf = (ctypes.c_uint32 * words)()
        st = self.lib.sieve_matcher_compute_mask(matcher, buf, words)
        return st, bytes(buf)

    def consume(self, matcher, token: int) -> int:
        return self.lib.sieve_matcher_consume_token(matcher, token)


@pytest.fixture(scope="session")
def capi():
    path = Path(os.environ.get("SIEVE_LIB", REPO / "target" / "release" / "libsieve.so"))
    if not path.exists():
        r = subprocess.run(["cargo", "build", "--release", "-p", "sieve-ffi-c"], cwd=REPO)
        if r.returncode != 0 or not path.exists():
            skip(f"the C library {path} is missing and could not be built")
    return CApi(path)
