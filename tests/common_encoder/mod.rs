//! A schema-driven encoder of Kafka message bodies, for tests.
//!
//! It walks kafkashark's own schema tables for one message and version and
//! writes every field the way Kafka's wire format says: random values
//! ([`Fill::Random`]) or the schema defaults ([`Fill::Default`]). While it
//! writes, it records what kafkashark's decoder must show for each node — the
//! tree path, the type text, the value and the span — as a list of
//! [`Expect`]s. Tests feed the bytes to an independent decoder (the
//! `kafka-protocol` crate) and to kafkashark, and compare both against what was
//! written.
//!
//! Invariants: the encoder never writes a value the schema forbids in the
//! version (no null where the field is not nullable, tagged fields only in
//! flexible versions, in ascending tag order, each at most once); a tagged
//! field is written only when its value differs from the schema default, as
//! Kafka's own serializers do (so a re-encoding by another implementation is
//! byte-identical); floats are finite and never -0.0.

use kafkashark::kafka::schema::{Elem, FieldDef, FieldKind, MessageDef, Prim, StructDef};
use kafkashark::kafka::{Node, Value};
use rand::rngs::StdRng;
use rand::Rng;

/// Where field values come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Random values, nulls where nullable, 0-3 array elements, random tagged fields.
    Random,
    /// The schema defaults (`FieldDef::default`), no tagged fields.
    Default,
}

/// What a node's value must be.
#[derive(Clone, Debug, PartialEq)]
pub enum Want {
    /// Exactly this value.
    Is(Value),
    /// Some `Value::Text` (a record-set summary, whose wording belongs to the records module).
    AnyText,
}

/// One node kafkashark must show.
#[derive(Clone, Debug)]
pub struct Expect {
    /// Child names from the root (`["ProduceRequest", "TopicData", "TopicProduceData[0]"]`).
    pub path: Vec<String>,
    /// The node's type text.
    pub ty: String,
    /// The node's value.
    pub want: Want,
    /// First byte, from the first byte of the message's size prefix.
    pub offset: usize,
    /// Number of bytes.
    pub length: usize,
    /// True when the node may have children this list does not describe
    /// (record batches, protocols embedded in bytes).
    pub opaque: bool,
}

/// A message body (or header) with the nodes it must decode to.
#[derive(Clone, Debug, Default)]
pub struct Encoded {
    /// The bytes, offsets in `expects` are relative to their first byte.
    pub bytes: Vec<u8>,
    /// What kafkashark must show.
    pub expects: Vec<Expect>,
}

impl Encoded {
    /// Moves every expectation `by` bytes later (after prepending bytes).
    pub fn shift(&mut self, by: usize) {
        for e in &mut self.expects {
            e.offset += by;
        }
    }
}

/// Encodes the body of `def` at `version`. `Err` names a default that cannot
/// be written in this version (a null default for a field not nullable here).
pub fn encode_body(
    def: &'static MessageDef,
    version: i16,
    fill: Fill,
    rng: &mut StdRng,
) -> Result<Encoded, String> {
    let mut e = Encoder {
        rng,
        fill,
        version,
        flexible: def.is_flexible(version),
        out: Vec::new(),
        expects: Vec::new(),
        path: vec![def.name.to_string()],
        depth: 0,
        impossible: None,
    };
    e.structure(def.body);
    let len = e.out.len();
    e.expect(Vec::new(), "struct", Want::Is(Value::None), 0, len);
    match e.impossible {
        Some(why) => Err(why),
        None => Ok(Encoded {
            bytes: e.out,
            expects: e.expects,
        }),
    }
}

