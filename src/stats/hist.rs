//! Latency histograms: HdrHistogram at microsecond resolution, 3 significant digits.
//!
//! Invariants: a histogram grows only to twice the largest value recorded (so
//! one that saw only sub-second latencies stays small); percentiles are nearest-rank
//! (rank = ⌈p·n⌉, computed in integers, never in floating point) and report the
//! highest value of the rank's bucket (clamped to the exact min and max), so
//! they are within 0.1% (+1 µs of rounding) of the exact nearest-rank value;
//! count, min, max and mean are exact.
//!
//! A histogram starts sparse: up to [`SPARSE`] (bucket, count) pairs, sorted by
//! bucket, in a few KiB instead of the tens of KiB of an HdrHistogram's counts
//! array (a capture has a histogram per connection, most with few distinct
//! latencies). Past that it moves its counts into an HdrHistogram, sized at
//! once for twice its largest value, so that moving its sorted counts in does
//! not grow it (a copy of its counts) at every power of two. The buckets
//! are HdrHistogram's own (`lowest_equivalent` of [`SIGFIG`] digits, lowest
//! discernible value 1), so both forms give the same percentiles.

use std::borrow::Cow;

use hdrhistogram::Histogram;

use crate::analyzer::{FetchOutcome, MessageInfo};

/// Significant decimal digits kept by every latency histogram.
pub const SIGFIG: u8 = 3;

/// Most distinct buckets a histogram keeps in its sparse form.
pub const SPARSE: usize = 128;

/// Latencies a histogram holds before it counts them in its buckets, all at
/// once: a counts array is tens of KiB, and a capture has a histogram per
/// connection, so a bucket recorded alone is mostly a cache miss; a burst of
/// one connection's latencies lands in a few buckets near each other.
const PENDING: usize = 32;

/// log2 of the sub-bucket count of a 3-digit HdrHistogram with lowest value 1:
/// 2048 sub-buckets give unit resolution up to 2·10³.
const SUB_BUCKET_BITS: u32 = 11;

/// HdrHistogram's bucket of `v` (3 digits, lowest discernible value 1): how
/// many powers of two `v` is past the unit-resolution range.
fn bucket_of(v: u64) -> u32 {
    (64 - SUB_BUCKET_BITS) - (v | ((1 << SUB_BUCKET_BITS) - 1)).leading_zeros()
}

/// The lowest value counted with `v` (HdrHistogram's `lowest_equivalent`).
fn lowest_equivalent(v: u64) -> u64 {
    let b = bucket_of(v);
    (v >> b) << b
}

/// The highest value counted with `v` (HdrHistogram's `highest_equivalent`).
fn highest_equivalent(v: u64) -> u64 {
    if v == u64::MAX {
        return u64::MAX;
    }
    lowest_equivalent(v).saturating_add(1 << bucket_of(v)) - 1
}

/// Where a histogram keeps its counts.
#[derive(Clone, Debug)]
enum Counts {
    /// (lowest value of the bucket, count), sorted by bucket; at most [`SPARSE`].
    Sparse(Vec<(u64, u32)>),
    /// An auto-resizing HdrHistogram.
    Dense(Box<Histogram<u32>>),
}

/// The latencies of a set of exchanges.
///
/// `count`, `sum_ns`, `min_ns` and `max_ns` take every latency at once;
/// `counts` takes them [`PENDING`] at a time (the first `pending_len` of
/// `pending`, in microseconds), or when read ([`LatencyHist::settle`]).
/// The buckets' counts do not depend on the order values are added in, so
/// neither do the percentiles.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    counts: Counts,
    count: u64,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    pending: [u64; PENDING],
    pending_len: usize,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist::new()
    }
}

/// An empty auto-resizing HdrHistogram of [`SIGFIG`] digits.
fn dense() -> Histogram<u32> {
    // `new` fails only for more than 5 digits.
    Histogram::new(SIGFIG).expect("3 significant digits is a valid precision")
}

/// How far past the largest value so far a histogram made dense is sized
/// at once: a value past its range grows it (a copy of its counts), and
/// latencies, ages and gaps tend to reach for larger ones as a capture goes
/// on. Each doubling is a bucket of 1,024 counts (4 KiB); eight times
/// saved no more instructions than twice, in 3 MB more on the corpus.
const HEADROOM: u64 = 2;

/// An empty auto-resizing HdrHistogram of [`SIGFIG`] digits, sized for
/// values up to [`HEADROOM`] times `us`.
fn dense_for(us: u64) -> Histogram<u32> {
    let high = us.saturating_mul(HEADROOM).max(2);
    match Histogram::new_with_bounds(1, high, SIGFIG) {
        Ok(mut h) => {
            h.auto(true);
            h
        }
        Err(_) => dense(),
    }
}

