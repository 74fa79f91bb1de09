//! The sieve C++ API: one [`cxx`] bridge in namespace `sieve`.
//!
//! # Key types
//! Three opaque Rust types, owned from C++ through `rust::Box`:
//! - `sieve::Tokenizer`: a vocabulary, from a `tokenizer.json` text
//!   ([`tokenizer_from_json`]) or from a byte table ([`tokenizer_from_byte_table`]).
//! - `sieve::Grammar`: a compiled grammar for one tokenizer, in any syntax
//!   ([`grammar_new`] takes its name: `lark`, `gbnf`, `json_schema`, `regex`,
//!   `structural_tag`, `llguidance`; [`grammar_from_lark`], [`grammar_from_gbnf`] and the
//!   like name one); it does not borrow the tokenizer.
//! - `sieve::Matcher`: per-sequence state made from a grammar ([`matcher_new`]); it does not
//!   borrow the grammar. Used from one thread at a time.
//! - `sieve::StopController`: stop tokens and a stop regex over the decoded text
//!   ([`stop_controller_new`], the core's [`sieve_core::StopController`]): `commit_token`
//!   returns a `sieve::StopCommit` with the text safe to show and the stop flag; `clone()`
//!   branches it. Used from one thread at a time.
//!
//! Mask kernels (the `sieve-kernels` crate, AVX2 or NEON where the CPU has it) are free
//! functions on `rust::Slice`s: [`apply_mask_f32`] (and `_f16` / `_bf16` on raw bit
//! patterns), [`apply_mask_sparse_f32`] for a candidate list, [`apply_mask_f32_batch`] for the
//! rows `compute_mask` filled; [`kernel_name`] names the level in use.
//!
//! Batches: [`compute_masks`] fills one row per matcher of a `rust::Slice<rust::Box<Matcher>>`
//! on the calling thread and the library's thread pool (`sieve-runner`, the runner of the C
//! and Python batch calls: persistent threads, idle between calls (polling for 200 µs, then
//! asleep), the most expensive masks first); [`set_num_threads`] sizes the pool and [`shutdown_threads`] joins all its threads.
//! Speculative decoding with a draft token tree: `Matcher::fill_draft_tree` fills a row per
//! node (see `draft_tree.rs`).
//!
//! # Usage pattern
//! compile (`grammar_from_lark`) → `matcher_new` → `compute_mask` into a
//! `rust::Slice<uint32_t>` of `mask_words()` words (bit `i` = token `i`) → sample →
//! `consume_token` (commit), until `is_stopped()`. `examples/demo.cc` is the whole loop.
//!
//! # Errors
//! Every fallible function returns `Result`, so C++ sees a `rust::Error` exception whose
//! `what()` is `"<ErrorCode name>: <message>"` (for example `"GrammarError: ..."`).
//! `error_code_of(e.what())` recovers the [`ffi::ErrorCode`], numbered exactly like the C
//! API's `sieve_status`. Matcher errors are sticky until `reset()`, as in the core.
//!
//! # Panics & limits
//! A panic in the library is a bug; cxx would abort the process on one, so every body runs
//! under `catch_unwind`: fallible functions then throw `ErrorCode::Panic`, infallible ones
//! return a neutral value (`0`, `false`, `ErrorCode::Panic`). Grammars compile with
//! `Limits::default()` and JSON Schemas with `JsonOptions::default()`.
//!
//! # Crate features
//! None. The build (`build.rs`) compiles the generated bridge and the C++ example with
//! `cxx_build` (C++17); the crate is also a `staticlib` for C++ builds that link it directly.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use sieve_core::grammar::cache::CompileCache;
use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
use sieve_core::{GrammarErrorKind, Limits, MatcherError, StopError, Vocabulary};

pub use batch::{compute_masks, num_threads, set_num_threads, shutdown_threads};
pub use ffi::ErrorCode;

mod batch;
mod draft_tree;

/// The bridge. Items are documented on the C++ side by the crate docs; the Rust functions
/// they bind are documented below.
#[allow(missing_docs)]
#[cxx::bridge(namespace = "sieve")]
pub mod ffi {
    /// Error codes, numbered exactly like the C API's `sieve_status` (stable forever).
    #[repr(u32)]
    #[derive(Debug)]
    enum ErrorCode {
        Ok = 0,
        NullArgument = 1,
        InvalidUtf8 = 2,
        InvalidArgument = 3,
        InsufficientSize = 4,
        GrammarError = 5,
        TokenRejected = 6,
        TokenOutOfRange = 7,
        LimitExceeded = 8,
        Stopped = 9,
        MatcherError = 10,
        Panic = 11,
        TokenizerError = 12,
        RollbackTooFar = 13,
        CallbackError = 14,
    }

    /// What `StopController::commit_token` returns: the text now safe to show (bytes,
    /// possibly empty) and whether the sequence has stopped.
    struct StopCommit {
        text: Vec<u8>,
        stopped: bool,
    }

    /// What `Matcher::shortest_completion` returns: whether a completion exists, and its
    /// bytes.
    struct Completion {
        found: bool,
        bytes: Vec<u8>,
    }

    /// What `Tokenizer::compile_cache_stats` returns: the counters of the tokenizer's
    /// compile cache.
    struct CompileCacheStats {
        hits: u64,
        misses: u64,
        evictions: u64,
        entries: usize,
        bytes: usize,
        max_bytes: usize,
    }

    /// What `Matcher::completion_tokens` returns: whether a completion exists (and can be
    /// spelled by the vocabulary), and its greedy token count.
    struct TokenCount {
        found: bool,
        tokens: usize,
    }

