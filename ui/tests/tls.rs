//! Kafka over TLS from the command line, on the real captures of
//! `captures/tls/`: the SASL_SSL logins of d4 (SCRAM-SHA-256 and
//! SCRAM-SHA-512 to a broker that requires them, and PLAIN logins it
//! hangs up on) and of d5 (PLAIN logins over TLS 1.2, taken), decrypted,
//! are redacted exactly as the same bytes in plaintext are;
//! `--show-secrets` shows what was hidden; a key log line that cannot be
//! read is named by its number, never its text.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

fn tls(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../captures/tls")
        .join(name);
    p.is_file().then_some(p)
}

/// The SASL messages `print -V --format jsonl` gives, as (api, version,
/// correlation id, kind, fields) sorted: what identifies them across the
/// two captures (frames, streams and addresses differ).
fn sasl_trees(args: &[&std::ffi::OsStr]) -> Vec<String> {
    let out = bin()
        .arg("print")
        .args(args)
        .args([
            "-V",
            "--format",
            "jsonl",
            "-Y",
            "saslhandshake or saslauthenticate",
        ])
        .output()
        .expect("run print");
    assert!(out.status.success(), "{out:?}");
    let mut v: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let j: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {} {} {} {}",
                j["api_key"], j["api_version"], j["correlation_id"], j["kind"], j["fields"]
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn decrypted_sasl_is_redacted_as_plaintext_sasl_is() {
    let (Some(cap), Some(plain)) = (tls("d4-sasl-ssl.pcap"), tls("d4-sasl-ssl-plain.pcap")) else {
        return;
    };
    let keys = cap.with_extension("pcap.server.keys");
    let k = |extra: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = vec![
            cap.clone().into(),
            "--tls-keylog".into(),
            keys.clone().into(),
        ];
        a.extend(extra.iter().map(Into::into));
        a
    };
    let args = k(&[]);
    let got = sasl_trees(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>());
    let want = sasl_trees(&[plain.as_os_str(), "--ports".as_ref(), "9094".as_ref()]);
    // Logins of three producers and a consumer, each a handshake and two
    // SCRAM rounds, and the refused PLAIN handshake.
    assert!(got.len() >= 20, "{}", got.len());
    assert_eq!(got, want);
    let all = got.join("\n");
    assert!(all.contains("<redacted, "), "{all}");
    for secret in ["alice-secret", "bob-secret", ",p=", "n,,n="] {
        assert!(!all.contains(secret), "{secret} shown");
    }
    // The refused PLAIN login: asked for, never answered (the broker offers
    // SCRAM only and hangs up).
    assert!(all.contains(r#""value":"PLAIN""#));
    // --show-secrets shows the SCRAM messages' bytes (client-first:
    // "n,,n=alice", "n,,n=bob"), which were hidden.
    let args = k(&["--show-secrets"]);
    let shown = sasl_trees(&args.iter().map(|a| a.as_os_str()).collect::<Vec<_>>()).join("\n");
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    for first in ["n,,n=alice,", "n,,n=bob,"] {
        assert!(shown.contains(&hex(first)), "{first}");
        assert!(!all.contains(&hex(first)), "{first}");
    }
}

/// d5's PLAIN logins (kafka-python's producer and consumer as carol,
/// librdkafka's producer as dave), decrypted: the same trees as the
/// plaintext twin's, the passwords in their `AuthBytes`
/// (`authzid\0user\0password`) redacted, and shown with `--show-secrets`
/// (the tree shows a value's first 16 bytes).
#[test]
fn decrypted_plain_logins_are_redacted_as_plaintext_ones_are() {
    let (Some(cap), Some(plain)) = (tls("d5-sasl-plain.pcap"), tls("d5-sasl-plain-plain.pcap"))
    else {
        return;
    };
    let keys = cap.with_extension("pcap.server.keys");
    let args = |extra: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = vec![cap.clone().into(), "--tls-keylog".into()];
        a.push(keys.clone().into());
        a.extend(extra.iter().map(Into::into));
        a
    };
    fn os(a: &[std::ffi::OsString]) -> Vec<&std::ffi::OsStr> {
        a.iter().map(|a| a.as_os_str()).collect()
    }
    let got = sasl_trees(&os(&args(&[])));
    let want = sasl_trees(&[plain.as_os_str(), "--ports".as_ref(), "9094".as_ref()]);
    // Each login a handshake and an authenticate, asked and answered.
    assert!(got.len() >= 12, "{}", got.len());
    assert_eq!(got, want);
    let all = got.join("\n");
    assert!(all.contains(r#""value":"PLAIN""#), "{all}");
    let hex = |s: &str| s.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    // kafka-python sends its user as the authzid too; librdkafka none.
    let logins = ["carol\0carol\0caro", "\0dave\0dave-plain"];
    for login in logins {
        assert!(!all.contains(&hex(login)), "{login:?} shown");
    }
    assert!(!all.contains("plain-secret"));
    assert!(all.contains("<redacted, "));
    let shown = sasl_trees(&os(&args(&["--show-secrets"]))).join("\n");
    for login in logins {
        assert!(shown.contains(&hex(login)), "{login:?} not shown");
    }
}

#[test]
fn a_bad_key_log_line_is_named_by_its_number() {
    let Some(cap) = tls("d1-tls13.pcap") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("kafkashark-tls-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keys = std::fs::read_to_string(cap.with_extension("pcap.server.keys")).unwrap();
    let mut lines: Vec<&str> = keys.lines().collect();
    let secret_line = "CLIENT_RANDOM 00112233 topsecretvalue";
    lines.insert(3, secret_line);
    let bad = dir.join("bad.keys");
    std::fs::write(&bad, lines.join("\n") + "\n").unwrap();
    let out = bin()
        .arg("print")
        .arg(&cap)
        .arg("--tls-keylog")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.keys: line 4: the client random is not 64 hex digits"),
        "{err}"
    );
    assert!(
        !err.contains("topsecretvalue") && !err.contains("00112233"),
        "{err}"
    );
    // The other lines still decrypt.
    assert!(!out.stdout.is_empty());
    let missing = bin()
        .arg("print")
        .arg(&cap)
        .arg("--tls-keylog")
        .arg(dir.join("none.keys"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("none.keys"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Live on loopback: `print -i lo --tls-keylog K` started before two TLS
/// connections (Python's ssl, OpenSSL: one TLS 1.3, one TLS 1.2, each an
/// ApiVersions exchange with a server of `tls_live.py`) decrypts both from
/// the key log their clients write as they handshake, the file read as it
/// grows; the TLS 1.2 connection lasts a few milliseconds, less than the
/// key log's reader takes to see its line, so it is decrypted after it
/// closed. Skips when python3 or openssl is missing or lo cannot be
/// captured on (no privileges).
#[test]
fn live_capture_decrypts_from_the_key_log_as_it_grows() {
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("kafkashark-tls-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key, log) = (dir.join("c.pem"), dir.join("k.pem"), dir.join("keys.log"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=kafkashark-live-test", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        eprintln!("no openssl: skipped");
        return;
    }
    std::fs::write(&log, "").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut capture = bin()
        .args([
            "print",
            "-i",
            "lo",
            "--ports",
            &port.to_string(),
            "--format",
            "jsonl",
        ])
        .args(["--duration", "4", "--tls-keylog"])
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run print");
    // Time to open the interface (it says nothing when it has).
    std::thread::sleep(Duration::from_millis(1000));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls_live.py");
    let traffic = Command::new("python3")
        .arg(&script)
        .arg(port.to_string())
        .args([&log, &cert, &key])
        .output();
    let deadline = Instant::now() + Duration::from_secs(10);
    while capture.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = capture.kill();
    let out = capture.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    let Ok(traffic) = traffic else {
        eprintln!("no python3: skipped");
        return;
    };
    assert!(traffic.status.success(), "{traffic:?}");
    if !out.status.success() && said.contains("interface lo") {
        eprintln!("cannot capture on lo: skipped ({said})");
        return;
    }
    assert!(out.status.success(), "{said}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (corr, client) in [(42, "live-tls-13"), (43, "live-tls-12")] {
        let of = |kind: &str| {
            lines.iter().find(|m| {
                m["correlation_id"] == corr && m["kind"] == kind && m["api_name"] == "ApiVersions"
            })
        };
        let req = of("request").unwrap_or_else(|| panic!("request {corr}: {lines:?} {said}"));
        assert_eq!(req["client_id"], client);
        assert_eq!(req["paired"], true);
        let resp = of("response").unwrap_or_else(|| panic!("response {corr}: {said}"));
        assert_eq!(resp["paired"], true);
    }
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(!said.contains("no key"), "{said}");
}
