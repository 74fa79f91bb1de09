//! Differential tests.
//!
//! - Every available level against naive bit-by-bit loops, for random slice lengths 0..200
//!   at every starting offset 0..8.
//! - Every available vector level against [`crate::scalar`], exhaustively for every length
//!   0..=4W+3 (W = 8 words, the widest level, which also covers NEON's W = 4) at every offset
//!   0..8 of a larger buffer, with proptest choosing the contents. Logits include NaNs (quiet,
//!   signaling, with payloads), infinities, `-0.0` and subnormals; results must be
//!   bit-identical.
//! - The bitset operations also at every 4-byte position of both rows in a cache line, with
//!   the rows' distance modulo 4 KiB fixed (`binops_every_alignment`).

use crate::{BF16_NEG_INFINITY, F16_NEG_INFINITY, Kernel, scalar};
use proptest::prelude::*;
use std::vec::Vec;

/// Every level that can run here, scalar included.
fn levels() -> Vec<Kernel> {
    Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available())
        .collect()
}

/// Every vector level that can run here (compared against scalar).
fn vector_levels() -> Vec<Kernel> {
    levels()
        .into_iter()
        .filter(|&k| k != Kernel::Scalar)
        .collect()
}

/// A kernel method taking `(dst or logits, mask or src)`, and its scalar reference.
type LevelOp<T> = fn(Kernel, &mut [T], &[u32]);
type ScalarOp<T> = fn(&mut [T], &[u32]);

/// The widest vector, in words.
const W: usize = 8;
/// The longest exhaustively tested slice, in words: 4 vectors (one unrolled block) plus 3.
const MAX_WORDS: usize = 4 * W + 3;
/// Starting offsets tested inside a larger buffer.
const OFFSETS: usize = 8;

fn bit(words: &[u32], i: usize) -> bool {
    (words[i / 32] >> (i % 32)) & 1 == 1
}

fn allowed(mask: &[u32], i: usize) -> bool {
    i / 32 < mask.len() && bit(mask, i)
}

fn naive_binop(dst: &[u32], src: &[u32], f: fn(bool, bool) -> bool) -> Vec<u32> {
    let mut out = dst.to_vec();
    for i in 0..dst.len().min(src.len()) * 32 {
        let b = f(bit(dst, i), bit(src, i));
        out[i / 32] = (out[i / 32] & !(1 << (i % 32))) | (u32::from(b) << (i % 32));
    }
    out
}

fn naive_popcount(words: &[u32]) -> u64 {
    (0..words.len() * 32).filter(|&i| bit(words, i)).count() as u64
}

fn naive_single(words: &[u32]) -> Option<usize> {
    let set: Vec<usize> = (0..words.len() * 32).filter(|&i| bit(words, i)).collect();
    if set.len() == 1 { Some(set[0]) } else { None }
}

/// Words biased towards the fast-path cases (0, all ones, one bit) and random words.
fn word() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        (0u32..32).prop_map(|b| 1 << b),
        any::<u32>(),
    ]
}

/// Mostly zero words with a few single bits: inputs where `single_set_bit` can succeed.
fn sparse_word() -> impl Strategy<Value = u32> {
    prop_oneof![
        12 => Just(0u32),
        1 => (0u32..32).prop_map(|b| 1 << b),
        1 => any::<u32>(),
    ]
}

/// `f32` bit patterns, biased towards the values a blend must not disturb.
fn logit_bits() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        Just(f32::NAN.to_bits()),
        Just(0x7FC0_1234), // quiet NaN with a payload
        Just(0x7F80_0001), // signaling NaN
        Just(0xFFC0_0000), // negative NaN
        Just(f32::INFINITY.to_bits()),
        Just(f32::NEG_INFINITY.to_bits()),
        Just((-0.0f32).to_bits()),
        Just(0x0000_0001), // smallest subnormal
        Just(1.5f32.to_bits()),
    ]
}

