//! One run captured at two points (`captures/two-points`): `print` and
//! `stats` report each message once, with the other point's frame, time and
//! latency, and the clock offset between the two files.

mod common;

use common::{jsonl, message_key as key, run, two_points as points};

/// JSONL: the messages of the client side alone, each once; those the
/// broker side saw carry `also` naming it, with a frame of the merged
/// numbering and, on responses whose request it saw, its latency, which
/// equals the broker side's own reading of the exchange.
#[test]
fn print_reports_each_message_once_with_the_other_points_view() {
    let Some([client, broker]) = points() else {
        return;
    };
    let alone = jsonl(&["print", &client, "--format", "jsonl"]);
    let theirs = jsonl(&["print", &broker, "--format", "jsonl"]);
    let both = jsonl(&["print", &client, &broker, "--format", "jsonl"]);
    let mut want: Vec<_> = alone.iter().map(key).collect();
    let mut got: Vec<_> = both.iter().map(key).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    let broker_latency: std::collections::HashMap<_, _> = (theirs.iter())
        .filter(|v| v["latency_ms"].is_f64())
        .map(|v| (key(v), v["latency_ms"].as_f64()))
        .collect();
    let (mut seen, mut timed) = (0, 0);
    for v in &both {
        assert_eq!(v["capture"].as_str(), Some(client.as_str()));
        let Some(a) = v.get("also") else { continue };
        seen += 1;
        assert_eq!(a["capture"].as_str(), Some(broker.as_str()));
        assert!(a["frame"].as_u64().is_some_and(|f| f >= 1));
        if let Some(l) = a.get("latency_ms").and_then(|l| l.as_f64()) {
            timed += 1;
            assert_eq!(Some(Some(l)), broker_latency.get(&key(v)).copied(), "{v}");
        }
    }
    assert!(
        seen > 150 && timed > 50,
        "{seen} seen at both, {timed} timed"
    );
    let text = run(&["print", &client, &broker]);
    assert_eq!(text.lines().count(), alone.len());
    assert_eq!(
        text.lines().filter(|l| l.contains(" also_frame=")).count(),
        seen
    );
}

/// `stats`: the offset `editcap -t 2.75` put on the broker side, found from
/// the packets in common, and the messages counted once.
#[test]
fn stats_reports_the_clock_offset_and_counts_once() {
    let Some([client, broker]) = points() else {
        return;
    };
    let one = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&run(args)).expect("JSON report")
    };
    let alone = one(&["stats", &client, "--format", "json"]);
    let both = one(&["stats", &client, &broker, "--format", "json"]);
    assert_eq!(both["summary"]["messages"], alone["summary"]["messages"]);
    let p = &both["capture_points"];
    let c = &p["clocks"][0];
    assert_eq!(c["capture"].as_str(), Some(broker.as_str()));
    let offset = c["offset_s"].as_f64().expect("offset");
    assert!((offset - 2.75).abs() < 20e-6, "{offset}");
    assert!(c["packets"].as_u64().is_some_and(|n| n > 100));
    assert!(p["messages"].as_u64().is_some_and(|n| n > 150));
    let text = run(&["stats", &client, &broker]);
    assert!(text.contains("CAPTURE POINTS"), "{text}");
    assert!(text.contains("+2.7499"), "{text}");
    assert!(alone.get("capture_points").is_none());
}

/// The display filter's `also` chooses the messages the other point saw:
/// the broker side's own reading of them, every one (the first message of
/// a connection the broker side joined mid-stream too, framed there only
/// once the next one confirmed it: docs/streams.md, "One connection at two
/// capture points"); and `also_latency` compares the latency there: the
/// responses it keeps are those whose latency, read from the broker side
/// alone, is over the threshold (the broker side's median, so both sides
/// of it are tested).
#[test]
fn filter_chooses_by_the_other_point() {
    let Some([client, broker]) = points() else {
        return;
    };
    let keys = |vs: &[serde_json::Value]| {
        let mut k: Vec<_> = vs.iter().map(key).collect();
        k.sort();
        k
    };
    let theirs = jsonl(&["print", &broker, "--format", "jsonl"]);
    let also = jsonl(&["print", &client, &broker, "-Y", "also", "--format", "jsonl"]);
    assert!(also.len() > 150, "{}", also.len());
    assert_eq!(keys(&also), keys(&theirs));
    let mut latencies: Vec<f64> = (theirs.iter())
        .filter_map(|v| v["latency_ms"].as_f64())
        .collect();
    latencies.sort_by(f64::total_cmp);
    let median = latencies[latencies.len() / 2];
    let threshold_us = (median * 1000.0).round() as u64;
    let over: Vec<_> = (theirs.iter())
        .filter(|v| {
            v["latency_ms"]
                .as_f64()
                .is_some_and(|l| (l * 1e6).round() as u64 > threshold_us * 1000)
        })
        .cloned()
        .collect();
    let expr = format!("response and also_latency>{threshold_us}us");
    let chosen = jsonl(&["print", &client, &broker, "-Y", &expr, "--format", "jsonl"]);
    assert!(
        !chosen.is_empty() && chosen.len() < latencies.len(),
        "{expr}"
    );
    assert_eq!(keys(&chosen), keys(&over), "{expr}");
}
