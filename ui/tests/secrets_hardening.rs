//! Secrets beyond SASL PLAIN: OAUTHBEARER tokens and SCRAM messages inside
//! SaslAuthenticate, delegation-token HMACs (CreateDelegationToken response,
//! Renew/Expire requests, DescribeDelegationToken response) and SCRAM salted
//! passwords (AlterUserScramCredentials) never reach any output by default:
//! `print`, `print -V`, `print --format jsonl -V`, `stats`, `decode` (text and
//! JSON) and the terminal UI (tree and byte view, in tmux). `--show-secrets`
//! reveals them where it is offered.

#[path = "../../tests/support/mod.rs"]
mod support;

use std::process::Command;

use support::tmux::{have_tmux, Tmux};
use support::{Format, Link};

const OAUTH: &[u8] = b"n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.OAUTH-TOKEN-7f3a9c.\x01\x01";
const SCRAM_FINAL: &[u8] = b"c=biws,r=nonce123SERVER,p=SCRAMPROOF+dGhpcyBpcyBhIHByb29m";
const HMACS: [&[u8]; 4] = [
    b"HMAC-CREATE-5a1f0c9e",
    b"HMAC-RENEW-77b2d4e1",
    b"HMAC-EXPIRE-0d9c8b7a",
    b"HMAC-DESCRIBE-3e4f5a6b",
];
const SALTED: &[u8] = b"SALTEDPW-c0ffee-42424242";

/// Every secret, with a short distinctive part of it as text and as hex.
fn secrets() -> Vec<(&'static str, &'static [u8])> {
    let mut v: Vec<(&str, &[u8])> = vec![
        ("OAUTHBEARER token", &b"OAUTH-TOKEN-7f3a9c"[..]),
        ("SCRAM proof", &b"SCRAMPROOF"[..]),
        ("SCRAM salted password", &b"SALTEDPW-c0ffee"[..]),
    ];
    for (name, h) in ["create", "renew", "expire", "describe"]
        .into_iter()
        .zip(HMACS)
    {
        let _ = name;
        v.push(("delegation-token HMAC", &h[..12]));
    }
    v
}

