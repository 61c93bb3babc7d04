//! The pipeline: frames in, Kafka messages and stream events out.
//!
//! Place in the data path: ties capture decoding (`capture::link`), TCP
//! reassembly (`flow`) and Kafka framing (`kafka::framing`) together, sans-IO.
//! The caller reads frames from any source and calls [`Pipeline::push`] for
//! each, then [`Pipeline::finish`] at the end of the input; decoding and
//! pairing are built on the [`Event`]s it appends.
//!
//! Sides: with [`Ports::List`] the endpoint on a listed port is the broker and
//! every such connection is Kafka; so with [`Ports::Detect`] (the default),
//! whose other connections are candidates as all are with [`Ports::Any`]. A
//! candidate connection is Kafka by shape: its first bytes are held back (at most `detect_limit`) until
//! one direction carries a plausible Kafka request (the framing resync check);
//! that direction's sender is the client. When the client's SYN was seen only
//! the SYN sender can be the client. A connection that shows no plausible
//! request within the limit, or closes first, is not Kafka and is dropped.
//!
//! Invariants: events of one stream come in capture order; per direction,
//! messages come in stream order; every message framed on a stream is shown to
//! its [`RequestLog`] (requests with their api key and version, at most
//! `max_pending_per_stream` unanswered and a few answered ones per stream),
//! on which response resynchronisation anchors its boundaries.

use crate::capture::{decode_link_owned, Frame, FramePlace, Seen, Segment, Skip};
use crate::flow::{
    CloseReason, FlowConfig, FlowEvent, FlowStats, GapReason, Late, Opened, Origin, PortBytes,
    Ports, Reassembler, Rtt,
};
use crate::kafka::decode::Summary;
use crate::kafka::framing::{Framer, FramerConfig, FramerEvent, RawMessage, RequestLog};
use crate::tls::conn::{Conn as TlsConn, Out as TlsOut, TlsEvent};
use crate::tls::keylog::Keys;
use crate::tls::wire::starts_client_hello;
use crate::twins::Twins;
use crate::vocab::{Direction, Timestamp};
use rustc_hash::FxHashMap;
use std::fmt;

/// Pipeline settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelineConfig {
    /// Reassembly: broker ports (or `Any` to detect Kafka by shape), buffer
    /// bounds, timeouts and the reorder window (see [`FlowConfig`]).
    pub flow: FlowConfig,
    /// Framing: largest message, resync wait (see [`FramerConfig`]).
    pub framing: FramerConfig,
    /// With `Ports::Any` or `Ports::Detect`: bytes held per candidate
    /// connection while deciding whether it is Kafka.
    pub detect_limit: usize,
    /// Unanswered requests remembered per stream (framing's [`RequestLog`],
    /// the analyzer's pairing), default 4096.
    pub max_pending_per_stream: usize,
    /// Work out where each message's bytes lie in the capture file
    /// ([`RawMessage::file_pieces`](crate::kafka::framing::RawMessage::file_pieces)),
    /// for readers that drop message bytes and read them again (the TUI's index),
    /// or that copy held bytes only once the file has moved on past them
    /// (`print -V`'s reorder). Off by default: it costs an allocation per
    /// message nobody else reads.
    pub locate_in_file: bool,
    /// TLS session keys: a TLS connection whose session the key log has is
    /// decrypted and its application data framed as Kafka
    /// ([`crate::tls::conn`]); every TLS connection is summarised
    /// ([`Event::Tls`]) with or without them.
    pub tls_keys: Keys,
    /// Several captures read together: the same connection seen at two
    /// capture points is reported once ([`crate::twins`]), a message
    /// waiting at most this long (packet time) for its copy. `None` (the
    /// default) for one capture.
    pub twin_window_ns: Option<u64>,
    /// Most bytes of records the TLS connections parked for their key
    /// (closed while a growing key log may still bring it) hold together;
    /// past it the oldest are given up.
    pub tls_park_bytes: usize,
}

impl Default for PipelineConfig {
    fn default() -> PipelineConfig {
        PipelineConfig {
            flow: FlowConfig::default(),
            framing: FramerConfig::default(),
            detect_limit: 1 << 20,
            max_pending_per_stream: 4096,
            locate_in_file: false,
            tls_keys: Keys::default(),
            twin_window_ns: None,
            tls_park_bytes: 16 << 20,
        }
    }
}

impl PipelineConfig {
    /// Defaults with the given ports.
    pub fn with_ports(ports: Ports) -> PipelineConfig {
        let mut cfg = PipelineConfig::default();
        cfg.flow.ports = ports;
        cfg
    }
}

/// Something worth telling the user about a frame or stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// The frame could not be used: unsupported link type, IP fragment, malformed header.
    Packet(Skip),
    /// Bytes arrived on a connection already closed (the capture puts them
    /// after its FIN or RST): they are not decoded.
    AfterClose(Late),
    /// Segments of a connection arrived late: after data beyond them, or
    /// after the peer's ACK covering them (capture reordering: `-i any`,
    /// several queues or interfaces, merged files). Their bytes were
    /// reassembled in sequence order; reported when the connection closes.
    Reordered {
        /// Connection index.
        stream: u64,
        /// Late segments.
        segments: u64,
    },
    /// The input ended with TCP traffic and no Kafka connection in it.
    NoKafka {
        /// TCP segments seen.
        segments: u64,
        /// The ports that carried the most bytes, with their bytes
        /// ([`BUSIEST_PORTS`] at most, most first).
        busiest: Vec<(u16, u64)>,
    },
    /// A trusted stream held an impossible message size; framing resynchronises.
    BadSize {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// The size read.
        size: i32,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Packet(s) => s.fmt(f),
            Warning::AfterClose(Late { stream, dir, bytes }) => write!(
                f,
                "stream {stream} {dir:?}: {bytes} bytes after the connection closed (capture order); not decoded"
            ),
            Warning::Reordered { stream, segments } => write!(
                f,
                "stream {stream}: {segments} segments arrived late (capture order); reassembled in sequence order"
            ),
            Warning::NoKafka { segments, busiest } => {
                write!(f, "no Kafka found in {segments} TCP segments")?;
                let Some(&(top, _)) = busiest.first() else {
                    return Ok(());
                };
                let list: Vec<String> = (busiest.iter())
                    .map(|(p, b)| format!("{p} ({b} bytes)"))
                    .collect();
                write!(
                    f,
                    "; busiest ports: {}; if Kafka runs there: --ports {top}",
                    list.join(", ")
                )
            }
            Warning::BadSize { stream, dir, size } => write!(
                f,
                "stream {stream} {dir:?}: impossible message size {size}; resynchronising"
            ),
        }
    }
}

