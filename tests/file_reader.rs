//! The zero-copy file reader (`capture::fastfile`, used by `FileSource::open`)
//! against libpcap (`FileSource::open_libpcap`) on the same bytes.
//!
//! - Every capture in `captures/` and in `../shared/captures/{public,recorded}`
//!   (skipped when absent): the same frames (index, time, lengths, link type,
//!   bytes), ending the same way (clean end, or an error at the same frame);
//!   each frame's `file_offset` points at its bytes in the file.
//! - pcapng specifics, on small files built here: `if_tsresol` (decimal and
//!   binary), `if_tsoffset`, several sections, several interfaces, big-endian
//!   files, Simple and obsolete Packet Blocks, skipped blocks, blocks larger
//!   than the reader's buffer, bad interface ids.
//! - Classic pcap: both byte orders and timestamp magics, records longer than
//!   the snapshot length (libpcap cuts them), records straddling buffers.
//! - A file cut at every byte, and seeded random corruptions of small files:
//!   no panic; the frames before the damage are delivered; libpcap agrees.
//! - In all of the above, `FileSource::poll_with` (frames decoded to their
//!   TCP segments in the read buffer) hands over the same frames as `poll`,
//!   each segment the one `decode_segment` makes of the whole frame, and ends
//!   the same way; on every capture, the pipeline's events from those
//!   segments are the events from the whole frames, file offsets included.

mod support;

use kafkashark::capture::{decode_segment, CaptureError, FileSource, Frame, FrameSource, Seen};
use kafkashark::pipeline::{Pipeline, PipelineConfig};
use kafkashark::vocab::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use support::{temp_path, TempCapture};

/// How reading a file ended: every frame, and the frame number of the error if any.
struct Outcome {
    frames: Vec<Frame>,
    error: Option<(u64, String)>,
}

fn read_all(mut src: FileSource) -> Outcome {
    let (frames, error) = read_until_end(|| src.next_frame());
    Outcome { frames, error }
}

/// Everything `next` gives until the end or an error, and the error's frame
/// number and text; after an error, `next` must say the end (no error twice).
fn read_until_end<T>(
    mut next: impl FnMut() -> Result<Option<T>, CaptureError>,
) -> (Vec<T>, Option<(u64, String)>) {
    let mut got = Vec::new();
    loop {
        match next() {
            Ok(Some(x)) => got.push(x),
            Ok(None) => return (got, None),
            Err(e) => {
                let frame = match &e {
                    CaptureError::Read { frame, .. } => *frame,
                    other => panic!("not a read error: {other}"),
                };
                assert!(matches!(next(), Ok(None)), "an error twice");
                return (got, Some((frame, e.to_string())));
            }
        }
    }
}

/// How reading a file ended: what `poll_with` handed over, and the frame
/// number of the error if any.
struct SeenOutcome {
    seen: Vec<Seen>,
    error: Option<(u64, String)>,
}

fn read_all_seen(mut src: FileSource) -> SeenOutcome {
    let (seen, error) = read_until_end(|| src.poll_with(|s| s));
    SeenOutcome { seen, error }
}

/// `poll_with`'s frames are `frames`, in order: a whole frame equal to its
/// frame, a decoded one with the frame's number, time, length and place,
/// its segment the one decoded from the frame and its payload where it says.
fn assert_same_seen(seen: &SeenOutcome, whole: &Outcome, label: &str) {
    assert_eq!(seen.seen.len(), whole.frames.len(), "{label}: frames seen");
    assert_eq!(seen.error, whole.error, "{label}: how poll_with ended");
    for (s, f) in seen.seen.iter().zip(&whole.frames) {
        match s {
            Seen::Frame(g) => assert_eq!(g, f, "{label}"),
            Seen::Tcp(t) => {
                assert_eq!(t.index, f.index, "{label}");
                assert_eq!(t.ts, f.ts, "{label}: frame {}", f.index);
                assert_eq!(t.caplen, f.caplen, "{label}: frame {}", f.index);
                assert_eq!(t.file_offset, f.file_offset, "{label}: frame {}", f.index);
                assert_eq!(
                    Ok(&t.seg),
                    decode_segment(f).as_ref(),
                    "{label}: frame {} segment",
                    f.index
                );
                let end = t.payload_at + t.seg.payload.len();
                assert_eq!(
                    f.data.get(t.payload_at..end),
                    Some(&t.seg.payload[..]),
                    "{label}: frame {} payload place",
                    f.index
                );
            }
        }
    }
}

