//! Kafka over TLS from the command line, on the real captures of
//! `captures/tls/`: the SASL_SSL logins of d4 (SCRAM-SHA-256 and
//! SCRAM-SHA-512 to a broker that requires them, and PLAIN logins it
//! hangs up on), decrypted, are redacted exactly as the same bytes in
//! plaintext are; `--show-secrets` shows what was hidden; a key log line
//! that cannot be read is named by its number, never its text.

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
