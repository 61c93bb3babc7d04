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
    self, ApiKey, Elem, FieldDef, FieldKind, Marks, MessageDef, MessageKind, Prim, StructDef,
};
use super::stream_json::{Out, Stream};
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

/// Something unusual in a message that decoded: it stands as decoded, and
/// the receiver reads it the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodeWarning {
    /// Bytes after a body whose every field decoded: the receiver reads the
    /// fields the schema lists and ignores the rest (librdkafka 2.16 sends
    /// three such bytes after a Metadata v12 request).
    Trailing {
        /// Where they begin, from the first byte of the size prefix.
        offset: usize,
        /// How many there are.
        len: usize,
        /// The message's kind: a request's are ignored by the broker, a
        /// response's by the client.
        kind: Kind,
    },
}

impl DecodeWarning {
    /// The warning without its place and size (what `stats` counts by).
    pub fn what(&self) -> &'static str {
        match self {
            DecodeWarning::Trailing {
                kind: Kind::Request,
                ..
            } => "bytes after the body, ignored by the broker",
            DecodeWarning::Trailing { .. } => "bytes after the body, ignored by the client",
        }
    }
}

impl fmt::Display for DecodeWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeWarning::Trailing { offset, len, kind } => {
                let who = match kind {
                    Kind::Request => "broker",
                    Kind::Response => "client",
                };
                let s = if *len == 1 { "" } else { "s" };
                write!(
                    f,
                    "{len} byte{s} after the body at 0x{offset:04x}, ignored by the {who}"
                )
            }
        }
    }
}

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
    /// Something unusual that leaves the message standing (bytes after its body).
    pub warning: Option<DecodeWarning>,
    /// Topic names the message mentions (fields of entity type topicName), in order, deduplicated.
    pub topics: Topics,
    /// Topic ids the message mentions (fields named `TopicId`), deduplicated.
    pub topic_ids: Vec<[u8; 16]>,
    /// For a message read by the summary scan without its tree, with
    /// [`DecodeOptions::records_headers_only`]: the placed facts `stats`
    /// would otherwise read from the tree. `None` for decoded trees.
    pub facts: Option<Box<ScanFacts>>,
}

/// The topic names a message mentions: most messages name one, held in
/// place; each name is shared with the scan's places of that topic
/// ([`ScanTopic::Name`]) and with whoever keeps it past the message.
pub type Topics = smallvec::SmallVec<[std::sync::Arc<str>; 1]>;

/// Most topic names or ids remembered per message.
const MAX_TOPICS: usize = 64;

impl Decoded {
    /// The body node (the last child of the root named like the message), if decoded that far.
    pub fn body(&self) -> Option<&Node> {
        self.root.children.iter().find(|n| n.ty == "struct")
    }

    /// Every byte decoded as a field: no error and no warning. What the
    /// analyzer's guesses (is this a Kafka request or a SASL token, which
    /// api answers here) ask of a message before they trust it.
    pub fn clean(&self) -> bool {
        self.error.is_none() && self.warning.is_none()
    }
}

/// Decodes a request: `msg` is one whole message including its 4-byte size prefix.
pub fn decode_request(msg: &[u8], opts: &DecodeOptions) -> Decoded {
    let d = decode_into(msg, None, opts, None, None);
    // ControlledShutdown v0 is the one request defined with header v0 (no client
    // id), but some clients send it with header v1; take whichever decodes whole.
    if !d.clean()
        && d.api_key.map(ApiKey) == Some(ApiKey::CONTROLLED_SHUTDOWN)
        && d.api_version == Some(0)
    {
        let v1 = decode_into(msg, None, opts, Some(1), None);
        if v1.clean() {
            return v1;
        }
    }
    d
}

/// A message's tree written as JSON or text by `stream` while it is decoded
/// (the modules `stream_json` and `stream_text`), instead of kept: the
/// returned root has no children. `response`: the api key and version of
/// the request a response answers; `None` for a request. The output is
/// that of [`decode_request`]'s or [`decode_response`]'s tree when the result
/// is [`Decoded::clean`]; otherwise it is to be dropped (the caller decodes
/// the tree: a request's tree may read the message another way, as
/// ControlledShutdown v0 with header v1).
pub fn decode_streamed(
    msg: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    stream: Stream<'_, '_>,
) -> Decoded {
    decode_into(msg, response, opts, None, Some(stream))
}

/// Decodes a response to a request with `api_key` and `api_version`: `msg` is one
/// whole message including its 4-byte size prefix.
pub fn decode_response(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
) -> Decoded {
    decode_into(msg, Some((api_key, api_version)), opts, None, None)
}

/// One message (`response` as for [`decode_streamed`]) decoded into a tree,
/// or written as JSON or text by `stream`; `header` forces a request's
/// header version.
fn decode_into(
    msg: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    header: Option<i16>,
    mut stream: Option<Stream<'_, '_>>,
) -> Decoded {
    // A response's root is named by its definition before the walk, a
    // request's once its header names it.
    let (name, ty) = match response {
        None => ("Request", Text::Borrowed("message")),
        Some((key, version)) => (
            schema::message(key, MessageKind::Response, version).map_or("Response", |m| m.name),
            version_text(&MESSAGE_VERSIONS, version, |v| format!("message v{v}")),
        ),
    };
    let mut root = Node::new(name, ty, Value::None, 0, msg.len(), Role::Message);
    let mut d = Decoder::new(msg, opts, response);
    let mut children = Vec::new();
    let mut out = Out::root(stream.as_mut(), &mut children);
    let framed = match d.frame(&mut out) {
        Some(end) => {
            if let (Some(def), Some(v)) = (d.message(end, header, &mut out), d.key_version.1) {
                root.name = def.name.into();
                root.ty = version_text(&MESSAGE_VERSIONS, v, |v| format!("message v{v}"));
            }
            true
        }
        None => false,
    };
    match stream {
        Some(Stream::Json(j)) if framed => j.end_root(&mut root),
        Some(Stream::Text(t)) if framed => t.end_root(&mut root),
        _ => root.children = children,
    }
    if d.error.is_some() && framed {
        fit_spans(&mut root);
    }
    Decoded {
        kind: d.kind,
        api_key: d.key_version.0,
        api_version: d.key_version.1,
        correlation_id: d.correlation_id,
        client_id: d.client_id,
        root,
        sources: d.sources,
        error: d.error,
        warning: d.warning,
        topics: d.topics,
        topic_ids: d.topic_ids,
        facts: None,
    }
}

/// The facts of a message that decodes completely and cleanly, read
/// without its tree: [`summarize_request`] and [`summarize_response`] walk
/// the schema as the decoder does but keep only these. For anything else
/// (malformed, unknown api or version, bytes beyond the body, embedded
/// consumer protocols) they return `None` and the caller decodes the tree,
/// so a summary never differs from what the tree would say.
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
    /// The body's top-level `MaxWaitMs` (Fetch, ShareFetch requests).
    pub max_wait_ms: Option<i32>,
    /// The body's top-level `MinBytes` (Fetch, ShareFetch requests).
    pub min_bytes: Option<i32>,
    /// Bytes of the body's record sets, without their length prefixes.
    pub record_bytes: u64,
    /// Every non-zero `*ErrorCode` of the body, in byte order (as `analyzer::response_facts`).
    pub error_codes: Vec<i16>,
    /// As [`Decoded::topics`].
    pub topics: Topics,
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
    /// A topic name (shared by the facts of one struct).
    Name(std::sync::Arc<str>),
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

/// A placed integer of a summarized message: a field marked
/// [`Marks::PLACED_INT`] (`FetchOffset`, `HighWatermark`, …) wherever it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanInt {
    /// The field's name (one of `schema::PLACED_INT_NAMES`).
    pub name: &'static str,
    /// Its value.
    pub value: i64,
    /// Its place.
    pub place: ScanPlace,
}

/// The placed facts of a message read without its tree (see [`Summary::facts`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScanFacts {
    /// Non-zero error codes, in byte order.
    pub errors: Vec<ScanError>,
    /// Record sets, in byte order.
    pub sets: Vec<ScanSet>,
    /// Placed integers, in byte order.
    pub ints: Vec<ScanInt>,
    /// Byte sources of the decompressed payloads (lengths only).
    pub sources: Vec<ByteSource>,
    /// The body's top-level `Acks` (as [`Summary::acks`]).
    pub acks: Option<i64>,
    /// The body's top-level `GroupId` (OffsetCommit and other group requests).
    pub group_id: Option<String>,
    /// Open structs, innermost last: the first `depth` entries (the others
    /// are kept to be reused, their names' buffers with them).
    frames: Vec<ScanFrame>,
    depth: usize,
    /// The facts whose place is still looking for a topic: (index of the
    /// open struct they wait on, which list, index), in nondecreasing order of
    /// the struct, so that the ones a closing struct settles are the last.
    waiting: Vec<Waiting>,
    /// How many known tagged fields the scan is inside.
    tagged_depth: u32,
    /// The message's API keeps its placed integers (`schema::PLACED_INT_APIS`).
    want_ints: bool,
}

