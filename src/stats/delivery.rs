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
use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use serde::Serialize;

use super::hist::{LatencyHist, LatencyMs};
use super::index::Index;
use super::lag::{ConsumerId, Lag, TopicId};
use crate::kafka::records::BatchHead;
use crate::vocab::Timestamp;

/// Most produced batches remembered for matching with fetches.
pub const MAX_PRODUCED: usize = 100_000;

/// Most partitions, producers and consumers each kept.
pub const MAX_KEYS: usize = 10_000;

/// What identifies a produced batch on the wire: its partition (the topic
/// interned by [`Lag::topic`]), producer id and epoch, base sequence and CRC.
/// 32 bytes, so that the remembered batches take little of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    producer_id: i64,
    topic: TopicId,
    partition: i32,
    base_sequence: i32,
    crc: u32,
    producer_epoch: i16,
}

impl Key {
    /// The identity of batch `b` of (`topic`, `partition`).
    fn of(topic: TopicId, partition: i32, b: &BatchHead) -> Key {
        Key {
            producer_id: b.producer_id,
            topic,
            partition,
            base_sequence: b.base_sequence,
            crc: b.crc,
            producer_epoch: b.producer_epoch,
        }
    }
}

/// The produced batches remembered for matching: (key, when its Produce
/// request completed, ns since the epoch) in the order they were first
/// produced, at most [`MAX_PRODUCED`] (the oldest are forgotten first), and
/// an index of their places by key. The batches lie in the order they come,
/// so remembering one writes where the last was written; only the index,
/// 8 bytes a place, is reached at random. A batch produced again (a retry)
/// keeps its place and takes the new time.
#[derive(Clone, Debug, Default)]
struct Produced {
    ring: VecDeque<(Key, i64)>,
    /// The number of the batch at the ring's front (numbers wrap; at most
    /// [`MAX_PRODUCED`] + 1 are live, so none is taken twice).
    front: u32,
    /// Batch numbers, found by their key's hash.
    index: Index,
}

/// The hash a key is indexed by.
fn key_hash(k: &Key) -> u64 {
    FxBuildHasher.hash_one(k)
}

/// Places in the index: a power of two with at least a fifth of it left
/// empty at [`MAX_PRODUCED`] + 1 batches, so that a probe ends within a
/// line or two.
const INDEX_PLACES: usize = ((MAX_PRODUCED + 1) * 5 / 4).next_power_of_two();

impl Produced {
    fn len(&self) -> usize {
        self.ring.len()
    }

    /// The place in the ring of batch number `n`.
    fn at(&self, n: u32) -> Option<&(Key, i64)> {
        self.ring.get(n.wrapping_sub(self.front) as usize)
    }

    /// The number of the batch remembered as `k` (hash `h`), if any.
    fn number(&self, k: &Key, h: u64) -> Option<u32> {
        let found = self
            .index
            .find(h, |n| self.at(n).is_some_and(|e| e.0 == *k));
        found.map(|(_, n)| n)
    }

    /// When `k` (hash `h`) was last produced, if it is remembered.
    fn get(&self, k: &Key, h: u64) -> Option<i64> {
        self.number(k, h).and_then(|n| self.at(n)).map(|e| e.1)
    }

    /// Remembers `k` (hash `h`) produced at `at` (its time updated if it
    /// is remembered).
    fn insert(&mut self, k: Key, h: u64, at: i64) {
        if self.ring.is_empty() {
            // Sized at the first batch: grown by doubling, the ring would
            // be moved again and again.
            self.ring.reserve(MAX_PRODUCED + 1);
        }
        if let Some(n) = self.number(&k, h) {
            let place = n.wrapping_sub(self.front) as usize;
            if let Some(e) = self.ring.get_mut(place) {
                e.1 = at;
            }
            return;
        }
        let n = self.front.wrapping_add(self.ring.len() as u32);
        self.ring.push_back((k, at));
        self.index.insert(h, n, INDEX_PLACES);
    }

