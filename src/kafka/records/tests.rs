//! Unit tests of the record-set decoder: the seed batch, spans, every-prefix
//! truncation, CRC marks, control records and hostile lengths.

#![allow(clippy::indexing_slicing)]

use super::*;
use crate::kafka::tree::{render_text, SourceBytes};

/// A record for the test encoder.
#[derive(Clone, Debug, Default)]
pub(super) struct Rec {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub ts_delta: i64,
    pub off_delta: i64,
}

pub(super) fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn varint(out: &mut Vec<u8>, v: i64) {
    uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn sized(out: &mut Vec<u8>, b: &Option<Vec<u8>>) {
    match b {
        None => varint(out, -1),
        Some(b) => {
            varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// A record's bytes, with its length prefix.
pub(super) fn record(r: &Rec) -> Vec<u8> {
    let mut body = vec![0u8]; // attributes
    varint(&mut body, r.ts_delta);
    varint(&mut body, r.off_delta);
    sized(&mut body, &r.key);
    sized(&mut body, &r.value);
    varint(&mut body, r.headers.len() as i64);
    for (k, v) in &r.headers {
        sized(&mut body, &Some(k.clone()));
        sized(&mut body, v);
    }
    let mut out = Vec::new();
    varint(&mut out, body.len() as i64);
    out.extend_from_slice(&body);
    out
}

/// A RecordBatch v2 around `payload` (the records, compressed or not).
pub(super) fn batch(
    base_offset: i64,
    attributes: i16,
    count: i32,
    base_ts: i64,
    payload: &[u8],
) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&base_offset.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // batchLength, patched
    b.extend_from_slice(&(-1i32).to_be_bytes()); // partitionLeaderEpoch
    b.push(2); // magic
    b.extend_from_slice(&0u32.to_be_bytes()); // crc, patched
    b.extend_from_slice(&attributes.to_be_bytes());
    b.extend_from_slice(&count.wrapping_sub(1).to_be_bytes()); // lastOffsetDelta
    b.extend_from_slice(&base_ts.to_be_bytes());
    b.extend_from_slice(&base_ts.to_be_bytes()); // maxTimestamp
    b.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    b.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    b.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(payload);
    fix(&mut b);
    b
}

/// Rewrites batchLength and the CRC after an edit.
pub(super) fn fix(b: &mut [u8]) {
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

fn recs() -> Vec<Rec> {
    vec![
        Rec {
            key: Some(b"k0".to_vec()),
            value: Some(b"hello".to_vec()),
            ..Rec::default()
        },
        Rec {
            key: None,
            value: Some(vec![0, 1, 2, 0xff]),
            headers: vec![(b"h".to_vec(), Some(b"v".to_vec())), (b"n".to_vec(), None)],
            ts_delta: 5,
            off_delta: 1,
        },
        Rec {
            key: Some(Vec::new()),
            value: None,
            ts_delta: -3,
            off_delta: 2,
            ..Rec::default()
        },
    ]
}

fn plain_batch(base_offset: i64) -> Vec<u8> {
    let payload: Vec<u8> = recs().iter().flat_map(record).collect();
    batch(base_offset, 0, 3, 1_700_000_000_000, &payload)
}

fn decode(data: &[u8], base: usize) -> (RecordSet, Vec<ByteSource>) {
    let mut sources = Vec::new();
    let rs = decode_record_set(data, base, 0, &DecodeOptions::default(), &mut sources);
    (rs, sources)
}

/// Every node lies inside its source; children in the same source lie inside
/// their parent; nothing overlaps among siblings in one source.
pub(super) fn check_spans(nodes: &[Node], outer: std::ops::Range<usize>, sources: &[ByteSource]) {
    fn bound(
        n: &Node,
        outer: &std::ops::Range<usize>,
        sources: &[ByteSource],
    ) -> std::ops::Range<usize> {
        if n.source == 0 {
            outer.clone()
        } else {
            0..sources[usize::from(n.source) - 1].data.len()
        }
    }
    fn go(n: &Node, outer: &std::ops::Range<usize>, sources: &[ByteSource]) {
        let b = bound(n, outer, sources);
        assert!(
            n.offset >= b.start && n.end() <= b.end,
            "{} [{}:{}, {}] outside {b:?}",
            n.name,
            n.source,
            n.offset,
            n.length
        );
        let mut last_end = 0;
        for c in &n.children {
            if c.source == n.source {
                assert!(
                    c.offset >= n.offset && c.end() <= n.end(),
                    "{} outside parent {}",
                    c.name,
                    n.name
                );
                assert!(c.offset >= last_end, "{} overlaps its sibling", c.name);
                last_end = c.end();
            }
            go(c, outer, sources);
        }
    }
    for n in nodes {
        go(n, &outer, sources);
    }
}

fn lines(n: &Node) -> Vec<(String, String, String, usize, usize)> {
    let mut v = Vec::new();
    n.walk(&mut |n, _| {
        v.push((
            n.name.to_string(),
            n.ty.to_string(),
            n.value_text(),
            n.offset,
            n.length,
        ))
    });
    v
}

#[test]
fn seed_empty_batch_is_reproduced() {
    let b = batch(0, 0, 0, -1, &[]);
    assert_eq!(b.len(), 61);
    let (rs, sources) = decode(&b, 0x1e);
    assert!(sources.is_empty());
    assert_eq!(rs.summary, "1 RecordBatch");
    assert_eq!((rs.batches, rs.records, rs.crc_mismatches), (1, 0, 0));
    assert_eq!(rs.problem, None);
    assert_eq!(rs.nodes.len(), 1);
    let want: &[(&str, &str, &str, usize, usize)] = &[
        ("RecordBatch", "v2", "empty", 0x1e, 61),
        ("baseOffset", "int64", "0", 0x1e, 8),
        ("batchLength", "int32", "49", 0x26, 4),
        ("partitionLeaderEpoch", "int32", "-1", 0x2a, 4),
        ("magic", "int8", "2", 0x2e, 1),
        ("crc", "uint32", "crc32c of the bytes that follow", 0x2f, 4),
        ("attributes", "int16", "0", 0x33, 2),
        ("lastOffsetDelta", "int32", "-1", 0x35, 4),
        ("baseTimestamp", "int64", "-1", 0x39, 8),
        ("maxTimestamp", "int64", "-1", 0x41, 8),
        ("producerId", "int64", "-1", 0x49, 8),
        ("producerEpoch", "int16", "-1", 0x51, 2),
        ("baseSequence", "int32", "-1", 0x53, 4),
        ("recordsCount", "int32", "0", 0x57, 4),
    ];
    let got = lines(&rs.nodes[0]);
    let want: Vec<_> = want
        .iter()
        .map(|&(a, b, c, d, e)| (a.to_string(), b.to_string(), c.to_string(), d, e))
        .collect();
    assert_eq!(got, want);
    for n in &rs.nodes[0].children {
        assert_eq!(n.role, Role::RecordBatch);
        assert!(n.about.is_some(), "{}", n.name);
    }
    assert!(render_text(&rs.nodes[0]).contains("crc32c of the bytes that follow"));
}

#[test]
fn empty_set() {
    let (rs, _) = decode(&[], 7);
    assert_eq!(rs.summary, "empty");
    assert!(rs.nodes.is_empty() && rs.problem.is_none());
}

#[test]
fn records_have_exact_spans() {
    let base = 100;
    let b = plain_batch(40);
    let (rs, sources) = decode(&b, base);
    assert_eq!(rs.problem, None);
    assert_eq!(rs.summary, "1 RecordBatch, 3 records");
    let bn = &rs.nodes[0];
    assert_eq!(bn.value_text(), "3 records");
    assert_eq!(
        bn.child("attributes").unwrap().value_text(),
        "0",
        "a zero attributes field shows no words"
    );
    assert_eq!(
        bn.child("baseTimestamp").unwrap().value_text(),
        "1700000000000 (2023-11-14T22:13:20.000Z)"
    );
    check_spans(&rs.nodes, base..base + b.len(), &sources);
    // Record[0] starts right after the 61-byte header.
    let r0 = bn.child("Record[0]").unwrap();
    let r0_bytes = record(&recs()[0]);
    assert_eq!((r0.offset, r0.length), (base + 61, r0_bytes.len()));
    assert_eq!(r0.value_text(), "offset 40");
    assert_eq!(r0.role, Role::Record);
    let names: Vec<_> = r0.children.iter().map(|c| c.name.to_string()).collect();
    assert_eq!(
        names,
        [
            "length",
            "attributes",
            "timestampDelta",
            "offsetDelta",
            "keyLength",
            "key",
            "valueLength",
            "value",
            "headersCount"
        ]
    );
    // length(1) attributes(1) timestampDelta(1) offsetDelta(1) keyLength(1) key(2)
    let key = r0.child("key").unwrap();
    assert_eq!((key.offset, key.length), (base + 61 + 5, 2));
    assert_eq!(key.value, Value::Str("k0".into()));
    assert_eq!(key.ty, "bytes");
    let value = r0.child("value").unwrap();
    assert_eq!((value.offset, value.length), (base + 61 + 8, 5));
    assert_eq!(r0.child("length").unwrap().ty, "varint");
    assert_eq!(r0.child("timestampDelta").unwrap().ty, "varlong");
    // Record[1]: null key, binary value, two headers.
    let r1 = bn.child("Record[1]").unwrap();
    assert_eq!(r1.offset, r0.end());
    assert_eq!(r1.value_text(), "offset 41");
    assert_eq!(r1.child("keyLength").unwrap().value_text(), "-1 (null)");
    assert!(r1.child("key").is_none());
    assert_eq!(
        r1.child("value").unwrap().value,
        Value::bytes(&[0, 1, 2, 0xff])
    );
    assert_eq!(
        r1.child("timestampDelta").unwrap().value_text(),
        "5 (2023-11-14T22:13:20.005Z)"
    );
    let h0 = r1.child("Header[0]").unwrap();
    assert_eq!(h0.value, Value::Str("h".into()));
    assert_eq!(h0.length, 4);
    assert_eq!(h0.child("headerKey").unwrap().ty, "string");
    assert_eq!(
        h0.child("headerValue").unwrap().value,
        Value::Str("v".into())
    );
    let h1 = r1.child("Header[1]").unwrap();
    assert_eq!(
        h1.child("headerValueLength").unwrap().value_text(),
        "-1 (null)"
    );
    assert_eq!(h1.end(), r1.end());
    let r2 = bn.child("Record[2]").unwrap();
    assert_eq!(r2.end(), base + b.len());
    assert_eq!(r2.child("key").unwrap().length, 0);
}

#[test]
fn every_prefix_of_a_set_is_partial_not_a_problem() {
    let first = plain_batch(0);
    let second = plain_batch(3);
    let set = [first.clone(), second.clone()].concat();
    let (whole, _) = decode(&set, 0);
    for cut in 0..set.len() {
        let (rs, sources) = decode(&set[..cut], 10);
        assert_eq!(rs.problem, None, "cut at {cut}");
        check_spans(&rs.nodes, 10..10 + cut, &sources);
        if cut == 0 {
            assert!(rs.nodes.is_empty());
            continue;
        }
        let last = rs.nodes.last().unwrap();
        if cut == first.len() {
            assert_eq!(rs.nodes.len(), 1);
            continue;
        }
        assert_eq!(last.name, "partial batch", "cut at {cut}");
        assert_eq!(last.end(), 10 + cut);
        assert!(rs.summary.ends_with("+ partial batch"), "{}", rs.summary);
        if cut > first.len() {
            // The first batch is intact, spans shifted by the base only.
            let a = &rs.nodes[0];
            let b = &whole.nodes[0];
            assert_eq!(lines(a).len(), lines(b).len());
            for (x, y) in lines(a).iter().zip(lines(b)) {
                assert_eq!(
                    (x.0.as_str(), x.2.as_str(), x.3, x.4),
                    (y.0.as_str(), y.2.as_str(), y.3 + 10, y.4)
                );
            }
            let rem = cut - first.len();
            if rem >= 12 {
                assert_eq!(
                    last.value_text(),
                    format!(
                        "truncated by the broker's fetch size limit: {rem} of {} bytes",
                        second.len()
                    )
                );
                assert_eq!(
                    last.child("batchLength").unwrap().value,
                    Value::Int(second.len() as i64 - 12)
                );
            }
        }
    }
}

#[test]
fn records_cut_inside_a_complete_batch_stop_at_the_cut() {
    // batchLength and CRC are rewritten so the batch itself is whole, but its
    // records end early: a real problem, with the records before the cut intact.
    let full = plain_batch(0);
    let r0 = record(&recs()[0]).len();
    for cut in 61..full.len() {
        let mut b = full[..cut].to_vec();
        fix(&mut b);
        let (rs, sources) = decode(&b, 0);
        check_spans(&rs.nodes, 0..b.len(), &sources);
        assert_eq!(rs.crc_mismatches, 0);
        let (off, src, what) = rs.problem.clone().expect("a problem");
        assert_eq!(src, 0);
        assert!(off <= cut, "problem at {off} past the cut {cut}: {what}");
        let bn = &rs.nodes[0];
        if cut >= 61 + r0 {
            let r = bn.child("Record[0]").unwrap();
            assert_eq!(r.value_text(), "offset 0");
            assert!(r.first_error().is_none());
        }
    }
}

#[test]
fn crc_mismatch_is_a_mark_not_a_problem() {
    let mut b = plain_batch(0);
    b[61 + 8] ^= 0x01; // "hello" → "iello"
    let (rs, _) = decode(&b, 0);
    assert_eq!(rs.problem, None);
    assert_eq!(rs.crc_mismatches, 1);
    let crc = rs.nodes[0].child("crc").unwrap();
    assert!(matches!(crc.value, Value::Uint(_)));
    assert!(
        crc.value_text().contains("CRC MISMATCH: expected 0x"),
        "{}",
        crc.value_text()
    );
    assert!(crc.about.as_deref().unwrap().contains("mismatch"));
    assert_eq!(rs.nodes[0].value_text(), "3 records (CRC MISMATCH)");
    let (ok, _) = decode(&plain_batch(0), 0);
    assert!(ok.nodes[0]
        .child("crc")
        .unwrap()
        .about
        .as_deref()
        .unwrap()
        .ends_with("valid"));
}

#[test]
fn control_record_commit_marker() {
    let r = Rec {
        key: Some(vec![0, 0, 0, 1]),         // version 0, type 1 (COMMIT)
        value: Some(vec![0, 0, 0, 0, 0, 7]), // version 0, CoordinatorEpoch 7
        ..Rec::default()
    };
    let b = batch(9, 0x30, 1, -1, &record(&r)); // transactional + control
    let (rs, sources) = decode(&b, 0);
    assert_eq!(rs.problem, None);
    check_spans(&rs.nodes, 0..b.len(), &sources);
    let bn = &rs.nodes[0];
    assert_eq!(bn.value_text(), "1 record, control");
    assert_eq!(
        bn.child("attributes").unwrap().value_text(),
        "48 (none, CreateTime, transactional, control)"
    );
    let rec = bn.child("Record[0]").unwrap();
    assert_eq!(rec.value_text(), "offset 9, COMMIT");
    check_control_record(rec, 1, Some(7));
}

/// A control record's key and value as the schemas decode them: the key's
/// `Version` and `Type` (of type `t`, named) at its bytes 0 and 2, and for
/// ABORT and COMMIT the value's `Version` and `CoordinatorEpoch` (`epoch`
/// when given) at 0 and 2, every node in the record's byte source.
fn check_control_record(rec: &Node, t: i16, epoch: Option<i64>) {
    let name = ["ABORT", "COMMIT"][usize::from(t == 1)];
    let key = rec.child("key").unwrap();
    assert_eq!(key.value_text(), format!("control record key ({name})"));
    let at = |n: &Node, field: &str| {
        let f = n.child(field).unwrap_or_else(|| panic!("no {field}"));
        assert_eq!(f.source, rec.source, "{field}");
        (f.value_text(), f.offset - n.offset, f.length)
    };
    assert_eq!(at(key, "Version"), ("0".into(), 0, 2));
    assert_eq!(at(key, "Type"), (format!("{t} ({name})"), 2, 2));
    assert_eq!(key.children.len(), 2);
    let value = rec.child("value").unwrap();
    assert_eq!(value.value_text(), "EndTxnMarker");
    assert_eq!(at(value, "Version"), ("0".into(), 0, 2));
    let (e, off, len) = at(value, "CoordinatorEpoch");
    assert_eq!((off, len), (2, 4));
    if let Some(epoch) = epoch {
        assert_eq!(e, epoch.to_string());
    }
}

#[test]
fn control_records_in_captures_decode_through_the_schemas() {
    use crate::test_captures;
    // b5-transactions.pcap (shipped) holds 4 ABORT control batches, each
    // fetched by two consumers; other captures may add more.
    let mut found = 0;
    let mut in_b5 = 0;
    for p in test_captures::all() {
        let before = found;
        for m in test_captures::messages(&p, test_captures::full_trees()) {
            let Some(d) = &m.decoded else { continue };
            d.root.walk(&mut |n, _| {
                let key = n
                    .child("key")
                    .filter(|k| k.value_text().starts_with("control"));
                let Some(t) = key.and_then(|k| k.child("Type")) else {
                    return;
                };
                if let Value::Int(t @ (0 | 1)) = t.value {
                    check_control_record(n, t as i16, None);
                    found += 1;
                }
            });
        }
        if p.ends_with("b5-transactions.pcap") {
            in_b5 = found - before;
        }
    }
    assert_eq!(in_b5, 8, "ABORT markers decoded in b5-transactions.pcap");
}

/// The bytes of a LeaderChangeMessage v0 (flexible): Version, LeaderId,
/// the Voters and GrantingVoters (compact arrays of VoterId structs), each
/// struct and the message ending in an empty tagged-field section.
fn leader_change(leader: i32, voters: &[i32], granting: &[i32]) -> Vec<u8> {
    let mut v = 0i16.to_be_bytes().to_vec();
    v.extend_from_slice(&leader.to_be_bytes());
    for set in [voters, granting] {
        uvarint(&mut v, set.len() as u64 + 1);
        for id in set {
            v.extend_from_slice(&id.to_be_bytes());
            v.push(0);
        }
    }
    v.push(0);
    v
}

#[test]
fn leader_change_and_kraft_version_values_decode_through_their_schemas() {
    let value = leader_change(3, &[1, 2, 3], &[3]);
    let mut newer = 0i16.to_be_bytes().to_vec(); // KRaftVersionRecord v0 ..
    newer.extend_from_slice(&1i16.to_be_bytes()); // .. KRaftVersion 1
    newer.extend_from_slice(&[0, 0xab, 0xcd]); // tagged fields, then newer bytes
    let payload = [
        record(&Rec {
            key: Some(vec![0, 0, 0, 2]), // LEADER_CHANGE
            value: Some(value.clone()),
            ..Rec::default()
        }),
        record(&Rec {
            key: Some(vec![0, 1, 0, 5, 0xee]), // key v1, KRAFT_VERSION, a newer byte
            value: Some(newer),
            off_delta: 1,
            ..Rec::default()
        }),
    ]
    .concat();
    for codec in [0u16, 1] {
        // Compressed, the records and their fields are in source 1.
        let b = batch(
            0,
            0x20 | codec as i16,
            2,
            -1,
            &compress(codec as i16, &payload),
        );
        let (rs, sources) = decode(&b, 0);
        assert_eq!(rs.problem, None);
        check_spans(&rs.nodes, 0..b.len(), &sources);
        let recs = match codec {
            0 => &rs.nodes[0],
            _ => rs.nodes[0].child("records").unwrap(),
        };
        let rec = recs.child("Record[0]").unwrap();
        assert_eq!(rec.value_text(), "offset 0, LEADER_CHANGE");
        let v = rec.child("value").unwrap();
        assert_eq!(v.value_text(), "LeaderChangeMessage");
        assert_eq!(v.length, value.len());
        let leader = v.child("LeaderId").unwrap();
        assert_eq!(
            (leader.value_text(), leader.offset),
            ("3".into(), v.offset + 2)
        );
        let voters = v.child("Voters").unwrap();
        assert_eq!(voters.value_text(), "3 elements");
        assert!(v.children.iter().all(|k| k.source == codec));
        let granting = v.path(&["GrantingVoters", "Voter[0]", "VoterId"]).unwrap();
        assert_eq!(granting.value_text(), "3");
        let rec = recs.child("Record[1]").unwrap();
        assert_eq!(rec.value_text(), "offset 1, KRAFT_VERSION");
        // A newer key version: its Type read as version 0's, the rest unparsed.
        let key = rec.child("key").unwrap();
        let names: Vec<_> = key.children.iter().map(|k| k.name.to_string()).collect();
        assert_eq!(names, ["Version", "Type", "unparsed"]);
        let unparsed = key.child("unparsed").unwrap();
        assert_eq!(
            (unparsed.offset, unparsed.length, unparsed.source),
            (key.offset + 4, 1, codec)
        );
        let v = rec.child("value").unwrap();
        assert_eq!(v.value_text(), "KRaftVersionRecord");
        let kv = v.child("KRaftVersion").unwrap();
        assert_eq!((kv.value_text(), kv.offset), ("1".into(), v.offset + 2));
        let unparsed = v.child("unparsed").unwrap();
        assert_eq!((unparsed.offset, unparsed.length), (v.offset + 5, 2));
    }
}

#[test]
fn control_values_without_a_known_version_are_errors_and_unknown_types_bytes() {
    let payload = [
        record(&Rec {
            key: Some(vec![0, 0, 0, 0]),               // ABORT
            value: Some(vec![0xff, 0xff, 0, 0, 0, 1]), // version -1
            ..Rec::default()
        }),
        record(&Rec {
            key: Some(vec![0, 0, 0, 9]), // a type Kafka does not define
            value: Some(vec![1, 2, 3]),
            off_delta: 1,
            ..Rec::default()
        }),
    ]
    .concat();
    let b = batch(0, 0x30, 2, -1, &payload);
    let (rs, _) = decode(&b, 0);
    let rec = rs.nodes[0].child("Record[0]").unwrap();
    let v = rec.child("value").unwrap();
    assert!(v.children.is_empty());
    assert_eq!(
        v.error.as_deref(),
        Some("EndTxnMarker: no version it knows at the start")
    );
    assert_eq!(rs.problem.unwrap().0, v.offset);
    let rec = rs.nodes[0].child("Record[1]").unwrap();
    assert_eq!(rec.value_text(), "offset 1, UNKNOWN");
    let v = rec.child("value").unwrap();
    assert!(v.children.is_empty() && v.error.is_none());
}

#[test]
fn a_huge_records_count_stops_at_the_first_record_that_does_not_fit() {
    let payload = record(&recs()[0]);
    let b = batch(0, 0, 1_000_000_000, -1, &payload);
    let (rs, _) = decode(&b, 0);
    let bn = &rs.nodes[0];
    assert_eq!(
        bn.children
            .iter()
            .filter(|c| c.name.starts_with("Record["))
            .count(),
        1
    );
    let missing = bn.child("missing records").unwrap();
    assert_eq!((missing.offset, missing.length), (b.len(), 0));
    assert_eq!(rs.problem.unwrap().0, b.len());
    // A huge headersCount with few bytes ends with the record.
    let mut body = vec![0u8, 0, 0, 1, 1]; // attrs, tsDelta, offDelta, key null, value null
    varint(&mut body, i64::from(i32::MAX));
    body.extend_from_slice(&[2, b'a', 1]); // one header: key "a", value null
    let mut rec = Vec::new();
    varint(&mut rec, body.len() as i64);
    rec.extend_from_slice(&body);
    let b = batch(0, 0, 1, -1, &rec);
    let (rs, _) = decode(&b, 0);
    let r = rs.nodes[0].child("Record[0]").unwrap();
    assert!(r.child("Header[0]").is_some());
    assert!(r.child("Header[1]").unwrap().first_error().is_some());
    assert!(rs.problem.is_some());
}

#[test]
fn a_record_longer_than_the_batch_is_an_error_and_bytes_it_does_not_use_are_marked() {
    let mut rec = record(&recs()[0]);
    rec[0] = 0x7e; // length 63, far past the batch
    let b = batch(0, 0, 1, -1, &rec);
    let (rs, _) = decode(&b, 0);
    let (off, _, what) = rs.problem.unwrap();
    assert_eq!(off, 61);
    assert!(what.contains("exceeds"), "{what}");

    let mut rec = record(&recs()[0]);
    rec[0] += 4; // two more bytes inside the length (zigzag: +2 per unit)
    rec.extend_from_slice(&[0xaa, 0xbb]);
    let b = batch(0, 0, 1, -1, &rec);
    let (rs, _) = decode(&b, 0);
    let r = rs.nodes[0].child("Record[0]").unwrap();
    let u = r.child("unclaimed").unwrap();
    assert_eq!((u.offset, u.length), (b.len() - 2, 2));
    assert!(u.error.as_deref().unwrap().contains("no field claims"));
}

#[test]
fn negative_length_and_unknown_magic_are_problems() {
    let mut b = plain_batch(0);
    b[8..12].copy_from_slice(&(-5i32).to_be_bytes());
    let (rs, _) = decode(&b, 0);
    assert!(rs.problem.unwrap().2.contains("negative"));
    let mut b = plain_batch(0);
    b[16] = 7;
    let (rs, _) = decode(&b, 0);
    assert!(rs.problem.unwrap().2.contains("magic 7"));
    assert_eq!(
        rs.nodes[0].child("batchLength").unwrap().value,
        Value::Int(b.len() as i64 - 12)
    );
}

#[test]
fn hostile_bytes_never_panic() {
    // Deterministic mutations of a valid batch and of a gzip batch.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let plain = plain_batch(0);
    let payload: Vec<u8> = recs().iter().flat_map(record).collect();
    let gz = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&payload).unwrap();
        batch(0, 1, 3, -1, &e.finish().unwrap())
    };
    let opts = DecodeOptions {
        max_decompressed: 1 << 16,
        ..DecodeOptions::default()
    };
    for input in [plain, gz] {
        for _ in 0..3000 {
            let mut b = input.clone();
            for _ in 0..(next() % 4 + 1) {
                let i = (next() as usize) % b.len();
                b[i] = next() as u8;
            }
            if next() % 2 == 0 {
                fix(&mut b);
            }
            let mut sources = Vec::new();
            let rs = decode_record_set(&b, 0, 0, &opts, &mut sources);
            check_spans(&rs.nodes, 0..b.len(), &sources);
        }
    }
}

#[test]
fn summaries() {
    let two = [plain_batch(0), plain_batch(3)].concat();
    assert_eq!(decode(&two, 0).0.summary, "2 RecordBatches, 6 records");
    assert_eq!(decode(&two, 0).0.records, 6);
    assert_eq!(decode(&[0; 5], 0).0.summary, "5 bytes + partial batch");
}

#[test]
fn every_prefix_of_decompressed_records_is_a_problem_in_that_source() {
    use std::io::Write;
    let payload: Vec<u8> = recs().iter().flat_map(record).collect();
    let r0 = record(&recs()[0]).len();
    for cut in 0..payload.len() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&payload[..cut]).unwrap();
        let b = batch(0, 1, 3, -1, &e.finish().unwrap());
        let (rs, sources) = decode(&b, 0);
        check_spans(&rs.nodes, 0..b.len(), &sources);
        assert_eq!(sources.len(), 1);
        let (off, src, _) = rs.problem.expect("a problem");
        assert_eq!(src, 1, "cut at {cut}");
        assert!(off <= cut);
        let container = rs.nodes[0].child("records").unwrap();
        assert_eq!(
            container.value_text(),
            format!("{} bytes → {cut} bytes", b.len() - 61)
        );
        if cut >= r0 {
            let r = container.child("Record[0]").unwrap();
            assert_eq!((r.source, r.offset, r.length), (1, 0, r0));
            assert!(r.first_error().is_none());
        }
    }
}

