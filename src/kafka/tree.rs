//! The field tree: what the decoder produces and every view reads.
//!
//! Place in the data path: decode → **tree** → print / TUI / JSON. Invariants:
//! every node carries its span (`offset`, `length`) in the byte source named by
//! `source`, written when the node is made; a parent's span covers its
//! children's spans; offsets in source 0 count from the first byte of the
//! 4-byte size prefix. A node whose bytes could not be decoded is kept, with
//! `error` set, and the decoded part of the tree before it is intact.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

/// A short, shareable piece of text: usually a `&'static str` from the schema tables.
pub type Text = Cow<'static, str>;

/// What a node's bytes belong to, for the legend and colours of the byte view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The whole message (root).
    Message,
    /// The 4-byte size prefix.
    Frame,
    /// The request or response header.
    Header,
    /// A request body field.
    RequestBody,
    /// A response body field.
    ResponseBody,
    /// A RecordBatch (or legacy message) header field.
    RecordBatch,
    /// A Record inside a batch.
    Record,
    /// A tagged-field section or entry.
    TaggedFields,
    /// Bytes that could not be decoded.
    Malformed,
}

/// A decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value of its own (a container such as the header or a body).
    None,
    /// A signed integer of any width.
    Int(i64),
    /// An unsigned integer of any width.
    Uint(u64),
    /// A float64.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string (invalid UTF-8 is replaced; views escape control characters).
    Str(String),
    /// A null string, bytes, array or struct.
    Null,
    /// A bytes value: its length and up to [`BYTES_PREVIEW`] leading bytes.
    Bytes {
        /// The length of the value.
        len: usize,
        /// The first bytes, for display.
        head: Vec<u8>,
    },
    /// A uuid.
    Uuid([u8; 16]),
    /// A description standing in for a value: `struct`, `1 element`, `empty`.
    /// Borrowed, it must need no JSON escape, as [`Node::name`].
    Text(Text),
    /// Stands for nodes written ahead as JSON: [`Node::write_json`] copies
    /// these bytes in place of the node (one or more nodes' objects, comma
    /// separated). Made only with `DecodeOptions::records_json`, for output
    /// that is the tree's JSON and nothing else.
    Json(Vec<u8>),
    /// Stands for records checked at decode time and written as JSON from
    /// their bytes (the node's span in its source) when the tree is:
    /// [`Node::write_json_in`] writes them in place of the node. Made only
    /// with `DecodeOptions::records_json`, as [`Value::Json`]. (Boxed: a
    /// value stays 32 bytes.)
    Records(Box<Deferred>),
}

/// Consecutive records of one batch, clean when they were decoded, whose
/// JSON is written from their bytes only when the tree is written
/// ([`Value::Records`]): no copy of it is kept in the tree.
#[derive(Clone, Copy, Debug)]
pub struct Deferred {
    /// The index of the first record in its batch.
    pub first: u64,
    /// How many records there are.
    pub count: u64,
    /// The batch's base offset.
    pub base_offset: i64,
    /// The batch's base timestamp.
    pub base_ts: i64,
    /// Appends the records' JSON given their bytes (the node's span), its
    /// offset and its source; false, with nothing appended, when the bytes
    /// are not such records. (The record formats are not the tree's
    /// business: the decoder that made the node says how to write it.)
    pub write: fn(&Deferred, &[u8], usize, u16, &mut Vec<u8>) -> bool,
    /// Makes the records' nodes from their bytes, offset and source, handing
    /// each to the callback with whether it is the last: the `Record[i]`
    /// nodes a decode without deferred records makes of them, for text
    /// ([`write_text_in`]).
    pub expand: ExpandRecords,
    /// Appends the records' compact text lines (`Layout::Compact`) given
    /// their bytes, offset and source, the lead of their lines (the indent
    /// and the guides of the records' parent) and whether descriptions are
    /// shown: the lines [`write_text_in`] writes for the nodes `expand`
    /// makes; false, with nothing appended, when the bytes are not such
    /// records.
    pub write_text: WriteTextRecords,
}

/// [`Deferred::write_text`]: the run, its bytes, their offset and source,
/// the lead of the records' lines, whether descriptions are shown, the text
/// (UTF-8, appended to the bytes of the output it goes to), and buffers to
/// reuse (taken and given back).
pub type WriteTextRecords =
    fn(&Deferred, &[u8], usize, u16, &str, bool, &mut Vec<u8>, &mut Vec<Vec<u8>>) -> bool;

/// [`Deferred::expand`]: the run, its bytes, their offset and source, and
/// where each record's node goes (with whether it is the last).
pub type ExpandRecords = fn(&Deferred, &[u8], usize, u16, &mut dyn FnMut(Node, bool));

impl PartialEq for Deferred {
    /// The records are the same (whoever writes them).
    fn eq(&self, o: &Deferred) -> bool {
        (self.first, self.count, self.base_offset, self.base_ts)
            == (o.first, o.count, o.base_offset, o.base_ts)
    }
}

/// The bytes a tree's spans point into, for [`Node::write_json_in`]:
/// the message's (source 0) and its decompressed sources'.
#[derive(Clone, Copy, Debug, Default)]
pub struct SourceBytes<'a> {
    /// The message, from the first byte of its size prefix.
    pub message: &'a [u8],
    /// `Decoded::sources`: source n is `sources[n - 1]`.
    pub sources: &'a [ByteSource],
}

impl<'a> SourceBytes<'a> {
    /// The bytes of `source` at `offset` for `length` bytes, if held.
    pub fn span(&self, source: u16, offset: usize, length: usize) -> Option<&'a [u8]> {
        let data = match source {
            0 => self.message,
            n => self.sources.get(usize::from(n) - 1)?.data.as_slice(),
        };
        data.get(offset..offset.checked_add(length)?)
    }
}

/// Where JSON output too long to be held whole goes on in parts
/// (`print -V --format jsonl` of big messages): offered the output between
/// two nodes, it takes what was written once there are at least `at` bytes.
#[derive(Clone, Copy)]
pub struct Spill<'a> {
    /// The output's length from which it is taken.
    pub at: usize,
    /// Takes the output (leaving it empty, or with less in it).
    pub take: &'a dyn Fn(&mut Vec<u8>),
}

/// What [`Node::write_json_spilling`] does between two children: nothing
/// (`()`), or offer the output to a [`Spill`] (a generic, so that writing
/// whole costs nothing more).
pub trait Between {
    /// Done with the output after a child.
    fn between(&self, out: &mut Vec<u8>);
}

impl Between for () {
    #[inline(always)]
    fn between(&self, _: &mut Vec<u8>) {}
}

impl Between for Spill<'_> {
    /// Hands `out` to `take` when it holds `at` bytes or more.
    #[inline]
    fn between(&self, out: &mut Vec<u8>) {
        if out.len() >= self.at {
            (self.take)(out);
        }
    }
}

/// How many leading bytes a [`Value::Bytes`] keeps for display.
pub const BYTES_PREVIEW: usize = 16;

impl Value {
    /// A bytes value from its full content.
    pub fn bytes(b: &[u8]) -> Value {
        Value::Bytes {
            len: b.len(),
            head: b.get(..BYTES_PREVIEW.min(b.len())).unwrap_or(&[]).to_vec(),
        }
    }

    /// The value as it is shown in the tree (without the node's detail).
    pub fn display(&self) -> String {
        let mut s = String::new();
        let _ = self.write_display(&mut s);
        s
    }

    /// Appends [`Value::write_display`]'s text to `s`, the commonest values
    /// (integers, printable ASCII strings) without the formatting machinery;
    /// true for those (no control character in what was appended).
    fn push_display(&self, s: &mut String) -> bool {
        match self {
            Value::Int(v) => push_decimal(s, v.unsigned_abs(), *v < 0),
            Value::Uint(v) => push_decimal(s, *v, false),
            Value::Str(v) if json::is_printable_ascii(v.as_bytes()) => {
                // `Debug` of printable ASCII: quoted, `"` and `\\` escaped.
                s.reserve(v.len() + 2);
                s.push('"');
                if json::all_bytes(v.as_bytes(), |b| b != b'"' && b != b'\\') {
                    s.push_str(v);
                } else {
                    for c in v.chars() {
                        if c == '"' || c == '\\' {
                            s.push('\\');
                        }
                        s.push(c);
                    }
                }
                s.push('"');
            }
            _ => {
                let _ = self.write_display(s);
                return false;
            }
        }
        true
    }

    fn write_display(&self, s: &mut impl fmt::Write) -> fmt::Result {
        match self {
            Value::None => Ok(()),
            Value::Int(v) => write!(s, "{v}"),
            Value::Uint(v) => write!(s, "{v}"),
            Value::Float(v) => write!(s, "{v}"),
            Value::Bool(v) => write!(s, "{v}"),
            Value::Str(v) => write!(s, "{v:?}"),
            Value::Null => s.write_str("null"),
            Value::Bytes { len, head } => {
                if *len == 0 {
                    return s.write_str("(empty)");
                }
                for b in head {
                    write!(s, "{b:02x}")?;
                }
                if *len > head.len() {
                    s.write_char('…')?;
                }
                Ok(())
            }
            Value::Uuid(u) => s.write_str(&format_uuid(u)),
            Value::Text(t) => s.write_str(t),
            Value::Json(j) => s.write_str(&String::from_utf8_lossy(j)),
            Value::Records(d) => {
                write!(s, "{} ", d.count)?;
                s.write_str(if d.count == 1 { "record" } else { "records" })
            }
        }
    }
}

/// A value's text with its detail (`5 (offset 5)`) appended to `s`, and
/// whether it is known to hold no control character ([`Node`]'s, and the
/// records' text writer's).
pub(crate) fn value_text_clean(value: &Value, detail: Option<&Text>, s: &mut String) -> bool {
    let start = s.len();
    let mut clean = value.push_display(s);
    let s_empty = s.len() == start;
    if let Some(d) = detail {
        clean &= matches!(d, Cow::Borrowed(_));
        if s_empty {
            s.push_str(d);
        } else {
            s.push_str(" (");
            s.push_str(d);
            s.push(')');
        }
    }
    clean
}

/// [`value_text_clean`], its control characters escaped as a text line
/// shows them: [`put_value`]'s bytes.
pub(crate) fn push_value_escaped(value: &Value, detail: Option<&Text>, s: &mut String) {
    let mut b = std::mem::take(s).into_bytes();
    put_value(&mut b, value, detail, &mut String::new());
    // UTF-8: `s` and the value's text.
    *s = String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into());
}

/// Appends `v` in decimal, after a `-` when `negative`.
fn push_decimal(s: &mut String, mut v: u64, negative: bool) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 || at == 0 {
            break;
        }
    }
    if negative {
        s.push('-');
    }
    for &d in digits.get(at..).unwrap_or_default() {
        s.push(char::from(d));
    }
}

/// Appends the first `n` bytes of `bytes` (all `N` when `n` is more) as one copy
/// of a fixed size cut back to `n`: for the short pieces a line is made of
/// (digits, spaces, keys, leads), not a call to `memcpy` for each.
#[inline(always)]
pub(crate) fn put_cut<const N: usize>(out: &mut Vec<u8>, bytes: &[u8; N], n: usize) {
    let at = out.len();
    out.extend_from_slice(bytes);
    out.truncate(at + n);
}

/// Appends `n` spaces: up to 64 (a compact line's indent and guides) as
/// one fixed-size copy ([`put_cut`]), not a `memset` for every line.
#[inline(always)]
pub(crate) fn put_spaces(out: &mut Vec<u8>, n: usize) {
    const SPACES: [u8; 64] = [b' '; 64];
    if n <= SPACES.len() {
        put_cut(out, &SPACES, n);
    } else {
        out.resize(out.len() + n, b' ');
    }
}

/// Appends `v` in lower-case hex, without leading zeros (`0` for zero):
/// one fixed-size copy, cut back to the digits ([`put_cut`]).
#[inline(always)]
pub(crate) fn put_hex(out: &mut Vec<u8>, v: u64) {
    let (digits, n) = hex_digits(v);
    put_cut(out, &digits, n);
}

/// The lower-case hex digits of `v` without leading zeros (`0` for zero),
/// first in the array (NULs after them), and how many there are: every
/// nibble turned into its digit at once, eight to a word, without a loop.
#[inline(always)]
pub(crate) fn hex_digits(v: u64) -> ([u8; 16], usize) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // Byte k of the word: nibble k of `x`, the most significant digit last.
    let spread = |x: u32| {
        let mut x = u64::from(x);
        x = (x | x << 16) & 0x0000_ffff_0000_ffff;
        x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
        (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f
    };
    // Each nibble's digit: `0` + it, and 39 more from `a` on; then the most
    // significant digit first in memory.
    let text = |x: u64| {
        let letters = ((x + 6 * ONES) >> 4) & ONES;
        (x + b'0' as u64 * ONES + letters * 39).swap_bytes()
    };
    let high = text(spread((v >> 32) as u32));
    let low = text(spread(v as u32));
    let n = (64 - (v | 1).leading_zeros()).div_ceil(4) as usize;
    // The 16 digits in order; the leading zeros shifted out of the front.
    let all = u128::from(high) | u128::from(low) << 64;
    ((all >> (8 * (16 - n))).to_le_bytes(), n)
}

/// A uuid in its canonical 8-4-4-4-12 hex form.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Appends the decimal text of `v` (as `write!(s, "{v}")`, without the formatter).
pub fn push_uint(s: &mut String, v: u64) {
    let mut buf = [0u8; 20];
    s.push_str(std::str::from_utf8(json::u64_text(&mut buf, v)).unwrap_or_default());
}

