//! `sieve generate`: a real language model decoding under sieve's token masks.
//!
//! The model runs on llama.cpp (through the `llama-cpp-2` crate; bench/perf.md, "Inference
//! backend for `sieve generate`", has the measurements behind that choice). sieve-core is
//! not touched by any of this: the vocabulary is read from the model, grammars compile over
//! it, and each sequence gets a [`sieve_core::Matcher`].
//!
//! # Key types
//! - [`model::Model`]: a GGUF model with its sieve vocabulary and tokenizer.
//! - [`validate::Constraint`]: JSON Schema, Lark grammar or regex; compiles to a grammar and
//!   checks outputs ([`validate::check`]: `jsonschema` and `regex` independently, Lark by a
//!   sieve re-parse).
//! - [`generate::generate`] with [`generate::GenerateConfig`]: the loop (masks computed on
//!   worker threads while the forward pass runs, jump-forward over forced tokens, an
//!   unconstrained timing baseline).
//! - [`run`] with [`RunConfig`]: all of it for the CLI, returning a [`Report`].
//! - [`fetch`]: the default model (SmolLM2-135M-Instruct Q4_1), fetched on first use.
//!
//! The model backend (`model`, `generate`, `report`) is behind the `llama` feature: llama.cpp's
//! build needs cmake, a C++ compiler and libclang. Without it the crate keeps the model fetch,
//! the samplers and the output checks, and its real-model test prints a SKIP line.
//!
//! # Usage pattern
//! load the model → compile the constraint → for each step: forward pass ∥ compute_mask →
//! apply_mask_f32 → sample → consume_token (→ forced tokens) → check the outputs.
//!
//! # Panics & limits
//! No input should panic; errors are `anyhow` errors with context. Engine budgets are
//! sieve-core's `Limits::default()`. llama.cpp's own checks abort on internal errors.

// The key types above are behind the `llama` feature; without it their links dangle.
#![cfg_attr(not(feature = "llama"), allow(rustdoc::broken_intra_doc_links))]

pub mod fetch;
#[cfg(feature = "llama")]
pub mod generate;
#[cfg(feature = "llama")]
pub mod model;
#[cfg(feature = "llama")]
mod pool;
#[cfg(feature = "llama")]
pub mod report;
pub mod sample;
pub mod validate;

#[cfg(feature = "llama")]
pub use generate::{GenerateConfig, StopReason};
#[cfg(feature = "llama")]
pub use report::{Report, RunConfig, run};
pub use sample::Sampling;
pub use validate::{Constraint, GateSpec};
