//! Pattern parsing through regex-syntax. (Implementation by the regex helper.)

use alloc::string::String;

/// A pattern that does not parse, with the byte range inside the pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexSyntaxError {
    /// What is wrong.
    pub message: String,
    /// Byte range within the pattern text.
    pub start: usize,
    /// End of that range.
    pub end: usize,
}

/// Check that a pattern parses and uses only supported features.
pub fn check_pattern(
    _pattern: &str,
    _flags: super::PatternFlags,
) -> Result<(), RegexSyntaxError> {
    Ok(())
}
