//! What the tests that check kafkashark against `captures/wire_facts.py`
//! share: where a capture and its `FILE.wire.tsv` are, the rows, exact
//! microsecond times, and the analyzer's outputs of a capture.

use std::fs;
use std::path::{Path, PathBuf};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
use kafkashark::capture::{FileSource, FrameSource, Polled};

/// `captures/NAME` and its `NAME.wire.tsv`, when both are there.
pub fn paths(name: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let (cap, wire) = (dir.join(name), dir.join(format!("{name}.wire.tsv")));
    (cap.is_file() && wire.is_file()).then_some((cap, wire))
}

/// The text of a `wire.tsv` (its rows: [`rows`]).
pub fn read(wire: &Path) -> String {
    fs::read_to_string(wire).expect("wire.tsv")
}

/// The tab-separated rows of a `wire.tsv` text.
pub fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines().map(|l| l.split('\t').collect()).collect()
}

/// `seconds.micros` as microseconds, exactly.
pub fn micros(s: &str) -> i64 {
    let (secs, frac) = s.split_once('.').expect("seconds.micros");
    assert_eq!(frac.len(), 6, "{s}");
    secs.parse::<i64>().unwrap() * 1_000_000 + frac.parse::<i64>().unwrap()
}

/// Every output of the analyzer with `cfg` on capture `cap`, in order.
pub fn outputs(cap: &Path, cfg: AnalyzerConfig) -> Vec<Output> {
    let mut src = FileSource::open(cap.to_str().unwrap()).expect("open capture");
    let mut a = Analyzer::new(cfg);
    let mut out = Vec::new();
    loop {
        match src.poll() {
            Ok(Polled::Frame(f)) => a.push(&f, &mut out),
            Ok(Polled::Timeout) => continue,
            Ok(Polled::End) | Err(_) => break,
        }
    }
    a.finish(&mut out);
    out
}
