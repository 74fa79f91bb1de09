//! The package's exceptions, and the conversion of sieve's typed errors into them.
//!
//! `GrammarError` carries the typed location of `sieve_core::GrammarError` as attributes
//! (`kind`, `message`, `line`, `column`, `end_line`, `end_column`, `pointer`), never only
//! inside the message.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use sieve_core::error::GrammarError as CoreGrammarError;
use sieve_core::error::{GrammarErrorKind, MatcherError as CoreMatcherError};
use sieve_core::vocab::VocabError;

create_exception!(
    sieve,
    SieveError,
    PyException,
    "Base class of sieve's errors."
);
create_exception!(
    sieve,
    GrammarError,
    SieveError,
    "A grammar did not compile. Attributes: kind, message, line, column, end_line, \
     end_column (1-based, None when not from grammar text), pointer (a JSON pointer for \
     JSON sources, else None)."
);
create_exception!(
    sieve,
    MatcherError,
    SieveError,
    "A matcher operation failed for a reason other than a rejected token (a budget, a \
     stopped matcher)."
);

/// The name of a grammar error kind (`syntax`, `undefined_symbol`, ..., `limit:<field>`).
fn kind_name(kind: &GrammarErrorKind) -> String {
    match kind {
        GrammarErrorKind::Syntax => "syntax".into(),
        GrammarErrorKind::UndefinedSymbol => "undefined_symbol".into(),
        GrammarErrorKind::DuplicateDefinition => "duplicate_definition".into(),
        GrammarErrorKind::InvalidRegex => "invalid_regex".into(),
        GrammarErrorKind::EmptyLexeme => "empty_lexeme".into(),
        GrammarErrorKind::UnknownSpecialToken => "unknown_special_token".into(),
        GrammarErrorKind::Unproductive => "unproductive".into(),
        GrammarErrorKind::Unsupported => "unsupported".into(),
        GrammarErrorKind::Limit(k) => format!("limit:{}", k.field()),
        _ => "other".into(),
    }
}

/// A `GrammarError` exception with the location fields set.
pub fn grammar_error(py: Python<'_>, e: &CoreGrammarError) -> PyErr {
    let err = GrammarError::new_err(e.to_string());
    let value = err.value(py);
    let span = e.span;
    let set = || -> PyResult<()> {
        value.setattr("kind", kind_name(&e.kind))?;
        value.setattr("message", e.message.as_str())?;
        value.setattr("line", span.map(|s| s.start.line))?;
        value.setattr("column", span.map(|s| s.start.column))?;
        value.setattr("end_line", span.map(|s| s.end.line))?;
        value.setattr("end_column", span.map(|s| s.end.column))?;
        value.setattr("pointer", e.pointer())?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(other) => other,
    }
}

/// A tokenizer that could not be read.
pub fn vocab_error(e: &VocabError) -> PyErr {
    PyValueError::new_err(format!("tokenizer: {e}"))
}

/// A matcher failure that is not a rejected token.
pub fn matcher_error(e: &CoreMatcherError) -> PyErr {
    match e {
        CoreMatcherError::TokenOutOfRange { .. } | CoreMatcherError::MaskTooSmall { .. } => {
            PyValueError::new_err(e.to_string())
        }
        _ => MatcherError::new_err(e.to_string()),
    }
}
