//! The schema-driven decoder: one interpreter for every API key and version.
//!
//! Place in the data path: framing hands it one size-prefixed message; it
//! returns a [`Decoded`]: the header facts and the field tree. Requests are
//! self-describing (their header names api key and version); a response is
//! decoded with the api key and version of the request it answers.
//!
//! Invariants:
//! - nothing here panics or allocates from a length read off the wire before
//!   checking it against the bytes that remain;
//! - every node's span is written when the node is made, offsets counted from
//!   the first byte of the 4-byte size prefix;
//! - on malformed input the tree keeps everything that decoded and ends in a
//!   node with `error` set; [`Decoded::error`] names what, where and the field path;
//! - an unknown api key or a version beyond the tables decodes the header and
//!   says so; the body is not guessed at.

#![deny(clippy::indexing_slicing)]

use std::fmt;

use super::errors::error_name;
use super::records::{count_record_set, decode_record_set, SetCounts};
use super::schema::{
    self, Elem, FieldDef, FieldKind, Marks, MessageDef, MessageKind, Prim, StructDef,
};
use super::stream_json::{JsonSink, Out, Stream};
use super::stream_text::TextStream;
use super::tree::{
    indexed_text, ByteSource, Node, Parts, Role, SmallTexts, Text, Value, MAX_RESERVED_CHILDREN,
};
use super::wire::{Reader, WireError};

/// Limits and switches for decoding one message.
#[derive(Clone, Debug)]
pub struct DecodeOptions {
    /// Most bytes one compressed batch (or legacy wrapper) may decompress to;
    /// past it the batch is marked and its records are not shown. Default 64 MiB.
    pub max_decompressed: usize,
    /// Decode record sets into batches and records (off for summaries).
    pub records: bool,
    /// With `records`: decode each batch's header (and decompress compressed
    /// batches, so their byte sources and sizes are known) but not the records
    /// inside — what `stats` reads. Off by default.
    pub records_headers_only: bool,
    /// With `records`: a RecordBatch v2's header fields are written as JSON
    /// while decoding (a `Value::Json` node), and each run of clean records
    /// is only checked and becomes one `Value::Records` node, written as JSON
    /// from the message's bytes and byte sources by `Node::write_json_in`,
    /// instead of a node per field. Only for output that is the tree's JSON
    /// and nothing else (`print -V --format jsonl`): the JSON is the same,
    /// but nothing else can read those records. Off by default.
    pub records_json: bool,
    /// With `records`: each run of clean records of a RecordBatch v2 is
    /// only checked and becomes one `Value::Records` node, whose records'
    /// nodes `tree::write_text_in` makes from their bytes as it writes them
    /// (and `Node::write_json_in` writes their JSON), so that the tree of a
    /// message of thousands of records holds none of their nodes. Only for
    /// output that is the tree's text or JSON and nothing else (`print -V`
    /// of big messages). Off by default.
    pub records_deferred: bool,
    /// Show SASL passwords, SCRAM proofs and tokens instead of redacting them.
    pub show_secrets: bool,
    /// The summary scan notes the topic names a message names in
    /// [`Summary::topics`]. On by default; off where nobody reads them
    /// (`stats`' responses, `AnalyzerConfig::response_topics`): a vector and
    /// a string fewer per message. Topic ids and the placed facts' topics
    /// are noted either way.
    pub summary_topics: bool,
    /// The declared sizes of compressed batches remembered by their CRC
    /// while record sets are counted (`stats`): made by the
    /// [`crate::analyzer::Analyzer`] that counts them and shared with its
    /// request scanner. `None`: every size is worked out.
    pub batch_sizes: Option<std::sync::Arc<super::records::BatchSizes>>,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_decompressed: 64 << 20,
            records: true,
            records_headers_only: false,
            records_json: false,
            records_deferred: false,
            show_secrets: false,
            summary_topics: true,
            batch_sizes: None,
        }
    }
}

impl DecodeOptions {
    /// Whether runs of clean records become `Value::Records` nodes
    /// (`records_json` or `records_deferred`).
    pub(crate) fn records_deferred(&self) -> bool {
        self.records_json || self.records_deferred
    }
}

/// Most elements an array may claim when its elements can be zero bytes long;
/// beyond it the count is treated as hostile rather than looped over.
const MAX_ZERO_SIZE_ELEMENTS: usize = 10_000;

/// Why and where decoding stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset of the failing read, from the first byte of the size prefix
    /// (or within the byte source named by `source`).
    pub offset: usize,
    /// The byte source of `offset` (0 = the message).
    pub source: u16,
    /// The field path, e.g. `ProduceRequest.TopicData[0].Name`.
    pub path: String,
    /// What was wrong.
    pub what: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at 0x{:04x}", self.what, self.offset)?;
        if self.source != 0 {
            write!(f, " of byte source #{}", self.source)?;
        }
        if !self.path.is_empty() {
            write!(f, " in {}", self.path)?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

/// Request or response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Client to broker.
    Request,
    /// Broker to client.
    Response,
}

/// One decoded message.
#[derive(Clone, Debug)]
pub struct Decoded {
    /// Request or response.
    pub kind: Kind,
    /// The api key (from the header for requests, from the caller for responses).
    pub api_key: Option<i16>,
    /// The api version.
    pub api_version: Option<i16>,
    /// The correlation id, when the header had one.
    pub correlation_id: Option<i32>,
    /// The request's client id (requests with header v1+ only).
    pub client_id: Option<String>,
    /// The field tree; its root spans the whole message.
    pub root: Node,
    /// Decompressed byte sources that nodes with `source > 0` point into.
    pub sources: Vec<ByteSource>,
    /// The first problem, or `None` when every byte decoded.
    pub error: Option<DecodeError>,
    /// Topic names the message mentions (fields of entity type topicName), in order, deduplicated.
    pub topics: Vec<String>,
    /// Topic ids the message mentions (fields named `TopicId`), deduplicated.
    pub topic_ids: Vec<[u8; 16]>,
    /// For a message read by the summary scan without its tree, with
    /// [`DecodeOptions::records_headers_only`]: the placed facts `stats`
    /// would otherwise read from the tree. `None` for decoded trees.
    pub facts: Option<Box<ScanFacts>>,
}

/// Most topic names or ids remembered per message.
const MAX_TOPICS: usize = 64;

impl Decoded {
    /// The body node (the last child of the root named like the message), if decoded that far.
    pub fn body(&self) -> Option<&Node> {
        self.root.children.iter().find(|n| n.ty == "struct")
    }
}

/// Decodes a request: `msg` is one whole message including its 4-byte size prefix.
pub fn decode_request(msg: &[u8], opts: &DecodeOptions) -> Decoded {
    let d = decode_request_with(msg, opts, None);
    // ControlledShutdown v0 is the one request defined with header v0 (no client
    // id), but some clients send it with header v1; take whichever decodes whole.
    if d.error.is_some() && d.api_key == Some(7) && d.api_version == Some(0) {
        let v1 = decode_request_with(msg, opts, Some(1));
        if v1.error.is_none() {
            return v1;
        }
    }
    d
}

/// [`decode_request`]'s tree written as JSON into `sink` while it is decoded
/// (the module `stream_json`): the returned root has no children. The JSON
/// is [`Node::write_json_in`]'s for [`decode_request`]'s tree when the
/// result has no error; otherwise it is to be dropped.
pub fn decode_request_json(msg: &[u8], opts: &DecodeOptions, sink: &mut JsonSink<'_>) -> Decoded {
    decode_request_into(msg, opts, None, Some(Stream::Json(sink)))
}

/// [`decode_request`]'s tree measured or written as text by `stream` while
/// it is decoded (the module `stream_text`), as [`decode_request_json`]
/// writes it as JSON.
pub fn decode_request_text(
    msg: &[u8],
    opts: &DecodeOptions,
    stream: &mut TextStream<'_>,
) -> Decoded {
    decode_request_into(msg, opts, None, Some(Stream::Text(stream)))
}

fn decode_request_with(msg: &[u8], opts: &DecodeOptions, header: Option<i16>) -> Decoded {
    decode_request_into(msg, opts, header, None)
}

/// A request decoded into a tree, or with `json` written as JSON.
fn decode_request_into(
    msg: &[u8],
    opts: &DecodeOptions,
    header: Option<i16>,
    mut json: Option<Stream<'_, '_>>,
) -> Decoded {
    let mut d = Decoder::new(msg, opts);
    let mut out = Decoded {
        kind: Kind::Request,
        api_key: None,
        api_version: None,
        correlation_id: None,
        client_id: None,
        root: Node::new(
            "Request",
            "message",
            Value::None,
            0,
            msg.len(),
            Role::Message,
        ),
        sources: Vec::new(),
        error: None,
        topics: Vec::new(),
        topic_ids: Vec::new(),
        facts: None,
    };
    let mut children = Vec::new();
    let mut sink = Out::root(json.as_mut(), &mut children);
    let Some(end) = d.frame(&mut sink) else {
        out.root.children = children;
        out.error = d.error;
        return out;
    };
    let mut r = Reader::new(msg.get(..end).unwrap_or(msg));
    let _ = r.take(4);

    // Peek api key and version to choose the header version; they are decoded
    // again as header fields below.
    let peek = |at: usize| {
        let mut r = Reader::new(msg.get(at..).unwrap_or(&[]));
        r.i16().ok()
    };
    let (peek_key, peek_ver) = (peek(4), peek(6));
    let def = match (peek_key, peek_ver) {
        (Some(k), Some(v)) => schema::message(k, MessageKind::Request, v),
        _ => None,
    };
    let hv = match (header, peek_key, peek_ver) {
        (Some(h), _, _) => h,
        (None, Some(k), Some(v)) if def.is_some() => schema::request_header_version(k, v),
        _ => 1,
    };
    out.api_key = peek_key;
    out.api_version = peek_ver;
    let header_start = r.pos();
    let mut hnode = Node::new(
        "RequestHeader",
        version_text(&HEADER_VERSIONS, hv, |v| format!("v{v}")),
        Value::None,
        header_start,
        0,
        Role::Header,
    )
    .with_about("common request header");
    let hres = {
        let mut kids = sink.open(&mut hnode.children);
        d.request_header(&mut r, hv, &mut kids, &mut out)
    };
    hnode.length = r.pos() - header_start;
    sink.close(hnode);
    if hres.is_ok() {
        match (def, peek_key, peek_ver) {
            (Some(def), _, Some(v)) => {
                out.root.name = def.name.into();
                out.root.ty = version_text(&MESSAGE_VERSIONS, v, |v| format!("message v{v}"));
                d.body(&mut r, def, v, Role::RequestBody, &mut sink);
            }
            (None, Some(k), Some(v)) => {
                d.unknown_body(&mut r, k, v, MessageKind::Request, &mut sink);
            }
            _ => {}
        }
    }
    d.finish(&mut r, end, &mut sink);
    match json {
        Some(Stream::Json(j)) => j.end_root(&mut out.root),
        Some(Stream::Text(t)) => t.end_root(&mut out.root),
        None => out.root.children = children,
    }
    if d.error.is_some() {
        fit_spans(&mut out.root);
    }
    out.sources = d.sources;
    out.error = d.error;
    out.topics = d.topics;
    out.topic_ids = d.topic_ids;
    out
}

