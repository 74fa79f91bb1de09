//! The un-interned regex tree that front ends build and [`super::ExprSet::compile`] interns.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// Flags for a textual pattern (Python-`re`/Lark style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PatternFlags {
    /// `i`: case-insensitive.
    pub case_insensitive: bool,
    /// `s`: `.` also matches `\n`.
    pub dot_matches_new_line: bool,
    /// `x`: verbose (whitespace and `#` comments ignored).
    pub ignore_whitespace: bool,
    /// `m`: multi-line (`^`/`$` at line ends; anchors are otherwise rejected).
    pub multi_line: bool,
}

/// A regex as a tree. Front ends (Lark, JSON Schema) build these; the regex engine interns
/// them. Deep trees are fine: compilation uses an explicit stack, bounded by
/// [`crate::Limits::max_nesting_depth`] only for textual patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegexAst {
    /// Matches nothing.
    Nothing,
    /// Matches only the empty string.
    Epsilon,
    /// Matches exactly these bytes.
    Literal(Vec<u8>),
    /// Matches one byte from the set: bit `b % 32` of word `b / 32`.
    ByteSet([u32; 8]),
    /// A textual pattern in `regex-syntax` syntax (which accepts Python-`re` classes and
    /// escapes). Matches the whole string (implicitly anchored). Lookaround, backreferences
    /// and anchors other than a leading `^`/trailing `$` are errors.
    Pattern(String, PatternFlags),
    /// Concatenation.
    Concat(Vec<RegexAst>),
    /// Alternation.
    Or(Vec<RegexAst>),
    /// Intersection.
    And(Vec<RegexAst>),
    /// Complement over all byte strings.
    Not(Box<RegexAst>),
    /// `min` to `max` (inclusive; `None` = unbounded) repetitions.
    Repeat(Box<RegexAst>, u32, Option<u32>),
}

impl RegexAst {
    /// A literal string.
    pub fn literal(s: &str) -> RegexAst {
        RegexAst::Literal(s.as_bytes().to_vec())
    }
}
