// Tests index what they have just checked.
#![allow(clippy::indexing_slicing)]

use super::*;
use crate::capture::{link, FileSource, FrameSource};
use crate::flow::{FlowConfig, FlowEvent, Ports, Reassembler};
use crate::vocab::Direction;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each connection's bytes, client's then broker's, of the connections with
/// an endpoint on `port` in the capture at `path`.
pub(crate) fn streams(path: &Path, port: u16) -> BTreeMap<u64, [Vec<u8>; 2]> {
    let mut src = FileSource::open(path.to_str().expect("path")).expect("open");
    let mut flow = Reassembler::new(FlowConfig {
        ports: Ports::List(vec![port]),
        ..FlowConfig::default()
    });
    let (mut evs, mut out) = (Vec::new(), BTreeMap::<u64, [Vec<u8>; 2]>::new());
    let mut take = |evs: &mut Vec<FlowEvent>| {
        for ev in evs.drain(..) {
            if let FlowEvent::Data {
                stream, dir, data, ..
            } = ev
            {
                let s = out.entry(stream).or_default();
                s[usize::from(dir == Direction::BrokerToClient)].extend_from_slice(&data);
            }
        }
    };
    while let Some(f) = src.next_frame().expect("frame") {
        if let Ok(mut seg) = link::decode_segment(&f) {
            flow.push(&mut seg, f.index, f.ts, None, &mut evs);
            take(&mut evs);
        }
    }
    flow.finish(&mut evs);
    take(&mut evs);
    out
}

pub(crate) fn capture(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name);
    p.exists().then_some(p)
}

/// One TLS connection as its records tell it.
pub(crate) struct Conn {
    pub(crate) hello: ClientHello,
    /// The server's answer: its hello, or an alert (level, description).
    pub(crate) server: Result<ServerHello, (u8, u8)>,
    pub(crate) records: [Vec<Record>; 2],
}

/// The records of each direction of each connection of a TLS capture,
/// read fed whole and fed a byte at a time: the same records, covering
/// every byte; and the hellos (or the alert) they hold.
pub(crate) fn read_tls(path: &Path, port: u16) -> Vec<Conn> {
    let mut out = Vec::new();
    for (stream, dirs) in streams(path, port) {
        assert_eq!(starts_client_hello(&dirs[0]), Some(true), "stream {stream}");
        let mut records: [Vec<Record>; 2] = Default::default();
        for (d, bytes) in dirs.iter().enumerate() {
            let mut whole = Records::new();
            whole.push(bytes, &mut records[d]).expect("records");
            let mut one = (Records::new(), Vec::new());
            for b in bytes {
                one.0
                    .push(std::slice::from_ref(b), &mut one.1)
                    .expect("records");
            }
            assert_eq!(records[d], one.1, "stream {stream}");
            let covered: usize = records[d].iter().map(|r| HEADER + r.body.len()).sum();
            assert_eq!(covered, bytes.len(), "stream {stream} direction {d}");
        }
        // The first handshake messages are in the clear.
        let first = |d: usize| {
            let r = records[d].first()?;
            if r.content == content::ALERT {
                return Some(Err((r.body[0], r.body[1])));
            }
            let mut h = (Handshakes::new(), Vec::new());
            assert!(h.0.push(&r.body, &mut h.1));
            h.1.into_iter().next().map(Ok)
        };
        let (ct, ch) = first(0).expect("a ClientHello").expect("a handshake");
        assert_eq!(ct, handshake::CLIENT_HELLO);
        let server = match first(1).expect("an answer") {
            Ok((st, sh)) => {
                assert_eq!(st, handshake::SERVER_HELLO);
                Ok(ServerHello::parse(&sh).expect("ServerHello"))
            }
            Err(alert) => Err(alert),
        };
        out.push(Conn {
            hello: ClientHello::parse(&ch).expect("ClientHello"),
            server,
            records,
        });
    }
    out
}

/// TLS 1.3 from kafka-python, librdkafka and kafkajs: every connection's
/// records and hellos read; TLS 1.3 chosen (supported_versions), each of
/// its three suites by some connection, the records after the hellos
/// encrypted (application data).
#[test]
fn tls13_connections_are_read() {
    let Some(p) = capture("tls/d1-tls13.pcap") else {
        return;
    };
    let conns = read_tls(&p, 9093);
    assert_eq!(conns.len(), 12);
    let mut suites = std::collections::BTreeSet::new();
    for c in &conns {
        let sh = c.server.as_ref().expect("a ServerHello");
        assert!(c.hello.supported_versions.contains(&0x0304));
        assert_eq!(version_name(sh.version), "TLS 1.3");
        assert!(!sh.retry);
        suites.insert(suite_name(sh.cipher_suite));
        assert!(c.records[1]
            .iter()
            .any(|r| r.content == content::APPLICATION_DATA));
    }
    let want = [
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256",
    ];
    assert_eq!(suites, want.iter().map(|s| s.to_string()).collect());
}

