//! Token byte tables from a Hugging Face `tokenizer.json`, without the `tokenizers` crate.
//!
//! [`table`] reads the model's vocabulary and the added tokens of a parsed `tokenizer.json`
//! and recovers the exact bytes of every id: byte-level BPE pieces (GPT-2, Llama 3, Qwen)
//! through the inverse of GPT-2's bytes-to-unicode map, SentencePiece-style pieces (Llama 2,
//! Mistral) with `▁` as a space and `<0xNN>` as that byte. Special added tokens keep their
//! text as their name; the EOS ids are the special tokens named in [`KNOWN_EOS_NAMES`].
//!
//! Invariants of a [`Table`]: `tokens.len()` is max id + 1, at most [`max_table_len`] of the
//! file's entry count (ids are validated before the table is allocated);
//! unused ids are empty; `special` is sorted and deduplicated; every EOS id is special.
//! Cost: one pass over the vocabulary; nothing here is on a hot path.

use alloc::borrow::ToOwned;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use serde_json::Value;

use super::{VocabError, Vocabulary};

/// Special added-token names treated as end-of-sequence (unless the model's `unk_token`), in
/// preference order: chat-turn ends first, then document ends. [`Table::eos`] follows it.
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

/// Largest token id accepted; larger ids are a malformed file, not a mask to size.
pub const MAX_TOKEN_ID: u64 = 1 << 24;

/// Unused ids a `tokenizer.json` may leave beyond its entries: see [`max_table_len`].
pub const MAX_UNUSED_IDS: u64 = 65_536;

/// The largest table (largest id + 1) a file with `entries` vocabulary and added-token
/// entries may describe: twice its entries plus [`MAX_UNUSED_IDS`], and at most
/// [`MAX_TOKEN_ID`] + 1. Real vocabularies are dense (a few hundred reserved ids at most),
/// so this only refuses files whose ids would make a few bytes of input allocate a table of
/// millions of empty tokens (24 bytes each, plus the trie and masks sized from it).
pub fn max_table_len(entries: usize) -> u64 {
    (entries as u64)
        .saturating_mul(2)
        .saturating_add(MAX_UNUSED_IDS)
        .min(MAX_TOKEN_ID + 1)
}

/// How the vocabulary spells token bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Spelling {
    /// Byte-level BPE: bytes spelled through GPT-2's bytes-to-unicode table.
    ByteLevel,
    /// SentencePiece-style: `▁` is a space, `<0xNN>` a raw byte (with byte fallback).
    SentencePiece,
}

/// The byte table recovered from a `tokenizer.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// How the pieces were spelled.
    pub spelling: Spelling,
    /// `tokens[id]` = exact bytes of token `id` (a special token's name); empty if unused.
    pub tokens: Vec<Vec<u8>>,
    /// Special (control) token ids, ascending.
    pub special: Vec<u32>,
    /// End-of-sequence ids, preferred first.
    pub eos: Vec<u32>,
}

impl Vocabulary {
    /// Builds a vocabulary from the text of a Hugging Face `tokenizer.json` (byte-level BPE or
    /// SentencePiece-style; see [`table`]).
    ///
    /// # Errors
    /// [`VocabError::InvalidJson`] if the text is not JSON, the `tokenizer.json` errors of
    /// [`table`], and those of [`Vocabulary::new`].
    pub fn from_tokenizer_json(text: &str) -> Result<Vocabulary, VocabError> {
        Vocabulary::from_tokenizer_json_with(text, AddedTokens::default())
    }

    /// [`Vocabulary::from_tokenizer_json`] with `added` deciding which added tokens are
    /// control tokens.
    pub fn from_tokenizer_json_with(
        text: &str,
        added: AddedTokens,
    ) -> Result<Vocabulary, VocabError> {
        let json: Value = serde_json::from_str(text).map_err(|e| VocabError::InvalidJson {
            line: e.line(),
            column: e.column(),
        })?;
        let t = table_with(&json, added)?;
        Vocabulary::new(t.tokens, &t.special, &t.eos)
    }
}

