//! AVX2 kernels: 256-bit vectors, `W` = 8 mask words (or 8 `f32` / 16 `u16` logits).
//!
//! Every kernel is a safe `#[target_feature(enable = "avx2")]` function; code compiled
//! without AVX2 reaches them only through an [`Avx2`] token, whose existence proves the CPU
//! has AVX2 (detected once and cached with `std`, `cfg(target_feature)` without it, never
//! under Miri). The only other `unsafe` is unaligned loads and stores of fixed-size arrays and
//! one masked gather, each behind a small helper with its own `SAFETY` comment.
//!
//! Main loops work on whole vectors (bitset kernels unrolled to 4 vectors = 32 words); the
//! remainder goes to the scalar reference, which is inlined here and so also compiled with
//! AVX2. Logits are selected with `vpblendvb`/`vblendvps`, bit for bit, never with float
//! arithmetic, so the results are identical to [`crate::scalar`].

use crate::scalar;
use core::arch::x86_64::{
    __m256, __m256i, _mm256_add_epi8, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256,
    _mm256_blendv_epi8, _mm256_blendv_ps, _mm256_castsi256_ps, _mm256_cmpeq_epi16,
    _mm256_cmpeq_epi32, _mm256_cmpgt_epi32, _mm256_extract_epi64, _mm256_loadu_ps,
    _mm256_loadu_si256, _mm256_mask_i32gather_epi32, _mm256_or_si256, _mm256_sad_epu8,
    _mm256_set1_epi8, _mm256_set1_epi16, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi8,
    _mm256_setr_epi16, _mm256_setr_epi32, _mm256_setzero_si256, _mm256_shuffle_epi8,
    _mm256_srli_epi16, _mm256_srli_epi32, _mm256_srlv_epi32, _mm256_storeu_ps, _mm256_storeu_si256,
    _mm256_testz_si256,
};

/// Proof that the running CPU supports AVX2; its methods run the kernels of this module.
#[derive(Clone, Copy, Debug)]
pub struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// Whether AVX2 can be used: run-time detection (cached) with `std`, the build's target
    /// features without it, and `false` under Miri.
    #[inline]
    pub fn is_available() -> bool {
        detect::avx2()
    }

    /// A token if [`Avx2::is_available`].
    #[inline]
    pub fn new() -> Option<Avx2> {
        if Avx2::is_available() {
            Some(Avx2 { _private: () })
        } else {
            None
        }
    }

    /// A token without checking, for `no_std` callers that know their CPU better than the
    /// build's target features do.
    ///
    /// # Safety
    /// 1. The CPU that runs the token's methods supports AVX2.
    #[inline]
    pub unsafe fn new_unchecked() -> Avx2 {
        #[cfg(all(feature = "std", not(miri)))]
        debug_assert!(std::is_x86_feature_detected!("avx2"));
        Avx2 { _private: () }
    }
}

token_methods!(Avx2);

#[cfg(all(feature = "std", not(miri)))]
mod detect {
    use core::sync::atomic::{AtomicU8, Ordering};

    const UNKNOWN: u8 = 0;
    const NO: u8 = 1;
    const YES: u8 = 2;

    /// The cached answer; a race only makes two threads detect and store the same value.
    static AVX2: AtomicU8 = AtomicU8::new(UNKNOWN);

    #[inline]
    pub(super) fn avx2() -> bool {
        if cfg!(target_feature = "avx2") {
            return true;
        }
        match AVX2.load(Ordering::Relaxed) {
            YES => true,
            NO => false,
            _ => detect_now(),
        }
    }

    #[cold]
    fn detect_now() -> bool {
        let yes = std::is_x86_feature_detected!("avx2");
        AVX2.store(if yes { YES } else { NO }, Ordering::Relaxed);
        yes
    }
}

#[cfg(all(not(feature = "std"), not(miri)))]
mod detect {
    #[inline]
    pub(super) fn avx2() -> bool {
        cfg!(target_feature = "avx2")
    }
}

#[cfg(miri)]
mod detect {
    #[inline]
    pub(super) fn avx2() -> bool {
        false
    }
}

// ---- loads and stores: the only pointer operations besides the gather ----

#[target_feature(enable = "avx2")]
#[inline]
fn load(words: &[u32; 8]) -> __m256i {
    // SAFETY: (1) `words` is 32 readable bytes; (2) `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn store(words: &mut [u32; 8], v: __m256i) {
    // SAFETY: (1) `words` is 32 writable bytes, borrowed exclusively; (2) `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), v) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn load_ps(logits: &[f32; 8]) -> __m256 {
    // SAFETY: (1) `logits` is 32 readable bytes; (2) `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_ps(logits.as_ptr()) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn store_ps(logits: &mut [f32; 8], v: __m256) {
    // SAFETY: (1) `logits` is 32 writable bytes, borrowed exclusively; (2) `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_ps(logits.as_mut_ptr(), v) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn load16(logits: &[u16; 16]) -> __m256i {
    // SAFETY: (1) `logits` is 32 readable bytes; (2) `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(logits.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn store16(logits: &mut [u16; 16], v: __m256i) {
    // SAFETY: (1) `logits` is 32 writable bytes, borrowed exclusively; (2) `storeu` has no
    // alignment requirement.
    unsafe { _mm256_storeu_si256(logits.as_mut_ptr().cast(), v) }
}

