//! The size-only paths agree with the full decode: `decompressed_len` with
//! `decompress` (same lengths, notes and errors, limits included) and
//! `count_record_set` with `decode_record_set` in headers-only mode (same
//! batches, records, codecs, byte counts and sources; `None` whenever the
//! decoder reports a problem) — on every compressed payload of the shipped
//! captures, of `../shared/captures` when present, and on synthetic payloads
//! of every codec, whole, truncated at every length and with flipped bytes.

#![allow(clippy::indexing_slicing)]

use super::*;
use kafkashark_harness::{compress, legacy_message, mixed, record_batch};

/// A payload that compresses well but not trivially (JSON-like records).
fn sample(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            format!("{{\"id\":{i},\"name\":\"user-{}\",\"ok\":true}}", i % 17).into_bytes()
        })
        .collect()
}

/// Both answers for one payload, as comparable values.
fn both(codec: u8, data: &[u8], limit: usize) {
    let full = decompress(codec, data, limit).map(|o| (o.data.len(), o.note));
    let size = compression::decompressed_len(codec, data, limit).map(|s| (s.len, s.note));
    assert_eq!(
        full,
        size,
        "codec {codec}, {} bytes, limit {limit}",
        data.len()
    );
}

/// xerial framing around raw snappy blocks of `parts`.
fn xerial(parts: &[&[u8]]) -> Vec<u8> {
    let mut v = b"\x82SNAPPY\x00".to_vec();
    v.extend_from_slice(&1i32.to_be_bytes());
    v.extend_from_slice(&1i32.to_be_bytes());
    for p in parts {
        let block = compress(2, p);
        v.extend_from_slice(&(block.len() as i32).to_be_bytes());
        v.extend_from_slice(&block);
    }
    v
}

