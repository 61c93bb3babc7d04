//! The report: what `kafkashark stats --format json` prints (the DESIGN.md
//! contract: `apis`, `clients`, `groups`, `topics`, `hints`, `slow`,
//! `throttle`, `errors`, …). Plain data, built by [`super::Stats::report`].
//!
//! Invariants: every list is sorted deterministically (by key, or by the
//! figure it ranks), so the same capture gives the same JSON; times are
//! milliseconds (`*_ms`) or epoch seconds (`ts`, `second`); `frame` numbers are
//! the pcap's, 1-based.

use std::collections::BTreeMap;

use serde::Serialize;

use super::lag::LagReport;

pub use super::hist::{FetchSplitMs, LatencyMs, PartsMs};

/// Everything `stats` reports.
#[derive(Clone, Debug, Serialize)]
pub struct StatsReport {
    /// Totals over the whole input.
    pub summary: Summary,
    /// One entry per api key, by key.
    pub apis: Vec<ApiReport>,
    /// The client inventory.
    pub clients: Vec<ClientReport>,
    /// Latency per broker endpoint.
    pub brokers: Vec<BrokerReport>,
    /// Latency per connection.
    pub connections: Vec<ConnectionReport>,
    /// Consumer groups: rebalance timelines and KIP-848 heartbeats.
    pub groups: Vec<GroupReport>,
    /// Traffic shape per topic and partition.
    pub topics: Vec<TopicReport>,
    /// Produce `Acks` settings seen.
    pub acks: Vec<AcksReport>,
    /// Expert hints about Kafka behaviour, each with its evidence frames.
    pub hints: Vec<Hint>,
    /// The slowest exchanges by service time, slowest first.
    pub slow: Vec<SlowExchange>,
    /// Long-poll Fetches not ranked in `slow` (0 when they were).
    pub slow_long_polls_left_out: u64,
    /// Throttling (ThrottleTimeMs > 0), apart from latency.
    pub throttle: ThrottleReport,
    /// Error codes with where they were found.
    pub errors: Vec<ErrorReport>,
    /// Record-level Produce errors (BatchIndex, KIP-467).
    pub record_errors: Vec<RecordErrorReport>,
    /// Messages that decoded with a warning (bytes after the body), by api
    /// version and warning.
    pub warnings: Vec<WarningReport>,
    /// Facts dropped because a bounded table was full.
    pub overflow: Overflow,
    /// Consumer lag per consumer, topic and partition, and per group.
    pub lag: LagReport,
    /// Record age, produce → fetch delivery and producer batching.
    pub delivery: super::delivery::DeliveryReports,
    /// Connections whose segments the capture put out of order, by stream
    /// (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reordered: Vec<ReorderedReport>,
    /// TLS connections: handshake, keys, alerts, bytes (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tls: Vec<super::tls::TlsReport>,
    /// Captures read together that saw the same connections: their clocks,
    /// and latency as each point saw it (absent for one capture point).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_points: Option<super::points::PointsReport>,
    /// The counts and histograms that `stats --merge` adds up across
    /// reports (docs/stats.md, "Merging reports").
    pub merge: super::merge::Mergeable,
}

/// A connection with late segments: segments that arrived after data beyond
/// them, or after the peer's ACK covering them (reassembled in sequence order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReorderedReport {
    /// Connection index.
    pub stream: u64,
    /// Late segments.
    pub late_segments: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The part of a [`StatsReport`] that may be made beside the rest
/// ([`super::Stats::report_side`]): the brokers, the connections, the
/// record age and delivery sections and the lag section.
#[derive(Clone, Debug, Default)]
pub struct ReportSide {
    /// Latency per broker endpoint.
    pub brokers: Vec<BrokerReport>,
    /// Latency per connection.
    pub connections: Vec<ConnectionReport>,
    /// The brokers' timings in mergeable form, by broker.
    pub broker_timings: BTreeMap<String, super::TimingData>,
    /// Record age, produce → fetch delivery and producer batching.
    pub delivery: super::delivery::DeliveryReports,
    /// Consumer lag.
    pub lag: LagReport,
}

