//! Kafka over TLS through the whole pipeline, on the real captures of
//! `captures/tls/` (real clients through a TLS-terminating proxy in front of
//! a real broker, with the proxy's plaintext side recorded as a twin):
//!
//! - with the proxy's key log, every connection the proxy served decodes to
//!   the same Kafka messages as its plaintext twin: the same APIs,
//!   versions, correlation ids, in the same order per direction, paired
//!   the same (TLS 1.3: three suites; TLS 1.2: the AEAD and CBC suites);
//! - each message's frames are segments of its own direction that carried
//!   TLS records;
//! - without a key log, every connection is summarised (hellos, `no key
//!   for client random …` with the ClientHello's random, what each
//!   direction carried) and nothing is decoded as Kafka; with the clients'
//!   key log, which lacks librdkafka's sessions, those say so and the
//!   others decrypt;
//! - a wrong secret stops the direction at its first protected record.
//!
//! Skips cleanly when a capture is missing.

#[allow(dead_code)] // The wire.tsv helpers; this file reads captures only.
mod wire;

use std::collections::{BTreeMap, HashMap};

use std::path::{Path, PathBuf};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Notice, Output};
use kafkashark::capture::{FileSource, FrameSource, Polled};
use kafkashark::pipeline::PipelineConfig;
use kafkashark::stats::{Stats, StatsConfig};
use kafkashark::tls::conn::{Stop, TlsEvent};
use kafkashark::tls::keylog::{KeyLog, Keys};
use kafkashark::vocab::Direction;

fn capture(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures/tls")
        .join(name);
    p.is_file().then_some(p)
}

fn keys_from(bytes: &[u8]) -> Keys {
    let mut k = KeyLog::new();
    assert!(k.feed(bytes).is_empty());
    assert!(k.finish().is_empty());
    Keys::new(k, false)
}

fn keys(path: &Path) -> Keys {
    keys_from(&std::fs::read(path).expect("key log"))
}

fn run(cap: &Path, keys: Keys) -> Vec<Output> {
    let cfg = AnalyzerConfig {
        pipeline: PipelineConfig {
            tls_keys: keys,
            ..PipelineConfig::default()
        },
        ..AnalyzerConfig::default()
    };
    wire::outputs(cap, cfg)
}

/// A connection's messages: requests (api, version, correlation id) and
/// responses (the same and whether paired), each in stream order.
type Exchanges = (Vec<(i16, i16, i32)>, Vec<(i16, i16, i32, bool)>);

/// Per stream, in order of opening, its messages (streams without any left out).
fn exchanges(outs: &[Output]) -> Vec<Exchanges> {
    let mut by: BTreeMap<u64, Exchanges> = BTreeMap::new();
    for o in outs {
        let Output::Message(m) = o else { continue };
        let i = &m.info;
        let api = i.api_key.map_or(-1, |a| a.0);
        let (v, c) = (i.api_version.unwrap_or(-1), i.correlation_id.unwrap_or(-1));
        let e = by.entry(i.stream).or_default();
        match m.raw.dir {
            Direction::ClientToBroker => e.0.push((api, v, c)),
            Direction::BrokerToClient => e.1.push((api, v, c, i.paired)),
        }
    }
    by.into_values().collect()
}

/// The TLS events per stream.
fn tls_events(outs: &[Output]) -> BTreeMap<u64, Vec<TlsEvent>> {
    let mut by: BTreeMap<u64, Vec<TlsEvent>> = BTreeMap::new();
    for o in outs {
        if let Some(Notice::Tls { stream, what, .. }) = o.as_notice() {
            by.entry(*stream).or_default().push(what.clone());
        }
    }
    by
}