/// What the two readers make of a file: `None` when it does not open.
struct Both {
    fast: Option<Outcome>,
    pcap: Option<Outcome>,
    /// `FileSource::open` chose the zero-copy reader.
    used_fast: bool,
}

fn both(path: &str) -> Both {
    let (fast, used_fast) = match FileSource::open(path) {
        Ok(s) => {
            let used = !s.uses_libpcap();
            let whole = read_all(s);
            let seen = read_all_seen(FileSource::open(path).expect("opened once"));
            assert_same_seen(&seen, &whole, path);
            (Some(whole), used)
        }
        Err(_) => (None, false),
    };
    let pcap = FileSource::open_libpcap(path).ok().map(read_all);
    Both {
        fast,
        pcap,
        used_fast,
    }
}

/// Asserts both readers gave the same frames and ended the same way; the frames.
fn assert_same(path: &str, label: &str) -> Both {
    let b = both(path);
    match (&b.fast, &b.pcap) {
        (None, None) => {}
        (Some(f), Some(p)) => {
            assert_eq!(
                f.frames.len(),
                p.frames.len(),
                "{label}: frame count (fast ended {:?}, libpcap {:?})",
                f.error,
                p.error
            );
            for (a, b) in f.frames.iter().zip(&p.frames) {
                assert_eq!(a.index, b.index, "{label}");
                assert_eq!(a.ts, b.ts, "{label}: frame {} time", a.index);
                assert_eq!(a.caplen, b.caplen, "{label}: frame {} caplen", a.index);
                assert_eq!(a.origlen, b.origlen, "{label}: frame {} origlen", a.index);
                assert_eq!(a.link, b.link, "{label}: frame {} link", a.index);
                assert_eq!(a.data, b.data, "{label}: frame {} bytes", a.index);
                assert_eq!(a.data.len(), a.caplen as usize, "{label}");
            }
            assert_eq!(
                f.error.as_ref().map(|e| e.0),
                p.error.as_ref().map(|e| e.0),
                "{label}: how reading ended (fast {:?}, libpcap {:?})",
                f.error,
                p.error
            );
            if let Some((frame, msg)) = &f.error {
                assert!(msg.contains(path), "{label}: {msg}");
                assert!(msg.contains(&format!("frame {frame}")), "{label}: {msg}");
                assert!(
                    msg.contains(&format!("the {} frame(s) before it were read", frame - 1)),
                    "{label}: {msg}"
                );
                if b.used_fast {
                    assert!(msg.contains("at byte"), "{label}: no offset in {msg}");
                }
            }
        }
        (f, p) => panic!(
            "{label}: opens with one reader only (FileSource::open: {}, libpcap: {})",
            f.is_some(),
            p.is_some()
        ),
    }
    b
}

/// Every frame's `file_offset` points at its bytes.
fn assert_offsets(bytes: &[u8], frames: &[Frame], label: &str) {
    for f in frames {
        let off = f.file_offset.expect("the fast reader gives offsets") as usize;
        assert_eq!(
            &bytes[off..off + f.data.len()],
            &f.data[..],
            "{label}: frame {} offset {off}",
            f.index
        );
    }
}

fn write(tag: &str, bytes: &[u8]) -> TempCapture {
    let path = temp_path(tag, "cap");
    std::fs::write(&path, bytes).expect("write temp file");
    TempCapture { path }
}

