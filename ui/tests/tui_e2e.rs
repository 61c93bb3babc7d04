//! The terminal UI end to end: the real binary in a real terminal (tmux, 120x40):
//! moving through messages and fields, filtering, help, quitting, and the
//! terminal restored afterwards. Skips (with a message) when tmux is missing.
//!
//! Each step polls `capture-pane` until the expected text shows or a deadline
//! passes; there are no fixed sleeps. A step waits for everything it expects
//! at once: a screen captured while the terminal is still drawing can show
//! one pane and not yet the next.

#[path = "../../tests/support/mod.rs"]
mod support;

use support::tmux::{have_tmux, Tmux};

use std::process::Command;

/// The shipped a1 capture.
fn a1() -> String {
    format!(
        "{}/../captures/a1-kcat-produce-consume-group.pcap",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The UI on a1 in a tmux session of `width`×`height` (`tag` names its
/// socket), all 157 messages loaded; `None`, said, without tmux.
fn ui_on_a1(tag: &str, session: &'static str, width: u16, height: u16) -> Option<Tmux> {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return None;
    }
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    // No config file of the user's: the default columns.
    let cmd = format!(
        "XDG_CONFIG_HOME=/nonexistent-kafkashark '{bin}' '{}'; echo \"kafkashark exited $?\"; sleep 60",
        a1()
    );
    let t = Tmux::new(tag, session);
    t.start(width, height, &cmd);
    t.wait_for("messages 157/157");
    Some(t)
}

#[test]
fn browse_filter_help_and_quit_in_tmux() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let cap = a1();
    let t = Tmux::new("e2e", "e2e");
    // The shell prints a marker once the UI has exited, then waits.
    let cmd = format!("'{bin}' '{cap}'; echo \"kafkashark exited $?\"; sleep 60");
    t.start(120, 40, &cmd);

    // The first screen: the list, the first message's tree and its bytes.
    t.wait("the first screen", |s| {
        s.contains("messages 157/157")
            && s.contains("ApiVersionsRequest")
            && s.contains("■ frame")
            && s.contains("frame 4: ApiVersions v0 Request")
            && s.contains("0000  00 00 00 15 00 12 00 00")
    });

    // Down two messages: the CreateTopics request.
    t.keys(&["j", "j"]);
    t.wait_for("frame 12: CreateTopics v7 Request");

    // Into the tree, down to request_api_key: its bytes and description show.
    t.keys(&["Tab", "j", "j", "j", "j"]);
    t.wait("request_api_key and its bytes", |s| {
        s.contains("field 0x0004..0x0006 (2B)") && s.contains("request_api_key")
    });

    // Filter: only Produce.
    t.keys(&["/", "produce"]);
    t.wait_for("✓ Enter applies");
    t.keys(&["Enter"]);
    t.wait("only Produce messages listed", |s| {
        let list: Vec<&str> = s
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('┗') && !l.starts_with('└'))
            .collect();
        s.contains("filter: produce")
            && !list.is_empty()
            && list.iter().all(|l| l.contains("Produce v"))
    });

    // A bad filter shows its error and column.
    t.keys(&["/", "C-u"]);
    t.keys(&["latency>"]);
    t.wait_for("✗ col");
    t.keys(&["Escape"]);
    t.wait("the bar to close", |s| !s.contains("✗ col"));

    // Help, closed by any key.
    t.keys(&["?"]);
    t.wait_for("kafkashark keys");
    t.keys(&["Escape"]);
    t.wait("the help to close", |s| !s.contains("kafkashark keys"));

    // Quit: the process exits and the terminal is back to the shell.
    t.keys(&["q"]);
    let s = t.wait_for("kafkashark exited 0");
    assert!(!s.contains("messages "), "the UI is still on screen:\n{s}");
    let alt = t.run(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(String::from_utf8_lossy(&alt.stdout).trim(), "0");
}

#[test]
fn seed_message_in_tmux() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let msg = format!(
        "{}/../captures/messages/produce-v12-request-minimal.hex",
        env!("CARGO_MANIFEST_DIR")
    );
    let t = Tmux::new("e2e-seed", "e2e");
    let cmd = format!("NO_COLOR=1 '{bin}' '{msg}'; echo \"kafkashark exited $?\"; sleep 60");
    t.start(120, 40, &cmd);
    t.wait("the seed's tree and all its bytes", |s| {
        s.contains("bytes: message (94 bytes)")
            && s.contains("0050  ff ff ff ff ff ff ff 00  00 00 00 00 00 00")
            && s.contains("ProduceRequest")
    });
    // Expand all: the RecordBatch fields appear.
    t.keys(&["e"]);
    t.wait_for("batchLength");
    t.keys(&["C-c"]);
    t.wait_for("kafkashark exited 0");
}

