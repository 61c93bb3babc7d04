//! Record sets: RecordBatch v2 and the legacy message sets (magic 0 and 1).
//!
//! Place in the data path: the schema-driven decoder meets a `records` field
//! and hands its bytes to [`decode_record_set`], which returns the batch (or
//! message) nodes to hang under the field, a one-line summary and the first
//! problem. Decompressed payloads become new [`ByteSource`]s and the record
//! nodes point into them.
//!
//! Invariants:
//! - every node carries its byte source and a span in it, written when the
//!   node is made; nodes in the outer source count from `base`, nodes in a
//!   decompressed source from 0;
//! - no read is unchecked (`clippy::indexing_slicing` is denied here) and no
//!   buffer is sized from a wire length before that length is checked against
//!   the bytes that remain, so a hostile count or length costs nothing;
//! - `stats`' node-less count ([`count_record_set`]) takes the decompressed
//!   size of a CRC-verified batch from its codec's framing (`declared`) and
//!   decompresses only what does not declare it, under the same limits;
//! - decompression stops past [`DecodeOptions::max_decompressed`] per batch,
//!   and past [`TOTAL_FACTOR`] times that for all sources of one message;
//!   legacy wrappers nest at most [`MAX_DEPTH`] deep;
//! - a CRC mismatch is a mark (detail text, [`RecordSet::crc_mismatches`]),
//!   never a problem; a batch cut short at the end of the set is a "partial
//!   batch" node (brokers cut the last batch of a Fetch response to the
//!   fetch size), not a problem either.

#![deny(clippy::indexing_slicing)]
// Undecodable bytes are returned as error nodes (`Result<_, Node>`): the node
// is the data the caller shows, so its size is not worth boxing away.
#![allow(clippy::result_large_err)]

mod batch;
pub mod compression;
mod cursor;
pub(crate) mod declared;
mod json;
mod legacy;
mod memo;
pub use memo::BatchSizes;
mod zstd_len;

use crate::kafka::decode::DecodeOptions;
use crate::kafka::tree::{push_uint, ByteSource, Node, Role, Value};

pub use compression::{codec_name, decompress, InflateError, Inflated};
pub use cursor::iso8601_ms;
#[cfg(test)]
pub(crate) use json::RUN_BYTES;

/// How deep compressed legacy wrappers may nest (a wrapper inside a wrapper…).
pub const MAX_DEPTH: u32 = 4;

/// All decompressed sources of one message together may hold at most this
/// many times [`DecodeOptions::max_decompressed`] bytes.
pub const TOTAL_FACTOR: usize = 4;

/// The size of a RecordBatch v2 header, from baseOffset to recordsCount.
pub const BATCH_HEADER_LEN: usize = 61;

/// What a record set decoded to.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordSet {
    /// The batch / legacy message nodes, in byte order (without the length prefix).
    pub nodes: Vec<Node>,
    /// For the parent `records` node's value: `empty`, `1 RecordBatch`,
    /// `3 RecordBatches, 12 records`, `2 legacy messages (v1)`, …
    pub summary: String,
    /// RecordBatches plus top-level legacy messages.
    pub batches: u32,
    /// Records the batches declare, plus legacy messages that are not wrappers
    /// (inner messages of compressed wrappers included).
    pub records: u64,
    /// The first real problem: (offset, source, what). Not CRC mismatches, not
    /// a trailing partial batch.
    pub problem: Option<(usize, u16, String)>,
    /// How many batch or message CRCs did not match their bytes.
    pub crc_mismatches: u32,
}

