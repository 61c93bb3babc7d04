//! The filter's fields that live in a message's tree: field paths
//! (`ProduceRequest.TopicData.PartitionData.Index`) and the aliases read
//! from the tree (`partition`, `group`, `records`).
//!
//! A path is resolved when the filter is parsed, against the schema tables
//! the decoder reads (every definition of the message, current and legacy)
//! and, under a `records` field, against the record set's own names
//! (`RecordBatch.producerId`, `RecordBatch.Record.key`): a misspelt name is
//! an error at its column, with the nearest name. It is evaluated on the
//! tree [`redecode`](kafkashark::analyzer::redecode) gives, made only when a
//! predicate asks for it ([`Tree`]): array elements are passed through
//! (`TopicData.PartitionData` reaches the partitions of every topic), as is
//! the decompressed payload of a compressed batch.

use std::cell::{Cell, OnceCell};

use bytes::Bytes;
use kafkashark::kafka::decode::{Decoded, Kind};
use kafkashark::kafka::schema::{self, Elem, FieldKind, MessageKind, Prim, StructDef};
use kafkashark::kafka::tree::{format_uuid, Node, SourceBytes, Value};

use super::{contains_ci, did_you_mean, error, glob, FilterError, Op, MAX_API_KEY};

/// A message's tree and its bytes (from its size prefix on).
type Made = Option<(Decoded, Bytes)>;

/// A message's tree and its bytes, decoded only when first asked for.
pub struct Tree<'a> {
    made: OnceCell<Made>,
    make: Cell<Option<Box<dyn FnOnce() -> Made + 'a>>>,
}

impl<'a> Tree<'a> {
    /// The tree `make` decodes (with the message's bytes, from the size
    /// prefix on), when a predicate first needs it; `None` when it cannot.
    pub fn new(make: impl FnOnce() -> Made + 'a) -> Tree<'a> {
        Tree {
            made: OnceCell::new(),
            make: Cell::new(Some(Box::new(make))),
        }
    }

    /// No tree: the predicates that need one do not match.
    pub fn none() -> Tree<'a> {
        Tree {
            made: OnceCell::from(None),
            make: Cell::new(None),
        }
    }

    fn get(&self) -> Option<(&Node, SourceBytes<'_>)> {
        let made = self
            .made
            .get_or_init(|| self.make.take().and_then(|make| make()));
        made.as_ref().map(|(d, b)| {
            let bytes = SourceBytes {
                message: b,
                sources: &d.sources,
            };
            (&d.root, bytes)
        })
    }
}

/// What the field a path ends at holds, as far as the schema says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Holds {
    /// An integer of any width.
    Int,
    /// A string, a uuid, a bool or bytes: compared as text.
    Text,
    /// A struct, an array of structs or a record set: only its presence is tested.
    Fields,
}

/// A resolved field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Path {
    /// The side whose tree holds it.
    kind: Kind,
    /// The api, or `None` for the headers.
    api: Option<i16>,
    /// The body (`ProduceRequest`) or header (`RequestHeader`) it starts at.
    root: &'static str,
    /// The names after it, as the tree spells them.
    segs: Vec<&'static str>,
    /// What the last one holds.
    pub(super) holds: Holds,
    /// The last is an `ErrorCode`: error names are taken for codes.
    pub(super) error_code: bool,
}

/// A value compared with the fields a path reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Lit {
    Int(i128),
    Text(String),
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.root)?;
        for s in &self.segs {
            write!(f, ".{s}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Lit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lit::Int(n) => write!(f, "{n}"),
            Lit::Text(s) => f.write_str(&super::quote(s)),
        }
    }
}

// ---------------------------------------------------------------- resolving

/// The record set's names under a `records` field, as the decoder writes them.
struct RecField {
    name: &'static str,
    holds: Holds,
    kids: &'static [RecField],
}

const fn leaf(name: &'static str, holds: Holds) -> RecField {
    RecField {
        name,
        holds,
        kids: &[],
    }
}

const HEADER: &[RecField] = &[
    leaf("headerKeyLength", Holds::Int),
    leaf("headerKey", Holds::Text),
    leaf("headerValueLength", Holds::Int),
    leaf("headerValue", Holds::Text),
];

