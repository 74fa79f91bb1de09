//! Token vocabularies: a tokenizer's byte strings, special tokens and EOS ids.
//!
//! [`Vocabulary`] owns the [`TokTrie`] the mask walk runs over. Special tokens are tokens,
//! not text: a grammar's `<|eot_id|>` or `<[128009]>` must match exactly that token id,
//! never text tokens that spell its name. The trie therefore holds three kinds of strings
//! ([`Vocabulary::trie_bytes`]):
//!
//! - a text token without the byte `0xFF`: its bytes;
//! - special token `id`: its *encoding* `0xFF` + the decimal digits of `id` + `0xFF`
//!   ([`Vocabulary::special_encoding`]); the name is kept beside the trie
//!   ([`Vocabulary::token_text`]);
//! - a text token containing `0xFF` (byte-level vocabularies have a raw `0xFF` token):
//!   `0xFF 0xFF` + its bytes, which no grammar accepts.
//!
//! Why this is exact: text lexemes never match `0xFF` (every front end lowers text to UTF-8,
//! which has no `0xFF` byte), and a special lexeme matches encodings only. So the only bytes
//! `0xFF` a matcher ever accepts come from special tokens, two per token, and a lexeme that
//! starts at one `0xFF` ends at the next: it covers exactly one special token, and its digits
//! name that token's id (encodings are prefix-free and canonical). A text token containing
//! `0xFF` is rejected at its second byte at the latest (`0xFF 0xFF` is no encoding's start).
//!
//! A grammar may also name a *text* token by id (`<[id]>`). It is then compiled against a
//! copy of the vocabulary in which that token is special too ([`Vocabulary::with_id_tokens`]):
//! stored and pushed as its encoding, so that the grammar reads it by id only, and other
//! tokens still spell its text. Grammars that name no text token by id use the vocabulary as
//! given.
//!
//! Invariants: every special and EOS id is `< vocab_size`; special ids have non-empty names.
//! Lookups are O(1) except [`Vocabulary::token_text`] of a special token (binary search) and
//! [`Vocabulary::special_by_name`] (linear in the specials).
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
    /// `names[name_ends[i - 1]..name_ends[i]]` is the name of `specials[i]` (start 0 for
    /// `i == 0`).
    names: Vec<u8>,
    name_ends: Vec<u32>,
    /// Bit `id` set iff `id` is special; `trie.mask_words()` words.
    special_bits: Vec<u32>,
    /// EOS ids in the order given, duplicates removed.
    eos: Vec<u32>,
    /// Token slices, largest first.
    slices: Vec<Slice>,
}

impl Vocabulary {
    /// The byte that starts (and ends) every special token's encoding in the trie, and that
    /// text never reaches (see the module docs). LLGuidance's hosts also use it to mark
    /// special tokens in token tables.
    pub const SPECIAL_PREFIX: u8 = 0xFF;

