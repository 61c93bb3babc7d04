//! Fuzz harnesses: one entry point per stage of the data path, each taking
//! arbitrary bytes and asserting the engine's invariants on what comes out.
//!
//! Place in the project: beside the data path, not in it. The cargo-fuzz
//! targets in `fuzz/` call these functions, and `tests/fuzz_replay.rs` calls
//! the same functions over the committed corpus (`fuzz/corpus/<target>/`), so
//! a crash found by a fuzzer becomes a stable regression test by copying its
//! input into the corpus.
//!
//! Every harness asserts, besides "no panic":
//! - spans: every node lies inside its byte source, and a child in the same
//!   source as its parent lies inside the parent's span;
//! - error offsets lie within their byte source;
//! - work is bounded by the input: the number of nodes, events and bytes
//!   produced is at most a fixed factor of the input (plus what decompression
//!   may add, itself capped), so decode time cannot run away from input size.
//!
//! Inputs are read with small byte-driven choices (see [`Choices`]); a
//! harness never rejects an input, it only interprets it.

use crate::vocab::{Direction, Timestamp};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::analyzer::{Analyzer, AnalyzerConfig, Output};
use crate::capture::{decode_segment, FileSource, Frame, FrameSource, LinkType, Segment, TcpFlags};
use crate::flow::{FlowConfig, FlowEvent, Ports, Reassembler};
use crate::kafka::framing::{Framer, FramerConfig, FramerEvent, RequestLog, SeenRequest};
use crate::kafka::records::decode_record_set;
use crate::kafka::schema::{self, MessageKind};
use crate::kafka::tree::{ByteSource, Node, SourceBytes};
use crate::kafka::{decode_request, decode_response, DecodeOptions, Decoded};
use crate::pipeline::{Event, Pipeline, PipelineConfig};

/// Decompression cap used by the harnesses: small, so bombs hit it fast.
pub const FUZZ_MAX_DECOMPRESSED: usize = 1 << 20;

/// Nodes a decoded tree may hold per byte of input (message plus decompressed
/// sources), on top of [`NODE_SLACK`]. A field takes at least one byte except
/// zero-size array elements, which the decoder caps.
pub const NODES_PER_BYTE: usize = 8;

/// Nodes allowed whatever the input size (zero-size elements, headers, notes).
pub const NODE_SLACK: usize = 200_000;

/// Reads choices from the front of an input; past its end every choice is 0.
pub struct Choices<'a> {
    data: &'a [u8],
}

