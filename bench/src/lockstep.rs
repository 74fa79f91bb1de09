//! `sieve concurrent --lockstep`: the matchers advance as a serving engine's batch does, one
//! batch call per decoding step. Each step computes the masks of every live matcher in one
//! call of sieve's batch runner (`sieve-runner`, the pool behind the C, C++ and Python batch
//! APIs: the calling thread and `threads - 1` workers, most expensive mask first, each
//! matcher writing its own row of one bitmask), then, on the calling thread, checks each
//! output's next token against its row and consumes it, as a host does between steps.
//!
//! The wall time is that of the batch calls only (what `bench/scripts/scaling.py` times in
//! Python), so the two can be compared without Python's per-call cost; the masks' own times
//! are taken inside the items.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use sieve_core::{Grammar, Matcher, Vocabulary};

/// One request of the batch: its matcher, its output, its row of the bitmask, its mask times.
struct Request<'a> {
    matcher: Matcher,
    tokens: &'a [u32],
    next: usize,
    row: Vec<u32>,
    times: Vec<Duration>,
    /// The last mask's error (set by the batch item, read by the host's part of the step).
    failed: Option<String>,
}

/// What [`run`] measured.
pub struct Lockstep {
    /// The batch calls' wall time, summed.
    pub wall: Duration,
    /// Every mask's time, taken inside its item.
    pub times: Vec<Duration>,
    /// With `digest`: a digest of every mask by request and step (taken between the calls,
    /// untimed), equal at 1 and N threads when the threads computed the same masks. Off by
    /// default: reading every row on the calling thread moves the rows into its cache, and
    /// the next step's writes on other cores then cost more (one schema × 64 requests at 2
    /// threads measured 1.04-1.10x with it, 1.5x without).
    pub digest: Option<u64>,
    /// The matchers, for their byte counts.
    pub matchers: Vec<Matcher>,
}

fn lock<'m, 'a>(r: &'m Mutex<Request<'a>>) -> MutexGuard<'m, Request<'a>> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs the requests `(grammar, output)` in lockstep on a pool of `threads` threads (see
/// the module docs), with a digest of the masks if `digest`. Every request ends with a mask
/// that must allow EOS.
///
/// # Errors
/// A mask fails, or a token of an output (or EOS at its end) is not allowed.
pub fn run(
    vocab: &Arc<Vocabulary>,
    requests: &[(&Grammar, &[u32])],
    threads: usize,
    digest: bool,
) -> Result<Lockstep> {
    let pool = sieve_runner::Pool::new(threads);
    let reqs: Vec<Mutex<Request<'_>>> = requests
        .iter()
        .map(|&(g, tokens)| {
            Mutex::new(Request {
                matcher: Matcher::new(g),
                tokens,
                next: 0,
                row: vec![0; vocab.mask_words()],
                times: Vec::new(),
                failed: None,
            })
        })
        .collect();
    let (mut wall, mut sum) = (Duration::ZERO, 0u64);
    let mut live: Vec<usize> = (0..reqs.len()).collect();
    while !live.is_empty() {
        let costs: Vec<_> = live
            .iter()
            .map(|&i| lock(&reqs[i]).matcher.mask_cost_hint())
            .collect();
        let expected = costs.iter().map(|c| c.typical_ns(vocab.mask_words())).sum();
        let order = sieve_runner::by_cost(&costs);
        let t = Instant::now();
        pool.run_expecting(&order, expected, &|k| {
            let mut r = lock(&reqs[live[k]]);
            let r = &mut *r;
            let t = Instant::now();
            if let Err(e) = r.matcher.compute_mask(&mut r.row) {
                r.failed = Some(format!("mask before token {}: {e}", r.next));
            }
            r.times.push(t.elapsed());
        })
        .map_err(|e| anyhow!("{e}"))?;
        wall += t.elapsed();
        // The host's part of the step: check and consume each request's next token.
        let mut failed = None;
        live.retain(|&i| {
            let mut r = lock(&reqs[i]);
            if digest {
                sum = sum.wrapping_add(mask_digest(i, r.next, &r.row));
            }
            advance(&mut r, vocab).unwrap_or_else(|e| {
                failed.get_or_insert(e);
                false
            })
        });
        if let Some(e) = failed {
            bail!("{e}");
        }
    }
    let mut times = Vec::new();
    let mut matchers = Vec::new();
    for r in reqs {
        let r = r.into_inner().unwrap_or_else(|e| e.into_inner());
        times.extend(r.times);
        matchers.push(r.matcher);
    }
    Ok(Lockstep {
        wall,
        times,
        digest: digest.then_some(sum),
        matchers,
    })
}

/// FNV-1a over request `i`, step `step` and the mask's words: summed over all masks, a
/// digest that does not depend on which thread computed which mask.
fn mask_digest(i: usize, step: usize, row: &[u32]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for w in [i as u32, step as u32].iter().chain(row) {
        h = (h ^ u64::from(*w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Checks the request's next token (EOS at the end) against its row and consumes it:
/// whether the request goes on, or why it failed.
fn advance(r: &mut Request<'_>, vocab: &Vocabulary) -> Result<bool, String> {
    if let Some(e) = r.failed.take() {
        return Err(e);
    }
    let allowed = |tok: u32| {
        r.row
            .get(tok as usize / 32)
            .is_some_and(|w| w >> (tok % 32) & 1 == 1)
    };
    let Some(&tok) = r.tokens.get(r.next) else {
        if !vocab.eos_tokens().iter().any(|&e| allowed(e)) {
            return Err("EOS not allowed at the end of the output".into());
        }
        return Ok(false);
    };
    if !allowed(tok) {
        return Err(format!(
            "token {} ({tok}) of the output is not allowed",
            r.next
        ));
    }
    r.matcher
        .consume_token(tok)
        .map_err(|e| format!("token {} ({tok}): {e}", r.next))?;
    r.next += 1;
    Ok(true)
}
