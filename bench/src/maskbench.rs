//! `sieve maskbench`: MaskBench conformance and timing over JSON Schema files.
//!
//! Methodology (the same as `shared/tools/llgbench`, so the two compare one to one):
//! - **Sample**: the files of the given paths (`*.json` of directories, no dot files) sorted
//!   by the hex sha256 of their file name, the first N with `--limit` ([`list_files`]).
//! - **Compile** each schema ([`compile_schema`]): compile time covers the JSON Schema
//!   compiler and creating the first matcher. Time to first mask (TTFM) = compile + the
//!   first mask on a fresh matcher; that mask is not counted in the mask statistics.
//! - **Instances**: `data` serialized as Python's `json.dumps(data, ensure_ascii=False)`
//!   ([`crate::pyjson`]; with [`MaskbenchConfig::pretty`], `indent=2`: every instance
//!   pretty-printed, to check the default whitespace policy accepts it), tokenized without special tokens, fed to a fresh matcher: per
//!   token the mask (only that call is timed), then the token's bit is checked and the token
//!   consumed; at the end the matcher must accept ([`check_text`]). A valid instance passes
//!   if accepted; an invalid one if some token is rejected or the end is not accepting.
//! - An invalid instance the grammar accepts is traced ([`crate::trace`]): an independent
//!   validator names the schema locations where the instance fails, and the acceptance is
//!   **explained** (`invalid_accepted_explained`) only when every such location is at or under
//!   a superset entry of the coverage report; otherwise it is **unexplained**
//!   (`invalid_accepted_unexplained`), a bug. Both count as failures of the instance.
//! - **Guards**: a compile or mask error naming a [`Limits`] budget is a `limit` failure; a
//!   schema still running after the wall-clock timeout is abandoned (its masks dropped, as
//!   llgbench does) and reported as a `limit` failure too.
//!
//! Percentiles are nearest-rank ([`crate::stats::percentile_sorted`]), as in llgbench.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use sieve_core::{Grammar, GrammarError, GrammarErrorKind, Limits, Matcher, MatcherError};
use sieve_core::{LimitKind, MaskStats, Vocabulary};

use crate::stats::percentile_sorted;
use crate::tokenizer::LoadedTokenizer;
use crate::util::escape_bytes;

// ------------------------------------------------------------------------------------------
// File selection

/// The sample key of a file: the lowercase hex sha256 of its file name (not its path).
pub fn sample_key(path: &Path) -> String {
    let name = file_name(path);
    let digest = Sha256::digest(name.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// The files named by `paths` (a directory stands for its `*.json` files, dot files
/// skipped), sorted by [`sample_key`] (ties keep the listing order), the first `limit` of
/// them (`0` = all).
///
/// # Errors
/// A path that is neither a file nor a readable directory.
pub fn list_files(paths: &[PathBuf], limit: usize) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut here = Vec::new();
            let entries = fs::read_dir(p).with_context(|| format!("reading {}", p.display()))?;
            for entry in entries {
                let entry = entry.with_context(|| format!("reading {}", p.display()))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if !name.starts_with('.') && name.ends_with(".json") && entry.path().is_file() {
                    here.push(entry.path());
                }
            }
            here.sort();
            files.extend(here);
        } else if p.is_file() {
            files.push(p.clone());
        } else {
            bail!("no such file or directory: {}", p.display());
        }
    }
    let mut keyed: Vec<(String, PathBuf)> =
        files.into_iter().map(|f| (sample_key(&f), f)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut files: Vec<PathBuf> = keyed.into_iter().map(|(_, f)| f).collect();
    if limit > 0 {
        files.truncate(limit);
    }
    Ok(files)
}

