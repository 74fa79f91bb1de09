//! Batch calls: masks for N requests (and for every draft position of each request) in one
//! call from Python, on the calling thread and the pool's threads with the GIL released, the
//! most expensive masks first; parallel consume; and applying masks to logits with sieve's
//! kernels.
//!
//! Invariants: every batch validates its inputs (bitmask type and shape, row indices in
//! range and distinct, token ids in range) before any work, so each work item writes only
//! its own rows; each item locks its own matcher, so a matcher listed twice is served one
//! item at a time.

use std::collections::HashSet;

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::buffers::{self, Elem, View};
use crate::executor;
use crate::matcher::{Matcher, fill_row};

/// The matchers of a Python list, borrowed for the call (a frozen pyclass is reachable
/// without the GIL).
fn matchers<'a>(list: &'a [Bound<'_, Matcher>]) -> Vec<&'a Matcher> {
    list.iter().map(|b| b.get()).collect()
}

/// The order in which a batch starts the matchers' items, their next masks' expected cost
/// most expensive first (`Matcher::mask_cost_hint`), and the whole batch's expected work in
/// ns with `masks_each` masks an item (`MaskCost::typical_ns`).
fn by_cost(ms: &[&Matcher], words: usize, masks_each: &dyn Fn(usize) -> u64) -> (Vec<usize>, u64) {
    let costs: Vec<sieve_core::MaskCost> = ms.iter().map(|m| m.lock().mask_cost_hint()).collect();
    let expected = costs
        .iter()
        .enumerate()
        .map(|(i, c)| c.typical_ns(words).saturating_mul(masks_each(i)))
        .fold(0u64, u64::saturating_add);
    (sieve_runner::by_cost(&costs), expected)
}

/// The mask words every matcher needs (they must agree: one bitmask).
fn common_words(ms: &[&Matcher]) -> PyResult<usize> {
    let mut words = None;
    for m in ms {
        let w = m.lock().mask_words();
        match words {
            None => words = Some(w),
            Some(x) if x != w => {
                return Err(PyValueError::new_err(
                    "the matchers' grammars are for vocabularies of different sizes",
                ));
            }
            Some(_) => {}
        }
    }
    Ok(words.unwrap_or(0))
}

/// Checks that `rows` are in range for `view` and pairwise distinct.
fn check_rows(rows: &[usize], view: &View) -> PyResult<()> {
    let mut seen = HashSet::with_capacity(rows.len());
    for &r in rows {
        if r >= view.rows {
            return Err(PyIndexError::new_err(format!(
                "row {r} is out of range for a bitmask of {} rows",
                view.rows
            )));
        }
        if !seen.insert(r) {
            return Err(PyValueError::new_err(format!(
                "bitmask row {r} is used twice"
            )));
        }
    }
    Ok(())
}

/// Fills row `indices[i]` (default `i`) of `bitmask` with the mask of `matchers[i]`, for
/// every `i`, in parallel with the GIL released. Returns one bool per matcher (`False`: in
/// an error state, its row allows only EOS).
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices=None))]
pub fn fill_next_token_bitmask_batch(
    py: Python<'_>,
    matchers: Vec<Bound<'_, Matcher>>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<Vec<bool>> {
    let ms = self::matchers(&matchers);
    let words = common_words(&ms)?;
    let view = buffers::bitmask(bitmask, words)?;
    let rows = indices.unwrap_or_else(|| (0..ms.len()).collect());
    if rows.len() != ms.len() {
        return Err(PyValueError::new_err(format!(
            "{} indices for {} matchers",
            rows.len(),
            ms.len()
        )));
    }
    check_rows(&rows, &view)?;
    let (order, expected) = by_cost(&ms, words, &|_| 1);
    py.detach(|| {
        executor::run(&order, expected, |i| {
            // SAFETY: 1. `rows[i] < view.rows` and the rows are distinct (checked), so this
            // item is the only user of its row; 2. `bitmask` is borrowed for the whole call.
            let row = unsafe { view.row_u32(rows[i]) };
            fill_row(&mut ms[i].lock(), row)
        })
    })
}

