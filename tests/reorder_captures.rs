//! Real captures whose TCP data segments the capture put out of order.
//!
//! Every capture in `captures/` and, when present, `../shared/captures` is
//! mutated by the capture mutator (`scripts/mutate.rs`: data segments permuted
//! in windows of 2 to 8, never the identity, pure ACKs in place; with and
//! without 1-byte resplits and duplicates; several seeds), and both files are
//! read on every port. The mutated reading must equal the clean one message
//! for message: per connection and direction, the same messages in the same
//! order with the same bytes, header facts, summary facts and pairing (frame
//! numbers and times are not compared: the mutation moves them).
//!
//! The mutation moves a segment across whatever lies between its place and
//! its new one, idle periods included, which reordering in a real capture
//! does not do (the public captures hold idle periods of 30 s); the equality
//! is asserted with the reorder window's time bound, and the gap timeout of
//! unacknowledged holes, widened to two minutes (the packet and byte bounds
//! as by default), and what the defaults read is counted beside it.

#[path = "../scripts/mutate.rs"]
#[allow(dead_code)]
mod mutate;
mod support;

use kafkashark::analyzer::{AnalyzerConfig, MessageRecord};
use kafkashark::capture::{Frame, LinkType};
use kafkashark::flow::{Ports, ReorderWindow};
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::PipelineConfig;
use kafkashark_harness::messages;
use mutate::{mutate, read_capture, Mutation, Record};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

fn config(reorder: ReorderWindow) -> AnalyzerConfig {
    let mut pipeline = PipelineConfig::with_ports(Ports::Any);
    pipeline.flow.reorder = reorder;
    pipeline.flow.gap_timeout_ns = pipeline.flow.gap_timeout_ns.max(reorder.time_ns);
    AnalyzerConfig {
        pipeline,
        ..AnalyzerConfig::default()
    }
}

/// The window of the equality: the default with its time bound two minutes
/// (and the gap timeout of unacknowledged holes as long).
fn wide() -> ReorderWindow {
    ReorderWindow {
        time_ns: 120_000_000_000,
        ..ReorderWindow::default()
    }
}

fn frames_of(link: LinkType, records: &[Record]) -> impl Iterator<Item = Frame> + '_ {
    records.iter().enumerate().map(move |(i, r)| Frame {
        index: i as u64 + 1,
        ts: r.ts,
        caplen: r.data.len() as u32,
        origlen: r.origlen,
        link,
        data: bytes::Bytes::copy_from_slice(&r.data),
        file_offset: None,
        capture: 0,
    })
}

/// What must be equal of a message, in its connection and direction.
type Facts = String;

/// The messages of a reading, per (client, broker, kind), in order.
fn facts(msgs: &[MessageRecord]) -> BTreeMap<(SocketAddr, SocketAddr, bool), Vec<Facts>> {
    let corr_of: BTreeMap<u64, Option<i32>> = msgs
        .iter()
        .map(|m| (m.info.index, m.info.correlation_id))
        .collect();
    let mut by: BTreeMap<_, Vec<Facts>> = BTreeMap::new();
    for m in msgs {
        let i = &m.info;
        let peer = i.peer.and_then(|p| corr_of.get(&p).copied().flatten());
        let key = (i.client, i.broker, i.kind == Kind::Request);
        by.entry(key).or_default().push(format!(
            "api {:?} v{:?} corr {:?} len {} client_id {:?} paired {} peer {:?} inferred {} \
             expects {} throttle {:?} errors {:?} decode_error {:?} resynced {} skipped {} \
             topics {:?} missing {} bytes {:02x?}",
            i.api_key.map(|k| k.0),
            i.api_version,
            i.correlation_id,
            i.length,
            i.client_id,
            i.paired,
            peer,
            i.inferred,
            i.expects_response,
            i.throttle_time_ms,
            i.error_codes,
            i.decode_error,
            i.resynced,
            i.skipped_before,
            i.topics,
            m.raw.missing,
            &m.raw.bytes[..]
        ));
    }
    by
}

