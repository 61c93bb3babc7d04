//! The fuzz corpus, replayed on stable Rust.
//!
//! `fuzz/corpus/<target>/` holds a small, minimised corpus per cargo-fuzz
//! target (see docs/fuzzing.md), including every input that once crashed a
//! harness. Each test here feeds every file of one corpus to the same harness
//! function the fuzz target calls (`kafkashark_harness`), so the invariants
//! the fuzzers checked are checked again on every `cargo test`.
//!
//! `write_seeds` (ignored) builds the seed corpora from the captures in
//! `captures/`: messages, record sets, segment streams, frames and small
//! pcaps, into `fuzz/seeds/<target>/` (not committed).

mod support;

use std::path::{Path, PathBuf};

use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::schema::{self, MessageKind};
use kafkashark_harness as harness;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

fn replay(target: &str) {
    let f = harness::TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .map(|(_, f)| *f)
        .expect("a harness of that name");
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    for p in &files {
        let data = std::fs::read(p).expect("read corpus file");
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{target}: {} fails its harness", p.display());
    }
    eprintln!("{target}: {} inputs replayed", files.len());
}

#[test]
fn replay_request_decode() {
    replay("request_decode");
    // The summary scan answers on part of the corpus: its checks ran.
    assert!(scans("request_decode", harness::request_decode_scanned) > 0);
}

#[test]
fn replay_response_decode() {
    replay("response_decode");
    assert!(scans("response_decode", harness::response_decode_scanned) > 0);
}

/// Summary scans that answered over a target's corpus.
fn scans(target: &str, f: fn(&[u8]) -> usize) -> usize {
    let dir = fuzz_dir().join("corpus").join(target);
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| std::fs::read(e.ok()?.path()).ok())
        .map(|data| f(&data))
        .sum()
}

#[test]
fn replay_record_set() {
    replay("record_set");
}

#[test]
fn replay_framing() {
    replay("framing");
}

#[test]
fn replay_reassembly() {
    replay("reassembly");
}

#[test]
fn replay_pipeline() {
    replay("pipeline");
}

#[test]
fn replay_stats() {
    replay("stats");
}

/// The `stats` harness reaches the lag, record age and delivery of a real
/// consumer: the first connection of b6 whose Fetch responses carry
/// records, alone, beside the producer's first connection, and beside both
/// that and the other consumer's first such connection, replayed as the
/// harness's segment operations, is counted message for message, every
/// request answered, with lag rows and record ages, and with the producer's
/// batches delivered to each consumer there; the corpus holds the three
/// (`b6-consumer-fetches`, `b6-delivery`, `b6-two-consumers`;
/// `WRITE_STATS_SEEDS=1` writes them again).
#[test]
fn the_stats_harness_counts_a_real_consumers_lag_and_ages() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join("b6-consumer-lag.pcap");
    let a = support::analyze(&p, Ports::List(vec![9092]));
    let inputs = [
        (false, false, "b6-consumer-fetches"),
        (true, false, "b6-delivery"),
        (true, true, "b6-two-consumers"),
    ];
    for (producer, two, seed) in inputs {
        let convo = fetch_conversation(&a, producer, two).expect("a Fetch with records");
        let input = pipeline_input(&convo);
        let r = harness::stats_report(&input);
        let n = convo.len() as u64;
        assert_eq!(r.summary.messages, n, "{seed}: every message counted");
        assert_eq!(r.summary.unanswered, 0, "{seed}: every request answered");
        assert!(!r.lag.partitions.is_empty(), "{seed}: no lag rows");
        let d = &r.delivery;
        assert!(!d.record_age.is_empty(), "{seed}: no record ages");
        // With the producer's connection, its batches are delivered to
        // each consumer whose connection is there (the harness tracks
        // three: the second consumer's too).
        let consumers = usize::from(producer) + usize::from(producer && two);
        assert_eq!(
            d.delivery.len(),
            consumers,
            "{seed}: consumers delivered to"
        );
        assert_eq!(!d.producers.is_empty(), producer, "{seed}: producers");
        // The committed corpus starts from these inputs.
        let path = fuzz_dir().join("corpus").join("stats").join(seed);
        if std::env::var_os("WRITE_STATS_SEEDS").is_some() {
            std::fs::write(&path, &input).expect("write the seed");
        }
        let committed = std::fs::read(&path).ok();
        assert!(
            committed == Some(input),
            "{} differs from {seed}",
            path.display()
        );
    }
}

