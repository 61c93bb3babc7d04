//! Byte streams: the framing, reassembly and whole-pipeline harnesses, and
//! [`frame_of_segment`], the raw IP frame a test builds around a segment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageRecord, Output};
use kafkashark::capture::{Frame, LinkType, Segment, TcpFlags};
use kafkashark::flow::{FlowConfig, FlowEvent, Opened, Origin, Ports, Reassembler, ReorderWindow};
use kafkashark::kafka::framing::{Framer, FramerConfig, FramerEvent, RequestLog, SeenRequest};
use kafkashark::pipeline::{Event, Pipeline, PipelineConfig};
use kafkashark::vocab::{Direction, Timestamp};

use crate::tree::check_outputs;
use crate::{fuzz_opts, Choices};

// ---------------------------------------------------------------------------
// Framing.

/// Framing: one `Framer` fed arbitrary chunks. Byte 0: bit 0 trusted start,
/// bit 1 response direction, bit 2 a log of requests (key and version from the
/// next two bytes, a largest size from the third). Then operations: a byte `op` and a length byte;
/// `op % 8 == 7` is a gap of that length, else the next `len` input bytes are a chunk.
pub fn framing(data: &[u8]) {
    let mut c = Choices::new(data);
    let flags = c.byte();
    let dir = if flags & 2 == 0 {
        Direction::ClientToBroker
    } else {
        Direction::BrokerToClient
    };
    let cfg = FramerConfig {
        max_message: 1 << 16,
        resync_wait: 1 << 12,
    };
    let mut f = Framer::new(0, dir, flags & 1 == 1, cfg);
    // The connection's requests: every third correlation id up to 30, of the api
    // key and version the next two bytes choose, and a largest size seen.
    let mut pending = RequestLog::new(8);
    if flags & 4 != 0 {
        let (key, version) = (i16::from(c.byte() % 80), i16::from(c.byte() % 20));
        for corr in (0..=30).step_by(3) {
            pending.request(SeenRequest {
                correlation_id: corr,
                api_key: key,
                api_version: version,
            });
        }
        pending.size(u32::from(c.byte()) << 4);
        pending.response(0);
    }
    let mut offset = 0u64;
    let mut frame = 0u64;
    // What the stream held at each offset (None = gap), to check message bytes.
    let mut stream: Vec<Option<u8>> = Vec::new();
    while !c.is_empty() {
        let op = c.byte();
        let len = usize::from(c.byte()) + usize::from(op & 0x70) * 4;
        frame += 1;
        let ts = Timestamp::new(i64::try_from(frame).unwrap_or(0), 0);
        if op % 8 == 7 {
            let n = len as u64;
            let _ = ts;
            f.gap(offset, n, frame, &pending);
            stream.extend(std::iter::repeat_n(None, len));
            offset += n;
        } else {
            let chunk = c.take(len);
            stream.extend(chunk.iter().map(|&b| Some(b)));
            f.push(
                Bytes::copy_from_slice(chunk),
                offset,
                frame,
                ts,
                Origin::Unknown,
            );
            offset += chunk.len() as u64;
        }
        let mut n = 0usize;
        while let Some(ev) = f.next_event(&pending) {
            check_framer_event(&ev, &stream, cfg);
            n += 1;
            assert!(
                n <= stream.len() + 2,
                "framer produced more events than bytes"
            );
        }
        assert!(
            f.buffered() <= offset,
            "framer buffers more than it was given"
        );
    }
    let mut out = Vec::new();
    f.finish(&pending, &mut out);
    for ev in &out {
        check_framer_event(ev, &stream, cfg);
    }
    assert!(out.len() <= stream.len() + 2);
}

fn check_framer_event(ev: &FramerEvent, stream: &[Option<u8>], cfg: FramerConfig) {
    match ev {
        FramerEvent::Message(m) | FramerEvent::Partial(m) => {
            let start = usize::try_from(m.stream_offset).expect("offset fits");
            let size = m.size().expect("a message has its size prefix");
            assert!(size >= 0, "negative size {size} framed");
            assert!(
                usize::try_from(size).is_ok_and(|s| s <= cfg.max_message),
                "size {size} beyond max_message"
            );
            let whole = 4 + size as u64;
            assert_eq!(
                m.bytes.len() as u64 + m.missing,
                whole,
                "bytes + missing = 4 + size"
            );
            if matches!(ev, FramerEvent::Message(_)) {
                assert_eq!(m.missing, 0);
                let end = start + m.bytes.len();
                let held = stream.get(start..end).unwrap_or_else(|| {
                    panic!(
                        "message [{start}, {end}) beyond the stream ({})",
                        stream.len()
                    )
                });
                for (i, (b, h)) in m.bytes.iter().zip(held).enumerate() {
                    assert_eq!(
                        Some(*b),
                        *h,
                        "message byte {i} at stream offset {}",
                        start + i
                    );
                }
            } else {
                assert!(m.missing > 0, "a partial message misses bytes");
            }
            assert!(m.first_frame <= m.last_frame);
            assert!(m.provenance.windows(2).all(|w| w[0].0 < w[1].0));
        }
        FramerEvent::Resynced { stream_offset, .. } | FramerEvent::Desync { stream_offset, .. } => {
            assert!(*stream_offset <= stream.len() as u64);
        }
        FramerEvent::Discarded { bytes, .. } => {
            assert!(*bytes <= stream.len() as u64);
        }
    }
}

