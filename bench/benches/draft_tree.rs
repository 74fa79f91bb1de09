//! Criterion bench of draft-tree masks ([`Matcher::fill_draft_tree`], speculative decoding
//! with EAGLE / Medusa-shaped drafts) beside the chain of the same tree's longest path, on
//! Llama 3's vocabulary (or `Vocabulary::synthetic(128_000, 42)` with a note when the file
//! is missing) and the JSON Schema `sieve concurrent` runs.
//!
//! The tree has 16 nodes in 6 levels of widths 4, 3, 3, 2, 2, 2 (EAGLE-like: the first node
//! of each level is the next token of a real continuation and parents the next level; the
//! others are other tokens its parent's mask allows, spread over the allowed list). Its
//! longest path, 6 nodes, is the chain.
//!
//! `draft_tree/<vocab>/<position>/tree16`: one `fill_draft_tree` of the tree (17 rows);
//! `.../chain6`: one `fill_draft_tree` of the chain (7 rows); `.../tree16_rewalk`: the
//! same 17 masks the naive way, each node's path consumed from the current state, its mask
//! computed, and rolled back. The grammar is warm (every iteration runs on the same matcher,
//! which each call leaves where it was), as in steady-state decoding.
//! Before the criterion groups, the bench times tree and chain calls alternately (20,000 pairs)
//! and prints the medians and their ratio (the figure of merit: a shared machine's drift
//! hits both alike).
//! Run: `cargo bench -p sieve-bench --bench draft_tree`; criterion's medians are in
//! `target/criterion/draft_tree_*/*/new/estimates.json`.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use sieve_bench::stats::percentile_sorted;
use sieve_bench::util::allowed_tokens;
use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, Limits, Matcher};

const SCHEMA: &str = sieve_bench::concurrent::DEFAULT_SCHEMA;

/// Positions: `(name, prefix, the continuation the drafts follow)`.
const POSITIONS: [(&str, &str, &str); 2] = [
    (
        "in_string",
        r#"{"name": "Ada Lov"#,
        r#"elace", "age": 36, "status": "active"}"#,
    ),
    (
        "next_key",
        r#"{"name": "Ada", "age": 36, "#,
        r#""status": "active", "tags": ["x"]}"#,
    ),
];

const WIDTHS: [usize; 6] = [4, 3, 3, 2, 2, 2];

/// Tree and chain calls timed alternately (each pair in both orders), before the criterion
/// groups: the ratio of their medians holds up when other work on the machine drifts.
const PAIRS: usize = 20_000;

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    percentile_sorted(xs, 50.0)
}

/// The tree (tokens, parents) at `m`'s state and its longest path as a chain.
/// A draft tree: the nodes' tokens and parents.
type Tree = (Vec<u32>, Vec<i32>);

fn trees(m: &mut Matcher, continuation: &str) -> (Tree, Tree) {
    let vocab = m.grammar().vocab().clone();
    let main = vocab
        .greedy_tokenize_text(continuation.as_bytes())
        .expect("the continuation tokenizes");
    assert!(main.len() >= WIDTHS.len());
    let mut mask = vec![0u32; m.mask_words()];
    let (mut tokens, mut parents) = (Vec::new(), Vec::new());
    let mut parent = -1i32;
    for (level, &width) in WIDTHS.iter().enumerate() {
        m.compute_mask(&mut mask).expect("a mask");
        let others: Vec<u32> = allowed_tokens(&mask, vocab.vocab_size())
            .into_iter()
            .filter(|&t| t != main[level] && !vocab.eos_tokens().contains(&t))
            .collect();
        let first = tokens.len() as i32;
        tokens.push(main[level]);
        parents.push(parent);
        for k in 1..width {
            if !others.is_empty() {
                tokens.push(others[k * others.len() / width]);
                parents.push(parent);
            }
        }
        m.consume_token(main[level])
            .expect("the continuation is allowed");
        parent = first;
    }
    m.rollback(WIDTHS.len()).expect("rollback");
    let chain_parents = (0..WIDTHS.len() as i32).map(|i| i - 1).collect();
    (
        (tokens, parents),
        (main[..WIDTHS.len()].to_vec(), chain_parents),
    )
}