    /// Builds a vocabulary. `tokens[id]` is the text of token `id` (empty = unused id);
    /// `special` lists the special-token ids, whose bytes are their names (e.g.
    /// `b"<|eot_id|>"`); `eos` lists the end-of-sequence ids (any number, in preference
    /// order). Repeated ids in `special` or `eos` are ignored.
    ///
    /// # Errors
    /// An EOS or special id out of range, a special token with an empty name, or a
    /// [`TrieError`] (a token or name longer than [`TokTrie::MAX_TOKEN_LEN`] bytes, or
    /// longer than that minus 2 if it contains `0xFF`; too many tokens or nodes).
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
        let mut names = Vec::new();
        let mut name_ends = Vec::with_capacity(specials.len());
        for &id in &specials {
            let Some(tok) = tokens.get_mut(id as usize) else {
                return Err(VocabError::SpecialOutOfRange { id, vocab_size });
            };
            if tok.is_empty() {
                return Err(VocabError::EmptySpecial { id });
            }
            if tok.len() > TokTrie::MAX_TOKEN_LEN {
                return Err(TrieError::TokenTooLong { id, len: tok.len() }.into());
            }
            names.extend_from_slice(tok);
            name_ends.push(u32::try_from(names.len()).map_err(|_| TrieError::TooManyBytes)?);
            *tok = Vocabulary::special_encoding(id);
            sieve_kernels::set_bit(&mut special_bits, id);
        }
        // Text containing the marker byte can never be allowed: park it under `0xFF 0xFF`,
        // where every walk and push is rejected (see the module docs).
        for (id, tok) in tokens.iter_mut().enumerate() {
            let special = sieve_kernels::test_bit(&special_bits, id as u32);
            if !special && tok.contains(&Vocabulary::SPECIAL_PREFIX) {
                tok.splice(0..0, Vocabulary::MARKED_TEXT);
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
            names,
            name_ends,
            special_bits,
            eos: eos_ids,
            slices,
        })
    }

    #[cfg(feature = "text-token-ids")]
    /// A copy in which the text tokens `ids` are matched by id only: they are stored and
    /// pushed as their [`Vocabulary::special_encoding`], like special tokens named by their
    /// text, so that no text lexeme matches them and a lexeme of their encoding matches
    /// exactly them. A grammar that names a text token by id (`<[id]>`, see
    /// [`crate::ir::GrammarIr::id_tokens`]) is compiled against such a copy; the EOS ids,
    /// the other specials and the slice patterns are kept. Ids already special are skipped.
    ///
    /// Cost: one vocabulary build (the trie and the slices), as [`Vocabulary::with_slices`].
    ///
    /// # Errors
    /// As [`Vocabulary::with_slices`]: an id out of range, an unused id (empty text), or a
    /// token whose encoding is too long for the trie.
    pub fn with_id_tokens(&self, ids: &[u32]) -> Result<Vocabulary, VocabError> {
        let tokens: Vec<Vec<u8>> = (0..self.vocab_size() as u32)
            .map(|id| self.token_text(id).to_vec())
            .collect();
        let mut special = self.specials.clone();
        special.extend_from_slice(ids);
        let patterns: Vec<String> = self.slices.iter().map(|s| s.pattern().into()).collect();
        Vocabulary::with_slices(tokens, &special, &self.eos, &patterns)
    }

    /// Heap bytes held: the trie, the slices, the special names and the id tables.
    pub fn bytes_used(&self) -> usize {
        let slices: usize = self
            .slices
            .iter()
            .map(|s| s.rest().bytes_used() + s.mask().len() * 4 + s.pattern().len())
            .sum();
        self.trie.bytes_used()
            + slices
            + self.names.len()
            + (self.specials.len() + self.name_ends.len() + self.special_bits.len()) * 4
            + self.eos.len() * 4
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

    /// The token trie (what it holds for each id: [`Vocabulary::trie_bytes`]).
    pub fn trie(&self) -> &TokTrie {
        &self.trie
    }

    /// The end-of-sequence ids, in the order given.
    pub fn eos_tokens(&self) -> &[u32] {
        &self.eos
    }

    /// Whether `id` is a special token (`false` when out of range).
    pub fn is_special(&self, id: u32) -> bool {
        sieve_kernels::test_bit(&self.special_bits, id)
    }

    /// The special-token ids, sorted.
    pub fn special_tokens(&self) -> &[u32] {
        &self.specials
    }

    /// The token's text, what detokenization shows: plain bytes, or a special token's name.
    /// Empty for unused or out-of-range ids.
    pub fn token_text(&self, id: u32) -> &[u8] {
        if self.is_special(id) {
            return self.special_name(id);
        }
        let bytes = self.trie.token_bytes(id);
        bytes
            .strip_prefix(Vocabulary::MARKED_TEXT.as_slice())
            .unwrap_or(bytes)
    }

    /// The name of special token `id` (empty if `id` is not special).
    fn special_name(&self, id: u32) -> &[u8] {
        let Ok(i) = self.specials.binary_search(&id) else {
            return &[];
        };
        let start = match i.checked_sub(1) {
            Some(prev) => self.name_ends.get(prev).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.name_ends.get(i).copied().unwrap_or(0);
        self.names
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// What the trie holds for `id` and a matcher pushes when `id` is consumed: the text of a
    /// text token, [`Vocabulary::special_encoding`] for a special token, `0xFF 0xFF` + text
    /// for a text token containing `0xFF` (never accepted). Empty for unused ids.
    pub fn trie_bytes(&self, id: u32) -> &[u8] {
        self.trie.token_bytes(id)
    }

    /// The lowest special-token id named `name` (e.g. `"<|eos|>"`).
    pub fn special_by_name(&self, name: &str) -> Option<u32> {
        self.specials_named(name).next()
    }

    /// Every special-token id named `name`, ascending.
    pub fn specials_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = u32> + 'a {
        self.specials
            .iter()
            .copied()
            .filter(move |&id| self.special_name(id) == name.as_bytes())
    }

    /// The bytes special token `id` is stored and matched as: `0xFF`, the decimal digits of
    /// `id` (no leading zeros), `0xFF`. Distinct ids have encodings of which none is a prefix
    /// of another, and no text token reaches them (see the module docs).
    pub fn special_encoding(id: u32) -> Vec<u8> {
        let mut digits = [0u8; 10];
        let mut n = id;
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut out = Vec::with_capacity(digits.len() - i + 2);
        out.push(Vocabulary::SPECIAL_PREFIX);
        out.extend_from_slice(digits.get(i..).unwrap_or_default());
        out.push(Vocabulary::SPECIAL_PREFIX);
        out
    }

    /// Longest-match greedy tokenization of `text` into text tokens only: special tokens
    /// are never produced, whatever bytes `text` holds (text tokens containing `0xFF`
    /// included). `None` if some position starts no text token. For hosts without their own
    /// tokenizer; greedy is not a BPE merge order.
    pub fn greedy_tokenize_text(&self, text: &[u8]) -> Option<Vec<u32>> {
        let marked = text.contains(&Vocabulary::SPECIAL_PREFIX);
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(&first) = rest.first() {
            // Starting at a non-marker byte the trie path holds no `0xFF`, so no special.
            let mut best = if first == Vocabulary::SPECIAL_PREFIX {
                None
            } else {
                self.trie.longest_prefix_under(&[], rest)
            };
            if marked
                && let Some((id, len)) = self
                    .trie
                    .longest_prefix_under(&Vocabulary::MARKED_TEXT, rest)
                && best.is_none_or(|(_, l)| len > l)
            {
                best = Some((id, len));
            }
            let (id, len) = best?;
            out.push(id);
            rest = rest.get(len..)?;
        }
        Some(out)
    }

    /// What the trie stores before a text token containing `0xFF`.
    const MARKED_TEXT: [u8; 2] = [Vocabulary::SPECIAL_PREFIX, Vocabulary::SPECIAL_PREFIX];

    /// The trie bytes of `ids`, concatenated (out-of-range ids contribute nothing): the
    /// bytes a matcher pushes, not text (see [`Vocabulary::tokens_to_text`]).
    pub fn tokens_to_bytes(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.trie_bytes(id));
        }
        out
    }

    /// The text of `ids`, concatenated: what a detokenizer shows, special tokens by name.
    pub fn tokens_to_text(&self, ids: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        for &id in ids {
            out.extend_from_slice(self.token_text(id));
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
                names: Vec::new(),
                name_ends: Vec::new(),
                special_bits: Vec::new(),
                eos: Vec::new(),
                slices: Vec::new(),
            },
        }
    }
}

