//! A message's field tree written as JSON while it is decoded, without the
//! tree (`print -V --format jsonl`).
//!
//! Place in the data path: the decoder (`decode::Decoder`) hands every node it
//! makes to an `Out`: a parent's children vector when it builds a tree, or a
//! [`JsonSink`], which writes the node's JSON at once. A parent (the message,
//! its header and body, structs, arrays and their elements) is opened before
//! its children are decoded and closed after them: its JSON begins with its
//! children (`{"children":[`), and the keys after them (display, length,
//! name, …) are written from the childless node when it is closed. Any other
//! node is handed over whole, with its children, and written by
//! [`Node::write_json_in`].
//!
//! Invariants: for a message that decodes without an error, the bytes written
//! are those [`Node::write_json_in`] writes for the tree the decoder builds
//! from the same bytes with the same options (`tests/stream_json.rs` compares
//! both on every capture); the sink also takes the facts
//! `analyzer::response_facts` takes from that tree (ThrottleTimeMs, the
//! non-zero error codes, in tree order), and applies the caller's annotation
//! to every node before writing it, as the caller would have applied it to
//! the tree. A message with an error is not written this way: the caller
//! drops what was written and builds the tree (its error nodes and spans are
//! fitted afterwards) — or, to know that before anything is handed on, first
//! decodes it into a dry sink, which writes nothing and decides the same.
//! Memory: the sink holds one flag per open parent (bounded by the schema's
//! nesting) and the error codes of the message; nodes are freed as soon as
//! they are written, and a spilling sink hands its output on between nodes.

use super::stream_text::TextStream;
use super::tree::{json, Between as _, ByteSource, Node, Parts, SourceBytes, Spill, Value};

/// Where the decoder puts the nodes it makes.
pub(crate) enum Out<'o, 'j> {
    /// Into a parent's children (the tree).
    Tree(&'o mut Vec<Node>),
    /// Written as JSON as they come.
    Json(&'o mut JsonSink<'j>),
    /// Measured or written as text as they come.
    Text(&'o mut TextStream<'j>),
}

/// Where a message's nodes go as they are made, instead of into a tree.
pub enum Stream<'s, 'j> {
    /// JSON.
    Json(&'s mut JsonSink<'j>),
    /// Text.
    Text(&'s mut TextStream<'j>),
}

impl<'o, 'j> Out<'o, 'j> {
    /// Where a message's root puts its children: `children` for a tree, or
    /// `json` after the root's opening (the root has no parent: no
    /// separator before it).
    pub(crate) fn root(
        stream: Option<&'o mut Stream<'_, 'j>>,
        children: &'o mut Vec<Node>,
    ) -> Self {
        match stream {
            Some(Stream::Json(j)) => {
                j.begin();
                Out::Json(j)
            }
            Some(Stream::Text(t)) => {
                t.begin();
                Out::Text(t)
            }
            None => Out::Tree(children),
        }
    }
}

/// What a [`JsonSink`] learned from the nodes it wrote: the facts
/// `analyzer::response_facts` takes from a response's tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamFacts {
    /// The body's first child named ThrottleTimeMs, if an int32-range int.
    pub throttle_time_ms: Option<i32>,
    /// Every non-zero `…ErrorCode` int of the body, in tree order.
    pub error_codes: Vec<i16>,
}

/// JSON written as the decoder makes the nodes (see the module docs).
pub struct JsonSink<'j> {
    out: &'j mut Vec<u8>,
    /// The message (source 0 of the nodes' spans).
    message: &'j [u8],
    /// One flag per open parent: true until its first child is written.
    fresh: Vec<bool>,
    /// The facts, from the nodes as they are written.
    walk: FactWalk,
    /// Applied to every node before it is written.
    annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    /// Offered the output between nodes ([`JsonSink::spilling`]).
    spill: Option<Spill<'j>>,
    /// Nothing is written ([`JsonSink::dry`]).
    dry: bool,
}

