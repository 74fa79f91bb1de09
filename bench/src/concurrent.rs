//! `sieve concurrent`: many matchers of one grammar at once, as a serving engine holds them.
//!
//! One grammar is compiled; `matchers` matchers are created from it and kept alive together
//! (a batch of sequences on one schema). `threads` host threads (scoped `std` threads, the
//! host executor) each own every `threads`-th matcher and advance them in turns, one token
//! each per turn: compute the mask (timed), check that the sequence's next token is allowed,
//! consume it; at the end the mask must allow EOS. The sequences are valid outputs, tokenized
//! by the host's tokenizer (for the default schema, generated per matcher from a seed: names,
//! numbers, an enum value and a list of tags). When every matcher has finished, their heap
//! bytes ([`Matcher::bytes_used`]) are read while all are still alive.
//!
//! What it shows: the throughput of mask computation across threads sharing one grammar, the
//! per-mask latency under that sharing, what each matcher holds of its own (issue 15 asks for
//! a p50 of at most 64 KB), and the process's peak RSS.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

use crate::maskbench::peak_rss_kb;
use crate::rng::SplitMix64;
use crate::stats::{Summary, percentile_sorted};

/// The default schema (an object with string, integer, number, enum and array fields);
/// `benches/masks.rs` times it too.
pub const DEFAULT_SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0},
    "score": {"type": "number"},
    "status": {"enum": ["active", "inactive", "pending"]},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["name", "age", "status"],
  "additionalProperties": false
}"#;

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct ConcurrentConfig {
    /// Matchers alive at once.
    pub matchers: usize,
    /// Host threads advancing them.
    pub threads: usize,
    /// Engine budgets.
    pub limits: Limits,
}

