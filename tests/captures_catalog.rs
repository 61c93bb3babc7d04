//! The captures folder is self-describing: `captures/README.md` has a line for every
//! capture file in `captures/`, every capture the README names exists, and every
//! capture's line names the script that recorded it, which is present in `captures/`
//! together with the helpers and workload files that script uses.
//!
//! Needs nothing outside this repository (no ../shared, no tshark, no broker).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

const CAPTURE_EXTS: &[&str] = &["pcap", "pcapng", "cap"];
const SCRIPT_EXTS: &[&str] = &["sh", "py", "js"];

fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("captures")
}

fn readme() -> String {
    let p = captures_dir().join("README.md");
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn ext_of(name: &str) -> Option<&str> {
    Path::new(name).extension().and_then(|e| e.to_str())
}

fn is_capture_name(name: &str) -> bool {
    ext_of(name).is_some_and(|e| CAPTURE_EXTS.contains(&e))
}

fn is_script_name(name: &str) -> bool {
    ext_of(name).is_some_and(|e| SCRIPT_EXTS.contains(&e))
}

/// Capture files under `dir`, as paths relative to `captures/` with `/` separators.
fn capture_files(root: &Path, dir: &Path, out: &mut BTreeSet<String>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            capture_files(root, &path, out);
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_capture_name)
        {
            let rel = path.strip_prefix(root).unwrap();
            let rel: Vec<_> = rel
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            out.insert(rel.join("/"));
        }
    }
}

/// File-name-like tokens of a line: runs of `[A-Za-z0-9._/+-]`, with sentence punctuation
/// trimmed from the ends. Markdown backticks, pipes, brackets and spaces separate tokens.
fn tokens(line: &str) -> Vec<&str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || "._/+-".contains(c)))
        .map(|t| t.trim_matches(|c| c == '.' || c == '-' || c == '/'))
        .filter(|t| !t.is_empty())
        .collect()
}

/// Every capture-file name in the README, with the line it is on.
fn named_captures(readme: &str) -> Vec<(String, &str)> {
    let mut v = Vec::new();
    for line in readme.lines() {
        for t in tokens(line) {
            if is_capture_name(t) {
                v.push((t.trim_start_matches("captures/").to_string(), line));
            }
        }
    }
    v
}

/// The README lines that describe `capture`: those where it is the first capture named.
fn catalog_lines<'a>(readme: &'a str, capture: &str) -> Vec<&'a str> {
    readme
        .lines()
        .filter(|line| {
            tokens(line)
                .into_iter()
                .find(|t| is_capture_name(t))
                .is_some_and(|t| t.trim_start_matches("captures/") == capture)
        })
        .collect()
}

/// Files in `captures/` a recording script depends on: `source .../NAME` and `$HERE/NAME`
/// (the folder the scripts live in, as reclib.sh defines it).
fn script_dependencies(script: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    for line in script.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        for marker in ["$HERE/", "\"$(dirname \"$0\")/", "$(dirname \"$0\")/"] {
            let mut rest = line;
            while let Some(i) = rest.find(marker) {
                rest = &rest[i + marker.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
                    .collect();
                if is_script_name(&name) {
                    deps.insert(name);
                }
            }
        }
    }
    deps
}

#[test]
fn readme_lists_every_capture_file() {
    let dir = captures_dir();
    let mut files = BTreeSet::new();
    capture_files(&dir, &dir, &mut files);
    assert!(!files.is_empty(), "no capture files in {}", dir.display());
    let listed: BTreeSet<String> = named_captures(&readme())
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let missing: Vec<_> = files.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "captures/README.md does not list these capture files: {missing:?}"
    );
}

#[test]
fn every_listed_capture_exists() {
    let dir = captures_dir();
    let absent: BTreeSet<String> = named_captures(&readme())
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| !dir.join(n).is_file())
        .collect();
    assert!(
        absent.is_empty(),
        "captures/README.md names capture files that are not in captures/: {absent:?}"
    );
}

#[test]
fn every_capture_names_its_recording_script_and_the_script_is_present() {
    let dir = captures_dir();
    let readme = readme();
    let mut files = BTreeSet::new();
    capture_files(&dir, &dir, &mut files);
    let mut problems = Vec::new();
    for capture in &files {
        let lines = catalog_lines(&readme, capture);
        if lines.is_empty() {
            problems.push(format!(
                "{capture}: no README line describes it (names it first)"
            ));
            continue;
        }
        // Recording scripts are the shell scripts named on the capture's line.
        let scripts: BTreeSet<&str> = lines
            .iter()
            .flat_map(|l| tokens(l))
            .filter(|t| t.ends_with(".sh"))
            .collect();
        if scripts.is_empty() {
            problems.push(format!(
                "{capture}: its README line names no recording script (*.sh)"
            ));
            continue;
        }
        let base = Path::new(capture).file_name().unwrap().to_str().unwrap();
        let mut recorders = Vec::new();
        for s in scripts {
            match fs::read_to_string(dir.join(s)) {
                Err(_) => problems.push(format!(
                    "{capture}: README names {s}, which is not in captures/"
                )),
                Ok(text) if text.contains(base) => recorders.push((s, text)),
                Ok(_) => {} // a helper such as reclib.sh, named for context
            }
        }
        if recorders.is_empty() {
            problems.push(format!(
                "{capture}: none of the scripts its README line names writes {base}"
            ));
        }
        for (s, text) in recorders {
            for dep in script_dependencies(&text) {
                if !dir.join(&dep).is_file() {
                    problems.push(format!(
                        "{capture}: {s} uses {dep}, which is not in captures/"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "capture catalog problems:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_script_in_captures_is_described() {
    // Scripts kept in captures/ are there to re-record or read captures; the README says what
    // each one is for, so an orphaned script is as much a catalog gap as an unlisted capture.
    let dir = captures_dir();
    let readme = readme();
    let named: BTreeSet<&str> = readme.lines().flat_map(tokens).collect();
    let mut orphans = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if is_script_name(&name) && !named.contains(name.as_str()) {
            orphans.push(name);
        }
    }
    orphans.sort();
    assert!(
        orphans.is_empty(),
        "captures/README.md does not mention these scripts: {orphans:?}"
    );
}

#[test]
fn tokenizer_and_dependency_scan() {
    assert_eq!(
        tokens("| `a1-x.pcap` | kcat 1.7.1, port 9092 | `record-a1-kcat.sh` → `codecs.py`. |"),
        [
            "a1-x.pcap",
            "kcat",
            "1.7.1",
            "port",
            "9092",
            "record-a1-kcat.sh",
            "codecs.py"
        ]
    );
    let deps = script_dependencies(
        "#!/bin/sh\n# $HERE/ignored.py\nsource \"$(dirname \"$0\")/reclib.sh\"\n\
         timeout 9 python3 \"$HERE/multiseg.py\" x\nnode \"$HERE/w.js\" && cat \"$HERE/a.txt\"\n",
    );
    assert_eq!(
        deps.into_iter().collect::<Vec<_>>(),
        ["multiseg.py", "reclib.sh", "w.js"]
    );
}
