//! `kafkashark::stats` on every capture in `captures/`, checked figure by figure
//! against independent computations made here, not through the stats code:
//!
//! - per api and version: requests, responses, unpaired, throttled, throttle
//!   max/sum, errors by name and latency percentiles, recomputed from the
//!   `MessageInfo`s (the JSONL facts) with a sorted vector and nearest rank;
//! - the slow list and the throttle series, from the same facts;
//! - clients: the set of (client id, api, version) and the request counts;
//! - traffic shape: batches and records by codec against the independent
//!   Python reader's counts in `captures/*.summary.txt` (when the summary
//!   describes this very file: same packet count), and against a naive walk of
//!   the JSON field trees;
//! - error places and group generations by hand-known facts of a1, a3 and b2.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageInfo, Notice, Output};
use kafkashark::capture::{FileSource, FrameSource, Polled};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::errors::error_name;
use kafkashark::kafka::schema::ApiKey;
use kafkashark::pipeline::PipelineConfig;
use kafkashark::stats::{Stats, StatsConfig, StatsReport};
use serde_json::Value as J;

fn captures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let mut v: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("captures/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    v.sort();
    v
}

fn port_of(p: &Path) -> u16 {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name.starts_with("b1-") {
        19092
    } else {
        9092
    }
}

/// What one pass over a capture gives: the report, and the raw facts the
/// independent computations start from.
struct Run {
    report: StatsReport,
    infos: Vec<MessageInfo>,
    /// `(kind, api_key, fields JSON)` of every message with a tree.
    trees: Vec<(Kind, Option<i16>, u64, J)>,
    unanswered_notices: u64,
    frames: u64,
}

fn run(path: &Path, slow: usize) -> Run {
    let mut src = FileSource::open(path.to_str().expect("utf-8 path")).expect("open capture");
    let cfg = Stats::analyzer_config(AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(vec![port_of(path)])),
        ..AnalyzerConfig::default()
    });
    let mut a = Analyzer::new(cfg);
    let mut stats = Stats::new(StatsConfig {
        slow,
        ..StatsConfig::default()
    });
    let mut out = Vec::new();
    let mut r = Run {
        report: stats.report(),
        infos: Vec::new(),
        trees: Vec::new(),
        unanswered_notices: 0,
        frames: 0,
    };
    let take = |out: &mut Vec<Output>, stats: &mut Stats, r: &mut Run| {
        for o in out.drain(..) {
            stats.push(&o);
            match o {
                Output::Message(m) => {
                    // The naive routes read full trees, decoded again on their own
                    // (`stats` keeps trees only where its scan cannot place facts).
                    let d = kafkashark::analyzer::redecode(&m.info, &m.raw, &Default::default());
                    r.trees.push((
                        m.info.kind,
                        m.info.api_key.map(|k| k.0),
                        m.info.frame,
                        d.root.to_json(),
                    ));
                    r.infos.push(m.info);
                }
                Output::Notice(n) => {
                    if matches!(*n, Notice::Unanswered { .. }) {
                        r.unanswered_notices += 1;
                    }
                }
            }
        }
    };
    loop {
        match src.poll() {
            Ok(Polled::Frame(f)) => {
                r.frames += 1;
                a.push(&f, &mut out);
            }
            Ok(Polled::Timeout) => continue,
            Ok(Polled::End) | Err(_) => break,
        }
        take(&mut out, &mut stats, &mut r);
    }
    a.finish(&mut out);
    take(&mut out, &mut stats, &mut r);
    r.report = stats.report();
    r
}

fn label(c: i16) -> String {
    error_name(c).map_or_else(|| format!("UNKNOWN({c})"), str::to_string)
}

/// Nearest rank, the naive way: sort, take element ⌈p·n⌉ (1-based).
fn nearest_rank(sorted: &[u64], permille: usize) -> f64 {
    let n = sorted.len();
    let rank = (permille * n).div_ceil(1000).max(1);
    sorted[rank - 1] as f64 / 1e6
}

fn close(got: f64, exact: f64) -> bool {
    (got - exact).abs() <= exact * 0.001 + 0.001
}