/// Which of a `tokenizer.json`'s added tokens are control tokens (sieve's special tokens:
/// matched only where a grammar names them, never as text).
///
/// Qwen 3 marks `<tool_call>`, `</tool_call>`, `<think>`, `</think>` and eight other added
/// tokens `"special": false`, so a tokenizer decodes them as text; but they are the chat and
/// tool format's control tokens, and a JSON string that contained `<tool_call>` as that one
/// token would hand a tool-call parser a call that is not there. LLGuidance never allows
/// them in text either. The default, [`AddedTokens::Markup`], makes such tokens control
/// tokens; a grammar names them as `<tool_call>` (Lark) or by the same string in a
/// structural tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AddedTokens {
    /// `"special": true` tokens, and added tokens spelled like markup: `<…>`, `[…]` or
    /// `<｜…｜>` with no whitespace inside and at least one character between the brackets.
    #[default]
    Markup,
    /// Only `"special": true` tokens (the file's own flag; Qwen 3's `<tool_call>` is text).
    SpecialOnly,
    /// Every added token.
    All,
}

impl AddedTokens {
    /// Whether an added token with this `content` and `special` flag is a control token.
    pub fn is_control(self, content: &str, special: bool) -> bool {
        special
            || match self {
                AddedTokens::SpecialOnly => false,
                AddedTokens::All => true,
                AddedTokens::Markup => is_markup(content),
            }
    }
}

/// `<name>`, `</name>`, `<|name|>`, `[NAME]`: bracketed, at least three characters, no
/// whitespace. Plain words and runs of spaces that some tokenizers add stay text.
fn is_markup(content: &str) -> bool {
    let bracketed = (content.starts_with('<') && content.ends_with('>'))
        || (content.starts_with('[') && content.ends_with(']'));
    bracketed && content.chars().count() >= 3 && !content.chars().any(char::is_whitespace)
}

/// Recovers the exact byte table of a parsed `tokenizer.json`, with the default
/// [`AddedTokens`] rule ([`table_with`]).
pub fn table(json: &Value) -> Result<Table, VocabError> {
    table_with(json, AddedTokens::default())
}

/// Recovers the exact byte table of a parsed `tokenizer.json`; `added` decides which added
/// tokens are control (special) tokens.
///
/// # Errors
/// [`VocabError::TokenizerJsonField`] when `model`, `model.vocab` or `added_tokens` is
/// missing or of the wrong shape, [`VocabError::TokenizerJsonEntry`] for a malformed entry,
/// [`VocabError::TokenIdTooLarge`], [`VocabError::NotByteLevel`] for a piece outside GPT-2's
/// alphabet, and [`VocabError::UnsupportedTokenizer`] when the tokenizer is neither byte-level
/// nor SentencePiece-style.
pub fn table_with(json: &Value, added_role: AddedTokens) -> Result<Table, VocabError> {
    let model = json
        .get("model")
        .ok_or(VocabError::TokenizerJsonField { field: "model" })?;
    let pieces = model_pieces(model)?;
    let spelling = detect_spelling(json, &pieces)?;
    let byte_fallback = model.get("byte_fallback").and_then(Value::as_bool) == Some(true)
        || pieces.iter().any(|(p, _)| p == "<0x00>");

    let added = match json.get("added_tokens") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => {
            return Err(VocabError::TokenizerJsonField {
                field: "added_tokens",
            });
        }
    };
    // Validate the ids against the file before sizing anything from them.
    let max_id = pieces
        .iter()
        .map(|(_, id)| *id)
        .chain(
            added
                .iter()
                .filter_map(|e| e.get("id").and_then(Value::as_u64)),
        )
        .max();
    if let Some(id) = max_id {
        if id > MAX_TOKEN_ID {
            return Err(VocabError::TokenIdTooLarge { id });
        }
        let entries = pieces.len().saturating_add(added.len());
        if id >= max_table_len(entries) {
            return Err(VocabError::TokenIdsTooSparse { id, entries });
        }
    }

    let mut tokens: Vec<Vec<u8>> = Vec::new();
    let byte_level = ByteLevelDecoder::new();
    for (piece, id) in &pieces {
        let bytes = match spelling {
            Spelling::ByteLevel => {
                byte_level
                    .decode(piece)
                    .ok_or_else(|| VocabError::NotByteLevel {
                        id: *id,
                        piece: piece.clone(),
                    })?
            }
            Spelling::SentencePiece => sentencepiece_bytes(piece, byte_fallback),
        };
        set_token(&mut tokens, *id, bytes)?;
    }

    let unk = model.get("unk_token").and_then(Value::as_str);
    let mut special = Vec::new();
    let mut eos_ranked: Vec<(usize, u32)> = Vec::new();
    for (index, entry) in added.iter().enumerate() {
        let malformed = |what: &str| VocabError::TokenizerJsonEntry {
            field: "added_tokens",
            index,
            what: what.to_owned(),
        };
        let id = entry
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("no integer \"id\""))?;
        let content = entry
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| malformed("no \"content\" string"))?;
        set_token(&mut tokens, id, content.as_bytes().to_vec())?;
        let flagged = entry.get("special").and_then(Value::as_bool) == Some(true);
        if added_role.is_control(content, flagged) {
            // Bounded by MAX_TOKEN_ID in set_token.
            let id = id as u32;
            special.push(id);
            if let Some(rank) = KNOWN_EOS_NAMES.iter().position(|n| *n == content)
                && unk != Some(content)
            {
                eos_ranked.push((rank, id));
            }
        }
    }
    special.sort_unstable();
    special.dedup();
    eos_ranked.sort_unstable();
    let mut eos: Vec<u32> = eos_ranked.into_iter().map(|(_, id)| id).collect();
    eos.dedup();
    Ok(Table {
        spelling,
        tokens,
        special,
        eos,
    })
}

