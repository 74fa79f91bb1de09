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
//! `sieve_compute_masks` (library threads) or `sieve_compute_masks_with_executor` (host pool).
//!
//! # Conventions
//! Handle first, then inputs, then outputs; a buffer is followed by its length; text is
//! `const uint8_t *` + `size_t` checked as UTF-8; enums arrive as `uint32_t`; every pointer is
//! NULL-checked (a NULL buffer is accepted only with length 0); outputs are written only on
//! success (documented size queries aside); a panic is caught and becomes
//! `SIEVE_STATUS_PANIC`.
//!
//! # Crate features
//! `generate-header`: regenerate `include/sieve.h` with cbindgen during the build.
//!
//! # Panics & limits
//! No exported function unwinds into C. Every budget is a field of `sieve_limits`.
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
pub mod error;
pub mod gate;
pub mod grammar;
pub mod kernels;
pub mod matcher;
/// cbindgen:ignore
#[cfg(not(feature = "std"))]
mod platform;
pub mod status;
pub mod structural;
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
