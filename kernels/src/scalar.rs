//! Portable scalar kernels: the always-built reference every other kernel is tested against.
//!
//! Each function walks the words once; no function allocates or panics. Binary bitset
//! operations work over the shorter of the two slices. Mask application works a word (32
//! logits) at a time with fast paths for all-allowed and all-disallowed words, so a mostly
//! empty mask over a 128k vocabulary costs about one store per disallowed logit.

/// `dst[i] = src[i]` for `i < min(dst.len(), src.len())`: a `memcpy`, which the C library
/// already runs with the widest vectors the CPU has, so every level uses this one.
#[inline]
pub fn copy_into(dst: &mut [u32], src: &[u32]) {
    let n = dst.len().min(src.len());
    dst[..n].copy_from_slice(&src[..n]);
}

/// Every word of `dst` becomes `word`: a `memset` for 0 and `u32::MAX` (LLVM's own vector
/// loop otherwise), so every level uses this one.
#[inline]
pub fn fill(dst: &mut [u32], word: u32) {
    dst.fill(word);
}

/// Sets bits `0..n_bits` and clears the others (a mask allowing the first `n_bits` tokens);
/// bits beyond `32 * dst.len()` are dropped.
#[inline]
pub fn fill_prefix(dst: &mut [u32], n_bits: usize) {
    let full = (n_bits / 32).min(dst.len());
    let (ones, rest) = dst.split_at_mut(full);
    ones.fill(u32::MAX);
    rest.fill(0);
    if let Some(w) = rest.first_mut()
        && !n_bits.is_multiple_of(32)
    {
        *w = (1u32 << (n_bits % 32)) - 1;
    }
}

/// Sets bit `id`; an id beyond the mask is ignored.
#[inline]
pub fn set_bit(mask: &mut [u32], id: u32) {
    if let Some(w) = mask.get_mut((id / 32) as usize) {
        *w |= 1 << (id % 32);
    }
}

/// Clears bit `id`; an id beyond the mask is ignored.
#[inline]
pub fn clear_bit(mask: &mut [u32], id: u32) {
    if let Some(w) = mask.get_mut((id / 32) as usize) {
        *w &= !(1 << (id % 32));
    }
}

/// Whether bit `id` is set; bits beyond the mask are clear.
#[inline]
pub fn test_bit(mask: &[u32], id: u32) -> bool {
    match mask.get((id / 32) as usize) {
        Some(w) => w & (1 << (id % 32)) != 0,
        None => false,
    }
}

/// [`set_bit`] for each id of `ids` (EOS and other token lists).
#[inline]
pub fn set_bits(mask: &mut [u32], ids: &[u32]) {
    for &id in ids {
        set_bit(mask, id);
    }
}

/// [`clear_bit`] for each id of `ids`.
#[inline]
pub fn clear_bits(mask: &mut [u32], ids: &[u32]) {
    for &id in ids {
        clear_bit(mask, id);
    }
}

/// `dst[i] |= src[i]` for `i < min(dst.len(), src.len())`.
#[inline]
pub fn or_into(dst: &mut [u32], src: &[u32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d |= *s;
    }
}

/// `dst[i] &= src[i]` for `i < min(dst.len(), src.len())`; words of `dst` beyond `src` are
/// left unchanged.
#[inline]
pub fn and_into(dst: &mut [u32], src: &[u32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d &= *s;
    }
}

/// `dst[i] &= !src[i]` for `i < min(dst.len(), src.len())`.
#[inline]
pub fn andnot_into(dst: &mut [u32], src: &[u32]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d &= !*s;
    }
}

/// Number of set bits.
#[inline]
pub fn popcount(words: &[u32]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// `Some(bit index)` if exactly one bit is set, else `None`.
#[inline]
pub fn single_set_bit(words: &[u32]) -> Option<usize> {
    single_bit_step(None, 0, words).flatten()
}

/// One step of a single-bit scan, shared with the vector kernels (which call it only on
/// blocks that are not all zero). `found` is the bit seen in earlier words and `base` the word
/// index of `words[0]`. Returns `None` as soon as a second set bit shows up, else
/// `Some(found)` updated with the bits of `words`.
#[inline]
pub(crate) fn single_bit_step(
    mut found: Option<usize>,
    base: usize,
    words: &[u32],
) -> Option<Option<usize>> {
    for (i, &w) in words.iter().enumerate() {
        if w == 0 {
            continue;
        }
        if found.is_some() || !w.is_power_of_two() {
            return None;
        }
        found = Some((base + i) * 32 + w.trailing_zeros() as usize);
    }
    Some(found)
}

/// Sets every logit whose bit is clear (or lies beyond the mask) to `neg_inf`.
#[inline]
fn apply_mask<T: Copy>(logits: &mut [T], mask: &[u32], neg_inf: T) {
    let mut chunks = logits.chunks_mut(32);
    // `mask` first: `zip` polls its left side first, so an exhausted mask must not swallow a
    // chunk that the tail loop below still has to fill.
    for (&word, chunk) in mask.iter().zip(&mut chunks) {
        if word == u32::MAX {
            continue;
        }
        if word == 0 {
            chunk.fill(neg_inf);
            continue;
        }
        for (bit, logit) in chunk.iter_mut().enumerate() {
            if word & (1 << bit) == 0 {
                *logit = neg_inf;
            }
        }
    }
    for chunk in chunks {
        chunk.fill(neg_inf);
    }
}

/// Disallowed logits (clear bit, or index beyond the mask) become `-inf`.
#[inline]
pub fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    apply_mask(logits, mask, f32::NEG_INFINITY);
}

/// [`apply_mask_f32`] on each row of a batch; see [`crate::apply_mask_f32_batch`].
#[inline]
pub fn apply_mask_f32_batch(logits: &mut [f32], row_len: usize, masks: &[u32], mask_words: usize) {
    for_each_row(logits, row_len, masks, mask_words, apply_mask_f32);
}

/// Calls `f(row, mask)` for each row of a batch, with the row/mask pairing documented at
/// [`crate::apply_mask_f32_batch`]. Shared with the vector kernels.
#[inline]
pub(crate) fn for_each_row<T>(
    logits: &mut [T],
    row_len: usize,
    masks: &[u32],
    mask_words: usize,
    mut f: impl FnMut(&mut [T], &[u32]),
) {
    if row_len == 0 {
        return;
    }
    for (i, row) in logits.chunks_mut(row_len).enumerate() {
        let start = i.saturating_mul(mask_words).min(masks.len());
        let end = start.saturating_add(mask_words).min(masks.len());
        f(row, &masks[start..end]);
    }
}

/// Like [`apply_mask_f32`] on raw IEEE binary16 bit patterns (`-inf` = `0xFC00`).
#[inline]
pub fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    apply_mask(logits, mask, crate::F16_NEG_INFINITY);
}

/// Like [`apply_mask_f32`] on raw bfloat16 bit patterns (`-inf` = `0xFF80`).
#[inline]
pub fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    apply_mask(logits, mask, crate::BF16_NEG_INFINITY);
}

/// `logits[i]` is the logit of token `candidate_ids[i]`; it becomes `-inf` unless that
/// token's bit is set. Logits without a candidate id (`i >= candidate_ids.len()`) become
/// `-inf`; extra candidate ids are ignored.
#[inline]
pub fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    let n = logits.len().min(candidate_ids.len());
    let (with_id, without_id) = logits.split_at_mut(n);
    for (logit, &id) in with_id.iter_mut().zip(candidate_ids) {
        if !test_bit(mask, id) {
            *logit = f32::NEG_INFINITY;
        }
    }
    without_id.fill(f32::NEG_INFINITY);
}