/// Most ports [`Warning::NoKafka`] names.
pub const BUSIEST_PORTS: usize = 5;

/// What the pipeline produces.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A Kafka connection: from here on its messages carry its `stream`.
    StreamOpen(Opened),
    /// The connection's network round trip, first known or smaller than
    /// before ([`crate::flow`]'s rules; the sum of both directions, so the
    /// same whichever side turns out to be the client).
    Rtt {
        /// Connection index.
        stream: u64,
        /// The round trip and how it was measured.
        rtt: Rtt,
        /// Frame that completed the measurement.
        frame: u64,
    },
    /// A complete Kafka message (request when `dir` is client → broker).
    Message(RawMessage),
    /// A complete request with the summary scan the analyzer would make of
    /// it, made ahead on the thread that framed it
    /// ([`crate::analyzer::AheadScanner`]); the pipeline itself yields
    /// [`Event::Message`].
    ScannedRequest(RawMessage, Box<Summary>),
    /// A complete response with the summary scan the analyzer would make
    /// of it as the answer to a request of (api key, api version), made
    /// ahead as [`Event::ScannedRequest`]: the analyzer takes it only when
    /// it pairs the response with a request of those.
    ScannedResponse(RawMessage, Box<(i16, i16, Summary)>),
    /// The received prefix of a message whose rest is missing (`missing > 0`).
    Partial(RawMessage),
    /// Bytes missing from a direction.
    Gap {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// Stream offset of the first missing byte.
        stream_offset: u64,
        /// Bytes missing.
        len: u64,
        /// Frame after the gap (or whose payload was cut).
        frame: u64,
        /// Lost or cut by the snaplen.
        reason: GapReason,
    },
    /// Framing found a plausible message boundary after skipping bytes.
    Resync {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// Bytes skipped.
        skipped: u64,
        /// Stream offset of the boundary.
        stream_offset: u64,
        /// Frame carrying the boundary.
        frame: u64,
    },
    /// Bytes at the end of a direction that formed no message.
    Discarded {
        /// Connection index.
        stream: u64,
        /// Direction.
        dir: Direction,
        /// Bytes.
        bytes: u64,
        /// Frame carrying the first of them.
        frame: u64,
    },
    /// The connection ended.
    StreamClosed {
        /// Connection index.
        stream: u64,
        /// Why.
        reason: CloseReason,
        /// Frame that closed it.
        frame: u64,
        /// Time of that frame.
        ts: Timestamp,
    },
    /// What a TLS connection showed: its hellos, whether its keys were
    /// found, alerts, why a direction stopped decrypting, and at its end
    /// what each direction carried ([`crate::tls::conn`]). A connection's
    /// events come after its [`Event::StreamOpen`].
    Tls {
        /// Connection index.
        stream: u64,
        /// Frame that showed it.
        frame: u64,
        /// Time of that frame.
        ts: Timestamp,
        /// What.
        what: TlsEvent,
    },
    /// A frame or stream problem that did not stop processing.
    Warning {
        /// Frame concerned.
        frame: u64,
        /// Offset: in the frame for packet problems, in the stream for framing ones.
        offset: Option<u64>,
        /// What.
        what: Warning,
    },
}

impl Event {
    /// The connection the event concerns (a warning's, when it names one).
    pub fn stream(&self) -> Option<u64> {
        match self {
            Event::StreamOpen(o) => Some(o.stream),
            Event::Message(m)
            | Event::ScannedRequest(m, _)
            | Event::ScannedResponse(m, _)
            | Event::Partial(m) => Some(m.stream),
            Event::Rtt { stream, .. }
            | Event::Gap { stream, .. }
            | Event::Resync { stream, .. }
            | Event::Discarded { stream, .. }
            | Event::StreamClosed { stream, .. }
            | Event::Tls { stream, .. } => Some(*stream),
            Event::Warning { what, .. } => match what {
                Warning::Reordered { stream, .. } | Warning::BadSize { stream, .. } => {
                    Some(*stream)
                }
                Warning::Packet(_) | Warning::AfterClose(_) | Warning::NoKafka { .. } => None,
            },
        }
    }
}

/// Counters of the pipeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineStats {
    /// Frames pushed.
    pub frames: u64,
    /// Frames that decoded to a TCP segment.
    pub tcp_segments: u64,
    /// Frames without IP.
    pub not_ip: u64,
    /// IP packets that are not TCP.
    pub not_tcp: u64,
    /// IP fragments (unsupported).
    pub fragmented: u64,
    /// Frames with a malformed header.
    pub malformed: u64,
    /// Frames of an unsupported link type.
    pub unsupported_link: u64,
    /// Requests framed.
    pub requests: u64,
    /// Responses framed.
    pub responses: u64,
    /// Partial messages.
    pub partial: u64,
    /// Resynchronisations that skipped bytes.
    pub resyncs: u64,
    /// Bytes skipped or discarded by framing.
    pub skipped_bytes: u64,
    /// Kafka connections.
    pub kafka_streams: u64,
    /// Connections found not to be Kafka (`Ports::Any`, `Ports::Detect`).
    pub other_streams: u64,
    /// Reassembly counters.
    pub flow: FlowStats,
}

enum Role {
    Undecided(Box<Probe>),
    Kafka { flip: bool },
    NotKafka,
}

#[derive(Default)]
struct Probe {
    held: Vec<FlowEvent>,
    held_bytes: usize,
    framers: [Option<Framer>; 2],
    syn: [bool; 2],
}

struct StreamState {
    open: Opened,
    role: Role,
    framers: [Option<Framer>; 2],
    requests: RequestLog,
    tls: Tls,
}

/// Whether a connection is TLS, told by its first bytes.
enum Tls {
    /// No bytes yet.
    Unknown,
    /// Not TLS.
    No,
    /// TLS: the records' layer, the reassembler's direction its client
    /// sends on, and its events while the connection is not yet known to
    /// be Kafka.
    Yes {
        conn: Box<TlsConn>,
        client: Direction,
        held: Vec<Event>,
        /// TLS bytes seen (what a connection found not to be Kafka counts).
        bytes: u64,
    },
}