    extern "Rust" {
        type Tokenizer;
        type Grammar;
        type Matcher;
        type StopController;
        type Gate;

        fn version() -> &'static str;
        fn error_code_name(code: ErrorCode) -> &'static str;
        fn error_code_of(what: &str) -> ErrorCode;

        fn tokenizer_from_json(text: &str) -> Result<Box<Tokenizer>>;
        fn tokenizer_from_byte_table(
            bytes: &[u8],
            lens: &[u32],
            special: &[u32],
            eos: &[u32],
        ) -> Result<Box<Tokenizer>>;
        fn vocab_size(self: &Tokenizer) -> usize;
        fn mask_words(self: &Tokenizer) -> usize;
        fn eos_tokens(self: &Tokenizer) -> Vec<u32>;
        fn token_text(self: &Tokenizer, id: u32) -> Result<Vec<u8>>;
        fn set_compile_cache(self: &Tokenizer, max_bytes: usize);
        fn compile_cache_stats(self: &Tokenizer) -> CompileCacheStats;

        fn grammar_new(tokenizer: &Tokenizer, syntax: &str, text: &str) -> Result<Box<Grammar>>;
        fn grammar_from_lark(tokenizer: &Tokenizer, text: &str) -> Result<Box<Grammar>>;
        fn grammar_from_gbnf(
            tokenizer: &Tokenizer,
            text: &str,
            root: &str,
            allow_left_recursion: bool,
        ) -> Result<Box<Grammar>>;
        fn grammar_from_regex(tokenizer: &Tokenizer, pattern: &str) -> Result<Box<Grammar>>;
        fn grammar_from_json_schema(tokenizer: &Tokenizer, schema: &str) -> Result<Box<Grammar>>;
        fn grammar_from_structural_tag(tokenizer: &Tokenizer, tag: &str) -> Result<Box<Grammar>>;
        fn structural_tag_preset(
            family: &str,
            tools: &str,
            tool_choice: &str,
            parallel_tool_calls: bool,
            reasoning: bool,
        ) -> Result<String>;

        fn matcher_new(grammar: &Grammar) -> Result<Box<Matcher>>;
        fn mask_words(self: &Matcher) -> usize;
        fn compute_mask(self: &mut Matcher, mask: &mut [u32]) -> Result<()>;
        fn consume_token(self: &mut Matcher, token: u32) -> Result<()>;
        fn rollback(self: &mut Matcher, n: usize) -> Result<()>;
        fn fill_draft_tree(
            self: &mut Matcher,
            tokens: &[u32],
            parents: &[i32],
            masks: &mut [u32],
            mask_words: usize,
        ) -> Result<usize>;
        fn is_accepting(self: &mut Matcher) -> Result<bool>;
        fn is_stopped(self: &Matcher) -> bool;
        fn reset(self: &mut Matcher) -> Result<()>;
        fn error_code(self: &Matcher) -> ErrorCode;
        fn compute_mask_within(
            self: &mut Matcher,
            remaining: usize,
            mask: &mut [u32],
        ) -> Result<()>;
        fn shortest_completion(self: &mut Matcher) -> Result<Completion>;
        fn completion_tokens(self: &mut Matcher) -> Result<TokenCount>;

        fn stop_controller_new(
            tokenizer: &Tokenizer,
            stop_tokens: &[u32],
            stop_regex: &str,
        ) -> Result<Box<StopController>>;
        fn stop_controller_with_strings(
            tokenizer: &Tokenizer,
            stop_tokens: &[u32],
            stop_strings: &Vec<String>,
            stop_regex: &str,
        ) -> Result<Box<StopController>>;

        #[allow(clippy::too_many_arguments)]
        fn gate_new(
            tokenizer: &Tokenizer,
            reasoning: bool,
            reasoning_end_tokens: &[u32],
            reasoning_budget: i64,
            lazy: bool,
            trigger_strings: &Vec<String>,
            trigger_tokens: &[u32],
            trigger_patterns: &Vec<String>,
        ) -> Result<Box<Gate>>;
        fn matcher_new_gated(grammar: &Grammar, gate: &Gate) -> Result<Box<Matcher>>;
        fn is_unconstrained(self: &Matcher) -> bool;
        fn commit_token(self: &mut StopController, token: u32) -> Result<StopCommit>;
        fn is_stopped(self: &StopController) -> bool;
        #[cxx_name = "clone"]
        fn clone_box(self: &StopController) -> Box<StopController>;

        fn kernel_name() -> &'static str;
        fn apply_mask_f32(logits: &mut [f32], mask: &[u32]);
        fn apply_mask_f16(logits: &mut [u16], mask: &[u32]);
        fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]);
        fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]);
        fn apply_mask_f32_batch(
            logits: &mut [f32],
            row_len: usize,
            masks: &[u32],
            mask_words: usize,
        );

        fn compute_masks(
            matchers: &mut [Box<Matcher>],
            masks: &mut [u32],
            mask_words: usize,
            statuses: &mut [ErrorCode],
        ) -> Result<()>;
        fn set_num_threads(n: usize) -> Result<()>;
        fn num_threads() -> usize;
        fn shutdown_threads() -> Result<()>;
    }
}

