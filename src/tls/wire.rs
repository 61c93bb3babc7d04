//! TLS on the wire, without keys: records cut from a connection's byte
//! stream, handshake messages gathered from them, and what the hellos and
//! alerts say (RFC 5246, RFC 8446).
//!
//! Place in the data path: a connection's bytes, one direction at a time
//! ([`Records::push`]), become records; the plaintext handshake records
//! ([`Handshakes`]) become messages, of which the ClientHello and
//! ServerHello are read ([`ClientHello::parse`], [`ServerHello::parse`]).
//!
//! Invariants: pure; never trusts a length from the wire for an allocation
//! (a record is at most [`MAX_RECORD`] bytes, a handshake message at most
//! [`MAX_HANDSHAKE`]: anything longer is an error, and the direction is not
//! read further); what cannot be read is said, never guessed.

#![deny(clippy::indexing_slicing)]

use crate::kafka::wire::Reader;

/// A record's header: type, version, length.
pub const HEADER: usize = 5;

/// The longest record body: 2^14 plus the 2,048 bytes TLS 1.2 allows a
/// ciphertext beyond its plaintext.
pub const MAX_RECORD: usize = (1 << 14) + 2048;

/// The longest handshake message gathered (a certificate chain of a few
/// certificates fits many times over).
pub const MAX_HANDSHAKE: usize = 1 << 20;

/// A record's content type.
pub mod content {
    /// ChangeCipherSpec.
    pub const CHANGE_CIPHER_SPEC: u8 = 20;
    /// Alert.
    pub const ALERT: u8 = 21;
    /// Handshake.
    pub const HANDSHAKE: u8 = 22;
    /// Application data.
    pub const APPLICATION_DATA: u8 = 23;
}

/// A handshake message's type.
pub mod handshake {
    /// ClientHello.
    pub const CLIENT_HELLO: u8 = 1;
    /// ServerHello (and HelloRetryRequest).
    pub const SERVER_HELLO: u8 = 2;
    /// NewSessionTicket.
    pub const NEW_SESSION_TICKET: u8 = 4;
    /// Certificate.
    pub const CERTIFICATE: u8 = 11;
    /// Finished.
    pub const FINISHED: u8 = 20;
    /// KeyUpdate (TLS 1.3).
    pub const KEY_UPDATE: u8 = 24;
}

/// Whether `b` starts like a TLS connection's first bytes from a client: a
/// handshake record of TLS 1.0 to 1.2's record version holding a
/// ClientHello (`Some(false)`: not TLS; `None`: too few bytes to say).
pub fn starts_client_hello(b: &[u8]) -> Option<bool> {
    // Byte 0 the type, 1 and 2 the record version, 5 the handshake type.
    let checks = [
        (0, content::HANDSHAKE..=content::HANDSHAKE),
        (1, 3..=3),
        (2, 1..=3),
        (5, handshake::CLIENT_HELLO..=handshake::CLIENT_HELLO),
    ];
    for (i, ok) in checks {
        match b.get(i) {
            None => return None,
            Some(v) if !ok.contains(v) => return Some(false),
            Some(_) => {}
        }
    }
    let len = match b.get(3..5) {
        Some(&[x, y]) => usize::from(u16::from_be_bytes([x, y])),
        _ => return None,
    };
    Some((4..=MAX_RECORD).contains(&len))
}

/// One record: its type, version, body, and where its header starts in its
/// direction's byte stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Content type ([`content`]).
    pub content: u8,
    /// The record layer's version (0x0303 for TLS 1.2 and, frozen, 1.3).
    pub version: u16,
    /// The body (ciphertext once the keys are in use).
    pub body: Vec<u8>,
    /// Stream offset of the record's first header byte.
    pub at: u64,
    /// Its place among the direction's records, counted from 1.
    pub n: u64,
}

impl Record {
    /// Its type and version (with the sequence number and a length, what
    /// its protection authenticates).
    pub fn head(&self) -> (u8, u16) {
        (self.content, self.version)
    }
}