/// gzip with a file name in its header (FNAME: not the fast path).
fn gzip_named(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::GzBuilder::new()
        .filename("records")
        .write(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Synthetic payloads: (codec, bytes).
fn payloads() -> Vec<(u8, Vec<u8>)> {
    let a = sample(40);
    let b = sample(3);
    let mut v = Vec::new();
    for codec in 1..=4 {
        v.push((codec, compress(codec, &a)));
        v.push((codec, compress(codec, &[])));
    }
    // gzip: two members, a named header, trailing garbage, bad CRC and ISIZE.
    let mut two = compress(1, &a);
    two.extend_from_slice(&compress(1, &b));
    v.push((1, two));
    v.push((1, gzip_named(&a)));
    let mut tail = compress(1, &a);
    tail.extend_from_slice(b"junk");
    v.push((1, tail));
    let mut bad_crc = compress(1, &a);
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 1;
    v.push((1, bad_crc));
    let mut bad_size = compress(1, &a);
    bad_size[n - 1] ^= 1;
    v.push((1, bad_size));
    // snappy in the xerial framing, two blocks.
    v.push((2, xerial(&[&a, &b])));
    // zstd: two frames, and a frame without its content size.
    let mut frames = compress(4, &a);
    frames.extend_from_slice(&compress(4, &b));
    v.push((4, frames));
    let mut streamed = Vec::new();
    {
        use std::io::Write;
        let mut e = zstd::stream::write::Encoder::new(&mut streamed, 3).unwrap();
        e.write_all(&a).unwrap();
        e.finish().unwrap();
    }
    v.push((4, streamed));
    // lz4 with the pre-KIP-57 header checksum.
    let mut old = compress(3, &a);
    let hc_at = compression::lz4_descriptor_end(&old).unwrap();
    old[hc_at] = (compression::xxh32(&old[..hc_at], 0) >> 8) as u8;
    v.push((3, old));
    // Codecs Kafka does not define, and none.
    v.push((5, a.clone()));
    v.push((0, a));
    v
}

#[test]
fn size_only_decompression_agrees_with_the_full_decode() {
    for (codec, p) in payloads() {
        let real = decompress(codec, &p, usize::MAX).map(|o| o.data.len());
        for limit in [0, 1, 100, 1 << 20] {
            both(codec, &p, limit);
        }
        if let Ok(n) = real {
            for limit in [n, n.saturating_sub(1), n + 1] {
                both(codec, &p, limit);
            }
        }
        // Every truncation, and a flipped bit at every position.
        for cut in 0..p.len() {
            both(codec, &p[..cut], 1 << 20);
        }
        for i in 0..p.len() {
            let mut q = p.clone();
            q[i] ^= 0x40;
            both(codec, &q, 1 << 20);
            if let Ok(n) = decompress(codec, &q, 1 << 20).map(|o| o.data.len()) {
                both(codec, &q, n.saturating_sub(1));
            }
        }
    }
}

/// Every compressed payload decoded from the captured messages: the capture,
/// the codec, the compressed bytes and the byte source they decoded to.
fn captured_payloads(mut each: impl FnMut(&std::path::Path, u8, &[u8], &ByteSource)) {
    for path in crate::test_captures::all() {
        for m in crate::test_captures::messages(&path, crate::test_captures::full_trees()) {
            let Some(d) = &m.decoded else { continue };
            for s in &d.sources {
                let parent: &[u8] = if s.parent == 0 {
                    &m.raw.bytes
                } else {
                    &d.sources[usize::from(s.parent) - 1].data
                };
                let comp = &parent[s.parent_offset..s.parent_offset + s.parent_length];
                let codec = match s.name.split('-').next() {
                    Some("gzip") => 1,
                    Some("snappy") => 2,
                    Some("lz4") => 3,
                    Some("zstd") => 4,
                    other => panic!("{}: source {:?} ({other:?})", path.display(), s.name),
                };
                each(&path, codec, comp, s);
            }
        }
    }
}

#[test]
fn size_only_decompression_agrees_on_every_captured_payload() {
    let mut seen = 0;
    captured_payloads(|path, codec, comp, s| {
        let size = compression::decompressed_len(codec, comp, 64 << 20).unwrap();
        assert_eq!(size.len, s.data.len(), "{}: {}", path.display(), s.name);
        assert_eq!(size.len, s.len);
        let full = decompress(codec, comp, 64 << 20).unwrap();
        assert_eq!(
            (full.data.as_slice(), full.note),
            (s.data.as_slice(), size.note)
        );
        seen += 1;
    });
    // captures/a2 alone holds batches of every codec.
    assert!(seen >= 4, "only {seen} compressed payloads found");
}

/// What `stats` reads from the nodes of a headers-only decode (as
/// `stats::facts` does), in the shape of [`SetCounts`].
fn counts_of(nodes: &[Node], sources: &[ByteSource]) -> SetCounts {
    let mut c = SetCounts::default();
    let int = |n: &Node, name: &str| match n.child(name).map(|c| &c.value) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    };
    for n in nodes {
        match &*n.name {
            "RecordBatch" if n.ty == "v2" => {}
            "partial batch" | "partial message" => {
                c.partial += 1;
                continue;
            }
            _ => continue,
        }
        c.batches += 1;
        let get = |name| int(n, name).unwrap_or(-1);
        c.heads.push(BatchHead {
            base_offset: get("baseOffset"),
            last_offset_delta: get("lastOffsetDelta") as i32,
            max_timestamp: get("maxTimestamp"),
            attributes: get("attributes") as i16,
            producer_id: get("producerId"),
            producer_epoch: get("producerEpoch") as i16,
            base_sequence: get("baseSequence") as i32,
            crc: n.child("crc").and_then(stored_crc).unwrap_or(0),
            records: get("recordsCount") as i32,
            bytes: n.length as u64,
        });
        c.records += int(n, "recordsCount")
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0);
        let name = int(n, "attributes").map_or("none", |a| codec_name(a as i16));
        c.codecs
            .add(int(n, "attributes").map_or(0, |a| (a & 0x07) as u8), 1);
        if name == "none" {
            c.plain_bytes += n.length as u64;
        }
        for s in sources.iter().filter(|s| {
            s.parent == n.source && s.parent_offset >= n.offset && s.parent_offset < n.end()
        }) {
            c.compressed += s.parent_length as u64;
            c.decompressed += s.len as u64;
        }
    }
    c
}

/// `count_record_set` against the headers-only decode of the same set.
fn agree(set: &[u8], opts: &DecodeOptions, held: &[ByteSource]) -> Option<SetCounts> {
    let mut s1 = held.to_vec();
    let rs = decode_record_set(set, 7, 0, opts, &mut s1);
    let mut s2 = held.to_vec();
    let counted = count_record_set(set, 7, opts, &mut s2);
    match &counted {
        Some(c) => {
            assert!(
                rs.problem.is_none(),
                "counted a set with a problem: {:?}",
                rs.problem
            );
            assert_eq!(c, &counts_of(&rs.nodes, &s1));
            let lens = |s: &[ByteSource]| {
                s.iter()
                    .map(|x| (x.len, x.parent_offset, x.parent_length))
                    .collect::<Vec<_>>()
            };
            assert_eq!(lens(&s1), lens(&s2));
        }
        None => assert_eq!(s2, held, "sources left behind"),
    }
    counted
}

fn headers_only(max: usize) -> DecodeOptions {
    DecodeOptions {
        records: true,
        records_headers_only: true,
        max_decompressed: max,
        ..DecodeOptions::default()
    }
}

