//! The rows of `kafkashark export`, in two tables ([`TABLES`], schema
//! version [`SCHEMA_VERSION`]): `messages`, one row per Kafka message
//! ([`MESSAGES`], [`message_row`]), and `partitions`, one row per message
//! and topic partition it places a fact at ([`PARTITIONS`]); [`TableRows`]
//! writes both for each message. Each row is written as one JSON object: what
//! `--format jsonl` writes, and what the Parquet and CSV writers read and
//! type by the table's columns (docs/export.md).
//!
//! A row carries its table and its partition keys first: `table`, `date`
//! (the UTC day of `ts`, `YYYY-MM-DD`) and `api` (the api's name, `unknown`
//! without one). The writers put rows in `TABLE/date=…/api=…/` and leave
//! these keys out of the files (they are in the path, as hive partitioning
//! has them).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::analyzer::{MessageInfo, MessageRecord};
use crate::kafka::decode::Kind;
use crate::kafka::errors::error_name;
use crate::kafka::records::{civil_from_days, BatchHead};
use crate::kafka::schema::ApiKey;
use crate::kafka::tree::json;
use crate::stats::facts;
use crate::topics::TopicNames;
use crate::vocab::Timestamp;

/// The version of the tables' schema: raised when a column changes or goes
/// (a column added at the end keeps it).
pub const SCHEMA_VERSION: u32 = 2;

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Text.
    Str,
    /// Text from a small set (Parquet: dictionary-encoded).
    Dict,
    /// Integers of 16, 32 and 64 bits.
    I16,
    /// 32 bits.
    I32,
    /// 64 bits.
    I64,
    /// A float.
    F64,
    /// True or false.
    Bool,
    /// A UTC time to the microsecond (JSON: RFC 3339 text with six
    /// fractional digits; Parquet: TIMESTAMP(MICROS), which every engine
    /// reads: Spark refuses nanoseconds).
    Timestamp,
    /// A list of 16-bit integers.
    ListI16,
    /// A list of texts.
    ListStr,
}

/// One column: its name, type, and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub ty: ColumnType,
    /// What it holds (docs/export.md lists the same).
    pub about: &'static str,
}

const fn col(name: &'static str, ty: ColumnType, about: &'static str) -> Column {
    Column { name, ty, about }
}

/// The partition keys of a row, in the order of the directories.
pub const PARTITION_KEYS: [&str; 2] = ["date", "api"];

/// A table: its name (its directory under `--out`) and columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    /// Its name, the `table` key of its rows.
    pub name: &'static str,
    /// Its columns, in the order of the files.
    pub columns: &'static [Column],
}

/// The tables, each row naming its own.
pub const TABLES: [Table; 2] = [
    Table {
        name: "messages",
        columns: MESSAGES,
    },
    Table {
        name: "partitions",
        columns: PARTITIONS,
    },
];

use ColumnType as T;

// The columns both tables have.
const CAPTURE: Column = col(
    "capture",
    T::Dict,
    "the capture file it came from, as given",
);
const TS: Column = col(
    "ts",
    T::Timestamp,
    "time of the frame that completed the message (UTC)",
);
const FRAME: Column = col(
    "frame",
    T::I64,
    "frame that completed the message (across the captures read)",
);
const STREAM: Column = col(
    "stream",
    T::I64,
    "connection number, in order of first appearance",
);
const COMMUNITY_ID: Column = col(
    "community_id",
    T::Str,
    "the connection's Community ID (v1, seed 0)",
);
const KIND: Column = col("kind", T::Dict, "request or response");
const API_KEY: Column = col("api_key", T::I16, "api key (a response: its request's)");
const API_NAME: Column = col("api_name", T::Dict, "api name");
const API_VERSION: Column = col("api_version", T::I16, "api version");
const CORRELATION_ID: Column = col("correlation_id", T::I32, "correlation id");
const CLIENT_ID: Column = col(
    "client_id",
    T::Str,
    "the request's client id (a response: its request's)",
);
const ERROR_NAME: Column = col("error_name", T::Dict, "the name of error_code");