/// The twin's connections and the decrypted ones are the same: matched by
/// their requests (the same, in the same order), each decrypted
/// connection's responses are its twin's, but for a last response the broker
/// sent after the client had gone (the proxy could not deliver it; the
/// request is then reported unanswered, as are those the broker never
/// answered in both).
fn same_connections(tls: &str, plain: &str) {
    let (Some(tls), Some(plain)) = (capture(tls), capture(plain)) else {
        return;
    };
    let k = keys(&PathBuf::from(format!("{}.server.keys", tls.display())));
    let outs = run(&tls, k);
    let got = exchanges(&outs);
    let twin = run(&plain, Keys::default());
    let mut want = exchanges(&twin);
    assert!(!want.is_empty());
    assert_eq!(got.len(), want.len(), "{}", tls.display());
    let unanswered = |outs: &[Output]| {
        (outs.iter())
            .filter(|o| matches!(o.as_notice(), Some(Notice::Unanswered { .. })))
            .count()
    };
    let mut undelivered = 0;
    for (requests, responses) in &got {
        let at = want
            .iter()
            .position(|(q, r)| q == requests && r.starts_with(responses))
            .unwrap_or_else(|| panic!("{}: no twin for {requests:?}", tls.display()));
        let (_, twin) = want.remove(at);
        assert!(twin.len() - responses.len() <= 1, "{twin:?} {responses:?}");
        undelivered += twin.len() - responses.len();
    }
    // Requests the broker never answered are unanswered in both.
    assert_eq!(
        undelivered + unanswered(&twin),
        unanswered(&outs),
        "{}",
        tls.display()
    );
    // Each decrypted stream said it was decrypting, and nothing stopped early.
    let ev = tls_events(&outs);
    for o in &outs {
        if let Output::Message(m) = o {
            let e = &ev[&m.info.stream];
            assert!(e.contains(&TlsEvent::Decrypting), "{e:?}");
            assert!(
                !e.iter().any(|x| matches!(x, TlsEvent::Stopped { .. })),
                "{e:?}"
            );
        }
    }
}

#[test]
fn tls13_decodes_like_its_plaintext_twin() {
    same_connections("d1-tls13.pcap", "d1-tls13-plain.pcap");
}

#[test]
fn tls12_decodes_like_its_plaintext_twin() {
    same_connections("d2-tls12.pcap", "d2-tls12-plain.pcap");
}

