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

use rustc_hash::FxHashMap;
use std::net::SocketAddr;

use crate::capture::{Frame, Timestamp};
use crate::flow::Direction;
use crate::kafka::decode::Kind;
use crate::kafka::decode::{summarize_request, summarize_response, Summary};
use crate::kafka::framing::RawMessage;
use crate::kafka::schema::{self, MessageKind};
use crate::kafka::tree::{Node, Value};
use crate::kafka::{decode_request, decode_response, DecodeOptions, Decoded};
use crate::pairing::{Pairer, PendingRequest};
use crate::pipeline::{Event, Pipeline, PipelineConfig, PipelineStats};
use crate::topics::TopicNames;

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
    /// Unanswered requests remembered per connection.
    pub max_pending_per_stream: usize,
    /// Fill [`MessageInfo::topics`]. `Stats`, which reads the topics of the
    /// kept tree instead, clears it: a list fewer to build per message.
    pub info_topics: bool,
}

impl Default for AnalyzerConfig {
    fn default() -> Self {
        AnalyzerConfig {
            pipeline: PipelineConfig::default(),
            decode: DecodeOptions::default(),
            keep_trees: false,
            tree_filter: None,
            infer_unpaired: true,
            max_pending_per_stream: 4096,
            info_topics: true,
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
    pub api_key: Option<i16>,
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
    /// The response's ThrottleTimeMs, when its schema has one.
    pub throttle_time_ms: Option<i32>,
    /// Every non-zero error code anywhere in a response body.
    pub error_codes: Vec<i16>,
    /// `None` when every byte decoded, else the reason with its offset.
    pub decode_error: Option<String>,
    /// The first message after a resynchronisation.
    pub resynced: bool,
    /// Bytes skipped just before it.
    pub skipped_before: u64,
    /// Topics the message names, by name or by a topic id learned from the capture.
    pub topics: Vec<String>,
}

impl MessageInfo {
    /// The API name (`Produce`), when the api key is known.
    pub fn api_name(&self) -> Option<&'static str> {
        self.api_key.and_then(schema::api_name)
    }

    /// Latency in milliseconds.
    pub fn latency_ms(&self) -> Option<f64> {
        self.latency_ns.map(|n| n as f64 / 1e6)
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
    /// A pipeline event worth reporting (gap, resync, warning, discarded bytes).
    Stream(Event),
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
    /// A notice.
    Notice(Notice),
}

struct StreamInfo {
    client: SocketAddr,
    broker: SocketAddr,
    sasl: SaslState,
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

/// Frames in, decoded and paired messages out.
pub struct Analyzer {
    cfg: AnalyzerConfig,
    pipeline: Pipeline,
    pairer: Pairer,
    streams: FxHashMap<u64, StreamInfo>,
    next_index: u64,
    events: Vec<Event>,
    topics: TopicNames,
    /// Options of the summary scan (record sets off).
    scan_opts: DecodeOptions,
}

impl Analyzer {
    /// An analyzer with these settings.
    pub fn new(cfg: AnalyzerConfig) -> Analyzer {
        Analyzer {
            scan_opts: DecodeOptions {
                records: false,
                ..cfg.decode.clone()
            },
            pipeline: Pipeline::new(cfg.pipeline.clone()),
            pairer: Pairer::new(cfg.max_pending_per_stream),
            cfg,
            streams: FxHashMap::default(),
            next_index: 0,
            events: Vec::new(),
            topics: TopicNames::default(),
        }
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
            streams: self.streams.len(),
            pending_requests: self.pairer.pending(),
            topics: self.topics.len(),
        }
    }

    /// Topic names learned so far from the capture.
    pub fn topic_names(&self) -> &TopicNames {
        &self.topics
    }

    /// Requests evicted from full pending tables.
    pub fn evicted_requests(&self) -> u64 {
        self.pairer.evicted()
    }

    /// Feeds one frame.
    pub fn push(&mut self, frame: &Frame, out: &mut Vec<Output>) {
        let mut evs = std::mem::take(&mut self.events);
        self.pipeline.push(frame, &mut evs);
        for ev in evs.drain(..) {
            self.event(ev, out);
        }
        self.events = evs;
    }

    /// Feeds pipeline events made by a [`Pipeline`] elsewhere (e.g. on a reader
    /// thread, see `print`), in the order it made them; drains `evs`. An
    /// analyzer fed this way gets no frames: at the end of input, call
    /// [`Analyzer::finish`] after the other pipeline's `finish` events.
    pub fn push_events(&mut self, evs: &mut Vec<Event>, out: &mut Vec<Output>) {
        for ev in evs.drain(..) {
            self.event(ev, out);
        }
    }

    /// Feeds one pipeline event made elsewhere (see [`Analyzer::push_events`]).
    pub fn push_event(&mut self, ev: Event, out: &mut Vec<Output>) {
        self.event(ev, out);
    }

    /// End of input: flushes every connection; unanswered requests are reported.
    pub fn finish(&mut self, out: &mut Vec<Output>) {
        let mut evs = std::mem::take(&mut self.events);
        self.pipeline.finish(&mut evs);
        for ev in evs.drain(..) {
            self.event(ev, out);
        }
        self.events = evs;
        let mut streams: Vec<u64> = self.streams.keys().copied().collect();
        streams.sort_unstable();
        for s in streams {
            self.close(s, out);
        }
    }

    fn close(&mut self, stream: u64, out: &mut Vec<Output>) {
        self.streams.remove(&stream);
        for request in self.pairer.close(stream) {
            out.push(Output::Notice(Notice::Unanswered { stream, request }));
        }
    }

    fn event(&mut self, ev: Event, out: &mut Vec<Output>) {
        match ev {
            Event::StreamOpen {
                stream,
                client,
                broker,
                ..
            } => {
                self.streams.insert(
                    stream,
                    StreamInfo {
                        client,
                        broker,
                        sasl: SaslState::Kafka,
                    },
                );
            }
            Event::Message(m) => self.message(m, out),
            Event::StreamClosed { stream, .. } => {
                out.push(Output::Notice(Notice::Stream(ev)));
                self.close(stream, out);
            }
            other => out.push(Output::Notice(Notice::Stream(other))),
        }
    }

    fn message(&mut self, raw: RawMessage, out: &mut Vec<Output>) {
        let Some(st) = self.streams.get(&raw.stream) else {
            return;
        };
        let (client, broker, sasl) = (st.client, st.broker, st.sasl);
        let index = self.next_index;
        self.next_index += 1;
        let mut info = MessageInfo {
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
            correlation_id: raw.correlation_id(),
            length: raw.size().unwrap_or(0),
            client_id: None,
            paired: false,
            peer: None,
            inferred: false,
            expects_response: false,
            latency_ns: None,
            throttle_time_ms: None,
            error_codes: Vec::new(),
            decode_error: None,
            resynced: raw.resynced,
            skipped_before: raw.skipped_before,
            topics: Vec::new(),
        };
        // Without trees to keep, clean messages are read without building one.
        let lean = !self.cfg.keep_trees && !self.cfg.decode.records;
        // Trees kept only where the filter wants them: the others are scanned.
        let filter = self.cfg.tree_filter.filter(|_| self.cfg.keep_trees);
        let scan = lean || filter.is_some();
        let mut facts: Option<LeanFacts> = None;
        let decoded = match raw.dir {
            Direction::ClientToBroker => {
                let mut d = match scan
                    .then(|| summarize_request(&raw.bytes, &self.scan_opts))
                    .flatten()
                    .filter(|s| {
                        filter.is_none_or(|f| {
                            let (k, v) = (s.api_key.unwrap_or(-1), s.api_version.unwrap_or(-1));
                            !f(Kind::Request, k, v, s)
                        })
                    }) {
                    Some(s) => {
                        let (d, f) = lean_decoded(Kind::Request, s);
                        facts = Some(f);
                        d
                    }
                    None => decode_request(&raw.bytes, &self.cfg.decode),
                };
                info.api_key = d.api_key;
                info.api_version = d.api_version;
                // `Decoded::client_id` has no reader past this point.
                info.client_id = d.client_id.take();
                info.expects_response = match &facts {
                    Some(f) => d.api_key != Some(0) || f.acks != Some(0),
                    None => expects_response(&d),
                };
                let raw_token = sasl == SaslState::RawTokens && d.error.is_some();
                if let (true, false, Some(k), Some(v), Some(c)) = (
                    info.expects_response,
                    raw_token,
                    d.api_key,
                    d.api_version,
                    d.correlation_id,
                ) {
                    // A request whose body is malformed still pairs: its header is enough.
                    let pending = PendingRequest {
                        index,
                        api_key: k,
                        api_version: v,
                        frame: raw.last_frame,
                        ts: raw.last_ts,
                    };
                    if let Some(old) = self.pairer.request(raw.stream, c, pending) {
                        out.push(Output::Notice(Notice::Unanswered {
                            stream: raw.stream,
                            request: old,
                        }));
                    }
                } else if let (false, false, Some(k), Some(v), Some(c)) = (
                    info.expects_response,
                    raw_token,
                    d.api_key,
                    d.api_version,
                    d.correlation_id,
                ) {
                    // acks=0: no response is due, but pair one if the broker sends it.
                    let pending = PendingRequest {
                        index,
                        api_key: k,
                        api_version: v,
                        frame: raw.last_frame,
                        ts: raw.last_ts,
                    };
                    self.pairer.optional_request(raw.stream, c, pending);
                }
                d
            }
            Direction::BrokerToClient => {
                info.kind = Kind::Response;
                let req = info
                    .correlation_id
                    .and_then(|c| self.pairer.response(raw.stream, c));
                match req {
                    Some(req) => {
                        info.paired = true;
                        info.peer = Some(req.index);
                        info.latency_ns = Some(raw.first_ts.nanos_since(req.ts));
                        info.api_key = Some(req.api_key);
                        info.api_version = Some(req.api_version);
                        // Responses that teach topic names (see `TopicNames::learn`)
                        // are read as trees when they carry a topic id to learn.
                        let teaches = matches!(req.api_key, 3 | 19 | 75);
                        let summary = scan
                            .then(|| {
                                summarize_response(
                                    &raw.bytes,
                                    req.api_key,
                                    req.api_version,
                                    &self.scan_opts,
                                )
                            })
                            .flatten()
                            .filter(|s| !teaches || s.topic_ids.is_empty())
                            .filter(|s| {
                                filter.is_none_or(|f| {
                                    !f(Kind::Response, req.api_key, req.api_version, s)
                                })
                            });
                        match summary {
                            Some(s) => {
                                let (d, f) = lean_decoded(Kind::Response, s);
                                facts = Some(f);
                                d
                            }
                            None => decode_paired_response(
                                &raw.bytes,
                                req.api_key,
                                req.api_version,
                                &self.cfg.decode,
                            ),
                        }
                    }
                    None => {
                        let inferred = if self.cfg.infer_unpaired && sasl != SaslState::RawTokens {
                            infer_response(&raw.bytes, &self.cfg.decode)
                        } else {
                            None
                        };
                        match inferred {
                            Some((k, v, d)) => {
                                info.api_key = Some(k);
                                info.api_version = Some(v);
                                info.inferred = true;
                                d
                            }
                            None => {
                                // Only the header can be read: decode it with an unknown api.
                                decode_response(&raw.bytes, -1, 0, &self.cfg.decode)
                            }
                        }
                    }
                }
            }
        };
        let mut decoded = match self.sasl_step(&raw, sasl, &mut info, decoded, facts.as_ref()) {
            Some(d) => d,
            None => return,
        };
        if info.kind == Kind::Response
            && info.decode_error.as_deref().is_none_or(|e| e != SASL_NOTE)
        {
            let (throttle, errors) = match facts {
                Some(f) => (f.throttle, f.errors),
                None => response_facts(&decoded.root),
            };
            info.throttle_time_ms = throttle;
            info.error_codes = errors;
            if info.api_key.is_none() {
                info.decode_error = Some("response without a captured request; api unknown".into());
            }
        }
        if info.decode_error.as_deref() == Some(SASL_NOTE) {
            info.decode_error = None;
        } else if info.decode_error.is_none() {
            info.decode_error = decoded.error.as_ref().map(ToString::to_string);
        }
        if info.kind == Kind::Response {
            self.topics.learn(info.api_key, &decoded.root);
        }
        if self.cfg.info_topics {
            info.topics = if self.cfg.keep_trees {
                decoded.topics.clone()
            } else {
                std::mem::take(&mut decoded.topics)
            };
            for id in &decoded.topic_ids {
                if let Some(name) = self.topics.name(id) {
                    if !info.topics.iter().any(|t| t == name) {
                        info.topics.push(name.to_string());
                    }
                }
            }
        }
        let decoded = self.cfg.keep_trees.then(|| {
            let mut d = decoded;
            self.topics.annotate(&mut d.root);
            d
        });
        out.push(Output::Message(Box::new(MessageRecord {
            info,
            raw,
            decoded,
        })));
    }
}

/// Internal marker: the message is a raw SASL token (never shown).
const SASL_NOTE: &str = "\0raw SASL token";

impl Analyzer {
    /// Tracks SaslHandshake v0 and turns raw SASL tokens into redacted records.
    /// Returns the tree to keep (`None` never happens today; kept for clarity).
    fn sasl_step(
        &mut self,
        raw: &RawMessage,
        state: SaslState,
        info: &mut MessageInfo,
        decoded: Decoded,
        facts: Option<&LeanFacts>,
    ) -> Option<Decoded> {
        let next = match (state, info.kind) {
            (SaslState::Kafka, Kind::Request)
                if info.api_key == Some(17)
                    && info.api_version == Some(0)
                    && decoded.error.is_none() =>
            {
                info.correlation_id
                    .map_or(SaslState::Kafka, SaslState::Handshake)
            }
            (SaslState::Handshake(c), Kind::Response) if info.correlation_id == Some(c) => {
                let errors = match facts {
                    Some(f) => f.errors.clone(),
                    None => response_facts(&decoded.root).1,
                };
                if errors.is_empty() && decoded.error.is_none() {
                    SaslState::RawTokens
                } else {
                    SaslState::Kafka
                }
            }
            (SaslState::RawTokens, Kind::Request)
                if decoded.error.is_none() && info.api_key.and_then(schema::api_name).is_some() =>
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
                info.decode_error = Some(SASL_NOTE.into());
                return Some(sasl_token_tree(
                    raw,
                    info.kind,
                    self.cfg.decode.show_secrets,
                ));
            }
            (s, _) => s,
        };
        if let Some(st) = self.streams.get_mut(&raw.stream) {
            st.sasl = next;
        }
        Some(decoded)
    }
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
    Decoded {
        kind,
        api_key: None,
        api_version: None,
        correlation_id: None,
        client_id: None,
        root,
        sources: Vec::new(),
        error: None,
        topics: Vec::new(),
        topic_ids: Vec::new(),
        facts: None,
    }
}

/// What a message read without its tree tells besides the header.
struct LeanFacts {
    throttle: Option<i32>,
    errors: Vec<i16>,
    acks: Option<i64>,
}

/// A tree-less [`Decoded`] (a bare root) and the facts of a [`Summary`].
fn lean_decoded(kind: Kind, s: Summary) -> (Decoded, LeanFacts) {
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
    (
        Decoded {
            kind,
            api_key: s.api_key,
            api_version: s.api_version,
            correlation_id: s.correlation_id,
            client_id: s.client_id,
            root,
            sources: Vec::new(),
            error: None,
            topics: s.topics,
            topic_ids: s.topic_ids,
            facts: s.facts,
        },
        LeanFacts {
            throttle: s.throttle_time_ms,
            errors: s.error_codes,
            acks: s.acks,
        },
    )
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
        (Kind::Response, Some(k), Some(v)) => decode_paired_response(&raw.bytes, k, v, opts),
        (Kind::Response, _, _) => decode_response(&raw.bytes, -1, 0, opts),
    }
}

