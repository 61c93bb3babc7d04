//! Captures end to end through capture → reassembly → framing, checked against
//! independent counts: tshark's PDU list recorded beside each capture in
//! `captures/recorded/*.tshark.tsv`, and a live tshark run (when installed) on
//! the public captures with the broker ports listed in `SOURCES.md`.
//!
//! Every test skips with a message when ../shared/captures is absent.

use kafkashark::capture::{CaptureError, FileSource, FrameSource};
use kafkashark::flow::Ports;
use kafkashark::pipeline::{Event, Pipeline, PipelineConfig};
use kafkashark::vocab::Direction;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/captures");

/// (frame that completed the message, is_response, size field, correlation id)
type Pdu = (u64, bool, u32, i32);

struct Run {
    pdus: Vec<Pdu>,
    partial: usize,
    resyncs: usize,
    streams: usize,
    frames: u64,
}

fn run(path: &Path, ports: Ports) -> Result<Run, CaptureError> {
    let mut src = FileSource::open(path.to_str().unwrap())?;
    let mut p = Pipeline::new(PipelineConfig::with_ports(ports));
    let mut out = Vec::new();
    let mut frames = 0;
    while let Some(f) = src.next_frame()? {
        frames += 1;
        p.push(f, &mut out);
    }
    p.finish(&mut out);
    let mut r = Run {
        pdus: Vec::new(),
        partial: 0,
        resyncs: 0,
        streams: 0,
        frames,
    };
    for e in &out {
        match e {
            Event::Message(m) => {
                assert_eq!(m.bytes.len(), 4 + m.size().unwrap() as usize);
                r.pdus.push((
                    m.last_frame,
                    m.dir == Direction::BrokerToClient,
                    m.size().unwrap() as u32,
                    m.correlation_id().unwrap(),
                ))
            }
            Event::Partial(_) => r.partial += 1,
            Event::Resync { .. } => r.resyncs += 1,
            Event::StreamOpen(_) => r.streams += 1,
            _ => {}
        }
    }
    r.pdus.sort();
    Ok(r)
}

fn files(dir: &str, pred: impl Fn(&str) -> bool) -> Option<Vec<PathBuf>> {
    let d = Path::new(CAPTURES).join(dir);
    let rd = match std::fs::read_dir(&d) {
        Ok(rd) => rd,
        Err(_) => {
            println!("skipping: {} not present", d.display());
            return None;
        }
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&pred))
        .collect();
    v.sort();
    Some(v)
}

/// Parse tshark's field output: frame, srcport, lens (comma list), correlation ids (comma list).
fn tshark_pdus(rows: &str, broker_ports: &[u16], cols: (usize, usize, usize, usize)) -> Vec<Pdu> {
    let mut v = Vec::new();
    for line in rows.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (Some(frame), Some(sport), Some(lens), Some(corrs)) =
            (f.get(cols.0), f.get(cols.1), f.get(cols.2), f.get(cols.3))
        else {
            continue;
        };
        let Ok(frame) = frame.parse::<u64>() else {
            continue; // header
        };
        let resp = broker_ports.contains(&sport.parse::<u16>().unwrap_or(0));
        let lens: Vec<&str> = lens.split(',').filter(|s| !s.is_empty()).collect();
        let corrs: Vec<&str> = corrs.split(',').filter(|s| !s.is_empty()).collect();
        for (i, len) in lens.iter().enumerate() {
            let corr = corrs
                .get(i)
                .and_then(|c| c.parse().ok())
                .unwrap_or(i32::MIN);
            v.push((frame, resp, len.parse().unwrap(), corr));
        }
    }
    v.sort();
    v
}

fn diff(ours: &[Pdu], theirs: &[Pdu]) -> (Vec<Pdu>, Vec<Pdu>) {
    let mut a: BTreeMap<Pdu, i64> = BTreeMap::new();
    for p in ours {
        *a.entry(*p).or_default() += 1;
    }
    for p in theirs {
        *a.entry(*p).or_default() -= 1;
    }
    let only_ours = a.iter().filter(|(_, &n)| n > 0).map(|(p, _)| *p).collect();
    let only_theirs = a.iter().filter(|(_, &n)| n < 0).map(|(p, _)| *p).collect();
    (only_ours, only_theirs)
}

