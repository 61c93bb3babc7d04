//! Decode benches: Produce requests and Fetch responses taken from the real
//! captures in `captures/` (extracted with the `Analyzer` at setup), decoded
//! three ways — the summary scan (no tree, what `print` and the lean paths
//! use), the tree without record sets, and the full tree with record batches
//! decompressed (`print -V`, `stats`). Throughput is message bytes.
//!
//! Quick mode for CI (no timing assertions):
//! `cargo bench --bench decode -- --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10`

// `criterion_group!` makes a public function without a doc comment.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafkashark::analyzer::AnalyzerConfig;
use kafkashark::kafka::decode::{summarize_request, summarize_response, Kind};
use kafkashark::kafka::{decode_request, decode_response, DecodeOptions};

mod common;

/// (bytes, api key, api version) of the messages of one api and kind.
fn pick(api: i16, kind: Kind) -> Vec<(Vec<u8>, i16, i16)> {
    let mut out = Vec::new();
    for p in common::capture_paths(&[
        "a1-kcat-produce-consume-group.pcap",
        "a2-confluent-compression-codecs.pcap",
        "a4-kafkajs-produce-consume-sll2.pcap",
        "a6-confluent-multisegment-pdus.pcap",
    ]) {
        let frames = common::frames(&p);
        for m in kafkashark_harness::messages(&frames, AnalyzerConfig::default()) {
            if m.info.kind == kind && m.info.api_key.map(|k| k.0) == Some(api) {
                if let Some(v) = m.info.api_version {
                    out.push((m.raw.bytes.to_vec(), api, v));
                }
            }
        }
    }
    out
}

fn bench(c: &mut Criterion, name: &str, msgs: &[(Vec<u8>, i16, i16)], kind: Kind) {
    let bytes: u64 = msgs.iter().map(|m| m.0.len() as u64).sum();
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes(bytes));
    let summary = DecodeOptions {
        records: false,
        ..DecodeOptions::default()
    };
    let full = DecodeOptions::default();
    g.bench_function(BenchmarkId::new("summary", msgs.len()), |b| {
        b.iter(|| {
            for (m, k, v) in msgs {
                let s = match kind {
                    Kind::Request => summarize_request(m, &summary),
                    Kind::Response => summarize_response(m, *k, *v, &summary),
                };
                black_box(s);
            }
        })
    });
    for (label, opts) in [("tree_no_records", &summary), ("full_tree", &full)] {
        g.bench_function(BenchmarkId::new(label, msgs.len()), |b| {
            b.iter(|| {
                for (m, k, v) in msgs {
                    let d = match kind {
                        Kind::Request => decode_request(m, opts),
                        Kind::Response => decode_response(m, *k, *v, opts),
                    };
                    black_box(d);
                }
            })
        });
    }
    g.finish();
}

fn decode(c: &mut Criterion) {
    let produce = pick(0, Kind::Request);
    let fetch = pick(1, Kind::Response);
    assert!(
        !produce.is_empty() && !fetch.is_empty(),
        "no messages found"
    );
    bench(c, "decode/produce_request", &produce, Kind::Request);
    bench(c, "decode/fetch_response", &fetch, Kind::Response);
}

criterion_group!(benches, decode);
criterion_main!(benches);