/// Decodes the record set held in `data`, whose first byte sits at `base` in
/// byte source `source` (0 = the message; n = `sources[n-1]`). Decompressed
/// payloads are pushed onto `sources` (their id = index + 1) and the record
/// nodes point into them.
pub fn decode_record_set(
    data: &[u8],
    base: usize,
    source: u16,
    opts: &DecodeOptions,
    sources: &mut Vec<ByteSource>,
) -> RecordSet {
    let held: usize = sources.iter().map(|s| s.len).sum();
    let mut ctx = Ctx {
        opts,
        sources,
        crc_mismatches: 0,
        budget: opts
            .max_decompressed
            .saturating_mul(TOTAL_FACTOR)
            .saturating_sub(held),
    };
    let out = decode_set(&mut ctx, data, base, source, 0, false);
    let mut problem = None;
    for n in &out.nodes {
        if let Some(e) = n.first_error() {
            problem = Some((e.offset, e.source, e.error.clone().unwrap_or_default()));
            break;
        }
    }
    RecordSet {
        summary: if data.is_empty() {
            "empty".to_string()
        } else {
            out.summary(data.len())
        },
        batches: out.batches.saturating_add(out.messages),
        records: out.records,
        problem,
        crc_mismatches: ctx.crc_mismatches,
        nodes: out.nodes,
    }
}

/// Batches per codec, in order of first appearance, held inline (no
/// allocation per record set): room for all eight codec numbers
/// (`attributes & 7`), named by [`compression::codec_name`].
#[derive(Clone, Copy, Default)]
pub struct Codecs {
    len: u8,
    codes: [u8; 8],
    counts: [u64; 8],
}

impl Codecs {
    /// Counts `n` more batches of codec `code` (the low 3 bits are used).
    pub fn add(&mut self, code: u8, n: u64) {
        let code = code & 7;
        let len = usize::from(self.len);
        match self.codes.iter().take(len).position(|&c| c == code) {
            Some(i) => {
                if let Some(k) = self.counts.get_mut(i) {
                    *k += n;
                }
            }
            None => {
                if let (Some(c), Some(k)) = (self.codes.get_mut(len), self.counts.get_mut(len)) {
                    (*c, *k) = (code, n);
                    self.len += 1;
                }
            }
        }
    }

    /// The codecs' names and their counts, in order of first appearance.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.codes
            .iter()
            .zip(&self.counts)
            .take(usize::from(self.len))
            .map(|(&c, &n)| (codec_name(i16::from(c)), n))
    }
}

impl PartialEq for Codecs {
    fn eq(&self, other: &Codecs) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Codecs {}

impl std::fmt::Debug for Codecs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// What `stats` reads from a record set, counted without making nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetCounts {
    /// Complete RecordBatches.
    pub batches: u64,
    /// Batches cut at the end of the set.
    pub partial: u64,
    /// Records the batches declare.
    pub records: u64,
    /// Batches per codec name, in order of first appearance.
    pub codecs: Codecs,
    /// Bytes of uncompressed batches.
    pub plain_bytes: u64,
    /// Compressed payload bytes of the batches that decompressed.
    pub compressed: u64,
    /// What they decompressed to.
    pub decompressed: u64,
}

/// Counts a record set of v2 batches as [`decode_record_set`] with
/// [`DecodeOptions::records_headers_only`] would decode it — same batch
/// framing, same decompression with the same per-batch limit and message
/// budget, and a length-only source pushed onto `sources` for each payload
/// that decompressed — without making nodes. A compressed batch whose
/// CRC-32C matches its bytes is not decompressed when its codec's framing
/// declares the size (module `declared`: the same figure for every payload a real
/// producer sends; only compressed data that is invalid under a matching CRC
/// can be counted with its declared size where the decoder would refuse it). `None` (with `sources` as it
/// was) when the set is anything but complete v2 batches with non-negative
/// record counts and payloads that decompress or are refused by the limit,
/// optionally followed by a batch cut at the end: legacy messages, unknown
/// magic, negative or short lengths, corrupt payloads. The caller then
/// decodes the set with [`decode_record_set`].
pub fn count_record_set(
    data: &[u8],
    base: usize,
    opts: &DecodeOptions,
    sources: &mut Vec<ByteSource>,
) -> Option<SetCounts> {
    let before = sources.len();
    let out = count_batches(data, base, opts, sources);
    if out.is_none() {
        sources.truncate(before);
    }
    out
}