impl<'a> Choices<'a> {
    /// Choices over `data`.
    pub fn new(data: &'a [u8]) -> Choices<'a> {
        Choices { data }
    }

    /// One byte (0 when exhausted).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// A big-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    /// A big-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.data.split_at(n.min(self.data.len()));
        self.data = b;
        a
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

// ---------------------------------------------------------------------------
// Tree invariants.

/// Checks a decoded message: spans nested and inside their sources, the error
/// inside its source, and the node count bounded by the bytes decoded.
pub fn check_decoded(msg: &[u8], d: &Decoded) {
    let source_len = |s: u16| -> usize {
        if s == 0 {
            msg.len()
        } else {
            d.sources.get(usize::from(s) - 1).map_or_else(
                || panic!("node points at missing byte source #{s}"),
                |b| b.data.len(),
            )
        }
    };
    for (i, s) in d.sources.iter().enumerate() {
        let parent_len = if s.parent == 0 {
            msg.len()
        } else {
            assert!(
                usize::from(s.parent) <= i,
                "byte source #{} names a later parent #{}",
                i + 1,
                s.parent
            );
            source_len(s.parent)
        };
        assert!(
            s.parent_offset.saturating_add(s.parent_length) <= parent_len,
            "byte source #{} covers [{}, +{}) beyond its parent's {} bytes",
            i + 1,
            s.parent_offset,
            s.parent_length,
            parent_len
        );
    }
    assert_eq!(d.root.source, 0, "the root lies in the message");
    assert_eq!(
        (d.root.offset, d.root.length),
        (0, msg.len()),
        "the root spans the whole message"
    );
    let nodes = check_nodes(&d.root, &source_len);
    let inflated: usize = d.sources.iter().map(|s| s.data.len()).sum();
    let bound = msg
        .len()
        .saturating_add(inflated)
        .saturating_mul(NODES_PER_BYTE)
        .saturating_add(NODE_SLACK);
    assert!(
        nodes <= bound,
        "{nodes} nodes for {} message bytes and {inflated} decompressed bytes",
        msg.len()
    );
    assert!(
        inflated <= FUZZ_MAX_DECOMPRESSED * crate::kafka::records::TOTAL_FACTOR + 1,
        "{inflated} bytes decompressed for one message"
    );
    if let Some(e) = &d.error {
        let len = source_len(e.source);
        assert!(
            e.offset <= len,
            "decode error offset 0x{:x} beyond byte source #{} ({len} bytes): {e}",
            e.offset,
            e.source
        );
        // Problems with the size prefix itself (a message cut short by a gap or
        // the snaplen, a negative size) are told by `error` alone: every byte
        // present decoded.
        let frame_level =
            e.what.starts_with("message truncated") || e.what.starts_with("negative message size");
        assert!(
            frame_level || d.root.first_error().is_some(),
            "a decode error without a malformed node: {e}"
        );
    }
    // Rendering and JSON must work on anything the decoder produced.
    let text = crate::kafka::tree::render_text(&d.root);
    assert!(
        !text.contains('\u{1b}'),
        "escape character in the text tree"
    );
    // The JSON `print` writes is serde_json's text of `to_json`, byte for byte.
    let s = serde_json::to_string(&d.root.to_json()).expect("tree serialises");
    let mut direct = Vec::new();
    d.root.write_json(&mut direct);
    assert!(direct == s.as_bytes(), "write_json differs from to_json");
    assert!(
        !direct.contains(&0x1b),
        "raw escape character in the JSON tree"
    );
}

/// Checks spans of `n` and its subtree; returns the node count.
fn check_nodes(n: &Node, source_len: &dyn Fn(u16) -> usize) -> usize {
    let mut count = 0usize;
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        count += 1;
        let len = source_len(n.source);
        assert!(
            n.offset.checked_add(n.length).is_some_and(|e| e <= len),
            "node {} [{}:0x{:x}, {}B] lies beyond its byte source ({len} bytes)",
            n.name,
            n.source,
            n.offset,
            n.length
        );
        for c in &n.children {
            if c.source == n.source {
                assert!(
                    c.offset >= n.offset && c.end() <= n.end(),
                    "child {} [0x{:x}, {}B] outside parent {} [0x{:x}, {}B] (source {})",
                    c.name,
                    c.offset,
                    c.length,
                    n.name,
                    n.offset,
                    n.length,
                    n.source
                );
            }
            stack.push(c);
        }
    }
    count
}

fn fuzz_opts() -> DecodeOptions {
    DecodeOptions {
        max_decompressed: FUZZ_MAX_DECOMPRESSED,
        records: true,
        records_headers_only: false,
        records_json: false,
        records_deferred: false,
        show_secrets: false,
        summary_topics: true,
        batch_sizes: None,
    }
}

/// The tree decoded from `msg` with `records_deferred` (by `decode`) writes
/// the text and JSON of `d`, the tree decoded without it, and has its error.
fn check_deferred(msg: &[u8], d: &Decoded, decode: impl Fn(&DecodeOptions) -> Decoded) {
    let kept = decode(&DecodeOptions {
        records_deferred: true,
        ..fuzz_opts()
    });
    if let Some(what) = deferred_differs(msg, d, &kept) {
        panic!("records_deferred {what}");
    }
}

/// How `kept`, the tree of `msg` decoded with `records_deferred`, differs
/// from `d`, decoded without it (the same options otherwise), if it does:
/// its error, its text (records' nodes made from their bytes) or its JSON.
pub(crate) fn deferred_differs(msg: &[u8], d: &Decoded, kept: &Decoded) -> Option<&'static str> {
    if d.error != kept.error {
        return Some("finds another error");
    }
    let bytes = SourceBytes {
        message: msg,
        sources: &kept.sources,
    };
    let (mut want, mut got) = (String::new(), String::new());
    crate::kafka::tree::write_text(&mut want, &d.root, "  ");
    crate::kafka::tree::write_text_in(&mut got, &kept.root, "  ", &bytes);
    if want != got {
        return Some("writes other text");
    }
    let (mut want, mut got) = (Vec::new(), Vec::new());
    d.root.write_json(&mut want);
    kept.root.write_json_in(&mut got, &bytes);
    (want != got).then_some("writes other JSON")
}

/// [`fuzz_opts`] with records written straight to JSON (`print -V --format jsonl`).
fn records_json_opts() -> DecodeOptions {
    DecodeOptions {
        records_json: true,
        ..fuzz_opts()
    }
}

/// The tree decoded from `msg` with `records_json` writes the same JSON (from
/// its bytes) as the tree decoded without it, and has the same error.
fn check_records_json(msg: &[u8], d: &Decoded, fast: &Decoded) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    d.root.write_json(&mut a);
    let bytes = SourceBytes {
        message: msg,
        sources: &fast.sources,
    };
    fast.root.write_json_in(&mut b, &bytes);
    assert!(a == b, "records_json writes other JSON");
    assert_eq!(d.error, fast.error, "records_json finds another error");
}

