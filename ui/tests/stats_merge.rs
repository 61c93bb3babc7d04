//! `stats --merge`: reports of the shipped captures, made apart and added
//! up, give what one `stats` of all the captures read together gives —
//! counts, errors, record sets and every latency figure (percentiles from
//! the merged histogram buckets, exact to the bit) — and merges merge
//! again; a file that is not a report, or whose histograms do not hold
//! together, is named with why.

use std::path::PathBuf;

mod common;
use common::{bin, shipped};

use serde_json::Value;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("kafkashark-merge-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `stats --format json` of `files`, as text.
fn stats(files: &[String]) -> String {
    let out = bin()
        .args(["stats", "--format", "json"])
        .args(files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `stats --merge` of `reports`, its JSON parsed (or the failure).
fn merge(reports: &[PathBuf]) -> Result<Value, String> {
    let out = bin()
        .args(["stats", "--merge", "--format", "json"])
        .args(reports)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

/// The fields of `v` named `keys`.
fn pick(v: &Value, keys: &[&str]) -> Value {
    let mut m = serde_json::Map::new();
    for k in keys {
        m.insert(k.to_string(), v[*k].clone());
    }
    Value::Object(m)
}

const TIMING: [&str; 4] = ["latency_ms", "service_ms", "hol_waits", "long_polls"];

#[test]
fn merged_reports_equal_one_report_of_every_capture() {
    let files = shipped();
    let d = dir();
    // Three reports of the captures in turn, as three hosts would make them.
    let mut reports = Vec::new();
    for k in 0..3 {
        let part: Vec<String> = files.iter().skip(k).step_by(3).cloned().collect();
        let p = d.join(format!("host-{k}.json"));
        std::fs::write(&p, stats(&part)).unwrap();
        reports.push(p);
    }
    let merged = merge(&reports).unwrap();
    let all: Value = serde_json::from_str(&stats(&files)).unwrap();
    assert_eq!(merged["reports"], 3);
    let summary = [
        "messages",
        "requests",
        "responses",
        "unanswered",
        "first_ts",
        "last_ts",
    ];
    assert_eq!(
        pick(&merged["summary"], &summary),
        pick(&all["summary"], &summary)
    );
    let api_keys = [
        &[
            "api_key",
            "api_name",
            "requests",
            "responses",
            "unanswered",
            "responses_without_request",
            "throttled",
            "errors",
        ][..],
        &TIMING[..],
    ]
    .concat();
    let apis = all["apis"].as_array().unwrap();
    assert_eq!(merged["apis"].as_array().unwrap().len(), apis.len());
    let mut timed = 0;
    for (m, a) in merged["apis"].as_array().unwrap().iter().zip(apis) {
        // Every latency figure, percentiles and mean included, to the bit.
        assert_eq!(pick(m, &api_keys), pick(a, &api_keys), "{}", a["api_name"]);
        timed += usize::from(!a["latency_ms"].is_null());
        let versions: Vec<Value> = (a["versions"].as_array().unwrap().iter())
            .map(|v| pick(v, &["version", "requests", "responses"]))
            .collect();
        assert_eq!(m["versions"], Value::Array(versions));
    }
    assert!(timed >= 15, "{timed}");
    let broker_keys = [&["broker", "requests", "responses"][..], &TIMING[..]].concat();
    let mut brokers: Vec<Value> = (all["brokers"].as_array().unwrap().iter())
        .map(|b| pick(b, &broker_keys))
        .collect();
    brokers.sort_by_key(|b| b["broker"].to_string());
    let mine: Vec<Value> = (merged["brokers"].as_array().unwrap().iter())
        .map(|b| pick(b, &broker_keys))
        .collect();
    assert_eq!(mine, brokers);
    let sides = [
        "record_sets",
        "bytes",
        "batches",
        "records",
        "compressed_bytes",
        "decompressed_bytes",
    ];
    let topics: Vec<Value> = (all["topics"].as_array().unwrap().iter())
        .map(|t| {
            serde_json::json!({
                "topic": t["topic"], "partition": t["partition"],
                "produce": pick(&t["produce"], &sides), "fetch": pick(&t["fetch"], &sides),
            })
        })
        .collect();
    assert!(topics.len() >= 20);
    assert_eq!(merged["topics"], Value::Array(topics));
    // A merge merges again: (0 + 1) + 2 is 0 + 1 + 2.
    let first = d.join("first.json");
    let two = merge(&reports[..2]).unwrap();
    std::fs::write(&first, two.to_string()).unwrap();
    let again = merge(&[first, reports[2].clone()]).unwrap();
    assert_eq!(again, merged);
    // A report on standard input (`-`) merges as its file does.
    let mut child = bin()
        .args(["stats", "--merge", "--format", "json", "-"])
        .args(&reports[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let report0 = std::fs::read(&reports[0]).unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &report0).unwrap();
    let piped = child.wait_with_output().unwrap();
    assert!(piped.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&piped.stdout).unwrap(),
        merged
    );
    // The text report has a line per api.
    let text = bin()
        .args(["stats", "--merge"])
        .args(&reports)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("kafkashark stats — 3 reports merged"),
        "{text}"
    );
    assert!(
        text.contains("\nAPIS\n  api ") && text.contains("\n  Produce "),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_file_that_cannot_be_merged_is_named_with_why() {
    let d = dir().join("bad");
    std::fs::create_dir_all(&d).unwrap();
    let files = shipped();
    let good = d.join("good.json");
    let report = stats(&files[..1]);
    std::fs::write(&good, &report).unwrap();
    // Not a report at all.
    let capture = PathBuf::from(&files[0]);
    let e = merge(&[good.clone(), capture.clone()]).unwrap_err();
    assert!(
        e.contains(&files[0]) && e.contains("not a `stats --format json` report"),
        "{e}"
    );
    // A histogram whose buckets do not sum to its count.
    let mut v: Value = serde_json::from_str(&report).unwrap();
    let count = &mut v["merge"]["apis"][0]["timing"]["latency"]["count"];
    *count = Value::from(count.as_u64().unwrap() + 1);
    let bad = d.join("bad.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = merge(&[good.clone(), bad.clone()]).unwrap_err();
    assert!(e.contains("bad.json") && e.contains("count says"), "{e}");
    // Another version of the form.
    let mut v: Value = serde_json::from_str(&report).unwrap();
    v["merge"]["version"] = Value::from(99);
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = merge(&[bad]).unwrap_err();
    assert!(e.contains("merge version 99"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
