//! Lazy grammars, triggers and a reasoning phase (`sieve_gate`, see the project's
//! `core/docs/gate.md`), and stop sequences (`sieve_stop_controller`): thin shells over
//! `sieve_core::Gate`, `Matcher::with_gate` and `sieve_core::StopController`.

use alloc::sync::Arc;
use core::ffi::{CStr, c_char};

use sieve_core::gate::{Gate, GateConfig, Reasoning, Triggers};
use sieve_core::{GatePhase, Matcher, StopController, StopError};

use crate::boundary::{
    Castable, Exclusive, Shared, arc_free, arc_into_handle, box_free, box_into_handle,
    ffi_boundary, handle_mut, handle_ref, input_slice, output_slice, read_versioned, write_out,
};
use crate::error::{ErrorInfo, sieve_error};
use crate::grammar::{read_limits, sieve_grammar, sieve_limits};
use crate::matcher::sieve_matcher;
use crate::prelude::*;
use crate::status::sieve_status;
use crate::tokenizer::sieve_tokenizer;

/// `sieve_gate_config.reasoning_budget` value: no budget.
pub const SIEVE_NO_BUDGET: u32 = u32::MAX;

/// What comes before a grammar: an optional reasoning phase, then optional triggers.
///
/// Versioned like `sieve_limits`: start from `SIEVE_GATE_CONFIG_INIT` (`struct_size` set,
/// `reasoning_budget = SIEVE_NO_BUDGET`, everything else zero) and fill the fields you need;
/// arrays may be NULL when their count is 0. Read once by `sieve_gate_new`; the caller keeps ownership of every array.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct sieve_gate_config {
    /// `sizeof(sieve_gate_config)` as the caller knows it.
    pub struct_size: usize,
    /// A reasoning phase from the first token until one of `reasoning_end_tokens`.
    pub reasoning: bool,
    /// Token ids that end the reasoning phase (usually `</think>`).
    pub reasoning_end_tokens: *const u32,
    /// How many `reasoning_end_tokens`.
    pub n_reasoning_end_tokens: usize,
    /// After this many reasoning tokens only the end tokens are allowed (`SIEVE_NO_BUDGET`:
    /// none).
    pub reasoning_budget: u32,
    /// Literal trigger strings (NUL-terminated UTF-8); a string naming a special token also
    /// triggers on that token.
    pub trigger_strings: *const *const c_char,
    /// How many `trigger_strings`.
    pub n_trigger_strings: usize,
    /// Trigger token ids.
    pub trigger_tokens: *const u32,
    /// How many `trigger_tokens`.
    pub n_trigger_tokens: usize,
    /// Trigger regex patterns (NUL-terminated, `regex-syntax` syntax).
    pub trigger_patterns: *const *const c_char,
    /// How many `trigger_patterns`.
    pub n_trigger_patterns: usize,
    /// Whether the grammar waits for a trigger at all (false: it is active from the start,
    /// after the reasoning phase if any; the trigger arrays are then ignored).
    pub lazy: bool,
}

/// A compiled gate, bound to one tokenizer's vocabulary. Immutable and reference counted
/// like `sieve_grammar`: share it between threads and matchers; free with `sieve_gate_free`.
pub struct sieve_gate {
    _private: [u8; 0],
}

impl Castable for sieve_gate {
    type Ownership = Shared;
    type Rust = Gate;
}

/// The phase a gated matcher is in (`sieve_matcher_gate_phase`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum sieve_gate_phase {
    /// The matcher has no gate.
    None = 0,
    /// Reasoning: every token allowed (only the end tokens once the budget is spent).
    Reasoning = 1,
    /// Waiting for a trigger: every token allowed but those completing a trigger the
    /// grammar rejects.
    Waiting = 2,
    /// The grammar constrains.
    Active = 3,
}

