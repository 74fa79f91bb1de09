//! NEON kernels: 128-bit vectors, `W` = 4 mask words (or 4 `f32` / 8 `u16` logits).
//!
//! NEON is part of the default aarch64 targets (Linux, macOS, `aarch64-unknown-none`), so the
//! level is usually chosen at compile time (`cfg(target_feature = "neon")`). A build without
//! it but with `std` (`-C target-feature=-neon` on Linux) asks the OS at run time
//! (`is_aarch64_feature_detected!`, cached by `std`); bare metal without it
//! (`aarch64-unknown-none-softfloat`) does not compile this module at all, since enabling
//! NEON there would change the float ABI. Never under Miri. Kernels are safe
//! `#[target_feature(enable = "neon")]` functions reached through a [`Neon`] token. The only
//! other `unsafe` is loads and stores of fixed-size arrays, each behind a small helper with
//! its own `SAFETY` comment; the element-sized alignment that `vld1q`/`vst1q` need is the
//! alignment of the arrays' own element type, so `strict-align` targets are fine.
//!
//! Main loops work on whole vectors (bitset kernels unrolled to 4 vectors = 16 words); the
//! remainder goes to the inlined scalar reference. Logits are selected with `vbsl`, bit for
//! bit, so results are identical to [`crate::scalar`]. There is no gather instruction, so
//! `apply_mask_sparse_f32` is the scalar reference.

use crate::scalar;
use core::arch::aarch64::{
    float32x4_t, uint16x8_t, uint32x4_t, vaddq_u8, vaddvq_u64, vandq_u32, vbicq_u32, vbslq_f32,
    vbslq_u16, vcntq_u8, vdupq_n_f32, vdupq_n_u8, vdupq_n_u16, vdupq_n_u32, vdupq_n_u64, vld1q_f32,
    vld1q_u16, vld1q_u32, vmaxvq_u32, vorrq_u32, vpadalq_u32, vpaddlq_u8, vpaddlq_u16,
    vreinterpretq_u8_u32, vst1q_f32, vst1q_u16, vst1q_u32, vtstq_u16, vtstq_u32,
};

/// Proof that the running CPU supports NEON; its methods run the kernels of this module.
#[derive(Clone, Copy, Debug)]
pub struct Neon {
    _private: (),
}

