//! Draft-tree masks for many matchers at once (`sieve_fill_draft_trees`): each request's
//! `Matcher::fill_draft_tree` (one call per matcher, as `sieve_matcher_fill_draft_tree`) on
//! the library's thread pool (`sieve-runner`), the most expensive first.
//!
//! Invariants: every argument is checked before any work (NULLs, a matcher listed twice,
//! offsets, every request's parents), so each work item has exclusive use of its matcher,
//! its rows, its `n_filled` entry and its status.

use core::sync::atomic::{AtomicU32, Ordering};

use sieve_core::{Matcher, check_draft_tree_parents};

use crate::batch::distinct_matchers;
use crate::boundary::{catch_panic, ffi_boundary, input_slice, output_slice};
use crate::matcher::{draft_tree_into, sieve_matcher};
use crate::prelude::*;
use crate::status::sieve_status;

/// One batch of trees, checked.
struct Trees<'a> {
    matchers: Vec<*mut Matcher>,
    tokens: &'a [u32],
    parents: &'a [i32],
    offsets: &'a [usize],
    masks: *mut u32,
    mask_words: usize,
    n_filled: *mut usize,
    statuses: Vec<AtomicU32>,
}

// SAFETY: 1. the matchers are distinct (checked) and each is used only by its own item;
// 2. request `i`'s rows (from row `offsets[i] + i`) and its `n_filled` entry are disjoint
// from every other request's; 3. statuses are atomics. So sharing `&Trees` across threads
// creates no data race.
unsafe impl Sync for Trees<'_> {}

impl Trees<'_> {
    /// Fills request `i`'s rows; its status.
    fn run(&self, i: usize) {
        let (Some(&m), Some(status), Some(&lo), Some(&hi)) = (
            self.matchers.get(i),
            self.statuses.get(i),
            self.offsets.get(i),
            self.offsets.get(i + 1),
        ) else {
            return;
        };
        let (Some(tokens), Some(parents)) = (self.tokens.get(lo..hi), self.parents.get(lo..hi))
        else {
            return;
        };
        let s = catch_panic(|| {
            // SAFETY: 1. `m` is a live matcher handle (checked non-NULL, caller contract)
            // used only by this item; 2. rows `lo + i ..= hi + i` lie inside the
            // `(offsets[n] + n) * mask_words` words the caller provided (offsets checked
            // non-decreasing) and belong to this request only; 3. `n_filled[i]` likewise.
            let (m, rows, filled) = unsafe {
                (
                    &mut *m,
                    core::slice::from_raw_parts_mut(
                        self.masks.add((lo + i) * self.mask_words),
                        (hi - lo + 1) * self.mask_words,
                    ),
                    self.n_filled.add(i),
                )
            };
            draft_tree_into(m, tokens, parents, rows, self.mask_words, filled)
        });
        status.store(s.unwrap_or(sieve_status::Panic) as u32, Ordering::Release);
    }
}

/// Checks the arguments of `sieve_fill_draft_trees` and builds the batch.
#[allow(
    clippy::too_many_arguments,
    reason = "the C function's arguments, checked"
)]
fn prepare<'a>(
    matchers: *const *mut sieve_matcher,
    n: usize,
    tokens: *const u32,
    parents: *const i32,
    node_offsets: *const usize,
    masks: *mut u32,
    mask_words: usize,
    n_filled: *mut usize,
) -> Result<Trees<'a>, sieve_status> {
    // SAFETY: 1. NULL or readable for `n` handles (caller contract).
    let list = unsafe { input_slice(matchers, n) }.ok_or(sieve_status::NullArgument)?;
    let n_offsets = n.checked_add(1).ok_or(sieve_status::InvalidArgument)?;
    // SAFETY: 1. NULL or readable for `n + 1` offsets (caller contract).
    let offsets =
        unsafe { input_slice(node_offsets, n_offsets) }.ok_or(sieve_status::NullArgument)?;
    if offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err(sieve_status::InvalidArgument);
    }
    let nodes = offsets.last().copied().unwrap_or(0);
    // SAFETY: 1. NULL or readable for `node_offsets[n]` entries (caller contract).
    let tokens = unsafe { input_slice(tokens, nodes) }.ok_or(sieve_status::NullArgument)?;
    // SAFETY: as above.
    let parents = unsafe { input_slice(parents, nodes) }.ok_or(sieve_status::NullArgument)?;
    let total = nodes
        .checked_add(n)
        .and_then(|rows| rows.checked_mul(mask_words))
        .ok_or(sieve_status::InvalidArgument)?;
    // SAFETY: 1. NULL or writable for `total` words and `n` counts (caller contract). Only
    // the pointers are kept; each item writes its own rows and count.
    let masks = unsafe { output_slice(masks, total) }.ok_or(sieve_status::NullArgument)?;
    // SAFETY: as above.
    let n_filled = unsafe { output_slice(n_filled, n) }.ok_or(sieve_status::NullArgument)?;
    let matchers = distinct_matchers(list)?;
    for w in offsets.windows(2) {
        check_draft_tree_parents(&parents[w[0]..w[1]])
            .map_err(|_| sieve_status::InvalidArgument)?;
    }
    n_filled.fill(0);
    Ok(Trees {
        matchers,
        tokens,
        parents,
        offsets,
        masks: masks.as_mut_ptr(),
        mask_words,
        n_filled: n_filled.as_mut_ptr(),
        statuses: (0..n)
            .map(|_| AtomicU32::new(sieve_status::Panic as u32))
            .collect(),
    })
}