/// The tree's JSON written while decoding (`stream_json`, as `print -V
/// --format jsonl` writes it) is the JSON of `fast`, the tree decoded with
/// the same options, with the facts `response_facts` takes from it, when the
/// stream finds no error; when it finds one, so does the tree (a request
/// other than ControlledShutdown v0, which `decode_request` decodes again
/// with header v1). `response`: the api key and version a response is
/// decoded with; `None` for a request.
///
/// Written in parts of any size (`JsonSink::spilling`), the parts are that
/// JSON; a dry sink writes nothing and finds the same result and facts.
fn check_streamed(msg: &[u8], fast: &Decoded, response: Option<(i16, i16)>) {
    use crate::kafka::decode::decode_streamed;
    use crate::kafka::stream_json::{JsonSink, Stream};
    use crate::kafka::tree::Spill;
    let opts = records_json_opts();
    let decode =
        |sink: &mut JsonSink<'_>| decode_streamed(msg, response, &opts, Stream::Json(sink));
    let mut got = Vec::new();
    let mut sink = JsonSink::new(&mut got, msg, None);
    let s = decode(&mut sink);
    let facts = sink.facts();
    let parts = std::cell::RefCell::new(Vec::new());
    let take = |b: &mut Vec<u8>| parts.borrow_mut().extend(b.drain(..));
    let mut rest = Vec::new();
    let at = msg.len() % 97 + 1;
    let mut sink = JsonSink::new(&mut rest, msg, None).spilling(Spill { at, take: &take });
    let _ = decode(&mut sink);
    let mut parts = parts.into_inner();
    parts.extend_from_slice(&rest);
    assert!(parts == got, "the JSON written in parts differs");
    let mut none = Vec::new();
    let mut sink = JsonSink::new(&mut none, msg, None).dry();
    let dry = decode(&mut sink);
    assert_eq!(sink.facts(), facts, "the dry sink's facts differ");
    assert!(none.is_empty(), "the dry sink wrote");
    assert_eq!(dry.error, s.error, "the dry sink's error differs");
    assert_eq!((&dry.topics, &dry.topic_ids), (&s.topics, &s.topic_ids));
    if !s.clean() {
        let retried = response.is_none()
            && s.api_key.map(schema::ApiKey) == Some(schema::ApiKey::CONTROLLED_SHUTDOWN)
            && s.api_version == Some(0);
        assert!(!fast.clean() || retried, "only the stream failed");
        return;
    }
    assert!(fast.clean(), "only the tree failed");
    let mut want = Vec::new();
    let bytes = SourceBytes {
        message: msg,
        sources: &fast.sources,
    };
    fast.root.write_json_in(&mut want, &bytes);
    assert!(got == want, "the streamed JSON differs from the tree's");
    let (throttle, errors) = crate::analyzer::response_facts(&fast.root);
    assert_eq!(
        (facts.throttle_time_ms, facts.error_codes),
        (throttle, errors),
        "streamed facts"
    );
    assert_eq!((&s.topics, &s.topic_ids), (&fast.topics, &fast.topic_ids));
}

/// The tree's text made while decoding (`stream_text`, as `print -V` writes
/// a big message's: measured, then written; records kept as bytes) is the
/// text of `d`, the tree decoded without it, with the facts
/// `response_facts` takes from it, when the measuring decode finds no
/// error; when it finds one, so does the tree (but for ControlledShutdown
/// v0, as [`check_streamed`]).
fn check_text_streamed(msg: &[u8], d: &Decoded, response: Option<(i16, i16)>) {
    let opts = DecodeOptions {
        records_deferred: true,
        ..fuzz_opts()
    };
    let (s, text) = streamed_text(msg, response, &opts, "  ", None);
    let Some((got, facts)) = text else {
        let retried = response.is_none()
            && s.api_key.map(schema::ApiKey) == Some(schema::ApiKey::CONTROLLED_SHUTDOWN)
            && s.api_version == Some(0);
        assert!(!d.clean() || retried, "only the text stream failed");
        return;
    };
    assert!(d.clean(), "only the tree failed");
    let mut want = String::new();
    crate::kafka::tree::write_text(&mut want, &d.root, "  ");
    assert!(got == want, "the streamed text differs from the tree's");
    let (throttle, errors) = crate::analyzer::response_facts(&d.root);
    assert_eq!(
        (facts.throttle_time_ms, facts.error_codes),
        (throttle, errors)
    );
}

/// `msg` decoded twice into text streams, as `print -V` writes a big
/// message's text (`response`: the api key and version a response is
/// decoded with, `None` for a request; `annotate` applied to every node in
/// both): the measuring decode's result, and when it found no error, the
/// text (each line after `indent`) and the facts. A decode without an error
/// leaves no parent open.
pub(crate) fn streamed_text(
    msg: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    indent: &str,
    mut annotate: Option<&mut dyn FnMut(&mut Node)>,
) -> (
    Decoded,
    Option<(String, crate::kafka::stream_json::StreamFacts)>,
) {
    use crate::kafka::decode::decode_streamed;
    use crate::kafka::stream_json::Stream;
    use crate::kafka::stream_text::TextStream;
    fn again<'a>(
        a: &'a mut Option<&mut dyn FnMut(&mut Node)>,
    ) -> Option<&'a mut dyn FnMut(&mut Node)> {
        match a {
            Some(a) => Some(&mut **a),
            None => None,
        }
    }
    let decode = |t: &mut TextStream<'_>| decode_streamed(msg, response, opts, Stream::Text(t));
    let mut measure = TextStream::measure(msg, again(&mut annotate));
    let s = decode(&mut measure);
    if !s.clean() {
        return (s, None);
    }
    let Some((plan, facts)) = measure.finish() else {
        panic!("a parent left open by a decode without an error")
    };
    assert!(plan.streams(), "a root name with a line break");
    let mut got = String::new();
    let mut write = TextStream::write(msg, plan, &mut got, indent, again(&mut annotate));
    let _ = decode(&mut write);
    drop(write);
    (s, Some((got, facts)))
}

