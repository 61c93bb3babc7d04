//! The one reader of a RecordBatch v2's fields: its 61-byte header
//! ([`header`]) and each record ([`record`]: length, attributes, the deltas,
//! key, value, headers), generic over where the fields go ([`FieldOut`],
//! monomorphised: what an output does not take costs nothing).
//!
//! Place in the data path: `batch.rs` reads each batch's header and its
//! records through here into nodes (`batch::Nodes`); with
//! `DecodeOptions::records_json` a batch's header and each run of clean
//! records are read through here as JSON (`json::Json`), each record
//! checked first by the output that keeps nothing ([`Skip`]), which also
//! reads the headers the counting output of the walk counts.
//!
//! Invariants: every output sees the same reads in the same order, so the
//! same bytes are accepted and each field has the same span whoever takes
//! it; a read that fails moves the cursor to the end of its slice, and the
//! reader stops that record (or header) there. A problem is handed to the
//! output as a node to make ([`FieldOut::problem`]): an output that keeps
//! only clean records ignores it, and the record is not clean.

use super::cursor::{Cur, Int};
use crate::kafka::tree::json::{self, Pad};
use crate::kafka::tree::{Deferred, Node, Role, MAX_RESERVED_CHILDREN};

/// What a field holds on the wire.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An integer of this wire type.
    Int(Int),
    /// A key, value or header value: text when printable, else bytes.
    Bytes,
    /// A header key: always text (invalid UTF-8 replaced).
    String,
}

/// One field of a batch header or a record: its name, wire type, role and
/// description as its node shows them, and its name and type as its node's
/// JSON spells them (the text between the length and the offset, and
/// between the offset, or source, and the value).
pub(super) struct Field {
    pub(super) name: &'static str,
    pub(super) ty: &'static str,
    pub(super) kind: Kind,
    pub(super) role: Role,
    pub(super) about: &'static str,
    pub(super) json_name: Pad,
    pub(super) json_ty: Pad,
    /// As its compact text line spells them: the name with `: `, and the
    /// type between two spaces and the span's `[`.
    pub(super) text_name: Pad,
    pub(super) text_ty: Pad,
}

impl Field {
    pub(super) const fn new(
        name: &'static str,
        kind: Kind,
        role: Role,
        about: &'static str,
    ) -> Field {
        let ty = match kind {
            Kind::Int(w) => w.name(),
            Kind::Bytes => "bytes",
            Kind::String => "string",
        };
        // Checked when the constants are made: a JSON text is never cut.
        assert!(name.len() <= 28 && ty.len() <= 29, "a Pad holds 48 bytes");
        Field {
            name,
            ty,
            kind,
            role,
            about,
            json_name: Pad::new(&[b",\"name\":\"", name.as_bytes(), b"\",\"offset\":"]),
            json_ty: Pad::new(&[b",\"type\":\"", ty.as_bytes(), b"\",\"value\":"]),
            text_name: Pad::new(&[name.as_bytes(), b": "]),
            text_ty: Pad::new(&[b"  ", ty.as_bytes(), b"  ["]),
        }
    }
}

/// Field constants, one a line: `CONST "name" Kind "about"` for the role.
macro_rules! fields {
    ($role:ident: $($id:ident $name:literal $kind:ident$(($w:ident))? $about:literal)*) => {
        $(const $id: Field = Field::new($name, Kind::$kind$((Int::$w))?, Role::$role, $about);)*
    };
}
pub(super) use fields;

fields! { RecordBatch:
    BASE_OFFSET "baseOffset" Int(I64)
        "offset of the batch's first record; each record adds its offsetDelta"
    BATCH_LENGTH "batchLength" Int(I32) "how many bytes of batch follow this field"
    LEADER_EPOCH "partitionLeaderEpoch" Int(I32)
        "leader epoch the broker stamps on append; producers send -1"
    MAGIC "magic" Int(I8) "record format version: 2 is the RecordBatch"
    CRC "crc" Int(U32) ""
    BATCH_ATTRIBUTES "attributes" Int(I16)
        "bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control, 6 delete horizon"
    LAST_OFFSET_DELTA "lastOffsetDelta" Int(I32)
        "offsetDelta of the batch's last record (-1 when it holds none)"
    BASE_TIMESTAMP "baseTimestamp" Int(I64)
        "timestamp of the first record, in ms since the epoch; records add their timestampDelta"
    MAX_TIMESTAMP "maxTimestamp" Int(I64) "the latest record timestamp in the batch (ms)"
    PRODUCER_ID "producerId" Int(I64)
        "idempotent or transactional producer id; -1 for plain producers"
    PRODUCER_EPOCH "producerEpoch" Int(I16) "epoch of that producer id; -1 when unused"
    BASE_SEQUENCE "baseSequence" Int(I32)
        "producer sequence number of the first record; -1 when unused"
    RECORDS_COUNT "recordsCount" Int(I32) "how many records the batch holds"
}