#[test]
fn counted_record_sets_agree_with_the_headers_only_decode() {
    let recs = sample(20);
    let mut set = record_batch(0, 20, &recs);
    for codec in 1..=4 {
        set.extend_from_slice(&record_batch(codec, 20, &compress(codec, &recs)));
    }
    let opts = headers_only(64 << 20);
    let whole = agree(&set, &opts, &[]).expect("v2 batches are counted");
    assert_eq!((whole.batches, whole.records, whole.partial), (5, 100, 0));
    assert_eq!(whole.decompressed, 4 * recs.len() as u64);
    // Every cut: a partial batch at the end, never a problem.
    for cut in 0..set.len() {
        assert!(agree(&set[..cut], &opts, &[]).is_some(), "cut at {cut}");
    }
    // Every flipped byte: counted only when the decoder sees no problem.
    for i in 0..set.len() {
        let mut q = set.clone();
        q[i] ^= 0x40;
        agree(&q, &opts, &[]);
    }
    // Limits: per batch, and the message budget already used by other sets.
    for max in [0, 10, recs.len() - 1, recs.len(), recs.len() + 1] {
        agree(&set, &headers_only(max), &[]);
    }
    let held = ByteSource {
        name: String::new(),
        data: Vec::new(),
        len: 4 * recs.len() - 10,
        parent: 0,
        parent_offset: 0,
        parent_length: 1,
    };
    agree(&set, &headers_only(recs.len()), &[held]);
    // Legacy messages and unknown magic are left to the decoder.
    let legacy = legacy_message(1, 0, 0, None, b"v");
    assert_eq!(agree(&legacy, &opts, &[]), None);
    let mut magic = record_batch(0, 1, &recs);
    magic[16] = 7;
    assert_eq!(agree(&magic, &opts, &[]), None);
    assert_eq!(agree(&[], &opts, &[]), Some(SetCounts::default()));
}

/// Bytes that do not compress (xorshift), for LZ4's uncompressed blocks.
fn noise(n: usize) -> Vec<u8> {
    noise_from(n, 0x9E37_79B9_7F4A_7C15)
}

/// [`noise`] from a seed of its own.
fn noise_from(n: usize, mut x: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn lz4_with(info: lz4_flex::frame::FrameInfo, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// How [`zstd_streamed`] compresses.
#[derive(Clone, Copy, Debug)]
struct Zstd {
    level: i32,
    checksum: bool,
    /// 0: the level's default.
    window_log: u32,
    long_distance: bool,
    /// Bytes written between flushes (each flush ends a block); 0: one write.
    chunk: usize,
}

impl Zstd {
    fn level(level: i32) -> Self {
        Zstd {
            level,
            checksum: false,
            window_log: 0,
            long_distance: false,
            chunk: 0,
        }
    }
}

/// zstd's streaming encoder as Kafka's Java producer drives it (zstd-jni's
/// `ZstdOutputStream`): no `Frame_Content_Size`.
fn zstd_streamed(data: &[u8], o: Zstd) -> Vec<u8> {
    use std::io::Write;
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), o.level).unwrap();
    e.include_contentsize(false).unwrap();
    e.include_checksum(o.checksum).unwrap();
    if o.window_log > 0 {
        e.window_log(o.window_log).unwrap();
    }
    if o.long_distance {
        e.long_distance_matching(true).unwrap();
    }
    if o.chunk == 0 {
        e.write_all(data).unwrap();
    } else {
        for c in data.chunks(o.chunk) {
            e.write_all(c).unwrap();
            e.flush().unwrap();
        }
    }
    e.finish().unwrap()
}

/// Whether the first frame of `z` declares no content size (its header's
/// `Frame_Content_Size_Flag` is 0 and it is not single-segment).
fn zstd_without_size(z: &[u8]) -> bool {
    z.len() > 4 && z[4] & 0xE0 == 0
}

