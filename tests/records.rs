//! Record sets end to end through the public API: every codec (with our own
//! minimal encoder and with the `kafka-protocol` crate's as an independent
//! one), decompression limits, legacy message sets and their compressed
//! wrappers, and the seed's empty batch.

use std::io::Write;

use kafkashark::kafka::records::{decode_record_set, RecordSet};
use kafkashark::kafka::tree::{render_text, ByteSource, Node, Role, Value};
use kafkashark::kafka::DecodeOptions;

// ---------------------------------------------------------------- encoder

#[derive(Clone, Debug, Default, PartialEq)]
struct Rec {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(out: &mut Vec<u8>, v: i64) {
    uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn sized(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => varint(out, -1),
        Some(b) => {
            varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// The records of a batch, uncompressed: [length varint][attributes]
/// [timestampDelta][offsetDelta][key][value][headers].
fn records(recs: &[Rec]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let mut body = vec![0u8];
        varint(&mut body, i as i64 * 10); // timestampDelta
        varint(&mut body, i as i64); // offsetDelta
        sized(&mut body, r.key.as_deref());
        sized(&mut body, r.value.as_deref());
        varint(&mut body, r.headers.len() as i64);
        for (k, v) in &r.headers {
            sized(&mut body, Some(k.as_bytes()));
            sized(&mut body, v.as_deref());
        }
        varint(&mut out, body.len() as i64);
        out.extend_from_slice(&body);
    }
    out
}

/// A RecordBatch v2 around an already compressed (or plain) payload.
fn batch(base_offset: i64, attributes: i16, count: i32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&base_offset.to_be_bytes());
    b.extend_from_slice(&((49 + payload.len()) as i32).to_be_bytes()); // batchLength
    b.extend_from_slice(&(-1i32).to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    b.extend_from_slice(&[0; 4]); // crc, below
    b.extend_from_slice(&attributes.to_be_bytes());
    b.extend_from_slice(&(count - 1).to_be_bytes()); // lastOffsetDelta
    b.extend_from_slice(&1_600_000_000_000i64.to_be_bytes()); // baseTimestamp
    b.extend_from_slice(&1_600_000_000_100i64.to_be_bytes()); // maxTimestamp
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    b.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    b.extend_from_slice(&count.to_be_bytes()); // recordsCount
    b.extend_from_slice(payload);
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn snappy_raw(data: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(data).unwrap()
}

/// snappy-java's framing: magic, version 1, compatible version 1, then
/// [int32 length][raw snappy block] per `block` bytes of input.
fn snappy_xerial(data: &[u8], block: usize) -> Vec<u8> {
    let mut out = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
    for chunk in data.chunks(block) {
        let c = snappy_raw(chunk);
        out.extend_from_slice(&(c.len() as i32).to_be_bytes());
        out.extend_from_slice(&c);
    }
    out
}

fn lz4(data: &[u8]) -> Vec<u8> {
    let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::encode_all(data, 3).unwrap()
}

/// A legacy message: [offset][messageSize][crc][magic][attributes]
/// [timestamp, v1][key int32-sized][value int32-sized].
fn message(
    magic: u8,
    offset: i64,
    attributes: u8,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Vec<u8> {
    let mut body = vec![magic, attributes];
    if magic == 1 {
        body.extend_from_slice(&1_500_000_000_000i64.to_be_bytes());
    }
    for b in [key, value] {
        match b {
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                body.extend_from_slice(&(b.len() as i32).to_be_bytes());
                body.extend_from_slice(b);
            }
        }
    }
    let mut m = offset.to_be_bytes().to_vec();
    m.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    m.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

// ---------------------------------------------------------------- helpers

fn sample() -> Vec<Rec> {
    vec![
        Rec {
            key: Some(b"user-1".to_vec()),
            value: Some(b"{\"clicks\": 3}".to_vec()),
            headers: vec![("trace".into(), Some(b"abc".to_vec()))],
        },
        Rec {
            key: None,
            value: Some(vec![0xde, 0xad, 0xbe, 0xef]),
            headers: vec![],
        },
        Rec {
            key: Some(b"user-2".to_vec()),
            value: None,
            headers: vec![("a".into(), None), ("b".into(), Some(Vec::new()))],
        },
    ]
}

fn decode_with(data: &[u8], base: usize, opts: &DecodeOptions) -> (RecordSet, Vec<ByteSource>) {
    let mut sources = Vec::new();
    let rs = decode_record_set(data, base, 0, opts, &mut sources);
    (rs, sources)
}

fn decode(data: &[u8], base: usize) -> (RecordSet, Vec<ByteSource>) {
    decode_with(data, base, &DecodeOptions::default())
}

/// The bytes a node covers.
fn bytes_of<'a>(n: &Node, msg: &'a [u8], base: usize, sources: &'a [ByteSource]) -> &'a [u8] {
    if n.source == 0 {
        &msg[n.offset - base..n.end() - base]
    } else {
        &sources[usize::from(n.source) - 1].data[n.offset..n.end()]
    }
}

fn content(n: Option<&Node>) -> Option<Vec<u8>> {
    n.map(|n| match &n.value {
        Value::Str(s) => s.as_bytes().to_vec(),
        Value::Bytes { head, len } => {
            assert!(*len <= head.len(), "test values are short");
            head.clone()
        }
        other => panic!("unexpected value {other:?}"),
    })
}

/// Reads the records back from the tree, checking each field's bytes.
fn read_back(records: &[&Node], msg: &[u8], base: usize, sources: &[ByteSource]) -> Vec<Rec> {
    let mut out = Vec::new();
    for r in records {
        assert_eq!(r.role, Role::Record);
        assert!(r.first_error().is_none(), "{r:?}");
        for c in &r.children {
            assert_eq!(c.source, r.source);
        }
        let key = content(r.child("key"));
        if let Some(k) = &key {
            assert_eq!(
                bytes_of(r.child("key").unwrap(), msg, base, sources),
                k.as_slice()
            );
        }
        let value = content(r.child("value"));
        let headers = r
            .children
            .iter()
            .filter(|c| c.name.starts_with("Header["))
            .map(|h| {
                let k = match &h.child("headerKey").unwrap().value {
                    Value::Str(s) => s.clone(),
                    v => panic!("{v:?}"),
                };
                (k, content(h.child("headerValue")))
            })
            .collect();
        out.push(Rec {
            key,
            value,
            headers,
        });
    }
    out
}

fn record_nodes(n: &Node) -> Vec<&Node> {
    let mut v = Vec::new();
    n.walk(&mut |n, _| {
        if n.name.starts_with("Record[") {
            v.push(n);
        }
    });
    v
}

// ---------------------------------------------------------------- v2 codecs

#[test]
fn uncompressed_batch_round_trips() {
    let plain = records(&sample());
    let b = batch(100, 0, 3, &plain);
    let (rs, sources) = decode(&b, 0x40);
    assert_eq!(rs.problem, None);
    assert!(sources.is_empty());
    assert_eq!(rs.summary, "1 RecordBatch, 3 records");
    let recs = record_nodes(&rs.nodes[0]);
    assert_eq!(read_back(&recs, &b, 0x40, &sources), sample());
    assert_eq!(recs[0].offset, 0x40 + 61);
    assert_eq!(recs[2].end(), 0x40 + b.len());
    assert_eq!(recs[1].value_text(), "offset 101");
}

#[test]
fn every_codec_decodes_into_its_own_source() {
    let plain = records(&sample());
    let cases: Vec<(i16, &str, Vec<u8>, Option<&str>)> = vec![
        (1, "gzip", gzip(&plain), None),
        (2, "snappy", snappy_raw(&plain), None),
        (
            2,
            "snappy",
            snappy_xerial(&plain, 16),
            Some("xerial framing"),
        ),
        (3, "lz4", lz4(&plain), None),
        (4, "zstd", zstd(&plain), None),
    ];
    for (codec, name, compressed, note) in cases {
        let base = 0x1e;
        let b = batch(7, codec, 3, &compressed);
        let (rs, sources) = decode(&b, base);
        assert_eq!(rs.problem, None, "{name}");
        assert_eq!(rs.crc_mismatches, 0);
        assert_eq!(rs.nodes[0].value_text(), format!("3 records, {name}"));
        assert_eq!(sources.len(), 1, "{name}");
        let src = &sources[0];
        assert_eq!(src.data, plain, "{name}");
        assert_eq!(src.parent, 0);
        assert_eq!(
            (src.parent_offset, src.parent_length),
            (base + 61, compressed.len())
        );
        assert_eq!(
            src.name,
            format!("{name}-decompressed records of the RecordBatch at 0x001e")
        );
        let container = rs.nodes[0].child("records").unwrap();
        assert_eq!(container.ty, name);
        assert_eq!(
            (container.offset, container.length, container.source),
            (base + 61, compressed.len(), 0)
        );
        let want = format!("{} bytes → {} bytes", compressed.len(), plain.len());
        assert_eq!(
            container.value_text(),
            match note {
                Some(n) => format!("{want} ({n})"),
                None => want,
            }
        );
        let recs = record_nodes(container);
        assert_eq!(recs.len(), 3);
        for r in &recs {
            assert_eq!(r.source, 1);
        }
        // Records tile the decompressed source exactly.
        assert_eq!(recs[0].offset, 0);
        assert_eq!(recs[1].offset, recs[0].end());
        assert_eq!(recs[2].offset, recs[1].end());
        assert_eq!(recs[2].end(), plain.len());
        assert_eq!(read_back(&recs, &b, base, &sources), sample(), "{name}");
        let trace = recs[0]
            .child("Header[0]")
            .unwrap()
            .child("headerValue")
            .unwrap();
        assert_eq!(bytes_of(trace, &b, base, &sources), b"abc");
    }
}

#[test]
fn sources_already_present_shift_the_new_ids() {
    let plain = records(&sample());
    let b = batch(0, 1, 3, &gzip(&plain));
    let mut sources = vec![ByteSource {
        name: "earlier".into(),
        data: vec![1, 2, 3],
        len: 3,
        parent: 0,
        parent_offset: 0,
        parent_length: 1,
    }];
    let rs = decode_record_set(&b, 0, 0, &DecodeOptions::default(), &mut sources);
    assert_eq!(sources.len(), 2);
    for r in record_nodes(&rs.nodes[0]) {
        assert_eq!(r.source, 2);
    }
}

#[test]
fn corrupt_compressed_data_is_a_problem() {
    let plain = records(&sample());
    let mut c = gzip(&plain);
    let mid = c.len() / 2;
    c[mid] ^= 0xff;
    c.truncate(c.len() - 3);
    let b = batch(0, 1, 3, &c);
    let (rs, _) = decode(&b, 0);
    let (off, src, what) = rs.problem.expect("problem");
    assert_eq!((off, src), (61, 0));
    assert!(what.contains("gzip"), "{what}");
    let b = batch(0, 5, 3, &plain);
    let (rs, _) = decode(&b, 0);
    assert!(rs
        .problem
        .unwrap()
        .2
        .contains("unknown compression codec 5"));
}

// ---------------------------------------------------------------- differential

#[test]
fn batches_from_kafka_protocol_decode_identically() {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    let theirs: Vec<Record> = (0..5)
        .map(|i| {
            let mut headers = IndexMap::new();
            headers.insert(
                StrBytes::from_string(format!("h{i}")),
                Some(Bytes::from(vec![i as u8; i])),
            );
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 3,
                producer_id: 42,
                producer_epoch: 1,
                timestamp_type: TimestampType::Creation,
                offset: 1000 + i as i64,
                sequence: i as i32,
                timestamp: 1_700_000_000_000 + i as i64,
                key: (i % 2 == 0).then(|| Bytes::from(format!("key-{i}"))),
                value: Some(Bytes::from(format!("value number {i} ").repeat(20))),
                headers,
            }
        })
        .collect();
    let want: Vec<Rec> = theirs
        .iter()
        .map(|r| Rec {
            key: r.key.as_ref().map(|b| b.to_vec()),
            value: r.value.as_ref().map(|b| b.to_vec()),
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_ref().map(|b| b.to_vec())))
                .collect(),
        })
        .collect();
    for (compression, name) in [
        (Compression::None, "none"),
        (Compression::Gzip, "gzip"),
        (Compression::Snappy, "snappy"),
        (Compression::Lz4, "lz4"),
        (Compression::Zstd, "zstd"),
    ] {
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &theirs,
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .unwrap();
        let b = buf.to_vec();
        let (rs, sources) = decode(&b, 0);
        assert_eq!(rs.problem, None, "{name}");
        assert_eq!(rs.crc_mismatches, 0, "{name}");
        assert_eq!((rs.batches, rs.records), (1, 5), "{name}");
        let bn = &rs.nodes[0];
        assert_eq!(bn.length, b.len());
        assert_eq!(bn.child("producerId").unwrap().value, Value::Int(42));
        assert_eq!(
            bn.child("partitionLeaderEpoch").unwrap().value,
            Value::Int(3)
        );
        assert_eq!(bn.child("baseOffset").unwrap().value, Value::Int(1000));
        let recs = record_nodes(bn);
        assert_eq!(read_back(&recs, &b, 0, &sources), want, "{name}");
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.value_text(), format!("offset {}", 1000 + i));
            assert_eq!(
                r.child("timestampDelta").unwrap().value,
                Value::Int(i as i64),
                "{name}"
            );
        }
        if name != "none" {
            assert_eq!(sources.len(), 1);
            // And the kafka-protocol decoder agrees with what we show.
            let mut bytes = Bytes::from(b.clone());
            let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
            assert_eq!(set.records.len(), 5);
        }
    }
}

