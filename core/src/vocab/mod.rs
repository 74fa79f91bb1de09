//! Token vocabularies: a tokenizer's byte strings, special tokens and EOS ids.
//!
//! [`Vocabulary`] owns the [`TokTrie`] the mask walk runs over. Plain tokens are stored as
//! their text bytes. A special token (`<|eot_id|>` and the like) is stored as `0xFF`
//! followed by its name: `0xFF` never occurs in UTF-8, so no text regex can reach a special
//! token by accident, and grammars that name one match [`Vocabulary::special_bytes`].
//!
//! Invariants: every special and EOS id is `< vocab_size`; special ids have non-empty names.
//! Lookups are O(1) except [`Vocabulary::special_by_name`] (linear in the specials).
//!
//! [`hf`] reads the byte table of a Hugging Face `tokenizer.json`
//! ([`Vocabulary::from_tokenizer_json`]).

pub mod hf;

use alloc::vec::Vec;
use core::fmt;

use crate::slicer::Slice;
use crate::toktrie::{TokTrie, TrieError};
use alloc::string::String;

/// Why a [`Vocabulary`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VocabError {
    /// An EOS id is not a token id.
    EosOutOfRange {
        /// The offending id.
        id: u32,
        /// The number of token ids.
        vocab_size: usize,
    },
    /// A special-token id is not a token id.
    SpecialOutOfRange {
        /// The offending id.
        id: u32,
        /// The number of token ids.
        vocab_size: usize,
    },
    /// A special token has an empty name.
    EmptySpecial {
        /// The offending id.
        id: u32,
    },
    /// The token trie could not be built.
    Trie(TrieError),
    /// A slice regex does not compile.
    InvalidSlice {
        /// Its index in the list given.
        index: usize,
    },
    /// `tokenizer.json` text is not valid JSON.
    InvalidJson {
        /// 1-based line of the syntax error.
        line: usize,
        /// 1-based column of the syntax error.
        column: usize,
    },
    /// A `tokenizer.json` field is missing or has the wrong shape.
    TokenizerJsonField {
        /// The field (`model`, `model.vocab`, `added_tokens`).
        field: &'static str,
    },
    /// An entry of a `tokenizer.json` list or map is malformed.
    TokenizerJsonEntry {
        /// The field holding it (`model.vocab`, `added_tokens`).
        field: &'static str,
        /// Its index there.
        index: usize,
        /// What is wrong.
        what: String,
    },
    /// A `tokenizer.json` token id is larger than [`hf::MAX_TOKEN_ID`].
    TokenIdTooLarge {
        /// The offending id.
        id: u64,
    },
    /// A `tokenizer.json` id leaves most of the table unused: its largest id is beyond
    /// [`hf::max_table_len`] of its entry count (a tiny file must not size a huge table).
    TokenIdsTooSparse {
        /// The largest id.
        id: u64,
        /// Entries in the file (vocabulary plus added tokens).
        entries: usize,
    },
    /// A byte-level BPE piece uses a character outside GPT-2's byte alphabet.
    NotByteLevel {
        /// The token id.
        id: u64,
        /// The piece as written in the file.
        piece: String,
    },
    /// The `tokenizer.json` is neither byte-level BPE (a `ByteLevel` component) nor
    /// SentencePiece-style (`Metaspace`, or `▁` and `<0xNN>` pieces).
    UnsupportedTokenizer,
}

