//! The stats view's data: `kafkashark::stats::Stats` run over the loaded
//! entries, turned into the rows of seven sections (latency, throttle, errors,
//! clients, groups, consumer lag, record age and delivery), each row carrying
//! the filter expression that shows the messages it counts.
//!
//! Place in the data path: `App::entries` → [`compute`] (on demand: when the
//! view opens, on `r`, every second while loading) → [`StatsData`] → the
//! render (`ui.rs`) and `Enter` (the row's filter goes to the list).
//!
//! Invariants: pure (no clock, no I/O); the work is bounded: every entry is fed
//! to `Stats` from its facts, and at most `limit` entries are decoded for the
//! figures that need a tree (error places, client software, groups, topic ids
//! learned), in capture order; [`StatsData::wanted`] > [`StatsData::decoded`]
//! says the bound was hit. Every string that came off the wire is escaped in
//! the cells; the filters hold the raw strings (quoted for the filter language).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::errors::error_name;
use kafkashark::kafka::schema::{api_name, ApiKey};
use kafkashark::kafka::tree::escape_text;
use kafkashark::kafka::{DecodeOptions, Decoded, Value};
use kafkashark::stats::lag::PartitionLag;
use kafkashark::stats::text::{api, counts, ms, text};
use kafkashark::stats::{LatencyMs, Stats, StatsConfig, StatsReport};
use kafkashark::topics::TEACHERS;

use super::app::{message_of, ByteStore};
use super::index::FactsEntry;
use super::store::EntryStore;
use super::ui::joined;
use crate::filter::{quote, topics_of, Facts};

/// Most messages decoded per refresh for the figures that need a tree.
pub const DECODE_LIMIT: usize = 20_000;

/// Most seconds kept in the throttle sparkline's series.
pub const MAX_SERIES_SECONDS: usize = 86_400;

/// Ticks (of 200 ms) between automatic refreshes while the input is loading.
pub const REFRESH_TICKS: u64 = 5;

/// The sections of the stats view, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsTab {
    /// Latency per API, with the selected API's histogram.
    Latency,
    /// Throttle over time, and per client and API.
    Throttle,
    /// Errors with their topic and partition.
    Errors,
    /// Clients: id, software, addresses, versions.
    Clients,
    /// Consumer groups: generations, members, rebalance delay.
    Groups,
    /// Consumer lag per consumer, topic and partition, with its series.
    Lag,
    /// Record age per partition, produce → fetch delivery per consumer,
    /// producers' batching.
    Delivery,
    /// TLS connections: handshake, keys, alerts.
    Tls,
}

impl StatsTab {
    /// Every section, in tab order.
    pub const ALL: [StatsTab; SECTION_COUNT] = [
        StatsTab::Latency,
        StatsTab::Throttle,
        StatsTab::Errors,
        StatsTab::Clients,
        StatsTab::Groups,
        StatsTab::Lag,
        StatsTab::Delivery,
        StatsTab::Tls,
    ];

    /// Position in [`StatsTab::ALL`] (the order of the variants).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name on the tab.
    pub fn title(self) -> &'static str {
        SECTIONS[self.index()].0
    }

    /// The name on the tab when the full names do not fit.
    pub fn short(self) -> &'static str {
        SECTIONS[self.index()].1
    }
}

/// Sections of the view.
pub const SECTION_COUNT: usize = 8;

/// A column of a section's table.
#[derive(Clone, Copy, Debug)]
pub struct Col {
    /// Header text.
    pub title: &'static str,
    /// Width in characters (the least, for the flexible column).
    pub width: usize,
    /// Right-aligned (numbers).
    pub right: bool,
    /// Takes the width left over.
    pub flex: bool,
    /// 0 = always shown; higher numbers give way first on narrow terminals.
    pub priority: u8,
}

const fn col(title: &'static str, width: usize, right: bool, flex: bool, priority: u8) -> Col {
    Col {
        title,
        width,
        right,
        flex,
        priority,
    }
}

