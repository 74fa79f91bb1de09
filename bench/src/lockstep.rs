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

use std::sync::{Arc, Mutex};
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
    failed: Option<String>,
}

/// What [`run`] measured.
pub struct Lockstep {
    /// The batch calls' wall time, summed.
    pub wall: Duration,
    /// Every mask's time, taken inside its item.
    pub times: Vec<Duration>,
    /// The matchers, for their byte counts.
    pub matchers: Vec<Matcher>,
}

/// Runs the requests `(grammar, output)` in lockstep on a pool of `threads` threads (see
/// the module docs). Every request ends with a mask that must allow EOS.
///
/// # Errors
/// A mask fails, or a token of an output (or EOS at its end) is not allowed.
pub fn run(
    vocab: &Arc<Vocabulary>,
    requests: &[(&Grammar, &[u32])],
    threads: usize,
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
    let lock = |i: usize| reqs[i].lock().unwrap_or_else(|e| e.into_inner());
    let mut wall = Duration::ZERO;
    let mut live: Vec<usize> = (0..reqs.len()).collect();
    while !live.is_empty() {
        let costs: Vec<_> = live
            .iter()
            .map(|&i| lock(i).matcher.mask_cost_hint())
            .collect();
        let expected = costs.iter().map(|c| c.typical_ns(vocab.mask_words())).sum();
        let order = sieve_runner::by_cost(&costs);
        let t = Instant::now();
        pool.run_expecting(&order, expected, &|k| {
            let mut r = lock(live[k]);
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
        live.retain(|&i| advance(&mut lock(i), vocab).unwrap_or(false));
        if let Some(e) = reqs.iter().find_map(|r| lock_of(r).failed.clone()) {
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
        matchers,
    })
}

fn lock_of<'m, 'a>(r: &'m Mutex<Request<'a>>) -> std::sync::MutexGuard<'m, Request<'a>> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// Checks the request's next token (EOS at the end) against its row and consumes it; false
/// when the request has finished (or failed: `failed` says why).
fn advance(r: &mut Request<'_>, vocab: &Vocabulary) -> Option<bool> {
    if r.failed.is_some() {
        return None;
    }
    let allowed = |tok: u32| {
        r.row
            .get(tok as usize / 32)
            .is_some_and(|w| w >> (tok % 32) & 1 == 1)
    };
    let Some(&tok) = r.tokens.get(r.next) else {
        if !vocab.eos_tokens().iter().any(|&e| allowed(e)) {
            r.failed = Some("EOS not allowed at the end of the output".into());
        }
        return Some(false);
    };
    if !allowed(tok) {
        r.failed = Some(format!(
            "token {} ({tok}) of the output is not allowed",
            r.next
        ));
        return None;
    }
    if let Err(e) = r.matcher.consume_token(tok) {
        r.failed = Some(format!("token {} ({tok}): {e}", r.next));
        return None;
    }
    r.next += 1;
    Some(true)
}