/// 16-bit logit patterns (valid for both f16 and bf16 views), with their specials.
fn logit16() -> impl Strategy<Value = u16> {
    prop_oneof![
        any::<u16>(),
        Just(0x7E00u16), // f16 quiet NaN
        Just(0x7C01),    // f16 signaling NaN
        Just(0x7FC1),    // bf16 NaN with payload
        Just(F16_NEG_INFINITY),
        Just(BF16_NEG_INFINITY),
        Just(0x7C00), // f16 +inf
        Just(0x8000), // -0.0
        Just(0x0001), // subnormal
    ]
}

/// A vector plus an offset into it: the tested slice is `v[off..]`.
fn words_at_offset() -> impl Strategy<Value = (Vec<u32>, usize)> {
    (0usize..8, prop::collection::vec(word(), 0..200)).prop_map(|(off, mut v)| {
        let mut padded = pad(off);
        padded.append(&mut v);
        (padded, off)
    })
}

fn pad(n: usize) -> Vec<u32> {
    (0..n).map(|i| 0xA5A5_0000 | i as u32).collect()
}

/// Mask length for a row of `n` logits, cycling through short, exact and long masks.
fn mask_len_for(n: usize, salt: usize) -> usize {
    let exact = n.div_ceil(32);
    match (n + salt) % 3 {
        0 => exact.saturating_sub(1),
        1 => exact,
        _ => exact + 1,
    }
}

proptest! {
    #[test]
    fn binops_match_naive((dst, doff) in words_at_offset(), (src, soff) in words_at_offset()) {
        for k in levels() {
            let s = &src[soff..];
            let mut d = dst.clone();
            k.or_into(&mut d[doff..], s);
            prop_assert_eq!(&d[doff..], &naive_binop(&dst[doff..], s, |a, b| a | b)[..]);
            prop_assert_eq!(&d[..doff], &dst[..doff]);
            let mut d = dst.clone();
            k.and_into(&mut d[doff..], s);
            prop_assert_eq!(&d[doff..], &naive_binop(&dst[doff..], s, |a, b| a & b)[..]);
            let mut d = dst.clone();
            k.andnot_into(&mut d[doff..], s);
            prop_assert_eq!(&d[doff..], &naive_binop(&dst[doff..], s, |a, b| a & !b)[..]);
        }
    }

    #[test]
    fn counts_match_naive((v, off) in words_at_offset()) {
        for k in levels() {
            prop_assert_eq!(k.popcount(&v[off..]), naive_popcount(&v[off..]));
            prop_assert_eq!(k.single_set_bit(&v[off..]), naive_single(&v[off..]));
        }
    }

    #[test]
    fn single_bit_positions(len in 1usize..200, pos in 0usize..6400) {
        let mut v = std::vec![0u32; len];
        let pos = pos % (len * 32);
        v[pos / 32] |= 1 << (pos % 32);
        for k in levels() {
            prop_assert_eq!(k.single_set_bit(&v), Some(pos));
        }
    }

    #[test]
    fn apply_mask_matches_naive(
        (mask, moff) in words_at_offset(),
        n_logits in 0usize..200 * 32 + 40,
        loff in 0usize..8,
    ) {
        let mask = &mask[moff..];
        let base: Vec<f32> = (0..n_logits + loff).map(|i| i as f32 * 0.25 - 3.0).collect();
        let base16: Vec<u16> = (0..n_logits + loff).map(|i| (i as u16) & 0x7BFF).collect();
        for k in levels() {
            let mut l = base.clone();
            k.apply_mask_f32(&mut l[loff..], mask);
            prop_assert_eq!(&l[..loff], &base[..loff]);
            for i in 0..n_logits {
                let want = if allowed(mask, i) { base[loff + i] } else { f32::NEG_INFINITY };
                prop_assert_eq!(l[loff + i].to_bits(), want.to_bits());
            }
            for (f, inf) in [
                (Kernel::apply_mask_f16 as fn(Kernel, &mut [u16], &[u32]), F16_NEG_INFINITY),
                (Kernel::apply_mask_bf16, BF16_NEG_INFINITY),
            ] {
                let mut l = base16.clone();
                f(k, &mut l[loff..], mask);
                prop_assert_eq!(&l[..loff], &base16[..loff]);
                for i in 0..n_logits {
                    let want = if allowed(mask, i) { base16[loff + i] } else { inf };
                    prop_assert_eq!(l[loff + i], want);
                }
            }
        }
    }

    #[test]
    fn sparse_matches_naive(
        (mask, moff) in words_at_offset(),
        ids in prop::collection::vec(0u32..7000, 0..200),
        n_logits in 0usize..220,
    ) {
        let mask = &mask[moff..];
        let base: Vec<f32> = (0..n_logits).map(|i| i as f32).collect();
        for k in levels() {
            let mut l = base.clone();
            k.apply_mask_sparse_f32(&mut l, &ids, mask);
            for i in 0..n_logits {
                let ok = i < ids.len() && allowed(mask, ids[i] as usize);
                let want = if ok { base[i] } else { f32::NEG_INFINITY };
                prop_assert_eq!(l[i].to_bits(), want.to_bits());
            }
        }
    }
}

