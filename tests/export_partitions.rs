//! The `partitions` table of `kafkashark export` against the independent
//! reading of `captures/wire_facts.py` (its own reassembly and hand-written
//! Fetch, OffsetCommit and Produce readers): every partition a Fetch
//! request asks for, a Fetch response answers, an OffsetCommit commits and
//! a Produce request writes has its row, with the same offsets, error,
//! batches, records and newest batch time.

// Not every helper of the shared module is used here.
#[allow(dead_code)]
mod wire;

use std::collections::HashMap;

use kafkashark::analyzer::{AnalyzerConfig, Output};
use kafkashark::export::{TableRows, PARTITIONS};
use kafkashark::stats::Stats;
use serde_json::Value;

/// Every row `TableRows` writes for the capture, parsed.
fn table_rows(cap: &std::path::Path) -> Vec<Value> {
    let mut cfg = Stats::analyzer_config(AnalyzerConfig::default());
    cfg.info_topics = true;
    cfg.response_topics = true;
    let mut rows = TableRows::new();
    let mut out = Vec::new();
    for o in wire::outputs(cap, cfg) {
        if let Output::Message(m) = o {
            rows.message(&mut out, &m, &["cap".to_string()]);
        }
    }
    let text = String::from_utf8(out).expect("UTF-8 rows");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect()
}

/// What identifies a partition's row across the two readings: client
/// address, correlation id, kind, topic, partition.
type Key = (String, i64, &'static str, String, i64);

fn check(name: &str, min_fetches: usize) {
    let Some((cap, wire_path)) = wire::paths(name) else {
        eprintln!("skipping {name}: capture or its wire.tsv missing");
        return;
    };
    let text = wire::read(&wire_path);
    let facts = wire::rows(&text);
    let mut client_of = HashMap::new();
    let mut topic_of = HashMap::new();
    for r in &facts {
        match r[0] {
            "conn" => drop(client_of.insert(r[1], r[2].to_string())),
            "topic" => drop(topic_of.insert(r[1], r[2].to_string())),
            _ => {}
        }
    }
    let rows = table_rows(&cap);
    // Streams to clients, from the messages table.
    let mut stream_client = HashMap::new();
    for r in rows.iter().filter(|r| r["table"] == "messages") {
        stream_client.insert(r["stream"].as_i64().unwrap(), r["client"].to_string());
    }
    let mut ours: HashMap<Key, &Value> = HashMap::new();
    for r in rows.iter().filter(|r| r["table"] == "partitions") {
        let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        let mut want: Vec<&str> = PARTITIONS.iter().map(|c| c.name).collect();
        want.extend(["table", "date", "api"]);
        assert_eq!(keys.len(), want.len(), "{r}");
        let kind = if r["kind"] == "request" {
            "request"
        } else {
            "response"
        };
        let key = (
            stream_client[&r["stream"].as_i64().unwrap()].clone(),
            r["correlation_id"].as_i64().unwrap(),
            kind,
            r["topic"].as_str().unwrap_or("").to_string(),
            r["partition"].as_i64().unwrap(),
        );
        assert!(ours.insert(key, r).is_none(), "a partition twice: {r}");
    }
    let int = |s: &str| s.parse::<i64>().unwrap();
    let opt = |s: &str| match int(s) {
        -1 => Value::Null,
        n => Value::from(n),
    };
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut produced: HashMap<Key, (i64, i64)> = HashMap::new();
    for r in &facts {
        let row = |corr: &str, kind: &'static str, topic: &str, partition: &str| {
            let topic = topic_of.get(topic).cloned().unwrap_or(topic.to_string());
            let key = (
                format!("\"{}\"", client_of[r[1]]),
                int(corr),
                kind,
                topic,
                int(partition),
            );
            *ours
                .get(&key)
                .unwrap_or_else(|| panic!("{name}: no row for {key:?}"))
        };
        match r[0] {
            "fetchreq" => {
                let p = row(r[2], "request", r[5], r[6]);
                assert_eq!(p["api_name"], "Fetch");
                assert_eq!(p["fetch_offset"], int(r[7]), "{r:?}");
            }
            "fetchrsp" => {
                let p = row(r[2], "response", r[3], r[4]);
                assert_eq!(p["error_code"], int(r[5]), "{r:?}");
                assert_eq!(p["high_watermark"], int(r[6]), "{r:?}");
                assert_eq!(p["last_stable_offset"], int(r[7]), "{r:?}");
                assert_eq!(p["log_start_offset"], int(r[8]), "{r:?}");
                assert_eq!(p["batches"], int(r[9]), "{r:?}");
                assert_eq!(p["records"], int(r[10]), "{r:?}");
                assert_eq!(p["last_offset"], opt(r[11]), "{r:?}");
                // The newest batch time, in milliseconds since the epoch.
                let ms = int(r[12]);
                let want = (ms >= 0)
                    .then(|| Value::from(kafkashark::kafka::records::iso8601_ms(ms).unwrap()));
                assert_eq!(p["max_timestamp"], want.unwrap_or(Value::Null), "{r:?}");
            }
            "commit" => {
                let p = row(r[2], "request", r[4], r[5]);
                assert_eq!(p["api_name"], "OffsetCommit");
                assert_eq!(p["committed_offset"], int(r[6]), "{r:?}");
            }
            "produce" => {
                // One line a batch: summed per partition.
                let p = row(r[2], "request", r[4], r[5]);
                let key = (
                    format!("\"{}\"", client_of[r[1]]),
                    int(r[2]),
                    "request",
                    p["topic"].as_str().unwrap().to_string(),
                    int(r[5]),
                );
                let e = produced.entry(key).or_default();
                e.0 += 1;
                e.1 += int(r[10]);
            }
            _ => continue,
        }
        *seen.entry(r[0]).or_default() += 1;
    }
    for (key, (batches, records)) in &produced {
        let p = ours[key];
        assert_eq!(p["api_name"], "Produce");
        assert_eq!(p["batches"], *batches, "{key:?}");
        assert_eq!(p["records"], *records, "{key:?}");
    }
    assert!(
        seen.get("fetchrsp").copied().unwrap_or(0) >= min_fetches,
        "{seen:?}"
    );
    // Every Fetch response partition the reader found, and no more.
    let fetched = ours
        .values()
        .filter(|p| p["api_name"] == "Fetch" && p["kind"] == "response")
        .filter(|p| !p["high_watermark"].is_null())
        .count();
    assert_eq!(fetched, seen["fetchrsp"], "{name}");
}

#[test]
fn partitions_of_a_lagging_consumer_match_the_independent_reading() {
    check("b6-consumer-lag.pcap", 300);
}

#[test]
fn partitions_of_kcats_group_match_the_independent_reading() {
    check("a1-kcat-produce-consume-group.pcap", 10);
}
