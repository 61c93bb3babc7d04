//! Soak: a long synthetic stream of Kafka traffic through the engine, with
//! internal sizes measured at checkpoints; they must stay flat.
//!
//! The traffic is generated in memory (no network, no files): up to 64
//! concurrent connections, each opened with a handshake, carrying
//! request/response pairs (Metadata v1, ApiVersions v0, Heartbeat v0), some
//! requests never answered, some Produce acks=0 requests, some requests in two
//! segments that arrive out of order; a connection ends
//! with FIN, with RST, or goes idle and is never closed (the idle timeout,
//! in packet time, must reclaim it). Packet time advances 20 ms per frame, so
//! the default idle timeout (600 s) passes every 30 000 frames.
//!
//! What is measured at each of 10 checkpoints: the analyzer's own sizes
//! (`Analyzer::sizes`: connections tracked by the reassembler, the bytes it
//! buffers, connections with framing state, connections the analyzer keeps
//! facts about, pending requests, topic names), and the messages and
//! unanswered-request notices the `analyzer::Analyzer` produced. After the
//! warm-up (the first four checkpoints, longer than the idle timeout in packet
//! time), no size may exceed 1.5 times its warm-up maximum (plus a small
//! slack), and at the end every table is empty.
//!
//! Always on: 150 000 messages (a few seconds in debug). The big soak is
//! ignored by default:
//!
//!     cargo test --release --test soak -- --ignored --nocapture
//!
//! runs 3 million messages and also checks the process's resident memory.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bytes::Bytes;
use kafkashark::analyzer::{Analyzer, AnalyzerConfig, AnalyzerSizes, Notice, Output};
use kafkashark::capture::{Segment, TcpFlags};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::{Event, PipelineConfig};
use kafkashark_harness::frame_of_segment;

const BROKER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 9092);

