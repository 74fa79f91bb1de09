//! The generation loop: a batch of sequences decoded by llama.cpp, each under its own sieve
//! [`Matcher`], with the next masks computed while the forward pass runs.
//!
//! One step, for every sequence still running:
//! 1. the logits of its last position are copied out and the mask computed during the
//!    previous forward pass (step 4) is applied with `sieve_kernels::apply_mask_f32`;
//! 2. a token is sampled and consumed into the matcher; with jump-forward, the tokens the
//!    grammar then forces (`Matcher::compute_ff_tokens_with`, tokenized canonically by the
//!    model's tokenizer) are consumed too, with no sampling step;
//! 3. the sampled token and the forced ones go into one batch (one multi-token segment per
//!    sequence) for the next forward pass;
//! 4. on `std::thread::scope` threads, one per sequence, each matcher computes its next
//!    mask while the main thread runs the forward pass. The time the main thread then
//!    still waits for the masks is the *exposed* mask time.
//!
//! A sequence stops at EOS (allowed by the mask only where the grammar accepts), when the
//! grammar is complete and allows nothing but EOS, or at `max_tokens` (sampled plus forced).
//! The first forward pass is the prompt (prefill), overlapped the same way with the first
//! mask. The unconstrained baseline runs the same prompts through the same loop without
//! masks for as many single-token steps as each constrained sequence produced tokens, after
//! a warm-up decode so that neither run pays llama.cpp's first-decode setup.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::token::LlamaToken;
use sieve_core::{Grammar, Matcher, MatcherError, Vocabulary};

use crate::model::{Model, backend};
use crate::pool::{Job, MaskPool};
use crate::sample::{Rng, Sampling, sample};

/// Most sequences in one run (llama.cpp's own limit is 256 sequence ids; each sequence
/// also costs a mask thread per step).
pub const MAX_SEQUENCES: usize = 64;

/// Settings of one `generate` run.
#[derive(Debug, Clone)]
pub struct GenerateConfig {
    /// Most tokens per sequence (sampled plus forced).
    pub max_tokens: usize,
    /// Greedy or temperature/top-p.
    pub sampling: Sampling,
    /// Seed of sequence 0; sequence `i` uses `seed + i`.
    pub seed: u64,
    /// Append grammar-forced tokens without sampling them.
    pub jump_forward: bool,
    /// Narrow masks so a completion stays reachable within the remaining tokens.
    pub budget: bool,
    /// Also run the prompts unconstrained for the same number of tokens (timing baseline).
    pub compare: bool,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// llama.cpp threads (default: [`default_threads`]).
    pub threads: Option<usize>,
    /// A reasoning phase and/or triggers before the grammar applies (a lazy grammar, see
    /// `core/docs/gate.md`); built for the model's vocabulary.
    pub gate: Option<sieve_core::Gate>,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            max_tokens: 256,
            sampling: Sampling::Greedy,
            seed: 0,
            jump_forward: true,
            budget: false,
            compare: true,
            progress: false,
            threads: None,
            gate: None,
        }
    }
}

/// Why a sequence ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model chose an EOS token (allowed only where the grammar accepts).
    Eos,
    /// The grammar accepts and allows no further token but EOS.
    Complete,
    /// `max_tokens` reached with the output complete (the grammar accepts it; it could
    /// have gone on, e.g. with whitespace or more items).
    MaxTokensComplete,
    /// `max_tokens` reached before the output was complete.
    MaxTokens,
}

impl StopReason {
    /// The output is a complete sentence of the grammar.
    pub fn is_complete(self) -> bool {
        matches!(
            self,
            StopReason::Eos | StopReason::Complete | StopReason::MaxTokensComplete
        )
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Eos => "EOS",
            StopReason::Complete => "grammar complete",
            StopReason::MaxTokensComplete => "max tokens, complete",
            StopReason::MaxTokens => "max tokens",
        })
    }
}

/// One generated sequence.
#[derive(Debug, Clone)]
pub struct SequenceOutput {
    /// Index of its prompt.
    pub prompt: usize,
    /// Its sampler's seed.
    pub seed: u64,
    /// Generated tokens (sampled and forced, no EOS).
    pub tokens: Vec<u32>,
    /// Their bytes.
    pub text: Vec<u8>,
    /// Why it ended.
    pub stop: StopReason,
    /// Tokens appended by jump-forward (no sampling step).
    pub forced: usize,
}

