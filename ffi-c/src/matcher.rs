//! `sieve_matcher`: per-sequence state (exclusive `Box`), and the mask computation shared by
//! the single and batch entry points.

use core::ffi::c_char;

use sieve_core::Matcher;

use crate::boundary::{
    Castable, Exclusive, box_free, box_into_handle, copy_with_nul, ffi_boundary, handle_mut,
    handle_ref, input_slice, output_slice, write_out,
};
use crate::grammar::sieve_grammar;
use crate::prelude::*;
use crate::status::sieve_status;

/// Per-sequence constraint state: which tokens may come next, given the tokens consumed.
///
/// Thread safety: one thread at a time. A matcher may move between threads, but calls on
/// one matcher must not overlap; distinct matchers (even of the same grammar) may be used
/// on different threads at once. Errors are sticky: after a failed call (a rejected token,
/// an exceeded limit) every later call returns `SIEVE_STATUS_MATCHER_ERROR` until
/// `sieve_matcher_reset`.
pub struct sieve_matcher {
    _private: [u8; 0],
}

impl Castable for sieve_matcher {
    type Ownership = Exclusive;
    type Rust = Matcher;
}

/// The status of a call on a matcher already in error, if it is.
fn sticky(m: &Matcher) -> Option<sieve_status> {
    m.error().map(|_| sieve_status::MatcherError)
}

/// Computes one mask into `mask` (any length); the status. On failure the mask is all zero.
pub(crate) fn compute_mask_into(m: &mut Matcher, mask: &mut [u32]) -> sieve_status {
    mask_into(m, mask, Matcher::compute_mask)
}

/// [`compute_mask_into`] with the mask computed by `compute` (the plain or the budget mask).
fn mask_into(
    m: &mut Matcher,
    mask: &mut [u32],
    compute: impl FnOnce(&mut Matcher, &mut [u32]) -> Result<(), sieve_core::MatcherError>,
) -> sieve_status {
    let status = if let Some(s) = sticky(m) {
        s
    } else if mask.len() < m.mask_words() {
        sieve_status::InsufficientSize
    } else {
        match compute(m, mask) {
            Ok(()) => sieve_status::Ok,
            Err(e) => sieve_status::from_matcher(&e),
        }
    };
    if status != sieve_status::Ok {
        mask.fill(0);
    }
    status
}

/// Borrows the matcher or returns `SIEVE_STATUS_NULL_ARGUMENT` from the exported function.
macro_rules! matcher_mut {
    ($m:expr) => {
        // SAFETY: 1. NULL or a live matcher handle used by one thread at a time (caller
        // contract, stated in the header).
        match unsafe { handle_mut($m) } {
            Some(m) => m,
            None => return sieve_status::NullArgument,
        }
    };
}

/// Creates a matcher at the start of `grammar`. `*out` receives a handle to free with
/// `sieve_matcher_free`. The matcher keeps the grammar alive.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_new(
    grammar: *const sieve_grammar,
    out: *mut *mut sieve_matcher,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live grammar handle (caller contract).
        let Some(g) = (unsafe { handle_ref(grammar) }) else {
            return sieve_status::NullArgument;
        };
        if out.is_null() {
            return sieve_status::NullArgument;
        }
        let m = Matcher::new(&g.grammar);
        // SAFETY: 1. `out` checked non-NULL.
        unsafe { write_out(out, box_into_handle(m)) };
        sieve_status::Ok
    }
}

/// Copies a matcher (its parser state and error; the lexer tables belong to the grammar and
/// are shared): `*out` receives an independent matcher (for beams and speculative branches).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_clone(
    matcher: *const sieve_matcher,
    out: *mut *mut sieve_matcher,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle not used on another thread (contract).
        let Some(m) = (unsafe { handle_ref(matcher) }) else {
            return sieve_status::NullArgument;
        };
        if out.is_null() {
            return sieve_status::NullArgument;
        }
        // SAFETY: 1. `out` checked non-NULL.
        unsafe { write_out(out, box_into_handle(m.clone())) };
        sieve_status::Ok
    }
}