fn capture_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let shared = Path::new(support::SHARED_CAPTURES);
    for dir in [repo, shared.join("public"), shared.join("recorded")] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            println!("skipping {}: not present", dir.display());
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pcap" | "pcapng")
            ) {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn every_capture_reads_the_same_as_with_libpcap() {
    let files = capture_files();
    assert!(files.len() >= 10, "{files:?}");
    for p in &files {
        let path = p.to_str().expect("utf-8 path");
        let b = assert_same(path, path);
        assert!(b.used_fast, "{path}: not read by the fast reader");
        let f = b.fast.expect("opens");
        assert!(!f.frames.is_empty(), "{path}");
        assert!(f.error.is_none(), "{path}: {:?}", f.error);
        assert_offsets(&std::fs::read(p).expect("read"), &f.frames, path);
    }
}

/// The pipeline's events, the file read whole frame by whole frame or
/// through `poll_with`, with `locate_in_file` (each message says where its
/// bytes lie in the file); and how many frames `poll_with` decoded in the
/// buffer.
fn events_both_ways(path: &str) -> ([Vec<kafkashark::pipeline::Event>; 2], usize) {
    let cfg = PipelineConfig {
        locate_in_file: true,
        ..PipelineConfig::default()
    };
    let mut whole = Pipeline::new(cfg.clone());
    let mut a = Vec::new();
    let mut src = FileSource::open(path).expect("opens");
    while let Ok(Some(f)) = src.next_frame() {
        whole.push(f, &mut a);
    }
    whole.finish(&mut a);
    let mut seen = Pipeline::new(cfg);
    let mut b = Vec::new();
    let mut src = FileSource::open(path).expect("opens");
    let mut decoded = 0;
    while let Ok(Some(())) = src.poll_with(|s| {
        decoded += usize::from(matches!(s, Seen::Tcp(_)));
        seen.push(s, &mut b);
    }) {}
    seen.finish(&mut b);
    assert_eq!(whole.stats(), seen.stats(), "{path}: pipeline counters");
    ([a, b], decoded)
}

#[test]
fn segments_decoded_in_the_buffer_give_the_events_of_whole_frames() {
    let (mut decoded, mut messages) = (0, 0);
    for p in capture_files() {
        let path = p.to_str().expect("utf-8 path");
        let ([a, b], n) = events_both_ways(path);
        decoded += n;
        messages += a
            .iter()
            .filter(|e| matches!(e, kafkashark::pipeline::Event::Message(_)))
            .count();
        assert_eq!(a.len(), b.len(), "{path}: events");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x, y, "{path}");
        }
    }
    // The Ethernet captures take the decoded path.
    assert!(decoded > 1000, "{decoded} frames decoded in the buffer");
    assert!(messages > 1000, "{messages} messages");
}

// ---------------------------------------------------------------------------
// Writers with a byte order of their choice.

/// A classic pcap file: `big` for big-endian, `nano` for the nanosecond magic.
struct Pcap {
    buf: Vec<u8>,
    big: bool,
}

impl Pcap {
    fn new(big: bool, nano: bool, snaplen: u32, linktype: u32) -> Pcap {
        let mut p = Pcap {
            buf: Vec::new(),
            big,
        };
        p.u32(if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        p.u16(2); // version 2.4
        p.u16(4);
        p.u32(0); // thiszone
        p.u32(0); // sigfigs
        p.u32(snaplen);
        p.u32(linktype);
        p
    }

    fn u16(&mut self, v: u16) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }

    fn u32(&mut self, v: u32) {
        let b = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.buf.extend_from_slice(&b);
    }

    /// A record with a given captured length field (the data may be shorter: a cut file).
    fn record(&mut self, sec: u32, frac: u32, data: &[u8], origlen: u32) {
        self.u32(sec);
        self.u32(frac);
        self.u32(data.len() as u32);
        self.u32(origlen);
        self.buf.extend_from_slice(data);
    }
}

/// A pcapng file, block by block, in the byte order of its current section.
struct Ng {
    buf: Vec<u8>,
    big: bool,
}

impl Ng {
    fn new(big: bool) -> Ng {
        let mut n = Ng {
            buf: Vec::new(),
            big,
        };
        n.shb(big);
        n
    }

    fn b16(&self, v: u16) -> [u8; 2] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn b32(&self, v: u32) -> [u8; 4] {
        if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn block(&mut self, ty: u32, body: &[u8]) {
        let mut body = body.to_vec();
        body.resize(body.len().next_multiple_of(4), 0);
        let total = 12 + body.len() as u32;
        let (t, l) = (self.b32(ty), self.b32(total));
        self.buf.extend_from_slice(&t);
        self.buf.extend_from_slice(&l);
        self.buf.extend_from_slice(&body);
        self.buf.extend_from_slice(&l);
    }

    /// A Section Header Block (version 1.0), starting a section in byte order `big`.
    fn shb(&mut self, big: bool) {
        self.big = big;
        let mut b = self.b32(0x1a2b_3c4d).to_vec();
        b.extend_from_slice(&self.b16(1));
        b.extend_from_slice(&self.b16(0));
        b.extend_from_slice(&u64::MAX.to_le_bytes()); // section length unknown
        self.block(0x0a0d_0d0a, &b);
    }

    /// An option: code, value (padded).
    fn opt(&self, code: u16, value: &[u8]) -> Vec<u8> {
        let mut o = self.b16(code).to_vec();
        o.extend_from_slice(&self.b16(value.len() as u16));
        o.extend_from_slice(value);
        o.resize(o.len().next_multiple_of(4), 0);
        o
    }

    /// An Interface Description Block with the given options (end-of-options added).
    fn idb(&mut self, linktype: u16, snaplen: u32, opts: &[Vec<u8>]) {
        let mut b = self.b16(linktype).to_vec();
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&self.b32(snaplen));
        if !opts.is_empty() {
            for o in opts {
                b.extend_from_slice(o);
            }
            b.extend_from_slice(&[0, 0, 0, 0]);
        }
        self.block(1, &b);
    }

