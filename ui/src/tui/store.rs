//! The entry store: the TUI's message index, kept in scratch files so that its
//! memory does not grow with the number of messages.
//!
//! Place in the data path: [`App`](super::app::App) pushes each
//! [`IndexEntry`] as it joins the index and reads entries back by position (the
//! visible rows, the selection, the filter, the sort keys and the stats view).
//! Each entry is encoded as a fixed-size record ([`REC`] bytes, see
//! [`record`](super::index::record)); records are gathered in blocks of
//! [`Geometry::block`] and appended, with the side blobs of spilled messages, to
//! a log. The log lives in scratch files the shell injects (temporary files,
//! unlinked as soon as they are created, read and written with `pread` and
//! `pwrite`), a new file every [`Geometry::segment`] bytes so that ring mode can
//! give whole files back. In memory stay: the open (newest) block, a small LRU
//! cache of recently read blocks, one small descriptor per block and per file,
//! the interned shared parts (bounded by the distinct combinations of
//! endpoints, client id, topics and errors, not by the messages), and the log's
//! write buffer.
//!
//! When no scratch file can be created or written (no `TMPDIR` space, a
//! read-only directory), the log's bytes stay in memory instead: the index
//! works as before, and [`EntryStore::take_warning`] says so once.
//!
//! Invariants: `get(i)` gives back what was pushed at `i` (with updates), its
//! `index()` being `i` and its peer forgotten when ring mode dropped it; an
//! address or length read back is checked against the log before it is used
//! (a corrupt or short read is a [`StoreError`] for that entry, never a panic);
//! at most `Geometry::cache` blocks plus the open one are held in memory.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::BuildHasher;

use rustc_hash::FxBuildHasher;
use std::io;
use std::sync::Arc;

use super::app::ByteStore;
use super::index::record::{
    decode_shared, encode_shared, facts_of, side_of, sort_keys_of, DecodeError, SideRef, REC,
};
use super::index::{FactsEntry, IndexEntry, Interner, Shared};

/// A scratch file: bytes written at offsets and read back ([`ByteStore::read_at`]).
pub trait Scratch: ByteStore {
    /// Writes all of `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()>;
}

/// Creates scratch files (the shell's temporary files).
pub type ScratchMaker = Box<dyn FnMut() -> io::Result<Box<dyn Scratch>> + Send>;

/// Sizes of the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Records per block (the unit of reading and caching).
    pub block: usize,
    /// Blocks kept in the LRU cache, besides the open one.
    pub cache: usize,
    /// Bytes of a scratch file before the next one is started.
    pub segment: u64,
    /// Bytes appended in memory before they are written out.
    pub buffer: usize,
    /// Distinct shared facts kept decoded (and remembered for writing them once).
    pub facts: usize,
}

impl Geometry {
    /// For the TUI: 256-record blocks (35 KB), 64 of them cached (about 2 MB),
    /// 64 MB files, writes of 256 KB, 4096 shared facts.
    #[cfg_attr(test, allow(dead_code))]
    pub const DEFAULT: Geometry = Geometry {
        block: 256,
        cache: 64,
        segment: 64 << 20,
        buffer: 256 << 10,
        facts: 4096,
    };

    /// For tests: everything tiny, so that every path pages.
    #[cfg(test)]
    pub const TINY: Geometry = Geometry {
        block: 3,
        cache: 2,
        segment: 2048,
        buffer: 200,
        facts: 2,
    };
}

/// Why an entry could not be read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// No entry at this position.
    Missing {
        /// The position asked for.
        index: usize,
        /// Entries there are.
        len: usize,
    },
    /// A log range that the log does not hold (a corrupt record).
    Address {
        /// Its first byte.
        addr: u64,
        /// Its length.
        len: u64,
    },
    /// The scratch file could not be read.
    Read {
        /// Log address of the range.
        addr: u64,
        /// What the system said.
        err: io::ErrorKind,
    },
    /// The record or its side blob did not decode.
    Decode(DecodeError),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Missing { index, len } => {
                write!(f, "no message {index} in the index ({len} messages)")
            }
            StoreError::Address { addr, len } => {
                write!(
                    f,
                    "bad index record: {len} bytes at {addr} are not in the index file"
                )
            }
            StoreError::Read { addr, err } => {
                write!(f, "cannot read the index file at {addr}: {err}")
            }
            StoreError::Decode(e) => e.fmt(f),
        }
    }
}