/// Records `n` values of `us` in `h`, growing it to fit.
fn record_dense(h: &mut Histogram<u32>, us: u64, n: u32) {
    // `record_n` grows the histogram to fit; `saturating_record_n` would clamp.
    if h.record_n(us, n).is_err() {
        h.saturating_record_n(us, n);
    }
}

impl LatencyHist {
    /// An empty histogram (allocates nothing until the first value).
    pub fn new() -> LatencyHist {
        LatencyHist {
            counts: Counts::Sparse(Vec::new()),
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            pending: [0; PENDING],
            pending_len: 0,
        }
    }

    /// Records one latency, in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        if self.pending_len == PENDING {
            self.settle();
        }
        if let Some(slot) = self.pending.get_mut(self.pending_len) {
            *slot = ns_to_us(ns);
            self.pending_len += 1;
        }
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Counts the latencies held back by [`LatencyHist::record`] in their
    /// buckets. Reading a histogram with some held back costs a copy of it:
    /// a caller that reads many settles them first ([`super::Stats::settle`]).
    pub fn settle(&mut self) {
        let (pending, n) = (self.pending, self.pending_len);
        self.pending_len = 0;
        let values = pending.get(..n).unwrap_or_default();
        // The buckets of a dense histogram are read first, all of them:
        // each is mostly a miss in the cache, and reads that depend on
        // nothing overlap, where recording waits for each in turn.
        if let Counts::Dense(h) = &self.counts {
            let seen = values
                .iter()
                .fold(0u32, |a, &us| a.wrapping_add(h.count_at(us)));
            std::hint::black_box(seen);
        }
        for &us in values {
            self.add(us, 1);
        }
    }

    /// Counts `n` more values in the bucket of `us` (microseconds).
    fn add(&mut self, us: u64, n: u32) {
        match &mut self.counts {
            Counts::Dense(h) => record_dense(h, us, n),
            Counts::Sparse(v) => {
                let key = lowest_equivalent(us);
                match v.binary_search_by_key(&key, |e| e.0) {
                    Ok(at) => {
                        if let Some(e) = v.get_mut(at) {
                            e.1 = e.1.saturating_add(n);
                        }
                    }
                    Err(at) if v.len() < SPARSE => v.insert(at, (key, n)),
                    Err(_) => {
                        let largest = v.last().map_or(us, |e| e.0).max(us);
                        let mut h = dense_for(largest);
                        for &(k, c) in v.iter() {
                            record_dense(&mut h, k, c);
                        }
                        record_dense(&mut h, us, n);
                        self.counts = Counts::Dense(Box::new(h));
                    }
                }
            }
        }
    }

    /// Adds the latencies of `other`: the result is the histogram that
    /// recorded both sets of values (bucket counts saturate as recording does).
    pub fn merge(&mut self, other: &LatencyHist) {
        // Those `other` holds back are counted here, with its buckets.
        for &us in other.pending.iter().take(other.pending_len) {
            self.add(us, 1);
        }
        match (&mut self.counts, &other.counts) {
            (_, Counts::Sparse(v)) => {
                for &(k, n) in v {
                    self.add(k, n);
                }
            }
            // HdrHistogram adds counts arrays of one layout index by index.
            (Counts::Dense(h), Counts::Dense(o)) => {
                if h.add(&**o).is_err() {
                    for x in o.iter_recorded() {
                        record_dense(h, x.value_iterated_to(), x.count_at_value());
                    }
                }
            }
            (Counts::Sparse(v), Counts::Dense(o)) => {
                let mut h = o.clone();
                for &(k, n) in v.iter() {
                    record_dense(&mut h, k, n);
                }
                self.counts = Counts::Dense(h);
            }
        }
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The nearest-rank values at `permilles` (500 = median, 999 = p99.9),
    /// in microseconds: for each, the highest value of the bucket holding
    /// rank ⌈permille·n/1000⌉.
    pub fn values_at_permilles<const N: usize>(&self, permilles: [u64; N]) -> [Option<u64>; N] {
        let mut out = [None; N];
        if self.count == 0 {
            return out;
        }
        if self.pending_len > 0 {
            let mut settled = self.clone();
            settled.settle();
            return settled.values_at_permilles(permilles);
        }
        let n = self.count;
        let ranks = permilles.map(|p| (p.min(1000) * n).div_ceil(1000).max(1));
        // Buckets in increasing order as (cumulative count, highest value).
        let mut answer = |seen: u64, value: u64| {
            let mut open = false;
            for (o, &rank) in out.iter_mut().zip(&ranks) {
                if o.is_none() {
                    if seen >= rank {
                        *o = Some(value);
                    } else {
                        open = true;
                    }
                }
            }
            open
        };
        let max = match &self.counts {
            Counts::Sparse(v) => {
                let mut seen = 0u64;
                for &(k, c) in v {
                    seen = seen.saturating_add(u64::from(c));
                    if !answer(seen, highest_equivalent(k)) {
                        return out;
                    }
                }
                v.last().map_or(0, |&(k, _)| highest_equivalent(k))
            }
            // No bucket can have saturated (each holds at most `n` values)
            // and the counts sum to `n`: HdrHistogram's own scan finds each
            // rank, asked as the quantile whose `ceil(q·n)` is the rank:
            // (rank − ½)/n, exact in `f64` far beyond 2³² values. A scan
            // per rank, each from the first count: it sums the counts eight
            // at a time, and four of them take fewer instructions than one
            // pass that adds them one by one (`value_at_quantiles`).
            Counts::Dense(h) if h.len() == n && n < u64::from(u32::MAX) => {
                for (o, &rank) in out.iter_mut().zip(&ranks) {
                    *o = Some(h.value_at_quantile((rank as f64 - 0.5) / n as f64));
                }
                return out;
            }
            Counts::Dense(h) => {
                let mut seen = 0u64;
                for x in h.iter_recorded() {
                    seen = seen.saturating_add(x.count_since_last_iteration());
                    if !answer(seen, x.value_iterated_to()) {
                        return out;
                    }
                }
                h.max()
            }
        };
        // Only when counts saturated: the largest value, as HdrHistogram says.
        for o in &mut out {
            o.get_or_insert(max);
        }
        out
    }

    /// The summary shown in reports.
    pub fn summary(&self) -> Option<LatencyMs> {
        if self.count == 0 {
            return None;
        }
        // A bucket's highest value may pass the exact extremes; keep percentiles inside them.
        let (lo, hi) = (self.min_ns as f64 / 1e6, self.max_ns as f64 / 1e6);
        let [p50, p90, p99, p999] = self
            .values_at_permilles([500, 900, 990, 999])
            .map(|v| v.map_or(0.0, |v| v as f64 / 1e3).clamp(lo, hi));
        Some(LatencyMs {
            count: self.count,
            p50,
            p90,
            p99,
            p999,
            min: self.min_ns as f64 / 1e6,
            max: self.max_ns as f64 / 1e6,
            mean: (self.sum_ns as f64 / self.count as f64) / 1e6,
        })
    }
}

