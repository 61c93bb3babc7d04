//! RecordBatch v2 (magic 2) and its records.
//!
//! A batch is a 61-byte header (baseOffset .. recordsCount) followed by its
//! records, inline or compressed as one block. The CRC-32C covers attributes
//! to the end of the batch. Each record is bounded by its own varint length:
//! a field that reads past it is an error inside that record only, and the
//! next record is still decoded.

use super::compression::codec_name;
use super::cursor::{content_value, iso8601_ms, Cur, Int};
use super::json::{self, Run};
use super::{plural, push_loc, push_plural, Ctx, Inflate};
use crate::kafka::tree::{
    indexed_name, push_int, push_uint, Deferred, Node, Role, SmallTexts, Value,
    MAX_RESERVED_CHILDREN,
};

const RB: Role = Role::RecordBatch;
const REC: Role = Role::Record;

/// The header fields the records depend on.
pub(crate) struct Hdr {
    pub(super) base_offset: i64,
    pub(super) attributes: i16,
    pub(super) base_ts: i64,
    pub(super) count: i32,
}

impl Hdr {
    /// The fields of a batch's 61-byte header at their fixed offsets, for
    /// an output that makes no nodes of it; `None` when `whole` is shorter.
    pub(crate) fn read(whole: &[u8]) -> Option<Hdr> {
        let at = |r: std::ops::Range<usize>| whole.get(r);
        let i64_at = |from: usize| Some(i64::from_be_bytes(at(from..from + 8)?.try_into().ok()?));
        Some(Hdr {
            base_offset: i64_at(0)?,
            attributes: i16::from_be_bytes(at(21..23)?.try_into().ok()?),
            base_ts: i64_at(27)?,
            count: i32::from_be_bytes(at(57..super::BATCH_HEADER_LEN)?.try_into().ok()?),
        })
    }

    fn control(&self) -> bool {
        self.attributes & 0x20 != 0
    }
}

/// Unwraps a field read, or pushes its error node and returns `None`.
macro_rules! field {
    ($kids:expr, $e:expr) => {
        match $e {
            Ok(x) => x,
            Err(e) => {
                $kids.push(e);
                return None;
            }
        }
    };
}

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

/// A timestamp node's detail: the date, when the value is a plausible time.
fn with_time(mut n: Node, ms: i64) -> Node {
    if let Some(t) = iso8601_ms(ms) {
        n.detail = Some(t.into());
    }
    n
}

/// A RecordBatch CRC's value text when it matches (the tree path's and
/// `json::batch_header`'s).
pub(super) const CRC_VALID: &str = "crc32c of the bytes that follow";

/// The detail of a CRC that does not match (v2 batches and legacy messages).
pub(super) fn crc_mismatch(stored: u32, calc: u32) -> String {
    format!("0x{stored:08x}, CRC MISMATCH: expected 0x{calc:08x}")
}

/// One integer field of the header, its node pushed as it is read.
fn int_field(
    c: &mut Cur<'_>,
    kids: &mut Vec<Node>,
    name: &'static str,
    ty: Int,
    about: &'static str,
) -> Option<i64> {
    let (v, n) = field!(kids, c.int(name, ty, RB, about));
    kids.push(n);
    Some(v)
}

/// A timestamp field of the header (ms since the epoch), shown as a date too.
fn time_field(
    c: &mut Cur<'_>,
    kids: &mut Vec<Node>,
    name: &'static str,
    about: &'static str,
) -> Option<i64> {
    let (ms, n) = field!(kids, c.int(name, Int::I64, RB, about));
    kids.push(with_time(n, ms));
    Some(ms)
}

/// The CRC node's value and description: whether the stored CRC-32C
/// matches the bytes from the attributes on (`whole`, the complete batch;
/// `None` for a partial one, not checked). True on a mismatch.
fn check_crc(n: &mut Node, stored: u32, whole: Option<&[u8]>) -> bool {
    let Some(region) = whole.and_then(|w| w.get(21..)) else {
        n.detail = Some("not checked: the batch is incomplete".into());
        n.about = Some("CRC-32C over attributes .. end of batch".into());
        return false;
    };
    let calc = crc32c::crc32c(region);
    if calc == stored {
        n.value = Value::Text(CRC_VALID.into());
        n.about =
            Some(format!("CRC-32C over attributes .. end of batch: 0x{stored:08x}, valid").into());
        return false;
    }
    n.detail = Some(crc_mismatch(stored, calc).into());
    n.about = Some(
        format!(
            "CRC-32C over attributes .. end of batch: stored 0x{stored:08x}, \
             computed 0x{calc:08x}: mismatch"
        )
        .into(),
    );
    true
}

