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
    let plain = |data| Ok(Inflated { data, note: None });
    match codec {
        CODEC_NONE => {
            if data.len() > limit {
                Err(InflateError::TooLarge { limit })
            } else {
                plain(data.to_vec())
            }
        }
        CODEC_GZIP => plain(read_capped(
            flate2::read::MultiGzDecoder::new(data),
            limit,
            "gzip",
        )?),
        CODEC_SNAPPY => {
            if data.starts_with(XERIAL_MAGIC) {
                Ok(Inflated {
                    data: xerial(data, limit)?,
                    note: Some("xerial framing"),
                })
            } else {
                plain(snappy_block(data, limit, 0)?)
            }
        }
        CODEC_LZ4 => lz4(data, limit),
        CODEC_ZSTD => zstd(data, limit),
        other => Err(InflateError::UnknownCodec(other)),
    }
}

fn corrupt(codec: &'static str, what: impl fmt::Display) -> InflateError {
    InflateError::Corrupt {
        codec,
        what: what.to_string(),
    }
}

/// Reads a decoder to its end, but never more than `limit + 1` bytes.
fn read_capped(rd: impl Read, limit: usize, codec: &'static str) -> Result<Vec<u8>, InflateError> {
    let mut out = Vec::new();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    rd.take(cap)
        .read_to_end(&mut out)
        .map_err(|e| corrupt(codec, e))?;
    if out.len() > limit {
        return Err(InflateError::TooLarge { limit });
    }
    Ok(out)
}

/// One raw snappy block, appended to nothing; `already` bytes count against the limit.
fn snappy_block(block: &[u8], limit: usize, already: usize) -> Result<Vec<u8>, InflateError> {
    // The block declares its output length up front: check it before allocating.
    let n = snap::raw::decompress_len(block).map_err(|e| corrupt("snappy", e))?;
    if n > limit.saturating_sub(already) {
        return Err(InflateError::TooLarge { limit });
    }
    snap::raw::Decoder::new()
        .decompress_vec(block)
        .map_err(|e| corrupt("snappy", e))
}

/// snappy-java's stream: the 8-byte magic, int32 version, int32 compatible
/// version, then blocks of [int32 compressed length][raw snappy block].
fn xerial(data: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
    let mut r = crate::kafka::wire::Reader::new(data);
    r.take(16)
        .map_err(|e| corrupt("snappy", format!("xerial header: {e}")))?;
    let mut out: Vec<u8> = Vec::new();
    while r.remaining() > 0 {
        let len = r
            .i32()
            .map_err(|e| corrupt("snappy", format!("xerial block length: {e}")))?;
        let len = usize::try_from(len)
            .map_err(|_| corrupt("snappy", format!("negative xerial block length {len}")))?;
        let block = r
            .take(len)
            .map_err(|e| corrupt("snappy", format!("xerial block: {e}")))?;
        let part = snappy_block(block, limit, out.len())?;
        out.extend_from_slice(&part);
    }
    Ok(out)
}

fn zstd(data: &[u8], limit: usize) -> Result<Inflated, InflateError> {
    let mut d = zstd::stream::read::Decoder::with_buffer(data).map_err(|e| corrupt("zstd", e))?;
    // Bound the window a frame header may ask for: no more than the output
    // limit allows (but at least 8 MiB, what zstd's highest levels use), so a
    // hostile header cannot make the decoder reserve more than that.
    let need = usize::BITS - limit.max(1).leading_zeros();
    let _ = d.window_log_max(need.clamp(23, 31));
    Ok(Inflated {
        data: read_capped(d, limit, "zstd")?,
        note: None,
    })
}

const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

fn lz4(data: &[u8], limit: usize) -> Result<Inflated, InflateError> {
    // Kafka's clients before KIP-57 (message format v0) computed the frame
    // header checksum over the magic number too. Check which checksum the
    // header carries and decode a copy with the standard one, so both read.
    if let Some(hc_at) = lz4_descriptor_end(data) {
        let good = (xxh32(data.get(4..hc_at).unwrap_or(&[]), 0) >> 8) as u8;
        let stored = data.get(hc_at).copied();
        if stored != Some(good) {
            let broken = (xxh32(data.get(..hc_at).unwrap_or(&[]), 0) >> 8) as u8;
            let note = if stored == Some(broken) {
                "pre-KIP-57 LZ4 header checksum"
            } else {
                "LZ4 frame header checksum mismatch, ignored"
            };
            let mut fixed = data.to_vec();
            if let Some(b) = fixed.get_mut(hc_at) {
                *b = good;
            }
            let out = read_capped(lz4_flex::frame::FrameDecoder::new(&fixed[..]), limit, "lz4")?;
            return Ok(Inflated {
                data: out,
                note: Some(note),
            });
        }
    }
    Ok(Inflated {
        data: read_capped(lz4_flex::frame::FrameDecoder::new(data), limit, "lz4")?,
        note: None,
    })
}

/// Where the header checksum byte of an LZ4 frame sits, if the frame starts
/// with the standard magic and its descriptor is complete.
fn lz4_descriptor_end(data: &[u8]) -> Option<usize> {
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
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    fn le(b: &[u8]) -> u32 {
        let mut a = [0u8; 4];
        for (d, s) in a.iter_mut().zip(b) {
            *d = *s;
        }
        u32::from_le_bytes(a)
    }
    fn round(acc: u32, lane: u32) -> u32 {
        acc.wrapping_add(lane.wrapping_mul(P2))
            .rotate_left(13)
            .wrapping_mul(P1)
    }
    let mut stripes = input.chunks_exact(16);
    let mut h = if input.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        for s in stripes.by_ref() {
            for (acc, lane) in v.iter_mut().zip(s.chunks_exact(4)) {
                *acc = round(*acc, le(lane));
            }
        }
        let [a, b, c, d] = v;
        a.rotate_left(1)
            .wrapping_add(b.rotate_left(7))
            .wrapping_add(c.rotate_left(12))
            .wrapping_add(d.rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(input.len() as u32);
    let tail = if input.len() >= 16 {
        stripes.remainder()
    } else {
        input
    };
    let mut words = tail.chunks_exact(4);
    for w in words.by_ref() {
        h = h
            .wrapping_add(le(w).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
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
