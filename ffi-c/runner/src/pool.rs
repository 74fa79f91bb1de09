//! The pool: worker threads parked on a condition variable, help requests for batches run by
//! their callers, owned tasks, and a shutdown that joins every worker (see the crate docs).
//!
//! Invariants:
//! - A help request points at a [`Job`] on its caller's stack. The caller withdraws its
//!   unserved requests and waits until the job's `joined` count is zero before the job goes
//!   out of scope ([`Posted`]'s `Drop`), and a worker increments `joined` when it pops a
//!   request and decrements it as its last use of the job, both under the pool's mutex. So a
//!   worker dereferences a job only while its caller is still waiting.
//! - A worker that spins (see [`SPIN`]) only reads atomics; it takes work only by popping the
//!   queue under the mutex, as a parked worker does.
//! - `State::workers` counts the started workers that have not exited; help requests are
//!   posted only while it is non-zero and the pool is not shutting down, and a worker exits
//!   only when the queue is empty and the pool is shutting down, so every posted request is
//!   either served or withdrawn.

use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

thread_local! {
    /// The id of the pool this thread works for (0: not a pool worker). A `const` `Cell` of
    /// a plain integer: no allocation and no destructor in any thread.
    static WORKER_OF: Cell<usize> = const { Cell::new(0) };
}

/// How long an idle worker, and a caller waiting for its helpers, keep polling (yielding
/// the CPU between polls) before they sleep on a condition variable.
///
/// Why: waking a sleeping thread costs tens of microseconds on a virtual machine (50-60 µs
/// on the 2-CPU VM we measure on, `examples/overhead.rs`), as long as a whole batch of warm
/// masks, so a pool that always sleeps gains little from a second thread on batches under
/// ~0.2 ms. A host that calls batches back to back (consuming the tokens in between, tens of
/// microseconds) finds a polling worker; one that calls once per forward pass (milliseconds)
/// pays one wake-up per call. An idle pool polls for at most this long after each call, on
/// at most one worker per CPU besides the caller, and polling yields the CPU
/// (`thread::yield_now`) so that other runnable threads still run. rayon's idle workers do
/// the same (rounds of yields, then sleep).
pub const SPIN: Duration = Duration::from_micros(200);

/// A batch expected to take less work than this (in all, nanoseconds) wakes no sleeping
/// worker ([`Pool::run_expecting`]): on the 2-CPU VM we measure on, a wake-up cost the caller
/// 12-19 µs of system call and the worker arrived 40 µs or more later, so a batch of 64
/// cheap items (37 µs) took 0.5-0.8x as long alone as with a worker woken for it
/// (`examples/overhead.rs 500 64 3000`).
pub const WAKE_WORTH_NS: u64 = 100_000;

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
    /// Whether sleeping workers are woken to help (else only polling ones do).
    wake_sleepers: bool,
}

