//! Traffic per topic partition: the record sets of Produce requests and of
//! Fetch responses — sets, bytes, batches, records, codecs and compression —
//! with the Produce `Acks` and the frames that carried them.
//!
//! Invariants: the table stops growing at its cap (what it refuses is
//! counted in `overflow`); an entry is found by the topic as `Lag::topic`
//! interned it, or else by its borrowed name, so no key is made per record
//! set; the report lists entries in (topic,
//! partition) order.

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

use super::facts::SetFacts;
use super::lag::TopicId;
use super::report::{SideReport, TopicReport};
use super::Evidence;
use crate::kafka::records::Codecs;

/// A topic and partition.
type PartKey = (Option<String>, Option<i32>);

/// The topic-partition counters.
#[derive(Debug)]
pub(super) struct Parts {
    /// Position in `list` by topic name, then partition.
    named: HashMap<String, HashMap<Option<i32>, usize>>,
    /// Position in `list` by the topic as `Lag::topic` interns it, and
    /// partition: the entries of `named` found before, found again
    /// without hashing their name.
    by_id: HashMap<(TopicId, Option<i32>), usize>,
    /// Position in `list` of the places without a topic, by partition.
    unnamed: HashMap<Option<i32>, usize>,
    list: Vec<(PartKey, PartAcc)>,
    cap: usize,
    /// Entries refused because the table was full.
    pub(super) overflow: u64,
}

/// One direction's record sets of a partition.
#[derive(Debug, Default)]
pub(super) struct Side {
    sets: u64,
    bytes: u64,
    pub(super) batches: u64,
    pub(super) records: u64,
    partial: u64,
    /// Batches per codec.
    codecs: Codecs,
    compressed: u64,
    decompressed: u64,
}

/// A partition's counters.
#[derive(Debug, Default)]
pub(super) struct PartAcc {
    pub(super) produce: Side,
    fetch: Side,
    /// Produced record sets per `Acks`.
    pub(super) acks: BTreeMap<i16, u64>,
    pub(super) produce_frames: Evidence,
}

impl Parts {
    /// An empty table of at most `cap` partitions.
    pub(super) fn new(cap: usize) -> Parts {
        Parts {
            named: HashMap::default(),
            by_id: HashMap::default(),
            unnamed: HashMap::default(),
            list: Vec::new(),
            cap,
            overflow: 0,
        }
    }

    /// The counters of (`topic`, `partition`), made if there is room;
    /// `None` (counted) if full. `id`: the topic as `Lag::topic` interned
    /// it, when it did.
    pub(super) fn entry(
        &mut self,
        topic: Option<&str>,
        id: Option<TopicId>,
        partition: Option<i32>,
    ) -> Option<&mut PartAcc> {
        if let Some(&at) = id.and_then(|t| self.by_id.get(&(t, partition))) {
            return self.list.get_mut(at).map(|e| &mut e.1);
        }
        let found = match topic {
            Some(t) => self.named.get(t).and_then(|m| m.get(&partition)),
            None => self.unnamed.get(&partition),
        };
        let at = match found {
            Some(&at) => at,
            None if self.list.len() >= self.cap => {
                self.overflow += 1;
                return None;
            }
            None => {
                let at = self.list.len();
                self.list
                    .push(((topic.map(str::to_string), partition), PartAcc::default()));
                match topic {
                    Some(t) => self
                        .named
                        .entry(t.to_string())
                        .or_default()
                        .insert(partition, at),
                    None => self.unnamed.insert(partition, at),
                };
                at
            }
        };
        if let (Some(t), Some(_)) = (id, topic) {
            self.by_id.insert((t, partition), at);
        }
        self.list.get_mut(at).map(|e| &mut e.1)
    }

    /// Every entry, in (topic, partition) order.
    pub(super) fn sorted(&self) -> Vec<&(PartKey, PartAcc)> {
        let mut v: Vec<_> = self.list.iter().collect();
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Every partition's record sets, in (topic, partition) order.
    pub(super) fn report(&self) -> Vec<TopicReport> {
        let each = self.sorted().into_iter().map(|((t, p), x)| TopicReport {
            topic: t.clone(),
            partition: *p,
            produce: x.produce.report(),
            fetch: x.fetch.report(),
            acks: x.acks.iter().map(|(a, n)| (a.to_string(), *n)).collect(),
        });
        each.collect()
    }
}

impl PartAcc {
    /// Counts record set `s`, produced or fetched.
    pub(super) fn add(&mut self, s: &SetFacts<'_>, produce: bool) {
        let side = if produce {
            &mut self.produce
        } else {
            &mut self.fetch
        };
        let x = &s.counts;
        side.sets += 1;
        side.bytes += s.bytes;
        side.batches += x.batches;
        side.records += x.records;
        side.partial += x.partial;
        side.codecs.merge(&x.codecs);
        side.compressed += x.compressed;
        side.decompressed += x.decompressed;
    }
}

impl Side {
    /// The report of these record sets.
    fn report(&self) -> SideReport {
        SideReport {
            record_sets: self.sets,
            bytes: self.bytes,
            batches: self.batches,
            records: self.records,
            records_per_batch: (self.batches > 0)
                .then(|| self.records as f64 / self.batches as f64),
            partial_batches: self.partial,
            codecs: self
                .codecs
                .iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            compressed_bytes: self.compressed,
            decompressed_bytes: self.decompressed,
            compression_ratio: (self.compressed > 0)
                .then(|| self.decompressed as f64 / self.compressed as f64),
        }
    }
}
