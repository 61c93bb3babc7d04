//! The on-disk form of an [`IndexEntry`]: a fixed-size record, plus a side
//! blob for the spilled [`RawMessage`] of the uncommon entries.
//!
//! Place in the data path: the entry store (`store.rs`) encodes each entry
//! pushed into a [`REC`]-byte record (its blocks of records and the blobs go to
//! scratch files) and decodes records when entries are read back. The facts an
//! entry shares with others ([`Shared`]) are a blob of their own
//! ([`encode_shared`]), written once per scratch file and pointed to.
//!
//! Layout, little endian, each field a named range: the numbers of the entry
//! inline, the peer as an absolute message number (the store's count of dropped
//! messages is subtracted when it is read back, so ring mode never rewrites
//! records), no index (an entry's index is its position). A spilled message is
//! written as a side blob at a log address the record gives with its length.
//!
//! Invariant: `decode(encode(e))` is `e` for every entry `e` at the same
//! position (and `decode_shared(encode_shared(s)) == s`), and decoding never trusts the bytes: every length and count read
//! is checked against the bytes there are before anything is allocated, and a
//! bad value is a [`DecodeError`], never a panic.

use kafkashark::analyzer::{Also, FetchWait};
use kafkashark::flow::{Rtt, RttFrom};
use kafkashark::kafka::decode::{DecodeWarning, Kind};
use kafkashark::kafka::framing::RawMessage;
use kafkashark::pairing::FetchAsk;
use kafkashark::vocab::{Direction, Timestamp};
use std::fmt;
use std::ops::Range;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::sync::Arc;

use super::{Ends, FactsEntry, IndexEntry, Shared};

/// Bytes of one record.
pub const REC: usize = 148;

type Field = Range<usize>;
const FACTS_ADDR: Field = 0..8;
const FACTS_LEN: Field = 8..12;
const KIND: usize = 14;
const RFLAGS: usize = 15;
const PEER: Field = 92..100;
const SIDE_ADDR: Field = 124..132;
const SIDE_LEN: Field = 132..140;

/// The entry's numbers stored as they are: each field's range, and the
/// writing ([`FactsEntry::encode`]) and reading ([`FactsEntry::decode`]) of them.
macro_rules! numbers {
    ($($field:ident = $range:expr => $name:ident: $ty:ty),* $(,)?) => {
        $(const $field: Field = $range;)*

        fn put_numbers(e: &FactsEntry, r: &mut [u8; REC]) {
            $(put(r, $field, &e.$name.to_le_bytes());)*
        }

        /// The entry of a record's numbers, its peer not read.
        fn get_numbers(rec: &[u8; REC], shared: Arc<Shared>, index: u64, kind: Kind) -> FactsEntry {
            FactsEntry { shared, index, kind, peer: 0, $($name: <$ty>::from_le_bytes(get(rec, $field)),)* }
        }
    };
}

numbers! {
    FLAGS = 12..14 => flags: u16,
    API_KEY = 16..18 => api_key: i16,
    API_VERSION = 18..20 => api_version: i16,
    TS_NANOS = 20..24 => ts_nanos: u32,
    FIRST_TS_NANOS = 24..28 => first_ts_nanos: u32,
    PIECE_LEN = 28..32 => piece_len: u32,
    CORRELATION = 32..36 => correlation_id: i32,
    LENGTH = 36..40 => length: i32,
    THROTTLE = 40..44 => throttle_time_ms: i32,
    FRAME = 44..52 => frame: u64,
    FIRST_FRAME = 52..60 => first_frame: u64,
    TS_SECS = 60..68 => ts_secs: i64,
    FIRST_TS_SECS = 68..76 => first_ts_secs: i64,
    STREAM = 76..84 => stream: u64,
    STREAM_OFFSET = 84..92 => stream_offset: u64,
    LATENCY = 100..108 => latency_ns: u64,
    SUM = 108..116 => sum: u64,
    PIECE_OFFSET = 116..124 => piece_offset: u64,
    HOL_WAIT = 140..148 => hol_wait_ns: u64,
}

/// `RFLAGS` bit: the entry has a spilled message in a side blob.
const R_SPILL: u8 = 1;

/// Where a record's side blob lies in the store's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SideRef {
    /// Log address of its first byte.
    pub addr: u64,
    /// Its length.
    pub len: u64,
}