// ---------------------------------------------------------------------------
// Reassembly.

const CLIENTS: [SocketAddr; 3] = [
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000),
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 40001),
    SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 40002),
];

fn broker_of(c: SocketAddr) -> SocketAddr {
    let ip = match c.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    };
    SocketAddr::new(ip, 9092)
}

/// One segment operation decoded from 8 bytes plus payload.
struct SegOp {
    seg: Segment,
    dt_ns: u64,
}

fn seg_op(c: &mut Choices<'_>, isn: &[[u32; 2]; 3]) -> SegOp {
    let a = c.byte();
    let flags = c.byte();
    let rel = c.u16();
    let len = usize::from(c.byte());
    let dt = c.byte();
    let conn = usize::from(a % 3);
    let to_broker = a & 4 == 0;
    let client = CLIENTS[conn];
    let broker = broker_of(client);
    let side = usize::from(!to_broker);
    // Sequence numbers relative to an initial one close to 2^32, so streams wrap.
    let base = isn[conn][side];
    let seq = base
        .wrapping_add(u32::from(rel))
        .wrapping_sub(if a & 8 != 0 { 512 } else { 0 });
    let ack = isn[conn][1 - side].wrapping_add(u32::from(c.u16()));
    let payload = Bytes::copy_from_slice(c.take(len));
    let truncated = if flags & 0x40 != 0 { u32::from(dt) } else { 0 };
    let (src, dst) = if to_broker {
        (client, broker)
    } else {
        (broker, client)
    };
    SegOp {
        seg: Segment {
            src,
            dst,
            seq,
            ack,
            flags: TcpFlags {
                syn: flags & 1 != 0,
                fin: flags & 2 != 0,
                rst: flags & 4 != 0 && flags & 0x20 != 0,
                ack: flags & 8 != 0,
            },
            payload,
            payload_truncated_by: truncated,
            capture: 0,
        },
        // Mostly small steps; sometimes past the gap or idle timeouts.
        dt_ns: match flags >> 7 {
            0 => u64::from(dt) * 1_000_000,
            _ => u64::from(dt) * 5_000_000_000,
        },
    }
}

