//! Batch mask computation: N distinct matchers at once, on the library's thread pool (the
//! shared runner of `sieve-runner`: persistent threads, the caller working too) or on a
//! host-supplied executor (so a runtime can overlap masks with its forward pass on its own
//! pool). Either way the items start most expensive first (`Matcher::mask_cost_hint`).
//!
//! Invariants: the matcher list is checked for NULLs and duplicates before any work, so each
//! work item has exclusive use of its matcher and its mask row; an item runs at most once (a
//! claim flag per item), and an item an executor never ran reports
//! `SIEVE_STATUS_CALLBACK_ERROR` with a zeroed row.

use alloc::vec::Vec;
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use sieve_core::Matcher;

use crate::boundary::{catch_panic, ffi_boundary, input_slice, output_slice};
use crate::matcher::{compute_mask_into, sieve_matcher};
use crate::status::sieve_status;

/// Runs work item `i` of `job`. Called by a host executor (see `sieve_executor_fn`); safe to
/// call from any thread, concurrently for different `i`. Item `i` is the matcher with the
/// `i`-th most expensive next mask (ties in list order), so an executor that starts items in
/// index order starts the long masks first.
pub type sieve_run_item_fn = unsafe extern "C" fn(job: *mut c_void, i: usize);

/// A host executor: must call `run_item(job, i)` exactly once for every `i` in
/// `0..n_items` (in any order, on any threads, concurrently or not) and return only after
/// all those calls have returned. `ctx` is the host's own pointer, passed through.
pub type sieve_executor_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        n_items: usize,
        run_item: sieve_run_item_fn,
        job: *mut c_void,
    ),
>;

/// One batch: validated inputs plus per-item claim flags and statuses.
struct Job {
    matchers: Vec<*mut Matcher>,
    /// Matcher indices, most expensive next mask first: work item `k` is matcher `order[k]`.
    order: Vec<usize>,
    /// The batch's expected work (`MaskCost::typical_ns`), for the runner's wake-ups.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    expected_ns: u64,
    masks: *mut u32,
    mask_words: usize,
    claimed: Vec<AtomicBool>,
    statuses: Vec<AtomicU32>,
}

// SAFETY: 1. the matchers are distinct (checked) and each is touched only by the one call that
// claims its index; 2. mask rows are disjoint, one per index; 3. the claim flags and statuses
// are atomics. So sharing `&Job` across threads creates no data race.
unsafe impl Sync for Job {}

impl Job {
    /// Computes matcher `i`'s mask into row `i` (once: a second call does nothing).
    fn run(&self, i: usize) {
        let (Some(claim), Some(status), Some(&m)) = (
            self.claimed.get(i),
            self.statuses.get(i),
            self.matchers.get(i),
        ) else {
            return;
        };
        if claim.swap(true, Ordering::AcqRel) {
            return;
        }
        let result = catch_panic(|| {
            // SAFETY: 1. `m` is a live, non-NULL matcher handle (checked) that only this
            // claimed item touches; 2. row `i` lies inside the `n * mask_words` words the
            // caller provided and no other item writes it.
            let (m, row) = unsafe {
                (
                    &mut *m,
                    core::slice::from_raw_parts_mut(
                        self.masks.add(i * self.mask_words),
                        self.mask_words,
                    ),
                )
            };
            compute_mask_into(m, row)
        });
        let s = result.unwrap_or(sieve_status::Panic);
        status.store(s as u32, Ordering::Release);
    }

    /// After all runs: zero the rows of items never run; copy statuses out; the first failure.
    fn finish(&self, statuses: &mut [u32]) -> sieve_status {
        let mut first = sieve_status::Ok;
        for (i, (claim, s)) in self.claimed.iter().zip(&self.statuses).enumerate() {
            if !claim.load(Ordering::Acquire) {
                // SAFETY: 1. row `i` lies inside the caller's buffer; 2. all runs have
                // returned, so nothing else accesses it.
                unsafe {
                    core::ptr::write_bytes(self.masks.add(i * self.mask_words), 0, self.mask_words)
                };
            }
            let s =
                sieve_status::try_from(s.load(Ordering::Acquire)).unwrap_or(sieve_status::Panic);
            if let Some(out) = statuses.get_mut(i) {
                *out = s as u32;
            }
            if first == sieve_status::Ok {
                first = s;
            }
        }
        first
    }
}

/// Checks the arguments shared by both batch entry points and builds the job.
/// The handles of a batch as matchers: none NULL (`NullArgument`), none repeated
/// (`InvalidArgument`: two items would write through one matcher at once).
pub(crate) fn distinct_matchers(
    list: &[*mut sieve_matcher],
) -> Result<Vec<*mut Matcher>, sieve_status> {
    if list.iter().any(|m| m.is_null()) {
        return Err(sieve_status::NullArgument);
    }
    let mut sorted: Vec<*mut sieve_matcher> = list.to_vec();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Err(sieve_status::InvalidArgument);
    }
    Ok(list.iter().map(|m| m.cast::<Matcher>()).collect())
}

