//! What the blocks of a zstd frame decompress to, without decompressing.
//!
//! Place in the data path: [`super::declared`] asks [`frame_blocks`] for a
//! frame that carries no `Frame_Content_Size` (Kafka's Java producer writes
//! them so, through zstd-jni's streaming API). Raw and RLE blocks count their
//! size; a compressed block (RFC 8878 §3.1.1.3) counts the
//! `Regenerated_Size` of its literals section (read from the section header
//! for every literals type: no Huffman decoding) plus the match lengths of
//! its sequences, which are FSE-decoded from the backward bitstream exactly
//! as a decoder does (§3.1.1.3.2, §4.1) but without reading literals or
//! copying anything.
//!
//! Invariants:
//! - for every valid frame the answer is exactly what the decoder produces;
//!   otherwise it is `None` or, for bytes that are structurally sound but
//!   wrong inside, a size the decoder would not confirm. The structure is
//!   checked as libzstd checks it: reserved values, table descriptions
//!   complete and within the accuracy limits, "repeat" and treeless modes
//!   only after a table exists in the frame, literal lengths within the
//!   literals, the bitstream consumed exactly to its padding bit, each block
//!   within `Block_Maximum_Size` (the window, at most 128 KiB). Not checked:
//!   Huffman streams, offsets' values (their bits are skipped, which is what
//!   makes the walk cheaper than decoding) and the checksum — a CRC-verified
//!   batch with damage there is the documented exception of
//!   [`super::declared`];
//! - no allocation: the decoding tables are fixed arrays sized for the
//!   largest accuracy logs the format allows (literal and match lengths 9,
//!   offsets 8); no read is unchecked; every loop is bounded by the input or
//!   by a count it has checked.

use std::sync::OnceLock;

/// `Block_Maximum_Size` before the window is taken into account.
pub(super) const BLOCK_MAX: u64 = 128 << 10;

/// One state of an FSE decoding table, with its symbol's value already
/// resolved: `base` plus `extra` bits read from the stream gives the
/// literal length or the match length (an offset's value is not needed:
/// its baseline is 0, only its `extra` bits count).
#[derive(Clone, Copy, Default)]
struct Cell {
    base: u32,
    extra: u8,
    /// Bits to read for the next state, added to `next`.
    bits: u8,
    next: u16,
}

/// Literal lengths: codes 0–35 (baselines, extra bits), RFC 8878 §3.1.1.3.2.1.1.
const LL_BASE: [u32; 36] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28, 32, 40, 48, 64,
    128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
];
const LL_BITS: [u8; 36] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11,
    12, 13, 14, 15, 16,
];
/// Match lengths: codes 0–52.
const ML_BASE: [u32; 53] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
    28, 29, 30, 31, 32, 33, 34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027,
    2051, 4099, 8195, 16387, 32771, 65539,
];
const ML_BITS: [u8; 53] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
];
/// The predefined distributions (§3.1.1.3.2.2), accuracy logs 6, 6 and 5.
const LL_DEFAULT: [i16; 36] = [
    4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
    -1, -1, -1, -1,
];
const ML_DEFAULT: [i16; 53] = [
    1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
];
const OF_DEFAULT: [i16; 29] = [
    1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
];

/// Which of the three sequence codes a table decodes.
#[derive(Clone, Copy)]
enum Kind {
    Lit,
    Match,
    Off,
}

impl Kind {
    /// Symbols (codes) and the largest accuracy log the format allows.
    fn limits(self) -> (usize, u32) {
        match self {
            Kind::Lit => (36, 9),
            Kind::Match => (53, 9),
            // Offset codes above 31 would not fit any window a decoder takes.
            Kind::Off => (32, 8),
        }
    }

    /// A code's baseline and extra bits.
    fn value(self, code: usize) -> Option<(u32, u8)> {
        match self {
            Kind::Lit => Some((*LL_BASE.get(code)?, *LL_BITS.get(code)?)),
            Kind::Match => Some((*ML_BASE.get(code)?, *ML_BITS.get(code)?)),
            // Offset_Value = (1 << code) + code extra bits; the walk only
            // skips the bits, so the baseline is left out (0).
            Kind::Off => {
                let code = u8::try_from(code).ok().filter(|&c| c < 32)?;
                Some((0, code))
            }
        }
    }
}

/// A decoding table: `1 << log` cells of a fixed array of `N`.
#[derive(Clone, Copy)]
struct Table<const N: usize> {
    cells: [Cell; N],
    /// Each cell's `extra + bits` (at most 39), the bits it makes a
    /// sequence read: apart from the cells, so that the sequence loop sums
    /// three bytes, not six, and holds no cell's fields while it reads.
    tot: [u8; N],
    log: u32,
}

impl<const N: usize> Table<N> {
    const fn empty() -> Self {
        Table {
            cells: [Cell {
                base: 0,
                extra: 0,
                bits: 0,
                next: 0,
            }; N],
            tot: [0; N],
            log: 0,
        }
    }