/// Reads the 61-byte header into `kids`. `whole` is the complete batch when
/// the CRC can be checked (`None` for a partial batch). Returns the header
/// and whether its CRC was found not to match.
fn header(c: &mut Cur<'_>, whole: Option<&[u8]>, kids: &mut Vec<Node>) -> Option<(Hdr, bool)> {
    let base_offset = int_field(
        c,
        kids,
        "baseOffset",
        Int::I64,
        "offset of the batch's first record; each record adds its offsetDelta",
    )?;
    int_field(
        c,
        kids,
        "batchLength",
        Int::I32,
        "how many bytes of batch follow this field",
    )?;
    int_field(
        c,
        kids,
        "partitionLeaderEpoch",
        Int::I32,
        "leader epoch the broker stamps on append; producers send -1",
    )?;
    int_field(
        c,
        kids,
        "magic",
        Int::I8,
        "record format version: 2 is the RecordBatch",
    )?;
    let (stored, mut n) = field!(kids, c.int("crc", Int::U32, RB, ""));
    let bad = check_crc(&mut n, stored as u32, whole);
    kids.push(n);
    let (attributes, mut n) = field!(
        kids,
        c.int(
            "attributes",
            Int::I16,
            RB,
            "bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control, 6 delete horizon"
        )
    );
    let attributes = attributes as i16;
    // The seed documents show a plain `0`: words only when a bit is set.
    if attributes != 0 {
        n.detail = Some(attributes_detail(attributes).into());
    }
    kids.push(n);
    int_field(
        c,
        kids,
        "lastOffsetDelta",
        Int::I32,
        "offsetDelta of the batch's last record (-1 when it holds none)",
    )?;
    let base_ts = time_field(
        c,
        kids,
        "baseTimestamp",
        "timestamp of the first record, in ms since the epoch; records add their timestampDelta",
    )?;
    time_field(
        c,
        kids,
        "maxTimestamp",
        "the latest record timestamp in the batch (ms)",
    )?;
    int_field(
        c,
        kids,
        "producerId",
        Int::I64,
        "idempotent or transactional producer id; -1 for plain producers",
    )?;
    int_field(
        c,
        kids,
        "producerEpoch",
        Int::I16,
        "epoch of that producer id; -1 when unused",
    )?;
    int_field(
        c,
        kids,
        "baseSequence",
        Int::I32,
        "producer sequence number of the first record; -1 when unused",
    )?;
    let (count, mut n) = field!(
        kids,
        c.int(
            "recordsCount",
            Int::I32,
            RB,
            "how many records the batch holds"
        )
    );
    let count = count as i32;
    if count < 0 {
        n.error = Some(format!("recordsCount {count} is negative"));
        n.role = Role::Malformed;
    }
    kids.push(n);
    Some((
        Hdr {
            base_offset,
            attributes,
            base_ts,
            count,
        },
        bad,
    ))
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
        None => header(&mut c, Some(whole), &mut kids),
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
    let mut refused = false;
    // With headers only, nothing reads the records: keep only the length.
    let keep = !ctx.opts.records_headers_only;
    match ctx.inflate(codec, comp, c.source, c.base + start, source_name, keep) {
        Inflate::Done { id, len, note } => {
            let mut v = String::with_capacity(32);
            push_uint(&mut v, comp.len() as u64);
            v.push_str(" bytes → ");
            push_uint(&mut v, len as u64);
            v.push_str(" bytes");
            n.value = Value::Text(v.into());
            n.detail = note.map(Into::into);
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
        Inflate::TooLarge(limit) => {
            n.value = Value::Text(plural(comp.len() as u64, "byte", "bytes").into());
            refused = true;
            n.detail = Some("decompressed size exceeds the limit".into());
            n.about = Some(
                format!(
                    "the records, compressed as one block; not shown: they decompress \
                     to more than {limit} bytes"
                )
                .into(),
            );
        }
        Inflate::Failed(what) => {
            n.value = Value::Text(plural(comp.len() as u64, "byte", "bytes").into());
            n.error = Some(what);
        }
    }
    kids.push(n);
    refused
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
    let mut i = 0u64;
    while i < count {
        if c.remaining() == 0 {
            kids.extend(run.as_mut().and_then(Run::take));
            let mut e = Node::new(
                "missing records",
                "bytes",
                Value::None,
                c.abs(),
                0,
                Role::Malformed,
            );
            e.source = c.source;
            e.error = Some(format!(
                "recordsCount is {count} but the batch holds only {i} records"
            ));
            kids.push(e);
            return;
        }
        if let Some(run) = &mut run {
            if run.full() {
                kids.extend(run.take());
            }
            if run.record(c, i) {
                i += 1;
                continue;
            }
            kids.extend(run.take());
        }
        let (n, go_on) = record(c, i, h);
        kids.push(n);
        i += 1;
        if !go_on {
            return;
        }
    }
    kids.extend(run.as_mut().and_then(Run::take));
    if c.remaining() > 0 {
        let e = c.fail(
            "trailing bytes",
            "bytes",
            format!(
                "{} bytes follow the last of the batch's {count} records",
                c.remaining()
            ),
        );
        c.r.skip_rest();
        kids.push(e);
    }
}

/// One record. The flag says whether the next record can be read (false when
/// this one's length could not be trusted).
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
    let h = Hdr {
        base_offset: d.base_offset,
        attributes: 0,
        base_ts: d.base_ts,
        count: 0,
    };
    let mut c = Cur::new(bytes, offset, source);
    let mut i = d.first;
    let end = d.first.saturating_add(d.count);
    // A record takes a byte at least: the span's bytes end the loop.
    while i < end && c.remaining() > 0 {
        let (n, go_on) = record(&mut c, i, &h);
        i += 1;
        each(n, i == end || !go_on || c.remaining() == 0);
        if !go_on {
            return;
        }
    }
}

