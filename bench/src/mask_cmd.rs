//! `sieve mask`: compile a grammar or regex, feed a prefix, and show one token mask.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use sieve_core::{Grammar, Limits, Matcher};

use crate::tokenizer::LoadedTokenizer;
use crate::util::{allowed_tokens, escape_bytes, spread_sample};

/// Where the constraint comes from.
#[derive(Debug, Clone, Copy)]
pub enum GrammarSource<'a> {
    /// Lark grammar text.
    Lark {
        /// Names the grammar in errors (`name:line:col: message`), e.g. its path.
        name: &'a str,
        /// The grammar text.
        src: &'a str,
    },
    /// A regex the whole output must match.
    Regex(&'a str),
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
    source: GrammarSource<'_>,
    cfg: &MaskConfig,
) -> Result<MaskReport> {
    let vocab = &tok.vocab;
    let start = Instant::now();
    let grammar = match source {
        GrammarSource::Lark { name, src } => {
            Grammar::from_lark(src, vocab, &cfg.limits).map_err(|e| anyhow!("{name}:{e}"))?
        }
        GrammarSource::Regex(re) => {
            Grammar::from_regex(re, vocab, &cfg.limits).map_err(|e| anyhow!("regex {re:?}: {e}"))?
        }
    };
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
        prefix_tokens,
        allowed,
        eos_allowed,
        sample,
        compile,
        mask_time,
    })
}