    /// Builds the table of the normalized counts `norm` (−1: "less than 1")
    /// at accuracy `log`, as RFC 8878 §4.1.1 spreads and numbers the states.
    /// The counts must add up to `1 << log` (checked by the reader).
    fn build(&mut self, kind: Kind, norm: &[i16], log: u32) -> Option<()> {
        let size = 1usize << log;
        let cells = self.cells.get_mut(..size)?;
        // Indexed by symbol (< 53), masked to 63 so that no index is checked.
        let mut next_state = [0u32; 64];
        let mut high = size; // cells at and above `high` hold "less than 1" symbols
        for (s, &n) in norm.iter().enumerate() {
            if n == -1 {
                high = high.checked_sub(1)?;
                cells.get_mut(high)?.base = u32::try_from(s).ok()?;
                *next_state.get_mut(s)? = 1;
            } else {
                *next_state.get_mut(s)? = u32::try_from(n).ok()?;
            }
        }
        let step = (size >> 1) + (size >> 3) + 3;
        let mask = size - 1;
        let mut pos = 0usize;
        // Each symbol's baseline and extra bits, looked up once.
        let mut values = [(0u32, 0u8); 64];
        for (s, &n) in norm.iter().enumerate() {
            if n != 0 {
                *values.get_mut(s)? = kind.value(s)?;
            }
            let code = u32::try_from(s).ok()?;
            if high == size {
                // No "less than 1" symbol: every step lands on a cell.
                for _ in 0..n.max(0) {
                    cells.get_mut(pos)?.base = code;
                    pos = (pos + step) & mask;
                }
                continue;
            }
            for _ in 0..n.max(0) {
                cells.get_mut(pos)?.base = code;
                // The step is odd and the size a power of two: the walk
                // visits every cell once per `size` steps.
                let mut guard = size;
                loop {
                    pos = (pos + step) & mask;
                    if pos < high {
                        break;
                    }
                    guard = guard.checked_sub(1)?;
                }
            }
        }
        if pos != 0 {
            return None; // counts that do not fill the table
        }
        for (c, tot) in cells.iter_mut().zip(self.tot.iter_mut()) {
            // The spread left each cell's symbol in `base`.
            let s = (c.base & 63) as usize;
            let slot = next_state.get_mut(s)?;
            let state = *slot;
            *slot = state.wrapping_add(1);
            // The states of a symbol of count n run from n to 2n − 1, so
            // `state << bits` is in [size, 2·size) and `next` below the size.
            // A state above the size (counts that do not fill the table)
            // makes `bits` fail; a state of 0 cannot occur (every cell's
            // symbol has a count of at least 1) and is read as 1.
            let bits = log.checked_sub((state | 1).ilog2())?;
            let next = (state << bits).wrapping_sub(size as u32);
            let (base, extra) = *values.get(s)?;
            *c = Cell {
                base,
                extra,
                bits: bits as u8,
                next: next as u16,
            };
            *tot = extra + bits as u8;
        }
        self.log = log;
        Some(())
    }

    /// The one-state table of an RLE mode: `code` every time, no bits.
    fn rle(&mut self, kind: Kind, code: u8) -> Option<()> {
        let (base, extra) = kind.value(usize::from(code))?;
        *self.cells.get_mut(0)? = Cell {
            base,
            extra,
            bits: 0,
            next: 0,
        };
        *self.tot.get_mut(0)? = extra;
        self.log = 0;
        Some(())
    }

    /// Reads an FSE table description (RFC 8878 §4.1.1) at the start of
    /// `src` and builds its table: the bytes it took.
    fn read(&mut self, kind: Kind, src: &[u8]) -> Option<usize> {
        let (symbols, max_log) = kind.limits();
        let mut r = Forward { data: src, bit: 0 };
        let log = r.take(4)? + 5;
        if log > max_log {
            return None;
        }
        let mut norm = [0i16; 53];
        let mut remaining = (1i32 << log) + 1;
        let mut threshold = 1i32 << log;
        let mut nb_bits = log + 1;
        let mut s = 0usize;
        let mut previous0 = false;
        loop {
            if previous0 {
                // Zero-probability repeats: 2-bit flags, 3 means "and more".
                loop {
                    let r2 = r.take(2)? as usize;
                    s += r2;
                    if s >= symbols {
                        return None;
                    }
                    if r2 != 3 {
                        break;
                    }
                }
            }
            let max = (2 * threshold - 1) - remaining;
            let peek = r.peek(nb_bits)? as i32;
            let low = peek & (threshold - 1);
            let value = if low < max {
                r.bit += nb_bits as usize - 1;
                low
            } else {
                r.bit += nb_bits as usize;
                let v = peek & (2 * threshold - 1);
                if v >= threshold {
                    v - max
                } else {
                    v
                }
            };
            let count = value - 1;
            remaining -= count.abs();
            *norm.get_mut(s)? = i16::try_from(count).ok()?;
            s += 1;
            previous0 = count == 0;
            if remaining < threshold {
                if remaining <= 1 {
                    break;
                }
                nb_bits = 32 - (remaining as u32).leading_zeros();
                threshold = 1 << (nb_bits - 1);
            }
            if s >= symbols {
                break;
            }
        }
        if remaining != 1 {
            return None;
        }
        let used = r.bit.div_ceil(8);
        if used > src.len() {
            return None;
        }
        self.build(kind, norm.get(..s)?, log)?;
        Some(used)
    }
}

/// A little-endian bit reader going forward (table descriptions); bits past
/// the end read as zeros, the caller checks how many were used.
struct Forward<'a> {
    data: &'a [u8],
    bit: usize,
}

impl Forward<'_> {
    /// The next `n` (≤ 24) bits, not consumed.
    fn peek(&self, n: u32) -> Option<u32> {
        if n > 24 {
            return None;
        }
        let at = self.bit / 8;
        let mut w = [0u8; 4];
        for (i, b) in w.iter_mut().enumerate() {
            *b = self.data.get(at + i).copied().unwrap_or(0);
        }
        Some((u32::from_le_bytes(w) >> (self.bit % 8)) & ((1 << n) - 1))
    }

    fn take(&mut self, n: u32) -> Option<u32> {
        let v = self.peek(n)?;
        self.bit += n as usize;
        Some(v)
    }
}

