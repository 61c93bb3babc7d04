//! Record sets: RecordBatch v2 and the legacy message sets (magic 0 and 1).
//!
//! Place in the data path: the schema-driven decoder meets a `records` field
//! and hands its bytes to [`decode_record_set`], which returns the batch (or
//! message) nodes to hang under the field, a one-line summary and the first
//! problem, or, for `stats`, to [`count_record_set`], which returns counts.
//! Both are one walk ([`walk_set`]) with different outputs ([`SetOutput`]):
//! the tree ([`SetOut`], records as JSON with `records_json`) and the counts
//! ([`Counter`]). Decompressed payloads become new [`ByteSource`]s and the
//! record nodes point into them.
//!
//! Invariants:
//! - every node carries its byte source and a span in it, written when the
//!   node is made; nodes in the outer source count from `base`, nodes in a
//!   decompressed source from 0;
//! - no read is unchecked (`clippy::indexing_slicing` is denied here) and no
//!   buffer is sized from a wire length before that length is checked against
//!   the bytes that remain, so a hostile count or length costs nothing;
//! - the counting output takes the decompressed size of a CRC-verified
//!   batch from its codec's framing (`declared`, `zstd_len`, remembered in
//!   [`BatchSizes`]) and decompresses only what does not declare it, under
//!   the same limits and budget as the tree;
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

/// Unwraps a field read, or pushes its error node and returns `None` (the
/// legacy messages' and control records' decoders).
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

mod batch;
pub use batch::stored_crc;
pub mod compression;
mod cursor;
pub(crate) mod declared;
mod fields;
mod json;
mod legacy;
mod memo;
mod text;
pub use memo::BatchSizes;
mod zstd_len;

use crate::kafka::decode::DecodeOptions;
use crate::kafka::tree::{push_uint, ByteSource, Node, Role, Value};

pub use compression::{codec_name, decompress, InflateError, Inflated};
pub use cursor::{civil_from_days, iso8601_ms};
pub(crate) use cursor::{iso8601_bytes, second_text};
/// Exposed for the tests of the streamed JSON (`tests/stream_json.rs`).
#[doc(hidden)]
pub use json::RUN_BYTES;

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
    let mut ctx = Ctx::new(opts, sources);
    let out = decode_set(&mut ctx, data, base, source, 0, false);
    let problem = (out.nodes.iter().find_map(Node::first_error))
        .map(|e| (e.offset, e.source, e.error.clone().unwrap_or_default()));
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

    /// Counts `other`'s batches, codec by codec (by number: no name compared).
    pub fn merge(&mut self, other: &Codecs) {
        for (&c, &n) in other
            .codes
            .iter()
            .zip(&other.counts)
            .take(usize::from(other.len))
        {
            self.add(c, n);
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
    /// The complete batches' headers, in order (one, nearly always: held
    /// in place, not allocated).
    pub heads: smallvec::SmallVec<[BatchHead; 1]>,
}

/// The header fields of one v2 batch that consumer lag, record age and
/// produce → fetch delivery read (legacy messages: the offset only, the
/// rest as a v2 batch without a producer says: −1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchHead {
    /// `baseOffset`.
    pub base_offset: i64,
    /// `lastOffsetDelta`.
    pub last_offset_delta: i32,
    /// `maxTimestamp` (ms since the epoch).
    pub max_timestamp: i64,
    /// `attributes` (bit 3: LogAppendTime).
    pub attributes: i16,
    /// `producerId`.
    pub producer_id: i64,
    /// `producerEpoch`.
    pub producer_epoch: i16,
    /// `baseSequence`.
    pub base_sequence: i32,
    /// `crc` as stored.
    pub crc: u32,
    /// `recordsCount`.
    pub records: i32,
    /// The batch's bytes (`batchLength` + 12).
    pub bytes: u64,
}

impl BatchHead {
    /// The batch's last offset.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// Its timestamps are the broker's (LogAppendTime), not the producer's.
    pub fn log_append_time(&self) -> bool {
        self.attributes & 0x08 != 0
    }
}

/// Counts a record set of v2 batches: the walk of [`decode_record_set`]
/// with [`DecodeOptions::records_headers_only`] and the counting output
/// ([`Counter`]) instead of nodes — same batch framing, same limits and
/// message budget, a length-only source pushed onto `sources` for each
/// payload that decompressed. A compressed batch whose CRC-32C matches its
/// bytes is sized by what its codec's framing declares ([`payload_len`]).
/// `None` (with `sources` as it was) when the set is anything but complete
/// v2 batches with non-negative record counts and payloads that decompress
/// or are refused by the limit, optionally followed by a batch cut at the
/// end: legacy messages, unknown magic, negative or short lengths, corrupt
/// payloads. The caller then decodes the set with [`decode_record_set`].
pub fn count_record_set(
    data: &[u8],
    base: usize,
    opts: &DecodeOptions,
    sources: &mut Vec<ByteSource>,
) -> Option<SetCounts> {
    let before = sources.len();
    let mut ctx = Ctx::new(opts, sources);
    let mut out = Counter::default();
    walk_set(&mut ctx, data, base, 0, 0, false, &mut out);
    if out.failed {
        sources.truncate(before);
        return None;
    }
    Some(out.counts)
}

