//! The Lark-style front end: grammar text → [`GrammarIr`].
//!
//! The dialect is LLGuidance's subset of Lark (see `core/docs/lark.md`): lowercase rules over
//! UPPERCASE terminals, string and `/regex/` literals, `"a".."z"` ranges, groups, `?` `*`
//! `+` `[..]` `~ n..m` `{m,n}`, special tokens `<|name|>` / `<[id]>`, `%ignore`,
//! `%import common...`, the `lazy` / `stop` attributes, and inline JSON Schemas
//! (`name: %json {...}`, compiled by [`crate::grammar::json`] and embedded).
//!
//! Pipeline: `token` (text → tokens) → `parser` (tokens → items) → `lower` (items →
//! IR). Terminals become one [`crate::regex::RegexAst`] each; a terminal used by others is
//! referenced through one shared node ([`crate::regex::RegexAst::Shared`], small ones are
//! copied), so the terminals form a DAG, never an exponential tree;
//! literals in rules become deduplicated anonymous lexemes; rule operators become helper
//! nonterminals such as `item_star_3`; a `%json` schema's IR is appended with
//! [`GrammarIr::embed`] (`schema` locates its errors in the source).
//!
//! Invariants: never panics; no recursion over the input (expressions are parsed with an
//! explicit stack into a post-order arena and lowered with value stacks; regex trees drop
//! iteratively); group nesting and postfix operators (`"a"***` is three levels) are
//! limited by [`Limits::max_nesting_depth`](crate::Limits::max_nesting_depth), so the
//! default limits run on a 64 KiB stack. Everything created is counted once against one
//! [`Limits::max_grammar_size`](crate::Limits::max_grammar_size) budget for the whole
//! grammar (a lexeme at its expanded size, what interning it may cost) and paid from the
//! [`crate::CompileBudget`]. Cost is linear in the source size plus the size of the lowered
//! grammar.
//!
//! Heap: every buffer that grows with the input is charged to the [`crate::CompileBudget`]'s
//! byte counter before it grows (`heap`): the line index, the token list and literal text,
//! the node arena and copied names, and in lowering estimates per regex node, rule symbol,
//! helper, definition and lexeme plus the literal text copied. A `/regex/` is checked before
//! regex-syntax parses it: its estimated tree must fit what is left. So under a small
//! `max_memory_bytes` a large or deep source ends in `Limit(Memory)` before it allocates.

use alloc::vec::Vec;

use crate::error::GrammarError;
use crate::ir::GrammarIr;

mod ast;
mod common;
mod heap;
mod lower;
mod parser;
mod schema;
pub(crate) mod span;
mod token;

#[cfg(test)]
mod tests;

/// Resolves special tokens named in a grammar (shared by every front end).
pub use crate::ir::builder::SpecialTokens;

/// The other grammars of a request that `@name` in a rule may reference (LLGuidance's
/// grammar list: its grammar 0 is the Lark text being parsed, the others have names).
pub trait SubGrammars {
    /// The IR of the grammar named `name`, compiled within `budget`; `None` when no grammar
    /// has that name. Errors are the referenced grammar's own (the caller locates them at
    /// the reference).
    fn lower(
        &self,
        name: &str,
        limits: &crate::Limits,
        budget: &mut crate::CompileBudget,
    ) -> Option<Result<GrammarIr, GrammarError>>;
}

/// A [`SubGrammars`] with no grammars (every `@name` is an error).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSubGrammars;

impl SubGrammars for NoSubGrammars {
    fn lower(
        &self,
        _name: &str,
        _limits: &crate::Limits,
        _budget: &mut crate::CompileBudget,
    ) -> Option<Result<GrammarIr, GrammarError>> {
        None
    }
}

/// What a Lark grammar is compiled against besides its text.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// Special tokens by name and id.
    pub specials: &'a dyn SpecialTokens,
    /// Options for inline `%json` schemas.
    pub json: &'a crate::grammar::json::JsonOptions,
    /// Grammars `@name` references.
    pub grammars: &'a dyn SubGrammars,
}

/// A [`SpecialTokens`] that knows no tokens (every special token is an error).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSpecialTokens;

impl SpecialTokens for NoSpecialTokens {
    fn by_name(&self, _name: &str) -> Vec<Vec<u8>> {
        Vec::new()
    }

    fn by_id(&self, _id: u32) -> Option<Vec<u8>> {
        None
    }
}

/// Parse Lark-style grammar text into the IR.
///
/// `start` is the start rule. All work is paid from `budget` (shared with the rest of the
/// compile). Errors carry the [`crate::Span`] of the offending text;
/// exceeding a budget of `limits` returns [`crate::GrammarErrorKind::Limit`].
///
/// ```
/// use sieve_core::grammar::lark::{parse, NoSpecialTokens};
/// let ir = parse(
///     "start: item+\nitem: NUMBER | \"x\"\n%import common.NUMBER",
///     &NoSpecialTokens,
///     &sieve_core::Limits::default(),
///     &mut sieve_core::CompileBudget::new(&sieve_core::Limits::default()),
/// )
/// .unwrap();
/// assert_eq!(ir.lexemes.len(), 2);
/// ```
pub fn parse(
    src: &str,
    specials: &dyn SpecialTokens,
    limits: &crate::Limits,
    budget: &mut crate::CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let json = crate::grammar::json::JsonOptions::default();
    let ctx = Context {
        specials,
        json: &json,
        grammars: &NoSubGrammars,
    };
    parse_in(src, &ctx, limits, budget)
}

/// [`parse`] with `%json` options and the grammars `@name` may reference.
pub fn parse_in(
    src: &str,
    ctx: &Context<'_>,
    limits: &crate::Limits,
    budget: &mut crate::CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let lines = span::LineIndex::new(src, budget).map_err(crate::GrammarError::limit)?;
    let toks = token::tokenize(src, &lines, budget)?;
    let items = parser::Parser::new(src, toks, &lines, limits, budget).parse_items()?;
    lower::lower(&items, &lines, ctx, limits, budget)
}