    fn epb(&mut self, iface: u32, t: u64, data: &[u8], origlen: u32) {
        let mut b = self.b32(iface).to_vec();
        b.extend_from_slice(&self.b32((t >> 32) as u32));
        b.extend_from_slice(&self.b32(t as u32));
        b.extend_from_slice(&self.b32(data.len() as u32));
        b.extend_from_slice(&self.b32(origlen));
        b.extend_from_slice(data);
        self.block(6, &b);
    }

    fn spb(&mut self, data: &[u8]) {
        let mut b = self.b32(data.len() as u32).to_vec();
        b.extend_from_slice(data);
        self.block(3, &b);
    }

    fn pb(&mut self, iface: u16, t: u64, data: &[u8], origlen: u32) {
        let mut b = self.b16(iface).to_vec();
        b.extend_from_slice(&self.b16(0)); // drops
        b.extend_from_slice(&self.b32((t >> 32) as u32));
        b.extend_from_slice(&self.b32(t as u32));
        b.extend_from_slice(&self.b32(data.len() as u32));
        b.extend_from_slice(&self.b32(origlen));
        b.extend_from_slice(data);
        self.block(2, &b);
    }
}

/// A frame's bytes: `n` bytes counting up from `seed`.
fn payload(seed: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
}

/// Reads `bytes` with both readers; asserts agreement and that the fast reader was used.
fn fast_frames(tag: &str, bytes: &[u8]) -> Outcome {
    let f = write(tag, bytes);
    let b = assert_same(f.path_str(), tag);
    assert!(b.used_fast, "{tag}: not read by the fast reader");
    let out = b.fast.expect("opens");
    assert_offsets(bytes, &out.frames, tag);
    out
}

fn ts(secs: i64, nanos: u32) -> Timestamp {
    Timestamp::new(secs, nanos)
}

#[test]
fn classic_pcap_in_both_byte_orders_and_precisions() {
    for big in [false, true] {
        for nano in [false, true] {
            let mut p = Pcap::new(big, nano, 65_535, 1);
            p.record(1_700_000_000, 123_456, &payload(1, 60), 60);
            p.record(1_700_000_001, 999_999, &payload(2, 1514), 1514);
            p.record(1_700_000_002, 0, &payload(3, 100), 9000); // cut by the snaplen of the writer
            let out = fast_frames(&format!("pcap-big{big}-nano{nano}"), &p.buf);
            assert!(out.error.is_none());
            let scale = if nano { 1 } else { 1000 };
            assert_eq!(out.frames[0].ts, ts(1_700_000_000, 123_456 * scale));
            assert_eq!(out.frames[1].ts, ts(1_700_000_001, 999_999 * scale));
            assert_eq!(out.frames[1].data, payload(2, 1514));
            assert_eq!((out.frames[2].caplen, out.frames[2].origlen), (100, 9000));
            assert_eq!(out.frames[0].link.0, 1);
        }
    }
}

#[test]
fn classic_pcap_records_longer_than_the_snaplen_are_cut_like_libpcap() {
    // Header snaplen 100: a 300-byte record keeps its first 100 bytes.
    let mut p = Pcap::new(false, false, 100, 1);
    p.record(1, 0, &payload(0, 300), 300);
    p.record(2, 0, &payload(9, 50), 50);
    let out = fast_frames("snapcut", &p.buf);
    assert_eq!(out.frames.len(), 2);
    assert_eq!(out.frames[0].data, payload(0, 100));
    assert_eq!(out.frames[0].origlen, 300);
    assert_eq!(out.frames[1].data, payload(9, 50));
    // Past 256 KiB a record is an error, whatever the header says.
    let mut p = Pcap::new(false, false, 0, 1);
    p.record(1, 0, &payload(0, 10), 10);
    p.u32(2);
    p.u32(0);
    p.u32(262_145);
    p.u32(262_145);
    p.buf.extend_from_slice(&payload(0, 300_000));
    let out = fast_frames("toolong", &p.buf);
    assert_eq!(out.frames.len(), 1);
    let (frame, msg) = out.error.expect("error");
    assert_eq!(frame, 2);
    assert!(
        msg.contains("262145") && msg.contains("at byte 50"),
        "{msg}"
    );
}