/// The frames a message names carried its direction's TLS bytes: the
/// message is timed by the records that carried it.
#[test]
fn messages_keep_the_frames_of_their_records() {
    let Some(cap) = capture("d1-tls13.pcap") else {
        return;
    };
    let k = keys(&cap.with_extension("pcap.server.keys"));
    let outs = run(&cap, k);
    // Each frame's TCP source port, read independently of the pipeline
    // (raw pcap, Ethernet or loopback IPv4).
    let bytes = std::fs::read(&cap).unwrap();
    let mut ports: HashMap<u64, (u16, usize)> = HashMap::new();
    let (mut at, mut n) = (24usize, 1u64);
    let link = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
    let l2 = if link == 1 { 14 } else { 4 };
    while at + 16 <= bytes.len() {
        let incl = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let f = &bytes[at + 16..at + 16 + incl];
        let ip = &f[l2..];
        let ihl = usize::from(ip[0] & 15) * 4;
        let tcp = &ip[ihl..];
        let off = usize::from(tcp[12] >> 4) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        ports.insert(n, (u16::from_be_bytes([tcp[0], tcp[1]]), total - ihl - off));
        at += 16 + incl;
        n += 1;
    }
    let mut checked = 0;
    for o in &outs {
        let Output::Message(m) = o else { continue };
        let sender = match m.raw.dir {
            Direction::ClientToBroker => m.info.client.port(),
            Direction::BrokerToClient => m.info.broker.port(),
        };
        for f in [m.raw.first_frame, m.raw.last_frame] {
            let (port, payload) = ports[&f];
            assert_eq!(port, sender, "frame {f}");
            assert!(payload > 0, "frame {f}");
        }
        assert!(m.raw.first_ts <= m.raw.last_ts);
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
}

/// Each decrypted message names the TLS records it came from, counted in
/// its direction, as tshark counts them: a message carried by one frame
/// lies in a record that frame completed (tshark lists the records each
/// frame completes, its own TLS reading); every message names at least
/// one, in stream order.
#[test]
fn messages_name_the_tls_records_they_came_from() {
    let Some(cap) = capture("d1-tls13.pcap") else {
        return;
    };
    let tshark = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&cap)
        .args(["-d", "tcp.port==9093,tls", "-Y", "tls"])
        .args(["-T", "fields", "-e", "frame.number", "-e", "tcp.stream"])
        .args(["-e", "tcp.srcport", "-e", "tls.record.length"])
        .output();
    let Some(o) = tshark.ok().filter(|o| o.status.success()) else {
        return;
    };
    // Per frame, the records it completed: (first, last) counted per
    // (stream, sender's port).
    let mut count: HashMap<(u64, u16), u64> = HashMap::new();
    let mut completed: HashMap<u64, (u64, u64)> = HashMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (frame, stream, port) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        let n = f[3].split(',').filter(|l| !l.is_empty()).count() as u64;
        let c = count.entry((stream, port)).or_default();
        if n > 0 {
            completed.insert(frame, (*c + 1, *c + n));
        }
        *c += n;
    }
    let k = keys(&cap.with_extension("pcap.server.keys"));
    let outs = run(&cap, k);
    let (mut one_frame, mut last) = (0, HashMap::new());
    for o in &outs {
        let Output::Message(m) = o else { continue };
        let r = &m.raw.tls_records;
        assert_eq!(r.first().map(|&(at, _)| at), Some(0), "{:?}", m.info);
        assert!(r.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        let prev = last.insert((m.raw.stream, m.raw.dir), r.last().unwrap().1);
        assert!(prev.is_none_or(|p| p <= r[0].1), "stream order");
        if m.raw.provenance.is_empty() && r.len() == 1 {
            let (lo, hi) = completed[&m.raw.first_frame];
            assert!(
                (lo..=hi).contains(&r[0].1),
                "frame {}: {r:?} not in {lo}..={hi}",
                m.raw.first_frame
            );
            one_frame += 1;
        }
    }
    assert!(one_frame > 100, "{one_frame}");
}

#[test]
fn without_keys_connections_are_summarised_and_nothing_decoded() {
    for name in ["d1-tls13.pcap", "d2-tls12.pcap"] {
        let Some(cap) = capture(name) else {
            continue;
        };
        let outs = run(&cap, Keys::default());
        assert!(exchanges(&outs).is_empty(), "{name}");
        let ev = tls_events(&outs);
        assert!(ev.len() >= 12, "{name}: {}", ev.len());
        // The randoms of the key log's sessions, to check NoKey's.
        let log = std::fs::read_to_string(cap.with_extension("pcap.server.keys")).unwrap();
        for (stream, e) in &ev {
            let hello = e.iter().any(|x| matches!(x, TlsEvent::ClientHello { .. }));
            assert!(hello, "{name} s{stream}: {e:?}");
            let closed = e.iter().find_map(|x| match x {
                TlsEvent::Closed { records, .. } => Some(*records),
                _ => None,
            });
            let records = closed.expect("closed");
            assert!(
                records[0] > 0 && records[1] > 0,
                "{name} s{stream}: {records:?}"
            );
            let refused = e.iter().any(|x| {
                matches!(
                    x,
                    TlsEvent::Alert {
                        level: 2,
                        description: 40,
                        ..
                    }
                )
            });
            let random = e.iter().find_map(|x| match x {
                TlsEvent::NoKey { client_random } => Some(*client_random),
                _ => None,
            });
            match random {
                Some(r) => {
                    let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
                    assert!(log.contains(&hex), "{name} s{stream}");
                }
                // A refused handshake never gets as far as its keys.
                None => assert!(refused, "{name} s{stream}: {e:?}"),
            }
        }
    }
}