// ---------------------------------------------------------------------------
// `DecodeOptions::records_json`: the records written straight to JSON are
// the bytes `Node::write_json` writes for their nodes.

/// A record set decoded at offset 7 of its message (1 MiB decompression
/// limit), with the byte sources it made and the message's bytes: what a
/// tree decoded with `records_json` is written from.
fn decode_at_7(set: &[u8], records_json: bool) -> (RecordSet, Vec<ByteSource>, Vec<u8>) {
    let opts = DecodeOptions {
        max_decompressed: 1 << 20,
        records_json,
        ..DecodeOptions::default()
    };
    let mut sources = Vec::new();
    let rs = decode_record_set(set, 7, 0, &opts, &mut sources);
    let message = [&[0u8; 7][..], set].concat();
    (rs, sources, message)
}

/// What a record set decodes to, with its nodes' JSON in place of the nodes,
/// and how many records were written as JSON (`Value::Records` nodes'
/// records). The set sits at offset 7 of its message.
fn set_json(set: &[u8], records_json: bool) -> (Vec<u8>, String, String, usize) {
    let (rs, sources, message) = decode_at_7(set, records_json);
    let bytes = SourceBytes {
        message: &message,
        sources: &sources,
    };
    let mut out = Vec::new();
    let mut fast = 0;
    for n in &rs.nodes {
        n.write_json_in(&mut out, &bytes);
        out.push(b'\n');
        n.walk(&mut |n, _| match &n.value {
            // A batch header's thirteen fields.
            Value::Json(j) => {
                assert_eq!(n.role, Role::RecordBatch);
                assert_eq!(json_objects(j), 13);
            }
            Value::Records(d) => {
                assert_eq!(n.role, Role::Record);
                let j = deferred_json(n, &bytes);
                assert_eq!(json_objects(&j[1..j.len() - 1]), d.count as usize);
                fast += d.count as usize;
            }
            _ => {}
        });
    }
    let facts = format!(
        "{:?} {} {} {} {:?}",
        rs.problem,
        rs.batches,
        rs.records,
        rs.crc_mismatches,
        sources
            .iter()
            .map(|s| (&s.name, s.len, s.parent_offset))
            .collect::<Vec<_>>()
    );
    (out, rs.summary, facts, fast)
}