impl StatsReport {
    /// This report with `side`'s brokers, connections, delivery and lag.
    pub fn with_side(mut self, side: ReportSide) -> StatsReport {
        self.merge.brokers = super::merge::Mergeable::brokers(&side.brokers, &side.broker_timings);
        self.brokers = side.brokers;
        self.connections = side.connections;
        self.delivery = side.delivery;
        self.lag = side.lag;
        self
    }
}

/// Totals over the whole input.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Kafka messages seen.
    pub messages: u64,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Messages whose api is unknown (raw SASL tokens, responses without request).
    pub without_api: u64,
    /// Requests reported never answered.
    pub unanswered: u64,
    /// Requests still waiting for their response when the report was made.
    pub in_flight: u64,
    /// Epoch seconds of the first message.
    pub first_ts: Option<f64>,
    /// Epoch seconds of the last message.
    pub last_ts: Option<f64>,
    /// Late segments over all connections (absent when none): the capture
    /// put them after data beyond them or after the ACK covering them.
    #[serde(skip_serializing_if = "is_zero")]
    pub late_segments: u64,
}

/// Throttle totals of a set of responses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThrottleMs {
    /// Largest ThrottleTimeMs.
    pub max: i64,
    /// Sum of ThrottleTimeMs.
    pub sum: i64,
}

/// One api key.
#[derive(Clone, Debug, Serialize)]
pub struct ApiReport {
    /// The api key.
    pub api_key: i16,
    /// Its name, when known.
    pub api_name: Option<&'static str>,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// `unanswered + responses_without_request`.
    pub unpaired: u64,
    /// Requests that expected a response and got none.
    pub unanswered: u64,
    /// Responses whose request was not captured.
    pub responses_without_request: u64,
    /// Latency of paired exchanges.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls of those exchanges.
    #[serde(flatten)]
    pub parts: PartsMs,
    /// Fetch and ShareFetch: the exchanges by how they ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch: Option<FetchSplitMs>,
    /// Responses with ThrottleTimeMs > 0.
    pub throttled: u64,
    /// Throttle totals over those responses.
    pub throttle_time_ms: ThrottleMs,
    /// Error name → count, every level of the response body.
    pub errors: BTreeMap<String, u64>,
    /// Per version.
    pub versions: Vec<VersionReport>,
}

/// One (api key, version).
#[derive(Clone, Debug, Serialize)]
pub struct VersionReport {
    /// The version.
    pub version: i16,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Latency of paired exchanges.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls of those exchanges.
    #[serde(flatten)]
    pub parts: PartsMs,
    /// Fetch and ShareFetch: the exchanges by how they ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch: Option<FetchSplitMs>,
    /// The version was removed in Kafka 4.0 (KIP-896).
    pub removed_in_kafka_4: bool,
}

/// One client: a client id together with the software its connections named.
#[derive(Clone, Debug, Serialize)]
pub struct ClientReport {
    /// The request header's client id.
    pub client_id: Option<String>,
    /// ClientSoftwareName from ApiVersions v3+.
    pub software_name: Option<String>,
    /// ClientSoftwareVersion from ApiVersions v3+.
    pub software_version: Option<String>,
    /// Client endpoints (`ip:port`) it used.
    pub addresses: Vec<String>,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Requests never answered.
    pub unanswered: u64,
    /// Non-zero error codes in its responses.
    pub errors: u64,
    /// Latency of its exchanges.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls of those exchanges.
    #[serde(flatten)]
    pub parts: PartsMs,
    /// Throttled responses.
    pub throttled: u64,
    /// Throttle totals.
    pub throttle_time_ms: ThrottleMs,
    /// Every (api, version) it used.
    pub apis: Vec<ClientApi>,
    /// Produce `Acks` value → requests.
    pub acks: BTreeMap<String, u64>,
    /// Produce record-set bytes.
    pub produce_bytes: u64,
    /// Of those, bytes in uncompressed batches.
    pub produce_uncompressed_bytes: u64,
    /// Median network round trip of its connections (those of its
    /// `addresses` with one known), in milliseconds.
    pub rtt_ms: Option<f64>,
}

/// An (api, version) a client used.
#[derive(Clone, Debug, Serialize)]
pub struct ClientApi {
    /// Api key.
    pub api_key: i16,
    /// Api name.
    pub api_name: Option<&'static str>,
    /// Version.
    pub version: i16,
    /// Requests.
    pub requests: u64,
    /// First request's frame.
    pub first_frame: u64,
    /// The version was removed in Kafka 4.0.
    pub removed_in_kafka_4: bool,
}