fn check_latency(what: &str, got: &Option<kafkashark::stats::LatencyMs>, lat: &[u64]) {
    let mut sorted = lat.to_vec();
    sorted.sort_unstable();
    match got {
        None => assert!(
            sorted.is_empty(),
            "{what}: no latency reported for {} exchanges",
            sorted.len()
        ),
        Some(l) => {
            assert_eq!(l.count as usize, sorted.len(), "{what}: count");
            for (p, v) in [(500, l.p50), (900, l.p90), (990, l.p99), (999, l.p999)] {
                let exact = nearest_rank(&sorted, p);
                assert!(close(v, exact), "{what}: p{p} {v} vs exact {exact}");
            }
            let max = *sorted.last().unwrap() as f64 / 1e6;
            let min = sorted[0] as f64 / 1e6;
            assert_eq!(l.max, max, "{what}: max");
            assert_eq!(l.min, min, "{what}: min");
            let mean = sorted.iter().map(|&x| x as f64).sum::<f64>() / sorted.len() as f64 / 1e6;
            assert!(
                (l.mean - mean).abs() <= mean * 1e-9 + 1e-9,
                "{what}: mean {} vs {mean}",
                l.mean
            );
        }
    }
}

#[derive(Default, Debug)]
struct Naive {
    requests: u64,
    responses: u64,
    unanswered: u64,
    orphans: u64,
    throttled: u64,
    throttle_max: i64,
    throttle_sum: i64,
    errors: BTreeMap<String, u64>,
    latency: Vec<u64>,
}

#[test]
fn per_api_figures_match_a_naive_count_on_every_capture() {
    let caps = captures();
    assert!(
        caps.len() >= 6,
        "expected the a1..a6 captures, found {caps:?}"
    );
    for path in caps {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let r = run(&path, 20);
        let rep = &r.report;
        let answered: HashSet<u64> = r
            .infos
            .iter()
            .filter(|i| i.kind == Kind::Response && i.paired)
            .filter_map(|i| i.peer)
            .collect();
        let mut naive: BTreeMap<i16, Naive> = BTreeMap::new();
        let mut by_version: BTreeMap<(i16, i16), (u64, u64, Vec<u64>)> = BTreeMap::new();
        for i in &r.infos {
            let Some(ApiKey(k)) = i.api_key else { continue };
            let n = naive.entry(k).or_default();
            let v = i.api_version.map(|v| by_version.entry((k, v)).or_default());
            match i.kind {
                Kind::Request => {
                    n.requests += 1;
                    if let Some(v) = v {
                        v.0 += 1;
                    }
                    if i.expects_response && !answered.contains(&i.index) {
                        n.unanswered += 1;
                    }
                }
                Kind::Response => {
                    n.responses += 1;
                    if !i.paired {
                        n.orphans += 1;
                    }
                    if let Some(t) = i.throttle_time_ms.filter(|&t| t > 0) {
                        n.throttled += 1;
                        n.throttle_max = n.throttle_max.max(i64::from(t));
                        n.throttle_sum += i64::from(t);
                    }
                    for &c in &i.error_codes {
                        *n.errors.entry(label(c)).or_default() += 1;
                    }
                    if let Some(l) = i.latency_ns {
                        n.latency.push(l);
                    }
                    if let Some(v) = v {
                        v.1 += 1;
                        if let Some(l) = i.latency_ns {
                            v.2.push(l);
                        }
                    }
                }
            }
        }
        let keys: Vec<i16> = rep.apis.iter().map(|a| a.api_key).collect();
        assert_eq!(
            keys,
            naive.keys().copied().collect::<Vec<_>>(),
            "{name}: api keys"
        );
        for a in &rep.apis {
            let n = &naive[&a.api_key];
            let what = format!("{name} api {}", a.api_key);
            assert_eq!(
                (a.requests, a.responses),
                (n.requests, n.responses),
                "{what}: counts"
            );
            assert_eq!(a.unanswered, n.unanswered, "{what}: unanswered");
            assert_eq!(a.responses_without_request, n.orphans, "{what}: orphans");
            assert_eq!(a.unpaired, n.unanswered + n.orphans, "{what}: unpaired");
            assert_eq!(a.throttled, n.throttled, "{what}: throttled");
            assert_eq!(
                (a.throttle_time_ms.max, a.throttle_time_ms.sum),
                (n.throttle_max, n.throttle_sum),
                "{what}: throttle"
            );
            assert_eq!(a.errors, n.errors, "{what}: errors");
            check_latency(&what, &a.latency_ms, &n.latency);
            for v in &a.versions {
                let (req, rsp, lat) = &by_version[&(a.api_key, v.version)];
                let what = format!("{what} v{}", v.version);
                assert_eq!((v.requests, v.responses), (*req, *rsp), "{what}: counts");
                check_latency(&what, &v.latency_ms, lat);
            }
        }
        let total_unanswered: u64 = naive.values().map(|n| n.unanswered).sum();
        assert_eq!(
            rep.summary.unanswered, r.unanswered_notices,
            "{name}: notices"
        );
        assert_eq!(
            total_unanswered, r.unanswered_notices,
            "{name}: unanswered vs notices"
        );
        assert_eq!(
            rep.summary.in_flight, 0,
            "{name}: nothing in flight after finish"
        );
        let errors_total: u64 = rep.errors.iter().map(|e| e.count).sum();
        let naive_errors: u64 = r.infos.iter().map(|i| i.error_codes.len() as u64).sum();
        assert_eq!(
            errors_total, naive_errors,
            "{name}: every error placed once"
        );
        assert_eq!(
            rep.overflow.apis + rep.overflow.clients + rep.overflow.topics,
            0
        );
    }
}