#[test]
fn replay_link() {
    replay("link");
}

#[test]
fn replay_pcap_file() {
    replay("pcap_file");
}

#[test]
fn replay_tls_keylog() {
    replay("tls_keylog");
}

#[test]
fn replay_tls_records() {
    replay("tls_records");
}

#[test]
fn replay_declared() {
    replay("declared");
}

#[test]
fn every_target_has_a_corpus() {
    for (t, _) in harness::TARGETS {
        assert!(
            fuzz_dir().join("corpus").join(t).is_dir(),
            "fuzz/corpus/{t} is missing"
        );
        assert!(
            fuzz_dir()
                .join("fuzz_targets")
                .join(format!("{t}.rs"))
                .is_file(),
            "fuzz/fuzz_targets/{t}.rs is missing"
        );
    }
}

/// The real captures all pass every harness when fed through it whole.
#[test]
fn captures_pass_the_harnesses() {
    for name in [
        "a1-kcat-produce-consume-group.pcap",
        "a3-kafka-python-admin.pcap",
        "a4-kafkajs-produce-consume-sll2.pcap",
    ] {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures")
            .join(name);
        let data = std::fs::read(&p).expect("capture");
        harness::pcap_file(&data);
        let a = support::analyze(&p, Ports::List(vec![9092, 19092]));
        // Messages fed to each decode harness, and summary scans compared.
        let (mut requests, mut responses, mut scanned) = (0usize, [0usize; 2], [0usize; 2]);
        for m in &a.messages {
            let (k, v) = (m.info.api_key, m.info.api_version);
            match (m.info.kind, k, v) {
                (Kind::Request, _, _) => {
                    let mut input = vec![0];
                    input.extend_from_slice(&m.raw.bytes);
                    requests += 1;
                    scanned[0] += harness::request_decode_scanned(&input);
                }
                (Kind::Response, Some(k), Some(v)) => {
                    responses[0] += 1;
                    if let Some(seed) = response_seed(k.0, v, &m.raw.bytes) {
                        responses[1] += 1;
                        scanned[1] += harness::response_decode_scanned(&seed);
                    }
                }
                _ => {}
            }
        }
        assert!(
            requests > 0 && responses[1] > 0,
            "{name}: {requests} {responses:?}"
        );
        // Every response with an api found its way into the harness.
        assert_eq!(
            responses[1], responses[0],
            "{name}: responses without a seed"
        );
        assert!(
            scanned[0] > 0 && scanned[1] > 0,
            "{name}: no summary scan answered"
        );
    }
}

/// The input that makes `harness::response_decode` decode `msg` as (k, v).
fn response_seed(k: i16, v: i16, msg: &[u8]) -> Option<Vec<u8>> {
    let defs: Vec<_> = schema::MESSAGES
        .iter()
        .filter(|m| m.kind == MessageKind::Response)
        .collect();
    let pick = defs
        .iter()
        .position(|d| d.api_key == k && d.valid.contains(v))?;
    let def = defs.get(pick)?;
    let pick = u8::try_from(pick).ok().filter(|p| *p < 250)?;
    let vbyte = u8::try_from(v - def.valid.min).ok()?;
    let mut s = vec![pick, vbyte, 0];
    s.extend_from_slice(msg);
    Some(s)
}

fn put(dir: &Path, name: &str, data: &[u8]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::write(dir.join(name), data).expect("write seed");
}