/// A fact waiting for its topic: (the open struct it waits on, which list,
/// index in that list).
type Waiting = (usize, FactList, usize);

/// The lists of placed facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FactList {
    Errors,
    Sets,
    Ints,
}

/// An open struct of the scan: what it names so far.
#[derive(Clone, Debug, Default, PartialEq)]
struct ScanFrame {
    /// Its topic name (valid when `named`): a buffer reused from message to
    /// message.
    name: String,
    named: bool,
    /// `name` shared by the facts it places, made at the first.
    shared: Option<std::sync::Arc<str>>,
    id: Option<[u8; 16]>,
    partition: Option<i32>,
}

impl ScanFrame {
    /// The topic this struct names, if it names one (so far).
    fn topic(&mut self) -> Option<ScanTopic> {
        match self.named {
            true => Some(ScanTopic::Name(
                self.shared
                    .get_or_insert_with(|| self.name.as_str().into())
                    .clone(),
            )),
            false => self.id.map(ScanTopic::Id),
        }
    }
}

/// A struct's fewest bytes (`Decoder::min_struct_size`) by (address,
/// version, flexible), in a small direct-mapped table per thread; address 0
/// is no struct's, so an empty entry never matches.
type MinSizes = [(usize, i16, bool, usize); 64];

thread_local! {
    static MIN_SIZES: std::cell::RefCell<MinSizes> =
        const { std::cell::RefCell::new([(0, 0, false, 0); 64]) };

    /// The open-struct stack, waiting list and fact lists of the last
    /// summary scan on this thread, lent to the next one: a few
    /// allocations fewer per message.
    static SCAN_SCRATCH: std::cell::RefCell<Scratch> =
        const { std::cell::RefCell::new(Scratch::new()) };
}

/// A summary scan's buffers kept from message to message: the open
/// structs and waiting facts, and the lists the facts are gathered in
/// before each is moved into a vector of its own size (a list grown by
/// doubling was allocated again at each power of two: a Fetch's placed
/// integers, several times a message).
struct Scratch {
    frames: Vec<ScanFrame>,
    waiting: Vec<Waiting>,
    errors: Vec<ScanError>,
    sets: Vec<ScanSet>,
    ints: Vec<ScanInt>,
    sources: Vec<ByteSource>,
}

impl Scratch {
    const fn new() -> Scratch {
        Scratch {
            frames: Vec::new(),
            waiting: Vec::new(),
            errors: Vec::new(),
            sets: Vec::new(),
            ints: Vec::new(),
            sources: Vec::new(),
        }
    }
}

/// A scratch fact list keeps at most this many entries' room.
const KEPT_FACTS: usize = 1024;

/// Moves what `list` gathered into a vector of its own size and leaves
/// `list` empty with its room (up to [`KEPT_FACTS`] entries) to be lent
/// again.
fn exact<T>(list: &mut Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(list.len());
    out.append(list);
    list.shrink_to(KEPT_FACTS);
    out
}

/// A scratch topic-name buffer keeps at most this much room (Kafka's topic
/// names are at most 249 bytes).
const KEPT_NAME: usize = 256;

/// The scratch waiting list keeps at most this much room.
const KEPT_WAITING: usize = 1024;

impl ScanFacts {
    /// Empty facts, with the thread's scratch buffers.
    fn with_scratch() -> Box<ScanFacts> {
        use std::mem::take;
        SCAN_SCRATCH.with_borrow_mut(|k| {
            k.waiting.clear();
            Box::new(ScanFacts {
                frames: take(&mut k.frames),
                waiting: take(&mut k.waiting),
                errors: take(&mut k.errors),
                sets: take(&mut k.sets),
                ints: take(&mut k.ints),
                sources: take(&mut k.sources),
                ..ScanFacts::default()
            })
        })
    }