impl From<DecodeError> for StoreError {
    fn from(e: DecodeError) -> StoreError {
        StoreError::Decode(e)
    }
}

// ----- the log: scratch files, or memory ----------------------------------------

/// One scratch file's share of the log: log addresses `base..base + len()`.
struct Segment {
    base: u64,
    file: Option<Box<dyn Scratch>>,
    /// Bytes `base..base + flushed` are in the file.
    flushed: u64,
    /// The bytes after them, in memory.
    tail: Vec<u8>,
    /// Absolute number of the message after the last block written here.
    end_record: u64,
}

impl Segment {
    fn end(&self) -> u64 {
        self.base + self.flushed + self.tail.len() as u64
    }

    /// Where the `n` bytes at `off` into the segment lie in `tail` (`None`
    /// unless they all come after the flushed ones).
    fn tail_range(&self, off: u64, n: usize) -> Option<std::ops::Range<usize>> {
        let t = usize::try_from(off.checked_sub(self.flushed)?).ok()?;
        Some(t..t.checked_add(n)?)
    }
}

/// An append-only byte log over scratch files (in memory when they fail).
struct Log {
    segs: VecDeque<Segment>,
    maker: Option<ScratchMaker>,
    /// Files are used: a maker is set and nothing failed.
    writable: bool,
    /// The current segment is full: the next append starts a new one.
    sealed: bool,
    /// Next log address.
    next: u64,
    /// First address of the current segment (or of the next one, once sealed):
    /// a blob before it may be given up with its segment, so it is not pointed to again.
    floor: u64,
    warning: Option<String>,
    warned: bool,
    geo: Geometry,
}

impl Log {
    fn new(geo: Geometry) -> Log {
        Log {
            segs: VecDeque::new(),
            maker: None,
            writable: false,
            sealed: false,
            next: 0,
            floor: 0,
            warning: None,
            warned: false,
            geo,
        }
    }

    fn fail(&mut self, err: &io::Error) {
        self.writable = false;
        if !self.warned {
            self.warned = true;
            self.warning = Some(format!("message index kept in memory: {err}"));
        }
    }

    fn open_segment(&mut self) {
        let mut file = None;
        if self.writable {
            if let Some(make) = &mut self.maker {
                match make() {
                    Ok(f) => file = Some(f),
                    Err(e) => self.fail(&e),
                }
            }
        }
        self.segs.push_back(Segment {
            base: self.next,
            file,
            flushed: 0,
            tail: Vec::new(),
            end_record: 0,
        });
        self.sealed = false;
    }

    /// Appends `data`; its log address.
    fn append(&mut self, data: &[u8]) -> u64 {
        if self.sealed || self.segs.is_empty() {
            self.open_segment();
        }
        let addr = self.next;
        if let Some(seg) = self.segs.back_mut() {
            seg.tail.extend_from_slice(data);
        }
        self.next += data.len() as u64;
        let full = self
            .segs
            .back()
            .is_some_and(|s| s.tail.len() >= self.geo.buffer);
        if full {
            self.flush();
        }
        addr
    }

    /// Writes the current segment's buffered bytes to its file.
    fn flush(&mut self) {
        if !self.writable {
            return;
        }
        let Some(seg) = self.segs.back_mut() else {
            return;
        };
        let Some(file) = &seg.file else { return };
        if seg.tail.is_empty() {
            return;
        }
        match file.write_at(seg.flushed, &seg.tail) {
            Ok(()) => {
                seg.flushed += seg.tail.len() as u64;
                seg.tail.clear();
                if seg.tail.capacity() > 2 * self.geo.buffer {
                    seg.tail.shrink_to(self.geo.buffer);
                }
            }
            Err(e) => self.fail(&e),
        }
    }

    /// A block ending before message `end_record` was appended: the segment
    /// is given up once all of them are dropped, and closed when full.
    fn block_written(&mut self, end_record: u64) {
        let full = match self.segs.back_mut() {
            Some(seg) => {
                seg.end_record = end_record;
                seg.end() - seg.base >= self.geo.segment
            }
            None => false,
        };
        if full {
            self.flush();
            self.sealed = true;
            self.floor = self.next;
        }
    }