/// Latency per broker.
#[derive(Clone, Debug, Serialize)]
pub struct BrokerReport {
    /// `ip:port`.
    pub broker: String,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Latency.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls of those exchanges.
    #[serde(flatten)]
    pub parts: PartsMs,
    /// Median network round trip of its connections with one known, in milliseconds.
    pub rtt_ms: Option<f64>,
}

/// Latency per connection.
#[derive(Clone, Debug, Serialize)]
pub struct ConnectionReport {
    /// Connection index.
    pub stream: u64,
    /// Client `ip:port`.
    pub client: String,
    /// Broker `ip:port`.
    pub broker: String,
    /// Its Community ID (the flow hash Zeek, Suricata and Wireshark write).
    pub community_id: String,
    /// Client id of its last request.
    pub client_id: Option<String>,
    /// Requests.
    pub requests: u64,
    /// Responses.
    pub responses: u64,
    /// Latency.
    pub latency_ms: Option<LatencyMs>,
    /// Service time, head-of-line waits and long-polls of those exchanges.
    #[serde(flatten)]
    pub parts: PartsMs,
    /// Network round trip, in milliseconds (the last known at the report).
    pub rtt_ms: Option<f64>,
    /// How it was measured: `handshake` or `data_ack`.
    pub rtt_from: Option<&'static str>,
}

/// A consumer group.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// GroupId.
    pub group_id: String,
    /// ProtocolType (`consumer`, `connect`, …).
    pub protocol_type: Option<String>,
    /// Assignment protocols offered in JoinGroup requests.
    pub protocols: Vec<String>,
    /// Member ids seen.
    pub members: Vec<String>,
    /// JoinGroup requests.
    pub joins: u64,
    /// SyncGroup requests.
    pub syncs: u64,
    /// Heartbeat requests.
    pub heartbeats: u64,
    /// LeaveGroup requests.
    pub leaves: u64,
    /// Error name → count in this group's responses.
    pub errors: BTreeMap<String, u64>,
    /// Generations, in order of first appearance.
    pub generations: Vec<GenerationReport>,
    /// KIP-848 ConsumerGroupHeartbeat members.
    pub heartbeat_members: Vec<HeartbeatMember>,
}

/// One generation of a classic group.
#[derive(Clone, Debug, Serialize)]
pub struct GenerationReport {
    /// GenerationId from JoinGroup responses.
    pub generation_id: i32,
    /// ProtocolName chosen.
    pub protocol_name: Option<String>,
    /// Leader member id.
    pub leader: Option<String>,
    /// Members that got a JoinGroup response for this generation.
    pub members: Vec<String>,
    /// Members the leader's response listed.
    pub listed_members: u64,
    /// Epoch seconds of the first JoinGroup response.
    pub ts: f64,
    /// First JoinGroup request frame of the round that led here.
    pub join_request_frame: Option<u64>,
    /// First JoinGroup response frame.
    pub join_response_frame: u64,
    /// SyncGroup response frames (successful ones).
    pub sync_response_frames: Vec<u64>,
    /// Longest member rebalance: JoinGroup request → successful SyncGroup response.
    pub rebalance_ms: Option<f64>,
}

/// A KIP-848 member seen in ConsumerGroupHeartbeat responses.
#[derive(Clone, Debug, Serialize)]
pub struct HeartbeatMember {
    /// MemberId.
    pub member_id: String,
    /// Distinct successive MemberEpochs.
    pub epochs: Vec<i32>,
    /// The last assignment received: topic → partitions.
    pub assignment: Option<Vec<TopicPartitions>>,
    /// Heartbeats answered.
    pub heartbeats: u64,
    /// First response frame.
    pub first_frame: u64,
    /// Last response frame.
    pub last_frame: u64,
}

/// A topic and its partitions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopicPartitions {
    /// Topic name (or id).
    pub topic: String,
    /// Partitions.
    pub partitions: Vec<i32>,
}

