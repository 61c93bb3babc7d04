// Tests index what they have just checked.
#![allow(clippy::indexing_slicing)]

use super::*;
use crate::tls::keylog::KeyLog;
use crate::tls::wire::tests::{capture, read_tls, streams};

/// Every TLS 1.2 connection of d2 that got past its hellos (ECDHE and RSA
/// key exchange; AES-128-GCM, AES-256-GCM with SHA-384, ChaCha20-Poly1305,
/// AES-128-CBC with HMAC-SHA1 and AES-256-CBC with HMAC-SHA256, both
/// encrypt-then-MAC),
/// both directions, decrypted with the proxy's key log: the Finished and
/// the Kafka bytes open, the latter those of the connection's plaintext
/// twin (the broker's a prefix where it answered after the client had gone).
#[test]
fn tls12_decrypts_to_the_plaintext_twin() {
    let (Some(p), Some(plain)) = (
        capture("tls/d2-tls12.pcap"),
        capture("tls/d2-tls12-plain.pcap"),
    ) else {
        return;
    };
    let mut keys = KeyLog::new();
    assert!(keys
        .feed(&std::fs::read(p.with_extension("pcap.server.keys")).expect("key log"))
        .is_empty());
    let mut want: Vec<[Vec<u8>; 2]> = streams(&plain, 9094).into_values().collect();
    let (mut opened, mut suites) = (0, std::collections::BTreeSet::new());
    for c in read_tls(&p, 9093) {
        let Ok(sh) = &c.server else { continue };
        let Some(suite) = suite(sh.cipher_suite) else {
            continue;
        };
        suites.insert(sh.cipher_suite);
        if matches!(suite, Suite::Cbc { .. }) {
            // OpenSSL's clients and the proxy agree to encrypt-then-MAC.
            assert!(sh.encrypt_then_mac);
        }
        let master = keys
            .get(&c.hello.random)
            .and_then(|s| s.master.as_ref())
            .expect("the master secret");
        let mut data: [Vec<u8>; 2] = Default::default();
        for (d, out) in data.iter_mut().enumerate() {
            let mut dec = Decrypter::new(
                suite,
                master.bytes(),
                (&c.hello.random, &sh.random),
                d == 0,
                sh.encrypt_then_mac,
            )
            .expect("keys");
            let mut finished = false;
            for r in &c.records[d] {
                match dec.record(r.clone()).expect("opens") {
                    Some((content::APPLICATION_DATA, b)) => out.extend_from_slice(&b),
                    // The first protected handshake message: Finished (20), 12 bytes of verify data.
                    Some((content::HANDSHAKE, b)) if dec.seq == 1 => {
                        assert_eq!(&b[..4], &[20, 0, 0, 12]);
                        finished = true;
                    }
                    _ => {}
                }
            }
            assert!(finished);
        }
        let at = want
            .iter()
            .position(|[pc, ps]| *pc == data[0] && ps.starts_with(&data[1]))
            .expect("a plaintext twin");
        want.swap_remove(at);
        opened += 1;
    }
    assert_eq!((opened, suites.len()), (12, 6), "{suites:?}");
}
