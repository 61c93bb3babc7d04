//! A zero-copy reader for classic pcap and pcapng files.
//!
//! Place in the data path: under [`super::FileSource`], which uses it for
//! regular files it can open and keeps libpcap for standard input, live
//! capture and every file this reader declines (see [`FastFile::open`]).
//!
//! The file is read with large `read()` calls into buffers of [`CHUNK`]
//! bytes, one call per buffer (the first read, made when the file is opened,
//! takes only [`FIRST_CHUNK`]: enough for the header and the first frames); every
//! frame's `data` is a [`Bytes::slice`] of its buffer, so a frame costs no
//! allocation and no copy. Through [`FastFile::next_tcp`] an Ethernet/IPv4/TCP
//! frame is decoded where it lies in the buffer and only its TCP payload is
//! sliced (none for a pure ACK). A record that straddles two buffers is
//! carried over (copied) into the next one. A buffer whose slices have all been
//! dropped goes back to the reader (on whichever thread drops the last slice)
//! and is reused for a later read.
//!
//! Invariants:
//! - The frames delivered, their order, timestamps, lengths, link types and
//!   bytes, and whether the file ends cleanly or with an error (and after how
//!   many frames), are those libpcap 1.10 gives for the same file at
//!   nanosecond precision (checked by `tests/file_reader.rs`). Deliberate
//!   differences, all on files libpcap cannot read either: later interfaces of
//!   `LINKTYPE_RAW` pcapng files are compared by their mapped link type
//!   (libpcap compares the raw and the mapped number and fails); an Interface
//!   Description Block over 1 MiB or more than 65 536 interfaces in a section
//!   are errors; the error texts are our own and give the byte offset.
//! - No length read from the file sizes an allocation on its own. As in
//!   libpcap, a classic pcap record may hold at most 256 KiB (a longer one is
//!   an error; one longer than the header's snapshot length is cut to it), a
//!   pcapng packet at most the interface's snapshot length and no block more
//!   than 16 MiB; these are checked before any byte of the record is read. A
//!   block is held in memory whole only up to 1 MiB; of a larger one only the
//!   packet bytes are kept, the rest is read through and dropped.
//! - Memory: a frame (and every slice of it made downstream: a TCP payload, a
//!   Kafka message) pins its whole buffer, `max(CHUNK, largest record)` bytes.
//!   The buffers alive are those still referenced, so memory is at most
//!   `CHUNK` × the number of frames (or slices) held downstream, and never more
//!   than the file. The reader itself keeps the current buffer and at most
//!   [`POOL`] spare ones that nothing references any more, for reuse.
//!   Downstream holds few frames while reading a file (reassembly and framing
//!   keep slices until a message is complete; `print` keeps messages until
//!   their response is seen), and what they hold is mostly a contiguous
//!   stretch of the file. The TUI, which keeps messages for the whole session,
//!   keeps where they lie in the file instead of their bytes
//!   (`PipelineConfig::locate_in_file`).

use super::link::ethernet_ipv4_tcp;
use super::source::{Seen, TcpFrame};
use super::{Frame, LinkType};
use crate::tls::keylog::Keys;
use crate::vocab::Timestamp;
use bytes::Bytes;
use std::fs::File;
use std::io::Read;
use std::sync::{Arc, Mutex, Weak};

/// Bytes read per buffer (a buffer grows past this only for a record that needs it).
pub const CHUNK: usize = 1 << 20;
/// Buffers kept for reuse once nothing references them.
pub const POOL: usize = 4;
/// Bytes of the first read of a file (its header and first frames).
pub const FIRST_CHUNK: usize = 64 << 10;
/// The largest block held in memory whole (Interface Description Blocks must fit).
const IN_MEMORY: usize = 1 << 20;
/// libpcap's largest pcapng block (`INITIAL_MAX_BLOCKSIZE`).
const MAX_BLOCK: u32 = 16 << 20;
/// libpcap's largest first Section Header Block (`BT_SHB_INSANE_MAX`).
const MAX_FIRST_SHB: u32 = 1 << 20;
/// Interfaces accepted per pcapng section.
const MAX_INTERFACES: usize = 65_536;
/// libpcap's `MAXIMUM_SNAPLEN`: the largest classic pcap record of the link
/// types read here, and their snapshot length when the file gives none.
const MAX_SNAPLEN: u32 = 262_144;

/// Classic pcap record header: ts_sec(4) ts_frac(4) caplen(4) origlen(4).
const PCAP_RECORD: usize = 16;
/// pcapng block header (type, total length) and trailer (total length).
const BLOCK_HEADER: usize = 8;
const BLOCK_TRAILER: usize = 4;