/// How many top-level objects a `Value::Json` holds.
fn json_objects(j: &[u8]) -> usize {
    let text = format!("[{}]", String::from_utf8_lossy(j));
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Array(a)) => a.len(),
        other => panic!("not JSON objects: {other:?}"),
    }
}

/// What a `Value::Records` node writes from `bytes`.
fn deferred_json(n: &Node, bytes: &SourceBytes<'_>) -> Vec<u8> {
    let mut out = b"[".to_vec();
    n.write_json_in(&mut out, bytes);
    out.push(b']');
    out
}

/// Asserts that `set` writes the same JSON (and decodes to the same facts)
/// with and without `records_json`; returns the records written as JSON.
fn same_json(set: &[u8]) -> usize {
    let (want, summary, facts, none) = set_json(set, false);
    assert_eq!(none, 0);
    let (got, summary2, facts2, fast) = set_json(set, true);
    if want != got {
        let at = want.iter().zip(&got).take_while(|(a, b)| a == b).count();
        let show = |b: &[u8]| {
            String::from_utf8_lossy(&b[at.saturating_sub(150)..(at + 80).min(b.len())]).into_owned()
        };
        panic!(
            "JSON differs at byte {at}:\ntree: {}\nfast: {}",
            show(&want),
            show(&got)
        );
    }
    assert_eq!((summary, facts), (summary2, facts2));
    fast
}

