"""The vocabularies engines hand over (`sieve.tokenizers`), each checked two ways against
code that is not sieve's:

- the table: texts encoded by the tokenizer's own library (sentencepiece, mistral_common,
  transformers) decode, through sieve's table, to the same bytes;
- the masks: along a walk of sample regexes, the allowed set equals a brute force over
  every token of the vocabulary with the `regex` package's partial matching (a token is
  allowed iff the text so far plus its bytes can still become a full match; EOS iff the text
  is one already).

The sources: mistral_common's packaged SentencePiece models and tekken files (PyPI), the
SmolLM2 GGUF of `sieve generate`, and a GGUF written with the `gguf` package from a
SentencePiece model (no real `llama`-type GGUF is at hand).
"""

import os
from pathlib import Path

import pytest

import sieve
import sieve.tokenizers as st
from conftest import skip

TEXTS = ["Hello, world!", "  two  spaces\nand a newline", "naïve café 東京 🙂", "x=42; y = [1, 2]"]
# (pattern, a text it matches fully): ASCII, so that bytes patterns see what sieve sees.
GRAMMARS = [
    (rb"[a-z]+( [a-z]+)*\.", b"the cat sat."),
    (rb'\{"n": (0|[1-9][0-9]*)\}', b'{"n": 120}'),
]


def need(module):
    try:
        return __import__(module)
    except ImportError:
        skip(f"the `{module}` package is not installed")


def mistral_data():
    mc = need("mistral_common")
    return Path(mc.__file__).parent / "data"


def brute_allowed(table, pattern, text, eos):
    regex = need("regex")
    out = [t for t, b in table.items()
           if regex.fullmatch(pattern, text + b, partial=True) is not None]
    if regex.fullmatch(pattern, text) is not None:
        out += eos
    return sorted(out)


def check_masks(tok, table):
    """`table`: id -> bytes of every non-control token, from the tokenizer's own library."""
    for pattern, doc in GRAMMARS:
        g = sieve.Grammar.regex(tok, pattern.decode())
        m = sieve.Matcher(g)
        ids = tok.greedy_tokenize(doc)
        assert ids and tok.decode_bytes(ids) == doc
        text = b""
        for t in ids + [tok.eos_token_ids[0]]:
            assert m.allowed_tokens() == brute_allowed(table, pattern, text, tok.eos_token_ids), \
                f"{pattern!r} after {text!r}"
            assert m.consume_token(t)
            if t not in tok.eos_token_ids:
                text += table[t]
        assert m.is_stopped()


def test_sentencepiece_and_slow(shared, tmp_path):
    spm = need("sentencepiece")
    path = mistral_data() / "tokenizer.model.v1"
    sp = spm.SentencePieceProcessor(model_file=str(path))
    tok = st.from_sentencepiece(path)
    assert tok.vocab_size == sp.get_piece_size() and tok.eos_token_ids == [sp.eos_id()]
    for text in TEXTS:
        ids = sp.encode(text)
        # SentencePiece adds a space in front (its dummy prefix); the table keeps it.
        assert tok.decode_bytes(ids) == (" " + text).encode(), text
    # The table, token by token, from sentencepiece's own decoding of a known prefix.
    anchor = sp.piece_to_id("\u2581a")
    table = {}
    for i in range(sp.get_piece_size()):
        if sp.is_control(i) or sp.is_unknown(i):
            continue
        if sp.is_byte(i):
            table[i] = bytes([int(sp.id_to_piece(i)[3:5], 16)])
        else:
            table[i] = sp.decode([anchor, i]).encode()[len(sp.decode([anchor]).encode()):]
            if sp.id_to_piece(i).startswith("\u2581") and not table[i].startswith(b" "):
                table[i] = b" " + table[i]
    check_masks(tok, table)

    # transformers given only the SentencePiece model converts it to a fast tokenizer
    # (its own conversion code); sieve's table from that equals the one read directly.
    transformers = need("transformers")
    (tmp_path / "tokenizer.model").write_bytes(path.read_bytes())
    hf = transformers.LlamaTokenizer.from_pretrained(str(tmp_path))
    via_hf = st.from_any(hf)
    assert via_hf.vocab_size == tok.vocab_size and via_hf.eos_token_ids == tok.eos_token_ids
    assert all(via_hf.token_bytes(i) == tok.token_bytes(i) for i in range(tok.vocab_size))