/// Decodes a response to a request with `api_key` and `api_version`: `msg` is one
/// whole message including its 4-byte size prefix.
pub fn decode_response(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
) -> Decoded {
    decode_response_into(msg, api_key, api_version, opts, None)
}

/// [`decode_response`]'s tree written as JSON into `sink` while it is
/// decoded, as [`decode_request_json`] does for requests.
pub fn decode_response_json(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
    sink: &mut JsonSink<'_>,
) -> Decoded {
    decode_response_into(msg, api_key, api_version, opts, Some(Stream::Json(sink)))
}

/// [`decode_response`]'s tree measured or written as text by `stream` while
/// it is decoded, as [`decode_request_text`] does for requests.
pub fn decode_response_text(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
    stream: &mut TextStream<'_>,
) -> Decoded {
    decode_response_into(msg, api_key, api_version, opts, Some(Stream::Text(stream)))
}

/// A response decoded into a tree, or with `json` written as JSON.
fn decode_response_into(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
    mut json: Option<Stream<'_, '_>>,
) -> Decoded {
    let mut d = Decoder::new(msg, opts);
    let def = schema::message(api_key, MessageKind::Response, api_version);
    let mut out = Decoded {
        kind: Kind::Response,
        api_key: Some(api_key),
        api_version: Some(api_version),
        correlation_id: None,
        client_id: None,
        root: Node::new(
            def.map_or("Response", |m| m.name),
            version_text(&MESSAGE_VERSIONS, api_version, |v| format!("message v{v}")),
            Value::None,
            0,
            msg.len(),
            Role::Message,
        ),
        sources: Vec::new(),
        error: None,
        topics: Vec::new(),
        topic_ids: Vec::new(),
        facts: None,
    };
    let mut children = Vec::new();
    let mut sink = Out::root(json.as_mut(), &mut children);
    let Some(end) = d.frame(&mut sink) else {
        out.root.children = children;
        out.error = d.error;
        return out;
    };
    let mut r = Reader::new(msg.get(..end).unwrap_or(msg));
    let _ = r.take(4);
    let hv = schema::response_header_version(api_key, api_version);
    let header_start = r.pos();
    let mut hnode = Node::new(
        "ResponseHeader",
        version_text(&HEADER_VERSIONS, hv, |v| format!("v{v}")),
        Value::None,
        header_start,
        0,
        Role::Header,
    )
    .with_about(if api_key == 18 {
        "common response header (always v0 for ApiVersions)"
    } else {
        "common response header"
    });
    let hres = {
        let mut kids = sink.open(&mut hnode.children);
        d.response_header(&mut r, hv, &mut kids, &mut out)
    };
    hnode.length = r.pos() - header_start;
    sink.close(hnode);
    if hres.is_ok() {
        match def {
            Some(def) => d.body(&mut r, def, api_version, Role::ResponseBody, &mut sink),
            None => d.unknown_body(
                &mut r,
                api_key,
                api_version,
                MessageKind::Response,
                &mut sink,
            ),
        }
    }
    d.finish(&mut r, end, &mut sink);
    match json {
        Some(Stream::Json(j)) => j.end_root(&mut out.root),
        Some(Stream::Text(t)) => t.end_root(&mut out.root),
        None => out.root.children = children,
    }
    if d.error.is_some() {
        fit_spans(&mut out.root);
    }
    out.sources = d.sources;
    out.error = d.error;
    out.topics = d.topics;
    out.topic_ids = d.topic_ids;
    out
}

/// The facts a summary needs from one message, read without building its tree.
///
/// [`summarize_request`] and [`summarize_response`] walk the schema exactly as
/// the decoder does but keep only these facts. They answer only for messages
/// that decode completely and cleanly; for anything else (malformed, unknown
/// api or version, bytes beyond the body, embedded consumer protocols) they
/// return `None` and the caller decodes the full tree, so a summary never
/// differs from what the tree would say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// The api key (from the header for requests, from the caller for responses).
    pub api_key: Option<i16>,
    /// The api version.
    pub api_version: Option<i16>,
    /// The correlation id.
    pub correlation_id: Option<i32>,
    /// The request's client id.
    pub client_id: Option<String>,
    /// The body's top-level `ThrottleTimeMs`.
    pub throttle_time_ms: Option<i32>,
    /// The body's top-level `Acks` (Produce requests).
    pub acks: Option<i64>,
    /// Every non-zero `*ErrorCode` of the body, in byte order (as `analyzer::response_facts`).
    pub error_codes: Vec<i16>,
    /// As [`Decoded::topics`].
    pub topics: Vec<String>,
    /// As [`Decoded::topic_ids`].
    pub topic_ids: Vec<[u8; 16]>,
    /// With [`DecodeOptions::records_headers_only`]: every non-zero error code
    /// and every record set (batch headers only) with its place, as `stats`
    /// reads them from a tree. Messages with record-level errors
    /// (`BatchIndex`) or a record set that does not decode cleanly are not
    /// summarized.
    pub facts: Option<Box<ScanFacts>>,
}

/// The topic a place names: a non-empty `Name`/`Topic`/`TopicName` string,
/// else a non-zero `TopicId` (resolved to a name by whoever knows the names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScanTopic {
    /// A topic name.
    Name(String),
    /// A topic id.
    Id([u8; 16]),
}

/// Where a fact sits: as `stats::facts::place` over a tree — the nearest
/// enclosing struct naming a partition and a topic (siblings first, then
/// each ancestor's fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanPlace {
    /// The topic.
    pub topic: Option<ScanTopic>,
    /// The partition (`PartitionIndex`, `Partition` or `Index`).
    pub partition: Option<i32>,
}

/// A non-zero `*ErrorCode` of a summarized message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanError {
    /// The code.
    pub code: i16,
    /// Its place.
    pub place: ScanPlace,
    /// Inside an element of the body (not a top-level field).
    pub nested: bool,
}

/// A `records` field of a summarized message.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanSet {
    /// Its place.
    pub place: ScanPlace,
    /// Bytes of the record set (without the length prefix; 0 when null).
    pub bytes: usize,
    /// What the set holds, counted without nodes (complete v2 batches), or…
    pub counts: Option<SetCounts>,
    /// …its batch and legacy message nodes (headers only), as under the
    /// tree's `records` node.
    pub nodes: Vec<Node>,
}

/// The placed facts of a message read without its tree (see [`Summary::facts`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanFacts {
    /// Non-zero error codes, in byte order.
    pub errors: Vec<ScanError>,
    /// Record sets, in byte order.
    pub sets: Vec<ScanSet>,
    /// Byte sources of the decompressed payloads (lengths only).
    pub sources: Vec<ByteSource>,
    /// The body's top-level `Acks` (as [`Summary::acks`]).
    pub acks: Option<i64>,
    /// Open structs, innermost last: the first `depth` entries (the others
    /// are kept to be reused, their names' buffers with them).
    frames: Vec<ScanFrame>,
    depth: usize,
    /// The facts whose place is still looking for a topic: (index of the
    /// open struct they wait on, is a set, index), in nondecreasing order of
    /// the struct, so that the ones a closing struct settles are the last.
    waiting: Vec<Waiting>,
    /// How many known tagged fields the scan is inside.
    tagged_depth: u32,
}

/// A fact waiting for its topic: (the open struct it waits on, is a set,
/// index among the sets or the errors).
type Waiting = (usize, bool, usize);

/// An open struct of the scan: what it names so far.
#[derive(Clone, Debug, Default, PartialEq)]
struct ScanFrame {
    /// Its topic name (valid when `named`): a buffer reused from message to
    /// message.
    name: String,
    named: bool,
    id: Option<[u8; 16]>,
    partition: Option<i32>,
}

/// A struct's fewest bytes (`Decoder::min_struct_size`) by (address,
/// version, flexible), in a small direct-mapped table per thread; address 0
/// is no struct's, so an empty entry never matches.
type MinSizes = [(usize, i16, bool, usize); 64];