/// A histogram as `stats --format json` carries it for merging (its
/// `merge` section): from it [`LatencyHist::from_data`] makes the very
/// histogram again, so reports of many captures add up bucket by bucket
/// and give the percentiles one histogram of all their values would.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HistData {
    /// Values recorded.
    pub count: u64,
    /// Their sum, in nanoseconds (exact).
    pub sum_ns: u128,
    /// The smallest, in nanoseconds (exact; 0 when empty).
    pub min_ns: u64,
    /// The largest, in nanoseconds (exact).
    pub max_ns: u64,
    /// Each non-empty bucket as (its lowest value in microseconds, its
    /// count), in increasing order: HdrHistogram's buckets of [`SIGFIG`]
    /// digits.
    pub buckets: Vec<(u64, u64)>,
}

impl LatencyHist {
    /// This histogram in its mergeable form.
    pub fn data(&self) -> HistData {
        // A settled histogram is read where it is (a dense one is tens of
        // KiB to copy); one holding values back, from a settled copy.
        let h = match self.pending_len {
            0 => Cow::Borrowed(self),
            _ => {
                let mut h = self.clone();
                h.settle();
                Cow::Owned(h)
            }
        };
        let buckets = match &h.counts {
            Counts::Sparse(v) => v.iter().map(|&(k, c)| (k, u64::from(c))).collect(),
            Counts::Dense(d) => d
                .iter_recorded()
                .map(|x| {
                    (
                        lowest_equivalent(x.value_iterated_to()),
                        u64::from(x.count_at_value()),
                    )
                })
                .collect(),
        };
        HistData {
            count: self.count,
            sum_ns: self.sum_ns,
            min_ns: if self.count == 0 { 0 } else { self.min_ns },
            max_ns: self.max_ns,
            buckets,
        }
    }

