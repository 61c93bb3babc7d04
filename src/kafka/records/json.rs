//! RecordBatch v2 records (and headers) written straight to JSON, without nodes
//! ([`DecodeOptions::records_json`](crate::kafka::decode::DecodeOptions::records_json)).
//!
//! Place in the data path: `batch::records` offers each record of a
//! non-control batch to a [`Run`] first. A record that decodes cleanly — its
//! length fits, every field reads, no byte is left unclaimed — joins the run
//! (the cursor moves past it); nothing is written then. Consecutive ones
//! become a single node whose [`Value::Records`] says which records they are;
//! when the tree is written (`Node::write_json_in`, with the message's and
//! the sources' bytes) [`write_run`] writes them from their bytes straight
//! into the output, as the bytes [`Node::write_json`] writes for the
//! `Record[i]` nodes the tree path makes of them (their children, display
//! and value texts, spans, keys in serde_json's order). A record that is not
//! clean leaves the run and the cursor as they were, and the caller decodes
//! it into nodes as it always does. A batch's header fields are written at
//! once ([`batch_header`], a small [`Value::Json`]), unless its recordsCount
//! is negative.
//!
//! Invariants: the JSON equals the tree path's byte for byte (the tests
//! compare both on every capture and on generated batches); fields are read
//! with the same [`Reader`] calls as the tree path's, so the same bytes are
//! accepted, and a run is checked and written by the same [`Writer::record`]
//! (dry, then not), so the records written are the ones checked; nothing is
//! sized from a wire length (the output grows with the bytes written, which
//! follow the bytes read).

use std::borrow::Cow;

use super::batch::Hdr;
use super::cursor::{content_text, iso8601_bytes, Cur, MAX_STR};
use crate::kafka::tree::{json, Deferred, Node, Role, Value};
use crate::kafka::wire::Reader;

/// A childless node's JSON up to its display text.
const LEAF: &[u8] = b"{\"children\":[],\"display\":\"";
/// After a display text, before the length.
const LENGTH: &[u8] = b"\",\"length\":";

/// A short constant text, padded for a fixed-size copy (no call to
/// `memcpy` per piece) cut back to its length.
struct Pad {
    text: [u8; 48],
    len: usize,
}

impl Pad {
    /// `s` (at most 48 bytes; longer text is cut).
    // `i` is below both lengths; a const fn cannot call `get`.
    #[allow(clippy::indexing_slicing)]
    const fn new(s: &[u8]) -> Pad {
        let mut text = [0u8; 48];
        let mut i = 0;
        while i < s.len() && i < 48 {
            text[i] = s[i];
            i += 1;
        }
        Pad { text, len: i }
    }

    /// Appends the text.
    #[inline(always)]
    fn put(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&self.text);
        out.truncate(at + self.len);
    }
}

/// A field's name and type as its node's JSON spells them: the text between
/// the length and the offset, and between the offset (and source) and the value.
struct Field {
    name: Pad,
    ty: Pad,
}

macro_rules! field {
    ($name:literal, $ty:literal) => {
        Field {
            name: Pad::new(concat!(",\"name\":\"", $name, "\",\"offset\":").as_bytes()),
            ty: Pad::new(concat!(",\"type\":\"", $ty, "\",\"value\":").as_bytes()),
        }
    };
}

const LENGTH_F: Field = field!("length", "varint");
const ATTRIBUTES: Field = field!("attributes", "int8");
const TIMESTAMP_DELTA: Field = field!("timestampDelta", "varlong");
const OFFSET_DELTA: Field = field!("offsetDelta", "varint");
const KEY_LENGTH: Field = field!("keyLength", "varint");
const KEY: Field = field!("key", "bytes");
const VALUE_LENGTH: Field = field!("valueLength", "varint");
const VALUE: Field = field!("value", "bytes");
const HEADERS_COUNT: Field = field!("headersCount", "varint");
const HEADER_KEY_LENGTH: Field = field!("headerKeyLength", "varint");
const HEADER_KEY: Field = field!("headerKey", "string");
const HEADER_VALUE_LENGTH: Field = field!("headerValueLength", "varint");
const HEADER_VALUE: Field = field!("headerValue", "bytes");

/// The RecordBatch header's fields, in wire order, with their widths.
const BATCH_FIELDS: [(Field, usize); 13] = [
    (field!("baseOffset", "int64"), 8),
    (field!("batchLength", "int32"), 4),
    (field!("partitionLeaderEpoch", "int32"), 4),
    (field!("magic", "int8"), 1),
    (field!("crc", "uint32"), 4),
    (field!("attributes", "int16"), 2),
    (field!("lastOffsetDelta", "int32"), 4),
    (field!("baseTimestamp", "int64"), 8),
    (field!("maxTimestamp", "int64"), 8),
    (field!("producerId", "int64"), 8),
    (field!("producerEpoch", "int16"), 2),
    (field!("baseSequence", "int32"), 4),
    (field!("recordsCount", "int32"), 4),
];