fn leaks(out: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (what, s) in secrets() {
        let text = String::from_utf8_lossy(s).to_string();
        let hex: String = s[..8].iter().map(|b| format!("{b:02x}")).collect();
        let spaced: String = s[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        if out.contains(&text) || out.contains(&hex) || out.contains(&spaced) {
            found.push(format!("{what} ({text})"));
        }
    }
    found
}

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

fn str16(v: &mut Vec<u8>, s: &str) {
    v.extend_from_slice(&(s.len() as i16).to_be_bytes());
    v.extend_from_slice(s.as_bytes());
}

fn bytes32(v: &mut Vec<u8>, b: &[u8]) {
    v.extend_from_slice(&(b.len() as i32).to_be_bytes());
    v.extend_from_slice(b);
}

/// (api key, version, request, response) of every exchange, in order.
fn exchanges() -> Vec<(i16, i16, Vec<u8>, Vec<u8>)> {
    let mut x = Vec::new();
    let mut corr = 0;
    let mut next = || {
        corr += 1;
        corr
    };
    // SaslHandshake v1 OAUTHBEARER, then SaslAuthenticate v1 with the token.
    let c = next();
    let mut req = header_v1(17, 1, c);
    str16(&mut req, "OAUTHBEARER");
    let mut resp = c.to_be_bytes().to_vec();
    resp.extend_from_slice(&0i16.to_be_bytes());
    resp.extend_from_slice(&1i32.to_be_bytes());
    str16(&mut resp, "OAUTHBEARER");
    x.push((17, 1, framed(req), framed(resp)));
    for (token, server) in [(OAUTH, &b""[..]), (SCRAM_FINAL, &b"v=SERVERSIG"[..])] {
        let c = next();
        let mut req = header_v1(36, 1, c);
        bytes32(&mut req, token);
        let mut resp = c.to_be_bytes().to_vec();
        resp.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode
        resp.extend_from_slice(&(-1i16).to_be_bytes()); // ErrorMessage null
        bytes32(&mut resp, server);
        resp.extend_from_slice(&3_600_000i64.to_be_bytes()); // SessionLifetimeMs
        x.push((36, 1, framed(req), framed(resp)));
    }
    // CreateDelegationToken v1: the response carries the HMAC.
    let c = next();
    let mut req = header_v1(38, 1, c);
    req.extend_from_slice(&0i32.to_be_bytes()); // Renewers: 0
    req.extend_from_slice(&(-1i64).to_be_bytes()); // MaxLifetimeMs
    let mut resp = c.to_be_bytes().to_vec();
    resp.extend_from_slice(&0i16.to_be_bytes());
    str16(&mut resp, "User");
    str16(&mut resp, "alice");
    for t in [1_700_000_000_000i64, 1_700_086_400_000, 1_700_604_800_000] {
        resp.extend_from_slice(&t.to_be_bytes());
    }
    str16(&mut resp, "token-1");
    bytes32(&mut resp, HMACS[0]);
    resp.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    x.push((38, 1, framed(req), framed(resp)));
    // RenewDelegationToken v1 and ExpireDelegationToken v1: the requests carry the HMAC.
    for (key, hmac) in [(39i16, HMACS[1]), (40, HMACS[2])] {
        let c = next();
        let mut req = header_v1(key, 1, c);
        bytes32(&mut req, hmac);
        req.extend_from_slice(&86_400_000i64.to_be_bytes());
        let mut resp = c.to_be_bytes().to_vec();
        resp.extend_from_slice(&0i16.to_be_bytes());
        resp.extend_from_slice(&1_700_086_400_000i64.to_be_bytes());
        resp.extend_from_slice(&0i32.to_be_bytes());
        x.push((key, 1, framed(req), framed(resp)));
    }
    // DescribeDelegationToken v1: every token's HMAC in the response.
    let c = next();
    let mut req = header_v1(41, 1, c);
    req.extend_from_slice(&(-1i32).to_be_bytes()); // Owners: null (all)
    let mut resp = c.to_be_bytes().to_vec();
    resp.extend_from_slice(&0i16.to_be_bytes());
    resp.extend_from_slice(&1i32.to_be_bytes()); // Tokens: 1
    str16(&mut resp, "User");
    str16(&mut resp, "alice");
    for t in [1_700_000_000_000i64, 1_700_086_400_000, 1_700_604_800_000] {
        resp.extend_from_slice(&t.to_be_bytes());
    }
    str16(&mut resp, "token-1");
    bytes32(&mut resp, HMACS[3]);
    resp.extend_from_slice(&0i32.to_be_bytes()); // Renewers: 0
    resp.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    x.push((41, 1, framed(req), framed(resp)));
    // AlterUserScramCredentials v0 (flexible, header v2): a salted password.
    let c = next();
    let mut req = Vec::new();
    req.extend_from_slice(&51i16.to_be_bytes());
    req.extend_from_slice(&0i16.to_be_bytes());
    req.extend_from_slice(&c.to_be_bytes());
    req.extend_from_slice(&1i16.to_be_bytes());
    req.push(b't');
    req.push(0); // header tagged fields
    req.push(1); // Deletions: 0
    req.push(2); // Upsertions: 1
    req.push(6); // Name "alice"
    req.extend_from_slice(b"alice");
    req.push(2); // Mechanism SCRAM-SHA-256
    req.extend_from_slice(&4096i32.to_be_bytes()); // Iterations
    req.push(9); // Salt, 8 bytes
    req.extend_from_slice(b"saltsalt");
    req.push(SALTED.len() as u8 + 1);
    req.extend_from_slice(SALTED);
    req.push(0); // element tagged fields
    req.push(0); // tagged fields
    let mut resp = c.to_be_bytes().to_vec();
    resp.push(0); // header tagged fields
    resp.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    resp.push(2); // Results: 1
    resp.push(6);
    resp.extend_from_slice(b"alice");
    resp.extend_from_slice(&0i16.to_be_bytes());
    resp.push(0); // ErrorMessage null
    resp.push(0);
    resp.push(0);
    x.push((51, 0, framed(req), framed(resp)));
    x
}

fn capture() -> support::TempCapture {
    let msgs: Vec<(bool, Vec<u8>)> = exchanges()
        .into_iter()
        .flat_map(|(_, _, req, resp)| [(true, req), (false, resp)])
        .collect();
    support::write_capture(
        "secrets-more",
        &support::hostile::segments(&msgs),
        &Link::Ethernet(vec![]),
        Format::PcapMicros,
    )
}

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kafkashark"))
        .args(args)
        .output()
        .expect("run kafkashark");
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    s
}

