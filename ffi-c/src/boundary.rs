//! The FFI boundary: the panic guard, handle casts and argument conversion.
//!
//! Every exported function runs its body inside [`ffi_boundary!`], which catches a panic and
//! returns the type's [`PanicOrDefault`] value (`SIEVE_STATUS_PANIC` for statuses), so no
//! unwind ever crosses into C. Handles are tied to their ownership by [`Castable`]: a
//! [`Exclusive`] handle is a `Box` (one owner, one thread at a time), a [`Shared`] handle a
//! `Box` holding one `Arc` (cloned and freed by reference count). Every handle points at the
//! start of its allocation, so a leak checker classifies a handle a host keeps for the life of
//! the process (llama.cpp caches its tokenizer in a static) as reachable, not as "possibly
//! lost" as it did an `Arc::into_raw` pointer into the middle of the `Arc`'s block. Reading a
//! handle is a pointer cast (and one load for a shared one): no allocation, no lookup, so
//! the boundary costs a NULL check and a `catch_unwind` frame per call.
//!
//! Without the `std` feature there is no `catch_unwind`: a panic calls the panic handler,
//! which aborts (see the crate docs, "no_std"), so still no unwind crosses into C.

use alloc::sync::Arc;
use core::ffi::c_char;
use core::marker::PhantomData;

use crate::prelude::*;
use crate::status::sieve_status;

/// The value an exported function returns when its body panicked.
pub(crate) trait PanicOrDefault {
    /// That value.
    fn panic_value() -> Self;
}

impl PanicOrDefault for sieve_status {
    fn panic_value() -> Self {
        sieve_status::Panic
    }
}

impl PanicOrDefault for bool {
    fn panic_value() -> Self {
        false
    }
}

impl PanicOrDefault for usize {
    fn panic_value() -> Self {
        0
    }
}

impl PanicOrDefault for u32 {
    fn panic_value() -> Self {
        0
    }
}

impl PanicOrDefault for () {
    fn panic_value() -> Self {}
}

impl PanicOrDefault for *const c_char {
    fn panic_value() -> Self {
        core::ptr::null()
    }
}

/// Runs `body`: `None` if it panicked (with `std`, through `catch_unwind`).
///
/// Without `std` there is no unwinding: a panic runs the panic handler, which never returns
/// (the `panic-handler` feature's calls the C library's `abort()`), so this is always `Some`.
#[cfg(feature = "std")]
#[inline]
pub(crate) fn catch_panic<T>(body: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).ok()
}

/// Runs `body`: `None` if it panicked (with `std`, through `catch_unwind`).
///
/// Without `std` there is no unwinding: a panic runs the panic handler, which never returns
/// (the `panic-handler` feature's calls the C library's `abort()`), so this is always `Some`.
#[cfg(not(feature = "std"))]
#[inline]
pub(crate) fn catch_panic<T>(body: impl FnOnce() -> T) -> Option<T> {
    Some(body())
}

/// Runs the body through [`catch_panic`]; a panic becomes [`PanicOrDefault::panic_value`]
/// (without `std`, a panic aborts instead). A `return` in the body returns from the exported
/// function.
macro_rules! ffi_boundary {
    ($($body:tt)*) => {{
        match $crate::boundary::catch_panic(|| { $($body)* }) {
            Some(value) => value,
            None => $crate::boundary::PanicOrDefault::panic_value(),
        }
    }};
}
pub(crate) use ffi_boundary;

/// Ownership marker: the handle is a `Box`; the caller has exclusive use of it.
pub(crate) struct Exclusive;

/// Ownership marker: the handle is a `Box<Arc<_>>` holding one strong count; it may be shared
/// and used from any thread.
pub(crate) struct Shared;

/// How a non-NULL handle of an ownership reaches its value.
pub(crate) trait Ownership {
    /// The value behind `handle`.
    ///
    /// # Safety
    /// `handle` is non-NULL and was made for this ownership and `T` (by [`box_into_handle`]
    /// or [`arc_into_handle`]) and is not freed.
    unsafe fn payload<T>(handle: *const ()) -> *const T;
}