/// pcapng block types (pcapng spec §4).
const BT_SHB: u32 = 0x0A0D_0D0A;
const BT_IDB: u32 = 1;
const BT_PB: u32 = 2;
const BT_SPB: u32 = 3;
const BT_EPB: u32 = 6;
/// Decryption Secrets Block.
const BT_DSB: u32 = 0x0000_000A;
/// A Decryption Secrets Block's type for a TLS key log ("TLSK").
const SECRETS_TLS: u32 = 0x544c_534b;
/// Key log bytes a file's Decryption Secrets Blocks may give in all.
const MAX_SECRETS: usize = 16 << 20;
/// Section Header Block byte-order magic.
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// libpcap's `linktype_to_dlt` for the numbers below its matching range
/// that differ on Linux (`LINKTYPE_ATM_RFC1483` .. `LINKTYPE_PPP_BSDOS`).
fn linktype_to_dlt(linktype: u32) -> LinkType {
    LinkType(match linktype {
        100 => 11,
        101 => 12,
        102 => 15,
        103 => 16,
        other => other,
    })
}

/// libpcap 1.10's `pcap_adjust_snapshot` for the link types read here: only
/// 0 and lengths past `INT_MAX` are replaced (pcapng blocks stay bounded by
/// [`MAX_BLOCK`], classic records by [`MAX_SNAPLEN`]).
fn adjust_snapshot(snaplen: u32) -> u32 {
    if snaplen == 0 || snaplen > i32::MAX as u32 {
        MAX_SNAPLEN
    } else {
        snaplen
    }
}

/// The byte order of the file (or of the pcapng section).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Little,
    Big,
}

impl Order {
    /// The byte order of the machine.
    const NATIVE: Order = if cfg!(target_endian = "big") {
        Order::Big
    } else {
        Order::Little
    };

    /// The `N` bytes at `at` of `b` as a number in this order (`le`/`be` read it).
    #[inline]
    fn read<const N: usize, T>(
        self,
        b: &[u8],
        at: usize,
        le: fn([u8; N]) -> T,
        be: fn([u8; N]) -> T,
    ) -> Option<T> {
        let a: [u8; N] = b.get(at..at.checked_add(N)?)?.try_into().ok()?;
        Some(if self == Order::Little { le(a) } else { be(a) })
    }

    fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        self.read(b, at, u16::from_le_bytes, u16::from_be_bytes)
    }

    fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        self.read(b, at, u32::from_le_bytes, u32::from_be_bytes)
    }

    fn u64(self, b: &[u8], at: usize) -> Option<u64> {
        self.read(b, at, u64::from_le_bytes, u64::from_be_bytes)
    }
}

/// A timestamp as libpcap hands it out: `tv_sec`, and `tv_usec` holding
/// nanoseconds when `nano`, else microseconds (below 2^32: the product
/// cannot wrap).
pub(super) fn timestamp(tv_sec: i64, tv_frac: i64, nano: bool) -> Timestamp {
    let frac = if nano {
        tv_frac
    } else {
        tv_frac.wrapping_mul(1000)
    };
    Timestamp::new(tv_sec, u32::try_from(frac).unwrap_or(0))
}

/// The file, read in buffers.
struct Input {
    file: File,
    /// The current buffer: bytes `base..base + buf.len()` of the file.
    buf: Bytes,
    /// Next unread byte in `buf`.
    pos: usize,
    /// File offset of `buf[0]`.
    base: u64,
    /// The file has no more bytes after `buf`.
    eof: bool,
    /// Buffers whose slices have all been dropped, for the next reads.
    spares: Arc<Spares>,
}

/// A reader's spare buffers (at most [`POOL`], each of [`CHUNK`] bytes of
/// capacity, initialized: a read fills one without zeroing it first).
type Spares = Mutex<Vec<Vec<u8>>>;

/// A read buffer that goes back to its reader's spares when its last slice is
/// dropped, on whichever thread that happens: the next read fills pages that
/// are already mapped. A freed buffer of a megabyte went back to the system
/// allocator, and the next one was mapped and faulted in afresh (`stats` on
/// the benchmark corpus: 4,500 page faults of 13,800, about 2 % of its CPU).
struct Pooled {
    bytes: Vec<u8>,
    /// The reader's spares; gone when the reader is.
    home: Weak<Spares>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // Only buffers of the usual size are kept (a larger one was made for
        // one big record), and at most `POOL` of them.
        if self.bytes.capacity() != CHUNK {
            return;
        }
        let Some(home) = self.home.upgrade() else {
            return;
        };
        if let Ok(mut spares) = home.lock() {
            if spares.len() < POOL {
                spares.push(std::mem::take(&mut self.bytes));
            }
        };
    }
}

impl Input {
    fn new(file: File) -> Input {
        Input {
            file,
            buf: Bytes::new(),
            pos: 0,
            base: 0,
            eof: false,
            spares: Arc::new(Mutex::new(Vec::with_capacity(POOL))),
        }
    }

    /// File offset of the next unread byte.
    fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// Bytes buffered and not yet consumed.
    fn available(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// The next `n` unread bytes (fewer if not buffered).
    fn peek(&self, n: usize) -> &[u8] {
        let end = self.pos.saturating_add(n).min(self.buf.len());
        self.buf.get(self.pos..end).unwrap_or_default()
    }

    /// Bytes `start..start + len` of the current buffer, consumed or not,
    /// as a slice sharing the buffer.
    fn window_bytes(&self, start: usize, len: usize) -> Option<Bytes> {
        let end = start.checked_add(len)?;
        (end <= self.buf.len()).then(|| self.buf.slice(start..end))
    }

    /// Consumes `n` buffered bytes.
    fn advance(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.buf.len());
    }