fn framed(body: &[u8]) -> Vec<u8> {
    let mut m = (body.len() as i32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

fn header(key: i16, version: i16, corr: i32) -> Vec<u8> {
    let mut h = Vec::with_capacity(32);
    h.extend_from_slice(&key.to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&corr.to_be_bytes());
    h.extend_from_slice(&4i16.to_be_bytes());
    h.extend_from_slice(b"soak");
    h
}

/// A request and (unless acks=0) its response.
fn exchange(kind: u32, corr: i32) -> (Vec<u8>, Option<Vec<u8>>) {
    match kind % 4 {
        0 => {
            let mut r = header(3, 1, corr); // Metadata v1, all topics
            r.extend_from_slice(&(-1i32).to_be_bytes());
            let mut p = corr.to_be_bytes().to_vec();
            p.extend_from_slice(&0i32.to_be_bytes()); // Brokers
            p.extend_from_slice(&1i32.to_be_bytes()); // ControllerId
            p.extend_from_slice(&0i32.to_be_bytes()); // Topics
            (framed(&r), Some(framed(&p)))
        }
        1 => {
            let r = header(18, 0, corr); // ApiVersions v0
            let mut p = corr.to_be_bytes().to_vec();
            p.extend_from_slice(&0i16.to_be_bytes());
            p.extend_from_slice(&1i32.to_be_bytes());
            p.extend_from_slice(&[0, 18, 0, 0, 0, 3]);
            (framed(&r), Some(framed(&p)))
        }
        2 => {
            let mut r = header(12, 0, corr); // Heartbeat v0
            r.extend_from_slice(&2i16.to_be_bytes());
            r.extend_from_slice(b"g1");
            r.extend_from_slice(&1i32.to_be_bytes());
            r.extend_from_slice(&2i16.to_be_bytes());
            r.extend_from_slice(b"m1");
            let mut p = corr.to_be_bytes().to_vec();
            p.extend_from_slice(&0i16.to_be_bytes());
            (framed(&r), Some(framed(&p)))
        }
        _ => {
            let mut r = header(0, 3, corr); // Produce v3, acks=0, no topics
            r.extend_from_slice(&(-1i16).to_be_bytes());
            r.extend_from_slice(&0i16.to_be_bytes());
            r.extend_from_slice(&1000i32.to_be_bytes());
            r.extend_from_slice(&0i32.to_be_bytes());
            (framed(&r), None)
        }
    }
}

/// How a connection ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Fin,
    Rst,
    Idle,
}

struct Conn {
    client: SocketAddr,
    cseq: u32,
    bseq: u32,
    left: u32,
    corr: i32,
    end: End,
}

/// The generator: deterministic (an LCG), segments in capture order.
struct Traffic {
    rng: u64,
    conns: Vec<Option<Conn>>,
    next_port: u32,
    out: Vec<Segment>,
    /// Requests expecting a response that will never get one.
    unanswered: u64,
    /// Requests and responses generated.
    messages: u64,
}

impl Traffic {
    fn new(slots: usize) -> Traffic {
        Traffic {
            rng: 0x9e37_79b9_7f4a_7c15,
            conns: (0..slots).map(|_| None).collect(),
            next_port: 0,
            out: Vec::new(),
            unanswered: 0,
            messages: 0,
        }
    }

    fn rand(&mut self) -> u32 {
        self.rng = self
            .rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.rng >> 33) as u32
    }

    fn seg(
        &mut self,
        src: SocketAddr,
        dst: SocketAddr,
        seq: u32,
        ack: u32,
        flags: TcpFlags,
        payload: Vec<u8>,
    ) {
        self.out.push(Segment {
            src,
            dst,
            seq,
            ack,
            flags,
            payload: Bytes::from(payload),
            payload_truncated_by: 0,
            capture: 0,
        });
    }

    /// One step: opens, advances or ends one connection; appends its segments.
    fn step(&mut self) {
        let slot = self.rand() as usize % self.conns.len();
        let r = self.rand();
        let flag = |syn, fin, rst, ack| TcpFlags { syn, fin, rst, ack };
        match self.conns[slot].take() {
            None => {
                // A fresh client address and port for every connection: no reuse.
                self.next_port += 1;
                let n = self.next_port;
                let ip = Ipv4Addr::new(10, 1 + (n >> 16) as u8, (n >> 8) as u8, n as u8);
                let client = SocketAddr::new(IpAddr::V4(ip), 40_000);
                let (cseq, bseq) = (self.rand(), self.rand());
                self.seg(
                    client,
                    BROKER,
                    cseq,
                    0,
                    flag(true, false, false, false),
                    vec![],
                );
                self.seg(
                    BROKER,
                    client,
                    bseq,
                    cseq.wrapping_add(1),
                    flag(true, false, false, true),
                    vec![],
                );
                let end = match r % 10 {
                    0 => End::Rst,
                    1 => End::Idle,
                    _ => End::Fin,
                };
                self.conns[slot] = Some(Conn {
                    client,
                    cseq: cseq.wrapping_add(1),
                    bseq: bseq.wrapping_add(1),
                    left: 5 + r % 200,
                    corr: 0,
                    end,
                });
            }
            Some(mut c) if c.left > 0 => {
                c.left -= 1;
                c.corr = c.corr.wrapping_add(1);
                let (req, resp) = exchange(r, c.corr);
                let ack = flag(false, false, false, true);
                if r.is_multiple_of(7) {
                    // Out of order: the second half of the request arrives first.
                    let half = req.len() / 2;
                    let second = c.cseq.wrapping_add(half as u32);
                    self.seg(c.client, BROKER, second, c.bseq, ack, req[half..].to_vec());
                    self.seg(c.client, BROKER, c.cseq, c.bseq, ack, req[..half].to_vec());
                } else {
                    self.seg(c.client, BROKER, c.cseq, c.bseq, ack, req.clone());
                }
                c.cseq = c.cseq.wrapping_add(req.len() as u32);
                self.messages += 1;
                if let Some(resp) = resp {
                    if r.is_multiple_of(23) {
                        self.unanswered += 1;
                    } else {
                        self.seg(BROKER, c.client, c.bseq, c.cseq, ack, resp.clone());
                        c.bseq = c.bseq.wrapping_add(resp.len() as u32);
                        self.messages += 1;
                    }
                }
                self.conns[slot] = Some(c);
            }
            Some(c) => match c.end {
                End::Fin => {
                    let f = flag(false, true, false, true);
                    self.seg(c.client, BROKER, c.cseq, c.bseq, f, vec![]);
                    self.seg(BROKER, c.client, c.bseq, c.cseq.wrapping_add(1), f, vec![]);
                    self.seg(
                        c.client,
                        BROKER,
                        c.cseq.wrapping_add(1),
                        c.bseq.wrapping_add(1),
                        flag(false, false, false, true),
                        vec![],
                    );
                }
                End::Rst => {
                    self.seg(
                        c.client,
                        BROKER,
                        c.cseq,
                        c.bseq,
                        flag(false, false, true, true),
                        vec![],
                    );
                }
                // Idle: the slot is reused, the old connection is never heard of again.
                End::Idle => {}
            },
        }
    }
}

