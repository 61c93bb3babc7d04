//! The capture mutator's core: a real capture's TCP data segments permuted in
//! windows, as captures taken on `-i any`, on multi-queue NICs, on mirror
//! ports or merged with mergecap show them.
//!
//! Used by the `mutate-capture` example (`scripts/mutate_capture.rs`) and by
//! `tests/reorder_captures.rs` (through `#[path]`); it depends only on the
//! `kafkashark` library and std.
//!
//! Rules:
//! - A data segment is a TCP segment with payload and none of SYN, FIN, RST.
//!   Every other frame (pure ACKs, handshakes, FINs, RSTs, non-TCP frames)
//!   keeps its place in the file.
//! - The data segments, in file order, are cut into windows of 2 to 8 and
//!   each window is permuted, never by the identity. A connection's start
//!   stays where it is: its last SYN or SYN-ACK, or, when none came before,
//!   the first data segment of each direction (kept in place like an ACK).
//!   A window ends early before a segment whose connection's start lies
//!   after the window's first place, so no data moves before its start
//!   (bytes placed before a direction's first seen byte are a different
//!   stream, not a reordered one). A window also ends early where a FIN or
//!   RST lies between two data segments, so no data moves across a close
//!   (bytes after a RST that nothing acknowledged cannot be told from bytes
//!   after the close; the reader reports them as such); a window of one
//!   (so cut, or the last) cannot move. A frame takes the place of the data
//!   segment it replaces and keeps its own time, as a capture on several
//!   queues or interfaces (`-i any`) writes packets out of time order.
//! - With `resplit`, about a quarter of the data segments are split in two:
//!   their first payload byte, then the rest (IP and TCP headers rewritten:
//!   lengths, the IPv4 header checksum and the second piece's sequence number).
//!   Segments whose headers cannot be located simply (IPv6 extension headers,
//!   snaplen-cut frames) are not split.
//! - With `duplicate`, about a sixth of the data segments are written a second
//!   time, after the last place of their window.
//! - Everything is decided by `seed` (a splitmix64 generator): the same input
//!   and settings give the same file.

use kafkashark::capture::{decode_segment, Frame, LinkType};
use kafkashark::vocab::Timestamp;
use std::io::{self, Write};

/// What to do to a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mutation {
    /// Seed of every random choice.
    pub seed: u64,
    /// Split some data segments into a 1-byte segment and the rest.
    pub resplit: bool,
    /// Write some data segments twice.
    pub duplicate: bool,
}

/// One frame of the mutated capture.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Capture time.
    pub ts: Timestamp,
    /// Length on the wire.
    pub origlen: u32,
    /// Captured bytes, from the link header on.
    pub data: Vec<u8>,
}

/// What [`mutate`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Data segments in the input.
    pub data_segments: usize,
    /// Data segments written at another place.
    pub moved: usize,
    /// Data segments split in two.
    pub split: usize,
    /// Data segments written twice.
    pub duplicated: usize,
}

/// splitmix64: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A connection: its two endpoints, in order.
type ConnKey = (std::net::SocketAddr, std::net::SocketAddr);

/// What a frame is to the mutation: a data segment (its connection, its
/// sender and where its payload starts in its bytes), a SYN of a
/// connection, or neither.
enum Kind {
    Data(ConnKey, std::net::SocketAddr, usize),
    Syn(ConnKey),
    Close,
    Other,
}

fn kind(f: &Frame) -> Kind {
    let Ok(seg) = decode_segment(f) else {
        return Kind::Other;
    };
    let key = if seg.src <= seg.dst {
        (seg.src, seg.dst)
    } else {
        (seg.dst, seg.src)
    };
    if seg.flags.syn {
        return Kind::Syn(key);
    }
    if seg.flags.fin || seg.flags.rst {
        return Kind::Close;
    }
    match data_payload(f, &seg) {
        Some(at) => Kind::Data(key, seg.src, at),
        None => Kind::Other,
    }
}

/// Where a frame's TCP payload starts in its bytes, when it is a data segment.
fn data_payload(f: &Frame, seg: &kafkashark::capture::Segment) -> Option<usize> {
    if seg.payload.is_empty() || seg.flags.syn || seg.flags.fin || seg.flags.rst {
        return None;
    }
    let at = (seg.payload.as_ptr() as usize).checked_sub(f.data.as_ptr() as usize)?;
    (at.checked_add(seg.payload.len())? <= f.data.len()).then_some(at)
}

