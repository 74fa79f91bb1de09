//! The fixed heap: a static 1 MiB array under embedded-alloc's linked-list allocator, wrapped
//! in a counter of live requested bytes and their high-water mark (the same measure as
//! `tests/src/heap.rs` on the host), and of the allocator's own use (with its rounding).

use core::alloc::{GlobalAlloc, Layout};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use embedded_alloc::LlffHeap;

/// Heap size.
pub const HEAP_BYTES: usize = 1 << 20;

static mut HEAP: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];

#[global_allocator]
static ALLOC: Counting = Counting {
    heap: LlffHeap::empty(),
    live: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
    used_peak: AtomicUsize::new(0),
    used_base: AtomicUsize::new(0),
    failures: AtomicUsize::new(0),
};

struct Counting {
    heap: LlffHeap,
    /// Requested bytes currently allocated.
    live: AtomicUsize,
    /// Most `live` since the last [`reset_peak`].
    peak: AtomicUsize,
    /// Most bytes the allocator itself had in use (requests rounded to its block size).
    used_peak: AtomicUsize,
    /// The allocator's use at the last [`reset_peak`].
    used_base: AtomicUsize,
    /// Allocations the heap could not serve.
    failures: AtomicUsize,
}

// SAFETY: (1) every call forwards to `LlffHeap`, a `GlobalAlloc`, with the caller's layout
// and pointer unchanged; (2) the counters are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is forwarded unchanged.
        let p = unsafe { self.heap.alloc(layout) };
        if p.is_null() {
            self.failures.fetch_add(1, Relaxed);
        } else {
            let live = self.live.fetch_add(layout.size(), Relaxed) + layout.size();
            self.peak.fetch_max(live, Relaxed);
            self.used_peak.fetch_max(self.heap.used(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is forwarded unchanged.
        unsafe { self.heap.dealloc(ptr, layout) };
        self.live.fetch_sub(layout.size(), Relaxed);
    }
}

/// Gives the allocator its memory. Call once, before anything allocates.
pub fn init() {
    // SAFETY: (1) called once, first thing in `run`; (2) HEAP is used by nothing else.
    unsafe { ALLOC.heap.init((&raw mut HEAP) as usize, HEAP_BYTES) }
}

/// Requested bytes currently allocated.
pub fn live() -> usize {
    ALLOC.live.load(Relaxed)
}

/// Starts a new high-water mark at the current use.
pub fn reset_peak() {
    ALLOC.peak.store(live(), Relaxed);
    ALLOC.used_peak.store(ALLOC.heap.used(), Relaxed);
    ALLOC.used_base.store(ALLOC.heap.used(), Relaxed);
}

/// The high-water mark of requested bytes since [`reset_peak`].
pub fn peak() -> usize {
    ALLOC.peak.load(Relaxed)
}

/// The high-water mark of the allocator's own use since [`reset_peak`], above its use then.
pub fn used_peak() -> usize {
    ALLOC.used_peak.load(Relaxed) - ALLOC.used_base.load(Relaxed)
}

/// Allocations the heap could not serve so far.
pub fn failures() -> usize {
    ALLOC.failures.load(Relaxed)
}
