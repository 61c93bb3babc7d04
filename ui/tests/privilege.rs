//! Least privilege for live capture: run as root, `kafkashark print -i lo`
//! opens the interface and then no longer runs as root. Skips (with a line on
//! stderr) when the test does not run as root or `lo` cannot be opened.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    uids(&status).map(|u| u[1])
}

/// Real, effective, saved and filesystem uids from /proc/<pid>/status.
fn uids(status: &str) -> Option<[u32; 4]> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    let v: Vec<u32> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    v.try_into().ok()
}

/// Starts `print -i lo` with the debug line on; returns the child and its
/// first privilege line (or None when the capture could not be opened).
fn start(extra: &[&str]) -> Option<(std::process::Child, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kafkashark"))
        .args(["print", "-i", "lo", "-c", "1", "--duration", "4"])
        .args(extra)
        .env("KAFKASHARK_DEBUG_PRIVILEGE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kafkashark");
    let err = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(err).lines();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match lines.next() {
            Some(Ok(l)) if l.contains("privileges:") => {
                // Keep draining stderr in the background so the child never blocks.
                std::thread::spawn(move || for _ in lines {});
                return Some((child, l));
            }
            Some(Ok(l)) => eprintln!("kafkashark: {l}"),
            _ => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn live_print_as_root_drops_to_nobody() {
    if euid() != Some(0) {
        eprintln!("skipping: not running as root");
        return;
    }
    let Some((mut child, line)) = start(&[]) else {
        eprintln!("skipping: could not open a live capture on lo");
        return;
    };
    // While the capture runs, the process holds no root uid at all.
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()));
    let _ = child.wait();
    assert!(line.contains("Dropped"), "{line}");
    assert!(
        line.contains("euid=65534") || !line.contains("euid=0"),
        "{line}"
    );
    let status = status.expect("read /proc/<pid>/status of the running capture");
    let u = uids(&status).expect("Uid line");
    assert!(u.iter().all(|&id| id != 0), "still root: Uid {u:?}");
    let groups = status
        .lines()
        .find(|l| l.starts_with("Groups:"))
        .unwrap_or("");
    assert_eq!(groups.trim(), "Groups:", "supplementary groups not cleared");
}

#[test]
fn keep_root_keeps_root() {
    if euid() != Some(0) {
        eprintln!("skipping: not running as root");
        return;
    }
    let Some((mut child, line)) = start(&["--keep-root"]) else {
        eprintln!("skipping: could not open a live capture on lo");
        return;
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("Kept") && line.contains("euid=0"), "{line}");
}

#[test]
fn unknown_user_is_an_error_not_a_silent_root() {
    if euid() != Some(0) {
        eprintln!("skipping: not running as root");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kafkashark"))
        .args(["print", "-i", "lo", "-c", "1", "--duration", "1"])
        .args(["--user", "no-such-user-kafkashark"])
        .output()
        .expect("run kafkashark");
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("interface lo") {
        eprintln!("skipping: could not open a live capture on lo: {err}");
        return;
    }
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("no such user"), "{err}");
}
