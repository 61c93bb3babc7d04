//! The reorder buffer that lets `print` show a request's final pairing: output
//! stays in capture order, every answered request points at its response and
//! back, and a small cap never loses or reorders a message.

use kafkashark::capture::{FileSource, FrameSource};
use kafkashark::kafka::decode::Kind;
use kafkashark::model::{Analyzer, AnalyzerConfig, MessageInfo, Output, Reorder};

fn run(path: &str, cap: usize) -> Vec<MessageInfo> {
    let mut src = FileSource::open(path).expect("open");
    let mut a = Analyzer::new(AnalyzerConfig::default());
    let mut r = Reorder::new(cap);
    let (mut out, mut ready) = (Vec::new(), Vec::new());
    while let Some(f) = src.next_frame().expect("read") {
        a.push(&f, &mut out);
        for o in out.drain(..) {
            r.push(o, &mut ready);
        }
    }
    a.finish(&mut out);
    for o in out.drain(..) {
        r.push(o, &mut ready);
    }
    r.flush(&mut ready);
    ready
        .into_iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(m.info),
            Output::Notice(_) => None,
        })
        .collect()
}

fn capture(name: &str) -> String {
    format!("{}/captures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn requests_leave_paired_and_in_capture_order() {
    let msgs = run(&capture("a2-confluent-compression-codecs.pcap"), 65_536);
    assert_eq!(msgs.len(), 74);
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m.index, i as u64, "capture order");
        assert!(m.paired, "frame {} not paired", m.frame);
        let peer = &msgs[m.peer.expect("peer") as usize];
        assert_eq!(
            peer.peer,
            Some(m.index),
            "frame {}: pairing is mutual",
            m.frame
        );
        assert_ne!(peer.kind, m.kind);
        assert_eq!(peer.correlation_id, m.correlation_id);
        assert_eq!(peer.stream, m.stream);
        if m.kind == Kind::Response {
            assert!(
                peer.frame <= m.first_frame,
                "a response follows its request"
            );
        }
    }
}

#[test]
fn a_tiny_cap_loses_nothing_and_keeps_order() {
    let full = run(&capture("a1-kcat-produce-consume-group.pcap"), 65_536);
    let tiny = run(&capture("a1-kcat-produce-consume-group.pcap"), 1);
    assert_eq!(full.len(), tiny.len());
    for (a, b) in full.iter().zip(&tiny) {
        assert_eq!(a.index, b.index);
        if a.kind == Kind::Response {
            assert_eq!(a, b, "responses are final when they arrive");
        }
    }
    // With the cap, requests leave before their responses arrive: unpaired so far.
    let requests_paired = tiny
        .iter()
        .filter(|m| m.kind == Kind::Request && m.paired)
        .count();
    assert!(
        requests_paired
            < full
                .iter()
                .filter(|m| m.kind == Kind::Request && m.paired)
                .count()
    );
}
