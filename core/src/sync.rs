//! Shared ownership and locks on every target, with or without atomic compare-and-swap.
//!
//! [`Arc`] is `alloc::sync::Arc` wherever the target has pointer-sized CAS (every host, Cortex-M3
//! and up, AArch64), so a std user sees the standard type. On targets without CAS
//! (`thumbv6m-none-eabi`: Cortex-M0/M0+) it is `portable_atomic_util::Arc`, and the spin locks
//! go through `portable-atomic`. The library does not pick how CAS is emulated there; the final
//! binary does, with one of:
//! - `portable-atomic = { version = "1", features = ["critical-section"] }` plus a
//!   `critical-section` implementation (e.g. `cortex-m`'s `critical-section-single-core`), or
//! - `RUSTFLAGS="--cfg portable_atomic_unsafe_assume_single_core"` (single-core chips only).
//!
//! Without either, the build stops with portable-atomic's "dependents require atomic CAS" error.

#[cfg(target_has_atomic = "ptr")]
pub use alloc::sync::Arc;
#[cfg(not(target_has_atomic = "ptr"))]
pub use portable_atomic_util::Arc;

/// The lock of the grammar's warm parser, master tables and published snapshot, and of the
/// gate's cache: a spin lock (each critical section is a clone, a lookup, or a master-table
/// step on a cold state; warm masks take none, see `matcher/shared.rs`). With `std`, a waiter
/// yields its core instead of spinning ([`Backoff`]): with more threads than cores, a
/// descheduled holder would otherwise let the waiters spin out their time slices.
pub(crate) type Mutex<T> = spin::mutex::SpinMutex<T, Backoff>;

/// What a waiter does while a [`Mutex`] is held: yield the thread with `std`, a spin-loop hint
/// without (a bare-metal target has no scheduler to yield to).
pub(crate) struct Backoff;

impl spin::RelaxStrategy for Backoff {
    #[inline]
    fn relax() {
        #[cfg(feature = "std")]
        std::thread::yield_now();
        #[cfg(not(feature = "std"))]
        core::hint::spin_loop();
    }
}
