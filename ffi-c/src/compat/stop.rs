//! `LlgStopController`: LLGuidance's stop-sequence detector, as a C handle around
//! [`sieve_core::StopController`] (the algorithm, its bounds and its tests live in
//! `core/src/stop.rs`). This file only converts: C arguments in, the core's text out as a
//! NUL-terminated UTF-8 buffer owned by the handle (invalid UTF-8 replaced by U+FFFD), errors
//! as messages in the caller's buffer.

use core::ffi::c_char;

use sieve_core::{Limits, StopError};

use super::tokenizer::{LlgTokenizer, vocab_of};
use super::{c_str, guard, write_message};
use crate::boundary::{
    Castable, Exclusive, box_free, box_into_handle, handle_mut, handle_ref, input_slice, write_out,
};
use crate::prelude::*;

/// Opaque stop-controller handle: one sequence, one thread at a time.
pub struct LlgStopController {
    _private: [u8; 0],
}

/// The Rust value behind an `LlgStopController`.
#[derive(Clone)]
pub(crate) struct StopController {
    inner: sieve_core::StopController,
    /// The text the last commit returned, NUL-terminated (`llg_stop_commit_token`'s result).
    last: Vec<u8>,
}

impl Castable for LlgStopController {
    type Ownership = Exclusive;
    type Rust = StopController;
}

/// The message `llg_new_stop_controller` writes: errors about the regex name the parameter.
fn error_message(e: &StopError) -> String {
    match e {
        StopError::TokenOutOfRange { .. } => e.to_string(),
        _ => format!("stop_rx: {e}"),
    }
}

/// Creates a stop controller for `tokenizer`: the sequence stops when one of `stop_tokens`
/// (`stop_tokens_len` ids; NULL if 0) is committed, or when the text ends with a match of the
/// regex `stop_rx` (NUL-terminated; NULL or `""` for none; a regex matching the empty string
/// is an error). NULL on failure, with the message in `error_string` (NUL-terminated,
/// truncated to `error_string_len`). Free with `llg_free_stop_controller`.
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_stop_controller(
    tokenizer: *const LlgTokenizer,
    stop_tokens: *const u32,
    stop_tokens_len: usize,
    stop_rx: *const c_char,
    error_string: *mut c_char,
    error_string_len: usize,
) -> *mut LlgStopController {
    guard(core::ptr::null_mut(), || {
        let built = (|| {
            // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
            let vocab = unsafe { vocab_of(tokenizer) }.ok_or("tokenizer is NULL")?;
            // SAFETY: 1. NULL or readable for `stop_tokens_len` ids (caller contract).
            let stops = unsafe { input_slice(stop_tokens, stop_tokens_len) }
                .ok_or("stop_tokens is NULL with stop_tokens_len > 0")?;
            let rx = if stop_rx.is_null() {
                None
            } else {
                // SAFETY: 1. non-NULL and NUL-terminated (caller contract).
                Some(unsafe { c_str(stop_rx, "stop_rx") }?).filter(|r| !r.is_empty())
            };
            sieve_core::StopController::new(vocab, stops, rx, &Limits::default())
                .map(|inner| StopController {
                    inner,
                    last: vec![0],
                })
                .map_err(|e| error_message(&e))
        })();
        match built {
            Ok(c) => box_into_handle::<LlgStopController>(c),
            Err(msg) => {
                // SAFETY: 1. NULL or writable for `error_string_len` bytes (caller contract).
                unsafe { write_message(error_string, error_string_len, &msg) };
                core::ptr::null_mut()
            }
        }
    })
}

/// Commits `token`. Returns the text now safe to show (UTF-8, NUL-terminated, possibly empty;
/// owned by the controller, valid until its next call or free), with its length in
/// `*output_len_p` (interior NUL bytes are possible), and sets `*is_stopped_p` when the
/// sequence must end. Invalid UTF-8 in tokens is replaced by U+FFFD. After a stop, every
/// commit returns `""`. NULL (and nothing changed or written) if any pointer is NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_stop_commit_token(
    stop_ctrl: *mut LlgStopController,
    token: u32,
    output_len_p: *mut usize,
    is_stopped_p: *mut bool,
) -> *const c_char {
    guard(core::ptr::null(), || {
        if output_len_p.is_null() || is_stopped_p.is_null() {
            return core::ptr::null();
        }
        // SAFETY: 1. NULL or a live controller used by one thread (caller contract).
        let Some(c) = (unsafe { handle_mut(stop_ctrl) }) else {
            return core::ptr::null();
        };
        let (bytes, stopped) = c.inner.commit_token(token);
        c.last.clear();
        c.last
            .extend_from_slice(String::from_utf8_lossy(bytes).as_bytes());
        let len = c.last.len();
        c.last.push(0);
        // SAFETY: 1. both outputs checked non-NULL; writable (caller contract).
        unsafe {
            write_out(output_len_p, len);
            write_out(is_stopped_p, stopped);
        }
        c.last.as_ptr().cast()
    })
}

/// An independent copy of the controller (pending text, regex state, stop flag); NULL for
/// NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_clone_stop_controller(
    stop_ctrl: *const LlgStopController,
) -> *mut LlgStopController {
    guard(core::ptr::null_mut(), || {
        // SAFETY: 1. NULL or a live controller handle (caller contract).
        match unsafe { handle_ref(stop_ctrl) } {
            Some(c) => box_into_handle::<LlgStopController>(c.clone()),
            None => core::ptr::null_mut(),
        }
    })
}

/// Frees a stop controller. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn llg_free_stop_controller(stop_ctrl: *mut LlgStopController) {
    guard((), || {
        // SAFETY: 1. NULL or a controller handle freed once (caller contract).
        unsafe { box_free(stop_ctrl) }
    })
}
