//! Lowering structural-tag formats to grammar IR (skeleton; filled in by the structural-tag work).

use crate::error::{GrammarError, GrammarErrorKind};
use crate::grammar::ir::GrammarIr;
use crate::grammar::json::JsonOptions;
use crate::limits::{CompileBudget, Limits};
use crate::vocab::Vocabulary;

/// Lower structural-tag JSON text (`{"type": "structural_tag", "format": ...}`, a bare
/// format object, or the legacy `{"structures": [...], "triggers": [...]}` form) to IR.
/// Strings equal to a control token's name resolve to that token (see `core/docs/structural.md`).
pub fn lower(
    text: &str,
    json: &JsonOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let _ = (text, json, vocab, limits, budget);
    Err(GrammarError::new(
        GrammarErrorKind::Unsupported,
        "structural tags are not implemented yet",
    ))
}
