//! `make-corpus`: writes a large, realistic Kafka capture for benchmarks.
//!
//! Run it as `cargo run --release --example make-corpus -- --out /tmp/corpus.pcap
//! [--size 300M|1G] [--connections 50] [--seed 1] [--batches 400 | --read-back] [--large]`. The file is
//! not committed.
//!
//! What it holds: Ethernet/IPv4/TCP frames between clients 10.1.x.y and brokers
//! 10.0.0.{1,2,3}:9092, each connection opened with a three-way handshake and
//! closed with FIN/ACK at the end, sequence and acknowledgement numbers right, a
//! pure ACK from the receiver after each message. Most connections use 64 KB
//! segments (loopback-like), about a third 1448-byte ones (Ethernet MSS), so
//! big messages span many segments.
//!
//! Kafka traffic, encoded by the `kafka-protocol` crate (an encoder independent
//! of kafkashark's decoder), at versions tshark 4.0 decodes in full so the
//! benchmark compares equal work: every connection starts with ApiVersions v3
//! and Metadata v9; producers send Produce v8 (acks -1, 1, and a few acks=0
//! that get no response), consumers Fetch v11 with Heartbeat v4 and
//! OffsetCommit v8 between fetches, admin connections Metadata, ListOffsets v5
//! and ApiVersions and come and go. Record batches (v2) hold 1–120 JSON-like
//! records of mixed sizes, compressed with none, gzip, snappy, lz4 or zstd for
//! real; some responses are throttled (ThrottleTimeMs > 0) and some carry
//! partition errors (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
//! OFFSET_OUT_OF_RANGE).
//!
//! The record batches are drawn from a pool of `--batches` distinct ones (400
//! by default):
//! the same batch bytes recur in the file far more often than a produced
//! batch recurs in real traffic. A larger pool checks that a speed-up does
//! not depend on that recurrence. With `--read-back`, there is no pool: every
//! produced batch is new, and a fetch reads back the batches last produced to
//! its partition (from one of the last [`READ_BACK_LAG`] on, as a consumer
//! near the end of the log does), so a batch recurs as it does at a broker,
//! once per fetch that reads it; a partition nothing was produced to yet
//! gets new batches (written before the capture began), kept for the next
//! fetch.
//!
//! With `--large`, every connection uses 64 KB segments and every Produce
//! partition and Fetch partition carries about 1 MB of batches: a capture of
//! big messages in big frames, for the memory figures (memory must follow
//! what is open, not the file, however large the frames and messages).
//!
//! It prints the number of frames, connections and Kafka messages written, so
//! a benchmark can check that every tool saw them all.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafkashark::kafka::schema::{request_header_version, response_header_version};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TOPICS: &[&str] = &[
    "orders",
    "payments",
    "clickstream",
    "inventory-updates",
    "audit-log",
    "user-events",
    "metrics.raw",
    "shipments",
];
const PARTITIONS: i32 = 12;
const BROKER_PORT: u16 = 9092;
/// Loopback-like segments (MTU 65536 minus IPv4, TCP and timestamp option).
const MSS_LOOPBACK: usize = 65_483;
/// Ethernet segments.
const MSS_ETHERNET: usize = 1_448;

/// `--large`: big messages in big segments (see the file's documentation).
static LARGE: AtomicBool = AtomicBool::new(false);

/// Record batches per Produce or Fetch partition with `--large`.
const LARGE_RUN: usize = 1 << 20;

fn large() -> bool {
    LARGE.load(Ordering::Relaxed)
}

struct Args {
    out: String,
    size: u64,
    connections: usize,
    seed: u64,
    /// Distinct record batches the messages draw from.
    batches: usize,
    /// Fetches read back what was produced (no pool).
    read_back: bool,
}

fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<f64>().ok().map(|n| (n * mul as f64) as u64)
}

fn args() -> Args {
    let mut a = Args {
        out: std::env::var("OUT").unwrap_or_else(|_| "/tmp/kafkashark-corpus.pcap".into()),
        size: 300 << 20,
        connections: 50,
        seed: 1,
        batches: 400,
        read_back: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{k} needs a value")))
        };
        match k.as_str() {
            "--out" | "-o" => a.out = v(),
            "--size" => a.size = parse_size(&v()).unwrap_or_else(|| usage("bad --size")),
            "--connections" => {
                a.connections = v().parse().unwrap_or_else(|_| usage("bad --connections"))
            }
            "--seed" => a.seed = v().parse().unwrap_or_else(|_| usage("bad --seed")),
            "--batches" => {
                a.batches = v()
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage("bad --batches"))
            }
            "--large" => LARGE.store(true, Ordering::Relaxed),
            "--read-back" => a.read_back = true,
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    a
}

