//! `kafkashark export` end to end: the shipped captures exported as
//! Parquet, JSONL and CSV, queried with DuckDB (`export_duckdb.py`), agree
//! with `stats --format json` on the same captures. Skips when python3 or
//! its duckdb module is missing (CI installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{bin, jsonl, message_key as key, shipped};

#[path = "../../tests/support/mod.rs"]
mod support;

/// `export FORMAT` of `files` into a fresh directory, then DuckDB's answers
/// on it (`None` when DuckDB is not there).
fn exported(files: &[String], format: &str) -> (PathBuf, Option<serde_json::Value>) {
    // A directory per export: tests run at once.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "kafkashark-export-{format}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let out = bin()
        .arg("export")
        .args(files)
        .args(["--format", format, "--out"])
        .arg(&dir)
        .output()
        .expect("run export");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers = answers("export_duckdb.py", &dir, &[format]);
    (dir, answers)
}

/// What the script `tests/NAME` answers on the export in `dir` (`None`
/// when python3 or its engine module is missing: exit code 3).
fn answers(name: &str, dir: &Path, args: &[&str]) -> Option<serde_json::Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name);
    let q = Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(args)
        .output();
    match q {
        Ok(q) if q.status.code() == Some(3) => None,
        Ok(q) => {
            assert!(q.status.success(), "{}", String::from_utf8_lossy(&q.stderr));
            Some(serde_json::from_slice(&q.stdout).expect("the script's JSON"))
        }
        Err(_) => None,
    }
}