// ---------------------------------------------------------------- limits

#[test]
fn decompression_bombs_are_refused() {
    let zeros = vec![0u8; 32 << 20];
    let opts = DecodeOptions {
        max_decompressed: 1 << 20,
        ..DecodeOptions::default()
    };
    let bombs: Vec<(i16, Vec<u8>)> = vec![
        (4, zstd(&zeros)),
        (1, gzip(&zeros[..8 << 20])),
        (2, snappy_raw(&zeros[..4 << 20])),
        (2, snappy_xerial(&zeros[..4 << 20], 64 << 10)),
        (3, lz4(&zeros[..8 << 20])),
    ];
    for (codec, c) in bombs {
        let b = batch(0, codec, 1, &c);
        let (rs, sources) = decode_with(&b, 0, &opts);
        assert!(sources.is_empty(), "codec {codec}");
        assert_eq!(rs.problem, None, "a refusal is not malformed input");
        let bn = &rs.nodes[0];
        assert_eq!(
            bn.detail.as_deref(),
            Some("decompressed size exceeds the limit")
        );
        let container = bn.child("records").unwrap();
        assert!(container
            .value_text()
            .contains("decompressed size exceeds the limit"));
        assert!(record_nodes(bn).is_empty());
    }
}

#[test]
fn all_sources_of_a_message_share_a_budget() {
    // Each batch is under the per-batch limit; the fifth passes 4 × the limit.
    let opts = DecodeOptions {
        max_decompressed: 100_000,
        ..DecodeOptions::default()
    };
    let rec = records(&[Rec {
        key: None,
        value: Some(vec![b'x'; 90_000]),
        headers: vec![],
    }]);
    let one = batch(0, 4, 1, &zstd(&rec));
    let set: Vec<u8> = (0..5).flat_map(|_| one.clone()).collect();
    let (rs, sources) = decode_with(&set, 0, &opts);
    assert_eq!(sources.len(), 4);
    assert_eq!(rs.problem, None);
    assert_eq!(
        rs.nodes[4].detail.as_deref(),
        Some("decompressed size exceeds the limit")
    );
}