    /// Forgets the oldest batch; `false` when none is remembered.
    fn forget_oldest(&mut self) -> bool {
        let Some((k, _)) = self.ring.pop_front() else {
            return false;
        };
        let front = self.front;
        if let Some((i, _)) = self.index.find(key_hash(&k), |n| n == front) {
            self.index.remove_at(i);
        }
        self.front = front.wrapping_add(1);
        true
    }
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
    /// (topic, partition) → the last Produce request's time.
    last: HashMap<(TopicId, i32), Timestamp>,
}

impl Producer {
    /// Adds `other`'s batching (two clients of one name).
    fn merge(&mut self, other: &Producer) {
        self.requests += other.requests;
        self.batches += other.batches;
        self.records += other.records;
        self.bytes += other.bytes;
        self.max_batch_bytes = self.max_batch_bytes.max(other.max_batch_bytes);
        self.gaps.merge(&other.gaps);
    }
}

/// Record age, delivery and producer batching of a capture. Clients and
/// topics are the ids [`Lag`] interns; [`Delivery::report`] names them.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    /// Produced batches and when their Produce request completed.
    produced: Produced,
    /// Batches produced and fetched, not yet remembered or looked up: at
    /// most [`HELD`](super::index::HELD), applied in order
    /// ([`Delivery::apply`]).
    held: Vec<Held>,
    /// The consumer of the fetched batch applied last was refused at
    /// [`MAX_KEYS`]: the rest of its partition's batches in that response
    /// are not counted.
    refused: bool,
    ages: HashMap<(TopicId, i32), Age>,
    /// consumer → delivery times and batches.
    delivered: HashMap<ConsumerId, (LatencyHist, u64)>,
    producers: HashMap<ConsumerId, Producer>,
    unmatched: u64,
    forgotten: u64,
    overflow: u64,
}

