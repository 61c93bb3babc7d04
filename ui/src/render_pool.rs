//! `print -V` of a file on several cores: field trees decoded and formatted
//! by a pool of render threads.
//!
//! Place in the data path: the `FileReader` thread reads, reassembles and
//! frames; this (the calling) thread runs the [`Analyzer`] in summary mode —
//! header, pairing and the facts ordering needs, no record sets, no trees
//! kept — and orders the messages (the [`Ordered`] stage every `print`
//! shares); ordered chunks of messages (with their bytes) go round-robin to
//! [`render threads`](RenderThread), each of which decodes every message's
//! tree, formats it into buffers of its own and frees the tree (trees are
//! allocated and freed on one thread: handed between threads they cost more
//! in the allocator than a second core gains) — for JSONL without building
//! the tree at all: its JSON is written as it is decoded
//! ([`RenderThread::stream`]; a message with a decode error is decoded again
//! as a tree); a [`writer`] thread
//! takes the chunks' buffers back in the order they were handed out and
//! writes them, with the notices in their place.
//!
//! Invariants: the output is byte for byte what one thread decoding every tree
//! in the analyzer would print (stdout and stderr, `-c` included): the messages
//! and notices that leave the reorder, their order and the count are decided by
//! the same [`Ordered`] as without the pool, and a render thread takes from the
//! message's own tree every fact a tree-keeping analyzer would have taken from
//! it (`decode_error`, `error_codes`, `throttle_time_ms`, `topics`), and gives
//! its `TopicId`s the topic names known when the analyzer read it ([`Stamps`]).
//! Memory is bounded: what the reorder holds (its limits), at most
//! [`QUEUED_CHUNKS`] chunks of about [`CHUNK_BYTES`] of message bytes
//! per render thread, at most [`QUEUED_OUTPUT`]
//! bytes of formatted output per render thread waiting for the writer (or one
//! larger buffer), and one tree and its output being made per render thread —
//! for a JSON line of a message of [`BIG_MESSAGE`] bytes or more, about
//! [`SEGMENT_BYTES`] of it ([`RenderThread::stream`]). Past three
//! quarters of `print::HELD_BYTES`, the held messages' bytes wait on disk
//! (`Reorder::spill_to`) and are read back one at a time as they are handed
//! out.
//!
//! One known difference from a tree-keeping analyzer: after a SaslHandshake
//! v0, a request whose header and fields decode but whose record batch does
//! not is taken for Kafka (as `print` without `-V` takes it), not for a raw
//! SASL token.

use kafkashark::vocab::Timestamp;
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use kafkashark::analyzer::{
    redecode, response_facts, AnalyzerConfig, MessageAnalyzer, MessageRecord, Output,
};
use kafkashark::capture::FileSource;
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::{Kind, Summary, Topics};
use kafkashark::kafka::tree::{self, Node, Value};
use kafkashark::kafka::DecodeOptions;
use kafkashark::pipeline::Event;
use kafkashark::topics::TEACHERS;

use crate::cli_error::CliError;
use crate::print::{Emit, FileReader, Ordered, PrintFormat, Render, HELD_MESSAGES};
use crate::reorder::Reorder;

/// Message bytes per chunk handed to a render thread: a message's JSON is
/// about 15 times its bytes, so a chunk makes about 1.5 MB of output; its
/// compact text tree less (`-VV`, with every description, about 0.7 times
/// its JSON on the shipped captures).
pub const CHUNK_BYTES: usize = 96 * 1024;

/// Most items (messages, notices) in a chunk: a capture of notices and
/// tiny messages hands over bounded chunks too.
pub const CHUNK_ITEMS: usize = 4096;

/// Chunks waiting for each render thread.
pub const QUEUED_CHUNKS: usize = 2;

/// Formatted bytes a render thread gathers before handing them to the
/// writer. Each hand-over wakes the writer (a system call and a switch);
/// and buffers up to twice this size come back for reuse, so most lines
/// written while decoding, which get room for 24 times their message's
/// bytes, find a buffer instead of a new allocation.
pub const SEGMENT_BYTES: usize = 1024 * 1024;

/// A message's JSON line written while it is decoded is about this many
/// times its bytes (more with compressed records): the room made for it.
const STREAM_FACTOR: usize = 24;

/// Most room a render thread makes ahead for one message's JSON.
const JSON_RESERVE: usize = 64 << 20;

/// Messages of this many bytes or more have their JSON line handed to the
/// writer in parts of about [`SEGMENT_BYTES`] while it is written
/// ([`RenderThread::stream`]), never whole: a 2 MB Produce of small records makes a
/// line of over 30 MB. Below it a line is at most a few MB, made whole. Their
/// text trees keep their records as bytes (`records_deferred`), whose nodes
/// are made as the text is written: such a tree would take tens of MB.
pub const BIG_MESSAGE: usize = 128 * 1024;

/// Bytes of formatted output waiting for the writer, per render thread
/// (one larger buffer may wait alone): about two chunks' output, so a render
/// thread can finish a chunk while the writer still writes the one before it.
pub const QUEUED_OUTPUT: usize = 3 << 20;

/// Segments waiting for the writer, per render thread (their bytes are
/// bounded by [`QUEUED_OUTPUT`]).
const QUEUED_SEGMENTS: usize = 64;

/// Most render threads (beyond this the analyzer thread and the writer
/// become the limit).
pub const MAX_RENDER_THREADS: usize = 4;

/// Settings of one `print -V` run.
pub struct Settings {
    /// Broker ports.
    pub ports: Ports,
    /// The reorder window.
    pub reorder: kafkashark::flow::ReorderWindow,
    /// TLS session keys.
    pub keys: kafkashark::tls::keylog::Keys,
    /// Text or JSONL.
    pub format: PrintFormat,
    /// Stop after this many messages.
    pub count: Option<u64>,
    /// How trees are decoded (record sets on).
    pub decode: DecodeOptions,
    /// The capture's name, for notices.
    pub name: String,
    /// Render threads (at least one).
    pub threads: usize,
    /// Messages of this many bytes or more have their JSON line written in
    /// parts, and their text tree's records made as they are written
    /// ([`BIG_MESSAGE`]; tests lower it).
    pub big_message: usize,
    /// Bytes of messages held for their pairing kept in memory
    /// (`print::HELD_BYTES`; tests lower it).
    pub held_bytes: usize,
    /// Where held messages' bytes go past `held_bytes`
    /// (`Reorder::spill_to`: the temporary directory), if anywhere.
    pub held_on_disk: Option<std::path::PathBuf>,
    /// Only the messages this display filter matches (`-Y`).
    pub filter: Option<crate::filter::Filter>,
    /// Every notice printed, not the first of each kind (`--notices all`).
    pub all_notices: bool,
    /// How text lines write the time (`-t`).
    pub time: crate::timefmt::TimeFormat,
    /// How text trees are laid out (`-V` compact, `-VV` with descriptions).
    pub layout: tree::Layout,
}