/// Appends an unsigned varint (Kafka's `writeUnsignedVarint`).
pub fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a zigzag varint (Kafka's `writeVarint` / `writeVarlong`).
pub fn put_varint(out: &mut Vec<u8>, v: i64) {
    put_uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// A random string of `0..=max` characters: printable ASCII, now and then
/// with multi-byte UTF-8 (so bytes and characters differ), and one time in 16
/// 127-300 characters long (so compact lengths need two varint bytes).
pub fn text(rng: &mut StdRng, max: usize) -> String {
    const WIDE: [char; 4] = ['é', '€', 'ß', '𝄞'];
    let n = if rng.gen_ratio(1, 16) {
        rng.gen_range(127..=300)
    } else {
        rng.gen_range(0..=max)
    };
    let wide = rng.gen_ratio(1, 8);
    (0..n)
        .map(|_| {
            if wide && rng.gen_ratio(1, 4) {
                WIDE[rng.gen_range(0..WIDE.len())]
            } else {
                char::from(rng.gen_range(0x20u8..0x7f))
            }
        })
        .collect()
}

/// A valid RecordBatch v2 (magic 2, correct CRC-32C) with zero or one record.
pub fn record_batch(rng: &mut StdRng) -> Vec<u8> {
    let mut records = Vec::new();
    let count: i32 = rng.gen_range(0..=1);
    if count == 1 {
        let mut r = Vec::new();
        r.push(0); // attributes
        put_varint(&mut r, rng.gen_range(0..1000)); // timestampDelta
        put_varint(&mut r, 0); // offsetDelta
        if rng.gen_bool(0.5) {
            put_varint(&mut r, -1); // null key
        } else {
            let k = text(rng, 6);
            put_varint(&mut r, k.len() as i64);
            r.extend_from_slice(k.as_bytes());
        }
        let v = text(rng, 12);
        put_varint(&mut r, v.len() as i64);
        r.extend_from_slice(v.as_bytes());
        put_varint(&mut r, 0); // no headers
        put_varint(&mut records, r.len() as i64);
        records.extend_from_slice(&r);
    }
    let mut b = Vec::new();
    b.extend_from_slice(&rng.gen_range(0i64..1_000_000).to_be_bytes()); // baseOffset
    b.extend_from_slice(&(49 + records.len() as i32).to_be_bytes()); // batchLength
    b.extend_from_slice(&rng.gen_range(-1i32..100).to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    let crc_at = b.len();
    b.extend_from_slice(&[0; 4]); // crc, below
    b.extend_from_slice(&0i16.to_be_bytes()); // attributes: no compression
    b.extend_from_slice(&(count - 1).to_be_bytes()); // lastOffsetDelta
    let ts: i64 = 1_700_000_000_000 + rng.gen_range(0..1_000_000);
    b.extend_from_slice(&ts.to_be_bytes()); // baseTimestamp
    b.extend_from_slice(&ts.to_be_bytes()); // maxTimestamp
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    b.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    b.extend_from_slice(&count.to_be_bytes()); // recordsCount
    b.extend_from_slice(&records);
    let crc = crc32c::crc32c(&b[crc_at + 4..]);
    b[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    b
}

/// A schema default as an integer: `""` is 0, hex (`0x7fffffff`) allowed.
pub fn parse_int_default(s: &str) -> i64 {
    let s = s.trim();
    if s.is_empty() {
        0
    } else if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).expect("hex default")
    } else {
        s.parse().expect("integer default")
    }
}

struct Encoder<'r> {
    rng: &'r mut StdRng,
    fill: Fill,
    version: i16,
    flexible: bool,
    out: Vec<u8>,
    expects: Vec<Expect>,
    /// Path of the node being written.
    path: Vec<String>,
    depth: usize,
    impossible: Option<String>,
}

impl Encoder<'_> {
    fn expect(&mut self, extra: Vec<&str>, ty: &str, want: Want, offset: usize, length: usize) {
        let mut path = self.path.clone();
        path.extend(extra.into_iter().map(str::to_string));
        let opaque = matches!(want, Want::AnyText | Want::Is(Value::Bytes { .. }));
        self.expects.push(Expect {
            path,
            ty: ty.to_string(),
            want,
            offset,
            length,
            opaque,
        });
    }

    fn random(&self) -> bool {
        self.fill == Fill::Random
    }

    fn structure(&mut self, s: &'static StructDef) {
        for f in s.fields {
            if !f.versions.contains(self.version) || f.tagged.contains(self.version) {
                continue;
            }
            self.field(f);
        }
        if self.flexible {
            self.tagged_section(s);
        }
    }

    fn field(&mut self, f: &'static FieldDef) {
        self.path.push(f.name.to_string());
        let flex = f
            .flexible
            .map_or(self.flexible, |r| r.contains(self.version));
        let nullable = f.nullable.contains(self.version);
        match f.kind {
            FieldKind::Prim(p) => self.prim_field(f, p, flex, nullable),
            FieldKind::Struct(s) => self.struct_field(f, s, nullable),
            FieldKind::Array(e) => self.array_field(f, e, flex, nullable),
        }
        self.path.pop();
    }

    /// Notes a default that cannot be written in this version.
    fn cannot(&mut self) {
        if self.impossible.is_none() {
            self.impossible = Some(format!(
                "{} defaults to null but is not nullable in v{}",
                self.path.join("."),
                self.version
            ));
        }
    }

    /// A nullable value: None for null.
    fn null_or<T>(
        &mut self,
        f: &FieldDef,
        nullable: bool,
        gen: impl FnOnce(&mut StdRng) -> T,
        default: T,
    ) -> Option<T> {
        match self.fill {
            Fill::Random => {
                if nullable && self.rng.gen_ratio(1, 4) {
                    None
                } else {
                    Some(gen(self.rng))
                }
            }
            Fill::Default => {
                if f.default == "null" {
                    if !nullable {
                        self.cannot();
                    }
                    None
                } else {
                    Some(default)
                }
            }
        }
    }

    fn put_len(&mut self, len: Option<usize>, flex: bool, int32: bool) {
        match (flex, len) {
            (true, None) => put_uvarint(&mut self.out, 0),
            (true, Some(n)) => put_uvarint(&mut self.out, n as u64 + 1),
            (false, None) if int32 => self.out.extend_from_slice(&(-1i32).to_be_bytes()),
            (false, Some(n)) if int32 => self.out.extend_from_slice(&(n as i32).to_be_bytes()),
            (false, None) => self.out.extend_from_slice(&(-1i16).to_be_bytes()),
            (false, Some(n)) => self.out.extend_from_slice(&(n as i16).to_be_bytes()),
        }
    }

    fn prim_field(&mut self, f: &'static FieldDef, p: Prim, flex: bool, nullable: bool) {
        let at = self.out.len();
        let want = match p {
            Prim::String => {
                let s = self.null_or(f, nullable, |r| text(r, 8), f.default.to_string());
                self.put_len(s.as_ref().map(String::len), flex, false);
                if let Some(s) = &s {
                    self.out.extend_from_slice(s.as_bytes());
                }
                Want::Is(s.map_or(Value::Null, Value::Str))
            }
            Prim::Bytes => {
                let b = self.null_or(f, nullable, random_bytes, Vec::new());
                self.put_len(b.as_ref().map(Vec::len), flex, true);
                if let Some(b) = &b {
                    self.out.extend_from_slice(b);
                }
                Want::Is(b.map_or(Value::Null, |b| Value::bytes(&b)))
            }
            Prim::Records => {
                let b = self.null_or(
                    f,
                    nullable,
                    |r| {
                        if r.gen_bool(0.3) {
                            Vec::new()
                        } else {
                            record_batch(r)
                        }
                    },
                    Vec::new(),
                );
                self.put_len(b.as_ref().map(Vec::len), flex, true);
                let len_len = self.out.len() - at;
                let raw = match (&b, flex) {
                    (None, true) => 0,
                    (None, false) => -1,
                    (Some(b), true) => b.len() as i64 + 1,
                    (Some(b), false) => b.len() as i64,
                };
                let lty = if flex { "uvarint" } else { "int32" };
                self.expect(vec!["length"], lty, Want::Is(Value::Int(raw)), at, len_len);
                if let Some(b) = &b {
                    self.out.extend_from_slice(b);
                }
                if b.is_some() {
                    Want::AnyText
                } else {
                    Want::Is(Value::Null)
                }
            }
            _ => Want::Is(self.fixed(f, p)),
        };
        let len = self.out.len() - at;
        self.expect(Vec::new(), f.type_name, want, at, len);
    }

    /// Writes a fixed-size primitive and returns its value.
    fn fixed(&mut self, f: &FieldDef, p: Prim) -> Value {
        let random = self.random();
        let d = f.default;
        let small = random && self.rng.gen_bool(0.5);
        macro_rules! int {
            ($t:ty) => {{
                let v: $t = if !random {
                    parse_int_default(d) as $t
                } else if small {
                    self.rng.gen_range(-2i64..100) as $t
                } else {
                    self.rng.gen()
                };
                self.out.extend_from_slice(&v.to_be_bytes());
                v
            }};
        }
        match p {
            Prim::Bool => {
                let v = if random { self.rng.gen() } else { d == "true" };
                self.out.push(u8::from(v));
                Value::Bool(v)
            }
            Prim::Int8 => Value::Int(int!(i8).into()),
            Prim::Int16 => Value::Int(int!(i16).into()),
            Prim::Int32 => Value::Int(int!(i32).into()),
            Prim::Int64 => Value::Int(int!(i64)),
            Prim::Uint16 => {
                let v: u16 = if random {
                    self.rng.gen()
                } else {
                    parse_int_default(d) as u16
                };
                self.out.extend_from_slice(&v.to_be_bytes());
                Value::Uint(v.into())
            }
            Prim::Uint32 => {
                let v: u32 = if random {
                    self.rng.gen()
                } else {
                    parse_int_default(d) as u32
                };
                self.out.extend_from_slice(&v.to_be_bytes());
                Value::Uint(v.into())
            }
            Prim::Float64 => {
                let v: f64 = if !random {
                    if d.is_empty() {
                        0.0
                    } else {
                        d.parse().expect("float default")
                    }
                } else {
                    // Finite and never -0.0, so equality is bit equality.
                    let x = f64::from(self.rng.gen_range(-1_000_000i32..1_000_000)) / 64.0;
                    if x == 0.0 {
                        0.0
                    } else {
                        x
                    }
                };
                self.out.extend_from_slice(&v.to_be_bytes());
                Value::Float(v)
            }
            Prim::Uuid => {
                let v: [u8; 16] = if random { self.rng.gen() } else { [0; 16] };
                self.out.extend_from_slice(&v);
                Value::Uuid(v)
            }
            Prim::String | Prim::Bytes | Prim::Records => unreachable!("not fixed-size"),
        }
    }

    fn struct_field(&mut self, f: &'static FieldDef, s: &'static StructDef, nullable: bool) {
        let at = self.out.len();
        let null = nullable
            && match self.fill {
                Fill::Random => self.rng.gen_ratio(1, 4),
                Fill::Default => f.default == "null",
            };
        if nullable {
            let m: i8 = if null { -1 } else { 1 };
            self.out.push(m as u8);
            self.expect(
                vec!["present"],
                "int8",
                Want::Is(Value::Int(m.into())),
                at,
                1,
            );
        }
        if !null {
            self.depth += 1;
            self.structure(s);
            self.depth -= 1;
        }
        let want = if null {
            Value::Null
        } else {
            Value::Text("struct".into())
        };
        let len = self.out.len() - at;
        self.expect(Vec::new(), f.type_name, Want::Is(want), at, len);
    }

    fn array_field(&mut self, f: &'static FieldDef, e: Elem, flex: bool, nullable: bool) {
        let at = self.out.len();
        let max = if self.depth >= 3 { 1 } else { 3 };
        let count = match self.fill {
            Fill::Random => {
                if nullable && self.rng.gen_ratio(1, 5) {
                    None
                } else if matches!(e, Elem::Prim(_)) && self.depth == 0 && self.rng.gen_ratio(1, 32)
                {
                    // Enough elements for a two-byte compact length.
                    Some(self.rng.gen_range(127..=140))
                } else {
                    Some(self.rng.gen_range(0..=max))
                }
            }
            // A null default for an array that is not nullable here means empty,
            // as Kafka's generated classes do.
            Fill::Default => (!(nullable && f.default == "null")).then_some(0),
        };
        self.put_len(count, flex, true);
        let raw = match (count, flex) {
            (None, true) => 0,
            (None, false) => -1,
            (Some(n), true) => n as i64 + 1,
            (Some(n), false) => n as i64,
        };
        let len_len = self.out.len() - at;
        let lty = if flex { "uvarint" } else { "int32" };
        self.expect(vec!["length"], lty, Want::Is(Value::Int(raw)), at, len_len);
        for i in 0..count.unwrap_or(0) {
            let eat = self.out.len();
            match e {
                Elem::Struct(s) => {
                    self.path.push(format!("{}[{i}]", s.name));
                    self.depth += 1;
                    self.structure(s);
                    self.depth -= 1;
                    let len = self.out.len() - eat;
                    self.expect(
                        Vec::new(),
                        s.name,
                        Want::Is(Value::Text("struct".into())),
                        eat,
                        len,
                    );
                }
                Elem::Prim(p) => {
                    self.path.push(format!("{}[{i}]", f.name));
                    let want = match p {
                        Prim::String => {
                            let s = text(self.rng, 8);
                            self.put_len(Some(s.len()), flex, false);
                            self.out.extend_from_slice(s.as_bytes());
                            Want::Is(Value::Str(s))
                        }
                        Prim::Bytes | Prim::Records => {
                            let b = random_bytes(self.rng);
                            self.put_len(Some(b.len()), flex, true);
                            self.out.extend_from_slice(&b);
                            Want::Is(Value::bytes(&b))
                        }
                        _ => Want::Is(self.fixed(f, p)),
                    };
                    let len = self.out.len() - eat;
                    self.expect(Vec::new(), p.name(), want, eat, len);
                }
            }
            self.path.pop();
        }
        let want = match count {
            None => Value::Null,
            Some(1) => Value::Text("1 element".into()),
            Some(n) => Value::Text(format!("{n} elements").into()),
        };
        let len = self.out.len() - at;
        self.expect(Vec::new(), f.type_name, Want::Is(want), at, len);
    }

    /// One field encoded on its own (a tagged field's payload), at `path`.
    fn sub(&mut self, fill: Fill, f: &'static FieldDef) -> (Vec<u8>, Vec<Expect>) {
        let mut path = self.path.clone();
        path.push("tagged_fields".into());
        path.push(f.name.into());
        let mut e = Encoder {
            rng: &mut *self.rng,
            fill,
            version: self.version,
            flexible: self.flexible,
            out: Vec::new(),
            expects: Vec::new(),
            path,
            depth: self.depth + 1,
            impossible: None,
        };
        e.field(f);
        (e.out, e.expects)
    }

    fn tagged_section(&mut self, s: &'static StructDef) {
        let at = self.out.len();
        let mut tagged: Vec<&'static FieldDef> = s
            .fields
            .iter()
            .filter(|f| f.versions.contains(self.version) && f.tagged.contains(self.version))
            .collect();
        tagged.sort_by_key(|f| f.tag);
        let mut entries = Vec::new();
        if self.random() {
            for f in tagged {
                if !self.rng.gen_bool(0.5) {
                    continue;
                }
                // Kafka writes a tagged field only when it differs from its default.
                let (dflt, _) = self.sub(Fill::Default, f);
                for _ in 0..4 {
                    let (bytes, exps) = self.sub(Fill::Random, f);
                    if bytes != dflt {
                        entries.push((f, bytes, exps));
                        break;
                    }
                }
            }
        }
        let count = entries.len();
        put_uvarint(&mut self.out, count as u64);
        for (f, payload, mut exps) in entries {
            let eat = self.out.len();
            let tag = f.tag.expect("tagged field has a tag");
            put_uvarint(&mut self.out, tag.into());
            let size_at = self.out.len();
            put_uvarint(&mut self.out, payload.len() as u64);
            let payload_at = self.out.len();
            self.out.extend_from_slice(&payload);
            for x in &mut exps {
                x.offset += payload_at;
            }
            self.expects.extend(exps);
            let size = payload.len();
            self.expect(
                vec!["tagged_fields", f.name, "tag"],
                "uvarint",
                Want::Is(Value::Int(tag.into())),
                eat,
                size_at - eat,
            );
            self.expect(
                vec!["tagged_fields", f.name, "size"],
                "uvarint",
                Want::Is(Value::Int(size as i64)),
                size_at,
                payload_at - size_at,
            );
            let len = self.out.len() - eat;
            self.expect(
                vec!["tagged_fields", f.name],
                f.type_name,
                Want::Is(Value::Text(format!("tag {tag}, {size} bytes").into())),
                eat,
                len,
            );
        }
        let len = self.out.len() - at;
        self.expect(
            vec!["tagged_fields"],
            "uvarint",
            Want::Is(Value::Int(count as i64)),
            at,
            len,
        );
    }
}

