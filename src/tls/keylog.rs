//! The NSS key log format (what `SSLKEYLOGFILE` and `keylog_filename` write):
//! the secrets of TLS sessions, found by their ClientHello's random.
//!
//! Place in the data path: a front end reads a key log file (again as it
//! grows, for live capture) and hands its bytes to [`KeyLog::feed`]; the TLS
//! layer asks [`KeyLog::get`] for a session's secrets by its client random.
//! A line is `LABEL <client random, 64 hex digits> <secret, hex>`:
//! `CLIENT_RANDOM` with TLS 1.2's 48-byte master secret; TLS 1.3's
//! `CLIENT_HANDSHAKE_TRAFFIC_SECRET`, `SERVER_HANDSHAKE_TRAFFIC_SECRET`,
//! `CLIENT_TRAFFIC_SECRET_0`, `SERVER_TRAFFIC_SECRET_0` (and the early and
//! exporter secrets), 32 or 48 bytes by the suite's hash.
//!
//! Invariants: pure (the bytes come from the front end); a line that cannot
//! be read is reported with its line number and why, never with its text (a
//! secret must not reach any output), and the others are still read; no
//! secret shows in `Debug`; memory is bounded: at most [`MAX_SESSIONS`]
//! sessions (later ones are counted, not kept) and a line of at most
//! [`MAX_LINE`] bytes waiting for its end.

use std::fmt;

use rustc_hash::FxHashMap as HashMap;

/// Most sessions kept; a key log of more is refused past it (counted).
pub const MAX_SESSIONS: usize = 1 << 20;

/// Longest line read: the longest valid line is under 240 bytes.
pub const MAX_LINE: usize = 1024;

/// What a key log line gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    /// TLS 1.2 (and earlier): the master secret.
    ClientRandom,
    /// TLS 1.3: the client's early (0-RTT) traffic secret.
    ClientEarlyTraffic,
    /// TLS 1.3: the client's handshake traffic secret.
    ClientHandshakeTraffic,
    /// TLS 1.3: the server's handshake traffic secret.
    ServerHandshakeTraffic,
    /// TLS 1.3: the client's first application traffic secret.
    ClientTraffic0,
    /// TLS 1.3: the server's first application traffic secret.
    ServerTraffic0,
    /// TLS 1.3: the exporter secret.
    Exporter,
    /// TLS 1.3: the early exporter secret.
    EarlyExporter,
    /// TLS 1.3: a client traffic secret after a KeyUpdate, as OpenSSL 3
    /// logs it (not needed: decryption derives it).
    ClientTrafficN,
    /// TLS 1.3: a server traffic secret after a KeyUpdate (OpenSSL 3).
    ServerTrafficN,
}

impl Label {
    /// Every label, with its name in the file.
    pub const ALL: [(Label, &'static str); 10] = [
        (Label::ClientRandom, "CLIENT_RANDOM"),
        (Label::ClientEarlyTraffic, "CLIENT_EARLY_TRAFFIC_SECRET"),
        (
            Label::ClientHandshakeTraffic,
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        ),
        (
            Label::ServerHandshakeTraffic,
            "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        ),
        (Label::ClientTraffic0, "CLIENT_TRAFFIC_SECRET_0"),
        (Label::ServerTraffic0, "SERVER_TRAFFIC_SECRET_0"),
        (Label::Exporter, "EXPORTER_SECRET"),
        (Label::EarlyExporter, "EARLY_EXPORTER_SECRET"),
        (Label::ClientTrafficN, "CLIENT_TRAFFIC_SECRET_N"),
        (Label::ServerTrafficN, "SERVER_TRAFFIC_SECRET_N"),
    ];

    /// The label's name in a key log.
    pub fn name(self) -> &'static str {
        Label::ALL
            .iter()
            .find(|(l, _)| *l == self)
            .map_or("", |(_, n)| n)
    }

    fn parse(s: &[u8]) -> Option<Label> {
        Label::ALL
            .iter()
            .find(|(_, n)| n.as_bytes() == s)
            .map(|(l, _)| *l)
    }

    /// The secret's lengths this label takes: a master secret is 48 bytes;
    /// a TLS 1.3 secret is as long as its suite's hash (SHA-256 or SHA-384).
    fn lengths(self) -> &'static [usize] {
        match self {
            Label::ClientRandom => &[48],
            _ => &[32, 48],
        }
    }
}