/// Timings of one pass of the loop over all sequences.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    /// Tokens produced over all sequences (sampled plus forced; no EOS).
    pub tokens: usize,
    /// Wall time of the whole run (prefill included).
    pub total: Duration,
    /// Wall time of the first forward pass (the prompts) and the first masks.
    pub prefill: Duration,
    /// Forward calls after the prefill.
    pub steps: usize,
    /// Every mask computation, in any order.
    pub mask_times: Vec<Duration>,
    /// Per forward call: time spent waiting for the masks after the forward pass returned.
    pub exposed: Vec<Duration>,
    /// Per forward call: the forward pass.
    pub forward: Vec<Duration>,
    /// Per forward call: host work after it (copying logits, applying masks, sampling,
    /// consuming, jump-forward) before the next call can start.
    pub host: Vec<Duration>,
}

impl RunStats {
    /// Tokens per second after the prefill.
    pub fn decode_tokens_per_s(&self) -> f64 {
        let t = self.total.saturating_sub(self.prefill).as_secs_f64();
        if t > 0.0 { self.tokens as f64 / t } else { 0.0 }
    }
}

/// What a `generate` run produced and measured.
#[derive(Debug, Clone)]
pub struct GenerateOutput {
    /// One entry per sequence.
    pub sequences: Vec<SequenceOutput>,
    /// The constrained run.
    pub constrained: RunStats,
    /// The unconstrained baseline (with [`GenerateConfig::compare`]).
    pub unconstrained: Option<RunStats>,
    /// llama.cpp threads used.
    pub threads: usize,
}

/// One sequence's state in the loop.
struct Seq {
    matcher: Option<Matcher>,
    mask: Vec<u32>,
    mask_result: Option<(Result<(), MatcherError>, Duration)>,
    logits: Vec<f32>,
    rng: Rng,
    out: Vec<u32>,
    forced: usize,
    /// Tokens to feed in the next forward call, and the position of the first.
    pending: Vec<u32>,
    pos: i32,
    /// Index in the batch of the row whose logits come next.
    row: i32,
    stop: Option<StopReason>,
    /// Tokens to produce before stopping at [`StopReason::MaxTokens`].
    target: usize,
}

impl Seq {
    /// An unconstrained sequence about to be fed `prompt`, stopping after `target` tokens.
    fn new(prompt: &[u32], seed: u64, target: usize) -> Seq {
        Seq {
            matcher: None,
            mask: Vec::new(),
            mask_result: None,
            logits: Vec::new(),
            rng: Rng::new(seed),
            out: Vec::new(),
            forced: 0,
            pending: prompt.to_vec(),
            pos: 0,
            row: 0,
            stop: None,
            target,
        }
    }
}

