//! Decompressed sizes read from a codec's own framing, without decompressing.
//!
//! Place in the data path: `stats` counts record sets without nodes
//! ([`super::count_record_set`]); for a v2 batch whose CRC-32C matches its
//! bytes it asks [`declared_len`] what the compressed payload decompresses to
//! before running the real decoder ([`super::compression::decompressed_len`]).
//! An answer of `None` means "decode it": the caller then takes today's path,
//! so anything unusual costs time, never a different figure.
//!
//! What each codec declares:
//! - snappy raw: the varint length preamble of the block; xerial
//!   (snappy-java) framing: the 16-byte header, then chunks of
//!   (int32 BE length, raw block) that must fill the payload exactly, each
//!   block's preamble summed;
//! - zstd: every frame's `Frame_Content_Size` (skippable frames: 0), the
//!   frames walked by their block headers (3 bytes: last flag, type, size;
//!   RLE blocks are 1 byte on the wire) and optional checksums to find where
//!   the next frame starts; a frame without the size (streaming compressors,
//!   Kafka's Java producer) counts its blocks ([`super::zstd_len`]: raw and
//!   RLE sizes, and for compressed blocks the literals' `Regenerated_Size`
//!   plus the match lengths of the FSE-decoded sequences, without Huffman
//!   decoding or copying); a frame with a dictionary id, a reserved bit, a
//!   reserved block type, a block over 128 KiB or a window over 8 MiB, or a
//!   block the walk finds inconsistent, is decoded;
//! - gzip: ISIZE (the last 4 bytes, little endian) of a single member with a
//!   well-formed header (no FHCRC, no reserved flag) and at least a minimal
//!   deflate stream and trailer; a second member would begin with `1f 8b 08`
//!   after the first header, so if those bytes occur anywhere after it the
//!   payload is decoded (a false alarm only costs the decode). ISIZE is the
//!   size modulo 2^32: payloads over 4,000,000 bytes, which deflate's 1032:1
//!   ceiling could blow past that, are decoded;
//! - LZ4 (the frame format, the header checksum ignored as
//!   [`super::compression`] does for Kafka's pre-KIP-57 checksum; only the
//!   first frame, as the decoder reads only that one): the content size of
//!   the descriptor when its flag is set, else per block — an uncompressed block counts its size, a
//!   compressed block of an independent-blocks frame is walked sequence by
//!   sequence (literals + match lengths, without writing output), every
//!   offset within what the block produced so far and the block ending exactly
//!   after its last literals; linked blocks, skippable or legacy frames,
//!   blocks over the frame's maximum size, a missing end mark are decoded.
//!   Block and content checksums are skipped.
//!
//! The rule these follow: for every payload a real producer sends, the
//! answer is exactly what the decoder produces (the decoders check these very
//! declarations against their output: snappy's preamble, zstd's content size,
//! gzip's ISIZE, LZ4's content size; zstd's blocks are walked with the
//! decoder's own rules). Only a payload whose batch CRC matches
//! but whose compressed data is itself invalid (a producer bug: the CRC is
//! computed over the compressed bytes) can be counted differently — with the
//! size it declares instead of being declined to the full decode.

/// The decompressed length `data` declares for `codec`, when its framing is
/// complete and consistent; `None` when it must be decoded to know.
pub(crate) fn declared_len(codec: u8, data: &[u8]) -> Option<usize> {
    use super::compression::{CODEC_GZIP, CODEC_LZ4, CODEC_SNAPPY, CODEC_ZSTD};
    match codec {
        CODEC_GZIP => gzip(data),
        CODEC_SNAPPY => {
            if data.starts_with(XERIAL_MAGIC) {
                xerial(data)
            } else {
                snap::raw::decompress_len(data).ok()
            }
        }
        CODEC_LZ4 => lz4(data),
        CODEC_ZSTD => zstd(data),
        _ => None,
    }
}

const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";

