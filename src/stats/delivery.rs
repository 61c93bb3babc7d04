//! Record age, produce → fetch delivery and the producers' batching, read
//! from the wire.
//!
//! Place in the data path: `Stats` hands every Produce request's batches
//! ([`Delivery::produced`]) and every Fetch response's batches
//! ([`Delivery::fetched`]) here, with topics resolved to names where the
//! capture taught them; [`Delivery::report`] makes the `record_age`,
//! `delivery` and `producers` sections of the report.
//!
//! Definitions (docs/stats.md, "Record age and delivery"):
//! - *record age* of a fetched batch = the time of the Fetch response's
//!   first frame − the batch's `maxTimestamp` (CreateTime: the producer's
//!   clock; LogAppendTime: the broker's, which the report says);
//! - a batch is the *same* when produced and fetched when its topic,
//!   partition, producer id, producer epoch, base sequence and CRC agree
//!   (the CRC covers the records and everything in the header from the
//!   attributes on, none of which the broker rewrites); its *delivery* time
//!   = the fetch response's first frame − the Produce request's last frame;
//! - a producer's *batch gap* = the time between two of its Produce requests
//!   that carry a batch for the same partition (linger.ms shows as its floor).
//!
//! Invariants: memory is bounded by partitions, clients and the
//! [`MAX_PRODUCED`] batches remembered for matching (the oldest are
//! forgotten first), never by the capture's length. An age below zero (a
//! producer clock ahead of the capture's) is counted as such and not put in
//! the histogram.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};

use serde::Serialize;

use super::hist::{LatencyHist, LatencyMs};
use crate::kafka::records::BatchHead;
use crate::vocab::Timestamp;

/// Most produced batches remembered for matching with fetches.
pub const MAX_PRODUCED: usize = 100_000;

/// Most partitions, producers and consumers each kept.
pub const MAX_KEYS: usize = 10_000;

/// What identifies a batch on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchId {
    /// `producerId`.
    pub producer_id: i64,
    /// `producerEpoch`.
    pub producer_epoch: i16,
    /// `baseSequence`.
    pub base_sequence: i32,
    /// `crc`.
    pub crc: u32,
}

impl BatchId {
    /// The identity of batch `b`.
    fn of(b: &BatchHead) -> BatchId {
        BatchId {
            producer_id: b.producer_id,
            producer_epoch: b.producer_epoch,
            base_sequence: b.base_sequence,
            crc: b.crc,
        }
    }
}

/// The remembered key of a produced batch: the topic by its hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    topic: u64,
    partition: i32,
    id: BatchId,
}

fn topic_hash(topic: &str) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    topic.hash(&mut h);
    h.finish()
}

#[derive(Clone, Debug, Default)]
struct Age {
    hist: LatencyHist,
    batches: u64,
    log_append: u64,
    future: u64,
}

#[derive(Clone, Debug, Default)]
struct Producer {
    requests: u64,
    batches: u64,
    records: u64,
    bytes: u64,
    max_batch_bytes: u64,
    gaps: LatencyHist,
    /// partition (topic hash, partition) → the last Produce request's time.
    last: HashMap<(u64, i32), Timestamp>,
}

/// Record age, delivery and producer batching of a capture.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    produced: HashMap<Key, Timestamp>,
    order: VecDeque<Key>,
    /// (topic hash, partition) → the topic's name and the partition's ages.
    ages: HashMap<(u64, i32), (String, Age)>,
    /// consumer client → delivery times.
    delivered: BTreeMap<String, (LatencyHist, u64)>,
    producers: BTreeMap<String, Producer>,
    unmatched: u64,
    forgotten: u64,
    overflow: u64,
}

/// Record age of one partition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgeReport {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Batches fetched.
    pub batches: u64,
    /// Of which with LogAppendTime timestamps (the broker's clock).
    pub log_append_time: u64,
    /// Of which with a timestamp after the response (not in `age_ms`).
    pub future: u64,
    /// The ages.
    pub age_ms: Option<LatencyMs>,
}

/// Produce → fetch delivery seen by one consumer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeliveryReport {
    /// The consumer's client id.
    pub consumer: String,
    /// Batches it fetched that the capture saw produced.
    pub batches: u64,
    /// Produce request → Fetch response.
    pub delivery_ms: Option<LatencyMs>,
}

/// One producer's batching.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProducerReport {
    /// The producer's client id.
    pub producer: String,
    /// Produce requests.
    pub requests: u64,
    /// Batches they carried.
    pub batches: u64,
    /// Records in them.
    pub records: u64,
    /// records / batches.
    pub records_per_batch: Option<f64>,
    /// Bytes of the batches.
    pub bytes: u64,
    /// bytes / batches.
    pub mean_batch_bytes: Option<f64>,
    /// The largest batch.
    pub max_batch_bytes: u64,
    /// Time between two requests with a batch for the same partition.
    pub batch_gap_ms: Option<LatencyMs>,
}