/// Frees a matcher. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_free(matcher: *mut sieve_matcher) {
    ffi_boundary! {
        // SAFETY: 1. NULL or a matcher handle not in use elsewhere, freed once (contract).
        unsafe { box_free(matcher) }
    }
}

/// The words a mask buffer for this matcher needs (`ceil(vocab_size / 32)`); 0 for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_mask_words(matcher: *const sieve_matcher) -> usize {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }.map_or(0, Matcher::mask_words)
    }
}

/// Writes the mask of tokens allowed next: bit `t % 32` of `mask[t / 32]` is set iff token
/// `t` is allowed. EOS ids are allowed exactly when the output so far is complete; after an
/// EOS was consumed only EOS ids are set. Words past `ceil(vocab_size / 32)` are zeroed.
/// `mask_words` below that gives `SIEVE_STATUS_INSUFFICIENT_SIZE`. On any failure the buffer
/// holds zeros (when it is non-NULL).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_compute_mask(
    matcher: *mut sieve_matcher,
    mask: *mut u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or writable for `mask_words` words, not aliased (caller contract).
        let Some(mask) = (unsafe { output_slice(mask, mask_words) }) else {
            return sieve_status::NullArgument;
        };
        compute_mask_into(m, mask)
    }
}

/// Consumes one sampled token. `SIEVE_STATUS_TOKEN_REJECTED`, `_TOKEN_OUT_OF_RANGE`,
/// `_STOPPED` (a token after EOS) and `_LIMIT_EXCEEDED` put the matcher in error.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_consume_token(
    matcher: *mut sieve_matcher,
    token: u32,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        if let Some(s) = sticky(m) {
            return s;
        }
        match m.consume_token(token) {
            Ok(()) => sieve_status::Ok,
            Err(e) => sieve_status::from_matcher(&e),
        }
    }
}

/// Consumes `n_tokens` tokens in order; stops at the first failure (the tokens before it stay
/// consumed and the matcher is in error).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_consume_tokens(
    matcher: *mut sieve_matcher,
    tokens: *const u32,
    n_tokens: usize,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or readable for `n_tokens` ids (caller contract).
        let Some(tokens) = (unsafe { input_slice(tokens, n_tokens) }) else {
            return sieve_status::NullArgument;
        };
        if let Some(s) = sticky(m) {
            return s;
        }
        match m.consume_tokens(tokens) {
            Ok(()) => sieve_status::Ok,
            Err(e) => sieve_status::from_matcher(&e),
        }
    }
}

/// Undoes the last `n` consumed tokens (an EOS included). More than were consumed gives
/// `SIEVE_STATUS_ROLLBACK_TOO_FAR` and changes nothing. Does not clear a sticky error.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_rollback(matcher: *mut sieve_matcher, n: usize) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        if let Some(s) = sticky(m) {
            return s;
        }
        match m.rollback(n) {
            Ok(()) => sieve_status::Ok,
            Err(e) => sieve_status::from_matcher(&e),
        }
    }
}

/// Counts how many leading tokens of a draft (`tokens`, `n_tokens`) would be accepted one
/// after another, into `*n_valid`, without changing the matcher and without a mask (for
/// speculative decoding). Rejected or out-of-range draft tokens just end the count.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_validate_tokens(
    matcher: *mut sieve_matcher,
    tokens: *const u32,
    n_tokens: usize,
    n_valid: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or readable for `n_tokens` ids (caller contract).
        let Some(tokens) = (unsafe { input_slice(tokens, n_tokens) }) else {
            return sieve_status::NullArgument;
        };
        if n_valid.is_null() {
            return sieve_status::NullArgument;
        }
        if let Some(s) = sticky(m) {
            return s;
        }
        match m.validate_tokens(tokens) {
            Ok(n) => {
                // SAFETY: 1. `n_valid` checked non-NULL.
                unsafe { write_out(n_valid, n) };
                sieve_status::Ok
            }
            Err(e) => sieve_status::from_matcher(&e),
        }
    }
}