/// The MaskBench sub-collection of a file name: the prefix before `---`, or the name
/// without its trailing `_N.json` (`BFCL_*`, `JME`).
pub fn collection(name: &str) -> &str {
    if let Some((prefix, _)) = name.split_once("---") {
        return prefix;
    }
    let stem = name.strip_suffix(".json").unwrap_or(name);
    match stem.rsplit_once('_') {
        Some((prefix, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => prefix,
        _ => stem,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ------------------------------------------------------------------------------------------
// Compiling a schema

/// The coverage report of one compiled schema, reduced to what the harnesses need: each
/// entry rendered as `at <pointer>/<keyword>: ...`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Keywords compiled as a superset of the schema (or ignored): invalid documents may
    /// be accepted.
    pub superset: Vec<String>,
    /// Keywords compiled as a subset: valid documents may be rejected.
    pub subset: Vec<String>,
    /// Keywords the compiler does not know (ignored, as validators do).
    pub unknown: Vec<String>,
    /// The keyword names of [`Self::superset`], deduplicated, sorted.
    pub superset_keywords: Vec<String>,
    /// The schema location of each [`Self::superset`] entry, `pointer/keyword`
    /// ([`crate::trace::entry_location`]), in the same order.
    pub superset_locations: Vec<String>,
}

impl Coverage {
    /// Does the grammar possibly accept documents the schema rejects?
    pub fn has_superset(&self) -> bool {
        !self.superset.is_empty()
    }
}

/// Compiles `schema` with the JSON Schema compiler (default options, or strict ones) for
/// `vocab`. This is the harnesses' only call into the compiler.
///
/// # Errors
/// The compiler's error (a limit error has kind [`GrammarErrorKind::Limit`]).
pub fn compile_schema(
    schema: &Value,
    strict: bool,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
) -> Result<(Grammar, Coverage), GrammarError> {
    json_compiler::compile(schema, strict, vocab, limits)
}

/// [`compile_schema`] with explicit options (`strict` etc. taken from `opts`).
///
/// # Errors
/// The schema does not compile.
pub fn compile_schema_with(
    schema: &Value,
    opts: &sieve_core::grammar::json::JsonOptions,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
) -> Result<(Grammar, Coverage), GrammarError> {
    json_compiler::compile_opts(schema, opts, vocab, limits)
}

/// The seam to `sieve_core::grammar::json`.
mod json_compiler {
    use sieve_core::grammar::json::{CoverageReport, CoverageStatus, JsonOptions};

    use super::*;

    pub(super) fn compile(
        schema: &Value,
        strict: bool,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<(Grammar, Coverage), GrammarError> {
        let opts = JsonOptions {
            strict,
            ..JsonOptions::default()
        };
        compile_opts(schema, &opts, vocab, limits)
    }

    pub(super) fn compile_opts(
        schema: &Value,
        opts: &JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<(Grammar, Coverage), GrammarError> {
        let (grammar, report) = Grammar::from_json_schema(schema, opts, vocab, limits)?;
        Ok((grammar, coverage(&report)))
    }

    fn coverage(report: &CoverageReport) -> Coverage {
        let mut cov = Coverage {
            superset: report.supersets().map(ToString::to_string).collect(),
            subset: report.subsets().map(ToString::to_string).collect(),
            ..Coverage::default()
        };
        cov.unknown = report
            .entries
            .iter()
            .filter(|e| e.status == CoverageStatus::Unknown)
            .map(ToString::to_string)
            .collect();
        let mut kws: Vec<String> = report.supersets().map(|e| e.keyword.clone()).collect();
        kws.sort();
        kws.dedup();
        cov.superset_keywords = kws;
        cov.superset_locations = report
            .supersets()
            .map(|e| crate::trace::entry_location(&e.pointer, &e.keyword))
            .collect();
        cov
    }
}

fn limit_of_grammar_error(e: &GrammarError) -> Option<LimitKind> {
    match e.kind {
        GrammarErrorKind::Limit(k) => Some(k),
        _ => None,
    }
}

// ------------------------------------------------------------------------------------------
// Feeding one instance

/// How instance text reaches the matcher.
#[derive(Debug, Clone)]
pub enum Feed<'a> {
    /// Tokenized (no special tokens); a mask is computed and checked before each token.
    Tokens(&'a LoadedTokenizer),
    /// Byte by byte with `Matcher::try_consume_bytes`, against a single-byte vocabulary.
    Bytes(Arc<Vocabulary>),
}

impl Feed<'_> {
    /// Byte-level feeding.
    pub fn bytes() -> Feed<'static> {
        Feed::Bytes(byte_vocab())
    }

    /// The vocabulary grammars are compiled for.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        match self {
            Feed::Tokens(tok) => &tok.vocab,
            Feed::Bytes(v) => v,
        }
    }

    /// `"tokens (NAME)"` or `"bytes"`.
    pub fn describe(&self) -> String {
        match self {
            Feed::Tokens(tok) => format!("tokens ({})", tok.name),
            Feed::Bytes(_) => "bytes".to_owned(),
        }
    }
}

/// The 256 single-byte tokens plus an EOS (`<|eos|>`, id 256).
pub fn byte_vocab() -> Arc<Vocabulary> {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    tokens.push(b"<|eos|>".to_vec());
    match Vocabulary::new(tokens, &[256], &[256]) {
        Ok(v) => Arc::new(v),
        Err(e) => unreachable!("the byte vocabulary is well formed: {e}"),
    }
}

/// What happened to one instance text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every unit was allowed and the end is accepting.
    Accepted,
    /// Unit `at` (token or byte index) of `len` was not allowed.
    Rejected {
        /// Index of the rejected token or byte.
        at: usize,
        /// Tokens or bytes in the text.
        len: usize,
        /// The rejected unit and a little preceding text, for humans.
        context: String,
    },
    /// Every unit was allowed, but the text is not a complete sentence.
    NotAccepting,
    /// The mask allowed token `at` but consuming it failed.
    Inconsistent {
        /// Index of the token.
        at: usize,
        /// Tokens in the text.
        len: usize,
    },
    /// A budget of [`Limits`] was exceeded.
    Limit(String),
    /// The wall-clock deadline passed.
    Timeout,
}

impl Verdict {
    /// Accepted as a complete sentence.
    pub fn accepted(&self) -> bool {
        *self == Verdict::Accepted
    }

    /// Rejected by the grammar (not by a limit or a timeout).
    pub fn rejected(&self) -> bool {
        matches!(
            self,
            Verdict::Rejected { .. } | Verdict::NotAccepting | Verdict::Inconsistent { .. }
        )
    }

    /// For humans.
    pub fn describe(&self, unit: &str) -> String {
        match self {
            Verdict::Accepted => "accepted".to_owned(),
            Verdict::Rejected { at, len, context } => {
                format!("{unit} {at}/{len} rejected by mask: {context}")
            }
            Verdict::NotAccepting => "not accepting at end".to_owned(),
            Verdict::Inconsistent { at, len } => {
                format!("{unit} {at}/{len} allowed by mask but consume failed")
            }
            Verdict::Limit(what) => what.clone(),
            Verdict::Timeout => "timeout".to_owned(),
        }
    }
}

/// The result of [`check_text`].
#[derive(Debug, Clone)]
pub struct Check {
    /// What happened.
    pub verdict: Verdict,
    /// `Matcher::bytes_used` at the end.
    pub matcher_bytes: usize,
    /// Tokens or bytes in the text.
    pub units: usize,
    /// How the matcher's masks were computed.
    pub stats: MaskStats,
}

/// Feeds `text` to a fresh matcher of `grammar`. With [`Feed::Tokens`] each mask
/// computation is timed alone and its time in µs pushed to `mask_us`; `mask` is a reusable
/// buffer. Stops at `deadline`.
///
/// # Errors
/// The tokenizer fails on `text`.
pub fn check_text(
    grammar: &Grammar,
    feed: &Feed<'_>,
    text: &str,
    mask: &mut Vec<u32>,
    mask_us: &mut Vec<f64>,
    deadline: Option<Instant>,
) -> Result<Check> {
    let mut m = Matcher::new(grammar);
    let (verdict, units) = match feed {
        Feed::Tokens(tok) => {
            let tokens = tok.try_encode(text)?;
            let v = feed_tokens(&mut m, tok, &tokens, mask, mask_us, deadline);
            (v, tokens.len())
        }
        Feed::Bytes(_) => (feed_bytes(&mut m, text.as_bytes()), text.len()),
    };
    Ok(Check {
        verdict,
        matcher_bytes: m.bytes_used(),
        units,
        stats: m.stats(),
    })
}