/// Payloads whose declared size `declared_len` must read (codec, bytes,
/// what), most of them around `a`.
fn declaring_payloads(a: &[u8]) -> Vec<(u8, Vec<u8>, &'static str)> {
    use lz4_flex::frame::{BlockMode, BlockSize, FrameInfo};
    let a = a.to_vec();
    let b = sample(7);
    let mut v = vec![
        (1, compress(1, &a), "gzip"),
        (1, compress(1, &[]), "gzip, empty"),
        (1, gzip_named(&a), "gzip, named"),
        (2, compress(2, &a), "snappy raw"),
        (2, xerial(&[&a, &b, &[]]), "snappy xerial"),
        (2, xerial(&[]), "snappy xerial, no chunk"),
        (3, compress(3, &a), "lz4"),
        (3, compress(3, &[]), "lz4, empty"),
        (4, compress(4, &a), "zstd"),
        (4, compress(4, &[]), "zstd, empty"),
        (4, zstd::bulk::compress(&a, 19).unwrap(), "zstd level 19"),
    ];
    let mut two = compress(4, &a);
    two.extend_from_slice(&compress(4, &b));
    v.push((4, two, "zstd, two frames"));
    let mut skip = vec![0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 1, 2, 3];
    skip.extend_from_slice(&compress(4, &b));
    skip.extend_from_slice(&[0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0]);
    v.push((4, skip, "zstd, skippable frames"));
    let big = noise(300_000);
    v.push((
        4,
        zstd::bulk::compress(&big, 1).unwrap(),
        "zstd, raw blocks",
    ));
    v.push((
        4,
        zstd::bulk::compress(&vec![7u8; 300_000], 1).unwrap(),
        "zstd, RLE",
    ));
    // Without a content size: the blocks are walked.
    let streamed = [
        (Zstd::level(3), "zstd streamed"),
        (Zstd::level(19), "zstd streamed, level 19"),
        (Zstd::level(-5), "zstd streamed, level -5"),
        (
            Zstd {
                checksum: true,
                ..Zstd::level(1)
            },
            "zstd streamed, checksum",
        ),
        (
            Zstd {
                chunk: 700,
                ..Zstd::level(3)
            },
            "zstd streamed, flushed every 700 bytes",
        ),
        (
            Zstd {
                window_log: 10,
                ..Zstd::level(9)
            },
            "zstd streamed, 1 KiB window",
        ),
    ];
    for (o, what) in streamed {
        v.push((4, zstd_streamed(&a, o), what));
    }
    v.push((
        4,
        zstd_streamed(&big, Zstd::level(3)),
        "zstd streamed, raw blocks",
    ));
    v.push((
        4,
        zstd_streamed(&vec![7u8; 300_000], Zstd::level(3)),
        "zstd streamed, RLE",
    ));
    let mut long = sample(20_000);
    long.extend_from_slice(&noise(150_000));
    long.extend_from_slice(&sample(20_000));
    v.push((
        4,
        zstd_streamed(&long, Zstd::level(12)),
        "zstd streamed, repeat tables, far matches",
    ));
    let mut sized_then_streamed = compress(4, &b);
    sized_then_streamed.extend_from_slice(&zstd_streamed(&a, Zstd::level(3)));
    v.push((
        4,
        sized_then_streamed,
        "zstd, sized frame then streamed frame",
    ));
    let sized = FrameInfo::new().content_size(Some(a.len() as u64));
    v.push((3, lz4_with(sized, &a), "lz4, content size"));
    let checks = FrameInfo::new()
        .block_checksums(true)
        .content_checksum(true)
        .block_size(BlockSize::Max256KB);
    v.push((3, lz4_with(checks, &a), "lz4, checksums"));
    v.push((
        3,
        lz4_with(FrameInfo::new(), &big),
        "lz4, uncompressed blocks",
    ));
    let mut mixed = noise(70_000);
    mixed.extend_from_slice(&a);
    v.push((3, lz4_with(FrameInfo::new(), &mixed), "lz4, mixed blocks"));
    let linked = FrameInfo::new()
        .block_mode(BlockMode::Linked)
        .content_size(Some(mixed.len() as u64));
    v.push((3, lz4_with(linked, &mixed), "lz4, linked with size"));
    let mut frames = compress(3, &a);
    frames.extend_from_slice(&compress(3, &b));
    v.push((3, frames, "lz4, two frames"));
    let mut old = compress(3, &a);
    let hc_at = compression::lz4_descriptor_end(&old).unwrap();
    old[hc_at] = (compression::xxh32(&old[..hc_at], 0) >> 8) as u8;
    v.push((3, old, "lz4, pre-KIP-57 header checksum"));
    v
}

/// Payloads that must be decoded to be known: `declared_len` says `None`.
fn undeclaring_payloads(a: &[u8]) -> Vec<(u8, Vec<u8>, &'static str)> {
    use lz4_flex::frame::{BlockMode, FrameInfo};
    let a = a.to_vec();
    let b = sample(7);
    let mut two = compress(1, &a);
    two.extend_from_slice(&compress(1, &b));
    // A window over what the decoder always accepts (8 MiB).
    let wide = zstd_streamed(
        &a,
        Zstd {
            window_log: 24,
            ..Zstd::level(3)
        },
    );
    let mut mixed = noise(70_000);
    mixed.extend_from_slice(&a);
    let linked = FrameInfo::new().block_mode(BlockMode::Linked);
    vec![
        (1, two, "gzip, two members"),
        (4, wide, "zstd, 16 MiB window"),
        (3, lz4_with(linked, &mixed), "lz4, linked blocks"),
        (5, a.clone(), "codec 5"),
        (0, a, "none"),
    ]
}

/// `declared_len` is `None` or what the decoder makes; when both answer for
/// damaged bytes, they agree too.
fn declared_agrees(codec: u8, p: &[u8], what: &str) {
    let real = decompress(codec, p, usize::MAX).map(|o| o.data.len());
    if let (Some(d), Ok(n)) = (declared::declared_len(codec, p), &real) {
        assert_eq!(d, *n, "{what}: {} bytes", p.len());
    }
}

