//! A checked cursor that turns wire reads into field-tree nodes with spans.
//!
//! Every node made here carries the cursor's byte source and an offset in that
//! source (`base` + the reader's position), written when the node is made. A
//! read that fails produces an error node covering the bytes that remain in
//! the cursor, so the caller can push it and stop.

use super::fields::{Field, Kind};
use crate::kafka::tree::{Node, Role, Value};
use crate::kafka::wire::{Reader, WireError};

/// The integer wire types of record formats, for [`Cur::int`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Int {
    I8,
    I16,
    I32,
    I64,
    U32,
    Varint,
    Varlong,
}

impl Int {
    /// The type as shown: `int8` .. `uint32`, `varint`, `varlong`.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Int::I8 => "int8",
            Int::I16 => "int16",
            Int::I32 => "int32",
            Int::I64 => "int64",
            Int::U32 => "uint32",
            Int::Varint => "varint",
            Int::Varlong => "varlong",
        }
    }

    /// The value of an integer of this wire type.
    pub(crate) fn value(self, v: i64) -> Value {
        if self == Int::U32 {
            Value::Uint(v as u64)
        } else {
            Value::Int(v)
        }
    }

    /// Reads an integer of this wire type.
    #[inline(always)]
    pub(crate) fn read(self, r: &mut Reader<'_>) -> Result<i64, WireError> {
        match self {
            Int::I8 => r.i8().map(i64::from),
            Int::I16 => r.i16().map(i64::from),
            Int::I32 => r.i32().map(i64::from),
            Int::I64 => r.i64(),
            Int::U32 => r.u32().map(i64::from),
            Int::Varint => r.varint().map(i64::from),
            Int::Varlong => r.varlong(),
        }
    }
}

/// A reader over one slice of a byte source, positioned at `base` in it.
#[derive(Clone)]
pub(crate) struct Cur<'a> {
    pub(crate) r: Reader<'a>,
    /// Where `buf[0]` sits in the byte source.
    pub(crate) base: usize,
    /// The byte source id.
    pub(crate) source: u16,
}

impl<'a> Cur<'a> {
    /// A cursor over `buf`, whose first byte is at `base` in `source`.
    pub(crate) fn new(buf: &'a [u8], base: usize, source: u16) -> Cur<'a> {
        Cur {
            r: Reader::new(buf),
            base,
            source,
        }
    }

    /// The position inside the slice.
    pub(crate) fn pos(&self) -> usize {
        self.r.pos()
    }

    /// The position in the byte source.
    pub(crate) fn abs(&self) -> usize {
        self.base + self.r.pos()
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.r.remaining()
    }

    /// A node spanning from local offset `start` to the current position.
    pub(crate) fn node_from(
        &self,
        start: usize,
        name: impl Into<crate::kafka::tree::Text>,
        ty: impl Into<crate::kafka::tree::Text>,
        value: Value,
        role: Role,
    ) -> Node {
        let mut n = Node::new(
            name,
            ty,
            value,
            self.base + start,
            self.r.pos().saturating_sub(start),
            role,
        );
        n.source = self.source;
        n
    }

    /// An error node for `name` covering every byte that remains (the cursor
    /// does not move; `int` and `bytes` move it to the end after a failure).
    pub(crate) fn fail(&self, name: &'static str, ty: &'static str, what: String) -> Node {
        let mut n = Node::new(
            name,
            ty,
            Value::None,
            self.abs(),
            self.remaining(),
            Role::Malformed,
        );
        n.source = self.source;
        n.error = Some(what);
        n
    }

    /// [`Cur::fail`], then the cursor moves to the end.
    pub(crate) fn fail_rest(&mut self, name: &'static str, ty: &'static str, what: String) -> Node {
        let n = self.fail(name, ty, what);
        self.r.skip_rest();
        n
    }

    /// Reads integer field `f` as a node; on failure the error node,
    /// covering what remains, and the cursor moves to the end.
    #[inline]
    pub(super) fn int(&mut self, f: &Field) -> Result<(i64, Node), Node> {
        let start = self.pos();
        let Kind::Int(w) = f.kind else {
            return Err(self.fail_rest(f.name, f.ty, format!("{}: not an integer", f.name)));
        };
        match w.read(&mut self.r) {
            Ok(v) => {
                let mut n = self.node_from(start, f.name, f.ty, w.value(v), f.role);
                n.about = Some(f.about.into());
                Ok((v, n))
            }
            Err(e) => Err(self.fail_rest(f.name, f.ty, format!("{}: {e}", f.name))),
        }
    }

    /// Takes `n` bytes as a node of type `ty`; the value is filled by the caller.
    pub(crate) fn bytes(
        &mut self,
        name: &'static str,
        ty: &'static str,
        n: usize,
        role: Role,
    ) -> Result<(&'a [u8], Node), Node> {
        let start = self.pos();
        match self.r.take(n) {
            Ok(b) => Ok((b, self.node_from(start, name, ty, Value::None, role))),
            Err(e) => Err(self.fail_rest(name, ty, format!("{name}: {e}"))),
        }
    }

    /// A cursor over the next `n` bytes (which the caller has checked exist),
    /// advancing this one past them.
    pub(crate) fn sub(&mut self, n: usize) -> Option<Cur<'a>> {
        let base = self.abs();
        let source = self.source;
        self.r.take(n).ok().map(|b| Cur::new(b, base, source))
    }
}

