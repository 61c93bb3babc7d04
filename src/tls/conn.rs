//! One TLS connection in the pipeline: both directions' bytes in, the
//! application data decrypted with the key log's secrets out, as the
//! connection's plaintext byte streams, and what the connection shows
//! with or without keys (hellos, alerts, keys found or not, why a direction
//! stopped).
//!
//! Place in the data path: between reassembly and Kafka framing
//! ([`crate::pipeline`]): a connection whose client's first bytes are a
//! ClientHello gets a [`Conn`]; its reassembled bytes go to
//! [`Conn::push`], and the [`Out::Plain`] pieces it gives are framed as a
//! plaintext connection's bytes would be.
//!
//! Invariants: plaintext is only what a record authenticated with the
//! session's keys gave, never bytes guessed; a direction that loses bytes,
//! stops reading as TLS, or has a record that does not open gives nothing
//! more. Each plaintext piece carries the frame and time of the TCP
//! segment that carried its ciphertext (a record's bytes map one to one
//! onto its ciphertext, after the explicit nonce), so messages keep their
//! frames and latency its times. Memory: per direction a record being
//! gathered (at most [`super::wire::MAX_RECORD`]), the carrying segments of the bytes
//! not yet made records, and, while a growing key log may still bring a
//! session's key, at most [`HOLD_LIMIT`] bytes of its records.

#![deny(clippy::indexing_slicing)]

use std::collections::VecDeque;
use std::fmt;

use bytes::Bytes;

use super::keylog::{Keys, Secrets};
use super::tls13::DecryptError;
use super::wire::{
    alert_name, content, handshake, suite_name, version_name, Certificate, ClientHello, Handshakes,
    Record, Records, ServerHello, HEADER,
};
use super::{tls12, tls13};
use crate::vocab::Timestamp;

/// Bytes of records held per direction while a growing key log may still
/// bring the session's key; past it the key is given up.
pub const HOLD_LIMIT: usize = 1 << 20;

/// What a TLS connection shows, in the order it shows it. Directions are
/// the TLS client's (`true`: client → server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsEvent {
    /// The ClientHello.
    ClientHello {
        /// The client random: the session's name in key logs (public: it
        /// crosses the wire in the clear).
        random: [u8; 32],
        /// Highest version offered (`supported_versions` when sent).
        version: u16,
        /// Server name (SNI).
        server_name: Option<String>,
        /// ALPN protocols offered.
        alpn: Vec<String>,
        /// Cipher suites offered.
        suites: usize,
        /// A session id or ticket offered for resumption.
        resumption: bool,
    },
    /// The ServerHello (a HelloRetryRequest says so).
    ServerHello {
        /// Version chosen.
        version: u16,
        /// Cipher suite chosen.
        suite: u16,
        /// The session resumed (TLS 1.2 session id echoed, TLS 1.3 PSK accepted).
        resumed: bool,
        /// A HelloRetryRequest.
        retry: bool,
    },
    /// The server's certificate (in the clear in TLS 1.2, decrypted in 1.3).
    Certificate {
        /// What it says.
        cert: Certificate,
        /// Not valid at the time it was sent (expired, or not yet valid).
        invalid: bool,
    },
    /// The key log has the session's secrets: its records are decrypted.
    Decrypting,
    /// The key log has no secrets for the session's client random.
    NoKey {
        /// The client random (public: it crosses the wire in the clear).
        client_random: [u8; 32],
    },
    /// The suite chosen is not one decrypted here.
    Unsupported {
        /// Version chosen.
        version: u16,
        /// Suite chosen.
        suite: u16,
    },
    /// Both directions have sent protected records: the handshake is done.
    Established {
        /// Nanoseconds from the ClientHello.
        ns: u64,
    },
    /// TLS 1.3: a direction moved to its next traffic keys (decrypted, as
    /// the decryption follows it).
    KeyUpdate {
        /// The client's.
        from_client: bool,
        /// It asked the peer to update too.
        requested: bool,
    },
    /// An alert, in the clear or decrypted.
    Alert {
        /// Sent by the client.
        from_client: bool,
        /// 1 warning, 2 fatal.
        level: u8,
        /// The alert's description.
        description: u8,
    },
    /// A direction gives no more plaintext from here.
    Stopped {
        /// The client's direction.
        from_client: bool,
        /// Why.
        why: Stop,
    },
    /// The connection ended: what each direction carried.
    Closed {
        /// Records per direction (client's, server's).
        records: [u64; 2],
        /// TLS bytes per direction.
        bytes: [u64; 2],
        /// Application data decrypted per direction.
        plaintext: [u64; 2],
    },
}

