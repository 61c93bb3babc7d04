//! RecordBatch v2 (magic 2) and its records, as nodes.
//!
//! A batch is a 61-byte header (baseOffset .. recordsCount) followed by its
//! records, inline or compressed as one block. The CRC-32C covers attributes
//! to the end of the batch. Each record is bounded by its own varint length:
//! a field that reads past it is an error inside that record only, and the
//! next record is still decoded.
//!
//! The header's and the records' fields are read by `fields.rs`; [`Nodes`]
//! is its output that makes them nodes. With `DecodeOptions::records_json`
//! the header and the runs of clean records are read as JSON instead
//! (`json.rs`); anything else is nodes either way. A control record's key
//! and value are decoded through Kafka's data schemas by the schema
//! interpreter (`decode::decode_data`).

use super::compression::codec_name;
use super::cursor::{content_value, iso8601_ms, Cur, Int};
use super::fields::{self, fields, Crc, Detail, Field, FieldOut, Hdr, Kind};
use super::json::{self, Run};
use super::{plural, push_loc, push_plural, Ctx, Inflate};
use crate::kafka::decode::decode_data;
use crate::kafka::schema::{
    MessageDef, CONTROL_RECORD_TYPE_SCHEMA, END_TXN_MARKER, K_RAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE, SNAPSHOT_FOOTER_RECORD, SNAPSHOT_HEADER_RECORD, VOTERS_RECORD,
};
use crate::kafka::tree::{
    indexed_name, push_int, push_uint, Deferred, Node, Role, SmallTexts, Value,
    MAX_RESERVED_CHILDREN,
};

const RB: Role = Role::RecordBatch;
const REC: Role = Role::Record;

/// Element names made once for the first indices (`Record[0]` ..) and
/// shared by every tree, so a record's name costs no allocation.
const SHARED_NAMES: u64 = 1024;
static RECORD_NAMES: SmallTexts = SmallTexts::new(SHARED_NAMES, |i| indexed_name("Record", i));
static HEADER_NAMES: SmallTexts = SmallTexts::new(SHARED_NAMES, |i| indexed_name("Header", i));

/// The attributes as words: `gzip, LogAppendTime, transactional`.
pub(crate) fn attributes_detail(a: i16) -> String {
    let mut s = String::with_capacity(48);
    s.push_str(codec_name(a));
    s.push_str(if a & 0x08 != 0 {
        ", LogAppendTime"
    } else {
        ", CreateTime"
    });
    for (bit, word) in [
        (0x10, "transactional"),
        (0x20, "control"),
        (0x40, "deleteHorizon"),
    ] {
        if a & bit != 0 {
            s.push_str(", ");
            s.push_str(word);
        }
    }
    s
}

/// A RecordBatch CRC's value text when it matches.
pub(super) const CRC_VALID: &str = "crc32c of the bytes that follow";

/// The detail of a CRC that does not match (v2 batches and legacy messages).
pub(super) fn crc_mismatch(stored: u32, calc: u32) -> String {
    format!("0x{stored:08x}, CRC MISMATCH: expected 0x{calc:08x}")
}

