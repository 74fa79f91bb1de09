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
//! The GBNF grammar goes through `Grammar::from_gbnf`; until the GBNF front end lands, the
//! same grammar is built with the IR builder, as the front end lowers it, and compiled with
//! `ir::regular::compile` (note on stderr).
//!
//! Run: `cargo bench -p sieve-bench --bench gbnf -- --warm-up-time 1 --measurement-time 3`.

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::ir::builder::Builder;
use sieve_core::ir::{GrammarIr, IrSymbol};
use sieve_core::{CompileBudget, Grammar, Limits, Matcher, Vocabulary};

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
    match Grammar::from_gbnf(JSON_GBNF, &GbnfOptions::default(), vocab, limits) {
        Ok(g) => g,
        Err(e) => {
            static NOTE: std::sync::Once = std::sync::Once::new();
            NOTE.call_once(|| {
                eprintln!("note: from_gbnf: {e}; building json.gbnf with the IR builder instead")
            });
            sieve_core::ir::regular::compile(json_gbnf_ir(limits), vocab, limits)
                .expect("json.gbnf compiles")
        }
    }
}

fn lark_grammar(vocab: &Arc<Vocabulary>, limits: &Limits) -> Grammar {
    Grammar::from_lark(JSON_LARK, vocab, limits).expect("json.lark compiles")
}

/// `json.gbnf` lowered as the GBNF front end lowers it: one lexeme per code point, EBNF
/// operators as builder helpers.
fn json_gbnf_ir(limits: &Limits) -> GrammarIr {
    type Seq = Vec<IrSymbol>;
    fn lit(b: &mut Builder, s: &str) -> Seq {
        s.chars()
            .map(|c| {
                let mut buf = [0u8; 4];
                let bytes = c.encode_utf8(&mut buf).as_bytes();
                IrSymbol::Lexeme(b.literal(bytes, None).expect("literal"))
            })
            .collect()
    }
    fn class(b: &mut Builder, ranges: &[(char, char)], negated: bool) -> Seq {
        vec![IrSymbol::Lexeme(
            b.class(ranges, negated, None).expect("class"),
        )]
    }
    fn nt(n: u32) -> Seq {
        vec![IrSymbol::Nonterminal(n)]
    }
    fn cat(parts: &[&Seq]) -> Seq {
        parts.iter().flat_map(|p| p.iter().copied()).collect()
    }
    fn go(b: &mut Builder) -> Result<u32, sieve_core::GrammarError> {
        let root = b.nonterminal("root", None)?;
        let value = b.nonterminal("value", None)?;
        let object = b.nonterminal("object", None)?;
        let array = b.nonterminal("array", None)?;
        let string = b.nonterminal("string", None)?;
        let number = b.nonterminal("number", None)?;
        let ws = b.nonterminal("ws", None)?;
        b.rule(root, nt(object), None)?;
        let (t, f, n) = (lit(b, "true"), lit(b, "false"), lit(b, "null"));
        let tfn = b.group(vec![t, f, n], "value", None)?;
        for alt in [nt(object), nt(array), nt(string), nt(number)] {
            b.rule(value, alt, None)?;
        }
        b.rule(value, cat(&[&tfn, &nt(ws)]), None)?;
        let (lb, rb, colon, comma) = (lit(b, "{"), lit(b, "}"), lit(b, ":"), lit(b, ","));
        let member = cat(&[&nt(string), &colon, &nt(ws), &nt(value)]);
        let more = b.star(vec![cat(&[&comma, &nt(ws), &member])], "object", None)?;
        let body = b.optional(vec![cat(&[&member, &more])], "object", None)?;
        b.rule(object, cat(&[&lb, &nt(ws), &body, &rb, &nt(ws)]), None)?;
        let (ls, rs) = (lit(b, "["), lit(b, "]"));
        let more = b.star(vec![cat(&[&comma, &nt(ws), &nt(value)])], "array", None)?;
        let body = b.optional(vec![cat(&[&nt(value), &more])], "array", None)?;
        b.rule(array, cat(&[&ls, &nt(ws), &body, &rs, &nt(ws)]), None)?;
        let q = lit(b, "\"");
        let plain = class(
            b,
            &[('"', '"'), ('\\', '\\'), ('\x7F', '\x7F'), ('\0', '\x1F')],
            true,
        );
        let bs = lit(b, "\\");
        let simple = class(
            b,
            &[
                ('"', '"'),
                ('\\', '\\'),
                ('b', 'b'),
                ('f', 'f'),
                ('n', 'n'),
                ('r', 'r'),
                ('t', 't'),
            ],
            false,
        );
        let u = lit(b, "u");
        let hex = class(b, &[('0', '9'), ('a', 'f'), ('A', 'F')], false);
        let hex4 = b.repeat(vec![hex], 4, Some(4), "string", None)?;
        let esc = b.group(vec![simple, cat(&[&u, &hex4])], "string", None)?;
        let ch = b.group(vec![plain, cat(&[&bs, &esc])], "string", None)?;
        let chars = b.star(vec![ch], "string", None)?;
        b.rule(string, cat(&[&q, &chars, &q, &nt(ws)]), None)?;
        let minus = lit(b, "-");
        let minus_opt = b.optional(vec![minus], "number", None)?;
        let digit = class(b, &[('0', '9')], false);
        let d19 = class(b, &[('1', '9')], false);
        let tail = b.repeat(vec![digit.clone()], 0, Some(15), "number", None)?;
        let int = b.group(vec![digit.clone(), cat(&[&d19, &tail])], "number", None)?;
        let dot = lit(b, ".");
        let digits = b.plus(vec![digit.clone()], "number", None)?;
        let frac = b.optional(vec![cat(&[&dot, &digits])], "number", None)?;
        let e = class(b, &[('e', 'e'), ('E', 'E')], false);
        let sign = class(b, &[('-', '-'), ('+', '+')], false);
        let sign_opt = b.optional(vec![sign], "number", None)?;
        let tail19 = b.repeat(vec![d19], 0, Some(15), "number", None)?;
        let exp = b.optional(vec![cat(&[&e, &sign_opt, &digit, &tail19])], "number", None)?;
        b.rule(number, cat(&[&minus_opt, &int, &frac, &exp, &nt(ws)]), None)?;
        let sp = lit(b, " ");
        let nl = lit(b, "\n");
        let indent = class(b, &[(' ', ' '), ('\t', '\t')], false);
        let indent = b.repeat(vec![indent], 0, Some(20), "ws", None)?;
        b.rule(ws, Vec::new(), None)?;
        b.rule(ws, sp, None)?;
        b.rule(ws, cat(&[&nl, &indent]), None)?;
        Ok(root)
    }
    let mut budget = CompileBudget::new(limits);
    let mut b = Builder::new(limits, &mut budget);
    let root = go(&mut b).expect("json.gbnf builds");
    b.finish(root)
}

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