@pytest.mark.parametrize("name", ["tekken_240718.json", "tekken_240911.json"])
def test_tekken(name):
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    path = mistral_data() / name
    mc = Tekkenizer.from_file(str(path))
    tok = st.from_tekken(path)
    assert tok.vocab_size == mc.n_words
    assert tok.eos_token_ids == [mc.eos_id]
    assert sorted(tok.special_token_ids) == sorted(range(mc.num_special_tokens))
    table = {i: mc.id_to_byte_piece(i, SpecialTokenPolicy.KEEP)
             for i in range(mc.num_special_tokens, mc.n_words)}
    assert all(tok.token_bytes(i) == b for i, b in table.items())
    for text in TEXTS:
        ids = mc.encode(text, bos=False, eos=False)
        assert tok.decode_bytes(ids) == text.encode(), text
    check_masks(tok, table)
    assert st.from_any(mc).vocab_size == mc.n_words
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    wrapped = MistralTokenizer.from_file(str(path))  # what vLLM's Mistral mode holds
    assert st.from_any(wrapped).eos_token_ids == [mc.eos_id]
    assert st.from_any(str(path)).vocab_size == mc.n_words


def smollm2_gguf():
    path = Path(os.environ.get("SIEVE_MODEL_GGUF") or
                Path.home() / ".cache" / "sieve" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not path.is_file():
        skip(f"no GGUF model at {path} (set SIEVE_MODEL_GGUF)")
    return path


def test_gguf_byte_level(shared):
    need("gguf")
    transformers = need("transformers")
    path = smollm2_gguf()
    tok = st.from_gguf(path)
    hf = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    assert tok.vocab_size == len(hf) and tok.eos_token_ids == [hf.eos_token_id]
    for text in TEXTS:
        ids = hf.encode(text, add_special_tokens=False)
        assert tok.decode_bytes(ids) == text.encode(), text
    ref = sieve.Tokenizer.from_huggingface(hf)
    table = {i: ref.token_bytes(i) for i in range(ref.vocab_size) if not ref.is_special(i)}
    assert sorted(tok.special_token_ids) == sorted(ref.special_token_ids)
    check_masks(tok, table)


def test_gguf_sentencepiece(tmp_path):
    gguf = need("gguf")
    spm = need("sentencepiece")
    sp = spm.SentencePieceProcessor(model_file=str(mistral_data() / "tokenizer.model.v1"))
    n = sp.get_piece_size()
    kinds = [3 if sp.is_control(i) else 2 if sp.is_unknown(i) else 6 if sp.is_byte(i) else 1
             for i in range(n)]
    out = tmp_path / "spm.gguf"
    w = gguf.GGUFWriter(str(out), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list([sp.id_to_piece(i) for i in range(n)])
    w.add_token_types(kinds)
    w.add_eos_token_id(sp.eos_id())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tok, direct = st.from_gguf(out), st.from_sentencepiece(sp)
    assert tok.vocab_size == n and tok.eos_token_ids == [sp.eos_id()]
    assert all(tok.token_bytes(i) == direct.token_bytes(i) for i in range(n))
    assert st.from_any(str(out)).vocab_size == n


def test_padding_to_the_model_width(shared):
    tok = st.from_tekken(mistral_data() / "tekken_240718.json", n_vocab=131072 + 64)
    assert tok.vocab_size == 131072 + 64
    m = sieve.Matcher(sieve.Grammar.regex(tok, "[0-9]+"))
    assert max(m.allowed_tokens()) < 131072