    /// Makes `n` bytes available (reading the file); `false` when it ends first.
    #[inline]
    fn fill(&mut self, n: usize) -> Result<bool, String> {
        if self.available() >= n {
            return Ok(true);
        }
        self.refill(n)
    }

    #[cold]
    fn refill(&mut self, n: usize) -> Result<bool, String> {
        if self.eof {
            return Ok(false);
        }
        // The first read is small: opening a file (on the caller's thread,
        // before any reader thread starts) reads only what its header and
        // first frames need, not a whole chunk into fresh pages.
        let chunk = if self.base == 0 && self.buf.is_empty() {
            FIRST_CHUNK
        } else {
            CHUNK
        };
        let cap = chunk.max(n);
        let mut v = self.take_vec(cap);
        let kept = self.available();
        let mut len = kept;
        if let (Some(to), from) = (v.get_mut(..kept), self.peek(kept)) {
            to.copy_from_slice(from);
        }
        // Read calls until the buffer is full or the file ends: one call for
        // a regular file. (`read_to_end` on a `Take` started at 8 KB and
        // doubled: eight calls per megabyte.)
        while let Some(room) = v.get_mut(len..cap).filter(|r| !r.is_empty()) {
            match (&self.file).read(room) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(got) => len += got,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.offset().saturating_add(len as u64);
                    return Err(format!("read error at byte {at}: {e}"));
                }
            }
        }
        self.base = self.offset();
        self.pos = 0;
        // The old buffer goes back to the spares when its last slice does
        // (possibly now).
        v.truncate(len);
        self.buf = Bytes::from_owner(Pooled {
            bytes: v,
            home: Arc::downgrade(&self.spares),
        });
        Ok(self.available() >= n)
    }

    /// An initialized vector of `cap` bytes: a spare one (its bytes past the
    /// last read's, if any, zeroed), or a new one (zeroed by `calloc`: a
    /// fresh mapping, free of a `memset`).
    fn take_vec(&mut self, cap: usize) -> Vec<u8> {
        if cap == CHUNK {
            if let Some(mut v) = self.spares.lock().ok().and_then(|mut s| s.pop()) {
                v.resize(CHUNK, 0);
                return v;
            }
        }
        vec![0; cap]
    }

    /// Skips `n` bytes; returns how many there were (fewer when the file ends).
    fn skip(&mut self, n: u64) -> Result<u64, String> {
        let mut left = n;
        loop {
            let here = self.available() as u64;
            if left <= here {
                self.advance(left as usize);
                return Ok(n);
            }
            self.advance(here as usize);
            left -= here;
            if !self.fill(1)? {
                return Ok(n - left);
            }
        }
    }
}

/// How a pcapng interface's timestamp fractions become nanoseconds (libpcap's scale types).
#[derive(Clone, Copy, Debug)]
enum Scale {
    Pass,
    UpDec(u64),
    DownDec(u64),
    Bin,
}

/// One pcapng interface of the current section.
#[derive(Clone, Copy, Debug)]
struct Iface {
    /// Timestamp units per second (`if_tsresol`).
    tsresol: u64,
    scale: Scale,
    /// Seconds added to every timestamp (`if_tsoffset`).
    tsoffset: i64,
}

impl Iface {
    /// libpcap's conversion of a 64-bit timestamp, wrapping where libpcap's
    /// unsigned arithmetic wraps.
    fn timestamp(&self, t: u64) -> Timestamp {
        let res = self.tsresol.max(1);
        let sec = (t / res).wrapping_add(self.tsoffset as u64);
        let frac = t % res;
        let frac = match self.scale {
            Scale::Pass => frac,
            Scale::UpDec(f) => frac.wrapping_mul(f),
            Scale::DownDec(f) => frac / f.max(1),
            Scale::Bin => frac.wrapping_mul(1_000_000_000) / res,
        };
        timestamp(sec as i64, frac as i64, true)
    }
}

