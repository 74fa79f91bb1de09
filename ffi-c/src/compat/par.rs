//! `llg_par_compute_mask`: LLGuidance's batch call. Masks of many constraints at once, on
//! the library's pool (`sieve-runner`, the runner `sieve_compute_masks` uses: the calling
//! thread works too, the most expensive masks start first); with a completion callback the
//! call returns at once and the work (then the callback) runs as a task on a pool thread, so
//! the host overlaps it with its forward pass. No thread is started per call and none is
//! detached: `sieve_shutdown_threads` waits for a pending task and joins the pool. Without
//! the `std` feature there are no library threads: the items run one after the other on the
//! calling thread, and the callback before the call returns.
//!
//! Invariants: steps are validated on the calling thread before any work: a constraint listed
//! twice, or two mask rows that overlap, put the constraints involved in the error state with
//! zeroed rows (they would race otherwise), so each remaining work item has exclusive use of
//! its constraint and its row. The step array is copied, so it need not outlive the call.

use alloc::vec::Vec;
use core::ffi::c_void;

use super::constraint::{Constraint, LlgConstraint};
use super::guard;
use crate::boundary::{HostPtr, catch_panic, input_slice};

/// One item of `llg_par_compute_mask`: a constraint and the row its mask goes to.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LlgConstraintStep {
    /// The constraint (NULL steps are skipped).
    pub constraint: *mut LlgConstraint,
    /// Where the mask goes: `mask_byte_len` bytes, 4-byte aligned.
    pub mask_dest: *mut u32,
    /// Bytes of `mask_dest` (a multiple of 4, at least the vocabulary's mask size).
    pub mask_byte_len: usize,
}

/// LLGuidance's completion callback: called once with the host's `user_data`.
pub type LlgCallback = Option<unsafe extern "C" fn(user_data: *const c_void)>;

/// A validated step: exclusive use of one constraint and one row.
struct Item {
    constraint: *mut Constraint,
    row: *mut u32,
    words: usize,
}

/// The work of one call.
struct Batch {
    items: Vec<Item>,
    /// Item indices, most expensive next mask first.
    order: Vec<usize>,
    /// The batch's expected work (`MaskCost::typical_ns`), for the runner's wake-ups.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    expected_ns: u64,
}

// SAFETY: 1. every item's constraint and row are distinct from every other item's (checked
// in `Batch::new`) and touched only by the one thread that claims the item; 2. the host
// keeps them valid and unused until the call (or its callback) completes, as LLGuidance's
// contract requires. So the batch may move to, and be shared between, threads.
unsafe impl Send for Batch {}
// SAFETY: as for Send: items are claimed through an atomic counter, each exactly once.
unsafe impl Sync for Batch {}

impl Batch {
    /// Validates `steps` (on the calling thread). Bad steps get their constraint's error set
    /// and their row zeroed (when it is writable) and do not become items.
    ///
    /// # Safety
    /// Each step's constraint is NULL or a live constraint handle, and each `mask_dest` is
    /// NULL or valid for `mask_byte_len` bytes; none is used elsewhere during the call.
    unsafe fn new(steps: &[LlgConstraintStep]) -> Batch {
        let steps: Vec<&LlgConstraintStep> =
            steps.iter().filter(|s| !s.constraint.is_null()).collect();
        // Why each step cannot run, if it cannot.
        let mut why: Vec<Option<&str>> = steps
            .iter()
            .map(|s| {
                if s.mask_dest.is_null() {
                    Some("llg_par_compute_mask: mask_dest is NULL")
                } else if s.mask_byte_len % 4 != 0 {
                    Some("llg_par_compute_mask: mask_byte_len is not a multiple of 4")
                } else if !s.mask_dest.is_aligned() {
                    Some("llg_par_compute_mask: mask_dest is not 4-byte aligned")
                } else {
                    None
                }
            })
            .collect();
        // A constraint listed twice would be computed by two threads at once.
        let mut by_constraint: Vec<usize> = (0..steps.len()).collect();
        by_constraint.sort_unstable_by_key(|&i| steps[i].constraint);
        for pair in by_constraint.windows(2) {
            if steps[pair[0]].constraint == steps[pair[1]].constraint {
                for &i in pair {
                    why[i] = Some("llg_par_compute_mask: the constraint is listed twice");
                }
            }
        }
        // Overlapping rows would be written by two threads at once. Sorted by start, the earlier
        // of two overlapping rows also overlaps its successor, so after flagging overlapping
        // neighbours no two unflagged rows overlap (empty rows are never written).
        let mut by_row: Vec<usize> = (0..steps.len())
            .filter(|&i| !steps[i].mask_dest.is_null() && steps[i].mask_byte_len > 0)
            .collect();
        by_row.sort_unstable_by_key(|&i| steps[i].mask_dest as usize);
        for pair in by_row.windows(2) {
            let (a, b) = (steps[pair[0]], steps[pair[1]]);
            let a_end = (a.mask_dest as usize).saturating_add(a.mask_byte_len);
            if a_end > b.mask_dest as usize {
                for &i in pair {
                    why[i] = Some("llg_par_compute_mask: mask_dest rows overlap");
                }
            }
        }
        let mut items = Vec::with_capacity(steps.len());
        for (s, why) in steps.iter().zip(why) {
            let constraint = s.constraint.cast::<Constraint>();
            let words = s.mask_byte_len / 4;
            let Some(why) = why else {
                items.push(Item {
                    constraint,
                    row: s.mask_dest,
                    words,
                });
                continue;
            };
            // SAFETY: 1. a live constraint handle (caller contract); 2. no work has started,
            // so this thread is its only user (a duplicate is visited twice, sequentially).
            let c = unsafe { &mut *constraint };
            c.set_error(why);
            if !s.mask_dest.is_null() && s.mask_dest.is_aligned() {
                // SAFETY: 1. non-NULL, aligned and writable for `mask_byte_len >= 4 * words`
                // bytes (caller contract); 2. no work has started; overlapping rows are
                // written one after the other.
                unsafe { core::ptr::write_bytes(s.mask_dest, 0, words) };
            }
        }
        let costs: Vec<sieve_core::MaskCost> = items
            .iter()
            // SAFETY: 1. a live constraint handle (caller contract), listed once (checked);
            // 2. no work has started, so this thread is its only user.
            .map(|item| unsafe { &*item.constraint }.cost_hint())
            .collect();
        let expected_ns = costs
            .iter()
            .zip(&items)
            .map(|(c, item)| c.typical_ns(item.words))
            .sum();
        Batch {
            order: sieve_runner::by_cost(&costs),
            expected_ns,
            items,
        }
    }