fields! { Record:
    LENGTH "length" Int(Varint) "bytes in this record after the length field"
    ATTRIBUTES "attributes" Int(I8) "per-record attributes; none are defined, 0"
    TIMESTAMP_DELTA "timestampDelta" Int(Varlong)
        "this record's timestamp minus the batch's baseTimestamp (ms)"
    OFFSET_DELTA "offsetDelta" Int(Varint) "this record's offset minus the batch's baseOffset"
    KEY_LENGTH "keyLength" Int(Varint) "key size in bytes, -1 for a null key"
    KEY "key" Bytes "the record key"
    VALUE_LENGTH "valueLength" Int(Varint)
        "value size in bytes, -1 for a null value (a tombstone)"
    VALUE "value" Bytes "the record value"
    HEADERS_COUNT "headersCount" Int(Varint) "how many headers follow"
    HEADER_KEY_LENGTH "headerKeyLength" Int(Varint) "header key size in bytes"
    HEADER_KEY "headerKey" String "the header key (UTF-8)"
    HEADER_VALUE_LENGTH "headerValueLength" Int(Varint) "header value size in bytes, -1 for null"
    HEADER_VALUE "headerValue" Bytes "the header value"
}

/// What an integer field's node shows after its value, or what is wrong
/// with it.
#[derive(Clone, Copy)]
pub(super) enum Detail {
    None,
    /// A length of -1.
    Null,
    /// A time in ms since the epoch, shown as a date when plausible.
    Time(i64),
    /// An offsetDelta: the record's offset (`offset N`, the record's value too).
    Offset(i64),
    /// A batch's non-zero attributes, in words.
    Attributes(i16),
    /// The batch CRC and what checking it found.
    Crc(Crc),
    /// A count or length that is negative: an error.
    Negative,
    /// A record length that is negative or exceeds the `rem` bytes that
    /// remain: an error.
    RecordLength(usize),
}

/// What the stored CRC-32C of a batch was found to be.
#[derive(Clone, Copy)]
pub(super) enum Crc {
    /// It matches the bytes from the attributes on.
    Valid,
    /// It does not: the CRC computed.
    Mismatch(u32),
    /// Not checked (a partial batch, or an output that does not ask).
    Unchecked,
}

