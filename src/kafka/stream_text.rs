//! A message's field tree written as text while it is decoded, without the
//! tree (`print -V` of big messages).
//!
//! Place in the data path: the decoder hands every node it makes to an `Out`
//! (module `stream_json`): here a [`TextStream`]. Text differs from JSON in
//! two ways that take two decodes of the message. Its columns are as wide as
//! the widest line of the whole tree, and a parent's line comes before its
//! children's while its span, value and description are known only after
//! them (as is which child is the last, whose guide differs). So a first
//! decode into a measuring stream ([`TextStream::measure`]) writes nothing:
//! it takes the column widths, each parent's node (without its children) in
//! the order parents are opened, how many children each has, and the facts a
//! tree-keeping analyzer takes; a second decode into a writing stream
//! ([`TextStream::write`], built from the first) writes every line as its
//! node comes — a parent's from the first decode's node. Nodes handed over
//! whole (a record batch with its runs of records, decoded with
//! `DecodeOptions::records_deferred`) are written as `tree::write_text_in`
//! writes them, records made from their bytes.
//!
//! Invariants: for a message that decodes without an error, the lines are
//! those `tree::write_text_in` writes for the tree the decoder builds from
//! the same bytes with the same options (the tests compare both on every
//! capture). A message with an error is not written this way: its tree's
//! error nodes and spans are fitted after decoding. Memory: the parents'
//! nodes (without children) and a count per parent, the column widths and
//! one node's cells; the nodes handed over are freed once measured or
//! written.

use super::stream_json::{FactWalk, StreamFacts};
use super::tree::{self, ByteSource, Node, SourceBytes, TextSink};

/// What a measuring stream learned, for the writing one.
pub struct TextPlan {
    /// The columns' widths.
    cols: tree::Columns,
    /// Each parent's node without its children, in the order the parents
    /// were opened (the message's root first).
    parents: Vec<Node>,
    /// How many children each of them has.
    counts: Vec<usize>,
}

impl TextPlan {
    /// False when the root's name holds a line break: `tree::write_text`
    /// then writes the tree otherwise (its lines cut where the name breaks),
    /// which a stream does not.
    pub fn streams(&self) -> bool {
        self.parents
            .first()
            .is_some_and(|r| !r.name.contains(['\n', '\r']))
    }
}

/// What a [`TextStream`] does with the nodes.
enum Mode<'j> {
    /// Takes their widths, parents and counts.
    Measure {
        size: tree::Size,
        parents: Vec<Option<Node>>,
        counts: Vec<usize>,
    },
    /// Writes their lines to `out`, after `indent`.
    Write {
        plan: TextPlan,
        out: &'j mut dyn TextSink,
        indent: &'j str,
    },
}

/// An open parent.
struct Open {
    /// Its place in the order parents are opened.
    slot: usize,
    /// Its children so far.
    seen: usize,
}

/// A tree's text made as the decoder makes its nodes (see the module docs).
pub struct TextStream<'j> {
    /// The message (source 0 of the nodes' spans).
    message: &'j [u8],
    mode: Mode<'j>,
    /// The open parents, the root first.
    open: Vec<Open>,
    /// Parents opened so far.
    opened: usize,
    /// One node's cells, and the guides of the open parents.
    fields: tree::Fields,
    walk: FactWalk,
    /// Applied to every node before it is measured or written.
    annotate: Option<&'j mut dyn FnMut(&mut Node)>,
}

