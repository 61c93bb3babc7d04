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
use crate::kafka::tree::{self, json, Deferred, Node, Value};

/// Appends the compact lines of the records of a run, read from `bytes`
/// (the run's span, at `offset` in source `source`), each line starting
/// with `prefix` (the indent and the guides of the records' parent),
/// descriptions after them when `about`. False (with `out` as it was)
/// when `bytes` are not records that read cleanly.
pub(super) fn write_text_run(
    d: &Deferred,
    bytes: &[u8],
    offset: usize,
    source: u16,
    prefix: &str,
    about: bool,
    out: &mut String,
) -> bool {
    let mark = out.len();
    // The text is about four times the records' bytes (more for tiny ones):
    // room for most of it at once.
    out.reserve(bytes.len().saturating_mul(4));
    let h = Hdr::of_run(d);
    let mut c = Cur::new(bytes, offset, source);
    let mut w = Text::new(out, prefix, source, about);
    // A record takes a byte at least: the span's bytes end the loop.
    let mut i = d.first;
    let mut ok = c.remaining() > 0;
    while ok && c.remaining() > 0 {
        ok = fields::record(&mut c, i, &h, &mut w).clean;
        i = i.wrapping_add(1);
    }
    if !ok {
        out.truncate(mark);
    }
    ok
}

/// The output of the fields' reader that writes compact lines, as bytes
/// (every piece is UTF-8: the static names, ASCII made here, and texts
/// made by `tree`): a record's fields (and its headers') wait in `rec`
/// until the record is closed, when its own line, which shows what they
/// hold, is written before them.
struct Text<'o> {
    out: &'o mut String,
    /// The lines' leads: a record's (`prefix` and two spaces), its fields'
    /// and headers', its headers' fields'.
    record_lead: Vec<u8>,
    field_lead: Vec<u8>,
    header_field_lead: Vec<u8>,
    /// `#N:` for a source other than the message.
    source: Vec<u8>,
    about: bool,
    /// The open record's line and field lines, and the open header's.
    line: Vec<u8>,
    rec: Vec<u8>,
    hdr: Vec<u8>,
    in_header: bool,
    /// The open record's summary (`offset N`).
    summary: Vec<u8>,
    /// Scratch for a value `tree` writes (a content that is not plain text).
    scratch: String,
}

impl<'o> Text<'o> {
    fn new(out: &'o mut String, prefix: &str, source: u16, about: bool) -> Self {
        let lead = |n: usize| format!("{prefix}{}", "  ".repeat(n)).into_bytes();
        let mut src = Vec::new();
        if source != 0 {
            src.push(b'#');
            json::u64(&mut src, source.into());
            src.push(b':');
        }
        Text {
            out,
            record_lead: lead(1),
            field_lead: lead(2),
            header_field_lead: lead(3),
            source: src,
            about,
            line: Vec::with_capacity(128),
            rec: Vec::with_capacity(1024),
            hdr: Vec::new(),
            in_header: false,
            summary: Vec::new(),
            scratch: String::new(),
        }
    }

    /// The current field's line, started with its lead, its name and `: `;
    /// then the source text, whether descriptions show, the scratch and
    /// the record's summary.
    fn start(&mut self, name: &str) -> Line<'_> {
        let (s, lead) = if self.in_header {
            (&mut self.hdr, self.header_field_lead.as_slice())
        } else {
            (&mut self.rec, self.field_lead.as_slice())
        };
        s.extend_from_slice(lead);
        s.extend_from_slice(name.as_bytes());
        s.extend_from_slice(b": ");
        (
            s,
            self.source.as_slice(),
            self.about,
            &mut self.scratch,
            &mut self.summary,
        )
    }
}

/// [`Text::start`]'s line and what writing it takes.
type Line<'a> = (
    &'a mut Vec<u8>,
    &'a [u8],
    bool,
    &'a mut String,
    &'a mut Vec<u8>,
);

