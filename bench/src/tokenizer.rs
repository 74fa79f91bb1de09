//! Loading real tokenizers into a [`sieve_core::Vocabulary`] plus an encoder.
//!
//! Two sources are supported:
//! - the tiktoken encodings embedded in `tiktoken-rs` (`o200k_base`, `cl100k_base`), needing
//!   no files;
//! - a Hugging Face `tokenizer.json`, read twice: once as plain JSON (through `serde_json`) to
//!   recover the exact bytes of every token id, and once by the `tokenizers` crate, which is
//!   used only to encode text.
//!
//! Invariants of the resulting [`TokenTable`]: `tokens.len()` is max id + 1; an unused id has
//! empty bytes; a special token's bytes are its text (e.g. `<|eot_id|>`); every EOS id is a
//! special token. Byte-level BPE vocabularies are mapped back through the inverse of GPT-2's
//! bytes-to-unicode table; SentencePiece-style vocabularies map `▁` to a space and `<0xNN>` to
//! that single byte.
//!
//! Loading costs one pass over the vocabulary (about 0.1 to 2 s for the files in
//! `shared/tokenizers`, dominated by the `tokenizers` crate's own parse); nothing here is on a
//! hot path.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

/// Token names treated as end-of-sequence when they are special added tokens of a
/// `tokenizer.json` (and not its `unk_token`), in preference order: chat-turn ends first, then
/// document ends. [`TokenTable::eos`] follows this order.
pub const KNOWN_EOS_NAMES: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<|endoftext|>",
    "</s>",
    "<eos>",
];

/// Token ids above this are rejected as a malformed file rather than sized into a mask.
const MAX_TOKEN_ID: u64 = 1 << 24;

/// How a tokenizer spells token bytes in its vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerKind {
    /// tiktoken ranks embedded in `tiktoken-rs`: bytes are stored as bytes.
    Tiktoken,
    /// Hugging Face byte-level BPE (GPT-2, Llama 3, Qwen, ...): bytes spelled through GPT-2's
    /// bytes-to-unicode table.
    ByteLevel,
    /// SentencePiece-style (Llama 2, Mistral): `▁` is a space, `<0xNN>` a raw byte, and
    /// encoding prepends a space to the text.
    SentencePiece,
}

/// The raw data a [`sieve_core::Vocabulary`] is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenTable {
    /// `tokens[id]` = exact bytes of token `id`; empty for an unused id.
    pub tokens: Vec<Vec<u8>>,
    /// Ids of special (control) tokens, ascending.
    pub special: Vec<u32>,
    /// Ids of end-of-sequence tokens, preferred first (see [`KNOWN_EOS_NAMES`]).
    pub eos: Vec<u32>,
}

impl TokenTable {
    /// Number of ids, i.e. max id + 1.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }
}

enum Encoder {
    Tiktoken(&'static tiktoken_rs::CoreBPE),
    HuggingFace(Box<tokenizers::Tokenizer>),
}

/// A tokenizer loaded for constrained decoding: its vocabulary plus an encoder.
pub struct LoadedTokenizer {
    /// The canonical name (`o200k_base`, `cl100k_base`) or the path it was loaded from.
    pub name: String,
    /// The vocabulary handed to grammars and matchers.
    pub vocab: Arc<sieve_core::Vocabulary>,
    kind: TokenizerKind,
    table: TokenTable,
    encoder: Encoder,
}

impl std::fmt::Debug for LoadedTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTokenizer")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("vocab_size", &self.table.vocab_size())
            .field("eos", &self.table.eos)
            .finish_non_exhaustive()
    }
}

impl LoadedTokenizer {
    /// Loads `o200k_base`/`o200k` or `cl100k_base`/`cl100k` from the embedded tiktoken data,
    /// or anything else as a path to a Hugging Face `tokenizer.json`.
    pub fn load(name_or_path: &str) -> Result<LoadedTokenizer> {
        let (name, kind, table, encoder) = match name_or_path {
            "o200k_base" | "o200k" => {
                let bpe = tiktoken_rs::o200k_base_singleton();
                let table = tiktoken_table(bpe).context("reading the embedded o200k_base")?;
                let name = "o200k_base".to_owned();
                (name, TokenizerKind::Tiktoken, table, Encoder::Tiktoken(bpe))
            }
            "cl100k_base" | "cl100k" => {
                let bpe = tiktoken_rs::cl100k_base_singleton();
                let table = tiktoken_table(bpe).context("reading the embedded cl100k_base")?;
                let name = "cl100k_base".to_owned();
                (name, TokenizerKind::Tiktoken, table, Encoder::Tiktoken(bpe))
            }
            path => {
                let (kind, table, tok) = load_hf_file(Path::new(path))
                    .with_context(|| format!("loading tokenizer {path:?}"))?;
                let encoder = Encoder::HuggingFace(Box::new(tok));
                (path.to_owned(), kind, table, encoder)
            }
        };
        let vocab = Arc::new(
            sieve_core::Vocabulary::new(table.tokens.clone(), &table.special, &table.eos)
                .map_err(|e| anyhow!("building the vocabulary of {name}: {e}"))?,
        );
        Ok(LoadedTokenizer {
            name,
            vocab,
            kind,
            table,
            encoder,
        })
    }