#[test]
fn slow_list_and_throttle_series_match_the_facts() {
    let caps = captures();
    assert!(caps.len() >= 6, "the shipped captures: {caps:?}");
    let (mut slow, mut throttled) = (0, 0);
    for path in caps {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let r = run(&path, 7);
        let frame_of: BTreeMap<u64, u64> = r
            .infos
            .iter()
            .filter(|i| i.kind == Kind::Request)
            .map(|i| (i.index, i.frame))
            .collect();
        // Ranked by service time; long-poll Fetches are counted apart.
        let polls = r.infos.iter().filter(|i| i.long_poll()).count() as u64;
        assert_eq!(r.report.slow_long_polls_left_out, polls, "{name}");
        let mut lat: Vec<(u64, u64, Option<u64>)> = r
            .infos
            .iter()
            .filter(|i| !i.long_poll())
            .filter_map(|i| {
                i.service_ns()
                    .map(|s| (s, i.frame, i.peer.and_then(|p| frame_of.get(&p).copied())))
            })
            .collect();
        // Slowest first; ties: earlier response first.
        lat.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        lat.truncate(7);
        let got: Vec<(f64, u64, Option<u64>)> = r
            .report
            .slow
            .iter()
            .map(|s| (s.service_ms, s.response_frame, s.request_frame))
            .collect();
        let want: Vec<(f64, u64, Option<u64>)> = lat
            .iter()
            .map(|&(l, f, q)| (l as f64 / 1e6, f, q))
            .collect();
        assert_eq!(got, want, "{name}: slow list");
        slow += got.len();

        let mut series: BTreeMap<i64, (u64, i64, i64)> = BTreeMap::new();
        for i in &r.infos {
            if let Some(t) = i.throttle_time_ms.filter(|&t| t > 0) {
                let e = series.entry(i.ts.secs).or_default();
                e.0 += 1;
                e.1 += i64::from(t);
                e.2 = e.2.max(i64::from(t));
            }
        }
        let got: BTreeMap<i64, (u64, i64, i64)> = r
            .report
            .throttle
            .series
            .iter()
            .map(|s| (s.second, (s.count, s.sum_ms, s.max_ms)))
            .collect();
        assert_eq!(got, series, "{name}: throttle series");
        throttled += series.len();
    }
    // Both lists compared had something in them (b4 is throttled).
    assert!(
        slow > 0 && throttled > 0,
        "slow {slow}, throttled seconds {throttled}"
    );
}

#[test]
fn clients_used_exactly_the_api_versions_seen() {
    let caps = captures();
    assert!(caps.len() >= 6, "the shipped captures: {caps:?}");
    let mut seen = 0;
    for path in caps {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let r = run(&path, 20);
        let mut naive: BTreeMap<(Option<String>, i16, i16), u64> = BTreeMap::new();
        for i in r.infos.iter().filter(|i| i.kind == Kind::Request) {
            if let (Some(ApiKey(k)), Some(v)) = (i.api_key, i.api_version) {
                *naive.entry((i.client_id.clone(), k, v)).or_default() += 1;
            }
        }
        let mut got: BTreeMap<(Option<String>, i16, i16), u64> = BTreeMap::new();
        for c in &r.report.clients {
            for a in &c.apis {
                *got.entry((c.client_id.clone(), a.api_key, a.version))
                    .or_default() += a.requests;
                let legacy = kafkashark::kafka::schema::message(
                    a.api_key,
                    kafkashark::kafka::schema::MessageKind::Request,
                    a.version,
                )
                .map(|m| m.set)
                    == Some(kafkashark::kafka::schema::SchemaSet::Legacy);
                assert_eq!(a.removed_in_kafka_4, legacy, "{name}: mark");
            }
        }
        assert_eq!(got, naive, "{name}: (client id, api, version) → requests");
        seen += got.len();
    }
    assert!(seen > 0, "no client used any api");
}

