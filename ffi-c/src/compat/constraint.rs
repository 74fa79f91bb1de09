//! `LlgConstraint`: LLGuidance's constraint interface (compute mask → sample → commit), used
//! by onnxruntime-genai, Chromium and LiteRT-LM.

use alloc::ffi::CString;
use alloc::sync::Arc;
use core::ffi::c_char;

use sieve_core::{Limits, Matcher};

use super::tokenizer::{CompatTokenizer, LlgTokenizer, tokenizer_of};
use super::{c_message, c_str, compile, guard};
use crate::boundary::{
    Castable, Exclusive, box_free, box_into_handle, handle_mut, handle_ref, write_out,
};
use crate::prelude::*;

/// Opaque constraint handle: one sequence, one thread at a time.
pub struct LlgConstraint {
    _private: [u8; 0],
}

/// LLGuidance's parser budgets, honoured by mapping them onto sieve's [`Limits`].
///
/// The units differ (LLGuidance counts lexemes and its own fuel, sieve bytes and derivative
/// steps), so each field is read *relative to LLGuidance's default*: a field at its
/// LLGuidance default gives sieve's default budget, half of it half of sieve's, ten times it
/// ten times sieve's; 0 means the default. `precompute_large_lexemes` and `verbose_errors`
/// have no sieve counterpart (sieve's slicer is always on; its messages are always full).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LlgParserLimits {
    /// Earley items in one row → `Limits::max_items_per_row`.
    pub max_items_in_row: usize,
    /// Lexer work to build the initial automaton → `Limits::compile_fuel`.
    pub initial_lexer_fuel: u64,
    /// Lexer work per mask → `Limits::fuel_per_mask`.
    pub step_lexer_fuel: u64,
    /// Earley items per mask → `Limits::max_items_per_mask`.
    pub step_max_items: usize,
    /// Lexer states → `Limits::max_lexer_states`.
    pub max_lexer_states: usize,
    /// Grammar symbols → `Limits::max_grammar_size`.
    pub max_grammar_size: usize,
    /// Precompute large lexemes against the token trie (no sieve counterpart).
    pub precompute_large_lexemes: bool,
    /// Verbose error messages (no sieve counterpart).
    pub verbose_errors: bool,
}

impl LlgParserLimits {
    /// LLGuidance's defaults: what `llg_constraint_init_set_defaults` writes.
    pub(crate) const LLG_DEFAULT: LlgParserLimits = LlgParserLimits {
        max_items_in_row: 2000,
        initial_lexer_fuel: 1_000_000,
        step_lexer_fuel: 200_000,
        step_max_items: 50_000,
        max_lexer_states: 250_000,
        max_grammar_size: 500_000,
        precompute_large_lexemes: true,
        verbose_errors: true,
    };

    /// sieve's budgets for these limits: every mapped field scales sieve's default by
    /// `field / LLGuidance default` (0 = the default); the other budgets keep their defaults.
    pub(crate) fn to_sieve(self) -> Limits {
        let d = Limits::default();
        let l = LlgParserLimits::LLG_DEFAULT;
        let size = |host: usize, llg: usize, ours: usize| {
            let scaled = scale(host as u64, llg as u64, ours as u64);
            usize::try_from(scaled).unwrap_or(usize::MAX)
        };
        Limits {
            max_items_per_row: size(
                self.max_items_in_row,
                l.max_items_in_row,
                d.max_items_per_row,
            ),
            compile_fuel: scale(
                self.initial_lexer_fuel,
                l.initial_lexer_fuel,
                d.compile_fuel,
            ),
            fuel_per_mask: scale(self.step_lexer_fuel, l.step_lexer_fuel, d.fuel_per_mask),
            max_items_per_mask: size(self.step_max_items, l.step_max_items, d.max_items_per_mask),
            max_lexer_states: size(
                self.max_lexer_states,
                l.max_lexer_states,
                d.max_lexer_states,
            ),
            max_grammar_size: size(
                self.max_grammar_size,
                l.max_grammar_size,
                d.max_grammar_size,
            ),
            ..d
        }
    }
}

/// `ours * host / llg`, saturating, at least 1; `ours` when `host` is 0.
fn scale(host: u64, llg: u64, ours: u64) -> u64 {
    if host == 0 || llg == 0 {
        return ours;
    }
    let scaled = u128::from(ours) * u128::from(host) / u128::from(llg);
    u64::try_from(scaled).unwrap_or(u64::MAX).max(1)
}