/// Decodes a response with its request's api key and version. A broker that does
/// not support the ApiVersions version asked for answers in v0 with
/// UNSUPPORTED_VERSION (35), so the client can retry lower (KIP-511).
fn decode_paired_response(bytes: &[u8], key: i16, version: i16, opts: &DecodeOptions) -> Decoded {
    let d = decode_response(bytes, key, version, opts);
    if key == 18 && version > 0 && d.error.is_some() && bytes.get(8..10) == Some(&[0, 35]) {
        let v0 = decode_response(bytes, key, 0, opts);
        if v0.error.is_none() {
            return v0;
        }
    }
    d
}

/// False only for requests that get no response: Produce with acks=0.
fn expects_response(d: &Decoded) -> bool {
    if d.api_key != Some(0) {
        return true;
    }
    !matches!(
        d.body().and_then(|b| b.child("Acks")).map(|n| &n.value),
        Some(Value::Int(0))
    )
}

/// ThrottleTimeMs (top level of the body) and every non-zero error code in a response.
pub fn response_facts(root: &Node) -> (Option<i32>, Vec<i16>) {
    let body = root.children.iter().find(|n| n.ty == "struct");
    let throttle = body
        .and_then(|b| b.child("ThrottleTimeMs"))
        .and_then(|n| match n.value {
            Value::Int(v) => i32::try_from(v).ok(),
            _ => None,
        });
    let mut errors = Vec::new();
    if let Some(b) = body {
        b.walk(&mut |n, _| {
            if n.name.ends_with("ErrorCode") {
                if let Value::Int(v) = n.value {
                    if v != 0 {
                        if let Ok(c) = i16::try_from(v) {
                            errors.push(c);
                        }
                    }
                }
            }
        });
    }
    (throttle, errors)
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
            if d.error.is_none() {
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

/// Holds messages back so that a request leaves only once its response is known,
/// keeping capture order: then a request's `paired` and `peer` are final when it
/// is printed. Memory is bounded: at most `cap` messages wait, and at most
/// [`Reorder::limit_bytes`] of what they keep alive; past either, the oldest
/// leaves as it is (unpaired so far).
pub struct Reorder {
    /// Held messages, oldest first, with consecutive indices.
    queue: std::collections::VecDeque<HeldSlot>,
    cap: usize,
    /// What the held messages cost (bytes and footprint, not tree JSON), and
    /// how much they may, tree JSON included.
    held_cost: usize,
    cost_cap: usize,
    /// Set by [`Reorder::hold_without_trees`]: how held trees are decoded again.
    redecode: Option<DecodeOptions>,
    /// Released messages whose trees [`Reorder::restore`] has yet to decode, by index.
    released: std::collections::VecDeque<(u64, Held)>,
    /// Set by [`Reorder::hold_as_json`]: bytes of tree JSON held messages may keep.
    json_budget: usize,
    /// Bytes of tree JSON kept now (held or released, not yet restored).
    json_held: usize,
    /// Bytes of tree JSON kept by held messages (part of `json_held`).
    json_queued: usize,
    /// Held messages before this index keep no tree JSON (it was given up
    /// to stay within `cost_cap`, oldest first).
    json_kept_from: u64,
    /// Tree JSON bytes per message byte, so far.
    json_ratio: Ratio,
    /// Where held messages keep their bytes.
    store: ByteStore,
    /// Notices that arrived while messages were held, each with the index of
    /// the last message queued before it: it leaves right after that message,
    /// so a notice never overtakes what came before it (at most
    /// [`MAX_HELD_NOTICES`]; past that they leave at once).
    notices: std::collections::VecDeque<(u64, Notice)>,
}

/// One held message: the message, whether it waits for its response, what it
/// keeps without its tree, and its cost as [`Reorder::limit_bytes`] counts it.
type HeldSlot = (Box<MessageRecord>, bool, Option<Held>, usize);

/// Blocks of held messages' bytes. A message's bytes are often a slice of a
/// larger buffer (a file read buffer of [`crate::capture::fastfile::CHUNK`]
/// bytes, a live frame), which the slice keeps alive whole; a held message
/// copies its bytes here instead. Blocks are filled in the order messages
/// are held and are freed when the last message in them leaves (messages
/// leave in that order too), so the blocks alive are the held messages'
/// bytes, plus the unused end of each block (less than
/// [`ByteStore::LARGEST`]) and the part of the oldest block whose messages
/// already left. One copy per held message and no allocation: copying each
/// into an allocation of its own cost the `-V` JSONL benchmark 5 %.
#[derive(Default)]
struct ByteStore {
    /// The unused end of the current block.
    block: bytes::BytesMut,
}

impl ByteStore {
    /// Bytes per block.
    const BLOCK: usize = 1 << 20;
    /// Larger messages get an allocation of their own.
    const LARGEST: usize = Self::BLOCK / 8;

    /// A copy of `b` that keeps nothing else alive (but its block).
    fn keep(&mut self, b: &bytes::Bytes) -> bytes::Bytes {
        if b.len() > Self::LARGEST {
            return bytes::Bytes::copy_from_slice(b);
        }
        if self.block.capacity() < b.len() {
            self.block = bytes::BytesMut::with_capacity(Self::BLOCK);
        }
        self.block.extend_from_slice(b);
        self.block.split().freeze()
    }
}

/// Notices a [`Reorder`] keeps in order behind held messages.
const MAX_HELD_NOTICES: usize = 16_384;

/// Bytes of held tree JSON (short keys) per message byte seen so far.
#[derive(Default)]
struct Ratio {
    raw: u64,
    json: u64,
}

impl Ratio {
    /// The JSON size a message of `raw` bytes will likely have (with a margin).
    fn guess(&self, raw: usize) -> usize {
        // Until something is known: a typical 16 bytes of JSON per byte.
        let per = if self.raw == 0 {
            16.0
        } else {
            self.json as f64 / self.raw as f64
        };
        (raw as f64 * per * 1.25) as usize
    }

    fn add(&mut self, raw: usize, json: usize) {
        self.raw += raw as u64;
        self.json += json as u64;
    }
}

/// What a held message whose tree was dropped needs to get the same tree back:
/// the topic-name annotations its tree had when the analyzer made it (names
/// learned later must not show); and, within the JSON budget, the tree's JSON
/// with short keys ([`Node::write_json_short_keys`], half the bytes).
struct Held {
    annotations: Vec<([u8; 16], crate::kafka::tree::Text)>,
    json: Option<Vec<u8>>,
}

impl Held {
    /// Drops the tree of `m`, keeping what [`Held::restore`] needs; with a
    /// size guess, also the tree written as JSON with short keys
    /// ([`Node::write_json_short_keys`]).
    fn strip(m: &mut MessageRecord, json: Option<usize>) -> Option<Held> {
        let d = m.decoded.take()?;
        let mut annotations: Vec<([u8; 16], crate::kafka::tree::Text)> = Vec::new();
        // Topic ids are schema fields: record sets (most of a tree) hold none.
        fn go(n: &Node, out: &mut Vec<([u8; 16], crate::kafka::tree::Text)>) {
            use crate::kafka::tree::Role;
            if let (Value::Uuid(u), Some(t)) = (&n.value, &n.detail) {
                if n.name.ends_with("TopicId") && !out.iter().any(|(a, _)| a == u) {
                    out.push((*u, t.clone()));
                }
            }
            if matches!(n.role, Role::Record | Role::RecordBatch) {
                return;
            }
            for c in &n.children {
                go(c, out);
            }
        }
        go(&d.root, &mut annotations);
        let json = json.map(|guess| {
            let mut v = Vec::with_capacity(guess);
            d.root.write_json_short_keys(&mut v);
            // Shrinking reallocates in place: what is kept is what is counted.
            if v.capacity() > v.len() + v.len() / 8 {
                v.shrink_to_fit();
            }
            v
        });
        Some(Held { annotations, json })
    }

    /// Decodes the tree of `m` again, as the analyzer did, with its annotations.
    fn restore(self, m: &mut MessageRecord, opts: &DecodeOptions) {
        let mut d = redecode(&m.info, &m.raw, opts);
        if !self.annotations.is_empty() {
            d.root.walk_mut(&mut |n| {
                if let Value::Uuid(u) = &n.value {
                    if n.name.ends_with("TopicId") {
                        if let Some((_, t)) = self.annotations.iter().find(|(a, _)| a == u) {
                            n.detail = Some(t.clone());
                        }
                    }
                }
            });
        }
        m.decoded = Some(d);
    }
}

/// What [`Reorder::limit_bytes`] counts at least for a held message besides
/// its bytes: the record itself and its facts' small allocations (measured
/// at about 1,070 bytes on average, all held messages of a 400 MB loopback
/// capture and of the benchmark corpus; see [`held_footprint`] for more).
pub const HELD_OVERHEAD: usize = std::mem::size_of::<MessageRecord>() + 512;

/// What the allocator takes per allocation beyond the bytes asked for
/// (glibc: an 8-byte header, sizes rounded up to 16).
const MALLOC_SLACK: usize = 16;

/// Heap bytes of a vector's buffer.
fn vec_heap<T>(v: &Vec<T>) -> usize {
    match v.capacity().saturating_mul(std::mem::size_of::<T>()) {
        0 => 0,
        n => n.saturating_add(MALLOC_SLACK),
    }
}

/// Heap bytes of a string's buffer.
fn string_heap(s: &String) -> usize {
    match s.capacity() {
        0 => 0,
        n => n.saturating_add(MALLOC_SLACK),
    }
}

/// What a held message keeps alive besides its bytes, its tree and its tree
/// JSON: the boxed record and its queue slot, the heap of its facts (client
/// id, topics, error codes, decode error) and of its provenance (an entry
/// per carrying frame: a message cut in many small segments has many), and
/// the annotations it keeps to get its tree back ([`Held`]).
fn held_footprint(m: &MessageRecord, held: Option<&Held>) -> usize {
    let i = &m.info;
    let opt = |s: &Option<String>| s.as_ref().map_or(0, string_heap);
    let held = held.map_or(0, |h| {
        h.annotations
            .iter()
            .fold(vec_heap(&h.annotations), |n, (_, t)| {
                n.saturating_add(match t {
                    std::borrow::Cow::Owned(s) => string_heap(s),
                    std::borrow::Cow::Borrowed(_) => 0,
                })
            })
    });
    let topics = i
        .topics
        .iter()
        .fold(vec_heap(&i.topics), |n, t| n.saturating_add(string_heap(t)));
    [
        std::mem::size_of::<MessageRecord>() + MALLOC_SLACK,
        std::mem::size_of::<HeldSlot>(),
        opt(&i.client_id),
        opt(&i.decode_error),
        vec_heap(&i.error_codes),
        topics,
        vec_heap(&m.raw.provenance),
        vec_heap(&m.raw.file_pieces),
        held,
    ]
    .iter()
    .fold(0usize, |n, x| n.saturating_add(*x))
}

impl Reorder {
    /// A reorder buffer holding at most `cap` messages.
    pub fn new(cap: usize) -> Reorder {
        Reorder {
            queue: std::collections::VecDeque::new(),
            cap: cap.max(1),
            held_cost: 0,
            cost_cap: usize::MAX,
            redecode: None,
            released: std::collections::VecDeque::new(),
            json_budget: 0,
            json_held: 0,
            json_queued: 0,
            json_kept_from: 0,
            json_ratio: Ratio::default(),
            store: ByteStore::default(),
            notices: std::collections::VecDeque::new(),
        }
    }

    /// Bounds what the held messages keep alive as well as their number. A
    /// held message costs its bytes — copied ([`ByteStore`]): a slice of a
    /// larger buffer would keep all of it alive — and what else it keeps
    /// ([`held_footprint`], at least [`HELD_OVERHEAD`]); past `bytes`, the
    /// oldest message leaves even if it waits for its response, as past the
    /// count: a capture whose request is never answered keeps bounded
    /// memory, its later messages leaving in order. Tree JSON
    /// ([`Reorder::hold_as_json`]) only takes what the messages leave of
    /// `bytes`: held messages give it up (oldest first) rather than leave
    /// for it. Trees kept whole are not counted: bound those by number.
    pub fn limit_bytes(&mut self, bytes: usize) {
        self.cost_cap = bytes;
    }

    /// Messages that have to wait give up their trees: they leave without one,
    /// and [`Reorder::restore`] decodes it again (with `opts`, the analyzer's
    /// decode options) when the caller is about to use the message — one at a
    /// time, so memory follows the held messages' bytes, not their trees. The
    /// restored trees are those the analyzer made (topic-name annotations
    /// included). Call `restore` on every message that leaves, in order.
    pub fn hold_without_trees(&mut self, opts: DecodeOptions) {
        self.redecode = Some(opts);
    }

    /// As [`Reorder::hold_without_trees`], but a held message first writes its
    /// tree as JSON with short keys ([`Node::write_json_short_keys`], a
    /// fraction of the tree's memory) while that of all held messages stays
    /// within `budget` bytes, and within what [`Reorder::limit_bytes`] leaves:
    /// [`Reorder::restore_json`] gives that JSON back instead of decoding the
    /// message again. Past either, held messages keep only their bytes.
    pub fn hold_as_json(&mut self, opts: DecodeOptions, budget: usize) {
        self.redecode = Some(opts);
        self.json_budget = budget;
    }

    /// Gives a message that left without its tree (see
    /// [`Reorder::hold_without_trees`]) its tree back; other messages are left
    /// as they are. Messages must come in the order they left; skipped ones
    /// are forgotten.
    pub fn restore(&mut self, m: &mut MessageRecord) {
        if let Some(held) = self.take_held(m.info.index) {
            if let Some(opts) = &self.redecode {
                held.restore(m, opts);
            }
        }
    }

    /// As [`Reorder::restore`], but a message that kept its tree's JSON (see
    /// [`Reorder::hold_as_json`]) gets that JSON back instead of its tree,
    /// with short keys: [`json::expand_keys`] writes [`Node::write_json`]'s
    /// bytes from it (straight into the output, with no copy in between).
    ///
    /// [`json::expand_keys`]: crate::kafka::tree::json::expand_keys
    pub fn restore_json(&mut self, m: &mut MessageRecord) -> Option<Vec<u8>> {
        let mut held = self.take_held(m.info.index)?;
        if let Some(short) = held.json.take() {
            return Some(short);
        }
        if let Some(opts) = &self.redecode {
            held.restore(m, opts);
        }
        None
    }

    /// The held state of the released message `index`; forgets those before it.
    fn take_held(&mut self, index: u64) -> Option<Held> {
        while let Some((i, _)) = self.released.front() {
            if *i > index {
                return None;
            }
            let (i, held) = self.released.pop_front()?;
            self.json_held = self
                .json_held
                .saturating_sub(held.json.as_ref().map_or(0, Vec::len));
            if i == index {
                return Some(held);
            }
        }
        None
    }

    /// Takes the analyzer's outputs; appends to `out` what may leave now, in order.
    /// Notices pass straight through.
    pub fn push(&mut self, o: Output, out: &mut Vec<Output>) {
        match o {
            Output::Message(m) => {
                if m.info.kind == Kind::Response {
                    if let (true, Some(req)) = (m.info.paired, m.info.peer) {
                        if let Some((r, waiting, _)) = self.find(req) {
                            r.info.paired = true;
                            r.info.peer = Some(m.info.index);
                            *waiting = false;
                        }
                    }
                }
                let waiting = m.info.kind == Kind::Request && m.info.expects_response;
                let index = m.info.index;
                self.queue.push_back((m, waiting, None, 0));
                self.release(out, false);
                if self.queue.back().is_some_and(|s| s.0.info.index == index) {
                    self.hold_last(out);
                }
                return;
            }
            Output::Notice(n) => {
                if let Notice::Unanswered { request, .. } = &n {
                    if let Some((_, waiting, _)) = self.find(request.index) {
                        *waiting = false;
                    }
                }
                match self.queue.back() {
                    Some((last, _, _, _)) if self.notices.len() < MAX_HELD_NOTICES => {
                        self.notices.push_back((last.info.index, n));
                    }
                    _ => out.push(Output::Notice(n)),
                }
            }
        }
        self.release(out, false);
    }

    /// The message just queued stays: it copies its bytes ([`ByteStore`]),
    /// gives up its tree (keeping, where it fits, the tree's JSON), is
    /// counted, and past the limit the oldest leave.
    fn hold_last(&mut self, out: &mut Vec<Output>) {
        // New JSON leaves a quarter of the limit to the bytes of messages
        // still to come, so that they seldom make held JSON go (its work lost).
        let room = self
            .cost_cap
            .saturating_sub(self.cost_cap / 4)
            .saturating_sub(self.held_cost.saturating_add(self.json_queued));
        let Some((m, _, held, cost)) = self.queue.back_mut() else {
            return;
        };
        if !m.raw.bytes.is_empty() {
            m.raw.bytes = self.store.keep(&m.raw.bytes);
        }
        let raw_len = m.raw.bytes.len();
        let mut json_len = 0;
        if self.redecode.is_some() {
            // Keep the bytes (and where it fits the JSON), not the tree (tens
            // of times its message's bytes). JSON only where it will likely
            // fit: its size is guessed from the message's bytes and the ratio
            // seen so far.
            let guess = self.json_ratio.guess(raw_len);
            let json_room = self
                .json_budget
                .saturating_sub(self.json_held)
                .min(room.saturating_sub(raw_len.saturating_add(HELD_OVERHEAD)));
            *held = Held::strip(m, (guess <= json_room).then_some(guess));
            if let Some(h) = held {
                let len = h.json.as_ref().map_or(0, Vec::len);
                self.json_ratio.add(raw_len, len);
                if len > json_room {
                    h.json = None;
                } else {
                    json_len = len;
                }
            }
        }
        *cost = raw_len.saturating_add(HELD_OVERHEAD.max(held_footprint(m, held.as_ref())));
        self.held_cost = self.held_cost.saturating_add(*cost);
        self.json_held += json_len;
        self.json_queued += json_len;
        if self.held_cost > self.cost_cap {
            self.release(out, false);
        }
        self.shed_json();
    }

    /// Held messages give up their tree JSON, oldest first, until it fits in
    /// what their bytes leave of the limit.
    fn shed_json(&mut self) {
        let Some(front) = self.queue.front().map(|s| s.0.info.index) else {
            return;
        };
        let mut at =
            usize::try_from(self.json_kept_from.saturating_sub(front)).unwrap_or(usize::MAX);
        while self.held_cost.saturating_add(self.json_queued) > self.cost_cap {
            let Some((m, _, held, _)) = self.queue.get_mut(at) else {
                break;
            };
            self.json_kept_from = m.info.index + 1;
            if let Some(json) = held.as_mut().and_then(|h| h.json.take()) {
                self.json_held = self.json_held.saturating_sub(json.len());
                self.json_queued = self.json_queued.saturating_sub(json.len());
            }
            at += 1;
        }
    }

    /// Releases everything still held (end of input).
    pub fn flush(&mut self, out: &mut Vec<Output>) {
        self.release(out, true);
    }

    fn find(&mut self, index: u64) -> Option<(&mut MessageRecord, &mut bool, &mut Option<Held>)> {
        let front = self.queue.front()?.0.info.index;
        let pos = usize::try_from(index.checked_sub(front)?).ok()?;
        let (m, w, h, _) = self.queue.get_mut(pos)?;
        (m.info.index == index).then_some((&mut **m, w, h))
    }

    fn release(&mut self, out: &mut Vec<Output>, all: bool) {
        while let Some((_, waiting, _, _)) = self.queue.front() {
            if *waiting && !all && self.queue.len() <= self.cap && self.held_cost <= self.cost_cap {
                break;
            }
            if let Some((m, _, held, cost)) = self.queue.pop_front() {
                self.held_cost -= cost;
                let index = m.info.index;
                if let Some(h) = held {
                    let json = h.json.as_ref().map_or(0, Vec::len);
                    self.json_queued = self.json_queued.saturating_sub(json);
                    self.released.push_back((index, h));
                }
                out.push(Output::Message(m));
                while self
                    .notices
                    .front()
                    .is_some_and(|(after, _)| *after <= index)
                {
                    if let Some((_, n)) = self.notices.pop_front() {
                        out.push(Output::Notice(n));
                    }
                }
            }
        }
        if self.queue.is_empty() {
            out.extend(self.notices.drain(..).map(|(_, n)| Output::Notice(n)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{FileSource, FrameSource, Polled};
    use crate::flow::Ports;

    /// A request whose response never comes holds the messages after it
    /// only up to `limit_bytes`: past it the oldest leave, in order, and what
    /// is still held never costs more than the limit.
    #[test]
    fn an_unanswered_request_holds_at_most_the_byte_limit() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures/a2-confluent-compression-codecs.pcap");
        let mut msgs = crate::test_captures::messages(&path, AnalyzerConfig::default());
        assert!(msgs.len() > 20, "{} messages", msgs.len());
        // The first one waits for a response that never comes; the others
        // wait for nothing.
        for (i, m) in msgs.iter_mut().enumerate() {
            m.info.paired = false;
            m.info.peer = None;
            m.info.kind = if i == 0 {
                Kind::Request
            } else {
                Kind::Response
            };
            m.info.expects_response = i == 0;
        }
        let cost = |m: &MessageRecord| m.raw.bytes.len() + HELD_OVERHEAD;
        let messages = |out: &mut Vec<Output>| -> Vec<u64> {
            out.drain(..)
                .filter_map(|o| match o {
                    Output::Message(m) => Some(m.info.index),
                    Output::Notice(_) => None,
                })
                .collect()
        };
        let limit = 6 * HELD_OVERHEAD;
        for limit in [usize::MAX, limit] {
            let mut r = Reorder::new(1 << 20);
            r.limit_bytes(limit);
            let (mut out, mut left) = (Vec::new(), Vec::new());
            for (i, m) in msgs.iter().enumerate() {
                r.push(Output::Message(Box::new(m.clone())), &mut out);
                left.extend(messages(&mut out));
                let held: usize = msgs[left.len()..=i].iter().map(cost).sum();
                if limit == usize::MAX {
                    assert!(left.is_empty(), "nothing passes the waiting request");
                } else {
                    assert!(held <= limit || left.len() == i, "{held} bytes held at {i}");
                }
            }
            r.flush(&mut out);
            left.extend(messages(&mut out));
            let want: Vec<u64> = msgs.iter().map(|m| m.info.index).collect();
            assert_eq!(left, want, "every message leaves once, in order");
        }
    }

    /// How a reorder buffer treats held messages' trees.
    #[derive(Clone, Copy, PartialEq)]
    enum Hold {
        Trees,
        Bytes,
        /// Tree JSON within this budget, then bytes.
        Json(usize),
    }

    /// What a reorder buffer counts matches what it holds: the costs add up
    /// to `held_cost`, each covers its message's bytes and footprint, the
    /// tree JSON kept adds up to `json_held` and `json_queued`, and with a
    /// limit the held messages and their JSON stay within it.
    fn assert_accounting(r: &Reorder) {
        let costs: usize = r.queue.iter().map(|s| s.3).sum();
        assert_eq!(costs, r.held_cost);
        let json = |h: Option<&Held>| h.and_then(|h| h.json.as_ref()).map_or(0, Vec::len);
        let queued: usize = r.queue.iter().map(|s| json(s.2.as_ref())).sum();
        let released: usize = r.released.iter().map(|(_, h)| json(Some(h))).sum();
        assert_eq!(queued, r.json_queued);
        assert_eq!(queued + released, r.json_held);
        for (m, _, h, cost) in &r.queue {
            assert!(*cost >= m.raw.bytes.len() + held_footprint(m, h.as_ref()));
            assert!(
                r.redecode.is_none() || m.decoded.is_none(),
                "trees given up"
            );
        }
        if r.cost_cap != usize::MAX {
            assert!(r.held_cost + r.json_queued <= r.cost_cap);
        }
        assert!(r.json_held <= r.json_budget || r.redecode.is_none() || r.json_held == 0);
    }

    /// Every message's facts and tree (as JSON) after a reorder buffer
    /// (checking its accounting at every step), limited to `limit` bytes.
    /// Also: how many trees came back as JSON.
    fn through_reorder(
        path: &std::path::Path,
        hold: Hold,
        limit: usize,
    ) -> (Vec<(MessageInfo, String)>, usize) {
        let cfg = AnalyzerConfig {
            pipeline: PipelineConfig::with_ports(Ports::Any),
            keep_trees: true,
            ..AnalyzerConfig::default()
        };
        let opts = cfg.decode.clone();
        let mut a = Analyzer::new(cfg);
        let mut reorder = Reorder::new(64);
        reorder.limit_bytes(limit);
        match hold {
            Hold::Trees => {}
            Hold::Bytes => reorder.hold_without_trees(opts),
            Hold::Json(budget) => reorder.hold_as_json(opts, budget),
        }
        let mut src = FileSource::open(path.to_str().expect("utf-8 path")).expect("open");
        let (mut out, mut ready, mut got) = (Vec::new(), Vec::new(), Vec::new());
        let mut from_json = 0;
        let mut take = |ready: &mut Vec<Output>, reorder: &mut Reorder| {
            for o in ready.drain(..) {
                if let Output::Message(mut m) = o {
                    let json = match hold {
                        Hold::Json(_) => reorder.restore_json(&mut m),
                        _ => {
                            reorder.restore(&mut m);
                            None
                        }
                    };
                    from_json += usize::from(json.is_some());
                    let tree = match json {
                        Some(j) => {
                            let mut full = Vec::new();
                            crate::kafka::tree::json::expand_keys(&mut full, &j);
                            String::from_utf8(full).expect("utf-8 JSON")
                        }
                        None => m
                            .decoded
                            .as_ref()
                            .map(|d| d.root.to_json().to_string())
                            .unwrap_or_default(),
                    };
                    got.push((m.info.clone(), tree));
                }
            }
        };
        loop {
            match src.poll() {
                Ok(Polled::Frame(f)) => a.push(&f, &mut out),
                Ok(Polled::Timeout) => continue,
                _ => break,
            }
            for o in out.drain(..) {
                reorder.push(o, &mut ready);
                assert_accounting(&reorder);
            }
            take(&mut ready, &mut reorder);
        }
        a.finish(&mut out);
        for o in out.drain(..) {
            reorder.push(o, &mut ready);
        }
        reorder.flush(&mut ready);
        take(&mut ready, &mut reorder);
        (got, from_json)
    }

    #[test]
    fn held_messages_get_the_same_trees_back() {
        let mut json_trees = 0;
        let mut n = 0;
        for p in crate::test_captures::shipped() {
            let (eager, _) = through_reorder(&p, Hold::Trees, usize::MAX);
            // A small JSON budget: some held messages keep JSON, others bytes.
            for hold in [Hold::Bytes, Hold::Json(64 * 1024), Hold::Json(usize::MAX)] {
                let (lazy, n_json) = through_reorder(&p, hold, usize::MAX);
                if hold == Hold::Json(usize::MAX) {
                    json_trees += n_json;
                }
                assert_eq!(eager.len(), lazy.len(), "{}", p.display());
                for (a, b) in eager.iter().zip(&lazy) {
                    assert_eq!(a, b, "{}", p.display());
                }
            }
            n += eager.len();
        }
        assert!(n > 0);
        assert!(json_trees > 0);
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

    /// Under a byte limit, tree JSON takes only what the held messages leave
    /// (giving it up when later messages need the room) and never changes
    /// what is printed: the same messages leave, in the same order and with
    /// the same trees, as when held messages keep only their bytes.
    #[test]
    fn tree_json_fits_in_the_byte_limit() {
        let mut json_trees = 0;
        for p in crate::test_captures::shipped() {
            for limit in [16 * HELD_OVERHEAD, 256 * 1024] {
                let (bytes, _) = through_reorder(&p, Hold::Bytes, limit);
                let (json, n_json) = through_reorder(&p, Hold::Json(usize::MAX), limit);
                assert_eq!(bytes, json, "{} limit {limit}", p.display());
                json_trees += n_json;
            }
        }
        assert!(json_trees > 0);
    }

    /// A held message whose bytes are a slice of a larger buffer (as a file
    /// read buffer's frames are) keeps a copy of them, not the buffer.
    #[test]
    fn a_held_message_keeps_only_its_own_bytes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures/a2-confluent-compression-codecs.pcap");
        let cfg = crate::test_captures::full_trees();
        let opts = cfg.decode.clone();
        let mut msgs = crate::test_captures::messages(&path, cfg);
        assert!(msgs.len() > 3);
        for hold in [Hold::Trees, Hold::Bytes, Hold::Json(usize::MAX)] {
            let mut r = Reorder::new(1 << 16);
            match hold {
                Hold::Trees => {}
                Hold::Bytes => r.hold_without_trees(opts.clone()),
                Hold::Json(b) => r.hold_as_json(opts.clone(), b),
            }
            let mut out = Vec::new();
            let mut buffers = Vec::new();
            for (i, m) in msgs.iter_mut().enumerate() {
                // A request waiting for its response holds everything after it.
                m.info.kind = if i == 0 {
                    Kind::Request
                } else {
                    Kind::Response
                };
                m.info.expects_response = i == 0;
                m.info.paired = false;
                let mut big = bytes::BytesMut::zeroed(1 << 20);
                big[1000..1000 + m.raw.bytes.len()].copy_from_slice(&m.raw.bytes);
                let big = big.freeze();
                let mut m = Box::new(m.clone());
                m.raw.bytes = big.slice(1000..1000 + m.raw.bytes.len());
                r.push(Output::Message(m), &mut out);
                assert_accounting(&r);
                buffers.push(big);
            }
            assert!(out.is_empty(), "all held");
            for (big, held) in buffers.iter_mut().zip(&r.queue) {
                assert!(big.is_unique(), "the held message dropped its slice");
                assert_eq!(
                    held.0.raw.bytes,
                    big.slice(1000..1000 + held.0.raw.bytes.len())
                );
            }
            r.flush(&mut out);
            assert_eq!(out.len(), msgs.len());
        }
    }
}
