//! Criterion bench of the token-trie walk alone ([`TokTrie::walk`]) over a real vocabulary,
//! driven by byte-class recognizers whose `push_byte` is one table lookup, so the time is
//! the walk's own (node loads, mask stores, the recognizer calls) with no lexer behind it.
//!
//! The vocabulary is Llama 3's (`../shared/tokenizers/llama3.json`, 128,256 ids); without
//! that file the bench prints a note and walks `Vocabulary::synthetic(128_000, 42)`.
//! Classes, from most to least of the trie visited:
//! - `json_string`: any byte but `"`, `\` and controls (the body of a JSON string);
//! - `words`: ASCII letters and space;
//! - `digits`: `0-9` only.
//!
//! Each iteration zeroes the mask (as `Matcher::compute_mask` does) and walks the whole trie.
//! Run: `cargo bench -p sieve-bench --bench trie_walk` (0.5 s warm-up, 1 s measurement).

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sieve_core::toktrie::{Recognizer, TokTrie};

/// Which bytes a [`ByteClass`] accepts.
type Class = fn(u8) -> bool;

/// Accepts every byte of a fixed class; tracks depth as a real recognizer tracks its stack.
struct ByteClass {
    ok: [bool; 256],
    depth: usize,
}

impl ByteClass {
    fn new(class: Class) -> ByteClass {
        ByteClass {
            ok: std::array::from_fn(|b| class(b as u8)),
            depth: 0,
        }
    }
}

impl Recognizer for ByteClass {
    #[inline]
    fn push_byte(&mut self, byte: u8) -> bool {
        let ok = self.ok[usize::from(byte)];
        self.depth += usize::from(ok);
        ok
    }

    #[inline]
    fn pop_bytes(&mut self, n: usize) {
        self.depth -= n;
    }
}

/// One walk into a zeroed mask; kept out of line so profiles show it by name.
#[inline(never)]
fn walk(trie: &TokTrie, rec: &mut ByteClass, mask: &mut [u32]) {
    mask.fill(0);
    trie.walk(rec, mask);
}

fn trie_walk(c: &mut Criterion) {
    let (vocab_name, vocab) = common::vocabulary();
    let trie = vocab.trie();
    let classes: [(&str, Class); 3] = [
        ("json_string", |b| b >= 0x20 && b != b'"' && b != b'\\'),
        ("words", |b| b.is_ascii_alphabetic() || b == b' '),
        ("digits", |b| b.is_ascii_digit()),
    ];
    let mut mask = vec![0u32; trie.mask_words()];
    let mut group = c.benchmark_group("trie_walk");
    for (name, class) in classes {
        let mut rec = ByteClass::new(class);
        group.bench_function(BenchmarkId::new(name, &vocab_name), |b| {
            b.iter(|| walk(trie, &mut rec, black_box(&mut mask)));
        });
        assert_eq!(rec.depth, 0, "the walk must pop every byte it pushed");
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(1), 20);
    targets = trie_walk
}
criterion_main!(benches);
