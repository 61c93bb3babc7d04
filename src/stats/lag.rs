//! Consumer lag read from the wire: what each consumer asked a Fetch for,
//! what the broker answered, and what its group committed.
//!
//! Place in the data path: `Stats` hands every paired Fetch exchange
//! ([`Lag::fetch`]) and every OffsetCommit request ([`Lag::commit`]) here,
//! with topics already resolved to names where the capture taught them;
//! [`Lag::report`] makes the `lag` section of the report.
//!
//! Definitions (docs/stats.md, "Consumer lag"):
//! - a consumer's *next offset* on a partition after a Fetch response is
//!   the last offset of the records returned + 1, or, when none were
//!   returned, the offset it asked for (a partition answered without being
//!   asked — an incremental fetch session — keeps the row's next offset);
//! - *lag* = the response's `HighWatermark` − that next offset, in records
//!   (never below 0);
//! - *committed lag* = the partition's latest `HighWatermark` seen − the
//!   group's latest `CommittedOffset` for it.
//!
//! Invariants: memory is bounded by partitions, consumers and groups, never
//! by the capture's length: at most [`MAX_PARTITIONS`] (consumer, topic,
//! partition) rows and as many committed offsets (the rest are counted in
//! `overflow`), and a row's series keeps at most [`SERIES`] samples, halving
//! its resolution when full, so it spans the whole capture. A partition
//! whose response carries an error, or no high watermark (−1), yields no
//! sample.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::BuildHasher;
use std::net::IpAddr;

use rustc_hash::{FxBuildHasher, FxHashMap};

use serde::Serialize;

use super::index::Index;
use crate::vocab::Timestamp;

/// Most (consumer, topic, partition) rows and committed offsets kept.
pub const MAX_PARTITIONS: usize = 10_000;

/// Most samples a row's lag series keeps.
pub const SERIES: usize = 120;

/// The trend is the lag's change over (at most) this many seconds.
pub const TREND_SECONDS: f64 = 60.0;

/// Places in the rows' index: at least a fifth of it left empty at
/// [`MAX_PARTITIONS`] rows.
const ROW_PLACES: usize = MAX_PARTITIONS * 5 / 4;

/// A row's key: (consumer, topic, partition).
type RowKey = (ConsumerId, TopicId, i32);

/// The hash a row's key is indexed by.
fn row_hash(k: &RowKey) -> u64 {
    FxBuildHasher.hash_one(k)
}

/// An answered partition waiting for [`Lag::apply`]: the consumer, the
/// response's time, the offset its request asked for (if it did) and the
/// answer, with its row's hash.
#[derive(Clone, Debug)]
struct HeldAnswer {
    hash: u64,
    who: ConsumerId,
    ts: Timestamp,
    asked: Option<i64>,
    answer: FetchAnswer,
}

/// The partitions of a Fetch request and their `FetchOffset`s, sorted by
/// (topic, partition) so that each answer finds its ask in O(log n) (a
/// Fetch may name thousands of partitions).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchAsks {
    asks: Vec<(TopicId, i32, i64)>,
}

impl FetchAsks {
    /// The asks (topic, partition, offset) of a request, in any order; of a
    /// partition named twice, the first.
    pub fn new(mut asks: Vec<(TopicId, i32, i64)>) -> FetchAsks {
        // Stable: a partition's first ask stays first.
        asks.sort_by_key(|a| (a.0, a.1));
        FetchAsks { asks }
    }

    /// The offset asked for (`topic`, `partition`).
    fn offset(&self, topic: TopicId, partition: i32) -> Option<i64> {
        let at = self
            .asks
            .partition_point(|a| (a.0, a.1) < (topic, partition));
        let found = self
            .asks
            .get(at)
            .filter(|a| a.0 == topic && a.1 == partition);
        found.map(|a| a.2)
    }
}

/// One partition of a Fetch response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchAnswer {
    /// Topic (interned by [`Lag::topic`]).
    pub topic: TopicId,
    /// Partition.
    pub partition: i32,
    /// The partition's `ErrorCode`.
    pub error: i16,
    /// `HighWatermark`.
    pub high_watermark: i64,
    /// `LastStableOffset` (−1 when the version has none).
    pub last_stable_offset: i64,
    /// `LogStartOffset` (−1 when the version has none).
    pub log_start_offset: i64,
    /// Last offset of the records returned (`baseOffset + lastOffsetDelta`
    /// of the last batch), when any were.
    pub last_offset: Option<i64>,
    /// Records returned.
    pub records: u64,
}

/// Topics interned within one message ([`Lag::topic`]): a name at the
/// address and length of the last one given is that name (the message holds
/// it while this borrows it: a struct's facts share their topic's name), so
/// a message's partitions mostly find their topic without its name read.
#[derive(Default)]
pub struct TopicMemo<'a>(Option<(&'a str, TopicId)>);