/// Render threads for this machine: one per core, at most [`MAX_RENDER_THREADS`].
pub fn default_threads() -> usize {
    crate::cores().min(MAX_RENDER_THREADS)
}

/// Prints the messages of `src` with their trees: `out` makes the writer's
/// output (on the writer thread), `note` writes a line to standard error.
/// Returns the number of malformed messages printed.
pub fn run<W, F>(
    src: FileSource,
    settings: Settings,
    out: F,
    note: impl FnMut(&str) + Send + 'static,
) -> Result<u64, CliError>
where
    W: Write,
    F: FnOnce() -> W + Send + 'static,
{
    let mut pipeline =
        crate::print::pipeline_config(&settings.ports, settings.reorder, &settings.keys);
    // Held messages keep their bytes for their trees: located in the file,
    // they are copied only once the file has moved on (`Reorder`).
    pipeline.locate_in_file = true;
    let captures: Vec<String> = src.paths().map(str::to_string).collect();
    let reader = FileReader::spawn(src, pipeline.clone(), crate::print::BATCH_FRAMES, None);
    let mut analyzer = MessageAnalyzer::new(summary_config(pipeline, &settings.decode, true));
    let stamps = Arc::new(Stamps::default());
    // An event's outputs (the analyzer's `finish` for `None`), their topic ids noted.
    let step = |analyzer: &mut MessageAnalyzer, ev: Option<Event>, outs: &mut Vec<Output>| {
        let from = outs.len();
        match ev {
            Some(ev) => analyzer.push(ev, outs),
            None => analyzer.finish(outs),
        }
        stamps.learn(analyzer, outs.get_mut(from..).unwrap_or_default());
    };
    let pool = Pool::spawn(&settings, &captures, stamps.clone(), out, note);
    let mut reorder = Reorder::new(HELD_MESSAGES);
    reorder.limit_bytes(settings.held_bytes);
    if let Some(f) = settings.filter.clone() {
        reorder.filter(f);
    }
    // A filter that reads fields tests messages with their bytes: they stay
    // in memory (the oldest leave past the limit).
    if let Some(dir) = settings
        .held_on_disk
        .clone()
        .filter(|_| !reorder.needs_tree())
    {
        reorder.spill_to(dir);
    }
    let chunker = Chunker {
        pool,
        last_ts: None,
        chunk: Chunk::default(),
    };
    let mut order = Ordered::new(chunker, reorder, settings.count, settings.name.clone());
    order.notices.all = settings.all_notices;
    let mut outs = Vec::new();
    'batches: for batch in reader.rx.iter() {
        // The writer stopped (an output error).
        if order.emit.pool.stop.load(Ordering::Relaxed) {
            break;
        }
        let first_ts = &mut order.emit.chunk.first_ts;
        *first_ts = first_ts.or(batch.first_ts);
        let mut evs = batch.evs.into_iter();
        let mut at = 0;
        for end in batch.ends {
            for ev in evs.by_ref().take(end - at) {
                step(&mut analyzer, Some(ev), &mut outs);
            }
            at = end;
            // The pool never fails: it stops (`Ok(false)`).
            if !order.frame(&mut outs).unwrap_or(false) {
                break 'batches;
            }
        }
        if let Some(fin) = batch.finish {
            for ev in fin.into_iter().map(Some).chain([None]) {
                step(&mut analyzer, ev, &mut outs);
            }
            let _ = order.finish(std::mem::take(&mut outs), batch.error);
            break;
        }
    }
    // Stopped early (-c, output error): the reader sees its channel closed and ends.
    reader.end();
    order.emit.pool.end(order.emit.chunk)
}

/// The analyzer of `print` in summary mode, every message's tree decoded
/// later (`trees`, with `decode`) or never: every clean message is read by
/// the summary scan (no tree); the others are decoded without record sets.
/// With `trees`, `keep_trees` and a filter wanting no tree keep those trees
/// (Metadata responses teaching topic ids among them) for `Stamps::learn`.
pub(crate) fn summary_config(
    pipeline: kafkashark::pipeline::PipelineConfig,
    decode: &DecodeOptions,
    trees: bool,
) -> AnalyzerConfig {
    fn no_tree(_: Kind, _: i16, _: i16, _: &Summary) -> bool {
        false
    }
    AnalyzerConfig {
        pipeline,
        keep_trees: trees,
        tree_filter: trees.then_some(no_tree as _),
        decode: DecodeOptions {
            records: false,
            records_json: false,
            ..decode.clone()
        },
        ..AnalyzerConfig::default()
    }
}

/// What goes to a render thread, in output order.
enum Item {
    /// A message to decode and format.
    Message(Box<MessageRecord>),
    /// A line for standard error, written once what comes before it is.
    Line(String),
}

/// Consecutive items for one render thread.
#[derive(Default)]
struct Chunk {
    items: Vec<Item>,
    /// Message bytes in `items`.
    bytes: usize,
    /// The time of the capture's first frame.
    first_ts: Option<Timestamp>,
    /// The time of the last message before the chunk (`-t d`).
    prev_ts: Option<Timestamp>,
}

/// What a render thread hands the writer, in order; a chunk's ends with `End`.
enum Segment {
    /// Formatted messages.
    Bytes(Vec<u8>),
    /// A line for standard error.
    Line(String),
    /// The chunk is done; so many of its messages were malformed.
    End(u64),
}

/// Where [`Ordered`] hands `print -V`'s messages and lines: chunks for the
/// render threads, formatting left to them.
struct Chunker {
    pool: Pool,
    chunk: Chunk,
    /// The time of the last message handed on.
    last_ts: Option<Timestamp>,
}

impl Chunker {
    /// Adds `item`; hands the chunk over once full. False when the render
    /// threads stopped.
    fn push(&mut self, item: Item) -> bool {
        self.chunk.items.push(item);
        if self.chunk.bytes < CHUNK_BYTES && self.chunk.items.len() < CHUNK_ITEMS {
            return true;
        }
        let next = Chunk {
            first_ts: self.chunk.first_ts,
            prev_ts: self.last_ts,
            ..Chunk::default()
        };
        self.pool.send(std::mem::replace(&mut self.chunk, next))
    }
}

impl Emit for Chunker {
    fn message(&mut self, m: Box<MessageRecord>) -> Result<bool, CliError> {
        self.chunk.bytes += m.raw.bytes.len();
        self.last_ts = Some(m.info.ts);
        Ok(self.push(Item::Message(m)))
    }

