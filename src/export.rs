//! The rows of `kafkashark export`: the `messages` table, one row per Kafka
//! message, its columns typed ([`MESSAGES`], schema version
//! [`SCHEMA_VERSION`]), and each row written as one JSON object
//! ([`message_row`]): what `--format jsonl` writes, and what the Parquet
//! and CSV writers read and type by the schema (docs/export.md).
//!
//! A row carries its partition keys first, `date` (the UTC day of `ts`,
//! `YYYY-MM-DD`) and `api` (the api's name, `unknown` without one): the
//! writers put rows in `messages/date=…/api=…/` and leave the keys out of
//! the files (they are in the path, as hive partitioning has them).

use std::fmt::Write as _;

use crate::analyzer::MessageInfo;
use crate::kafka::decode::Kind;
use crate::kafka::errors::error_name;
use crate::kafka::records::civil_from_days;
use crate::kafka::tree::json;
use crate::vocab::Timestamp;

/// The version of the tables' schema: raised when a column changes or goes
/// (a column added at the end keeps it).
pub const SCHEMA_VERSION: u32 = 1;

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
    /// A UTC time to the nanosecond (JSON: RFC 3339 text).
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

use ColumnType as T;

/// The `messages` table's columns, in the order of the files (the
/// partition keys are not among them).
pub const MESSAGES: &[Column] = &[
    col(
        "capture",
        T::Dict,
        "the capture file it came from, as given",
    ),
    col(
        "ts",
        T::Timestamp,
        "time of the frame that completed it (UTC)",
    ),
    col(
        "frame",
        T::I64,
        "frame that completed it (across the captures read)",
    ),
    col("first_frame", T::I64, "frame that carried its first byte"),
    col(
        "stream",
        T::I64,
        "connection number, in order of first appearance",
    ),
    col(
        "community_id",
        T::Str,
        "the connection's Community ID (v1, seed 0)",
    ),
    col("client", T::Str, "client ip:port"),
    col("broker", T::Str, "broker ip:port"),
    col("kind", T::Dict, "request or response"),
    col("api_key", T::I16, "api key (a response: its request's)"),
    col("api_name", T::Dict, "api name"),
    col("api_version", T::I16, "api version"),
    col("correlation_id", T::I32, "correlation id"),
    col(
        "length",
        T::I32,
        "the size field: bytes after the 4-byte prefix",
    ),
    col(
        "client_id",
        T::Str,
        "the request's client id (a response: its request's)",
    ),
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
    col("error_name", T::Dict, "the name of error_code"),
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

/// The UTC day of `ts`: `YYYY-MM-DD`.
pub fn date(ts: Timestamp) -> String {
    let (y, m, d) = civil_from_days(ts.secs.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `ts` in RFC 3339, UTC, to the nanosecond: `2026-12-01T09:30:00.123456789Z`.
pub fn rfc3339(ts: Timestamp) -> String {
    let secs = ts.secs.rem_euclid(86_400);
    let mut s = date(ts);
    let _ = write!(
        s,
        "T{:02}:{:02}:{:02}.{:09}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        ts.nanos
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

/// Appends the row of message `i` from capture `capture`, on connection
/// `community_id`, as a JSON object (no newline): the partition keys, then
/// [`MESSAGES`] in order, `null` where a column has no value.
pub fn message_row(out: &mut Vec<u8>, i: &MessageInfo, capture: &str, community_id: &str) {
    let req = i.kind == Kind::Request;
    // A key, after a comma unless it is the object's first.
    let key = |out: &mut Vec<u8>, k: &str| {
        if out.last() != Some(&b'{') {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
    };
    let opt = |out: &mut Vec<u8>, v: Option<i64>| match v {
        Some(v) => json::i64(out, v),
        None => out.extend_from_slice(b"null"),
    };
    let optf = |out: &mut Vec<u8>, v: Option<f64>| match v {
        Some(v) => json::f64(out, v),
        None => out.extend_from_slice(b"null"),
    };
    let boolean = |out: &mut Vec<u8>, v: Option<bool>| {
        out.extend_from_slice(match v {
            Some(true) => b"true",
            Some(false) => b"false",
            None => b"null",
        })
    };
    let ms = |ns: Option<u64>| ns.map(|n| n as f64 / 1e6);
    out.push(b'{');
    key(out, "date");
    json::str(out, &date(i.ts));
    key(out, "api");
    json::str(out, &api_key_name(i));
    key(out, "capture");
    json::str(out, capture);
    key(out, "ts");
    json::str(out, &rfc3339(i.ts));
    key(out, "frame");
    json::u64(out, i.frame);
    key(out, "first_frame");
    json::u64(out, i.first_frame);
    key(out, "stream");
    json::u64(out, i.stream);
    key(out, "community_id");
    json::str(out, community_id);
    key(out, "client");
    json::str(out, &i.client.to_string());
    key(out, "broker");
    json::str(out, &i.broker.to_string());
    key(out, "kind");
    json::str(out, if req { "request" } else { "response" });
    key(out, "api_key");
    opt(out, i.api_key.map(|k| i64::from(k.0)));
    key(out, "api_name");
    match i.api_name() {
        Some(n) => json::str(out, n),
        None => out.extend_from_slice(b"null"),
    }
    key(out, "api_version");
    opt(out, i.api_version.map(i64::from));
    key(out, "correlation_id");
    opt(out, i.correlation_id.map(i64::from));
    key(out, "length");
    json::i64(out, i.length.into());
    key(out, "client_id");
    match &i.client_id {
        Some(c) => json::str(out, c),
        None => out.extend_from_slice(b"null"),
    }
    key(out, "paired");
    boolean(out, Some(i.paired));
    key(out, "expects_response");
    boolean(out, req.then_some(i.expects_response));
    key(out, "latency_ms");
    optf(out, i.latency_ms());
    key(out, "hol_wait_ms");
    optf(out, ms(i.hol_wait_ns));
    key(out, "service_ms");
    optf(out, ms(i.service_ns()));
    key(out, "rtt_ms");
    optf(out, i.rtt.map(|r| r.ms()));
    key(out, "long_poll");
    boolean(out, (!req).then(|| i.long_poll()));
    key(out, "throttle_time_ms");
    opt(out, i.throttle_time_ms.map(i64::from));
    let first = i.error_codes.first().copied().unwrap_or(0);
    key(out, "error_code");
    opt(out, (!req).then_some(i64::from(first)));
    key(out, "error_name");
    if req {
        out.extend_from_slice(b"null");
    } else {
        json::str(
            out,
            &error_name(first).map_or(first.to_string(), str::to_string),
        );
    }
    key(out, "error_codes");
    out.push(b'[');
    for (k, c) in i.error_codes.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        json::i64(out, i64::from(*c));
    }
    out.push(b']');
    key(out, "topics");
    out.push(b'[');
    for (k, t) in i.topics.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        json::str(out, t);
    }
    out.push(b']');
    key(out, "decode_error");
    match &i.decode_error {
        Some(e) => json::str(out, e),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_days_and_rfc3339() {
        let ts = Timestamp::new(1_795_953_953, 431_032_000);
        assert_eq!(date(ts), "2026-11-29");
        assert_eq!(rfc3339(ts), "2026-11-29T12:05:53.431032000Z");
        assert_eq!(
            rfc3339(Timestamp::new(-1, 5)),
            "1969-12-31T23:59:59.000000005Z"
        );
    }
}