/// Prepends a size prefix matching the rest when `fix` is set, else uses the input as is.
fn message_bytes(fix: bool, body: &[u8]) -> Vec<u8> {
    if fix {
        let mut m = u32::try_from(body.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes()
            .to_vec();
        m.extend_from_slice(body);
        m
    } else {
        body.to_vec()
    }
}

// ---------------------------------------------------------------------------
// Decoding.

/// Request decode. Byte 0: bit 0 set → the rest gets a correct size prefix
/// (so the fuzzer explores bodies), clear → the rest is the whole message.
pub fn request_decode(data: &[u8]) {
    request_decode_scanned(data);
}

/// [`request_decode`], returning how many of the summary scans (print's,
/// stats') answered, and so were compared with the tree.
pub fn request_decode_scanned(data: &[u8]) -> usize {
    let mut c = Choices::new(data);
    let fix = c.byte() & 1 == 1;
    let msg = message_bytes(fix, c.rest());
    let d = decode_request(&msg, &fuzz_opts());
    check_decoded(&msg, &d);
    let fast = decode_request(&msg, &records_json_opts());
    check_records_json(&msg, &d, &fast);
    check_deferred(&msg, &d, |o| decode_request(&msg, o));
    check_text_streamed(&msg, &d, None);
    check_streamed(&msg, &fast, None);
    let mut answered = 0;
    for opts in scan_opts() {
        let s = crate::kafka::decode::summarize_request(&msg, &opts);
        check_without_topics(
            s.clone(),
            |o| crate::kafka::decode::summarize_request(&msg, o),
            &opts,
        );
        answered += usize::from(check_summary(s, &decode_request(&msg, &opts), false));
    }
    answered
}

/// The summary scan without topic names noted (`summary_topics` off, as for
/// `stats`' responses) answers as with them, with the same facts, and only
/// `Summary::topics` empty.
fn check_without_topics(
    with: Option<crate::kafka::decode::Summary>,
    scan: impl Fn(&DecodeOptions) -> Option<crate::kafka::decode::Summary>,
    opts: &DecodeOptions,
) {
    let without = scan(&DecodeOptions {
        summary_topics: false,
        ..opts.clone()
    });
    match (with, without) {
        (Some(mut w), Some(o)) => {
            assert!(o.topics.is_empty(), "topics noted: {:?}", o.topics);
            w.topics.clear();
            assert_eq!(w, o, "the same summary but for its topics");
        }
        (None, None) => {}
        (w, o) => panic!(
            "the scan answered {} with topics, {} without",
            w.is_some(),
            o.is_some()
        ),
    }
}

/// The options the analyzer's summary scan runs with: `print`'s and `stats`'.
fn scan_opts() -> [DecodeOptions; 2] {
    let print = DecodeOptions {
        records: false,
        ..fuzz_opts()
    };
    let stats = DecodeOptions {
        records_headers_only: true,
        ..print.clone()
    };
    [print, stats]
}

/// Where the summary scan answers, it says what the tree of the same bytes
/// says (the analyzer takes one for the other): the message decodes
/// cleanly (no error, no warning), with the same header, throttle time, error codes and topics.
/// True when the scan answered.
fn check_summary(s: Option<crate::kafka::decode::Summary>, d: &Decoded, response: bool) -> bool {
    let Some(s) = s else { return false };
    assert!(
        d.clean(),
        "the scan answered, the decoder found {:?} {:?}",
        d.error,
        d.warning
    );
    assert_eq!(
        (s.api_key, s.api_version, s.correlation_id),
        (d.api_key, d.api_version, d.correlation_id),
        "header"
    );
    if response {
        let (throttle, errors) = crate::analyzer::response_facts(&d.root);
        assert_eq!(s.throttle_time_ms, throttle, "throttle time");
        assert_eq!(s.error_codes, errors, "error codes");
    } else {
        assert_eq!(s.client_id, d.client_id, "client id");
    }
    assert_eq!(s.topics, d.topics, "topics");
    assert_eq!(s.topic_ids, d.topic_ids, "topic ids");
    true
}

/// Response decode. Byte 0 picks a response definition, byte 1 a version in
/// (and just beyond) its range, byte 2 bit 0 the size prefix as in
/// [`request_decode`].
pub fn response_decode(data: &[u8]) {
    response_decode_scanned(data);
}

/// [`response_decode`], returning how many summary scans answered.
pub fn response_decode_scanned(data: &[u8]) -> usize {
    let mut c = Choices::new(data);
    let defs: Vec<_> = schema::MESSAGES
        .iter()
        .filter(|m| m.kind == MessageKind::Response)
        .collect();
    let pick = usize::from(c.byte());
    let vbyte = c.byte();
    let (key, version) = match defs.get(pick % defs.len().max(1)) {
        Some(def) if pick < 250 => {
            let span = i32::from(def.valid.max) - i32::from(def.valid.min) + 2;
            let v = i32::from(def.valid.min) + i32::from(vbyte) % span.max(1);
            (def.api_key, i16::try_from(v).unwrap_or(0))
        }
        // Keys and versions outside the tables.
        _ => (i16::from(vbyte as i8), i16::from(pick as u8 as i8)),
    };
    let fix = c.byte() & 1 == 1;
    let msg = message_bytes(fix, c.rest());
    let d = decode_response(&msg, key, version, &fuzz_opts());
    check_decoded(&msg, &d);
    let fast = decode_response(&msg, key, version, &records_json_opts());
    check_records_json(&msg, &d, &fast);
    check_deferred(&msg, &d, |o| decode_response(&msg, key, version, o));
    check_text_streamed(&msg, &d, Some((key, version)));
    check_streamed(&msg, &fast, Some((key, version)));
    let mut answered = 0;
    for opts in scan_opts() {
        let s = crate::kafka::decode::summarize_response(&msg, key, version, &opts);
        check_without_topics(
            s.clone(),
            |o| crate::kafka::decode::summarize_response(&msg, key, version, o),
            &opts,
        );
        answered += usize::from(check_summary(
            s,
            &decode_response(&msg, key, version, &opts),
            true,
        ));
    }
    answered
}

// ---------------------------------------------------------------------------
// Record sets.

/// The codec bits a [`record_set`] input forces.
fn codec_of(mode: u8) -> u8 {
    mode % 5
}

/// Compresses `data` with a Kafka codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
pub fn compress(codec: u8, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        2 => snap::raw::Encoder::new()
            .compress_vec(data)
            .unwrap_or_default(),
        3 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        4 => zstd::bulk::compress(data, 1).unwrap_or_default(),
        _ => data.to_vec(),
    }
}

