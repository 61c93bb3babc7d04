//! TCP reassembly: segments → per-connection, per-direction ordered byte chunks.
//!
//! Place in the data path: after link decoding (`capture::link`), before Kafka
//! framing. Sans-IO: [`Reassembler::push`] takes one segment with its frame
//! number and time and appends [`FlowEvent`]s; time comes only from packets.
//!
//! Rules:
//! - A connection is keyed by its unordered address pair. Its broker side is
//!   the endpoint whose port is in [`Ports::List`] (or [`Ports::Detect`]'s
//!   list); otherwise, with [`Ports::Any`] or [`Ports::Detect`], it is the
//!   receiver of a SYN (or sender of a SYN-ACK), else the lower port.
//! - Each direction counts bytes from 0: the byte after the SYN when the SYN
//!   was seen, else the first payload byte seen ("SYN-less start"). Sequence
//!   numbers are compared as signed 32-bit distances from the next expected
//!   byte, so wrap past 2^32 needs no special case; offsets are 64-bit.
//! - Bytes before the next expected offset are retransmissions and dropped.
//!   Overlapping out-of-order data: the first bytes received win; differing
//!   overlaps are counted as conflicts.
//! - A hole the peer's cumulative ACK covers (bytes after it, or the FIN,
//!   seen; RFC 9293 §3.4: the receiver had them) is either late in the
//!   capture or lost by it. It is held for the reorder window
//!   ([`ReorderWindow`]: packets on the connection, packet time, bytes
//!   buffered in the direction, counted from when the hole was both
//!   acknowledged and followed by data) and declared a [`FlowEvent::Gap`]
//!   (`Lost`) when the window ends unfilled; with the window off, at once.
//!   Any hole is also declared when the buffered out-of-order bytes exceed
//!   the per-direction bound, the total bound is exceeded, the oldest
//!   buffered piece is older than `gap_timeout` (packet time), or the
//!   connection closes. Delivery then resumes at the next buffered byte. ACKs
//!   only count up to the last byte (or FIN) seen in the acknowledged
//!   direction, so a bogus ACK cannot invent a gap past the data. Payload cut
//!   by the snaplen is a gap of that length, never data.
//! - A data segment whose ACK covers peer bytes not delivered yet was sent
//!   after they were received: its new bytes wait (buffered, in the same
//!   window) until the peer's are delivered, so a response never comes out
//!   before the request bytes it acknowledges. A segment that brings new
//!   bytes after data beyond them, or after the ACK covering them, is
//!   counted late ([`FlowStats::late_segments`], per connection in
//!   [`FlowEvent::Closed`]).
//! - FIN closes a direction once every byte before it was delivered or the
//!   peer acknowledged the FIN; once both FINs were seen, or on one RST, the
//!   connection closes (buffered bytes are flushed behind gaps) — after the
//!   reorder window when bytes known to exist (before a FIN or RST, or
//!   acknowledged) are still missing, as of the closing frame.
//!   A closed connection is remembered briefly so late retransmissions do not
//!   open a new stream; a fresh SYN does.
//! - Connections idle longer than `idle_timeout` (packet time) are flushed and
//!   closed; at most `max_connections` are tracked (the least recently active
//!   one is evicted first).
//! - Round trip ([`Rtt`], one [`FlowEvent::Rtt`] each time it is first
//!   known or smaller): from the handshake when the capture has it — the
//!   client's ACK of the broker's SYN/ACK (its ACK number the SYN/ACK's
//!   sequence number + 1) less the client's latest SYN, the round trip
//!   through the capture point wherever it sits (tshark's
//!   `tcp.analysis.initial_rtt`). Without a handshake, from data/ACK
//!   pairs: per direction, one probe at a time — a segment of new bytes
//!   (none before its end sent earlier) and the first ACK from the other
//!   side covering its end; a segment resending bytes cancels the
//!   probe (Karn); the connection's RTT is the sum of the two directions'
//!   smallest samples once both exist. An ACK the receiver delays (or
//!   sends with its response) only makes a sample longer, so the minimum
//!   stands; the handshake, once seen, is final.
//!
//! Invariants: for every direction, the `Data`/`Gap` events have contiguous,
//! increasing `stream_offset`s starting at 0; every `Data` byte was carried by
//! the frame named in its event and, when the segment was pushed with its
//! payload's file offset, lies at its `origin` in the capture file (retransmitted
//! and overlapping bytes trimmed off move it along); memory held per direction is bounded by
//! `max_buffer_per_dir` plus one segment, and in total by `max_buffer_total`,
//! whatever waits in the reorder window; each wait ends after the window.

#![deny(clippy::indexing_slicing)]

use crate::capture::Segment;
use crate::vocab::{Direction, Timestamp};
use bytes::{Buf, Bytes};
use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use std::net::SocketAddr;

pub mod community_id;

/// Which TCP ports are Kafka brokers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ports {
    /// Broker ports: a connection with one endpoint on one of them is Kafka.
    List(Vec<u16>),
    /// Any port: every TCP connection is a candidate; the pipeline decides by shape.
    Any,
    /// These ports by port, any other by shape: a connection with one
    /// endpoint on a listed port is Kafka, every other TCP connection is a
    /// candidate, as with `Any` (the default: `Detect([9092, 9093])`, the
    /// conventional plaintext and TLS listeners).
    Detect(Vec<u16>),
}

impl Default for Ports {
    fn default() -> Ports {
        Ports::Detect(vec![9092, 9093])
    }
}

impl Ports {
    /// The listed ports (none for `Any`).
    pub fn listed(&self) -> &[u16] {
        match self {
            Ports::List(l) | Ports::Detect(l) => l,
            Ports::Any => &[],
        }
    }
}

/// TCP payload bytes per port of traffic found not to be Kafka or left out
/// for its ports, each connection counted under its server's port (the
/// receiver of a SYN, else the lower port). At most 65,536 entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortBytes(FxHashMap<u16, u64>);

impl PortBytes {
    /// `bytes` more on `port`.
    pub fn add(&mut self, port: u16, bytes: u64) {
        if bytes > 0 {
            *self.0.entry(port).or_default() += bytes;
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &PortBytes) {
        for (&p, &b) in &other.0 {
            self.add(p, b);
        }
    }

    /// The `n` ports with the most bytes, most first (ties: the lower port).
    pub fn busiest(&self, n: usize) -> Vec<(u16, u64)> {
        let mut v: Vec<(u16, u64)> = self.0.iter().map(|(&p, &b)| (p, b)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }
}

/// Why bytes are missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GapReason {
    /// Never captured: a lost segment (declared on ACK, bound, timeout or close).
    Lost,
    /// Cut by the snaplen.
    Snaplen,
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Both sides sent FIN (bytes still missing before them became gaps).
    Fin,
    /// A RST was seen.
    Reset,
    /// No packet for `idle_timeout`, or evicted to respect `max_connections`.
    Idle,
    /// A new SYN reused the address pair.
    Reused,
    /// End of input (`finish`).
    End,
}

/// A connection as it opened: its index, endpoints and first frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    /// 0-based connection index, in order of first appearance.
    pub stream: u64,
    /// Client endpoint.
    pub client: SocketAddr,
    /// Broker endpoint.
    pub broker: SocketAddr,
    /// Frame of the connection's first segment.
    pub frame: u64,
    /// Time of that frame.
    pub ts: Timestamp,
    /// The capture it was seen in ([`Segment::capture`]).
    pub capture: u16,
}

/// Where a connection's round-trip time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RttFrom {
    /// The TCP handshake: the client's ACK of the SYN/ACK less its SYN.
    Handshake,
    /// Data/ACK pairs: per direction the smallest time from new bytes to
    /// the other side's ACK covering them, the two directions summed.
    DataAck,
}

impl RttFrom {
    /// The name reports use: `handshake` or `data_ack`.
    pub fn name(self) -> &'static str {
        match self {
            RttFrom::Handshake => "handshake",
            RttFrom::DataAck => "data_ack",
        }
    }
}

/// A connection's network round trip through the capture point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rtt {
    /// The round trip, in nanoseconds.
    pub ns: u64,
    /// How it was measured.
    pub from: RttFrom,
}

impl Rtt {
    /// The round trip in milliseconds.
    pub fn ms(self) -> f64 {
        self.ns as f64 / 1e6
    }
}

/// Where a [`FlowEvent::Data`]'s bytes lie, beside the frame that carried them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// Not known (live capture, stdin, a reader that does not say).
    #[default]
    Unknown,
    /// At this offset of the capture file.
    File(u64),
    /// In no file: decrypted from this record of the direction's TLS
    /// records (counted from 1, every record of the direction).
    Record(u64),
}

impl Origin {
    /// The file offset, when the bytes lie in the capture file.
    pub fn file(self) -> Option<u64> {
        match self {
            Origin::File(f) => Some(f),
            _ => None,
        }
    }

    /// Where the byte `k` bytes on lies (a record's bytes are all its own).
    #[must_use]
    pub fn advance(self, k: u64) -> Origin {
        match self {
            Origin::File(f) => f.checked_add(k).map_or(Origin::Unknown, Origin::File),
            o => o,
        }
    }
}

/// What reassembly produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FlowEvent {
    /// A new connection (first segment seen).
    Open(Opened),
    /// A direction's byte 0 was fixed: by its SYN (`syn_seen`) or by its first payload.
    Start {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// True when the SYN was seen, so offset 0 is the true start of the stream.
        syn_seen: bool,
        /// The TCP sequence number of offset 0 (the SYN's + 1, else the
        /// first payload's): with it a stream offset is a sequence number,
        /// the same at every capture point ([`crate::twins`]).
        seq0: u32,
        /// Frame that fixed it.
        frame: u64,
    },
    /// In-order bytes.
    Data {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// The bytes (a slice of the frame that carried them).
        data: Bytes,
        /// Offset of `data[0]` in the direction's byte stream.
        stream_offset: u64,
        /// Frame that carried these bytes.
        frame: u64,
        /// Time of that frame.
        ts: Timestamp,
        /// Where `data[0]` lies: in the capture file, when the segment was
        /// pushed with its payload's file offset ([`Reassembler::push`]).
        origin: Origin,
    },
    /// Bytes that will never arrive; the stream continues after them.
    Gap {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// Offset of the first missing byte.
        stream_offset: u64,
        /// Number of missing bytes.
        len: u64,
        /// Frame after the gap: the next bytes' frame, the frame whose payload was
        /// cut, or (nothing after the hole yet) the FIN's or the acknowledging frame.
        frame: u64,
        /// Time of that frame.
        ts: Timestamp,
        /// Lost or cut by the snaplen.
        reason: GapReason,
    },
    /// The connection's round trip, first known or smaller than before
    /// (a handshake's comes once and is final).
    Rtt {
        /// Connection index.
        stream: u64,
        /// The round trip and how it was measured.
        rtt: Rtt,
        /// Frame that completed the measurement.
        frame: u64,
    },
    /// The connection ended; no more events for `stream`.
    Closed {
        /// Connection index.
        stream: u64,
        /// Why.
        reason: CloseReason,
        /// Frame that closed it (the last frame seen on it for idle/end).
        frame: u64,
        /// Time of that frame.
        ts: Timestamp,
        /// Late segments seen on the connection: segments that brought new
        /// bytes after data beyond them, or the peer's ACK covering them, had
        /// arrived (reassembled in sequence order all the same).
        late_segments: u64,
    },
}

/// Limits and policies of the reassembler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// Which ports are brokers, or `Any` (the pipeline detects Kafka by shape).
    pub ports: Ports,
    /// Out-of-order bytes buffered per direction before a gap is declared, default 4 MiB.
    pub max_buffer_per_dir: usize,
    /// Out-of-order bytes buffered over all connections, default 256 MiB.
    pub max_buffer_total: usize,
    /// A hole older than this (nanoseconds of packet time) is declared a gap, default 10 s.
    pub gap_timeout_ns: u64,
    /// A connection silent for this long (nanoseconds of packet time) is closed, default 600 s.
    pub idle_timeout_ns: u64,
    /// Connections tracked at once, default 100 000.
    pub max_connections: usize,
    /// How long an acknowledged hole waits for a late segment (default 64
    /// packets, 1 s, 1 MiB; see [`ReorderWindow`]).
    pub reorder: ReorderWindow,
}

