//! One `sieve generate` run from prompts to a printed summary: [`run`] and [`Report`].

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::json;

use crate::generate::{GenerateConfig, GenerateOutput, RunStats, SequenceOutput, generate};
use crate::model::Model;
use crate::validate::{Constraint, GateSpec, Validity, check};

/// The system turn of the chat prompt (SmolLM2's own default).
pub const DEFAULT_SYSTEM: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

/// Settings of a [`run`].
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// User turns; empty = the constraint's default prompt. With several, one sequence
    /// each.
    pub prompts: Vec<String>,
    /// The system turn.
    pub system: String,
    /// Sequences (1 = one per prompt). With one prompt, `batch` sequences seeded
    /// `seed, seed + 1, ...`; with several prompts, it must equal their number.
    pub batch: usize,
    /// The loop's settings.
    pub generate: GenerateConfig,
    /// A reasoning phase and triggers before the constraint (a lazy grammar): built for the
    /// model's vocabulary into `generate.gate`, and the checks look only at the output
    /// from the trigger on.
    pub gate: GateSpec,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            prompts: Vec::new(),
            system: DEFAULT_SYSTEM.to_owned(),
            batch: 1,
            generate: GenerateConfig::default(),
            gate: GateSpec::default(),
        }
    }
}

/// A finished run: outputs, verdicts and timings.
#[derive(Debug, Clone)]
pub struct Report {
    /// The model's path.
    pub model: String,
    /// Grammar compilation time.
    pub compile: Duration,
    /// JSON Schema keywords not compiled exactly.
    pub coverage: Vec<String>,
    /// Prompt lengths in tokens, per sequence.
    pub prompt_tokens: Vec<usize>,
    /// The loop's outputs and timings.
    pub output: GenerateOutput,
    /// One verdict per sequence.
    pub validity: Vec<Validity>,
    /// Jump-forward was on.
    pub jump_forward: bool,
}

/// Compiles `constraint` over the model's vocabulary, generates and checks the outputs.
///
/// # Errors
/// See [`crate::generate::generate`]; also a constraint that does not compile, or
/// `--batch` disagreeing with the number of prompts.
pub fn run(model: &Model, constraint: &Constraint, cfg: &RunConfig) -> Result<Report> {
    let t = Instant::now();
    let (grammar, coverage) = constraint.compile(&model.vocab)?;
    let compile = t.elapsed();

    let users: Vec<String> = if cfg.prompts.is_empty() {
        vec![constraint.default_prompt()]
    } else {
        cfg.prompts.clone()
    };
    let n = match (users.len(), cfg.batch.max(1)) {
        (1, b) => b,
        (k, 1) => k,
        (k, b) if k == b => k,
        (k, b) => bail!("--batch {b} with {k} prompts: give one prompt, or --batch {k}"),
    };
    let prompts: Vec<Vec<u32>> = (0..n)
        .map(|i| model.encode_prompt(&Model::chat_prompt(&cfg.system, &users[i % users.len()])))
        .collect();
    let seeds: Vec<u64> = (0..n as u64)
        .map(|i| cfg.generate.seed.wrapping_add(i))
        .collect();
    let mut gen_cfg = cfg.generate.clone();
    let end_token = cfg.gate.reasoning_end_id(&model.vocab)?;
    if let Some(gate) = cfg.gate.build(&model.vocab)? {
        gen_cfg.gate = Some(gate);
    }
    let output = generate(model, &grammar, &prompts, &seeds, &gen_cfg)?;
    let validity = output
        .sequences
        .iter()
        .map(|s| {
            let end = end_token.map(|t| model.vocab.trie_bytes(t));
            match cfg.gate.constrained_part(&s.text, end) {
                Some(part) => check(constraint, &grammar, part),
                None => Validity {
                    valid: true,
                    checker: "gate (no trigger: free text)",
                    detail: None,
                },
            }
        })
        .collect();
    Ok(Report {
        model: model.path.clone(),
        compile,
        coverage,
        prompt_tokens: prompts.iter().map(Vec::len).collect(),
        output,
        validity,
        jump_forward: cfg.generate.jump_forward,
    })
}

impl Report {
    /// Every sequence ended complete and passed its check.
    pub fn all_valid(&self) -> bool {
        self.output
            .sequences
            .iter()
            .zip(&self.validity)
            .all(|(s, v)| s.stop.is_complete() && v.valid)
    }

    /// One JSON object per sequence (the `--output` lines of a batch).
    pub fn sequence_json(&self, i: usize) -> serde_json::Value {
        let s: &SequenceOutput = &self.output.sequences[i];
        let v = &self.validity[i];
        json!({
            "sequence": i,
            "seed": s.seed,
            "text": String::from_utf8_lossy(&s.text),
            "tokens": s.tokens.len(),
            "forced": s.forced,
            "stop": s.stop.to_string(),
            "complete": s.stop.is_complete(),
            "valid": v.valid,
            "checker": v.checker,
            "detail": v.detail,
        })
    }

    /// Writes the outputs to `out`: the text for one sequence, else one JSON line each.
    ///
    /// # Errors
    /// Writing fails.
    pub fn write_outputs(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if let [s] = self.output.sequences.as_slice() {
            return out.write_all(&s.text);
        }
        for i in 0..self.output.sequences.len() {
            writeln!(out, "{}", self.sequence_json(i))?;
        }
        Ok(())
    }

