//! `print`'s reorder buffer: messages held back until a request's response
//! is known, so that a request leaves with its pairing final, in capture
//! order. Its memory is bounded by count and bytes; past the bytes, held
//! messages' bytes may wait in an unnamed temporary file (the spill file)
//! instead of the oldest leaving unpaired. It belongs to the front end: the
//! engine below (`kafkashark`) does no file I/O.

use kafkashark::analyzer::{MessageRecord, Notice, Output};
use kafkashark::kafka::decode::Kind;

use crate::filter::{Filter, Tree};

/// Holds messages back so that a request leaves only once its response is known,
/// keeping capture order: then a request's `paired` and `peer` are final when it
/// is printed. Memory is bounded: at most `cap` messages wait, and at most
/// [`Reorder::limit_bytes`] of what they keep alive; past either, the oldest
/// leaves as it is (unpaired so far) — unless, with [`Reorder::spill_to`],
/// the bytes can wait on disk instead (then whoever takes the messages
/// [`fetches`](Reorder::fetch) them back).
pub struct Reorder {
    /// Held messages, oldest first, with consecutive indices.
    queue: std::collections::VecDeque<HeldSlot>,
    cap: usize,
    /// What the held messages cost (bytes and footprint), and how much they may.
    held_cost: usize,
    cost_cap: usize,
    /// Where held messages keep their bytes.
    store: ByteStore,
    /// Where held messages' bytes go past the byte limit
    /// ([`Reorder::spill_to`]), if anywhere.
    disk: Option<HeldFile>,
    /// Notices that arrived while messages were held, each with the index of
    /// the last message queued before it: it leaves right after that message,
    /// so a notice never overtakes what came before it (at most
    /// [`MAX_HELD_NOTICES`]; past that they leave at once).
    notices: std::collections::VecDeque<(u64, Box<Notice>)>,
    /// The display filter (`-Y`): only messages it matches leave, each tested
    /// with its paired message, as the TUI tests them.
    filter: Option<Filter>,
    /// Whether the responses of requests that left match the filter, by the
    /// response's index: tested with their request as it left.
    verdicts: rustc_hash::FxHashMap<u64, bool>,
    /// Requests the filter left out that still had no response when they
    /// left: their "no response" notice is left out with them (at most
    /// [`MAX_HELD_NOTICES`]; the oldest are forgotten).
    dropped: std::collections::VecDeque<u64>,
}

/// One held message: the message, whether it waits for its response, its
/// cost as [`Reorder::limit_bytes`] counts it, and where its bytes are in the
/// [`HeldFile`] (offset, length) when they were written there.
type HeldSlot = (Box<MessageRecord>, bool, usize, Option<(u64, usize)>);

/// Most bytes a `HeldFile` takes on disk: past it the oldest held
/// message leaves, as it does without one.
pub const HELD_ON_DISK: u64 = 1 << 30;

/// Held messages' bytes kept out of memory: an unnamed temporary file
/// (removed as soon as it is made; readable by its owner only), written at
/// its end and read back as the messages leave. It is emptied whenever no
/// message held in it remains, so it holds at most the bytes of the
/// messages held since it was last empty, and never more than
/// [`HELD_ON_DISK`].
#[derive(Default)]
struct HeldFile {
    /// The directory to make the file in.
    dir: std::path::PathBuf,
    /// The file, once made (`None` before; made when first needed).
    file: Option<std::fs::File>,
    /// Bytes written since it was last emptied.
    end: u64,
    /// Held messages whose bytes are in it (those that left included, until
    /// their bytes are fetched).
    held: usize,
    /// Messages that left with their bytes still in the file: (index,
    /// offset, length), in the order they left ([`Reorder::fetch`]).
    left: std::collections::VecDeque<(u64, u64, usize)>,
    /// Set when the file could not be made or written: nothing more goes to disk.
    failed: bool,
    /// Most bytes written ([`HELD_ON_DISK`]; tests lower it).
    limit: u64,
}

impl HeldFile {
    /// Writes `b` at the end; its offset, or `None` (nothing held on disk
    /// changes) when it does not fit [`HELD_ON_DISK`] or cannot be written.
    fn put(&mut self, b: &[u8]) -> Option<u64> {
        let len = u64::try_from(b.len()).ok()?;
        if self.failed || self.end.saturating_add(len) > self.limit {
            return None;
        }
        if self.file.is_none() {
            self.file = Self::make(&self.dir);
            self.failed = self.file.is_none();
        }
        let at = self.end;
        if std::os::unix::fs::FileExt::write_all_at(self.file.as_ref()?, b, at).is_err() {
            // What was written of it is ignored; the file is emptied with
            // the last message held in it.
            self.failed = true;
            return None;
        }
        self.end += len;
        self.held += 1;
        Some(at)
    }

