//! The compact text output of the fields' reader (`fields.rs`): a run of
//! clean records written straight to `print -V`'s lines, without nodes
//! ([`Deferred::write_text`](crate::kafka::tree::Deferred::write_text)).
//!
//! Place in the data path: a tree decoded with `records_deferred` holds a
//! run of clean records as one [`Value::Records`] node; `tree::walk_node`
//! asks the run for its compact lines, and [`write_text_run`] reads the
//! records again with the [`Text`] output, appending the lines
//! `tree::write_text_in` writes for the `Record[i]` nodes `batch::Nodes`
//! makes of the same reads: `name: value  type  [#source:0xoffset+length]`,
//! two spaces a level, the description after it with `-VV`.
//!
//! Invariants: the lines equal the nodes' byte for byte (the tests compare
//! both on every capture and on generated batches); one reader gives every
//! output its fields; nothing is sized from a wire length (the text grows
//! with the bytes written, which follow the bytes read).

use super::cursor::{content_value, iso8601_bytes, Cur, Int, MAX_STR};
use super::fields::{self, Detail, Field, FieldOut, Hdr, Kind};
use crate::kafka::tree::json::{self, Pad};
use crate::kafka::tree::{self, Deferred, Node, Value};

/// Appends the compact lines of the records of a run, read from `bytes`
/// (the run's span, at `offset` in source `source`), each line starting
/// with `prefix` (the indent and the guides of the records' parent),
/// descriptions after them when `about`; its buffers taken from `pool`
/// and given back (a run is often a handful of records: making them anew
/// for each cost about 2 % of `print -V`). False (with `out` as it was)
/// when `bytes` are not records that read cleanly.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_text_run(
    d: &Deferred,
    bytes: &[u8],
    offset: usize,
    source: u16,
    prefix: &str,
    about: bool,
    out: &mut Vec<u8>,
    pool: &mut Vec<Vec<u8>>,
) -> bool {
    let mark = out.len();
    let h = Hdr::of_run(d);
    let mut c = Cur::new(bytes, offset, source);
    let mut w = Text::new(out, prefix, source, about, pool);
    // A record takes a byte at least: the span's bytes end the loop.
    let mut i = d.first;
    let mut ok = c.remaining() > 0;
    while ok && c.remaining() > 0 {
        w.index = i;
        ok = fields::record(&mut c, i, &h, &mut w).clean && !w.failed;
        i = i.wrapping_add(1);
    }
    w.give_back(pool);
    if !ok {
        out.truncate(mark);
    }
    ok
}

/// The output of the fields' reader that writes compact lines, as bytes
/// (every piece is UTF-8: the static names, ASCII made here, and texts
/// made by `tree`). A record's own line shows its span and offset, which
/// its length and offsetDelta fields tell: its first fields wait in `rec`
/// until then, when its line and they are written, and the rest (its key,
/// value and headers, most of its text) go to `out` as they come; a
/// header's fields wait in `hdr` for its key, which its line shows.
struct Text<'o> {
    out: &'o mut Vec<u8>,
    /// The index of the record being read.
    index: u64,
    /// Where the open record is.
    state: Rec,
    /// A record's span differed from the one its line showed: the run is
    /// not written this way.
    failed: bool,
    /// The lines' leads: a record's (`prefix` and two spaces), its fields'
    /// and headers', its headers' fields'.
    record_lead: Lead,
    field_lead: Lead,
    header_field_lead: Lead,
    /// What a span starts with after its `[`: `0x`, after `#N:` for a
    /// source other than the message.
    source: Pad,
    about: bool,
    /// The open record's field lines written before its own line, and
    /// the open header's.
    rec: Vec<u8>,
    hdr: Vec<u8>,
    in_header: bool,
    /// The open record's summary (`offset N`).
    summary: Vec<u8>,
    /// Scratch for a value `tree` writes (a content that is not plain text).
    scratch: String,
}

impl<'o> Text<'o> {
    fn new(
        out: &'o mut Vec<u8>,
        prefix: &str,
        source: u16,
        about: bool,
        pool: &mut Vec<Vec<u8>>,
    ) -> Self {
        let mut take = || {
            let mut b = pool.pop().unwrap_or_default();
            b.clear();
            b
        };
        let mut lead = |n: usize| {
            let mut b = take();
            b.extend_from_slice(prefix.as_bytes());
            b.resize(b.len() + 2 * n, b' ');
            Lead::new(b)
        };
        let (record_lead, field_lead, header_field_lead) = (lead(1), lead(2), lead(3));
        let (rec, hdr, summary) = (take(), take(), take());
        // Empty: UTF-8.
        let scratch = String::from_utf8(take()).unwrap_or_default();
        let mut src = take();
        if source != 0 {
            src.push(b'#');
            json::u64(&mut src, source.into());
            src.push(b':');
        }
        src.extend_from_slice(b"0x");
        let source = Pad::new(&[&src]);
        pool.push(src);
        Text {
            out,
            index: 0,
            state: Rec::Opened,
            failed: false,
            record_lead,
            field_lead,
            header_field_lead,
            source,
            about,
            rec,
            hdr,
            in_header: false,
            summary,
            scratch,
        }
    }

