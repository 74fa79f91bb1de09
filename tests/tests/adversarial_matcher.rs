//! Per-mask work is bounded for every grammar: ambiguous grammars walked 2,000 tokens, a
//! 20,000-alternative grammar, and 10,000-deep nesting in the output. Each mask and each
//! token spends at most a fixed ceiling of fuel (a count of work, deterministic; times are
//! printed, not checked), and the walk either finishes or
//! ends in a typed limit error (`Fuel`, `ItemsPerMask`, `ItemsPerRow`, `Memory`); a run
//! under a 16 MiB `max_memory_bytes` keeps its peak heap within the budget plus the
//! documented constant (a counting allocator measures it).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sieve_core::{Grammar, LimitKind, Limits, Matcher, MatcherError, Vocabulary};
use sieve_tests::heap::{counting_installed, peak_heap};
use sieve_tests::{Rng, allowed_tokens, synthetic_vocab};

#[global_allocator]
static ALLOC: sieve_tests::heap::Counting = sieve_tests::heap::Counting;

/// Ceilings on the fuel one mask or one token spends (`MaskStats::max_step_fuel`, a count of
/// Earley and lexer work in the units of `Limits::fuel_per_mask`, the same on every machine),
/// about twice today's largest step of each test (2026-11-28): a step whose work grew to
/// this much is a regression. Times are printed, not checked (they belong in benchmarks).
/// Ambiguous grammars: largest step 3,748,250 (`s: s s s | s s | a | b`, 16 MiB).
const AMBIGUOUS_FUEL: u64 = 8_000_000;
/// 20,000 alternatives: largest step 1,037,441 (the recursive ones over GPT-2, cold).
const ALTERNATIVES_FUEL: u64 = 2_000_000;
/// 10,000-deep nesting: largest step 529.
const NESTING_FUEL: u64 = 1_200;
/// Sizes are cut by ten in unoptimized builds.
const SCALE: usize = if cfg!(debug_assertions) { 10 } else { 1 };

use sieve_tests::heap::SLACK;

fn shared_dir() -> PathBuf {
    match std::env::var_os("SIEVE_SHARED") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}

/// The GPT-2 vocabulary from the shared folder, or `None` (with a SKIP line).
fn gpt2() -> Option<Arc<Vocabulary>> {
    let path = shared_dir().join("tokenizers/gpt2.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(Arc::new(
            Vocabulary::from_tokenizer_json(&text).expect("gpt2.json loads"),
        )),
        Err(_) => {
            sieve_tests::skip_missing_data(&format!(
                "{} not found (set SIEVE_SHARED)",
                path.display()
            ));
            None
        }
    }
}

/// How a walk ended.
#[derive(Debug)]
struct Walk {
    steps: usize,
    /// The most fuel one mask or token spent (`MaskStats::max_step_fuel`): the work bound
    /// checked, a count.
    max_step_fuel: u64,
    /// The slowest mask or token: reported, not checked (times belong in benchmarks).
    slowest: Duration,
    limit: Option<LimitKind>,
}

fn limit(e: MatcherError) -> LimitKind {
    match e {
        MatcherError::Limit(k) => k,
        e => panic!("not a limit error: {e}"),
    }
}

/// Walk up to `steps` tokens, a mask before each: `pick` chooses among the allowed tokens
/// (EOS left out). Times every mask and token.
fn walk(g: &Grammar, steps: usize, pick: &mut dyn FnMut(&[u32]) -> u32) -> Walk {
    let mut m = Matcher::new(g);
    let mut mask = vec![0u32; m.mask_words()];
    let eos = g.vocab().eos_tokens().to_vec();
    let mut slowest = Duration::ZERO;
    for step in 0..steps {
        let t0 = Instant::now();
        let r = m.compute_mask(&mut mask);
        slowest = slowest.max(t0.elapsed());
        if let Err(e) = r {
            return Walk {
                steps: step,
                max_step_fuel: m.stats().max_step_fuel,
                slowest,
                limit: Some(limit(e)),
            };
        }
        let allowed: Vec<u32> = allowed_tokens(&mask)
            .into_iter()
            .filter(|t| !eos.contains(t))
            .collect();
        if allowed.is_empty() {
            return Walk {
                steps: step,
                max_step_fuel: m.stats().max_step_fuel,
                slowest,
                limit: None,
            };
        }
        let t = pick(&allowed);
        let t0 = Instant::now();
        let r = m.consume_token(t);
        slowest = slowest.max(t0.elapsed());
        if let Err(e) = r {
            return Walk {
                steps: step,
                max_step_fuel: m.stats().max_step_fuel,
                slowest,
                limit: Some(limit(e)),
            };
        }
    }
    Walk {
        steps,
        max_step_fuel: m.stats().max_step_fuel,
        slowest,
        limit: None,
    }
}

fn check(name: &str, w: &Walk, fuel_ceiling: u64) {
    eprintln!(
        "{name}: {} steps, largest step fuel {}, slowest step {:?} (not checked), limit {:?}",
        w.steps, w.max_step_fuel, w.slowest, w.limit
    );
    assert!(
        w.max_step_fuel <= fuel_ceiling,
        "{name}: a step spent {} fuel, over the ceiling {fuel_ceiling}",
        w.max_step_fuel
    );
    if let Some(k) = w.limit {
        assert!(
            matches!(
                k,
                LimitKind::Fuel
                    | LimitKind::ItemsPerMask
                    | LimitKind::ItemsPerRow
                    | LimitKind::Memory
            ),
            "{name}: unexpected limit {k:?}"
        );
    }
}

fn token(vocab: &Vocabulary, text: &str) -> u32 {
    (0..vocab.vocab_size() as u32)
        .find(|&t| vocab.trie_bytes(t) == text.as_bytes())
        .unwrap_or_else(|| panic!("no token {text:?}"))
}