thread_local! {
    static MIN_SIZES: std::cell::RefCell<MinSizes> =
        const { std::cell::RefCell::new([(0, 0, false, 0); 64]) };

    /// The open-struct stack and waiting list of the last summary scan on
    /// this thread, lent to the next one: a few allocations fewer per
    /// message.
    static SCAN_SCRATCH: std::cell::Cell<(Vec<ScanFrame>, Vec<Waiting>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// A scratch topic-name buffer keeps at most this much room (Kafka's topic
/// names are at most 249 bytes).
const KEPT_NAME: usize = 256;

/// The scratch waiting list keeps at most this much room.
const KEPT_WAITING: usize = 1024;

impl ScanFacts {
    /// Empty facts, with the thread's scratch buffers.
    fn with_scratch() -> Box<ScanFacts> {
        let (frames, mut waiting) = SCAN_SCRATCH.take();
        waiting.clear();
        Box::new(ScanFacts {
            frames,
            waiting,
            ..ScanFacts::default()
        })
    }

    /// Gives the scratch buffers back to the thread (the facts keep none).
    fn return_scratch(&mut self) {
        self.depth = 0;
        let mut waiting = std::mem::take(&mut self.waiting);
        waiting.clear();
        // What one hostile message grew is not kept: names beyond the
        // longest topic name Kafka allows, waiting lists beyond a few sets.
        waiting.shrink_to(KEPT_WAITING);
        let mut frames = std::mem::take(&mut self.frames);
        for f in &mut frames {
            f.name.shrink_to(KEPT_NAME);
        }
        SCAN_SCRATCH.set((frames, waiting));
    }

    fn open(&mut self) {
        match self.frames.get_mut(self.depth) {
            Some(f) => {
                f.named = false;
                f.id = None;
                f.partition = None;
            }
            None => self.frames.push(ScanFrame::default()),
        }
        self.depth += 1;
    }

    /// The innermost open struct.
    fn innermost(&mut self) -> Option<&mut ScanFrame> {
        let d = self.depth.checked_sub(1)?;
        self.frames.get_mut(d)
    }

    /// Closes the innermost struct: the facts waiting on it take its
    /// partition and topic where they have none yet; those still without a
    /// topic wait for the enclosing struct.
    fn close(&mut self) {
        let Some(d) = self.depth.checked_sub(1) else {
            return;
        };
        self.depth = d;
        let Some(f) = self.frames.get(d) else { return };
        let first = self
            .waiting
            .iter()
            .rposition(|w| w.0 != d)
            .map_or(0, |i| i + 1);
        let mut kept = first;
        for r in first..self.waiting.len() {
            let Some(&(_, is_set, i)) = self.waiting.get(r) else {
                break;
            };
            let place = if is_set {
                self.sets.get_mut(i).map(|s| &mut s.place)
            } else {
                self.errors.get_mut(i).map(|e| &mut e.place)
            };
            let Some(place) = place else { continue };
            if place.partition.is_none() {
                place.partition = f.partition;
            }
            if place.topic.is_none() {
                place.topic = match (f.named, f.id) {
                    (true, _) => Some(ScanTopic::Name(f.name.clone())),
                    (false, Some(id)) => Some(ScanTopic::Id(id)),
                    (false, None) => None,
                };
            }
            if place.topic.is_none() && d > 0 {
                if let Some(w) = self.waiting.get_mut(kept) {
                    *w = (d - 1, is_set, i);
                }
                kept += 1;
            }
        }
        self.waiting.truncate(kept);
    }

    fn wait(&mut self, is_set: bool, i: usize) {
        if let Some(d) = self.depth.checked_sub(1) {
            self.waiting.push((d, is_set, i));
        }
    }

    fn error(&mut self, code: i16) {
        let nested = self.depth > 1;
        self.errors.push(ScanError {
            code,
            place: ScanPlace::default(),
            nested,
        });
        self.wait(false, self.errors.len() - 1);
    }

    fn set(&mut self, bytes: usize, counts: Option<SetCounts>, nodes: Vec<Node>) {
        self.sets.push(ScanSet {
            place: ScanPlace::default(),
            bytes,
            counts,
            nodes,
        });
        self.wait(true, self.sets.len() - 1);
    }

    fn int_field(&mut self, marks: Marks, v: i64) {
        if !marks.has(Marks::PLACE_PARTITION) {
            return;
        }
        if let (Some(f), Ok(p)) = (self.innermost(), i32::try_from(v)) {
            if f.partition.is_none() {
                f.partition = Some(p);
            }
        }
    }

    /// A non-empty string field marked [`Marks::PLACE_TOPIC`], as text.
    fn place_name(&mut self, name: &str) {
        if let Some(f) = self.innermost() {
            if !f.named {
                f.named = true;
                f.name.clear();
                f.name.push_str(name);
            }
        }
    }

    fn uuid_field(&mut self, marks: Marks, u: [u8; 16]) {
        if !marks.has(Marks::TOPIC_ID) || u == [0; 16] {
            return;
        }
        if let Some(f) = self.innermost() {
            if f.id.is_none() {
                f.id = Some(u);
            }
        }
    }
}

/// Api keys whose bytes fields embed the consumer protocol (JoinGroup, SyncGroup):
/// always decoded in full.
const EMBEDDING_APIS: [i16; 2] = [11, 14];

/// The facts of a request that decodes cleanly, without its tree; `None` otherwise.
pub fn summarize_request(msg: &[u8], opts: &DecodeOptions) -> Option<Summary> {
    if opts.records {
        return None;
    }
    let mut d = Decoder::new(msg, opts);
    let mut r = d.scan_frame()?;
    let mut sum = Summary::default();
    let mut peek = Reader::new(msg.get(4..).unwrap_or(&[]));
    let key = peek.i16().ok()?;
    let ver = peek.i16().ok()?;
    if EMBEDDING_APIS.contains(&key) {
        return None;
    }
    let def = schema::message(key, MessageKind::Request, ver)?;
    let hv = schema::request_header_version(key, ver);
    sum.api_key = Some(r.i16().ok()?);
    sum.api_version = Some(r.i16().ok()?);
    sum.correlation_id = Some(r.i32().ok()?);
    if hv >= 1 {
        let len = r.i16().ok()?;
        if len >= 0 {
            let b = r.take(len as usize).ok()?;
            sum.client_id = Some(String::from_utf8_lossy(b).into_owned());
        }
    }
    if hv >= 2 {
        d.flexible = true;
        d.version = hv;
        d.scan_tagged(&mut r, schema::REQUEST_HEADER.body, &mut sum, false)?;
    }
    if opts.records_headers_only {
        sum.facts = Some(ScanFacts::with_scratch());
    }
    let body = d.scan_body(&mut r, def, ver, &mut sum);
    if let Some(x) = &mut sum.facts {
        x.return_scratch();
        x.acks = sum.acks;
    }
    body?;
    (r.remaining() == 0).then_some(sum)
}

/// The facts of a response to (`api_key`, `api_version`) that decodes cleanly,
/// without its tree; `None` otherwise.
pub fn summarize_response(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
) -> Option<Summary> {
    if opts.records || EMBEDDING_APIS.contains(&api_key) {
        return None;
    }
    let def = schema::message(api_key, MessageKind::Response, api_version)?;
    let mut d = Decoder::new(msg, opts);
    let mut r = d.scan_frame()?;
    let mut sum = Summary {
        api_key: Some(api_key),
        api_version: Some(api_version),
        ..Summary::default()
    };
    sum.correlation_id = Some(r.i32().ok()?);
    let hv = schema::response_header_version(api_key, api_version);
    if hv >= 1 {
        d.flexible = true;
        d.version = hv;
        d.scan_tagged(&mut r, schema::RESPONSE_HEADER.body, &mut sum, false)?;
    }
    if opts.records_headers_only {
        sum.facts = Some(ScanFacts::with_scratch());
    }
    let body = d.scan_body(&mut r, def, api_version, &mut sum);
    if let Some(x) = &mut sum.facts {
        x.return_scratch();
    }
    body?;
    (r.remaining() == 0).then_some(sum)
}

impl<'a> Decoder<'a> {
    /// The reader over the message after its size prefix, when the size is exact.
    fn scan_frame(&self) -> Option<Reader<'a>> {
        let mut r = Reader::new(self.msg);
        let size = usize::try_from(r.i32().ok()?).ok()?;
        (size.checked_add(4)? == self.msg.len()).then_some(r)
    }

    fn scan_body(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static MessageDef,
        version: i16,
        sum: &mut Summary,
    ) -> Option<()> {
        self.version = version;
        self.flexible = def.is_flexible(version);
        self.api_key = def.api_key;
        self.scan_fields(r, def.body, sum, true)
    }

    /// As [`Decoder::fields`]; `top` marks the body's own fields.
    fn scan_fields(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        sum: &mut Summary,
        top: bool,
    ) -> Option<()> {
        if let Some(x) = &mut sum.facts {
            x.open();
        }
        for f in def.fields {
            if !f.versions.contains(self.version) || f.tagged.contains(self.version) {
                continue;
            }
            self.scan_field(r, f, sum, top)?;
        }
        if self.flexible {
            self.scan_tagged(r, def, sum, true)?;
        }
        if let Some(x) = &mut sum.facts {
            x.close();
        }
        Some(())
    }

    // Inlined into `scan_fields`' loop, with `scan_prim`: a call per field
    // and its register saves were about a tenth of the scan's instructions.
    // `scan_array`, the recursion's other step, stays out of line.
    #[inline(always)]
    fn scan_field(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        sum: &mut Summary,
        top: bool,
    ) -> Option<()> {
        match f.kind {
            FieldKind::Prim(p) => self.scan_prim(r, f, p, sum, top),
            FieldKind::Struct(s) => {
                if f.nullable.contains(self.version) && r.i8().ok()? < 0 {
                    return Some(());
                }
                self.scan_fields(r, s, sum, false)
            }
            FieldKind::Array(e) => self.scan_array(r, f, e, sum),
        }
    }

    #[inline(always)]
    fn scan_prim(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        p: Prim,
        sum: &mut Summary,
        top: bool,
    ) -> Option<()> {
        match p {
            Prim::String | Prim::Bytes | Prim::Records => {
                let flex = self.field_flexible(f);
                let lp = self.length_prefix(r, flex, p != Prim::String).ok()?;
                let at = r.pos();
                let b = match lp.len {
                    Some(len) => Some(r.take(len).ok()?),
                    None => None,
                };
                if let (Some(b), Prim::String) = (b, p) {
                    // A topic's name is read as text once, for both uses.
                    let topic = f.marks.has(Marks::TOPIC_NAME) && self.opts.summary_topics;
                    let place = sum.facts.is_some() && f.marks.has(Marks::PLACE_TOPIC);
                    if (topic || place) && !b.is_empty() {
                        let name = name_text(b);
                        if topic {
                            scan_note_topic(sum, &name);
                        }
                        if let (true, Some(x)) = (place, &mut sum.facts) {
                            x.place_name(&name);
                        }
                    }
                }
                if let Some(x) = &mut sum.facts {
                    match (p, b) {
                        // Offsets inside a tagged field are not the message's.
                        (Prim::Records, _) if x.tagged_depth > 0 => return None,
                        (Prim::Records, b) => self.scan_records(x, b.unwrap_or(&[]), at)?,
                        _ => {}
                    }
                }
            }
            Prim::Int8 | Prim::Int16 | Prim::Int32 | Prim::Int64 => {
                let v: i64 = match p {
                    Prim::Int8 => r.i8().ok()?.into(),
                    Prim::Int16 => r.i16().ok()?.into(),
                    Prim::Int32 => r.i32().ok()?.into(),
                    _ => r.i64().ok()?,
                };
                if f.marks.has(Marks::ERROR_CODE) && v != 0 {
                    if let Ok(c) = i16::try_from(v) {
                        sum.error_codes.push(c);
                        if let Some(x) = &mut sum.facts {
                            x.error(c);
                        }
                    }
                }
                if let Some(x) = &mut sum.facts {
                    // Record-level errors (KIP-467) are read from the tree.
                    if f.marks.has(Marks::BATCH_INDEX) {
                        return None;
                    }
                    x.int_field(f.marks, v);
                }
                if top {
                    if f.marks.has(Marks::THROTTLE) && sum.throttle_time_ms.is_none() {
                        sum.throttle_time_ms = i32::try_from(v).ok();
                    } else if f.marks.has(Marks::ACKS) && sum.acks.is_none() {
                        sum.acks = Some(v);
                    }
                }
            }
            Prim::Uuid => {
                let u = r.uuid().ok()?;
                if let Some(x) = &mut sum.facts {
                    x.uuid_field(f.marks, u);
                }
                if f.marks.has(Marks::TOPIC_ID)
                    && u != [0; 16]
                    && sum.topic_ids.len() < MAX_TOPICS
                    && !sum.topic_ids.contains(&u)
                {
                    sum.topic_ids.push(u);
                }
            }
            _ => {
                read_fixed(r, p).ok()?;
            }
        }
        Some(())
    }

    /// A record set of the summary scan: counted, or decoded to its batch
    /// headers when it cannot be counted (out of line: rare next to the
    /// other fields, and heavy).
    #[inline(never)]
    fn scan_records(&self, x: &mut ScanFacts, b: &[u8], at: usize) -> Option<()> {
        let opts = DecodeOptions {
            records: true,
            ..self.opts.clone()
        };
        match count_record_set(b, at, &opts, &mut x.sources) {
            Some(c) => x.set(b.len(), Some(c), Vec::new()),
            None => {
                let rs = decode_record_set(b, at, 0, &opts, &mut x.sources);
                if rs.problem.is_some() {
                    return None;
                }
                x.set(b.len(), None, rs.nodes);
            }
        }
        Some(())
    }

    /// As [`Decoder::min_elem_size`], structs' sizes remembered per thread
    /// (by struct, version and flexibility: a function of the three).
    fn scan_min_elem_size(&self, e: Elem, flex: bool) -> usize {
        let Elem::Struct(s) = e else {
            return self.min_elem_size(e, flex);
        };
        let key = std::ptr::from_ref(s) as usize;
        let slot = ((key >> 4) ^ self.version as usize ^ (usize::from(self.flexible) << 5)) & 63;
        MIN_SIZES.with(|c| {
            let Ok(mut c) = c.try_borrow_mut() else {
                return self.min_struct_size(s, 0);
            };
            match c.get_mut(slot) {
                Some(e) if e.0 == key && e.1 == self.version && e.2 == self.flexible => e.3,
                Some(e) => {
                    let n = self.min_struct_size(s, 0);
                    *e = (key, self.version, self.flexible, n);
                    n
                }
                None => self.min_struct_size(s, 0),
            }
        })
    }

    #[inline(never)]
    fn scan_array(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        e: Elem,
        sum: &mut Summary,
    ) -> Option<()> {
        let flex = self.field_flexible(f);
        let count = if flex {
            r.uvarint().ok()?.checked_sub(1).map(|c| c as usize)
        } else {
            usize::try_from(r.i32().ok()?).ok()
        };
        let Some(count) = count else {
            return Some(());
        };
        let min = self.scan_min_elem_size(e, flex);
        let plausible = match r.remaining().checked_div(min) {
            Some(fit) => count <= fit,
            None => count <= MAX_ZERO_SIZE_ELEMENTS,
        };
        if !plausible {
            return None;
        }
        // Fixed-width elements hold nothing the scan notes: skipped at once.
        if let Elem::Prim(p) = e {
            if !matches!(p, Prim::String | Prim::Bytes | Prim::Records) {
                let len = count.checked_mul(prim_min_size(p, flex))?;
                r.take(len).ok()?;
                return Some(());
            }
        }
        // Structs of fixed-width fields the scan does not note (no error
        // code, no topic id): their fixed part skipped at once, then each
        // one's tagged fields read as `scan_fields` reads them.
        if let (Elem::Struct(s), None) = (e, &sum.facts) {
            if let Some(w) = self.quiet_fixed_size(s) {
                if !self.flexible {
                    r.take(count.checked_mul(w)?).ok()?;
                    return Some(());
                }
                for _ in 0..count {
                    r.take(w).ok()?;
                    self.scan_tagged(r, s, sum, true)?;
                }
                return Some(());
            }
        }
        for _ in 0..count {
            match e {
                Elem::Prim(p) => match p {
                    // Arrays of record sets are not in any schema; read such a tree.
                    Prim::Records if sum.facts.is_some() => return None,
                    Prim::String | Prim::Bytes | Prim::Records => {
                        let lp = self.length_prefix(r, flex, p != Prim::String).ok()?;
                        if let Some(len) = lp.len {
                            let b = r.take(len).ok()?;
                            if p == Prim::String
                                && f.marks.has(Marks::TOPIC_NAME)
                                && self.opts.summary_topics
                            {
                                scan_note_topic(sum, &name_text(b));
                            }
                        }
                    }
                    _ => {
                        read_fixed(r, p).ok()?;
                    }
                },
                Elem::Struct(s) => self.scan_fields(r, s, sum, false)?,
            }
        }
        Some(())
    }

    /// The bytes of `s`'s fields at this version when every one is a
    /// fixed-width primitive the summary scan does not note (not an
    /// `*ErrorCode`, not a `TopicId`); `None` otherwise. Tagged fields are not
    /// counted (they live in the tagged section).
    fn quiet_fixed_size(&self, s: &StructDef) -> Option<usize> {
        let mut n = 0usize;
        for f in s.fields {
            if !f.versions.contains(self.version) || f.tagged.contains(self.version) {
                continue;
            }
            match f.kind {
                FieldKind::Prim(p)
                    if !matches!(p, Prim::String | Prim::Bytes | Prim::Records)
                        && !f.marks.has(Marks::ERROR_CODE)
                        && !f.marks.has(Marks::TOPIC_ID) =>
                {
                    n += prim_min_size(p, false);
                }
                _ => return None,
            }
        }
        Some(n)
    }

    /// As [`Decoder::tagged_fields`]: known tags are read with their schema field
    /// inside their own bounds, unknown ones skipped.
    fn scan_tagged(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        sum: &mut Summary,
        _in_body: bool,
    ) -> Option<()> {
        let count = r.uvarint().ok()?;
        if count as usize > r.remaining() / 2 {
            return None;
        }
        let mut opened = false;
        for _ in 0..count {
            let tag = r.uvarint().ok()?;
            let size = r.uvarint().ok()? as usize;
            let payload = r.take(size).ok()?;
            let version = self.version;
            let known = def.fields.iter().find(|f| {
                f.tag == Some(tag) && f.tagged.contains(version) && f.versions.contains(version)
            });
            if let Some(f) = known {
                // The tree hangs a known tagged field under a `tagged_fields`
                // node and an entry node of its own: places and nesting follow.
                let placing = sum.facts.as_ref().is_some_and(|x| x.depth > 0);
                if let Some(x) = sum.facts.as_mut().filter(|_| placing) {
                    if !opened {
                        x.open();
                        opened = true;
                    }
                    x.open();
                    x.tagged_depth += 1;
                }
                let mut sub = Reader::new(payload);
                // A tagged field is never a top-level field of the tree's body.
                self.scan_field(&mut sub, f, sum, false)?;
                if sub.remaining() > 0 {
                    return None;
                }
                if let Some(x) = sum.facts.as_mut().filter(|_| placing) {
                    x.tagged_depth -= 1;
                    x.close();
                }
            }
        }
        if let Some(x) = sum.facts.as_mut().filter(|_| opened) {
            x.close();
        }
        Some(())
    }
}

/// As `Decoder::note_topic`, from the name read as text ([`name_text`]).
fn scan_note_topic(sum: &mut Summary, name: &str) {
    if name.is_empty() || sum.topics.len() >= MAX_TOPICS {
        return;
    }
    if !sum.topics.iter().any(|t| t == name) {
        sum.topics.push(name.to_owned());
    }
}

/// A name's bytes as text: themselves when valid UTF-8 (every real name,
/// compared and copied without a conversion), else with replacement
/// characters.
fn name_text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

/// Decodes the bytes of a data schema (e.g. ConsumerProtocolSubscription) that start
/// with their own int16 version, as found inside JoinGroup and SyncGroup. `base` is
/// the offset of `data` in the message. Returns the nodes, or `None` when the bytes
/// do not decode completely with that schema.
pub fn decode_embedded(
    data: &[u8],
    base: usize,
    def: &'static MessageDef,
    role: Role,
) -> Option<Vec<Node>> {
    let opts = DecodeOptions::default();
    let mut d = Decoder::new(data, &opts);
    d.base = base;
    let mut r = Reader::new(data);
    let version = r.i16().ok()?;
    // Newer versions of the consumer protocol only add fields at the end, and
    // Kafka reads them with the newest version it knows.
    let v = version.min(def.valid.max);
    if v < def.valid.min {
        return None;
    }
    let mut nodes = vec![Node::new(
        "Version",
        "int16",
        Value::Int(version.into()),
        base,
        2,
        role,
    )
    .with_about("version of the embedded structure")];
    d.version = v;
    d.flexible = def.is_flexible(v);
    d.role = role;
    d.path.push(def.name);
    d.fields(&mut r, def.body, &mut Out::Tree(&mut nodes))
        .ok()?;
    if r.remaining() != 0 || d.error.is_some() {
        return None;
    }
    Some(nodes)
}

/// Signals that decoding stopped; the reason is in `Decoder::error`.
#[derive(Debug)]
struct Stop;

type Step = Result<(), Stop>;

struct Decoder<'a> {
    msg: &'a [u8],
    opts: &'a DecodeOptions,
    /// Offset of the reader's buffer in the message (non-zero for embedded data).
    base: usize,
    version: i16,
    flexible: bool,
    role: Role,
    path: Vec<&'static str>,
    sources: Vec<ByteSource>,
    error: Option<DecodeError>,
    /// The api key of the message, for embedded-protocol and secret rules.
    api_key: i16,
    /// The value of the last `ProtocolType` string seen, if any.
    protocol_type: Option<String>,
    /// Set once a `malformed` node has taken the rest of the bytes.
    stopped: bool,
    topics: Vec<String>,
    topic_ids: Vec<[u8; 16]>,
}