impl fmt::Display for VocabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VocabError::EosOutOfRange { id, vocab_size } => {
                write!(
                    f,
                    "EOS token id {id} is out of range (vocabulary size {vocab_size})"
                )
            }
            VocabError::SpecialOutOfRange { id, vocab_size } => write!(
                f,
                "special token id {id} is out of range (vocabulary size {vocab_size})"
            ),
            VocabError::EmptySpecial { id } => write!(f, "special token {id} has an empty name"),
            VocabError::Trie(e) => write!(f, "token trie: {e}"),
            VocabError::InvalidSlice { index } => write!(f, "slice regex {index} does not compile"),
            VocabError::InvalidJson { line, column } => {
                write!(
                    f,
                    "tokenizer.json is not valid JSON (line {line}, column {column})"
                )
            }
            VocabError::TokenizerJsonField { field } => {
                write!(f, "tokenizer.json: \"{field}\" is missing or malformed")
            }
            VocabError::TokenizerJsonEntry { field, index, what } => {
                write!(f, "tokenizer.json: entry {index} of \"{field}\": {what}")
            }
            VocabError::TokenIdsTooSparse { id, entries } => write!(
                f,
                "tokenizer.json: token id {id} is far beyond its {entries} entries (a table \
                 of at most {} ids is allowed)",
                hf::max_table_len(*entries)
            ),
            VocabError::TokenIdTooLarge { id } => write!(
                f,
                "tokenizer.json: token id {id} is larger than {}",
                hf::MAX_TOKEN_ID
            ),
            VocabError::NotByteLevel { id, piece } => {
                write!(
                    f,
                    "tokenizer.json: token {id} {piece:?} is not byte-level encoded"
                )
            }
            VocabError::UnsupportedTokenizer => f.write_str(
                "unsupported tokenizer.json: neither byte-level BPE (a ByteLevel component) nor \
                 SentencePiece-style (Metaspace, or `▁` and `<0xNN>` pieces)",
            ),
        }
    }
}

impl core::error::Error for VocabError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            VocabError::Trie(e) => Some(e),
            _ => None,
        }
    }
}

impl From<TrieError> for VocabError {
    fn from(e: TrieError) -> Self {
        VocabError::Trie(e)
    }
}

/// A tokenizer's token byte strings laid out as a [`TokTrie`], plus special and EOS ids.
///
/// `Send + Sync` and immutable; clone it or share it behind an `Arc`.
#[derive(Clone, Debug)]
pub struct Vocabulary {
    trie: TokTrie,
    /// Special ids, sorted and deduplicated.
    specials: Vec<u32>,
    /// Bit `id` set iff `id` is special; `trie.mask_words()` words.
    special_bits: Vec<u32>,
    /// EOS ids in the order given, duplicates removed.
    eos: Vec<u32>,
    /// Token slices, largest first.
    slices: Vec<Slice>,
}

impl Vocabulary {
    /// The byte that starts every special token in the trie.
    pub const SPECIAL_PREFIX: u8 = 0xFF;

    /// Builds a vocabulary. `tokens[id]` is the text of token `id` (empty = unused id);
    /// `special` lists the special-token ids, whose bytes are their names (e.g.
    /// `b"<|eot_id|>"`); `eos` lists the end-of-sequence ids (any number, in preference
    /// order). Repeated ids in `special` or `eos` are ignored.
    ///
    /// # Errors
    /// An EOS or special id out of range, a special token with an empty name, or a
    /// [`TrieError`] (token too long, too many tokens or nodes).
    pub fn new(
        tokens: Vec<Vec<u8>>,
        special: &[u32],
        eos: &[u32],
    ) -> Result<Vocabulary, VocabError> {
        Vocabulary::with_slices(tokens, special, eos, &crate::slicer::default_slices())
    }

    /// Like [`Vocabulary::new`], with caller-chosen slice regexes (see [`crate::slicer`];
    /// an empty list disables slicing).
    ///
    /// # Errors
    /// As [`Vocabulary::new`], and [`VocabError::InvalidSlice`].
    pub fn with_slices(
        mut tokens: Vec<Vec<u8>>,
        special: &[u32],
        eos: &[u32],
        slices: &[String],
    ) -> Result<Vocabulary, VocabError> {
        let vocab_size = tokens.len();
        let mut specials = special.to_vec();
        specials.sort_unstable();
        specials.dedup();
        let mut special_bits = alloc::vec![0u32; vocab_size.div_ceil(32)];
        for &id in &specials {
            let Some(tok) = tokens.get_mut(id as usize) else {
                return Err(VocabError::SpecialOutOfRange { id, vocab_size });
            };
            if tok.is_empty() {
                return Err(VocabError::EmptySpecial { id });
            }
            tok.insert(0, Vocabulary::SPECIAL_PREFIX);
            if let Some(w) = special_bits.get_mut((id / 32) as usize) {
                *w |= 1 << (id % 32);
            }
        }
        let mut eos_ids: Vec<u32> = Vec::with_capacity(eos.len());
        for &id in eos {
            if id as usize >= vocab_size {
                return Err(VocabError::EosOutOfRange { id, vocab_size });
            }
            if !eos_ids.contains(&id) {
                eos_ids.push(id);
            }
        }
        let refs: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        let trie = TokTrie::new(&refs)?;
        let slices = crate::slicer::build(&refs, slices)
            .map_err(|index| VocabError::InvalidSlice { index })?;
        Ok(Vocabulary {
            trie,
            specials,
            special_bits,
            eos: eos_ids,
            slices,
        })
    }