/// Settings for a new constraint or matcher (zero-initialise, then
/// `llg_constraint_init_set_defaults`). No `struct_size`, as in LLGuidance.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LlgConstraintInit {
    /// The tokenizer (not consumed; the constraint keeps what it needs).
    pub tokenizer: *const LlgTokenizer,
    /// Log level kept in the constraint's buffer (0 none, 1 warnings, 2 info).
    pub log_buffer_level: u32,
    /// Log level written to stderr.
    pub log_stderr_level: u32,
    /// `llg_commit_token` may return forced tokens after the sampled one.
    pub ff_tokens_ok: bool,
    /// Backtracking allowed (sieve never asks for it).
    pub backtrack_ok: bool,
    /// Parser budgets.
    pub limits: LlgParserLimits,
}

/// The result of `llg_compute_mask`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LlgMaskResult {
    /// One bit per token (owned by the constraint, valid until its next call); NULL when
    /// `is_stop`.
    pub sample_mask: *const u32,
    /// Sampling temperature requested by the grammar (sieve grammars never set one: 0).
    pub temperature: f32,
    /// The sequence must end now.
    pub is_stop: bool,
}

/// The result of `llg_commit_token`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LlgCommitResult {
    /// Tokens to append to the output (the sampled one, then forced ones when
    /// `ff_tokens_ok`); owned by the constraint, valid until its next call.
    pub tokens: *const u32,
    /// Length of `tokens`.
    pub n_tokens: u32,
    /// The sequence must end now.
    pub is_stop: bool,
}

/// The Rust value behind an `LlgConstraint`.
#[derive(Clone)]
pub(crate) struct Constraint {
    matcher: Option<Matcher>,
    /// Tokenizes forced text (the host's `tokenize_fn` when it gave one).
    tokenizer: Option<Arc<CompatTokenizer>>,
    error: Option<CString>,
    ff_tokens_ok: bool,
    mask: Vec<u32>,
    committed: Vec<u32>,
    /// The last `llg_compute_mask` result was a stop (the grammar can only end). As in
    /// LLGuidance, it stays one: a commit then appends nothing and reports the stop, and a
    /// further `llg_compute_mask` is an error.
    stop: bool,
}

/// LLGuidance's error text for a mask asked for after a stop result; clients match on it
/// (LiteRT-LM's runtime and JavaScript wrappers end the sequence when they see it).
const COMPUTE_AFTER_STOP: &str = "compute_mask() called after stop";

impl Castable for LlgConstraint {
    type Ownership = Exclusive;
    type Rust = Constraint;
}

impl Constraint {
    fn failed(msg: &str) -> Constraint {
        Constraint {
            matcher: None,
            tokenizer: None,
            error: Some(c_message(msg)),
            ff_tokens_ok: false,
            mask: Vec::new(),
            committed: Vec::new(),
            stop: false,
        }
    }

    /// Records the first error (later ones keep the first message, so the pointer handed
    /// out by `llg_get_error` stays valid); returns -1.
    fn fail(&mut self, msg: &str) -> i32 {
        if self.error.is_none() {
            self.error = Some(c_message(msg));
        }
        -1
    }

    /// The live matcher, or `None` in the error state.
    fn live(&mut self) -> Option<&mut Matcher> {
        if self.error.is_some() {
            return None;
        }
        self.matcher.as_mut()
    }

    fn compute_mask(&mut self) -> Result<bool, String> {
        if self.stop && self.error.is_none() {
            return Err(COMPUTE_AFTER_STOP.to_owned());
        }
        let mut mask = core::mem::take(&mut self.mask);
        let tokenizer = self.tokenizer.clone();
        let Some(m) = self.live() else {
            return Err(String::new());
        };
        if m.is_stopped() {
            return Ok(true);
        }
        mask.resize(m.mask_words(), 0);
        let res = super::llg_mask(m, tokenizer.as_deref(), &mut mask);
        let eos = m.grammar().vocab().eos_tokens().to_vec();
        self.mask = mask;
        res?;
        // Only EOS left (or nothing): the grammar can only end here.
        let mut rest = self.mask.clone();
        sieve_kernels::clear_bits(&mut rest, &eos);
        let only_eos = sieve_kernels::popcount(&rest) == 0;
        if only_eos && sieve_kernels::popcount(&self.mask) == 0 {
            return Err("no token is allowed (the grammar is at a dead end)".to_owned());
        }
        Ok(only_eos)
    }