/// Records whose contents take every display path: strings that need
/// escapes in JSON or in `Debug`, non-UTF-8 and control bytes, previews
/// cut at 16 bytes, text too long to show, nulls, empties, many headers.
fn tricky_recs() -> Vec<Rec> {
    let text = |s: &str| Some(s.as_bytes().to_vec());
    vec![
        Rec {
            key: text("k\"\\q"),
            value: text("{\"a\":\"b\\\\c\"}\t\r\n"),
            headers: vec![
                (b"\xff\xfeh\"".to_vec(), text("é✓ \u{85}")),
                (b"".to_vec(), Some(Vec::new())),
                (b"tab\there".to_vec(), None),
            ],
            ts_delta: 1234,
            off_delta: 0,
        },
        Rec {
            key: Some(vec![0, 1, 2, 0x1b, b'"', 0x7f, 0x80, 0xff]),
            value: Some((0u8..40).collect()),
            headers: vec![(b"\x01\x1f".to_vec(), Some(vec![b'a'; 16]))],
            ts_delta: -1_700_000_000_001,
            off_delta: -5,
        },
        Rec {
            key: Some(vec![b'x'; 4096]),
            value: Some(vec![b'y'; 4097]),
            headers: (0..40).map(|i| (vec![b'h', i], None)).collect(),
            ts_delta: i64::from(i32::MAX),
            off_delta: i64::from(i32::MIN),
        },
        Rec {
            key: text("\u{200d}zwj \u{301}accent \u{feff}"),
            value: text("a\u{7f}b"),
            ts_delta: i64::MAX,
            off_delta: 1,
            ..Rec::default()
        },
        Rec::default(),
    ]
}

