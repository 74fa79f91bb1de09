//! Differential tests: every kernel level against naive bit-by-bit loops, for slice lengths
//! 0..200 at every starting offset 0..8 (so vector kernels see every alignment).

use crate::{BF16_NEG_INFINITY, F16_NEG_INFINITY, Kernel};
use proptest::prelude::*;
use std::vec::Vec;

const LEVELS: &[Kernel] = &[Kernel::Scalar];

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

proptest! {
    #[test]
    fn binops_match_naive((dst, doff) in words_at_offset(), (src, soff) in words_at_offset()) {
        for &k in LEVELS {
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
        for &k in LEVELS {
            prop_assert_eq!(k.popcount(&v[off..]), naive_popcount(&v[off..]));
            prop_assert_eq!(k.single_set_bit(&v[off..]), naive_single(&v[off..]));
        }
    }

    #[test]
    fn single_bit_positions(len in 1usize..200, pos in 0usize..6400) {
        let mut v = std::vec![0u32; len];
        let pos = pos % (len * 32);
        v[pos / 32] |= 1 << (pos % 32);
        for &k in LEVELS {
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
        for &k in LEVELS {
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
        for &k in LEVELS {
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

#[test]
fn selected_is_available() {
    let k = Kernel::selected();
    assert!(k.is_available());
    assert_eq!(k.name(), "scalar");
}

#[test]
fn empty_inputs() {
    assert_eq!(crate::popcount(&[]), 0);
    assert_eq!(crate::single_set_bit(&[]), None);
    assert_eq!(crate::single_set_bit(&[0, 0]), None);
    assert_eq!(crate::single_set_bit(&[0, 3]), None);
    assert_eq!(crate::single_set_bit(&[1, 1]), None);
    let mut l = [1.0f32; 3];
    crate::apply_mask_f32(&mut l, &[]);
    assert!(l.iter().all(|x| *x == f32::NEG_INFINITY));
}