    /// One `llg_compute_mask` step: `Some(is_stop)` with the mask in `self.mask` (stale when
    /// `is_stop`), or `None` after recording the error (sticky).
    fn step(&mut self) -> Option<bool> {
        match self.compute_mask() {
            Ok(stop) => {
                self.stop = stop;
                Some(stop)
            }
            Err(msg) => {
                self.fail(&msg);
                None
            }
        }
    }

    /// One step of `llg_par_compute_mask` into the host's row `dest`: the mask, or only the
    /// primary EOS bit when the grammar can only end; all zero on an error (recorded, sticky).
    /// A row shorter than the vocabulary's mask is an error, a longer one is zero-padded.
    pub(crate) fn fill_mask(&mut self, dest: &mut [u32]) {
        sieve_kernels::fill(dest, 0);
        let Some(need) = self.matcher.as_ref().map(Matcher::mask_words) else {
            self.fail("llg_par_compute_mask: the constraint has no grammar");
            return;
        };
        if dest.len() < need {
            let msg = format!(
                "llg_par_compute_mask: mask_byte_len is {} bytes; the vocabulary needs {}",
                dest.len() * 4,
                need * 4
            );
            self.fail(&msg);
            return;
        }
        match self.step() {
            Some(false) => {
                sieve_kernels::copy_into(&mut dest[..need], &self.mask);
            }
            Some(true) => {
                let eos = self
                    .matcher
                    .as_ref()
                    .and_then(|m| m.grammar().vocab().eos_tokens().first().copied());
                if let Some(eos) = eos {
                    sieve_kernels::set_bit(dest, eos);
                }
            }
            None => {}
        }
    }

    /// What this constraint's next `fill_mask` costs, roughly (batch runners start the
    /// expensive ones first): a copy for a constraint in error, stopped or without a grammar.
    pub(crate) fn cost_hint(&self) -> sieve_core::MaskCost {
        match &self.matcher {
            Some(m) if self.error.is_none() && !self.stop => m.mask_cost_hint(),
            _ => sieve_core::MaskCost::Copy,
        }
    }

    /// Records an error from outside a computation (a bad `llg_par_compute_mask` step).
    pub(crate) fn set_error(&mut self, msg: &str) {
        self.fail(msg);
    }

    /// Commits `token` after a mask: the tokens to append (it, then the forced ones with
    /// `ff_tokens_ok`) and `is_stop` false, as LLGuidance reports a commit even when it ends
    /// the grammar (an EOS); the next mask is then the stop. After a stop result nothing is
    /// consumed: no tokens and `is_stop` true (a serving loop commits every row of a batch
    /// at every step, finished rows included).
    fn commit(&mut self, token: u32) -> Result<bool, String> {
        if self.stop && self.error.is_none() {
            self.committed.clear();
            return Ok(true);
        }
        let ff_ok = self.ff_tokens_ok;
        let tokenizer = self.tokenizer.clone();
        let Some(m) = self.live() else {
            return Err(String::new());
        };
        m.consume_token(token).map_err(|e| e.to_string())?;
        let mut out = vec![token];
        if ff_ok && !m.is_stopped() {
            let ff = super::ff_tokens(m, tokenizer.as_deref())?;
            for t in ff {
                m.consume_token(t).map_err(|e| e.to_string())?;
                out.push(t);
            }
        }
        self.committed = out;
        Ok(false)
    }
}

/// Fills `*init` with defaults: the given tokenizer, no forced tokens, no backtracking,
/// warnings to stderr, LLGuidance's default limit values.
#[unsafe(no_mangle)]
pub extern "C" fn llg_constraint_init_set_defaults(
    init: *mut LlgConstraintInit,
    tokenizer: *const LlgTokenizer,
) {
    guard((), || {
        if init.is_null() {
            return;
        }
        let value = LlgConstraintInit {
            tokenizer,
            log_buffer_level: 0,
            log_stderr_level: 1,
            ff_tokens_ok: false,
            backtrack_ok: false,
            limits: LlgParserLimits::LLG_DEFAULT,
        };
        // SAFETY: 1. non-NULL and writable (caller contract).
        unsafe { write_out(init, value) }
    })
}