fn usage(msg: &str) -> ! {
    if !msg.is_empty() {
        eprintln!("make-corpus: {msg}");
    }
    eprintln!(
        "usage: make-corpus [--out FILE] [--size 300M|1G] [--connections 50] [--seed N]\n\
         [--batches 400 | --read-back] [--large]\n\
         (default out: $OUT or /tmp/kafkashark-corpus.pcap)"
    );
    std::process::exit(2)
}

// ---------------------------------------------------------------- records

/// A pool of encoded RecordBatch v2 blobs with mixed sizes and codecs.
struct BatchPool {
    batches: Vec<Bytes>,
}

fn json_value(rng: &mut StdRng, i: usize, size: usize) -> Bytes {
    const WORDS: &[&str] = &[
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
    ];
    let mut s = format!(
        "{{\"id\":{},\"ts\":{},\"user\":\"u{:06}\",\"amount\":{}.{:02},\"tags\":[",
        i,
        1_700_000_000_000u64 + rng.gen_range(0..10_000_000u64),
        rng.gen_range(0..200_000),
        rng.gen_range(0..10_000),
        rng.gen_range(0..100)
    );
    while s.len() < size {
        s.push('"');
        s.push_str(WORDS[rng.gen_range(0..WORDS.len())]);
        s.push_str("\",");
        if rng.gen_bool(0.1) {
            // Some entropy, so compression ratios are realistic, not absurd.
            for _ in 0..8 {
                s.push(char::from(b'a' + rng.gen_range(0..26u8)));
            }
        }
    }
    s.push_str("\"end\"]}");
    Bytes::from(s)
}