impl<'a> Decoder<'a> {
    fn new(msg: &'a [u8], opts: &'a DecodeOptions) -> Decoder<'a> {
        Decoder {
            msg,
            opts,
            base: 0,
            version: 0,
            flexible: false,
            role: Role::RequestBody,
            path: Vec::new(),
            sources: Vec::new(),
            error: None,
            api_key: -1,
            protocol_type: None,
            stopped: false,
            topics: Vec::new(),
            topic_ids: Vec::new(),
        }
    }

    /// Records the first problem.
    fn fail(&mut self, offset: usize, what: impl Into<String>) {
        if self.error.is_none() {
            self.error = Some(DecodeError {
                offset,
                source: 0,
                path: self.path.join("."),
                what: what.into(),
            });
        }
    }

    /// Appends a node marking the bytes from `at` on as undecodable and records the problem.
    fn malformed(
        &mut self,
        r: &Reader<'_>,
        at: usize,
        what: String,
        out: &mut Out<'_, '_>,
    ) -> Stop {
        let off = self.base + at;
        let len = r.buf().len().saturating_sub(at);
        let mut n = Node::new(
            "malformed",
            "bytes",
            Value::bytes(r.buf().get(at..).unwrap_or(&[])),
            off,
            len,
            Role::Malformed,
        );
        n.error = Some(what.clone());
        out.push(n, &self.sources);
        self.fail(off, what);
        if self.base == 0 {
            self.stopped = true;
        }
        Stop
    }

    fn wire(&mut self, r: &Reader<'_>, e: WireError, name: &str, out: &mut Out<'_, '_>) -> Stop {
        let what = match &e {
            WireError::Truncated { .. } => format!("{name}: truncated, {e}"),
            WireError::VarintOverflow { .. } => format!("{name}: {e}"),
        };
        self.malformed(r, e.offset(), what, out)
    }

    /// The size prefix: pushes the Frame node and returns where the message ends,
    /// or `None` when not even the size is there.
    fn frame(&mut self, out: &mut Out<'_, '_>) -> Option<usize> {
        let mut frame = Node::new(
            "Frame",
            "",
            Value::None,
            0,
            4.min(self.msg.len()),
            Role::Frame,
        )
        .with_about("length-prefixed framing");
        let mut r = Reader::new(self.msg);
        let end = match r.i32() {
            Ok(size) => {
                frame.children.push(
                    Node::new("size", "int32", Value::Int(size.into()), 0, 4, Role::Frame)
                        .with_about("bytes in the message after this field"),
                );
                let want = usize::try_from(size).ok().and_then(|s| s.checked_add(4));
                match want {
                    Some(w) if w == self.msg.len() => w,
                    Some(w) if w < self.msg.len() => {
                        self.fail(
                            w,
                            format!("{} bytes beyond the size field", self.msg.len() - w),
                        );
                        w
                    }
                    Some(w) => {
                        self.fail(
                            self.msg.len(),
                            format!(
                                "message truncated: size says {} bytes, {} present",
                                w - 4,
                                self.msg.len() - 4
                            ),
                        );
                        self.msg.len()
                    }
                    None => {
                        self.fail(0, format!("negative message size {size}"));
                        self.msg.len()
                    }
                }
            }
            Err(e) => {
                frame.error = Some(format!("size: truncated, {e}"));
                self.fail(0, format!("size: truncated, {e}"));
                out.push(frame, &self.sources);
                return None;
            }
        };
        out.push(frame, &self.sources);
        Some(end)
    }

    /// Marks bytes left after the body and any bytes beyond the size field.
    fn finish(&mut self, r: &mut Reader<'_>, end: usize, out: &mut Out<'_, '_>) {
        if self.stopped {
            return;
        }
        if r.remaining() > 0 {
            let at = r.pos();
            let n = r.remaining();
            let _ = self.malformed(r, at, format!("{n} bytes left after the body"), out);
        }
        if end < self.msg.len() {
            let mut n = Node::new(
                "beyond size",
                "bytes",
                Value::bytes(self.msg.get(end..).unwrap_or(&[])),
                end,
                self.msg.len() - end,
                Role::Malformed,
            );
            n.error = Some("bytes beyond the message's size field".into());
            out.push(n, &self.sources);
        }
    }

    fn request_header(
        &mut self,
        r: &mut Reader<'_>,
        hv: i16,
        out: &mut Out<'_, '_>,
        dec: &mut Decoded,
    ) -> Step {
        self.path.push("RequestHeader");
        let res = self.request_header_inner(r, hv, out, dec);
        self.path.pop();
        res
    }

    fn request_header_inner(
        &mut self,
        r: &mut Reader<'_>,
        hv: i16,
        out: &mut Out<'_, '_>,
        dec: &mut Decoded,
    ) -> Step {
        let at = r.pos();
        let key = r
            .i16()
            .map_err(|e| self.wire(r, e, "request_api_key", out))?;
        let mut n = Node::new(
            "request_api_key",
            "int16",
            Value::Int(key.into()),
            at,
            2,
            Role::Header,
        )
        .with_about("which API this request invokes");
        if let Some(name) = schema::api_name(key) {
            n.detail = Some(name.into());
        }
        out.push(n, &self.sources);
        let at = r.pos();
        let ver = r
            .i16()
            .map_err(|e| self.wire(r, e, "request_api_version", out))?;
        out.push(
            Node::new(
                "request_api_version",
                "int16",
                Value::Int(ver.into()),
                at,
                2,
                Role::Header,
            )
            .with_about("version of that API"),
            &self.sources,
        );
        let at = r.pos();
        let corr = r
            .i32()
            .map_err(|e| self.wire(r, e, "correlation_id", out))?;
        dec.correlation_id = Some(corr);
        out.push(
            Node::new(
                "correlation_id",
                "int32",
                Value::Int(corr.into()),
                at,
                4,
                Role::Header,
            )
            .with_about("returned unchanged in the response"),
            &self.sources,
        );
        if hv >= 1 {
            // ClientId keeps its int16 length even in flexible header v2 so that any
            // broker can read an ApiVersions request's header.
            let at = r.pos();
            let len = r.i16().map_err(|e| self.wire(r, e, "client_id", out))?;
            let detail = INT16_LEN.get(len_index(len.into()));
            let (value, detail) = if len < 0 {
                (Value::Null, detail)
            } else {
                let b = r
                    .take(len as usize)
                    .map_err(|e| self.wire(r, e, "client_id", out))?;
                let s = String::from_utf8_lossy(b).into_owned();
                dec.client_id = Some(s.clone());
                (Value::Str(s), detail)
            };
            out.push(
                Node::new(
                    "client_id",
                    "nullable_string",
                    value,
                    at,
                    r.pos() - at,
                    Role::Header,
                )
                .with_detail(detail)
                .with_about("always a non-flexible int16-prefixed string"),
                &self.sources,
            );
        }
        if hv >= 2 {
            self.flexible = true;
            self.version = hv;
            self.role = Role::Header;
            self.tagged_fields(r, schema::REQUEST_HEADER.body, out, "in the header")?;
        }
        Ok(())
    }

    fn response_header(
        &mut self,
        r: &mut Reader<'_>,
        hv: i16,
        out: &mut Out<'_, '_>,
        dec: &mut Decoded,
    ) -> Step {
        self.path.push("ResponseHeader");
        let at = r.pos();
        let corr = match r.i32() {
            Ok(c) => c,
            Err(e) => {
                let s = self.wire(r, e, "correlation_id", out);
                self.path.pop();
                return Err(s);
            }
        };
        dec.correlation_id = Some(corr);
        out.push(
            Node::new(
                "correlation_id",
                "int32",
                Value::Int(corr.into()),
                at,
                4,
                Role::Header,
            )
            .with_about("the correlation id of the request answered"),
            &self.sources,
        );
        let res = if hv >= 1 {
            self.flexible = true;
            self.version = hv;
            self.role = Role::Header;
            self.tagged_fields(r, schema::RESPONSE_HEADER.body, out, "in the header")
        } else {
            Ok(())
        };
        self.path.pop();
        res
    }

    fn unknown_body(
        &mut self,
        r: &mut Reader<'_>,
        key: i16,
        ver: i16,
        kind: MessageKind,
        out: &mut Out<'_, '_>,
    ) {
        let what = match (schema::api_name(key), schema::definitions(key, kind).next()) {
            (Some(name), Some(_)) => {
                let known: Vec<String> = schema::definitions(key, kind)
                    .map(|d| d.valid.to_string())
                    .collect();
                format!(
                    "{name} v{ver} is beyond the known versions ({}); body not decoded",
                    known.join(", ")
                )
            }
            _ => format!("unknown api key {key}; body not decoded"),
        };
        let at = r.pos();
        let _ = self.malformed(r, at, what, out);
        r.skip_rest();
    }

    fn body(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static MessageDef,
        version: i16,
        role: Role,
        out: &mut Out<'_, '_>,
    ) {
        self.version = version;
        self.flexible = def.is_flexible(version);
        self.role = role;
        self.api_key = def.api_key;
        self.path.push(def.name);
        let at = r.pos();
        let mut node = Node::new(def.name, "struct", Value::None, at, 0, role).with_about(
            version_text(&BODY_VERSIONS, version, |v| {
                format!("message body, version {v}")
            }),
        );
        {
            let mut kids = out.open(&mut node.children);
            kids.mark_body();
            let _ = self.fields(r, def.body, &mut kids);
        }
        node.length = r.pos() - at;
        self.path.pop();
        out.close(node);
    }

    /// Decodes the fields of `def` present in this version, then its tagged fields.
    fn fields(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        out: &mut Out<'_, '_>,
    ) -> Step {
        // One node per field present, and one for the tagged fields: room
        // made once rather than grown (a tree's; JSON needs none).
        if let Out::Tree(v) = out {
            let present = def
                .fields
                .iter()
                .filter(|f| f.versions.contains(self.version) && !f.tagged.contains(self.version))
                .count();
            v.reserve_exact(present + usize::from(self.flexible));
        }
        for f in def.fields {
            if !f.versions.contains(self.version) || f.tagged.contains(self.version) {
                continue;
            }
            self.field(r, f, out)?;
        }
        if self.flexible {
            self.tagged_fields(r, def, out, "in this struct")?;
        }
        Ok(())
    }

    fn field_flexible(&self, f: &FieldDef) -> bool {
        match f.flexible {
            Some(v) => v.contains(self.version),
            None => self.flexible,
        }
    }

    fn field(&mut self, r: &mut Reader<'_>, f: &'static FieldDef, out: &mut Out<'_, '_>) -> Step {
        self.path.push(f.name);
        let res = match f.kind {
            FieldKind::Prim(p) => self.prim(r, f, p, out),
            FieldKind::Struct(s) => self.struct_field(r, f, s, out),
            FieldKind::Array(e) => self.array(r, f, e, out),
        };
        self.path.pop();
        res
    }

    fn about(f: &'static FieldDef) -> Text {
        Text::Borrowed(cached_description(f))
    }

    /// [`Self::about`] for a node handed to `out`: none when it is written
    /// as JSON, which has no descriptions (a lookup per node spared).
    fn about_for(f: &'static FieldDef, out: &Out<'_, '_>) -> Option<Text> {
        out.shows_about().then(|| Self::about(f))
    }

    fn prim(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        p: Prim,
        out: &mut Out<'_, '_>,
    ) -> Step {
        let at = r.pos();
        let flex = self.field_flexible(f);
        let nullable = f.nullable.contains(self.version);
        let (value, detail, children) = match p {
            Prim::String | Prim::Bytes | Prim::Records => {
                let at_len = r.pos();
                let lp = match self.length_prefix(r, flex, p != Prim::String) {
                    Ok(x) => x,
                    Err(LenError::Wire(e)) => return Err(self.wire(r, e, f.name, out)),
                    Err(LenError::Negative(n)) => {
                        let what = format!("{}: invalid length {n}", f.name);
                        return Err(self.malformed(r, at_len, what, out));
                    }
                };
                let detail = lp.detail();
                let Some(len) = lp.len else {
                    let mut n = Node::new(
                        f.name,
                        f.type_name,
                        Value::Null,
                        self.base + at,
                        r.pos() - at,
                        self.role,
                    )
                    .with_detail(detail)
                    .with_about(Self::about(f));
                    if !nullable {
                        n.about = Some(
                            format!(
                                "null, although the schema does not allow null in v{}",
                                self.version
                            )
                            .into(),
                        );
                    }
                    if p == Prim::Records {
                        n.detail = None;
                        n.children.push(self.length_node(at, r.pos() - at, lp));
                    }
                    out.push(n, &self.sources);
                    return Ok(());
                };
                let len_end = r.pos();
                let b = match r.take(len) {
                    Ok(b) => b,
                    Err(e) => return Err(self.wire(r, e, f.name, out)),
                };
                match p {
                    Prim::String => {
                        let s = String::from_utf8_lossy(b).into_owned();
                        if f.name == "ProtocolType" {
                            self.protocol_type = Some(s.clone());
                        }
                        self.note_topic(f, &s);
                        (Value::Str(s), Some(detail), Vec::new())
                    }
                    Prim::Bytes => {
                        let value = if self.is_secret(f) && !self.opts.show_secrets {
                            Value::Text(format!("<redacted, {len} bytes>").into())
                        } else {
                            Value::bytes(b)
                        };
                        let kids = self.embedded(f, b, self.base + len_end);
                        (value, Some(detail), kids)
                    }
                    _ => {
                        let mut kids = vec![self.length_node(at, len_end - at, lp)];
                        let summary = if self.opts.records && self.base == 0 {
                            let rs = decode_record_set(b, len_end, 0, self.opts, &mut self.sources);
                            if let Some((off, src, what)) = rs.problem {
                                if self.error.is_none() {
                                    self.error = Some(DecodeError {
                                        offset: off,
                                        source: src,
                                        path: self.path.join("."),
                                        what,
                                    });
                                }
                            }
                            kids.extend(rs.nodes);
                            rs.summary
                        } else {
                            format!("{len} bytes")
                        };
                        (Value::Text(summary.into()), None, kids)
                    }
                }
            }
            _ => {
                let v = match read_fixed(r, p) {
                    Ok(v) => v,
                    Err(e) => return Err(self.wire(r, e, f.name, out)),
                };
                let detail = meaning(f, &v);
                if let Value::Uuid(u) = &v {
                    self.note_topic_id(f, u);
                }
                (v, detail, Vec::new())
            }
        };
        let secret = p == Prim::Bytes && self.is_secret(f) && !self.opts.show_secrets;
        if let Out::Json(j) = out {
            if children.is_empty() && !secret && j.plain() {
                j.leaf(Parts {
                    name: &Text::Borrowed(f.name),
                    ty: &Text::Borrowed(f.type_name),
                    value: &value,
                    detail: detail.as_ref(),
                    error: None,
                    offset: self.base + at,
                    length: r.pos() - at,
                    source: 0,
                });
                return Ok(());
            }
        }
        // Built in place (a literal, not a builder chain) to spare a copy.
        out.push(
            Node {
                name: f.name.into(),
                ty: f.type_name.into(),
                value,
                detail,
                offset: self.base + at,
                length: r.pos() - at,
                source: 0,
                role: self.role,
                about: Self::about_for(f, out),
                error: None,
                secret,
                children,
            },
            &self.sources,
        );
        Ok(())
    }

    fn length_node(&self, at: usize, len: usize, lp: LenPrefix) -> Node {
        let n = Node::new(
            "length",
            lp.wire_type(),
            Value::Int(lp.raw),
            self.base + at,
            len,
            self.role,
        )
        .with_about("size of the record set in bytes");
        if lp.compact {
            n.with_detail("compact, n+1")
        } else {
            n
        }
    }

    /// Reads a string/bytes length prefix.
    fn length_prefix(
        &self,
        r: &mut Reader<'_>,
        flex: bool,
        int32: bool,
    ) -> Result<LenPrefix, LenError> {
        let (raw, len) = if flex {
            let n = r.uvarint()?;
            (i64::from(n), n.checked_sub(1).map(|l| l as usize))
        } else if int32 {
            let n = r.i32()?;
            (i64::from(n), usize::try_from(n).ok())
        } else {
            let n = r.i16()?;
            (i64::from(n), usize::try_from(n).ok())
        };
        // Only -1 means null; any other negative length is invalid.
        if raw < -1 {
            return Err(LenError::Negative(raw));
        }
        Ok(LenPrefix {
            raw,
            len,
            compact: flex,
            int32,
        })
    }

    fn struct_field(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        s: &'static StructDef,
        out: &mut Out<'_, '_>,
    ) -> Step {
        let at = r.pos();
        let mut n = Node::new(
            f.name,
            f.type_name,
            Value::Text("struct".into()),
            self.base + at,
            0,
            self.role,
        );
        n.about = Self::about_for(f, out);
        let mut kids = out.open(&mut n.children);
        if f.nullable.contains(self.version) {
            // A nullable struct is preceded by an int8 marker: -1 null, 1 present.
            let m = match r.i8() {
                Ok(m) => m,
                Err(e) => {
                    // As a tree: the struct is dropped, the bytes are marked
                    // in its place (JSON is not used after an error).
                    return Err(self.wire(r, e, f.name, out));
                }
            };
            kids.push(
                Node::new(
                    "present",
                    "int8",
                    Value::Int(m.into()),
                    self.base + at,
                    1,
                    self.role,
                )
                .with_about("-1 when the struct is null, 1 when it follows"),
                &self.sources,
            );
            if m < 0 {
                n.value = Value::Null;
                n.length = 1;
                out.close(n);
                return Ok(());
            }
        }
        let res = self.fields(r, s, &mut kids);
        n.length = r.pos() - at;
        out.close(n);
        res
    }

    fn array(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        e: Elem,
        out: &mut Out<'_, '_>,
    ) -> Step {
        let at = r.pos();
        let flex = self.field_flexible(f);
        let count: Option<usize>;
        let len_node = if flex {
            let n = match r.uvarint() {
                Ok(n) => n,
                Err(err) => return Err(self.wire(r, err, f.name, out)),
            };
            count = n.checked_sub(1).map(|c| c as usize);
            Node::new(
                "length",
                "uvarint",
                Value::Int(n.into()),
                self.base + at,
                r.pos() - at,
                self.role,
            )
            .with_detail("compact, n+1")
        } else {
            let n = match r.i32() {
                Ok(n) => n,
                Err(err) => return Err(self.wire(r, err, f.name, out)),
            };
            count = usize::try_from(n).ok();
            Node::new(
                "length",
                "int32",
                Value::Int(n.into()),
                self.base + at,
                4,
                self.role,
            )
        };
        let len_node = len_node.with_about("number of elements");
        let mut n = Node::new(
            f.name,
            f.type_name,
            Value::Null,
            self.base + at,
            0,
            self.role,
        );
        n.about = Self::about_for(f, out);
        let Some(count) = count else {
            n.children.push(len_node);
            n.length = r.pos() - at;
            out.push(n, &self.sources);
            return Ok(());
        };
        n.value = Value::Text(ELEMENTS.get(count as u64));
        // Never trust the count: each element needs at least `min` bytes.
        let min = self.min_elem_size(e, flex);
        let plausible = match r.remaining().checked_div(min) {
            Some(fit) => count <= fit,
            None => count <= MAX_ZERO_SIZE_ELEMENTS,
        };
        if !plausible {
            n.children.push(len_node);
            let what = format!(
                "{}: {count} element(s) claimed, {} bytes remain",
                f.name,
                r.remaining()
            );
            let pos = r.pos();
            let s = self.malformed(r, pos, what, &mut Out::Tree(&mut n.children));
            n.length = r.buf().len() - at;
            out.push(n, &self.sources);
            return Err(s);
        }
        // The length and the elements (`count` is plausible, checked above,
        // but its elements may still fail at the first: room for at most
        // `MAX_RESERVED_CHILDREN` made ahead).
        let mut kids = out.open(&mut n.children);
        kids.reserve_exact(1 + count.min(MAX_RESERVED_CHILDREN));
        kids.push(len_node, &self.sources);
        let mut res = Ok(());
        for i in 0..count {
            res = match e {
                Elem::Prim(p) => self.array_prim(r, f, p, i, &mut kids),
                Elem::Struct(s) => {
                    let eat = r.pos();
                    let mut en = Node::new(
                        indexed_text(s.name, i as u64),
                        s.name,
                        Value::Text("struct".into()),
                        self.base + eat,
                        0,
                        self.role,
                    );
                    let res = {
                        let mut fields = kids.open(&mut en.children);
                        self.fields(r, s, &mut fields)
                    };
                    en.length = r.pos() - eat;
                    kids.close(en);
                    res
                }
            };
            if res.is_err() {
                break;
            }
        }
        n.length = r.pos() - at;
        out.close(n);
        res
    }

    fn array_prim(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        p: Prim,
        i: usize,
        out: &mut Out<'_, '_>,
    ) -> Step {
        let at = r.pos();
        let name = indexed_text(f.name, i as u64);
        let (value, detail) = match p {
            Prim::String | Prim::Bytes | Prim::Records => {
                let flex = self.field_flexible(f);
                let at_len = r.pos();
                let lp = match self.length_prefix(r, flex, p != Prim::String) {
                    Ok(x) => x,
                    Err(LenError::Wire(e)) => return Err(self.wire(r, e, f.name, out)),
                    Err(LenError::Negative(n)) => {
                        let what = format!("{}: invalid length {n}", f.name);
                        return Err(self.malformed(r, at_len, what, out));
                    }
                };
                let detail = lp.detail();
                match lp.len {
                    None => (Value::Null, detail),
                    Some(len) => {
                        let b = match r.take(len) {
                            Ok(b) => b,
                            Err(e) => return Err(self.wire(r, e, f.name, out)),
                        };
                        if p == Prim::String {
                            let s = String::from_utf8_lossy(b).into_owned();
                            self.note_topic(f, &s);
                            (Value::Str(s), detail)
                        } else {
                            (Value::bytes(b), detail)
                        }
                    }
                }
            }
            _ => {
                let v = match read_fixed(r, p) {
                    Ok(v) => v,
                    Err(e) => return Err(self.wire(r, e, f.name, out)),
                };
                let d = meaning(f, &v);
                (v, d.unwrap_or_default())
            }
        };
        if let Out::Json(j) = out {
            if j.plain() {
                j.leaf(Parts {
                    name: &name,
                    ty: &Text::Borrowed(p.name()),
                    value: &value,
                    detail: Some(&detail).filter(|d| !d.is_empty()),
                    error: None,
                    offset: self.base + at,
                    length: r.pos() - at,
                    source: 0,
                });
                return Ok(());
            }
        }
        let mut n = Node::new(
            name,
            p.name(),
            value,
            self.base + at,
            r.pos() - at,
            self.role,
        );
        if !detail.is_empty() {
            n.detail = Some(detail);
        }
        out.push(n, &self.sources);
        Ok(())
    }

    /// The fewest bytes one element can occupy in this version.
    fn min_elem_size(&self, e: Elem, flex: bool) -> usize {
        match e {
            Elem::Prim(p) => prim_min_size(p, flex),
            Elem::Struct(s) => self.min_struct_size(s, 0),
        }
    }

    fn min_struct_size(&self, s: &StructDef, depth: u8) -> usize {
        if depth > 8 {
            return 0;
        }
        let mut n = usize::from(self.flexible);
        for f in s.fields {
            if !f.versions.contains(self.version) || f.tagged.contains(self.version) {
                continue;
            }
            let flex = self.field_flexible(f);
            n += match f.kind {
                FieldKind::Prim(p) => prim_min_size(p, flex),
                FieldKind::Array(_) => {
                    if flex {
                        1
                    } else {
                        4
                    }
                }
                FieldKind::Struct(inner) => {
                    if f.nullable.contains(self.version) {
                        1
                    } else {
                        self.min_struct_size(inner, depth + 1)
                    }
                }
            };
        }
        n
    }

    /// The tagged-field section of a flexible struct: a uvarint count, then
    /// (tag, size, bytes) entries; known tags decode with their schema field.
    fn tagged_fields(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        out: &mut Out<'_, '_>,
        scope: &'static str,
    ) -> Step {
        let at = r.pos();
        let count = match r.uvarint() {
            Ok(c) => c,
            Err(e) => return Err(self.wire(r, e, "tagged_fields", out)),
        };
        let mut n = Node::new(
            "tagged_fields",
            "uvarint",
            Value::Int(count.into()),
            self.base + at,
            r.pos() - at,
            self.role,
        )
        .with_about(match scope {
            // The scopes callers pass, without a string per struct.
            "in the header" => Text::Borrowed("number of tagged fields in the header"),
            "in this struct" => Text::Borrowed("number of tagged fields in this struct"),
            _ => Text::Owned(format!("number of tagged fields {scope}")),
        });
        if count as usize > r.remaining() / 2 {
            let what = format!(
                "tagged_fields: {count} claimed, {} bytes remain",
                r.remaining()
            );
            let pos = r.pos();
            let s = self.malformed(r, pos, what, &mut Out::Tree(&mut n.children));
            n.length = r.buf().len() - at;
            out.push(n, &self.sources);
            return Err(s);
        }
        let mut res = Ok(());
        let mut kids = Out::Tree(&mut n.children);
        for _ in 0..count {
            res = self.tagged_entry(r, def, &mut kids);
            if res.is_err() {
                break;
            }
        }
        n.length = r.pos() - at;
        out.push(n, &self.sources);
        res
    }

    fn tagged_entry(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        out: &mut Out<'_, '_>,
    ) -> Step {
        let at = r.pos();
        let tag = match r.uvarint() {
            Ok(t) => t,
            Err(e) => return Err(self.wire(r, e, "tag", out)),
        };
        let tag_end = r.pos();
        let size = match r.uvarint() {
            Ok(s) => s as usize,
            Err(e) => return Err(self.wire(r, e, "tag size", out)),
        };
        let size_end = r.pos();
        let payload = match r.take(size) {
            Ok(p) => p,
            Err(e) => return Err(self.wire(r, e, "tagged field", out)),
        };
        let version = self.version;
        let known = def.fields.iter().find(|f| {
            f.tag == Some(tag) && f.tagged.contains(version) && f.versions.contains(version)
        });
        // The tag, its size and the field.
        let mut kids = Vec::with_capacity(3);
        kids.extend([
            Node::new(
                "tag",
                "uvarint",
                Value::Int(tag.into()),
                self.base + at,
                tag_end - at,
                Role::TaggedFields,
            ),
            Node::new(
                "size",
                "uvarint",
                Value::Int(size as i64),
                self.base + tag_end,
                size_end - tag_end,
                Role::TaggedFields,
            ),
        ]);
        let (name, ty, value): (Text, Text, Value) = match known {
            Some(f) => {
                // Decode the field inside its own bounded reader, so a bad size can't
                // read past the entry.
                let mut sub = Reader::new(payload);
                let saved_base = self.base;
                self.base += size_end;
                self.path.push(f.name);
                let res = match f.kind {
                    FieldKind::Prim(p) => self.prim(&mut sub, f, p, &mut Out::Tree(&mut kids)),
                    FieldKind::Struct(s) => {
                        self.struct_field(&mut sub, f, s, &mut Out::Tree(&mut kids))
                    }
                    FieldKind::Array(e) => self.array(&mut sub, f, e, &mut Out::Tree(&mut kids)),
                };
                self.path.pop();
                if res.is_ok() && sub.remaining() > 0 {
                    let pos = sub.pos();
                    let n = sub.remaining();
                    let _ = self.malformed(
                        &sub,
                        pos,
                        format!("{n} bytes left in tagged field {}", f.name),
                        &mut Out::Tree(&mut kids),
                    );
                }
                self.base = saved_base;
                (
                    f.name.into(),
                    f.type_name.into(),
                    Value::Text(format!("tag {tag}, {size} bytes").into()),
                )
            }
            None => {
                kids.push(Node::new(
                    "data",
                    "bytes",
                    Value::bytes(payload),
                    self.base + size_end,
                    size,
                    Role::TaggedFields,
                ));
                (
                    format!("unknown tag {tag}").into(),
                    "tagged field".into(),
                    Value::Text(format!("{size} bytes").into()),
                )
            }
        };
        let mut n = Node::new(
            name,
            ty,
            value,
            self.base + at,
            r.pos() - at,
            Role::TaggedFields,
        );
        n.about = Some("tagged field".into());
        n.children = kids;
        out.push(n, &self.sources);
        // A malformed known tag is marked (and reported) but, bounded by its
        // size, does not stop the rest of the message.
        Ok(())
    }

    fn note_topic(&mut self, f: &FieldDef, name: &str) {
        if f.marks.has(Marks::TOPIC_NAME)
            && !name.is_empty()
            && self.topics.len() < MAX_TOPICS
            && !self.topics.iter().any(|t| t == name)
        {
            self.topics.push(name.to_string());
        }
    }

    fn note_topic_id(&mut self, f: &FieldDef, id: &[u8; 16]) {
        if f.marks.has(Marks::TOPIC_ID)
            && *id != [0; 16]
            && self.topic_ids.len() < MAX_TOPICS
            && !self.topic_ids.contains(id)
        {
            self.topic_ids.push(*id);
        }
    }

    /// Secret-bearing bytes: SaslAuthenticate's AuthBytes (PLAIN passwords,
    /// SCRAM proofs, OAUTHBEARER tokens) and delegation-token HMACs.
    fn is_secret(&self, f: &FieldDef) -> bool {
        matches!(
            (self.api_key, f.name),
            (36, "AuthBytes") | (38..=41, "Hmac") | (38..=41, "TokenHmac") | (51, "SaltedPassword")
        )
    }

    /// The consumer protocol inside JoinGroup/SyncGroup bytes (protocol type "consumer").
    fn embedded(&self, f: &FieldDef, b: &[u8], base: usize) -> Vec<Node> {
        if b.is_empty()
            || self
                .protocol_type
                .as_deref()
                .is_some_and(|p| p != "consumer")
        {
            return Vec::new();
        }
        let def = match (self.api_key, f.name) {
            (11, "Metadata") => &schema::CONSUMER_PROTOCOL_SUBSCRIPTION,
            (14, "Assignment") => &schema::CONSUMER_PROTOCOL_ASSIGNMENT,
            _ => return Vec::new(),
        };
        decode_embedded(b, base, def, self.role).unwrap_or_default()
    }
}

