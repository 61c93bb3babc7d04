//! Every Kafka message in the public captures (../shared/captures/public) and the
//! recorded ones (../shared/captures/recorded) decodes without a decode error or
//! warning, and every response whose request was captured is paired — but for
//! the messages listed in `KNOWN_MALFORMED`, each with why.
//!
//! Skips cleanly when ../shared is absent.

use std::path::{Path, PathBuf};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageInfo, Notice, Output};
use kafkashark::capture::{FileSource, FrameSource};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::PipelineConfig;

fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures");
    p.is_dir().then_some(p)
}

/// Broker ports used by the public captures (SOURCES.md).
const PORTS: &[u16] = &[9092, 36333, 1643, 19092];

struct Run {
    messages: Vec<MessageInfo>,
    unanswered: usize,
}

fn analyze(path: &Path) -> Run {
    let mut src = FileSource::open(path.to_str().expect("utf-8 path")).expect("open capture");
    let cfg = AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(PORTS.to_vec())),
        ..AnalyzerConfig::default()
    };
    let mut a = Analyzer::new(cfg);
    let mut out = Vec::new();
    while let Some(f) = src.next_frame().expect("readable capture") {
        a.push(&f, &mut out);
    }
    a.finish(&mut out);
    let mut run = Run {
        messages: Vec::new(),
        unanswered: 0,
    };
    for o in out {
        match o {
            Output::Message(m) => run.messages.push(m.info),
            Output::Notice(n) if matches!(*n, Notice::Unanswered { .. }) => run.unanswered += 1,
            Output::Notice(_) => {}
        }
    }
    run
}

fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    v.sort();
    v
}

#[test]
fn public_and_recorded_captures_decode_without_errors() {
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("captures")];
    match shared() {
        Some(root) => dirs.extend([root.join("public"), root.join("recorded")]),
        None => eprintln!("../shared/captures not present: checking captures/ only"),
    }
    let mut failures = Vec::new();
    let mut total = 0;
    for dir in dirs {
        for path in captures(&dir) {
            let run = analyze(&path);
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            eprintln!(
                "{name}: {} messages, {} unanswered",
                run.messages.len(),
                run.unanswered
            );
            assert!(!run.messages.is_empty(), "{name}: no Kafka message found");
            total += run.messages.len();
            for m in &run.messages {
                if let Some(e) = &m.decode_error {
                    failures.push(format!(
                        "{name} frame {} stream {} {:?} {:?} v{:?} corr {:?}: {e}",
                        m.frame,
                        m.stream,
                        m.kind,
                        m.api_name(),
                        m.api_version,
                        m.correlation_id
                    ));
                }
                if let Some(w) = &m.decode_warning {
                    failures.push(format!("{name} frame {} warning: {w}", m.frame));
                }
                if m.kind == Kind::Response && !m.paired && !m.inferred {
                    failures.push(format!("{name} frame {} response not paired", m.frame));
                }
            }
        }
    }
    eprintln!("{total} messages");
    // Every remaining problem must be one of the genuinely malformed messages
    // listed in KNOWN_MALFORMED, and every listed one must still be found.
    let mut unexplained = Vec::new();
    let mut seen = vec![false; KNOWN_MALFORMED.len()];
    for f in &failures {
        match KNOWN_MALFORMED.iter().position(|k| {
            f.starts_with(&format!("{} frame {} ", k.file, k.frame)) && f.contains(k.error)
        }) {
            Some(i) => seen[i] = true,
            None => unexplained.push(f.clone()),
        }
    }
    assert!(
        unexplained.is_empty(),
        "{} problems:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
    let shared_present = shared().is_some();
    let stale: Vec<_> = KNOWN_MALFORMED
        .iter()
        .zip(&seen)
        .filter(|(k, s)| !**s && (shared_present || !k.shared_only))
        .map(|(k, _)| format!("{} frame {}: {}", k.file, k.frame, k.error))
        .collect();
    assert!(
        stale.is_empty(),
        "listed as malformed but decoded cleanly:\n{}",
        stale.join("\n")
    );
}

/// A message in the shared captures that is genuinely not what the protocol
/// says: malformed, unpaired, or decoded with a warning.
struct Known {
    /// True when the capture exists only in ../shared (not in captures/).
    shared_only: bool,
    file: &'static str,
    frame: u64,
    error: &'static str,
    #[allow(dead_code)]
    why: &'static str,
}

const FAKE_RESPONDER: &str = "the test's fake responder writes the request's api key and version \
     where the correlation id belongs, so no request matches it";

const KNOWN_MALFORMED: &[Known] = &[
    Known { shared_only: true, file: "ndpi__kafka.pcapng", frame: 1, error: "warning: 4 bytes after the body",
        why: "librdkafka sends ApiVersions v0 with an empty int32 array after the (empty) body; brokers ignore it" },
    Known { shared_only: true, file: "ndpi__kafka.pcapng", frame: 13, error: "warning: 4 bytes after the body", why: "as frame 1" },
    Known { shared_only: true, file: "ndpi__kafka.pcapng", frame: 21, error: "warning: 4 bytes after the body", why: "as frame 1" },
    Known { shared_only: true, file: "ndpi__kafka.pcapng", frame: 22, error: "warning: 4 bytes after the body", why: "as frame 1" },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__controlled-shutdown.pcapng", frame: 8,
        error: "response without a captured request", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__controlled-shutdown.pcapng", frame: 8,
        error: "response not paired", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__string-type.pcapng", frame: 26,
        error: "TopicNames: invalid length -2",
        why: "a hand-built DeleteTopics v0 whose topic name has length -2 (only -1 means null) and no TimeoutMs" },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 6,
        error: "unknown api key 10000", why: "deliberately unknown api key" },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 8,
        error: "response without a captured request", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 8,
        error: "response not paired", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 20,
        error: "response without a captured request", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 20,
        error: "response not paired", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 30,
        error: "ControlledShutdown v1000 is beyond the known versions", why: "deliberately unknown version" },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 32,
        error: "response without a captured request", why: FAKE_RESPONDER },
    Known { shared_only: true, file: "wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng", frame: 32,
        error: "response not paired", why: FAKE_RESPONDER },
    Known { shared_only: false, file: "a3-kafka-python-admin.pcap", frame: 152,
        error: "tagged_fields: truncated",
        why: "tansu 0.6.0 omits the final tagged-field count of DescribeUserScramCredentials v0 responses" },
    Known { shared_only: false, file: "a5-ipv6-confluent-admin-produce-consume.pcap", frame: 27,
        error: "warning: 3 bytes after the body",
        why: "librdkafka 2.16's AdminClient Metadata v12 request carries 01 00 00 after the body: it wrote the \
              empty topic array as a classic int32 count (00 00 00 00) in a flexible version; read by the \
              schema the topics are null and 3 bytes remain, which brokers ignore" },
    Known { shared_only: false, file: "a5-ipv6-confluent-admin-produce-consume.pcap", frame: 155,
        error: "warning: 3 bytes after the body", why: "as frame 27" },
    Known { shared_only: false, file: "b1-port-19092-mixed-clients.pcap", frame: 296,
        error: "warning: 3 bytes after the body", why: "as a5 frame 27 (confluent-kafka AdminClient Metadata v12)" },
];