/// `v2 gzip=2, v2 none=6; records 8` → ({gzip: 2, none: 6}, 8).
fn parse_batches(line: &str) -> (BTreeMap<String, u64>, u64) {
    let (_, rest) = line.split_once("):").expect("summary line");
    let (codecs, records) = rest.split_once("; records").unwrap_or((rest, " 0"));
    let mut m = BTreeMap::new();
    for part in codecs.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let part = part.trim_start_matches("v2 ");
        if let Some((c, n)) = part.split_once('=') {
            *m.entry(c.to_string()).or_default() += n.parse::<u64>().expect("count");
        }
    }
    (m, records.trim().parse().expect("records"))
}

/// A naive walk of a JSON field tree: every v2 RecordBatch, its codec and recordsCount.
fn naive_batches(tree: &J, out: &mut (BTreeMap<String, u64>, u64)) {
    let kids = tree["children"].as_array().cloned().unwrap_or_default();
    if tree["name"] == "RecordBatch" && tree["type"] == "v2" {
        let field = |n: &str| {
            kids.iter()
                .find(|k| k["name"] == n)
                .and_then(|k| k["value"].as_i64())
        };
        let codec = match field("attributes").unwrap_or(0) & 7 {
            0 => "none",
            1 => "gzip",
            2 => "snappy",
            3 => "lz4",
            4 => "zstd",
            _ => "other",
        };
        *out.0.entry(codec.to_string()).or_default() += 1;
        out.1 += field("recordsCount").unwrap_or(0) as u64;
        return;
    }
    for k in &kids {
        naive_batches(k, out);
    }
}

#[test]
fn traffic_shape_matches_the_independent_reader_and_the_trees() {
    let mut compared_with_summary = 0;
    for path in captures() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let r = run(&path, 20);
        let mut produce = (BTreeMap::new(), 0u64);
        let mut fetch = (BTreeMap::new(), 0u64);
        for t in &r.report.topics {
            for (c, n) in &t.produce.codecs {
                *produce.0.entry(c.clone()).or_default() += n;
            }
            produce.1 += t.produce.records;
            for (c, n) in &t.fetch.codecs {
                *fetch.0.entry(c.clone()).or_default() += n;
            }
            fetch.1 += t.fetch.records;
            assert_eq!(
                t.produce.batches,
                t.produce.codecs.values().sum::<u64>(),
                "{name}: batches = Σ codecs"
            );
        }
        // Route 1: a naive walk of the JSON trees.
        let mut tp = (BTreeMap::new(), 0u64);
        let mut tf = (BTreeMap::new(), 0u64);
        for (kind, api, _, tree) in &r.trees {
            match (kind, api) {
                (Kind::Request, Some(0)) => naive_batches(tree, &mut tp),
                (Kind::Response, Some(1)) => naive_batches(tree, &mut tf),
                _ => {}
            }
        }
        assert_eq!(produce, tp, "{name}: produce batches vs trees");
        assert_eq!(fetch, tf, "{name}: fetch batches vs trees");

        // Route 2: the Python reader, when its summary is of this very file.
        let summary =
            fs::read_to_string(format!("{}.summary.txt", path.display())).unwrap_or_default();
        let packets = summary
            .lines()
            .find_map(|l| l.strip_prefix("Number of packets:"))
            .and_then(|n| n.trim().parse::<u64>().ok());
        if packets != Some(r.frames) {
            eprintln!("{name}: summary missing or of another recording; skipped");
            continue;
        }
        for (prefix, got) in [
            ("record batches in Produce requests", &produce),
            ("record batches in Fetch responses", &fetch),
        ] {
            if let Some(line) = summary.lines().find(|l| l.starts_with(prefix)) {
                assert_eq!(*got, parse_batches(line), "{name}: {prefix}");
            }
        }
        compared_with_summary += 1;
    }
    assert!(
        compared_with_summary >= 6,
        "compared {compared_with_summary} captures with their summaries"
    );
}

