//! Capture files for unit tests (`cfg(test)` only).

use std::path::{Path, PathBuf};

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
