//! `LlgMatcher`: LLGuidance's matcher interface (used by llama.cpp's llguidance sampler).

use alloc::ffi::CString;
use alloc::sync::Arc;
use core::ffi::c_char;

use sieve_core::Matcher;

use super::constraint::LlgConstraintInit;
use super::tokenizer::{CompatTokenizer, tokenizer_of};
use super::{c_message, c_str, compile, guard};
use crate::boundary::{
    Castable, Exclusive, box_free, box_into_handle, handle_mut, handle_ref, input_slice,
    output_slice,
};
use crate::prelude::*;

/// Opaque matcher handle: one sequence, one thread at a time.
pub struct LlgMatcher {
    _private: [u8; 0],
}

/// The Rust value behind an `LlgMatcher`.
pub(crate) struct CompatMatcher {
    matcher: Option<Matcher>,
    /// Tokenizes forced text (the host's `tokenize_fn` when it gave one).
    tokenizer: Option<Arc<CompatTokenizer>>,
    error: Option<CString>,
    /// Words of a mask (known even for a grammar that failed, if the tokenizer was given).
    mask_words: usize,
    mask: Vec<u32>,
    mask_valid: bool,
}

impl Castable for LlgMatcher {
    type Ownership = Exclusive;
    type Rust = CompatMatcher;
}

impl Clone for CompatMatcher {
    /// A copy has no mask yet (`llg_matcher_get_mask` is NULL until it computes one), as
    /// in LLGuidance.
    fn clone(&self) -> Self {
        CompatMatcher {
            matcher: self.matcher.clone(),
            tokenizer: self.tokenizer.clone(),
            error: self.error.clone(),
            mask_words: self.mask_words,
            mask: Vec::new(),
            mask_valid: false,
        }
    }
}

impl CompatMatcher {
    /// Forgets the computed mask: every call that moves the matcher (consume, rollback,
    /// reset) and `llg_matcher_compute_mask` itself (until it succeeds) make
    /// `llg_matcher_get_mask` return NULL. llama.cpp's sampler relies on it: it calls
    /// `llg_matcher_get_mask` first and computes only on NULL, so a stale mask would be
    /// applied at every later step.
    fn clear_mask(&mut self) {
        self.mask_valid = false;
    }

    /// Records the first error (its pointer stays valid until free); returns -1.
    fn fail(&mut self, msg: &str) -> i32 {
        if self.error.is_none() {
            self.error = Some(c_message(msg));
        }
        -1
    }

    /// Runs `f` on the live matcher; an error from it becomes sticky. -1 in the error state.
    fn with<T>(&mut self, f: impl FnOnce(&mut Matcher) -> Result<T, String>) -> Result<T, i32> {
        if self.error.is_some() {
            return Err(-1);
        }
        let Some(m) = self.matcher.as_mut() else {
            return Err(self.fail("matcher has no grammar"));
        };
        f(m).map_err(|msg| self.fail(&msg))
    }
}

/// Borrows the matcher, or returns `$fallback` from the exported function for NULL.
macro_rules! compat_matcher {
    ($m:expr, $fallback:expr) => {
        // SAFETY: 1. NULL or a live matcher handle used by one thread (caller contract).
        match unsafe { handle_mut($m) } {
            Some(m) => m,
            None => return $fallback,
        }
    };
}

/// A matcher for grammar `data` of type `constraint_type` (`regex`, `json`, `json_schema`,
/// `json_object`, `lark`, `llguidance`, `guidance`). Never NULL: check
/// `llg_matcher_get_error`. `ff_tokens_ok` and `backtrack_ok` are ignored; `limits` apply (see
/// `LlgParserLimits`).
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_matcher(
    init: *const LlgConstraintInit,
    constraint_type: *const c_char,
    data: *const c_char,
) -> *mut LlgMatcher {
    guard(core::ptr::null_mut(), || {
        let mut mask_words = 0;
        let mut tokenizer = None;
        let built = (|| {
            // SAFETY: 1. NULL or readable (caller contract).
            let init = unsafe { init.as_ref() }.ok_or("init is NULL")?;
            // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
            let tok = unsafe { tokenizer_of(init.tokenizer) }.ok_or("init->tokenizer is NULL")?;
            let vocab = tok.vocab.clone();
            tokenizer = Some(tok);
            mask_words = vocab.mask_words();
            // SAFETY: 1. NULL or NUL-terminated (caller contract).
            let kind = unsafe { c_str(constraint_type, "constraint_type") }?;
            // SAFETY: 1. NULL or NUL-terminated (caller contract).
            let text = unsafe { c_str(data, "grammar text") }?;
            Ok::<_, String>(Matcher::new(&compile(
                &vocab,
                kind,
                text,
                &init.limits.to_sieve(),
            )?))
        })();
        let (matcher, error) = match built {
            Ok(m) => (Some(m), None),
            Err(msg) => {
                // SAFETY: 1. NULL or readable (caller contract).
                if unsafe { init.as_ref() }.is_some_and(|i| i.log_stderr_level >= 1) {
                    super::log_stderr(&msg);
                }
                (None, Some(c_message(&msg)))
            }
        };
        box_into_handle::<LlgMatcher>(CompatMatcher {
            matcher,
            tokenizer,
            error,
            mask_words,
            mask: Vec::new(),
            mask_valid: false,
        })
    })
}