fn count_batches(
    data: &[u8],
    base: usize,
    opts: &DecodeOptions,
    sources: &mut Vec<ByteSource>,
) -> Option<SetCounts> {
    let be32 = |b: &[u8], at: usize| -> Option<i32> {
        Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let held: usize = sources.iter().map(|s| s.len).sum();
    let mut budget = opts
        .max_decompressed
        .saturating_mul(TOTAL_FACTOR)
        .saturating_sub(held);
    let mut out = SetCounts::default();
    let mut pos = 0;
    while let Some(rest) = data.get(pos..).filter(|r| !r.is_empty()) {
        // As `decode_set`: a length that does not fit is a partial batch.
        let Some(size) = be32(rest, 8) else {
            out.partial += 1;
            break;
        };
        let total = usize::try_from(size).ok()?.checked_add(12)?;
        if total > rest.len() {
            out.partial += 1;
            break;
        }
        // Only complete v2 batches with a whole header are counted here.
        let batch = rest.get(..total)?;
        if rest.get(16) != Some(&2) || total < BATCH_HEADER_LEN {
            return None;
        }
        let attributes = i16::from_be_bytes(batch.get(21..23)?.try_into().ok()?);
        let count = u64::try_from(be32(batch, 57)?).ok()?;
        out.batches += 1;
        out.records = out.records.saturating_add(count);
        out.codecs.add((attributes & 0x07) as u8, 1);
        let codec = (attributes & 0x07) as u8;
        if codec == 0 {
            out.plain_bytes += total as u64;
        } else {
            let payload = batch.get(BATCH_HEADER_LEN..)?;
            let limit = opts.max_decompressed.min(budget);
            if sources.len() >= usize::from(u16::MAX) {
                return None;
            }
            match payload_len(batch, codec, payload, limit, opts.batch_sizes.as_deref()) {
                Ok(len) => {
                    budget = budget.saturating_sub(len);
                    out.compressed += payload.len() as u64;
                    out.decompressed += len as u64;
                    sources.push(ByteSource {
                        name: String::new(),
                        data: Vec::new(),
                        len,
                        parent: 0,
                        parent_offset: base + pos + BATCH_HEADER_LEN,
                        parent_length: payload.len(),
                    });
                }
                Err(InflateError::TooLarge { .. }) => {}
                Err(_) => return None,
            }
        }
        pos += total;
    }
    Some(out)
}

/// What the compressed `payload` of `batch` decompresses to, within `limit`.
/// When the batch CRC-32C matches its bytes, the size the codec's framing
/// declares ([`declared::declared_len`], remembered by the batch's CRC in
/// `sizes` for the next time the same batch is seen: [`memo`]) if it is within the limit; anything
/// else — a CRC mismatch, a framing that must be decoded to be known, a size
/// over the limit — gets [`compression::decompressed_len`]'s answer.
fn payload_len(
    batch: &[u8],
    codec: u8,
    payload: &[u8],
    limit: usize,
    sizes: Option<&BatchSizes>,
) -> Result<usize, InflateError> {
    let stored = batch
        .get(17..21)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes);
    // The stored CRC-32C when it matches the batch's bytes.
    let verified = stored.filter(|&crc| batch.get(21..).map(crc32c::crc32c) == Some(crc));
    if let Some(crc) = verified {
        // Remembered from the same batch seen earlier, or walked.
        let declared = match sizes {
            Some(m) => m.declared_len(crc, codec, payload).map(|(n, _)| n),
            None => declared::declared_len(codec, payload),
        };
        if let Some(n) = declared.filter(|&n| n <= limit) {
            return Ok(n);
        }
    }
    compression::decompressed_len(codec, payload, limit).map(|s| s.len)
}

/// Shared state of one [`decode_record_set`] call.
pub(crate) struct Ctx<'o> {
    pub(crate) opts: &'o DecodeOptions,
    pub(crate) sources: &'o mut Vec<ByteSource>,
    pub(crate) crc_mismatches: u32,
    /// Decompressed bytes this message may still add.
    pub(crate) budget: usize,
}

/// The outcome of inflating one compressed payload into a new source.
pub(crate) enum Inflate {
    /// Pushed as source `id`.
    Done {
        id: u16,
        len: usize,
        note: Option<&'static str>,
    },
    /// Refused: the limit was reached.
    TooLarge(usize),
    /// The codec failed.
    Failed(String),
}

