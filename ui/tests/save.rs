//! `print -Y EXPR -w FILE`: the packets that carried the matching messages
//! saved as pcapng or pcap, reopened by kafkashark and by tshark (when
//! installed; CI installs it) with the same messages, on every shipped
//! capture.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kafkashark::capture::{FileSource, FrameSource};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("captures/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    v.sort();
    assert!(v.len() >= 12, "{v:?}");
    v
}

/// What identifies a message across files (its frame numbers and stream
/// index change): api, version, correlation id, kind, length, endpoints,
/// the round trip known then, and for a response whether it is paired.
type Key = (
    Option<i64>,
    Option<i64>,
    Option<i64>,
    String,
    i64,
    String,
    String,
    Option<String>,
    Option<bool>,
);

/// The messages `print` shows for `file` (with `-Y filter`), counted by key.
fn messages(file: &Path, filter: Option<&str>) -> BTreeMap<Key, usize> {
    let mut c = bin();
    c.arg("print").arg(file).args(["--format", "jsonl"]);
    if let Some(f) = filter {
        c.args(["-Y", f]);
    }
    let out = c.output().expect("run print");
    assert!(
        out.status.success() || out.status.code() == Some(1),
        "{out:?}"
    );
    let mut m = BTreeMap::new();
    for line in String::from_utf8(out.stdout).expect("utf-8").lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("json");
        let kind = v["kind"].as_str().unwrap_or("").to_string();
        let key = (
            v["api_key"].as_i64(),
            v["api_version"].as_i64(),
            v["correlation_id"].as_i64(),
            kind.clone(),
            v["length"].as_i64().expect("length"),
            v["client"].as_str().expect("client").to_string(),
            v["broker"].as_str().expect("broker").to_string(),
            v.get("rtt_ms").map(|r| r.to_string()),
            (kind == "response").then(|| v["paired"].as_bool().expect("paired")),
        );
        *m.entry(key).or_default() += 1;
    }
    m
}

/// Every frame of `path`: (seconds, nanoseconds, original length, bytes).
fn frames(path: &Path) -> Vec<(i64, u32, u32, Vec<u8>)> {
    let mut src = FileSource::open(path.to_str().expect("path")).expect("open");
    let mut v = Vec::new();
    while let Some(f) = src.next_frame().expect("read") {
        v.push((f.ts.secs, f.ts.nanos, f.origlen, f.data.to_vec()));
    }
    v
}

fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// tshark's Kafka PDUs in `path`: (correlation id, length), counted.
fn tshark_pdus(path: &Path) -> BTreeMap<(i64, i64), usize> {
    let out = Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args(["-d", "tcp.port==9092,kafka", "-d", "tcp.port==19092,kafka"])
        .args(["-Y", "kafka", "-T", "fields", "-E", "occurrence=a"])
        .args(["-e", "kafka.correlation_id", "-e", "kafka.len"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "{out:?}");
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut cols = line.split('\t');
        let (Some(corr), Some(len)) = (cols.next(), cols.next()) else {
            continue;
        };
        // Several PDUs in one frame: comma-separated, in order.
        for (c, l) in corr.split(',').zip(len.split(',')) {
            let (Ok(c), Ok(l)) = (c.parse(), l.parse()) else {
                continue;
            };
            *m.entry((c, l)).or_default() += 1;
        }
    }
    m
}