fn find<'a>(r: &'a StatsReport, error: &str, api: &str) -> Vec<&'a kafkashark::stats::ErrorReport> {
    r.errors
        .iter()
        .filter(|e| e.error == error && e.api_name == Some(api))
        .collect()
}

fn capture(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    p.exists().then_some(p)
}

#[test]
fn error_places_by_hand_known_facts() {
    // a1: kcat's first JoinGroup of each run is answered MEMBER_ID_REQUIRED (KIP-394),
    // a group-level error: no topic, no partition.
    let a1 = run(
        &capture("a1-kcat-produce-consume-group.pcap").expect("a1"),
        20,
    )
    .report;
    let e = find(&a1, "MEMBER_ID_REQUIRED", "JoinGroup");
    assert_eq!(e.len(), 1);
    assert_eq!(
        (e[0].count, e[0].topic.as_deref(), e[0].partition),
        (2, None, None)
    );

    // a3: kafka-python creates admin-audit twice.
    let a3 = run(&capture("a3-kafka-python-admin.pcap").expect("a3"), 20).report;
    let e = find(&a3, "TOPIC_ALREADY_EXISTS", "CreateTopics");
    assert_eq!(e.len(), 1);
    assert_eq!(
        (e[0].topic.as_deref(), e[0].partition),
        (Some("admin-audit"), None)
    );

    // b2 (errors-acks0.py).
    let b2 = run(&capture("b2-errors-and-acks0.pcap").expect("b2"), 20).report;
    let one = |error: &str, api: &str| {
        let e = find(&b2, error, api);
        assert_eq!(e.len(), 1, "{error} in {api}: {e:?}");
        (e[0].topic.clone(), e[0].partition, e[0].count)
    };
    assert_eq!(
        one("TOPIC_ALREADY_EXISTS", "CreateTopics"),
        (Some("err-topic".into()), None, 1)
    );
    assert_eq!(
        one("UNKNOWN_TOPIC_OR_PARTITION", "Metadata"),
        (Some("no-such-topic".into()), None, 1)
    );
    assert_eq!(
        one("UNKNOWN_TOPIC_OR_PARTITION", "DeleteTopics"),
        (Some("no-such-topic".into()), None, 1)
    );
    // Fetch by a made-up topic id; the broker answers with a zero id, so the
    // place comes from the request, which named only that id.
    assert_eq!(
        one("UNKNOWN_TOPIC_OR_PARTITION", "Fetch"),
        (
            Some("0badc0de-0000-4000-8000-00000000dead".into()),
            Some(0),
            1
        )
    );
    for api in ["Heartbeat", "SyncGroup", "LeaveGroup"] {
        assert_eq!(one("UNKNOWN_MEMBER_ID", api), (None, None, 1), "{api}");
    }
    let ghost = b2
        .groups
        .iter()
        .find(|g| g.group_id == "ghost-group")
        .expect("ghost-group");
    assert_eq!(ghost.errors.get("UNKNOWN_MEMBER_ID"), Some(&3));
    // acks=0: librdkafka and kafka-python producers (10 requests each at least).
    let acks0 = b2.acks.iter().find(|a| a.acks == 0).expect("acks=0 seen");
    assert!(acks0.requests >= 20, "{acks0:?}");
    assert!(b2.hints.iter().any(|h| h.kind == "acks_0"));
    for g in ["err-group", "err-group-rdk"] {
        let g = b2.groups.iter().find(|x| x.group_id == g).expect(g);
        assert_eq!(
            g.errors.get("MEMBER_ID_REQUIRED"),
            Some(&1),
            "{}",
            g.group_id
        );
        assert!(!g.generations.is_empty(), "{}", g.group_id);
    }
}

