//! Decompression of record data, bounded by a byte limit.
//!
//! Place in the data path: a compressed RecordBatch (or legacy wrapper
//! message) hands its compressed bytes here; the output becomes a new byte
//! source. Invariant: no codec ever produces more than `limit + 1` bytes
//! before it is stopped — the gzip, lz4 and zstd streams are read through a
//! `take(limit + 1)`, snappy's declared lengths are checked before any buffer
//! is allocated — so a decompression bomb costs at most the limit.

use std::fmt;
use std::io::Read;

/// Kafka's codec numbers (attributes bits 0–2).
pub const CODEC_NONE: u8 = 0;
/// gzip.
pub const CODEC_GZIP: u8 = 1;
/// snappy (raw, or in the xerial/snappy-java framing).
pub const CODEC_SNAPPY: u8 = 2;
/// LZ4 frame format.
pub const CODEC_LZ4: u8 = 3;
/// Zstandard.
pub const CODEC_ZSTD: u8 = 4;

/// The name of the codec in attributes bits 0–2 (`none`, `gzip`, …, `codec 5`).
pub fn codec_name(attributes: i16) -> &'static str {
    match attributes & 0x07 {
        0 => "none",
        1 => "gzip",
        2 => "snappy",
        3 => "lz4",
        4 => "zstd",
        5 => "codec 5",
        6 => "codec 6",
        _ => "codec 7",
    }
}

/// Why decompression stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InflateError {
    /// The output would exceed the limit.
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The compressed bytes are not valid for the codec.
    Corrupt {
        /// The codec's name.
        codec: &'static str,
        /// What the codec reported.
        what: String,
    },
    /// Attributes name a codec Kafka does not define.
    UnknownCodec(u8),
}

impl fmt::Display for InflateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InflateError::TooLarge { limit } => {
                write!(f, "decompressed size exceeds the limit of {limit} bytes")
            }
            InflateError::Corrupt { codec, what } => write!(f, "{codec} data is corrupt: {what}"),
            InflateError::UnknownCodec(c) => write!(f, "unknown compression codec {c}"),
        }
    }
}

impl std::error::Error for InflateError {}

/// Decompressed bytes and how they were framed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inflated {
    /// The output.
    pub data: Vec<u8>,
    /// A remark on the framing (`xerial framing`, `pre-KIP-57 LZ4 header checksum`).
    pub note: Option<&'static str>,
}

/// The snappy-java ("xerial") stream magic.
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";

/// Decompresses `data` with `codec`, refusing to produce more than `limit` bytes.
pub fn decompress(codec: u8, data: &[u8], limit: usize) -> Result<Inflated, InflateError> {
    let mut out = Vec::new();
    let note = run(codec, data, limit, &mut Sink::Keep(&mut out))?;
    Ok(Inflated { data: out, note })
}

/// What a payload decompresses to, without keeping the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InflatedSize {
    /// The decompressed length.
    pub len: usize,
    /// As [`Inflated::note`].
    pub note: Option<&'static str>,
}

/// The size `data` declares for `codec`, read without decompressing, as
/// `stats` reads it for a CRC-verified batch (`None`: it must be decoded).
/// Public for the walks' bench (`benches/walks.rs`) and the fuzz harnesses
/// (`harness/`) only.
#[doc(hidden)]
pub fn declared_len(codec: u8, data: &[u8]) -> Option<usize> {
    super::declared::declared_len(codec, data)
}

/// The outcome of [`decompress`] (same codecs, same checks, same limit, the
/// same error for the same bytes) with only the length kept: the payload is
/// decoded into a reused per-thread scratch buffer and counted.
pub fn decompressed_len(
    codec: u8,
    data: &[u8],
    limit: usize,
) -> Result<InflatedSize, InflateError> {
    let mut sink = Sink::Count(0);
    let note = run(codec, data, limit, &mut sink)?;
    Ok(InflatedSize {
        len: sink.len(),
        note,
    })
}

/// Where decompressed bytes go. Both kinds see the same reads in the same
/// order, so [`decompress`] and [`decompressed_len`] agree by construction.
enum Sink<'a> {
    Keep(&'a mut Vec<u8>),
    Count(usize),
}

impl Sink<'_> {
    fn len(&self) -> usize {
        match self {
            Sink::Keep(v) => v.len(),
            Sink::Count(n) => *n,
        }
    }

    fn put(&mut self, b: &[u8]) {
        match self {
            Sink::Keep(v) => v.extend_from_slice(b),
            Sink::Count(n) => *n = n.saturating_add(b.len()),
        }
    }

    /// Forgets everything after the first `len` bytes.
    fn truncate(&mut self, len: usize) {
        match self {
            Sink::Keep(v) => v.truncate(len),
            Sink::Count(n) => *n = len.min(*n),
        }
    }
}