/// `stats --format json` of `files`.
fn stats_of(files: &[String]) -> serde_json::Value {
    let out = bin()
        .args(["stats", "--format", "json"])
        .args(files)
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// docs/export.md's ClickHouse queries, run as written by ClickHouse's own
/// engine (chdb, embedded; `file()` where the documentation's error query
/// reads `s3()`) on the Parquet export of the shipped captures: latency
/// counts and percentiles (within the histogram's precision) and error
/// counts per api, and bytes and records of Produce requests per topic
/// partition, equal `stats --format json`'s.
#[test]
fn clickhouse_on_the_export_agrees_with_stats() {
    let files = shipped();
    let (dir, _) = exported(&files, "parquet");
    let ch = answers("export_clickhouse.py", &dir, &[]);
    let _ = std::fs::remove_dir_all(&dir);
    let Some(ch) = ch else {
        eprintln!("no python3 with chdb: skipped");
        return;
    };
    eprintln!("ClickHouse {}", ch["version"]);
    let stats = stats_of(&files);
    let mut code_of = std::collections::HashMap::new();
    for e in stats["errors"].as_array().unwrap() {
        code_of.insert(e["error"].as_str().unwrap(), e["code"].to_string());
    }
    let (mut timed, mut erred) = (0, 0);
    for a in stats["apis"].as_array().unwrap() {
        let name = a["api_name"].as_str().unwrap_or("?");
        let lat = &a["latency_ms"];
        let theirs = &ch["latency"][name];
        if lat.is_null() || lat["count"] == 0 {
            assert!(theirs.is_null(), "{name}");
        } else {
            timed += 1;
            assert_eq!(theirs["count"], lat["count"], "{name}");
            for p in ["p50", "p99"] {
                let (t, o) = (theirs[p].as_f64().unwrap(), lat[p].as_f64().unwrap());
                assert!(
                    o >= t - 0.0005 && o <= t * 1.001 + 0.0005,
                    "{name} {p}: stats {o}, ClickHouse {t}"
                );
            }
        }
        let mut errors = serde_json::Map::new();
        for (e, n) in a["errors"].as_object().unwrap() {
            errors.insert(code_of[e.as_str()].clone(), n.clone());
        }
        if !errors.is_empty() {
            erred += 1;
            assert_eq!(
                ch["errors"][name],
                serde_json::Value::Object(errors),
                "{name}"
            );
        }
    }
    let mut produced = 0;
    for t in stats["topics"].as_array().unwrap() {
        let ours = &t["produce"];
        if ours["record_sets"] == 0 {
            continue;
        }
        produced += 1;
        let at = format!("{}/{}", t["topic"].as_str().unwrap(), t["partition"]);
        let theirs = &ch["produce"][&at];
        assert_eq!(theirs["bytes"], ours["bytes"], "{at}");
        assert_eq!(theirs["records"], ours["records"], "{at}");
    }
    assert_eq!(ch["produce"].as_object().unwrap().len(), produced);
    assert!(
        timed >= 20 && erred >= 3 && produced >= 10,
        "{timed} {erred} {produced}"
    );
}

/// Counts per api and version, latency percentiles (within the histogram's
/// precision: a value's bucket is at most 0.1 % wide, and stats rounds to
/// the microsecond) and error counts per api, as DuckDB reads them from the
/// Parquet files, equal `stats --format json`'s; the JSONL and CSV exports
/// give DuckDB the same answers.
#[test]
fn duckdb_on_the_export_agrees_with_stats() {
    let files = shipped();
    let (dir, answers) = exported(&files, "parquet");
    let Some(db) = answers else {
        eprintln!("no python3 with duckdb: skipped");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    // The table is partitioned by date and api.
    let messages = dir.join("messages");
    let dates: Vec<_> = std::fs::read_dir(&messages).unwrap().flatten().collect();
    assert!(!dates.is_empty());
    assert!(dates
        .iter()
        .all(|d| d.file_name().to_string_lossy().starts_with("date=")));
    assert!(messages
        .join(dates[0].file_name())
        .read_dir()
        .unwrap()
        .flatten()
        .all(|a| a.file_name().to_string_lossy().starts_with("api=")));
    let _ = std::fs::remove_dir_all(&dir);
    let stats = stats_of(&files);
    assert_eq!(db["rows"], stats["summary"]["messages"]);
    // Error names to codes, from the report's own list.
    let mut code_of = std::collections::HashMap::new();
    for e in stats["errors"].as_array().unwrap() {
        code_of.insert(
            e["error"].as_str().unwrap().to_string(),
            e["code"].to_string(),
        );
    }
    let apis = stats["apis"].as_array().unwrap();
    assert_eq!(apis.len(), db["apis"].as_object().unwrap().len());
    for a in apis {
        let key = a["api_key"].to_string();
        let d = &db["apis"][&key];
        let name = &a["api_name"];
        assert_eq!(d["requests"], a["requests"], "{name}");
        assert_eq!(d["responses"], a["responses"], "{name}");
        for v in a["versions"].as_array().unwrap() {
            let dv = &d["versions"][v["version"].to_string()];
            assert_eq!(dv["requests"], v["requests"], "{name} v{}", v["version"]);
            assert_eq!(dv["responses"], v["responses"], "{name} v{}", v["version"]);
        }
        let lat = &a["latency_ms"];
        if lat.is_null() || lat["count"] == 0 {
            assert!(d.get("latency").is_none_or(|l| l["count"] == 0), "{name}");
        } else {
            assert_eq!(d["latency"]["count"], lat["count"], "{name}");
            for p in ["p50", "p99"] {
                let (theirs, ours) = (d["latency"][p].as_f64().unwrap(), lat[p].as_f64().unwrap());
                assert!(
                    ours >= theirs - 0.0005 && ours <= theirs * 1.001 + 0.0005,
                    "{name} {p}: stats {ours}, duckdb {theirs}"
                );
            }
        }
        let mut errors = serde_json::Map::new();
        for (e, n) in a["errors"].as_object().unwrap() {
            errors.insert(code_of[e].clone(), n.clone());
        }
        assert_eq!(d["errors"], serde_json::Value::Object(errors), "{name}");
    }
    // The partitions table: each topic partition's produced and fetched
    // record sets, summed by DuckDB, are stats' topics table.
    let mut sides = 0;
    let topics = db["topics"].as_object().unwrap();
    let reported = stats["topics"].as_array().unwrap();
    for t in reported {
        let at = format!("{}/{}", t["topic"].as_str().unwrap(), t["partition"]);
        for side in ["produce", "fetch"] {
            let ours = &t[side];
            if ours["record_sets"] == 0 {
                continue;
            }
            sides += 1;
            let theirs = &topics[&at][side];
            for k in [
                "record_sets",
                "bytes",
                "batches",
                "records",
                "compressed_bytes",
                "decompressed_bytes",
            ] {
                assert_eq!(theirs[k], ours[k], "{at} {side} {k}");
            }
        }
    }
    let theirs: usize = topics.values().map(|t| t.as_object().unwrap().len()).sum();
    assert_eq!(theirs, sides);
    assert!(sides >= 20, "{sides}");
    // Consumer lag from the partitions table's Fetch requests and
    // responses: each client's largest lag per partition is stats' max lag.
    let mut lags = 0;
    for r in stats["lag"]["partitions"].as_array().unwrap() {
        let at = format!(
            "{}/{}/{}",
            r["client"].as_str().unwrap(),
            r["topic"].as_str().unwrap(),
            r["partition"]
        );
        assert_eq!(db["lag"][&at], r["max_lag"], "lag {at}");
        lags += 1;
    }
    assert!(lags >= 6, "{lags}");
    // The same values in every format (the types are Parquet's alone).
    let mut db = db;
    if let Some(o) = db.as_object_mut() {
        o.remove("also_types");
    }
    for format in ["jsonl", "csv"] {
        let (dir, other) = exported(&files, format);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(other.as_ref(), Some(&db), "{format}");
    }
}

/// One run captured at two points (`captures/two-points`), exported
/// together in each format: every message once, those the broker side saw
/// too with that file, its time and its latency there in the `also_*`
/// columns (Parquet: a timestamp, integers and a double), as DuckDB reads
/// them. The latencies are the broker side's own reading of the same
/// exchanges (`print` of that file alone): as many and the same sum; the
/// two points' times of a message are one instant on the first file's
/// clock (a loopback recording: both saw each packet at once).
#[test]
fn the_export_carries_the_other_points_view() {
    let Some([client, broker]) = common::two_points() else {
        return;
    };
    let files = vec![client.clone(), broker.clone()];
    let theirs: std::collections::HashMap<_, _> = (jsonl(&["print", &broker, "--format", "jsonl"]))
        .iter()
        .map(|v| (key(v), v["latency_ms"].as_f64()))
        .collect();
    let both = jsonl(&["print", &client, &broker, "--format", "jsonl"]);
    let seen: Vec<_> = both.iter().filter(|v| v.get("also").is_some()).collect();
    assert!(seen.len() > 150, "{}", seen.len());
    let latencies: Vec<f64> = (seen.iter())
        .filter_map(|v| *theirs.get(&key(v)).expect("seen by the broker side"))
        .collect();
    assert!(latencies.len() > 50, "{}", latencies.len());
    for format in ["parquet", "jsonl", "csv"] {
        let (dir, answers) = exported(&files, format);
        let _ = std::fs::remove_dir_all(&dir);
        let Some(db) = answers else {
            eprintln!("no python3 with duckdb: skipped");
            return;
        };
        assert_eq!(db["rows"].as_u64(), Some(both.len() as u64), "{format}");
        let also = &db["also"];
        assert_eq!(
            also.as_object().map(|o| o.len()),
            Some(1),
            "{format}: {also}"
        );
        let a = &also[broker.as_str()];
        assert_eq!(a["messages"].as_u64(), Some(seen.len() as u64), "{format}");
        assert_eq!(
            a["timed"].as_u64(),
            Some(latencies.len() as u64),
            "{format}"
        );
        let sum: f64 = latencies.iter().sum();
        let got = a["latency_ms"].as_f64().unwrap();
        assert!((got - sum).abs() < 1e-6, "{format}: {got} against {sum}");
        assert!(
            a["apart_ms"].as_f64().is_some_and(|d| d <= 0.001),
            "{format}: {a}"
        );
        if format == "parquet" {
            let want = [
                "VARCHAR",
                "TIMESTAMP WITH TIME ZONE",
                "BIGINT",
                "BIGINT",
                "DOUBLE",
            ];
            assert_eq!(db["also_types"], serde_json::json!(want));
        }
    }
}

/// Every row of `table` in an export directory, as its lines.
fn table_lines(dir: &Path, table: &str) -> Vec<String> {
    let files = files_under(&dir.join(table));
    let text = files
        .values()
        .map(|b| String::from_utf8(b.clone()).unwrap());
    text.flat_map(|t| t.lines().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// Rows that come out the same whichever way the tables are written: the
/// JSONL export holds every column of each table's schema for every row,
/// in the schema's order (the columns docs/export.md lists), as many
/// messages rows as `print` prints messages, and partitions rows for the
/// capture's Produce and Fetch traffic.
#[test]
fn the_jsonl_export_holds_every_message_and_column() {
    let files = vec![shipped()[0].clone()];
    let (dir, _) = exported(&files, "jsonl");
    let rows = table_lines(&dir, "messages");
    let parts = table_lines(&dir, "partitions");
    let _ = std::fs::remove_dir_all(&dir);
    let printed = bin()
        .args(["print", "--format", "jsonl"])
        .args(&files)
        .output()
        .unwrap();
    let n = String::from_utf8_lossy(&printed.stdout).lines().count();
    assert_eq!(rows.len(), n);
    assert!(parts.len() >= 10, "{}", parts.len());
    for (table, lines) in [("messages", &rows), ("partitions", &parts)] {
        let t = kafkashark::export::TABLES
            .iter()
            .find(|t| t.name == table)
            .unwrap();
        let names: Vec<&str> = t.columns.iter().map(|c| c.name).collect();
        assert_eq!(documented_columns(table), names, "docs/export.md {table}");
        let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        want.sort();
        for r in lines {
            let keys: Vec<String> = serde_json::from_str::<serde_json::Value>(r)
                .unwrap()
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            assert_eq!(keys, want);
            // In the schema's order in the line itself.
            let at: Vec<usize> = names
                .iter()
                .map(|n| r.find(&format!("\"{n}\":")).unwrap())
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{r}");
        }
    }
}

/// The columns docs/export.md lists for `table`, in order.
fn documented_columns(table: &str) -> Vec<&'static str> {
    let doc = include_str!("../../docs/export.md");
    let section = doc
        .split(&format!("## The {table} table"))
        .nth(1)
        .expect("the section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect()
}

/// A directory that cannot be written: the writer says where and why, and
/// `export` fails with it.
#[test]
fn an_unwritable_directory_fails_the_export_with_why() {
    let out = bin()
        .args(["export", &shipped()[0], "--out", "/proc/kafkashark-nowhere"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    // The two programs share standard error, their lines in any order
    // (the writer's is one write, so whole).
    let why = "kafkashark-export: row 1: /proc/kafkashark-nowhere/messages/date=";
    assert!(said.contains(why), "{said}");
    assert!(said.contains("the export writer failed"), "{said}");
}

/// Every file under `dir`, by its path there, with its bytes.
fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_path_buf();
                files.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

/// Capture files are read on a reader thread and decoded in shards of the
/// connections: the JSONL export of the shipped captures (and of the two
/// capture points of one run) with one shard and with three is, file for
/// file and byte for byte, the one read frame by frame on one thread
/// (`--duration`), and says the same on standard error.
#[test]
fn the_export_is_the_same_with_any_number_of_threads() {
    let mut runs = vec![shipped()];
    if let Some(points) = common::two_points() {
        runs.push(points.to_vec());
    }
    for (k, files) in runs.iter().enumerate() {
        let export = |extra: &[&str]| {
            let dir = std::env::temp_dir().join(format!(
                "kafkashark-export-threads-{}-{k}-{}",
                std::process::id(),
                extra.join("")
            ));
            let _ = std::fs::remove_dir_all(&dir);
            let out = bin()
                .arg("export")
                .args(files)
                .args(["--format", "jsonl", "--out"])
                .arg(&dir)
                .args(extra)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let tables = files_under(&dir);
            let _ = std::fs::remove_dir_all(&dir);
            (tables, out.stderr)
        };
        let reference = export(&["--duration", "86400"]);
        assert!(reference.0.len() >= 4, "{:?}", reference.0.keys());
        for t in ["1", "3"] {
            let got = export(&["--threads", t]);
            assert!(got == reference, "{files:?} --threads {t}: exports differ");
        }
    }
}

/// What identifies a message row whichever way its bytes were captured:
/// kind, API and version, correlation id, length, client id, whether it
/// was paired and its error.
fn row_identity(row: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(row).unwrap();
    let cols = [
        "kind",
        "api_name",
        "api_version",
        "correlation_id",
        "length",
        "client_id",
        "paired",
        "error_code",
    ];
    cols.map(|c| v[c].to_string()).join(" ")
}

/// The real uid of process `pid` (`/proc`), if it is still there.
fn uid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Live: `export -i lo` of a shipped capture's connections replayed over
/// loopback writes a row for every message replayed, the rows `export` of
/// the capture file writes (kind, API, version, correlation id, length,
/// client id, pairing, error), and ends at its `--duration` (skipped
/// without the right to capture on `lo`).
#[test]
fn a_live_export_writes_a_row_for_every_message_on_the_interface() {
    use std::os::unix::fs::PermissionsExt;
    let capture = shipped()
        .into_iter()
        .find(|c| c.ends_with("a1-kcat-produce-consume-group.pcap"))
        .expect("the a1 capture");
    let (file_dir, _) = exported(std::slice::from_ref(&capture), "jsonl");
    let mut want: Vec<String> = table_lines(&file_dir, "messages")
        .iter()
        .map(|r| row_identity(r))
        .collect();
    let _ = std::fs::remove_dir_all(&file_dir);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let dir = std::env::temp_dir().join(format!("kafkashark-export-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // As root the export runs as nobody once the interface is open.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = dir.join("out");
    let mut child = bin()
        .args(["export", "-i", "lo", "--ports", &port, "--duration", "8"])
        .args(["--format", "jsonl", "--out"])
        .arg(&out)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run export");
    // Open once it no longer runs as root (or, started without root, a
    // moment after it started); refused, it ends at once.
    let started = std::time::Instant::now();
    let as_root = uid_of(child.id()) == Some(0);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut said = String::new();
            use std::io::Read;
            let _ = child.stderr.take().unwrap().read_to_string(&mut said);
            let _ = std::fs::remove_dir_all(&dir);
            assert!(!status.success(), "ended before the replay: {said}");
            eprintln!("skipped: no live capture on lo: {said}");
            return;
        }
        let open = match as_root {
            true => uid_of(child.id()).is_some_and(|u| u != 0),
            false => started.elapsed() > std::time::Duration::from_secs(2),
        };
        if open {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(6),
            "the export did not open lo"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    support::replay(&listener, &support::conversations(&capture));
    let ended = child.wait_with_output().expect("wait for export");
    assert!(
        ended.status.success(),
        "{}",
        String::from_utf8_lossy(&ended.stderr)
    );
    let mut got: Vec<String> = table_lines(&out, "messages")
        .iter()
        .map(|r| row_identity(r))
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(want.len() > 100, "{}", want.len());
    want.sort();
    got.sort();
    assert_eq!(got, want);
}
