//! A small pcap toolkit for integration tests.
//!
//! - [`extract`] reads a capture with kafkashark's own [`FileSource`] and
//!   [`decode_segment`] and gives every TCP segment as a [`Seg`] (time,
//!   endpoints, sequence and acknowledgment numbers, flags, payload).
//! - Packet builders: Ethernet (with 802.1Q tags, QinQ), Linux SLL2, BSD
//!   NULL/LOOP and raw IP link headers; IPv4 and IPv6; TCP with sequence
//!   numbers, flags and payload. Checksums are left zero: kafkashark does not
//!   verify them.
//! - Writers: classic pcap (microsecond or nanosecond magic) and pcapng (one
//!   SHB, one IDB, EPBs), record by record with `ts`, `caplen` and `origlen`.
//! - [`write_capture`] re-emits a list of segments as a new capture file in
//!   the system temp dir, with a chosen [`Link`] and [`Format`]; the file is
//!   removed when the returned [`TempCapture`] is dropped.
//! - [`analyze`] runs kafkashark's [`Analyzer`] over a capture file.
//!
//! Invariants: a written capture decodes, frame by frame, to exactly the
//! segments it was written from (same endpoints, numbers, flags and payload);
//! each segment's two endpoints must be of one address family; nothing here
//! reads or writes outside `std::env::temp_dir()` except the capture given.

#![allow(dead_code)]

pub mod hostile;
pub mod tmux;

use bytes::Bytes;
use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageRecord, Notice, Output};
use kafkashark::capture::{decode_segment, FileSource, FrameSource};
use kafkashark::flow::Ports;
use kafkashark::pipeline::{PipelineConfig, PipelineStats};
use kafkashark::vocab::Timestamp;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// TCP flag bits, as in the TCP header's flags byte.
pub const FIN: u8 = 0x01;
/// SYN.
pub const SYN: u8 = 0x02;
/// RST.
pub const RST: u8 = 0x04;
/// PSH.
pub const PSH: u8 = 0x08;
/// ACK.
pub const ACK: u8 = 0x10;

/// Ethernet type of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethernet type of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// 802.1Q customer tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// 802.1ad service tag (outer tag of QinQ).
pub const ETHERTYPE_QINQ: u16 = 0x88a8;

/// The directory holding ../shared/captures (recorded/ and public/).
pub const SHARED_CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/captures");

/// One TCP segment of a capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seg {
    /// Frame number in the capture it came from (0 when made up by a test).
    pub frame: u64,
    /// Capture time.
    pub ts: Timestamp,
    /// Sender.
    pub src: SocketAddr,
    /// Receiver.
    pub dst: SocketAddr,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// TCP flag bits ([`FIN`], [`SYN`], ...).
    pub flags: u8,
    /// TCP payload.
    pub payload: Bytes,
}

impl Seg {
    /// True when the SYN flag is set.
    pub fn syn(&self) -> bool {
        self.flags & SYN != 0
    }

    /// True when the FIN flag is set.
    pub fn fin(&self) -> bool {
        self.flags & FIN != 0
    }

    /// Sequence space the segment occupies (payload, plus one each for SYN and FIN).
    pub fn seq_len(&self) -> u32 {
        self.payload.len() as u32 + u32::from(self.syn()) + u32::from(self.fin())
    }

    /// Sequence number of the first payload byte.
    pub fn data_seq(&self) -> u32 {
        self.seq.wrapping_add(u32::from(self.syn()))
    }
}

/// The `.pcap`/`.pcapng` files under `captures/` and, with `shared`, under
/// `../shared/captures` when present, recursively, sorted (the recorded
/// captures ship in both: [`unique_names`] keeps each once).
pub fn capture_files(shared: bool) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for p in std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
        {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("captures"),
        &mut v,
    );
    if shared {
        walk(Path::new(SHARED_CAPTURES), &mut v);
    }
    v.sort();
    v
}

