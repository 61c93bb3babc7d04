//! `print` of capture files decodes summaries in shards of the connections
//! (`--threads`: one shard run on the routing thread, or shard threads):
//! its output must be the one a single analyzer on one thread makes, frame
//! by frame. The reference is `print --duration`, which reads a file frame
//! by frame through one `Analyzer` on the calling thread.

mod common;

use common::{bin, public_captures, shipped, two_points};

/// Standard output and standard error of `print ARGS`.
fn print(args: &[&str]) -> (Vec<u8>, String) {
    let out = bin().arg("print").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.stdout, String::from_utf8(out.stderr).unwrap())
}

/// Asserts that `print ARGS` gives the one-thread output with 1, 2, 3 and
/// 7 shards and the default.
fn same_with_any_threads(args: &[&str]) {
    let mut one = args.to_vec();
    one.extend(["--duration", "86400"]);
    let (reference, said) = print(&one);
    for t in ["1", "2", "3", "7", ""] {
        let mut many = args.to_vec();
        if !t.is_empty() {
            many.extend(["--threads", t]);
        }
        let (out, told) = print(&many);
        assert!(out == reference, "{args:?} --threads {t}: outputs differ");
        assert_eq!(told, said, "{args:?} --threads {t}");
    }
}

/// Every shipped capture alone in JSONL; all of them together in text,
/// with a display filter and a count (the count is checked at frame
/// boundaries: the frames must come out of the shards whole); the two
/// capture points of one run in either order.
#[test]
fn any_number_of_threads_prints_what_one_thread_prints() {
    let files = shipped();
    let mut printed = 0;
    for f in &files {
        same_with_any_threads(&["--format", "jsonl", f]);
        printed += 1;
    }
    assert!(printed >= 10, "{printed} captures");
    let all: Vec<&str> = files.iter().map(String::as_str).collect();
    for extra in [vec!["-c", "97"], vec!["-Y", "fetch or error", "-c", "40"]] {
        let mut args = extra.clone();
        args.extend(&all);
        same_with_any_threads(&args);
    }
    if let Some([a, b]) = &two_points() {
        same_with_any_threads(&["--format", "jsonl", a, b]);
        same_with_any_threads(&["--format", "jsonl", b, a]);
    }
}

/// `print -w` (which reads the messages the same way to choose their
/// frames) saves the same file whether the one shard runs on the routing
/// thread or three run on threads of their own.
#[test]
fn saving_is_the_same_with_any_number_of_threads() {
    let dir = std::env::temp_dir().join(format!("ks-print-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = shipped();
    let mut args: Vec<&str> = vec!["-Y", "produce or fetch"];
    args.extend(files.iter().map(String::as_str));
    let mut saved = Vec::new();
    for t in ["1", "3"] {
        let out = dir.join(format!("t{t}.pcapng"));
        let mut a = args.clone();
        a.extend(["--threads", t, "-w", out.to_str().unwrap()]);
        let (_, told) = print(&a);
        assert!(told.contains("saved"), "{told}");
        // What it said, but for the file's name.
        let told = told.replace(out.to_str().unwrap(), "OUT");
        saved.push((std::fs::read(&out).unwrap(), told));
    }
    assert!(saved[0].0.len() > 10_000, "{} bytes", saved[0].0.len());
    assert!(saved[0] == saved[1], "saved files differ");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The public captures where present, on every port (the content decides
/// what is Kafka): three shard threads print what one thread prints.
#[test]
fn public_captures_too() {
    let Some(pcaps) = public_captures() else {
        return;
    };
    for p in &pcaps {
        let args = ["--format", "jsonl", "--ports", "any", p.as_str()];
        let mut one = args.to_vec();
        one.extend(["--duration", "86400"]);
        let reference = print(&one);
        let mut many = args.to_vec();
        many.extend(["--threads", "3"]);
        assert!(print(&many) == reference, "{p}: outputs differ");
    }
}
