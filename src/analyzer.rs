//! The model the views read: every Kafka message of a capture, decoded and paired.
//!
//! Place in the data path: frames → [`Pipeline`] (reassembly, framing) →
//! decode → [`Pairer`] → **[`MessageRecord`]s** → print, stats, TUI. The
//! [`Analyzer`] is sans-IO: it is fed frames and appends records to a vector,
//! so files, live capture, tests and benchmarks drive the same code.
//!
//! Invariants: records come out in capture order (the order in which messages
//! were completed); each carries the facts of the JSONL contract in
//! DESIGN.md; a response is decoded with its paired request's api key and
//! version, or — unpaired — with the one schema that decodes its whole body,
//! marked as inferred. Memory follows the open connections and the requests in
//! flight, not the capture's length.

use crate::vocab::{Direction, Timestamp};
use rustc_hash::FxHashMap;
use std::net::SocketAddr;

use crate::capture::Frame;
use crate::flow::Rtt;
use crate::kafka::decode::Kind;
use crate::kafka::decode::{summarize_request, summarize_response, Summary, Topics};
use crate::kafka::framing::{RawMessage, Twin};
use crate::kafka::schema::{self, ApiKey, MessageKind};
use crate::kafka::tree::{Node, Value};
use crate::kafka::{decode_request, decode_response, DecodeOptions, DecodeWarning, Decoded};
use crate::pairing::{FetchAsk, Pairer, PendingRequest};
use crate::pipeline::{Event, Pipeline, PipelineConfig, PipelineStats};
use crate::stats::facts;
use crate::topics::{TopicNames, TEACHERS};

/// Settings of an analysis.
#[derive(Clone, Debug)]
pub struct AnalyzerConfig {
    /// Reassembly and framing settings (ports, bounds).
    pub pipeline: PipelineConfig,
    /// Decoding settings; `records: false` skips record sets for summaries.
    pub decode: DecodeOptions,
    /// Keep each message's decoded tree in its record (for `print -V`).
    pub keep_trees: bool,
    /// With `keep_trees`: which messages need their full tree. A message that
    /// decodes cleanly and for which this says `false` is read by the summary
    /// scan and keeps a bare tree (root only; header, topics and topic ids
    /// set). `None`: every message gets its full tree. `Stats` sets it.
    pub tree_filter: Option<TreeFilter>,
    /// Try to infer the api of responses whose request was not captured.
    pub infer_unpaired: bool,
    /// Fill [`MessageInfo::topics`]. `Stats`, which reads the topics of the
    /// kept tree instead, clears it: a list fewer to build per message.
    pub info_topics: bool,
    /// Note the topic names of responses read by the summary scan in their
    /// [`Decoded::topics`] (and so in [`MessageInfo::topics`]). `Stats`,
    /// which reads the topics of requests only, clears it
    /// ([`DecodeOptions::summary_topics`]).
    pub response_topics: bool,
}

impl Default for AnalyzerConfig {
    fn default() -> Self {
        AnalyzerConfig {
            pipeline: PipelineConfig::default(),
            decode: DecodeOptions::default(),
            keep_trees: false,
            tree_filter: None,
            infer_unpaired: true,
            info_topics: true,
            response_topics: true,
        }
    }
}

/// Whether a message needs its full tree: given its kind, api key, api version
/// and the facts of its summary scan.
pub type TreeFilter = fn(Kind, i16, i16, &Summary) -> bool;

/// The facts about one Kafka message (the JSONL contract's keys).
#[derive(Clone, Debug, PartialEq)]
pub struct MessageInfo {
    /// 0-based position in capture order.
    pub index: u64,
    /// Frame that completed the message.
    pub frame: u64,
    /// Frame that carried its first byte.
    pub first_frame: u64,
    /// Time of `frame`.
    pub ts: Timestamp,
    /// Time of `first_frame`.
    pub first_ts: Timestamp,
    /// Connection index, 0-based, in order of first appearance.
    pub stream: u64,
    /// Client endpoint.
    pub client: SocketAddr,
    /// Broker endpoint.
    pub broker: SocketAddr,
    /// Request or response.
    pub kind: Kind,
    /// Api key (for responses: the paired or inferred request's).
    pub api_key: Option<ApiKey>,
    /// Api version (for responses: the paired or inferred request's).
    pub api_version: Option<i16>,
    /// Correlation id.
    pub correlation_id: Option<i32>,
    /// The size field: bytes after the 4-byte prefix.
    pub length: i32,
    /// The request's client id.
    pub client_id: Option<String>,
    /// Paired with its request / response.
    pub paired: bool,
    /// Index of the message it is paired with.
    pub peer: Option<u64>,
    /// For responses: the api was inferred from the body (request not captured).
    pub inferred: bool,
    /// For requests: a response is expected (false for Produce with acks=0).
    pub expects_response: bool,
    /// For paired responses: ts(first_frame of the response) − ts(frame of the request).
    pub latency_ns: Option<u64>,
    /// For paired responses: the part of `latency_ns` before the previous
    /// response on the connection had finished (head-of-line wait; Kafka
    /// answers a connection's requests in order).
    pub hol_wait_ns: Option<u64>,
    /// The connection's network round trip as known when the message was
    /// analyzed ([`crate::flow`]: from the handshake, else from data/ACK
    /// pairs), so that broker time ≈ service time − RTT can be read off.
    pub rtt: Option<Rtt>,
    /// For Fetch and ShareFetch responses: what the request asked the
    /// broker to wait for, and the record bytes the response carries.
    pub fetch: Option<FetchWait>,
    /// The response's ThrottleTimeMs, when its schema has one.
    pub throttle_time_ms: Option<i32>,
    /// Every non-zero error code anywhere in a response body.
    pub error_codes: Vec<i16>,
    /// `None` when every byte decoded, else the reason with its offset.
    pub decode_error: Option<String>,
    /// Something unusual in a message that decoded (bytes after its body).
    pub decode_warning: Option<DecodeWarning>,
    /// The first message after a resynchronisation.
    pub resynced: bool,
    /// Bytes skipped just before it.
    pub skipped_before: u64,
    /// Topics the message names, by name or by a topic id learned from the capture.
    pub topics: Topics,
    /// Which of the captures read together it came from (0 for the first or
    /// only one; [`crate::capture::Frame::capture`]).
    pub capture: u16,
    /// The same message seen at another capture point, the connection
    /// being read from two captures ([`crate::twins`]).
    pub also: Option<Box<Also>>,
}

/// A message as another capture point saw it ([`MessageInfo::also`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Also {
    /// The capture.
    pub capture: u16,
    /// Frame that completed the message there.
    pub frame: u64,
    /// Frame that carried its first byte there.
    pub first_frame: u64,
    /// Time of `frame`, on the first capture's clock.
    pub ts: Timestamp,
    /// Time of `first_frame`, on the first capture's clock.
    pub first_ts: Timestamp,
    /// For a paired response whose request that capture saw too: the
    /// latency as it saw it (first byte of the response less the
    /// request's last byte, both its own times).
    pub latency_ns: Option<u64>,
}

/// A Fetch or ShareFetch exchange's wait: asked and answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FetchWait {
    /// The request's `MaxWaitMs` and `MinBytes`.
    pub asked: FetchAsk,
    /// Bytes of the response's record sets (without their length prefixes).
    pub record_bytes: u64,
}

/// How a Fetch exchange ended ([`MessageInfo::fetch_outcome`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FetchOutcome {
    /// Record bytes came back.
    Data,
    /// Nothing came back after the broker held the request for (90 % of)
    /// its `MaxWaitMs`: a long-poll.
    WaitedOut,
    /// Nothing came back, well before `MaxWaitMs` (an error, a fetch
    /// session update, `MinBytes` 0).
    EmptyEarly,
}

/// A Fetch whose service time reached this share of its `MaxWaitMs`, with no
/// records returned, waited the time out.
pub const LONG_POLL_SHARE: f64 = 0.9;