/// `files` with each file name once (the first of its paths).
pub fn unique_names(mut files: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut names = std::collections::HashSet::new();
    files.retain(|p| names.insert(p.file_name().map(|n| n.to_owned())));
    files
}

/// A recorded capture: the copy shipped in captures/, else the one in
/// ../shared/captures/recorded, or `None` (with a line on stderr saying why the
/// caller skips) when neither is there.
pub fn recorded(name: &str) -> Option<PathBuf> {
    // The recorded captures ship in the repository too: those run without ../shared.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    if shipped.is_file() {
        return Some(shipped);
    }
    let p = Path::new(SHARED_CAPTURES).join("recorded").join(name);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found", p.display());
        None
    }
}

/// Every TCP segment of a capture, in capture order. Frames that are not TCP
/// are left out; a frame whose payload the snaplen cut is a test-setup error.
pub fn extract(path: &Path) -> Vec<Seg> {
    match try_extract(path) {
        Ok(segs) => segs,
        Err(frame) => panic!("frame {frame}: payload cut by the snaplen"),
    }
}

/// [`extract`], or the number of the first frame whose payload the snaplen cut.
pub fn try_extract(path: &Path) -> Result<Vec<Seg>, u64> {
    let mut src = FileSource::open(path.to_str().expect("utf-8 path")).expect("open capture");
    let mut segs = Vec::new();
    while let Some(f) = src.next_frame().expect("read capture") {
        let Ok(s) = decode_segment(&f) else {
            continue;
        };
        if s.payload_truncated_by > 0 {
            return Err(f.index);
        }
        let mut flags = 0;
        for (on, bit) in [
            (s.flags.fin, FIN),
            (s.flags.syn, SYN),
            (s.flags.rst, RST),
            (s.flags.ack, ACK),
        ] {
            if on {
                flags |= bit;
            }
        }
        if !s.payload.is_empty() {
            flags |= PSH;
        }
        segs.push(Seg {
            frame: f.index,
            ts: f.ts,
            src: s.src,
            dst: s.dst,
            seq: s.seq,
            ack: s.ack,
            flags,
            payload: Bytes::copy_from_slice(&s.payload),
        });
    }
    Ok(segs)
}

// ---------------------------------------------------------------------------
// Packet builders.

/// A TCP header (20 bytes, no options) followed by the payload. Checksum zero.
pub fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(20 + payload.len());
    v.extend_from_slice(&sport.to_be_bytes());
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&ack.to_be_bytes());
    v.push(5 << 4); // data offset: 5 words
    v.push(flags);
    v.extend_from_slice(&65535u16.to_be_bytes()); // window
    v.extend_from_slice(&[0, 0]); // checksum (not verified)
    v.extend_from_slice(&[0, 0]); // urgent pointer
    v.extend_from_slice(payload);
    v
}

/// An IPv4 header (20 bytes, DF, TTL 64) around `payload` of IP protocol `proto`.
pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = u16::try_from(20 + payload.len()).expect("IPv4 packet over 65535 bytes");
    let mut v = Vec::with_capacity(usize::from(total));
    v.push(0x45); // version 4, IHL 5
    v.push(0);
    v.extend_from_slice(&total.to_be_bytes());
    v.extend_from_slice(&[0, 0]); // identification
    v.extend_from_slice(&[0x40, 0]); // DF, fragment offset 0
    v.push(64); // TTL
    v.push(proto);
    v.extend_from_slice(&[0, 0]); // header checksum (not verified)
    v.extend_from_slice(&src.octets());
    v.extend_from_slice(&dst.octets());
    v.extend_from_slice(payload);
    v
}

/// An IPv6 header (40 bytes, no extension headers) around `payload`.
pub fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, next: u8, payload: &[u8]) -> Vec<u8> {
    let len = u16::try_from(payload.len()).expect("IPv6 payload over 65535 bytes");
    let mut v = Vec::with_capacity(40 + payload.len());
    v.extend_from_slice(&[0x60, 0, 0, 0]); // version 6, traffic class 0, flow label 0
    v.extend_from_slice(&len.to_be_bytes());
    v.push(next);
    v.push(64); // hop limit
    v.extend_from_slice(&src.octets());
    v.extend_from_slice(&dst.octets());
    v.extend_from_slice(payload);
    v
}

