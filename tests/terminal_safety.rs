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

use std::net::{Ipv4Addr, SocketAddr};

use kafkashark::capture::Timestamp;
use kafkashark::flow::Ports;
use kafkashark::harness;
use kafkashark::kafka::tree::{escape_text, render_text};
use kafkashark::model::{Analyzer, AnalyzerConfig, Output};
use kafkashark::pipeline::PipelineConfig;
use kafkashark::stats::{Stats, StatsConfig};
use support::{Format, Link, Seg, ACK, PSH, SYN};

/// The payload every hostile string carries.
pub const EVIL: &[u8] = b"\x1b[2J\x1b]0;pwned\x07";

fn framed(body: &[u8]) -> Vec<u8> {
    let mut m = (body.len() as i32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

fn str16(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s);
}

/// Hostile strings: client id, topic, record key, value and header.
pub fn client_id() -> Vec<u8> {
    [b"cli".as_slice(), EVIL, b"\r\x08\xff"].concat()
}

fn topic() -> Vec<u8> {
    [b"top".as_slice(), EVIL, b"\x9b"].concat()
}

/// A Produce v3 request and its response, all strings hostile.
pub fn produce_exchange() -> Vec<(bool, Vec<u8>)> {
    // Records built by the harness: [klen, key, vlen, value, hlen, header].
    let key = [b"k".as_slice(), EVIL].concat();
    let value = [b"v".as_slice(), EVIL, b"\xff\xfe\x00\x7f"].concat();
    let header = [b"h".as_slice(), b"\x1b[31m\x07"].concat();
    let mut spec = vec![key.len() as u8];
    spec.extend_from_slice(&key);
    spec.push(value.len() as u8);
    spec.extend_from_slice(&value);
    spec.push(header.len() as u8);
    spec.extend_from_slice(&header);
    let (n, recs) = harness::records_from(&spec);
    let batch = harness::record_batch(0, n, &recs);

    let mut req = Vec::new();
    req.extend_from_slice(&0i16.to_be_bytes()); // Produce
    req.extend_from_slice(&3i16.to_be_bytes()); // v3
    req.extend_from_slice(&1i32.to_be_bytes()); // correlation id
    str16(&mut req, &client_id());
    str16(&mut req, &[b"tx".as_slice(), EVIL].concat()); // TransactionalId
    req.extend_from_slice(&1i16.to_be_bytes()); // Acks
    req.extend_from_slice(&1000i32.to_be_bytes()); // TimeoutMs
    req.extend_from_slice(&1i32.to_be_bytes()); // TopicData: 1
    str16(&mut req, &topic());
    req.extend_from_slice(&1i32.to_be_bytes()); // PartitionData: 1
    req.extend_from_slice(&0i32.to_be_bytes()); // Index
    req.extend_from_slice(&(batch.len() as i32).to_be_bytes());
    req.extend_from_slice(&batch);

    let mut resp = 1i32.to_be_bytes().to_vec(); // correlation id
    resp.extend_from_slice(&1i32.to_be_bytes()); // Responses: 1
    str16(&mut resp, &topic());
    resp.extend_from_slice(&1i32.to_be_bytes()); // PartitionResponses: 1
    resp.extend_from_slice(&0i32.to_be_bytes()); // Index
    resp.extend_from_slice(&6i16.to_be_bytes()); // NOT_LEADER_OR_FOLLOWER
    resp.extend_from_slice(&0i64.to_be_bytes()); // BaseOffset
    resp.extend_from_slice(&(-1i64).to_be_bytes()); // LogAppendTimeMs
    resp.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    vec![(true, framed(&req)), (false, framed(&resp))]
}

/// The exchange as TCP segments with a handshake.
pub fn segments(msgs: &[(bool, Vec<u8>)]) -> Vec<Seg> {
    let c: SocketAddr = (Ipv4Addr::LOCALHOST, 40_000).into();
    let b: SocketAddr = (Ipv4Addr::LOCALHOST, 9092).into();
    let (mut cs, mut bs) = (1000u32, 5000u32);
    let mut t = 0u32;
    let mut seg = |src, dst, seq, ack, flags, payload: Vec<u8>| {
        t += 1;
        Seg {
            frame: 0,
            ts: Timestamp::new(1_700_000_000, t * 1000),
            src,
            dst,
            seq,
            ack,
            flags,
            payload: payload.into(),
        }
    };
    let mut v = vec![
        seg(c, b, cs, 0, SYN, vec![]),
        seg(b, c, bs, cs + 1, SYN | ACK, vec![]),
    ];
    cs += 1;
    bs += 1;
    v.push(seg(c, b, cs, bs, ACK, vec![]));
    for (to_broker, m) in msgs {
        if *to_broker {
            v.push(seg(c, b, cs, bs, PSH | ACK, m.clone()));
            cs += m.len() as u32;
        } else {
            v.push(seg(b, c, bs, cs, PSH | ACK, m.clone()));
            bs += m.len() as u32;
        }
    }
    v
}

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
    let mut an = Analyzer::new(Stats::analyzer_config(AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(vec![9092])),
        keep_trees: true,
        ..AnalyzerConfig::default()
    }));
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
            let s = serde_json::to_string(&d.root.to_json()).expect("serialises");
            // serde_json escapes control characters; the text is plain ASCII-safe JSON.
            assert!(!s.as_bytes().contains(&0x1b), "raw ESC in JSON");
            let back: serde_json::Value = serde_json::from_str(&s).expect("valid JSON");
            assert!(back.is_object());
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