    /// Reads back the `len` bytes written at `at` when `read` (an error when
    /// they cannot be read: a failing disk); the file is emptied once no
    /// message held in it remains.
    fn take(&mut self, at: u64, len: usize, read: bool) -> std::io::Result<bytes::Bytes> {
        self.held = self.held.saturating_sub(1);
        let r = match &self.file {
            Some(f) if read => {
                let mut v = vec![0; len];
                std::os::unix::fs::FileExt::read_exact_at(f, &mut v, at).map(|()| v.into())
            }
            _ => Err(std::io::ErrorKind::NotFound.into()),
        };
        if self.held == 0 {
            self.end = 0;
            if let Some(f) = &self.file {
                let _ = f.set_len(0);
            }
        }
        r
    }

    /// A new unnamed file in `dir` readable by its owner only.
    fn make(dir: &std::path::Path) -> Option<std::fs::File> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        use std::os::unix::fs::OpenOptionsExt;
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true).create_new(true).mode(0o600);
        let path = dir.join(format!(
            "kafkashark-held-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let f = o.open(&path).ok()?;
        // Unnamed from now on: removed with the process, however it ends.
        std::fs::remove_file(&path).ok()?;
        Some(f)
    }
}

/// Blocks of held messages' bytes. A message's bytes are often a slice of a
/// larger buffer (a file read buffer of [`kafkashark::capture::fastfile::CHUNK`]
/// bytes, a live frame), which the slice keeps alive whole; a held message
/// copies its bytes here instead. Blocks are filled in the order messages
/// are held and are freed when the last message in them leaves (messages
/// leave in that order too), so the blocks alive are the held messages'
/// bytes, plus the unused end of each block (less than
/// [`ByteStore::LARGEST`]) and the part of the oldest block whose messages
/// already left. One copy per held message and no allocation: copying each
/// into an allocation of its own cost the `-V` JSONL benchmark 5 %.
///
/// A held message whose bytes are one piece of the capture file is copied
/// only once the held messages reach [`YOUNG_SPAN`] bytes of the file past
/// it ([`ByteStore::young`]): most leave before, and their copy is saved
/// (4 % of `print -V` on the benchmark corpus). Until then it keeps its read
/// buffer alive: those buffers are the ones covering about the last
/// [`YOUNG_SPAN`] of the file read (twice that when messages complete far
/// out of file order), so the bound holds, raised by that span.
#[derive(Default)]
struct ByteStore {
    /// The unused end of the current block.
    block: bytes::BytesMut,
    /// Held messages not copied yet, in the order they were held: index and
    /// file offset.
    young: std::collections::VecDeque<(u64, u64)>,
    /// The furthest file offset of a held message.
    newest: u64,
    /// [`YOUNG_SPAN`] (smaller in tests).
    span: u64,
}

/// Bytes of the capture file within which a held message's bytes stay a
/// slice of their read buffer ([`ByteStore`]).
pub const YOUNG_SPAN: u64 = 8 << 20;

impl ByteStore {
    /// Bytes per block.
    const BLOCK: usize = 1 << 20;
    /// Larger messages get an allocation of their own.
    const LARGEST: usize = Self::BLOCK / 8;

    /// A copy of `b` that keeps nothing else alive (but its block).
    fn keep(&mut self, b: &bytes::Bytes) -> bytes::Bytes {
        if b.len() > Self::LARGEST {
            return bytes::Bytes::copy_from_slice(b);
        }
        if self.block.capacity() < b.len() {
            self.block = bytes::BytesMut::with_capacity(Self::BLOCK);
        }
        self.block.extend_from_slice(b);
        self.block.split().freeze()
    }

    /// Whether held message `index`, whose bytes are one piece of the file
    /// at `offset`, stays uncopied for now (not when the file was already
    /// read [`YOUNG_SPAN`] past it).
    fn young(&mut self, index: u64, offset: u64) -> bool {
        if offset.saturating_add(self.span) < self.newest {
            return false;
        }
        self.newest = self.newest.max(offset);
        self.young.push_back((index, offset));
        true
    }

    /// The index of the oldest uncopied message that must be copied now:
    /// the file was read [`YOUNG_SPAN`] past it, or more than `cap` wait
    /// (it may have left already).
    fn aged(&mut self, cap: usize) -> Option<u64> {
        let &(index, offset) = self.young.front()?;
        if offset.saturating_add(self.span) >= self.newest && self.young.len() <= cap {
            return None;
        }
        self.young.pop_front();
        Some(index)
    }
}

/// Notices a [`Reorder`] keeps in order behind held messages.
const MAX_HELD_NOTICES: usize = 16_384;