/// The IP packet (IPv4 or IPv6, by the addresses) carrying the segment.
pub fn ip_packet(s: &Seg) -> Vec<u8> {
    let t = tcp(
        s.src.port(),
        s.dst.port(),
        s.seq,
        s.ack,
        s.flags,
        &s.payload,
    );
    match (s.src.ip(), s.dst.ip()) {
        (IpAddr::V4(a), IpAddr::V4(b)) => ipv4(a, b, 6, &t),
        (IpAddr::V6(a), IpAddr::V6(b)) => ipv6(a, b, 6, &t),
        _ => panic!("segment {s:?} mixes address families"),
    }
}

fn ethertype_of(ip: &[u8]) -> u16 {
    match ip.first().map(|b| b >> 4) {
        Some(6) => ETHERTYPE_IPV6,
        _ => ETHERTYPE_IPV4,
    }
}

/// An Ethernet II frame: MACs, then one tag per `tags` entry (TPID, VLAN id), then the EtherType.
pub fn ethernet(tags: &[(u16, u16)], ip: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(14 + 4 * tags.len() + ip.len());
    v.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x02]); // destination MAC
    v.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01]); // source MAC
    for &(tpid, vid) in tags {
        v.extend_from_slice(&tpid.to_be_bytes());
        v.extend_from_slice(&(vid & 0x0fff).to_be_bytes()); // PCP 0, DEI 0, VLAN id
    }
    v.extend_from_slice(&ethertype_of(ip).to_be_bytes());
    v.extend_from_slice(ip);
    v
}

/// A Linux cooked v2 (SLL2) frame as `tcpdump -i any` writes it on loopback.
pub fn sll2(ip: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(20 + ip.len());
    v.extend_from_slice(&ethertype_of(ip).to_be_bytes()); // protocol
    v.extend_from_slice(&[0, 0]); // reserved
    v.extend_from_slice(&1u32.to_be_bytes()); // interface index (lo)
    v.extend_from_slice(&772u16.to_be_bytes()); // ARPHRD_LOOPBACK
    v.push(0); // packet type: to us
    v.push(6); // address length
    v.extend_from_slice(&[0; 8]); // address, padded to 8
    v.extend_from_slice(ip);
    v
}

/// A BSD NULL frame: the address family in the writer's (here little-endian) order.
/// IPv6 uses 30 (macOS's AF_INET6).
pub fn null(ip: &[u8]) -> Vec<u8> {
    let family: u32 = if ethertype_of(ip) == ETHERTYPE_IPV6 {
        30
    } else {
        2
    };
    let mut v = family.to_le_bytes().to_vec();
    v.extend_from_slice(ip);
    v
}

/// An OpenBSD LOOP frame: the address family in network order. IPv6 uses 24.
pub fn loop_(ip: &[u8]) -> Vec<u8> {
    let family: u32 = if ethertype_of(ip) == ETHERTYPE_IPV6 {
        24
    } else {
        2
    };
    let mut v = family.to_be_bytes().to_vec();
    v.extend_from_slice(ip);
    v
}

/// The link layer of a written capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// Ethernet II with these (TPID, VLAN id) tags, outermost first.
    Ethernet(Vec<(u16, u16)>),
    /// Linux cooked capture v2 (276).
    Sll2,
    /// BSD loopback (0), little-endian family.
    Null,
    /// OpenBSD loopback (108), network-order family.
    Loop,
    /// Raw IP (101).
    Raw,
    /// Raw IP as libpcap's DLT_RAW (12).
    RawDlt,
}