/// Why a length prefix could not be used.
enum LenError {
    /// The prefix itself could not be read.
    Wire(WireError),
    /// A negative length other than -1 (null).
    Negative(i64),
}

impl From<WireError> for LenError {
    fn from(e: WireError) -> LenError {
        LenError::Wire(e)
    }
}

/// A decoded string/bytes length prefix.
#[derive(Clone, Copy)]
struct LenPrefix {
    /// The number on the wire (length+1 when compact, -1 for null otherwise).
    raw: i64,
    /// The byte length, `None` for null.
    len: Option<usize>,
    compact: bool,
    int32: bool,
}

impl LenPrefix {
    fn wire_type(self) -> &'static str {
        match (self.compact, self.int32) {
            (true, _) => "uvarint",
            (false, true) => "int32",
            (false, false) => "int16",
        }
    }

    /// `compact, len+1=N` or `int16 len=N`, as the seed shows string lengths.
    fn detail(self) -> Text {
        let table = match (self.compact, self.int32) {
            (true, _) => &COMPACT_LEN,
            (false, true) => &INT32_LEN,
            (false, false) => &INT16_LEN,
        };
        table.get(len_index(self.raw))
    }
}

/// The index of a length prefix's detail in its table: -1 (null) is 0.
fn len_index(raw: i64) -> u64 {
    raw.wrapping_add(1) as u64
}