/// Decodes one complete batch (`c` covers exactly its 12 + batchLength bytes).
/// Returns the node and the records it declares.
pub(crate) fn decode_batch(ctx: &mut Ctx<'_>, mut c: Cur<'_>) -> (Node, u64) {
    let whole = c.r.buf();
    // The twelve header fields, then the records (at most one per record
    // that fits, plus one for what cuts them short) or their compressed block.
    // The codec is the low byte of attributes (at 21..23), the count at 57..61.
    let inline = whole.get(22).is_some_and(|a| a & 0x07 == 0)
        && ctx.opts.records
        && !ctx.opts.records_headers_only;
    let count = whole
        .get(57..61)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_be_bytes);
    let room = match count {
        Some(count) if inline => record_room(count, whole.len()),
        _ => 1,
    };
    let mut kids = Vec::with_capacity(12 + room);
    let mut details: Vec<&str> = Vec::new();
    // With `records_json`, a clean header is one node of JSON (module `json`).
    let fast = ctx
        .opts
        .records_json
        .then(|| json::batch_header(&mut c, whole))
        .flatten();
    let hdr = match fast {
        Some((node, hdr, crc_mismatch)) => {
            kids.push(node);
            Some((hdr, crc_mismatch))
        }
        None => {
            let mut o = Nodes::new(c.source, kids);
            let hdr = fields::header(&mut c, Some(whole), &mut o);
            kids = o.fields;
            hdr
        }
    };
    let mut declared = 0;
    let value = match &hdr {
        None => Value::Text("malformed".into()),
        Some((h, bad)) => {
            if *bad {
                ctx.crc_mismatches += 1;
                details.push("CRC MISMATCH");
            }
            declared = u64::try_from(h.count).unwrap_or(0);
            let codec = (h.attributes & 0x07) as u8;
            if h.count >= 0 && ctx.opts.records {
                if codec == 0 {
                    if !ctx.opts.records_headers_only {
                        records(&mut c, h, ctx.opts.records_deferred(), &mut kids);
                    }
                } else if compressed(ctx, &mut c, h, codec, &mut kids) {
                    details.push("decompressed size exceeds the limit");
                }
            }
            let mut v = String::with_capacity(40);
            if h.count == 0 {
                v.push_str("empty");
            } else {
                push_plural(&mut v, declared, "record", "records");
            }
            if codec != 0 {
                v.push_str(", ");
                v.push_str(codec_name(h.attributes));
            }
            if h.control() {
                v.push_str(", control");
            }
            Value::Text(v.into())
        }
    };
    let mut n = Node::new("RecordBatch", "v2", value, c.base, whole.len(), RB)
        .with_about("a batch of records sharing one header (message format v2, Kafka 0.11+)");
    n.source = c.source;
    if !details.is_empty() {
        n.detail = Some(details.join("; ").into());
    }
    n.children = kids;
    (n, declared)
}

/// Decompresses the records block into a new source and decodes the records
/// there. Returns true when the size limit refused it.
fn compressed(
    ctx: &mut Ctx<'_>,
    c: &mut Cur<'_>,
    h: &Hdr,
    codec: u8,
    kids: &mut Vec<Node>,
) -> bool {
    let start = c.pos();
    let comp = c.r.rest();
    c.r.skip_rest();
    let name = codec_name(h.attributes);
    // The value is set below, from how the block inflated.
    let mut n = c
        .node_from(start, "records", name, Value::None, RB)
        .with_about("the records, compressed as one block; decoded in their own byte source");
    let mut source_name = String::with_capacity(64);
    source_name.push_str(name);
    source_name.push_str("-decompressed records of the RecordBatch at ");
    push_loc(&mut source_name, c.source, c.base);
    // With headers only, nothing reads the records: keep only the length.
    let keep = !ctx.opts.records_headers_only;
    let r = ctx.inflate(codec, comp, c.source, c.base + start, source_name, keep);
    let refused = matches!(r, Inflate::TooLarge(_));
    let not_shown = "the records, compressed as one block; not shown: they decompress";
    if let Some(id) = inflated(&mut n, r, comp.len(), not_shown) {
        let data = ctx
            .sources
            .get(usize::from(id) - 1)
            .map(|s| s.data.as_slice())
            .unwrap_or(&[]);
        if !ctx.opts.records_headers_only {
            let mut rc = Cur::new(data, 0, id);
            n.children = Vec::with_capacity(record_room(h.count, data.len()));
            records(&mut rc, h, ctx.opts.records_deferred(), &mut n.children);
        }
    }
    kids.push(n);
    refused
}

