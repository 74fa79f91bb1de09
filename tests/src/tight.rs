//! The adversarial suite under a small memory budget: every case compiled again with
//! `max_memory_bytes` = [`TIGHT_BUDGET`] and walked a few masks, all under one
//! [`crate::heap::peak_heap`]. The run must end in success or a typed error, each step within
//! [`STEP`], and the peak heap within the budget plus [`SLACK`] (the constant documented on
//! `Limits::max_memory_bytes`), except the [`KNOWN_GAPS`], held to ceilings.

use std::sync::Arc;
use std::time::Duration;

use sieve_core::{Grammar, GrammarError, Limits, Matcher, MatcherError, Vocabulary};

pub use crate::heap::SLACK;
use crate::heap::{cpu_timed, peak_heap};
use crate::{Rng, allowed_tokens};

/// The small budget of the acceptance list (issue 15): 256 KiB.
pub const TIGHT_BUDGET: usize = 256 << 10;
/// The bound on compiling and on each mask or token.
pub const STEP: Duration = Duration::from_secs(1);

/// KNOWN GAP (issue 15 stays open): cases whose peak heap under the 256 KiB budget exceeds
/// the bound, each with the ceiling (KiB, measured peak + 25%) it must stay under. Every one
/// of them is the JSON compile's *front end*, whose transient structures (parsed schema
/// values and their rewrites) are not yet charged to `Limits::max_memory_bytes` (the Lark
/// front end, regex parsing and the grammar IR are: their cases left this list). A case that
/// now fits the bound fails the test until it is taken off this list.
pub const KNOWN_GAPS: &[(&str, usize)] = &[
    // The JSON compiler's IR of deep or wide schemas, and schema rewriting (if/then/else
    // merging, negation) before compile fuel or the nesting limit stops it.
    ("63 items", 656),
    ("31 nested properties", 496),
    ("31 nested oneOf", 736),
    ("50 patterns", 464),
    ("7 nested if-in-if", 34000),
    ("10 nested if-in-if", 73328),
    ("recursive not/oneOf", 2928),
    // Parsed values of megabyte sources (the source itself is the caller's).
    ("100k enum", 50048),
    ("1 MB const", 3856),
];

/// What [`tight_run`] saw.
#[derive(Debug)]
pub struct TightRun {
    /// Peak heap of compile, matcher and masks.
    pub peak: usize,
    /// The slowest of compile and each step (this thread's CPU time where available).
    pub slowest: Duration,
    /// How it ended: `compiled, N masks`, or the typed error.
    pub outcome: String,
    /// A matcher error that is not a budget error (a bug).
    pub untyped: Option<String>,
}

/// Compile with `max_memory_bytes` = [`TIGHT_BUDGET`] and walk up to `masks` masks, each
/// followed by a seeded random allowed text token; all measured by one `peak_heap`.
pub fn tight_run(
    vocab: &Arc<Vocabulary>,
    masks: usize,
    compile: impl FnOnce(&Limits) -> Result<Grammar, GrammarError>,
) -> TightRun {
    let limits = Limits {
        max_memory_bytes: TIGHT_BUDGET,
        ..Limits::default()
    };
    let (run, used) = peak_heap(|| {
        let (g, mut slowest) = cpu_timed(|| compile(&limits));
        let g = match g {
            Ok(g) => g,
            Err(e) => {
                return TightRun {
                    peak: 0,
                    slowest,
                    outcome: format!("{:?}", e.kind),
                    untyped: None,
                };
            }
        };
        let mut m = Matcher::new(&g);
        let mut mask = vec![0u32; m.mask_words()];
        let mut rng = Rng::new(11);
        let mut outcome = format!("compiled, {masks} masks");
        let mut untyped = None;
        for step in 0..masks {
            let (r, took) = cpu_timed(|| m.compute_mask(&mut mask));
            slowest = slowest.max(took);
            if let Err(e) = r {
                outcome = format!("mask {step}: {e}");
                untyped = (!matches!(e, MatcherError::Limit(_))).then(|| format!("{e:?}"));
                break;
            }
            let text: Vec<u32> = allowed_tokens(&mask)
                .into_iter()
                .filter(|&t| !vocab.is_special(t))
                .collect();
            if text.is_empty() {
                outcome = format!("compiled, ended after {step} masks");
                break;
            }
            let tok = text[rng.below(text.len())];
            let (r, took) = cpu_timed(|| m.consume_token(tok));
            slowest = slowest.max(took);
            if let Err(e) = r {
                outcome = format!("token {step}: {e}");
                untyped = Some(format!("consuming allowed token {tok}: {e:?}"));
                break;
            }
        }
        drop(m);
        drop(g);
        TightRun {
            peak: 0,
            slowest,
            outcome,
            untyped,
        }
    });
    TightRun {
        peak: used.peak,
        ..run
    }
}

/// The failures of `run` (empty when it holds): a heap over the bound, a slow step in an
/// optimized build, an untyped matcher error.
pub fn tight_failures(name: &str, run: &TightRun) -> Vec<String> {
    let bound = TIGHT_BUDGET + SLACK;
    eprintln!(
        "{name} [256 KiB]: {}, peak heap {} KiB (bound {} KiB), slowest step {:?}",
        run.outcome,
        run.peak >> 10,
        bound >> 10,
        run.slowest
    );
    let mut out = Vec::new();
    let gap = KNOWN_GAPS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, kib)| kib);
    match gap {
        None if run.peak > bound => out.push(format!(
            "{name} [256 KiB]: peak heap {} KiB > {} KiB ({})",
            run.peak >> 10,
            bound >> 10,
            run.outcome
        )),
        None => {}
        Some(_) if run.peak <= bound => out.push(format!(
            "{name} [256 KiB]: now within the bound ({} KiB): take it off KNOWN_GAPS",
            run.peak >> 10
        )),
        Some(ceiling) if run.peak > ceiling << 10 => out.push(format!(
            "{name} [256 KiB]: known gap grew: peak heap {} KiB > its ceiling {ceiling} KiB",
            run.peak >> 10
        )),
        Some(ceiling) => eprintln!(
            "KNOWN GAP: {name} [256 KiB]: peak heap {} KiB (bound {} KiB, ceiling {ceiling} KiB): \
             a front end's transient heap is not charged to max_memory_bytes",
            run.peak >> 10,
            bound >> 10
        ),
    }
    if !cfg!(debug_assertions) && run.slowest >= STEP {
        out.push(format!("{name} [256 KiB]: a step took {:?}", run.slowest));
    }
    if let Some(u) = &run.untyped {
        out.push(format!("{name} [256 KiB]: untyped error {u}"));
    }
    out
}