/// A batch waiting for [`Delivery::apply`], with its key's hash.
#[derive(Clone, Debug)]
enum Held {
    /// Produced at `at` (ns since the epoch).
    Produced { key: Key, hash: u64, at: i64 },
    /// Fetched by `consumer` in a response whose first frame came at `now`
    /// (ns since the epoch); `first` of its partition's batches there.
    Fetched {
        key: Key,
        hash: u64,
        consumer: ConsumerId,
        now: i128,
        first: bool,
    },
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
        producer: ConsumerId,
        ts: Timestamp,
        first: bool,
        (topic, partition): (TopicId, i32),
        batches: &[BatchHead],
    ) {
        let room = self.producers.len() < MAX_KEYS;
        let p = match self.producers.entry(producer) {
            Entry::Occupied(o) => Some(o.into_mut()),
            Entry::Vacant(v) if room => Some(v.insert(Producer::default())),
            Entry::Vacant(_) => {
                self.overflow += 1;
                None
            }
        };
        if let Some(p) = p {
            p.requests += u64::from(first);
            for b in batches {
                p.batches += 1;
                p.records += u64::try_from(b.records).unwrap_or(0);
                p.bytes += b.bytes;
                p.max_batch_bytes = p.max_batch_bytes.max(b.bytes);
            }
            if !batches.is_empty() {
                let room = p.last.len() < MAX_KEYS;
                match p.last.entry((topic, partition)) {
                    Entry::Occupied(mut o) => {
                        p.gaps.record(ts.nanos_since(*o.get()));
                        o.insert(ts);
                    }
                    Entry::Vacant(v) if room => {
                        v.insert(ts);
                    }
                    Entry::Vacant(_) => {}
                }
            }
        }
        // Past the year 2262 a batch is not remembered (it is unmatched).
        let Ok(at) = i64::try_from(ts.as_nanos()) else {
            return;
        };
        for b in batches {
            let key = Key::of(topic, partition, b);
            let hash = key_hash(&key);
            self.hold(Held::Produced { key, hash, at });
        }
    }

    /// Holds `h` for [`Delivery::apply`], which runs when
    /// [`HELD`](super::index::HELD) are held.
    fn hold(&mut self, h: Held) {
        if super::index::hold(&mut self.held, h) {
            self.apply();
        }
    }

    /// Remembers and looks up the batches held, in the order they came:
    /// first the index's places of them all are read, then the remembered
    /// batches the lookups will compare, so that the misses in the cache of
    /// these reads, which depend on nothing, overlap; the work in order
    /// then finds them in the cache.
    fn apply(&mut self) {
        let mut held = std::mem::take(&mut self.held);
        let hash = |h: &Held| match h {
            Held::Produced { hash, .. } | Held::Fetched { hash, .. } => *hash,
        };
        // Reads that nothing branches on: a read whose value decides a
        // branch holds up the reads after it until it arrives.
        let (index, p) = (&self.produced.index, &self.produced);
        let seen = held
            .iter()
            .fold(0u64, |a, h| a.wrapping_add(index.home_place(hash(h))));
        std::hint::black_box(seen);
        let found = held.iter().filter_map(|h| match h {
            Held::Fetched { hash, .. } => index.candidate(*hash).and_then(|n| p.at(n)),
            Held::Produced { .. } => None,
        });
        // Both ends of a remembered batch: its 40 bytes may straddle lines.
        let seen = found.fold(0i64, |a, e| {
            a.wrapping_add(e.0.producer_id).wrapping_add(e.1)
        });
        std::hint::black_box(seen);
        for h in held.drain(..) {
            match h {
                Held::Produced { key, hash, at } => {
                    self.produced.insert(key, hash, at);
                    while self.produced.len() > MAX_PRODUCED && self.produced.forget_oldest() {
                        self.forgotten += 1;
                    }
                }
                Held::Fetched {
                    key,
                    hash,
                    consumer,
                    now,
                    first,
                } => {
                    self.refused &= !first;
                    if !self.refused {
                        self.refused = !self.deliver(&key, hash, consumer, now);
                    }
                }
            }
        }
        self.held = held;
    }

    /// A fetched batch looked up: its delivery time counted for `consumer`
    /// when the capture saw it produced. `false` when the consumer is
    /// refused ([`MAX_KEYS`] consumers are counted already).
    fn deliver(&mut self, key: &Key, hash: u64, consumer: ConsumerId, now: i128) -> bool {
        let Some(at) = self.produced.get(key, hash) else {
            self.unmatched += 1;
            return true;
        };
        let room = self.delivered.len() < MAX_KEYS;
        let d = match self.delivered.entry(consumer) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) if room => v.insert(Default::default()),
            Entry::Vacant(_) => {
                self.overflow += 1;
                return false;
            }
        };
        d.0.record(u64::try_from((now - i128::from(at)).max(0)).unwrap_or(u64::MAX));
        d.1 += 1;
        true
    }

    /// A Fetch response to `consumer` (when its request was seen), its
    /// first frame at `ts`, carrying `batches` of (topic, partition).
    pub fn fetched(
        &mut self,
        consumer: Option<ConsumerId>,
        ts: Timestamp,
        (topic, partition): (TopicId, i32),
        batches: &[BatchHead],
    ) {
        if batches.is_empty() {
            return;
        }
        let now = ts.as_nanos();
        let room = self.ages.len() < MAX_KEYS;
        let age = match self.ages.entry((topic, partition)) {
            Entry::Occupied(o) => Some(o.into_mut()),
            Entry::Vacant(v) if room => Some(v.insert(Age::default())),
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
        for (i, b) in batches.iter().enumerate() {
            let key = Key::of(topic, partition, b);
            let hash = key_hash(&key);
            self.hold(Held::Fetched {
                key,
                hash,
                consumer,
                now,
                first: i == 0,
            });
        }
    }

    /// The partitions' ages by topic name and partition.
    fn ages_in_order<'a>(&'a self, names: &'a Lag) -> Vec<(&'a str, i32, &'a Age)> {
        let mut v: Vec<_> = (self.ages.iter())
            .filter_map(|(&(t, p), a)| Some((names.topic_name(t)?, p, a)))
            .collect();
        v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        v
    }

    /// The consumers' delivery times by name ([`Lag::label`]); clients of
    /// one name (the same client id on two hosts) are merged.
    fn delivered_by_name<'a>(&self, names: &'a Lag) -> BTreeMap<&'a str, (LatencyHist, u64)> {
        if !self.held.is_empty() {
            return self.settled().delivered_by_name(names);
        }
        let mut out: BTreeMap<&str, (LatencyHist, u64)> = BTreeMap::new();
        for (&c, (h, n)) in &self.delivered {
            let Some(name) = names.label(c) else { continue };
            let e = out.entry(name).or_default();
            e.0.merge(h);
            e.1 += n;
        }
        out
    }

    /// This delivery with every held batch remembered or looked up: itself,
    /// or (batches held, no [`Delivery::settle`] first) a copy that did it.
    fn settled(&self) -> std::borrow::Cow<'_, Delivery> {
        if self.held.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut settled = self.clone();
        settled.apply();
        std::borrow::Cow::Owned(settled)
    }

    /// Counts every pending histogram value (before [`report`](Self::report)).
    pub fn settle(&mut self) {
        self.apply();
        for a in self.ages.values_mut() {
            a.hist.settle();
        }
        for d in self.delivered.values_mut() {
            d.0.settle();
        }
        for p in self.producers.values_mut() {
            p.gaps.settle();
        }
    }

    /// The report, clients and topics named by `names`.
    pub fn report(&self, names: &Lag) -> DeliveryReports {
        if !self.held.is_empty() {
            return self.settled().report(names);
        }
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let mut producers: BTreeMap<&str, Producer> = BTreeMap::new();
        for (&c, p) in &self.producers {
            if let Some(name) = names.label(c) {
                producers.entry(name).or_default().merge(p);
            }
        }
        DeliveryReports {
            record_age: (self.ages_in_order(names).into_iter())
                .map(|(topic, partition, a)| AgeReport {
                    topic: topic.to_string(),
                    partition,
                    batches: a.batches,
                    log_append_time: a.log_append,
                    future: a.future,
                    age_ms: a.hist.summary(),
                })
                .collect(),
            delivery: (self.delivered_by_name(names).into_iter())
                .map(|(c, (h, n))| DeliveryReport {
                    consumer: c.to_string(),
                    batches: n,
                    delivery_ms: h.summary(),
                })
                .collect(),
            unmatched_batches: self.unmatched,
            forgotten_batches: self.forgotten,
            producers: (producers.into_iter())
                .map(|(name, p)| ProducerReport {
                    producer: name.to_string(),
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
    pub(crate) fn age_hists<'a>(&'a self, names: &'a Lag) -> Vec<(&'a str, i32, &'a LatencyHist)> {
        (self.ages_in_order(names).into_iter())
            .map(|(t, p, a)| (t, p, &a.hist))
            .collect()
    }

    /// The produce → fetch delivery times of every consumer (by name).
    pub(crate) fn delivery_hists<'a>(&'a self, names: &'a Lag) -> BTreeMap<&'a str, LatencyHist> {
        (self.delivered_by_name(names).into_iter())
            .map(|(c, (h, _))| (c, h))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> Timestamp {
        Timestamp::new(ms / 1000, u32::try_from(ms % 1000).unwrap() * 1_000_000)
    }

    /// Names interned as `Stats` does: clients on one host, topics.
    struct Names(Lag);

    impl Names {
        fn new() -> Names {
            Names(Lag::default())
        }
        fn client(&mut self, c: &str) -> ConsumerId {
            self.0.consumer(c, "10.0.0.1".parse().unwrap()).unwrap()
        }
        fn part(&mut self, t: &str, p: i32) -> (TopicId, i32) {
            (self.0.topic(t).unwrap(), p)
        }
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
        let (mut d, mut n) = (Delivery::default(), Names::new());
        let (p, c) = (n.client("p"), n.client("c"));
        let (t0, t1, t2) = (n.part("t", 0), n.part("t", 1), n.part("t", 2));
        d.produced(p, t(1_000), true, t0, &[batch(1, 990, 2)]);
        d.produced(p, t(1_100), true, t0, &[batch(2, 1_095, 4)]);
        d.produced(p, t(1_100), false, t1, &[batch(3, 1_098, 1)]);
        // Consumer c fetches batches 1 and 2 at 1.5 s, and one never produced here.
        d.fetched(
            Some(c),
            t(1_500),
            t0,
            &[batch(1, 990, 2), batch(2, 1_095, 4), batch(9, 1_400, 1)],
        );
        d.fetched(Some(c), t(1_500), t2, &[]);
        d.settle();
        let r = d.report(&n.0);
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
        let (mut d, mut n) = (Delivery::default(), Names::new());
        let (c, t0) = (n.client("c"), n.part("t", 0));
        d.fetched(Some(c), t(1_000), t0, &[batch(1, 5_000, 1)]);
        d.settle();
        let age = &d.report(&n.0).record_age[0];
        assert_eq!(
            (age.batches, age.future, age.age_ms.is_none()),
            (1, 1, true)
        );
    }

    #[test]
    fn produced_batches_are_forgotten_oldest_first() {
        let (mut d, mut names) = (Delivery::default(), Names::new());
        let (p, c, t0) = (names.client("p"), names.client("c"), names.part("t", 0));
        let n = u32::try_from(MAX_PRODUCED).unwrap() + 3;
        for crc in 0..n {
            d.produced(p, t(0), true, t0, &[batch(crc, 0, 1)]);
        }
        d.fetched(Some(c), t(10), t0, &[batch(0, 0, 1), batch(n - 1, 0, 1)]);
        d.settle();
        let r = d.report(&names.0);
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

    #[test]
    fn a_batch_produced_again_keeps_its_place_and_takes_the_new_time() {
        let (mut d, mut names) = (Delivery::default(), Names::new());
        let (p, c, t0) = (names.client("p"), names.client("c"), names.part("t", 0));
        // Batch 0 is produced, then retried at 2 s after MAX_PRODUCED - 1
        // others: still one place, so none is forgotten.
        d.produced(p, t(0), true, t0, &[batch(0, 0, 1)]);
        let n = u32::try_from(MAX_PRODUCED).unwrap();
        for crc in 1..n {
            d.produced(p, t(1_000), true, t0, &[batch(crc, 0, 1)]);
        }
        d.produced(p, t(2_000), true, t0, &[batch(0, 0, 1)]);
        d.fetched(Some(c), t(2_500), t0, &[batch(0, 0, 1)]);
        // One more: the oldest place (batch 0's, the retry's time with it) goes.
        d.produced(p, t(3_000), true, t0, &[batch(n, 0, 1)]);
        d.fetched(Some(c), t(3_500), t0, &[batch(0, 0, 1), batch(1, 0, 1)]);
        d.settle();
        let r = d.report(&names.0);
        let dm = r.delivery[0].delivery_ms.as_ref().unwrap();
        assert_eq!(
            (
                r.forgotten_batches,
                r.unmatched_batches,
                r.delivery[0].batches
            ),
            (1, 1, 2)
        );
        // From the retry (2 s) to 2.5 s; batch 1 from 1 s to 3.5 s.
        assert_eq!((dm.min, dm.max), (500.0, 2_500.0));
        assert_eq!(d.produced.len(), MAX_PRODUCED);
    }

    #[test]
    fn the_produced_batches_stay_found_through_many_turns_of_the_ring() {
        let (mut d, mut names) = (Delivery::default(), Names::new());
        let (p, c, t0) = (names.client("p"), names.client("c"), names.part("t", 0));
        let n = 3 * u32::try_from(MAX_PRODUCED).unwrap() + 7;
        for crc in 0..n {
            d.produced(p, t(1_000), true, t0, &[batch(crc, 0, 1)]);
            if crc % 1_000 == 0 {
                // The newest is found; the one just past the window is not.
                d.fetched(Some(c), t(1_001), t0, &[batch(crc, 0, 1)]);
            }
        }
        let oldest = n - u32::try_from(MAX_PRODUCED).unwrap();
        d.fetched(Some(c), t(1_002), t0, &[batch(oldest, 0, 1)]);
        d.fetched(Some(c), t(1_002), t0, &[batch(oldest - 1, 0, 1)]);
        d.settle();
        let r = d.report(&names.0);
        let found = u64::from(n.div_ceil(1_000)) + 1;
        assert_eq!(
            (
                r.delivery[0].batches,
                r.unmatched_batches,
                r.forgotten_batches
            ),
            (found, 1, u64::from(oldest))
        );
    }

    #[test]
    fn a_consumer_refused_at_the_cap_leaves_its_partitions_batches_uncounted() {
        let (mut d, mut names) = (Delivery::default(), Names::new());
        let (p, t0) = (names.client("p"), names.part("t", 0));
        // More batches than are held at once, so that one response's
        // batches are applied in two turns.
        let n = u32::try_from(crate::stats::index::HELD).unwrap() + 3;
        for crc in 0..n {
            d.produced(p, t(0), true, t0, &[batch(crc, 0, 1)]);
        }
        // Consumers by id (more than the names `Lag` keeps).
        let ids = 1_000..1_000 + ConsumerId::try_from(MAX_KEYS).unwrap();
        for c in ids.clone() {
            d.fetched(Some(c), t(10), t0, &[batch(0, 0, 1)]);
        }
        // One consumer too many: its first batch is refused, and so is
        // the rest of that response's batches for the partition (one of
        // them never produced: not counted as unmatched either).
        let late = ids.end;
        let mut batches: Vec<BatchHead> = (0..n).map(|crc| batch(crc, 0, 1)).collect();
        batches.push(batch(n + 100, 0, 1));
        d.fetched(Some(late), t(20), t0, &batches);
        // Its next response's batch never produced is counted.
        d.fetched(Some(late), t(30), t0, &[batch(n + 200, 0, 1)]);
        d.settle();
        let r = d.report(&names.0);
        assert_eq!((r.overflow, r.unmatched_batches), (1, 1));
        assert_eq!(d.delivered.len(), MAX_KEYS);
        assert!(ids
            .map(|c| d.delivered.get(&c).map(|x| x.1))
            .all(|n| n == Some(1)));
        assert!(!d.delivered.contains_key(&late));
    }

    #[test]
    fn batches_held_back_are_counted_in_a_report_made_before_settling() {
        let (mut d, mut names) = (Delivery::default(), Names::new());
        let (p, c, t0) = (names.client("p"), names.client("c"), names.part("t", 0));
        d.produced(p, t(100), true, t0, &[batch(1, 0, 1), batch(2, 0, 1)]);
        d.fetched(Some(c), t(600), t0, &[batch(1, 0, 1), batch(3, 0, 1)]);
        assert!(!d.held.is_empty());
        let before = d.report(&names.0);
        let hists = d.delivery_hists(&names.0);
        assert_eq!(hists.get("c").map(LatencyHist::count), Some(1));
        d.settle();
        assert!(d.held.is_empty());
        assert_eq!(d.report(&names.0), before);
        assert_eq!(
            (before.unmatched_batches, before.delivery[0].batches),
            (1, 1)
        );
        let ms = before.delivery[0].delivery_ms.as_ref().map(|l| l.max);
        assert_eq!(ms, Some(500.0));
    }

    #[test]
    fn clients_of_one_name_on_two_hosts_are_one_producer_and_one_consumer() {
        let (mut d, mut n) = (Delivery::default(), Names::new());
        let host = |h: &str| h.parse().unwrap();
        let p1 = n.0.consumer("app", host("10.0.0.1")).unwrap();
        let p2 = n.0.consumer("app", host("10.0.0.2")).unwrap();
        let t0 = n.part("t", 0);
        d.produced(p1, t(1_000), true, t0, &[batch(1, 990, 2)]);
        d.produced(p2, t(1_200), true, t0, &[batch(2, 1_190, 3)]);
        d.fetched(Some(p1), t(1_500), t0, &[batch(1, 990, 2)]);
        d.fetched(Some(p2), t(1_700), t0, &[batch(2, 1_190, 3)]);
        d.settle();
        let r = d.report(&n.0);
        assert_eq!(r.producers.len(), 1);
        let p = &r.producers[0];
        assert_eq!(
            (p.producer.as_str(), p.requests, p.batches, p.records),
            ("app", 2, 2, 5)
        );
        assert_eq!(r.delivery.len(), 1);
        let del = &r.delivery[0];
        let dm = del.delivery_ms.as_ref().unwrap();
        assert_eq!((del.batches, dm.min, dm.max), (2, 500.0, 500.0));
    }
}