/// `sieve_matcher_fill_draft_tree` for `n` distinct matchers at once, on the calling thread
/// and the library's pool (as `sieve_compute_masks`; without `std`, one after the other),
/// the most expensive first. Request `i`'s nodes are entries `node_offsets[i] ..<
/// node_offsets[i + 1]` of `tokens` and `parents` (`node_offsets` has `n + 1`
/// non-decreasing entries; parents index the request's own nodes, -1 for its current
/// state). Its rows start at row `node_offsets[i] + i` of `masks` (`(node_offsets[n] + n) *
/// mask_words` words): one row for the current state, then one per node. `n_filled[i]`
/// receives how many of its rows hold a mask and `statuses[i]` its `sieve_status`, as
/// `sieve_matcher_fill_draft_tree` gives them (after a matcher error: 0 rows filled, its
/// rows zero).
///
/// Returns the first failing request's status (or `SIEVE_STATUS_OK`). Argument errors (a
/// NULL or repeated matcher, NULL buffers, decreasing offsets, a parent not before its node,
/// an overflowing size) return before any work and write nothing. The matchers end where
/// they started and must not be in use elsewhere during the call.
#[unsafe(no_mangle)]
#[must_use]
#[allow(
    clippy::too_many_arguments,
    reason = "a C function: buffers and their lengths"
)]
pub extern "C" fn sieve_fill_draft_trees(
    matchers: *const *mut sieve_matcher,
    n: usize,
    tokens: *const u32,
    parents: *const i32,
    node_offsets: *const usize,
    masks: *mut u32,
    mask_words: usize,
    n_filled: *mut usize,
    statuses: *mut u32,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or writable for `n` statuses (caller contract).
        let Some(statuses) = (unsafe { output_slice(statuses, n) }) else {
            return sieve_status::NullArgument;
        };
        let trees = match prepare(
            matchers, n, tokens, parents, node_offsets, masks, mask_words, n_filled,
        ) {
            Ok(t) => t,
            Err(s) => return s,
        };
        run_all(&trees);
        let mut first = sieve_status::Ok;
        for (out, s) in statuses.iter_mut().zip(&trees.statuses) {
            let s = s.load(Ordering::Acquire);
            *out = s;
            if first == sieve_status::Ok {
                first = sieve_status::try_from(s).unwrap_or(sieve_status::Panic);
            }
        }
        first
    }
}

/// Runs every request of `trees` on the library's pool, the calling thread included, most
/// expensive first (a tree of k nodes weighs k + 1 masks).
#[cfg(feature = "std")]
fn run_all(trees: &Trees<'_>) {
    let costs: Vec<sieve_core::MaskCost> = trees
        .matchers
        .iter()
        // SAFETY: 1. live, distinct matcher handles (checked), not in use elsewhere; no
        // work has started, so this is their only user.
        .map(|&m| unsafe { &*m }.mask_cost_hint())
        .collect();
    let expected = costs
        .iter()
        .zip(trees.offsets.windows(2))
        .map(|(c, w)| {
            let masks = (w[1] - w[0]) as u64 + 1;
            c.typical_ns(trees.mask_words).saturating_mul(masks)
        })
        .fold(0u64, u64::saturating_add);
    // `Trees::run` catches its item's panic (a `SIEVE_STATUS_PANIC` status).
    let _ =
        sieve_runner::run_expecting(&sieve_runner::by_cost(&costs), expected, &|i| trees.run(i));
}

/// Runs every request one after the other on the calling thread (no `std`, no threads).
#[cfg(not(feature = "std"))]
fn run_all(trees: &Trees<'_>) {
    for i in 0..trees.matchers.len() {
        trees.run(i);
    }
}