#[test]
fn fcs_bits_in_the_link_type_are_dropped_like_libpcap() {
    // LT_FCS_LENGTH_PRESENT (bit 26) with a 4-byte FCS (bits 28..31 = 2).
    let mut p = Pcap::new(false, false, 65_535, 1 | 0x0400_0000 | 0x2000_0000);
    p.record(1, 0, &payload(0, 64), 64);
    let out = fast_frames("fcs", &p.buf);
    assert_eq!(out.frames[0].link.0, 1);
    assert_eq!(out.frames[0].data.len(), 64);
}

#[test]
fn link_types_are_those_libpcap_reports() {
    // Every link type number up to 300 (and a few with FCS bits): when the fast
    // reader takes the file, it reports libpcap's link type; else libpcap reads it.
    let mut fast = 0;
    for lt in (0..300u32).chain([0x0400_0001, 0x0400_0065, 0xfc00_0071]) {
        let mut p = Pcap::new(false, true, 1000, lt);
        p.record(5, 6, &payload(0, 40), 40);
        let f = write("lt", &p.buf);
        let b = assert_same(f.path_str(), &format!("link type {lt:#x}"));
        if b.used_fast {
            fast += 1;
        }
    }
    // 0, 1, 12, 101, 108, 113, 228, 229, 276 and the three with FCS bits.
    assert_eq!(fast, 12);
}

#[test]
fn records_straddling_buffers_and_the_largest_records() {
    // Well over the reader's 1 MiB buffer, with records of every size up to 256 KiB,
    // so that many straddle two buffers, and one as large as a record may be.
    let mut rng = StdRng::seed_from_u64(11);
    let mut p = Pcap::new(true, true, 0, 1);
    let mut n = 0;
    while p.buf.len() < 5 << 20 {
        let len = match n % 7 {
            0 => 262_144,
            1 => rng.gen_range(0..16),
            _ => rng.gen_range(0..70_000),
        };
        p.record(n, n * 3, &payload(n as u8, len), len as u32 + 4);
        n += 1;
    }
    let out = fast_frames("big", &p.buf);
    assert!(out.error.is_none());
    assert_eq!(out.frames.len(), n as usize);
    // The same in pcapng, with blocks too large to hold (a 3 MiB custom block,
    // an EPB with 2 MiB of options) skipped through.
    let mut g = Ng::new(false);
    g.idb(1, 0, &[]);
    for i in 0..40u32 {
        let len = (i as usize * 7919) % 262_145;
        g.epb(
            0,
            u64::from(i) * 1_000_003,
            &payload(i as u8, len),
            len as u32,
        );
        if i == 10 {
            g.block(0x0000_0bad, &payload(0, 3 << 20));
        }
        if i == 20 {
            let mut b = g.b32(0).to_vec();
            b.extend_from_slice(&[0; 8]);
            b.extend_from_slice(&g.b32(5));
            b.extend_from_slice(&g.b32(5));
            b.extend_from_slice(&payload(77, 5));
            b.extend_from_slice(&[0; 3]);
            // opt_comment of 60000 bytes, 35 times.
            for _ in 0..35 {
                b.extend_from_slice(&g.opt(1, &payload(1, 60_000)));
            }
            b.extend_from_slice(&[0, 0, 0, 0]);
            g.block(6, &b);
        }
    }
    let out = fast_frames("bigng", &g.buf);
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.frames.len(), 41);
    assert_eq!(out.frames[21].data, payload(77, 5));
    // A huge block with a wrong trailer, and a huge block cut by the end of the file.
    let mut bad = g.buf.clone();
    let mut h = Ng {
        buf: Vec::new(),
        big: false,
    };
    h.block(0x0000_0bad, &payload(0, 2 << 20));
    let n = h.buf.len();
    h.buf[n - 4..].copy_from_slice(&12u32.to_le_bytes());
    bad.extend_from_slice(&h.buf);
    let out = fast_frames("badtrailer", &bad);
    assert_eq!(out.error.expect("error").0, 42);
    let cut = &h.buf[..n - 1000];
    let mut bad = g.buf.clone();
    bad.extend_from_slice(cut);
    let out = fast_frames("cutbig", &bad);
    assert_eq!(out.error.expect("error").0, 42);
}