const LATENCY_COLS: [Col; 9] = [
    col("api", 25, false, false, 0),
    col("req", 5, true, false, 0),
    col("resp", 5, true, false, 0),
    col("p50", 7, true, false, 0),
    col("p90", 7, true, false, 2),
    col("p99", 7, true, false, 0),
    col("max", 7, true, false, 0),
    col("thr", 4, true, false, 1),
    col("errors", 8, false, true, 0),
];

const THROTTLE_COLS: [Col; 6] = [
    col("client id", 20, false, true, 0),
    col("software", 24, false, false, 2),
    col("api", 16, false, false, 0),
    col("count", 6, true, false, 0),
    col("sum ms", 8, true, false, 0),
    col("max ms", 7, true, false, 0),
];

const ERROR_COLS: [Col; 7] = [
    col("error", 26, false, false, 0),
    col("api", 14, false, false, 0),
    col("topic", 12, false, true, 0),
    col("part", 4, true, false, 0),
    col("count", 5, true, false, 0),
    col("first", 6, true, false, 1),
    col("last", 6, true, false, 1),
];

const CLIENT_COLS: [Col; 7] = [
    col("client id", 24, false, false, 0),
    col("software", 22, false, false, 2),
    col("address", 22, false, false, 3),
    col("req", 5, true, false, 0),
    col("resp", 5, true, false, 1),
    col("err", 4, true, false, 1),
    col("versions (* = removed in Kafka 4.0)", 24, false, true, 0),
];

const GROUP_COLS: [Col; 7] = [
    col("group", 20, false, false, 0),
    col("type", 8, false, false, 3),
    col("gens", 4, true, false, 0),
    col("members", 7, true, false, 0),
    col("join/sync/hb/leave", 18, true, false, 2),
    col("rebal ms", 8, true, false, 0),
    col("errors", 8, false, true, 0),
];

/// The lag table's last column: the row's series as a sparkline.
pub const SERIES_COL: usize = 8;

const LAG_COLS: [Col; 9] = [
    col("consumer", 16, false, false, 0),
    col("group", 14, false, false, 2),
    col("topic", 14, false, false, 0),
    col("part", 4, true, false, 0),
    col("lag", 7, true, false, 0),
    col("max", 7, true, false, 0),
    col("trend/s", 8, true, false, 1),
    col("commit lag", 10, true, false, 3),
    col("lag over time", 12, false, true, 0),
];

const DELIVERY_COLS: [Col; 7] = [
    col("of", 8, false, false, 0),
    col("partition / client", 22, false, true, 0),
    col("batches", 7, true, false, 0),
    col("p50", 8, true, false, 0),
    col("p99", 8, true, false, 1),
    col("max", 8, true, false, 0),
    col("notes", 40, false, false, 2),
];

const TLS_COLS: [Col; 9] = [
    col("conn", 5, false, false, 0),
    col("client", 21, false, false, 2),
    col("version", 15, false, false, 0),
    col("suite", 30, false, true, 1),
    col("sni", 16, false, false, 3),
    col("hs ms", 7, true, false, 1),
    col("keys", 13, false, false, 0),
    col("bytes c/s", 13, true, false, 3),
    col("alerts / why", 30, false, false, 0),
];

/// Each section's tab name, short name and table columns, in
/// [`StatsTab::ALL`] order.
const SECTIONS: [(&str, &str, &[Col]); SECTION_COUNT] = [
    ("Latency", "Lat", &LATENCY_COLS),
    ("Throttle", "Thr", &THROTTLE_COLS),
    ("Errors", "Err", &ERROR_COLS),
    ("Clients", "Cli", &CLIENT_COLS),
    ("Groups", "Grp", &GROUP_COLS),
    ("Lag", "Lag", &LAG_COLS),
    ("Delivery", "Dlv", &DELIVERY_COLS),
    ("TLS", "TLS", &TLS_COLS),
];

/// The columns of a section's table.
pub fn columns(tab: StatsTab) -> &'static [Col] {
    SECTIONS[tab.index()].2
}

