//! The process-wide pool (one test, since it is process-wide): sized by `set_threads`, made
//! lazily, refused calls from its own threads, and `shutdown` leaving no thread of the pool
//! in the process (on Linux, checked in `/proc/self/task`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, mpsc};

use sieve_runner::{OnPoolThread, SetThreadsError};

/// The pool's threads that the OS still lists (Linux; `None` elsewhere, and under miri,
/// whose threads the OS does not see).
fn os_pool_threads() -> Option<usize> {
    if cfg!(miri) {
        return None;
    }
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    Some(
        tasks
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.starts_with("sieve-"))
            .count(),
    )
}

/// [`os_pool_threads`] once it reaches `want`, polled at most 200 times 10 ms apart: the
/// count lags the pool both ways (a thread names itself once it runs, so a worker just
/// spawned still shows its parent's name; a joined thread is listed until it is reaped).
fn os_pool_threads_settling_at(want: usize) -> Option<usize> {
    let mut n = os_pool_threads()?;
    for _ in 0..200 {
        if n == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        n = os_pool_threads()?;
    }
    Some(n)
}

/// A batch of `threads` items that each wait for all the others: every thread that one call
/// of the pool can run on (its `parallelism`) takes part.
fn full_batch(threads: usize) {
    let barrier = Barrier::new(threads);
    let ran = AtomicUsize::new(0);
    let order: Vec<usize> = (0..threads).collect();
    sieve_runner::run(&order, &|_| {
        barrier.wait();
        ran.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), threads);
}

#[test]
fn global_pool_lifecycle() {
    assert_eq!(sieve_runner::set_threads(0), Err(SetThreadsError::Zero));
    sieve_runner::set_threads(3).unwrap();
    assert_eq!(sieve_runner::threads(), 3);
    // One call runs on at most one thread per CPU (the CI machine has 2).
    let pool = sieve_runner::global();
    assert_eq!(pool.threads(), 3);
    full_batch(pool.parallelism());
    assert_eq!((pool.workers(), pool.active_workers()), (2, 0));
    if let Some(n) = os_pool_threads_settling_at(2) {
        assert_eq!(n, 2, "two parked workers");
    }
    // The same size keeps the pool; another size replaces (and joins) it.
    sieve_runner::set_threads(3).unwrap();
    assert!(Arc::ptr_eq(&pool, &sieve_runner::global()));
    drop(pool);

    // On a pool thread, shutdown and set_threads are refused.
    let (tx, rx) = mpsc::channel();
    sieve_runner::global()
        .spawn(Box::new(move || {
            let _ = tx.send((sieve_runner::shutdown(), sieve_runner::set_threads(2)));
        }))
        .unwrap_or_else(|_| panic!("spawn refused"));
    assert_eq!(
        rx.recv().unwrap(),
        (Err(OnPoolThread), Err(SetThreadsError::OnPoolThread))
    );

    sieve_runner::set_threads(2).unwrap();
    full_batch(sieve_runner::global().parallelism());
    assert_eq!(sieve_runner::global().workers(), 1);

    sieve_runner::shutdown().unwrap();
    // Joined: the threads have run to their end (the kernel may list one a moment longer).
    if let Some(left) = os_pool_threads_settling_at(0) {
        assert_eq!(left, 0, "no pool thread after shutdown");
    }
    sieve_runner::shutdown().unwrap();

    // The next batch makes the pool again.
    full_batch(sieve_runner::global().parallelism());
    assert_eq!(sieve_runner::global().workers(), 1);
    sieve_runner::shutdown().unwrap();
}