    /// Computes item `i` (nothing if there is none).
    fn run_item(&self, i: usize) {
        let Some(item) = self.items.get(i) else {
            return;
        };
        let _ = catch_panic(|| {
            // SAFETY: 1. the constraint and the row are live and used by this item only
            // (validated in `Batch::new`; each index is handed out once); 2. the row is
            // aligned and writable for `words` words.
            let (c, row) = unsafe {
                (
                    &mut *item.constraint,
                    core::slice::from_raw_parts_mut(item.row, item.words),
                )
            };
            c.fill_mask(row);
        });
    }

    /// Computes every item on the library's pool, the calling thread included, most
    /// expensive first.
    #[cfg(feature = "std")]
    fn run(&self) {
        // `run_item` catches its item's panic (a `guard` around it would too): the runner
        // has none to report.
        let _ = sieve_runner::run_expecting(&self.order, self.expected_ns, &|i| {
            self.run_item(i);
        });
    }

    /// Computes every item on the calling thread, one after the other (no `std`).
    #[cfg(not(feature = "std"))]
    fn run(&self) {
        for &i in &self.order {
            self.run_item(i);
        }
    }
}

/// Computes the masks of several constraints in parallel (LLGuidance's batch call).
///
/// Each step's mask goes to its `mask_dest`: the allowed tokens, or only the EOS bit when
/// the grammar can only end (`is_stop` of `llg_compute_mask`), or all zeros when the
/// constraint is (or gets) in error. A step that is malformed (NULL or unaligned
/// `mask_dest`, `mask_byte_len` not a multiple of 4 or below the vocabulary's mask size, a
/// constraint listed twice, overlapping rows) puts its constraint in error. NULL constraints
/// are skipped.
///
/// With `done_cb` NULL the call returns when all masks are written (and no library thread
/// touches the constraints or rows any more). Otherwise it returns at once, the work runs
/// on a thread of the library's pool, and `done_cb(user_data)` is called exactly once (on
/// that thread) when all masks are written; until then the host must not touch the
/// constraints or the rows. `sieve_shutdown_threads` (sieve.h) waits for pending callbacks
/// and joins the pool; it cannot be called from `done_cb` itself. `steps` NULL with `n_steps > 0` does no work (and still calls
/// `done_cb`). The step array is copied: it need not outlive the call. Without the `std`
/// feature everything (the callback included) runs on the calling thread before the return.
#[unsafe(no_mangle)]
pub extern "C" fn llg_par_compute_mask(
    steps: *const LlgConstraintStep,
    n_steps: usize,
    user_data: *const c_void,
    done_cb: LlgCallback,
) {
    let user = HostPtr::new(user_data.cast_mut());
    let done = move || {
        // Whole-value use, so the closure captures the `Send` wrapper, not its raw field.
        let user = user;
        if let Some(cb) = done_cb {
            // SAFETY: 1. the host's callback with its own pointer, callable from any thread
            // (LLGuidance's contract).
            unsafe { cb(user.0.cast_const()) };
        }
    };
    let batch = guard(None, || {
        // SAFETY: 1. NULL or readable for `n_steps` steps (caller contract).
        let steps = unsafe { input_slice(steps, n_steps) }?;
        // SAFETY: 1. each step's pointers follow the caller contract.
        Some(unsafe { Batch::new(steps) })
    });
    let Some(batch) = batch else {
        done();
        return;
    };
    if done_cb.is_none() {
        guard((), || batch.run());
        return;
    }
    run_async(batch, done);
}

/// Runs `batch`, then `done`, as a task on a pool thread (which the pool's other threads help
/// with the batch); both here if the pool cannot take it (shutting down, or no thread could
/// be started).
#[cfg(feature = "std")]
fn run_async(batch: Batch, done: impl FnOnce() + Send + 'static) {
    let task = Box::new(move || {
        guard((), || batch.run());
        // The last use of the host's data: after the callback the task only returns.
        done();
    });
    if let Err(task) = sieve_runner::global().spawn(task) {
        task();
    }
}

/// Without `std` there are no library threads: the batch runs here, then `done`, before
/// `llg_par_compute_mask` returns.
#[cfg(not(feature = "std"))]
fn run_async(batch: Batch, done: impl FnOnce()) {
    guard((), || batch.run());
    done();
}