/// Options of an Interface Description Block that matter for reading, as libpcap checks them.
fn interface_options(opts: &[u8], order: Order) -> Result<Iface, String> {
    let (mut tsresol, mut binary, mut tsoffset) = (1_000_000u64, false, 0i64);
    let (mut saw_tsresol, mut saw_tsoffset) = (false, false);
    let mut rest = opts;
    while !rest.is_empty() {
        // Option: code(2) length(2) value padded to 4.
        let (Some(code), Some(len)) = (order.u16(rest, 0), order.u16(rest, 2)) else {
            return Err("an option header is cut short".into());
        };
        let padded = usize::from(len).next_multiple_of(4);
        let (Some(value), Some(next)) = (rest.get(4..4 + usize::from(len)), rest.get(4 + padded..))
        else {
            return Err(format!("option {code} of {len} bytes is cut short"));
        };
        match code {
            // opt_endofopt
            0 => {
                if len != 0 {
                    return Err(format!("opt_endofopt has length {len}, not 0"));
                }
                break;
            }
            // if_tsresol: 10^-n, or 2^-n with the high bit set.
            9 => {
                if len != 1 {
                    return Err(format!("if_tsresol has length {len}, not 1"));
                }
                if std::mem::replace(&mut saw_tsresol, true) {
                    return Err("more than one if_tsresol option".into());
                }
                let v = value.first().copied().unwrap_or(0);
                binary = v & 0x80 != 0;
                let (base, exp) = if binary { (2u64, v & 0x7f) } else { (10, v) };
                tsresol = base
                    .checked_pow(u32::from(exp))
                    .ok_or_else(|| format!("if_tsresol {base}^-{exp} is too fine"))?;
            }
            // if_tsoffset: seconds, signed.
            14 => {
                if len != 8 {
                    return Err(format!("if_tsoffset has length {len}, not 8"));
                }
                if std::mem::replace(&mut saw_tsoffset, true) {
                    return Err("more than one if_tsoffset option".into());
                }
                tsoffset = order.u64(value, 0).unwrap_or(0) as i64;
            }
            _ => {}
        }
        rest = next;
    }
    const NANO: u64 = 1_000_000_000;
    let scale = if tsresol == NANO {
        Scale::Pass
    } else if binary {
        Scale::Bin
    } else if tsresol > NANO {
        Scale::DownDec(tsresol / NANO)
    } else {
        Scale::UpDec(NANO / tsresol)
    };
    Ok(Iface {
        tsresol,
        scale,
        tsoffset,
    })
}

/// The pcapng reading state.
struct Pcapng {
    order: Order,
    /// Link type and snapshot length of the first interface (every interface must share them).
    link: LinkType,
    snapshot: u32,
    /// Interfaces of the current section, by id.
    ifaces: Vec<Iface>,
    /// TLS key log lines from Decryption Secrets Blocks, until `keys` takes them.
    secrets: Vec<u8>,
    /// Bytes of secrets read in all (at most [`MAX_SECRETS`]).
    secrets_read: usize,
    /// Where the secrets go.
    keys: Option<Keys>,
}

impl Pcapng {
    /// A Decryption Secrets Block body: its TLS key log lines go to the
    /// keys (kept until there are keys); other secret types are skipped.
    fn secrets(&mut self, body: &[u8]) {
        let (Some(ty), Some(len)) = (self.order.u32(body, 0), self.order.u32(body, 4)) else {
            return;
        };
        let Some(data) = body.get(8..8usize.saturating_add(len as usize)) else {
            return;
        };
        if ty != SECRETS_TLS || self.secrets_read + data.len() > MAX_SECRETS {
            return;
        }
        self.secrets_read += data.len();
        match &self.keys {
            Some(k) => {
                // Each block holds whole lines; a last one without its end is ended.
                k.with(|k| {
                    k.feed(data);
                    k.finish();
                });
            }
            None => {
                self.secrets.extend_from_slice(data);
                self.secrets.push(b'\n');
            }
        }
    }

    /// An Interface Description Block body (after the block header).
    fn interface(&mut self, body: &[u8]) -> Result<(), String> {
        // linktype(2) reserved(2) snaplen(4) options.
        let (Some(link), Some(snaplen)) = (self.order.u16(body, 0), self.order.u32(body, 4)) else {
            return Err("Interface Description Block too short".into());
        };
        let (first, first_snaplen) = (self.link.0, self.snapshot);
        let refused = if linktype_to_dlt(u32::from(link)) != self.link {
            format!("an interface has link type {link}, unlike the first interface's {first}")
        } else if adjust_snapshot(snaplen) != first_snaplen {
            format!("an interface has snapshot length {snaplen}, unlike the first interface's {first_snaplen}")
        } else if self.ifaces.len() >= MAX_INTERFACES {
            format!("more than {MAX_INTERFACES} interfaces in a section")
        } else {
            let iface = interface_options(body.get(8..).unwrap_or_default(), self.order)
                .map_err(|e| format!("Interface Description Block: {e}"))?;
            self.ifaces.push(iface);
            return Ok(());
        };
        Err(refused)
    }

    /// A Section Header Block after the first: same byte order, major version 1.
    fn section(&mut self, body: &[u8]) -> Result<(), String> {
        // byte-order magic(4) major(2) minor(2) section length(8) options.
        let (Some(magic), Some(major), Some(_)) = (
            self.order.u32(body, 0),
            self.order.u16(body, 4),
            body.get(..16),
        ) else {
            return Err("Section Header Block too short".into());
        };
        if magic == BYTE_ORDER_MAGIC.swap_bytes() {
            return Err("the file has sections of different byte orders".into());
        }
        if magic != BYTE_ORDER_MAGIC {
            return Err(format!("a section has the byte-order magic {magic:#010x}"));
        }
        if major != 1 {
            return Err(format!("a section has major version {major}"));
        }
        self.ifaces.clear();
        Ok(())
    }
}

/// A packet block's fixed part, read.
struct PacketHeader {
    iface: u32,
    t: u64,
    caplen: u32,
    origlen: u32,
    /// Bytes of the fixed part (before the packet data).
    fixed: usize,
}