/// The backward bitstream of a sequences section (§4.1): read from the end,
/// most significant bits first, after the padding (the last byte's highest
/// set bit). Reading past the start is an error.
#[derive(Clone, Copy)]
struct Backward<'a> {
    data: &'a [u8],
    /// Bits not yet read, all below this position.
    left: usize,
    /// 64 bits of the stream from bit `low` (a byte boundary) on, holding
    /// at least the 56 bits below `left` (or all of them), and at most 63.
    word: u64,
    low: usize,
}

impl<'a> Backward<'a> {
    fn new(data: &'a [u8]) -> Option<Self> {
        let last = *data.last()?;
        if last == 0 {
            return None;
        }
        let left = (data.len() - 1) * 8 + (7 - last.leading_zeros() as usize);
        Some(Backward::at(data, left))
    }

    /// The reader of `data` with `left` bits not yet read (at most those
    /// of `data`).
    fn at(data: &'a [u8], left: usize) -> Self {
        let mut r = Backward {
            data,
            left,
            word: 0,
            low: 0,
        };
        r.refill();
        r
    }

    #[inline(always)]
    fn refill(&mut self) {
        let low = self.left.saturating_sub(56) & !7;
        let at = low / 8;
        self.word = match self.data.get(at..at + 8) {
            Some(b) => {
                let mut w = [0u8; 8];
                w.copy_from_slice(b);
                u64::from_le_bytes(w)
            }
            None => {
                // A stream shorter than 8 bytes: zeros above it.
                let mut w = [0u8; 8];
                for (d, s) in w.iter_mut().zip(self.data.get(at..).unwrap_or(&[])) {
                    *d = *s;
                }
                u64::from_le_bytes(w)
            }
        };
        self.low = low;
    }

    #[cfg(test)]
    /// Makes the next `n` (≤ 56) bits available in `word`: false when fewer
    /// than `n` remain.
    #[inline(always)]
    fn ensure(&mut self, n: usize) -> bool {
        if self.left < self.low + n {
            if self.left < n {
                return false;
            }
            self.refill();
        }
        true
    }

    /// The next `n` (≤ 32) bits.
    #[inline(always)]
    fn read(&mut self, n: u32) -> Option<u64> {
        let n = n as usize;
        if self.left < self.low + n {
            if self.left < n {
                return None;
            }
            self.refill();
        }
        self.left -= n;
        // `n` may be 0, and the shift then 64: wrapping_shr keeps it defined,
        // the mask makes the result 0.
        Some(self.word.wrapping_shr((self.left - self.low) as u32) & ((1u64 << n) - 1))
    }
}

/// The three sequence decoding tables in use (or the predefined ones).
struct Tables {
    ll: Table<512>,
    ml: Table<512>,
    of: Table<256>,
    /// [`MASK`], read by [`stretch`] from here.
    masks: [u64; 256],
}

impl Tables {
    const fn empty() -> Tables {
        Tables {
            ll: Table::empty(),
            ml: Table::empty(),
            of: Table::empty(),
            masks: MASK,
        }
    }
}

/// The predefined tables, built once.
fn defaults() -> Option<&'static Tables> {
    static D: OnceLock<Option<Tables>> = OnceLock::new();
    D.get_or_init(|| {
        let mut d = Tables::empty();
        d.ll.build(Kind::Lit, &LL_DEFAULT, 6)?;
        d.ml.build(Kind::Match, &ML_DEFAULT, 6)?;
        d.of.build(Kind::Off, &OF_DEFAULT, 5)?;
        Some(d)
    })
    .as_ref()
}

/// What a frame's blocks carry over from one block to the next (§3.1.1.3):
/// the sequence tables for "repeat" modes (and whether they exist yet), and
/// whether a Huffman table exists for treeless literals.
struct Frame<'t> {
    tables: &'t mut Tables,
    defined: bool,
    huffman: bool,
    block_max: u64,
}

thread_local! {
    /// The tables of the frames walked on this thread (13.5 KB: made once,
    /// not zeroed per frame). What a frame finds in them is never read
    /// before it is built: "repeat" modes need a table built in the same
    /// frame (`Frame::defined`), and every state stays below its table's
    /// size.
    static TABLES: std::cell::RefCell<Tables> = const { std::cell::RefCell::new(Tables::empty()) };
}

/// Walks the blocks of one frame starting at `data[start..]` (just after
/// the frame header) with the window `window`: the bytes they decompress to
/// and where the last block ends; `None` when anything is malformed or
/// unusual.
pub(super) fn frame_blocks(data: &[u8], start: usize, window: u64) -> Option<(u64, usize)> {
    TABLES.with(|t| match t.try_borrow_mut() {
        Ok(mut t) => walk_frame(&mut t, data, start, window),
        // Not reentered today; a walk of its own if it ever is.
        Err(_) => walk_frame(&mut Tables::empty(), data, start, window),
    })
}

fn walk_frame(tables: &mut Tables, data: &[u8], start: usize, window: u64) -> Option<(u64, usize)> {
    let block_max = window.min(BLOCK_MAX);
    let mut f = Frame {
        tables,
        defined: false,
        huffman: false,
        block_max,
    };
    let mut total = 0u64;
    let end = walk_blocks(data, start, block_max, |kind, size, block| {
        total += match kind {
            2 => f.compressed(block)?,
            _ => size as u64,
        };
        Some(())
    })?;
    Some((total, end))
}