/// Which columns fit in `width`, and how wide each is: columns of priority 0
/// always, then 1, 2, 3 while they fit; the flexible column takes the rest.
pub fn col_plan(cols: &[Col], width: usize) -> Vec<(usize, usize)> {
    let mut on: Vec<bool> = cols.iter().map(|c| c.priority == 0).collect();
    // Width taken so far, each column with the space after it.
    let mut used: usize = cols
        .iter()
        .filter(|c| c.priority == 0)
        .map(|c| c.width + 1)
        .sum();
    for p in 1..=3 {
        for (i, c) in cols.iter().enumerate() {
            if c.priority == p && used + c.width <= width {
                on[i] = true;
                used += c.width + 1;
            }
        }
    }
    let spare = (width + 1).saturating_sub(used);
    cols.iter()
        .enumerate()
        .filter(|(i, _)| on[*i])
        .map(|(i, c)| (i, if c.flex { c.width + spare } else { c.width }))
        .collect()
}

/// One row of a section: its cells (escaped) and the filter that shows its messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsRow {
    /// One string per column of [`columns`].
    pub cells: Vec<String>,
    /// A filter expression (docs/filter.md) for the messages the row counts.
    pub filter: String,
    /// Drawn as trouble (errors).
    pub trouble: bool,
}

/// Lower edges of the latency histogram's buckets, in microseconds, with
/// their labels: log-spaced, two a decade (1, 3, 10, 30, …).
pub const BUCKETS: [(u64, &str); 12] = [
    (0, "0"),
    (100, ".1ms"),
    (300, ".3ms"),
    (1_000, "1ms"),
    (3_000, "3ms"),
    (10_000, "10ms"),
    (30_000, "30ms"),
    (100_000, ".1s"),
    (300_000, ".3s"),
    (1_000_000, "1s"),
    (3_000_000, "3s"),
    (10_000_000, "10s"),
];

/// The bucket of a latency in nanoseconds.
pub fn bucket_of(ns: u64) -> usize {
    let us = ns / 1000;
    BUCKETS.iter().rposition(|(lo, _)| us >= *lo).unwrap_or(0)
}

/// Everything the stats view shows, computed at one moment.
#[derive(Clone, Debug)]
pub struct StatsData {
    /// The engine's report over the entries.
    pub report: StatsReport,
    /// Entries it was computed over (the first `messages` of `App::entries`).
    pub messages: usize,
    /// Entries that needed a tree (error places, software, groups, topic ids).
    pub wanted: usize,
    /// Of those, the ones decoded (at most the limit).
    pub decoded: usize,
    /// Entries that feed consumer lag and delivery (Fetch and ShareFetch
    /// exchanges, Produce and OffsetCommit requests) and needed no tree
    /// for the figures above.
    pub lag_wanted: usize,
    /// Of those, the ones decoded (at most the limit, a budget of its own).
    pub lag_decoded: usize,
    /// Per api key: latencies of paired responses in [`BUCKETS`].
    pub hist: BTreeMap<i16, [u64; BUCKETS.len()]>,
    /// Epoch second of `throttle[0]`.
    pub throttle_start: i64,
    /// Sum of ThrottleTimeMs per second, from the first message's second to the last's.
    pub throttle: Vec<u64>,
    /// The rows of each section, in [`StatsTab::ALL`] order.
    pub rows: [Vec<StatsRow>; SECTION_COUNT],
}

impl StatsData {
    /// The rows of a section.
    pub fn rows(&self, tab: StatsTab) -> &[StatsRow] {
        &self.rows[tab.index()]
    }

    /// The decode bound was hit: places, software and groups are partial.
    pub fn truncated(&self) -> bool {
        self.wanted > self.decoded
    }

    /// The lag and delivery decode bound was hit: those sections are partial.
    pub fn lag_truncated(&self) -> bool {
        self.lag_wanted > self.lag_decoded
    }
}