/// The reorder window: how long a hole the peer acknowledged, bytes sent
/// after an acknowledgment of bytes not yet delivered, and a close with
/// bytes still missing wait for segments the capture puts late. Whichever
/// bound is reached first ends the wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReorderWindow {
    /// Packets on the connection (either direction) since the wait began;
    /// 0 turns the window off (acknowledged holes are lost at once).
    pub packets: u64,
    /// Packet time since the wait began, in nanoseconds.
    pub time_ns: u64,
    /// Out-of-order bytes buffered in the direction.
    pub bytes: usize,
}

impl ReorderWindow {
    /// No window: a hole is lost as soon as the peer acknowledges bytes past it.
    pub const OFF: ReorderWindow = ReorderWindow {
        packets: 0,
        time_ns: 0,
        bytes: 0,
    };

    /// True unless the window is off.
    pub fn enabled(&self) -> bool {
        self.packets > 0 && self.time_ns > 0 && self.bytes > 0
    }
}

impl Default for ReorderWindow {
    /// 64 packets, 1 s, 1 MiB.
    fn default() -> ReorderWindow {
        ReorderWindow {
            packets: 64,
            time_ns: 1_000_000_000,
            bytes: 1 << 20,
        }
    }
}

impl FlowConfig {
    /// `h` buffers more than its bound, or anything while all directions
    /// together buffer `total` bytes, over theirs.
    #[inline]
    fn over_bounds(&self, total: usize, h: &Half) -> bool {
        h.buffered > self.max_buffer_per_dir || (total > self.max_buffer_total && h.buffered > 0)
    }
}

impl Default for FlowConfig {
    fn default() -> FlowConfig {
        FlowConfig {
            ports: Ports::default(),
            max_buffer_per_dir: 4 << 20,
            max_buffer_total: 256 << 20,
            gap_timeout_ns: 10_000_000_000,
            idle_timeout_ns: 600_000_000_000,
            max_connections: 100_000,
            reorder: ReorderWindow::default(),
        }
    }
}

/// Counters of the reassembler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Segments pushed.
    pub segments: u64,
    /// Segments ignored: no endpoint on a broker port.
    pub not_broker_port: u64,
    /// Segments ignored: on a closed connection (late retransmissions, final ACKs).
    pub after_close: u64,
    /// Of those, segments that carried bytes past what their direction had
    /// delivered (data the capture puts after its connection's FIN or RST):
    /// not delivered, and reported ([`Reassembler::take_late`]).
    pub data_after_close: u64,
    /// Connections opened.
    pub connections: u64,
    /// Payload bytes already delivered or buffered when they arrived again.
    pub retransmitted_bytes: u64,
    /// Overlaps whose bytes differed from the first copy (first copy kept).
    pub overlap_conflicts: u64,
    /// Gaps declared.
    pub gaps: u64,
    /// Bytes missing in those gaps.
    pub gap_bytes: u64,
    /// Connections closed for idleness or to respect `max_connections`.
    pub evicted: u64,
    /// Segments that brought new bytes after data beyond them, or after the
    /// peer's ACK covering them, had arrived (see [`FlowEvent::Closed`]).
    pub late_segments: u64,
}

/// A connection: the capture it was seen in and its two endpoints.
type Key = (u16, SocketAddr, SocketAddr);

fn key_of(seg: &Segment) -> Key {
    let (a, b) = (seg.src, seg.dst);
    if a <= b {
        (seg.capture, a, b)
    } else {
        (seg.capture, b, a)
    }
}

/// A buffered out-of-order piece: bytes, or a snaplen-cut hole of `len` bytes.
#[derive(Clone, Debug)]
struct Piece {
    data: Option<Bytes>,
    len: u64,
    frame: u64,
    ts: Timestamp,
    /// File offset of `data[0]`, when known.
    file: Option<u64>,
}

impl Piece {
    /// A hole of `len` bytes, known from `frame` at `ts`.
    fn hole(len: u64, frame: u64, ts: Timestamp) -> Piece {
        Piece {
            data: None,
            len,
            frame,
            ts,
            file: None,
        }
    }
}

#[derive(Debug, Default)]
struct Half {
    started: bool,
    next_seq: u32,
    next_off: u64,
    buf: BTreeMap<u64, Piece>,
    buffered: usize,
    fin_off: Option<u64>,
    fin_frame: u64,
    /// Highest offset the peer acknowledged (0 until an ACK is seen).
    acked: u64,
    done: bool,
    /// The acknowledged hole at `next_off` waiting in the reorder window.
    held: Option<Held>,
    /// Bytes of this direction sent after the peer's bytes up to an offset
    /// were received, waiting for them (the reorder window bounds the wait).
    waits: Vec<Wait>,
    /// Offset of a RST's sequence number in this direction, when one was seen.
    rst_off: Option<u64>,
}

/// When a wait in the reorder window began: the connection's packet count and the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Since {
    pkt: u64,
    ts: Timestamp,
}

/// An acknowledged hole held open: its offset and when the wait began.
#[derive(Clone, Copy, Debug)]
struct Held {
    off: u64,
    since: Since,
}

/// Bytes from `from` on wait until the peer direction has delivered up to `need`.
#[derive(Clone, Copy, Debug)]
struct Wait {
    from: u64,
    need: u64,
    since: Since,
}

/// Most waits kept per direction; past it the oldest is let go.
const MAX_WAITS: usize = 32;

/// A connection's round-trip measurement (see the module's rules): a few
/// words, touched with a few compares per segment, nothing allocated.
#[derive(Debug, Default)]
struct RttState {
    /// The round trip known so far; a handshake's ends the measurement.
    known: Option<Rtt>,
    /// Time of the client's latest SYN.
    syn: Option<Timestamp>,
    /// The ACK number that acknowledges the broker's SYN/ACK (its sequence
    /// number + 1), once the SYN/ACK was seen after the SYN.
    synack_ack: Option<u32>,
    /// Per direction (client → broker first): one sequence number past
    /// the last byte sent so far.
    high: [Option<u32>; 2],
    /// Per direction: the probe waiting for its ACK (end of its bytes, time sent).
    probe: [Option<(u32, Timestamp)>; 2],
    /// Per direction: the smallest data → ACK time.
    best: [Option<u64>; 2],
}

impl RttState {
    /// One segment of the connection in `dir` at `ts`: the round trip
    /// when this segment makes it known, or smaller than before.
    #[inline]
    fn observe(&mut self, dir: Direction, seg: &Segment, ts: Timestamp) -> Option<Rtt> {
        if matches!(self.known, Some(r) if r.from == RttFrom::Handshake) || seg.flags.rst {
            return None;
        }
        let f = seg.flags;
        let client = dir == Direction::ClientToBroker;
        if f.syn {
            if client && !f.ack {
                self.syn = Some(ts);
                self.synack_ack = None;
            } else if !client && f.ack && self.syn.is_some() {
                self.synack_ack = Some(seg.seq.wrapping_add(1));
            }
            return None;
        }
        if let (true, true, Some(syn), Some(want)) = (client, f.ack, self.syn, self.synack_ack) {
            if seg.ack == want {
                let rtt = Rtt {
                    ns: ts.nanos_since(syn),
                    from: RttFrom::Handshake,
                };
                self.known = Some(rtt);
                return Some(rtt);
            }
        }
        self.data_ack(dir.index(), seg, ts)
    }

    /// [`RttState::observe`] without a handshake: the segment's ACK ends
    /// the other direction's probe, its new bytes start one of its own.
    #[inline]
    fn data_ack(&mut self, i: usize, seg: &Segment, ts: Timestamp) -> Option<Rtt> {
        let o = 1 - i;
        let mut better = false;
        if seg.flags.ack {
            if let Some(Some((end, sent))) = self.probe.get(o).copied() {
                if seg.ack.wrapping_sub(end) as i32 >= 0 {
                    let d = ts.nanos_since(sent);
                    if let (Some(p), Some(b)) = (self.probe.get_mut(o), self.best.get_mut(o)) {
                        *p = None;
                        if b.is_none_or(|b| d < b) {
                            *b = Some(d);
                            better = true;
                        }
                    }
                }
            }
        }
        let len = seg.payload.len() as u64 + u64::from(seg.payload_truncated_by);
        if len > 0 {
            let end = seg.seq.wrapping_add(len as u32);
            if let (Some(high), Some(probe)) = (self.high.get_mut(i), self.probe.get_mut(i)) {
                match *high {
                    // Bytes sent before: a retransmission (or a segment the
                    // capture puts late), whose ACK says nothing of this send.
                    Some(h) if (seg.seq.wrapping_sub(h) as i32) < 0 => {
                        *probe = None;
                        if end.wrapping_sub(h) as i32 > 0 {
                            *high = Some(end);
                        }
                    }
                    _ => {
                        *high = Some(end);
                        if probe.is_none() {
                            *probe = Some((end, ts));
                        }
                    }
                }
            }
        }
        let [Some(a), Some(b)] = self.best else {
            return None;
        };
        if !better {
            return None;
        }
        let rtt = Rtt {
            ns: a.saturating_add(b),
            from: RttFrom::DataAck,
        };
        self.known = Some(rtt);
        Some(rtt)
    }
}

impl Half {
    /// One past the last offset seen in this direction: delivered, buffered or FIN.
    fn frontier(&self) -> u64 {
        let buffered = self.buf.last_key_value().map_or(0, |(&k, p)| k + p.len);
        self.next_off.max(buffered).max(self.fin_off.unwrap_or(0))
    }

    /// The offset the peer's acknowledgment number `ack` covers in this
    /// direction; `None` before the direction started, or for an ACK before
    /// the next expected byte (a signed distance, as for sequence numbers).
    fn ack_off(&self, ack: u32) -> Option<u64> {
        if !self.started {
            return None;
        }
        let ahead = u64::try_from(ack.wrapping_sub(self.next_seq) as i32).ok()?;
        Some(self.next_off + ahead)
    }

    /// Record the peer's acknowledgment number `ack` for this direction.
    fn note_ack(&mut self, ack: u32) {
        if let Some(a) = self.ack_off(ack) {
            self.acked = self.acked.max(a);
        }
    }

    /// One past what was delivered, counting the FIN once everything before
    /// it was (an ACK of a FIN acknowledges one more than the bytes).
    fn delivered_end(&self) -> u64 {
        self.next_off + u64::from(self.fin_off.is_some_and(|f| self.next_off >= f))
    }

    /// Where delivery stops for bytes that wait for the peer.
    fn wait_limit(&self) -> u64 {
        self.waits.iter().map(|w| w.from).min().unwrap_or(u64::MAX)
    }

    /// True when bytes before a known end (data, FIN, RST, or what the peer
    /// acknowledged) have not been delivered yet.
    fn outstanding(&self) -> bool {
        self.started
            && (!self.buf.is_empty()
                || self.delivered_end()
                    < self
                        .frontier()
                        .max(self.acked)
                        .max(self.rst_off.unwrap_or(0)))
    }
}

#[derive(Debug)]
struct Conn {
    stream: u64,
    client: SocketAddr,
    halves: [Half; 2],
    last_ts: Timestamp,
    last_frame: u64,
    closed: bool,
    /// Its key in the connection table.
    key: Key,
    /// Packets seen on it.
    pkts: u64,
    /// Late segments seen on it ([`FlowStats::late_segments`]).
    late: u64,
    /// A close (both FINs, or a RST) waiting in the reorder window for bytes
    /// still missing: why, when the wait began, and the frame that closed it.
    closing: Option<(CloseReason, Since, u64)>,
    /// Its round-trip measurement.
    rtt: RttState,
}