impl MessageInfo {
    /// The API name (`Produce`), when the api key is known.
    pub fn api_name(&self) -> Option<&'static str> {
        self.api_key.and_then(ApiKey::name)
    }

    /// Latency in milliseconds.
    pub fn latency_ms(&self) -> Option<f64> {
        self.latency_ns.map(|n| n as f64 / 1e6)
    }

    /// Service time: the latency less the head-of-line wait.
    pub fn service_ns(&self) -> Option<u64> {
        let l = self.latency_ns?;
        Some(l.saturating_sub(self.hol_wait_ns.unwrap_or(0)))
    }

    /// How a paired Fetch or ShareFetch exchange ended.
    pub fn fetch_outcome(&self) -> Option<FetchOutcome> {
        let f = self.fetch?;
        let service_ms = self.service_ns()? as f64 / 1e6;
        Some(if f.record_bytes > 0 {
            FetchOutcome::Data
        } else if f.asked.max_wait_ms > 0
            && service_ms >= LONG_POLL_SHARE * f64::from(f.asked.max_wait_ms)
        {
            FetchOutcome::WaitedOut
        } else {
            FetchOutcome::EmptyEarly
        })
    }

    /// A Fetch that waited out its `MaxWaitMs` with nothing to return.
    pub fn long_poll(&self) -> bool {
        self.fetch_outcome() == Some(FetchOutcome::WaitedOut)
    }
}

/// What an [`Analyzer`] holds at one moment ([`Analyzer::sizes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnalyzerSizes {
    /// TCP connections the reassembler tracks.
    pub connections: usize,
    /// Out-of-order bytes the reassembler buffers.
    pub buffered_bytes: usize,
    /// Connections with framing state.
    pub framed_streams: usize,
    /// Connections the analyzer keeps facts about (endpoints, client id, SASL state).
    pub streams: usize,
    /// Requests waiting for their response.
    pub pending_requests: usize,
    /// Topic ids whose names were learned (bounded by `TopicNames`).
    pub topics: usize,
}

/// One message: its facts, its bytes and (when asked for) its tree.
#[derive(Clone, Debug)]
pub struct MessageRecord {
    /// The facts.
    pub info: MessageInfo,
    /// The message as it crossed the wire, with provenance.
    pub raw: RawMessage,
    /// The decoded tree, when `keep_trees` is set.
    pub decoded: Option<Decoded>,
}

/// Something the analysis tells besides messages.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// A pipeline event worth reporting (gap, resync, warning, discarded
    /// bytes, a connection's round trip, its close).
    Stream(Event),
    /// What a TLS connection showed ([`Event::Tls`], with the
    /// connection's endpoints).
    Tls {
        /// Connection.
        stream: u64,
        /// Client endpoint.
        client: SocketAddr,
        /// Broker endpoint.
        broker: SocketAddr,
        /// The capture it was seen in ([`MessageInfo::capture`]).
        capture: u16,
        /// Frame that showed it.
        frame: u64,
        /// Its time.
        ts: Timestamp,
        /// What.
        what: crate::tls::conn::TlsEvent,
    },
    /// A request that never got its response (connection closed or capture ended).
    Unanswered {
        /// Connection.
        stream: u64,
        /// The request.
        request: PendingRequest,
    },
}

/// What the analyzer appends to its output.
#[derive(Clone, Debug)]
pub enum Output {
    /// A decoded message.
    Message(Box<MessageRecord>),
    /// A notice (boxed, as the message: an output is moved from stage to
    /// stage, in 16 bytes rather than the 208 of a notice held inline).
    Notice(Box<Notice>),
}

impl Output {
    /// The output of notice `n`.
    pub fn notice(n: Notice) -> Output {
        Output::Notice(Box::new(n))
    }

    /// The notice, if this is one.
    pub fn as_notice(&self) -> Option<&Notice> {
        match self {
            Output::Notice(n) => Some(n),
            Output::Message(_) => None,
        }
    }
}

struct StreamInfo {
    client: SocketAddr,
    broker: SocketAddr,
    /// The capture it was seen in.
    capture: u16,
    sasl: SaslState,
    /// When the last response on the connection finished (its last frame).
    response_end: Option<Timestamp>,
    /// The connection's round trip so far.
    rtt: Option<Rtt>,
}

/// After a SaslHandshake v0, SASL tokens travel as bare size-prefixed blobs
/// without a Kafka header until authentication ends (KIP-43); v1+ wraps them in
/// SaslAuthenticate instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SaslState {
    /// Ordinary Kafka messages.
    Kafka,
    /// A SaslHandshake v0 request with this correlation id waits for its response.
    Handshake(i32),
    /// Raw SASL tokens flow until the next request that decodes as Kafka.
    RawTokens,
}

/// The summary scan of messages (`summarize_request` and
/// `summarize_response` with an analyzer's options), made where the
/// messages are framed: a reader thread that runs the [`Pipeline`] scans
/// messages while the analyzer is behind (`print`'s `Handover`), and the
/// analyzer's thread, the busiest of `stats`, takes the result
/// ([`Event::ScannedRequest`], [`Event::ScannedResponse`]) instead of
/// scanning. A request's scan needs only its bytes; a response's needs its
/// request's api and version, which the analyzer knows only once it pairs
/// them: the scanner pairs responses with the requests it noted, by
/// connection and correlation id ([`AheadScanner::pair`]), scans each as
/// the answer to its request's api and version, and the analyzer takes the
/// scan only when it paired the response with a request of those (else
/// it scans the response itself). Which thread scans a message changes
/// nothing else.
#[derive(Clone, Debug)]
pub struct AheadScanner {
    opts: DecodeOptions,
    response_opts: DecodeOptions,
    /// Requests noted ([`AheadScanner::pair`]) and not answered yet:
    /// (connection, correlation id) → (api key, api version).
    asked: FxHashMap<(u64, i32), (i16, i16)>,
}

/// A response [`AheadScanner::pair`] paired: its index among the events,
/// and its request's api key and version.
pub type Answer = (usize, i16, i16);

/// Most requests an [`AheadScanner`] remembers for pairing responses
/// (past it, it forgets them all: a response not paired is scanned by the
/// analyzer).
const SCANNER_ASKED: usize = 1 << 16;

impl AheadScanner {
    /// Whether `ev` is a complete request not scanned yet.
    pub fn wants(ev: &Event) -> bool {
        matches!(ev, Event::Message(raw) if raw.dir == Direction::ClientToBroker)
    }

    /// Scans the first request of `evs` from `from` on that is not scanned
    /// yet; returns where the next search starts (`None`: none was left).
    pub fn scan_next(&self, evs: &mut [Event], from: usize) -> Option<usize> {
        let rest = evs.get_mut(from..)?;
        let i = rest.iter().position(AheadScanner::wants)?;
        self.scan(rest.get_mut(i)?);
        Some(from + i + 1)
    }

    /// Scans `ev` when it is a complete request not scanned yet; when the
    /// scan succeeds, `ev` becomes an [`Event::ScannedRequest`] with it.
    pub fn scan(&self, ev: &mut Event) {
        scanned(ev, Direction::ClientToBroker, |raw| {
            let sum = summarize_request(&raw.bytes, &self.opts)?;
            Some(|raw| Event::ScannedRequest(raw, Box::new(sum)))
        });
    }

    /// Notes the requests of `evs` and pairs its responses with the
    /// requests noted by correlation id, on their connection: appends
    /// (index in `evs`, api key, api version) of each response paired to
    /// `answers`. The analyzer pairs them itself; this is a guess it checks.
    pub fn pair(&mut self, evs: &[Event], answers: &mut Vec<Answer>) {
        for (i, ev) in evs.iter().enumerate() {
            let (Event::Message(raw) | Event::ScannedRequest(raw, _)) = ev else {
                continue;
            };
            let Some(c) = raw.correlation_id() else {
                continue;
            };
            match raw.request_key_version() {
                Some(kv) => {
                    if self.asked.len() >= SCANNER_ASKED {
                        self.asked.clear();
                    }
                    self.asked.insert((raw.stream, c), kv);
                }
                None => {
                    if let Some((k, v)) = self.asked.remove(&(raw.stream, c)) {
                        answers.push((i, k, v));
                    }
                }
            }
        }
    }

    /// Scans `ev` when it is a complete response not scanned yet, as the
    /// answer to a request of (`api_key`, `api_version`); when the scan
    /// succeeds, `ev` becomes an [`Event::ScannedResponse`] with it.
    pub fn scan_response(&self, ev: &mut Event, api_key: i16, api_version: i16) {
        scanned(ev, Direction::BrokerToClient, |raw| {
            let sum = summarize_response(&raw.bytes, api_key, api_version, &self.response_opts)?;
            Some(|raw| Event::ScannedResponse(raw, Box::new((api_key, api_version, sum))))
        });
    }
}

