//! Capture adapters: files, stdin and live interfaces. The only module of
//! the engine that does I/O.
//!
//! Files: a regular file in classic pcap (version 2.4) or pcapng format
//! with a link type the decoder knows is read by [`super::fastfile`], which
//! hands out frames as slices of large read buffers (no copy, no allocation
//! per frame) and gives each frame its offset in the file. Everything else
//! goes through libpcap (the `pcap` crate): standard input (`-`), FIFOs,
//! other pcap versions and variants (2.0–2.3, DG/UX, Kuznetzov), other link
//! types, and every file the fast reader declines to open — including files
//! libpcap itself refuses, so open errors are libpcap's. Both give the same
//! frames (`tests/file_reader.rs`).
//!
//! Invariants: frame numbers start at 1 and count every record delivered;
//! timestamps are read at nanosecond precision (microsecond files are scaled
//! up); after a read error the source reports `End`, so a caller that keeps
//! polling never loops on the same error. Frames read before a truncation
//! have already been delivered when the error is returned.

use super::clocks::{ClockMatch, Estimate};
use super::fastfile::{self, FastFile};
use super::link::decode_link_owned;
use super::{CaptureError, Frame, FrameSource, LinkType, Segment};
use crate::tls::keylog::Keys;
use crate::vocab::Timestamp;
use bytes::Bytes;
use pcap::{Active, Capture, Offline, Precision};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one poll of a source produced.
#[derive(Debug)]
pub enum Polled {
    /// A frame.
    Frame(Frame),
    /// A live read timeout passed with no packet: a chance to tick.
    Timeout,
    /// The input has ended (end of file, or after a read error).
    End,
}

/// A frame the file reader decoded to its TCP segment where it lay in the
/// read buffer ([`FileSource::poll_with`]): the segment is the one
/// [`super::decode_segment`] gives for the whole frame.
#[derive(Debug)]
pub struct TcpFrame {
    /// 1-based frame number (as [`Frame::index`]).
    pub index: u64,
    /// Capture time.
    pub ts: Timestamp,
    /// Bytes captured of the frame.
    pub caplen: u32,
    /// Where the frame starts in the file (`None` when the file is one of
    /// several read together: an offset would not say which).
    pub file_offset: Option<u64>,
    /// Where the segment's payload starts in the frame.
    pub payload_at: usize,
    /// The segment; its payload is a slice of the read buffer.
    pub seg: Segment,
}

/// A frame as [`FileSource::poll_with`] hands it over.
#[derive(Debug)]
pub enum Seen {
    /// Decoded to its TCP segment as it was read.
    Tcp(TcpFrame),
    /// Whole, as [`FrameSource::poll`] gives it.
    Frame(Frame),
}

impl From<Frame> for Seen {
    fn from(f: Frame) -> Seen {
        Seen::Frame(f)
    }
}

impl Seen {
    /// The frame's time, captured length and place in the file (when known).
    pub fn place(&self) -> (Timestamp, usize, Option<u64>) {
        match self {
            Seen::Tcp(f) => (f.ts, f.caplen as usize, f.file_offset),
            Seen::Frame(f) => (f.ts, f.data.len(), f.file_offset),
        }
    }
}

/// Counters of a capture source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureStats {
    /// Frames delivered by this source.
    pub frames: u64,
    /// Packets the kernel received (live only; libpcap's `ps_recv`).
    pub received: Option<u32>,
    /// Packets dropped for lack of buffer space (live only; `ps_drop`).
    pub dropped: Option<u32>,
    /// Packets dropped by the interface or driver (live only; `ps_ifdrop`).
    pub if_dropped: Option<u32>,
}