/// Decompresses `data` with `codec` into `sink`: the framing's remark.
fn run(
    codec: u8,
    data: &[u8],
    limit: usize,
    sink: &mut Sink<'_>,
) -> Result<Option<&'static str>, InflateError> {
    match codec {
        CODEC_NONE => {
            if data.len() > limit {
                Err(InflateError::TooLarge { limit })
            } else {
                sink.put(data);
                Ok(None)
            }
        }
        CODEC_GZIP => {
            if !gzip_single_member(data, limit, sink) {
                drain(flate2::read::MultiGzDecoder::new(data), limit, "gzip", sink)?;
            }
            Ok(None)
        }
        CODEC_SNAPPY => {
            if data.starts_with(XERIAL_MAGIC) {
                xerial(data, limit, sink)?;
                Ok(Some("xerial framing"))
            } else {
                snappy_block(data, limit, sink)?;
                Ok(None)
            }
        }
        CODEC_LZ4 => lz4(data, limit, sink),
        CODEC_ZSTD => {
            zstd(data, limit, sink)?;
            Ok(None)
        }
        other => Err(InflateError::UnknownCodec(other)),
    }
}

fn corrupt(codec: &'static str, what: impl fmt::Display) -> InflateError {
    InflateError::Corrupt {
        codec,
        what: what.to_string(),
    }
}

/// How many bytes one read of a decoder may ask for.
const CHUNK: usize = 64 << 10;

/// A scratch buffer bigger than this is not kept for the next payload.
const SCRATCH_KEEP: usize = 4 << 20;

thread_local! {
    /// Reused output space for decoders whose output is only counted, or
    /// copied from in chunks.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    /// One zstd decompression context per thread (making one costs more
    /// than decoding a small batch).
    static ZSTD_DCTX: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
    /// One raw-deflate state per thread, reset for each gzip member.
    static INFLATE: std::cell::RefCell<Option<flate2::Decompress>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the per-thread scratch buffer, at least `len` bytes long.
fn with_scratch<T>(len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    SCRATCH.with(|s| match s.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < len {
                buf.resize(len, 0);
            }
            let out = f(buf.get_mut(..len).unwrap_or(&mut []));
            if buf.len() > SCRATCH_KEEP {
                *buf = Vec::new();
            }
            out
        }
        // Not reentered in practice; a fresh buffer keeps it correct if it were.
        Err(_) => f(&mut vec![0; len]),
    })
}

/// Reads a decoder to its end into `sink`, but never more than `limit + 1`
/// bytes, asking for at most [`CHUNK`] bytes per read.
fn drain(
    mut rd: impl Read,
    limit: usize,
    codec: &'static str,
    sink: &mut Sink<'_>,
) -> Result<(), InflateError> {
    let start = sink.len();
    with_scratch(CHUNK, |buf| loop {
        let total = sink.len() - start;
        let want = (limit - total.min(limit)).saturating_add(1).min(buf.len());
        let Some(b) = buf.get_mut(..want) else {
            return Err(corrupt(codec, "no buffer"));
        };
        match rd.read(b) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                sink.put(b.get(..n).unwrap_or(&[]));
                if sink.len() - start > limit {
                    sink.truncate(start);
                    return Err(InflateError::TooLarge { limit });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                sink.truncate(start);
                return Err(corrupt(codec, e));
            }
        }
    })
}