impl ErrorCode {
    /// The code's name, as used in exception messages (`"GrammarError"`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Ok => "Ok",
            ErrorCode::NullArgument => "NullArgument",
            ErrorCode::InvalidUtf8 => "InvalidUtf8",
            ErrorCode::InvalidArgument => "InvalidArgument",
            ErrorCode::InsufficientSize => "InsufficientSize",
            ErrorCode::GrammarError => "GrammarError",
            ErrorCode::TokenRejected => "TokenRejected",
            ErrorCode::TokenOutOfRange => "TokenOutOfRange",
            ErrorCode::LimitExceeded => "LimitExceeded",
            ErrorCode::Stopped => "Stopped",
            ErrorCode::MatcherError => "MatcherError",
            ErrorCode::Panic => "Panic",
            ErrorCode::TokenizerError => "TokenizerError",
            ErrorCode::RollbackTooFar => "RollbackTooFar",
            ErrorCode::CallbackError => "CallbackError",
            _ => "Unknown",
        }
    }

    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 15] = [
        ErrorCode::Ok,
        ErrorCode::NullArgument,
        ErrorCode::InvalidUtf8,
        ErrorCode::InvalidArgument,
        ErrorCode::InsufficientSize,
        ErrorCode::GrammarError,
        ErrorCode::TokenRejected,
        ErrorCode::TokenOutOfRange,
        ErrorCode::LimitExceeded,
        ErrorCode::Stopped,
        ErrorCode::MatcherError,
        ErrorCode::Panic,
        ErrorCode::TokenizerError,
        ErrorCode::RollbackTooFar,
        ErrorCode::CallbackError,
    ];

    fn from_matcher(e: &MatcherError) -> ErrorCode {
        match e {
            MatcherError::TokenOutOfRange { .. } => ErrorCode::TokenOutOfRange,
            MatcherError::TokenRejected { .. } => ErrorCode::TokenRejected,
            MatcherError::MaskTooSmall { .. } => ErrorCode::InsufficientSize,
            MatcherError::RollbackTooFar { .. } => ErrorCode::RollbackTooFar,
            MatcherError::Stopped => ErrorCode::Stopped,
            MatcherError::Limit(_) => ErrorCode::LimitExceeded,
            _ => ErrorCode::MatcherError,
        }
    }
}

/// The error behind every `rust::Error` thrown to C++: a code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure (numbered like `sieve_status`).
    pub code: ErrorCode,
    /// Human-readable detail.
    pub message: String,
}

impl Error {
    fn new(code: ErrorCode, message: impl fmt::Display) -> Error {
        Error {
            code,
            message: message.to_string(),
        }
    }

    fn matcher(e: &MatcherError) -> Error {
        Error::new(ErrorCode::from_matcher(e), e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for Error {}

/// Runs `f`, turning a panic into an [`ErrorCode::Panic`] error (cxx aborts on unwinding).
fn guard<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(Error::new(
            ErrorCode::Panic,
            format_args!("sieve panicked (a bug): {msg}"),
        ))
    })
}

/// Runs an infallible `f`, returning `fallback` if it panics.
fn guard_or<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// The library name and version, e.g. `"sieve 0.1.0"`.
pub fn version() -> &'static str {
    concat!("sieve ", env!("CARGO_PKG_VERSION"))
}

/// The name of `code` (`"GrammarError"`); `"Unknown"` for a number outside the table.
pub fn error_code_name(code: ErrorCode) -> &'static str {
    code.name()
}

/// The code of an exception message thrown by this API (`e.what()`); `ErrorCode::Ok` when
/// `what` does not start with a known code name.
pub fn error_code_of(what: &str) -> ErrorCode {
    guard_or(ErrorCode::Ok, || {
        let Some((name, _)) = what.split_once(": ") else {
            return ErrorCode::Ok;
        };
        ErrorCode::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .unwrap_or(ErrorCode::Ok)
    })
}

/// A vocabulary, shared by the grammars compiled for it, and their compile cache (shared by
/// the tokenizer's clones). Thread-safe.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    vocab: Arc<Vocabulary>,
    cache: Arc<CompileCache>,
}

impl Tokenizer {
    /// The number of token ids (mask bit count).
    pub fn vocab_size(&self) -> usize {
        guard_or(0, || self.vocab.vocab_size())
    }

    /// The number of `u32` words a mask needs.
    pub fn mask_words(&self) -> usize {
        guard_or(0, || self.vocab.mask_words())
    }

    /// The end-of-sequence ids, in preference order.
    pub fn eos_tokens(&self) -> Vec<u32> {
        guard_or(Vec::new(), || self.vocab.eos_tokens().to_vec())
    }

    /// The token's text: plain bytes, or a special token's name.
    ///
    /// # Errors
    /// [`ErrorCode::TokenOutOfRange`] when `id` is not below the vocabulary size.
    pub fn token_text(&self, id: u32) -> Result<Vec<u8>, Error> {
        guard(|| {
            if id as usize >= self.vocab.vocab_size() {
                return Err(Error::new(
                    ErrorCode::TokenOutOfRange,
                    format_args!(
                        "token {id} is not below the vocabulary size {}",
                        self.vocab.vocab_size()
                    ),
                ));
            }
            Ok(self.vocab.token_text(id).to_vec())
        })
    }

    /// Turns the compile cache on with a bound of `max_bytes` (0: off, the default; drops
    /// what it holds). While on, compiling the same syntax, text and options again returns
    /// the grammar compiled the first time (or the same error); see C's
    /// `sieve_tokenizer_set_compile_cache`.
    pub fn set_compile_cache(&self, max_bytes: usize) {
        guard_or((), || self.cache.set_max_bytes(max_bytes));
    }