/// Appends `  type  [#N:0xoffset+length]`, the description when there is
/// one to show, and the line's end.
fn tail(
    s: &mut Vec<u8>,
    ty: &str,
    source: &[u8],
    offset: usize,
    length: usize,
    about: Option<&str>,
) {
    s.extend_from_slice(b"  ");
    s.extend_from_slice(ty.as_bytes());
    s.extend_from_slice(b"  [");
    s.extend_from_slice(source);
    s.extend_from_slice(b"0x");
    s.extend_from_slice(tree::hex_text(&mut [0; 16], offset as u64));
    s.push(b'+');
    json::u64(s, length as u64);
    s.push(b']');
    if let Some(a) = about.map(str::trim_end).filter(|a| !a.is_empty()) {
        s.extend_from_slice(b"  ");
        s.extend_from_slice(a.as_bytes());
    }
    s.push(b'\n');
}

/// Appends `text` (UTF-8 made of UTF-8 pieces) to `out`.
fn push_utf8(out: &mut String, text: &[u8]) {
    match std::str::from_utf8(text) {
        Ok(t) => out.push_str(t),
        Err(_) => out.push_str(&String::from_utf8_lossy(text)),
    }
}

impl FieldOut for Text<'_> {
    fn int(&mut self, f: &'static Field, v: i64, d: Detail, at: usize, len: usize) {
        let (s, source, about, _, summary) = self.start(f.name);
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
        tail(s, f.ty, source, at, len, about.then_some(f.about));
    }

    fn content(&mut self, f: &'static Field, data: &[u8], at: usize) {
        let string = f.kind == Kind::String;
        let (s, source, about, scratch, _) = self.start(f.name);
        // Printable ASCII, the usual content, is quoted as it is (`Debug`'s
        // plain form), `"` and `\` escaped.
        if json::is_printable_ascii(data) && (string || data.len() <= MAX_STR) {
            s.push(b'"');
            json::escape_words(
                s,
                data,
                json::quote_or_backslash,
                |b| b == b'"' || b == b'\\',
                |s, b| s.extend_from_slice(&[b'\\', b]),
            );
            s.push(b'"');
        } else {
            let value = if string {
                Value::Str(String::from_utf8_lossy(data).into_owned())
            } else {
                content_value(data)
            };
            scratch.clear();
            tree::push_value_escaped(&value, None, scratch);
            s.extend_from_slice(scratch.as_bytes());
        }
        tail(s, f.ty, source, at, data.len(), about.then_some(f.about));
    }

    /// Problems make a record unclean: nothing to write.
    fn problem(&mut self, _: impl FnOnce() -> Node) {}

    fn open_record(&mut self) {
        self.rec.clear();
        self.summary.clear();
    }

    fn close_record(&mut self, i: u64, ok: bool, at: usize, len: usize) {
        // A record that is not clean fails the run: nothing more to write.
        if !ok {
            return;
        }
        let l = &mut self.line;
        l.clear();
        l.extend_from_slice(&self.record_lead);
        l.extend_from_slice(b"Record[");
        json::u64(l, i);
        l.push(b']');
        if !self.summary.is_empty() {
            l.extend_from_slice(b": ");
            l.extend_from_slice(&self.summary);
        }
        let about = "one record: deltas against the batch header, key, value, headers";
        tail(
            l,
            "Record",
            &self.source,
            at,
            len,
            self.about.then_some(about),
        );
        push_utf8(self.out, &self.line);
        push_utf8(self.out, &self.rec);
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
        let rec = &mut self.rec;
        rec.extend_from_slice(&self.field_lead);
        rec.extend_from_slice(b"Header[");
        json::u64(rec, j);
        rec.extend_from_slice(b"]: ");
        // A string: quoted, never empty.
        let key = Value::Str(String::from_utf8_lossy(key).into_owned());
        self.scratch.clear();
        tree::push_value_escaped(&key, None, &mut self.scratch);
        rec.extend_from_slice(self.scratch.as_bytes());
        let about = "a key/value pair attached to the record";
        tail(
            rec,
            "Header",
            &self.source,
            at,
            len,
            self.about.then_some(about),
        );
        rec.extend_from_slice(&self.hdr);
    }
}