/// [`Vocabulary::synthetic`]'s common multi-byte tokens: JSON punctuation, literals and
/// whitespace, English pieces, schema words, a few non-ASCII characters.
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
        assert_eq!(v.trie_bytes(1), b"\xFF1\xFF");
        assert_eq!(v.token_text(4), b"<|eot|>");
        assert_eq!(v.trie_bytes(4), b"<|eot|>");
        assert_eq!(v.token_text(2), b"");
        assert_eq!(v.special_by_name("<|eot|>"), Some(1));
        assert_eq!(v.special_by_name("a"), None);
        assert_eq!(v.trie().token_id(&Vocabulary::special_encoding(1)), Some(1));
        assert_eq!(v.trie().token_id(b"<|eot|>"), Some(4));
        assert_eq!(v.tokens_to_bytes(&[0, 1, 3, 77]), b"a\xFF1\xFFb");
        assert_eq!(v.tokens_to_text(&[0, 1, 3, 77]), b"a<|eot|>b");
        assert_eq!(Vocabulary::special_encoding(0), b"\xFF0\xFF");
        assert_eq!(Vocabulary::special_encoding(128_009), b"\xFF128009\xFF");
        assert_eq!(
            Vocabulary::special_encoding(u32::MAX),
            b"\xFF4294967295\xFF"
        );
    }

    #[test]
    fn specials_share_names_and_marked_text() {
        // Two specials named `<|x|>`, a text token spelling the name, a raw 0xFF token and a
        // text token with 0xFF inside; 0xFF is also the first byte of every encoding.
        let tokens = vec![
            b"<|x|>".to_vec(),
            b"<|".to_vec(),
            b"<|x|>".to_vec(),
            vec![0xFF],
            b"a\xFFb".to_vec(),
            b"a".to_vec(),
            b"<|x|>".to_vec(),
            b"1".to_vec(),
        ];
        let v = Vocabulary::new(tokens, &[6, 2], &[6]).unwrap();
        assert_eq!(v.special_tokens(), &[2, 6]);
        assert_eq!(v.specials_named("<|x|>").collect::<Vec<_>>(), vec![2, 6]);
        assert_eq!(v.special_by_name("<|x|>"), Some(2));
        for (id, text) in [
            (0, &b"<|x|>"[..]),
            (2, b"<|x|>"),
            (3, b"\xFF"),
            (4, b"a\xFFb"),
            (6, b"<|x|>"),
        ] {
            assert_eq!(v.token_text(id), text, "id {id}");
        }
        assert_eq!(v.trie_bytes(3), b"\xFF\xFF\xFF");
        assert_eq!(v.trie_bytes(4), b"\xFF\xFFa\xFFb");
        assert_eq!(v.trie_bytes(6), b"\xFF6\xFF");
        // Text that spells an encoding is text, never the special token.
        assert_eq!(
            v.greedy_tokenize_text(b"\xFF6\xFF"),
            None,
            "no text token spells the digit 6"
        );
        assert_eq!(v.greedy_tokenize_text(b"\xFF1\xFF"), Some(vec![3, 7, 3]));
        assert_eq!(v.greedy_tokenize_text(b"a\xFFb<|x|>"), Some(vec![4, 0]));
        assert_eq!(v.greedy_tokenize_text(b"aa<|"), Some(vec![5, 5, 1]));
        assert_eq!(v.greedy_tokenize_text(b"b"), None);
        assert_eq!(v.greedy_tokenize_text(b""), Some(vec![]));
        // The trie's own greedy tokenizer reads encodings (forced bytes of a grammar).
        assert_eq!(v.trie().greedy_tokenize(b"\xFF6\xFFa"), Some(vec![6, 5]));
    }

    #[cfg(feature = "text-token-ids")]
    #[test]
    fn text_tokens_by_id() {
        // Token 1 (`ab`) and the marked text token 3 become by-id tokens; 2 is special already.
        let tokens = vec![
            b"a".to_vec(),
            b"ab".to_vec(),
            b"<|x|>".to_vec(),
            b"\xFFb".to_vec(),
            b"b".to_vec(),
        ];
        let v = Vocabulary::new(tokens, &[2], &[4]).unwrap();
        let w = v.with_id_tokens(&[3, 1, 2]).unwrap();
        assert_eq!(w.special_tokens(), &[1, 2, 3]);
        assert_eq!(w.eos_tokens(), &[4]);
        assert_eq!(w.trie_bytes(1), b"\xFF1\xFF");
        assert_eq!(w.trie_bytes(3), b"\xFF3\xFF");
        for id in 0..5 {
            assert_eq!(w.token_text(id), v.token_text(id), "id {id}");
        }
        assert_eq!(w.trie().token_id(b"ab"), None);
        assert_eq!(w.greedy_tokenize_text(b"ab"), Some(vec![0, 4]));
        assert!(w.bytes_used() > 0);
        assert_eq!(
            v.with_id_tokens(&[5]).unwrap_err(),
            VocabError::SpecialOutOfRange {
                id: 5,
                vocab_size: 5
            }
        );
        let v = Vocabulary::new(toks(&["a", ""]), &[], &[]).unwrap();
        assert_eq!(
            v.with_id_tokens(&[1]).unwrap_err(),
            VocabError::EmptySpecial { id: 1 }
        );
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
        // A maximal name is fine (the trie holds its encoding); one byte more is not.
        let long = vec![vec![b'x'; TokTrie::MAX_TOKEN_LEN]];
        let v = Vocabulary::new(long.clone(), &[0], &[]).unwrap();
        assert_eq!(v.token_text(0).len(), TokTrie::MAX_TOKEN_LEN);
        let longer = vec![vec![b'x'; TokTrie::MAX_TOKEN_LEN + 1]];
        let e = Vocabulary::new(longer, &[0], &[]).unwrap_err();
        assert!(matches!(
            e,
            VocabError::Trie(TrieError::TokenTooLong { id: 0, .. })
        ));
        assert!(core::error::Error::source(&e).is_some());
        // The 0xFF 0xFF mark pushes a maximal text token containing 0xFF over the limit.
        let mut marked = long;
        marked[0][0] = 0xFF;
        let e = Vocabulary::new(marked, &[], &[]).unwrap_err();
        assert!(matches!(
            e,
            VocabError::Trie(TrieError::TokenTooLong { id: 0, .. })
        ));
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