/// Why a direction's bytes are not read as records any further.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// A header that is no TLS record's, at this stream offset.
    NotTls(u64),
    /// A record longer than [`MAX_RECORD`], at this stream offset.
    TooLong(u64),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::NotTls(at) => write!(f, "not a TLS record at stream offset {at}"),
            RecordError::TooLong(at) => {
                write!(
                    f,
                    "a record longer than {MAX_RECORD} bytes at stream offset {at}"
                )
            }
        }
    }
}

/// One direction's records, cut from its bytes as they come.
#[derive(Debug, Default)]
pub struct Records {
    /// The header of the record being gathered (`head_len` bytes of it so far).
    head: [u8; HEADER],
    head_len: usize,
    /// Its body so far (at most [`MAX_RECORD`]): each byte copied once, the
    /// body handed on as it is.
    body: Vec<u8>,
    /// Stream offset of the record's first header byte.
    at: u64,
    /// Records completed.
    count: u64,
    /// Once set, nothing more is read.
    failed: Option<RecordError>,
}

impl Records {
    /// A direction from stream offset 0.
    pub fn new() -> Records {
        Records::default()
    }

    /// Takes the direction's next bytes and appends the records they
    /// complete to `out`; `Err` once they are not TLS records (and ever after).
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<Record>) -> Result<(), RecordError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        while !bytes.is_empty() {
            if self.head_len < HEADER {
                let take = (HEADER - self.head_len).min(bytes.len());
                let (now, rest) = bytes.split_at(take);
                if let Some(h) = self.head.get_mut(self.head_len..self.head_len + take) {
                    h.copy_from_slice(now);
                }
                self.head_len += take;
                bytes = rest;
                if self.head_len < HEADER {
                    break;
                }
                let [ty, major, _, _, _] = self.head;
                if !(20..=24).contains(&ty) || major != 3 {
                    return Err(*self.failed.insert(RecordError::NotTls(self.at)));
                }
                if self.len() > MAX_RECORD {
                    return Err(*self.failed.insert(RecordError::TooLong(self.at)));
                }
                self.body = Vec::with_capacity(self.len());
            }
            let take = (self.len() - self.body.len()).min(bytes.len());
            let (now, rest) = bytes.split_at(take);
            self.body.extend_from_slice(now);
            bytes = rest;
            if self.body.len() == self.len() {
                let [ty, major, minor, _, _] = self.head;
                self.count += 1;
                out.push(Record {
                    content: ty,
                    version: u16::from_be_bytes([major, minor]),
                    body: std::mem::take(&mut self.body),
                    at: self.at,
                    n: self.count,
                });
                self.at += (HEADER + self.len()) as u64;
                self.head_len = 0;
            }
        }
        Ok(())
    }

    /// Stream offset of the next record's first header byte.
    pub fn next_at(&self) -> u64 {
        self.at
    }

    /// The body length the header says.
    fn len(&self) -> usize {
        let [_, _, _, a, b] = self.head;
        usize::from(u16::from_be_bytes([a, b]))
    }
}

/// Handshake messages gathered from one direction's plaintext handshake
/// records (a message may span records, a record hold several).
#[derive(Debug, Default)]
pub struct Handshakes {
    pending: Vec<u8>,
    failed: bool,
}

impl Handshakes {
    /// Nothing gathered.
    pub fn new() -> Handshakes {
        Handshakes::default()
    }

    /// Takes a handshake record's plaintext body; appends the messages it
    /// completes (type, body) to `out`. False once a message claims more than
    /// [`MAX_HANDSHAKE`] bytes (then nothing more is gathered).
    pub fn push(&mut self, body: &[u8], out: &mut Vec<(u8, Vec<u8>)>) -> bool {
        if self.failed {
            return false;
        }
        self.pending.extend_from_slice(body);
        loop {
            let Some(&[ty, a, b, c]) = self.pending.get(..4) else {
                return true;
            };
            let len = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
            if len > MAX_HANDSHAKE {
                self.failed = true;
                self.pending = Vec::new();
                return false;
            }
            let Some(msg) = self.pending.get(4..4 + len) else {
                return true;
            };
            out.push((ty, msg.to_vec()));
            self.pending.drain(..4 + len);
        }
    }
}

