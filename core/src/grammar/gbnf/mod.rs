//! GBNF, llama.cpp's grammar format (see `core/docs/gbnf.md`): a context-free grammar over
//! Unicode code points, with token terminals `<[id]>`, `<name>` and their negations.
//!
//! Pipeline: `parser` (text → definitions over a post-order arena of groups, on an explicit
//! stack) → `lower::resolve` (undefined rules, the start rule) → `lower::check_left_recursion`
//! (llama.cpp's test, unless [`GbnfOptions::allow_left_recursion`]) → `lower::Lower` (IR
//! through [`crate::ir::builder::Builder`]). Every string-literal character and every class
//! is a one-code-point lexeme, so the IR is exact at the character level;
//! [`crate::ir::regular::lexify`] merges regular parts into larger lexemes.
//!
//! Invariants: never panics; no recursion over the input; group nesting is limited by
//! [`Limits::max_nesting_depth`](crate::Limits::max_nesting_depth), repetition counts by
//! [`Limits::max_repeat`](crate::Limits::max_repeat); the parse is charged to the
//! [`CompileBudget`]'s byte counter as it grows, the IR to the builder's budgets. Cost is
//! linear in the source size plus the size of the lowered grammar.

use alloc::string::String;

use crate::error::GrammarError;
use crate::grammar::lark::span::LineIndex;
use crate::ir::GrammarIr;
use crate::ir::builder::SpecialTokens;
use crate::limits::{CompileBudget, Limits};

mod lower;
mod parser;

#[cfg(test)]
mod tests;

/// How a GBNF grammar is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GbnfOptions {
    /// The start rule (llama.cpp's `grammar_root`); `root` by default.
    pub root: String,
    /// Accept left-recursive rules (llama.cpp refuses them; sieve's Earley parser does
    /// not need to). Off by default: llama.cpp's behaviour.
    pub allow_left_recursion: bool,
}

impl Default for GbnfOptions {
    fn default() -> Self {
        GbnfOptions {
            root: String::from("root"),
            allow_left_recursion: false,
        }
    }
}

/// Parse and lower GBNF text to the IR (before regular rules become lexemes:
/// [`crate::ir::regular::lexify`] does that).
///
/// Errors carry the [`crate::Span`] of the offending text. Like llama.cpp, which reads the
/// grammar as a C string, the text ends at its first NUL.
///
/// ```
/// use sieve_core::grammar::gbnf::{lower, GbnfOptions};
/// use sieve_core::grammar::lark::NoSpecialTokens;
/// use sieve_core::{CompileBudget, Limits};
/// let limits = Limits::default();
/// let ir = lower(
///     "root ::= [a-z]+ \"!\"\n",
///     &GbnfOptions::default(),
///     &NoSpecialTokens,
///     &limits,
///     &mut CompileBudget::new(&limits),
/// )
/// .unwrap();
/// assert_eq!(ir.nonterminals[ir.start as usize].name, "root");
/// ```
pub fn lower(
    src: &str,
    opts: &GbnfOptions,
    specials: &dyn SpecialTokens,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let src = src.split('\0').next().unwrap_or_default();
    let lines = LineIndex::new(src, budget)
        .map_err(|k| GrammarError::limit(k).with_span(crate::error::Span::at(src, 0, 0)))?;
    let parsed = parser::Parser::new(src, &lines, limits, budget).parse()?;
    let resolved = lower::resolve(&parsed, &lines, &opts.root, budget)?;
    if !opts.allow_left_recursion {
        lower::check_left_recursion(&parsed, &resolved, &lines, budget)?;
    }
    lower::Lower::new(&parsed, &resolved, &lines, specials, limits, budget).run()
}