/// Sets the node of a compressed block of `comp` bytes from how it
/// inflated (`r`): its value (`N bytes → M bytes`, else its size) and
/// detail, its error, or why it is not shown (`not_shown`: what the block
/// is, up to `to more than N bytes`). The inflated bytes' source, if any.
pub(super) fn inflated(n: &mut Node, r: Inflate, comp: usize, not_shown: &str) -> Option<u16> {
    match r {
        Inflate::Done { id, len, note } => {
            let mut v = String::with_capacity(32);
            push_uint(&mut v, comp as u64);
            v.push_str(" bytes → ");
            push_uint(&mut v, len as u64);
            v.push_str(" bytes");
            n.value = Value::Text(v.into());
            n.detail = note.map(Into::into);
            return Some(id);
        }
        Inflate::TooLarge(limit) => {
            n.detail = Some("decompressed size exceeds the limit".into());
            n.about = Some(format!("{not_shown} to more than {limit} bytes").into());
        }
        Inflate::Failed(what) => n.error = Some(what),
    }
    n.value = Value::Text(plural(comp as u64, "byte", "bytes").into());
    None
}

/// The fewest bytes a whole record takes: its length and six one-byte
/// fields (attributes, the two deltas, key and value lengths, header count).
const MIN_RECORD: usize = 7;

/// Room for the nodes [`records`] makes of `count` records in `len` bytes:
/// one per record that can fit, and one for what cuts them short. Never
/// more than the bytes allow nor [`MAX_RESERVED_CHILDREN`], whatever the
/// count says.
fn record_room(count: i32, len: usize) -> usize {
    usize::try_from(count)
        .unwrap_or(0)
        .min(len / MIN_RECORD)
        .min(MAX_RESERVED_CHILDREN)
        + 1
}

/// Decodes `h.count` records from `c` into `kids`, stopping at the first
/// record that does not fit. With `json` (`DecodeOptions::records_json`),
/// the clean records of a non-control batch are checked only, each run of
/// them one node written as JSON from its bytes later (module `json`); the
/// others are nodes as without it.
fn records(c: &mut Cur<'_>, h: &Hdr, json: bool, kids: &mut Vec<Node>) {
    let count = u64::try_from(h.count).unwrap_or(0);
    let mut run = (json && !h.control()).then(|| Run::new(c.source, h.base_offset, h.base_ts));
    let mut o = Nodes::new(c.source, Vec::new());
    let mut i = 0u64;
    while i < count {
        if c.remaining() == 0 {
            kids.extend(run.as_mut().and_then(Run::take));
            let what = format!("recordsCount is {count} but the batch holds only {i} records");
            kids.push(c.fail("missing records", "bytes", what));
            return;
        }
        if let Some(run) = &mut run {
            if run.full() {
                kids.extend(run.take());
            }
            if run.record(c, i, h) {
                i += 1;
                continue;
            }
            kids.extend(run.take());
        }
        let read = fields::record(c, i, h, &mut o);
        kids.extend(o.record.take());
        i += 1;
        if !read.go_on {
            return;
        }
    }
    kids.extend(run.as_mut().and_then(Run::take));
    if c.remaining() > 0 {
        let what = format!(
            "{} bytes follow the last of the batch's {count} records",
            c.remaining()
        );
        kids.push(c.fail_rest("trailing bytes", "bytes", what));
    }
}

/// The `Record[i]` nodes of a run of clean records (`Deferred::expand`,
/// for text): `bytes` is the run's span, at `offset` in source `source`,
/// decoded as [`records`] decodes them (a run's batch is not a control
/// batch); `each` takes each node and whether it is the last.
pub(super) fn expand_run(
    d: &Deferred,
    bytes: &[u8],
    offset: usize,
    source: u16,
    each: &mut dyn FnMut(Node, bool),
) {
    let h = Hdr::of_run(d);
    let mut c = Cur::new(bytes, offset, source);
    let mut o = Nodes::new(source, Vec::new());
    let mut i = d.first;
    let end = d.first.saturating_add(d.count);
    // A record takes a byte at least: the span's bytes end the loop.
    while i < end && c.remaining() > 0 {
        let go_on = fields::record(&mut c, i, &h, &mut o).go_on;
        i += 1;
        if let Some(n) = o.record.take() {
            each(n, i == end || !go_on || c.remaining() == 0);
        }
        if !go_on {
            return;
        }
    }
}