/// Traffic of one topic partition.
#[derive(Clone, Debug, Serialize)]
pub struct TopicReport {
    /// Topic name, or its id when the capture never named it.
    pub topic: Option<String>,
    /// Partition.
    pub partition: Option<i32>,
    /// Produce requests' record sets.
    pub produce: SideReport,
    /// Fetch responses' record sets.
    pub fetch: SideReport,
    /// Produce `Acks` value → requests that wrote here.
    pub acks: BTreeMap<String, u64>,
}

/// Record sets in one direction.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SideReport {
    /// `records` fields.
    pub record_sets: u64,
    /// Bytes of those fields (without their length prefixes).
    pub bytes: u64,
    /// RecordBatches and top-level legacy messages.
    pub batches: u64,
    /// Records.
    pub records: u64,
    /// records / batches.
    pub records_per_batch: Option<f64>,
    /// Batches cut at the end of a fetch response.
    pub partial_batches: u64,
    /// Codec → batches.
    pub codecs: BTreeMap<String, u64>,
    /// Compressed payload bytes of the compressed batches.
    pub compressed_bytes: u64,
    /// What they decompressed to.
    pub decompressed_bytes: u64,
    /// decompressed / compressed.
    pub compression_ratio: Option<f64>,
}

/// A Produce `Acks` value.
#[derive(Clone, Debug, Serialize)]
pub struct AcksReport {
    /// -1 (all), 0 (none), 1 (leader).
    pub acks: i16,
    /// Produce requests.
    pub requests: u64,
    /// Evidence frames.
    pub frames: Vec<u64>,
}

/// An expert hint.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hint {
    /// Which rule: `throttling`, `tiny_batches`, `no_compression`, `acks_0`,
    /// `mixed_versions`, `rebalance_loop`, `repeated_error`, `unanswered`.
    pub kind: &'static str,
    /// `warning` or `note`.
    pub severity: &'static str,
    /// What it means, in one line.
    pub message: String,
    /// Frames that show it.
    pub frames: Vec<u64>,
}

/// One of the slowest exchanges.
#[derive(Clone, Debug, Serialize)]
pub struct SlowExchange {
    /// Service time: latency less the head-of-line wait.
    pub service_ms: f64,
    /// Latency.
    pub latency_ms: f64,
    /// The part of the latency spent behind the connection's previous response.
    pub hol_wait_ms: f64,
    /// A Fetch that waited out its MaxWaitMs with nothing to return.
    pub long_poll: bool,
    /// Frame that completed the request.
    pub request_frame: Option<u64>,
    /// Frame carrying the response's first byte.
    pub response_first_frame: u64,
    /// Frame that completed the response.
    pub response_frame: u64,
    /// Api key.
    pub api_key: i16,
    /// Api name.
    pub api_name: Option<&'static str>,
    /// Api version.
    pub api_version: Option<i16>,
    /// Client id.
    pub client_id: Option<String>,
    /// Client software (`librdkafka 2.16.0`).
    pub software: Option<String>,
    /// Client `ip:port`.
    pub client: String,
    /// Broker `ip:port`.
    pub broker: String,
    /// Connection.
    pub stream: u64,
    /// The response's ThrottleTimeMs.
    pub throttle_time_ms: Option<i32>,
}

/// Throttling.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThrottleReport {
    /// Responses with ThrottleTimeMs > 0.
    pub throttled: u64,
    /// Sum of their ThrottleTimeMs.
    pub sum_ms: i64,
    /// Largest.
    pub max_ms: i64,
    /// Per client and api.
    pub by_client: Vec<ThrottleByClient>,
    /// Per epoch second of the response.
    pub series: Vec<ThrottleSecond>,
    /// Latency of the throttled exchanges (the throttle is not part of it).
    pub throttled_latency_ms: Option<LatencyMs>,
    /// The most throttled exchanges, with latency and throttle apart.
    pub exchanges: Vec<ThrottledExchange>,
}

/// Throttle of one client on one api.
#[derive(Clone, Debug, Serialize)]
pub struct ThrottleByClient {
    /// Client id.
    pub client_id: Option<String>,
    /// Client software.
    pub software: Option<String>,
    /// Api key.
    pub api_key: i16,
    /// Api name.
    pub api_name: Option<&'static str>,
    /// Throttled responses.
    pub count: u64,
    /// Sum.
    pub sum_ms: i64,
    /// Max.
    pub max_ms: i64,
}

