//! Reports of many captures added up without their rows: the `merge`
//! section of `stats --format json` ([`Mergeable`]) carries the counts and
//! the latency histograms bucket by bucket ([`HistData`]), and
//! `kafkashark stats --merge a.json b.json …` adds them ([`Merged`]) into a
//! report whose percentiles are those one histogram of every value would
//! give: what a coordinator needs from the hosts of a fleet.
//!
//! What merges: the totals, each api (requests, responses, unanswered,
//! latency, service time, head-of-line waits, long-polls, throttled
//! responses, errors by name, and each version's requests and responses),
//! each broker endpoint (requests, responses, timing), and each topic
//! partition's produced and fetched record sets. The other sections of a
//! report (clients, connections, groups, lag, slowest exchanges, hints)
//! belong to one capture's connections and are not merged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::hist::{LatencyMs, PartsMs, Timing, TimingData, SIGFIG};
use super::report::{BrokerReport, SideReport, StatsReport};
use crate::kafka::schema;

/// The version of [`Mergeable`]'s form: a merge refuses another.
pub const MERGE_VERSION: u32 = 1;

/// The mergeable part of one report (or of several already merged).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Mergeable {
    /// [`MERGE_VERSION`].
    pub version: u32,
    /// The histograms' significant digits ([`SIGFIG`]).
    pub sigfig: u8,
    /// Reports added up in it (1 for one capture's).
    pub reports: u64,
    /// The totals.
    #[serde(flatten)]
    pub totals: MergeTotals,
    /// Each api, by key.
    pub apis: Vec<MergeApi>,
    /// Each broker endpoint, by its text.
    pub brokers: Vec<MergeBroker>,
    /// Each topic partition's record sets.
    pub topics: Vec<MergeTopic>,
}

/// The totals of a [`Mergeable`] and of a [`MergedReport`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeTotals {
    /// Kafka messages.
    pub messages: u64,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Requests never answered.
    pub unanswered: u64,
    /// Epoch seconds of the first message.
    pub first_ts: Option<f64>,
    /// Epoch seconds of the last message.
    pub last_ts: Option<f64>,
}

impl MergeTotals {
    fn add(&mut self, o: &MergeTotals) {
        self.messages += o.messages;
        self.requests += o.requests;
        self.responses += o.responses;
        self.unanswered += o.unanswered;
        self.first_ts = earliest(self.first_ts, o.first_ts);
        self.last_ts = latest(self.last_ts, o.last_ts);
    }
}

/// One api of a [`Mergeable`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeApi {
    /// The api key.
    pub api_key: i16,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Requests never answered.
    pub unanswered: u64,
    /// Responses whose request was not captured.
    pub responses_without_request: u64,
    /// Latency and service time of paired exchanges.
    pub timing: TimingData,
    /// Responses with ThrottleTimeMs > 0.
    pub throttled: u64,
    /// Error name → count.
    pub errors: BTreeMap<String, u64>,
    /// Each version's requests and responses.
    pub versions: Vec<MergeVersion>,
}

/// One version of a [`MergeApi`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeVersion {
    /// The version.
    pub version: i16,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
}

/// One broker endpoint of a [`Mergeable`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeBroker {
    /// `ip:port`.
    pub broker: String,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Latency and service time of paired exchanges.
    pub timing: TimingData,
}

/// One topic partition of a [`Mergeable`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeTopic {
    /// The topic, when named.
    pub topic: Option<String>,
    /// The partition, when known.
    pub partition: Option<i32>,
    /// Produce requests' record sets.
    pub produce: MergeSide,
    /// Fetch responses' record sets.
    pub fetch: MergeSide,
}

/// One direction's record sets of a partition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeSide {
    /// Record sets.
    pub record_sets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Complete batches.
    pub batches: u64,
    /// Records.
    pub records: u64,
    /// Compressed payload bytes.
    pub compressed_bytes: u64,
    /// What they decompressed to.
    pub decompressed_bytes: u64,
}

impl MergeSide {
    fn of(s: &SideReport) -> MergeSide {
        MergeSide {
            record_sets: s.record_sets,
            bytes: s.bytes,
            batches: s.batches,
            records: s.records,
            compressed_bytes: s.compressed_bytes,
            decompressed_bytes: s.decompressed_bytes,
        }
    }

    fn add(&mut self, o: &MergeSide) {
        self.record_sets += o.record_sets;
        self.bytes += o.bytes;
        self.batches += o.batches;
        self.records += o.records;
        self.compressed_bytes += o.compressed_bytes;
        self.decompressed_bytes += o.decompressed_bytes;
    }
}

/// What a report (or a merged report) holds for merging.
#[derive(Deserialize)]
struct WithMerge {
    merge: Mergeable,
}