fn feed_tokens(
    m: &mut Matcher,
    tok: &LoadedTokenizer,
    tokens: &[u32],
    mask: &mut Vec<u32>,
    mask_us: &mut Vec<f64>,
    deadline: Option<Instant>,
) -> Verdict {
    mask.resize(m.mask_words(), 0);
    let len = tokens.len();
    for (k, &t) in tokens.iter().enumerate() {
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Verdict::Timeout;
        }
        let start = Instant::now();
        let res = m.compute_mask(mask);
        let dt = start.elapsed();
        mask_us.push(dt.as_nanos() as f64 / 1000.0);
        if let Err(e) = res {
            return matcher_failure(e, k, len);
        }
        let allowed = mask
            .get(t as usize / 32)
            .is_some_and(|w| w & (1 << (t % 32)) != 0);
        if !allowed {
            let context = token_context(tok, &tokens[..k], t);
            return Verdict::Rejected {
                at: k,
                len,
                context,
            };
        }
        if m.consume_token(t).is_err() {
            return Verdict::Inconsistent { at: k, len };
        }
    }
    if m.is_accepting() {
        Verdict::Accepted
    } else {
        Verdict::NotAccepting
    }
}

fn matcher_failure(e: MatcherError, at: usize, len: usize) -> Verdict {
    match e {
        MatcherError::Limit(k) => Verdict::Limit(format!("mask at token {at}/{len}: {k}")),
        other => Verdict::Limit(format!("mask at token {at}/{len}: {other}")),
    }
}

/// `…<up to 30 bytes before> [token]`, escaped.
fn token_context(tok: &LoadedTokenizer, before: &[u32], t: u32) -> String {
    let prefix = tok.decode_bytes(before);
    let tail = &prefix[prefix.len().saturating_sub(30)..];
    format!(
        "after {} token {} ({t})",
        escape_bytes(tail),
        escape_bytes(tok.token_bytes(t))
    )
}

fn feed_bytes(m: &mut Matcher, bytes: &[u8]) -> Verdict {
    let len = bytes.len();
    for (k, b) in bytes.iter().enumerate() {
        if !m.try_consume_bytes(std::slice::from_ref(b)) {
            if let Some(e) = m.error() {
                return matcher_failure(e.clone(), k, len);
            }
            let tail = &bytes[k.saturating_sub(30)..k];
            let context = format!(
                "after {} byte {}",
                escape_bytes(tail),
                escape_bytes(std::slice::from_ref(b))
            );
            return Verdict::Rejected {
                at: k,
                len,
                context,
            };
        }
    }
    if m.is_accepting() {
        Verdict::Accepted
    } else {
        Verdict::NotAccepting
    }
}

/// Serializes a JSON value as Python's `json.dumps(value, ensure_ascii=False)`.
pub fn python_dumps(value: &Value) -> String {
    crate::pyjson::dumps(value)
}

// ------------------------------------------------------------------------------------------
// Running files

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct MaskbenchConfig {
    /// Compile with `JsonOptions::strict` (every approximation is an error).
    pub strict: bool,
    /// Engine budgets.
    pub limits: Limits,
    /// Per-schema wall-clock guard (file load, compile and instances); `None` = no guard.
    /// Keep it `None` where outcomes must be deterministic (ratchets).
    pub timeout: Option<Duration>,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Serialize instances as `json.dumps(data, indent=2, ensure_ascii=False)` (pretty
    /// printed, [`crate::pyjson::dumps_indent`]) instead of `json.dumps`'s one line.
    pub pretty: bool,
}

impl Default for MaskbenchConfig {
    fn default() -> Self {
        MaskbenchConfig {
            strict: false,
            limits: Limits::default(),
            timeout: Some(Duration::from_secs(60)),
            progress: false,
            pretty: false,
        }
    }
}

/// The failure kinds of the `failures` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The schema does not compile.
    CompileError,
    /// A valid instance was rejected.
    ValidRejected,
    /// An invalid instance was accepted, and no superset entry explains it (a bug).
    InvalidAccepted,
    /// An invalid instance was accepted where a superset entry of the coverage report covers
    /// every location the validator fails it at ([`crate::trace`]).
    InvalidAcceptedExplained,
    /// A budget of [`Limits`] was exceeded, or the wall-clock guard fired.
    Limit,
    /// The file could not be read or is not MaskBench JSON.
    FileError,
}

impl FailureKind {
    /// The `kind` string of the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::CompileError => "compile_error",
            FailureKind::ValidRejected => "valid_rejected",
            FailureKind::InvalidAccepted => "invalid_accepted",
            FailureKind::InvalidAcceptedExplained => "invalid_accepted_explained",
            FailureKind::Limit => "limit",
            FailureKind::FileError => "file_error",
        }
    }
}

/// One entry of the `failures` list.
#[derive(Debug, Clone)]
pub struct Failure {
    /// File name.
    pub file: String,
    /// What failed.
    pub kind: FailureKind,
    /// For humans.
    pub detail: String,
}

/// How one test instance ended, for the ratchet and the failure list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestOutcome {
    /// Valid and accepted, or invalid and rejected.
    Pass,
    /// Valid and rejected, or invalid and accepted with no superset entry explaining it.
    Fail,
    /// Invalid and accepted, explained by a superset entry ([`crate::trace`]).
    FailExplained,
    /// A limit or the timeout ended it.
    Limit,
}

impl TestOutcome {
    /// One letter: `P`, `F`, `A` (explained) or `L`.
    pub fn letter(self) -> char {
        match self {
            TestOutcome::Pass => 'P',
            TestOutcome::Fail => 'F',
            TestOutcome::FailExplained => 'A',
            TestOutcome::Limit => 'L',
        }
    }
}

/// How a schema's compilation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompileOutcome {
    /// Compiled, and the first mask was computed.
    Compiled,
    /// The compiler returned an error.
    Error,
    /// Compile or first mask exceeded a budget.
    Limit,
    /// The wall-clock guard fired.
    Timeout,
    /// The file is unreadable.
    FileError,
}

