//! The message index: one compact [`IndexEntry`] per message listed.
//!
//! Place in the data path: the loader's [`Entry`]s (a full [`MessageInfo`] and
//! [`RawMessage`]) are turned into index entries as they reach the
//! [`App`](super::app::App); the list, the filter, the sort and the stats read
//! them, and the selected message's full facts and bytes are rebuilt from them on
//! demand ([`IndexEntry::info`], [`IndexEntry::raw`]).
//!
//! Layout: the fixed-size facts are stored inline (timestamps as seconds and
//! nanoseconds, optional numbers as a value and a presence bit). What many
//! messages share — the connection's endpoints (and their text, so the filter
//! need not format them), the client id, the topic list, the error codes, a
//! decode error — is one [`Shared`] pointed to; the entry store writes each
//! distinct one once per scratch file and keeps the recent ones in memory
//! (`store.rs`). A message whose bytes lie in the capture file in one piece,
//! carried from its first frame on and consistent with its facts (nearly all of
//! them) keeps its file offset and length inline; any other message keeps its
//! whole [`RawMessage`] boxed ("spilled", with its bytes when they cannot be
//! read again). The store writes an entry as a fixed-size record ([`record`]).
//!
//! Invariant: `IndexEntry::new(e, _).info() == e.info` and `.raw() == e.raw`
//! for every entry `e`: the compact form loses nothing.

use kafkashark::kafka::schema::ApiKey;
use kafkashark::vocab::{Direction, Timestamp};
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use kafkashark::analyzer::{Also, FetchWait, MessageInfo};
use kafkashark::flow::Rtt;
use kafkashark::kafka::decode::{DecodeWarning, Kind};
use kafkashark::kafka::framing::RawMessage;

use super::app::Entry;
use crate::filter::Facts;

pub mod record;

/// A connection's endpoints and their text, and the capture it was seen in.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Ends {
    client: SocketAddr,
    broker: SocketAddr,
    capture: u16,
    client_text: String,
    broker_text: String,
}

impl Ends {
    fn new(client: SocketAddr, broker: SocketAddr, capture: u16) -> Ends {
        Ends {
            client,
            broker,
            capture,
            client_text: client.to_string(),
            broker_text: broker.to_string(),
        }
    }
}

/// The facts many messages share: written once per scratch file by the entry
/// store, which records point to (see [`record`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Shared {
    ends: Arc<Ends>,
    client_id: Option<String>,
    topics: kafkashark::kafka::decode::Topics,
    error_codes: Vec<i16>,
    decode_error: Option<String>,
    decode_warning: Option<DecodeWarning>,
    skipped_before: u64,
    fetch: Option<FetchWait>,
    rtt: Option<Rtt>,
    also: Option<Box<Also>>,
}

/// Endpoints of the recent connections with their text, so that a message
/// does not format its addresses again: at most [`Interner::MAX_ENDS`] pairs.
#[derive(Debug, Default)]
pub struct Interner {
    ends: HashMap<(SocketAddr, SocketAddr, u16), Arc<Ends>>,
}

impl Interner {
    /// Most endpoint pairs kept (past it they are forgotten and made again).
    pub const MAX_ENDS: usize = 4096;

    fn ends(&mut self, client: SocketAddr, broker: SocketAddr, capture: u16) -> Arc<Ends> {
        let key = (client, broker, capture);
        if self.ends.len() >= Self::MAX_ENDS && !self.ends.contains_key(&key) {
            self.ends.clear();
        }
        self.ends
            .entry(key)
            .or_insert_with(|| Arc::new(Ends::new(client, broker, capture)))
            .clone()
    }

    /// Endpoint pairs kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ends.len()
    }
}

const API_KEY: u16 = 1;
const API_VERSION: u16 = 1 << 1;
const CORRELATION: u16 = 1 << 2;
const PEER: u16 = 1 << 3;
const LATENCY: u16 = 1 << 4;
const THROTTLE: u16 = 1 << 5;
const PAIRED: u16 = 1 << 6;
const INFERRED: u16 = 1 << 7;
const EXPECTS: u16 = 1 << 8;
const RESYNCED: u16 = 1 << 9;
const IN_FILE: u16 = 1 << 10;
const HOL: u16 = 1 << 11;
/// `MessageInfo::long_poll`, decided once from the full facts.
const LONG_POLL: u16 = 1 << 12;