/// Walks the blocks of a zstd frame from `data[pos..]` (just after the
/// frame header) by their 3-byte headers (RFC 8878 §3.1.1.2: last flag,
/// type, `Block_Size`), giving `each` every block's type (0 raw, 1 RLE, 2
/// compressed), size and bytes on the wire (an RLE block's one byte): where
/// the last block ends; `None` for a block over `max` bytes, of the
/// reserved type or cut short, or when `each` says so.
#[inline(always)]
pub(super) fn walk_blocks(
    data: &[u8],
    mut pos: usize,
    max: u64,
    mut each: impl FnMut(u32, usize, &[u8]) -> Option<()>,
) -> Option<usize> {
    loop {
        let h: [u8; 3] = data.get(pos..pos.checked_add(3)?)?.try_into().ok()?;
        let h = u32::from_le_bytes([h[0], h[1], h[2], 0]);
        if u64::from(h >> 3) > max {
            return None;
        }
        let (kind, size) = ((h >> 1) & 3, (h >> 3) as usize);
        let wire = match kind {
            0 | 2 => size,
            1 => 1,
            _ => return None,
        };
        pos += 3;
        each(kind, size, data.get(pos..pos.checked_add(wire)?)?)?;
        pos += wire;
        if h & 1 != 0 {
            return Some(pos);
        }
    }
}

/// `MASK[n]`: the low `n` bits set, for every `n` a `u8` holds (all 64
/// from 64 on), so that a `u8` index needs no check.
// Evaluated at compile time: an index out of range would not compile.
#[allow(clippy::indexing_slicing)]
const MASK: [u64; 256] = {
    let mut m = [u64::MAX; 256];
    let mut n = 0;
    while n < 64 {
        m[n] = (1u64 << n) - 1;
        n += 1;
    }
    m
};

/// The decoding state of a sequences section: the bitstream, the three
/// states and the sums so far (the reference walk the fast one is tested
/// against).
#[cfg(test)]
struct Walk<'a> {
    br: Backward<'a>,
    states: [usize; 3],
    lits: u64,
    matches: u64,
}

#[cfg(test)]
impl Walk<'_> {
    /// Decodes one sequence with the tables `t`; `LAST`: the last one,
    /// after which no state is updated.
    #[inline(always)]
    fn step<const LAST: bool>(&mut self, t: &Tables) -> Option<()> {
        let [ls, ms, os] = self.states;
        let l = *t.ll.cells.get(ls & 511)?;
        let m = *t.ml.cells.get(ms & 511)?;
        let o = *t.of.cells.get(os & 255)?;
        // Extra bits: offset, match length, literal length (§3.1.1.3.2.1);
        // then the state updates: literal length, match length, offset.
        // The offset's value is not needed: only its bits are skipped.
        let (ox, mx, lx) = (u32::from(o.extra), u32::from(m.extra), u32::from(l.extra));
        let (lb, mb, ob) = if LAST {
            (0, 0, 0)
        } else {
            (u32::from(l.bits), u32::from(m.bits), u32::from(o.bits))
        };
        let total = (ox + mx) + (lx + lb) + (mb + ob);
        let f: [u64; 5];
        if total <= 56 && self.br.ensure(total as usize) {
            // One window for the whole sequence: the fields are shifts of
            // it, independent of one another.
            let w = self.br.word;
            let top = (self.br.left - self.br.low) as u32;
            let field = |end: u32, n: u32| {
                w.wrapping_shr(end) & MASK.get((n & 63) as usize).copied().unwrap_or(0)
            };
            let e_ml = top - (ox + mx);
            let e_ll = e_ml - lx;
            let e_sl = e_ll - lb;
            let e_sm = e_sl - mb;
            let e_so = e_sm - ob;
            f = [
                field(e_ml, mx),
                field(e_ll, lx),
                field(e_sl, lb),
                field(e_sm, mb),
                field(e_so, ob),
            ];
            self.br.left -= total as usize;
        } else {
            (self.br, f) = long_sequence(self.br, [ox, mx, lx, lb, mb, ob])?;
        }
        self.matches += u64::from(m.base) + f[0];
        self.lits += u64::from(l.base) + f[1];
        if !LAST {
            self.states = [
                usize::from(l.next) + f[2] as usize,
                usize::from(m.next) + f[3] as usize,
                usize::from(o.next) + f[4] as usize,
            ];
        }
        Some(())
    }
}

/// The fields of a sequence of more than 56 bits (long offsets and lengths),
/// read one by one: the offset's bits skipped, then the match length, the
/// literal length and the three state updates. The reader is passed by
/// value so that the hot loop keeps its own in registers.
#[cold]
#[inline(never)]
fn long_sequence<'a>(mut br: Backward<'a>, bits: [u32; 6]) -> Option<(Backward<'a>, [u64; 5])> {
    let [ox, mx, lx, lb, mb, ob] = bits;
    br.read(ox)?;
    let f = [
        br.read(mx)?,
        br.read(lx)?,
        br.read(lb)?,
        br.read(mb)?,
        br.read(ob)?,
    ];
    Some((br, f))
}