/// A secret's bytes; `Debug` shows only its length.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// The secret.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// The secrets a key log gives one session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Secrets {
    /// TLS 1.2: the master secret.
    pub master: Option<Secret>,
    /// TLS 1.3: the client's early traffic secret.
    pub client_early: Option<Secret>,
    /// TLS 1.3: the client's handshake traffic secret.
    pub client_handshake: Option<Secret>,
    /// TLS 1.3: the server's handshake traffic secret.
    pub server_handshake: Option<Secret>,
    /// TLS 1.3: the client's first application traffic secret.
    pub client_traffic_0: Option<Secret>,
    /// TLS 1.3: the server's first application traffic secret.
    pub server_traffic_0: Option<Secret>,
    /// TLS 1.3: the exporter secret.
    pub exporter: Option<Secret>,
    /// TLS 1.3: the early exporter secret.
    pub early_exporter: Option<Secret>,
    /// TLS 1.3: the last client traffic secret after a KeyUpdate (OpenSSL 3).
    pub client_traffic_n: Option<Secret>,
    /// TLS 1.3: the last server traffic secret after a KeyUpdate (OpenSSL 3).
    pub server_traffic_n: Option<Secret>,
}

impl Secrets {
    fn slot(&mut self, l: Label) -> &mut Option<Secret> {
        match l {
            Label::ClientRandom => &mut self.master,
            Label::ClientEarlyTraffic => &mut self.client_early,
            Label::ClientHandshakeTraffic => &mut self.client_handshake,
            Label::ServerHandshakeTraffic => &mut self.server_handshake,
            Label::ClientTraffic0 => &mut self.client_traffic_0,
            Label::ServerTraffic0 => &mut self.server_traffic_0,
            Label::Exporter => &mut self.exporter,
            Label::EarlyExporter => &mut self.early_exporter,
            Label::ClientTrafficN => &mut self.client_traffic_n,
            Label::ServerTrafficN => &mut self.server_traffic_n,
        }
    }

    /// True when the secrets a session of TLS `version` (0x0304: 1.3, else
    /// 1.2) is decrypted with are all here: a key log's writer gives a TLS
    /// 1.3 session's handshake secrets before its traffic secrets, and a
    /// growing log read between the two has only some.
    pub fn complete(&self, version: u16) -> bool {
        if version == 0x0304 {
            [
                &self.client_handshake,
                &self.server_handshake,
                &self.client_traffic_0,
                &self.server_traffic_0,
            ]
            .iter()
            .all(|s| s.is_some())
        } else {
            self.master.is_some()
        }
    }

    /// The secret of `l`, if the key log gave it.
    pub fn get(&self, l: Label) -> Option<&Secret> {
        match l {
            Label::ClientRandom => self.master.as_ref(),
            Label::ClientEarlyTraffic => self.client_early.as_ref(),
            Label::ClientHandshakeTraffic => self.client_handshake.as_ref(),
            Label::ServerHandshakeTraffic => self.server_handshake.as_ref(),
            Label::ClientTraffic0 => self.client_traffic_0.as_ref(),
            Label::ServerTraffic0 => self.server_traffic_0.as_ref(),
            Label::Exporter => self.exporter.as_ref(),
            Label::EarlyExporter => self.early_exporter.as_ref(),
            Label::ClientTrafficN => self.client_traffic_n.as_ref(),
            Label::ServerTrafficN => self.server_traffic_n.as_ref(),
        }
    }
}

/// A key log line that could not be read: its number (from 1) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// The line's number, from 1.
    pub line: u64,
    /// Why it was not read (never the line's text).
    pub what: &'static str,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

/// The sessions of a key log, read line by line as its bytes come.
#[derive(Debug, Default)]
pub struct KeyLog {
    sessions: HashMap<[u8; 32], Secrets>,
    /// The last line's bytes, until its end comes.
    partial: Vec<u8>,
    /// The partial line is too long: skipped up to its end.
    skipping: bool,
    /// Lines read (complete ones).
    lines: u64,
    /// Sessions past [`MAX_SESSIONS`], not kept.
    refused: u64,
}

impl KeyLog {
    /// An empty key log.
    pub fn new() -> KeyLog {
        KeyLog::default()
    }