    fn line(&mut self, line: String) -> Result<bool, CliError> {
        Ok(self.push(Item::Line(line)))
    }
}

/// A topic id's name as taught: the index of the message that taught it,
/// the name (shared by every message's topic list that names it) and the
/// tree's annotation.
type Stamp = (u64, Arc<str>, tree::Text);

/// Topic names with the message at which the analyzer learned them: a
/// message's `TopicId`s are named as the analyzer would have named them when
/// it read that message (names learned later do not show). Written by the
/// analyzer thread, read by the render threads; at most as many entries as
/// the analyzer's own table (`TopicNames`).
#[derive(Default)]
pub(crate) struct Stamps {
    /// Topic id → what it was taught.
    map: RwLock<HashMap<[u8; 16], Stamp>>,
    /// Set once `map` has an entry.
    any: AtomicBool,
}

impl Stamps {
    /// After the analyzer made `outs`: notes the topic ids it learned from
    /// them, and drops their trees (made without record sets, only for this).
    pub(crate) fn learn(&self, analyzer: &MessageAnalyzer, outs: &mut [Output]) {
        for o in outs {
            let Output::Message(m) = o else { continue };
            let Some(d) = m.decoded.take() else { continue };
            // The responses `TopicNames::learn` reads (Metadata, CreateTopics,
            // DescribeTopicPartitions); each names the ids it teaches.
            let teaches = m.info.kind == Kind::Response
                && m.info.api_key.is_some_and(|k| TEACHERS.contains(&k))
                && !analyzer.topic_names().is_empty();
            if !teaches {
                continue;
            }
            let index = m.info.index;
            let Ok(mut map) = self.map.write() else {
                continue;
            };
            d.root.walk(&mut |n, _| {
                if let (Value::Uuid(u), true) = (&n.value, &*n.name == "TopicId") {
                    if let Some(name) = analyzer.topic_names().name(u) {
                        map.entry(*u).or_insert_with(|| {
                            (index, name.into(), format!("topic {name:?}").into())
                        });
                    }
                }
            });
            if !map.is_empty() {
                self.any.store(true, Ordering::Release);
            }
        }
    }

    /// Names the `TopicId`s of the tree of message `index` as
    /// `TopicNames::annotate` did when the analyzer read it; appends to
    /// `topics` the names of `ids` known then, as the analyzer does.
    fn annotate(&self, index: u64, root: &mut Node, ids: &[[u8; 16]], topics: &mut Topics) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        self.names(index, ids, topics);
        root.walk_mut(&mut |n| self.name_node(index, n));
    }

    /// Appends to `topics` the names of `ids` known when the analyzer read
    /// message `index` (see [`Stamps::annotate`]).
    fn names(&self, index: u64, ids: &[[u8; 16]], topics: &mut Topics) {
        if !self.any.load(Ordering::Acquire) || ids.is_empty() {
            return;
        }
        let Ok(map) = self.map.read() else { return };
        for id in ids {
            if let Some((_, name, _)) = map.get(id).filter(|(at, _, _)| *at <= index) {
                if !topics.contains(name) {
                    topics.push(name.clone());
                }
            }
        }
    }

    /// Names node `n` of message `index` if it is a `…TopicId` known then
    /// (see [`Stamps::annotate`]). The map is read only for such a node:
    /// the entries known at `index` were all made before the message was
    /// handed out and are never changed, so a later read finds the same.
    fn name_node(&self, index: u64, n: &mut Node) {
        if let Value::Uuid(u) = &n.value {
            if n.name.ends_with("TopicId") {
                let Ok(map) = self.map.read() else { return };
                if let Some((_, _, text)) = map.get(u).filter(|(at, _, _)| *at <= index) {
                    n.detail = Some(text.clone());
                }
            }
        }
    }
}

/// A render thread: decodes and formats the messages of its chunks into
/// buffers of its own, hands them to the writer; the trees are freed here.
struct RenderThread {
    to: ToWriter,
    render: Render,
    /// How trees are decoded.
    opts: DecodeOptions,
    stamps: Arc<Stamps>,
    /// `Settings::big_message`.
    big: usize,
    /// Output not yet handed to the writer.
    buf: Vec<u8>,
}

impl RenderThread {
    /// Takes chunks until there are none or the writer stopped.
    fn run(mut self, rx: Receiver<Chunk>) {
        self.buf = self.to.fresh();
        for chunk in rx.iter() {
            self.render.first_ts = chunk.first_ts;
            self.render.prev_ts = chunk.prev_ts;
            let mut malformed = 0;
            for item in chunk.items {
                let sent = match item {
                    Item::Message(mut m) => match self.message(&mut m) {
                        Some(bad) => {
                            malformed += u64::from(bad);
                            self.buf.len() < SEGMENT_BYTES || self.to.flush(&mut self.buf)
                        }
                        None => false,
                    },
                    Item::Line(line) => {
                        self.to.flush(&mut self.buf) && self.to.send(Segment::Line(line))
                    }
                };
                if !sent {
                    return;
                }
            }
            if !(self.to.flush(&mut self.buf) && self.to.send(Segment::End(malformed))) {
                return;
            }
        }
    }

    /// Decodes and formats `m`: whether it is malformed, `None` once the
    /// writer stopped.
    fn message(&mut self, m: &mut MessageRecord) -> Option<bool> {
        if self.render.format == PrintFormat::Text {
            return self.text(m);
        }
        let parted = m.raw.bytes.len() >= self.big;
        // Room for a line of about STREAM_FACTOR times the message's bytes,
        // made as below (a big one's goes out in parts).
        let want = m.raw.bytes.len().saturating_mul(STREAM_FACTOR);
        if !parted && !self.to.room(&mut self.buf, want.min(JSON_RESERVE)) {
            return None;
        }
        if let Some(sent) = self.stream(m, parted) {
            return sent.then_some(false);
        }
        let malformed = decode(m, &self.opts, &self.stamps);
        if parted {
            return self.tree_parted(m).then_some(malformed);
        }
        // A tree's JSON is 5 to 20 times its message's bytes, and 7 to 8
        // times its decompressed records'.
        let want = m.decoded.as_ref().map_or(0, |d| {
            d.sources
                .iter()
                .fold(m.raw.bytes.len().saturating_mul(16), |n, s| {
                    n.saturating_add(s.len.saturating_mul(8))
                })
        });
        if !self.to.room(&mut self.buf, want.min(JSON_RESERVE)) {
            return None;
        }
        self.render.message(&mut self.buf, m);
        Some(malformed)
    }