/// A RecordBatch v2 around `records` (already compressed when `codec` > 0), with a correct CRC.
pub fn record_batch(codec: u8, count: i32, records: &[u8]) -> Vec<u8> {
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&i16::from(codec).to_be_bytes()); // attributes
    after_crc.extend_from_slice(&(count.max(1) - 1).to_be_bytes()); // lastOffsetDelta
    after_crc.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // baseTimestamp
    after_crc.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // maxTimestamp
    after_crc.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    after_crc.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    after_crc.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    after_crc.extend_from_slice(&count.to_be_bytes()); // recordsCount
    after_crc.extend_from_slice(records);
    let crc = crc32c::crc32c(&after_crc);
    let batch_len = 4 + 1 + 4 + after_crc.len();
    let mut b = Vec::with_capacity(12 + batch_len);
    b.extend_from_slice(&0i64.to_be_bytes()); // baseOffset
    b.extend_from_slice(&i32::try_from(batch_len).unwrap_or(i32::MAX).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    b.extend_from_slice(&crc.to_be_bytes());
    b.extend_from_slice(&after_crc);
    b
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
}

/// Well-formed v2 records cut from `data`: each takes a length byte for its
/// key, value and one header, so the fuzzer steers content, not framing.
pub fn records_from(data: &[u8]) -> (i32, Vec<u8>) {
    let mut c = Choices::new(data);
    let mut out = Vec::new();
    let mut n = 0i32;
    while !c.is_empty() && n < 1000 {
        let klen = usize::from(c.byte() % 32);
        let key = c.take(klen).to_vec();
        let vlen = usize::from(c.byte());
        let value = c.take(vlen).to_vec();
        let hlen = usize::from(c.byte() % 16);
        let hdr = c.take(hlen).to_vec();
        let mut body = vec![0u8]; // attributes
        put_varint(&mut body, i64::from(n)); // timestampDelta
        put_varint(&mut body, i64::from(n)); // offsetDelta
        put_varint(&mut body, key.len() as i64);
        body.extend_from_slice(&key);
        put_varint(&mut body, value.len() as i64);
        body.extend_from_slice(&value);
        put_varint(&mut body, 1); // one header
        put_varint(&mut body, hdr.len() as i64);
        body.extend_from_slice(&hdr);
        put_varint(&mut body, hdr.len() as i64);
        body.extend_from_slice(&hdr);
        put_varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
        n += 1;
    }
    (n, out)
}