/// How many length-prefix details are shared (lengths -1 ..= 510).
const SHARED_LENGTHS: u64 = 512;

/// [`LenPrefix::detail`] texts, by [`len_index`].
static COMPACT_LEN: SmallTexts = SmallTexts::new(SHARED_LENGTHS, |n| {
    format!("compact, len+1={}", (n as i64).wrapping_sub(1))
});
static INT32_LEN: SmallTexts = SmallTexts::new(SHARED_LENGTHS, |n| {
    format!("int32 len={}", (n as i64).wrapping_sub(1))
});
static INT16_LEN: SmallTexts = SmallTexts::new(SHARED_LENGTHS, |n| {
    format!("int16 len={}", (n as i64).wrapping_sub(1))
});

/// An array's value: `1 element`, `3 elements`.
static ELEMENTS: SmallTexts = SmallTexts::new(1025, |n| {
    if n == 1 {
        "1 element".to_string()
    } else {
        format!("{n} elements")
    }
});

/// `message v12`: a root's type.
static MESSAGE_VERSIONS: SmallTexts = SmallTexts::new(64, |v| format!("message v{v}"));

/// `message body, version 12`: a body's description.
static BODY_VERSIONS: SmallTexts = SmallTexts::new(64, |v| format!("message body, version {v}"));

