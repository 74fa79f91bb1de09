//! Criterion bench of end-to-end token masks ([`Matcher::compute_mask`]) on a real
//! vocabulary: Llama 3's (`../shared/tokenizers/llama3.json`, 128,256 ids), or
//! `Vocabulary::synthetic(128_000, 42)` with a note when the file is missing.
//!
//! `mask/<vocab>/<grammar>/<position>`: the warm steady-state mask at one position. The
//! setup compiles the grammar, advances a matcher to the position with `try_consume_bytes`
//! and computes one mask there; that matcher is dropped, handing its lexer tables back to the
//! grammar, and a template matcher is advanced to the same position with those warm tables.
//! Each iteration then computes one mask on a fresh clone of the template (`iter_batched`,
//! one clone per iteration, cloned and dropped outside the timing), so the matcher's cache of
//! the last mask never hits: every timed call walks the trie (after OR-ing in a vocabulary
//! slice where the parser state allows one).
//!
//! `ttfm/<vocab>/<grammar>`: time to first mask: compile the grammar (the schema is parsed to a
//! `serde_json::Value` beforehand), create a matcher, compute the first mask. The vocabulary
//! (trie and slices) is built once, outside the timing.
//!
//! Grammars: a JSON Schema (an object with string, integer, number, enum and array fields),
//! `bench/grammars/json.lark`, and two regexes (an e-mail address and free text).
//! Run: `cargo bench -p sieve-bench --bench masks` (0.5 s warm-up, 1.5 s measurement).

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

/// The schema `sieve concurrent` runs by default too.
const SCHEMA: &str = sieve_bench::concurrent::DEFAULT_SCHEMA;

const EMAIL_REGEX: &str = r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,6}";
const TEXT_REGEX: &str = r"[A-Za-z0-9 ,.;:'!?()-]{1,400}";

/// A grammar source, compiled inside the time-to-first-mask bench.
enum Source {
    Schema(serde_json::Value),
    Lark(&'static str),
    Regex(&'static str),
}

impl Source {
    fn compile(&self, vocab: &Arc<Vocabulary>) -> Grammar {
        let limits = Limits::default();
        match self {
            Source::Schema(schema) => {
                Grammar::from_json_schema(schema, &JsonOptions::default(), vocab, &limits)
                    .expect("the schema compiles")
                    .0
            }
            Source::Lark(src) => Grammar::from_lark(src, vocab, &limits).expect("lark compiles"),
            Source::Regex(re) => Grammar::from_regex(re, vocab, &limits).expect("regex compiles"),
        }
    }
}

/// A grammar and the positions its masks are timed at, as `(name, prefix)`.
struct Case {
    grammar: &'static str,
    source: Source,
    positions: &'static [(&'static str, &'static str)],
}

fn cases() -> [Case; 4] {
    [
        Case {
            grammar: "schema",
            source: Source::Schema(serde_json::from_str(SCHEMA).expect("schema JSON")),
            positions: &[
                ("in_string", r#"{"name": "Ada Lov"#),
                ("after_key", r#"{"name": "Ada", "age""#),
                ("in_number", r#"{"name": "Ada", "age": 3"#),
                ("next_key", r#"{"name": "Ada", "age": 36, "#),
            ],
        },
        Case {
            grammar: "json_lark",
            source: Source::Lark(sieve_bench::demo::JSON_LARK),
            positions: &[
                ("in_string", r#"{"name": "Ada Lov"#),
                ("value", r#"{"name": "Ada", "tags": ["#),
            ],
        },
        Case {
            grammar: "regex_email",
            source: Source::Regex(EMAIL_REGEX),
            positions: &[("start", "")],
        },
        Case {
            grammar: "regex_text",
            source: Source::Regex(TEXT_REGEX),
            positions: &[("mid", "Hello, world. This is")],
        },
    ]
}

/// A warm matcher at `prefix`, with no mask cached (see the crate doc).
fn template(g: &Grammar, prefix: &str, mask: &mut [u32]) -> Matcher {
    let mut warm_up = Matcher::new(g);
    assert!(warm_up.try_consume_bytes(prefix.as_bytes()), "{prefix:?}");
    warm_up.compute_mask(mask).expect("a mask");
    drop(warm_up);
    let mut m = Matcher::new(g);
    assert!(m.try_consume_bytes(prefix.as_bytes()));
    m
}

/// One mask; kept out of line so profiles show it by name.
#[inline(never)]
fn mask_once(mut m: Matcher, mask: &mut [u32]) -> Matcher {
    m.compute_mask(mask).expect("a mask");
    m
}

fn masks(c: &mut Criterion) {
    let (vocab_name, vocab) = common::vocabulary();
    let cases = cases();
    let mut mask = vec![0u32; vocab.mask_words()];

    let mut group = c.benchmark_group(format!("mask/{vocab_name}"));
    for case in &cases {
        let g = case.source.compile(&vocab);
        for &(position, prefix) in case.positions {
            let t = template(&g, prefix, &mut mask);
            group.bench_function(BenchmarkId::new(case.grammar, position), |b| {
                b.iter_batched(
                    || t.clone(),
                    |m| mask_once(m, black_box(&mut mask)),
                    BatchSize::PerIteration,
                );
            });
            let check = mask_once(t.clone(), &mut mask);
            assert_eq!(
                check.stats().cached,
                0,
                "the timed masks must not be cached"
            );
        }
    }
    group.finish();

    // The grammar and matcher are returned so that dropping them is not timed.
    let mut group = c.benchmark_group(format!("ttfm/{vocab_name}"));
    group.sample_size(10);
    for case in &cases {
        group.bench_function(case.grammar, |b| {
            b.iter_with_large_drop(|| {
                let g = black_box(&case.source).compile(&vocab);
                let m = mask_once(Matcher::new(&g), &mut mask);
                (m, g)
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_millis(1500), 20);
    targets = masks
}
criterion_main!(benches);