impl<'a> TopicMemo<'a> {
    /// [`Lag::topic`] of `name`: remembered when it is borrowed for `'a`
    /// (a name made for the call, on the tree path, is interned as it is).
    // A `&Cow`, not a `&str`: whether the name lives for `'a` is what decides.
    #[allow(clippy::ptr_arg)]
    pub fn topic(&mut self, lag: &mut Lag, name: &Cow<'a, str>) -> Option<TopicId> {
        let name = match name {
            Cow::Borrowed(name) => *name,
            Cow::Owned(name) => return lag.topic(name),
        };
        if let Some((last, id)) = self.0 {
            if std::ptr::eq(last, name) {
                return Some(id);
            }
        }
        let id = lag.topic(name)?;
        self.0 = Some((name, id));
        Some(id)
    }
}

/// Who fetched: the client id on a host (a consumer's group is learned
/// apart, [`Lag::member`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Consumer {
    /// The client id (empty when the requests carried none).
    pub client: String,
    /// The client's IP address.
    pub host: String,
}

impl Consumer {
    /// How record age, delivery and the producers name a client: its client
    /// id, else its address.
    pub fn label(&self) -> &str {
        match self.client.as_str() {
            "" => &self.host,
            c => c,
        }
    }
}

#[derive(Clone, Debug)]
struct Row {
    key: RowKey,
    fetches: u64,
    records: u64,
    asked: i64,
    next: i64,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    lag: i64,
    max_lag: i64,
    first_ts: Timestamp,
    /// The last sample's time (its lag is `lag`): the series' newest,
    /// kept here, so that a sample replacing it touches only the row.
    last_ts: Timestamp,
    /// The series' samples before the last, (time, lag), oldest first; with
    /// the last, at most [`SERIES`], at least `step` apart.
    series: Vec<(Timestamp, i64)>,
    /// The time of `series`' newest sample.
    settled: Option<Timestamp>,
    step_ns: u64,
}

/// A consumer interned by [`Lag::consumer`].
pub type ConsumerId = u32;

/// A topic interned by [`Lag::topic`].
pub type TopicId = u32;

/// A group's committed offsets: topic → partition → (offset, when).
type Commits = BTreeMap<String, BTreeMap<i32, (i64, Timestamp)>>;

/// The consumer lag of a capture.
#[derive(Clone, Debug, Default)]
pub struct Lag {
    /// Consumers by host, then client id → their index in `consumers`.
    consumer_ids: FxHashMap<IpAddr, FxHashMap<Box<str>, ConsumerId>>,
    consumers: Vec<Consumer>,
    /// Topic names → their index in `topic_names`.
    topic_ids: FxHashMap<Box<str>, TopicId>,
    topic_names: Vec<Box<str>>,
    /// The topic interned last: a message's partitions mostly share one.
    last_topic: Option<TopicId>,
    /// Rows, in the order they were made.
    rows: Vec<Row>,
    /// Their numbers by (consumer, topic, partition).
    row_index: Index,
    /// Answered partitions not counted yet (at most
    /// [`HELD`](super::index::HELD)).
    held: Vec<HeldAnswer>,
    /// group → topic → partition → (committed offset, when): a commit
    /// already known is found by borrowed names, no key made.
    committed: BTreeMap<String, Commits>,
    /// The committed offsets in `committed`.
    committed_len: usize,
    /// (topic, partition) → the latest high watermark answered, and when.
    high: FxHashMap<(TopicId, i32), (i64, Timestamp)>,
    /// The group each consumer last named in a group request.
    groups: FxHashMap<ConsumerId, String>,
    overflow: u64,
}

/// One (consumer, topic, partition) of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionLag {
    /// Client id of the consumer.
    pub client: String,
    /// Its IP address.
    pub host: String,
    /// Its group, when known.
    pub group: Option<String>,
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Fetch responses that answered for the partition.
    pub fetches: u64,
    /// Records they returned.
    pub records: u64,
    /// The last `FetchOffset` asked.
    pub fetch_offset: i64,
    /// The next offset after the last response (see the module doc).
    pub next_offset: i64,
    /// The last `HighWatermark`, `LastStableOffset` and `LogStartOffset` answered.
    pub high_watermark: i64,
    /// As answered (−1: the version has none).
    pub last_stable_offset: i64,
    /// As answered (−1: the version has none).
    pub log_start_offset: i64,
    /// Lag after the last response, in records.
    pub lag: i64,
    /// The largest lag seen.
    pub max_lag: i64,
    /// Change of lag per second over the last [`TREND_SECONDS`] of the
    /// series (records/s; positive: falling behind); `None` with one sample.
    pub trend_per_s: Option<f64>,
    /// The group's last committed offset, when the capture holds one.
    pub committed_offset: Option<i64>,
    /// The partition's latest high watermark − that committed offset.
    pub committed_lag: Option<i64>,
    /// First and last response (epoch seconds).
    pub first_ts: f64,
    /// As above.
    pub last_ts: f64,
    /// (epoch seconds, lag), oldest first.
    pub series: Vec<(f64, i64)>,
}

