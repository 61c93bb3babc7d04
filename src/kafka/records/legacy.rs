//! Legacy message sets: message format v0 (magic 0) and v1 (magic 1, KIP-32).
//!
//! A message is [offset int64][messageSize int32][crc uint32][magic int8]
//! [attributes int8][timestamp int64, v1 only][key: int32 length, -1 null]
//! [value: int32 length, -1 null]; the CRC-32 (IEEE) covers magic to the end
//! of the message. A compressed message is a wrapper: its value is a whole
//! message set, compressed, which is decoded into its own byte source and
//! shown under the value. Wrappers nest at most [`super::MAX_DEPTH`] deep.

use super::batch::{checked_crc, inflated};
use super::compression::codec_name;
use super::cursor::{content_value, iso8601_ms, Cur, Int};
use super::fields::{fields, Field, Kind};
use super::{decode_set, loc, plural, Ctx, MAX_DEPTH};
use crate::kafka::tree::{Node, Role, Value};

const RB: Role = Role::RecordBatch;
const REC: Role = Role::Record;

fields! { RecordBatch:
    OFFSET "offset" Int(I64) "the message's offset; inside a v1 wrapper, relative to the wrapper"
    MESSAGE_SIZE "messageSize" Int(I32) "bytes of message after this field"
    CRC "crc" Int(U32) ""
    MAGIC "magic" Int(I8) "message format version: 0 or 1"
    ATTRIBUTES "attributes" Int(I8) "bits 0-2 codec; in v1, bit 3 timestamp type"
    TIMESTAMP "timestamp" Int(I64) "message timestamp in ms since the epoch"
}

fields! { Record:
    KEY_LENGTH "keyLength" Int(I32) "size in bytes, -1 for null"
    VALUE_LENGTH "valueLength" Int(I32) "size in bytes, -1 for null"
}

/// What a message's fields decoded to.
struct Fields {
    offset: i64,
    records: u64,
    /// For a wrapper: `gzip wrapper of 3 messages`.
    wrapper: Option<String>,
    crc_bad: bool,
}

/// Decodes one complete message (`c` covers exactly its 12 + messageSize bytes).
/// Returns the node and the leaf messages (records) it holds.
pub(crate) fn decode_message(
    ctx: &mut Ctx<'_>,
    mut c: Cur<'_>,
    index: usize,
    magic: u8,
    depth: u32,
) -> (Node, u64) {
    let whole = c.r.buf();
    let mut kids = Vec::new();
    let f = fields(ctx, &mut c, whole, depth, &mut kids);
    let (value, detail, records) = match f {
        None => (Value::Text("malformed".into()), None, 0),
        Some(f) => {
            let mut v = format!("offset {}", f.offset);
            if let Some(w) = f.wrapper {
                v.push_str(", ");
                v.push_str(&w);
            }
            (
                Value::Text(v.into()),
                f.crc_bad.then_some("CRC MISMATCH"),
                f.records,
            )
        }
    };
    let mut n = Node::new(
        format!("Message[{index}]"),
        if magic == 0 { "v0" } else { "v1" },
        value,
        c.base,
        whole.len(),
        RB,
    )
    .with_about(if magic == 0 {
        "a message in the v0 format (Kafka before 0.10)"
    } else {
        "a message in the v1 format (Kafka 0.10), which added a timestamp"
    });
    n.source = c.source;
    n.detail = detail.map(Into::into);
    n.children = kids;
    (n, records)
}

fn fields(
    ctx: &mut Ctx<'_>,
    c: &mut Cur<'_>,
    whole: &[u8],
    depth: u32,
    kids: &mut Vec<Node>,
) -> Option<Fields> {
    let (offset, n) = field!(kids, c.int(&OFFSET));
    kids.push(n);
    let (_, n) = field!(kids, c.int(&MESSAGE_SIZE));
    kids.push(n);
    let (stored, mut n) = field!(kids, c.int(&CRC));
    let stored = stored as u32;
    let calc = crc32fast::hash(whole.get(16..).unwrap_or(&[]));
    let crc_bad = calc != stored;
    ctx.crc_mismatches += u32::from(crc_bad);
    let over = "CRC-32 over magic .. end of message";
    checked_crc(&mut n, over, "crc32 of the bytes that follow", stored, calc);
    kids.push(n);
    let (magic, n) = field!(kids, c.int(&MAGIC));
    kids.push(n);
    let (attributes, mut n) = field!(kids, c.int(&ATTRIBUTES));
    let attributes = attributes as i16;
    if attributes != 0 {
        let mut d = codec_name(attributes).to_string();
        if magic == 1 {
            d.push_str(if attributes & 0x08 != 0 {
                ", LogAppendTime"
            } else {
                ", CreateTime"
            });
        }
        n.detail = Some(d.into());
    }
    kids.push(n);
    if magic == 1 {
        let (ts, mut n) = field!(kids, c.int(&TIMESTAMP));
        if let Some(t) = iso8601_ms(ts) {
            n.detail = Some(t.into());
        }
        kids.push(n);
    }
    bytes(c, kids, (&KEY_LENGTH, "key"), "the message key")?;
    let codec = (attributes & 0x07) as u8;
    let mut records = 1;
    let mut wrapper = None;
    if codec == 0 {
        bytes(c, kids, (&VALUE_LENGTH, "value"), "the message value")?;
    } else {
        let value = bytes(
            c,
            kids,
            (&VALUE_LENGTH, "value"),
            "a compressed message set: the messages this wrapper carries",
        )?;
        records = 0;
        if let Some((data, at)) = value {
            let inner = wrapped(ctx, kids, at, data, codec, magic, c.base, depth);
            records = inner.0;
            wrapper = Some(format!(
                "{} wrapper of {}",
                codec_name(attributes),
                plural(inner.1, "message", "messages")
            ));
        }
    }
    if c.remaining() > 0 {
        let what = format!(
            "{} bytes after the value, inside messageSize",
            c.remaining()
        );
        kids.push(c.fail_rest("trailing bytes", "bytes", what));
    }
    Some(Fields {
        offset,
        records,
        wrapper,
        crc_bad,
    })
}

