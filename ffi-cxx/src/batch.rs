//! Batch masks for C++ ([`compute_masks`]) on `sieve-runner`'s pool (`ffi-c/runner`, the
//! runner the C and Python batch calls use too), and the pool's size and shutdown.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use crate::{Error, ErrorCode, Matcher, guard, guard_or};

/// One work item: a matcher, its row and its status, each used by this item only.
struct Item<'a> {
    matcher: &'a mut Matcher,
    row: &'a mut [u32],
    status: &'a mut ErrorCode,
}

impl Item<'_> {
    fn run(&mut self) {
        let m = &mut self.matcher.matcher;
        let result = catch_unwind(AssertUnwindSafe(|| m.compute_mask(self.row)));
        *self.status = match result {
            Ok(Ok(())) => ErrorCode::Ok,
            Ok(Err(e)) => ErrorCode::from_matcher(&e),
            Err(_) => ErrorCode::Panic,
        };
        if *self.status != ErrorCode::Ok {
            self.row.fill(0);
        }
    }
}

/// Computes the masks of several matchers at once: row `i` of `masks` (words
/// `i * mask_words .. (i + 1) * mask_words`) receives `matchers[i]`'s mask and
/// `statuses[i]` its outcome (`ErrorCode::Ok`, or the matcher's error with the row zeroed).
/// The calling thread works through the items with up to [`num_threads`]` - 1` threads of
/// the library's pool, most expensive mask first; when it returns no pool thread touches the
/// matchers or the buffers.
///
/// # Errors
/// [`ErrorCode::InsufficientSize`] when `masks` is shorter than `matchers.len() *
/// mask_words` words or `statuses` shorter than `matchers.len()` (nothing is computed then).
pub fn compute_masks(
    matchers: &mut [Box<Matcher>],
    masks: &mut [u32],
    mask_words: usize,
    statuses: &mut [ErrorCode],
) -> Result<(), Error> {
    guard(|| {
        let n = matchers.len();
        let need = n.saturating_mul(mask_words);
        if masks.len() < need || statuses.len() < n {
            return Err(Error::new(
                ErrorCode::InsufficientSize,
                format_args!(
                    "{n} matchers need {need} mask words and {n} statuses; got {} and {}",
                    masks.len(),
                    statuses.len()
                ),
            ));
        }
        let costs: Vec<sieve_core::MaskCost> = matchers
            .iter()
            .map(|m| m.matcher.mask_cost_hint())
            .collect();
        let order = sieve_runner::by_cost(&costs);
        let expected_ns = costs.iter().map(|c| c.typical_ns(mask_words)).sum();
        let mut rows = masks;
        let items: Vec<Mutex<Item<'_>>> = matchers
            .iter_mut()
            .zip(statuses.iter_mut())
            .map(|(m, status)| {
                let (row, rest) = std::mem::take(&mut rows).split_at_mut(mask_words);
                rows = rest;
                Mutex::new(Item {
                    matcher: m,
                    row,
                    status,
                })
            })
            .collect();
        // Each item is locked once, by the one thread that claims it.
        sieve_runner::run_expecting(&order, expected_ns, &|i| {
            items[i].lock().unwrap_or_else(|e| e.into_inner()).run();
        })
        .map_err(|e| Error::new(ErrorCode::Panic, e))
    })
}

/// Sets how many threads [`compute_masks`] uses, the calling thread included (default:
/// `SIEVE_NUM_THREADS`, else `RAYON_NUM_THREADS`, else one per CPU); a pool of another size
/// is shut down (its threads joined).
///
/// # Errors
/// [`ErrorCode::InvalidArgument`] for 0.
pub fn set_num_threads(n: usize) -> Result<(), Error> {
    guard(|| sieve_runner::set_threads(n).map_err(|e| Error::new(ErrorCode::InvalidArgument, e)))
}

/// How many threads [`compute_masks`] uses, the calling thread included.
pub fn num_threads() -> usize {
    guard_or(1, sieve_runner::threads)
}

/// Joins every thread of the library's pool: when it returns, no library thread runs (call
/// it before the program exits under a leak checker, or before unloading the library). The
/// next [`compute_masks`] starts the pool again.
///
/// # Errors
/// Only [`ErrorCode::Panic`].
pub fn shutdown_threads() -> Result<(), Error> {
    guard(|| sieve_runner::shutdown().map_err(|e| Error::new(ErrorCode::InvalidArgument, e)))
}