    /// [`RenderThread::message`] as text: the tree's text (up to a hundred
    /// times the message's bytes) is handed over segment by segment as it is
    /// written, never whole.
    fn text(&mut self, m: &mut MessageRecord) -> Option<bool> {
        // A big message's records stay bytes in its tree, their nodes made
        // line by line as the text is written; its other nodes too, when it
        // decodes cleanly (`text_streamed`).
        let big_opts;
        let opts = if m.raw.bytes.len() >= self.big {
            big_opts = DecodeOptions {
                records_deferred: true,
                ..self.opts.clone()
            };
            if let Some(sent) = self.text_streamed(m, &big_opts) {
                return sent.then_some(false);
            }
            &big_opts
        } else {
            // Records kept as bytes, their lines written straight from them
            // (`Deferred::write_text`).
            big_opts = DecodeOptions {
                records_deferred: true,
                ..self.opts.clone()
            };
            &big_opts
        };
        let malformed = decode(m, opts, &self.stamps);
        self.render.summary_line(&mut self.buf, m);
        let Some(d) = m.decoded.take() else {
            return Some(malformed);
        };
        let mut sink = Segmented {
            buf: &mut self.buf,
            to: &self.to,
            ok: true,
        };
        let bytes = tree::SourceBytes {
            message: &m.raw.bytes,
            sources: &d.sources,
        };
        let layout = self.render.layout;
        self.render
            .text
            .write(&mut sink, &d.root, "    ", &bytes, layout);
        sink.ok.then_some(malformed)
    }

    /// Writes `m`'s JSON line into `buf` with its tree's JSON written while
    /// the message is decoded (`kafkashark::kafka::stream_json`), the same
    /// bytes as [`decode`] then [`Render::message`] write, and gives `m` the
    /// same facts. `None`, with `buf` and `m` as they were, for a message
    /// that must take that path: a raw SASL token, a response without its
    /// request's api key and version, a message with a decode error (its
    /// tree's error nodes and spans are fitted after decoding), or a response
    /// whose error codes differ from those the analyzer read (they are
    /// written before the tree). Otherwise whether the writer took the line:
    /// a big message's (`parted`, `Settings::big_message`) is handed to it in
    /// parts as it is written, every [`SEGMENT_BYTES`] (false once it
    /// stopped), after a first decode writing nothing ([`JsonSink::dry`])
    /// told whether the line stands, as a whole line's end tells.
    fn stream(&mut self, m: &mut MessageRecord, parted: bool) -> Option<bool> {
        use kafkashark::kafka::decode::decode_streamed;
        use kafkashark::kafka::stream_json::{JsonSink, Stream};
        let response = streamed_as(m)?;
        let is_response = response.is_some();
        let (buf, stamps, opts) = (&mut self.buf, &*self.stamps, &self.opts);
        let index = m.info.index;
        let mut name = |n: &mut Node| stamps.name_node(index, n);
        // Decided once: both decodes annotate alike.
        let any = stamps.any.load(Ordering::Acquire);
        let decode = |sink: &mut JsonSink<'_>| {
            decode_streamed(&m.raw.bytes, response, opts, Stream::Json(sink))
        };
        // Written before the tree: no decode error (a message with one is not
        // written this way), and a response's error codes as the analyzer read
        // them (checked against the tree's).
        let stands = |d: &kafkashark::kafka::Decoded, codes: &[i16]| {
            d.clean() && !(is_response && codes != m.info.error_codes)
        };
        if parted {
            let mut none = Vec::new();
            let mut dry =
                JsonSink::new(&mut none, &m.raw.bytes, any.then_some(&mut name as _)).dry();
            let d = decode(&mut dry);
            if !stands(&d, &dry.facts().error_codes) {
                return None;
            }
        }
        let mark = buf.len();
        let error = m.info.decode_error.take();
        self.render.json.head(buf, m);
        buf.extend_from_slice(b",\"fields\":");
        let ((d, facts), sent) = in_parts(&self.to, |spill| {
            let sink = JsonSink::new(buf, &m.raw.bytes, any.then_some(&mut name as _));
            let mut sink = if parted { sink.spilling(*spill) } else { sink };
            let d = decode(&mut sink);
            (d, sink.facts())
        });
        if !parted && !stands(&d, &facts.error_codes) {
            buf.truncate(mark);
            m.info.decode_error = error;
            return None;
        }
        // The line's end, with the facts a tree-keeping analyzer takes from the tree.
        streamed_facts(m, d, facts, is_response, stamps);
        crate::print::JsonWriter::tail(buf, m);
        buf.push(b'\n');
        Some(sent)
    }

    /// A big message's text tree written while it is decoded with `opts`,
    /// never whole (`kafkashark::kafka::stream_text`): a first decode
    /// measures the columns and notes each parent's line, and gives `m` the
    /// facts a tree-keeping analyzer takes from its tree; its summary line is
    /// written, then a second decode writes the tree's lines, handed to the
    /// writer every [`SEGMENT_BYTES`]. The same bytes as [`decode`] then the
    /// text of the tree. `None`, with `m` and `buf` as they were, for a
    /// message that must take the tree's path (as
    /// [`RenderThread::stream`]'s `None`: its decode finds an error, a raw
    /// SASL token, a response without its request's api key and version);
    /// otherwise whether the writer took it all.
    fn text_streamed(&mut self, m: &mut MessageRecord, opts: &DecodeOptions) -> Option<bool> {
        use kafkashark::kafka::decode::decode_streamed;
        use kafkashark::kafka::stream_json::Stream;
        use kafkashark::kafka::stream_text::TextStream;
        let response = streamed_as(m)?;
        let stamps = &*self.stamps;
        let index = m.info.index;
        let mut name = |n: &mut Node| stamps.name_node(index, n);
        let any = stamps.any.load(Ordering::Acquire);
        let raw = m.raw.bytes.clone();
        let decode =
            |t: &mut TextStream<'_>| decode_streamed(&raw, response, opts, Stream::Text(t));
        let layout = self.render.layout;
        let mut measure = TextStream::measure(&raw, layout, any.then_some(&mut name as _));
        let d = decode(&mut measure);
        if !d.clean() {
            return None;
        }
        let (plan, facts) = measure.finish().filter(|(p, _)| p.streams())?;
        m.info.decode_error = None;
        streamed_facts(m, d, facts, response.is_some(), stamps);
        self.render.summary_line(&mut self.buf, m);
        let mut sink = Segmented {
            buf: &mut self.buf,
            to: &self.to,
            ok: true,
        };
        let mut write =
            TextStream::write(&raw, plan, &mut sink, "    ", any.then_some(&mut name as _));
        let _ = decode(&mut write);
        drop(write);
        Some(sink.ok)
    }

    /// [`Render::message`]'s JSON line of `m` with its tree, handed to the
    /// writer in parts as it is written (a big message
    /// [`RenderThread::stream`] left to the tree); false once the
    /// writer stopped.
    fn tree_parted(&mut self, m: &MessageRecord) -> bool {
        let buf = &mut self.buf;
        self.render.json.head(buf, m);
        let ((), sent) = in_parts(&self.to, |spill| {
            if let Some(d) = &m.decoded {
                buf.extend_from_slice(b",\"fields\":");
                let bytes = tree::SourceBytes {
                    message: &m.raw.bytes,
                    sources: &d.sources,
                };
                d.root.write_json_spilling(buf, &bytes, spill);
            }
        });
        crate::print::JsonWriter::tail(buf, m);
        buf.push(b'\n');
        sent
    }
}