    /// The histogram `d` was made from ([`LatencyHist::data`]); an error
    /// says what does not hold together (a bucket that is not one, counts
    /// that do not sum to `count`, a minimum above the maximum). A count
    /// past a bucket's capacity saturates, as recording does.
    pub fn from_data(d: &HistData) -> Result<LatencyHist, String> {
        let mut h = LatencyHist::new();
        let mut total = 0u64;
        for &(us, n) in &d.buckets {
            if lowest_equivalent(us) != us {
                return Err(format!("{us} µs is not the lowest value of a bucket"));
            }
            total = total
                .checked_add(n)
                .ok_or("bucket counts past 2^64".to_string())?;
            h.add(us, u32::try_from(n).unwrap_or(u32::MAX));
        }
        if total != d.count {
            return Err(format!(
                "buckets hold {total} values, count says {}",
                d.count
            ));
        }
        if d.count > 0 && d.min_ns > d.max_ns {
            return Err(format!("min {} ns above max {} ns", d.min_ns, d.max_ns));
        }
        h.count = d.count;
        h.sum_ns = d.sum_ns;
        if d.count > 0 {
            h.min_ns = d.min_ns;
            h.max_ns = d.max_ns;
        }
        Ok(h)
    }
}

/// A histogram's counts at fixed bounds, for an exposition in buckets
/// (OpenMetrics `_bucket`, `_count`, `_sum`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buckets {
    /// For each bound asked, the values at or below it: cumulative, so
    /// never decreasing, and never above `count`.
    pub cumulative: Vec<u64>,
    /// Every value recorded (the `+Inf` bucket).
    pub count: u64,
    /// Their sum, in nanoseconds (exact).
    pub sum_ns: u128,
}

impl LatencyHist {
    /// The counts at `bounds_us` (microseconds, increasing): a value is
    /// counted at a bound when its bucket starts at or below it
    /// (HdrHistogram's `count_between`), so a bound counts the values at or
    /// below it to the histogram's precision (0.1 %, +1 µs of rounding);
    /// `count` and `sum_ns` are exact.
    pub fn buckets(&self, bounds_us: &[u64]) -> Buckets {
        if self.pending_len > 0 {
            let mut settled = self.clone();
            settled.settle();
            return settled.buckets(bounds_us);
        }
        // Counts per bound (the first bound at or above the bucket's
        // start), summed up after; a bucket past the last bound is only in
        // `count`.
        let mut per = vec![0u64; bounds_us.len()];
        let mut put = |lowest: u64, n: u64| {
            if let Some(slot) = per.get_mut(bounds_us.partition_point(|&b| b < lowest)) {
                *slot = slot.saturating_add(n);
            }
        };
        match &self.counts {
            Counts::Sparse(v) => v.iter().for_each(|&(k, c)| put(k, u64::from(c))),
            Counts::Dense(h) => h.iter_recorded().for_each(|x| {
                put(
                    lowest_equivalent(x.value_iterated_to()),
                    u64::from(x.count_at_value()),
                )
            }),
        }
        let mut seen = 0u64;
        let cumulative = per
            .into_iter()
            .map(|n| {
                // Saturated bucket counts can only fall short of `count`.
                seen = seen.saturating_add(n).min(self.count);
                seen
            })
            .collect();
        Buckets {
            cumulative,
            count: self.count,
            sum_ns: self.sum_ns,
        }
    }
}

/// The timing of a set of exchanges: their latencies and service times
/// (latency less head-of-line wait, `MessageInfo::service_ns`), and how
/// many waited behind another response or were long-polls.
///
/// Until an exchange waits, every service time is its latency: the service
/// times are kept apart only from the first exchange that waited on (a copy
/// of the latencies then), so most connections keep one histogram.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    latency: LatencyHist,
    /// `None` while every service time equals its latency.
    service: Option<Box<LatencyHist>>,
    hol_waits: u64,
    long_polls: u64,
}

/// A [`Timing`]'s figures besides latency, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PartsMs {
    /// Service times.
    pub service_ms: Option<LatencyMs>,
    /// Exchanges whose response waited behind the previous one on its connection.
    pub hol_waits: u64,
    /// Fetches that waited out their MaxWaitMs with nothing to return.
    pub long_polls: u64,
}

impl Timing {
    /// Records a paired response's latency and service time (nothing for
    /// one without a latency).
    pub fn record(&mut self, i: &MessageInfo) {
        if let (Some(ns), Some(service)) = (i.latency_ns, i.service_ns()) {
            let waited = i.hol_wait_ns.is_some_and(|h| h > 0);
            self.add(ns, service, waited, i.long_poll());
        }
    }

