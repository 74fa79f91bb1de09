//! The properties of fuzz targets `c_abi` and `tokenizer_json` (C half), shared by the fuzz
//! crate and `tests/tests/fuzz_regressions.rs` (both include this file by path; it needs
//! `sieve_core` and `sieve-ffi-c`, whose library is named `sieve`).
//!
//! `c_abi` drives the C entry points of `sieve.h` and the `llg_*` layer of
//! `llguidance_compat.h` with arbitrary grammar text, token ids, buffer sizes and NULLs where
//! the ABI allows them, differentially: the same grammar compiled by the core directly gives
//! the reference matcher, and every status, mask and count must agree with it. No call may
//! return `SIEVE_STATUS_PANIC`.

use std::ffi::{CString, c_char, c_void};
use std::ptr;
use std::sync::{Arc, OnceLock};

use sieve::error::{sieve_error, sieve_error_free, sieve_error_status};
use sieve::grammar::sieve_limits_default;
use sieve::grammar::{sieve_grammar, sieve_grammar_free, sieve_grammar_new, sieve_limits};
use sieve::matcher::{
    sieve_matcher, sieve_matcher_clone, sieve_matcher_compute_ff_tokens,
    sieve_matcher_compute_mask, sieve_matcher_consume_token, sieve_matcher_error_status,
    sieve_matcher_free, sieve_matcher_is_accepting, sieve_matcher_is_allowed,
    sieve_matcher_mask_words, sieve_matcher_new, sieve_matcher_rollback,
    sieve_matcher_validate_tokens,
};
use sieve::sieve_status;
use sieve::tokenizer::{sieve_tokenizer, sieve_tokenizer_free, sieve_tokenizer_from_json};
use sieve::tokenizer::{sieve_tokenizer_new, sieve_tokenizer_vocab_size};
use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, Limits, Matcher, MatcherError, Vocabulary};

/// `llguidance_compat.h`'s structs (the compat module is private to the crate).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LlgParserLimits {
    max_items_in_row: usize,
    initial_lexer_fuel: u64,
    step_lexer_fuel: u64,
    step_max_items: usize,
    max_lexer_states: usize,
    max_grammar_size: usize,
    precompute_large_lexemes: bool,
    verbose_errors: bool,
}

/// `LlgConstraintInit`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LlgConstraintInit {
    tokenizer: *const c_void,
    log_buffer_level: u32,
    log_stderr_level: u32,
    ff_tokens_ok: bool,
    backtrack_ok: bool,
    limits: LlgParserLimits,
}

/// `LlgTokenizerInit`.
#[repr(C)]
pub struct LlgTokenizerInit {
    vocab_size: u32,
    tok_eos: u32,
    token_lens: *const u32,
    token_bytes: *const u8,
    tokenizer_json: *const c_char,
    tokenize_assumes_string: bool,
    tokenize_fn: *const c_void,
    use_approximate_greedy_tokenize_fn: bool,
    tokenize_user_data: *const c_void,
    slices: *const *const c_char,
}

unsafe extern "C" {
    fn llg_new_tokenizer(
        init: *const LlgTokenizerInit,
        error_string: *mut c_char,
        error_string_len: usize,
    ) -> *mut c_void;
    fn llg_free_tokenizer(tok: *mut c_void);
    fn llg_constraint_init_set_defaults(init: *mut LlgConstraintInit, tok: *const c_void);
    fn llg_new_matcher(
        init: *const LlgConstraintInit,
        constraint_type: *const c_char,
        data: *const c_char,
    ) -> *mut c_void;
    fn llg_matcher_is_error(m: *const c_void) -> bool;
    fn llg_matcher_get_error(m: *mut c_void) -> *const c_char;
    fn llg_matcher_compute_mask_into(m: *mut c_void, dst: *mut u32, byte_len: usize) -> i32;
    fn llg_matcher_consume_token(m: *mut c_void, token: u32) -> i32;
    fn llg_matcher_rollback(m: *mut c_void, n: usize) -> i32;
    fn llg_matcher_is_accepting(m: *mut c_void) -> bool;
    fn llg_matcher_validate_tokens(m: *mut c_void, tokens: *const u32, n: usize) -> i32;
    fn llg_free_matcher(m: *mut c_void);
}