impl Neon {
    /// Whether NEON can be used: the build's target features (on by default for aarch64),
    /// else run-time detection with `std`, and `false` under Miri.
    #[inline]
    pub fn is_available() -> bool {
        if cfg!(miri) {
            return false;
        }
        #[cfg(all(not(target_feature = "neon"), feature = "std", not(miri)))]
        if std::arch::is_aarch64_feature_detected!("neon") {
            return true;
        }
        cfg!(target_feature = "neon")
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

    /// A token without checking, for builds without `target_feature = "neon"` that know
    /// their CPU has it.
    ///
    /// # Safety
    /// 1. The CPU that runs the token's methods supports NEON.
    #[inline]
    pub unsafe fn new_unchecked() -> Neon {
        #[cfg(all(feature = "std", not(miri)))]
        debug_assert!(std::arch::is_aarch64_feature_detected!("neon"));
        Neon { _private: () }
    }
}

token_methods!(Neon, unsafe);

// ---- loads and stores: the only pointer operations ----

#[target_feature(enable = "neon")]
#[inline]
fn load(words: &[u32; 4]) -> uint32x4_t {
    // SAFETY: (1) `words` is 16 readable bytes; (2) it is aligned for `u32`, all `vld1q_u32`
    // needs.
    unsafe { vld1q_u32(words.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
fn store(words: &mut [u32; 4], v: uint32x4_t) {
    // SAFETY: (1) `words` is 16 writable bytes, borrowed exclusively; (2) it is aligned for
    // `u32`, all `vst1q_u32` needs.
    unsafe { vst1q_u32(words.as_mut_ptr(), v) }
}

#[target_feature(enable = "neon")]
#[inline]
fn load_f32(logits: &[f32; 4]) -> float32x4_t {
    // SAFETY: (1) `logits` is 16 readable bytes; (2) it is aligned for `f32`, all
    // `vld1q_f32` needs.
    unsafe { vld1q_f32(logits.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
fn store_f32(logits: &mut [f32; 4], v: float32x4_t) {
    // SAFETY: (1) `logits` is 16 writable bytes, borrowed exclusively; (2) it is aligned for
    // `f32`, all `vst1q_f32` needs.
    unsafe { vst1q_f32(logits.as_mut_ptr(), v) }
}

#[target_feature(enable = "neon")]
#[inline]
fn load16(logits: &[u16; 8]) -> uint16x8_t {
    // SAFETY: (1) `logits` is 16 readable bytes; (2) it is aligned for `u16`, all
    // `vld1q_u16` needs.
    unsafe { vld1q_u16(logits.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
fn store16(logits: &mut [u16; 8], v: uint16x8_t) {
    // SAFETY: (1) `logits` is 16 writable bytes, borrowed exclusively; (2) it is aligned for
    // `u16`, all `vst1q_u16` needs.
    unsafe { vst1q_u16(logits.as_mut_ptr(), v) }
}

// ---- bitset kernels ----

/// `dst[i] = op(dst[i], src[i])` over the shorter slice, 16 words per iteration.
#[target_feature(enable = "neon")]
#[inline]
fn binop(
    dst: &mut [u32],
    src: &[u32],
    op: impl Fn(uint32x4_t, uint32x4_t) -> uint32x4_t,
    tail: fn(&mut [u32], &[u32]),
) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    let (dst_blocks, _) = dst.as_chunks_mut::<16>();
    let (src_blocks, _) = src.as_chunks::<16>();
    for (d, s) in dst_blocks.iter_mut().zip(src_blocks) {
        let (d, _) = d.as_chunks_mut::<4>();
        let (s, _) = s.as_chunks::<4>();
        for (d, s) in d.iter_mut().zip(s) {
            store(d, op(load(d), load(s)));
        }
    }
    let done = n / 16 * 16;
    let (dst, src) = (&mut dst[done..], &src[done..]);
    let (dst_vecs, _) = dst.as_chunks_mut::<4>();
    let (src_vecs, _) = src.as_chunks::<4>();
    for (d, s) in dst_vecs.iter_mut().zip(src_vecs) {
        store(d, op(load(d), load(s)));
    }
    let done = dst.len() / 4 * 4;
    tail(&mut dst[done..], &src[done..]);
}

#[target_feature(enable = "neon")]
fn or_into(dst: &mut [u32], src: &[u32]) {
    binop(dst, src, |d, s| vorrq_u32(d, s), scalar::or_into);
}

#[target_feature(enable = "neon")]
fn and_into(dst: &mut [u32], src: &[u32]) {
    binop(dst, src, |d, s| vandq_u32(d, s), scalar::and_into);
}

#[target_feature(enable = "neon")]
fn andnot_into(dst: &mut [u32], src: &[u32]) {
    // `vbic(a, b)` is `a & !b`.
    binop(dst, src, |d, s| vbicq_u32(d, s), scalar::andnot_into);
}

#[target_feature(enable = "neon")]
fn popcount(words: &[u32]) -> u64 {
    // Two u64 lanes of partial sums, widened once per 4-vector block.
    let mut acc = vdupq_n_u64(0);
    let (vecs, rest) = words.as_chunks::<4>();
    for block in vecs.chunks(4) {
        // Per byte at most 4 * 8 = 32: no u8 overflow before the pairwise widening.
        let mut bytes = vdupq_n_u8(0);
        for v in block {
            bytes = vaddq_u8(bytes, vcntq_u8(vreinterpretq_u8_u32(load(v))));
        }
        acc = vpadalq_u32(acc, vpaddlq_u16(vpaddlq_u8(bytes)));
    }
    vaddvq_u64(acc) + scalar::popcount(rest)
}

#[target_feature(enable = "neon")]
fn single_set_bit(words: &[u32]) -> Option<usize> {
    let mut found = None;
    let (blocks, rest) = words.as_chunks::<16>();
    for (i, block) in blocks.iter().enumerate() {
        let (v, _) = block.as_chunks::<4>();
        let any = vorrq_u32(
            vorrq_u32(load(&v[0]), load(&v[1])),
            vorrq_u32(load(&v[2]), load(&v[3])),
        );
        if vmaxvq_u32(any) != 0 {
            found = scalar::single_bit_step(found, i * 16, block)?;
        }
    }
    scalar::single_bit_step(found, blocks.len() * 16, rest)?
}

// ---- dense mask application ----

#[target_feature(enable = "neon")]
fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    let neg_inf = vdupq_n_f32(f32::NEG_INFINITY);
    // `bits[k]` holds bit `4k + lane` in each lane: the bits of the 4 logits of vector `k`.
    let bits: [uint32x4_t; 8] = core::array::from_fn(|k| {
        let lanes: [u32; 4] = core::array::from_fn(|lane| 1 << (4 * k + lane));
        load(&lanes)
    });
    let (chunks, _) = logits.as_chunks_mut::<32>();
    let n = chunks.len().min(mask.len());
    for (chunk, &word) in chunks[..n].iter_mut().zip(mask) {
        if word == u32::MAX {
            continue;
        }
        let (vecs, _) = chunk.as_chunks_mut::<4>();
        if word == 0 {
            for v in vecs {
                store_f32(v, neg_inf);
            }
            continue;
        }
        let w = vdupq_n_u32(word);
        for (v, &b) in vecs.iter_mut().zip(&bits) {
            store_f32(v, vbslq_f32(vtstq_u32(w, b), load_f32(v), neg_inf));
        }
    }
    scalar::apply_mask_f32(&mut logits[n * 32..], &mask[n..]);
}

#[target_feature(enable = "neon")]
fn apply_mask_f32_batch(logits: &mut [f32], row_len: usize, masks: &[u32], mask_words: usize) {
    scalar::for_each_row(logits, row_len, masks, mask_words, |row, mask| {
        apply_mask_f32(row, mask)
    });
}

/// Dense masking of 16-bit logits: `neg_inf` is the format's `-inf` bit pattern.
#[target_feature(enable = "neon")]
#[inline]
fn apply_mask_u16(logits: &mut [u16], mask: &[u32], neg_inf: u16) {
    let neg_inf_v = vdupq_n_u16(neg_inf);
    // `bits[k]` holds bit `8k + lane` of a half word in each lane.
    let bits: [uint16x8_t; 2] = core::array::from_fn(|k| {
        let lanes: [u16; 8] = core::array::from_fn(|lane| 1 << (8 * k + lane));
        load16(&lanes)
    });
    let (chunks, _) = logits.as_chunks_mut::<32>();
    let n = chunks.len().min(mask.len());
    for (chunk, &word) in chunks[..n].iter_mut().zip(mask) {
        if word == u32::MAX {
            continue;
        }
        let (vecs, _) = chunk.as_chunks_mut::<8>();
        if word == 0 {
            for v in vecs {
                store16(v, neg_inf_v);
            }
            continue;
        }
        // Vectors 0, 1 take the low half word, 2, 3 the high one.
        let halves = [vdupq_n_u16(word as u16), vdupq_n_u16((word >> 16) as u16)];
        for (i, v) in vecs.iter_mut().enumerate() {
            let allowed = vtstq_u16(halves[i / 2], bits[i % 2]);
            store16(v, vbslq_u16(allowed, load16(v), neg_inf_v));
        }
    }
    let (logits, mask) = (&mut logits[n * 32..], &mask[n..]);
    if neg_inf == crate::F16_NEG_INFINITY {
        scalar::apply_mask_f16(logits, mask);
    } else {
        scalar::apply_mask_bf16(logits, mask);
    }
}

#[target_feature(enable = "neon")]
fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    apply_mask_u16(logits, mask, crate::F16_NEG_INFINITY);
}

#[target_feature(enable = "neon")]
fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    apply_mask_u16(logits, mask, crate::BF16_NEG_INFINITY);
}

// ---- sparse mask application ----

/// Scalar: NEON has no gather, and a lane-by-lane emulation does not beat the scalar loop.
#[target_feature(enable = "neon")]
fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    scalar::apply_mask_sparse_f32(logits, candidate_ids, mask);
}
