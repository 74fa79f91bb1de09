//! Support code for the `sieve` CLI and benchmarks.
//!
//! - [`tokenizer`]: loads real tokenizers (embedded tiktoken encodings or a Hugging Face
//!   `tokenizer.json`) into a vocabulary plus an encoder.
//! - [`demo`] and [`mask_cmd`]: the logic of `sieve demo` and `sieve mask` (the binary only
//!   parses arguments and prints).
//! - [`stats`], [`rng`], [`util`]: timing summaries, a seeded PRNG, mask and text helpers.

pub mod demo;
pub mod mask_cmd;
pub mod rng;
pub mod stats;
pub mod tokenizer;
pub mod util;