#[test]
fn recorded_captures_match_tshark_pdus() {
    let Some(files) = files("recorded", |n| n.ends_with(".pcap")) else {
        return;
    };
    assert!(!files.is_empty());
    for f in files {
        let tsv = std::fs::read_to_string(f.with_extension("pcap.tshark.tsv")).unwrap();
        let theirs = tshark_pdus(&tsv, &[9092], (0, 3, 5, 8));
        let r = run(&f, Ports::List(vec![9092])).unwrap();
        let (only_ours, only_theirs) = diff(&r.pdus, &theirs);
        let req = r.pdus.iter().filter(|p| !p.1).count();
        println!(
            "{}: frames {} streams {} messages {} (requests {}, responses {}) tshark {} partial {} resyncs {}",
            f.file_name().unwrap().to_string_lossy(),
            r.frames,
            r.streams,
            r.pdus.len(),
            req,
            r.pdus.len() - req,
            theirs.len(),
            r.partial,
            r.resyncs
        );
        assert!(
            only_ours.is_empty() && only_theirs.is_empty(),
            "{}: only ours {only_ours:?}; only tshark {only_theirs:?}",
            f.display()
        );
        assert_eq!(r.partial, 0);
        assert_eq!(r.resyncs, 0);
    }
}

/// Broker port and number of requests seen per public file, from the SOURCES.md table
/// ("Kafka port" and "Requests seen" columns; `Metadata(3) v12×2` counts 2).
fn public_table() -> BTreeMap<String, (u16, usize)> {
    let text = std::fs::read_to_string(Path::new(CAPTURES).join("public/SOURCES.md")).unwrap();
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if let (Some(name), Some(port), Some(reqs)) = (cells.get(1), cells.get(7), cells.get(8)) {
            if let (Some(name), Ok(port)) = (
                name.strip_prefix('`').and_then(|n| n.strip_suffix('`')),
                port.parse::<u16>(),
            ) {
                let count = reqs
                    .split(", ")
                    .map(|r| r.rsplit_once('×').map_or(1, |(_, n)| n.parse().unwrap()))
                    .sum();
                m.insert(name.to_string(), (port, count));
            }
        }
    }
    m
}

fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn public_captures_against_tshark() {
    let Some(files) = files("public", |n| n.contains(".pcap")) else {
        return;
    };
    let table = public_table();
    let tshark = have_tshark();
    if !tshark {
        println!("tshark not installed: checking ingest and plausibility only");
    }
    let (mut total_ours, mut total_theirs) = (0usize, 0usize);
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let (port, requests_seen) = *table
            .get(&name)
            .unwrap_or_else(|| panic!("{name} not in SOURCES.md"));
        let r = run(&f, Ports::List(vec![port])).unwrap();
        let req = r.pdus.iter().filter(|p| !p.1).count();
        // SOURCES.md lists requests of known APIs only; `__unsupported-version` also
        // holds two deliberately bogus ones (api key 10000, ControlledShutdown v1000),
        // framed like any other message (tshark frames them too).
        let bogus = if name.contains("unsupported-version") {
            2
        } else {
            0
        };
        assert_eq!(req, requests_seen + bogus, "{name}: requests vs SOURCES.md");
        if !tshark {
            println!("{name}: messages {} (requests {req})", r.pdus.len());
            continue;
        }
        let o = Command::new("tshark")
            .args(["-n", "-r"])
            .arg(&f)
            .args([
                "-d",
                &format!("tcp.port=={port},kafka"),
                "-Y",
                "kafka",
                "-T",
                "fields",
            ])
            .args(["-e", "frame.number", "-e", "tcp.srcport", "-e", "kafka.len"])
            .args(["-e", "kafka.correlation_id"])
            .output()
            .unwrap();
        let theirs = tshark_pdus(&String::from_utf8_lossy(&o.stdout), &[port], (0, 1, 2, 3));
        let (only_ours, only_theirs) = diff(&r.pdus, &theirs);
        total_ours += r.pdus.len();
        total_theirs += theirs.len();
        println!(
            "{name}: port {port} streams {} messages {} (requests {req}) tshark {} partial {} resyncs {} only-ours {:?} only-tshark {:?}",
            r.streams,
            r.pdus.len(),
            theirs.len(),
            r.partial,
            r.resyncs,
            only_ours,
            only_theirs
        );
        assert!(
            only_ours.is_empty() && only_theirs.is_empty(),
            "{name}: differs from tshark"
        );
    }
    println!("public total: ours {total_ours}, tshark {total_theirs}");
}