/// Appends the decimal text of `v` (as `write!(s, "{v}")`, without the formatter).
pub fn push_int(s: &mut String, v: i64) {
    if v < 0 {
        s.push('-');
    }
    push_uint(s, v.unsigned_abs());
}

/// `name[i]`, the name of an element (as `format!("{name}[{i}]")`).
pub fn indexed_name(name: &str, i: u64) -> String {
    let mut s = String::with_capacity(name.len() + 8);
    s.push_str(name);
    s.push('[');
    push_uint(&mut s, i);
    s.push(']');
    s
}

/// The most children a decoder makes room for before decoding them: a count
/// from the wire, even one checked against the bytes that remain, may be
/// hostile and its elements fail at the first; past this the vector grows as
/// nodes are made (a node is about 200 bytes, so at most ~200 KB ahead).
pub const MAX_RESERVED_CHILDREN: usize = 1024;

/// How many indices of each element name [`indexed_text`] shares.
pub const SHARED_INDICES: u64 = 256;

/// `name[i]` as [`indexed_name`] writes it, borrowed from text made once per
/// process for the first [`SHARED_INDICES`] indices of each name (a new
/// string past them): a tree's element names cost no allocation.
///
/// The names are the schema's, so `'static`; the shared texts are leaked,
/// bounded by the number of names in the binary times [`SHARED_INDICES`].
/// Each thread keeps its own copy of the references, so a lookup takes no
/// lock once a thread has seen an index.
pub fn indexed_text(name: &'static str, i: u64) -> Text {
    use std::cell::RefCell;
    use std::sync::{Mutex, PoisonError};
    type Names = rustc_hash::FxHashMap<(usize, usize), Vec<&'static str>>;
    static SHARED: Mutex<Option<Names>> = Mutex::new(None);
    thread_local! {
        static LOCAL: RefCell<Names> = RefCell::default();
    }
    if i >= SHARED_INDICES {
        return Text::Owned(indexed_name(name, i));
    }
    let i = i as usize;
    // The same text at another address is another key: still bounded.
    let key = (name.as_ptr() as usize, name.len());
    // `try_with`: a thread being torn down gets a new string.
    let local = LOCAL.try_with(|l| {
        let mut l = l.borrow_mut();
        let names = l.entry(key).or_default();
        if names.len() <= i {
            let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
            let all = shared
                .get_or_insert_with(Names::default)
                .entry(key)
                .or_default();
            while all.len() <= i {
                let text = indexed_name(name, all.len() as u64);
                all.push(Box::leak(text.into_boxed_str()));
            }
            names.clone_from(all);
        }
        names.get(i).copied()
    });
    match local.ok().flatten() {
        Some(s) => Text::Borrowed(s),
        None => Text::Owned(indexed_name(name, i as u64)),
    }
}

/// Texts of small numbers (`3 elements`, `message v12`), made once per
/// process on first use and shared by every tree: [`SmallTexts::get`] of a
/// number below the table's length borrows, past it makes a new string.
pub struct SmallTexts {
    len: u64,
    make: fn(u64) -> String,
    texts: std::sync::OnceLock<Vec<String>>,
}

impl SmallTexts {
    /// A table of `make(n)` for `n` in `0..len`.
    pub const fn new(len: u64, make: fn(u64) -> String) -> SmallTexts {
        SmallTexts {
            len,
            make,
            texts: std::sync::OnceLock::new(),
        }
    }

    /// `make(n)`, borrowed from the table when `n` is in it.
    pub fn get(&'static self, n: u64) -> Text {
        if n >= self.len {
            return Text::Owned((self.make)(n));
        }
        let texts = self
            .texts
            .get_or_init(|| (0..self.len).map(self.make).collect());
        match usize::try_from(n).ok().and_then(|n| texts.get(n)) {
            Some(s) => Text::Borrowed(s.as_str()),
            None => Text::Owned((self.make)(n)),
        }
    }
}

/// One node of the field tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The field name (Kafka's name for schema fields, e.g. `ThrottleTimeMs`).
    /// A borrowed (`'static`) name must need no JSON escape: JSON output
    /// copies it as it is ([`json::text_inner`]).
    pub name: Text,
    /// The type as shown: the schema's type text, `uvarint`, `v2`, `message v12`.
    /// Borrowed, it must need no JSON escape, as `name`.
    pub ty: Text,
    /// The value.
    pub value: Value,
    /// What the value means or how it was encoded, shown in parentheses after it.
    /// Borrowed, it must need no JSON escape, as `name`.
    pub detail: Option<Text>,
    /// First byte, in `source`.
    pub offset: usize,
    /// Number of bytes.
    pub length: usize,
    /// The byte source: 0 is the message, n > 0 is `Decoded::sources[n - 1]`.
    pub source: u16,
    /// What the bytes belong to.
    pub role: Role,
    /// A one-line description (the project's own words or the schema metadata).
    pub about: Option<Text>,
    /// Set when these bytes could not be decoded: what was wrong.
    pub error: Option<String>,
    /// The bytes hold a secret (SASL token, password, HMAC) whose value is
    /// redacted: views must not show these bytes either.
    pub secret: bool,
    /// The children, in byte order.
    pub children: Vec<Node>,
}

impl Node {
    /// A node with the given name, type, value and span; everything else empty.
    pub fn new(
        name: impl Into<Text>,
        ty: impl Into<Text>,
        value: Value,
        offset: usize,
        length: usize,
        role: Role,
    ) -> Node {
        Node {
            name: name.into(),
            ty: ty.into(),
            value,
            detail: None,
            offset,
            length,
            source: 0,
            role,
            about: None,
            error: None,
            secret: false,
            children: Vec::new(),
        }
    }

    /// Sets the detail text.
    pub fn with_detail(mut self, d: impl Into<Text>) -> Node {
        self.detail = Some(d.into());
        self
    }

    /// Sets the description.
    pub fn with_about(mut self, a: impl Into<Text>) -> Node {
        self.about = Some(a.into());
        self
    }

    /// The value text with its detail: `0 (Produce)`, `"" (compact, len+1=1)`.
    pub fn value_text(&self) -> String {
        let mut s = String::new();
        self.push_value_text(&mut s);
        s
    }

    /// Appends [`Node::value_text`] to `s`.
    fn push_value_text(&self, s: &mut String) {
        self.push_value_text_clean(s);
    }

    /// [`Node::push_value_text`], and whether what it appended is known to
    /// hold no control character (an integer, a printable-ASCII string, a
    /// `'static` detail), so that no scan need look for one.
    fn push_value_text_clean(&self, s: &mut String) -> bool {
        value_text_clean(&self.value, self.detail.as_ref(), s)
    }

    /// The end of the span (exclusive).
    pub fn end(&self) -> usize {
        self.offset.saturating_add(self.length)
    }

    /// The first child with this name.
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Follows a path of child names (`["ProduceResponse", "ThrottleTimeMs"]`).
    pub fn path(&self, names: &[&str]) -> Option<&Node> {
        let mut n = self;
        for name in names {
            n = n.child(name)?;
        }
        Some(n)
    }

    /// Visits this node and all descendants, depth first, in byte order.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Node, usize)) {
        fn go<'a>(n: &'a Node, depth: usize, f: &mut dyn FnMut(&'a Node, usize)) {
            f(n, depth);
            for c in &n.children {
                go(c, depth + 1, f);
            }
        }
        go(self, 0, f);
    }

    /// Visits this node and all descendants mutably, depth first.
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Node)) {
        f(self);
        for c in &mut self.children {
            c.walk_mut(f);
        }
    }

    /// The first node (depth first) that carries an error.
    pub fn first_error(&self) -> Option<&Node> {
        // Stops at the first one (no closure call per node of the rest).
        if self.error.is_some() {
            return Some(self);
        }
        self.children.iter().find_map(Node::first_error)
    }

    /// The tree as JSON: `{name, type, value, display, offset, length, source, children}`
    /// (`source` and `error` only when set; `children` always), parsed
    /// from what [`Node::write_json`] writes (serde_json's `float_roundtrip`
    /// reads its floats back exactly).
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = Vec::new();
        self.write_json(&mut out);
        serde_json::from_slice(&out).unwrap_or_default()
    }
}

/// Compact JSON written straight into a byte buffer: the same bytes
/// serde_json writes (its string escapes, its integer and float formats),
/// without building a `serde_json::Value` or a `String` per value.
pub mod json {
    use std::fmt;