/// Masks for speculative decoding, in one call: for request `i` with draft tokens
/// `drafts[i]` (k tokens), rows `offsets[i] .. offsets[i] + k + 1` get the mask before the
/// draft, after its first token, ..., after all k (the default offsets pack the requests one
/// after the other). A draft token the grammar rejects ends that request's rows there; rows
/// after it are zeroed. The matchers end where they started. Returns, per request, how many
/// rows were filled (k + 1 when the whole draft is accepted).
#[pyfunction]
#[pyo3(signature = (matchers, drafts, bitmask, offsets=None))]
pub fn fill_next_token_bitmask_draft(
    py: Python<'_>,
    matchers: Vec<Bound<'_, Matcher>>,
    drafts: Vec<Vec<u32>>,
    bitmask: &Bound<'_, PyAny>,
    offsets: Option<Vec<usize>>,
) -> PyResult<Vec<usize>> {
    let ms = self::matchers(&matchers);
    if drafts.len() != ms.len() {
        return Err(PyValueError::new_err(format!(
            "{} drafts for {} matchers",
            drafts.len(),
            ms.len()
        )));
    }
    let words = common_words(&ms)?;
    let view = buffers::bitmask(bitmask, words)?;
    let vocab_size = ms
        .first()
        .map_or(0, |m| m.lock().grammar().vocab().vocab_size());
    for d in &drafts {
        if let Some(&t) = d.iter().find(|&&t| t as usize >= vocab_size) {
            return Err(PyValueError::new_err(format!(
                "draft token {t} is out of range (vocab_size {vocab_size})"
            )));
        }
    }
    let offsets = draft_offsets(offsets, &drafts)?;
    let all_rows: Vec<usize> = offsets
        .iter()
        .zip(&drafts)
        .flat_map(|(&o, d)| (0..=d.len()).map(move |k| o.saturating_add(k)))
        .collect();
    check_rows(&all_rows, &view)?;
    // A draft of k tokens is k + 1 masks, the later ones mostly cheaper: weighed as k + 1.
    let (order, expected) = by_cost(&ms, words, &|i| drafts[i].len() as u64 + 1);
    py.detach(|| {
        executor::run(&order, expected, |i| {
            let (d, o) = (&drafts[i], offsets[i]);
            let mut m = ms[i].lock();
            let (mut filled, mut consumed, mut live) = (0, 0, true);
            for k in 0..=d.len() {
                // SAFETY: rows `o ..= o + d.len()` are in range and used by this request
                // only (checked).
                let row = unsafe { view.row_u32(o + k) };
                if !live {
                    sieve_kernels::fill(row, 0);
                    continue;
                }
                let ok = fill_row(&mut m, row);
                filled += 1;
                // The next draft token goes on only if this row allows it.
                live = ok
                    && d.get(k).is_some_and(|&t| {
                        sieve_kernels::test_bit(row, t) && m.consume_token(t).is_ok()
                    });
                consumed += usize::from(live);
            }
            // Back to where the request was (a budget exceeded while consuming leaves the
            // matcher in its error state, as consuming the tokens one by one would).
            let _ = m.rollback(consumed);
            filled
        })
    })
}