impl CompileOutcome {
    /// One letter: `c`, `e`, `l`, `t` or `x`.
    pub fn letter(self) -> char {
        match self {
            CompileOutcome::Compiled => 'c',
            CompileOutcome::Error => 'e',
            CompileOutcome::Limit => 'l',
            CompileOutcome::Timeout => 't',
            CompileOutcome::FileError => 'x',
        }
    }
}

/// Everything measured on one file.
#[derive(Debug, Clone)]
pub struct FileResult {
    /// File name (the sample key's input).
    pub id: String,
    /// How compilation ended.
    pub compile: CompileOutcome,
    /// Compiler error text (when not compiled).
    pub compile_error: Option<String>,
    /// Coverage of the compiled grammar.
    pub coverage: Coverage,
    /// Compile time (µs).
    pub compile_us: Option<f64>,
    /// Compile + first mask (µs).
    pub ttfm_us: Option<f64>,
    /// Every timed mask, in order (µs); empty unless compiled and token-fed.
    pub mask_us: Vec<f64>,
    /// `Grammar::bytes_used` plus `Grammar::tables_bytes` (the lexer and state-mask tables
    /// the matchers share) after the last instance.
    pub grammar_bytes: usize,
    /// Largest `Matcher::bytes_used` at the end of an instance (or after the first mask).
    pub matcher_bytes: usize,
    /// How the masks were computed, summed over the file's matchers.
    pub mask_stats: MaskStats,
    /// One outcome per test instance (empty when not compiled).
    pub tests: Vec<TestOutcome>,
    /// `valid` of each test instance, in file order.
    pub test_valid: Vec<bool>,
    /// Invalid instances rejected only at the end (not by a mask).
    pub invalid_rejected_at_end: usize,
    /// Tokens allowed by the mask whose consumption failed.
    pub inconsistent: usize,
    /// Failures of this file.
    pub failures: Vec<Failure>,
}

impl FileResult {
    fn new(id: String) -> FileResult {
        FileResult {
            id,
            compile: CompileOutcome::FileError,
            compile_error: None,
            coverage: Coverage::default(),
            compile_us: None,
            ttfm_us: None,
            mask_us: Vec::new(),
            grammar_bytes: 0,
            matcher_bytes: 0,
            mask_stats: MaskStats::default(),
            tests: Vec::new(),
            test_valid: Vec::new(),
            invalid_rejected_at_end: 0,
            inconsistent: 0,
            failures: Vec::new(),
        }
    }

    /// Compiled (and not abandoned by the timeout).
    pub fn compiled(&self) -> bool {
        self.compile == CompileOutcome::Compiled
    }

    fn count(&self, valid: bool, outcome: TestOutcome) -> usize {
        self.tests
            .iter()
            .zip(&self.test_valid)
            .filter(|&(&o, &v)| v == valid && o == outcome)
            .count()
    }

    /// Valid instances (all of them, compiled or not).
    pub fn valid_total(&self) -> usize {
        self.test_valid.iter().filter(|&&v| v).count()
    }

    /// Invalid instances (all of them).
    pub fn invalid_total(&self) -> usize {
        self.test_valid.iter().filter(|&&v| !v).count()
    }

    /// Valid instances accepted.
    pub fn valid_accepted(&self) -> usize {
        self.count(true, TestOutcome::Pass)
    }

    /// Invalid instances rejected.
    pub fn invalid_rejected(&self) -> usize {
        self.count(false, TestOutcome::Pass)
    }

    /// Invalid instances accepted, explained by a superset entry.
    pub fn invalid_accepted_explained(&self) -> usize {
        self.count(false, TestOutcome::FailExplained)
    }

    /// Invalid instances accepted with no superset entry explaining them (bugs).
    pub fn invalid_accepted_unexplained(&self) -> usize {
        self.count(false, TestOutcome::Fail)
    }

    /// The ratchet code: the compile letter, then one letter per test instance (`-` for
    /// instances not run).
    pub fn outcome_code(&self) -> String {
        let mut s = String::with_capacity(1 + self.test_valid.len());
        s.push(self.compile.letter());
        s.extend(self.tests.iter().map(|t| t.letter()));
        let missing = self.test_valid.len().saturating_sub(self.tests.len());
        s.extend(std::iter::repeat_n('-', missing));
        s
    }

    /// Per-case ratchet codes ([`crate::ratchet`]): `<prefix><file>` = the compile letter,
    /// `<prefix><file>#<i>` = the letter of test instance `i` (`-` when not run).
    pub fn case_outcomes(&self, prefix: &str, out: &mut crate::ratchet::Outcomes) {
        let code = self.outcome_code();
        let mut letters = code.chars();
        let compile = letters.next().unwrap_or('x');
        out.insert(format!("{prefix}{}", self.id), compile.to_string());
        for (i, l) in letters.enumerate() {
            out.insert(format!("{prefix}{}#{i}", self.id), l.to_string());
        }
    }

    fn fail(&mut self, kind: FailureKind, detail: String) {
        self.failures.push(Failure {
            file: self.id.clone(),
            kind,
            detail,
        });
    }
}

/// The results of a run over files.
#[derive(Debug, Clone)]
pub struct MaskbenchReport {
    /// One result per file, in sample order.
    pub files: Vec<FileResult>,
    /// How instances were fed.
    pub feed: String,
    /// Tokens in the vocabulary.
    pub vocab_size: usize,
    /// Strict compilation.
    pub strict: bool,
    /// Wall-clock time of the whole run.
    pub wall: Duration,
}

