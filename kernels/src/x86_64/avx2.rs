//! AVX2 kernels: 256-bit vectors, `W` = 8 mask words (or 8 `f32` / 16 `u16` logits).
//!
//! Every kernel is a safe `#[target_feature(enable = "avx2")]` function; code compiled
//! without AVX2 reaches them only through an [`Avx2`] token, whose existence proves the CPU
//! has AVX2 (detected once and cached with `std`, `cfg(target_feature)` without it, never
//! under Miri). The only other `unsafe` is unaligned loads and stores of fixed-size arrays and
//! one masked gather, each behind a small helper with its own `SAFETY` comment.
//!
//! Main loops work on whole vectors (bitset kernels unrolled to 4 vectors = 32 words, with
//! `dst` aligned to 32 bytes first, see `binop`); the remainder goes to the scalar reference,
//! which is inlined here and so also compiled with AVX2. Logits are selected with
//! `vpblendvb`/`vblendvps`, bit for bit, never with float arithmetic, so the results are
//! identical to [`crate::scalar`].

use crate::scalar;
use core::arch::x86_64::{
    __m256, __m256i, _mm256_add_epi8, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256,
    _mm256_blendv_epi8, _mm256_blendv_ps, _mm256_castsi256_ps, _mm256_cmpeq_epi16,
    _mm256_cmpeq_epi32, _mm256_cmpgt_epi32, _mm256_extract_epi64, _mm256_loadu_ps,
    _mm256_loadu_si256, _mm256_mask_i32gather_epi32, _mm256_or_si256, _mm256_permute2x128_si256,
    _mm256_sad_epu8, _mm256_set1_epi8, _mm256_set1_epi16, _mm256_set1_epi32, _mm256_set1_ps,
    _mm256_setr_epi8, _mm256_setr_epi16, _mm256_setr_epi32, _mm256_setzero_si256,
    _mm256_shuffle_epi8, _mm256_srli_epi16, _mm256_srli_epi32, _mm256_srlv_epi32, _mm256_storeu_ps,
    _mm256_storeu_si256, _mm256_testz_si256,
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

token_methods!(Avx2, unsafe);

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

/// `dst[i] = op(dst[i], src[i])` over the shorter slice, 32 words per iteration, with the
/// scalar `tail` for the words outside whole vectors.
///
/// Addresses, not instruction count, limit these loops (two loads and one store per vector),
/// so the loop adapts to where the rows are:
/// - A 32-byte access that crosses a 64-byte cache line takes two load or store slots. So
///   `tail` first handles up to 7 words until `dst` is 32-byte aligned; every load and store
///   of `dst` is then aligned. `src` is then read with plain loads if it is aligned too, with
///   aligned loads and one `vperm2i128` per vector if it is 16 bytes off (the usual case for
///   two `Vec`s: the allocator aligns to 16; [`binop_shifted`]), and with unaligned loads
///   otherwise (a row sliced at a word offset that is not a multiple of 4).
/// - A load whose address matches a pending store's modulo 4 KiB waits for it ("4K
///   aliasing"). Going forward, that happens when `dst` is a little past `src` modulo 4 KiB,
///   which is what two back-to-back allocations of a multiple of 4 KiB give (a 128k-token
///   mask is 16 KiB). Then the loop runs backward, where the pending stores sit above the
///   loads.
///
/// 2026-11-23, Xeon @ 2.80 GHz (Ice Lake), a standalone timing loop (minimum of 40 batches)
/// of OR over 4k words (both rows in L1), `src` 16 bytes off a 32-byte boundary and `dst` 48
/// to 272 bytes past it modulo 4 KiB: 385 to 640 ns with the previous loop (unaligned,
/// forward), 290 ns with aligned `dst` and shifted `src` going forward, 165 ns going backward.
/// A 16 KB `memcpy` took 150 to 155 ns. Over 8k words (L2), for all placements tried:
/// 1.0 to 1.5 µs before, 0.67 to 0.84 µs after, `memcpy` 0.72 to 0.81 µs. Criterion runs
/// are in `bench/perf.md`.
#[target_feature(enable = "avx2")]
#[inline]
fn binop(
    dst: &mut [u32],
    src: &[u32],
    op: impl Fn(__m256i, __m256i) -> __m256i + Copy,
    tail: impl Fn(&mut [u32], &[u32]) + Copy,
) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    // `align_offset` may answer `usize::MAX` ("cannot align"); `min` turns that into "all
    // scalar", which is correct, only slow.
    let head = dst.as_ptr().align_offset(32).min(n);
    let (dst_head, dst) = dst.split_at_mut(head);
    let (src_head, src) = src.split_at(head);
    tail(dst_head, src_head);
    // How far `dst` is past `src` modulo 4 KiB. Forward was slow from 48 to about 528 bytes;
    // backward mirrors that, so split the circle in half.
    let ahead = dst.as_ptr().addr().wrapping_sub(src.as_ptr().addr()) % 4096;
    let backward = (1..2048).contains(&ahead);
    // 4 words = 16 bytes to the next 32-byte boundary.
    if src.as_ptr().align_offset(32) == 4 {
        binop_shifted(dst, src, backward, op, tail);
    } else {
        binop_direct(dst, src, backward, op, tail);
    }
}

