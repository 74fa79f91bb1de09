//! `sieve demo`: a seeded random sampler constrained by a grammar.
//!
//! Each step computes the token mask (timed), picks an allowed token with [`choose`], and
//! consumes it. The output is then re-checked with a fresh matcher at the byte level. This
//! exercises the whole pipeline on a real vocabulary without a model.
//!
//! # The sampling heuristic
//! - **Free phase** (fewer than `max_tokens` tokens so far): a uniformly random allowed token
//!   that is neither EOS nor whitespace only; on every other step (by coin flip) only among
//!   those containing one of ``{}[]",:`` when there are any, so that the output has some
//!   structure instead of one long string or number. If there is no such token, EOS when
//!   allowed (instead of padding with whitespace), else a random whitespace token.
//! - **Wind-down phase** (the budget is spent): EOS when allowed. Otherwise the first of these
//!   exact token texts that is allowed: `"` (closes an open string; or opens an empty one,
//!   which the next step closes), `}`, `]`, `0`, `1`, `null` (fill a missing value), then `:`,
//!   then `,` (they only continue structures, so they come last). If none is allowed, the
//!   shortest allowed non-whitespace token (lowest id on ties), then any allowed token.
//!
//! `"` must come before `}` and `]`: inside a string those are content, and choosing them
//! would never close anything. For JSON the wind-down ends within a few tokens per open
//! structure; [`WIND_DOWN_STEPS`] bounds it for other grammars.

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

use crate::rng::SplitMix64;
use crate::stats::Summary;
use crate::tokenizer::LoadedTokenizer;
use crate::util::allowed_tokens;

/// The bundled JSON grammar (Lark).
pub const JSON_LARK: &str = include_str!("../grammars/json.lark");

/// How errors name [`JSON_LARK`].
pub const JSON_LARK_NAME: &str = "<bundled json.lark>";

/// Steps allowed after the budget before giving up on closing the output.
pub const WIND_DOWN_STEPS: usize = 1000;

/// Wind-down preferences, best first (see the module docs).
const CLOSERS: &[&[u8]] = &[b"\"", b"}", b"]", b"0", b"1", b"null", b":", b","];

/// Bytes that open, close or separate JSON structures (free-phase bias).
const STRUCTURAL: &[u8] = b"{}[]\",:";

/// Settings of one demo run.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Tokens sampled freely before winding down.
    pub max_tokens: usize,
    /// PRNG seed.
    pub seed: u64,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Engine budgets.
    pub limits: Limits,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            max_tokens: 120,
            seed: 0,
            progress: false,
            limits: Limits::default(),
        }
    }
}

/// What a demo run produced and measured.
#[derive(Debug, Clone)]
pub struct DemoReport {
    /// Every consumed token, including a final EOS.
    pub tokens: Vec<u32>,
    /// Concatenated bytes of the non-EOS tokens: the text the grammar constrained.
    pub text: Vec<u8>,
    /// Generation ended by consuming an EOS token (not by the step limit).
    pub ended_by_eos: bool,
    /// A fresh matcher accepts `text` as a complete sentence.
    pub valid: bool,
    /// Grammar compilation time.
    pub compile: Duration,
    /// Compilation plus the first mask.
    pub first_mask: Duration,
    /// Time of every mask computation, in order.
    pub mask_times: Vec<Duration>,
}