proptest! {
    /// The level-independent word kernels against bit-by-bit loops.
    #[test]
    fn word_kernels_match_naive(
        (dst, doff) in words_at_offset(),
        (src, soff) in words_at_offset(),
        ids in prop::collection::vec(0u32..7000, 0..40),
        n_bits in 0usize..7000,
        word in word(),
    ) {
        let (d0, s) = (&dst[doff..], &src[soff..]);
        let mut d = dst.clone();
        crate::copy_into(&mut d[doff..], s);
        let n = d0.len().min(s.len());
        prop_assert_eq!(&d[doff..doff + n], &s[..n]);
        prop_assert_eq!(&d[doff + n..], &d0[n..]);
        prop_assert_eq!(&d[..doff], &dst[..doff]);

        let mut d = dst.clone();
        crate::fill(&mut d[doff..], word);
        prop_assert!(d[doff..].iter().all(|&w| w == word));
        prop_assert_eq!(&d[..doff], &dst[..doff]);

        let mut d = dst.clone();
        crate::fill_prefix(&mut d[doff..], n_bits);
        for i in 0..d0.len() * 32 {
            prop_assert_eq!(bit(&d[doff..], i), i < n_bits, "bit {}", i);
        }

        let mut set = d0.to_vec();
        crate::set_bits(&mut set, &ids);
        let mut cleared = d0.to_vec();
        crate::clear_bits(&mut cleared, &ids);
        for i in 0..d0.len() * 32 {
            let listed = ids.contains(&(i as u32));
            prop_assert_eq!(bit(&set, i), bit(d0, i) || listed);
            prop_assert_eq!(bit(&cleared, i), bit(d0, i) && !listed);
            prop_assert_eq!(crate::test_bit(d0, i as u32), bit(d0, i));
        }
        prop_assert!(!crate::test_bit(d0, (d0.len() * 32) as u32));
        prop_assert!(!crate::test_bit(d0, u32::MAX));
        let mut one = d0.to_vec();
        crate::set_bit(&mut one, u32::MAX);
        crate::clear_bit(&mut one, u32::MAX);
        prop_assert_eq!(&one[..], d0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// OR/AND/AND-NOT: every length 0..=MAX_WORDS at every offset, with `src` shorter, equal
    /// and longer; words outside the slice must be untouched.
    #[test]
    fn binops_vs_scalar(
        dst in prop::collection::vec(word(), MAX_WORDS + 3 + OFFSETS),
        src in prop::collection::vec(word(), MAX_WORDS + 3 + OFFSETS),
    ) {
        let ops: [(LevelOp<u32>, ScalarOp<u32>); 3] = [
            (Kernel::or_into, scalar::or_into),
            (Kernel::and_into, scalar::and_into),
            (Kernel::andnot_into, scalar::andnot_into),
        ];
        for k in vector_levels() {
            for off in 0..OFFSETS {
                let soff = (off + 3) % OFFSETS;
                for len in 0..=MAX_WORDS {
                    for slen in [len.saturating_sub(1), len, len + 3] {
                        let s = &src[soff..soff + slen];
                        for (op, reference) in ops {
                            let mut got = dst.clone();
                            op(k, &mut got[off..off + len], s);
                            let mut want = dst.clone();
                            reference(&mut want[off..off + len], s);
                            prop_assert_eq!(&got, &want, "{:?} off {} len {} slen {}", k, off, len, slen);
                        }
                    }
                }
            }
        }
    }

    /// popcount and single_set_bit: every length at every offset, dense and sparse contents.
    #[test]
    fn counts_vs_scalar(
        dense in prop::collection::vec(word(), MAX_WORDS + OFFSETS),
        sparse in prop::collection::vec(sparse_word(), MAX_WORDS + OFFSETS),
    ) {
        for k in vector_levels() {
            for v in [&dense, &sparse] {
                for off in 0..OFFSETS {
                    for len in 0..=MAX_WORDS {
                        let s = &v[off..off + len];
                        prop_assert_eq!(k.popcount(s), scalar::popcount(s), "{:?} {:?}", k, s);
                        prop_assert_eq!(
                            k.single_set_bit(s),
                            scalar::single_set_bit(s),
                            "{:?} {:?}",
                            k,
                            s
                        );
                    }
                }
            }
        }
    }

    /// Dense masking in all three formats: every logit count 0..=32 * MAX_WORDS + 31 at every
    /// offset, with masks shorter than, equal to and longer than the row.
    #[test]
    fn apply_mask_vs_scalar(
        mask in prop::collection::vec(word(), MAX_WORDS + 2 + OFFSETS),
        bits in prop::collection::vec(logit_bits(), 32 * MAX_WORDS + 32 + OFFSETS),
        bits16 in prop::collection::vec(logit16(), 32 * MAX_WORDS + 32 + OFFSETS),
    ) {
        let logits: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        let ops16: [(LevelOp<u16>, ScalarOp<u16>); 2] = [
            (Kernel::apply_mask_f16, scalar::apply_mask_f16),
            (Kernel::apply_mask_bf16, scalar::apply_mask_bf16),
        ];
        for k in vector_levels() {
            for off in 0..OFFSETS {
                let moff = (off * 5) % OFFSETS;
                for n in 0..=32 * MAX_WORDS + 31 {
                    let m = &mask[moff..moff + mask_len_for(n, off)];
                    let mut got = logits.clone();
                    k.apply_mask_f32(&mut got[off..off + n], m);
                    let mut want = logits.clone();
                    scalar::apply_mask_f32(&mut want[off..off + n], m);
                    let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
                    let want: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
                    prop_assert_eq!(got, want, "{:?} f32 off {} n {} mask {}", k, off, n, m.len());
                    for (op, reference) in ops16 {
                        let mut got = bits16.clone();
                        op(k, &mut got[off..off + n], m);
                        let mut want = bits16.clone();
                        reference(&mut want[off..off + n], m);
                        prop_assert_eq!(got, want, "{:?} u16 off {} n {} mask {}", k, off, n, m.len());
                    }
                }
            }
        }
    }

    /// Sparse masking: every candidate count at every offset; ids inside the mask, just past
    /// it and far past it (up to `u32::MAX`).
    #[test]
    fn sparse_vs_scalar(
        mask in prop::collection::vec(word(), 0..12),
        ids in prop::collection::vec(
            prop_oneof![0u32..12 * 32 + 64, any::<u32>()],
            MAX_WORDS + 3 + OFFSETS,
        ),
        bits in prop::collection::vec(logit_bits(), MAX_WORDS + 3 + OFFSETS),
    ) {
        let logits: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        for k in vector_levels() {
            for off in 0..OFFSETS {
                let ioff = (off + 5) % OFFSETS;
                for n in 0..=MAX_WORDS {
                    for n_ids in [n.saturating_sub(1), n, n + 3] {
                        let ids = &ids[ioff..ioff + n_ids];
                        let mut got = logits.clone();
                        k.apply_mask_sparse_f32(&mut got[off..off + n], ids, &mask);
                        let mut want = logits.clone();
                        scalar::apply_mask_sparse_f32(&mut want[off..off + n], ids, &mask);
                        let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
                        let want: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
                        prop_assert_eq!(got, want, "{:?} off {} n {} ids {}", k, off, n, n_ids);
                    }
                }
            }
        }
    }

    /// Batches: each level against scalar, and scalar against a row-by-row loop that spells
    /// out the row/mask pairing (short last row, short or missing masks, zero sizes).
    #[test]
    fn batch_vs_rows(
        bits in prop::collection::vec(logit_bits(), 0..600),
        masks in prop::collection::vec(word(), 0..24),
        row_len in 0usize..130,
        mask_words in 0usize..6,
    ) {
        let logits: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
        let mut want = logits.clone();
        if row_len > 0 {
            for (i, row) in want.chunks_mut(row_len).enumerate() {
                let start = (i * mask_words).min(masks.len());
                let end = (start + mask_words).min(masks.len());
                scalar::apply_mask_f32(row, &masks[start..end]);
            }
        }
        let want: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
        for k in levels() {
            let mut got = logits.clone();
            k.apply_mask_f32_batch(&mut got, row_len, &masks, mask_words);
            let got: Vec<u32> = got.iter().map(|x| x.to_bits()).collect();
            prop_assert_eq!(&got, &want, "{:?}", k);
        }
    }
}

/// A buffer at a 64-byte (cache line) boundary, so that slice offsets fix the alignment.
#[repr(C, align(64))]
struct Aligned([u32; 2048]);

/// OR/AND/AND-NOT against scalar at every 4-byte position of `dst` and of `src` in a cache
/// line (16 x 16 combinations), for lengths around the vector kernels' block boundaries
/// (alignment peel, the first vector of the shifted path, 32-word blocks, vector and word
/// tails), with both rows in one buffer so that their distance modulo 4 KiB is known:
/// `dst` a little after `src`, a little before it, and a multiple of 4 KiB away (plus the
/// offsets). The AVX2 kernels choose their loop (alignment, direction) by these addresses,
/// which the other tests leave to the allocator.
#[test]
fn binops_every_alignment() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let w = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32;
        match w % 5 {
            0 => 0,
            1 => u32::MAX,
            _ => w,
        }
    };
    let mut buf = std::boxed::Box::new(Aligned([0; 2048]));
    buf.0.fill_with(&mut next);
    let ops: [(LevelOp<u32>, ScalarOp<u32>); 3] = [
        (Kernel::or_into, scalar::or_into),
        (Kernel::and_into, scalar::and_into),
        (Kernel::andnot_into, scalar::andnot_into),
    ];
    let lens = (0..=52).chain([
        63, 64, 65, 75, 76, 77, 83, 84, 85, 95, 96, 97, 131, 287, 300,
    ]);
    // (dst, src) starts in words, before the offsets; `dst` and its guard words never overlap
    // `src`.
    let placements = [(1024, 16), (16, 1024), (1088, 16), (16, 1088)];
    for k in vector_levels() {
        for (dst_at, src_at) in placements {
            for doff in 0..16 {
                for soff in 0..16 {
                    for len in lens.clone() {
                        let (d, s) = (dst_at + doff, src_at + soff);
                        // `dst` plus 16 guard words on each side.
                        let around = d - 16..d + len + 16;
                        let old = buf.0[around.clone()].to_vec();
                        for (op, reference) in ops {
                            let mut want = old.clone();
                            reference(&mut want[16..16 + len], &buf.0[s..s + len]);
                            let (dst, src) = if d > s {
                                let (lo, hi) = buf.0.split_at_mut(d);
                                (&mut hi[..len], &lo[s..s + len])
                            } else {
                                let (lo, hi) = buf.0.split_at_mut(s);
                                (&mut lo[d..d + len], &hi[..len])
                            };
                            op(k, dst, src);
                            assert_eq!(
                                &buf.0[around.clone()],
                                &want[..],
                                "{k:?} dst {d} src {s} len {len}"
                            );
                            buf.0[around.clone()].copy_from_slice(&old);
                        }
                    }
                }
            }
        }
    }
}