/// Lag summed over a group's partitions (the figure `kafka-consumer-groups`
/// prints), from its committed offsets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupLag {
    /// The group.
    pub group: String,
    /// Partitions with a committed offset.
    pub partitions: usize,
    /// Σ committed lag over those whose high watermark was seen.
    pub committed_lag: i64,
    /// Σ fetch lag of the group's consumers' rows.
    pub fetch_lag: i64,
}

/// The `lag` section of the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LagReport {
    /// Rows by consumer, topic, partition.
    pub partitions: Vec<PartitionLag>,
    /// Groups by name.
    pub groups: Vec<GroupLag>,
    /// Rows and committed offsets refused at [`MAX_PARTITIONS`].
    pub overflow: u64,
}

impl Lag {
    /// The consumer with `client` id on `host` (interned: the same id every
    /// time); `None` past [`MAX_PARTITIONS`] consumers (counted).
    pub fn consumer(&mut self, client: &str, host: IpAddr) -> Option<ConsumerId> {
        if let Some(&id) = self.consumer_ids.get(&host).and_then(|m| m.get(client)) {
            return Some(id);
        }
        let Ok(id) = ConsumerId::try_from(self.consumers.len()) else {
            return None;
        };
        if self.consumers.len() >= MAX_PARTITIONS {
            self.overflow += 1;
            return None;
        }
        self.consumers.push(Consumer {
            client: client.to_string(),
            host: host.to_string(),
        });
        self.consumer_ids
            .entry(host)
            .or_default()
            .insert(client.into(), id);
        Some(id)
    }

    /// Topic `name` (interned); `None` past [`MAX_PARTITIONS`] topics (counted).
    pub fn topic(&mut self, name: &str) -> Option<TopicId> {
        if let Some(id) = self.last_topic {
            if self.topic_name(id) == Some(name) {
                return Some(id);
            }
        }
        if let Some(&id) = self.topic_ids.get(name) {
            self.last_topic = Some(id);
            return Some(id);
        }
        let Ok(id) = TopicId::try_from(self.topic_names.len()) else {
            return None;
        };
        if self.topic_names.len() >= MAX_PARTITIONS {
            self.overflow += 1;
            return None;
        }
        self.topic_names.push(name.into());
        self.topic_ids.insert(name.into(), id);
        self.last_topic = Some(id);
        Some(id)
    }

    /// A paired Fetch exchange of consumer `who`: the partitions asked and
    /// answered (matched by topic and partition), at the response's time
    /// `ts`. The answers are counted [`HELD`](super::index::HELD) at a
    /// time, in the order they came ([`Lag::apply`]); [`Lag::settle`]
    /// counts the rest.
    pub fn fetch(
        &mut self,
        who: ConsumerId,
        ts: Timestamp,
        asks: &FetchAsks,
        answers: &[FetchAnswer],
    ) {
        for a in answers {
            if a.error != 0 || a.high_watermark < 0 {
                continue;
            }
            let held = HeldAnswer {
                hash: row_hash(&(who, a.topic, a.partition)),
                who,
                ts,
                asked: asks.offset(a.topic, a.partition),
                answer: a.clone(),
            };
            if super::index::hold(&mut self.held, held) {
                self.apply();
            }
        }
    }

    /// Counts the answers held, in the order they came: first the rows'
    /// places in the index are read, then the rows, with nothing branching
    /// on what these reads return, so that their misses in the cache
    /// overlap (each row is mostly a miss: docs/performance.md); counting
    /// then finds them in the cache.
    fn apply(&mut self) {
        let mut held = std::mem::take(&mut self.held);
        let index = &self.row_index;
        let seen = held
            .iter()
            .fold(0u64, |a, h| a.wrapping_add(index.home_place(h.hash)));
        std::hint::black_box(seen);
        let rows = held.iter().filter_map(|h| {
            let n = usize::try_from(index.candidate(h.hash)?).ok()?;
            self.rows.get(n)
        });
        // The row, and the end of its series, where a sample may join it.
        let seen = rows.fold(0u64, |a, r| {
            let end = r.series.last().map_or(0, |&(_, l)| l as u64);
            let far = r.step_ns ^ r.last_ts.secs as u64 ^ end;
            a.wrapping_add(r.fetches ^ r.next as u64 ^ far)
        });
        std::hint::black_box(seen);
        for h in held.drain(..) {
            self.count(h);
        }
        self.held = held;
    }

