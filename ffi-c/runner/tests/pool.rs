//! The pool on its own: every item once, the caller working too, the completion barrier
//! (no worker active when a batch returns), panics reported, owned tasks, and a shutdown
//! (or drop) that joins every worker, thread-local destructors included.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use sieve_runner::{Pool, by_cost};

/// Busy work of about `n` iterations (so that items overlap on several threads).
fn spin(n: u64) -> u64 {
    (0..n).fold(0u64, |acc, x| {
        std::hint::black_box(acc.wrapping_mul(31) ^ x)
    })
}

#[test]
fn every_item_runs_once_and_workers_park_after_each_batch() {
    // Four threads take part in each call whatever the CPUs (the default caps a call at
    // one thread per CPU; see `calls_run_on_at_most_one_thread_per_cpu`).
    let pool = Pool::with_parallelism(4, 4);
    assert_eq!(pool.threads(), 4);
    assert_eq!(pool.workers(), 3);
    // Fewer rounds under miri (`cargo +nightly miri test -p sieve-runner`), which checks the
    // pool's unsafe code and runs its threads one step at a time.
    let rounds = if cfg!(miri) { 12 } else { 200 };
    for round in 0..rounds {
        let n = 1 + (round as usize * 7) % 37;
        let spins = if cfg!(miri) { 2 } else { 200 };
        let costs: Vec<u64> = (0..n as u64).map(|i| (i * 13 + round) % 5).collect();
        let order = by_cost(&costs);
        let counts: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let out: Vec<Mutex<u64>> = (0..n).map(|_| Mutex::new(0)).collect();
        pool.run(&order, &|i| {
            counts[i].fetch_add(1, Ordering::Relaxed);
            *out[i].lock().unwrap() = spin(spins * (costs[i] + 1)) ^ i as u64;
        })
        .unwrap();
        // The completion barrier: every worker has left the batch, none is still running.
        assert_eq!(pool.active_workers(), 0, "round {round}");
        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
        for (i, o) in out.iter().enumerate() {
            assert_eq!(*o.lock().unwrap(), spin(spins * (costs[i] + 1)) ^ i as u64);
        }
    }
    assert_eq!(pool.workers(), 3, "workers persist between batches");
}

#[test]
fn a_batch_returns_after_a_slow_item_on_a_worker() {
    let pool = Pool::with_parallelism(2, 2);
    for _ in 0..5 {
        let started = AtomicUsize::new(0);
        let finished = AtomicUsize::new(0);
        pool.run(&[0, 1], &|_| {
            // Both items start (so one runs on the worker) before either goes on.
            started.fetch_add(1, Ordering::SeqCst);
            while started.load(Ordering::SeqCst) < 2 {
                std::hint::spin_loop();
            }
            if thread::current()
                .name()
                .is_some_and(|n| n.starts_with("sieve-"))
            {
                thread::sleep(Duration::from_millis(40));
            }
            finished.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(finished.load(Ordering::SeqCst), 2);
        assert_eq!(pool.active_workers(), 0);
    }
}

#[test]
fn one_thread_runs_in_cost_order_on_the_caller() {
    let pool = Pool::new(1);
    assert_eq!(pool.workers(), 0);
    let seen = Mutex::new(Vec::new());
    let caller = thread::current().id();
    let costs = [1u8, 3, 0, 3, 2];
    pool.run(&by_cost(&costs), &|i| {
        assert_eq!(thread::current().id(), caller);
        seen.lock().unwrap().push(i);
    })
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), [1, 3, 4, 0, 2]);
    // An empty batch is fine.
    pool.run(&[], &|_| unreachable!()).unwrap();
}

#[test]
fn the_caller_and_the_workers_share_a_batch() {
    let pool = Pool::with_parallelism(3, 3);
    // Each item waits for the other two: three threads must hold one item each at once.
    let barrier = Barrier::new(3);
    let threads = Mutex::new(Vec::new());
    pool.run(&[0, 1, 2], &|_| {
        threads.lock().unwrap().push(thread::current().id());
        barrier.wait();
    })
    .unwrap();
    let mut ids = threads.into_inner().unwrap();
    assert!(ids.contains(&thread::current().id()), "the caller works");
    ids.sort_by_key(|id| format!("{id:?}"));
    ids.dedup();
    assert_eq!(ids.len(), 3);
    assert_eq!(pool.active_workers(), 0);
}