/// The clients' key log lacks librdkafka's sessions: those connections say
/// so, the others decrypt.
#[test]
fn a_key_log_missing_connections_says_which() {
    let Some(cap) = capture("d1-tls13.pcap") else {
        return;
    };
    let outs = run(&cap, keys(&cap.with_extension("pcap.client.keys")));
    let ev = tls_events(&outs);
    let ids: HashMap<u64, String> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some((m.info.stream, m.info.client_id.clone()?)),
            _ => None,
        })
        .collect();
    let (mut missing, mut decrypted) = (0, 0);
    for (stream, e) in &ev {
        if e.iter().any(|x| matches!(x, TlsEvent::NoKey { .. })) {
            missing += 1;
            assert!(!ids.contains_key(stream));
        } else {
            assert!(e.contains(&TlsEvent::Decrypting), "s{stream}: {e:?}");
            decrypted += 1;
        }
    }
    assert!(missing > 0 && decrypted > 0, "{missing} {decrypted}");
    // Nothing decoded on a stream without its key: librdkafka's client ids
    // (tls-rdk-…), which the proxy's full key log decrypts, are absent here.
    assert!(ids.values().all(|c| !c.starts_with("tls-rdk")), "{ids:?}");
    assert!(ids.values().any(|c| c.starts_with("tls-kp")), "{ids:?}");
    let all = run(&cap, keys(&cap.with_extension("pcap.server.keys")));
    let rdk = all.iter().any(|o| {
        matches!(o, Output::Message(m) if m.info.client_id.as_deref().is_some_and(|c| c.starts_with("tls-rdk")))
    });
    assert!(rdk, "the full key log decrypts librdkafka's connections");
}

/// A wrong secret: the first protected record of each direction does not
/// open, the direction stops there, nothing is decoded.
#[test]
fn a_wrong_secret_stops_at_the_first_protected_record() {
    let Some(cap) = capture("d1-tls13.pcap") else {
        return;
    };
    let text = std::fs::read_to_string(cap.with_extension("pcap.server.keys")).unwrap();
    // Every secret's first hex digit changed.
    let bad: String = text
        .lines()
        .map(|l| {
            let mut w: Vec<String> = l.split(' ').map(str::to_string).collect();
            if let Some(s) = w.get_mut(2) {
                let first = if s.starts_with('0') { "1" } else { "0" };
                s.replace_range(0..1, first);
            }
            w.join(" ") + "\n"
        })
        .collect();
    let outs = run(&cap, keys_from(bad.as_bytes()));
    assert!(exchanges(&outs).is_empty());
    let ev = tls_events(&outs);
    let mut stopped = 0;
    for e in ev.values() {
        for x in e {
            if let TlsEvent::Stopped { why, .. } = x {
                assert!(matches!(why, Stop::Decrypt(_)), "{why}");
                stopped += 1;
            }
        }
        let plain = e.iter().find_map(|x| match x {
            TlsEvent::Closed { plaintext, .. } => Some(*plaintext),
            _ => None,
        });
        assert_eq!(plain, Some([0, 0]));
    }
    assert!(stopped >= ev.len(), "{stopped}");
}

