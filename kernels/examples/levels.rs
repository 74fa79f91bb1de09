//! Times every kernel at every level this CPU has, on one 128k-token row (4,008 mask words):
//! a small, dependency-free timer for targets where the criterion bench
//! (`cargo bench -p sieve-bench --bench kernels`) is not at hand, such as aarch64 or 32-bit
//! ARM under `qemu-user` (`bench/perf.md`, "Kernels in the engine"). Prints the minimum over
//! `REPS` batches of the time per call, in microseconds, and the ratio to scalar.
//!
//! `cargo run --release -p sieve-kernels --example levels [REPS] [KERNEL] [LEVEL]`
//!
//! `KERNEL` (a substring of the kernel's row name) and `LEVEL` (`scalar`, `avx2`, `neon`)
//! restrict the run, for instruction counts under an emulator: with `REPS = 1` each kernel
//! runs 8 times, so the count over a run minus the count with `KERNEL = none` is 8 calls.

use sieve_kernels::Kernel;
use std::hint::black_box;
use std::time::Instant;

const TOKENS: usize = 128_256;
const WORDS: usize = TOKENS.div_ceil(32);

/// xorshift64*: deterministic inputs without a dependency.
fn rng(seed: u64) -> impl FnMut() -> u32 {
    let mut s = seed;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

/// Minimum over `reps` batches of the mean time of `f`, in microseconds.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    let per = 8;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..per {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / per as f64);
    }
    best
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let only_kernel = std::env::args().nth(2);
    let only_level = std::env::args().nth(3);
    let mut next = rng(42);
    let random: Vec<u32> = (0..WORDS).map(|_| next()).collect();
    // A JSON-string-like mask: mostly all-allowed words, some mixed, some empty.
    let mostly: Vec<u32> = (0..WORDS)
        .map(|i| match next() % 8 {
            0 => 0,
            1 => next(),
            _ => {
                if i % 5 == 0 {
                    next()
                } else {
                    u32::MAX
                }
            }
        })
        .collect();
    let src: Vec<u32> = (0..WORDS).map(|_| next()).collect();
    let logits: Vec<f32> = (0..TOKENS).map(|i| i as f32 * 0.001).collect();
    let logits16: Vec<u16> = (0..TOKENS).map(|i| (i as u16) & 0x7BFF).collect();
    let ids: Vec<u32> = (0..4096).map(|_| next() % TOKENS as u32).collect();
    let levels: Vec<Kernel> = Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available())
        .filter(|k| only_level.as_deref().is_none_or(|l| l == k.name()))
        .collect();
    println!(
        "kernels at each level, {TOKENS} tokens ({WORDS} words), min of {reps} batches, µs per call; selected: {}",
        Kernel::selected().name()
    );
    let mut rows: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut row = |name: &'static str, f: &mut dyn FnMut(Kernel) -> f64| {
        if only_kernel.as_deref().is_some_and(|k| !name.contains(k)) {
            return;
        }
        rows.push((name, levels.iter().map(|&k| f(k)).collect()));
    };
    row("or_into", &mut |k| {
        let mut d = random.clone();
        time(reps, || k.or_into(black_box(&mut d), black_box(&src)))
    });
    row("and_into", &mut |k| {
        let mut d = random.clone();
        time(reps, || k.and_into(black_box(&mut d), black_box(&src)))
    });
    row("popcount", &mut |k| {
        time(reps, || {
            black_box(k.popcount(black_box(&random)));
        })
    });
    row("single_set_bit (empty)", &mut |k| {
        let zero = vec![0u32; WORDS];
        time(reps, || {
            black_box(k.single_set_bit(black_box(&zero)));
        })
    });
    row("apply_mask_f32 (random)", &mut |k| {
        let mut l = logits.clone();
        time(reps, || {
            l.copy_from_slice(&logits);
            k.apply_mask_f32(black_box(&mut l), black_box(&random));
        })
    });
    row("apply_mask_f32 (mostly allowed)", &mut |k| {
        let mut l = logits.clone();
        time(reps, || {
            l.copy_from_slice(&logits);
            k.apply_mask_f32(black_box(&mut l), black_box(&mostly));
        })
    });
    row("apply_mask_bf16 (random)", &mut |k| {
        let mut l = logits16.clone();
        time(reps, || {
            l.copy_from_slice(&logits16);
            k.apply_mask_bf16(black_box(&mut l), black_box(&random));
        })
    });
    row("apply_mask_f32_batch (4 rows)", &mut |k| {
        let batch: Vec<f32> = logits.iter().copied().cycle().take(4 * TOKENS).collect();
        let masks: Vec<u32> = random.iter().copied().cycle().take(4 * WORDS).collect();
        let mut l = batch.clone();
        time(reps, || {
            l.copy_from_slice(&batch);
            k.apply_mask_f32_batch(black_box(&mut l), TOKENS, black_box(&masks), WORDS);
        })
    });
    row("apply_mask_sparse_f32 (4096 ids)", &mut |k| {
        let mut l = vec![1.0f32; ids.len()];
        time(reps, || {
            l.fill(1.0);
            k.apply_mask_sparse_f32(black_box(&mut l), black_box(&ids), black_box(&random));
        })
    });
    print!("{:<34}", "kernel");
    for k in &levels {
        print!("{:>12}", k.name());
    }
    println!("{:>14}", "best/scalar");
    for (name, t) in rows {
        print!("{name:<34}");
        for x in &t {
            print!("{x:>12.2}");
        }
        let scalar = t.last().copied().unwrap_or(f64::NAN);
        let best = t.iter().copied().fold(f64::INFINITY, f64::min);
        println!("{:>13.2}x", scalar / best);
    }
}