/// Runs `prompts` (token ids, chat template applied) under `grammar`, one sequence per
/// prompt; `seeds[i]` seeds sequence `i`.
///
/// # Errors
/// The prompts do not fit the model's context, llama.cpp fails, or a matcher fails (a
/// budget run into, or no token allowed).
pub fn generate(
    model: &Model,
    grammar: &Grammar,
    prompts: &[Vec<u32>],
    seeds: &[u64],
    cfg: &GenerateConfig,
) -> Result<GenerateOutput> {
    if prompts.is_empty() || prompts.len() != seeds.len() {
        bail!("one seed per prompt, and at least one prompt");
    }
    if prompts.iter().any(Vec::is_empty) {
        bail!("empty prompt");
    }
    if prompts.len() > MAX_SEQUENCES {
        bail!(
            "{} sequences: at most {MAX_SEQUENCES} at once",
            prompts.len()
        );
    }
    if cfg.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    let vocab = model.vocab.clone();
    let longest = prompts.iter().map(Vec::len).max().unwrap_or(0);
    let per_seq = longest.saturating_add(cfg.max_tokens).saturating_add(8);
    let train = model.llama.n_ctx_train() as usize;
    if per_seq > train {
        bail!(
            "prompt ({longest} tokens) plus --max-tokens ({}) exceed the model's context of \
             {train} tokens",
            cfg.max_tokens
        );
    }
    let n_seqs = prompts.len();
    let n_ctx = per_seq
        .checked_mul(n_seqs)
        .and_then(|n| u32::try_from(n).ok())
        .context("context too large")?;
    let threads = cfg.threads.unwrap_or_else(default_threads);
    let threads = i32::try_from(threads.max(1)).unwrap_or(1);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_ctx)
        .with_n_seq_max(u32::try_from(n_seqs).context("too many sequences")?)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = model
        .llama
        .new_context(backend()?, params)
        .map_err(|e| anyhow!("creating the llama.cpp context: {e}"))?;
    let mut batch = LlamaBatch::new(n_ctx as usize, i32::try_from(n_seqs)?);

    if cfg.compare {
        // llama.cpp's first decode in a context sets up its compute buffers (tens of ms):
        // without a warm-up the run that goes first, the constrained one, pays it alone.
        warm_up(&mut ctx, &mut batch, &prompts[0])?;
    }
    let bar = progress_bar(cfg.progress, n_seqs * cfg.max_tokens);
    let mut seqs: Vec<Seq> = prompts
        .iter()
        .zip(seeds)
        .map(|(p, &seed)| {
            let mut s = Seq::new(p, seed, cfg.max_tokens);
            s.matcher = Some(match &cfg.gate {
                Some(gate) => Matcher::with_gate(grammar, gate),
                None => Matcher::new(grammar),
            });
            s.mask = vec![0; vocab.mask_words()];
            s
        })
        .collect();
    if cfg.jump_forward {
        // Text the grammar forces before the first token goes in with the prompt.
        for s in &mut seqs {
            jump_forward(model, s, cfg.budget, &bar)?;
        }
    }
    // One mask worker per sequence, up to the cores: a batch's masks are computed in
    // parallel, all of them while the forward pass runs.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = MaskPool::new(n_seqs.min(cores));
    let env = LoopEnv {
        model,
        vocab: &vocab,
        cfg,
        pool: &pool,
        bar: &bar,
    };
    let constrained =
        run_loop(&env, &mut ctx, &mut batch, &mut seqs).context("constrained generation")?;
    bar.finish_and_clear();

    let sequences: Vec<SequenceOutput> = seqs
        .iter()
        .enumerate()
        .map(|(i, s)| SequenceOutput {
            prompt: i,
            seed: seeds[i],
            tokens: s.out.clone(),
            text: vocab.tokens_to_bytes(&s.out),
            stop: s.stop.unwrap_or(StopReason::MaxTokens),
            forced: s.forced,
        })
        .collect();

    let unconstrained = if cfg.compare {
        ctx.clear_kv_cache();
        let mut base: Vec<Seq> = prompts
            .iter()
            .zip(seeds)
            .zip(&sequences)
            .map(|((p, &seed), done)| Seq::new(p, seed, done.tokens.len().max(1)))
            .collect();
        let hidden = indicatif::ProgressBar::hidden();
        let mut base_cfg = cfg.clone();
        base_cfg.jump_forward = false;
        Some(
            run_loop(
                &LoopEnv {
                    model,
                    vocab: &vocab,
                    cfg: &base_cfg,
                    pool: &pool,
                    bar: &hidden,
                },
                &mut ctx,
                &mut batch,
                &mut base,
            )
            .context("unconstrained baseline")?,
        )
    } else {
        None
    };
    Ok(GenerateOutput {
        sequences,
        constrained,
        unconstrained,
        threads: threads as usize,
    })
}

/// Decodes `prompt` once and forgets it.
fn warm_up(ctx: &mut LlamaContext<'_>, batch: &mut LlamaBatch<'_>, prompt: &[u32]) -> Result<()> {
    batch.clear();
    for (k, &t) in prompt.iter().enumerate() {
        let t = i32::try_from(t).context("token id out of range")?;
        batch
            .add(
                LlamaToken(t),
                i32::try_from(k)?,
                &[0],
                k + 1 == prompt.len(),
            )
            .map_err(|e| anyhow!("filling the batch: {e}"))?;
    }
    ctx.decode(batch)
        .map_err(|e| anyhow!("llama.cpp decode failed: {e}"))?;
    ctx.clear_kv_cache();
    Ok(())
}