impl DemoReport {
    /// Writes the human-readable report.
    pub fn print(&self, tok: &LoadedTokenizer, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "{}", String::from_utf8_lossy(&self.text))?;
        writeln!(out, "---")?;
        let verdict = if self.valid { "valid" } else { "INVALID" };
        let end = if self.ended_by_eos {
            "ended by EOS"
        } else {
            "step limit reached before EOS"
        };
        writeln!(
            out,
            "{verdict}: {} tokens of {} ({end}), {} bytes",
            self.tokens.len(),
            tok.name,
            self.text.len()
        )?;
        let s = Summary::from_durations(&self.mask_times);
        writeln!(out, "masks: {}, {s}", s.count)?;
        writeln!(
            out,
            "time to first mask: {:.1} µs (compile {:.1} µs)",
            micros(self.first_mask),
            micros(self.compile)
        )
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Runs the constrained random sampler over `grammar_src` (Lark) with `tok`'s vocabulary.
/// `grammar_name` (a path, or a label for the bundled grammar) prefixes grammar errors as
/// `name:line:col: message`.
pub fn run(
    tok: &LoadedTokenizer,
    grammar_name: &str,
    grammar_src: &str,
    cfg: &DemoConfig,
) -> Result<DemoReport> {
    let vocab = &tok.vocab;
    let start = Instant::now();
    let grammar = Grammar::from_lark(grammar_src, vocab, &cfg.limits)
        .map_err(|e| anyhow!("{grammar_name}:{e}"))?;
    let compile = start.elapsed();

    let mut matcher = Matcher::new(&grammar);
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut rng = SplitMix64::new(cfg.seed);
    let bar = progress_bar(cfg.progress, cfg.max_tokens);

    let mut tokens = Vec::new();
    let mut mask_times = Vec::new();
    let mut first_mask = None;
    let mut ended_by_eos = false;
    let step_limit = cfg.max_tokens.saturating_add(WIND_DOWN_STEPS);
    while tokens.len() < step_limit && !matcher.is_stopped() {
        let t0 = Instant::now();
        matcher
            .compute_mask(&mut mask)
            .map_err(|e| anyhow!("computing mask {}: {e}", tokens.len() + 1))?;
        mask_times.push(t0.elapsed());
        first_mask.get_or_insert_with(|| start.elapsed());

        let allowed = allowed_tokens(&mask, vocab.vocab_size());
        let wind_down = tokens.len() >= cfg.max_tokens;
        let Some(token) = choose(vocab, &allowed, wind_down, &mut rng) else {
            bail!(
                "dead end after {} tokens: the mask allows nothing",
                tokens.len()
            );
        };
        matcher.consume_token(token).map_err(|e| {
            anyhow!(
                "consuming token {token} {} at step {}: {e}",
                crate::util::escape_bytes(vocab.token_text(token)),
                tokens.len() + 1
            )
        })?;
        tokens.push(token);
        bar.inc(1);
        if vocab.eos_tokens().contains(&token) {
            ended_by_eos = true;
            break;
        }
    }
    bar.finish_and_clear();

    let mut text = Vec::new();
    for &t in &tokens {
        if !vocab.eos_tokens().contains(&t) {
            text.extend_from_slice(vocab.token_text(t));
        }
    }
    let valid = check_text(&grammar, &text);
    Ok(DemoReport {
        tokens,
        text,
        ended_by_eos,
        valid,
        compile,
        first_mask: first_mask.unwrap_or(compile),
        mask_times,
    })
}

/// Whether a fresh matcher accepts `text` as a complete sentence of `grammar`.
pub fn check_text(grammar: &Grammar, text: &[u8]) -> bool {
    let mut m = Matcher::new(grammar);
    m.try_consume_bytes(text) && m.is_accepting()
}

fn progress_bar(enabled: bool, len: usize) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    let style = indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} tokens {msg}");
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

fn is_whitespace_only(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Picks the next token among `allowed` (ascending ids) following the heuristic in the
/// module docs; of several allowed EOS tokens, the vocabulary's first (preferred) one.
/// `None` only when `allowed` is empty.
pub fn choose(
    vocab: &Vocabulary,
    allowed: &[u32],
    wind_down: bool,
    rng: &mut SplitMix64,
) -> Option<u32> {
    let eos = vocab.eos_tokens();
    // EOS ids are in preference order; `allowed` is ascending.
    let eos_allowed = eos
        .iter()
        .find(|t| allowed.binary_search(t).is_ok())
        .copied();
    let is_content = |t: &u32| !eos.contains(t) && !is_whitespace_only(vocab.token_text(*t));

    if !wind_down {
        let content: Vec<u32> = allowed.iter().copied().filter(is_content).collect();
        if rng.below(2) == 0 {
            // Closing brackets end structures early; let only one structural pick in four
            // close anything, so the output grows some depth before the budget runs out.
            let may_close = rng.below(4) == 0;
            let structural: Vec<u32> = content
                .iter()
                .copied()
                .filter(|&t| {
                    let text = vocab.token_text(t);
                    text.iter().any(|b| STRUCTURAL.contains(b))
                        && (may_close || !text.iter().any(|b| b"}]".contains(b)))
                })
                .collect();
            if !structural.is_empty() {
                return Some(structural[rng.below(structural.len())]);
            }
        }
        if !content.is_empty() {
            return Some(content[rng.below(content.len())]);
        }
        if eos_allowed.is_some() {
            return eos_allowed;
        }
        return pick_random(allowed, rng);
    }

    if eos_allowed.is_some() {
        return eos_allowed;
    }
    for closer in CLOSERS {
        if let Some(&t) = allowed
            .iter()
            .find(|&&t| vocab.token_text(t) == *closer && !vocab.is_special(t))
        {
            return Some(t);
        }
    }
    allowed
        .iter()
        .copied()
        .filter(is_content)
        .min_by_key(|&t| vocab.token_text(t).len())
        .or_else(|| pick_random(allowed, rng))
}

fn pick_random(ids: &[u32], rng: &mut SplitMix64) -> Option<u32> {
    if ids.is_empty() {
        None
    } else {
        Some(ids[rng.below(ids.len())])
    }
}

/// Reads a grammar file for `--grammar`.
pub fn read_grammar(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading grammar {}", path.display()))
}