/// Whether the stats need this entry's tree (beyond its facts): ApiVersions
/// v3+ requests (client software), group requests and responses, responses
/// that teach topic ids, responses with errors (their places) and the
/// requests of those (the topic of a response that does not name it).
fn wants_tree(i: &FactsEntry, entries: &EntryStore) -> bool {
    let key = i.api_key().map(ApiKey);
    let group = key.is_some_and(ApiKey::is_group);
    match i.kind() {
        Kind::Request => {
            group
                || (key == Some(ApiKey::API_VERSIONS) && i.api_version().is_some_and(|v| v >= 3))
                || i.peer()
                    .and_then(|p| entries.facts(usize::try_from(p).ok()?))
                    .is_some_and(|r| r.kind() == Kind::Response && !r.error_codes().is_empty())
        }
        Kind::Response => {
            group || key.is_some_and(|k| TEACHERS.contains(&k)) || !i.error_codes().is_empty()
        }
    }
}

/// Whether the stats read consumer lag or delivery from this entry's tree:
/// Fetch requests (the offsets asked) and responses (high watermarks, batch
/// headers), ShareFetch responses (batch headers), Produce requests (batch
/// headers) and OffsetCommit requests (committed offsets).
fn feeds_lag(i: &FactsEntry) -> bool {
    let Some(key) = i.api_key().map(ApiKey) else {
        return false;
    };
    match i.kind() {
        Kind::Request => [ApiKey::FETCH, ApiKey::PRODUCE, ApiKey::OFFSET_COMMIT].contains(&key),
        Kind::Response => [ApiKey::FETCH, ApiKey::SHARE_FETCH].contains(&key),
    }
}

/// The `GroupId` of a group request's body.
fn group_id(d: &Decoded) -> Option<String> {
    match &d.body()?.child("GroupId")?.value {
        Value::Str(s) => Some(s.clone()),
        _ => None,
    }
}

/// `api=Produce`, or `api=N` for a key without a name.
fn api_pred(key: i16) -> String {
    api_name(key).map_or_else(|| format!("api={key}"), |n| format!("api={n}"))
}

fn lat(l: Option<&LatencyMs>, f: fn(&LatencyMs) -> f64) -> String {
    l.map_or_else(|| "-".to_string(), |l| ms(f(l)))
}

/// A client id escaped and quoted, or `-`.
fn id_cell(id: Option<&str>) -> String {
    id.map_or_else(|| "-".to_string(), |s| quote(&escape_text(s)))
}