    /// The token slices, largest first.
    pub fn slices(&self) -> &[Slice] {
        &self.slices
    }

    /// Number of token ids, used or not.
    pub fn vocab_size(&self) -> usize {
        self.trie.vocab_size()
    }

    /// Words in a token mask: `ceil(vocab_size / 32)`.
    pub fn mask_words(&self) -> usize {
        self.trie.mask_words()
    }

    /// The token trie (special tokens as `0xFF` + name).
    pub fn trie(&self) -> &TokTrie {
        &self.trie
    }

    /// The end-of-sequence ids, in the order given.
    pub fn eos_tokens(&self) -> &[u32] {
        &self.eos
    }

    /// Whether `id` is a special token (`false` when out of range).
    pub fn is_special(&self, id: u32) -> bool {
        self.special_bits
            .get((id / 32) as usize)
            .is_some_and(|w| w & (1 << (id % 32)) != 0)
    }

    /// The special-token ids, sorted.
    pub fn special_tokens(&self) -> &[u32] {
        &self.specials
    }

    /// The token's text: plain bytes, or a special token's name without the `0xFF` prefix.
    /// Empty for unused or out-of-range ids.
    pub fn token_text(&self, id: u32) -> &[u8] {
        let bytes = self.trie.token_bytes(id);
        if self.is_special(id) {
            bytes.get(1..).unwrap_or_default()
        } else {
            bytes
        }
    }

    /// What the trie holds for `id`: the text, or `0xFF` + name for a special token.
    pub fn trie_bytes(&self, id: u32) -> &[u8] {
        self.trie.token_bytes(id)
    }

    /// The lowest special-token id named `name` (e.g. `"<|eos|>"`).
    pub fn special_by_name(&self, name: &str) -> Option<u32> {
        self.specials
            .iter()
            .copied()
            .find(|&id| self.token_text(id) == name.as_bytes())
    }

    /// The trie bytes of a special token named `name`: `0xFF` followed by `name`.
    pub fn special_bytes(name: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(name.len() + 1);
        out.push(Vocabulary::SPECIAL_PREFIX);
        out.extend_from_slice(name.as_bytes());
        out
    }