/// The `messages` table's columns, in the order of the files (the
/// partition keys are not among them).
pub const MESSAGES: &[Column] = &[
    CAPTURE,
    TS,
    FRAME,
    col("first_frame", T::I64, "frame that carried its first byte"),
    STREAM,
    COMMUNITY_ID,
    col("client", T::Str, "client ip:port"),
    col("broker", T::Str, "broker ip:port"),
    KIND,
    API_KEY,
    API_NAME,
    API_VERSION,
    CORRELATION_ID,
    col(
        "length",
        T::I32,
        "the size field: bytes after the 4-byte prefix",
    ),
    CLIENT_ID,
    col("paired", T::Bool, "paired with its request or response"),
    col(
        "expects_response",
        T::Bool,
        "a request: a response is expected (not acks=0)",
    ),
    col(
        "latency_ms",
        T::F64,
        "a paired response: request complete to response's first byte",
    ),
    col(
        "hol_wait_ms",
        T::F64,
        "the part of latency_ms behind the connection's earlier responses",
    ),
    col("service_ms", T::F64, "latency_ms less hol_wait_ms"),
    col(
        "rtt_ms",
        T::F64,
        "the connection's TCP round trip, when known",
    ),
    col(
        "long_poll",
        T::Bool,
        "a Fetch response that waited out MaxWaitMs with no records",
    ),
    col("throttle_time_ms", T::I32, "a response's ThrottleTimeMs"),
    col(
        "error_code",
        T::I16,
        "a response's first non-zero error code, 0 for none",
    ),
    ERROR_NAME,
    col(
        "error_codes",
        T::ListI16,
        "every non-zero error code of a response",
    ),
    col("topics", T::ListStr, "the topics it names"),
    col(
        "decode_error",
        T::Str,
        "why it did not decode, when it did not",
    ),
];

/// The `partitions` table's columns: one row per message and topic
/// partition at which it places a record set, an offset or an error (the
/// places `stats` counts its topics table at).
pub const PARTITIONS: &[Column] = &[
    CAPTURE,
    TS,
    FRAME,
    STREAM,
    COMMUNITY_ID,
    KIND,
    API_KEY,
    API_NAME,
    API_VERSION,
    CORRELATION_ID,
    CLIENT_ID,
    col(
        "topic",
        T::Str,
        "the topic, by name (a topic id: its name learned from the capture, else its hex)",
    ),
    col("partition", T::I32, "the partition"),
    col(
        "error_code",
        T::I16,
        "the partition's first non-zero error code, 0 for none",
    ),
    ERROR_NAME,
    col("fetch_offset", T::I64, "a Fetch request's FetchOffset"),
    col("high_watermark", T::I64, "a Fetch response's HighWatermark"),
    col(
        "last_stable_offset",
        T::I64,
        "a Fetch response's LastStableOffset",
    ),
    col(
        "log_start_offset",
        T::I64,
        "a Fetch response's LogStartOffset",
    ),
    col(
        "committed_offset",
        T::I64,
        "an OffsetCommit request's CommittedOffset",
    ),
    col("record_sets", T::I32, "record sets (records fields)"),
    col(
        "bytes",
        T::I64,
        "bytes of the record sets, without their length prefixes",
    ),
    col("batches", T::I64, "complete batches (legacy: messages)"),
    col("records", T::I64, "records the batches declare"),
    col("partial_batches", T::I64, "batches cut at the end of a set"),
    col(
        "codec",
        T::Dict,
        "the batches' codec (mixed when they differ)",
    ),
    col(
        "compressed_bytes",
        T::I64,
        "compressed payload bytes of the batches that decompressed",
    ),
    col(
        "decompressed_bytes",
        T::I64,
        "what those payloads decompressed to",
    ),
    col("first_offset", T::I64, "the batches' lowest baseOffset"),
    col(
        "last_offset",
        T::I64,
        "the batches' highest last offset (baseOffset + lastOffsetDelta)",
    ),
    col(
        "max_timestamp",
        T::Timestamp,
        "the batches' highest maxTimestamp (UTC, to the millisecond)",
    ),
];

