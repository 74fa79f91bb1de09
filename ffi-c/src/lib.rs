//! sieve-ffi-c: the C ABI of sieve (`libsieve.a` / `libsieve.so`, header
//! `include/sieve.h`).
//!
//! A thin shell over `sieve-core`: conversion, NULL checks, the panic boundary and ownership;
//! all grammar and token work happens in the core.
//!
//! # Key types
//! - `sieve_tokenizer`: a vocabulary (shared `Arc`, immutable, thread-safe), from a token
//!   byte table or from `tokenizer.json` text.
//! - `sieve_grammar`: a compiled grammar of any `sieve_grammar_kind` (Lark, regex, JSON
//!   Schema, structural tag, GBNF; shared `Arc`, thread-safe) with its JSON Schema coverage
//!   report.
//! - `sieve_matcher`: per-sequence state (exclusive `Box`, one thread at a time).
//! - `sieve_error`: an owned rich error (status, message, line, column, JSON pointer).
//! - [`sieve_status`]: stable status numbers.
//!
//! # Usage pattern
//! `sieve_tokenizer_from_json` → `sieve_grammar_new` → `sieve_matcher_new` → loop {
//! `sieve_matcher_compute_mask` → `sieve_apply_mask_f32` → sample →
//! `sieve_matcher_consume_token` } until `sieve_matcher_is_stopped`. Batches:
//! `sieve_compute_masks` (the calling thread and the library's pool; without `std`, the
//! calling thread) or `sieve_compute_masks_with_executor` (host pool). Speculative decoding
//! with a draft token tree: `sieve_matcher_fill_draft_tree` (one matcher) and
//! `sieve_fill_draft_trees` (many, on the pool). The pool
//! (`sieve-runner`, shared with `llg_par_compute_mask`) is started on first use, its threads
//! idle between calls (polling for 200 µs, then asleep); `sieve_set_num_threads` sizes it and `sieve_shutdown_threads` joins
//! every thread of it.
//!
//! # Conventions
//! Handle first, then inputs, then outputs; a buffer is followed by its length; text is
//! `const uint8_t *` + `size_t` checked as UTF-8; enums arrive as `uint32_t`; every pointer is
//! NULL-checked (a NULL buffer is accepted only with length 0); outputs are written only on
//! success (documented size queries aside); a panic is caught and becomes
//! `SIEVE_STATUS_PANIC` (without `std`, a panic aborts).
//!
//! # Crate features
//! - `std` (default): `sieve_compute_masks` and `llg_par_compute_mask` on the library's pool,
//!   `catch_unwind` at every entry point, stderr for the LLGuidance layer's
//!   `log_stderr_level`; forwards to `sieve-core/std` and `sieve-kernels/std`. Without it the
//!   crate is `#![no_std]` + `alloc` (see "Without std" below).
//! - `panic-handler` (only without `std`): a `#[panic_handler]` that calls the C library's
//!   `abort()`.
//! - `c-alloc` (only without `std`): a `#[global_allocator]` over the C library's `malloc`,
//!   `realloc` and `free`.
//! - `generate-header`: regenerate `include/sieve.h` with cbindgen during the build.
//!
//! # Panics & limits
//! No exported function unwinds into C. Every budget is a field of `sieve_limits`.
//!
//! # Without std (bare metal, an RTOS)
//! A C firmware links `libsieve.a` built for its target without `std`, with both platform
//! features (a staticlib must contain a panic handler and an allocator):
//!
//! ```text
//! cargo rustc -p sieve-ffi-c --crate-type staticlib --profile firmware \
//!     --target thumbv7em-none-eabihf --no-default-features --features panic-handler,c-alloc
//! # → target/thumbv7em-none-eabihf/firmware/libsieve.a
//! ```
//!
//! (`--crate-type staticlib` only skips the cdylib, which such targets cannot build; `cargo
//! build` works too, with a warning.) A Rust firmware that links the rlib leaves both features
//! off and brings its own handler and allocator. The header is the same and every function
//! is there; what differs:
//! - **Panics abort.** There is no `catch_unwind`, so `SIEVE_STATUS_PANIC` is never returned:
//!   a panic (a bug: inputs are checked and budgets bound the work) runs the panic handler,
//!   which with `panic-handler` calls `abort()` (newlib: `_exit(1)`; under semihosting an exit
//!   the debugger sees). The `firmware` profile (workspace `Cargo.toml`: `opt-level = "s"`,
//!   fat LTO, one codegen unit) sets `panic = "abort"`, which is also the default of the
//!   `*-none-*` targets; their precompiled `core` and `alloc` serve, no `-Z build-std`.
//!   Running out of memory panics too, so it aborts.
//! - **Memory is the C heap.** With `c-alloc` every allocation is a `malloc` (layouts
//!   aligned beyond `malloc`'s 8 bytes, 16 on 64-bit targets, take `size + align` bytes). Size
//!   the heap for the tokenizer, the compiled grammars and the matchers; `sieve_limits` bounds
//!   what one grammar or one mask may take.
//! - **No threads.** `sieve_compute_masks` computes the items one after the other on the
//!   calling thread; `sieve_compute_masks_with_executor` is unchanged, so an RTOS hands the
//!   items to its own tasks through the executor callback; `llg_par_compute_mask` runs on the
//!   calling thread and calls `done_cb` before it returns; `sieve_set_num_threads` and
//!   `sieve_shutdown_threads` only check their arguments. The handles keep their thread
//!   safety: shared handles count references with atomics, so the target needs pointer-sized
//!   compare-and-swap (`target_has_atomic = "ptr"`: Cortex-M3 and up, not `thumbv6m`).
//! - **No stderr**: the LLGuidance layer's `log_stderr_level` prints nothing (the message is
//!   still in `llg_get_error`). The mask kernels choose their code at compile time.
//! - Everything else is there: grammars from Lark, regex, GBNF, JSON Schema and structural tag
//!   text, tokenizers from byte tables or `tokenizer.json` text, gates, stop controllers, the
//!   LLGuidance-compatible layer.
//!
//! Linking with `arm-none-eabi-gcc`: compile for the library's ABI (`thumbv7em-none-eabihf`:
//! `-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16`), enable the FPU before the
//! first call, put `libsieve.a` before the C library (`malloc`, `realloc`, `free`, `abort`;
//! `memcpy` and friends come from the staticlib's compiler builtins as weak symbols), and pass
//! `-Wl,--gc-sections`. `tests/embedded-c/` is a complete example for QEMU's mps2-an386
//! (about 1 MiB of code: every grammar front end is linked, since the kind is chosen at run
//! time).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]
#![allow(non_camel_case_types)]
// The exported functions take raw pointers by design (a C ABI); each one checks them for NULL
// and documents the validity the caller must guarantee. They are not `unsafe fn` because C
// has no such notion and Rust callers use the core crate directly.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

extern crate alloc;

/// The `alloc` items of the std prelude, imported by every module so that the `no_std` build
/// (which lacks them) and the `std` build (where they are the same items) read alike.
mod prelude {
    pub(crate) use alloc::borrow::ToOwned;
    pub(crate) use alloc::boxed::Box;
    pub(crate) use alloc::string::{String, ToString};
    pub(crate) use alloc::vec::Vec;
    pub(crate) use alloc::{format, vec};
}

pub mod batch;
mod boundary;
/// cbindgen:ignore
mod compat;
pub mod draft_tree;
pub mod error;
pub mod gate;
pub mod grammar;
pub mod kernels;
pub mod matcher;
/// cbindgen:ignore
#[cfg(any(not(feature = "std"), test))]
mod platform;
pub mod status;
pub mod structural;
pub mod threads;
pub mod tokenizer;
// Last: cbindgen writes items in module order, and this module uses `sieve_limits`.
pub mod analysis;

pub use status::sieve_status;

/// The library version, e.g. `"sieve 0.1.0"`: a static NUL-terminated string (never free it).
#[unsafe(no_mangle)]
pub extern "C" fn sieve_version() -> *const core::ffi::c_char {
    boundary::ffi_boundary! {
        concat!("sieve ", env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    }
}