    /// How the token bytes were spelled in the source.
    pub fn kind(&self) -> TokenizerKind {
        self.kind
    }

    /// The token bytes, special ids and EOS ids.
    pub fn table(&self) -> &TokenTable {
        &self.table
    }

    /// Encodes `text` without adding special tokens (no BOS); special-token text such as
    /// `<|endoftext|>` is tokenized as ordinary text.
    ///
    /// SentencePiece-style tokenizers prepend a space (`▁`) to the text, so the token bytes
    /// concatenate to `" " + text`. Qwen's NFC normalizer may change non-NFC input.
    pub fn try_encode(&self, text: &str) -> Result<Vec<u32>> {
        match &self.encoder {
            Encoder::Tiktoken(bpe) => Ok(bpe.encode_ordinary(text)),
            Encoder::HuggingFace(tok) => {
                let enc = tok
                    .encode_fast(text, false)
                    .map_err(|e| anyhow!("encoding with {}: {e}", self.name))?;
                Ok(enc.get_ids().to_vec())
            }
        }
    }

    /// [`Self::try_encode`], returning no tokens if the tokenizer reports an error (none of
    /// the supported files do for any `&str`).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.try_encode(text).unwrap_or_default()
    }

    /// The exact bytes of one token (empty for an unused or out-of-range id).
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.table
            .tokens
            .get(id as usize)
            .map_or(&[][..], |t| t.as_slice())
    }

    /// Concatenates token bytes as the tokenizer's decoder would: special tokens are kept as
    /// their text, and for SentencePiece-style tokenizers one leading space (the one encoding
    /// prepends) is removed. Out-of-range ids are skipped.
    pub fn decode_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id));
        }
        if self.kind == TokenizerKind::SentencePiece && out.first() == Some(&b' ') {
            out.remove(0);
        }
        out
    }
}

/// Reads every rank of an embedded tiktoken encoding.
fn tiktoken_table(bpe: &tiktoken_rs::CoreBPE) -> Result<TokenTable> {
    // `CoreBPE` keeps its rank maps private; `decode_bytes` on a single rank is the public way
    // to read them, failing for an unused rank.
    let mut special = Vec::new();
    let mut eos = Vec::new();
    for name in bpe.special_tokens() {
        let ids = bpe.encode_with_special_tokens(name);
        let [id] = ids[..] else {
            bail!("special token {name:?} does not encode to a single id: {ids:?}");
        };
        special.push(id);
        if name == "<|endoftext|>" {
            eos.push(id);
        }
    }
    special.sort_unstable();
    let max_special = special.last().copied().unwrap_or(0);

    // Ranks are dense with small gaps; stop after a long run of unused ids past every special.
    const MAX_GAP: u32 = 1 << 16;
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    let mut id: u32 = 0;
    let mut last_used: Option<u32> = None;
    loop {
        if id > max_special && last_used.is_some_and(|u| id - u > MAX_GAP) {
            break;
        }
        match bpe.decode_bytes(&[id]) {
            Ok(bytes) => {
                tokens.resize(id as usize, Vec::new());
                tokens.push(bytes);
                last_used = Some(id);
            }
            Err(_) => {
                if last_used.is_none() && id > MAX_GAP {
                    bail!("no token ids found");
                }
            }
        }
        id += 1;
    }
    Ok(TokenTable {
        tokens,
        special,
        eos,
    })
}

/// Parses a `tokenizer.json` for its byte table and builds the `tokenizers` encoder.
fn load_hf_file(path: &Path) -> Result<(TokenizerKind, TokenTable, tokenizers::Tokenizer)> {
    let text = std::fs::read_to_string(path).context("reading the file")?;
    let json: Value = serde_json::from_str(&text).context("parsing the JSON")?;
    let (kind, table) = hf_table(&json)?;
    let mut tok: tokenizers::Tokenizer = text
        .parse()
        .map_err(|e| anyhow!("the tokenizers crate rejected the file: {e}"))?;
    // Special-token text in user input is tokenized as text, not as the control token.
    tok.set_encode_special_tokens(true);
    Ok((kind, table, tok))
}