impl Ctx<'_> {
    /// Decompresses `data` (at `offset` in `parent`) and pushes the result as
    /// a new source; without `keep`, the source records only the length (same
    /// outcome, same limits: [`compression::decompressed_len`]).
    pub(crate) fn inflate(
        &mut self,
        codec: u8,
        data: &[u8],
        parent: u16,
        offset: usize,
        name: String,
        keep: bool,
    ) -> Inflate {
        let limit = self.opts.max_decompressed.min(self.budget);
        if self.sources.len() >= usize::from(u16::MAX) {
            return Inflate::Failed("too many decompressed byte sources in one message".into());
        }
        let out = if !keep {
            compression::decompressed_len(codec, data, limit).map(|s| (Vec::new(), s.len, s.note))
        } else {
            compression::decompress(codec, data, limit).map(|o| {
                let len = o.data.len();
                (o.data, len, o.note)
            })
        };
        match out {
            Ok((bytes, len, note)) => {
                self.budget = self.budget.saturating_sub(len);
                self.sources.push(ByteSource {
                    name,
                    data: bytes,
                    len,
                    parent,
                    parent_offset: offset,
                    parent_length: data.len(),
                });
                Inflate::Done {
                    id: u16::try_from(self.sources.len()).unwrap_or(u16::MAX),
                    len,
                    note,
                }
            }
            Err(InflateError::TooLarge { limit }) => Inflate::TooLarge(limit),
            Err(e) => Inflate::Failed(e.to_string()),
        }
    }
}

/// Where a byte sits, for names and messages: `0x001e` or `#2:0x0010`.
pub(crate) fn loc(source: u16, offset: usize) -> String {
    let mut s = String::new();
    push_loc(&mut s, source, offset);
    s
}

/// Appends [`loc`]'s text.
pub(crate) fn push_loc(s: &mut String, source: u16, offset: usize) {
    use std::fmt::Write as _;
    let _ = if source == 0 {
        write!(s, "0x{offset:04x}")
    } else {
        write!(s, "#{source}:0x{offset:04x}")
    };
}

/// `1 record`, `3 records`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    let mut s = String::with_capacity(24);
    push_plural(&mut s, n, one, many);
    s
}

/// Appends [`plural`]'s text.
pub(crate) fn push_plural(s: &mut String, n: u64, one: &str, many: &str) {
    if n == 1 {
        s.push_str("1 ");
        s.push_str(one);
    } else {
        push_uint(s, n);
        s.push(' ');
        s.push_str(many);
    }
}

/// What a run of batches and messages decoded to.
#[derive(Default)]
pub(crate) struct SetOut {
    pub(crate) nodes: Vec<Node>,
    /// RecordBatches (v2).
    pub(crate) batches: u32,
    /// Records declared by the batches.
    pub(crate) batch_records: u64,
    /// Legacy messages at this level.
    pub(crate) messages: u32,
    /// Records overall (batch records + legacy leaf messages, inner ones included).
    pub(crate) records: u64,
    /// Which legacy versions were seen.
    pub(crate) v0: bool,
    pub(crate) v1: bool,
    /// A partial batch ends the set.
    pub(crate) partial: bool,
}

impl SetOut {
    /// The parts (batches, legacy messages) joined by `; `, or the byte
    /// count when there are none; written into one string.
    fn summary(&self, len: usize) -> String {
        let mut s = String::with_capacity(64);
        if self.batches > 0 {
            push_plural(
                &mut s,
                u64::from(self.batches),
                "RecordBatch",
                "RecordBatches",
            );
            if self.batch_records > 0 {
                s.push_str(", ");
                push_plural(&mut s, self.batch_records, "record", "records");
            }
        }
        if self.messages > 0 {
            let v = match (self.v0, self.v1) {
                (true, true) => "v0, v1",
                (true, false) => "v0",
                _ => "v1",
            };
            if !s.is_empty() {
                s.push_str("; ");
            }
            push_plural(
                &mut s,
                u64::from(self.messages),
                "legacy message",
                "legacy messages",
            );
            s.push_str(" (");
            s.push_str(v);
            s.push(')');
            let leaves = self.records.saturating_sub(self.batch_records);
            if leaves != u64::from(self.messages) {
                s.push_str(", ");
                push_plural(&mut s, leaves, "record", "records");
            }
        }
        if s.is_empty() {
            push_plural(&mut s, len as u64, "byte", "bytes");
        }
        if self.partial {
            s.push_str(" + partial batch");
        }
        s
    }
}