fn record(c: &mut Cur<'_>, i: u64, h: &Hdr) -> (Node, bool) {
    let start = c.pos();
    let name = RECORD_NAMES.get(i);
    // length .. headersCount: nine fields, and the headers.
    let mut kids = Vec::with_capacity(10);
    let mut go_on = false;
    let mut summary = None;
    match c.int(
        "length",
        Int::Varint,
        REC,
        "bytes in this record after the length field",
    ) {
        Err(e) => kids.push(e),
        Ok((len, mut n)) => {
            let rem = c.remaining();
            match usize::try_from(len).ok().filter(|&l| l <= rem) {
                None => {
                    n.error = Some(if len < 0 {
                        format!("record length {len} is negative")
                    } else {
                        format!("record length {len} exceeds the {rem} bytes that remain")
                    });
                    n.role = Role::Malformed;
                    kids.push(n);
                    if rem > 0 {
                        let mut u = c.fail("undecoded", "bytes", String::new());
                        u.error = None;
                        kids.push(u);
                    }
                    c.r.skip_rest();
                }
                Some(l) => {
                    kids.push(n);
                    if let Some(mut b) = c.sub(l) {
                        go_on = true;
                        summary = body(&mut b, h, &mut kids);
                        if b.remaining() > 0 {
                            let mut e = b.fail("unclaimed", "bytes", String::new());
                            if summary.is_some() {
                                e.error = Some(format!(
                                    "{} bytes inside the record's length that no field claims",
                                    b.remaining()
                                ));
                            } else {
                                e.error = None;
                            }
                            kids.push(e);
                        }
                    }
                }
            }
        }
    }
    let value = Value::Text(summary.unwrap_or_else(|| "malformed".into()).into());
    let mut n = c
        .node_from(start, name, "Record", value, REC)
        .with_about("one record: deltas against the batch header, key, value, headers");
    n.children = kids;
    (n, go_on)
}