/// The output of the fields' reader that makes nodes: a header's fields
/// into `fields`, each record (with its fields and headers as children)
/// into `record`, errors as nodes.
pub(super) struct Nodes {
    source: u16,
    /// The fields read so far: a header's, or the open record's (or
    /// record header's).
    pub(super) fields: Vec<Node>,
    /// The open record's fields while one of its headers is read.
    outer: Vec<Node>,
    /// The open record's summary: `offset N`, and the control type.
    summary: String,
    /// The last record closed.
    pub(super) record: Option<Node>,
}

impl Nodes {
    /// An output for fields in byte source `source`, appending to `fields`.
    pub(super) fn new(source: u16, fields: Vec<Node>) -> Nodes {
        Nodes {
            source,
            fields,
            outer: Vec::new(),
            summary: String::new(),
            record: None,
        }
    }
}

impl FieldOut for Nodes {
    fn int(&mut self, f: &'static Field, v: i64, d: Detail, at: usize, len: usize) {
        let value = match f.kind {
            Kind::Int(w) => w.value(v),
            _ => Value::Int(v),
        };
        let mut n = Node::new(f.name, f.ty, value, at, len, f.role);
        n.source = self.source;
        n.about = Some(f.about.into());
        match d {
            Detail::None => {}
            Detail::Null => n.detail = Some("null".into()),
            Detail::Time(ms) => n.detail = iso8601_ms(ms).map(Into::into),
            Detail::Offset(offset) => {
                self.summary.reserve(32);
                self.summary.push_str("offset ");
                push_int(&mut self.summary, offset);
                n.detail = Some(self.summary.clone().into());
            }
            Detail::Attributes(a) => n.detail = Some(attributes_detail(a).into()),
            Detail::Crc(crc) => check_crc(&mut n, v as u32, crc),
            Detail::Negative => {
                n.error = Some(format!("{} {v} is negative", f.name));
                n.role = Role::Malformed;
            }
            Detail::RecordLength(rem) => {
                n.error = Some(if v < 0 {
                    format!("record length {v} is negative")
                } else {
                    format!("record length {v} exceeds the {rem} bytes that remain")
                });
                n.role = Role::Malformed;
            }
        }
        self.fields.push(n);
    }

    fn content(&mut self, f: &'static Field, data: &[u8], at: usize) {
        let value = if f.kind == Kind::String {
            Value::Str(String::from_utf8_lossy(data).into_owned())
        } else {
            content_value(data)
        };
        let mut n = Node::new(f.name, f.ty, value, at, data.len(), f.role);
        n.source = self.source;
        n.about = Some(f.about.into());
        self.fields.push(n);
    }

    fn problem(&mut self, make: impl FnOnce() -> Node) {
        self.fields.push(make());
    }

    fn open_record(&mut self) {
        // length .. headersCount: nine fields, and the headers.
        self.fields = Vec::with_capacity(10);
    }

    fn close_record(&mut self, i: u64, ok: bool, at: usize, len: usize) {
        let summary = std::mem::take(&mut self.summary);
        let value = Value::Text(ok.then_some(summary).map_or("malformed".into(), Into::into));
        let mut n = Node::new(RECORD_NAMES.get(i), "Record", value, at, len, REC)
            .with_about("one record: deltas against the batch header, key, value, headers");
        n.source = self.source;
        n.children = std::mem::take(&mut self.fields);
        self.record = Some(n);
    }

    fn reserve_headers(&mut self, n: usize) {
        self.fields.reserve_exact(n);
    }

    fn open_header(&mut self) {
        self.outer = std::mem::replace(&mut self.fields, Vec::with_capacity(4));
    }

    fn close_header(&mut self, j: u64, key: Option<&[u8]>, at: usize, len: usize) {
        let kids = std::mem::replace(&mut self.fields, std::mem::take(&mut self.outer));
        let value = key.map_or(Value::Text("malformed".into()), |k| {
            Value::Str(String::from_utf8_lossy(k).into_owned())
        });
        let mut n = Node::new(HEADER_NAMES.get(j), "Header", value, at, len, REC)
            .with_about("a key/value pair attached to the record");
        n.source = self.source;
        n.children = kids;
        self.fields.push(n);
    }