/// Runs the engine's statistics over `entries`, decoding at most `limit` of
/// them for the figures that need a tree, and at most `limit` more for
/// consumer lag and delivery. Entries that do not hold their bytes are read
/// again through `store`.
pub fn compute(entries: &EntryStore, limit: usize, store: Option<&dyn ByteStore>) -> StatsData {
    let opts = DecodeOptions {
        records: false,
        ..DecodeOptions::default()
    };
    // Record batches' headers (not their records), as `stats` reads them.
    let batch_opts = DecodeOptions {
        records: true,
        records_headers_only: true,
        ..DecodeOptions::default()
    };
    // The summary scan of the same: batch headers and placed offsets.
    let scan_opts = DecodeOptions {
        records: false,
        ..batch_opts.clone()
    };
    let mut stats = Stats::new(StatsConfig::default());
    let (mut wanted, mut decoded) = (0usize, 0usize);
    let (mut lag_wanted, mut lag_decoded) = (0usize, 0usize);
    // Group id → (api keys of its requests, connections that carried them).
    let mut groups: BTreeMap<String, (BTreeSet<i16>, BTreeSet<u64>)> = BTreeMap::new();
    let mut hist: BTreeMap<i16, [u64; BUCKETS.len()]> = BTreeMap::new();
    // Topics the filter sees on responses with errors.
    let mut error_topics: HashSet<String> = HashSet::new();
    for e in entries.iter_facts() {
        // An entry that cannot be read back (the index file failed) is left out.
        let Ok(e) = &e else { continue };
        // The engine's statistics take the full facts: rebuilt per entry, dropped after.
        let i = &e.info();
        let wants = wants_tree(e, entries);
        let feeds = feeds_lag(e);
        wanted += usize::from(wants);
        lag_wanted += usize::from(feeds && !wants);
        // Each kind of tree from its own budget.
        let budget = match (wants, feeds) {
            (true, _) => Some(&mut decoded),
            (false, true) => Some(&mut lag_decoded),
            (false, false) => None,
        };
        let decode = match budget {
            Some(n) if *n < limit => {
                *n += 1;
                true
            }
            _ => false,
        };
        let tree = if decode {
            // The message itself, read with its record's side blob.
            let full = usize::try_from(e.index()).ok().and_then(|i| entries.get(i));
            let raw = full.and_then(|full| message_of(&full, store).ok());
            raw.map(|raw| match (wants, feeds) {
                // Lag and delivery read the summary scan `stats` reads.
                (false, true) => {
                    kafkashark::analyzer::rescan(i, &raw, &scan_opts, Stats::needs_tree)
                        .unwrap_or_else(|| kafkashark::analyzer::redecode(i, &raw, &batch_opts))
                }
                (_, true) => kafkashark::analyzer::redecode(i, &raw, &batch_opts),
                _ => kafkashark::analyzer::redecode(i, &raw, &opts),
            })
        } else {
            None
        };
        if let (Kind::Request, Some(k), Some(d)) =
            (i.kind, i.api_key.filter(|k| k.is_group()), &tree)
        {
            if let Some(g) = group_id(d) {
                let slot = groups.entry(g).or_default();
                slot.0.insert(k.0);
                slot.1.insert(i.stream);
            }
        }
        stats.message_info(i, tree.as_ref());
        if i.kind == Kind::Response {
            if let (Some(k), Some(ns)) = (i.api_key, i.latency_ns) {
                hist.entry(k.0).or_insert([0; BUCKETS.len()])[bucket_of(ns)] += 1;
            }
            if !i.error_codes.is_empty() {
                let peer = e
                    .peer()
                    .and_then(|p| entries.facts(usize::try_from(p).ok()?));
                error_topics.extend(topics_of(e, peer.as_ref()).iter().map(|t| t.to_string()));
            }
        }
    }
    stats.settle();
    let report = stats.report();

    // The throttle series, one value a second over the whole capture.
    let first = report.summary.first_ts.map_or(0, |t| t.floor() as i64);
    let last = report.summary.last_ts.map_or(first, |t| t.floor() as i64);
    let span = usize::try_from(last.saturating_sub(first).saturating_add(1))
        .unwrap_or(1)
        .clamp(1, MAX_SERIES_SECONDS);
    let mut throttle = vec![0u64; span];
    if report.throttle.throttled > 0 {
        for s in &report.throttle.series {
            if let Some(slot) = usize::try_from(s.second - first)
                .ok()
                .and_then(|k| throttle.get_mut(k))
            {
                *slot += u64::try_from(s.sum_ms).unwrap_or(0);
            }
        }
    }

    let rows = [
        latency_rows(&report),
        throttle_rows(&report),
        error_rows(&report, &error_topics),
        client_rows(&report, entries),
        group_rows(&report, &groups),
        lag_rows(&report),
        delivery_rows(&report),
        tls_rows(&report.tls),
    ];
    StatsData {
        report,
        messages: entries.len(),
        wanted,
        decoded,
        lag_wanted,
        lag_decoded,
        hist,
        throttle_start: first,
        throttle,
        rows,
    }
}

fn latency_rows(r: &StatsReport) -> Vec<StatsRow> {
    r.apis
        .iter()
        .map(|a| {
            let l = a.latency_ms.as_ref();
            let errors: u64 = a.errors.values().sum();
            StatsRow {
                cells: vec![
                    api(a.api_name, a.api_key),
                    a.requests.to_string(),
                    a.responses.to_string(),
                    lat(l, |l| l.p50),
                    lat(l, |l| l.p90),
                    lat(l, |l| l.p99),
                    lat(l, |l| l.max),
                    a.throttled.to_string(),
                    counts(&a.errors),
                ],
                filter: api_pred(a.api_key),
                trouble: errors > 0,
            }
        })
        .collect()
}