/// `stats`' TLS table of d2 with the proxy's key log: every connection,
/// the suites the recording had the proxy choose in turn, each decrypted
/// but for the three refused handshakes, which show their alert; the JSON
/// and the text have the same rows.
#[test]
fn stats_tls_table() {
    let Some(cap) = capture("d2-tls12.pcap") else {
        return;
    };
    let k = keys(&cap.with_extension("pcap.server.keys"));
    let cfg = Stats::analyzer_config(AnalyzerConfig {
        pipeline: PipelineConfig {
            tls_keys: k,
            ..PipelineConfig::default()
        },
        ..AnalyzerConfig::default()
    });
    let mut stats = Stats::new(StatsConfig::default());
    for o in wire::outputs(&cap, cfg) {
        stats.push(&o);
    }
    let report = stats.report();
    let rows = &report.tls;
    assert_eq!(rows.len(), 15);
    let mut suites = std::collections::BTreeSet::new();
    for t in rows {
        assert_eq!(t.broker, "127.0.0.1:9093");
        if t.keys == "no handshake" {
            assert_eq!(t.alerts, ["server fatal handshake_failure"], "{t:?}");
            assert!(t.offered && t.suite.is_none());
            continue;
        }
        assert_eq!(t.keys, "decrypted", "{t:?}");
        assert_eq!(t.version.as_deref(), Some("TLS 1.2"));
        assert!(t.handshake_ms.is_some_and(|ms| ms > 0.0 && ms < 1000.0));
        assert!(t.decrypted[0] > 0 && t.decrypted[1] > 0, "{t:?}");
        assert!(t.bytes[0] > t.decrypted[0] && t.bytes[1] > t.decrypted[1]);
        suites.insert(t.suite.clone().unwrap());
    }
    let want = [
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_RSA_WITH_AES_256_CBC_SHA256",
    ];
    assert_eq!(suites.into_iter().collect::<Vec<_>>(), want);
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["tls"].as_array().map(Vec::len), Some(15));
    assert_eq!(
        json["tls"][3]["alerts"][0],
        "server fatal handshake_failure"
    );
    let text = report.to_text("d2");
    assert!(text.contains("\nTLS\n"), "{text}");
    assert!(text.contains("TLS_RSA_WITH_AES_256_CBC_SHA256"));
}

/// The captures with their keys embedded (`editcap --inject-secrets`, a
/// pcapng Decryption Secrets Block before the packets) decode without a
/// key log exactly as the capture with the key log does.
#[test]
fn keys_embedded_in_pcapng_decode_like_the_key_log() {
    for name in [
        "d1-tls13",
        "d2-tls12",
        "d3-tls-extras",
        "d4-sasl-ssl",
        "d5-sasl-plain",
    ] {
        let (Some(embedded), Some(cap)) = (
            capture(&format!("{name}-keys.pcapng")),
            capture(&format!("{name}.pcap")),
        ) else {
            continue;
        };
        let keys = Keys::default();
        let mut src = FileSource::open(embedded.to_str().unwrap()).unwrap();
        src.set_tls_keys(keys.clone());
        let mut a = Analyzer::new(AnalyzerConfig {
            pipeline: PipelineConfig {
                tls_keys: keys.clone(),
                ..PipelineConfig::default()
            },
            ..AnalyzerConfig::default()
        });
        let mut outs = Vec::new();
        while let Ok(Polled::Frame(f)) = src.poll() {
            a.push(&f, &mut outs);
        }
        a.finish(&mut outs);
        // Every session of the key log editcap embedded.
        let logged = self::keys(&cap.with_extension("pcap.server.keys"));
        assert!(keys.with(|k| k.len()) >= 6, "{name}");
        assert_eq!(keys.with(|k| k.len()), logged.with(|k| k.len()), "{name}");
        let want = run(&cap, logged);
        let got = exchanges(&outs);
        assert!(!got.is_empty());
        assert_eq!(got, exchanges(&want), "{name}");
    }
}

#[test]
fn extras_decode_like_their_plaintext_twin() {
    same_connections("d3-tls-extras.pcap", "d3-tls-extras-plain.pcap");
}

