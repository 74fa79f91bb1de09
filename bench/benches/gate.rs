//! Criterion bench of lazy grammars ([`sieve_core::Gate`], issue 18) on Qwen3's vocabulary
//! (`../shared/tokenizers/qwen3.json`, or `SIEVE_BENCH_TOKENIZER`; the synthetic vocabulary
//! with a note when missing).
//!
//! `gate/<vocab>/flag/<n>`: while waiting for one of `n` literal triggers, the host's check
//! per step: `is_unconstrained()` and, when it is false, a full `compute_mask` (never the case
//! here: the mask is not requested). `gate/<vocab>/full_mask/<n>`: `compute_mask` while
//! waiting (the all-ones mask written), for comparison.
//!
//! `gate/<vocab>/consume/<n>`: consuming the tokens of a 2 KB English text (no trigger in
//! it) while waiting, on a fresh clone of a warmed matcher (`iter_batched`); the throughput
//! line gives the time per token. Trigger detection is one Aho–Corasick step per byte.
//!
//! Run: `cargo bench -p sieve-bench --bench gate -- --warm-up-time 1 --measurement-time 3`.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sieve_core::{Gate, GateConfig, Grammar, Limits, Matcher, Triggers, Vocabulary};

const QWEN3: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/tokenizers/qwen3.json"
);

const PROSE: &str = "The committee met on Tuesday to review the quarterly results, which showed \
a modest increase in revenue across most regions. Several members raised concerns about the \
rising cost of materials and the delays in the supply chain, noting that the company had \
already absorbed two price increases this year. After a long discussion, the chair proposed \
a plan to renegotiate the largest contracts before the end of the next quarter, to review the \
pricing of the older product lines, and to hire an outside firm to audit the logistics \
network. The proposal was approved with one abstention. In other business, the committee \
heard a short report on the new office in the north, which opened in March and now employs \
forty people, and agreed to meet again in six weeks. Questions from the floor concerned the \
pension fund, the parking arrangements at the main site, and whether the annual meeting \
could be held online; the secretary promised written answers to all of them within a month.";

fn vocabulary() -> (String, Arc<Vocabulary>) {
    if std::env::var("SIEVE_BENCH_TOKENIZER").is_err()
        && let Ok(tok) = sieve_bench::tokenizer::LoadedTokenizer::load(QWEN3)
    {
        return ("qwen3".to_owned(), tok.vocab);
    }
    common::vocabulary()
}

/// `n` literal triggers: "```json" and `<fn_k>` markers.
fn triggers(n: usize) -> Vec<Vec<u8>> {
    let mut t = vec![b"```json".to_vec()];
    t.extend((1..n).map(|k| format!("<fn_{k:02}>").into_bytes()));
    t
}

fn bench_gate(c: &mut Criterion) {
    let (name, vocab) = vocabulary();
    let limits = Limits::default();
    let grammar = Grammar::from_regex(r"(```json|<fn_[0-9]{2}>)[ -~\n]{0,200}", &vocab, &limits)
        .expect("grammar compiles");
    let text = vocab
        .greedy_tokenize_text(PROSE.as_bytes())
        .expect("the text tokenizes");
    eprintln!("consume: {} tokens, {} bytes", text.len(), PROSE.len());
    let mut g = c.benchmark_group(format!("gate/{name}"));
    for n in [1usize, 50] {
        let config = GateConfig {
            reasoning: None,
            triggers: Some(Triggers {
                strings: triggers(n),
                ..Triggers::default()
            }),
        };
        let gate = Gate::new(&config, &vocab, &limits).expect("gate compiles");
        // Warm: every state on the text's path has its completing tokens and rejected list.
        let mut template = Matcher::with_gate(&grammar, &gate);
        template
            .consume_tokens(&text)
            .expect("no trigger in the text");
        template.rollback(text.len()).expect("rollback");
        let mut waiting = template.clone();
        waiting
            .consume_tokens(&text[..text.len() / 2])
            .expect("consume");
        assert!(waiting.is_unconstrained());
        let mut mask = vec![0u32; waiting.mask_words()];
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("flag", n), |b| {
            b.iter(|| {
                if !black_box(&waiting).is_unconstrained() {
                    waiting.compute_mask(&mut mask).expect("mask");
                }
            })
        });
        g.bench_function(BenchmarkId::new("full_mask", n), |b| {
            b.iter(|| waiting.compute_mask(black_box(&mut mask)).expect("mask"))
        });
        g.throughput(Throughput::Elements(text.len() as u64));
        g.bench_function(BenchmarkId::new("consume", n), |b| {
            b.iter_batched(
                || template.clone(),
                |mut m| {
                    for &t in &text {
                        m.consume_token(black_box(t)).expect("consume");
                    }
                    m
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

/// The same free text under a structural tag instead of a gate: the Qwen3/Hermes preset
/// with two tools (`bench/grammars/tools.json`), its free text one lexeme that ends at
/// `<tool_call>`. `structural/<vocab>/free_text`: a full `compute_mask` in the middle of the
/// text (the mask cache forgotten each time: every step of a generation is a new state).
fn bench_structural(c: &mut Criterion) {
    use sieve_core::grammar::json::JsonOptions;
    use sieve_core::grammar::structural::presets::{self, PresetOptions};
    let (name, vocab) = vocabulary();
    let limits = Limits::default();
    let tools: serde_json::Value =
        serde_json::from_str(include_str!("../grammars/tools.json")).expect("tools JSON");
    let tag = presets::preset("hermes", &tools, &PresetOptions::default()).expect("preset");
    let grammar =
        Grammar::from_structural_tag(&tag.to_string(), &JsonOptions::default(), &vocab, &limits)
            .expect("the preset compiles");
    let text = vocab
        .greedy_tokenize_text(PROSE.as_bytes())
        .expect("the text tokenizes");
    let mut m = Matcher::new(&grammar);
    let mut mask = vec![0u32; m.mask_words()];
    // Warm the lexer states along the text, as a serving host's earlier requests would.
    for &t in &text {
        m.compute_mask(&mut mask).expect("mask");
        m.consume_token(t).expect("free text");
    }
    m.rollback(text.len() / 2).expect("rollback");
    let mut g = c.benchmark_group(format!("structural/{name}"));
    g.bench_function("free_text", |b| {
        b.iter(|| {
            m.forget_last_mask();
            m.compute_mask(black_box(&mut mask)).expect("mask")
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_millis(1500), 20);
    targets = bench_gate, bench_structural
}
criterion_main!(benches);
