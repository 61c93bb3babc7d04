//! Record sets: the byte builders (batches, legacy messages, records,
//! compression) the harnesses and tests make inputs with, the `record_set`
//! harness and the `declared` harness of declared decompressed sizes.

use kafkashark::kafka::records::decode_record_set;
use kafkashark::kafka::tree::{ByteSource, Node, SourceBytes};
use kafkashark::kafka::Decoded;

use crate::tree::check_decoded;
use crate::{fuzz_opts, records_json_opts, Choices};

/// The codec bits a [`record_set`] input forces.
fn codec_of(mode: u8) -> u8 {
    mode % 5
}

/// Compresses `data` with a Kafka codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
pub fn compress(codec: u8, data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        2 => snap::raw::Encoder::new()
            .compress_vec(data)
            .unwrap_or_default(),
        3 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            let _ = e.write_all(data);
            e.finish().unwrap_or_default()
        }
        4 => zstd::bulk::compress(data, 1).unwrap_or_default(),
        _ => data.to_vec(),
    }
}

/// Bytes that compress in every way zstd knows: runs, words, noise, and
/// copies of earlier bytes near and far (repeat offsets, long matches,
/// matches beyond small windows).
pub fn mixed(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 6] = [b"topic", b"partition", b"\"value\":", b"kafka", b"{}", b" "];
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let r = next();
        let n = 1 + (r >> 8) as usize % 300;
        match r % 5 {
            0 => v.extend(std::iter::repeat_n((r >> 20) as u8, n)),
            1 => {
                for _ in 0..n.min(40) {
                    v.extend_from_slice(WORDS[next() as usize % WORDS.len()]);
                }
            }
            2 => v.extend((0..n).map(|_| next() as u8)),
            _ if !v.is_empty() => {
                let from = (r >> 32) as usize % v.len();
                let n = n.min(v.len() - from) * (1 + (r >> 60) as usize);
                for i in from..from + n {
                    let b = v.get(i).copied().unwrap_or_default();
                    v.push(b);
                }
            }
            _ => v.push(r as u8),
        }
    }
    v.truncate(len);
    v
}

/// A RecordBatch v2 around `records` (already compressed when `codec` > 0), with a correct CRC.
pub fn record_batch(codec: u8, count: i32, records: &[u8]) -> Vec<u8> {
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&i16::from(codec).to_be_bytes()); // attributes
    after_crc.extend_from_slice(&(count.max(1) - 1).to_be_bytes()); // lastOffsetDelta
    after_crc.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // baseTimestamp
    after_crc.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // maxTimestamp
    after_crc.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    after_crc.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    after_crc.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    after_crc.extend_from_slice(&count.to_be_bytes()); // recordsCount
    after_crc.extend_from_slice(records);
    let crc = crc32c::crc32c(&after_crc);
    let batch_len = 4 + 1 + 4 + after_crc.len();
    let mut b = Vec::with_capacity(12 + batch_len);
    b.extend_from_slice(&0i64.to_be_bytes()); // baseOffset
    b.extend_from_slice(&i32::try_from(batch_len).unwrap_or(i32::MAX).to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    b.extend_from_slice(&crc.to_be_bytes());
    b.extend_from_slice(&after_crc);
    b
}

/// Appends `v` as a zigzag varint (the record fields' encoding).
pub fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
}

/// Well-formed v2 records cut from `data`: each takes a length byte for its
/// key, value and one header, so the fuzzer steers content, not framing.
pub fn records_from(data: &[u8]) -> (i32, Vec<u8>) {
    let mut c = Choices::new(data);
    let mut out = Vec::new();
    let mut n = 0i32;
    while !c.is_empty() && n < 1000 {
        let klen = usize::from(c.byte() % 32);
        let key = c.take(klen).to_vec();
        let vlen = usize::from(c.byte());
        let value = c.take(vlen).to_vec();
        let hlen = usize::from(c.byte() % 16);
        let hdr = c.take(hlen).to_vec();
        let mut body = vec![0u8]; // attributes
        put_varint(&mut body, i64::from(n)); // timestampDelta
        put_varint(&mut body, i64::from(n)); // offsetDelta
        put_varint(&mut body, key.len() as i64);
        body.extend_from_slice(&key);
        put_varint(&mut body, value.len() as i64);
        body.extend_from_slice(&value);
        put_varint(&mut body, 1); // one header
        put_varint(&mut body, hdr.len() as i64);
        body.extend_from_slice(&hdr);
        put_varint(&mut body, hdr.len() as i64);
        body.extend_from_slice(&hdr);
        put_varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
        n += 1;
    }
    (n, out)
}