/// Masks for every node of a draft token tree (speculative decoding, EAGLE / Medusa
/// shapes), in one pass that walks each shared prefix once. Node `i` (of `n_nodes`) has
/// token `tokens[i]` and parent `parents[i]`: an earlier node (`< i`) or -1 for the matcher's
/// current state. `masks` holds `(n_nodes + 1) * mask_words` words: row 0 (words
/// `0 ..< mask_words`) receives the mask at the current state, row `i + 1` the mask after
/// the path to node `i`. A node whose token its parent's row does not allow (or out of
/// range, or after an EOS) gets a zero row, and so do its descendants. On success
/// `*n_filled` receives how many rows hold a mask (row 0 and the accepted nodes').
///
/// The matcher ends in the state where it started. A parent not before its node, or an
/// overflowing size, is `SIEVE_STATUS_INVALID_ARGUMENT`; `mask_words` below
/// `sieve_matcher_mask_words`, `SIEVE_STATUS_INSUFFICIENT_SIZE`; both write nothing. A
/// matcher in error gives `SIEVE_STATUS_MATCHER_ERROR`, and a budget exceeded on the way
/// `SIEVE_STATUS_LIMIT_EXCEEDED` (the matcher is then in error, back at its position);
/// on those failures the buffer holds zeros.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_fill_draft_tree(
    matcher: *mut sieve_matcher,
    tokens: *const u32,
    parents: *const i32,
    n_nodes: usize,
    masks: *mut u32,
    mask_words: usize,
    n_filled: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or readable for `n_nodes` ids / parents (caller contract).
        let (Some(tokens), Some(parents)) =
            (unsafe { input_slice(tokens, n_nodes) }, unsafe { input_slice(parents, n_nodes) })
        else {
            return sieve_status::NullArgument;
        };
        let Some(total) = n_nodes.checked_add(1).and_then(|r| r.checked_mul(mask_words)) else {
            return sieve_status::InvalidArgument;
        };
        // SAFETY: 1. NULL or writable for `(n_nodes + 1) * mask_words` words, not aliased
        // (caller contract).
        let Some(rows) = (unsafe { output_slice(masks, total) }) else {
            return sieve_status::NullArgument;
        };
        if n_filled.is_null() {
            return sieve_status::NullArgument;
        }
        draft_tree_into(m, tokens, parents, rows, mask_words, n_filled)
    }
}

/// The work of [`sieve_matcher_fill_draft_tree`] on checked arguments (also one request of
/// `sieve_fill_draft_trees`).
pub(crate) fn draft_tree_into(
    m: &mut Matcher,
    tokens: &[u32],
    parents: &[i32],
    rows: &mut [u32],
    mask_words: usize,
    n_filled: *mut usize,
) -> sieve_status {
    let was = sticky(m);
    match m.fill_draft_tree(tokens, parents, rows, mask_words) {
        Ok(fill) if fill.failed_row.is_none() => {
            // SAFETY: 1. `n_filled` checked non-NULL by the caller.
            unsafe { write_out(n_filled, fill.filled) };
            sieve_status::Ok
        }
        Ok(_) => {
            rows.fill(0);
            was.or_else(|| m.error().map(sieve_status::from_matcher))
                .unwrap_or(sieve_status::MatcherError)
        }
        Err(sieve_core::DraftTreeError::RowTooShort { .. }) => sieve_status::InsufficientSize,
        Err(_) => sieve_status::InvalidArgument,
    }
}

