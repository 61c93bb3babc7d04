//! Terminal safety of the `kafkashark` binary: the real stdout of `print`,
//! `print -V`, `print --format jsonl [-V]`, `stats [--format json]` and
//! `decode [--format json]` on a capture whose client id, topic names, record
//! keys, values and header keys hold escape sequences, control characters and
//! invalid UTF-8 holds no ESC (0x1b) or other control byte, and its JSON is
//! valid; and the terminal UI, run in tmux, shows those strings escaped and
//! never lets them retitle or clear the terminal. (The engine-level checks
//! are in tests/terminal_safety.rs, which builds the same capture.)

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::Command;

use support::tmux::{have_tmux, Tmux};
use support::{Format, Link};

use support::hostile::*;

fn capture() -> support::TempCapture {
    support::write_capture(
        "terminal-ui",
        &segments(&produce_exchange()),
        &Link::Ethernet(vec![]),
        Format::PcapNanos,
    )
}

/// Bytes that would drive a terminal: C0 controls but newline, DEL, and the
/// UTF-8 encodings of C1 controls (c2 80..c2 9f).
fn assert_inert(what: &str, out: &[u8]) {
    for (i, w) in out.windows(2).enumerate() {
        let c = w[0];
        let bad =
            (c < 0x20 && c != b'\n') || c == 0x7f || (c == 0xc2 && (0x80..=0x9f).contains(&w[1]));
        assert!(
            !bad,
            "{what}: control byte 0x{c:02x} at {i}: {}",
            String::from_utf8_lossy(&out[i.saturating_sub(60)..(i + 10).min(out.len())])
                .escape_debug()
        );
    }
    if let Some(&last) = out.last() {
        assert!(
            last >= 0x20 || last == b'\n',
            "{what}: ends in a control byte"
        );
    }
}

fn run(args: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let out = Command::new(env!("CARGO_BIN_EXE_kafkashark"))
        .args(args)
        .output()
        .expect("run kafkashark");
    (out.stdout, out.stderr)
}

#[test]
fn print_text_and_verbose_are_inert() {
    let cap = capture();
    for extra in [&[][..], &["-V"][..]] {
        let mut args = vec!["print", cap.path_str()];
        args.extend_from_slice(extra);
        let (out, err) = run(&args);
        assert!(!out.is_empty(), "{}", String::from_utf8_lossy(&err));
        assert_inert(&format!("print {extra:?} stdout"), &out);
        assert_inert(&format!("print {extra:?} stderr"), &err);
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains(r"\u{1b}[2J"),
            "the hostile text is shown escaped: {text}"
        );
    }
}

#[test]
fn print_jsonl_is_valid_json_without_raw_escapes() {
    let cap = capture();
    for extra in [&[][..], &["-V"][..]] {
        let mut args = vec!["print", cap.path_str(), "--format", "jsonl"];
        args.extend_from_slice(extra);
        let (out, _) = run(&args);
        assert!(!out.contains(&0x1b), "raw ESC in JSONL");
        let text = String::from_utf8(out).expect("JSONL is UTF-8 even for invalid UTF-8 input");
        let mut n = 0;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
            assert!(v.is_object());
            n += 1;
        }
        assert_eq!(n, 2, "{text}");
        if extra.is_empty() {
            let first: serde_json::Value =
                serde_json::from_str(text.lines().next().unwrap()).unwrap();
            let cid = first["client_id"].as_str().expect("client_id");
            assert!(
                cid.contains('\u{1b}'),
                "JSON keeps the string, escaped by JSON: {cid:?}"
            );
        }
    }
}

#[test]
fn stats_text_and_json_are_inert() {
    let cap = capture();
    let (out, err) = run(&["stats", cap.path_str()]);
    assert!(!out.is_empty(), "{}", String::from_utf8_lossy(&err));
    assert_inert("stats stdout", &out);
    let (out, _) = run(&["stats", cap.path_str(), "--format", "json"]);
    assert!(!out.contains(&0x1b));
    serde_json::from_slice::<serde_json::Value>(&out).expect("stats JSON");
}

#[test]
fn decode_text_and_json_are_inert() {
    let msgs = produce_exchange();
    let path = support::temp_path("decode-evil", "bin");
    std::fs::write(&path, &msgs[0].1).expect("write");
    let p = path.to_str().unwrap();
    let (out, err) = run(&["decode", p]);
    assert!(!out.is_empty(), "{}", String::from_utf8_lossy(&err));
    assert_inert("decode stdout", &out);
    assert!(String::from_utf8_lossy(&out).contains(r"\u{1b}]0;pwned\u{7}"));
    let (out, _) = run(&["decode", p, "--format", "json"]);
    assert!(!out.contains(&0x1b));
    serde_json::from_slice::<serde_json::Value>(&out).expect("decode JSON");
    // The response, decoded with its request's key and version.
    std::fs::write(&path, &msgs[1].1).expect("write");
    let (out, _) = run(&[
        "decode",
        p,
        "--response",
        "--api-key",
        "0",
        "--api-version",
        "3",
    ]);
    assert_inert("decode response", &out);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn the_tui_shows_hostile_strings_escaped() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let cap = capture();
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let t = Tmux::new("ts", "ts");
    let cmd = format!(
        "NO_COLOR=1 '{bin}' '{}'; echo \"kafkashark exited $?\"; sleep 60",
        cap.path_str()
    );
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        "ts",
        "-x",
        "160",
        "-y",
        "50",
        "sh",
        "-c",
        &cmd,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The tree shows the client id escaped; the hex view's text column shows
    // dots. Waited for together: a screen caught mid-draw may lack a pane.
    t.wait("the first screen", |s| {
        s.contains("messages 2/2")
            && s.contains("client_id")
            && s.contains(r#""cli\u{1b}[2J\u{1b}]0;p"#)
            && s.contains("i.[2J.]0;pwned..")
    });
    // Into the tree, everything expanded: the topic name shows escaped too.
    let _ = t.run(&["send-keys", "-t", "ts", "Tab", "e"]);
    t.wait("the expanded tree", |s| {
        s.contains(r#""top\u{1b}[2J"#) && (s.contains("baseOffset") || s.contains("RecordBatch"))
    });
    // The terminal was neither retitled nor cleared by captured bytes.
    let title = t.run(&["display-message", "-p", "-t", "ts", "#{pane_title}"]);
    let title = String::from_utf8_lossy(&title.stdout);
    assert!(!title.contains("pwned"), "pane retitled to {title:?}");
    let _ = t.run(&["send-keys", "-t", "ts", "q"]);
    t.wait("exit", |s| s.contains("kafkashark exited 0"));
}
