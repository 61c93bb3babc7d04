//! Live capture end to end: real Kafka bytes over loopback TCP, captured with
//! [`LiveSource`] on `lo`, analysed with the same [`Analyzer`] files use.
//!
//! A test server on a free 127.0.0.1 port answers an ApiVersions v3 request
//! (response header v0, as Kafka always sends for ApiVersions) and a Metadata
//! v12 request (flexible, response header v1); a client sends both, hand
//! encoded. The capture must show the four messages with their api keys,
//! versions, correlation ids, pairing, latency and no decode error.
//!
//! The test skips (passes with a line on stderr) when the interface cannot be
//! opened, e.g. without capture privileges. It never hangs: every socket has a
//! timeout, accept and capture loops have deadlines, and every thread is joined.

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageRecord, Notice, Output};
use kafkashark::capture::{CaptureError, FrameSource, LiveConfig, LiveSource, Polled};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::PipelineConfig;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

const CLIENT_ID: &str = "kafkashark-live-test";
const APIVERSIONS_CORR: i32 = 0x0102_0304;
const METADATA_CORR: i32 = 7;
const THROTTLE_MS: i32 = 3;
/// UNKNOWN_TOPIC_OR_PARTITION, returned for the second topic asked for.
const UNKNOWN_TOPIC: i16 = 3;
const IO_TIMEOUT: Duration = Duration::from_secs(5);
const DEADLINE: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------
// Kafka wire encoding, just enough for the two exchanges.

fn uvarint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// COMPACT_STRING: length + 1 as an unsigned varint, then UTF-8 bytes.
fn compact_string(out: &mut Vec<u8>, s: &str) {
    uvarint(out, s.len() as u32 + 1);
    out.extend_from_slice(s.as_bytes());
}

/// COMPACT_NULLABLE_STRING null: length 0.
fn compact_null(out: &mut Vec<u8>) {
    out.push(0);
}

/// COMPACT_ARRAY length: n + 1.
fn compact_len(out: &mut Vec<u8>, n: usize) {
    uvarint(out, n as u32 + 1);
}

fn i16b(out: &mut Vec<u8>, v: i16) {
    out.extend_from_slice(&v.to_be_bytes());
}