/// A legacy (magic 0 or 1) message with a correct CRC.
pub fn legacy_message(
    magic: u8,
    attributes: u8,
    offset: i64,
    key: Option<&[u8]>,
    value: &[u8],
) -> Vec<u8> {
    let mut m = vec![magic, attributes];
    if magic >= 1 {
        m.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    }
    match key {
        Some(k) => {
            m.extend_from_slice(&i32::try_from(k.len()).unwrap_or(0).to_be_bytes());
            m.extend_from_slice(k);
        }
        None => m.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    m.extend_from_slice(&i32::try_from(value.len()).unwrap_or(0).to_be_bytes());
    m.extend_from_slice(value);
    let crc = crc32fast::hash(&m);
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&i32::try_from(m.len() + 4).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&m);
    out
}

/// Record sets with each codec. Byte 0 (`mode`) chooses the shape:
/// - bits 5–7 = 0: a RecordBatch v2 with codec `mode % 5` around records
///   built from the rest (bit 3 set: the rest is the raw records payload);
/// - bits 5–7 = 1: a legacy v1 wrapper with codec `mode % 4` around inner
///   messages built from the rest (bit 3 set: the rest is the raw inner set);
/// - bits 5–7 = 2: the rest as the record set itself, no wrapping;
/// - else: the rest compressed twice over (a bomb-shaped batch in a batch).
pub fn record_set(data: &[u8]) {
    let mut c = Choices::new(data);
    let mode = c.byte();
    let raw = mode & 0x08 != 0;
    let rest = c.rest();
    let set = match mode >> 5 {
        0 => {
            let codec = codec_of(mode);
            let (n, recs) = if raw {
                (i32::from(mode >> 4), rest.to_vec())
            } else {
                records_from(rest)
            };
            record_batch(codec, n, &compress(codec, &recs))
        }
        1 => {
            let codec = mode % 4;
            let inner = if raw {
                rest.to_vec()
            } else {
                let mut v = Vec::new();
                for (i, chunk) in rest.chunks(64).enumerate().take(512) {
                    v.extend(legacy_message(
                        1,
                        0,
                        i as i64,
                        chunk.first().map(|_| &chunk[..chunk.len().min(4)]),
                        chunk,
                    ));
                }
                v
            };
            legacy_message(1, codec, 0, None, &compress(codec, &inner))
        }
        2 => rest.to_vec(),
        _ => {
            let codec = codec_of(mode).max(1);
            let (n, recs) = records_from(rest);
            let inner = record_batch(codec, n, &compress(codec, &recs));
            record_batch(codec, 1, &compress(codec, &inner))
        }
    };
    check_record_set(&set);
}

/// Declared sizes (`records::declared`, what `stats` counts a CRC-verified
/// batch by): byte 0 picks the codec (bits 0–1: gzip, snappy, LZ4, zstd), the
/// compression level (bits 2–3), whether the rest is taken as the payload
/// itself (bit 4) or compressed for real first — zstd streamed, without a
/// content size, the frames the block walk reads — and how many bytes are
/// then changed (bits 5–7; each a u16 position and a byte to XOR).
pub fn declared(data: &[u8]) {
    let mut c = Choices::new(data);
    let mode = c.byte();
    let codec = 1 + mode % 4;
    let changes: Vec<(u16, u8)> = (0..mode >> 5).map(|_| (c.u16(), c.byte())).collect();
    let rest = c.rest();
    let mut payload = if mode & 0x10 != 0 {
        rest.to_vec()
    } else if codec == 4 {
        let level = [1, 3, 9, -1][usize::from((mode >> 2) & 3)];
        zstd::stream::encode_all(rest, level).unwrap_or_default()
    } else {
        compress(codec, rest)
    };
    let n = payload.len();
    for (at, x) in changes {
        if let Some(b) = payload.get_mut(usize::from(at) % n.max(1)) {
            *b ^= x;
        }
    }
    check_declared(codec, &payload);
}

/// The size `payload` declares for `codec`, if any, is the size it decodes
/// to whenever it decodes (a payload that does not decode may still declare
/// one: the exception docs/stats.md describes).
pub fn check_declared(codec: u8, payload: &[u8]) {
    let declared = crate::kafka::records::declared::declared_len(codec, payload);
    let decoded = crate::kafka::records::compression::decompressed_len(codec, payload, 1 << 22);
    if let (Some(n), Ok(s)) = (declared, decoded) {
        assert_eq!(
            n, s.len,
            "codec {codec}: declared {n} bytes, decodes to {}",
            s.len
        );
    }
}

