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
//!
//! [`run_many`] does the same over several schemas (matcher `i` on schema `i % k`), as a
//! batch over many requests' schemas does; [`maskbench_workloads`] picks them from MaskBench.
//! [`scaling`] repeats one workload at several thread counts (each run on freshly compiled
//! grammars, best wall time of a few rounds) and [`print_scaling`] prints the speed-up table
//! of issue 36: throughput, speed-up over one thread, and the slowest single mask (a stall).

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

use crate::maskbench::{list_files, peak_rss_kb, python_dumps, read_maskbench_file};
use crate::rng::SplitMix64;
use crate::stats::{Summary, percentile_sorted};
use crate::tokenizer::LoadedTokenizer;

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
    /// Advance the matchers as one batch, one call of sieve's batch runner a step
    /// ([`crate::lockstep`]), instead of one host thread per group of matchers.
    pub lockstep: bool,
    /// With `lockstep`: also a digest of every mask ([`crate::lockstep::Lockstep::digest`]).
    pub mask_digest: bool,
}

impl Default for ConcurrentConfig {
    fn default() -> Self {
        ConcurrentConfig {
            matchers: 64,
            threads: std::thread::available_parallelism().map_or(4, |n| n.get()),
            limits: Limits::default(),
            lockstep: false,
            mask_digest: false,
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct ConcurrentReport {
    /// The settings.
    pub config: ConcurrentConfig,
    /// Schemas (grammars) the matchers cycle over.
    pub schemas: usize,
    /// Compiling the grammars (all of them).
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
    /// With `lockstep` and `mask_digest`: the digest of every mask by request and step
    /// ([`crate::lockstep::Lockstep::digest`]), equal at every thread count when the masks are.
    pub mask_digest: Option<u64>,
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

/// Compile one JSON Schema with the default options.
fn compile(
    schema: &serde_json::Value,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
) -> Result<Grammar> {
    let (grammar, _) = Grammar::from_json_schema(schema, &JsonOptions::default(), vocab, limits)
        .map_err(|e| anyhow::anyhow!("compiling the schema: {e}"))?;
    Ok(grammar)
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
    run_many(vocab, &[(schema, outputs)], cfg)
}

/// [`run`] over several schemas, each with its outputs: matcher `i` is a matcher of schema
/// `w = i % k` (`k = workloads.len()`), fed that schema's output `(i / k) % outputs.len()`.
/// Each schema is compiled once, before any mask.
///
/// # Errors
/// As [`run`]; also when `workloads` is empty.
pub fn run_many(
    vocab: &Arc<Vocabulary>,
    workloads: &[(&serde_json::Value, &[Vec<u32>])],
    cfg: &ConcurrentConfig,
) -> Result<ConcurrentReport> {
    if workloads.is_empty() {
        bail!("no schema to run");
    }
    if workloads.iter().any(|(_, outputs)| outputs.is_empty()) {
        bail!("no outputs to feed");
    }
    let t = Instant::now();
    let grammars = workloads
        .iter()
        .map(|(schema, _)| compile(schema, vocab, &cfg.limits))
        .collect::<Result<Vec<_>>>()?;
    let compile = t.elapsed();
    let k = workloads.len();
    if cfg.lockstep {
        let requests: Vec<(&Grammar, &[u32])> = (0..cfg.matchers)
            .map(|i| {
                let outputs = workloads[i % k].1;
                (
                    &grammars[i % k],
                    outputs[(i / k) % outputs.len()].as_slice(),
                )
            })
            .collect();
        let r = crate::lockstep::run(vocab, &requests, cfg.threads.max(1), cfg.mask_digest)?;
        let matchers: Vec<Seq<'_>> = r
            .matchers
            .into_iter()
            .zip(&requests)
            .map(|(matcher, &(_, tokens))| Seq {
                matcher,
                tokens,
                next: tokens.len(),
            })
            .collect();
        let mut report = report(cfg, &grammars, compile, &r.times, r.wall, &matchers);
        report.mask_digest = r.digest;
        return Ok(report);
    }
    let threads = cfg.threads.clamp(1, cfg.matchers.max(1));
    // Matcher `i` goes to thread `i % threads`; all are created before any mask.
    let mut groups: Vec<Vec<Seq<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for i in 0..cfg.matchers {
        let outputs = workloads[i % k].1;
        groups[i % threads].push(Seq {
            matcher: Matcher::new(&grammars[i % k]),
            tokens: &outputs[(i / k) % outputs.len()],
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
    Ok(report(cfg, &grammars, compile, &times, wall, &seqs))
}

/// The report of a run: `times` of every mask, `wall` of the run, the matchers still alive.
fn report(
    cfg: &ConcurrentConfig,
    grammars: &[Grammar],
    compile: Duration,
    times: &[Duration],
    wall: Duration,
    seqs: &[Seq<'_>],
) -> ConcurrentReport {
    let mut matcher_bytes: Vec<usize> = seqs.iter().map(|s| s.matcher.bytes_used()).collect();
    matcher_bytes.sort_unstable();
    ConcurrentReport {
        config: cfg.clone(),
        schemas: grammars.len(),
        compile,
        masks: Summary::from_durations(times),
        wall,
        tokens: seqs.iter().map(|s| s.tokens.len()).sum(),
        matcher_bytes,
        grammar_bytes: grammars
            .iter()
            .map(|g| g.bytes_used() + g.tables_bytes())
            .sum(),
        peak_rss_kb: peak_rss_kb(),
        mask_digest: None,
    }
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
            "sieve concurrent: {} matchers of {} on {} threads, {} tokens in all",
            c.matchers,
            self.grammars_label(),
            c.threads.clamp(1, c.matchers.max(1)),
            self.tokens
        )?;
        writeln!(out, "  compile ms {:.2}", self.compile.as_secs_f64() * 1e3)?;
        if let Some(d) = self.mask_digest {
            writeln!(out, "  mask digest {d:016x}")?;
        }
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

impl ConcurrentReport {
    /// "one grammar" or "k grammars".
    fn grammars_label(&self) -> String {
        match self.schemas {
            1 => "one grammar".to_string(),
            k => format!("{k} grammars"),
        }
    }

    /// Masks per second of wall time, all threads together.
    pub fn masks_per_s(&self) -> f64 {
        self.masks.count as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The thread counts of a scaling table: `requested`, ascending, without repeats, with 1
/// (the baseline of the speed-ups) added when missing.
pub fn thread_counts(requested: &[usize]) -> Vec<usize> {
    let mut t: Vec<usize> = requested.iter().copied().filter(|&n| n > 0).collect();
    t.push(1);
    t.sort_unstable();
    t.dedup();
    t
}

/// Runs the same workload at each of [`thread_counts`]`(threads)`, `rounds` times each
/// (rounds outermost, so that other load on the machine falls on every thread count alike),
/// every run on freshly compiled grammars. Returns, per thread count (ascending), the report
/// of its round with the least wall time.
///
/// # Errors
/// As [`run_many`].
pub fn scaling(
    vocab: &Arc<Vocabulary>,
    workloads: &[(&serde_json::Value, &[Vec<u32>])],
    cfg: &ConcurrentConfig,
    threads: &[usize],
    rounds: usize,
) -> Result<Vec<ConcurrentReport>> {
    let counts = thread_counts(threads);
    let mut best: Vec<Option<ConcurrentReport>> = vec![None; counts.len()];
    for _ in 0..rounds.max(1) {
        for (slot, &n) in best.iter_mut().zip(&counts) {
            let cfg = ConcurrentConfig {
                threads: n,
                ..cfg.clone()
            };
            let r = run_many(vocab, workloads, &cfg)?;
            if slot.as_ref().is_none_or(|b| r.wall < b.wall) {
                *slot = Some(r);
            }
        }
    }
    Ok(best.into_iter().flatten().collect())
}

/// Prints the speed-up table of [`scaling`]'s reports (the first is the 1-thread baseline):
/// one row per thread count with the wall time, masks per second, the speed-up over one
/// thread, and the mask times (p50, p99 and the slowest single mask, a stall).
///
/// # Errors
/// Writing fails.
pub fn print_scaling(
    reports: &[ConcurrentReport],
    rounds: usize,
    out: &mut dyn Write,
) -> Result<()> {
    let Some(base) = reports.first() else {
        bail!("no runs to print");
    };
    writeln!(
        out,
        "sieve concurrent: {} matchers of {}, {} tokens, {} masks a run; best of {} rounds a \
         thread count, each run on freshly compiled grammars",
        base.config.matchers,
        base.grammars_label(),
        base.tokens,
        base.masks.count,
        rounds.max(1)
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "| threads | wall ms | masks/s | speed-up | mask µs p50 | mask µs p99 | slowest mask µs |"
    )?;
    writeln!(out, "|--:|--:|--:|--:|--:|--:|--:|")?;
    let base_wall = base.wall.as_secs_f64();
    for r in reports {
        let wall = r.wall.as_secs_f64();
        writeln!(
            out,
            "| {} | {:.1} | {:.0} | {:.2}x | {:.2} | {:.1} | {:.1} |",
            r.config.threads.clamp(1, r.config.matchers.max(1)),
            wall * 1e3,
            r.masks_per_s(),
            base_wall / wall.max(1e-12),
            r.masks.p50_us,
            r.masks.p99_us,
            r.masks.max_us
        )?;
    }
    writeln!(out)?;
    if let Some(d) = base.mask_digest {
        if let Some(r) = reports.iter().find(|r| r.mask_digest != Some(d)) {
            bail!(
                "the masks differ: digest {d:016x} at 1 thread, {:016x?} at {} threads",
                r.mask_digest,
                r.config.threads
            );
        }
        writeln!(out, "mask digest {d:016x}, the same at every thread count")?;
    }
    writeln!(
        out,
        "compile ms (last run) {:.2}; peak RSS {} KiB",
        reports
            .last()
            .map_or(0.0, |r| r.compile.as_secs_f64() * 1e3),
        base.peak_rss_kb
            .map_or_else(|| "?".to_string(), |k| k.to_string())
    )
    .context("writing the table")?;
    Ok(())
}

/// A schema picked by [`maskbench_workloads`]: its file name, the schema, and its valid
/// instances as token ids (serialized as Python's `json.dumps` does).
pub type SchemaWorkload = (String, serde_json::Value, Vec<Vec<u32>>);

/// The first `k` MaskBench files of `dir` in `sieve maskbench`'s sample order whose schema
/// compiles and has at least one valid instance that a single matcher accepts token by token
/// (checked here, untimed, with the same steps as [`run`]); the instances that fail are
/// dropped. Returns the schemas and how many files were skipped.
///
/// # Errors
/// `dir` cannot be listed.
pub fn maskbench_workloads(
    tok: &LoadedTokenizer,
    dir: &std::path::Path,
    k: usize,
    limits: &Limits,
) -> Result<(Vec<SchemaWorkload>, usize)> {
    let mut picked = Vec::new();
    let mut skipped = 0;
    for path in list_files(&[dir.to_path_buf()], 0)? {
        if picked.len() >= k {
            break;
        }
        match usable_schema(tok, &path, limits) {
            Some((schema, outputs)) => {
                let name = path
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                picked.push((name, schema, outputs));
            }
            None => skipped += 1,
        }
    }
    Ok((picked, skipped))
}

/// The schema of `path` and its valid instances a single matcher accepts; `None` when it
/// does not read or compile, or no instance passes.
fn usable_schema(
    tok: &LoadedTokenizer,
    path: &std::path::Path,
    limits: &Limits,
) -> Option<(serde_json::Value, Vec<Vec<u32>>)> {
    let (schema, tests) = read_maskbench_file(path).ok()?;
    let grammar = compile(&schema, &tok.vocab, limits).ok()?;
    let mut mask = vec![0u32; tok.vocab.mask_words()];
    let mut times = Vec::new();
    let outputs: Vec<Vec<u32>> = tests
        .iter()
        .filter(|(valid, _)| *valid)
        .filter_map(|(_, data)| tok.try_encode(&python_dumps(data)).ok())
        .filter(|tokens| {
            let mut seq = Seq {
                matcher: Matcher::new(&grammar),
                tokens,
                next: 0,
            };
            loop {
                match step(&mut seq, &tok.vocab, &mut mask, &mut times) {
                    Ok(true) => {}
                    Ok(false) => return true,
                    Err(_) => return false,
                }
            }
        })
        .collect();
    (!outputs.is_empty()).then_some((schema, outputs))
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

    #[test]
    fn thread_counts_add_the_baseline() {
        assert_eq!(thread_counts(&[4, 2, 4, 0]), vec![1, 2, 4]);
        assert_eq!(thread_counts(&[]), vec![1]);
    }

    #[test]
    fn scaling_table_has_one_row_per_thread_count() {
        let tok = LoadedTokenizer::load("cl100k_base").unwrap();
        let schema: serde_json::Value = serde_json::from_str(DEFAULT_SCHEMA).unwrap();
        let outputs: Vec<Vec<u32>> = default_outputs(4, 1)
            .iter()
            .map(|t| tok.encode(t))
            .collect();
        let cfg = ConcurrentConfig {
            matchers: 4,
            ..ConcurrentConfig::default()
        };
        let reports = scaling(&tok.vocab, &[(&schema, &outputs[..])], &cfg, &[2], 2).unwrap();
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].masks.count, reports[1].masks.count);
        let mut text = Vec::new();
        print_scaling(&reports, 2, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(
            rows[1].starts_with("| 1 | ") && rows[1].contains("| 1.00x |"),
            "{text}"
        );
        assert!(rows[2].starts_with("| 2 | "), "{text}");
    }
}