    /// The compile cache's counters.
    pub fn compile_cache_stats(&self) -> ffi::CompileCacheStats {
        let s = guard_or(Default::default(), || self.cache.stats());
        ffi::CompileCacheStats {
            hits: s.hits,
            misses: s.misses,
            evictions: s.evictions,
            entries: s.entries,
            bytes: s.bytes,
            max_bytes: s.max_bytes,
        }
    }

    fn wrap(vocab: Vocabulary) -> Box<Tokenizer> {
        Box::new(Tokenizer {
            vocab: Arc::new(vocab),
            cache: Arc::new(CompileCache::new(0)),
        })
    }
}

/// Builds a tokenizer from the text of a Hugging Face `tokenizer.json`.
///
/// # Errors
/// [`ErrorCode::TokenizerError`] when the text is not a supported tokenizer.
pub fn tokenizer_from_json(text: &str) -> Result<Box<Tokenizer>, Error> {
    guard(|| {
        let vocab = Vocabulary::from_tokenizer_json(text)
            .map_err(|e| Error::new(ErrorCode::TokenizerError, e))?;
        Ok(Tokenizer::wrap(vocab))
    })
}

/// Builds a tokenizer from a byte table: token `i` is the next `lens[i]` bytes of `bytes`.
/// `special` lists the ids of special tokens (their bytes are the name, e.g. `<|eos|>`) and
/// `eos` the end-of-sequence ids.
///
/// # Errors
/// [`ErrorCode::InvalidArgument`] when the lengths do not add up to `bytes.len()`,
/// [`ErrorCode::TokenizerError`] when the vocabulary is rejected (ids out of range, ...).
pub fn tokenizer_from_byte_table(
    bytes: &[u8],
    lens: &[u32],
    special: &[u32],
    eos: &[u32],
) -> Result<Box<Tokenizer>, Error> {
    guard(|| {
        let total = lens
            .iter()
            .try_fold(0usize, |acc, &l| acc.checked_add(l as usize));
        if total != Some(bytes.len()) {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format_args!("token lengths do not add up to {} bytes", bytes.len()),
            ));
        }
        let mut rest = bytes;
        let tokens = lens
            .iter()
            .map(|&l| {
                let (tok, tail) = rest.split_at(l as usize);
                rest = tail;
                tok.to_vec()
            })
            .collect();
        let vocab = Vocabulary::new(tokens, special, eos)
            .map_err(|e| Error::new(ErrorCode::TokenizerError, e))?;
        Ok(Tokenizer::wrap(vocab))
    })
}

/// A compiled grammar. Thread-safe; matchers made from it are independent of it.
#[derive(Debug, Clone)]
pub struct Grammar {
    grammar: sieve_core::Grammar,
}

fn grammar_error(e: &sieve_core::GrammarError) -> Error {
    let code = match e.kind {
        GrammarErrorKind::Limit(_) => ErrorCode::LimitExceeded,
        _ => ErrorCode::GrammarError,
    };
    Error::new(code, e)
}

/// Compiles `text` in `syntax` with `opts` for `tokenizer` (every `grammar_*` goes here).
fn compile(
    tokenizer: &Tokenizer,
    syntax: GrammarSyntax,
    text: &str,
    opts: &CompileOptions,
) -> Result<Box<Grammar>, Error> {
    guard(|| {
        let (grammar, _report) =
            (tokenizer
                .cache
                .compile(syntax, text, opts, &tokenizer.vocab, &Limits::default()))
            .map_err(|e| grammar_error(&e))?;
        Ok(Box::new(Grammar { grammar }))
    })
}

/// Compiles `text` written in the syntax named `syntax` (`lark`, `gbnf`, `json_schema`,
/// `regex`, `structural_tag`, `llguidance`, or an alias such as `json`, `ebnf`; see
/// `GrammarSyntax::from_name`) with the default options for `tokenizer`.
///
/// # Errors
/// [`ErrorCode::InvalidArgument`] for an unknown syntax name; otherwise as
/// [`grammar_from_lark`].
pub fn grammar_new(tokenizer: &Tokenizer, syntax: &str, text: &str) -> Result<Box<Grammar>, Error> {
    let Some(syntax) = GrammarSyntax::from_name(syntax) else {
        let names: Vec<_> = GrammarSyntax::ALL.iter().map(|s| s.name()).collect();
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            format!(
                "unknown grammar syntax {syntax:?} (one of {})",
                names.join(", ")
            ),
        ));
    };
    compile(tokenizer, syntax, text, &CompileOptions::default())
}

/// Compiles a Lark grammar for `tokenizer`.
///
/// # Errors
/// [`ErrorCode::GrammarError`] (message with line and column) or
/// [`ErrorCode::LimitExceeded`].
pub fn grammar_from_lark(tokenizer: &Tokenizer, text: &str) -> Result<Box<Grammar>, Error> {
    compile(
        tokenizer,
        GrammarSyntax::Lark,
        text,
        &CompileOptions::default(),
    )
}

/// Compiles a GBNF grammar (llama.cpp's format) for `tokenizer`, starting at rule `root`
/// (empty: `root`); `allow_left_recursion` accepts left-recursive rules, which llama.cpp
/// refuses.
///
/// # Errors
/// As [`grammar_from_lark`].
pub fn grammar_from_gbnf(
    tokenizer: &Tokenizer,
    text: &str,
    root: &str,
    allow_left_recursion: bool,
) -> Result<Box<Grammar>, Error> {
    let mut gbnf = GbnfOptions {
        allow_left_recursion,
        ..GbnfOptions::default()
    };
    if !root.is_empty() {
        gbnf.root = root.to_owned();
    }
    let opts = CompileOptions {
        gbnf,
        ..CompileOptions::default()
    };
    compile(tokenizer, GrammarSyntax::Gbnf, text, &opts)
}