/// Decodes `set` as a record set at offset 0 of a message made of just those
/// bytes and checks the invariants.
pub fn check_record_set(set: &[u8]) {
    let opts = fuzz_opts();
    let mut sources: Vec<ByteSource> = Vec::new();
    let rs = decode_record_set(set, 0, 0, &opts, &mut sources);
    // With records written straight to JSON: the same JSON, the same facts.
    let mut fast_sources = Vec::new();
    let fast = decode_record_set(set, 0, 0, &records_json_opts(), &mut fast_sources);
    let json = |nodes: &[Node], sources: &[ByteSource]| {
        let bytes = SourceBytes {
            message: set,
            sources,
        };
        let mut out = Vec::new();
        for n in nodes {
            n.write_json_in(&mut out, &bytes);
        }
        out
    };
    assert!(
        json(&rs.nodes, &sources) == json(&fast.nodes, &fast_sources),
        "records_json writes other JSON"
    );
    assert_eq!(
        (&rs.summary, &rs.problem, rs.records, rs.crc_mismatches),
        (
            &fast.summary,
            &fast.problem,
            fast.records,
            fast.crc_mismatches
        )
    );
    let mut root = Node::new(
        "records",
        "records",
        crate::kafka::tree::Value::None,
        0,
        set.len(),
        crate::kafka::tree::Role::RequestBody,
    );
    root.children = rs.nodes;
    let d = Decoded {
        kind: crate::kafka::decode::Kind::Request,
        api_key: None,
        api_version: None,
        correlation_id: None,
        client_id: None,
        root,
        sources,
        error: None,
        warning: None,
        topics: Vec::new(),
        topic_ids: Vec::new(),
        facts: None,
    };
    if let Some((off, src, what)) = &rs.problem {
        let len = if *src == 0 {
            set.len()
        } else {
            d.sources
                .get(usize::from(*src) - 1)
                .map_or(0, |s| s.data.len())
        };
        assert!(
            *off <= len,
            "record-set problem at 0x{off:x} beyond source #{src} ({len} bytes): {what}"
        );
    }
    check_decoded(set, &d);
}

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
            f.push(Bytes::copy_from_slice(chunk), offset, frame, ts, None);
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
                FlowEvent::Open { stream, .. } => {
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
    let mut c = Choices::new(data);
    let any = c.byte() & 1 == 1;
    let isn = [
        [u32::MAX - 100, 7],
        [1000, 2000],
        [u32::MAX - 3000, u32::MAX],
    ];
    let mut cfg = PipelineConfig::with_ports(if any {
        Ports::Any
    } else {
        Ports::List(vec![9092])
    });
    cfg.max_message = 1 << 16;
    cfg.resync_wait = 1 << 12;
    cfg.max_buffer_per_dir = 4096;
    cfg.max_buffer_total = 12_288;
    cfg.detect_limit = 4096;
    cfg.max_connections = 2;
    cfg.gap_timeout_ns = 2_000_000_000;
    let mut p = Pipeline::new(cfg.clone());
    let mut an = Analyzer::new(AnalyzerConfig {
        pipeline: cfg,
        keep_trees: true,
        decode: fuzz_opts(),
        ..AnalyzerConfig::default()
    });
    let mut ts_ns = 1_700_000_000u64 * 1_000_000_000;
    let mut frame = 0u64;
    let mut evs = Vec::new();
    let mut outs = Vec::new();
    let mut input = 0usize;
    while !c.is_empty() {
        let op = seg_op(&mut c, &isn);
        frame += 1;
        ts_ns = ts_ns.saturating_add(op.dt_ns);
        let f = frame_of_segment(&op.seg, frame, ts_ns);
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

fn check_outputs(outs: &mut Vec<Output>) {
    for o in outs.drain(..) {
        if let Output::Message(m) = o {
            if let Some(d) = &m.decoded {
                check_decoded(&m.raw.bytes, d);
            }
            if let Some(e) = &m.info.decode_error {
                assert!(!e.is_empty());
            }
        }
    }
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
        link: LinkType::RAW,
        data: Bytes::from(ip),
    }
}

// ---------------------------------------------------------------------------
// Capture files and link layers.

/// Link decoding. Byte 0 picks a link type, bytes 1–2 how many bytes the
/// snaplen cut (origlen − caplen); the rest is the frame.
pub fn link(data: &[u8]) {
    const LINKS: [u32; 12] = [0, 1, 12, 101, 108, 113, 228, 229, 276, 147, 9999, 1];
    let mut c = Choices::new(data);
    let l = LINKS[usize::from(c.byte()) % LINKS.len()];
    let cut = u32::from(c.u16());
    let bytes = Bytes::copy_from_slice(c.rest());
    let caplen = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    let frame = Frame {
        index: 1,
        ts: Timestamp::default(),
        caplen,
        origlen: caplen.saturating_add(cut),
        file_offset: None,
        link: LinkType(l),
        data: bytes.clone(),
    };
    match decode_segment(&frame) {
        Ok(seg) => {
            let base = bytes.as_ptr() as usize;
            let p = seg.payload.as_ptr() as usize;
            assert!(
                seg.payload.is_empty()
                    || (p >= base && p + seg.payload.len() <= base + bytes.len()),
                "payload is not a slice of the frame"
            );
            assert!(
                seg.payload_truncated_by <= cut,
                "payload cut by {} but the snaplen cut only {cut}",
                seg.payload_truncated_by
            );
        }
        Err(skip) => {
            let _ = skip.to_string();
            if let crate::capture::Skip::Malformed { offset, .. } = skip {
                assert!(offset <= bytes.len(), "skip offset beyond the frame");
            }
        }
    }
}

static TEMP_N: AtomicU64 = AtomicU64::new(0);

/// A file in the temp dir removed on drop.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whole-file ingest: the input is written to a temp file, read with
/// `FileSource` (the zero-copy reader, or libpcap for what it declines) and
/// fed to an `Analyzer` keeping trees. When the zero-copy reader read it,
/// libpcap must read the same frames from the same file and stop at the same
/// frame (cleanly or with an error), and every frame's `file_offset` must
/// point at its bytes.
pub fn pcap_file(data: &[u8]) {
    let n = TEMP_N.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "kafkashark-fuzz-{}-{}-{n}.pcap",
        std::process::id(),
        std::thread::current()
            .name()
            .unwrap_or("t")
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let tmp = TempFile(path);
    let Some(p) = tmp.0.to_str() else { return };
    let Ok(mut src) = FileSource::open(p) else {
        return;
    };
    let fast = !src.uses_libpcap();
    let mut an = Analyzer::new(AnalyzerConfig {
        keep_trees: true,
        decode: fuzz_opts(),
        pipeline: PipelineConfig::with_ports(Ports::Any),
        ..AnalyzerConfig::default()
    });
    let mut outs = Vec::new();
    let mut frames = Vec::new();
    let end = loop {
        match src.next_frame() {
            Ok(Some(f)) => {
                // Each record costs at least a 16-byte record header (pcap) or a
                // 16-byte block (pcapng SPB).
                assert!(
                    frames.len() < data.len() / 16 + 1,
                    "{} frames from a {}-byte file",
                    frames.len() + 1,
                    data.len()
                );
                assert_eq!(f.data.len() as u64, u64::from(f.caplen));
                assert!(f.data.len() <= data.len(), "a frame longer than the file");
                if let Some(off) = f.file_offset {
                    let at = usize::try_from(off).unwrap_or(usize::MAX);
                    assert_eq!(
                        data.get(at..at.saturating_add(f.data.len())),
                        Some(&f.data[..]),
                        "frame {} is not at its file offset {off}",
                        f.index
                    );
                }
                let _ = decode_segment(&f);
                an.push(&f, &mut outs);
                check_outputs(&mut outs);
                frames.push(f);
            }
            Ok(None) => break None,
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(p), "read error without the file name: {msg}");
                break Some(msg);
            }
        }
    };
    an.finish(&mut outs);
    check_outputs(&mut outs);
    if fast {
        same_as_libpcap(p, &frames, end.as_deref());
    }
}

