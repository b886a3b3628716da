//! Statistics of one workload's per-iteration times, with reference 0.17.2's
//! formulas: population standard deviation, quartiles by linear interpolation
//! between closest ranks, outliers outside `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]`, and
//! the 95% interval of a mean as `mean ± 1.96 · std / √n`. A speed-up is
//! `reference mean / mean`; its interval divides the reference mean by the
//! bounds of the mean's interval, and it is significant when the whole
//! interval of the mean lies below the reference mean (as the reference says).

use serde::Serialize;

/// Summary of a sample of times, all in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Timing {
    /// Number of samples.
    pub iterations: usize,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Population standard deviation.
    pub std_ms: f64,
    /// Smallest sample.
    pub min_ms: f64,
    /// Largest sample.
    pub max_ms: f64,
    /// 25th percentile.
    pub q1_ms: f64,
    /// 75th percentile.
    pub q3_ms: f64,
    /// `q3_ms - q1_ms`.
    pub iqr_ms: f64,
    /// Samples outside `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]`.
    pub outliers: usize,
    /// Lower bound of the 95% interval of the mean.
    pub ci_low_ms: f64,
    /// Upper bound of the 95% interval of the mean.
    pub ci_high_ms: f64,
}

/// A speed-up `baseline mean / timed mean` with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpeedUp {
    /// The ratio of the means (above 1: faster than the baseline).
    pub ratio: f64,
    /// The baseline mean over the upper bound of the timed mean's interval.
    pub low: f64,
    /// The baseline mean over the lower bound of that interval (infinite
    /// when the bound is not positive).
    pub high: f64,
    /// Whether the timed mean's whole interval lies below the baseline mean.
    pub significant: bool,
}

/// The `p`-th percentile (0 to 100) of sorted `data`, interpolating linearly
/// between the ranks around `(n - 1) · p / 100`; 0 for no data.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted {
        [] => 0.0,
        [only] => *only,
        _ => {
            let at = (sorted.len() - 1) as f64 * p / 100.0;
            let lower = at.floor() as usize;
            let upper = (lower + 1).min(sorted.len() - 1);
            let weight = at - lower as f64;
            sorted[lower] * (1.0 - weight) + sorted[upper] * weight
        }
    }
}

/// The [`Timing`] of `samples` (milliseconds); `None` for no samples.
pub fn timing(samples: &[f64]) -> Option<Timing> {
    if samples.is_empty() {
        return None;
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let std = (samples.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n).sqrt();
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (q1, q3) = (percentile(&sorted, 25.0), percentile(&sorted, 75.0));
    let iqr = q3 - q1;
    let (low, high) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let margin = 1.96 * std / n.sqrt();
    Some(Timing {
        iterations: samples.len(),
        mean_ms: mean,
        std_ms: std,
        min_ms: sorted[0],
        max_ms: sorted[sorted.len() - 1],
        q1_ms: q1,
        q3_ms: q3,
        iqr_ms: iqr,
        outliers: samples.iter().filter(|&&t| t < low || t > high).count(),
        ci_low_ms: mean - margin,
        ci_high_ms: mean + margin,
    })
}

/// How much faster `timed` is than a baseline whose mean is `baseline_ms`;
/// `None` when `timed`'s mean is not positive.
pub fn speed_up(baseline_ms: f64, timed: &Timing) -> Option<SpeedUp> {
    if timed.mean_ms <= 0.0 {
        return None;
    }
    let over = |bound: f64| {
        if bound > 0.0 {
            baseline_ms / bound
        } else {
            f64::INFINITY
        }
    };
    Some(SpeedUp {
        ratio: baseline_ms / timed.mean_ms,
        low: over(timed.ci_high_ms),
        high: over(timed.ci_low_ms),
        significant: timed.ci_high_ms < baseline_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let data = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&data, 25.0), 1.75);
        assert_eq!(percentile(&data, 75.0), 3.25);
        assert_eq!(percentile(&[5.0], 25.0), 5.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn outliers_lie_outside_one_and_a_half_iqr() {
        let t = timing(&[1.0, 1.0, 1.0, 1.0, 1.1, 1.0, 9.0, 1.0]).unwrap();
        assert_eq!(t.outliers, 2);
        assert_eq!(t.min_ms, 1.0);
        assert_eq!(t.max_ms, 9.0);
        assert_eq!(t.iterations, 8);
    }

    #[test]
    fn mean_std_and_interval_follow_the_reference_formulas() {
        let t = timing(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(t.mean_ms, 5.0);
        assert_eq!(t.std_ms, 2.0);
        let margin = 1.96 * 2.0 / 8f64.sqrt();
        assert!((t.ci_low_ms - (5.0 - margin)).abs() < 1e-12);
        assert!((t.ci_high_ms - (5.0 + margin)).abs() < 1e-12);
        let s = speed_up(10.0, &t).unwrap();
        assert_eq!(s.ratio, 2.0);
        assert!((s.low - 10.0 / (5.0 + margin)).abs() < 1e-12);
        assert!((s.high - 10.0 / (5.0 - margin)).abs() < 1e-12);
        assert!(s.significant);
        assert!(!speed_up(5.5, &t).unwrap().significant);
        assert!(timing(&[]).is_none());
    }
}