/// One message of the list, compact (see the module doc): its facts and,
/// when it is not the common case, its whole message. Its facts' methods are
/// its own (`Deref`).
#[derive(Clone, Debug)]
pub struct IndexEntry {
    facts: FactsEntry,
    /// The whole message (bytes dropped when `IN_FILE`), when it is not the common case.
    spill: Option<Box<RawMessage>>,
}

impl std::ops::Deref for IndexEntry {
    type Target = FactsEntry;
    fn deref(&self) -> &FactsEntry {
        &self.facts
    }
}

impl std::ops::DerefMut for IndexEntry {
    fn deref_mut(&mut self) -> &mut FactsEntry {
        &mut self.facts
    }
}

/// An entry's facts without its message: what the filter, the sort keys and
/// the stats read, and what the store reads back without the record's side
/// blob (the message is not there to be shown, so only the facts are offered).
#[derive(Clone, Debug)]
pub struct FactsEntry {
    shared: Arc<Shared>,
    index: u64,
    frame: u64,
    first_frame: u64,
    ts_secs: i64,
    first_ts_secs: i64,
    stream: u64,
    stream_offset: u64,
    peer: u64,
    latency_ns: u64,
    hol_wait_ns: u64,
    sum: u64,
    piece_offset: u64,
    ts_nanos: u32,
    first_ts_nanos: u32,
    piece_len: u32,
    correlation_id: i32,
    length: i32,
    throttle_time_ms: i32,
    api_key: i16,
    api_version: i16,
    flags: u16,
    kind: Kind,
}

fn dir_of(kind: Kind) -> Direction {
    match kind {
        Kind::Request => Direction::ClientToBroker,
        Kind::Response => Direction::BrokerToClient,
    }
}

impl IndexEntry {
    /// The compact form of `e`, its endpoints' text from `interner`.
    pub fn new(e: Entry, interner: &mut Interner) -> IndexEntry {
        let Entry { info, raw, sum } = e;
        let flags = [
            (API_KEY, info.api_key.is_some()),
            (API_VERSION, info.api_version.is_some()),
            (CORRELATION, info.correlation_id.is_some()),
            (PEER, info.peer.is_some()),
            (LATENCY, info.latency_ns.is_some()),
            (THROTTLE, info.throttle_time_ms.is_some()),
            (PAIRED, info.paired),
            (INFERRED, info.inferred),
            (EXPECTS, info.expects_response),
            (RESYNCED, info.resynced),
            (IN_FILE, sum.is_some()),
            (HOL, info.hol_wait_ns.is_some()),
            (LONG_POLL, info.long_poll()),
        ];
        let flags = flags
            .iter()
            .fold(0, |f, &(bit, on)| f | (bit * u16::from(on)));
        let common = sum.is_some()
            && raw.bytes.is_empty()
            && raw.provenance.is_empty()
            && raw.tls_records.is_empty()
            && raw.file_pieces.len() == 1
            && raw.missing == 0
            && raw.stream == info.stream
            && raw.dir == dir_of(info.kind)
            && raw.first_frame == info.first_frame
            && raw.last_frame == info.frame
            && raw.first_ts == info.first_ts
            && raw.last_ts == info.ts
            && raw.resynced == info.resynced
            && raw.skipped_before == info.skipped_before;
        let (piece_offset, piece_len) = raw.file_pieces.first().copied().unwrap_or((0, 0));
        let stream_offset = raw.stream_offset;
        let spill = (!common).then(|| Box::new(raw));
        let ends = interner.ends(info.client, info.broker, info.capture);
        let shared = Arc::new(Shared {
            ends,
            client_id: info.client_id,
            topics: info.topics,
            error_codes: info.error_codes,
            decode_error: info.decode_error,
            decode_warning: info.decode_warning,
            skipped_before: info.skipped_before,
            fetch: info.fetch,
            rtt: info.rtt,
            also: info.also,
        });
        let facts = FactsEntry {
            shared,
            index: info.index,
            frame: info.frame,
            first_frame: info.first_frame,
            ts_secs: info.ts.secs,
            first_ts_secs: info.first_ts.secs,
            stream: info.stream,
            stream_offset,
            peer: info.peer.unwrap_or(0),
            latency_ns: info.latency_ns.unwrap_or(0),
            hol_wait_ns: info.hol_wait_ns.unwrap_or(0),
            sum: sum.unwrap_or(0),
            piece_offset,
            ts_nanos: info.ts.nanos,
            first_ts_nanos: info.first_ts.nanos,
            piece_len,
            correlation_id: info.correlation_id.unwrap_or(0),
            length: info.length,
            throttle_time_ms: info.throttle_time_ms.unwrap_or(0),
            api_key: info.api_key.map_or(0, |k| k.0),
            api_version: info.api_version.unwrap_or(0),
            flags,
            kind: info.kind,
        };
        IndexEntry { facts, spill }
    }