/// Replaces `ev`, a complete message in direction `dir` not scanned yet,
/// with the event `scan` makes of it (when it makes one: the scan
/// succeeded).
fn scanned<E: FnOnce(RawMessage) -> Event>(
    ev: &mut Event,
    dir: Direction,
    scan: impl FnOnce(&RawMessage) -> Option<E>,
) {
    let Event::Message(raw) = ev else {
        return;
    };
    if raw.dir != dir {
        return;
    }
    let Some(make) = scan(raw) else {
        return;
    };
    // The message moves into the new event; what stands in its place for
    // that moment is never seen.
    let placeholder = Event::Discarded {
        stream: raw.stream,
        dir: raw.dir,
        bytes: 0,
        frame: raw.last_frame,
    };
    if let Event::Message(raw) = std::mem::replace(ev, placeholder) {
        *ev = make(raw);
    }
}

/// A message's scan made ahead ([`AheadScanner`]), as it came.
enum Ahead {
    None,
    Request(Box<Summary>),
    Response(Box<(i16, i16, Summary)>),
}

/// Frames in, decoded and paired messages out: a [`Pipeline`] feeding a
/// [`MessageAnalyzer`].
pub struct Analyzer {
    pipeline: Pipeline,
    messages: MessageAnalyzer,
    /// The pipeline's events of one frame (reused).
    events: Vec<Event>,
}

impl Analyzer {
    /// An analyzer with these settings.
    pub fn new(cfg: AnalyzerConfig) -> Analyzer {
        Analyzer {
            pipeline: Pipeline::new(cfg.pipeline.clone()),
            messages: MessageAnalyzer::new(cfg),
            events: Vec::new(),
        }
    }

    /// Feeds one frame.
    pub fn push(&mut self, frame: &Frame, out: &mut Vec<Output>) {
        self.pipeline.push(frame.clone(), &mut self.events);
        for ev in self.events.drain(..) {
            self.messages.push(ev, out);
        }
    }

    /// End of input: flushes every connection; unanswered requests are reported.
    pub fn finish(&mut self, out: &mut Vec<Output>) {
        self.pipeline.finish(&mut self.events);
        for ev in self.events.drain(..) {
            self.messages.push(ev, out);
        }
        self.messages.finish(out);
    }

    /// The analysis of the framed messages: topic names learned, scanner.
    pub fn messages(&self) -> &MessageAnalyzer {
        &self.messages
    }

    /// Reassembly and framing counters.
    pub fn pipeline_stats(&self) -> PipelineStats {
        self.pipeline.stats()
    }

    /// How much the analyzer holds right now: everything here must follow the
    /// open connections and in-flight requests, never the length of the capture
    /// (checked by the soak test).
    pub fn sizes(&self) -> AnalyzerSizes {
        let (connections, buffered_bytes, framed_streams) = self.pipeline.sizes();
        AnalyzerSizes {
            connections,
            buffered_bytes,
            framed_streams,
            streams: self.messages.streams.len(),
            pending_requests: self.messages.pairer.pending(),
            topics: self.messages.topics.len(),
        }
    }
}

/// Pipeline events in, decoded and paired messages out: the analysis of
/// messages framed by a [`Pipeline`] (its own in an [`Analyzer`], or one on
/// another thread, see `print`).
pub struct MessageAnalyzer {
    cfg: AnalyzerConfig,
    pairer: Pairer,
    streams: FxHashMap<u64, StreamInfo>,
    next_index: u64,
    topics: TopicNames,
    /// Options of the summary scan (record sets off).
    scan_opts: DecodeOptions,
    /// [`MessageAnalyzer::scan_opts`] for responses
    /// ([`AnalyzerConfig::response_topics`]).
    response_scan_opts: DecodeOptions,
    /// A shard of a sharded analysis ([`MessageAnalyzer::shard`]): topics
    /// are left to the [`crate::shard::Merge`], which sees every shard's
    /// messages in order.
    shard: bool,
}

impl MessageAnalyzer {
    /// An analyzer with these settings.
    pub fn new(cfg: AnalyzerConfig) -> MessageAnalyzer {
        // Record sets counted from their batch headers: one table of
        // remembered batch sizes for this analysis.
        let batch_sizes = cfg
            .decode
            .records_headers_only
            .then(|| std::sync::Arc::new(crate::kafka::records::BatchSizes::new()));
        let scan_opts = DecodeOptions {
            records: false,
            batch_sizes,
            ..cfg.decode.clone()
        };
        MessageAnalyzer {
            response_scan_opts: DecodeOptions {
                summary_topics: cfg.response_topics && scan_opts.summary_topics,
                ..scan_opts.clone()
            },
            scan_opts,
            pairer: Pairer::new(cfg.pipeline.max_pending_per_stream),
            cfg,
            streams: FxHashMap::default(),
            next_index: 0,
            topics: TopicNames::default(),
            shard: false,
        }
    }

    /// An analyzer of one shard of the connections (see [`crate::shard`]):
    /// this one's settings and table of batch sizes, nothing it has seen.
    /// Its messages take the numbers the [`crate::shard::Router`] gives
    /// them ([`MessageAnalyzer::push_numbered`]); their topics are named,
    /// and topic names learned, by the [`crate::shard::Merge`] (topic ids
    /// are named across connections, in capture order), and until then
    /// each message keeps its decode.
    pub fn shard(&self) -> MessageAnalyzer {
        MessageAnalyzer {
            // The batch sizes remembered are shared with this one.
            scan_opts: self.scan_opts.clone(),
            response_scan_opts: self.response_scan_opts.clone(),
            shard: true,
            ..MessageAnalyzer::new(self.cfg.clone())
        }
    }

    /// [`MessageAnalyzer::push`] of an event whose message, if it makes
    /// one, is numbered `index` (the [`crate::shard::Router`]'s numbering,
    /// the one a single analyzer of every connection would give).
    pub fn push_numbered(&mut self, index: u64, ev: Event, out: &mut Vec<Output>) {
        self.next_index = index;
        self.push(ev, out);
    }

    /// A scanner that makes, on another thread, the summary scan this
    /// analyzer makes of every message (see [`AheadScanner`]); `None` when
    /// this analyzer does not scan messages (it builds their trees).
    pub fn ahead_scanner(&self) -> Option<AheadScanner> {
        self.scan_mode().0.then(|| AheadScanner {
            opts: self.scan_opts.clone(),
            response_opts: self.response_scan_opts.clone(),
            asked: Default::default(),
        })
    }

    /// Whether clean messages are read by the summary scan, and the filter
    /// that sends some of them to their full tree: without trees to keep,
    /// every clean message is scanned; with a filter, trees are kept only
    /// where it wants them and the others are scanned.
    fn scan_mode(&self) -> (bool, Option<TreeFilter>) {
        let lean = !self.cfg.keep_trees && !self.cfg.decode.records;
        let filter = self.cfg.tree_filter.filter(|_| self.cfg.keep_trees);
        (lean || filter.is_some(), filter)
    }

    /// The analysis' settings.
    pub fn config(&self) -> &AnalyzerConfig {
        &self.cfg
    }

    /// Topic names learned so far from the capture.
    pub fn topic_names(&self) -> &TopicNames {
        &self.topics
    }

    /// End of input, after the pipeline's own `finish` events: every
    /// connection closes; unanswered requests are reported.
    pub fn finish(&mut self, out: &mut Vec<Output>) {
        let mut streams: Vec<u64> = self.streams.keys().copied().collect();
        streams.sort_unstable();
        for s in streams {
            self.close(s, out);
        }
    }

    fn close(&mut self, stream: u64, out: &mut Vec<Output>) {
        self.streams.remove(&stream);
        for request in self.pairer.close(stream) {
            out.push(Output::notice(Notice::Unanswered { stream, request }));
        }
    }

    /// Feeds one pipeline event, in the order the pipeline made them.
    pub fn push(&mut self, ev: Event, out: &mut Vec<Output>) {
        match ev {
            Event::StreamOpen(o) => {
                let (client, broker) = (o.client, o.broker);
                let sasl = SaslState::Kafka;
                self.streams.insert(
                    o.stream,
                    StreamInfo {
                        client,
                        broker,
                        capture: o.capture,
                        sasl,
                        response_end: None,
                        rtt: None,
                    },
                );
            }
            Event::Rtt { stream, rtt, .. } => {
                if let Some(st) = self.streams.get_mut(&stream) {
                    st.rtt = Some(rtt);
                }
                out.push(Output::notice(Notice::Stream(ev)));
            }
            Event::Message(m) => self.message(m, Ahead::None, out),
            Event::ScannedRequest(m, s) => self.message(m, Ahead::Request(s), out),
            Event::ScannedResponse(m, s) => self.message(m, Ahead::Response(s), out),
            Event::StreamClosed { stream, .. } => {
                out.push(Output::notice(Notice::Stream(ev)));
                self.close(stream, out);
            }
            Event::Tls {
                stream,
                frame,
                ts,
                what,
            } => {
                if let Some(st) = self.streams.get(&stream) {
                    out.push(Output::notice(Notice::Tls {
                        stream,
                        client: st.client,
                        broker: st.broker,
                        capture: st.capture,
                        frame,
                        ts,
                        what,
                    }));
                }
            }
            other => out.push(Output::notice(Notice::Stream(other))),
        }
    }