// ---- bitset kernels ----

/// `dst[i] = op(dst[i], src[i])` over the shorter slice, 32 words per iteration.
#[target_feature(enable = "avx2")]
#[inline]
fn binop(
    dst: &mut [u32],
    src: &[u32],
    op: impl Fn(__m256i, __m256i) -> __m256i,
    tail: fn(&mut [u32], &[u32]),
) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    let (dst_blocks, _) = dst.as_chunks_mut::<32>();
    let (src_blocks, _) = src.as_chunks::<32>();
    for (d, s) in dst_blocks.iter_mut().zip(src_blocks) {
        let (d, _) = d.as_chunks_mut::<8>();
        let (s, _) = s.as_chunks::<8>();
        for (d, s) in d.iter_mut().zip(s) {
            store(d, op(load(d), load(s)));
        }
    }
    let done = n / 32 * 32;
    let (dst, src) = (&mut dst[done..], &src[done..]);
    let (dst_vecs, _) = dst.as_chunks_mut::<8>();
    let (src_vecs, _) = src.as_chunks::<8>();
    for (d, s) in dst_vecs.iter_mut().zip(src_vecs) {
        store(d, op(load(d), load(s)));
    }
    let done = dst.len() / 8 * 8;
    tail(&mut dst[done..], &src[done..]);
}

#[target_feature(enable = "avx2")]
fn or_into(dst: &mut [u32], src: &[u32]) {
    binop(dst, src, |d, s| _mm256_or_si256(d, s), scalar::or_into);
}

#[target_feature(enable = "avx2")]
fn and_into(dst: &mut [u32], src: &[u32]) {
    binop(dst, src, |d, s| _mm256_and_si256(d, s), scalar::and_into);
}

#[target_feature(enable = "avx2")]
fn andnot_into(dst: &mut [u32], src: &[u32]) {
    // `andnot(a, b)` is `!a & b`.
    binop(
        dst,
        src,
        |d, s| _mm256_andnot_si256(s, d),
        scalar::andnot_into,
    );
}

/// Per-byte popcounts of `v` (each 0..=8), by the nibble lookup of Muła et al.
#[target_feature(enable = "avx2")]
#[inline]
fn byte_counts(v: __m256i) -> __m256i {
    let lut = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, //
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
    );
    let nibble = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(v, nibble);
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), nibble);
    _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
}

#[target_feature(enable = "avx2")]
fn popcount(words: &[u32]) -> u64 {
    let zero = _mm256_setzero_si256();
    // Four u64 lanes of partial sums; a 4-vector block adds at most 4 * 8 * 32 to each.
    let mut acc = zero;
    let (blocks, rest) = words.as_chunks::<32>();
    for block in blocks {
        let (v, _) = block.as_chunks::<8>();
        // Per byte at most 4 * 8 = 32: no u8 overflow before the `sad` widens to u64.
        let a = _mm256_add_epi8(byte_counts(load(&v[0])), byte_counts(load(&v[1])));
        let b = _mm256_add_epi8(byte_counts(load(&v[2])), byte_counts(load(&v[3])));
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_add_epi8(a, b), zero));
    }
    let (vecs, rest) = rest.as_chunks::<8>();
    for v in vecs {
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(byte_counts(load(v)), zero));
    }
    let lanes = [
        _mm256_extract_epi64::<0>(acc),
        _mm256_extract_epi64::<1>(acc),
        _mm256_extract_epi64::<2>(acc),
        _mm256_extract_epi64::<3>(acc),
    ];
    // Each lane is a non-negative count far below 2^63, so `as u64` is exact.
    lanes.iter().map(|&l| l as u64).sum::<u64>() + scalar::popcount(rest)
}

#[target_feature(enable = "avx2")]
fn single_set_bit(words: &[u32]) -> Option<usize> {
    let mut found = None;
    let (blocks, rest) = words.as_chunks::<32>();
    for (i, block) in blocks.iter().enumerate() {
        let (v, _) = block.as_chunks::<8>();
        let any = _mm256_or_si256(
            _mm256_or_si256(load(&v[0]), load(&v[1])),
            _mm256_or_si256(load(&v[2]), load(&v[3])),
        );
        if _mm256_testz_si256(any, any) == 0 {
            found = scalar::single_bit_step(found, i * 32, block)?;
        }
    }
    scalar::single_bit_step(found, blocks.len() * 32, rest)?
}

// ---- dense mask application ----

