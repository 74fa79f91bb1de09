//! sieve-runner: the one batch runner behind every batch call of sieve's bindings: the C ABI's
//! `sieve_compute_masks` and `sieve_compute_masks_with_executor`, the LLGuidance-compatible
//! `llg_par_compute_mask` (sync and with a completion callback), the C ABI's
//! `sieve_fill_draft_trees`, the C++ `compute_masks`, and Python's
//! `fill_next_token_bitmask_batch`, `fill_next_token_bitmask_draft`,
//! `fill_next_token_bitmask_draft_tree` and `consume_token_batch`.
//!
//! # Where it lives, and why
//! `ffi-c/runner/`, a crate of its own that `sieve-ffi-c`, `sieve-ffi-cxx` and `sieve-py`
//! depend on. Not a module of `sieve-ffi-c`: that crate's rlib carries every exported
//! `#[no_mangle]` C function, which would be linked into (and exported from) the Python
//! extension and clash with a `libsieve.so` loaded in the same process. This crate exports
//! no symbol and depends on nothing but `std` (and on nothing at all without its `std`
//! feature, where only [`by_cost`] is there, for `sieve-ffi-c`'s `no_std` build). Each
//! binary that links it (libsieve, the Python extension, a C++ program) has its own global
//! pool.
//!
//! # Design
//! - **A persistent pool** ([`Pool`]): its worker threads are started once, when the pool is
//!   made (no spawn per call). Between calls a worker polls for [`SPIN`] (200 µs,
//!   yielding the CPU between polls), then sleeps on a condition variable. Waking a sleeping
//!   thread took 50-60 µs on the 2-CPU VM we measure on, as long as a batch of 64 warm
//!   masks: a host that calls batches back to back (consuming tokens in between) finds a
//!   polling worker, and one that calls once per forward pass pays one wake-up per call.
//! - **The calling thread works too.** [`Pool::run`] posts up to `threads - 1` help requests
//!   (at most one per other CPU: more threads than CPUs would only take turns on them) and
//!   starts on the items itself; a polling worker takes a request at once, and a worker that
//!   arrives claims items from the same counter. Sleeping workers are woken one at a time
//!   (each that joins wakes the next while items are left), and not at all for a batch
//!   expected to take under [`WAKE_WORTH_NS`] ([`Pool::run_expecting`]; the bindings pass
//!   the sum of `sieve_core::MaskCost::typical_ns`), unless calls come back to back. A batch
//!   of cheap masks is often done before a sleeping worker is awake, and then the help
//!   requests are withdrawn unserved.
//! - **Items are claimed dynamically, most expensive first.** The caller passes the order in
//!   which items start ([`by_cost`]: a stable sort of the item indices by the matchers'
//!   `sieve_core::Matcher::mask_cost_hint`, full walks first, copies last); one atomic
//!   counter hands out positions in that order, so the long masks start at once and the
//!   cheap ones fill the gaps.
//! - **A completion barrier.** [`Pool::run`] returns only when every item has finished and
//!   every worker that joined the call has let go of it: the caller withdraws the help
//!   requests no worker took, then waits until the count of workers inside the call is zero
//!   (polling for [`SPIN`], then on a condition variable). Nothing of the call's data is touched
//!   after it returns, and with no other call in flight every worker has left its task
//!   ([`Pool::active_workers`] is 0; it may still poll for [`SPIN`] before sleeping).
//! - **Joined threads.** [`Pool::shutdown`] (also run by `Drop`) lets the workers finish the
//!   queued work, then joins every one of them: when it returns, no thread of the pool is
//!   running, thread-local destructors included. The process-wide pool ([`global`]) is shut
//!   down by [`shutdown`] (the C ABI's `sieve_shutdown_threads`, Python's
//!   `sieve.shutdown_threads`, C++'s `sieve::shutdown_threads`) and made again, lazily, by
//!   the next batch call. [`set_threads`] replaces it by a pool of another size (the old one
//!   is joined).
//! - **Panics propagate.** Each item runs under `catch_unwind`; a panicking item does not
//!   stop the others, the worker survives, and the call returns [`Panicked`] (the bindings
//!   turn it into their error: `SIEVE_STATUS_PANIC`, an exception). Nothing aborts.
//! - **Owned tasks** ([`Pool::spawn`]): work that outlives the call that started it
//!   (`llg_par_compute_mask` with a completion callback) runs on a pool worker, which may
//!   itself run a batch with the other workers' help. [`Pool::shutdown`] waits for it.
//!
//! # Memory ordering
//! A help request is pushed and popped under the pool's one mutex, so the call's data (on the
//! caller's stack) is published to a worker by the pop; a polling worker reads only the
//! queue's length (an atomic hint) and then pops under the mutex like any other. A worker
//! leaves a call by decrementing the call's joined count with `Release` (under the mutex, so
//! that a caller asleep on the condition variable cannot miss the notification), and the
//! caller reads the count with `Acquire`: whatever a worker wrote while computing items
//! (masks, matcher state) happens-before the caller sees zero and returns. The item counter
//! only distributes indices (`Relaxed`): it carries no data.
//!
//! # Limits
//! A pool's size is fixed when it is made. Calls from many host threads at once share the
//! pool's workers; each caller always works through its own batch, so none waits for a
//! worker that never comes. [`shutdown`] and [`set_threads`] are refused on a pool worker
//! (from inside an `llg_par_compute_mask` completion callback): a thread cannot join itself.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

extern crate alloc;

use alloc::vec::Vec;

#[cfg(feature = "std")]
mod global;
#[cfg(feature = "std")]
mod pool;

#[cfg(feature = "std")]
pub use global::{
    OnPoolThread, SetThreadsError, default_threads, global, run, run_expecting, set_threads,
    shutdown, threads,
};
#[cfg(feature = "std")]
pub use pool::{Panicked, Pool, SPIN, WAKE_WORTH_NS};

/// The order in which a batch starts its items: the indices `0..costs.len()` sorted by
/// `costs`, highest first; equal costs keep their index order (a stable sort, so the result
/// is deterministic). `costs[i]` is item `i`'s expected cost, for masks
/// `sieve_core::Matcher::mask_cost_hint()` (a walk before a slice before a remembered state
/// mask before a copy).
pub fn by_cost<K: Ord>(costs: &[K]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].cmp(&costs[a]));
    order
}

#[cfg(test)]
mod tests {
    use super::by_cost;

    #[test]
    fn by_cost_is_stable_and_descending() {
        assert_eq!(by_cost(&[1, 3, 2, 3, 1, 0]), [1, 3, 2, 0, 4, 5]);
        assert!(by_cost::<u8>(&[]).is_empty());
        assert_eq!(by_cost(&[5; 4]), [0, 1, 2, 3]);
    }
}