    /// A message, with its summary when it was scanned ahead.
    fn message(&mut self, raw: RawMessage, scanned: Ahead, out: &mut Vec<Output>) {
        let Some(st) = self.streams.get_mut(&raw.stream) else {
            return;
        };
        let (client, broker, sasl, rtt) = (st.client, st.broker, st.sasl, st.rtt);
        let capture = st.capture;
        // When the connection's previous response finished (for a response).
        let previous_end = match raw.dir {
            Direction::BrokerToClient => st.response_end.replace(raw.last_ts),
            Direction::ClientToBroker => None,
        };
        let index = self.next_index;
        self.next_index += 1;
        let scanned_id = match &scanned {
            Ahead::Request(s) => Some(s.correlation_id),
            Ahead::Response(s) => Some(s.2.correlation_id),
            Ahead::None => None,
        };
        let mut rec = record(index, raw, (client, broker), scanned_id);
        rec.info.capture = match rec.raw.twin.as_deref() {
            Some(Twin::Only(c)) => *c,
            _ => capture,
        };
        rec.info.rtt = rtt;
        let MessageRecord {
            info,
            raw,
            decoded: slot,
        } = &mut *rec;
        let mut facts: Option<LeanFacts> = None;
        let decoded = match raw.dir {
            Direction::ClientToBroker => {
                let scanned = match scanned {
                    Ahead::Request(s) => Some(s),
                    _ => None,
                };
                self.request(info, raw, scanned, sasl, &mut facts, out, slot)
            }
            Direction::BrokerToClient => {
                let scanned = match scanned {
                    Ahead::Response(s) => Some(s),
                    _ => None,
                };
                self.response(info, raw, scanned, sasl, previous_end, &mut facts, slot)
            }
        };
        let sasl_token = self.sasl_step(raw, sasl, info, decoded, facts.as_ref());
        self.settle(info, decoded, facts, sasl_token);
        if !self.shard {
            name_topics(&mut self.topics, &self.cfg, &mut rec);
        }
        out.push(Output::Message(rec));
    }

    /// A request: read by its summary scan (made ahead when `scanned`) or
    /// decoded, and registered for pairing unless it is a raw SASL token.
    /// Its [`Decoded`] is made in `slot`, the record's (424 bytes, which a
    /// return by value would copy once more).
    #[allow(clippy::too_many_arguments)]
    fn request<'d>(
        &mut self,
        info: &mut MessageInfo,
        raw: &RawMessage,
        mut scanned: Option<Box<Summary>>,
        sasl: SaslState,
        facts: &mut Option<LeanFacts>,
        out: &mut Vec<Output>,
        slot: &'d mut Option<Decoded>,
    ) -> &'d mut Decoded {
        let (scan, filter) = self.scan_mode();
        // A scan made ahead on the reader's thread is the one this would
        // make (same bytes, same options: `AheadScanner`).
        let mut here = None;
        let summary = summary_in(scan, scanned.as_deref_mut(), &mut here, || {
            summarize_request(&raw.bytes, &self.scan_opts)
        });
        let summary = summary.filter(|s| {
            filter.is_none_or(|f| {
                let (k, v) = (s.api_key.unwrap_or(-1), s.api_version.unwrap_or(-1));
                !f(Kind::Request, k, v, s)
            })
        });
        let d = match summary {
            Some(s) => lean_decoded(Kind::Request, s, facts, slot),
            None => slot.insert(decode_request(&raw.bytes, &self.cfg.decode)),
        };
        info.api_key = d.api_key.map(ApiKey);
        info.api_version = d.api_version;
        // `Decoded::client_id` has no reader past this point.
        info.client_id = d.client_id.take();
        info.expects_response = match facts {
            Some(f) => d.api_key.map(ApiKey) != Some(ApiKey::PRODUCE) || f.acks != Some(0),
            None => expects_response(d),
        };
        let raw_token = sasl == SaslState::RawTokens && !d.clean();
        // A request whose body is malformed still pairs: its header is enough.
        if let (false, Some(k), Some(v), Some(c)) =
            (raw_token, d.api_key, d.api_version, d.correlation_id)
        {
            let fetch = [ApiKey::FETCH, ApiKey::SHARE_FETCH].contains(&ApiKey(k));
            let pending = PendingRequest {
                index: info.index,
                api_key: ApiKey(k),
                api_version: v,
                frame: raw.last_frame,
                wait: fetch
                    .then(|| {
                        facts
                            .as_ref()
                            .map_or_else(|| fetch_ask(&d.root), |f| f.wait)
                    })
                    .flatten(),
                ts: raw.last_ts,
                also_ts: info.also.as_ref().map(|a| a.ts),
            };
            if !info.expects_response {
                // acks=0: no response is due, but pair one if the broker sends it.
                self.pairer.optional_request(raw.stream, c, pending);
            } else if let Some(old) = self.pairer.request(raw.stream, c, pending) {
                out.push(Output::notice(Notice::Unanswered {
                    stream: raw.stream,
                    request: old,
                }));
            }
        }
        d
    }

    /// A response: paired with its request and read as that request's
    /// answer, or its api inferred from the body, or only its header read;
    /// its [`Decoded`] made in `slot`, as a request's.
    #[allow(clippy::too_many_arguments)]
    fn response<'d>(
        &mut self,
        info: &mut MessageInfo,
        raw: &RawMessage,
        mut scanned: Option<Box<(i16, i16, Summary)>>,
        sasl: SaslState,
        previous_end: Option<Timestamp>,
        facts: &mut Option<LeanFacts>,
        slot: &'d mut Option<Decoded>,
    ) -> &'d mut Decoded {
        info.kind = Kind::Response;
        let req = info
            .correlation_id
            .and_then(|c| self.pairer.response(raw.stream, c));
        let Some(req) = req else {
            let inferred = (self.cfg.infer_unpaired && sasl != SaslState::RawTokens)
                .then(|| infer_response(&raw.bytes, &self.cfg.decode))
                .flatten();
            return slot.insert(match inferred {
                Some((k, v, d)) => {
                    info.api_key = Some(ApiKey(k));
                    info.api_version = Some(v);
                    info.inferred = true;
                    d
                }
                // Only the header can be read: decode it with an unknown api.
                None => decode_response(&raw.bytes, -1, 0, &self.cfg.decode),
            });
        };
        info.paired = true;
        info.peer = Some(req.index);
        info.latency_ns = Some(raw.first_ts.nanos_since(req.ts));
        if let (Some(a), Some(t)) = (info.also.as_deref_mut(), req.also_ts) {
            a.latency_ns = Some(a.first_ts.nanos_since(t));
        }
        // Kafka answers in order: the time before the previous response had
        // finished, this one waited behind it.
        info.hol_wait_ns = Some(
            previous_end
                .filter(|&e| e > req.ts)
                .map_or(0, |e| e.min(raw.first_ts).nanos_since(req.ts)),
        );
        info.fetch = req.wait.map(|asked| FetchWait {
            asked,
            record_bytes: 0,
        });
        info.api_key = Some(req.api_key);
        info.api_version = Some(req.api_version);
        let (scan, filter) = self.scan_mode();
        // Responses that teach topic names (see `TopicNames::learn`) are
        // read as trees when they carry a topic id to learn.
        let teaches = TEACHERS.contains(&req.api_key);
        let (k, v) = (req.api_key.0, req.api_version);
        // A scan made ahead as the answer to this request's api and version
        // is the one this would make (same bytes, same options).
        let mut here = None;
        let made = scanned
            .as_deref_mut()
            .filter(|s| (s.0, s.1) == (k, v))
            .map(|s| &mut s.2);
        let summary = summary_in(scan, made, &mut here, || {
            summarize_response(&raw.bytes, k, v, &self.response_scan_opts)
        });
        let summary = summary
            .filter(|s| !teaches || s.topic_ids.is_empty())
            .filter(|s| filter.is_none_or(|f| !f(Kind::Response, k, v, s)));
        match summary {
            Some(s) => lean_decoded(Kind::Response, s, facts, slot),
            None => slot.insert(decode_paired_response(&raw.bytes, k, v, &self.cfg.decode)),
        }
    }

    /// The facts of a decoded message not set yet: a response's throttle
    /// and errors, the decode error (its topics: [`name_topics`]).
    fn settle(
        &mut self,
        info: &mut MessageInfo,
        decoded: &mut Decoded,
        facts: Option<LeanFacts>,
        sasl_token: bool,
    ) {
        if info.kind == Kind::Response && !sasl_token {
            let (throttle, errors, record_bytes) = match facts {
                Some(f) => (f.throttle, f.errors, f.record_bytes),
                None => {
                    let (throttle, errors) = response_facts(&decoded.root);
                    // Walked for Fetch answers only.
                    let bytes = info.fetch.map_or(0, |_| record_bytes(&decoded.root));
                    (throttle, errors, bytes)
                }
            };
            if let Some(f) = &mut info.fetch {
                f.record_bytes = record_bytes;
            }
            info.throttle_time_ms = throttle;
            info.error_codes = errors;
            if info.api_key.is_none() {
                info.decode_error = Some("response without a captured request; api unknown".into());
            }
        }
        if !sasl_token && info.decode_error.is_none() {
            info.decode_error = decoded.error.as_ref().map(ToString::to_string);
        }
        if !sasl_token {
            info.decode_warning = decoded.warning;
        }
    }
}

