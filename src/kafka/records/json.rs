//! The JSON output of the fields' reader (`fields.rs`): a RecordBatch v2's
//! header and records written straight to JSON, without nodes
//! ([`DecodeOptions::records_json`](crate::kafka::decode::DecodeOptions::records_json)).
//!
//! Place in the data path: `batch::records` offers each record of a
//! non-control batch to a [`Run`] first, which reads it with the output
//! that keeps nothing (`fields::Skip`). A record that reads cleanly — its
//! length fits, every field reads, no byte is left unclaimed — joins the run
//! (the cursor moves past it). Consecutive ones become a single node whose
//! [`Value::Records`] says which records they are; when the tree is written
//! (`Node::write_json_in`, with the message's and the sources' bytes)
//! [`write_run`] reads them again with the [`Json`] output, straight into
//! the output, as the bytes [`Node::write_json`] writes for the `Record[i]`
//! nodes `batch::Nodes` makes of the same reads (their children, display
//! and value texts, spans, keys in serde_json's order). A record that is not
//! clean leaves the run and the cursor as they were, and the caller reads it
//! into nodes. A batch's header fields are written at once
//! ([`batch_header`], a small [`Value::Json`]), unless its recordsCount is
//! negative.
//!
//! Invariants: the JSON equals the nodes' byte for byte (the tests compare
//! both on every capture and on generated batches); one reader gives every
//! output its fields, so the same bytes are accepted and a run is checked
//! and written by the same reads; nothing is sized from a wire length (the
//! output grows with the bytes written, which follow the bytes read).

use std::borrow::Cow;
use std::ops::Range;

use super::batch::{attributes_detail, crc_mismatch, CRC_VALID};
use super::cursor::{content_text, iso8601_bytes, Cur, MAX_STR};
use super::fields::{self, source_text, Crc, Detail, Field, FieldOut, Hdr, Kind, Skip};
use crate::kafka::tree::json::{self, Pad};
use crate::kafka::tree::{Deferred, Node, Role, Value};

/// The 61-byte header of the complete batch `whole` (at `c`, which moves
/// past it) as one node holding its thirteen fields' JSON, as `batch::Nodes`
/// would make them, with what the records need from it and whether its CRC
/// does not match; `None` (and `c` as it was) when the header is not whole
/// or its recordsCount is negative (an error the nodes show).
pub(super) fn batch_header(c: &mut Cur<'_>, whole: &[u8]) -> Option<(Node, Hdr, bool)> {
    if c.pos() != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(2048);
    let mut value = Vec::new();
    let src = source_text(c.source);
    let mut w = Json::new(&mut out, &src, &mut value);
    let mut h = Cur::new(whole, c.base, c.source);
    let (hdr, crc_mismatch) = fields::header(&mut h, Some(whole), &mut w)?;
    if hdr.count < 0 {
        return None;
    }
    // Each field's object ends with a comma.
    out.pop();
    c.r.take(super::BATCH_HEADER_LEN).ok()?;
    let mut node = Node::new(
        "RecordBatch header (JSON)",
        "json",
        Value::Json(out),
        c.base,
        super::BATCH_HEADER_LEN,
        Role::RecordBatch,
    );
    node.source = c.source;
    Some((node, hdr, crc_mismatch))
}

/// Records checked since the last [`Run::take`]: they become one node.
pub(super) struct Run {
    source: u16,
    /// The index of the first record, and how many there are.
    first: u64,
    count: u64,
    base_offset: i64,
    base_ts: i64,
    /// The span of the records, in the source.
    start: usize,
    end: usize,
}

impl Run {
    /// A run for records in byte source `source` of a batch with these base
    /// offset and timestamp.
    pub(super) fn new(source: u16, base_offset: i64, base_ts: i64) -> Run {
        Run {
            source,
            first: 0,
            count: 0,
            base_offset,
            base_ts,
            start: 0,
            end: 0,
        }
    }

    /// Adds the record at `c` (element `i` of the batch `h`) to the run
    /// when it reads cleanly, and moves `c` past it; otherwise returns false
    /// with `c` and the run as they were. Nothing is written: the record is
    /// read with the output that keeps nothing ([`Skip`]), to be written
    /// from its bytes later.
    pub(super) fn record(&mut self, c: &mut Cur<'_>, i: u64, h: &Hdr) -> bool {
        let mut probe = c.clone();
        if !fields::record(&mut probe, i, h, &mut Skip).clean {
            return false;
        }
        if self.count == 0 {
            self.start = c.abs();
            self.first = i;
        }
        self.count += 1;
        c.r = probe.r;
        self.end = c.abs();
        true
    }

    /// True when the run spans [`RUN_BYTES`] or more: the caller takes it
    /// and goes on with a new one, so that no run's JSON is long (a message
    /// written in parts, `JsonSink::spilling`, is cut only between nodes).
    pub(super) fn full(&self) -> bool {
        self.count > 0 && self.end - self.start >= RUN_BYTES
    }

