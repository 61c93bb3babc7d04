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
//! it takes the column widths, the facts a tree-keeping analyzer takes, and
//! for each parent, in the order parents are opened, whether it is small
//! (fewer than [`SMALL`] nodes under it) or else its node (without its
//! children) and how many children it has; a second decode into a writing
//! stream ([`TextStream::write`], built from the first) writes every line as
//! its node comes — a big parent's from the first decode's node — except
//! under a small parent, whose nodes it gathers into a subtree written once
//! the parent closes. Nodes handed over whole (a record batch with its runs
//! of records, decoded with `DecodeOptions::records_deferred`) are written
//! as `tree::write_text_in` writes them, records made from their bytes.
//!
//! Invariants: for a message that decodes without an error, the lines are
//! those `tree::write_text_in` writes for the tree the decoder builds from
//! the same bytes with the same options (the tests compare both on every
//! capture). A message with an error is not written this way: its tree's
//! error nodes and spans are fitted after decoding. Memory: four bytes per
//! parent, the big parents' nodes (without children) and counts, the column
//! widths, one node's cells and one small parent's subtree (plus the nodes
//! handed over whole, each freed once measured or written).

use super::stream_json::{FactWalk, StreamFacts};
use super::tree::{self, ByteSource, Node, SourceBytes, TextSink};

/// A parent with fewer nodes under it than this is small: written from its
/// subtree, gathered while it is decoded the second time, rather than from
/// a node kept by the first decode (a Metadata response of 50,000
/// partitions has three parents per partition, each a 200-byte node).
pub const SMALL: usize = 64;

/// What a measuring stream learned, for the writing one.
pub struct TextPlan {
    /// The columns' widths.
    cols: tree::Columns,
    /// Per parent, in the order the parents were opened (the message's root
    /// first): its place in `big`, or [`TextPlan::SMALL_PARENT`].
    parents: Vec<u32>,
    /// The big parents' nodes without their children, and how many children
    /// each has.
    big: Vec<(Node, usize)>,
}

impl TextPlan {
    /// `parents`' mark of a small parent.
    const SMALL_PARENT: u32 = u32::MAX;

    /// False when the root's name holds a line break: `tree::write_text`
    /// then writes the tree otherwise (its lines cut where the name breaks),
    /// which a stream does not.
    pub fn streams(&self) -> bool {
        self.big
            .first()
            .is_some_and(|(r, _)| !r.name.contains(['\n', '\r']))
    }

    /// The big parent opened `slot`-th, if it is one.
    fn big(&self, slot: usize) -> Option<&(Node, usize)> {
        let at = *self.parents.get(slot)?;
        self.big.get(usize::try_from(at).ok()?)
    }
}