// ---------------------------------------------------------------- legacy

#[test]
fn legacy_v0_message_set() {
    let set = [
        message(0, 0, 0, Some(b"k"), Some(b"first")),
        message(0, 1, 0, None, Some(b"second")),
    ]
    .concat();
    let base = 0x30;
    let (rs, sources) = decode(&set, base);
    assert_eq!(rs.problem, None);
    assert_eq!(rs.summary, "2 legacy messages (v0)");
    assert_eq!((rs.batches, rs.records), (2, 2));
    let m0 = &rs.nodes[0];
    assert_eq!((m0.name.as_ref(), m0.ty.as_ref()), ("Message[0]", "v0"));
    assert_eq!((m0.offset, m0.length), (base, 12 + 4 + 2 + 4 + 1 + 4 + 5));
    let names: Vec<_> = m0.children.iter().map(|c| c.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "offset",
            "messageSize",
            "crc",
            "magic",
            "attributes",
            "keyLength",
            "key",
            "valueLength",
            "value"
        ]
    );
    let crc = m0.child("crc").unwrap();
    assert_eq!(crc.value_text(), "crc32 of the bytes that follow");
    assert_eq!((crc.offset, crc.length), (base + 12, 4));
    let value = m0.child("value").unwrap();
    assert_eq!(value.value, Value::Str("first".into()));
    assert_eq!(bytes_of(value, &set, base, &sources), b"first");
    let m1 = &rs.nodes[1];
    assert_eq!(m1.offset, m0.end());
    assert_eq!(m1.child("keyLength").unwrap().value_text(), "-1 (null)");
    assert_eq!(m1.value_text(), "offset 1");
}

