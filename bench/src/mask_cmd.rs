//! `sieve mask`: compile a grammar or regex, feed a prefix, and show one token mask.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde_json::Value;
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
use sieve_core::{Grammar, GrammarError, Limits, Matcher};

use crate::tokenizer::LoadedTokenizer;
use crate::util::{allowed_tokens, escape_bytes, spread_sample};

/// Where the constraint comes from: text in one of the [`GrammarSyntax`]es, compiled by
/// [`Grammar::compile`].
#[derive(Debug, Clone)]
pub struct GrammarSource<'a> {
    /// How `text` is written.
    pub syntax: GrammarSyntax,
    /// Names the grammar in errors (`name:line:col: message`, `name: at /pointer: message`),
    /// e.g. its path.
    pub name: String,
    /// The grammar text.
    pub text: &'a str,
    /// Options of the syntaxes (`json.strict`: every JSON Schema approximation is an error;
    /// `gbnf.root`: GBNF's start rule).
    pub options: CompileOptions,
}

impl<'a> GrammarSource<'a> {
    /// `text` in `syntax`, named `name` in errors, with the default options.
    pub fn new(syntax: GrammarSyntax, name: impl Into<String>, text: &'a str) -> Self {
        GrammarSource {
            syntax,
            name: name.into(),
            text,
            options: CompileOptions::default(),
        }
    }

    /// A regex the whole output must match (named `regex "..."` in errors).
    pub fn regex(pattern: &'a str) -> Self {
        GrammarSource::new(GrammarSyntax::Regex, format!("regex {pattern:?}"), pattern)
    }

    /// Compiles the text, and its coverage report as lines (JSON Schemas only).
    ///
    /// # Errors
    /// The grammar error, after the source's name.
    pub fn compile(
        &self,
        tok: &LoadedTokenizer,
        limits: &Limits,
    ) -> Result<(Grammar, Vec<String>)> {
        let (grammar, report) =
            Grammar::compile(self.syntax, self.text, &self.options, &tok.vocab, limits)
                .map_err(|e| anyhow!("{}", located(&self.name, &e)))?;
        let coverage = report.map_or_else(Vec::new, |r| {
            r.entries.iter().map(ToString::to_string).collect()
        });
        Ok((grammar, coverage))
    }
}

/// `name:line:col: message` for an error with a span, `name: message` otherwise (the
/// message starting `at /pointer: ` when it has a JSON pointer).
pub fn located(name: &str, e: &GrammarError) -> String {
    if e.span.is_some() {
        format!("{name}:{e}")
    } else {
        format!("{name}: {e}")
    }
}

/// Reads and parses a JSON Schema file.
///
/// # Errors
/// The file cannot be read or is not JSON.
pub fn read_schema(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow!("reading {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{}: not JSON: {e}", path.display()))
}

/// Settings of one `mask` run.
#[derive(Debug, Clone, Default)]
pub struct MaskConfig {
    /// Text consumed (after tokenizing it) before the mask is computed.
    pub prefix: String,
    /// How many allowed tokens to list.
    pub sample: usize,
    /// Engine budgets.
    pub limits: Limits,
}

/// The mask after the prefix, and timings.
#[derive(Debug, Clone)]
pub struct MaskReport {
    /// The prefix's tokens, all consumed.
    pub prefix_tokens: Vec<u32>,
    /// Every allowed token id, ascending.
    pub allowed: Vec<u32>,
    /// Some EOS token is allowed (the prefix is a complete sentence).
    pub eos_allowed: bool,
    /// Up to `sample` allowed ids, spread over the allowed set.
    pub sample: Vec<u32>,
    /// Grammar compilation time.
    pub compile: Duration,
    /// Time of the one mask computation.
    pub mask_time: Duration,
    /// A JSON Schema's coverage report, one entry per keyword not compiled exactly.
    pub coverage: Vec<String>,
}

impl MaskReport {
    /// Writes the human-readable report.
    pub fn print(&self, tok: &LoadedTokenizer, out: &mut dyn Write) -> std::io::Result<()> {
        let size = tok.vocab.vocab_size();
        writeln!(out, "tokenizer: {} ({size} ids)", tok.name)?;
        writeln!(out, "prefix tokens: {:?}", self.prefix_tokens)?;
        writeln!(out, "allowed tokens: {} of {size}", self.allowed.len())?;
        writeln!(
            out,
            "EOS allowed: {}",
            if self.eos_allowed { "yes" } else { "no" }
        )?;
        writeln!(
            out,
            "compile: {:.1} µs, mask: {:.1} µs",
            self.compile.as_secs_f64() * 1e6,
            self.mask_time.as_secs_f64() * 1e6
        )?;
        for entry in &self.coverage {
            writeln!(out, "coverage: {entry}")?;
        }
        if !self.sample.is_empty() {
            writeln!(out, "sample of allowed tokens:")?;
            for &id in &self.sample {
                writeln!(out, "  {id:>7}  {}", escape_bytes(tok.vocab.token_text(id)))?;
            }
        }
        Ok(())
    }
}

/// Compiles `source`, consumes the tokens of `cfg.prefix` and computes the next mask.
pub fn run(
    tok: &LoadedTokenizer,
    source: &GrammarSource<'_>,
    cfg: &MaskConfig,
) -> Result<MaskReport> {
    let vocab = &tok.vocab;
    let start = Instant::now();
    let (grammar, coverage) = source.compile(tok, &cfg.limits)?;
    let compile = start.elapsed();

    let prefix_tokens = tok.try_encode(&cfg.prefix)?;
    let mut matcher = Matcher::new(&grammar);
    for (i, &t) in prefix_tokens.iter().enumerate() {
        if let Err(e) = matcher.consume_token(t) {
            bail!(
                "prefix token {} of {} (id {t}, {}) was rejected: {e}\nprefix tokens: {:?}",
                i + 1,
                prefix_tokens.len(),
                escape_bytes(vocab.token_text(t)),
                prefix_tokens
            );
        }
    }

    let mut mask = vec![0u32; vocab.mask_words()];
    let t0 = Instant::now();
    matcher
        .compute_mask(&mut mask)
        .map_err(|e| anyhow!("computing the mask: {e}"))?;
    let mask_time = t0.elapsed();

    let allowed = allowed_tokens(&mask, vocab.vocab_size());
    let eos_allowed = vocab
        .eos_tokens()
        .iter()
        .any(|t| allowed.binary_search(t).is_ok());
    let sample = spread_sample(&allowed, cfg.sample);
    Ok(MaskReport {
        coverage,
        prefix_tokens,
        allowed,
        eos_allowed,
        sample,
        compile,
        mask_time,
    })
}
