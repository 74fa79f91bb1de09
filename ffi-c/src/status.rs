//! Status codes: every fallible function returns a [`sieve_status`]. The numbers are part of
//! the ABI and never change; new codes are only ever appended.

use core::ffi::c_char;

use sieve_core::{GrammarErrorKind, MatcherError};

use crate::boundary::ffi_boundary;

/// The result of a call. `SIEVE_STATUS_OK` (0) is success; every other value is an error.
///
/// The numbers are stable forever: codes are never renumbered or reused, only appended.
/// `sieve_status_name` gives each code's name.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum sieve_status {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL (or a buffer pointer was NULL with a non-zero
    /// length).
    NullArgument = 1,
    /// Text was not valid UTF-8.
    InvalidUtf8 = 2,
    /// An argument is out of its domain: an unknown enum value, a bad `struct_size`,
    /// inconsistent lengths, a matcher listed twice in a batch.
    InvalidArgument = 3,
    /// An output buffer is too small; where documented, the needed size was written.
    InsufficientSize = 4,
    /// The grammar (any `sieve_grammar_kind`) does not compile; see the `sieve_error`.
    GrammarError = 5,
    /// The token is not allowed at this point (the matcher is now in error).
    TokenRejected = 6,
    /// A token id is not below the vocabulary size.
    TokenOutOfRange = 7,
    /// A budget of `sieve_limits` was exceeded.
    LimitExceeded = 8,
    /// A token was consumed after the matcher stopped (EOS consumed).
    Stopped = 9,
    /// The matcher is in error from an earlier call (errors are sticky until
    /// `sieve_matcher_reset`); `sieve_matcher_error_message` says which.
    MatcherError = 10,
    /// The library panicked (a bug); the call had no effect on its outputs. The handle
    /// involved should be freed. Never returned by a build without `std`, where a panic
    /// aborts.
    Panic = 11,
    /// The tokenizer could not be built (bad byte table, bad `tokenizer.json`).
    TokenizerError = 12,
    /// `sieve_matcher_rollback` asked for more tokens than were consumed (not sticky).
    RollbackTooFar = 13,
    /// A host callback misbehaved: an executor skipped a work item, or a tokenize callback
    /// returned an impossible count.
    CallbackError = 14,
}

impl sieve_status {
    /// Every status, in numeric order.
    pub(crate) const ALL: [sieve_status; 15] = [
        sieve_status::Ok,
        sieve_status::NullArgument,
        sieve_status::InvalidUtf8,
        sieve_status::InvalidArgument,
        sieve_status::InsufficientSize,
        sieve_status::GrammarError,
        sieve_status::TokenRejected,
        sieve_status::TokenOutOfRange,
        sieve_status::LimitExceeded,
        sieve_status::Stopped,
        sieve_status::MatcherError,
        sieve_status::Panic,
        sieve_status::TokenizerError,
        sieve_status::RollbackTooFar,
        sieve_status::CallbackError,
    ];

    /// The C name, NUL-terminated.
    fn name(self) -> &'static str {
        match self {
            sieve_status::Ok => "SIEVE_STATUS_OK\0",
            sieve_status::NullArgument => "SIEVE_STATUS_NULL_ARGUMENT\0",
            sieve_status::InvalidUtf8 => "SIEVE_STATUS_INVALID_UTF8\0",
            sieve_status::InvalidArgument => "SIEVE_STATUS_INVALID_ARGUMENT\0",
            sieve_status::InsufficientSize => "SIEVE_STATUS_INSUFFICIENT_SIZE\0",
            sieve_status::GrammarError => "SIEVE_STATUS_GRAMMAR_ERROR\0",
            sieve_status::TokenRejected => "SIEVE_STATUS_TOKEN_REJECTED\0",
            sieve_status::TokenOutOfRange => "SIEVE_STATUS_TOKEN_OUT_OF_RANGE\0",
            sieve_status::LimitExceeded => "SIEVE_STATUS_LIMIT_EXCEEDED\0",
            sieve_status::Stopped => "SIEVE_STATUS_STOPPED\0",
            sieve_status::MatcherError => "SIEVE_STATUS_MATCHER_ERROR\0",
            sieve_status::Panic => "SIEVE_STATUS_PANIC\0",
            sieve_status::TokenizerError => "SIEVE_STATUS_TOKENIZER_ERROR\0",
            sieve_status::RollbackTooFar => "SIEVE_STATUS_ROLLBACK_TOO_FAR\0",
            sieve_status::CallbackError => "SIEVE_STATUS_CALLBACK_ERROR\0",
        }
    }

    /// The status for a matcher error returned by the call that caused it.
    pub(crate) fn from_matcher(e: &MatcherError) -> sieve_status {
        match e {
            MatcherError::TokenOutOfRange { .. } => sieve_status::TokenOutOfRange,
            MatcherError::TokenRejected { .. } => sieve_status::TokenRejected,
            MatcherError::MaskTooSmall { .. } => sieve_status::InsufficientSize,
            MatcherError::RollbackTooFar { .. } => sieve_status::RollbackTooFar,
            MatcherError::Stopped => sieve_status::Stopped,
            MatcherError::Limit(_) => sieve_status::LimitExceeded,
            _ => sieve_status::MatcherError,
        }
    }

    /// The status for a grammar compile error.
    pub(crate) fn from_grammar(kind: &GrammarErrorKind) -> sieve_status {
        match kind {
            GrammarErrorKind::Limit(_) => sieve_status::LimitExceeded,
            _ => sieve_status::GrammarError,
        }
    }
}

impl TryFrom<u32> for sieve_status {
    type Error = ();

    fn try_from(value: u32) -> Result<Self, ()> {
        sieve_status::ALL.get(value as usize).copied().ok_or(())
    }
}

/// The name of a status code (`"SIEVE_STATUS_OK"`, ...), or `"SIEVE_STATUS_UNKNOWN"` for a
/// number this library does not know. The string is static; never free it.
///
/// Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_status_name(status: u32) -> *const c_char {
    ffi_boundary! {
        let name = sieve_status::try_from(status).map_or("SIEVE_STATUS_UNKNOWN\0", sieve_status::name);
        name.as_ptr().cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable() {
        for (i, s) in sieve_status::ALL.iter().enumerate() {
            assert_eq!(*s as u32, i as u32);
            assert_eq!(sieve_status::try_from(i as u32), Ok(*s));
            assert!(s.name().ends_with('\0'));
        }
        assert_eq!(sieve_status::Panic as u32, 11);
        assert!(sieve_status::try_from(15).is_err());
    }
}