fn i32b(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Empty tagged-field section.
fn no_tags(out: &mut Vec<u8>) {
    out.push(0);
}

/// Prefixes the message with its int32 size.
fn sized(body: Vec<u8>) -> Vec<u8> {
    let mut m = Vec::with_capacity(4 + body.len());
    i32b(&mut m, body.len() as i32);
    m.extend(body);
    m
}

/// Request header v2: api key, version, correlation id, client id (INT16 string), tags.
fn request_header(key: i16, version: i16, corr: i32) -> Vec<u8> {
    let mut h = Vec::new();
    i16b(&mut h, key);
    i16b(&mut h, version);
    i32b(&mut h, corr);
    i16b(&mut h, CLIENT_ID.len() as i16);
    h.extend_from_slice(CLIENT_ID.as_bytes());
    no_tags(&mut h);
    h
}

/// ApiVersions v3 request: header v2, ClientSoftwareName, ClientSoftwareVersion, tags.
fn api_versions_request() -> Vec<u8> {
    let mut m = request_header(18, 3, APIVERSIONS_CORR);
    compact_string(&mut m, "kafkashark-tests");
    compact_string(&mut m, "0.1.0");
    no_tags(&mut m);
    sized(m)
}

/// ApiVersions v3 response. The header is v0 (correlation id only, no tags) for
/// every ApiVersions version, so that a client can read it before it knows what the
/// broker supports (KIP-511).
fn api_versions_response(corr: i32) -> Vec<u8> {
    let mut m = Vec::new();
    i32b(&mut m, corr); // response header v0
    i16b(&mut m, 0); // ErrorCode
    let keys: [(i16, i16, i16); 3] = [(0, 0, 11), (3, 0, 12), (18, 0, 4)];
    compact_len(&mut m, keys.len()); // ApiKeys
    for (key, min, max) in keys {
        i16b(&mut m, key);
        i16b(&mut m, min);
        i16b(&mut m, max);
        no_tags(&mut m);
    }
    i32b(&mut m, 0); // ThrottleTimeMs
                     // Tagged fields: FinalizedFeaturesEpoch (tag 1, int64) = 5.
    uvarint(&mut m, 1); // one tagged field
    uvarint(&mut m, 1); // tag 1
    uvarint(&mut m, 8); // size
    m.extend_from_slice(&5i64.to_be_bytes());
    sized(m)
}

const TOPIC_ID: [u8; 16] = [
    0x6b, 0x61, 0x66, 0x6b, 0x61, 0x73, 0x68, 0x61, 0x72, 0x6b, 0x2d, 0x74, 0x65, 0x73, 0x74, 0x31,
];

/// Metadata v12 request: header v2; Topics (TopicId, Name); AllowAutoTopicCreation;
/// IncludeTopicAuthorizedOperations; tags.
fn metadata_request() -> Vec<u8> {
    let mut m = request_header(3, 12, METADATA_CORR);
    compact_len(&mut m, 2); // Topics
    for name in ["orders", "missing"] {
        m.extend_from_slice(&[0; 16]); // TopicId: zero, asking by name
        compact_string(&mut m, name);
        no_tags(&mut m);
    }
    m.push(0); // AllowAutoTopicCreation
    m.push(0); // IncludeTopicAuthorizedOperations
    no_tags(&mut m);
    sized(m)
}

/// Metadata v12 response: header v1 (correlation id, tags); one broker; "orders" with
/// one partition; "missing" with UNKNOWN_TOPIC_OR_PARTITION.
fn metadata_response(corr: i32, broker_port: u16) -> Vec<u8> {
    let mut m = Vec::new();
    i32b(&mut m, corr);
    no_tags(&mut m); // response header v1
    i32b(&mut m, THROTTLE_MS); // ThrottleTimeMs
    compact_len(&mut m, 1); // Brokers
    i32b(&mut m, 1); // NodeId
    compact_string(&mut m, "127.0.0.1"); // Host
    i32b(&mut m, i32::from(broker_port)); // Port
    compact_null(&mut m); // Rack
    no_tags(&mut m);
    compact_string(&mut m, "kafkashark-test-cluster"); // ClusterId
    i32b(&mut m, 1); // ControllerId
    compact_len(&mut m, 2); // Topics
                            // "orders": ErrorCode, Name, TopicId, IsInternal, Partitions, TopicAuthorizedOperations.
    i16b(&mut m, 0);
    compact_string(&mut m, "orders");
    m.extend_from_slice(&TOPIC_ID);
    m.push(0);
    compact_len(&mut m, 1); // Partitions
    i16b(&mut m, 0); // ErrorCode
    i32b(&mut m, 0); // PartitionIndex
    i32b(&mut m, 1); // LeaderId
    i32b(&mut m, 4); // LeaderEpoch
    for _ in 0..2 {
        compact_len(&mut m, 1); // ReplicaNodes, IsrNodes
        i32b(&mut m, 1);
    }
    compact_len(&mut m, 0); // OfflineReplicas
    no_tags(&mut m);
    i32b(&mut m, i32::MIN); // TopicAuthorizedOperations: not asked for
    no_tags(&mut m);
    // "missing": unknown topic, no partitions.
    i16b(&mut m, UNKNOWN_TOPIC);
    compact_string(&mut m, "missing");
    m.extend_from_slice(&[0; 16]);
    m.push(0);
    compact_len(&mut m, 0);
    i32b(&mut m, i32::MIN);
    no_tags(&mut m);
    no_tags(&mut m); // top-level tags
    sized(m)
}

// ---------------------------------------------------------------------------
// The two peers.

/// Reads one size-prefixed message (prefix included).
fn read_message(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size)?;
    let n = i32::from_be_bytes(size);
    assert!((0..1 << 20).contains(&n), "message size {n}");
    let mut m = size.to_vec();
    m.resize(4 + n as usize, 0);
    s.read_exact(&mut m[4..])?;
    Ok(m)
}