/// Why a record or side blob could not be read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What was being read.
    pub what: &'static str,
    /// Where, in the record or blob.
    pub offset: usize,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad index record: {} at byte {}", self.what, self.offset)
    }
}

fn bad(what: &'static str, offset: usize) -> DecodeError {
    DecodeError { what, offset }
}

fn put(rec: &mut [u8; REC], f: Field, v: &[u8]) {
    if let Some(slot) = rec.get_mut(f) {
        slot.copy_from_slice(v);
    }
}

fn get<const N: usize>(rec: &[u8; REC], f: Field) -> [u8; N] {
    (rec.get(f).and_then(|s| s.try_into().ok())).unwrap_or([0; N])
}

fn u64_at(rec: &[u8; REC], f: Field) -> u64 {
    u64::from_le_bytes(get(rec, f))
}

/// Where a record's shared facts lie in the store's log.
pub fn facts_of(rec: &[u8; REC]) -> SideRef {
    SideRef {
        addr: u64_at(rec, FACTS_ADDR),
        len: u64::from(u32::from_le_bytes(get(rec, FACTS_LEN))),
    }
}

/// A record's latency (when it has one) and length: the sort keys, read
/// without decoding the entry.
pub fn sort_keys_of(rec: &[u8; REC]) -> (Option<u64>, i32) {
    let flags = u16::from_le_bytes(get(rec, FLAGS));
    let latency = (flags & super::LATENCY != 0).then(|| u64_at(rec, LATENCY));
    (latency, i32::from_le_bytes(get(rec, LENGTH)))
}

/// The side blob of a record, if it has one.
pub fn side_of(rec: &[u8; REC]) -> Option<SideRef> {
    (rec[RFLAGS] & R_SPILL != 0).then(|| SideRef {
        addr: u64_at(rec, SIDE_ADDR),
        len: u64_at(rec, SIDE_LEN),
    })
}

impl IndexEntry {
    /// The side blob of this entry: its spilled message, if any.
    pub fn side_blob(&self) -> Option<Vec<u8>> {
        self.spill.as_deref().map(encode_raw)
    }

    /// The entry of a record at position `index`, `dropped` messages before it
    /// gone (a peer among them is forgotten), its shared facts (at
    /// [`facts_of`]) and side blob (at [`side_of`], `None` when there is none)
    /// read by the caller.
    pub fn decode(
        rec: &[u8; REC],
        index: u64,
        dropped: u64,
        shared: Arc<Shared>,
        side: Option<&[u8]>,
    ) -> Result<IndexEntry, DecodeError> {
        let spill = match (side_of(rec), side) {
            (None, None) => None,
            (Some(_), Some(b)) => Some(Box::new(decode_raw(b)?)),
            _ => return Err(bad("side blob", SIDE_ADDR.start)),
        };
        let facts = FactsEntry::decode(rec, index, dropped, shared)?;
        Ok(IndexEntry { facts, spill })
    }
}

impl FactsEntry {
    /// The record of this entry, its shared facts at `facts` (a blob of
    /// [`encode_shared`], shorter than 4 GiB) and its side blob at `side`; the
    /// peer is written as an absolute message number, `dropped` being the
    /// messages dropped before the store's first.
    pub fn encode(&self, facts: SideRef, side: Option<SideRef>, dropped: u64) -> [u8; REC] {
        let mut r = [0u8; REC];
        put(&mut r, FACTS_ADDR, &facts.addr.to_le_bytes());
        let facts_len = u32::try_from(facts.len).unwrap_or(u32::MAX);
        put(&mut r, FACTS_LEN, &facts_len.to_le_bytes());
        r[KIND] = match self.kind {
            Kind::Request => 0,
            Kind::Response => 1,
        };
        r[RFLAGS] = if side.is_some() { R_SPILL } else { 0 };
        put_numbers(self, &mut r);
        put(&mut r, PEER, &self.peer.wrapping_add(dropped).to_le_bytes());
        if let Some(s) = side {
            put(&mut r, SIDE_ADDR, &s.addr.to_le_bytes());
            put(&mut r, SIDE_LEN, &s.len.to_le_bytes());
        }
        r
    }

