//! Summary statistics for timings: mean and nearest-rank percentiles.

use std::time::Duration;

/// Mean, percentiles and maximum of a set of durations, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Arithmetic mean (µs).
    pub mean_us: f64,
    /// Median, nearest rank (µs).
    pub p50_us: f64,
    /// 99th percentile, nearest rank (µs).
    pub p99_us: f64,
    /// Maximum (µs).
    pub max_us: f64,
}

impl Summary {
    /// Summarizes `samples`; all fields are zero when it is empty.
    pub fn from_durations(samples: &[Duration]) -> Summary {
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let Some(&max_us) = us.last() else {
            return Summary::default();
        };
        Summary {
            count: us.len(),
            mean_us: us.iter().sum::<f64>() / us.len() as f64,
            p50_us: percentile_sorted(&us, 50.0),
            p99_us: percentile_sorted(&us, 99.0),
            max_us,
        }
    }
}

/// Nearest-rank percentile `p` (0–100) of ascending `sorted`: the smallest sample with at
/// least `p`% of the samples at or below it. Zero for an empty slice.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mean {:.1} µs, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            self.mean_us, self.p50_us, self.p99_us, self.max_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile_sorted(&v, 50.0), 50.0);
        assert_eq!(percentile_sorted(&v, 99.0), 99.0);
        assert_eq!(percentile_sorted(&v, 100.0), 100.0);
        assert_eq!(percentile_sorted(&v, 0.0), 1.0);
        assert_eq!(percentile_sorted(&[7.0], 99.0), 7.0);
        assert_eq!(percentile_sorted(&[], 50.0), 0.0);
    }

    #[test]
    fn summary() {
        let d: Vec<Duration> = [3, 1, 2].map(Duration::from_micros).to_vec();
        let s = Summary::from_durations(&d);
        assert_eq!(s.count, 3);
        assert!((s.mean_us - 2.0).abs() < 1e-9);
        assert_eq!(s.p50_us, 2.0);
        assert_eq!(s.p99_us, 3.0);
        assert_eq!(s.max_us, 3.0);
        assert_eq!(Summary::from_durations(&[]), Summary::default());
    }
}