#[test]
fn without_a_terminal_the_ui_refuses_and_print_still_works() {
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let cap = a1();
    let out = Command::new(bin).arg(&cap).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a terminal"));
    let out = Command::new(bin)
        .args(["print", &cap, "-c", "1"])
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("ApiVersions v0 Request"));
    // No arguments: the usage, exit status 2.
    let out = Command::new(bin).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("live"));
}

/// `x` exports the selected message: the suggested name replaced by one
/// ending in `.hex`, the file holds the message's hex dump.
#[test]
fn export_the_selected_message_in_tmux() {
    let Some(t) = ui_on_a1("export", "export", 160, 45) else {
        return;
    };
    let out =
        std::env::temp_dir().join(format!("kafkashark-tui-export-{}.hex", std::process::id()));
    let _ = std::fs::remove_file(&out);
    // The first message: frame 4, kcat's ApiVersions v0 request (21 bytes after its size).
    t.keys(&["x"]);
    t.wait_for("export to: a1-kcat-produce-consume-group-frame4.txt");
    t.keys(&["C-u"]);
    t.wait("the name cleared", |s| !s.contains("frame4.txt"));
    t.keys(&["-l", out.to_str().expect("path")]);
    t.keys(&["Enter"]);
    t.wait("the notice", |s| {
        s.contains("exported ") && s.contains(" bytes to ")
    });
    t.keys(&["q"]);
    let dump = std::fs::read_to_string(&out).expect("the export");
    let _ = std::fs::remove_file(&out);
    // Size 21, api key 18 (ApiVersions), version 0, correlation id 0, then
    // the client id's length, 11: 25 bytes, a 16-byte row and a 9-byte one.
    let lines: Vec<&str> = dump.lines().collect();
    assert_eq!(lines.len(), 2, "{dump}");
    assert!(
        lines[0].starts_with("00000000  00 00 00 15 00 12 00 00  00 00 00 00 00 0b"),
        "{dump}"
    );
    assert!(lines[1].starts_with("00000010  "), "{dump}");
}

/// `w` saves the packets of the messages listed: filtered to Produce, saved
/// under a typed name (readline's Ctrl-U clears the suggested one), and the
/// file reopens with the same messages `print -Y produce` shows.
#[test]
fn save_the_filtered_messages_in_tmux() {
    let Some(t) = ui_on_a1("save", "save", 160, 45) else {
        return;
    };
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let cap = a1();
    let out =
        std::env::temp_dir().join(format!("kafkashark-tui-save-{}.pcapng", std::process::id()));
    let _ = std::fs::remove_file(&out);
    t.keys(&["/", "produce", "Enter"]);
    t.wait_for("filter: produce");
    // The suggested name comes from the capture's and the filter.
    t.keys(&["w"]);
    t.wait("the save bar", |s| {
        s.contains("save to: a1-kcat-produce-consume-group-filtered.pcapng")
            && s.contains("Enter saves the packets of the 6 messages listed")
    });
    t.keys(&["C-u"]);
    t.wait("the name cleared", |s| !s.contains("group-filtered.pcapng"));
    t.keys(&["-l", out.to_str().expect("path")]);
    t.keys(&["Enter"]);
    t.wait_for("saved 6 messages in");
    t.keys(&["q"]);
    let read = |file: &std::path::Path, filter: Option<&str>| {
        let mut c = Command::new(bin);
        c.arg("print").arg(file);
        if let Some(f) = filter {
            c.args(["-Y", f]);
        }
        let o = c.output().expect("print");
        // Frame numbers and stream indices are the new file's; the rest must match.
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| l.split_whitespace().skip(3).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
    };
    let want = read(std::path::Path::new(&cap), Some("produce"));
    assert_eq!(want.len(), 6);
    assert_eq!(read(&out, None), want);
    let _ = std::fs::remove_file(&out);
}