    /// Gives up the segments whose messages are all before `first_record`.
    fn drop_before(&mut self, first_record: u64) {
        while self.segs.len() > 1
            && self
                .segs
                .front()
                .is_some_and(|s| s.end_record <= first_record)
        {
            self.segs.pop_front();
        }
    }

    /// The position of the segment holding log bytes `addr..addr + len`.
    fn seg_of(&self, addr: u64, len: u64) -> Option<usize> {
        let i = self
            .segs
            .partition_point(|s| s.base <= addr)
            .checked_sub(1)?;
        let end = addr.checked_add(len)?;
        self.segs.get(i).filter(|s| end <= s.end()).map(|_| i)
    }

    /// The `len` bytes at `addr` (checked against the log before anything is allocated).
    fn read(&self, addr: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        let seg = (self.seg_of(addr, len).and_then(|i| self.segs.get(i)))
            .ok_or(StoreError::Address { addr, len })?;
        let n = usize::try_from(len).map_err(|_| StoreError::Address { addr, len })?;
        let mut buf = vec![0u8; n];
        let mut done = 0usize;
        // The part in the file.
        let off = addr - seg.base;
        if off < seg.flushed {
            let k = usize::try_from((seg.flushed - off).min(len)).unwrap_or(n);
            let file = seg.file.as_ref().ok_or(StoreError::Address { addr, len })?;
            if let Some(dst) = buf.get_mut(..k) {
                file.read_at(off, dst).map_err(|e| StoreError::Read {
                    addr,
                    err: e.kind(),
                })?;
            }
            done = k;
        }
        // The part in memory.
        if done < n {
            let src = (seg.tail_range(off + done as u64, n - done))
                .and_then(|r| seg.tail.get(r))
                .ok_or(StoreError::Address { addr, len })?;
            if let Some(dst) = buf.get_mut(done..) {
                dst.copy_from_slice(src);
            }
        }
        Ok(buf)
    }

    /// Overwrites bytes already appended; `false` when they are in a file that
    /// cannot be written any more (the caller moves them).
    fn patch(&mut self, addr: u64, data: &[u8]) -> bool {
        let len = data.len() as u64;
        let Some(seg) = self.seg_of(addr, len).and_then(|i| self.segs.get_mut(i)) else {
            return false;
        };
        let off = addr - seg.base;
        if off >= seg.flushed {
            let dst = (seg.tail_range(off, data.len())).and_then(|r| seg.tail.get_mut(r));
            return dst.map(|d| d.copy_from_slice(data)).is_some();
        }
        if off + len > seg.flushed || !self.writable {
            return false;
        }
        let Some(file) = &seg.file else { return false };
        match file.write_at(off, data) {
            Ok(()) => true,
            Err(e) => {
                self.fail(&e);
                false
            }
        }
    }
}

// ----- the store -------------------------------------------------------------------

/// A block of records written to the log.
#[derive(Clone, Copy, Debug)]
struct Block {
    /// Absolute number of its first message.
    first: u64,
    /// Its records.
    count: u32,
    /// Log address of its records.
    addr: u64,
}

impl Block {
    fn end(&self) -> u64 {
        self.first + u64::from(self.count)
    }
}

/// The caches' maps, keyed by message numbers and log addresses, and the
/// hash of shared facts: FxHash, cheaper than SipHash on every entry read or
/// pushed. Facts come off the wire, but colliding ones only cost a blob
/// written again: the map of written facts holds one per hash value.
type NumMap<V> = HashMap<u64, V, FxBuildHasher>;

/// Recently used values by message number or log address: past `cap`, the
/// older half goes (eviction is paid once per `cap / 2` misses).
pub struct Lru<V> {
    map: NumMap<(V, u64)>,
    tick: u64,
    cap: usize,
}

impl<V: Clone> Lru<V> {
    /// An empty cache of at most `cap` values.
    pub fn new(cap: usize) -> Lru<V> {
        Lru {
            map: NumMap::default(),
            tick: 0,
            cap,
        }
    }