impl<'j> TextStream<'j> {
    /// A stream measuring the tree of `message` (the first decode); with
    /// `annotate`, each node is passed to it first.
    pub fn measure(
        message: &'j [u8],
        annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    ) -> TextStream<'j> {
        let mode = Mode::Measure {
            size: tree::Size::default(),
            parents: Vec::new(),
            counts: Vec::new(),
        };
        TextStream::with(message, mode, annotate)
    }

    /// A stream writing the tree of `message` to `out`, each line after
    /// `indent`, as `plan` (its measuring stream's) says (the second decode,
    /// with the same options and annotation).
    pub fn write(
        message: &'j [u8],
        plan: TextPlan,
        out: &'j mut dyn TextSink,
        indent: &'j str,
        annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    ) -> TextStream<'j> {
        TextStream::with(message, Mode::Write { plan, out, indent }, annotate)
    }

    fn with(
        message: &'j [u8],
        mode: Mode<'j>,
        annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    ) -> TextStream<'j> {
        TextStream {
            message,
            mode,
            open: Vec::with_capacity(16),
            opened: 0,
            fields: tree::Fields::default(),
            walk: FactWalk::default(),
            annotate,
        }
    }

    /// What a measuring stream learned: the plan for the writing one, and
    /// the facts (`None` for a writing stream, or when a parent was never
    /// closed: a decode that did not finish).
    pub fn finish(self) -> Option<(TextPlan, StreamFacts)> {
        let Mode::Measure {
            size,
            parents,
            counts,
        } = self.mode
        else {
            return None;
        };
        let parents = parents.into_iter().collect::<Option<Vec<Node>>>()?;
        let plan = TextPlan {
            cols: size.columns(),
            parents,
            counts,
        };
        Some((plan, self.walk.facts()))
    }

    /// Marks the parent opened last as the message body.
    pub(crate) fn mark_body(&mut self) {
        self.walk.mark_body(self.open.len());
    }

    /// Counts a child of the innermost open parent: whether it is the last
    /// (as the plan says; always false while measuring, where it does not
    /// matter: both guides are as wide).
    fn child(&mut self) -> bool {
        let Some(p) = self.open.last_mut() else {
            return false;
        };
        let at = p.seen;
        p.seen += 1;
        match &self.mode {
            Mode::Write { plan, .. } => plan.counts.get(p.slot).is_some_and(|&c| at + 1 == c),
            Mode::Measure { .. } => false,
        }
    }

    /// Opens a parent (the root first): its line, when writing, and its
    /// children's guides.
    pub(crate) fn begin(&mut self) {
        let top = self.open.is_empty();
        let last = self.child();
        let slot = self.opened;
        self.opened += 1;
        match &mut self.mode {
            Mode::Measure {
                parents, counts, ..
            } => {
                parents.push(None);
                counts.push(0);
            }
            Mode::Write { plan, out, indent } => {
                if let Some(n) = plan.parents.get(slot) {
                    self.fields.set(n, top);
                    self.fields.write(&mut **out, &plan.cols, indent);
                }
            }
        }
        if !top {
            self.fields.push_guide(last);
        }
        self.open.push(Open { slot, seen: 0 });
    }

    /// Closes the parent opened last, `n` being its node without children.
    pub(crate) fn end(&mut self, mut n: Node) {
        let Some(p) = self.open.pop() else {
            return;
        };
        let top = self.open.is_empty();
        if !top {
            self.fields.pop_guide();
        }
        if let Some(a) = self.annotate.as_mut() {
            a(&mut n);
        }
        self.walk.end(&n, self.open.len());
        if let Mode::Measure {
            size,
            parents,
            counts,
        } = &mut self.mode
        {
            self.fields.set(&n, top);
            size.add(&self.fields);
            if let (Some(s), Some(c)) = (parents.get_mut(p.slot), counts.get_mut(p.slot)) {
                *s = Some(n);
                *c = p.seen;
            }
        }
    }

    /// Closes the message's root (opened first), `root` being its node
    /// without children.
    pub(crate) fn end_root(&mut self, root: &mut Node) {
        self.end(root.clone());
    }

    /// A node handed over whole, with its children: its lines.
    pub(crate) fn node(&mut self, mut n: Node, sources: &[ByteSource]) {
        let last = self.child();
        if let Some(a) = self.annotate.as_mut() {
            n.walk_mut(&mut **a);
        }
        self.walk.node(&n, self.open.len());
        let bytes = SourceBytes {
            message: self.message,
            sources,
        };
        match &mut self.mode {
            Mode::Measure { size, .. } => {
                tree::walk_node(&n, last, &bytes, &mut self.fields, &mut |f| size.add(f));
            }
            Mode::Write { plan, out, indent } => {
                let cols = &plan.cols;
                tree::walk_node(&n, last, &bytes, &mut self.fields, &mut |f| {
                    f.write(&mut **out, cols, indent);
                });
            }
        }
    }
}