impl Ownership for Exclusive {
    unsafe fn payload<T>(handle: *const ()) -> *const T {
        handle.cast()
    }
}

impl Ownership for Shared {
    unsafe fn payload<T>(handle: *const ()) -> *const T {
        // SAFETY: 1. the handle is a live `Box<Arc<T>>` (caller contract), so it points at an
        // initialised `Arc<T>` that holds a strong count.
        Arc::as_ptr(unsafe { &*handle.cast::<Arc<T>>() })
    }
}

/// Ties an opaque C handle type to the Rust value behind it and to how it is owned.
pub(crate) trait Castable {
    /// [`Exclusive`] or [`Shared`].
    type Ownership: Ownership;
    /// The Rust value a handle points at.
    type Rust;
}

/// Moves `value` into a new `Box` and returns it as a handle.
pub(crate) fn box_into_handle<C: Castable<Ownership = Exclusive>>(value: C::Rust) -> *mut C {
    Box::into_raw(Box::new(value)).cast()
}

/// Moves `value` into a handle that owns one strong count of the `Arc` (a `Box` holding it, so
/// the handle points at the start of an allocation).
pub(crate) fn arc_into_handle<C: Castable<Ownership = Shared>>(value: Arc<C::Rust>) -> *const C {
    Box::into_raw(Box::new(value)).cast_const().cast()
}

/// Borrows the value behind a handle of either ownership; `None` for NULL.
///
/// # Safety
/// 1. `handle` is NULL or was returned by [`box_into_handle`] or [`arc_into_handle`] for
///    the same `C` and has not been freed.
/// 2. For the lifetime `'a` nobody frees it or (for [`Exclusive`] handles) mutates it.
pub(crate) unsafe fn handle_ref<'a, C: Castable>(handle: *const C) -> Option<&'a C::Rust> {
    if handle.is_null() {
        return None;
    }
    // SAFETY: 1. a non-NULL handle was made for `C` and is live (caller contract), so its
    // payload is a live `C::Rust` (the Box's value, or the value of the Arc it holds);
    // 2. the caller guarantees no concurrent free or mutation for 'a.
    unsafe { C::Ownership::payload::<C::Rust>(handle.cast()).as_ref() }
}

/// Borrows the value behind an [`Exclusive`] handle mutably; `None` for NULL.
///
/// # Safety
/// 1. `handle` is NULL or was returned by [`box_into_handle`] for the same `C` and has not
///    been freed.
/// 2. For the lifetime `'a` no other reference to it exists (one thread at a time).
pub(crate) unsafe fn handle_mut<'a, C: Castable<Ownership = Exclusive>>(
    handle: *mut C,
) -> Option<&'a mut C::Rust> {
    // SAFETY: 1. a non-NULL handle points at a live boxed `C::Rust`; 2. exclusive use is the
    // documented contract of `Exclusive` handles.
    unsafe { handle.cast::<C::Rust>().as_mut() }
}

/// A new strong reference to a [`Shared`] handle's value; `None` for NULL.
///
/// # Safety
/// `handle` is NULL or was returned by [`arc_into_handle`] for the same `C` and still holds
/// its strong count.
pub(crate) unsafe fn arc_clone<C: Castable<Ownership = Shared>>(
    handle: *const C,
) -> Option<Arc<C::Rust>> {
    // SAFETY: 1. NULL, or a live `Box<Arc<C::Rust>>` made by `arc_into_handle` whose Arc holds
    // the handle's strong count: cloning it takes a new count for the caller.
    unsafe { handle.cast::<Arc<C::Rust>>().as_ref() }.map(Arc::clone)
}

/// Frees a [`Shared`] handle (drops its strong count). NULL is a no-op.
///
/// # Safety
/// `handle` is NULL or was returned by [`arc_into_handle`] for the same `C`, and this is the
/// only free of that handle.
pub(crate) unsafe fn arc_free<C: Castable<Ownership = Shared>>(handle: *const C) {
    if !handle.is_null() {
        // SAFETY: 1. the handle is a `Box<Arc<C::Rust>>` made by `arc_into_handle`, owning one
        // strong count; 2. it is freed once.
        drop(unsafe { Box::from_raw(handle.cast_mut().cast::<Arc<C::Rust>>()) });
    }
}