/// The classic pcap reading state.
#[derive(Clone, Copy)]
struct Pcap {
    order: Order,
    /// Nanosecond timestamps (magic a1b23c4d).
    nano: bool,
    snapshot: u32,
}

/// The container format and its state.
enum Format {
    Pcap(Pcap),
    Pcapng(Pcapng),
}

/// A record's time, length on the wire and place in the file.
#[derive(Clone, Copy)]
struct Meta {
    ts: Timestamp,
    origlen: u32,
    file_offset: u64,
}

/// What a caller of the reader makes of a frame, once its record is
/// consumed: the readers hand the frame's bytes to one of these and return
/// what it gives.
trait Take: Sized {
    type Out;
    /// The frame is bytes `start..start + len` of the current buffer.
    /// `None` when they are not in it.
    #[inline]
    fn in_buffer(self, input: &Input, start: usize, len: usize, meta: Meta) -> Option<Self::Out> {
        Some(self.taken(input.window_bytes(start, len)?, meta))
    }
    /// The frame's bytes, cut from the buffer already (a record read in parts).
    fn taken(self, data: Bytes, meta: Meta) -> Self::Out;
}

/// [`FastFile::next`]'s frames: whole, slices of the buffer.
struct Whole {
    index: u64,
    link: LinkType,
}

impl Take for Whole {
    type Out = Frame;

    #[inline]
    fn taken(self, data: Bytes, meta: Meta) -> Frame {
        Frame {
            index: self.index,
            ts: meta.ts,
            caplen: u32::try_from(data.len()).unwrap_or(u32::MAX),
            origlen: meta.origlen,
            link: self.link,
            data,
            file_offset: Some(meta.file_offset),
            capture: 0,
        }
    }
}

/// [`FastFile::next_tcp`]'s frames: decoded in the buffer where they can be,
/// handed to `visit`.
struct Visit<F> {
    index: u64,
    link: LinkType,
    visit: F,
}

impl<R, F: FnOnce(Seen) -> R> Take for Visit<F> {
    type Out = R;

    #[inline]
    fn in_buffer(self, input: &Input, start: usize, len: usize, meta: Meta) -> Option<R> {
        let bytes = input.buf.get(start..start.checked_add(len)?)?;
        if self.link == LinkType::ETHERNET {
            if let Some((mut seg, payload)) = ethernet_ipv4_tcp(bytes) {
                if !payload.is_empty() {
                    seg.payload = input.window_bytes(start + payload.start, payload.len())?;
                }
                return Some((self.visit)(Seen::Tcp(TcpFrame {
                    index: self.index,
                    ts: meta.ts,
                    caplen: u32::try_from(len).unwrap_or(u32::MAX),
                    file_offset: Some(meta.file_offset),
                    payload_at: payload.start,
                    seg,
                })));
            }
        }
        Some(self.taken(input.window_bytes(start, len)?, meta))
    }

    #[inline]
    fn taken(self, data: Bytes, meta: Meta) -> R {
        let (index, link) = (self.index, self.link);
        (self.visit)(Seen::Frame(Whole { index, link }.taken(data, meta)))
    }
}

/// A pcap/pcapng file read without libpcap.
pub(super) struct FastFile {
    input: Input,
    format: Format,
    link: LinkType,
}

impl FastFile {
    /// Opens `path` if it is a regular file in a format read here: classic pcap
    /// version 2.4 (either byte order, micro- or nanosecond magic) or pcapng
    /// (version 1.0 or 1.2), with a link type the decoder knows, whose
    /// headers up to the first interface are ones libpcap accepts too.
    /// Anything else — stdin, FIFOs, other versions or link types, files
    /// libpcap would refuse to open — gives `None`: libpcap decides.
    pub fn open(path: &str) -> Option<FastFile> {
        let file = File::open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut input = Input::new(file);
        input.fill(4).ok().filter(|&got| got)?;
        let magic: [u8; 4] = input.peek(4).try_into().ok()?;
        if magic == BT_SHB.to_le_bytes() {
            return FastFile::open_pcapng(input);
        }
        let (order, nano) = match magic {
            [0xd4, 0xc3, 0xb2, 0xa1] => (Order::Little, false),
            [0xa1, 0xb2, 0xc3, 0xd4] => (Order::Big, false),
            [0x4d, 0x3c, 0xb2, 0xa1] => (Order::Little, true),
            [0xa1, 0xb2, 0x3c, 0x4d] => (Order::Big, true),
            _ => return None,
        };
        // magic(4) version major(2) minor(2) thiszone(4) sigfigs(4) snaplen(4) linktype(4).
        input.fill(24).ok().filter(|&got| got)?;
        let h = input.peek(24);
        if (order.u16(h, 4)?, order.u16(h, 6)?) != (2, 4) {
            return None;
        }
        let snaplen = order.u32(h, 16)?;
        // The top 6 bits carry FCS information (LT_LINKTYPE_EXT); libpcap drops them.
        let link = linktype_to_dlt(order.u32(h, 20)? & 0x03FF_FFFF);
        if !link.decoded() {
            return None;
        }
        input.advance(24);
        Some(FastFile {
            input,
            format: Format::Pcap(Pcap {
                order,
                nano,
                snapshot: adjust_snapshot(snaplen),
            }),
            link,
        })
    }