/// A new record batch: 1–120 JSON-like records, mostly few and small,
/// compressed with a codec drawn by weight; `b` numbers it (its producer id
/// and timestamps).
fn make_batch(rng: &mut StdRng, b: usize) -> Bytes {
    let codecs = [
        (Compression::None, 30),
        (Compression::Gzip, 15),
        (Compression::Snappy, 20),
        (Compression::Lz4, 20),
        (Compression::Zstd, 15),
    ];
    let total: u32 = codecs.iter().map(|c| c.1).sum();
    let mut pick = rng.gen_range(0..total);
    let mut compression = Compression::None;
    for (c, w) in codecs {
        if pick < w {
            compression = c;
            break;
        }
        pick -= w;
    }
    // Mostly small batches, some big ones.
    let records = match rng.gen_range(0..10) {
        0..=5 => rng.gen_range(1..4),
        6..=8 => rng.gen_range(4..30),
        _ => rng.gen_range(30..120),
    };
    let value_size = match rng.gen_range(0..10) {
        0..=2 => rng.gen_range(40..120),
        3..=7 => rng.gen_range(120..600),
        _ if records > 3 => rng.gen_range(60..300),
        _ => rng.gen_range(600..2000),
    };
    let with_headers = rng.gen_bool(0.3);
    let base_ts = 1_700_000_000_000i64 + b as i64 * 1000;
    let recs: Vec<Record> = (0..records)
        .map(|i| {
            let mut headers = IndexMap::new();
            if with_headers {
                headers.insert(
                    StrBytes::from_static_str("trace-id"),
                    Some(Bytes::from(format!("{:016x}", rng.gen::<u64>()))),
                );
            }
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 7,
                producer_id: 4000 + b as i64,
                producer_epoch: 0,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: i as i32,
                timestamp: base_ts + i as i64,
                key: rng
                    .gen_bool(0.7)
                    .then(|| Bytes::from(format!("key-{}", rng.gen_range(0..100_000)))),
                value: Some(json_value(rng, i, value_size)),
                headers,
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &recs,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .expect("encode batch");
    buf.freeze()
}

impl BatchPool {
    fn new(rng: &mut StdRng, n: usize) -> BatchPool {
        BatchPool {
            batches: (0..n).map(|b| make_batch(rng, b)).collect(),
        }
    }

    fn pick(&self, rng: &mut StdRng) -> Bytes {
        self.batches[rng.gen_range(0..self.batches.len())].clone()
    }

    /// Consecutive batches of at most `max` bytes (at least one).
    fn run(&self, rng: &mut StdRng, max: usize) -> Bytes {
        let mut out = BytesMut::new();
        loop {
            let b = self.pick(rng);
            if !out.is_empty() && out.len() + b.len() > max {
                break;
            }
            out.extend_from_slice(&b);
            if out.len() >= max / 2 || (!large() && rng.gen_bool(0.3)) {
                break;
            }
        }
        out.freeze()
    }
}

/// How many of a partition's last batches a fetch may start from with
/// `--read-back`: consumers and followers read near the end of the log.
const READ_BACK_LAG: usize = 8;

/// Batches a partition's log keeps with `--read-back`.
const LOG_KEEP: usize = 32;

/// Where the messages' record batches come from.
enum Batches {
    Pool(BatchPool),
    /// `--read-back`: each partition's batches, newest last, and how many
    /// batches were made.
    ReadBack {
        logs: HashMap<(&'static str, i32), VecDeque<Bytes>>,
        made: usize,
    },
}

impl Batches {
    /// The record set of one Produce partition.
    fn produced(&mut self, rng: &mut StdRng, topic: &'static str, partition: i32) -> Bytes {
        match self {
            Batches::Pool(pool) => {
                if large() {
                    pool.run(rng, LARGE_RUN)
                } else {
                    pool.pick(rng)
                }
            }
            Batches::ReadBack { logs, made } => {
                let log = logs.entry((topic, partition)).or_default();
                let mut out = BytesMut::new();
                loop {
                    let b = make_batch(rng, *made);
                    *made += 1;
                    out.extend_from_slice(&b);
                    log.push_back(b);
                    if log.len() > LOG_KEEP {
                        log.pop_front();
                    }
                    if !large() || out.len() >= LARGE_RUN / 2 {
                        break;
                    }
                }
                out.freeze()
            }
        }
    }

    /// The record set of one Fetch partition: consecutive batches of at
    /// most `max` bytes (at least one), as [`BatchPool::run`].
    fn fetched(
        &mut self,
        rng: &mut StdRng,
        topic: &'static str,
        partition: i32,
        max: usize,
    ) -> Bytes {
        match self {
            Batches::Pool(pool) => pool.run(rng, max),
            Batches::ReadBack { logs, made } => {
                let log = logs.entry((topic, partition)).or_default();
                if log.is_empty() {
                    // Written before the capture began.
                    for _ in 0..READ_BACK_LAG {
                        log.push_back(make_batch(rng, *made));
                        *made += 1;
                    }
                }
                let lag = log.len().min(READ_BACK_LAG);
                let mut at = log.len() - rng.gen_range(1..=lag);
                let mut out = BytesMut::new();
                while let Some(b) = log.get(at) {
                    if !out.is_empty() && out.len() + b.len() > max {
                        break;
                    }
                    out.extend_from_slice(b);
                    at += 1;
                    if out.len() >= max / 2 || (!large() && rng.gen_bool(0.3)) {
                        break;
                    }
                }
                out.freeze()
            }
        }
    }
}

// ---------------------------------------------------------------- kafka messages

fn topic(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A size-prefixed request: header (version from the schema tables) + body.
fn request<M: Encodable>(key: i16, ver: i16, corr: i32, client_id: &str, body: &M) -> Vec<u8> {
    let hv = request_header_version(key, ver);
    let mut b = BytesMut::new();
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&key.to_be_bytes());
    b.extend_from_slice(&ver.to_be_bytes());
    b.extend_from_slice(&corr.to_be_bytes());
    if hv >= 1 {
        b.extend_from_slice(&(client_id.len() as i16).to_be_bytes());
        b.extend_from_slice(client_id.as_bytes());
    }
    if hv >= 2 {
        b.extend_from_slice(&[0]);
    }
    body.encode(&mut b, ver).expect("encode request");
    let size = (b.len() - 4) as i32;
    b[..4].copy_from_slice(&size.to_be_bytes());
    b.to_vec()
}

fn response<M: Encodable>(key: i16, ver: i16, corr: i32, body: &M) -> Vec<u8> {
    let hv = response_header_version(key, ver);
    let mut b = BytesMut::new();
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&corr.to_be_bytes());
    if hv >= 1 {
        b.extend_from_slice(&[0]);
    }
    body.encode(&mut b, ver).expect("encode response");
    let size = (b.len() - 4) as i32;
    b[..4].copy_from_slice(&size.to_be_bytes());
    b.to_vec()
}

fn throttle(rng: &mut StdRng) -> i32 {
    if rng.gen_bool(0.04) {
        rng.gen_range(5..800)
    } else {
        0
    }
}

fn api_versions(corr: i32, client: &str, rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let req = ApiVersionsRequest::default()
        .with_client_software_name(s("librdkafka"))
        .with_client_software_version(s("2.16.0"));
    let keys: Vec<ApiVersion> = (0..=50)
        .map(|k| {
            ApiVersion::default()
                .with_api_key(k)
                .with_min_version(0)
                .with_max_version(rng.gen_range(1..12))
        })
        .collect();
    let rsp = ApiVersionsResponse::default().with_api_keys(keys);
    (
        request(18, 3, corr, client, &req),
        response(18, 3, corr, &rsp),
    )
}

fn metadata(corr: i32, client: &str, rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let n = rng.gen_range(1..=TOPICS.len());
    let req = MetadataRequest::default()
        .with_topics(Some(
            TOPICS[..n]
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(topic(t))))
                .collect(),
        ))
        .with_allow_auto_topic_creation(true);
    let brokers = (1..=3)
        .map(|i| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(i))
                .with_host(s(&format!("10.0.0.{i}")))
                .with_port(9092)
                .with_rack(Some(s(&format!("rack-{i}"))))
        })
        .collect();
    let topics = TOPICS[..n]
        .iter()
        .map(|t| {
            MetadataResponseTopic::default()
                .with_name(Some(topic(t)))
                .with_partitions(
                    (0..PARTITIONS)
                        .map(|p| {
                            MetadataResponsePartition::default()
                                .with_partition_index(p)
                                .with_leader_id(BrokerId(p % 3 + 1))
                                .with_leader_epoch(7)
                                .with_replica_nodes(vec![BrokerId(1), BrokerId(2), BrokerId(3)])
                                .with_isr_nodes(vec![BrokerId(1), BrokerId(2), BrokerId(3)])
                        })
                        .collect(),
                )
        })
        .collect();
    let rsp = MetadataResponse::default()
        .with_throttle_time_ms(throttle(rng))
        .with_brokers(brokers)
        .with_cluster_id(Some(s("kafkashark-bench-cluster")))
        .with_controller_id(BrokerId(1))
        .with_topics(topics);
    (
        request(3, 9, corr, client, &req),
        response(3, 9, corr, &rsp),
    )
}

