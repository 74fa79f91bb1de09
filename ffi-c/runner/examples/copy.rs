//! What memory lets two threads gain on batches of mask copies: `cargo run --release -p
//! sieve-runner --example copy -- SOURCES ROWS`. Each call copies, per item, one of SOURCES
//! 16,032-byte masks (the Llama 3 vocabulary's 4,008 words) into the item's own row of a
//! ROWS-row bitmask, back to back, 3,000 calls at 1 and 2 threads. A warm batch of one
//! schema is mostly such copies (a remembered or kept mask into the caller's row), so this is
//! the ceiling of its speed-up on the machine.
use std::sync::Mutex;
use std::time::Instant;

fn main() {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("SOURCES ROWS"))
        .collect();
    let (nsrc, rows, words) = (*a.first().unwrap_or(&8), *a.get(1).unwrap_or(&64), 4008);
    let src: Vec<Vec<u32>> = (0..nsrc).map(|i| vec![i as u32; words]).collect();
    let dst: Vec<Mutex<Vec<u32>>> = (0..rows).map(|_| Mutex::new(vec![0u32; words])).collect();
    let order: Vec<usize> = (0..rows).collect();
    for threads in [1usize, 2] {
        let pool = sieve_runner::Pool::new(threads);
        let t = Instant::now();
        for call in 0..3000 {
            pool.run_expecting(&order, u64::MAX, &|i| {
                dst[i]
                    .lock()
                    .unwrap()
                    .copy_from_slice(&src[(call * 7 + i) % nsrc]);
            })
            .unwrap();
        }
        println!(
            "sources {nsrc} rows {rows} threads {threads}: {:.1} µs a call",
            t.elapsed().as_secs_f64() / 3000.0 * 1e6
        );
    }
}