impl Default for ConcurrentConfig {
    fn default() -> Self {
        ConcurrentConfig {
            matchers: 64,
            threads: std::thread::available_parallelism().map_or(4, |n| n.get()),
            limits: Limits::default(),
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct ConcurrentReport {
    /// The settings.
    pub config: ConcurrentConfig,
    /// Compiling the grammar.
    pub compile: Duration,
    /// Every mask computed, by every matcher.
    pub masks: Summary,
    /// From the first mask to the last matcher finishing (all threads).
    pub wall: Duration,
    /// Tokens consumed, all matchers together.
    pub tokens: usize,
    /// Heap bytes of each matcher, read with all of them alive, ascending.
    pub matcher_bytes: Vec<usize>,
    /// Heap bytes the grammar holds, the tables its matchers share included.
    pub grammar_bytes: usize,
    /// Peak resident set of the process (KiB), on Linux.
    pub peak_rss_kb: Option<u64>,
}

/// One matcher and the output it is fed.
struct Seq<'a> {
    matcher: Matcher,
    tokens: &'a [u32],
    next: usize,
}

/// Advance `seq` by one token (the last step checks EOS); false when it has finished.
fn step(
    seq: &mut Seq<'_>,
    vocab: &Vocabulary,
    mask: &mut [u32],
    times: &mut Vec<Duration>,
) -> Result<bool> {
    if seq.next > seq.tokens.len() {
        return Ok(false);
    }
    let t = Instant::now();
    seq.matcher
        .compute_mask(mask)
        .map_err(|e| anyhow::anyhow!("mask before token {}: {e}", seq.next))?;
    times.push(t.elapsed());
    let allowed = |tok: u32| {
        mask.get(tok as usize / 32)
            .is_some_and(|w| w >> (tok % 32) & 1 == 1)
    };
    let Some(&tok) = seq.tokens.get(seq.next) else {
        if !vocab.eos_tokens().iter().any(|&e| allowed(e)) {
            bail!("EOS not allowed at the end of the output");
        }
        seq.next += 1;
        return Ok(false);
    };
    if !allowed(tok) {
        bail!("token {} ({tok}) of the output is not allowed", seq.next);
    }
    seq.matcher
        .consume_token(tok)
        .map_err(|e| anyhow::anyhow!("token {} ({tok}): {e}", seq.next))?;
    seq.next += 1;
    Ok(true)
}

/// Compile `schema` and run `cfg.matchers` matchers on `cfg.threads` threads, matcher `i`
/// fed `outputs[i % outputs.len()]` (token ids, without EOS).
///
/// # Errors
/// The schema does not compile, there are no outputs, or a matcher fails (a mask or token
/// error, a token of its output not allowed, EOS not allowed at the end).
pub fn run(
    vocab: &Arc<Vocabulary>,
    schema: &serde_json::Value,
    outputs: &[Vec<u32>],
    cfg: &ConcurrentConfig,
) -> Result<ConcurrentReport> {
    if outputs.is_empty() {
        bail!("no outputs to feed");
    }
    let t = Instant::now();
    let (grammar, _) =
        Grammar::from_json_schema(schema, &JsonOptions::default(), vocab, &cfg.limits)
            .map_err(|e| anyhow::anyhow!("compiling the schema: {e}"))?;
    let compile = t.elapsed();
    let threads = cfg.threads.clamp(1, cfg.matchers.max(1));
    // Matcher `i` goes to thread `i % threads`; all are created before any mask.
    let mut groups: Vec<Vec<Seq<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for i in 0..cfg.matchers {
        groups[i % threads].push(Seq {
            matcher: Matcher::new(&grammar),
            tokens: &outputs[i % outputs.len()],
            next: 0,
        });
    }
    let start = Instant::now();
    let results: Vec<Result<(Vec<Seq<'_>>, Vec<Duration>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = groups
            .into_iter()
            .map(|mut group| {
                s.spawn(move || -> Result<(Vec<Seq<'_>>, Vec<Duration>)> {
                    let mut mask = vec![0u32; vocab.mask_words()];
                    let mut times = Vec::new();
                    // In turns, as a batch advances: one token of each live matcher.
                    let mut live = true;
                    while live {
                        live = false;
                        for seq in &mut group {
                            live |= step(seq, vocab, &mut mask, &mut times)?;
                        }
                    }
                    Ok((group, times))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| bail!("a thread panicked")))
            .collect()
    });
    let wall = start.elapsed();
    let mut seqs = Vec::new();
    let mut times = Vec::new();
    for r in results {
        let (group, t) = r?;
        seqs.extend(group);
        times.extend(t);
    }
    let mut matcher_bytes: Vec<usize> = seqs.iter().map(|s| s.matcher.bytes_used()).collect();
    matcher_bytes.sort_unstable();
    Ok(ConcurrentReport {
        config: cfg.clone(),
        compile,
        masks: Summary::from_durations(&times),
        wall,
        tokens: seqs.iter().map(|s| s.tokens.len()).sum(),
        matcher_bytes,
        grammar_bytes: grammar.bytes_used() + grammar.tables_bytes(),
        peak_rss_kb: peak_rss_kb(),
    })
}

impl ConcurrentReport {
    /// Print the summary.
    ///
    /// # Errors
    /// Writing fails.
    pub fn print(&self, out: &mut dyn Write) -> Result<()> {
        let c = &self.config;
        let bytes: Vec<f64> = self.matcher_bytes.iter().map(|&b| b as f64).collect();
        let sum: usize = self.matcher_bytes.iter().sum();
        let wall = self.wall.as_secs_f64();
        writeln!(
            out,
            "sieve concurrent: {} matchers of one grammar on {} threads, {} tokens in all",
            c.matchers,
            c.threads.clamp(1, c.matchers.max(1)),
            self.tokens
        )?;
        writeln!(out, "  compile ms {:.2}", self.compile.as_secs_f64() * 1e3)?;
        let mask_s = self.masks.mean_us * self.masks.count as f64 / 1e6;
        writeln!(
            out,
            "  masks: {} in {:.3} s wall ({:.3} s in compute_mask, summed over threads); mask us \
             mean {:.2} p50 {:.2} p99 {:.1} max {:.1}",
            self.masks.count,
            wall,
            mask_s,
            self.masks.mean_us,
            self.masks.p50_us,
            self.masks.p99_us,
            self.masks.max_us
        )?;
        writeln!(
            out,
            "  memory: matcher bytes p50 {:.0} max {:.0} sum {}; grammar bytes {}; peak RSS {} KiB",
            percentile_sorted(&bytes, 50.0),
            bytes.last().copied().unwrap_or(0.0),
            sum,
            self.grammar_bytes,
            self.peak_rss_kb
                .map_or_else(|| "?".to_string(), |k| k.to_string())
        )
        .context("writing the report")?;
        Ok(())
    }
}

/// Outputs for [`DEFAULT_SCHEMA`]: `n` valid instances, each from its own seed (a name of
/// one to four words, an age, a score, a status and zero to five tags), serialized as
/// Python's `json.dumps` does (a space after `:` and `,`).
pub fn default_outputs(n: usize, seed: u64) -> Vec<String> {
    const WORDS: &[&str] = &[
        "alpha",
        "Bravo",
        "charlie",
        "delta",
        "Echo",
        "foxtrot",
        "golf",
        "hotel",
        "India",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "November",
        "oscar",
        "papa",
        "quebec",
        "romeo",
        "sierra",
        "tango",
        "uniform",
        "victor",
        "whiskey",
        "x-ray",
        "yankee",
        "zulu",
        "é",
        "naïve",
        "日本",
        "new\nline",
        "o'clock",
        "42",
        "\"quoted\"",
    ];
    const STATUS: &[&str] = &["active", "inactive", "pending"];
    (0..n)
        .map(|i| {
            let mut rng = SplitMix64::new(seed.wrapping_add(i as u64));
            let words = |k: usize, rng: &mut SplitMix64| {
                (0..k)
                    .map(|_| WORDS[rng.below(WORDS.len())])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let name = words(1 + rng.below(4), &mut rng);
            let age = rng.below(120);
            let score = rng.below(100_000) as f64 / 8.0;
            let status = STATUS[rng.below(STATUS.len())];
            let tags: Vec<String> = (0..rng.below(6))
                .map(|_| words(1 + rng.below(2), &mut rng))
                .collect();
            crate::pyjson::dumps(&serde_json::json!({
                "name": name, "age": age, "score": score, "status": status, "tags": tags,
            }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_outputs_are_valid_instances() {
        let schema: serde_json::Value = serde_json::from_str(DEFAULT_SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let outputs = default_outputs(200, 7);
        for text in &outputs {
            let doc: serde_json::Value = serde_json::from_str(text).expect(text);
            assert!(validator.is_valid(&doc), "{text}");
            // Serialized as `json.dumps` does, so the grammar sees the usual spacing.
            assert_eq!(&crate::pyjson::dumps(&doc), text);
        }
        assert_ne!(outputs[0], outputs[1]);
    }
}
