//! Figures over a capture: latency, throttle, errors, traffic shape, clients,
//! consumer groups and expert hints — what `kafkashark stats` prints.
//!
//! Place in the data path: frames → `Analyzer` → [`MessageRecord`]s and
//! [`Notice`]s → **[`Stats`]** → [`StatsReport`] (JSON) / [`StatsReport::to_text`].
//! `Stats` is sans-IO: a function of the records and notices fed to it, in
//! capture order; it can be asked for a report at any time (live mode asks
//! every second).
//!
//! Invariants:
//! - bounded: every table has a cap ([`StatsConfig`]); facts past a cap are
//!   counted in [`Overflow`], never stored; latency histograms are HdrHistogram
//!   (µs resolution, 3 significant digits) and the slow list keeps N entries;
//! - the per-API counts are those of the JSONL contract: a response's errors
//!   are its `error_codes`, its latency `latency_ns`, its throttle
//!   `throttle_time_ms`; the trees (when kept) only add where (topic,
//!   partition) and what (batches, records, group fields);
//! - a request waits in a bounded table (by message index) until its response
//!   or its [`Notice::Unanswered`]; that is how a response learns its client id
//!   and its request frame;
//! - the per-message path neither builds nor compares client keys in the
//!   steady state: they are interned (module `clients`) and each connection
//!   remembers its client's slot; error counts are keyed by code and labelled when reported; a
//!   latency histogram that others add up to (an API's: its versions'; a
//!   broker's and a client's: their connections', while a connection's
//!   latencies are all theirs) is completed at report time, so a response
//!   records into two histograms instead of five.
//!
//! Feed it records produced with [`Stats::analyzer_config`] (trees kept,
//! records decoded) to get topics, codecs, groups and error places; with
//! summaries only, the per-API, client, latency and throttle figures remain.

mod clients;
pub mod delivery;
pub(crate) mod facts;
mod groups;
mod hints;
mod hist;
mod index;
pub mod lag;
pub mod merge;
mod openmetrics;
pub mod points;
mod report;
pub mod text;
pub mod tls;
mod traffic;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::btree_map::Entry;
use std::collections::hash_map::Entry as HashEntry;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::SocketAddr;

use crate::analyzer::{AnalyzerConfig, MessageInfo, MessageRecord, Notice, Output};
use crate::flow::Rtt;
use crate::kafka::decode::Kind;
use crate::kafka::errors::error_name;
use crate::kafka::schema::{self, ApiKey, MessageKind, SchemaSet};
use crate::kafka::Decoded;
use crate::pipeline::{Event, Warning};
use crate::topics::TopicNames;
use crate::topics::TEACHERS;
use clients::{ClientSlot, ClientTable, Who};
use groups::GroupAcc;
use traffic::Parts;

pub use hist::{FetchSplit, HistData, LatencyHist, Timing, TimingData, SIGFIG};

/// The group APIs whose responses say what a member got: JoinGroup,
/// SyncGroup and ConsumerGroupHeartbeat (KIP-848).
const GROUP_ANSWERS: [ApiKey; 3] = [
    ApiKey::JOIN_GROUP,
    ApiKey::SYNC_GROUP,
    ApiKey::CONSUMER_GROUP_HEARTBEAT,
];
pub use report::*;

/// Limits and switches of a [`Stats`].
#[derive(Clone, Debug)]
pub struct StatsConfig {
    /// Length of the slow list (and of the most-throttled list).
    pub slow: usize,
    /// The slow list takes long-poll Fetches too (else it counts them apart).
    pub slow_long_polls: bool,
    /// Most entries per table: clients, topic partitions, groups, error places.
    pub max_keys: usize,
    /// Most latency histograms per dimension (api versions, clients, brokers,
    /// connections); each holds up to a few tens of KiB.
    pub max_histograms: usize,
    /// Most seconds in the throttle time series.
    pub max_series: usize,
    /// Most requests waiting for their response.
    pub max_pending: usize,
    /// Most items in small lists (addresses of a client, members, generations…).
    pub max_list: usize,
}

impl Default for StatsConfig {
    fn default() -> Self {
        StatsConfig {
            slow: 20,
            slow_long_polls: false,
            max_keys: 10_000,
            max_histograms: 1_000,
            max_series: 86_400,
            max_pending: 100_000,
            max_list: 256,
        }
    }
}

/// Who sent a request: the client id with the software its connection named
/// in ApiVersions v3+ (KIP-511).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientKey {
    /// The request header's client id.
    pub client_id: Option<String>,
    /// ClientSoftwareName.
    pub software_name: Option<String>,
    /// ClientSoftwareVersion.
    pub software_version: Option<String>,
}

impl ClientKey {
    /// `librdkafka 2.16.0`, when the software is known.
    pub fn software(&self) -> Option<String> {
        software(&self.software_name, &self.software_version)
    }
}

/// A client's software (`librdkafka 2.16.0`), when its name is known.
fn software(name: &Option<String>, version: &Option<String>) -> Option<String> {
    name.as_ref().map(|n| match version {
        Some(v) if !v.is_empty() => format!("{n} {v}"),
        _ => n.clone(),
    })
}

/// True when Kafka 4.0 removed this request version (KIP-896): only the 3.9
/// schema set still defines it.
pub fn removed_in_kafka_4(api_key: i16, version: i16) -> bool {
    schema::message(api_key, MessageKind::Request, version).map(|m| m.set)
        == Some(SchemaSet::Legacy)
}

/// The error's name, or `UNKNOWN(n)` for a code this build does not know.
fn error_label(code: i16) -> Cow<'static, str> {
    error_name(code).map_or_else(|| Cow::Owned(format!("UNKNOWN({code})")), Cow::Borrowed)
}

/// Counts by error code, as counts by [`error_label`] (what reports show).
fn by_label(counts: &BTreeMap<i16, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (&code, &n) in counts {
        *out.entry(error_label(code).into_owned()).or_default() += n;
    }
    out
}

/// A map that stops growing at `cap` entries and counts what it refused:
/// a B-tree, or a hash map (`M`) for keys looked up per message (the
/// connections), whose entries the report sorts first.
#[derive(Clone, Debug)]
struct Capped<K, V, M = BTreeMap<K, V>> {
    map: M,
    cap: usize,
    overflow: u64,
    kv: std::marker::PhantomData<fn() -> (K, V)>,
}

/// A [`Capped`] in a hash map (sorted when reported: [`Capped::sorted`]).
type Hashed<K, V> = Capped<K, V, HashMap<K, V>>;

/// The maps a [`Capped`] keeps its entries in.
trait CapMap<K, V>: Default {
    /// The entry for `k`, made by `f` while the map holds fewer than `cap`.
    fn slot(&mut self, k: K, cap: usize, f: impl FnOnce() -> V) -> Option<&mut V>;
}

impl<K: Ord, V> CapMap<K, V> for BTreeMap<K, V> {
    fn slot(&mut self, k: K, cap: usize, f: impl FnOnce() -> V) -> Option<&mut V> {
        let room = self.len() < cap;
        match self.entry(k) {
            Entry::Occupied(o) => Some(o.into_mut()),
            Entry::Vacant(v) => room.then(|| v.insert(f())),
        }
    }
}

impl<K: std::hash::Hash + Eq, V> CapMap<K, V> for HashMap<K, V> {
    fn slot(&mut self, k: K, cap: usize, f: impl FnOnce() -> V) -> Option<&mut V> {
        let room = self.len() < cap;
        match self.entry(k) {
            HashEntry::Occupied(o) => Some(o.into_mut()),
            HashEntry::Vacant(v) => room.then(|| v.insert(f())),
        }
    }
}

impl<K, V, M: CapMap<K, V>> Capped<K, V, M> {
    fn new(cap: usize) -> Self {
        Capped {
            map: M::default(),
            cap,
            overflow: 0,
            kv: std::marker::PhantomData,
        }
    }