    /// The facts of a record, its side blob not read (see [`IndexEntry::decode`]).
    pub fn decode(
        rec: &[u8; REC],
        index: u64,
        dropped: u64,
        shared: Arc<Shared>,
    ) -> Result<FactsEntry, DecodeError> {
        let kind = match rec[KIND] {
            0 => Kind::Request,
            1 => Kind::Response,
            _ => return Err(bad("kind", KIND)),
        };
        let mut e = get_numbers(rec, shared, index, kind);
        // The peer was written absolute: dropped with the oldest, it is gone.
        let peer = e.peer().map(|_| u64_at(rec, PEER));
        e.set_peer(peer.and_then(|p| p.checked_sub(dropped)));
        Ok(e)
    }
}

// ----- the side blob: a spilled RawMessage ------------------------------------

/// The side blob of a message: its fields in order, each vector as a count
/// and its items.
pub fn encode_raw(m: &RawMessage) -> Vec<u8> {
    let mut o = Vec::with_capacity(
        118 + (m.provenance.len() + m.file_pieces.len() + m.tls_records.len()) * 12 + m.bytes.len(),
    );
    o.extend_from_slice(&m.stream.to_le_bytes());
    o.push(m.dir.index() as u8);
    o.extend_from_slice(&m.stream_offset.to_le_bytes());
    o.extend_from_slice(&m.first_frame.to_le_bytes());
    o.extend_from_slice(&m.last_frame.to_le_bytes());
    for t in [m.first_ts, m.last_ts] {
        o.extend_from_slice(&t.secs.to_le_bytes());
        o.extend_from_slice(&t.nanos.to_le_bytes());
    }
    o.push(u8::from(m.resynced));
    o.extend_from_slice(&m.skipped_before.to_le_bytes());
    o.extend_from_slice(&m.missing.to_le_bytes());
    put_list(&mut o, &m.provenance, |o, &(off, frame)| {
        o.extend_from_slice(&off.to_le_bytes());
        o.extend_from_slice(&frame.to_le_bytes());
    });
    put_list(&mut o, &m.file_pieces, |o, &(off, len)| {
        o.extend_from_slice(&off.to_le_bytes());
        o.extend_from_slice(&len.to_le_bytes());
    });
    put_list(&mut o, &m.tls_records, |o, &(off, record)| {
        o.extend_from_slice(&off.to_le_bytes());
        o.extend_from_slice(&record.to_le_bytes());
    });
    put_str(&mut o, &m.bytes);
    o
}

/// A count and the items.
fn put_list<T>(o: &mut Vec<u8>, items: &[T], mut put: impl FnMut(&mut Vec<u8>, &T)) {
    o.extend_from_slice(&(items.len() as u64).to_le_bytes());
    for x in items {
        put(o, x);
    }
}

/// Reads a side blob, every length checked before use.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or_else(|| bad(what, self.at))?;
        let s = self.b.get(self.at..end).ok_or_else(|| bad(what, self.at))?;
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A byte that is 0 or 1.
    fn flag(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad(what, self.at - 1)),
        }
    }

    /// Nothing may follow the last field.
    fn end(&self) -> Result<(), DecodeError> {
        if self.at == self.b.len() {
            Ok(())
        } else {
            Err(bad("trailing bytes", self.at))
        }
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    fn usize(&mut self, what: &'static str) -> Result<usize, DecodeError> {
        let at = self.at;
        usize::try_from(self.u64(what)?).map_err(|_| bad(what, at))
    }

    fn ts(&mut self, what: &'static str) -> Result<Timestamp, DecodeError> {
        Ok(Timestamp {
            secs: self.array(what).map(i64::from_le_bytes)?,
            nanos: self.u32(what)?,
        })
    }

    /// A count of items at least `size` bytes each, and the items.
    fn list<T>(
        &mut self,
        size: usize,
        what: &'static str,
        mut item: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let n = self.count(size, what)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(item(self)?);
        }
        Ok(v)
    }

    /// A length and the bytes.
    fn bytes(&mut self, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let n = self.count(1, what)?;
        self.take(n, what)
    }

    /// A count of items of `size` bytes each, no more than the bytes left hold.
    fn count(&mut self, size: usize, what: &'static str) -> Result<usize, DecodeError> {
        let at = self.at;
        let n = self.u64(what)?;
        let left = self.b.len().saturating_sub(self.at);
        usize::try_from(n)
            .ok()
            .filter(|&n| n.checked_mul(size).is_some_and(|b| b <= left))
            .ok_or_else(|| bad(what, at))
    }
}

