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

use crate::analyzer::{MessageInfo, MessageRecord};
use crate::kafka::decode::Kind;
use crate::kafka::errors::error_name;
use crate::kafka::records::{iso8601_bytes, second_text, BatchHead};
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
    col(
        "also_capture",
        T::Dict,
        "the other capture point that saw the message, when the connection was read from two files",
    ),
    col(
        "also_ts",
        T::Timestamp,
        "time of the frame that completed it there, on the first file's clock (UTC)",
    ),
    col("also_frame", T::I64, "frame that completed it there"),
    col(
        "also_first_frame",
        T::I64,
        "frame that carried its first byte there",
    ),
    col(
        "also_latency_ms",
        T::F64,
        "a response: its latency there, when that point saw the request too",
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

/// The last second [`rfc3339`] writes: 9999-12-31T23:59:59Z.
const MAX_SECS: i64 = 253_402_300_799;

/// `ts` in RFC 3339, UTC, to the microsecond (the nanoseconds of a pcapng
/// clock cut), `2026-12-01T09:30:00.123456Z`, when it falls between 1970
/// and the year 9999 (anything else is no wall-clock time: `None`). The
/// date and time are the record timestamps' own writer's
/// (`records::second_text`).
pub fn rfc3339(ts: Timestamp) -> Option<String> {
    rfc3339_bytes(ts).and_then(|t| String::from_utf8(t.to_vec()).ok())
}

/// [`rfc3339`]'s text as bytes, without an allocation.
fn rfc3339_bytes(ts: Timestamp) -> Option<[u8; 27]> {
    if !(0..=MAX_SECS).contains(&ts.secs) {
        return None;
    }
    let mut t = [0u8; 27];
    let (head, tail) = t.split_at_mut(20);
    head.copy_from_slice(&second_text(ts.secs));
    let mut us = ts.nanos / 1000;
    for c in tail.iter_mut().take(6).rev() {
        *c = b'0' + (us % 10) as u8;
        us /= 10;
    }
    if let Some(z) = tail.last_mut() {
        *z = b'Z';
    }
    Some(t)
}

/// What every row of one message starts with: its partition keys and time,
/// made once for the message's rows.
struct Head<'a> {
    /// RFC 3339 of the message's time (none outside 1970–9999).
    ts: Option<[u8; 27]>,
    /// The `api` partition key: the api's name, `api-N` for a key this
    /// build does not name, `unknown` without one.
    api: Cow<'static, str>,
    capture: &'a str,
}

impl<'a> Head<'a> {
    fn of(i: &MessageInfo, capture: &'a str) -> Head<'a> {
        let api = match (i.api_name(), i.api_key) {
            (Some(n), _) => Cow::Borrowed(n),
            (None, Some(k)) => Cow::Owned(format!("api-{}", k.0)),
            (None, None) => Cow::Borrowed("unknown"),
        };
        Head {
            ts: rfc3339_bytes(i.ts),
            api,
            capture,
        }
    }

    /// The `date` partition key: `YYYY-MM-DD` (UTC), `unknown` outside
    /// 1970–9999.
    fn date(&self) -> &str {
        (self.ts.as_ref())
            .and_then(|t| std::str::from_utf8(t.get(..10)?).ok())
            .unwrap_or("unknown")
    }
}

/// A row being written: one JSON object, its table first.
struct Row<'a>(&'a mut Vec<u8>);

impl<'a> Row<'a> {
    /// Opens a row of `table` with its message's partition keys.
    fn start(out: &'a mut Vec<u8>, table: &str, head: &Head<'_>) -> Row<'a> {
        out.extend_from_slice(b"{\"table\":");
        json::str(out, table);
        let mut r = Row(out);
        r.str("date", head.date());
        r.str("api", &head.api);
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

    /// Key `k` with the text `v` writes, quoted: text that needs no
    /// escaping (an address), written without a string made for it.
    fn display(&mut self, k: &str, v: impl std::fmt::Display) {
        use std::io::Write as _;
        self.key(k);
        self.0.push(b'"');
        let _ = write!(self.0, "{v}");
        self.0.push(b'"');
    }

    /// Key `k` with the text `v` quoted, or `null`: text that needs no
    /// escaping (a time written by [`rfc3339_bytes`] or `iso8601_bytes`).
    fn plain(&mut self, k: &str, v: Option<&[u8]>) {
        self.opt(k, v, |out, t| {
            out.push(b'"');
            out.extend_from_slice(t);
            out.push(b'"');
        });
    }