    /// The entry for `k`, made by `f` if there is room; `None` (counted) if full.
    fn entry(&mut self, k: K, f: impl FnOnce() -> V) -> Option<&mut V> {
        let got = self.map.slot(k, self.cap, f);
        if got.is_none() {
            self.overflow += 1;
        }
        got
    }
}

impl<K: Ord + Copy, V> Capped<K, V, HashMap<K, V>> {
    /// The entries in key order.
    fn sorted(&self) -> Vec<(&K, &V)> {
        let mut v: Vec<(&K, &V)> = self.map.iter().collect();
        v.sort_unstable_by_key(|e| *e.0);
        v
    }
}

/// What [`Stats::response_tree`] reads beside the tree: the topic of a
/// record set that names none, the group request answered, who fetched.
type ResponseContext<'a> = (
    Option<&'a str>,
    Option<&'a facts::GroupRequest>,
    Option<lag::ConsumerId>,
);

/// An API's timing: its own (`a`) and its `versions'`.
fn api_timing(a: &ApiAcc, versions: &[(&(i16, i16), &Exchanges)]) -> Timing {
    let mut latency = a.latency.clone();
    for (_, x) in versions {
        latency.merge(&x.latency);
    }
    latency
}

/// The versions of `api` among `sorted` (every version, in key order).
pub(super) fn api_versions<'s, 'a, V>(
    sorted: &'s [(&'a (i16, i16), &'a V)],
    api: i16,
) -> &'s [(&'a (i16, i16), &'a V)] {
    let from = sorted.partition_point(|e| e.0 .0 < api);
    let to = sorted.partition_point(|e| e.0 .0 <= api);
    sorted.get(from..to).unwrap_or_default()
}

/// The requests waiting for their response, by message index: a hash map,
/// and the indexes in the order they came (increasing) so that the oldest
/// can go when the table is full. Answered requests leave stale entries in
/// `order`, dropped as they reach its front or when it outgrows the map.
#[derive(Debug, Default)]
struct PendingTable {
    map: HashMap<u64, Pending>,
    order: std::collections::VecDeque<u64>,
}

impl PendingTable {
    fn insert(&mut self, index: u64, p: Pending) {
        self.map.insert(index, p);
        self.order.push_back(index);
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order.retain(|i| map.contains_key(i));
        }
    }

    fn remove(&mut self, index: &u64) -> Option<Pending> {
        self.map.remove(index)
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    /// Drops the oldest request (the smallest index).
    fn pop_first(&mut self) {
        while let Some(i) = self.order.pop_front() {
            if self.map.remove(&i).is_some() {
                return;
            }
        }
    }
}

/// A few frames that show a fact: the first ones and the last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Evidence {
    first: Vec<u64>,
    last: u64,
    count: u64,
}

/// First frames an [`Evidence`] keeps.
const EVIDENCE: usize = 5;

impl Evidence {
    fn add(&mut self, frame: u64) {
        self.count += 1;
        // Several messages can end in one frame: name it once.
        if self.first.len() < EVIDENCE && !self.first.contains(&frame) {
            self.first.push(frame);
        }
        self.last = frame;
    }

    /// The first frames and the last one.
    fn frames(&self) -> Vec<u64> {
        let mut v = self.first.clone();
        if self.count > 0 && !v.contains(&self.last) {
            v.push(self.last);
        }
        v
    }
}

#[derive(Clone, Debug, Default)]
struct Throttle {
    count: u64,
    sum: i64,
    max: i64,
}

impl Throttle {
    fn add(&mut self, ms: i32) {
        self.count += 1;
        self.sum = self.sum.saturating_add(i64::from(ms));
        self.max = self.max.max(i64::from(ms));
    }

    fn ms(&self) -> ThrottleMs {
        ThrottleMs {
            max: self.max,
            sum: self.sum,
        }
    }
}

#[derive(Debug, Default)]
struct ApiAcc {
    requests: u64,
    responses: u64,
    unanswered: u64,
    orphans: u64,
    /// Timing of responses that no version entry took (the report adds
    /// the versions').
    latency: Timing,
    throttle: Throttle,
    /// Error code → count (labelled when reported).
    errors: BTreeMap<i16, u64>,
}

/// Requests, responses and latencies of an api version or a broker.
#[derive(Debug, Default)]
struct Exchanges {
    requests: u64,
    responses: u64,
    latency: Timing,
    /// Fetch and ShareFetch versions: how the exchanges ended.
    fetch: Option<Box<FetchSplit>>,
}

#[derive(Debug, Default)]
struct ClientAcc {
    /// Client endpoints (formatted and sorted when reported).
    addresses: HashSet<SocketAddr>,
    requests: u64,
    responses: u64,
    unanswered: u64,
    errors: u64,
    throttle: Throttle,
    /// (api, version) → (requests, first frame).
    apis: BTreeMap<(i16, i16), (u64, u64)>,
    acks: BTreeMap<i16, Evidence>,
    produce_bytes: u64,
    produce_plain_bytes: u64,
    produce_frames: Evidence,
    /// api → throttle, with evidence.
    throttle_by_api: BTreeMap<i16, Throttle>,
    throttle_frames: Evidence,
    /// Distinct epoch seconds with a throttled response (responses come in time order).
    throttle_seconds: u64,
    last_throttle_second: Option<i64>,
}

impl ClientAcc {
    /// Counts a request of the client's: its address, unless the connection's
    /// `remembered` client lists it already, and its API version; gives the
    /// facts refused by a full list.
    fn request(
        &mut self,
        i: &MessageInfo,
        api: (i16, i16),
        remembered: Option<&mut StreamClient>,
        max_list: usize,
    ) -> u64 {
        self.requests += 1;
        let mut refused = 0;
        let listed = remembered
            .as_ref()
            .is_some_and(|k| k.addr == Some(i.client));
        if !listed {
            if self.addresses.contains(&i.client) || self.addresses.len() < max_list {
                self.addresses.insert(i.client);
                if let Some(k) = remembered {
                    k.addr = Some(i.client);
                }
            } else {
                refused += 1;
            }
        }
        let room = self.apis.len() < max_list;
        match self.apis.get_mut(&api) {
            Some(n) => n.0 += 1,
            None if room => {
                self.apis.insert(api, (1, i.frame));
            }
            None => refused += 1,
        }
        refused
    }