impl Mergeable {
    /// The `merge` section of a `stats --format json` report (or of a
    /// merged report) read from `json`; the other sections are skipped.
    pub fn from_report(json: impl std::io::Read) -> Result<Mergeable, String> {
        let r: WithMerge = serde_json::from_reader(json)
            .map_err(|e| format!("not a `stats --format json` report: {e}"))?;
        Ok(r.merge)
    }

    /// The mergeable part of `r` but its brokers ([`Mergeable::brokers`]),
    /// whose apis' timings are `api_timings` (by api key).
    pub(super) fn of(r: &StatsReport, api_timings: &BTreeMap<i16, TimingData>) -> Mergeable {
        let apis = r.apis.iter().map(|a| MergeApi {
            api_key: a.api_key,
            requests: a.requests,
            responses: a.responses,
            unanswered: a.unanswered,
            responses_without_request: a.responses_without_request,
            timing: api_timings.get(&a.api_key).cloned().unwrap_or_default(),
            throttled: a.throttled,
            errors: a.errors.clone(),
            versions: (a.versions.iter())
                .map(|v| MergeVersion {
                    version: v.version,
                    requests: v.requests,
                    responses: v.responses,
                })
                .collect(),
        });
        let topics = r.topics.iter().map(|t| MergeTopic {
            topic: t.topic.clone(),
            partition: t.partition,
            produce: MergeSide::of(&t.produce),
            fetch: MergeSide::of(&t.fetch),
        });
        Mergeable {
            version: MERGE_VERSION,
            sigfig: SIGFIG,
            reports: 1,
            totals: MergeTotals {
                messages: r.summary.messages,
                requests: r.summary.requests,
                responses: r.summary.responses,
                unanswered: r.summary.unanswered,
                first_ts: r.summary.first_ts,
                last_ts: r.summary.last_ts,
            },
            apis: apis.collect(),
            brokers: Vec::new(),
            topics: topics.collect(),
        }
    }

    /// The brokers' part: `brokers` with their timings (by broker text).
    pub(super) fn brokers(
        brokers: &[BrokerReport],
        timings: &BTreeMap<String, TimingData>,
    ) -> Vec<MergeBroker> {
        (brokers.iter())
            .map(|b| MergeBroker {
                broker: b.broker.clone(),
                requests: b.requests,
                responses: b.responses,
                timing: timings.get(&b.broker).cloned().unwrap_or_default(),
            })
            .collect()
    }
}

/// An api being merged.
#[derive(Debug, Default)]
struct ApiSum {
    counts: MergeApi,
    timing: Timing,
    versions: BTreeMap<i16, (u64, u64)>,
}

/// A broker being merged.
#[derive(Debug, Default)]
struct BrokerSum {
    requests: u64,
    responses: u64,
    timing: Timing,
}

/// Reports being added up ([`Merged::add`]), then reported
/// ([`Merged::report`]).
#[derive(Debug, Default)]
pub struct Merged {
    reports: u64,
    totals: MergeTotals,
    apis: BTreeMap<i16, ApiSum>,
    brokers: BTreeMap<String, BrokerSum>,
    topics: BTreeMap<(Option<String>, Option<i32>), (MergeSide, MergeSide)>,
}

/// A report of merged reports (`stats --merge`).
#[derive(Clone, Debug, Serialize)]
pub struct MergedReport {
    /// Reports added up.
    pub reports: u64,
    /// Totals.
    pub summary: MergeTotals,
    /// Each api, by key.
    pub apis: Vec<MergedApi>,
    /// Each broker endpoint.
    pub brokers: Vec<MergedBroker>,
    /// Each topic partition's record sets.
    pub topics: Vec<MergeTopic>,
    /// The merged figures in mergeable form, to merge again.
    pub merge: Mergeable,
}

/// One api of a [`MergedReport`]: the fields of `stats`' api entries that merge.
#[derive(Clone, Debug, Serialize)]
pub struct MergedApi {
    /// The api key.
    pub api_key: i16,
    /// Its name, when known.
    pub api_name: Option<&'static str>,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Requests never answered.
    pub unanswered: u64,
    /// Responses whose request was not captured.
    pub responses_without_request: u64,
    /// Latency of paired exchanges, from the merged buckets.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls.
    #[serde(flatten)]
    pub parts: PartsMs,
    /// Responses with ThrottleTimeMs > 0.
    pub throttled: u64,
    /// Error name → count.
    pub errors: BTreeMap<String, u64>,
    /// Each version's requests and responses.
    pub versions: Vec<MergeVersion>,
}

/// One broker endpoint of a [`MergedReport`].
#[derive(Clone, Debug, Serialize)]
pub struct MergedBroker {
    /// `ip:port`.
    pub broker: String,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Latency of paired exchanges, from the merged buckets.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls.
    #[serde(flatten)]
    pub parts: PartsMs,
}