/// The message of a side blob (its fields read in the order written).
pub fn decode_raw(b: &[u8]) -> Result<RawMessage, DecodeError> {
    let mut r = Reader { b, at: 0 };
    let m = RawMessage {
        stream: r.u64("stream")?,
        dir: if r.flag("direction")? {
            Direction::BrokerToClient
        } else {
            Direction::ClientToBroker
        },
        stream_offset: r.u64("stream offset")?,
        first_frame: r.u64("first frame")?,
        last_frame: r.u64("last frame")?,
        first_ts: r.ts("first time")?,
        last_ts: r.ts("last time")?,
        resynced: r.flag("resynced")?,
        skipped_before: r.u64("skipped bytes")?,
        missing: r.u64("missing bytes")?,
        provenance: r.list(12, "provenance count", |r| {
            Ok((r.u32("provenance")?, r.u64("provenance")?))
        })?,
        file_pieces: r.list(12, "file piece count", |r| {
            Ok((r.u64("file piece")?, r.u32("file piece")?))
        })?,
        tls_records: r.list(12, "TLS record count", |r| {
            Ok((r.u32("TLS record")?, r.u64("TLS record")?))
        })?,
        bytes: r.bytes("byte count")?.to_vec().into(),
        // The other capture point's sighting is in the message's facts.
        twin: None,
    };
    r.end()?;
    Ok(m)
}

// ----- the shared facts blob ------------------------------------------------------

/// A length and the bytes.
fn put_str(o: &mut Vec<u8>, s: impl AsRef<[u8]>) {
    let s = s.as_ref();
    o.extend_from_slice(&(s.len() as u64).to_le_bytes());
    o.extend_from_slice(s);
}

fn put_opt_str(o: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => {
            o.push(1);
            put_str(o, s);
        }
        None => o.push(0),
    }
}

fn put_addr(o: &mut Vec<u8>, a: &SocketAddr) {
    match a {
        SocketAddr::V4(a) => {
            o.push(4);
            o.extend_from_slice(&a.ip().octets());
            o.extend_from_slice(&a.port().to_le_bytes());
        }
        SocketAddr::V6(a) => {
            o.push(6);
            o.extend_from_slice(&a.ip().octets());
            o.extend_from_slice(&a.port().to_le_bytes());
            o.extend_from_slice(&a.flowinfo().to_le_bytes());
            o.extend_from_slice(&a.scope_id().to_le_bytes());
        }
    }
}

/// The blob of shared facts: the endpoints (their text is made again when
/// read) and the capture, the client id, the topics, the error codes, the decode error and
/// warning, the bytes skipped before, the Fetch wait and the round trip.
pub fn encode_shared(s: &Shared) -> Vec<u8> {
    let mut o = Vec::with_capacity(96 + s.topics.iter().map(|t| t.len() + 8).sum::<usize>());
    put_addr(&mut o, &s.ends.client);
    put_addr(&mut o, &s.ends.broker);
    o.extend_from_slice(&s.ends.capture.to_le_bytes());
    put_opt_str(&mut o, s.client_id.as_deref());
    put_list(&mut o, &s.topics, |o, t| put_str(o, t.as_bytes()));
    put_list(&mut o, &s.error_codes, |o, c| {
        o.extend_from_slice(&c.to_le_bytes())
    });
    put_opt_str(&mut o, s.decode_error.as_deref());
    match s.decode_warning {
        None => o.push(0),
        Some(DecodeWarning::Trailing { offset, len, kind }) => {
            o.push(if kind == Kind::Request { 1 } else { 2 });
            o.extend_from_slice(&(offset as u64).to_le_bytes());
            o.extend_from_slice(&(len as u64).to_le_bytes());
        }
    }
    o.extend_from_slice(&s.skipped_before.to_le_bytes());
    match s.fetch {
        None => o.push(0),
        Some(f) => {
            o.push(1);
            o.extend_from_slice(&f.asked.max_wait_ms.to_le_bytes());
            o.extend_from_slice(&f.asked.min_bytes.to_le_bytes());
            o.extend_from_slice(&f.record_bytes.to_le_bytes());
        }
    }
    match s.rtt {
        None => o.push(0),
        Some(r) => {
            o.push(if r.from == RttFrom::Handshake { 1 } else { 2 });
            o.extend_from_slice(&r.ns.to_le_bytes());
        }
    }
    match &s.also {
        None => o.push(0),
        Some(a) => {
            o.push(if a.latency_ns.is_some() { 2 } else { 1 });
            o.extend_from_slice(&a.capture.to_le_bytes());
            o.extend_from_slice(&a.frame.to_le_bytes());
            o.extend_from_slice(&a.first_frame.to_le_bytes());
            for t in [a.ts, a.first_ts] {
                o.extend_from_slice(&t.secs.to_le_bytes());
                o.extend_from_slice(&t.nanos.to_le_bytes());
            }
            if let Some(l) = a.latency_ns {
                o.extend_from_slice(&l.to_le_bytes());
            }
        }
    }
    o
}