/// With `Ports::Any`, Kafka is found by shape: the same messages as with the right port.
#[test]
fn any_port_detection_finds_the_same_messages() {
    let Some(mut all) = files("recorded", |n| n.ends_with(".pcap")) else {
        return;
    };
    all.extend(files("public", |n| n.contains(".pcap")).unwrap_or_default());
    let table = public_table();
    for f in all {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let port = table.get(&name).map_or(9092, |t| t.0);
        let listed = run(&f, Ports::List(vec![port])).unwrap();
        let any = run(&f, Ports::Any).unwrap();
        let (only_listed, only_any) = diff(&listed.pdus, &any.pdus);
        println!(
            "{name}: listed {} any {} streams {}/{}",
            listed.pdus.len(),
            any.pdus.len(),
            listed.streams,
            any.streams
        );
        // Any must never invent messages. It can only miss connections that carry no
        // plausible request: ndpi holds one mid-stream flow with a lone response, and
        // `__unsupported-version` two connections whose only requests are deliberately
        // bogus (api key 10000, ControlledShutdown v1000), with their two responses.
        assert!(only_any.is_empty(), "{name}: only with Any {only_any:?}");
        let allowed = if name.starts_with("ndpi__") {
            1
        } else if name.contains("unsupported-version") {
            4
        } else {
            0
        };
        assert!(
            only_listed.len() == allowed,
            "{name}: only with port {only_listed:?}"
        );
        if name.starts_with("ndpi__") {
            assert!(only_listed.iter().all(|p| p.1), "a response, not a request");
        }
        // The default (9092 by port, any other by shape): on 9092 exactly
        // the listed port's messages, elsewhere exactly what shape finds.
        let auto = run(&f, Ports::default()).unwrap();
        let expected = if port == 9092 { &listed } else { &any };
        let (missed, invented) = diff(&expected.pdus, &auto.pdus);
        assert!(
            missed.is_empty() && invented.is_empty(),
            "{name}: default ports missed {missed:?} invented {invented:?}"
        );
    }
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kafkashark-{}-{name}", std::process::id()))
}