    /// Records an exchange's latency and service time (ns), whether it
    /// waited behind another response and whether it was a long-poll.
    pub fn add(&mut self, latency_ns: u64, service_ns: u64, waited: bool, long_poll: bool) {
        if self.service.is_none() && service_ns != latency_ns {
            self.service = Some(Box::new(self.latency.clone()));
        }
        self.latency.record(latency_ns);
        if let Some(s) = &mut self.service {
            s.record(service_ns);
        }
        self.hol_waits += u64::from(waited);
        self.long_polls += u64::from(long_poll);
    }

    /// Adds `other`'s exchanges.
    pub fn merge(&mut self, other: &Timing) {
        if let (None, Some(_)) = (&self.service, &other.service) {
            self.service = Some(Box::new(self.latency.clone()));
        }
        if let Some(s) = &mut self.service {
            s.merge(other.service.as_deref().unwrap_or(&other.latency));
        }
        self.latency.merge(&other.latency);
        self.hol_waits += other.hol_waits;
        self.long_polls += other.long_polls;
    }

    /// Counts every pending value ([`LatencyHist::settle`]).
    pub fn settle(&mut self) {
        self.latency.settle();
        if let Some(s) = &mut self.service {
            s.settle();
        }
    }

    /// Exchanges recorded.
    pub fn count(&self) -> u64 {
        self.latency.count()
    }

    /// The latency summary, and the service times, head-of-line waits and
    /// long-polls: while no exchange waited the service times are the
    /// latencies, and their summary is not made twice.
    pub fn summaries(&self) -> (Option<LatencyMs>, PartsMs) {
        let latency = self.latency.summary();
        let service_ms = match &self.service {
            Some(s) => s.summary(),
            None => latency.clone(),
        };
        let parts = PartsMs {
            service_ms,
            hol_waits: self.hol_waits,
            long_polls: self.long_polls,
        };
        (latency, parts)
    }
}

/// A [`Timing`] as `stats --format json` carries it for merging.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimingData {
    /// The latencies.
    pub latency: HistData,
    /// The service times, when some exchange waited (else the latencies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<HistData>,
    /// Exchanges that waited behind the previous response.
    pub hol_waits: u64,
    /// Fetches that waited out their MaxWaitMs with nothing to return.
    pub long_polls: u64,
}

impl Timing {
    /// This timing in its mergeable form.
    pub fn data(&self) -> TimingData {
        TimingData {
            latency: self.latency.data(),
            service: self.service.as_ref().map(|s| s.data()),
            hol_waits: self.hol_waits,
            long_polls: self.long_polls,
        }
    }

    /// The timing `d` was made from ([`Timing::data`]).
    pub fn from_data(d: &TimingData) -> Result<Timing, String> {
        let service = match &d.service {
            Some(s) => Some(Box::new(LatencyHist::from_data(s)?)),
            None => None,
        };
        Ok(Timing {
            latency: LatencyHist::from_data(&d.latency)?,
            service,
            hol_waits: d.hol_waits,
            long_polls: d.long_polls,
        })
    }
}

impl Timing {
    /// The latencies.
    pub fn latency(&self) -> &LatencyHist {
        &self.latency
    }

    /// The service times (the latencies while no exchange waited).
    pub fn service(&self) -> &LatencyHist {
        self.service.as_deref().unwrap_or(&self.latency)
    }

    /// Exchanges whose response waited behind the previous one on its connection.
    pub fn hol_waits(&self) -> u64 {
        self.hol_waits
    }

    /// Fetches that waited out their MaxWaitMs with nothing to return.
    pub fn long_polls(&self) -> u64 {
        self.long_polls
    }
}

/// Fetch exchanges by how they ended ([`FetchOutcome`]), each with its
/// latency.
#[derive(Clone, Debug, Default)]
pub struct FetchSplit {
    data: LatencyHist,
    min_bytes_met: u64,
    waited_out: LatencyHist,
    empty_early: LatencyHist,
}

/// A [`FetchSplit`]'s figures, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FetchSplitMs {
    /// Fetches that returned record bytes.
    pub data_ms: Option<LatencyMs>,
    /// Of those, the ones that returned at least the request's `MinBytes`.
    pub min_bytes_met: u64,
    /// Long-polls: nothing returned, `MaxWaitMs` (nearly) waited out.
    pub waited_out_ms: Option<LatencyMs>,
    /// Nothing returned well before `MaxWaitMs` (an error, a session
    /// update, `MinBytes` 0).
    pub empty_early_ms: Option<LatencyMs>,
}