    fn open_pcapng(mut input: Input) -> Option<FastFile> {
        // SHB: type(4) length(4) byte-order magic(4) major(2) minor(2) section length(8).
        input.fill(16).ok().filter(|&got| got)?;
        let h = input.peek(16);
        let order = [Order::Little, Order::Big]
            .into_iter()
            .find(|o| o.u32(h, 8) == Some(BYTE_ORDER_MAGIC))?;
        let len = order.u32(h, 4)?;
        if !(28..=MAX_FIRST_SHB).contains(&len) {
            return None;
        }
        let version = (order.u16(h, 12)?, order.u16(h, 14)?);
        if version != (1, 0) && version != (1, 2) {
            return None;
        }
        // libpcap reads the rest of the first SHB without checking its trailer.
        if input.skip(u64::from(len)).ok()? != u64::from(len) {
            return None;
        }
        let mut ng = Pcapng {
            order,
            link: LinkType(u32::MAX),
            snapshot: 0,
            ifaces: Vec::new(),
            secrets: Vec::new(),
            secrets_read: 0,
            keys: None,
        };
        // Blocks up to the first interface.
        loop {
            let (ty, len) = block_header(&mut input, order).ok()??;
            match ty {
                BT_IDB if len as usize <= IN_MEMORY => {
                    let at = input.offset();
                    let body = whole_block(&mut input, order, (at, ty, len)).ok()?;
                    ng.link = linktype_to_dlt(u32::from(order.u16(body, 0)?));
                    ng.snapshot = adjust_snapshot(order.u32(body, 4)?);
                    if !ng.link.decoded() {
                        return None;
                    }
                    ng.interface(body).ok()?;
                    input.advance(len as usize);
                    let link = ng.link;
                    return Some(FastFile {
                        input,
                        format: Format::Pcapng(ng),
                        link,
                    });
                }
                BT_IDB | BT_EPB | BT_SPB | BT_PB => return None,
                BT_DSB if len as usize <= IN_MEMORY => {
                    let at = input.offset();
                    let body = whole_block(&mut input, order, (at, ty, len)).ok()?;
                    ng.secrets(body);
                    input.advance(len as usize);
                }
                _ => skip_block(&mut input, order, len).ok()?,
            }
        }
    }

    /// Where the TLS key log lines of the file's Decryption Secrets Blocks
    /// go: those read so far at once, later ones as they are read (before
    /// the packets after them).
    pub fn set_tls_keys(&mut self, keys: Keys) {
        if let Format::Pcapng(ng) = &mut self.format {
            let pending = std::mem::take(&mut ng.secrets);
            if !pending.is_empty() {
                keys.with(|k| {
                    k.feed(&pending);
                    k.finish();
                });
            }
            ng.keys = Some(keys);
        }
    }

    /// The link type of the file (of its first interface for pcapng).
    pub fn link(&self) -> LinkType {
        self.link
    }

    /// The next frame, numbered `index`; `None` at the end of the file, or
    /// why reading stopped.
    #[inline]
    pub fn next(&mut self, index: u64) -> Result<Option<Frame>, String> {
        let link = self.link;
        self.next_with(Whole { index, link })
    }

    /// The next frame, numbered `index`, handed to `visit` and `visit`'s
    /// answer returned; `None` at the end of the file. An untagged
    /// Ethernet II frame of one IPv4 packet with a whole TCP header comes
    /// decoded to its segment where it lies in the buffer ([`Seen::Tcp`]):
    /// only its payload is sliced, so a pure ACK touches no reference count
    /// of the buffer (which the analyzer's thread changes too) and no
    /// [`Frame`] is made. Other frames come whole ([`Seen::Frame`]). The
    /// segment is the one [`super::link::decode_link_owned`] makes of the
    /// whole frame.
    #[inline]
    pub fn next_tcp<R>(
        &mut self,
        index: u64,
        visit: impl FnOnce(Seen) -> R,
    ) -> Result<Option<R>, String> {
        let link = self.link;
        self.next_with(Visit { index, link, visit })
    }

    #[inline]
    fn next_with<T: Take>(&mut self, take: T) -> Result<Option<T::Out>, String> {
        match &mut self.format {
            Format::Pcap(p) => next_pcap(&mut self.input, *p, take),
            Format::Pcapng(ng) => next_pcapng(&mut self.input, ng, take),
        }
    }
}