/// Builds a constraint; never NULL (an error constraint on failure).
///
/// # Safety
/// `init` is NULL or readable; `kind`/`data` NULL or NUL-terminated.
unsafe fn new_constraint(
    init: *const LlgConstraintInit,
    kind: &str,
    data: *const c_char,
) -> *mut LlgConstraint {
    let c = (|| {
        // SAFETY: 1. NULL or readable (caller contract).
        let init = unsafe { init.as_ref() }.ok_or("init is NULL")?;
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let tokenizer = unsafe { tokenizer_of(init.tokenizer) }.ok_or("init->tokenizer is NULL")?;
        // SAFETY: 1. NULL or NUL-terminated (caller contract).
        let text = unsafe { c_str(data, "grammar text") }?;
        let grammar = compile(&tokenizer.vocab, kind, text, &init.limits.to_sieve())?;
        Ok::<_, String>(Constraint {
            matcher: Some(Matcher::new(&grammar)),
            tokenizer: Some(tokenizer),
            error: None,
            ff_tokens_ok: init.ff_tokens_ok,
            mask: Vec::new(),
            committed: Vec::new(),
            stop: false,
        })
    })();
    let c = c.unwrap_or_else(|msg| {
        // SAFETY: 1. NULL or readable (caller contract).
        if unsafe { init.as_ref() }.is_some_and(|i| i.log_stderr_level >= 1) {
            super::log_stderr(&msg);
        }
        Constraint::failed(&msg)
    });
    box_into_handle::<LlgConstraint>(c)
}

/// A constraint from LLGuidance's JSON grammar list (or Lark text not starting with `{`).
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_constraint(
    init: *const LlgConstraintInit,
    llguidance: *const c_char,
) -> *mut LlgConstraint {
    // SAFETY: 1. forwarded caller contract.
    guard(core::ptr::null_mut(), || unsafe {
        new_constraint(init, "llguidance", llguidance)
    })
}

/// A constraint from a regex the whole output must match.
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_constraint_regex(
    init: *const LlgConstraintInit,
    regex: *const c_char,
) -> *mut LlgConstraint {
    // SAFETY: 1. forwarded caller contract.
    guard(core::ptr::null_mut(), || unsafe {
        new_constraint(init, "regex", regex)
    })
}

/// A constraint from a JSON Schema.
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_constraint_json(
    init: *const LlgConstraintInit,
    json_schema: *const c_char,
) -> *mut LlgConstraint {
    // SAFETY: 1. forwarded caller contract.
    guard(core::ptr::null_mut(), || unsafe {
        new_constraint(init, "json", json_schema)
    })
}

/// A constraint from a Lark grammar.
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_constraint_lark(
    init: *const LlgConstraintInit,
    lark: *const c_char,
) -> *mut LlgConstraint {
    // SAFETY: 1. forwarded caller contract.
    guard(core::ptr::null_mut(), || unsafe {
        new_constraint(init, "lark", lark)
    })
}

/// A constraint with the grammar type given as text (`regex`, `json`, `json_schema`,
/// `json_object`, `lark`, `llguidance`, `guidance`).
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_constraint_any(
    init: *const LlgConstraintInit,
    constraint_type: *const c_char,
    data: *const c_char,
) -> *mut LlgConstraint {
    guard(core::ptr::null_mut(), || {
        // SAFETY: 1. NULL or NUL-terminated (caller contract).
        match unsafe { c_str(constraint_type, "constraint_type") } {
            // SAFETY: 1. forwarded caller contract.
            Ok(kind) => unsafe { new_constraint(init, kind, data) },
            Err(msg) => box_into_handle::<LlgConstraint>(Constraint::failed(&msg)),
        }
    })
}

/// The error message, or NULL. Once non-NULL, the same pointer until the constraint is freed.
#[unsafe(no_mangle)]
pub extern "C" fn llg_get_error(cc: *const LlgConstraint) -> *const c_char {
    guard(core::ptr::null(), || {
        // SAFETY: 1. NULL or a live constraint handle (caller contract).
        unsafe { handle_ref(cc) }
            .and_then(|c| c.error.as_ref())
            .map_or(core::ptr::null(), |e| e.as_ptr())
    })
}

/// The grammar's sampling temperature: always 0 (sieve grammars do not set one).
#[unsafe(no_mangle)]
pub extern "C" fn llg_get_temperature(cc: *const LlgConstraint) -> f32 {
    let _ = cc;
    0.0
}

/// Whether the last `llg_compute_mask` result was a stop, or the constraint is in error (as
/// in LLGuidance: a committed EOS is a stop from the next mask on).
#[unsafe(no_mangle)]
pub extern "C" fn llg_is_stopped(cc: *const LlgConstraint) -> bool {
    guard(true, || {
        // SAFETY: 1. NULL or a live constraint handle (caller contract).
        unsafe { handle_ref(cc) }.is_none_or(|c| c.error.is_some() || c.stop || c.matcher.is_none())
    })
}