fn compile(src: &str, vocab: &Arc<Vocabulary>, limits: &Limits) -> Grammar {
    Grammar::from_lark(src, vocab, limits).unwrap_or_else(|e| panic!("compile: {e}"))
}

#[test]
fn ambiguous_grammars_walked_2000_tokens() {
    assert!(
        counting_installed(),
        "the counting allocator is not installed"
    );
    let vocab = synthetic_vocab();
    let a = token(&vocab, "a");
    let grammars = [
        ("s: s s | a", "start: s\ns: s s | \"a\""),
        (
            "s: s s s | s s | a | b",
            "start: s\ns: s s s | s s | \"a\" | \"b\"",
        ),
        ("e: e , e | e e | a", "start: e\ne: e \",\" e | e e | \"a\""),
    ];
    for (i, (name, src)) in grammars.iter().enumerate() {
        // The default budget lets the walks run long (tens of ms a step at 2,000 tokens):
        // the first grammar is walked under it, all three under 16 MiB.
        let budgets: &[usize] = if i == 0 {
            &[1 << 30, 16 << 20]
        } else {
            &[16 << 20]
        };
        for &budget in budgets {
            let limits = Limits {
                max_memory_bytes: budget,
                ..Limits::default()
            };
            let g = compile(src, &vocab, &limits);
            let mut rng = Rng::new(i as u64);
            // The first grammar only ever gets `a` (its rows grow fastest); the others a
            // random allowed token.
            let mut pick = |al: &[u32]| if i == 0 { a } else { al[rng.below(al.len())] };
            let steps = 2000 / SCALE;
            let (w, used) = peak_heap(|| walk(&g, steps, &mut pick));
            check(&format!("{name}, budget {budget}"), &w, AMBIGUOUS_FUEL);
            assert!(
                w.steps == steps || w.limit.is_some(),
                "{name}: stopped early: {w:?}"
            );
            if budget < 1 << 30 {
                assert!(
                    used.peak <= budget + SLACK,
                    "{name}: peak {} over {budget}",
                    used.peak
                );
            }
        }
    }
}

fn alternatives(kind: &str, n: usize) -> String {
    let mut src = String::from("start: ");
    for i in 0..n {
        if i > 0 {
            src.push_str(" | ");
        }
        match kind {
            "rules" => src.push_str(&format!("r{i}")),
            "recursive" => src.push_str(&format!("\"w{i}\" start")),
            _ => src.push_str(&format!("\"w{i}\"")),
        }
    }
    match kind {
        "rules" => (0..n).for_each(|i| src.push_str(&format!("\nr{i}: \"w{i}\" \"x\""))),
        "recursive" => src.push_str(" | \"end\""),
        _ => {}
    }
    src
}

#[test]
fn twenty_thousand_alternatives() {
    let mut vocabs = vec![("synthetic", synthetic_vocab())];
    vocabs.extend(gpt2().map(|v| ("gpt2", v)));
    for kind in ["literals", "rules", "recursive"] {
        let src = alternatives(kind, 20_000 / SCALE);
        for (vname, vocab) in &vocabs {
            let t0 = Instant::now();
            let g = compile(&src, vocab, &Limits::default());
            let compiled = t0.elapsed();
            let mut rng = Rng::new(3);
            let w = walk(&g, 30, &mut |al: &[u32]| al[rng.below(al.len())]);
            eprintln!("{kind} over {vname}: compiled in {compiled:?}");
            check(&format!("20k {kind} over {vname}"), &w, ALTERNATIVES_FUEL);
        }
    }
}

#[test]
fn ten_thousand_deep_nesting_in_the_output() {
    assert!(
        counting_installed(),
        "the counting allocator is not installed"
    );
    let vocab = synthetic_vocab();
    let src = r#"
start: value
?value: array | object | NUMBER
array: "[" [value ("," value)*] "]"
object: "{" [NUMBER ":" value ("," NUMBER ":" value)*] "}"
NUMBER: /[0-9]+/
"#;
    let open = token(&vocab, "[");
    for budget in [Limits::default().max_memory_bytes, 16 << 20] {
        let limits = Limits {
            max_memory_bytes: budget,
            ..Limits::default()
        };
        let g = compile(src, &vocab, &limits);
        let depth = 10_000 / SCALE;
        let (w, used) = peak_heap(|| {
            walk(&g, depth, &mut |al: &[u32]| {
                assert!(al.contains(&open), "`[` not allowed");
                open
            })
        });
        check(&format!("10k-deep [, budget {budget}"), &w, NESTING_FUEL);
        assert!(
            w.steps == depth || w.limit.is_some(),
            "stopped early: {w:?}"
        );
        if budget < 1 << 30 {
            assert!(
                used.peak <= budget + SLACK,
                "peak {} over {budget}",
                used.peak
            );
        }
    }
}

/// The work bound can fail: the nesting walk checked against a ceiling below its largest
/// step (529 fuel) panics in `check`.
#[test]
fn a_step_over_its_fuel_ceiling_fails() {
    let vocab = synthetic_vocab();
    let g = compile(
        "start: a\na: \"[\" a \"]\" | \"x\"",
        &vocab,
        &Limits::default(),
    );
    let open = token(&vocab, "[");
    let w = walk(&g, 50, &mut |_: &[u32]| open);
    assert!(w.max_step_fuel > 0, "{w:?}");
    check("nesting, ceiling at its largest step", &w, w.max_step_fuel);
    let over =
        std::panic::catch_unwind(|| check("nesting, ceiling below", &w, w.max_step_fuel - 1));
    assert!(over.is_err(), "a step over the ceiling passed");
}