/// The common gzip payload, decoded with a reused inflate state: one member
/// with a plain header (no flags but FTEXT), a deflate stream, a matching
/// CRC-32 and ISIZE, and nothing after it, within `limit`. Returns false
/// (having put nothing) for anything else, which `MultiGzDecoder` then
/// decides; when this accepts, `MultiGzDecoder` reads the same bytes.
fn gzip_single_member(data: &[u8], limit: usize, sink: &mut Sink<'_>) -> bool {
    // RFC 1952: ID1 ID2 CM FLG MTIME(4) XFL OS.
    let plain_header = matches!(data.get(..4), Some([0x1f, 0x8b, 8, flg]) if flg & !1 == 0);
    let (Some(deflate), true) = (data.get(10..), plain_header) else {
        return false;
    };
    let start = sink.len();
    let ok = INFLATE.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return false;
        };
        let d = slot.get_or_insert_with(|| flate2::Decompress::new(false));
        d.reset(false);
        let mut crc = crc32fast::Hasher::new();
        let mut input = deflate;
        let ended = with_scratch(CHUNK, |buf| loop {
            let total = sink.len() - start;
            let want = (limit - total.min(limit)).saturating_add(1).min(buf.len());
            let Some(b) = buf.get_mut(..want) else {
                return false;
            };
            let (in0, out0) = (d.total_in(), d.total_out());
            let status = match d.decompress(input, b, flate2::FlushDecompress::None) {
                Ok(s) => s,
                Err(_) => return false,
            };
            let used = usize::try_from(d.total_in() - in0).unwrap_or(usize::MAX);
            let made = usize::try_from(d.total_out() - out0).unwrap_or(usize::MAX);
            let (Some(rest), Some(out)) = (input.get(used..), b.get(..made)) else {
                return false;
            };
            input = rest;
            crc.update(out);
            sink.put(out);
            if sink.len() - start > limit {
                return false;
            }
            match status {
                flate2::Status::StreamEnd => return true,
                _ if used == 0 && made == 0 => return false,
                _ => {}
            }
        });
        // The trailer: CRC-32 and ISIZE (little-endian), then nothing.
        let size = (sink.len() - start) as u32;
        ended
            && matches!(input, [c0, c1, c2, c3, s0, s1, s2, s3]
                if u32::from_le_bytes([*c0, *c1, *c2, *c3]) == crc.clone().finalize()
                    && u32::from_le_bytes([*s0, *s1, *s2, *s3]) == size)
    });
    if !ok {
        sink.truncate(start);
    }
    ok
}

/// One raw snappy block; bytes already in the sink count against the limit.
fn snappy_block(block: &[u8], limit: usize, sink: &mut Sink<'_>) -> Result<(), InflateError> {
    // The block declares its output length up front: check it before allocating.
    let n = snap::raw::decompress_len(block).map_err(|e| corrupt("snappy", e))?;
    if n > limit.saturating_sub(sink.len()) {
        return Err(InflateError::TooLarge { limit });
    }
    let mut dec = snap::raw::Decoder::new();
    match sink {
        Sink::Keep(v) => {
            let old = v.len();
            v.resize(old + n, 0);
            let r = dec.decompress(block, v.get_mut(old..).unwrap_or(&mut []));
            match r {
                Ok(k) => v.truncate(old + k),
                Err(e) => {
                    v.truncate(old);
                    return Err(corrupt("snappy", e));
                }
            }
        }
        Sink::Count(c) => {
            let k = with_scratch(n, |buf| dec.decompress(block, buf))
                .map_err(|e| corrupt("snappy", e))?;
            *c = c.saturating_add(k);
        }
    }
    Ok(())
}

/// snappy-java's stream: the 8-byte magic, int32 version, int32 compatible
/// version, then blocks of [int32 compressed length][raw snappy block].
fn xerial(data: &[u8], limit: usize, sink: &mut Sink<'_>) -> Result<(), InflateError> {
    let start = sink.len();
    let mut r = crate::kafka::wire::Reader::new(data);
    let mut blocks = || {
        r.take(16)
            .map_err(|e| corrupt("snappy", format!("xerial header: {e}")))?;
        while r.remaining() > 0 {
            let len = r
                .i32()
                .map_err(|e| corrupt("snappy", format!("xerial block length: {e}")))?;
            let len = usize::try_from(len)
                .map_err(|_| corrupt("snappy", format!("negative xerial block length {len}")))?;
            let block = r
                .take(len)
                .map_err(|e| corrupt("snappy", format!("xerial block: {e}")))?;
            // The limit covers this payload only, not what the sink held before.
            snappy_block(block, limit.saturating_add(start), sink).map_err(|e| match e {
                InflateError::TooLarge { .. } => InflateError::TooLarge { limit },
                e => e,
            })?;
        }
        Ok(())
    };
    let res = blocks();
    // Nothing is kept from a stream that fails.
    if res.is_err() {
        sink.truncate(start);
    }
    res
}

fn zstd(data: &[u8], limit: usize, sink: &mut Sink<'_>) -> Result<(), InflateError> {
    // Bound the window a frame header may ask for: no more than the output
    // limit allows (but at least 8 MiB, what zstd's highest levels use), so a
    // hostile header cannot make the decoder reserve more than that.
    let need = usize::BITS - limit.max(1).leading_zeros();
    let window = need.clamp(23, 31);
    ZSTD_DCTX.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            let mut d =
                zstd::stream::read::Decoder::with_buffer(data).map_err(|e| corrupt("zstd", e))?;
            let _ = d.window_log_max(window);
            return drain(d, limit, "zstd", sink);
        };
        let ctx = match &mut *slot {
            Some(c) => c,
            None => match zstd::zstd_safe::DCtx::try_create() {
                Some(c) => slot.insert(c),
                None => return Err(corrupt("zstd", "cannot create a decompression context")),
            },
        };
        let mut d = zstd::stream::read::Decoder::with_context(data, ctx);
        let _ = d.window_log_max(window);
        drain(d, limit, "zstd", sink)
    })
}