/// Reads `n` NUL-terminated UTF-8 strings.
///
/// # Safety
/// `ptr` is NULL (then `n` must be 0) or readable for `n` pointers, each NULL or a
/// NUL-terminated string.
unsafe fn c_strings(ptr: *const *const c_char, n: usize) -> Result<Vec<String>, &'static str> {
    // SAFETY: 1. NULL or readable for `n` pointers (caller contract).
    let Some(items) = (unsafe { input_slice(ptr, n) }) else {
        return Err("a string array is NULL with a non-zero count");
    };
    items
        .iter()
        .map(|&p| {
            if p.is_null() {
                return Err("a string in an array is NULL");
            }
            // SAFETY: 1. non-NULL and NUL-terminated (caller contract).
            let s = unsafe { CStr::from_ptr(p) };
            s.to_str()
                .map(str::to_owned)
                .map_err(|_| "a string is not UTF-8")
        })
        .collect()
}

/// Reads `n` token ids.
///
/// # Safety
/// `ptr` is NULL (then `n` must be 0) or readable for `n` ids.
unsafe fn ids(ptr: *const u32, n: usize) -> Result<Vec<u32>, &'static str> {
    // SAFETY: 1. NULL or readable for `n` ids (caller contract).
    unsafe { input_slice(ptr, n) }
        .map(<[u32]>::to_vec)
        .ok_or("a token array is NULL with a non-zero count")
}

/// Builds a gate for `tokenizer` from `config` within `limits` (NULL: the defaults). On
/// success `*out` receives a handle (free with `sieve_gate_free`). Errors: a regex pattern
/// that does not compile or matches the empty string, an empty trigger string, a token out
/// of range, an empty end-token list with `reasoning` (`SIEVE_STATUS_GRAMMAR_ERROR`, or
/// `_LIMIT_EXCEEDED`, with the message in `*error_out` if non-NULL).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_gate_new(
    tokenizer: *const sieve_tokenizer,
    config: *const sieve_gate_config,
    limits: *const sieve_limits,
    out: *mut *const sieve_gate,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let fail = |status, msg: &str| {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            unsafe { ErrorInfo::new(status, msg).report(error_out) }
        };
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { handle_ref(tokenizer) }) else {
            return fail(sieve_status::NullArgument, "tokenizer is NULL");
        };
        if config.is_null() || out.is_null() {
            return fail(sieve_status::NullArgument, "config or out is NULL");
        }
        let zero = sieve_gate_config {
            struct_size: 0,
            reasoning: false,
            reasoning_end_tokens: core::ptr::null(),
            n_reasoning_end_tokens: 0,
            reasoning_budget: SIEVE_NO_BUDGET,
            trigger_strings: core::ptr::null(),
            n_trigger_strings: 0,
            trigger_tokens: core::ptr::null(),
            n_trigger_tokens: 0,
            trigger_patterns: core::ptr::null(),
            n_trigger_patterns: 0,
            lazy: false,
        };
        // SAFETY: 1. non-NULL, readable for its `struct_size` bytes (caller contract); the
        // pointer fields are only dereferenced below under their own contracts.
        let Some(c) = (unsafe { read_versioned(config, zero) }) else {
            return fail(sieve_status::InvalidArgument, "config->struct_size is too small");
        };
        // SAFETY: 1. NULL or readable for its `struct_size` bytes (caller contract).
        let Some(limits) = (unsafe { read_limits(limits) }) else {
            return fail(sieve_status::InvalidArgument, "limits->struct_size is too small");
        };
        let built = (|| -> Result<GateConfig, &'static str> {
            let reasoning = if c.reasoning {
                Some(Reasoning {
                    // SAFETY: 1. per the struct's contract.
                    end_tokens: unsafe { ids(c.reasoning_end_tokens, c.n_reasoning_end_tokens) }?,
                    budget: (c.reasoning_budget != SIEVE_NO_BUDGET).then_some(c.reasoning_budget),
                })
            } else {
                None
            };
            let triggers = if c.lazy {
                Some(Triggers {
                    // SAFETY: 1. per the struct's contract.
                    strings: unsafe { c_strings(c.trigger_strings, c.n_trigger_strings) }?
                        .into_iter()
                        .map(String::into_bytes)
                        .collect(),
                    // SAFETY: 1. per the struct's contract.
                    tokens: unsafe { ids(c.trigger_tokens, c.n_trigger_tokens) }?,
                    // SAFETY: 1. per the struct's contract.
                    patterns: unsafe { c_strings(c.trigger_patterns, c.n_trigger_patterns) }?,
                })
            } else {
                None
            };
            Ok(GateConfig {
                reasoning,
                triggers,
            })
        })();
        let cfg = match built {
            Ok(cfg) => cfg,
            Err(msg) => return fail(sieve_status::InvalidArgument, msg),
        };
        match Gate::new(&cfg, tok.vocab(), &limits) {
            Ok(gate) => {
                // SAFETY: 1. `out` checked non-NULL.
                unsafe { write_out(out, arc_into_handle(Arc::new(gate))) };
                sieve_status::Ok
            }
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            Err(e) => unsafe { ErrorInfo::grammar(&e).report(error_out) },
        }
    }
}