/// Masks for draft token trees (EAGLE / Medusa-shaped speculative decoding), in one call:
/// request `i` has nodes with tokens `tokens[i]` and parents `parents[i]` (each an earlier
/// node's index, or -1 for the matcher's current state). With n nodes it uses rows
/// `offsets[i] .. offsets[i] + n + 1`: the mask at the current state, then the mask after the
/// path to each node (the default offsets pack the requests one after the other). Shared
/// prefixes are walked once. A node whose token its parent's row does not allow gets a zero
/// row, and so do its descendants. The matchers end where they started. Returns, per
/// request, how many rows were filled (n + 1 when every node is accepted).
#[pyfunction]
#[pyo3(signature = (matchers, tokens, parents, bitmask, offsets=None))]
pub fn fill_next_token_bitmask_draft_tree(
    py: Python<'_>,
    matchers: Vec<Bound<'_, Matcher>>,
    tokens: Vec<Vec<u32>>,
    parents: Vec<Vec<i32>>,
    bitmask: &Bound<'_, PyAny>,
    offsets: Option<Vec<usize>>,
) -> PyResult<Vec<usize>> {
    let ms = self::matchers(&matchers);
    check_trees(&ms, &tokens, &parents)?;
    let words = common_words(&ms)?;
    let view = buffers::bitmask(bitmask, words)?;
    let offsets = draft_offsets(offsets, &tokens)?;
    let all_rows: Vec<usize> = offsets
        .iter()
        .zip(&tokens)
        .flat_map(|(&o, d)| (0..=d.len()).map(move |k| o.saturating_add(k)))
        .collect();
    check_rows(&all_rows, &view)?;
    // A tree of n nodes is up to n + 1 masks, as a draft of n tokens.
    let (order, expected) = by_cost(&ms, words, &|i| tokens[i].len() as u64 + 1);
    py.detach(|| {
        executor::run(&order, expected, |i| {
            let n = tokens[i].len();
            // SAFETY: rows `offsets[i] ..= offsets[i] + n` are in range and used by this
            // request only (checked); consecutive in the C-contiguous bitmask.
            let rows = unsafe { view.rows_u32(offsets[i], n + 1) };
            let mut m = ms[i].lock();
            match m.fill_draft_tree(&tokens[i], &parents[i], rows, view.cols) {
                Ok(fill) => match fill.failed_row {
                    None => fill.filled,
                    Some(r) => {
                        // As `fill_row`: the row of a matcher in error allows only EOS.
                        let eos = m.grammar().vocab().eos_tokens().to_vec();
                        sieve_kernels::set_bits(
                            &mut rows[r * view.cols..(r + 1) * view.cols],
                            &eos,
                        );
                        fill.filled + 1
                    }
                },
                // Not reached: the input was checked above.
                Err(_) => 0,
            }
        })
    })
}

/// Checks the trees of `fill_next_token_bitmask_draft_tree`: one per matcher, as many
/// parents as tokens, parents earlier nodes or -1, tokens in range.
fn check_trees(ms: &[&Matcher], tokens: &[Vec<u32>], parents: &[Vec<i32>]) -> PyResult<()> {
    if tokens.len() != ms.len() || parents.len() != ms.len() {
        return Err(PyValueError::new_err(format!(
            "{} token lists and {} parent lists for {} matchers",
            tokens.len(),
            parents.len(),
            ms.len()
        )));
    }
    let vocab_size = ms
        .first()
        .map_or(0, |m| m.lock().grammar().vocab().vocab_size());
    for (r, (t, p)) in tokens.iter().zip(parents).enumerate() {
        if t.len() != p.len() {
            return Err(PyValueError::new_err(format!(
                "request {r}: {} tokens but {} parents",
                t.len(),
                p.len()
            )));
        }
        if let Err(sieve_core::DraftTreeError::BadParent { node, parent }) =
            sieve_core::check_draft_tree_parents(p)
        {
            return Err(PyValueError::new_err(format!(
                "request {r}: node {node} has parent {parent}; it must be -1 or an earlier node"
            )));
        }
        if let Some(&x) = t.iter().find(|&&x| x as usize >= vocab_size) {
            return Err(PyValueError::new_err(format!(
                "request {r}: token {x} is out of range (vocab_size {vocab_size})"
            )));
        }
    }
    Ok(())
}

/// The first row of each request: `offsets` as given (one per request), or the requests
/// packed one after the other, `lens[i].len() + 1` rows each.
fn draft_offsets<T>(offsets: Option<Vec<usize>>, lens: &[Vec<T>]) -> PyResult<Vec<usize>> {
    match offsets {
        Some(o) if o.len() != lens.len() => Err(PyValueError::new_err(format!(
            "{} offsets for {} matchers",
            o.len(),
            lens.len()
        ))),
        Some(o) => Ok(o),
        None => Ok(lens
            .iter()
            .scan(0usize, |acc, d| {
                let o = *acc;
                *acc += d.len() + 1;
                Some(o)
            })
            .collect()),
    }
}

