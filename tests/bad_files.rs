//! Bad files, one test per kind: truncated files, wrong magic, absurd pcap
//! header fields, records longer than the file, corrupt IP/TCP headers, Kafka
//! lengths of 2^31−1, arrays claiming 10^9 elements, decompression bombs,
//! deeply nested message sets, CRC mismatches and random bit flips over a
//! real capture.
//!
//! Each must give a clear message (file, frame, offset, what was wrong), still
//! decode everything decodable, and stay bounded: loops are bounded by the
//! input and structure sizes are checked (no timing assertions).

mod support;

use kafkashark::vocab::Timestamp;
use std::path::{Path, PathBuf};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageRecord, Notice, Output};
use kafkashark::capture::{CaptureError, FileSource, FrameSource};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::{decode_request, DecodeOptions};
use kafkashark::pipeline::{Event, PipelineConfig, Warning};
use kafkashark_harness as harness;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{Format, Link};

fn a1() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/a1-kcat-produce-consume-group.pcap")
}

/// What reading a file produced: messages, notices, frames and the read error.
struct Read {
    messages: Vec<MessageRecord>,
    notices: Vec<Notice>,
    frames: u64,
    error: Option<CaptureError>,
}

/// Reads a capture file to its end or its first error, like `print` does.
fn read(path: &str) -> Result<Read, CaptureError> {
    let mut src = FileSource::open(path)?;
    let mut an = Analyzer::new(AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(vec![9092])),
        ..AnalyzerConfig::default()
    });
    let mut out = Vec::new();
    let mut r = Read {
        messages: Vec::new(),
        notices: Vec::new(),
        frames: 0,
        error: None,
    };
    loop {
        match src.next_frame() {
            Ok(Some(f)) => {
                r.frames += 1;
                an.push(&f, &mut out);
            }
            Ok(None) => break,
            Err(e) => {
                r.error = Some(e);
                break;
            }
        }
    }
    an.finish(&mut out);
    for o in out {
        match o {
            Output::Message(m) => r.messages.push(*m),
            Output::Notice(n) => r.notices.push(*n),
        }
    }
    Ok(r)
}