/// d3's connections show what d1 and d2 lack, each decrypted: kafkajs'
/// later connections resume a session (TLS 1.3 ticket) and decrypt with
/// their own secrets; s_client's KeyUpdates (its own, asking for one back,
/// and the broker's answer) are followed, so its second ApiVersions,
/// after them, decodes and pairs; the second proxy's TLS 1.2 CBC suites
/// with HMAC-SHA384, SHA256 and SHA1, MAC-then-encrypt, decrypt.
#[test]
fn resumption_key_updates_and_mac_then_encrypt() {
    let Some(cap) = capture("d3-tls-extras.pcap") else {
        return;
    };
    let outs = run(&cap, keys(&cap.with_extension("pcap.server.keys")));
    let ev = tls_events(&outs);
    let resumed = ev
        .values()
        .filter(|e| {
            e.iter()
                .any(|x| matches!(x, TlsEvent::ServerHello { resumed: true, .. }))
                && e.contains(&TlsEvent::Decrypting)
        })
        .count();
    assert!(resumed >= 1, "{ev:?}");
    let updated: Vec<&u64> = ev
        .iter()
        .filter(|(_, e)| e.iter().any(|x| matches!(x, TlsEvent::KeyUpdate { .. })))
        .map(|(s, _)| s)
        .collect();
    assert_eq!(updated.len(), 1);
    let updates: Vec<&TlsEvent> = ev[updated[0]]
        .iter()
        .filter(|x| matches!(x, TlsEvent::KeyUpdate { .. }))
        .collect();
    let (client, server) = (
        TlsEvent::KeyUpdate {
            from_client: true,
            requested: true,
        },
        TlsEvent::KeyUpdate {
            from_client: false,
            requested: false,
        },
    );
    assert_eq!(updates, [&client, &server]);
    // Requests and responses, in order (a response says whether it paired).
    let after: Vec<(i32, Direction, bool)> = outs
        .iter()
        .filter_map(|o| match o {
            Output::Message(m) if m.info.stream == *updated[0] => {
                Some((m.info.correlation_id?, m.raw.dir, m.info.paired))
            }
            _ => None,
        })
        .collect();
    let (q, r) = (Direction::ClientToBroker, Direction::BrokerToClient);
    assert_eq!(
        after,
        [(1, q, false), (1, r, true), (2, q, false), (2, r, true)]
    );
    let mut stats = Stats::new(StatsConfig::default());
    for o in &outs {
        stats.push(o);
    }
    let mut cbc: Vec<String> = (stats.report().tls.iter())
        .filter(|t| t.broker.ends_with(":9095") && t.keys == "decrypted")
        .filter_map(|t| t.suite.clone())
        .collect();
    cbc.sort();
    cbc.dedup();
    let want = [
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    ];
    assert_eq!(cbc, want);
    let report = stats.report();
    let updated_row = report.tls.iter().find(|t| t.stream == *updated[0]).unwrap();
    assert_eq!(updated_row.key_updates, [1, 1]);
}