/// A classic pcap record.
#[inline]
fn next_pcap<T: Take>(input: &mut Input, p: Pcap, take: T) -> Result<Option<T::Out>, String> {
    let order = p.order;
    let at = input.offset();
    let Some(h) = header(input, PCAP_RECORD, "record")? else {
        return Ok(None);
    };
    let [Some(sec), Some(frac), Some(caplen), Some(origlen)] =
        [0, 4, 8, 12].map(|o| order.u32(h, o))
    else {
        return Err(format!("the record header at byte {at} could not be read"));
    };
    if caplen > MAX_SNAPLEN {
        return Err(format!(
            "the record at byte {at} claims {caplen} captured bytes, more than the {MAX_SNAPLEN} any record may have"
        ));
    }
    // libpcap keeps the first `snapshot` bytes of a longer record and skips the rest.
    let keep = caplen.min(p.snapshot) as usize;
    if !input.fill(PCAP_RECORD + keep)? {
        return Err(cut_record(
            at,
            caplen,
            input.available().saturating_sub(PCAP_RECORD),
        ));
    }
    // libpcap 1.10 reads ts_sec and ts_frac as signed 32-bit numbers from a
    // file in the machine's byte order, and as unsigned ones from a swapped file.
    let (sec, frac) = if order == Order::NATIVE {
        (i64::from(sec as i32), i64::from(frac as i32))
    } else {
        (i64::from(sec), i64::from(frac))
    };
    let meta = Meta {
        ts: timestamp(sec, frac, p.nano),
        origlen,
        file_offset: at + PCAP_RECORD as u64,
    };
    let start = input.pos + PCAP_RECORD;
    input.advance(PCAP_RECORD + keep);
    let extra = u64::from(caplen) - keep as u64;
    if extra > 0 {
        // The skip may read on into a new buffer: the kept bytes are cut first.
        let Some(data) = input.window_bytes(start, keep) else {
            return Err(cut_record(at, caplen, 0));
        };
        let got = input.skip(extra)?;
        if got < extra {
            return Err(cut_record(at, caplen, keep + got as usize));
        }
        return Ok(Some(take.taken(data, meta)));
    }
    let out = take.in_buffer(input, start, keep, meta);
    out.map(Some).ok_or_else(|| cut_record(at, caplen, 0))
}

fn cut_record(at: u64, caplen: u32, have: usize) -> String {
    format!(
        "the record at byte {at} is cut short: {caplen} captured bytes announced, the file ends after {have}"
    )
}

/// The `n`-byte header of the next `what` (a record, a block), buffered
/// and not consumed; `None` at a clean end of file.
#[inline]
fn header<'a>(input: &'a mut Input, n: usize, what: &str) -> Result<Option<&'a [u8]>, String> {
    if input.fill(n)? {
        return Ok(Some(input.peek(n)));
    }
    match input.available() {
        0 => Ok(None),
        have => Err(format!(
            "the {what} at byte {} is cut short: the file ends {have} byte(s) into its {n}-byte header",
            input.offset()
        )),
    }
}

/// Reads a pcapng block header; `None` at a clean end of file.
fn block_header(input: &mut Input, order: Order) -> Result<Option<(u32, u32)>, String> {
    let at = input.offset();
    let Some(h) = header(input, BLOCK_HEADER, "block")? else {
        return Ok(None);
    };
    let (Some(ty), Some(len)) = (order.u32(h, 0), order.u32(h, 4)) else {
        return Err(format!("the block header at byte {at} could not be read"));
    };
    let bad = if (len as usize) < BLOCK_HEADER + BLOCK_TRAILER {
        format!("less than {}", BLOCK_HEADER + BLOCK_TRAILER)
    } else if len % 4 != 0 {
        "not a multiple of 4".to_string()
    } else if len > MAX_BLOCK {
        format!("more than the {MAX_BLOCK} allowed")
    } else {
        return Ok(Some((ty, len)));
    };
    Err(format!(
        "the block at byte {at} has a length of {len}, {bad}"
    ))
}

fn cut_block(at: u64, ty: u32, len: u32, have: u64) -> String {
    format!(
        "the block at byte {at} (type {ty:#x}, {len} bytes) is cut short: the file ends after {have} of its bytes"
    )
}

fn bad_trailer(at: u64, len: u32, trailer: u32) -> String {
    format!("the block at byte {at} has length {len} in its header but {trailer} in its trailer")
}

/// The body of the block `(at, ty, len)` whose header was read (not
/// consumed), read whole into the buffer (not consumed); checks its trailer.
fn whole_block(
    input: &mut Input,
    order: Order,
    (at, ty, len): (u64, u32, u32),
) -> Result<&[u8], String> {
    let total = len as usize;
    if !input.fill(total)? {
        return Err(cut_block(at, ty, len, input.available() as u64));
    }
    let block = input.peek(total);
    let trailer = order.u32(block, total - BLOCK_TRAILER).unwrap_or(0);
    if trailer != len {
        return Err(bad_trailer(at, len, trailer));
    }
    Ok(block
        .get(BLOCK_HEADER..total - BLOCK_TRAILER)
        .unwrap_or_default())
}

/// Skips a whole block whose header was read (not consumed); checks its trailer.
fn skip_block(input: &mut Input, order: Order, len: u32) -> Result<(), String> {
    let at = input.offset();
    let ty = order.u32(input.peek(4), 0).unwrap_or(0);
    let body = u64::from(len) - BLOCK_TRAILER as u64;
    let got = input.skip(body)?;
    if got < body || !input.fill(BLOCK_TRAILER)? {
        return Err(cut_block(
            at,
            ty,
            len,
            got + input.available().min(BLOCK_TRAILER) as u64,
        ));
    }
    let trailer = order.u32(input.peek(BLOCK_TRAILER), 0).unwrap_or(0);
    if trailer != len {
        return Err(bad_trailer(at, len, trailer));
    }
    input.advance(BLOCK_TRAILER);
    Ok(())
}