fn random_bytes(rng: &mut StdRng) -> Vec<u8> {
    // Up to 40 bytes, so some exceed the 32-byte preview kept in `Value::Bytes`,
    // and now and then enough for a two-byte compact length.
    let n = if rng.gen_ratio(1, 16) {
        rng.gen_range(127..=300)
    } else {
        rng.gen_range(0..=40)
    };
    (0..n).map(|_| rng.gen()).collect()
}

/// Compares a decoded tree with the expectations; returns every difference.
///
/// Each expected node must exist at its path with the expected type, value and
/// span in byte source 0, with no error; and every source-0 node below `below`
/// that is not inside an opaque node must be expected (so kafkashark shows no
/// field the encoder did not write).
pub fn check_tree(root: &Node, below: &[&str], expects: &[Expect]) -> Vec<String> {
    let mut problems = Vec::new();
    for e in expects {
        let names: Vec<&str> = e.path.iter().map(String::as_str).collect();
        let Some(n) = root.path(&names) else {
            problems.push(format!("{}: node missing", e.path.join("/")));
            continue;
        };
        let value_ok = match &e.want {
            Want::Is(v) => &n.value == v,
            Want::AnyText => matches!(n.value, Value::Text(_)),
        };
        if !value_ok
            || n.ty != e.ty.as_str()
            || (n.offset, n.length) != (e.offset, e.length)
            || n.source != 0
        {
            problems.push(format!(
                "{}: want {} {:?} [0x{:04x}, {}B], got {} {:?} [0x{:04x}, {}B] (source {})",
                e.path.join("/"),
                e.ty,
                e.want,
                e.offset,
                e.length,
                n.ty,
                n.value,
                n.offset,
                n.length,
                n.source
            ));
        }
        if let Some(err) = &n.error {
            problems.push(format!("{}: node error {err}", e.path.join("/")));
        }
    }
    // No unexpected nodes.
    let expected: std::collections::HashMap<Vec<String>, bool> =
        expects.iter().map(|e| (e.path.clone(), e.opaque)).collect();
    let names: Vec<&str> = below.to_vec();
    if let Some(start) = root.path(&names) {
        let mut path: Vec<String> = below.iter().map(|s| s.to_string()).collect();
        unexpected(start, &mut path, &expected, &mut problems);
    }
    problems
}