/// Checks a grammar: 0 valid, -1 error (message written to `message`, NUL-terminated and
/// truncated to `message_len`). sieve reports no warnings, so never 1.
#[unsafe(no_mangle)]
pub extern "C" fn llg_validate_grammar(
    init: *const LlgConstraintInit,
    constraint_type: *const c_char,
    data: *const c_char,
    message: *mut c_char,
    message_len: usize,
) -> i32 {
    guard(-1, || {
        // The message goes to the caller's buffer, not to stderr.
        // SAFETY: 1. NULL or readable (caller contract).
        let quiet = unsafe { init.as_ref() }.map(|i| LlgConstraintInit {
            log_stderr_level: 0,
            ..*i
        });
        let init = quiet.as_ref().map_or(core::ptr::null(), |i| i as *const _);
        let m = llg_new_matcher(init, constraint_type, data);
        // SAFETY: 1. `m` was just made by llg_new_matcher (or is NULL after a panic).
        let err = unsafe { handle_ref(m) }.map_or(Some("internal error".to_owned()), |c| {
            c.error.as_ref().map(|e| e.to_string_lossy().into_owned())
        });
        llg_free_matcher(m);
        // SAFETY: 1. NULL or writable for `message_len` bytes (caller contract).
        unsafe { super::write_message(message, message_len, err.as_deref().unwrap_or("")) };
        if err.is_some() { -1 } else { 0 }
    })
}

/// Computes the mask into the matcher's buffer (fetch it with `llg_matcher_get_mask`).
/// 0 on success, -1 on error. A stopped matcher gives an EOS-only mask.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_compute_mask(matcher: *mut LlgMatcher) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        c.clear_mask();
        let mut mask = core::mem::take(&mut c.mask);
        mask.resize(c.mask_words, 0);
        let tokenizer = c.tokenizer.clone();
        let res = c.with(|m| super::llg_mask(m, tokenizer.as_deref(), &mut mask));
        c.mask = mask;
        c.mask_valid = res.is_ok();
        res.map_or_else(|e| e, |()| 0)
    })
}

/// Computes the mask into a caller buffer of exactly `llg_matcher_get_mask_byte_size`
/// bytes. 0 on success, -1 on error (a wrong size is an error).
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_compute_mask_into(
    matcher: *mut LlgMatcher,
    mask_dest: *mut u32,
    mask_byte_len: usize,
) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        if mask_byte_len != c.mask_words * 4 {
            return c.fail(&format!(
                "mask_byte_len is {mask_byte_len}, expected {}",
                c.mask_words * 4
            ));
        }
        // SAFETY: 1. NULL or writable for `mask_byte_len` bytes (caller contract).
        let Some(dst) = (unsafe { output_slice(mask_dest, c.mask_words) }) else {
            return c.fail("mask_dest is NULL");
        };
        let tokenizer = c.tokenizer.clone();
        c.with(|m| super::llg_mask(m, tokenizer.as_deref(), dst))
            .map_or_else(|e| e, |()| 0)
    })
}

/// The mask computed by the last successful `llg_matcher_compute_mask` (owned by the
/// matcher, valid until its next call), or NULL if none, or if the matcher consumed,
/// rolled back or was reset since (as in LLGuidance; `llg_matcher_compute_mask_into`
/// leaves it as it is).
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_get_mask(matcher: *mut LlgMatcher) -> *const u32 {
    guard(core::ptr::null(), || {
        let c = compat_matcher!(matcher, core::ptr::null());
        if c.mask_valid {
            c.mask.as_ptr()
        } else {
            core::ptr::null()
        }
    })
}

/// Bytes of a mask: `ceil(vocab_size / 32) * 4`; 0 for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_get_mask_byte_size(matcher: *const LlgMatcher) -> usize {
    guard(0, || {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }.map_or(0, |c| c.mask_words * 4)
    })
}

/// Consumes one token. 0 on success, -1 on error (the error is sticky).
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_consume_token(matcher: *mut LlgMatcher, token: u32) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        c.clear_mask();
        c.with(|m| m.consume_token(token).map_err(|e| e.to_string()))
            .map_or_else(|e| e, |()| 0)
    })
}

