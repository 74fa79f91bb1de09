//! Support code for the `sieve` CLI and benchmarks.
//!
//! - [`tokenizer`]: loads real tokenizers (embedded tiktoken encodings or a Hugging Face
//!   `tokenizer.json`) into a vocabulary plus an encoder.
//! - [`demo`] and [`mask_cmd`]: the logic of `sieve demo` and `sieve mask` (the binary only
//!   parses arguments and prints).
//! - `generate_cmd` (with the default `generate` feature): `sieve generate`, a real model
//!   under sieve's masks through the `sieve-generate` crate.
//! - [`maskbench`] and [`schema_suite`]: `sieve maskbench` (MaskBench conformance and timing,
//!   llgbench's methodology) and `sieve schema-suite` (the JSON-Schema-Test-Suite); both
//!   return report structs that the ratchet tests in `sieve-tests` also use.
//! - [`ratchet`]: committed per-case expected outcomes (a pass→fail fails; `SIEVE_BLESS=1`
//!   writes improvements and refuses regressions not named in `SIEVE_ACCEPT_REGRESSIONS`).
//! - [`trace`]: traces an invalid instance the grammar accepts to the superset entry of the
//!   coverage report that explains it, with an independent validator (or counts it a bug).
//! - [`concurrent`] and [`lockstep`]: `sieve concurrent` (many matchers on many threads,
//!   on host threads or as batches on sieve's batch runner).
//! - [`grammar_info`]: `sieve grammar-info` and `sieve maskbench --classes` (grammar analysis).
//! - [`stats`], [`rng`], [`util`]: timing summaries, a seeded PRNG, mask and text helpers.
//! - `profile` (with `--features pprof`): sampling flamegraphs for `sieve maskbench
//!   --flamegraph` and the criterion benches' `--profile-time`.

pub mod concurrent;
pub mod demo;
#[cfg(feature = "generate")]
pub mod generate_cmd;
pub mod grammar_info;
pub mod lockstep;
pub mod mask_cmd;
pub mod maskbench;
#[cfg(feature = "pprof")]
pub mod profile;
pub mod pyjson;
pub mod ratchet;
pub mod rng;
pub mod schema_suite;
pub mod stats;
pub mod tokenizer;
pub mod toolbench;
pub mod trace;
pub mod util;
