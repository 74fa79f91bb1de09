//! How much a batch call costs beyond its items: `cargo run --release -p sieve-runner
//! --example overhead -- [ITEM_NS] [ITEMS] [GAP_US] [CALLS]`. Each item spins ITEM_NS ns; the
//! calls are GAP_US µs apart (the host's work between steps: tens of µs when it only consumes
//! tokens, milliseconds when a forward pass runs between calls). Prints, at 1, 2 and 8
//! threads, the median, mean and p90 call time and the speed-up over 1 thread (of the means).
use std::time::{Duration, Instant};

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn main() {
    let a: Vec<u64> = std::env::args()
        .skip(1)
        .map(|s| s.parse().unwrap())
        .collect();
    let item = Duration::from_nanos(*a.first().unwrap_or(&2000));
    let items = *a.get(1).unwrap_or(&64) as usize;
    let gap = Duration::from_micros(*a.get(2).unwrap_or(&150));
    let calls = *a.get(3).unwrap_or(&2000) as usize;
    let order: Vec<usize> = (0..items).collect();
    // What the bindings pass: the batch's expected work (here exact).
    let expected = item.as_nanos() as u64 * items as u64;
    let mut base = 0.0;
    for threads in [1usize, 2, 8] {
        let pool = sieve_runner::Pool::new(threads);
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            spin(gap);
            let t = Instant::now();
            pool.run_expecting(&order, expected, &|_| spin(item))
                .unwrap();
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let mean = times.iter().sum::<f64>() / calls as f64;
        times.sort_by(f64::total_cmp);
        if threads == 1 {
            base = mean;
        }
        println!(
            "threads {threads}: call µs median {:.1} mean {mean:.1} p90 {:.1}; speed-up {:.2}x",
            times[calls / 2],
            times[calls * 9 / 10],
            base / mean
        );
    }
}