const RECORD: &[RecField] = &[
    leaf("length", Holds::Int),
    leaf("attributes", Holds::Int),
    leaf("timestampDelta", Holds::Int),
    leaf("offsetDelta", Holds::Int),
    leaf("keyLength", Holds::Int),
    leaf("key", Holds::Text),
    leaf("valueLength", Holds::Int),
    leaf("value", Holds::Text),
    leaf("headersCount", Holds::Int),
    RecField {
        name: "Header",
        holds: Holds::Fields,
        kids: HEADER,
    },
];

const BATCH: &[RecField] = &[
    leaf("baseOffset", Holds::Int),
    leaf("batchLength", Holds::Int),
    leaf("partitionLeaderEpoch", Holds::Int),
    leaf("magic", Holds::Int),
    leaf("crc", Holds::Int),
    leaf("attributes", Holds::Int),
    leaf("lastOffsetDelta", Holds::Int),
    leaf("baseTimestamp", Holds::Int),
    leaf("maxTimestamp", Holds::Int),
    leaf("producerId", Holds::Int),
    leaf("producerEpoch", Holds::Int),
    leaf("baseSequence", Holds::Int),
    leaf("recordsCount", Holds::Int),
    RecField {
        name: "Record",
        holds: Holds::Fields,
        kids: RECORD,
    },
];

/// A legacy (v0/v1) message, as a message set holds it at its top level.
const LEGACY: &[RecField] = &[
    leaf("offset", Holds::Int),
    leaf("messageSize", Holds::Int),
    leaf("crc", Holds::Int),
    leaf("magic", Holds::Int),
    leaf("attributes", Holds::Int),
    leaf("timestamp", Holds::Int),
    leaf("keyLength", Holds::Int),
    leaf("key", Holds::Text),
    leaf("valueLength", Holds::Int),
    leaf("value", Holds::Text),
];

const RECORD_SET: &[RecField] = &[
    RecField {
        name: "RecordBatch",
        holds: Holds::Fields,
        kids: BATCH,
    },
    RecField {
        name: "Message",
        holds: Holds::Fields,
        kids: LEGACY,
    },
];

