//! 32-bit ARM NEON kernels: 128-bit vectors, `W` = 4 mask words (or 4 `f32` / 8 `u16` logits),
//! written as portable, branch-free code over fixed-size arrays (see [`super`] for why there
//! are no intrinsics). No `unsafe`.
//!
//! The shapes are chosen so that LLVM, with NEON enabled, emits whole-vector code: the
//! bitset loops are the scalar reference's (which LLVM vectorizes best), population counts
//! run per 16-word block (`vcnt.8` plus pairwise widening), and mask application as a per-lane select
//! `(x & keep) | (-inf & !keep)` with `keep` the sign-extended bit of the lane, which becomes
//! `vtst`/`vbsl`-style code instead of the scalar reference's branch per bit. Results are
//! bit-identical to [`crate::scalar`] (logits move by bitwise selects only); the tests run
//! this level under `qemu-arm` (`kernels/ci-neon.sh`). Sparse masking is the scalar reference
//! (no gather).

use crate::scalar;

/// The NEON level of a 32-bit ARM build that enables NEON; its methods run this module's
/// kernels.
#[derive(Clone, Copy, Debug)]
pub struct Neon {
    _private: (),
}

impl Neon {
    /// Whether NEON can be used: always in a build that has this module (the build enabled
    /// NEON), except under Miri.
    #[inline]
    pub fn is_available() -> bool {
        !cfg!(miri)
    }

    /// A token if [`Neon::is_available`].
    #[inline]
    pub fn new() -> Option<Neon> {
        if Neon::is_available() {
            Some(Neon { _private: () })
        } else {
            None
        }
    }

    /// A token without checking. Safe to call: the code is portable and only runs faster
    /// with NEON, but kept `unsafe` to match the other ISA tokens.
    ///
    /// # Safety
    /// 1. None beyond the other levels': the build already targets NEON.
    #[inline]
    #[allow(unsafe_code)]
    pub unsafe fn new_unchecked() -> Neon {
        Neon { _private: () }
    }
}

token_methods!(Neon);

// ---- bitset kernels ----

/// The scalar reference: LLVM already turns its loop into NEON `vorr`/`vand`/`vbic` (the
/// 16-word block loop this level had first ran 2.3x the instructions of the reference
/// under `qemu-arm`: 19.2k against 8.4k per 4,008-word OR, `bench/perf.md`).
#[inline]
fn or_into(dst: &mut [u32], src: &[u32]) {
    scalar::or_into(dst, src);
}

/// See [`or_into`].
#[inline]
fn and_into(dst: &mut [u32], src: &[u32]) {
    scalar::and_into(dst, src);
}

/// See [`or_into`].
#[inline]
fn andnot_into(dst: &mut [u32], src: &[u32]) {
    scalar::andnot_into(dst, src);
}

#[inline]
fn popcount(words: &[u32]) -> u64 {
    let (blocks, rest) = words.as_chunks::<16>();
    let mut total = 0u64;
    for block in blocks {
        // Four u32 lanes of counts per block: at most 4 * 32 each, no overflow.
        let mut lanes = [0u32; 4];
        for quad in block.as_chunks::<4>().0 {
            for (l, w) in lanes.iter_mut().zip(quad) {
                *l += w.count_ones();
            }
        }
        total += u64::from(lanes.iter().sum::<u32>());
    }
    total + scalar::popcount(rest)
}

#[inline]
fn single_set_bit(words: &[u32]) -> Option<usize> {
    let mut found = None;
    let (blocks, rest) = words.as_chunks::<16>();
    for (i, block) in blocks.iter().enumerate() {
        if block.iter().fold(0, |a, &w| a | w) != 0 {
            found = scalar::single_bit_step(found, i * 16, block)?;
        }
    }
    scalar::single_bit_step(found, blocks.len() * 16, rest)?
}

// ---- dense mask application ----

/// The 32 logits of one mask word as bit patterns: lane `i` keeps its value if bit `i` of
/// `word` is set and becomes `neg_inf` otherwise, with no branch per lane.
#[inline(always)]
fn select_word<T: Copy, const N: usize>(
    chunk: &mut [T; N],
    word: u32,
    neg_inf: T,
    to_bits: impl Fn(T) -> u32,
    from_bits: impl Fn(u32) -> T,
) {
    let ninf = to_bits(neg_inf);
    for (i, x) in chunk.iter_mut().enumerate() {
        let keep = 0u32.wrapping_sub((word >> i) & 1);
        *x = from_bits((to_bits(*x) & keep) | (ninf & !keep));
    }
}

/// Dense masking, a mask word (32 logits) at a time, with the scalar reference's fast paths
/// for all-allowed and all-disallowed words.
#[inline(always)]
fn apply_mask<T: Copy>(
    logits: &mut [T],
    mask: &[u32],
    neg_inf: T,
    to_bits: impl Fn(T) -> u32 + Copy,
    from_bits: impl Fn(u32) -> T + Copy,
    tail: fn(&mut [T], &[u32]),
) {
    let (chunks, _) = logits.as_chunks_mut::<32>();
    let n = chunks.len().min(mask.len());
    for (chunk, &word) in chunks[..n].iter_mut().zip(mask) {
        match word {
            u32::MAX => {}
            0 => chunk.fill(neg_inf),
            _ => select_word(chunk, word, neg_inf, to_bits, from_bits),
        }
    }
    tail(&mut logits[n * 32..], &mask[n..]);
}

#[inline]
fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    apply_mask(
        logits,
        mask,
        f32::NEG_INFINITY,
        f32::to_bits,
        f32::from_bits,
        scalar::apply_mask_f32,
    );
}

#[inline]
fn apply_mask_f32_batch(logits: &mut [f32], row_len: usize, masks: &[u32], mask_words: usize) {
    scalar::for_each_row(logits, row_len, masks, mask_words, apply_mask_f32);
}

#[inline]
fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    apply_mask(
        logits,
        mask,
        crate::F16_NEG_INFINITY,
        u32::from,
        |b| b as u16,
        scalar::apply_mask_f16,
    );
}

#[inline]
fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    apply_mask(
        logits,
        mask,
        crate::BF16_NEG_INFINITY,
        u32::from,
        |b| b as u16,
        scalar::apply_mask_bf16,
    );
}

// ---- sparse mask application ----

/// Scalar: NEON has no gather.
#[inline]
fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    scalar::apply_mask_sparse_f32(logits, candidate_ids, mask);
}