/// Compiles a regex (the whole output must match it) for `tokenizer`.
///
/// # Errors
/// As [`grammar_from_lark`].
pub fn grammar_from_regex(tokenizer: &Tokenizer, pattern: &str) -> Result<Box<Grammar>, Error> {
    compile(
        tokenizer,
        GrammarSyntax::Regex,
        pattern,
        &CompileOptions::default(),
    )
}

/// Compiles a JSON Schema (text) for `tokenizer` with the default JSON options.
///
/// # Errors
/// As [`grammar_from_lark`].
pub fn grammar_from_json_schema(
    tokenizer: &Tokenizer,
    schema: &str,
) -> Result<Box<Grammar>, Error> {
    compile(
        tokenizer,
        GrammarSyntax::JsonSchema,
        schema,
        &CompileOptions::default(),
    )
}

/// Compiles a structural tag (XGrammar's JSON format for tool calls and reasoning; see
/// `core/docs/structural.md`) for `tokenizer`, its JSON Schemas with the default options.
///
/// # Errors
/// As [`grammar_from_lark`]; the message names the format's JSON pointer.
pub fn grammar_from_structural_tag(
    tokenizer: &Tokenizer,
    tag: &str,
) -> Result<Box<Grammar>, Error> {
    compile(
        tokenizer,
        GrammarSyntax::StructuralTag,
        tag,
        &CompileOptions::default(),
    )
}

/// The structural tag (JSON text) for model family `family` and the OpenAI-style tool list
/// `tools` (JSON); `tool_choice` is `auto` (or empty), `required`, `none` or a tool name.
///
/// # Errors
/// [`ErrorCode::GrammarError`]: unknown family, malformed tools.
pub fn structural_tag_preset(
    family: &str,
    tools: &str,
    tool_choice: &str,
    parallel_tool_calls: bool,
    reasoning: bool,
) -> Result<String, Error> {
    use sieve_core::grammar::structural::presets;
    guard(|| {
        let tools =
            sieve_core::grammar::json::parse_schema(tools).map_err(|e| grammar_error(&e))?;
        let opts = presets::PresetOptions {
            tool_choice: (!tool_choice.is_empty()).then(|| tool_choice.to_owned()),
            parallel_tool_calls,
            reasoning,
        };
        let tag = presets::preset(family, &tools, &opts).map_err(|e| grammar_error(&e))?;
        Ok(tag.to_string())
    })
}

/// Per-sequence constraint state; `Send`, used from one thread at a time.
#[derive(Debug, Clone)]
pub struct Matcher {
    matcher: sieve_core::Matcher,
}

/// A matcher at the start of `grammar`.
///
/// # Errors
/// Only [`ErrorCode::Panic`].
pub fn matcher_new(grammar: &Grammar) -> Result<Box<Matcher>, Error> {
    guard(|| {
        Ok(Box::new(Matcher {
            matcher: sieve_core::Matcher::new(&grammar.grammar),
        }))
    })
}

impl Matcher {
    /// Whether every token is allowed now (a gated matcher before its grammar applies): the
    /// host may skip computing and applying the mask. O(1).
    pub fn is_unconstrained(&self) -> bool {
        guard_or(false, || self.matcher.is_unconstrained())
    }

    /// The number of `u32` words a mask needs.
    pub fn mask_words(&self) -> usize {
        guard_or(0, || self.matcher.mask_words())
    }

    /// Writes the allowed-token mask (bit `i` of word `i / 32` = token `i`).
    ///
    /// # Errors
    /// [`ErrorCode::InsufficientSize`] for a short buffer, or the sticky matcher error.
    pub fn compute_mask(&mut self, mask: &mut [u32]) -> Result<(), Error> {
        guard(|| {
            self.matcher
                .compute_mask(mask)
                .map_err(|e| Error::matcher(&e))
        })
    }

    /// Commits `token`.
    ///
    /// # Errors
    /// [`ErrorCode::TokenRejected`], [`ErrorCode::TokenOutOfRange`], [`ErrorCode::Stopped`],
    /// ... (sticky until [`Matcher::reset`]).
    pub fn consume_token(&mut self, token: u32) -> Result<(), Error> {
        guard(|| {
            self.matcher
                .consume_token(token)
                .map_err(|e| Error::matcher(&e))
        })
    }

    /// Undoes the last `n` consumed tokens.
    ///
    /// # Errors
    /// [`ErrorCode::RollbackTooFar`] (not sticky), or the sticky matcher error.
    pub fn rollback(&mut self, n: usize) -> Result<(), Error> {
        guard(|| self.matcher.rollback(n).map_err(|e| Error::matcher(&e)))
    }

    /// Whether the text so far is a complete match.
    ///
    /// # Errors
    /// Only [`ErrorCode::Panic`].
    pub fn is_accepting(&mut self) -> Result<bool, Error> {
        guard(|| Ok(self.matcher.is_accepting()))
    }

    /// Whether an EOS token was consumed.
    pub fn is_stopped(&self) -> bool {
        guard_or(false, || self.matcher.is_stopped())
    }

    /// Back to the start of the grammar, clearing any error.
    ///
    /// # Errors
    /// Only [`ErrorCode::Panic`].
    pub fn reset(&mut self) -> Result<(), Error> {
        guard(|| {
            self.matcher.reset();
            Ok(())
        })
    }