/// Throttle in one second.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThrottleSecond {
    /// Epoch second (floor of the response's `ts`).
    pub second: i64,
    /// Throttled responses.
    pub count: u64,
    /// Sum.
    pub sum_ms: i64,
    /// Max.
    pub max_ms: i64,
}

/// A throttled exchange: delay and throttle shown apart.
#[derive(Clone, Debug, Serialize)]
pub struct ThrottledExchange {
    /// ThrottleTimeMs.
    pub throttle_ms: i32,
    /// Latency (request frame → response first byte).
    pub latency_ms: Option<f64>,
    /// Request frame.
    pub request_frame: Option<u64>,
    /// Response frame.
    pub response_frame: u64,
    /// Api key.
    pub api_key: i16,
    /// Api name.
    pub api_name: Option<&'static str>,
    /// Client id.
    pub client_id: Option<String>,
}

/// An error code at a place.
#[derive(Clone, Debug, Serialize)]
pub struct ErrorReport {
    /// Kafka's name (`NOT_LEADER_OR_FOLLOWER`), or `UNKNOWN(n)`.
    pub error: String,
    /// The code.
    pub code: i16,
    /// Api key of the response.
    pub api_key: i16,
    /// Api name.
    pub api_name: Option<&'static str>,
    /// Enclosing topic (name, or id when never named).
    pub topic: Option<String>,
    /// Enclosing partition.
    pub partition: Option<i32>,
    /// Occurrences.
    pub count: u64,
    /// First response frame carrying it.
    pub first_frame: u64,
    /// Last response frame carrying it.
    pub last_frame: u64,
}

/// Messages of one api version that decoded with the same warning.
#[derive(Clone, Debug, Serialize)]
pub struct WarningReport {
    /// What is unusual (`bytes after the body, ignored by the broker`).
    pub warning: &'static str,
    /// Api key (-1 when unknown).
    pub api_key: i16,
    /// Api name.
    pub api_name: Option<&'static str>,
    /// Api version (-1 when unknown).
    pub api_version: i16,
    /// Messages.
    pub count: u64,
    /// Frame of the first.
    pub first_frame: u64,
    /// Frame of the last.
    pub last_frame: u64,
}

/// A record-level Produce error.
#[derive(Clone, Debug, Serialize)]
pub struct RecordErrorReport {
    /// Topic.
    pub topic: Option<String>,
    /// Partition.
    pub partition: Option<i32>,
    /// BatchIndex.
    pub batch_index: i32,
    /// BatchIndexErrorMessage.
    pub message: Option<String>,
    /// Response frame.
    pub frame: u64,
}

/// Facts dropped because a bounded table was full (0 everywhere on a normal capture).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Overflow {
    /// Api keys / (key, version) pairs not tracked.
    pub apis: u64,
    /// Client entries not tracked.
    pub clients: u64,
    /// Latency histograms not kept (client, broker, connection).
    pub histograms: u64,
    /// Topic partitions not tracked.
    pub topics: u64,
    /// Error (name, topic, partition) and warning (api, version, warning)
    /// entries not tracked.
    pub errors: u64,
    /// Groups (or entries inside a group) not tracked.
    pub groups: u64,
    /// Throttle seconds not tracked.
    pub series: u64,
    /// Requests forgotten before their response (too many in flight).
    pub pending: u64,
    /// Connections whose client software, or TLS handshake, was not tracked.
    pub streams: u64,
    /// Other capped lists (addresses, record errors, …).
    pub lists: u64,
}

/// Containers nested deeper than this print on one line in a report file
/// (a lag series' samples, `[time, lag]`, one line each instead of four).
const PRETTY_DEPTH: usize = 5;

/// The key of the lag section as the pretty layout writes it: a key of
/// the report's own object (one level of indentation) on a line of its own.
/// No other line holds it: keys nested deeper are indented further, and a
/// string value's line breaks are escaped.
const LAG_KEY: &[u8] = b"\n  \"lag\": ";

/// How the lag section's text opens: its first key, the rows.
const ROWS_AT: &[u8] = b"{\n    \"partitions\": ";

/// [`ROWS_AT`] with no rows.
const EMPTY_ROWS: &[u8] = b"{\n    \"partitions\": []";

