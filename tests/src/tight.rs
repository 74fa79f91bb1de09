//! The adversarial suite under a small memory budget: every case compiled again with
//! `max_memory_bytes` = [`TIGHT_BUDGET`] and walked a few masks, all under one
//! [`crate::heap::peak_heap`]. The run must end in success or a typed error, each step within
//! [`STEP_FUEL`] (a count of work; times are printed, not checked), and the peak heap within
//! the budget plus [`SLACK`] (the constant documented on
//! `Limits::max_memory_bytes`). There are no exceptions: every front end charges its
//! transient structures to the budget (see `CompileBudget::charge`).

use std::sync::Arc;
use std::time::Duration;

use sieve_core::{Grammar, GrammarError, Limits, Matcher, MatcherError, Vocabulary};

pub use crate::heap::SLACK;
use crate::heap::{cpu_timed, peak_heap};
use crate::{Rng, allowed_tokens};

/// The small budget of the acceptance list (issue 15): 256 KiB.
pub const TIGHT_BUDGET: usize = 256 << 10;
/// The most fuel one mask or token of a tight run may spend (`MaskStats::max_step_fuel`, in
/// the units of `Limits::fuel_per_mask`): about twice the largest of every tight run of the
/// JSON and Lark adversarial suites on 2026-11-28 (14,252: `Lark A: /(.*a.*b){20}/`; see
/// `tight_failures`' report lines). The compile is bounded by `Limits::compile_fuel` (its
/// count is reported).
pub const STEP_FUEL: u64 = 30_000;

/// What [`tight_run`] saw.
#[derive(Debug)]
pub struct TightRun {
    /// Peak heap of compile, matcher and masks.
    pub peak: usize,
    /// The slowest of compile and each step (this thread's CPU time where available):
    /// reported, not checked.
    pub slowest: Duration,
    /// The most fuel one mask or token spent (checked against [`STEP_FUEL`]).
    pub max_step_fuel: u64,
    /// The compile's fuel (`Grammar::compile_fuel_spent`; 0 when it failed).
    pub compile_fuel: u64,
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
                    max_step_fuel: 0,
                    compile_fuel: 0,
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
        let max_step_fuel = m.stats().max_step_fuel;
        let compile_fuel = g.compile_fuel_spent();
        drop(m);
        drop(g);
        TightRun {
            peak: 0,
            slowest,
            max_step_fuel,
            compile_fuel,
            outcome,
            untyped,
        }
    });
    TightRun {
        peak: used.peak,
        ..run
    }
}

/// The failures of `run` (empty when it holds): a heap over the bound, a step over
/// [`STEP_FUEL`], an untyped matcher error.
pub fn tight_failures(name: &str, run: &TightRun) -> Vec<String> {
    let bound = TIGHT_BUDGET + SLACK;
    eprintln!(
        "{name} [256 KiB]: {}, peak heap {} KiB (bound {} KiB), compile fuel {}, largest \
         step fuel {}, slowest step {:?}",
        run.outcome,
        run.peak >> 10,
        bound >> 10,
        run.compile_fuel,
        run.max_step_fuel,
        run.slowest
    );
    let mut out = Vec::new();
    if run.peak > bound {
        out.push(format!(
            "{name} [256 KiB]: peak heap {} KiB > {} KiB ({})",
            run.peak >> 10,
            bound >> 10,
            run.outcome
        ));
    }
    if run.max_step_fuel > STEP_FUEL {
        out.push(format!(
            "{name} [256 KiB]: a step spent {} fuel, over {STEP_FUEL}",
            run.max_step_fuel
        ));
    }
    if let Some(u) = &run.untyped {
        out.push(format!("{name} [256 KiB]: untyped error {u}"));
    }
    out
}