/// Whether [`name_topics`] of `rec` reads or changes topic names: a
/// response that teaches them, a message with topic ids to name, a kept tree
/// with a `TopicId` to annotate. For any other, it does what it would do
/// with no name known, wherever it is made.
pub(crate) fn needs_names(cfg: &AnalyzerConfig, rec: &MessageRecord) -> bool {
    fn has_topic_id(n: &Node) -> bool {
        (matches!(n.value, Value::Uuid(_)) && n.name.ends_with("TopicId"))
            || n.children.iter().any(has_topic_id)
    }
    let Some(d) = &rec.decoded else {
        return false;
    };
    let teaches = rec.info.api_key.is_some_and(|k| TEACHERS.contains(&k));
    (rec.info.kind == Kind::Response && teaches)
        || (cfg.info_topics && !d.topic_ids.is_empty())
        || (cfg.keep_trees && has_topic_id(&d.root))
}

/// The last step of a message's analysis, made in capture order across
/// connections: topic names learned from a response, the message's topics
/// (names, and topic ids named by what was learned before), its tree
/// annotated with them, and its decode dropped unless trees are kept.
pub(crate) fn name_topics(topics: &mut TopicNames, cfg: &AnalyzerConfig, rec: &mut MessageRecord) {
    let MessageRecord {
        info,
        decoded: slot,
        ..
    } = rec;
    if let Some(decoded) = slot.as_mut() {
        if info.kind == Kind::Response {
            topics.learn(info.api_key, &decoded.root);
        }
        if cfg.info_topics {
            info.topics = if cfg.keep_trees {
                decoded.topics.clone()
            } else {
                std::mem::take(&mut decoded.topics)
            };
            for id in &decoded.topic_ids {
                if let Some(name) = topics.name(id) {
                    if !info.topics.iter().any(|t| **t == *name) {
                        info.topics.push(name.into());
                    }
                }
            }
        }
        if cfg.keep_trees {
            topics.annotate(&mut decoded.root);
        }
    }
    if !cfg.keep_trees {
        *slot = None;
    }
}

impl MessageAnalyzer {
    /// Tracks SaslHandshake v0 and turns raw SASL tokens into redacted
    /// records (`decoded` becomes the token's tree); whether the message is
    /// such a token.
    fn sasl_step(
        &mut self,
        raw: &RawMessage,
        state: SaslState,
        info: &mut MessageInfo,
        decoded: &mut Decoded,
        facts: Option<&LeanFacts>,
    ) -> bool {
        let next = match (state, info.kind) {
            (SaslState::Kafka, Kind::Request)
                if info.api_key == Some(ApiKey::SASL_HANDSHAKE)
                    && info.api_version == Some(0)
                    && decoded.clean() =>
            {
                info.correlation_id
                    .map_or(SaslState::Kafka, SaslState::Handshake)
            }
            (SaslState::Handshake(c), Kind::Response) if info.correlation_id == Some(c) => {
                let no_errors = match facts {
                    Some(f) => f.errors.is_empty(),
                    None => response_facts(&decoded.root).1.is_empty(),
                };
                if no_errors && decoded.clean() {
                    SaslState::RawTokens
                } else {
                    SaslState::Kafka
                }
            }
            (SaslState::RawTokens, Kind::Request)
                if decoded.clean() && info.api_key.and_then(ApiKey::name).is_some() =>
            {
                SaslState::Kafka
            }
            (SaslState::RawTokens, _) if info.kind == Kind::Request || !info.paired => {
                // A raw token: no Kafka header, and secret by nature.
                info.api_key = None;
                info.api_version = None;
                info.correlation_id = None;
                info.client_id = None;
                info.expects_response = false;
                info.inferred = false;
                info.decode_error = None;
                *decoded = sasl_token_tree(raw, info.kind, self.cfg.decode.show_secrets);
                return true;
            }
            (s, _) => s,
        };
        if let Some(st) = self.streams.get_mut(&raw.stream) {
            st.sasl = next;
        }
        false
    }
}

/// A message's record before it is read: the facts its bytes and their
/// place give. Made in its box at once and filled in place: it is large
/// (about 1 KB), and every move of it or of its tree was a copy.
#[inline]
pub fn new_record(
    index: u64,
    raw: RawMessage,
    client: SocketAddr,
    broker: SocketAddr,
) -> Box<MessageRecord> {
    record(index, raw, (client, broker), None)
}

/// [`new_record`] of a message a scan read whole (`scanned_id`: the
/// correlation id it read): the bytes are not read again, which on another
/// core than the scan's was a miss in the cache per message. A clean scan
/// read a size prefix that counts the bytes after it.
#[inline]
fn record(
    index: u64,
    raw: RawMessage,
    (client, broker): (SocketAddr, SocketAddr),
    scanned_id: Option<Option<i32>>,
) -> Box<MessageRecord> {
    let scanned_size = i32::try_from(raw.bytes.len().saturating_sub(4)).ok();
    let (correlation_id, length) = match scanned_id.zip(scanned_size) {
        Some(known) => known,
        None => (raw.correlation_id(), raw.size().unwrap_or(0)),
    };
    Box::new(MessageRecord {
        info: MessageInfo {
            index,
            frame: raw.last_frame,
            first_frame: raw.first_frame,
            ts: raw.last_ts,
            first_ts: raw.first_ts,
            stream: raw.stream,
            client,
            broker,
            kind: Kind::Request,
            api_key: None,
            api_version: None,
            correlation_id,
            length,
            client_id: None,
            paired: false,
            peer: None,
            inferred: false,
            expects_response: false,
            latency_ns: None,
            hol_wait_ns: None,
            rtt: None,
            fetch: None,
            throttle_time_ms: None,
            error_codes: Vec::new(),
            decode_error: None,
            decode_warning: None,
            resynced: raw.resynced,
            skipped_before: raw.skipped_before,
            topics: Topics::new(),
            capture: 0,
            also: match raw.twin.as_deref() {
                Some(Twin::Also(s)) => Some(Box::new(Also {
                    capture: s.capture,
                    frame: s.last_frame,
                    first_frame: s.first_frame,
                    ts: s.last_ts,
                    first_ts: s.first_ts,
                    latency_ns: None,
                })),
                _ => None,
            },
        },
        raw,
        decoded: None,
    })
}

/// The tree of a raw SASL token: its size prefix and the (redacted) token.
fn sasl_token_tree(raw: &RawMessage, kind: Kind, show_secrets: bool) -> Decoded {
    use crate::kafka::tree::Role;
    let bytes = &raw.bytes[..];
    let len = bytes.len().saturating_sub(4);
    let mut root = Node::new(
        "SaslToken",
        "raw SASL token",
        Value::None,
        0,
        bytes.len(),
        Role::Message,
    )
    .with_about("a SASL token sent without a Kafka header after SaslHandshake v0");
    let mut frame = Node::new("Frame", "", Value::None, 0, 4.min(bytes.len()), Role::Frame);
    if let Some(size) = raw.size() {
        frame.children.push(Node::new(
            "size",
            "int32",
            Value::Int(size.into()),
            0,
            4,
            Role::Frame,
        ));
    }
    root.children.push(frame);
    let value = if show_secrets {
        Value::bytes(bytes.get(4..).unwrap_or(&[]))
    } else {
        Value::Text(format!("<redacted, {len} bytes>").into())
    };
    let role = match kind {
        Kind::Request => Role::RequestBody,
        Kind::Response => Role::ResponseBody,
    };
    let mut token = Node::new("token", "bytes", value, 4, len, role);
    token.secret = !show_secrets;
    root.children.push(token);
    summary_decoded(kind, root, &mut Summary::default())
}

