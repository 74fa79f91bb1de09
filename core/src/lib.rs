//! sieve-core: exact token masks for grammar-constrained decoding.
//!
//! A grammar (Lark-style text or a regex) is compiled once into an immutable, shareable
//! [`Grammar`]; each generated sequence gets a cheap [`Matcher`] that computes the set of
//! tokens allowed next (the *token mask*) and consumes the tokens actually sampled.
//!
//! # Key types
//! - [`Vocabulary`]: the token byte strings of a tokenizer, laid out as a [`toktrie::TokTrie`].
//! - [`Grammar`]: a compiled grammar (`Send + Sync`, cheap to clone).
//! - [`Matcher`]: per-sequence state: `compute_mask`, `consume_token`, `rollback`, ...;
//!   budget mode (`shortest_completion`, `completion_tokens`, `compute_mask_within`: finish
//!   within a token budget, see `core/docs/budget.md`).
//! - [`Limits`]: every budget (lexer states, fuel, Earley items, grammar size, memory).
//! - [`StopController`]: stop tokens, stop strings and a stop regex over the decoded text;
//!   what to show and when to end a sequence ([`stop`]).
//! - [`Gate`]: lazy grammars: a reasoning phase (`<think>` … `</think>`, optional budget) and
//!   triggers (strings, token ids, patterns) in front of any grammar, joined by
//!   [`Matcher::with_gate`]; cheap `is_unconstrained()` while inactive ([`gate`],
//!   `core/docs/gate.md`).
//!
//! # Usage pattern
//! compile → matcher → `compute_mask` → sample → `consume_token` → repeat until EOS.
//!
//! # Pipeline
//! Lark text → [`grammar::lark`] → [`ir::GrammarIr`] → lexemes compiled by the
//! derivative [`regex`] engine into a lazily built multi-lexeme DFA ([`lexer`]) under an
//! [`earley`] parser over lexemes. The mask is computed by walking the token trie with the
//! parser as recognizer.
//!
//! # Panics & limits
//! No input reachable from the public API panics: every budget lives in [`Limits`] and
//! exceeding one returns a typed error naming it.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::todo)
)]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod earley;
pub mod error;
pub mod gate;
pub mod grammar;
pub mod ir;
pub mod lexer;
pub mod limits;
pub mod matcher;
pub mod regex;
mod roomy;
pub mod slicer;
#[cfg(all(test, feature = "json-schema"))]
mod stack_tests;
pub mod stop;
pub mod sync;
pub mod toktrie;
pub mod vocab;

pub use error::{
    GrammarError, GrammarErrorKind, LimitKind, MatcherError, Position, Span, StopError,
};
pub use gate::{Gate, GateConfig, Reasoning, Triggers};
pub use grammar::Grammar;
pub use limits::{CompileBudget, Limits};
pub use matcher::{
    DraftTreeError, DraftTreeFill, GatePhase, MaskCost, MaskStats, Matcher,
    check_draft_tree_parents,
};
pub use stop::StopController;
pub use vocab::Vocabulary;
