//! The pool: worker threads parked on a condition variable, help requests for batches run by
//! their callers, owned tasks, and a shutdown that joins every worker (see the crate docs).
//!
//! Invariants:
//! - A help request points at a [`Job`] on its caller's stack. The caller withdraws its
//!   unserved requests and waits until the job's `joined` count is zero before the job goes
//!   out of scope ([`Posted`]'s `Drop`), and a worker increments `joined` when it pops a
//!   request and decrements it as its last use of the job, both under the pool's mutex. So a
//!   worker dereferences a job only while its caller is still waiting.
//! - `State::workers` counts the started workers that have not exited; help requests are
//!   posted only while it is non-zero and the pool is not shutting down, and a worker exits
//!   only when the queue is empty and the pool is shutting down, so every posted request is
//!   either served or withdrawn.

use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle};

thread_local! {
    /// The id of the pool this thread works for (0: not a pool worker). A `const` `Cell` of
    /// a plain integer: no allocation and no destructor in any thread.
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}

/// Pool ids (0 means "none").
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Whether the current thread is a worker of any pool.
pub(crate) fn on_worker() -> bool {
    WORKER_OF.with(Cell::get) != 0
}

/// A batch item panicked: the batch ran to the end, and this is the first panic's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panicked {
    /// The panic message (`"<non-string panic payload>"` when it was not a string).
    pub message: String,
}

impl fmt::Display for Panicked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a batch item panicked: {}", self.message)
    }
}

impl std::error::Error for Panicked {}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Drops a panic payload; a payload whose `Drop` panics in turn is leaked instead.
fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(|| drop(payload))) {
        std::mem::forget(again);
    }
}

/// One call of [`Pool::run`]: shared by its caller and the workers that help.
struct Job<'a> {
    /// Item indices in the order they start.
    order: &'a [usize],
    work: &'a (dyn Fn(usize) + Sync),
    /// The next position of `order` to hand out.
    next: AtomicUsize,
    /// Workers inside this job; changed only under the pool's mutex.
    joined: AtomicUsize,
    /// The first panic's message.
    panicked: OnceLock<String>,
}

impl<'a> Job<'a> {
    fn new(order: &'a [usize], work: &'a (dyn Fn(usize) + Sync)) -> Job<'a> {
        Job {
            order,
            work,
            next: AtomicUsize::new(0),
            joined: AtomicUsize::new(0),
            panicked: OnceLock::new(),
        }
    }

    fn result(self) -> Result<(), Panicked> {
        match self.panicked.into_inner() {
            Some(message) => Err(Panicked { message }),
            None => Ok(()),
        }
    }

    /// Claims and runs items until none are left.
    fn drain(&self) {
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = self.order.get(k) else {
                return;
            };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (self.work)(i))) {
                let _ = self.panicked.set(panic_message(&*payload));
                drop_payload(payload);
            }
        }
    }
}

/// [`Pool::run`] without a pool: every item on the calling thread, in `order`.
pub(crate) fn run_on_caller(
    order: &[usize],
    work: &(dyn Fn(usize) + Sync),
) -> Result<(), Panicked> {
    let job = Job::new(order, work);
    job.drain();
    job.result()
}