/// Consumes `tokens[i]` in `matchers[i]` for every `i`, in parallel with the GIL released;
/// one bool per matcher, as `Matcher.consume_token`.
#[pyfunction]
pub fn consume_token_batch(
    py: Python<'_>,
    matchers: Vec<Bound<'_, Matcher>>,
    tokens: Vec<u32>,
) -> PyResult<Vec<bool>> {
    let ms = self::matchers(&matchers);
    if tokens.len() != ms.len() {
        return Err(PyValueError::new_err(format!(
            "{} tokens for {} matchers",
            tokens.len(),
            ms.len()
        )));
    }
    for (m, &t) in ms.iter().zip(&tokens) {
        let n = m.lock().grammar().vocab().vocab_size();
        if t as usize >= n {
            return Err(PyValueError::new_err(format!(
                "token {t} is out of range (vocab_size {n})"
            )));
        }
    }
    py.detach(|| {
        // A token is consumed in about a microsecond (a few parser steps).
        executor::run_in_order(ms.len(), 1_000, |i| {
            ms[i].lock().consume_token(tokens[i]).is_ok()
        })
    })
}

/// Sets `logits[r, t]` to `-inf` wherever bit `t` of `bitmask[r]` is clear (tokens past
/// the bitmask's width included), for every row `r`, or only the rows in `indices`.
/// `logits`: float32 / float16 (numpy or torch) or bfloat16 (torch), CPU, C-contiguous,
/// `(batch, vocab)` or `(vocab,)`; `bitmask`: int32, `(batch, words)` or `(words,)`.
/// Uses sieve's AVX2 / NEON kernels; releases the GIL.
#[pyfunction]
#[pyo3(signature = (logits, bitmask, indices=None))]
pub fn apply_token_bitmask_inplace(
    py: Python<'_>,
    logits: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    let lv = buffers::view(logits, "logits")?;
    let bv = buffers::view(bitmask, "bitmask")?;
    if bv.elem != Elem::I32 {
        return Err(PyTypeError::new_err("bitmask must be int32"));
    }
    if lv.elem == Elem::I32 {
        return Err(PyTypeError::new_err(
            "logits must be float32, float16 or bfloat16",
        ));
    }
    let rows = indices.unwrap_or_else(|| (0..lv.rows).collect());
    for &r in &rows {
        if r >= lv.rows || r >= bv.rows {
            return Err(PyIndexError::new_err(format!(
                "row {r} is out of range (logits {} rows, bitmask {} rows)",
                lv.rows, bv.rows
            )));
        }
    }
    if lv.overlaps(&bv) {
        return Err(PyValueError::new_err("logits and bitmask share memory"));
    }
    py.detach(move || {
        // SAFETY: 1. both buffers are borrowed for the call and were checked C-contiguous
        // with their element types; 2. their byte ranges do not overlap (checked); 3. rows
        // are in range (checked). Rows repeated in `indices` are applied twice,
        // sequentially, which is idempotent.
        let masks: &[u32] = unsafe { bv.all() };
        let (cols, words) = (lv.cols, bv.cols);
        for &r in &rows {
            let mask = &masks[r * words..(r + 1) * words];
            match lv.elem {
                Elem::F32 => {
                    // SAFETY: as above; float32 elements.
                    let l: &mut [f32] = unsafe { lv.all() };
                    sieve_kernels::apply_mask_f32(&mut l[r * cols..(r + 1) * cols], mask);
                }
                Elem::F16 => {
                    // SAFETY: as above; 2-byte elements.
                    let l: &mut [u16] = unsafe { lv.all() };
                    sieve_kernels::apply_mask_f16(&mut l[r * cols..(r + 1) * cols], mask);
                }
                Elem::Bf16 => {
                    // SAFETY: as above; 2-byte elements.
                    let l: &mut [u16] = unsafe { lv.all() };
                    sieve_kernels::apply_mask_bf16(&mut l[r * cols..(r + 1) * cols], mask);
                }
                Elem::I32 => {}
            }
        }
    });
    Ok(())
}