    /// The message as the loader gave it: with its bytes, or (when
    /// [`in_file`](FactsEntry::in_file)) without them and with `file_pieces` saying
    /// where to read them again.
    pub fn raw(&self) -> RawMessage {
        if let Some(r) = &self.spill {
            return RawMessage::clone(r);
        }
        let f = &self.facts;
        RawMessage {
            stream: f.stream,
            dir: dir_of(f.kind),
            bytes: Default::default(),
            stream_offset: f.stream_offset,
            first_frame: f.first_frame,
            last_frame: f.frame,
            first_ts: f.first_ts(),
            last_ts: f.ts(),
            provenance: Vec::new(),
            resynced: f.resynced(),
            skipped_before: f.shared.skipped_before,
            missing: 0,
            file_pieces: vec![(f.piece_offset, f.piece_len)],
            tls_records: Vec::new(),
            twin: None,
        }
    }

    /// True when the whole message is kept boxed (not the common case).
    #[cfg(test)]
    pub fn spilled(&self) -> bool {
        self.spill.is_some()
    }

    /// Bytes of the message not received (0 for a complete message).
    pub fn missing(&self) -> u64 {
        self.spill.as_ref().map_or(0, |r| r.missing)
    }
}

impl FactsEntry {
    /// The connection's client and broker.
    pub fn endpoints(&self) -> (SocketAddr, SocketAddr) {
        (self.shared.ends.client, self.shared.ends.broker)
    }

    fn has(&self, bit: u16) -> bool {
        self.flags & bit != 0
    }

    fn set(&mut self, bit: u16, on: bool) {
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
    }

    /// The full facts (allocates: for the selected message, not for every entry).
    pub fn info(&self) -> MessageInfo {
        let s = &self.shared;
        MessageInfo {
            index: self.index,
            frame: self.frame,
            first_frame: self.first_frame,
            ts: self.ts(),
            first_ts: self.first_ts(),
            stream: self.stream,
            client: s.ends.client,
            broker: s.ends.broker,
            kind: self.kind,
            api_key: self.api_key().map(ApiKey),
            api_version: self.api_version(),
            correlation_id: self.correlation_id(),
            length: self.length,
            client_id: s.client_id.clone(),
            paired: self.paired(),
            peer: self.peer(),
            inferred: self.inferred(),
            expects_response: self.expects_response(),
            latency_ns: self.latency_ns(),
            hol_wait_ns: self.has(HOL).then_some(self.hol_wait_ns),
            rtt: s.rtt,
            fetch: s.fetch,
            throttle_time_ms: self.throttle_time_ms(),
            error_codes: s.error_codes.clone(),
            decode_error: s.decode_error.clone(),
            decode_warning: s.decode_warning,
            resynced: self.resynced(),
            skipped_before: s.skipped_before,
            capture: s.ends.capture,
            topics: s.topics.clone(),
            also: s.also.clone(),
        }
    }