/// Builds the exact byte table of a parsed `tokenizer.json`.
pub fn hf_table(json: &Value) -> Result<(TokenizerKind, TokenTable)> {
    let model = json.get("model").context("no \"model\" object")?;
    let pieces = model_pieces(model)?;
    let kind = detect_kind(json, &pieces)?;
    let byte_fallback = model.get("byte_fallback").and_then(Value::as_bool) == Some(true)
        || pieces.iter().any(|(p, _)| p == "<0x00>");

    let mut table = TokenTable::default();
    let set = |table: &mut TokenTable, id: u64, bytes: Vec<u8>| -> Result<()> {
        if id > MAX_TOKEN_ID {
            bail!("token id {id} is larger than {MAX_TOKEN_ID}");
        }
        let id = id as usize;
        if table.tokens.len() <= id {
            table.tokens.resize(id + 1, Vec::new());
        }
        table.tokens[id] = bytes;
        Ok(())
    };

    let byte_level = ByteLevelDecoder::new();
    for (piece, id) in &pieces {
        let bytes = match kind {
            TokenizerKind::ByteLevel => byte_level
                .decode(piece)
                .with_context(|| format!("token {id} {piece:?} is not byte-level encoded"))?,
            TokenizerKind::SentencePiece => sentencepiece_bytes(piece, byte_fallback),
            TokenizerKind::Tiktoken => piece.as_bytes().to_vec(),
        };
        set(&mut table, *id, bytes)?;
    }

    let unk = model.get("unk_token").and_then(Value::as_str);
    let mut eos_ranked: Vec<(usize, u32)> = Vec::new();
    let added = match json.get("added_tokens") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => bail!("\"added_tokens\" is not an array"),
    };
    for entry in added {
        let id = entry
            .get("id")
            .and_then(Value::as_u64)
            .with_context(|| format!("added token without an integer id: {entry}"))?;
        let content = entry
            .get("content")
            .and_then(Value::as_str)
            .with_context(|| format!("added token {id} without a content string"))?;
        let special = entry.get("special").and_then(Value::as_bool) == Some(true);
        set(&mut table, id, content.as_bytes().to_vec())?;
        if special {
            let id = id as u32; // bounded by MAX_TOKEN_ID above
            table.special.push(id);
            let rank = KNOWN_EOS_NAMES.iter().position(|n| *n == content);
            if let Some(rank) = rank
                && unk != Some(content)
            {
                eos_ranked.push((rank, id));
            }
        }
    }
    table.special.sort_unstable();
    table.special.dedup();
    eos_ranked.sort_unstable();
    table.eos = eos_ranked.into_iter().map(|(_, id)| id).collect();
    table.eos.dedup();
    Ok((kind, table))
}

/// The `(piece, id)` pairs of a model's vocabulary: an object for BPE/WordPiece/WordLevel, an
/// array of `[piece, score]` (id = index) for Unigram.
fn model_pieces(model: &Value) -> Result<Vec<(String, u64)>> {
    match model.get("vocab") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(piece, id)| {
                let id = id
                    .as_u64()
                    .with_context(|| format!("vocab entry {piece:?} has no integer id"))?;
                Ok((piece.clone(), id))
            })
            .collect(),
        Some(Value::Array(entries)) => entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let piece = e
                    .get(0)
                    .and_then(Value::as_str)
                    .with_context(|| format!("unigram vocab entry {i} is not [piece, score]"))?;
                Ok((piece.to_owned(), i as u64))
            })
            .collect(),
        _ => bail!("\"model.vocab\" is missing or neither an object nor an array"),
    }
}

/// Byte-level if any component is `ByteLevel`; SentencePiece-style if any is `Metaspace` or
/// maps `▁`, or the vocabulary has `▁` and `<0xNN>` pieces.
fn detect_kind(json: &Value, pieces: &[(String, u64)]) -> Result<TokenizerKind> {
    let parts = ["normalizer", "pre_tokenizer", "decoder"].map(|k| json.get(k));
    if parts
        .iter()
        .flatten()
        .any(|v| has_component(v, &|c| c.get("type") == Some(&Value::from("ByteLevel"))))
    {
        return Ok(TokenizerKind::ByteLevel);
    }
    let metaspace = |c: &Value| {
        c.get("type") == Some(&Value::from("Metaspace"))
            || c.get("content").and_then(Value::as_str) == Some("\u{2581}")
            || c.get("prepend").and_then(Value::as_str) == Some("\u{2581}")
    };
    let has_byte_pieces = pieces.iter().any(|(p, _)| p == "<0x00>");
    let has_meta_pieces = pieces.iter().any(|(p, _)| p.starts_with('\u{2581}'));
    if parts.iter().flatten().any(|v| has_component(v, &metaspace))
        || (has_byte_pieces && has_meta_pieces)
    {
        return Ok(TokenizerKind::SentencePiece);
    }
    bail!(
        "unsupported tokenizer.json: neither byte-level BPE (a ByteLevel component) nor \
         SentencePiece-style (Metaspace, or `▁` and `<0xNN>` pieces)"
    )
}

