//! Regular sub-grammars become lexemes (issue 19).
//!
//! STUB: returns the grammar unchanged.

use crate::error::GrammarError;
use crate::ir::GrammarIr;
use crate::limits::{CompileBudget, Limits};

/// Replace the maximal rules whose language is regular by lexemes, where the lexer's
/// greedy ending keeps the grammar's language and every prefix's viability exactly.
pub fn lexify(
    ir: GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let _ = (limits, budget);
    Ok(ir)
}

/// How two lexemes the parser may allow at the same point get in each other's way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConflictKind {
    /// A string of `first`, followed by a byte that may follow `first` in the grammar, is a
    /// prefix of a string of `second` (the lexer's greedy ending reads on into `second`).
    ProperPrefix,
    /// Some text matches both.
    SameText,
    /// `first` is lazy and ends before `second`, which some string extends, can.
    LazyShadow,
}

/// A pair of lexemes in conflict (ids index [`GrammarIr::lexemes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LexemeConflict {
    /// The lexeme that is shadowed or read past.
    pub first: u32,
    /// The lexeme that shadows it.
    pub second: u32,
    /// How.
    pub kind: ConflictKind,
}

/// Every conflict between lexemes the parser may allow at the same point. STUB: none yet.
pub fn lexeme_conflicts(
    ir: &GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<alloc::vec::Vec<LexemeConflict>, GrammarError> {
    let _ = (ir, limits, budget);
    Ok(alloc::vec::Vec::new())
}
