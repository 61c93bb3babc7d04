//! The `kafkashark-export` program on its own: rows on standard input,
//! files out; a row it cannot take stops it with the row's line number.
//! (This test also makes `cargo test` build the program, which
//! `kafkashark export`'s tests in ui/ run.)

use std::io::Write;
use std::process::{Command, Stdio};

fn writer(format: &str, out: &std::path::Path, rows: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafkashark-export"))
        .args(["--format", format, "--out"])
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kafkashark-export");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(rows.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

const ROW: &str = r#"{"table":"messages","date":"2026-12-01","api":"Produce","capture":"a.pcap","ts":"2026-12-01T09:30:00.000001Z","frame":7,"kind":"request","api_key":0,"topics":["t"]}"#;

/// Two rows of one partition: one CSV file under date= and api=, its
/// header the schema's columns, a row per input row; a third row that is
/// not JSON stops the writer naming line 3.
#[test]
fn rows_become_partitioned_files_and_a_bad_row_is_named() {
    let dir = std::env::temp_dir().join(format!("kafkashark-writer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = writer("csv", &dir, &format!("{ROW}\n{ROW}\n"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("messages/date=2026-12-01/api=Produce/part-0.csv");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let names: Vec<&str> = kafkashark::export::MESSAGES
        .iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(lines[0], names.join(","));
    assert!(
        lines[1].starts_with("a.pcap,2026-12-01T09:30:00.000001Z,7,,"),
        "{}",
        lines[1]
    );
    let _ = std::fs::remove_dir_all(&dir);
    let bad = writer("parquet", &dir, &format!("{ROW}\n{ROW}\nnot json\n"));
    assert_eq!(bad.status.code(), Some(2));
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.starts_with("kafkashark-export: row 3: "), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