#[test]
fn declared_sizes_are_the_decompressed_sizes() {
    for (codec, p, what) in declaring_payloads(&sample(3000)) {
        let real = decompress(codec, &p, usize::MAX).unwrap().data.len();
        assert_eq!(declared::declared_len(codec, &p), Some(real), "{what}");
        if what.starts_with("zstd streamed") {
            assert!(zstd_without_size(&p), "{what}: has a content size");
        }
    }
    for (codec, p, what) in undeclaring_payloads(&sample(3000)) {
        assert_eq!(declared::declared_len(codec, &p), None, "{what}");
        // Decodable, but only by decoding (codec 5: refused by the decoder).
        assert_eq!(
            decompress(codec, &p, usize::MAX).is_ok(),
            codec <= 4,
            "{what}"
        );
    }
    // The LZ4 decoder refuses a skippable frame: so it is left to it.
    let mut lz_skip = vec![0x50, 0x2A, 0x4D, 0x18, 0, 0, 0, 0];
    lz_skip.extend_from_slice(&compress(3, b"abc"));
    assert_eq!(declared::declared_len(3, &lz_skip), None);
    assert!(decompress(3, &lz_skip, usize::MAX).is_err());
    for (codec, p, _) in payloads().into_iter().map(|(c, p)| (c, p, "")) {
        declared_agrees(codec, &p, "payloads()");
    }
}

#[test]
fn damaged_payloads_never_panic_and_agree_when_both_answer() {
    let a = sample(40);
    for (codec, p, what) in declaring_payloads(&a)
        .into_iter()
        .chain(undeclaring_payloads(&a))
        .filter(|(_, p, _)| p.len() < 20_000)
    {
        for cut in 0..p.len() {
            declared_agrees(codec, &p[..cut], what);
        }
        for i in 0..p.len() {
            for bit in [0x01, 0x40, 0x80] {
                let mut q = p.clone();
                q[i] ^= bit;
                declared_agrees(codec, &q, what);
            }
        }
    }
    // Big payloads: cuts and flips around the framing only.
    for (codec, p, what) in declaring_payloads(&a)
        .into_iter()
        .filter(|(_, p, _)| p.len() >= 20_000)
    {
        let n = p.len();
        for i in (0..64).chain(n - 64..n).chain((0..n).step_by(997)) {
            declared_agrees(codec, &p[..i], what);
            let mut q = p.clone();
            q[i] ^= 0x40;
            declared_agrees(codec, &q, what);
        }
    }
}

#[test]
fn lz4_block_walk_rejects_inconsistent_blocks() {
    use super::declared::lz4_block_len;
    // 4 literals "abcd", then a match at offset 4 of 4 + 4 bytes, then 1 literal.
    let ok = [0x44, b'a', b'b', b'c', b'd', 4, 0, 0x10, b'e'];
    assert_eq!(lz4_block_len(&ok, 1 << 16), Some(13));
    assert_eq!(lz4_block_len(&ok, 12), None, "over the block maximum");
    let mut far = ok;
    far[5] = 5; // offset before the block's start
    assert_eq!(lz4_block_len(&far, 1 << 16), None);
    let mut zero = ok;
    zero[5] = 0;
    assert_eq!(lz4_block_len(&zero, 1 << 16), None);
    // One byte after the last literals: neither the end nor an offset.
    assert_eq!(lz4_block_len(&[0x10, b'a'], 1 << 16), Some(1));
    assert_eq!(lz4_block_len(&[0x10, b'a', 0], 1 << 16), None);
    // The maximum passed by a match before the last literals.
    assert_eq!(lz4_block_len(&ok, 8), None);
    assert_eq!(lz4_block_len(&ok, 0), None);
    // Ends after a match, or inside an offset: not a block's end.
    assert_eq!(lz4_block_len(&ok[..7], 1 << 16), None);
    assert_eq!(lz4_block_len(&ok[..6], 1 << 16), None);
    assert_eq!(lz4_block_len(&[], 1 << 16), None);
    // Literal length past the block.
    assert_eq!(lz4_block_len(&[0x50, 1, 2], 1 << 16), None);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The LZ4 block walk against the reference walk and the real decoder:
    /// real blocks of mixed bytes (whole, cut, with a byte changed) and
    /// random bytes, under limits around the true size.
    #[test]
    fn lz4_block_walk_agrees_with_the_reference_and_the_decoder(
        seed in proptest::prelude::any::<u64>(),
        len in 0..20_000usize,
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        flip in proptest::option::of((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>())),
        noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        slack in 0..3usize,
    ) {
        use super::declared::lz4_block_len;
        let data = mixed(seed, len);
        let block = lz4_flex::block::compress(&data);
        let max = |n: usize| [n, n.saturating_sub(1), 1 << 22][slack];
        proptest::prop_assert_eq!(lz4_block_len(&block, max(len)), lz4_block_len_reference(&block, max(len)));
        if slack != 1 {
            proptest::prop_assert_eq!(lz4_block_len(&block, max(len)), Some(len));
        }
        let mut damaged = block.clone();
        if let (Some((at, x)), false) = (flip, damaged.is_empty()) {
            let i = at.index(damaged.len());
            damaged[i] ^= x;
        } else {
            damaged.truncate(cut.index(damaged.len() + 1));
        }
        let walked = lz4_block_len(&damaged, 1 << 22);
        proptest::prop_assert_eq!(walked, lz4_block_len_reference(&damaged, 1 << 22));
        // Where the decoder succeeds, the walk says what it made.
        if let (Ok(real), Some(n)) = (lz4_flex::block::decompress(&damaged, 1 << 22), walked) {
            proptest::prop_assert_eq!(real.len(), n);
        }
        for m in [0, 1, 100, 1 << 16] {
            proptest::prop_assert_eq!(lz4_block_len(&noise, m), lz4_block_len_reference(&noise, m));
        }
    }
}