/// The messages of `a`'s first connection whose Fetch responses carry
/// records (as connection 0), with `two_consumers` also of the first such
/// connection of another client id (as connection 2) and, with `producer`, of
/// its first connection with a Produce request (as connection 1), in
/// capture order, each direction of each within the segment operations'
/// 64 KiB.
fn fetch_conversation(
    a: &support::Analysis,
    producer: bool,
    two_consumers: bool,
) -> Option<Vec<(u8, bool, &[u8])>> {
    let first = |f: &dyn Fn(&kafkashark::analyzer::MessageRecord) -> bool| {
        a.messages.iter().find(|m| f(m)).map(|m| m.info.stream)
    };
    // A connection's client id, as its requests give it.
    let client_id = |stream: u64| {
        let request = a.messages.iter().find(|m| {
            m.info.stream == stream && m.info.kind == Kind::Request && m.info.client_id.is_some()
        });
        request.and_then(|m| m.info.client_id.as_deref())
    };
    let fetched = |m: &kafkashark::analyzer::MessageRecord| {
        m.info.kind == Kind::Response
            && m.info.api_key == Some(schema::ApiKey::FETCH)
            && m.info.fetch.is_some_and(|f| f.record_bytes > 0)
    };
    let consumer = first(&fetched)?;
    let by = client_id(consumer);
    let other = match two_consumers {
        true => Some(first(&|m| fetched(m) && client_id(m.info.stream) != by)?),
        false => None,
    };
    let producer = match producer {
        true => Some(first(&|m| {
            m.info.kind == Kind::Request && m.info.api_key == Some(schema::ApiKey::PRODUCE)
        })?),
        false => None,
    };
    let mut sent = [[0usize; 2]; 3];
    let mut full = [false; 3];
    let mut convo = Vec::new();
    // Requests not answered yet: (connection, correlation id, place).
    let mut waiting: Vec<(u8, Option<i32>, usize)> = Vec::new();
    for m in &a.messages {
        let conn: u8 = match m.info.stream {
            s if s == consumer => 0,
            s if Some(s) == producer => 1,
            s if Some(s) == other => 2,
            _ => continue,
        };
        let c = usize::from(conn);
        let to_broker = m.info.kind == Kind::Request;
        let side = &mut sent[c][usize::from(to_broker)];
        if !full[c] && *side + m.raw.bytes.len() > 60_000 {
            // The connection ends here: a request whose answer is left out
            // goes too.
            full[c] = true;
            for &(_, _, at) in waiting.iter().filter(|w| w.0 == conn) {
                if let Some(x) = convo.get_mut(at) {
                    *x = None;
                }
            }
        }
        if full[c] {
            continue;
        }
        *side += m.raw.bytes.len();
        let id = m.info.correlation_id;
        match to_broker {
            true => waiting.push((conn, id, convo.len())),
            false => waiting.retain(|w| (w.0, w.1) != (conn, id)),
        }
        convo.push(Some((conn, to_broker, &m.raw.bytes[..])));
    }
    Some(convo.into_iter().flatten().collect())
}