/// A permutation of `0..n` that is not the identity (`n >= 2`).
fn shuffle(rng: &mut Rng, n: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    if p.iter().enumerate().all(|(i, &x)| i == x) {
        p.rotate_left(1);
    }
    p
}

/// The offset of the IP header in a frame of link type `link`.
fn ip_offset(link: LinkType, d: &[u8]) -> Option<usize> {
    let be16 = |at: usize| Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]));
    match link {
        LinkType::ETHERNET => {
            let mut off = 14;
            let mut ty = be16(12)?;
            while ty == 0x8100 || ty == 0x88a8 {
                ty = be16(off + 2)?;
                off += 4;
            }
            Some(off)
        }
        LinkType::LINUX_SLL => Some(16),
        LinkType::LINUX_SLL2 => Some(20),
        LinkType::NULL | LinkType::LOOP => Some(4),
        LinkType::RAW_DLT | LinkType::RAW | LinkType::IPV4 | LinkType::IPV6 => Some(0),
        _ => None,
    }
}

/// The frame `d` (payload at `at`) cut into two: its first `k` payload bytes,
/// then the rest; `None` when its headers are not simple enough to rewrite.
fn split(link: LinkType, d: &[u8], at: usize, k: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    let ip = ip_offset(link, d)?;
    let version = d.get(ip)? >> 4;
    let tcp = match version {
        4 => ip + usize::from(d.get(ip)? & 0x0f) * 4,
        6 if *d.get(ip + 6)? == 6 => ip + 40,
        _ => return None,
    };
    let tcp_len = usize::from(d.get(tcp + 12)? >> 4) * 4;
    if tcp + tcp_len != at {
        return None;
    }
    let payload = d.get(at..)?;
    let seq = u32::from_be_bytes(d.get(tcp + 4..tcp + 8)?.try_into().ok()?);
    let piece = |bytes: &[u8], seq: u32| -> Option<Vec<u8>> {
        let mut f = d.get(..at)?.to_vec();
        f.extend_from_slice(bytes);
        f.get_mut(tcp + 4..tcp + 8)?
            .copy_from_slice(&seq.to_be_bytes());
        if version == 4 {
            let total = u16::try_from(f.len() - ip).ok()?;
            f.get_mut(ip + 2..ip + 4)?
                .copy_from_slice(&total.to_be_bytes());
            let hdr = tcp - ip;
            f.get_mut(ip + 10..ip + 12)?.copy_from_slice(&[0, 0]);
            let sum = checksum(f.get(ip..ip + hdr)?);
            f.get_mut(ip + 10..ip + 12)?
                .copy_from_slice(&sum.to_be_bytes());
        } else {
            let len = u16::try_from(f.len() - tcp).ok()?;
            f.get_mut(ip + 4..ip + 6)?
                .copy_from_slice(&len.to_be_bytes());
        }
        Some(f)
    };
    let first = piece(payload.get(..k)?, seq)?;
    let rest = piece(payload.get(k..)?, seq.wrapping_add(k as u32))?;
    Some((first, rest))
}