/// The summary a message is read by, where it lies (a summary is 176
/// bytes, which each step that took it by value would copy): the one made
/// ahead, else one `make` makes into `here`; none unless `scan`.
fn summary_in<'s>(
    scan: bool,
    ahead: Option<&'s mut Summary>,
    here: &'s mut Option<Summary>,
    make: impl FnOnce() -> Option<Summary>,
) -> Option<&'s mut Summary> {
    if !scan {
        return None;
    }
    match ahead {
        Some(s) => Some(s),
        None => {
            *here = make();
            here.as_mut()
        }
    }
}

/// What a message read without its tree tells besides the header.
struct LeanFacts {
    throttle: Option<i32>,
    errors: Vec<i16>,
    acks: Option<i64>,
    wait: Option<FetchAsk>,
    record_bytes: u64,
}

/// A tree-less [`Decoded`] (a bare root) of a [`Summary`], made in `slot`;
/// the summary's other facts go to `facts`.
fn lean_decoded<'d>(
    kind: Kind,
    s: &mut Summary,
    facts: &mut Option<LeanFacts>,
    slot: &'d mut Option<Decoded>,
) -> &'d mut Decoded {
    let root = Node::new(
        match kind {
            Kind::Request => "Request",
            Kind::Response => "Response",
        },
        "message",
        Value::None,
        0,
        0,
        crate::kafka::tree::Role::Message,
    );
    *facts = Some(LeanFacts {
        throttle: s.throttle_time_ms,
        errors: std::mem::take(&mut s.error_codes),
        acks: s.acks,
        wait: s.max_wait_ms.map(|max_wait_ms| FetchAsk {
            max_wait_ms,
            min_bytes: s.min_bytes.unwrap_or(0),
        }),
        record_bytes: s.record_bytes,
    });
    slot.insert(summary_decoded(kind, root, s))
}

/// The [`Decoded`] with tree `root` and the header facts and topics of `s`,
/// taken out of it where it lies ([`summary_in`]).
fn summary_decoded(kind: Kind, root: Node, s: &mut Summary) -> Decoded {
    use std::mem::take;
    Decoded {
        kind,
        api_key: s.api_key,
        api_version: s.api_version,
        correlation_id: s.correlation_id,
        client_id: s.client_id.take(),
        root,
        sources: Vec::new(),
        error: None,
        warning: None,
        topics: take(&mut s.topics),
        topic_ids: take(&mut s.topic_ids),
        facts: s.facts.take(),
    }
}

/// Decodes a message again the way the analyzer did (views decode trees lazily):
/// requests by their header, responses with the api key and version in `info`,
/// and raw SASL tokens — the only messages with neither an api key nor a decode
/// error — as a redacted token.
pub fn redecode(info: &MessageInfo, raw: &RawMessage, opts: &DecodeOptions) -> Decoded {
    if info.api_key.is_none() && info.decode_error.is_none() {
        return sasl_token_tree(raw, info.kind, opts.show_secrets);
    }
    match (info.kind, info.api_key, info.api_version) {
        (Kind::Request, _, _) => decode_request(&raw.bytes, opts),
        (Kind::Response, Some(k), Some(v)) => decode_paired_response(&raw.bytes, k.0, v, opts),
        (Kind::Response, _, _) => decode_response(&raw.bytes, -1, 0, opts),
    }
}

/// A message read again by its summary scan, as [`Stats`](crate::stats::Stats)
/// reads it with `Stats::analyzer_config` (`opts` with
/// `records_headers_only`: batch headers and placed facts, no tree): the
/// tree-less [`Decoded`] the analyzer would have given. `None` when the scan
/// cannot read it cleanly or `wants_tree` (`Stats::needs_tree`) asks for its
/// tree; the caller then decodes its tree ([`redecode`]).
pub fn rescan(
    info: &MessageInfo,
    raw: &RawMessage,
    opts: &DecodeOptions,
    wants_tree: TreeFilter,
) -> Option<Decoded> {
    let mut s = match (info.kind, info.api_key, info.api_version) {
        (Kind::Request, _, _) => summarize_request(&raw.bytes, opts),
        (Kind::Response, Some(k), Some(v)) => summarize_response(&raw.bytes, k.0, v, opts),
        (Kind::Response, _, _) => None,
    }?;
    let (k, v) = (s.api_key.unwrap_or(-1), s.api_version.unwrap_or(-1));
    if wants_tree(info.kind, k, v, &s) {
        return None;
    }
    let mut slot = None;
    lean_decoded(info.kind, &mut s, &mut None, &mut slot);
    slot
}

/// Decodes a response with its request's api key and version. A broker that does
/// not support the ApiVersions version asked for answers in v0 with
/// UNSUPPORTED_VERSION (35), so the client can retry lower (KIP-511).
fn decode_paired_response(bytes: &[u8], key: i16, version: i16, opts: &DecodeOptions) -> Decoded {
    let d = decode_response(bytes, key, version, opts);
    if ApiKey(key) == ApiKey::API_VERSIONS
        && version > 0
        && !d.clean()
        && bytes.get(8..10) == Some(&[0, 35])
    {
        let v0 = decode_response(bytes, key, 0, opts);
        if v0.clean() {
            return v0;
        }
    }
    d
}

/// False only for requests that get no response: Produce with acks=0.
pub fn expects_response(d: &Decoded) -> bool {
    d.api_key.map(ApiKey) != Some(ApiKey::PRODUCE) || facts::acks(&d.root) != Some(0)
}

/// ThrottleTimeMs (top level of the body) and every non-zero error code in a response.
pub fn response_facts(root: &Node) -> (Option<i32>, Vec<i16>) {
    let Some(body) = facts::body(root) else {
        return (None, Vec::new());
    };
    let mut errors = Vec::new();
    body.walk(&mut |n, _| errors.extend(facts::error_code(n)));
    (facts::int_child(body, "ThrottleTimeMs"), errors)
}

/// A Fetch or ShareFetch request's `MaxWaitMs` and `MinBytes`, from its tree.
fn fetch_ask(root: &Node) -> Option<FetchAsk> {
    let body = facts::body(root)?;
    Some(FetchAsk {
        max_wait_ms: facts::int_child(body, "MaxWaitMs")?,
        min_bytes: facts::int_child(body, "MinBytes").unwrap_or(0),
    })
}

/// Bytes of a tree's record sets, without their length prefixes.
fn record_bytes(root: &Node) -> u64 {
    let mut n = 0u64;
    root.walk(&mut |x, _| {
        if x.ty == "records" {
            let prefix = x.child("length").map_or(0, |l| l.length);
            n += x.length.saturating_sub(prefix) as u64;
        }
    });
    n
}

/// Largest unpaired response for which inference is attempted.
const MAX_INFER_BYTES: usize = 1 << 20;