#[test]
fn declared_sizes_agree_on_every_captured_payload() {
    let (mut seen, mut declared) = (0, 0);
    // zstd payloads: all, without a content size, and declared.
    let (mut zstd, mut no_size, mut zstd_declared) = (0, 0, 0);
    captured_payloads(|path, codec, comp, s| {
        seen += 1;
        let d = declared::declared_len(codec, comp);
        if let Some(n) = d {
            assert_eq!(n, s.len, "{}: {}", path.display(), s.name);
            declared += 1;
        }
        if codec == 4 {
            zstd += 1;
            no_size += usize::from(zstd_without_size(comp));
            // Every zstd payload a producer sent declares its size, by its
            // frame header or by its blocks.
            assert_eq!(d, Some(s.len), "{}: {}", path.display(), s.name);
            zstd_declared += 1;
        }
    });
    eprintln!(
        "{declared} of {seen} compressed payloads declared; zstd: {zstd_declared} of {zstd} \
         ({no_size} without a content size)"
    );
    assert!(seen >= 4, "only {seen} compressed payloads found");
    // Every codec of captures/a2 declares its size.
    assert!(declared >= 4, "only {declared} of {seen} declared");
    assert!(zstd >= 1, "no zstd payload in the captures");
}

/// A batch whose CRC matches but whose compressed data is broken: counted
/// with the size its framing declares (the documented exception); with a
/// CRC that does not match, declined to the decoder as before.
#[test]
fn a_crc_verified_batch_is_counted_by_its_declared_size() {
    let recs = sample(20);
    let opts = headers_only(64 << 20);
    let mut z = compress(4, &recs);
    let n = z.len();
    z[n / 2] ^= 0xff; // inside the compressed block, headers intact
    assert!(decompress(4, &z, 1 << 20).is_err());
    assert_eq!(declared::declared_len(4, &z), Some(recs.len()));
    let set = record_batch(4, 20, &z);
    let mut sources = Vec::new();
    let c = count_record_set(&set, 0, &opts, &mut sources).expect("counted");
    assert_eq!(
        (c.compressed, c.decompressed),
        (n as u64, recs.len() as u64)
    );
    let mut bad = set.clone();
    bad[17] ^= 1; // the stored CRC
    assert_eq!(count_record_set(&bad, 0, &opts, &mut Vec::new()), None);
    // Over the limit: the decoder's answer (refused), as before.
    let whole = record_batch(4, 20, &compress(4, &recs));
    let c = count_record_set(&whole, 0, &headers_only(recs.len() - 1), &mut Vec::new());
    assert_eq!(c.map(|c| (c.batches, c.decompressed)), Some((1, 0)));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Streamed zstd (no content size) of every level, window, flush
    /// pattern and frame count: the blocks declare exactly what the decoder
    /// makes.
    #[test]
    fn streamed_zstd_declares_its_decompressed_size(
        seed in proptest::prelude::any::<u64>(),
        len in proptest::prop_oneof![0..2_000usize, 2_000..70_000usize, 70_000..1_100_000usize],
        level in -5i32..=19,
        checksum in proptest::prelude::any::<bool>(),
        window_log in proptest::prop_oneof![proptest::strategy::Just(0u32), 10u32..=23],
        long_distance in proptest::prelude::any::<bool>(),
        chunk in proptest::prop_oneof![proptest::strategy::Just(0usize), 1usize..200_000],
        frames in 1usize..=3,
    ) {
        // High levels are slow in test builds: they get the smaller inputs.
        let level = if len > 100_000 { level.min(6) } else { level };
        let data = mixed(seed, len);
        let o = Zstd {
            level,
            checksum,
            window_log,
            // Without a window log, long-distance matching asks for 128 MiB.
            long_distance: long_distance && window_log > 0,
            // At most ~64 flushes.
            chunk: if chunk > 0 { chunk.max(len / 64) } else { 0 },
        };
        let mut p = Vec::new();
        for part in data.chunks(len.div_ceil(frames).max(1)) {
            p.extend_from_slice(&zstd_streamed(part, o));
        }
        if data.is_empty() {
            p = zstd_streamed(&data, o);
        }
        proptest::prop_assert!(zstd_without_size(&p));
        let real = zstd::stream::decode_all(&p[..]).unwrap();
        proptest::prop_assert_eq!(real.len(), data.len());
        proptest::prop_assert_eq!(declared::declared_len(4, &p), Some(real.len()), "{:?}", o);
    }

    /// Cut and bit-flipped streamed zstd: never a panic, and never a size
    /// other than the decoder's when the decoder succeeds.
    #[test]
    fn damaged_streamed_zstd_never_disagrees_with_the_decoder(
        seed in proptest::prelude::any::<u64>(),
        len in 0..30_000usize,
        level in -5i32..=19,
        checksum in proptest::prelude::any::<bool>(),
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        flips in proptest::collection::vec(
            (proptest::prelude::any::<proptest::sample::Index>(), 0u8..8),
            0..4,
        ),
    ) {
        let o = Zstd { checksum, ..Zstd::level(level) };
        let mut p = zstd_streamed(&mixed(seed, len), o);
        for (at, bit) in &flips {
            let i = at.index(p.len());
            p[i] ^= 1 << bit;
        }
        if flips.is_empty() {
            p.truncate(cut.index(p.len()));
        }
        declared_agrees(4, &p, "damaged streamed zstd");
    }
}