    /// Counts one answered partition into its row.
    fn count(&mut self, h: HeldAnswer) {
        let (a, ts) = (&h.answer, h.ts);
        let (topic, part) = (a.topic, a.partition);
        self.high.insert((topic, part), (a.high_watermark, ts));
        let key = (h.who, topic, part);
        let rows = &self.rows;
        let found = self.row_index.find(h.hash, |n| {
            let r = usize::try_from(n).ok().and_then(|n| rows.get(n));
            r.is_some_and(|r| r.key == key)
        });
        let found = found.and_then(|(_, n)| usize::try_from(n).ok());
        let asked = h
            .asked
            .or_else(|| found.and_then(|n| self.rows.get(n)).map(|r| r.next));
        let Some(asked) = asked else { return };
        let next = a
            .last_offset
            .map_or(asked, |l| l.saturating_add(1).max(asked));
        let lag = a.high_watermark.saturating_sub(next).max(0);
        let n = match found {
            Some(n) => n,
            None if self.rows.len() < MAX_PARTITIONS => {
                let n = self.rows.len();
                let Ok(number) = u32::try_from(n) else { return };
                self.rows.push(Row {
                    key,
                    fetches: 0,
                    records: 0,
                    asked: 0,
                    next: 0,
                    high_watermark: 0,
                    last_stable_offset: -1,
                    log_start_offset: -1,
                    lag: 0,
                    max_lag: 0,
                    first_ts: ts,
                    last_ts: ts,
                    series: Vec::new(),
                    settled: None,
                    step_ns: 1_000_000_000,
                });
                self.row_index.insert(h.hash, number, ROW_PLACES);
                n
            }
            None => {
                self.overflow += 1;
                return;
            }
        };
        let Some(row) = self.rows.get_mut(n) else {
            return;
        };
        row.sample(ts, lag);
        row.fetches += 1;
        row.records += a.records;
        row.asked = asked;
        row.next = next;
        row.high_watermark = a.high_watermark;
        row.last_stable_offset = a.last_stable_offset;
        row.log_start_offset = a.log_start_offset;
        row.max_lag = row.max_lag.max(lag);
    }

    /// Counts the answers held ([`Lag::fetch`]): before a report.
    pub fn settle(&mut self) {
        self.apply();
    }

