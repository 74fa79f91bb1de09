use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::CompileCache;
use crate::grammar::{CompileOptions, GrammarSyntax};
use crate::sync::Arc;
use crate::{Grammar, Limits, Matcher, Vocabulary};

fn vocab() -> Arc<Vocabulary> {
    Arc::new(Vocabulary::synthetic(300, 7))
}

const SCHEMA: &str = r#"{"type": "object", "properties": {"name": {"type": "string",
    "maxLength": 12}, "n": {"type": "integer", "minimum": 3}, "x": {"not": {"type": "null"}}},
    "required": ["name"]}"#;

fn same(a: &Grammar, b: &Grammar) -> bool {
    core::ptr::eq(a.inner(), b.inner())
}

/// Every mask along `text`'s greedy tokens.
fn masks(g: &Grammar, text: &str) -> Vec<Vec<u32>> {
    let v = g.vocab().clone();
    let ids = v.greedy_tokenize_text(text.as_bytes()).expect("tokenizes");
    let mut m = Matcher::new(g);
    let mut out = Vec::new();
    for t in ids {
        let mut mask = vec![0u32; v.mask_words()];
        m.compute_mask(&mut mask).expect("mask");
        out.push(mask);
        m.consume_token(t).expect("consume");
    }
    out
}

#[test]
fn an_equal_request_returns_the_grammar_compiled_first() {
    let v = vocab();
    let cache = CompileCache::new(64 << 20);
    let opts = CompileOptions::default();
    let l = Limits::default();
    let (a, ra) = cache
        .compile(GrammarSyntax::JsonSchema, SCHEMA, &opts, &v, &l)
        .expect("compiles");
    let (b, rb) = cache
        .compile(GrammarSyntax::JsonSchema, SCHEMA, &opts, &v, &l)
        .expect("compiles");
    assert!(same(&a, &b));
    assert_eq!(ra, rb);
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    assert!(s.bytes > SCHEMA.len() && s.bytes <= s.max_bytes);

    // The report and the masks are a cold compile's, after the cached grammar's tables were
    // warmed by a matcher of their own.
    let doc = r#"{"name": "abc", "n": 17, "x": [1, {"y": "z"}]}"#;
    let warm = masks(&a, doc);
    let (cold, rc) =
        Grammar::compile(GrammarSyntax::JsonSchema, SCHEMA, &opts, &v, &l).expect("compiles");
    assert_eq!(rb, rc);
    assert_eq!(masks(&b, doc), masks(&cold, doc));
    assert_eq!(warm, masks(&cold, doc));
}

#[test]
fn any_difference_in_the_request_is_a_miss() {
    let v = vocab();
    let cache = CompileCache::new(64 << 20);
    let opts = CompileOptions::default();
    let l = Limits::default();
    let js = GrammarSyntax::JsonSchema;
    let (base, _) = cache.compile(js, SCHEMA, &opts, &v, &l).expect("compiles");
    let mut other_opts = CompileOptions::default();
    other_opts.json.strict = !other_opts.json.strict;
    let other_limits = Limits {
        compile_fuel: l.compile_fuel - 1,
        ..Limits::default()
    };
    let spaced = String::from(SCHEMA) + " ";
    let variants = [
        cache.compile(js, &spaced, &opts, &v, &l),
        cache.compile(js, SCHEMA, &other_opts, &v, &l),
        cache.compile(js, SCHEMA, &opts, &v, &other_limits),
        cache.compile(js, SCHEMA, &opts, &vocab(), &l),
        cache.compile(GrammarSyntax::Lark, "start: \"a\"", &opts, &v, &l),
    ];
    for r in &variants {
        let (g, _) = r.as_ref().expect("compiles");
        assert!(!same(g, &base));
    }
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (0, 6, 6));
}

#[test]
fn errors_are_kept_and_equal() {
    let v = vocab();
    let cache = CompileCache::new(1 << 20);
    let opts = CompileOptions::default();
    let l = Limits::default();
    let bad = "start: undefined_rule";
    let cold = Grammar::compile(GrammarSyntax::Lark, bad, &opts, &v, &l).expect_err("fails");
    for _ in 0..3 {
        let e = cache
            .compile(GrammarSyntax::Lark, bad, &opts, &v, &l)
            .expect_err("fails");
        assert_eq!(e, cold);
    }
    assert_eq!((cache.stats().hits, cache.stats().misses), (2, 1));
}

#[test]
fn off_keeps_nothing() {
    let v = vocab();
    let cache = CompileCache::new(0);
    let opts = CompileOptions::default();
    let l = Limits::default();
    let (a, _) = cache
        .compile(GrammarSyntax::JsonSchema, SCHEMA, &opts, &v, &l)
        .expect("compiles");
    let (b, _) = cache
        .compile(GrammarSyntax::JsonSchema, SCHEMA, &opts, &v, &l)
        .expect("compiles");
    assert!(!same(&a, &b));
    assert_eq!(cache.stats().entries, 0);
}

#[test]
fn the_least_recently_used_entry_goes_first_and_the_bound_holds() {
    let v = vocab();
    let opts = CompileOptions::default();
    let l = Limits::default();
    let regex = |i: usize| alloc::format!("a{{{i}}}b[0-9]+");
    // Measure one entry, then allow about three.
    let probe = CompileCache::new(64 << 20);
    let _ = probe.compile(GrammarSyntax::Regex, &regex(1), &opts, &v, &l);
    let one = probe.stats().bytes;
    let cache = CompileCache::new(one * 3 + one / 2);
    let get = |i: usize| {
        cache
            .compile(GrammarSyntax::Regex, &regex(i), &opts, &v, &l)
            .expect("compiles")
            .0
    };
    let first = get(1);
    let _ = get(2);
    let _ = get(3);
    assert!(same(&get(1), &first), "1 is still there");
    let _ = get(4); // evicts 2, the least recently used
    let s = cache.stats();
    assert_eq!((s.entries, s.evictions), (3, 1));
    assert!(s.bytes <= s.max_bytes);
    assert!(same(&get(1), &first), "1 was used after 2");
    let misses = cache.stats().misses;
    let _ = get(2);
    assert_eq!(cache.stats().misses, misses + 1, "2 was evicted");
    assert!(cache.stats().bytes <= cache.stats().max_bytes);

    // Shrinking the bound evicts at once; an entry over the bound is returned, not kept.
    cache.set_max_bytes(one);
    assert!(cache.stats().entries <= 1 && cache.stats().bytes <= one);
    cache.set_max_bytes(16);
    assert!(get(9).vocab().vocab_size() > 0);
    assert_eq!(cache.stats().entries, 0);
}

#[test]
fn threads_compiling_one_request_share_one_grammar() {
    let v = vocab();
    let cache = Arc::new(CompileCache::new(64 << 20));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (cache, v) = (Arc::clone(&cache), Arc::clone(&v));
            std::thread::spawn(move || {
                let opts = CompileOptions::default();
                let (g, _) = cache
                    .compile(
                        GrammarSyntax::JsonSchema,
                        SCHEMA,
                        &opts,
                        &v,
                        &Limits::default(),
                    )
                    .expect("compiles");
                g
            })
        })
        .collect();
    let grammars: Vec<Grammar> = handles
        .into_iter()
        .map(|h| h.join().expect("joins"))
        .collect();
    for g in &grammars {
        assert!(same(g, &grammars[0]));
    }
    let s = cache.stats();
    assert_eq!(s.entries, 1);
    assert_eq!(s.hits + s.misses, 4);
}
