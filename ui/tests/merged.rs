//! Several captures given to one command: `print`, `stats` and the filter
//! read them together, merged by time, each message naming its capture.

use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

fn repo(p: &str) -> String {
    format!("{}/../captures/{p}", env!("CARGO_MANIFEST_DIR"))
}

const A1: &str = "a1-kcat-produce-consume-group.pcap";
const A3: &str = "a3-kafka-python-admin.pcap";

fn run(args: &[&str]) -> Output {
    let out = bin().args(args).output().expect("run kafkashark");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn jsonl(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// `v` without the keys that say where a message lies among the merged
/// frames and connections.
fn placeless(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(o) = v.as_object_mut() {
        for k in ["frame", "first_frame", "stream", "capture"] {
            o.remove(k);
        }
    }
    v
}

/// Two files (a3 recorded before a1): every message of each, as printed
/// from its file alone, each naming its file; the earlier file's exactly
/// (its frames and connections come first), the later one's but for frame
/// and connection numbers, which count on from the earlier's. The same
/// with trees (`-V`, decoded on every core).
#[test]
fn print_reads_several_captures_as_one() {
    let (a1, a3) = (repo(A1), repo(A3));
    for v in [&[][..], &["-V"][..]] {
        let print = |files: &[&str]| {
            let mut args = vec!["print", "--format", "jsonl"];
            args.extend_from_slice(v);
            args.extend_from_slice(files);
            jsonl(&run(&args))
        };
        let (alone1, alone3, both) = (print(&[&a1]), print(&[&a3]), print(&[&a1, &a3]));
        assert_eq!(both.len(), alone1.len() + alone3.len());
        let of = |p: &str| -> Vec<serde_json::Value> {
            both.iter().filter(|m| m["capture"] == p).cloned().collect()
        };
        let (from1, from3) = (of(&a1), of(&a3));
        assert_eq!(from3.len(), alone3.len());
        for (m, want) in from3.iter().zip(&alone3) {
            let mut m = m.clone();
            m.as_object_mut().unwrap().remove("capture");
            assert_eq!(&m, want);
        }
        assert_eq!(
            from1.into_iter().map(placeless).collect::<Vec<_>>(),
            alone1.into_iter().map(placeless).collect::<Vec<_>>()
        );
    }
    // One file: no `capture` key.
    let one = jsonl(&run(&["print", &a3, "--format", "jsonl"]));
    assert!(one.iter().all(|m| m.get("capture").is_none()));
}

/// A glob the shell left alone is expanded (in name order); one that
/// matches nothing, and `-w` with standard input among the files, are
/// refused with why.
#[test]
fn globs_are_expanded_and_refusals_say_why() {
    let glob = repo("a[13]-*.pcap");
    let by_glob = run(&["print", &glob, "--format", "jsonl"]);
    let listed = run(&["print", &repo(A1), &repo(A3), "--format", "jsonl"]);
    assert_eq!(by_glob.stdout, listed.stdout);
    let none = bin()
        .args(["print", &repo("nothing-*.pcap")])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no file matches"));
    let out = std::env::temp_dir().join(format!("kafkashark-merged-{}.pcap", std::process::id()));
    let save = bin()
        .args(["print", &repo(A1), "-", "-w"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(save.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&save.stderr).contains("not standard input"));
    assert!(!out.exists());
}

/// `-w` from two files: the packets of the messages the filter matches in
/// either, merged by time into one file, which reopens (in kafkashark, and
/// in tshark when it is there) to those messages: the same apis, versions,
/// correlation ids, kinds and pairing.
#[test]
fn several_files_save_into_one() {
    let out = std::env::temp_dir().join(format!("kafkashark-merged-{}.pcapng", std::process::id()));
    let filter = "produce or fetch or metadata";
    let (a1, a3) = (repo(A1), repo(A3));
    let saved = run(&["print", &a1, &a3, "-Y", filter, "-w", out.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&saved.stderr);
    assert!(said.contains("saved "), "{said}");
    let key = |v: &serde_json::Value| {
        let v = placeless(v.clone());
        let pick = [
            "api_key",
            "api_version",
            "correlation_id",
            "kind",
            "paired",
            "client",
            "broker",
            "length",
        ];
        pick.iter()
            .map(|k| v[*k].to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut want: Vec<String> = jsonl(&run(&[
        "print", &a1, &a3, "-Y", filter, "--format", "jsonl",
    ]))
    .iter()
    .map(key)
    .collect();
    let mut got: Vec<String> = jsonl(&run(&[
        "print",
        out.to_str().unwrap(),
        "-Y",
        filter,
        "--format",
        "jsonl",
    ]))
    .iter()
    .map(key)
    .collect();
    want.sort();
    got.sort();
    assert!(want.len() >= 20, "{}", want.len());
    assert_eq!(got, want);
    // Both files' messages are in it.
    let a3_only = jsonl(&run(&["print", &a3, "-Y", filter, "--format", "jsonl"]));
    assert!(!a3_only.is_empty() && a3_only.len() < want.len());
    if let Ok(t) = Command::new("tshark")
        .arg("-r")
        .arg(&out)
        .args(["-Y", "kafka"])
        .output()
    {
        if t.status.success() {
            let frames = String::from_utf8_lossy(&t.stdout).lines().count();
            assert!(
                frames >= want.len() / 2,
                "tshark read {frames} Kafka frames"
            );
        }
    }
    let _ = std::fs::remove_file(&out);
}

/// `capture` in a display filter picks the messages of the files whose
/// names contain it, in `print` and in `stats`; `stats` of two files
/// counts the messages of both.
#[test]
fn the_filter_and_stats_know_each_capture() {
    let (a1, a3) = (repo(A1), repo(A3));
    let alone3 = jsonl(&run(&["print", &a3, "--format", "jsonl"]));
    let filtered = |f: &str| jsonl(&run(&["print", &a1, &a3, "--format", "jsonl", "-Y", f]));
    let picked = filtered("capture~python");
    assert_eq!(picked.len(), alone3.len());
    assert!(picked.iter().all(|m| m["capture"] == a3.as_str()));
    let not = filtered("capture!=python");
    assert!(!not.is_empty() && not.iter().all(|m| m["capture"] == a1.as_str()));
    let stats = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["stats", "--format", "json"];
        all.extend_from_slice(args);
        serde_json::from_slice(&run(&all).stdout).expect("stats JSON")
    };
    let n = |v: &serde_json::Value| v["summary"]["messages"].as_u64().unwrap();
    let (s1, s3) = (stats(&[&a1]), stats(&[&a3]));
    assert_eq!(n(&stats(&[&a1, &a3])), n(&s1) + n(&s3));
    assert_eq!(n(&stats(&[&a1, &a3, "-Y", "capture~kcat"])), n(&s1));
}