impl CaptureStats {
    /// The closing line of a live capture: packets captured and dropped, e.g.
    /// `175847 packets captured, 0 dropped by the kernel, 0 by the interface`.
    /// `None` for sources without kernel counters (files, standard input).
    pub fn drop_summary(&self) -> Option<String> {
        let dropped = self.dropped?;
        Some(format!(
            "{} packets captured, {dropped} dropped by the kernel, {} by the interface",
            self.frames,
            self.if_dropped.unwrap_or(0)
        ))
    }
}

fn frame_from(
    index: u64,
    link: LinkType,
    nano: bool,
    header: &pcap::PacketHeader,
    data: &[u8],
) -> Frame {
    // `suseconds_t` is 64-bit on Linux, 32-bit elsewhere.
    #[allow(clippy::useless_conversion)]
    let frac = i64::from(header.ts.tv_usec);
    Frame {
        index,
        ts: fastfile::timestamp(header.ts.tv_sec, frac, nano),
        caplen: u32::try_from(data.len()).unwrap_or(u32::MAX),
        origlen: header.len,
        file_offset: None,
        capture: 0,
        link,
        data: Bytes::copy_from_slice(data),
    }
}

fn link_of(dlt: pcap::Linktype) -> LinkType {
    LinkType(u32::try_from(dlt.0).unwrap_or(u32::MAX))
}

/// How a [`FileSource`] reads its file.
enum Reader {
    /// The zero-copy reader.
    Fast(FastFile),
    /// libpcap.
    Pcap(Capture<Offline>),
}

/// One file of a [`FileSource`]: its reader, and the frames read from it.
struct OneFile {
    reader: Reader,
    path: String,
    link: LinkType,
    /// Frames read from this file (its own numbering).
    frames: u64,
    done: bool,
}

/// An offline capture: a pcap or pcapng file, or standard input when the
/// path is `-`; or several files read together as one capture, merged by
/// time ([`FileSource::open_all`]).
///
/// Merged, the frames of the files come in order of their timestamps (a
/// tie goes to the file given first; a file's own frames keep their order,
/// as `mergecap` writes them), numbered from 1 across all of them, each
/// with the index of its file ([`Frame::capture`], [`Segment::capture`]:
/// two files' packets are never one connection's) and without file offsets
/// (an offset would not say which file). A file's read error names it and
/// its own frame number; the other files go on.
///
/// [`Segment::capture`]: super::Segment::capture
pub struct FileSource {
    files: Vec<OneFile>,
    /// Merging: each file's next frame, read ahead.
    heads: Vec<Option<Seen>>,
    /// Frames delivered.
    frames: u64,
    /// Merging: each file's clock less the first file's, in nanoseconds
    /// ([`FileSource::align_clocks`]); its frames' times are set back by it.
    shift: Vec<i64>,
    /// What [`FileSource::align_clocks`] found.
    clocks: Vec<ClockOffset>,
}

/// How long a message of a connection seen at two capture points waits
/// for its copy, besides the clocks' uncertainty: the network path between
/// the points, on the merged clock (100 ms).
pub const TWIN_WINDOW_NS: u64 = 100_000_000;

/// A file's clock against another's, from the packets both captured
/// ([`FileSource::align_clocks`], [`clocks`](super::clocks)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockOffset {
    /// The file (its place in the list).
    pub capture: u16,
    /// The file it was measured against, an earlier one.
    pub against: u16,
    /// `capture`'s clock less `against`'s, in nanoseconds.
    pub offset_ns: i64,
    /// How far off it can be (half the round trip between the two capture points).
    pub bound_ns: u64,
    /// Packets seen in both files.
    pub packets: u64,
    /// `capture`'s clock less the first file's: what its times are set back by.
    pub shift_ns: i64,
}

/// Segments of a file's start looked for in another file.
const CLOCK_PACKETS: usize = 4096;

/// Frames of the other file read past the last one found before the search
/// gives up (the packets in common lie together, where both captures ran).
const CLOCK_SCAN_AFTER: u64 = 1 << 16;

