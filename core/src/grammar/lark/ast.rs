//! The syntax tree of a Lark grammar, before name resolution and lowering.
//!
//! Expressions live in one arena in *post-order*: a node's children are the subtrees
//! immediately before it, and the subtree rooted at `r` is exactly `nodes[first..=r]`
//! with `first = nodes[r].first`. Passes therefore walk a range left to right with a value
//! stack (no recursion, whatever the nesting), and dropping the tree is flat.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::token::RegexLit;

/// One expression node.
#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) kind: NodeKind,
    /// Source byte range.
    pub(super) start: usize,
    pub(super) end: usize,
    /// Index of the first node of this node's subtree.
    pub(super) first: usize,
}

#[derive(Debug, Clone)]
pub(super) enum NodeKind {
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
    /// `%json { ... }`: an inline JSON Schema.
    Json(Box<JsonLit>),
    /// `@name`: another grammar of the request (the name without `@`).
    GrammarRef(String),
    /// Juxtaposition of the preceding `n` subtrees (`n != 1`).
    Seq(usize),
    /// Alternation of the preceding `n` subtrees (`n >= 2`).
    Alt(usize),
    /// Intersection of the preceding `n` subtrees (`n >= 2`; `a & b`, terminals only).
    And(usize),
    /// Complement of the preceding subtree (prefix `~a`, terminals only).
    Not,
    /// `{min,max}` of the preceding subtree (`*`, `+`, `?`, `[..]`, `~ n..m` included).
    Repeat(u32, Option<u32>),
}

/// The schema of a `%json { ... }` atom.
#[derive(Debug, Clone)]
pub(super) struct JsonLit {
    /// The parsed object.
    pub(super) value: serde_json::Value,
    /// Source byte range of the object text, `{` to `}` inclusive.
    pub(super) text: (usize, usize),
}

/// `[lazy, stop="..."]` on a definition.
#[derive(Debug, Clone, Default)]
pub(super) struct Attrs {
    pub(super) lazy: bool,
    /// Root of the stop expression.
    pub(super) stop: Option<usize>,
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
    /// Root of the body.
    pub(super) body: usize,
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
    /// Root of the ignored expression.
    Ignore(usize),
    Import(Vec<ImportName>),
}

/// A parsed grammar: statements over one node arena.
#[derive(Debug, Clone, Default)]
pub(super) struct Parsed {
    pub(super) nodes: Vec<Node>,
    pub(super) items: Vec<Item>,
}

impl Parsed {
    /// The nodes of the subtree rooted at `root`, in post-order (empty if out of range).
    pub(super) fn subtree(&self, root: usize) -> &[Node] {
        let first = self.nodes.get(root).map_or(root, |n| n.first);
        self.nodes.get(first..=root).unwrap_or(&[])
    }
}

/// Whether a (marker-free) name denotes a terminal: it has no lowercase letters.
pub(super) fn is_terminal_name(name: &str) -> bool {
    !name.bytes().any(|b| b.is_ascii_lowercase())
}