/// TLS 1.2 with one suite per connection in turn: ECDHE and RSA key
/// exchange, AES-GCM, ChaCha20-Poly1305, AES-CBC; every suite the proxy
/// offered chosen by some connection; kafka-python, offered only CBC or RSA
/// key exchange, refused with a handshake_failure alert in the clear.
#[test]
fn tls12_connections_are_read() {
    let Some(p) = capture("tls/d2-tls12.pcap") else {
        return;
    };
    let conns = read_tls(&p, 9093);
    let offered = [0xc02f, 0xc030, 0xcca8, 0xc013, 0x003d, 0x009c];
    let (mut seen, mut refused) = (std::collections::BTreeSet::new(), 0);
    for c in &conns {
        match &c.server {
            Ok(sh) => {
                assert_eq!(version_name(sh.version), "TLS 1.2");
                assert!(
                    offered.contains(&sh.cipher_suite),
                    "{:04x}",
                    sh.cipher_suite
                );
                seen.insert(sh.cipher_suite);
            }
            Err((level, desc)) => {
                assert_eq!(
                    (*level, alert_name(*desc).as_str()),
                    (2, "handshake_failure")
                );
                refused += 1;
            }
        }
    }
    assert_eq!(seen.len(), offered.len(), "{seen:?}");
    assert_eq!(refused, 3);
}

/// Not TLS: the plaintext Kafka twin and the HTTP and echo connections of
/// the capture without Kafka are not taken for TLS; its TLS 1.3 connection is.
#[test]
fn only_tls_starts_like_tls() {
    if let Some(p) = capture("tls/d1-tls13-plain.pcap") {
        for (s, d) in streams(&p, 9094) {
            assert_eq!(starts_client_hello(&d[0]), Some(false), "stream {s}");
            assert!(Records::new().push(&d[0], &mut Vec::new()).is_err());
        }
    }
    let Some(p) = capture("negative/c1-not-kafka.pcap") else {
        return;
    };
    for (port, tls) in [(18080, false), (16379, false), (18443, true)] {
        let s = streams(&p, port);
        assert!(!s.is_empty(), "{port}");
        for d in s.values() {
            assert_eq!(starts_client_hello(&d[0]), Some(tls), "{port}");
        }
    }
}

/// Handshake messages are gathered across records and split within one;
/// a message claiming more than MAX_HANDSHAKE stops the gathering; a record
/// header claiming more than MAX_RECORD is refused before its bytes come.
#[test]
fn limits_and_splits() {
    let msg = |ty: u8, n: usize| {
        let mut m = vec![ty, (n >> 16) as u8, (n >> 8) as u8, n as u8];
        m.extend(std::iter::repeat_n(0xab, n));
        m
    };
    let mut two = msg(1, 300);
    two.extend(msg(2, 5));
    let mut h = (Handshakes::new(), Vec::new());
    for part in two.chunks(7) {
        assert!(h.0.push(part, &mut h.1));
    }
    assert_eq!(h.1.len(), 2);
    assert_eq!((h.1[0].0, h.1[0].1.len(), h.1[1].0), (1, 300, 2));
    let mut big = (Handshakes::new(), Vec::new());
    assert!(!big.0.push(&[1, 0x20, 0, 0], &mut big.1));
    assert!(!big.0.push(&[0; 10], &mut big.1));
    let mut r = Records::new();
    let too_long = [22, 3, 3, 0xff, 0xff];
    assert_eq!(
        r.push(&too_long, &mut Vec::new()),
        Err(RecordError::TooLong(0))
    );
    assert_eq!(
        r.push(&[0; 10], &mut Vec::new()),
        Err(RecordError::TooLong(0))
    );
    assert_eq!(alert_name(42), "bad_certificate");
    assert_eq!(alert_name(200), "alert 200");
}

/// Every session (every handshake that was answered) is in the proxy's key
/// log (every line of it read), with the secrets its version needs; the clients' key log (from
/// kafka-python and kafkajs) has the same secrets for the sessions it
/// holds, and misses librdkafka's (it writes none).
#[test]
fn every_session_has_its_keys() {
    use crate::tls::keylog::{KeyLog, Label};
    for (name, tls13) in [("tls/d1-tls13.pcap", true), ("tls/d2-tls12.pcap", false)] {
        let Some(p) = capture(name) else {
            continue;
        };
        let read = |suffix: &str| {
            let path = format!("{}.{suffix}", p.display());
            let mut k = KeyLog::new();
            let bytes = std::fs::read(&path).expect("key log");
            assert!(k.feed(&bytes).is_empty(), "{path}");
            assert!(k.finish().is_empty(), "{path}");
            k
        };
        let (server, client) = (read("server.keys"), read("client.keys"));
        let conns: Vec<Conn> = read_tls(&p, 9093)
            .into_iter()
            .filter(|c| c.server.is_ok())
            .collect();
        let mut missing = 0;
        for c in &conns {
            let ch = &c.hello;
            let s = server
                .get(&ch.random)
                .expect("the proxy logs every session");
            let needed = if tls13 {
                vec![
                    Label::ClientHandshakeTraffic,
                    Label::ServerHandshakeTraffic,
                    Label::ClientTraffic0,
                    Label::ServerTraffic0,
                ]
            } else {
                vec![Label::ClientRandom]
            };
            assert!(needed.iter().all(|l| s.get(*l).is_some()), "{name}");
            match client.get(&ch.random) {
                Some(c) => assert_eq!(c, s, "{name}: both ends log the same secrets"),
                None => missing += 1,
            }
        }
        assert!(
            missing > 0 && missing < conns.len(),
            "{name}: {missing} of {}",
            conns.len()
        );
        assert_eq!(server.len(), conns.len(), "{name}");
    }
}