    /// serde_json's escape table: 0 = as is, else the escape letter (`u` = `\u00XX`).
    const ESCAPE: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut i = 0;
        while i < 0x20 {
            t[i] = b'u';
            i += 1;
        }
        t[0x08] = b'b';
        t[0x09] = b't';
        t[0x0a] = b'n';
        t[0x0c] = b'f';
        t[0x0d] = b'r';
        t[b'"' as usize] = b'"';
        t[b'\\' as usize] = b'\\';
        t
    };

    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;

    /// High bit of each byte of `v` that is zero. Exact for the lowest such
    /// byte (Hacker's Delight 6-1); a borrow may also flag bytes above it.
    const fn zero_bytes(v: u64) -> u64 {
        v.wrapping_sub(ONES) & !v & HIGH
    }

    /// High bit of each byte of `x` that JSON escapes (a control character,
    /// `"` or `\`): exact for the lowest flagged byte, as [`zero_bytes`].
    const fn json_special(x: u64) -> u64 {
        (x.wrapping_sub(ONES * 0x20) & !x & HIGH)
            | zero_bytes(x ^ (ONES * b'"' as u64))
            | zero_bytes(x ^ (ONES * b'\\' as u64))
    }

    /// High bit of each byte of `x` that is `"` or `\\`, exact for every
    /// byte: the sums of the low seven bits carry into no other byte.
    const fn quote_or_backslash(x: u64) -> u64 {
        const LOW7: u64 = !HIGH;
        let q = x ^ (ONES * b'"' as u64);
        let s = x ^ (ONES * b'\\' as u64);
        !(((q & LOW7).wrapping_add(LOW7) | q) & ((s & LOW7).wrapping_add(LOW7) | s)) & HIGH
    }

    /// Appends `bytes`, eight at a time, writing `escape(out, b)` in place of
    /// each byte `b` that `special` flags (its lowest flagged byte must be
    /// exact) or, in the last bytes, that `is_special` says is special.
    ///
    /// Each word is copied whole (a fixed-size copy, no call) and cut back to
    /// the bytes before its first special one: text dense in quotes, such as
    /// JSON record values, costs no call per plain run.
    #[inline(always)]
    fn escape_words(
        out: &mut Vec<u8>,
        bytes: &[u8],
        special: impl Fn(u64) -> u64,
        is_special: impl Fn(u8) -> bool,
        escape: impl Fn(&mut Vec<u8>, u8),
    ) {
        out.reserve(bytes.len() + 8);
        let mut at = 0;
        while let Some(chunk) = bytes.get(at..at + 8) {
            let word: [u8; 8] = chunk.try_into().unwrap_or_default();
            let w = u64::from_le_bytes(word);
            let mask = special(w);
            let len = out.len();
            out.extend_from_slice(&word);
            if mask == 0 {
                at += 8;
                continue;
            }
            let k = mask.trailing_zeros() / 8;
            out.truncate(len + k as usize);
            // The byte taken from the word in its register (read back from
            // memory, it waited on the store of the whole word).
            escape(out, (w >> (k * 8)) as u8);
            at += k as usize + 1;
        }
        for &b in bytes.get(at..).unwrap_or(&[]) {
            if is_special(b) {
                escape(out, b);
            } else {
                out.push(b);
            }
        }
    }

    /// Appends the JSON escape of a byte that [`ESCAPE`] marks.
    #[inline(always)]
    fn json_escape(out: &mut Vec<u8>, b: u8) {
        let e = ESCAPE[b as usize];
        if e == b'u' {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex(b >> 4), hex(b)]);
        } else {
            out.extend_from_slice(&[b'\\', e]);
        }
    }

    /// The lowercase hex digit of the low four bits of `n`.
    #[inline(always)]
    fn hex(n: u8) -> u8 {
        b"0123456789abcdef"
            .get(usize::from(n & 0xf))
            .copied()
            .unwrap_or(b'0')
    }

    /// From this length on, text is first counted for bytes to escape, and
    /// copied whole when it has none (a vectorized pass and one copy instead
    /// of a word loop); shorter text goes to the word loop at once.
    const PLAIN_CHECK: usize = 24;

    /// True when `ok` holds for every byte of `b`: whole blocks of a fixed
    /// size without early exit inside, so each vectorizes fully (a block of
    /// a length known only at run time does not), stopping at the first
    /// block with a byte that fails; the last bytes as a shorter block.
    #[inline(always)]
    pub(crate) fn all_bytes(b: &[u8], ok: impl Fn(u8) -> bool + Copy) -> bool {
        let mut blocks = b.chunks_exact(64);
        let block = |c: &[u8]| c.iter().fold(true, |a, &x| a & ok(x));
        for c in &mut blocks {
            let c: &[u8; 64] = c.try_into().unwrap_or(&[0; 64]);
            if !block(c) {
                return false;
            }
        }
        block(blocks.remainder())
    }

    /// True when no byte of `b` is `"`, `\\` or a control character.
    #[inline(always)]
    fn needs_no_escape(b: &[u8]) -> bool {
        all_bytes(b, |x| (x != b'"') & (x != b'\\') & (x >= 0x20))
    }

    /// Appends the JSON-escaped text of `s` (without quotes).
    pub fn escape_into(out: &mut Vec<u8>, s: &str) {
        let b = s.as_bytes();
        if b.len() >= PLAIN_CHECK && needs_no_escape(b) {
            out.extend_from_slice(b);
            return;
        }
        escape_words(
            out,
            b,
            json_special,
            |b| ESCAPE[b as usize] != 0,
            json_escape,
        );
    }

    /// True when every byte of `b` is printable ASCII (0x20..=0x7e; so the
    /// bytes are also UTF-8): Rust's `Debug` then escapes only `"` and `\`.
    pub fn is_printable_ascii(b: &[u8]) -> bool {
        all_bytes(b, printable)
    }

    /// Appends the `Debug` text of a printable-ASCII string (see
    /// [`is_printable_ascii`]), JSON-escaped: `"a\"b"` becomes `\"a\\\"b\"`.
    pub fn debug_printable_into(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(b"\\\"");
        // Only `"` and `\` are special here: Debug adds a `\`, JSON escapes
        // both, so each becomes four bytes: `\\\"` or `\\\\`.
        let b = s.as_bytes();
        // Printable ASCII has no control characters: no quote, no escape.
        if b.len() >= PLAIN_CHECK && needs_no_escape(b) {
            out.extend_from_slice(b);
        } else {
            escape_words(
                out,
                b,
                quote_or_backslash,
                |b| b == b'"' || b == b'\\',
                |out, b| out.extend_from_slice(&(0x005c_5c5c | u32::from(b) << 24).to_le_bytes()),
            );
        }
        out.extend_from_slice(b"\\\"");
    }

    /// How many bytes of `c` (at most 255 of them) are `"` or `\\`.
    #[inline(always)]
    fn quotes_in(c: &[u8]) -> usize {
        usize::from(c.iter().fold(0u8, |n, &x| {
            n.wrapping_add(u8::from((x == b'"') | (x == b'\\')))
        }))
    }

    /// The number of bytes of `b` that are `"` or `\\` when every byte of
    /// `b` is printable ASCII (as [`is_printable_ascii`]), `None`
    /// otherwise: both in one pass, for [`debug_and_escape_counted`].
    pub fn printable_ascii_quotes(b: &[u8]) -> Option<usize> {
        // As `all_bytes`, counting as well.
        let mut blocks = b.chunks_exact(64);
        let block = |c: &[u8]| {
            c.iter()
                .fold(true, |a, &x| a & printable(x))
                .then(|| quotes_in(c))
        };
        let mut n = 0;
        for c in &mut blocks {
            let c: &[u8; 64] = c.try_into().unwrap_or(&[0; 64]);
            n += block(c)?;
        }
        Some(n + block(blocks.remainder())?)
    }

    /// Whether `x` is printable ASCII (0x20 to 0x7e).
    #[inline(always)]
    fn printable(x: u8) -> bool {
        x.wrapping_sub(0x20) < 0x5f
    }

    /// Both texts printable-ASCII bytes (see [`is_printable_ascii`];
    /// the caller checks, other bytes would be copied as they are) are
    /// written as, in one pass: their `Debug` text JSON-escaped, appended to
    /// `display` (as [`debug_printable_into`]), and their JSON escape without
    /// quotes, appended to `value` (as [`escape_into`]). Record values, the
    /// longest strings of a tree, are written both ways. `quotes` of the
    /// bytes are `"` or `\\` (as [`printable_ascii_quotes`] counts them): the
    /// texts are written in room made for their exact lengths.
    pub fn debug_and_escape_counted(
        display: &mut Vec<u8>,
        value: &mut Vec<u8>,
        b: &[u8],
        quotes: usize,
    ) {
        display.extend_from_slice(b"\\\"");
        quotes_escaped_counted(Some(display), value, b, quotes);
        display.extend_from_slice(b"\\\"");
    }

    /// Appends `b`, printable-ASCII bytes (see [`is_printable_ascii`]; the
    /// caller checks) of which `quotes` are `"` or `\` (as
    /// [`printable_ascii_quotes`] counts them), with a backslash before each
    /// of those: Rust's `Debug` text of them without its quotes, as the
    /// compact text shows a record's key or value (and their JSON escape,
    /// as [`debug_and_escape_counted`] writes it).
    #[inline(always)]
    pub(crate) fn backslashed_counted(out: &mut Vec<u8>, b: &[u8], quotes: usize) {
        quotes_escaped_counted(None, out, b, quotes);
    }

    /// Appends `b` (as [`backslashed_counted`] says) to `value` with a
    /// backslash before each of its `quotes` `"` or `\`, and to `display`,
    /// when given, with three. Both are written in place, into room for
    /// their lengths (each quote takes three more bytes in `display`, one in
    /// `value`) and a word's room more for the whole-word stores, then cut
    /// back to what was written.
    #[inline(always)]
    fn quotes_escaped_counted(
        mut display: Option<&mut Vec<u8>>,
        value: &mut Vec<u8>,
        b: &[u8],
        quotes: usize,
    ) {
        if quotes == 0 {
            if let Some(x) = display {
                x.extend_from_slice(b);
            }
            value.extend_from_slice(b);
            return;
        }
        let mut d = display.as_ref().map_or(0, |x| x.len());
        if let Some(x) = display.as_deref_mut() {
            x.resize(d + b.len() + 3 * quotes + DISPLAY_ROOM, 0);
        }
        let mut v = value.len();
        value.resize(v + b.len() + quotes + VALUE_ROOM, 0);
        let mut words = b.chunks_exact(8);
        for w in &mut words {
            let word = u64::from_le_bytes(w.try_into().unwrap_or_default());
            let to_display = display.as_deref_mut().map(|x| (x.as_mut_slice(), &mut d));
            escapes_of_word(to_display, (value, &mut v), word, 8);
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // Zero bytes pad the word: they are neither `"` nor `\`.
            let mut w = [0u8; 8];
            if let Some(head) = w.get_mut(..rest.len()) {
                head.copy_from_slice(rest);
            }
            let word = u64::from_le_bytes(w);
            let to_display = display.as_deref_mut().map(|x| (x.as_mut_slice(), &mut d));
            escapes_of_word(to_display, (value, &mut v), word, rest.len());
        }
        if let Some(x) = display {
            x.truncate(d);
        }
        value.truncate(v);
    }

    /// Room a word's escapes are written in, from where its text starts:
    /// eight bytes escaped take at most 32 with three backslashes before a
    /// quote and 16 with one, and the last store is a whole word.
    const DISPLAY_ROOM: usize = 40;
    const VALUE_ROOM: usize = 24;

    /// Writes the first `n` bytes of `word` at `v` in `value` with a
    /// backslash before each `"` or `\` (their JSON escape, or `Debug`'s)
    /// and, with `display`, at `d` in it with three (`Debug`'s, JSON-escaped),
    /// moving `v` and `d` past them: both texts from one scan of the word (a
    /// record value's display and JSON value are written in one pass). Each
    /// store is a whole word, possibly past the bytes kept, within
    /// [`DISPLAY_ROOM`] and [`VALUE_ROOM`] of where the word starts: the room
    /// the callers make covers it, and later stores overwrite what is past
    /// the text. Inlined, a call without `display` writes no code for it.
    #[inline(always)]
    fn escapes_of_word(
        display: Option<(&mut [u8], &mut usize)>,
        (value, v): (&mut [u8], &mut usize),
        word: u64,
        n: usize,
    ) {
        let mut dw = match display {
            Some((buf, d)) => match buf.get_mut(*d..*d + DISPLAY_ROOM) {
                Some(w) => Some((w, d)),
                None => {
                    debug_assert!(false, "room for a word's escapes");
                    return;
                }
            },
            None => None,
        };
        let Some(vw) = value.get_mut(*v..*v + VALUE_ROOM) else {
            debug_assert!(false, "room for a word's escapes");
            return;
        };
        // Offsets in the two windows: within a word, the display's is at
        // most 4 * 7 + 3 = 31 and the value's 2 * 7 + 1 = 15 before a store,
        // so the masks keep them as they are (and the stores in bounds).
        let put = |w: &mut [u8], at: usize, x: u64| {
            if let Some(s) = w.get_mut(at..at + 8) {
                s.copy_from_slice(&x.to_le_bytes());
            }
        };
        if let Some((dw, _)) = &mut dw {
            put(dw, 0, word);
        }
        put(vw, 0, word);
        let mut mask = quote_or_backslash(word);
        let (mut od, mut ov, mut done) = (0, 0, 0);
        // A step skips the bytes before the lowest quote in `mask` (they are
        // in place), writes its escape, then the word again from it on. The
        // first two go without a branch on whether there is a quote (dense
        // text such as JSON values has one every few bytes, and the loop's
        // exit was mispredicted): a step without one (`has` 0) moves nothing
        // and writes over the word's rest what it already holds.
        let mut step = |mask: u64, has: usize| {
            let k = if mask != 0 {
                (mask.trailing_zeros() / 8) as usize
            } else {
                done
            };
            let from = word >> (8 * k);
            if let Some((dw, _)) = &mut dw {
                od += k - done;
                put(dw, od & 31, 0x005c_5c5c);
                od += 3 * has;
                put(dw, od & 31, from);
            }
            ov += k - done;
            put(vw, ov & 15, u64::from(b'\\'));
            ov += has;
            put(vw, ov & 15, from);
            done = k;
        };
        for _ in 0..2 {
            step(mask, usize::from(mask != 0));
            mask &= mask.wrapping_sub(1);
        }
        while mask != 0 {
            step(mask, 1);
            mask &= mask - 1;
        }
        if let Some((_, d)) = dw {
            *d += od + n - done;
        }
        *v += ov + n - done;
    }

    /// Appends a string's `Debug` text (quoted, escaped as Rust does),
    /// JSON-escaped: how a `Value::Str` is displayed.
    pub fn debug_str_into(out: &mut Vec<u8>, s: &str) {
        // Debug quotes and escapes; plain text needs no escapes in either.
        if is_printable_ascii(s.as_bytes()) {
            debug_printable_into(out, s);
        } else {
            use std::fmt::Write as _;
            let _ = write!(Escaped(out), "{s:?}");
        }
    }

    /// Appends how a bytes value of `len` bytes starting with `head` is
    /// displayed (`Value::Bytes`): `head` in hex, `…` when there are more,
    /// `(empty)` for none. The text needs no JSON escapes.
    pub fn bytes_preview_into(out: &mut Vec<u8>, len: usize, head: &[u8]) {
        if len == 0 {
            out.extend_from_slice(b"(empty)");
            return;
        }
        for &b in head {
            out.extend_from_slice(&[hex(b >> 4), hex(b)]);
        }
        if len > head.len() {
            out.extend_from_slice("…".as_bytes());
        }
    }

    /// Appends a node's name, type, detail or text value inside a JSON
    /// string (without the quotes: the key texts around it carry them). A
    /// borrowed text is `'static`: the schema's names and types, the
    /// project's own words and names made from them (`Partitions[3]`), none
    /// of which needs an escape (`static_texts_need_no_escape` checks the
    /// schema's), so it is copied as it is; a text made at run time is
    /// escaped.
    #[inline(always)]
    pub fn text_inner(out: &mut Vec<u8>, t: &super::Text) {
        match t {
            std::borrow::Cow::Borrowed(s) => {
                debug_assert!(
                    !s.bytes().any(|b| ESCAPE[b as usize] != 0),
                    "static text {s:?} needs an escape"
                );
                out.extend_from_slice(s.as_bytes());
            }
            std::borrow::Cow::Owned(s) => escape_into(out, s),
        }
    }

    /// Appends `s` as a JSON string.
    pub fn str(out: &mut Vec<u8>, s: &str) {
        out.push(b'"');
        escape_into(out, s);
        out.push(b'"');
    }

    /// Appends an unsigned integer.
    #[inline(always)]
    pub fn u64(out: &mut Vec<u8>, v: u64) {
        if v < 10_000 {
            below_10k(out, v);
        } else {
            u64_wide(out, v);
        }
    }

    /// [`u64`] of a value below 10^4: lengths and most small values.
    #[inline(always)]
    fn below_10k(out: &mut Vec<u8>, v: u64) {
        if v < 10 {
            out.push(b'0' + v as u8);
        } else {
            // Two pairs of digits from a table (the first "00" or "0d" when
            // shorter), as one word shifted past the leading zeros and cut
            // back to the count.
            let pair = |p: u64| u32::from(PAIRS.get(p as usize).copied().unwrap_or_default());
            let word = pair(v / 100) | pair(v % 100) << 16;
            let n = 2 + u32::from(v >= 100) + u32::from(v >= 1000);
            let len = out.len();
            out.extend_from_slice(&(word >> (32 - 8 * n)).to_le_bytes());
            out.truncate(len + n as usize);
        }
    }

    /// [`u64`] of any value (called for those from 10^4 on, out of line).
    #[inline(never)]
    fn u64_wide(out: &mut Vec<u8>, v: u64) {
        const E8: u64 = 100_000_000;
        const ASCII: u64 = 0x3030_3030_3030_3030;
        if v < E8 {
            // Its eight digits stored as one word shifted past the leading
            // zeros (the lowest bytes) and cut back to the digits' count.
            // The count comes from `v` itself, not from the digits: what is
            // written next need not wait for them.
            let n = (v as u32).ilog10() + 1;
            let len = out.len();
            out.extend_from_slice(&((digits8(v) >> (64 - 8 * n)) + ASCII).to_le_bytes());
            out.truncate(len + n as usize);
        } else if v < E8 * E8 {
            // The same with sixteen digits in two words.
            let hi = v / E8;
            let n = (hi as u32).ilog10() + 1;
            let d = u128::from(digits8(hi)) | u128::from(digits8(v % E8)) << 64;
            let len = out.len();
            let ascii = u128::from(ASCII) | u128::from(ASCII) << 64;
            out.extend_from_slice(&((d >> (64 - 8 * n)) + ascii).to_le_bytes());
            out.truncate(len + 8 + n as usize);
        } else {
            u64_long(out, v);
        }
    }

    /// The two ASCII digits of each number below 100, the first in the low
    /// byte.
    const PAIRS: [u16; 100] = {
        let mut t = [0u16; 100];
        let mut i = 0;
        while i < 100 {
            t[i] = (b'0' as u16 + (i / 10) as u16) | (b'0' as u16 + (i % 10) as u16) << 8;
            i += 1;
        }
        t
    };

    /// [`u64`] of a value from 10^16 on (up to twenty digits).
    #[cold]
    fn u64_long(out: &mut Vec<u8>, v: u64) {
        let mut buf = [0u8; 20];
        out.extend_from_slice(u64_text(&mut buf, v));
    }

    /// The eight decimal digits of `v` (below 10^8), zero-padded, as numbers
    /// 0..=9, the first digit in the lowest byte. Without a chain of
    /// divisions per digit: the two halves of four digits are split into
    /// pairs and the pairs into digits side by side in one word, each step a
    /// multiplication by a reciprocal (exact for the ranges here: 10486/2^20
    /// gives n/100 for n below 43699, 103/2^10 gives n/10 for n below 179).
    #[inline(always)]
    pub(crate) fn digits8(v: u64) -> u64 {
        // Lanes of 32 bits: the first four digits low, the last four high.
        let x = (v / 10_000) | ((v % 10_000) << 32);
        // Each lane's hundreds: the product stays within its lane (below
        // 2^27), the mask drops what the shift brings down from the next.
        let h = ((x * 10_486) >> 20) & 0x0000_007f_0000_007f;
        // Lanes of 16 bits: the pairs of digits.
        let y = h | ((x - h * 100) << 16);
        let t = ((y * 103) >> 10) & 0x000f_000f_000f_000f;
        // Lanes of 8 bits: the digits.
        t | ((y - t * 10) << 8)
    }

    /// Appends a signed integer.
    #[inline]
    pub fn i64(out: &mut Vec<u8>, v: i64) {
        if v < 0 {
            out.push(b'-');
        }
        u64(out, v.unsigned_abs());
    }

    /// The decimal digits of `v`, written at the end of `buf`.
    pub fn u64_text(buf: &mut [u8; 20], mut v: u64) -> &[u8] {
        let mut at = buf.len();
        loop {
            at -= 1;
            // `at` stays in bounds: u64::MAX has 20 digits.
            if let Some(d) = buf.get_mut(at) {
                *d = b'0' + (v % 10) as u8;
            }
            v /= 10;
            if v == 0 {
                break;
            }
        }
        buf.get(at..).unwrap_or(&[])
    }

    /// Appends a finite float as serde_json does (ryu's shortest form); a
    /// non-finite one as `null`, as serde_json does.
    pub fn f64(out: &mut Vec<u8>, v: f64) {
        use serde_json::ser::Formatter as _;
        let mut f = serde_json::ser::CompactFormatter;
        let _ = if v.is_finite() {
            f.write_f64(out, v)
        } else {
            f.write_null(out)
        };
    }

    /// A short constant text, padded for a fixed-size copy (no call to
    /// `memcpy` per piece) cut back to its length: the keys of a node's JSON
    /// with the punctuation around them, and the record fields' names and
    /// types (`records::fields`).
    #[derive(Clone, Copy)]
    pub(crate) struct Pad {
        text: [u8; 48],
        len: usize,
    }

    impl Pad {
        /// The pieces of `parts` one after the other (at most 48 bytes;
        /// longer text is cut).
        // `i` and `k` are below the lengths; a const fn cannot call `get`.
        #[allow(clippy::indexing_slicing)]
        pub(crate) const fn new(parts: &[&[u8]]) -> Pad {
            let mut text = [0u8; 48];
            let (mut len, mut p) = (0, 0);
            while p < parts.len() {
                let s = parts[p];
                let mut i = 0;
                while i < s.len() && len < 48 {
                    text[len] = s[i];
                    len += 1;
                    i += 1;
                }
                p += 1;
            }
            Pad { text, len }
        }

        /// Appends the text.
        #[inline(always)]
        pub(crate) fn put(&self, out: &mut Vec<u8>) {
            super::put_cut(out, &self.text, self.len);
        }
    }

    /// A parent's opening, up to its first child.
    pub(crate) const CHILDREN: Pad = Pad::new(&[b"{\"children\":["]);
    /// After a parent's children, up to its display text.
    pub(crate) const DISPLAY: Pad = Pad::new(&[b"],\"display\":\""]);
    /// A childless node's opening, up to its display text.
    pub(crate) const LEAF: Pad = Pad::new(&[b"{\"children\":[],\"display\":\""]);
    /// After the display text, when there is an error.
    pub(crate) const ERROR: Pad = Pad::new(&[b"\",\"error\":"]);
    /// After the error.
    pub(crate) const LENGTH: Pad = Pad::new(&[b",\"length\":"]);
    /// After the display text, when there is no error.
    pub(crate) const CLOSED_LENGTH: Pad = Pad::new(&[b"\",\"length\":"]);
    /// After the length, up to the name's text.
    pub(crate) const NAME: Pad = Pad::new(&[b",\"name\":\""]);
    /// After the name's text.
    pub(crate) const OFFSET: Pad = Pad::new(&[b"\",\"offset\":"]);
    /// After the offset, when the source is not the message.
    pub(crate) const SOURCE: Pad = Pad::new(&[b",\"source\":"]);
    /// After the offset or source, up to the type's text.
    pub(crate) const TYPE: Pad = Pad::new(&[b",\"type\":\""]);
    /// After the type's text.
    pub(crate) const VALUE: Pad = Pad::new(&[b"\",\"value\":"]);

    /// A `fmt::Write` that appends JSON-escaped text: formats values straight
    /// into the output, without an intermediate `String`.
    pub struct Escaped<'a>(pub &'a mut Vec<u8>);

    impl fmt::Write for Escaped<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            escape_into(self.0, s);
            Ok(())
        }
    }
}