/// How a key, value or header value is shown: a string when it is valid,
/// printable UTF-8 of modest size, else bytes.
pub(crate) fn content_value(b: &[u8]) -> Value {
    match content_text(b) {
        Some(s) => Value::Str(s.to_owned()),
        None => Value::bytes(b),
    }
}

/// The most bytes [`content_value`] shows as a string.
pub(crate) const MAX_STR: usize = 4096;

/// The text [`content_value`] shows as a string, or `None` for bytes.
pub(crate) fn content_text(b: &[u8]) -> Option<&str> {
    if b.len() > MAX_STR {
        return None;
    }
    // Most contents are plain ASCII text: one pass that vectorizes, no
    // per-character decoding.
    if is_plain_ascii(b) {
        return std::str::from_utf8(b).ok();
    }
    std::str::from_utf8(b).ok().filter(|s| {
        !s.chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    })
}

/// True when every byte is printable ASCII (0x20..=0x7e), a tab, a line feed
/// or a carriage return: text [`content_value`] shows as a string.
fn is_plain_ascii(b: &[u8]) -> bool {
    crate::kafka::tree::json::all_bytes(b, |x| {
        (x.wrapping_sub(0x20) < 0x5f) | (x == b'\t') | (x == b'\n') | (x == b'\r')
    })
}

/// Milliseconds since the epoch as an ISO-8601 UTC date, when it falls
/// between 1970 and the year 9999 (anything else is not a wall-clock time).
pub fn iso8601_ms(ms: i64) -> Option<String> {
    iso8601_bytes(ms).and_then(|t| String::from_utf8(t.to_vec()).ok())
}

/// [`iso8601_ms`]'s text as bytes, without an allocation.
pub(crate) fn iso8601_bytes(ms: i64) -> Option<[u8; 24]> {
    use std::cell::Cell;
    const MAX_MS: i64 = 253_402_300_800_000; // 10000-01-01T00:00:00Z
    /// `YYYY-MM-DDTHH:MM:SS.` of the last second this thread wrote: the
    /// records of a batch mostly fall in the same second.
    type Second = (i64, [u8; 20]);
    thread_local! {
        static LAST: Cell<Option<Second>> = const { Cell::new(None) };
    }
    if !(0..MAX_MS).contains(&ms) {
        return None;
    }
    let secs = ms / 1000;
    // `try_with`: a thread being torn down computes the text every time.
    let head = match LAST.try_with(Cell::get) {
        Ok(Some((s, head))) if s == secs => head,
        _ => {
            let head = second_text(secs);
            let _ = LAST.try_with(|l| l.set(Some((secs, head))));
            head
        }
    };
    // `YYYY-MM-DDTHH:MM:SS.mmmZ`: the second's text, then the milliseconds.
    let mut t = [0u8; 24];
    let (a, b) = t.split_at_mut(20);
    a.copy_from_slice(&head);
    let m = ms % 1000;
    b.copy_from_slice(&[
        b'0' + (m / 100) as u8,
        b'0' + (m / 10 % 10) as u8,
        b'0' + (m % 10) as u8,
        b'Z',
    ]);
    Some(t)
}