#[test]
fn legacy_v1_message_with_timestamp_and_crc_mismatch() {
    let mut m = message(1, 5, 0, Some(b"key"), Some(b"val"));
    let (rs, _) = decode(&m, 0);
    assert_eq!(rs.summary, "1 legacy message (v1)");
    let n = &rs.nodes[0];
    let ts = n.child("timestamp").unwrap();
    assert_eq!((ts.offset, ts.length), (18, 8));
    assert_eq!(ts.value_text(), "1500000000000 (2017-07-14T02:40:00.000Z)");
    let last = m.len() - 1;
    m[last] ^= 0x20;
    let (rs, _) = decode(&m, 0);
    assert_eq!(rs.problem, None);
    assert_eq!(rs.crc_mismatches, 1);
    assert!(rs.nodes[0]
        .child("crc")
        .unwrap()
        .value_text()
        .contains("CRC MISMATCH"));
    assert_eq!(rs.nodes[0].value_text(), "offset 5 (CRC MISMATCH)");
}

#[test]
fn legacy_gzip_wrapper_is_decoded_recursively() {
    // Inner v1 messages carry relative offsets; the wrapper the last absolute one.
    let inner = [
        message(1, 0, 0, Some(b"a"), Some(b"one")),
        message(1, 1, 0, Some(b"b"), Some(b"two")),
        message(1, 2, 0, None, Some(b"three")),
    ]
    .concat();
    let wrapper = message(1, 12, 1, None, Some(&gzip(&inner)));
    let set = [wrapper.clone(), message(1, 13, 0, None, Some(b"after"))].concat();
    let base = 0x50;
    let (rs, sources) = decode(&set, base);
    assert_eq!(rs.problem, None);
    assert_eq!(rs.summary, "2 legacy messages (v1), 4 records");
    assert_eq!((rs.batches, rs.records), (2, 4));
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].data, inner);
    assert_eq!(
        sources[0].name,
        "gzip-decompressed messages of the Message at 0x0050"
    );
    let w = &rs.nodes[0];
    assert_eq!(w.value_text(), "offset 12, gzip wrapper of 3 messages");
    assert_eq!(
        w.child("attributes").unwrap().value_text(),
        "1 (gzip, CreateTime)"
    );
    let value = w.child("value").unwrap();
    assert_eq!(value.ty, "gzip");
    assert_eq!(value.source, 0);
    assert_eq!(value.end(), base + wrapper.len());
    assert_eq!(value.children.len(), 3);
    let mut at = 0;
    for (i, m) in value.children.iter().enumerate() {
        assert_eq!(m.name, format!("Message[{i}]"));
        assert_eq!((m.source, m.offset), (1, at));
        at = m.end();
        let off = m.child("offset").unwrap();
        assert_eq!(off.value_text(), format!("{i} (absolute {})", 10 + i));
    }
    assert_eq!(at, inner.len());
    let v = value.children[2].child("value").unwrap();
    assert_eq!(bytes_of(v, &set, base, &sources), b"three");
    assert_eq!(rs.nodes[1].offset, base + wrapper.len());
}