/// Reads a varint length and the content it announces. `Some(None)` is a
/// null (-1, when allowed); `Some(Some(i))` the index of the content node.
fn sized<'a>(
    b: &mut Cur<'a>,
    kids: &mut Vec<Node>,
    names: (&'static str, &'static str),
    nullable: bool,
    abouts: (&'static str, &'static str),
) -> Option<Option<(&'a [u8], usize)>> {
    let (len, mut n) = field!(kids, b.int(names.0, Int::Varint, REC, abouts.0));
    if len == -1 && nullable {
        n.detail = Some("null".into());
        kids.push(n);
        return Some(None);
    }
    let Ok(len) = usize::try_from(len) else {
        n.error = Some(format!("{} {len} is negative", names.0));
        n.role = Role::Malformed;
        kids.push(n);
        return None;
    };
    kids.push(n);
    let ty = if names.1.ends_with("Key") {
        "string"
    } else {
        "bytes"
    };
    let (data, mut n) = field!(kids, b.bytes(names.1, ty, len, REC));
    n.value = if ty == "string" {
        Value::Str(String::from_utf8_lossy(data).into_owned())
    } else {
        content_value(data)
    };
    n.about = Some(abouts.1.into());
    kids.push(n);
    Some(Some((data, kids.len() - 1)))
}

/// The fields of a record after its length; returns the record's summary.
fn body(b: &mut Cur<'_>, h: &Hdr, kids: &mut Vec<Node>) -> Option<String> {
    let (_, n) = field!(
        kids,
        b.int(
            "attributes",
            Int::I8,
            REC,
            "per-record attributes; none are defined, 0"
        )
    );
    kids.push(n);
    let (tsd, n) = field!(
        kids,
        b.int(
            "timestampDelta",
            Int::Varlong,
            REC,
            "this record's timestamp minus the batch's baseTimestamp (ms)"
        )
    );
    let ts = if h.base_ts >= 0 {
        h.base_ts.checked_add(tsd).unwrap_or(-1)
    } else {
        -1
    };
    kids.push(with_time(n, ts));
    let (od, mut n) = field!(
        kids,
        b.int(
            "offsetDelta",
            Int::Varint,
            REC,
            "this record's offset minus the batch's baseOffset"
        )
    );
    let offset = h.base_offset.wrapping_add(od);
    let mut summary = String::with_capacity(32);
    summary.push_str("offset ");
    push_int(&mut summary, offset);
    n.detail = Some(summary.clone().into());
    kids.push(n);
    let key = sized(
        b,
        kids,
        ("keyLength", "key"),
        true,
        ("key size in bytes, -1 for a null key", "the record key"),
    )?;
    let mut control_type = None;
    if let Some((data, at)) = key {
        if h.control() {
            if let Some(k) = kids.get_mut(at) {
                control_type = control_key(k, data);
                if let Some(t) = control_type {
                    summary.push_str(", ");
                    summary.push_str(control_name(t));
                }
            }
        }
    }
    let value = sized(
        b,
        kids,
        ("valueLength", "value"),
        true,
        (
            "value size in bytes, -1 for a null value (a tombstone)",
            "the record value",
        ),
    )?;
    if let (Some((data, at)), Some(0 | 1)) = (value, control_type) {
        if let Some(v) = kids.get_mut(at) {
            end_txn_marker(v, data);
        }
    }
    let (count, mut n) = field!(
        kids,
        b.int("headersCount", Int::Varint, REC, "how many headers follow")
    );
    if count < 0 {
        n.error = Some(format!("headersCount {count} is negative"));
        n.role = Role::Malformed;
        kids.push(n);
        return None;
    }
    kids.push(n);
    // Each header takes at least two bytes, so the loop ends with the record.
    let room = usize::try_from(count)
        .unwrap_or(0)
        .min(b.remaining() / 2)
        .min(MAX_RESERVED_CHILDREN);
    kids.reserve_exact(room);
    for j in 0..count {
        let start = b.pos();
        let mut hk = Vec::with_capacity(4);
        let key = record_header(b, &mut hk);
        let ok = key.is_some();
        let value = key.map_or(Value::Text("malformed".into()), Value::Str);
        let mut n = b
            .node_from(start, HEADER_NAMES.get(j as u64), "Header", value, REC)
            .with_about("a key/value pair attached to the record");
        n.children = hk;
        kids.push(n);
        if !ok {
            return None;
        }
    }
    Some(summary)
}

