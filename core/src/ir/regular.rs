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
