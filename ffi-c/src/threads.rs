//! The library's thread pool, as the C ABI sees it: how many threads a batch call uses, and
//! an explicit shutdown that joins them all.
//!
//! The pool is `sieve-runner`'s process-wide pool (shared by `sieve_compute_masks` and
//! `llg_par_compute_mask`): started by the first batch call that needs it, its threads
//! idle between calls (polling for 200 µs, then asleep), joined by `sieve_shutdown_threads`. Without the `std` feature there
//! are no threads: these functions only check their arguments.

use crate::boundary::ffi_boundary;
use crate::status::sieve_status;

/// Sets how many threads a batch call (`sieve_compute_masks`, `llg_par_compute_mask`) uses,
/// the calling thread included (default: `SIEVE_NUM_THREADS`, else `RAYON_NUM_THREADS`, else
/// one per CPU). A pool of another size is shut down (its threads joined) and the next batch
/// call starts one of `n`; a call in flight finishes on its own thread.
///
/// `SIEVE_STATUS_INVALID_ARGUMENT` for `n == 0`, or when called on one of the pool's threads
/// (from an `llg_par_compute_mask` completion callback); nothing changes then. Without the
/// `std` feature there are no threads: any `n > 0` is accepted and changes nothing.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_set_num_threads(n: usize) -> sieve_status {
    ffi_boundary! {
        if n == 0 {
            return sieve_status::InvalidArgument;
        }
        #[cfg(feature = "std")]
        if sieve_runner::set_threads(n).is_err() {
            return sieve_status::InvalidArgument;
        }
        sieve_status::Ok
    }
}

/// The number of threads a batch call uses, the calling thread included (1 without the
/// `std` feature).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_num_threads() -> usize {
    ffi_boundary! {
        #[cfg(feature = "std")]
        let n = sieve_runner::threads();
        #[cfg(not(feature = "std"))]
        let n = 1;
        n
    }
}

/// Shuts the library's thread pool down: waits for pending work (an `llg_par_compute_mask`
/// with a completion callback still running) and joins every pool thread, so that when it
/// returns `SIEVE_STATUS_OK` no thread of the library runs. Call it before unloading the
/// library or before the process exits under a leak checker. A later batch call starts the
/// pool again.
///
/// `SIEVE_STATUS_INVALID_ARGUMENT` when called on one of the pool's threads (from a
/// completion callback: a thread cannot join itself); nothing is shut down then. Without the
/// `std` feature there are no threads and it returns `SIEVE_STATUS_OK`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_shutdown_threads() -> sieve_status {
    ffi_boundary! {
        #[cfg(feature = "std")]
        if sieve_runner::shutdown().is_err() {
            return sieve_status::InvalidArgument;
        }
        sieve_status::Ok
    }
}