/// The one (api key, version) whose response schema decodes the whole body, if
/// exactly one does. Versions with identical layouts decode alike, so an
/// inference is only made when the layouts disagree everywhere else.
fn infer_response(bytes: &[u8], opts: &DecodeOptions) -> Option<(i16, i16, Decoded)> {
    if bytes.len() > MAX_INFER_BYTES {
        return None;
    }
    let lean = DecodeOptions {
        records: false,
        ..opts.clone()
    };
    let mut found: Option<(i16, i16)> = None;
    for def in schema::MESSAGES
        .iter()
        .filter(|m| m.kind == MessageKind::Response)
    {
        let (lo, hi) = (
            def.valid.min,
            def.valid.max.min(def.valid.min.saturating_add(64)),
        );
        for v in lo..=hi {
            let d = decode_response(bytes, def.api_key, v, &lean);
            if d.clean() {
                if found.is_some() {
                    return None;
                }
                found = Some((def.api_key, v));
            }
        }
    }
    let (k, v) = found?;
    Some((k, v, decode_response(bytes, k, v, opts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an analyzer with `cfg` outputs for the capture at `path`, fed
    /// by a pipeline of its own whose requests and paired responses (every
    /// one, or one in `every`) are scanned by the analyzer's scanner before
    /// it sees them; `None` when the file does not open or the analyzer has
    /// no scanner.
    fn outputs_scanned(
        path: &std::path::Path,
        cfg: AnalyzerConfig,
        every: usize,
    ) -> Option<Vec<Output>> {
        use crate::capture::{FileSource, FrameSource, Polled};
        let mut src = FileSource::open(path.to_str()?).ok()?;
        let mut a = MessageAnalyzer::new(cfg.clone());
        let mut scanner = a.ahead_scanner()?;
        let mut pipeline = Pipeline::new(cfg.pipeline);
        let (mut evs, mut out, mut n) = (Vec::new(), Vec::new(), 0usize);
        let mut answers = Vec::new();
        let mut scan = |evs: &mut Vec<Event>| {
            answers.clear();
            scanner.pair(evs, &mut answers);
            for ev in evs.iter_mut() {
                if AheadScanner::wants(ev) {
                    n += 1;
                    if n % every == 0 {
                        let Event::Message(raw) = &*ev else {
                            unreachable!("a request")
                        };
                        // Scanned unless it does not scan cleanly.
                        let clean = summarize_request(&raw.bytes, &scanner.opts).is_some();
                        scanner.scan(ev);
                        assert_eq!(matches!(ev, Event::ScannedRequest(..)), clean);
                    }
                }
            }
            for &(i, k, v) in &answers {
                n += 1;
                let Some(ev) = evs.get_mut(i).filter(|_| n % every == 0) else {
                    continue;
                };
                let Event::Message(raw) = &*ev else {
                    unreachable!("a response not scanned yet")
                };
                let clean = summarize_response(&raw.bytes, k, v, &scanner.response_opts);
                scanner.scan_response(ev, k, v);
                assert_eq!(matches!(ev, Event::ScannedResponse(..)), clean.is_some());
            }
        };
        loop {
            match src.poll() {
                Ok(Polled::Frame(f)) => pipeline.push(f, &mut evs),
                Ok(Polled::Timeout) => continue,
                _ => break,
            }
            scan(&mut evs);
            evs.drain(..).for_each(|ev| a.push(ev, &mut out));
        }
        pipeline.finish(&mut evs);
        scan(&mut evs);
        evs.drain(..).for_each(|ev| a.push(ev, &mut out));
        a.finish(&mut out);
        Some(out)
    }

    /// Messages scanned ahead (on the reader's thread in `stats` and
    /// `print`) change nothing: the analyzer's outputs are those it makes
    /// scanning them itself, for every capture, whether all requests and
    /// paired responses or every other one came scanned, with summaries
    /// only and with the trees a filter asks for.
    #[test]
    fn messages_scanned_ahead_change_no_output() {
        fn wants_produce(k: Kind, key: i16, _: i16, _: &Summary) -> bool {
            k == Kind::Request && ApiKey(key) == ApiKey::PRODUCE
        }
        let mut lean = AnalyzerConfig::default();
        lean.decode.records = false;
        let filtered = AnalyzerConfig {
            keep_trees: true,
            tree_filter: Some(wants_produce),
            ..lean.clone()
        };
        let stats = crate::stats::Stats::analyzer_config(AnalyzerConfig::default());
        let mut requests = 0;
        for path in crate::test_captures::all() {
            for cfg in [lean.clone(), filtered.clone(), stats.clone()] {
                let want = crate::test_captures::outputs(&path, cfg.clone());
                for every in [1, 2] {
                    let got = outputs_scanned(&path, cfg.clone(), every).expect("a scanner");
                    assert_eq!(
                        format!("{got:?}"),
                        format!("{want:?}"),
                        "{} (every {every})",
                        path.display()
                    );
                }
                requests += want
                    .iter()
                    .filter(|o| matches!(o, Output::Message(m) if m.info.kind == Kind::Request))
                    .count();
            }
        }
        assert!(requests > 1000, "{requests} requests");
    }

    /// A summary-only analyzer's settings, and the pipeline events of the
    /// kcat capture read with them.
    fn lean_events_of_a1() -> (AnalyzerConfig, Vec<Event>) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures/a1-kcat-produce-consume-group.pcap");
        let mut src = crate::capture::FileSource::open(path.to_str().expect("path")).expect("open");
        let mut cfg = AnalyzerConfig::default();
        cfg.decode.records = false;
        let mut pipeline = Pipeline::new(cfg.pipeline.clone());
        let mut evs = Vec::new();
        while let Ok(crate::capture::Polled::Frame(f)) = crate::capture::FrameSource::poll(&mut src)
        {
            pipeline.push(f, &mut evs);
        }
        pipeline.finish(&mut evs);
        (cfg, evs)
    }

    /// The analyzer takes a request's scan made ahead instead of scanning it
    /// again (so the test above compares two paths, not one twice).
    #[test]
    fn a_request_scanned_ahead_is_taken_as_it_is() {
        let (cfg, mut evs) = lean_events_of_a1();
        let mut a = MessageAnalyzer::new(cfg);
        let scanner = a.ahead_scanner().expect("a scanner");
        let mut out = Vec::new();
        let mut tampered = 0;
        for ev in &mut evs {
            scanner.scan(ev);
            if let Event::ScannedRequest(_, s) = ev {
                s.client_id = Some("scanned-ahead".into());
                tampered += 1;
            }
        }
        evs.drain(..).for_each(|ev| a.push(ev, &mut out));
        a.finish(&mut out);
        let taken = out
            .iter()
            .filter(|o| {
                matches!(o, Output::Message(m)
                    if m.info.client_id.as_deref() == Some("scanned-ahead"))
            })
            .count();
        assert!(tampered > 10, "{tampered}");
        assert_eq!(taken, tampered);
    }

    /// The analyzer takes a response's scan made ahead when it pairs the
    /// response with a request of the api and version it was scanned as,
    /// and scans it again otherwise.
    #[test]
    fn a_response_scanned_ahead_is_taken_only_as_the_answer_it_was() {
        let taken = |wrong_version: bool| {
            let (mut a, scanner, mut evs, answers) = paired_a1();
            let mut tampered = 0;
            for &(i, k, v) in &answers {
                let v = if wrong_version { v + 1 } else { v };
                let ev = evs.get_mut(i).expect("an event");
                scanner.scan_response(ev, k, v);
                if let Event::ScannedResponse(_, s) = ev {
                    s.2.throttle_time_ms = Some(424_242);
                    // Those that teach topic ids are read as trees.
                    let teaches = TEACHERS.contains(&ApiKey(k)) && !s.2.topic_ids.is_empty();
                    tampered += usize::from(!teaches);
                }
            }
            let mut out = Vec::new();
            evs.drain(..).for_each(|ev| a.push(ev, &mut out));
            a.finish(&mut out);
            let seen = out
                .iter()
                .filter(|o| {
                    matches!(o, Output::Message(m)
                        if m.info.throttle_time_ms == Some(424_242))
                })
                .count();
            (tampered, seen)
        };
        let (tampered, seen) = taken(false);
        assert!(tampered > 10, "{tampered}");
        assert_eq!(seen, tampered);
        // As the answer to another version: scanned again by the analyzer
        // (some scan cleanly as the other version, so there is a scan to refuse).
        let (tampered, seen) = taken(true);
        assert!(tampered > 0, "{tampered}");
        assert_eq!(seen, 0);
    }

    /// A summary-only analyzer, its scanner having noted the kcat
    /// capture's events, the events, and the responses it paired.
    fn paired_a1() -> (MessageAnalyzer, AheadScanner, Vec<Event>, Vec<Answer>) {
        let (cfg, evs) = lean_events_of_a1();
        let a = MessageAnalyzer::new(cfg);
        let mut scanner = a.ahead_scanner().expect("a scanner");
        let mut answers = Vec::new();
        scanner.pair(&evs, &mut answers);
        (a, scanner, evs, answers)
    }

    /// The request the message at `i` of `evs` answers: the last one before
    /// it on its connection with its correlation id.
    fn request_before(evs: &[Event], i: usize) -> Option<&RawMessage> {
        let Some(Event::Message(r)) = evs.get(i) else {
            return None;
        };
        (evs.iter().take(i).rev()).find_map(|ev| match ev {
            Event::Message(q)
                if q.stream == r.stream
                    && q.dir == Direction::ClientToBroker
                    && q.correlation_id() == r.correlation_id() =>
            {
                Some(q)
            }
            _ => None,
        })
    }

    /// The scanner pairs a response with the request it noted on the same
    /// connection with the same correlation id, once; a response whose
    /// request it did not note is not paired.
    #[test]
    fn the_scanner_pairs_responses_with_the_requests_it_noted() {
        let (_, mut scanner, evs, answers) = paired_a1();
        for &(i, k, v) in &answers {
            let Some(Event::Message(r)) = evs.get(i) else {
                unreachable!("a message")
            };
            assert_eq!(r.dir, Direction::BrokerToClient);
            let asked = request_before(&evs, i).and_then(RawMessage::request_key_version);
            assert_eq!(asked, Some((k, v)));
        }
        let responses = (evs.iter())
            .filter(|ev| matches!(ev, Event::Message(m) if m.dir == Direction::BrokerToClient))
            .count();
        assert!(answers.len() > 10 && answers.len() <= responses);
        // Noted once: seen again, the responses find no request.
        let (mut again, evs2) = (Vec::new(), evs.clone());
        let only_responses: Vec<Event> = (evs2.into_iter())
            .filter(|ev| matches!(ev, Event::Message(m) if m.dir == Direction::BrokerToClient))
            .collect();
        scanner.pair(&only_responses, &mut again);
        assert!(again.is_empty());
    }

    /// The scanner remembers at most [`SCANNER_ASKED`] requests: one more
    /// and it forgets those it held (their responses are then scanned by
    /// the analyzer), keeping the new one.
    #[test]
    fn the_scanner_forgets_its_requests_past_its_bound() {
        let (a, _, evs, answers) = paired_a1();
        let &(i, k, v) = answers.first().expect("a paired response");
        let Some(Event::Message(response)) = evs.get(i) else {
            unreachable!("a response")
        };
        let request = request_before(&evs, i).expect("its request");
        // The message with correlation id `c` (at `at` in its bytes).
        let with_id = |m: &RawMessage, at: usize, c: i32| {
            let mut b = m.bytes.to_vec();
            if let Some(id) = b.get_mut(at..at + 4) {
                id.copy_from_slice(&c.to_be_bytes());
            }
            Event::Message(RawMessage {
                bytes: b.into(),
                ..m.clone()
            })
        };
        let bound = i32::try_from(SCANNER_ASKED).expect("a bound");
        let paired = |scanner: &mut AheadScanner, c: i32| {
            let mut got = Vec::new();
            scanner.pair(&[with_id(response, 4, c)], &mut got);
            got.first().map(|&(_, k, v)| (k, v))
        };
        let mut scanner = a.ahead_scanner().expect("a scanner");
        let requests: Vec<Event> = (0..bound).map(|c| with_id(request, 8, c)).collect();
        scanner.pair(&requests, &mut Vec::new());
        assert_eq!(scanner.asked.len(), SCANNER_ASKED);
        assert_eq!(paired(&mut scanner, 0), Some((k, v)));
        // Back to the bound, then one more: all forgotten but the newest.
        scanner.pair(&[with_id(request, 8, 0)], &mut Vec::new());
        scanner.pair(&[with_id(request, 8, bound)], &mut Vec::new());
        assert_eq!(scanner.asked.len(), 1);
        assert_eq!(paired(&mut scanner, 1), None);
        assert_eq!(paired(&mut scanner, bound), Some((k, v)));
    }

    /// `scan_next` scans the requests one at a time, in order, each once,
    /// and says when none is left.
    #[test]
    fn scan_next_takes_the_requests_in_order() {
        let (cfg, mut evs) = lean_events_of_a1();
        let scanner = MessageAnalyzer::new(cfg)
            .ahead_scanner()
            .expect("a scanner");
        let mut all = evs.clone();
        all.iter_mut().for_each(|ev| scanner.scan(ev));
        let scanned = |evs: &[Event]| -> Vec<bool> {
            evs.iter()
                .map(|ev| matches!(ev, Event::ScannedRequest(..)))
                .collect()
        };
        let (mut next, mut steps) = (0, 0);
        while let Some(after) = scanner.scan_next(&mut evs, next) {
            assert!(after > next);
            // Everything before `after` is as scanning all makes it.
            let (now, want) = (scanned(&evs), scanned(&all));
            assert_eq!(now.get(..after), want.get(..after));
            assert!(now.get(after..).into_iter().flatten().all(|s| !s));
            next = after;
            steps += 1;
        }
        let requests = all
            .iter()
            .filter(|ev| match ev {
                Event::Message(m) => m.dir == Direction::ClientToBroker,
                Event::ScannedRequest(..) => true,
                _ => false,
            })
            .count();
        assert_eq!(steps, requests);
        assert!(steps > 10, "{steps}");
        assert_eq!(scanned(&evs), scanned(&all));
        assert_eq!(scanner.scan_next(&mut evs, next), None);
    }

    /// Only an analyzer that scans requests has a scanner: one that keeps
    /// every tree decodes them instead.
    #[test]
    fn a_scanner_only_where_requests_are_scanned() {
        let trees = AnalyzerConfig {
            keep_trees: true,
            ..AnalyzerConfig::default()
        };
        assert!(MessageAnalyzer::new(trees).ahead_scanner().is_none());
        // Record sets decoded: no summaries (print -V on one thread).
        assert!(MessageAnalyzer::new(AnalyzerConfig::default())
            .ahead_scanner()
            .is_none());
        let mut lean = AnalyzerConfig::default();
        lean.decode.records = false;
        assert!(MessageAnalyzer::new(lean).ahead_scanner().is_some());
        let stats = crate::stats::Stats::analyzer_config(AnalyzerConfig::default());
        assert!(MessageAnalyzer::new(stats).ahead_scanner().is_some());
    }

    /// `info_topics: false` leaves only `MessageInfo::topics` empty: every
    /// other fact and the kept trees (their topics included) are the same.
    #[test]
    fn without_info_topics_only_the_info_topics_are_empty() {
        let mut named = 0;
        for path in crate::test_captures::shipped() {
            let with = crate::test_captures::messages(&path, crate::test_captures::full_trees());
            let cfg = AnalyzerConfig {
                info_topics: false,
                ..crate::test_captures::full_trees()
            };
            let without = crate::test_captures::messages(&path, cfg);
            assert_eq!(with.len(), without.len(), "{}", path.display());
            for (w, mut o) in with.into_iter().zip(without) {
                assert!(o.info.topics.is_empty(), "{}", path.display());
                named += usize::from(!w.info.topics.is_empty());
                o.info.topics.clone_from(&w.info.topics);
                assert_eq!(w.info, o.info, "{}", path.display());
                let topics = |m: &MessageRecord| m.decoded.as_ref().map(|d| d.topics.clone());
                assert_eq!(topics(&w), topics(&o), "{}", path.display());
            }
        }
        assert!(named > 0, "some shipped message names a topic");
    }

    /// `response_topics: false` (with `stats`' settings) leaves only the
    /// topic names of responses read by the summary scan out: every fact,
    /// every request and every response read as a tree are the same.
    #[test]
    fn without_response_topics_only_scanned_responses_lose_their_topics() {
        let (mut named, mut kept) = (0, 0);
        for path in crate::test_captures::shipped() {
            let light = crate::stats::Stats::analyzer_config(AnalyzerConfig::default());
            assert!(!light.response_topics, "stats does not read them");
            let with = crate::test_captures::messages(
                &path,
                AnalyzerConfig {
                    response_topics: true,
                    ..light.clone()
                },
            );
            let without = crate::test_captures::messages(&path, light);
            assert_eq!(with.len(), without.len(), "{}", path.display());
            for (w, mut o) in with.into_iter().zip(without) {
                assert_eq!(w.info, o.info, "{}", path.display());
                let (Some(wd), Some(od)) = (&w.decoded, &mut o.decoded) else {
                    assert!(
                        w.decoded.is_none() && o.decoded.is_none(),
                        "{}",
                        path.display()
                    );
                    continue;
                };
                // A bare root: read by the summary scan.
                let scanned = wd.root.children.is_empty();
                if w.info.kind == Kind::Response && scanned {
                    assert!(od.topics.is_empty(), "{}", path.display());
                    named += usize::from(!wd.topics.is_empty());
                    od.topics.clone_from(&wd.topics);
                } else {
                    kept += usize::from(!wd.topics.is_empty());
                }
                let facts = |d: &Decoded| {
                    format!(
                        "{:?}",
                        (
                            d.kind,
                            d.api_key,
                            d.api_version,
                            d.correlation_id,
                            &d.client_id,
                            &d.root,
                            &d.sources,
                            d.error.as_ref().map(ToString::to_string),
                            &d.topics,
                            &d.topic_ids,
                            &d.facts,
                        )
                    )
                };
                assert_eq!(facts(wd), facts(od), "{}", path.display());
            }
        }
        assert!(
            named > 0 && kept > 0,
            "{named} scanned responses named topics, {kept} others"
        );
    }
}
