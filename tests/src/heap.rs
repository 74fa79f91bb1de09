//! Measuring the real heap: a counting global allocator that keeps, per thread, the bytes
//! currently allocated and their peak, and a runner for code on a thread with a small stack.
//!
//! A test binary installs the allocator once:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: sieve_tests::heap::Counting = sieve_tests::heap::Counting;
//! ```
//!
//! then measures a closure with [`peak_heap`]. Counting is per thread, so tests running in
//! parallel in one binary do not disturb each other; memory freed by another thread than the
//! one that allocated it is counted on the freeing thread (the engine frees on the thread that
//! allocated, so this does not arise in the measured code).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn add(delta: isize) {
    // `try_with`: during thread teardown the slots may be gone; such frees are not counted.
    let _ = CURRENT.try_with(|c| {
        let now = c.get() + delta;
        c.set(now);
        let _ = PEAK.try_with(|p| {
            if now > p.get() {
                p.set(now);
            }
        });
    });
    if delta > 0 {
        let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
    }
}

/// The counting allocator: forwards to [`System`] and counts bytes per thread.
pub struct Counting;

// SAFETY: (1) every call is forwarded unchanged to the system allocator, which upholds the
// `GlobalAlloc` contract; (2) the counters are `const`-initialized thread locals without
// destructors, so touching them never allocates or re-enters the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same layout contract as our caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same layout contract as our caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// What [`peak_heap`] measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapUse {
    /// Most bytes allocated at once by the closure, above what was allocated when it started.
    pub peak: usize,
    /// Bytes still allocated by the closure when it returned (its result included).
    pub retained: isize,
    /// Allocations (and growing reallocations) made.
    pub allocations: u64,
}

/// Run `f` on this thread and measure its heap. Only meaningful in a test binary that
/// installed [`Counting`] as its global allocator (otherwise everything reads 0).
pub fn peak_heap<R>(f: impl FnOnce() -> R) -> (R, HeapUse) {
    let base = CURRENT.with(Cell::get);
    let old_peak = PEAK.with(|p| p.replace(base));
    let allocs = ALLOCATIONS.with(Cell::get);
    let r = f();
    let peak = PEAK.with(Cell::get);
    let now = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(old_peak.max(peak)));
    let used = HeapUse {
        peak: (peak - base).max(0) as usize,
        retained: now - base,
        allocations: ALLOCATIONS.with(Cell::get) - allocs,
    };
    (r, used)
}

/// Is the counting allocator installed in this binary? (A zero reading could otherwise pass
/// a "stays within the budget" check without measuring anything.)
pub fn counting_installed() -> bool {
    let (_, used) = peak_heap(|| std::hint::black_box(vec![0u8; 4096]));
    used.peak >= 4096
}

/// Run `f` on a new thread with a stack of `bytes` and return its result; a stack overflow
/// aborts the whole test binary, which fails the test run.
pub fn with_stack<R: Send + 'static>(bytes: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    match std::thread::Builder::new().stack_size(bytes).spawn(f) {
        Ok(handle) => match handle.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(e) => panic!("cannot spawn a thread with a {bytes}-byte stack: {e}"),
    }
}

/// The heap not charged to `max_memory_bytes`: the constant documented on
/// `Limits::max_memory_bytes` (the structs themselves, per-call scratch, lexeme names).
pub const SLACK: usize = 64 << 10;

/// Run `f`, returning its result and the time it took: this thread's CPU time where
/// available ([`thread_cpu_time`]), else wall time.
pub fn cpu_timed<R>(f: impl FnOnce() -> R) -> (R, std::time::Duration) {
    let (cpu, wall) = (thread_cpu_time(), std::time::Instant::now());
    let r = f();
    let took = match (cpu, thread_cpu_time()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    };
    (r, took)
}

/// This thread's CPU time (user + system, 10 ms ticks) on Linux, `None` elsewhere. Bounds on
/// work measured with it hold on a loaded machine, where wall time does not.
pub fn thread_cpu_time() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesized command start at field 3; utime and stime are 14, 15.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(std::time::Duration::from_millis((utime + stime) * 10))
}