/// A help request: a job with its lifetime erased (see the module invariants).
#[derive(Clone, Copy)]
struct JobPtr(*const Job<'static>);

// SAFETY: 1. the job is `Sync` in all but name (atomics, a `OnceLock`, shared references to
// `Sync` data); 2. the pointer is dereferenced only while the job's caller waits for it
// (module invariants).
unsafe impl Send for JobPtr {}

/// Work in the queue.
enum Task {
    /// Help with a job run by its caller.
    Help(JobPtr),
    /// Run an owned task.
    Run(Box<dyn FnOnce() + Send>),
}

struct State {
    queue: VecDeque<Task>,
    /// Started workers that have not exited.
    workers: usize,
    shutting_down: bool,
}

struct Shared {
    id: usize,
    state: Mutex<State>,
    /// Workers wait here for tasks.
    wake: Condvar,
    /// Callers wait here for their helpers to leave, [`Pool::shutdown`]'s tasks to finish.
    left: Condvar,
    /// Workers running a task now.
    active: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the mutex is held; a poisoned one still holds a valid state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A persistent pool of worker threads for batch calls (see the crate docs). `threads` is how
/// many threads one batch uses, the caller included: the pool starts `threads - 1` workers.
pub struct Pool {
    shared: Arc<Shared>,
    threads: usize,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("threads", &self.threads)
            .field("workers", &self.workers())
            .field("active_workers", &self.active_workers())
            .finish()
    }
}

impl Pool {
    /// A pool for batches of `threads` threads (at least 1), the caller included: starts
    /// `threads - 1` workers now (a worker that cannot be started leaves its share to the
    /// others; the caller always works).
    pub fn new(threads: usize) -> Pool {
        let pool = Pool {
            shared: Arc::new(Shared {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    workers: 0,
                    shutting_down: false,
                }),
                wake: Condvar::new(),
                left: Condvar::new(),
                active: AtomicUsize::new(0),
            }),
            threads: threads.max(1),
            handles: Mutex::new(Vec::new()),
        };
        for _ in 1..pool.threads {
            if !pool.start_worker() {
                break;
            }
        }
        pool
    }

    /// The threads one batch uses, the caller included.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Worker threads started and not yet exited.
    pub fn workers(&self) -> usize {
        self.shared.lock().workers
    }

    /// Workers running a task (helping a batch, or an owned task) now; 0 when the pool is
    /// idle.
    pub fn active_workers(&self) -> usize {
        self.shared.active.load(Ordering::Acquire)
    }

    fn handles(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.handles.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts one worker; false if the pool is shutting down or the OS refused.
    fn start_worker(&self) -> bool {
        let mut handles = self.handles();
        let shared = Arc::clone(&self.shared);
        {
            let mut st = self.shared.lock();
            if st.shutting_down {
                return false;
            }
            // Counted before it starts, so that help requests are posted for it at once.
            st.workers += 1;
        }
        let spawned = thread::Builder::new()
            .name(format!("sieve-{}", handles.len()))
            .spawn(move || worker(&shared));
        match spawned {
            Ok(h) => {
                handles.push(h);
                true
            }
            Err(_) => {
                self.shared.lock().workers -= 1;
                false
            }
        }
    }

    /// Runs `work(i)` for every `i` in `order`, starting them in that order, on the calling
    /// thread and up to `threads - 1` workers. Returns when every item has finished and no
    /// worker uses `work` or `order` any more. A panicking item is caught (the others still
    /// run) and reported as [`Panicked`].
    pub fn run(&self, order: &[usize], work: &(dyn Fn(usize) + Sync)) -> Result<(), Panicked> {
        let job = Job::new(order, work);
        let helpers = (self.threads - 1).min(order.len().saturating_sub(1));
        {
            let _posted = Posted::new(&self.shared, &job, helpers);
            job.drain();
        }
        job.result()
    }

    /// Runs `task` on a worker (starting one if the pool has none) and returns at once.
    /// `Err(task)` if the pool is shutting down or no worker could be started: the caller
    /// runs it itself. A panic in the task is caught (the task reports its own failures).
    #[allow(clippy::type_complexity)]
    pub fn spawn(&self, task: Box<dyn FnOnce() + Send>) -> Result<(), Box<dyn FnOnce() + Send>> {
        let no_worker = self.shared.lock().workers == 0;
        if no_worker && !self.start_worker() {
            return Err(task);
        }
        let mut st = self.shared.lock();
        if st.shutting_down || st.workers == 0 {
            return Err(task);
        }
        st.queue.push_back(Task::Run(task));
        drop(st);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Lets the workers finish the queued tasks, then joins every one of them: when this
    /// returns, no worker of the pool runs. Afterwards [`Pool::run`] runs on the caller alone
    /// and [`Pool::spawn`] refuses. Called on one of this pool's own workers (from an owned
    /// task), it joins the others and leaves that one to exit when its task returns.
    pub fn shutdown(&self) {
        self.shared.lock().shutting_down = true;
        self.shared.wake.notify_all();
        let handles = std::mem::take(&mut *self.handles());
        let own = WORKER_OF.with(Cell::get) == self.shared.id;
        let me = own.then(|| thread::current().id());
        for h in handles {
            if Some(h.thread().id()) == me {
                continue;
            }
            // A worker catches every task's panic, so it never ends in one.
            let _ = h.join();
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The help requests of one [`Pool::run`]: posted by `new`, withdrawn (with a wait for the
/// workers that took one) by `drop`, so the wait happens even if the caller unwinds.
struct Posted<'a> {
    shared: &'a Shared,
    job: JobPtr,
    posted: bool,
}

impl<'a> Posted<'a> {
    fn new(shared: &'a Shared, job: &Job<'_>, helpers: usize) -> Posted<'a> {
        let job = JobPtr((job as *const Job<'_>).cast::<Job<'static>>());
        let mut posted = Posted {
            shared,
            job,
            posted: false,
        };
        if helpers == 0 {
            return posted;
        }
        let mut st = shared.lock();
        let helpers = helpers.min(st.workers);
        if st.shutting_down || helpers == 0 {
            return posted;
        }
        st.queue.extend((0..helpers).map(|_| Task::Help(job)));
        posted.posted = true;
        drop(st);
        for _ in 0..helpers {
            shared.wake.notify_one();
        }
        posted
    }
}

impl Drop for Posted<'_> {
    fn drop(&mut self) {
        if !self.posted {
            return;
        }
        let mut st = self.shared.lock();
        let job = self.job.0;
        st.queue
            .retain(|t| !matches!(t, Task::Help(p) if std::ptr::eq(p.0, job)));
        // SAFETY: 1. the job outlives this guard (it is declared before it in `Pool::run`).
        let joined = unsafe { &(*job).joined };
        while joined.load(Ordering::Relaxed) > 0 {
            st = self.shared.left.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A worker: takes tasks until the pool shuts down and its queue is empty.
fn worker(shared: &Shared) {
    WORKER_OF.with(|w| w.set(shared.id));
    let mut st = shared.lock();
    loop {
        match st.queue.pop_front() {
            Some(Task::Help(p)) => {
                // SAFETY: 1. the request was still queued, so its caller has not withdrawn
                // it and waits until `joined` is back to zero (module invariants).
                let job = unsafe { &*p.0 };
                job.joined.fetch_add(1, Ordering::Relaxed);
                shared.active.fetch_add(1, Ordering::AcqRel);
                drop(st);
                job.drain();
                st = shared.lock();
                shared.active.fetch_sub(1, Ordering::AcqRel);
                // The last use of the job: its caller sees zero only after this unlocks.
                job.joined.fetch_sub(1, Ordering::Relaxed);
                shared.left.notify_all();
            }
            Some(Task::Run(task)) => {
                shared.active.fetch_add(1, Ordering::AcqRel);
                drop(st);
                if let Err(payload) = catch_unwind(AssertUnwindSafe(task)) {
                    drop_payload(payload);
                }
                st = shared.lock();
                shared.active.fetch_sub(1, Ordering::AcqRel);
                shared.left.notify_all();
            }
            None if st.shutting_down => break,
            None => st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner()),
        }
    }
    st.workers -= 1;
}