    /// Counts a response of the client's.
    fn response(&mut self, i: &MessageInfo, api: i16, throttle: Option<i32>) {
        self.responses += 1;
        self.errors += i.error_codes.len() as u64;
        let Some(t) = throttle else { return };
        self.throttle.add(t);
        self.throttle_by_api.entry(api).or_default().add(t);
        self.throttle_frames.add(i.frame);
        if self.last_throttle_second != Some(i.ts.secs) {
            self.throttle_seconds += 1;
            self.last_throttle_second = Some(i.ts.secs);
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ErrorKey {
    name: Cow<'static, str>,
    code: i16,
    api_key: i16,
    topic: Option<String>,
    partition: Option<i32>,
}

/// How often a fact was seen, and the frames of its first and last sighting.
#[derive(Debug)]
struct ErrorAcc {
    count: u64,
    first: u64,
    last: u64,
}

impl<K: Ord> Capped<K, ErrorAcc> {
    /// Counts `k`, seen in `frame`.
    fn tally(&mut self, k: K, frame: u64) {
        let new = || ErrorAcc {
            count: 0,
            first: frame,
            last: frame,
        };
        if let Some(acc) = self.entry(k, new) {
            acc.count += 1;
            acc.last = frame;
        }
    }

    /// The entries as `f` reports them, the most frequent first, then the earliest.
    fn most_frequent<T>(&self, f: impl Fn(&K, &ErrorAcc) -> T) -> Vec<T> {
        let mut v: Vec<_> = self.map.iter().collect();
        v.sort_by_key(|(_, e)| (Reverse(e.count), e.first));
        v.into_iter().map(|(k, e)| f(k, e)).collect()
    }
}

/// What a request leaves for its response.
#[derive(Clone, Debug)]
struct Pending {
    frame: u64,
    client: Who,
    /// The one topic the request names: where a response's unplaced facts belong.
    topic: Option<std::sync::Arc<str>>,
    group: Option<Box<facts::GroupRequest>>,
    /// A Fetch request's consumer and the partitions it asked for.
    fetch: Option<Box<(lag::ConsumerId, lag::FetchAsks)>>,
}

#[derive(Clone, Debug, Default)]
struct StreamFacts {
    software: Option<(String, String)>,
    /// The consumer (`Lag::consumer`) of the connection's last client id
    /// that had one, and that client id.
    consumer: Option<(Option<String>, lag::ConsumerId)>,
    /// The connection's last client, so the next message finds it without
    /// building its key.
    client: Option<StreamClient>,
}

/// A client a connection remembers.
#[derive(Clone, Debug)]
struct StreamClient {
    /// The client id of its messages.
    client_id: Option<String>,
    /// The slot of the key (this client id with the connection's software).
    slot: u32,
    /// A client address the slot's counters already list.
    addr: Option<SocketAddr>,
}

#[derive(Debug)]
struct ConnAcc {
    client: SocketAddr,
    /// The broker of the connection's first message.
    broker: SocketAddr,
    client_id: Option<String>,
    requests: u64,
    responses: u64,
    latency: Timing,
    /// Every latency of `latency` is one of `broker`'s: its broker's
    /// histogram leaves them here and the report adds them (one histogram
    /// touched per response instead of two). Once false, stays false.
    for_broker: bool,
    /// Whose client histogram the latencies of `latency` belong to.
    for_client: ClientLink,
    /// Its round trip: its first message's, then each one reported.
    rtt: Option<Rtt>,
}

impl Hashed<u64, ConnAcc> {
    /// The client id of a connection's last request.
    fn client_id(&self, stream: u64) -> Option<&str> {
        self.map.get(&stream)?.client_id.as_deref()
    }
}

/// Whether a connection's latencies all belong to one client's histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientLink {
    /// No latency yet.
    Unbound,
    /// All to the client at this slot (its histogram leaves them here).
    Slot(u32),
    /// Not all to one client: each went to its client's histogram itself.
    Off,
}

impl ConnAcc {
    /// The connection of message `i`, with nothing counted.
    fn new(i: &MessageInfo) -> ConnAcc {
        ConnAcc {
            client: i.client,
            broker: i.broker,
            client_id: None,
            requests: 0,
            responses: 0,
            latency: Timing::default(),
            for_broker: true,
            for_client: ClientLink::Unbound,
            rtt: i.rtt,
        }
    }
}

/// The `n` greatest items by (rank, earlier frame, message index): a heap
/// whose minimum is the entry to evict, and the items by message index.
#[derive(Debug)]
struct Top<R, T> {
    heap: BinaryHeap<Reverse<(R, Reverse<u64>, u64)>>,
    items: HashMap<u64, T>,
}

impl<R: Ord, T: Clone> Top<R, T> {
    fn new() -> Self {
        Top {
            heap: BinaryHeap::new(),
            items: HashMap::default(),
        }
    }

    /// Keeps message `i`'s item (made by `item`) if `rank` puts it among the `n` greatest.
    fn offer(&mut self, n: usize, rank: R, i: &MessageInfo, item: impl FnOnce() -> T) {
        let key = (rank, Reverse(i.frame), i.index);
        if self.heap.len() >= n {
            match self.heap.peek() {
                Some(Reverse(min)) if *min < key => {}
                _ => return,
            }
            if let Some(Reverse(old)) = self.heap.pop() {
                self.items.remove(&old.2);
            }
        }
        self.heap.push(Reverse(key));
        self.items.insert(i.index, item());
    }

    /// The items, ordered by `by`.
    fn sorted(&self, by: impl FnMut(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
        let mut v: Vec<T> = self.items.values().cloned().collect();
        v.sort_by(by);
        v
    }
}

/// The statistics accumulator.
#[derive(Debug)]
pub struct Stats {
    cfg: StatsConfig,
    topics: TopicNames,
    pending: PendingTable,
    /// What each connection told, at most `max_keys` connections.
    streams: Hashed<u64, StreamFacts>,
    /// Late segments by stream ([`Warning::Reordered`]), at most `max_keys` streams.
    reordered: BTreeMap<u64, u64>,
    /// TLS connections, at most `max_keys`.
    tls: tls::TlsTable,
    summary: Summary,
    apis: Hashed<i16, ApiAcc>,
    versions: Hashed<(i16, i16), Exchanges>,
    /// Clients' counters (capped at `max_keys`) and latency histograms
    /// (capped at `max_histograms`).
    clients: ClientTable<ClientAcc>,
    brokers: Hashed<SocketAddr, Exchanges>,
    conns: Hashed<u64, ConnAcc>,
    slow: Top<u64, SlowExchange>,
    /// Long-poll Fetches kept out of the slow list.
    slow_long_polls_left_out: u64,
    throttle: Throttle,
    throttle_series: Capped<i64, Throttle>,
    throttle_latency: LatencyHist,
    throttled: Top<i32, ThrottledExchange>,
    errors: Capped<ErrorKey, ErrorAcc>,
    record_errors: Vec<RecordErrorReport>,
    /// Messages with a decode warning, by api key, version and warning.
    warnings: Capped<(i16, i16, &'static str), ErrorAcc>,
    parts: Parts,
    acks: BTreeMap<i16, Evidence>,
    groups: Capped<String, GroupAcc>,
    unanswered: Evidence,
    overflow: Overflow,
    lag: lag::Lag,
    delivery: delivery::Delivery,
    points: points::Points,
}

impl Stats {
    /// An empty accumulator.
    pub fn new(cfg: StatsConfig) -> Stats {
        Stats {
            topics: TopicNames::default(),
            pending: PendingTable::default(),
            streams: Capped::new(cfg.max_keys),
            reordered: BTreeMap::new(),
            tls: tls::TlsTable::default(),
            summary: Summary::default(),
            apis: Capped::new(cfg.max_histograms),
            versions: Capped::new(cfg.max_histograms),
            clients: ClientTable::new(cfg.max_keys, cfg.max_histograms),
            brokers: Capped::new(cfg.max_histograms),
            conns: Capped::new(cfg.max_histograms),
            slow: Top::new(),
            slow_long_polls_left_out: 0,
            throttle: Throttle::default(),
            throttle_series: Capped::new(cfg.max_series),
            throttle_latency: LatencyHist::new(),
            throttled: Top::new(),
            errors: Capped::new(cfg.max_keys),
            record_errors: Vec::new(),
            warnings: Capped::new(cfg.max_keys),
            parts: Parts::new(cfg.max_keys),
            acks: BTreeMap::new(),
            groups: Capped::new(cfg.max_keys),
            unanswered: Evidence::default(),
            overflow: Overflow::default(),
            lag: lag::Lag::default(),
            delivery: delivery::Delivery::default(),
            points: points::Points::new(cfg.max_keys),
            cfg,
        }
    }

    /// The analyzer settings that give `Stats` everything it reads: trees kept
    /// and record sets decoded, on top of `base`.
    ///
    /// Only the trees `Stats` reads from are built (see [`Stats::needs_tree`]);
    /// the other messages come as summaries with a bare tree. Record sets are
    /// decoded down to batch headers (compressed batches decompressed, for
    /// their sizes), never to records.
    pub fn analyzer_config(base: AnalyzerConfig) -> AnalyzerConfig {
        let mut cfg = base;
        cfg.keep_trees = true;
        cfg.info_topics = false;
        cfg.response_topics = false;
        cfg.tree_filter = Some(Stats::needs_tree);
        cfg.decode.records = true;
        cfg.decode.records_headers_only = true;
        cfg
    }

    /// Whether `Stats` reads anything from a message's tree beyond what its
    /// summary scan gives (header, topics, topic ids, error codes and, with
    /// `records_headers_only`, the placed facts of `Summary::facts`: errors
    /// with their topic and partition, record sets, offsets, acks, group
    /// ids): group requests and responses, ApiVersions v3+ requests (client software), responses that
    /// teach topic names (with topic ids to learn); and, when the scan could
    /// not place its facts, Produce requests, Produce and Fetch responses and
    /// responses with errors.
    pub fn needs_tree(
        kind: Kind,
        api: i16,
        version: i16,
        s: &crate::kafka::decode::Summary,
    ) -> bool {
        // Placed errors, record sets and acks come with the scan when it
        // could place them (`Summary::facts`).
        let placed = s.facts.is_some();
        let key = ApiKey(api);
        match kind {
            Kind::Request => {
                key.is_group()
                    || (key == ApiKey::API_VERSIONS && version >= 3)
                    || (key == ApiKey::PRODUCE && !placed)
            }
            Kind::Response => {
                // Topic names are learned from ids next to names: a teacher
                // without ids teaches nothing.
                let teacher = TEACHERS.contains(&key);
                let records = matches!(key, ApiKey::PRODUCE | ApiKey::FETCH | ApiKey::SHARE_FETCH);
                GROUP_ANSWERS.contains(&key)
                    || (teacher && !s.topic_ids.is_empty())
                    || (!placed && (!s.error_codes.is_empty() || records || teacher))
            }
        }
    }

    /// Feeds one analyzer output (a message or a notice).
    pub fn push(&mut self, o: &Output) {
        match o {
            Output::Message(m) => self.message(m),
            Output::Notice(n) => self.notice(n),
        }
    }

    /// Counts in their buckets the latencies every histogram holds back
    /// ([`LatencyHist::settle`]), so that a report reads the histograms as
    /// they are instead of settling copies of them. The report is the same
    /// either way.
    pub fn settle(&mut self) {
        let apis = self.apis.map.values_mut().map(|a| &mut a.latency);
        let versions = self.versions.map.values_mut().map(|v| &mut v.latency);
        let brokers = self.brokers.map.values_mut().map(|b| &mut b.latency);
        let conns = self.conns.map.values_mut().map(|c| &mut c.latency);
        for h in apis.chain(versions).chain(brokers).chain(conns) {
            h.settle();
        }
        self.clients.settle();
        self.throttle_latency.settle();
        self.delivery.settle();
        self.lag.settle();
    }

    /// Feeds one message, in capture order.
    pub fn message(&mut self, m: &MessageRecord) {
        self.message_info(&m.info, m.decoded.as_ref());
    }

    /// Feeds one message given as its facts and (optionally) its tree.
    pub fn message_info(&mut self, i: &MessageInfo, d: Option<&Decoded>) {
        self.summary.messages += 1;
        if i.also.is_some() {
            self.points.message(i);
        }
        let ts = i.ts.as_f64();
        if self.summary.first_ts.is_none() {
            self.summary.first_ts = Some(ts);
        }
        self.summary.last_ts = Some(ts);
        if let Some(w) = &i.decode_warning {
            let key = (
                i.api_key.map_or(-1, |k| k.0),
                i.api_version.unwrap_or(-1),
                w.what(),
            );
            self.warnings.tally(key, i.frame);
        }
        match i.kind {
            Kind::Request => {
                self.summary.requests += 1;
                self.request(i, d);
            }
            Kind::Response => {
                self.summary.responses += 1;
                self.response(i, d);
            }
        }
    }

    /// Feeds one notice: unanswered requests and closed connections matter.
    pub fn notice(&mut self, n: &Notice) {
        match n {
            Notice::Unanswered { request, .. } => {
                self.summary.unanswered += 1;
                self.unanswered.add(request.frame);
                if let Some(a) = self.apis.entry(request.api_key.0, ApiAcc::default) {
                    a.unanswered += 1;
                }
                if let Some(p) = self.pending.remove(&request.index) {
                    if let Some(c) = self.clients.get_acc(&p.client) {
                        c.unanswered += 1;
                    }
                }
            }
            Notice::Stream(Event::StreamClosed { stream, .. }) => {
                self.streams.map.remove(stream);
            }
            Notice::Tls {
                stream,
                client,
                broker,
                frame,
                what,
                ..
            } => {
                let conn = (*stream, *client, *broker);
                self.tls.add(conn, *frame, what, self.cfg.max_keys);
            }
            Notice::Stream(Event::Rtt { stream, rtt, .. }) => {
                if let Some(c) = self.conns.map.get_mut(stream) {
                    c.rtt = Some(*rtt);
                }
            }
            Notice::Stream(Event::Warning {
                what: Warning::Reordered { stream, segments },
                ..
            }) => {
                self.summary.late_segments += segments;
                if self.reordered.len() < self.cfg.max_keys {
                    *self.reordered.entry(*stream).or_default() += segments;
                }
            }
            Notice::Stream(_) => {}
        }
    }

    fn request(&mut self, i: &MessageInfo, d: Option<&Decoded>) {
        let (Some(ApiKey(api)), Some(version)) = (i.api_key, i.api_version) else {
            self.summary.without_api += 1;
            return;
        };
        let root = d.map(|d| &d.root);
        let mut st = self.streams.entry(i.stream, StreamFacts::default);
        // The connection's software, learned from its ApiVersions v3+ request.
        if ApiKey(api) == ApiKey::API_VERSIONS && version >= 3 {
            if let (Some(sw), Some(st)) = (root.and_then(facts::client_software), st.as_deref_mut())
            {
                st.software = Some(sw);
                st.client = None;
            }
        }
        let mut client = who(st.as_deref_mut(), &self.clients, i.client_id.as_deref());
        if let Some(a) = self.apis.entry(api, ApiAcc::default) {
            a.requests += 1;
        }
        if let Some(v) = self.versions.entry((api, version), Exchanges::default) {
            v.requests += 1;
        }
        if let Some(b) = self.brokers.entry(i.broker, Exchanges::default) {
            b.requests += 1;
        }
        if let Some(c) = self.conns.entry(i.stream, || ConnAcc::new(i)) {
            c.requests += 1;
            c.client_id.clone_from(&i.client_id);
        }
        let acc = self.clients.acc(&mut client);
        remember(st.as_deref_mut(), i.client_id.as_deref(), &client);
        // The connection's remembered client is this one (when it has counters).
        let remembered = st.and_then(|f| f.client.as_mut());
        if let Some(c) = acc {
            self.overflow.lists += c.request(i, (api, version), remembered, self.cfg.max_list);
        }

        let (mut group, mut fetch) = (None, None);
        if let (Some(root), Some(d)) = (root, d) {
            match ApiKey(api) {
                ApiKey::FETCH => {
                    // Sized once: a partition's placed integers, `FetchOffset` among them.
                    let ints = d.facts.as_ref().map_or(0, |x| x.ints.len());
                    let mut asks = Vec::with_capacity(ints);
                    let (lag, mut memo) = (&mut self.lag, lag::TopicMemo::default());
                    facts::each_int(d, &self.topics, |n| {
                        if let ("FetchOffset", Some(t), Some(p)) = (n.name, n.topic, n.partition) {
                            if let Some(t) = memo.topic(lag, &t) {
                                asks.push((t, p, n.value));
                            }
                        }
                    });
                    let asks = lag::FetchAsks::new(asks);
                    fetch = consumer(lag, &mut self.streams, i).map(|c| Box::new((c, asks)));
                }
                ApiKey::OFFSET_COMMIT => {
                    let group = match &d.facts {
                        Some(x) => x.group_id.as_deref(),
                        None => facts::body(root).and_then(|b| facts::str_child(b, "GroupId")),
                    };
                    if let Some(g) = group {
                        if let Some(c) = consumer(&mut self.lag, &mut self.streams, i) {
                            self.lag.member(c, g);
                        }
                        let lag = &mut self.lag;
                        facts::each_int(d, &self.topics, |n| {
                            if let ("CommittedOffset", Some(t), Some(p)) =
                                (n.name, n.topic, n.partition)
                            {
                                lag.commit(g, &t, p, n.value, i.ts);
                            }
                        });
                    }
                }
                ApiKey::PRODUCE => {
                    let acks = match &d.facts {
                        Some(x) => x.acks.and_then(|v| i16::try_from(v).ok()),
                        None => facts::acks(root),
                    };
                    self.produce(i, Some(d), &client, acks);
                }
                key if key.is_group() => {
                    group = facts::group_request(root).map(Box::new);
                    if let Some(g) = &group {
                        if let Some(c) = consumer(&mut self.lag, &mut self.streams, i) {
                            self.lag.member(c, &g.group);
                        }
                        let max = self.cfg.max_list;
                        if let Some(acc) = self.groups.entry(g.group.clone(), || GroupAcc::new(max))
                        {
                            self.overflow.groups += acc.request(api, g, i);
                        }
                    }
                }
                _ => {}
            }
        }
        if i.expects_response && i.correlation_id.is_some() {
            self.pending.insert(
                i.index,
                Pending {
                    frame: i.frame,
                    client,
                    topic: d.and_then(|d| facts::single_topic(d, &self.topics)),
                    group,
                    fetch,
                },
            );
            if self.pending.len() > self.cfg.max_pending {
                self.pending.pop_first();
                self.overflow.pending += 1;
            }
        }
    }

    fn produce(&mut self, i: &MessageInfo, d: Option<&Decoded>, client: &Who, acks: Option<i16>) {
        if let Some(a) = acks {
            self.acks.entry(a).or_default().add(i.frame);
        }
        // The sets go to their partitions as they come (no vector of them);
        // the client's sums are added after (other counters: the same sums).
        let (mut any, mut bytes, mut plain) = (false, 0, 0);
        if let Some(d) = d {
            // A producer is named as a consumer is: its client id on its host.
            let producer = consumer(&mut self.lag, &mut self.streams, i);
            let (parts, delivery, lag) = (&mut self.parts, &mut self.delivery, &mut self.lag);
            let mut memo = lag::TopicMemo::default();
            facts::each_set(d, &self.topics, |s| {
                // The topic interned once, for delivery and the partition's counters.
                let id = s.topic.as_ref().and_then(|t| memo.topic(lag, t));
                if let (Some(w), Some(t), Some(p)) = (producer, id, s.partition) {
                    delivery.produced(w, i.ts, !any, (t, p), &s.counts.heads);
                }
                any = true;
                bytes += s.bytes;
                plain += s.counts.plain_bytes;
                let Some(p) = parts.entry(s.topic.as_deref(), id, s.partition) else {
                    return;
                };
                p.produce_frames.add(i.frame);
                if let Some(a) = acks {
                    *p.acks.entry(a).or_default() += 1;
                }
                p.add(&s, true);
            });
        }
        if let Some(c) = self.clients.get_acc(client) {
            if let Some(a) = acks {
                c.acks.entry(a).or_default().add(i.frame);
            }
            c.produce_bytes += bytes;
            c.produce_plain_bytes += plain;
            if any {
                c.produce_frames.add(i.frame);
            }
        }
    }

    /// Counts a response: its API, latency, client, throttle, errors and what its tree shows.
    fn response(&mut self, i: &MessageInfo, d: Option<&Decoded>) {
        let Some(ApiKey(api)) = i.api_key else {
            self.summary.without_api += 1;
            return;
        };
        if let Some(d) = d {
            self.topics.learn(i.api_key, &d.root);
        }
        let peer = i.peer.filter(|_| i.paired);
        let pending = peer.and_then(|p| self.pending.remove(&p));
        let (mut client, request_frame, topic, group, fetch) = match pending {
            Some(p) => (p.client, Some(p.frame), p.topic, p.group, p.fetch),
            None => (self.conn_client(i.stream), None, None, None, None),
        };
        // A connection's key made here for the first time is remembered once interned.
        let learn = request_frame.is_none() && matches!(client, Who::Key(_));
        let throttle = i.throttle_time_ms.filter(|&t| t > 0);
        self.count_response_api(i, api, throttle);
        self.record_latency(i, &mut client);
        if let Some(c) = self.clients.acc(&mut client) {
            c.response(i, api, throttle);
        }
        if learn {
            remember(
                self.streams.map.get_mut(&i.stream),
                self.conns.client_id(i.stream),
                &client,
            );
        }
        self.rank(i, api, throttle, request_frame, &client);
        if let Some(t) = throttle {
            self.throttle.add(t);
            if let Some(s) = self.throttle_series.entry(i.ts.secs, Throttle::default) {
                s.add(t);
            }
            if let Some(ns) = i.latency_ns {
                self.throttle_latency.record(ns);
            }
        }
        // A response that does not say its topic (a zero TopicId) answers the
        // request's topic when the request named only one.
        let fallback = topic.as_deref();
        // The partitions a Fetch answers, for its consumer's lag: their
        // errors and record sets are placed as they are counted.
        let mut answers = match (ApiKey(api), &fetch, d) {
            (ApiKey::FETCH, Some(_), Some(d)) => Some(facts::FetchAnswers::new(
                d,
                &self.topics,
                fallback,
                &mut self.lag,
            )),
            _ => None,
        };
        self.count_errors(i, api, d, fallback, answers.as_mut());
        if let Some(d) = d {
            let consumer = fetch.as_ref().map(|f| f.0);
            let tree = (fallback, group.as_deref(), consumer);
            self.response_tree(i, api, d, tree, answers.as_mut());
        }
        if let (Some(f), Some(a)) = (fetch, answers) {
            self.lag.fetch(f.0, i.ts, &f.1, a.list());
        }
    }

    /// The client of a connection's last request (a response without its request).
    fn conn_client(&mut self, stream: u64) -> Who {
        who(
            self.streams.map.get_mut(&stream),
            &self.clients,
            self.conns.client_id(stream),
        )
    }

    /// Counts a response for its API and version. The version's histogram
    /// holds the latency when it has an entry; the API's own histogram the
    /// rest (the report adds them up).
    fn count_response_api(&mut self, i: &MessageInfo, api: i16, throttle: Option<i32>) {
        let mut latency_left = i.latency_ns.is_some();
        if let Some(version) = i.api_version {
            if let Some(v) = self.versions.entry((api, version), Exchanges::default) {
                v.responses += 1;
                if std::mem::take(&mut latency_left) {
                    v.latency.record(i);
                }
                if i.fetch.is_some() {
                    v.fetch.get_or_insert_with(Box::default).record(i);
                }
            }
        }
        if let Some(a) = self.apis.entry(api, ApiAcc::default) {
            a.responses += 1;
            if !i.paired {
                a.orphans += 1;
            }
            if latency_left {
                a.latency.record(i);
            }
            if let Some(t) = throttle {
                a.throttle.add(t);
            }
            for &c in &i.error_codes {
                *a.errors.entry(c).or_default() += 1;
            }
        }
    }

    /// Records a response's latency for its broker, connection and client.
    /// The connection's histogram stands for the other two while all its
    /// latencies are theirs (`ConnAcc::for_broker`, `ConnAcc::for_client`),
    /// so only it is touched.
    fn record_latency(&mut self, i: &MessageInfo, client: &mut Who) {
        let mut to_broker = match self.brokers.entry(i.broker, Exchanges::default) {
            Some(b) => {
                b.responses += 1;
                true
            }
            None => false,
        };
        let mut to_client = i.latency_ns.is_some() && self.clients.latency(client).is_some();
        if let Some(c) = self.conns.entry(i.stream, || ConnAcc::new(i)) {
            c.responses += 1;
            if i.latency_ns.is_some() {
                if c.for_broker && c.broker == i.broker {
                    to_broker = false;
                } else if c.for_broker {
                    // Another broker: what the connection held becomes its broker's own.
                    c.for_broker = false;
                    if let Some(b) = self.brokers.map.get_mut(&c.broker) {
                        b.latency.merge(&c.latency);
                    }
                }
                let slot = match client {
                    Who::Slot(s) if to_client => Some(*s),
                    _ => None,
                };
                match (c.for_client, slot) {
                    (ClientLink::Unbound, Some(s)) => {
                        c.for_client = ClientLink::Slot(s);
                        to_client = false;
                    }
                    (ClientLink::Slot(s0), Some(s)) if s0 == s => to_client = false,
                    (ClientLink::Slot(s0), _) => {
                        // Another client (or none): what the connection held becomes its client's own.
                        c.for_client = ClientLink::Off;
                        if let Some(h) = self.clients.latency_at(s0) {
                            h.merge(&c.latency);
                        }
                    }
                    (ClientLink::Unbound, None) => c.for_client = ClientLink::Off,
                    (ClientLink::Off, _) => {}
                }
                c.latency.record(i);
            }
        }
        if i.latency_ns.is_none() {
            return;
        }
        if to_broker {
            if let Some(b) = self.brokers.map.get_mut(&i.broker) {
                b.latency.record(i);
            }
        }
        if to_client {
            if let Some(h) = self.clients.latency(client) {
                h.record(i);
            }
        }
    }

    /// Counts a response's errors by code, API and place: placed by its
    /// facts or tree, else (without either) from the JSONL `error_codes`;
    /// `fallback` is the topic of a nested error that names none (and of
    /// any error placed in a Fetch's `answers`).
    fn count_errors(
        &mut self,
        i: &MessageInfo,
        api: i16,
        d: Option<&Decoded>,
        fallback: Option<&str>,
        mut answers: Option<&mut facts::FetchAnswers>,
    ) {
        let placed = match d.and_then(|d| d.facts.as_ref()) {
            Some(x) => Some(facts::scanned_errors(x, &self.topics)),
            None => d.map(|d| facts::errors(&d.root, &self.topics)),
        };
        let unplaced = || {
            let at = |&code| facts::ErrorAt {
                code,
                place: facts::Place::default(),
                nested: false,
            };
            i.error_codes.iter().map(at).collect()
        };
        for e in placed.unwrap_or_else(unplaced) {
            if let (Some(a), Some(p)) = (answers.as_deref_mut(), e.place.partition) {
                let t = e.place.topic.as_deref().or(fallback);
                if let Some(t) = t.and_then(|t| self.lag.topic(t)) {
                    a.error(t, p, e.code);
                }
            }
            let topic = match e.place.topic {
                None if e.nested => fallback.map(str::to_string),
                topic => topic,
            };
            let key = ErrorKey {
                name: error_label(e.code),
                code: e.code,
                api_key: api,
                topic,
                partition: e.place.partition,
            };
            self.errors.tally(key, i.frame);
        }
    }

    /// What a response's tree adds: a Produce response's record errors,
    /// a Fetch response's record sets (placed in its `answers` too), a
    /// group request's answer. `fallback`: the topic of a record set that
    /// names none; `group`: the group request answered; `consumer`: who
    /// fetched.
    fn response_tree(
        &mut self,
        i: &MessageInfo,
        api: i16,
        d: &Decoded,
        (fallback, group, consumer): ResponseContext<'_>,
        mut answers: Option<&mut facts::FetchAnswers>,
    ) {
        if ApiKey(api) == ApiKey::PRODUCE {
            for r in facts::record_errors(&d.root, &self.topics) {
                if self.record_errors.len() >= self.cfg.max_keys {
                    self.overflow.lists += 1;
                    break;
                }
                self.record_errors.push(RecordErrorReport {
                    topic: r.place.topic,
                    partition: r.place.partition,
                    batch_index: r.batch_index,
                    message: r.message,
                    frame: i.frame,
                });
            }
        }
        if matches!(ApiKey(api), ApiKey::FETCH | ApiKey::SHARE_FETCH) {
            let (parts, delivery, lag) = (&mut self.parts, &mut self.delivery, &mut self.lag);
            let mut memo = lag::TopicMemo::default();
            facts::each_set(d, &self.topics, |s| {
                let topic = s.topic.as_deref().or(fallback);
                // The topic interned once, for delivery, lag and the partition's counters.
                let id = match &s.topic {
                    Some(t) => memo.topic(lag, t),
                    None => fallback.and_then(|t| lag.topic(t)),
                };
                if let (Some(t), Some(p)) = (id, s.partition) {
                    if !s.counts.heads.is_empty() {
                        delivery.fetched(consumer, i.first_ts, (t, p), &s.counts.heads);
                    }
                    if let Some(a) = answers.as_deref_mut() {
                        a.set(t, p, &s.counts);
                    }
                }
                if let Some(p) = parts.entry(topic, id, s.partition) {
                    p.add(&s, false);
                }
            });
        }
        let Some(g) = group else { return };
        let Some(acc) = self.groups.map.get_mut(&g.group) else {
            return;
        };
        if GROUP_ANSWERS.contains(&ApiKey(api)) {
            if let Some(r) = facts::group_response(&d.root, &self.topics) {
                self.overflow.groups += acc.response(api, g, &r, i);
            }
        }
        for &c in &i.error_codes {
            *acc.errors.entry(c).or_default() += 1;
        }
    }

    /// Offers an exchange to the slow list (when it has a latency; ranked by
    /// service time, long-polls only with `slow_long_polls`) and to
    /// the most-throttled list (when `throttle`d).
    fn rank(
        &mut self,
        i: &MessageInfo,
        api: i16,
        throttle: Option<i32>,
        request_frame: Option<u64>,
        client: &Who,
    ) {
        let (clients, n) = (&self.clients, self.cfg.slow);
        let client_id = || clients.key(client).and_then(|k| k.client_id.clone());
        let long_poll = i.long_poll();
        self.slow_long_polls_left_out += u64::from(long_poll && !self.cfg.slow_long_polls);
        let ranked = !long_poll || self.cfg.slow_long_polls;
        if let (Some(ns), Some(service), true) = (i.latency_ns, i.service_ns(), ranked) {
            self.slow.offer(n, service, i, || SlowExchange {
                service_ms: service as f64 / 1e6,
                latency_ms: ns as f64 / 1e6,
                hol_wait_ms: i.hol_wait_ns.unwrap_or(0) as f64 / 1e6,
                long_poll,
                request_frame,
                response_first_frame: i.first_frame,
                response_frame: i.frame,
                api_key: api,
                api_name: schema::api_name(api),
                api_version: i.api_version,
                client_id: client_id(),
                software: clients.key(client).and_then(ClientKey::software),
                client: i.client.to_string(),
                broker: i.broker.to_string(),
                stream: i.stream,
                throttle_time_ms: i.throttle_time_ms,
            });
        }
        if let Some(t) = throttle {
            self.throttled.offer(n, t, i, || ThrottledExchange {
                throttle_ms: t,
                latency_ms: i.latency_ms(),
                request_frame,
                response_frame: i.frame,
                api_key: api,
                api_name: schema::api_name(api),
                client_id: client_id(),
            });
        }
    }

    /// The report of everything fed so far.
    pub fn report(&self) -> StatsReport {
        let side = self.report_side();
        self.report_rest().with_side(side)
    }

    /// The brokers', the connections', the delivery and the lag part of
    /// [`Stats::report`] (about half of its work: histogram merges and
    /// percentiles, and the lag rows), made apart so that a front end may
    /// make it on another thread beside [`Stats::report_rest`] and join
    /// them with [`StatsReport::with_side`].
    pub fn report_side(&self) -> ReportSide {
        ReportSide {
            lag: self.lag_report(),
            ..self.report_side_but_lag()
        }
    }

    /// The `lag` section of [`Stats::report`] (a row per consumer and
    /// partition, with its series), which [`Stats::report_side_but_lag`]
    /// leaves out: a front end may make it (and its text) on a thread of
    /// its own.
    pub fn lag_report(&self) -> lag::LagReport {
        self.lag.report()
    }

    /// [`Stats::report_side`] with its lag section left empty
    /// ([`Stats::lag_report`] makes it).
    pub fn report_side_but_lag(&self) -> ReportSide {
        let conns = self.conns.sorted();
        let mut broker_held = self.broker_held();
        // The connections' round trips, by broker.
        let mut broker_rtts: HashMap<SocketAddr, Vec<u64>> = HashMap::default();
        for (_, c) in &conns {
            if let Some(r) = c.rtt {
                broker_rtts.entry(c.broker).or_default().push(r.ns);
            }
        }
        let mut broker_timings = BTreeMap::new();
        let brokers = self
            .brokers
            .sorted()
            .into_iter()
            .map(|(b, x)| {
                let timing = with_held(&x.latency, broker_held.remove(b));
                broker_timings.insert(b.to_string(), timing.data());
                let (latency_ms, parts) = timing.summaries();
                BrokerReport {
                    broker: b.to_string(),
                    requests: x.requests,
                    responses: x.responses,
                    latency_ms,
                    parts,
                    rtt_ms: median_ms(broker_rtts.remove(b)),
                }
            })
            .collect();
        let connections = conns
            .into_iter()
            .map(|(&s, c)| {
                let (latency_ms, parts) = c.latency.summaries();
                ConnectionReport {
                    stream: s,
                    client: c.client.to_string(),
                    broker: c.broker.to_string(),
                    community_id: crate::flow::community_id::tcp(c.client, c.broker),
                    client_id: c.client_id.clone(),
                    requests: c.requests,
                    responses: c.responses,
                    latency_ms,
                    parts,
                    rtt_ms: c.rtt.map(Rtt::ms),
                    rtt_from: c.rtt.map(|r| r.from.name()),
                }
            })
            .collect();
        ReportSide {
            brokers,
            connections,
            broker_timings,
            delivery: self.delivery.report(&self.lag),
            lag: lag::LagReport::default(),
        }
    }

    /// The names of the captures read together and their clocks
    /// ([`crate::capture::FileSource::clocks`]), for the capture points section.
    pub fn set_capture_points(&mut self, names: &[String], clocks: &[crate::capture::ClockOffset]) {
        self.points.set_clocks(names, clocks);
    }

    /// [`Stats::report`] but its brokers, connections, delivery and lag
    /// (left empty).
    pub fn report_rest(&self) -> StatsReport {
        let mut summary = self.summary.clone();
        summary.in_flight = self.pending.len() as u64;
        let clients = self.clients.sorted();
        let acks = self.acks.iter().map(|(&a, e)| AcksReport {
            acks: a,
            requests: e.count,
            frames: e.frames(),
        });
        let (apis, api_timings) = self.api_reports();
        let mut report = StatsReport {
            summary,
            apis,
            clients: self.client_reports(&clients),
            brokers: Vec::new(),
            connections: Vec::new(),
            groups: self.groups.map.iter().map(|(id, g)| g.report(id)).collect(),
            topics: self.parts.report(),
            acks: acks.collect(),
            hints: hints::hints(self),
            slow_long_polls_left_out: self.slow_long_polls_left_out,
            slow: self.slow.sorted(|a, b| {
                let slower = b.service_ms.total_cmp(&a.service_ms);
                slower.then(a.response_frame.cmp(&b.response_frame))
            }),
            throttle: self.throttle_report(&clients),
            errors: self.error_reports(),
            record_errors: self.record_errors.clone(),
            warnings: self.warning_reports(),
            overflow: self.overflow_report(),
            lag: Default::default(),
            delivery: Default::default(),
            reordered: self
                .reordered
                .iter()
                .map(|(&stream, &late_segments)| ReorderedReport {
                    stream,
                    late_segments,
                })
                .collect(),
            tls: self.tls.report(),
            capture_points: self.points.report(),
            merge: merge::Mergeable::default(),
        };
        report.merge = merge::Mergeable::of(&report, &api_timings);
        report
    }

    /// Every API with its versions (an API's latencies are its versions'
    /// and its own), and each API's timing in mergeable form.
    fn api_reports(&self) -> (Vec<ApiReport>, BTreeMap<i16, TimingData>) {
        let mut timings = BTreeMap::new();
        let all_versions = self.versions.sorted();
        let each = self.apis.sorted().into_iter().map(|(&k, a)| {
            let versions = api_versions(&all_versions, k);
            let latency = api_timing(a, versions);
            timings.insert(k, latency.data());
            let mut fetch: Option<FetchSplit> = None;
            for (_, x) in versions.iter() {
                if let Some(f) = &x.fetch {
                    fetch.get_or_insert_with(FetchSplit::default).merge(f);
                }
            }
            let (latency_ms, parts) = latency.summaries();
            ApiReport {
                api_key: k,
                api_name: schema::api_name(k),
                requests: a.requests,
                responses: a.responses,
                unpaired: a.unanswered + a.orphans,
                unanswered: a.unanswered,
                responses_without_request: a.orphans,
                latency_ms,
                parts,
                fetch: fetch.map(|f| f.summary()),
                throttled: a.throttle.count,
                throttle_time_ms: a.throttle.ms(),
                errors: by_label(&a.errors),
                versions: versions
                    .iter()
                    .map(|(&(_, v), x)| {
                        let (latency_ms, parts) = x.latency.summaries();
                        VersionReport {
                            version: v,
                            requests: x.requests,
                            responses: x.responses,
                            latency_ms,
                            parts,
                            fetch: x.fetch.as_ref().map(|f| f.summary()),
                            removed_in_kafka_4: removed_in_kafka_4(k, v),
                        }
                    })
                    .collect(),
            }
        });
        let reports = each.collect();
        (reports, timings)
    }

    /// The latencies the connections hold for their broker, by broker.
    fn broker_held(&self) -> HashMap<SocketAddr, Timing> {
        let mut held: HashMap<SocketAddr, Timing> = HashMap::default();
        for c in self.conns.map.values() {
            if c.for_broker && self.brokers.map.contains_key(&c.broker) {
                held.entry(c.broker).or_default().merge(&c.latency);
            }
        }
        held
    }

    /// The latencies the connections hold for their client, by client slot.
    fn client_held(&self) -> HashMap<u32, Timing> {
        let mut held: HashMap<u32, Timing> = HashMap::default();
        for c in self.conns.map.values() {
            if let ClientLink::Slot(s) = c.for_client {
                held.entry(s).or_default().merge(&c.latency);
            }
        }
        held
    }

    /// Every client with counters (`sorted`), its latencies with those its connections hold.
    fn client_reports(&self, sorted: &[(u32, &ClientSlot<ClientAcc>)]) -> Vec<ClientReport> {
        let mut held = self.client_held();
        // The connections' round trips, by client address.
        let mut rtts: HashMap<SocketAddr, u64> = HashMap::default();
        for (_, c) in self.conns.sorted() {
            if let Some(r) = c.rtt {
                rtts.insert(c.client, r.ns);
            }
        }
        let apis = |c: &ClientAcc| {
            let each = c.apis.iter().map(|(&(a, v), &(n, first))| ClientApi {
                api_key: a,
                api_name: schema::api_name(a),
                version: v,
                requests: n,
                first_frame: first,
                removed_in_kafka_4: removed_in_kafka_4(a, v),
            });
            each.collect()
        };
        let each = sorted.iter().filter_map(|&(at, s)| {
            let (k, c) = (&s.key, s.acc.as_ref()?);
            let timing = s.latency.as_ref().map(|h| with_held(h, held.remove(&at)));
            let mut addresses: Vec<String> = c.addresses.iter().map(|a| a.to_string()).collect();
            addresses.sort_unstable();
            let rtt = c.addresses.iter().filter_map(|a| rtts.get(a).copied());
            let (latency_ms, parts) = timing.as_deref().map(Timing::summaries).unwrap_or_default();
            Some(ClientReport {
                client_id: k.client_id.clone(),
                software_name: k.software_name.clone(),
                software_version: k.software_version.clone(),
                addresses,
                requests: c.requests,
                responses: c.responses,
                unanswered: c.unanswered,
                errors: c.errors,
                latency_ms,
                parts,
                rtt_ms: median_ms(Some(rtt.collect())),
                throttled: c.throttle.count,
                throttle_time_ms: c.throttle.ms(),
                apis: apis(c),
                acks: c
                    .acks
                    .iter()
                    .map(|(a, e)| (a.to_string(), e.count))
                    .collect(),
                produce_bytes: c.produce_bytes,
                produce_uncompressed_bytes: c.produce_plain_bytes,
            })
        });
        each.collect()
    }

    /// Throttle totals, by client (`sorted`) and API, per second, and the most throttled.
    fn throttle_report(&self, sorted: &[(u32, &ClientSlot<ClientAcc>)]) -> ThrottleReport {
        let with_acc = sorted
            .iter()
            .filter_map(|(_, s)| Some((&s.key, s.acc.as_ref()?)));
        let by_client = with_acc.flat_map(|(k, c)| {
            c.throttle_by_api.iter().map(|(&api, t)| ThrottleByClient {
                client_id: k.client_id.clone(),
                software: k.software(),
                api_key: api,
                api_name: schema::api_name(api),
                count: t.count,
                sum_ms: t.sum,
                max_ms: t.max,
            })
        });
        let series = self
            .throttle_series
            .map
            .iter()
            .map(|(&s, t)| ThrottleSecond {
                second: s,
                count: t.count,
                sum_ms: t.sum,
                max_ms: t.max,
            });
        ThrottleReport {
            throttled: self.throttle.count,
            sum_ms: self.throttle.sum,
            max_ms: self.throttle.max,
            by_client: by_client.collect(),
            series: series.collect(),
            throttled_latency_ms: self.throttle_latency.summary(),
            exchanges: self.throttled.sorted(|a, b| {
                let more = b.throttle_ms.cmp(&a.throttle_ms);
                more.then(a.response_frame.cmp(&b.response_frame))
            }),
        }
    }

    /// Every error by name, API and place, the most frequent first.
    fn error_reports(&self) -> Vec<ErrorReport> {
        self.errors.most_frequent(|k, e| ErrorReport {
            error: k.name.to_string(),
            code: k.code,
            api_key: k.api_key,
            api_name: schema::api_name(k.api_key),
            topic: k.topic.clone(),
            partition: k.partition,
            count: e.count,
            first_frame: e.first,
            last_frame: e.last,
        })
    }

    /// The warnings, most frequent first.
    fn warning_reports(&self) -> Vec<WarningReport> {
        let each = |&(api_key, api_version, warning): &_, w: &ErrorAcc| WarningReport {
            warning,
            api_key,
            api_name: schema::api_name(api_key),
            api_version,
            count: w.count,
            first_frame: w.first,
            last_frame: w.last,
        };
        self.warnings.most_frequent(each)
    }

    /// The facts every table refused, per table.
    fn overflow_report(&self) -> Overflow {
        let mut overflow = self.overflow.clone();
        overflow.apis += self.apis.overflow + self.versions.overflow;
        overflow.clients += self.clients.acc_overflow;
        overflow.histograms +=
            self.clients.hist_overflow + self.brokers.overflow + self.conns.overflow;
        overflow.topics += self.parts.overflow;
        overflow.errors += self.errors.overflow + self.warnings.overflow;
        overflow.groups += self.groups.overflow;
        overflow.series += self.throttle_series.overflow;
        overflow.streams += self.streams.overflow + self.tls.overflow;
        overflow
    }
}

/// The consumer of a message's connection, for consumer lag: its client id
/// on its host.
fn consumer(
    lag: &mut lag::Lag,
    streams: &mut Hashed<u64, StreamFacts>,
    i: &MessageInfo,
) -> Option<lag::ConsumerId> {
    // The connection remembers its client's: one lookup, not two by name.
    let st = streams.map.get_mut(&i.stream);
    if let Some((_, c)) = st
        .as_ref()
        .and_then(|s| s.consumer.as_ref())
        .filter(|(id, _)| *id == i.client_id)
    {
        return Some(*c);
    }
    let c = lag.consumer(i.client_id.as_deref().unwrap_or(""), i.client.ip())?;
    if let Some(st) = st {
        st.consumer = Some((i.client_id.clone(), c));
    }
    Some(c)
}

/// The median of round trips in nanoseconds, in milliseconds: the lower
/// middle one of an even count (a measured value); `None` for none.
fn median_ms(rtts: Option<Vec<u64>>) -> Option<f64> {
    let mut v = rtts?;
    v.sort_unstable();
    let mid = v.len().checked_sub(1)? / 2;
    v.get(mid).map(|&ns| ns as f64 / 1e6)
}

/// The summary of `own` with the latencies `held` for it elsewhere: the
/// held ones (the report's own copy) take the owner's, the same histogram
/// as the other way round without copying the owner's.
fn with_held(own: &Timing, held: Option<Timing>) -> Cow<'_, Timing> {
    match held {
        Some(mut all) => {
            all.merge(own);
            Cow::Owned(all)
        }
        // Read where it is: a dense histogram is tens of KiB to copy.
        None => Cow::Borrowed(own),
    }
}

/// The client of a message on `stream` naming `client_id`: the slot the
/// connection remembers for that id, else the key (client id and the
/// connection's software) found in `clients` or built.
fn who(
    st: Option<&mut StreamFacts>,
    clients: &ClientTable<ClientAcc>,
    client_id: Option<&str>,
) -> Who {
    if let Some(k) = st.as_ref().and_then(|s| s.client.as_ref()) {
        if k.client_id.as_deref() == client_id {
            return Who::Slot(k.slot);
        }
    }
    let sw = st.as_ref().and_then(|s| s.software.as_ref());
    let key = ClientKey {
        client_id: client_id.map(str::to_string),
        software_name: sw.map(|s| s.0.clone()),
        software_version: sw.map(|s| s.1.clone()),
    };
    match clients.find(&key) {
        Some(slot) => {
            remember(st, client_id, &Who::Slot(slot));
            Who::Slot(slot)
        }
        None => Who::Key(Box::new(key)),
    }
}

/// Remembers on a connection the slot of its client naming `client_id`, once it has one.
fn remember(st: Option<&mut StreamFacts>, client_id: Option<&str>, who: &Who) {
    let (Who::Slot(slot), Some(st)) = (who, st) else {
        return;
    };
    let known = st
        .client
        .as_ref()
        .is_some_and(|k| k.slot == *slot && k.client_id.as_deref() == client_id);
    if !known {
        st.client = Some(StreamClient {
            client_id: client_id.map(str::to_string),
            slot: *slot,
            addr: None,
        });
    }
}

#[cfg(test)]
mod tests;