#[test]
fn legacy_snappy_and_lz4_wrappers() {
    let inner = [
        message(0, 0, 0, None, Some(b"x")),
        message(0, 1, 0, None, Some(b"y")),
    ]
    .concat();
    // snappy-java framing, as the Java client wrote it.
    let (rs, sources) = decode(
        &message(0, 1, 2, None, Some(&snappy_xerial(&inner, 1 << 15))),
        0,
    );
    assert_eq!(rs.problem, None);
    assert_eq!(sources[0].data, inner);
    assert_eq!(
        rs.nodes[0].child("value").unwrap().detail.as_deref(),
        Some("xerial framing")
    );
    // LZ4 with the header checksum computed over the magic too (pre-KIP-57).
    let mut f = lz4(&inner);
    let flg = f[4];
    let hc_at = 6 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
    f[hc_at] = (xxh32(&f[..hc_at]) >> 8) as u8;
    let (rs, sources) = decode(&message(0, 1, 3, None, Some(&f)), 0);
    assert_eq!(rs.problem, None);
    assert_eq!(sources[0].data, inner);
    assert_eq!(
        rs.nodes[0].child("value").unwrap().detail.as_deref(),
        Some("pre-KIP-57 LZ4 header checksum")
    );
}

/// xxHash32 with seed 0, short inputs only (< 16 bytes), for the LZ4 test.
fn xxh32(input: &[u8]) -> u32 {
    assert!(input.len() < 16);
    const P1: u32 = 0x9E37_79B1;
    const P2: u32 = 0x85EB_CA77;
    const P3: u32 = 0xC2B2_AE3D;
    const P4: u32 = 0x27D4_EB2F;
    const P5: u32 = 0x1656_67B1;
    let mut h = P5.wrapping_add(input.len() as u32);
    let mut words = input.chunks_exact(4);
    for w in words.by_ref() {
        let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        h = h
            .wrapping_add(v.wrapping_mul(P3))
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

#[test]
fn legacy_nesting_is_bounded() {
    // A wrapper inside a wrapper inside …: refused past the depth limit, no panic.
    let mut m = message(0, 0, 0, None, Some(b"leaf"));
    for _ in 0..8 {
        m = message(0, 0, 1, None, Some(&gzip(&m)));
    }
    let (rs, sources) = decode(&m, 0);
    assert!(sources.len() < 8);
    assert!(rs.problem.unwrap().2.contains("nested"));
}

#[test]
fn trailing_partial_legacy_message_is_not_a_problem() {
    let full = message(1, 0, 0, None, Some(b"complete"));
    let next = message(1, 1, 0, None, Some(b"cut short by the broker"));
    let set = [full.clone(), next[..20].to_vec()].concat();
    let (rs, _) = decode(&set, 0);
    assert_eq!(rs.problem, None);
    let p = &rs.nodes[1];
    assert_eq!(p.name, "partial message");
    assert_eq!(
        p.value_text(),
        format!(
            "truncated by the broker's fetch size limit: 20 of {} bytes",
            next.len()
        )
    );
    assert_eq!((p.offset, p.length), (full.len(), 20));
    assert_eq!(rs.summary, "1 legacy message (v1) + partial batch");
}

#[test]
fn a_set_may_mix_formats() {
    let set = [
        message(1, 0, 0, None, Some(b"old")),
        batch(1, 0, 3, &records(&sample())),
    ]
    .concat();
    let (rs, _) = decode(&set, 0);
    assert_eq!(rs.problem, None);
    assert_eq!(
        rs.summary,
        "1 RecordBatch, 3 records; 1 legacy message (v1)"
    );
    assert_eq!((rs.batches, rs.records), (2, 4));
}

// ---------------------------------------------------------------- seed

const SEED: &str = "../shared/seeds/produce-request-v12-minimal.txt";

/// The name, type, value and span columns of a rendered tree line.
fn columns(line: &str) -> Vec<String> {
    let line = line.trim_start_matches(['|', '+', '-', ' ']);
    line.split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .take(4)
        .map(str::to_string)
        .collect()
}

#[test]
fn seed_empty_batch_matches_the_seed_document() {
    let b = batch_seed();
    let (rs, _) = decode(&b, 0x1e);
    assert_eq!(rs.summary, "1 RecordBatch");
    let ours: Vec<Vec<String>> = render_text(&rs.nodes[0]).lines().map(columns).collect();
    let expected = [
        ["RecordBatch", "v2", "= empty", "[0x001e, 61B]"],
        ["baseOffset", "int64", "= 0", "[0x001e, 8B]"],
        ["batchLength", "int32", "= 49", "[0x0026, 4B]"],
        ["partitionLeaderEpoch", "int32", "= -1", "[0x002a, 4B]"],
        ["magic", "int8", "= 2", "[0x002e, 1B]"],
        [
            "crc",
            "uint32",
            "= crc32c of the bytes that follow",
            "[0x002f, 4B]",
        ],
        ["attributes", "int16", "= 0", "[0x0033, 2B]"],
        ["lastOffsetDelta", "int32", "= -1", "[0x0035, 4B]"],
        ["baseTimestamp", "int64", "= -1", "[0x0039, 8B]"],
        ["maxTimestamp", "int64", "= -1", "[0x0041, 8B]"],
        ["producerId", "int64", "= -1", "[0x0049, 8B]"],
        ["producerEpoch", "int16", "= -1", "[0x0051, 2B]"],
        ["baseSequence", "int32", "= -1", "[0x0053, 4B]"],
        ["recordsCount", "int32", "= 0", "[0x0057, 4B]"],
    ];
    let expected: Vec<Vec<String>> = expected
        .iter()
        .map(|l| l.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(ours, expected);
    // When the shared seed document is present, compare with it directly.
    if let Ok(text) = std::fs::read_to_string(SEED) {
        let lines: Vec<&str> = text.lines().collect();
        let start = lines
            .iter()
            .position(|l| l.contains("+-- RecordBatch"))
            .expect("seed has a RecordBatch");
        let seed: Vec<Vec<String>> = lines[start..start + 14]
            .iter()
            .map(|l| columns(l))
            .collect();
        assert_eq!(ours, seed);
    }
}

/// The seed's empty batch, byte by byte.
fn batch_seed() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0i64.to_be_bytes()); // baseOffset 0
    b.extend_from_slice(&49i32.to_be_bytes()); // batchLength 49
    b.extend_from_slice(&(-1i32).to_be_bytes()); // partitionLeaderEpoch -1
    b.push(2); // magic 2
    b.extend_from_slice(&[0; 4]); // crc, below
    b.extend_from_slice(&0i16.to_be_bytes()); // attributes 0
    b.extend_from_slice(&(-1i32).to_be_bytes()); // lastOffsetDelta -1
    b.extend_from_slice(&(-1i64).to_be_bytes()); // baseTimestamp -1
    b.extend_from_slice(&(-1i64).to_be_bytes()); // maxTimestamp -1
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producerId -1
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch -1
    b.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence -1
    b.extend_from_slice(&0i32.to_be_bytes()); // recordsCount 0
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(b.len(), 61);
    b
}

// ---------------------------------------------------------------- real capture

const CODECS_PCAP: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/captures/a2-confluent-compression-codecs.pcap"
);