/// Runs two jobs and gives both results: on two threads where the caller
/// has them (the engine starts none; `kafkashark-ui` joins on a thread of
/// its own), else one after the other ([`InLine`]).
pub trait Join {
    /// `a`'s result and `b`'s, once both have run.
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B);
}

/// [`Join`] on the calling thread: `a`, then `b`.
#[derive(Clone, Copy, Debug, Default)]
pub struct InLine;

impl Join for InLine {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        (a(), b())
    }
}

impl FileSource {
    /// Open a pcap/pcapng file; `-` reads the capture from standard input.
    /// Regular files are read by the zero-copy reader when it can (see the
    /// module doc), otherwise by libpcap.
    pub fn open(path: &str) -> Result<FileSource, CaptureError> {
        Ok(FileSource::of(vec![OneFile::open(path)?]))
    }

    /// Open several files (at least one; `-` is standard input) to be read
    /// together, merged by time (see the type's doc); one file is read as
    /// [`FileSource::open`] reads it.
    pub fn open_all(paths: &[String], join: &impl Join) -> Result<FileSource, CaptureError> {
        if paths.is_empty() || paths.len() > usize::from(u16::MAX) + 1 {
            return Err(CaptureError::Open {
                path: paths.first().cloned().unwrap_or_default(),
                reason: format!(
                    "{} files: between 1 and 65,536 are read together",
                    paths.len()
                ),
            });
        }
        let files = paths
            .iter()
            .map(|p| OneFile::open(p))
            .collect::<Result<_, _>>()?;
        let mut src = FileSource::of(files);
        src.align_clocks(join);
        Ok(src)
    }

    fn of(files: Vec<OneFile>) -> FileSource {
        FileSource {
            heads: files.iter().map(|_| None).collect(),
            shift: files.iter().map(|_| 0).collect(),
            clocks: Vec::new(),
            files,
            frames: 0,
        }
    }

    /// Sets every file's clock onto the first file's ([`FileSource::open_all`]
    /// does, before any frame is read): for each later file, the packets at its start are looked for
    /// in each earlier file, and the other way round, until a file shares
    /// packets with it both ways on a connection ([`clocks`](super::clocks));
    /// its offset is measured against that file's, whose own shift it adds.
    /// Files that share no packet with an earlier one keep their clocks.
    /// Each file is read again for this from its start, by path, at most
    /// its first [`CLOCK_PACKETS`] segments and then for as long as packets
    /// keep being found; standard input is not read ahead. Frames then
    /// come with their times set back by their file's shift
    /// ([`ClockOffset::shift_ns`]), merged in that order. A file that
    /// cannot be read here is read as it is (its errors are the main
    /// reading's to report). The two searches of a pair of files (this
    /// file's packets in the other, the other's in this) run together by
    /// `join`; the first is the one taken when both find packets, and once
    /// it has found some the second stops.
    fn align_clocks(&mut self, join: &impl Join) {
        let mut found = Vec::new();
        if self.files.len() < 2 || self.frames > 0 {
            return;
        }
        let paths: Vec<String> = self.files.iter().map(|f| f.path.clone()).collect();
        for i in 1..paths.len() {
            for j in (0..i).rev() {
                let (Some(pi), Some(pj)) = (paths.get(i), paths.get(j)) else {
                    continue;
                };
                if pi == "-" || pj == "-" {
                    continue;
                }
                let (never, seen) = (AtomicBool::new(false), AtomicBool::new(false));
                let (ahead, behind) = join.join(
                    || {
                        let e = clock_search(pi, pj, &never);
                        seen.store(e.is_some(), Ordering::Relaxed);
                        e
                    },
                    || clock_search(pj, pi, &seen),
                );
                let est = ahead.or_else(|| {
                    behind.map(|e| Estimate {
                        offset_ns: e.offset_ns.saturating_neg(),
                        ..e
                    })
                });
                let Some(e) = est else { continue };
                let base = self.shift.get(j).copied().unwrap_or(0);
                let shift = base.saturating_add(e.offset_ns);
                if let Some(s) = self.shift.get_mut(i) {
                    *s = shift;
                }
                found.push(ClockOffset {
                    capture: u16::try_from(i).unwrap_or(u16::MAX),
                    against: u16::try_from(j).unwrap_or(u16::MAX),
                    offset_ns: e.offset_ns,
                    bound_ns: e.bound_ns,
                    packets: e.packets,
                    shift_ns: shift,
                });
                break;
            }
        }
        self.clocks = found;
    }