/// A vector with a length prefix of `n` bytes (1 or 2), read by the
/// project's checked reader.
fn vec<'a>(c: &mut Reader<'a>, n: usize) -> Option<&'a [u8]> {
    let len = match n {
        1 => usize::from(c.u8().ok()?),
        _ => usize::from(c.u16().ok()?),
    };
    c.take(len).ok()
}

/// A big-endian u16 from two bytes (0 from any other count).
fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes(b.try_into().unwrap_or_default())
}

/// Extension numbers read from the hellos.
mod ext {
    pub const SERVER_NAME: u16 = 0;
    pub const ALPN: u16 = 16;
    pub const ENCRYPT_THEN_MAC: u16 = 22;
    pub const SESSION_TICKET: u16 = 35;
    pub const PRE_SHARED_KEY: u16 = 41;
    pub const SUPPORTED_VERSIONS: u16 = 43;
}

/// What a ClientHello says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `legacy_version` (0x0303 for TLS 1.2 and 1.3).
    pub version: u16,
    /// The client random: the key log's key for the session.
    pub random: [u8; 32],
    /// The session id offered (TLS 1.2 resumption, or TLS 1.3's legacy echo).
    pub session_id: Vec<u8>,
    /// Cipher suites offered.
    pub cipher_suites: Vec<u16>,
    /// The server name (SNI), when sent.
    pub server_name: Option<String>,
    /// Application protocols offered (ALPN).
    pub alpn: Vec<String>,
    /// Versions offered in `supported_versions` (TLS 1.3 clients).
    pub supported_versions: Vec<u16>,
    /// A session ticket offered (TLS 1.2) or a pre-shared key (TLS 1.3).
    pub offers_resumption: bool,
}

impl ClientHello {
    /// Reads a ClientHello's body; `Err` names the first field that does not read.
    pub fn parse(body: &[u8]) -> Result<ClientHello, &'static str> {
        let mut c = Reader::new(body);
        let version = c.u16().ok().ok_or("legacy_version")?;
        let random = c
            .take(32)
            .ok()
            .and_then(|r| r.try_into().ok())
            .ok_or("random")?;
        let session_id = vec(&mut c, 1).ok_or("legacy_session_id")?.to_vec();
        let suites = vec(&mut c, 2).ok_or("cipher_suites")?;
        let cipher_suites = suites.chunks_exact(2).map(be16).collect();
        vec(&mut c, 1).ok_or("legacy_compression_methods")?;
        let mut h = ClientHello {
            version,
            random,
            session_id,
            cipher_suites,
            ..ClientHello::default()
        };
        each_extension(&mut c, |ty, mut d| {
            match ty {
                ext::SERVER_NAME => {
                    let mut list = Reader::new(vec(&mut d, 2).ok_or("server_name list")?);
                    while list.remaining() > 0 {
                        let kind = list.u8().ok().ok_or("server_name type")?;
                        let name = vec(&mut list, 2).ok_or("server_name")?;
                        if kind == 0 && h.server_name.is_none() {
                            h.server_name = Some(String::from_utf8_lossy(name).into_owned());
                        }
                    }
                }
                ext::ALPN => {
                    let mut list = Reader::new(vec(&mut d, 2).ok_or("ALPN list")?);
                    while list.remaining() > 0 {
                        let p = vec(&mut list, 1).ok_or("ALPN protocol")?;
                        h.alpn.push(String::from_utf8_lossy(p).into_owned());
                    }
                }
                ext::SUPPORTED_VERSIONS => {
                    let list = vec(&mut d, 1).ok_or("supported_versions")?;
                    h.supported_versions = list.chunks_exact(2).map(be16).collect();
                }
                ext::SESSION_TICKET => h.offers_resumption |= d.remaining() > 0,
                ext::PRE_SHARED_KEY => h.offers_resumption = true,
                _ => {}
            }
            Ok(())
        })?;
        Ok(h)
    }
}