/// The rows' array opens: its bracket, the first row's line.
const ROWS_OPEN: &[u8] = b"[\n      ";

/// Between two rows.
const ROW_BREAK: &[u8] = b",\n      ";

/// The rows' array closes, on a line of its own.
const ROWS_CLOSE: &[u8] = b"\n    ]";

impl StatsReport {
    /// The report as JSON for a file: indented as
    /// `serde_json::to_string_pretty` does down to [`PRETTY_DEPTH`] nested
    /// containers, the deeper ones compact. A front end writes it in two
    /// parts, on two threads: the lag section (most of the text on a
    /// capture of many partitions: each row's series of samples),
    /// [`StatsReport::lag_json`], in the place
    /// [`StatsReport::json_around_lag`] leaves for it; as here.
    #[cfg(test)]
    pub(crate) fn into_json_pretty(mut self) -> serde_json::Result<String> {
        let lag = Self::lag_json(&std::mem::take(&mut self.lag))?;
        let (mut text, place) = self.json_around_lag()?;
        text.splice(place, lag);
        // serde_json writes only valid UTF-8, and the lag's text replaces
        // a whole value.
        String::from_utf8(text).map_err(serde::ser::Error::custom)
    }

    /// The value of the `lag` section as the report's JSON for a file
    /// writes it, `lag` being the report's.
    pub fn lag_json(lag: &LagReport) -> serde_json::Result<Vec<u8>> {
        pretty_at(lag, 1, 1 << 20)
    }

    /// [`StatsReport::lag_json`] of `lag` with its `partitions` left
    /// empty: the text around its rows, which [`StatsReport::lag_json_parts`]
    /// fills with the rows' pieces.
    pub fn lag_json_without_rows(lag: &LagReport) -> serde_json::Result<Vec<u8>> {
        let without = LagReport {
            partitions: Vec::new(),
            groups: lag.groups.clone(),
            overflow: lag.overflow,
        };
        Self::lag_json(&without)
    }

    /// The text of `rows`, consecutive rows of a lag section's
    /// `partitions`, laid out as [`StatsReport::lag_json`] lays them out,
    /// in their own array: a piece of [`StatsReport::lag_json_parts`]. The
    /// rows' text is most of the section's, and its pieces may be made on
    /// several threads.
    pub fn lag_rows_json(rows: &[super::lag::PartitionLag]) -> serde_json::Result<Vec<u8>> {
        // The rows as the section's array, two containers deep (the
        // report, the section).
        pretty_at(&rows, 2, rows.len() * 1024)
    }

    /// [`StatsReport::lag_json`] of a lag section made of pieces, as the
    /// consecutive parts of its text: `without_rows` its
    /// [`StatsReport::lag_json_without_rows`], each of `pieces`
    /// [`StatsReport::lag_rows_json`] of the next rows, in order. The parts
    /// borrow the pieces' rows (without their arrays' brackets) and are
    /// written one after the other: the rows' text is not copied into one
    /// buffer (on a capture of many partitions, megabytes).
    pub fn lag_json_parts<'a>(
        without_rows: &'a [u8],
        pieces: &'a [Vec<u8>],
    ) -> serde_json::Result<Vec<&'a [u8]>> {
        use serde::ser::Error;
        let mut rows = Vec::with_capacity(pieces.len());
        for p in pieces.iter().filter(|p| p.as_slice() != b"[]") {
            let inner = (p.strip_prefix(ROWS_OPEN)).and_then(|t| t.strip_suffix(ROWS_CLOSE));
            let Some(inner) = inner else {
                return Err(serde_json::Error::custom(
                    "a lag rows' piece is not their array",
                ));
            };
            rows.push(inner);
        }
        let Some((first, rest)) = rows.split_first() else {
            return Ok(vec![without_rows]);
        };
        // The section opens with its rows: the empty array they fill.
        let Some(after) = without_rows.strip_prefix(EMPTY_ROWS) else {
            return Err(serde_json::Error::custom(
                "no empty lag rows' array to fill",
            ));
        };
        let mut parts = vec![ROWS_AT, ROWS_OPEN, *first];
        for p in rest {
            parts.extend([ROW_BREAK, *p]);
        }
        parts.extend([ROWS_CLOSE, after]);
        Ok(parts)
    }

    /// This report as JSON for a file, and the place in it of its lag
    /// section's value, which [`StatsReport::lag_json`]'s text replaces.
    /// The report's own `lag` must be empty (taken out for
    /// [`StatsReport::lag_json`]): the place holds an empty section's value.
    pub fn json_around_lag(&self) -> serde_json::Result<(Vec<u8>, std::ops::Range<usize>)> {
        use serde::ser::Error;
        let empty = LagReport::default();
        if self.lag != empty {
            return Err(serde_json::Error::custom(
                "the lag section is written apart (StatsReport::lag_json)",
            ));
        }
        let text = pretty_at(self, 0, 1 << 18)?;
        // The empty section's value follows its key.
        let value = pretty_at(&empty, 1, 64)?;
        let mut at_key = LAG_KEY.to_vec();
        at_key.extend_from_slice(&value);
        let Some(at) = memchr::memmem::find(&text, &at_key) else {
            return Err(serde_json::Error::custom("no lag section in the report"));
        };
        let start = at + LAG_KEY.len();
        Ok((text, start..start + value.len()))
    }
}