    /// Open a capture with libpcap whatever it is (`-` is standard input).
    /// Frames carry no file offset.
    pub fn open_libpcap(path: &str) -> Result<FileSource, CaptureError> {
        Ok(FileSource::of(vec![OneFile::open_libpcap(path)?]))
    }

    /// The path this source was opened with (the first, when several).
    pub fn path(&self) -> &str {
        self.files.first().map_or("", |f| f.path.as_str())
    }

    /// The paths of the files read, in the order given (a frame's
    /// [`Frame::capture`] is its file's place in it).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }

    /// Where the TLS key log lines of a pcapng file's Decryption Secrets
    /// Blocks go (read by the zero-copy reader; libpcap skips them).
    pub fn set_tls_keys(&mut self, keys: Keys) {
        for f in &mut self.files {
            if let Reader::Fast(r) = &mut f.reader {
                r.set_tls_keys(keys.clone());
            }
        }
    }

    /// Whether frames come from libpcap (else from the zero-copy reader),
    /// for one file or more.
    pub fn uses_libpcap(&self) -> bool {
        self.files
            .iter()
            .any(|f| matches!(f.reader, Reader::Pcap(_)))
    }

    /// The next frame handed to `visit`, and what `visit` made of it;
    /// `None` at the end of the input. The frames, their numbers and their
    /// order, and the errors, are those of [`FrameSource::poll`]; but a
    /// frame the zero-copy reader can decode in its buffer (untagged
    /// Ethernet II, IPv4, a whole TCP header) comes as its segment
    /// ([`Seen::Tcp`]): no [`Frame`] is made, and of the frame's bytes only
    /// the payload is sliced (a pure ACK takes no slice at all). The frame
    /// goes to `visit` where it was read, not returned through the readers'
    /// layers (a segment is a large value to move); merging several files,
    /// each file's next frame is read ahead.
    #[inline]
    pub fn poll_with<R>(
        &mut self,
        visit: impl FnOnce(Seen) -> R,
    ) -> Result<Option<R>, CaptureError> {
        if let [one] = self.files.as_mut_slice() {
            let got = one.poll_with(visit)?;
            self.frames = one.frames;
            return Ok(got);
        }
        for (f, head) in self.files.iter_mut().zip(self.heads.iter_mut()) {
            if head.is_none() && !f.done {
                *head = f.poll_with(|s| s)?;
            }
        }
        Ok(self.next_head().map(visit))
    }

    /// Merging: the earliest of the files' next frames, numbered and
    /// marked with its file.
    fn next_head(&mut self) -> Option<Seen> {
        let mut first: Option<(usize, Timestamp)> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(h) = h {
                let ts = h.place().0;
                let ts = match self.shift.get(i) {
                    Some(&s) if s != 0 => ts.minus_nanos(s),
                    _ => ts,
                };
                if first.is_none_or(|(_, t)| ts < t) {
                    first = Some((i, ts));
                }
            }
        }
        let (i, ts) = first?;
        let mut seen = self.heads.get_mut(i)?.take()?;
        self.frames = self.frames.saturating_add(1);
        let capture = u16::try_from(i).unwrap_or(u16::MAX);
        match &mut seen {
            Seen::Tcp(f) => {
                f.index = self.frames;
                f.ts = ts;
                f.file_offset = None;
                f.seg.capture = capture;
            }
            Seen::Frame(f) => {
                f.index = self.frames;
                f.ts = ts;
                f.file_offset = None;
                f.capture = capture;
            }
        }
        Some(seen)
    }
}