/// `v2`: a header's type.
static HEADER_VERSIONS: SmallTexts = SmallTexts::new(8, |v| format!("v{v}"));

/// A version's text from `table`; a negative version (never one of the
/// schema's) made as it is.
fn version_text(table: &'static SmallTexts, v: i16, make: fn(i16) -> String) -> Text {
    match u64::try_from(v) {
        Ok(v) => table.get(v),
        Err(_) => Text::Owned(make(v)),
    }
}

/// Widens each container to cover its children in the same byte source: after an
/// error the `malformed` node reaches to the end of the bytes, past where the
/// containers around it had stopped reading. Only needed after an error: a
/// container's length is where its reader stopped after its children, and
/// every node with an error records the message's error (`fail`, the record
/// set's `problem`), so a tree without one already nests (`harness::check_decoded`
/// and the decoder tests check it).
fn fit_spans(n: &mut Node) {
    let mut end = n.end();
    for c in &mut n.children {
        fit_spans(c);
        if c.source == n.source {
            end = end.max(c.end());
        }
    }
    n.length = end - n.offset;
}

fn prim_min_size(p: Prim, flex: bool) -> usize {
    match p {
        Prim::Bool | Prim::Int8 => 1,
        Prim::Int16 | Prim::Uint16 => 2,
        Prim::Int32 | Prim::Uint32 => 4,
        Prim::Int64 | Prim::Float64 => 8,
        Prim::Uuid => 16,
        Prim::String => {
            if flex {
                1
            } else {
                2
            }
        }
        Prim::Bytes | Prim::Records => {
            if flex {
                1
            } else {
                4
            }
        }
    }
}