    /// The columns every table starts with, for message `i`.
    fn message_head(&mut self, i: &MessageInfo, head: &Head<'_>) {
        self.str("capture", head.capture);
        self.plain("ts", head.ts.as_ref().map(|t| &t[..]));
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

/// Appends the row of message `i` (its [`Head`]), on connection
/// `community_id`, sent by `client_id` (a response: its request's), as a
/// JSON object (no newline): its table, the partition keys, then
/// [`MESSAGES`] in order, `null` where a column has no value.
fn message_row(
    out: &mut Vec<u8>,
    i: &MessageInfo,
    head: &Head<'_>,
    community_id: &str,
    client_id: Option<&str>,
    captures: &[String],
) {
    let req = i.kind == Kind::Request;
    let ms = |ns: Option<u64>| ns.map(|n| n as f64 / 1e6);
    let mut r = Row::start(out, "messages", head);
    r.message_head(i, head);
    r.int("first_frame", i64::try_from(i.first_frame).ok());
    r.int("stream", i64::try_from(i.stream).ok());
    r.str("community_id", community_id);
    r.display("client", i.client);
    r.display("broker", i.broker);
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
    let also = i.also.as_deref();
    r.opt_str(
        "also_capture",
        also.and_then(|a| captures.get(usize::from(a.capture)))
            .map(String::as_str),
    );
    let also_ts = also.and_then(|a| rfc3339_bytes(a.ts));
    r.plain("also_ts", also_ts.as_ref().map(|t| &t[..]));
    r.int("also_frame", also.and_then(|a| i64::try_from(a.frame).ok()));
    r.int(
        "also_first_frame",
        also.and_then(|a| i64::try_from(a.first_frame).ok()),
    );
    r.float("also_latency_ms", ms(also.and_then(|a| a.latency_ns)));
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

/// A message's rows by topic, then partition (a topic's name is copied once,
/// when its first row is made).
#[derive(Default)]
struct Parts {
    named: BTreeMap<String, BTreeMap<i32, PartRow>>,
    unnamed: BTreeMap<i32, PartRow>,
}

impl Parts {
    /// The row of (`topic`, `partition`), made if new; none without a partition.
    fn at(&mut self, topic: Option<&str>, partition: Option<i32>) -> Option<&mut PartRow> {
        let p = partition?;
        let rows = match topic {
            None => &mut self.unnamed,
            Some(t) => {
                if !self.named.contains_key(t) {
                    self.named.insert(t.to_string(), BTreeMap::new());
                }
                self.named.get_mut(t)?
            }
        };
        Some(rows.entry(p).or_default())
    }

    /// Every row, in (topic, partition) order, those without a topic first.
    fn into_rows(self) -> impl Iterator<Item = (Option<String>, i32, PartRow)> {
        let unnamed = self.unnamed.into_iter().map(|(p, r)| (None, p, r));
        let named = (self.named.into_iter())
            .flat_map(|(t, rows)| rows.into_iter().map(move |(p, r)| (Some(t.clone()), p, r)));
        unnamed.chain(named)
    }
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
    topic: Option<std::sync::Arc<str>>,
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

    /// The rows of message `m`, from the capture of `captures` it names
    /// (the files read, in order; a message seen at two capture points
    /// names the other one too): its `messages` row,
    /// then its `partitions` rows in (topic, partition) order, each a JSON
    /// object and a newline, appended to `out`. `m` needs its decoded
    /// summary or tree for its partitions (the analyzer set up with
    /// [`crate::stats::Stats::analyzer_config`]); without one it has none.
    pub fn message(&mut self, out: &mut Vec<u8>, m: &MessageRecord, captures: &[String]) {
        let i = &m.info;
        let capture = captures
            .get(usize::from(i.capture))
            .map_or("", String::as_str);
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
        let head = Head::of(i, capture);
        message_row(out, i, &head, id, client_id, captures);
        out.push(b'\n');
        let Some(d) = d else {
            return;
        };
        let fallback = answered.topic.filter(|_| fetch);
        let mut parts = Parts::default();
        let topics = &self.topics;
        facts::each_set(d, topics, |s| {
            let topic = s.topic.as_deref().or(fallback.as_deref());
            let Some(r) = parts.at(topic, s.partition) else {
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
            let Some(r) = parts.at(n.topic.as_deref(), n.partition) else {
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
                if let Some(r) = parts.at(e.place.topic.as_deref(), e.place.partition) {
                    if r.error == 0 {
                        r.error = e.code;
                    }
                }
            }
        }
        for (topic, partition, p) in parts.into_rows() {
            let mut r = Row::start(out, "partitions", &head);
            r.message_head(i, &head);
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
            // A record time's own text (`iso8601_bytes`: RFC 3339 to the
            // millisecond), none outside 1970–9999.
            let at = p.max_timestamp.and_then(iso8601_bytes);
            r.plain("max_timestamp", at.as_ref().map(|t| &t[..]));
            r.end();
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_to_the_microsecond_in_1970_to_9999() {
        let at = |secs, nanos| rfc3339(Timestamp::new(secs, nanos));
        let ts = Timestamp::new(1_795_953_953, 431_032_999);
        assert_eq!(
            at(ts.secs, ts.nanos).unwrap(),
            "2026-11-29T12:05:53.431032Z"
        );
        assert_eq!(at(0, 5_000).unwrap(), "1970-01-01T00:00:00.000005Z");
        assert_eq!(at(MAX_SECS, 0).unwrap(), "9999-12-31T23:59:59.000000Z");
        assert_eq!(at(-1, 0), None);
        assert_eq!(at(MAX_SECS + 1, 0), None);
        // The date key is the time's day, `unknown` without a time.
        let head = |secs| Head {
            ts: rfc3339_bytes(Timestamp::new(secs, 0)),
            api: Cow::Borrowed("Fetch"),
            capture: "",
        };
        assert_eq!(head(ts.secs).date(), "2026-11-29");
        assert_eq!(head(-5).date(), "unknown");
    }
}