    /// The trie bytes of `ids`, concatenated (out-of-range ids contribute nothing).
    pub fn tokens_to_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.trie_bytes(id));
        }
        out
    }

    /// A small deterministic vocabulary for tests and benches.
    ///
    /// Ids in order: the single bytes `\t`, `\n`, `\r` and printable ASCII `0x20..=0x7E`;
    /// common multi-byte JSON and English tokens; a few UTF-8 characters plus partial UTF-8
    /// sequences (as byte-level BPE tokenizers have); then `n_extra` pseudo-random word-like
    /// tokens derived from `seed` (capped at 400,000; they may repeat earlier tokens, which
    /// exercises duplicate handling); last, the specials `<|eos|>` (the EOS) and `<|tool|>`.
    pub fn synthetic(n_extra: usize, seed: u64) -> Vocabulary {
        const MAX_EXTRA: usize = 400_000;
        const COMMON: &[&str] = &[
            "{\"",
            "\":",
            "\": ",
            "\",",
            ", \"",
            ",\"",
            "\"}",
            "\"]",
            "},",
            "}}",
            "]}",
            "[{",
            "[]",
            "{}",
            "\":\"",
            "\": \"",
            "\":{",
            "\": {",
            "\":[",
            "\": [",
            "true",
            "false",
            "null",
            " true",
            " false",
            " null",
            "  ",
            "    ",
            "        ",
            "\n ",
            "\n  ",
            "\n    ",
            "\n\n",
            "00",
            "10",
            "12",
            "123",
            "2024",
            "0.",
            ".0",
            "e-",
            "e+",
            "\\n",
            "\\\"",
            "\\u",
            "the",
            " the",
            "The",
            " The",
            " a",
            " an",
            " and",
            " of",
            " to",
            " in",
            " is",
            " that",
            " for",
            " it",
            " with",
            " as",
            " on",
            "ing",
            "ed",
            "er",
            "es",
            "re",
            "on",
            "at",
            "en",
            "tion",
            "name",
            " name",
            "type",
            " type",
            "id",
            "value",
            " value",
            "string",
            "number",
            "integer",
            "boolean",
            "object",
            "array",
            "properties",
            "items",
            "required",
            "hello",
            "Hello",
            " world",
            " World",
            "é",
            "ü",
            "ß",
            "ñ",
            "中",
            "文",
            "日本",
            "→",
            "€",
            "😀",
        ];
        // Partial UTF-8: the first two bytes of "中", a lone continuation byte, and the
        // first half of "😀".
        const PARTIAL: &[&[u8]] = &[&[0xE4, 0xB8], &[0xAD], &[0xF0, 0x9F]];
        const SPECIALS: [&str; 2] = ["<|eos|>", "<|tool|>"];

        let mut tokens: Vec<Vec<u8>> = Vec::new();
        tokens.extend([b'\t', b'\n', b'\r'].iter().map(|&b| alloc::vec![b]));
        tokens.extend((0x20u8..=0x7E).map(|b| alloc::vec![b]));
        tokens.extend(COMMON.iter().map(|s| s.as_bytes().to_vec()));
        tokens.extend(PARTIAL.iter().map(|s| s.to_vec()));
        let mut rng = SplitMix64(seed);
        for _ in 0..n_extra.min(MAX_EXTRA) {
            tokens.push(random_word(&mut rng));
        }
        let first_special = tokens.len() as u32;
        tokens.extend(SPECIALS.iter().map(|s| s.as_bytes().to_vec()));
        let special = [first_special, first_special + 1];
        match Vocabulary::new(tokens, &special, &special[..1]) {
            Ok(v) => v,
            // Unreachable: tokens are at most 9 bytes and at most ~3.7M nodes, within limits.
            Err(_) => Vocabulary {
                trie: TokTrie::empty(),
                specials: Vec::new(),
                special_bits: Vec::new(),
                eos: Vec::new(),
                slices: Vec::new(),
            },
        }
    }
}