fn set_token(tokens: &mut Vec<Vec<u8>>, id: u64, bytes: Vec<u8>) -> Result<(), VocabError> {
    if id > MAX_TOKEN_ID {
        return Err(VocabError::TokenIdTooLarge { id });
    }
    let id = id as usize;
    if tokens.len() <= id {
        tokens.resize(id + 1, Vec::new());
    }
    if let Some(slot) = tokens.get_mut(id) {
        *slot = bytes;
    }
    Ok(())
}

/// The `(piece, id)` pairs of a model's vocabulary: an object for BPE/WordPiece/WordLevel, an
/// array of `[piece, score]` (id = index) for Unigram.
fn model_pieces(model: &Value) -> Result<Vec<(String, u64)>, VocabError> {
    let malformed = |index: usize, what: String| VocabError::TokenizerJsonEntry {
        field: "model.vocab",
        index,
        what,
    };
    match model.get("vocab") {
        Some(Value::Object(map)) => map
            .iter()
            .enumerate()
            .map(|(i, (piece, id))| {
                let id = id
                    .as_u64()
                    .ok_or_else(|| malformed(i, alloc::format!("{piece:?} has no integer id")))?;
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
                    .ok_or_else(|| malformed(i, "not [piece, score]".to_owned()))?;
                Ok((piece.to_owned(), i as u64))
            })
            .collect(),
        _ => Err(VocabError::TokenizerJsonField {
            field: "model.vocab",
        }),
    }
}

/// Byte-level if any component is `ByteLevel`; SentencePiece-style if any is `Metaspace` or
/// maps `▁`, or the vocabulary has both `▁` and `<0xNN>` pieces.
fn detect_spelling(json: &Value, pieces: &[(String, u64)]) -> Result<Spelling, VocabError> {
    let parts = ["normalizer", "pre_tokenizer", "decoder"].map(|k| json.get(k));
    let is_byte_level = |c: &Value| c.get("type").and_then(Value::as_str) == Some("ByteLevel");
    if parts
        .iter()
        .flatten()
        .any(|v| has_component(v, &is_byte_level))
    {
        return Ok(Spelling::ByteLevel);
    }
    let metaspace = |c: &Value| {
        c.get("type").and_then(Value::as_str) == Some("Metaspace")
            || c.get("content").and_then(Value::as_str) == Some("\u{2581}")
            || c.get("prepend").and_then(Value::as_str) == Some("\u{2581}")
    };
    let has_byte_pieces = pieces.iter().any(|(p, _)| p == "<0x00>");
    let has_meta_pieces = pieces.iter().any(|(p, _)| p.starts_with('\u{2581}'));
    if parts.iter().flatten().any(|v| has_component(v, &metaspace))
        || (has_byte_pieces && has_meta_pieces)
    {
        return Ok(Spelling::SentencePiece);
    }
    Err(VocabError::UnsupportedTokenizer)
}