/// Offsets at which each record of a classic pcap ends (24-byte file header, 16-byte record headers).
fn record_ends(bytes: &[u8]) -> Vec<usize> {
    let le = bytes[0..4] == [0xd4, 0xc3, 0xb2, 0xa1] || bytes[0..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let mut ends = Vec::new();
    let mut at = 24;
    while at + 16 <= bytes.len() {
        let f: [u8; 4] = bytes[at + 8..at + 12].try_into().unwrap();
        let incl = if le {
            u32::from_le_bytes(f)
        } else {
            u32::from_be_bytes(f)
        } as usize;
        at += 16 + incl;
        if at <= bytes.len() {
            ends.push(at);
        }
    }
    ends
}

#[test]
fn truncated_capture_gives_frames_then_clear_error() {
    let src = Path::new(CAPTURES).join("recorded/a1-kcat-produce-consume-group.pcap");
    let Ok(bytes) = std::fs::read(&src) else {
        println!("skipping: {} not present", src.display());
        return;
    };
    let ends = record_ends(&bytes);
    assert_eq!(ends.len(), 336);
    // Cut 10 bytes into record 101 (after its 16-byte header: inside the packet data).
    let cut = ends[99] + 16 + 10;
    let path = scratch("truncated.pcap");
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let mut s = FileSource::open(path.to_str().unwrap()).unwrap();
    let mut n = 0;
    let err = loop {
        match s.next_frame() {
            Ok(Some(f)) => {
                n += 1;
                assert_eq!(f.index, n);
            }
            Ok(None) => panic!("no error after {n} frames"),
            Err(e) => break e,
        }
    };
    assert_eq!(n, 100);
    assert!(
        matches!(err, CaptureError::Read { frame: 101, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("truncated.pcap") && msg.contains("frame 101"),
        "{msg}"
    );
    println!("truncated: {msg}");
    // After the error the source is at its end, it does not repeat the error.
    assert!(matches!(s.next_frame(), Ok(None)));
    // The frames before the cut still go through the pipeline.
    let mut s = FileSource::open(path.to_str().unwrap()).unwrap();
    let mut p = Pipeline::new(PipelineConfig::default());
    let mut out = Vec::new();
    while let Ok(Some(f)) = s.next_frame() {
        p.push(f, &mut out);
    }
    p.finish(&mut out);
    assert!(
        out.iter()
            .filter(|e| matches!(e, Event::Message(_)))
            .count()
            > 10
    );
    // A cut inside a record header is an error too.
    std::fs::write(&path, &bytes[..ends[4] + 7]).unwrap();
    let mut s = FileSource::open(path.to_str().unwrap()).unwrap();
    let mut n = 0;
    while let Ok(Some(_)) = s.next_frame() {
        n += 1;
    }
    assert_eq!(n, 5);
    std::fs::remove_file(&path).ok();
}

#[test]
fn wrong_magic_and_missing_file_are_open_errors() {
    let path = scratch("garbage.pcap");
    std::fs::write(&path, b"this is not a capture file at all, not even close").unwrap();
    let err = FileSource::open(path.to_str().unwrap())
        .err()
        .expect("must fail");
    assert!(matches!(err, CaptureError::Open { .. }));
    assert!(err.to_string().contains("garbage.pcap"), "{err}");
    std::fs::write(&path, b"").unwrap();
    assert!(FileSource::open(path.to_str().unwrap()).is_err());
    std::fs::remove_file(&path).ok();
    let err = FileSource::open("/nonexistent/x.pcap")
        .err()
        .expect("must fail");
    assert!(err.to_string().contains("/nonexistent/x.pcap"));
}

#[test]
fn pcapng_and_nanosecond_files() {
    let ng =
        Path::new(CAPTURES).join("public/wireshark-wiki-kafka-testcases-v4__api-versions.pcapng");
    let Ok(bytes) = std::fs::read(&ng) else {
        println!("skipping: {} not present", ng.display());
        return;
    };
    let mut s = FileSource::open(ng.to_str().unwrap()).unwrap();
    let mut frames = Vec::new();
    while let Some(f) = s.next_frame().unwrap() {
        frames.push(f);
    }
    assert_eq!(frames.len(), 12);
    assert_eq!(s.stats().unwrap().frames, 12);
    assert_eq!(frames[0].ts.secs, 1479411279); // 2016-11-17 19:34:39 UTC
                                               // A truncated pcapng: the blocks before the cut, then an error naming the frame.
    let path = scratch("cut.pcapng");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let mut s = FileSource::open(path.to_str().unwrap()).unwrap();
    let mut n = 0;
    let err = loop {
        match s.next_frame() {
            Ok(Some(_)) => n += 1,
            Ok(None) => panic!("no error"),
            Err(e) => break e,
        }
    };
    assert!((1..12).contains(&n), "{n} frames before the cut");
    assert!(
        err.to_string().contains(&format!("frame {}", n + 1)),
        "{err}"
    );
    println!("truncated pcapng: {n} frames, then: {err}");
    std::fs::remove_file(&path).ok();
    // A nanosecond pcap keeps its nanoseconds; a microsecond one is scaled.
    let ns = Path::new(CAPTURES).join("public/deepflow__01-fetch-v12-unknown.pcap");
    let f = FileSource::open(ns.to_str().unwrap())
        .unwrap()
        .next_frame()
        .unwrap()
        .unwrap();
    let us = Path::new(CAPTURES).join("public/deepflow__01-fetch-v12-perf.pcap");
    let g = FileSource::open(us.to_str().unwrap())
        .unwrap()
        .next_frame()
        .unwrap()
        .unwrap();
    println!("ns file first ts {} ; us file first ts {}", f.ts, g.ts);
    assert_eq!(g.ts.nanos % 1000, 0);
}

/// The captures shipped in the repository's `captures/` (these run without
/// ../shared): every Kafka message framed by kafkashark is one tshark frames
/// (same frame, direction, size and correlation id), and where tshark decoded a
/// request's api key and version, or a response's, kafkashark agrees.
#[test]
fn project_captures_match_their_tshark_readings() {
    use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
    use kafkashark::kafka::decode::Kind;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut pcaps: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    pcaps.sort();
    assert!(pcaps.len() >= 9, "captures/ holds the recorded captures");
    let mut keyed = 0;
    for f in pcaps {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let port: u16 = if name.starts_with("b1-") { 19092 } else { 9092 };
        let tsv = std::fs::read_to_string(f.with_extension("pcap.tshark.tsv"))
            .unwrap_or_else(|_| panic!("{name}: no .tshark.tsv beside it"));
        let theirs = tshark_pdus(&tsv, &[port], (0, 3, 5, 8));
        let r = run(&f, Ports::List(vec![port])).unwrap();
        let (only_ours, only_theirs) = diff(&r.pdus, &theirs);
        assert!(
            only_ours.is_empty() && only_theirs.is_empty(),
            "{name}: only ours {only_ours:?}; only tshark {only_theirs:?}"
        );
        // tshark's api key/version per (frame, correlation id), where it decoded them:
        // requests in columns 6/7, responses in 13/14.
        let mut tshark_keys: BTreeMap<(u64, i32, bool), (i16, i16)> = BTreeMap::new();
        for line in tsv.lines().skip(1) {
            let c: Vec<&str> = line.split('\t').collect();
            let Some(frame) = c.first().and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            let resp = c.get(3).and_then(|s| s.parse::<u16>().ok()) == Some(port);
            let list = |i: usize| -> Vec<&str> {
                c.get(i).map(|s| s.split(',').collect()).unwrap_or_default()
            };
            let corrs = list(8);
            let (keys, vers) = if resp {
                (list(13), list(14))
            } else {
                (list(6), list(7))
            };
            for (i, corr) in corrs.iter().enumerate() {
                let (Some(Ok(k)), Some(Ok(v)), Ok(corr)) = (
                    keys.get(i).map(|s| s.parse::<i16>()),
                    vers.get(i).map(|s| s.parse::<i16>()),
                    corr.parse::<i32>(),
                ) else {
                    continue;
                };
                tshark_keys.insert((frame, corr, resp), (k, v));
            }
        }
        let mut src = FileSource::open(f.to_str().unwrap()).unwrap();
        let mut a = Analyzer::new(AnalyzerConfig {
            pipeline: PipelineConfig::with_ports(Ports::List(vec![port])),
            ..AnalyzerConfig::default()
        });
        let mut out = Vec::new();
        while let Some(fr) = src.next_frame().unwrap() {
            a.push(&fr, &mut out);
        }
        a.finish(&mut out);
        for o in &out {
            let Output::Message(m) = o else { continue };
            let i = &m.info;
            let key = (
                i.frame,
                i.correlation_id.unwrap_or(i32::MIN),
                i.kind == Kind::Response,
            );
            if let Some(&(k, v)) = tshark_keys.get(&key) {
                assert_eq!(
                    (i.api_key.map(|k| k.0), i.api_version),
                    (Some(k), Some(v)),
                    "{name} frame {}: tshark reads api {k} v{v}",
                    i.frame
                );
                keyed += 1;
            }
        }
    }
    assert!(
        keyed > 500,
        "only {keyed} messages had a tshark api reading"
    );
    println!("{keyed} messages agree with tshark's api key and version");
}