/// Runs MaskBench over `files` (already selected, e.g. by [`list_files`]).
pub fn run(feed: &Feed<'_>, files: &[PathBuf], cfg: &MaskbenchConfig) -> MaskbenchReport {
    let start = Instant::now();
    let bar = progress_bar(cfg.progress, files.len());
    let mut mask = vec![0u32; feed.vocab().mask_words()];
    let mut results = Vec::with_capacity(files.len());
    for path in files {
        bar.set_message(file_name(path));
        results.push(run_file(feed, path, cfg, &mut mask));
        bar.inc(1);
    }
    bar.finish_and_clear();
    MaskbenchReport {
        files: results,
        feed: feed.describe(),
        vocab_size: feed.vocab().vocab_size(),
        strict: cfg.strict,
        wall: start.elapsed(),
    }
}

fn progress_bar(enabled: bool, len: usize) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    let style = indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} schemas, {elapsed} (eta {eta}) {wide_msg}",
    );
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

/// A MaskBench file: the schema and `(valid, data)` per test instance.
pub fn read_maskbench_file(path: &Path) -> Result<(Value, Vec<(bool, Value)>)> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut spec: Value = serde_json::from_str(&text).context("parsing MaskBench JSON")?;
    let obj = spec
        .as_object_mut()
        .ok_or_else(|| anyhow!("not a JSON object"))?;
    let schema = obj
        .remove("schema")
        .ok_or_else(|| anyhow!("no \"schema\" field"))?;
    let mut tests = Vec::new();
    if let Some(Value::Array(list)) = obj.remove("tests") {
        for (i, mut t) in list.into_iter().enumerate() {
            let valid = t
                .get("valid")
                .and_then(Value::as_bool)
                .ok_or_else(|| anyhow!("test {i}: no boolean \"valid\""))?;
            let data = t
                .as_object_mut()
                .and_then(|o| o.remove("data"))
                .ok_or_else(|| anyhow!("test {i}: no \"data\""))?;
            tests.push((valid, data));
        }
    }
    Ok((schema, tests))
}

/// The error recorded with test `i` of a MaskBench file (`python_error`: Python
/// `jsonschema`'s message), read again only for the rare acceptance the independent
/// validator agrees with.
fn recorded_error(path: &Path, i: usize) -> Option<String> {
    let spec: Value = serde_json::from_str(&fs::read_to_string(path).ok()?).ok()?;
    spec.get("tests")?
        .get(i)?
        .get("python_error")?
        .as_str()
        .map(str::to_owned)
}

fn run_file(
    feed: &Feed<'_>,
    path: &Path,
    cfg: &MaskbenchConfig,
    mask: &mut Vec<u32>,
) -> FileResult {
    let t_start = Instant::now();
    let deadline = cfg.timeout.map(|d| t_start + d);
    let mut res = FileResult::new(file_name(path));
    let (schema, tests) = match read_maskbench_file(path) {
        Ok(x) => x,
        Err(e) => {
            res.fail(FailureKind::FileError, format!("{e:#}"));
            return res;
        }
    };
    res.test_valid = tests.iter().map(|t| t.0).collect();

    // Compile, then the first mask on a fresh matcher.
    let t0 = Instant::now();
    let compiled = compile_schema(&schema, cfg.strict, feed.vocab(), &cfg.limits);
    let (grammar, coverage) = match compiled {
        Ok(x) => x,
        Err(e) if e.kind == GrammarErrorKind::Unproductive && e.message.contains("`start`") => {
            // The schema admits no document (proved while compiling): every instance is
            // rejected, as an exact grammar would.
            res.compile = CompileOutcome::Compiled;
            res.compile_us = Some(micros(t0.elapsed()));
            res.ttfm_us = res.compile_us;
            for (i, (valid, _)) in tests.iter().enumerate() {
                if *valid {
                    let detail = format!("test {i} (valid): the schema compiles to no document");
                    res.fail(FailureKind::ValidRejected, detail);
                    res.tests.push(TestOutcome::Fail);
                } else {
                    res.tests.push(TestOutcome::Pass);
                }
            }
            return res;
        }
        Err(e) => {
            let kind = if limit_of_grammar_error(&e).is_some() {
                res.compile = CompileOutcome::Limit;
                FailureKind::Limit
            } else {
                res.compile = CompileOutcome::Error;
                FailureKind::CompileError
            };
            res.compile_error = Some(e.to_string());
            res.fail(kind, format!("compile: {e}"));
            return res;
        }
    };
    let mut first = Matcher::new(&grammar);
    let compile_time = t0.elapsed();
    res.coverage = coverage;
    res.grammar_bytes = grammar.bytes_used();
    mask.resize(first.mask_words(), 0);
    let t1 = Instant::now();
    let first_mask = first.compute_mask(mask);
    let first_time = t1.elapsed();
    if let Err(e) = first_mask {
        res.compile = CompileOutcome::Limit;
        res.compile_error = Some(format!("first mask: {e}"));
        res.fail(FailureKind::Limit, format!("first mask: {e}"));
        return res;
    }
    res.matcher_bytes = first.bytes_used();
    res.compile_us = Some(micros(compile_time));
    res.ttfm_us = Some(micros(compile_time + first_time));
    res.compile = CompileOutcome::Compiled;

    let unit = match feed {
        Feed::Tokens(_) => "token",
        Feed::Bytes(_) => "byte",
    };
    // `compile_schema` asserts formats (`JsonOptions::default`), so the validator does too.
    let mut tracer = crate::trace::Tracer::new(&schema, true, &[]);
    for (i, (valid, data)) in tests.iter().enumerate() {
        if deadline.is_some_and(|d| Instant::now() > d) {
            return timed_out(res, i, cfg);
        }
        let text = if cfg.pretty {
            crate::pyjson::dumps_indent(data, 2)
        } else {
            python_dumps(data)
        };
        let check = match check_text(&grammar, feed, &text, mask, &mut res.mask_us, deadline) {
            Ok(c) => c,
            Err(e) => {
                res.tests.push(TestOutcome::Limit);
                res.fail(FailureKind::FileError, format!("test {i}: {e:#}"));
                continue;
            }
        };
        res.matcher_bytes = res.matcher_bytes.max(check.matcher_bytes);
        res.mask_stats.masks += check.stats.masks;
        res.mask_stats.cached += check.stats.cached;
        res.mask_stats.sliced += check.stats.sliced;
        res.mask_stats.state_masks += check.stats.state_masks;
        res.mask_stats.lexer_rebuilds += check.stats.lexer_rebuilds;
        let outcome = match (&check.verdict, valid) {
            (Verdict::Timeout, _) => return timed_out(res, i, cfg),
            (Verdict::Limit(what), _) => {
                res.fail(FailureKind::Limit, format!("test {i}: {what}"));
                TestOutcome::Limit
            }
            (Verdict::Accepted, true) => TestOutcome::Pass,
            (v, true) => {
                let detail = format!("test {i} (valid): {}", v.describe(unit));
                res.fail(FailureKind::ValidRejected, detail);
                TestOutcome::Fail
            }
            (Verdict::Accepted, false) => {
                let supersets = &res.coverage.superset_locations;
                let mut trace = tracer.explain(data, supersets);
                if trace == crate::trace::Trace::ValidatorAccepts
                    && let Some(err) = recorded_error(path, i)
                    && let Some(t) = crate::trace::explain_recorded(&schema, &err, supersets)
                {
                    trace = t;
                }
                let detail = format!("test {i} (invalid): accepted; {}", trace.describe());
                if trace.explained() {
                    res.fail(FailureKind::InvalidAcceptedExplained, detail);
                    TestOutcome::FailExplained
                } else {
                    res.fail(FailureKind::InvalidAccepted, detail);
                    TestOutcome::Fail
                }
            }
            (v, false) => {
                if *v == Verdict::NotAccepting {
                    res.invalid_rejected_at_end += 1;
                }
                TestOutcome::Pass
            }
        };
        if matches!(check.verdict, Verdict::Inconsistent { .. }) {
            res.inconsistent += 1;
        }
        res.tests.push(outcome);
    }
    // With the tables its matchers built and share.
    res.grammar_bytes = grammar.bytes_used() + grammar.tables_bytes();
    res
}