fn partition_error(rng: &mut StdRng, fetch: bool) -> i16 {
    match rng.gen_range(0..1000) {
        0..=14 => 6,            // NOT_LEADER_OR_FOLLOWER
        15..=19 if !fetch => 7, // REQUEST_TIMED_OUT
        15..=19 => 1,           // OFFSET_OUT_OF_RANGE
        _ => 0,
    }
}

/// Produce v8; `None` response for acks=0.
fn produce(
    corr: i32,
    client: &str,
    rng: &mut StdRng,
    batches: &mut Batches,
) -> (Vec<u8>, Option<Vec<u8>>) {
    let acks = match rng.gen_range(0..100) {
        0..=2 => 0,
        3..=30 => 1,
        _ => -1,
    };
    let t = TOPICS[rng.gen_range(0..TOPICS.len())];
    let parts = rng.gen_range(1..=3);
    let first = rng.gen_range(0..PARTITIONS);
    let pdata: Vec<PartitionProduceData> = (0..parts)
        .map(|i| {
            let p = (first + i) % PARTITIONS;
            PartitionProduceData::default()
                .with_index(p)
                .with_records(Some(batches.produced(rng, t, p)))
        })
        .collect();
    let req = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic(t))
            .with_partition_data(pdata)]);
    let rsp = (acks != 0).then(|| {
        let presp = (0..parts)
            .map(|i| {
                let err = partition_error(rng, false);
                PartitionProduceResponse::default()
                    .with_index((first + i) % PARTITIONS)
                    .with_error_code(err)
                    .with_base_offset(if err == 0 {
                        rng.gen_range(0..1i64 << 40)
                    } else {
                        -1
                    })
                    .with_log_append_time_ms(-1)
                    .with_log_start_offset(0)
            })
            .collect();
        let body = ProduceResponse::default()
            .with_responses(vec![TopicProduceResponse::default()
                .with_name(topic(t))
                .with_partition_responses(presp)])
            .with_throttle_time_ms(throttle(rng));
        response(0, 8, corr, &body)
    });
    (request(0, 8, corr, client, &req), rsp)
}