/// Decodes the `nb_seq` (> 0) sequences of the bitstream `stream`
/// (§3.1.1.3.2) with the tables `t`: the sums of their literal lengths and
/// of their match lengths.
///
/// The sequences run in stretches ([`stretch`], the hot loop of `stats` on
/// zstd payloads) of sequences of at most 56 bits that start 56 bits or more
/// from the stream's start; a sequence of more than 56 bits, and the few
/// near the start, are read field by field ([`long_read`]), as is the last
/// one, which updates no state.
#[inline(never)]
fn sequences(t: &Tables, stream: &[u8], nb_seq: usize) -> Option<(u64, u64)> {
    let mut br = Backward::new(stream)?;
    let ls = br.read(t.ll.log)? as usize;
    let os = br.read(t.of.log)? as usize;
    let ms = br.read(t.ml.log)? as usize;
    let mut w = Walked {
        left: br.left,
        states: [ls, ms, os],
        lits: 0,
        matches: 0,
    };
    let mut todo = nb_seq - 1;
    while todo > 0 {
        // A stretch that cannot take `left` below 56 before its last
        // sequence starts.
        let n = (w.left / 56).min(todo);
        let done = stretch(t, stream, &mut w, n)?;
        todo -= done;
        if done == n && n > 0 {
            continue;
        }
        // A sequence of more than 56 bits, or one that starts less than 56
        // bits from the stream's start: field by field.
        let [ls, ms, os] = w.states;
        let l = t.ll.cells.get(ls & 511)?;
        let m = t.ml.cells.get(ms & 511)?;
        let o = t.of.cells.get(os & 255)?;
        let (left, f) = long_read(stream, w.left, [*l, *m, *o])?;
        w.left = left;
        w.matches += u64::from(m.base) + f[0];
        w.lits += u64::from(l.base) + f[1];
        w.states = [
            usize::from(l.next) + f[2] as usize,
            usize::from(m.next) + f[3] as usize,
            usize::from(o.next) + f[4] as usize,
        ];
        todo -= 1;
    }
    let Walked {
        left,
        states: [ls, ms, os],
        lits,
        matches,
    } = w;
    // The last sequence updates no state.
    let l = t.ll.cells.get(ls & 511)?;
    let m = t.ml.cells.get(ms & 511)?;
    let o = t.of.cells.get(os & 255)?;
    let (br, f) = long_sequence(
        Backward::at(stream, left),
        [o.extra, m.extra, l.extra, 0, 0, 0].map(u32::from),
    )?;
    if br.left != 0 {
        return None; // the stream must end exactly at its padding
    }
    Some((
        lits + u64::from(l.base) + f[1],
        matches + u64::from(m.base) + f[0],
    ))
}

/// Where [`sequences`] stands: the bits not yet read (all below `left`),
/// the literal length, match length and offset states, the sums so far.
struct Walked {
    left: usize,
    states: [usize; 3],
    lits: u64,
    matches: u64,
}

/// Decodes up to `n` sequences of at most 56 bits each from `w` on, all
/// starting at 56 bits or more from the stream's start (`n` ≤ `w.left` / 56):
/// how many, fewer when the next one takes more than 56 bits. The hot loop of
/// `stats` on zstd payloads, in a function of its own so that its values
/// stay in registers.
///
/// The bit reader is `left` alone: each sequence loads the 8 bytes that end
/// just above it, at least 56 bits, so there is no refill to branch on. Its
/// bits are peeled from the low end — offset state, match length state,
/// literal length state, literal length extra bits, match length extra
/// bits; the offset's own extra bits, on top, are skipped.
#[inline(never)]
fn stretch(t: &Tables, stream: &[u8], w: &mut Walked, n: usize) -> Option<usize> {
    let masks = &t.masks;
    let Walked {
        mut left,
        states: [mut ls, mut ms, mut os],
        mut lits,
        mut matches,
    } = *w;
    // Counted down: the sequences not yet decoded.
    let mut rest = n;
    while rest > 0 {
        let total = usize::from(*t.ll.tot.get(ls & 511)?)
            + usize::from(*t.ml.tot.get(ms & 511)?)
            + usize::from(*t.of.tot.get(os & 255)?);
        if total > 56 {
            break;
        }
        // The cells are borrowed, not copied: each field is loaded where it
        // is used.
        let l = t.ll.cells.get(ls & 511)?;
        let m = t.ml.cells.get(ms & 511)?;
        let o = t.of.cells.get(os & 255)?;
        // The 8 bytes from `at` hold bits 8·at to 8·at + 63, which include
        // the `total` below `left` (8·at ≤ left − 56), and lie in the
        // stream (left < 8·len, so at ≤ len − 8).
        let at = (left - 56) / 8;
        let b: [u8; 8] = stream.get(at..at + 8)?.try_into().ok()?;
        left -= total;
        let mut v = u64::from_le_bytes(b) >> (left - at * 8);
        os = usize::from(o.next) + (v & mask(masks, o.bits)) as usize;
        v >>= o.bits;
        ms = usize::from(m.next) + (v & mask(masks, m.bits)) as usize;
        v >>= m.bits;
        ls = usize::from(l.next) + (v & mask(masks, l.bits)) as usize;
        v >>= l.bits;
        lits += u64::from(l.base) + (v & mask(masks, l.extra));
        v >>= l.extra;
        matches += u64::from(m.base) + (v & mask(masks, m.extra));
        rest -= 1;
    }
    *w = Walked {
        left,
        states: [ls, ms, os],
        lits,
        matches,
    };
    Some(n - rest)
}