    fn control_key(&mut self, data: &[u8]) -> Option<i16> {
        let k = self.fields.last_mut()?;
        k.value = Value::Text("control record key".into());
        schema_children(k, data, &CONTROL_RECORD_TYPE_SCHEMA);
        let ty = k.children.iter_mut().find(|n| n.name == "Type")?;
        let Value::Int(t) = ty.value else { return None };
        let t = i16::try_from(t).ok()?;
        let name = control_type(t).map_or("UNKNOWN", |(name, _)| name);
        ty.detail = Some(name.into());
        k.detail = Some(name.into());
        self.summary.push_str(", ");
        self.summary.push_str(name);
        Some(t)
    }

    fn control_value(&mut self, t: i16, data: &[u8]) {
        if let (Some(v), Some((_, schema))) = (self.fields.last_mut(), control_type(t)) {
            v.value = Value::Text(schema.name.into());
            schema_children(v, data, schema);
        }
    }
}

/// The CRC node's value and description: whether the stored CRC-32C
/// matches the bytes from the attributes on.
fn check_crc(n: &mut Node, stored: u32, crc: Crc) {
    const OVER: &str = "CRC-32C over attributes .. end of batch";
    match crc {
        Crc::Unchecked => {
            n.detail = Some("not checked: the batch is incomplete".into());
            n.about = Some(OVER.into());
        }
        Crc::Valid => checked_crc(n, OVER, CRC_VALID, stored, stored),
        Crc::Mismatch(calc) => checked_crc(n, OVER, CRC_VALID, stored, calc),
    }
}

/// The stored CRC of a CRC node as [`checked_crc`] leaves it: its value,
/// or, for one that matched (whose value says so), the stored CRC its
/// description gives.
pub fn stored_crc(n: &Node) -> Option<u32> {
    match &n.value {
        Value::Int(v) => u32::try_from(*v).ok(),
        Value::Uint(v) => u32::try_from(*v).ok(),
        _ => {
            let about: &str = n.about.as_deref()?;
            let hex = about.rsplit_once(": 0x")?.1.strip_suffix(", valid")?;
            u32::from_str_radix(hex, 16).ok()
        }
    }
}

/// A checked CRC node's value, detail and description (v2 batches and
/// legacy messages): `over` names the checksum and what it covers, `valid`
/// is the value text of a CRC that matches, `calc` the CRC computed.
pub(super) fn checked_crc(n: &mut Node, over: &str, valid: &'static str, stored: u32, calc: u32) {
    if stored == calc {
        n.value = Value::Text(valid.into());
        n.about = Some(format!("{over}: 0x{stored:08x}, valid").into());
    } else {
        n.detail = Some(crc_mismatch(stored, calc).into());
        n.about =
            Some(format!("{over}: stored 0x{stored:08x}, computed 0x{calc:08x}: mismatch").into());
    }
}

/// Kafka's control record type `t`: its name and the data schema of the
/// record's value.
fn control_type(t: i16) -> Option<(&'static str, &'static MessageDef)> {
    const TYPES: [(&str, &MessageDef); 7] = [
        ("ABORT", &END_TXN_MARKER),
        ("COMMIT", &END_TXN_MARKER),
        ("LEADER_CHANGE", &LEADER_CHANGE_MESSAGE),
        ("SNAPSHOT_HEADER", &SNAPSHOT_HEADER_RECORD),
        ("SNAPSHOT_FOOTER", &SNAPSHOT_FOOTER_RECORD),
        ("KRAFT_VERSION", &K_RAFT_VERSION_RECORD),
        ("KRAFT_VOTERS", &VOTERS_RECORD),
    ];
    TYPES.get(usize::try_from(t).ok()?).copied()
}