#[target_feature(enable = "avx2")]
fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    let neg_inf = _mm256_set1_ps(f32::NEG_INFINITY);
    // `bits[k]` holds bit `8k + lane` in each lane: the bits of the 8 logits of vector `k`.
    let bits: [__m256i; 4] = core::array::from_fn(|k| {
        let b = |lane: u32| (1u32 << (8 * k as u32 + lane)) as i32;
        _mm256_setr_epi32(b(0), b(1), b(2), b(3), b(4), b(5), b(6), b(7))
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
                store_ps(v, neg_inf);
            }
            continue;
        }
        let w = _mm256_set1_epi32(word as i32);
        for (v, &b) in vecs.iter_mut().zip(&bits) {
            let allowed = _mm256_cmpeq_epi32(_mm256_and_si256(w, b), b);
            store_ps(
                v,
                _mm256_blendv_ps(neg_inf, load_ps(v), _mm256_castsi256_ps(allowed)),
            );
        }
    }
    scalar::apply_mask_f32(&mut logits[n * 32..], &mask[n..]);
}

#[target_feature(enable = "avx2")]
fn apply_mask_f32_batch(logits: &mut [f32], row_len: usize, masks: &[u32], mask_words: usize) {
    scalar::for_each_row(logits, row_len, masks, mask_words, |row, mask| {
        apply_mask_f32(row, mask)
    });
}

/// Dense masking of 16-bit logits: `neg_inf` is the format's `-inf` bit pattern.
#[target_feature(enable = "avx2")]
#[inline]
fn apply_mask_u16(logits: &mut [u16], mask: &[u32], neg_inf: u16) {
    let neg_inf_v = _mm256_set1_epi16(neg_inf as i16);
    // Lane `l` holds bit `l` of a half word.
    let b = |lane: u32| (1u32 << lane) as u16 as i16;
    let bits = _mm256_setr_epi16(
        b(0),
        b(1),
        b(2),
        b(3),
        b(4),
        b(5),
        b(6),
        b(7),
        b(8),
        b(9),
        b(10),
        b(11),
        b(12),
        b(13),
        b(14),
        b(15),
    );
    let (chunks, _) = logits.as_chunks_mut::<32>();
    let n = chunks.len().min(mask.len());
    for (chunk, &word) in chunks[..n].iter_mut().zip(mask) {
        if word == u32::MAX {
            continue;
        }
        let (vecs, _) = chunk.as_chunks_mut::<16>();
        if word == 0 {
            for v in vecs {
                store16(v, neg_inf_v);
            }
            continue;
        }
        let halves = [word as u16, (word >> 16) as u16];
        for (v, half) in vecs.iter_mut().zip(halves) {
            let h = _mm256_set1_epi16(half as i16);
            let allowed = _mm256_cmpeq_epi16(_mm256_and_si256(h, bits), bits);
            store16(v, _mm256_blendv_epi8(neg_inf_v, load16(v), allowed));
        }
    }
    let (logits, mask) = (&mut logits[n * 32..], &mask[n..]);
    if neg_inf == crate::F16_NEG_INFINITY {
        scalar::apply_mask_f16(logits, mask);
    } else {
        scalar::apply_mask_bf16(logits, mask);
    }
}

#[target_feature(enable = "avx2")]
fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    apply_mask_u16(logits, mask, crate::F16_NEG_INFINITY);
}

#[target_feature(enable = "avx2")]
fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    apply_mask_u16(logits, mask, crate::BF16_NEG_INFINITY);
}

// ---- sparse mask application ----

#[target_feature(enable = "avx2")]
fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    let n = logits.len().min(candidate_ids.len());
    let (logit_vecs, _) = logits[..n].as_chunks_mut::<8>();
    let (id_vecs, _) = candidate_ids[..n].as_chunks::<8>();
    let neg_inf = _mm256_set1_ps(f32::NEG_INFINITY);
    let zero = _mm256_setzero_si256();
    let one = _mm256_set1_epi32(1);
    let low5 = _mm256_set1_epi32(31);
    // Word indices are `id >> 5 < 2^27`, so a signed compare against the length (clamped to
    // `i32::MAX`) is exact.
    let words_len = _mm256_set1_epi32(mask.len().min(i32::MAX as usize) as i32);
    for (v, ids) in logit_vecs.iter_mut().zip(id_vecs) {
        let ids = load(ids);
        let word_idx = _mm256_srli_epi32::<5>(ids);
        let in_mask = _mm256_cmpgt_epi32(words_len, word_idx);
        // SAFETY: (1) the gather reads `mask[word_idx[l]]` only for lanes `l` whose `in_mask`
        // lane is all ones, that is `word_idx[l] < mask.len()`: in bounds; (2) masked-off
        // lanes are not accessed (they take `zero`), so an empty `mask` reads nothing;
        // (3) the pointer is valid for reads of `u32`, which has the alignment of `i32`.
        let words = unsafe {
            _mm256_mask_i32gather_epi32::<4>(zero, mask.as_ptr().cast(), word_idx, in_mask)
        };
        let bit = _mm256_and_si256(_mm256_srlv_epi32(words, _mm256_and_si256(ids, low5)), one);
        let allowed = _mm256_cmpeq_epi32(bit, one);
        store_ps(
            v,
            _mm256_blendv_ps(neg_inf, load_ps(v), _mm256_castsi256_ps(allowed)),
        );
    }
    let done = n / 8 * 8;
    scalar::apply_mask_sparse_f32(&mut logits[done..], &candidate_ids[done..], mask);
}
