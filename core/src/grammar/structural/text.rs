//! Literal strings split at control tokens, and the free-text regexes of structural tags.
//!
//! A literal of a structural tag (`const_string`, a tag's `begin`/`end`, a trigger, a
//! separator, a dispatch pattern) is a list of [`Piece`]s: text, and the special tokens of
//! the vocabulary whose names occur in it (leftmost, longest name first). Free text is
//! built over Σ = the bytes `0x00..=0xFE` (text never holds `0xFF`, which starts every
//! special token's encoding), and free text that something ends is one lexeme with its end
//! (see [`until`]): sieve's lexer is greedy, so two lexemes would split it wrongly.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::regex::RegexAst;
use crate::vocab::Vocabulary;

/// A part of a literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Plain text (non-empty).
    Text(Vec<u8>),
    /// A control token: every special id with this name (ascending, non-empty).
    Special(Vec<u32>),
}

/// The special tokens of a vocabulary by name.
pub(crate) struct SpecialNames {
    /// Name → ids (ascending).
    names: BTreeMap<Vec<u8>, Vec<u32>>,
    /// The distinct name lengths, longest first.
    lengths: Vec<usize>,
}

impl SpecialNames {
    /// Every special token of `vocab` (EOS tokens included: they are control tokens too).
    pub(crate) fn new(vocab: &Vocabulary) -> SpecialNames {
        let mut names: BTreeMap<Vec<u8>, Vec<u32>> = BTreeMap::new();
        for &id in vocab.special_tokens() {
            let name = vocab.token_text(id);
            if !name.is_empty() {
                names.entry(name.to_vec()).or_default().push(id);
            }
        }
        let mut lengths: Vec<usize> = names.keys().map(Vec::len).collect();
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        lengths.dedup();
        SpecialNames { names, lengths }
    }

    /// The work of splitting one byte: the number of name lengths tried.
    pub(crate) fn cost_per_byte(&self) -> usize {
        self.lengths.len()
    }

    /// The ids named `name` (empty if none).
    pub(crate) fn ids(&self, name: &[u8]) -> &[u32] {
        self.names.get(name).map(Vec::as_slice).unwrap_or_default()
    }

    /// `s` split at occurrences of special-token names (leftmost, then longest).
    pub(crate) fn split(&self, s: &[u8]) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut text_start = 0;
        let mut i = 0;
        while i < s.len() {
            let rest = s.get(i..).unwrap_or_default();
            let best = self.lengths.iter().find_map(|&len| {
                rest.get(..len)
                    .and_then(|n| self.names.get(n))
                    .map(|ids| (len, ids))
            });
            match best {
                Some((len, ids)) => {
                    if i > text_start {
                        out.push(Piece::Text(
                            s.get(text_start..i).unwrap_or_default().to_vec(),
                        ));
                    }
                    out.push(Piece::Special(ids.clone()));
                    i += len;
                    text_start = i;
                }
                None => i += 1,
            }
        }
        if s.len() > text_start {
            out.push(Piece::Text(
                s.get(text_start..).unwrap_or_default().to_vec(),
            ));
        }
        out
    }
}

/// Σ: one byte other than `0xFF`.
pub(crate) fn sigma() -> RegexAst {
    let mut set = [u32::MAX; 8];
    set[7] &= !(1u32 << 31);
    RegexAst::ByteSet(set)
}

/// Σ*: any text.
pub(crate) fn sigma_star() -> RegexAst {
    RegexAst::Repeat(Box::new(sigma()), 0, None)
}

/// Σ⁺: non-empty text.
pub(crate) fn sigma_plus() -> RegexAst {
    RegexAst::Repeat(Box::new(sigma()), 1, None)
}

/// One of `strs` as a regex.
fn any_of(strs: &[Vec<u8>]) -> RegexAst {
    match strs {
        [one] => RegexAst::Literal(one.clone()),
        _ => RegexAst::Or(strs.iter().map(|s| RegexAst::Literal(s.clone())).collect()),
    }
}

/// Text containing none of `strs` (`strs` non-empty): `Σ* ∩ ¬(Σ* strs Σ*)`.
fn avoiding(strs: &[Vec<u8>]) -> RegexAst {
    RegexAst::Not(Box::new(RegexAst::Concat(vec![
        sigma_star(),
        any_of(strs),
        sigma_star(),
    ])))
}

/// At most `n` code points of UTF-8 text.
fn max_chars(n: u32) -> RegexAst {
    RegexAst::Pattern(alloc::format!("(?s:.){{0,{n}}}"), Default::default())
}

/// The constraints on free text itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextRule {
    /// Strings the text must not contain.
    pub excludes: Vec<Vec<u8>>,
    /// Most code points.
    pub max_chars: Option<u32>,
}

impl TextRule {
    /// The text: `Σ* ∩ ¬(Σ* X Σ*) ∩ (UTF-8 char){0,n}`.
    fn body(&self) -> RegexAst {
        let mut parts = vec![sigma_star()];
        if !self.excludes.is_empty() {
            parts.push(avoiding(&self.excludes));
        }
        if let Some(n) = self.max_chars {
            parts.push(max_chars(n));
        }
        and(parts)
    }
}

fn and(mut parts: Vec<RegexAst>) -> RegexAst {
    if parts.len() == 1 {
        parts.pop().unwrap_or(RegexAst::Nothing)
    } else {
        RegexAst::And(parts)
    }
}

/// Free text ended by its first occurrence of one of `stops` (plain-text strings), that
/// occurrence being `end`: `(T · end) ∩ ¬(Σ* stops Σ⁺)`, T the text of `rule`. `end` is
/// one of `stops`. No string of it is a proper prefix of another (greedy = first).
pub(crate) fn until(rule: &TextRule, stops: &[Vec<u8>], end: &[u8]) -> RegexAst {
    until_any(rule, stops, &[end.to_vec()])
}

/// [`until`] ended by any of `ends` (each one of `stops`): for ends after which the same
/// thing comes.
pub(crate) fn until_any(rule: &TextRule, stops: &[Vec<u8>], ends: &[Vec<u8>]) -> RegexAst {
    RegexAst::And(vec![
        RegexAst::Concat(vec![rule.body(), any_of(ends)]),
        RegexAst::Not(Box::new(RegexAst::Concat(vec![
            sigma_star(),
            any_of(stops),
            sigma_plus(),
        ]))),
    ])
}

/// Free text containing none of `stops`, followed by `tail` (text, maybe empty): what comes
/// before a control token that ends the text (nullable when `tail` is empty).
pub(crate) fn before_special(rule: &TextRule, stops: &[Vec<u8>], tail: &[u8]) -> RegexAst {
    let body = if tail.is_empty() {
        rule.body()
    } else {
        RegexAst::Concat(vec![rule.body(), RegexAst::Literal(tail.to_vec())])
    };
    if stops.is_empty() {
        body
    } else {
        RegexAst::And(vec![body, avoiding(stops)])
    }
}

/// Free text that nothing ends (nullable): the text of `rule` containing none of `stops`.
pub(crate) fn final_text(rule: &TextRule, stops: &[Vec<u8>]) -> RegexAst {
    before_special(rule, stops, &[])
}

/// A short printable name for a literal (lexeme names, messages).
pub(crate) fn show(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for ch in String::from_utf8_lossy(bytes).chars().take(40) {
        match ch {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            c if (c as u32) < 0x20 => s.push_str(&alloc::format!("\\x{:02x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}