/// Decodes content node `n` (its bytes `data`) with the data schema
/// `schema` (`decode::decode_data`) into its children, in `n`'s byte source;
/// bytes past what the known version reads are an `unparsed` node (fields of
/// a newer version). An error on `n` when the bytes do not start with a
/// version of the schema.
fn schema_children(n: &mut Node, data: &[u8], schema: &'static MessageDef) {
    let Some((mut kids, read)) = decode_data(data, n.offset, schema, REC) else {
        n.error = Some(format!("{}: no version it knows at the start", schema.name));
        return;
    };
    if let Some(rest) = read.and_then(|r| data.get(r..)).filter(|r| !r.is_empty()) {
        let at = n.offset + data.len() - rest.len();
        kids.push(
            Node::new("unparsed", "bytes", Value::bytes(rest), at, rest.len(), REC)
                .with_about("fields of a newer version of this structure"),
        );
    }
    n.children = kids;
    let source = n.source;
    n.walk_mut(&mut |k| k.source = source);
}

/// The header fields that fit in a batch cut short (no CRC check, no error).
pub(crate) fn partial_fields(c: &Cur<'_>) -> Vec<Node> {
    let mut p = Cur::new(c.r.rest(), c.abs(), c.source);
    let mut o = Nodes::new(c.source, Vec::new());
    let _ = fields::header(&mut p, None, &mut o);
    let mut kids = o.fields;
    if kids.last().is_some_and(|k| k.error.is_some()) {
        kids.pop();
    }
    kids
}

/// The offset and length fields at the cursor, for a batch or message that
/// cannot be decoded further.
pub(crate) fn size_nodes(c: &Cur<'_>, magic: Option<u8>) -> Vec<Node> {
    fields! { RecordBatch:
        BASE_OFFSET "baseOffset" Int(I64) "offset of the first record"
        BATCH_LENGTH "batchLength" Int(I32) "bytes that follow this field"
        OFFSET "offset" Int(I64) "offset of the first record"
        MESSAGE_SIZE "messageSize" Int(I32) "bytes that follow this field"
    }
    let (offset, size) = match magic {
        Some(0 | 1) => (&OFFSET, &MESSAGE_SIZE),
        _ => (&BASE_OFFSET, &BATCH_LENGTH),
    };
    let mut p = Cur::new(c.r.rest(), c.abs(), c.source);
    let mut kids = Vec::new();
    if let Ok((_, n)) = p.int(offset) {
        kids.push(n);
        if let Ok((_, n)) = p.int(size) {
            kids.push(n);
        }
    }
    kids
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::super::tests::{batch, varint};
    use super::*;
    use crate::kafka::decode::DecodeOptions;

    fn decode(data: &[u8]) -> super::super::RecordSet {
        let mut sources = Vec::new();
        super::super::decode_record_set(data, 0, 0, &DecodeOptions::default(), &mut sources)
    }

    #[test]
    fn hostile_counts_reserve_little() {
        // A billion records claimed, 70,000 bytes whose first record fails.
        let b = batch(0, 0, 1_000_000_000, -1, &[0xff; 70_000]);
        let rs = decode(&b);
        let bn = &rs.nodes[0];
        assert!(rs.problem.is_some());
        assert!(bn.child("Record[0]").is_some());
        // Room for MAX_RESERVED_CHILDREN records, not the 10,000 the bytes
        // would allow.
        assert_eq!(MAX_RESERVED_CHILDREN, 1024);
        assert!(bn.children.capacity() <= 13 + 1024);
        // i32::MAX headers claimed, 20,000 bytes whose first header fails.
        let mut body = vec![0u8, 0, 0, 1, 1]; // attrs, tsDelta, offDelta, key null, value null
        varint(&mut body, i64::from(i32::MAX));
        body.resize(body.len() + 20_000, 0xff);
        let mut rec = Vec::new();
        varint(&mut rec, body.len() as i64);
        rec.extend_from_slice(&body);
        let rs = decode(&batch(0, 0, 1, -1, &rec));
        let r = rs.nodes[0].child("Record[0]").expect("record");
        assert!(r.child("Header[0]").unwrap().first_error().is_some());
        assert!(r.children.capacity() <= 10 + 1024);
    }
}
