//! sieve-kernels: the word-level kernels behind sieve's token masks.
//!
//! A token mask is a `u32` bitset: token `t` is bit `t % 32` of word `t / 32`, and a set bit
//! means the token is allowed. This crate combines masks (OR, AND, AND-NOT), counts them
//! (popcount, single-bit detection) and applies them to logits in `f32`, IEEE `f16` and
//! `bf16` (the 16-bit formats as raw bit patterns, so no float-16 type is needed), densely or
//! for a sparse list of candidate tokens.
//!
//! # Key types
//! - [`Kernel`]: the implementation level. [`Kernel::selected`] names the one the free
//!   functions use; tests and benches call the methods on a specific [`Kernel`] to force it.
//! - [`scalar`]: the portable reference, always built.
//!
//! # Usage pattern
//! ```
//! let mut mask = [0u32; 2];
//! sieve_kernels::or_into(&mut mask, &[0b1010, 1]);
//! assert_eq!(sieve_kernels::popcount(&mask), 3);
//! let mut logits = [0.5f32; 40];
//! sieve_kernels::apply_mask_f32(&mut logits, &mask);
//! assert_eq!(logits[1], 0.5);
//! assert_eq!(logits[0], f32::NEG_INFINITY);
//! ```
//!
//! # Crate features
//! - `std` (default): reserved for runtime CPU detection once SIMD kernels land. The crate is
//!   `#![no_std]` either way.
//!
//! # Panics & limits
//! No function panics or allocates. Binary operations work over the shorter slice; logits
//! beyond the mask are treated as disallowed.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod scalar;

/// `-inf` as an IEEE binary16 bit pattern.
pub const F16_NEG_INFINITY: u16 = 0xFC00;
/// `-inf` as a bfloat16 bit pattern.
pub const BF16_NEG_INFINITY: u16 = 0xFF80;

/// A kernel implementation level.
///
/// Only [`Kernel::Scalar`] exists today; vector levels (AVX2, NEON) will be added once a
/// bench shows they win, and [`Kernel::selected`] will pick the best one available.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kernel {
    /// The portable reference in [`scalar`].
    Scalar,
}

impl Kernel {
    /// The level the free functions of this crate dispatch to.
    #[inline]
    pub fn selected() -> Kernel {
        Kernel::Scalar
    }

    /// Whether this level can run on the current CPU.
    #[inline]
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Scalar => true,
        }
    }

    /// A short lowercase name (`"scalar"`), for bench labels and logs.
    #[inline]
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
        }
    }

    /// See [`or_into`].
    #[inline]
    pub fn or_into(self, dst: &mut [u32], src: &[u32]) {
        match self {
            Kernel::Scalar => scalar::or_into(dst, src),
        }
    }

    /// See [`and_into`].
    #[inline]
    pub fn and_into(self, dst: &mut [u32], src: &[u32]) {
        match self {
            Kernel::Scalar => scalar::and_into(dst, src),
        }
    }

    /// See [`andnot_into`].
    #[inline]
    pub fn andnot_into(self, dst: &mut [u32], src: &[u32]) {
        match self {
            Kernel::Scalar => scalar::andnot_into(dst, src),
        }
    }

    /// See [`popcount`].
    #[inline]
    pub fn popcount(self, words: &[u32]) -> u64 {
        match self {
            Kernel::Scalar => scalar::popcount(words),
        }
    }

    /// See [`single_set_bit`].
    #[inline]
    pub fn single_set_bit(self, words: &[u32]) -> Option<usize> {
        match self {
            Kernel::Scalar => scalar::single_set_bit(words),
        }
    }

    /// See [`apply_mask_f32`].
    #[inline]
    pub fn apply_mask_f32(self, logits: &mut [f32], mask: &[u32]) {
        match self {
            Kernel::Scalar => scalar::apply_mask_f32(logits, mask),
        }
    }

    /// See [`apply_mask_f16`].
    #[inline]
    pub fn apply_mask_f16(self, logits: &mut [u16], mask: &[u32]) {
        match self {
            Kernel::Scalar => scalar::apply_mask_f16(logits, mask),
        }
    }

    /// See [`apply_mask_bf16`].
    #[inline]
    pub fn apply_mask_bf16(self, logits: &mut [u16], mask: &[u32]) {
        match self {
            Kernel::Scalar => scalar::apply_mask_bf16(logits, mask),
        }
    }

    /// See [`apply_mask_sparse_f32`].
    #[inline]
    pub fn apply_mask_sparse_f32(self, logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
        match self {
            Kernel::Scalar => scalar::apply_mask_sparse_f32(logits, candidate_ids, mask),
        }
    }
}

/// `dst[i] |= src[i]` over the shorter slice.
#[inline]
pub fn or_into(dst: &mut [u32], src: &[u32]) {
    Kernel::selected().or_into(dst, src);
}

/// `dst[i] &= src[i]` over the shorter slice; words of `dst` beyond `src` are unchanged.
#[inline]
pub fn and_into(dst: &mut [u32], src: &[u32]) {
    Kernel::selected().and_into(dst, src);
}

/// `dst[i] &= !src[i]` over the shorter slice.
#[inline]
pub fn andnot_into(dst: &mut [u32], src: &[u32]) {
    Kernel::selected().andnot_into(dst, src);
}

/// Number of set bits in `words`.
#[inline]
pub fn popcount(words: &[u32]) -> u64 {
    Kernel::selected().popcount(words)
}

/// `Some(i)` if exactly one bit is set (`i = word * 32 + bit`), else `None`.
#[inline]
pub fn single_set_bit(words: &[u32]) -> Option<usize> {
    Kernel::selected().single_set_bit(words)
}

/// Sets `logits[i]` to `-inf` unless bit `i` of `mask` is set; logits beyond the mask
/// (`i >= 32 * mask.len()`) become `-inf`.
#[inline]
pub fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    Kernel::selected().apply_mask_f32(logits, mask);
}

/// [`apply_mask_f32`] on raw IEEE binary16 bit patterns (`-inf` = [`F16_NEG_INFINITY`]).
#[inline]
pub fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    Kernel::selected().apply_mask_f16(logits, mask);
}

/// [`apply_mask_f32`] on raw bfloat16 bit patterns (`-inf` = [`BF16_NEG_INFINITY`]).
#[inline]
pub fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    Kernel::selected().apply_mask_bf16(logits, mask);
}

/// Sparse masking: `logits[i]` is the logit of token `candidate_ids[i]` (for example after a
/// top-k cut) and becomes `-inf` unless that token's bit is set. Logits without a candidate id
/// (`i >= candidate_ids.len()`) become `-inf`; extra candidate ids are ignored.
#[inline]
pub fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    Kernel::selected().apply_mask_sparse_f32(logits, candidate_ids, mask);
}

#[cfg(test)]
mod tests;
