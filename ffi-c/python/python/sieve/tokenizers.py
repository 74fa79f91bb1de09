"""Vocabularies in the forms serving engines hand over, as `sieve.Tokenizer`s.

| what the engine has | call |
|---|---|
| a `tokenizers.Tokenizer` or a transformers *fast* tokenizer | `sieve.Tokenizer.from_huggingface(tok)` |
| a transformers 4 *slow* tokenizer (SentencePiece, ...) | `from_slow(tok)`: transformers' `convert_slow_tokenizer`, then as above (transformers 5 converts a SentencePiece model itself when it loads one: its tokenizer is a fast one) |
| a SentencePiece `.model` file | `from_sentencepiece(path)` (the `sentencepiece` package) |
| Mistral's tekken JSON (`tekken.json`, or a mistral_common `Tekkenizer`) | `from_tekken(path_or_tokenizer)` |
| a GGUF file's vocabulary (`gpt2` byte-level BPE or `llama` SentencePiece) | `from_gguf(path)` (the `gguf` package) |
| any of these | `from_any(obj)` |

Each builds a table of every token's bytes, the control tokens and the EOS ids, then calls
`sieve.Tokenizer.from_table`. `n_vocab` pads the table to the model's logits width (ids past
the tokenizer's are never allowed); `eos` overrides the EOS ids.
"""

import base64
import json

from ._sieve import Tokenizer

__all__ = ["from_any", "from_gguf", "from_sentencepiece", "from_slow", "from_tekken"]


def _table(tokens, special, eos, n_vocab=None):
    """`Tokenizer.from_table` with `tokens` padded to `n_vocab` by unreachable specials."""
    tokens = [bytes(t) for t in tokens]
    special = sorted(set(special))
    if n_vocab is not None and n_vocab > len(tokens):
        pad = range(len(tokens), n_vocab)
        special += list(pad)
        tokens += [f"<sieve_pad_{i}>".encode() for i in pad]
    eos = [e for e in eos if e is not None and 0 <= e < len(tokens)]
    return Tokenizer.from_table(tokens, special, eos)


def _byte_decoder():
    """GPT-2's byte-level alphabet, reversed: the character each byte is stored as -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def _spm_piece(piece: str, is_byte: bool) -> bytes:
    """A SentencePiece piece's bytes: `<0xNN>` byte pieces, `▁` as a space."""
    if is_byte:
        return bytes([int(piece[3:5], 16)])
    return piece.replace("\u2581", " ").encode("utf-8")


def from_sentencepiece(model, *, eos=None, n_vocab=None) -> Tokenizer:
    """From a SentencePiece model (a `.model` path, its bytes, or a
    `sentencepiece.SentencePieceProcessor`). Control and unknown pieces become control
    tokens; EOS is the model's `eos_id` unless `eos` is given."""
    import sentencepiece

    sp = model
    if not isinstance(model, sentencepiece.SentencePieceProcessor):
        sp = sentencepiece.SentencePieceProcessor()
        if isinstance(model, (bytes, bytearray)):
            sp.LoadFromSerializedProto(bytes(model))
        else:
            sp.Load(str(model))
    tokens, special = [], []
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if sp.is_control(i) or sp.is_unknown(i):
            special.append(i)
            tokens.append(piece.encode("utf-8"))
        else:
            tokens.append(_spm_piece(piece, sp.is_byte(i)))
    return _table(tokens, special, eos if eos is not None else [sp.eos_id()], n_vocab)


def from_slow(tokenizer, *, eos=None, n_vocab=None) -> Tokenizer:
    """From a transformers slow tokenizer, through transformers' own conversion to a fast
    one (`convert_slow_tokenizer`); EOS: `eos`, else the tokenizer's `eos_token_id`."""
    from transformers.convert_slow_tokenizer import convert_slow_tokenizer

    fast = convert_slow_tokenizer(tokenizer)
    if eos is None and getattr(tokenizer, "eos_token_id", None) is not None:
        eos = [tokenizer.eos_token_id]
    return Tokenizer.from_huggingface(fast, eos=eos, n_vocab=n_vocab)


# mistral_common's special tokens of tekken files that list none (`tekken.py`,
# `DEPRECATED_SPECIAL_TOKENS`), by rank; the rest are `<SPECIAL_{id}>`.
_TEKKEN_DEFAULT_SPECIALS = [
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
]