/// Client → broker byte streams (port 9092) of an Ethernet/IPv4 pcap, in
/// sequence order; a test-only reader: no IPv6, VLAN or out-of-order data.
fn client_streams(pcap: &[u8]) -> Vec<Vec<u8>> {
    let le = match pcap[..4] {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => panic!("not a pcap"),
    };
    let u32_at = |b: &[u8], at: usize| {
        let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    assert_eq!(u32_at(pcap, 20), 1, "Ethernet link type");
    let mut streams: Vec<(u16, u32, Vec<u8>)> = Vec::new(); // (client port, next seq, bytes)
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let incl = u32_at(pcap, at + 8) as usize;
        let frame = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        if frame.len() < 34 || frame[12..14] != [0x08, 0x00] || frame[23] != 6 {
            continue;
        }
        let ip = &frame[14..];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let tcp = &ip[ihl..total];
        let (sport, dport) = (
            u16::from_be_bytes([tcp[0], tcp[1]]),
            u16::from_be_bytes([tcp[2], tcp[3]]),
        );
        if dport != 9092 {
            continue;
        }
        let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
        let syn = tcp[13] & 0x02 != 0;
        let payload = &tcp[usize::from(tcp[12] >> 4) * 4..];
        let i = match streams.iter().position(|s| s.0 == sport) {
            Some(i) => i,
            None => {
                streams.push((sport, seq.wrapping_add(u32::from(syn)), Vec::new()));
                streams.len() - 1
            }
        };
        let s = &mut streams[i];
        if seq == s.1 && !payload.is_empty() {
            s.2.extend_from_slice(payload);
            s.1 = s.1.wrapping_add(payload.len() as u32);
        }
    }
    streams.into_iter().map(|s| s.2).collect()
}