/// Reassembly: a sequence of segment operations (8 bytes each, then the
/// payload) on three connections into `flow::Reassembler` with small bounds.
/// Checks that every direction's Data/Gap events are contiguous from 0, that
/// the bytes of every Data event are a stretch of the payload of the frame it
/// names, and that buffering and tracked connections stay within their bounds.
pub fn reassembly(data: &[u8]) {
    let mut c = Choices::new(data);
    let isn = [
        [u32::MAX - 100, 7],
        [c.u32(), c.u32()],
        [u32::MAX - 3000, u32::MAX],
    ];
    let cfg = FlowConfig {
        ports: Ports::List(vec![9092]),
        max_buffer_per_dir: 4096,
        max_buffer_total: 12_288,
        gap_timeout_ns: 2_000_000_000,
        idle_timeout_ns: 60_000_000_000,
        max_connections: 2,
        reorder: ReorderWindow {
            packets: 6,
            time_ns: 500_000_000,
            bytes: 2048,
        },
    };
    let mut r = Reassembler::new(cfg.clone());
    let mut next: std::collections::HashMap<(u64, Direction), u64> = Default::default();
    let mut open: std::collections::HashSet<u64> = Default::default();
    let mut ts_ns = 1_700_000_000u64 * 1_000_000_000;
    let mut frame = 0u64;
    // The payload each frame carried (the input bounds them).
    let mut carried: std::collections::HashMap<u64, Bytes> = Default::default();
    let mut out = Vec::new();
    let check = |out: &mut Vec<FlowEvent>,
                 next: &mut std::collections::HashMap<(u64, Direction), u64>,
                 open: &mut std::collections::HashSet<u64>,
                 carried: &std::collections::HashMap<u64, Bytes>| {
        for ev in out.drain(..) {
            match ev {
                FlowEvent::Open(Opened { stream, .. }) => {
                    assert!(open.insert(stream), "stream {stream} opened twice");
                }
                FlowEvent::Start { stream, .. } => {
                    assert!(open.contains(&stream), "Start on unopened stream {stream}");
                }
                FlowEvent::Data {
                    stream,
                    dir,
                    data,
                    stream_offset,
                    frame,
                    ..
                } => {
                    assert!(open.contains(&stream), "Data on closed stream {stream}");
                    assert!(!data.is_empty(), "empty Data event");
                    // The bytes are a stretch of the payload of the frame named.
                    let payload = carried.get(&frame).map_or(&[][..], |p| &p[..]);
                    assert!(
                        payload.windows(data.len()).any(|w| w == &data[..]),
                        "stream {stream} {dir:?}: Data not carried by frame {frame}"
                    );
                    let n = next.entry((stream, dir)).or_insert(0);
                    assert_eq!(
                        *n, stream_offset,
                        "stream {stream} {dir:?}: Data not contiguous"
                    );
                    *n += data.len() as u64;
                }
                FlowEvent::Gap {
                    stream,
                    dir,
                    stream_offset,
                    len,
                    ..
                } => {
                    assert!(open.contains(&stream), "Gap on closed stream {stream}");
                    let n = next.entry((stream, dir)).or_insert(0);
                    assert_eq!(
                        *n, stream_offset,
                        "stream {stream} {dir:?}: Gap not contiguous"
                    );
                    assert!(len > 0, "empty gap");
                    *n += len;
                }
                FlowEvent::Rtt { stream, .. } => {
                    assert!(open.contains(&stream), "Rtt on unopened stream {stream}");
                }
                FlowEvent::Closed { stream, .. } => {
                    assert!(open.remove(&stream), "stream {stream} closed twice");
                }
            }
        }
    };
    while !c.is_empty() {
        let op = seg_op(&mut c, &isn);
        frame += 1;
        ts_ns = ts_ns.saturating_add(op.dt_ns);
        carried.insert(frame, op.seg.payload.clone());
        let ts = Timestamp::new(
            i64::try_from(ts_ns / 1_000_000_000).unwrap_or(0),
            (ts_ns % 1_000_000_000) as u32,
        );
        r.push(&mut op.seg.clone(), frame, ts, None, &mut out);
        check(&mut out, &mut next, &mut open, &carried);
        assert!(
            r.buffered() <= cfg.max_buffer_total + 2 * 256 * 2,
            "{} bytes buffered, bound {}",
            r.buffered(),
            cfg.max_buffer_total
        );
        assert!(
            r.tracked() <= cfg.max_connections,
            "{} connections tracked, bound {}",
            r.tracked(),
            cfg.max_connections
        );
    }
    r.finish(&mut out);
    check(&mut out, &mut next, &mut open, &carried);
    assert!(open.is_empty(), "streams left open after finish: {open:?}");
    assert_eq!(r.buffered(), 0, "bytes buffered after finish");
}

/// The whole pipeline (reassembly, side detection, framing) and the analyzer
/// fed the same kind of segment operations as [`reassembly`], built into raw
/// IP frames. Byte 0 bit 0 selects `Ports::Any`.
pub fn pipeline(data: &[u8]) {
    let (cfg, frames) = pipeline_frames(data);
    let mut p = Pipeline::new(cfg.clone());
    let mut an = Analyzer::new(AnalyzerConfig {
        pipeline: cfg,
        keep_trees: true,
        decode: fuzz_opts(),
        ..AnalyzerConfig::default()
    });
    let mut evs = Vec::new();
    let mut outs = Vec::new();
    let mut input = 0usize;
    for f in frames {
        input += f.data.len();
        p.push(f.clone(), &mut evs);
        an.push(&f, &mut outs);
        check_pipeline_events(&mut evs, input);
        check_outputs(&mut outs);
    }
    p.finish(&mut evs);
    an.finish(&mut outs);
    check_pipeline_events(&mut evs, input);
    check_outputs(&mut outs);
}

/// [`pipeline`]'s input read as raw IP frames: the settings to read them
/// with (byte 0 bit 0: `Ports::Any`, else port 9092; small bounds, so that
/// inputs reach them) and the frames of the segment operations that follow
/// (as [`reassembly`]'s), numbered from 1 and timed as the operations step.
pub fn pipeline_frames(data: &[u8]) -> (PipelineConfig, PipelineFrames<'_>) {
    let mut c = Choices::new(data);
    let mut cfg = PipelineConfig::with_ports(if c.byte() & 1 == 1 {
        Ports::Any
    } else {
        Ports::List(vec![9092])
    });
    cfg.framing.max_message = 1 << 16;
    cfg.framing.resync_wait = 1 << 12;
    cfg.flow.max_buffer_per_dir = 4096;
    cfg.flow.max_buffer_total = 12_288;
    cfg.detect_limit = 4096;
    cfg.flow.max_connections = 2;
    cfg.flow.gap_timeout_ns = 2_000_000_000;
    let frames = PipelineFrames {
        c,
        ts_ns: 1_700_000_000u64 * 1_000_000_000,
        frame: 0,
    };
    (cfg, frames)
}