fn throttle_rows(r: &StatsReport) -> Vec<StatsRow> {
    let t = &r.throttle;
    if t.throttled == 0 {
        return Vec::new();
    }
    let mut rows = vec![StatsRow {
        cells: vec![
            "(all throttled responses)".into(),
            String::new(),
            String::new(),
            t.throttled.to_string(),
            t.sum_ms.to_string(),
            t.max_ms.to_string(),
        ],
        filter: "throttled".into(),
        trouble: false,
    }];
    for c in &t.by_client {
        let mut filter = format!("throttled and {}", api_pred(c.api_key));
        if let Some(id) = &c.client_id {
            filter.push_str(&format!(" and client_id={}", quote(id)));
        }
        rows.push(StatsRow {
            cells: vec![
                id_cell(c.client_id.as_deref()),
                text(&c.software),
                api(c.api_name, c.api_key),
                c.count.to_string(),
                c.sum_ms.to_string(),
                c.max_ms.to_string(),
            ],
            filter,
            trouble: false,
        });
    }
    rows
}

fn error_rows(r: &StatsReport, error_topics: &HashSet<String>) -> Vec<StatsRow> {
    r.errors
        .iter()
        .map(|e| {
            let name = match error_name(e.code) {
                Some(n) => n.to_string(),
                None => e.code.to_string(),
            };
            let mut filter = format!("error={name} and {}", api_pred(e.api_key));
            // Only a topic the filter can see (a name, or an id the capture named).
            if let Some(t) = e.topic.as_deref().filter(|&t| error_topics.contains(t)) {
                filter.push_str(&format!(" and topic={}", quote(t)));
            }
            StatsRow {
                cells: vec![
                    escape_text(&e.error),
                    api(e.api_name, e.api_key),
                    text(&e.topic),
                    e.partition.map_or("-".into(), |p| p.to_string()),
                    e.count.to_string(),
                    e.first_frame.to_string(),
                    e.last_frame.to_string(),
                ],
                filter,
                trouble: true,
            }
        })
        .collect()
}

/// Any of the predicates: `p`, or `(p or q …)`; `None` for none.
fn any_of(parts: Vec<String>) -> Option<String> {
    match parts.len() {
        0 => None,
        1 => parts.into_iter().next(),
        _ => Some(format!("({})", parts.join(" or "))),
    }
}

/// `stream=N`, or `(stream=a or stream=b …)`.
fn streams_pred(streams: &BTreeSet<u64>) -> Option<String> {
    any_of(streams.iter().map(|s| format!("stream={s}")).collect())
}

fn client_rows(r: &StatsReport, entries: &EntryStore) -> Vec<StatsRow> {
    // Connections by client address, for clients without a client id.
    let anonymous: HashSet<&str> = r
        .clients
        .iter()
        .filter(|c| c.client_id.is_none())
        .flat_map(|c| c.addresses.iter().map(String::as_str))
        .collect();
    let mut streams_of: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    if !anonymous.is_empty() {
        for e in entries
            .iter_facts()
            .flatten()
            .filter(|e| e.kind() == Kind::Request)
        {
            let a = e.client_text();
            if anonymous.contains(&*a) {
                streams_of
                    .entry(a.into_owned())
                    .or_default()
                    .insert(e.stream());
            }
        }
    }
    r.clients
        .iter()
        .map(|c| {
            let filter = match &c.client_id {
                Some(id) => format!("client_id={}", quote(id)),
                None => {
                    let all: BTreeSet<u64> = c
                        .addresses
                        .iter()
                        .filter_map(|a| streams_of.get(a))
                        .flatten()
                        .copied()
                        .collect();
                    streams_pred(&all).unwrap_or_else(|| "not client_id~\"\"".into())
                }
            };
            let software = match (&c.software_name, &c.software_version) {
                (Some(n), Some(v)) if !v.is_empty() => Some(format!("{n} {v}")),
                (Some(n), _) => Some(n.clone()),
                _ => None,
            };
            let address = match c.addresses.as_slice() {
                [] => "-".to_string(),
                [one] => escape_text(one),
                [one, rest @ ..] => format!("{} (+{})", escape_text(one), rest.len()),
            };
            // Versions per api, `*` on those Kafka 4.0 removed.
            let mut versions: Vec<String> = Vec::new();
            for a in &c.apis {
                let (name, v) = (api(a.api_name, a.api_key), a.version);
                let mark = if a.removed_in_kafka_4 { "*" } else { "" };
                match versions.last_mut() {
                    Some(last) if last.starts_with(&format!("{name} v")) => {
                        last.push_str(&format!(",{v}{mark}"));
                    }
                    _ => versions.push(format!("{name} v{v}{mark}")),
                }
            }
            let versions = versions.join(" ");
            StatsRow {
                cells: vec![
                    id_cell(c.client_id.as_deref()),
                    text(&software),
                    address,
                    c.requests.to_string(),
                    c.responses.to_string(),
                    c.errors.to_string(),
                    versions,
                ],
                filter,
                trouble: c.apis.iter().any(|a| a.removed_in_kafka_4),
            }
        })
        .collect()
}