/// What [`Reorder::limit_bytes`] counts at least for a held message besides
/// its bytes: the record itself and its facts' small allocations (measured
/// at about 1,070 bytes on average, all held messages of a 400 MB loopback
/// capture and of the benchmark corpus; see [`held_footprint`] for more).
pub const HELD_OVERHEAD: usize = size_of::<MessageRecord>() + 512;

/// What the allocator takes per allocation beyond the bytes asked for
/// (glibc: an 8-byte header, sizes rounded up to 16; mimalloc, which the
/// `kafkashark` binary uses, rounds small sizes up to a size class instead:
/// an estimate either way).
const MALLOC_SLACK: usize = 16;

/// Heap bytes of a buffer of `bytes` (a string's or a vector's capacity).
fn heap(bytes: usize) -> usize {
    match bytes {
        0 => 0,
        n => n.saturating_add(MALLOC_SLACK),
    }
}

/// Heap bytes of a vector's buffer.
fn vec_heap<T>(v: &Vec<T>) -> usize {
    heap(v.capacity().saturating_mul(size_of::<T>()))
}

/// What a held message keeps alive besides its bytes and its tree: the
/// boxed record and its queue slot, the heap of its facts (client id,
/// topics, error codes, decode error) and of its provenance (an entry per
/// carrying frame: a message cut in many small segments has many; per TLS
/// record when decrypted).
fn held_footprint(m: &MessageRecord) -> usize {
    let i = &m.info;
    let opt = |s: &Option<String>| s.as_ref().map_or(0, |s| heap(s.capacity()));
    // The list's own buffer past its one name held in place, and each
    // name's shared text (counted in full: a name shared with a tree is
    // held by it too).
    let list = match i.topics.spilled() {
        true => heap(
            i.topics
                .capacity()
                .saturating_mul(size_of::<std::sync::Arc<str>>()),
        ),
        false => 0,
    };
    let topics = i.topics.iter().fold(list, |n, t| {
        n.saturating_add(heap(t.len().saturating_add(2 * size_of::<usize>())))
    });
    [
        size_of::<MessageRecord>() + MALLOC_SLACK,
        size_of::<HeldSlot>(),
        opt(&i.client_id),
        opt(&i.decode_error),
        vec_heap(&i.error_codes),
        topics,
        vec_heap(&m.raw.provenance),
        vec_heap(&m.raw.file_pieces),
        vec_heap(&m.raw.tls_records),
    ]
    .iter()
    .fold(0usize, |n, x| n.saturating_add(*x))
}

impl Reorder {
    /// A reorder buffer holding at most `cap` messages.
    pub fn new(cap: usize) -> Reorder {
        Reorder {
            queue: std::collections::VecDeque::new(),
            cap: cap.max(1),
            held_cost: 0,
            cost_cap: usize::MAX,
            store: ByteStore {
                span: YOUNG_SPAN,
                ..ByteStore::default()
            },
            disk: None,
            notices: std::collections::VecDeque::new(),
            filter: None,
            verdicts: rustc_hash::FxHashMap::default(),
            dropped: std::collections::VecDeque::new(),
        }
    }

    /// Lets only the messages `filter` matches leave (`print -Y`). A request
    /// and its response are tested together, each with the other as its
    /// peer, when the request leaves (its response is known by then, or
    /// never will be).
    pub fn filter(&mut self, filter: Filter) {
        self.filter = (!filter.is_empty()).then_some(filter);
    }

    /// Whether its filter reads the messages' fields (they must keep their bytes).
    pub fn needs_tree(&self) -> bool {
        self.filter.as_ref().is_some_and(Filter::needs_tree)
    }

    /// Whether message `m`, about to leave, passes the filter.
    fn passes(&mut self, m: &MessageRecord) -> bool {
        let Some(f) = &self.filter else {
            return true;
        };
        if let Some(v) = self.verdicts.remove(&m.info.index) {
            return v;
        }
        let peer = (m.info.kind == Kind::Request)
            .then_some(m.info.peer)
            .flatten()
            .and_then(|p| {
                let front = self.queue.front()?.0.info.index;
                let slot = self
                    .queue
                    .get(usize::try_from(p.checked_sub(front)?).ok()?)?;
                (slot.0.info.index == p).then_some(&*slot.0)
            });
        // Trees decoded only if a predicate reads fields, once for both tests.
        let tree = f.tree_of(m);
        let Some(resp) = peer else {
            return f.matches_with(&m.info, None, &tree, &Tree::none());
        };
        let resp_tree = f.tree_of(resp);
        let verdict = f.matches_with(&resp.info, Some(&m.info), &resp_tree, &tree);
        self.verdicts.insert(resp.info.index, verdict);
        f.matches_with(&m.info, Some(&resp.info), &tree, &resp_tree)
    }