/// Frames → Kafka messages, sans-IO.
pub struct Pipeline {
    cfg: PipelineConfig,
    flow: Reassembler,
    /// Per-connection state by stream id (looked up for every flow event: a fast hash).
    /// Boxed: a stream's state is taken out and put back on every event.
    streams: FxHashMap<u64, Box<StreamState>>,
    scratch: Vec<FlowEvent>,
    /// The framer's events of one `drain`, kept for the next (empty between).
    framed: Vec<FramerEvent>,
    /// What a TLS layer gives for one event, kept for the next (empty between).
    tls_outs: Vec<TlsOut>,
    warned_link: bool,
    stats: PipelineStats,
    /// Bytes of the connections found not to be Kafka, per server port.
    other_ports: PortBytes,
    /// TLS connections that closed while a growing key log may still bring
    /// their key, in the order they closed ([`PARK_FOR_NS`]).
    parked: Vec<Parked>,
    /// Capture time before which parked connections are not looked at again.
    parked_check: Timestamp,
    /// Several captures: twin connections reported once.
    twins: Option<Twins>,
}

/// How long (capture time) a TLS connection that closed waiting for its
/// key stays open to a growing key log: a short connection may close
/// before the log's writer, or its reader, has caught up with it.
pub const PARK_FOR_NS: u64 = 1_000_000_000;

/// How often (capture time) parked connections look for their key.
const PARK_CHECK_NS: u64 = 10_000_000;

/// Most TLS connections parked at once (each holds at most
/// `tls::conn::HOLD_LIMIT` bytes a direction, a short connection, the one
/// that parks, a few KB; [`PipelineConfig::tls_park_bytes`] bounds them
/// together); past it the oldest are closed without their key.
const MAX_PARKED: usize = 1024;

/// A TLS connection whose close is put off until its key comes.
struct Parked {
    st: Box<StreamState>,
    /// Its close.
    closed: FlowEvent,
    /// When its wait ends.
    until: Timestamp,
    /// Bytes of records it holds.
    held: usize,
}