    /// This lag with every answer counted: itself, or (answers held, no
    /// [`Lag::settle`] first) a copy that counted them.
    pub(crate) fn settled(&self) -> Cow<'_, Lag> {
        if self.held.is_empty() {
            return Cow::Borrowed(self);
        }
        let mut settled = self.clone();
        settled.apply();
        Cow::Owned(settled)
    }

    /// `who` named `group` in a group request (JoinGroup, SyncGroup,
    /// Heartbeat, OffsetCommit, …): its rows are the group's.
    pub fn member(&mut self, who: ConsumerId, group: &str) {
        if self.groups.get(&who).is_none_or(|g| g != group) {
            self.groups.insert(who, group.to_string());
        }
    }

    /// An OffsetCommit request's partition: `group` committed `offset`.
    pub fn commit(&mut self, group: &str, topic: &str, partition: i32, offset: i64, ts: Timestamp) {
        let known = (self.committed.get_mut(group))
            .and_then(|t| t.get_mut(topic))
            .and_then(|p| p.get_mut(&partition));
        if let Some(c) = known {
            *c = (offset, ts);
            return;
        }
        if self.committed_len >= MAX_PARTITIONS {
            self.overflow += 1;
            return;
        }
        let topics = self.committed.entry(group.to_string()).or_default();
        let parts = topics.entry(topic.to_string()).or_default();
        parts.insert(partition, (offset, ts));
        self.committed_len += 1;
    }

    /// Every committed (group, topic, partition), in that order.
    fn commits(&self) -> impl Iterator<Item = (&str, &str, i32)> + '_ {
        self.committed.iter().flat_map(|(g, topics)| {
            topics
                .iter()
                .flat_map(move |(t, parts)| parts.keys().map(move |&p| (g.as_str(), t.as_str(), p)))
        })
    }

    /// The committed offset of (`group`, `topic`, `partition`) and its lag
    /// against the partition's latest high watermark, when both are known.
    fn committed_lag(
        &self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Option<(i64, Option<i64>)> {
        let parts = self.committed.get(group)?.get(topic)?;
        let &(off, _) = parts.get(&partition)?;
        let topic = self.topic_ids.get(topic);
        let hw = topic.and_then(|&t| self.high.get(&(t, partition)));
        Some((off, hw.map(|&(h, _)| h.saturating_sub(off).max(0))))
    }

    /// How record age and delivery name consumer `who` ([`Consumer::label`]).
    pub fn label(&self, who: ConsumerId) -> Option<&str> {
        let c = self.consumers.get(usize::try_from(who).ok()?)?;
        Some(c.label())
    }

    /// The name of topic `id` ([`Lag::topic`]).
    pub fn topic_name(&self, id: TopicId) -> Option<&str> {
        self.topic_names
            .get(usize::try_from(id).ok()?)
            .map(|t| &**t)
    }

    /// The rows with their consumer, topic name and partition, in that order.
    fn sorted_rows(&self) -> Vec<(&Consumer, &str, i32, ConsumerId, &Row)> {
        // Consumers and topics are ranked once, and the rows sorted by the
        // ranks: each is one of a kind (interned), so the order is theirs
        // without comparing their strings at every step of the sort.
        let rank = |order: &[usize]| {
            let mut ranks = vec![0; order.len()];
            for (r, &i) in order.iter().enumerate() {
                if let Some(x) = ranks.get_mut(i) {
                    *x = r;
                }
            }
            ranks
        };
        let mut by_consumer: Vec<usize> = (0..self.consumers.len()).collect();
        by_consumer.sort_by(|&a, &b| self.consumers.get(a).cmp(&self.consumers.get(b)));
        let mut by_topic: Vec<usize> = (0..self.topic_names.len()).collect();
        by_topic.sort_by(|&a, &b| self.topic_names.get(a).cmp(&self.topic_names.get(b)));
        let (consumer_rank, topic_rank) = (rank(&by_consumer), rank(&by_topic));
        let mut rows: Vec<_> = self
            .rows
            .iter()
            .filter_map(|r| {
                let (c, t, p) = r.key;
                let (c_at, t_at) = (usize::try_from(c).ok()?, usize::try_from(t).ok()?);
                let who = self.consumers.get(c_at)?;
                let topic = self.topic_names.get(t_at)?;
                let key = (*consumer_rank.get(c_at)?, *topic_rank.get(t_at)?, p);
                Some((key, (who, &**topic, p, c, r)))
            })
            .collect();
        rows.sort_unstable_by_key(|r| r.0);
        rows.into_iter().map(|r| r.1).collect()
    }

    /// The report (of every answer: a copy counts those held, without
    /// [`Lag::settle`] first).
    pub fn report(&self) -> LagReport {
        if !self.held.is_empty() {
            return self.settled().report();
        }
        let rows = self.sorted_rows();
        let partitions = rows
            .iter()
            .map(|&(who, topic, partition, c, r)| {
                let group = self.groups.get(&c);
                let committed = group.and_then(|g| self.committed_lag(g, topic, partition));
                PartitionLag {
                    client: who.client.clone(),
                    host: who.host.clone(),
                    group: group.cloned(),
                    topic: topic.to_string(),
                    partition,
                    fetches: r.fetches,
                    records: r.records,
                    fetch_offset: r.asked,
                    next_offset: r.next,
                    high_watermark: r.high_watermark,
                    last_stable_offset: r.last_stable_offset,
                    log_start_offset: r.log_start_offset,
                    lag: r.lag,
                    max_lag: r.max_lag,
                    trend_per_s: r.trend(),
                    committed_offset: committed.map(|c| c.0),
                    committed_lag: committed.and_then(|c| c.1),
                    first_ts: r.first_ts.as_f64(),
                    last_ts: r.last_ts.as_f64(),
                    series: r.samples().map(|(t, l)| (t.as_f64(), l)).collect(),
                }
            })
            .collect();
        let mut groups: BTreeMap<&str, GroupLag> = BTreeMap::new();
        let new = |g: &str| GroupLag {
            group: g.to_string(),
            partitions: 0,
            committed_lag: 0,
            fetch_lag: 0,
        };
        for (g, t, p) in self.commits() {
            let e = groups.entry(g).or_insert_with(|| new(g));
            e.partitions += 1;
            if let Some((_, Some(l))) = self.committed_lag(g, t, p) {
                e.committed_lag += l;
            }
        }
        for &(_, _, _, c, r) in &rows {
            if let Some(g) = self.groups.get(&c) {
                groups.entry(g).or_insert_with(|| new(g)).fetch_lag += r.lag;
            }
        }
        LagReport {
            partitions,
            groups: groups.into_values().collect(),
            overflow: self.overflow,
        }
    }
}

impl Row {
    /// Adds a sample (before `fetches` counts it): it replaces the last one
    /// when within `step` of the one before it; when the series is full,
    /// every other sample is kept and `step` doubles.
    fn sample(&mut self, ts: Timestamp, lag: i64) {
        let close = self
            .settled
            .is_some_and(|t| ts.nanos_since(t) < self.step_ns);
        if self.fetches > 0 && !close {
            // The last sample stays: it joins the series.
            self.series.push((self.last_ts, self.lag));
            self.settled = Some(self.last_ts);
            if self.series.len() == SERIES {
                let mut i = 0;
                self.series.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.step_ns = self.step_ns.saturating_mul(2);
                self.settled = self.series.last().map(|&(t, _)| t);
            }
        }
        self.last_ts = ts;
        self.lag = lag;
    }