impl Node {
    /// Appends the tree as compact JSON (the object [`Node::to_json`]
    /// describes), with serde_json's bytes (keys sorted as its map keeps
    /// them), without building a value.
    ///
    /// A tree decoded with `DecodeOptions::records_json` is written with
    /// [`Node::write_json_in`] and its bytes: here its [`Value::Records`]
    /// nodes, whose bytes are not at hand, are written as other nodes are.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.write_json_in(out, &SourceBytes::default());
    }

    /// [`Node::write_json`] for a tree whose spans point into `bytes`: a
    /// [`Value::Records`] node writes its records' JSON from their bytes
    /// (as they were decoded, when the bytes are the decoder's).
    pub fn write_json_in(&self, out: &mut Vec<u8>, bytes: &SourceBytes<'_>) {
        self.write_json_spilling(out, bytes, &());
    }

    /// [`Node::write_json_in`] handing the output on in parts: a [`Spill`]
    /// is offered the output after each child is written (the bytes are the
    /// same, whoever takes them between two children).
    pub fn write_json_spilling<B: Between>(
        &self,
        out: &mut Vec<u8>,
        bytes: &SourceBytes<'_>,
        between: &B,
    ) {
        match &self.value {
            Value::Json(j) => {
                out.extend_from_slice(j);
                return;
            }
            Value::Records(d) => {
                let span = bytes.span(self.source, self.offset, self.length);
                if let Some(b) = span {
                    if (d.write)(d.as_ref(), b, self.offset, self.source, out) {
                        return;
                    }
                }
            }
            _ => {}
        }
        if self.children.is_empty() {
            json::LEAF.put(out);
        } else {
            json::CHILDREN.put(out);
            for (k, c) in self.children.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                c.write_json_spilling(out, bytes, between);
                between.between(out);
            }
            json::DISPLAY.put(out);
        }
        self.write_json_from_display(out);
    }

    /// The end of [`Node::write_json_in`]'s object after the children (from
    /// `],"display":` on), written from this node: what a parent whose
    /// children were written one by one (`stream_json`) ends with.
    pub(crate) fn write_json_tail(&self, out: &mut Vec<u8>) {
        json::DISPLAY.put(out);
        self.write_json_from_display(out);
    }

    /// [`Node::write_json_tail`] after `],"display":"` (or a childless
    /// node's opening).
    fn write_json_from_display(&self, out: &mut Vec<u8>) {
        json_from_display(
            out,
            Parts {
                name: &self.name,
                ty: &self.ty,
                value: &self.value,
                detail: self.detail.as_ref(),
                error: self.error.as_deref(),
                offset: self.offset,
                length: self.length,
                source: self.source,
            },
        );
    }

    /// The JSON of a childless node without an error, from its parts: what
    /// [`Node::write_json_in`] writes for the node [`Parts`] describes, as the
    /// decoder would make it (`stream_json` writes leaves so, without making
    /// them).
    pub(crate) fn write_leaf_json(out: &mut Vec<u8>, parts: Parts<'_>) {
        json::LEAF.put(out);
        json_from_display(out, parts);
    }
}

/// A node's parts that its JSON shows, borrowed.
#[derive(Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub(crate) name: &'a Text,
    pub(crate) ty: &'a Text,
    pub(crate) value: &'a Value,
    pub(crate) detail: Option<&'a Text>,
    pub(crate) error: Option<&'a str>,
    pub(crate) offset: usize,
    pub(crate) length: usize,
    pub(crate) source: u16,
}

/// A node's JSON after `],"display":"` (or a childless node's opening), from
/// its parts.
fn json_from_display(out: &mut Vec<u8>, p: Parts<'_>) {
    // `display` is the value text with its detail; `value` the value alone.
    // Both are written from the value without an intermediate String.
    let value_at = out.len();
    p.value.write_display_json(out);
    let value_end = out.len();
    if let Some(d) = p.detail {
        if value_end > value_at {
            out.extend_from_slice(b" (");
            json::text_inner(out, d);
            out.push(b')');
        } else {
            json::text_inner(out, d);
        }
    }
    match p.error {
        None => json::CLOSED_LENGTH.put(out),
        Some(e) => {
            json::ERROR.put(out);
            json::str(out, e);
            json::LENGTH.put(out);
        }
    }
    json::u64(out, p.length as u64);
    json::NAME.put(out);
    json::text_inner(out, p.name);
    json::OFFSET.put(out);
    json::u64(out, p.offset as u64);
    if p.source != 0 {
        json::SOURCE.put(out);
        json::u64(out, p.source.into());
    }
    json::TYPE.put(out);
    json::text_inner(out, p.ty);
    json::VALUE.put(out);
    match p.value {
        Value::None => out.extend_from_slice(b"null"),
        // Their display text is their JSON.
        Value::Int(_) | Value::Uint(_) | Value::Bool(_) | Value::Null => {
            out.extend_from_within(value_at..value_end);
        }
        Value::Float(v) if v.is_finite() => json::f64(out, *v),
        Value::Str(v) => json::str(out, v),
        // Float (not finite), Bytes, Uuid, Text: the display text, already
        // escaped in `display`, without the detail.
        _ => {
            out.push(b'"');
            out.extend_from_within(value_at..value_end);
            out.push(b'"');
        }
    }
    out.push(b'}');
}

impl Value {
    /// Appends [`Value::display`] JSON-escaped (without quotes); an empty
    /// display writes nothing.
    fn write_display_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::None => {}
            Value::Int(v) => json::i64(out, *v),
            Value::Uint(v) => json::u64(out, *v),
            Value::Bool(v) => out.extend_from_slice(if *v { b"true" } else { b"false" }),
            Value::Null => out.extend_from_slice(b"null"),
            Value::Str(v) => json::debug_str_into(out, v),
            Value::Bytes { len, head } => json::bytes_preview_into(out, *len, head),
            Value::Text(t) => json::text_inner(out, t),
            Value::Float(_) | Value::Uuid(_) | Value::Json(_) | Value::Records(_) => {
                let _ = self.write_display(&mut json::Escaped(out));
            }
        }
    }
}

/// A byte source other than the message: decompressed record data.
#[derive(Clone, Debug, PartialEq)]
pub struct ByteSource {
    /// What the bytes are (`gzip-decompressed records of the batch at 0x001e`).
    pub name: String,
    /// The decompressed bytes (empty when only the length was wanted:
    /// `DecodeOptions::records_headers_only`).
    pub data: Vec<u8>,
    /// The decompressed length (`data.len()` when the bytes are kept).
    pub len: usize,
    /// The source holding the compressed bytes.
    pub parent: u16,
    /// Where the compressed bytes start in the parent.
    pub parent_offset: usize,
    /// How many compressed bytes there are in the parent.
    pub parent_length: usize,
}

/// How a tree's text is laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// The project's seed document's: `name  type  = value  [0x0000, 4B]
    /// description`, every column as wide as its widest cell in the tree,
    /// `+--` / `|` guides (`decode`, the tests' goldens).
    #[default]
    Wide,
    /// `print -V`'s, one line per node as short as it can be read:
    /// `name: value  type  [0x1e+4]`, two spaces of indent a level, nothing
    /// padded; the description only when `about` (`-VV`). A node that did
    /// not decode always says why.
    Compact {
        /// Each node's description after its span.
        about: bool,
    },
}

