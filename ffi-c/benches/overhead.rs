//! Per-call overhead of the C boundary: the same matcher operations through the exported
//! `extern "C"` functions and through `sieve-core` directly, on a synthetic 50k-token
//! vocabulary and a small JSON-ish Lark grammar.
//!
//! Run: `cargo bench -p sieve-ffi-c --bench overhead`. `compute_mask` reuses the matcher's
//! cached mask (same parser state), so it measures the boundary plus a copy of the mask words
//! rather than the trie walk. `mask_alternating` switches between two parser states (consume
//! `"`, mask, roll back, mask), so both masks are real trie walks: the boundary's share of a
//! full mask.

use std::hint::black_box;
use std::ptr;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use sieve::grammar::{sieve_grammar, sieve_grammar_free, sieve_grammar_kind, sieve_grammar_new};
use sieve::matcher::{
    sieve_matcher, sieve_matcher_compute_mask, sieve_matcher_consume_token, sieve_matcher_free,
    sieve_matcher_is_allowed, sieve_matcher_new, sieve_matcher_rollback,
};
use sieve::sieve_status;
use sieve::tokenizer::{sieve_tokenizer, sieve_tokenizer_free, sieve_tokenizer_new};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

const GRAMMAR: &str = r#"start: "{" pair ("," pair)* "}"
pair: KEY ":" VALUE
KEY: /"[a-z]{1,8}"/
VALUE: /[0-9]{1,6}/
"#;

struct CHandles {
    tok: *const sieve_tokenizer,
    grammar: *const sieve_grammar,
    matcher: *mut sieve_matcher,
}

impl Drop for CHandles {
    fn drop(&mut self) {
        sieve_matcher_free(self.matcher);
        sieve_grammar_free(self.grammar);
        sieve_tokenizer_free(self.tok);
    }
}

fn c_handles(vocab: &Vocabulary) -> CHandles {
    let n = vocab.vocab_size();
    let mut bytes = Vec::new();
    let mut lens = Vec::with_capacity(n);
    let mut flags = Vec::with_capacity(n);
    for id in 0..n as u32 {
        let text = vocab.token_text(id);
        bytes.extend_from_slice(text);
        lens.push(text.len() as u32);
        flags.push(u8::from(vocab.is_special(id)));
    }
    let eos = vocab.eos_tokens();
    let mut h = CHandles {
        tok: ptr::null(),
        grammar: ptr::null(),
        matcher: ptr::null_mut(),
    };
    let s = sieve_tokenizer_new(
        bytes.as_ptr(),
        bytes.len(),
        lens.as_ptr(),
        n,
        flags.as_ptr(),
        eos.as_ptr(),
        eos.len(),
        None,
        ptr::null_mut(),
        &mut h.tok,
        ptr::null_mut(),
    );
    assert_eq!(s, sieve_status::Ok);
    let s = sieve_grammar_new(
        h.tok,
        sieve_grammar_kind::Lark as u32,
        GRAMMAR.as_ptr(),
        GRAMMAR.len(),
        ptr::null(),
        &mut h.grammar,
        ptr::null_mut(),
    );
    assert_eq!(s, sieve_status::Ok);
    assert_eq!(
        sieve_matcher_new(h.grammar, &mut h.matcher),
        sieve_status::Ok
    );
    h
}

fn overhead(c: &mut Criterion) {
    let vocab = Vocabulary::synthetic(50_000, 1);
    let open = vocab.trie().token_id(b"{").expect("'{' is a token");
    let quote = vocab.trie().token_id(b"\"").expect("'\"' is a token");
    let h = c_handles(&vocab);
    let vocab = Arc::new(vocab);
    let grammar = Grammar::from_lark(GRAMMAR, &vocab, &Limits::default()).expect("compiles");
    let mut m = Matcher::new(&grammar);
    let mut mask = vec![0u32; vocab.mask_words()];
    let words = mask.len();
    m.consume_token(open).expect("'{' allowed");
    assert_eq!(
        sieve_matcher_consume_token(h.matcher, open),
        sieve_status::Ok
    );

    let mut g = c.benchmark_group("ffi_overhead");
    g.bench_function("compute_mask/rust", |b| {
        b.iter(|| m.compute_mask(black_box(&mut mask)))
    });
    g.bench_function("compute_mask/c", |b| {
        b.iter(|| sieve_matcher_compute_mask(h.matcher, black_box(mask.as_mut_ptr()), words))
    });
    g.bench_function("is_allowed/rust", |b| {
        b.iter(|| m.is_allowed(black_box(quote)))
    });
    g.bench_function("is_allowed/c", |b| {
        let mut ok = false;
        b.iter(|| sieve_matcher_is_allowed(h.matcher, black_box(quote), &mut ok))
    });
    g.bench_function("consume_rollback/rust", |b| {
        b.iter(|| {
            let _ = m.consume_token(black_box(quote));
            m.rollback(1)
        })
    });
    g.bench_function("consume_rollback/c", |b| {
        b.iter(|| {
            let _ = sieve_matcher_consume_token(h.matcher, black_box(quote));
            sieve_matcher_rollback(h.matcher, 1)
        })
    });
    g.bench_function("mask_alternating/rust", |b| {
        b.iter(|| {
            let _ = m.consume_token(black_box(quote));
            let _ = m.compute_mask(black_box(&mut mask));
            let _ = m.rollback(1);
            m.compute_mask(black_box(&mut mask))
        })
    });
    g.bench_function("mask_alternating/c", |b| {
        b.iter(|| {
            let _ = sieve_matcher_consume_token(h.matcher, black_box(quote));
            let _ = sieve_matcher_compute_mask(h.matcher, black_box(mask.as_mut_ptr()), words);
            let _ = sieve_matcher_rollback(h.matcher, 1);
            sieve_matcher_compute_mask(h.matcher, black_box(mask.as_mut_ptr()), words)
        })
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