    /// The node standing for the records added since the last call, if any:
    /// its value is [`Value::Records`], written by [`write_run`].
    pub(super) fn take(&mut self) -> Option<Node> {
        if self.count == 0 {
            return None;
        }
        let d = Deferred {
            first: self.first,
            count: std::mem::take(&mut self.count),
            base_offset: self.base_offset,
            base_ts: self.base_ts,
            write: write_run,
            expand: super::batch::expand_run,
            write_text: super::text::write_text_run,
        };
        let mut n = Node::new(
            "records (JSON)",
            "json",
            Value::Records(Box::new(d)),
            self.start,
            self.end - self.start,
            Role::Record,
        );
        n.source = self.source;
        Some(n)
    }
}

/// Record bytes after which a [`Run`] is cut: its JSON, about 50 times the
/// bytes for records of a few dozen bytes (up to about 120 for empty ones),
/// stays within a MB or two.
pub const RUN_BYTES: usize = 16 * 1024;

thread_local! {
    /// [`Json::value`] for [`write_run`], kept from run to run.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Writes the records of a [`Run`] from `bytes`, the run's span in its
/// source (starting at `offset` in source `source`), into `out`: the same
/// bytes the `Record[i]` nodes of the same reads write, comma separated.
/// False (with `out` as it was) when `bytes` are not records that read cleanly.
fn write_run(d: &Deferred, bytes: &[u8], offset: usize, source: u16, out: &mut Vec<u8>) -> bool {
    let mark = out.len();
    let src = source_text(source);
    let mut value = SCRATCH.with(|s| s.take());
    let mut w = Json::new(out, &src, &mut value);
    let h = Hdr::of_run(d);
    let mut c = Cur::new(bytes, offset, source);
    // A record takes a byte at least: the span's bytes end the loop.
    let mut i = d.first;
    let mut ok = c.remaining() > 0;
    while ok && c.remaining() > 0 {
        ok = fields::record(&mut c, i, &h, &mut w).clean;
        i = i.wrapping_add(1);
    }
    if ok {
        // Each record's object ends with a comma.
        out.pop();
    } else {
        out.truncate(mark);
    }
    SCRATCH.with(|s| s.set(value));
    ok
}

/// The output of the fields' reader that writes nodes' JSON into `out`,
/// each node's object followed by a comma.
pub(super) struct Json<'o, 's> {
    out: &'o mut Vec<u8>,
    src: &'s Pad,
    /// Scratch for a content's JSON string (see `content`).
    value: &'o mut Vec<u8>,
    /// The open record's summary (`offset N`), where it is in `out`.
    summary: Range<usize>,
}

impl<'o, 's> Json<'o, 's> {
    fn new(out: &'o mut Vec<u8>, src: &'s Pad, value: &'o mut Vec<u8>) -> Self {
        Json {
            out,
            src,
            value,
            summary: 0..0,
        }
    }

    /// The tail of a node after its display text: length, name, offset,
    /// source, type, up to the value.
    #[inline(always)]
    fn tail(&mut self, f: &Field, offset: usize, length: usize) {
        json::CLOSED_LENGTH.put(self.out);
        small(self.out, length as u64);
        f.json_name.put(self.out);
        json::u64(self.out, offset as u64);
        self.src.put(self.out);
        f.json_ty.put(self.out);
    }

    /// ` (detail)` after a value (text that needs no escape).
    #[inline(always)]
    fn detail(&mut self, d: &[u8]) {
        self.out.extend_from_slice(b" (");
        self.out.extend_from_slice(d);
        self.out.push(b')');
    }

    /// The tail of element `i` named `ty` (`Record[i]` of type `Record`,
    /// or a header) after its display text, up to its value.
    #[inline(always)]
    fn element_tail(&mut self, ty: &[u8], i: u64, offset: usize, length: usize) {
        json::CLOSED_LENGTH.put(self.out);
        json::u64(self.out, length as u64);
        json::NAME.put(self.out);
        self.out.extend_from_slice(ty);
        self.out.push(b'[');
        json::u64(self.out, i);
        self.out.push(b']');
        json::OFFSET.put(self.out);
        json::u64(self.out, offset as u64);
        self.src.put(self.out);
        json::TYPE.put(self.out);
        self.out.extend_from_slice(ty);
        json::VALUE.put(self.out);
    }

    /// Ends a node's children: the last one's comma becomes the bracket.
    #[inline(always)]
    fn end_children(&mut self) {
        if self.out.last() == Some(&b',') {
            self.out.pop();
        }
        json::DISPLAY.put(self.out);
    }
}

impl FieldOut for Json<'_, '_> {
    /// An integer field: `v`, with its detail (text that needs no escape)
    /// after it in the display.
    #[inline(always)]
    fn int(&mut self, f: &'static Field, v: i64, d: Detail, offset: usize, length: usize) {
        if let Detail::Crc(Crc::Valid) = d {
            const VALID: &[u8] = CRC_VALID.as_bytes();
            json::LEAF.put(self.out);
            self.out.extend_from_slice(VALID);
            self.tail(f, offset, length);
            self.out.push(b'"');
            self.out.extend_from_slice(VALID);
            self.out.extend_from_slice(b"\"},");
            return;
        }
        json::LEAF.put(self.out);
        let at = self.out.len();
        if v >= 0 {
            small(self.out, v as u64);
        } else {
            json::i64(self.out, v);
        }
        let end = self.out.len();
        match d {
            Detail::Null => self.detail(b"null"),
            Detail::Time(ms) => {
                if let Some(t) = iso8601_bytes(ms) {
                    self.detail(&t);
                }
            }
            Detail::Offset(o) => {
                // `offset N` is the offsetDelta's detail and the record's
                // value: written once here, copied from here for the record.
                self.out.extend_from_slice(b" (");
                let s = self.out.len();
                self.out.extend_from_slice(b"offset ");
                json::i64(self.out, o);
                self.summary = s..self.out.len();
                self.out.push(b')');
            }
            Detail::Attributes(a) => self.detail(attributes_detail(a).as_bytes()),
            Detail::Crc(Crc::Mismatch(calc)) => {
                self.detail(crc_mismatch(v as u32, calc).as_bytes())
            }
            Detail::Crc(Crc::Unchecked) => self.detail(b"not checked: the batch is incomplete"),
            // Valid above; errors make the record or header unclean.
            _ => {}
        }
        self.tail(f, offset, length);
        self.out.extend_from_within(at..end);
        self.out.extend_from_slice(b"},");
    }

    /// A key, value or header value (shown as `content_value` shows it), or
    /// a header key (always a string, invalid UTF-8 replaced).
    fn content(&mut self, f: &'static Field, data: &[u8], offset: usize) {
        let string = f.kind == Kind::String;
        json::LEAF.put(self.out);
        // Printable ASCII, the usual content, is a string either way and
        // takes `Debug`'s plain form: one check for both, on the bytes
        // (printable ASCII is UTF-8 as it is).
        let quotes = json::printable_ascii_quotes(data);
        if let Some(quotes) = quotes.filter(|_| string || data.len() <= MAX_STR) {
            // Display and value in one pass over the text; the value waits
            // in scratch for its place after the tail.
            self.value.clear();
            json::debug_and_escape_counted(self.out, self.value, data, quotes);
            self.tail(f, offset, data.len());
            self.out.push(b'"');
            self.out.extend_from_slice(self.value);
            self.out.extend_from_slice(b"\"},");
            return;
        }
        let text = if string {
            Some(String::from_utf8_lossy(data))
        } else {
            content_text(data).map(Cow::Borrowed)
        };
        match text {
            Some(s) => {
                json::debug_str_into(self.out, &s);
                self.tail(f, offset, data.len());
                json::str(self.out, &s);
            }
            None => {
                let at = self.out.len();
                json::bytes_preview_into(
                    self.out,
                    data.len(),
                    data.get(..crate::kafka::tree::BYTES_PREVIEW)
                        .unwrap_or(data),
                );
                let end = self.out.len();
                self.tail(f, offset, data.len());
                self.out.push(b'"');
                self.out.extend_from_within(at..end);
                self.out.push(b'"');
            }
        }
        self.out.extend_from_slice(b"},");
    }

    /// Problems make a record unclean: nothing to write.
    #[inline(always)]
    fn problem(&mut self, _: impl FnOnce() -> Node) {}

    #[inline(always)]
    fn open_record(&mut self) {
        self.summary = 0..0;
        json::CHILDREN.put(self.out);
    }

    #[inline(always)]
    fn close_record(&mut self, i: u64, ok: bool, at: usize, len: usize) {
        // A record that is not clean is not kept: nothing more to write.
        if !ok {
            return;
        }
        self.end_children();
        self.out.extend_from_within(self.summary.clone());
        self.element_tail(b"Record", i, at, len);
        self.out.push(b'"');
        self.out.extend_from_within(self.summary.clone());
        self.out.extend_from_slice(b"\"},");
    }

    #[inline(always)]
    fn open_header(&mut self) {
        json::CHILDREN.put(self.out);
    }

    #[inline(always)]
    fn close_header(&mut self, j: u64, key: Option<&[u8]>, at: usize, len: usize) {
        let Some(key) = key else {
            return;
        };
        let key = String::from_utf8_lossy(key);
        self.end_children();
        json::debug_str_into(self.out, &key);
        self.element_tail(b"Header", j, at, len);
        json::str(self.out, &key);
        self.out.extend_from_slice(b"},");
    }
}

/// Appends `v`, a digit without a call (lengths and most deltas are one).
#[inline(always)]
fn small(out: &mut Vec<u8>, v: u64) {
    if v < 10 {
        out.push(b'0' + v as u8);
    } else {
        json::u64(out, v);
    }
}