    /// The value at `k`, if held (now the latest used).
    pub fn get(&mut self, k: u64) -> Option<V> {
        self.tick += 1;
        let (v, t) = self.map.get_mut(&k)?;
        *t = self.tick;
        Some(v.clone())
    }

    /// Holds `v` at `k` (the latest used).
    pub fn insert(&mut self, k: u64, v: V) {
        self.tick += 1;
        self.map.insert(k, (v, self.tick));
        if self.map.len() > self.cap {
            let mut ticks: Vec<u64> = self.map.values().map(|(_, t)| *t).collect();
            let mid = ticks.len() / 2;
            let (_, &mut cut, _) = ticks.select_nth_unstable(mid);
            self.map.retain(|_, (_, t)| *t >= cut);
        }
    }
}

/// The message index: entries by position, most of them in scratch files (see
/// the module doc).
pub struct EntryStore {
    geo: Geometry,
    interner: Interner,
    /// Shared facts written in the current segment, by hash (at most `4 * geo.facts`).
    written: NumMap<SideRef>,
    hasher: FxBuildHasher,
    log: Log,
    blocks: VecDeque<Block>,
    /// Records of the open block.
    open: Vec<u8>,
    /// Absolute number of the open block's first message.
    open_first: u64,
    /// Messages dropped from the front (ring mode): the absolute number of entry 0.
    dropped: u64,
    /// Recently read blocks of records, by their first message.
    blocks_cache: RefCell<Lru<Arc<Vec<u8>>>>,
    /// Shared facts by their log address.
    facts_cache: RefCell<Lru<Arc<Shared>>>,
}

impl EntryStore {
    /// An empty store that keeps its log in memory until [`set_scratch`](Self::set_scratch).
    pub fn new(geo: Geometry) -> EntryStore {
        let geo = Geometry {
            block: geo.block.clamp(1, u32::MAX as usize),
            cache: geo.cache.max(1),
            facts: geo.facts.max(1),
            ..geo
        };
        EntryStore {
            geo,
            interner: Interner::default(),
            written: NumMap::default(),
            hasher: FxBuildHasher,
            log: Log::new(geo),
            blocks: VecDeque::new(),
            open: Vec::new(),
            open_first: 0,
            dropped: 0,
            blocks_cache: RefCell::new(Lru::new(geo.cache)),
            facts_cache: RefCell::new(Lru::new(geo.facts)),
        }
    }

    /// Writes the log to scratch files made by `maker`. Only a store that
    /// was never pushed to takes it (what is already in the log would stay
    /// in a segment the scratch files' bookkeeping does not know); on any
    /// other it changes nothing.
    pub fn set_scratch(&mut self, maker: ScratchMaker) {
        if self.open_first != 0 || !self.open.is_empty() {
            return;
        }
        self.log.maker = Some(maker);
        self.log.writable = true;
        self.log.sealed = true;
    }

    /// A message for the user, once: the scratch files failed and the index is
    /// kept in memory.
    pub fn take_warning(&mut self) -> Option<String> {
        self.log.warning.take()
    }

    /// The recent endpoints (for [`IndexEntry::new`]).
    pub fn interner_mut(&mut self) -> &mut Interner {
        &mut self.interner
    }