impl Conn {
    /// The direction `seg` was sent in.
    #[inline]
    fn dir_of(&self, seg: &Segment) -> Direction {
        if seg.src == self.client {
            Direction::ClientToBroker
        } else {
            Direction::BrokerToClient
        }
    }

    /// Its segment `seg` in `dir`, carried by `frame` at `ts`, for the
    /// round trip: a [`FlowEvent::Rtt`] when it makes it known or smaller.
    #[inline]
    fn observe_rtt(
        &mut self,
        dir: Direction,
        seg: &Segment,
        (frame, ts): (u64, Timestamp),
        out: &mut Vec<FlowEvent>,
    ) {
        if let Some(rtt) = self.rtt.observe(dir, seg, ts) {
            let stream = self.stream;
            out.push(FlowEvent::Rtt { stream, rtt, frame });
        }
    }

    fn half(&mut self, dir: Direction) -> &mut Half {
        match dir {
            Direction::ClientToBroker => &mut self.halves[0],
            Direction::BrokerToClient => &mut self.halves[1],
        }
    }

    fn half_ref(&self, dir: Direction) -> &Half {
        match dir {
            Direction::ClientToBroker => &self.halves[0],
            Direction::BrokerToClient => &self.halves[1],
        }
    }
}

/// The TCP reassembler for all connections of a capture.
#[derive(Debug, Default)]
pub struct Reassembler {
    cfg: FlowConfig,
    /// Boxed: a connection is taken out and put back on every segment.
    conns: FxHashMap<Key, Box<Conn>>,
    buffered_total: usize,
    last_sweep: Option<Timestamp>,
    stats: FlowStats,
    /// The last segment counted in `data_after_close`, until taken.
    late: Option<Late>,
    /// Connections with something waiting in the reorder window (a key may
    /// be listed twice, or after its wait ended).
    holding: Vec<Key>,
    /// The earliest time at which a wait in `holding` may end by time.
    deadline: Option<Timestamp>,
    /// Bytes of segments left out for their ports ([`Ports::List`]).
    other_ports: PortBytes,
}

/// New bytes that arrived on a connection already closed (see
/// [`FlowStats::data_after_close`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Late {
    /// Connection index.
    pub stream: u64,
    /// Direction.
    pub dir: Direction,
    /// Bytes past what the direction delivered.
    pub bytes: u64,
}

/// Time a closed connection is remembered to absorb late packets.
const TOMBSTONE_NS: u64 = 60_000_000_000;

impl Reassembler {
    /// A reassembler with the given limits.
    pub fn new(cfg: FlowConfig) -> Reassembler {
        Reassembler {
            cfg,
            ..Reassembler::default()
        }
    }

    /// The last segment that brought new bytes to a closed connection since
    /// the previous call (at most one per segment pushed).
    pub fn take_late(&mut self) -> Option<Late> {
        self.late.take()
    }

    /// Counters so far.
    pub fn stats(&self) -> &FlowStats {
        &self.stats
    }

    /// Bytes of the segments left out for their ports, per server port.
    pub fn other_ports(&self) -> &PortBytes {
        &self.other_ports
    }

    /// Connections currently tracked (open or recently closed).
    pub fn tracked(&self) -> usize {
        self.conns.len()
    }

    /// Out-of-order bytes currently buffered over all connections.
    pub fn buffered(&self) -> usize {
        self.buffered_total
    }

    /// Feeds one segment carried by frame `frame` at time `ts`, its payload
    /// at `payload_file` in the capture file when known (every `Data` byte
    /// then says where it lies in the file). The segment stays in the
    /// caller's place (a large value to move); its payload is taken out of
    /// it and delivered (or buffered) as it is, cut in place where part of it
    /// was seen before, without a new reference to its bytes.
    pub fn push(
        &mut self,
        seg: &mut Segment,
        frame: u64,
        ts: Timestamp,
        payload_file: Option<u64>,
        out: &mut Vec<FlowEvent>,
    ) {
        // About 40 % of a capture's frames are pure ACKs that settle
        // nothing: done in place, without the event plumbing.
        if self.settle_ack(seg, frame, ts, out) {
            return;
        }
        self.stats.segments += 1;
        self.sweep(ts, out);
        if self.deadline.is_some_and(|d| ts >= d) {
            self.expire_due(ts, out);
        }
        let key = key_of(seg);
        let pure_syn = seg.flags.syn && !seg.flags.ack;

        // A fresh SYN on a known pair with a different ISN is a new connection.
        let reuse = pure_syn
            && self.conns.get(&key).is_some_and(|c| {
                let h = &c.halves[0];
                c.closed
                    || c.client != seg.src
                    || (h.started
                        && seg.seq.wrapping_add(1) != h.next_seq.wrapping_sub(h.next_off as u32))
            });
        if reuse {
            if let Some(mut old) = self.conns.remove(&key).filter(|c| !c.closed) {
                self.close(&mut old, CloseReason::Reused, frame, ts, out);
            }
        }

        // A known connection is worked on in its place in the table: one
        // lookup. The table is taken out of `self` meanwhile (a handle's
        // move; the work needs `self` for its counters, never the table).
        let mut conns = std::mem::take(&mut self.conns);
        if let Some(conn) = conns.get_mut(&key) {
            self.work(conn, seg, (frame, ts, payload_file), out);
            self.conns = conns;
            return;
        }
        self.conns = conns;
        // Pure ACKs, FINs and RSTs do not open connections: they are the tail of
        // something we did not see.
        if !seg.flags.syn && seg.payload.is_empty() && seg.payload_truncated_by == 0 {
            return;
        }
        let Some(broker) = self.broker_of(seg) else {
            self.stats.not_broker_port += 1;
            let server = match seg.flags {
                f if f.syn && !f.ack => seg.dst.port(),
                f if f.syn => seg.src.port(),
                _ => seg.src.port().min(seg.dst.port()),
            };
            let bytes = seg.payload.len() as u64 + u64::from(seg.payload_truncated_by);
            self.other_ports.add(server, bytes);
            return;
        };
        if self.conns.len() >= self.cfg.max_connections {
            self.evict_oldest(frame, ts, out);
        }
        let client = if broker == seg.src { seg.dst } else { seg.src };
        // Streams are numbered by the connections opened before them.
        let stream = self.stats.connections;
        self.stats.connections += 1;
        out.push(FlowEvent::Open(Opened {
            stream,
            client,
            broker,
            frame,
            ts,
            capture: seg.capture,
        }));
        let mut conn = Box::new(Conn {
            stream,
            client,
            halves: [Half::default(), Half::default()],
            last_ts: ts,
            last_frame: frame,
            closed: false,
            key,
            pkts: 0,
            late: 0,
            closing: None,
            rtt: RttState::default(),
        });
        self.work(&mut conn, seg, (frame, ts, payload_file), out);
        self.conns.insert(key, conn);
    }

    /// A pure ACK (no payload, no SYN, FIN or RST) of a known, open
    /// connection that settles nothing, done in place: the acknowledgment
    /// noted, the connection's time moved on, and `true`. It is what the
    /// rest of [`Reassembler::push`] would do with the segment, which would
    /// produce no event but the round trip it completes ([`FlowEvent::Rtt`]);
    /// for anything else — an ACK past a hole (a gap to
    /// declare), bytes buffered in the sender's direction, a bound exceeded,
    /// both FINs seen, the periodic sweep due, an unknown or closed
    /// connection, any other segment — it changes nothing and says `false`.
    #[inline]
    fn settle_ack(
        &mut self,
        seg: &Segment,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) -> bool {
        let f = seg.flags;
        if !f.ack || f.syn || f.fin || f.rst || !seg.payload.is_empty() {
            return false;
        }
        if seg.payload_truncated_by != 0 {
            return false;
        }
        // `sweep` would do nothing, and no wait in the reorder window is due.
        if self.sweep_due(ts) || self.deadline.is_some_and(|d| ts >= d) {
            return false;
        }
        let key = key_of(seg);
        let Some(conn) = self.conns.get_mut(&key) else {
            return false;
        };
        if conn.closed
            || conn.halves.iter().all(|h| h.done || h.fin_off.is_some())
            || Self::waiting(conn)
        {
            return false;
        }
        let dir = conn.dir_of(seg);
        let back = dir.reverse();
        // The acknowledged direction after `note_ack`: `flush_acked` must
        // find nothing missing.
        let hb = conn.half_ref(back);
        let acked = hb.ack_off(seg.ack).map_or(hb.acked, |a| a.max(hb.acked));
        if hb.next_off < acked.min(hb.frontier()) {
            return false;
        }
        // The sender's direction (`segment` with no bytes): nothing to
        // deliver, nothing acknowledged missing, within its bounds.
        let hd = conn.half_ref(dir);
        if hd.started
            && (!hd.buf.is_empty()
                || hd.next_off < hd.acked.min(hd.frontier())
                || self.cfg.over_bounds(self.buffered_total, hd))
        {
            return false;
        }
        self.stats.segments += 1;
        conn.last_ts = ts;
        conn.last_frame = frame;
        conn.pkts += 1;
        conn.observe_rtt(dir, seg, (frame, ts), out);
        conn.half(back).note_ack(seg.ack);
        Self::check_fin(conn, back);
        Self::check_fin(conn, dir);
        true
    }

    /// One segment of a connection (`push`'s work once it is found).
    fn work(
        &mut self,
        conn: &mut Conn,
        seg: &mut Segment,
        at: (u64, Timestamp, Option<u64>),
        out: &mut Vec<FlowEvent>,
    ) {
        let (frame, ts, _) = at;
        let dir = conn.dir_of(seg);
        if conn.closed {
            self.stats.after_close += 1;
            let h = conn.half(dir);
            let len = seg.payload.len() as u64 + u64::from(seg.payload_truncated_by);
            let data_seq = seg.seq.wrapping_add(u32::from(seg.flags.syn));
            // Bytes past the direction's next expected one (all of them when
            // it never started).
            let past = if h.started {
                let end = i64::from(data_seq.wrapping_sub(h.next_seq) as i32) + len as i64;
                u64::try_from(end).unwrap_or(0).min(len)
            } else {
                len
            };
            if past > 0 {
                self.stats.data_after_close += 1;
                self.late = Some(Late {
                    stream: conn.stream,
                    dir,
                    bytes: past,
                });
            }
            conn.last_ts = ts;
            return;
        }
        conn.last_ts = ts;
        conn.last_frame = frame;
        conn.pkts += 1;
        conn.observe_rtt(dir, seg, (frame, ts), out);
        let window = self.cfg.reorder.enabled();
        // The ACK speaks for the other direction: settle its holes first, so the
        // bytes it acknowledged come out before this segment's own bytes.
        let back = dir.reverse();
        if seg.flags.ack && !seg.flags.rst {
            conn.half(back).note_ack(seg.ack);
            self.flush_acked(conn, back, frame, ts, out);
            Self::check_fin(conn, back);
        } else if seg.flags.ack && window {
            // A RST's ACK only tells the close what may still arrive.
            conn.half(back).note_ack(seg.ack);
        }
        let need = window.then(|| Self::wait_need(conn, dir, seg)).flatten();
        self.segment(conn, dir, seg, at, need, out);
        if conn.halves.iter().any(|h| !h.waits.is_empty()) {
            self.release(conn, frame, ts, out);
        }
        if seg.flags.rst {
            self.begin_close(conn, CloseReason::Reset, frame, ts, out);
        } else if conn.closing.is_none()
            && conn.halves.iter().all(|h| h.done || h.fin_off.is_some())
        {
            // Both FINs seen: neither side sends more data, so the holes still
            // open are capture losses or segments the capture puts late;
            // `close` turns them into gaps (after the reorder window).
            self.begin_close(conn, CloseReason::Fin, frame, ts, out);
        }
        if window && !conn.closed && Self::waiting(conn) {
            self.settle(conn, frame, ts, out);
        }
    }