#[test]
fn records_json_is_the_trees_json() {
    let recs = tricky_recs();
    let payload: Vec<u8> = recs.iter().flat_map(record).collect();
    let n = recs.len() as i32;
    // Every record of a clean batch is written as JSON, whatever its
    // contents, in the message's source and in a decompressed one.
    for base_ts in [1_700_000_000_000, 0, -1, i64::MAX, 253_402_300_799_000] {
        let b = batch(i64::MAX - 2, 0, n, base_ts, &payload);
        assert_eq!(same_json(&b), recs.len());
    }
    for codec in 1..=4 {
        let b = batch(42, codec, n, 1_700_000_000_000, &compress(codec, &payload));
        assert_eq!(same_json(&b), recs.len(), "codec {codec}");
    }
    // Two batches, the second in a set that ends cut short.
    let two = [plain_batch(0), plain_batch(3)].concat();
    assert_eq!(same_json(&two), 6);
    assert_eq!(same_json(&two[..two.len() - 5]), 3);
}

/// The `Value::Records` nodes of a set decoded with `records_json` (at
/// offset 7 of its message, as `set_json`), as (source, first, count), and
/// each one's JSON from the bytes, checked to be as many records.
fn runs(set: &[u8]) -> Vec<(u16, u64, u64)> {
    let (rs, sources, message) = decode_at_7(set, true);
    let bytes = SourceBytes {
        message: &message,
        sources: &sources,
    };
    let mut found = Vec::new();
    for n in &rs.nodes {
        n.walk(&mut |n, _| {
            if let Value::Records(d) = &n.value {
                let j = deferred_json(n, &bytes);
                assert_eq!(json_objects(&j[1..j.len() - 1]), d.count as usize);
                found.push((n.source, d.first, d.count));
            }
        });
    }
    found
}