/// Why a direction gives no more plaintext.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Its bytes stopped being TLS records.
    NotTls(super::wire::RecordError),
    /// A record did not open.
    Decrypt(DecryptError),
    /// Bytes missing from the capture at this stream offset: record
    /// boundaries and sequence numbers are lost.
    Gap(u64),
    /// A handshake message longer than the reader takes.
    Handshake,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::NotTls(e) => e.fmt(f),
            Stop::Decrypt(e) => e.fmt(f),
            Stop::Gap(at) => write!(
                f,
                "bytes missing from the capture at stream offset {at}: the rest is not decrypted"
            ),
            Stop::Handshake => f.write_str("a handshake message too long to read"),
        }
    }
}

impl fmt::Display for TlsEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |c: bool| if c { "client" } else { "server" };
        match self {
            TlsEvent::ClientHello {
                version,
                server_name,
                random: _,
                alpn,
                suites,
                resumption,
            } => {
                write!(f, "ClientHello up to {}", version_name(*version))?;
                if let Some(n) = server_name {
                    write!(f, ", SNI {n}")?;
                }
                if !alpn.is_empty() {
                    write!(f, ", ALPN {}", alpn.join(","))?;
                }
                write!(f, ", {suites} suites")?;
                if *resumption {
                    f.write_str(", offers resumption")?;
                }
                Ok(())
            }
            TlsEvent::ServerHello {
                version,
                suite,
                resumed,
                retry,
            } => {
                let what = if *retry {
                    "HelloRetryRequest"
                } else {
                    "ServerHello"
                };
                write!(
                    f,
                    "{what} {} {}",
                    version_name(*version),
                    suite_name(*suite)
                )?;
                if *resumed {
                    f.write_str(", resumed")?;
                }
                Ok(())
            }
            TlsEvent::Certificate { cert, invalid } => {
                write!(
                    f,
                    "server certificate {}, valid until {}",
                    cert.subject, cert.until
                )?;
                match invalid {
                    true => f.write_str(", not valid when sent"),
                    false => Ok(()),
                }
            }
            TlsEvent::Decrypting => f.write_str("decrypting with the key log's secrets"),
            TlsEvent::NoKey { client_random } => {
                f.write_str("no key for client random ")?;
                client_random.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            TlsEvent::Unsupported { version, suite } => write!(
                f,
                "{} {} is not decrypted by kafkashark",
                version_name(*version),
                suite_name(*suite)
            ),
            TlsEvent::Established { ns } => {
                write!(f, "handshake done in {:.3} ms", *ns as f64 / 1e6)
            }
            TlsEvent::Alert {
                from_client,
                level,
                description,
            } => {
                let level = match level {
                    1 => "warning",
                    2 => "fatal",
                    _ => "level ?",
                };
                write!(
                    f,
                    "{} sent {level} alert {}",
                    side(*from_client),
                    alert_name(*description)
                )
            }
            TlsEvent::KeyUpdate {
                from_client,
                requested,
            } => {
                let ask = if *requested {
                    ", asking for one back"
                } else {
                    ""
                };
                write!(f, "{} updated its keys{ask}", side(*from_client))
            }
            TlsEvent::Stopped { from_client, why } => {
                write!(f, "{}'s records stop: {why}", side(*from_client))
            }
            TlsEvent::Closed {
                records,
                bytes,
                plaintext,
            } => {
                let [rc, rs] = records;
                let [bc, bs] = bytes;
                let [pc, ps] = plaintext;
                write!(
                    f,
                    "closed: client {rc} records {bc} bytes ({pc} decrypted), \
                     server {rs} records {bs} bytes ({ps} decrypted)"
                )
            }
        }
    }
}

