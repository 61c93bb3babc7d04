//! Capture files for unit tests (`cfg(test)` only).

use std::path::{Path, PathBuf};

use crate::analyzer::{Analyzer, AnalyzerConfig, MessageRecord, Output};
use crate::capture::{FileSource, FrameSource, Polled};
use crate::pipeline::PipelineConfig;

/// The `.pcap`/`.pcapng` files under `dir` (recursively), appended to `out`.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("pcap" | "pcapng")
        ) {
            out.push(p);
        }
    }
}

/// The captures shipped in `captures/`, sorted.
pub(crate) fn shipped() -> Vec<PathBuf> {
    let mut v = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("captures"),
        &mut v,
    );
    v.sort();
    v
}

/// `captures/` and, when present, `../shared/captures`, sorted.
pub(crate) fn all() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = Vec::new();
    walk(&root.join("captures"), &mut v);
    walk(&root.join("../shared/captures"), &mut v);
    v.sort();
    v
}

/// The reference decode: every port, full trees, record sets decoded in full.
pub(crate) fn full_trees() -> AnalyzerConfig {
    let mut cfg = AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(crate::flow::Ports::Any),
        keep_trees: true,
        ..AnalyzerConfig::default()
    };
    cfg.decode.records = true;
    cfg
}

/// Everything an analyzer with `cfg` outputs for the capture at `path`, in
/// order (nothing when the file does not open).
pub(crate) fn outputs(path: &Path, cfg: AnalyzerConfig) -> Vec<Output> {
    let Ok(mut src) = FileSource::open(path.to_str().unwrap_or("")) else {
        return Vec::new();
    };
    let mut a = Analyzer::new(cfg);
    let mut out = Vec::new();
    loop {
        match src.poll() {
            Ok(Polled::Frame(f)) => a.push(&f, &mut out),
            Ok(Polled::Timeout) => continue,
            _ => break,
        }
    }
    a.finish(&mut out);
    out
}

/// Every message of the capture at `path` through an analyzer with `cfg`
/// (none when the file does not open).
pub(crate) fn messages(path: &Path, cfg: AnalyzerConfig) -> Vec<MessageRecord> {
    outputs(path, cfg)
        .into_iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(*m),
            Output::Notice(_) => None,
        })
        .collect()
}