/// The 61-byte header of the complete batch `whole` (at `c`, which moves
/// past it) as one node holding its thirteen fields' JSON, as `batch::header`
/// would make them, with what the records need from it and whether its CRC
/// does not match; `None` (and `c` as it was) when the header is not whole
/// or its recordsCount is negative (an error the tree path shows).
pub(super) fn batch_header(c: &mut Cur<'_>, whole: &[u8]) -> Option<(Node, Hdr, bool)> {
    if c.pos() != 0 {
        return None;
    }
    let hdr = whole.get(..super::BATCH_HEADER_LEN)?;
    let mut v = [0i64; 13];
    let mut at = 0;
    for (k, (_, width)) in BATCH_FIELDS.iter().enumerate() {
        let b = hdr.get(at..at + width)?;
        let mut word = [0u8; 8];
        word.get_mut(8 - width..)?.copy_from_slice(b);
        let u = u64::from_be_bytes(word);
        // Sign-extend all but the uint32 crc.
        let shift = 64 - 8 * *width as u32;
        *v.get_mut(k)? = if k == 4 {
            u as i64
        } else {
            ((u << shift) as i64) >> shift
        };
        at += width;
    }
    let [_, _, _, _, stored, attributes, _, base_ts, max_ts, _, _, _, count] = v;
    if count < 0 {
        return None;
    }
    let calc = whole.get(21..).map(crc32c::crc32c)?;
    let crc_mismatch = u64::from(calc) != stored as u64;
    let mut out = Vec::with_capacity(2048);
    let src = source_text(c.source);
    let mut value = Vec::new();
    let mut w = Writer::<false> {
        out: &mut out,
        src: &src,
        value: &mut value,
    };
    let base = c.abs();
    let mut at = 0;
    for (k, (f, width)) in BATCH_FIELDS.iter().enumerate() {
        if k > 0 {
            w.out.push(b',');
        }
        let x = v.get(k).copied().unwrap_or(0);
        match k {
            4 if !crc_mismatch => {
                const VALID: &[u8] = super::batch::CRC_VALID.as_bytes();
                w.out.extend_from_slice(LEAF);
                w.out.extend_from_slice(VALID);
                w.tail(f, base + at, *width);
                w.out.push(b'"');
                w.out.extend_from_slice(VALID);
                w.out.extend_from_slice(b"\"}");
            }
            4 => {
                let d = super::batch::crc_mismatch(stored as u32, calc);
                w.int(f, x, Some(d.as_bytes()), base + at, *width);
            }
            5 if attributes != 0 => {
                let d = super::batch::attributes_detail(attributes as i16);
                w.int(f, x, Some(d.as_bytes()), base + at, *width);
            }
            7 | 8 => {
                let time = iso8601_bytes(if k == 7 { base_ts } else { max_ts });
                w.int(f, x, time.as_ref().map(|t| t.as_slice()), base + at, *width);
            }
            _ => w.int(f, x, None, base + at, *width),
        }
        at += width;
    }
    c.r.take(super::BATCH_HEADER_LEN).ok()?;
    let mut node = Node::new(
        "RecordBatch header (JSON)",
        "json",
        Value::Json(out),
        base,
        super::BATCH_HEADER_LEN,
        Role::RecordBatch,
    );
    node.source = c.source;
    let h = Hdr {
        base_offset: v.first().copied().unwrap_or(0),
        attributes: attributes as i16,
        base_ts,
        count: count as i32,
    };
    Some((node, h, crc_mismatch))
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

    /// Adds the record at `c` (element `i` of the batch) to the run when it
    /// decodes cleanly, and moves `c` past it; otherwise returns false with
    /// `c` and the run as they were. Nothing is written: the record is read
    /// as [`Writer::record`] reads it, to be written from its bytes later.
    pub(super) fn record(&mut self, c: &mut Cur<'_>, i: u64) -> bool {
        let (mut out, mut value) = (Vec::new(), Vec::new());
        let mut w = Writer::<true> {
            out: &mut out,
            src: &NO_SOURCE,
            value: &mut value,
        };
        let mut r = c.r.clone();
        if w.record(&mut r, c.base, i, self.base_offset, self.base_ts)
            .is_none()
        {
            return false;
        }
        if self.count == 0 {
            self.start = c.abs();
            self.first = i;
        }
        self.count += 1;
        c.r = r;
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

/// No `,"source":N` (a dry [`Writer`] writes nothing anyway).
const NO_SOURCE: Pad = Pad::new(b"");

thread_local! {
    /// [`Writer::value`] for [`write_run`], kept from run to run.
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Writes the records of a [`Run`] from `bytes`, the run's span in its
/// source (starting at `offset` in source `source`), into `out`: the same
/// bytes the tree path's `Record[i]` nodes write, comma separated. False
/// (with `out` as it was) when `bytes` are not records that decode cleanly.
fn write_run(d: &Deferred, bytes: &[u8], offset: usize, source: u16, out: &mut Vec<u8>) -> bool {
    let mark = out.len();
    let src = source_text(source);
    let mut value = SCRATCH.with(|s| s.take());
    let mut w = Writer::<false> {
        out,
        src: &src,
        value: &mut value,
    };
    let mut r = Reader::new(bytes);
    // A record takes a byte at least: the span's bytes end the loop.
    let mut i = d.first;
    let mut ok = r.remaining() > 0;
    while ok && r.remaining() > 0 {
        if r.pos() > 0 {
            w.out.push(b',');
        }
        ok = w
            .record(&mut r, offset, i, d.base_offset, d.base_ts)
            .is_some();
        i = i.wrapping_add(1);
    }
    if !ok {
        w.out.truncate(mark);
    }
    SCRATCH.with(|s| s.set(value));
    ok
}

/// `,"source":N` for a source other than the message, else nothing.
fn source_text(source: u16) -> Pad {
    let mut t = Vec::with_capacity(16);
    if source != 0 {
        t.extend_from_slice(b",\"source\":");
        json::u64(&mut t, source.into());
    }
    Pad::new(&t)
}

/// Writes nodes' JSON into `out`; with `DRY`, only reads what it would
/// write from (the output calls compile away), to check a record.
struct Writer<'o, 's, const DRY: bool = false> {
    out: &'o mut Vec<u8>,
    src: &'s Pad,
    /// Scratch for a content's JSON string (see `content`).
    value: &'o mut Vec<u8>,
}

impl<const DRY: bool> Writer<'_, '_, DRY> {
    /// Appends `s` (nothing when dry).
    #[inline(always)]
    fn put(&mut self, s: &[u8]) {
        if !DRY {
            self.out.extend_from_slice(s);
        }
    }

    /// Appends `b` (nothing when dry).
    #[inline(always)]
    fn push(&mut self, b: u8) {
        if !DRY {
            self.out.push(b);
        }
    }

    /// The tail of a node after its display text: length, name, offset,
    /// source, type, up to the value.
    #[inline(always)]
    fn tail(&mut self, f: &Field, offset: usize, length: usize) {
        if DRY {
            return;
        }
        self.out.extend_from_slice(LENGTH);
        small(self.out, length as u64);
        f.name.put(self.out);
        json::u64(self.out, offset as u64);
        self.src.put(self.out);
        f.ty.put(self.out);
    }

    /// An integer field: `v`, with `detail` (text that needs no escape) after
    /// it in the display.
    #[inline(always)]
    fn int(&mut self, f: &Field, v: i64, detail: Option<&[u8]>, offset: usize, length: usize) {
        if DRY {
            return;
        }
        self.out.extend_from_slice(LEAF);
        let at = self.out.len();
        if v >= 0 {
            small(self.out, v as u64);
        } else {
            json::i64(self.out, v);
        }
        let end = self.out.len();
        if let Some(d) = detail {
            self.out.extend_from_slice(b" (");
            self.out.extend_from_slice(d);
            self.out.push(b')');
        }
        self.tail(f, offset, length);
        self.out.extend_from_within(at..end);
        self.out.push(b'}');
    }

    /// A key, value or header value (shown as `content_value` shows it), or
    /// with `string` a header key (always a string, invalid UTF-8 replaced).
    fn content(&mut self, f: &Field, data: &[u8], string: bool, offset: usize) {
        if DRY {
            return;
        }
        self.out.extend_from_slice(LEAF);
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
            self.out.push(b'"');
            self.out.push(b'}');
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
        self.out.push(b'}');
    }

    /// A varint length and the content it announces (`-1` is a null when
    /// `nullable`); `None` when the tree path would show an error. Returns
    /// the content (`None` for a null).
    fn sized<'a>(
        &mut self,
        b: &mut Reader<'a>,
        at: usize,
        fields: (&Field, &Field),
        nullable: bool,
        string: bool,
    ) -> Option<Option<&'a [u8]>> {
        let start = b.pos();
        let len = i64::from(b.varint().ok()?);
        let len_end = b.pos();
        if len == -1 && nullable {
            self.int(fields.0, len, Some(b"null"), at + start, len_end - start);
            return Some(None);
        }
        let n = usize::try_from(len).ok()?;
        let data = b.take(n).ok()?;
        self.int(fields.0, len, None, at + start, len_end - start);
        self.push(b',');
        self.content(fields.1, data, string, at + len_end);
        Some(Some(data))
    }

    /// One record at `r` (which moves past it), whose slice starts at `base`
    /// in its source. Every read is made dry or not: only the output differs.
    fn record(
        &mut self,
        r: &mut Reader<'_>,
        base: usize,
        i: u64,
        base_offset: i64,
        base_ts: i64,
    ) -> Option<()> {
        let start = r.pos();
        let len = i64::from(r.varint().ok()?);
        let len_end = r.pos();
        let l = usize::try_from(len).ok()?;
        let mut b = Reader::new(r.take(l).ok()?);
        let at = base + len_end;
        self.put(b"{\"children\":[");
        self.int(&LENGTH_F, len, None, base + start, len_end - start);
        self.push(b',');
        let attributes = b.i8().ok()?;
        self.int(&ATTRIBUTES, attributes.into(), None, at, 1);
        self.push(b',');
        let p = b.pos();
        let tsd = b.varlong().ok()?;
        if !DRY {
            let ts = if base_ts >= 0 {
                base_ts.checked_add(tsd).unwrap_or(-1)
            } else {
                -1
            };
            let time = iso8601_bytes(ts);
            self.int(
                &TIMESTAMP_DELTA,
                tsd,
                time.as_ref().map(|t| t.as_slice()),
                at + p,
                b.pos() - p,
            );
            self.out.push(b',');
        }
        let p = b.pos();
        let od = i64::from(b.varint().ok()?);
        // `offset N` is the offsetDelta's detail and the record's value:
        // written once here, copied from here for the record.
        let mut summary = 0..0;
        if !DRY {
            self.out.extend_from_slice(LEAF);
            let v = self.out.len();
            json::i64(self.out, od);
            let v_end = self.out.len();
            self.out.extend_from_slice(b" (");
            let s = self.out.len();
            self.out.extend_from_slice(b"offset ");
            json::i64(self.out, base_offset.wrapping_add(od));
            summary = s..self.out.len();
            self.out.push(b')');
            self.tail(&OFFSET_DELTA, at + p, b.pos() - p);
            self.out.extend_from_within(v..v_end);
            self.out.extend_from_slice(b"},");
        }
        self.sized(&mut b, at, (&KEY_LENGTH, &KEY), true, false)?;
        self.push(b',');
        self.sized(&mut b, at, (&VALUE_LENGTH, &VALUE), true, false)?;
        self.push(b',');
        let p = b.pos();
        let count = b.varint().ok()?;
        if count < 0 {
            return None;
        }
        self.int(&HEADERS_COUNT, count.into(), None, at + p, b.pos() - p);
        for j in 0..count {
            self.push(b',');
            self.header(&mut b, at, j)?;
        }
        if b.remaining() > 0 {
            return None;
        }
        if DRY {
            return Some(());
        }
        self.out.extend_from_slice(b"],\"display\":\"");
        self.out.extend_from_within(summary.clone());
        self.out.extend_from_slice(LENGTH);
        json::u64(self.out, (len_end - start + l) as u64);
        self.out.extend_from_slice(b",\"name\":\"Record[");
        json::u64(self.out, i);
        self.out.extend_from_slice(b"]\",\"offset\":");
        json::u64(self.out, (base + start) as u64);
        self.src.put(self.out);
        self.out
            .extend_from_slice(b",\"type\":\"Record\",\"value\":\"");
        self.out.extend_from_within(summary);
        self.out.extend_from_slice(b"\"}");
        Some(())
    }

    /// Header `j` at `b`, whose slice starts at `at` in its source.
    fn header(&mut self, b: &mut Reader<'_>, at: usize, j: i32) -> Option<()> {
        let start = b.pos();
        self.put(b"{\"children\":[");
        let key = self
            .sized(b, at, (&HEADER_KEY_LENGTH, &HEADER_KEY), false, true)?
            .unwrap_or(&[]);
        self.push(b',');
        self.sized(b, at, (&HEADER_VALUE_LENGTH, &HEADER_VALUE), true, false)?;
        if DRY {
            return Some(());
        }
        let key = String::from_utf8_lossy(key);
        self.out.extend_from_slice(b"],\"display\":\"");
        json::debug_str_into(self.out, &key);
        self.out.extend_from_slice(LENGTH);
        json::u64(self.out, (b.pos() - start) as u64);
        self.out.extend_from_slice(b",\"name\":\"Header[");
        json::u64(self.out, j as u64);
        self.out.extend_from_slice(b"]\",\"offset\":");
        json::u64(self.out, (at + start) as u64);
        self.src.put(self.out);
        self.out
            .extend_from_slice(b",\"type\":\"Header\",\"value\":");
        json::str(self.out, &key);
        self.out.push(b'}');
        Some(())
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