/// Whether `v` or any value nested in it satisfies `pred`. Iterative: the depth of the
/// document does not grow the call stack.
fn has_component(v: &Value, pred: &dyn Fn(&Value) -> bool) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if pred(v) {
                    return true;
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items.iter()),
            _ => {}
        }
    }
    false
}

/// `<0xNN>` → that byte (with byte fallback); otherwise the piece with `▁` as a space.
pub fn sentencepiece_bytes(piece: &str, byte_fallback: bool) -> Vec<u8> {
    if byte_fallback
        && let Some(hex) = piece.strip_prefix("<0x").and_then(|r| r.strip_suffix('>'))
        && hex.len() == 2
        && let Ok(b) = u8::from_str_radix(hex, 16)
    {
        return vec![b];
    }
    piece.replace('\u{2581}', " ").into_bytes()
}

/// The inverse of GPT-2's `bytes_to_unicode`: printable Latin-1 bytes stand for themselves;
/// the other 68 bytes are spelled U+0100 + n, in byte order.
#[derive(Debug, Clone)]
pub struct ByteLevelDecoder {
    /// Indexed by char code (< 0x144); `None` for chars that spell no byte.
    table: [Option<u8>; 0x144],
}

impl Default for ByteLevelDecoder {
    fn default() -> Self {
        ByteLevelDecoder::new()
    }
}

impl ByteLevelDecoder {
    /// Builds the table.
    pub fn new() -> Self {
        let mut table = [None; 0x144];
        let mut shifted = 0usize;
        for b in 0..=255u8 {
            let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
            let slot = if printable {
                b as usize
            } else {
                shifted += 1;
                0x100 + shifted - 1
            };
            if let Some(s) = table.get_mut(slot) {
                *s = Some(b);
            }
        }
        ByteLevelDecoder { table }
    }

