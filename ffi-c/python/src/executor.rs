//! The batch calls' executor: `sieve-runner`'s process-wide pool (`ffi-c/runner`, the runner
//! the C and C++ batch calls use too). The calling thread works through the items itself,
//! most expensive first, and pool threads join in: at once if they are still polling after
//! the last call (for 200 µs), else as they wake (a batch expected to be cheaper than a
//! wake-up wakes none); the call returns only once every
//! helper has let go of it. The pool's threads are started once and idle between calls;
//! `shutdown_threads` joins them.
//!
//! Invariants: each item runs exactly once (the runner hands out positions of `order` with
//! one atomic counter) and writes only its own result slot; a panic in an item is caught,
//! the other items still run, and the call raises `RuntimeError`.

use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Sets how many threads a batch call uses, the calling thread included (default: one per
/// CPU, or `SIEVE_NUM_THREADS` / `RAYON_NUM_THREADS`). Takes effect for the calls that start
/// after it; a pool of another size is shut down (its threads joined).
#[pyfunction]
pub fn set_num_threads(py: Python<'_>, n: usize) -> PyResult<()> {
    py.detach(|| sieve_runner::set_threads(n))
        .map_err(|e| PyValueError::new_err(format!("set_num_threads: {e}")))
}

/// How many threads a batch call uses, the calling thread included.
#[pyfunction]
pub fn get_num_threads() -> usize {
    sieve_runner::threads()
}

/// Joins every thread of sieve's pool: when it returns, no sieve thread runs. The next batch
/// call starts the pool again. For a host that must see the threads gone (before `fork`,
/// under a leak checker); an idle pool's threads only sleep.
#[pyfunction]
pub fn shutdown_threads(py: Python<'_>) -> PyResult<()> {
    py.detach(sieve_runner::shutdown)
        .map_err(|e| PyRuntimeError::new_err(format!("shutdown_threads: {e}")))
}

/// Runs `f(i)` for every `i` in `order` (a permutation of `0..n`, started in that order: see
/// `sieve_runner::by_cost`), on the calling thread and the pool's threads, and returns the
/// results by `i`. `expected_ns`: the batch's expected work (`sieve_runner::run_expecting`).
/// Call it with the GIL released.
pub fn run<T: Send + Sync>(
    order: &[usize],
    expected_ns: u64,
    f: impl Fn(usize) -> T + Sync,
) -> PyResult<Vec<T>> {
    let slots: Vec<OnceLock<T>> = (0..order.len()).map(|_| OnceLock::new()).collect();
    let item = |i: usize| {
        if let Some(slot) = slots.get(i) {
            let _ = slot.set(f(i));
        }
    };
    sieve_runner::run_expecting(order, expected_ns, &item)
        .map_err(|e| PyRuntimeError::new_err(format!("sieve: {e}")))?;
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .ok_or_else(|| PyRuntimeError::new_err("sieve: a batch item did not finish"))
        })
        .collect()
}

/// [`run`] over `0..n` in index order, for items of about `item_ns` each.
pub fn run_in_order<T: Send + Sync>(
    n: usize,
    item_ns: u64,
    f: impl Fn(usize) -> T + Sync,
) -> PyResult<Vec<T>> {
    let order: Vec<usize> = (0..n).collect();
    run(&order, item_ns.saturating_mul(n as u64), f)
}