    /// Bounds what the held messages keep alive as well as their number. A
    /// held message costs its bytes — copied ([`ByteStore`]): a slice of a
    /// larger buffer would keep all of it alive — and what else it keeps
    /// ([`held_footprint`], at least [`HELD_OVERHEAD`]); past `bytes`, the
    /// oldest message leaves even if it waits for its response, as past the
    /// count: a capture whose request is never answered keeps bounded
    /// memory, its later messages leaving in order. Trees are not counted:
    /// bound messages that keep theirs by number (`print` and `stats` hold
    /// messages without trees; their trees are made as they leave).
    pub fn limit_bytes(&mut self, bytes: usize) {
        self.cost_cap = bytes;
    }

    /// Past the byte limit, a held message's bytes go to a temporary file in
    /// `dir` (an unnamed file, at most [`HELD_ON_DISK`]) rather than the oldest
    /// message leaving before its response: with `print -V`, whose held
    /// messages keep their bytes for their trees, messages of several MB
    /// over many connections reach the limit while requests still wait. They
    /// are read back as they leave. Where the file cannot be made or written
    /// (or is full), the oldest leave as without it.
    pub fn spill_to(&mut self, dir: std::path::PathBuf) {
        self.disk = Some(HeldFile {
            dir,
            limit: HELD_ON_DISK,
            ..HeldFile::default()
        });
    }

    /// Gives `m`, a message that left this reorder, its bytes back when they
    /// were held on disk ([`Reorder::spill_to`]): a reorder that spills
    /// hands its messages on without them, and whoever takes the messages
    /// fetches each one's in turn, as it needs them (so they are read back
    /// one at a time, not all those that leave together). Messages that
    /// left before `m` and were not fetched (dropped past a count) are
    /// forgotten. Bytes that cannot be read back (a failing disk: they were
    /// written) stay empty, and the message's tree says it is cut short at
    /// its first byte.
    pub fn fetch(&mut self, m: &mut MessageRecord) {
        let Some(d) = self.disk.as_mut() else {
            return;
        };
        while let Some(&(index, at, len)) = d.left.front() {
            if index > m.info.index {
                break;
            }
            d.left.pop_front();
            let mine = index == m.info.index;
            if let (Ok(b), true) = (d.take(at, len, mine), mine) {
                m.raw.bytes = b;
            }
        }
    }

    /// Takes the analyzer's outputs; appends to `out` what may leave now, in order.
    /// Notices pass straight through.
    pub fn push(&mut self, o: Output, out: &mut Vec<Output>) {
        match o {
            Output::Message(m) => {
                if let (Kind::Response, true, Some(req)) = (m.info.kind, m.info.paired, m.info.peer)
                {
                    if let Some((r, waiting)) = self.find(req) {
                        r.info.paired = true;
                        r.info.peer = Some(m.info.index);
                        *waiting = false;
                    }
                }
                let waiting = m.info.kind == Kind::Request && m.info.expects_response;
                let index = m.info.index;
                self.queue.push_back((m, waiting, 0, None));
                self.release(out, false);
                if self.queue.back().is_some_and(|s| s.0.info.index == index) {
                    self.hold_last(out);
                }
                return;
            }
            Output::Notice(n) => {
                if let Notice::Unanswered { request, .. } = &*n {
                    if let Some((_, waiting)) = self.find(request.index) {
                        *waiting = false;
                    }
                }
                match self.queue.back() {
                    Some((last, _, _, _)) if self.notices.len() < MAX_HELD_NOTICES => {
                        self.notices.push_back((last.info.index, n));
                    }
                    _ => out.push(Output::Notice(n)),
                }
            }
        }
        self.release(out, false);
    }

    /// The message just queued stays: it copies its bytes ([`ByteStore`]) —
    /// or writes them to disk, when it has a [`HeldFile`] and they would not
    /// fit the limit —, is counted, and past the limit the oldest leave.
    fn hold_last(&mut self, out: &mut Vec<Output>) {
        let Some((m, _, cost, on_disk)) = self.queue.back_mut() else {
            return;
        };
        let footprint = HELD_OVERHEAD.max(held_footprint(m));
        let len = m.raw.bytes.len();
        if len > 0 {
            // Bytes go to disk before the limit is reached: a quarter of it
            // stays for the facts of the messages held there (about 1.5 KB
            // each), so that they too can wait for their responses.
            let over = self.held_cost.saturating_add(footprint).saturating_add(len)
                > self.cost_cap - self.cost_cap / 4;
            match self
                .disk
                .as_mut()
                .filter(|_| over)
                .and_then(|d| d.put(&m.raw.bytes))
            {
                Some(at) => {
                    *on_disk = Some((at, len));
                    m.raw.bytes = bytes::Bytes::new();
                }
                None => match m.raw.file_pieces.as_slice() {
                    [(offset, _)] if self.store.young(m.info.index, *offset) => {}
                    _ => m.raw.bytes = self.store.keep(&m.raw.bytes),
                },
            }
        }
        *cost = m.raw.bytes.len().saturating_add(footprint);
        self.held_cost = self.held_cost.saturating_add(*cost);
        self.copy_aged();
        if self.held_cost > self.cost_cap {
            self.release(out, false);
        }
    }

