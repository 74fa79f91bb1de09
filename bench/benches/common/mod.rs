//! Shared setup of the criterion benches: the criterion configuration (with the flamegraph
//! profiler under `--features pprof`) and the benchmark vocabulary.
//!
//! Each bench target includes this file as `mod common;` and uses only part of it.
#![allow(
    dead_code,
    reason = "each bench target uses only some of these helpers"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use sieve_core::Vocabulary;

/// The real vocabulary the benches use: `../shared/tokenizers/llama3.json` beside the
/// checkout (128,256 ids). `SIEVE_BENCH_TOKENIZER` names another one (`o200k_base`,
/// `cl100k_base` or a `tokenizer.json` path).
const LLAMA3: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/tokenizers/llama3.json"
);

/// Criterion with the house defaults (0.5 s warm-up, `measurement` per bench, `samples`
/// samples) and, under `--features pprof`, the flamegraph profiler for `--profile-time`.
/// Command-line flags override all of these.
pub fn criterion(measurement: Duration, samples: usize) -> Criterion {
    let c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(measurement)
        .sample_size(samples);
    #[cfg(feature = "pprof")]
    let c = c.with_profiler(flamegraph::FlamegraphProfiler::default());
    c.configure_from_args()
}

/// The bench vocabulary and a short name for benchmark ids: Llama 3's (or
/// `SIEVE_BENCH_TOKENIZER`'s) if it loads, else `Vocabulary::synthetic(128_000, 42)` with a
/// note on stderr.
pub fn vocabulary() -> (String, Arc<Vocabulary>) {
    let source = std::env::var("SIEVE_BENCH_TOKENIZER").unwrap_or_else(|_| LLAMA3.to_owned());
    match sieve_bench::tokenizer::LoadedTokenizer::load(&source) {
        Ok(tok) => (short_name(&source), tok.vocab),
        Err(e) => {
            eprintln!(
                "note: no tokenizer at {source} ({e:#}); \
                 using Vocabulary::synthetic(128_000, 42)"
            );
            (
                "synthetic128k".to_owned(),
                Arc::new(Vocabulary::synthetic(128_000, 42)),
            )
        }
    }
}

/// `llama3` for `.../llama3.json`; names without a path stay as they are.
fn short_name(source: &str) -> String {
    let file = source.rsplit('/').next().unwrap_or(source);
    file.strip_suffix(".json").unwrap_or(file).to_owned()
}

/// The `criterion::profiler::Profiler` adaptor around [`sieve_bench::profile::Sampler`].
/// pprof's own `criterion` feature pins criterion 0.5, so we keep this small one instead.
#[cfg(feature = "pprof")]
mod flamegraph {
    use std::path::Path;

    use criterion::profiler::Profiler;
    use sieve_bench::profile::Sampler;

    /// Samples each benchmark during `--profile-time` and writes
    /// `target/criterion/<bench>/profile/flamegraph.svg`.
    #[derive(Debug, Default)]
    pub struct FlamegraphProfiler {
        sampler: Option<Sampler>,
    }

    impl Profiler for FlamegraphProfiler {
        fn start_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
            match Sampler::start() {
                Ok(s) => self.sampler = Some(s),
                Err(e) => eprintln!("{benchmark_id}: no flamegraph: {e:#}"),
            }
        }

        fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
            let Some(sampler) = self.sampler.take() else {
                return;
            };
            let path = benchmark_dir.join("flamegraph.svg");
            let written = std::fs::create_dir_all(benchmark_dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| sampler.write_flamegraph(&path));
            match written {
                Ok(()) => eprintln!("{benchmark_id}: wrote {}", path.display()),
                Err(e) => eprintln!("{benchmark_id}: no flamegraph: {e:#}"),
            }
        }
    }
}
