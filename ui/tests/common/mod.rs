//! What the command-line tests share: the binary, and the shipped captures.

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
