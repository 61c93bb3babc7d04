//! Latency histograms: HdrHistogram at microsecond resolution, 3 significant digits.
//!
//! Invariants: a histogram grows only to the largest value recorded (so one that
//! saw only sub-second latencies stays small); percentiles are nearest-rank
//! (rank = ⌈p·n⌉, computed in integers, never in floating point) and report the
//! highest value of the rank's bucket (clamped to the exact min and max), so
//! they are within 0.1% (+1 µs of rounding) of the exact nearest-rank value;
//! count, min, max and mean are exact.

use hdrhistogram::Histogram;

/// Significant decimal digits kept by every latency histogram.
pub const SIGFIG: u8 = 3;

/// The latencies of a set of exchanges.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    hist: Histogram<u32>,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist::new()
    }
}

impl LatencyHist {
    /// An empty histogram.
    pub fn new() -> LatencyHist {
        // An auto-resizing histogram; `new` fails only for more than 5 digits.
        let hist = Histogram::new(SIGFIG).expect("3 significant digits is a valid precision");
        LatencyHist {
            hist,
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }

    /// Records one latency, in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        let us = ns_to_us(ns);
        // `record` grows the histogram to fit; `saturating_record` would clamp.
        if self.hist.record(us).is_err() {
            self.hist.saturating_record(us);
        }
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The nearest-rank value at `permille` (500 = median, 999 = p99.9), in
    /// microseconds: the highest value of the bucket holding rank ⌈permille·n/1000⌉.
    pub fn value_at_permille(&self, permille: u64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let n = self.hist.len();
        let rank = (permille.min(1000) * n).div_ceil(1000).max(1);
        let mut seen = 0u64;
        for v in self.hist.iter_recorded() {
            seen += v.count_since_last_iteration();
            if seen >= rank {
                return Some(v.value_iterated_to());
            }
        }
        Some(self.hist.max())
    }

    /// The summary shown in reports.
    pub fn summary(&self) -> Option<LatencyMs> {
        if self.count == 0 {
            return None;
        }
        // A bucket's highest value may pass the exact extremes; keep percentiles inside them.
        let (lo, hi) = (self.min_ns as f64 / 1e6, self.max_ns as f64 / 1e6);
        let us = |p| {
            self.value_at_permille(p)
                .map_or(0.0, |v| v as f64 / 1e3)
                .clamp(lo, hi)
        };
        Some(LatencyMs {
            count: self.count,
            p50: us(500),
            p90: us(900),
            p99: us(990),
            p999: us(999),
            min: self.min_ns as f64 / 1e6,
            max: self.max_ns as f64 / 1e6,
            mean: (self.sum_ns as f64 / self.count as f64) / 1e6,
        })
    }
}

/// A latency nanosecond count rounded to the nearest microsecond.
fn ns_to_us(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

/// Latency percentiles of a set of exchanges, in milliseconds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LatencyMs {
    /// Exchanges measured.
    pub count: u64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Smallest (exact).
    pub min: f64,
    /// Largest (exact).
    pub max: f64,
    /// Mean (exact).
    pub mean: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_within_precision() {
        let mut h = LatencyHist::new();
        let vals: Vec<u64> = (1..=1000u64).map(|i| i * 1_234_567).collect();
        for v in &vals {
            h.record(*v);
        }
        for p in [500u64, 900, 990, 999, 1000] {
            let rank = (p * 1000).div_ceil(1000) as usize;
            let exact = vals[rank - 1] as f64 / 1e3;
            let got = h.value_at_permille(p).unwrap() as f64;
            assert!(
                (got - exact).abs() <= exact * 0.001 + 1.0,
                "p{p}: {got} vs {exact}"
            );
        }
        let s = h.summary().unwrap();
        assert_eq!(s.count, 1000);
        assert_eq!(s.max, 1000.0 * 1_234_567.0 / 1e6);
        assert_eq!(s.min, 1_234_567.0 / 1e6);
    }

    #[test]
    fn empty_and_single() {
        let mut h = LatencyHist::new();
        assert!(h.summary().is_none());
        h.record(0);
        let s = h.summary().unwrap();
        assert_eq!((s.p50, s.max, s.count), (0.0, 0.0, 1));
    }
}