#[test]
fn clean_records_make_one_run_per_stretch() {
    let recs = tricky_recs();
    let rec: Vec<Vec<u8>> = recs.iter().map(record).collect();
    let n = recs.len() as u64;
    let payload: Vec<u8> = rec.concat();
    // One run of all the records, in the message and in each codec's source.
    let b = batch(7, 0, n as i32, 1_700_000_000_000, &payload);
    assert_eq!(runs(&b), [(0, 0, n)]);
    for codec in 1..=4 {
        let b = batch(7, codec, n as i32, 5, &compress(codec, &payload));
        assert_eq!(runs(&b), [(1, 0, n)], "codec {codec}");
    }
    // Runs cut by an unclean record (an unclaimed byte): before and after
    // it, in the message and in a decompressed source; a run per batch.
    let mut bad = rec[1].clone();
    bad[0] += 2;
    bad.push(0);
    let payload = [rec[0].clone(), bad, rec[2].clone(), rec[3].clone()].concat();
    assert_eq!(
        runs(&batch(0, 0, 4, 1_700_000_000_000, &payload)),
        [(0, 0, 1), (0, 2, 2)]
    );
    assert_eq!(
        runs(&batch(0, 4, 4, -1, &compress(4, &payload))),
        [(1, 0, 1), (1, 2, 2)]
    );
    let two = [plain_batch(0), plain_batch(3)].concat();
    assert_eq!(runs(&two), [(0, 0, 3), (0, 0, 3)]);
    // A batch cut short is not decoded record by record.
    assert_eq!(runs(&two[..two.len() - 5]), [(0, 0, 3)]);
}