impl<'a> Job<'a> {
    fn new(order: &'a [usize], work: &'a (dyn Fn(usize) + Sync)) -> Job<'a> {
        Job {
            order,
            work,
            next: AtomicUsize::new(0),
            joined: AtomicUsize::new(0),
            panicked: OnceLock::new(),
            wake_sleepers: false,
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
    /// Workers waiting on `wake` now.
    sleeping: usize,
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
    /// Tasks in the queue (changed under the mutex, read by polling workers without it).
    queued: AtomicUsize,
    /// Workers polling for work now.
    spinning: AtomicUsize,
    /// When the pool was made; `last_end` counts from it.
    epoch: Instant,
    /// When the last call of the pool returned (ns after `epoch`).
    last_end: AtomicU64,
    /// At most this many workers help one call, and poll at once: one fewer than the CPUs
    /// (the caller has one) and than the threads. More threads than CPUs only take turns
    /// on them: measured, 8 threads on 2 CPUs all helping every call made batches of 64
    /// cheap items 1.7x slower than 1 thread (`examples/overhead.rs`), and 1.0x with the
    /// wake-up chain alone.
    max_helpers: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while the mutex is held; a poisoned one still holds a valid state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes the queue's length to polling workers; called under the mutex after every
    /// change of the queue.
    fn count_queued(&self, st: &State) {
        self.queued.store(st.queue.len(), Ordering::Release);
    }

    /// Wakes one sleeping worker for a new help request, unless a worker polls: a poller
    /// takes it sooner than a sleeper wakes, and a wake-up is a system call. Under the mutex
    /// (`st`); a request no one takes is left to its caller.
    fn wake_one(&self, st: &State) {
        if st.sleeping > 0 && self.spinning.load(Ordering::Acquire) == 0 {
            self.wake.notify_one();
        }
    }

    /// Whether the last call ended within [`SPIN`] of now.
    fn calls_are_frequent(&self) -> bool {
        let last = self.last_end.load(Ordering::Relaxed);
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        last != 0 && now.saturating_sub(last) < SPIN.as_nanos() as u64
    }

    /// An idle worker's polling: true when a task was queued (or shutdown began) within
    /// [`SPIN`], false at once if [`Shared::max_helpers`] workers already poll.
    fn poll_for_work(&self) -> bool {
        if self.spinning.fetch_add(1, Ordering::AcqRel) >= self.max_helpers {
            self.spinning.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        let start = Instant::now();
        let found = loop {
            if self.queued.load(Ordering::Acquire) > 0 {
                break true;
            }
            if start.elapsed() >= SPIN {
                break false;
            }
            thread::yield_now();
        };
        self.spinning.fetch_sub(1, Ordering::AcqRel);
        found
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
    /// A pool of `threads` threads (at least 1), the caller included, of which one call runs
    /// on at most as many at once as there are CPUs ([`Pool::with_parallelism`] with
    /// `std::thread::available_parallelism`, which honours cgroup quotas): more threads than
    /// CPUs would only take turns on them. The other workers serve other host threads'
    /// calls at the same time.
    pub fn new(threads: usize) -> Pool {
        let cpus = thread::available_parallelism().map_or(1, |n| n.get());
        Pool::with_parallelism(threads, cpus)
    }

    /// A pool of `threads` threads (at least 1), the caller included, of which one call runs
    /// on at most `parallelism` (at least 1) at once: starts `threads - 1` workers now (a
    /// worker that cannot be started leaves its share to the others; the caller always
    /// works).
    pub fn with_parallelism(threads: usize, parallelism: usize) -> Pool {
        let threads = threads.max(1);
        let pool = Pool {
            shared: Arc::new(Shared {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    workers: 0,
                    sleeping: 0,
                    shutting_down: false,
                }),
                wake: Condvar::new(),
                left: Condvar::new(),
                active: AtomicUsize::new(0),
                queued: AtomicUsize::new(0),
                spinning: AtomicUsize::new(0),
                epoch: Instant::now(),
                last_end: AtomicU64::new(0),
                max_helpers: parallelism.clamp(1, threads) - 1,
            }),
            threads,
            handles: Mutex::new(Vec::new()),
        };
        for _ in 1..pool.threads {
            if !pool.start_worker() {
                break;
            }
        }
        pool
    }

    /// The pool's threads, the caller included.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The threads one call runs on at most, the caller included.
    pub fn parallelism(&self) -> usize {
        self.shared.max_helpers + 1
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
        self.run_expecting(order, u64::MAX, work)
    }

    /// [`Pool::run`] for a batch expected to take about `expected_ns` nanoseconds of work in
    /// all: below [`WAKE_WORTH_NS`] only workers that are polling help (a sleeping one would
    /// arrive after the batch is done, and waking it costs the caller a system call).
    pub fn run_expecting(
        &self,
        order: &[usize],
        expected_ns: u64,
        work: &(dyn Fn(usize) + Sync),
    ) -> Result<(), Panicked> {
        let mut job = Job::new(order, work);
        job.wake_sleepers = expected_ns >= WAKE_WORTH_NS;
        let helpers = self.shared.max_helpers.min(order.len().saturating_sub(1));
        {
            let _posted = Posted::new(&self.shared, &job, helpers);
            job.drain();
        }
        let now = self.shared.epoch.elapsed().as_nanos();
        self.shared
            .last_end
            .store(u64::try_from(now).unwrap_or(u64::MAX), Ordering::Relaxed);
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
        self.shared.count_queued(&st);
        // An owned task wakes a sleeper even if a worker polls: it may run for long.
        if st.sleeping > 0 {
            self.shared.wake.notify_one();
        }
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
        let wake_sleepers = job.wake_sleepers;
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
        shared.count_queued(&st);
        posted.posted = true;
        // One worker now; each worker that joins wakes the next while items are left
        // (`worker`), so a batch that ends before a sleeper is awake wakes one at most.
        // A small batch wakes no sleeper, unless calls come back to back (the last one
        // ended within `SPIN`): then the worker it wakes is late for this one but polls, and
        // serves the next ones.
        if wake_sleepers || shared.calls_are_frequent() {
            shared.wake_one(&st);
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
        self.shared.count_queued(&st);
        drop(st);
        // SAFETY: 1. the job outlives this guard (it is declared before it in `Pool::run_expecting`).
        let joined = unsafe { &(*job).joined };
        // Helpers that took a request are running items now: poll for them first (they
        // finish within one item), then sleep. `Acquire` pairs with their `Release`
        // decrement, so their writes are visible once the count reads zero.
        let start = Instant::now();
        while joined.load(Ordering::Acquire) > 0 {
            if start.elapsed() >= SPIN {
                let mut st = self.shared.lock();
                while joined.load(Ordering::Acquire) > 0 {
                    st = self.shared.left.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                return;
            }
            thread::yield_now();
        }
    }
}

/// A worker: takes tasks until the pool shuts down and its queue is empty.
fn worker(shared: &Shared) {
    WORKER_OF.with(|w| w.set(shared.id));
    // Polls once after each task before sleeping (see `SPIN`).
    let mut may_poll = true;
    let mut st = shared.lock();
    loop {
        let task = st.queue.pop_front();
        if task.is_some() {
            shared.count_queued(&st);
            may_poll = true;
        }
        match task {
            Some(Task::Help(p)) => {
                // SAFETY: 1. the request was still queued, so its caller has not withdrawn
                // it and waits until `joined` is back to zero (module invariants).
                let job = unsafe { &*p.0 };
                job.joined.fetch_add(1, Ordering::Relaxed);
                shared.active.fetch_add(1, Ordering::AcqRel);
                // The wake-up chain: more help is still wanted if this job's requests are
                // queued and it has items left beyond the one this worker takes now.
                let wanted = st
                    .queue
                    .iter()
                    .any(|t| matches!(t, Task::Help(q) if std::ptr::eq(q.0, p.0)));
                if job.wake_sleepers
                    && wanted
                    && job.next.load(Ordering::Relaxed) + 1 < job.order.len()
                {
                    shared.wake_one(&st);
                }
                drop(st);
                job.drain();
                st = shared.lock();
                shared.active.fetch_sub(1, Ordering::AcqRel);
                // The last use of the job (`Release`: the items' writes happen-before the
                // caller's `Acquire` load of zero). Under the mutex, so that a caller that
                // checked the count under it is asleep on `left` before this notifies.
                job.joined.fetch_sub(1, Ordering::Release);
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
            None if may_poll => {
                may_poll = false;
                drop(st);
                shared.poll_for_work();
                st = shared.lock();
            }
            None => {
                st.sleeping += 1;
                st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
                st.sleeping -= 1;
                // Woken for a call: poll if it is over already (the next may be near).
                may_poll = true;
            }
        }
    }
    st.workers -= 1;
}