fn read_fixed(r: &mut Reader<'_>, p: Prim) -> Result<Value, WireError> {
    Ok(match p {
        Prim::Bool => Value::Bool(r.u8()? != 0),
        Prim::Int8 => Value::Int(r.i8()?.into()),
        Prim::Int16 => Value::Int(r.i16()?.into()),
        Prim::Uint16 => Value::Uint(r.u16()?.into()),
        Prim::Int32 => Value::Int(r.i32()?.into()),
        Prim::Uint32 => Value::Uint(r.u32()?.into()),
        Prim::Int64 => Value::Int(r.i64()?),
        Prim::Float64 => Value::Float(r.f64()?),
        Prim::Uuid => Value::Uuid(r.uuid()?),
        Prim::String | Prim::Bytes | Prim::Records => Value::Null,
    })
}

/// What a value means, where the schema's metadata says: error names, api names, dates.
fn meaning(f: &FieldDef, v: &Value) -> Option<Text> {
    let Value::Int(i) = *v else { return None };
    if f.marks.has(Marks::ERROR_CODE) {
        let code = i16::try_from(i).ok()?;
        return Some(Text::Borrowed(error_name(code).unwrap_or("unknown error")));
    }
    if f.name == "ApiKey" || f.name == "RequestApiKey" {
        return schema::api_name(i16::try_from(i).ok()?).map(Text::Borrowed);
    }
    if (f.name.ends_with("Timestamp")
        || f.name.ends_with("TimestampMs")
        || f.name.ends_with("AppendTimeMs"))
        && f.type_name == "int64"
    {
        return format_epoch_ms(i).map(Text::Owned);
    }
    None
}

/// An epoch-milliseconds timestamp as an ISO-8601 UTC date, when it lies in 1990..2200.
pub fn format_epoch_ms(ms: i64) -> Option<String> {
    const LO: i64 = 631_152_000_000; // 1990-01-01
    const HI: i64 = 7_258_118_400_000; // 2200-01-01
    if !(LO..HI).contains(&ms) {
        return None;
    }
    crate::kafka::records::iso8601_ms(ms)
}

/// [`describe_field`] of a schema field, made once per field and thread: the
/// schema tables are static, so the texts are leaked once (bounded by the
/// number of fields in the tables) and every node shares them.
fn cached_description(f: &'static FieldDef) -> &'static str {
    use std::cell::RefCell;
    thread_local! {
        // Keyed by address: Fx's one multiply, not SipHash (a lookup per
        // node of every tree).
        static CACHE: RefCell<rustc_hash::FxHashMap<usize, &'static str>> =
            RefCell::default();
    }
    let key = std::ptr::from_ref(f) as usize;
    CACHE.with(|c| {
        *c.borrow_mut()
            .entry(key)
            .or_insert_with(|| Box::leak(describe_field(f).into_boxed_str()))
    })
}

/// A description of a schema field from its metadata (never Kafka's prose):
/// its versions, nullability, tag and entity type.
pub fn describe_field(f: &FieldDef) -> String {
    let mut s = String::new();
    if !f.entity_type.is_empty() {
        s.push_str(f.entity_type);
        s.push_str(", ");
    }
    s.push_str("versions ");
    s.push_str(&f.versions.to_string());
    if !f.nullable.is_empty() {
        s.push_str(", nullable ");
        s.push_str(&f.nullable.to_string());
    }
    if let Some(t) = f.tag {
        s.push_str(&format!(", tag {t} in {}", f.tagged));
    }
    if f.map_key {
        s.push_str(", map key");
    }
    if !f.default.is_empty() {
        s.push_str(", default ");
        s.push_str(f.default);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(
            format_epoch_ms(1_711_648_200_000).as_deref(),
            Some("2024-03-28T17:50:00.000Z")
        );
        assert_eq!(format_epoch_ms(-1), None);
        assert_eq!(format_epoch_ms(0), None);
    }

    #[test]
    fn a_hostile_array_count_reserves_little() {
        // Produce v3: header v1, then TransactionalId (null), Acks, TimeoutMs
        // and TopicData claiming 10,000 elements of at least 6 bytes, in
        // 60,000 bytes whose first element already fails (length -32640).
        let mut m = vec![0, 0, 0, 0]; // size, patched
        m.extend_from_slice(&0i16.to_be_bytes()); // api key: Produce
        m.extend_from_slice(&3i16.to_be_bytes()); // api version
        m.extend_from_slice(&7i32.to_be_bytes()); // correlation id
        m.extend_from_slice(&0i16.to_be_bytes()); // client id ""
        m.extend_from_slice(&(-1i16).to_be_bytes()); // TransactionalId null
        m.extend_from_slice(&1i16.to_be_bytes()); // Acks
        m.extend_from_slice(&1000i32.to_be_bytes()); // TimeoutMs
        m.extend_from_slice(&10_000i32.to_be_bytes()); // TopicData count
        m.resize(m.len() + 60_000, 0x80);
        let size = (m.len() - 4) as i32;
        m.splice(0..4, size.to_be_bytes());
        let d = decode_request(&m, &DecodeOptions::default());
        assert!(d.error.is_some());
        let topics = d
            .root
            .path(&["ProduceRequest", "TopicData"])
            .expect("TopicData");
        assert_eq!(topics.value, Value::Text("10000 elements".into()));
        // Room for MAX_RESERVED_CHILDREN, not the 10,000 the bytes would allow.
        assert!(topics.children.capacity() <= 1 + MAX_RESERVED_CHILDREN);
    }
}