    /// The bytes a byte-level piece spells, or `None` if a char is outside the alphabet.
    pub fn decode(&self, piece: &str) -> Option<Vec<u8>> {
        piece
            .chars()
            .map(|c| self.table.get(c as usize).copied().flatten())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

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

    const SMALL: &str = r#"{"added_tokens":[{"id":5,"content":"<|endoftext|>","special":true},
        {"id":6,"content":"<think>","special":false}],
       "normalizer":null,"pre_tokenizer":{"type":"ByteLevel"},"decoder":null,
       "model":{"type":"BPE","vocab":{"a":0,"Ġb":1,"Ċ":3}}}"#;

    #[test]
    fn small_byte_level_file() {
        let t = table(&parse(SMALL)).unwrap();
        assert_eq!(t.spelling, Spelling::ByteLevel);
        assert_eq!(t.tokens.len(), 7);
        assert_eq!(t.tokens[1], b" b");
        assert!(t.tokens[2].is_empty());
        assert_eq!(t.tokens[3], b"\n");
        assert_eq!(t.tokens[6], b"<think>");
        // `<think>` is markup: a control token by default, text with `SpecialOnly`.
        assert_eq!(t.special, [5, 6]);
        assert_eq!(t.eos, [5]);
        let v = Vocabulary::from_tokenizer_json(SMALL).unwrap();
        assert_eq!(v.vocab_size(), 7);
        assert_eq!(v.eos_tokens(), &[5]);
        assert!(v.is_special(5) && v.is_special(6));
        assert_eq!(v.token_text(5), b"<|endoftext|>");
        assert_eq!(v.token_text(6), b"<think>");
        let v = Vocabulary::from_tokenizer_json_with(SMALL, AddedTokens::SpecialOnly).unwrap();
        assert!(v.is_special(5) && !v.is_special(6));
        assert_eq!(v.trie_bytes(6), b"<think>");
    }

    #[test]
    fn added_token_roles() {
        let m = AddedTokens::Markup;
        for control in [
            "<think>",
            "</tool_call>",
            "<|fim_pad|>",
            "[TOOL_CALLS]",
            "<\u{ff5c}a\u{ff5c}>",
        ] {
            assert!(m.is_control(control, false), "{control}");
        }
        for text in ["<>", "  ", "hello", "< a >", "<a", "[]"] {
            assert!(!m.is_control(text, false), "{text}");
            assert!(m.is_control(text, true));
            assert!(AddedTokens::All.is_control(text, false));
        }
        assert!(!AddedTokens::SpecialOnly.is_control("<think>", false));
    }

    #[test]
    fn sentencepiece_file() {
        let text = r#"{"added_tokens":[{"id":2,"content":"</s>","special":true},
            {"id":0,"content":"<unk>","special":true}],
            "pre_tokenizer":{"type":"Metaspace","replacement":"▁"},
            "model":{"type":"BPE","byte_fallback":true,"unk_token":"<unk>",
            "vocab":{"<unk>":0,"<0x0A>":1,"</s>":2,"▁hi":3}}}"#;
        let t = table(&parse(text)).unwrap();
        assert_eq!(t.spelling, Spelling::SentencePiece);
        assert_eq!(t.tokens[1], b"\n");
        assert_eq!(t.tokens[3], b" hi");
        assert_eq!(t.special, [0, 2]);
        assert_eq!(t.eos, [2]);
    }

    #[test]
    fn typed_errors() {
        let e = Vocabulary::from_tokenizer_json("{\n  \"model\": ]").unwrap_err();
        assert!(
            matches!(e, VocabError::InvalidJson { line: 2, .. }),
            "{e:?}"
        );
        let e = table(&parse(r#"{"x":1}"#)).unwrap_err();
        assert_eq!(e, VocabError::TokenizerJsonField { field: "model" });
        let e = table(&parse(r#"{"model":{"vocab":3}}"#)).unwrap_err();
        assert_eq!(
            e,
            VocabError::TokenizerJsonField {
                field: "model.vocab"
            }
        );
        let e = table(&parse(r#"{"model":{"type":"WordPiece","vocab":{"a":0}}}"#)).unwrap_err();
        assert_eq!(e, VocabError::UnsupportedTokenizer);
        let huge = r#"{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"a":4294967295}}}"#;
        let e = table(&parse(huge)).unwrap_err();
        assert_eq!(e, VocabError::TokenIdTooLarge { id: 4_294_967_295 });
        // 71 bytes naming id 2^24 - 1: refused before a 16M-entry table is allocated.
        let sparse = r#"{"decoder":{"type":"ByteLevel"},"model":{"vocab":{"a":16777215}}}"#;
        let e = table(&parse(sparse)).unwrap_err();
        assert_eq!(
            e,
            VocabError::TokenIdsTooSparse {
                id: 16_777_215,
                entries: 1
            }
        );
        let edge = |id: u64| {
            let text = alloc::format!(
                r#"{{"decoder":{{"type":"ByteLevel"}},"model":{{"vocab":{{"a":0,"b":{id}}}}}}}"#
            );
            table(&parse(&text))
        };
        let t = edge(max_table_len(2) - 1).unwrap();
        assert_eq!(t.tokens.len() as u64, max_table_len(2));
        let e = edge(max_table_len(2)).unwrap_err();
        assert!(matches!(
            e,
            VocabError::TokenIdsTooSparse { entries: 2, .. }
        ));
        let added = r#"{"decoder":{"type":"ByteLevel"},"model":{"vocab":{"a":0}},
            "added_tokens":[{"id":9999999,"content":"x","special":true}]}"#;
        let e = table(&parse(added)).unwrap_err();
        assert!(matches!(
            e,
            VocabError::TokenIdsTooSparse { id: 9_999_999, .. }
        ));
        let bad = r#"{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"▁a":0}}}"#;
        let e = table(&parse(bad)).unwrap_err();
        assert!(matches!(e, VocabError::NotByteLevel { id: 0, .. }), "{e:?}");
        let bad = r#"{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"a":0}},
            "added_tokens":[{"content":"x"}]}"#;
        let e = table(&parse(bad)).unwrap_err();
        assert!(
            matches!(e, VocabError::TokenizerJsonEntry { index: 0, .. }),
            "{e:?}"
        );
        let sparse = VocabError::TokenIdsTooSparse { id: 5, entries: 1 };
        for e in [e, VocabError::UnsupportedTokenizer, sparse] {
            assert!(!alloc::format!("{e}").is_empty());
        }
    }
}