/// The tokens the grammar forces next (fast-forward), tokenized greedily; nothing is
/// consumed. On success `*n_out` ids were written to `out` (`cap` entries). If `cap` is too
/// small, returns `SIEVE_STATUS_INSUFFICIENT_SIZE`, writes nothing to `out` and sets `*n_out`
/// to the number needed.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_compute_ff_tokens(
    matcher: *mut sieve_matcher,
    out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or writable for `cap` ids (caller contract).
        let Some(out) = (unsafe { output_slice(out, cap) }) else {
            return sieve_status::NullArgument;
        };
        if n_out.is_null() {
            return sieve_status::NullArgument;
        }
        if let Some(s) = sticky(m) {
            return s;
        }
        let tokens = match m.compute_ff_tokens() {
            Ok(t) => t,
            Err(e) => return sieve_status::from_matcher(&e),
        };
        // SAFETY: 1. `n_out` checked non-NULL.
        unsafe { write_out(n_out, tokens.len()) };
        let Some(dst) = out.get_mut(..tokens.len()) else {
            return sieve_status::InsufficientSize;
        };
        dst.copy_from_slice(&tokens);
        sieve_status::Ok
    }
}

/// Whether `token` is allowed now, into `*allowed`, in O(token length) instead of a full
/// mask. An id not below the vocabulary size gives `SIEVE_STATUS_TOKEN_OUT_OF_RANGE` (the
/// matcher is unchanged).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_is_allowed(
    matcher: *mut sieve_matcher,
    token: u32,
    allowed: *mut bool,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        if allowed.is_null() {
            return sieve_status::NullArgument;
        }
        if let Some(s) = sticky(m) {
            return s;
        }
        if token as usize >= m.grammar().vocab().vocab_size() {
            return sieve_status::TokenOutOfRange;
        }
        match m.is_allowed(token) {
            Ok(ok) => {
                // SAFETY: 1. `allowed` checked non-NULL.
                unsafe { write_out(allowed, ok) };
                sieve_status::Ok
            }
            Err(e) => sieve_status::from_matcher(&e),
        }
    }
}

/// Budget mode: writes the mask of `sieve_matcher_compute_mask` narrowed to the tokens after
/// which the output can still be completed within `remaining - 1` more tokens (`remaining`
/// = tokens the host may still consume, this one included; EOS ids as in
/// `sieve_matcher_compute_mask`). If `sieve_matcher_completion_tokens` is at most
/// `remaining`, the mask is never empty, and a generation that picks from it with
/// `remaining` counting down is accepting when the budget runs out (forward generation: a
/// rollback or reset forgets the plan the matcher keeps). A `remaining` below
/// `sieve_matcher_completion_tokens` is raised to it. `SIEVE_STATUS_LIMIT_EXCEEDED` from the
/// completion searches is not sticky. On any failure the buffer holds zeros.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_compute_mask_within(
    matcher: *mut sieve_matcher,
    remaining: usize,
    mask: *mut u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or writable for `mask_words` words, not aliased (caller contract).
        let Some(mask) = (unsafe { output_slice(mask, mask_words) }) else {
            return sieve_status::NullArgument;
        };
        mask_into(m, mask, |m, mask| m.compute_mask_within(mask, remaining))
    }
}

/// The shortest byte string whose bytes leave the matcher accepting (the least in byte order
/// among the shortest), written to `out` (`cap` bytes) with its length in `*n_out`;
/// `*found` is false (and `*n_out` 0) when no continuation is ever accepted. Nothing is
/// consumed. If `cap` is too small, returns `SIEVE_STATUS_INSUFFICIENT_SIZE`, writes nothing
/// to `out` and sets `*n_out` to the length needed. `SIEVE_STATUS_LIMIT_EXCEEDED` (the
/// search ran out of `fuel_per_mask`) is not sticky.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_shortest_completion(
    matcher: *mut sieve_matcher,
    out: *mut u8,
    cap: usize,
    n_out: *mut usize,
    found: *mut bool,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        // SAFETY: 1. NULL or writable for `cap` bytes (caller contract).
        let Some(out) = (unsafe { output_slice(out, cap) }) else {
            return sieve_status::NullArgument;
        };
        if n_out.is_null() || found.is_null() {
            return sieve_status::NullArgument;
        }
        if let Some(s) = sticky(m) {
            return s;
        }
        let bytes = match m.shortest_completion() {
            Ok(b) => b,
            Err(e) => return sieve_status::from_matcher(&e),
        };
        let len = bytes.as_ref().map_or(0, Vec::len);
        // SAFETY: 1. `n_out` and `found` checked non-NULL.
        unsafe {
            write_out(n_out, len);
            write_out(found, bytes.is_some());
        }
        let Some(dst) = out.get_mut(..len) else {
            return sieve_status::InsufficientSize;
        };
        if let Some(b) = bytes {
            dst.copy_from_slice(&b);
        }
        sieve_status::Ok
    }
}