/// A minimal walk of a flexible (v9+) Produce request to its record sets:
/// (topic, offset of the set in the message, set bytes).
fn produce_record_sets(msg: &[u8]) -> Vec<(String, usize, Vec<u8>)> {
    fn uv(b: &[u8], at: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let x = b[*at];
            *at += 1;
            v |= u64::from(x & 0x7f) << shift;
            if x & 0x80 == 0 {
                return v;
            }
            shift += 7;
        }
    }
    let mut at = 4 + 8; // size, api key, version, correlation id
    let client_len = usize::from(u16::from_be_bytes([msg[at], msg[at + 1]]));
    at += 2 + client_len;
    assert_eq!(uv(msg, &mut at), 0, "no header tags");
    let tid = uv(msg, &mut at) as usize; // compact nullable transactional id
    at += tid.saturating_sub(1);
    at += 2 + 4; // acks, timeout
    let mut out = Vec::new();
    for _ in 0..uv(msg, &mut at) - 1 {
        let n = uv(msg, &mut at) as usize - 1;
        let topic = String::from_utf8(msg[at..at + n].to_vec()).unwrap();
        at += n;
        for _ in 0..uv(msg, &mut at) - 1 {
            at += 4; // partition index
            let len = uv(msg, &mut at) as usize - 1;
            out.push((topic.clone(), at, msg[at..at + len].to_vec()));
            at += len;
            assert_eq!(uv(msg, &mut at), 0, "no partition tags");
        }
        assert_eq!(uv(msg, &mut at), 0, "no topic tags");
    }
    out
}