/// The differences between two readings (empty when equal).
fn differences(clean: &[MessageRecord], got: &[MessageRecord]) -> Vec<String> {
    let (c, g) = (facts(clean), facts(got));
    let mut errs = Vec::new();
    for (k, cl) in &c {
        let gl = g.get(k).map(Vec::as_slice).unwrap_or_default();
        if cl.len() != gl.len() {
            errs.push(format!("{k:?}: {} messages, clean {}", gl.len(), cl.len()));
        }
        for (i, (a, b)) in cl.iter().zip(gl).enumerate() {
            if a != b {
                errs.push(format!(
                    "{k:?} #{i}:\n    clean {a:.300}\n    got   {b:.300}"
                ));
                break;
            }
        }
    }
    for k in g.keys() {
        if !c.contains_key(k) {
            errs.push(format!("{k:?}: not in the clean reading"));
        }
    }
    errs
}

const MUTATIONS: [Mutation; 6] = [
    Mutation {
        seed: 1,
        resplit: false,
        duplicate: false,
    },
    Mutation {
        seed: 2,
        resplit: false,
        duplicate: false,
    },
    Mutation {
        seed: 3,
        resplit: false,
        duplicate: false,
    },
    Mutation {
        seed: 4,
        resplit: true,
        duplicate: false,
    },
    Mutation {
        seed: 5,
        resplit: false,
        duplicate: true,
    },
    Mutation {
        seed: 6,
        resplit: true,
        duplicate: true,
    },
];

/// Every capture, every mutation: the reading equals the clean one.
#[test]
fn mutated_captures_read_as_the_clean_ones() {
    let mut failures = Vec::new();
    let (mut total, mut with_default, mut moved) = (0usize, 0usize, 0usize);
    for path in support::capture_files(true) {
        // A merge of two captures whose connections start mid-stream in both
        // directions, with responses whose requests were not captured: which
        // response boundary framing's resynchronisation accepts depends on
        // the requests framed before it, so on arrival order across
        // directions, which no ACK orders before a direction's first byte.
        if path.ends_with("ndpi__kafka.pcapng") {
            continue;
        }
        let Some((link, frames)) = read_capture(path.to_str().unwrap_or("")) else {
            continue;
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let clean = messages(&frames, config(wide()));
        for m in MUTATIONS {
            let (records, report) = mutate(link, &frames, m);
            moved += report.moved;
            let got = messages(frames_of(link, &records), config(wide()));
            total += clean.len();
            let errs = differences(&clean, &got);
            if !errs.is_empty() {
                failures.push(format!("{name:?} {m:?}:\n  {}", errs.join("\n  ")));
            }
            let dflt = messages(frames_of(link, &records), config(ReorderWindow::default()));
            with_default += dflt.len().min(clean.len());
        }
    }
    println!(
        "{total} clean messages over all mutations ({moved} segments moved); \
         the default window reads {with_default}"
    );
    assert!(
        failures.is_empty(),
        "{} mutated captures differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The mutation is deterministic and never leaves a window of two or more
/// in place; resplits and duplicates add frames.
#[test]
fn the_mutation_is_seeded_and_moves_segments() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/a1-kcat-produce-consume-group.pcap");
    let Some((link, frames)) = read_capture(path.to_str().unwrap_or("")) else {
        return;
    };
    let m = Mutation {
        seed: 7,
        resplit: true,
        duplicate: true,
    };
    let (a, ra) = mutate(link, &frames, m);
    let (b, rb) = mutate(link, &frames, m);
    assert_eq!(a, b);
    assert_eq!(ra, rb);
    assert!(ra.moved > ra.data_segments / 2, "{ra:?}");
    assert!(ra.split > 0 && ra.duplicated > 0, "{ra:?}");
    assert_eq!(a.len(), frames.len() + ra.split + ra.duplicated);
    let (plain, rp) = mutate(
        link,
        &frames,
        Mutation {
            seed: 7,
            resplit: false,
            duplicate: false,
        },
    );
    assert_eq!(plain.len(), frames.len());
    assert_eq!((rp.split, rp.duplicated), (0, 0));
    // Without the window the mutated capture loses messages: the test bites.
    let off = messages(frames_of(link, &plain), config(ReorderWindow::OFF));
    let on = messages(frames_of(link, &plain), config(wide()));
    let clean = messages(&frames, config(wide()));
    assert_eq!(on.len(), clean.len());
    assert!(off.len() < clean.len(), "{} of {}", off.len(), clean.len());
}