/// `value` as the report's JSON for a file lays it out inside `open`
/// containers (`capacity`: the bytes it is expected to take).
fn pretty_at(value: &impl Serialize, open: usize, capacity: usize) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity);
    let f = ShallowPretty {
        open,
        has_value: false,
    };
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, f))?;
    Ok(out)
}

/// serde_json's pretty layout (`PrettyFormatter`: two spaces a level) for
/// the outer [`PRETTY_DEPTH`] levels of containers, its compact one inside
/// them. A line's break and indentation are written at once (the pretty
/// formatter writes the indentation a level at a time: five calls for each
/// of a lag series' samples).
struct ShallowPretty {
    /// Containers open.
    open: usize,
    /// The innermost pretty container has a value (the pretty formatter's
    /// `has_value`).
    has_value: bool,
}

type Io = std::io::Result<()>;

/// A comma, a line break and the indentation of [`PRETTY_DEPTH`] levels.
const BREAK: &[u8; 2 + 2 * PRETTY_DEPTH] = b",\n          ";

impl ShallowPretty {
    /// Values of the innermost open container are written compact.
    fn compact(&self) -> bool {
        self.open > PRETTY_DEPTH
    }

    /// A line break (after a comma unless `first`) and the indentation of
    /// the containers open.
    fn line<W: ?Sized + std::io::Write>(&self, w: &mut W, first: bool) -> Io {
        let indent = 2 * self.open.min(PRETTY_DEPTH);
        w.write_all(
            BREAK
                .get(usize::from(first)..2 + indent)
                .unwrap_or_default(),
        )
    }

    /// A container opens with `bracket`.
    fn begin<W: ?Sized + std::io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> Io {
        self.open += 1;
        if !self.compact() {
            self.has_value = false;
        }
        w.write_all(bracket)
    }

    /// The innermost container closes with `bracket`, on a line of its own
    /// when it is pretty and holds a value.
    fn end<W: ?Sized + std::io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> Io {
        let compact = self.compact();
        self.open = self.open.saturating_sub(1);
        if !compact && self.has_value {
            self.line(w, true)?;
        }
        w.write_all(bracket)
    }

    /// Before a value or key: a comma unless `first`, and when pretty a
    /// line break.
    fn before<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> Io {
        match (self.compact(), first) {
            (false, _) => self.line(w, first),
            (true, true) => Ok(()),
            (true, false) => w.write_all(b","),
        }
    }

    /// After a value: the pretty container has one.
    fn after(&mut self) -> Io {
        if !self.compact() {
            self.has_value = true;
        }
        Ok(())
    }
}

impl serde_json::ser::Formatter for ShallowPretty {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> Io {
        self.begin(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> Io {
        self.end(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> Io {
        self.before(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> Io {
        self.after()
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> Io {
        self.begin(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> Io {
        self.end(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, w: &mut W, first: bool) -> Io {
        self.before(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> Io {
        match self.compact() {
            true => w.write_all(b":"),
            false => w.write_all(b": "),
        }
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _w: &mut W) -> Io {
        self.after()
    }
}
