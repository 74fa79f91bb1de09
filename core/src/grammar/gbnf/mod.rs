//! GBNF, llama.cpp's grammar format (see `core/docs/gbnf.md`).
//!
//! STUB: the front end is being written (issue 19).

use alloc::string::String;

use crate::error::{GrammarError, GrammarErrorKind};
use crate::ir::GrammarIr;
use crate::ir::builder::SpecialTokens;
use crate::limits::{CompileBudget, Limits};

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
pub fn lower(
    src: &str,
    opts: &GbnfOptions,
    specials: &dyn SpecialTokens,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let _ = (src, opts, specials, limits, budget);
    Err(GrammarError::new(
        GrammarErrorKind::Unsupported,
        "GBNF is not implemented yet",
    ))
}
