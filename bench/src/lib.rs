//! Support code for the `sieve` CLI and benchmarks.
//!
//! - [`tokenizer`]: loads real tokenizers (embedded tiktoken encodings or a Hugging Face
//!   `tokenizer.json`) into a vocabulary plus an encoder.
//! - `demo` and `mask_cmd`: the logic of `sieve demo` and `sieve mask` (the binary only
//!   parses arguments and prints).
//! - [`stats`], [`rng`], [`util`]: timing summaries, a seeded PRNG, mask and text helpers.
//!
//! # Crate features
//! - `cli-wip` (temporary, off by default): builds the parts that need the core matcher API
//!   (`Vocabulary::new`, `Grammar`, `Matcher`): `LoadedTokenizer::vocab`, `demo`, `mask_cmd`
//!   and the real `sieve` commands. Remove the gate once that API has landed.

#[cfg(feature = "cli-wip")]
pub mod demo;
#[cfg(feature = "cli-wip")]
pub mod mask_cmd;
pub mod rng;
pub mod stats;
pub mod tokenizer;
pub mod util;