/// The counting output of the walk: [`SetCounts`] from batch headers, or
/// `failed` at the first thing that only a tree can show.
#[derive(Default)]
struct Counter {
    counts: SetCounts,
    failed: bool,
}

impl SetOutput for Counter {
    fn batch(&mut self, ctx: &mut Ctx<'_>, sub: cursor::Cur<'_>) -> bool {
        let whole = sub.r.buf();
        let mut c = cursor::Cur::new(whole, 0, 0);
        let read = fields::header(&mut c, None, &mut fields::Skip);
        let Some((h, _)) = read.filter(|(h, _)| h.count >= 0) else {
            self.failed = true;
            return false;
        };
        let out = &mut self.counts;
        let codec = (h.attributes & 0x07) as u8;
        out.heads.push(h.head);
        out.batches += 1;
        out.records = out.records.saturating_add(h.count as u64);
        out.codecs.add(codec, 1);
        if codec == 0 {
            out.plain_bytes += whole.len() as u64;
            return true;
        }
        let payload = whole.get(BATCH_HEADER_LEN..).unwrap_or_default();
        match ctx.count_payload(whole, codec, payload, sub.base + BATCH_HEADER_LEN) {
            Inflate::Done { len, .. } => {
                out.compressed += payload.len() as u64;
                out.decompressed += len as u64;
            }
            Inflate::TooLarge(_) => {}
            Inflate::Failed(_) => self.failed = true,
        }
        !self.failed
    }

    fn message(&mut self, _: &mut Ctx<'_>, _: cursor::Cur<'_>, _: u8, _: u32) -> bool {
        self.failed = true;
        false
    }

    fn partial(&mut self, _: &cursor::Cur<'_>, _: Option<usize>, _: Option<u8>, _: bool) {
        self.counts.partial += 1;
    }

    fn broken(&mut self, _: &cursor::Cur<'_>, _: Broken) {
        self.failed = true;
    }
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

const TOO_MANY_SOURCES: &str = "too many decompressed byte sources in one message";

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

impl<'o> Ctx<'o> {
    /// The state of a walk of one record set of a message whose sources so
    /// far are `sources`: the budget is what they leave.
    pub(crate) fn new(opts: &'o DecodeOptions, sources: &'o mut Vec<ByteSource>) -> Ctx<'o> {
        let held: usize = sources.iter().map(|s| s.len).sum();
        Ctx {
            opts,
            budget: opts
                .max_decompressed
                .saturating_mul(TOTAL_FACTOR)
                .saturating_sub(held),
            sources,
            crc_mismatches: 0,
        }
    }