#[test]
fn pcapng_timestamp_resolutions_and_offsets() {
    for big in [false, true] {
        let mut g = Ng::new(big);
        let o = |g: &Ng, code: u16, v: &[u8]| g.opt(code, v);
        // 0: default microseconds; 1: nanoseconds; 2: 2^-20 s; 3: milliseconds with
        // a tsoffset of 1000 s; 4: picoseconds.
        g.idb(1, 0, &[]);
        let nano = o(&g, 9, &[9]);
        g.idb(1, 0, &[nano]);
        let bin = o(&g, 9, &[0x80 | 20]);
        g.idb(1, 0, &[bin]);
        let milli = o(&g, 9, &[3]);
        let off = if big {
            1000i64.to_be_bytes()
        } else {
            1000i64.to_le_bytes()
        };
        let off = o(&g, 14, &off);
        g.idb(1, 0, &[o(&g, 2, b"eth0"), milli, off]);
        let pico = o(&g, 9, &[12]);
        g.idb(1, 0, &[pico]);
        g.epb(0, 1_700_000_000_123_456, &payload(0, 10), 10);
        g.epb(1, 1_700_000_000_123_456_789, &payload(1, 10), 10);
        g.epb(2, (5 << 20) + (1 << 19), &payload(2, 10), 10);
        g.epb(3, 2_500, &payload(3, 10), 10);
        g.epb(4, 7_000_000_000_001, &payload(4, 10), 10);
        let out = fast_frames(&format!("tsresol-big{big}"), &g.buf);
        assert!(out.error.is_none(), "{:?}", out.error);
        let got: Vec<Timestamp> = out.frames.iter().map(|f| f.ts).collect();
        assert_eq!(
            got,
            [
                ts(1_700_000_000, 123_456_000),
                ts(1_700_000_000, 123_456_789),
                ts(5, 500_000_000),
                ts(1002, 500_000_000),
                ts(7, 0),
            ]
        );
    }
}

#[test]
fn odd_timestamps_read_as_libpcap_reads_them() {
    // Classic pcap: seconds and fractions at the edges of 32 bits, both byte
    // orders (libpcap reads them signed from a file in the machine's order),
    // fractions past one second.
    for big in [false, true] {
        for nano in [false, true] {
            let mut p = Pcap::new(big, nano, 0, 1);
            for sec in [0, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff] {
                for frac in [
                    0,
                    999_999,
                    1_000_000,
                    999_999_999,
                    0x7fff_ffff,
                    0x8000_0000,
                    0xffff_ffff,
                ] {
                    p.record(sec, frac, &payload(0, 4), 4);
                }
            }
            let out = fast_frames(&format!("odd-ts-big{big}-nano{nano}"), &p.buf);
            assert_eq!(out.frames.len(), 28);
        }
    }
    // pcapng: the finest resolutions, offsets at the edges, the largest stamps.
    for big in [false, true] {
        let mut g = Ng::new(big);
        let res: [u8; 6] = [0, 19, 0x80 | 63, 0x80 | 35, 0x80 | 30, 0x80 | 29];
        for r in res {
            let tsres = g.opt(9, &[r]);
            g.idb(1, 0, &[tsres]);
        }
        for off in [i64::MIN, -1, i64::MAX] {
            let v = if big {
                off.to_be_bytes()
            } else {
                off.to_le_bytes()
            };
            let tsoff = g.opt(14, &v);
            g.idb(1, 0, &[tsoff]);
        }
        for iface in 0..9 {
            for t in [0, 1, 999_999_999, 1 << 40, u64::MAX / 3, u64::MAX] {
                g.epb(iface, t, &payload(0, 4), 4);
            }
        }
        let out = fast_frames(&format!("odd-ng-ts-big{big}"), &g.buf);
        assert!(out.error.is_none(), "{:?}", out.error);
        assert_eq!(out.frames.len(), 54);
    }
}