fn timed_out(mut res: FileResult, done: usize, cfg: &MaskbenchConfig) -> FileResult {
    let secs = cfg.timeout.map_or(0.0, |d| d.as_secs_f64());
    res.compile = CompileOutcome::Timeout;
    res.mask_us.clear();
    res.tests.clear();
    res.failures.retain(|f| f.kind == FailureKind::FileError);
    res.fail(
        FailureKind::Limit,
        format!("wall-clock timeout ({secs:.0} s) after {done} test instances"),
    );
    res
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

// ------------------------------------------------------------------------------------------
// Summaries

/// Mean, nearest-rank percentiles and maximum of `values` (any order); `None` fields when
/// empty. Percentile names are JSON keys such as `p50` or `p999` (99.9).
pub fn stats_json(values: &[f64], percentiles: &[(&str, f64)]) -> Value {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut m = Map::new();
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    if sorted.is_empty() {
        m.insert("mean".into(), Value::Null);
        for (name, _) in percentiles {
            m.insert((*name).into(), Value::Null);
        }
        m.insert("max".into(), Value::Null);
        return Value::Object(m);
    }
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    m.insert("mean".into(), json!(round(mean)));
    for (name, p) in percentiles {
        m.insert((*name).into(), json!(round(percentile_sorted(&sorted, *p))));
    }
    m.insert("max".into(), json!(round(sorted[sorted.len() - 1])));
    Value::Object(m)
}

const TTFM_PERCENTILES: &[(&str, f64)] = &[("p50", 50.0), ("p90", 90.0), ("p99", 99.0)];
const MASK_PERCENTILES: &[(&str, f64)] =
    &[("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9)];

/// Peak resident set size of this process (`VmHWM`), in KiB; `None` off Linux.
pub fn peak_rss_kb() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl MaskbenchReport {
    fn compiled(&self) -> impl Iterator<Item = &FileResult> {
        self.files.iter().filter(|f| f.compiled())
    }

    fn sum(&self, f: impl Fn(&FileResult) -> usize) -> usize {
        self.compiled().map(f).sum()
    }

    /// Schemas compiled.
    pub fn num_compiled(&self) -> usize {
        self.compiled().count()
    }

    /// Schemas the compiler rejected (errors and limits, not timeouts).
    pub fn compile_errors(&self) -> usize {
        let errs = [CompileOutcome::Error, CompileOutcome::Limit];
        self.files
            .iter()
            .filter(|f| errs.contains(&f.compile))
            .count()
    }

    /// Every failure, in file order.
    pub fn failures(&self) -> impl Iterator<Item = &Failure> {
        self.files.iter().flat_map(|f| &f.failures)
    }

    fn count_failures(&self, kind: FailureKind) -> usize {
        self.failures().filter(|f| f.kind == kind).count()
    }

    /// Per-file outcome strings ([`FileResult::outcome_code`]), by file name.
    pub fn outcomes(&self) -> BTreeMap<String, String> {
        self.files
            .iter()
            .map(|f| (f.id.clone(), f.outcome_code()))
            .collect()
    }

    /// Per-case ratchet codes of every file ([`FileResult::case_outcomes`]).
    pub fn case_outcomes(&self, prefix: &str) -> crate::ratchet::Outcomes {
        let mut out = crate::ratchet::Outcomes::new();
        for f in &self.files {
            f.case_outcomes(prefix, &mut out);
        }
        out
    }

    /// The summary: the fields of issue 3 (`schemas` … `failures`) plus extras
    /// (`invalid_accepted_approx`, memory, compile times, counters).
    pub fn summary_json(&self) -> Value {
        let masks: Vec<f64> = self
            .compiled()
            .flat_map(|f| f.mask_us.iter().copied())
            .collect();
        let ttfm: Vec<f64> = self.compiled().filter_map(|f| f.ttfm_us).collect();
        let compile_ms: Vec<f64> = self
            .compiled()
            .filter_map(|f| f.compile_us.map(|u| u / 1000.0))
            .collect();
        let grammar_bytes: Vec<f64> = self.compiled().map(|f| f.grammar_bytes as f64).collect();
        let matcher_bytes: Vec<f64> = self.compiled().map(|f| f.matcher_bytes as f64).collect();
        let failures: Vec<Value> = self
            .failures()
            .map(|f| json!({"file": f.file, "kind": f.kind.as_str(), "detail": f.detail}))
            .collect();
        let p50 = &[("p50", 50.0)][..];
        let superset_schemas = self
            .compiled()
            .filter(|f| f.coverage.has_superset())
            .count();
        let all_ok = self
            .compiled()
            .filter(|f| f.tests.iter().all(|&t| t == TestOutcome::Pass))
            .count();
        let uncompiled_tests: usize = self
            .files
            .iter()
            .filter(|f| !f.compiled())
            .map(|f| f.test_valid.len())
            .sum();
        json!({
            "schemas": self.files.len(),
            "compiled": self.num_compiled(),
            "compile_errors": self.compile_errors(),
            "valid_total": self.sum(FileResult::valid_total),
            "valid_accepted": self.sum(FileResult::valid_accepted),
            "invalid_total": self.sum(FileResult::invalid_total),
            "invalid_rejected": self.sum(FileResult::invalid_rejected),
            "masks": masks.len(),
            "ttfm_us": stats_json(&ttfm, TTFM_PERCENTILES),
            "mask_us": stats_json(&masks, MASK_PERCENTILES),
            "failures": failures,
            "invalid_accepted_explained": self.sum(FileResult::invalid_accepted_explained),
            "invalid_accepted_unexplained": self.sum(FileResult::invalid_accepted_unexplained),
            "invalid_rejected_at_end": self.sum(|f| f.invalid_rejected_at_end),
            "mask_consume_inconsistent": self.sum(|f| f.inconsistent),
            "limit_failures": self.count_failures(FailureKind::Limit),
            "timeouts": self.files.iter().filter(|f| f.compile == CompileOutcome::Timeout).count(),
            "file_errors": self.count_failures(FailureKind::FileError),
            "schemas_with_superset_coverage": superset_schemas,
            "schemas_all_tests_ok": all_ok,
            "tests_in_uncompiled_schemas": uncompiled_tests,
            "compile_ms": stats_json(&compile_ms, TTFM_PERCENTILES),
            "grammar_bytes": stats_json(&grammar_bytes, p50),
            "matcher_bytes": stats_json(&matcher_bytes, p50),
            "mask_paths": {
                "masks": self.compiled().map(|f| f.mask_stats.masks).sum::<u64>(),
                "cached": self.compiled().map(|f| f.mask_stats.cached).sum::<u64>(),
                "sliced": self.compiled().map(|f| f.mask_stats.sliced).sum::<u64>(),
                "state_masks": self.compiled().map(|f| f.mask_stats.state_masks).sum::<u64>(),
                "lexer_rebuilds": self.compiled().map(|f| f.mask_stats.lexer_rebuilds).sum::<u64>(),
            },
            "peak_rss_kb": peak_rss_kb(),
            "vocab_size": self.vocab_size,
            "wall_s": (self.wall.as_secs_f64() * 10.0).round() / 10.0,
        })
    }

    /// One record per file, in llgbench's `per_schema` layout (plus sieve's extras).
    pub fn per_schema_json(&self) -> Value {
        let recs: Vec<Value> = self.files.iter().map(per_schema_record).collect();
        Value::Array(recs)
    }

    /// The whole `--json` document: the summary, `meta` and `per_schema`.
    pub fn to_json(&self, meta: Value) -> Value {
        let mut top = match self.summary_json() {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        top.insert("meta".into(), meta);
        top.insert("per_schema".into(), self.per_schema_json());
        Value::Object(top)
    }

    /// One JSON line per compiled schema, `{"id", "mask_us": [...]}` (llgbench's
    /// `--raw-masks` layout).
    pub fn write_raw_masks(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for f in self.compiled() {
            writeln!(out, "{}", json!({"id": f.id, "mask_us": f.mask_us}))?;
        }
        Ok(())
    }

    /// The human summary.
    pub fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let s = self.summary_json();
        let pct = |num: &Value, den: &Value| match (num.as_f64(), den.as_f64()) {
            (Some(n), Some(d)) if d > 0.0 => format!("{:.2}%", 100.0 * n / d),
            _ => "-".to_owned(),
        };
        let stat_line = |key: &str, names: &[&str]| -> String {
            names
                .iter()
                .map(|n| format!("{n} {}", fmt_num(&s[key][*n])))
                .collect::<Vec<_>>()
                .join("  ")
        };
        let mode = if self.strict { "strict" } else { "default" };
        writeln!(
            out,
            "sieve maskbench: {} schemas, {mode} mode, {}, vocab {}",
            s["schemas"], self.feed, self.vocab_size
        )?;
        writeln!(
            out,
            "  schemas: {} compiled ({}), {} compile errors, {} timeouts, {} file errors; \
             all tests right: {}",
            s["compiled"],
            pct(&s["compiled"], &s["schemas"]),
            s["compile_errors"],
            s["timeouts"],
            s["file_errors"],
            s["schemas_all_tests_ok"]
        )?;
        writeln!(
            out,
            "  valid accepted {} / {} ({}), invalid rejected {} / {} ({}; at end {})",
            s["valid_accepted"],
            s["valid_total"],
            pct(&s["valid_accepted"], &s["valid_total"]),
            s["invalid_rejected"],
            s["invalid_total"],
            pct(&s["invalid_rejected"], &s["invalid_total"]),
            s["invalid_rejected_at_end"]
        )?;
        writeln!(
            out,
            "  invalid accepted: {} explained by a superset entry, {} unexplained (bugs); \
             limit failures: {}; mask/consume inconsistent: {}",
            s["invalid_accepted_explained"],
            s["invalid_accepted_unexplained"],
            s["limit_failures"],
            s["mask_consume_inconsistent"]
        )?;
        let all = ["mean", "p50", "p90", "p99", "max"];
        writeln!(out, "  compile ms: {}", stat_line("compile_ms", &all))?;
        writeln!(
            out,
            "  mask us:    {}  ({} masks)",
            stat_line("mask_us", &["mean", "p50", "p90", "p99", "p999", "max"]),
            s["masks"]
        )?;
        writeln!(out, "  ttfm us:    {}", stat_line("ttfm_us", &all))?;
        writeln!(
            out,
            "  memory: peak RSS {} KiB; grammar bytes mean {} max {}; matcher bytes p50 {} mean {} \
             max {}",
            fmt_num(&s["peak_rss_kb"]),
            fmt_num(&s["grammar_bytes"]["mean"]),
            fmt_num(&s["grammar_bytes"]["max"]),
            fmt_num(&s["matcher_bytes"]["p50"]),
            fmt_num(&s["matcher_bytes"]["mean"]),
            fmt_num(&s["matcher_bytes"]["max"])
        )?;
        let paths = &s["mask_paths"];
        let (n, cached, sliced, state) = (
            paths["masks"].as_u64().unwrap_or(0),
            paths["cached"].as_u64().unwrap_or(0),
            paths["sliced"].as_u64().unwrap_or(0),
            paths["state_masks"].as_u64().unwrap_or(0),
        );
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        writeln!(
            out,
            "  mask paths: {n} masks; {cached} copied from the last mask ({:.1}%); {sliced} sliced \
             ({:.1}% of the {} computed); {state} from a lexer state's remembered mask ({:.1}%)",
            pct(cached, n),
            pct(sliced, n - cached.min(n)),
            n - cached.min(n),
            pct(state, n - cached.min(n)),
        )?;
        let rebuilds = paths["lexer_rebuilds"].as_u64().unwrap_or(0);
        if rebuilds > 0 {
            let files = self
                .compiled()
                .filter(|f| f.mask_stats.lexer_rebuilds > 0)
                .count();
            writeln!(
                out,
                "  lexer rebuilds (a lexer budget filled): {rebuilds} in {files} schemas"
            )?;
        }
        writeln!(out, "  wall {} s", s["wall_s"])?;
        let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
        for f in self.failures() {
            *by_kind.entry(f.kind.as_str()).or_default() += 1;
        }
        if !by_kind.is_empty() {
            let kinds: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
            writeln!(out, "  failures: {}", kinds.join(", "))?;
        }
        Ok(())
    }
}

fn fmt_num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.2}"),
        None => "-".to_owned(),
    }
}