/// `single_set_bit` with one or two bits at every position of every length and offset.
#[test]
fn single_set_bit_every_position() {
    for k in vector_levels() {
        for off in 0..OFFSETS {
            for len in 1..=MAX_WORDS {
                for pos in 0..len * 32 {
                    let mut v = std::vec![0u32; OFFSETS + MAX_WORDS];
                    v[off + pos / 32] |= 1 << (pos % 32);
                    let s = &v[off..off + len];
                    assert_eq!(k.single_set_bit(s), Some(pos), "{k:?} off {off} len {len}");
                    let second = (pos * 7 + 13) % (len * 32);
                    if second != pos {
                        let mut v = v.clone();
                        v[off + second / 32] |= 1 << (second % 32);
                        assert_eq!(k.single_set_bit(&v[off..off + len]), None);
                    }
                }
            }
        }
    }
}

/// The vector level the machine has is detected, so the differential tests above ran it.
#[test]
fn expected_levels_are_available() {
    #[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
    {
        let has = std::is_x86_feature_detected!("avx2");
        assert_eq!(Kernel::Avx2.is_available(), has);
        assert_eq!(crate::x86_64::avx2::Avx2::new().is_some(), has);
        assert_eq!(crate::x86_64::avx2::Avx2::is_available(), has);
        if !has {
            std::eprintln!("SKIP: AVX2 differential tests: this CPU has no AVX2");
        }
    }
    #[cfg(all(target_arch = "aarch64", target_feature = "neon", not(miri)))]
    assert!(Kernel::Neon.is_available());
    #[cfg(all(
        target_arch = "aarch64",
        not(target_feature = "neon"),
        feature = "std",
        not(miri)
    ))]
    assert_eq!(
        Kernel::Neon.is_available(),
        std::arch::is_aarch64_feature_detected!("neon")
    );
    #[cfg(all(target_arch = "arm", sieve_arm_neon, not(miri)))]
    assert!(Kernel::Neon.is_available());
    #[cfg(not(any(target_arch = "aarch64", all(target_arch = "arm", sieve_arm_neon))))]
    assert!(!Kernel::Neon.is_available());
    #[cfg(not(target_arch = "x86_64"))]
    assert!(!Kernel::Avx2.is_available());
    assert!(Kernel::Scalar.is_available());
}