#[test]
fn pcapng_packets_past_256_kib_follow_the_snapshot_length() {
    // An interface with a 4 MiB snapshot length: a 600 KiB packet (a block
    // held whole) and a 3 MiB one (a block read through), as libpcap reads them.
    let mut g = Ng::new(false);
    g.idb(1, 4 << 20, &[]);
    g.epb(0, 1, &payload(1, 600 << 10), 600 << 10);
    g.epb(0, 2, &payload(2, 3 << 20), 3 << 20);
    g.epb(0, 3, &payload(3, 60), 60);
    let out = fast_frames("ng-big-snaplen", &g.buf);
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.frames[1].data.len(), 3 << 20);
    assert_eq!(out.frames[1].data, payload(2, 3 << 20));
    // With the default snapshot length (262144) the same packet is an error.
    let mut g = Ng::new(false);
    g.idb(1, 0, &[]);
    g.epb(0, 1, &payload(1, 100), 100);
    g.epb(0, 2, &payload(2, 300_000), 300_000);
    let out = fast_frames("ng-over-snaplen", &g.buf);
    let (frame, msg) = out.error.expect("error");
    assert_eq!(frame, 2);
    assert!(
        msg.contains("300000") && msg.contains("snapshot length 262144"),
        "{msg}"
    );
}

#[test]
fn pcapng_sections_interfaces_and_block_kinds() {
    for big in [false, true] {
        let mut g = Ng::new(big);
        g.block(0x0000_0004, &[1, 0, 4, 0, 10, 0, 0, 1, 0, 0, 0, 0]); // NRB before the IDB
        g.idb(1, 1500, &[]);
        g.idb(1, 1500, &[]);
        g.epb(1, 1, &payload(0, 20), 20);
        g.block(0x0000_0005, &[0; 12]); // ISB
        g.spb(&payload(1, 1600)); // cut to the snaplen
        g.pb(0, 2_000_000, &payload(2, 30), 31);
        g.block(0x0000_0bad, b"custom!!"); // custom block
                                           // A second section in the same byte order: interfaces start again.
        g.shb(big);
        g.idb(1, 1500, &[g.opt(9, &[9])]);
        g.epb(0, 3_000_000_007, &payload(3, 40), 40);
        let out = fast_frames(&format!("sections-big{big}"), &g.buf);
        assert!(out.error.is_none(), "{:?}", out.error);
        let f = &out.frames;
        assert_eq!(f.len(), 4);
        assert_eq!((f[1].caplen, f[1].origlen), (1500, 1600));
        assert_eq!(f[1].data, payload(1, 1500));
        assert_eq!(f[1].ts, ts(0, 0));
        assert_eq!((f[2].ts, f[2].origlen), (ts(2, 0), 31));
        assert_eq!(f[3].ts, ts(3, 7));
        // A packet on an interface the section does not describe: the frames
        // before it are read, then an error naming the interface.
        let mut bad = g.buf.clone();
        let mut h = Ng {
            buf: Vec::new(),
            big,
        };
        h.epb(1, 0, &payload(0, 4), 4);
        bad.extend_from_slice(&h.buf);
        let out = fast_frames(&format!("badiface-big{big}"), &bad);
        let (frame, msg) = out.error.expect("error");
        assert_eq!(frame, 5);
        assert!(msg.contains("interface 1"), "{msg}");
        assert!(msg.contains(&format!("at byte {}", g.buf.len())), "{msg}");
        // A section of the other byte order is an error, as in libpcap.
        let mut bad = g.buf.clone();
        let mut h = Ng::new(!big);
        h.idb(1, 1500, &[]);
        bad.extend_from_slice(&h.buf);
        let out = fast_frames(&format!("flip-big{big}"), &bad);
        assert_eq!(out.error.expect("error").0, 5);
        // An interface of another link type or snaplen, too.
        for (lt, snap) in [(113, 1500), (1, 9000)] {
            let mut bad = g.buf.clone();
            let mut h = Ng {
                buf: Vec::new(),
                big,
            };
            h.idb(lt, snap, &[]);
            bad.extend_from_slice(&h.buf);
            let out = fast_frames(&format!("mixed-big{big}"), &bad);
            assert_eq!(out.error.expect("error").0, 5);
        }
    }
}