/// Whether `v` or any object nested in it satisfies `pred`.
fn has_component(v: &Value, pred: &dyn Fn(&Value) -> bool) -> bool {
    match v {
        Value::Object(map) => pred(v) || map.values().any(|x| has_component(x, pred)),
        Value::Array(items) => items.iter().any(|x| has_component(x, pred)),
        _ => false,
    }
}

/// `<0xNN>` → that byte (with byte fallback); otherwise the piece with `▁` as a space.
fn sentencepiece_bytes(piece: &str, byte_fallback: bool) -> Vec<u8> {
    if byte_fallback
        && let Some(hex) = piece.strip_prefix("<0x").and_then(|r| r.strip_suffix('>'))
        && hex.len() == 2
        && let Ok(b) = u8::from_str_radix(hex, 16)
    {
        return vec![b];
    }
    piece.replace('\u{2581}', " ").into_bytes()
}

/// The inverse of GPT-2's `bytes_to_unicode`: printable Latin-1 bytes stand for themselves,
/// the other 68 bytes are spelled as U+0100 + n in byte order.
struct ByteLevelDecoder {
    /// Indexed by char code (< 0x144); `None` for chars that spell no byte.
    table: [Option<u8>; 0x144],
}

impl ByteLevelDecoder {
    fn new() -> Self {
        let mut table = [None; 0x144];
        let mut shifted = 0usize;
        for b in 0..=255u8 {
            let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
            if printable {
                table[b as usize] = Some(b);
            } else {
                table[0x100 + shifted] = Some(b);
                shifted += 1;
            }
        }
        ByteLevelDecoder { table }
    }

    fn decode(&self, piece: &str) -> Option<Vec<u8>> {
        piece
            .chars()
            .map(|c| self.table.get(c as usize).copied().flatten())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_table_is_a_bijection() {
        let d = ByteLevelDecoder::new();
        let mut seen = [false; 256];
        for b in d.table.iter().flatten() {
            assert!(!seen[*b as usize], "byte {b} spelled twice");
            seen[*b as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(d.decode("Ġhello"), Some(b" hello".to_vec()));
        assert_eq!(d.decode("Ċ"), Some(b"\n".to_vec()));
        assert_eq!(d.decode("Ã¼"), Some("ü".as_bytes().to_vec()));
        assert_eq!(d.decode("\u{2581}"), None);
    }

    #[test]
    fn sentencepiece_pieces() {
        assert_eq!(sentencepiece_bytes("<0x0A>", true), b"\n");
        assert_eq!(sentencepiece_bytes("<0x0A>", false), b"<0x0A>");
        assert_eq!(sentencepiece_bytes("\u{2581}the", true), b" the");
        assert_eq!(sentencepiece_bytes("<0xZZ>", true), b"<0xZZ>");
    }

    #[test]
    fn hf_table_from_small_json() {
        let json: Value = serde_json::from_str(
            r#"{"added_tokens":[{"id":5,"content":"<|endoftext|>","special":true},
                {"id":6,"content":"<think>","special":false}],
               "normalizer":null,"pre_tokenizer":{"type":"ByteLevel"},"decoder":null,
               "model":{"type":"BPE","vocab":{"a":0,"Ġb":1,"Ċ":3}}}"#,
        )
        .unwrap();
        let (kind, t) = hf_table(&json).unwrap();
        assert_eq!(kind, TokenizerKind::ByteLevel);
        assert_eq!(t.vocab_size(), 7);
        assert_eq!(t.tokens[1], b" b");
        assert!(t.tokens[2].is_empty());
        assert_eq!(t.tokens[3], b"\n");
        assert_eq!(t.tokens[6], b"<think>");
        assert_eq!(t.special, [5]);
        assert_eq!(t.eos, [5]);
    }

    #[test]
    fn hf_table_rejects_unknown_kind_and_huge_ids() {
        let json: Value =
            serde_json::from_str(r#"{"model":{"type":"WordPiece","vocab":{"a":0}}}"#).unwrap();
        assert!(hf_table(&json).is_err());
        let json: Value = serde_json::from_str(
            r#"{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"a":4294967295}}}"#,
        )
        .unwrap();
        assert!(hf_table(&json).is_err());
    }
}