/// The clock of the file at `wanted` against the one at `other`: the
/// segments at `wanted`'s start looked for in `other` ([`ClockMatch`]);
/// cut short, what is left unread, once `stop` is set.
fn clock_search(wanted: &str, other: &str, stop: &AtomicBool) -> Option<Estimate> {
    let mut m = ClockMatch::default();
    let mut f = OneFile::open(wanted).ok()?;
    let mut taken = 0;
    let go = || !stop.load(Ordering::Relaxed);
    while taken < CLOCK_PACKETS && go() {
        match f.poll_with(segment_of).ok()? {
            None => break,
            Some(Some((seg, ts))) => {
                m.want(&seg, ts);
                taken += 1;
            }
            Some(None) => {}
        }
    }
    let mut f = OneFile::open(other).ok()?;
    let mut since = 0u64;
    while m.wanted() > 0 && (m.packets() == 0 || since < CLOCK_SCAN_AFTER) && go() {
        match f.poll_with(segment_of) {
            Ok(None) | Err(_) => break,
            Ok(Some(Some((seg, ts)))) if m.find(&seg, ts) => since = 0,
            Ok(Some(_)) => since += 1,
        }
    }
    m.estimate()
}

/// A frame's TCP segment and time, when it has one.
fn segment_of(seen: Seen) -> Option<(Segment, Timestamp)> {
    match seen {
        Seen::Tcp(t) => Some((t.seg, t.ts)),
        Seen::Frame(f) => decode_link_owned(f.link, f.data, f.origlen)
            .ok()
            .map(|s| (s, f.ts)),
    }
}

impl OneFile {
    fn open(path: &str) -> Result<OneFile, CaptureError> {
        match (path != "-").then(|| FastFile::open(path)).flatten() {
            Some(f) => Ok(OneFile::new(f.link(), Reader::Fast(f), path)),
            None => OneFile::open_libpcap(path),
        }
    }

    fn new(link: LinkType, reader: Reader, path: &str) -> OneFile {
        OneFile {
            reader,
            path: path.to_string(),
            link,
            frames: 0,
            done: false,
        }
    }

    fn open_libpcap(path: &str) -> Result<OneFile, CaptureError> {
        let cap = Capture::from_file_with_precision(path, Precision::Nano).map_err(|e| {
            CaptureError::Open {
                path: path.to_string(),
                reason: e.to_string(),
            }
        })?;
        Ok(OneFile::new(
            link_of(cap.get_datalink()),
            Reader::Pcap(cap),
            path,
        ))
    }

    #[inline]
    fn poll_with<R>(&mut self, visit: impl FnOnce(Seen) -> R) -> Result<Option<R>, CaptureError> {
        let Reader::Fast(f) = &mut self.reader else {
            return Ok(self.next()?.map(|frame| visit(Seen::Frame(frame))));
        };
        if self.done {
            return Ok(None);
        }
        let index = self.frames.saturating_add(1);
        let got = f.next_tcp(index, visit);
        self.settle(index, got)
    }

    /// The next whole frame; `None` at the end.
    fn next(&mut self) -> Result<Option<Frame>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let index = self.frames.saturating_add(1);
        let got = match &mut self.reader {
            Reader::Fast(f) => f.next(index),
            Reader::Pcap(cap) => match cap.next_packet() {
                Ok(p) => Ok(Some(frame_from(index, self.link, true, p.header, p.data))),
                Err(pcap::Error::NoMorePackets) => Ok(None),
                Err(e) => Err(e.to_string()),
            },
        };
        self.settle(index, got)
    }

    /// Counts frame `index` when `got` is one; after the end or an error
    /// the file is done (no error twice). An error names the file and
    /// the frame.
    fn settle<T>(
        &mut self,
        index: u64,
        got: Result<Option<T>, String>,
    ) -> Result<Option<T>, CaptureError> {
        match got {
            Ok(Some(out)) => {
                self.frames = index;
                Ok(Some(out))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(reason) => {
                self.done = true;
                Err(CaptureError::Read {
                    path: self.path.clone(),
                    frame: index,
                    reason,
                })
            }
        }
    }
}