fn write_temp(tag: &str, bytes: &[u8]) -> support::TempCapture {
    let path = support::temp_path(tag, "pcap");
    std::fs::write(&path, bytes).expect("write");
    support::TempCapture { path }
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut m = (body.len() as i32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

fn header_v1(key: i16, version: i16, corr: i32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&key.to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&corr.to_be_bytes());
    h.extend_from_slice(&4i16.to_be_bytes());
    h.extend_from_slice(b"test");
    h
}

/// An ApiVersions v0 request and its response (one api listed).
fn api_versions(corr: i32) -> Vec<(bool, Vec<u8>)> {
    let req = framed(&header_v1(18, 0, corr));
    let mut resp = corr.to_be_bytes().to_vec();
    resp.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode
    resp.extend_from_slice(&1i32.to_be_bytes()); // ApiKeys: 1
    resp.extend_from_slice(&[0, 18, 0, 0, 0, 3]); // ApiVersions 0..3
    vec![(true, req), (false, framed(&resp))]
}

/// A Produce v3 request carrying `records` for topic "t" partition 0.
fn produce_v3(corr: i32, records: &[u8]) -> Vec<u8> {
    let mut b = header_v1(0, 3, corr);
    b.extend_from_slice(&(-1i16).to_be_bytes()); // TransactionalId: null
    b.extend_from_slice(&1i16.to_be_bytes()); // Acks 1
    b.extend_from_slice(&1000i32.to_be_bytes()); // TimeoutMs
    b.extend_from_slice(&1i32.to_be_bytes()); // TopicData: 1
    b.extend_from_slice(&1i16.to_be_bytes()); // Name "t"
    b.push(b't');
    b.extend_from_slice(&1i32.to_be_bytes()); // PartitionData: 1
    b.extend_from_slice(&0i32.to_be_bytes()); // Index 0
    b.extend_from_slice(&(records.len() as i32).to_be_bytes()); // Records length
    b.extend_from_slice(records);
    framed(&b)
}

fn capture(tag: &str, msgs: &[(bool, Vec<u8>)]) -> support::TempCapture {
    support::write_capture(
        tag,
        &support::hostile::segments(msgs),
        &Link::Ethernet(vec![]),
        Format::PcapMicros,
    )
}

fn opts() -> DecodeOptions {
    DecodeOptions::default()
}

#[test]
fn truncated_files_keep_the_frames_before_the_damage() {
    let full = std::fs::read(a1()).expect("a1");
    let whole = read(a1().to_str().unwrap()).expect("open a1");
    assert!(whole.error.is_none());
    // Cut inside the global header: an open error naming the file.
    let f = write_temp("trunc-header", &full[..10]);
    let e = read(f.path_str())
        .err()
        .expect("a 10-byte file does not open");
    let msg = e.to_string();
    assert!(msg.contains(f.path_str()), "{msg}");
    // Cut at many points inside the records: frames before the cut are all read and
    // decoded; the error (if the cut is inside a record) names the file and frame.
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..12 {
        let cut = rng.gen_range(25..full.len());
        let f = write_temp("trunc", &full[..cut]);
        let r = read(f.path_str()).expect("opens");
        assert!(r.frames <= whole.frames);
        if let Some(e) = &r.error {
            let msg = e.to_string();
            assert!(msg.contains(f.path_str()), "{msg}");
            assert!(msg.contains(&format!("frame {}", r.frames + 1)), "{msg}");
        }
        // Every message completed before the cut came out the same as in the whole file.
        for m in &r.messages {
            if m.info.frame <= r.frames.saturating_sub(1) {
                let w = whole
                    .messages
                    .iter()
                    .find(|w| w.info.frame == m.info.frame && w.info.index == m.info.index);
                if let Some(w) = w {
                    assert_eq!(w.raw.bytes, m.raw.bytes);
                }
            }
        }
        assert!(
            r.messages.len() + 2
                >= whole
                    .messages
                    .iter()
                    .filter(|m| m.info.frame < r.frames)
                    .count(),
            "cut at {cut}: messages lost before the cut"
        );
    }
}

#[test]
fn wrong_magic_is_an_open_error_naming_the_file() {
    let mut full = std::fs::read(a1()).expect("a1");
    full[..4].copy_from_slice(b"NOPE");
    let f = write_temp("magic", &full);
    let e = read(f.path_str()).err().expect("bad magic does not open");
    let msg = e.to_string();
    assert!(msg.contains(f.path_str()), "{msg}");
    assert!(msg.contains("cannot open"), "{msg}");
    // An empty file too.
    let f = write_temp("empty", &[]);
    let msg = read(f.path_str()).err().expect("empty").to_string();
    assert!(msg.contains(f.path_str()), "{msg}");
}

#[test]
fn a_two_gigabyte_snaplen_in_the_header_is_harmless() {
    let mut full = std::fs::read(a1()).expect("a1");
    // Global header: magic(4) version(4) thiszone(4) sigfigs(4) snaplen(4) linktype(4).
    full[16..20].copy_from_slice(&0x8000_0000u32.to_le_bytes());
    let f = write_temp("snaplen", &full);
    let whole = read(a1().to_str().unwrap()).expect("a1");
    match read(f.path_str()) {
        // libpcap clamps an absurd snaplen: everything reads as before.
        Ok(r) => {
            assert!(r.error.is_none(), "{:?}", r.error.map(|e| e.to_string()));
            assert_eq!(r.frames, whole.frames);
            assert_eq!(r.messages.len(), whole.messages.len());
        }
        Err(e) => assert!(e.to_string().contains(f.path_str()), "{e}"),
    }
}

#[test]
fn a_record_longer_than_the_file_is_a_read_error_after_the_good_frames() {
    let full = std::fs::read(a1()).expect("a1");
    let whole = read(a1().to_str().unwrap()).expect("a1");
    // Append a record header claiming 1 MB (within libpcap's limit) and then 10 bytes.
    let mut bad = full.clone();
    bad.extend_from_slice(&1_700_000_000u32.to_le_bytes());
    bad.extend_from_slice(&0u32.to_le_bytes());
    bad.extend_from_slice(&1_000_000u32.to_le_bytes());
    bad.extend_from_slice(&1_000_000u32.to_le_bytes());
    bad.extend_from_slice(&[0; 10]);
    let f = write_temp("longrec", &bad);
    let r = read(f.path_str()).expect("opens");
    assert_eq!(r.frames, whole.frames, "every good frame is read");
    assert_eq!(r.messages.len(), whole.messages.len(), "and decoded");
    let e = r.error.expect("the long record is an error").to_string();
    assert!(e.contains(f.path_str()), "{e}");
    assert!(e.contains(&format!("frame {}", whole.frames + 1)), "{e}");
    // A caplen of 2^31 as well (beyond any snaplen).
    let mut bad = full;
    bad.extend_from_slice(&[0; 8]);
    bad.extend_from_slice(&0x8000_0000u32.to_le_bytes());
    bad.extend_from_slice(&0x8000_0000u32.to_le_bytes());
    let f = write_temp("hugerec", &bad);
    let r = read(f.path_str()).expect("opens");
    assert_eq!(r.frames, whole.frames);
    let e = r.error.expect("error").to_string();
    assert!(e.contains(f.path_str()) && e.contains("frame"), "{e}");
}

#[test]
fn corrupt_ip_and_tcp_headers_are_warnings_with_frame_and_offset() {
    let segs = support::hostile::segments(&api_versions(1));
    let mut frames: Vec<(Timestamp, Vec<u8>)> = segs
        .iter()
        .map(|s| (s.ts, Link::Ethernet(vec![]).frame(&support::ip_packet(s))))
        .collect();
    let good = frames.len();
    let base = frames[3].clone(); // the request
    let ts = base.0;
    let mut push_bad = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = base.1.clone();
        f(&mut b);
        frames.push((ts, b));
    };
    push_bad(&|b| b[14] = 0x43); // IPv4 IHL 3 (< 5)
    push_bad(&|b| b[16..18].copy_from_slice(&9000u16.to_be_bytes())); // total length > frame
    push_bad(&|b| b[14 + 20 + 12] = 0x20); // TCP data offset 2 (< 5)
    push_bad(&|b| b[14 + 20 + 12] = 0xf0); // TCP data offset 15: options past the end
    push_bad(&|b| b.truncate(14 + 10)); // IPv4 header cut
    push_bad(&|b| b.truncate(14 + 20 + 7)); // TCP header cut
    push_bad(&|b| b[14] = 0x65); // version 6 in an IPv4 EtherType
    let bad = frames.len() - good;
    let f = support::write_frames("corrupt-ip", 1, Format::PcapMicros, &frames);
    let r = read(f.path_str()).expect("opens");
    assert!(r.error.is_none());
    // The good exchange still decodes and pairs.
    assert_eq!(r.messages.len(), 2, "the good exchange is decoded");
    assert!(r.messages.iter().all(|m| m.info.decode_error.is_none()));
    assert!(r.messages.iter().any(|m| m.info.paired));
    let warnings: Vec<(u64, Option<u64>, String)> = r
        .notices
        .iter()
        .filter_map(|n| match n {
            Notice::Stream(Event::Warning {
                frame,
                offset,
                what: Warning::Packet(s),
            }) => Some((*frame, *offset, s.to_string())),
            _ => None,
        })
        .collect();
    // Each damaged frame is either warned about (frame, offset, what) or, when the
    // damage leaves a readable TCP segment, absorbed as a retransmission.
    for (frame, offset, what) in &warnings {
        assert!(
            *frame > good as u64 && *frame <= (good + bad) as u64,
            "{frame}"
        );
        assert!(offset.is_some(), "frame {frame}: no offset: {what}");
        assert!(what.contains("malformed"), "{what}");
    }
    assert!(warnings.len() >= 4, "{warnings:?}");
}