/// The sections [`Delivery`] reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeliveryReports {
    /// Record age per partition.
    pub record_age: Vec<AgeReport>,
    /// Delivery per consumer.
    pub delivery: Vec<DeliveryReport>,
    /// Fetched batches whose Produce request the capture did not hold (or
    /// had forgotten).
    pub unmatched_batches: u64,
    /// Produced batches forgotten at [`MAX_PRODUCED`] before a fetch.
    pub forgotten_batches: u64,
    /// Producers' batching.
    pub producers: Vec<ProducerReport>,
    /// Partitions, producers or consumers refused at [`MAX_KEYS`].
    pub overflow: u64,
}

impl Delivery {
    /// A Produce request of `producer` with `batches` for (topic,
    /// partition), completed at `ts`. Call once per partition of a request;
    /// `first` on the request's first partition.
    pub fn produced(
        &mut self,
        producer: &str,
        ts: Timestamp,
        first: bool,
        topic: &str,
        partition: i32,
        batches: &[BatchHead],
    ) {
        let room = self.producers.len() < MAX_KEYS;
        let p = match self.producers.get_mut(producer) {
            Some(p) => Some(p),
            None if room => Some(self.producers.entry(producer.to_string()).or_default()),
            None => {
                self.overflow += 1;
                None
            }
        };
        let topic_key = topic_hash(topic);
        if let Some(p) = p {
            p.requests += u64::from(first);
            for b in batches {
                p.batches += 1;
                p.records += u64::try_from(b.records).unwrap_or(0);
                p.bytes += b.bytes;
                p.max_batch_bytes = p.max_batch_bytes.max(b.bytes);
            }
            if !batches.is_empty() {
                let slot = (topic_key, partition);
                if let Some(prev) = p.last.get(&slot) {
                    p.gaps.record(ts.nanos_since(*prev));
                }
                if p.last.len() < MAX_KEYS || p.last.contains_key(&slot) {
                    p.last.insert(slot, ts);
                }
            }
        }
        for b in batches {
            let k = Key {
                topic: topic_key,
                partition,
                id: BatchId::of(b),
            };
            if self.produced.insert(k, ts).is_none() {
                self.order.push_back(k);
            }
            while self.order.len() > MAX_PRODUCED {
                if let Some(old) = self.order.pop_front() {
                    self.produced.remove(&old);
                    self.forgotten += 1;
                }
            }
        }
    }

    /// A Fetch response to `consumer` (when its request was seen), its
    /// first frame at `ts`, carrying `batches` of (topic, partition).
    pub fn fetched(
        &mut self,
        consumer: Option<&str>,
        ts: Timestamp,
        topic: &str,
        partition: i32,
        batches: &[BatchHead],
    ) {
        if batches.is_empty() {
            return;
        }
        let now = ts.as_nanos();
        let topic_key = topic_hash(topic);
        let room = self.ages.len() < MAX_KEYS;
        let age = match self.ages.entry((topic_key, partition)) {
            Entry::Occupied(o) => Some(&mut o.into_mut().1),
            Entry::Vacant(v) if room => Some(&mut v.insert((topic.to_string(), Age::default())).1),
            Entry::Vacant(_) => {
                self.overflow += 1;
                None
            }
        };
        if let Some(a) = age {
            for b in batches {
                a.batches += 1;
                a.log_append += u64::from(b.log_append_time());
                let ns = now - i128::from(b.max_timestamp) * 1_000_000;
                match u64::try_from(ns) {
                    Ok(ns) => a.hist.record(ns),
                    Err(_) => a.future += 1,
                }
            }
        }
        let Some(consumer) = consumer else { return };
        let room = self.delivered.len() < MAX_KEYS;
        let mut delivered = None;
        for b in batches {
            let k = Key {
                topic: topic_key,
                partition,
                id: BatchId::of(b),
            };
            let Some(at) = self.produced.get(&k) else {
                self.unmatched += 1;
                continue;
            };
            if delivered.is_none() {
                delivered = match self.delivered.get_mut(consumer) {
                    Some(d) => Some(d),
                    None if room => Some(self.delivered.entry(consumer.to_string()).or_default()),
                    None => {
                        self.overflow += 1;
                        return;
                    }
                };
            }
            if let Some(d) = delivered.as_mut() {
                d.0.record(ts.nanos_since(*at));
                d.1 += 1;
            }
        }
    }

    /// The partitions' ages by topic name and partition.
    fn ages_in_order(&self) -> impl Iterator<Item = (&String, &i32, &Age)> {
        let mut v: Vec<_> = self.ages.iter().map(|((_, p), (t, a))| (t, p, a)).collect();
        v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        v.into_iter()
    }

    /// Counts every pending histogram value (before [`report`](Self::report)).
    pub fn settle(&mut self) {
        for (_, a) in self.ages.values_mut() {
            a.hist.settle();
        }
        for d in self.delivered.values_mut() {
            d.0.settle();
        }
        for p in self.producers.values_mut() {
            p.gaps.settle();
        }
    }