impl Layout {
    /// Whether the lines carry the nodes' descriptions.
    fn about(self) -> bool {
        match self {
            Layout::Wide => true,
            Layout::Compact { about } => about,
        }
    }
}

/// Renders a tree in the text layout of the project's seed document:
/// `name  type  = value  [0x0000, 4B]  description`, with `+--` / `|` guides.
pub fn render_text(root: &Node) -> String {
    let mut s = String::new();
    write_text(&mut s, root, "");
    s
}

/// Appends [`render_text`]'s lines to `out`, each after `indent`: the same
/// bytes as pushing `indent`, the line and `\n` for every line of
/// `render_text(root).lines()`, without building that text first.
pub fn write_text(out: &mut impl TextSink, root: &Node, indent: &str) {
    write_text_in(out, root, indent, &SourceBytes::default(), Layout::Wide);
}

/// [`write_text`] in `layout`, of a tree whose spans point into `bytes`: a
/// [`Value::Records`] node (a tree decoded with
/// `DecodeOptions::records_deferred`) stands for the records' nodes, made
/// from their bytes for each walk of the tree and freed line by line — the
/// text is that of the tree decoded without it, and what is held is the
/// tree without its records' nodes. Wide: two walks of the tree, the first
/// for the column widths and the output's exact size (reserved once), the
/// second writing; compact: one walk, writing. No allocation per line
/// (print `-V` writes many times its messages' bytes this way).
pub fn write_text_in(
    out: &mut impl TextSink,
    root: &Node,
    indent: &str,
    bytes: &SourceBytes<'_>,
    layout: Layout,
) {
    TextWriter::default().write(out, root, indent, bytes, layout);
}

/// [`write_text_in`] with its line buffers kept from one tree to the next
/// (a thread that writes many trees, as `print -V`'s, makes them once).
#[derive(Default)]
pub struct TextWriter {
    f: Fields,
}

impl TextWriter {
    /// [`write_text_in`].
    pub fn write(
        &mut self,
        out: &mut impl TextSink,
        root: &Node,
        indent: &str,
        bytes: &SourceBytes<'_>,
        layout: Layout,
    ) {
        self.f.reset(layout);
        write_with(&mut self.f, out, root, indent, bytes, layout);
        self.f.trim();
    }
}

/// [`write_text_in`] with the lines' buffers in `f` (reset for `layout`).
fn write_with(
    f: &mut Fields,
    out: &mut impl TextSink,
    root: &Node,
    indent: &str,
    bytes: &SourceBytes<'_>,
    layout: Layout,
) {
    if !indent.is_empty() && root.name.contains(['\n', '\r']) {
        // `lines()` would cut the (unescaped) top name: indent what it gives.
        let mut text = String::new();
        write_with(f, &mut text, root, "", bytes, layout);
        out.reserve_text(text.len() + text.lines().count() * indent.len());
        for line in text.lines() {
            out.push_text(indent);
            out.push_text(line);
            out.push_text("\n");
        }
        return;
    }
    let mut size = Size::new(layout);
    if let Layout::Compact { .. } = layout {
        // Nothing to measure: one walk, writing.
        f.set_indent(indent);
    } else {
        walk_node(root, (true, true), bytes, f, &mut |f: &Fields| size.add(f));
    }
    let cols = size.columns();
    out.reserve_text(size.total(&cols, indent.len()));
    let mut w = Writer::new(out, &cols, indent);
    walk_node(root, (true, true), bytes, f, &mut w);
}

/// Where [`walk_node`] hands the lines of a tree.
pub(crate) trait Lines {
    /// A node's line: its cells in `f`.
    fn line(&mut self, f: &Fields);

    /// The line of `n` (the top of the tree when `top`), under the guides
    /// in `f`: its cells set in `f`, then handed to [`Lines::line`].
    fn node(&mut self, f: &mut Fields, n: &Node, top: bool) {
        f.set(n, top);
        self.line(f);
    }

    /// A run of records' compact lines, appended by `write` to a byte buffer
    /// (false, with nothing appended, when the records do not read
    /// cleanly): whether they were. Unless the lines go straight to their
    /// output, they are gathered in `f` and handed over as one line.
    fn block(&mut self, f: &mut Fields, write: &mut dyn FnMut(&mut Vec<u8>) -> bool) -> bool {
        let taken = write(&mut f.block);
        if taken {
            self.line(f);
        }
        f.block.clear();
        taken
    }
}

impl<F: FnMut(&Fields)> Lines for F {
    fn line(&mut self, f: &Fields) {
        self(f);
    }
}

/// Writes the lines to `out` in `cols`' layout, each after `indent`, and
/// the records' lines straight into it (no copy of them gathered first).
pub(crate) struct Writer<'a, S: ?Sized> {
    out: &'a mut S,
    cols: &'a Columns,
    indent: &'a str,
    /// `indent`'s length when it is only spaces (`print -V`'s four).
    spaces: Option<usize>,
}

impl<'a, S: ?Sized> Writer<'a, S> {
    /// Lines written to `out`, in `cols`, each after `indent`.
    pub(crate) fn new(out: &'a mut S, cols: &'a Columns, indent: &'a str) -> Self {
        let spaces = indent.bytes().all(|b| b == b' ').then_some(indent.len());
        Writer {
            out,
            cols,
            indent,
            spaces,
        }
    }
}

impl<S: TextSink + ?Sized> Lines for Writer<'_, S> {
    fn line(&mut self, f: &Fields) {
        f.write(self.out, self.cols, self.indent);
    }

    /// A compact line is made in place in the output (no copy of it made
    /// first).
    fn node(&mut self, f: &mut Fields, n: &Node, top: bool) {
        if let Layout::Wide = f.layout {
            f.set(n, top);
            return self.line(f);
        }
        f.set_about(n);
        let (indent, spaces) = (self.indent, self.spaces);
        self.out.push_utf8_with(&mut |b| {
            match spaces {
                Some(k) => put_spaces(b, k),
                None => b.extend_from_slice(indent.as_bytes()),
            }
            f.put_line(b, n, top);
            true
        });
    }

    fn block(&mut self, _: &mut Fields, write: &mut dyn FnMut(&mut Vec<u8>) -> bool) -> bool {
        self.out.push_utf8_with(write)
    }
}

/// Where [`write_text`] appends: a `String` or a byte buffer.
pub trait TextSink {
    /// Appends `s`.
    fn push_text(&mut self, s: &str);
    /// Makes room for `n` more bytes.
    fn reserve_text(&mut self, n: usize);
    /// Appends the UTF-8 text `write` appends to a byte buffer, or nothing
    /// when it returns false (having appended nothing): whether it did. A
    /// sink over a byte buffer hands its own buffer to `write`, so the text
    /// is written once, in place; others take it from a buffer of its own,
    /// checked (a byte that is not UTF-8 would show as U+FFFD).
    fn push_utf8_with(&mut self, write: &mut dyn FnMut(&mut Vec<u8>) -> bool) -> bool {
        let mut b = Vec::new();
        let taken = write(&mut b);
        if taken {
            self.push_text(&String::from_utf8_lossy(&b));
        }
        taken
    }
}

impl TextSink for String {
    fn push_text(&mut self, s: &str) {
        self.push_str(s);
    }
    fn reserve_text(&mut self, n: usize) {
        self.reserve(n);
    }
}

impl TextSink for Vec<u8> {
    fn push_text(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
    fn reserve_text(&mut self, n: usize) {
        self.reserve(n);
    }
    fn push_utf8_with(&mut self, write: &mut dyn FnMut(&mut Vec<u8>) -> bool) -> bool {
        write(self)
    }
}

/// The largest line buffer kept from one tree (or run of records) to the
/// next: one a long value or header grew past it is dropped, so that a
/// thread writing trees does not hold its size for good.
pub(crate) const KEPT_BUFFER: usize = 64 << 10;

/// A line's columns, rebuilt in place for every node (no allocation once
/// they have grown). `prefix` holds the guides of the node's parent.
#[derive(Default)]
pub(crate) struct Fields {
    layout: Layout,
    prefix: String,
    name: String,
    ty: String,
    value: String,
    span: String,
    about: String,
    /// Compact: the whole line (UTF-8, without its indent), made by
    /// [`Fields::set`] instead of the cells above.
    line: Vec<u8>,
    /// Lines written whole (a run of records, `Deferred::write_text`),
    /// each after `indent`: the line [`Lines::line`] is given instead of
    /// the cells above when not empty (UTF-8).
    block: Vec<u8>,
    /// What the lines written go after (`Fields::set_indent`): the
    /// lines of `block` hold it; the others take it when written.
    indent: String,
    /// Scratch: `indent` and `prefix`, the lead of `block`'s lines.
    lead: String,
    /// Buffers the records' text writer reuses from run to run
    /// ([`Deferred::write_text`]).
    pool: Vec<Vec<u8>>,
    /// Scratch: a value shown otherwise than by [`Fields::put_line`]'s
    /// own writing.
    scratch: String,
}

/// Column widths in characters (each the widest cell plus 2, at least the
/// seed document's); a compact layout pads nothing.
pub(crate) struct Columns {
    layout: Layout,
    name: usize,
    ty: usize,
    value: usize,
    span: usize,
}

/// What the first walk learns: widest cells and the bytes the lines take.
#[derive(Default)]
pub(crate) struct Size {
    layout: Layout,
    lines: usize,
    /// Compact: the bytes of the lines (without their indent).
    compact_bytes: usize,
    name: usize,
    ty: usize,
    value: usize,
    span: usize,
    /// Bytes beyond one per character in the padded name, type and value cells.
    multibyte: usize,
    /// Lines with a description: span bytes beyond its characters, and the description's bytes.
    about_lines: usize,
    about_bytes: usize,
    /// Lines without one: their span's bytes.
    plain_span_bytes: usize,
}

impl Columns {
    /// The layout the lines are in.
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }
}

impl Size {
    /// Nothing measured yet, for lines in `layout`.
    pub(crate) fn new(layout: Layout) -> Size {
        Size {
            layout,
            ..Size::default()
        }
    }

    pub(crate) fn add(&mut self, f: &Fields) {
        if let Layout::Compact { .. } = self.layout {
            // A block's lines hold their indent (none while measuring).
            if !f.block.is_empty() {
                self.compact_bytes += f.block.len();
                return;
            }
            self.lines += 1;
            self.compact_bytes += f.line.len();
            return;
        }
        let nc = f.name.chars().count();
        let tc = f.ty.chars().count();
        let vc = f.value.chars().count();
        let sc = f.span.chars().count();
        self.lines += 1;
        self.name = self.name.max(nc + 2);
        self.ty = self.ty.max(tc + 2);
        self.value = self.value.max(vc + 2);
        self.span = self.span.max(sc + 2);
        self.multibyte += (f.name.len() - nc) + (f.ty.len() - tc) + (f.value.len() - vc);
        match f.about_trimmed() {
            "" => self.plain_span_bytes += f.span.len(),
            a => {
                self.about_lines += 1;
                self.about_bytes += (f.span.len() - sc) + a.len();
            }
        }
    }

    pub(crate) fn columns(&self) -> Columns {
        Columns {
            layout: self.layout,
            name: self.name.max(54),
            ty: self.ty.max(24),
            value: self.value.max(35),
            span: self.span.max(15),
        }
    }

    /// The bytes [`Fields::write`] appends for all the lines.
    fn total(&self, c: &Columns, indent: usize) -> usize {
        if let Layout::Compact { .. } = c.layout {
            return self.lines * indent + self.compact_bytes;
        }
        self.lines * (indent + c.name + c.ty + c.value + 1)
            + self.multibyte
            + self.about_lines * c.span
            + self.about_bytes
            + self.plain_span_bytes
    }
}

impl Fields {
    /// Cells for lines in `layout`.
    pub(crate) fn new(layout: Layout) -> Fields {
        Fields {
            layout,
            ..Fields::default()
        }
    }

    /// Cells for lines in `layout`, with the buffers these had (no guides,
    /// no indent).
    fn reset(&mut self, layout: Layout) {
        self.layout = layout;
        self.prefix.clear();
        self.indent.clear();
        self.block.clear();
    }

    /// Drops the buffers a long line grew (kept, one per thread writing
    /// trees, they would hold its size for good).
    fn trim(&mut self) {
        for s in [
            &mut self.prefix,
            &mut self.name,
            &mut self.ty,
            &mut self.value,
            &mut self.span,
            &mut self.about,
            &mut self.indent,
            &mut self.lead,
            &mut self.scratch,
        ] {
            if s.capacity() > KEPT_BUFFER {
                *s = String::new();
            }
        }
        for b in [&mut self.line, &mut self.block] {
            if b.capacity() > KEPT_BUFFER {
                *b = Vec::new();
            }
        }
    }

    /// The indent the lines will be written after (the one given to
    /// `write_compact` by the walk's callback): the lines of a run of
    /// records are written with it.
    pub(crate) fn set_indent(&mut self, indent: &str) {
        self.indent.clear();
        self.indent.push_str(indent);
    }

    /// The guide the children of a node draw under it: a line down unless
    /// it is its parent's last child (compact: two spaces).
    pub(crate) fn push_guide(&mut self, last: bool) {
        // Each a constant (copied in place, no call).
        match self.layout {
            Layout::Compact { .. } => self.prefix.push_str("  "),
            Layout::Wide if last => self.prefix.push_str("    "),
            Layout::Wide => self.prefix.push_str("|   "),
        }
    }

    /// Takes back the last [`Fields::push_guide`].
    pub(crate) fn pop_guide(&mut self) {
        let width = match self.layout {
            Layout::Compact { .. } => 2,
            Layout::Wide => 4,
        };
        let keep = self.prefix.len().saturating_sub(width);
        self.prefix.truncate(keep);
    }

