//! Sampling flamegraphs through `pprof` (only with `--features pprof`).
//!
//! [`Sampler`] wraps a `pprof::ProfilerGuard`: [`Sampler::start`] arms a `SIGPROF` timer at
//! [`Sampler::FREQUENCY`] Hz for the whole process, and [`Sampler::write_flamegraph`] stops it
//! and writes an SVG. `sieve maskbench --flamegraph FILE` uses it around the run, and the
//! criterion benches use it through their `Profiler` adaptor (`benches/common/mod.rs`) for
//! `--profile-time`.
//!
//! Only one sampler can run at a time (pprof keeps one process-wide profiler). Frames in
//! libc, libgcc, libpthread and the vDSO are not unwound through: unwinding from a signal
//! inside them can crash, and they only add noise. Cost: one stack walk per sample, about
//! 1% of a core at 997 Hz.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

/// A running process-wide sampling profiler.
pub struct Sampler {
    guard: pprof::ProfilerGuard<'static>,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("frequency", &Self::FREQUENCY)
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Samples per second: prime, so sampling does not beat in step with periodic work.
    pub const FREQUENCY: i32 = 997;
    /// Shared objects whose frames are not unwound through.
    pub const BLOCKLIST: [&'static str; 4] = ["libc", "libgcc", "pthread", "vdso"];

    /// Starts sampling.
    ///
    /// # Errors
    /// Another sampler is running, or the timer could not be set.
    pub fn start() -> Result<Sampler> {
        let guard = pprof::ProfilerGuardBuilder::default()
            .frequency(Self::FREQUENCY)
            .blocklist(&Self::BLOCKLIST)
            .build()
            .map_err(|e| anyhow!("starting the pprof sampler: {e}"))?;
        Ok(Sampler { guard })
    }

    /// Stops sampling and writes the samples taken as an SVG flamegraph to `path`.
    ///
    /// # Errors
    /// No sample was taken (the run was shorter than one tick of the kernel's profiling
    /// timer, e.g. 4 ms at `CONFIG_HZ=250`; nothing is written), or symbolizing the samples
    /// or writing the file failed.
    pub fn write_flamegraph(self, path: &Path) -> Result<()> {
        let report = self
            .guard
            .report()
            .build()
            .map_err(|e| anyhow!("building the pprof report: {e}"))?;
        drop(self.guard);
        if report.data.is_empty() {
            bail!(
                "no flamegraph written to {}: no samples were taken (the run was too short)",
                path.display()
            );
        }
        let file = File::create(path).with_context(|| format!("writing {}", path.display()))?;
        let mut w = BufWriter::new(file);
        report
            .flamegraph(&mut w)
            .map_err(|e| anyhow!("writing the flamegraph {}: {e}", path.display()))?;
        w.flush()
            .with_context(|| format!("writing {}", path.display()))
    }
}