/// SplitMix64: a tiny deterministic generator for [`Vocabulary::synthetic`].
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (`n > 0`; modulo bias is irrelevant here).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A word-like token: optional leading space, 2..=8 characters, mostly lowercase letters,
/// sometimes capitalized, sometimes digits or punctuation.
fn random_word(rng: &mut SplitMix64) -> Vec<u8> {
    const LOWER: &[u8] = b"etaoinshrdlcumwfgypbvkjxqz";
    const PUNCT: &[u8] = b"_-.,:;!?'\"()[]{}";
    let mut out = Vec::with_capacity(9);
    if rng.below(2) == 0 {
        out.push(b' ');
    }
    let len = 2 + rng.below(7);
    let kind = rng.below(10);
    for i in 0..len {
        let c = match kind {
            // Skewed towards frequent letters: min of two draws.
            0..=6 => LOWER[rng.below(LOWER.len()).min(rng.below(LOWER.len()))],
            7 if i == 0 => LOWER[rng.below(LOWER.len())].to_ascii_uppercase(),
            7 => LOWER[rng.below(LOWER.len())],
            8 => b'0' + rng.below(10) as u8,
            _ => PUNCT[rng.below(PUNCT.len())],
        };
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn toks(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn specials_and_eos() {
        let v = Vocabulary::new(
            toks(&["a", "<|eot|>", "", "b", "<|eot|>"]),
            &[1, 1],
            &[1, 4, 1],
        )
        .unwrap();
        assert_eq!(v.vocab_size(), 5);
        assert_eq!(v.mask_words(), 1);
        assert_eq!(v.eos_tokens(), &[1, 4]);
        assert!(v.is_special(1) && !v.is_special(4) && !v.is_special(0) && !v.is_special(999));
        assert_eq!(v.special_tokens(), &[1]);
        assert_eq!(v.token_text(1), b"<|eot|>");
        assert_eq!(v.trie_bytes(1), b"\xFF<|eot|>");
        assert_eq!(v.token_text(4), b"<|eot|>");
        assert_eq!(v.trie_bytes(4), b"<|eot|>");
        assert_eq!(v.token_text(2), b"");
        assert_eq!(v.special_by_name("<|eot|>"), Some(1));
        assert_eq!(v.special_by_name("a"), None);
        assert_eq!(
            v.trie().token_id(&Vocabulary::special_bytes("<|eot|>")),
            Some(1)
        );
        assert_eq!(v.trie().token_id(b"<|eot|>"), Some(4));
        assert_eq!(v.tokens_to_bytes(&[0, 1, 3, 77]), b"a\xFF<|eot|>b");
        assert_eq!(Vocabulary::special_bytes("x"), b"\xFFx");
    }

    #[test]
    fn bad_input() {
        let e = Vocabulary::new(toks(&["a", "b"]), &[], &[2]).unwrap_err();
        assert_eq!(
            e,
            VocabError::EosOutOfRange {
                id: 2,
                vocab_size: 2
            }
        );
        assert!(alloc::format!("{e}").contains("EOS"));
        let e = Vocabulary::new(toks(&["a"]), &[5], &[]).unwrap_err();
        assert_eq!(
            e,
            VocabError::SpecialOutOfRange {
                id: 5,
                vocab_size: 1
            }
        );
        let e = Vocabulary::new(toks(&["a", ""]), &[1], &[]).unwrap_err();
        assert_eq!(e, VocabError::EmptySpecial { id: 1 });
        let long = vec![vec![b'x'; TokTrie::MAX_TOKEN_LEN]];
        // The 0xFF prefix pushes a maximal special token over the limit.
        let e = Vocabulary::new(long, &[0], &[]).unwrap_err();
        assert!(matches!(
            e,
            VocabError::Trie(TrieError::TokenTooLong { id: 0, .. })
        ));
        assert!(core::error::Error::source(&e).is_some());
        assert!(Vocabulary::new(Vec::new(), &[], &[]).is_ok());
    }

    #[test]
    fn synthetic_is_deterministic_and_well_formed() {
        let a = Vocabulary::synthetic(1000, 7);
        let b = Vocabulary::synthetic(1000, 7);
        let c = Vocabulary::synthetic(1000, 8);
        let all = |v: &Vocabulary| -> Vec<u8> {
            let ids: Vec<u32> = (0..v.vocab_size() as u32).collect();
            v.tokens_to_bytes(&ids)
        };
        assert_eq!(all(&a), all(&b));
        assert_ne!(all(&a), all(&c));
        let eos = a.special_by_name("<|eos|>").unwrap();
        assert_eq!(a.eos_tokens(), &[eos]);
        let tool = a.special_by_name("<|tool|>").unwrap();
        assert_eq!(tool as usize, a.vocab_size() - 1);
        for b in (0x20u8..=0x7E).chain([b'\t', b'\n', b'\r']) {
            assert!(a.trie().token_id(&[b]).is_some(), "byte {b}");
        }
        assert!(a.trie().token_id("中".as_bytes()).is_some());
        // Any ASCII text tokenizes greedily; specials are reachable only through 0xFF.
        let text = b"{\"name\": \"hello world\", \"id\": 12}\n";
        let ids = a.trie().greedy_tokenize(text).unwrap();
        assert_eq!(a.tokens_to_bytes(&ids), text);
        assert!(ids.iter().all(|&id| !a.is_special(id)));
        let base = Vocabulary::synthetic(0, 0);
        assert_eq!(base.vocab_size() + 1000, a.vocab_size());
    }
}