#[test]
fn saved_packets_reopen_with_the_same_messages() {
    let dir = std::env::temp_dir().join(format!("kafkashark-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tshark = have_tshark();
    if !tshark {
        println!("tshark not installed: checking kafkashark's reading only");
    }
    let (mut checked, mut partial) = (0, 0);
    for file in shipped() {
        let all = frames(&file);
        for (i, filter) in ["produce", "fetch", "error!=0", "not fetch"]
            .iter()
            .enumerate()
        {
            let what = format!("{} -Y '{filter}'", file.display());
            let want = messages(&file, Some(filter));
            let n: usize = want.values().sum();
            // pcapng and pcap in turn.
            let out = dir.join(if i % 2 == 0 { "s.pcapng" } else { "s.pcap" });
            let run = bin()
                .arg("print")
                .arg(&file)
                .args(["-Y", filter, "-w"])
                .arg(&out)
                .output()
                .expect("run print -w");
            assert!(run.stdout.is_empty(), "{what}: -w prints nothing");
            let err = String::from_utf8_lossy(&run.stderr);
            assert!(err.contains(&format!("saved {n} message")), "{what}: {err}");
            // The same messages, read back.
            assert_eq!(messages(&out, None), want, "{what}");
            // Frames of the original, unchanged and in order, fewer of them
            // unless everything matched.
            let saved = frames(&out);
            let mut at = all.iter();
            for f in &saved {
                assert!(
                    at.any(|g| g == f),
                    "{what}: a saved frame not in the original"
                );
            }
            assert!(saved.len() <= all.len(), "{what}");
            partial += usize::from(saved.len() < all.len() && n > 0);
            if tshark && n > 0 {
                let theirs = tshark_pdus(&out);
                let ours = want.iter().fold(BTreeMap::new(), |mut m, (k, c)| {
                    *m.entry((k.2.expect("correlation id"), k.4)).or_default() += c;
                    m
                });
                assert_eq!(theirs, ours, "{what}: tshark reads the saved file");
            }
            checked += 1;
        }
    }
    assert!(checked >= 48 && partial >= 30, "{checked} {partial}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A connection's handshake is saved with its messages: the reopened
/// messages of b6 (every connection with its handshake) measure the
/// handshake's round trip, and the file starts with a SYN.
#[test]
fn handshakes_are_saved_with_the_messages() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/b6-consumer-lag.pcap");
    let out = std::env::temp_dir().join(format!("kafkashark-hs-{}.pcapng", std::process::id()));
    let run = bin()
        .arg("print")
        .arg(&file)
        .args(["-Y", "offset_commit", "-w"])
        .arg(&out)
        .output()
        .expect("run");
    assert!(run.status.success(), "{run:?}");
    let text = String::from_utf8_lossy(&run.stderr);
    let control: u64 = text
        .split(" of them handshakes")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|s| s.trim().parse().ok())
        .expect("a count of handshake frames");
    assert!(control >= 3, "{text}");
    let first = frames(&out).into_iter().next().expect("a frame");
    let seg = kafkashark::capture::decode_link_owned(
        kafkashark::capture::LinkType(1),
        first.3.into(),
        first.2,
    )
    .expect("tcp");
    assert!(seg.flags.syn && !seg.flags.ack, "{seg:?}");
    let _ = std::fs::remove_file(&out);
}

#[test]
fn saving_refuses_what_it_cannot_do() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures/a1-kcat-produce-consume-group.pcap");
    let err = |args: &[&str]| {
        let out = bin().args(args).output().expect("run");
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let f = file.to_str().expect("path");
    // Over the capture itself.
    assert!(err(&["print", f, "-w", f]).contains("that is a capture being read"));
    // From standard input, which cannot be read twice.
    assert!(err(&["print", "-", "-w", "/tmp/x.pcapng"]).contains("reads twice"));
    // -V prints trees; -w prints nothing.
    assert!(err(&["print", f, "-V", "-w", "/tmp/x.pcapng"]).contains("cannot be used with"));
    // An unwritable place names the file.
    assert!(
        err(&["print", f, "-w", "/nonexistent-dir/x.pcapng"]).contains("/nonexistent-dir/x.pcapng")
    );
}

/// `print` of a TLS capture with its key log, `-Y` choosing one client's
/// messages, saved with `-w … --embed-keys`: the file holds those TLS
/// connections whole and their sessions' keys only, so kafkashark reopens it
/// without a key log to the same messages, and tshark decrypts it with its
/// own TLS dissector to the same Kafka PDUs. Saved without the keys, it
/// needs the key log again.
#[test]
fn tls_messages_save_with_their_keys() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures/tls");
    let (cap, keys) = (
        dir.join("d1-tls13.pcap"),
        dir.join("d1-tls13.pcap.server.keys"),
    );
    if !cap.is_file() {
        return;
    }
    let tmp = std::env::temp_dir().join(format!("kafkashark-tls-save-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let filter = "client_id=\"tls-js\"";
    let print = |file: &Path, extra: &[&std::ffi::OsStr]| {
        let out = bin()
            .arg("print")
            .arg(file)
            .args(["--format", "jsonl"])
            .args(extra)
            .output()
            .expect("run print");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let strip = |jsonl: &str| -> Vec<String> {
        // The frame numbers change; api, version, correlation id, length,
        // endpoints and pairing do not.
        jsonl
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                format!(
                    "{} {} {} {} {} {} {}",
                    v["api_key"],
                    v["api_version"],
                    v["correlation_id"],
                    v["length"],
                    v["client"],
                    v["broker"],
                    v["paired"]
                )
            })
            .collect()
    };
    let k = keys.as_os_str();
    let want = strip(&print(
        &cap,
        &["--tls-keylog".as_ref(), k, "-Y".as_ref(), filter.as_ref()],
    ));
    assert!(want.len() > 10, "{want:?}");
    let saved = tmp.join("js.pcapng");
    let out = bin()
        .arg("print")
        .arg(&cap)
        .args(["--tls-keylog".as_ref(), k])
        .args(["-Y", filter, "-w"])
        .arg(&saved)
        .arg("--embed-keys")
        .output()
        .expect("save");
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("embedded the keys of 3 of the 3 TLS sessions saved"),
        "{said}"
    );
    assert_eq!(strip(&print(&saved, &[])), want);
    // Only the saved sessions' keys are in the file.
    let bytes = std::fs::read(&saved).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(text.matches("CLIENT_TRAFFIC_SECRET_0").count(), 3);
    if have_tshark() {
        let out = Command::new("tshark")
            .args(["-n", "-r"])
            .arg(&saved)
            .args(["-d", "tls.port==9093,kafka", "-Y", "kafka", "-T", "fields"])
            .args(["-E", "occurrence=a", "-e", "kafka.correlation_id"])
            .output()
            .expect("tshark");
        let pdus: usize = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split(',').filter(|c| !c.is_empty()).count())
            .sum();
        assert_eq!(pdus, want.len());
    }
    // Without --embed-keys: nothing decrypts without the key log, all with it.
    let bare = tmp.join("js-bare.pcapng");
    let out = bin()
        .arg("print")
        .arg(&cap)
        .args(["--tls-keylog".as_ref(), k])
        .args(["-Y", filter, "-w"])
        .arg(&bare)
        .output()
        .expect("save");
    assert!(out.status.success(), "{out:?}");
    assert!(print(&bare, &[]).is_empty());
    assert_eq!(strip(&print(&bare, &["--tls-keylog".as_ref(), k])), want);
    let _ = std::fs::remove_dir_all(&tmp);
}