    /// Gives the buffers back to `pool` for the next run, but those a long
    /// value or header grew.
    fn give_back(self, pool: &mut Vec<Vec<u8>>) {
        let bufs = [
            self.record_lead.bytes,
            self.field_lead.bytes,
            self.header_field_lead.bytes,
            self.rec,
            self.hdr,
            self.summary,
            self.scratch.into_bytes(),
        ];
        pool.extend(
            bufs.into_iter()
                .filter(|b| b.capacity() <= tree::KEPT_BUFFER),
        );
    }

    /// The current field's line, started with its lead, its name and `: `;
    /// then the source text, whether descriptions show, the scratch and
    /// the record's summary.
    #[inline(always)]
    fn start(&mut self, name: &Pad) -> Line<'_> {
        let (s, lead) = match (self.in_header, self.state) {
            (true, _) => (&mut self.hdr, &self.header_field_lead),
            (false, Rec::Written(..)) => (&mut *self.out, &self.field_lead),
            (false, _) => (&mut self.rec, &self.field_lead),
        };
        lead.put(s);
        name.put(s);
        (
            s,
            &self.source,
            self.about,
            &mut self.scratch,
            &mut self.summary,
        )
    }
}

impl Text<'_> {
    /// Writes the open record's line, showing the span (`at`, `len`), and
    /// the field lines that waited for it.
    fn write_record_line(&mut self, at: usize, len: usize) {
        let l = &mut *self.out;
        self.record_lead.put(l);
        l.extend_from_slice(b"Record[");
        json::u64(l, self.index);
        l.push(b']');
        if !self.summary.is_empty() {
            l.extend_from_slice(b": ");
            l.extend_from_slice(&self.summary);
        }
        let about = "one record: deltas against the batch header, key, value, headers";
        tail(
            l,
            &RECORD_TY,
            &self.source,
            at,
            len,
            self.about.then_some(about),
        );
        self.out.extend_from_slice(&self.rec);
        self.rec.clear();
    }
}

/// Appends `data` as the text of a string (`put_value` of its lossy
/// UTF-8 as a `Value::Str`); `plain`, [`json::printable_ascii_quotes`] of
/// it: printable ASCII, the usual content, is quoted as it is (`Debug`'s
/// plain form, `"` and `\` escaped), without making the string.
fn put_str(s: &mut Vec<u8>, data: &[u8], plain: Option<usize>, scratch: &mut String) {
    match plain {
        Some(quotes) => {
            s.push(b'"');
            json::backslashed_counted(s, data, quotes);
            s.push(b'"');
        }
        None => {
            let value = Value::Str(String::from_utf8_lossy(data).into_owned());
            tree::put_value(s, &value, None, scratch);
        }
    }
}

/// Bytes a line's lead is put with at once ([`Lead::put`]).
const LEAD_COPY: usize = 64;

/// A line's lead, its bytes padded to [`LEAD_COPY`]: putting one is a copy
/// of a fixed size cut back to the lead's length ([`tree::put_cut`]), not a
/// call to `memcpy` for a few dozen bytes on every line of every record. A longer lead
/// (deep guides) is copied as it is.
struct Lead {
    bytes: Vec<u8>,
    len: usize,
}

impl Lead {
    fn new(mut bytes: Vec<u8>) -> Lead {
        let len = bytes.len();
        if len < LEAD_COPY {
            bytes.resize(LEAD_COPY, b' ');
        }
        Lead { bytes, len }
    }

    /// Appends the lead.
    #[inline(always)]
    fn put(&self, out: &mut Vec<u8>) {
        match self.bytes.first_chunk::<LEAD_COPY>() {
            Some(all) if self.len <= LEAD_COPY => tree::put_cut(out, all, self.len),
            _ => out.extend_from_slice(self.bytes.get(..self.len).unwrap_or_default()),
        }
    }
}

/// Where a [`Text`]'s open record is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rec {
    /// Opened: its length comes first.
    Opened,
    /// Its span (offset, length), known from its length field.
    Sized(usize, usize),
    /// Its line written with this span: its fields go straight out.
    Written(usize, usize),
}

/// [`Text::start`]'s line and what writing it takes.
type Line<'a> = (
    &'a mut Vec<u8>,
    &'a Pad,
    bool,
    &'a mut String,
    &'a mut Vec<u8>,
);

/// A record's line's type with what goes around it ([`Field::text_ty`]).
const RECORD_TY: Pad = Pad::new(&[b"  Record  ["]);
/// A header's.
const HEADER_TY: Pad = Pad::new(&[b"  Header  ["]);