/// Every (group, GenerationId) of a successful JoinGroup response, naively from the trees.
#[test]
fn group_generations_match_the_join_responses() {
    let caps = captures();
    assert!(caps.len() >= 6, "the shipped captures: {caps:?}");
    let mut generations = 0;
    for path in caps {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let r = run(&path, 20);
        let mut naive: BTreeSet<i64> = BTreeSet::new();
        for (kind, api, _, tree) in &r.trees {
            if *kind != Kind::Response || *api != Some(11) {
                continue;
            }
            let body = tree["children"]
                .as_array()
                .and_then(|c| c.iter().find(|n| n["type"] == "struct"))
                .cloned()
                .unwrap_or(J::Null);
            let field = |n: &str| {
                body["children"]
                    .as_array()
                    .and_then(|c| c.iter().find(|k| k["name"] == n))
                    .and_then(|k| k["value"].as_i64())
            };
            if field("ErrorCode") == Some(0) {
                naive.insert(field("GenerationId").expect("GenerationId"));
            }
        }
        let got: BTreeSet<i64> = r
            .report
            .groups
            .iter()
            .flat_map(|g| g.generations.iter().map(|e| i64::from(e.generation_id)))
            .collect();
        assert_eq!(got, naive, "{name}: generations");
        generations += got.len();
        for g in &r.report.groups {
            for e in &g.generations {
                if let Some(ms) = e.rebalance_ms {
                    assert!(
                        ms >= 0.0 && !e.sync_response_frames.is_empty(),
                        "{name}: {e:?}"
                    );
                }
            }
        }
    }
    // a1, b1 and b4 hold consumer groups.
    assert!(generations > 0, "no JoinGroup generation in any capture");
}

#[test]
fn json_has_the_design_contract_keys() {
    let r = run(
        &capture("a1-kcat-produce-consume-group.pcap").expect("a1"),
        20,
    )
    .report;
    let j = serde_json::to_value(&r).expect("serialize");
    for k in [
        "apis", "clients", "groups", "topics", "hints", "slow", "throttle", "errors",
    ] {
        assert!(j.get(k).is_some(), "missing {k}");
    }
    let api = &j["apis"][0];
    for k in [
        "api_key",
        "api_name",
        "requests",
        "responses",
        "unpaired",
        "latency_ms",
        "throttled",
        "throttle_time_ms",
        "errors",
    ] {
        assert!(api.get(k).is_some(), "apis[0] lacks {k}");
    }
    for k in ["p50", "p90", "p99", "max"] {
        assert!(api["latency_ms"].get(k).is_some(), "latency_ms lacks {k}");
    }
    for k in ["max", "sum"] {
        assert!(
            api["throttle_time_ms"].get(k).is_some(),
            "throttle_time_ms lacks {k}"
        );
    }
}

/// Every connection's Community ID is the one tshark computes for the same
/// endpoints (its `communityid` protocol, enabled), IPv4 and IPv6 alike.
/// Skips when tshark is missing or has no Community ID.
#[test]
fn connections_carry_the_community_id_tshark_computes() {
    use std::net::SocketAddr;
    let mut checked = 0;
    for cap in captures() {
        let out = std::process::Command::new("tshark")
            .args(["--enable-protocol", "communityid", "-n", "-r"])
            .arg(&cap)
            .args([
                "-T",
                "fields",
                "-e",
                "ip.src",
                "-e",
                "ipv6.src",
                "-e",
                "tcp.srcport",
            ])
            .args(["-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport"])
            .args(["-e", "communityid"])
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            eprintln!("no tshark: skipped");
            return;
        };
        let pair = |a: SocketAddr, b: SocketAddr| if a <= b { (a, b) } else { (b, a) };
        let mut ids = BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let [ip4s, ip6s, sp, ip4d, ip6d, dp, id] = f[..] else {
                continue;
            };
            let addr = |v4: &str, v6: &str, p: &str| -> Option<SocketAddr> {
                let ip: std::net::IpAddr = if v4.is_empty() {
                    v6.parse().ok()?
                } else {
                    v4.parse().ok()?
                };
                Some(SocketAddr::new(ip, p.parse().ok()?))
            };
            if let (Some(s), Some(d), false) =
                (addr(ip4s, ip6s, sp), addr(ip4d, ip6d, dp), id.is_empty())
            {
                ids.insert(pair(s, d), id.to_string());
            }
        }
        if ids.is_empty() {
            eprintln!("this tshark computes no Community ID: skipped");
            return;
        }
        let r = run(&cap, 0);
        for c in &r.report.connections {
            let key = pair(c.client.parse().unwrap(), c.broker.parse().unwrap());
            let want = ids
                .get(&key)
                .unwrap_or_else(|| panic!("{}: {key:?}", cap.display()));
            assert_eq!(
                &c.community_id,
                want,
                "{}: stream {}",
                cap.display(),
                c.stream
            );
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked}");
}