#[test]
fn raw_ip_pcapng_with_two_interfaces_is_read() {
    // libpcap compares a later interface's raw LINKTYPE_RAW (101) with the
    // first one's mapped DLT_RAW (12) and gives up; the fast reader reads on.
    let mut g = Ng::new(false);
    g.idb(101, 0, &[]);
    g.idb(101, 0, &[]);
    g.epb(1, 5, &payload(0x45, 20), 20);
    let f = write("raw2", &g.buf);
    let src = FileSource::open(f.path_str()).expect("opens");
    assert!(!src.uses_libpcap());
    let out = read_all(src);
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.frames.len(), 1);
    assert_eq!(out.frames[0].link.0, 12);
    let pcap = read_all(FileSource::open_libpcap(f.path_str()).expect("opens"));
    assert!(pcap.error.is_some());
}

/// Small files of every kind the reader takes.
fn small_files() -> Vec<(&'static str, Vec<u8>)> {
    let mut files = Vec::new();
    for (name, big, nano) in [("pcap-le-us", false, false), ("pcap-be-ns", true, true)] {
        let mut p = Pcap::new(big, nano, 200, 1);
        p.record(10, 20, &payload(0, 54), 54);
        p.record(11, 21, &payload(1, 250), 250); // cut to 200
        p.record(12, 22, &payload(2, 3), 60);
        files.push((name, p.buf));
    }
    for (name, big) in [("ng-le", false), ("ng-be", true)] {
        let mut g = Ng::new(big);
        g.idb(1, 200, &[g.opt(9, &[6]), g.opt(14, &g.b32(0).repeat(2))]);
        g.epb(0, 10_000_020, &payload(0, 54), 54);
        g.block(5, &[0; 16]);
        g.spb(&payload(1, 50));
        g.pb(0, 12_000_022, &payload(2, 3), 60);
        g.shb(big);
        g.idb(1, 200, &[]);
        g.epb(0, 1, &payload(3, 7), 7);
        files.push((name, g.buf));
    }
    files
}

#[test]
fn a_file_cut_at_every_byte() {
    for (name, bytes) in small_files() {
        let whole = fast_frames(name, &bytes);
        assert!(whole.error.is_none(), "{name}: {:?}", whole.error);
        for cut in 0..bytes.len() {
            let label = format!("{name} cut at {cut}");
            let f = write("cut", &bytes[..cut]);
            let b = assert_same(f.path_str(), &label);
            let Some(out) = b.fast else { continue };
            // Frames before the cut are delivered, equal to the whole file's.
            for (a, w) in out.frames.iter().zip(&whole.frames) {
                assert_eq!(a, w, "{label}");
            }
            let complete = whole
                .frames
                .iter()
                .filter(|w| w.file_offset.unwrap_or(0) as usize + w.data.len() <= cut)
                .count();
            assert!(out.frames.len() <= complete, "{label}");
            assert!(out.frames.len() + 1 >= complete, "{label}");
        }
    }
}

#[test]
fn random_corruptions_read_the_same_as_with_libpcap() {
    let mut rng = StdRng::seed_from_u64(0x6b73_6872);
    let mut real = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/a1-kcat-produce-consume-group.pcap"),
    )
    .expect("a1");
    real.truncate(6000);
    let mut bases = small_files();
    bases.push(("a1-head", real));
    for round in 0..1500 {
        let (name, base) = &bases[round % bases.len()];
        let mut b = base.clone();
        match rng.gen_range(0..4) {
            // Bit flips, anywhere or past the file header.
            0 | 1 => {
                for _ in 0..rng.gen_range(1..6) {
                    let i = rng.gen_range(0..b.len());
                    b[i] ^= 1 << rng.gen_range(0..8);
                }
            }
            // A 32-bit field set to an edge value.
            2 => {
                let i = rng.gen_range(0..b.len() - 4) & !3;
                let v: u32 = [
                    0,
                    1,
                    12,
                    0x7fff_ffff,
                    0xffff_ffff,
                    262_144,
                    262_145,
                    1 << 24,
                ][rng.gen_range(0..8)];
                b[i..i + 4].copy_from_slice(&v.to_le_bytes());
            }
            // Bytes dropped or inserted in the middle.
            _ => {
                let i = rng.gen_range(0..b.len());
                if rng.gen() {
                    let n = rng.gen_range(1..9).min(b.len() - i);
                    b.drain(i..i + n);
                } else {
                    for _ in 0..rng.gen_range(1..9) {
                        b.insert(i, rng.gen());
                    }
                }
            }
        }
        let f = write("mut", &b);
        assert_same(f.path_str(), &format!("{name} round {round}"));
    }
}