fn le16(b: &[u8], at: usize) -> Option<usize> {
    let b: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(usize::from(u16::from_le_bytes(b)))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

fn le64(b: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = b.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

fn xerial(data: &[u8]) -> Option<usize> {
    let mut pos = 16;
    if data.len() < pos {
        return None;
    }
    let mut total = 0usize;
    while pos < data.len() {
        let len: [u8; 4] = data.get(pos..pos + 4)?.try_into().ok()?;
        let len = usize::try_from(i32::from_be_bytes(len)).ok()?;
        let start = pos + 4;
        let end = start.checked_add(len)?;
        let block = data.get(start..end)?;
        total = total.checked_add(snap::raw::decompress_len(block).ok()?)?;
        pos = end;
    }
    Some(total)
}

/// Larger gzip payloads could decompress past 4 GiB, where ISIZE wraps.
const GZIP_MAX_PAYLOAD: usize = 4_000_000;

fn gzip(data: &[u8]) -> Option<usize> {
    const FTEXT: u8 = 1;
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    if data.len() > GZIP_MAX_PAYLOAD {
        return None;
    }
    let [0x1f, 0x8b, 8, flg] = *data.get(..4)? else {
        return None;
    };
    if flg & !(FTEXT | FEXTRA | FNAME | FCOMMENT) != 0 || flg & FHCRC != 0 {
        return None;
    }
    let mut pos = 10; // ID1 ID2 CM FLG MTIME(4) XFL OS
    if flg & FEXTRA != 0 {
        let xlen = le16(data, pos)?;
        pos = pos.checked_add(2 + xlen)?;
    }
    for bit in [FNAME, FCOMMENT] {
        if flg & bit != 0 {
            let rest = data.get(pos..)?;
            pos += rest.iter().position(|&b| b == 0)? + 1;
        }
    }
    // The smallest deflate stream is 2 bytes; the trailer is CRC-32, ISIZE.
    if data.len() < pos.checked_add(2 + 8)? {
        return None;
    }
    if memchr::memmem::find(data.get(pos..)?, &[0x1f, 0x8b, 8]).is_some() {
        return None;
    }
    usize::try_from(le32(data, data.len() - 4)?).ok()
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
/// The smallest window [`super::compression`]'s zstd decoder always accepts.
const ZSTD_WINDOW_MAX: u64 = 1 << 23;

fn zstd(data: &[u8]) -> Option<usize> {
    if data.is_empty() {
        return None;
    }
    let mut pos = 0usize;
    let mut total = 0u64;
    while pos < data.len() {
        let magic = le32(data, pos)?;
        if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
            // Skippable frame: magic, size, user data.
            let size = usize::try_from(le32(data, pos + 4)?).ok()?;
            pos = pos.checked_add(8)?.checked_add(size)?;
            if pos > data.len() {
                return None;
            }
            continue;
        }
        if magic != ZSTD_MAGIC {
            return None;
        }
        let fhd = *data.get(pos + 4)?;
        let fcs_flag = fhd >> 6;
        let single = fhd & 0x20 != 0;
        let checksum = fhd & 0x04 != 0;
        if fhd & 0x08 != 0 || fhd & 0x03 != 0 {
            return None; // reserved bit, dictionary id
        }
        pos += 5;
        let mut window = 0;
        if !single {
            let wd = *data.get(pos)?;
            let log = 10 + u32::from(wd >> 3);
            let base = 1u64 << log;
            window = base + (base / 8) * u64::from(wd & 7);
            if window > ZSTD_WINDOW_MAX {
                return None;
            }
            pos += 1;
        }
        let content = match (fcs_flag, single) {
            (0, false) => None, // unknown: a streaming compressor
            (0, true) => {
                pos += 1;
                Some(u64::from(*data.get(pos - 1)?))
            }
            (1, _) => {
                pos += 2;
                Some(le16(data, pos - 2)? as u64 + 256)
            }
            (2, _) => {
                pos += 4;
                Some(u64::from(le32(data, pos - 4)?))
            }
            _ => {
                pos += 8;
                Some(le64(data, pos - 8)?)
            }
        };
        let content = match content {
            Some(content) => {
                pos = zstd_frame_end(data, pos, content)?;
                content
            }
            None => {
                // Without a declared size, the blocks say what they make.
                let (content, end) = super::zstd_len::frame_blocks(data, pos, window)?;
                pos = end;
                content
            }
        };
        if checksum {
            pos += 4;
            if pos > data.len() {
                return None;
            }
        }
        total = total.checked_add(content)?;
    }
    usize::try_from(total).ok()
}

/// Where the blocks of a frame declaring `content` bytes end, from their
/// headers alone.
fn zstd_frame_end(data: &[u8], pos: usize, content: u64) -> Option<usize> {
    use super::zstd_len::{walk_blocks, BLOCK_MAX};
    let mut plain = 0u64; // raw and RLE block sizes, bounded by the content
    walk_blocks(data, pos, BLOCK_MAX, |kind, size, _| {
        if kind != 2 {
            plain += size as u64;
        }
        (plain <= content).then_some(())
    })
}

const LZ4_MAGIC: u32 = 0x184D_2204;

/// What the LZ4 frame at the start of `data` declares: its content size,
/// else the sum of its blocks' (the frame format's FLG and BD bytes, then
/// each block's size word). Only the first frame: the decoder (lz4_flex's
/// `FrameDecoder`) reads that one and ignores what follows. `None` without
/// the magic number, with another version, a reserved bit or block size, a
/// dictionary id, a block larger than the frame allows, a compressed block
/// of a linked-blocks frame, or the frame cut short. The header checksum is
/// not checked (the decoder accepts any, see [`super::compression`]); block
/// and content checksums are skipped.
fn lz4(data: &[u8]) -> Option<usize> {
    if le32(data, 0)? != LZ4_MAGIC {
        return None;
    }
    let [flg, bd] = *data.get(4..6)? else {
        return None;
    };
    if flg >> 6 != 1 || flg & 0x02 != 0 || bd & 0x8F != 0 || flg & 0x01 != 0 {
        return None; // version, reserved bits, dictionary id
    }
    let max_block = match bd >> 4 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return None,
    };
    // The content size, and where the header checksum byte sits.
    let (content, hc_at) = if flg & 0x08 != 0 {
        (Some(usize::try_from(le64(data, 6)?).ok()?), 14)
    } else {
        (None, 6)
    };
    data.get(hc_at)?;
    let mut pos = hc_at + 1;
    let mut total = 0usize;
    loop {
        let word = le32(data, pos)?;
        pos += 4;
        if word == 0 {
            break; // end mark
        }
        let size = (word & 0x7FFF_FFFF) as usize;
        if size > max_block {
            return None;
        }
        let bytes = data.get(pos..pos.checked_add(size)?)?;
        pos += size;
        if flg & 0x10 != 0 {
            le32(data, pos)?; // a block checksum
            pos += 4;
        }
        if content.is_some() {
            continue;
        }
        let made = if word & 0x8000_0000 != 0 {
            size // stored uncompressed
        } else if flg & 0x20 != 0 {
            lz4_block_len(bytes, max_block)? // independent blocks
        } else {
            return None;
        };
        total = total.checked_add(made)?;
    }
    if flg & 0x04 != 0 {
        pos += 4; // the content checksum
    }
    if pos > data.len() {
        return None;
    }
    Some(content.unwrap_or(total))
}

/// What an LZ4 block decompresses to, from its sequences: `None` when an
/// offset reaches before the block's start, the output would pass `max`, or
/// the block does not end exactly after its last literals.
///
/// The output is checked against `max` once, at the end: it only grows, so
/// a walk that passed `max` anywhere ends above it (or fails before). The
/// walk is bounded by the block all the same (every sequence but the last
/// takes at least 3 bytes), and no sum can overflow: the block is at most
/// 4 MiB and a length at most 255 times it.
pub(crate) fn lz4_block_len(block: &[u8], max: usize) -> Option<usize> {
    let mut i = 0usize;
    let mut out = 0usize;
    loop {
        let token = *block.get(i)?;
        i += 1;
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            lit += lz4_more(block, &mut i)?;
        }
        i += lit;
        out += lit;
        // No room for an offset: the block must end right after these
        // literals (one check for both).
        let Some(&[o0, o1]) = block.get(i..i + 2) else {
            return (i == block.len() && out <= max).then_some(out);
        };
        i += 2;
        // An offset of 0 wraps to the largest value: refused with the ones
        // that reach before the output's start.
        let offset = usize::from(u16::from_le_bytes([o0, o1]));
        if offset.wrapping_sub(1) >= out {
            return None;
        }
        let mut ml = usize::from(token & 15) + 4;
        if ml == 19 {
            ml += lz4_more(block, &mut i)?;
        }
        out += ml;
    }
}

/// The bytes that extend a length of 15: added up to the first that is not
/// 255.
#[inline(always)]
fn lz4_more(block: &[u8], i: &mut usize) -> Option<usize> {
    let mut n = 0usize;
    loop {
        let b = *block.get(*i)?;
        *i += 1;
        n += usize::from(b);
        if b != 255 {
            return Some(n);
        }
    }
}