/// What [`Conn::push`] gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// Application data: the next bytes of a direction's plaintext stream.
    Plain {
        /// The client's direction.
        from_client: bool,
        /// The bytes.
        data: Bytes,
        /// Offset of `data[0]` in the direction's plaintext stream.
        offset: u64,
        /// The record they were decrypted from, counted from 1 among the
        /// direction's records.
        record: u64,
        /// Frame that carried their ciphertext.
        frame: u64,
        /// Its time.
        ts: Timestamp,
    },
    /// Something the connection showed, at this frame and time.
    Event {
        /// Frame.
        frame: u64,
        /// Time.
        ts: Timestamp,
        /// What.
        what: TlsEvent,
    },
}

/// A direction's decryption.
#[derive(Debug)]
enum Dec {
    V12(tls12::Decrypter),
    V13(tls13::Decrypter),
}

impl Dec {
    fn record(&mut self, r: Record) -> Result<Option<(u8, Bytes)>, DecryptError> {
        match self {
            Dec::V12(d) => d.record(r),
            Dec::V13(d) => d.record(r),
        }
    }
}

/// A segment's bytes: from this stream offset on, carried by this frame.
#[derive(Clone, Copy, Debug)]
struct Piece {
    at: u64,
    frame: u64,
    ts: Timestamp,
}

/// One direction.
#[derive(Debug, Default)]
struct Side {
    records: Records,
    handshakes: Handshakes,
    dec: Option<Dec>,
    /// Bytes before the record's plaintext in its body (TLS 1.2 GCM's
    /// explicit nonce).
    prefix: u64,
    pieces: VecDeque<Piece>,
    /// Stream offset after the last byte pushed.
    end: u64,
    /// Records waiting for the session's key.
    held: Vec<Record>,
    held_bytes: usize,
    /// Plaintext stream offset of the next application byte.
    plain: u64,
    stopped: bool,
    /// The direction's ChangeCipherSpec has come.
    ccs: bool,
    /// First protected record seen (time).
    protected: Option<Timestamp>,
    /// Records and bytes seen.
    count: u64,
    bytes: u64,
}

/// Where the session's keys stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyState {
    /// Before the ServerHello.
    Hellos,
    /// The key log may still bring them.
    Waiting,
    /// Decrypting.
    Have,
    /// Not decrypted (no key, a suite not decrypted here).
    None,
}

/// What a call works with: the frame and time of the bytes that made it,
/// the key log (none at a gap or the end), and where what it makes goes.
struct Cx<'a> {
    frame: u64,
    ts: Timestamp,
    keys: Option<&'a Keys>,
    out: &'a mut Vec<Out>,
}

impl Cx<'_> {
    fn event(&mut self, what: TlsEvent) {
        let (frame, ts) = (self.frame, self.ts);
        self.out.push(Out::Event { frame, ts, what });
    }
}

/// A TLS connection: its two directions, by the TLS client's side
/// (index 0 the client's).
#[derive(Debug)]
pub struct Conn {
    sides: [Side; 2],
    hello: Option<ClientHello>,
    server: Option<ServerHello>,
    keys: KeyState,
    hello_ts: Option<Timestamp>,
    established: bool,
    scratch: Vec<Record>,
}

impl Default for Conn {
    fn default() -> Conn {
        Conn::new()
    }
}

impl Conn {
    /// A connection from its first byte in each direction.
    pub fn new() -> Conn {
        Conn {
            sides: Default::default(),
            hello: None,
            server: None,
            keys: KeyState::Hellos,
            hello_ts: None,
            established: false,
            scratch: Vec::new(),
        }
    }