/// What a [`TextStream`] does with the nodes.
enum Mode<'j> {
    /// Takes their widths and the plan.
    Measure {
        size: tree::Size,
        parents: Vec<u32>,
        big: Vec<(Node, usize)>,
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
    /// Measuring: the nodes under it so far.
    under: usize,
    /// Writing a small parent (or one under it): its children so far, and
    /// whether it is the last child of its parent.
    gathered: Option<(Vec<Node>, bool)>,
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
        layout: tree::Layout,
        annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    ) -> TextStream<'j> {
        let mode = Mode::Measure {
            size: tree::Size::new(layout),
            parents: Vec::new(),
            big: Vec::new(),
        };
        TextStream::with(message, mode, layout, annotate)
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
        let layout = plan.cols.layout();
        TextStream::with(message, Mode::Write { plan, out, indent }, layout, annotate)
    }

    fn with(
        message: &'j [u8],
        mode: Mode<'j>,
        layout: tree::Layout,
        annotate: Option<&'j mut dyn FnMut(&mut Node)>,
    ) -> TextStream<'j> {
        let mut fields = tree::Fields::new(layout);
        if let Mode::Write { indent, .. } = &mode {
            fields.set_indent(indent);
        }
        TextStream {
            message,
            mode,
            open: Vec::with_capacity(16),
            opened: 0,
            fields,
            walk: FactWalk::default(),
            annotate,
        }
    }

    /// What a measuring stream learned: the plan for the writing one, and
    /// the facts (`None` for a writing stream, or when a parent was never
    /// closed: a decode that did not finish).
    pub fn finish(self) -> Option<(TextPlan, StreamFacts)> {
        let Mode::Measure { size, parents, big } = self.mode else {
            return None;
        };
        if !self.open.is_empty() || parents.contains(&Self::OPEN) {
            return None;
        }
        let plan = TextPlan {
            cols: size.columns(),
            parents,
            big,
        };
        Some((plan, self.walk.facts()))
    }

    /// Measuring: the mark of a parent not closed yet.
    const OPEN: u32 = u32::MAX - 1;

    /// Marks the parent opened last as the message body.
    pub(crate) fn mark_body(&mut self) {
        self.walk.mark_body(self.open.len());
    }

    /// Counts a child of the innermost open parent: whether it is the last
    /// (as the plan says, for a child of a big parent; always false while
    /// measuring, where it does not matter: both guides are as wide).
    fn child(&mut self) -> bool {
        let Some(p) = self.open.last_mut() else {
            return false;
        };
        let at = p.seen;
        p.seen += 1;
        p.under += 1;
        match &self.mode {
            Mode::Write { plan, .. } => plan.big(p.slot).is_some_and(|&(_, c)| at + 1 == c),
            Mode::Measure { .. } => false,
        }
    }

    /// Opens a parent (the root first): when writing a big one, its line
    /// and its children's guides.
    pub(crate) fn begin(&mut self) {
        let top = self.open.is_empty();
        let gathering = self.open.last().is_some_and(|p| p.gathered.is_some());
        let last = self.child();
        let slot = self.opened;
        self.opened += 1;
        let mut gathered = None;
        match &mut self.mode {
            Mode::Measure { parents, .. } => {
                parents.push(Self::OPEN);
                if !top {
                    self.fields.push_guide(last);
                }
            }
            Mode::Write { plan, out, indent } => match plan.big(slot) {
                Some((n, _)) if !gathering => {
                    self.fields.set(n, top);
                    self.fields.write(&mut **out, &plan.cols, indent);
                    if !top {
                        self.fields.push_guide(last);
                    }
                }
                _ => gathered = Some((Vec::new(), last)),
            },
        }
        self.open.push(Open {
            slot,
            seen: 0,
            under: 0,
            gathered,
        });
    }

    /// Closes the parent opened last, `n` being its node without children.
    pub(crate) fn end(&mut self, mut n: Node) {
        let Some(p) = self.open.pop() else {
            return;
        };
        let top = self.open.is_empty();
        if let Some(a) = self.annotate.as_mut() {
            a(&mut n);
        }
        self.walk.end(&n, self.open.len());
        if let Some(parent) = self.open.last_mut() {
            parent.under += p.under;
        }
        match &mut self.mode {
            Mode::Measure { size, parents, big } => {
                if !top {
                    self.fields.pop_guide();
                }
                self.fields.set(&n, top);
                size.add(&self.fields);
                let mark = if top || p.under >= SMALL {
                    big.push((n, p.seen));
                    u32::try_from(big.len() - 1).unwrap_or(TextPlan::SMALL_PARENT)
                } else {
                    TextPlan::SMALL_PARENT
                };
                if let Some(s) = parents.get_mut(p.slot) {
                    *s = mark;
                }
            }
            Mode::Write { .. } => match p.gathered {
                // A small parent: its subtree, whole.
                Some((kids, last)) => {
                    n.children = kids;
                    self.place(n, last, &[]);
                }
                None => {
                    if !top {
                        self.fields.pop_guide();
                    }
                }
            },
        }
    }

    /// Writing: `n`, whole, goes into the small parent gathering its
    /// children, or else is written (the last child of its parent when
    /// `last`; its records' bytes in `sources`).
    fn place(&mut self, n: Node, last: bool, sources: &[ByteSource]) {
        if let Some((kids, _)) = self.open.last_mut().and_then(|p| p.gathered.as_mut()) {
            kids.push(n);
            return;
        }
        if let Mode::Write { plan, out, indent } = &mut self.mode {
            let bytes = SourceBytes {
                message: self.message,
                sources,
            };
            let mut w = tree::Writer::new(&mut **out, &plan.cols, indent);
            tree::walk_node(&n, (last, false), &bytes, &mut self.fields, &mut w);
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
        let gathering = self.open.last().is_some_and(|p| p.gathered.is_some());
        let bytes = SourceBytes {
            message: self.message,
            sources,
        };
        match &mut self.mode {
            Mode::Measure { size, .. } => {
                // Its weight, records included: a parent holding a big
                // record batch is not small.
                if let Some(p) = self.open.last_mut() {
                    p.under = p.under.saturating_add(tree::text_weight(&n));
                }
                let f = &mut self.fields;
                tree::walk_node(&n, (last, false), &bytes, f, &mut |f: &tree::Fields| {
                    size.add(f)
                });
            }
            Mode::Write { .. } => {
                if gathering {
                    // Written once its small parent closes, when its records'
                    // sources are no longer at hand: their nodes made now (a
                    // few: the parent is small, records counted).
                    tree::expand_deferred(&mut n, &bytes);
                }
                self.place(n, last, sources);
            }
        }
    }
}