/// The 17 masks of the tree the naive way: each node's path from the current state.
fn rewalk(m: &mut Matcher, tokens: &[u32], parents: &[i32], rows: &mut [u32], w: usize) {
    m.compute_mask(&mut rows[..w]).expect("a mask");
    let mut path = Vec::new();
    for i in 0..tokens.len() {
        path.clear();
        let mut j = i as i32;
        while j >= 0 {
            path.push(tokens[j as usize]);
            j = parents[j as usize];
        }
        let row = &mut rows[(i + 1) * w..(i + 2) * w];
        let mut n = 0;
        for &t in path.iter().rev() {
            if m.consume_token(t).is_err() {
                break;
            }
            n += 1;
        }
        if n == path.len() {
            m.compute_mask(row).expect("a mask");
        } else {
            row.fill(0);
        }
        m.rollback(n).expect("rollback");
    }
}

fn draft_tree(c: &mut Criterion) {
    let (vocab_name, vocab) = common::vocabulary();
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("schema JSON");
    let g = Grammar::from_json_schema(&schema, &JsonOptions::default(), &vocab, &Limits::default())
        .expect("the schema compiles")
        .0;
    let w = vocab.mask_words();
    for (position, prefix, continuation) in POSITIONS {
        let mut m = Matcher::new(&g);
        assert!(m.try_consume_bytes(prefix.as_bytes()), "{prefix:?}");
        let ((tokens, parents), (chain, chain_parents)) = trees(&mut m, continuation);
        assert_eq!(tokens.len(), 16);
        let mut rows = vec![0u32; (tokens.len() + 1) * w];
        let mut check = rows.clone();
        let fill = m
            .fill_draft_tree(&tokens, &parents, &mut rows, w)
            .expect("tree");
        rewalk(&mut m, &tokens, &parents, &mut check, w);
        assert_eq!(rows, check, "fill_draft_tree equals the naive masks");
        eprintln!("{position}: tree of 16 nodes, {} rows filled", fill.filled);
        let mut paired = |chain_first: bool| {
            let mut time = |tree: bool| {
                let (t, p) = if tree {
                    (&tokens, &parents)
                } else {
                    (&chain, &chain_parents)
                };
                let at = Instant::now();
                black_box(
                    m.fill_draft_tree(black_box(t), p, &mut rows, w)
                        .expect("fill"),
                );
                at.elapsed().as_nanos() as f64
            };
            if chain_first {
                let c = time(false);
                (time(true), c)
            } else {
                (time(true), time(false))
            }
        };
        let (mut trees_ns, mut chains_ns): (Vec<f64>, Vec<f64>) =
            (0..PAIRS).map(|k| paired(k % 2 == 0)).unzip();
        let (tree_med, chain_med) = (median(&mut trees_ns), median(&mut chains_ns));
        eprintln!(
            "{position}: paired medians over {PAIRS} alternating calls: tree16 {:.2} µs, \
             chain6 {:.2} µs, ratio {:.2}",
            tree_med / 1e3,
            chain_med / 1e3,
            tree_med / chain_med
        );

        let mut group = c.benchmark_group(format!("draft_tree_{vocab_name}/{position}"));
        group.bench_function("tree16", |b| {
            b.iter(|| {
                m.fill_draft_tree(black_box(&tokens), &parents, &mut rows, w)
                    .expect("tree")
            });
        });
        group.bench_function("chain6", |b| {
            b.iter(|| {
                m.fill_draft_tree(black_box(&chain), &chain_parents, &mut rows, w)
                    .expect("chain")
            });
        });
        group.bench_function("tree16_rewalk", |b| {
            b.iter(|| rewalk(&mut m, black_box(&tokens), &parents, &mut rows, w));
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_millis(1500), 30);
    targets = draft_tree
}
criterion_main!(benches);
