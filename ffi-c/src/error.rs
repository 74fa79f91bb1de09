//! Rich errors: an owned `sieve_error` with a status, a message, a source position and, for
//! errors about a JSON value (JSON Schema, structural tag), its JSON pointer. Both come from
//! the fields of `sieve_core::GrammarError`, never from its message.

use alloc::ffi::CString;
use core::ffi::c_char;

use sieve_core::GrammarError;
use sieve_core::vocab::VocabError;

use crate::boundary::{Castable, Exclusive, box_free, box_into_handle, ffi_boundary, handle_ref};
use crate::prelude::*;
use crate::status::sieve_status;

/// A rich error returned through an optional `sieve_error **error_out` argument.
///
/// Owned by the caller: free it with `sieve_error_free`. Immutable after creation; the
/// accessors may be called from any thread as long as nobody frees it meanwhile.
pub struct sieve_error {
    _private: [u8; 0],
}

/// What a `sieve_error` holds.
#[derive(Debug, Clone)]
pub(crate) struct ErrorInfo {
    pub(crate) status: sieve_status,
    message: CString,
    line: u32,
    column: u32,
    pointer: Option<CString>,
}

impl Castable for sieve_error {
    type Ownership = Exclusive;
    type Rust = ErrorInfo;
}

/// A C string from Rust text; interior NULs are written as `\0`.
pub(crate) fn c_string(text: &str) -> CString {
    CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

impl ErrorInfo {
    /// An error without a position.
    pub(crate) fn new(status: sieve_status, message: &str) -> ErrorInfo {
        ErrorInfo {
            status,
            message: c_string(message),
            line: 0,
            column: 0,
            pointer: None,
        }
    }

    /// A grammar compile error: its line and column and its JSON pointer come from the
    /// error's fields (the message shows them too, as `Display` writes it).
    pub(crate) fn grammar(e: &GrammarError) -> ErrorInfo {
        let mut info = ErrorInfo::new(sieve_status::from_grammar(&e.kind), &e.to_string());
        if let Some(span) = e.span {
            info.line = span.start.line;
            info.column = span.start.column;
        }
        info.pointer = e.pointer().map(c_string);
        info
    }

    /// A tokenizer build error.
    pub(crate) fn vocab(e: &VocabError) -> ErrorInfo {
        let mut info = ErrorInfo::new(sieve_status::TokenizerError, &e.to_string());
        if let VocabError::InvalidJson { line, column } = e {
            info.line = u32::try_from(*line).unwrap_or(u32::MAX);
            info.column = u32::try_from(*column).unwrap_or(u32::MAX);
        }
        info
    }

    /// Hands the error to the caller through `error_out` (if non-NULL) and returns its status.
    ///
    /// # Safety
    /// `error_out` is NULL or valid for writing one pointer.
    pub(crate) unsafe fn report(self, error_out: *mut *mut sieve_error) -> sieve_status {
        let status = self.status;
        if !error_out.is_null() {
            // SAFETY: 1. non-NULL and writable by the caller's contract.
            unsafe { error_out.write(box_into_handle(self)) };
        }
        status
    }
}

/// The status of an error; `SIEVE_STATUS_NULL_ARGUMENT` if `error` is NULL.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_error_status(error: *const sieve_error) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live error handle (caller contract).
        match unsafe { handle_ref(error) } {
            Some(e) => e.status,
            None => sieve_status::NullArgument,
        }
    }
}

/// The error message, NUL-terminated UTF-8, valid until `sieve_error_free`. An empty string
/// if `error` is NULL. Grammar messages start with `line:column: ` when the position is known.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_error_message(error: *const sieve_error) -> *const c_char {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live error handle (caller contract).
        match unsafe { handle_ref(error) } {
            Some(e) => e.message.as_ptr(),
            None => c"".as_ptr(),
        }
    }
}

/// The 1-based line in the grammar (or `tokenizer.json`) text where the error is, or 0 when
/// unknown (and for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_error_line(error: *const sieve_error) -> u32 {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live error handle (caller contract).
        unsafe { handle_ref(error) }.map_or(0, |e| e.line)
    }
}

/// The 1-based column (in characters) of the error, or 0 when unknown (and for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_error_column(error: *const sieve_error) -> u32 {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live error handle (caller contract).
        unsafe { handle_ref(error) }.map_or(0, |e| e.column)
    }
}

/// For an error about a JSON value, its JSON pointer, NUL-terminated, valid until
/// `sieve_error_free`; NULL for other errors: `/properties/a` in a JSON Schema (`#` is its
/// root), `/format/elements/1` in a structural tag (`/` is its root). A `%json` schema
/// inside a Lark grammar gives both this pointer (into the schema) and the line and column
/// (in the grammar).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_error_json_pointer(error: *const sieve_error) -> *const c_char {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live error handle (caller contract).
        unsafe { handle_ref(error) }
            .and_then(|e| e.pointer.as_ref())
            .map_or(core::ptr::null(), |p| p.as_ptr())
    }
}

/// Frees an error. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_error_free(error: *mut sieve_error) {
    ffi_boundary! {
        // SAFETY: 1. NULL or an error handle from this library, freed once (caller contract).
        unsafe { box_free(error) }
    }
}