    /// Budget mode: the mask of [`Matcher::compute_mask`] narrowed to the tokens after which
    /// a completion within `remaining - 1` more tokens is known (see
    /// [`sieve_core::Matcher::compute_mask_within`] for the guarantee).
    ///
    /// # Errors
    /// As [`Matcher::compute_mask`]; [`ErrorCode::LimitExceeded`] from the completion
    /// searches is not sticky.
    pub fn compute_mask_within(&mut self, remaining: usize, mask: &mut [u32]) -> Result<(), Error> {
        guard(|| {
            self.matcher
                .compute_mask_within(mask, remaining)
                .map_err(|e| Error::matcher(&e))
        })
    }

    /// The shortest bytes that leave the matcher accepting (`found` false when none exist).
    ///
    /// # Errors
    /// [`ErrorCode::LimitExceeded`] (not sticky), or the sticky matcher error.
    pub fn shortest_completion(&mut self) -> Result<ffi::Completion, Error> {
        guard(|| {
            let s = self
                .matcher
                .shortest_completion()
                .map_err(|e| Error::matcher(&e))?;
            Ok(ffi::Completion {
                found: s.is_some(),
                bytes: s.unwrap_or_default(),
            })
        })
    }

    /// How many tokens the output is from complete (see
    /// [`sieve_core::Matcher::completion_tokens`]).
    ///
    /// # Errors
    /// As [`Matcher::shortest_completion`].
    pub fn completion_tokens(&mut self) -> Result<ffi::TokenCount, Error> {
        guard(|| {
            let n = self
                .matcher
                .completion_tokens()
                .map_err(|e| Error::matcher(&e))?;
            Ok(ffi::TokenCount {
                found: n.is_some(),
                tokens: n.unwrap_or(0),
            })
        })
    }

    /// The sticky error's code, `ErrorCode::Ok` when there is none.
    pub fn error_code(&self) -> ErrorCode {
        guard_or(ErrorCode::Panic, || {
            self.matcher
                .error()
                .map_or(ErrorCode::Ok, ErrorCode::from_matcher)
        })
    }
}

/// Per-sequence stop detection (stop tokens and a stop regex); `Send`, used from one thread
/// at a time.
#[derive(Debug, Clone)]
pub struct StopController {
    inner: sieve_core::StopController,
}

fn stop_error(e: &StopError) -> Error {
    match e {
        StopError::TokenOutOfRange { .. } => Error::new(ErrorCode::TokenOutOfRange, e),
        StopError::Regex(g) => Error::new(grammar_error(g).code, e),
        _ => Error::new(ErrorCode::GrammarError, e),
    }
}

/// A stop controller for `tokenizer`: the sequence stops when one of `stop_tokens` is
/// committed or when the text ends with a match of the regex `stop_regex` (`""`: no regex).
/// The regex compiles with `Limits::default()`.
///
/// # Errors
/// [`ErrorCode::TokenOutOfRange`] for a stop token not below the vocabulary size;
/// [`ErrorCode::GrammarError`] when the regex does not compile or matches the empty string;
/// [`ErrorCode::LimitExceeded`] when compiling it exceeds a budget.
pub fn stop_controller_new(
    tokenizer: &Tokenizer,
    stop_tokens: &[u32],
    stop_regex: &str,
) -> Result<Box<StopController>, Error> {
    guard(|| {
        let regex = Some(stop_regex).filter(|r| !r.is_empty());
        let inner = sieve_core::StopController::new(
            Arc::clone(&tokenizer.vocab),
            stop_tokens,
            regex,
            &Limits::default(),
        )
        .map_err(|e| stop_error(&e))?;
        Ok(Box::new(StopController { inner }))
    })
}

/// A stop controller that also stops at any of `stop_strings` (literal text).
///
/// # Errors
/// As [`stop_controller_new`].
#[allow(clippy::ptr_arg)] // cxx passes `rust::Vec<rust::String>` as `&Vec<String>`
pub fn stop_controller_with_strings(
    tokenizer: &Tokenizer,
    stop_tokens: &[u32],
    stop_strings: &Vec<String>,
    stop_regex: &str,
) -> Result<Box<StopController>, Error> {
    guard(|| {
        let regex = Some(stop_regex).filter(|r| !r.is_empty());
        let strings: Vec<&[u8]> = stop_strings.iter().map(String::as_bytes).collect();
        let inner = sieve_core::StopController::with_strings(
            Arc::clone(&tokenizer.vocab),
            stop_tokens,
            &strings,
            regex,
            &Limits::default(),
        )
        .map_err(|e| stop_error(&e))?;
        Ok(Box::new(StopController { inner }))
    })
}

/// What comes before a grammar: a reasoning phase and triggers (see `core/docs/gate.md`).
/// Immutable; matchers made with it are independent of it.
#[derive(Debug, Clone)]
pub struct Gate {
    gate: sieve_core::Gate,
}