/// Messages of up to three connections (connection, to the broker or not,
/// bytes) as the segment operations of the `reassembly`, `pipeline` and
/// `stats` harnesses: a connection's handshake before its first message,
/// each message in segments of up to 255 bytes acknowledging what the
/// other side sent, 1 ms apart, then both FINs of each. (An operation's
/// first byte picks the connection, `% 3`, and the side: bit 2 set is the
/// broker's; so the broker's are 0x24 + the connection, bit 3 clear: no
/// shift of the sequence number.)
fn seg_ops(msgs: &[(u8, bool, &[u8])]) -> Vec<u8> {
    const BROKER: u8 = 0x24;
    fn op(out: &mut Vec<u8>, a: u8, flags: u8, rel: u16, ack: u16, payload: &[u8]) {
        for chunk in payload.chunks(255).chain(if payload.is_empty() {
            Some(&[][..])
        } else {
            None
        }) {
            out.extend_from_slice(&[a, flags]);
            out.extend_from_slice(&rel.to_be_bytes());
            out.push(chunk.len() as u8);
            out.push(1); // dt: 1 ms
            out.extend_from_slice(&ack.to_be_bytes());
            out.extend_from_slice(chunk);
        }
    }
    let mut out = Vec::new();
    // Each connection's next client and broker sequence numbers (relative),
    // in the order they opened.
    let mut conns: Vec<(u8, u16, u16)> = Vec::new();
    for &(conn, to_broker, m) in msgs {
        let conn = conn % 3;
        let at = match conns.iter().position(|s| s.0 == conn) {
            Some(at) => at,
            None => {
                op(&mut out, conn, 0x01, 0, 0, &[]); // SYN
                op(&mut out, BROKER + conn, 0x09, 0, 1, &[]); // SYN-ACK
                conns.push((conn, 1, 1));
                conns.len() - 1
            }
        };
        let Some((_, c, b)) = conns.get_mut(at) else {
            continue;
        };
        for chunk in m.chunks(255) {
            if to_broker {
                op(&mut out, conn, 0x08, *c, *b, chunk);
                *c = c.wrapping_add(chunk.len() as u16);
            } else {
                op(&mut out, BROKER + conn, 0x08, *b, *c, chunk);
                *b = b.wrapping_add(chunk.len() as u16);
            }
        }
    }
    for (conn, c, b) in conns {
        op(&mut out, conn, 0x0a, c, b, &[]); // FIN
        op(&mut out, BROKER + conn, 0x0a, b, c.wrapping_add(1), &[]); // FIN
    }
    out
}

/// [`seg_ops`] as the `pipeline` and `stats` harnesses read them: after
/// byte 0 (`Ports::List`, long-polls left out of the slow list).
fn pipeline_input(msgs: &[(u8, bool, &[u8])]) -> Vec<u8> {
    [&[0u8][..], &seg_ops(msgs)].concat()
}

/// Framing operations: trusted start, chunks of up to 255 bytes.
fn framing_ops(flags: u8, stream: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    for chunk in stream.chunks(200) {
        out.extend_from_slice(&[0, chunk.len() as u8]);
        out.extend_from_slice(chunk);
    }
    out
}

/// The first `n` frames of a classic pcap file, as a new pcap.
fn pcap_head(data: &[u8], n: usize) -> Vec<u8> {
    let mut out = data[..24].to_vec();
    let mut at = 24;
    for _ in 0..n {
        let Some(h) = data.get(at..at + 16) else {
            break;
        };
        let caplen = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let Some(rec) = data.get(at..at + 16 + caplen) else {
            break;
        };
        out.extend_from_slice(rec);
        at += 16 + caplen;
    }
    out
}