def from_tekken(source, *, eos=None, n_vocab=None) -> Tokenizer:
    """From Mistral's tekken format: a `tekken.json` path, its parsed dict, or a
    mistral_common `Tekkenizer` (its `file_path`). Ids below `default_num_special_tokens`
    are control tokens (named by `special_tokens`, else mistral_common's defaults); the
    byte-level vocabulary follows, by rank, up to `default_vocab_size`. EOS: `</s>`."""
    if hasattr(source, "file_path"):
        source = source.file_path
    data = source if isinstance(source, dict) else json.loads(open(source, "rb").read())
    config = data["config"]
    n_special = int(config.get("default_num_special_tokens", 1000))
    size = int(config.get("default_vocab_size", n_special + len(data["vocab"])))
    names = [f"<SPECIAL_{i}>" for i in range(n_special)]
    listed = data.get("special_tokens")
    if listed:
        for t in listed:
            names[int(t["rank"])] = t["token_str"]
    else:
        names[:len(_TEKKEN_DEFAULT_SPECIALS)] = _TEKKEN_DEFAULT_SPECIALS
    inner = sorted(data["vocab"], key=lambda t: t["rank"])[: size - n_special]
    tokens = [n.encode("utf-8") for n in names] + \
        [base64.b64decode(t["token_bytes"]) for t in inner]
    if eos is None:
        eos = [names.index("</s>")] if "</s>" in names else []
    return _table(tokens, range(n_special), eos, n_vocab)


def from_gguf(path, *, eos=None, n_vocab=None) -> Tokenizer:
    """From the vocabulary stored in a GGUF file (`tokenizer.ggml.*`): `gpt2` (byte-level
    BPE: tokens in GPT-2's byte alphabet) or `llama` (SentencePiece: `▁`, `<0xNN>` byte
    tokens). CONTROL and UNKNOWN tokens become control tokens (USER_DEFINED ones are text);
    EOS: `tokenizer.ggml.eos_token_id` (and `eot_token_id`) unless `eos` is given."""
    import gguf

    reader = gguf.GGUFReader(str(path))

    def field(name):
        f = reader.fields.get(name)
        return None if f is None else f.contents()

    model = field("tokenizer.ggml.model")
    pieces = field("tokenizer.ggml.tokens")
    types = field("tokenizer.ggml.token_type") or [1] * len(pieces)
    if pieces is None or model not in ("gpt2", "llama"):
        raise ValueError(f"{path}: no gpt2 or llama vocabulary (tokenizer.ggml.model = {model!r})")
    control, unknown, user, byte = 3, 2, 4, 6
    decoder = _byte_decoder()
    tokens, special = [], []
    for i, (piece, kind) in enumerate(zip(pieces, types)):
        if kind in (control, unknown):
            special.append(i)
            tokens.append(piece.encode("utf-8"))
        elif model == "llama":
            tokens.append(_spm_piece(piece, kind == byte))
        elif kind == user:
            tokens.append(piece.encode("utf-8"))
        else:
            try:
                tokens.append(bytes(decoder[c] for c in piece))
            except KeyError:  # not in the byte alphabet: stored as text
                tokens.append(piece.encode("utf-8"))
    if eos is None:
        eos = [field("tokenizer.ggml.eos_token_id"), field("tokenizer.ggml.eot_token_id")]
    return _table(tokens, special, eos, n_vocab)


def from_any(obj, *, n_vocab=None) -> Tokenizer:
    """A `sieve.Tokenizer` from whatever an engine holds: a `sieve.Tokenizer` (returned as
    is), a tokenizers/transformers fast tokenizer, a transformers slow tokenizer, a
    mistral_common tokenizer (tekken), or a path to a `tokenizer.json`, `tekken.json`,
    `.model` (SentencePiece) or `.gguf` file."""
    if isinstance(obj, Tokenizer):
        return obj
    # mistral_common's MistralTokenizer (`.instruct_tokenizer.tokenizer`), vLLM's wrapper of
    # it (`.tokenizer`), or the Tekkenizer / SentencePieceTokenizer itself.
    for inner in (getattr(getattr(obj, "instruct_tokenizer", None), "tokenizer", None),
                  getattr(obj, "tokenizer", None), obj):
        kind = type(inner).__name__
        if kind == "Tekkenizer" and hasattr(inner, "file_path"):
            return from_tekken(inner, n_vocab=n_vocab)
        if kind == "SentencePieceTokenizer" and hasattr(inner, "_model"):
            return from_sentencepiece(inner._model, n_vocab=n_vocab)
    if hasattr(obj, "backend_tokenizer") or hasattr(obj, "to_str"):
        return Tokenizer.from_huggingface(obj, n_vocab=n_vocab)
    if hasattr(obj, "vocab_file") or hasattr(obj, "sp_model"):
        return from_slow(obj, n_vocab=n_vocab)
    path = str(obj)
    if path.endswith(".gguf"):
        return from_gguf(path, n_vocab=n_vocab)
    if path.endswith(".model") or ".model." in path:
        return from_sentencepiece(path, n_vocab=n_vocab)
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    data = json.loads(text)
    if "config" in data and "vocab" in data:
        return from_tekken(data, n_vocab=n_vocab)
    return Tokenizer.from_json(text, n_vocab=n_vocab)
