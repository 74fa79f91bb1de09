//! Criterion bench of GBNF grammars (issue 19): llama.cpp's JSON grammar
//! (`../shared/data/gbnf/json.gbnf`) against sieve's Lark JSON (`bench/grammars/json.lark`),
//! on the same document, with Llama 3's vocabulary (see `common::vocabulary`).
//!
//! `gbnf/<vocab>/doc/<grammar>`: one mask and one token consumed per token of a fixed JSON
//! object valid under both grammars (its tokens from the tokenizer's own encoding), on a
//! fresh clone of a matcher whose shared tables were warmed on the document; the throughput
//! line gives the time per token. `gbnf/<vocab>/ttfm/<grammar>`: compile the grammar, create
//! a matcher, compute the first mask.
//!
//! The GBNF grammar goes through `Grammar::from_gbnf` (front end, `ir::regular::lexify`,
//! build), as every user's does.
//!
//! Run: `cargo bench -p sieve-bench --bench gbnf -- --warm-up-time 1 --measurement-time 3`.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

const JSON_GBNF: &str = include_str!("../../../shared/data/gbnf/json.gbnf");
const JSON_LARK: &str = include_str!("../grammars/json.lark");

/// Valid under both grammars: an object; whitespace is "", " " or a newline and up to 20
/// spaces or tabs; numbers have at most 16 digits.
const DOC: &str = r#"{
  "id": 184467,
  "name": "sieve: grammar-constrained decoding",
  "version": "0.1.0",
  "ratio": 0.8125,
  "scale": -2.5e12,
  "active": true,
  "parent": null,
  "tags": ["grammar", "earley", "lexer", "token-mask", "llama.cpp"],
  "limits": {"max_lexer_states": 100000, "compile_fuel": 20000000, "nested": {"deep": [1, 2, [3, 4], {"five": 5}]}},
  "authors": [
    {"name": "Ada Lovelace", "email": "ada@example.com", "roles": ["design", "review"]},
    {"name": "Grace Hopper", "email": "grace@example.org", "roles": []}
  ],
  "description": "Masks are exact: a token is allowed iff some continuation completes the grammar. Escapes: \"quoted\", tab\t, unicode \u00e9 and a backslash \\.",
  "checksum": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
}"#;

fn gbnf_grammar(vocab: &Arc<Vocabulary>, limits: &Limits) -> Grammar {
    Grammar::from_gbnf(JSON_GBNF, &GbnfOptions::default(), vocab, limits)
        .expect("json.gbnf compiles")
}

fn lark_grammar(vocab: &Arc<Vocabulary>, limits: &Limits) -> Grammar {
    Grammar::from_lark(JSON_LARK, vocab, limits).expect("json.lark compiles")
}

/// `json.gbnf` lowered as the GBNF front end lowers it: one lexeme per code point, EBNF
/// operators as builder helpers.
fn bench_gbnf(c: &mut Criterion) {
    let (name, vocab) = common::vocabulary();
    let limits = Limits::default();
    let tok = sieve_bench::tokenizer::LoadedTokenizer::load(&format!(
        "{}/../../shared/tokenizers/llama3.json",
        env!("CARGO_MANIFEST_DIR")
    ));
    let tokens = match &tok {
        Ok(t) if name == "llama3" => t.try_encode(DOC).expect("the document encodes"),
        _ => vocab
            .greedy_tokenize_text(DOC.as_bytes())
            .expect("the document tokenizes"),
    };
    eprintln!("document: {} tokens, {} bytes", tokens.len(), DOC.len());
    type Compile = fn(&Arc<Vocabulary>, &Limits) -> Grammar;
    let grammars: [(&str, Compile); 2] = [("gbnf_json", gbnf_grammar), ("lark_json", lark_grammar)];
    let mut g = c.benchmark_group(format!("gbnf/{name}"));
    for (gname, compile) in grammars {
        let grammar = compile(&vocab, &limits);
        let mut mask = vec![0u32; Matcher::new(&grammar).mask_words()];
        // Warm the shared tables along the document (and check it is accepted).
        let mut template = Matcher::new(&grammar);
        for &t in &tokens {
            template.compute_mask(&mut mask).expect("mask");
            template.consume_token(t).expect("the document is valid");
        }
        assert!(template.is_accepting(), "{gname} accepts the document");
        template.rollback(tokens.len()).expect("rollback");
        g.throughput(Throughput::Elements(tokens.len() as u64));
        g.bench_function(BenchmarkId::new("doc", gname), |b| {
            b.iter_batched(
                || template.clone(),
                |mut m| {
                    for &t in &tokens {
                        m.compute_mask(black_box(&mut mask)).expect("mask");
                        m.consume_token(t).expect("consume");
                    }
                    m
                },
                BatchSize::SmallInput,
            )
        });
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("ttfm", gname), |b| {
            b.iter_with_large_drop(|| {
                let grammar = compile(&vocab, &limits);
                let mut m = Matcher::new(&grammar);
                m.compute_mask(black_box(&mut mask)).expect("first mask");
                (grammar, m)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_millis(1500), 10);
    targets = bench_gbnf
}
criterion_main!(benches);