    /// Copies the bytes of the held messages [`ByteStore::aged`] names.
    fn copy_aged(&mut self) {
        while let Some(index) = self.store.aged(self.cap) {
            let front = self.queue.front().map_or(u64::MAX, |s| s.0.info.index);
            let at = index
                .checked_sub(front)
                .and_then(|p| usize::try_from(p).ok());
            if let Some((m, ..)) = at.and_then(|p| self.queue.get_mut(p)) {
                m.raw.bytes = self.store.keep(&m.raw.bytes);
            }
        }
    }

    /// Releases everything still held (end of input).
    pub fn flush(&mut self, out: &mut Vec<Output>) {
        self.release(out, true);
    }

    fn find(&mut self, index: u64) -> Option<(&mut MessageRecord, &mut bool)> {
        let front = self.queue.front()?.0.info.index;
        let pos = usize::try_from(index.checked_sub(front)?).ok()?;
        let (m, w, _, _) = self.queue.get_mut(pos)?;
        (m.info.index == index).then_some((&mut **m, w))
    }

    fn release(&mut self, out: &mut Vec<Output>, all: bool) {
        while let Some((_, waiting, _, _)) = self.queue.front() {
            if *waiting && !all && self.queue.len() <= self.cap && self.held_cost <= self.cost_cap {
                break;
            }
            if let Some((m, _, cost, on_disk)) = self.queue.pop_front() {
                self.held_cost -= cost;
                if let (Some((at, len)), Some(d)) = (on_disk, self.disk.as_mut()) {
                    d.left.push_back((m.info.index, at, len));
                }
                let index = m.info.index;
                if self.passes(&m) {
                    out.push(Output::Message(m));
                } else if m.info.expects_response && !m.info.paired {
                    if self.dropped.len() >= MAX_HELD_NOTICES {
                        self.dropped.pop_front();
                    }
                    self.dropped.push_back(index);
                }
                while self
                    .notices
                    .front()
                    .is_some_and(|(after, _)| *after <= index)
                {
                    if let Some((_, n)) = self.notices.pop_front() {
                        self.notice_out(n, out);
                    }
                }
            }
        }
        if self.queue.is_empty() {
            while let Some((_, n)) = self.notices.pop_front() {
                self.notice_out(n, out);
            }
        }
    }

    /// A notice leaves, unless it says that a request the filter left out
    /// got no response.
    fn notice_out(&mut self, n: Box<Notice>, out: &mut Vec<Output>) {
        if let Notice::Unanswered { request, .. } = &*n {
            if let Some(at) = self.dropped.iter().position(|&i| i == request.index) {
                self.dropped.remove(at);
                return;
            }
        }
        out.push(Output::Notice(n));
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageInfo};
    use kafkashark::capture::{FileSource, FrameSource};

    /// Every message of the capture at `path` through an analyzer with `cfg`.
    fn messages(path: &std::path::Path, cfg: AnalyzerConfig) -> Vec<MessageRecord> {
        let mut src = FileSource::open(path.to_str().expect("a path")).expect("the capture opens");
        kafkashark_harness::messages(
            std::iter::from_fn(|| src.next_frame().expect("the capture reads")),
            cfg,
        )
    }

    /// Full trees, record sets decoded in full, on every port.
    fn full_trees() -> AnalyzerConfig {
        let mut cfg = AnalyzerConfig {
            pipeline: kafkashark::pipeline::PipelineConfig::with_ports(
                kafkashark::flow::Ports::Any,
            ),
            keep_trees: true,
            ..AnalyzerConfig::default()
        };
        cfg.decode.records = true;
        cfg
    }

