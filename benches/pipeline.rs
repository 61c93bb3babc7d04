//! Whole-path benches over the frames of a capture held in memory: TCP
//! reassembly and Kafka framing (`Pipeline`), then the `Analyzer` (decode and
//! pairing) as `print` runs it (summaries), as `print -V` runs it (full
//! trees), and as `stats` runs it (`Stats::analyzer_config`: the summary
//! scan's placed facts, record sets counted from batch headers, trees only
//! where `Stats::needs_tree` wants them; then `Stats`) — beside `Stats` fed
//! full trees with records, what it read before.
//! Throughput is captured frame bytes. Set `KAFKASHARK_BENCH_PCAP` to run on
//! another file (e.g. a corpus from `make-corpus`).
//!
//! Quick mode for CI (no timing assertions):
//! `cargo bench --bench pipeline -- --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10`

// `criterion_group!` makes a public function without a doc comment.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafkashark::analyzer::{Analyzer, AnalyzerConfig};
use kafkashark::pipeline::{Pipeline, PipelineConfig};
use kafkashark::stats::{Stats, StatsConfig};

mod common;

fn analyze(frames: &[kafkashark::capture::Frame], cfg: &AnalyzerConfig, stats: bool) -> u64 {
    let mut a = Analyzer::new(cfg.clone());
    let mut s = stats.then(|| Stats::new(StatsConfig::default()));
    let mut out = Vec::new();
    let mut n = 0u64;
    for f in frames {
        a.push(f, &mut out);
        for o in out.drain(..) {
            if let Some(s) = s.as_mut() {
                s.push(&o);
            }
            n += 1;
        }
    }
    a.finish(&mut out);
    n += out.len() as u64;
    if let Some(s) = s.as_mut() {
        for o in &out {
            s.push(o);
        }
        black_box(s.report());
    }
    n
}

fn pipeline(c: &mut Criterion) {
    for path in common::capture_paths(&[
        "a2-confluent-compression-codecs.pcap",
        "a6-confluent-multisegment-pdus.pcap",
        "b3-large-messages.pcap",
    ]) {
        let frames = common::frames(&path);
        let name = common::short(&path);
        let mut g = c.benchmark_group(format!("pipeline/{name}"));
        g.throughput(Throughput::Bytes(common::frame_bytes(&frames)));
        g.bench_function(BenchmarkId::new("reassembly_framing", frames.len()), |b| {
            b.iter(|| {
                let mut p = Pipeline::new(PipelineConfig::default());
                let mut evs = Vec::new();
                let mut n = 0usize;
                for f in &frames {
                    p.push(f.clone(), &mut evs);
                    n += evs.len();
                    evs.clear();
                }
                p.finish(&mut evs);
                black_box(n + evs.len())
            })
        });
        let mut summary = AnalyzerConfig::default();
        summary.decode.records = false;
        let full = AnalyzerConfig {
            keep_trees: true,
            ..AnalyzerConfig::default()
        };
        let stats = Stats::analyzer_config(AnalyzerConfig::default());
        let mut stats_trees = full.clone();
        stats_trees.decode.records = true;
        for (label, cfg, with_stats) in [
            ("analyzer_summary", &summary, false),
            ("analyzer_full_trees", &full, false),
            ("analyzer_stats", &stats, true),
            ("analyzer_stats_full_trees", &stats_trees, true),
        ] {
            g.bench_function(BenchmarkId::new(label, frames.len()), |b| {
                b.iter(|| black_box(analyze(&frames, cfg, with_stats)))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