/// Frees an [`Exclusive`] handle. NULL is a no-op.
///
/// # Safety
/// `handle` is NULL or was returned by [`box_into_handle`] for the same `C`, it is not in
/// use on another thread, and this is the only free of it.
pub(crate) unsafe fn box_free<C: Castable<Ownership = Exclusive>>(handle: *mut C) {
    if !handle.is_null() {
        // SAFETY: 1. the pointer came from `Box::into_raw`; 2. nobody else uses it; 3. it is
        // freed once.
        drop(unsafe { Box::from_raw(handle.cast::<C::Rust>()) });
    }
}

/// Writes `value` through an output pointer (checked non-NULL by the caller's macro).
///
/// # Safety
/// `out` is non-NULL, aligned and valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T) {
    debug_assert!(!out.is_null());
    // SAFETY: 1. non-NULL, aligned and writable by the caller's contract. `write` does not
    // drop the old (possibly uninitialized) value.
    unsafe { out.write(value) }
}

/// A borrowed C buffer: `ptr` + `len` elements. NULL is accepted only with `len == 0`.
///
/// # Safety
/// If `ptr` is non-NULL, it is aligned and valid for reads of `len` elements for `'a`, and
/// nothing writes them meanwhile.
pub(crate) unsafe fn input_slice<'a, T>(ptr: *const T, len: usize) -> Option<&'a [T]> {
    if ptr.is_null() {
        return (len == 0).then_some(&[]);
    }
    // SAFETY: 1. non-NULL, aligned and readable for `len` elements by the caller's contract.
    Some(unsafe { core::slice::from_raw_parts(ptr, len) })
}

/// A mutable C buffer: `ptr` + `len` elements. NULL is accepted only with `len == 0`.
///
/// # Safety
/// If `ptr` is non-NULL, it is aligned and valid for reads and writes of `len` elements for
/// `'a`, and nothing else accesses them meanwhile.
pub(crate) unsafe fn output_slice<'a, T>(ptr: *mut T, len: usize) -> Option<&'a mut [T]> {
    if ptr.is_null() {
        return (len == 0).then_some(&mut []);
    }
    // SAFETY: 1. non-NULL, aligned, valid and unaliased for `len` elements by contract.
    Some(unsafe { core::slice::from_raw_parts_mut(ptr, len) })
}

/// Reads a struct whose first field is `size_t struct_size`, written by a caller that may
/// know fewer (older) or more (newer) fields: only `min(struct_size, size_of::<T>())` bytes
/// are read; fields past that keep their value in `defaults`. `None` if `struct_size` is
/// smaller than the `struct_size` field itself.
///
/// # Safety
/// `ptr` is non-NULL, aligned for `usize`, and valid for reads of `struct_size` bytes (as the
/// caller stated). Every bit pattern of `T`'s fields must be valid (plain integers).
pub(crate) unsafe fn read_versioned<T: Copy>(ptr: *const T, defaults: T) -> Option<T> {
    debug_assert!(!ptr.is_null());
    // SAFETY: 1. the first field of every versioned struct is a `size_t`, readable by contract.
    let size = unsafe { ptr.cast::<usize>().read() };
    if size < size_of::<usize>() {
        return None;
    }
    let n = size.min(size_of::<T>());
    let mut value = defaults;
    // SAFETY: 1. the source is readable for `size >= n` bytes; 2. the destination is a local
    // `T` of `size_of::<T>() >= n` bytes; 3. they do not overlap; 4. all field bit patterns
    // are valid per this function's contract.
    unsafe {
        core::ptr::copy_nonoverlapping(ptr.cast::<u8>(), (&raw mut value).cast::<u8>(), n);
    }
    Some(value)
}