#[test]
fn calls_run_on_at_most_one_thread_per_cpu() {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let pool = Pool::new(cpus + 3);
    assert_eq!((pool.threads(), pool.workers()), (cpus + 3, cpus + 2));
    assert_eq!(pool.parallelism(), cpus);
    assert_eq!(Pool::with_parallelism(2, 5).parallelism(), 2);
    assert_eq!(Pool::with_parallelism(3, 0).parallelism(), 1);
    // Items that hold their thread until `cpus` of them run at once, and count how many
    // threads a call ever ran on together (the workers beyond the CPUs stay out).
    let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
    for _ in 0..if cfg!(miri) { 2 } else { 20 } {
        let order: Vec<usize> = (0..4 * cpus).collect();
        pool.run(&order, &|_| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            spin(2000);
            running.fetch_sub(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    assert!(
        most.load(Ordering::SeqCst) <= cpus,
        "{most:?} threads at once"
    );
    assert_eq!(pool.active_workers(), 0);
}

#[test]
fn a_panicking_item_is_reported_and_the_others_run() {
    let pool = Pool::new(3);
    let done = AtomicUsize::new(0);
    let order: Vec<usize> = (0..50).collect();
    let err = pool
        .run(&order, &|i| {
            if i == 17 {
                panic!("item {i} failed");
            }
            done.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap_err();
    assert_eq!(err.message, "item 17 failed");
    assert_eq!(done.load(Ordering::Relaxed), 49);
    assert_eq!(pool.active_workers(), 0);
    assert_eq!(pool.workers(), 2, "no worker died");
    pool.run(&order, &|_| {}).unwrap();
}

#[test]
fn callers_on_many_threads_share_one_pool() {
    let pool = Arc::new(Pool::new(3));
    let handles: Vec<_> = (0..6)
        .map(|t| {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let rounds = if cfg!(miri) { 4 } else { 50usize };
                for round in 0..rounds {
                    let n = 1 + (t + round) % 20;
                    let sum = AtomicUsize::new(0);
                    let order: Vec<usize> = (0..n).collect();
                    pool.run(&order, &|i| {
                        spin(300);
                        sum.fetch_add(i + 1, Ordering::Relaxed);
                    })
                    .unwrap();
                    assert_eq!(sum.load(Ordering::Relaxed), n * (n + 1) / 2);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(pool.active_workers(), 0);
}

#[test]
fn owned_tasks_run_on_a_worker_and_shutdown_waits_for_them() {
    let pool = Pool::new(1);
    let (tx, rx) = mpsc::channel();
    let finished = Arc::new(AtomicUsize::new(0));
    for k in 0..3 {
        let tx = tx.clone();
        let finished = Arc::clone(&finished);
        let task = Box::new(move || {
            thread::sleep(Duration::from_millis(20));
            let name = thread::current().name().map(str::to_owned);
            finished.fetch_add(1, Ordering::SeqCst);
            tx.send((k, name)).unwrap();
        });
        assert!(pool.spawn(task).is_ok());
    }
    assert_eq!(
        pool.workers(),
        1,
        "a pool of one thread starts a worker for owned tasks"
    );
    pool.shutdown();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        3,
        "shutdown ran the queued tasks first"
    );
    assert_eq!(pool.workers(), 0);
    drop(tx);
    let names: Vec<_> = rx.iter().map(|(_, n)| n.unwrap()).collect();
    assert!(names.iter().all(|n| n.starts_with("sieve-")), "{names:?}");
    // Shut down: batches run on the caller alone, owned tasks come back to the caller.
    assert!(pool.spawn(Box::new(|| {})).is_err());
    let sum = AtomicUsize::new(0);
    pool.run(&[1, 2, 3], &|i| {
        sum.fetch_add(i, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(sum.load(Ordering::Relaxed), 6);
}

/// Counts worker exits from a thread-local destructor, which runs at the very end of a
/// thread's life: a pool that detached its workers (as `std::thread::scope` with dropped
/// handles did) would return from `shutdown` before these ran.
mod exits {
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub static EXITED: AtomicUsize = AtomicUsize::new(0);

    pub struct Mark;

    impl Drop for Mark {
        fn drop(&mut self) {
            // Make the exit slow, so that a missing join shows.
            std::thread::sleep(std::time::Duration::from_millis(30));
            EXITED.fetch_add(1, Ordering::SeqCst);
        }
    }

    thread_local! {
        pub static MARK: Mark = const { Mark };
    }

    /// Marks the current thread (once) if it is a pool worker.
    pub fn mark() {
        if std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("sieve-"))
        {
            MARK.with(|_| ());
        }
    }

    pub fn exited() -> usize {
        EXITED.load(Ordering::SeqCst)
    }
}

#[test]
fn shutdown_and_drop_join_every_worker() {
    for threads in [2, 4] {
        let before = exits::exited();
        let pool = Pool::with_parallelism(threads, threads);
        let barrier = Barrier::new(threads);
        let order: Vec<usize> = (0..threads).collect();
        pool.run(&order, &|_| {
            exits::mark();
            barrier.wait();
        })
        .unwrap();
        assert_eq!(pool.active_workers(), 0);
        // Parked, not exited.
        assert_eq!(exits::exited(), before);
        assert_eq!(pool.workers(), threads - 1);
        if threads == 2 {
            pool.shutdown();
            assert_eq!(pool.workers(), 0);
            assert_eq!(exits::exited(), before + 1, "shutdown joined the worker");
            drop(pool);
        } else {
            drop(pool);
            assert_eq!(
                exits::exited(),
                before + threads - 1,
                "drop joined the workers"
            );
        }
    }
}