    /// The description as the line ends with it: trailing blanks go (the
    /// span before it is never blank).
    fn about_trimmed(&self) -> &str {
        self.about.trim_end()
    }

    /// Sets the columns of `n`, a child (with guides) unless `top`
    /// (compact: its line).
    pub(crate) fn set(&mut self, n: &Node, top: bool) {
        self.set_about(n);
        if let Layout::Compact { .. } = self.layout {
            return self.set_line(n, top);
        }
        self.name.clear();
        if top {
            self.name.push_str(&n.name);
        } else {
            self.name.push_str(&self.prefix);
            self.name.push_str("+-- ");
            push_text(&mut self.name, &n.name);
        }
        // The value written in place; escaped again only when it holds a
        // control character.
        self.value.clear();
        self.value.push_str("= ");
        push_value_escaped(&n.value, n.detail.as_ref(), &mut self.value);
        if self.value.len() == 2 {
            self.value.clear();
        }
        self.ty.clear();
        push_text(&mut self.ty, &n.ty);
        self.span.clear();
        self.span.push('[');
        if n.source != 0 {
            self.span.push('#');
            push_decimal(&mut self.span, n.source.into(), false);
            self.span.push(':');
        }
        let _ = write!(self.span, "0x{:04x}, {}B]", n.offset, n.length);
    }

    /// The description of `n` as its line shows it, and its error.
    fn set_about(&mut self, n: &Node) {
        self.about.clear();
        if let (Some(a), true) = (&n.about, self.layout.about()) {
            push_escaped(&mut self.about, a);
        }
        if let Some(e) = &n.error {
            if !self.about.is_empty() {
                self.about.push_str(" — ");
            }
            self.about.push_str("MALFORMED: ");
            push_escaped(&mut self.about, e);
        }
    }

    /// The compact line of `n` (without the indent it is written after),
    /// made in `line`.
    fn set_line(&mut self, n: &Node, top: bool) {
        let mut l = std::mem::take(&mut self.line);
        l.clear();
        self.put_line(&mut l, n, top);
        self.line = l;
    }

    /// Appends the compact line of `n`, its description (or error) set
    /// ([`Fields::set_about`]): the name after its guides, `: value` when
    /// there is one, the type, the span and the description, two spaces
    /// apart, `\n` — as bytes, the numbers and plain strings written as
    /// the JSON output writes them (`print -V` writes many lines).
    pub(crate) fn put_line(&mut self, l: &mut Vec<u8>, n: &Node, top: bool) {
        if top {
            l.extend_from_slice(n.name.as_bytes());
        } else {
            // A compact line's guides are spaces (`push_guide`).
            debug_assert!(self.prefix.bytes().all(|b| b == b' '));
            put_spaces(l, self.prefix.len() + 2);
            push_text(l, &n.name);
        }
        // A struct's value says only what its type says.
        if !matches!(&n.value, Value::Text(t) if *t == "struct") {
            let mark = l.len();
            l.extend_from_slice(b": ");
            put_value(l, &n.value, n.detail.as_ref(), &mut self.scratch);
            if l.len() == mark + 2 {
                l.truncate(mark);
            }
        }
        if !n.ty.is_empty() {
            l.extend_from_slice(b"  ");
            push_text(l, &n.ty);
        }
        l.extend_from_slice(b"  [");
        if n.source != 0 {
            l.push(b'#');
            json::u64(l, n.source.into());
            l.push(b':');
        }
        l.extend_from_slice(b"0x");
        put_hex(l, n.offset as u64);
        l.push(b'+');
        json::u64(l, n.length as u64);
        l.push(b']');
        let about = self.about.trim_end();
        if !about.is_empty() {
            l.extend_from_slice(b"  ");
            l.extend_from_slice(about.as_bytes());
        }
        l.push(b'\n');
    }

    /// Appends the line: `indent`, the padded cells, the span and the
    /// description, `\n`.
    pub(crate) fn write<S: TextSink + ?Sized>(&self, out: &mut S, c: &Columns, indent: &str) {
        if let Layout::Compact { .. } = c.layout {
            return self.write_compact(out, indent);
        }
        out.push_text(indent);
        pad(out, &self.name, c.name);
        pad(out, &self.ty, c.ty);
        pad(out, &self.value, c.value);
        match self.about_trimmed() {
            "" => out.push_text(&self.span),
            a => {
                pad(out, &self.span, c.span);
                out.push_text(a);
            }
        }
        out.push_text("\n");
    }
}

impl Fields {
    /// Appends the compact line: `indent` and the line [`Fields::set`]
    /// made (or the block of lines that stands for it).
    fn write_compact<S: TextSink + ?Sized>(&self, out: &mut S, indent: &str) {
        if !self.block.is_empty() {
            // Its lines hold their indent (`Fields::set_indent`).
            out.push_utf8_with(&mut |b| {
                b.extend_from_slice(&self.block);
                true
            });
            return;
        }
        out.push_utf8_with(&mut |b| {
            b.extend_from_slice(indent.as_bytes());
            b.extend_from_slice(&self.line);
            true
        });
    }
}

/// Replaces every [`Value::Records`] node under `n` whose bytes `bytes`
/// holds by its records' nodes, as [`walk_node`] makes them (a small
/// subtree gathered to be written later, when the bytes of its records'
/// sources are no longer at hand).
pub(crate) fn expand_deferred(n: &mut Node, bytes: &SourceBytes<'_>) {
    if !n
        .children
        .iter()
        .any(|c| matches!(c.value, Value::Records(_)))
    {
        for c in &mut n.children {
            expand_deferred(c, bytes);
        }
        return;
    }
    let mut kids = Vec::with_capacity(n.children.len());
    for mut c in std::mem::take(&mut n.children) {
        if let Value::Records(d) = &c.value {
            if let Some(b) = bytes.span(c.source, c.offset, c.length) {
                (d.expand)(d, b, c.offset, c.source, &mut |r, _| kids.push(r));
                continue;
            }
        }
        expand_deferred(&mut c, bytes);
        kids.push(c);
    }
    n.children = kids;
}

/// The nodes [`walk_node`] writes for `n` and its subtree, the records a
/// [`Value::Records`] node stands for counted.
pub(crate) fn text_weight(n: &Node) -> usize {
    let mut w = 0usize;
    n.walk(&mut |c, _| {
        w = w.saturating_add(match &c.value {
            Value::Records(d) => usize::try_from(d.count).unwrap_or(usize::MAX),
            _ => 1,
        });
    });
    w
}

/// Hands `line` the columns of `n` and of every node under it, in order:
/// `n` the top of the tree, or a child (the last of its parent's when
/// `last`) under the guides in `f`, as a text stream writes a node handed
/// over whole (`stream_text`). A [`Value::Records`] node whose bytes `bytes`
/// holds stands for the nodes of its records, made from them — in the
/// compact layout, their lines written from the bytes as one block
/// ([`Lines::block`]).
pub(crate) fn walk_node(
    n: &Node,
    (last, top): (bool, bool),
    bytes: &SourceBytes<'_>,
    f: &mut Fields,
    line: &mut dyn Lines,
) {
    line.node(f, n, top);
    let at = f.prefix.len();
    if !top {
        f.push_guide(last);
    }
    let count = n.children.len();
    for (i, c) in n.children.iter().enumerate() {
        let last = i + 1 == count;
        if let Value::Records(d) = &c.value {
            if let Some(b) = bytes.span(c.source, c.offset, c.length) {
                // Compact lines are written straight from the records' bytes.
                if let Layout::Compact { about } = f.layout {
                    let mut lead = std::mem::take(&mut f.lead);
                    lead.clear();
                    lead.push_str(&f.indent);
                    lead.push_str(&f.prefix);
                    let mut pool = std::mem::take(&mut f.pool);
                    let (at, source) = (c.offset, c.source);
                    let taken = line.block(f, &mut |out| {
                        (d.write_text)(d, b, at, source, &lead, about, out, &mut pool)
                    });
                    (f.lead, f.pool) = (lead, pool);
                    if taken {
                        continue;
                    }
                }
                (d.expand)(d, b, c.offset, c.source, &mut |r, last_record| {
                    walk_node(&r, (last && last_record, false), bytes, f, line);
                });
                continue;
            }
        }
        walk_node(c, (last, false), bytes, f, line);
    }
    f.prefix.truncate(at);
}

/// Appends `s` and spaces up to `width` characters.
fn pad<S: TextSink + ?Sized>(out: &mut S, s: &str, width: usize) {
    const SPACES: &str = "                                                                ";
    out.push_text(s);
    let mut n = width.saturating_sub(s.chars().count());
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_text(SPACES.get(..k).unwrap_or_default());
        n -= k;
    }
}

/// True when `s` has a control character (C0, DEL or C1: all below U+00A0,
/// so a byte scan finds them — C1 ones are `0xc2 0x80..=0x9f` in UTF-8).
fn has_control(s: &str) -> bool {
    let b = s.as_bytes();
    // Most texts have none of the bytes a control character needs.
    let suspect = |c: u8| c < 0x20 || c == 0x7f || c == 0xc2;
    if json::all_bytes(b, |c| !suspect(c)) {
        return false;
    }
    b.iter().enumerate().any(|(i, &c)| {
        c < 0x20 || c == 0x7f || (c == 0xc2 && b.get(i + 1).is_some_and(|&d| d < 0xa0))
    })
}

/// Appends a node's name or type: a borrowed text is `'static`, the
/// schema's and the project's own words, which hold no control character
/// (`static_texts_need_no_escape`), and is copied as it is; a text made at
/// run time is escaped.
#[inline]
fn push_text<S: TextSink + ?Sized>(out: &mut S, t: &Text) {
    match t {
        Cow::Borrowed(s) => out.push_text(s),
        Cow::Owned(s) => push_escaped(out, s),
    }
}

/// Appends `s` with its control characters escaped, as [`escape_text`] does.
fn push_escaped<S: TextSink + ?Sized>(out: &mut S, s: &str) {
    if !has_control(s) {
        out.push_text(s);
        return;
    }
    let mut utf8 = [0u8; 4];
    for c in s.chars() {
        if c.is_control() {
            c.escape_default()
                .for_each(|e| out.push_text(e.encode_utf8(&mut utf8)));
        } else {
            out.push_text(c.encode_utf8(&mut utf8));
        }
    }
}

/// Appends a value's text with its detail, as a text line shows them
/// ([`value_text_clean`], control characters escaped when the text is not
/// known clean): integers, printable ASCII strings and texts written in
/// place, and the detail after them, each escaped on its own (an integer's
/// or a printable string's text has nothing to escape: after one, a
/// `'static` detail is not escaped either); other values made by
/// [`value_text_clean`] in `scratch`.
pub(crate) fn put_value(
    out: &mut Vec<u8>,
    value: &Value,
    detail: Option<&Text>,
    scratch: &mut String,
) {
    let start = out.len();
    let clean = match value {
        Value::Int(v) => {
            json::i64(out, *v);
            true
        }
        Value::Uint(v) => {
            json::u64(out, *v);
            true
        }
        Value::Str(v) => match json::printable_ascii_quotes(v.as_bytes()) {
            Some(quotes) => {
                out.push(b'"');
                json::backslashed_counted(out, v.as_bytes(), quotes);
                out.push(b'"');
                true
            }
            None => return put_value_made(out, value, detail, scratch),
        },
        Value::Text(t) => {
            push_escaped(out, t);
            false
        }
        Value::None => false,
        _ => return put_value_made(out, value, detail, scratch),
    };
    let Some(d) = detail else {
        return;
    };
    // After a value, in parentheses; alone, as it is.
    let alone = out.len() == start;
    if !alone {
        out.extend_from_slice(b" (");
    }
    match d {
        Cow::Borrowed(d) if clean => out.extend_from_slice(d.as_bytes()),
        d => push_escaped(out, d),
    }
    if !alone {
        out.push(b')');
    }
}

/// [`put_value`] of the other values, by [`value_text_clean`].
#[inline(never)]
fn put_value_made(out: &mut Vec<u8>, value: &Value, detail: Option<&Text>, scratch: &mut String) {
    scratch.clear();
    if value_text_clean(value, detail, scratch) {
        out.extend_from_slice(scratch.as_bytes());
    } else {
        push_escaped(out, scratch);
    }
}