fn fetch(corr: i32, client: &str, rng: &mut StdRng, batches: &mut Batches) -> (Vec<u8>, Vec<u8>) {
    let t = TOPICS[rng.gen_range(0..TOPICS.len())];
    let parts = rng.gen_range(1..=4);
    let first = rng.gen_range(0..PARTITIONS);
    let req = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(500)
        .with_min_bytes(1)
        .with_max_bytes(52_428_800)
        .with_isolation_level(1)
        .with_session_id(rng.gen_range(1..1_000_000))
        .with_session_epoch(rng.gen_range(1..1000))
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic(t))
            .with_partitions(
                (0..parts)
                    .map(|i| {
                        FetchPartition::default()
                            .with_partition((first + i) % PARTITIONS)
                            .with_current_leader_epoch(7)
                            .with_fetch_offset(rng.gen_range(0..1i64 << 30))
                            .with_log_start_offset(-1)
                            .with_partition_max_bytes(1_048_576)
                    })
                    .collect(),
            )])
        .with_rack_id(s(""));
    // Long polls that return nothing, and full fetches up to 1 MB per partition.
    let empty = rng.gen_bool(0.15);
    let pdata = (0..parts)
        .map(|i| {
            let err = partition_error(rng, true);
            let records = if empty || err != 0 {
                Bytes::new()
            } else {
                let max = match rng.gen_range(0..10) {
                    _ if large() => LARGE_RUN,
                    0..=6 => 2 << 10,
                    7..=8 => 16 << 10,
                    _ => 128 << 10,
                };
                batches.fetched(rng, t, (first + i) % PARTITIONS, max)
            };
            PartitionData::default()
                .with_partition_index((first + i) % PARTITIONS)
                .with_error_code(err)
                .with_high_watermark(rng.gen_range(0..1i64 << 31))
                .with_last_stable_offset(-1)
                .with_log_start_offset(0)
                .with_aborted_transactions(Some(Vec::new()))
                .with_preferred_read_replica(BrokerId(-1))
                .with_records(Some(records))
        })
        .collect();
    let rsp = FetchResponse::default()
        .with_throttle_time_ms(throttle(rng))
        .with_session_id(rng.gen_range(1..1_000_000))
        .with_responses(vec![FetchableTopicResponse::default()
            .with_topic(topic(t))
            .with_partitions(pdata)]);
    (
        request(1, 11, corr, client, &req),
        response(1, 11, corr, &rsp),
    )
}

fn heartbeat(corr: i32, client: &str, member: &str, rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let req = HeartbeatRequest::default()
        .with_group_id(GroupId(s("bench-consumers")))
        .with_generation_id(12)
        .with_member_id(s(member));
    let err = if rng.gen_bool(0.02) { 27 } else { 0 }; // REBALANCE_IN_PROGRESS
    let rsp = HeartbeatResponse::default()
        .with_throttle_time_ms(throttle(rng))
        .with_error_code(err);
    (
        request(12, 4, corr, client, &req),
        response(12, 4, corr, &rsp),
    )
}

fn offset_commit(corr: i32, client: &str, member: &str, rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let t = TOPICS[rng.gen_range(0..TOPICS.len())];
    let parts: Vec<i32> = (0..rng.gen_range(1..6)).collect();
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s("bench-consumers")))
        .with_generation_id_or_member_epoch(12)
        .with_member_id(s(member))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic(t))
            .with_partitions(
                parts
                    .iter()
                    .map(|&p| {
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(p)
                            .with_committed_offset(rng.gen_range(0..1i64 << 30))
                            .with_committed_leader_epoch(7)
                            .with_committed_metadata(Some(s("")))
                    })
                    .collect(),
            )]);
    let rsp = OffsetCommitResponse::default()
        .with_throttle_time_ms(throttle(rng))
        .with_topics(vec![OffsetCommitResponseTopic::default()
            .with_name(topic(t))
            .with_partitions(
                parts
                    .iter()
                    .map(|&p| {
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(p)
                            .with_error_code(if rng.gen_bool(0.01) { 22 } else { 0 })
                    })
                    .collect(),
            )]);
    (
        request(8, 8, corr, client, &req),
        response(8, 8, corr, &rsp),
    )
}

fn list_offsets(corr: i32, client: &str, rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let t = TOPICS[rng.gen_range(0..TOPICS.len())];
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(topic(t))
            .with_partitions(
                (0..PARTITIONS)
                    .map(|p| {
                        ListOffsetsPartition::default()
                            .with_partition_index(p)
                            .with_current_leader_epoch(7)
                            .with_timestamp(-1)
                    })
                    .collect(),
            )]);
    let rsp = ListOffsetsResponse::default()
        .with_throttle_time_ms(throttle(rng))
        .with_topics(vec![ListOffsetsTopicResponse::default()
            .with_name(topic(t))
            .with_partitions(
                (0..PARTITIONS)
                    .map(|p| {
                        ListOffsetsPartitionResponse::default()
                            .with_partition_index(p)
                            .with_timestamp(-1)
                            .with_offset(rng.gen_range(0..1i64 << 31))
                            .with_leader_epoch(7)
                    })
                    .collect(),
            )]);
    (
        request(2, 5, corr, client, &req),
        response(2, 5, corr, &rsp),
    )
}

// ---------------------------------------------------------------- tcp and pcap

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Producer,
    Consumer,
    Admin,
}

struct Conn {
    role: Role,
    client_ip: [u8; 4],
    client_port: u16,
    broker_ip: [u8; 4],
    /// Next sequence number of each side.
    cseq: u32,
    sseq: u32,
    mss: usize,
    corr: i32,
    client_id: String,
    member: String,
    exchanges: u32,
    /// Exchanges before an admin connection closes (and a new one opens).
    lifetime: u32,
    opened: bool,
}