/// Calls `f` with each extension's type and data, when the hello has any
/// (a hello may end before its extensions).
fn each_extension(
    c: &mut Reader<'_>,
    mut f: impl FnMut(u16, Reader<'_>) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    if c.remaining() == 0 {
        return Ok(());
    }
    let mut exts = Reader::new(vec(c, 2).ok_or("extensions")?);
    while exts.remaining() > 0 {
        let ty = exts.u16().ok().ok_or("extension type")?;
        f(ty, Reader::new(vec(&mut exts, 2).ok_or("extension data")?))?;
    }
    Ok(())
}

/// The random of a HelloRetryRequest (RFC 8446, 4.1.3): a ServerHello with
/// it asks the client for another ClientHello.
const HELLO_RETRY: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

/// What a ServerHello says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerHello {
    /// The version chosen: `supported_versions`' when sent (TLS 1.3), else
    /// `legacy_version`.
    pub version: u16,
    /// The server random.
    pub random: [u8; 32],
    /// The session id (a TLS 1.2 server echoing the client's resumes it).
    pub session_id: Vec<u8>,
    /// The cipher suite chosen.
    pub cipher_suite: u16,
    /// A TLS 1.3 server accepted a pre-shared key (a resumption).
    pub psk_accepted: bool,
    /// A HelloRetryRequest, not a ServerHello.
    pub retry: bool,
    /// TLS 1.2: encrypt-then-MAC agreed (RFC 7366) for a CBC suite.
    pub encrypt_then_mac: bool,
}

impl ServerHello {
    /// Reads a ServerHello's body; `Err` names the first field that does not read.
    pub fn parse(body: &[u8]) -> Result<ServerHello, &'static str> {
        let mut c = Reader::new(body);
        let legacy = c.u16().ok().ok_or("legacy_version")?;
        let random: [u8; 32] = c
            .take(32)
            .ok()
            .and_then(|r| r.try_into().ok())
            .ok_or("random")?;
        let session_id = vec(&mut c, 1).ok_or("legacy_session_id_echo")?.to_vec();
        let cipher_suite = c.u16().ok().ok_or("cipher_suite")?;
        c.u8().ok().ok_or("legacy_compression_method")?;
        let mut h = ServerHello {
            version: legacy,
            random,
            session_id,
            cipher_suite,
            retry: random == HELLO_RETRY,
            ..ServerHello::default()
        };
        each_extension(&mut c, |ty, mut d| {
            match ty {
                ext::SUPPORTED_VERSIONS => h.version = d.u16().ok().ok_or("selected_version")?,
                ext::PRE_SHARED_KEY => h.psk_accepted = true,
                ext::ENCRYPT_THEN_MAC => h.encrypt_then_mac = true,
                _ => {}
            }
            Ok(())
        })?;
        Ok(h)
    }
}

/// What the server's certificate (the first of its Certificate message's
/// list) says, read by `x509-parser`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Certificate {
    /// Its subject (`CN=broker-1.example.com, O=…`).
    pub subject: String,
    /// Its issuer.
    pub issuer: String,
    /// Not valid before (epoch seconds).
    pub not_before: i64,
    /// Not valid after (epoch seconds).
    pub not_after: i64,
    /// The last day it is valid, UTC (`2036-11-30`).
    pub until: String,
}

impl Certificate {
    /// The first certificate of a Certificate message's body (TLS 1.3's
    /// has a request context and per-certificate extensions, `tls13`);
    /// `None` when there is none or it does not read.
    pub fn leaf(body: &[u8], tls13: bool) -> Option<Certificate> {
        let mut c = Reader::new(body);
        if tls13 {
            vec(&mut c, 1)?;
        }
        let n = u24(&mut c)?;
        let mut l = Reader::new(c.take(n).ok()?);
        let n = u24(&mut l)?;
        let der = l.take(n).ok()?;
        let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
        let v = cert.validity();
        let end = v.not_after.to_datetime();
        let until = format!(
            "{:04}-{:02}-{:02}",
            end.year(),
            u8::from(end.month()),
            end.day()
        );
        Some(Certificate {
            until,
            subject: cert.subject().to_string(),
            issuer: cert.issuer().to_string(),
            not_before: v.not_before.timestamp(),
            not_after: v.not_after.timestamp(),
        })
    }
}

