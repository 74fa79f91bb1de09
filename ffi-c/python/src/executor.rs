//! The batch calls' executor: the calling thread works through the items itself, and helper
//! threads of a rayon pool join in as they wake up.
//!
//! Why not `ThreadPool::install`: there the caller only waits, so every call pays a sleeping
//! pool thread's wake-up (tens of µs) before any work starts, and on a loaded machine the
//! call waits for whichever pool thread the OS has descheduled. Here a batch of cheap masks
//! is done by the caller before a helper is even awake, and a helper that wakes late finds
//! no work left and returns.
//!
//! Invariants: items are claimed with one atomic counter, so each runs exactly once; the
//! borrowed work closure is reached only through a claim (`i < n`), and the caller returns
//! only after every claimed item has finished, so no helper touches it afterwards; a panic in
//! an item is caught, counted as finished, and reported to the caller.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::thread::{self, Thread};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The helpers (`None`: the caller alone); built on first use.
static POOL: RwLock<Option<Option<Arc<rayon::ThreadPool>>>> = RwLock::new(None);

/// A pool of `threads - 1` helpers (the caller is the other thread).
fn build(threads: usize) -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    if threads <= 1 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads - 1)
        .thread_name(|i| format!("sieve-{i}"))
        .build()
        .map(|p| Some(Arc::new(p)))
        .map_err(|e| PyValueError::new_err(format!("thread pool: {e}")))
}

fn helpers() -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return Ok(p.clone());
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = slot.as_ref() {
        return Ok(p.clone());
    }
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| thread::available_parallelism().map_or(1, |n| n.get()));
    let p = build(threads)?;
    *slot = Some(p.clone());
    Ok(p)
}

/// Sets how many threads a batch call uses, the calling thread included (default: one per
/// CPU, or `RAYON_NUM_THREADS`). Takes effect for the calls that start after it.
#[pyfunction]
pub fn set_num_threads(n: usize) -> PyResult<()> {
    if n == 0 {
        return Err(PyValueError::new_err("n must be at least 1"));
    }
    let p = build(n)?;
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some(p);
    Ok(())
}

/// A borrowed work closure with its lifetime erased; see the module invariants.
type Work = *const (dyn Fn(usize) + Sync);

/// One batch, shared by the caller and the helpers.
struct Job {
    work: Work,
    n: usize,
    next: AtomicUsize,
    finished: AtomicUsize,
    panicked: AtomicBool,
    caller: Thread,
}

// SAFETY: `work` points to a `Sync` closure that outlives every use (module invariants);
// everything else is atomics and a `Thread` handle.
unsafe impl Send for Job {}
// SAFETY: as above.
unsafe impl Sync for Job {}

impl Job {
    /// Claims and runs items until none are left.
    fn drain(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            if i >= self.n {
                return;
            }
            // SAFETY: `i < n` was claimed, so the caller is still waiting (it returns only
            // once all `n` claimed items finished) and the closure is alive.
            let work = unsafe { &*self.work };
            if catch_unwind(AssertUnwindSafe(|| work(i))).is_err() {
                self.panicked.store(true, Ordering::Release);
            }
            if self.finished.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
                self.caller.unpark();
            }
        }
    }
}

/// Runs `f(i)` for every `i < n`, on the calling thread and the pool's helpers, and returns
/// the results in order. Call it with the GIL released.
pub fn run<T: Send + Sync>(n: usize, f: impl Fn(usize) -> T + Sync) -> PyResult<Vec<T>> {
    let slots: Vec<OnceLock<T>> = (0..n).map(|_| OnceLock::new()).collect();
    let item = |i: usize| {
        let _ = slots[i].set(f(i));
    };
    let pool = if n > 1 { helpers()? } else { None };
    match pool {
        None => (0..n).for_each(item),
        Some(pool) => {
            let work: &(dyn Fn(usize) + Sync) = &item;
            // SAFETY: only the lifetime is erased; the invariants keep every use of the
            // pointer inside this call.
            let work: Work = unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync), Work>(work) };
            let job = Arc::new(Job {
                work,
                n,
                next: AtomicUsize::new(0),
                finished: AtomicUsize::new(0),
                panicked: AtomicBool::new(false),
                caller: thread::current(),
            });
            for _ in 0..pool.current_num_threads().min(n - 1) {
                let job = job.clone();
                pool.spawn(move || job.drain());
            }
            job.drain();
            while job.finished.load(Ordering::Acquire) < n {
                thread::park_timeout(Duration::from_millis(1));
            }
            if job.panicked.load(Ordering::Acquire) {
                return Err(PyRuntimeError::new_err("sieve: a batch item panicked"));
            }
        }
    }
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .ok_or_else(|| PyRuntimeError::new_err("sieve: a batch item did not finish"))
        })
        .collect()
}