/// An int32-length-prefixed key or value: the length node, then (unless
/// null) the content node. Returns the content and its index in `kids`.
fn bytes<'a>(
    c: &mut Cur<'a>,
    kids: &mut Vec<Node>,
    (length, name): (&Field, &'static str),
    about: &'static str,
) -> Option<Option<(&'a [u8], usize)>> {
    let (len, mut n) = field!(kids, c.int(length));
    if len == -1 {
        n.detail = Some("null".into());
        kids.push(n);
        return Some(None);
    }
    let Ok(len) = usize::try_from(len) else {
        n.error = Some(format!("{} {len} is negative", length.name));
        n.role = Role::Malformed;
        kids.push(n);
        return None;
    };
    kids.push(n);
    let (data, mut n) = field!(kids, c.bytes(name, "bytes", len, REC));
    n.value = content_value(data);
    n.about = Some(about.into());
    kids.push(n);
    Some(Some((data, kids.len() - 1)))
}

/// Decompresses a wrapper's value and decodes the inner message set under
/// the value node `kids[at]`. Returns (leaf messages, inner messages).
#[allow(clippy::too_many_arguments)]
fn wrapped(
    ctx: &mut Ctx<'_>,
    kids: &mut [Node],
    at: usize,
    data: &[u8],
    codec: u8,
    magic: i64,
    message_at: usize,
    depth: u32,
) -> (u64, u64) {
    let Some(v) = kids.get_mut(at) else {
        return (0, 0);
    };
    v.ty = codec_name(i16::from(codec)).into();
    v.role = RB;
    v.value = Value::Text(plural(data.len() as u64, "byte", "bytes").into());
    if depth + 1 >= MAX_DEPTH {
        v.error = Some(format!(
            "compressed wrappers nested more than {MAX_DEPTH} deep"
        ));
        return (0, 0);
    }
    let name = format!(
        "{}-decompressed messages of the Message at {}",
        codec_name(i16::from(codec)),
        loc(v.source, message_at)
    );
    let r = ctx.inflate(codec, data, v.source, v.offset, name, true);
    let not_shown = "a compressed message set; not shown: it decompresses";
    let Some(id) = inflated(v, r, data.len(), not_shown) else {
        return (0, 0);
    };
    // Decode the inner set from the source itself: lend its bytes out
    // while nested wrappers may push more sources, then put them back.
    let idx = usize::from(id) - 1;
    let bytes = ctx
        .sources
        .get_mut(idx)
        .map(|s| std::mem::take(&mut s.data))
        .unwrap_or_default();
    let inner = decode_set(ctx, &bytes, 0, id, depth + 1, true);
    if let Some(s) = ctx.sources.get_mut(idx) {
        s.data = bytes;
    }
    let mut nodes = inner.nodes;
    if magic == 1 {
        // The wrapper's own offset is its first child.
        absolute_offsets(&mut nodes, kids.first().and_then(int_of));
    }
    let Some(v) = kids.get_mut(at) else {
        return (0, 0);
    };
    v.children = nodes;
    (inner.records, u64::from(inner.messages))
}

/// A node's integer value (an offset).
fn int_of(n: &Node) -> Option<i64> {
    match n.value {
        Value::Int(o) => Some(o),
        _ => None,
    }
}

/// In a v1 wrapper the inner offsets are relative and the wrapper carries
/// the absolute offset of the last inner message (KIP-31): note each inner
/// message's absolute offset.
fn absolute_offsets(nodes: &mut [Node], wrapper: Option<i64>) {
    let Some(wrapper) = wrapper else { return };
    let rel = |n: &Node| n.child("offset").and_then(int_of);
    let Some(last) = nodes.iter().rev().find_map(rel) else {
        return;
    };
    for n in nodes.iter_mut() {
        if let Some(r) = rel(n) {
            let abs = wrapper.wrapping_sub(last).wrapping_add(r);
            if let Some(o) = n.children.first_mut() {
                o.detail = Some(format!("absolute {abs}").into());
            }
        }
    }
}

/// The offset and messageSize of a message cut short.
pub(crate) fn partial_fields(c: &Cur<'_>) -> Vec<Node> {
    super::batch::size_nodes(c, Some(0))
}