#[test]
fn kafka_sizes_of_2_31_minus_1_resynchronise_and_decode_the_rest() {
    // A trusted stream: a request, then a bogus size 0x7fffffff, then real requests.
    let mut msgs = api_versions(1);
    msgs.push((true, i32::MAX.to_be_bytes().to_vec()));
    msgs.extend(api_versions(2));
    msgs.extend(api_versions(3));
    let f = capture("kafka-2g", &msgs);
    let r = read(f.path_str()).expect("opens");
    let corrs: Vec<Option<i32>> = r
        .messages
        .iter()
        .filter(|m| m.info.kind == Kind::Request)
        .map(|m| m.info.correlation_id)
        .collect();
    assert!(corrs.contains(&Some(1)), "{corrs:?}");
    assert!(
        corrs.contains(&Some(3)),
        "framing found its way back: {corrs:?}"
    );
    let told = r.notices.iter().any(|n| {
        matches!(n, Notice::Stream(Event::Warning { what: Warning::BadSize { size, .. }, .. }) if *size == i32::MAX)
            || matches!(n, Notice::Stream(Event::Resync { .. }))
    });
    assert!(told, "the bad size is reported: {:?}", r.notices);

    // Inside a message: a string and a bytes field claiming 2^31-1 / 32767 bytes.
    let mut b = header_v1(0, 3, 9);
    b.extend_from_slice(&0x7fffi16.to_be_bytes()); // TransactionalId length 32767
    b.extend_from_slice(b"abc");
    let msg = framed(&b);
    let d = decode_request(&msg, &opts());
    let e = d.error.as_ref().expect("an error");
    assert!(e.offset <= msg.len());
    assert!(e.to_string().contains("TransactionalId"), "{e}");
    harness::check_decoded(&msg, &d);
    let msg = produce_v3(9, &[]);
    let mut msg = msg;
    let at = msg.len() - 4;
    msg[at..].copy_from_slice(&i32::MAX.to_be_bytes()); // Records length 2^31-1
    let d = decode_request(&msg, &opts());
    let e = d.error.as_ref().expect("an error").to_string();
    assert!(e.contains("Records") && e.contains("0x"), "{e}");
    harness::check_decoded(&msg, &d);
}

