//! What the command-line tests share: the binary, its output read, and the
//! shipped captures.

// Each test crate that includes this module uses some of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The `kafkashark` binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

/// The shipped captures of `captures/` (not the TLS ones, which need
/// keys), sorted.
pub fn shipped() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

/// The two capture points of one run (`captures/two-points`: the client
/// side, then the broker side), when present.
pub fn two_points() -> Option<[String; 2]> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/two-points");
    let p = ["e1-client-side.pcap", "e1-broker-side.pcap"].map(|f| dir.join(f));
    p.iter()
        .all(|p| p.exists())
        .then(|| p.map(|p| p.to_string_lossy().into_owned()))
}

/// The public captures of `../shared/captures/public` (pcap and pcapng),
/// sorted; `None`, said on standard error, where they are not present.
pub fn public_captures() -> Option<Vec<String>> {
    let public = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/captures/public");
    let Ok(dir) = std::fs::read_dir(&public) else {
        eprintln!("skipped: {} not present", public.display());
        return None;
    };
    let mut pcaps: Vec<String> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    pcaps.sort();
    Some(pcaps)
}

/// The binary's standard output for `args`, which must succeed.
pub fn run(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The binary's JSONL output for `args`, a value a line.
pub fn jsonl(args: &[&str]) -> Vec<serde_json::Value> {
    run(args)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// A message's identity in two readings of one run (JSONL): connection,
/// side, correlation id.
pub fn message_key(v: &serde_json::Value) -> (String, String, Option<i64>) {
    (
        v["client"].as_str().unwrap_or("").to_string(),
        v["kind"].as_str().unwrap_or("").to_string(),
        v["correlation_id"].as_i64(),
    )
}