    /// The series, oldest first: the samples kept and the last.
    fn samples(&self) -> impl DoubleEndedIterator<Item = (Timestamp, i64)> + Clone + '_ {
        let last = (self.fetches > 0).then_some((self.last_ts, self.lag));
        self.series.iter().copied().chain(last)
    }

    /// Lag per second over the last [`TREND_SECONDS`] of the series.
    fn trend(&self) -> Option<f64> {
        let (t1, l1) = self.samples().next_back()?;
        let window = (TREND_SECONDS * 1e9) as u64;
        let (t0, l0) = self.samples().find(|&(t, _)| t1.nanos_since(t) <= window)?;
        let dt = t1.nanos_since(t0) as f64 / 1e9;
        (dt > 0.0).then(|| (l1 - l0) as f64 / dt)
    }
}

/// What the metrics exposition reads (`stats::openmetrics`).
impl Lag {
    /// The lag after the last response of every (consumer, topic,
    /// partition) row, with the consumer's group when known: what
    /// [`Lag::report`] gives as `lag`, without building the report.
    pub(crate) fn lags(
        &self,
    ) -> impl Iterator<Item = (&Consumer, Option<&str>, &str, i32, i64)> + '_ {
        let rows = self.sorted_rows().into_iter();
        rows.map(|(who, topic, partition, c, r)| {
            let group = self.groups.get(&c).map(String::as_str);
            (who, group, topic, partition, r.lag)
        })
    }

    /// The committed lag of every (group, topic, partition) whose high
    /// watermark the capture saw: (group, topic, partition, lag).
    pub(crate) fn committed_lags(&self) -> impl Iterator<Item = (&str, &str, i32, i64)> + '_ {
        self.commits().filter_map(|(g, t, p)| {
            let (_, lag) = self.committed_lag(g, t, p)?;
            Some((g, t, p, lag?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: f64) -> Timestamp {
        Timestamp::new(s.trunc() as i64, (s.fract() * 1e9).round() as u32)
    }

    /// Topic "t" is the first topic interned: id 0.
    fn ask(p: i32, offset: i64) -> FetchAsks {
        FetchAsks::new(vec![(0, p, offset)])
    }

    fn answer(p: i32, hw: i64, last: Option<i64>, records: u64) -> FetchAnswer {
        FetchAnswer {
            topic: 0,
            partition: p,
            error: 0,
            high_watermark: hw,
            last_stable_offset: hw,
            log_start_offset: 0,
            last_offset: last,
            records,
        }
    }

    /// Consumer `c`, a member of `group` when given.
    fn consumer(l: &mut Lag, c: &str, group: Option<&str>) -> ConsumerId {
        l.topic("t").unwrap();
        let who = l.consumer(c, [127, 0, 0, 1].into()).unwrap();
        if let Some(g) = group {
            l.member(who, g);
        }
        who
    }

    #[test]
    fn rows_are_reported_by_consumer_then_topic_then_partition() {
        // Interned in the reverse of their order: ids say nothing of it.
        let mut l = Lag::default();
        let hosts: [IpAddr; 2] = [[10, 0, 0, 2].into(), [10, 0, 0, 1].into()];
        let who = [("b", hosts[1]), ("a", hosts[0]), ("a", hosts[1])];
        let ids: Vec<ConsumerId> = who
            .iter()
            .map(|&(c, h)| l.consumer(c, h).unwrap())
            .collect();
        let topics: Vec<TopicId> = ["z", "y"].iter().map(|t| l.topic(t).unwrap()).collect();
        for &c in &ids {
            for &topic in &topics {
                for p in [2, 0] {
                    let mut a = answer(p, 100, None, 0);
                    a.topic = topic;
                    l.fetch(c, t(1.0), &FetchAsks::new(vec![(topic, p, 10)]), &[a]);
                }
            }
        }
        let order: Vec<(String, String, String, i32)> = (l.report().partitions.iter())
            .map(|r| {
                (
                    r.client.clone(),
                    r.host.clone(),
                    r.topic.clone(),
                    r.partition,
                )
            })
            .collect();
        let mut want = Vec::new();
        for (c, h) in [("a", "10.0.0.1"), ("a", "10.0.0.2"), ("b", "10.0.0.1")] {
            for topic in ["y", "z"] {
                for p in [0, 2] {
                    want.push((c.to_string(), h.to_string(), topic.to_string(), p));
                }
            }
        }
        assert_eq!(order, want);
    }

    #[test]
    fn lag_is_the_high_watermark_less_the_next_offset() {
        let mut l = Lag::default();
        let c = consumer(&mut l, "c", Some("g"));
        // Asked 10, got 10..=19 of 100: next 20, lag 80.
        l.fetch(c, t(1.0), &ask(0, 10), &[answer(0, 100, Some(19), 10)]);
        // Asked 20, got nothing (long-poll), the log grew to 130: lag 110.
        l.fetch(c, t(2.0), &ask(0, 20), &[answer(0, 130, None, 0)]);
        let r = l.report();
        let p = &r.partitions[0];
        assert_eq!(
            (p.fetch_offset, p.next_offset, p.high_watermark),
            (20, 20, 130)
        );
        assert_eq!((p.lag, p.max_lag, p.fetches, p.records), (110, 110, 2, 10));
        assert_eq!(p.series, vec![(1.0, 80), (2.0, 110)]);
        assert_eq!(p.trend_per_s, Some(30.0));
        assert_eq!((p.committed_offset, p.committed_lag), (None, None));
    }

    #[test]
    fn committed_lag_takes_the_partitions_latest_high_watermark() {
        let mut l = Lag::default();
        l.commit("g", "t", 0, 40, t(1.0));
        let (member, other) = (
            consumer(&mut l, "c", Some("g")),
            consumer(&mut l, "d", None),
        );
        l.fetch(member, t(2.0), &ask(0, 50), &[answer(0, 90, Some(59), 10)]);
        // Another consumer sees the log at 120 later.
        l.fetch(other, t(3.0), &ask(0, 0), &[answer(0, 120, None, 0)]);
        let r = l.report();
        let g = r.partitions.iter().find(|p| p.group.is_some()).unwrap();
        assert_eq!((g.committed_offset, g.committed_lag), (Some(40), Some(80)));
        assert_eq!(r.groups.len(), 1);
        assert_eq!(
            (
                r.groups[0].partitions,
                r.groups[0].committed_lag,
                r.groups[0].fetch_lag
            ),
            (1, 80, 30)
        );
    }

    #[test]
    fn errors_unknown_watermarks_and_unasked_partitions_give_no_sample() {
        let mut l = Lag::default();
        let mut bad = answer(0, 100, None, 0);
        bad.error = 6;
        let c = consumer(&mut l, "c", None);
        l.fetch(
            c,
            t(1.0),
            &ask(0, 0),
            &[bad, answer(1, -1, None, 0), answer(2, 5, None, 0)],
        );
        assert!(l.report().partitions.is_empty());
    }

    #[test]
    fn a_partition_answered_unasked_keeps_its_next_offset() {
        // An incremental fetch session asks for a partition once; later
        // responses answer it without the request naming it.
        let mut l = Lag::default();
        let c = consumer(&mut l, "c", None);
        l.fetch(c, t(1.0), &ask(0, 5), &[answer(0, 50, Some(14), 10)]);
        l.fetch(
            c,
            t(2.0),
            &FetchAsks::default(),
            &[answer(0, 60, Some(24), 10)],
        );
        let p = &l.report().partitions[0];
        assert_eq!((p.fetch_offset, p.next_offset, p.lag), (15, 25, 35));
        // Never asked, never seen: no row.
        l.fetch(c, t(3.0), &FetchAsks::default(), &[answer(1, 60, None, 0)]);
        assert_eq!(l.report().partitions.len(), 1);
    }

    #[test]
    fn asks_are_found_in_any_order_and_a_repeated_partition_keeps_its_first() {
        let a = FetchAsks::new(vec![
            (1, 3, 30),
            (0, 7, 70),
            (1, 0, 10),
            (0, 7, 71),
            (0, 2, 20),
        ]);
        let found: Vec<_> = [(0, 2), (0, 7), (1, 0), (1, 3), (0, 3), (2, 0)]
            .iter()
            .map(|&(t, p)| a.offset(t, p))
            .collect();
        assert_eq!(found, [Some(20), Some(70), Some(10), Some(30), None, None]);
    }

    #[test]
    fn a_fetch_of_many_partitions_is_matched_ask_by_answer() {
        // Asked in reverse order of the answers: each answer still finds its
        // own ask (a linear search each would be 10¹⁰ comparisons here).
        let n = 100_000;
        let mut l = Lag::default();
        let c = consumer(&mut l, "c", None);
        let asks = FetchAsks::new((0..n).rev().map(|p| (0, p, i64::from(p))).collect());
        let answers: Vec<_> = (0..n)
            .map(|p| answer(p, i64::from(p) + 7, None, 0))
            .collect();
        l.fetch(c, t(1.0), &asks, &answers);
        let r = l.report();
        assert_eq!((r.partitions.len(), r.overflow), (MAX_PARTITIONS, 90_000));
        assert!(r
            .partitions
            .iter()
            .all(|p| p.lag == 7 && p.fetch_offset == i64::from(p.partition)));
    }

    #[test]
    fn a_series_spans_the_capture_in_bounded_samples() {
        let mut l = Lag::default();
        let c = consumer(&mut l, "c", None);
        for i in 0..10_000u32 {
            let s = f64::from(i) * 0.5;
            l.fetch(c, t(s), &ask(0, 0), &[answer(0, i64::from(i), None, 0)]);
        }
        let p = &l.report().partitions[0];
        assert!(p.series.len() <= SERIES, "{}", p.series.len());
        assert!(p.series.len() >= SERIES / 2, "{}", p.series.len());
        assert!(p.series[0].0 < 60.0, "{:?}", p.series[0]);
        assert_eq!(*p.series.last().unwrap(), (4999.5, 9999));
        assert!(p.series.windows(2).all(|w| w[0].0 < w[1].0));
        // Lag grows 2 records a second.
        assert!(
            (p.trend_per_s.unwrap() - 2.0).abs() < 0.1,
            "{:?}",
            p.trend_per_s
        );
    }

    #[test]
    fn answers_held_are_counted_in_order_and_in_a_report_before_settling() {
        let mut l = Lag::default();
        let c = consumer(&mut l, "c", None);
        // Two responses of 40 partitions each, more answers than are held
        // at once: the second answers them unasked, so each takes its
        // row's next offset from the first, counted in the same turn or
        // the one before; the last ones are still held at the report.
        let parts = 0..40;
        let asks = FetchAsks::new(parts.clone().map(|p| (0, p, 10)).collect());
        let first: Vec<_> = parts
            .clone()
            .map(|p| answer(p, 100, Some(19), 10))
            .collect();
        let second: Vec<_> = parts.clone().map(|p| answer(p, 120, None, 0)).collect();
        l.fetch(c, t(1.0), &asks, &first);
        l.fetch(c, t(2.0), &FetchAsks::default(), &second);
        assert!(!l.held.is_empty());
        let before = l.report();
        let lags: Vec<i64> = l.settled().lags().map(|x| x.4).collect();
        assert_eq!(lags, vec![100; parts.len()]);
        l.settle();
        assert!(l.held.is_empty());
        assert_eq!(l.report(), before);
        assert_eq!(before.partitions.len(), parts.len());
        let rows = before.partitions.iter();
        let figures = rows.map(|r| (r.next_offset, r.lag, r.max_lag, r.fetches));
        assert!(
            figures.clone().all(|x| x == (20, 100, 100, 2)),
            "{:?}",
            figures.collect::<Vec<_>>()
        );
    }

    #[test]
    fn rows_stop_at_the_cap_and_are_counted() {
        let mut l = Lag::default();
        let c = consumer(&mut l, "c", None);
        let n = i32::try_from(MAX_PARTITIONS).unwrap() + 5;
        for p in 0..n {
            l.fetch(c, t(1.0), &ask(p, 0), &[answer(p, 1, None, 0)]);
        }
        let r = l.report();
        assert_eq!((r.partitions.len(), r.overflow), (MAX_PARTITIONS, 5));
    }

    #[test]
    fn a_memo_gives_the_ids_the_lag_interns() {
        let mut l = Lag::default();
        let (a, b) = (String::from("alpha"), String::from("beta"));
        let a_again = String::from("alpha");
        let mut memo = TopicMemo::default();
        let ids: Vec<_> = [
            a.as_str(),
            a.as_str(),
            b.as_str(),
            a_again.as_str(),
            "alpha",
        ]
        .into_iter()
        .map(|t| memo.topic(&mut l, &Cow::Borrowed(t)))
        .collect();
        let owned = memo.topic(&mut l, &Cow::Owned("beta".into()));
        assert_eq!(ids, [Some(0), Some(0), Some(1), Some(0), Some(0)]);
        assert_eq!(owned, Some(1));
        assert_eq!((l.topic("alpha"), l.topic("beta")), (Some(0), Some(1)));
        assert_eq!(
            (l.topic_name(0), l.topic_name(1)),
            (Some("alpha"), Some("beta"))
        );
    }

    #[test]
    fn commits_stop_at_the_cap_and_a_known_one_still_moves() {
        let mut l = Lag::default();
        let n = i32::try_from(MAX_PARTITIONS).unwrap();
        for p in 0..n + 5 {
            l.commit(if p % 2 == 0 { "g" } else { "h" }, "t", p, 1, t(1.0));
        }
        assert_eq!((l.committed_len, l.overflow), (MAX_PARTITIONS, 5));
        // Full, a partition already committed takes its new offset.
        l.commit("g", "t", 0, 9, t(2.0));
        assert_eq!(l.overflow, 5);
        assert_eq!(l.committed_lag("g", "t", 0), Some((9, None)));
        assert_eq!(l.committed_lag("g", "t", n + 2), None);
        let r = l.report();
        let parts: Vec<_> = r
            .groups
            .iter()
            .map(|g| (g.group.as_str(), g.partitions))
            .collect();
        assert_eq!(
            parts,
            [("g", MAX_PARTITIONS / 2), ("h", MAX_PARTITIONS / 2)]
        );
    }
}