#[test]
fn deferred_records_without_their_bytes_are_written_as_a_node() {
    let b = batch(
        0,
        0,
        3,
        5,
        &recs().iter().flat_map(record).collect::<Vec<_>>(),
    );
    let opts = DecodeOptions {
        records_json: true,
        ..DecodeOptions::default()
    };
    let rs = decode_record_set(&b, 0, 0, &opts, &mut Vec::new());
    let run = rs.nodes[0]
        .children
        .iter()
        .find(|n| matches!(n.value, Value::Records(_)))
        .expect("a run");
    // No bytes, bytes too short, other bytes: the node as any node (valid
    // JSON, its span and value), never a panic nor half a record.
    let other = vec![0xffu8; b.len()];
    for message in [&[][..], &b[..b.len() - 1], &other] {
        let bytes = SourceBytes {
            message,
            sources: &[],
        };
        let mut out = Vec::new();
        run.write_json_in(&mut out, &bytes);
        let v: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
        assert_eq!(v, run.to_json());
        assert_eq!(v["value"], "3 records");
    }
    let mut out = Vec::new();
    run.write_json(&mut out);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out).unwrap(),
        run.to_json()
    );
}

/// `payload` compressed with Kafka's codec `codec` (1 gzip .. 4 zstd).
fn compress(codec: i16, payload: &[u8]) -> Vec<u8> {
    use std::io::Write;
    match codec {
        1 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(payload).unwrap();
            e.finish().unwrap()
        }
        2 => snap::raw::Encoder::new().compress_vec(payload).unwrap(),
        3 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(payload).unwrap();
            e.finish().unwrap()
        }
        4 => zstd::encode_all(payload, 1).unwrap(),
        _ => payload.to_vec(),
    }
}