fn unexpected(
    n: &Node,
    path: &mut Vec<String>,
    expected: &std::collections::HashMap<Vec<String>, bool>,
    problems: &mut Vec<String>,
) {
    match expected.get(path.as_slice()) {
        None => {
            problems.push(format!(
                "{}: unexpected node {} {:?}",
                path.join("/"),
                n.ty,
                n.value
            ));
            return;
        }
        Some(true) => return,
        Some(false) => {}
    }
    for c in &n.children {
        path.push(c.name.to_string());
        unexpected(c, path, expected, problems);
        path.pop();
    }
}

/// Checks the span invariants of a tree over a message of `len` bytes: the root
/// spans the message, and every source-0 child lies inside its parent, after
/// its previous sibling.
pub fn check_spans(root: &Node, len: usize) -> Vec<String> {
    let mut problems = Vec::new();
    if (root.offset, root.length) != (0, len) {
        problems.push(format!(
            "root spans [{}, {}B], message is {len}B",
            root.offset, root.length
        ));
    }
    fn go(n: &Node, path: &mut Vec<String>, problems: &mut Vec<String>) {
        let mut prev_end = n.offset;
        for c in &n.children {
            path.push(c.name.to_string());
            if c.source == n.source {
                if c.offset < n.offset || c.end() > n.end() {
                    problems.push(format!(
                        "{}: [0x{:04x}, {}B] outside its parent [0x{:04x}, {}B]",
                        path.join("/"),
                        c.offset,
                        c.length,
                        n.offset,
                        n.length
                    ));
                }
                if c.offset < prev_end {
                    problems.push(format!(
                        "{}: starts at 0x{:04x}, before the previous sibling ends (0x{prev_end:04x})",
                        path.join("/"),
                        c.offset
                    ));
                }
                prev_end = c.end();
            }
            go(c, path, problems);
            path.pop();
        }
    }
    go(root, &mut Vec::new(), &mut problems);
    problems
}

/// The path of the narrowest expected node covering byte `off`, for reports.
pub fn field_at(expects: &[Expect], off: usize) -> String {
    expects
        .iter()
        .filter(|e| e.offset <= off && off < e.offset + e.length)
        .min_by_key(|e| e.length)
        .map_or_else(|| "?".to_string(), |e| e.path.join("/"))
}