/// Builds the seed corpora from captures/ into fuzz/seeds/<target>/.
#[test]
#[ignore = "writes fuzz/seeds; run by hand before fuzzing (docs/fuzzing.md)"]
fn write_seeds() {
    const MAX: usize = 16 << 10;
    let seeds = fuzz_dir().join("seeds");
    let caps = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut n = 0usize;
    for entry in std::fs::read_dir(&caps).expect("captures") {
        let p = entry.expect("entry").path();
        if p.extension().is_none_or(|e| e != "pcap") {
            continue;
        }
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        let data = std::fs::read(&p).expect("read");
        put(&seeds.join("pcap_file"), &stem, &pcap_head(&data, 40));
        let a = support::analyze(&p, Ports::List(vec![9092, 19092]));
        let segs = support::extract(&p);
        for (i, s) in segs.iter().enumerate().take(60) {
            let f = support::ip_packet(s);
            let mut l = vec![3, 0, 0]; // raw IP (101)
            l.extend_from_slice(&f);
            put(
                &seeds.join("link"),
                &format!("{stem}-{i}"),
                &l[..l.len().min(MAX)],
            );
        }
        let mut stream_req = Vec::new();
        let mut stream_resp = Vec::new();
        let mut convo: Vec<(bool, Vec<u8>)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for m in &a.messages {
            let bytes = &m.raw.bytes[..];
            if m.info.stream == 0 && convo.len() < 12 && bytes.len() < 4000 {
                convo.push((m.info.kind == Kind::Request, bytes.to_vec()));
            }
            if bytes.len() > MAX {
                continue;
            }
            // One seed per (kind, api, version, size class).
            let key = (
                m.info.kind == Kind::Request,
                m.info.api_key,
                m.info.api_version,
                bytes.len() / 512,
            );
            if !seen.insert(key) {
                continue;
            }
            n += 1;
            match (m.info.kind, m.info.api_key, m.info.api_version) {
                (Kind::Request, _, _) => {
                    let mut s = vec![0];
                    s.extend_from_slice(bytes);
                    put(&seeds.join("request_decode"), &format!("{stem}-{n}"), &s);
                    if stream_req.len() < 8000 {
                        stream_req.extend_from_slice(bytes);
                    }
                }
                (Kind::Response, Some(k), Some(v)) => {
                    if let Some(s) = response_seed(k.0, v, bytes) {
                        put(&seeds.join("response_decode"), &format!("{stem}-{n}"), &s);
                    }
                    if stream_resp.len() < 8000 {
                        stream_resp.extend_from_slice(bytes);
                    }
                }
                _ => {}
            }
            // Record sets: every `records` node in the message itself.
            let d = kafkashark::analyzer::redecode(
                &m.info,
                &m.raw,
                &kafkashark::kafka::DecodeOptions::default(),
            );
            let mut k = 0;
            d.root.walk(&mut |node, _| {
                if node.ty.contains("records") && node.source == 0 && node.length > 4 {
                    let start = node
                        .children
                        .iter()
                        .find(|c| c.name == "length")
                        .map_or(node.offset, |c| c.end());
                    if let Some(set) = bytes.get(start..node.end()) {
                        if !set.is_empty() && set.len() < MAX {
                            let mut s = vec![0x40];
                            s.extend_from_slice(set);
                            k += 1;
                            put(&seeds.join("record_set"), &format!("{stem}-{n}-{k}"), &s);
                        }
                    }
                }
            });
        }
        put(
            &seeds.join("framing"),
            &format!("{stem}-req"),
            &framing_ops(1, &stream_req),
        );
        put(
            &seeds.join("framing"),
            &format!("{stem}-req-mid"),
            &framing_ops(0, stream_req.get(7..).unwrap_or(&[])),
        );
        put(
            &seeds.join("framing"),
            &format!("{stem}-resp"),
            &framing_ops(3, &stream_resp),
        );
        let convo: Vec<(u8, bool, &[u8])> = convo.iter().map(|(d, b)| (0, *d, &b[..])).collect();
        // The reassembly harness reads connection 1's initial sequence
        // numbers first; the conversation is connection 0's.
        let ops = seg_ops(&convo);
        put(
            &seeds.join("reassembly"),
            &stem,
            &[&[0u8; 8][..], &ops].concat(),
        );
        put(&seeds.join("pipeline"), &stem, &pipeline_input(&convo));
        put(&seeds.join("stats"), &stem, &pipeline_input(&convo));
        if let Some(fetches) = fetch_conversation(&a, false, false) {
            let input = pipeline_input(&fetches);
            put(&seeds.join("stats"), &format!("{stem}-fetches"), &input);
        }
        if let Some(both) = fetch_conversation(&a, true, false) {
            let input = pipeline_input(&both);
            put(&seeds.join("stats"), &format!("{stem}-delivery"), &input);
        }
    }
    // Record sets with each codec, in each shape.
    let sample: Vec<u8> = (0..600u32).map(|i| (i * 7 % 251) as u8).collect();
    for mode in [
        0u8, 1, 2, 3, 4, 0x08, 0x20, 0x21, 0x22, 0x23, 0x28, 0x60, 0x61, 0x62, 0x63, 0x64,
    ] {
        let mut s = vec![mode];
        s.extend_from_slice(&sample);
        put(
            &seeds.join("record_set"),
            &format!("synthetic-{mode:02x}"),
            &s,
        );
    }
    eprintln!("{n} message seeds written to {}", seeds.display());
}