impl FetchSplit {
    /// Records a paired Fetch or ShareFetch exchange (nothing for others).
    pub fn record(&mut self, i: &MessageInfo) {
        let (Some(o), Some(ns), Some(f)) = (i.fetch_outcome(), i.latency_ns, i.fetch) else {
            return;
        };
        let h = match o {
            FetchOutcome::Data => {
                let min = u64::try_from(f.asked.min_bytes).unwrap_or(0);
                self.min_bytes_met += u64::from(f.record_bytes >= min);
                &mut self.data
            }
            FetchOutcome::WaitedOut => &mut self.waited_out,
            FetchOutcome::EmptyEarly => &mut self.empty_early,
        };
        h.record(ns);
    }

    /// Adds `other`'s exchanges.
    pub fn merge(&mut self, other: &FetchSplit) {
        self.data.merge(&other.data);
        self.min_bytes_met += other.min_bytes_met;
        self.waited_out.merge(&other.waited_out);
        self.empty_early.merge(&other.empty_early);
    }

    /// The figures.
    pub fn summary(&self) -> FetchSplitMs {
        FetchSplitMs {
            data_ms: self.data.summary(),
            min_bytes_met: self.min_bytes_met,
            waited_out_ms: self.waited_out.summary(),
            empty_early_ms: self.empty_early.summary(),
        }
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
    fn service_times_part_from_latencies_at_the_first_wait_only() {
        let ms = |v: u64| v * 1_000_000;
        let both = |t: &Timing| {
            let (latency, parts) = t.summaries();
            (latency, parts.service_ms)
        };
        // Nothing waited: service times are the latencies.
        let mut a = Timing::default();
        a.add(ms(10), ms(10), false, false);
        a.add(ms(20), ms(20), false, false);
        let (lat, svc) = both(&a);
        assert_eq!(lat, svc);
        assert!(a.service.is_none());
        // One waits 15 of its 30 ms: the earlier ones keep theirs.
        let mut b = Timing::default();
        b.add(ms(5), ms(5), false, false);
        b.add(ms(30), ms(15), true, false);
        let svc = b.summaries().1.service_ms.unwrap();
        assert_eq!((svc.count, svc.min, svc.max), (2, 5.0, 15.0));
        // Merged either way: four service times 5, 10, 15, 20.
        for (x, y) in [(&a, &b), (&b, &a)] {
            let mut m = x.clone();
            m.merge(y);
            let (lat, svc) = both(&m);
            let (lat, svc) = (lat.unwrap(), svc.unwrap());
            assert_eq!((lat.count, lat.min, lat.max), (4, 5.0, 30.0));
            assert_eq!(
                (svc.count, svc.min, svc.max, svc.mean),
                (4, 5.0, 20.0, 12.5)
            );
            assert_eq!(m.summaries().1.hol_waits, 1);
        }
    }

    /// A histogram's mergeable form makes the same histogram again, sparse
    /// or dense, and two histograms rebuilt and merged are the one that
    /// recorded both sets of values; forms that do not hold together are
    /// refused.
    #[test]
    fn mergeable_form_round_trips_and_merges() {
        let fill = |seed: u64, n: u64| {
            let mut h = LatencyHist::new();
            let mut x = seed;
            for _ in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                h.record((x >> 33) % 2_000_000_000 + 1);
            }
            h
        };
        for n in [0, 1, 40, 5_000] {
            let h = fill(n, n);
            let d = h.data();
            assert_eq!(d.buckets.iter().map(|b| b.1).sum::<u64>(), n);
            let back = LatencyHist::from_data(&d).unwrap();
            assert_eq!(back.summary(), h.summary(), "{n}");
            assert_eq!(back.data(), d);
        }
        let (a, b) = (fill(7, 3_000), fill(8, 90));
        let mut both = a.clone();
        both.merge(&b);
        let mut rebuilt = LatencyHist::from_data(&a.data()).unwrap();
        rebuilt.merge(&LatencyHist::from_data(&b.data()).unwrap());
        assert_eq!(rebuilt.summary(), both.summary());
        assert_eq!(rebuilt.data(), both.data());
        let mut bad = a.data();
        bad.count += 1;
        assert!(LatencyHist::from_data(&bad).is_err());
        let mut bad = a.data();
        bad.buckets[0].0 = 1_000_001;
        assert!(LatencyHist::from_data(&bad).unwrap_err().contains("bucket"));
        let mut bad = a.data();
        bad.min_ns = bad.max_ns + 1;
        assert!(LatencyHist::from_data(&bad).is_err());
    }

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
            let got = h.values_at_permilles([p])[0].unwrap() as f64;
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

    /// The nearest-rank percentile read independently of
    /// `values_at_permilles`: every value recorded in one HdrHistogram, its
    /// recorded values walked until the rank.
    fn reference(h: &Histogram<u32>, permille: u64) -> Option<u64> {
        if h.is_empty() {
            return None;
        }
        let rank = (permille.min(1000) * h.len()).div_ceil(1000).max(1);
        let mut seen = 0u64;
        for v in h.iter_recorded() {
            seen += v.count_since_last_iteration();
            if seen >= rank {
                return Some(v.value_iterated_to());
            }
        }
        Some(h.max())
    }