/// One frame waiting to be written, ordered by time then creation.
struct Pkt {
    ts_ns: u64,
    order: u64,
    data: Vec<u8>,
}

impl PartialEq for Pkt {
    fn eq(&self, o: &Self) -> bool {
        (self.ts_ns, self.order) == (o.ts_ns, o.order)
    }
}
impl Eq for Pkt {}
impl PartialOrd for Pkt {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pkt {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.ts_ns, self.order).cmp(&(o.ts_ns, o.order))
    }
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

fn checksum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [b] = chunks.remainder() {
        sum += u32::from(*b) << 8;
    }
    sum
}

fn checksum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet/IPv4/TCP frame.
#[allow(clippy::too_many_arguments)]
fn frame(
    src: [u8; 4],
    sport: u16,
    dst: [u8; 4],
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
    ip_id: u16,
) -> Vec<u8> {
    let tcp_len = 20 + payload.len();
    let ip_len = 20 + tcp_len;
    let mut f = Vec::with_capacity(14 + ip_len);
    // Ethernet: dst, src, IPv4.
    f.extend_from_slice(&[0x02, 0, 0, 0, dst[2], dst[3]]);
    f.extend_from_slice(&[0x02, 0, 0, 0, src[2], src[3]]);
    f.extend_from_slice(&[0x08, 0x00]);
    // IPv4.
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&(ip_len as u16).to_be_bytes());
    f.extend_from_slice(&ip_id.to_be_bytes());
    f.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let ipsum = checksum_fold(checksum_add(0, &f[ip_start..]));
    f[ip_start + 10..ip_start + 12].copy_from_slice(&ipsum.to_be_bytes());
    // TCP.
    let tcp_start = f.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    let mut sum = checksum_add(0, &src);
    sum = checksum_add(sum, &dst);
    sum += 6 + tcp_len as u32;
    sum = checksum_add(sum, &f[tcp_start..]);
    let tcpsum = checksum_fold(sum);
    f[tcp_start + 16..tcp_start + 18].copy_from_slice(&tcpsum.to_be_bytes());
    f
}

struct Out {
    heap: BinaryHeap<Reverse<Pkt>>,
    order: u64,
    ip_id: u16,
    w: BufWriter<std::fs::File>,
    bytes: u64,
    frames: u64,
    messages: u64,
    pairs: u64,
}

impl Out {
    fn push(&mut self, ts_ns: u64, data: Vec<u8>) {
        self.order += 1;
        self.heap.push(Reverse(Pkt {
            ts_ns,
            order: self.order,
            data,
        }));
    }

    /// Writes every frame earlier than `before`.
    fn flush(&mut self, before: u64) -> std::io::Result<()> {
        while self.heap.peek().is_some_and(|p| p.0.ts_ns < before) {
            let Some(Reverse(p)) = self.heap.pop() else {
                break;
            };
            let secs = (p.ts_ns / 1_000_000_000) as u32;
            let usecs = ((p.ts_ns % 1_000_000_000) / 1000) as u32;
            let len = p.data.len() as u32;
            self.w.write_all(&secs.to_le_bytes())?;
            self.w.write_all(&usecs.to_le_bytes())?;
            self.w.write_all(&len.to_le_bytes())?;
            self.w.write_all(&len.to_le_bytes())?;
            self.w.write_all(&p.data)?;
            self.bytes += 16 + u64::from(len);
            self.frames += 1;
        }
        Ok(())
    }