/// Gives `m`, decoded cleanly while written, the facts a tree-keeping
/// analyzer takes from its tree, from `d` and its sink's `facts`.
fn streamed_facts(
    m: &mut MessageRecord,
    d: kafkashark::kafka::Decoded,
    facts: kafkashark::kafka::stream_json::StreamFacts,
    is_response: bool,
    stamps: &Stamps,
) {
    let info = &mut m.info;
    if is_response {
        info.throttle_time_ms = facts.throttle_time_ms;
        info.error_codes = facts.error_codes;
    }
    info.topics = d.topics;
    stamps.names(info.index, &d.topic_ids, &mut info.topics);
}

/// Runs `write` with a [`tree::Spill`] handing its output to the writer every
/// [`SEGMENT_BYTES`]: what `write` returns, and false once the writer stopped
/// (what comes after is dropped).
fn in_parts<R>(to: &ToWriter, write: impl FnOnce(&tree::Spill<'_>) -> R) -> (R, bool) {
    let sent = std::cell::Cell::new(true);
    let take = |b: &mut Vec<u8>| {
        if sent.get() && !to.flush(b) {
            sent.set(false);
        }
        b.clear();
    };
    let r = write(&tree::Spill {
        at: SEGMENT_BYTES,
        take: &take,
    });
    (r, sent.get())
}

/// How `m`'s tree is decoded when it is written while decoded: `Some(None)`
/// a request, `Some(Some((api key, version)))` a response with its
/// request's; `None` for the tree's path (a raw SASL token, a response
/// without its request's api key and version).
fn streamed_as(m: &MessageRecord) -> Option<Option<(i16, i16)>> {
    match (m.info.kind, m.info.api_key, m.info.api_version) {
        (Kind::Request, Some(_), _) => Some(None),
        (Kind::Response, Some(k), Some(v)) => Some(Some((k.0, v))),
        _ => None,
    }
}

/// Gives `m` its tree, decoded as a tree-keeping analyzer decodes it, and the
/// facts such an analyzer takes from the tree; true when it is malformed.
pub(crate) fn decode(m: &mut MessageRecord, opts: &DecodeOptions, stamps: &Stamps) -> bool {
    let info = &mut m.info;
    // A raw SASL token: neither an api key nor a decode error (`redecode`).
    let token = info.api_key.is_none() && info.decode_error.is_none();
    let mut d = redecode(info, &m.raw, opts);
    if !token {
        if info.kind == Kind::Response {
            let (throttle, errors) = response_facts(&d.root);
            info.throttle_time_ms = throttle;
            info.error_codes = errors;
        }
        info.decode_error = if info.kind == Kind::Response && info.api_key.is_none() {
            info.decode_error.take()
        } else {
            d.error.as_ref().map(ToString::to_string)
        };
        info.decode_warning = d.warning;
    }
    info.topics = std::mem::take(&mut d.topics);
    stamps.annotate(info.index, &mut d.root, &d.topic_ids, &mut info.topics);
    m.decoded = Some(d);
    m.info.decode_error.is_some()
}

/// Bytes of one render thread's output waiting for the writer: the render
/// thread takes them before it hands a buffer over, the writer gives them
/// back once written (or closes the budget when it stops).
#[derive(Default)]
struct Budget {
    /// (bytes waiting, closed).
    state: Mutex<(usize, bool)>,
    freed: Condvar,
}

impl Budget {
    /// Waits until `n` more bytes fit [`QUEUED_OUTPUT`] (or nothing waits);
    /// false once the writer stopped.
    fn take(&self, n: usize) -> bool {
        let Ok(mut st) = self.state.lock() else {
            return false;
        };
        while !st.1 && st.0 > 0 && st.0 + n > QUEUED_OUTPUT {
            st = match self.freed.wait(st) {
                Ok(st) => st,
                Err(_) => return false,
            };
        }
        st.0 += n;
        !st.1
    }

    /// `n` bytes were written.
    fn give(&self, n: usize) {
        if let Ok(mut st) = self.state.lock() {
            st.0 = st.0.saturating_sub(n);
        }
        self.freed.notify_one();
    }

    /// The writer stopped: nothing waits any more.
    fn close(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.1 = true;
        }
        self.freed.notify_one();
    }
}

/// The writer's end of one render thread's way to it ([`ToWriter`]).
struct FromRender {
    segs: Receiver<Segment>,
    /// Emptied buffers, given back.
    spares: std::sync::mpsc::Sender<Vec<u8>>,
    budget: Arc<Budget>,
}

/// Closes the budget when the writer ends, however it ends.
impl Drop for FromRender {
    fn drop(&mut self) {
        self.budget.close();
    }
}

/// Where a render thread writes a tree's text: its output buffer, handed to
/// the writer each time it holds [`SEGMENT_BYTES`] (the writer joins the
/// segments in order, so a cut inside a line is harmless).
struct Segmented<'a> {
    buf: &'a mut Vec<u8>,
    to: &'a ToWriter,
    /// False once the writer stopped: the rest is dropped.
    ok: bool,
}

impl tree::TextSink for Segmented<'_> {
    fn push_text(&mut self, s: &str) {
        if !self.ok {
            return;
        }
        self.buf.extend_from_slice(s.as_bytes());
        if self.buf.len() >= SEGMENT_BYTES {
            self.ok = self.to.flush(self.buf);
        }
    }

    /// The whole text's size: not reserved, it goes out in segments.
    fn reserve_text(&mut self, _n: usize) {}

    /// Written in place in the output buffer (a run of records' lines).
    fn push_utf8_with(&mut self, write: &mut dyn FnMut(&mut Vec<u8>) -> bool) -> bool {
        if !self.ok {
            return true;
        }
        let taken = write(self.buf);
        if self.buf.len() >= SEGMENT_BYTES {
            self.ok = self.to.flush(self.buf);
        }
        taken
    }
}

