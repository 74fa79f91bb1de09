//! Criterion benches of `sieve-kernels`: every kernel at every level available on this CPU,
//! on rows of 128k and 256k tokens (masks of 4k and 8k words; logits in f32, f16 and bf16),
//! each group next to a `memcpy` (`copy_from_slice`) of the same byte size as the memory-speed
//! reference.
//!
//! Throughput is in bytes of the row being produced or scanned: the mask (`4 * words`) for
//! bitset kernels, the logits for mask application. Mask application is measured on two mask
//! shapes: `random` (uniform random words, the worst case for the scalar bit loop) and
//! `sparse` (mostly all-disallowed words, as under a JSON grammar; the scalar fast paths help).
//!
//! Run: `cargo bench -p sieve-bench --bench kernels` (defaults: 0.5 s warm-up, 1 s measurement;
//! criterion's command-line flags override them).

mod common;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use sieve_kernels::Kernel;
use std::hint::black_box;
use std::time::Duration;

/// Row sizes in tokens.
const SIZES: [(&str, usize); 2] = [("128k", 128 * 1024), ("256k", 256 * 1024)];
/// Rows in the batch bench.
const BATCH_ROWS: usize = 8;

/// A small deterministic generator (xorshift64*), so the bench needs no extra crates.
struct Rng(u64);

impl Rng {
    fn next_u32(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    fn words(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.next_u32()).collect()
    }

    /// Mostly zero words, a few random and a few all-ones ones.
    fn sparse_words(&mut self, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| match self.next_u32() % 64 {
                0 => u32::MAX,
                1 | 2 => self.next_u32(),
                _ => 0,
            })
            .collect()
    }
}

fn levels() -> Vec<Kernel> {
    Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available())
        .collect()
}

/// Adds the `memcpy` reference of `bytes` bytes to a group.
fn memcpy(group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, bytes: usize) {
    let src = vec![0x5Au8; bytes];
    let mut dst = vec![0u8; bytes];
    group.bench_function("memcpy", |b| {
        b.iter(|| dst.copy_from_slice(black_box(&src)));
    });
}

fn bitsets(c: &mut Criterion) {
    type Op = fn(Kernel, &mut [u32], &[u32]);
    let ops: [(&str, Op); 3] = [
        ("or_into", Kernel::or_into),
        ("and_into", Kernel::and_into),
        ("andnot_into", Kernel::andnot_into),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (size, tokens) in SIZES {
        let words = tokens / 32;
        let src = rng.words(words);
        let mut dst = rng.words(words);
        for (name, op) in ops {
            let mut group = c.benchmark_group(format!("{name}/{size}"));
            group.throughput(Throughput::Bytes((words * 4) as u64));
            for k in levels() {
                group.bench_function(k.name(), |b| {
                    b.iter(|| op(k, black_box(&mut dst), black_box(&src)));
                });
            }
            memcpy(&mut group, words * 4);
            group.finish();
        }

        let mut group = c.benchmark_group(format!("popcount/{size}"));
        group.throughput(Throughput::Bytes((words * 4) as u64));
        for k in levels() {
            group.bench_function(k.name(), |b| b.iter(|| k.popcount(black_box(&src))));
        }
        memcpy(&mut group, words * 4);
        group.finish();

        // Worst case: the only set bit is the last one, so the whole mask is scanned.
        let mut one = vec![0u32; words];
        one[words - 1] = 1 << 31;
        let mut group = c.benchmark_group(format!("single_set_bit/{size}"));
        group.throughput(Throughput::Bytes((words * 4) as u64));
        for k in levels() {
            group.bench_function(k.name(), |b| {
                b.iter(|| k.single_set_bit(black_box(&one)));
            });
        }
        memcpy(&mut group, words * 4);
        group.finish();
    }
}

fn apply_mask(c: &mut Criterion) {
    type Op16 = fn(Kernel, &mut [u16], &[u32]);
    let ops16: [(&str, Op16); 2] = [
        ("apply_mask_f16", Kernel::apply_mask_f16),
        ("apply_mask_bf16", Kernel::apply_mask_bf16),
    ];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for (size, tokens) in SIZES {
        let words = tokens / 32;
        let masks = [
            ("random", rng.words(words)),
            ("sparse", rng.sparse_words(words)),
        ];
        for (shape, mask) in &masks {
            let mut logits: Vec<f32> = (0..tokens).map(|i| i as f32 * 1e-3).collect();
            let mut group = c.benchmark_group(format!("apply_mask_f32/{size}/{shape}"));
            group.throughput(Throughput::Bytes((tokens * 4) as u64));
            for k in levels() {
                group.bench_function(k.name(), |b| {
                    b.iter(|| k.apply_mask_f32(black_box(&mut logits), black_box(mask)));
                });
            }
            memcpy(&mut group, tokens * 4);
            group.finish();

            for (name, op) in ops16 {
                let mut logits: Vec<u16> = (0..tokens).map(|i| (i as u16) & 0x7BFF).collect();
                let mut group = c.benchmark_group(format!("{name}/{size}/{shape}"));
                group.throughput(Throughput::Bytes((tokens * 2) as u64));
                for k in levels() {
                    group.bench_function(k.name(), |b| {
                        b.iter(|| op(k, black_box(&mut logits), black_box(mask)));
                    });
                }
                memcpy(&mut group, tokens * 2);
                group.finish();
            }
        }

        // A batch of rows, each with its own random mask.
        let masks = rng.words(words * BATCH_ROWS);
        let mut logits = vec![0.5f32; tokens * BATCH_ROWS];
        let mut group = c.benchmark_group(format!("apply_mask_f32_batch/{BATCH_ROWS}x{size}"));
        group.throughput(Throughput::Bytes((tokens * BATCH_ROWS * 4) as u64));
        for k in levels() {
            group.bench_function(k.name(), |b| {
                b.iter(|| {
                    k.apply_mask_f32_batch(black_box(&mut logits), tokens, black_box(&masks), words)
                });
            });
        }
        memcpy(&mut group, tokens * BATCH_ROWS * 4);
        group.finish();

        // Sparse: one candidate per token of the row, in random vocabulary order.
        let mask = rng.words(words);
        let ids: Vec<u32> = (0..tokens)
            .map(|_| rng.next_u32() % tokens as u32)
            .collect();
        let mut logits = vec![0.5f32; tokens];
        let mut group = c.benchmark_group(format!("apply_mask_sparse_f32/{size}"));
        group.throughput(Throughput::Bytes((tokens * 4) as u64));
        for k in levels() {
            group.bench_function(k.name(), |b| {
                b.iter(|| k.apply_mask_sparse_f32(black_box(&mut logits), black_box(&ids), &mask));
            });
        }
        memcpy(&mut group, tokens * 4);
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = common::criterion(Duration::from_secs(1), 100);
    targets = bitsets, apply_mask
}
criterion_main!(benches);