    fn next_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(1);
        self.ip_id
    }

    /// One direction's message as segments from `t`; returns the time after the
    /// last segment. The receiver acknowledges the whole message afterwards.
    fn send(&mut self, c: &mut Conn, to_broker: bool, msg: &[u8], mut t: u64) -> u64 {
        for chunk in msg.chunks(c.mss) {
            let id = self.next_id();
            let f = if to_broker {
                frame(
                    c.client_ip,
                    c.client_port,
                    c.broker_ip,
                    BROKER_PORT,
                    c.cseq,
                    c.sseq,
                    ACK | PSH,
                    chunk,
                    id,
                )
            } else {
                frame(
                    c.broker_ip,
                    BROKER_PORT,
                    c.client_ip,
                    c.client_port,
                    c.sseq,
                    c.cseq,
                    ACK | PSH,
                    chunk,
                    id,
                )
            };
            if to_broker {
                c.cseq = c.cseq.wrapping_add(chunk.len() as u32);
            } else {
                c.sseq = c.sseq.wrapping_add(chunk.len() as u32);
            }
            self.push(t, f);
            // About 1 GB/s on loopback, 1 Gbit/s on the wire.
            t += if c.mss == MSS_LOOPBACK {
                60_000
            } else {
                12_000
            };
        }
        let id = self.next_id();
        let a = if to_broker {
            frame(
                c.broker_ip,
                BROKER_PORT,
                c.client_ip,
                c.client_port,
                c.sseq,
                c.cseq,
                ACK,
                &[],
                id,
            )
        } else {
            frame(
                c.client_ip,
                c.client_port,
                c.broker_ip,
                BROKER_PORT,
                c.cseq,
                c.sseq,
                ACK,
                &[],
                id,
            )
        };
        self.push(t + 20_000, a);
        self.messages += 1;
        t
    }

    fn handshake(&mut self, c: &mut Conn, t: u64) -> u64 {
        let id = self.next_id();
        let f = frame(
            c.client_ip,
            c.client_port,
            c.broker_ip,
            BROKER_PORT,
            c.cseq,
            0,
            SYN,
            &[],
            id,
        );
        self.push(t, f);
        c.cseq = c.cseq.wrapping_add(1);
        let id = self.next_id();
        let f = frame(
            c.broker_ip,
            BROKER_PORT,
            c.client_ip,
            c.client_port,
            c.sseq,
            c.cseq,
            SYN | ACK,
            &[],
            id,
        );
        self.push(t + 30_000, f);
        c.sseq = c.sseq.wrapping_add(1);
        let id = self.next_id();
        let f = frame(
            c.client_ip,
            c.client_port,
            c.broker_ip,
            BROKER_PORT,
            c.cseq,
            c.sseq,
            ACK,
            &[],
            id,
        );
        self.push(t + 60_000, f);
        t + 100_000
    }

    fn close(&mut self, c: &mut Conn, t: u64) {
        let id = self.next_id();
        let f = frame(
            c.client_ip,
            c.client_port,
            c.broker_ip,
            BROKER_PORT,
            c.cseq,
            c.sseq,
            FIN | ACK,
            &[],
            id,
        );
        self.push(t, f);
        c.cseq = c.cseq.wrapping_add(1);
        let id = self.next_id();
        let f = frame(
            c.broker_ip,
            BROKER_PORT,
            c.client_ip,
            c.client_port,
            c.sseq,
            c.cseq,
            FIN | ACK,
            &[],
            id,
        );
        self.push(t + 30_000, f);
        c.sseq = c.sseq.wrapping_add(1);
        let id = self.next_id();
        let f = frame(
            c.client_ip,
            c.client_port,
            c.broker_ip,
            BROKER_PORT,
            c.cseq,
            c.sseq,
            ACK,
            &[],
            id,
        );
        self.push(t + 60_000, f);
    }
}

fn new_conn(rng: &mut StdRng, i: usize, role: Role, next_port: &mut u16) -> Conn {
    *next_port = next_port.wrapping_add(1).max(32_768);
    let host = (i % 250) as u8 + 1;
    Conn {
        role,
        client_ip: [10, 1, (i / 250) as u8, host],
        client_port: *next_port,
        broker_ip: [10, 0, 0, (i % 3) as u8 + 1],
        // Some connections start near the 2^32 wrap.
        cseq: if rng.gen_bool(0.1) {
            u32::MAX - rng.gen_range(0..100_000)
        } else {
            rng.gen()
        },
        sseq: rng.gen(),
        mss: if rng.gen_bool(0.3) && !large() {
            MSS_ETHERNET
        } else {
            MSS_LOOPBACK
        },
        corr: rng.gen_range(0..1000),
        client_id: match role {
            Role::Producer => format!("producer-{i}"),
            Role::Consumer => format!("consumer-{i}"),
            Role::Admin => format!("adminclient-{i}"),
        },
        member: format!("consumer-{i}-{:08x}", rng.gen::<u32>()),
        exchanges: 0,
        lifetime: if role == Role::Admin {
            rng.gen_range(3..12)
        } else {
            u32::MAX
        },
        opened: false,
    }
}