/// The filter history outlives the session: a filter applied, the UI quit,
/// the file in `$XDG_STATE_HOME/kafkashark/filter-history` holds it, and the
/// next session's Up brings it back; Tab completes a filter word.
#[test]
fn filter_history_and_completion_in_tmux() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let cap = a1();
    let state = std::env::temp_dir().join(format!("kafkashark-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    let file = state.join("kafkashark/filter-history");
    let cmd = format!(
        "XDG_STATE_HOME='{}' '{bin}' '{cap}'; echo \"kafkashark exited $?\"; sleep 60",
        state.display()
    );
    let t = Tmux::new("history", "history");
    t.start(120, 40, &cmd);
    t.wait_for("messages 157/157");
    // Tab: `lon` → `long`, the choices shown; `p` and Tab → `longpoll `.
    t.keys(&["/", "lon", "Tab"]);
    t.wait_for("Tab: long_poll longpoll");
    t.keys(&["p", "Tab", "or prod", "Tab", "Enter"]);
    t.wait_for("filter: longpoll or Produce");
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
    let kept = std::fs::read_to_string(&file).expect("the history file");
    assert_eq!(kept, "longpoll or Produce\n");
    drop(t);
    // A new session: Up recalls it.
    let t = Tmux::new("history2", "history");
    t.start(120, 40, &cmd);
    t.wait_for("messages 157/157");
    t.keys(&["/", "Up"]);
    t.wait_for("/longpoll or Produce");
    t.keys(&["Enter"]);
    t.wait_for("filter: longpoll or Produce");
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
    let _ = std::fs::remove_dir_all(&state);
}

/// `F` follows the selected message's connection: from the first Produce,
/// the list shows its connection's messages (both directions, the
/// ApiVersions and Metadata before the Produce too) under the connection's
/// title; `F` again returns to the Produce filter.
#[test]
fn follow_a_connection_in_tmux() {
    let Some(t) = ui_on_a1("follow", "follow", 120, 40) else {
        return;
    };
    t.keys(&["/", "produce", "Enter"]);
    t.wait_for("filter: produce");
    t.keys(&["F"]);
    // a1's first Produce is on stream 6 (127.0.0.1:35646), 6 messages.
    // The title and the status bar may come in different frames.
    let s = t.wait("the connection followed", |s| {
        s.contains("stream 6: 127.0.0.1:35646 ↔ 127.0.0.1:9092 · messages 6/157")
            && s.contains("filter: stream=6")
    });
    assert!(
        s.contains("ApiVersions v3") && s.contains("GetTelemetrySubscript"),
        "{s}"
    );
    t.keys(&["F"]);
    t.wait("back to the Produce filter", |s| {
        s.contains("filter: produce") && s.contains("messages 6/157")
    });
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
}

/// `C` chooses the list's columns and they outlive the session: written to
/// `$XDG_CONFIG_HOME/kafkashark/config` at exit, shown at the next start;
/// `--columns` sets them for one session without keeping them.
#[test]
fn columns_chosen_and_kept_in_tmux() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let cap = a1();
    let config = std::env::temp_dir().join(format!("kafkashark-config-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&config);
    let file = config.join("kafkashark/config");
    let run = |extra: &str| {
        format!(
            "XDG_CONFIG_HOME='{}' '{bin}' '{cap}' {extra}; echo \"kafkashark exited $?\"; sleep 60",
            config.display()
        )
    };
    let t = Tmux::new("columns", "columns");
    t.start(120, 40, &run(""));
    t.wait_for("messages 157/157");
    t.wait_for("From → To");
    t.keys(&["C"]);
    t.wait_for("columns: no,time,stream,route,api,kind,corr,size,latency,notes");
    t.keys(&[
        "C-u",
        "no,api,cli",
        "Tab",
        "_",
        "Tab",
        "topics,part",
        "Tab",
        "records",
        "Enter",
    ]);
    t.wait_for("No. API");
    let screen = t.wait_for("Partitions Records");
    assert!(!screen.contains("From → To"), "{screen}");
    assert!(screen.contains("Client id"), "{screen}");
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
    let kept = std::fs::read_to_string(&file).expect("the config file");
    assert_eq!(
        kept,
        "columns = no,api,client_id,topics,partitions,records\n"
    );
    drop(t);
    // The next session shows them; --columns overrides them for its own.
    let t = Tmux::new("columns2", "columns");
    t.start(120, 40, &run(""));
    t.wait_for("Partitions Records");
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
    drop(t);
    let t = Tmux::new("columns3", "columns");
    t.start(120, 40, &run("--columns no,stream,api"));
    let screen = t.wait_for("No. Str API");
    assert!(!screen.contains("Partitions"), "{screen}");
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "columns = no,api,client_id,topics,partitions,records\n"
    );
    let _ = std::fs::remove_dir_all(&config);
}