    /// The peer offset a data segment's ACK says was received before the
    /// segment was sent, when the peer has not delivered it yet: its bytes
    /// then wait for the peer's (a response after its request).
    fn wait_need(conn: &Conn, dir: Direction, seg: &Segment) -> Option<u64> {
        if !seg.flags.ack || seg.flags.rst || seg.flags.syn {
            return None;
        }
        if seg.payload.is_empty() && seg.payload_truncated_by == 0 {
            return None;
        }
        let p = conn.half_ref(dir.reverse());
        let need = p.ack_off(seg.ack)?;
        (need > p.delivered_end()).then_some(need)
    }

    /// Something of `conn` waits in the reorder window.
    fn waiting(conn: &Conn) -> bool {
        conn.closing.is_some()
            || conn
                .halves
                .iter()
                .any(|h| h.held.is_some() || !h.waits.is_empty())
    }

    /// Both FINs or a RST seen: close now, or, when bytes are still missing
    /// and the reorder window is on, once they arrive or the window ends.
    fn begin_close(
        &mut self,
        conn: &mut Conn,
        reason: CloseReason,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) {
        if !self.cfg.reorder.enabled() || !conn.halves.iter().any(Half::outstanding) {
            self.close(conn, reason, frame, ts, out);
            return;
        }
        let since = Since { pkt: conn.pkts, ts };
        conn.closing = match conn.closing {
            Some((_, s, _)) if reason == CloseReason::Reset => Some((reason, s, frame)),
            Some(c) => Some(c),
            None => Some((reason, since, frame)),
        };
    }

    /// After a segment of a connection with something in the reorder window:
    /// let go what the window no longer holds, and remember when the rest
    /// is due.
    fn settle(&mut self, conn: &mut Conn, frame: u64, now: Timestamp, out: &mut Vec<FlowEvent>) {
        self.expire(conn, frame, now, out);
        if conn.closed || !Self::waiting(conn) {
            return;
        }
        let closing = conn.closing.map(|(_, s, _)| s);
        let halves = conn.halves.iter().flat_map(|h| {
            let held = h.held.map(|x| x.since).into_iter();
            held.chain(h.waits.iter().map(|w| w.since))
        });
        if let Some(t) = closing.into_iter().chain(halves).map(|s| s.ts).min() {
            let w = self.cfg.reorder.time_ns;
            let d = Timestamp::new(
                t.secs.saturating_add((w / 1_000_000_000) as i64),
                t.nanos + (w % 1_000_000_000) as u32,
            );
            self.deadline = Some(self.deadline.map_or(d, |x| x.min(d)));
            self.holding.push(conn.key);
        }
    }

    /// Ends the waits of `conn` the reorder window no longer allows: waiting
    /// bytes are let go, held holes are lost, a waiting close happens.
    fn expire(&mut self, conn: &mut Conn, frame: u64, now: Timestamp, out: &mut Vec<FlowEvent>) {
        let w = self.cfg.reorder;
        let pkts = conn.pkts;
        let due =
            |s: Since| pkts.saturating_sub(s.pkt) > w.packets || now.nanos_since(s.ts) >= w.time_ns;
        for dir in [Direction::ClientToBroker, Direction::BrokerToClient] {
            let h = conn.half(dir);
            let n = h.waits.len();
            h.waits.retain(|x| !due(x.since));
            if h.waits.len() != n {
                self.deliver(conn, dir, out);
                self.flush_acked(conn, dir, frame, now, out);
            }
            let h = conn.half(dir);
            if let Some(held) = h.held {
                if due(held.since) || h.buffered > w.bytes {
                    h.held = None;
                    self.flush_acked_gaps(conn, dir, frame, now, out);
                }
            }
            Self::check_fin(conn, dir);
        }
        if conn.halves.iter().any(|h| !h.waits.is_empty()) {
            self.release(conn, frame, now, out);
        }
        // The close happens as of the frame that closed the connection.
        if let Some((reason, since, at)) = conn.closing {
            if due(since) || !conn.halves.iter().any(Half::outstanding) {
                self.close(conn, reason, at, since.ts, out);
            }
        }
    }

    /// Delivers what no longer waits for the peer, in both directions, until
    /// nothing moves (bytes of one direction may free the other's).
    fn release(&mut self, conn: &mut Conn, frame: u64, ts: Timestamp, out: &mut Vec<FlowEvent>) {
        for _ in 0..4 {
            let mut moved = false;
            for dir in [Direction::ClientToBroker, Direction::BrokerToClient] {
                let before = conn.half_ref(dir).next_off;
                self.deliver(conn, dir, out);
                if conn.half_ref(dir).next_off != before {
                    moved = true;
                    self.flush_acked(conn, dir, frame, ts, out);
                    Self::check_fin(conn, dir);
                }
            }
            if !moved {
                break;
            }
        }
    }