    /// Gives the scratch buffers back to the thread, the facts gathered in
    /// them moved into lists of their own size (the facts keep no scratch).
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
        SCAN_SCRATCH.with_borrow_mut(|k| {
            // Each list goes back to the thread emptied, what it gathered
            // moved into the facts' own (the thread's were lent: empty).
            k.frames = frames;
            k.waiting = waiting;
            k.errors = std::mem::take(&mut self.errors);
            self.errors = exact(&mut k.errors);
            k.sets = std::mem::take(&mut self.sets);
            self.sets = exact(&mut k.sets);
            k.ints = std::mem::take(&mut self.ints);
            self.ints = exact(&mut k.ints);
            k.sources = std::mem::take(&mut self.sources);
            self.sources = exact(&mut k.sources);
        });
    }

    fn open(&mut self) {
        match self.frames.get_mut(self.depth) {
            Some(f) => {
                f.named = false;
                f.shared = None;
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
        let Some(f) = self.frames.get_mut(d) else {
            return;
        };
        let first = self
            .waiting
            .iter()
            .rposition(|w| w.0 != d)
            .map_or(0, |i| i + 1);
        let mut kept = first;
        for r in first..self.waiting.len() {
            let Some(&(_, list, i)) = self.waiting.get(r) else {
                break;
            };
            let place = match list {
                FactList::Sets => self.sets.get_mut(i).map(|s| &mut s.place),
                FactList::Errors => self.errors.get_mut(i).map(|e| &mut e.place),
                FactList::Ints => self.ints.get_mut(i).map(|n| &mut n.place),
            };
            let Some(place) = place else { continue };
            if place.partition.is_none() {
                place.partition = f.partition;
            }
            if place.topic.is_none() {
                place.topic = f.topic();
            }
            if place.topic.is_none() && d > 0 {
                if let Some(w) = self.waiting.get_mut(kept) {
                    *w = (d - 1, list, i);
                }
                kept += 1;
            }
        }
        self.waiting.truncate(kept);
    }

    fn wait(&mut self, list: FactList, i: usize) {
        if let Some(d) = self.depth.checked_sub(1) {
            self.waiting.push((d, list, i));
        }
    }

    fn error(&mut self, code: i16) {
        let nested = self.depth > 1;
        self.errors.push(ScanError {
            code,
            place: ScanPlace::default(),
            nested,
        });
        self.wait(FactList::Errors, self.errors.len() - 1);
    }

    fn set(&mut self, bytes: usize, counts: Option<SetCounts>, nodes: Vec<Node>) {
        self.sets.push(ScanSet {
            place: ScanPlace::default(),
            bytes,
            counts,
            nodes,
        });
        self.wait(FactList::Sets, self.sets.len() - 1);
    }

    #[inline(always)]
    fn int_field(&mut self, f: &'static FieldDef, v: i64) {
        if f.marks.has(Marks::PLACED_INT) {
            self.placed_int(f, v);
        }
        if !f.marks.has(Marks::PLACE_PARTITION) {
            return;
        }
        if let (Some(f), Ok(p)) = (self.innermost(), i32::try_from(v)) {
            if f.partition.is_none() {
                f.partition = Some(p);
            }
        }
    }

    /// A field marked [`Marks::PLACED_INT`]: kept with its place in a message
    /// that wants them, outside tagged fields.
    #[inline(never)]
    fn placed_int(&mut self, f: &'static FieldDef, v: i64) {
        if !self.want_ints || self.tagged_depth > 0 {
            return;
        }
        // Its struct's partition and the topic of the nearest struct that
        // names one, when both are read already (they come first in every
        // schema of `PLACED_INT_APIS`); else it waits for its struct to close.
        let mut place = ScanPlace::default();
        let open = self.frames.get_mut(..self.depth).unwrap_or_default();
        if let Some(inner) = open.last() {
            place.partition = inner.partition;
        }
        if place.partition.is_some() {
            place.topic = open.iter_mut().rev().find_map(ScanFrame::topic);
        }
        let known = place.topic.is_some();
        self.ints.push(ScanInt {
            name: f.name,
            value: v,
            place: if known { place } else { ScanPlace::default() },
        });
        if !known {
            self.wait(FactList::Ints, self.ints.len() - 1);
        }
    }

    /// A non-empty string field marked [`Marks::PLACE_TOPIC`], as text.
    /// `noted`: the message's topic list's copy of the name, shared rather
    /// than made again when a fact is placed.
    fn place_name(&mut self, name: &str, noted: Option<&std::sync::Arc<str>>) {
        if let Some(f) = self.innermost() {
            if !f.named {
                f.named = true;
                f.shared = noted.cloned();
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
pub(crate) const EMBEDDING_APIS: [ApiKey; 2] = [ApiKey::JOIN_GROUP, ApiKey::SYNC_GROUP];

/// The facts of a request that decodes cleanly (no error, no warning),
/// without its tree; `None` otherwise.
pub fn summarize_request(msg: &[u8], opts: &DecodeOptions) -> Option<Summary> {
    summarize(msg, None, opts)
}

/// The facts of a response to (`api_key`, `api_version`) that decodes cleanly,
/// without its tree; `None` otherwise.
pub fn summarize_response(
    msg: &[u8],
    api_key: i16,
    api_version: i16,
    opts: &DecodeOptions,
) -> Option<Summary> {
    summarize(msg, Some((api_key, api_version)), opts)
}

/// One message (`response` as for [`decode_streamed`]) walked into the
/// summary's sink: its [`Summary`] when every byte decoded.
fn summarize(msg: &[u8], response: Option<(i16, i16)>, opts: &DecodeOptions) -> Option<Summary> {
    let key = match response {
        None => Reader::new(msg.get(4..).unwrap_or(&[])).i16().ok()?,
        Some((key, version)) => schema::message(key, MessageKind::Response, version)?.api_key,
    };
    if opts.records || EMBEDDING_APIS.contains(&ApiKey(key)) {
        return None;
    }
    let mut d = Decoder::new(msg, opts, response);
    let mut sum = Summary {
        facts: opts.records_headers_only.then(ScanFacts::with_scratch),
        ..Summary::default()
    };
    if let Some(x) = &mut sum.facts {
        x.want_ints = schema::PLACED_INT_APIS.contains(&ApiKey(key));
    }
    let mut out = Scan {
        sum: &mut sum,
        top: false,
    };
    if let Some(end) = d.frame(&mut out) {
        d.message(end, None, &mut out);
    }
    if let Some(x) = &mut sum.facts {
        x.return_scratch();
        if response.is_none() {
            x.acks = sum.acks;
        }
    }
    // A warning is left to the tree too: the tree's decode may read the
    // message another way (ControlledShutdown v0 with header v1).
    if d.error.is_some() || d.warning.is_some() {
        return None;
    }
    (sum.api_key, sum.api_version) = d.key_version;
    sum.correlation_id = d.correlation_id;
    sum.client_id = d.client_id;
    sum.topics = d.topics;
    sum.topic_ids = d.topic_ids;
    Some(sum)
}

/// What the walker reads from a primitive field before handing it to a sink.
#[derive(Clone, Copy)]
enum Read<'b> {
    /// A fixed-width value.
    Fixed(Fixed),
    /// A string, bytes or records: the length prefix, where the bytes
    /// begin, and the bytes (`None`: null).
    Len(LenPrefix, usize, Option<&'b [u8]>),
}

/// A fixed-width value as read: a [`Value`] without its variants that own
/// memory, so that what a sink does not keep needs no dropping.
#[derive(Clone, Copy)]
enum Fixed {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Uuid([u8; 16]),
}

impl From<Fixed> for Value {
    fn from(v: Fixed) -> Value {
        match v {
            Fixed::Bool(b) => Value::Bool(b),
            Fixed::Int(i) => Value::Int(i),
            Fixed::Uint(u) => Value::Uint(u),
            Fixed::Float(x) => Value::Float(x),
            Fixed::Uuid(u) => Value::Uuid(u),
        }
    }
}

/// What the walker hands what it reads to: the tree, JSON or text ([`Out`])
/// or the summary ([`Scan`]). The walker is generic over it, so what a sink
/// does not need (nodes, descriptions, paths) costs nothing.
trait Sink {
    /// Whether the sink takes nodes. Without, the walker makes none, keeps
    /// no field path, and stops at the first problem, recording it without
    /// marking its bytes.
    const NODES: bool;
    /// The sink taking a parent's children.
    type Kids<'s>: Sink
    where
        Self: 's;
    /// Takes a node made whole, with its children (`sources`: the message's
    /// byte sources so far).
    fn push(&mut self, n: Node, sources: &[ByteSource]);
    /// Opens a parent whose node comes later to [`Sink::close`]; the sink
    /// returned takes its children (`kids`, for a tree).
    fn open<'s>(&'s mut self, kids: &'s mut Vec<Node>) -> Self::Kids<'s>;
    /// The sink for the children of a node handed over whole by
    /// [`Sink::push`] (tagged fields): `kids`, for nodes.
    #[inline(always)]
    fn whole<'s>(&'s mut self, kids: &'s mut Vec<Node>) -> Self::Kids<'s> {
        self.open(kids)
    }
    /// Closes the parent opened last: `n` is its node.
    #[inline(always)]
    fn close(&mut self, n: Node) {
        self.push(n, &[]);
    }
    /// Marks the parent these are the children of as the message body.
    fn mark_body(&mut self) {}
    /// The description of a schema field's node, when the sink shows one.
    #[inline(always)]
    fn about(&self, _f: &'static FieldDef) -> Option<Text> {
        None
    }
    /// Room for `k` more children.
    fn reserve(&mut self, _k: usize) {}
    /// The fields of `s` begin.
    fn enter(&mut self, _s: &'static StructDef, _d: &Decoder<'_>) {}
    /// The fields of the struct entered last end.
    fn leave(&mut self) {}
    /// A section of known tagged fields (`entry` false) or one of its
    /// entries (true) begins (`open`) or ends.
    fn tagged(&mut self, _open: bool, _entry: bool) {}
    /// A primitive field, or element `i` of an array of primitives
    /// (`Some(i)`), read at `span` (start, end).
    fn value(
        &mut self,
        d: &mut Decoder<'_>,
        f: &'static FieldDef,
        p: Prim,
        elem: Option<usize>,
        span: (usize, usize),
        v: Read<'_>,
    ) -> Step;
    /// The width of an array's elements when the sink needs nothing from
    /// them, so that the walker skips them at once (a struct's then still
    /// reads its tagged fields).
    fn skip(&self, _d: &Decoder<'_>, _e: Elem, _flex: bool) -> Option<usize> {
        None
    }
}

/// A node made only for a sink that takes nodes (a placeholder otherwise).
#[inline(always)]
fn node<S: Sink>(make: impl FnOnce() -> Node) -> Node {
    if S::NODES {
        make()
    } else {
        Node::new("", "", Value::None, 0, 0, Role::Frame)
    }
}

impl<'j> Sink for Out<'_, 'j> {
    const NODES: bool = true;
    type Kids<'s>
        = Out<'s, 'j>
    where
        Self: 's;

    #[inline]
    fn push(&mut self, n: Node, sources: &[ByteSource]) {
        match self {
            Out::Tree(v) => v.push(n),
            Out::Json(j) => j.node(n, sources),
            Out::Text(t) => t.node(n, sources),
        }
    }

    #[inline]
    fn open<'s>(&'s mut self, kids: &'s mut Vec<Node>) -> Out<'s, 'j> {
        match self {
            Out::Tree(_) => Out::Tree(kids),
            Out::Json(j) => {
                j.begin();
                Out::Json(j)
            }
            Out::Text(t) => {
                t.begin();
                Out::Text(t)
            }
        }
    }

    #[inline]
    fn whole<'s>(&'s mut self, kids: &'s mut Vec<Node>) -> Out<'s, 'j> {
        Out::Tree(kids)
    }

    #[inline]
    fn close(&mut self, n: Node) {
        match self {
            Out::Tree(v) => v.push(n),
            Out::Json(j) => j.end(n),
            Out::Text(t) => t.end(n),
        }
    }

    fn mark_body(&mut self) {
        match self {
            Out::Tree(_) => {}
            Out::Json(j) => j.mark_body(),
            Out::Text(t) => t.mark_body(),
        }
    }

    /// None for JSON, which has no descriptions (a lookup per node spared).
    #[inline]
    fn about(&self, f: &'static FieldDef) -> Option<Text> {
        (!matches!(self, Out::Json(_))).then(|| Text::Borrowed(cached_description(f)))
    }

    #[inline]
    fn reserve(&mut self, k: usize) {
        if let Out::Tree(v) = self {
            v.reserve_exact(k);
        }
    }

    /// One node per field present, and one for the tagged fields: room
    /// made once rather than grown (a tree's; JSON needs none).
    fn enter(&mut self, s: &'static StructDef, d: &Decoder<'_>) {
        if let Out::Tree(v) = self {
            let present = s.fields.iter().filter(|f| d.present(f)).count();
            v.reserve_exact(present + usize::from(d.flexible));
        }
    }

    fn value(
        &mut self,
        d: &mut Decoder<'_>,
        f: &'static FieldDef,
        p: Prim,
        elem: Option<usize>,
        (at, end): (usize, usize),
        v: Read<'_>,
    ) -> Step {
        let Some(i) = elem else {
            return d.prim_node(f, p, (at, end), v, self);
        };
        let (value, detail) = match v {
            Read::Len(lp, _, None) => (Value::Null, Some(lp.detail())),
            Read::Len(lp, _, Some(b)) if p == Prim::String => {
                let s = String::from_utf8_lossy(b).into_owned();
                d.note_topic(f, &s);
                (Value::Str(s), Some(lp.detail()))
            }
            Read::Len(lp, _, Some(b)) => (Value::bytes(b), Some(lp.detail())),
            Read::Fixed(v) => {
                let v = Value::from(v);
                let m = meaning(f, &v);
                (v, m)
            }
        };
        let name = indexed_text(f.name, i as u64);
        let ty = Text::Borrowed(p.name());
        if json_leaf(
            self,
            &name,
            &ty,
            &value,
            detail.as_ref(),
            (d.base + at, end - at),
        ) {
            return Ok(());
        }
        let mut n = Node::new(name, p.name(), value, d.base + at, end - at, d.role);
        n.detail = detail;
        self.push(n, &d.sources);
        Ok(())
    }
}

/// A childless node without an error at `(offset, length)` written as JSON
/// from its parts, without a node, when `out` is plain JSON: whether it was.
#[inline(always)]
fn json_leaf(
    out: &mut Out<'_, '_>,
    name: &Text,
    ty: &Text,
    value: &Value,
    detail: Option<&Text>,
    (offset, length): (usize, usize),
) -> bool {
    match out {
        Out::Json(j) if j.plain() => {
            j.leaf(Parts {
                name,
                ty,
                value,
                detail,
                error: None,
                offset,
                length,
                source: 0,
            });
            true
        }
        _ => false,
    }
}

/// The summary's sink: notes a [`Summary`]'s facts as the walker reads
/// them, makes no node, and needs nothing from fixed-width elements without
/// a fact in them, which the walker skips by their length.
struct Scan<'s> {
    sum: &'s mut Summary,
    /// Taking the body's own fields (`ThrottleTimeMs`, `Acks`).
    top: bool,
}

impl Sink for Scan<'_> {
    const NODES: bool = false;
    type Kids<'s>
        = Scan<'s>
    where
        Self: 's;

    /// The walker hands this sink only placeholders (`node`), which own
    /// nothing: forgotten (closed ones too), they spare a call of `Node`'s
    /// drop glue each.
    #[inline(always)]
    fn push(&mut self, n: Node, _: &[ByteSource]) {
        std::mem::forget(n);
    }

    #[inline(always)]
    fn open<'s>(&'s mut self, _: &'s mut Vec<Node>) -> Scan<'s> {
        Scan {
            sum: self.sum,
            top: false,
        }
    }

    #[inline(always)]
    fn mark_body(&mut self) {
        self.top = true;
    }

    #[inline(always)]
    fn enter(&mut self, _: &'static StructDef, _: &Decoder<'_>) {
        if let Some(x) = &mut self.sum.facts {
            x.open();
        }
    }

    #[inline(always)]
    fn leave(&mut self) {
        if let Some(x) = &mut self.sum.facts {
            x.close();
        }
    }

    /// Places: the tree hangs a known tagged field under a `tagged_fields`
    /// node and an entry node of its own, each a struct to `stats`' places
    /// (not in the header, which has none).
    #[inline(always)]
    fn tagged(&mut self, open: bool, entry: bool) {
        let Some(x) = &mut self.sum.facts else { return };
        if x.depth == 0 {
            return;
        }
        if open {
            x.open();
            x.tagged_depth += u32::from(entry);
        } else {
            x.tagged_depth = x.tagged_depth.saturating_sub(u32::from(entry));
            x.close();
        }
    }

    #[inline(always)]
    fn value(
        &mut self,
        d: &mut Decoder<'_>,
        f: &'static FieldDef,
        p: Prim,
        elem: Option<usize>,
        _: (usize, usize),
        v: Read<'_>,
    ) -> Step {
        if elem.is_some() {
            return self.elem(d, f, p, v);
        }
        match v {
            Read::Len(_, start, b) => {
                if let (Some(b), Prim::String) = (b, p) {
                    // A topic's name is read as text once, for both uses.
                    let topic = f.marks.has(Marks::TOPIC_NAME) && d.opts.summary_topics;
                    let place = self.sum.facts.is_some() && f.marks.has(Marks::PLACE_TOPIC);
                    if (topic || place) && !b.is_empty() {
                        let name = name_text(b);
                        let noted = match topic {
                            true => d.note_topic(f, &name),
                            false => None,
                        };
                        if let (true, Some(x)) = (place, &mut self.sum.facts) {
                            x.place_name(&name, noted.as_ref());
                        }
                    }
                }
                if let (true, Prim::String, Some(b), Some(x)) =
                    (self.top, p, b, &mut self.sum.facts)
                {
                    if f.name == "GroupId" && x.group_id.is_none() {
                        x.group_id = Some(name_text(b).into_owned());
                    }
                }
                if let (Prim::Records, Some(b)) = (p, b) {
                    self.sum.record_bytes += b.len() as u64;
                }
                match (&mut self.sum.facts, p) {
                    // Offsets inside a tagged field are not the message's.
                    (Some(x), Prim::Records) if x.tagged_depth == 0 => {
                        d.scan_records(x, b.unwrap_or(&[]), start)
                    }
                    (Some(_), Prim::Records) => Err(d.refuse()),
                    _ => Ok(()),
                }
            }
            Read::Fixed(Fixed::Int(v)) => self.int(d, f, v),
            Read::Fixed(Fixed::Uuid(u)) => {
                if let Some(x) = &mut self.sum.facts {
                    x.uuid_field(f.marks, u);
                }
                d.note_topic_id(f, &u);
                Ok(())
            }
            Read::Fixed(_) => Ok(()),
        }
    }

    /// Fixed-width primitives, and structs of fixed-width fields without a
    /// fact (no error code, no topic id) when no place is wanted.
    #[inline(always)]
    fn skip(&self, d: &Decoder<'_>, e: Elem, flex: bool) -> Option<usize> {
        match e {
            Elem::Prim(Prim::String | Prim::Bytes | Prim::Records) => None,
            Elem::Prim(p) => Some(prim_min_size(p, flex)),
            Elem::Struct(s) if self.sum.facts.is_none() => d.quiet_fixed_size(s),
            Elem::Struct(_) => None,
        }
    }
}

