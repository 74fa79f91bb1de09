//! Mask workers that live for a whole generation.
//!
//! Each step the loop hands every active sequence's matcher (moved, with its mask buffer) to
//! the pool, runs the forward pass, then takes the matchers back with their masks. The
//! workers are started once: a thread spawned per step costs tens of microseconds of the
//! loop's own time, and its exit unmaps a stack while the forward pass runs on the other
//! core.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sieve_core::{Matcher, MatcherError};

/// One mask to compute.
pub(crate) struct Job {
    /// The sequence it belongs to.
    pub seq: usize,
    pub matcher: Matcher,
    pub mask: Vec<u32>,
    /// Budget mode: tokens left, counting the one this mask is for.
    pub remaining: Option<usize>,
}

/// A computed mask, with the matcher handed back.
pub(crate) struct Done {
    pub seq: usize,
    pub matcher: Matcher,
    pub mask: Vec<u32>,
    pub result: Result<(), MatcherError>,
    pub elapsed: Duration,
}

/// `n` worker threads computing masks.
pub(crate) struct MaskPool {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    workers: Vec<JoinHandle<()>>,
}

impl MaskPool {
    /// Starts `n` workers (at least 1).
    pub fn new(n: usize) -> MaskPool {
        let (jobs, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let (tx_done, done) = channel::<Done>();
        let workers = (0..n.max(1))
            .map(|_| {
                let rx = Arc::clone(&rx);
                let tx = tx_done.clone();
                std::thread::spawn(move || {
                    loop {
                        // The lock is held only while waiting for the next job.
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok(mut job) = job else { return };
                        let t = Instant::now();
                        let result = super::generate::next_mask(
                            &mut job.matcher,
                            &mut job.mask,
                            job.remaining,
                        );
                        let done = Done {
                            seq: job.seq,
                            matcher: job.matcher,
                            mask: job.mask,
                            result,
                            elapsed: t.elapsed(),
                        };
                        if tx.send(done).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        MaskPool {
            jobs: Some(jobs),
            done,
            workers,
        }
    }

    /// Queues a job.
    pub fn submit(&self, job: Job) -> anyhow::Result<()> {
        self.jobs
            .as_ref()
            .and_then(|j| j.send(job).ok())
            .ok_or_else(|| anyhow::anyhow!("the mask workers are gone"))
    }

    /// The next finished job (blocks).
    pub fn next_done(&self) -> anyhow::Result<Done> {
        self.done
            .recv()
            .map_err(|_| anyhow::anyhow!("a mask worker panicked"))
    }
}

impl Drop for MaskPool {
    fn drop(&mut self) {
        // Closing the job channel ends every worker's loop.
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}
