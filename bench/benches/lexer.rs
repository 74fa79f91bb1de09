//! Criterion bench of lexer throughput: a long text pushed byte by byte through a
//! [`Matcher`] with [`Matcher::try_consume_bytes`], with warm lexer tables (the text is
//! consumed once before timing, so every DFA transition it needs is already built).
//!
//! - `json_lark/doc_<N>k`: a generated JSON document under `bench/grammars/json.lark`: the
//!   lexer DFA plus an Earley scan at the end of every lexeme.
//! - `regex/log_<N>k`: log lines under a one-lexeme regex grammar: the lexer DFA alone.
//!
//! Each iteration is `reset` + one `try_consume_bytes` of the whole text; throughput is in
//! bytes of text. Token masks are not computed, so the vocabulary does not matter: the bench
//! uses `Vocabulary::synthetic(1_000, 7)` and starts at once.
//! Run: `cargo bench -p sieve-bench --bench lexer` (0.5 s warm-up, 1 s measurement).

mod common;

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

/// Records in the generated JSON document (about 110 bytes each).
const JSON_RECORDS: usize = 300;
/// Lines of the generated log (about 75 bytes each).
const LOG_LINES: usize = 400;

/// A log line: date, time, level, module, free text.
const LOG_REGEX: &str =
    r"(?:\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (?:INFO|WARN|ERROR) [a-z_]+: [^\n]*\n)+";

fn json_doc() -> String {
    let mut s = String::from("{\"items\": [");
    for i in 0..JSON_RECORDS {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(
            s,
            "{{\"id\": {i}, \"name\": \"user {i}\", \"email\": \"user{i}@example.com\", \
             \"score\": {}.{:02}, \"tags\": [\"a\", \"b{}\"], \"active\": {}}}",
            i % 97,
            i % 100,
            i % 7,
            i % 2 == 0
        );
    }
    s.push_str("], \"count\": -1.5e3}");
    s
}

fn log_text() -> String {
    let levels = ["INFO", "WARN", "ERROR"];
    let modules = ["http_server", "db", "cache_layer"];
    let mut s = String::new();
    for i in 0..LOG_LINES {
        let _ = writeln!(
            s,
            "2026-11-{:02} {:02}:{:02}:{:02} {} {}: request {i} took {} ms, status ok",
            1 + i % 28,
            i % 24,
            i % 60,
            (i * 7) % 60,
            levels[i % 3],
            modules[i % 3],
            i * 3 % 1000
        );
    }
    s
}

/// One `reset` + consume of the whole text; kept out of line so profiles show it by name.
#[inline(never)]
fn consume(m: &mut Matcher, text: &[u8]) {
    m.reset();
    let ok = m.try_consume_bytes(text);
    assert!(ok, "the bench text must be accepted");
}

fn lexer(c: &mut Criterion) {
    let vocab = Arc::new(Vocabulary::synthetic(1_000, 7));
    let limits = Limits::default();
    let json = Grammar::from_lark(sieve_bench::demo::JSON_LARK, &vocab, &limits)
        .expect("json.lark compiles");
    let regex = Grammar::from_regex(LOG_REGEX, &vocab, &limits).expect("the log regex compiles");
    let doc = json_doc();
    let log = log_text();
    let cases = [
        ("json_lark", "doc", &json, doc.as_bytes()),
        ("regex", "log", &regex, log.as_bytes()),
    ];

    let mut group = c.benchmark_group("lexer");
    for (grammar, text_name, g, text) in cases {
        let mut m = Matcher::new(g);
        consume(&mut m, text);
        assert!(m.is_accepting(), "{grammar}: the text must be complete");
        group.throughput(Throughput::Bytes(text.len() as u64));
        let id = BenchmarkId::new(grammar, format!("{text_name}_{}k", text.len() / 1024));
        group.bench_function(id, |b| b.iter(|| consume(&mut m, black_box(text))));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(1), 30);
    targets = lexer
}
criterion_main!(benches);