    /// Writes the outputs and the summary.
    ///
    /// # Errors
    /// Writing fails.
    pub fn print(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let seqs = &self.output.sequences;
        for (i, (s, v)) in seqs.iter().zip(&self.validity).enumerate() {
            if seqs.len() > 1 {
                writeln!(out, "--- sequence {i} (seed {})", s.seed)?;
            }
            writeln!(out, "{}", String::from_utf8_lossy(&s.text))?;
            let verdict = match (s.stop.is_complete(), v.valid) {
                (true, true) => "complete, valid".to_owned(),
                (false, true) => "INCOMPLETE (valid so far as a whole text)".to_owned(),
                (true, false) => format!("complete, INVALID: {}", detail(v)),
                (false, false) => format!("INCOMPLETE, not valid: {}", detail(v)),
            };
            writeln!(
                out,
                "[{} tokens, {} forced; stopped by {}; {verdict} ({})]",
                s.tokens.len(),
                s.forced,
                s.stop,
                v.checker
            )?;
        }
        writeln!(out, "---")?;
        let c = &self.output.constrained;
        writeln!(
            out,
            "model: {} ({} llama.cpp threads) · prompt {} tokens · grammar compiled in {:.1} ms",
            self.model,
            self.output.threads,
            self.prompt_tokens.iter().max().unwrap_or(&0),
            ms(self.compile)
        )?;
        for entry in &self.coverage {
            writeln!(out, "coverage: {entry}")?;
        }
        let forced: usize = seqs.iter().map(|s| s.forced).sum();
        writeln!(
            out,
            "tokens: {} in {} sequence(s), {} sampled + {} forced{}; {} forward calls after \
             the prefill",
            c.tokens,
            seqs.len(),
            c.tokens - forced,
            forced,
            if self.jump_forward {
                format!(" (jump-forward saved {forced} sampling steps)")
            } else {
                " (jump-forward off)".to_owned()
            },
            c.steps
        )?;
        writeln!(out, "constrained:   {}", speed(c))?;
        match &self.output.unconstrained {
            Some(u) => writeln!(
                out,
                "unconstrained: {} (same prompts and token counts, no masks, one token per \
                 step)",
                speed(u)
            )?,
            None => writeln!(out, "unconstrained: not run (--no-compare)")?,
        }
        // Per-step figures leave out the prefill (the first forward call and first masks).
        let steps = |v: &[Duration]| v.get(1..).unwrap_or_default().to_vec();
        let (mm, mp) = mean_p99(&c.mask_times);
        let (em, ep) = mean_p99(&steps(&c.exposed));
        let (fm, _) = mean_p99(&steps(&c.forward));
        let (hm, _) = mean_p99(&c.host);
        let base_fwd = self
            .output
            .unconstrained
            .as_ref()
            .map(|u| mean_p99(&steps(&u.forward)).0);
        let base_host = self
            .output
            .unconstrained
            .as_ref()
            .map(|u| mean_p99(&u.host).0);
        let exposed_total: Duration = c.exposed.iter().sum();
        writeln!(
            out,
            "mask: mean {:.0} µs, p99 {:.0} µs per token ({} masks, on {} thread(s) beside \
             the forward pass)",
            us(mm),
            us(mp),
            c.mask_times.len(),
            seqs.len()
        )?;
        writeln!(
            out,
            "exposed mask time (waiting for the masks after the forward pass returned): mean \
             {:.1} µs, p99 {:.1} µs per step, {:.2} ms in all ({:.2} % of the run); forward \
             pass mean {:.2} ms per step{}",
            us(em),
            us(ep),
            ms(exposed_total),
            100.0 * exposed_total.as_secs_f64() / c.total.as_secs_f64().max(1e-9),
            ms(fm),
            base_fwd.map_or(String::new(), |b| format!(
                " (unconstrained: {:.2} ms)",
                ms(b)
            ))
        )?;
        writeln!(
            out,
            "host work per step (logits, mask, sampling, consume, jump-forward): mean {:.0} µs{}",
            us(hm),
            base_host.map_or(String::new(), |b| format!(
                " (unconstrained: {:.0} µs)",
                us(b)
            ))
        )?;
        let valid = seqs
            .iter()
            .zip(&self.validity)
            .filter(|(s, v)| s.stop.is_complete() && v.valid)
            .count();
        writeln!(out, "valid: {valid}/{} complete and valid", seqs.len())
    }
}

fn detail(v: &Validity) -> &str {
    v.detail.as_deref().unwrap_or("")
}

fn speed(s: &RunStats) -> String {
    format!(
        "{:.1} tok/s after a {:.0} ms prefill ({:.2} s in all)",
        s.decode_tokens_per_s(),
        ms(s.prefill),
        s.total.as_secs_f64()
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Mean and 99th percentile (nearest rank); zero for no samples.
fn mean_p99(xs: &[Duration]) -> (Duration, Duration) {
    if xs.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    let mut v = xs.to_vec();
    v.sort_unstable();
    let mean = v.iter().sum::<Duration>() / v.len() as u32;
    let rank = (v.len() * 99).div_ceil(100).max(1) - 1;
    (mean, v[rank])
}