/// Consumes `n_tokens` tokens. 0 on success, -1 on error (the error is sticky).
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_consume_tokens(
    matcher: *mut LlgMatcher,
    tokens: *const u32,
    n_tokens: usize,
) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        c.clear_mask();
        // SAFETY: 1. NULL or readable for `n_tokens` ids (caller contract).
        let Some(tokens) = (unsafe { input_slice(tokens, n_tokens) }) else {
            return c.fail("tokens is NULL with n_tokens > 0");
        };
        c.with(|m| m.consume_tokens(tokens).map_err(|e| e.to_string()))
            .map_or_else(|e| e, |()| 0)
    })
}

/// The error message or NULL; once non-NULL, the same pointer until the matcher is freed.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_get_error(matcher: *mut LlgMatcher) -> *const c_char {
    guard(core::ptr::null(), || {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }
            .and_then(|c| c.error.as_ref())
            .map_or(core::ptr::null(), |e| e.as_ptr())
    })
}

/// Whether the matcher is in the error state (true for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_is_error(matcher: *const LlgMatcher) -> bool {
    guard(true, || {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }.is_none_or(|c| c.error.is_some())
    })
}

/// Frees a matcher. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn llg_free_matcher(matcher: *mut LlgMatcher) {
    guard((), || {
        // SAFETY: 1. NULL or a matcher handle freed once (caller contract).
        unsafe { box_free(matcher) }
    })
}

/// Undoes the last `num_tokens` tokens. 0 on success, -1 on error (sticky, as in
/// LLGuidance: rolling back further than consumed puts the matcher in error).
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_rollback(matcher: *mut LlgMatcher, num_tokens: usize) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        c.clear_mask();
        c.with(|m| m.rollback(num_tokens).map_err(|e| e.to_string()))
            .map_or_else(|e| e, |()| 0)
    })
}

/// Back to the start of the grammar. A matcher in error cannot be reset: -1.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_reset(matcher: *mut LlgMatcher) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        c.clear_mask();
        c.with(|m| {
            m.reset();
            Ok(())
        })
        .map_or_else(|e| e, |()| 0)
    })
}

/// Whether the output so far is complete (EOS allowed); false in error or for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_is_accepting(matcher: *mut LlgMatcher) -> bool {
    guard(false, || {
        let c = compat_matcher!(matcher, false);
        c.with(|m| Ok(m.is_accepting())).unwrap_or(false)
    })
}

/// Whether only EOS can follow: an EOS was consumed, or the matcher is in error (a forced
/// stop); true for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_is_stopped(matcher: *const LlgMatcher) -> bool {
    guard(true, || {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }
            .is_none_or(|c| c.error.is_some() || c.matcher.as_ref().is_none_or(Matcher::is_stopped))
    })
}

/// How many leading tokens of `tokens` would be accepted (state unchanged); -1 on error.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_validate_tokens(
    matcher: *mut LlgMatcher,
    tokens: *const u32,
    n_tokens: usize,
) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        // SAFETY: 1. NULL or readable for `n_tokens` ids (caller contract).
        let Some(tokens) = (unsafe { input_slice(tokens, n_tokens) }) else {
            return c.fail("tokens is NULL with n_tokens > 0");
        };
        c.with(|m| m.validate_tokens(tokens).map_err(|e| e.to_string()))
            .map_or_else(|e| e, |n| i32::try_from(n).unwrap_or(i32::MAX))
    })
}

/// Writes the forced tokens (at most `output_len`) to `output`; returns how many were
/// written, or -1 on error. Nothing is consumed.
#[unsafe(no_mangle)]
pub extern "C" fn llg_matcher_compute_ff_tokens(
    matcher: *mut LlgMatcher,
    output: *mut u32,
    output_len: usize,
) -> i32 {
    guard(-1, || {
        let c = compat_matcher!(matcher, -1);
        // SAFETY: 1. NULL or writable for `output_len` ids (caller contract).
        let Some(out) = (unsafe { output_slice(output, output_len) }) else {
            return c.fail("output is NULL with output_len > 0");
        };
        let tokenizer = c.tokenizer.clone();
        c.with(|m| super::ff_tokens(m, tokenizer.as_deref()))
            .map_or_else(
                |e| e,
                |ff| {
                    let n = ff.len().min(out.len());
                    out[..n].copy_from_slice(&ff[..n]);
                    i32::try_from(n).unwrap_or(i32::MAX)
                },
            )
    })
}

/// An independent copy of the matcher (state and error); NULL for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_clone_matcher(matcher: *const LlgMatcher) -> *mut LlgMatcher {
    guard(core::ptr::null_mut(), || {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        match unsafe { handle_ref(matcher) } {
            Some(c) => box_into_handle::<LlgMatcher>(c.clone()),
            None => core::ptr::null_mut(),
        }
    })
}