/// Accepts one connection (until `deadline`) and answers two requests by api key.
fn serve(listener: TcpListener, deadline: Instant) -> Result<(), String> {
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let mut conn = loop {
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err("server: no connection before the deadline".into());
                }
                thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("server: accept: {e}")),
        }
    };
    conn.set_nonblocking(false).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    conn.set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    for _ in 0..2 {
        let req = read_message(&mut conn).map_err(|e| format!("server: read: {e}"))?;
        let key = i16::from_be_bytes([req[4], req[5]]);
        let corr = i32::from_be_bytes([req[8], req[9], req[10], req[11]]);
        let resp = match key {
            18 => api_versions_response(corr),
            3 => metadata_response(corr, port),
            k => return Err(format!("server: unexpected api key {k}")),
        };
        conn.write_all(&resp)
            .map_err(|e| format!("server: write: {e}"))?;
    }
    // Wait for the client to close first, so the connection ends cleanly.
    let mut rest = Vec::new();
    let _ = conn.read_to_end(&mut rest);
    Ok(())
}

/// Connects, sends both requests one after the other, checks each response's
/// correlation id, and closes.
fn client(addr: SocketAddr) -> Result<(), String> {
    let mut s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    for (req, corr) in [
        (api_versions_request(), APIVERSIONS_CORR),
        (metadata_request(), METADATA_CORR),
    ] {
        s.write_all(&req)
            .map_err(|e| format!("client: write: {e}"))?;
        let resp = read_message(&mut s).map_err(|e| format!("client: read: {e}"))?;
        let got = i32::from_be_bytes([resp[4], resp[5], resp[6], resp[7]]);
        if got != corr {
            return Err(format!("client: correlation id {got}, want {corr}"));
        }
    }
    s.shutdown(std::net::Shutdown::Both)
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// The test.

#[test]
fn live_loopback_apiversions_and_metadata() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    let port = addr.port();

    let cfg = LiveConfig {
        filter: Some(format!("tcp port {port}")),
        timeout_ms: 50,
        ..LiveConfig::new("lo")
    };
    let mut src = match LiveSource::open(&cfg) {
        Ok(s) => s,
        Err(e @ CaptureError::Live { .. }) => {
            eprintln!("skipping live capture test: cannot capture on lo ({e}); run as root or with CAP_NET_RAW");
            return;
        }
        Err(e) => panic!("opening a live capture on lo: {e}"),
    };

    let start = Instant::now();
    let deadline = start + DEADLINE;
    let server = thread::spawn(move || serve(listener, deadline));
    let client = thread::spawn(move || client(addr));

    let mut an = Analyzer::new(AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(vec![port])),
        ..AnalyzerConfig::default()
    });
    let mut out: Vec<Output> = Vec::new();
    let mut frames = 0u64;
    let count = |out: &[Output]| {
        out.iter()
            .filter(|o| matches!(o, Output::Message(_)))
            .count()
    };
    let closed = |out: &[Output]| {
        out.iter().any(|o| {
            matches!(
                o.as_notice(),
                Some(Notice::Stream(
                    kafkashark::pipeline::Event::StreamClosed { .. }
                ))
            )
        })
    };
    // Poll until the four messages are in and the connection has closed (or the
    // deadline passes); the closing handshake is best effort.
    let mut four_at: Option<Instant> = None;
    while Instant::now() < deadline {
        match src.poll().expect("live capture read") {
            Polled::Frame(f) => {
                frames += 1;
                an.push(&f, &mut out);
            }
            Polled::Timeout => {}
            Polled::End => break,
        }
        if count(&out) >= 4 {
            let t = *four_at.get_or_insert_with(Instant::now);
            if closed(&out) || t.elapsed() > Duration::from_secs(1) {
                break;
            }
        }
    }
    an.finish(&mut out);
    let stats = src.stats().ok();

    let client_result = client.join().expect("client thread panicked");
    let server_result = server.join().expect("server thread panicked");
    client_result.expect("client");
    server_result.expect("server");

    let msgs: Vec<&MessageRecord> = out
        .iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(&**m),
            _ => None,
        })
        .collect();
    let summary: Vec<String> = msgs
        .iter()
        .map(|m| {
            format!(
                "{:?} key {:?} v{:?} corr {:?} paired {} err {:?}",
                m.info.kind,
                m.info.api_key,
                m.info.api_version,
                m.info.correlation_id,
                m.info.paired,
                m.info.decode_error
            )
        })
        .collect();
    assert_eq!(
        msgs.len(),
        4,
        "messages after {:?} ({frames} frames captured, stats {stats:?}): {summary:#?}",
        start.elapsed()
    );

    let want = [
        (Kind::Request, 18, 3, APIVERSIONS_CORR),
        (Kind::Response, 18, 3, APIVERSIONS_CORR),
        (Kind::Request, 3, 12, METADATA_CORR),
        (Kind::Response, 3, 12, METADATA_CORR),
    ];
    for (m, &(kind, key, version, corr)) in msgs.iter().zip(&want) {
        let i = &m.info;
        let what = format!("{kind:?} {key} v{version}");
        assert_eq!(i.kind, kind, "{what}: kind");
        assert_eq!(i.api_key.map(|k| k.0), Some(key), "{what}: api key");
        assert_eq!(i.api_version, Some(version), "{what}: api version");
        assert_eq!(i.correlation_id, Some(corr), "{what}: correlation id");
        assert_eq!(i.decode_error, None, "{what}: decode error");
        assert_eq!(i.stream, 0, "{what}: one connection");
        assert_eq!(i.broker, addr, "{what}: broker endpoint");
        assert_eq!(i.client.ip(), addr.ip(), "{what}: client address");
        assert_ne!(i.client.port(), port, "{what}: client port");
        assert!(
            !i.inferred,
            "{what}: decoded from its request, not inferred"
        );
        assert_eq!(i.length as usize + 4, m.raw.bytes.len(), "{what}: length");
        assert!(i.first_frame <= i.frame, "{what}: frames");
        match kind {
            Kind::Request => {
                assert_eq!(i.client_id.as_deref(), Some(CLIENT_ID), "{what}: client id");
                assert!(i.expects_response, "{what}: expects a response");
                assert_eq!(i.latency_ns, None, "{what}: no latency on requests");
            }
            Kind::Response => {
                assert!(i.paired, "{what}: paired");
                assert!(i.latency_ns.is_some(), "{what}: latency");
                assert!(
                    i.latency_ns.unwrap() < DEADLINE.as_nanos() as u64,
                    "{what}: latency {:?} ns",
                    i.latency_ns
                );
            }
        }
    }
    // Each response names its request.
    assert_eq!(msgs[1].info.peer, Some(msgs[0].info.index));
    assert_eq!(msgs[3].info.peer, Some(msgs[2].info.index));
    // The bytes are exactly what was sent.
    assert_eq!(&msgs[0].raw.bytes[..], &api_versions_request()[..]);
    assert_eq!(
        &msgs[1].raw.bytes[..],
        &api_versions_response(APIVERSIONS_CORR)[..]
    );
    assert_eq!(&msgs[2].raw.bytes[..], &metadata_request()[..]);
    assert_eq!(
        &msgs[3].raw.bytes[..],
        &metadata_response(METADATA_CORR, port)[..]
    );
    // Response facts.
    assert_eq!(msgs[1].info.throttle_time_ms, Some(0));
    assert!(msgs[1].info.error_codes.is_empty());
    assert_eq!(msgs[3].info.throttle_time_ms, Some(THROTTLE_MS));
    assert_eq!(msgs[3].info.error_codes, vec![UNKNOWN_TOPIC]);
    // Nothing left unanswered, no gaps or resyncs; the handshake's round trip.
    for o in &out {
        if let Output::Notice(n) = o {
            assert!(
                matches!(
                    **n,
                    Notice::Stream(kafkashark::pipeline::Event::StreamClosed { .. })
                        | Notice::Stream(kafkashark::pipeline::Event::Rtt {
                            rtt: kafkashark::flow::Rtt {
                                from: kafkashark::flow::RttFrom::Handshake,
                                ..
                            },
                            ..
                        })
                ),
                "unexpected notice {n:?}"
            );
        }
    }
}
