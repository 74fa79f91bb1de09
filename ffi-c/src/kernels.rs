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