/// Many damaged streamed payloads: how often the block walk declines, agrees
/// with the decoder, or answers where the decoder fails (bytes inside a
/// Huffman stream or the checksum: the documented "CRC-valid but broken"
/// exception). Never a disagreement, never a panic.
#[test]
fn damaged_streamed_zstd_outcomes_are_counted() {
    let (mut declined, mut agreed, mut exception) = (0, 0, 0);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for n in 0..60u64 {
        let o = Zstd {
            checksum: n.is_multiple_of(3),
            ..Zstd::level([-3, 1, 3, 9, 19][n as usize % 5])
        };
        let p = zstd_streamed(&mixed(n, 200 + (n as usize * 397) % 9_000), o);
        for _ in 0..40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut q = p.clone();
            let i = 6 + x as usize % (q.len() - 6); // past the frame header
            q[i] ^= 1 << ((x >> 40) % 8);
            if x.is_multiple_of(4) {
                q.truncate(i);
            }
            let real = decompress(4, &q, usize::MAX).map(|o| o.data.len());
            match (declared::declared_len(4, &q), real) {
                (None, _) => declined += 1,
                (Some(d), Ok(r)) => {
                    assert_eq!(d, r, "payload {n}, byte {i}");
                    agreed += 1;
                }
                (Some(_), Err(_)) => exception += 1,
            }
        }
    }
    eprintln!(
        "damaged streamed zstd: {declined} declined, {agreed} agreed, \
         {exception} declared where the decoder fails"
    );
    assert_eq!(declined + agreed + exception, 60 * 40);
    assert!(declined > exception, "the walk should catch most damage");
}

/// Hand-built frames: one compressed block, raw literals, RLE tables.
#[test]
fn zstd_block_walk_reads_hand_built_blocks() {
    // Magic; frame header descriptor 0 (no content size, no checksum, not
    // single-segment); window descriptor 0 (1 KiB).
    let frame = |block: &[u8]| {
        let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00];
        // Block header: last, compressed, size.
        let h = (block.len() as u32) << 3 | 2 << 1 | 1;
        f.extend_from_slice(&h.to_le_bytes()[..3]);
        f.extend_from_slice(block);
        f
    };
    let block = |modes: u8, codes: &[u8], stream: &[u8]| {
        let mut b = vec![
            4 << 3, // raw literals, 4 bytes
            b'a',
            b'b',
            b'c',
            b'd',  //
            1,     // one sequence
            modes, // LL, OF, ML modes; 2 reserved bits
        ];
        b.extend_from_slice(codes);
        b.extend_from_slice(stream);
        b
    };
    // RLE tables (01 01 01 00): literal length code 4 (4), offset code 2
    // (Offset_Value 4 + 2 bits), match length code 5 (8). The stream: the
    // padding bit, then the 2 offset bits 0b11: Offset_Value 7, offset 4.
    let good = frame(&block(0x54, &[4, 2, 5], &[0b111]));
    let check = |f: &[u8], want: Option<usize>, what: &str| {
        assert_eq!(declared::declared_len(4, f), want, "{what}");
        let real = zstd::stream::decode_all(f).ok().map(|d| d.len());
        assert_eq!(real, want, "{what}: the decoder");
    };
    check(&good, Some(12), "abcd + 8 bytes copied");
    // Offset code 3 with bits 0: offset 5, before the frame's start. The
    // walk reads offsets' bits, not their values: it declares the size,
    // the decoder refuses (a CRC-verified batch with such bytes is the
    // documented exception).
    let far = frame(&block(0x54, &[4, 3, 5], &[0b1000]));
    assert_eq!(declared::declared_len(4, &far), Some(12));
    assert!(zstd::stream::decode_all(&far[..]).is_err());
    // A bit left over before the padding.
    check(
        &frame(&block(0x54, &[4, 2, 5], &[0b1111])),
        None,
        "bit left over",
    );
    // No padding bit at all.
    check(&frame(&block(0x54, &[4, 2, 5], &[0])), None, "no padding");
    // Literal length 5 (code 5) of 4 literals.
    check(
        &frame(&block(0x54, &[5, 2, 5], &[0b111])),
        None,
        "literals overrun",
    );
    // Reserved bits of the modes byte; "repeat" modes in a first block.
    check(&frame(&block(0x55, &[4, 2, 5], &[0b111])), None, "reserved");
    check(&frame(&block(0xFC, &[], &[0b111])), None, "repeat first");
    // RLE code beyond the offset codes.
    check(
        &frame(&block(0x54, &[4, 32, 5], &[0b111])),
        None,
        "offset code 32",
    );
    // No sequences: the block ends right after the count.
    check(
        &frame(&[4 << 3, b'a', b'b', b'c', b'd', 0]),
        Some(4),
        "literals only",
    );
    check(
        &frame(&[4 << 3, b'a', b'b', b'c', b'd', 0, 0]),
        None,
        "a byte more",
    );
    // Treeless literals (type 3) with no Huffman table yet in the frame.
    check(
        &frame(&[0x03 | 4 << 4, 0, 0, 0, 0, 0]),
        None,
        "treeless first",
    );
}