/// One header's fields; returns its key.
fn record_header(b: &mut Cur<'_>, kids: &mut Vec<Node>) -> Option<String> {
    let key = sized(
        b,
        kids,
        ("headerKeyLength", "headerKey"),
        false,
        ("header key size in bytes", "the header key (UTF-8)"),
    )?;
    sized(
        b,
        kids,
        ("headerValueLength", "headerValue"),
        true,
        (
            "header value size in bytes, -1 for null",
            "the header value",
        ),
    )?;
    key.map(|(d, _)| String::from_utf8_lossy(d).into_owned())
}

/// Kafka's control record types.
fn control_name(t: i16) -> &'static str {
    match t {
        0 => "ABORT",
        1 => "COMMIT",
        2 => "LEADER_CHANGE",
        3 => "SNAPSHOT_HEADER",
        4 => "SNAPSHOT_FOOTER",
        5 => "KRAFT_VERSION",
        6 => "KRAFT_VOTERS",
        _ => "UNKNOWN",
    }
}

/// Decodes a control record's key (int16 version, int16 type) as children of
/// its node; returns the type.
fn control_key(k: &mut Node, data: &[u8]) -> Option<i16> {
    let mut c = Cur::new(data, k.offset, k.source);
    k.value = Value::Text("control record key".into());
    let r = (|| {
        let (_, n) = field!(
            k.children,
            c.int("version", Int::I16, REC, "control key format version")
        );
        k.children.push(n);
        let (t, n) = field!(
            k.children,
            c.int("type", Int::I16, REC, "what the control record marks")
        );
        let t = t as i16;
        k.children.push(n.with_detail(control_name(t)));
        Some(t)
    })();
    if let Some(t) = r {
        k.detail = Some(control_name(t).into());
    }
    unparsed(&mut c, &mut k.children);
    r
}

/// Decodes an ABORT/COMMIT marker's value (int16 version, int32 coordinator epoch).
fn end_txn_marker(v: &mut Node, data: &[u8]) {
    let mut c = Cur::new(data, v.offset, v.source);
    v.value = Value::Text("EndTxnMarker".into());
    let _ = (|| {
        let (_, n) = field!(
            v.children,
            c.int("version", Int::I16, REC, "marker format version")
        );
        v.children.push(n);
        let (_, n) = field!(
            v.children,
            c.int(
                "coordinatorEpoch",
                Int::I32,
                REC,
                "epoch of the transaction coordinator that wrote the marker"
            )
        );
        v.children.push(n);
        Some(())
    })();
    unparsed(&mut c, &mut v.children);
}

/// Bytes of a control structure past the fields this version knows.
fn unparsed(c: &mut Cur<'_>, kids: &mut Vec<Node>) {
    if c.remaining() > 0 {
        let start = c.pos();
        let rest = c.r.rest();
        c.r.skip_rest();
        kids.push(
            c.node_from(start, "unparsed", "bytes", Value::bytes(rest), REC)
                .with_about("fields of a newer version of this structure"),
        );
    }
}

/// The header fields that fit in a batch cut short (no CRC check, no error).
pub(crate) fn partial_fields(c: &Cur<'_>) -> Vec<Node> {
    let mut p = Cur::new(c.r.rest(), c.abs(), c.source);
    let mut kids = Vec::new();
    let _ = header(&mut p, None, &mut kids);
    if kids.last().is_some_and(|k| k.error.is_some()) {
        kids.pop();
    }
    kids
}

/// The offset and length fields at the cursor, for a batch or message that
/// cannot be decoded further.
pub(crate) fn size_nodes(c: &Cur<'_>, magic: Option<u8>) -> Vec<Node> {
    let legacy = matches!(magic, Some(0 | 1));
    let mut p = Cur::new(c.r.rest(), c.abs(), c.source);
    let mut kids = Vec::new();
    let names = if legacy {
        ("offset", "messageSize")
    } else {
        ("baseOffset", "batchLength")
    };
    if let Ok((_, n)) = p.int(names.0, Int::I64, RB, "offset of the first record") {
        kids.push(n);
        if let Ok((_, n)) = p.int(names.1, Int::I32, RB, "bytes that follow this field") {
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
