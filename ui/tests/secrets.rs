//! SASL secrets never reach the output unless --show-secrets is given: PLAIN
//! passwords inside SaslAuthenticate, and raw SASL tokens that follow a
//! SaslHandshake v0 without any Kafka header.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::Command;

use support::{Format, Link};

const PASSWORD: &str = "s3cr3t-pw";

fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut m = (body.len() as i32).to_be_bytes().to_vec();
    m.extend(body);
    m
}

fn header_v1(key: i16, version: i16, corr: i32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&key.to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&corr.to_be_bytes());
    h.extend_from_slice(&1i16.to_be_bytes());
    h.push(b't');
    h
}

fn str16(s: &str) -> Vec<u8> {
    let mut v = (s.len() as i16).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

fn plain_token() -> Vec<u8> {
    format!("\0alice\0{PASSWORD}").into_bytes()
}

fn metadata_v1_exchange(corr: i32) -> Vec<(bool, Vec<u8>)> {
    let mut req = header_v1(3, 1, corr);
    req.extend_from_slice(&(-1i32).to_be_bytes()); // Topics: null (all)
    let mut resp = corr.to_be_bytes().to_vec();
    resp.extend_from_slice(&0i32.to_be_bytes()); // Brokers: 0
    resp.extend_from_slice(&1i32.to_be_bytes()); // ControllerId 1
    resp.extend_from_slice(&0i32.to_be_bytes()); // Topics: 0
    vec![(true, framed(req)), (false, framed(resp))]
}

fn run(path: &str, extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kafkashark"))
        .arg("print")
        .arg(path)
        .args(extra)
        .output()
        .expect("run kafkashark");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut s = String::from_utf8(out.stdout).expect("utf-8");
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    s
}

fn contains_secret(s: &str) -> bool {
    let hex: String = PASSWORD.bytes().map(|b| format!("{b:02x}")).collect();
    s.contains(PASSWORD) || s.contains(&hex[..12])
}

#[test]
fn raw_tokens_after_handshake_v0_are_redacted_and_the_stream_goes_on() {
    let mut hs = header_v1(17, 0, 1);
    hs.extend(str16("PLAIN"));
    let mut hs_resp = 1i32.to_be_bytes().to_vec();
    hs_resp.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode NONE
    hs_resp.extend_from_slice(&1i32.to_be_bytes()); // Mechanisms: 1
    hs_resp.extend(str16("PLAIN"));
    let mut msgs = vec![
        (true, framed(hs)),
        (false, framed(hs_resp)),
        (true, framed(plain_token())), // raw SASL/PLAIN token, no Kafka header
        (false, framed(Vec::new())),   // the broker's empty raw reply
    ];
    msgs.extend(metadata_v1_exchange(2));
    let cap = support::write_capture(
        "sasl-v0",
        &support::hostile::segments(&msgs),
        &Link::Ethernet(vec![]),
        Format::PcapMicros,
    );

    for args in [&["-V"][..], &["-V", "--format", "jsonl"][..]] {
        let out = run(cap.path_str(), args);
        assert!(
            !contains_secret(&out),
            "secret leaked with {args:?}:\n{out}"
        );
        assert!(out.contains("redacted"), "{out}");
        assert!(
            !out.contains("MALFORMED") && !out.contains("malformed"),
            "{out}"
        );
    }
    let jsonl = run(cap.path_str(), &["--format", "jsonl"]);
    let lines: Vec<serde_json::Value> = jsonl
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 6);
    // The Kafka exchanges after the tokens still pair and decode.
    let meta: Vec<_> = lines
        .iter()
        .filter(|l| l["api_name"] == "Metadata")
        .collect();
    assert_eq!(meta.len(), 2);
    assert!(meta
        .iter()
        .all(|l| l["paired"] == true && l["decode_error"].is_null()));
    // The tokens carry no api and no decode error.
    let tokens: Vec<_> = lines.iter().filter(|l| l["api_key"].is_null()).collect();
    assert_eq!(tokens.len(), 2);
    assert!(tokens.iter().all(|l| l["decode_error"].is_null()));

    let shown = run(cap.path_str(), &["-V", "--show-secrets"]);
    assert!(contains_secret(&shown), "--show-secrets reveals the token");
}

#[test]
fn plain_password_in_sasl_authenticate_is_redacted() {
    let mut hs = header_v1(17, 1, 1);
    hs.extend(str16("PLAIN"));
    let mut hs_resp = 1i32.to_be_bytes().to_vec();
    hs_resp.extend_from_slice(&0i16.to_be_bytes());
    hs_resp.extend_from_slice(&1i32.to_be_bytes());
    hs_resp.extend(str16("PLAIN"));
    let mut auth = header_v1(36, 1, 2);
    let token = plain_token();
    auth.extend_from_slice(&(token.len() as i32).to_be_bytes());
    auth.extend(token); // AuthBytes
    let mut auth_resp = 2i32.to_be_bytes().to_vec();
    auth_resp.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode
    auth_resp.extend_from_slice(&(-1i16).to_be_bytes()); // ErrorMessage null
    auth_resp.extend_from_slice(&0i32.to_be_bytes()); // AuthBytes empty
    auth_resp.extend_from_slice(&0i64.to_be_bytes()); // SessionLifetimeMs (v1+)
    let mut msgs = vec![
        (true, framed(hs)),
        (false, framed(hs_resp)),
        (true, framed(auth)),
        (false, framed(auth_resp)),
    ];
    msgs.extend(metadata_v1_exchange(3));
    let cap = support::write_capture(
        "sasl-auth",
        &support::hostile::segments(&msgs),
        &Link::Ethernet(vec![]),
        Format::PcapMicros,
    );
    for args in [&["-V"][..], &["-V", "--format", "jsonl"][..], &[][..]] {
        let out = run(cap.path_str(), args);
        assert!(
            !contains_secret(&out),
            "secret leaked with {args:?}:\n{out}"
        );
        assert!(!out.contains("malformed"), "{out}");
    }
    assert!(contains_secret(&run(
        cap.path_str(),
        &["-V", "--show-secrets"]
    )));
}