/// Sequences of more than 56 bits (offsets past 4 MiB: 22 extra bits, match
/// lengths of 16, literal lengths of 11, plus the state bits), which the
/// walk reads field by field: real ones from the encoder, and a hand-built
/// one of 57 bits.
#[test]
fn zstd_walk_reads_sequences_of_more_than_56_bits() {
    let noise = noise_from;
    let a = noise(4_300_000, 1);
    let mut data = a.clone();
    for i in 0..40 {
        data.extend_from_slice(&noise(3_000, 100 + i as u64));
        data.extend_from_slice(&a[i * 70_000..(i + 1) * 70_000]);
    }
    let o = Zstd {
        window_log: 23,
        ..Zstd::level(3)
    };
    let z = zstd_streamed(&data, o);
    assert!(zstd_without_size(&z));
    assert_eq!(declared::declared_len(4, &z), Some(data.len()));

    // One sequence, RLE tables (no state bits): literal length code 34
    // (32768 + 15 bits), offset code 26 (26 bits), match length code 52
    // (65539 + 16 bits): 57 bits, all zero, then the padding bit.
    // Raw literals, 3-byte header (Size_Format 11): 32768 = 0x8000.
    let mut block = vec![0b1100, 0x00, 0x08];
    block.extend(std::iter::repeat_n(b'x', 32768));
    // One sequence; modes RLE, RLE, RLE; codes LL 34, OF 26, ML 52.
    block.extend_from_slice(&[1, 0x54, 34, 26, 52]);
    // 57 zero bits (bytes 0-6 and bit 0 of byte 7), the padding bit above.
    block.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0b10]);
    let mut f = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 7 << 3]; // 128 KiB window
    let h = (block.len() as u32) << 3 | 2 << 1 | 1;
    f.extend_from_slice(&h.to_le_bytes()[..3]);
    f.extend_from_slice(&block);
    assert_eq!(declared::declared_len(4, &f), Some(32768 + 65539));
    // One bit more in the stream: not consumed exactly.
    let n = f.len();
    f[n - 1] = 0b100;
    assert_eq!(declared::declared_len(4, &f), None);
    // Offset code 25: 56 bits, the one-window path.
    f[n - 1] = 0b1;
    f[n - 10] = 25;
    assert_eq!(declared::declared_len(4, &f), Some(32768 + 65539));
}

/// `declared::lz4_block_len` as first written, every sum checked: the
/// reference the fast walk's accept/reject decisions are tested against
/// (lz4_flex's decoder checks only the blocks it accepts).
fn lz4_block_len_reference(block: &[u8], max: usize) -> Option<usize> {
    let mut i = 0usize;
    let mut out = 0usize;
    loop {
        let token = *block.get(i)?;
        i += 1;
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            loop {
                let b = *block.get(i)?;
                i += 1;
                lit += usize::from(b);
                if b != 255 {
                    break;
                }
            }
        }
        i = i.checked_add(lit)?;
        out = out.checked_add(lit)?;
        if i > block.len() || out > max {
            return None;
        }
        if i == block.len() {
            return Some(out);
        }
        let offset: [u8; 2] = block.get(i..i.checked_add(2)?)?.try_into().ok()?;
        let offset = usize::from(u16::from_le_bytes(offset));
        i += 2;
        if offset == 0 || offset > out {
            return None;
        }
        let mut ml = usize::from(token & 15);
        if ml == 15 {
            loop {
                let b = *block.get(i)?;
                i += 1;
                ml += usize::from(b);
                if b != 255 {
                    break;
                }
            }
        }
        out = out.checked_add(ml + 4)?;
        if out > max {
            return None;
        }
    }
}