#[test]
fn arrays_claiming_a_billion_elements_fail_fast_and_small() {
    // Metadata v1: Topics array count 10^9 with no elements behind it.
    let mut b = header_v1(3, 1, 5);
    b.extend_from_slice(&1_000_000_000i32.to_be_bytes());
    b.extend_from_slice(&[0; 16]);
    let msg = framed(&b);
    let d = decode_request(&msg, &opts());
    let e = d.error.as_ref().expect("an error");
    assert!(e.to_string().contains("Topics"), "{e}");
    let mut nodes = 0;
    d.root.walk(&mut |_, _| nodes += 1);
    assert!(
        nodes < 100,
        "{nodes} nodes for a {}-byte message",
        msg.len()
    );
    harness::check_decoded(&msg, &d);
    // Flexible (compact) arrays: uvarint 10^9+1 in Metadata v9.
    let mut b = Vec::new();
    b.extend_from_slice(&3i16.to_be_bytes());
    b.extend_from_slice(&9i16.to_be_bytes());
    b.extend_from_slice(&6i32.to_be_bytes());
    b.extend_from_slice(&(-1i16).to_be_bytes()); // client id null
    b.push(0); // header tagged fields
    b.extend_from_slice(&[0x81, 0x94, 0xeb, 0xdc, 0x03]); // uvarint 1_000_000_001
    b.extend_from_slice(&[0; 8]);
    let msg = framed(&b);
    let d = decode_request(&msg, &opts());
    assert!(d.error.is_some());
    let mut nodes = 0;
    d.root.walk(&mut |_, _| nodes += 1);
    assert!(nodes < 100, "{nodes} nodes");
    harness::check_decoded(&msg, &d);
    // A record batch claiming 10^9 records.
    let batch = harness::record_batch(0, 1_000_000_000, &[0; 32]);
    harness::check_record_set(&batch);
}

#[test]
fn decompression_bombs_stop_at_the_cap() {
    // 48 MiB of zeros compress to a few KiB with zstd; the cap is 1 MiB here.
    let zeros = vec![0u8; 48 << 20];
    let bomb = zstd::bulk::compress(&zeros, 3).expect("zstd");
    drop(zeros);
    assert!(bomb.len() < 64 << 10);
    let batch = harness::record_batch(4, 10, &bomb);
    let msg = produce_v3(7, &batch);
    let small = DecodeOptions {
        max_decompressed: 1 << 20,
        ..DecodeOptions::default()
    };
    let d = decode_request(&msg, &small);
    let held: usize = d.sources.iter().map(|s| s.data.len()).sum();
    assert!(held <= 1 << 20, "{held} bytes decompressed");
    let text = d.root.to_string();
    assert!(text.contains("exceeds the limit"), "{text}");
    // Everything around the batch decoded: the topic, partition and batch header.
    assert!(text.contains("\"t\""), "{text}");
    assert!(text.contains("baseOffset"), "{text}");
    // Many bombs in one message: the per-message budget holds too.
    let one = zstd::bulk::compress(&vec![b'x'; 900 << 10], 3).expect("zstd");
    let mut set = Vec::new();
    for _ in 0..12 {
        set.extend(harness::record_batch(4, 1, &one));
    }
    let msg = produce_v3(8, &set);
    let d = decode_request(&msg, &small);
    let held: usize = d.sources.iter().map(|s| s.data.len()).sum();
    assert!(
        held <= kafkashark::kafka::records::TOTAL_FACTOR << 20,
        "{held} bytes decompressed for one message"
    );
    // gzip, snappy and lz4 bombs stop at the cap too (3 MiB of one byte
    // against a 1 MiB cap), and pass the harness's checks.
    let plain = vec![b'a'; 3 << 20];
    for codec in [1u8, 2, 3] {
        let c = harness::compress(codec, &plain);
        let batch = harness::record_batch(codec, 1, &c);
        let msg = produce_v3(9, &batch);
        let d = decode_request(&msg, &small);
        let held: usize = d.sources.iter().map(|s| s.data.len()).sum();
        assert!(held <= 1 << 20, "codec {codec}: {held} bytes decompressed");
        let text = d.root.to_string();
        assert!(text.contains("exceeds the limit"), "codec {codec}: {text}");
        harness::check_record_set(&batch);
    }
}