fn per_schema_record(f: &FileResult) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(f.id));
    m.insert("outcome".into(), json!(f.outcome_code()));
    m.insert("num_tests".into(), json!(f.test_valid.len()));
    m.insert("valid_total".into(), json!(f.valid_total()));
    m.insert("invalid_total".into(), json!(f.invalid_total()));
    if f.compile == CompileOutcome::Timeout {
        m.insert("timeout".into(), json!(true));
        return Value::Object(m);
    }
    if let Some(e) = &f.compile_error {
        m.insert("compile_error".into(), json!(e));
        return Value::Object(m);
    }
    if !f.compiled() {
        return Value::Object(m);
    }
    let mask_max = f.mask_us.iter().copied().reduce(f64::max);
    m.insert("valid_accepted".into(), json!(f.valid_accepted()));
    m.insert("invalid_rejected".into(), json!(f.invalid_rejected()));
    m.insert(
        "invalid_accepted_explained".into(),
        json!(f.invalid_accepted_explained()),
    );
    m.insert(
        "invalid_accepted_unexplained".into(),
        json!(f.invalid_accepted_unexplained()),
    );
    m.insert(
        "invalid_rejected_at_end".into(),
        json!(f.invalid_rejected_at_end),
    );
    m.insert("mask_consume_inconsistent".into(), json!(f.inconsistent));
    m.insert("tokens".into(), json!(f.mask_us.len()));
    let sum: f64 = f.mask_us.iter().sum();
    m.insert("mask_us_sum".into(), json!((sum * 10.0).round() / 10.0));
    m.insert("mask_us_max".into(), json!(mask_max));
    m.insert("compile_ms".into(), json!(f.compile_us.map(|u| u / 1000.0)));
    m.insert("ttfm_us".into(), json!(f.ttfm_us));
    m.insert("grammar_bytes".into(), json!(f.grammar_bytes));
    m.insert("matcher_bytes".into(), json!(f.matcher_bytes));
    m.insert(
        "superset_keywords".into(),
        json!(f.coverage.superset_keywords),
    );
    m.insert(
        "coverage_entries".into(),
        json!(f.coverage.superset.len() + f.coverage.subset.len()),
    );
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_key() {
        // sha256("abc")
        assert_eq!(
            sample_key(Path::new("/x/y/abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn collections() {
        assert_eq!(collection("Github_easy---o13947.json"), "Github_easy");
        assert_eq!(
            collection("BFCL_parallel_multiple_12.json"),
            "BFCL_parallel_multiple"
        );
        assert_eq!(collection("JME_3.json"), "JME");
        assert_eq!(collection("odd.json"), "odd");
    }

    #[test]
    fn stats_layout() {
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        let s = stats_json(&v, MASK_PERCENTILES);
        assert_eq!(s["p50"], json!(500.0));
        // 99.9 / 100 * 1000 is 999.000…1 in f64, so the nearest rank is 1000, as in llgbench.
        assert_eq!(s["p999"], json!(1000.0));
        assert_eq!(s["max"], json!(1000.0));
        assert_eq!(s["mean"], json!(500.5));
        assert!(stats_json(&[], TTFM_PERCENTILES)["mean"].is_null());
    }

    #[test]
    fn byte_feed() {
        let vocab = byte_vocab();
        let g = Grammar::from_regex("a[bc]+", &vocab, &Limits::default()).unwrap();
        let feed = Feed::Bytes(vocab);
        let (mut mask, mut times) = (Vec::new(), Vec::new());
        let mut check = |t: &str| {
            check_text(&g, &feed, t, &mut mask, &mut times, None)
                .unwrap()
                .verdict
        };
        assert_eq!(check("abcb"), Verdict::Accepted);
        assert_eq!(check("a"), Verdict::NotAccepting);
        assert!(matches!(
            check("abd"),
            Verdict::Rejected { at: 2, len: 3, .. }
        ));
    }
}
