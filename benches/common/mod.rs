//! Shared setup of the criterion benches: captures from `captures/` (or the
//! file named by `KAFKASHARK_BENCH_PCAP`) read into memory once.

#![allow(dead_code)]

use kafkashark::capture::{FileSource, Frame, FrameSource, Polled};

/// The captures the benches run on: `KAFKASHARK_BENCH_PCAP` (a path) when set,
/// else the given names under `captures/`.
pub fn capture_paths(defaults: &[&str]) -> Vec<String> {
    if let Ok(p) = std::env::var("KAFKASHARK_BENCH_PCAP") {
        return vec![p];
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/captures/");
    defaults.iter().map(|n| format!("{dir}{n}")).collect()
}

/// A short name for a capture path, for benchmark ids.
pub fn short(path: &str) -> String {
    let f = path.rsplit('/').next().unwrap_or(path);
    f.split(['-', '.']).next().unwrap_or(f).to_string()
}

/// Every frame of a capture.
pub fn frames(path: &str) -> Vec<Frame> {
    let mut src = FileSource::open(path).expect("open capture");
    let mut out = Vec::new();
    while let Ok(Polled::Frame(f)) = src.poll() {
        out.push(f);
    }
    out
}

/// Captured bytes of the frames (the throughput unit of the pipeline benches).
pub fn frame_bytes(frames: &[Frame]) -> u64 {
    frames.iter().map(|f| f.data.len() as u64).sum()
}