/// `YYYY-MM-DDTHH:MM:SS.` of a second since the epoch (0 ..= the last
/// second of 9999), digits written in place (no formatter).
pub(crate) fn second_text(secs: i64) -> [u8; 20] {
    let days = secs / 86_400;
    let sod = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let mut t = *b"0000-00-00T00:00:00.";
    let mut put = |at: usize, width: usize, v: i64| {
        let mut v = v;
        for k in (at..at + width).rev() {
            if let Some(c) = t.get_mut(k) {
                *c = b'0' + (v % 10) as u8;
            }
            v /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, m.into());
    put(8, 2, d.into());
    put(11, 2, sod / 3600);
    put(14, 2, sod / 60 % 60);
    put(17, 2, sod % 60);
    t
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), after
/// Howard Hinnant's `civil_from_days` (eras of 400 years, March-based years).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(
            iso8601_ms(1_700_000_000_123).as_deref(),
            Some("2023-11-14T22:13:20.123Z")
        );
        assert_eq!(iso8601_ms(-1), None);
        assert_eq!(iso8601_ms(i64::MAX), None);
        assert_eq!(
            iso8601_ms(253_402_300_799_999).as_deref(),
            Some("9999-12-31T23:59:59.999Z")
        );
    }

    #[test]
    fn content_is_text_only_when_printable() {
        assert_eq!(content_value(b"hello"), Value::Str("hello".into()));
        assert_eq!(content_value(b"a\x1bb"), Value::bytes(b"a\x1bb"));
        assert_eq!(content_value(&[0xff, 0xfe]), Value::bytes(&[0xff, 0xfe]));
        assert_eq!(content_value(b"a\tb\r\n"), Value::Str("a\tb\r\n".into()));
        assert_eq!(content_value(b"a\x7fb"), Value::bytes(b"a\x7fb"));
        assert_eq!(content_value("é✓".as_bytes()), Value::Str("é✓".into()));
        assert_eq!(
            content_value("a\u{85}".as_bytes()),
            Value::bytes("a\u{85}".as_bytes())
        );
    }

    /// The reference: what `content_value` showed before its ASCII fast path.
    fn content_value_by_chars(b: &[u8]) -> Value {
        match std::str::from_utf8(b) {
            Ok(s)
                if b.len() <= 4096
                    && !s
                        .chars()
                        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) =>
            {
                Value::Str(s.to_string())
            }
            _ => Value::bytes(b),
        }
    }

    proptest::proptest! {
        #[test]
        fn content_fast_path_agrees(
            b in proptest::collection::vec(
                proptest::prop_oneof![0x1fu8..0x22, 0x7au8..0x82, proptest::prelude::any::<u8>()],
                0..80,
            ),
            s in ".{0,40}",
        ) {
            proptest::prop_assert_eq!(content_value(&b), content_value_by_chars(&b));
            proptest::prop_assert_eq!(content_value(s.as_bytes()), content_value_by_chars(s.as_bytes()));
        }

        #[test]
        fn iso8601_is_the_formatted_date(ms in 0i64..253_402_300_800_000) {
            proptest::prop_assert_eq!(iso8601_ms(ms), Some(formatted_date(ms)));
        }

        /// Runs of nearby times, as a batch's records have: the second
        /// remembered from the previous call is reused only when it is the same.
        #[test]
        fn iso8601_in_runs_is_the_formatted_date(
            start in 0i64..253_402_300_700_000,
            steps in proptest::collection::vec(-1500i64..1500, 1..30),
        ) {
            let mut ms = start;
            for step in steps {
                ms = (ms + step).max(0);
                proptest::prop_assert_eq!(iso8601_ms(ms), Some(formatted_date(ms)));
            }
        }
    }

    /// The reference: the date through the formatter.
    fn formatted_date(ms: i64) -> String {
        let secs = ms / 1000;
        let (y, m, d) = civil_from_days(secs / 86_400);
        let sod = secs % 86_400;
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
            sod / 3600,
            sod / 60 % 60,
            sod % 60,
            ms % 1000
        )
    }

    #[test]
    fn failed_reads_cover_the_rest() {
        let mut c = Cur::new(&[0, 1, 2], 10, 3);
        let a = Field::new("a", Kind::Int(Int::I16), Role::Record, "");
        let (v, n) = c.int(&a).unwrap();
        assert_eq!((v, n.offset, n.length, n.source), (1, 10, 2, 3));
        let b = Field::new("b", Kind::Int(Int::I32), Role::Record, "");
        let e = c.int(&b).unwrap_err();
        assert_eq!((e.offset, e.length, e.source), (12, 1, 3));
        assert!(e.error.is_some());
    }
}
