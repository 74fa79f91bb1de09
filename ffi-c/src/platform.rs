//! no_std platform glue for a staticlib linked into a C firmware: the panic handler
//! (`panic-handler` feature) and a global allocator over the C library's heap (`c-alloc`).
//!
//! Both are opt-in so that a Rust program linking the rlib keeps its own; a C host linking
//! `libsieve.a` built without `std` needs both (or the link fails: no `#[panic_handler]`, no
//! `__rust_alloc`). Neither is installed with `std`, which brings its own; the allocator is
//! still compiled for the unit tests, which run it on the host's `malloc`.

/// A panic calls the C library's `abort()` and never returns: no unwinding, no message.
///
/// Every panic in sieve is a bug (inputs are checked and budgets bound the work), so the
/// firmware's `abort()` (newlib: `_exit(1)`; with semihosting, an exit the debugger or qemu
/// reports) is the place to reset or halt.
#[cfg(all(not(feature = "std"), feature = "panic-handler"))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    unsafe extern "C" {
        fn abort() -> !;
    }
    // SAFETY: 1. `abort` takes no arguments and has no preconditions (C11 7.22.4.1).
    unsafe { abort() }
}

#[cfg(any(feature = "c-alloc", test))]
mod c_alloc {
    use core::alloc::{GlobalAlloc, Layout};
    use core::ffi::c_void;

    unsafe extern "C" {
        fn malloc(size: usize) -> *mut c_void;
        fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
        fn free(ptr: *mut c_void);
    }

    /// The alignment every `malloc` block has (C's `alignof(max_align_t)`): 8 on 32-bit
    /// targets (newlib on Arm: 8), 16 on 64-bit ones.
    const MALLOC_ALIGN: usize = if size_of::<usize>() >= 8 { 16 } else { 8 };

    /// Rust's heap on top of C's `malloc`, `realloc` and `free`.
    ///
    /// A layout aligned beyond [`MALLOC_ALIGN`] gets `size + align` bytes from `malloc`; the
    /// block handed out starts at the first `align` boundary past the start, and the word
    /// before it holds the `malloc` pointer for `free`. (C11's `aligned_alloc` is not in
    /// every embedded C library.)
    struct CAlloc;

    /// The pointer `malloc` returned for an over-aligned block `ptr`.
    ///
    /// # Safety
    /// `ptr` was returned by [`CAlloc::alloc`] for a layout with `align > MALLOC_ALIGN`.
    unsafe fn base_of(ptr: *mut u8) -> *mut c_void {
        // SAFETY: 1. `alloc` wrote the base pointer into the word just before `ptr`, which
        // lies inside the same `malloc` block (`ptr - base >= MALLOC_ALIGN >= word size`).
        unsafe { ptr.cast::<*mut c_void>().sub(1).read_unaligned() }
    }

    // SAFETY: 1. every block comes from `malloc`/`realloc` and satisfies its layout's size and
    // alignment (below); 2. `dealloc` and `realloc` find the `malloc` pointer of the blocks
    // `alloc` made for the same layout; 3. the C heap is assumed not to unwind or panic.
    unsafe impl GlobalAlloc for CAlloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                // SAFETY: 1. `malloc` has no preconditions; its blocks are aligned to
                // `MALLOC_ALIGN >= layout.align()`.
                return unsafe { malloc(layout.size()) }.cast();
            }
            let Some(total) = layout.size().checked_add(layout.align()) else {
                return core::ptr::null_mut();
            };
            // SAFETY: 1. no preconditions.
            let base = unsafe { malloc(total) }.cast::<u8>();
            if base.is_null() {
                return base;
            }
            // `base` is MALLOC_ALIGN-aligned, so the next `align` boundary strictly after it is
            // between MALLOC_ALIGN and `align` bytes on: room for the base pointer before it,
            // and `size` bytes after it inside the `size + align` block.
            let offset = layout.align() - (base as usize & (layout.align() - 1));
            // SAFETY: 1. `offset <= align`, inside the `size + align` block.
            let ptr = unsafe { base.add(offset) };
            // SAFETY: 1. `offset >= MALLOC_ALIGN >= size_of::<*mut c_void>()`, so the word
            // before `ptr` lies inside the block, after `base`.
            unsafe {
                ptr.cast::<*mut c_void>()
                    .sub(1)
                    .write_unaligned(base.cast())
            };
            ptr
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if layout.align() <= MALLOC_ALIGN {
                // SAFETY: 1. `ptr` came from `malloc`/`realloc` (GlobalAlloc contract: same
                // layout as its `alloc`).
                unsafe { free(ptr.cast()) };
            } else {
                // SAFETY: 1. an over-aligned block made by `alloc`; its base came from `malloc`.
                unsafe { free(base_of(ptr)) };
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if layout.align() <= MALLOC_ALIGN {
                // SAFETY: 1. `ptr` came from `malloc`/`realloc`; C's `realloc` keeps the
                // contents and `MALLOC_ALIGN` alignment.
                return unsafe { realloc(ptr.cast(), new_size) }.cast();
            }
            // SAFETY: 1. `new_size` with the old alignment is a valid layout (GlobalAlloc
            // contract), so the default path (alloc, copy, dealloc) holds.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: 1. a non-zero size (GlobalAlloc contract).
            let new = unsafe { self.alloc(new_layout) };
            if !new.is_null() {
                // SAFETY: 1. both blocks are live and distinct, each at least
                // `min(old, new)` bytes; 2. `ptr` was allocated with `layout`.
                unsafe {
                    core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
            }
            new
        }
    }

    #[cfg(not(feature = "std"))]
    #[global_allocator]
    static ALLOCATOR: CAlloc = CAlloc;

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Every alignment up to 4 KiB, small and odd sizes, grown then shrunk: each block
        /// is aligned, keeps its bytes through `realloc`, and is freed through the right
        /// pointer (glibc aborts on a bad `free`).
        #[test]
        fn blocks_are_aligned_and_keep_their_bytes() {
            for align in (0..13).map(|k| 1usize << k) {
                for size in [1usize, 3, 8, 17, 100, 4097] {
                    let mut layout = Layout::from_size_align(size, align).unwrap();
                    // SAFETY: 1. a non-zero size.
                    let mut p = unsafe { CAlloc.alloc(layout) };
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size} {align}"
                    );
                    // SAFETY: 1. `p` is a live block of `size` bytes.
                    let bytes = unsafe { core::slice::from_raw_parts_mut(p, size) };
                    bytes.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
                    let mut kept = size;
                    for new_size in [size * 3 + 1, size.div_ceil(2)] {
                        // SAFETY: 1. `p` is live and was allocated with `layout`; 2. a non-zero
                        // size.
                        p = unsafe { CAlloc.realloc(p, layout, new_size) };
                        assert!(
                            !p.is_null() && (p as usize).is_multiple_of(align),
                            "{size} {align}"
                        );
                        layout = Layout::from_size_align(new_size, align).unwrap();
                        kept = kept.min(new_size);
                        // SAFETY: 1. `p` is a live block of `new_size >= kept` bytes.
                        let bytes = unsafe { core::slice::from_raw_parts(p, kept) };
                        assert!(bytes.iter().enumerate().all(|(i, &b)| b == i as u8));
                    }
                    // SAFETY: 1. `p` is live and was allocated with `layout`.
                    unsafe { CAlloc.dealloc(p, layout) };
                }
            }
        }
    }
}