impl Scan<'_> {
    /// An element of an array of strings (topic names) or bytes.
    #[inline(always)]
    fn elem(&mut self, d: &mut Decoder<'_>, f: &'static FieldDef, p: Prim, v: Read<'_>) -> Step {
        match (v, p) {
            // Arrays of record sets are not in any schema; read such a tree.
            (_, Prim::Records) if self.sum.facts.is_some() => Err(d.refuse()),
            (Read::Len(_, _, Some(b)), Prim::String)
                if f.marks.has(Marks::TOPIC_NAME) && d.opts.summary_topics =>
            {
                d.note_topic(f, &name_text(b));
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// An integer field: error codes, places, and the body's top-level ints
    /// (`TOP_INT_NAMES`).
    #[inline(always)]
    fn int(&mut self, d: &mut Decoder<'_>, f: &'static FieldDef, v: i64) -> Step {
        if f.marks.has(Marks::ERROR_CODE) && v != 0 {
            if let Ok(c) = i16::try_from(v) {
                self.sum.error_codes.push(c);
                if let Some(x) = &mut self.sum.facts {
                    x.error(c);
                }
            }
        }
        if let Some(x) = &mut self.sum.facts {
            // Record-level errors (KIP-467) are read from the tree.
            if f.marks.has(Marks::BATCH_INDEX) {
                return Err(d.refuse());
            }
            x.int_field(f, v);
        }
        if self.top && f.marks.has(Marks::TOP_INT) {
            let s = &mut self.sum;
            let slot = match f.name {
                "ThrottleTimeMs" => &mut s.throttle_time_ms,
                "MaxWaitMs" => &mut s.max_wait_ms,
                "MinBytes" => &mut s.min_bytes,
                _ => {
                    s.acks.get_or_insert(v);
                    return Ok(());
                }
            };
            if slot.is_none() {
                *slot = i32::try_from(v).ok();
            }
        }
        Ok(())
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

/// Decodes data schema `def` from the start of `data` (at `base` in its
/// source), which begins with the int16 version of the structure: a
/// `Version` node of its own, or the schema's first field when the schema
/// names it (`Version`, as LeaderChangeMessage does). A version newer than
/// the schema's newest is read as the newest (newer versions add fields at
/// the end), as Kafka reads the consumer protocol and control records.
/// Returns the nodes and how many bytes they read, or `None` for that
/// count after a problem, which a `malformed` node marks to the end of
/// `data`. `None` when the version does not read or is older than the
/// schema's.
pub(crate) fn decode_data(
    data: &[u8],
    base: usize,
    def: &'static MessageDef,
    role: Role,
) -> Option<(Vec<Node>, Option<usize>)> {
    let opts = DecodeOptions::default();
    let mut d = Decoder::new(data, &opts, None);
    d.base = base;
    let mut r = Reader::new(data);
    let version = r.i16().ok()?;
    // Newer versions of the consumer protocol only add fields at the end, and
    // Kafka reads them with the newest version it knows.
    let v = version.min(def.valid.max);
    if v < def.valid.min {
        return None;
    }
    // A schema whose first field is that version reads it itself.
    let mut nodes = Vec::new();
    if def
        .body
        .fields
        .first()
        .is_some_and(|f| f.name == "Version" && f.type_name == "int16")
    {
        r = Reader::new(data);
    } else {
        let (value, about) = (
            Value::Int(version.into()),
            "version of the embedded structure",
        );
        nodes.push(Node::new("Version", "int16", value, base, 2, role).with_about(about));
    }
    d.version = v;
    d.flexible = def.is_flexible(v);
    d.role = role;
    d.path.push(def.name);
    let ok = d
        .fields(&mut r, def.body, &mut Out::Tree(&mut nodes))
        .is_ok();
    Some((nodes, (ok && d.error.is_none()).then_some(r.pos())))
}

/// Signals that decoding stopped; the reason is in `Decoder::error`.
#[derive(Debug)]
struct Stop;

type Step = Result<(), Stop>;

/// The walker: one message's bytes read by the schema tables into a [`Sink`].
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
    warning: Option<DecodeWarning>,
    /// Request or response.
    kind: Kind,
    /// The api key of the message, for embedded-protocol and secret rules.
    api_key: i16,
    /// The api key and version the message is read with.
    key_version: (Option<i16>, Option<i16>),
    correlation_id: Option<i32>,
    client_id: Option<String>,
    /// The value of the last `ProtocolType` string seen, if any.
    protocol_type: Option<String>,
    /// Set once a `malformed` node has taken the rest of the bytes.
    stopped: bool,
    topics: Topics,
    topic_ids: Vec<[u8; 16]>,
}

impl<'a> Decoder<'a> {
    /// A walker of `msg`: a request, or with `response` the answer to a
    /// request of that api key and version.
    fn new(msg: &'a [u8], opts: &'a DecodeOptions, response: Option<(i16, i16)>) -> Decoder<'a> {
        let (key, version) = response.unzip();
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
            warning: None,
            kind: if response.is_some() {
                Kind::Response
            } else {
                Kind::Request
            },
            api_key: -1,
            key_version: (key, version),
            correlation_id: None,
            client_id: None,
            protocol_type: None,
            stopped: false,
            topics: Topics::new(),
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

    /// A sink declines the message (the summary, for what it leaves to the tree).
    #[cold]
    fn refuse(&mut self) -> Stop {
        self.fail(0, "left to the tree");
        Stop
    }

    /// Appends a node marking the bytes from `at` on as undecodable and records the problem.
    #[cold]
    fn malformed<S: Sink>(&mut self, r: &Reader<'_>, at: usize, what: String, out: &mut S) -> Stop {
        let off = self.base + at;
        let len = r.buf().len().saturating_sub(at);
        if S::NODES {
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
        }
        self.fail(off, what);
        if self.base == 0 {
            self.stopped = true;
        }
        Stop
    }

    #[cold]
    fn wire<S: Sink>(&mut self, r: &Reader<'_>, e: WireError, name: &str, out: &mut S) -> Stop {
        let what = match &e {
            WireError::Truncated { .. } => format!("{name}: truncated, {e}"),
            WireError::VarintOverflow { .. } => format!("{name}: {e}"),
        };
        self.malformed(r, e.offset(), what, out)
    }

    /// The size prefix: pushes the Frame node and returns where the message ends,
    /// or `None` when not even the size is there.
    fn frame<S: Sink>(&mut self, out: &mut S) -> Option<usize> {
        let len = self.msg.len();
        let mut frame = node::<S>(|| {
            Node::new("Frame", "", Value::None, 0, 4.min(len), Role::Frame)
                .with_about("length-prefixed framing")
        });
        let (end, problem) = match Reader::new(self.msg).i32() {
            Err(e) => {
                let what = format!("size: truncated, {e}");
                if S::NODES {
                    frame.error = Some(what.clone());
                }
                (None, Some((0, what)))
            }
            Ok(size) => {
                if S::NODES {
                    frame.children.push(
                        Node::new("size", "int32", Value::Int(size.into()), 0, 4, Role::Frame)
                            .with_about("bytes in the message after this field"),
                    );
                }
                match usize::try_from(size).ok().and_then(|s| s.checked_add(4)) {
                    Some(w) if w == len => (Some(w), None),
                    Some(w) if w < len => {
                        let what = format!("{} bytes beyond the size field", len - w);
                        (Some(w), Some((w, what)))
                    }
                    Some(w) => {
                        let (want, have) = (w - 4, len - 4);
                        let what =
                            format!("message truncated: size says {want} bytes, {have} present");
                        (Some(len), Some((len, what)))
                    }
                    None => (
                        Some(len),
                        Some((0, format!("negative message size {size}"))),
                    ),
                }
            }
        };
        if let Some((at, what)) = problem {
            self.fail(at, what);
        }
        out.push(frame, &self.sources);
        end
    }

    /// A message after its size prefix (ending at `end`), a request's
    /// header version `header` or the schema's: the body's definition, when
    /// known and the header decoded.
    fn message<S: Sink>(
        &mut self,
        end: usize,
        header: Option<i16>,
        out: &mut S,
    ) -> Option<&'static MessageDef> {
        let msg = self.msg;
        let mut r = Reader::new(msg.get(..end).unwrap_or(msg));
        let _ = r.take(4);
        let request = self.kind == Kind::Request;
        let (kind, role) = if request {
            // Peek api key and version to choose the header version; they are decoded
            // again as header fields below.
            let peek = |at: usize| Reader::new(msg.get(at..).unwrap_or(&[])).i16().ok();
            self.key_version = (peek(4), peek(6));
            (MessageKind::Request, Role::RequestBody)
        } else {
            (MessageKind::Response, Role::ResponseBody)
        };
        let (key, ver) = self.key_version;
        let def = match (key, ver) {
            (Some(k), Some(v)) => schema::message(k, kind, v),
            _ => None,
        };
        let hv = match (header, key, ver) {
            (Some(h), _, _) => h,
            (None, Some(k), Some(v)) if !request => schema::response_header_version(k, v),
            (None, Some(k), Some(v)) if def.is_some() => schema::request_header_version(k, v),
            _ => 1,
        };
        let header_ok = self.header(&mut r, hv, out).is_ok();
        if header_ok {
            match (def, key, ver) {
                (Some(def), _, Some(v)) => self.body(&mut r, def, v, role, out),
                (None, Some(k), Some(v)) => self.unknown_body(&mut r, k, v, kind, out),
                _ => {}
            }
        }
        self.finish(&mut r, end, out);
        def.filter(|_| header_ok)
    }

    /// Marks bytes left after the body (a warning: the body decoded) and
    /// any bytes beyond the size field.
    fn finish<S: Sink>(&mut self, r: &mut Reader<'_>, end: usize, out: &mut S) {
        if self.stopped {
            return;
        }
        if r.remaining() > 0 {
            let (offset, len) = (self.base + r.pos(), r.remaining());
            let warning = DecodeWarning::Trailing {
                offset,
                len,
                kind: self.kind,
            };
            if S::NODES {
                let bytes = r.buf().get(r.pos()..).unwrap_or(&[]);
                let n = Node::new(
                    "trailing bytes",
                    "bytes",
                    Value::bytes(bytes),
                    offset,
                    len,
                    self.role,
                )
                .with_about(format!("warning: {len} {}", warning.what()));
                out.push(n, &self.sources);
            }
            self.warning = Some(warning);
            r.skip_rest();
        }
        if end < self.msg.len() && S::NODES {
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

    /// The request header or the response header, version `hv`.
    fn header<S: Sink>(&mut self, r: &mut Reader<'_>, hv: i16, out: &mut S) -> Step {
        let (name, about) = match (self.kind, self.key_version.0) {
            (Kind::Request, _) => ("RequestHeader", "common request header"),
            (_, Some(k)) if ApiKey(k) == ApiKey::API_VERSIONS => (
                "ResponseHeader",
                "common response header (always v0 for ApiVersions)",
            ),
            _ => ("ResponseHeader", "common response header"),
        };
        let at = r.pos();
        let mut n = node::<S>(|| {
            let ty = version_text(&HEADER_VERSIONS, hv, |v| format!("v{v}"));
            Node::new(name, ty, Value::None, at, 0, Role::Header).with_about(about)
        });
        if S::NODES {
            self.path.push(name);
        }
        let res = self.header_fields(r, hv, &mut out.open(&mut n.children));
        if S::NODES {
            self.path.pop();
        }
        n.length = r.pos() - at;
        out.close(n);
        res
    }

    /// The header's fields: a request's api key, version, correlation id,
    /// client id (header v1+) and tagged fields (v2+); a response's
    /// correlation id and tagged fields (v1+).
    fn header_fields<S: Sink>(&mut self, r: &mut Reader<'_>, hv: i16, out: &mut S) -> Step {
        let request = self.kind == Kind::Request;
        let about = if request {
            let about = "which API this request invokes";
            self.header_int(r, "request_api_key", about, false, out)?;
            self.header_int(r, "request_api_version", "version of that API", false, out)?;
            "returned unchanged in the response"
        } else {
            "the correlation id of the request answered"
        };
        let c = self.header_int(r, "correlation_id", about, true, out)?;
        self.correlation_id = i32::try_from(c).ok();
        if request && hv >= 1 {
            // ClientId keeps its int16 length even in flexible header v2 so that any
            // broker can read an ApiVersions request's header.
            let at = r.pos();
            let len = r.i16().map_err(|e| self.wire(r, e, "client_id", out))?;
            if len >= 0 {
                let b = r
                    .take(len as usize)
                    .map_err(|e| self.wire(r, e, "client_id", out))?;
                self.client_id = Some(String::from_utf8_lossy(b).into_owned());
            }
            let n = node::<S>(|| {
                let value = self.client_id.clone().map_or(Value::Null, Value::Str);
                Node::new(
                    "client_id",
                    "nullable_string",
                    value,
                    at,
                    r.pos() - at,
                    Role::Header,
                )
                .with_detail(INT16_LEN.get(len_index(len.into())))
                .with_about("always a non-flexible int16-prefixed string")
            });
            out.push(n, &self.sources);
        }
        // The header's tagged fields: a request's from header v2, a response's from v1.
        let (from, def) = if request {
            (2, schema::REQUEST_HEADER.body)
        } else {
            (1, schema::RESPONSE_HEADER.body)
        };
        if hv < from {
            return Ok(());
        }
        self.flexible = true;
        self.version = hv;
        self.role = Role::Header;
        self.tagged_fields(r, def, out, "number of tagged fields in the header")
    }

    /// One of the header's integers (int16, or int32 when `int32`).
    fn header_int<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        name: &'static str,
        about: &'static str,
        int32: bool,
        out: &mut S,
    ) -> Result<i64, Stop> {
        let at = r.pos();
        let v = if int32 {
            r.i32().map(i64::from)
        } else {
            r.i16().map(i64::from)
        }
        .map_err(|e| self.wire(r, e, name, out))?;
        let n = node::<S>(|| {
            let ty = if int32 { "int32" } else { "int16" };
            let mut n = Node::new(name, ty, Value::Int(v), at, r.pos() - at, Role::Header)
                .with_about(about);
            if name == "request_api_key" {
                n.detail = i16::try_from(v)
                    .ok()
                    .and_then(schema::api_name)
                    .map(Text::Borrowed);
            }
            n
        });
        out.push(n, &self.sources);
        Ok(v)
    }

    fn unknown_body<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        key: i16,
        ver: i16,
        kind: MessageKind,
        out: &mut S,
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

    fn body<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static MessageDef,
        version: i16,
        role: Role,
        out: &mut S,
    ) {
        self.version = version;
        self.flexible = def.is_flexible(version);
        self.role = role;
        self.api_key = def.api_key;
        if S::NODES {
            self.path.push(def.name);
        }
        let at = r.pos();
        let mut node = node::<S>(|| {
            let about = version_text(&BODY_VERSIONS, version, |v| {
                format!("message body, version {v}")
            });
            Node::new(def.name, "struct", Value::None, at, 0, role).with_about(about)
        });
        {
            let mut kids = out.open(&mut node.children);
            kids.mark_body();
            let _ = self.fields(r, def.body, &mut kids);
        }
        node.length = r.pos() - at;
        if S::NODES {
            self.path.pop();
        }
        out.close(node);
    }

    /// Whether `f` is in this version's fields (not among its tagged fields).
    #[inline(always)]
    fn present(&self, f: &FieldDef) -> bool {
        f.versions.contains(self.version) && !f.tagged.contains(self.version)
    }

    /// Decodes the fields of `def` present in this version, then its tagged fields.
    fn fields<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        out: &mut S,
    ) -> Step {
        out.enter(def, self);
        for f in def.fields {
            if self.present(f) {
                self.field(r, f, out)?;
            }
        }
        if self.flexible {
            self.tagged_fields(r, def, out, TAGGED_COUNT)?;
        }
        out.leave();
        Ok(())
    }

    fn field_flexible(&self, f: &FieldDef) -> bool {
        match f.flexible {
            Some(v) => v.contains(self.version),
            None => self.flexible,
        }
    }

    // Inlined into `fields`' loop: a call per field and its register saves
    // were about a tenth of the summary's instructions. `array`, the
    // recursion's other step, stays out of line.
    #[inline(always)]
    fn field<S: Sink>(&mut self, r: &mut Reader<'_>, f: &'static FieldDef, out: &mut S) -> Step {
        if S::NODES {
            self.path.push(f.name);
        }
        let res = match f.kind {
            FieldKind::Prim(p) => {
                let at = r.pos();
                let v = self.read(r, f, p, out)?;
                out.value(self, f, p, None, (at, r.pos()), v)
            }
            FieldKind::Struct(s) => self.struct_field(r, f, s, out),
            FieldKind::Array(e) => self.array(r, f, e, out),
        };
        if S::NODES {
            self.path.pop();
        }
        res
    }

    /// Reads a primitive of `f`: a fixed-width value, or a length prefix
    /// and the bytes it counts.
    #[inline(always)]
    fn read<'b, S: Sink>(
        &mut self,
        r: &mut Reader<'b>,
        f: &FieldDef,
        p: Prim,
        out: &mut S,
    ) -> Result<Read<'b>, Stop> {
        let v = match p {
            Prim::String | Prim::Bytes | Prim::Records => return self.read_len(r, f, p, out),
            Prim::Bool => r.u8().map(|b| Fixed::Bool(b != 0)),
            Prim::Int8 => r.i8().map(|v| Fixed::Int(v.into())),
            Prim::Int16 => r.i16().map(|v| Fixed::Int(v.into())),
            Prim::Uint16 => r.u16().map(|v| Fixed::Uint(v.into())),
            Prim::Int32 => r.i32().map(|v| Fixed::Int(v.into())),
            Prim::Uint32 => r.u32().map(|v| Fixed::Uint(v.into())),
            Prim::Int64 => r.i64().map(Fixed::Int),
            Prim::Float64 => r.f64().map(Fixed::Float),
            Prim::Uuid => r.uuid().map(Fixed::Uuid),
        };
        v.map(Read::Fixed).map_err(|e| self.wire(r, e, f.name, out))
    }

    /// Reads a string, bytes or records: its length prefix and the bytes it counts.
    #[inline(always)]
    fn read_len<'b, S: Sink>(
        &mut self,
        r: &mut Reader<'b>,
        f: &FieldDef,
        p: Prim,
        out: &mut S,
    ) -> Result<Read<'b>, Stop> {
        let at = r.pos();
        let lp = LenPrefix::read(r, self.field_flexible(f), p != Prim::String)
            .map_err(|e| self.wire(r, e, f.name, out))?;
        // Only -1 means null; any other negative length is invalid.
        if lp.raw < -1 {
            let what = format!("{}: invalid length {}", f.name, lp.raw);
            return Err(self.malformed(r, at, what, out));
        }
        let start = r.pos();
        let b = match lp.len {
            Some(len) => Some(r.take(len).map_err(|e| self.wire(r, e, f.name, out))?),
            None => None,
        };
        Ok(Read::Len(lp, start, b))
    }

    /// The node of a primitive field read at `at..end` (the tree's, JSON's
    /// and text's [`Sink::value`]).
    #[inline(never)]
    fn prim_node(
        &mut self,
        f: &'static FieldDef,
        p: Prim,
        (at, end): (usize, usize),
        v: Read<'_>,
        out: &mut Out<'_, '_>,
    ) -> Step {
        let secret = p == Prim::Bytes && self.is_secret(f) && !self.opts.show_secrets;
        let (value, detail, children) = match v {
            Read::Len(lp, _, None) => {
                let mut n = Node::new(
                    f.name,
                    f.type_name,
                    Value::Null,
                    self.base + at,
                    end - at,
                    self.role,
                )
                .with_detail(lp.detail())
                .with_about(Text::Borrowed(cached_description(f)));
                if !f.nullable.contains(self.version) {
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
                    n.children
                        .push(self.length_node(at, end - at, lp, RECORDS_LENGTH));
                }
                out.push(n, &self.sources);
                return Ok(());
            }
            Read::Len(lp, start, Some(b)) => match p {
                Prim::String => {
                    let s = String::from_utf8_lossy(b).into_owned();
                    if f.name == "ProtocolType" {
                        self.protocol_type = Some(s.clone());
                    }
                    self.note_topic(f, &s);
                    (Value::Str(s), Some(lp.detail()), Vec::new())
                }
                Prim::Bytes => {
                    let value = if secret {
                        Value::Text(format!("<redacted, {} bytes>", b.len()).into())
                    } else {
                        Value::bytes(b)
                    };
                    let kids = self.embedded(f, b, self.base + start);
                    (value, Some(lp.detail()), kids)
                }
                _ => {
                    let (summary, kids) = self.records_nodes(b, at, start, lp);
                    (Value::Text(summary.into()), None, kids)
                }
            },
            Read::Fixed(v) => {
                if let Fixed::Uuid(u) = &v {
                    self.note_topic_id(f, u);
                }
                let v = Value::from(v);
                let detail = meaning(f, &v);
                (v, detail, Vec::new())
            }
        };
        let (name, ty) = (Text::Borrowed(f.name), Text::Borrowed(f.type_name));
        let span = (self.base + at, end - at);
        if children.is_empty()
            && !secret
            && json_leaf(out, &name, &ty, &value, detail.as_ref(), span)
        {
            return Ok(());
        }
        // Built in place (a literal, not a builder chain) to spare a copy.
        let n = Node {
            name,
            ty,
            value,
            detail,
            offset: self.base + at,
            length: end - at,
            source: 0,
            role: self.role,
            about: out.about(f),
            error: None,
            secret,
            children,
        };
        out.push(n, &self.sources);
        Ok(())
    }

    /// A records field's value and children: its length, then its batches
    /// (decoded when records are, in the message's own bytes).
    fn records_nodes(
        &mut self,
        b: &[u8],
        at: usize,
        start: usize,
        lp: LenPrefix,
    ) -> (String, Vec<Node>) {
        let mut kids = vec![self.length_node(at, start - at, lp, RECORDS_LENGTH)];
        if !self.opts.records || self.base != 0 {
            return (format!("{} bytes", b.len()), kids);
        }
        let rs = decode_record_set(b, start, 0, self.opts, &mut self.sources);
        if let Some((offset, source, what)) = rs.problem {
            let path = self.path.join(".");
            (self.error).get_or_insert(DecodeError {
                offset,
                source,
                path,
                what,
            });
        }
        kids.extend(rs.nodes);
        (rs.summary, kids)
    }

    /// A record set of the summary: counted, or decoded to its batch
    /// headers when it cannot be counted (out of line: rare next to the
    /// other fields, and heavy).
    #[inline(never)]
    fn scan_records(&mut self, x: &mut ScanFacts, b: &[u8], at: usize) -> Step {
        let opts = DecodeOptions {
            records: true,
            ..self.opts.clone()
        };
        match count_record_set(b, at, &opts, &mut x.sources) {
            Some(c) => x.set(b.len(), Some(c), Vec::new()),
            None => {
                let rs = decode_record_set(b, at, 0, &opts, &mut x.sources);
                if rs.problem.is_some() {
                    return Err(self.refuse());
                }
                x.set(b.len(), None, rs.nodes);
            }
        }
        Ok(())
    }

    /// The node of a records field's or an array's length prefix.
    fn length_node(&self, at: usize, len: usize, lp: LenPrefix, about: &'static str) -> Node {
        let (ty, value) = (lp.wire_type(), Value::Int(lp.raw));
        let mut n =
            Node::new("length", ty, value, self.base + at, len, self.role).with_about(about);
        n.detail = lp.compact.then_some(Text::Borrowed("compact, n+1"));
        n
    }

    fn struct_field<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        s: &'static StructDef,
        out: &mut S,
    ) -> Step {
        let at = r.pos();
        let mut n = self.field_node(f, || Value::Text("struct".into()), at, out);
        // A nullable struct is preceded by an int8 marker: -1 null, 1 present.
        // As a tree, on error: the struct is dropped, the bytes are marked
        // in its place (JSON is not used after an error).
        let marker = if f.nullable.contains(self.version) {
            Some(r.i8().map_err(|e| self.wire(r, e, f.name, out))?)
        } else {
            None
        };
        let mut kids = out.open(&mut n.children);
        if let Some(m) = marker {
            let present = node::<S>(|| {
                Node::new(
                    "present",
                    "int8",
                    Value::Int(m.into()),
                    self.base + at,
                    1,
                    self.role,
                )
                .with_about("-1 when the struct is null, 1 when it follows")
            });
            kids.push(present, &self.sources);
            if m < 0 {
                drop(kids);
                n.value = Value::Null;
                n.length = 1;
                out.close(n);
                return Ok(());
            }
        }
        let res = self.fields(r, s, &mut kids);
        drop(kids);
        n.length = r.pos() - at;
        out.close(n);
        res
    }

    /// The node of a struct or array field `f` begun at `at`, its length to
    /// come (a placeholder for a sink without nodes).
    #[inline(always)]
    fn field_node<S: Sink>(
        &self,
        f: &'static FieldDef,
        value: impl FnOnce() -> Value,
        at: usize,
        out: &S,
    ) -> Node {
        node::<S>(|| Node {
            about: out.about(f),
            ..Node::new(f.name, f.type_name, value(), self.base + at, 0, self.role)
        })
    }

    #[inline(never)]
    fn array<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        e: Elem,
        out: &mut S,
    ) -> Step {
        let at = r.pos();
        let flex = self.field_flexible(f);
        let lp = LenPrefix::read(r, flex, true).map_err(|err| self.wire(r, err, f.name, out))?;
        let len_end = r.pos();
        let len_node = |d: &Self| d.length_node(at, len_end - at, lp, "number of elements");
        let mut n = self.field_node(f, || Value::Null, at, out);
        let Some(count) = lp.len else {
            if S::NODES {
                n.children.push(len_node(self));
                n.length = len_end - at;
            }
            out.push(n, &self.sources);
            return Ok(());
        };
        if S::NODES {
            n.value = Value::Text(ELEMENTS.get(count as u64));
        }
        // Never trust the count: each element needs at least `min` bytes.
        let plausible = match r.remaining().checked_div(self.min_elem_size(e, flex)) {
            Some(fit) => count <= fit,
            None => count <= MAX_ZERO_SIZE_ELEMENTS,
        };
        if !plausible {
            let what = format!(
                "{}: {count} element(s) claimed, {} bytes remain",
                f.name,
                r.remaining()
            );
            if S::NODES {
                n.children.push(len_node(self));
            }
            return Err(self.overclaimed(r, at, n, what, out));
        }
        if let Some(w) = out.skip(self, e, flex) {
            return self.skip_elems(r, f, e, count, w, out);
        }
        // The length and the elements (`count` is plausible, checked above,
        // but its elements may still fail at the first: room for at most
        // `MAX_RESERVED_CHILDREN` made ahead).
        let mut res = Ok(());
        {
            let mut kids = out.open(&mut n.children);
            kids.reserve(1 + count.min(MAX_RESERVED_CHILDREN));
            let len = node::<S>(|| len_node(self));
            kids.push(len, &self.sources);
            for i in 0..count {
                res = match e {
                    Elem::Prim(p) => {
                        let at = r.pos();
                        match self.read(r, f, p, &mut kids) {
                            Ok(v) => kids.value(self, f, p, Some(i), (at, r.pos()), v),
                            Err(s) => Err(s),
                        }
                    }
                    Elem::Struct(s) => self.element(r, s, i, &mut kids),
                };
                if res.is_err() {
                    break;
                }
            }
        }
        n.length = r.pos() - at;
        out.close(n);
        res
    }

    /// `count` elements of `w` bytes the sink needs nothing from, skipped
    /// at once (a struct's tagged fields still read, one element at a time).
    fn skip_elems<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        f: &'static FieldDef,
        e: Elem,
        count: usize,
        w: usize,
        out: &mut S,
    ) -> Step {
        match e {
            Elem::Struct(s) if self.flexible => {
                for _ in 0..count {
                    r.take(w).map_err(|err| self.wire(r, err, f.name, out))?;
                    self.tagged_fields(r, s, out, TAGGED_COUNT)?;
                }
            }
            _ => {
                let len = count.saturating_mul(w);
                r.take(len).map_err(|err| self.wire(r, err, f.name, out))?;
            }
        }
        Ok(())
    }

    /// Element `i` of an array of structs `s`.
    fn element<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        s: &'static StructDef,
        i: usize,
        out: &mut S,
    ) -> Step {
        let at = r.pos();
        let mut n = node::<S>(|| {
            let name = indexed_text(s.name, i as u64);
            let v = Value::Text("struct".into());
            Node::new(name, s.name, v, self.base + at, 0, self.role)
        });
        let res = {
            let mut fields = out.open(&mut n.children);
            self.fields(r, s, &mut fields)
        };
        n.length = r.pos() - at;
        out.close(n);
        res
    }

    /// The fewest bytes one element can occupy in this version: a struct's
    /// remembered per thread (by struct, version and flexibility: a
    /// function of the three), as an array's count is checked against it.
    #[inline]
    fn min_elem_size(&self, e: Elem, flex: bool) -> usize {
        let s = match e {
            Elem::Prim(p) => return prim_min_size(p, flex),
            Elem::Struct(s) => s,
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

    fn min_struct_size(&self, s: &StructDef, depth: u8) -> usize {
        if depth > 8 {
            return 0;
        }
        let mut n = usize::from(self.flexible);
        for f in s.fields.iter().filter(|f| self.present(f)) {
            let flex = self.field_flexible(f);
            n += match f.kind {
                FieldKind::Prim(p) => prim_min_size(p, flex),
                FieldKind::Array(_) if flex => 1,
                FieldKind::Array(_) => 4,
                // A nullable struct may be its int8 marker alone.
                FieldKind::Struct(_) if f.nullable.contains(self.version) => 1,
                FieldKind::Struct(inner) => self.min_struct_size(inner, depth + 1),
            };
        }
        n
    }

    /// The bytes of `s`'s fields at this version when every one is a
    /// fixed-width primitive the summary does not note (not an
    /// `*ErrorCode`, not a `TopicId`); `None` otherwise. Tagged fields are not
    /// counted (they live in the tagged section).
    fn quiet_fixed_size(&self, s: &StructDef) -> Option<usize> {
        let noted = Marks::ERROR_CODE.with(Marks::TOPIC_ID);
        let size = |f: &FieldDef| match f.kind {
            FieldKind::Prim(Prim::String | Prim::Bytes | Prim::Records) => None,
            FieldKind::Prim(p) if !f.marks.has(noted) => Some(prim_min_size(p, false)),
            _ => None,
        };
        s.fields.iter().filter(|f| self.present(f)).map(size).sum()
    }

    /// Ends the array or tagged-field section `n` begun at `at`, whose count
    /// cannot fit: a `malformed` child takes the bytes from the reader's
    /// position on.
    #[cold]
    fn overclaimed<S: Sink>(
        &mut self,
        r: &Reader<'_>,
        at: usize,
        mut n: Node,
        what: String,
        out: &mut S,
    ) -> Stop {
        let pos = r.pos();
        let s = self.malformed(r, pos, what, &mut out.whole(&mut n.children));
        n.length = r.buf().len() - at;
        out.push(n, &self.sources);
        s
    }

    /// The tagged-field section of a flexible struct: a uvarint count, then
    /// (tag, size, bytes) entries; known tags decode with their schema field.
    /// `about`: what the count's node says.
    fn tagged_fields<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        out: &mut S,
        about: &'static str,
    ) -> Step {
        let at = r.pos();
        let count = r
            .uvarint()
            .map_err(|e| self.wire(r, e, "tagged_fields", out))?;
        let mut n = node::<S>(|| {
            Node::new(
                "tagged_fields",
                "uvarint",
                Value::Int(count.into()),
                self.base + at,
                r.pos() - at,
                self.role,
            )
            .with_about(about)
        });
        if count as usize > r.remaining() / 2 {
            let what = format!(
                "tagged_fields: {count} claimed, {} bytes remain",
                r.remaining()
            );
            return Err(self.overclaimed(r, at, n, what, out));
        }
        let mut res = Ok(());
        {
            let mut kids = out.whole(&mut n.children);
            let mut known = false;
            for _ in 0..count {
                res = self.tagged_entry(r, def, &mut kids, &mut known);
                if res.is_err() {
                    break;
                }
            }
            if known {
                kids.tagged(false, false);
            }
        }
        n.length = r.pos() - at;
        out.push(n, &self.sources);
        res
    }

    /// One entry of a tagged-field section; `known` tells whether one
    /// before it was a known field.
    fn tagged_entry<S: Sink>(
        &mut self,
        r: &mut Reader<'_>,
        def: &'static StructDef,
        out: &mut S,
        known: &mut bool,
    ) -> Step {
        let at = r.pos();
        let tag = r.uvarint().map_err(|e| self.wire(r, e, "tag", out))?;
        let tag_end = r.pos();
        let size = r.uvarint().map_err(|e| self.wire(r, e, "tag size", out))? as usize;
        let size_end = r.pos();
        let payload = r
            .take(size)
            .map_err(|e| self.wire(r, e, "tagged field", out))?;
        let version = self.version;
        let field = def.fields.iter().find(|f| {
            f.tag == Some(tag) && f.tagged.contains(version) && f.versions.contains(version)
        });
        // The tag, its size and the field.
        let mut kids = Vec::new();
        if S::NODES {
            kids.reserve_exact(3);
            let uvarint = |name, v: u64, at, end: usize| {
                let (off, len, role) = (self.base + at, end - at, Role::TaggedFields);
                Node::new(name, "uvarint", Value::Int(v as i64), off, len, role)
            };
            let size_node = uvarint("size", size as u64, tag_end, size_end);
            kids.extend([uvarint("tag", tag.into(), at, tag_end), size_node]);
        }
        let Some(f) = field else {
            let n = node::<S>(|| {
                let name = format!("unknown tag {tag}");
                let value = Value::Text(format!("{size} bytes").into());
                kids.push(Node::new(
                    "data",
                    "bytes",
                    Value::bytes(payload),
                    self.base + size_end,
                    size,
                    Role::TaggedFields,
                ));
                self.entry_node(
                    name.into(),
                    "tagged field".into(),
                    value,
                    at,
                    r.pos() - at,
                    kids,
                )
            });
            out.push(n, &self.sources);
            return Ok(());
        };
        if !*known {
            out.tagged(true, false);
            *known = true;
        }
        out.tagged(true, true);
        // Decode the field inside its own bounded reader, so a bad size can't
        // read past the entry.
        let mut sub = Reader::new(payload);
        let saved_base = self.base;
        self.base += size_end;
        {
            let mut k = out.whole(&mut kids);
            let res = self.field(&mut sub, f, &mut k);
            if res.is_ok() && sub.remaining() > 0 {
                let pos = sub.pos();
                let what = format!("{} bytes left in tagged field {}", sub.remaining(), f.name);
                let _ = self.malformed(&sub, pos, what, &mut k);
            }
        }
        self.base = saved_base;
        out.tagged(false, true);
        let n = node::<S>(|| {
            let value = Value::Text(format!("tag {tag}, {size} bytes").into());
            self.entry_node(
                f.name.into(),
                f.type_name.into(),
                value,
                at,
                r.pos() - at,
                kids,
            )
        });
        out.push(n, &self.sources);
        // A malformed known tag is marked (and reported) but, bounded by its
        // size, does not stop the rest of the message.
        Ok(())
    }

    /// A tagged field's entry node.
    fn entry_node(
        &self,
        name: Text,
        ty: Text,
        value: Value,
        at: usize,
        len: usize,
        kids: Vec<Node>,
    ) -> Node {
        let mut n = Node::new(name, ty, value, self.base + at, len, Role::TaggedFields);
        n.about = Some("tagged field".into());
        n.children = kids;
        n
    }

    /// Notes topic `name` in the message's list; returns the list's copy
    /// of it (`None` when it is not listed: no topic field, or the list full).
    fn note_topic(&mut self, f: &FieldDef, name: &str) -> Option<std::sync::Arc<str>> {
        if !f.marks.has(Marks::TOPIC_NAME) || name.is_empty() {
            return None;
        }
        if let Some(t) = self.topics.iter().find(|t| &***t == name) {
            return Some(t.clone());
        }
        if self.topics.len() >= MAX_TOPICS {
            return None;
        }
        let t: std::sync::Arc<str> = name.into();
        self.topics.push(t.clone());
        Some(t)
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
        const TOKENS: [ApiKey; 4] = [
            ApiKey::CREATE_DELEGATION_TOKEN,
            ApiKey::RENEW_DELEGATION_TOKEN,
            ApiKey::EXPIRE_DELEGATION_TOKEN,
            ApiKey::DESCRIBE_DELEGATION_TOKEN,
        ];
        match (ApiKey(self.api_key), f.name) {
            (ApiKey::SASL_AUTHENTICATE, "AuthBytes")
            | (ApiKey::ALTER_USER_SCRAM_CREDENTIALS, "SaltedPassword") => true,
            (k, "Hmac" | "TokenHmac") => TOKENS.contains(&k),
            _ => false,
        }
    }

    /// The consumer protocol inside JoinGroup/SyncGroup bytes (protocol type
    /// "consumer"), at `base` in the message: its nodes when the bytes decode
    /// completely with its schema, else none.
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
        match decode_data(b, base, def, self.role) {
            Some((nodes, Some(read))) if read == b.len() => nodes,
            _ => Vec::new(),
        }
    }
}

/// A decoded length prefix of a string, bytes, records or an array.
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
    /// Reads a length prefix: compact when `flex`, else an int32 or an int16.
    #[inline(always)]
    fn read(r: &mut Reader<'_>, flex: bool, int32: bool) -> Result<LenPrefix, WireError> {
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
        Ok(LenPrefix {
            raw,
            len,
            compact: flex,
            int32,
        })
    }

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

/// What a struct's tagged-field count says.
const TAGGED_COUNT: &str = "number of tagged fields in this struct";

/// What a records field's length node says.
const RECORDS_LENGTH: &str = "size of the record set in bytes";

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
/// set's `problem`), so a tree without one already nests (`kafkashark_harness::check_decoded`
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
        Prim::String | Prim::Bytes | Prim::Records if flex => 1,
        Prim::String => 2,
        Prim::Bytes | Prim::Records => 4,
    }
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