    /// The connections whose reorder-window waits may have ended by time at `now`.
    #[inline(never)]
    fn expire_due(&mut self, now: Timestamp, out: &mut Vec<FlowEvent>) {
        self.deadline = None;
        let mut keys = std::mem::take(&mut self.holding);
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let Some(mut c) = self.conns.remove(&key) else {
                continue;
            };
            if !c.closed && Self::waiting(&c) {
                let f = c.last_frame;
                self.settle(&mut c, f, now, out);
            }
            self.conns.insert(key, c);
        }
    }

    /// End of input: flush every connection (buffered bytes behind gaps) and close it.
    pub fn finish(&mut self, out: &mut Vec<FlowEvent>) {
        let mut conns: Vec<Box<Conn>> = self.conns.drain().map(|(_, c)| c).collect();
        conns.sort_by_key(|c| c.stream);
        for mut c in conns {
            if !c.closed {
                // A close waiting in the reorder window happens as of its frame.
                let (reason, f, t) = match c.closing {
                    Some((reason, since, at)) => (reason, at, since.ts),
                    None => (CloseReason::End, c.last_frame, c.last_ts),
                };
                self.close(&mut c, reason, f, t, out);
            }
        }
    }

    fn broker_of(&self, seg: &Segment) -> Option<SocketAddr> {
        let (s, d, f) = (seg.src, seg.dst, seg.flags);
        // The sender is the broker when it answers a SYN; without a SYN, by port.
        let src_is_broker = match &self.cfg.ports {
            Ports::List(l) => match (l.contains(&s.port()), l.contains(&d.port())) {
                (false, false) => return None,
                (true, true) => f.syn && f.ack,
                (on_src, _) => on_src,
            },
            Ports::Detect(l) if l.contains(&s.port()) != l.contains(&d.port()) => {
                l.contains(&s.port())
            }
            Ports::Any | Ports::Detect(_) if f.syn => f.ack,
            Ports::Any | Ports::Detect(_) => s.port() < d.port(),
        };
        Some(if src_is_broker { s } else { d })
    }

    /// One segment of `conn` in `dir`, carried by `frame` at `ts`, its payload at
    /// `payload_file` in the capture file when known; its new bytes wait for
    /// the peer's up to `need` when given ([`Reassembler::wait_need`]).
    fn segment(
        &mut self,
        conn: &mut Conn,
        dir: Direction,
        seg: &mut Segment,
        (frame, ts, payload_file): (u64, Timestamp, Option<u64>),
        need: Option<u64>,
        out: &mut Vec<FlowEvent>,
    ) {
        let stream = conn.stream;
        let cut = u64::from(seg.payload_truncated_by);
        let plen = seg.payload.len() as u64;
        let h = conn.half(dir);
        // Byte 0 is the one after the SYN, else the first payload byte.
        let data_seq = seg.seq.wrapping_add(u32::from(seg.flags.syn));
        if !h.started {
            if !seg.flags.syn && plen == 0 && cut == 0 {
                return;
            }
            h.started = true;
            h.next_seq = data_seq;
            h.next_off = 0;
            out.push(FlowEvent::Start {
                stream,
                dir,
                syn_seen: seg.flags.syn,
                seq0: data_seq,
                frame,
            });
        }
        // Signed distance from the next expected byte: correct across the 2^32 wrap.
        let delta = i64::from(data_seq.wrapping_sub(h.next_seq) as i32);
        let Some(off) = i128::from(h.next_off).checked_add(i128::from(delta)) else {
            return;
        };
        let len = plen + cut;
        let (end, next) = (off + i128::from(len), i128::from(h.next_off));
        if seg.flags.rst && self.cfg.reorder.enabled() {
            if let Ok(end) = u64::try_from(end) {
                h.rst_off = Some(h.rst_off.unwrap_or(0).max(end));
            }
        }
        if seg.flags.fin && h.fin_off.is_none() && end >= next {
            h.fin_off = u64::try_from(end).ok();
            h.fin_frame = frame;
        }
        if len > 0 {
            if end <= next {
                self.stats.retransmitted_bytes += len;
            } else {
                // Trim what was already delivered.
                let skip = u64::try_from(next - off).unwrap_or(0).min(len);
                self.stats.retransmitted_bytes += skip;
                let start = u64::try_from(off.max(next)).unwrap_or(0);
                self.new_bytes(conn, dir, start, need, ts);
                let (data, hole) = if skip < plen {
                    let from = usize::try_from(skip).unwrap_or(usize::MAX);
                    let mut d = std::mem::take(&mut seg.payload);
                    d.advance(from.min(d.len()));
                    (Some(d), cut)
                } else {
                    (None, len - skip)
                };
                let file = payload_file.and_then(|f| f.checked_add(skip));
                let mut at = start;
                if let Some(d) = data.filter(|d| !d.is_empty()) {
                    let len = d.len() as u64;
                    let h = conn.half(dir);
                    let p = Piece {
                        data: Some(d),
                        len,
                        frame,
                        ts,
                        file,
                    };
                    if at == h.next_off && h.buf.is_empty() && h.waits.is_empty() {
                        // In order with nothing buffered: delivered as is (what
                        // `insert` then `deliver` would do, without the map).
                        self.emit(h, stream, dir, p, GapReason::Snaplen, out);
                    } else {
                        self.insert(h, at, p);
                    }
                    at += len;
                }
                if hole > 0 {
                    self.insert(conn.half(dir), at, Piece::hole(hole, frame, ts));
                }
            }
        }
        // Nothing buffered (in-order traffic): nothing to deliver.
        if !conn.half(dir).buf.is_empty() {
            self.deliver(conn, dir, out);
        }
        self.flush_acked(conn, dir, frame, ts, out);
        // Bounds: per direction, then total.
        while self
            .cfg
            .over_bounds(self.buffered_total, conn.half_ref(dir))
            && self.force_gap(conn, dir, out)
        {}
        Self::check_fin(conn, dir);
    }

    /// New bytes of `dir` from `start` arrive: counted late when data beyond
    /// them, or the peer's ACK covering them, came first; made to wait for
    /// the peer's bytes up to `need` when given.
    fn new_bytes(
        &mut self,
        conn: &mut Conn,
        dir: Direction,
        start: u64,
        need: Option<u64>,
        ts: Timestamp,
    ) {
        let since = Since { pkt: conn.pkts, ts };
        let h = conn.half(dir);
        let late = start < h.frontier() || start < h.acked;
        if let Some(need) = need {
            if h.waits.len() >= MAX_WAITS {
                h.waits.remove(0);
            }
            h.waits.push(Wait {
                from: start,
                need,
                since,
            });
        }
        if late {
            conn.late += 1;
            self.stats.late_segments += 1;
        }
    }

    /// Insert a piece at `off`, keeping bytes already buffered (first received wins).
    fn insert(&mut self, h: &mut Half, off: u64, p: Piece) {
        let end = off + p.len;
        // The pieces buffered over `off..end` (the first may start before
        // it), then an empty one at `end` that closes the last stretch.
        let before = h.buf.range(..off).next_back();
        let overlapping: Vec<(u64, u64)> = (before.filter(|(&k, q)| k + q.len > off).into_iter())
            .chain(h.buf.range(off..end))
            .map(|(&k, q)| (k, q.len))
            .chain([(end, 0)])
            .collect();
        let mut cursor = off;
        for (k, klen) in overlapping {
            if cursor < k {
                self.buffer(h, &p, off, (cursor, k));
            }
            let (os, oe) = (k.max(off), (k + klen).min(end));
            if oe > os {
                self.stats.retransmitted_bytes += oe - os;
                if let (Some(new), Some(old)) =
                    (&p.data, h.buf.get(&k).and_then(|q| q.data.as_ref()))
                {
                    let a = new.get(rel(os - off)..rel(oe - off));
                    let b = old.get(rel(os - k)..rel(oe - k));
                    if a != b {
                        self.stats.overlap_conflicts += 1;
                    }
                }
            }
            cursor = cursor.max(k + klen);
        }
    }

    /// Buffers bytes `s..e` of `p` (which starts at `off`), where no piece is.
    fn buffer(&mut self, h: &mut Half, p: &Piece, off: u64, (s, e): (u64, u64)) {
        let range = rel(s - off)..rel(e - off);
        let data = match &p.data {
            Some(d) if range.end > d.len() => return,
            Some(d) => Some(d.slice(range)),
            None => None,
        };
        let n = if data.is_some() { rel(e - s) } else { 0 };
        h.buffered += n;
        self.buffered_total += n;
        let file = data
            .as_ref()
            .and(p.file)
            .and_then(|f| f.checked_add(s - off));
        let piece = Piece {
            data,
            len: e - s,
            frame: p.frame,
            ts: p.ts,
            file,
        };
        h.buf.insert(s, piece);
    }

    /// Emit every piece contiguous with the next expected offset.
    fn deliver(&mut self, conn: &mut Conn, dir: Direction, out: &mut Vec<FlowEvent>) {
        let stream = conn.stream;
        let peer_next = conn.half_ref(dir.reverse()).delivered_end();
        let h = conn.half(dir);
        // Bytes that wait for the peer stay until it delivered what they need.
        if !h.waits.is_empty() {
            h.waits.retain(|w| w.need > peer_next);
        }
        let limit = h.wait_limit();
        while let Some(entry) = h.buf.first_entry() {
            if *entry.key() > h.next_off || *entry.key() >= limit {
                break;
            }
            let k = *entry.key();
            let mut p = entry.remove();
            if p.data.is_some() {
                let n = rel(p.len);
                h.buffered = h.buffered.saturating_sub(n);
                self.buffered_total = self.buffered_total.saturating_sub(n);
            }
            // Pieces never start before next_off (trimmed on insert); be safe anyway.
            let skip = h.next_off.saturating_sub(k);
            if skip >= p.len {
                continue;
            }
            if skip > 0 {
                p.len -= skip;
                p.data = p.data.map(|d| d.slice(rel(skip).min(d.len())..));
                p.file = p.file.and_then(|f| f.checked_add(skip));
            }
            self.emit(h, stream, dir, p, GapReason::Snaplen, out);
        }
    }

    /// Emits `p` at the next expected offset of `h` (direction `dir` of
    /// `stream`): its bytes, or a gap for `reason` when it has none.
    #[inline]
    fn emit(
        &mut self,
        h: &mut Half,
        stream: u64,
        dir: Direction,
        p: Piece,
        reason: GapReason,
        out: &mut Vec<FlowEvent>,
    ) {
        let stream_offset = h.next_off;
        out.push(match p.data {
            Some(data) => FlowEvent::Data {
                stream,
                dir,
                data,
                stream_offset,
                frame: p.frame,
                ts: p.ts,
                origin: p.file.map_or(Origin::Unknown, Origin::File),
            },
            None => {
                self.stats.gaps += 1;
                self.stats.gap_bytes += p.len;
                FlowEvent::Gap {
                    stream,
                    dir,
                    stream_offset,
                    len: p.len,
                    frame: p.frame,
                    ts: p.ts,
                    reason,
                }
            }
        });
        h.next_off += p.len;
        h.next_seq = h.next_seq.wrapping_add(p.len as u32);
    }

    /// Declare the hole before the first buffered piece lost; false when nothing is buffered.
    /// Bytes waiting for the peer are let go first.
    fn force_gap(&mut self, conn: &mut Conn, dir: Direction, out: &mut Vec<FlowEvent>) -> bool {
        conn.half(dir).waits.clear();
        let Some((&k, p)) = conn.half(dir).buf.iter().next() else {
            return false;
        };
        let (frame, ts) = (p.frame, p.ts);
        self.lose(conn, dir, k, frame, ts, out);
        self.deliver(conn, dir, out);
        true
    }

    /// Declare lost every missing byte the peer acknowledged, up to the frontier.
    #[inline]
    fn flush_acked(
        &mut self,
        conn: &mut Conn,
        dir: Direction,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) {
        // Nearly always nothing acknowledged is missing: checked here, in
        // line (two calls per segment), the gaps out of line.
        let h = conn.half(dir);
        if h.next_off >= h.acked.min(h.frontier()) {
            h.held = None;
            return;
        }
        self.acked_hole(conn, dir, frame, ts, out);
    }

    /// An acknowledged hole: held in the reorder window (from now, unless
    /// it is the hole already held), or lost at once when the window is off.
    #[inline(never)]
    fn acked_hole(
        &mut self,
        conn: &mut Conn,
        dir: Direction,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) {
        if !self.cfg.reorder.enabled() {
            self.flush_acked_gaps(conn, dir, frame, ts, out);
            return;
        }
        let since = Since { pkt: conn.pkts, ts };
        let h = conn.half(dir);
        if h.held.map(|x| x.off) != Some(h.next_off) {
            h.held = Some(Held {
                off: h.next_off,
                since,
            });
        }
    }

    /// [`Reassembler::flush_acked`] once acknowledged bytes are missing.
    #[inline(never)]
    fn flush_acked_gaps(
        &mut self,
        conn: &mut Conn,
        dir: Direction,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) {
        loop {
            let h = conn.half(dir);
            let limit = h.acked.min(h.frontier());
            if h.next_off >= limit {
                return;
            }
            // `deliver` ran, so the first piece (if any) starts after `next_off`.
            let (end, f, t) = match h.buf.first_key_value() {
                Some((&k, p)) if k <= limit => (k, p.frame, p.ts),
                _ if h.fin_off == Some(limit) => (limit, h.fin_frame, ts),
                _ => (limit, frame, ts),
            };
            if !self.lose(conn, dir, end, f, t, out) {
                return;
            }
            self.deliver(conn, dir, out);
        }
    }

    /// Emit a `Lost` gap from the next expected offset to `end`; false when empty.
    fn lose(
        &mut self,
        conn: &mut Conn,
        dir: Direction,
        end: u64,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) -> bool {
        let stream = conn.stream;
        let h = conn.half(dir);
        if end <= h.next_off {
            return false;
        }
        let p = Piece::hole(end - h.next_off, frame, ts);
        self.emit(h, stream, dir, p, GapReason::Lost, out);
        true
    }

    fn check_fin(conn: &mut Conn, dir: Direction) {
        let h = conn.half(dir);
        if h.fin_off.is_some_and(|f| h.next_off >= f) && h.buf.is_empty() {
            h.done = true;
        }
    }

    fn close(
        &mut self,
        conn: &mut Conn,
        reason: CloseReason,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<FlowEvent>,
    ) {
        for dir in [Direction::ClientToBroker, Direction::BrokerToClient] {
            while self.force_gap(conn, dir, out) && !conn.half_ref(dir).buf.is_empty() {}
            // Bytes before a FIN that never arrived.
            let h = conn.half(dir);
            if let Some(f) = h.fin_off {
                let fin_frame = h.fin_frame;
                self.lose(conn, dir, f, fin_frame, ts, out);
            }
            conn.half(dir).done = true;
        }
        conn.closed = true;
        conn.closing = None;
        out.push(FlowEvent::Closed {
            stream: conn.stream,
            reason,
            frame,
            ts,
            late_segments: conn.late,
        });
    }

    /// Whether [`Reassembler::sweep`] at `now` would look at the
    /// connections (at most once a second of capture time).
    fn sweep_due(&self, now: Timestamp) -> bool {
        !matches!(self.last_sweep, Some(t) if now.nanos_since(t) < 1_000_000_000)
    }

    /// Packet-time housekeeping, at most once per second of packet time.
    fn sweep(&mut self, now: Timestamp, out: &mut Vec<FlowEvent>) {
        if !self.sweep_due(now) {
            return;
        }
        self.last_sweep = Some(now);
        let mut keys: Vec<(u64, Key)> = self.conns.iter().map(|(k, c)| (c.stream, *k)).collect();
        keys.sort();
        for (_, key) in keys {
            let Some(mut c) = self.conns.remove(&key) else {
                continue;
            };
            let idle = now.nanos_since(c.last_ts);
            if c.closed {
                if idle < TOMBSTONE_NS.min(self.cfg.idle_timeout_ns) {
                    self.conns.insert(key, c);
                }
                continue;
            }
            if idle >= self.cfg.idle_timeout_ns {
                self.stats.evicted += 1;
                let f = c.last_frame;
                self.close(&mut c, CloseReason::Idle, f, now, out);
                continue;
            }
            for dir in [Direction::ClientToBroker, Direction::BrokerToClient] {
                let timeout = self.cfg.gap_timeout_ns;
                let old = |h: &Half| h.buf.values().any(|p| now.nanos_since(p.ts) >= timeout);
                while old(c.half_ref(dir)) && self.force_gap(&mut c, dir, out) {}
                Self::check_fin(&mut c, dir);
            }
            if c.halves.iter().all(|h| h.done) {
                let f = c.last_frame;
                self.close(&mut c, CloseReason::Fin, f, now, out);
            }
            self.conns.insert(key, c);
        }
    }

    fn evict_oldest(&mut self, frame: u64, ts: Timestamp, out: &mut Vec<FlowEvent>) {
        let victim = self
            .conns
            .iter()
            .min_by_key(|(_, c)| (!c.closed, c.last_ts, c.stream))
            .map(|(k, _)| *k);
        if let Some(mut c) = victim.and_then(|k| self.conns.remove(&k)) {
            if !c.closed {
                self.stats.evicted += 1;
                self.close(&mut c, CloseReason::Idle, frame, ts, out);
            }
        }
    }
}

