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
//! from the same bytes with the same options (the tests compare both on every
//! capture); the sink also takes the facts `model::response_facts` takes from
//! that tree (ThrottleTimeMs, the non-zero error codes, in tree order), and
//! applies the caller's annotation to every node before writing it, as the
//! caller would have applied it to the tree. A message with an error is not
//! written this way: the caller drops what was written and builds the tree
//! (its error nodes and spans are fitted afterwards). Memory: the sink holds
//! one flag per open parent (bounded by the schema's nesting) and the error
//! codes of the message; nodes are freed as soon as they are written.

use super::tree::{json, ByteSource, Node, Parts, SourceBytes, Value};

/// Where the decoder puts the nodes it makes.
pub(crate) enum Out<'o, 'j> {
    /// Into a parent's children (the tree).
    Tree(&'o mut Vec<Node>),
    /// Written as JSON as they come.
    Json(&'o mut JsonSink<'j>),
}

impl<'o, 'j> Out<'o, 'j> {
    /// Where a message's root puts its children: `children` for a tree, or
    /// `json` after the root's opening (the root has no parent: no
    /// separator before it).
    pub(crate) fn root(json: Option<&'o mut JsonSink<'j>>, children: &'o mut Vec<Node>) -> Self {
        match json {
            Some(j) => {
                j.begin();
                Out::Json(j)
            }
            None => Out::Tree(children),
        }
    }

    /// Hands over the finished node `n` (with its children); `sources` are
    /// the message's byte sources so far (records written from their bytes
    /// need them).
    #[inline]
    pub(crate) fn push(&mut self, n: Node, sources: &[ByteSource]) {
        match self {
            Out::Tree(v) => v.push(n),
            Out::Json(j) => j.node(n, sources),
        }
    }

    /// Room for `k` more children (a tree's vector; nothing for JSON).
    #[inline]
    pub(crate) fn reserve_exact(&mut self, k: usize) {
        if let Out::Tree(v) = self {
            v.reserve_exact(k);
        }
    }

    /// Opens a parent whose node is handed over later with [`Out::close`]:
    /// the returned `Out` takes its children — `kids`, the parent's own
    /// children vector, for a tree; the JSON, after the parent's opening, for
    /// JSON.
    #[inline]
    pub(crate) fn open<'s>(&'s mut self, kids: &'s mut Vec<Node>) -> Out<'s, 'j> {
        match self {
            Out::Tree(_) => Out::Tree(kids),
            Out::Json(j) => {
                j.begin();
                Out::Json(j)
            }
        }
    }

    /// Closes the parent opened last: `n` is its node (for a tree, with the
    /// children the opened `Out` took; for JSON, without).
    #[inline]
    pub(crate) fn close(&mut self, n: Node) {
        match self {
            Out::Tree(v) => v.push(n),
            Out::Json(j) => j.end(n),
        }
    }

    /// The JSON sink, when this writes JSON.
    pub(crate) fn json(&mut self) -> Option<&mut JsonSink<'j>> {
        match self {
            Out::Tree(_) => None,
            Out::Json(j) => Some(j),
        }
    }
}