    /// The report.
    pub fn report(&self) -> DeliveryReports {
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        DeliveryReports {
            record_age: self
                .ages_in_order()
                .map(|(topic, partition, a)| AgeReport {
                    topic: topic.clone(),
                    partition: *partition,
                    batches: a.batches,
                    log_append_time: a.log_append,
                    future: a.future,
                    age_ms: a.hist.summary(),
                })
                .collect(),
            delivery: self
                .delivered
                .iter()
                .map(|(c, (h, n))| DeliveryReport {
                    consumer: c.clone(),
                    batches: *n,
                    delivery_ms: h.summary(),
                })
                .collect(),
            unmatched_batches: self.unmatched,
            forgotten_batches: self.forgotten,
            producers: self
                .producers
                .iter()
                .map(|(name, p)| ProducerReport {
                    producer: name.clone(),
                    requests: p.requests,
                    batches: p.batches,
                    records: p.records,
                    records_per_batch: ratio(p.records, p.batches),
                    bytes: p.bytes,
                    mean_batch_bytes: ratio(p.bytes, p.batches),
                    max_batch_bytes: p.max_batch_bytes,
                    batch_gap_ms: p.gaps.summary(),
                })
                .collect(),
            overflow: self.overflow,
        }
    }
}

/// What the metrics exposition reads (`stats::openmetrics`).
impl Delivery {
    /// The record ages of every (topic, partition).
    pub(crate) fn age_hists(&self) -> impl Iterator<Item = (&str, i32, &LatencyHist)> + '_ {
        self.ages_in_order()
            .map(|(t, p, a)| (t.as_str(), *p, &a.hist))
    }

    /// The produce → fetch delivery times of every consumer.
    pub(crate) fn delivery_hists(&self) -> impl Iterator<Item = (&str, &LatencyHist)> + '_ {
        self.delivered.iter().map(|(c, d)| (c.as_str(), &d.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::new(ms / 1000, u32::try_from(ms % 1000).unwrap() * 1_000_000)
    }

    fn batch(crc: u32, max_timestamp: i64, records: i32) -> BatchHead {
        BatchHead {
            producer_id: 7,
            producer_epoch: 0,
            base_sequence: i32::try_from(crc).unwrap(),
            crc,
            max_timestamp,
            records,
            bytes: 100 * u64::try_from(records).unwrap(),
            ..BatchHead::default()
        }
    }

    #[test]
    fn age_delivery_and_batching_from_produced_and_fetched_batches() {
        let mut d = Delivery::default();
        d.produced("p", t(1_000), true, "t", 0, &[batch(1, 990, 2)]);
        d.produced("p", t(1_100), true, "t", 0, &[batch(2, 1_095, 4)]);
        d.produced("p", t(1_100), false, "t", 1, &[batch(3, 1_098, 1)]);
        // Consumer c fetches batches 1 and 2 at 1.5 s, and one never produced here.
        d.fetched(
            Some("c"),
            t(1_500),
            "t",
            0,
            &[batch(1, 990, 2), batch(2, 1_095, 4), batch(9, 1_400, 1)],
        );
        d.fetched(Some("c"), t(1_500), "t", 2, &[]);
        d.settle();
        let r = d.report();
        let age = &r.record_age[0];
        assert_eq!(
            (age.topic.as_str(), age.partition, age.batches, age.future),
            ("t", 0, 3, 0)
        );
        let a = age.age_ms.as_ref().unwrap();
        assert_eq!((a.count, a.min, a.max), (3, 100.0, 510.0));
        let del = &r.delivery[0];
        let dm = del.delivery_ms.as_ref().unwrap();
        assert_eq!(
            (del.consumer.as_str(), del.batches, dm.min, dm.max),
            ("c", 2, 400.0, 500.0)
        );
        assert_eq!((r.unmatched_batches, r.forgotten_batches), (1, 0));
        let p = &r.producers[0];
        assert_eq!(
            (p.requests, p.batches, p.records, p.bytes, p.max_batch_bytes),
            (2, 3, 7, 700, 400)
        );
        let gaps = p.batch_gap_ms.as_ref().unwrap();
        assert_eq!((gaps.count, gaps.max), (1, 100.0));
    }

    #[test]
    fn a_producer_clock_ahead_is_counted_not_aged() {
        let mut d = Delivery::default();
        d.fetched(Some("c"), t(1_000), "t", 0, &[batch(1, 5_000, 1)]);
        d.settle();
        let age = &d.report().record_age[0];
        assert_eq!(
            (age.batches, age.future, age.age_ms.is_none()),
            (1, 1, true)
        );
    }

    #[test]
    fn produced_batches_are_forgotten_oldest_first() {
        let mut d = Delivery::default();
        let n = u32::try_from(MAX_PRODUCED).unwrap() + 3;
        for crc in 0..n {
            d.produced("p", t(0), true, "t", 0, &[batch(crc, 0, 1)]);
        }
        d.fetched(
            Some("c"),
            t(10),
            "t",
            0,
            &[batch(0, 0, 1), batch(n - 1, 0, 1)],
        );
        d.settle();
        let r = d.report();
        assert_eq!(
            (
                r.forgotten_batches,
                r.unmatched_batches,
                r.delivery[0].batches
            ),
            (3, 1, 1)
        );
        assert!(d.produced.len() <= MAX_PRODUCED);
    }
}