/// Escapes control characters (ESC, CR, BEL, ...) so captured bytes can never
/// drive the terminal: they are shown as `\u{1b}`-style escapes.
pub fn escape_text(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    push_escaped(&mut o, s);
    o
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render_text(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_spaces_appends_exactly_n_spaces() {
        for n in [0, 1, 4, 63, 64, 65, 200] {
            let mut out = b"x".to_vec();
            put_spaces(&mut out, n);
            assert_eq!(out.len(), 1 + n, "{n}");
            assert!(out[1..].iter().all(|&b| b == b' '), "{n}");
        }
    }

    /// `Value::push_display` (integers and printable strings written
    /// without `fmt`) gives `Value::write_display`'s text for every node of
    /// every capture's full trees, and for the edges of both.
    #[test]
    fn the_fast_display_is_the_formatted_one() {
        let check = |v: &Value| {
            let (mut fast, mut formatted) = (String::from("x"), String::from("x"));
            v.push_display(&mut fast);
            let _ = v.write_display(&mut formatted);
            assert_eq!(fast, formatted, "{v:?}");
        };
        let edges = [
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Int(0),
            Value::Int(-7),
            Value::Uint(u64::MAX),
            Value::Uint(0),
            Value::Str(String::new()),
            Value::Str(r#"a"b\c\"#.into()),
            Value::Str("\"\"".into()),
            Value::Str("caf\u{e9}\n".into()),
        ];
        edges.iter().for_each(check);
        let mut nodes = 0;
        for p in crate::test_captures::all() {
            for m in crate::test_captures::messages(&p, crate::test_captures::full_trees()) {
                if let Some(d) = &m.decoded {
                    d.root.walk(&mut |n, _| {
                        nodes += 1;
                        check(&n.value);
                    });
                }
            }
        }
        assert!(nodes > 10_000, "{nodes}");
    }

    #[test]
    fn static_texts_need_no_escape() {
        // `json::text_inner` copies borrowed names and types as they are: every
        // name and type text of the schema's tables must need no escape.
        use crate::kafka::schema::{self, FieldKind, StructDef};
        fn walk(s: &'static StructDef, seen: &mut Vec<usize>, texts: &mut Vec<&'static str>) {
            let key = std::ptr::from_ref(s) as usize;
            if seen.contains(&key) {
                return;
            }
            seen.push(key);
            texts.push(s.name);
            for f in s.fields {
                texts.extend([f.name, f.type_name]);
                match f.kind {
                    FieldKind::Struct(t) | FieldKind::Array(schema::Elem::Struct(t)) => {
                        walk(t, seen, texts);
                    }
                    _ => {}
                }
            }
        }
        let (mut seen, mut texts) = (Vec::new(), Vec::new());
        let defs = schema::MESSAGES
            .iter()
            .chain([&schema::REQUEST_HEADER, &schema::RESPONSE_HEADER])
            .chain(schema::DATA_SCHEMAS.iter().copied());
        for d in defs {
            texts.push(d.name);
            walk(d.body, &mut seen, &mut texts);
        }
        assert!(texts.len() > 1000, "{} texts", texts.len());
        for t in texts {
            let mut escaped = Vec::new();
            json::escape_into(&mut escaped, t);
            assert_eq!(escaped, t.as_bytes(), "{t:?}");
            let mut out = Vec::new();
            json::text_inner(&mut out, &Text::Borrowed(t));
            assert_eq!(out, t.as_bytes());
        }
    }

    #[test]
    fn texts_made_at_run_time_are_escaped() {
        let mut out = Vec::new();
        json::text_inner(&mut out, &Text::Owned("a\"b\\c\n".to_string()));
        assert_eq!(out, br#"a\"b\\c\n"#);
    }

    #[test]
    fn value_text_joins_value_and_detail() {
        let n = Node::new(
            "request_api_key",
            "int16",
            Value::Int(0),
            4,
            2,
            Role::Header,
        )
        .with_detail("Produce");
        assert_eq!(n.value_text(), "0 (Produce)");
        let s = Node::new(
            "Name",
            "string",
            Value::Str(String::new()),
            0,
            1,
            Role::RequestBody,
        )
        .with_detail("compact, len+1=1");
        assert_eq!(s.value_text(), r#""" (compact, len+1=1)"#);
    }

    #[test]
    fn control_characters_are_escaped_in_text() {
        let n = Node::new(
            "Name",
            "string",
            Value::Str("a\u{1b}[2Jb".into()),
            0,
            7,
            Role::RequestBody,
        );
        let t = render_text(&n);
        assert!(!t.contains('\u{1b}'));
        assert!(t.contains(r"\u{1b}[2Jb"), "{t}");
    }

    /// The text layout as it was first written, line by line with a string
    /// per cell: the model [`render_text`] and [`write_text`] are checked against.
    fn naive_render_text(root: &Node) -> String {
        fn esc(s: &str) -> String {
            s.chars()
                .flat_map(|c| {
                    let e: Vec<char> = if c.is_control() {
                        c.escape_default().collect()
                    } else {
                        vec![c]
                    };
                    e
                })
                .collect()
        }
        let mut lines: Vec<[String; 5]> = Vec::new();
        fn collect(n: &Node, prefix: &str, last: bool, top: bool, out: &mut Vec<[String; 5]>) {
            let name = if top {
                n.name.to_string()
            } else {
                format!("{prefix}+-- {}", esc(&n.name))
            };
            let v = n.value_text();
            let value = if v.is_empty() {
                String::new()
            } else {
                format!("= {}", esc(&v))
            };
            let src = if n.source != 0 {
                format!("#{}:", n.source)
            } else {
                String::new()
            };
            let mut about = n.about.as_deref().map(esc).unwrap_or_default();
            if let Some(e) = &n.error {
                if !about.is_empty() {
                    about.push_str(" — ");
                }
                about.push_str("MALFORMED: ");
                about.push_str(&esc(e));
            }
            let span = format!("[{src}0x{:04x}, {}B]", n.offset, n.length);
            out.push([name, esc(&n.ty), value, span, about]);
            let child_prefix = match (top, last) {
                (true, _) => String::new(),
                (false, true) => format!("{prefix}    "),
                (false, false) => format!("{prefix}|   "),
            };
            for (i, c) in n.children.iter().enumerate() {
                collect(c, &child_prefix, i + 1 == n.children.len(), false, out);
            }
        }
        collect(root, "", true, true, &mut lines);
        let width = |k: usize, min: usize| {
            lines
                .iter()
                .map(|l| l[k].chars().count() + 2)
                .max()
                .unwrap_or(0)
                .max(min)
        };
        let w = [width(0, 54), width(1, 24), width(2, 35), width(3, 15)];
        let padded = |s: &str, w: usize| format!("{s}{}", " ".repeat(w - s.chars().count()));
        let mut s = String::new();
        for l in &lines {
            s.push_str(&padded(&l[0], w[0]));
            s.push_str(&padded(&l[1], w[1]));
            s.push_str(&padded(&l[2], w[2]));
            if l[4].is_empty() {
                s.push_str(&l[3]);
            } else {
                s.push_str(&padded(&l[3], w[3]));
                s.push_str(&l[4]);
            }
            s.truncate(s.trim_end().len());
            s.push('\n');
        }
        s
    }

    /// `write_text` with an indent: what print `-V` did with `render_text`.
    fn indented(root: &Node, indent: &str) -> String {
        let mut s = String::new();
        for line in naive_render_text(root).lines() {
            s.push_str(indent);
            s.push_str(line);
            s.push('\n');
        }
        s
    }

    /// Checks `render_text` and `write_text` (to a string and to bytes, with
    /// and without an indent, after other text) against the model.
    fn assert_text_is_naive(root: &Node) {
        let want = naive_render_text(root);
        assert_eq!(render_text(root), want);
        for indent in ["", "    "] {
            let want = indented(root, indent);
            let mut s = String::from("before\n");
            write_text(&mut s, root, indent);
            assert_eq!(s.strip_prefix("before\n"), Some(want.as_str()));
            let mut b = b"before\n".to_vec();
            let reserved = {
                let mut v = Vec::new();
                write_text(&mut v, root, indent);
                v.capacity()
            };
            write_text(&mut b, root, indent);
            assert_eq!(b.strip_prefix(b"before\n"), Some(want.as_bytes()));
            // The first walk sizes the output exactly: one allocation.
            assert_eq!(reserved, want.len());
        }
    }

    #[test]
    fn text_is_the_naive_layout_on_every_shipped_capture() {
        let mut n = 0;
        for p in crate::test_captures::shipped() {
            for m in crate::test_captures::messages(&p, crate::test_captures::full_trees()) {
                if let Some(d) = &m.decoded {
                    assert_text_is_naive(&d.root);
                    n += 1;
                }
            }
        }
        assert!(n > 100, "{n} trees");
    }

    #[test]
    fn text_is_the_naive_layout_on_tricky_trees() {
        let tricky = tricky_strings();
        // Every string as name, type, value, detail, description and error,
        // plus blanks a line must not end with (description made only of
        // spaces, or ending with Unicode white space) and wide cells.
        let mut root = Node::new("Message", "message v1", Value::None, 0, 10, Role::Message);
        let mut blanks: Vec<String> = tricky.clone();
        blanks.extend(
            [
                "   ",
                "ends with space ",
                "nbsp\u{a0}",
                "ideographic\u{3000}",
                "\u{2028}",
                "x\u{85}",
            ]
            .map(String::from),
        );
        blanks.push("w".repeat(90));
        for (i, t) in blanks.iter().enumerate() {
            let mut c = Node::new(
                Text::Owned(t.clone()),
                Text::Owned(t.clone()),
                Value::Str(t.clone()),
                i * 3,
                i,
                Role::RequestBody,
            );
            c.detail = (i % 2 == 0).then(|| Text::Owned(t.clone()));
            c.about = (i % 3 != 0).then(|| Text::Owned(t.clone()));
            c.error = (i % 4 == 1).then(|| t.clone());
            c.source = u16::try_from(i % 3).unwrap_or(0);
            let mut g = Node::new("child", "int8", Value::Int(-1), 0, 1, Role::RequestBody);
            g.children.push(Node::new(
                "",
                "",
                Value::Text(Text::Owned(t.clone())),
                0,
                0,
                Role::Record,
            ));
            c.children.push(g.clone());
            c.children.push(g);
            root.children.push(c);
        }
        assert_text_is_naive(&root);
        for t in &blanks {
            assert_text_is_naive(&Node::new(
                Text::Owned(t.clone()),
                "t",
                Value::None,
                0,
                0,
                Role::Message,
            ));
            assert_text_is_naive(
                &Node::new("n", "t", Value::None, 0, 0, Role::Message).with_about(t.clone()),
            );
        }
        // A top name with a line break (never made by the decoder): the
        // indent still starts every line `lines()` gives.
        let mut odd = Node::new("a\nb\r", "t", Value::None, 0, 0, Role::Message);
        odd.children
            .push(Node::new("c", "t", Value::Null, 0, 0, Role::Header));
        for indent in ["", "  "] {
            let mut s = String::new();
            write_text(&mut s, &odd, indent);
            assert_eq!(s, indented(&odd, indent));
        }
    }

    #[test]
    fn escape_text_finds_every_control_character() {
        for c in (0u32..0x800).filter_map(char::from_u32) {
            let s = format!("a{c}b");
            assert_eq!(has_control(&s), c.is_control(), "{c:?}");
            let want: String = s
                .chars()
                .flat_map(|c| {
                    let e: Vec<char> = if c.is_control() {
                        c.escape_default().collect()
                    } else {
                        vec![c]
                    };
                    e
                })
                .collect();
            assert_eq!(escape_text(&s), want, "{c:?}");
        }
    }

    /// Strings that exercise every escape path: JSON escapes, Debug escapes,
    /// non-ASCII, chunk boundaries of the eight-byte scan.
    fn tricky_strings() -> Vec<String> {
        let mut v: Vec<String> = [
            "",
            "plain",
            "{\"k\":\"v\",\"n\":1}",
            "back\\slash",
            "tab\there\nnew\rret",
            "\u{0}\u{1}\u{8}\u{b}\u{c}\u{1b}[2J\u{1f}\u{7f}",
            "é ü ✓ 😀",
            "\u{301}combining at start",
            "a\u{200b}zero width",
            "'single' quotes",
            "0123456\"89abcdef\\0123456789abcdef\u{1}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for n in 0..20 {
            let mut s = "x".repeat(n);
            s.push('"');
            s.push_str(&"y".repeat(n % 9));
            s.push('\u{2}');
            v.push(s);
        }
        v
    }

    #[test]
    fn json_escape_is_serde_json_escape() {
        for s in tricky_strings() {
            let mut got = Vec::new();
            json::str(&mut got, &s);
            assert_eq!(
                String::from_utf8(got).expect("utf8"),
                serde_json::to_string(&s).expect("json"),
                "{s:?}"
            );
        }
    }

    /// The tree's JSON built with serde_json's own values: the oracle the
    /// hand-written writer is checked against.
    fn serde_tree(n: &Node) -> serde_json::Value {
        use serde_json::Value as J;
        let value = match &n.value {
            Value::None | Value::Null => J::Null,
            Value::Int(v) => J::from(*v),
            Value::Uint(v) => J::from(*v),
            Value::Float(v) => {
                serde_json::Number::from_f64(*v).map_or_else(|| J::String(v.to_string()), J::Number)
            }
            Value::Bool(v) => J::Bool(*v),
            Value::Str(v) => J::String(v.clone()),
            _ => J::String(n.value.display()),
        };
        let mut m = serde_json::Map::new();
        m.insert("name".into(), n.name.as_ref().into());
        m.insert("type".into(), n.ty.as_ref().into());
        m.insert("value".into(), value);
        m.insert("display".into(), n.value_text().into());
        m.insert("offset".into(), n.offset.into());
        m.insert("length".into(), n.length.into());
        if n.source != 0 {
            m.insert("source".into(), n.source.into());
        }
        if let Some(e) = &n.error {
            m.insert("error".into(), e.as_str().into());
        }
        m.insert(
            "children".into(),
            n.children.iter().map(serde_tree).collect(),
        );
        J::Object(m)
    }

    #[test]
    fn write_json_is_serde_json_for_every_kind_of_value() {
        let mut values = vec![
            Value::None,
            Value::Null,
            Value::Int(-42),
            Value::Int(i64::MIN),
            Value::Uint(u64::MAX),
            Value::Float(1.0),
            Value::Float(-0.5e-300),
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Float(0.1 + 0.2),
            Value::Float(f64::MIN_POSITIVE),
            Value::Float(-1.7976931348623157e308),
            Value::Bool(true),
            Value::Bool(false),
            Value::bytes(&[]),
            Value::bytes(&[1, 2, 0xff]),
            Value::bytes(&[7; 40]),
            Value::Uuid([0xab; 16]),
            Value::Text("".into()),
            Value::Text("3 records".into()),
        ];
        for s in tricky_strings() {
            values.push(Value::Str(s.clone()));
            values.push(Value::Text(s.into()));
        }
        for v in values {
            for detail in [None, Some(""), Some("compact, len+1=1"), Some("a\"b\u{1}")] {
                // Names and types made at run time may need escapes (static
                // ones never do: `static_texts_need_no_escape`).
                let (name, ty) = ("Na\"me".to_string(), "ty\\pe".to_string());
                let mut n = Node::new(name, ty, v.clone(), 3, 7, Role::Record);
                n.detail = detail.map(|d| Text::from(d.to_string()));
                n.error = detail.map(|d| format!("bad {d}"));
                n.source = u16::from(detail.is_some());
                let mut parent = Node::new("P", "struct", Value::None, 0, 10, Role::Header);
                parent.children.push(n.clone());
                parent.children.push(n);
                let mut got = Vec::new();
                parent.write_json(&mut got);
                let want = serde_tree(&parent);
                assert_eq!(
                    String::from_utf8(got).expect("utf8"),
                    want.to_string(),
                    "{v:?} {detail:?}"
                );
                assert_eq!(parent.to_json(), want, "{v:?} {detail:?}");
            }
        }
    }

    /// Strings built from pieces that stress the word-at-a-time escape:
    /// quotes, backslashes and control characters at every position of a
    /// word, runs of plain text, non-ASCII.
    fn escape_heavy() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\n".to_string()),
            (0u8..0x20).prop_map(|b| char::from(b).to_string()),
            Just("\u{7f}".to_string()),
            "[a-z]{0,11}",
            // Long plain runs: the copy-whole path, with a special byte
            // past its first 32-byte chunk when another piece follows.
            "[a-z ]{24,80}",
            any::<char>().prop_map(|c| c.to_string()),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        /// A line's value as bytes is the value's text, escaped unless it is
        /// known clean: every kind of value, with and without a detail made at run time or
        /// `'static`, control characters in either.
        #[test]
        fn a_value_put_as_bytes_is_its_escaped_text(
            s in escape_heavy(),
            d in escape_heavy(),
            i: i64,
            kind in 0usize..9,
            detail in 0usize..3,
        ) {
            let value = match kind {
                0 => Value::Int(i),
                1 => Value::Uint(i.unsigned_abs()),
                2 => Value::Str(s.clone()),
                3 => Value::Str(s.replace(|c: char| !c.is_ascii_graphic(), "_")),
                4 => Value::Text(Text::Owned(s.clone())),
                5 => Value::Text(Text::Borrowed("3 elements")),
                6 => Value::None,
                7 => Value::bytes(s.as_bytes()),
                _ => Value::Null,
            };
            let detail = match detail {
                0 => None,
                1 => Some(Text::Owned(d.clone())),
                _ => Some(Text::Borrowed("compact, len+1=4\u{1b}")),
            };
            // The value's text, escaped unless known clean.
            let mut raw = String::new();
            let clean = value_text_clean(&value, detail.as_ref(), &mut raw);
            let want = format!("x{}", if clean { raw } else { escape_text(&raw) });
            let mut got = b"x".to_vec();
            put_value(&mut got, &value, detail.as_ref(), &mut String::new());
            proptest::prop_assert_eq!(String::from_utf8(got).expect("utf8"), want);
        }

        #[test]
        fn fast_escape_is_serde_json_escape(s in escape_heavy(), t in ".*") {
            for s in [&s, &t] {
                let mut got = b"prefix".to_vec();
                json::str(&mut got, s);
                let want = format!("prefix{}", serde_json::to_string(s).expect("json"));
                proptest::prop_assert_eq!(String::from_utf8(got).expect("utf8"), want);
            }
        }

        #[test]
        fn write_json_is_serde_json_of_the_tree(
            s in escape_heavy(),
            t in "[ -~]{0,40}",
            detail in proptest::option::of("[ -~]{0,8}"),
        ) {
            let mut root = Node::new("r", "struct", Value::None, 0, 9, Role::Header);
            for v in [Value::Str(s.clone()), Value::Str(t.clone()), Value::Text(t.into()), Value::bytes(s.as_bytes())] {
                let mut n = Node::new("n", "string", v, 1, 2, Role::Record);
                n.detail = detail.clone().map(Text::from);
                let mut parent = n.clone();
                parent.children.push(n);
                root.children.push(parent);
            }
            let mut got = Vec::new();
            root.write_json(&mut got);
            let want = serde_json::to_string(&serde_tree(&root)).expect("json");
            proptest::prop_assert_eq!(String::from_utf8(got).expect("utf8"), want);
        }

        #[test]
        fn fast_debug_escape_is_debug_then_json(
            s in "[ -~]{0,80}",
            plain in "[a-z ]{24,100}",
            at in 0usize..100,
            special in proptest::sample::select(vec!["\"", "\\", "a"]),
        ) {
            proptest::prop_assume!(json::is_printable_ascii(s.as_bytes()));
            // A plain run with at most one `"` or `\\` somewhere in it.
            let mut p = plain.clone();
            p.insert_str(at.min(p.len()), special);
            let mut got = Vec::new();
            json::debug_printable_into(&mut got, &p);
            let want = serde_json::to_string(&format!("{p:?}")).expect("json");
            proptest::prop_assert_eq!(
                String::from_utf8(got).expect("utf8"),
                want.get(1..want.len() - 1).expect("quoted")
            );
            let mut got = Vec::new();
            json::debug_printable_into(&mut got, &s);
            let want = serde_json::to_string(&format!("{s:?}")).expect("json");
            proptest::prop_assert_eq!(
                String::from_utf8(got).expect("utf8"),
                want.get(1..want.len() - 1).expect("quoted")
            );
        }

        #[test]
        fn backslashed_is_debug_of_printable_ascii(
            s in "[ -~]{0,80}",
            dense in "[\"\\\\a-c]{0,40}",
            plain in "[a-z ]{24,100}",
        ) {
            for t in [&s, &dense, &plain, &format!("{plain}{dense}{s}")] {
                let quotes = json::printable_ascii_quotes(t.as_bytes()).expect("printable");
                let mut got = b"x".to_vec();
                json::backslashed_counted(&mut got, t.as_bytes(), quotes);
                let want = format!("{t:?}");
                proptest::prop_assert_eq!(
                    String::from_utf8(got).expect("utf8"),
                    format!("x{}", want.get(1..want.len() - 1).expect("quoted"))
                );
            }
        }

        #[test]
        fn hex_digits_are_lower_hex(v in proptest::prelude::any::<u64>(), bits in 0u32..64) {
            for v in [v, v >> bits, 1 << bits, (1 << bits) - 1] {
                let mut got = b"x".to_vec();
                put_hex(&mut got, v);
                proptest::prop_assert_eq!(String::from_utf8(got).expect("utf8"), format!("x{v:x}"));
            }
        }

        #[test]
        fn both_escapes_in_one_pass_are_each_escape(
            s in "[ -~]{0,80}",
            plain in "[a-z ]{24,100}",
            at in 0usize..100,
            special in proptest::sample::select(vec!["\"", "\\", "a"]),
            dense in "[\"\\\\a]{0,40}",
        ) {
            let mut p = plain.clone();
            p.insert_str(at.min(p.len()), special);
            for t in [&s, &p, &dense] {
                let (mut d, mut v) = (b"d".to_vec(), b"v".to_vec());
                let quotes = json::printable_ascii_quotes(t.as_bytes()).expect("printable");
                json::debug_and_escape_counted(&mut d, &mut v, t.as_bytes(), quotes);
                let (mut d2, mut v2) = (b"d".to_vec(), b"v".to_vec());
                json::debug_printable_into(&mut d2, t);
                json::escape_into(&mut v2, t);
                proptest::prop_assert_eq!(d, d2);
                proptest::prop_assert_eq!(v, v2);
            }
        }

        #[test]
        fn printable_text_and_its_quotes_in_one_pass(
            b in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'"', b'\\', b' ', b'~', 0x1f, 0x7f, 0x80]),
                0..200,
            ),
        ) {
            let want = json::is_printable_ascii(&b)
                .then(|| b.iter().filter(|&&x| x == b'"' || x == b'\\').count());
            proptest::prop_assert_eq!(json::printable_ascii_quotes(&b), want);
        }

        /// The same over several 64-byte blocks: printable text, with one
        /// byte that is not at any place (or none).
        #[test]
        fn quotes_counted_across_blocks(
            mut b in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b'"', b'\\', b' ', b'~', b'{']),
                0..400,
            ),
            bad in proptest::option::of((
                proptest::prelude::any::<proptest::sample::Index>(),
                proptest::sample::select(vec![0u8, 0x1f, 0x7f, 0x80, 0xff]),
            )),
        ) {
            if let (Some((at, x)), false) = (bad, b.is_empty()) {
                let i = at.index(b.len());
                b[i] = x;
            }
            let want = json::is_printable_ascii(&b)
                .then(|| b.iter().filter(|&&x| x == b'"' || x == b'\\').count());
            proptest::prop_assert_eq!(json::printable_ascii_quotes(&b), want);
        }

        #[test]
        fn integers_are_decimal(
            v in proptest::prelude::any::<u64>(),
            w in 0u64..1 << 40,
            x in 0u64..100_000,
            i in proptest::prelude::any::<i64>(),
        ) {
            let mut out = b"x".to_vec();
            for v in [v, w, x] {
                json::u64(&mut out, v);
                out.push(b' ');
            }
            json::i64(&mut out, i);
            proptest::prop_assert_eq!(out, format!("x{v} {w} {x} {i}").into_bytes());
        }
    }

    #[test]
    fn eight_digits_side_by_side() {
        // The lanes of `digits8` do not touch each other, so every value of
        // each half, beside values of the other, covers all the steps.
        let text = |v: u64| {
            let d = json::digits8(v);
            (0..8)
                .map(|i| char::from(b'0' + (d >> (8 * i)) as u8))
                .collect::<String>()
        };
        for i in 0..10_000u64 {
            for v in [i * 10_000 + i, i * 10_000 + (9_999 - i), i, i * 10_000] {
                assert_eq!(text(v), format!("{v:08}"));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn integers_as_std_writes_them(v: u64, i: i64, digits in 1u32..=20, below in 0u64..3) {
            let mut out = Vec::new();
            // Every length's first value, last value and some in between.
            let p = 10u64.checked_pow(digits - 1).unwrap_or(0);
            let edge = p.wrapping_add(below).wrapping_sub(1);
            let mut want = String::new();
            for x in [v, p, edge, p.saturating_add(v % p.max(1))] {
                json::u64(&mut out, x);
                out.push(b' ');
                want.push_str(&format!("{x} "));
            }
            json::i64(&mut out, i);
            let n = (p as i64).wrapping_abs().wrapping_neg();
            json::i64(&mut out, n);
            want.push_str(&format!("{i}{n}"));
            proptest::prop_assert_eq!(String::from_utf8(out).expect("utf8"), want);
        }
    }

    #[test]
    fn integers_as_text() {
        let mut buf = [0u8; 20];
        for v in [
            0,
            1,
            9,
            10,
            99,
            100,
            12345,
            99_999_999,
            100_000_000,
            100_000_001,
            9_999_999_999_999_999,
            10_000_000_000_000_000,
            u64::MAX,
        ] {
            assert_eq!(json::u64_text(&mut buf, v), v.to_string().as_bytes());
            let mut out = Vec::new();
            json::u64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
        let mut out = Vec::new();
        json::i64(&mut out, i64::MIN);
        assert_eq!(out, i64::MIN.to_string().as_bytes());
    }

    #[test]
    fn element_names_and_numbers() {
        assert_eq!(indexed_name("Record", 0), "Record[0]");
        assert_eq!(indexed_name("Topics", 1234), "Topics[1234]");
        let mut s = String::from("offset ");
        push_int(&mut s, i64::MIN);
        push_uint(&mut s, u64::MAX);
        push_int(&mut s, 7);
        assert_eq!(s, format!("offset {}{}7", i64::MIN, u64::MAX));
    }

    #[test]
    fn shared_element_names_are_the_formatted_ones() {
        // Out of order, at and past the end of the table, two names.
        for i in (0..=SHARED_INDICES + 2).rev().chain([0, 7, u64::MAX]) {
            for name in ["Topics", "Partitions"] {
                let t = indexed_text(name, i);
                assert_eq!(t, format!("{name}[{i}]"));
                assert_eq!(matches!(t, Text::Borrowed(_)), i < SHARED_INDICES);
            }
        }
        // Another thread sees the same texts, from the shared table (keyed by
        // the name's address: the same static here).
        static NAME: &str = "Topics";
        let a = indexed_text(NAME, 3);
        let b = std::thread::spawn(|| indexed_text(NAME, 3)).join().unwrap();
        assert_eq!(a.as_ptr(), b.as_ptr());
    }

    #[test]
    fn small_texts_are_the_made_ones() {
        static T: SmallTexts = SmallTexts::new(4, |n| format!("{n} elements"));
        for n in [3, 0, 1, 4, 5, u64::MAX] {
            let t = T.get(n);
            assert_eq!(t, format!("{n} elements"));
            assert_eq!(matches!(t, Text::Borrowed(_)), n < 4);
        }
    }

    #[test]
    fn uuid_format() {
        let u = [
            0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44,
            0x00, 0x00,
        ];
        assert_eq!(format_uuid(&u), "550e8400-e29b-41d4-a716-446655440000");
    }
}