/// Drops a reference to a gate. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_gate_free(gate: *const sieve_gate) {
    ffi_boundary! {
        // SAFETY: 1. NULL or a gate handle whose reference the caller gives up (contract).
        unsafe { arc_free(gate) }
    }
}

/// Creates a matcher at the start of `grammar` behind `gate` (both made from the same
/// tokenizer handle, else `SIEVE_STATUS_INVALID_ARGUMENT`). Every `sieve_matcher_*` call works on it;
/// `sieve_matcher_is_unconstrained` tells when the mask may be skipped. Free with
/// `sieve_matcher_free`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_new_gated(
    grammar: *const sieve_grammar,
    gate: *const sieve_gate,
    out: *mut *mut sieve_matcher,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or live handles (caller contract).
        let (Some(g), Some(gate)) = (unsafe { handle_ref(grammar) }, unsafe { handle_ref(gate) })
        else {
            return sieve_status::NullArgument;
        };
        if out.is_null() {
            return sieve_status::NullArgument;
        }
        let grammar = g.grammar();
        if !Arc::ptr_eq(grammar.vocab(), gate.vocab()) {
            return sieve_status::InvalidArgument;
        }
        let m = Matcher::with_gate(grammar, gate);
        // SAFETY: 1. `out` checked non-NULL.
        unsafe { write_out(out, box_into_handle(m)) };
        sieve_status::Ok
    }
}

/// Whether every token is allowed now (a gated matcher before its grammar applies, and no
/// token would set off a trigger the grammar rejects): the host may skip computing and
/// applying the mask. O(1). False for a NULL or ungated matcher.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_is_unconstrained(matcher: *const sieve_matcher) -> bool {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }.is_some_and(Matcher::is_unconstrained)
    }
}

/// The gate phase of a matcher, a `sieve_gate_phase` (`SIEVE_GATE_PHASE_NONE` for a NULL or
/// ungated matcher).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_gate_phase(matcher: *const sieve_matcher) -> u32 {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        let phase = unsafe { handle_ref(matcher) }.and_then(Matcher::gate_phase);
        (match phase {
            None => sieve_gate_phase::None,
            Some(GatePhase::Reasoning) => sieve_gate_phase::Reasoning,
            Some(GatePhase::Waiting) => sieve_gate_phase::Waiting,
            Some(_) => sieve_gate_phase::Active,
        }) as u32
    }
}

/// Per-sequence stop detection: stop tokens, stop strings and a stop regex over the decoded
/// text; it says which text is safe to show. Exclusive: one thread at a time. Free with
/// `sieve_stop_controller_free`.
pub struct sieve_stop_controller {
    _private: [u8; 0],
}

impl Castable for sieve_stop_controller {
    type Ownership = Exclusive;
    type Rust = StopController;
}