/// The low `n` bits set (`n` < 64; the rest of the table is never used),
/// from `masks`, a copy of [`MASK`] beside the tables: the loop reaches it
/// from the tables' address, with no register of its own.
#[inline(always)]
// A `u8` index into 256 entries: always in range.
#[allow(clippy::indexing_slicing)]
fn mask(masks: &[u64; 256], n: u8) -> u64 {
    masks[usize::from(n)]
}

/// A sequence of more than 56 bits, or one near the stream's start, in
/// [`sequences`]: read field by field from `left` on. What is left after it
/// and the fields (match and literal lengths' extra bits, the three state
/// updates).
#[cold]
#[inline(never)]
fn long_read(data: &[u8], left: usize, [l, m, o]: [Cell; 3]) -> Option<(usize, [u64; 5])> {
    let bits = [o.extra, m.extra, l.extra, l.bits, m.bits, o.bits].map(u32::from);
    let (br, f) = long_sequence(Backward::at(data, left), bits)?;
    Some((br.left, f))
}

/// As [`sequences`], one field at a time: the reference walk. Decodes the `nb_seq` (> 0) sequences of the bitstream `stream`
/// (§3.1.1.3.2) with the tables `t`: the sums of their literal lengths and
/// of their match lengths.
#[cfg(test)]
fn sequences_reference(t: &Tables, stream: &[u8], nb_seq: usize) -> Option<(u64, u64)> {
    let w = walked(t, stream, nb_seq)?;
    if w.br.left != 0 {
        return None; // the stream must end exactly at its padding
    }
    Some((w.lits, w.matches))
}

/// The reference walk after the `n` (> 0) sequences of `stream`, its bits
/// left unread included.
#[cfg(test)]
fn walked<'a>(t: &Tables, stream: &'a [u8], n: usize) -> Option<Walk<'a>> {
    let mut br = Backward::new(stream)?;
    let ls = br.read(t.ll.log)? as usize;
    let os = br.read(t.of.log)? as usize;
    let ms = br.read(t.ml.log)? as usize;
    let mut w = Walk {
        br,
        states: [ls, ms, os],
        lits: 0,
        matches: 0,
    };
    for _ in 1..n {
        w.step::<false>(t)?;
    }
    w.step::<true>(t)?;
    Some(w)
}

impl Frame<'_> {
    /// What one compressed block decompresses to.
    fn compressed(&mut self, b: &[u8]) -> Option<u64> {
        let lit = self.literals(b)?;
        let (lit_size, mut pos) = lit;
        let rest = b.get(pos..)?;
        let s0 = *rest.first()?;
        pos += 1;
        let nb_seq = match s0 {
            0..=127 => usize::from(s0),
            128..=254 => {
                pos += 1;
                (usize::from(s0 - 128) << 8) + usize::from(*rest.get(1)?)
            }
            255 => {
                pos += 2;
                let v: [u8; 2] = rest.get(1..3)?.try_into().ok()?;
                usize::from(u16::from_le_bytes(v)) + 0x7F00
            }
        };
        if nb_seq == 0 {
            // The section ends there, and the block with it.
            return (pos == b.len()).then_some(lit_size as u64);
        }
        let modes = *b.get(pos)?;
        pos += 1;
        if modes & 3 != 0 {
            return None; // reserved
        }
        // "Repeat" needs a previous block with sequences in this frame.
        let repeat_ok = self.defined;
        let d = defaults()?;
        let t = &mut *self.tables;
        pos += table(
            &mut t.ll,
            &d.ll,
            Kind::Lit,
            modes >> 6,
            b.get(pos..)?,
            repeat_ok,
        )?;
        pos += table(
            &mut t.of,
            &d.of,
            Kind::Off,
            (modes >> 4) & 3,
            b.get(pos..)?,
            repeat_ok,
        )?;
        pos += table(
            &mut t.ml,
            &d.ml,
            Kind::Match,
            (modes >> 2) & 3,
            b.get(pos..)?,
            repeat_ok,
        )?;
        self.defined = true;
        let walked = sequences(self.tables, b.get(pos..)?, nb_seq);
        // Every test that walks a frame checks the fast walk against the
        // reference one, valid or damaged.
        #[cfg(test)]
        assert_eq!(
            walked,
            sequences_reference(self.tables, b.get(pos..)?, nb_seq),
            "the fast and the reference sequence walks differ"
        );
        let (lits, matches) = walked?;
        // The literals used, the block's size (both only grow: checked once).
        let lit_total = lit_size as u64;
        if lits > lit_total || lit_total + matches > self.block_max {
            return None;
        }
        Some(lit_total + matches)
    }

    /// The literals section header (§3.1.1.3.1.1): `Regenerated_Size` and
    /// the section's length in the block. Huffman streams are not decoded.
    fn literals(&mut self, b: &[u8]) -> Option<(usize, usize)> {
        let b0 = *b.first()?;
        let format = (b0 >> 2) & 3;
        let (size, len) = match b0 & 3 {
            kind @ (0 | 1) => {
                let (size, header) = match format {
                    0 | 2 => (usize::from(b0 >> 3), 1),
                    1 => {
                        let v: [u8; 2] = b.get(..2)?.try_into().ok()?;
                        (usize::from(u16::from_le_bytes(v) >> 4), 2)
                    }
                    _ => {
                        let v: [u8; 3] = b.get(..3)?.try_into().ok()?;
                        ((u32::from_le_bytes([v[0], v[1], v[2], 0]) >> 4) as usize, 3)
                    }
                };
                // Raw: the bytes themselves; RLE: one byte.
                (size, header + if kind == 0 { size } else { 1 })
            }
            kind => {
                // Compressed (2) or treeless (3, the previous Huffman table).
                if kind == 3 && !self.huffman {
                    return None;
                }
                let v: [u8; 5] = match b.get(..5) {
                    Some(v) => v.try_into().ok()?,
                    None => return None, // libzstd wants 5 bytes here
                };
                let lhc = u64::from(u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
                    | (u64::from(v[4]) << 32);
                let (header, size, csize) = match format {
                    0 | 1 => (3, (lhc >> 4) & 0x3FF, (lhc >> 14) & 0x3FF),
                    2 => (4, (lhc >> 4) & 0x3FFF, (lhc >> 18) & 0x3FFF),
                    _ => (5, (lhc >> 4) & 0x3FFFF, (lhc >> 22) & 0x3FFFF),
                };
                // Four streams need at least 6 literals (libzstd refuses fewer).
                if format != 0 && size < 6 {
                    return None;
                }
                self.huffman = true;
                (size as usize, header + csize as usize)
            }
        };
        if size as u64 > self.block_max || len > b.len() {
            return None;
        }
        Some((size, len))
    }
}