#[test]
fn selected_is_the_best_available() {
    let k = Kernel::selected();
    assert!(k.is_available());
    assert_eq!(Some(k), Kernel::ALL.into_iter().find(|k| k.is_available()));
    let expected = if cfg!(miri) {
        "scalar"
    } else if Kernel::Neon.is_available() {
        "neon"
    } else if Kernel::Avx2.is_available() {
        "avx2"
    } else {
        "scalar"
    };
    assert_eq!(k.name(), expected);
}

/// Forcing a level that cannot run falls back to scalar instead of executing bad code.
#[test]
fn unavailable_level_runs_scalar() {
    for k in Kernel::ALL.into_iter().filter(|k| !k.is_available()) {
        let mut d = [1u32, 2, 3];
        k.or_into(&mut d, &[4, 4, 4]);
        assert_eq!(d, [5, 6, 7]);
        assert_eq!(k.popcount(&[u32::MAX; 9]), 9 * 32);
    }
}

#[test]
fn empty_inputs() {
    for k in levels() {
        assert_eq!(k.popcount(&[]), 0);
        assert_eq!(k.single_set_bit(&[]), None);
        assert_eq!(k.single_set_bit(&[0, 0]), None);
        assert_eq!(k.single_set_bit(&[0, 3]), None);
        assert_eq!(k.single_set_bit(&[1, 1]), None);
        let mut l = [1.0f32; 3];
        k.apply_mask_f32(&mut l, &[]);
        assert!(l.iter().all(|x| *x == f32::NEG_INFINITY));
        let mut l = [1.0f32; 40];
        k.apply_mask_f32_batch(&mut l, 0, &[u32::MAX], 1);
        assert!(l.iter().all(|x| *x == 1.0));
        k.apply_mask_f32_batch(&mut l, 20, &[u32::MAX], 1);
        assert!(l[..20].iter().all(|x| *x == 1.0));
        assert!(l[20..].iter().all(|x| *x == f32::NEG_INFINITY));
    }
    assert_eq!(crate::popcount(&[]), 0);
}