fn prepare<'a>(
    matchers: *const *mut sieve_matcher,
    n: usize,
    masks: *mut u32,
    mask_words: usize,
    statuses: *mut u32,
) -> Result<(Job, &'a mut [u32]), sieve_status> {
    // SAFETY: 1. NULL or readable for `n` handles (caller contract).
    let list = unsafe { input_slice(matchers, n) }.ok_or(sieve_status::NullArgument)?;
    let total = n
        .checked_mul(mask_words)
        .ok_or(sieve_status::InvalidArgument)?;
    // SAFETY: 1. NULL or writable for `n * mask_words` words (caller contract). Only its
    // length is used here; rows are written through the raw pointer, one item each.
    let mask_buf = unsafe { output_slice(masks, total) }.ok_or(sieve_status::NullArgument)?;
    // SAFETY: 1. NULL or writable for `n` statuses (caller contract) for the whole call.
    let statuses = unsafe { output_slice(statuses, n) }.ok_or(sieve_status::NullArgument)?;
    let matchers = distinct_matchers(list)?;
    let costs: Vec<sieve_core::MaskCost> = matchers
        .iter()
        // SAFETY: 1. live, non-NULL matcher handles (checked; caller contract), not in use
        // elsewhere during the call; no work has started, so this is their only user.
        .map(|&m| unsafe { &*m }.mask_cost_hint())
        .collect();
    let job = Job {
        order: sieve_runner::by_cost(&costs),
        expected_ns: costs.iter().map(|c| c.typical_ns(mask_words)).sum(),
        matchers,
        masks: mask_buf.as_mut_ptr(),
        mask_words,
        claimed: (0..n).map(|_| AtomicBool::new(false)).collect(),
        statuses: (0..n)
            .map(|_| AtomicU32::new(sieve_status::CallbackError as u32))
            .collect(),
    };
    Ok((job, statuses))
}

/// Computes the masks of `n` distinct matchers: row `i` of `masks` (words
/// `i * mask_words ..< (i + 1) * mask_words`) receives matcher `i`'s mask and `statuses[i]`
/// its `sieve_status`. The calling thread works through the items together with up to
/// `sieve_num_threads() - 1` threads of the library's pool (started on first use, idle
/// between calls, joined by `sieve_shutdown_threads`; one call runs on at most one thread
/// per CPU), most expensive mask first; when the
/// call returns no pool thread touches the matchers or the buffers any more. A build
/// without the `std` feature computes the masks one after the other on the calling thread.
///
/// Returns the first failing item's status (or `SIEVE_STATUS_OK`); a failed item's row is all
/// zero. Argument errors (a NULL or repeated matcher, NULL buffers, an overflowing size)
/// return before any work and write nothing. The matchers must not be in use elsewhere
/// during the call.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_compute_masks(
    matchers: *const *mut sieve_matcher,
    n: usize,
    masks: *mut u32,
    mask_words: usize,
    statuses: *mut u32,
) -> sieve_status {
    ffi_boundary! {
        let (job, statuses) = match prepare(matchers, n, masks, mask_words, statuses) {
            Ok(x) => x,
            Err(s) => return s,
        };
        run_all(&job);
        job.finish(statuses)
    }
}

/// Runs every item of `job` on the library's pool, the calling thread included.
#[cfg(feature = "std")]
fn run_all(job: &Job) {
    // `Job::run` catches its item's panic (a `SIEVE_STATUS_PANIC` status), so the runner
    // has none to report.
    let _ = sieve_runner::run_expecting(&job.order, job.expected_ns, &|i| job.run(i));
}

/// Runs every item of `job` one after the other on the calling thread (no `std`, no
/// threads; a host with cores to spare uses `sieve_compute_masks_with_executor`).
#[cfg(not(feature = "std"))]
fn run_all(job: &Job) {
    for &i in &job.order {
        job.run(i);
    }
}

/// The trampoline handed to host executors.
///
/// # Safety
/// `job` is the pointer passed to the executor by `sieve_compute_masks_with_executor`, used
/// only before that call returns.
unsafe extern "C" fn run_item(job: *mut c_void, i: usize) {
    if job.is_null() {
        return;
    }
    // SAFETY: 1. `job` points at the live `Job` of the enclosing call (contract above).
    let job = unsafe { &*job.cast::<Job>() };
    // `Job::run` catches panics of the computation; nothing else here can panic, but an
    // unwind must never reach the host's frames. Out-of-range items are ignored.
    let _ = catch_panic(|| {
        if let Some(&m) = job.order.get(i) {
            job.run(m);
        }
    });
}

/// Like `sieve_compute_masks`, but the work items run on the host's executor: `executor(ctx,
/// n, run_item, job)` is called once, and must call `run_item(job, i)` exactly once for each
/// `i < n` before returning (see `sieve_executor_fn`). Item `i` is the matcher whose next
/// mask is the `i`-th most expensive (see `sieve_run_item_fn`); rows and statuses stay
/// indexed by the matcher list. An item it skips leaves its matcher's status
/// `SIEVE_STATUS_CALLBACK_ERROR` and its row zeroed; an item it runs twice runs once.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_compute_masks_with_executor(
    matchers: *const *mut sieve_matcher,
    n: usize,
    masks: *mut u32,
    mask_words: usize,
    statuses: *mut u32,
    executor: sieve_executor_fn,
    ctx: *mut c_void,
) -> sieve_status {
    ffi_boundary! {
        let Some(executor) = executor else {
            return sieve_status::NullArgument;
        };
        let (job, statuses) = match prepare(matchers, n, masks, mask_words, statuses) {
            Ok(x) => x,
            Err(s) => return s,
        };
        if n > 0 {
            let job_ptr = (&raw const job).cast_mut().cast::<c_void>();
            // SAFETY: 1. `executor` is the host's function, called with its own `ctx`; 2. the
            // job pointer stays valid until it returns, which by contract is after every
            // `run_item` call has returned.
            unsafe { executor(ctx, n, run_item, job_ptr) };
        }
        job.finish(statuses)
    }
}