/// What a [`JsonSink`] learned from the nodes it wrote: the facts
/// `model::response_facts` takes from a response's tree.
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
    /// The depth of the body's children (`fresh.len()` while they are
    /// written), while the body is open.
    body: Option<usize>,
    /// Whether the body's first ThrottleTimeMs child was seen.
    throttle_seen: bool,
    facts: StreamFacts,
    /// Applied to every node before it is written.
    annotate: Option<&'j mut dyn FnMut(&mut Node)>,
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
            body: None,
            throttle_seen: false,
            facts: StreamFacts::default(),
            annotate,
        }
    }

    /// The facts taken from the nodes written.
    pub fn facts(self) -> StreamFacts {
        self.facts
    }

    /// The separator before a node: nothing before a parent's first child.
    #[inline]
    fn sep(&mut self) {
        if let Some(fresh) = self.fresh.last_mut() {
            if *fresh {
                *fresh = false;
            } else {
                self.out.push(b',');
            }
        }
    }

    /// Marks the parent opened last as the message body.
    pub(crate) fn mark_body(&mut self) {
        self.body = Some(self.fresh.len());
    }

    fn begin(&mut self) {
        self.sep();
        json::key(self.out, json::Key::Children);
        self.fresh.push(true);
    }

    fn end(&mut self, mut n: Node) {
        self.fresh.pop();
        if let Some(a) = self.annotate.as_mut() {
            a(&mut n);
        }
        if let Some(b) = self.body {
            let depth = self.fresh.len();
            if depth + 1 == b {
                // The body itself: its own name is walked too.
                self.error_code(&n.name, &n.value);
                self.body = None;
            } else if depth >= b {
                self.throttle(&n.name, &n.value, depth == b);
                self.error_code(&n.name, &n.value);
            }
        }
        n.write_json_tail(self.out);
    }

    /// Closes the message's root (opened first), `root` being its node
    /// without children: the last bytes of the JSON.
    pub(crate) fn end_root(&mut self, root: &mut Node) {
        self.fresh.pop();
        if let Some(a) = self.annotate.as_mut() {
            a(root);
        }
        root.write_json_tail(self.out);
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
        if let Some(b) = self.body {
            let depth = self.fresh.len();
            if depth >= b {
                self.throttle(parts.name, parts.value, depth == b);
                self.error_code(parts.name, parts.value);
            }
        }
        Node::write_leaf_json(self.out, parts);
    }

    fn node(&mut self, mut n: Node, sources: &[ByteSource]) {
        self.sep();
        if let Some(a) = self.annotate.as_mut() {
            n.walk_mut(&mut **a);
        }
        if let Some(b) = self.body {
            let depth = self.fresh.len();
            if depth >= b {
                self.throttle(&n.name, &n.value, depth == b);
                n.walk(&mut |c, _| self.error_code(&c.name, &c.value));
            }
        }
        let bytes = SourceBytes {
            message: self.message,
            sources,
        };
        n.write_json_in(self.out, &bytes);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::decode::{
        decode_request, decode_request_json, decode_response, decode_response_json, DecodeOptions,
        Decoded, Kind,
    };
    use crate::model::response_facts;
    use crate::test_captures;

    /// How `print -V` decodes a message: `Some(None)` a request, `Some(Some(
    /// (key, version)))` a response with its request's; `None` neither.
    fn how(i: &crate::model::MessageInfo) -> Option<Option<(i16, i16)>> {
        match (i.kind, i.api_key, i.api_version) {
            (Kind::Request, _, _) => Some(None),
            (Kind::Response, Some(k), Some(v)) => Some(Some((k, v))),
            _ => None,
        }
    }

    /// The message decoded both ways, with `annotate` (if any) applied to the
    /// tree's nodes and handed to the sink: (tree, tree's JSON, streamed,
    /// its JSON, its facts). Without an annotation the sink takes leaves by
    /// their parts.
    fn both(
        raw: &[u8],
        response: Option<(i16, i16)>,
        opts: &DecodeOptions,
        mut annotate: Option<&mut dyn FnMut(&mut Node)>,
    ) -> (Decoded, Vec<u8>, Decoded, Vec<u8>, StreamFacts) {
        let mut tree = match response {
            None => decode_request(raw, opts),
            Some((k, v)) => decode_response(raw, k, v, opts),
        };
        if let Some(a) = annotate.as_mut() {
            tree.root.walk_mut(*a);
        }
        let mut want = b"[".to_vec();
        let bytes = SourceBytes {
            message: raw,
            sources: &tree.sources,
        };
        tree.root.write_json_in(&mut want, &bytes);
        let mut got = b"[".to_vec();
        let annotate: Option<&mut dyn FnMut(&mut Node)> = match annotate {
            Some(a) => Some(a),
            None => None,
        };
        let mut sink = JsonSink::new(&mut got, raw, annotate);
        let streamed = match response {
            None => decode_request_json(raw, opts, &mut sink),
            Some((k, v)) => decode_response_json(raw, k, v, opts, &mut sink),
        };
        let facts = sink.facts();
        (tree, want, streamed, got, facts)
    }

    /// Every message of every capture (`captures/` and `../shared/captures`
    /// when present), decoded as `print -V --format jsonl` decodes it and as
    /// the tests of the records' JSON do: where the streamed decode has no
    /// error, its JSON is the tree's byte for byte, after the bytes written
    /// before it, and its facts, topics and ids are the tree's; where it has
    /// one, so does the tree.
    #[test]
    fn streamed_json_is_the_trees_on_every_capture() {
        let mut streamed = 0;
        let mut with_error = 0;
        for records_json in [true, false] {
            let opts = DecodeOptions {
                records: true,
                records_json,
                ..DecodeOptions::default()
            };
            for p in test_captures::all() {
                for m in test_captures::messages(&p, test_captures::full_trees()) {
                    let i = &m.info;
                    let Some(response) = how(i) else { continue };
                    let raw = &m.raw.bytes;
                    let (tree, want, s, got, facts) = both(raw, response, &opts, None);
                    let at = format!("{} frame {}", p.display(), i.frame);
                    if s.error.is_some() {
                        // `decode_request` decodes a failed ControlledShutdown
                        // v0 again with header v1 (the stream's caller takes
                        // the tree path for any error).
                        let retried = s.api_key == Some(7) && s.api_version == Some(0);
                        assert!(
                            tree.error.is_some() || retried,
                            "{at}: only the stream failed"
                        );
                        with_error += 1;
                        continue;
                    }
                    assert!(tree.error.is_none(), "{at}: only the tree failed");
                    assert!(got == want, "{at}: JSON differs");
                    let (throttle, errors) = response_facts(&tree.root);
                    assert_eq!(facts.throttle_time_ms, throttle, "{at}");
                    assert_eq!(facts.error_codes, errors, "{at}");
                    assert_eq!(s.topics, tree.topics, "{at}");
                    assert_eq!(s.topic_ids, tree.topic_ids, "{at}");
                    assert_eq!(s.correlation_id, tree.correlation_id, "{at}");
                    streamed += 1;
                }
            }
        }
        assert!(streamed > 1000, "{streamed} messages streamed");
        eprintln!("{streamed} streamed, {with_error} with an error");
    }

    /// The annotation reaches every node, parents included, before it is
    /// written: details put on every uuid, int and struct node show as the
    /// tree's.
    #[test]
    fn every_node_is_annotated_before_it_is_written() {
        let opts = DecodeOptions {
            records: true,
            records_json: true,
            ..DecodeOptions::default()
        };
        let mut mark = |n: &mut Node| match n.value {
            // Made at run time (and so escaped): a borrowed text must need
            // no escape.
            Value::Uuid(_) | Value::Int(_) => n.detail = Some("marked \"here\"".to_string().into()),
            Value::Text(_) => n.detail = Some(format!("{} marked", n.length).into()),
            _ => {}
        };
        let mut checked = 0;
        for p in test_captures::shipped() {
            for m in test_captures::messages(&p, test_captures::full_trees()) {
                let i = &m.info;
                let Some(response) = how(i) else { continue };
                let (_, want, s, got, _) = both(&m.raw.bytes, response, &opts, Some(&mut mark));
                if s.error.is_none() {
                    assert!(got == want, "{} frame {}", p.display(), i.frame);
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// A message cut short streams with an error (its JSON is not used); the
    /// tree has the same error.
    #[test]
    fn a_cut_message_reports_its_error() {
        let opts = DecodeOptions::default();
        let mut checked = 0;
        for p in test_captures::shipped() {
            for m in test_captures::messages(&p, test_captures::full_trees()) {
                let i = &m.info;
                if i.kind != Kind::Request || m.raw.bytes.len() < 12 {
                    continue;
                }
                let cut = &m.raw.bytes[..m.raw.bytes.len() - 1];
                let (tree, _, s, _, _) = both(cut, None, &opts, None);
                assert!(s.error.is_some() && tree.error.is_some());
                assert_eq!(
                    s.error.map(|e| e.to_string()),
                    tree.error.map(|e| e.to_string())
                );
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked}");
    }
}