    /// Shared facts held decoded in memory, and remembered as written.
    #[cfg(test)]
    pub fn facts_held(&self) -> (usize, usize) {
        (self.facts_cache.borrow().map.len(), self.written.len())
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        let total = self.open_first + (self.open.len() / REC) as u64;
        usize::try_from(total - self.dropped).unwrap_or(usize::MAX)
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries held in memory as records: the open block's and the cached blocks'.
    #[cfg(test)]
    pub fn resident(&self) -> usize {
        let cache = self.blocks_cache.borrow();
        self.open.len() / REC
            + cache
                .map
                .values()
                .map(|(b, _)| b.len() / REC)
                .sum::<usize>()
    }

    /// Appends `e` as entry `len()` (its own index is not kept: an entry's index
    /// is its position).
    pub fn push(&mut self, e: IndexEntry) {
        let facts = self.facts_ref(e.shared());
        let side = e.side_blob().map(|b| SideRef {
            addr: self.log.append(&b),
            len: b.len() as u64,
        });
        self.open
            .extend_from_slice(&e.encode(facts, side, self.dropped));
        if self.open.len() >= self.geo.block * REC {
            self.close_block();
        }
    }

    fn close_block(&mut self) {
        let count = self.open.len() / REC;
        if count == 0 {
            return;
        }
        let addr = self.log.append(&self.open);
        let first = self.open_first;
        self.blocks.push_back(Block {
            first,
            count: u32::try_from(count).unwrap_or(u32::MAX),
            addr,
        });
        let recs = std::mem::replace(&mut self.open, Vec::with_capacity(self.geo.block * REC));
        self.blocks_cache.get_mut().insert(first, Arc::new(recs));
        self.open_first += count as u64;
        self.log.block_written(self.open_first);
    }

    /// Where shared facts equal to `s` lie in the current segment: written
    /// there before (and still held, so that they are compared, not trusted by
    /// their hash), or now.
    fn facts_ref(&mut self, s: &Arc<Shared>) -> SideRef {
        let h = self.hasher.hash_one(&**s);
        if let Some(&f) = self.written.get(&h) {
            let c = self.facts_cache.borrow();
            let same = c
                .map
                .get(&f.addr)
                .is_some_and(|(a, _)| Arc::ptr_eq(a, s) || **a == **s);
            if same && f.addr >= self.log.floor {
                return f;
            }
        }
        let blob = encode_shared(s);
        let f = SideRef {
            addr: self.log.append(&blob),
            len: blob.len() as u64,
        };
        if self.written.len() >= 4 * self.geo.facts {
            self.written.clear();
        }
        self.written.insert(h, f);
        self.facts_cache.get_mut().insert(f.addr, s.clone());
        f
    }

    /// The shared facts at `f`, held or read and decoded.
    fn shared_at(&self, f: SideRef) -> Result<Arc<Shared>, StoreError> {
        if let Some(s) = self.facts_cache.borrow_mut().get(f.addr) {
            return Ok(s);
        }
        let blob = self.log.read(f.addr, f.len)?;
        let s = Arc::new(decode_shared(&blob)?);
        self.facts_cache.borrow_mut().insert(f.addr, s.clone());
        Ok(s)
    }

    /// The block holding absolute message `r` (not the open one).
    fn block_of(&self, r: u64) -> Option<usize> {
        let i = self.blocks.partition_point(|b| b.first <= r);
        i.checked_sub(1)
            .filter(|&i| self.blocks.get(i).is_some_and(|b| r < b.end()))
    }

    /// The records of block `bi`, from the cache or the log (then cached when `keep`).
    fn block_recs(&self, bi: usize, keep: bool) -> Result<Arc<Vec<u8>>, StoreError> {
        let b = *self
            .blocks
            .get(bi)
            .ok_or(StoreError::Address { addr: 0, len: 0 })?;
        if let Some(recs) = self.blocks_cache.borrow_mut().get(b.first) {
            return Ok(recs);
        }
        let len = u64::from(b.count) * REC as u64;
        let recs = Arc::new(self.log.read(b.addr, len)?);
        if keep {
            self.blocks_cache.borrow_mut().insert(b.first, recs.clone());
        }
        Ok(recs)
    }

    /// The record at byte `at` of a block's records.
    fn record_in(recs: &[u8], at: usize) -> Result<[u8; REC], StoreError> {
        let src = at.checked_add(REC).and_then(|e| recs.get(at..e));
        (src.and_then(|s| s.try_into().ok())).ok_or(StoreError::Address {
            addr: at as u64,
            len: REC as u64,
        })
    }

    fn missing(&self, index: usize) -> StoreError {
        StoreError::Missing {
            index,
            len: self.len(),
        }
    }

    /// Where the record of entry `i` lies: in block `bi` (`None`: the open
    /// block), at byte `at` of its records.
    fn place(&self, i: usize) -> Result<(Option<usize>, usize), StoreError> {
        if i >= self.len() {
            return Err(self.missing(i));
        }
        let r = self.dropped + i as u64;
        let (bi, first) = if r >= self.open_first {
            (None, self.open_first)
        } else {
            let bi = self.block_of(r).ok_or_else(|| self.missing(i))?;
            (Some(bi), self.blocks.get(bi).map_or(r, |b| b.first))
        };
        let at = usize::try_from(r - first).unwrap_or(usize::MAX);
        Ok((bi, at.saturating_mul(REC)))
    }

    /// The record of entry `i`.
    fn record(&self, i: usize, keep: bool) -> Result<[u8; REC], StoreError> {
        match self.place(i)? {
            (None, at) => Self::record_in(&self.open, at),
            (Some(bi), at) => Self::record_in(&self.block_recs(bi, keep)?, at),
        }
    }

    fn decode(&self, i: usize, rec: &[u8; REC]) -> Result<IndexEntry, StoreError> {
        let side = match side_of(rec) {
            Some(s) => Some(self.log.read(s.addr, s.len)?),
            None => None,
        };
        let shared = self.shared_at(facts_of(rec))?;
        Ok(IndexEntry::decode(
            rec,
            i as u64,
            self.dropped,
            shared,
            side.as_deref(),
        )?)
    }

    /// Entry `i`, or why it cannot be read.
    pub fn try_get(&self, i: usize) -> Result<IndexEntry, StoreError> {
        let rec = self.record(i, true)?;
        self.decode(i, &rec)
    }

    /// Entry `i`, when there is one and it can be read.
    pub fn get(&self, i: usize) -> Option<IndexEntry> {
        self.try_get(i).ok()
    }

    /// The facts of entry `i` (its message not read), when it can be read.
    pub fn facts(&self, i: usize) -> Option<FactsEntry> {
        let rec = self.record(i, true).ok()?;
        self.decode_facts(i, &rec).ok()
    }

    fn decode_facts(&self, i: usize, rec: &[u8; REC]) -> Result<FactsEntry, StoreError> {
        let shared = self.shared_at(facts_of(rec))?;
        Ok(FactsEntry::decode(rec, i as u64, self.dropped, shared)?)
    }

    /// Changes entry `i` in place (pairing marks a request paired and gives it
    /// its response).
    pub fn update(&mut self, i: usize, f: impl FnOnce(&mut FactsEntry)) -> Result<(), StoreError> {
        let old = self.record(i, true)?;
        // Only the entry's numbers can change (`FactsEntry` offers no way to
        // change its message or shared facts): the message is not read, and the
        // record keeps pointing where it did.
        let mut e = self.decode_facts(i, &old)?;
        f(&mut e);
        let rec = e.encode(facts_of(&old), side_of(&old), self.dropped);
        let (bi, at) = self.place(i)?;
        let Some(bi) = bi else {
            put_record(&mut self.open, at, &rec);
            return Ok(());
        };
        let b = self
            .blocks
            .get(bi)
            .copied()
            .ok_or_else(|| self.missing(i))?;
        if !self.log.patch(b.addr + at as u64, &rec) {
            // The file cannot be written: the block moves to the log's end (in memory).
            let mut recs = Vec::clone(&*self.block_recs(bi, false)?);
            put_record(&mut recs, at, &rec);
            let addr = self.log.append(&recs);
            if let Some(blk) = self.blocks.get_mut(bi) {
                blk.addr = addr;
            }
        }
        if let Some((recs, _)) = self.blocks_cache.get_mut().map.get_mut(&b.first) {
            put_record(Arc::<Vec<u8>>::make_mut(recs), at, &rec);
        }
        Ok(())
    }

    /// Ring mode: drops the `k` oldest entries; the others move down by `k`.
    pub fn drop_front(&mut self, k: usize) {
        let k = k.min(self.len());
        if k == 0 {
            return;
        }
        self.dropped += k as u64;
        let c = self.blocks_cache.get_mut();
        while self.blocks.front().is_some_and(|b| b.end() <= self.dropped) {
            if let Some(b) = self.blocks.pop_front() {
                c.map.remove(&b.first);
            }
        }
        self.log.drop_before(self.dropped);
    }

    /// The entries in order (read block by block, without disturbing the cache).
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = Result<IndexEntry, StoreError>> + '_ {
        self.records()
            .map(|(i, r)| r.and_then(|rec| self.decode(i, &rec)))
    }