/// Writes `value` into a caller's versioned struct: only the bytes after `struct_size` and
/// below `min(struct_size, size_of::<T>())`; the caller's `struct_size` is kept. Returns
/// `false` (and writes nothing) if `struct_size` is smaller than the field itself.
///
/// # Safety
/// `out` is non-NULL, aligned, and valid for reads and writes of `struct_size` bytes (as
/// the caller stated in its `struct_size` field).
pub(crate) unsafe fn write_versioned<T: Copy>(out: *mut T, value: T) -> bool {
    debug_assert!(!out.is_null());
    // SAFETY: 1. the first field is a readable `size_t`.
    let size = unsafe { out.cast::<usize>().read() };
    let head = size_of::<usize>();
    if size < head {
        return false;
    }
    let n = size.min(size_of::<T>());
    // SAFETY: 1. `out` is writable for `size >= n` bytes; 2. `value` is a local of
    // `size_of::<T>() >= n` bytes; 3. no overlap; 4. `head <= n`.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&raw const value).cast::<u8>().add(head),
            out.cast::<u8>().add(head),
            n - head,
        );
    }
    true
}

/// A `Send + Sync` wrapper for a host pointer whose thread-safety the host guarantees (the
/// `user_data` of a thread-safe callback).
#[derive(Debug)]
pub(crate) struct HostPtr<T>(pub(crate) *mut T, PhantomData<T>);

impl<T> Clone for HostPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for HostPtr<T> {}

impl<T> HostPtr<T> {
    /// Wraps `ptr`.
    pub(crate) fn new(ptr: *mut T) -> Self {
        HostPtr(ptr, PhantomData)
    }
}

// SAFETY: 1. HostPtr only carries the pointer back to host callbacks; the C API documents that
// those callbacks (and their user data) must be safe to call from any thread at any time.
unsafe impl<T> Send for HostPtr<T> {}
// SAFETY: 1. as for Send: the pointer is never dereferenced on the Rust side.
unsafe impl<T> Sync for HostPtr<T> {}

/// Copies `text` and a terminating NUL into `buf`: `SIEVE_STATUS_INSUFFICIENT_SIZE` (and
/// nothing written) when `buf` is not longer than `text`.
pub(crate) fn copy_with_nul(buf: &mut [u8], text: &[u8]) -> sieve_status {
    let Some(dst) = buf.get_mut(..=text.len()) else {
        return sieve_status::InsufficientSize;
    };
    let (body, nul) = dst.split_at_mut(text.len());
    body.copy_from_slice(text);
    nul.fill(0);
    sieve_status::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boom() -> sieve_status {
        ffi_boundary! {
            if core::hint::black_box(true) {
                panic!("boom");
            }
            sieve_status::Ok
        }
    }

    fn early_return(x: u32) -> u32 {
        ffi_boundary! {
            if x > 3 {
                return 7;
            }
            x
        }
    }

    #[test]
    fn panics_become_the_panic_value() {
        assert_eq!(boom(), sieve_status::Panic);
        assert_eq!(early_return(9), 7);
        assert_eq!(early_return(2), 2);
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct V2 {
        struct_size: usize,
        a: u64,
        b: u64,
    }

    #[test]
    fn versioned_structs_read_and_write_only_what_the_caller_has() {
        let defaults = V2 {
            struct_size: size_of::<V2>(),
            a: 1,
            b: 2,
        };
        // An older caller that knows only `a`.
        let old = V2 {
            struct_size: 16,
            a: 10,
            b: 99,
        };
        // SAFETY: 1. `old` is a live local, readable for its full size.
        let got = unsafe { read_versioned(&raw const old, defaults) }.unwrap();
        assert_eq!((got.a, got.b), (10, 2));
        let mut out = V2 {
            struct_size: 16,
            a: 0,
            b: 0,
        };
        // SAFETY: 1. `out` is a live local, writable for its full size.
        assert!(unsafe { write_versioned(&raw mut out, defaults) });
        assert_eq!((out.struct_size, out.a, out.b), (16, 1, 0));
        let bad = V2 {
            struct_size: 3,
            a: 0,
            b: 0,
        };
        // SAFETY: as above.
        assert!(unsafe { read_versioned(&raw const bad, defaults) }.is_none());
    }
}