/// The names under a `records` field, as paths from it with what each
/// holds (`RecordBatch.Record.key`, `text`), for `kafkashark fields`.
pub fn record_set_paths() -> Vec<(String, &'static str)> {
    fn walk(fields: &[RecField], prefix: &str, out: &mut Vec<(String, &'static str)>) {
        for f in fields {
            let path = format!("{prefix}{}", f.name);
            let holds = match f.holds {
                Holds::Int => "integer",
                Holds::Text => "text",
                Holds::Fields => "fields",
            };
            out.push((path.clone(), holds));
            walk(f.kids, &format!("{path}."), out);
        }
    }
    let mut out = Vec::new();
    walk(RECORD_SET, "", &mut out);
    out
}

/// The header fields as the decoder names them.
const REQUEST_HEADER: &[&str] = &[
    "request_api_key",
    "request_api_version",
    "correlation_id",
    "client_id",
    "tagged_fields",
];
const RESPONSE_HEADER: &[&str] = &["correlation_id", "tagged_fields"];

/// Where a name is looked for while a path is resolved.
enum Level {
    /// The fields of these structs (one per definition of the message).
    Structs(Vec<&'static StructDef>),
    /// Under a `records` field.
    Records(&'static [RecField]),
    /// A header.
    Header(&'static [&'static str]),
    /// A field with no fields under it.
    Leaf(&'static str),
}

/// The body or header a path's first name names: (kind, api, its name).
fn root(word: &str) -> Option<(Kind, Option<i16>, &'static str)> {
    for (name, kind) in [
        ("RequestHeader", Kind::Request),
        ("ResponseHeader", Kind::Response),
    ] {
        if word.eq_ignore_ascii_case(name) {
            return Some((kind, None, name));
        }
    }
    (0..=MAX_API_KEY).find_map(|k| {
        [
            (MessageKind::Request, Kind::Request),
            (MessageKind::Response, Kind::Response),
        ]
        .into_iter()
        .find_map(|(mk, kind)| {
            let def = schema::definitions(k, mk).next()?;
            def.name
                .eq_ignore_ascii_case(word)
                .then_some((kind, Some(k), def.name))
        })
    })
}

/// Every body and header name, for suggestions and completion.
pub(super) fn roots() -> impl Iterator<Item = &'static str> {
    let bodies = (0..=MAX_API_KEY).flat_map(|k| {
        [MessageKind::Request, MessageKind::Response]
            .into_iter()
            .filter_map(move |mk| schema::definitions(k, mk).next().map(|d| d.name))
    });
    ["RequestHeader", "ResponseHeader"]
        .into_iter()
        .chain(bodies)
}

/// Whether `word` is written as a path: a body or header name, alone or
/// followed by `.` and more.
pub(super) fn is_path(word: &str) -> bool {
    let first = word.split('.').next().unwrap_or(word);
    word.contains('.') || root(first).is_some()
}

/// Resolves `word` (a path, at column `col`) against the schema tables.
pub(super) fn resolve(word: &str, col: usize) -> Result<Path, FilterError> {
    let mut parts = word.split('.');
    let first = parts.next().unwrap_or_default();
    let Some((kind, api, root_name)) = root(first) else {
        let hint = did_you_mean(first, roots());
        return Err(error(
            col,
            format!("unknown message '{first}' (a path starts with a body like ProduceRequest or a header){hint}"),
        ));
    };
    let mut level = start(kind, api);
    let mut path = Path {
        kind,
        api,
        root: root_name,
        segs: Vec::new(),
        holds: Holds::Fields,
        error_code: false,
    };
    let mut at = col + first.chars().count() + 1;
    for seg in parts {
        let (name, next, holds) = step(&level, seg).ok_or_else(|| match &level {
            Level::Leaf(ty) => error(at, format!("'{path}' is a {ty}: it has no fields")),
            _ => {
                let hint = did_you_mean(seg, level.names().into_iter());
                error(at, format!("'{path}' has no field '{seg}'{hint}"))
            }
        })?;
        path.segs.push(name);
        path.holds = holds;
        level = next;
        at += seg.chars().count() + 1;
    }
    path.error_code = path.segs.last().is_some_and(|s| s.ends_with("ErrorCode"));
    Ok(path)
}

/// Where a path's first name after its body or header is looked for.
fn start(kind: Kind, api: Option<i16>) -> Level {
    let mk = match kind {
        Kind::Request => MessageKind::Request,
        Kind::Response => MessageKind::Response,
    };
    match (api, kind) {
        (None, Kind::Request) => Level::Header(REQUEST_HEADER),
        (None, Kind::Response) => Level::Header(RESPONSE_HEADER),
        (Some(k), _) => Level::Structs(schema::definitions(k, mk).map(|d| d.body).collect()),
    }
}

impl Level {
    /// The names that can follow.
    fn names(&self) -> Vec<&'static str> {
        match self {
            Level::Structs(st) => (st.iter())
                .flat_map(|s| s.fields.iter().map(|f| f.name))
                .collect(),
            Level::Records(f) => f.iter().map(|f| f.name).collect(),
            Level::Header(n) => n.to_vec(),
            Level::Leaf(_) => Vec::new(),
        }
    }
}

/// The name `seg` at `level`: as spelt there, the level under it, what it holds.
fn step(level: &Level, seg: &str) -> Option<(&'static str, Level, Holds)> {
    match level {
        Level::Structs(structs) => {
            let found: Vec<_> = structs
                .iter()
                .flat_map(|s| s.fields.iter())
                .filter(|f| f.name.eq_ignore_ascii_case(seg))
                .collect();
            let first = found.first()?;
            let inner: Vec<&'static StructDef> = found
                .iter()
                .filter_map(|f| match f.kind {
                    FieldKind::Struct(s) | FieldKind::Array(Elem::Struct(s)) => Some(s),
                    _ => None,
                })
                .collect();
            let (next, holds) = match first.kind {
                FieldKind::Prim(Prim::Records) => (Level::Records(RECORD_SET), Holds::Fields),
                FieldKind::Prim(p) | FieldKind::Array(Elem::Prim(p)) => {
                    (Level::Leaf(first.type_name), prim_holds(p))
                }
                FieldKind::Struct(_) | FieldKind::Array(Elem::Struct(_)) => {
                    (Level::Structs(inner), Holds::Fields)
                }
            };
            Some((first.name, next, holds))
        }
        Level::Records(fields) => {
            let f = fields.iter().find(|f| f.name.eq_ignore_ascii_case(seg))?;
            let next = if f.kids.is_empty() {
                Level::Leaf(match f.holds {
                    Holds::Int => "integer",
                    _ => "text",
                })
            } else {
                Level::Records(f.kids)
            };
            Some((f.name, next, f.holds))
        }
        Level::Header(names) => {
            let n = names.iter().find(|n| n.eq_ignore_ascii_case(seg))?;
            let holds = if *n == "client_id" {
                Holds::Text
            } else {
                Holds::Int
            };
            Some((n, Level::Leaf("header field"), holds))
        }
        Level::Leaf(_) => None,
    }
}

fn prim_holds(p: Prim) -> Holds {
    match p {
        Prim::Int8 | Prim::Int16 | Prim::Uint16 | Prim::Int32 | Prim::Uint32 | Prim::Int64 => {
            Holds::Int
        }
        Prim::Records => Holds::Fields,
        Prim::Bool | Prim::Float64 | Prim::Uuid | Prim::String | Prim::Bytes => Holds::Text,
    }
}

/// Completions of a path being typed: `ProduceRequest.To` gives
/// `ProduceRequest.TopicData.`, `ProduceReq` gives `ProduceRequest.`; a
/// name with fields ends in `.`, the others are whole.
pub(super) fn complete(prefix: &str) -> Vec<String> {
    let l = |last: &str| last.to_ascii_lowercase();
    let mut out: Vec<String> = match prefix.rsplit_once('.') {
        None if prefix.is_empty() => return Vec::new(),
        // Every body and header has fields.
        None => (roots())
            .filter(|r| r.to_ascii_lowercase().starts_with(&l(prefix)))
            .map(|r| format!("{r}."))
            .collect(),
        Some((done, last)) => {
            let Ok(path) = resolve(done, 0) else {
                return Vec::new();
            };
            let Some(level) = path.level() else {
                return Vec::new();
            };
            (level.names().into_iter())
                .filter(|n| n.to_ascii_lowercase().starts_with(&l(last)))
                .map(|n| match step(&level, n) {
                    Some((_, Level::Leaf(_), _)) | None => format!("{path}.{n}"),
                    Some(_) => format!("{path}.{n}."),
                })
                .collect()
        }
    };
    out.sort_unstable();
    out.dedup();
    out
}

// ---------------------------------------------------------------- evaluating

/// A name without its `[n]` index (`Record[3]` is a `Record`).
fn base(name: &str) -> &str {
    match name
        .strip_suffix(']')
        .and_then(|n| n.rfind('[').map(|i| &name[..i]))
    {
        Some(b) => b,
        None => name,
    }
}

fn is_array(n: &Node) -> bool {
    n.ty.starts_with("[]")
}

/// The nodes `segs` reach from `n`. Array elements and a compressed batch's
/// payload are passed through; an array reached at the end gives its
/// elements when `elements`.
fn reach<'n>(n: &'n Node, segs: &[&str], elements: bool, out: &mut Vec<&'n Node>) {
    let Some((first, rest)) = segs.split_first() else {
        if elements && is_array(n) {
            out.extend(n.children.iter().filter(|c| c.name.ends_with(']')));
        } else {
            out.push(n);
        }
        return;
    };
    let array = is_array(n);
    let batch = n.name == "RecordBatch";
    for c in &n.children {
        if base(&c.name).eq_ignore_ascii_case(first) {
            reach(c, rest, elements, out);
        } else if (array && c.name.ends_with(']')) || (batch && c.name == "records") {
            reach(c, segs, elements, out);
        }
    }
}