fn rel(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::capture::TcpFlags;

    const C: &str = "10.0.0.1:40000";
    const B: &str = "10.0.0.2:9092";

    fn seg(from_client: bool, seq: u32, payload: &[u8], flags: TcpFlags) -> Segment {
        let (c, b) = (C.parse().unwrap(), B.parse().unwrap());
        Segment {
            src: if from_client { c } else { b },
            dst: if from_client { b } else { c },
            seq,
            ack: 0,
            flags,
            payload: Bytes::copy_from_slice(payload),
            payload_truncated_by: 0,
            capture: 0,
        }
    }

    const ACK: TcpFlags = TcpFlags {
        syn: false,
        fin: false,
        rst: false,
        ack: true,
    };
    const SYN: TcpFlags = TcpFlags {
        syn: true,
        fin: false,
        rst: false,
        ack: false,
    };

    fn data_of(ev: &[FlowEvent], dir: Direction) -> Vec<u8> {
        let mut v = Vec::new();
        for e in ev {
            if let FlowEvent::Data { dir: d, data, .. } = e {
                if *d == dir {
                    v.extend_from_slice(data);
                }
            }
        }
        v
    }

    /// With each payload's file offset given, every `Data` event's bytes lie at its
    /// `file_offset` in the file, through reordering, overlaps (first copy wins),
    /// retransmissions and the sequence-number wrap.
    #[test]
    fn data_events_say_where_their_bytes_lie_in_the_file() {
        let stream = b"0123456789abcdefghijklmnopqrstuvwxyz";
        let mut file = Vec::new();
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let isn = u32::MAX - 7;
        let t = Timestamp::new(1, 0);
        r.push(&mut seg(true, isn, b"", SYN), 1, t, None, &mut out);
        let base = isn.wrapping_add(1);
        // (stream range, frame): out of order, overlapping, retransmitted.
        let sends: [(usize, usize); 8] = [
            (10, 20),
            (15, 25),
            (0, 4),
            (2, 12),
            (0, 12),
            (30, 36),
            (20, 33),
            (5, 36),
        ];
        for (i, &(s0, s1)) in sends.iter().enumerate() {
            // Each frame's payload at its own place in the file, after some junk.
            file.extend_from_slice(b"<hdr>");
            let at = file.len() as u64;
            file.extend_from_slice(&stream[s0..s1]);
            let sg = seg(true, base.wrapping_add(s0 as u32), &stream[s0..s1], ACK);
            r.push(&mut sg.clone(), 2 + i as u64, t, Some(at), &mut out);
        }
        assert_eq!(data_of(&out, Direction::ClientToBroker), stream.to_vec());
        for e in &out {
            if let FlowEvent::Data { data, origin, .. } = e {
                let at = origin.file().expect("located") as usize;
                assert_eq!(&file[at..at + data.len()], &data[..]);
            }
        }
        // Pushed without offsets: none.
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        r.push(&mut seg(true, 5, b"abc", ACK), 1, t, None, &mut out);
        assert!(out.iter().all(|e| matches!(
            e,
            FlowEvent::Data {
                origin: Origin::Unknown,
                ..
            }
        ) || !matches!(e, FlowEvent::Data { .. })));
    }

    #[test]
    fn reorder_overlap_and_wrap() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let isn = u32::MAX - 3;
        let t = Timestamp::new(1, 0);
        r.push(&mut seg(true, isn, b"", SYN), 1, t, None, &mut out);
        // Bytes 0..10 = "0123456789", starting at isn+1 (wraps after 3 bytes).
        let base = isn.wrapping_add(1);
        r.push(
            &mut seg(true, base.wrapping_add(5), b"56789", ACK),
            2,
            t,
            None,
            &mut out,
        );
        r.push(
            &mut seg(true, base.wrapping_add(3), b"3X5", ACK),
            3,
            t,
            None,
            &mut out,
        ); // X conflicts with nothing yet; 5 overlaps
        r.push(&mut seg(true, base, b"012", ACK), 4, t, None, &mut out);
        assert_eq!(data_of(&out, Direction::ClientToBroker), b"0123X56789");
        assert_eq!(r.stats().overlap_conflicts, 0);
        r.push(
            &mut seg(true, base.wrapping_add(2), b"2Y", ACK),
            5,
            t,
            None,
            &mut out,
        ); // pure retransmission
        assert_eq!(r.stats().retransmitted_bytes, 1 + 2);
        assert!(matches!(out[0], FlowEvent::Open(Opened { stream: 0, .. })));
        assert!(matches!(out[1], FlowEvent::Start { syn_seen: true, .. }));
    }

    #[test]
    fn first_received_wins_and_conflict_counted() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        r.push(&mut seg(true, 100, b"a", ACK), 1, t, None, &mut out); // SYN-less start at 100
        r.push(&mut seg(true, 103, b"DEF", ACK), 2, t, None, &mut out);
        r.push(&mut seg(true, 102, b"cdXf", ACK), 3, t, None, &mut out);
        r.push(&mut seg(true, 101, b"b", ACK), 4, t, None, &mut out);
        assert_eq!(data_of(&out, Direction::ClientToBroker), b"abcDEF");
        assert_eq!(r.stats().overlap_conflicts, 1);
        // Provenance: "c" came from frame 3, "DEF" from frame 2.
        let frames: Vec<(u64, u64)> = out
            .iter()
            .filter_map(|e| match e {
                FlowEvent::Data {
                    stream_offset,
                    frame,
                    ..
                } => Some((*stream_offset, *frame)),
                _ => None,
            })
            .collect();
        assert_eq!(frames, vec![(0, 1), (1, 4), (2, 3), (3, 2)]);
    }

    #[test]
    fn gap_on_bound_then_resume() {
        let cfg = FlowConfig {
            max_buffer_per_dir: 8,
            ..FlowConfig::default()
        };
        let mut r = Reassembler::new(cfg);
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        r.push(&mut seg(true, 0, b"ab", ACK), 1, t, None, &mut out);
        r.push(&mut seg(true, 5, b"fghij", ACK), 2, t, None, &mut out); // 3 bytes missing
        assert!(!out.iter().any(|e| matches!(e, FlowEvent::Gap { .. })));
        r.push(&mut seg(true, 10, b"klmno", ACK), 3, t, None, &mut out); // 10 buffered > 8
        let gap = out
            .iter()
            .find(|e| matches!(e, FlowEvent::Gap { .. }))
            .unwrap();
        assert_eq!(
            *gap,
            FlowEvent::Gap {
                stream: 0,
                dir: Direction::ClientToBroker,
                stream_offset: 2,
                len: 3,
                frame: 2,
                ts: t,
                reason: GapReason::Lost
            }
        );
        assert_eq!(data_of(&out, Direction::ClientToBroker), b"abfghijklmno");
        assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn gap_on_timeout_fin_and_close() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        r.push(
            &mut seg(true, 0, b"ab", ACK),
            1,
            Timestamp::new(1, 0),
            None,
            &mut out,
        );
        r.push(
            &mut seg(true, 4, b"ef", ACK),
            2,
            Timestamp::new(1, 0),
            None,
            &mut out,
        );
        r.push(
            &mut seg(false, 50, b"zz", ACK),
            3,
            Timestamp::new(12, 0),
            None,
            &mut out,
        );
        assert_eq!(data_of(&out, Direction::ClientToBroker), b"abef");
        let fin = TcpFlags { fin: true, ..ACK };
        r.push(
            &mut seg(true, 6, b"", fin),
            4,
            Timestamp::new(12, 0),
            None,
            &mut out,
        );
        r.push(
            &mut seg(false, 52, b"", fin),
            5,
            Timestamp::new(12, 0),
            None,
            &mut out,
        );
        assert!(matches!(
            out.last(),
            Some(FlowEvent::Closed {
                reason: CloseReason::Fin,
                frame: 5,
                ..
            })
        ));
        // The final ACK after close neither reopens nor emits.
        let n = out.len();
        r.push(
            &mut seg(true, 7, b"", ACK),
            6,
            Timestamp::new(12, 0),
            None,
            &mut out,
        );
        r.push(
            &mut seg(true, 2, b"cd", ACK),
            7,
            Timestamp::new(12, 0),
            None,
            &mut out,
        );
        assert_eq!(out.len(), n);
        assert_eq!(r.stats().after_close, 2);
    }

    /// `Data`/`Gap` events of one direction as "D<offset>+<len>" / "G<offset>+<len>".
    fn layout(ev: &[FlowEvent], dir: Direction) -> Vec<String> {
        ev.iter()
            .filter_map(|e| match e {
                FlowEvent::Data {
                    dir: d,
                    stream_offset,
                    data,
                    ..
                } if *d == dir => Some(format!("D{stream_offset}+{}", data.len())),
                FlowEvent::Gap {
                    dir: d,
                    stream_offset,
                    len,
                    ..
                } if *d == dir => Some(format!("G{stream_offset}+{len}")),
                _ => None,
            })
            .collect()
    }

    /// The reorder window off: the tests of what an ACK, a FIN or a close
    /// declares at once, which is also what they declare when the window ends.
    fn no_window() -> FlowConfig {
        FlowConfig {
            reorder: ReorderWindow::OFF,
            ..FlowConfig::default()
        }
    }

    fn ack_seg(from_client: bool, seq: u32, ack: u32) -> Segment {
        Segment {
            ack,
            ..seg(from_client, seq, b"", ACK)
        }
    }

    /// The round trips reported, in order.
    fn rtts(ev: &[FlowEvent]) -> Vec<(u64, RttFrom, u64)> {
        ev.iter()
            .filter_map(|e| match e {
                FlowEvent::Rtt { rtt, frame, .. } => Some((rtt.ns, rtt.from, *frame)),
                _ => None,
            })
            .collect()
    }

    /// A segment with bytes and an acknowledgment number.
    fn data_seg(from_client: bool, seq: u32, ack: u32, payload: &[u8]) -> Segment {
        Segment {
            ack,
            ..seg(from_client, seq, payload, ACK)
        }
    }

    /// Time `ms` milliseconds (and `us` microseconds) after one second.
    fn at_ms(ms: u32, us: u32) -> Timestamp {
        Timestamp::new(1, ms * 1_000_000 + us * 1000)
    }

    /// The handshake's round trip is the client's ACK of the SYN/ACK less
    /// its latest SYN (a retransmitted SYN restarts it); an ACK of anything
    /// else does not complete it; it is reported once, and data/ACK pairs
    /// after it change nothing.
    #[test]
    fn handshake_rtt_is_the_clients_ack_less_its_latest_syn() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let (ci, bi) = (u32::MAX - 1, 7000u32);
        r.push(&mut seg(true, ci, b"", SYN), 1, at_ms(0, 0), None, &mut out);
        // The SYN again, 1 s later (the first was lost past the capture).
        r.push(
            &mut seg(true, ci, b"", SYN),
            2,
            at_ms(1000, 0),
            None,
            &mut out,
        );
        let mut synack = data_seg(false, bi, ci.wrapping_add(1), b"");
        synack.flags = TcpFlags { ack: true, ..SYN };
        r.push(&mut synack, 3, at_ms(1000, 300), None, &mut out);
        // An ACK that does not acknowledge the SYN/ACK: not the handshake's.
        let c1 = ci.wrapping_add(1);
        r.push(
            &mut ack_seg(true, c1, bi),
            4,
            at_ms(1000, 400),
            None,
            &mut out,
        );
        assert!(rtts(&out).is_empty(), "{out:?}");
        r.push(
            &mut ack_seg(true, c1, bi + 1),
            5,
            at_ms(1000, 512),
            None,
            &mut out,
        );
        assert_eq!(rtts(&out), [(512_000, RttFrom::Handshake, 5)]);
        // Data and quick ACKs afterwards: the handshake's stands.
        r.push(
            &mut data_seg(true, c1, bi + 1, b"req"),
            6,
            at_ms(1001, 0),
            None,
            &mut out,
        );
        let c4 = c1.wrapping_add(3);
        r.push(
            &mut ack_seg(false, bi + 1, c4),
            7,
            at_ms(1001, 1),
            None,
            &mut out,
        );
        r.push(
            &mut data_seg(false, bi + 1, c4, b"rsp"),
            8,
            at_ms(1001, 2),
            None,
            &mut out,
        );
        r.push(
            &mut ack_seg(true, c4, bi + 4),
            9,
            at_ms(1001, 3),
            None,
            &mut out,
        );
        assert_eq!(rtts(&out).len(), 1);
        assert_eq!(data_of(&out, Direction::BrokerToClient), b"rsp");
    }

    /// Without a handshake: per direction the smallest time from new bytes
    /// to the other side's ACK covering them, the two summed once both
    /// exist; reported again only when it gets smaller.
    #[test]
    fn without_a_handshake_rtt_comes_from_data_ack_pairs() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let (c, b) = (1000u32, 9000u32);
        let mut f = 0;
        let mut push = |r: &mut Reassembler, s: Segment, t: Timestamp, out: &mut Vec<FlowEvent>| {
            f += 1;
            r.push(&mut { s }, f, t, None, out);
        };
        // The client's request, and a second segment of it 1 ms later: the
        // probe is the first (one at a time), acknowledged 5 ms after it.
        push(
            &mut r,
            data_seg(true, c, b, b"0123456789"),
            at_ms(0, 0),
            &mut out,
        );
        push(
            &mut r,
            data_seg(true, c + 10, b, b"abcde"),
            at_ms(1, 0),
            &mut out,
        );
        push(&mut r, ack_seg(false, b, c + 10), at_ms(5, 0), &mut out);
        // Covering the second segment: no probe waits, no sample.
        push(&mut r, ack_seg(false, b, c + 15), at_ms(5, 500), &mut out);
        assert!(rtts(&out).is_empty(), "one direction only: {out:?}");
        // The response, acknowledged by the client 2 ms later (with its
        // next request): both directions known, 5 + 2 ms.
        push(
            &mut r,
            data_seg(false, b, c + 15, b"resp"),
            at_ms(10, 0),
            &mut out,
        );
        push(
            &mut r,
            data_seg(true, c + 15, b + 4, b"next"),
            at_ms(12, 0),
            &mut out,
        );
        assert_eq!(rtts(&out), [(7_000_000, RttFrom::DataAck, 6)]);
        // A quicker broker ACK of that request: 3 ms, so 5 ms in all.
        push(
            &mut r,
            ack_seg(false, b + 4, c + 19),
            at_ms(15, 0),
            &mut out,
        );
        // A slower pair changes nothing.
        push(
            &mut r,
            data_seg(false, b + 4, c + 19, b"more"),
            at_ms(20, 0),
            &mut out,
        );
        push(&mut r, ack_seg(true, c + 19, b + 8), at_ms(30, 0), &mut out);
        assert_eq!(
            rtts(&out),
            [
                (7_000_000, RttFrom::DataAck, 6),
                (5_000_000, RttFrom::DataAck, 7)
            ]
        );
        assert_eq!(r.stats().retransmitted_bytes, 0);
    }

    /// A segment that resends bytes cancels its direction's probe (Karn):
    /// the ACK after it may answer either copy. The next new bytes start a
    /// new probe.
    #[test]
    fn a_retransmission_cancels_the_probe() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let (c, b) = (1000u32, 9000u32);
        // The broker's side first: its response acknowledged in 1 ms.
        r.push(
            &mut data_seg(false, b, c, b"hello"),
            1,
            at_ms(0, 0),
            None,
            &mut out,
        );
        r.push(&mut ack_seg(true, c, b + 5), 2, at_ms(1, 0), None, &mut out);
        // The client's bytes, sent again 200 ms later, then acknowledged:
        // no sample (it would be 201 ms, or 1 ms, depending on the copy).
        r.push(
            &mut data_seg(true, c, b + 5, b"abcd"),
            3,
            at_ms(10, 0),
            None,
            &mut out,
        );
        r.push(
            &mut data_seg(true, c, b + 5, b"abcd"),
            4,
            at_ms(210, 0),
            None,
            &mut out,
        );
        r.push(
            &mut ack_seg(false, b + 5, c + 4),
            5,
            at_ms(211, 0),
            None,
            &mut out,
        );
        assert!(rtts(&out).is_empty(), "{out:?}");
        // Overlapping old bytes with new ones: a retransmission too.
        r.push(
            &mut data_seg(true, c + 2, b + 5, b"cdef"),
            6,
            at_ms(300, 0),
            None,
            &mut out,
        );
        r.push(
            &mut ack_seg(false, b + 5, c + 6),
            7,
            at_ms(300, 10),
            None,
            &mut out,
        );
        assert!(rtts(&out).is_empty(), "{out:?}");
        // New bytes: a probe, acknowledged in 4 ms; 1 + 4 ms in all.
        r.push(
            &mut data_seg(true, c + 6, b + 5, b"gh"),
            8,
            at_ms(400, 0),
            None,
            &mut out,
        );
        r.push(
            &mut ack_seg(false, b + 5, c + 8),
            9,
            at_ms(404, 0),
            None,
            &mut out,
        );
        assert_eq!(rtts(&out), [(5_000_000, RttFrom::DataAck, 9)]);
        assert_eq!(r.stats().retransmitted_bytes, 6);
    }

    #[test]
    fn ack_past_a_hole_declares_the_gap_at_once() {
        let mut r = Reassembler::new(no_window());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        // ISN just below 2^32: the ACK arithmetic must wrap like the sequence numbers.
        let isn = u32::MAX - 4;
        let base = isn.wrapping_add(1);
        let at = |off: u32| base.wrapping_add(off);
        r.push(&mut seg(true, isn, b"", SYN), 1, t, None, &mut out);
        r.push(&mut seg(true, base, b"ab", ACK), 2, t, None, &mut out);
        // 2..4 missing, then 8..12 missing.
        r.push(&mut seg(true, at(4), b"efgh", ACK), 3, t, None, &mut out);
        r.push(&mut seg(true, at(12), b"mn", ACK), 4, t, None, &mut out);
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        // An ACK at or behind the next expected byte says nothing.
        r.push(&mut ack_seg(false, 0, at(2)), 5, t, None, &mut out);
        r.push(
            &mut ack_seg(false, 0, base.wrapping_sub(7)),
            6,
            t,
            None,
            &mut out,
        );
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        // The broker acknowledged byte 5: bytes 2..4 reached it, the capture lost them.
        // The hole 8..12 is not covered yet and stays open.
        r.push(&mut ack_seg(false, 0, at(5)), 7, t, None, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+4"]
        );
        let gap = out
            .iter()
            .find(|e| matches!(e, FlowEvent::Gap { .. }))
            .unwrap();
        assert!(matches!(
            gap,
            FlowEvent::Gap {
                frame: 3,
                reason: GapReason::Lost,
                ..
            }
        ));
        // An ACK half way into the second hole: only the acknowledged part is lost,
        // and the rest can still arrive.
        r.push(&mut ack_seg(false, 0, at(10)), 8, t, None, &mut out);
        r.push(&mut seg(true, at(10), b"kl", ACK), 9, t, None, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+4", "G8+2", "D10+2", "D12+2"]
        );
        assert_eq!(r.buffered(), 0);
        assert_eq!((r.stats().gaps, r.stats().gap_bytes), (2, 4));
    }

    /// A window of `packets` packets and `time_ns` of packet time, 1 MiB.
    fn window(packets: u64, time_ns: u64) -> FlowConfig {
        FlowConfig {
            reorder: ReorderWindow {
                packets,
                time_ns,
                bytes: 1 << 20,
            },
            ..FlowConfig::default()
        }
    }

    fn late_of(ev: &[FlowEvent]) -> Option<u64> {
        ev.iter().find_map(|e| match e {
            FlowEvent::Closed { late_segments, .. } => Some(*late_segments),
            _ => None,
        })
    }

    /// A segment the capture puts after data beyond it and after the ACK
    /// covering it is reassembled in its place, counted late, never lost.
    #[test]
    fn a_late_segment_after_its_ack_fills_its_hole() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        let isn = u32::MAX - 4;
        let base = isn.wrapping_add(1);
        let at = |off: u32| base.wrapping_add(off);
        r.push(&mut seg(true, isn, b"", SYN), 1, t, None, &mut out);
        r.push(&mut seg(true, base, b"ab", ACK), 2, t, None, &mut out);
        r.push(&mut seg(true, at(4), b"efgh", ACK), 3, t, None, &mut out);
        // The broker acknowledged all 8 bytes: 2..4 reached it.
        r.push(&mut ack_seg(false, 0, at(8)), 4, t, None, &mut out);
        r.push(&mut ack_seg(false, 0, at(8)), 5, t, None, &mut out);
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        r.push(&mut seg(true, at(2), b"cd", ACK), 6, t, None, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "D2+2", "D4+4"]
        );
        assert_eq!(data_of(&out, Direction::ClientToBroker), b"abcdefgh");
        assert_eq!((r.stats().gaps, r.stats().late_segments), (0, 1));
        r.finish(&mut out);
        assert_eq!(late_of(&out), Some(1));
    }

    /// A hole that is never filled is lost once the window has passed: after
    /// `packets` packets on the connection, after `time_ns` of packet time
    /// (a packet of another connection is enough), or past `bytes` buffered.
    #[test]
    fn an_acknowledged_hole_is_lost_after_the_window() {
        let t = |s: i64| Timestamp::new(s, 0);
        let isn = 1000u32;
        let base = isn + 1;
        let open = |r: &mut Reassembler, out: &mut Vec<FlowEvent>| {
            r.push(&mut seg(true, isn, b"", SYN), 1, t(1), None, out);
            r.push(&mut seg(true, base, b"ab", ACK), 2, t(1), None, out);
            r.push(&mut seg(true, base + 4, b"efgh", ACK), 3, t(1), None, out);
            r.push(&mut ack_seg(false, 0, base + 8), 4, t(1), None, out);
        };
        // By packets: the fourth packet after the ACK is still in the window,
        // the fifth is not.
        let mut r = Reassembler::new(window(4, 60_000_000_000));
        let mut out = Vec::new();
        open(&mut r, &mut out);
        for f in 5..9 {
            r.push(&mut ack_seg(false, 0, base + 8), f, t(1), None, &mut out);
        }
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        r.push(&mut ack_seg(false, 0, base + 8), 9, t(1), None, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+4"]
        );
        // By time, on a packet of another connection.
        let mut r = Reassembler::new(window(1000, 2_000_000_000));
        let mut out = Vec::new();
        open(&mut r, &mut out);
        let mut other = seg(true, 5, b"", SYN);
        other.src = "10.0.0.9:40000".parse().unwrap();
        r.push(&mut other.clone(), 5, t(2), None, &mut out);
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        r.push(&mut other, 6, t(3), None, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+4"]
        );
        // By bytes: more than the window's bytes buffered behind the hole.
        let mut cfg = window(1000, 60_000_000_000);
        cfg.reorder.bytes = 8;
        let mut r = Reassembler::new(cfg);
        let mut out = Vec::new();
        open(&mut r, &mut out);
        r.push(
            &mut seg(true, base + 8, b"ijklm", ACK),
            5,
            t(1),
            None,
            &mut out,
        );
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+4", "D8+5"]
        );
        assert_eq!(r.buffered(), 0);
        // Off: lost at the ACK.
        let mut r = Reassembler::new(no_window());
        let mut out = Vec::new();
        open(&mut r, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+4"]
        );
    }

    /// A response whose ACK covers request bytes not seen yet waits for
    /// them: the request's bytes come out first.
    #[test]
    fn bytes_sent_after_an_ack_wait_for_what_it_acknowledged() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        let (ci, bi) = (100u32, 5000u32);
        r.push(&mut seg(true, ci, b"", SYN), 1, t, None, &mut out);
        let mut synack = seg(false, bi, b"", SYN);
        synack.flags.ack = true;
        synack.ack = ci + 1;
        r.push(&mut synack, 2, t, None, &mut out);
        // The response (acknowledging 4 request bytes) before the request.
        let mut resp = seg(false, bi + 1, b"RESP", ACK);
        resp.ack = ci + 5;
        r.push(&mut resp, 3, t, None, &mut out);
        assert!(data_of(&out, Direction::BrokerToClient).is_empty());
        let mut req = seg(true, ci + 1, b"REQ!", ACK);
        req.ack = bi + 1;
        r.push(&mut req, 4, t, None, &mut out);
        let order: Vec<Direction> = out
            .iter()
            .filter_map(|e| match e {
                FlowEvent::Data { dir, .. } => Some(*dir),
                _ => None,
            })
            .collect();
        assert_eq!(
            order,
            [Direction::ClientToBroker, Direction::BrokerToClient]
        );
        assert_eq!(data_of(&out, Direction::BrokerToClient), b"RESP");
        assert_eq!(r.buffered(), 0);
    }

    /// Bytes missing when both FINs have been seen keep the connection open
    /// for the window; when they arrive, it closes with nothing lost.
    #[test]
    fn a_close_waits_for_late_bytes_within_the_window() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        let fin = TcpFlags { fin: true, ..ACK };
        r.push(&mut seg(true, 10, b"", SYN), 1, t, None, &mut out);
        let synack = TcpFlags { ack: true, ..SYN };
        r.push(&mut seg(false, 76, b"", synack), 1, t, None, &mut out);
        r.push(&mut seg(true, 11, b"ab", ACK), 2, t, None, &mut out);
        // The client's FIN says 4 bytes came before it; the broker's FIN too.
        r.push(&mut seg(true, 15, b"", fin), 3, t, None, &mut out);
        r.push(&mut seg(false, 77, b"", fin), 4, t, None, &mut out);
        assert!(!out.iter().any(|e| matches!(e, FlowEvent::Closed { .. })));
        r.push(&mut seg(true, 13, b"cd", ACK), 5, t, None, &mut out);
        assert_eq!(data_of(&out, Direction::ClientToBroker), b"abcd");
        assert!(matches!(
            out.last(),
            Some(FlowEvent::Closed {
                reason: CloseReason::Fin,
                late_segments: 1,
                ..
            })
        ));
        assert_eq!(r.stats().gaps, 0);
    }

    /// `push` settles in place a pure ACK that settles nothing (counted,
    /// no event), and leaves to the rest of `push` every ACK it turns into
    /// events (a gap past a hole, a close) or that it cannot judge.
    #[test]
    fn pure_acks_that_settle_nothing_are_settled_in_place() {
        let t = Timestamp::new(1, 0);
        let isn = u32::MAX - 4;
        let base = isn.wrapping_add(1);
        let at = |off: u32| base.wrapping_add(off);
        let mut r = Reassembler::new(no_window());
        let mut frame = 0;
        // The segment's events; `settled`: a pure ACK settled in place,
        // counted as a segment and making no event.
        let mut both = |s: &Segment, settled: bool| -> Vec<FlowEvent> {
            let mut a = Vec::new();
            frame += 1;
            let before = r.stats().segments;
            let took = r.settle_ack(s, frame, t, &mut a);
            if !took {
                r.push(&mut s.clone(), frame, t, None, &mut a);
            }
            assert_eq!(took, settled, "frame {frame}");
            assert_eq!(r.stats().segments, before + 1, "frame {frame}");
            a
        };
        // An ACK of an unknown connection, and the very first segment (the
        // sweep's clock is not set yet), are declined.
        both(&ack_seg(false, 7, at(0)), false);
        both(&seg(true, isn, b"", SYN), false);
        both(&seg(true, base, b"ab", ACK), false);
        // The broker acknowledges what it got: nothing to settle.
        both(&ack_seg(false, 7, at(2)), true);
        both(&ack_seg(false, 7, at(1)), true);
        // A hole (2..4 missing), then an ACK past it: a gap to declare.
        both(&seg(true, at(4), b"efgh", ACK), false);
        let settled = both(&ack_seg(false, 7, at(4)), false);
        assert!(settled.iter().any(|e| matches!(e, FlowEvent::Gap { .. })));
        // The client's pure ACK while its own bytes are in order: taken.
        both(&ack_seg(true, at(8), 7), true);
        // Bytes buffered in the sender's direction: declined.
        both(&seg(true, at(12), b"mn", ACK), false);
        both(&ack_seg(true, at(8), 7), false);
        // A pure ACK with a FIN, RST or payload is not one.
        let rst = Segment {
            flags: TcpFlags { rst: true, ..ACK },
            ..ack_seg(false, 7, at(8))
        };
        both(&seg(true, at(8), b"ijkl", ACK), false);
        both(&ack_seg(false, 7, at(14)), true);
        both(&seg(false, 7, b"xy", ACK), false);
        both(&ack_seg(true, at(14), 9), true);
        // Both FINs: the second closes the connection; an ACK after it is
        // declined.
        let fin = |from_client: bool, seq: u32, ack: u32| Segment {
            flags: TcpFlags { fin: true, ..ACK },
            ..ack_seg(from_client, seq, ack)
        };
        both(&fin(false, 9, at(14)), false);
        let closed = both(&fin(true, at(14), 10), false);
        assert!(closed.iter().any(|e| matches!(e, FlowEvent::Closed { .. })));
        both(&ack_seg(false, 10, at(15)), false);
        both(&rst, false);
        // A second later the sweep is due: declined.
        let mut late = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        late.push(&mut seg(true, isn, b"", SYN), 1, t, None, &mut out);
        late.push(&mut seg(true, base, b"ab", ACK), 2, t, None, &mut out);
        assert!(!late.settle_ack(&ack_seg(false, 7, at(2)), 3, Timestamp::new(2, 0), &mut out));
        assert_eq!(late.stats().segments, 2);
    }

    #[test]
    fn ack_beyond_the_data_seen_waits_for_later_bytes() {
        let mut r = Reassembler::new(no_window());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        // No SYN: offset 0 is the first payload byte seen (seq 1000).
        r.push(&mut seg(true, 1000, b"ab", ACK), 1, t, None, &mut out);
        // The broker acknowledged 20 bytes; the capture has seen 2 and no hole is
        // known yet, so nothing is declared (the ACK cannot invent a gap).
        r.push(&mut ack_seg(false, 0, 1020), 2, t, None, &mut out);
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        // Bytes at 10 arrive: 2..10 were acknowledged before, so they are lost now.
        r.push(
            &mut seg(true, 1010, b"klmnopqrstuv", ACK),
            3,
            t,
            None,
            &mut out,
        );
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+8", "D10+12"]
        );
        // An ACK for a direction that never started is ignored (and opens nothing).
        let n = out.len();
        r.push(&mut ack_seg(true, 1022, 5000), 4, t, None, &mut out);
        assert_eq!(out.len(), n);
    }

    #[test]
    fn both_fins_close_a_connection_with_a_hole() {
        let mut r = Reassembler::new(no_window());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        let fin = TcpFlags { fin: true, ..ACK };
        r.push(&mut seg(true, 0, b"ab", ACK), 1, t, None, &mut out);
        r.push(&mut seg(true, 4, b"ef", ACK), 2, t, None, &mut out); // 2..4 never captured
        r.push(&mut seg(false, 50, b"zz", ACK), 3, t, None, &mut out);
        r.push(&mut seg(true, 6, b"", fin), 4, t, None, &mut out);
        assert!(!out.iter().any(|e| matches!(e, FlowEvent::Closed { .. })));
        // The broker's FIN (its ACK number carries no information here): both sides
        // are done sending, so the hole is lost and the connection closes now.
        r.push(&mut seg(false, 52, b"", fin), 5, t, None, &mut out);
        assert_eq!(
            layout(&out, Direction::ClientToBroker),
            ["D0+2", "G2+2", "D4+2"]
        );
        assert!(matches!(
            out.last(),
            Some(FlowEvent::Closed {
                reason: CloseReason::Fin,
                frame: 5,
                ..
            })
        ));
    }

    #[test]
    fn ack_of_a_fin_ends_its_direction() {
        let mut r = Reassembler::new(no_window());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        let fin = TcpFlags { fin: true, ..ACK };
        r.push(&mut seg(true, 0, b"ab", ACK), 1, t, None, &mut out);
        r.push(&mut seg(false, 50, b"zz", ACK), 2, t, None, &mut out);
        // The client's FIN at 6: bytes 2..6 were never captured.
        r.push(&mut seg(true, 6, b"", fin), 3, t, None, &mut out);
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2"]);
        // The broker acknowledges the FIN (seq 6 + 1): everything before it arrived.
        r.push(&mut ack_seg(false, 52, 7), 4, t, None, &mut out);
        assert_eq!(layout(&out, Direction::ClientToBroker), ["D0+2", "G2+4"]);
        assert!(matches!(out.last(), Some(FlowEvent::Gap { frame: 3, .. })));
        // Its own FIN then closes the connection.
        r.push(&mut seg(false, 52, b"", fin), 5, t, None, &mut out);
        assert!(matches!(
            out.last(),
            Some(FlowEvent::Closed {
                reason: CloseReason::Fin,
                frame: 5,
                ..
            })
        ));
    }

    #[test]
    fn snaplen_cut_is_a_gap() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        let mut s = seg(true, 0, b"abc", ACK);
        s.payload_truncated_by = 7;
        r.push(&mut s, 1, t, None, &mut out);
        r.push(&mut seg(true, 10, b"k", ACK), 2, t, None, &mut out);
        let kinds: Vec<String> = out
            .iter()
            .map(|e| match e {
                FlowEvent::Data {
                    stream_offset,
                    data,
                    ..
                } => format!("D{stream_offset}+{}", data.len()),
                FlowEvent::Gap {
                    stream_offset,
                    len,
                    reason,
                    ..
                } => format!("G{stream_offset}+{len}{reason:?}"),
                _ => String::new(),
            })
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(kinds, vec!["D0+3", "G3+7Snaplen", "D10+1"]);
    }

    #[test]
    fn ports_decide_sides_and_filter() {
        let mut r = Reassembler::new(FlowConfig {
            ports: Ports::List(vec![9092]),
            ..FlowConfig::default()
        });
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        r.push(&mut seg(false, 0, b"x", ACK), 1, t, None, &mut out); // broker speaks first
        assert!(
            matches!(&out[0], FlowEvent::Open(Opened { client, broker, .. })
            if *client == C.parse().unwrap() && *broker == B.parse().unwrap())
        );
        let mut other = seg(true, 0, b"x", ACK);
        other.dst = "10.0.0.2:80".parse().unwrap();
        r.push(&mut other, 2, t, None, &mut out);
        assert_eq!(r.stats().not_broker_port, 1);
        // A RST closes and flushes.
        let rst = TcpFlags { rst: true, ..ACK };
        r.push(&mut seg(true, 0, b"", rst), 3, t, None, &mut out);
        assert!(matches!(
            out.last(),
            Some(FlowEvent::Closed {
                reason: CloseReason::Reset,
                ..
            })
        ));
        // A new SYN reuses the pair as stream 1.
        r.push(&mut seg(true, 500, b"", SYN), 4, t, None, &mut out);
        assert!(matches!(
            out.last(),
            Some(FlowEvent::Start { stream: 1, .. })
        ));
    }

    /// Bytes the capture puts after a RST are not delivered, but counted and
    /// reported once per segment; a late copy of bytes already delivered is not.
    #[test]
    fn new_bytes_after_a_reset_are_reported_not_delivered() {
        let mut r = Reassembler::new(FlowConfig::default());
        let mut out = Vec::new();
        let t = Timestamp::new(1, 0);
        r.push(&mut seg(true, 99, b"", SYN), 1, t, None, &mut out);
        r.push(
            &mut seg(false, 499, b"", TcpFlags { ack: true, ..SYN }),
            2,
            t,
            None,
            &mut out,
        );
        r.push(&mut seg(true, 100, b"abcd", ACK), 3, t, None, &mut out);
        r.push(&mut seg(false, 500, b"wxyz", ACK), 4, t, None, &mut out);
        assert_eq!(data_of(&out, Direction::BrokerToClient), b"wxyz");
        r.push(
            &mut seg(true, 104, b"", TcpFlags { rst: true, ..ACK }),
            5,
            t,
            None,
            &mut out,
        );
        assert!(r.take_late().is_none());
        out.clear();
        // The broker's next bytes, behind the client's RST in capture order.
        r.push(&mut seg(false, 504, b"12345", ACK), 6, t, None, &mut out);
        assert!(out.is_empty(), "{out:?}");
        let late = r.take_late().expect("reported");
        assert_eq!(
            (late.stream, late.dir, late.bytes),
            (0, Direction::BrokerToClient, 5)
        );
        assert!(r.take_late().is_none(), "taken once");
        // A retransmission of delivered bytes, and a bare ACK: nothing new.
        r.push(&mut seg(false, 500, b"wxyz", ACK), 7, t, None, &mut out);
        r.push(&mut seg(true, 104, b"", ACK), 8, t, None, &mut out);
        assert!(r.take_late().is_none());
        // Overlapping the delivered end: only the bytes past it count.
        r.push(&mut seg(false, 502, b"yz67", ACK), 9, t, None, &mut out);
        assert_eq!(r.take_late().map(|l| l.bytes), Some(2));
        assert_eq!(r.stats().data_after_close, 2);
    }
}
