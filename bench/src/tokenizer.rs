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
use sieve_core::vocab::hf;

/// Token names treated as end-of-sequence when they are special added tokens of a
/// `tokenizer.json` (and not its `unk_token`), in preference order: chat-turn ends first, then
/// document ends. [`TokenTable::eos`] follows this order.
pub use sieve_core::vocab::hf::KNOWN_EOS_NAMES;

/// How a tokenizer spells token bytes in its vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerKind {
    /// tiktoken ranks embedded in `tiktoken-rs`: bytes are stored as bytes.
    Tiktoken,
    /// Hugging Face byte-level BPE (GPT-2, Llama 3, Qwen, ...): bytes spelled through GPT-2's
    /// bytes-to-unicode table.
    ByteLevel,
    /// SentencePiece-style (Llama 2, Mistral): `▁` is a space, `<0xNN>` a raw byte (the
    /// file's prepended space is dropped at load, see [`LoadedTokenizer::try_encode`]).
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
    /// The text is encoded as a continuation: the token bytes concatenate to `text` itself
    /// for every kind (a SentencePiece file's `Prepend` normalizer, which would put a space
    /// before the text, is dropped at load). Qwen's NFC normalizer may change non-NFC input.
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

    /// Concatenates token bytes (special tokens are kept as their text; encoding adds no
    /// leading space, so none is removed). Out-of-range ids are skipped.
    pub fn decode_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id));
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
    // The parsed JSON is dropped before the `tokenizers` crate parses the text again: both
    // at once would set the process's peak memory (about 100 MB each for a 128k vocabulary).
    let (kind, table) = {
        let json: Value = serde_json::from_str(&text).context("parsing the JSON")?;
        hf_table(&json)?
    };
    let mut tok: tokenizers::Tokenizer = text
        .parse()
        .map_err(|e| anyhow!("the tokenizers crate rejected the file: {e}"))?;
    // Special-token text in user input is tokenized as text, not as the control token.
    tok.set_encode_special_tokens(true);
    drop_prefix_space(&mut tok);
    Ok((kind, table, tok))
}

/// Makes `tok` encode text as a continuation (what a model writes after a prompt), so the
/// token bytes spell exactly the text: drops `Prepend` normalizers (SentencePiece files put
/// `▁` before the whole text) and sets a `Metaspace` pre-tokenizer's prepend scheme to
/// `Never`, as LLGuidance's Hugging Face loader does. Every other component is kept.
fn drop_prefix_space(tok: &mut tokenizers::Tokenizer) {
    use tokenizers::pre_tokenizers::metaspace::PrependScheme;
    use tokenizers::{
        NormalizerWrapper as N, PreTokenizerWrapper as P, normalizers, pre_tokenizers,
    };
    fn normalizer(n: &N) -> Option<N> {
        match n {
            N::Prepend(_) => None,
            N::Sequence(seq) => {
                let kept: Vec<N> = seq.as_ref().iter().filter_map(normalizer).collect();
                (!kept.is_empty()).then(|| N::Sequence(normalizers::Sequence::new(kept)))
            }
            other => Some(other.clone()),
        }
    }
    fn pre_tokenizer(p: &P) -> P {
        match p {
            P::Metaspace(m) => {
                let mut m = m.clone();
                m.set_prepend_scheme(PrependScheme::Never);
                P::Metaspace(m)
            }
            P::Sequence(seq) => P::Sequence(pre_tokenizers::sequence::Sequence::new(
                seq.as_ref().iter().map(pre_tokenizer).collect(),
            )),
            other => other.clone(),
        }
    }
    if let Some(n) = tok.get_normalizer() {
        let n = normalizer(n);
        tok.with_normalizer(n);
    }
    if let Some(p) = tok.get_pre_tokenizer() {
        let p = pre_tokenizer(p);
        tok.with_pre_tokenizer(Some(p));
    }
}

/// Builds the exact byte table of a parsed `tokenizer.json` (through
/// [`sieve_core::vocab::hf::table`], which the C API shares).
pub fn hf_table(json: &Value) -> Result<(TokenizerKind, TokenTable)> {
    let t = hf::table(json).map_err(|e| anyhow!("{e}"))?;
    let kind = match t.spelling {
        hf::Spelling::ByteLevel => TokenizerKind::ByteLevel,
        hf::Spelling::SentencePiece => TokenizerKind::SentencePiece,
        other => bail!("unsupported token spelling {other:?}"),
    };
    let table = TokenTable {
        tokens: t.tokens,
        special: t.special,
        eos: t.eos,
    };
    Ok((kind, table))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Markup-like added tokens are control tokens (`hf::AddedTokens`).
        assert_eq!(t.special, [5, 6]);
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
