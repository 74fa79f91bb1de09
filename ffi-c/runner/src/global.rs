//! The process-wide pool that the bindings' batch calls share: made on first use with
//! [`threads`] threads, replaced by [`set_threads`], joined by [`shutdown`].

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::pool::{Panicked, Pool, on_worker, run_on_caller};

/// The pool batch calls use (`None`: not made yet, or shut down).
static GLOBAL: Mutex<Option<Arc<Pool>>> = Mutex::new(None);
/// Threads per batch set by [`set_threads`] (0: [`default_threads`]).
static THREADS: AtomicUsize = AtomicUsize::new(0);

fn slot() -> MutexGuard<'static, Option<Arc<Pool>>> {
    GLOBAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The default threads per batch, the caller included: `SIEVE_NUM_THREADS` if set to a
/// positive number, else `RAYON_NUM_THREADS` (honoured as sieve-py's earlier rayon pool and
/// LLGuidance's `llg_par_compute_mask` did), else one per CPU.
pub fn default_threads() -> usize {
    ["SIEVE_NUM_THREADS", "RAYON_NUM_THREADS"]
        .iter()
        .find_map(|v| {
            std::env::var(v)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .filter(|&n| n > 0)
        })
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The threads a batch call uses, the caller included: the last [`set_threads`], else
/// [`default_threads`].
pub fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => default_threads(),
        n => n,
    }
}

/// The process-wide pool, made now (with [`threads`] threads, so `threads() - 1` workers)
/// if there is none.
pub fn global() -> Arc<Pool> {
    Arc::clone(slot().get_or_insert_with(|| Arc::new(Pool::new(threads()))))
}

/// Runs `work(i)` for every `i` in `order` (started in that order) on the process-wide pool
/// ([`Pool::run`]); a batch of at most one item runs on the calling thread without making the
/// pool.
pub fn run(order: &[usize], work: &(dyn Fn(usize) + Sync)) -> Result<(), Panicked> {
    run_expecting(order, u64::MAX, work)
}

/// [`run`] for a batch expected to take about `expected_ns` nanoseconds of work in all
/// ([`Pool::run_expecting`]).
pub fn run_expecting(
    order: &[usize],
    expected_ns: u64,
    work: &(dyn Fn(usize) + Sync),
) -> Result<(), Panicked> {
    if order.len() <= 1 {
        return run_on_caller(order, work);
    }
    global().run_expecting(order, expected_ns, work)
}

/// [`shutdown`] or [`set_threads`] was called on a pool worker (from inside a task the pool
/// runs, such as an `llg_par_compute_mask` completion callback): a thread cannot join
/// itself, so nothing was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnPoolThread;

impl fmt::Display for OnPoolThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("called on a thread of sieve's pool (a thread cannot join itself)")
    }
}

impl std::error::Error for OnPoolThread {}

/// Why [`set_threads`] did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetThreadsError {
    /// Zero threads: a batch needs at least its caller.
    Zero,
    /// Called on a pool worker ([`OnPoolThread`]).
    OnPoolThread,
}

impl fmt::Display for SetThreadsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetThreadsError::Zero => f.write_str("the number of threads must be at least 1"),
            SetThreadsError::OnPoolThread => OnPoolThread.fmt(f),
        }
    }
}

impl std::error::Error for SetThreadsError {}

/// Sets the threads a batch call uses, the caller included. A pool of another size is
/// shut down (its workers finish what they run and are joined) and the next batch call makes
/// one of `n`; calls in flight on the old pool finish on their callers.
pub fn set_threads(n: usize) -> Result<(), SetThreadsError> {
    if n == 0 {
        return Err(SetThreadsError::Zero);
    }
    if on_worker() {
        return Err(SetThreadsError::OnPoolThread);
    }
    let old = {
        let mut slot = slot();
        THREADS.store(n, Ordering::Relaxed);
        match slot.as_ref() {
            Some(p) if p.threads() == n => None,
            _ => slot.take(),
        }
    };
    if let Some(old) = old {
        old.shutdown();
    }
    Ok(())
}

/// Shuts the process-wide pool down and joins all its threads: when this returns no thread
/// of this library runs (queued owned tasks, such as pending `llg_par_compute_mask`
/// callbacks, have finished first). The next batch call starts a new pool.
pub fn shutdown() -> Result<(), OnPoolThread> {
    if on_worker() {
        return Err(OnPoolThread);
    }
    let old = slot().take();
    if let Some(old) = old {
        old.shutdown();
    }
    Ok(())
}