    /// The next bytes of a direction (`from_client`), at `stream_offset`,
    /// carried by `frame` at `ts`; appends what they complete to `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        from_client: bool,
        data: &[u8],
        stream_offset: u64,
        frame: u64,
        ts: Timestamp,
        keys: &Keys,
        out: &mut Vec<Out>,
    ) {
        let i = usize::from(!from_client);
        let Some(side) = self.sides.get_mut(i) else {
            return;
        };
        if side.stopped || data.is_empty() {
            return;
        }
        // Bytes before the direction's end were seen (reassembly gives each
        // once); bytes after it mean a hole no gap announced.
        let cx = &mut Cx {
            frame,
            ts,
            keys: Some(keys),
            out,
        };
        if stream_offset != side.end {
            let at = side.end;
            self.stop(i, Stop::Gap(at), cx);
            return;
        }
        side.end += data.len() as u64;
        side.bytes += data.len() as u64;
        side.pieces.push_back(Piece {
            at: stream_offset,
            frame,
            ts,
        });
        let mut recs = std::mem::take(&mut self.scratch);
        let read = side.records.push(data, &mut recs);
        for r in recs.drain(..) {
            self.record(i, r, cx);
        }
        self.scratch = recs;
        if let Err(e) = read {
            self.stop(i, Stop::NotTls(e), cx);
        }
        // The pieces before the record being gathered are done with.
        if let Some(side) = self.sides.get_mut(i) {
            let next = side.held.first().map_or(side.records.next_at(), |r| r.at);
            while side.pieces.get(1).is_some_and(|p| p.at <= next) {
                side.pieces.pop_front();
            }
        }
    }

    /// True while the session's key is looked for (a growing key log may
    /// still bring it).
    pub fn awaits_key(&self) -> bool {
        self.keys == KeyState::Waiting
    }

    /// Bytes of records held for the session's key, both directions.
    pub fn held_bytes(&self) -> usize {
        self.sides.iter().map(|s| s.held_bytes).sum()
    }

    /// True when `keys` holds this session's secrets (all of those its
    /// version needs, once the ServerHello said which).
    pub fn key_in(&self, keys: &Keys) -> bool {
        let whole = |x: &Secrets| self.server.as_ref().is_none_or(|s| x.complete(s.version));
        self.hello
            .as_ref()
            .is_some_and(|h| keys.get(&h.random).is_some_and(|x| whole(&x)))
    }

    /// Bytes missing from a direction from `stream_offset`: it stops.
    pub fn gap(
        &mut self,
        from_client: bool,
        stream_offset: u64,
        frame: u64,
        ts: Timestamp,
        out: &mut Vec<Out>,
    ) {
        let i = usize::from(!from_client);
        if self.sides.get(i).is_some_and(|s| !s.stopped) {
            let cx = &mut Cx {
                frame,
                ts,
                keys: None,
                out,
            };
            self.stop(i, Stop::Gap(stream_offset), cx);
        }
    }

    /// The connection ended: a key still waited for is looked up a last
    /// time (its records held are then decrypted) or given up, and what
    /// each direction carried.
    pub fn finish(&mut self, frame: u64, ts: Timestamp, keys: &Keys, out: &mut Vec<Out>) {
        if self.keys == KeyState::Waiting {
            let cx = &mut Cx {
                frame,
                ts,
                keys: Some(keys),
                out,
            };
            self.try_keys(cx);
            if self.keys == KeyState::Waiting {
                self.no_key(cx);
            }
        }
        let [c, s] = &self.sides;
        out.push(Out::Event {
            frame,
            ts,
            what: TlsEvent::Closed {
                records: [c.count, s.count],
                bytes: [c.bytes, s.bytes],
                plaintext: [c.plain, s.plain],
            },
        });
    }

    fn stop(&mut self, i: usize, why: Stop, cx: &mut Cx<'_>) {
        if let Some(s) = self.sides.get_mut(i) {
            s.stopped = true;
            s.pieces.clear();
            s.held = Vec::new();
            s.held_bytes = 0;
        }
        let from_client = i == 0;
        cx.event(TlsEvent::Stopped { from_client, why });
    }

    /// One record of direction `i`, completed by `frame` at `ts`.
    fn record(&mut self, i: usize, r: Record, cx: &mut Cx<'_>) {
        let tls13 = self.server.as_ref().is_some_and(|h| h.version >= 0x0304);
        let Some(side) = self.sides.get_mut(i) else {
            return;
        };
        if side.stopped {
            return;
        }
        side.count += 1;
        let ccs = r.content == content::CHANGE_CIPHER_SPEC;
        // Protected: TLS 1.3's records but its compatibility
        // ChangeCipherSpec, TLS 1.2's after the direction's ChangeCipherSpec.
        let protected = !ccs && (r.content == content::APPLICATION_DATA || (side.ccs && !tls13));
        side.ccs |= ccs;
        if protected {
            self.protected(i, cx);
        }
        if self.sides.get(i).is_some_and(|s| s.dec.is_some()) {
            return self.open(i, r, cx);
        }
        match (protected, self.keys) {
            (true, KeyState::Hellos | KeyState::Waiting) => self.hold(i, r, cx),
            (true, _) => {}
            (false, _) if ccs => {}
            (false, _) => self.clear(i, r.content, &r.body, cx),
        }
    }

    /// A protected record of direction `i` at `ts`: the handshake is done
    /// once both directions have sent one.
    fn protected(&mut self, i: usize, cx: &mut Cx<'_>) {
        if let Some(s) = self.sides.get_mut(i) {
            s.protected.get_or_insert(cx.ts);
        }
        let [c, s] = &self.sides;
        if let (false, Some(a), Some(b), Some(h)) =
            (self.established, c.protected, s.protected, self.hello_ts)
        {
            self.established = true;
            let ns = a.max(b).nanos_since(h);
            cx.event(TlsEvent::Established { ns });
        }
    }

    /// A record in the clear, or a decrypted one that is not application data.
    fn clear(&mut self, i: usize, ty: u8, body: &[u8], cx: &mut Cx<'_>) {
        let from_client = i == 0;
        match ty {
            content::ALERT => {
                if let &[level, description] = body {
                    let what = TlsEvent::Alert {
                        from_client,
                        level,
                        description,
                    };
                    cx.event(what);
                }
            }
            content::HANDSHAKE => {
                let mut msgs = Vec::new();
                let ok = self
                    .sides
                    .get_mut(i)
                    .is_some_and(|s| s.handshakes.push(body, &mut msgs));
                for (t, m) in msgs {
                    self.handshake(i, t, &m, cx);
                }
                if !ok {
                    self.stop(i, Stop::Handshake, cx);
                }
            }
            _ => {}
        }
    }

    fn handshake(&mut self, i: usize, t: u8, m: &[u8], cx: &mut Cx<'_>) {
        match (i, t) {
            (1, handshake::CERTIFICATE) => {
                let tls13 = self.server.as_ref().is_some_and(|h| h.version >= 0x0304);
                if let Some(cert) = Certificate::leaf(m, tls13) {
                    let now = cx.ts.secs;
                    let invalid = now < cert.not_before || now > cert.not_after;
                    cx.event(TlsEvent::Certificate { cert, invalid });
                }
            }
            (_, handshake::KEY_UPDATE) => {
                let from_client = i == 0;
                let requested = m.first() == Some(&1);
                cx.event(TlsEvent::KeyUpdate {
                    from_client,
                    requested,
                });
            }
            (0, handshake::CLIENT_HELLO) => {
                let Ok(h) = ClientHello::parse(m) else {
                    return;
                };
                let version = h
                    .supported_versions
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(h.version);
                let what = TlsEvent::ClientHello {
                    random: h.random,
                    version,
                    server_name: h.server_name.clone(),
                    alpn: h.alpn.clone(),
                    suites: h.cipher_suites.len(),
                    resumption: h.offers_resumption,
                };
                self.hello_ts.get_or_insert(cx.ts);
                self.hello = Some(h);
                cx.event(what);
            }
            (1, handshake::SERVER_HELLO) if self.keys == KeyState::Hellos => {
                let Ok(h) = ServerHello::parse(m) else {
                    return;
                };
                let resumed = h.psk_accepted
                    || (h.version < 0x0304
                        && !h.session_id.is_empty()
                        && self
                            .hello
                            .as_ref()
                            .is_some_and(|c| c.session_id == h.session_id));
                let what = TlsEvent::ServerHello {
                    version: h.version,
                    suite: h.cipher_suite,
                    resumed,
                    retry: h.retry,
                };
                cx.event(what);
                if h.retry {
                    return;
                }
                self.server = Some(h);
                self.keys = KeyState::Waiting;
                self.try_keys(cx);
            }
            _ => {}
        }
    }

    /// Looks the session up in the key log; with its secrets, both
    /// directions' decryption starts (records held meanwhile are opened).
    fn try_keys(&mut self, cx: &mut Cx<'_>) {
        let (Some(c), Some(s)) = (&self.hello, &self.server) else {
            return;
        };
        let (version, suite) = (s.version, s.cipher_suite);
        let supported = match version {
            0x0304 => tls13::suite(suite).is_some(),
            0x0303 => tls12::suite(suite).is_some(),
            _ => false,
        };
        if !supported {
            self.keys = KeyState::None;
            self.drop_held();
            cx.event(TlsEvent::Unsupported { version, suite });
            return;
        }
        // Only some of a TLS 1.3 session's secrets (a growing key log read
        // between its writer's lines): the rest is waited for.
        let found = cx.keys.and_then(|k| k.get(&c.random));
        let Some(secrets) = found.filter(|x| x.complete(version)) else {
            if !cx.keys.is_some_and(Keys::growing) {
                self.no_key(cx);
            }
            return;
        };
        match decrypters(&secrets, c, s) {
            Ok((dc, ds, prefix)) => {
                self.keys = KeyState::Have;
                cx.event(TlsEvent::Decrypting);
                let [sc, ss] = &mut self.sides;
                for (side, mut dec) in [(sc, dc), (ss, ds)] {
                    if side.ccs {
                        // TLS 1.2: protection is on from the ChangeCipherSpec
                        // that went by before the key.
                        let ccs = Record {
                            content: content::CHANGE_CIPHER_SPEC,
                            version: 0x0303,
                            body: vec![1],
                            at: 0,
                            n: 0,
                        };
                        let _ = dec.record(ccs);
                    }
                    side.dec = Some(dec);
                    side.prefix = prefix;
                }
                for i in 0..2 {
                    let held = self
                        .sides
                        .get_mut(i)
                        .map(|s| {
                            s.held_bytes = 0;
                            std::mem::take(&mut s.held)
                        })
                        .unwrap_or_default();
                    for r in held {
                        self.open(i, r, cx);
                    }
                }
            }
            Err(_) => self.no_key(cx),
        }
    }

    /// A record of direction `i` opened by its decrypter (counted, its
    /// ChangeCipherSpec and protection noted, when it came: a held one is
    /// opened once its key is known).
    fn open(&mut self, i: usize, r: Record, cx: &mut Cx<'_>) {
        let Some(dec) = self.sides.get_mut(i).and_then(|s| s.dec.as_mut()) else {
            return;
        };
        let place = (r.at, r.n, r.body.len());
        match dec.record(r) {
            Ok(Some((content::APPLICATION_DATA, plain))) => self.plain(i, place, plain, cx),
            Ok(Some((ty, plain))) => self.clear(i, ty, &plain, cx),
            // A ChangeCipherSpec (TLS 1.2's turns protection on).
            Ok(None) => {}
            Err(e) => self.stop(i, Stop::Decrypt(e), cx),
        }
    }

    fn no_key(&mut self, cx: &mut Cx<'_>) {
        self.keys = KeyState::None;
        self.drop_held();
        let client_random = self.hello.as_ref().map(|h| h.random).unwrap_or_default();
        cx.event(TlsEvent::NoKey { client_random });
    }

    fn drop_held(&mut self) {
        for s in &mut self.sides {
            s.held = Vec::new();
            s.held_bytes = 0;
        }
    }

    /// A protected record before the session's key: held while the key log
    /// may still bring it (at most [`HOLD_LIMIT`] bytes a direction).
    fn hold(&mut self, i: usize, r: Record, cx: &mut Cx<'_>) {
        if self.keys == KeyState::Waiting {
            self.try_keys(cx);
            if self.keys != KeyState::Waiting {
                self.open(i, r, cx);
                return;
            }
        }
        let Some(side) = self.sides.get_mut(i) else {
            return;
        };
        side.held_bytes += HEADER + r.body.len();
        side.held.push(r);
        if side.held_bytes > HOLD_LIMIT {
            if self.keys == KeyState::Waiting {
                self.no_key(cx);
            } else {
                // No ServerHello before this much protected data: not a
                // handshake this reader follows.
                self.keys = KeyState::None;
                self.drop_held();
            }
        }
    }

    /// Application data of direction `i` from record `r`: cut at the
    /// segments that carried its ciphertext.
    fn plain(
        &mut self,
        i: usize,
        (at, record, body): (u64, u64, usize),
        data: Bytes,
        cx: &mut Cx<'_>,
    ) {
        let Some(side) = self.sides.get_mut(i) else {
            return;
        };
        if data.is_empty() {
            return;
        }
        let from_client = i == 0;
        let len = data.len() as u64;
        let body_end = at + (HEADER + body) as u64;
        // Plaintext byte j was ciphertext byte `start + j` of the stream.
        let start = at + HEADER as u64 + side.prefix;
        let mut j = 0u64;
        let mut k = side
            .pieces
            .iter()
            .rposition(|p| p.at <= start.min(body_end.saturating_sub(1)))
            .unwrap_or(0);
        while j < len {
            let Some(p) = side.pieces.get(k) else {
                break;
            };
            let next = side.pieces.get(k + 1).map_or(u64::MAX, |n| n.at);
            // The plaintext bytes whose ciphertext this piece carried (the
            // tag's piece takes what is left).
            let upto = if next >= body_end {
                len
            } else {
                next.saturating_sub(start).clamp(j, len)
            };
            if upto > j {
                cx.out.push(Out::Plain {
                    from_client,
                    data: data.slice(j as usize..upto as usize),
                    offset: side.plain + j,
                    record,
                    frame: p.frame,
                    ts: p.ts,
                });
                j = upto;
            }
            k += 1;
        }
        if j < len {
            // No piece found (cannot happen: the record's bytes were pushed).
            let (frame, ts) = side
                .pieces
                .back()
                .map_or((0, Timestamp::default()), |p| (p.frame, p.ts));
            cx.out.push(Out::Plain {
                from_client,
                data: data.slice(j as usize..),
                offset: side.plain + j,
                record,
                frame,
                ts,
            });
        }
        side.plain += len;
    }
}