impl<'j> JsonSink<'j> {
    /// A sink appending to `out` the JSON of the tree of `message`; with
    /// `annotate`, each node is passed to it before it is written.
    pub fn new(
        out: &'j mut Vec<u8>,
        message: &'j [u8],
        annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    ) -> JsonSink<'j> {
        JsonSink {
            out,
            message,
            fresh: Vec::with_capacity(16),
            walk: FactWalk::default(),
            annotate,
            spill: None,
            dry: false,
        }
    }

    /// This sink handing its output on in parts: `spill` is offered the
    /// output before each node and between the children of a node handed
    /// over whole, so what is held stays about `spill.at` bytes (plus one
    /// leaf or one run of records) whatever the message's size. What it
    /// takes, joined, is the JSON.
    #[must_use]
    pub fn spilling(mut self, spill: Spill<'j>) -> JsonSink<'j> {
        self.spill = Some(spill);
        self
    }

    /// This sink writing nothing: the decoder's result and the facts are
    /// those of writing (the nodes are made, annotated and read the same
    /// way), which tells, before anything is handed on, whether a message's
    /// JSON can be written while it is decoded.
    #[must_use]
    pub fn dry(mut self) -> JsonSink<'j> {
        self.dry = true;
        self
    }

    /// The facts taken from the nodes written.
    pub fn facts(self) -> StreamFacts {
        self.walk.facts
    }

    /// The separator before a node: nothing before a parent's first child.
    #[inline]
    fn sep(&mut self) {
        if let Some(s) = &self.spill {
            s.between(self.out);
        }
        if let Some(fresh) = self.fresh.last_mut() {
            if *fresh {
                *fresh = false;
            } else if !self.dry {
                self.out.push(b',');
            }
        }
    }

    /// Marks the parent opened last as the message body.
    pub(crate) fn mark_body(&mut self) {
        self.walk.body = Some(self.fresh.len());
    }

    pub(crate) fn begin(&mut self) {
        self.sep();
        if !self.dry {
            json::CHILDREN.put(self.out);
        }
        self.fresh.push(true);
    }

    pub(crate) fn end(&mut self, mut n: Node) {
        self.end_root(&mut n);
    }

    /// Closes the message's root (opened first), `root` being its node
    /// without children: the last bytes of the JSON. (As any parent: the
    /// facts take nothing from the root.)
    pub(crate) fn end_root(&mut self, root: &mut Node) {
        self.fresh.pop();
        if let Some(a) = self.annotate.as_mut() {
            a(root);
        }
        self.walk.end(root, self.fresh.len());
        if !self.dry {
            root.write_json_tail(self.out);
        }
    }

    /// True when leaves may be handed over by their parts ([`JsonSink::leaf`]):
    /// there is no annotation, which takes nodes.
    #[inline]
    pub(crate) fn plain(&self) -> bool {
        self.annotate.is_none()
    }

    /// A childless node without an error, handed over by its parts instead
    /// of made: the same JSON and facts as [`Out::push`] of the node.
    #[inline]
    pub(crate) fn leaf(&mut self, parts: Parts<'_>) {
        self.sep();
        self.walk.leaf(parts.name, parts.value, self.fresh.len());
        if !self.dry {
            Node::write_leaf_json(self.out, parts);
        }
    }

    pub(crate) fn node(&mut self, mut n: Node, sources: &[ByteSource]) {
        self.sep();
        if let Some(a) = self.annotate.as_mut() {
            n.walk_mut(&mut **a);
        }
        self.walk.node(&n, self.fresh.len());
        if self.dry {
            return;
        }
        let bytes = SourceBytes {
            message: self.message,
            sources,
        };
        match &self.spill {
            Some(s) => n.write_json_spilling(self.out, &bytes, s),
            None => n.write_json_in(self.out, &bytes),
        }
    }
}

/// What a sink learns from the nodes it is handed, whatever it writes: the
/// facts `analyzer::response_facts` takes from a response's tree. Depths count
/// the parents open (the message's root included).
#[derive(Default)]
pub(crate) struct FactWalk {
    /// The depth of the body's children, while the body is open.
    body: Option<usize>,
    /// Whether the body's first ThrottleTimeMs child was seen.
    throttle_seen: bool,
    facts: StreamFacts,
}

impl FactWalk {
    /// The body was opened: its children are at `depth`.
    pub(crate) fn mark_body(&mut self, depth: usize) {
        self.body = Some(depth);
    }

    /// The facts taken.
    pub(crate) fn facts(self) -> StreamFacts {
        self.facts
    }

    /// A parent closed, `n` without its children, at `depth` (the parents
    /// still open).
    #[inline]
    pub(crate) fn end(&mut self, n: &Node, depth: usize) {
        if let Some(b) = self.body {
            if depth + 1 == b {
                // The body itself: its own name is walked too.
                self.error_code(&n.name, &n.value);
                self.body = None;
            } else if depth >= b {
                self.throttle(&n.name, &n.value, depth == b);
                self.error_code(&n.name, &n.value);
            }
        }
    }

    /// A childless node, by its name and value, at `depth`.
    #[inline]
    pub(crate) fn leaf(&mut self, name: &str, value: &Value, depth: usize) {
        if let Some(b) = self.body {
            if depth >= b {
                self.throttle(name, value, depth == b);
                self.error_code(name, value);
            }
        }
    }

    /// A node handed over whole, with its children, at `depth`.
    #[inline]
    pub(crate) fn node(&mut self, n: &Node, depth: usize) {
        if let Some(b) = self.body {
            if depth >= b {
                self.throttle(&n.name, &n.value, depth == b);
                n.walk(&mut |c, _| self.error_code(&c.name, &c.value));
            }
        }
    }

    /// `response_facts`' throttle: the body's first child of that name.
    #[inline]
    fn throttle(&mut self, name: &str, value: &Value, child_of_body: bool) {
        if child_of_body && !self.throttle_seen && name == "ThrottleTimeMs" {
            self.throttle_seen = true;
            self.facts.throttle_time_ms = match *value {
                Value::Int(v) => i32::try_from(v).ok(),
                _ => None,
            };
        }
    }

    /// `response_facts`' error codes: a non-zero int named `…ErrorCode`.
    #[inline]
    fn error_code(&mut self, name: &str, value: &Value) {
        if let Value::Int(v) = *value {
            if v != 0 && name.ends_with("ErrorCode") {
                if let Ok(c) = i16::try_from(v) {
                    self.facts.error_codes.push(c);
                }
            }
        }
    }
}
