// Tests index what they have just checked.
#![allow(clippy::indexing_slicing)]

use super::*;
use crate::tls::keylog::KeyLog;
use crate::tls::wire::tests::{capture, read_tls, streams};

fn key_log(path: &std::path::Path) -> KeyLog {
    let mut k = KeyLog::new();
    let bytes = std::fs::read(path).expect("key log");
    assert!(k.feed(&bytes).is_empty());
    assert!(k.finish().is_empty());
    k
}

/// Each direction's records after its hello, opened with `secrets`'
/// (handshake, application) pair for it: the application data, and how
/// many handshake messages' records opened; or the first error.
fn open_all(
    suite: Aead,
    secrets: (&[u8], &[u8]),
    records: &[Record],
) -> Result<(Vec<u8>, usize), DecryptError> {
    let mut d = Decrypter::new(suite, secrets.0, secrets.1)?;
    let (mut data, mut handshakes) = (Vec::new(), 0);
    for r in records.iter().skip(1) {
        match d.record(r.clone())? {
            Some((content::APPLICATION_DATA, b)) => data.extend_from_slice(&b),
            Some((content::HANDSHAKE, _)) => handshakes += 1,
            // Alerts are encrypted as any record (close_notify at the end,
            // and a decode_error one end sends when the proxy cuts it off).
            Some((content::ALERT, b)) => match &b[..] {
                &[level, desc] => {
                    assert!(level == 1 || level == 2);
                    assert!(!crate::tls::wire::alert_name(desc).starts_with("alert "));
                }
                other => panic!("an alert of {} bytes", other.len()),
            },
            Some((ty, _)) => panic!("content type {ty}"),
            None => {}
        }
    }
    Ok((data, handshakes))
}

/// Every TLS 1.3 connection of d1, both directions, decrypted with the
/// proxy's key log (three suites; the encrypted handshake, then the
/// application keys after each Finished): the Kafka bytes are the proxy's
/// plaintext side's, connection for connection, byte for byte (but for
/// what the broker sent after a client had gone).
#[test]
fn tls13_decrypts_to_the_plaintext_twin() {
    let (Some(p), Some(plain)) = (
        capture("tls/d1-tls13.pcap"),
        capture("tls/d1-tls13-plain.pcap"),
    ) else {
        return;
    };
    let keys = key_log(&p.with_extension("pcap.server.keys"));
    let mut got = Vec::new();
    for c in read_tls(&p, 9093) {
        let sh = c.server.as_ref().expect("a ServerHello");
        let suite = suite(sh.cipher_suite).expect("a TLS 1.3 suite");
        let s = keys.get(&c.hello.random).expect("the session's secrets");
        let pick =
            |a: &Option<crate::tls::keylog::Secret>| a.as_ref().expect("secret").bytes().to_vec();
        let client = (pick(&s.client_handshake), pick(&s.client_traffic_0));
        let server = (pick(&s.server_handshake), pick(&s.server_traffic_0));
        let (cd, ch) =
            open_all(suite, (&client.0, &client.1), &c.records[0]).expect("client records");
        let (sd, sh) =
            open_all(suite, (&server.0, &server.1), &c.records[1]).expect("server records");
        // The server's encrypted extensions, certificate, verify and
        // Finished, and session tickets; the client's Finished.
        assert!(sh >= 4 && ch >= 1, "{sh} {ch}");
        got.push([cd, sd]);
    }
    let mut want: Vec<[Vec<u8>; 2]> = streams(&plain, 9094).into_values().collect();
    assert_eq!((got.len(), want.len()), (12, 12));
    // The broker's bytes that reached the proxy after its client had gone
    // (a Fetch answered after the consumer closed) are on the plaintext side
    // only: each connection's broker bytes decrypted are a prefix of its twin's.
    let mut exact = 0;
    for [c, s] in &got {
        let at = want
            .iter()
            .position(|[pc, ps]| pc == c && ps.starts_with(s))
            .expect("a plaintext twin with the same client bytes");
        exact += usize::from(want[at][1] == *s);
        want.swap_remove(at);
    }
    assert!(exact >= 10, "{exact} of 12 connections equal whole");
}

/// A wrong secret opens nothing: the direction's first protected record
/// fails, at its stream offset, and so does every later one.
#[test]
fn a_wrong_secret_fails_at_the_first_record() {
    let Some(p) = capture("tls/d1-tls13.pcap") else {
        return;
    };
    let keys = key_log(&p.with_extension("pcap.server.keys"));
    let c = read_tls(&p, 9093).into_iter().next().expect("a connection");
    let suite = suite(c.server.as_ref().expect("hello").cipher_suite).expect("suite");
    let s = keys.get(&c.hello.random).expect("secrets");
    let mut wrong = s
        .server_handshake
        .as_ref()
        .expect("secret")
        .bytes()
        .to_vec();
    wrong[0] ^= 1;
    let app = s.server_traffic_0.as_ref().expect("secret").bytes();
    let mut d = Decrypter::new(suite, &wrong, app).expect("keys");
    let first = &c.records[1][1..]
        .iter()
        .find(|r| r.content == content::APPLICATION_DATA)
        .expect("a protected record");
    assert_eq!(
        d.record((*first).clone()),
        Err(DecryptError::Failed(first.at))
    );
    assert_eq!(
        d.record((*first).clone()),
        Err(DecryptError::Failed(first.at))
    );
    assert_eq!(
        Decrypter::new(suite, &[1, 2, 3], app).map(|_| ()),
        Err(DecryptError::BadSecret)
    );
}