/// Sizes at one checkpoint.
#[derive(Clone, Copy, Debug, Default)]
struct Sizes {
    an: AnalyzerSizes,
    rss_kb: u64,
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn soak(target_messages: u64, check_rss: bool) {
    let mut traffic = Traffic::new(64);
    let cfg = PipelineConfig::with_ports(Ports::List(vec![9092]));
    let mut an = Analyzer::new(AnalyzerConfig {
        pipeline: cfg,
        ..AnalyzerConfig::default()
    });
    let mut out = Vec::new();
    let (mut frame, mut ts_ns) = (0u64, 1_700_000_000u64 * 1_000_000_000);
    let (mut messages, mut unanswered_notices, mut closed) = (0u64, 0u64, 0u64);
    let mut checkpoints: Vec<Sizes> = Vec::new();
    let step = target_messages / 10;
    let handle =
        |out: &mut Vec<Output>, messages: &mut u64, unanswered: &mut u64, closed: &mut u64| {
            for o in out.drain(..) {
                match o {
                    Output::Message(m) => {
                        *messages += 1;
                        assert_eq!(
                            m.info.decode_error, None,
                            "message {} did not decode",
                            m.info.index
                        );
                        if m.info.kind == Kind::Response {
                            assert!(m.info.paired, "response {} unpaired", m.info.index);
                        }
                    }
                    Output::Notice(n) => match *n {
                        Notice::Unanswered { .. } => *unanswered += 1,
                        Notice::Stream(Event::StreamClosed { .. }) => *closed += 1,
                        _ => {}
                    },
                }
            }
        };
    while messages < target_messages {
        traffic.step();
        let segs = std::mem::take(&mut traffic.out);
        for s in &segs {
            frame += 1;
            ts_ns += 20_000_000;
            let f = frame_of_segment(s, frame, ts_ns);
            an.push(&f, &mut out);
        }
        handle(
            &mut out,
            &mut messages,
            &mut unanswered_notices,
            &mut closed,
        );
        if messages >= step * (checkpoints.len() as u64 + 1) {
            checkpoints.push(Sizes {
                an: an.sizes(),
                rss_kb: rss_kb(),
            });
        }
    }
    an.finish(&mut out);
    handle(
        &mut out,
        &mut messages,
        &mut unanswered_notices,
        &mut closed,
    );
    eprintln!(
        "soak: {messages} messages, {frame} frames, {closed} connections closed, \
         {unanswered_notices} unanswered (generated {}), checkpoints {checkpoints:?}",
        traffic.unanswered
    );
    // Every message came out, and every request left unanswered was reported once
    // its connection closed (or at the end): the pending table does not leak.
    assert_eq!(messages, traffic.messages);
    assert_eq!(unanswered_notices, traffic.unanswered);
    let end = an.sizes();
    assert_eq!(
        end,
        AnalyzerSizes {
            topics: end.topics,
            ..AnalyzerSizes::default()
        },
        "the analyzer still holds something after the end"
    );
    // Flat: after the warm-up, no size grows past 1.5x its warm-up maximum.
    let warm = &checkpoints[..4];
    let max = |f: fn(&Sizes) -> u64, c: &[Sizes]| c.iter().map(f).max().unwrap_or(0);
    type Size = fn(&Sizes) -> u64;
    let sizes: [(&str, Size, u64); 6] = [
        ("tracked connections", |s| s.an.connections as u64, 64),
        ("buffered bytes", |s| s.an.buffered_bytes as u64, 4096),
        ("framed streams", |s| s.an.framed_streams as u64, 64),
        ("analyzer streams", |s| s.an.streams as u64, 64),
        ("pending requests", |s| s.an.pending_requests as u64, 64),
        ("topic names", |s| s.an.topics as u64, 64),
    ];
    for (name, f, slack) in sizes {
        let w = max(f, warm);
        let later = max(f, &checkpoints[4..]);
        assert!(
            later <= w + w / 2 + slack,
            "{name} grew from {w} (warm-up) to {later}: {checkpoints:?}"
        );
    }
    if check_rss {
        let w = max(|s| s.rss_kb, warm);
        let later = max(|s| s.rss_kb, &checkpoints[4..]);
        assert!(
            later <= w + w / 2 + 64 * 1024,
            "resident memory grew from {w} kB to {later} kB"
        );
    }
}

#[test]
fn soak_small() {
    soak(150_000, false);
}

#[test]
#[ignore = "3 million messages; run with --release (see the module doc)"]
fn soak_big() {
    soak(3_000_000, true);
}