    const PERMILLES: [u64; 9] = [0, 1, 100, 500, 900, 990, 999, 1000, 5000];

    fn check_against_reference(values_ns: &[u64]) {
        let mut h = LatencyHist::new();
        for &ns in values_ns {
            h.record(ns);
        }
        let mut one = dense();
        for &ns in values_ns {
            record_dense(&mut one, ns_to_us(ns), 1);
        }
        let all = h.values_at_permilles(PERMILLES);
        for (p, got) in PERMILLES.iter().zip(all) {
            assert_eq!(got, reference(&one, *p), "p{p} of {values_ns:?}");
        }
        // Asked in any order, the same values.
        let mut reversed = PERMILLES;
        reversed.reverse();
        let back = h.values_at_permilles(reversed);
        for (p, got) in reversed.iter().zip(back) {
            assert_eq!(
                got,
                reference(&one, *p),
                "p{p} (out of order) of {values_ns:?}"
            );
        }
    }

    #[test]
    fn sparse_turns_dense_past_its_bound_with_the_same_percentiles() {
        // SPARSE distinct buckets stay sparse; one more turns the histogram dense.
        let vals: Vec<u64> = (0..=SPARSE as u64).map(|i| i * 7_000_000 + 3).collect();
        let mut h = LatencyHist::new();
        for &v in &vals[..SPARSE] {
            h.record(v);
            h.record(v);
        }
        h.settle();
        assert!(matches!(&h.counts, Counts::Sparse(v) if v.len() == SPARSE));
        h.record(vals[SPARSE]);
        h.settle();
        assert!(matches!(h.counts, Counts::Dense(_)));
        let mut twice: Vec<u64> = vals[..SPARSE].iter().flat_map(|&v| [v, v]).collect();
        twice.push(vals[SPARSE]);
        check_against_reference(&twice);
    }

    /// Every value counted in its bucket at once: the histogram as it was
    /// before values were held back.
    fn settled_one_by_one(values_ns: &[u64]) -> LatencyHist {
        let mut h = LatencyHist::new();
        for &v in values_ns {
            h.record(v);
            h.settle();
        }
        h
    }

    #[test]
    fn latencies_held_back_are_counted_when_read_merged_or_settled() {
        // Around the burst size and the sparse bound, sparse and dense.
        for n in [
            1,
            PENDING - 1,
            PENDING,
            PENDING + 1,
            3 * PENDING + 5,
            SPARSE + 40,
            2_000,
        ] {
            let vals: Vec<u64> = (0..n as u64)
                .map(|i| (i * 7_919 % 1_000) * 997_003 + i)
                .collect();
            let want = settled_one_by_one(&vals);
            let mut h = LatencyHist::new();
            for &v in &vals {
                h.record(v);
            }
            // The 33rd value settles the 32 before it: 1 to 32 are held back.
            assert_eq!(h.pending_len, (n - 1) % PENDING + 1, "held back after {n}");
            // Read with values held back (a settled copy), then settled.
            assert_eq!(h.summary(), want.summary(), "{n} values, held back");
            assert_eq!(h.count(), n as u64);
            h.settle();
            assert_eq!(h.pending_len, 0);
            assert_eq!(h.summary(), want.summary(), "{n} values, settled");
            // Merging takes what the other holds back; what this one holds stays.
            let (a, b) = vals.split_at(n / 3);
            let (mut ha, mut hb) = (LatencyHist::new(), LatencyHist::new());
            a.iter().for_each(|&v| ha.record(v));
            b.iter().for_each(|&v| hb.record(v));
            ha.merge(&hb);
            assert_eq!(ha.summary(), want.summary(), "{n} values, merged");
            ha.settle();
            assert_eq!(
                ha.summary(),
                want.summary(),
                "{n} values, merged and settled"
            );
        }
    }

    #[test]
    fn dense_percentiles_at_every_scale() {
        // Dense histograms whose ranks fall in the unit bucket, in high
        // buckets, on a bucket's first and last values, and past empty buckets.
        let mut cases: Vec<Vec<u64>> = Vec::new();
        cases.push((0..5_000u64).map(|i| i * 1_000).collect());
        cases.push((0..3_000u64).map(|i| i * i * 997 + 500).collect());
        cases.push(
            (0..200u64)
                .map(|i| 1_024_000 << (i % 30))
                .chain((0..200u64).map(|i| (2_048_000 << (i % 30)) - 1_000))
                .chain((0..200u64).map(|i| i * 3_000))
                .collect(),
        );
        cases.push(
            (0..300u64)
                .map(|i| i * 1_000)
                .chain([u64::MAX, u64::MAX / 3, 1 << 62])
                .collect(),
        );
        for vals in &cases {
            let mut h = LatencyHist::new();
            for &v in vals {
                h.record(v);
            }
            h.settle();
            assert!(matches!(h.counts, Counts::Dense(_)));
            check_against_reference(vals);
        }
    }