/// The frames of [`pipeline_frames`].
pub struct PipelineFrames<'a> {
    c: Choices<'a>,
    ts_ns: u64,
    frame: u64,
}

impl Iterator for PipelineFrames<'_> {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        const ISN: [[u32; 2]; 3] = [
            [u32::MAX - 100, 7],
            [1000, 2000],
            [u32::MAX - 3000, u32::MAX],
        ];
        if self.c.is_empty() {
            return None;
        }
        let op = seg_op(&mut self.c, &ISN);
        self.frame += 1;
        self.ts_ns = self.ts_ns.saturating_add(op.dt_ns);
        Some(frame_of_segment(&op.seg, self.frame, self.ts_ns))
    }
}

fn check_pipeline_events(evs: &mut Vec<Event>, input: usize) {
    for ev in evs.drain(..) {
        if let Event::Message(m) | Event::Partial(m) = &ev {
            assert!(m.bytes.len() <= input, "a message longer than all input");
            let size = m.size().unwrap_or(0);
            assert!(size >= 0);
            assert_eq!(m.bytes.len() as u64 + m.missing, 4 + size as u64);
        }
    }
}

/// Every message an analyzer with `cfg` makes of `frames`, in order (its
/// notices left out): what the tests and benches that compare readings of
/// the same traffic read.
pub fn messages<F: std::borrow::Borrow<Frame>>(
    frames: impl IntoIterator<Item = F>,
    cfg: AnalyzerConfig,
) -> Vec<MessageRecord> {
    let mut a = Analyzer::new(cfg);
    let mut out = Vec::new();
    for f in frames {
        a.push(f.borrow(), &mut out);
    }
    a.finish(&mut out);
    out.into_iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(*m),
            Output::Notice(_) => None,
        })
        .collect()
}

/// A raw-IP frame carrying `seg` (IPv4 or IPv6 by its addresses).
pub fn frame_of_segment(seg: &Segment, index: u64, ts_ns: u64) -> Frame {
    let mut tcp = Vec::with_capacity(20 + seg.payload.len());
    tcp.extend_from_slice(&seg.src.port().to_be_bytes());
    tcp.extend_from_slice(&seg.dst.port().to_be_bytes());
    tcp.extend_from_slice(&seg.seq.to_be_bytes());
    tcp.extend_from_slice(&seg.ack.to_be_bytes());
    let f = &seg.flags;
    let bits = u8::from(f.fin) | u8::from(f.syn) << 1 | u8::from(f.rst) << 2 | u8::from(f.ack) << 4;
    tcp.extend_from_slice(&[0x50, bits, 0xff, 0xff, 0, 0, 0, 0]);
    tcp.extend_from_slice(&seg.payload);
    let mut ip = Vec::with_capacity(40 + tcp.len());
    match (seg.src.ip(), seg.dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = u16::try_from(20 + tcp.len()).unwrap_or(u16::MAX);
            ip.extend_from_slice(&[0x45, 0]);
            ip.extend_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
        }
        (s, d) => {
            let to6 = |a: IpAddr| match a {
                IpAddr::V4(v) => v.to_ipv6_mapped(),
                IpAddr::V6(v) => v,
            };
            ip.extend_from_slice(&[0x60, 0, 0, 0]);
            ip.extend_from_slice(&u16::try_from(tcp.len()).unwrap_or(u16::MAX).to_be_bytes());
            ip.extend_from_slice(&[6, 64]);
            ip.extend_from_slice(&to6(s).octets());
            ip.extend_from_slice(&to6(d).octets());
        }
    }
    ip.extend_from_slice(&tcp);
    let caplen = u32::try_from(ip.len()).unwrap_or(u32::MAX);
    Frame {
        index,
        ts: Timestamp::new(
            i64::try_from(ts_ns / 1_000_000_000).unwrap_or(0),
            (ts_ns % 1_000_000_000) as u32,
        ),
        caplen,
        origlen: caplen.saturating_add(seg.payload_truncated_by),
        file_offset: None,
        capture: 0,
        link: LinkType::RAW,
        data: Bytes::from(ip),
    }
}