#[test]
fn records_json_on_every_capture_is_the_trees_json() {
    use crate::test_captures;
    let json = DecodeOptions {
        records_json: true,
        ..DecodeOptions::default()
    };
    let tree = DecodeOptions::default();
    let (mut messages, mut fast, mut headers) = (0, 0, 0);
    for p in test_captures::all() {
        for m in test_captures::messages(&p, test_captures::full_trees()) {
            let want = crate::analyzer::redecode(&m.info, &m.raw, &tree);
            let got = crate::analyzer::redecode(&m.info, &m.raw, &json);
            let bytes = SourceBytes {
                message: &m.raw.bytes,
                sources: &got.sources,
            };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            want.root.write_json(&mut a);
            got.root.write_json_in(&mut b, &bytes);
            assert!(
                a == b,
                "{}: message {} writes other JSON",
                p.display(),
                m.info.index
            );
            assert_eq!(want.error, got.error);
            messages += 1;
            got.root.walk(&mut |n, _| match &n.value {
                Value::Records(d) => {
                    let j = deferred_json(n, &bytes);
                    assert_eq!(json_objects(&j[1..j.len() - 1]), d.count as usize);
                    fast += d.count as usize;
                }
                Value::Json(_) => headers += 1,
                _ => {}
            });
        }
    }
    // The shipped captures hold produced and fetched records.
    assert!(
        messages > 0 && fast > 0,
        "{messages} messages, {fast} records"
    );
}

mod json_props {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    fn content() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            "[a-z\"\\\\ \t\n\r\u{0}\u{1b}\u{7f}é✓\u{85}\u{200d}\u{301}{}:]{0,24}"
                .prop_map(String::into_bytes),
            vec(any::<u8>(), 0..24),
            (0usize..4).prop_map(|k| vec![b'"'; [16, 17, 4096, 4097][k]]),
        ]
    }

    fn rec() -> impl Strategy<Value = Rec> {
        let delta = prop_oneof![-3i64..3, any::<i32>().prop_map(i64::from), any::<i64>()];
        (
            proptest::option::of(content()),
            proptest::option::of(content()),
            vec((content(), proptest::option::of(content())), 0..3),
            delta.clone(),
            delta,
        )
            .prop_map(|(key, value, headers, ts_delta, off_delta)| Rec {
                key,
                value,
                headers,
                ts_delta,
                off_delta,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Generated batches, whole or damaged, write the same JSON with
        /// `records_json` as without.
        #[test]
        fn records_json_matches_the_tree(
            recs in vec(rec(), 0..5),
            codec in 0i16..5,
            flags in prop_oneof![Just(0i16), Just(0x08), Just(0x10), Just(0x20), Just(0x30)],
            count_off in prop_oneof![Just(0i32), -2i32..3, Just(i32::MIN)],
            base_offset in prop_oneof![0i64..1000, any::<i64>()],
            base_ts in prop_oneof![Just(-1i64), Just(1_700_000_000_000), any::<i64>()],
            damage in vec((any::<prop::sample::Index>(), 1u8..), 0..3),
            payload_damage in vec((any::<prop::sample::Index>(), 1u8..), 0..2),
            cut in proptest::option::of(any::<prop::sample::Index>()),
            refix in any::<bool>(),
        ) {
            let mut payload: Vec<u8> = recs.iter().flat_map(record).collect();
            for (at, x) in &payload_damage {
                if !payload.is_empty() {
                    let i = at.index(payload.len());
                    payload[i] ^= x;
                }
            }
            let count = (recs.len() as i32).wrapping_add(count_off);
            let mut b = batch(base_offset, codec | flags, count, base_ts, &compress(codec, &payload));
            // Anywhere: header fields (batchLength, magic, attributes,
            // counts, timestamps) as well as records.
            for (at, x) in &damage {
                let i = at.index(b.len());
                b[i] ^= x;
            }
            if let Some(cut) = cut {
                b.truncate(61 + cut.index(b.len() - 60));
            }
            if refix {
                fix(&mut b);
            }
            same_json(&b);
        }
    }
}

#[test]
fn codecs_merge_by_number_in_order_of_first_appearance() {
    let (mut a, mut b) = (Codecs::default(), Codecs::default());
    a.add(3, 2);
    a.add(0, 1);
    b.add(4, 5);
    b.add(3, 1);
    b.add(11, 1); // the low 3 bits: codec 3
    a.merge(&b);
    let got: Vec<_> = a.iter().collect();
    assert_eq!(got, [("lz4", 4), ("none", 1), ("zstd", 5)]);
}