/// Creates a stop controller for `tokenizer`: the sequence stops when one of `stop_tokens`
/// is committed, or when the decoded text ends with one of `stop_strings` (NUL-terminated
/// UTF-8) or a match of the regex `stop_regex` (NUL-terminated; NULL for none). Arrays may be
/// NULL when their count is 0. `limits` may be NULL. A stop match is never shown.
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_stop_controller_new(
    tokenizer: *const sieve_tokenizer,
    stop_tokens: *const u32,
    n_stop_tokens: usize,
    stop_strings: *const *const c_char,
    n_stop_strings: usize,
    stop_regex: *const c_char,
    limits: *const sieve_limits,
    out: *mut *mut sieve_stop_controller,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let fail = |status, msg: &str| {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            unsafe { ErrorInfo::new(status, msg).report(error_out) }
        };
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { handle_ref(tokenizer) }) else {
            return fail(sieve_status::NullArgument, "tokenizer is NULL");
        };
        if out.is_null() {
            return fail(sieve_status::NullArgument, "out is NULL");
        }
        // SAFETY: 1. NULL or readable for its `struct_size` bytes (caller contract).
        let Some(limits) = (unsafe { read_limits(limits) }) else {
            return fail(sieve_status::InvalidArgument, "limits->struct_size is too small");
        };
        // SAFETY: 1. per this function's contract.
        let tokens = match unsafe { ids(stop_tokens, n_stop_tokens) } {
            Ok(t) => t,
            Err(msg) => return fail(sieve_status::NullArgument, msg),
        };
        // SAFETY: 1. per this function's contract.
        let strings = match unsafe { c_strings(stop_strings, n_stop_strings) } {
            Ok(s) => s,
            Err(msg) => return fail(sieve_status::InvalidArgument, msg),
        };
        let regex = if stop_regex.is_null() {
            None
        } else {
            // SAFETY: 1. non-NULL and NUL-terminated (caller contract).
            match unsafe { CStr::from_ptr(stop_regex) }.to_str() {
                Ok(r) => Some(r.to_owned()),
                Err(_) => return fail(sieve_status::InvalidUtf8, "stop_regex is not UTF-8"),
            }
        };
        let strings: Vec<&[u8]> = strings.iter().map(|s| s.as_bytes()).collect();
        match StopController::with_strings(
            tok.vocab().clone(),
            &tokens,
            &strings,
            regex.as_deref(),
            &limits,
        ) {
            Ok(c) => {
                // SAFETY: 1. `out` checked non-NULL.
                unsafe { write_out(out, box_into_handle(c)) };
                sieve_status::Ok
            }
            Err(e) => {
                let status = match &e {
                    StopError::TokenOutOfRange { .. } => sieve_status::TokenOutOfRange,
                    StopError::Regex(g) => sieve_status::from_grammar(&g.kind),
                    _ => sieve_status::InvalidArgument,
                };
                fail(status, &e.to_string())
            }
        }
    }
}

/// Commits `token`: copies the bytes now safe to show into `buf` (capacity `cap`; `*len`
/// receives their count) and sets `*stopped`. If `cap` is too small, returns
/// `SIEVE_STATUS_INSUFFICIENT_SIZE` with `*len` set and the token *committed* (the text is
/// lost): size `buf` for the longest token plus `1024` bytes of held-back text.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_stop_controller_commit_token(
    controller: *mut sieve_stop_controller,
    token: u32,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
    stopped: *mut bool,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live controller used by one thread at a time (contract).
        let Some(c) = (unsafe { handle_mut(controller) }) else {
            return sieve_status::NullArgument;
        };
        // SAFETY: 1. NULL or writable for `cap` bytes (caller contract).
        let Some(buf) = (unsafe { output_slice(buf, cap) }) else {
            return sieve_status::NullArgument;
        };
        if len.is_null() || stopped.is_null() {
            return sieve_status::NullArgument;
        }
        let (text, stop) = c.commit_token(token);
        // SAFETY: 1. `len` and `stopped` checked non-NULL.
        unsafe {
            write_out(len, text.len());
            write_out(stopped, stop);
        }
        let Some(dst) = buf.get_mut(..text.len()) else {
            return sieve_status::InsufficientSize;
        };
        dst.copy_from_slice(text);
        sieve_status::Ok
    }
}

/// Whether the sequence has stopped (false for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_stop_controller_is_stopped(
    controller: *const sieve_stop_controller,
) -> bool {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live controller handle (caller contract).
        unsafe { handle_ref(controller) }.is_some_and(StopController::is_stopped)
    }
}

/// Frees a stop controller. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_stop_controller_free(controller: *mut sieve_stop_controller) {
    ffi_boundary! {
        // SAFETY: 1. NULL or a controller handle not in use elsewhere, freed once (contract).
        unsafe { box_free(controller) }
    }
}