/// Computes the next mask. 0 and `*res_p` written on success; -1 on error (see
/// `llg_get_error`). When the grammar can only end, `is_stop` is true and the mask NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_compute_mask(cc: *mut LlgConstraint, res_p: *mut LlgMaskResult) -> i32 {
    guard(-1, || {
        // SAFETY: 1. NULL or a live constraint used by one thread (caller contract).
        let Some(c) = (unsafe { handle_mut(cc) }) else {
            return -1;
        };
        if res_p.is_null() {
            return c.fail("res_p is NULL");
        }
        match c.step() {
            Some(stop) => {
                let res = LlgMaskResult {
                    sample_mask: if stop {
                        core::ptr::null()
                    } else {
                        c.mask.as_ptr()
                    },
                    temperature: 0.0,
                    is_stop: stop,
                };
                // SAFETY: 1. checked non-NULL; writable (caller contract).
                unsafe { write_out(res_p, res) };
                0
            }
            None => -1,
        }
    })
}

/// Commits the sampled token. 0 and `*res_p` written on success (the tokens to append: the
/// sampled one, plus forced ones when `ff_tokens_ok`); -1 on error (see `llg_get_error`).
#[unsafe(no_mangle)]
pub extern "C" fn llg_commit_token(
    cc: *mut LlgConstraint,
    token: u32,
    res_p: *mut LlgCommitResult,
) -> i32 {
    guard(-1, || {
        // SAFETY: 1. NULL or a live constraint used by one thread (caller contract).
        let Some(c) = (unsafe { handle_mut(cc) }) else {
            return -1;
        };
        if res_p.is_null() {
            return c.fail("res_p is NULL");
        }
        match c.commit(token) {
            Ok(stop) => {
                let res = LlgCommitResult {
                    tokens: c.committed.as_ptr(),
                    n_tokens: c.committed.len() as u32,
                    is_stop: stop,
                };
                // SAFETY: 1. checked non-NULL; writable (caller contract).
                unsafe { write_out(res_p, res) };
                0
            }
            Err(msg) => c.fail(&msg),
        }
    })
}

/// An independent copy of the constraint (state and error); NULL for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_clone_constraint(cc: *const LlgConstraint) -> *mut LlgConstraint {
    guard(core::ptr::null_mut(), || {
        // SAFETY: 1. NULL or a live constraint handle (caller contract).
        match unsafe { handle_ref(cc) } {
            Some(c) => box_into_handle::<LlgConstraint>(c.clone()),
            None => core::ptr::null_mut(),
        }
    })
}

/// Frees a constraint. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn llg_free_constraint(cc: *mut LlgConstraint) {
    guard((), || {
        // SAFETY: 1. NULL or a constraint handle freed once (caller contract).
        unsafe { box_free(cc) }
    })
}

/// Logs buffered since the last call: always empty (sieve keeps no log buffer). A static
/// string; never free it.
#[unsafe(no_mangle)]
pub extern "C" fn llg_flush_logs(cc: *mut LlgConstraint) -> *const c_char {
    let _ = cc;
    c"".as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_limits_scale_sieve_defaults() {
        let d = Limits::default();
        assert_eq!(LlgParserLimits::LLG_DEFAULT.to_sieve(), d);
        let zero = LlgParserLimits {
            max_items_in_row: 0,
            initial_lexer_fuel: 0,
            step_lexer_fuel: 0,
            step_max_items: 0,
            max_lexer_states: 0,
            max_grammar_size: 0,
            precompute_large_lexemes: false,
            verbose_errors: false,
        };
        assert_eq!(zero.to_sieve(), d);
        let half = LlgParserLimits {
            step_lexer_fuel: 100_000,
            max_lexer_states: 125_000,
            ..LlgParserLimits::LLG_DEFAULT
        };
        let l = half.to_sieve();
        assert_eq!(l.fuel_per_mask, d.fuel_per_mask / 2);
        assert_eq!(l.max_lexer_states, d.max_lexer_states / 2);
        assert_eq!(l.max_items_per_row, d.max_items_per_row);
        let tiny = LlgParserLimits {
            max_grammar_size: 1,
            initial_lexer_fuel: u64::MAX,
            ..LlgParserLimits::LLG_DEFAULT
        };
        let l = tiny.to_sieve();
        assert_eq!(l.max_grammar_size, 4);
        assert_eq!(l.compile_fuel, u64::MAX);
        assert_eq!(scale(1, 250_000, 50_000), 1);
    }
}