fn group_rows(
    r: &StatsReport,
    groups: &BTreeMap<String, (BTreeSet<i16>, BTreeSet<u64>)>,
) -> Vec<StatsRow> {
    r.groups
        .iter()
        .map(|g| {
            let filter = match groups.get(&g.group_id) {
                Some((apis, streams)) => {
                    let a = any_of(apis.iter().map(|&k| api_pred(k)).collect()).unwrap_or_default();
                    match streams_pred(streams) {
                        Some(s) => format!("{a} and {s}"),
                        None => a,
                    }
                }
                // Not decoded (the bound): every group request.
                None => joined(ApiKey::GROUP.map(|k| api_pred(k.0)), " or "),
            };
            let rebalance = g
                .generations
                .iter()
                .filter_map(|x| x.rebalance_ms)
                .reduce(f64::max);
            StatsRow {
                cells: vec![
                    quote(&escape_text(&g.group_id)),
                    text(&g.protocol_type),
                    g.generations.len().to_string(),
                    g.members.len().max(g.heartbeat_members.len()).to_string(),
                    format!("{}/{}/{}/{}", g.joins, g.syncs, g.heartbeats, g.leaves),
                    rebalance.map_or("-".into(), ms),
                    counts(&g.errors),
                ],
                filter,
                trouble: !g.errors.is_empty(),
            }
        })
        .collect()
}

/// `Fetch and client="…"`, with `and topic="…"` when given: a consumer's
/// Fetch exchanges (`client=` matches the client id or, for a client without
/// one, its address).
fn fetch_pred(client: Option<&str>, topic: Option<&str>) -> String {
    let mut f = "api=Fetch".to_string();
    if let Some(c) = client {
        f.push_str(&format!(" and client={}", quote(c)));
    }
    if let Some(t) = topic {
        f.push_str(&format!(" and topic={}", quote(t)));
    }
    f
}

/// A lag row's consumer as record age and delivery name it: its client id,
/// else its address (`Consumer::label`).
pub fn consumer_label(p: &PartitionLag) -> &str {
    match p.client.as_str() {
        "" => &p.host,
        c => c,
    }
}

/// One row per consumer, topic and partition: its lag now, largest, trend
/// and the group's committed lag; the series is drawn by the render from
/// `report.lag.partitions` (same order).
pub fn lag_rows(r: &StatsReport) -> Vec<StatsRow> {
    r.lag
        .partitions
        .iter()
        .map(|p| StatsRow {
            cells: vec![
                quote(&escape_text(consumer_label(p))),
                text(&p.group),
                escape_text(&p.topic),
                p.partition.to_string(),
                p.lag.to_string(),
                p.max_lag.to_string(),
                p.trend_per_s.map_or("-".into(), |t| format!("{t:+.1}")),
                p.committed_lag.map_or("-".into(), |c| c.to_string()),
                String::new(),
            ],
            filter: fetch_pred(Some(consumer_label(p)), Some(&p.topic)),
            // Behind and falling further behind.
            trouble: p.lag > 0 && p.trend_per_s.is_some_and(|t| t > 0.0),
        })
        .collect()
}