/// Decodes a run of batches / messages. `nested` sets (inside a decompressed
/// wrapper) cannot have been cut by a broker, so a short tail there is an error.
pub(crate) fn decode_set(
    ctx: &mut Ctx<'_>,
    data: &[u8],
    base: usize,
    source: u16,
    depth: u32,
    nested: bool,
) -> SetOut {
    let mut out = SetOut::default();
    let mut c = cursor::Cur::new(data, base, source);
    while c.remaining() > 0 {
        let rest = c.r.rest();
        let rem = rest.len();
        let size = rest
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes);
        let magic = rest.get(16).copied();
        let Some(size) = size else {
            out.nodes.push(partial(&c, None, magic, nested));
            out.partial |= !nested;
            break;
        };
        let Ok(total) = usize::try_from(size).map(|s| s + 12) else {
            let mut e = c.fail(
                "RecordBatch",
                "bytes",
                format!("length field {size} is negative"),
            );
            e.children = batch::size_nodes(&c, magic);
            out.nodes.push(e);
            break;
        };
        if total > rem {
            out.nodes.push(partial(&c, Some(total), magic, nested));
            out.partial |= !nested;
            break;
        }
        let Some(sub) = c.sub(total) else { break };
        match magic {
            Some(2) => {
                let (node, records) = batch::decode_batch(ctx, sub);
                out.batches += 1;
                out.batch_records = out.batch_records.saturating_add(records);
                out.records = out.records.saturating_add(records);
                out.nodes.push(node);
            }
            Some(m @ (0 | 1)) => {
                let (node, records) =
                    legacy::decode_message(ctx, sub, out.messages as usize, m, depth);
                out.messages += 1;
                out.v0 |= m == 0;
                out.v1 |= m == 1;
                out.records = out.records.saturating_add(records);
                out.nodes.push(node);
            }
            other => {
                // Either a length too short to reach the magic byte, or a magic
                // Kafka never defined: nothing after this can be trusted.
                let what = match other {
                    Some(m) => format!("unknown record format (magic {m})"),
                    None => format!("length field {} is too short for any batch", total - 12),
                };
                let mut e = Node::new(
                    "RecordBatch",
                    "bytes",
                    Value::None,
                    sub.base,
                    total + c.remaining(),
                    Role::Malformed,
                );
                e.source = source;
                e.error = Some(what);
                e.children = batch::size_nodes(&sub, other);
                out.nodes.push(e);
                break;
            }
        }
    }
    out
}

/// The node for a batch or message that runs past the end of the set.
fn partial(c: &cursor::Cur<'_>, total: Option<usize>, magic: Option<u8>, nested: bool) -> Node {
    let rem = c.remaining();
    let legacy = matches!(magic, Some(0 | 1));
    let what = match total {
        Some(t) => format!("{rem} of {t} bytes"),
        None => format!("{rem} bytes, the length field is cut"),
    };
    let name = if legacy {
        "partial message"
    } else {
        "partial batch"
    };
    let mut n = Node::new(
        name,
        "bytes",
        Value::Text(if nested {
            format!("truncated: {what}").into()
        } else {
            format!("truncated by the broker's fetch size limit: {what}").into()
        }),
        c.abs(),
        rem,
        Role::RecordBatch,
    )
    .with_about(
        "the set ends inside this batch; a broker cuts the last batch of a fetch \
         response at the fetch size, and the client fetches it again later",
    );
    n.source = c.source;
    if nested {
        n.role = Role::Malformed;
        n.error = Some(format!(
            "decompressed message set ends inside a message: {what}"
        ));
    }
    n.children = if legacy {
        legacy::partial_fields(c)
    } else {
        batch::partial_fields(c)
    };
    n
}

#[cfg(test)]
mod mixed_bytes;
#[cfg(test)]
mod size_tests;
#[cfg(test)]
mod tests;