/// Both directions' decryption of a session (client's, server's) and the
/// bytes before each record's plaintext in its body.
fn decrypters(
    secrets: &Secrets,
    c: &ClientHello,
    s: &ServerHello,
) -> Result<(Dec, Dec, u64), DecryptError> {
    let need = |x: &Option<super::keylog::Secret>| {
        x.as_ref()
            .map(|s| s.bytes().to_vec())
            .ok_or(DecryptError::BadSecret)
    };
    if s.version == 0x0304 {
        let suite = tls13::suite(s.cipher_suite).ok_or(DecryptError::BadSecret)?;
        let dc = tls13::Decrypter::new(
            suite,
            &need(&secrets.client_handshake)?,
            &need(&secrets.client_traffic_0)?,
        )?;
        let ds = tls13::Decrypter::new(
            suite,
            &need(&secrets.server_handshake)?,
            &need(&secrets.server_traffic_0)?,
        )?;
        return Ok((Dec::V13(dc), Dec::V13(ds), 0));
    }
    let suite = tls12::suite(s.cipher_suite).ok_or(DecryptError::BadSecret)?;
    let master = need(&secrets.master)?;
    let randoms = (&c.random, &s.random);
    let etm = s.encrypt_then_mac;
    let dc = tls12::Decrypter::new(suite, &master, randoms, true, etm)?;
    let ds = tls12::Decrypter::new(suite, &master, randoms, false, etm)?;
    Ok((Dec::V12(dc), Dec::V12(ds), suite.prefix() as u64))
}