#[test]
fn librdkafka_batches_of_every_codec_decode() {
    let pcap = std::fs::read(CODECS_PCAP).expect("a2 ships in captures/");
    let mut seen = std::collections::BTreeMap::new();
    for stream in client_streams(&pcap) {
        let mut at = 0;
        while at + 8 <= stream.len() {
            let size = i32::from_be_bytes(stream[at..at + 4].try_into().unwrap()) as usize;
            let msg = &stream[at..at + 4 + size];
            at += 4 + size;
            if msg[4..6] != [0, 0] {
                continue; // not Produce
            }
            for (topic, offset, set) in produce_record_sets(msg) {
                let mut sources = Vec::new();
                let rs =
                    decode_record_set(&set, offset, 0, &DecodeOptions::default(), &mut sources);
                assert_eq!(rs.problem, None, "{topic}");
                assert_eq!(rs.crc_mismatches, 0, "{topic}");
                let codec = topic.trim_start_matches("codec-");
                for b in &rs.nodes {
                    assert_eq!(b.name, "RecordBatch");
                    let container = b.child("records");
                    match codec {
                        "none" => assert!(container.is_none()),
                        c => assert_eq!(container.unwrap().ty, c, "{topic}"),
                    }
                    let recs = record_nodes(b);
                    assert_eq!(recs.len() as u64, rs.records / rs.nodes.len() as u64);
                    for r in recs {
                        assert!(r.first_error().is_none());
                        assert!(matches!(r.child("key").unwrap().value, Value::Str(_)));
                        let value = match &r.child("value").unwrap().value {
                            Value::Str(s) => s.clone(),
                            v => panic!("{v:?}"),
                        };
                        assert!(value.starts_with('{'), "{value}");
                        assert!(r.child("Header[0]").is_some());
                        let bytes = bytes_of(r, &set, offset, &sources).len();
                        assert_eq!(bytes, r.length);
                    }
                }
                *seen.entry(codec.to_string()).or_insert(0u64) += rs.records;
            }
        }
    }
    let want: std::collections::BTreeMap<String, u64> = ["gzip", "lz4", "none", "snappy", "zstd"]
        .iter()
        .map(|c| (c.to_string(), 40))
        .collect();
    assert_eq!(seen, want);
}