/// Builds a gate for `tokenizer`: with `reasoning`, a reasoning phase until one of
/// `reasoning_end_tokens` (at most `reasoning_budget` tokens; negative: no budget); with
/// `lazy`, the grammar waits for one of the triggers.
///
/// # Errors
/// [`ErrorCode::GrammarError`] (a bad pattern, an empty trigger, ...) or
/// [`ErrorCode::LimitExceeded`].
#[allow(clippy::too_many_arguments, clippy::ptr_arg)]
pub fn gate_new(
    tokenizer: &Tokenizer,
    reasoning: bool,
    reasoning_end_tokens: &[u32],
    reasoning_budget: i64,
    lazy: bool,
    trigger_strings: &Vec<String>,
    trigger_tokens: &[u32],
    trigger_patterns: &Vec<String>,
) -> Result<Box<Gate>, Error> {
    use sieve_core::gate::{GateConfig, Reasoning, Triggers};
    guard(|| {
        let config = GateConfig {
            reasoning: reasoning.then(|| Reasoning {
                end_tokens: reasoning_end_tokens.to_vec(),
                budget: u32::try_from(reasoning_budget).ok(),
            }),
            triggers: lazy.then(|| Triggers {
                strings: trigger_strings
                    .iter()
                    .map(|s| s.as_bytes().to_vec())
                    .collect(),
                tokens: trigger_tokens.to_vec(),
                patterns: trigger_patterns.clone(),
            }),
        };
        let gate = sieve_core::Gate::new(&config, &tokenizer.vocab, &Limits::default())
            .map_err(|e| grammar_error(&e))?;
        Ok(Box::new(Gate { gate }))
    })
}

/// A matcher at the start of `grammar` behind `gate` (both for the same tokenizer).
///
/// # Errors
/// [`ErrorCode::InvalidArgument`] when the gate and the grammar were made for different
/// tokenizers.
pub fn matcher_new_gated(grammar: &Grammar, gate: &Gate) -> Result<Box<Matcher>, Error> {
    guard(|| {
        if !Arc::ptr_eq(grammar.grammar.vocab(), gate.gate.vocab()) {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                "the gate and the grammar belong to different tokenizers",
            ));
        }
        Ok(Box::new(Matcher {
            matcher: sieve_core::Matcher::with_gate(&grammar.grammar, &gate.gate),
        }))
    })
}

impl StopController {
    /// Commits `token`: the bytes now safe to show (text that may begin a stop match is held
    /// back; a stop match is never shown) and whether the sequence has stopped. After a
    /// stop, every commit returns no text. Any id is accepted (see
    /// [`sieve_core::StopController::commit_token`]).
    ///
    /// # Errors
    /// Only [`ErrorCode::Panic`].
    pub fn commit_token(&mut self, token: u32) -> Result<ffi::StopCommit, Error> {
        guard(|| {
            let (text, stopped) = self.inner.commit_token(token);
            Ok(ffi::StopCommit {
                text: text.to_vec(),
                stopped,
            })
        })
    }

    /// Whether a stop token or a stop-regex match was committed.
    pub fn is_stopped(&self) -> bool {
        guard_or(false, || self.inner.is_stopped())
    }

    /// An independent copy (held-back text, regex state, stop flag); `clone()` in C++.
    pub fn clone_box(&self) -> Box<StopController> {
        Box::new(self.clone())
    }
}

/// The kernel level the mask functions use on this CPU: `"avx2"`, `"neon"` or `"scalar"`.
pub fn kernel_name() -> &'static str {
    guard_or("scalar", || sieve_kernels::Kernel::selected().name())
}

/// Sets `logits[i]` to `-inf` unless bit `i` of `mask` is set; logits past `32 * mask.len()`
/// become `-inf` too ([`sieve_kernels::apply_mask_f32`]).
pub fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    guard_or((), || sieve_kernels::apply_mask_f32(logits, mask));
}

/// [`apply_mask_f32`] on IEEE binary16 bit patterns (`-inf` = `0xFC00`).
pub fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    guard_or((), || sieve_kernels::apply_mask_f16(logits, mask));
}

/// [`apply_mask_f32`] on bfloat16 bit patterns (`-inf` = `0xFF80`).
pub fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    guard_or((), || sieve_kernels::apply_mask_bf16(logits, mask));
}

/// Sparse masking: `logits[i]` is the logit of token `candidate_ids[i]` and becomes `-inf`
/// unless that token's bit is set; logits without a candidate id become `-inf`
/// ([`sieve_kernels::apply_mask_sparse_f32`]).
pub fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    guard_or((), || {
        sieve_kernels::apply_mask_sparse_f32(logits, candidate_ids, mask);
    });
}

