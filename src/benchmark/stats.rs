//! Statistics of one workload's per-iteration times, with reference 0.17.2's
//! formulas: population standard deviation, quartiles by linear interpolation
//! between closest ranks, outliers outside `[Q1 - 1.5 IQR, Q3 + 1.5 IQR]`, and
//! the 95% interval of a mean as `mean ± 1.96 · std / √n`. A speed-up is
//! `reference mean / mean`; its interval divides the reference mean by the
//! bounds of the mean's interval, and it is significant when the whole
//! interval of the mean lies below the reference mean (as the reference says).
//!
//! The stability [`Verdict`] (issue 43) reads the same interval: `faster` or
//! `slower` when it excludes 1, `not significant` when it holds 1 and lies
//! within ±[`TOLERANCE`] of the ratio, else `undecided` (more samples could
//! still tell). The driver repeats its interleaved rounds with the same rule.

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
    /// What the interval shows.
    pub verdict: Verdict,
}

/// How narrow (relative to the ratio, each side) an interval holding 1 must
/// be to call the difference not significant: 5% (issue 43).
pub const TOLERANCE: f64 = 0.05;

/// What the 95% interval of a [`SpeedUp`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval lies above 1.
    Faster,
    /// The interval lies below 1.
    Slower,
    /// The interval holds 1 and lies within ±[`TOLERANCE`] of the ratio.
    NotSignificant,
    /// The interval holds 1 and is wider than that: more rounds could decide.
    Undecided,
}

impl Verdict {
    /// The verdict of the interval `low`..`high` around `ratio`.
    pub fn of(ratio: f64, low: f64, high: f64) -> Verdict {
        if low > 1.0 {
            Verdict::Faster
        } else if high < 1.0 {
            Verdict::Slower
        } else if low >= ratio * (1.0 - TOLERANCE) && high <= ratio * (1.0 + TOLERANCE) {
            Verdict::NotSignificant
        } else {
            Verdict::Undecided
        }
    }

    /// Its words in the text table.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NotSignificant => "not significant",
            Verdict::Undecided => "undecided",
        }
    }

    /// Whether more samples could change it.
    pub fn decided(self) -> bool {
        self != Verdict::Undecided
    }
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
    let (ratio, low, high) = (
        baseline_ms / timed.mean_ms,
        over(timed.ci_high_ms),
        over(timed.ci_low_ms),
    );
    Some(SpeedUp {
        ratio,
        low,
        high,
        significant: timed.ci_high_ms < baseline_ms,
        verdict: Verdict::of(ratio, low, high),
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

    #[test]
    fn the_verdict_says_not_significant_only_for_a_narrow_interval() {
        assert_eq!(Verdict::of(1.2, 1.1, 1.3), Verdict::Faster);
        assert_eq!(Verdict::of(0.8, 0.7, 0.9), Verdict::Slower);
        assert_eq!(Verdict::of(1.0, 0.97, 1.03), Verdict::NotSignificant);
        assert_eq!(Verdict::of(1.0, 0.9, 1.1), Verdict::Undecided);
        assert_eq!(Verdict::of(1.0, 0.5, f64::INFINITY), Verdict::Undecided);
        let t = timing(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(speed_up(10.0, &t).unwrap().verdict, Verdict::Faster);
        assert_eq!(speed_up(5.0, &t).unwrap().verdict, Verdict::Undecided);
    }
}