/// A render thread's way to the writer.
struct ToWriter {
    tx: SyncSender<Segment>,
    budget: Arc<Budget>,
    spares: Receiver<Vec<u8>>,
}

impl ToWriter {
    /// A buffer for output: one the writer gave back, or a new one.
    fn fresh(&self) -> Vec<u8> {
        self.spares
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(SEGMENT_BYTES + SEGMENT_BYTES / 4))
    }

    /// Hands `buf` (if not empty) to the writer, leaving a fresh buffer;
    /// false once the writer stopped.
    fn flush(&self, buf: &mut Vec<u8>) -> bool {
        if buf.is_empty() {
            return true;
        }
        if !self.budget.take(buf.len()) {
            return false;
        }
        let full = std::mem::replace(buf, self.fresh());
        self.tx.send(Segment::Bytes(full)).is_ok()
    }

    /// Makes room for `want` more bytes in `buf` at once, not by doubling,
    /// which copies all written so far each time: a full `buf` is handed
    /// over first, then a new allocation made (growing the empty one would
    /// copy its old capacity). False once the writer stopped.
    fn room(&self, buf: &mut Vec<u8>, want: usize) -> bool {
        if buf.capacity() - buf.len() >= want {
            return true;
        }
        if !buf.is_empty() && !self.flush(buf) {
            return false;
        }
        if buf.capacity() < want {
            *buf = Vec::with_capacity(want);
        }
        true
    }

    fn send(&self, seg: Segment) -> bool {
        self.tx.send(seg).is_ok()
    }
}

/// The render threads and the writer.
struct Pool {
    /// Each render thread's chunks.
    txs: Vec<SyncSender<Chunk>>,
    /// The render thread the next chunk goes to.
    next: usize,
    workers: Vec<std::thread::JoinHandle<()>>,
    writer: std::thread::JoinHandle<Result<u64, CliError>>,
    /// Set by the writer when it stops (output error).
    stop: Arc<AtomicBool>,
}

impl Pool {
    fn spawn<W, F>(
        settings: &Settings,
        captures: &[String],
        stamps: Arc<Stamps>,
        out: F,
        note: impl FnMut(&str) + Send + 'static,
    ) -> Pool
    where
        W: Write,
        F: FnOnce() -> W + Send + 'static,
    {
        let n = settings.threads.max(1);
        let stop = Arc::new(AtomicBool::new(false));
        let mut txs = Vec::with_capacity(n);
        let mut from = Vec::with_capacity(n);
        let mut workers = Vec::with_capacity(n);
        for _ in 0..n {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Chunk>(QUEUED_CHUNKS);
            let (seg_tx, seg_rx) = std::sync::mpsc::sync_channel::<Segment>(QUEUED_SEGMENTS);
            let (spare_tx, spare_rx) = std::sync::mpsc::channel::<Vec<u8>>();
            let budget = Arc::new(Budget::default());
            let to = ToWriter {
                tx: seg_tx,
                budget: budget.clone(),
                spares: spare_rx,
            };
            let thread = RenderThread {
                buf: Vec::new(),
                to,
                render: Render::new(settings.format, true)
                    .time(settings.time)
                    .layout(settings.layout)
                    .captures(captures),
                opts: settings.decode.clone(),
                stamps: stamps.clone(),
                big: settings.big_message,
            };
            workers.push(std::thread::spawn(move || thread.run(rx)));
            txs.push(tx);
            from.push(FromRender {
                segs: seg_rx,
                spares: spare_tx,
                budget,
            });
        }
        let writer_stop = stop.clone();
        let writer = std::thread::spawn(move || {
            let r = writer(out(), &from, note);
            if r.is_err() {
                writer_stop.store(true, Ordering::Relaxed);
            }
            r
        });
        Pool {
            txs,
            next: 0,
            workers,
            writer,
            stop,
        }
    }

    /// Hands `chunk` to the next render thread; false when they stopped.
    fn send(&mut self, chunk: Chunk) -> bool {
        let Some(tx) = self.txs.get(self.next) else {
            return false;
        };
        self.next = (self.next + 1) % self.txs.len();
        tx.send(chunk).is_ok()
    }