impl Pipeline {
    /// A pipeline with the given settings.
    pub fn new(cfg: PipelineConfig) -> Pipeline {
        let flow = Reassembler::new(cfg.flow.clone());
        Pipeline {
            flow,
            streams: FxHashMap::default(),
            scratch: Vec::new(),
            framed: Vec::new(),
            tls_outs: Vec::new(),
            warned_link: false,
            stats: PipelineStats::default(),
            other_ports: PortBytes::default(),
            parked: Vec::new(),
            parked_check: Timestamp::default(),
            twins: cfg.twin_window_ns.map(Twins::new),
            cfg,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> PipelineStats {
        PipelineStats {
            flow: *self.flow.stats(),
            ..self.stats
        }
    }

    /// What the pipeline holds now: (connections tracked by the reassembler,
    /// out-of-order bytes it buffers, connections with framing state).
    pub fn sizes(&self) -> (usize, usize, usize) {
        (
            self.flow.tracked(),
            self.flow.buffered(),
            self.streams.len(),
        )
    }

    /// Feeds one frame, whole or as the file reader decoded it to its
    /// segment ([`FileSource::poll_with`](crate::capture::FileSource::poll_with),
    /// the same events as for the whole frame); events are appended to
    /// `out`. The frame's bytes become the segment's payload and travel on
    /// as they are (no reference count taken and dropped per frame).
    #[inline]
    pub fn push(&mut self, frame: impl Into<Seen>, out: &mut Vec<Event>) {
        self.stats.frames += 1;
        let from = out.len();
        let ts = match frame.into() {
            Seen::Tcp(mut f) => {
                let file = (self.cfg.locate_in_file && !f.seg.payload.is_empty())
                    .then(|| f.file_offset?.checked_add(f.payload_at as u64))
                    .flatten();
                self.segment(&mut f.seg, f.index, f.ts, file, out);
                f.ts
            }
            Seen::Frame(f) => {
                let ts = f.ts;
                self.frame(f, out);
                ts
            }
        };
        if let Some(t) = &mut self.twins {
            t.pass(out, from, ts);
        }
    }

    /// A whole frame: its link layers decoded (see [`decode_link_owned`]).
    fn frame(&mut self, mut frame: Frame, out: &mut Vec<Event>) {
        // Where the frame's bytes were, for the payload's file offset.
        let place = self.cfg.locate_in_file.then(|| FramePlace::of(&frame));
        let data = std::mem::take(&mut frame.data);
        let seg = match decode_link_owned(frame.link, data, frame.origlen) {
            Ok(s) => s,
            Err(skip) => {
                // The skip's counter, and whether it is worth a warning.
                let st = &mut self.stats;
                let (count, warn) = match &skip {
                    Skip::NotIp => (&mut st.not_ip, false),
                    Skip::NotTcp { .. } => (&mut st.not_tcp, false),
                    Skip::Fragmented => (&mut st.fragmented, true),
                    Skip::Malformed { .. } => (&mut st.malformed, true),
                    Skip::UnsupportedLink(_) => (
                        &mut st.unsupported_link,
                        !std::mem::replace(&mut self.warned_link, true),
                    ),
                };
                *count += 1;
                if warn {
                    let offset = match &skip {
                        Skip::Malformed { offset, .. } => Some(*offset as u64),
                        _ => None,
                    };
                    out.push(Event::Warning {
                        frame: frame.index,
                        offset,
                        what: Warning::Packet(skip),
                    });
                }
                return;
            }
        };
        let file = place.and_then(|p| p.payload_offset(&seg));
        let mut seg = seg;
        seg.capture = frame.capture;
        self.segment(&mut seg, frame.index, frame.ts, file, out);
    }

    /// A frame's TCP segment, its payload at `file` in the capture file when known.
    fn segment(
        &mut self,
        seg: &mut Segment,
        frame: u64,
        ts: Timestamp,
        file: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        self.stats.tcp_segments += 1;
        if !self.parked.is_empty() && ts >= self.parked_check {
            self.parked_check = ts.add_nanos(PARK_CHECK_NS);
            self.unpark(Some(ts), out);
        }
        let mut evs = std::mem::take(&mut self.scratch);
        self.flow.push(seg, frame, ts, file, &mut evs);
        for ev in evs.drain(..) {
            self.flow_event(ev, out);
        }
        self.scratch = evs;
        if let Some(l) = self.flow.take_late() {
            out.push(Event::Warning {
                frame,
                offset: None,
                what: Warning::AfterClose(l),
            });
        }
    }

    /// End of input: flush every connection and framer.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        let from = out.len();
        self.finish_streams(out);
        if let Some(t) = &mut self.twins {
            t.pass(out, from, Timestamp::default());
            t.finish(out);
        }
    }

    fn finish_streams(&mut self, out: &mut Vec<Event>) {
        let mut evs = std::mem::take(&mut self.scratch);
        self.flow.finish(&mut evs);
        for ev in evs.drain(..) {
            self.flow_event(ev, out);
        }
        self.scratch = evs;
        self.unpark(None, out);
        if self.stats.kafka_streams == 0 && self.stats.tcp_segments > 0 {
            let mut ports = self.other_ports.clone();
            ports.merge(self.flow.other_ports());
            out.push(Event::Warning {
                frame: self.stats.frames,
                offset: None,
                what: Warning::NoKafka {
                    segments: self.stats.tcp_segments,
                    busiest: ports.busiest(BUSIEST_PORTS),
                },
            });
        }
    }

    fn flow_event(&mut self, ev: FlowEvent, out: &mut Vec<Event>) {
        let stream = match &ev {
            FlowEvent::Open(open) => {
                let mut st = Box::new(StreamState {
                    open: *open,
                    role: Role::Kafka { flip: false },
                    framers: [None, None],
                    requests: RequestLog::new(self.cfg.max_pending_per_stream),
                    tls: Tls::Unknown,
                });
                match &self.cfg.flow.ports {
                    Ports::Any => st.role = Role::Undecided(Box::default()),
                    Ports::Detect(l) if !l.contains(&open.broker.port()) => {
                        st.role = Role::Undecided(Box::default());
                    }
                    Ports::List(_) | Ports::Detect(_) => self.open(&mut st, out),
                }
                self.streams.insert(open.stream, st);
                return;
            }
            FlowEvent::Start { stream, .. }
            | FlowEvent::Data { stream, .. }
            | FlowEvent::Gap { stream, .. }
            | FlowEvent::Rtt { stream, .. }
            | FlowEvent::Closed { stream, .. } => *stream,
        };
        // The stream is worked on in its place in the table: one lookup. The
        // table is taken out of `self` meanwhile (a handle's move; the work
        // needs `self` for its counters and settings, never the table).
        let closed = matches!(ev, FlowEvent::Closed { .. });
        let mut streams = std::mem::take(&mut self.streams);
        if closed && streams.get(&stream).is_some_and(|st| self.parks(st)) {
            if let Some(st) = streams.remove(&stream) {
                self.park(st, ev, out);
            }
        } else if let Some(st) = streams.get_mut(&stream) {
            self.tls_event(st, ev, out);
            if closed {
                streams.remove(&stream);
            }
        }
        self.streams = streams;
    }

    /// True when a closing stream is a TLS connection still waiting for
    /// its key, from a key log that may yet bring it.
    fn parks(&self, st: &StreamState) -> bool {
        let keys = &self.cfg.tls_keys;
        keys.growing() && matches!(&st.tls, Tls::Yes { conn, .. } if conn.awaits_key())
    }

    /// Puts off a TLS connection's close (`closed`) until its key comes,
    /// making room first: the oldest parked are closed while they are too
    /// many or hold too much.
    fn park(&mut self, st: Box<StreamState>, closed: FlowEvent, out: &mut Vec<Event>) {
        let FlowEvent::Closed { ts, .. } = closed else {
            return;
        };
        let held = match &st.tls {
            Tls::Yes { conn, .. } => conn.held_bytes(),
            _ => 0,
        };
        let mut total: usize = self.parked.iter().map(|p| p.held).sum();
        while !self.parked.is_empty()
            && (self.parked.len() >= MAX_PARKED || total + held > self.cfg.tls_park_bytes)
        {
            let oldest = self.parked.remove(0);
            total -= oldest.held;
            self.close_parked(oldest, out);
        }
        self.parked.push(Parked {
            st,
            closed,
            until: ts.add_nanos(PARK_FOR_NS),
            held,
        });
    }

    /// Closes the parked connections whose key has come or whose wait is
    /// over at `now` (all of them at the end of the input, `None`).
    fn unpark(&mut self, now: Option<Timestamp>, out: &mut Vec<Event>) {
        let mut i = 0;
        while let Some(p) = self.parked.get(i) {
            let done = now.is_none_or(|t| t >= p.until)
                || matches!(&p.st.tls, Tls::Yes { conn, .. } if conn.key_in(&self.cfg.tls_keys));
            if done {
                let p = self.parked.remove(i);
                self.close_parked(p, out);
            } else {
                i += 1;
            }
        }
    }

    /// A parked connection's close, put off until now.
    fn close_parked(&mut self, p: Parked, out: &mut Vec<Event>) {
        let Parked { mut st, closed, .. } = p;
        self.tls_event(&mut st, closed, out);
    }

    /// One event of a stream (`flow_event`'s work once it is found; the
    /// caller drops a closed stream's state).
    fn stream_event(&mut self, st: &mut StreamState, ev: FlowEvent, out: &mut Vec<Event>) {
        let closed = matches!(ev, FlowEvent::Closed { .. });
        match std::mem::replace(&mut st.role, Role::NotKafka) {
            Role::Kafka { flip } => {
                st.role = Role::Kafka { flip };
                self.kafka_event(st, ev, flip, out);
            }
            Role::NotKafka => {
                if let FlowEvent::Data { data, .. } = &ev {
                    (self.other_ports).add(st.open.broker.port(), data.len() as u64);
                }
            }
            Role::Undecided(mut probe) => match self.probe(&mut probe, &ev, closed) {
                Some(flip) => {
                    if flip {
                        std::mem::swap(&mut st.open.client, &mut st.open.broker);
                    }
                    self.open(st, out);
                    st.role = Role::Kafka { flip };
                    for held in probe.held.drain(..) {
                        self.kafka_event(st, held, flip, out);
                    }
                    self.kafka_event(st, ev, flip, out);
                }
                None if closed || probe.held_bytes > self.cfg.detect_limit => {
                    self.stats.other_streams += 1;
                    let held = match &st.tls {
                        Tls::Yes { bytes, .. } => *bytes,
                        _ => probe.held_bytes as u64,
                    };
                    (self.other_ports).add(st.open.broker.port(), held);
                    st.role = Role::NotKafka;
                }
                None => {
                    probe.held.push(ev);
                    st.role = Role::Undecided(probe);
                }
            },
        }
    }

    /// A Kafka connection found: counted, and its [`Event::StreamOpen`].
    fn open(&mut self, st: &mut StreamState, out: &mut Vec<Event>) {
        self.stats.kafka_streams += 1;
        out.push(Event::StreamOpen(st.open));
        if let Tls::Yes { held, .. } = &mut st.tls {
            out.append(held);
        }
    }

    /// One event of a stream, through its TLS layer when it is TLS: the
    /// layer takes the TLS bytes and gives the decrypted application data
    /// as the stream's bytes; any other event passes.
    fn tls_event(&mut self, st: &mut StreamState, ev: FlowEvent, out: &mut Vec<Event>) {
        if let (Tls::Unknown, FlowEvent::Data { dir, data, .. }) = (&st.tls, &ev) {
            st.tls = match starts_client_hello(data) {
                Some(true) => Tls::Yes {
                    conn: Box::default(),
                    client: *dir,
                    held: Vec::new(),
                    bytes: 0,
                },
                _ => Tls::No,
            };
        }
        let Tls::Yes {
            conn,
            client,
            bytes,
            ..
        } = &mut st.tls
        else {
            return self.stream_event(st, ev, out);
        };
        let client = *client;
        if let FlowEvent::Data { data, .. } = &ev {
            *bytes += data.len() as u64;
            // Not Kafka: counted, not decrypted.
            if matches!(st.role, Role::NotKafka) {
                let port = st.open.broker.port();
                return self.other_ports.add(port, data.len() as u64);
            }
        }
        let mut outs = std::mem::take(&mut self.tls_outs);
        match ev {
            FlowEvent::Data {
                dir,
                data,
                stream_offset,
                frame,
                ts,
                ..
            } => {
                let keys = &self.cfg.tls_keys;
                conn.push(
                    dir == client,
                    &data,
                    stream_offset,
                    frame,
                    ts,
                    keys,
                    &mut outs,
                );
            }
            FlowEvent::Gap {
                dir,
                stream_offset,
                frame,
                ts,
                ..
            } => conn.gap(dir == client, stream_offset, frame, ts, &mut outs),
            FlowEvent::Closed { frame, ts, .. } => {
                conn.finish(frame, ts, &self.cfg.tls_keys, &mut outs);
                self.tls_outs(st, client, outs, out);
                return self.stream_event(st, ev, out);
            }
            ev => {
                self.tls_outs = outs;
                return self.stream_event(st, ev, out);
            }
        }
        self.tls_outs(st, client, outs, out);
    }

    /// What a TLS layer gave: plaintext on to the stream as its bytes, its
    /// events out (held while the stream is not known to be Kafka).
    fn tls_outs(
        &mut self,
        st: &mut StreamState,
        client: Direction,
        mut outs: Vec<TlsOut>,
        out: &mut Vec<Event>,
    ) {
        let stream = st.open.stream;
        for o in outs.drain(..) {
            match o {
                TlsOut::Plain {
                    from_client,
                    data,
                    offset,
                    record,
                    frame,
                    ts,
                } => {
                    let dir = if from_client {
                        client
                    } else {
                        client.reverse()
                    };
                    let ev = FlowEvent::Data {
                        stream,
                        dir,
                        data,
                        stream_offset: offset,
                        frame,
                        ts,
                        origin: Origin::Record(record),
                    };
                    self.stream_event(st, ev, out);
                }
                TlsOut::Event { frame, ts, what } => {
                    let ev = Event::Tls {
                        stream,
                        frame,
                        ts,
                        what,
                    };
                    match (&st.role, &mut st.tls) {
                        (Role::Kafka { .. }, _) => out.push(ev),
                        (Role::Undecided(_), Tls::Yes { held, .. }) => held.push(ev),
                        _ => {}
                    }
                }
            }
        }
        self.tls_outs = outs;
    }

    /// Feed a held-back event to the request probes; `Some(flip)` once a side is decided.
    fn probe(&self, p: &mut Probe, ev: &FlowEvent, closed: bool) -> Option<bool> {
        let no = RequestLog::default();
        match ev {
            FlowEvent::Start { dir, syn_seen, .. } => {
                if let Some(s) = p.syn.get_mut(dir.index()) {
                    *s = *syn_seen;
                }
            }
            FlowEvent::Data {
                dir,
                data,
                stream_offset,
                frame,
                ts,
                ..
            } => {
                p.held_bytes += data.len();
                let f = p.framers.get_mut(dir.index())?.get_or_insert_with(|| {
                    Framer::new(0, Direction::ClientToBroker, false, self.cfg.framing).by_shape()
                });
                f.push(data.clone(), *stream_offset, *frame, *ts, Origin::Unknown);
            }
            FlowEvent::Gap {
                dir,
                stream_offset,
                len,
                frame,
                ..
            } => {
                if let Some(Some(f)) = p.framers.get_mut(dir.index()) {
                    f.gap(*stream_offset, *len, *frame, &no);
                }
            }
            _ => {}
        }
        // The SYN sender is the client when its SYN was seen.
        let client_syn = p.syn.first().copied().unwrap_or(false);
        for (i, dir) in [Direction::ClientToBroker, Direction::BrokerToClient]
            .into_iter()
            .enumerate()
        {
            if client_syn && dir == Direction::BrokerToClient {
                continue;
            }
            let syn = p.syn.get(i).copied().unwrap_or(false);
            let Some(Some(f)) = p.framers.get_mut(i) else {
                continue;
            };
            let mut evs = Vec::new();
            framer_events(f, &no, closed, &mut evs);
            for e in evs {
                if let FramerEvent::Message(m) = e {
                    if !syn || m.skipped_before == 0 {
                        return Some(dir == Direction::BrokerToClient);
                    }
                }
            }
        }
        None
    }

    fn kafka_event(
        &mut self,
        st: &mut StreamState,
        ev: FlowEvent,
        flip: bool,
        out: &mut Vec<Event>,
    ) {
        let map = |d: Direction| if flip { d.reverse() } else { d };
        match ev {
            FlowEvent::Open(_) => {}
            FlowEvent::Start {
                stream,
                dir,
                syn_seen,
                seq0,
                ..
            } => {
                let dir = map(dir);
                if let Some(t) = &mut self.twins {
                    t.start(stream, dir, seq0, syn_seen);
                }
                if let Some(slot) = st.framers.get_mut(dir.index()) {
                    *slot = Some(Framer::new(stream, dir, syn_seen, self.cfg.framing));
                }
            }
            FlowEvent::Data {
                stream,
                dir,
                data,
                stream_offset,
                frame,
                ts,
                origin,
            } => {
                let dir = map(dir);
                let framing = self.cfg.framing;
                if dir == Direction::ClientToBroker {
                    st.requests.client_bytes();
                }
                if let Some(slot) = st.framers.get_mut(dir.index()) {
                    slot.get_or_insert_with(|| Framer::new(stream, dir, false, framing))
                        .push(data, stream_offset, frame, ts, origin);
                }
                self.drain(st, dir, false, out);
            }
            FlowEvent::Gap {
                stream,
                dir,
                stream_offset,
                len,
                frame,
                ts: _,
                reason,
            } => {
                let dir = map(dir);
                out.push(Event::Gap {
                    stream,
                    dir,
                    stream_offset,
                    len,
                    frame,
                    reason,
                });
                let StreamState {
                    framers, requests, ..
                } = st;
                if let Some(Some(f)) = framers.get_mut(dir.index()) {
                    f.gap(stream_offset, len, frame, requests);
                }
                self.drain(st, dir, false, out);
            }
            FlowEvent::Rtt { stream, rtt, frame } => out.push(Event::Rtt { stream, rtt, frame }),
            FlowEvent::Closed {
                stream,
                reason,
                frame,
                ts,
                late_segments,
            } => {
                self.drain(st, Direction::ClientToBroker, true, out);
                self.drain(st, Direction::BrokerToClient, true, out);
                if late_segments > 0 {
                    out.push(Event::Warning {
                        frame,
                        offset: None,
                        what: Warning::Reordered {
                            stream,
                            segments: late_segments,
                        },
                    });
                }
                out.push(Event::StreamClosed {
                    stream,
                    reason,
                    frame,
                    ts,
                });
            }
        }
    }

    fn drain(&mut self, st: &mut StreamState, dir: Direction, finish: bool, out: &mut Vec<Event>) {
        let StreamState {
            framers, requests, ..
        } = st;
        let Some(Some(f)) = framers.get_mut(dir.index()) else {
            return;
        };
        let mut evs = std::mem::take(&mut self.framed);
        framer_events(f, requests, finish, &mut evs);
        for e in evs.drain(..) {
            match e {
                FramerEvent::Message(m) => {
                    if m.correlation_id().is_some() {
                        if m.is_request() {
                            self.stats.requests += 1;
                        } else {
                            self.stats.responses += 1;
                        }
                    }
                    requests.observe(&m);
                    self.stats.skipped_bytes += m.skipped_before;
                    out.push(Event::Message(m));
                }
                FramerEvent::Partial(m) => {
                    self.stats.partial += 1;
                    self.stats.skipped_bytes += m.skipped_before;
                    if m.is_request() {
                        requests.observe(&m);
                    }
                    out.push(Event::Partial(m));
                }
                FramerEvent::Resynced {
                    skipped,
                    stream_offset,
                    frame,
                } => {
                    self.stats.resyncs += 1;
                    out.push(Event::Resync {
                        stream: f.stream(),
                        dir,
                        skipped,
                        stream_offset,
                        frame,
                    });
                }
                FramerEvent::Desync {
                    stream_offset,
                    size,
                    frame,
                } => out.push(Event::Warning {
                    frame,
                    offset: Some(stream_offset),
                    what: Warning::BadSize {
                        stream: f.stream(),
                        dir,
                        size,
                    },
                }),
                FramerEvent::Discarded { bytes, frame } => {
                    self.stats.skipped_bytes += bytes;
                    out.push(Event::Discarded {
                        stream: f.stream(),
                        dir,
                        bytes,
                        frame,
                    });
                }
            }
        }
        self.framed = evs;
    }
}

/// The events framer `f` has ready (every one left when its direction
/// `finish`es), appended to `evs`.
fn framer_events(f: &mut Framer, log: &RequestLog, finish: bool, evs: &mut Vec<FramerEvent>) {
    if finish {
        f.finish(log, evs);
    } else {
        while let Some(e) = f.next_event(log) {
            evs.push(e);
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::capture::LinkType;
    use bytes::Bytes;
    use std::net::SocketAddrV4;

    /// A raw-IPv4 frame carrying one TCP segment. Flags: S=SYN A=ACK F=FIN R=RST.
    fn frame(index: u64, src: &str, dst: &str, seq: u32, flags: &str, payload: &[u8]) -> Frame {
        let (s, d): (SocketAddrV4, SocketAddrV4) = (src.parse().unwrap(), dst.parse().unwrap());
        let total = (40 + payload.len()) as u16;
        let mut f = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0]; // IPv4, DF, TTL 64, TCP
        f[2..4].copy_from_slice(&total.to_be_bytes()); // total length
        f.extend(s.ip().octets()); // source address
        f.extend(d.ip().octets()); // destination address
        f.extend(s.port().to_be_bytes()); // source port
        f.extend(d.port().to_be_bytes()); // destination port
        f.extend(seq.to_be_bytes()); // sequence number
        f.extend(0u32.to_be_bytes()); // acknowledgment number
        let mut fl = 0u8;
        for c in flags.chars() {
            fl |= match c {
                'F' => 0x01,
                'S' => 0x02,
                'R' => 0x04,
                'A' => 0x10,
                _ => 0,
            };
        }
        f.extend([0x50, fl, 0xff, 0xff, 0, 0, 0, 0]); // data offset 5, flags, window, csum, urg
        f.extend_from_slice(payload);
        Frame {
            index,
            ts: Timestamp::new(100 + index as i64, 0),
            caplen: f.len() as u32,
            origlen: f.len() as u32,
            file_offset: None,
            capture: 0,
            link: LinkType::RAW,
            data: Bytes::from(f),
        }
    }

    fn request(key: i16, ver: i16, corr: i32, cid: &str, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend(key.to_be_bytes());
        m.extend(ver.to_be_bytes());
        m.extend(corr.to_be_bytes());
        m.extend((cid.len() as i16).to_be_bytes());
        m.extend(cid.as_bytes());
        m.extend_from_slice(body);
        let mut out = (m.len() as i32).to_be_bytes().to_vec();
        out.extend(m);
        out
    }

    fn response(corr: i32, body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        out.extend(corr.to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn run(cfg: PipelineConfig, frames: &[Frame]) -> Vec<Event> {
        let mut p = Pipeline::new(cfg);
        let mut out = Vec::new();
        for f in frames {
            p.push(f.clone(), &mut out);
        }
        p.finish(&mut out);
        out
    }

    const C: &str = "10.0.0.1:50000";
    const B: &str = "10.0.0.2:9092";

    #[test]
    fn handshake_reorder_and_close() {
        let req = request(18, 3, 7, "cli", b"body");
        let resp = response(7, &[0, 0, 1, 2, 3]);
        let frames = vec![
            frame(1, C, B, 1000, "S", b""),
            frame(2, B, C, 5000, "SA", b""),
            frame(3, C, B, 1001 + 6, "A", &req[6..]), // second half first
            frame(4, C, B, 1001, "A", &req[..6]),
            frame(5, B, C, 5001, "A", &resp),
            frame(6, C, B, 1001 + req.len() as u32, "FA", b""),
            frame(7, B, C, 5001 + resp.len() as u32, "FA", b""),
        ];
        let ev = run(PipelineConfig::default(), &frames);
        assert!(matches!(
            ev[0],
            Event::StreamOpen(Opened {
                stream: 0,
                frame: 1,
                ..
            })
        ));
        let Event::Message(m) = &ev[1] else {
            panic!("{ev:?}")
        };
        assert_eq!(&m.bytes[..], &req[..]);
        assert_eq!((m.first_frame, m.last_frame), (4, 3));
        assert_eq!(m.provenance, vec![(0, 4), (6, 3)]);
        assert!(!m.resynced);
        let Event::Message(r) = &ev[2] else {
            panic!("{ev:?}")
        };
        assert_eq!(r.dir, Direction::BrokerToClient);
        assert_eq!(r.correlation_id(), Some(7));
        // One segment, one message: a slice of the frame's own buffer.
        assert_eq!(r.bytes.as_ptr(), frames[4].data[40..].as_ptr());
        // Frame 4 came after bytes beyond it: one late segment, reported
        // when the connection closes.
        assert!(matches!(
            ev[3],
            Event::Warning {
                frame: 7,
                what: Warning::Reordered {
                    stream: 0,
                    segments: 1
                },
                ..
            }
        ));
        assert!(matches!(
            ev[4],
            Event::StreamClosed {
                reason: CloseReason::Fin,
                frame: 7,
                ..
            }
        ));
        assert_eq!(ev.len(), 5);
    }

    /// Several messages cut in one drain come out in stream order, each
    /// counted once, and the responses pair with the requests drained before
    /// them: none is left pending (a later lone response is still framed).
    #[test]
    fn pipelined_messages_drained_together() {
        let reqs: Vec<u8> = (1..=3).flat_map(|c| request(3, 1, c, "cli", b"")).collect();
        let resps: Vec<u8> = (1..=3).flat_map(|c| response(c, &[0; 6])).collect();
        let frames = vec![
            frame(1, C, B, 1000, "S", b""),
            frame(2, B, C, 5000, "SA", b""),
            frame(3, C, B, 1001, "A", &reqs),
            frame(4, B, C, 5001, "A", &resps),
        ];
        let mut p = Pipeline::new(PipelineConfig::default());
        let mut ev = Vec::new();
        for f in &frames {
            p.push(f.clone(), &mut ev);
        }
        let ids: Vec<(bool, Option<i32>)> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some((m.is_request(), m.correlation_id())),
                _ => None,
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                (true, Some(1)),
                (true, Some(2)),
                (true, Some(3)),
                (false, Some(1)),
                (false, Some(2)),
                (false, Some(3)),
            ]
        );
        let s = p.stats();
        assert_eq!((s.requests, s.responses, s.partial), (3, 3, 0));
        let st = p.streams.get(&0).expect("the stream");
        assert_eq!(st.requests.pending_len(), 0, "{:?}", st.requests);
    }

    #[test]
    fn mid_stream_start_resyncs_and_lost_segment_is_a_gap() {
        let a = request(3, 1, 1, "cli", &[9; 50]);
        // A body that decodes: one topic name, 24 bytes (30 bytes in all).
        let topics = [&[0, 0, 0, 1, 0, 24][..], b"abcdefghijklmnopqrstuvwx"].concat();
        let b = request(3, 1, 2, "cli", &topics);
        let c = request(3, 1, 3, "cli", &[7; 10]);
        let frames = vec![
            frame(1, C, B, 100, "A", &a[20..]), // capture starts inside `a`
            frame(2, C, B, 100 + (a.len() - 20) as u32, "A", &b),
            // `c`'s first 5 bytes are lost; the rest arrives, then the connection resets.
            frame(
                3,
                C,
                B,
                100 + (a.len() - 20 + b.len() + 5) as u32,
                "A",
                &c[5..],
            ),
            frame(
                4,
                C,
                B,
                100 + (a.len() - 20 + b.len() + c.len()) as u32,
                "A",
                &b,
            ),
            frame(5, C, B, 0, "R", b""),
        ];
        let ev = run(PipelineConfig::default(), &frames);
        let kinds: Vec<String> = ev
            .iter()
            .map(|e| match e {
                Event::StreamOpen(_) => "open".into(),
                Event::Resync { skipped, frame, .. } => format!("resync {skipped} @{frame}"),
                Event::Message(m) => {
                    format!("msg {} @{}", m.correlation_id().unwrap(), m.last_frame)
                }
                Event::Gap { len, frame, .. } => format!("gap {len} @{frame}"),
                Event::Discarded { bytes, .. } => format!("discarded {bytes}"),
                Event::StreamClosed { reason, .. } => format!("closed {reason:?}"),
                e => format!("{e:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                "open".to_string(),
                format!("resync {} @2", a.len() - 20),
                "msg 2 @2".into(),
                "gap 5 @3".into(),
                format!("resync {} @4", c.len() - 5),
                "msg 2 @4".into(),
                "closed Reset".into(),
            ]
        );
    }

    /// The default: the listed port by port, Kafka elsewhere by shape, and
    /// nothing claimed of the rest; a capture without Kafka says so, with
    /// its busiest ports.
    #[test]
    fn detect_takes_listed_ports_and_finds_kafka_elsewhere() {
        let req = request(18, 0, 1, "probe", b"");
        let resp = response(1, &[0, 0, 0, 0, 0, 0]);
        let http = (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".as_slice(),
            b"HTTP/1.1 200 OK\r\n\r\n".as_slice(),
        );
        let (web, www) = ("10.0.0.3:55555", "10.0.0.4:80");
        let frames = vec![
            // Kafka on the listed port, and on 19092.
            frame(1, "10.0.0.1:40000", "10.0.0.2:9092", 10, "A", &req),
            frame(2, "10.0.0.2:9092", "10.0.0.1:40000", 20, "A", &resp),
            frame(3, "10.0.0.1:40001", "10.0.0.2:19092", 10, "A", &req),
            frame(4, "10.0.0.2:19092", "10.0.0.1:40001", 20, "A", &resp),
            frame(5, web, www, 1, "A", http.0),
            frame(6, www, web, 1, "A", http.1),
        ];
        let ev = run(PipelineConfig::with_ports(Ports::default()), &frames);
        let brokers: Vec<u16> = (ev.iter())
            .filter_map(|e| match e {
                Event::StreamOpen(o) => Some(o.broker.port()),
                _ => None,
            })
            .collect();
        assert_eq!(brokers, vec![9092, 19092]);
        let messages = ev.iter().filter(|e| matches!(e, Event::Message(_))).count();
        assert_eq!(messages, 4);
        assert!(
            !ev.iter().any(|e| matches!(e, Event::Warning { .. })),
            "{ev:?}"
        );

        // Only the web connection: no Kafka, and its port named.
        let ev = run(PipelineConfig::with_ports(Ports::default()), &frames[4..]);
        let said: Vec<String> = (ev.iter())
            .filter_map(|e| match e {
                Event::Warning { what, .. } => Some(what.to_string()),
                _ => None,
            })
            .collect();
        let bytes = http.0.len() + http.1.len();
        assert_eq!(
            said,
            vec![format!(
                "no Kafka found in 2 TCP segments; busiest ports: 80 ({bytes} bytes); if Kafka runs there: --ports 80"
            )]
        );
        // Ports given as a list: 19092 is left out, and counted.
        let ev = run(
            PipelineConfig::with_ports(Ports::List(vec![9092])),
            &frames[2..4],
        );
        let said = ev.iter().find_map(|e| match e {
            Event::Warning {
                what: Warning::NoKafka { busiest, .. },
                ..
            } => Some(busiest.clone()),
            _ => None,
        });
        assert_eq!(said, Some(vec![(19092, (req.len() + resp.len()) as u64)]));
    }

    #[test]
    fn any_ports_detects_kafka_and_its_client() {
        // The broker listens on a port above the client's: shape, not port order, decides.
        let (c, b) = ("10.0.0.1:4000", "10.0.0.2:60000");
        let req = request(18, 0, 1, "probe", b"");
        let frames = vec![
            frame(1, c, b, 10, "A", &req),
            frame(2, b, c, 20, "A", &response(1, &[0, 0, 0, 0, 0, 0])),
            // Not Kafka: text on another connection.
            frame(
                3,
                "10.0.0.3:5555",
                "10.0.0.4:80",
                1,
                "A",
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            ),
            frame(
                4,
                "10.0.0.4:80",
                "10.0.0.3:5555",
                1,
                "A",
                b"HTTP/1.1 200 OK\r\n\r\n",
            ),
        ];
        let ev = run(PipelineConfig::with_ports(Ports::Any), &frames);
        let opens: Vec<_> = ev
            .iter()
            .filter_map(|e| match e {
                Event::StreamOpen(o) => Some((o.client, o.broker)),
                _ => None,
            })
            .collect();
        assert_eq!(opens, vec![(c.parse().unwrap(), b.parse().unwrap())]);
        let msgs: Vec<_> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some((m.dir, m.correlation_id())),
                _ => None,
            })
            .collect();
        assert_eq!(
            msgs,
            vec![
                (Direction::ClientToBroker, Some(1)),
                (Direction::BrokerToClient, Some(1))
            ]
        );
    }

    #[test]
    fn warnings_and_counters() {
        let mut frag = frame(1, C, B, 0, "A", b"x");
        let mut d = frag.data.to_vec();
        d[6] = 0x20; // more fragments
        frag.data = Bytes::from(d);
        let mut udp = frame(2, C, B, 0, "A", b"x");
        let mut d = udp.data.to_vec();
        d[9] = 17;
        udp.data = Bytes::from(d);
        let mut odd = frame(3, C, B, 0, "A", b"x");
        odd.link = LinkType(147);
        let mut p = Pipeline::new(PipelineConfig::default());
        let mut out = Vec::new();
        for f in [&frag, &udp, &odd, &odd] {
            p.push(f.clone(), &mut out);
        }
        assert!(
            matches!(
                &out[..],
                [
                    Event::Warning {
                        frame: 1,
                        what: Warning::Packet(Skip::Fragmented),
                        ..
                    },
                    Event::Warning {
                        frame: 3,
                        what: Warning::Packet(Skip::UnsupportedLink(_)),
                        ..
                    },
                ]
            ),
            "{out:?}"
        );
        let s = p.stats();
        assert_eq!(
            (s.fragmented, s.not_tcp, s.unsupported_link, s.frames),
            (1, 1, 2, 4)
        );
    }

    #[test]
    fn snaplen_cut_request_is_partial_and_next_is_whole() {
        let a = request(0, 3, 1, "p", &[1; 200]);
        let b = request(3, 1, 2, "cli", b"");
        let mut cut = frame(2, C, B, 1001, "A", &a);
        let keep = cut.data.len() - 150;
        cut.data = cut.data.slice(..keep);
        cut.caplen = keep as u32;
        let frames = vec![
            frame(1, C, B, 1000, "S", b""),
            cut,
            frame(3, C, B, 1001 + a.len() as u32, "A", &b),
        ];
        let ev = run(PipelineConfig::default(), &frames);
        let Some(Event::Partial(p)) = ev.iter().find(|e| matches!(e, Event::Partial(_))) else {
            panic!("{ev:?}")
        };
        assert_eq!(p.bytes.len(), a.len() - 150);
        assert_eq!(p.missing, 150);
        assert_eq!(p.request_key_version(), Some((0, 3)));
        assert!(ev.iter().any(|e| matches!(
            e,
            Event::Gap {
                len: 150,
                reason: GapReason::Snaplen,
                ..
            }
        )));
        let whole: Vec<_> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some(m.correlation_id()),
                _ => None,
            })
            .collect();
        assert_eq!(whole, vec![Some(2)]);
    }
}