    /// The facts this entry shares with others.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// True when the bytes are read again from the capture file when needed.
    pub fn in_file(&self) -> bool {
        self.has(IN_FILE)
    }

    /// The fingerprint of the dropped bytes, when [`in_file`](Self::in_file).
    pub fn sum(&self) -> Option<u64> {
        self.in_file().then_some(self.sum)
    }

    /// 0-based position in the index.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Time of `frame`.
    pub fn ts(&self) -> Timestamp {
        Timestamp {
            secs: self.ts_secs,
            nanos: self.ts_nanos,
        }
    }

    /// Time of `first_frame`.
    pub fn first_ts(&self) -> Timestamp {
        Timestamp {
            secs: self.first_ts_secs,
            nanos: self.first_ts_nanos,
        }
    }

    /// Index of the paired message.
    pub fn peer(&self) -> Option<u64> {
        self.has(PEER).then_some(self.peer)
    }

    /// Renumbers the entry (ring mode, or as it joins the index).
    pub fn set_index(&mut self, index: u64) {
        self.index = index;
    }

    /// Sets (or clears) the paired message.
    pub fn set_peer(&mut self, peer: Option<u64>) {
        self.set(PEER, peer.is_some());
        self.peer = peer.unwrap_or(0);
    }

    /// Marks it paired.
    pub fn set_paired(&mut self, paired: bool) {
        self.set(PAIRED, paired);
    }
}

impl Facts for FactsEntry {
    fn kind(&self) -> Kind {
        self.kind
    }
    fn api_key(&self) -> Option<i16> {
        self.has(API_KEY).then_some(self.api_key)
    }
    fn api_version(&self) -> Option<i16> {
        self.has(API_VERSION).then_some(self.api_version)
    }
    fn client_text(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.shared.ends.client_text)
    }
    fn broker_text(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.shared.ends.broker_text)
    }
    fn client_id(&self) -> Option<&str> {
        self.shared.client_id.as_deref()
    }
    fn stream(&self) -> u64 {
        self.stream
    }
    fn capture(&self) -> u16 {
        self.shared.ends.capture
    }
    fn correlation_id(&self) -> Option<i32> {
        self.has(CORRELATION).then_some(self.correlation_id)
    }
    fn first_frame(&self) -> u64 {
        self.first_frame
    }
    fn frame(&self) -> u64 {
        self.frame
    }
    fn length(&self) -> i32 {
        self.length
    }
    fn topics(&self) -> &[Arc<str>] {
        &self.shared.topics
    }
    fn latency_ns(&self) -> Option<u64> {
        self.has(LATENCY).then_some(self.latency_ns)
    }
    fn hol_wait_ns(&self) -> Option<u64> {
        self.has(HOL).then_some(self.hol_wait_ns)
    }
    fn service_ns(&self) -> Option<u64> {
        // As `MessageInfo::service_ns`, without building one.
        let l = self.latency_ns()?;
        Some(l.saturating_sub(self.hol_wait_ns().unwrap_or(0)))
    }
    fn rtt_ns(&self) -> Option<u64> {
        self.shared.rtt.map(|r| r.ns)
    }
    fn long_poll(&self) -> bool {
        self.has(LONG_POLL)
    }
    fn throttle_time_ms(&self) -> Option<i32> {
        self.has(THROTTLE).then_some(self.throttle_time_ms)
    }
    fn error_codes(&self) -> &[i16] {
        &self.shared.error_codes
    }
    fn paired(&self) -> bool {
        self.has(PAIRED)
    }
    fn expects_response(&self) -> bool {
        self.has(EXPECTS)
    }
    fn inferred(&self) -> bool {
        self.has(INFERRED)
    }
    fn resynced(&self) -> bool {
        self.has(RESYNCED)
    }
    fn malformed(&self) -> bool {
        self.shared.decode_error.is_some()
    }
    fn warned(&self) -> bool {
        self.shared.decode_warning.is_some()
    }
    fn also(&self) -> Option<&Also> {
        self.shared.also.as_deref()
    }
}