/// libpcap reads `frames` from `path` and ends as `end` says (an error or not).
fn same_as_libpcap(path: &str, frames: &[Frame], end: Option<&str>) {
    let Ok(mut src) = FileSource::open_libpcap(path) else {
        panic!("the zero-copy reader opened a file libpcap does not open");
    };
    let mut i = 0;
    let theirs = loop {
        match src.next_frame() {
            Ok(Some(f)) => {
                let Some(ours) = frames.get(i) else {
                    panic!(
                        "libpcap reads frame {} past the {} read ({end:?})",
                        f.index,
                        frames.len()
                    );
                };
                assert_eq!(
                    (
                        ours.index,
                        ours.ts,
                        ours.caplen,
                        ours.origlen,
                        ours.link,
                        &ours.data
                    ),
                    (f.index, f.ts, f.caplen, f.origlen, f.link, &f.data),
                    "frame {} differs from libpcap's",
                    f.index
                );
                i += 1;
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    // libpcap compares a later pcapng interface's raw LINKTYPE_RAW (101) with
    // the first one's mapped DLT_RAW (12) and stops; the zero-copy reader
    // reads on (see `capture::fastfile`).
    if theirs
        .as_deref()
        .is_some_and(|e| e.contains("an interface has a type 101 different"))
    {
        return;
    }
    assert_eq!(
        i,
        frames.len(),
        "libpcap read {i} frames, the zero-copy reader {} ({end:?}, {theirs:?})",
        frames.len()
    );
    assert_eq!(
        end.is_some(),
        theirs.is_some(),
        "one reader stopped with an error, the other not: {end:?} / {theirs:?}"
    );
}

/// A harness: arbitrary bytes in, invariants asserted.
pub type Harness = fn(&[u8]);

/// Every harness by the name of its fuzz target (and corpus directory).
pub const TARGETS: &[(&str, Harness)] = &[
    ("request_decode", request_decode),
    ("response_decode", response_decode),
    ("record_set", record_set),
    ("framing", framing),
    ("reassembly", reassembly),
    ("pipeline", pipeline),
    ("link", link),
    ("pcap_file", pcap_file),
    ("declared", declared),
];