fn main() -> std::io::Result<()> {
    let a = args();
    let mut rng = StdRng::seed_from_u64(a.seed);
    let mut batches = if a.read_back {
        Batches::ReadBack {
            logs: HashMap::new(),
            made: 0,
        }
    } else {
        eprintln!("make-corpus: building the record batch pool…");
        Batches::Pool(BatchPool::new(&mut rng, a.batches))
    };
    let file = std::fs::File::create(&a.out)?;
    let mut out = Out {
        heap: BinaryHeap::new(),
        order: 0,
        ip_id: 0,
        w: BufWriter::with_capacity(1 << 20, file),
        bytes: 24,
        frames: 0,
        messages: 0,
        pairs: 0,
    };
    // pcap header: magic, v2.4, tz 0, sigfigs 0, snaplen, Ethernet.
    out.w.write_all(&0xa1b2_c3d4u32.to_le_bytes())?;
    out.w.write_all(&2u16.to_le_bytes())?;
    out.w.write_all(&4u16.to_le_bytes())?;
    out.w.write_all(&[0; 8])?;
    out.w.write_all(&262_144u32.to_le_bytes())?;
    out.w.write_all(&1u32.to_le_bytes())?;

    let n = a.connections.max(3);
    let mut next_port = 40_000u16;
    let mut conns: Vec<Conn> = (0..n)
        .map(|i| {
            let role = match i % 10 {
                0..=4 => Role::Producer,
                5..=8 => Role::Consumer,
                _ => Role::Admin,
            };
            new_conn(&mut rng, i, role, &mut next_port)
        })
        .collect();
    let mut opened_total = 0u64;
    // When each connection acts next.
    let start_ns: u64 = 1_735_000_000 * 1_000_000_000;
    let mut ready: BinaryHeap<Reverse<(u64, usize)>> = (0..n)
        .map(|i| Reverse((start_ns + rng.gen_range(0..50_000_000), i)))
        .collect();
    let mut last_report = 0u64;
    while out.bytes < a.size {
        let Some(Reverse((t0, i))) = ready.pop() else {
            break;
        };
        // Nothing later generated can be earlier than t0.
        out.flush(t0)?;
        let c = &mut conns[i];
        let mut t = t0;
        if !c.opened {
            t = out.handshake(c, t);
            c.opened = true;
            opened_total += 1;
        }
        c.corr = c.corr.wrapping_add(1);
        let corr = c.corr;
        let (req, rsp) = match (c.exchanges, c.role) {
            (0, _) => {
                let (q, r) = api_versions(corr, &c.client_id, &mut rng);
                (q, Some(r))
            }
            (1, _) => {
                let (q, r) = metadata(corr, &c.client_id, &mut rng);
                (q, Some(r))
            }
            (_, Role::Producer) => produce(corr, &c.client_id, &mut rng, &mut batches),
            (k, Role::Consumer) if k % 20 == 5 => {
                let (q, r) = heartbeat(corr, &c.client_id, &c.member, &mut rng);
                (q, Some(r))
            }
            (k, Role::Consumer) if k % 10 == 7 => {
                let (q, r) = offset_commit(corr, &c.client_id, &c.member, &mut rng);
                (q, Some(r))
            }
            (_, Role::Consumer) => {
                let (q, r) = fetch(corr, &c.client_id, &mut rng, &mut batches);
                (q, Some(r))
            }
            (k, Role::Admin) => {
                let (q, r) = match k % 3 {
                    0 => metadata(corr, &c.client_id, &mut rng),
                    1 => list_offsets(corr, &c.client_id, &mut rng),
                    _ => api_versions(corr, &c.client_id, &mut rng),
                };
                (q, Some(r))
            }
        };
        c.exchanges += 1;
        let t_sent = out.send(c, true, &req, t);
        let next = match rsp {
            Some(rsp) => {
                // Broker latency: mostly sub-millisecond, a tail up to 500 ms.
                let lat = match rng.gen_range(0..100) {
                    0..=79 => rng.gen_range(100_000..2_000_000),
                    80..=97 => rng.gen_range(2_000_000..50_000_000),
                    _ => rng.gen_range(50_000_000..500_000_000),
                };
                let t_done = out.send(c, false, &rsp, t_sent + lat);
                out.pairs += 1;
                t_done
            }
            None => t_sent,
        };
        // Think time before the next request on this connection.
        let mut next = next + rng.gen_range(200_000..20_000_000);
        if c.exchanges >= c.lifetime {
            out.close(c, next);
            let role = c.role;
            conns[i] = new_conn(&mut rng, i, role, &mut next_port);
            next += rng.gen_range(1_000_000..50_000_000);
        }
        ready.push(Reverse((next, i)));
        if out.bytes - last_report > 64 << 20 {
            last_report = out.bytes;
            eprintln!("make-corpus: {} MB…", out.bytes >> 20);
        }
    }
    // Close what is open, after everything in flight.
    let end = out.heap.iter().map(|p| p.0.ts_ns).max().unwrap_or(start_ns) + 1_000_000;
    for (k, c) in conns.iter_mut().enumerate() {
        if c.opened {
            out.close(c, end + k as u64 * 100_000);
        }
    }
    out.flush(u64::MAX)?;
    out.w.flush()?;
    println!(
        "{}: {} bytes, {} frames, {} connections, {} Kafka messages, {} request/response pairs",
        a.out, out.bytes, out.frames, opened_total, out.messages, out.pairs
    );
    Ok(())
}