    /// Hands over `last` (if it holds anything), waits for everything to be
    /// written; the number of malformed messages printed.
    fn end(mut self, last: Chunk) -> Result<u64, CliError> {
        if !last.items.is_empty() {
            self.send(last);
        }
        drop(self.txs);
        for w in self.workers {
            w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
        self.writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

/// The writer: takes the render threads' output chunk by chunk in the order
/// the chunks were handed out (round-robin), writes it to `out` and the
/// notices with `note` (what came before a notice written first); gives the
/// emptied buffers back. Ends when the render thread whose turn it is has
/// no more chunks. The number of malformed messages written.
fn writer<W: Write>(
    out: W,
    from: &[FromRender],
    mut note: impl FnMut(&str),
) -> Result<u64, CliError> {
    let mut w = std::io::BufWriter::new(out);
    let mut malformed = 0;
    for r in from.iter().cycle() {
        loop {
            match r.segs.recv() {
                Ok(Segment::Bytes(mut b)) => {
                    w.write_all(&b).map_err(CliError::Output)?;
                    r.budget.give(b.len());
                    b.clear();
                    // Buffers grown by a large message are not kept.
                    if b.capacity() <= 2 * SEGMENT_BYTES {
                        let _ = r.spares.send(b);
                    }
                }
                Ok(Segment::Line(line)) => {
                    w.flush().map_err(CliError::Output)?;
                    note(&line);
                }
                Ok(Segment::End(m)) => {
                    malformed += m;
                    break;
                }
                // This render thread got no further chunk: there is none.
                Err(_) => {
                    w.flush().map_err(CliError::Output)?;
                    return Ok(malformed);
                }
            }
        }
    }
    w.flush().map_err(CliError::Output)?;
    Ok(malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::print::notice_line;
    use kafkashark::capture::{FrameSource, Polled};
    use std::path::{Path, PathBuf};

    /// Standard output with each standard error line in its place (`\0line\n`).
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn captures() -> Vec<PathBuf> {
        crate::print::shipped_captures()
    }

    fn open(path: &Path) -> FileSource {
        FileSource::open(path.to_str().expect("path")).expect("open")
    }

    /// `print -V` through the pool: what it writes, and the malformed count.
    fn pooled(
        path: &Path,
        ports: &Ports,
        format: PrintFormat,
        count: Option<u64>,
        threads: usize,
    ) -> (Vec<u8>, u64) {
        pooled_with(
            path,
            ports,
            format,
            count,
            threads,
            DecodeOptions::default(),
            BIG_MESSAGE,
        )
    }

    /// [`pooled`] decoding with `decode`, messages of `big` bytes or more
    /// written in parts.
    fn pooled_with(
        path: &Path,
        ports: &Ports,
        format: PrintFormat,
        count: Option<u64>,
        threads: usize,
        decode: DecodeOptions,
        big: usize,
    ) -> (Vec<u8>, u64) {
        let settings = Settings {
            ports: ports.clone(),
            reorder: kafkashark::flow::ReorderWindow::default(),
            keys: Default::default(),
            format,
            count,
            decode,
            name: "cap".into(),
            threads,
            big_message: big,
            held_bytes: crate::print::HELD_BYTES,
            held_on_disk: None,
            filter: None,
            all_notices: true,
            time: Default::default(),
            layout: TEXT_LAYOUT,
        };
        pooled_settings(path, settings)
    }

    /// `print -V` through the pool with `settings`.
    fn pooled_settings(path: &Path, settings: Settings) -> (Vec<u8>, u64) {
        let shared = Shared::default();
        let (out, notes) = (shared.clone(), shared.clone());
        let malformed = run(
            open(path),
            settings,
            move || out,
            move |line| {
                let mut v = notes.0.lock().expect("lock");
                v.push(0);
                v.extend_from_slice(line.as_bytes());
                v.push(b'\n');
            },
        )
        .expect("run");
        let bytes = std::mem::take(&mut *shared.0.lock().expect("lock"));
        (bytes, malformed)
    }

    /// The layout of the text trees compared: `print -V`'s.
    const TEXT_LAYOUT: tree::Layout = tree::Layout::Compact { about: false };

    /// What one thread whose analyzer keeps every message's tree prints (as
    /// `print -V` did before the pool: the `Ordered` stage over such an analyzer).
    fn one_thread(
        path: &Path,
        ports: &Ports,
        format: PrintFormat,
        count: Option<u64>,
    ) -> (Vec<u8>, u64) {
        let mut analyzer = kafkashark::analyzer::Analyzer::new(AnalyzerConfig {
            pipeline: kafkashark::pipeline::PipelineConfig::with_ports(ports.clone()),
            decode: DecodeOptions::default(),
            keep_trees: true,
            ..AnalyzerConfig::default()
        });
        // Held messages keep their trees (a test's captures are small).
        let mut reorder = Reorder::new(HELD_MESSAGES);
        reorder.limit_bytes(crate::print::HELD_BYTES);
        let mut render = Render::new(format, true).layout(TEXT_LAYOUT);
        let (mut outs, mut ready, mut out) = (Vec::new(), Vec::new(), Vec::new());
        let (mut printed, mut malformed) = (0, 0);
        let mut emit = |ready: &mut Vec<Output>, render: &mut Render| {
            for o in ready.drain(..) {
                match o {
                    Output::Message(m) => {
                        if count.is_some_and(|c| printed >= c) {
                            continue;
                        }
                        printed += 1;
                        malformed += u64::from(m.info.decode_error.is_some());
                        render.message(&mut out, &m);
                    }
                    Output::Notice(n) => {
                        if let Some(line) = notice_line("cap", &n) {
                            out.push(0);
                            out.extend_from_slice(line.as_bytes());
                            out.push(b'\n');
                        }
                    }
                }
            }
            count.is_some_and(|c| printed >= c)
        };
        let mut src = open(path);
        let mut reached = count == Some(0);
        let mut error = None;
        while !reached {
            let f = match src.poll() {
                Ok(Polled::Frame(f)) => f,
                Ok(Polled::Timeout) => continue,
                Ok(Polled::End) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            };
            render.first_ts.get_or_insert(f.ts);
            analyzer.push(&f, &mut outs);
            for o in outs.drain(..) {
                reorder.push(o, &mut ready);
            }
            reached = emit(&mut ready, &mut render);
        }
        if !reached {
            analyzer.finish(&mut outs);
            for o in outs.drain(..) {
                reorder.push(o, &mut ready);
            }
            reorder.flush(&mut ready);
            emit(&mut ready, &mut render);
            // What stopped the read comes last.
            if let Some(e) = error {
                let line = format!("\0kafkashark: {}\n", tree::escape_text(&e.to_string()));
                out.extend_from_slice(line.as_bytes());
            }
        }
        (out, malformed)
    }

    /// Every shipped capture, JSONL and text, broker ports and `--ports
    /// any`: the pool with one, two or three render threads prints byte for
    /// byte what one thread keeping every tree prints — the same facts
    /// (decode errors, error codes, topics, topic-id names as known then),
    /// the same notices in the same places, the same malformed count — and
    /// so does it with JSON lines written in parts ([`RenderThread::stream`]: the
    /// dry decode decides as the whole line's end does, and the messages it
    /// leaves to the tree print the same) and with text trees whose records
    /// are made as they are written.
    #[test]
    fn pool_prints_what_one_thread_keeping_trees_prints() {
        let mut lines = 0;
        for path in captures() {
            for (format, ports) in [
                (PrintFormat::Jsonl, Ports::List(vec![9092, 19092])),
                (PrintFormat::Jsonl, Ports::Any),
                (PrintFormat::Text, Ports::List(vec![9092, 19092])),
            ] {
                let want = one_thread(&path, &ports, format, None);
                lines += want.0.iter().filter(|&&b| b == b'\n').count();
                for threads in [1, 2, 3] {
                    let got = pooled(&path, &ports, format, None, threads);
                    assert!(
                        got == want,
                        "{} {format:?} {ports:?} {threads} threads",
                        path.display()
                    );
                }
                if format == PrintFormat::Text {
                    // Every tree's records made as its text is written.
                    let got =
                        pooled_with(&path, &ports, format, None, 2, DecodeOptions::default(), 0);
                    assert!(got == want, "{} text, records deferred", path.display());
                    continue;
                }
                // JSON lines written in parts: every message's (records
                // written from their bytes or as nodes), or those of 1 KB
                // or more.
                for (big, records_json) in [(0, true), (0, false), (1024, true)] {
                    let decode = DecodeOptions {
                        records_json,
                        ..DecodeOptions::default()
                    };
                    let got = pooled_with(&path, &ports, format, None, 2, decode, big);
                    assert!(
                        got == want,
                        "{} {ports:?} in parts from {big} bytes, records_json {records_json}",
                        path.display()
                    );
                }
            }
        }
        assert!(lines > 10_000, "{lines}");
    }

    /// Messages held for their pairing past a byte limit of 256 KB, their
    /// bytes on disk, print what one thread holding up to 32 MB prints (and,
    /// fetched back in turn, `-c` stops at the same message); without the
    /// disk the limit makes requests leave unpaired (the captures of big
    /// messages differ).
    #[test]
    fn messages_held_on_disk_print_the_same() {
        let ports = Ports::List(vec![9092, 19092]);
        let mut differ = 0;
        for path in captures() {
            for count in [None, Some(5)] {
                let want = one_thread(&path, &ports, PrintFormat::Jsonl, count);
                for disk in [Some(std::env::temp_dir()), None] {
                    let settings = Settings {
                        ports: ports.clone(),
                        reorder: kafkashark::flow::ReorderWindow::default(),
                        keys: Default::default(),
                        format: PrintFormat::Jsonl,
                        count,
                        decode: DecodeOptions::default(),
                        name: "cap".into(),
                        threads: 2,
                        big_message: BIG_MESSAGE,
                        held_bytes: 256 << 10,
                        held_on_disk: disk.clone(),
                        filter: None,
                        all_notices: true,
                        time: Default::default(),
                        layout: TEXT_LAYOUT,
                    };
                    let got = pooled_settings(&path, settings);
                    match disk {
                        Some(_) => assert!(got == want, "{} {count:?}", path.display()),
                        None => differ += usize::from(got != want),
                    }
                }
            }
        }
        assert!(differ > 0, "no capture reached the limit");
    }

    /// Damaged captures (bits flipped at fixed pseudo-random places): record
    /// batches whose CRC or compressed data is bad decode as errors only in a
    /// tree (the summary scan does not read them), and the pool reports them
    /// as one thread keeping trees does.
    #[test]
    fn damaged_captures_print_the_same() {
        let ports = Ports::List(vec![9092, 19092]);
        let mut corrupt = 0;
        for path in captures()
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("a2-") || p.to_string_lossy().contains("b4-"))
        {
            let data = std::fs::read(&path).expect("read");
            for seed in 1..=3u64 {
                let mut d = data.clone();
                let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                for _ in 0..40 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let len = d.len() as u64 - 200;
                    if let Some(b) = d.get_mut(200 + (x % len) as usize) {
                        *b ^= 1 << (x >> 60 & 7);
                    }
                }
                let tmp = std::env::temp_dir().join(format!(
                    "kafkashark-render-pool-{}-{seed}-{}.pcap",
                    std::process::id(),
                    path.file_stem().map_or("x".into(), |s| s.to_string_lossy())
                ));
                std::fs::write(&tmp, &d).expect("write");
                let want = one_thread(&tmp, &ports, PrintFormat::Jsonl, None);
                let got = pooled(&tmp, &ports, PrintFormat::Jsonl, None, 2);
                // Every message written in parts (its errors found dry).
                let decode = DecodeOptions {
                    records_json: true,
                    ..DecodeOptions::default()
                };
                let parted = pooled_with(&tmp, &ports, PrintFormat::Jsonl, None, 2, decode, 0);
                let _ = std::fs::remove_file(&tmp);
                assert!(got == want, "{} seed {seed}", path.display());
                assert!(parted == want, "{} seed {seed}, in parts", path.display());
                corrupt += String::from_utf8_lossy(&got.0)
                    .matches("data is corrupt")
                    .count();
            }
        }
        assert!(corrupt > 0, "no damaged record batch decoded");
    }

    /// `-c N` stops at the same message as one thread does (the notices
    /// before it included), and prints N messages when there are N.
    #[test]
    fn count_stops_at_the_same_message() {
        let ports = Ports::List(vec![9092, 19092]);
        for path in captures().iter().take(3) {
            let all = one_thread(path, &ports, PrintFormat::Jsonl, None).0;
            let messages = |out: &[u8]| {
                out.split(|&b| b == b'\n')
                    .filter(|l| l.first() == Some(&b'{'))
                    .count()
            };
            let total = messages(&all) as u64;
            assert!(total > 20, "{} {total}", path.display());
            for count in [0, 1, 7, total / 2, total, total + 1] {
                let want = one_thread(path, &ports, PrintFormat::Jsonl, Some(count));
                let got = pooled(path, &ports, PrintFormat::Jsonl, Some(count), 2);
                assert!(got == want, "{} -c {count}", path.display());
                assert_eq!(messages(&got.0) as u64, count.min(total));
                assert!(all.starts_with(&got.0) || count >= total);
            }
        }
    }

    /// A topic id is named only in messages from the one that taught it on.
    #[test]
    fn names_learned_later_do_not_show() {
        use kafkashark::kafka::tree::Role;
        let stamps = Stamps::default();
        let name = "orders".to_string();
        stamps.map.write().expect("lock").insert(
            [7; 16],
            (10, name.as_str().into(), format!("topic {name:?}").into()),
        );
        stamps.any.store(true, Ordering::Release);
        for (index, named) in [(9, false), (10, true), (11, true)] {
            let mut root = Node::new("R", "message", Value::None, 0, 0, Role::Message);
            root.children.push(Node::new(
                "TopicId",
                "uuid",
                Value::Uuid([7; 16]),
                0,
                16,
                Role::RequestBody,
            ));
            let mut topics: Topics = ["other".into()].into_iter().collect();
            stamps.annotate(index, &mut root, &[[7; 16], [8; 16]], &mut topics);
            let detail = root.children[0].detail.as_deref();
            if named {
                assert_eq!(detail, Some("topic \"orders\""));
                assert_eq!(
                    topics.iter().map(|t| &**t).collect::<Vec<_>>(),
                    ["other", "orders"]
                );
            } else {
                assert_eq!(detail, None);
                assert_eq!(topics.iter().map(|t| &**t).collect::<Vec<_>>(), ["other"]);
            }
        }
    }

    /// Output that fails after a while.
    struct Failing(usize);

    impl Write for Failing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 < b.len() {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.0 -= b.len();
            Ok(b.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// An output error stops the reader, the analyzer, every render thread
    /// and the writer, and is what the run returns.
    #[test]
    fn an_output_error_stops_every_thread() {
        let path = captures()
            .into_iter()
            .find(|p| p.to_string_lossy().contains("b3-large-messages"))
            .expect("b3");
        // Lines made whole, and written in parts.
        for big_message in [BIG_MESSAGE, 0] {
            let settings = Settings {
                ports: Ports::List(vec![9092]),
                reorder: kafkashark::flow::ReorderWindow::default(),
                keys: Default::default(),
                format: PrintFormat::Jsonl,
                count: None,
                decode: DecodeOptions::default(),
                name: "cap".into(),
                threads: 2,
                big_message,
                held_bytes: crate::print::HELD_BYTES,
                held_on_disk: None,
                filter: None,
                all_notices: true,
                time: Default::default(),
                layout: TEXT_LAYOUT,
            };
            let r = run(open(&path), settings, || Failing(100_000), |_| {});
            assert!(matches!(r, Err(CliError::Output(_))), "{r:?}");
        }
    }
}