/// The server certificate without keys (TLS 1.2: in the clear) and with
/// them (TLS 1.3: encrypted): the recording's self-signed certificate,
/// made by `openssl req -days 3650 -subj /CN=kafkashark-test-broker`, on
/// every connection that got a ServerHello; its last day is the one
/// tshark's own X.509 reading gives.
#[test]
fn server_certificates_are_read() {
    let d2 = capture("d2-tls12.pcap");
    let d1 = capture("d1-tls13.pcap");
    let (Some(d2), Some(d1)) = (d2, d1) else {
        return;
    };
    let runs = [
        (d2.clone(), Keys::default(), 12),
        (d1.clone(), keys(&d1.with_extension("pcap.server.keys")), 12),
        (d1, Keys::default(), 0),
    ];
    let mut until = String::new();
    for (cap, k, want) in runs {
        let outs = run(&cap, k);
        let certs: Vec<(bool, kafkashark::tls::wire::Certificate)> = outs
            .iter()
            .filter_map(|o| match o.as_notice() {
                Some(Notice::Tls {
                    what: TlsEvent::Certificate { cert, invalid },
                    ..
                }) => Some((*invalid, cert.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(certs.len(), want, "{}", cap.display());
        for (invalid, c) in certs {
            assert!(!invalid);
            assert_eq!(c.subject, "CN=kafkashark-test-broker");
            assert_eq!(c.issuer, c.subject);
            assert_eq!(c.not_after - c.not_before, 3650 * 86_400);
            until.clone_from(&c.until);
        }
    }
    let tshark = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(&d2)
        .args(["-d", "tcp.port==9093,tls", "-Y", "tls.handshake.type==11"])
        .args(["-T", "fields", "-e", "x509af.utcTime"])
        .output();
    if let Some(o) = tshark.ok().filter(|o| o.status.success()) {
        let text = String::from_utf8_lossy(&o.stdout);
        let first = text.lines().next().expect("a certificate");
        // notBefore,notAfter
        assert!(
            first.split(',').nth(1).unwrap().starts_with(&until),
            "{first} {until}"
        );
    }
}

#[test]
fn sasl_ssl_decodes_like_its_plaintext_twin() {
    same_connections("d4-sasl-ssl.pcap", "d4-sasl-ssl-plain.pcap");
}

/// d5: SASL PLAIN logins over TLS 1.2 (AES-256-GCM and ChaCha20-Poly1305
/// in turn), kafka-python's and librdkafka's, to a broker that takes them.
#[test]
fn sasl_plain_over_tls12_decodes_like_its_plaintext_twin() {
    same_connections("d5-sasl-plain.pcap", "d5-sasl-plain-plain.pcap");
}

/// A live capture's key log grows while the capture runs: a connection
/// whose secrets are not there yet holds its records and decrypts them once
/// they come (here the whole key log arrives after the first 12 frames,
/// when the first connection is past its hellos and has sent protected
/// records), to the same messages as with the key log from the start; a
/// key that never comes is given up (at the latest at the end of the
/// input), nothing decoded.
#[test]
fn keys_that_come_late_decrypt_held_records() {
    let Some(cap) = capture("d1-tls13.pcap") else {
        return;
    };
    let log = std::fs::read(cap.with_extension("pcap.server.keys")).unwrap();
    let analyse = |late: Option<&[u8]>| {
        let (outs, _, before, _) = with_growing_keys(&cap, b"", 12, late, 16 << 20);
        (outs, before)
    };
    let (outs, before) = analyse(Some(&log));
    let want = run(&cap, keys(&cap.with_extension("pcap.server.keys")));
    assert_eq!(exchanges(&outs), exchanges(&want));
    // The first connection did wait: nothing came out before the keys, and
    // messages carried by earlier frames came after them.
    let messages = |o: &[Output]| o.iter().filter(|o| matches!(o, Output::Message(_))).count();
    assert_eq!(messages(&outs[..before]), 0);
    let early = outs[before..]
        .iter()
        .any(|o| matches!(o, Output::Message(m) if m.info.frame < 12));
    assert!(early);
    let (never, _) = analyse(None);
    assert!(exchanges(&never).is_empty());
    let ev = tls_events(&never);
    let no_key = ev
        .values()
        .filter(|e| e.iter().any(|x| matches!(x, TlsEvent::NoKey { .. })))
        .count();
    assert_eq!(no_key, 12);
    // A TLS 1.3 key log's writer gives a session's handshake secrets before
    // its traffic secrets: read in between, the session waits for the rest.
    let text = String::from_utf8(log).unwrap();
    let (hs, rest): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|l| l.contains("_HANDSHAKE_TRAFFIC_SECRET "));
    assert_eq!(hs.len(), 24);
    let (early, late) = (hs.join("\n") + "\n", rest.join("\n") + "\n");
    let (split, _, before, _) =
        with_growing_keys(&cap, early.as_bytes(), 12, Some(late.as_bytes()), 16 << 20);
    assert_eq!(exchanges(&split), exchanges(&want));
    assert_eq!(messages(&split[..before]), 0);
    assert!(tls_events(&split)
        .values()
        .flatten()
        .all(|e| !matches!(e, TlsEvent::NoKey { .. })));
}

/// `cap` analysed with a growing key log, holding `early` until `late` is
/// fed into it just before frame `at` (counted from 1), TLS connections parked for
/// their key holding at most `park` bytes together: the outputs, the frame
/// each was made at (`u64::MAX`: at the end), how many came before frame
/// `at`, and how many before the end of the input.
fn with_growing_keys(
    cap: &Path,
    early: &[u8],
    at: u64,
    late: Option<&[u8]>,
    park: usize,
) -> (Vec<Output>, Vec<u64>, usize, usize) {
    let mut log = KeyLog::new();
    assert!(log.feed(early).is_empty());
    let keys = Keys::new(log, true);
    let mut a = Analyzer::new(AnalyzerConfig {
        pipeline: PipelineConfig {
            tls_keys: keys.clone(),
            tls_park_bytes: park,
            ..PipelineConfig::default()
        },
        ..AnalyzerConfig::default()
    });
    let mut src = FileSource::open(cap.to_str().unwrap()).unwrap();
    let (mut outs, mut made, mut before) = (Vec::new(), Vec::new(), 0);
    while let Ok(Polled::Frame(f)) = src.poll() {
        if f.index == at {
            before = outs.len();
            if let Some(l) = late {
                keys.with(|k| assert!(k.feed(l).is_empty()));
            }
        }
        a.push(&f, &mut outs);
        made.resize(outs.len(), f.index);
    }
    let end = outs.len();
    a.finish(&mut outs);
    made.resize(outs.len(), u64::MAX);
    (outs, made, before, end)
}

/// Live, a short connection may close before its key is in the key log
/// (its writer, or the reader following the file, a moment behind): a TLS
/// connection that closes waiting for its key keeps its records, its close
/// put off, until the key comes (decrypted then, as if it had come in
/// time) or a second of capture time has passed (given up, `no key`).
#[test]
fn a_key_that_comes_after_its_connection_closed_still_decrypts_it() {
    let Some(cap) = capture("d1-tls13.pcap") else {
        return;
    };
    let log = std::fs::read(cap.with_extension("pcap.server.keys")).unwrap();
    let want = run(&cap, keys(&cap.with_extension("pcap.server.keys")));
    // The first connection to close, and when.
    let (stream, closed_at, closed_ts) = want
        .iter()
        .find_map(|o| match o.as_notice() {
            Some(Notice::Stream(kafkashark::pipeline::Event::StreamClosed {
                stream,
                frame,
                ts,
                ..
            })) => Some((*stream, *frame, *ts)),
            _ => None,
        })
        .expect("a connection closes");
    // Frames' times, to know when a second has passed since the close.
    let mut times = Vec::new();
    let mut src = FileSource::open(cap.to_str().unwrap()).unwrap();
    while let Ok(Polled::Frame(f)) = src.poll() {
        times.push(f.ts);
    }
    let analyse =
        |late: Option<&[u8]>, park: usize| with_growing_keys(&cap, b"", closed_at + 1, late, park);
    let first = |o: &Output| matches!(o, Output::Message(m) if m.info.stream == stream);
    // The key comes in the frame after the close: every connection decodes
    // as with the whole key log, the first one's messages after the close.
    let (outs, _, at_key, _) = analyse(Some(&log), 16 << 20);
    assert_eq!(exchanges(&outs), exchanges(&want));
    assert!(!outs[..at_key].iter().any(first));
    assert!(outs[at_key..].iter().any(first));
    // It never comes: given up once a frame a second after the close
    // arrives (when one does), else at the end; nothing decoded.
    let (never, _, _, end) = analyse(None, 16 << 20);
    assert!(exchanges(&never).is_empty());
    let no_key = never.iter().position(|o| {
        matches!(o.as_notice(), Some(Notice::Tls { stream: s, what: TlsEvent::NoKey { .. }, .. }) if *s == stream)
    });
    let no_key = no_key.expect("given up");
    let later = times
        .iter()
        .any(|t| t.nanos_since(closed_ts) >= kafkashark::pipeline::PARK_FOR_NS);
    assert_eq!(no_key < end, later, "no key at output {no_key} of {end}");
    // With no room for parked records, a connection that parks gives up
    // the one before it: the first, when the second closes.
    let second = want
        .iter()
        .filter_map(|o| match o.as_notice() {
            Some(Notice::Stream(kafkashark::pipeline::Event::StreamClosed { frame, .. })) => {
                Some(*frame)
            }
            _ => None,
        })
        .nth(1)
        .expect("a second connection closes");
    let (never, made, _, _) = analyse(None, 0);
    let no_key = never.iter().position(|o| {
        matches!(o.as_notice(), Some(Notice::Tls { stream: s, what: TlsEvent::NoKey { .. }, .. }) if *s == stream)
    });
    assert_eq!(made[no_key.expect("given up")], second);
}