    /// The messages of `captures/NAME` (analyzed without trees), made a
    /// request waiting for its response followed by responses waiting for
    /// nothing; with `answered`, the last one answers the request.
    fn one_waiting(name: &str, answered: bool) -> Vec<MessageRecord> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("captures")
            .join(name);
        let mut msgs = messages(&path, AnalyzerConfig::default());
        let last = msgs.len().saturating_sub(1);
        let first_index = msgs.first().map(|m| m.info.index);
        for (i, m) in msgs.iter_mut().enumerate() {
            m.info.paired = answered && i == last;
            m.info.peer = first_index.filter(|_| answered && i == last);
            m.info.kind = if i == 0 {
                Kind::Request
            } else {
                Kind::Response
            };
            m.info.expects_response = i == 0;
        }
        msgs
    }

    /// Makes the `i`th message a request waiting for a response when it is
    /// the first, a response otherwise, none of them paired.
    fn waits_if_first(m: &mut MessageRecord, i: usize) {
        m.info.kind = if i == 0 {
            Kind::Request
        } else {
            Kind::Response
        };
        m.info.expects_response = i == 0;
        (m.info.paired, m.info.peer) = (false, None);
    }

    /// A request whose response never comes holds the messages after it
    /// only up to `limit_bytes`: past it the oldest leave, in order, and what
    /// is still held never costs more than the limit.
    #[test]
    fn an_unanswered_request_holds_at_most_the_byte_limit() {
        // The first one waits for a response that never comes; the others
        // wait for nothing.
        let msgs = one_waiting("a2-confluent-compression-codecs.pcap", false);
        assert!(msgs.len() > 20, "{} messages", msgs.len());
        let cost = |m: &MessageRecord| m.raw.bytes.len() + HELD_OVERHEAD;
        let messages = |out: &mut Vec<Output>| -> Vec<u64> {
            out.drain(..)
                .filter_map(|o| match o {
                    Output::Message(m) => Some(m.info.index),
                    Output::Notice(_) => None,
                })
                .collect()
        };
        let limit = 6 * HELD_OVERHEAD;
        for limit in [usize::MAX, limit] {
            let mut r = Reorder::new(1 << 20);
            r.limit_bytes(limit);
            let (mut out, mut left) = (Vec::new(), Vec::new());
            for (i, m) in msgs.iter().enumerate() {
                r.push(Output::Message(Box::new(m.clone())), &mut out);
                assert_accounting(&r);
                left.extend(messages(&mut out));
                let held: usize = msgs[left.len()..=i].iter().map(cost).sum();
                if limit == usize::MAX {
                    assert!(left.is_empty(), "nothing passes the waiting request");
                } else {
                    assert!(held <= limit || left.len() == i, "{held} bytes held at {i}");
                }
            }
            r.flush(&mut out);
            left.extend(messages(&mut out));
            let want: Vec<u64> = msgs.iter().map(|m| m.info.index).collect();
            assert_eq!(left, want, "every message leaves once, in order");
        }
    }

    /// Past the byte limit, a reorder that spills holds the messages behind a
    /// waiting request with their bytes on disk instead of letting the
    /// request leave unpaired: the request leaves paired once its response
    /// comes, every message in order; each one fetched gets its own bytes
    /// back, what is held in memory stays within the limit, and the file is
    /// emptied once every message held in it was fetched (or passed over).
    /// Where no file can be made, or once it holds its limit, the oldest
    /// leave as without one.
    #[test]
    fn a_reorder_that_spills_keeps_a_request_waiting() {
        // Messages of 1.2, 2.0 and 3.2 MB among them; the first waits for
        // the last.
        let msgs = one_waiting("b3-large-messages.pcap", true);
        assert!(msgs.len() > 20, "{} messages", msgs.len());
        let limit = 2 << 20;
        let total: usize = msgs.iter().map(|m| m.raw.bytes.len()).sum();
        assert!(total > 2 * limit, "{total} bytes");
        let dir = std::env::temp_dir();
        let nowhere = dir.join(format!("kafkashark-no-such-dir-{}", std::process::id()));
        // A file too small for what waits fills up: then the oldest leave.
        for (spill, on_disk, made, works) in [
            (dir.clone(), HELD_ON_DISK, true, true),
            (nowhere, HELD_ON_DISK, false, false),
            (dir, 3 << 20, true, false),
        ] {
            let mut r = Reorder::new(1 << 20);
            r.limit_bytes(limit);
            r.spill_to(spill);
            if let Some(d) = r.disk.as_mut() {
                d.limit = on_disk;
            }
            let mut out = Vec::new();
            for m in &msgs {
                r.push(Output::Message(Box::new(m.clone())), &mut out);
                assert_accounting(&r);
            }
            r.flush(&mut out);
            let mut left = Vec::new();
            for o in out {
                let Output::Message(mut m) = o else { continue };
                r.fetch(&mut m);
                left.push(m);
            }
            assert_eq!(left.len(), msgs.len());
            for (m, want) in left.iter().zip(&msgs) {
                assert_eq!(m.info.index, want.info.index, "in order");
                assert_eq!(m.raw.bytes, want.raw.bytes, "its own bytes");
            }
            assert_eq!(
                left[0].info.paired, works,
                "the request paired when it could wait"
            );
            let d = r.disk.as_ref().expect("set");
            assert_eq!((d.end, d.held, d.left.len()), (0, 0, 0), "emptied");
            assert_eq!(d.file.is_some(), made);
        }
    }

    /// A held message whose bytes are one piece of the file keeps them where
    /// they were read until the held messages reach the young span of the
    /// file past it, then holds a copy; one without a place in the file is
    /// copied when held. Either way the bytes are its own, and all leave in
    /// order.
    #[test]
    fn held_messages_are_copied_once_the_file_moved_on() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../captures/a2-confluent-compression-codecs.pcap");
        let mut cfg = AnalyzerConfig::default();
        cfg.pipeline.locate_in_file = true;
        let mut msgs = messages(&path, cfg);
        // The first waits for a response that never comes; every third
        // has no place in the file (as from a live capture).
        for (i, m) in msgs.iter_mut().enumerate() {
            waits_if_first(m, i);
            if i % 3 == 2 {
                m.raw.file_pieces.clear();
            }
        }
        let offset = |m: &MessageRecord| match m.raw.file_pieces.as_slice() {
            [(at, _)] => Some(*at),
            _ => None,
        };
        let located = msgs.iter().filter(|m| offset(m).is_some()).count();
        assert!(located > 40, "{located} of {}", msgs.len());
        let span = 4096;
        let mut r = Reorder::new(1 << 20);
        r.store.span = span;
        let mut out = Vec::new();
        let mut newest = 0;
        for (i, m) in msgs.iter().enumerate() {
            r.push(Output::Message(Box::new(m.clone())), &mut out);
            newest = offset(m).map_or(newest, |o| o.max(newest));
            assert!(out.is_empty(), "held behind the request");
            for (held, read) in r.queue.iter().zip(&msgs[..=i]) {
                let held = &held.0.raw.bytes;
                assert_eq!(held, &read.raw.bytes);
                let young = offset(read).is_some_and(|o| o + span >= newest);
                assert_eq!(
                    held.as_ptr() == read.raw.bytes.as_ptr(),
                    young,
                    "message {} at {:?}, newest {newest}",
                    read.info.index,
                    offset(read)
                );
            }
        }
        // Both kinds at the end: located messages copied, and young ones.
        let (mut aged, mut young) = (0, 0);
        for (held, read) in r.queue.iter().zip(&msgs) {
            let kept = held.0.raw.bytes.as_ptr() == read.raw.bytes.as_ptr();
            if offset(read).is_some() {
                *(if kept { &mut young } else { &mut aged }) += 1;
            }
        }
        assert!(aged > 10 && young > 2, "{aged} copied, {young} not");
        r.flush(&mut out);
        let left: Vec<u64> = out
            .iter()
            .filter_map(|o| match o {
                Output::Message(m) => Some(m.info.index),
                Output::Notice(_) => None,
            })
            .collect();
        let want: Vec<u64> = msgs.iter().map(|m| m.info.index).collect();
        assert_eq!(left, want);
    }

    /// Messages that leave without being fetched (past a count) are passed
    /// over when a later one is fetched, and the file is emptied when none
    /// is left.
    #[test]
    fn messages_not_fetched_are_passed_over() {
        let msgs = one_waiting("b3-large-messages.pcap", false);
        let mut r = Reorder::new(1 << 20);
        r.limit_bytes(2 << 20);
        r.spill_to(std::env::temp_dir());
        let mut out = Vec::new();
        for m in &msgs {
            r.push(Output::Message(Box::new(m.clone())), &mut out);
        }
        r.flush(&mut out);
        let held = r.disk.as_ref().map_or(0, |d| d.held);
        assert!(held >= 2, "{held} held on disk");
        // Only the last is fetched.
        let Some(Output::Message(mut m)) = out.pop() else {
            panic!("a message last")
        };
        r.fetch(&mut m);
        assert_eq!(m.raw.bytes, msgs[msgs.len() - 1].raw.bytes);
        let d = r.disk.as_ref().expect("set");
        assert_eq!((d.end, d.held, d.left.len()), (0, 0, 0));
    }

    /// What a reorder buffer counts matches what it holds: the costs add up
    /// to `held_cost`, each covers its message's bytes and footprint, and
    /// with a limit the held messages stay within it.
    fn assert_accounting(r: &Reorder) {
        let costs: usize = r.queue.iter().map(|s| s.2).sum();
        assert_eq!(costs, r.held_cost);
        for (m, _, cost, _) in &r.queue {
            assert!(*cost >= m.raw.bytes.len() + held_footprint(m));
        }
        if r.cost_cap != usize::MAX {
            assert!(r.held_cost <= r.cost_cap);
        }
    }

    /// A held message whose bytes are a slice of a larger buffer (as a file
    /// read buffer's frames are) keeps a copy of them, not the buffer.
    #[test]
    fn a_held_message_keeps_only_its_own_bytes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join("captures/a2-confluent-compression-codecs.pcap");
        let mut msgs = messages(&path, full_trees());
        assert!(msgs.len() > 3);
        let mut r = Reorder::new(1 << 16);
        let mut out = Vec::new();
        let mut buffers = Vec::new();
        for (i, m) in msgs.iter_mut().enumerate() {
            // A request waiting for its response holds everything after it.
            waits_if_first(m, i);
            let mut big = bytes::BytesMut::zeroed(1 << 20);
            big[1000..1000 + m.raw.bytes.len()].copy_from_slice(&m.raw.bytes);
            let big = big.freeze();
            let mut m = Box::new(m.clone());
            m.raw.bytes = big.slice(1000..1000 + m.raw.bytes.len());
            r.push(Output::Message(m), &mut out);
            assert_accounting(&r);
            buffers.push(big);
        }
        assert!(out.is_empty(), "all held");
        for (big, held) in buffers.iter_mut().zip(&r.queue) {
            assert!(big.is_unique(), "the held message dropped its slice");
            assert_eq!(
                held.0.raw.bytes,
                big.slice(1000..1000 + held.0.raw.bytes.len())
            );
        }
        r.flush(&mut out);
        assert_eq!(out.len(), msgs.len());
        // They leave in order, trees and all.
        for (o, m) in out.iter().zip(&msgs) {
            let Output::Message(o) = o else {
                panic!("a notice")
            };
            assert_eq!(o.info, m.info);
            let root = |m: &MessageRecord| m.decoded.as_ref().map(|d| d.root.clone());
            assert!(root(o).is_some());
            assert_eq!(root(o), root(m));
        }
    }

    /// What leaves a reorder of `cap` messages behind an analyzer of the
    /// capture at `path`, in order.
    fn run_through(path: &str, cap: usize) -> Vec<MessageInfo> {
        let mut src = FileSource::open(path).expect("open");
        let mut a = Analyzer::new(AnalyzerConfig::default());
        let mut r = Reorder::new(cap);
        let (mut out, mut ready) = (Vec::new(), Vec::new());
        while let Some(f) = src.next_frame().expect("read") {
            a.push(&f, &mut out);
            for o in out.drain(..) {
                r.push(o, &mut ready);
            }
        }
        a.finish(&mut out);
        for o in out.drain(..) {
            r.push(o, &mut ready);
        }
        r.flush(&mut ready);
        ready
            .into_iter()
            .filter_map(|o| match o {
                Output::Message(m) => Some(m.info),
                Output::Notice(_) => None,
            })
            .collect()
    }

    fn capture(name: &str) -> String {
        format!("{}/../captures/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn requests_leave_paired_and_in_capture_order() {
        let msgs = run_through(&capture("a2-confluent-compression-codecs.pcap"), 65_536);
        assert_eq!(msgs.len(), 74);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(m.index, i as u64, "capture order");
            assert!(m.paired, "frame {} not paired", m.frame);
            let peer = &msgs[m.peer.expect("peer") as usize];
            assert_eq!(
                peer.peer,
                Some(m.index),
                "frame {}: pairing is mutual",
                m.frame
            );
            assert_ne!(peer.kind, m.kind);
            assert_eq!(peer.correlation_id, m.correlation_id);
            assert_eq!(peer.stream, m.stream);
            if m.kind == Kind::Response {
                assert!(
                    peer.frame <= m.first_frame,
                    "a response follows its request"
                );
            }
        }
    }

    #[test]
    fn a_tiny_cap_loses_nothing_and_keeps_order() {
        let full = run_through(&capture("a1-kcat-produce-consume-group.pcap"), 65_536);
        let tiny = run_through(&capture("a1-kcat-produce-consume-group.pcap"), 1);
        assert_eq!(full.len(), tiny.len());
        for (a, b) in full.iter().zip(&tiny) {
            assert_eq!(a.index, b.index);
            if a.kind == Kind::Response {
                assert_eq!(a, b, "responses are final when they arrive");
            }
        }
        // With the cap, requests leave before their responses arrive: unpaired so far.
        let requests_paired = tiny
            .iter()
            .filter(|m| m.kind == Kind::Request && m.paired)
            .count();
        assert!(
            requests_paired
                < full
                    .iter()
                    .filter(|m| m.kind == Kind::Request && m.paired)
                    .count()
        );
    }
}