/// The four vectors of a 32-word block of `dst` and of `src`, paired.
#[inline]
fn vectors<'a>(
    dst: &'a mut [u32; 32],
    src: &'a [u32; 32],
) -> impl DoubleEndedIterator<Item = (&'a mut [u32; 8], &'a [u32; 8])> {
    let (d, _) = dst.as_chunks_mut::<8>();
    let (s, _) = src.as_chunks::<8>();
    d.iter_mut().zip(s)
}

/// [`binop`] with plain loads of `src`, in the given direction; `dst` and `src` have the
/// same length.
#[target_feature(enable = "avx2")]
#[inline]
fn binop_direct(
    dst: &mut [u32],
    src: &[u32],
    backward: bool,
    op: impl Fn(__m256i, __m256i) -> __m256i,
    tail: impl Fn(&mut [u32], &[u32]),
) {
    let step = |d: &mut [u32; 8], s: &[u32; 8]| store(d, op(load(d), load(s)));
    let (dst_blocks, _) = dst.as_chunks_mut::<32>();
    let (src_blocks, _) = src.as_chunks::<32>();
    let blocks = dst_blocks.iter_mut().zip(src_blocks);
    if backward {
        for (d, s) in blocks.rev() {
            for (d, s) in vectors(d, s).rev() {
                step(d, s);
            }
        }
    } else {
        for (d, s) in blocks {
            for (d, s) in vectors(d, s) {
                step(d, s);
            }
        }
    }
    let done = dst.len().min(src.len()) / 32 * 32;
    let (dst, src) = (&mut dst[done..], &src[done..]);
    let (dst_vecs, _) = dst.as_chunks_mut::<8>();
    let (src_vecs, _) = src.as_chunks::<8>();
    for (d, s) in dst_vecs.iter_mut().zip(src_vecs) {
        step(d, s);
    }
    let done = dst.len().min(src.len()) / 8 * 8;
    tail(&mut dst[done..], &src[done..]);
}

/// [`binop`] for `src` 16 bytes (4 words) past a 32-byte boundary and `dst` on one: `dst`
/// and `src` have the same length.
///
/// Let `A(j)` be the aligned vector `src[4 + 8j..][..8]`. Vector `k` of `dst[8..]`, that is
/// `dst[8 + 8k..][..8]`, needs the high half of `A(k)` and the low half of `A(k + 1)`, so
/// each `A(j)` is loaded once and joined to its neighbour by one `vperm2i128`. The first
/// vector of `dst` uses an unaligned load, and the words after the last whole block with an
/// `A` above it go to [`binop_direct`]; no load leaves `src`.
#[target_feature(enable = "avx2")]
#[inline]
fn binop_shifted(
    dst: &mut [u32],
    src: &[u32],
    backward: bool,
    op: impl Fn(__m256i, __m256i) -> __m256i + Copy,
    tail: impl Fn(&mut [u32], &[u32]) + Copy,
) {
    // `src_first` is `src[..8]`, `src_aligned` is `src[4..]` (`A(0)` on), and `src_rest` is
    // `src[12..]` (`A(1)` on).
    let (
        Some((dst_first, dst_rest)),
        Some((src_first, _)),
        Some((_, src_aligned)),
        Some((_, src_rest)),
    ) = (
        dst.split_first_chunk_mut::<8>(),
        src.split_first_chunk::<8>(),
        src.split_first_chunk::<4>(),
        src.split_first_chunk::<12>(),
    )
    else {
        return binop_direct(dst, src, backward, op, tail);
    };
    let Some(a0) = src_aligned.first_chunk::<8>() else {
        return binop_direct(dst, src, backward, op, tail);
    };
    store(dst_first, op(load(dst_first), load(src_first)));
    // Block `b` is `dst[8 + 32b..][..32]` (vectors `4b..4b + 4` of `dst[8..]`); it needs
    // `A(4b..=4b + 4)`, that is `src_aligned` block `b` plus the first vector of the next, or
    // `src_rest` block `b` plus the last vector of the previous.
    let (dst_blocks, _) = dst_rest.as_chunks_mut::<32>();
    let (src_blocks, _) = src_rest.as_chunks::<32>();
    let (aligned_blocks, _) = src_aligned.as_chunks::<32>();
    let blocks = dst_blocks.len().min(src_blocks.len());
    // [high half of `lo`, low half of `hi`]: the 8 words of `src` under `d`.
    let step = |d: &mut [u32; 8], lo: __m256i, hi: __m256i| {
        store(d, op(load(d), _mm256_permute2x128_si256::<0x21>(lo, hi)));
    };
    if backward {
        // `upper` is `A(4 * blocks)`, the last vector of `src_rest` block `blocks - 1`.
        if let Some(last) = src_blocks[..blocks].last() {
            let (last, _) = last.as_chunks::<8>();
            if let Some(last) = last.last() {
                let mut upper = load(last);
                let pairs = dst_blocks[..blocks].iter_mut().zip(aligned_blocks);
                for (d, s) in pairs.rev() {
                    for (d, s) in vectors(d, s).rev() {
                        let lower = load(s);
                        step(d, lower, upper);
                        upper = lower;
                    }
                }
            }
        }
    } else {
        let mut prev = load(a0);
        for (d, s) in dst_blocks.iter_mut().zip(src_blocks) {
            for (d, s) in vectors(d, s) {
                let next = load(s);
                step(d, prev, next);
                prev = next;
            }
        }
    }
    let done = 32 * blocks;
    binop_direct(&mut dst_rest[done..], &src[8 + done..], backward, op, tail);
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