/// The IPv4 header checksum (RFC 791) of `h`, its checksum field zero.
fn checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// `frames` (all of link type `link`) with their data segments permuted as
/// `m` says; see the module documentation.
pub fn mutate(link: LinkType, frames: &[Frame], m: Mutation) -> (Vec<Record>, Report) {
    let mut rng = Rng(m.seed);
    // Each movable data segment (frame, payload start) and the frame of its
    // connection's start: its last SYN before it, else the first data
    // segment of its direction (which does not move).
    let mut last_syn: std::collections::HashMap<ConnKey, usize> = Default::default();
    let mut first_data: std::collections::HashMap<(ConnKey, std::net::SocketAddr), usize> =
        Default::default();
    let mut data: Vec<(usize, usize)> = Vec::new();
    let mut syn_before: Vec<Option<usize>> = Vec::new();
    // Data segments with a FIN or RST between them and the one before.
    let mut after_close: Vec<bool> = Vec::new();
    let mut closed = false;
    for (i, f) in frames.iter().enumerate() {
        match kind(f) {
            Kind::Close => closed = true,
            Kind::Syn(k) => {
                last_syn.insert(k, i);
            }
            Kind::Data(k, src, at) => {
                let start = match last_syn.get(&k) {
                    Some(&s) => s,
                    None => *first_data.entry((k, src)).or_insert(i),
                };
                if start != i {
                    data.push((i, at));
                    syn_before.push(Some(start));
                    after_close.push(std::mem::take(&mut closed));
                }
            }
            Kind::Other => {}
        }
    }
    let mut report = Report {
        data_segments: data.len(),
        ..Report::default()
    };
    // For each data place: the data segment written there, and the copies
    // written after it.
    let mut placed: Vec<Option<(usize, usize)>> = vec![None; frames.len()];
    let mut dups_after: Vec<Vec<(usize, usize)>> = vec![Vec::new(); frames.len()];
    let mut start = 0;
    while start < data.len() {
        let mut w = (2 + rng.below(7)).min(data.len() - start);
        let first = data[start].0;
        if let Some(cut) = (1..w)
            .find(|&j| after_close[start + j] || syn_before[start + j].is_some_and(|s| s > first))
        {
            w = cut;
        }
        let window = &data[start..start + w];
        let perm = if w >= 2 {
            shuffle(&mut rng, w)
        } else {
            vec![0]
        };
        for (slot, &from) in perm.iter().enumerate() {
            placed[window[slot].0] = Some(window[from]);
            if slot != from {
                report.moved += 1;
            }
        }
        if m.duplicate {
            let last = window[w - 1].0;
            for &d in window {
                if rng.below(6) == 0 {
                    dups_after[last].push(d);
                    report.duplicated += 1;
                }
            }
        }
        start += w;
    }
    let mut out = Vec::with_capacity(frames.len() + frames.len() / 4);
    for (i, f) in frames.iter().enumerate() {
        let ts = f.ts;
        let Some((src, at)) = placed[i] else {
            out.push(Record {
                ts,
                origlen: f.origlen,
                data: f.data.to_vec(),
            });
            continue;
        };
        for (src, at) in std::iter::once((src, at)).chain(dups_after[i].iter().copied()) {
            write_data(link, &frames[src], at, m, &mut rng, &mut report, &mut out);
        }
    }
    (out, report)
}

/// One data segment written (at its own time), split when `m.resplit` draws so.
fn write_data(
    link: LinkType,
    f: &Frame,
    at: usize,
    m: Mutation,
    rng: &mut Rng,
    report: &mut Report,
    out: &mut Vec<Record>,
) {
    let ts = f.ts;
    let whole = f.caplen == f.origlen && f.data.len() > at + 1;
    if m.resplit && whole && rng.below(4) == 0 {
        if let Some((a, b)) = split(link, &f.data, at, 1) {
            report.split += 1;
            for data in [a, b] {
                out.push(Record {
                    ts,
                    origlen: data.len() as u32,
                    data,
                });
            }
            return;
        }
    }
    out.push(Record {
        ts,
        origlen: f.origlen,
        data: f.data.to_vec(),
    });
}

/// Writes `records` as a classic pcap file (nanosecond magic) of link type `link`.
pub fn write_pcap(link: LinkType, records: &[Record], w: &mut impl Write) -> io::Result<()> {
    w.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
    w.write_all(&2u16.to_le_bytes())?;
    w.write_all(&4u16.to_le_bytes())?;
    w.write_all(&0i32.to_le_bytes())?;
    w.write_all(&0u32.to_le_bytes())?;
    w.write_all(&262_144u32.to_le_bytes())?;
    w.write_all(&link.0.to_le_bytes())?;
    for r in records {
        let nanos = r.ts.as_nanos();
        let secs = u32::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(0);
        let sub = nanos.rem_euclid(1_000_000_000) as u32;
        w.write_all(&secs.to_le_bytes())?;
        w.write_all(&sub.to_le_bytes())?;
        w.write_all(&(r.data.len() as u32).to_le_bytes())?;
        w.write_all(&r.origlen.to_le_bytes())?;
        w.write_all(&r.data)?;
    }
    Ok(())
}

/// Every frame of the capture at `path` and their one link type; `None` when
/// it does not open, fails to read, or mixes link types.
pub fn read_capture(path: &str) -> Option<(LinkType, Vec<Frame>)> {
    use kafkashark::capture::{FileSource, FrameSource, Polled};
    let mut src = FileSource::open(path).ok()?;
    let mut frames = Vec::new();
    loop {
        match src.poll() {
            Ok(Polled::Frame(f)) => frames.push(f),
            Ok(Polled::Timeout) => continue,
            Ok(Polled::End) => break,
            Err(_) => return None,
        }
    }
    let link = frames.first().map_or(LinkType::ETHERNET, |f| f.link);
    frames
        .iter()
        .all(|f| f.link == link)
        .then_some((link, frames))
}