    /// Reads the key log's next bytes (a whole file, or what it grew by):
    /// every line they complete; the last line waits for its end (or for
    /// [`KeyLog::finish`]). The lines that could not be read.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<LineError> {
        let mut errors = Vec::new();
        let mut rest = bytes;
        while let Some(at) = memchr::memchr(b'\n', rest) {
            let (line, after) = rest.split_at(at);
            rest = after.get(1..).unwrap_or_default();
            self.lines += 1;
            if std::mem::take(&mut self.skipping) {
                self.partial.clear();
                errors.push(self.error("longer than any key log line"));
                continue;
            }
            let whole = if self.partial.is_empty() {
                self.line(line)
            } else {
                let mut l = std::mem::take(&mut self.partial);
                l.extend_from_slice(line);
                let r = self.line(&l);
                l.clear();
                self.partial = l;
                r
            };
            if let Err(what) = whole {
                errors.push(self.error(what));
            }
        }
        if !self.skipping {
            self.partial.extend_from_slice(rest);
            if self.partial.len() > MAX_LINE {
                self.partial.clear();
                self.skipping = true;
            }
        }
        errors
    }

    /// The last line, when the key log does not end with a line end.
    pub fn finish(&mut self) -> Vec<LineError> {
        if self.partial.is_empty() && !self.skipping {
            return Vec::new();
        }
        self.feed(b"\n")
    }

    fn error(&self, what: &'static str) -> LineError {
        LineError {
            line: self.lines,
            what,
        }
    }

    /// Reads one line (without its `\n`).
    fn line(&mut self, line: &[u8]) -> Result<(), &'static str> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut words = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty());
        let Some(first) = words.next() else {
            return Ok(());
        };
        if first.starts_with(b"#") {
            return Ok(());
        }
        let label = Label::parse(first).ok_or("not a key log label")?;
        let (Some(random), Some(secret), None) = (words.next(), words.next(), words.next()) else {
            return Err("not three words: label, client random, secret");
        };
        let random: [u8; 32] = unhex(random)
            .and_then(|r| r.try_into().ok())
            .ok_or("the client random is not 64 hex digits")?;
        let secret = unhex(secret)
            .filter(|s| label.lengths().contains(&s.len()))
            .ok_or(match label {
                Label::ClientRandom => "the master secret is not 96 hex digits",
                _ => "the secret is not 64 or 96 hex digits",
            })?;
        let len = self.sessions.len();
        match self.sessions.get_mut(&random) {
            Some(s) => *s.slot(label) = Some(Secret(secret)),
            None if len >= MAX_SESSIONS => self.refused += 1,
            None => {
                let mut s = Secrets::default();
                *s.slot(label) = Some(Secret(secret));
                self.sessions.insert(random, s);
            }
        }
        Ok(())
    }

    /// The secrets of the session whose ClientHello carried `client_random`.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<&Secrets> {
        self.sessions.get(client_random)
    }

    /// The key log lines of the session whose ClientHello carried
    /// `client_random` (for a capture that carries its own keys, as
    /// `print -w --embed-keys` writes); empty when it is not known.
    pub fn lines_of(&self, client_random: &[u8; 32]) -> String {
        let Some(s) = self.sessions.get(client_random) else {
            return String::new();
        };
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let random = hex(client_random);
        Label::ALL
            .iter()
            .filter_map(|(l, name)| Some(format!("{name} {random} {}\n", hex(s.get(*l)?.bytes()))))
            .collect()
    }

    /// Sessions known.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// No session known.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Complete lines read.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Sessions not kept: past [`MAX_SESSIONS`].
    pub fn refused(&self) -> u64 {
        self.refused
    }
}

/// A key log shared between the front end that reads it (a file read once,
/// or re-read as it grows during a live capture) and the pipelines that
/// look sessions up in it. Cloning shares it; two handles are equal when
/// they share one key log.
#[derive(Clone, Default)]
pub struct Keys {
    log: std::sync::Arc<std::sync::Mutex<KeyLog>>,
    growing: bool,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("sessions", &self.with(|k| k.len()))
            .field("growing", &self.growing)
            .finish()
    }
}

impl PartialEq for Keys {
    fn eq(&self, other: &Keys) -> bool {
        std::sync::Arc::ptr_eq(&self.log, &other.log) && self.growing == other.growing
    }
}

impl Eq for Keys {}

impl Keys {
    /// A handle on `log`; `growing` when more lines may come later (a live
    /// capture's key log): a session whose key is not there yet is waited
    /// for a while instead of given up at once.
    pub fn new(log: KeyLog, growing: bool) -> Keys {
        Keys {
            log: std::sync::Arc::new(std::sync::Mutex::new(log)),
            growing,
        }
    }

    /// Whether more lines may come.
    pub fn growing(&self) -> bool {
        self.growing
    }

    /// Runs `f` on the key log (a poisoned lock is taken over: the log is
    /// never left half-changed by a line).
    pub fn with<R>(&self, f: impl FnOnce(&mut KeyLog) -> R) -> R {
        let mut g = self.log.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    /// The secrets of the session whose ClientHello carried `client_random`.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<Secrets> {
        self.with(|k| k.get(client_random).cloned())
    }
}

/// The bytes of an even number of hex digits (either case).
fn unhex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 2 * 64 {
        return None;
    }
    let digit = |c: u8| char::from(c).to_digit(16);
    s.chunks_exact(2)
        .map(|p| match p {
            [a, b] => Some((digit(*a)? * 16 + digit(*b)?) as u8),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