    /// [`Ctx::inflate`] without the bytes, for the counting output: the
    /// compressed `payload` of `batch`, at `offset` in the message, sized by
    /// [`payload_len`] and pushed as a length-only source.
    fn count_payload(&mut self, batch: &[u8], codec: u8, payload: &[u8], offset: usize) -> Inflate {
        if self.sources.len() >= usize::from(u16::MAX) {
            return Inflate::Failed(TOO_MANY_SOURCES.into());
        }
        let limit = self.opts.max_decompressed.min(self.budget);
        let sizes = self.opts.batch_sizes.as_deref();
        let out = payload_len(batch, codec, payload, limit, sizes).map(|n| (Vec::new(), n, None));
        self.push(out, 0, offset, payload.len(), String::new())
    }

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
        if self.sources.len() >= usize::from(u16::MAX) {
            return Inflate::Failed(TOO_MANY_SOURCES.into());
        }
        let limit = self.opts.max_decompressed.min(self.budget);
        let out = if !keep {
            compression::decompressed_len(codec, data, limit).map(|s| (Vec::new(), s.len, s.note))
        } else {
            decompress(codec, data, limit).map(|o| {
                let len = o.data.len();
                (o.data, len, o.note)
            })
        };
        self.push(out, parent, offset, data.len(), name)
    }

    /// Pushes what a payload of `length` bytes at `offset` in source
    /// `parent` decompressed to as a new source named `name`.
    fn push(
        &mut self,
        out: Result<(Vec<u8>, usize, Option<&'static str>), InflateError>,
        parent: u16,
        offset: usize,
        length: usize,
        name: String,
    ) -> Inflate {
        match out {
            Ok((bytes, len, note)) => {
                self.budget = self.budget.saturating_sub(len);
                self.sources.push(ByteSource {
                    name,
                    data: bytes,
                    len,
                    parent,
                    parent_offset: offset,
                    parent_length: length,
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

/// What stops a walk that is not the end of its bytes: a batch or message
/// that cannot be read, after which nothing can be trusted.
pub(crate) enum Broken {
    /// The length field at the cursor is negative.
    Negative(i32),
    /// The cursor covers a batch whose magic byte is unknown, or that is too
    /// short to hold one; this many bytes are left in the set from its start.
    Unknown(usize),
}

/// Where the one walk of a record set ([`walk_set`]) puts what it finds:
/// nodes ([`SetOut`], the tree; with `records_json`, runs of records as
/// JSON) or counts ([`Counter`], `stats`). `batch` and `message` return
/// false to stop the walk.
pub(crate) trait SetOutput {
    /// A complete RecordBatch v2: `sub` covers exactly its bytes.
    fn batch(&mut self, ctx: &mut Ctx<'_>, sub: cursor::Cur<'_>) -> bool;
    /// A complete legacy message (`magic` 0 or 1) at wrapper depth `depth`.
    fn message(&mut self, ctx: &mut Ctx<'_>, sub: cursor::Cur<'_>, magic: u8, depth: u32) -> bool;
    /// The set ends inside the batch at `c` (`total`: its length, when the
    /// length field is whole); `nested` inside a decompressed wrapper.
    fn partial(
        &mut self,
        c: &cursor::Cur<'_>,
        total: Option<usize>,
        magic: Option<u8>,
        nested: bool,
    );
    /// The walk stops at `c` for `why`.
    fn broken(&mut self, c: &cursor::Cur<'_>, why: Broken);
}

/// The one walk of a record set: each batch or message framed by its
/// length field and told apart by its magic byte (offset 16), handed to
/// `out` in byte order. `nested` sets (inside a decompressed wrapper)
/// cannot have been cut by a broker, so a short tail there is an error.
pub(crate) fn walk_set<O: SetOutput>(
    ctx: &mut Ctx<'_>,
    data: &[u8],
    base: usize,
    source: u16,
    depth: u32,
    nested: bool,
    out: &mut O,
) {
    let mut c = cursor::Cur::new(data, base, source);
    while c.remaining() > 0 {
        let rest = c.r.rest();
        let size = rest
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(i32::from_be_bytes);
        let magic = rest.get(16).copied();
        let Some(size) = size else {
            return out.partial(&c, None, magic, nested);
        };
        let Ok(total) = usize::try_from(size).map(|s| s + 12) else {
            return out.broken(&c, Broken::Negative(size));
        };
        if total > rest.len() {
            return out.partial(&c, Some(total), magic, nested);
        }
        let left = rest.len();
        let Some(sub) = c.sub(total) else { return };
        let go_on = match magic {
            Some(2) => out.batch(ctx, sub),
            Some(m @ (0 | 1)) => out.message(ctx, sub, m, depth),
            _ => {
                out.broken(&sub, Broken::Unknown(left));
                false
            }
        };
        if !go_on {
            return;
        }
    }
}

/// Decodes a run of batches / messages into nodes: [`walk_set`] with the
/// tree's output.
pub(crate) fn decode_set(
    ctx: &mut Ctx<'_>,
    data: &[u8],
    base: usize,
    source: u16,
    depth: u32,
    nested: bool,
) -> SetOut {
    let mut out = SetOut::default();
    walk_set(ctx, data, base, source, depth, nested, &mut out);
    out
}

impl SetOutput for SetOut {
    fn batch(&mut self, ctx: &mut Ctx<'_>, sub: cursor::Cur<'_>) -> bool {
        let (node, records) = batch::decode_batch(ctx, sub);
        self.batches += 1;
        self.batch_records = self.batch_records.saturating_add(records);
        self.records = self.records.saturating_add(records);
        self.nodes.push(node);
        true
    }

    fn message(&mut self, ctx: &mut Ctx<'_>, sub: cursor::Cur<'_>, m: u8, depth: u32) -> bool {
        let (node, records) = legacy::decode_message(ctx, sub, self.messages as usize, m, depth);
        self.messages += 1;
        self.v0 |= m == 0;
        self.v1 |= m == 1;
        self.records = self.records.saturating_add(records);
        self.nodes.push(node);
        true
    }

    fn partial(
        &mut self,
        c: &cursor::Cur<'_>,
        total: Option<usize>,
        magic: Option<u8>,
        nested: bool,
    ) {
        self.nodes.push(partial(c, total, magic, nested));
        self.partial |= !nested;
    }

    fn broken(&mut self, c: &cursor::Cur<'_>, why: Broken) {
        let magic = c.r.rest().get(16).copied();
        let mut e = match why {
            Broken::Negative(size) => c.fail(
                "RecordBatch",
                "bytes",
                format!("length field {size} is negative"),
            ),
            Broken::Unknown(left) => {
                // Either a length too short to reach the magic byte, or a
                // magic Kafka never defined.
                let what = match magic {
                    Some(m) => format!("unknown record format (magic {m})"),
                    None => format!(
                        "length field {} is too short for any batch",
                        c.remaining().saturating_sub(12)
                    ),
                };
                let mut e = Node::new(
                    "RecordBatch",
                    "bytes",
                    Value::None,
                    c.abs(),
                    left,
                    Role::Malformed,
                );
                e.source = c.source;
                e.error = Some(what);
                e
            }
        };
        e.children = batch::size_nodes(c, magic);
        self.nodes.push(e);
    }
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
mod size_tests;
#[cfg(test)]
mod tests;