fn earliest(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn latest(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl Merged {
    /// Nothing added yet.
    pub fn new() -> Merged {
        Merged::default()
    }

    /// Adds one report's (or merge's) mergeable part; an error says what
    /// in it cannot be merged (another version or precision, a histogram
    /// that does not hold together), and nothing of it is added.
    pub fn add(&mut self, m: &Mergeable) -> Result<(), String> {
        if m.version != MERGE_VERSION {
            return Err(format!(
                "merge version {} (this build reads {MERGE_VERSION})",
                m.version
            ));
        }
        if m.sigfig != SIGFIG {
            return Err(format!(
                "histograms of {} digits (this build's have {SIGFIG})",
                m.sigfig
            ));
        }
        // Every histogram read before anything is added.
        let api_timings = (m.apis.iter())
            .map(|a| Timing::from_data(&a.timing).map_err(|e| format!("api {}: {e}", a.api_key)))
            .collect::<Result<Vec<_>, _>>()?;
        let broker_timings = (m.brokers.iter())
            .map(|b| Timing::from_data(&b.timing).map_err(|e| format!("broker {}: {e}", b.broker)))
            .collect::<Result<Vec<_>, _>>()?;
        self.reports += m.reports;
        self.totals.add(&m.totals);
        for (a, t) in m.apis.iter().zip(&api_timings) {
            let s = self.apis.entry(a.api_key).or_default();
            let c = &mut s.counts;
            c.api_key = a.api_key;
            c.requests += a.requests;
            c.responses += a.responses;
            c.unanswered += a.unanswered;
            c.responses_without_request += a.responses_without_request;
            c.throttled += a.throttled;
            for (e, n) in &a.errors {
                *c.errors.entry(e.clone()).or_default() += n;
            }
            for v in &a.versions {
                let x = s.versions.entry(v.version).or_default();
                x.0 += v.requests;
                x.1 += v.responses;
            }
            s.timing.merge(t);
        }
        for (b, t) in m.brokers.iter().zip(&broker_timings) {
            let s = self.brokers.entry(b.broker.clone()).or_default();
            s.requests += b.requests;
            s.responses += b.responses;
            s.timing.merge(t);
        }
        for t in &m.topics {
            let e = (self.topics)
                .entry((t.topic.clone(), t.partition))
                .or_default();
            e.0.add(&t.produce);
            e.1.add(&t.fetch);
        }
        Ok(())
    }

    /// The merged report.
    pub fn report(&self) -> MergedReport {
        let versions = |s: &ApiSum| {
            (s.versions.iter())
                .map(|(&version, &(requests, responses))| MergeVersion {
                    version,
                    requests,
                    responses,
                })
                .collect::<Vec<_>>()
        };
        let apis: Vec<MergedApi> = (self.apis.iter())
            .map(|(&k, s)| {
                let (latency_ms, parts) = s.timing.summaries();
                MergedApi {
                    api_key: k,
                    api_name: schema::api_name(k),
                    requests: s.counts.requests,
                    responses: s.counts.responses,
                    unanswered: s.counts.unanswered,
                    responses_without_request: s.counts.responses_without_request,
                    latency_ms,
                    parts,
                    throttled: s.counts.throttled,
                    errors: s.counts.errors.clone(),
                    versions: versions(s),
                }
            })
            .collect();
        let brokers: Vec<MergedBroker> = (self.brokers.iter())
            .map(|(b, s)| {
                let (latency_ms, parts) = s.timing.summaries();
                MergedBroker {
                    broker: b.clone(),
                    requests: s.requests,
                    responses: s.responses,
                    latency_ms,
                    parts,
                }
            })
            .collect();
        let topics: Vec<MergeTopic> = (self.topics.iter())
            .map(|((topic, partition), (produce, fetch))| MergeTopic {
                topic: topic.clone(),
                partition: *partition,
                produce: *produce,
                fetch: *fetch,
            })
            .collect();
        let merge = Mergeable {
            version: MERGE_VERSION,
            sigfig: SIGFIG,
            reports: self.reports,
            totals: self.totals.clone(),
            apis: (self.apis.values())
                .map(|s| MergeApi {
                    timing: s.timing.data(),
                    versions: versions(s),
                    ..s.counts.clone()
                })
                .collect(),
            brokers: (self.brokers.iter())
                .map(|(b, s)| MergeBroker {
                    broker: b.clone(),
                    requests: s.requests,
                    responses: s.responses,
                    timing: s.timing.data(),
                })
                .collect(),
            topics: topics.clone(),
        };
        MergedReport {
            reports: self.reports,
            summary: self.totals.clone(),
            apis,
            brokers,
            topics,
            merge,
        }
    }
}