impl Link {
    /// The pcap link type number.
    pub fn linktype(&self) -> u32 {
        match self {
            Link::Ethernet(_) => 1,
            Link::Sll2 => 276,
            Link::Null => 0,
            Link::Loop => 108,
            Link::Raw => 101,
            Link::RawDlt => 12,
        }
    }

    /// The frame bytes for one IP packet.
    pub fn frame(&self, ip: &[u8]) -> Vec<u8> {
        match self {
            Link::Ethernet(tags) => ethernet(tags, ip),
            Link::Sll2 => sll2(ip),
            Link::Null => null(ip),
            Link::Loop => loop_(ip),
            Link::Raw | Link::RawDlt => ip.to_vec(),
        }
    }
}

// ---------------------------------------------------------------------------
// Writers.

/// A classic pcap file being written to memory.
pub struct PcapWriter {
    buf: Vec<u8>,
    nanos: bool,
}

impl PcapWriter {
    /// A file of link type `linktype`; `nanos` picks the nanosecond magic (a1b23c4d).
    pub fn new(linktype: u32, nanos: bool) -> PcapWriter {
        let mut buf = Vec::new();
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        buf.extend_from_slice(&magic.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        buf.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        buf.extend_from_slice(&262_144u32.to_le_bytes()); // snaplen
        buf.extend_from_slice(&linktype.to_le_bytes());
        PcapWriter { buf, nanos }
    }

    /// One record: `data` is what was captured, `origlen` what was on the wire.
    pub fn record(&mut self, ts: Timestamp, data: &[u8], origlen: u32) {
        let frac = if self.nanos {
            ts.nanos
        } else {
            ts.nanos / 1000
        };
        self.buf
            .extend_from_slice(&u32::try_from(ts.secs).expect("ts").to_le_bytes());
        self.buf.extend_from_slice(&frac.to_le_bytes());
        self.buf
            .extend_from_slice(&(data.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&origlen.to_le_bytes());
        self.buf.extend_from_slice(data);
    }

    /// The file's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

fn pad4(v: &mut Vec<u8>) {
    v.resize(v.len().next_multiple_of(4), 0);
}

fn block(out: &mut Vec<u8>, ty: u32, body: &[u8]) {
    let total = 12 + body.len() as u32;
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&total.to_le_bytes());
}

/// A pcapng file being written to memory: one section, one interface.
pub struct PcapngWriter {
    buf: Vec<u8>,
    nanos: bool,
}

impl PcapngWriter {
    /// A section with one interface of `linktype`; `nanos` writes `if_tsresol` = 9,
    /// else the default microsecond resolution (no option).
    pub fn new(linktype: u32, nanos: bool) -> PcapngWriter {
        let mut buf = Vec::new();
        // Section Header Block: byte-order magic, version 1.0, section length unknown.
        let mut shb = Vec::new();
        shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        block(&mut buf, 0x0a0d_0d0a, &shb);
        // Interface Description Block: link type, reserved, snaplen, options.
        let mut idb = Vec::new();
        idb.extend_from_slice(&u16::try_from(linktype).expect("linktype").to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&262_144u32.to_le_bytes());
        if nanos {
            idb.extend_from_slice(&9u16.to_le_bytes()); // if_tsresol
            idb.extend_from_slice(&1u16.to_le_bytes());
            idb.push(9); // 10^-9 s
            pad4(&mut idb);
            idb.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
        }
        block(&mut buf, 1, &idb);
        PcapngWriter { buf, nanos }
    }

    /// One Enhanced Packet Block on interface 0.
    pub fn record(&mut self, ts: Timestamp, data: &[u8], origlen: u32) {
        let units = if self.nanos {
            ts.as_nanos()
        } else {
            ts.as_nanos() / 1000
        };
        let units = u64::try_from(units).expect("ts");
        let mut epb = Vec::with_capacity(20 + data.len() + 3);
        epb.extend_from_slice(&0u32.to_le_bytes()); // interface id
        epb.extend_from_slice(&((units >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(units as u32).to_le_bytes());
        epb.extend_from_slice(&(data.len() as u32).to_le_bytes());
        epb.extend_from_slice(&origlen.to_le_bytes());
        epb.extend_from_slice(data);
        pad4(&mut epb);
        block(&mut self.buf, 6, &epb);
    }

    /// The file's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// The container format of a written capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap, microsecond timestamps.
    PcapMicros,
    /// Classic pcap, nanosecond timestamps.
    PcapNanos,
    /// pcapng, microsecond resolution (no `if_tsresol`).
    PcapngMicros,
    /// pcapng, `if_tsresol` = 9.
    PcapngNanos,
}

/// A capture file in the temp dir, removed on drop.
pub struct TempCapture {
    /// Where it is.
    pub path: PathBuf,
}

impl TempCapture {
    /// The path as a `&str` for [`FileSource::open`].
    pub fn path_str(&self) -> &str {
        self.path.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempCapture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A unique path in the temp dir: `kafkashark-<tag>-<pid>-<n>-<nanos>.<ext>`.
pub fn temp_path(tag: &str, ext: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tag: String = tag
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    std::env::temp_dir().join(format!(
        "kafkashark-{tag}-{}-{n}-{nanos}.{ext}",
        std::process::id()
    ))
}

/// Writes raw frames (time, link-layer bytes) as a capture file.
pub fn write_frames(
    tag: &str,
    linktype: u32,
    format: Format,
    frames: &[(Timestamp, Vec<u8>)],
) -> TempCapture {
    let bytes = match format {
        Format::PcapMicros | Format::PcapNanos => {
            let mut w = PcapWriter::new(linktype, format == Format::PcapNanos);
            for (ts, data) in frames {
                w.record(*ts, data, data.len() as u32);
            }
            w.into_bytes()
        }
        Format::PcapngMicros | Format::PcapngNanos => {
            let mut w = PcapngWriter::new(linktype, format == Format::PcapngNanos);
            for (ts, data) in frames {
                w.record(*ts, data, data.len() as u32);
            }
            w.into_bytes()
        }
    };
    let ext = match format {
        Format::PcapMicros | Format::PcapNanos => "pcap",
        _ => "pcapng",
    };
    let path = temp_path(tag, ext);
    std::fs::write(&path, bytes).expect("write temp capture");
    TempCapture { path }
}

/// Writes segments as a capture with the given link layer and format (IP version
/// follows each segment's addresses).
pub fn write_capture(tag: &str, segs: &[Seg], link: &Link, format: Format) -> TempCapture {
    let frames: Vec<(Timestamp, Vec<u8>)> = segs
        .iter()
        .map(|s| (s.ts, link.frame(&ip_packet(s))))
        .collect();
    write_frames(tag, link.linktype(), format, &frames)
}

// ---------------------------------------------------------------------------
// Address rewriting.

/// IPv4 → IPv6: `a.b.c.d` becomes `fd00::a.b.c.d` (unique local), ports kept.
pub fn v4_to_v6(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            let ip = Ipv6Addr::new(
                0xfd00,
                0,
                0,
                0,
                0,
                0,
                u16::from_be_bytes([o[0], o[1]]),
                u16::from_be_bytes([o[2], o[3]]),
            );
            SocketAddr::new(IpAddr::V6(ip), a.port())
        }
        IpAddr::V6(_) => a,
    }
}

/// IPv6 → IPv4: each distinct IPv6 address, in order of first appearance in
/// `segs`, becomes 10.0.0.1, 10.0.0.2, ...; ports kept.
pub fn v6_to_v4_map(segs: &[Seg]) -> HashMap<IpAddr, IpAddr> {
    let mut m = HashMap::new();
    for s in segs {
        for a in [s.src.ip(), s.dst.ip()] {
            if a.is_ipv6() && !m.contains_key(&a) {
                let n = u8::try_from(m.len() + 1).expect("at most 254 addresses");
                m.insert(a, IpAddr::V4(Ipv4Addr::new(10, 0, 0, n)));
            }
        }
    }
    m
}

/// Applies an address mapping to every segment's endpoints.
pub fn map_addrs(segs: &[Seg], f: &dyn Fn(SocketAddr) -> SocketAddr) -> Vec<Seg> {
    segs.iter()
        .map(|s| Seg {
            src: f(s.src),
            dst: f(s.dst),
            ..s.clone()
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Running the analyzer.

/// What an analysis produced.
pub struct Analysis {
    /// Messages, in output order.
    pub messages: Vec<MessageRecord>,
    /// Notices, in output order.
    pub notices: Vec<Notice>,
    /// Frames read.
    pub frames: u64,
    /// Reassembly and framing counters at the end.
    pub stats: PipelineStats,
}

/// Runs the [`Analyzer`] over a capture file with the given broker ports.
pub fn analyze(path: &Path, ports: Ports) -> Analysis {
    analyze_with(
        path,
        AnalyzerConfig {
            pipeline: PipelineConfig::with_ports(ports),
            ..AnalyzerConfig::default()
        },
    )
}

/// Every message of the capture at `path` by the reference decode: every
/// port, full trees, record sets decoded in full.
pub fn full_trees(path: &Path) -> Vec<MessageRecord> {
    let mut cfg = AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::Any),
        keep_trees: true,
        ..AnalyzerConfig::default()
    };
    cfg.decode.records = true;
    analyze_with(path, cfg).messages
}

/// Runs the [`Analyzer`] with `cfg` over a capture file.
pub fn analyze_with(path: &Path, cfg: AnalyzerConfig) -> Analysis {
    let mut src = FileSource::open(path.to_str().expect("utf-8 path")).expect("open capture");
    let mut an = Analyzer::new(cfg);
    let mut out = Vec::new();
    let mut frames = 0;
    while let Some(f) = src.next_frame().expect("read capture") {
        frames += 1;
        an.push(&f, &mut out);
    }
    an.finish(&mut out);
    let mut a = Analysis {
        messages: Vec::new(),
        notices: Vec::new(),
        frames,
        stats: an.pipeline_stats(),
    };
    for o in out {
        match o {
            Output::Message(m) => a.messages.push(*m),
            Output::Notice(n) => a.notices.push(*n),
        }
    }
    a
}

/// The messages of a capture, connection by connection in capture order:
/// (client → broker, bytes with the size prefix), to replay live.
pub fn conversations(capture: &str) -> Vec<Vec<(bool, Vec<u8>)>> {
    use kafkashark::vocab::Direction;
    let analysis = analyze(Path::new(capture), Ports::default());
    let mut by_stream: std::collections::BTreeMap<u64, Vec<(bool, Vec<u8>)>> =
        std::collections::BTreeMap::new();
    for m in analysis.messages {
        let up = m.raw.dir == Direction::ClientToBroker;
        let conv = by_stream.entry(m.raw.stream).or_default();
        conv.push((up, m.raw.bytes.to_vec()));
    }
    by_stream.into_values().collect()
}

/// Replays `conversations` over loopback TCP to a broker of the test's at
/// `listener`: one connection each, in turn; each side writes its messages
/// and reads the other's, in the capture's order.
pub fn replay(listener: &std::net::TcpListener, conversations: &[Vec<(bool, Vec<u8>)>]) {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;
    let addr = listener.local_addr().unwrap();
    for conv in conversations {
        let mut client = TcpStream::connect(addr).unwrap();
        let (mut broker, _) = listener.accept().unwrap();
        for s in [&client, &broker] {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        }
        let mut buf = Vec::new();
        for (up, bytes) in conv {
            let (from, to) = if *up {
                (&mut client, &mut broker)
            } else {
                (&mut broker, &mut client)
            };
            from.write_all(bytes).unwrap();
            buf.resize(bytes.len(), 0);
            to.read_exact(&mut buf).unwrap();
        }
    }
}