/// Appends `  type  [#N:0xoffset+length]` (`ty`: up to the `[`; `source`:
/// from `#N:` to `0x`), the description when there is one to show, and the
/// line's end.
fn tail(
    s: &mut Vec<u8>,
    ty: &Pad,
    source: &Pad,
    offset: usize,
    length: usize,
    about: Option<&str>,
) {
    ty.put(s);
    source.put(s);
    tree::put_hex(s, offset as u64);
    s.push(b'+');
    json::u64(s, length as u64);
    s.push(b']');
    if let Some(a) = about.map(str::trim_end).filter(|a| !a.is_empty()) {
        s.extend_from_slice(b"  ");
        s.extend_from_slice(a.as_bytes());
    }
    s.push(b'\n');
}

impl FieldOut for Text<'_> {
    fn int(&mut self, f: &'static Field, v: i64, d: Detail, at: usize, len: usize) {
        if let (Rec::Opened, Detail::None) = (self.state, d) {
            // The record's length: its span is the field's and the bytes it counts.
            if let Ok(n) = usize::try_from(v) {
                self.state = Rec::Sized(at, len.saturating_add(n));
            }
        }
        let offset = matches!(d, Detail::Offset(_));
        let (s, source, about, _, summary) = self.start(&f.text_name);
        // As `Int::value` shows it: an unsigned 32-bit integer by its bits.
        match f.kind {
            Kind::Int(Int::U32) => json::u64(s, v as u64),
            _ => json::i64(s, v),
        }
        let detail = |s: &mut Vec<u8>, t: &[u8]| {
            s.extend_from_slice(b" (");
            s.extend_from_slice(t);
            s.push(b')');
        };
        match d {
            Detail::Null => detail(s, b"null"),
            Detail::Time(ms) => {
                if let Some(t) = iso8601_bytes(ms) {
                    detail(s, &t);
                }
            }
            Detail::Offset(o) => {
                summary.clear();
                summary.extend_from_slice(b"offset ");
                json::i64(summary, o);
                detail(s, summary);
            }
            Detail::Attributes(a) => detail(s, super::batch::attributes_detail(a).as_bytes()),
            // A batch header's or an error's: not in a run of clean records.
            Detail::None | Detail::Crc(_) | Detail::Negative | Detail::RecordLength(_) => {}
        }
        tail(s, &f.text_ty, source, at, len, about.then_some(f.about));
        // The record's offset: its line can be written, before its fields.
        if let (true, false, Rec::Sized(at, len)) = (offset, self.in_header, self.state) {
            self.write_record_line(at, len);
            self.state = Rec::Written(at, len);
        }
    }

    fn content(&mut self, f: &'static Field, data: &[u8], at: usize) {
        let string = f.kind == Kind::String;
        let (s, source, about, scratch, _) = self.start(&f.text_name);
        let plain = json::printable_ascii_quotes(data);
        if string || (plain.is_some() && data.len() <= MAX_STR) {
            put_str(s, data, plain, scratch);
        } else {
            tree::put_value(s, &content_value(data), None, scratch);
        }
        tail(
            s,
            &f.text_ty,
            source,
            at,
            data.len(),
            about.then_some(f.about),
        );
    }

    /// Problems make a record unclean: nothing to write.
    fn problem(&mut self, _: impl FnOnce() -> Node) {}

    fn open_record(&mut self) {
        self.rec.clear();
        self.summary.clear();
        self.state = Rec::Opened;
    }

    fn close_record(&mut self, i: u64, ok: bool, at: usize, len: usize) {
        // A record that is not clean fails the run: nothing more to write.
        if !ok {
            return;
        }
        match self.state {
            // Its line is out: it must have shown this record's span.
            Rec::Written(a, l) => self.failed |= (a, l) != (at, len),
            _ => {
                self.index = i;
                self.write_record_line(at, len);
            }
        }
    }

    fn open_header(&mut self) {
        self.in_header = true;
        self.hdr.clear();
    }

    fn close_header(&mut self, j: u64, key: Option<&[u8]>, at: usize, len: usize) {
        self.in_header = false;
        let Some(key) = key else {
            return;
        };
        let rec = match self.state {
            Rec::Written(..) => &mut *self.out,
            _ => &mut self.rec,
        };
        self.field_lead.put(rec);
        rec.extend_from_slice(b"Header[");
        json::u64(rec, j);
        rec.extend_from_slice(b"]: ");
        // A string: quoted, never empty.
        put_str(
            rec,
            key,
            json::printable_ascii_quotes(key),
            &mut self.scratch,
        );
        let about = "a key/value pair attached to the record";
        tail(
            rec,
            &HEADER_TY,
            &self.source,
            at,
            len,
            self.about.then_some(about),
        );
        rec.extend_from_slice(&self.hdr);
    }
}

#[cfg(test)]
mod tests {
    use super::Lead;

    #[test]
    fn a_lead_is_put_as_it_was_made_whatever_its_length() {
        for n in [0, 2, 30, 63, 64, 65, 130] {
            // Guides that are not spaces, to see where the padding would show.
            let made: Vec<u8> = b"|+-".iter().copied().cycle().take(n).collect();
            let lead = Lead::new(made.clone());
            let mut out = b"ab".to_vec();
            lead.put(&mut out);
            lead.put(&mut out);
            assert_eq!(out, [&b"ab"[..], &made, &made].concat(), "{n}");
        }
    }
}