/// The fuzzers' vocabulary (the same synthetic one as `sieve_tests::fuzzprops::vocab`).
fn vocab() -> Arc<Vocabulary> {
    static VOCAB: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    VOCAB
        .get_or_init(|| Arc::new(Vocabulary::synthetic(300, 7)))
        .clone()
}

/// The vocabulary as a byte table: concatenated bytes (specials with their `0xFF` marker),
/// lengths, special flags.
fn table(v: &Vocabulary) -> (Vec<u8>, Vec<u32>, Vec<u8>) {
    let (mut bytes, mut lens, mut flags) = (Vec::new(), Vec::new(), Vec::new());
    for t in 0..v.vocab_size() as u32 {
        let b = v.trie_bytes(t);
        bytes.extend_from_slice(b);
        lens.push(b.len() as u32);
        flags.push(u8::from(v.is_special(t)));
    }
    (bytes, lens, flags)
}

fn status_of(e: &MatcherError) -> sieve_status {
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

/// The reference status of a core call: the sticky error shows as `MatcherError`.
fn want_status<T>(before_err: bool, r: &Result<T, MatcherError>) -> sieve_status {
    match r {
        _ if before_err => sieve_status::MatcherError,
        Ok(_) => sieve_status::Ok,
        Err(e) => status_of(e),
    }
}

fn bit(mask: &[u32], t: usize) -> bool {
    mask.get(t / 32).is_some_and(|w| w >> (t % 32) & 1 == 1)
}

/// Frees the handles on every exit.
struct Handles {
    tok: *const sieve_tokenizer,
    grammar: *const sieve_grammar,
    matcher: *mut sieve_matcher,
    llg_tok: *mut c_void,
    llg: *mut c_void,
}

impl Drop for Handles {
    fn drop(&mut self) {
        sieve_matcher_free(self.matcher);
        sieve_grammar_free(self.grammar);
        sieve_tokenizer_free(self.tok);
        // SAFETY: 1. NULL or handles made by llg_new_matcher / llg_new_tokenizer, freed once.
        unsafe {
            if !self.llg.is_null() {
                llg_free_matcher(self.llg);
            }
            if !self.llg_tok.is_null() {
                llg_free_tokenizer(self.llg_tok);
            }
        }
    }
}

fn next(ops: &mut &[u8]) -> u8 {
    let (&b, rest) = ops.split_first().unwrap_or((&0, &[]));
    *ops = rest;
    b
}

fn ok_or(what: &str, got: sieve_status, want: sieve_status) -> Result<(), String> {
    if got == sieve_status::Panic {
        return Err(format!("{what}: SIEVE_STATUS_PANIC"));
    }
    if got != want {
        return Err(format!("{what}: status {got:?}, the core says {want:?}"));
    }
    Ok(())
}

/// Target `c_abi`. Input: byte 0 = flags (bits 0-1 grammar kind: Lark, regex, JSON Schema;
/// bit 2: NULL limits, else `sieve_limits_default`; bit 3: NULL `error_out`; bit 4: also run
/// the `llg_*` matcher), bytes 1-2 = text length (little endian), the text, then operations.
pub fn check_c_abi(data: &[u8]) -> Result<(), String> {
    let mut ops = data;
    let flags = next(&mut ops);
    let len = usize::from(next(&mut ops)) | usize::from(next(&mut ops)) << 8;
    let len = len.min(ops.len());
    let (text, rest) = ops.split_at(len);
    ops = rest;
    let kind = u32::from(flags & 3) % 3 + 1;
    let v = vocab();
    let n = v.vocab_size();
    let (bytes, lens, special) = table(&v);
    let eos = v.eos_tokens().to_vec();
    let mut h = Handles {
        tok: ptr::null(),
        grammar: ptr::null(),
        matcher: ptr::null_mut(),
        llg_tok: ptr::null_mut(),
        llg: ptr::null_mut(),
    };
    let st = sieve_tokenizer_new(
        bytes.as_ptr(),
        bytes.len(),
        lens.as_ptr(),
        lens.len(),
        special.as_ptr(),
        eos.as_ptr(),
        eos.len(),
        None,
        ptr::null_mut(),
        &mut h.tok,
        ptr::null_mut(),
    );
    ok_or("sieve_tokenizer_new", st, sieve_status::Ok)?;
    if sieve_tokenizer_vocab_size(h.tok) != n {
        return Err("sieve_tokenizer_vocab_size differs from the vocabulary".into());
    }
    // The reference: the core on the same text.
    let reference = match std::str::from_utf8(text) {
        Err(_) => Err(sieve_status::InvalidUtf8),
        Ok(src) => {
            let l = Limits::default();
            match kind {
                1 => Grammar::from_lark(src, &v, &l),
                2 => Grammar::from_regex(src, &v, &l),
                _ => Grammar::from_json_schema_str(src, &JsonOptions::default(), &v, &l)
                    .map(|(g, _)| g),
            }
            .map_err(|e| match e.kind {
                sieve_core::GrammarErrorKind::Limit(_) => sieve_status::LimitExceeded,
                _ => sieve_status::GrammarError,
            })
        }
    };
    let mut limits = sieve_limits {
        struct_size: size_of::<sieve_limits>(),
        max_lexer_states: 0,
        max_expr_nodes: 0,
        fuel_per_mask: 0,
        compile_fuel: 0,
        max_items_per_row: 0,
        max_items_per_mask: 0,
        max_grammar_size: 0,
        max_nesting_depth: 0,
        max_repeat: 0,
        max_memory_bytes: 0,
    };
    ok_or(
        "sieve_limits_default",
        sieve_limits_default(&mut limits),
        sieve_status::Ok,
    )?;
    let limits_ptr: *const sieve_limits = if flags & 4 != 0 { ptr::null() } else { &limits };
    let mut err: *mut sieve_error = ptr::null_mut();
    let err_out: *mut *mut sieve_error = if flags & 8 != 0 {
        ptr::null_mut()
    } else {
        &mut err
    };
    let st = sieve_grammar_new(
        h.tok,
        kind,
        text.as_ptr(),
        text.len(),
        limits_ptr,
        &mut h.grammar,
        err_out,
    );
    if st == sieve_status::Panic {
        return Err("sieve_grammar_new: SIEVE_STATUS_PANIC".into());
    }
    if !err.is_null() {
        let es = sieve_error_status(err);
        sieve_error_free(err);
        if es != st {
            return Err(format!(
                "sieve_error_status {es:?} but the call gave {st:?}"
            ));
        }
    }
    let g = match (reference, st) {
        (Ok(g), sieve_status::Ok) => g,
        (Err(want), got) if got == want => return Ok(()),
        // The core compiles the text but the C ABI's error status differs (or vice versa).
        (r, got) => {
            return Err(format!(
                "sieve_grammar_new gave {got:?}, the core gave {:?}",
                r.map(|_| "Ok")
            ));
        }
    };
    ok_or(
        "sieve_matcher_new",
        sieve_matcher_new(h.grammar, &mut h.matcher),
        sieve_status::Ok,
    )?;
    let words = sieve_matcher_mask_words(h.matcher);
    if words != v.mask_words() {
        return Err(format!("mask_words {words}, want {}", v.mask_words()));
    }
    if flags & 16 != 0 {
        let cname = ["lark", "regex", "json"][kind as usize - 1];
        // The llg layer takes NUL-terminated text: run it only when the text has no NUL.
        if let (Ok(ctext), Ok(ctype)) = (CString::new(text), CString::new(cname)) {
            let init = LlgTokenizerInit {
                vocab_size: n as u32,
                tok_eos: eos.first().copied().unwrap_or(0),
                token_lens: lens.as_ptr(),
                token_bytes: bytes.as_ptr(),
                tokenizer_json: ptr::null(),
                tokenize_assumes_string: false,
                tokenize_fn: ptr::null(),
                use_approximate_greedy_tokenize_fn: true,
                tokenize_user_data: ptr::null(),
                slices: ptr::null(),
            };
            let mut msg = [0 as c_char; 128];
            // SAFETY: 1. `init` points to live tables of `n` entries; `msg` is writable.
            h.llg_tok = unsafe { llg_new_tokenizer(&init, msg.as_mut_ptr(), msg.len()) };
            if h.llg_tok.is_null() {
                return Err("llg_new_tokenizer failed on the synthetic table".into());
            }
            // SAFETY: 1. zeroed is a valid LlgConstraintInit (NULL pointer, zeros, false).
            let mut ci: LlgConstraintInit = unsafe { std::mem::zeroed() };
            // SAFETY: 1. `ci` writable, `h.llg_tok` a live tokenizer.
            unsafe { llg_constraint_init_set_defaults(&mut ci, h.llg_tok) };
            ci.log_stderr_level = 0;
            // SAFETY: 1. `ci` initialised; both strings NUL-terminated.
            h.llg = unsafe { llg_new_matcher(&ci, ctype.as_ptr(), ctext.as_ptr()) };
            if h.llg.is_null() {
                return Err("llg_new_matcher returned NULL".into());
            }
            // SAFETY: 1. a live llg matcher.
            if unsafe { llg_matcher_is_error(h.llg) } {
                // SAFETY: 1. a live llg matcher; the message lives as long as the handle.
                let m = unsafe { std::ffi::CStr::from_ptr(llg_matcher_get_error(h.llg)) };
                // LLGuidance's JSON options may refuse what sieve's compile: only an error
                // that the layer's own compile does not give is a bug.
                let src = std::str::from_utf8(text).unwrap_or_default();
                let l = Limits::default();
                let o = JsonOptions::llguidance();
                let refused = match kind {
                    1 => Grammar::from_lark_with(src, &o, &v, &l).is_err(),
                    2 => Grammar::from_regex(src, &v, &l).is_err(),
                    _ => Grammar::from_json_schema_str(src, &o, &v, &l).is_err(),
                };
                if !refused {
                    return Err(format!(
                        "llg_new_matcher failed where its own compile succeeds: {m:?}"
                    ));
                }
                // SAFETY: 1. a live llg matcher, freed once.
                unsafe { llg_free_matcher(h.llg) };
                h.llg = ptr::null_mut();
            }
        }
    }
    let mut rm = Matcher::new(&g);
    // The llg layer's reference: the same text compiled as that layer compiles it
    // (LLGuidance's JSON options), its masks narrowed to the canonical forced token.
    let mut rl: Option<Matcher> = None;
    if !h.llg.is_null() {
        let src = std::str::from_utf8(text).unwrap_or_default();
        let l = Limits::default();
        let o = JsonOptions::llguidance();
        let g = match kind {
            1 => Grammar::from_lark_with(src, &o, &v, &l),
            2 => Grammar::from_regex(src, &v, &l),
            _ => Grammar::from_json_schema_str(src, &o, &v, &l).map(|(g, _)| g),
        };
        match g {
            Ok(g) => rl = Some(Matcher::new(&g)),
            Err(e) => {
                return Err(format!(
                    "llg_new_matcher compiled what the core refuses: {e}"
                ));
            }
        }
    }
    let mut step = 0;
    while !ops.is_empty() && step < 48 {
        step += 1;
        let op = next(&mut ops);
        let what = format!("op {step} ({op:#04x})");
        let err_before = rm.error().is_some();
        match op % 8 {
            // compute_mask with an arbitrary buffer size or NULL
            0 => {
                let size = words + usize::from(next(&mut ops) % 4);
                let size = size.saturating_sub(1);
                let null = op & 0x80 != 0;
                let mut buf = vec![0xA5A5_A5A5u32; size];
                let p = if null {
                    ptr::null_mut()
                } else {
                    buf.as_mut_ptr()
                };
                let st = sieve_matcher_compute_mask(h.matcher, p, size);
                let mut want_mask = vec![0u32; words];
                let want = if null && size > 0 {
                    sieve_status::NullArgument
                } else if err_before {
                    sieve_status::MatcherError
                } else if size < words {
                    sieve_status::InsufficientSize
                } else {
                    want_status(false, &rm.compute_mask(&mut want_mask))
                };
                ok_or(&format!("{what} compute_mask({size})"), st, want)?;
                if null {
                    continue;
                }
                if st != sieve_status::Ok {
                    if buf.iter().any(|&w| w != 0) {
                        return Err(format!("{what}: buffer not zeroed after {st:?}"));
                    }
                    continue;
                }
                if buf[..words] != want_mask[..] || buf[words..].iter().any(|&w| w != 0) {
                    return Err(format!("{what}: C mask differs from the core mask"));
                }
                for t in 0..n as u32 {
                    let mut a = false;
                    let st = sieve_matcher_is_allowed(h.matcher, t, &mut a);
                    ok_or(&format!("{what} is_allowed({t})"), st, sieve_status::Ok)?;
                    if a != bit(&buf, t as usize) {
                        return Err(format!("{what}: token {t}: mask {} is_allowed {a}", !a));
                    }
                }
                if let (false, Some(rl)) = (h.llg.is_null(), rl.as_mut()) {
                    let mut lm = vec![0u32; words];
                    // SAFETY: 1. a live llg matcher; `lm` has `words` words.
                    let r =
                        unsafe { llg_matcher_compute_mask_into(h.llg, lm.as_mut_ptr(), words * 4) };
                    let want = llg_reference_mask(rl, words);
                    match (r, want) {
                        (0, Ok(w)) if lm != w => {
                            return Err(format!("{what}: llg mask differs from the reference"));
                        }
                        (0, Ok(_)) | (_, Err(MatcherError::Limit(_))) => {}
                        _ => return Err(format!("{what}: llg_matcher_compute_mask_into = {r}")),
                    }
                }
            }
            // consume a token: an allowed one (by the core's mask) or an arbitrary id
            1 | 2 => {
                let pick = u32::from(next(&mut ops)) | u32::from(next(&mut ops)) << 8;
                let t = if op % 8 == 1 && !err_before {
                    let mut m = vec![0u32; words];
                    let allowed: Vec<u32> = if rm.compute_mask(&mut m).is_ok() {
                        (0..n as u32).filter(|&t| bit(&m, t as usize)).collect()
                    } else {
                        Vec::new()
                    };
                    allowed
                        .get(pick as usize % allowed.len().max(1))
                        .copied()
                        .unwrap_or(pick)
                } else if op & 0x80 != 0 {
                    pick | 0xFFFF_0000
                } else {
                    pick
                };
                let err_before = rm.error().is_some();
                let r = rm.consume_token(t);
                let st = sieve_matcher_consume_token(h.matcher, t);
                ok_or(
                    &format!("{what} consume_token({t})"),
                    st,
                    want_status(err_before, &r),
                )?;
                if let (false, Some(rl)) = (h.llg.is_null(), rl.as_mut())
                    && rl.error().is_none()
                {
                    let r = rl.consume_token(t);
                    // SAFETY: 1. a live llg matcher.
                    let lr = unsafe { llg_matcher_consume_token(h.llg, t) };
                    if (lr == 0) != r.is_ok() {
                        return Err(format!("{what}: llg consume_token({t}) = {lr}, ref {r:?}"));
                    }
                    if lr != 0 {
                        // SAFETY: 1. a live llg matcher, freed once.
                        unsafe { llg_free_matcher(h.llg) };
                        h.llg = ptr::null_mut();
                    }
                }
            }
            // rollback
            3 => {
                let k = usize::from(next(&mut ops) % 5);
                let r = rm.rollback(k);
                let st = sieve_matcher_rollback(h.matcher, k);
                ok_or(
                    &format!("{what} rollback({k})"),
                    st,
                    want_status(err_before, &r),
                )?;
                if let (false, Some(rl)) = (h.llg.is_null(), rl.as_mut()) {
                    let r = rl.rollback(k);
                    // SAFETY: 1. a live llg matcher.
                    let lr = unsafe { llg_matcher_rollback(h.llg, k) };
                    if (lr == 0) != r.is_ok() {
                        return Err(format!("{what}: llg rollback({k}) = {lr}, ref {r:?}"));
                    }
                    if lr != 0 {
                        // SAFETY: 1. a live llg matcher, freed once.
                        unsafe { llg_free_matcher(h.llg) };
                        h.llg = ptr::null_mut();
                    }
                }
            }
            // validate_tokens, NULL n_valid or NULL draft allowed to be rejected
            4 => {
                let k = usize::from(next(&mut ops) % 4);
                let draft: Vec<u32> = (0..k)
                    .map(|_| u32::from(next(&mut ops)) * 3 % (n as u32 + 2))
                    .collect();
                let mut nv = usize::MAX;
                let null_out = op & 0x80 != 0;
                let p: *mut usize = if null_out { ptr::null_mut() } else { &mut nv };
                let st = sieve_matcher_validate_tokens(h.matcher, draft.as_ptr(), k, p);
                let want = if null_out {
                    sieve_status::NullArgument
                } else {
                    let r = rm.validate_tokens(&draft);
                    let w = want_status(err_before, &r);
                    if let (false, Ok(count)) = (err_before, r)
                        && st == sieve_status::Ok
                        && nv != count
                    {
                        return Err(format!("{what}: n_valid {nv}, core {count}"));
                    }
                    w
                };
                ok_or(&format!("{what} validate_tokens"), st, want)?;
                if let (false, Some(rl)) = (h.llg.is_null(), rl.as_mut())
                    && let Ok(count) = rl.validate_tokens(&draft)
                {
                    // SAFETY: 1. a live llg matcher, `draft` readable for `k` ids.
                    let lr = unsafe { llg_matcher_validate_tokens(h.llg, draft.as_ptr(), k) };
                    if lr < 0 || lr as usize != count {
                        return Err(format!("{what}: llg validate_tokens {lr}, ref {count}"));
                    }
                }
            }
            // compute_ff_tokens with an arbitrary capacity
            5 => {
                let cap = usize::from(next(&mut ops) % 6);
                let mut out = vec![0u32; cap];
                let mut n_out = usize::MAX;
                let p = if cap == 0 {
                    ptr::null_mut()
                } else {
                    out.as_mut_ptr()
                };
                let st = sieve_matcher_compute_ff_tokens(h.matcher, p, cap, &mut n_out);
                let r = rm.compute_ff_tokens();
                let want = match &r {
                    Ok(ff) if !err_before && ff.len() > cap => sieve_status::InsufficientSize,
                    _ => want_status(err_before, &r),
                };
                ok_or(&format!("{what} compute_ff_tokens({cap})"), st, want)?;
                if let (sieve_status::Ok, Ok(ff)) = (st, &r)
                    && out.get(..n_out) != Some(&ff[..])
                {
                    return Err(format!("{what}: ff tokens {:?}, core {ff:?}", &out));
                }
            }
            // clone the C matcher and continue on the clone
            6 => {
                let mut c: *mut sieve_matcher = ptr::null_mut();
                ok_or(
                    &format!("{what} clone"),
                    sieve_matcher_clone(h.matcher, &mut c),
                    sieve_status::Ok,
                )?;
                sieve_matcher_free(h.matcher);
                h.matcher = c;
            }
            // is_accepting, error status, NULL handles
            _ => {
                let acc = rm.is_accepting();
                if sieve_matcher_is_accepting(h.matcher) != acc {
                    return Err(format!(
                        "{what}: is_accepting differs from the core ({acc})"
                    ));
                }
                if let (false, Some(rl)) = (h.llg.is_null(), rl.as_mut()) {
                    let acc = rl.is_accepting();
                    // SAFETY: 1. a live llg matcher.
                    if unsafe { llg_matcher_is_accepting(h.llg) } != acc {
                        return Err(format!("{what}: llg is_accepting differs ({acc})"));
                    }
                }
                let es = sieve_matcher_error_status(h.matcher);
                let want = rm.error().map_or(sieve_status::Ok, status_of);
                ok_or(&format!("{what} error_status"), es, want)?;
                let mut a = false;
                ok_or(
                    "is_allowed(NULL)",
                    sieve_matcher_is_allowed(ptr::null_mut(), 0, &mut a),
                    sieve_status::NullArgument,
                )?;
                ok_or(
                    "rollback(NULL)",
                    sieve_matcher_rollback(ptr::null_mut(), 0),
                    sieve_status::NullArgument,
                )?;
            }
        }
    }
    Ok(())
}

/// Target `tokenizer_json`, C half: `sieve_tokenizer_from_json` on the same bytes agrees
/// with the core (`core`: the vocabulary size, `None` on error) and never panics.
pub fn check_tokenizer_json_c(data: &[u8], core: Option<usize>) -> Result<(), String> {
    let mut tok: *const sieve_tokenizer = ptr::null();
    let mut err: *mut sieve_error = ptr::null_mut();
    let st = sieve_tokenizer_from_json(data.as_ptr(), data.len(), &mut tok, &mut err);
    if !err.is_null() {
        sieve_error_free(err);
    }
    let got = (st == sieve_status::Ok).then(|| sieve_tokenizer_vocab_size(tok));
    sieve_tokenizer_free(tok);
    if st == sieve_status::Panic {
        return Err("sieve_tokenizer_from_json: SIEVE_STATUS_PANIC".into());
    }
    if got != core {
        return Err(format!(
            "sieve_tokenizer_from_json gave {st:?} (size {got:?}), the core {core:?}"
        ));
    }
    // The llg layer with the same text and a host vocab_size at or above the table's size
    // (models pad their vocabulary): built exactly when the core builds it. Text with a NUL
    // cannot be passed as a C string.
    let Ok(text) = CString::new(data) else {
        return Ok(());
    };
    let pad = data
        .iter()
        .fold(0u32, |h, &b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 97;
    let size = core.map_or(8, |n| n as u32);
    let init = LlgTokenizerInit {
        vocab_size: size.saturating_add(pad),
        tok_eos: 0,
        token_lens: ptr::null(),
        token_bytes: ptr::null(),
        tokenizer_json: text.as_ptr(),
        tokenize_assumes_string: false,
        tokenize_fn: ptr::null(),
        use_approximate_greedy_tokenize_fn: true,
        tokenize_user_data: ptr::null(),
        slices: ptr::null(),
    };
    let mut msg = [0 as c_char; 64];
    // SAFETY: 1. `init` holds a NUL-terminated text and NULL tables; `msg` is writable.
    let tok = unsafe { llg_new_tokenizer(&init, msg.as_mut_ptr(), msg.len()) };
    let built = !tok.is_null();
    if built {
        // SAFETY: 1. a live tokenizer from llg_new_tokenizer, freed once.
        unsafe { llg_free_tokenizer(tok) };
    }
    // A vocabulary of 0 tokens has no id 0 for the EOS: llg refuses it, the core may not.
    if built != (core.is_some_and(|n| n > 0 || pad > 0)) {
        // SAFETY: 1. `msg` is NUL-terminated by llg_new_tokenizer (or still zeroed).
        let why = unsafe { std::ffi::CStr::from_ptr(msg.as_ptr()) };
        return Err(format!(
            "llg_new_tokenizer(vocab_size {}) built: {built} ({why:?}), the core: {core:?}",
            size + pad
        ));
    }
    Ok(())
}

/// The llg layer's mask for `rl` (a matcher of the grammar as that layer compiles it): the
/// core's mask, narrowed to the canonical forced token where the grammar forces text (the
/// layer's tokenizer here is greedy over text tokens).
fn llg_reference_mask(rl: &mut Matcher, words: usize) -> Result<Vec<u32>, MatcherError> {
    let mut m = vec![0u32; words];
    rl.compute_mask(&mut m)?;
    if !rl.is_stopped() {
        let v = rl.grammar().vocab().clone();
        if let Some(t) = rl.canonical_forced_token(&mut |b| v.greedy_tokenize_text(b))? {
            m.fill(0);
            m[t as usize / 32] |= 1 << (t % 32);
        }
    }
    Ok(m)
}
