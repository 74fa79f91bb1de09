//! Token slices: precomputed masks for large groups of tokens, OR-ed in instead of walked.
//!
//! A slice is a regex `S` over token bytes (default: JSON string-body text of 1–10, 1–30
//! and any number of characters, and with the structural-tag front end free text without a
//! `<`, [`TAG_FREE_TEXT`]). For each slice the vocabulary keeps the mask of tokens
//! whose bytes match `S` in full and a trie of all *other* tokens. At mask time, if the
//! lexer state is such that every string of `S` keeps some greedy lexeme alive (checked once
//! per lexer state, [`crate::lexer::Lexer::slice_for`]), every token of the slice is allowed
//! without looking at it: the mask starts as the slice mask and only the rest trie is
//! walked. Inside a JSON string that skips ~90% of a 128k–200k vocabulary; in free text
//! until a `<tool_call>` trigger, all but the tokens with a `<`.
//!
//! A state one of whose lexemes no one-byte string of `S` keeps alive is refused at once
//! (`Lexer::killed_by_one_byte`), and the free-text slice is tried only in grammars whose
//! lexemes give `<` a byte class of its own, and where `<` leads elsewhere than a letter
//! (`Lexer::with_slices`, `find_slice`).
//!
//! For `maxLength`-style bounds the check is a distance: a state subsumes `X{1,n}` when no
//! state that some single `X` kills is fewer than `n` characters away in the lexer's graph
//! of "read one `X`" edges. Distances found for one state bound those of the states it
//! reaches, so as a bounded string is generated the next masks are answered from the bounds
//! the first search left.

use alloc::string::String;
use alloc::vec::Vec;

use crate::limits::Limits;
use crate::regex::{ExprSet, PatternFlags};
use crate::toktrie::TokTrie;

/// Characters allowed unescaped in a JSON string.
pub(crate) const JSON_TEXT: &str = r#"[^"\\\x00-\x1F\x7F]"#;

/// Free text that cannot start a tag: any characters but `<`. Text tool-call and
/// reasoning triggers (`<tool_call>`, `<function=`, `</think>`) start with it, so in "free
/// text until a trigger" the whole slice is allowed and only tokens with a `<` (or bytes
/// that are not whole characters) are walked.
pub const TAG_FREE_TEXT: &str = "[^<]+";

/// The default slices: JSON string text (as in LLGuidance) and, with the structural-tag
/// front end (whose tool-call and reasoning triggers it is for), [`TAG_FREE_TEXT`].
pub fn default_slices() -> Vec<String> {
    #[allow(unused_mut, reason = "pushed to with the `structural` feature")]
    let mut slices: Vec<String> = ["{1,10}", "{1,30}", "+"]
        .iter()
        .map(|rep| alloc::format!("{JSON_TEXT}{rep}"))
        .collect();
    #[cfg(feature = "structural")]
    slices.push(String::from(TAG_FREE_TEXT));
    slices
}

/// One slice of the vocabulary.
#[derive(Debug, Clone)]
pub struct Slice {
    pattern: String,
    mask: Vec<u32>,
    rest: TokTrie,
    tokens: usize,
    /// The ASCII bytes `b` whose one-byte string is in the slice (bit `b % 32` of word
    /// `b / 32`); left empty without the JSON Schema front end.
    #[cfg_attr(not(feature = "json-schema"), allow(dead_code))]
    ascii: [u32; 4],
}

impl Slice {
    /// The regex defining the slice.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Tokens whose bytes match the slice regex in full.
    pub fn mask(&self) -> &[u32] {
        &self.mask
    }

    /// A trie of every token not in the slice (same ids).
    pub fn rest(&self) -> &TokTrie {
        &self.rest
    }

    /// How many tokens the slice holds.
    pub fn len(&self) -> usize {
        self.tokens
    }

    /// Whether the slice holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens == 0
    }

    /// The ASCII bytes whose one-byte string is in the slice (bit `b % 32` of word `b / 32`):
    /// a lexer state that one of them kills cannot take the slice
    /// ([`crate::lexer::Lexer::slice_for`]).
    #[cfg_attr(not(feature = "json-schema"), allow(dead_code))]
    pub(crate) fn one_byte_strings(&self) -> [u32; 4] {
        self.ascii
    }
}

/// Build slices over `tokens` (trie bytes by id), largest first; slices with no token are
/// dropped. `Err(index)` names a pattern that does not compile.
pub(crate) fn build(tokens: &[&[u8]], patterns: &[String]) -> Result<Vec<Slice>, usize> {
    let mut slices = Vec::with_capacity(patterns.len());
    let words = tokens.len().div_ceil(32);
    for (index, pattern) in patterns.iter().enumerate() {
        let mut exprs = ExprSet::new(&Limits::default());
        exprs.set_fuel(u64::MAX);
        let e = exprs
            .compile_pattern(pattern, PatternFlags::default())
            .map_err(|_| index)?;
        let mut mask = alloc::vec![0u32; words];
        let mut rest: Vec<&[u8]> = Vec::with_capacity(tokens.len());
        let mut count = 0;
        for (id, &bytes) in tokens.iter().enumerate() {
            let inside = !bytes.is_empty() && exprs.matches(e, bytes).unwrap_or(false);
            if inside {
                sieve_kernels::set_bit(&mut mask, id as u32);
                count += 1;
                rest.push(&[]);
            } else {
                rest.push(bytes);
            }
        }
        if count == 0 {
            continue;
        }
        let rest = TokTrie::new(&rest).map_err(|_| index)?;
        #[allow(unused_mut, reason = "filled with the `json-schema` feature")]
        let mut ascii = [0u32; 4];
        // The quick refusal these feed is for the JSON Schema front end's states (see
        // `Lexer::killed_by_one_byte`); builds without it leave it out.
        #[cfg(feature = "json-schema")]
        for b in 0u8..128 {
            if exprs.matches(e, &[b]).unwrap_or(false) {
                ascii[usize::from(b >> 5)] |= 1 << (b & 31);
            }
        }
        slices.push(Slice {
            pattern: pattern.clone(),
            mask,
            rest,
            tokens: count,
            ascii,
        });
    }
    slices.sort_by_key(|s| core::cmp::Reverse(s.tokens));
    Ok(slices)
}