/// llama.cpp threads when none are asked for: the available parallelism less the cores
/// other processes keep busy (the 1-minute load average, rounded), at least 1.
///
/// ggml's threads meet at spinning barriers many times per forward pass, so one thread
/// descheduled by a busy neighbour stalls the rest for a time slice. Measured on the 2-core
/// machine of bench/perf.md (2026-11-26) with a `cargo test` running beside it: 2 threads
/// took 1,349 ms per decode step, 1 thread 10.5 ms; idle, 2 threads take 6.3 ms.
pub fn default_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    let busy = load.round().clamp(0.0, cores as f64) as usize;
    cores.saturating_sub(busy).max(1)
}

/// Consumes the tokens the grammar forces now into `s` (up to its target) and queues them.
/// In budget mode the forced tokens are taken only if a completion within the budget is
/// still known after them (the host tokenizer's segmentation of forced text may take more
/// tokens than the completion budget mode planned with); otherwise the model samples them
/// under the budget mask.
fn jump_forward(
    model: &Model,
    s: &mut Seq,
    budget: bool,
    bar: &indicatif::ProgressBar,
) -> Result<()> {
    let Some(m) = s.matcher.as_mut() else {
        return Ok(());
    };
    let mut tokenize = |text: &[u8]| Some(model.encode_text(text));
    let mut ff = m
        .compute_ff_tokens_with(&mut tokenize)
        .map_err(|e| anyhow!("computing forced tokens: {e}"))?;
    ff.truncate(s.target.saturating_sub(s.out.len()));
    if ff.is_empty() {
        return Ok(());
    }
    m.consume_tokens(&ff)
        .map_err(|e| anyhow!("consuming forced tokens {ff:?}: {e}"))?;
    if budget {
        let left = s.target.saturating_sub(s.out.len() + ff.len());
        let fits = matches!(m.completion_tokens(), Ok(Some(n)) if n <= left);
        if !fits {
            m.rollback(ff.len())
                .map_err(|e| anyhow!("rolling back forced tokens: {e}"))?;
            return Ok(());
        }
    }
    s.forced += ff.len();
    s.out.extend_from_slice(&ff);
    s.pending.extend_from_slice(&ff);
    bar.inc(ff.len() as u64);
    if s.out.len() >= s.target {
        s.stop = Some(at_target(s.matcher.as_mut()));
    }
    Ok(())
}

/// Why a sequence that reached its token limit ended: complete if its matcher accepts
/// (an unconstrained sequence never is).
fn at_target(m: Option<&mut Matcher>) -> StopReason {
    let accepting = m.is_some_and(|m| m.is_accepting());
    if accepting {
        StopReason::MaxTokensComplete
    } else {
        StopReason::MaxTokens
    }
}

/// The next mask of one matcher. `remaining` = tokens left in the budget, counting the one
/// this mask is for.
pub(crate) fn next_mask(
    m: &mut Matcher,
    mask: &mut [u32],
    remaining: Option<usize>,
) -> Result<(), MatcherError> {
    match remaining {
        // Budget mode (core/docs/budget.md). Its searches run within one step's budgets; a
        // search that runs out is not sticky, and the plain mask is used for this step.
        Some(remaining) => match m.compute_mask_within(mask, remaining) {
            Err(MatcherError::Limit(_)) if m.error().is_none() => m.compute_mask(mask),
            r => r,
        },
        None => m.compute_mask(mask),
    }
}

/// True when the mask allows no token but EOS.
fn only_eos_allowed(mask: &[u32], eos: &[u32]) -> bool {
    mask.iter().enumerate().all(|(w, &bits)| {
        let mut bits = bits;
        for &e in eos {
            if e as usize / 32 == w {
                bits &= !(1 << (e % 32));
            }
        }
        bits == 0
    })
}

/// What one run of the loop reads.
struct LoopEnv<'a> {
    model: &'a Model,
    vocab: &'a Vocabulary,
    cfg: &'a GenerateConfig,
    pool: &'a MaskPool,
    bar: &'a indicatif::ProgressBar,
}