impl FrameSource for FileSource {
    fn poll(&mut self) -> Result<Polled, CaptureError> {
        let got = if let [one] = self.files.as_mut_slice() {
            let got = one.next()?;
            self.frames = one.frames;
            got
        } else {
            // Whole frames read ahead. A source is read with `poll` or
            // with `poll_with`, not both: a segment `poll_with` read ahead
            // is not a whole frame, and is refused rather than skipped.
            for (f, head) in self.files.iter_mut().zip(self.heads.iter_mut()) {
                if head.is_none() && !f.done {
                    *head = f.next()?.map(Seen::Frame);
                }
            }
            match self.next_head() {
                Some(Seen::Frame(f)) => Some(f),
                Some(Seen::Tcp(t)) => {
                    return Err(CaptureError::Read {
                        path: self.path().to_string(),
                        frame: t.index,
                        reason: "read by poll after poll_with: the frame read ahead is a segment, not a whole frame".into(),
                    })
                }
                None => None,
            }
        };
        Ok(got.map_or(Polled::End, Polled::Frame))
    }

    fn stats(&mut self) -> Result<CaptureStats, CaptureError> {
        Ok(CaptureStats {
            frames: self.frames,
            ..CaptureStats::default()
        })
    }

    fn link(&self) -> LinkType {
        self.files.first().map_or(LinkType::ETHERNET, |f| f.link)
    }

    /// The files' clocks found against earlier files' ([`FileSource::align_clocks`]).
    fn clocks(&self) -> &[ClockOffset] {
        &self.clocks
    }

    /// Several files: how long a message of a connection seen at two
    /// capture points waits for its copy ([`PipelineConfig::twin_window_ns`](crate::pipeline::PipelineConfig::twin_window_ns)):
    /// [`TWIN_WINDOW_NS`], and four times the largest bound of the clocks'
    /// offsets on top. `None` for one file.
    fn twin_window_ns(&self) -> Option<u64> {
        let worst = self.clocks.iter().map(|c| c.bound_ns).max().unwrap_or(0);
        (self.files.len() > 1).then(|| TWIN_WINDOW_NS.saturating_add(worst.saturating_mul(4)))
    }
}

/// How to open a live capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveConfig {
    /// Interface name; `any` captures on all interfaces (Linux SLL/SLL2 link type).
    pub iface: String,
    /// BPF filter, e.g. `tcp port 9092`.
    pub filter: Option<String>,
    /// Bytes kept per packet.
    pub snaplen: i32,
    /// Milliseconds `poll` waits for a packet before returning `Timeout` (so callers can tick).
    pub timeout_ms: i32,
    /// Kernel buffer size in bytes, if not libpcap's default.
    pub buffer_size: Option<i32>,
}

impl LiveConfig {
    /// Defaults: no filter, snaplen 262144, 100 ms timeout, a 32 MiB kernel buffer.
    pub fn new(iface: &str) -> LiveConfig {
        LiveConfig {
            iface: iface.to_string(),
            filter: None,
            snaplen: 262_144,
            timeout_ms: 100,
            buffer_size: Some(DEFAULT_LIVE_BUFFER),
        }
    }
}

/// Kernel ring buffer of a live capture unless told otherwise: about 0.1 s of
/// loopback traffic at 300 MB/s.
pub const DEFAULT_LIVE_BUFFER: i32 = 32 << 20;