/// A 24-bit length.
fn u24(c: &mut Reader<'_>) -> Option<usize> {
    let b = c.take(3).ok()?;
    Some(b.iter().fold(0usize, |n, &x| n << 8 | usize::from(x)))
}

/// A version's name: `TLS 1.2`.
pub fn version_name(v: u16) -> String {
    match v {
        0x0300 => "SSL 3.0".into(),
        0x0301 => "TLS 1.0".into(),
        0x0302 => "TLS 1.1".into(),
        0x0303 => "TLS 1.2".into(),
        0x0304 => "TLS 1.3".into(),
        v => format!("0x{v:04x}"),
    }
}

/// The IANA names of the cipher suites Kafka's clients and brokers use.
const SUITES: &[(u16, &str)] = &[
    (0x002f, "TLS_RSA_WITH_AES_128_CBC_SHA"),
    (0x0035, "TLS_RSA_WITH_AES_256_CBC_SHA"),
    (0x003c, "TLS_RSA_WITH_AES_128_CBC_SHA256"),
    (0x003d, "TLS_RSA_WITH_AES_256_CBC_SHA256"),
    (0x009c, "TLS_RSA_WITH_AES_128_GCM_SHA256"),
    (0x009d, "TLS_RSA_WITH_AES_256_GCM_SHA384"),
    (0x1301, "TLS_AES_128_GCM_SHA256"),
    (0x1302, "TLS_AES_256_GCM_SHA384"),
    (0x1303, "TLS_CHACHA20_POLY1305_SHA256"),
    (0xc009, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"),
    (0xc00a, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA"),
    (0xc013, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
    (0xc014, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA"),
    (0xc023, "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"),
    (0xc024, "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384"),
    (0xc027, "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"),
    (0xc028, "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"),
    (0xc02b, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
    (0xc02c, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
    (0xc02f, "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"),
    (0xc030, "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
    (0xcca8, "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
    (0xcca9, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
];

/// A cipher suite's IANA name, or its number.
pub fn suite_name(s: u16) -> String {
    named(SUITES, s).map_or_else(|| format!("0x{s:04x}"), str::to_string)
}

/// The name `table` gives `n`.
fn named<T: PartialEq>(table: &[(T, &'static str)], n: T) -> Option<&'static str> {
    table.iter().find(|(k, _)| *k == n).map(|(_, name)| *name)
}

/// The alert descriptions (RFC 8446, 6).
const ALERTS: &[(u8, &str)] = &[
    (0, "close_notify"),
    (10, "unexpected_message"),
    (20, "bad_record_mac"),
    (21, "decryption_failed"),
    (22, "record_overflow"),
    (30, "decompression_failure"),
    (40, "handshake_failure"),
    (41, "no_certificate"),
    (42, "bad_certificate"),
    (43, "unsupported_certificate"),
    (44, "certificate_revoked"),
    (45, "certificate_expired"),
    (46, "certificate_unknown"),
    (47, "illegal_parameter"),
    (48, "unknown_ca"),
    (49, "access_denied"),
    (50, "decode_error"),
    (51, "decrypt_error"),
    (70, "protocol_version"),
    (71, "insufficient_security"),
    (80, "internal_error"),
    (86, "inappropriate_fallback"),
    (90, "user_canceled"),
    (100, "no_renegotiation"),
    (109, "missing_extension"),
    (110, "unsupported_extension"),
    (112, "unrecognized_name"),
    (113, "bad_certificate_status_response"),
    (115, "unknown_psk_identity"),
    (116, "certificate_required"),
    (120, "no_application_protocol"),
];

/// An alert description's name, or its number.
pub fn alert_name(d: u8) -> String {
    named(ALERTS, d).map_or_else(|| format!("alert {d}"), str::to_string)
}

#[cfg(test)]
pub(crate) mod tests;
