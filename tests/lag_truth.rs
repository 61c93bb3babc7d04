//! Consumer lag, record age, produce → fetch delivery and producer batching,
//! checked against an independent reading of real captures:
//! `captures/wire_facts.py` (its own pcap reassembly and hand-written Fetch,
//! OffsetCommit and Produce readers, nothing from kafkashark) wrote
//! `FILE.wire.tsv` for b6 (a consumer group that keeps up and long-polls,
//! one that falls hundreds of records behind and commits every 10 records)
//! and a1 (kcat's group).
//!
//! From those rows this file computes what `stats` must report: per
//! (client, topic, partition) the fetches, records, last offsets asked and
//! answered and the lag after every response (and its maximum); per group
//! the committed offsets and their lag against the partition's latest high
//! watermark; per partition the record age of every fetched batch; per
//! consumer the delivery time of every fetched batch that the capture saw
//! produced; per producer its requests, batches and records. `stats` reads
//! them by its summary scan and, for the same figures, from full trees.
//!
//! Skips cleanly when a capture or its reading is missing.

mod wire;

use wire::{micros, paths};

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use kafkashark::analyzer::AnalyzerConfig;
use kafkashark::stats::{Stats, StatsConfig, StatsReport};

const CAPTURES: [&str; 2] = ["b6-consumer-lag.pcap", "a1-kcat-produce-consume-group.pcap"];

fn int(s: &str) -> i64 {
    s.parse().unwrap_or_else(|_| panic!("not an integer: {s}"))
}

/// A (client id or group, topic, partition).
type Row = (String, String, i32);
/// Fetches, records, fetch offset, next offset, high watermark, lag, max lag.
type LagFigures = (u64, u64, i64, i64, i64, i64, i64);

/// What the rows say `stats` must report.
#[derive(Debug, Default)]
struct Want {
    /// (client id, topic, partition) → (fetches, records, fetch offset, next offset, hw, lag, max lag).
    lag: BTreeMap<Row, LagFigures>,
    /// (group, topic, partition) → (committed offset, committed lag).
    committed: BTreeMap<Row, (i64, i64)>,
    /// (topic, partition) → (batches, max age in µs).
    age: BTreeMap<(String, i32), (u64, i64)>,
    /// consumer client id → (batches delivered, max delivery in µs).
    delivery: BTreeMap<String, (u64, i64)>,
    /// producer client id → (requests, batches, records).
    producers: BTreeMap<String, (u64, u64, u64)>,
}

fn want(wire: &Path) -> Want {
    let text = wire::read(wire);
    let rows = wire::rows(&text);
    let topic_names: HashMap<&str, &str> = rows
        .iter()
        .filter(|r| r[0] == "topic")
        .map(|r| (r[1], r[2]))
        .collect();
    let topic = |t: &str| topic_names.get(t).copied().unwrap_or(t).to_string();
    // (conn, corr) → (client id, request end, response first byte).
    let exch: HashMap<(&str, &str), (&str, i64, i64)> = rows
        .iter()
        .filter(|r| r[0] == "exch")
        .map(|r| ((r[1], r[4]), (r[5], micros(r[6]), micros(r[7]))))
        .collect();
    let mut w = Want::default();
    // Produced batches: (topic, partition, pid, epoch, seq, crc) → request end.
    let mut produced: HashMap<(String, i64, i64, i64, i64, i64), i64> = HashMap::new();
    let mut produce_reqs: HashMap<(&str, &str), ()> = HashMap::new();
    for r in rows.iter().filter(|r| r[0] == "produce") {
        let (client, end, _) = exch[&(r[1], r[2])];
        let key = (
            topic(r[4]),
            int(r[5]),
            int(r[6]),
            int(r[7]),
            int(r[8]),
            int(r[9]),
        );
        produced.insert(key, end);
        let p = w.producers.entry(client.to_string()).or_default();
        if produce_reqs.insert((r[1], r[2]), ()).is_none() {
            p.0 += 1;
        }
        p.1 += 1;
        p.2 += int(r[10]) as u64;
    }
    // Fetch exchanges in the order their responses came (rows are per
    // connection: order by response time).
    let asked: HashMap<(&str, &str, String, i64), i64> = rows
        .iter()
        .filter(|r| r[0] == "fetchreq")
        .map(|r| ((r[1], r[2], topic(r[5]), int(r[6])), int(r[7])))
        .collect();
    let mut answers: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "fetchrsp").collect();
    answers.sort_by_key(|r| exch[&(r[1], r[2])].2);
    let mut latest_hw: HashMap<(String, i64), i64> = HashMap::new();
    for r in answers {
        let (t, p, err, hw) = (topic(r[3]), int(r[4]), int(r[5]), int(r[6]));
        if err != 0 || hw < 0 {
            continue;
        }
        latest_hw.insert((t.clone(), p), hw);
        let (client, _, _) = exch[&(r[1], r[2])];
        let key = (client.to_string(), t.clone(), p as i32);
        let prev_next = w.lag.get(&key).map(|x| x.3);
        let Some(ask) = asked
            .get(&(r[1], r[2], t.clone(), p))
            .copied()
            .or(prev_next)
        else {
            continue;
        };
        let records = int(r[10]) as u64;
        let next = if records > 0 {
            (int(r[11]) + 1).max(ask)
        } else {
            ask
        };
        let lag = (hw - next).max(0);
        let e = w.lag.entry(key).or_insert((0, 0, 0, 0, 0, 0, 0));
        *e = (e.0 + 1, e.1 + records, ask, next, hw, lag, e.6.max(lag));
    }
    for r in rows.iter().filter(|r| r[0] == "commit") {
        let key = (r[3].to_string(), topic(r[4]), int(r[5]) as i32);
        w.committed.insert(key, (int(r[6]), 0));
    }
    for ((_, t, p), c) in w.committed.iter_mut() {
        let hw = latest_hw[&(t.clone(), i64::from(*p))];
        c.1 = (hw - c.0).max(0);
    }
    for r in rows.iter().filter(|r| r[0] == "fetched") {
        let (client, _, first) = exch[&(r[1], r[2])];
        let (t, p) = (topic(r[3]), int(r[4]));
        let age = first - int(r[10]) * 1000;
        let a = w.age.entry((t.clone(), p as i32)).or_default();
        *a = (a.0 + 1, a.1.max(age));
        let key = (t, p, int(r[5]), int(r[6]), int(r[7]), int(r[8]));
        if let Some(end) = produced.get(&key) {
            let d = w.delivery.entry(client.to_string()).or_default();
            *d = (d.0 + 1, d.1.max(first - end));
        }
    }
    w
}