/// A live capture on an interface (promiscuous mode off).
pub struct LiveSource {
    cap: Capture<Active>,
    link: LinkType,
    nano: bool,
    frames: u64,
    timeout: Duration,
}

/// Sleep between reads of an idle non-blocking live handle.
const IDLE_SLEEP: Duration = Duration::from_millis(2);

impl LiveSource {
    /// Open the interface, apply the filter; needs capture privileges.
    pub fn open(cfg: &LiveConfig) -> Result<LiveSource, CaptureError> {
        let err = |step: &'static str, e: pcap::Error| CaptureError::Live {
            iface: cfg.iface.clone(),
            step,
            reason: e.to_string(),
        };
        let inactive = |nano: bool| -> Result<Capture<pcap::Inactive>, CaptureError> {
            let mut c = Capture::from_device(cfg.iface.as_str())
                .map_err(|e| err("find device", e))?
                .promisc(false)
                .snaplen(cfg.snaplen)
                .timeout(cfg.timeout_ms)
                // Buffered (not immediate) mode: on Linux, immediate mode switches
                // libpcap to TPACKET_V2, whose ring has one snaplen-sized slot per
                // packet — a 2 MiB ring then holds 7 packets and loopback traffic is
                // lost at a few thousand messages per second. TPACKET_V3 packs
                // packets into blocks handed over when full or after the read
                // timeout, so the ring holds what it says.
                .immediate_mode(false);
            if let Some(b) = cfg.buffer_size {
                c = c.buffer_size(b);
            }
            if nano {
                c = c.precision(Precision::Nano);
            }
            Ok(c)
        };
        // Nanosecond stamps where the platform has them; fall back to microseconds.
        let (mut cap, nano) = match inactive(true)?.open() {
            Ok(c) => (c, true),
            Err(_) => (inactive(false)?.open().map_err(|e| err("open", e))?, false),
        };
        if let Some(f) = &cfg.filter {
            cap.filter(f, true).map_err(|e| err("filter", e))?;
        }
        // libpcap on Linux (TPACKET_V3) blocks past the read timeout while no packet
        // arrives, so the handle is non-blocking and `poll` waits in short sleeps.
        let cap = cap.setnonblock().map_err(|e| err("set non-blocking", e))?;
        let link = link_of(cap.get_datalink());
        Ok(LiveSource {
            cap,
            link,
            nano,
            frames: 0,
            timeout: Duration::from_millis(u64::try_from(cfg.timeout_ms.max(1)).unwrap_or(100)),
        })
    }
}

impl FrameSource for LiveSource {
    fn poll(&mut self) -> Result<Polled, CaptureError> {
        let index = self.frames.saturating_add(1);
        let start = Instant::now();
        loop {
            match self.cap.next_packet() {
                Ok(p) => {
                    self.frames = index;
                    return Ok(Polled::Frame(frame_from(
                        index, self.link, self.nano, p.header, p.data,
                    )));
                }
                Err(pcap::Error::TimeoutExpired) => {
                    let waited = start.elapsed();
                    if waited >= self.timeout {
                        return Ok(Polled::Timeout);
                    }
                    std::thread::sleep(IDLE_SLEEP.min(self.timeout - waited));
                }
                Err(pcap::Error::NoMorePackets) => return Ok(Polled::End),
                Err(e) => {
                    return Err(CaptureError::Read {
                        path: "live".to_string(),
                        frame: index,
                        reason: e.to_string(),
                    })
                }
            }
        }
    }

    fn stats(&mut self) -> Result<CaptureStats, CaptureError> {
        let s = self.cap.stats().map_err(|e| CaptureError::Stats {
            reason: e.to_string(),
        })?;
        Ok(CaptureStats {
            frames: self.frames,
            received: Some(s.received),
            dropped: Some(s.dropped),
            if_dropped: Some(s.if_dropped),
        })
    }

    fn link(&self) -> LinkType {
        self.link
    }
}