/// The value of `n` as compared: an integer, or a text (strings, uuids,
/// bools, bytes read whole from the message); `None` for the rest (nulls,
/// structs, bytes not held).
enum Val<'n> {
    Int(i128),
    Text(std::borrow::Cow<'n, str>),
}

fn val<'n>(n: &'n Node, bytes: &SourceBytes<'n>) -> Option<Val<'n>> {
    Some(match &n.value {
        Value::Int(i) => Val::Int(i128::from(*i)),
        Value::Uint(u) => Val::Int(i128::from(*u)),
        Value::Str(s) => Val::Text(s.as_str().into()),
        Value::Bool(b) => Val::Text(if *b { "true" } else { "false" }.into()),
        Value::Uuid(u) => Val::Text(format_uuid(u).into()),
        Value::Float(f) => Val::Text(f.to_string().into()),
        Value::Bytes { len, head } if *len == head.len() => {
            Val::Text(String::from_utf8_lossy(head))
        }
        Value::Bytes { len, .. } => {
            // The value's bytes are the node's last `len` bytes (a length
            // prefix may come first).
            let start = n.offset.checked_add(n.length.checked_sub(*len)?)?;
            Val::Text(String::from_utf8_lossy(bytes.span(n.source, start, *len)?))
        }
        // A fixed-width integer shown by what it means (a batch's CRC):
        // its number, from its bytes.
        Value::Text(_) => {
            let b = bytes.span(n.source, n.offset, n.length)?;
            let int = |signed: bool| {
                let mut v = b.iter().fold(0i128, |v, &x| (v << 8) | i128::from(x));
                if signed && b.first().is_some_and(|&x| x & 0x80 != 0) {
                    v -= 1i128 << (8 * b.len());
                }
                Val::Int(v)
            };
            match (n.ty.as_ref(), b.len()) {
                ("uint16", 2) | ("uint32", 4) => int(false),
                ("int8", 1) | ("int16", 2) | ("int32", 4) | ("int64", 8) => int(true),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// Whether one value passes `op lit`.
fn passes(n: &Node, v: &Val<'_>, op: Op, lit: &Lit) -> bool {
    match (v, lit) {
        (Val::Int(h), Lit::Int(want)) => op.compare(*h, *want),
        (Val::Text(t), Lit::Text(want)) => text_passes(op, t, want),
        (Val::Text(t), Lit::Int(want)) => text_passes(op, t, &want.to_string()),
        // An integer with a meaning shown beside it (`(gzip, CreateTime)`,
        // `(NONE)`): the meaning is compared.
        (Val::Int(_), Lit::Text(want)) => n
            .detail
            .as_deref()
            .is_some_and(|d| text_passes(op, d, want)),
    }
}

/// `=` exact (with `*` wildcards), `~` contains (any case), `!=` not equal.
fn text_passes(op: Op, have: &str, want: &str) -> bool {
    match op {
        Op::Eq => glob(want, have),
        Op::Ne => !glob(want, have),
        Op::Tilde => contains_ci(have, want),
        _ => false,
    }
}

/// Whether `values` pass: `!=` when there are some and none equals, every
/// other operator when one does.
fn any_passes<'n>(values: &[(&'n Node, Val<'n>)], op: Op, lit: &Lit) -> bool {
    match op {
        Op::Ne => !values.is_empty() && values.iter().all(|(n, v)| passes(n, v, Op::Ne, lit)),
        _ => values.iter().any(|(n, v)| passes(n, v, op, lit)),
    }
}

impl Path {
    /// Where the names after it are looked for.
    fn level(&self) -> Option<Level> {
        let mut level = start(self.kind, self.api);
        for s in &self.segs {
            level = step(&level, s)?.1;
        }
        Some(level)
    }

    /// Whether it goes into the records (or legacy messages) of a record set.
    pub(super) fn reads_records(&self) -> bool {
        self.segs.iter().any(|s| matches!(*s, "Record" | "Message"))
    }

    /// Which of a message and its peer the path reads: the one of its side
    /// (and api). `kinds` are (the message's, its peer's) kind and api.
    pub(super) fn side(
        &self,
        own: (Kind, Option<i16>),
        peer: Option<(Kind, Option<i16>)>,
    ) -> Option<bool> {
        let fits =
            |(k, a): (Kind, Option<i16>)| k == self.kind && (self.api.is_none() || a == self.api);
        if fits(own) {
            Some(true)
        } else if peer.is_some_and(fits) {
            Some(false)
        } else {
            None
        }
    }

    /// Whether `tree` has the field (`cmp` `None`) or a value of it passing `cmp`.
    pub(super) fn matches(&self, tree: &Tree<'_>, cmp: Option<&(Op, Lit)>) -> bool {
        let Some((root, bytes)) = tree.get() else {
            return false;
        };
        let Some(start) = root.children.iter().find(|c| c.name == self.root) else {
            return false;
        };
        let mut nodes = Vec::new();
        reach(start, &self.segs, cmp.is_some(), &mut nodes);
        match cmp {
            None => !nodes.is_empty(),
            Some((op, lit)) => {
                let values: Vec<_> = nodes
                    .into_iter()
                    .filter_map(|n| Some((n, val(n, &bytes)?)))
                    .collect();
                any_passes(&values, *op, lit)
            }
        }
    }
}

// ---------------------------------------------------------------- aliases

/// The partition indexes a message names: `Partition`, `PartitionIndex`,
/// `PartitionId`, the `Index` of a partition's struct, and the elements
/// of integer arrays named for partitions (`PartitionIndexes`); record sets
/// are not looked into.
pub fn partitions(tree: &Tree<'_>) -> Option<Vec<i128>> {
    let (root, _) = tree.get()?;
    let mut out = Vec::new();
    visit(root, None, false, &mut |n, parent| {
        let int = match n.value {
            Value::Int(i) => Some(i128::from(i)),
            _ => None,
        };
        let partition_array = parent.is_some_and(|p| is_array(p) && p.name.contains("Partition"));
        let named = matches!(
            n.name.as_ref(),
            "Partition" | "PartitionIndex" | "PartitionId"
        ) || (n.name == "Index" && parent.is_some_and(|p| p.ty.contains("Partition")))
            || (partition_array && n.name.ends_with(']'));
        if let (true, Some(i)) = (named, int) {
            out.push(i);
        }
    });
    Some(out)
}

/// The consumer group ids a message names: `GroupId` fields, the elements
/// of `Groups`, `GroupIds` and `GroupsNames` string arrays, and
/// FindCoordinator's keys when they are groups (`KeyType` 0 or absent).
pub(super) fn groups(tree: &Tree<'_>, api: Option<i16>) -> Option<Vec<String>> {
    let (root, _) = tree.get()?;
    let find_coordinator = api == Some(10);
    let mut out = Vec::new();
    visit(root, None, false, &mut |n, parent| {
        let Value::Str(s) = &n.value else { return };
        let in_array = parent.filter(|p| is_array(p)).map(|p| p.name.as_ref());
        let group_key = || {
            find_coordinator
                && parent
                    .map(|p| p.child("KeyType").map(|k| &k.value))
                    .is_none_or(|k| matches!(k, None | Some(Value::Int(0))))
        };
        let group_keys = || {
            find_coordinator
                && in_array == Some("CoordinatorKeys")
                && root
                    .children
                    .iter()
                    .find_map(|c| c.child("KeyType"))
                    .is_none_or(|k| matches!(k.value, Value::Int(0)))
        };
        let named = n.name == "GroupId"
            || matches!(in_array, Some("Groups" | "GroupIds" | "GroupsNames"))
            || (n.name == "Key" && group_key())
            || group_keys();
        if named {
            out.push(s.clone());
        }
    });
    Some(out)
}

/// The records a message carries: each RecordBatch's `recordsCount`, and
/// each legacy message; `None` when it has no record set.
pub fn records(tree: &Tree<'_>) -> Option<i128> {
    let (root, _) = tree.get()?;
    let (mut sets, mut n) = (0u64, 0i128);
    visit(root, None, true, &mut |node, _| {
        if node.ty == "records" {
            sets += 1;
        } else if node.name == "RecordBatch" {
            if let Some(Value::Int(c)) = node.child("recordsCount").map(|c| &c.value) {
                n += i128::from(*c);
            }
        } else if base(&node.name) == "Message" && !wraps(node) {
            n += 1;
        }
    });
    (sets > 0).then_some(n)
}

/// Visits `n` and every node under it with its parent, depth first; what a
/// record set holds only with `records`.
fn visit<'n>(
    n: &'n Node,
    parent: Option<&'n Node>,
    records: bool,
    f: &mut impl FnMut(&'n Node, Option<&'n Node>),
) {
    f(n, parent);
    if records || n.ty != "records" {
        for c in &n.children {
            visit(c, Some(n), records, f);
        }
    }
}

/// Whether a legacy message holds messages (a compressed wrapper).
fn wraps(n: &Node) -> bool {
    n.children
        .iter()
        .any(|c| base(&c.name) == "Message" || wraps(c))
}
