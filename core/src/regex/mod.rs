//! Regex engine on symbolic derivatives (Brzozowski / Antimirov style, as in derivre).
//!
//! Expressions are hash-consed in an [`ExprSet`]: structurally equal expressions get the same
//! [`ExprId`], so DFA states can be compared by id. Smart constructors simplify algebraically
//! (flattening, sorting and deduplicating `Or`/`And`, absorbing `Nothing`/`Epsilon`, merging
//! byte sets), which keeps the set of derivatives finite in practice. Every node records
//! whether it is nullable. Derivatives are taken per byte and cached; [`ByteClasses`] groups
//! bytes no expression distinguishes, so the lexer DFA has one column per class.
//!
//! Besides the usual operators the engine has `And` (intersection) and `Not` (complement over
//! byte strings), which the slicer and the JSON compiler use; for expressions containing them
//! a fuel-bounded [`ExprSet::is_empty_language`] decides emptiness. Without `And`/`Not` an
//! expression denotes the empty language iff it is [`ExprId::NOTHING`].
//!
//! Patterns are parsed with `regex-syntax`; Unicode classes are lowered to UTF-8 byte
//! automata, so a lexeme never matches invalid UTF-8 (and never the `0xFF` byte that marks
//! special tokens). Counted repetition is kept symbolic (`Repeat{min,max}`), bounded by
//! [`crate::Limits::max_repeat`].
//!
//! Cost: a derivative cache hit is one hash lookup; the lexer reads cached transitions from
//! its own table without hashing.

mod ast;
mod classes;
mod deriv;
mod exprset;
mod include;
mod parse;
mod prefix;

pub use ast::{PatternFlags, RegexAst};
pub use classes::ByteClasses;
pub(crate) use classes::refine_blocks;
pub use exprset::{COMPILE_REGEX_WEIGHT, ExprId, ExprSet};
pub(crate) use exprset::{Node, REPEAT_INF};
pub(crate) use parse::check_pattern_within;
pub use parse::{RegexCompileError, RegexCompileErrorKind, RegexSyntaxError, check_pattern};