/// How many tokens the output is from complete, into `*n_tokens`: the greedy longest-match
/// tokenization of the shortest completion (or of the completion budget mode remembers, if
/// shorter in tokens); 0 when accepting. `*found` is false (and `*n_tokens` 0) when no
/// completion exists or the vocabulary cannot spell it. A budget of at least this many
/// tokens is always enough (see `sieve_matcher_compute_mask_within`).
/// `SIEVE_STATUS_LIMIT_EXCEEDED` is not sticky.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_completion_tokens(
    matcher: *mut sieve_matcher,
    n_tokens: *mut usize,
    found: *mut bool,
) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        if n_tokens.is_null() || found.is_null() {
            return sieve_status::NullArgument;
        }
        if let Some(s) = sticky(m) {
            return s;
        }
        match m.completion_tokens() {
            Ok(n) => {
                // SAFETY: 1. `n_tokens` and `found` checked non-NULL.
                unsafe {
                    write_out(n_tokens, n.unwrap_or(0));
                    write_out(found, n.is_some());
                }
                sieve_status::Ok
            }
            Err(e) => sieve_status::from_matcher(&e),
        }
    }
}

/// Whether the output so far is a complete sentence (an EOS would be allowed), or an EOS was
/// consumed. False for NULL and for a matcher in error.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_is_accepting(matcher: *mut sieve_matcher) -> bool {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle used by one thread at a time (contract).
        unsafe { handle_mut(matcher) }.is_some_and(|m| m.is_accepting())
    }
}

/// Whether an EOS token was consumed (the sequence is finished). False for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_is_stopped(matcher: *const sieve_matcher) -> bool {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        unsafe { handle_ref(matcher) }.is_some_and(Matcher::is_stopped)
    }
}

/// The status of the matcher's sticky error (the status the failing call returned), or
/// `SIEVE_STATUS_OK` if it is not in error; `SIEVE_STATUS_NULL_ARGUMENT` for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_matcher_error_status(matcher: *const sieve_matcher) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        match unsafe { handle_ref(matcher) } {
            Some(m) => m.error().map_or(sieve_status::Ok, sieve_status::from_matcher),
            None => sieve_status::NullArgument,
        }
    }
}

/// Returns the matcher to the start of its grammar and clears its error.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_reset(matcher: *mut sieve_matcher) -> sieve_status {
    ffi_boundary! {
        let m = matcher_mut!(matcher);
        m.reset();
        sieve_status::Ok
    }
}

/// Copies the sticky error's message (empty if none) into `buf` (`cap` bytes) with a NUL.
/// `*len` (if `len` is non-NULL) receives the message length without the NUL. If `cap` is
/// not above that length, returns `SIEVE_STATUS_INSUFFICIENT_SIZE`, writes nothing to `buf`
/// and still sets `*len`, so the caller can size a buffer.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_matcher_error_message(
    matcher: *const sieve_matcher,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live matcher handle (caller contract).
        let Some(m) = (unsafe { handle_ref(matcher) }) else {
            return sieve_status::NullArgument;
        };
        // SAFETY: 1. NULL or writable for `cap` bytes (caller contract).
        let Some(buf) = (unsafe { output_slice(buf.cast::<u8>(), cap) }) else {
            return sieve_status::NullArgument;
        };
        let message = m.error().map(|e| e.to_string()).unwrap_or_default();
        let message = message.replace('\0', "\\0");
        if !len.is_null() {
            // SAFETY: 1. `len` checked non-NULL.
            unsafe { write_out(len, message.len()) };
        }
        copy_with_nul(buf, message.as_bytes())
    }
}