    /// The entries' facts in order (their messages not read).
    pub fn iter_facts(&self) -> impl Iterator<Item = Result<FactsEntry, StoreError>> + '_ {
        self.records()
            .map(|(i, r)| r.and_then(|rec| self.decode_facts(i, &rec)))
    }

    /// Every entry's latency (when it has one) and length, in order (`None`:
    /// unreadable), read from the records without decoding them.
    pub fn sort_keys(&self) -> impl Iterator<Item = Option<(Option<u64>, i32)>> + '_ {
        self.records()
            .map(|(_, r)| r.ok().as_ref().map(sort_keys_of))
    }

    fn records(&self) -> Records<'_> {
        Records {
            store: self,
            i: 0,
            block: None,
        }
    }

    /// Every entry (tests).
    #[cfg(test)]
    pub fn all(&self) -> Vec<IndexEntry> {
        self.iter().map(|e| e.expect("entry reads back")).collect()
    }

    /// Entry `i` (tests).
    #[cfg(test)]
    pub fn at(&self, i: usize) -> IndexEntry {
        self.try_get(i).expect("entry reads back")
    }

    /// Scratch files in use (tests).
    #[cfg(test)]
    pub fn files(&self) -> usize {
        self.log.segs.iter().filter(|s| s.file.is_some()).count()
    }
}