const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

fn lz4(
    data: &[u8],
    limit: usize,
    sink: &mut Sink<'_>,
) -> Result<Option<&'static str>, InflateError> {
    // Kafka's clients before KIP-57 (message format v0) computed the frame
    // header checksum over the magic number too. Check which checksum the
    // header carries and decode a copy with the standard one, so both read.
    let (mut fixed, mut note) = (None, None);
    if let Some(hc_at) = lz4_descriptor_end(data) {
        let good = (xxh32(data.get(4..hc_at).unwrap_or(&[]), 0) >> 8) as u8;
        let stored = data.get(hc_at).copied();
        if stored != Some(good) {
            let broken = (xxh32(data.get(..hc_at).unwrap_or(&[]), 0) >> 8) as u8;
            note = Some(if stored == Some(broken) {
                "pre-KIP-57 LZ4 header checksum"
            } else {
                "LZ4 frame header checksum mismatch, ignored"
            });
            let mut f = data.to_vec();
            if let Some(b) = f.get_mut(hc_at) {
                *b = good;
            }
            fixed = Some(f);
        }
    }
    let frame = lz4_flex::frame::FrameDecoder::new(fixed.as_deref().unwrap_or(data));
    drain(frame, limit, "lz4", sink)?;
    Ok(note)
}

/// Where the header checksum byte of an LZ4 frame sits, if the frame starts
/// with the standard magic and its descriptor is complete.
pub(crate) fn lz4_descriptor_end(data: &[u8]) -> Option<usize> {
    if data.get(..4)? != LZ4_MAGIC {
        return None;
    }
    let flg = *data.get(4)?;
    let mut end = 6; // magic, FLG, BD
    if flg & 0x08 != 0 {
        end += 8; // content size
    }
    if flg & 0x01 != 0 {
        end += 4; // dictionary id
    }
    data.get(end).map(|_| end)
}

/// xxHash32 (the LZ4 frame format's header checksum hash).
pub(crate) fn xxh32(input: &[u8], seed: u32) -> u32 {
    twox_hash::XxHash32::oneshot(seed, input)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn xxh32_known_values() {
        // Reference values of the xxHash specification's implementation.
        assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
        assert_eq!(xxh32(b"a", 0), 0x550D_7456);
        assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
        assert_eq!(
            xxh32(b"Nobody inspects the spammish repetition", 0),
            0xE229_3B2F
        );
    }

    fn lz4_frame(data: &[u8]) -> Vec<u8> {
        let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn lz4_broken_header_checksum_is_read() {
        let data = b"hello hello hello hello".repeat(10);
        let mut f = lz4_frame(&data);
        let out = decompress(CODEC_LZ4, &f, 1 << 20).unwrap();
        assert_eq!((out.data.as_slice(), out.note), (data.as_slice(), None));
        // Recompute the checksum the pre-KIP-57 way: over magic + descriptor.
        let hc_at = lz4_descriptor_end(&f).unwrap();
        f[hc_at] = (xxh32(&f[..hc_at], 0) >> 8) as u8;
        let out = decompress(CODEC_LZ4, &f, 1 << 20).unwrap();
        assert_eq!(out.data, data);
        assert_eq!(out.note, Some("pre-KIP-57 LZ4 header checksum"));
    }

    #[test]
    fn every_codec_respects_the_limit() {
        let data = vec![0u8; 100_000];
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&data).unwrap();
            e.finish().unwrap()
        };
        let sn = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let lz = lz4_frame(&data);
        let zs = zstd::encode_all(&data[..], 1).unwrap();
        for (codec, c) in [(1, gz), (2, sn), (3, lz), (4, zs)] {
            assert_eq!(decompress(codec, &c, 100_000).unwrap().data, data);
            assert_eq!(
                decompress(codec, &c, 99_999),
                Err(InflateError::TooLarge { limit: 99_999 })
            );
        }
    }

    #[test]
    fn garbage_is_corrupt_not_a_panic() {
        for codec in 1..=4 {
            for junk in [
                &b""[..],
                b"\x82SNAPPY\x00",
                b"\x04\x22\x4d\x18\x68",
                b"\xff\xff\xff",
            ] {
                let _ = decompress(codec, junk, 1000);
            }
        }
        assert_eq!(decompress(5, b"", 10), Err(InflateError::UnknownCodec(5)));
    }
}