#[test]
fn legacy_message_sets_nested_deep_stop_at_the_depth_limit() {
    // A magic-1 message, wrapped in gzip wrappers 12 deep.
    let mut set = harness::legacy_message(1, 0, 0, None, b"innermost");
    for _ in 0..12 {
        set = harness::legacy_message(1, 1, 0, None, &harness::compress(1, &set));
    }
    let msg = produce_v3(4, &set);
    let d = decode_request(&msg, &opts());
    harness::check_decoded(&msg, &d);
    let text = d.root.to_string();
    assert!(text.contains("nested more than"), "{text}");
    assert!(
        d.sources.len() <= kafkashark::kafka::records::MAX_DEPTH as usize,
        "{} sources",
        d.sources.len()
    );
}

#[test]
fn crc_mismatches_are_marked_and_records_still_decoded() {
    let (n, recs) = harness::records_from(b"\x03key\x05value\x02hh");
    let mut batch = harness::record_batch(0, n, &recs);
    batch[17] ^= 0xff; // the CRC
    let mut sources = Vec::new();
    let rs = kafkashark::kafka::records::decode_record_set(&batch, 0, 0, &opts(), &mut sources);
    assert_eq!(rs.crc_mismatches, 1);
    assert!(
        rs.problem.is_none(),
        "a CRC mismatch is a mark, not a problem"
    );
    assert_eq!(rs.records, 1);
    let mut text = String::new();
    for node in &rs.nodes {
        text.push_str(&node.to_string());
    }
    assert!(text.contains("mismatch"), "{text}");
    assert!(
        text.contains("value") || text.contains("76616c7565"),
        "{text}"
    );
    // Legacy message CRC too.
    let mut m = harness::legacy_message(1, 0, 0, Some(b"k"), b"v");
    m[12] ^= 1;
    let rs = kafkashark::kafka::records::decode_record_set(&m, 0, 0, &opts(), &mut sources);
    assert_eq!(rs.crc_mismatches, 1);
}

#[test]
fn random_bit_flips_over_a_real_capture() {
    let full = std::fs::read(a1()).expect("a1");
    let whole = read(a1().to_str().unwrap()).expect("a1");
    let mut rng = StdRng::seed_from_u64(0x6b61_666b);
    for round in 0..24 {
        let mut b = full.clone();
        let flips = rng.gen_range(1..64);
        for _ in 0..flips {
            // Leave the global header alone half the time, so records are reached.
            let lo = if round % 2 == 0 { 24 } else { 0 };
            let i = rng.gen_range(lo..b.len());
            b[i] ^= 1 << rng.gen_range(0..8);
        }
        let f = write_temp("flips", &b);
        // The harness checks spans, error offsets and bounds on every message.
        harness::pcap_file(&b);
        match read(f.path_str()) {
            Ok(r) => {
                assert!(r.frames <= whole.frames + b.len() as u64 / 16);
                if let Some(e) = r.error {
                    assert!(e.to_string().contains(f.path_str()));
                }
                for m in &r.messages {
                    if let Some(e) = &m.info.decode_error {
                        assert!(e.contains("0x") || e.contains("api unknown"), "{e}");
                    }
                }
            }
            Err(e) => assert!(e.to_string().contains(f.path_str()), "{e}"),
        }
    }
}
