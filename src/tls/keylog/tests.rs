use super::*;

/// `n` bytes of hex, each byte `b`.
fn hex(b: u8, n: usize) -> String {
    format!("{b:02x}").repeat(n)
}

fn line(label: &str, random: u8, secret: u8, n: usize) -> String {
    format!("{label} {} {}\n", hex(random, 32), hex(secret, n))
}

/// A TLS 1.3 session's four traffic secrets and a TLS 1.2 master secret,
/// fed whole and byte by byte: the same sessions, the same secrets.
#[test]
fn sessions_are_read_however_the_bytes_come() {
    let mut text = String::from("# a comment\n\n");
    for l in [
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0",
    ] {
        text.push_str(&line(l, 0xa1, 0x10 + l.len() as u8, 32));
    }
    text.push_str(&line("CLIENT_RANDOM", 0xb2, 0x77, 48).replace('\n', "\r\n"));
    let whole = {
        let mut k = KeyLog::new();
        assert!(k.feed(text.as_bytes()).is_empty());
        k
    };
    let mut bytes = KeyLog::new();
    for b in text.as_bytes() {
        assert!(bytes.feed(std::slice::from_ref(b)).is_empty());
    }
    for k in [&whole, &bytes] {
        assert_eq!(k.len(), 2);
        assert_eq!(k.lines(), 7);
        let s13 = k.get(&[0xa1; 32]).expect("TLS 1.3 session");
        let s = s13.get(Label::ClientTraffic0).expect("secret");
        assert_eq!(s.bytes(), &[0x10 + 23; 32][..]);
        assert!(s13.master.is_none() && s13.server_handshake.is_some());
        let s12 = k.get(&[0xb2; 32]).expect("TLS 1.2 session");
        assert_eq!(
            s12.master.as_ref().map(Secret::bytes),
            Some(&[0x77; 48][..])
        );
    }
    assert_eq!(whole.sessions, bytes.sessions);
}

/// Lines that cannot be read are reported by number and reason, without
/// their text; the lines around them are still read.
#[test]
fn bad_lines_are_numbered_and_never_quoted() {
    let good = line("CLIENT_RANDOM", 1, 0xcd, 48);
    let bad = [
        "RSA 0011223344556677 0011\n".to_string(),
        format!("CLIENT_RANDOM {} {}\n", hex(2, 31), hex(0xcd, 48)),
        format!("CLIENT_RANDOM {} {}\n", hex(3, 32), hex(0xcd, 32)),
        format!("CLIENT_TRAFFIC_SECRET_0 {} {}\n", hex(4, 32), hex(0xcd, 40)),
        format!(
            "CLIENT_TRAFFIC_SECRET_0 {} {}zz\n",
            hex(5, 32),
            hex(0xcd, 31)
        ),
        format!("CLIENT_RANDOM {}\n", hex(6, 32)),
        format!("CLIENT_RANDOM {} {} extra\n", hex(7, 32), hex(0xcd, 48)),
    ];
    let mut text = good.clone();
    bad.iter().for_each(|b| text.push_str(b));
    text.push_str(&line("SERVER_TRAFFIC_SECRET_0", 8, 0xcd, 48));
    let mut k = KeyLog::new();
    let errors = k.feed(text.as_bytes());
    let lines: Vec<u64> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(errors[0].what, "not a key log label");
    assert_eq!(errors[1].what, "the client random is not 64 hex digits");
    assert_eq!(errors[2].what, "the master secret is not 96 hex digits");
    assert_eq!(errors[3].what, "the secret is not 64 or 96 hex digits");
    for e in &errors {
        let shown = format!("{e} {e:?}");
        assert!(
            !shown.contains("cdcd") && !shown.contains("0011"),
            "{shown}"
        );
    }
    assert_eq!(k.len(), 2);
    assert!(k
        .get(&[8; 32])
        .is_some_and(|s| s.server_traffic_0.is_some()));
}

/// `Debug` of the key log shows no secret.
#[test]
fn no_secret_in_debug() {
    let mut k = KeyLog::new();
    assert!(k
        .feed(line("CLIENT_RANDOM", 1, 0xee, 48).as_bytes())
        .is_empty());
    let shown = format!("{k:?}");
    assert!(shown.contains("Secret(48 bytes)"), "{shown}");
    assert!(
        !shown.contains("238, 238") && !shown.contains("eeee"),
        "{shown}"
    );
}

/// A line longer than any key log line is skipped up to its end, with no
/// more than `MAX_LINE` bytes held; a last line without its end is read by
/// `finish`.
#[test]
fn long_and_unended_lines() {
    let mut k = KeyLog::new();
    let long = "x".repeat(10 * MAX_LINE);
    assert!(k.feed(long.as_bytes()).is_empty());
    assert!(k.partial.len() <= MAX_LINE);
    assert!(k.feed(long.as_bytes()).is_empty());
    let errors = k.feed(format!("\n{}", line("CLIENT_RANDOM", 9, 1, 48).trim_end()).as_bytes());
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0].line, errors[0].what),
        (1, "longer than any key log line")
    );
    assert!(k.is_empty());
    assert!(k.finish().is_empty());
    assert!(k.get(&[9; 32]).is_some());
    assert_eq!(k.lines(), 2);
}
