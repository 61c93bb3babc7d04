//! Terminal safety, in the engine: captured bytes never reach a terminal raw.
//!
//! A capture is built whose client id, topic names, record keys, values and
//! header keys hold escape sequences, control characters and invalid UTF-8
//! (`"\x1b[2J\x1b]0;pwned\x07"`, `\r`, `\x08`, `\xff`). Everything the views
//! print is checked: the text tree (`print -V`, `decode`), the stats report
//! (`stats`, text and JSON) and the JSON trees (`print --format jsonl -V`,
//! `decode --format json`) — no ESC, BEL or other C0/C1 control byte in text,
//! and valid JSON whatever the bytes. The same checks on the binary's real
//! output, and on the terminal UI in tmux, are in ui/tests/terminal_safety.rs.

mod support;

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
use kafkashark::flow::Ports;
use kafkashark::kafka::tree::{escape_text, render_text};
use kafkashark::pipeline::PipelineConfig;
use kafkashark::stats::{Stats, StatsConfig};
use kafkashark_harness as harness;
use support::{Format, Link};

use support::hostile::*;

/// No byte that drives a terminal: C0 controls other than newline, DEL, or C1
/// controls (U+0080..U+009F, which some terminals honour as CSI etc.).
fn assert_inert(what: &str, s: &str) {
    for (i, c) in s.char_indices() {
        let bad = (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c);
        assert!(
            !bad,
            "{what}: control character {:?} at byte {i}: …{}…",
            c,
            s[i.saturating_sub(40)..(i + 10).min(s.len())].escape_debug()
        );
    }
}

fn analyze() -> (Vec<Output>, Stats) {
    let cap = support::write_capture(
        "terminal",
        &segments(&produce_exchange()),
        &Link::Ethernet(vec![]),
        Format::PcapNanos,
    );
    let mut src = kafkashark::capture::FileSource::open(cap.path_str()).expect("open");
    let mut cfg = Stats::analyzer_config(AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(vec![9092])),
        keep_trees: true,
        ..AnalyzerConfig::default()
    });
    // Every tree kept (`stats` alone keeps only those its scan cannot replace).
    cfg.tree_filter = None;
    let mut an = Analyzer::new(cfg);
    let mut out = Vec::new();
    use kafkashark::capture::FrameSource;
    while let Some(f) = src.next_frame().expect("read") {
        an.push(&f, &mut out);
    }
    an.finish(&mut out);
    let mut stats = Stats::new(StatsConfig::default());
    for o in &out {
        stats.push(o);
    }
    (out, stats)
}

#[test]
fn the_hostile_exchange_decodes_whole() {
    let (out, _) = analyze();
    let msgs: Vec<_> = out
        .iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(msgs.len(), 2);
    for m in &msgs {
        assert_eq!(m.info.decode_error, None);
        let d = m.decoded.as_ref().expect("tree kept");
        harness::check_decoded(&m.raw.bytes, d);
    }
    // The client id is kept (lossily) but escapes when shown.
    let cid = msgs[0].info.client_id.as_deref().expect("client id");
    assert!(cid.contains('\u{1b}'));
    assert_inert("client id", &escape_text(cid));
}

#[test]
fn text_trees_are_inert() {
    let (out, _) = analyze();
    for o in &out {
        if let Output::Message(m) = o {
            let d = m.decoded.as_ref().expect("tree");
            let text = render_text(&d.root);
            assert_inert("text tree", &text);
            // The hostile bytes are shown, escaped.
            assert!(text.contains(r"\u{1b}[2J\u{1b}]0;pwned\u{7}"), "{text}");
            for s in &d.sources {
                assert_inert("byte source name", &escape_text(&s.name));
            }
        }
    }
}

#[test]
fn json_trees_are_valid_whatever_the_bytes() {
    let (out, _) = analyze();
    for o in &out {
        if let Output::Message(m) = o {
            let d = m.decoded.as_ref().expect("tree");
            // The JSON `print` writes itself (not serde_json's): no raw
            // control characters, valid, and the same value as `to_json`.
            let mut s = Vec::new();
            d.root.write_json(&mut s);
            assert!(
                !s.iter().any(|&b| b < 0x20 || b == 0x7f),
                "raw control byte in JSON"
            );
            let back: serde_json::Value = serde_json::from_slice(&s).expect("valid JSON");
            assert_eq!(back, d.root.to_json());
        }
    }
}

#[test]
fn stats_text_is_inert_and_json_valid() {
    let (_, stats) = analyze();
    let r = stats.report();
    let text = r.to_text("capture\x1b]0;title\x07.pcap");
    assert_inert("stats text", &text);
    let json = serde_json::to_string(&r).expect("stats JSON");
    assert!(!json.as_bytes().contains(&0x1b));
    serde_json::from_str::<serde_json::Value>(&json).expect("valid JSON");
}

#[test]
fn escape_text_covers_c0_c1_and_del() {
    let all: String = (0u32..0x200).filter_map(char::from_u32).collect();
    assert_inert("escape_text", &escape_text(&all).replace('\n', " "));
}