/// The fixed part of a packet block (`body` starts after the block header).
fn packet_header(ty: u32, body: &[u8], order: Order, snapshot: u32) -> Option<PacketHeader> {
    if ty == BT_SPB {
        // SPB: origlen(4); captured is the snapshot length at most; no timestamp.
        let origlen = order.u32(body, 0)?;
        return Some(PacketHeader {
            iface: 0,
            t: 0,
            caplen: origlen.min(snapshot),
            origlen,
            fixed: 4,
        });
    }
    // EPB: interface(4) ts high(4) ts low(4) caplen(4) origlen(4); PB
    // (obsolete): interface(2) drops(2), the rest as in an EPB.
    Some(PacketHeader {
        iface: match ty {
            BT_EPB => order.u32(body, 0)?,
            _ => u32::from(order.u16(body, 0)?),
        },
        t: u64::from(order.u32(body, 4)?) << 32 | u64::from(order.u32(body, 8)?),
        caplen: order.u32(body, 12)?,
        origlen: order.u32(body, 16)?,
        fixed: 20,
    })
}

/// Checks a packet header against the section's interfaces; the interface.
fn check_packet(ng: &Pcapng, at: u64, p: &PacketHeader, body_len: usize) -> Result<Iface, String> {
    let (caplen, snapshot, n) = (p.caplen, ng.snapshot, ng.ifaces.len());
    let refused = match usize::try_from(p.iface).ok().and_then(|i| ng.ifaces.get(i)) {
        None => format!(
            "is on interface {}, but the section describes {n} interface(s)",
            p.iface
        ),
        Some(_) if caplen > snapshot => {
            format!("claims {caplen} captured bytes, more than the snapshot length {snapshot}")
        }
        Some(_) if p.fixed + caplen as usize > body_len => {
            format!("is too short for its {caplen} captured bytes")
        }
        Some(iface) => return Ok(*iface),
    };
    Err(format!("the packet block at byte {at} {refused}"))
}

/// The next packet of a pcapng file.
fn next_pcapng<T: Take>(
    input: &mut Input,
    ng: &mut Pcapng,
    take: T,
) -> Result<Option<T::Out>, String> {
    let order = ng.order;
    loop {
        let at = input.offset();
        let Some((ty, len)) = block_header(input, order)? else {
            return Ok(None);
        };
        let packet = matches!(ty, BT_EPB | BT_SPB | BT_PB);
        let total = len as usize;
        let body_len = total - BLOCK_HEADER - BLOCK_TRAILER;
        let cut = |input: &Input| cut_block(at, ty, len, input.available() as u64);
        // The usual case: the whole block in the buffer. Of a block too large
        // to hold, what is needed is read and the rest skipped.
        let whole = total <= IN_MEMORY;
        let body = if whole {
            Some(whole_block(input, order, (at, ty, len))?)
        } else if packet {
            input.fill(BLOCK_HEADER + 20)?;
            input.peek(BLOCK_HEADER + 20).get(BLOCK_HEADER..)
        } else if ty == BT_IDB {
            return Err(format!(
                "the Interface Description Block at byte {at} has {len} bytes, more than the {IN_MEMORY} read here"
            ));
        } else if ty == BT_SHB {
            if !input.fill(BLOCK_HEADER + 16)? {
                return Err(cut(input));
            }
            input.peek(BLOCK_HEADER + 16).get(BLOCK_HEADER..)
        } else {
            None
        }
        .unwrap_or_default();
        if !packet {
            match ty {
                BT_IDB => ng.interface(body),
                BT_SHB => ng.section(body),
                BT_DSB => {
                    ng.secrets(body);
                    Ok(())
                }
                _ => Ok(()),
            }
            .map_err(|e| format!("the block at byte {at}: {e}"))?;
            if whole {
                input.advance(total);
            } else {
                skip_block(input, order, len)?;
            }
            continue;
        }
        let Some(p) = packet_header(ty, body, order, ng.snapshot) else {
            return Err(if whole {
                format!("the packet block at byte {at} is too short")
            } else {
                cut(input)
            });
        };
        let iface = check_packet(ng, at, &p, body_len)?;
        let start = BLOCK_HEADER + p.fixed;
        let meta = Meta {
            ts: iface.timestamp(p.t),
            origlen: p.origlen,
            file_offset: at + start as u64,
        };
        let caplen = p.caplen as usize;
        if whole {
            let start = input.pos + start;
            input.advance(total);
            let out = take.in_buffer(input, start, caplen, meta);
            return out.map(Some).ok_or_else(|| cut(input));
        }
        if !input.fill(start + caplen)? {
            return Err(cut(input));
        }
        let Some(data) = input.window_bytes(input.pos + start, caplen) else {
            return Err(cut(input));
        };
        skip_block(input, order, len)?;
        return Ok(Some(take.taken(data, meta)));
    }
}