/// Where the reader puts the fields it reads (by default, nowhere). A
/// record's fields come between [`FieldOut::open_record`] and
/// [`FieldOut::close_record`], a header's between `open_header` and
/// `close_header`; a batch header's come alone.
pub(super) trait FieldOut {
    /// Whether the batch CRC is computed (else it is [`Crc::Unchecked`]).
    const CHECK_CRC: bool = true;
    /// An integer field `f` read whole at `at` (`len` bytes).
    fn int(&mut self, _f: &'static Field, _v: i64, _d: Detail, _at: usize, _len: usize) {}
    /// A content field `f` (`data`, at `at`).
    fn content(&mut self, _f: &'static Field, _data: &[u8], _at: usize) {}
    /// Something that is not a field: an error node (made only by an
    /// output that shows problems).
    fn problem(&mut self, _make: impl FnOnce() -> Node) {}
    /// A record's fields begin.
    fn open_record(&mut self) {}
    /// Record `i` ends: `at`, `len` its span; `ok` when every field read.
    fn close_record(&mut self, _i: u64, _ok: bool, _at: usize, _len: usize) {}
    /// Room for `n` headers of the record.
    fn reserve_headers(&mut self, _n: usize) {}
    /// A record header's fields begin.
    fn open_header(&mut self) {}
    /// Header `j` ends: its key when both its fields read.
    fn close_header(&mut self, _j: u64, _key: Option<&[u8]>, _at: usize, _len: usize) {}
    /// The key just given is a control record's (`data`): its type, when it reads.
    fn control_key(&mut self, _data: &[u8]) -> Option<i16> {
        None
    }
    /// The value just given (`data`) is that of a control record of type `t`.
    fn control_value(&mut self, _t: i16, _data: &[u8]) {}
}

/// The output that keeps nothing: a header read for what the counts need
/// from it, a record read to know whether it is clean.
pub(super) struct Skip;

impl FieldOut for Skip {
    const CHECK_CRC: bool = false;
}

/// The header fields the records depend on.
pub(crate) struct Hdr {
    pub(super) base_offset: i64,
    pub(super) attributes: i16,
    pub(super) base_ts: i64,
    pub(super) count: i32,
    /// The rest of the header, as lag, record age and delivery read it.
    pub(super) head: super::BatchHead,
}

impl Hdr {
    /// What the records of a run need: a run's batch is not a control batch.
    pub(super) fn of_run(d: &Deferred) -> Hdr {
        Hdr {
            base_offset: d.base_offset,
            attributes: 0,
            base_ts: d.base_ts,
            count: 0,
            head: super::BatchHead::default(),
        }
    }

    /// A control batch (attributes bit 5).
    pub(super) fn control(&self) -> bool {
        self.attributes & 0x20 != 0
    }
}

/// Reads integer field `f` at `c`: its value and where it starts. On a
/// failed read the output is given the error node and `c` moves to the end.
#[inline(always)]
fn read<O: FieldOut>(c: &mut Cur<'_>, f: &'static Field, o: &mut O) -> Option<(i64, usize)> {
    let at = c.abs();
    // Only integer fields are read here (the constant `f` folds this away).
    let Kind::Int(w) = f.kind else { return None };
    match w.read(&mut c.r) {
        Ok(v) => Some((v, at)),
        Err(e) => {
            o.problem(|| c.fail(f.name, f.ty, format!("{}: {e}", f.name)));
            c.r.skip_rest();
            None
        }
    }
}

/// Reads integer field `f` at `c` and gives it to `o` with the detail
/// `detail` makes of its value.
#[inline(always)]
fn int<O: FieldOut>(
    c: &mut Cur<'_>,
    f: &'static Field,
    o: &mut O,
    detail: impl FnOnce(i64) -> Detail,
) -> Option<i64> {
    let (v, at) = read(c, f, o)?;
    o.int(f, v, detail(v), at, c.abs() - at);
    Some(v)
}

fn plain(_: i64) -> Detail {
    Detail::None
}

/// A count's detail: an error when it is negative.
fn non_negative(n: i64) -> Detail {
    if n < 0 {
        Detail::Negative
    } else {
        Detail::None
    }
}

/// Reads the 61-byte header at `c`. `whole` is the complete batch when the
/// CRC can be checked (`None` for a partial batch). Returns the header and
/// whether its CRC was found not to match; `None` when a field does not read.
pub(super) fn header<O: FieldOut>(
    c: &mut Cur<'_>,
    whole: Option<&[u8]>,
    o: &mut O,
) -> Option<(Hdr, bool)> {
    let base_offset = int(c, &BASE_OFFSET, o, plain)?;
    let batch_length = int(c, &BATCH_LENGTH, o, plain)?;
    int(c, &LEADER_EPOCH, o, plain)?;
    int(c, &MAGIC, o, plain)?;
    let (stored, at) = read(c, &CRC, o)?;
    let crc = match whole.filter(|_| O::CHECK_CRC).and_then(|w| w.get(21..)) {
        None => Crc::Unchecked,
        Some(region) => match crc32c::crc32c(region) {
            calc if i64::from(calc) == stored => Crc::Valid,
            calc => Crc::Mismatch(calc),
        },
    };
    o.int(&CRC, stored, Detail::Crc(crc), at, c.abs() - at);
    let attributes = int(c, &BATCH_ATTRIBUTES, o, |a| match a {
        // The seed documents show a plain `0`: words only when a bit is set.
        0 => Detail::None,
        a => Detail::Attributes(a as i16),
    })? as i16;
    let last_offset_delta = int(c, &LAST_OFFSET_DELTA, o, plain)?;
    let base_ts = int(c, &BASE_TIMESTAMP, o, Detail::Time)?;
    let max_timestamp = int(c, &MAX_TIMESTAMP, o, Detail::Time)?;
    let producer_id = int(c, &PRODUCER_ID, o, plain)?;
    let producer_epoch = int(c, &PRODUCER_EPOCH, o, plain)?;
    let base_sequence = int(c, &BASE_SEQUENCE, o, plain)?;
    let count = int(c, &RECORDS_COUNT, o, non_negative)? as i32;
    // The widths are the fields' own (the casts keep every value).
    let h = Hdr {
        base_offset,
        attributes,
        base_ts,
        count,
        head: super::BatchHead {
            base_offset,
            last_offset_delta: last_offset_delta as i32,
            max_timestamp,
            attributes,
            producer_id,
            producer_epoch: producer_epoch as i16,
            base_sequence: base_sequence as i32,
            crc: stored as u32,
            records: count,
            bytes: (batch_length as u64).saturating_add(12),
        },
    };
    Some((h, matches!(crc, Crc::Mismatch(_))))
}

/// What reading a record found.
pub(super) struct Read {
    /// The next record can be read (this one's length could be trusted).
    pub(super) go_on: bool,
    /// Every field read and every byte inside the length was claimed.
    pub(super) clean: bool,
}

/// Reads record `i` of the batch `h` at `c` (which moves past it) into `o`.
pub(super) fn record<O: FieldOut>(c: &mut Cur<'_>, i: u64, h: &Hdr, o: &mut O) -> Read {
    let start = c.pos();
    let mut read = Read {
        go_on: false,
        clean: false,
    };
    let mut ok = false;
    o.open_record();
    if let Some((len, at)) = self::read(c, &LENGTH, o) {
        let rem = c.remaining();
        let end = c.abs();
        match usize::try_from(len).ok().filter(|&l| l <= rem) {
            None => {
                o.int(&LENGTH, len, Detail::RecordLength(rem), at, end - at);
                if rem > 0 {
                    o.problem(|| {
                        let mut u = c.fail("undecoded", "bytes", String::new());
                        u.error = None;
                        u
                    });
                }
                c.r.skip_rest();
            }
            Some(l) => {
                o.int(&LENGTH, len, Detail::None, at, end - at);
                if let Some(mut b) = c.sub(l) {
                    read.go_on = true;
                    ok = body(&mut b, h, o).is_some();
                    if b.remaining() == 0 {
                        read.clean = ok;
                    } else {
                        o.problem(|| {
                            let mut e = b.fail("unclaimed", "bytes", String::new());
                            e.error = ok.then(|| {
                                format!(
                                    "{} bytes inside the record's length that no field claims",
                                    b.remaining()
                                )
                            });
                            e
                        });
                    }
                }
            }
        }
    }
    o.close_record(i, ok, c.base + start, c.pos() - start);
    read
}

/// The fields of a record after its length; `None` at the first that
/// does not read.
#[inline]
fn body<O: FieldOut>(b: &mut Cur<'_>, h: &Hdr, o: &mut O) -> Option<()> {
    int(b, &ATTRIBUTES, o, plain)?;
    let base_ts = h.base_ts;
    int(b, &TIMESTAMP_DELTA, o, |tsd| {
        Detail::Time(if base_ts >= 0 {
            base_ts.checked_add(tsd).unwrap_or(-1)
        } else {
            -1
        })
    })?;
    let base_offset = h.base_offset;
    int(b, &OFFSET_DELTA, o, |od| {
        Detail::Offset(base_offset.wrapping_add(od))
    })?;
    let key = sized(b, (&KEY_LENGTH, &KEY), true, o)?;
    let control = match key {
        Some(data) if h.control() => o.control_key(data),
        _ => None,
    };
    let value = sized(b, (&VALUE_LENGTH, &VALUE), true, o)?;
    if let (Some(data), Some(t)) = (value, control) {
        o.control_value(t, data);
    }
    let count = int(b, &HEADERS_COUNT, o, non_negative)?;
    if count < 0 {
        return None;
    }
    // Each header takes at least two bytes, so the loop ends with the record.
    o.reserve_headers(
        usize::try_from(count)
            .unwrap_or(0)
            .min(b.remaining() / 2)
            .min(MAX_RESERVED_CHILDREN),
    );
    for j in 0..count as u64 {
        let start = b.pos();
        o.open_header();
        let key = sized(b, (&HEADER_KEY_LENGTH, &HEADER_KEY), false, o).and_then(|key| {
            sized(b, (&HEADER_VALUE_LENGTH, &HEADER_VALUE), true, o)?;
            Some(key.unwrap_or_default())
        });
        o.close_header(j, key, b.base + start, b.pos() - start);
        key?;
    }
    Some(())
}

/// Reads a varint length and the content it announces: `Some(None)` is a
/// null (-1, when `nullable`), `Some(Some(data))` the content.
#[inline(always)]
fn sized<'a, O: FieldOut>(
    b: &mut Cur<'a>,
    (length, content): (&'static Field, &'static Field),
    nullable: bool,
    o: &mut O,
) -> Option<Option<&'a [u8]>> {
    let (len, at) = read(b, length, o)?;
    let end = b.abs();
    if len == -1 && nullable {
        o.int(length, len, Detail::Null, at, end - at);
        return Some(None);
    }
    let Ok(n) = usize::try_from(len) else {
        o.int(length, len, Detail::Negative, at, end - at);
        return None;
    };
    o.int(length, len, Detail::None, at, end - at);
    match b.r.take(n) {
        Ok(data) => {
            o.content(content, data, end);
            Some(Some(data))
        }
        Err(e) => {
            o.problem(|| b.fail(content.name, content.ty, format!("{}: {e}", content.name)));
            b.r.skip_rest();
            None
        }
    }
}

/// `,"source":N` for a source other than the message, else nothing: what
/// a node's JSON holds between its offset and its type.
pub(super) fn source_text(source: u16) -> Pad {
    if source == 0 {
        return Pad::new(&[]);
    }
    let mut digits = [0u8; 20];
    Pad::new(&[b",\"source\":", json::u64_text(&mut digits, source.into())])
}