fn report(cap: &Path, cfg: AnalyzerConfig) -> StatsReport {
    let mut stats = Stats::new(StatsConfig::default());
    wire::outputs(cap, cfg).iter().for_each(|o| stats.push(o));
    stats.settle();
    stats.report()
}

/// A millisecond figure of the report as whole microseconds.
fn us(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

#[test]
fn lag_age_delivery_and_batching_match_the_independent_reading() {
    let scans = Stats::analyzer_config(AnalyzerConfig::default());
    // Every tree built: the facts read from trees instead of scans.
    let trees = AnalyzerConfig {
        tree_filter: None,
        ..scans.clone()
    };
    for name in CAPTURES {
        let Some((cap, wire)) = paths(name) else {
            eprintln!("skipping {name}: capture or its wire.tsv missing");
            continue;
        };
        let w = want(&wire);
        assert!(!w.lag.is_empty(), "{name}: no fetch rows");
        for (how, cfg) in [("summary scans", scans.clone()), ("trees", trees.clone())] {
            let r = report(&cap, cfg);
            let at = format!("{name} ({how})");
            let got: BTreeMap<_, _> = r
                .lag
                .partitions
                .iter()
                .map(|p| {
                    let key = (p.client.clone(), p.topic.clone(), p.partition);
                    let v = (
                        p.fetches,
                        p.records,
                        p.fetch_offset,
                        p.next_offset,
                        p.high_watermark,
                        p.lag,
                        p.max_lag,
                    );
                    (key, v)
                })
                .collect();
            assert_eq!(got, w.lag, "{at}: lag");
            let committed: BTreeMap<_, _> = r
                .lag
                .partitions
                .iter()
                .filter_map(|p| {
                    let key = (p.group.clone()?, p.topic.clone(), p.partition);
                    Some((key, (p.committed_offset?, p.committed_lag?)))
                })
                .collect();
            // Every committed offset of a fetching member is reported, and
            // some are (both captures' groups commit and fetch).
            assert!(!committed.is_empty(), "{at}: no committed offsets reported");
            for (k, v) in &committed {
                assert_eq!(Some(v), w.committed.get(k), "{at}: committed {k:?}");
            }
            let groups: BTreeMap<_, _> = r
                .lag
                .groups
                .iter()
                .map(|g| (g.group.clone(), (g.partitions, g.committed_lag)))
                .collect();
            let mut want_groups: BTreeMap<String, (usize, i64)> = BTreeMap::new();
            for ((g, _, _), (_, l)) in &w.committed {
                let e = want_groups.entry(g.clone()).or_default();
                *e = (e.0 + 1, e.1 + l);
            }
            assert_eq!(groups, want_groups, "{at}: groups");
            let age: BTreeMap<_, _> = r
                .delivery
                .record_age
                .iter()
                .map(|a| {
                    let max = a.age_ms.as_ref().map_or(0, |h| us(h.max));
                    ((a.topic.clone(), a.partition), (a.batches, max))
                })
                .collect();
            assert_eq!(age, w.age, "{at}: record age");
            let delivery: BTreeMap<_, _> = r
                .delivery
                .delivery
                .iter()
                .map(|d| {
                    let max = d.delivery_ms.as_ref().map_or(0, |h| us(h.max));
                    (d.consumer.clone(), (d.batches, max))
                })
                .collect();
            assert_eq!(delivery, w.delivery, "{at}: delivery");
            let producers: BTreeMap<_, _> = r
                .delivery
                .producers
                .iter()
                .map(|p| (p.producer.clone(), (p.requests, p.batches, p.records)))
                .collect();
            assert_eq!(producers, w.producers, "{at}: producers");
        }
    }
}

/// b6's story, in figures: the slow group falls hundreds of records behind
/// on every partition while the fast group ends level with the log.
#[test]
fn b6s_slow_group_lags_and_its_fast_group_does_not() {
    let Some((cap, _)) = paths("b6-consumer-lag.pcap") else {
        eprintln!("skipping: b6 missing");
        return;
    };
    let r = report(&cap, Stats::analyzer_config(AnalyzerConfig::default()));
    let group = |g: &str| r.lag.groups.iter().find(|x| x.group == g).unwrap();
    assert_eq!(group("fast-group").committed_lag, 0);
    assert!(
        group("slow-group").committed_lag > 500,
        "{:?}",
        r.lag.groups
    );
    for p in r
        .lag
        .partitions
        .iter()
        .filter(|p| p.group.as_deref() == Some("slow-group"))
    {
        assert!(p.lag > 100, "{p:?}");
        assert!(p.trend_per_s.is_some_and(|t| t > 0.0), "{p:?}");
        assert!(p.series.len() > 5, "{p:?}");
    }
    assert!(r.delivery.unmatched_batches == 0 && r.delivery.forgotten_batches == 0);
}