/// The UTC day of `ts`: `YYYY-MM-DD`.
pub fn date(ts: Timestamp) -> String {
    let (y, m, d) = civil_from_days(ts.secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `ts` in RFC 3339, UTC, to the microsecond (the nanoseconds of a pcapng
/// clock cut): `2026-12-01T09:30:00.123456Z`.
pub fn rfc3339(ts: Timestamp) -> String {
    let secs = ts.secs.rem_euclid(86_400);
    let mut s = date(ts);
    let _ = write!(
        s,
        "T{:02}:{:02}:{:02}.{:06}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ts.nanos / 1000
    );
    s
}

/// The name a row's `api` partition key gives `i`'s api.
pub fn api_key_name(i: &MessageInfo) -> String {
    match (i.api_name(), i.api_key) {
        (Some(n), _) => n.to_string(),
        (None, Some(k)) => format!("api-{}", k.0),
        (None, None) => "unknown".into(),
    }
}

/// A row being written: one JSON object, its table first.
struct Row<'a>(&'a mut Vec<u8>);

impl<'a> Row<'a> {
    /// Opens a row of `table` with its partition keys for message `i`.
    fn start(out: &'a mut Vec<u8>, table: &str, i: &MessageInfo) -> Row<'a> {
        out.extend_from_slice(b"{\"table\":");
        json::str(out, table);
        let mut r = Row(out);
        r.str("date", &date(i.ts));
        r.str("api", &api_key_name(i));
        r
    }

    fn key(&mut self, k: &str) {
        self.0.extend_from_slice(b",\"");
        self.0.extend_from_slice(k.as_bytes());
        self.0.extend_from_slice(b"\":");
    }

    /// Key `k` with `v` written by `write`, or `null`.
    fn opt<T>(&mut self, k: &str, v: Option<T>, write: impl FnOnce(&mut Vec<u8>, T)) {
        self.key(k);
        match v {
            Some(v) => write(self.0, v),
            None => self.0.extend_from_slice(b"null"),
        }
    }

    fn null(&mut self, k: &str) {
        self.opt(k, None::<()>, |_, ()| {});
    }

    fn str(&mut self, k: &str, v: &str) {
        self.opt(k, Some(v), json::str);
    }

    fn opt_str(&mut self, k: &str, v: Option<&str>) {
        self.opt(k, v, json::str);
    }

    fn int(&mut self, k: &str, v: Option<i64>) {
        self.opt(k, v, json::i64);
    }

    fn float(&mut self, k: &str, v: Option<f64>) {
        self.opt(k, v, json::f64);
    }

    fn boolean(&mut self, k: &str, v: Option<bool>) {
        self.opt(k, v, |out, b| {
            out.extend_from_slice(if b { b"true" } else { b"false" })
        });
    }

    /// The columns every table starts with, for message `i`.
    fn message_head(&mut self, i: &MessageInfo, capture: &str) {
        self.str("capture", capture);
        self.str("ts", &rfc3339(i.ts));
        self.int("frame", i64::try_from(i.frame).ok());
    }

    /// The api columns every table has, for message `i`.
    fn api(&mut self, i: &MessageInfo) {
        let req = i.kind == Kind::Request;
        self.str("kind", if req { "request" } else { "response" });
        self.int("api_key", i.api_key.map(|k| i64::from(k.0)));
        self.opt_str("api_name", i.api_name());
        self.int("api_version", i.api_version.map(i64::from));
        self.int("correlation_id", i.correlation_id.map(i64::from));
    }

    /// An error code and its name (a request: none).
    fn error(&mut self, req: bool, code: i16) {
        if req {
            self.null("error_code");
            self.null("error_name");
        } else {
            self.int("error_code", Some(i64::from(code)));
            let name = error_name(code).map_or(Cow::Owned(code.to_string()), Cow::Borrowed);
            self.str("error_name", &name);
        }
    }

    fn end(self) {
        self.0.push(b'}');
    }
}

/// Appends the row of message `i` from capture `capture`, on connection
/// `community_id`, sent by `client_id` (a response: its request's), as a
/// JSON object (no newline): its table, the partition keys, then
/// [`MESSAGES`] in order, `null` where a column has no value.
pub fn message_row(
    out: &mut Vec<u8>,
    i: &MessageInfo,
    capture: &str,
    community_id: &str,
    client_id: Option<&str>,
) {
    let req = i.kind == Kind::Request;
    let ms = |ns: Option<u64>| ns.map(|n| n as f64 / 1e6);
    let mut r = Row::start(out, "messages", i);
    r.message_head(i, capture);
    r.int("first_frame", i64::try_from(i.first_frame).ok());
    r.int("stream", i64::try_from(i.stream).ok());
    r.str("community_id", community_id);
    r.str("client", &i.client.to_string());
    r.str("broker", &i.broker.to_string());
    r.api(i);
    r.int("length", Some(i.length.into()));
    r.opt_str("client_id", client_id);
    r.boolean("paired", Some(i.paired));
    r.boolean("expects_response", req.then_some(i.expects_response));
    r.float("latency_ms", i.latency_ms());
    r.float("hol_wait_ms", ms(i.hol_wait_ns));
    r.float("service_ms", ms(i.service_ns()));
    r.float("rtt_ms", i.rtt.map(|r| r.ms()));
    r.boolean("long_poll", (!req).then(|| i.long_poll()));
    r.int("throttle_time_ms", i.throttle_time_ms.map(i64::from));
    r.error(req, i.error_codes.first().copied().unwrap_or(0));
    r.key("error_codes");
    r.0.push(b'[');
    for (k, c) in i.error_codes.iter().enumerate() {
        if k > 0 {
            r.0.push(b',');
        }
        json::i64(r.0, i64::from(*c));
    }
    r.0.push(b']');
    r.key("topics");
    r.0.push(b'[');
    for (k, t) in i.topics.iter().enumerate() {
        if k > 0 {
            r.0.push(b',');
        }
        json::str(r.0, t);
    }
    r.0.push(b']');
    r.opt_str("decode_error", i.decode_error.as_deref());
    r.end();
}

/// What a message places at one topic partition: a `partitions` row.
#[derive(Debug, Default)]
struct PartRow {
    error: i16,
    fetch_offset: Option<i64>,
    high_watermark: Option<i64>,
    last_stable_offset: Option<i64>,
    log_start_offset: Option<i64>,
    committed_offset: Option<i64>,
    sets: i64,
    bytes: i64,
    batches: i64,
    records: i64,
    partial: i64,
    /// The batches' codec; `mixed` when they differ.
    codec: Option<&'static str>,
    compressed: i64,
    decompressed: i64,
    first_offset: Option<i64>,
    last_offset: Option<i64>,
    /// Milliseconds since the epoch.
    max_timestamp: Option<i64>,
}

/// The row of (`topic`, `partition`), made if new; none without a partition.
fn part<'p>(
    parts: &'p mut BTreeMap<(Option<String>, i32), PartRow>,
    topic: Option<Cow<'_, str>>,
    partition: Option<i32>,
) -> Option<&'p mut PartRow> {
    let key = (topic.map(Cow::into_owned), partition?);
    Some(parts.entry(key).or_default())
}

/// Requests remembered until their response, at most.
const MAX_PENDING: usize = 65_536;

/// Connections whose Community ID is kept, at most (at `stream % IDS`).
const IDS: usize = 1024;

/// What a request leaves for its response's rows.
#[derive(Debug, Default)]
struct Pending {
    client_id: Option<String>,
    /// A Fetch request's one topic.
    topic: Option<String>,
}

/// The rows of both tables, message by message, in capture order
/// ([`TableRows::message`]).
///
/// A message's `partitions` rows are read from its facts as `stats` reads
/// them (its summary scan, or its tree where the scan could not place
/// them): each record set, placed offset (`FetchOffset`, `HighWatermark`,
/// `LastStableOffset`, `LogStartOffset`, `CommittedOffset`) and non-zero
/// error code at a partition makes or fills that partition's row. Topic
/// ids are named by what earlier responses taught ([`TopicNames`]); a
/// Fetch response's record set that names no topic takes its request's
/// one topic, as `stats` does. A response's rows carry its request's
/// client id. Memory: the topic names, the requests awaiting their
/// response (at most [`MAX_PENDING`]) and the Community IDs of [`IDS`]
/// connections.
#[derive(Debug)]
pub struct TableRows {
    topics: TopicNames,
    pending: BTreeMap<u64, Pending>,
    ids: Vec<Option<(u64, String)>>,
}

impl Default for TableRows {
    fn default() -> TableRows {
        TableRows {
            topics: TopicNames::default(),
            pending: BTreeMap::new(),
            ids: vec![None; IDS],
        }
    }
}

impl TableRows {
    /// No topic names known yet.
    pub fn new() -> TableRows {
        TableRows::default()
    }

    /// The rows of message `m`, from capture `capture`: its `messages` row,
    /// then its `partitions` rows in (topic, partition) order, each a JSON
    /// object and a newline, appended to `out`. `m` needs its decoded
    /// summary or tree for its partitions (the analyzer set up with
    /// [`crate::stats::Stats::analyzer_config`]); without one it has none.
    pub fn message(&mut self, out: &mut Vec<u8>, m: &MessageRecord, capture: &str) {
        let i = &m.info;
        let slot = &mut self.ids[(i.stream % IDS as u64) as usize];
        if slot.as_ref().is_none_or(|(s, _)| *s != i.stream) {
            *slot = Some((i.stream, crate::flow::community_id::tcp(i.client, i.broker)));
        }
        let id = slot.as_ref().map_or("", |(_, id)| id.as_str());
        let req = i.kind == Kind::Request;
        let fetch = matches!(i.api_key, Some(ApiKey::FETCH | ApiKey::SHARE_FETCH));
        let d = m.decoded.as_ref();
        let mut answered = None;
        if req {
            if i.expects_response {
                let topic = d
                    .filter(|_| fetch)
                    .and_then(|d| facts::single_topic(d, &self.topics));
                let client_id = i.client_id.clone();
                self.pending.insert(i.index, Pending { client_id, topic });
                if self.pending.len() > MAX_PENDING {
                    self.pending.pop_first();
                }
            }
        } else {
            if let Some(d) = d {
                self.topics.learn(i.api_key, &d.root);
            }
            let peer = i.peer.filter(|_| i.paired);
            answered = peer.and_then(|p| self.pending.remove(&p));
        }
        let answered = answered.unwrap_or_default();
        let client_id = match req {
            true => i.client_id.as_deref(),
            false => answered.client_id.as_deref(),
        };
        message_row(out, i, capture, id, client_id);
        out.push(b'\n');
        let Some(d) = d else {
            return;
        };
        let fallback = answered.topic.filter(|_| fetch);
        let mut parts: BTreeMap<(Option<String>, i32), PartRow> = BTreeMap::new();
        let topics = &self.topics;
        facts::each_set(d, topics, |s| {
            let topic = s.topic.clone().or(fallback.as_deref().map(Cow::Borrowed));
            let Some(r) = part(&mut parts, topic, s.partition) else {
                return;
            };
            let c = &s.counts;
            r.sets += 1;
            r.bytes += i64::try_from(s.bytes).unwrap_or(i64::MAX);
            r.batches += c.batches as i64;
            r.records += c.records as i64;
            r.partial += c.partial as i64;
            r.compressed += c.compressed as i64;
            r.decompressed += c.decompressed as i64;
            for (name, _) in c.codecs.iter() {
                r.codec = match r.codec {
                    None => Some(name),
                    Some(n) if n == name => Some(n),
                    Some(_) => Some("mixed"),
                };
            }
            let min = |a: Option<i64>, b: i64| Some(a.map_or(b, |a| a.min(b)));
            let max = |a: Option<i64>, b: i64| Some(a.map_or(b, |a| a.max(b)));
            for h in &c.heads {
                if h.base_offset >= 0 {
                    r.first_offset = min(r.first_offset, h.base_offset);
                    r.last_offset = max(r.last_offset, BatchHead::last_offset(h));
                }
                if h.max_timestamp >= 0 {
                    r.max_timestamp = max(r.max_timestamp, h.max_timestamp);
                }
            }
        });
        facts::each_int(d, topics, |n| {
            let Some(r) = part(&mut parts, n.topic, n.partition) else {
                return;
            };
            let slot = match n.name {
                "FetchOffset" => &mut r.fetch_offset,
                "HighWatermark" => &mut r.high_watermark,
                "LastStableOffset" => &mut r.last_stable_offset,
                "LogStartOffset" => &mut r.log_start_offset,
                "CommittedOffset" => &mut r.committed_offset,
                _ => return,
            };
            *slot = Some(n.value);
        });
        if !req {
            let errors = match &d.facts {
                Some(x) => facts::scanned_errors(x, topics),
                None => facts::errors(&d.root, topics),
            };
            for e in errors {
                if let Some(r) = part(&mut parts, e.place.topic.map(Cow::Owned), e.place.partition)
                {
                    if r.error == 0 {
                        r.error = e.code;
                    }
                }
            }
        }
        for ((topic, partition), p) in parts {
            let mut r = Row::start(out, "partitions", i);
            r.message_head(i, capture);
            r.int("stream", i64::try_from(i.stream).ok());
            r.str("community_id", id);
            r.api(i);
            r.opt_str("client_id", client_id);
            r.opt_str("topic", topic.as_deref());
            r.int("partition", Some(partition.into()));
            r.error(req, p.error);
            r.int("fetch_offset", p.fetch_offset);
            r.int("high_watermark", p.high_watermark);
            r.int("last_stable_offset", p.last_stable_offset);
            r.int("log_start_offset", p.log_start_offset);
            r.int("committed_offset", p.committed_offset);
            r.int("record_sets", Some(p.sets));
            r.int("bytes", Some(p.bytes));
            r.int("batches", Some(p.batches));
            r.int("records", Some(p.records));
            r.int("partial_batches", Some(p.partial));
            r.opt_str("codec", p.codec);
            r.int("compressed_bytes", Some(p.compressed));
            r.int("decompressed_bytes", Some(p.decompressed));
            r.int("first_offset", p.first_offset);
            r.int("last_offset", p.last_offset);
            match p.max_timestamp {
                Some(ms) => {
                    let nanos = (ms.rem_euclid(1000) * 1_000_000) as u32;
                    r.str(
                        "max_timestamp",
                        &rfc3339(Timestamp::new(ms.div_euclid(1000), nanos)),
                    );
                }
                None => r.null("max_timestamp"),
            }
            r.end();
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_days_and_rfc3339() {
        let ts = Timestamp::new(1_795_953_953, 431_032_000);
        assert_eq!(date(ts), "2026-11-29");
        assert_eq!(rfc3339(ts), "2026-11-29T12:05:53.431032Z");
        let ns = Timestamp::new(1_795_953_953, 431_032_999);
        assert_eq!(rfc3339(ns), "2026-11-29T12:05:53.431032Z");
        assert_eq!(
            rfc3339(Timestamp::new(-1, 5_000)),
            "1969-12-31T23:59:59.000005Z"
        );
    }
}