/// Writes `rec` at byte `at` of a block's records.
fn put_record(recs: &mut [u8], at: usize, rec: &[u8; REC]) {
    if let Some(dst) = recs.get_mut(at..at.saturating_add(REC)) {
        dst.copy_from_slice(rec);
    }
}

/// The records of a store in order, with their positions; see [`EntryStore::iter`].
struct Records<'a> {
    store: &'a EntryStore,
    i: usize,
    /// The block being read: its position and its records.
    block: Option<(usize, Arc<Vec<u8>>)>,
}

impl Iterator for Records<'_> {
    type Item = (usize, Result<[u8; REC], StoreError>);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.store;
        if self.i >= s.len() {
            return None;
        }
        let i = self.i;
        self.i += 1;
        let rec = s.place(i).and_then(|place| match place {
            (None, at) => EntryStore::record_in(&s.open, at),
            (Some(bi), at) => match &self.block {
                Some((b, recs)) if *b == bi => EntryStore::record_in(recs, at),
                _ => {
                    let recs = s.block_recs(bi, false)?;
                    let rec = EntryStore::record_in(&recs, at);
                    self.block = Some((bi, recs));
                    rec
                }
            },
        });
        Some((i, rec))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.store.len().saturating_sub(self.i);
        (n, Some(n))
    }
}

// ----- positions -------------------------------------------------------------------

/// One bit per entry (whether it passes the filter): 1/8 byte a message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bitset {
    words: Vec<u64>,
    len: usize,
}

impl Bitset {
    /// `len` bits, all `on`.
    pub fn filled(len: usize, on: bool) -> Bitset {
        let mut words = vec![if on { u64::MAX } else { 0 }; len.div_ceil(64)];
        if let (Some(w), used @ 1..) = (words.last_mut(), len % 64) {
            *w &= (1u64 << used) - 1;
        }
        Bitset { words, len }
    }

    /// Bits held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no bit is held.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i` (false past the end).
    pub fn get(&self, i: usize) -> bool {
        i < self.len
            && self
                .words
                .get(i / 64)
                .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Sets bit `i` (nothing past the end).
    pub fn set(&mut self, i: usize, on: bool) {
        if i >= self.len {
            return;
        }
        if let Some(w) = self.words.get_mut(i / 64) {
            *w = *w & !(1 << (i % 64)) | u64::from(on) << (i % 64);
        }
    }

    /// Sets bit `i`, growing the set to hold it (the bits added are off).
    pub fn insert(&mut self, i: usize) {
        if i >= self.len {
            self.words
                .resize((i + 1).div_ceil(64).max(self.words.len()), 0);
            self.len = i + 1;
        }
        self.set(i, true);
    }

    /// Appends a bit.
    pub fn push(&mut self, on: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
        self.set(self.len - 1, on);
    }

    /// Removes the first `k` bits; the others move down by `k`.
    pub fn drain_front(&mut self, k: usize) {
        let mut rest = Bitset::default();
        for i in k.min(self.len)..self.len {
            rest.push(self.get(i));
        }
        *self = rest;
    }
}