impl Reader<'_> {
    fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let at = self.at + 8;
        let b = self.bytes(what)?;
        String::from_utf8(b.to_vec()).map_err(|_| bad(what, at))
    }

    fn opt_string(&mut self, what: &'static str) -> Result<Option<String>, DecodeError> {
        if self.flag(what)? {
            self.string(what).map(Some)
        } else {
            Ok(None)
        }
    }

    fn addr(&mut self, what: &'static str) -> Result<SocketAddr, DecodeError> {
        match self.u8(what)? {
            4 => {
                let ip = Ipv4Addr::from(self.array::<4>(what)?);
                let port = u16::from_le_bytes(self.array(what)?);
                Ok(SocketAddr::new(IpAddr::V4(ip), port))
            }
            6 => {
                let ip = Ipv6Addr::from(self.array::<16>(what)?);
                let port = u16::from_le_bytes(self.array(what)?);
                let flow = self.u32(what)?;
                let scope = self.u32(what)?;
                Ok(SocketAddr::V6(SocketAddrV6::new(ip, port, flow, scope)))
            }
            _ => Err(bad(what, self.at - 1)),
        }
    }
}

/// The shared facts of a blob (its fields read in the order written).
pub fn decode_shared(b: &[u8]) -> Result<Shared, DecodeError> {
    let mut r = Reader { b, at: 0 };
    let (client, broker) = (r.addr("client address")?, r.addr("broker address")?);
    let capture = u16::from_le_bytes(r.array("capture")?);
    let ends = Ends::new(client, broker, capture);
    let s = Shared {
        ends: Arc::new(ends),
        client_id: r.opt_string("client id")?,
        // Each topic takes at least its 8-byte length.
        topics: r
            .list(8, "topic count", |r| r.string("topic"))?
            .into_iter()
            .map(String::into)
            .collect(),
        error_codes: r.list(2, "error code count", |r| {
            r.array("error code").map(i16::from_le_bytes)
        })?,
        decode_error: r.opt_string("decode error")?,
        decode_warning: match r.u8("decode warning")? {
            0 => None,
            k @ (1 | 2) => Some(DecodeWarning::Trailing {
                offset: r.usize("warning offset")?,
                len: r.usize("warning length")?,
                kind: if k == 1 {
                    Kind::Request
                } else {
                    Kind::Response
                },
            }),
            _ => return Err(bad("decode warning", r.at - 1)),
        },
        skipped_before: r.u64("skipped bytes")?,
        fetch: match r.u8("fetch wait")? {
            0 => None,
            1 => Some(FetchWait {
                asked: FetchAsk {
                    max_wait_ms: r.array("max wait").map(i32::from_le_bytes)?,
                    min_bytes: r.array("min bytes").map(i32::from_le_bytes)?,
                },
                record_bytes: r.u64("record bytes")?,
            }),
            _ => return Err(bad("fetch wait", r.at - 1)),
        },
        rtt: match r.u8("round trip")? {
            0 => None,
            k @ (1 | 2) => Some(Rtt {
                from: if k == 1 {
                    RttFrom::Handshake
                } else {
                    RttFrom::DataAck
                },
                ns: r.u64("round trip")?,
            }),
            _ => return Err(bad("round trip", r.at - 1)),
        },
        also: match r.u8("other capture point")? {
            0 => None,
            k @ (1 | 2) => Some(Box::new(Also {
                capture: u16::from_le_bytes(r.array("other capture")?),
                frame: r.u64("other frame")?,
                first_frame: r.u64("other first frame")?,
                ts: r.ts("other time")?,
                first_ts: r.ts("other first time")?,
                latency_ns: if k == 2 {
                    Some(r.u64("other latency")?)
                } else {
                    None
                },
            })),
            _ => return Err(bad("other capture point", r.at - 1)),
        },
    };
    r.end()?;
    Ok(s)
}