/// Sets up one code's table `t` for `mode` (§3.1.1.3.2.1), `predefined`
/// being its predefined table: the bytes its description took.
fn table<const N: usize>(
    t: &mut Table<N>,
    predefined: &Table<N>,
    kind: Kind,
    mode: u8,
    src: &[u8],
    repeat_ok: bool,
) -> Option<usize> {
    match mode {
        0 => {
            let size = 1usize << predefined.log;
            t.cells
                .get_mut(..size)?
                .copy_from_slice(predefined.cells.get(..size)?);
            t.tot
                .get_mut(..size)?
                .copy_from_slice(predefined.tot.get(..size)?);
            t.log = predefined.log;
            Some(0)
        }
        1 => {
            let (symbols, _) = kind.limits();
            let code = *src.first()?;
            if usize::from(code) >= symbols {
                return None;
            }
            t.rle(kind, code)?;
            Some(1)
        }
        2 => t.read(kind, src),
        // Repeat: the previous block's table of this frame.
        _ => repeat_ok.then_some(0),
    }
}

#[cfg(test)]
// Test code: an index out of range is a failed test.
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// xorshift64*: the tests' deterministic randomness.
    fn next(x: &mut u64) -> u64 {
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A random valid distribution for `kind`: normalized counts (some
    /// "less than 1", some 0) adding up to `1 << log`.
    fn distribution(kind: Kind, x: &mut u64) -> (Vec<i16>, u32) {
        let (symbols, max_log) = kind.limits();
        let log = 5 + (next(x) % u64::from(max_log - 4)) as u32;
        let size = 1i32 << log;
        let n = 1 + (next(x) % symbols as u64) as usize;
        let mut norm = vec![0i16; n];
        let mut left = size;
        for c in norm.iter_mut().skip(1) {
            if next(x).is_multiple_of(6) && left > 1 {
                *c = -1;
                left -= 1;
            }
        }
        // The rest spread over the symbols that are not "less than 1",
        // the first always among them; a few symbols stay at 0.
        let live: Vec<usize> = (0..n)
            .filter(|&s| s == 0 || (norm[s] == 0 && !next(x).is_multiple_of(4)))
            .collect();
        while left > 0 {
            let s = live[(next(x) % live.len() as u64) as usize];
            let k = 1 + (next(x) % (left as u64).min(8)) as i32;
            norm[s] += k as i16;
            left -= k;
        }
        (norm, log)
    }

    /// RFC 8878 §4.1.1 as written: the spread, then the states numbered in
    /// position order. (baseline, extra bits, state bits, next) per cell.
    fn build_reference(kind: Kind, norm: &[i16], log: u32) -> Vec<(u32, u8, u8, u16)> {
        let size = 1usize << log;
        let mut symbol = vec![0usize; size];
        let mut high = size - 1;
        for (s, &n) in norm.iter().enumerate() {
            if n == -1 {
                symbol[high] = s;
                high -= 1;
            }
        }
        let step = (size >> 1) + (size >> 3) + 3;
        let mut pos = 0;
        for (s, &n) in norm.iter().enumerate() {
            for _ in 0..n.max(0) {
                symbol[pos] = s;
                pos = (pos + step) & (size - 1);
                while pos > high {
                    pos = (pos + step) & (size - 1);
                }
            }
        }
        assert_eq!(pos, 0);
        let mut next_state: Vec<u32> = norm.iter().map(|&n| n.max(1) as u32).collect();
        symbol
            .iter()
            .map(|&s| {
                let x = next_state[s];
                next_state[s] += 1;
                let bits = log - (31 - x.leading_zeros());
                let (base, extra) = kind.value(s).unwrap();
                (base, extra, bits as u8, ((x << bits) - size as u32) as u16)
            })
            .collect()
    }

    fn cells<const N: usize>(t: &Table<N>) -> Vec<(u32, u8, u8, u16)> {
        let size = 1usize << t.log;
        t.cells[..size]
            .iter()
            .map(|c| (c.base, c.extra, c.bits, c.next))
            .collect()
    }

    /// Every table the build makes is the RFC's, its `tot` bytes the sums
    /// of its cells' bits, with or without "less than 1" symbols.
    #[test]
    fn tables_are_built_as_the_rfc_spreads_and_numbers_them() {
        let mut x = 0x9E37_79B9_7F4A_7C15;
        let mut with_less = 0;
        for _ in 0..3000 {
            let kind = [Kind::Lit, Kind::Match, Kind::Off][(next(&mut x) % 3) as usize];
            let (norm, log) = distribution(kind, &mut x);
            with_less += usize::from(norm.contains(&-1));
            let mut t = Table::<512>::empty();
            // What an earlier table left in the cells must not matter.
            for (i, c) in t.cells.iter_mut().enumerate() {
                c.base = (i * 7919) as u32;
            }
            t.build(kind, &norm, log).unwrap();
            assert_eq!(cells(&t), build_reference(kind, &norm, log), "{norm:?}");
            for (c, &tot) in t.cells.iter().zip(&t.tot).take(1 << log) {
                assert_eq!(tot, c.extra + c.bits);
            }
        }
        assert!(with_less > 1000, "{with_less}");
        // Counts that do not fill the table are refused.
        let mut t = Table::<512>::empty();
        assert!(t.build(Kind::Lit, &[60, 3], 6).is_none());
        assert!(t.build(Kind::Lit, &[64, 1], 6).is_none());
    }

    /// A table for `kind`: predefined, RLE or a random distribution.
    fn random_table<const N: usize>(kind: Kind, predefined: &Table<N>, x: &mut u64) -> Table<N> {
        let mut t = Table::<N>::empty();
        match next(x) % 4 {
            0 => {
                table(&mut t, predefined, kind, 0, &[], false).unwrap();
            }
            1 => {
                let code = (next(x) % kind.limits().0 as u64) as u8;
                t.rle(kind, code).unwrap();
            }
            _ => {
                let (norm, log) = distribution(kind, x);
                t.build(kind, &norm, log).unwrap();
            }
        }
        t
    }

    /// The bits the reference walk leaves unread after `n` sequences.
    fn left_after(t: &Tables, stream: &[u8], n: usize) -> Option<usize> {
        walked(t, stream, n).map(|w| w.br.left)
    }

    /// `stream` without its lowest `r` bits: the same bits read from the
    /// top, ending `r` bits earlier.
    fn drop_low_bits(stream: &[u8], r: usize) -> Vec<u8> {
        let (bytes, bits) = (r / 8, r % 8);
        let src = &stream[bytes..];
        let mut out: Vec<u8> = (0..src.len())
            .map(|i| {
                let hi = src.get(i + 1).map_or(0, |&b| u16::from(b) << 8);
                ((hi | u16::from(src[i])) >> bits) as u8
            })
            .collect();
        while out.last() == Some(&0) {
            out.pop();
        }
        out
    }

    /// The fast sequence walk ([`sequences`]: stretches of one-load
    /// sequences, the rest field by field) and the reference walk give the
    /// same answer for every count of sequences over random streams and
    /// tables: `None` for streams cut short or with bits left over, and
    /// the same sums for the same streams cut to end exactly after the
    /// last sequence — streams shorter than a word, sequences of more than
    /// 56 bits, stretches of hundreds.
    #[test]
    fn the_fast_sequence_walk_agrees_with_the_reference() {
        let d = defaults().unwrap();
        let mut x = 0x0123_4567_89AB_CDEF;
        let (mut exact, mut long, mut over_56) = (0, 0, 0);
        for case in 0..1500 {
            let t = Tables {
                ll: random_table(Kind::Lit, &d.ll, &mut x),
                ml: random_table(Kind::Match, &d.ml, &mut x),
                of: random_table(Kind::Off, &d.of, &mut x),
                masks: MASK,
            };
            let len = match case % 3 {
                0 => (next(&mut x) % 9) as usize,
                1 => (next(&mut x) % 64) as usize,
                _ => (next(&mut x) % 1200) as usize,
            };
            let mut stream: Vec<u8> = (0..len).map(|_| next(&mut x) as u8).collect();
            if let Some(b) = stream.last_mut() {
                *b |= 1 << (next(&mut x) % 8); // a padding bit, mostly
            }
            let most = len * 8 / 4 + 3;
            let some: Vec<usize> = (0..8).map(|_| 1 + next(&mut x) as usize % most).collect();
            for n in (1..=most.min(40)).chain(some) {
                assert_eq!(
                    sequences(&t, &stream, n),
                    sequences_reference(&t, &stream, n),
                    "case {case}, {n} sequences"
                );
            }
            // The stream cut to end exactly after n sequences, n up to
            // the most it holds (running out is monotone in n).
            let (mut lo, mut hi) = (0, most);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if left_after(&t, &stream, mid).is_some() {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            if lo == 0 {
                continue;
            }
            let n = 1 + next(&mut x) as usize % lo;
            let r = left_after(&t, &stream, n).unwrap();
            let cut = drop_low_bits(&stream, r);
            let fast = sequences(&t, &cut, n);
            assert!(
                fast.is_some(),
                "case {case}: {n} sequences, {r} bits dropped"
            );
            assert_eq!(fast, sequences_reference(&t, &cut, n), "case {case}");
            exact += 1;
            long += usize::from(n > 50);
            let widest = (0..1usize << t.ll.log)
                .flat_map(|l| (0..1usize << t.ml.log).map(move |m| (l, m)))
                .map(|(l, m)| t.ll.tot[l] + t.ml.tot[m])
                .max()
                .unwrap_or(0)
                + t.of.tot[..1 << t.of.log].iter().max().copied().unwrap_or(0);
            over_56 += usize::from(widest > 56);
        }
        assert!(
            exact > 500 && long > 100 && over_56 > 100,
            "{exact} {long} {over_56}"
        );
    }
}