/// [`apply_mask_f32`] per row of a batch: row `i` is `logits[i * row_len..][..row_len]`, its
/// mask `masks[i * mask_words..][..mask_words]` ([`sieve_kernels::apply_mask_f32_batch`]).
pub fn apply_mask_f32_batch(logits: &mut [f32], row_len: usize, masks: &[u32], mask_words: usize) {
    guard_or((), || {
        sieve_kernels::apply_mask_f32_batch(logits, row_len, masks, mask_words);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Box<Tokenizer> {
        let words: [&[u8]; 5] = [b"a", b"b", b"ab", b"<|eos|>", b"c"];
        let bytes: Vec<u8> = words.concat();
        let lens: Vec<u32> = words.iter().map(|w| w.len() as u32).collect();
        tokenizer_from_byte_table(&bytes, &lens, &[3], &[3]).expect("small tokenizer")
    }

    #[test]
    fn codes_match_sieve_status_numbers() {
        for (i, c) in ErrorCode::ALL.into_iter().enumerate() {
            assert_eq!(c.repr as usize, i);
            assert_eq!(error_code_of(&format!("{}: x", c.name())), c);
        }
        assert_eq!(error_code_of("nonsense"), ErrorCode::Ok);
    }

    #[test]
    fn mask_consume_and_errors() {
        let tok = small();
        assert_eq!(tok.vocab_size(), 5);
        let g = grammar_from_regex(&tok, "ab").expect("regex compiles");
        let mut m = matcher_new(&g).expect("matcher");
        let mut mask = vec![0u32; m.mask_words()];
        m.compute_mask(&mut mask).expect("mask");
        assert_eq!(mask[0], 0b101, "a and ab allowed");
        m.consume_token(2).expect("ab");
        assert!(m.is_accepting().expect("accepting"));
        let e = m.consume_token(4).expect_err("c is rejected");
        assert_eq!(e.code, ErrorCode::TokenRejected);
        assert_eq!(m.error_code(), ErrorCode::TokenRejected);
        m.reset().expect("reset");
        assert_eq!(m.error_code(), ErrorCode::Ok);
        let e = grammar_from_lark(&tok, "start: (").expect_err("bad lark");
        assert_eq!(e.code, ErrorCode::GrammarError);
        assert!(e.to_string().starts_with("GrammarError: "));
        let e = grammar_new(&tok, "cobol", "x").expect_err("unknown syntax");
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let g = grammar_new(&tok, "regex", "ab").expect("regex by name");
        assert_eq!(matcher_new(&g).expect("matcher").mask_words(), 1);
        let e = grammar_from_gbnf(&tok, "root ::= (", "", false).expect_err("bad gbnf");
        assert_eq!(e.code, ErrorCode::GrammarError);
        assert!(e.message.starts_with("1:"), "{e}");
        let g = grammar_new(&tok, "gbnf", "root ::= \"a\" [bc]").expect("gbnf by name");
        let mut m = matcher_new(&g).expect("matcher");
        m.consume_token(0).expect("a");
        m.consume_token(4).expect("c");
        assert!(m.is_accepting().expect("accepting"));
        let g = grammar_from_gbnf(&tok, "x ::= x \"a\" | \"b\"", "x", true).expect("options");
        let mut m = matcher_new(&g).expect("matcher");
        m.consume_token(1).expect("b");
        m.consume_token(0).expect("a");
        assert!(m.is_accepting().expect("accepting"));
        let e = tokenizer_from_byte_table(b"abc", &[1], &[], &[]).expect_err("bad table");
        assert_eq!(e.code, ErrorCode::InvalidArgument);
    }

    #[test]
    fn stop_controller_holds_back_and_stops() {
        let tok = small();
        let mut sc = stop_controller_new(&tok, &[3], "ab|cc").expect("stop controller");
        let c = sc.commit_token(0).expect("a");
        assert_eq!((c.text.as_slice(), c.stopped), (&b""[..], false));
        let mut branch = sc.clone_box();
        let c = sc.commit_token(4).expect("c");
        assert_eq!((c.text.as_slice(), c.stopped), (&b"a"[..], false));
        let c = sc.commit_token(4).expect("c");
        assert_eq!((c.text.as_slice(), c.stopped), (&b""[..], true));
        assert!(sc.is_stopped());
        let c = branch.commit_token(1).expect("b");
        assert_eq!((c.text.as_slice(), c.stopped), (&b""[..], true));
        let c = stop_controller_new(&tok, &[3], "")
            .expect("no regex")
            .commit_token(3)
            .expect("eos");
        assert!(c.stopped && c.text.is_empty());
        let e = stop_controller_new(&tok, &[], "a*").expect_err("empty match");
        assert_eq!(e.code, ErrorCode::GrammarError);
        assert!(e.message.contains("empty string"), "{e}");
        let e = stop_controller_new(&tok, &[7], "").expect_err("bad stop token");
        assert_eq!(e.code, ErrorCode::TokenOutOfRange);
        let e = stop_controller_new(&tok, &[], "(").expect_err("bad regex");
        assert_eq!(e.code, ErrorCode::GrammarError);
    }

    #[test]
    fn compute_masks_equals_one_by_one() {
        let tok = small();
        let g = grammar_from_regex(&tok, "(a|b)+c").expect("regex compiles");
        let make = || -> Vec<Box<Matcher>> {
            (0..7)
                .map(|i| {
                    let mut m = matcher_new(&g).expect("matcher");
                    for k in 0..i {
                        m.consume_token(k % 2).expect("a or b");
                    }
                    m
                })
                .collect()
        };
        let mut want = [0u32; 7];
        for (i, m) in make().iter_mut().enumerate() {
            m.compute_mask(&mut want[i..i + 1]).expect("mask");
        }
        for threads in [1, 3] {
            set_num_threads(threads).expect("threads");
            assert_eq!(num_threads(), threads);
            let mut ms = make();
            // One matcher in error: its row is zero, the others are unaffected.
            let e = ms[6]
                .consume_token(3)
                .expect_err("eos is rejected mid-word");
            let mut masks = vec![0xABAB_ABABu32; 7];
            let mut statuses = vec![ErrorCode::Panic; 7];
            compute_masks(&mut ms, &mut masks, 1, &mut statuses).expect("batch");
            assert_eq!(&masks[..6], &want[..6]);
            assert_eq!((masks[6], statuses[6]), (0, e.code));
            assert!(statuses[..6].iter().all(|&s| s == ErrorCode::Ok));
            let e = compute_masks(&mut ms, &mut masks[..6], 1, &mut statuses).expect_err("short");
            assert_eq!(e.code, ErrorCode::InsufficientSize);
        }
        assert_eq!(
            set_num_threads(0).expect_err("zero").code,
            ErrorCode::InvalidArgument
        );
        shutdown_threads().expect("shutdown");
    }
}