fn run_loop(
    env: &LoopEnv<'_>,
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'_>,
    seqs: &mut [Seq],
) -> Result<RunStats> {
    let LoopEnv {
        model,
        vocab,
        cfg,
        pool,
        bar,
    } = *env;
    let start = Instant::now();
    let mut stats = RunStats::default();
    let n_vocab = vocab.vocab_size();
    loop {
        // Sequences already at their target (forced text filled them) take no more steps;
        // one still holding a pending segment from a finished step needs no forward call.
        if seqs.iter().all(|s| s.stop.is_some()) {
            break;
        }
        batch.clear();
        let mut rows = 0i32;
        for (i, s) in seqs.iter_mut().enumerate() {
            if s.stop.is_some() {
                continue;
            }
            let n = s.pending.len();
            for (k, &t) in s.pending.iter().enumerate() {
                let t = i32::try_from(t).context("token id out of range")?;
                batch
                    .add(LlamaToken(t), s.pos, &[i32::try_from(i)?], k + 1 == n)
                    .map_err(|e| anyhow!("filling the batch: {e}"))?;
                s.pos += 1;
            }
            rows += i32::try_from(n)?;
            s.row = rows - 1;
            s.pending.clear();
        }
        let mut sent = 0;
        for (i, s) in seqs.iter_mut().enumerate() {
            if s.stop.is_some() {
                continue;
            }
            let remaining = cfg.budget.then(|| s.target.saturating_sub(s.out.len()));
            if let Some(matcher) = s.matcher.take() {
                pool.submit(Job {
                    seq: i,
                    matcher,
                    mask: std::mem::take(&mut s.mask),
                    remaining,
                })?;
                sent += 1;
            }
        }
        let t0 = Instant::now();
        let decoded = ctx.decode(batch);
        let forward = t0.elapsed();
        let t1 = Instant::now();
        for _ in 0..sent {
            let done = pool.next_done()?;
            let s = &mut seqs[done.seq];
            s.matcher = Some(done.matcher);
            s.mask = done.mask;
            s.mask_result = Some((done.result, done.elapsed));
        }
        let exposed = t1.elapsed();
        if let Err(e) = decoded {
            bail!("llama.cpp decode failed: {e}");
        }
        if stats.forward.is_empty() {
            stats.prefill = start.elapsed();
        } else {
            stats.steps += 1;
        }
        stats.forward.push(forward);
        stats.exposed.push(exposed);
        let host = Instant::now();

        for s in seqs.iter_mut() {
            if s.stop.is_some() {
                continue;
            }
            let logits = ctx.get_logits_ith(s.row);
            s.logits.clear();
            s.logits
                .extend_from_slice(&logits[..n_vocab.min(logits.len())]);
            if let Some(m) = s.matcher.as_mut() {
                let (r, t) = s
                    .mask_result
                    .take()
                    .context("the mask thread left no result")?;
                r.map_err(|e| anyhow!("computing the mask after {} tokens: {e}", s.out.len()))?;
                stats.mask_times.push(t);
                if m.is_accepting() && only_eos_allowed(&s.mask, vocab.eos_tokens()) {
                    s.stop = Some(StopReason::Complete);
                    continue;
                }
                sieve_kernels::apply_mask_f32(&mut s.logits, &s.mask);
            }
            let Some(token) = sample(&s.logits, cfg.sampling, &mut s.rng) else {
                bail!(
                    "dead end after {} tokens: the mask allows nothing",
                    s.out.len()
                );
            };
            if let Some(m) = s.matcher.as_mut() {
                m.consume_token(token).map_err(|e| {
                    anyhow!("consuming token {token} after {} tokens: {e}", s.out.len())
                })?;
                if vocab.eos_tokens().contains(&token) {
                    s.stop = Some(StopReason::Eos);
                    continue;
                }
            }
            s.out.push(token);
            s.pending.push(token);
            bar.inc(1);
            if s.out.len() >= s.target {
                s.stop = Some(at_target(s.matcher.as_mut()));
            } else if cfg.jump_forward {
                jump_forward(model, s, cfg.budget, bar)?;
            }
        }
        stats.host.push(host.elapsed());
    }
    stats.total = start.elapsed();
    stats.tokens = seqs.iter().map(|s| s.out.len()).sum();
    Ok(stats)
}

fn progress_bar(enabled: bool, len: usize) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    let style =
        indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} tokens {elapsed} {msg}");
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_eos() {
        let mut mask = vec![0u32; 3];
        mask[0] = 1 << 2;
        assert!(only_eos_allowed(&mask, &[2, 0]));
        mask[2] = 1;
        assert!(!only_eos_allowed(&mask, &[2, 0]));
        assert!(only_eos_allowed(&[0, 0], &[]));
    }
}