/// A legacy (magic 0 or 1) message with a correct CRC.
pub fn legacy_message(
    magic: u8,
    attributes: u8,
    offset: i64,
    key: Option<&[u8]>,
    value: &[u8],
) -> Vec<u8> {
    let mut m = vec![magic, attributes];
    if magic >= 1 {
        m.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
    }
    match key {
        Some(k) => {
            m.extend_from_slice(&i32::try_from(k.len()).unwrap_or(0).to_be_bytes());
            m.extend_from_slice(k);
        }
        None => m.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    m.extend_from_slice(&i32::try_from(value.len()).unwrap_or(0).to_be_bytes());
    m.extend_from_slice(value);
    let crc = crc32fast::hash(&m);
    let mut out = offset.to_be_bytes().to_vec();
    out.extend_from_slice(&i32::try_from(m.len() + 4).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&m);
    out
}

/// Record sets with each codec. Byte 0 (`mode`) chooses the shape:
/// - bits 5–7 = 0: a RecordBatch v2 with codec `mode % 5` around records
///   built from the rest (bit 3 set: the rest is the raw records payload);
/// - bits 5–7 = 1: a legacy v1 wrapper with codec `mode % 4` around inner
///   messages built from the rest (bit 3 set: the rest is the raw inner set);
/// - bits 5–7 = 2: the rest as the record set itself, no wrapping;
/// - else: the rest compressed twice over (a bomb-shaped batch in a batch).
pub fn record_set(data: &[u8]) {
    let mut c = Choices::new(data);
    let mode = c.byte();
    let raw = mode & 0x08 != 0;
    let rest = c.rest();
    let set = match mode >> 5 {
        0 => {
            let codec = codec_of(mode);
            let (n, recs) = if raw {
                (i32::from(mode >> 4), rest.to_vec())
            } else {
                records_from(rest)
            };
            record_batch(codec, n, &compress(codec, &recs))
        }
        1 => {
            let codec = mode % 4;
            let inner = if raw {
                rest.to_vec()
            } else {
                let mut v = Vec::new();
                for (i, chunk) in rest.chunks(64).enumerate().take(512) {
                    v.extend(legacy_message(
                        1,
                        0,
                        i as i64,
                        chunk.first().map(|_| &chunk[..chunk.len().min(4)]),
                        chunk,
                    ));
                }
                v
            };
            legacy_message(1, codec, 0, None, &compress(codec, &inner))
        }
        2 => rest.to_vec(),
        _ => {
            let codec = codec_of(mode).max(1);
            let (n, recs) = records_from(rest);
            let inner = record_batch(codec, n, &compress(codec, &recs));
            record_batch(codec, 1, &compress(codec, &inner))
        }
    };
    check_record_set(&set);
}

/// Declared sizes (`records::declared`, what `stats` counts a CRC-verified
/// batch by): byte 0 picks the codec (bits 0–1: gzip, snappy, LZ4, zstd), the
/// compression level (bits 2–3), whether the rest is taken as the payload
/// itself (bit 4) or compressed for real first — zstd streamed, without a
/// content size, the frames the block walk reads — and how many bytes are
/// then changed (bits 5–7; each a u16 position and a byte to XOR).
pub fn declared(data: &[u8]) {
    let mut c = Choices::new(data);
    let mode = c.byte();
    let codec = 1 + mode % 4;
    let changes: Vec<(u16, u8)> = (0..mode >> 5).map(|_| (c.u16(), c.byte())).collect();
    let rest = c.rest();
    let mut payload = if mode & 0x10 != 0 {
        rest.to_vec()
    } else if codec == 4 {
        let level = [1, 3, 9, -1][usize::from((mode >> 2) & 3)];
        zstd::stream::encode_all(rest, level).unwrap_or_default()
    } else {
        compress(codec, rest)
    };
    let n = payload.len();
    for (at, x) in changes {
        if let Some(b) = payload.get_mut(usize::from(at) % n.max(1)) {
            *b ^= x;
        }
    }
    check_declared(codec, &payload);
}

/// The size `payload` declares for `codec`, if any, is the size it decodes
/// to whenever it decodes (a payload that does not decode may still declare
/// one: the exception docs/stats.md describes).
pub fn check_declared(codec: u8, payload: &[u8]) {
    let declared = kafkashark::kafka::records::compression::declared_len(codec, payload);
    let decoded =
        kafkashark::kafka::records::compression::decompressed_len(codec, payload, 1 << 22);
    if let (Some(n), Ok(s)) = (declared, decoded) {
        assert_eq!(
            n, s.len,
            "codec {codec}: declared {n} bytes, decodes to {}",
            s.len
        );
    }
}

/// Decodes `set` as a record set at offset 0 of a message made of just those
/// bytes and checks the invariants.
pub fn check_record_set(set: &[u8]) {
    let opts = fuzz_opts();
    let mut sources: Vec<ByteSource> = Vec::new();
    let rs = decode_record_set(set, 0, 0, &opts, &mut sources);
    // With records written straight to JSON: the same JSON, the same facts.
    let mut fast_sources = Vec::new();
    let fast = decode_record_set(set, 0, 0, &records_json_opts(), &mut fast_sources);
    let json = |nodes: &[Node], sources: &[ByteSource]| {
        let bytes = SourceBytes {
            message: set,
            sources,
        };
        let mut out = Vec::new();
        for n in nodes {
            n.write_json_in(&mut out, &bytes);
        }
        out
    };
    assert!(
        json(&rs.nodes, &sources) == json(&fast.nodes, &fast_sources),
        "records_json writes other JSON"
    );
    assert_eq!(
        (&rs.summary, &rs.problem, rs.records, rs.crc_mismatches),
        (
            &fast.summary,
            &fast.problem,
            fast.records,
            fast.crc_mismatches
        )
    );
    let mut root = Node::new(
        "records",
        "records",
        kafkashark::kafka::tree::Value::None,
        0,
        set.len(),
        kafkashark::kafka::tree::Role::RequestBody,
    );
    root.children = rs.nodes;
    let d = Decoded {
        kind: kafkashark::kafka::decode::Kind::Request,
        api_key: None,
        api_version: None,
        correlation_id: None,
        client_id: None,
        root,
        sources,
        error: None,
        warning: None,
        topics: Default::default(),
        topic_ids: Vec::new(),
        facts: None,
    };
    if let Some((off, src, what)) = &rs.problem {
        let len = if *src == 0 {
            set.len()
        } else {
            d.sources
                .get(usize::from(*src) - 1)
                .map_or(0, |s| s.data.len())
        };
        assert!(
            *off <= len,
            "record-set problem at 0x{off:x} beyond source #{src} ({len} bytes): {what}"
        );
    }
    check_decoded(set, &d);
}