/// One row per TLS connection (the loader's, not the entries': a
/// connection without keys has no messages): its handshake, whether it was
/// decrypted and if not why, its alerts; its messages are the stream's.
pub fn tls_rows(t: &[kafkashark::stats::tls::TlsReport]) -> Vec<StatsRow> {
    t.iter()
        .map(|t| {
            let version = match (&t.version, t.offered) {
                (Some(v), true) => format!("{v} offered"),
                (Some(v), false) if t.resumed => format!("{v} resumed"),
                (Some(v), false) => v.clone(),
                (None, _) => "-".into(),
            };
            let why = match (&t.detail, t.alerts.is_empty()) {
                (_, false) => t.alerts.join(", "),
                (Some(d), true) => d.clone(),
                (None, true) => String::new(),
            };
            StatsRow {
                cells: vec![
                    format!("s{}", t.stream),
                    t.client.clone(),
                    version,
                    t.suite.clone().unwrap_or_else(|| "-".into()),
                    text(&t.server_name),
                    t.handshake_ms.map_or("-".into(), |m| format!("{m:.1}")),
                    t.keys.to_string(),
                    format!("{}/{}", t.bytes[0], t.bytes[1]),
                    escape_text(&why),
                ],
                filter: format!("stream={}", t.stream),
                trouble: t.keys != "decrypted" || t.alerts.iter().any(|a| a.contains("fatal")),
            }
        })
        .collect()
}

/// The p50, p99 and max cells of a distribution in milliseconds.
fn spread(l: Option<&LatencyMs>) -> [String; 3] {
    [lat(l, |l| l.p50), lat(l, |l| l.p99), lat(l, |l| l.max)]
}

/// Record age per partition, delivery per consumer, then the producers'
/// batching (its p50/p99/max: the gaps between batches for one partition).
pub fn delivery_rows(r: &StatsReport) -> Vec<StatsRow> {
    let d = &r.delivery;
    let row = |of: &str, who: String, batches: u64, l: Option<&LatencyMs>, notes: String| {
        let [p50, p99, max] = spread(l);
        vec![
            of.to_string(),
            who,
            batches.to_string(),
            p50,
            p99,
            max,
            notes,
        ]
    };
    let mut rows = Vec::new();
    for a in &d.record_age {
        let mut notes = Vec::new();
        if a.log_append_time > 0 {
            notes.push(format!("{} LogAppendTime", a.log_append_time));
        }
        if a.future > 0 {
            notes.push(format!("{} timestamped after the fetch", a.future));
        }
        rows.push(StatsRow {
            cells: row(
                "age",
                format!("{}/{}", escape_text(&a.topic), a.partition),
                a.batches,
                a.age_ms.as_ref(),
                notes.join(", "),
            ),
            filter: format!("{} and response", fetch_pred(None, Some(&a.topic))),
            trouble: false,
        });
    }
    for x in &d.delivery {
        rows.push(StatsRow {
            cells: row(
                "delivery",
                quote(&escape_text(&x.consumer)),
                x.batches,
                x.delivery_ms.as_ref(),
                "Produce request → Fetch response".into(),
            ),
            filter: fetch_pred(Some(&x.consumer), None),
            trouble: false,
        });
    }
    for p in &d.producers {
        let per = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let notes = format!(
            "{} req, {} rec/batch, {} B/batch (max {})",
            p.requests,
            per(p.records_per_batch),
            per(p.mean_batch_bytes),
            p.max_batch_bytes
        );
        rows.push(StatsRow {
            cells: row(
                "producer",
                quote(&escape_text(&p.producer)),
                p.batches,
                p.batch_gap_ms.as_ref(),
                notes,
            ),
            filter: format!("api=Produce and client={}", quote(&p.producer)),
            trouble: false,
        });
    }
    rows
}
