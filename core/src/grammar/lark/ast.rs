//! The syntax tree of a Lark grammar, before name resolution and lowering.
//!
//! Every node records its byte range and its height; the parser rejects trees taller
//! than the nesting budget, so the recursive passes over them are depth-bounded.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::token::RegexLit;

/// An expression in a rule or terminal body.
#[derive(Debug, Clone)]
pub(super) struct Expr {
    pub(super) kind: ExprKind,
    /// Source byte range.
    pub(super) start: usize,
    pub(super) end: usize,
    /// 1 for leaves; 1 + the tallest child otherwise.
    pub(super) height: usize,
}

#[derive(Debug, Clone)]
pub(super) enum ExprKind {
    /// A rule or terminal name.
    Name(String),
    /// `"text"` / `"text"i`.
    Str(String, bool),
    /// `/pattern/flags`.
    Regex(RegexLit),
    /// `"a".."z"`.
    Range(char, char),
    /// `<|name|>` / `<[ids]>` (the source text).
    Special(String),
    /// Juxtaposition (never of length 1).
    Seq(Vec<Expr>),
    /// `a | b` (never of length 1).
    Alt(Vec<Expr>),
    /// `x{min,max}`, `x*`, `x+`, `x?`, `[x]`, `x ~ n..m`.
    Repeat(Box<Expr>, u32, Option<u32>),
}

impl Expr {
    pub(super) fn leaf(kind: ExprKind, start: usize, end: usize) -> Expr {
        Expr {
            kind,
            start,
            end,
            height: 1,
        }
    }
}

/// `[lazy, stop="..."]` on a definition.
#[derive(Debug, Clone, Default)]
pub(super) struct Attrs {
    pub(super) lazy: bool,
    pub(super) stop: Option<Expr>,
    /// Byte range of the `[...]` list, if present.
    pub(super) span: Option<(usize, usize)>,
}

impl Attrs {
    /// Whether the definition becomes one lazy lexeme.
    pub(super) fn makes_lexeme(&self) -> bool {
        self.lazy || self.stop.is_some()
    }
}

/// A rule or terminal definition.
#[derive(Debug, Clone)]
pub(super) struct Def {
    /// The name without `?` / `!` markers.
    pub(super) name: String,
    /// Byte range of the name in the source.
    pub(super) name_span: (usize, usize),
    pub(super) attrs: Attrs,
    pub(super) body: Expr,
}

/// One `%import` name.
#[derive(Debug, Clone)]
pub(super) struct ImportName {
    /// Name in the imported module.
    pub(super) name: String,
    /// Name in this grammar (the alias, or `name`).
    pub(super) local: String,
    pub(super) span: (usize, usize),
}

/// A top-level statement.
#[derive(Debug, Clone)]
pub(super) enum Item {
    Rule(Def),
    Term(Def),
    Ignore(Expr),
    Import(Vec<ImportName>),
}

/// Whether a (marker-free) name denotes a terminal: it has no lowercase letters.
pub(super) fn is_terminal_name(name: &str) -> bool {
    !name.bytes().any(|b| b.is_ascii_lowercase())
}
