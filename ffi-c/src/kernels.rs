//! Mask kernels: set the logits of disallowed tokens to `-inf` (SIMD where the CPU has it).

use crate::boundary::{ffi_boundary, input_slice, output_slice};
use crate::status::sieve_status;

/// Borrows a logits buffer and a mask, or returns `SIEVE_STATUS_NULL_ARGUMENT`.
macro_rules! apply {
    ($kernel:path, $logits:expr, $n:expr, $mask:expr, $words:expr) => {{
        // SAFETY: 1. each pointer is NULL or valid for its stated length, and the two buffers
        // do not overlap (caller contract).
        let (Some(logits), Some(mask)) = (unsafe { output_slice($logits, $n) }, unsafe {
            input_slice($mask, $words)
        }) else {
            return sieve_status::NullArgument;
        };
        $kernel(logits, mask);
        sieve_status::Ok
    }};
}

/// Sets `logits[i]` to `-inf` unless bit `i` of `mask` is set (`n_logits` floats, `mask_words`
/// words; logits past `32 * mask_words` become `-inf`). Thread-safe on distinct buffers.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_apply_mask_f32(
    logits: *mut f32,
    n_logits: usize,
    mask: *const u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        apply!(sieve_kernels::apply_mask_f32, logits, n_logits, mask, mask_words)
    }
}

/// `sieve_apply_mask_f32` on IEEE binary16 logits given as raw `uint16_t` bit patterns
/// (`-inf` = `0xFC00`).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_apply_mask_f16(
    logits: *mut u16,
    n_logits: usize,
    mask: *const u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        apply!(sieve_kernels::apply_mask_f16, logits, n_logits, mask, mask_words)
    }
}

/// `sieve_apply_mask_f32` on bfloat16 logits given as raw `uint16_t` bit patterns
/// (`-inf` = `0xFF80`).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_apply_mask_bf16(
    logits: *mut u16,
    n_logits: usize,
    mask: *const u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        apply!(sieve_kernels::apply_mask_bf16, logits, n_logits, mask, mask_words)
    }
}

/// Sparse masking, for logits already cut to a candidate list (after top-k, say):
/// `logits[i]` is the logit of token `candidate_ids[i]` and becomes `-inf` unless that token's
/// bit is set in `mask` (`mask_words` words; ids past `32 * mask_words` are disallowed).
/// Logits without a candidate id (`i >= n_candidates`) become `-inf`; extra ids are ignored.
/// AVX2 gathers where the CPU has them. Thread-safe on distinct buffers.
///
/// Returns `SIEVE_STATUS_NULL_ARGUMENT` for a NULL buffer with a non-zero length (nothing is
/// written then).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_apply_mask_sparse_f32(
    logits: *mut f32,
    n_logits: usize,
    candidate_ids: *const u32,
    n_candidates: usize,
    mask: *const u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. each pointer is NULL or valid for its stated length, and `logits` overlaps
        // neither input (caller contract).
        let (Some(logits), Some(ids), Some(mask)) = (
            unsafe { output_slice(logits, n_logits) },
            unsafe { input_slice(candidate_ids, n_candidates) },
            unsafe { input_slice(mask, mask_words) },
        ) else {
            return sieve_status::NullArgument;
        };
        sieve_kernels::apply_mask_sparse_f32(logits, ids, mask);
        sieve_status::Ok
    }
}

/// `sieve_apply_mask_f32` over a batch of `n_rows` rows: row `i` is
/// `logits[i * row_len ..< (i + 1) * row_len]` and its mask is
/// `masks[i * mask_words ..< (i + 1) * mask_words]` (the layout `sieve_compute_masks`
/// writes). `mask_words == 0` makes every logit `-inf`; `row_len == 0` or `n_rows == 0` does
/// nothing. Thread-safe on distinct buffers.
///
/// Returns `SIEVE_STATUS_NULL_ARGUMENT` for a NULL buffer with a non-zero size and
/// `SIEVE_STATUS_INVALID_ARGUMENT` when `n_rows * row_len` or `n_rows * mask_words` overflows
/// `size_t` (nothing is written then).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_apply_mask_f32_batch(
    logits: *mut f32,
    n_rows: usize,
    row_len: usize,
    masks: *const u32,
    mask_words: usize,
) -> sieve_status {
    ffi_boundary! {
        let (Some(n_logits), Some(n_words)) =
            (n_rows.checked_mul(row_len), n_rows.checked_mul(mask_words))
        else {
            return sieve_status::InvalidArgument;
        };
        // SAFETY: 1. each pointer is NULL or valid for its stated length, and the two buffers
        // do not overlap (caller contract).
        let (Some(logits), Some(masks)) = (unsafe { output_slice(logits, n_logits) }, unsafe {
            input_slice(masks, n_words)
        }) else {
            return sieve_status::NullArgument;
        };
        sieve_kernels::apply_mask_f32_batch(logits, row_len, masks, mask_words);
        sieve_status::Ok
    }
}