#[test]
fn the_capture_decodes_whole() {
    let cap = capture();
    let out = run(&["print", cap.path_str(), "--format", "jsonl"]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(lines.len(), 2 * exchanges().len(), "{out}");
    for l in &lines {
        assert!(l["decode_error"].is_null(), "{l}");
        assert_eq!(l["paired"], true, "{l}");
    }
}

#[test]
fn print_in_every_form_redacts_all_secrets() {
    let cap = capture();
    let p = cap.path_str();
    for args in [
        vec!["print", p],
        vec!["print", p, "-V"],
        vec!["print", p, "--format", "jsonl", "-V"],
        vec!["stats", p],
        vec!["stats", p, "--format", "json"],
    ] {
        let out = run(&args);
        let found = leaks(&out);
        assert!(found.is_empty(), "{args:?} leaks {found:?}");
    }
    let out = run(&["print", p, "-V"]);
    assert!(out.matches("<redacted").count() >= 6, "{out}");
}

#[test]
fn show_secrets_reveals_them() {
    let cap = capture();
    let out = run(&["print", cap.path_str(), "-V", "--show-secrets"]);
    assert!(
        !leaks(&out).is_empty(),
        "--show-secrets shows the bytes: {out}"
    );
}

#[test]
fn decode_redacts_every_secret_field() {
    for (key, version, req, resp) in exchanges() {
        let path = support::temp_path("secret-msg", "bin");
        for (msg, response) in [(&req, false), (&resp, true)] {
            std::fs::write(&path, msg).expect("write");
            let p = path.to_str().unwrap();
            let (k, v) = (key.to_string(), version.to_string());
            let mut base = vec!["decode", p];
            if response {
                base.extend(["--response", "--api-key", &k, "--api-version", &v]);
            }
            for fmt in ["text", "json"] {
                let mut args = base.clone();
                args.extend(["--format", fmt]);
                let out = run(&args);
                let found = leaks(&out);
                assert!(
                    found.is_empty(),
                    "api {key} v{version} {}: decode --format {fmt} leaks {found:?}:\n{out}",
                    if response { "response" } else { "request" }
                );
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// The terminal UI: the tree redacts, and the byte view must not show the
/// secret's bytes either, neither as hex nor in its text column.
#[test]
fn the_tui_byte_view_redacts_secrets() {
    if !have_tmux() {
        eprintln!("skipping: tmux is not installed");
        return;
    }
    let (_, _, oauth_req, _) = exchanges().swap_remove(1);
    let path = support::temp_path("secret-tui", "bin");
    std::fs::write(&path, &oauth_req).expect("write");
    let t = Tmux::new("secrets", "s");
    let cmd = format!(
        "NO_COLOR=1 '{}' --message '{}'; echo \"kafkashark exited $?\"; sleep 60",
        env!("CARGO_BIN_EXE_kafkashark"),
        path.display()
    );
    let out = t.run(&[
        "new-session",
        "-d",
        "-s",
        "s",
        "-x",
        "160",
        "-y",
        "50",
        "sh",
        "-c",
        &cmd,
    ]);
    assert!(out.status.success());
    // The tree redacts (waited for with the field: a screen caught mid-draw
    // may show the one and not yet the other).
    let s = t.wait("the message, redacted", |s| {
        s.contains("AuthBytes") && s.contains("<redacted")
    });
    let _ = t.run(&["send-keys", "-t", "s", "q"]);
    let _ = std::fs::remove_file(&path);
    // The byte view's text column is 16 characters wide: look for a piece.
    assert!(
        !s.contains("OAUTH-TO") && !s.contains("KEN-7f3a") && !s.contains("4f 41 55 54 48"),
        "the byte view shows the OAUTHBEARER token:\n{s}"
    );
}