    proptest::proptest! {
        #[test]
        fn dense_percentiles_equal_one_hdrhistogram(
            values in proptest::collection::vec(0u64..20_000_000_000, 150..1500),
        ) {
            check_against_reference(&values);
        }

        #[test]
        fn merged_equals_recorded_together(
            a in proptest::collection::vec(0u64..5_000_000_000, 0..300),
            b in proptest::collection::vec(0u64..50_000_000, 0..300),
        ) {
            let (mut x, mut y, mut all) = (LatencyHist::new(), LatencyHist::new(), LatencyHist::new());
            for &v in &a {
                x.record(v);
                all.record(v);
            }
            for &v in &b {
                y.record(v);
                all.record(v);
            }
            x.merge(&y);
            proptest::prop_assert_eq!(x.summary(), all.summary());
            proptest::prop_assert_eq!(x.values_at_permilles(PERMILLES), all.values_at_permilles(PERMILLES));
            proptest::prop_assert_eq!(x.sum_ns, all.sum_ns);
        }

        #[test]
        fn buckets_are_hdrhistograms(v in proptest::prelude::any::<u64>(), small in 0u64..100_000) {
            let h = dense();
            for x in [v, small, v >> 20, v >> 40] {
                proptest::prop_assert_eq!(lowest_equivalent(x), h.lowest_equivalent(x));
                proptest::prop_assert_eq!(highest_equivalent(x), h.highest_equivalent(x));
            }
        }

        #[test]
        fn percentiles_equal_one_hdrhistogram(
            values in proptest::collection::vec(
                proptest::prop_oneof![
                    0u64..3_000_000,
                    0u64..2_000_000_000,
                    proptest::prelude::any::<u64>(),
                ],
                0..600,
            ),
        ) {
            check_against_reference(&values);
        }
    }
}

#[cfg(test)]
mod bucket_tests {
    use super::*;

    /// Bounds from 1 ms to 60 s, and one in the unit-resolution range.
    const BOUNDS: [u64; 6] = [100, 1_000, 25_000, 500_000, 2_500_000, 60_000_000];

    /// The counts of one HdrHistogram that recorded every value:
    /// `count_between(0, bound)` at each bound.
    fn reference(values_ns: &[u64]) -> Vec<u64> {
        let mut h = dense();
        for &ns in values_ns {
            record_dense(&mut h, ns_to_us(ns), 1);
        }
        BOUNDS.iter().map(|&b| h.count_between(0, b)).collect()
    }

    #[test]
    fn bucket_counts_below_the_unit_resolution_are_exact() {
        // 0..2 ms in 1 µs steps: 100 µs and 1 ms count exactly the values at or below.
        let vals: Vec<u64> = (0..2_000u64).map(|us| us * 1_000).collect();
        let mut h = LatencyHist::new();
        vals.iter().for_each(|&v| h.record(v));
        let b = h.buckets(&BOUNDS);
        assert_eq!(b.cumulative, vec![101, 1_001, 2_000, 2_000, 2_000, 2_000]);
        assert_eq!(b.count, 2_000);
        assert_eq!(b.sum_ns, vals.iter().map(|&v| u128::from(v)).sum::<u128>());
        assert_eq!(LatencyHist::new().buckets(&BOUNDS).cumulative, vec![0; 6]);
    }

    proptest::proptest! {
        #[test]
        fn bucket_counts_are_one_hdrhistograms(
            values in proptest::collection::vec(
                proptest::prop_oneof![0u64..3_000_000, 0u64..120_000_000_000],
                0..400,
            ),
        ) {
            let mut h = LatencyHist::new();
            values.iter().for_each(|&v| h.record(v));
            // Held back, settled, sparse and dense alike.
            let b = h.buckets(&BOUNDS);
            proptest::prop_assert_eq!(&b.cumulative, &reference(&values));
            proptest::prop_assert!(b.cumulative.windows(2).all(|w| w[0] <= w[1]));
            proptest::prop_assert_eq!(b.count, values.len() as u64);
            h.settle();
            proptest::prop_assert_eq!(h.buckets(&BOUNDS), b);
        }
    }
}
