//! Kafka framing: one direction's ordered bytes → size-prefixed Kafka messages.
//!
//! Place in the data path: after TCP reassembly (`flow`), before decoding and
//! pairing. Sans-IO: a [`Framer`] per (stream, direction) receives the
//! `Data`/`Gap` events of that direction and yields [`FramerEvent`]s.
//!
//! Every Kafka message is an int32 size followed by `size` bytes. A partial
//! size prefix or body is "need more", never an error. A stream whose start was
//! seen (SYN) is trusted: messages are cut back to back. Otherwise — capture
//! started mid-stream, a gap hit a message boundary, a size was insane — the
//! framer resynchronises: it scans forward for the first offset where a message
//! plausibly starts, and reports the bytes skipped. Bytes no accepted boundary
//! covers are never framed.
//!
//! - Requests: sane size, known api key, version in range, plausible client id,
//!   a body that decodes, and a plausible following boundary (or the data ends
//!   there).
//! - Responses, once the connection showed a request ([`RequestLog`], kept by the
//!   caller): a candidate is anchored when its correlation id is a logged
//!   request's and its body, buffered whole, decodes exactly with that request's
//!   api key and version. An anchored candidate no larger than any message seen
//!   on the connection is accepted; a larger one needs the next boundary (or the
//!   end of the stream exactly at its end) to confirm it. An unanchored one is
//!   accepted only when the responses after it, with consecutive ids, lead to an
//!   anchored one within eight responses and no anchored response
//!   starts inside that span.
//! - Responses while the client direction has bytes but no request was framed:
//!   wait for the requests. On a connection without client bytes, or at the end
//!   of such a stream: a chain of following responses with sane sizes and
//!   increasing ids.
//!
//! A gap inside a message whose size is known does not need a resync: the
//! framer keeps the received prefix as a [`FramerEvent::Partial`] and skips to
//! the known end of the message.
//!
//! Invariants: no allocation is sized from a wire length before those bytes
//! arrived (a message is copied out only once complete, and only when it spans
//! several chunks; a message inside one chunk is a zero-copy slice); buffered
//! bytes are bounded by `max_message + 4` in trusted mode and by
//! `resync_wait` plus one chunk while resynchronising; every message byte maps
//! to the frame that carried it through `RawMessage::provenance`.

#![deny(clippy::indexing_slicing)]
use crate::flow::Origin;
use crate::kafka::decode::{
    decode_request, decode_response, summarize_request, summarize_response, DecodeOptions,
    DecodeWarning, EMBEDDING_APIS,
};
use crate::kafka::schema;

use crate::vocab::{Direction, Timestamp};
use bytes::{Bytes, BytesMut};
use std::cell::Cell;
use std::collections::VecDeque;

/// Framing limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FramerConfig {
    /// Largest message size accepted (the int32 size field), default 100 MiB.
    pub max_message: usize,
    /// While resynchronising, how far ahead a candidate may need bytes before it is given up.
    pub resync_wait: usize,
}

impl Default for FramerConfig {
    fn default() -> FramerConfig {
        FramerConfig {
            max_message: 100 << 20,
            resync_wait: 4 << 20,
        }
    }
}

/// A whole Kafka message as it crossed the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawMessage {
    /// Connection index.
    pub stream: u64,
    /// Client → broker (a request) or broker → client (a response).
    pub dir: Direction,
    /// The message including its 4-byte size prefix (for a partial message, the prefix received).
    pub bytes: Bytes,
    /// Offset of the size prefix in the direction's byte stream.
    pub stream_offset: u64,
    /// Frame that carried the first byte.
    pub first_frame: u64,
    /// Frame that carried the last byte (completed the message).
    pub last_frame: u64,
    /// Time of `first_frame`.
    pub first_ts: Timestamp,
    /// Time of `last_frame`.
    pub last_ts: Timestamp,
    /// `(offset in message, frame)` at each change of carrying frame; starts at
    /// offset 0. Empty when one frame, `first_frame`, carried every byte (most
    /// messages: no allocation for them); [`RawMessage::frame_of`] reads both.
    pub provenance: Vec<(u32, u64)>,
    /// True for the first message after a resynchronisation.
    pub resynced: bool,
    /// Bytes skipped (not framed) just before this message.
    pub skipped_before: u64,
    /// Bytes of the message after the received prefix in `bytes`: the hole and
    /// everything after it up to the message's end, including bytes that arrived after
    /// the hole but were skipped (0 for a complete message). `bytes.len() + missing`
    /// is the whole message.
    pub missing: u64,
    /// Where `bytes` lies in the capture file: `(file offset, length)` per piece, in
    /// order, the lengths summing to `bytes.len()`. Empty when a byte came from a frame
    /// without a file offset (live capture, stdin, a reader that does not know it).
    /// With it, a shell may drop the bytes and read them again ([`RawMessage::reread`]).
    pub file_pieces: Vec<(u64, u32)>,
    /// `(offset in message, record)` at each TLS record the bytes came
    /// from, starting at offset 0 ([`Origin::Record`]: counted from 1 in the
    /// direction); empty unless the connection was decrypted.
    pub tls_records: Vec<(u32, u64)>,
    /// The same message at another capture point, for a connection read
    /// from two captures ([`crate::twins`]); `None` for nearly all.
    pub twin: Option<Box<Twin>>,
}

/// A message of a connection read from two capture points: where the
/// other one saw it, or that only the other one did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Twin {
    /// Seen at both: the other capture point's sighting (the message's own
    /// frames and times are its stream's capture's).
    Also(Sighting),
    /// Seen only at this other capture (its frames and times are that
    /// capture's), though its stream is the first capture's.
    Only(u16),
}

/// Where and when a capture saw a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sighting {
    /// The capture (its place among the files read together).
    pub capture: u16,
    /// Frame that carried its first byte.
    pub first_frame: u64,
    /// Frame that carried its last byte.
    pub last_frame: u64,
    /// Time of `first_frame` (on the first capture's clock).
    pub first_ts: Timestamp,
    /// Time of `last_frame` (on the first capture's clock).
    pub last_ts: Timestamp,
}

impl RawMessage {
    /// The size field (bytes after the prefix), from the prefix itself.
    pub fn size(&self) -> Option<i32> {
        be_i32(self.bytes.get(0..4))
    }

    /// True for a request (client → broker).
    pub fn is_request(&self) -> bool {
        self.dir == Direction::ClientToBroker
    }

    /// The correlation id: bytes 8..12 of a request, 4..8 of a response.
    pub fn correlation_id(&self) -> Option<i32> {
        match self.dir {
            Direction::ClientToBroker => be_i32(self.bytes.get(8..12)),
            Direction::BrokerToClient => be_i32(self.bytes.get(4..8)),
        }
    }

    /// `(api_key, api_version)` of a request; `None` for responses.
    pub fn request_key_version(&self) -> Option<(i16, i16)> {
        if self.dir != Direction::ClientToBroker {
            return None;
        }
        Some((be_i16(self.bytes.get(4..6))?, be_i16(self.bytes.get(6..8))?))
    }

    /// Reads the message's bytes back with `read_at(file offset, buffer)` (which fills
    /// the whole buffer or fails), following [`RawMessage::file_pieces`]. `None` when the
    /// message has no file pieces or a read fails.
    pub fn reread<E>(
        pieces: &[(u64, u32)],
        mut read_at: impl FnMut(u64, &mut [u8]) -> Result<(), E>,
    ) -> Result<Vec<u8>, E> {
        let total: usize = pieces.iter().map(|&(_, n)| n as usize).sum();
        let mut out = vec![0u8; total];
        let mut at = 0usize;
        for &(off, n) in pieces {
            let end = at + n as usize;
            if let Some(dst) = out.get_mut(at..end) {
                read_at(off, dst)?;
            }
            at = end;
        }
        Ok(out)
    }

    /// The frame that carried byte `offset` of the message.
    pub fn frame_of(&self, offset: u32) -> u64 {
        let i = self.provenance.partition_point(|&(o, _)| o <= offset);
        i.checked_sub(1)
            .and_then(|i| self.provenance.get(i))
            .map_or(self.first_frame, |&(_, f)| f)
    }
}

/// A request the connection showed: what its response is decoded with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeenRequest {
    /// The request's correlation id.
    pub correlation_id: i32,
    /// Its api key.
    pub api_key: i16,
    /// Its api version.
    pub api_version: i16,
}

/// Answered requests a [`RequestLog`] remembers, besides the pending ones.
const RECENT_ANSWERED: usize = 64;

/// What one connection's messages tell its response framing: the requests
/// framed on it (unanswered ones, at most `max_pending`, and the last
/// [`RECENT_ANSWERED`] answered ones) with their api key and version, and the
/// largest message size seen in either direction. The caller keeps one per
/// connection and shows it every message framed there ([`RequestLog::observe`]).
#[derive(Clone, Debug, Default)]
pub struct RequestLog {
    pending: VecDeque<SeenRequest>,
    answered: VecDeque<SeenRequest>,
    max_pending: usize,
    largest: u32,
    requests_seen: bool,
    client_bytes: bool,
    /// Counts changes to the requests held (what a framer remembered is stale after one).
    generation: u64,
}

impl RequestLog {
    /// An empty log that keeps at most `max_pending` unanswered requests.
    pub fn new(max_pending: usize) -> RequestLog {
        RequestLog {
            max_pending,
            ..RequestLog::default()
        }
    }

    /// Notes a framed message (complete, or the prefix of a partial one): a request
    /// becomes pending, a response answers the request with its correlation id.
    pub fn observe(&mut self, m: &RawMessage) {
        if let Some(size) = m.size().and_then(|s| u32::try_from(s).ok()) {
            self.size(size);
        }
        let Some(corr) = m.correlation_id() else {
            return;
        };
        match m.request_key_version() {
            Some((api_key, api_version)) => self.request(SeenRequest {
                correlation_id: corr,
                api_key,
                api_version,
            }),
            None => self.response(corr),
        }
    }

    /// Notes a request: it waits for its response (the oldest pending one is
    /// forgotten when `max_pending` are held).
    pub fn request(&mut self, req: SeenRequest) {
        self.requests_seen = true;
        self.generation += 1;
        if self.pending.len() >= self.max_pending.max(1) {
            self.pending.pop_front();
        }
        self.pending.push_back(req);
    }

    /// Notes a response: the request it answers moves to the recent answered ones.
    pub fn response(&mut self, corr: i32) {
        if let Some(i) = self.pending.iter().position(|r| r.correlation_id == corr) {
            if let Some(r) = self.pending.remove(i) {
                self.generation += 1;
                if self.answered.len() >= RECENT_ANSWERED {
                    self.answered.pop_front();
                }
                self.answered.push_back(r);
            }
        }
    }

    /// Notes a message size seen on the connection.
    pub fn size(&mut self, size: u32) {
        self.largest = self.largest.max(size);
    }

    /// The request a response with this correlation id answers: the oldest pending
    /// one, else the latest answered one.
    pub fn lookup(&self, corr: i32) -> Option<SeenRequest> {
        let pending = self.pending.iter().find(|r| r.correlation_id == corr);
        let answered = || {
            self.answered
                .iter()
                .rev()
                .find(|r| r.correlation_id == corr)
        };
        pending.or_else(answered).copied()
    }

    /// Whether a response with id `next` may follow one with id `corr`: Kafka
    /// answers a connection's requests in order, so when `corr` is pending and
    /// requests sent after it are too, `next` must be one of those (not
    /// necessarily the first: an acks=0 Produce gets no answer). With nothing
    /// known after `corr`, anything may.
    pub fn may_follow(&self, corr: i32, next: i32) -> bool {
        let Some(i) = self.pending.iter().position(|r| r.correlation_id == corr) else {
            return true;
        };
        let mut later = self.pending.iter().skip(i + 1).peekable();
        later.peek().is_none() || later.any(|r| r.correlation_id == next)
    }

    /// Unanswered requests held.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Largest size field of a message seen on the connection (either direction).
    pub fn largest(&self) -> u32 {
        self.largest
    }

    /// True once a request was framed on the connection.
    pub fn requests_seen(&self) -> bool {
        self.requests_seen
    }

    /// Notes that the client direction carried bytes: requests are coming, so the
    /// response direction waits for them before guessing boundaries without them.
    pub fn client_bytes(&mut self) {
        self.client_bytes = true;
    }
}

/// What a framer produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FramerEvent {
    /// A complete message.
    Message(RawMessage),
    /// The received prefix of a message cut by a gap (`missing > 0`).
    Partial(RawMessage),
    /// A plausible boundary was found after skipping `skipped` bytes.
    Resynced {
        /// Bytes skipped.
        skipped: u64,
        /// Stream offset of the boundary found.
        stream_offset: u64,
        /// Frame that carried the boundary's first byte.
        frame: u64,
    },
    /// A trusted stream held an impossible size: framing falls back to resynchronising.
    Desync {
        /// Stream offset of the size field.
        stream_offset: u64,
        /// The size read.
        size: i32,
        /// Frame that carried it.
        frame: u64,
    },
    /// Bytes left at the end of the stream that form no message.
    Discarded {
        /// How many.
        bytes: u64,
        /// Frame that carried the first of them.
        frame: u64,
    },
}

#[derive(Clone, Debug)]
struct Chunk {
    data: Bytes,
    frame: u64,
    ts: Timestamp,
    /// Where `data[0]` lies.
    origin: Origin,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Trusted,
    Resync,
    /// Drop bytes until this stream offset, then trust it as a boundary.
    Skip(u64),
}

/// Smallest response size field in trusted framing: the correlation id. A broker
/// may answer an api it does not know with nothing else.
const MIN_RESPONSE_SIZE: i32 = 4;

/// Smallest response size field a resync accepts without an anchor:
/// a correlation id and an int16 ErrorCode (HeartbeatResponse v0, LeaveGroupResponse
/// v0, UpdateMetadataResponse v0-5). Every other response schema is longer; no
/// response of a known api has an empty body.
const MIN_GUESSED_RESPONSE_SIZE: i32 = 6;

/// Smallest request size field: api key, version and correlation id
/// (ControlledShutdown v0 has no client id).
const MIN_REQUEST_SIZE: i32 = 8;

/// Responses after a resync candidate that must look right before a boundary is
/// accepted on structure alone (a connection that showed no request).
const RESPONSE_CHAIN: usize = 2;

/// Largest step between the correlation ids of consecutive responses.
const CORR_WINDOW: i64 = 1 << 16;

/// Responses after an unanchored resync candidate searched for an anchored one.
const ANCHOR_CHAIN: usize = 8;

/// Whether a response candidate is anchored on a request ([`Framer::anchor`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Anchor {
    /// Its id is a request's and its body decodes with that request's key and version.
    Yes,
    /// Its id is a request's; the body is whole once this buffer offset is buffered.
    Whole(u64),
    /// Not anchored.
    No,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Accept,
    Reject,
    NeedMore,
}

impl Verdict {
    /// `Accept` when `ok`, else `Reject`.
    fn of(ok: bool) -> Verdict {
        if ok {
            Verdict::Accept
        } else {
            Verdict::Reject
        }
    }

    /// `NeedMore`, or `Reject` at the end of the stream.
    fn more(eof: bool) -> Verdict {
        if eof {
            Verdict::Reject
        } else {
            Verdict::NeedMore
        }
    }
}

/// Cuts one direction's bytes into Kafka messages.
#[derive(Debug)]
pub struct Framer {
    stream: u64,
    dir: Direction,
    cfg: FramerConfig,
    chunks: VecDeque<Chunk>,
    /// Stream offset of the first buffered byte.
    head: u64,
    /// Buffered bytes.
    avail: u64,
    state: State,
    skipped: u64,
    skipped_frame: u64,
    resynced: bool,
    queue: VecDeque<FramerEvent>,
    /// The last anchoring decode: (stream offset, request, whether the body decoded).
    /// A candidate that waits for its follower is not decoded again on every chunk.
    anchor_memo: Cell<Option<(u64, SeenRequest, bool)>>,
    /// Whether a request candidate's body must decode ([`Framer::by_shape`] clears it).
    decode_requests: bool,
    /// The last search for an anchored response inside a candidate's span.
    between_memo: Cell<Option<Searched>>,
}

/// A search for anchored responses: stream offsets `from..to` hold none (then `to`
/// is `found`, the first one, when there is one), for one state of the buffer (its
/// end) and of the request log (its generation).
#[derive(Clone, Copy, Debug)]
struct Searched {
    key: (u64, u64),
    from: u64,
    to: u64,
    found: Option<u64>,
}

impl Framer {
    /// A framer for one direction; `trusted` when the stream start (SYN) was seen.
    pub fn new(stream: u64, dir: Direction, trusted: bool, cfg: FramerConfig) -> Framer {
        Framer {
            stream,
            dir,
            cfg,
            chunks: VecDeque::new(),
            head: 0,
            avail: 0,
            state: if trusted {
                State::Trusted
            } else {
                State::Resync
            },
            skipped: 0,
            skipped_frame: 0,
            resynced: false,
            queue: VecDeque::new(),
            anchor_memo: Cell::new(None),
            decode_requests: true,
            between_memo: Cell::new(None),
        }
    }

    /// The framer judges request boundaries by their header and the next one only,
    /// without decoding bodies: for a probe that tells which side of a connection
    /// sends requests, where a malformed request is still a request.
    pub fn by_shape(mut self) -> Framer {
        self.decode_requests = false;
        self
    }

    /// The connection index this framer belongs to.
    pub fn stream(&self) -> u64 {
        self.stream
    }

    /// Bytes buffered and not yet part of a message.
    pub fn buffered(&self) -> u64 {
        self.avail
    }

    /// Appends in-order bytes at `stream_offset` (as delivered by `flow`),
    /// carried by `frame` at `ts`, from `origin`: messages made of bytes in
    /// the capture file carry their [`RawMessage::file_pieces`], of
    /// decrypted ones their [`RawMessage::tls_records`].
    pub fn push(
        &mut self,
        data: Bytes,
        stream_offset: u64,
        frame: u64,
        ts: Timestamp,
        origin: Origin,
    ) {
        let mut origin = origin;
        let end = self.head + self.avail;
        let mut data = data;
        let mut off = stream_offset;
        if off > end {
            // Bytes are missing that no gap announced: treat them as one.
            self.gap(end, off - end, frame, &RequestLog::default());
        } else if off < end {
            let dup = usize::try_from(end - off).unwrap_or(usize::MAX);
            if dup >= data.len() {
                return;
            }
            data = data.slice(dup..);
            origin = origin.advance(dup as u64);
            off = end;
        }
        if let State::Skip(until) = self.state {
            let drop = until.saturating_sub(off);
            let n = usize::try_from(drop).unwrap_or(usize::MAX);
            if n >= data.len() {
                self.head = off + data.len() as u64;
                return;
            }
            data = data.slice(n..);
            origin = origin.advance(n as u64);
            self.head = until;
            self.state = State::Trusted;
        }
        if data.is_empty() {
            return;
        }
        if self.avail == 0 {
            self.head = off.max(self.head);
        }
        self.avail += data.len() as u64;
        self.chunks.push_back(Chunk {
            data,
            frame,
            ts,
            origin,
        });
    }

    /// `len` bytes at `stream_offset` will never arrive. The bytes before the gap are
    /// framed as if the stream ended there (`requests` as for [`Framer::next_event`]).
    pub fn gap(&mut self, stream_offset: u64, len: u64, frame: u64, requests: &RequestLog) {
        let gap_end = stream_offset.saturating_add(len);
        if let State::Skip(until) = self.state {
            if gap_end <= until {
                return;
            }
        }
        // Cut what is complete before the gap; a resync treats the gap as an end of data.
        loop {
            match self.state {
                State::Trusted => match self.cut_trusted() {
                    Some(ev) => self.queue.push_back(ev),
                    None => break,
                },
                State::Resync => {
                    if !self.scan(true, requests) {
                        break;
                    }
                }
                State::Skip(_) => break,
            }
        }
        self.state = match self.queue_partial() {
            Some(msg_end) if gap_end <= msg_end => State::Skip(msg_end),
            Some(_) => State::Resync,
            None => {
                self.discard_all(frame);
                State::Resync
            }
        };
        self.head = gap_end;
        self.avail = 0;
        self.chunks.clear();
    }

    /// The next event, if any; `requests` is what the connection showed so far (its
    /// requests with their api key and version), which response resync is anchored on
    /// (an empty log for a request direction or when unknown).
    pub fn next_event(&mut self, requests: &RequestLog) -> Option<FramerEvent> {
        self.step(false, requests)
    }

    /// End of the stream: emit what can still be framed, then a `Partial` or `Discarded`
    /// for the rest.
    pub fn finish(&mut self, requests: &RequestLog, out: &mut Vec<FramerEvent>) {
        while let Some(ev) = self.step(true, requests) {
            out.push(ev);
        }
        if self.avail == 0 && self.skipped == 0 {
            return;
        }
        if self.queue_partial().is_none() {
            self.discard_all(0);
            out.push(FramerEvent::Discarded {
                bytes: std::mem::take(&mut self.skipped),
                frame: self.skipped_frame,
            });
            self.chunks.clear();
            self.head += self.avail;
            self.avail = 0;
        }
        out.extend(self.queue.drain(..));
    }

    /// In trusted framing with a sane size at the front: everything buffered
    /// queued as the received prefix of that message (a `Partial`), and the
    /// stream offset where the message ends.
    fn queue_partial(&mut self) -> Option<u64> {
        let size = self.size_at(0).filter(|&s| self.trusted_size_ok(s))?;
        if self.state != State::Trusted {
            return None;
        }
        let msg_end = self.head + 4 + u64::try_from(size).unwrap_or(0);
        let missing = msg_end.saturating_sub(self.head + self.avail);
        let mut m = self.take(self.avail)?;
        m.missing = missing;
        self.queue.push_back(FramerEvent::Partial(m));
        Some(msg_end)
    }

    fn step(&mut self, eof: bool, requests: &RequestLog) -> Option<FramerEvent> {
        if let Some(ev) = self.queue.pop_front() {
            return Some(ev);
        }
        if self.state == State::Resync && !self.scan(eof, requests) {
            return None;
        }
        if self.state != State::Trusted {
            return None;
        }
        if let Some(ev) = self.queue.pop_front() {
            return Some(ev);
        }
        self.cut_trusted()
    }

    fn min_size(&self) -> i32 {
        match self.dir {
            Direction::ClientToBroker => MIN_REQUEST_SIZE,
            Direction::BrokerToClient => MIN_RESPONSE_SIZE,
        }
    }

    fn size_sane(&self, size: i32) -> bool {
        size >= self.min_size() && usize::try_from(size).is_ok_and(|s| s <= self.cfg.max_message)
    }

    /// In a trusted stream any size from 0 to the cap is a message, as for Kafka's
    /// own framing: the raw SASL frames that follow a SaslHandshake v0 can be
    /// shorter than any Kafka message (a PLAIN server answers with 0 bytes).
    fn trusted_size_ok(&self, size: i32) -> bool {
        usize::try_from(size).is_ok_and(|s| s <= self.cfg.max_message)
    }

    fn cut_trusted(&mut self) -> Option<FramerEvent> {
        let size = self.size_at(0)?;
        if !self.trusted_size_ok(size) {
            let frame = self.chunks.front().map_or(0, |c| c.frame);
            self.state = State::Resync;
            return Some(FramerEvent::Desync {
                stream_offset: self.head,
                size,
                frame,
            });
        }
        let total = 4 + u64::try_from(size).ok()?;
        if self.avail < total {
            return None;
        }
        self.take(total).map(FramerEvent::Message)
    }

    /// Scan for a boundary; true when one was found (state is then Trusted).
    fn scan(&mut self, eof: bool, requests: &RequestLog) -> bool {
        let mut p = 0u64;
        let found = loop {
            if p >= self.avail {
                break false;
            }
            let v = match self.dir {
                Direction::ClientToBroker => self.check_request(p, eof),
                Direction::BrokerToClient => self.check_response(p, eof, requests),
            };
            match v {
                Verdict::Accept => break true,
                Verdict::NeedMore => break false,
                Verdict::Reject => p += 1,
            }
        };
        if p > 0 {
            if self.skipped == 0 {
                self.skipped_frame = self.chunks.front().map_or(0, |c| c.frame);
            }
            self.skipped += p;
            self.drop_front(p);
        }
        if found {
            self.state = State::Trusted;
            self.resynced = true;
            if self.skipped > 0 {
                let frame = self.chunks.front().map_or(0, |c| c.frame);
                self.queue.push_back(FramerEvent::Resynced {
                    skipped: self.skipped,
                    stream_offset: self.head,
                    frame,
                });
            }
        }
        found
    }

    fn check_request(&self, p: u64, eof: bool) -> Verdict {
        let Some(h) = self.read::<14>(p) else {
            return Verdict::more(eof);
        };
        let Some(size) = request_header_plausible(&h, self.cfg.max_message) else {
            return Verdict::Reject;
        };
        // A non-empty client id must look like text.
        let cid = client_id_len(&h).map_or(0, |n| u64::from(n.min(64)));
        for i in 0..cid {
            match self.read::<1>(p + 14 + i) {
                Some([b]) if (0x20..0x7f).contains(&b) => {}
                Some(_) => return Verdict::Reject,
                None => return Verdict::more(eof),
            }
        }
        let q = p + 4 + u64::from(size);
        if q > self.avail {
            return self.wait_for(p, q, eof);
        }
        // The body must decode: a header inside a record set or an array of structs
        // can pass every check above, a whole request of garbage does not.
        let decodes = match self.decode_requests {
            false => Decodes::Whole,
            true if q - p > self.cfg.resync_wait as u64 => Decodes::No,
            true => self
                .copy_out(p, q - p)
                .map_or(Decodes::No, |m| request_decodes(&m)),
        };
        match decodes {
            Decodes::No => Verdict::Reject,
            Decodes::Whole => match self.read::<14>(q) {
                Some(h2) => {
                    Verdict::of(request_header_plausible(&h2, self.cfg.max_message).is_some())
                }
                // The candidate ends exactly where the data ends: segments end on messages.
                None if self.avail == q || eof => Verdict::Accept,
                None => self.wait_for(p, q + 14, eof),
            },
            Decodes::LeftOver => self.check_request_follower(p, q, eof),
        }
    }

    /// The request after a candidate at `p` whose body decoded with more bytes left
    /// over than it read ([`Decodes::LeftOver`]: the shape of a header found inside a
    /// record set): it must be there, whole, and decode, where a candidate read to its
    /// last byte needs only a plausible header after it.
    fn check_request_follower(&self, p: u64, q: u64, eof: bool) -> Verdict {
        let Some(h2) = self.read::<14>(q) else {
            return self.wait_for(p, q + 14, eof);
        };
        let Some(size2) = request_header_plausible(&h2, self.cfg.max_message) else {
            return Verdict::Reject;
        };
        let end = q + 4 + u64::from(size2);
        if end > self.avail {
            return self.wait_for(p, end, eof);
        }
        Verdict::of(
            self.copy_out(q, end - q)
                .is_some_and(|m| request_decodes(&m) != Decodes::No),
        )
    }

    /// Whether a response starts at buffer offset `p`. Once the connection has shown a
    /// request, a boundary is anchored on the requests: see [`Framer::check_anchored`].
    /// While the client direction carried bytes but no request was framed yet, the scan
    /// waits (within `resync_wait`); on a connection without client bytes, and at the
    /// end of the stream, see [`Framer::check_blind`].
    fn check_response(&self, p: u64, eof: bool, requests: &RequestLog) -> Verdict {
        let Some(h) = self.read::<8>(p) else {
            return Verdict::more(eof);
        };
        let (size, corr) = split8(h);
        if !self.size_sane(size) {
            return Verdict::Reject;
        }
        if requests.requests_seen() {
            self.check_anchored(p, size, corr, eof, requests)
        } else if requests.client_bytes && !eof {
            // The requests have not been framed yet: wait for them.
            self.wait_for(p, self.avail, eof)
        } else {
            self.check_blind(p, size, corr, eof)
        }
    }

    /// A response boundary on a connection that showed requests. The candidate is
    /// accepted when it is anchored (its correlation id is a request's the log holds,
    /// and its body decodes whole with that request's api key and version) and either
    /// its size is no larger than the largest message seen on the connection or the
    /// next boundary confirms it; or, when it is not anchored, when the responses
    /// after it, with consecutive ids, lead to an anchored one within
    /// [`ANCHOR_CHAIN`] responses and no anchored response starts inside that span.
    fn check_anchored(
        &self,
        p: u64,
        size: i32,
        corr: i32,
        eof: bool,
        requests: &RequestLog,
    ) -> Verdict {
        let end = p + 4 + u64::try_from(size).unwrap_or(0);
        match self.anchor(p, size, corr, requests) {
            // A candidate inside a larger response can decode as an answer to a
            // request of the log: the response after it must answer a later one.
            Anchor::Yes if !self.next_in_order(end, corr, requests) => return Verdict::Reject,
            Anchor::Yes if u32::try_from(size).is_ok_and(|s| s <= requests.largest()) => {
                return Verdict::Accept;
            }
            // Larger than anything the connection carried: a following response must
            // confirm it.
            Anchor::Yes => return self.check_follower(p, end, corr, eof, requests),
            Anchor::Whole(need) => return self.wait_for(p, need, eof),
            Anchor::No => {}
        }
        if corr < 0 || size < MIN_GUESSED_RESPONSE_SIZE {
            return Verdict::Reject;
        }
        let (mut at, mut prev) = (end, corr);
        for _ in 0..ANCHOR_CHAIN {
            let Some(h2) = self.read::<8>(at) else {
                return self.wait_for(p, at + 8, eof);
            };
            let (size2, corr2) = split8(h2);
            if !self.size_sane(size2) {
                return Verdict::Reject;
            }
            // Kafka answers a connection's requests in order and clients number them
            // upwards: every id along the chain, the anchor's too, is the next one.
            // (A client that numbers across connections, or an acks=0 Produce between,
            // leaves a larger step: those responses are skipped, not guessed.)
            if i64::from(corr2) - i64::from(prev) != 1 {
                return Verdict::Reject;
            }
            match self.anchor(at, size2, corr2, requests) {
                // A false candidate can end on a real boundary by chance, stepping over
                // real responses: none of those may be anchored (or, not buffered whole
                // yet, may turn out to be).
                Anchor::Yes => {
                    return match self.anchored_between(p + 1, at, requests) {
                        None => Verdict::Accept,
                        Some(Anchor::Whole(need)) => self.wait_for(p, need, eof),
                        Some(_) => Verdict::Reject,
                    };
                }
                Anchor::Whole(need) => return self.wait_for(p, need, eof),
                Anchor::No => {}
            }
            if size2 < MIN_GUESSED_RESPONSE_SIZE {
                return Verdict::Reject;
            }
            prev = corr2;
            at += 4 + u64::try_from(size2).unwrap_or(0);
        }
        Verdict::Reject
    }

    /// False when the response after a candidate ending at buffer offset `end`
    /// with id `corr` is buffered and cannot follow it ([`RequestLog::may_follow`]).
    fn next_in_order(&self, end: u64, corr: i32, requests: &RequestLog) -> bool {
        self.read::<8>(end)
            .is_none_or(|h| requests.may_follow(corr, split8(h).1))
    }

    /// The first response in buffer offsets `from..to` that is anchored or, not
    /// buffered whole yet, may be ([`Anchor::Whole`]). What was searched is remembered
    /// (in stream offsets, for the buffered data and the log's generation), so a scan
    /// looks at each offset once however many candidates ask.
    fn anchored_between(&self, from: u64, to: u64, requests: &RequestLog) -> Option<Anchor> {
        let key = (self.head + self.avail, requests.generation);
        let (f0, t0) = (self.head + from, self.head + to);
        let (mut kept, mut lo) = (f0, f0);
        if let Some(m) = self
            .between_memo
            .get()
            .filter(|m| m.key == key && m.from <= f0)
        {
            match m.found {
                Some(x) if x >= f0 && x >= t0 => return None,
                Some(x) if x >= f0 => return self.anchor_at(x - self.head, requests),
                None if m.to >= t0 => return None,
                None if m.to > f0 => (kept, lo) = (m.from, m.to),
                _ => {}
            }
        }
        let found = (lo..t0).find(|&q| self.anchor_at(q - self.head, requests).is_some());
        self.between_memo.set(Some(Searched {
            key,
            from: kept,
            to: found.unwrap_or(t0),
            found,
        }));
        found.and_then(|q| self.anchor_at(q - self.head, requests))
    }

    /// `Anchor::Yes` or `Anchor::Whole` for a response at buffer offset `p`, else `None`.
    fn anchor_at(&self, p: u64, requests: &RequestLog) -> Option<Anchor> {
        let (size, corr) = split8(self.read::<8>(p)?);
        if !self.size_sane(size) || requests.lookup(corr).is_none() {
            return None;
        }
        Some(self.anchor(p, size, corr, requests)).filter(|a| *a != Anchor::No)
    }

    /// The boundary after an anchored candidate of implausible size: a sane size (at
    /// least 6 unless the log holds its id) and an id 1 to [`CORR_WINDOW`] above the
    /// candidate's; or, at the end
    /// of the stream (or before a gap), the data ending exactly where the candidate ends.
    fn check_follower(
        &self,
        p: u64,
        at: u64,
        corr: i32,
        eof: bool,
        requests: &RequestLog,
    ) -> Verdict {
        let Some(h2) = self.read::<8>(at) else {
            if eof && self.avail == at {
                // The stream ends exactly where the candidate ends: nothing follows it,
                // and the end of the data confirms its length.
                return Verdict::Accept;
            }
            return self.wait_for(p, at + 8, eof);
        };
        let (size2, corr2) = split8(h2);
        let step = i64::from(corr2) - i64::from(corr);
        let known = requests.lookup(corr2).is_some();
        let sized = known || size2 >= MIN_GUESSED_RESPONSE_SIZE;
        Verdict::of(self.size_sane(size2) && sized && (1..=CORR_WINDOW).contains(&step))
    }

    /// `NeedMore` while the bytes up to buffer offset `need` may still come and
    /// confirming a candidate at `p` holds no more than `resync_wait`; else `Reject`.
    fn wait_for(&self, p: u64, need: u64, eof: bool) -> Verdict {
        if need.saturating_sub(p) > self.cfg.resync_wait as u64 {
            Verdict::Reject
        } else {
            Verdict::more(eof)
        }
    }

    /// Whether the response at buffer offset `p` is anchored: its id is a request's
    /// the log holds and its body, buffered whole, decodes with that request's api key
    /// and version (ApiVersions also at v0, the version a broker answers an
    /// unsupported one with). The decode is the engine's summary scan: bounded by the
    /// candidate's bytes, at most `resync_wait`.
    fn anchor(&self, p: u64, size: i32, corr: i32, requests: &RequestLog) -> Anchor {
        let Some(req) = requests.lookup(corr) else {
            return Anchor::No;
        };
        let len = 4 + u64::try_from(size).unwrap_or(0);
        if len > self.cfg.resync_wait as u64 {
            return Anchor::No;
        }
        if p + len > self.avail {
            return Anchor::Whole(p + len);
        }
        let at = self.head + p;
        let ok = match self.anchor_memo.get() {
            Some((o, r, ok)) if o == at && r == req => ok,
            _ => {
                let ok = (self.copy_out(p, len)).is_some_and(|m| response_decodes(&m, req));
                self.anchor_memo.set(Some((at, req, ok)));
                ok
            }
        };
        if ok {
            Anchor::Yes
        } else {
            Anchor::No
        }
    }

    /// `len` buffered bytes from buffer offset `p`, copied out (all buffered: the
    /// allocation is backed by data).
    fn copy_out(&self, p: u64, len: u64) -> Option<Vec<u8>> {
        if p.checked_add(len)? > self.avail {
            return None;
        }
        let mut out = vec![0; usize::try_from(len).ok()?];
        self.copy_into(p, &mut out).map(|()| out)
    }

    /// Fills `out` with the bytes from buffer offset `p`, if they are buffered
    /// (inlined: [`Framer::read`]'s fixed lengths, the size at every message's
    /// start among them, are copied as such).
    #[inline(always)]
    fn copy_into(&self, p: u64, out: &mut [u8]) -> Option<()> {
        let want = out.len();
        if p.checked_add(want as u64)? > self.avail {
            return None;
        }
        let (mut filled, mut base) = (0usize, 0u64);
        for c in &self.chunks {
            if filled == want {
                break;
            }
            let clen = c.data.len() as u64;
            if base + clen > p + filled as u64 {
                let from = usize::try_from(p + filled as u64 - base).ok()?;
                let src = c.data.get(from..)?;
                let n = src.len().min(want - filled);
                out.get_mut(filled..filled + n)?
                    .copy_from_slice(src.get(..n)?);
                filled += n;
            }
            base += clen;
        }
        (filled == want).then_some(())
    }

    /// A response boundary on a connection that has shown no request (a capture of
    /// the response direction alone, or one whose requests have not come yet): the
    /// boundaries after it form a chain of [`RESPONSE_CHAIN`] responses whose sizes
    /// are sane and whose ids increase, or the chain ends exactly where the data ends.
    fn check_blind(&self, p: u64, size: i32, corr: i32, eof: bool) -> Verdict {
        if size < MIN_GUESSED_RESPONSE_SIZE || corr < 0 {
            return Verdict::Reject;
        }
        let plausible = |size: i32| self.size_sane(size) && size >= MIN_GUESSED_RESPONSE_SIZE;
        let end = p + 4 + u64::try_from(size).unwrap_or(0);
        // Walk the chain of boundaries after the candidate.
        let (mut at, mut prev, mut followers) = (end, corr, 0usize);
        while followers < RESPONSE_CHAIN {
            let Some(h2) = self.read::<8>(at) else {
                break;
            };
            let (size2, corr2) = split8(h2);
            let next = i64::from(corr2) - i64::from(prev);
            if !plausible(size2) || !(1..=CORR_WINDOW).contains(&next) {
                return Verdict::Reject;
            }
            followers += 1;
            prev = corr2;
            at += 4 + u64::try_from(size2).unwrap_or(0);
        }
        if followers >= RESPONSE_CHAIN {
            return Verdict::Accept;
        }
        if self.avail == at && (followers > 0 || (eof && p == 0 && self.skipped == 0)) {
            // The chain ends exactly where the data ends: segments end on messages. A
            // lone candidate proves nothing that way (any message ending in an int32
            // length-prefixed field has one) unless the data also starts with it: a
            // last, lone response in a stream seen from its middle.
            return Verdict::Accept;
        }
        // A chain that runs past the end proves too little, and a false boundary before
        // a gap would skip real messages after it; confirming past `resync_wait` would
        // hold too much, and a huge size is more often noise than a real response.
        self.wait_for(p, at + 8, eof)
    }

    fn size_at(&self, p: u64) -> Option<i32> {
        self.read::<4>(p).map(i32::from_be_bytes)
    }

    /// `N` bytes at buffer offset `p`, if buffered.
    fn read<const N: usize>(&self, p: u64) -> Option<[u8; N]> {
        let mut out = [0u8; N];
        self.copy_into(p, &mut out).map(|()| out)
    }

    fn drop_front(&mut self, mut n: u64) {
        n = n.min(self.avail);
        self.head += n;
        self.avail -= n;
        while n > 0 {
            let Some(c) = self.chunks.front_mut() else {
                break;
            };
            let clen = c.data.len() as u64;
            if clen <= n {
                n -= clen;
                self.chunks.pop_front();
            } else {
                let k = usize::try_from(n).unwrap_or(usize::MAX).min(c.data.len());
                // Moved past in place: no handle made and dropped (each an
                // atomic count shared with the other threads' slices).
                bytes::Buf::advance(&mut c.data, k);
                c.origin = c.origin.advance(k as u64);
                n = 0;
            }
        }
    }

    fn discard_all(&mut self, frame: u64) {
        if self.avail > 0 {
            if self.skipped == 0 {
                self.skipped_frame = self.chunks.front().map_or(frame, |c| c.frame);
            }
            self.skipped += self.avail;
        }
    }

    /// Remove the first `n` buffered bytes as a message.
    fn take(&mut self, n: u64) -> Option<RawMessage> {
        if n == 0 || n > self.avail {
            return None;
        }
        let first = self.chunks.front_mut()?;
        let (first_frame, first_ts) = (first.frame, first.ts);
        let stream_offset = self.head;
        let len = usize::try_from(n).ok()?;
        // Empty while every byte is the first frame's.
        let mut provenance = Vec::new();
        let mut file_pieces = Vec::new();
        let mut tls_records = Vec::new();
        let (bytes, last_frame, last_ts) = if first.data.len() >= len {
            match (first.origin, u32::try_from(len)) {
                (Origin::File(f), Ok(n)) => file_pieces.push((f, n)),
                (Origin::Record(r), _) => tls_records.push((0, r)),
                _ => {}
            }
            // Cut off the front chunk in place (what `drop_front` would do
            // after a slice): one new handle, not a clone and a slice.
            let bytes = first.data.split_to(len);
            first.origin = first.origin.advance(len as u64);
            if first.data.is_empty() {
                self.chunks.pop_front();
            }
            self.head += n;
            self.avail -= n;
            (bytes, first_frame, first_ts)
        } else {
            let mut located = true;
            // Spans chunks: all `len` bytes are buffered, so this allocation is backed by data.
            let mut buf = BytesMut::with_capacity(len);
            let mut last = (first_frame, first_ts);
            for c in &self.chunks {
                let room = len - buf.len();
                if room == 0 {
                    break;
                }
                if !buf.is_empty() && last.0 != c.frame {
                    if provenance.is_empty() {
                        provenance.push((0, first_frame));
                    }
                    provenance.push((u32::try_from(buf.len()).unwrap_or(u32::MAX), c.frame));
                }
                if let Origin::Record(r) = c.origin {
                    if tls_records.last().is_none_or(|&(_, l)| l != r) {
                        let at = u32::try_from(buf.len()).unwrap_or(u32::MAX);
                        tls_records.push((at, r));
                    }
                }
                let part = c.data.get(..room.min(c.data.len()))?;
                buf.extend_from_slice(part);
                last = (c.frame, c.ts);
                match (c.origin.file(), u32::try_from(part.len())) {
                    (Some(f), Ok(n)) if located => match file_pieces.last_mut() {
                        // Contiguous in the file (one frame cut in two chunks): one piece.
                        Some((lf, ln)) if lf.checked_add(u64::from(*ln)) == Some(f) => {
                            *ln = ln.saturating_add(n);
                        }
                        _ => file_pieces.push((f, n)),
                    },
                    _ => located = false,
                }
            }
            if !located {
                file_pieces = Vec::new();
            }
            self.drop_front(n);
            (buf.freeze(), last.0, last.1)
        };
        let m = RawMessage {
            stream: self.stream,
            dir: self.dir,
            bytes,
            stream_offset,
            first_frame,
            last_frame,
            first_ts,
            last_ts,
            provenance,
            resynced: std::mem::take(&mut self.resynced),
            skipped_before: std::mem::take(&mut self.skipped),
            missing: 0,
            file_pieces,
            tls_records,
            twin: None,
        };
        Some(m)
    }
}

/// How a resync candidate's request decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decodes {
    /// With an error.
    No,
    /// To its last byte, or with a few bytes after its body (brokers ignore
    /// them: librdkafka sends three after a Metadata v12 request).
    Whole,
    /// Without an error, but more bytes left after its body than the message
    /// took to reach them: a short body at the head of a long size.
    LeftOver,
}

/// How the request `msg` (size prefix included) decodes.
fn request_decodes(msg: &[u8]) -> Decodes {
    let opts = probe_options();
    if summarize_request(msg, &opts).is_some() {
        return Decodes::Whole;
    }
    let d = decode_request(msg, &opts);
    match (&d.error, &d.warning) {
        (Some(_), _) => Decodes::No,
        (None, Some(DecodeWarning::Trailing { offset, len, .. })) if len > offset => {
            Decodes::LeftOver
        }
        (None, _) => Decodes::Whole,
    }
}

/// How a resync candidate is decoded: without its records and topics.
fn probe_options() -> DecodeOptions {
    DecodeOptions {
        records: false,
        summary_topics: false,
        ..DecodeOptions::default()
    }
}

/// Whether `msg` (size prefix included) decodes whole, with nothing left over, as the
/// response to `req` (ApiVersions also as v0).
fn response_decodes(msg: &[u8], req: SeenRequest) -> bool {
    let opts = probe_options();
    let clean = |version: i16| {
        summarize_response(msg, req.api_key, version, &opts).is_some()
            // The summary declines bodies that embed the consumer protocol; the tree reads them.
            || (EMBEDDING_APIS.contains(&schema::ApiKey(req.api_key))
                && decode_response(msg, req.api_key, version, &opts).clean())
    };
    clean(req.api_version)
        || (schema::ApiKey(req.api_key) == schema::ApiKey::API_VERSIONS
            && req.api_version != 0
            && clean(0))
}

fn be_i32(b: Option<&[u8]>) -> Option<i32> {
    match b {
        Some(&[a, b, c, d]) => Some(i32::from_be_bytes([a, b, c, d])),
        _ => None,
    }
}

fn be_i16(b: Option<&[u8]>) -> Option<i16> {
    match b {
        Some(&[a, b]) => Some(i16::from_be_bytes([a, b])),
        _ => None,
    }
}

fn split8(h: [u8; 8]) -> (i32, i32) {
    let [a, b, c, d, e, f, g, i] = h;
    (
        i32::from_be_bytes([a, b, c, d]),
        i32::from_be_bytes([e, f, g, i]),
    )
}

/// Length of a non-empty client id in a request header prefix, when the header has one.
fn client_id_len(h: &[u8; 14]) -> Option<u16> {
    let [_, _, _, _, k0, k1, v0, v1, _, _, _, _, l0, l1] = *h;
    let (key, ver) = (i16::from_be_bytes([k0, k1]), i16::from_be_bytes([v0, v1]));
    if schema::ApiKey(key) == schema::ApiKey::CONTROLLED_SHUTDOWN && ver == 0 {
        return None; // ControlledShutdown v0: request header v0, no client id.
    }
    u16::try_from(i16::from_be_bytes([l0, l1]))
        .ok()
        .filter(|&n| n > 0)
}

/// Whether 14 bytes look like the start of a Kafka request: size (4), api key (2),
/// api version (2), correlation id (4), client id length (2). Returns the size when
/// plausible: `8 <= size <= max_message`, the key is known with the version in its
/// range, and the client id length is -1 or fits in the message.
pub fn request_header_plausible(h: &[u8; 14], max_message: usize) -> Option<u32> {
    let [s0, s1, s2, s3, k0, k1, v0, v1, _, _, _, _, l0, l1] = *h;
    let size = i32::from_be_bytes([s0, s1, s2, s3]);
    let key = i16::from_be_bytes([k0, k1]);
    let ver = i16::from_be_bytes([v0, v1]);
    let cid = i16::from_be_bytes([l0, l1]);
    let usize_ = usize::try_from(size).ok()?;
    if size < 8 || usize_ > max_message {
        return None;
    }
    if !schema::known_versions(key)?.contains(ver) {
        return None;
    }
    if schema::ApiKey(key) == schema::ApiKey::CONTROLLED_SHUTDOWN && ver == 0 {
        return u32::try_from(size).ok();
    }
    if size < 10 || !(cid == -1 || (0..=size - 10).contains(&i32::from(cid))) {
        return None;
    }
    u32::try_from(size).ok()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// A Metadata v1 request: size, key 3, version 1, correlation id, client id "cli", body.
    fn request(corr: i32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&3i16.to_be_bytes()); // api key: Metadata
        m.extend_from_slice(&1i16.to_be_bytes()); // api version 1
        m.extend_from_slice(&corr.to_be_bytes()); // correlation id
        m.extend_from_slice(&3i16.to_be_bytes()); // client id length 3
        m.extend_from_slice(b"cli"); // client id
        m.extend_from_slice(body);
        let mut out = (m.len() as i32).to_be_bytes().to_vec(); // size prefix
        out.extend(m);
        out
    }

    fn response(corr: i32, body: &[u8]) -> Vec<u8> {
        let mut out = ((4 + body.len()) as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&corr.to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn drain(f: &mut Framer, pending: &RequestLog) -> Vec<FramerEvent> {
        let mut v = Vec::new();
        while let Some(e) = f.next_event(pending) {
            v.push(e);
        }
        v
    }

    fn messages(ev: &[FramerEvent]) -> Vec<&RawMessage> {
        ev.iter()
            .filter_map(|e| match e {
                FramerEvent::Message(m) => Some(m),
                _ => None,
            })
            .collect()
    }

    const T: Timestamp = Timestamp { secs: 1, nanos: 0 };

    #[test]
    fn byte_by_byte_and_zero_copy() {
        let stream: Vec<u8> = [request(1, b"xy"), request(2, b"")].concat();
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        let mut ev = Vec::new();
        for (i, b) in stream.iter().enumerate() {
            f.push(
                Bytes::copy_from_slice(&[*b]),
                i as u64,
                10 + i as u64,
                T,
                Origin::Unknown,
            );
            ev.extend(drain(&mut f, &RequestLog::default()));
        }
        let ms = messages(&ev);
        assert_eq!(ms.len(), 2);
        assert_eq!(&ms[0].bytes[..], &request(1, b"xy")[..]);
        assert_eq!(ms[0].provenance.len(), ms[0].bytes.len());
        assert_eq!(ms[0].first_frame, 10);
        assert_eq!(ms[1].frame_of(0), 10 + 19);
        assert_eq!(ms[1].correlation_id(), Some(2));
        assert_eq!(ms[1].request_key_version(), Some((3, 1)));
        // One chunk holding one message: a slice of the chunk, not a copy.
        let one = Bytes::from(request(7, b"abc"));
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(one.clone(), 0, 1, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        assert_eq!(messages(&ev)[0].bytes.as_ptr(), one.as_ptr());
        // One carrying frame: no provenance kept, every byte the first frame's.
        assert!(messages(&ev)[0].provenance.is_empty());
        assert_eq!(messages(&ev)[0].frame_of(5), 1);
        // One frame's bytes in two chunks: still one carrying frame.
        let two = request(8, b"defg");
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&two[..6]), 0, 4, T, Origin::Unknown);
        f.push(Bytes::copy_from_slice(&two[6..]), 6, 4, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        let ms = messages(&ev);
        assert_eq!(&ms[0].bytes[..], &two[..]);
        assert!(ms[0].provenance.is_empty());
        assert_eq!(ms[0].frame_of(9), 4);
    }

    /// Decrypted bytes name the TLS records they came from: one entry per
    /// record a message starts in or runs into (two pieces of one record,
    /// carried by two frames, are one entry), none in the capture file.
    #[test]
    fn decrypted_messages_name_their_tls_records() {
        let (a, b) = (request(1, b"0123456789"), request(2, b"ab"));
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        // Record 4 carries `a`'s start (in frames 7 and 8), record 6 the rest of
        // `a` and all of `b`.
        let (x, y) = (5, 9);
        f.push(Bytes::copy_from_slice(&a[..x]), 0, 7, T, Origin::Record(4));
        f.push(
            Bytes::copy_from_slice(&a[x..y]),
            x as u64,
            8,
            T,
            Origin::Record(4),
        );
        let rest = [&a[y..], &b[..]].concat();
        f.push(Bytes::from(rest), y as u64, 8, T, Origin::Record(6));
        let ev = drain(&mut f, &RequestLog::default());
        let ms = messages(&ev);
        assert_eq!(ms.len(), 2);
        assert_eq!(ms[0].tls_records, vec![(0, 4), (y as u32, 6)]);
        assert_eq!(ms[0].provenance, vec![(0, 7), (x as u32, 8)]);
        assert!(ms[0].file_pieces.is_empty());
        assert_eq!(ms[1].tls_records, vec![(0, 6)]);
        // Bytes of the capture file name no record.
        f.push(
            Bytes::from(b.clone()),
            (a.len() + b.len()) as u64,
            9,
            T,
            Origin::File(40),
        );
        let ev = drain(&mut f, &RequestLog::default());
        assert!(messages(&ev)[0].tls_records.is_empty());
    }

    /// Messages cut from the front of one chunk are slices of it at their
    /// offsets, each with its own file piece; the rest of the chunk (a
    /// message's first part) stays buffered with its file offset moved on, and
    /// the message it starts is whole once its last bytes come.
    #[test]
    fn messages_cut_from_one_chunk_in_place() {
        let (a, b, c) = (request(1, b"0123"), request(2, b""), request(3, b"zz"));
        let cut = c.len() - 3;
        let chunk = Bytes::from([&a[..], &b[..], &c[..cut]].concat());
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(chunk.clone(), 0, 1, T, Origin::File(1000));
        let ev = drain(&mut f, &RequestLog::default());
        let ms = messages(&ev);
        assert_eq!(ms.len(), 2);
        assert_eq!(ms[0].bytes.as_ptr(), chunk.as_ptr());
        assert_eq!(&ms[0].bytes[..], &a[..]);
        assert_eq!(ms[0].file_pieces, vec![(1000, a.len() as u32)]);
        assert_eq!(ms[1].bytes.as_ptr(), chunk[a.len()..].as_ptr());
        assert_eq!(&ms[1].bytes[..], &b[..]);
        assert_eq!(
            ms[1].file_pieces,
            vec![(1000 + a.len() as u64, b.len() as u32)]
        );
        assert_eq!(ms[1].stream_offset, a.len() as u64);
        // The third message's last bytes: at another place in the file.
        f.push(
            Bytes::copy_from_slice(&c[cut..]),
            chunk.len() as u64,
            2,
            T,
            Origin::File(5000),
        );
        let ev = drain(&mut f, &RequestLog::default());
        let ms = messages(&ev);
        assert_eq!(ms.len(), 1);
        assert_eq!(&ms[0].bytes[..], &c[..]);
        assert_eq!(ms[0].stream_offset, (a.len() + b.len()) as u64);
        assert_eq!(ms[0].provenance, vec![(0, 1), (cut as u32, 2)]);
        assert_eq!(
            ms[0].file_pieces,
            vec![(1000 + (a.len() + b.len()) as u64, cut as u32), (5000, 3)]
        );
        assert_eq!(f.buffered(), 0);
    }

    /// Pieces follow the chunks: a message inside one chunk is one piece; a message
    /// over chunks gets one piece per chunk, merged when they touch in the file;
    /// bytes without a file offset leave the message without pieces.
    #[test]
    fn file_pieces_locate_every_byte() {
        // The "file": three requests laid out with junk between the chunks.
        let (a, b, c) = (
            request(1, b"0123456789"),
            request(2, b""),
            request(3, b"zz"),
        );
        let stream: Vec<u8> = [&a[..], &b[..], &c[..]].concat();
        let mut file = vec![0xeeu8; 1000];
        // Chunks: stream[0..5] at 100, stream[5..30] at 200 (two touching halves
        // from one frame: 200..210 and 210..225), stream[30..] at 500.
        let cuts = [(0usize, 5usize, 100u64), (5, 15, 200), (15, 30, 210)];
        for &(s0, s1, at) in &cuts {
            file[at as usize..at as usize + (s1 - s0)].copy_from_slice(&stream[s0..s1]);
        }
        file[500..500 + stream.len() - 30].copy_from_slice(&stream[30..]);
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        for &(s0, s1, at) in &cuts {
            let d = Bytes::copy_from_slice(&stream[s0..s1]);
            f.push(d, s0 as u64, 1 + s0 as u64, T, Origin::File(at));
        }
        let d = Bytes::copy_from_slice(&stream[30..]);
        f.push(d, 30, 40, T, Origin::File(500));
        let ev = drain(&mut f, &RequestLog::default());
        let ms = messages(&ev);
        assert_eq!(ms.len(), 3);
        assert_eq!((a.len(), b.len(), c.len()), (27, 17, 19));
        // a = stream[0..27]: 100+5, then 200+22 (the two touching chunks merged).
        assert_eq!(ms[0].file_pieces, vec![(100, 5), (200, 22)]);
        // b = stream[27..44]: 222+3, then 500+14.
        assert_eq!(ms[1].file_pieces, vec![(222, 3), (500, 14)]);
        // c inside the last chunk: one piece, cut from its middle.
        assert_eq!(ms[2].file_pieces, vec![(514, 19)]);
        for m in &ms {
            let back = RawMessage::reread(&m.file_pieces, |off, buf: &mut [u8]| {
                buf.copy_from_slice(&file[off as usize..off as usize + buf.len()]);
                Ok::<(), ()>(())
            });
            assert_eq!(back.as_deref(), Ok(&m.bytes[..]));
        }
        // A duplicate prefix is trimmed and the offset moves with it.
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&a[..10]), 0, 1, T, Origin::File(100));
        f.push(Bytes::copy_from_slice(&a[4..]), 4, 2, T, Origin::File(300));
        let ev = drain(&mut f, &RequestLog::default());
        assert_eq!(messages(&ev)[0].file_pieces, vec![(100, 10), (306, 17)]);
        // One chunk without an offset: no pieces at all.
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&a[..10]), 0, 1, T, Origin::File(100));
        f.push(Bytes::copy_from_slice(&a[10..]), 10, 2, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        assert!(messages(&ev)[0].file_pieces.is_empty());
    }

    #[test]
    fn resync_requests_mid_stream() {
        let a = request(1, b"0123456789");
        let all_topics = (-1i32).to_be_bytes(); // Metadata v1 body: a null topic array
        let stream: Vec<u8> = [
            &a[5..],
            &request(2, &all_topics)[..],
            &request(3, &all_topics)[..],
        ]
        .concat();
        let mut f = Framer::new(4, Direction::ClientToBroker, false, FramerConfig::default());
        f.push(Bytes::from(stream), 100, 1, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        assert!(
            matches!(ev[0], FramerEvent::Resynced { skipped, stream_offset: 122, .. } if skipped == a.len() as u64 - 5),
            "{ev:?}"
        );
        let ms = messages(&ev);
        assert_eq!(ms.len(), 2);
        assert!(ms[0].resynced && !ms[1].resynced);
        assert_eq!(ms[0].skipped_before, a.len() as u64 - 5);
        assert_eq!(ms[0].stream_offset, 100 + a.len() as u64 - 5);
    }

    /// A mid-stream start: the messages of `stream` that framed, to its end.
    fn framed_to_the_end(stream: Vec<u8>) -> Vec<(u64, usize)> {
        let mut f = Framer::new(4, Direction::ClientToBroker, false, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, Origin::Unknown);
        let requests = RequestLog::default();
        let mut ev = drain(&mut f, &requests);
        f.finish(&requests, &mut ev);
        (ev.iter())
            .filter_map(|e| match e {
                FramerEvent::Message(m) | FramerEvent::Partial(m) => {
                    Some((m.stream_offset, m.bytes.len()))
                }
                _ => None,
            })
            .collect()
    }

    /// A header found inside a record set decodes with most of its size left
    /// over (a short body at the head of a long size): taken at a mid-stream
    /// start only when the message after it is whole and decodes, not on a
    /// plausible header alone. A real request with a few bytes after its body
    /// (librdkafka's Metadata v12) needs only the header after it.
    #[test]
    fn a_short_body_in_a_long_size_needs_a_whole_request_after_it() {
        let null_topics = (-1i32).to_be_bytes();
        let mut fake = request(7, &null_topics);
        fake.extend_from_slice(&[0u8; 80]); // 80 bytes left over, 21 read
        let len = (fake.len() - 4) as i32;
        fake[..4].copy_from_slice(&len.to_be_bytes());
        let mut cut_follower = request(8, &null_topics);
        cut_follower.extend_from_slice(&[0u8; 1000]);
        let len = (cut_follower.len() - 4) as i32;
        cut_follower[..4].copy_from_slice(&len.to_be_bytes());
        cut_follower.truncate(40);
        // Its follower's header alone, the stream ending inside it: nothing framed.
        let stream = [&[0xaa, 0xbb][..], &fake, &cut_follower].concat();
        assert_eq!(framed_to_the_end(stream), vec![]);
        // Followed by a whole request that decodes: both framed.
        let real = request(8, &null_topics);
        let stream = [&[0xaa, 0xbb][..], &fake, &real].concat();
        let want = vec![(2, fake.len()), (2 + fake.len() as u64, real.len())];
        assert_eq!(framed_to_the_end(stream), want);
        // A few bytes over: the header after it is enough, as before.
        let mut few = request(7, &null_topics);
        few.extend_from_slice(&[0u8; 3]);
        let len = (few.len() - 4) as i32;
        few[..4].copy_from_slice(&len.to_be_bytes());
        let stream = [&[0xaa, 0xbb][..], &few, &cut_follower].concat();
        let got = framed_to_the_end(stream);
        assert_eq!(got.first(), Some(&(2, few.len())), "{got:?}");
    }

    /// A log holding requests `corrs` of `(api key, version)`, after messages of up
    /// to `largest` bytes.
    fn log(key: i16, version: i16, corrs: &[i32], largest: u32) -> RequestLog {
        let mut l = RequestLog::new(16);
        for &correlation_id in corrs {
            l.request(SeenRequest {
                correlation_id,
                api_key: key,
                api_version: version,
            });
        }
        l.size(largest);
        l
    }

    const HEARTBEAT: i16 = 12;
    const API_VERSIONS: i16 = 18;

    /// An ApiVersions v0 response body: ErrorCode 0, one api (key 0, versions 0-3).
    const API_VERSIONS_V0: [u8; 12] = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3];

    #[test]
    fn a_response_may_follow_only_one_to_a_later_pending_request() {
        let mut l = RequestLog::new(16);
        let req = |c| SeenRequest {
            correlation_id: c,
            api_key: HEARTBEAT,
            api_version: 0,
        };
        for c in [1, 2, 3, 5] {
            l.request(req(c));
        }
        // After 2: 3 or 5 (4 may have been an acks=0 Produce), nothing else.
        assert!(l.may_follow(2, 3) && l.may_follow(2, 5));
        assert!(!l.may_follow(2, 4) && !l.may_follow(2, 1) && !l.may_follow(2, 3072));
        // Nothing known after the last pending one, or about an id not pending.
        assert!(l.may_follow(5, 3072) && l.may_follow(9, 1));
        l.response(3);
        assert!(!l.may_follow(2, 3) && l.may_follow(2, 5));
    }

    #[test]
    fn resync_responses_anchored_on_requests() {
        // The tail of a response, then a HeartbeatResponse v0 (ErrorCode 0) to request 42.
        let stream: Vec<u8> = [&response(41, &[0; 30])[9..], &response(42, &[0, 0])[..]].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, Origin::Unknown);
        let ev = drain(&mut f, &log(HEARTBEAT, 0, &[42], 100));
        let ms = messages(&ev);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].correlation_id(), Some(42));
        assert_eq!(ms[0].skipped_before, 38 - 9);
    }

    #[test]
    fn a_known_id_whose_body_does_not_decode_is_not_an_anchor() {
        let mut junk = Vec::new();
        junk.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 7]); // "size 8, id 7": a known id
        junk.extend_from_slice(&[0xff; 4]); // a Heartbeat body with 2 bytes too many
        let real = response(7, &[0, 0]); // HeartbeatResponse v0 to request 7
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(
            Bytes::from([&junk[..], &real[..]].concat()),
            0,
            1,
            T,
            Origin::Unknown,
        );
        // Offset 1 reads "size 2048, id 2047": the scan waits for its follower until
        // the stream ends.
        let requests = log(HEARTBEAT, 0, &[7], 100);
        let mut ev = drain(&mut f, &requests);
        f.finish(&requests, &mut ev);
        assert_eq!(ids(&ev), [(12, 7)]);
        assert_eq!(messages(&ev)[0].skipped_before, 12);
    }

    #[test]
    fn a_size_larger_than_any_seen_waits_for_a_follower() {
        let big = response(7, &API_VERSIONS_V0); // size 16, larger than the 8 seen
        let requests = log(API_VERSIONS, 0, &[7], 8);
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(big.clone()), 0, 1, T, Origin::Unknown);
        assert!(drain(&mut f, &requests).is_empty());
        // The next response (id 8) confirms it.
        f.push(Bytes::from(response(8, &[0, 0])), 20, 2, T, Origin::Unknown);
        assert_eq!(ids(&drain(&mut f, &requests)), [(0, 7), (20, 8)]);
        // Nothing after it: only the end of the stream, exactly at its end, confirms it.
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(big), 0, 1, T, Origin::Unknown);
        assert!(drain(&mut f, &requests).is_empty());
        let mut ev = Vec::new();
        f.finish(&requests, &mut ev);
        assert_eq!(ids(&ev), [(0, 7)]);
    }

    #[test]
    fn a_response_whose_request_was_not_seen_is_confirmed_by_the_next_anchored_one() {
        let tail = [0xaa; 5];
        let r7 = response(7, &[3; 10]); // request 7 was not seen
        let r8 = response(8, &[0, 0]); // HeartbeatResponse v0 to request 8
        let stream = [&tail[..], &r7[..], &r8[..]].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, Origin::Unknown);
        let ev = drain(&mut f, &log(HEARTBEAT, 0, &[8], 100));
        assert_eq!(ids(&ev), [(5, 7), (23, 8)]);
        // A step in the ids (7, then 9) confirms nothing: r7 is skipped.
        let r9 = response(9, &[0, 0]);
        let stream = [&tail[..], &r7[..], &r9[..]].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, Origin::Unknown);
        let requests = log(HEARTBEAT, 0, &[9], 100);
        let mut ev = drain(&mut f, &requests);
        f.finish(&requests, &mut ev);
        assert_eq!(ids(&ev), [(23, 9)]);
    }

    #[test]
    fn responses_wait_for_requests_the_client_direction_is_carrying() {
        let stream: Vec<u8> = [
            response(10, &[0; 9]),
            response(11, &[0; 9]),
            response(12, &[0; 9]),
        ]
        .concat();
        let mut requests = RequestLog::new(16);
        requests.client_bytes();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, Origin::Unknown);
        // A chain would do without requests; but requests are coming: wait for them.
        assert!(drain(&mut f, &requests).is_empty());
        let mut ev = Vec::new();
        f.finish(&requests, &mut ev);
        assert_eq!(ids(&ev), [(0, 10), (17, 11), (34, 12)]);
    }

    #[test]
    fn gap_inside_known_message_skips_exactly() {
        let a = request(1, &[b'a'; 40]);
        let b = request(2, b"b");
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&a[..20]), 0, 1, T, Origin::Unknown);
        assert!(drain(&mut f, &RequestLog::default()).is_empty());
        f.gap(20, 10, 2, &RequestLog::default());
        f.push(Bytes::copy_from_slice(&a[30..]), 30, 2, T, Origin::Unknown);
        f.push(
            Bytes::from(b.clone()),
            a.len() as u64,
            3,
            T,
            Origin::Unknown,
        );
        let ev = drain(&mut f, &RequestLog::default());
        match &ev[0] {
            FramerEvent::Partial(m) => {
                assert_eq!(m.bytes.len(), 20);
                assert_eq!(m.missing, a.len() as u64 - 20);
            }
            e => panic!("{e:?}"),
        }
        let ms = messages(&ev);
        assert_eq!(ms.len(), 1);
        assert_eq!(&ms[0].bytes[..], &b[..]);
        assert!(!ms[0].resynced);
    }

    #[test]
    fn insane_size_desyncs_and_partial_prefix_waits() {
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::from_static(&[0x80, 0]), 0, 1, T, Origin::Unknown);
        assert!(drain(&mut f, &RequestLog::default()).is_empty()); // a partial prefix is "need more"
        f.push(Bytes::from_static(&[0, 0, 0, 3]), 2, 2, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        assert_eq!(
            ev,
            vec![FramerEvent::Desync {
                stream_offset: 0,
                size: i32::MIN,
                frame: 1
            }]
        );
        assert_eq!(f.state, State::Resync);
        let mut out = Vec::new();
        f.finish(&RequestLog::default(), &mut out);
        assert_eq!(out, vec![FramerEvent::Discarded { bytes: 6, frame: 1 }]);
    }

    #[test]
    fn huge_size_does_not_allocate() {
        let cfg = FramerConfig {
            max_message: 1 << 20,
            ..FramerConfig::default()
        };
        let mut f = Framer::new(0, Direction::BrokerToClient, true, cfg);
        // Claims 1 MiB; only 8 bytes exist.
        f.push(
            Bytes::from_static(&[0, 0x10, 0, 0, 0, 0, 0, 1]),
            0,
            1,
            T,
            Origin::Unknown,
        );
        assert!(drain(&mut f, &RequestLog::default()).is_empty());
        assert_eq!(f.buffered(), 8);
        let mut out = Vec::new();
        f.finish(&RequestLog::default(), &mut out);
        assert!(matches!(&out[0], FramerEvent::Partial(m) if m.missing == (1 << 20) + 4 - 8));
    }

    /// `(stream offset, correlation id)` of the complete messages.
    fn ids(ev: &[FramerEvent]) -> Vec<(u64, i32)> {
        messages(ev)
            .iter()
            .map(|m| (m.stream_offset, m.correlation_id().unwrap()))
            .collect()
    }

    fn no_desync(ev: &[FramerEvent]) -> bool {
        !ev.iter().any(|e| matches!(e, FramerEvent::Desync { .. }))
    }

    /// The last 44 bytes of a Fetch v16 response (one partition), as a capture that
    /// starts inside it sees them.
    fn fetch_tail() -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(&[0xaa; 8]); // end of the previous fields
        t.extend_from_slice(&4i64.to_be_bytes()); // HighWatermark 4
        t.extend_from_slice(&4i64.to_be_bytes()); // LastStableOffset 4
        t.extend_from_slice(&0i64.to_be_bytes()); // LogStartOffset 0
        t.push(0x01); // AbortedTransactions: empty compact array
        t.extend_from_slice(&(-1i32).to_be_bytes()); // PreferredReadReplica -1
        t.push(0x01); // Records: empty compact bytes
        t.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // tagged fields: partition, topic, body
        assert_eq!(t.len() - 12, 32); // HighWatermark's low half is 32 bytes from the end
        t
    }

    #[test]
    fn false_size_4_boundary_in_a_fetch_tail_is_rejected() {
        // From HighWatermark's low half on, the tail reads as two 8-byte responses
        // "size 4, correlation id 0", then a size of 0. No response has an empty body,
        // and two equal ids that no request waits for are not a chain.
        let tail = fetch_tail();
        let r3 = response(3, &[0; 31]); // FindCoordinator-sized
        let r4 = response(4, &[1; 40]);
        let r5 = response(5, &[2; 2000]);
        let at3 = 1000 + tail.len() as u64;
        let at4 = at3 + r3.len() as u64;
        let at5 = at4 + r4.len() as u64;
        // Shifted reads of the tail ("00 04 00 00" = 256 KiB) would hold the scan until
        // that much arrives; a small resync_wait gives such sizes up at once.
        let cfg = FramerConfig {
            resync_wait: 4096,
            ..FramerConfig::default()
        };
        let mut f = Framer::new(6, Direction::BrokerToClient, false, cfg);
        let mut ev = Vec::new();
        f.push(
            Bytes::from([&tail[..], &r3[..]].concat()),
            1000,
            1,
            T,
            Origin::Unknown,
        );
        ev.extend(drain(&mut f, &RequestLog::default()));
        // One response and nothing after it proves nothing yet: wait.
        assert!(messages(&ev).is_empty(), "{ev:?}");
        f.push(Bytes::from(r4), at4, 2, T, Origin::Unknown);
        ev.extend(drain(&mut f, &RequestLog::default()));
        f.push(Bytes::from(r5), at5, 3, T, Origin::Unknown);
        ev.extend(drain(&mut f, &RequestLog::default()));
        assert_eq!(ids(&ev), [(at3, 3), (at4, 4), (at5, 5)]);
        assert_eq!(messages(&ev)[0].skipped_before, tail.len() as u64);
        assert!(no_desync(&ev), "{ev:?}");
        let resyncs = ev
            .iter()
            .filter(|e| matches!(e, FramerEvent::Resynced { .. }));
        assert_eq!(resyncs.count(), 1);
    }

    #[test]
    fn equal_ids_nothing_waits_for_are_not_a_chain() {
        let mut junk = Vec::new();
        junk.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 7]); // "size 8, id 7"
        junk.extend_from_slice(&[0xee; 4]);
        junk.extend_from_slice(&[0, 0, 0, 9, 0, 0, 0, 7]); // "size 9, id 7"
        junk.extend_from_slice(&[0xee; 4]);
        let real: Vec<u8> = [response(10, &[0; 9]), response(11, &[0; 9])].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(
            Bytes::from([&junk[..], &real[..]].concat()),
            0,
            1,
            T,
            Origin::Unknown,
        );
        let mut ev = drain(&mut f, &RequestLog::default());
        f.finish(&RequestLog::default(), &mut ev);
        assert_eq!(ids(&ev), [(24, 10), (41, 11)]);
    }

    #[test]
    fn a_lone_candidate_at_the_end_is_not_a_boundary() {
        // A message that ends in an int32 length-prefixed field reads as a response
        // ending exactly at the end of the data. Without a request or a following
        // response, that proves nothing: the bytes are discarded, not framed.
        let tail = [0xaa, 0xbb, 0, 0, 0, 6, 0, 0, 0, 0, 0, 4];
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&tail), 0, 1, T, Origin::Unknown);
        let mut ev = drain(&mut f, &RequestLog::default());
        f.finish(&RequestLog::default(), &mut ev);
        assert_eq!(
            ev,
            [FramerEvent::Discarded {
                bytes: 12,
                frame: 1
            }]
        );
        // The same bytes before a gap: discarded too, and framing resumes after it.
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&tail), 0, 1, T, Origin::Unknown);
        f.gap(12, 100, 2, &RequestLog::default());
        let real: Vec<u8> = [response(40, &[0; 9]), response(41, &[0; 9])].concat();
        f.push(Bytes::from(real), 112, 2, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        assert_eq!(ids(&ev), [(112, 40), (129, 41)]);
        assert_eq!(messages(&ev)[0].skipped_before, 12);
        // Data that both starts and ends with one response: a sparse capture's lone
        // answer (ndpi__kafka.pcapng frame 5) is framed at the end of the stream.
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(
            Bytes::from(response(131, &[0; 112])),
            0,
            5,
            T,
            Origin::Unknown,
        );
        let mut ev = drain(&mut f, &RequestLog::default());
        assert!(ev.is_empty());
        f.finish(&RequestLog::default(), &mut ev);
        assert_eq!(ids(&ev), [(0, 131)]);
    }

    #[test]
    fn a_huge_follower_does_not_confirm_a_candidate() {
        let cfg = FramerConfig {
            resync_wait: 64,
            ..FramerConfig::default()
        };
        let mut junk = Vec::new();
        junk.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 0, 1, 2, 3]); // "size 7, id 0"
        junk.extend_from_slice(&[0x03, 0xd0, 0, 0, 0, 0, 0x21, 0]); // "size 64 MB, id 8448"
        let real: Vec<u8> = [response(9000, &[5; 20]), response(9001, &[6; 20])].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, cfg);
        f.push(
            Bytes::from([&junk[..], &real[..]].concat()),
            0,
            1,
            T,
            Origin::Unknown,
        );
        let ev = drain(&mut f, &RequestLog::default());
        assert_eq!(ids(&ev), [(19, 9000), (47, 9001)]);
    }

    #[test]
    fn trusted_response_may_hold_only_a_correlation_id() {
        // A broker may answer an api it does not know with the correlation id alone
        // (wireshark-wiki-kafka-testcases-v4/unsupported-version.pcapng).
        let stream: Vec<u8> = [response(0x2710_0000, &[]), response(2, &[0; 2])].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, true, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, Origin::Unknown);
        let ev = drain(&mut f, &RequestLog::default());
        assert_eq!(ids(&ev), [(0, 0x2710_0000), (8, 2)]);
    }

    /// Smallest encoding of a struct at `version` (empty arrays, strings and bytes).
    fn min_size(s: &schema::StructDef, version: i16, flexible: bool) -> usize {
        use schema::{FieldKind, Prim};
        let mut n = usize::from(flexible); // the tagged-field count
        for f in s.fields {
            if !f.versions.contains(version) || f.tagged.contains(version) {
                continue;
            }
            let flex = f.flexible.map_or(flexible, |v| v.contains(version));
            let length = if flex { 1 } else { 4 };
            n += match f.kind {
                FieldKind::Prim(Prim::Bool | Prim::Int8) => 1,
                FieldKind::Prim(Prim::Int16 | Prim::Uint16) => 2,
                FieldKind::Prim(Prim::Int32 | Prim::Uint32) => 4,
                FieldKind::Prim(Prim::Int64 | Prim::Float64) => 8,
                FieldKind::Prim(Prim::Uuid) => 16,
                FieldKind::Prim(Prim::String) => 2.min(length),
                FieldKind::Prim(Prim::Bytes | Prim::Records) | FieldKind::Array(_) => length,
                FieldKind::Struct(_) if f.nullable.contains(version) => 1,
                FieldKind::Struct(inner) => min_size(inner, version, flex),
            };
        }
        n
    }

    #[test]
    fn smallest_guessed_response_matches_the_schemas() {
        use schema::{response_header_version, MessageKind, MESSAGES};
        let smallest = MESSAGES
            .iter()
            .filter(|m| m.kind == MessageKind::Response)
            .flat_map(|m| (m.valid.min..=m.valid.max.min(100)).map(move |v| (m, v)))
            .map(|(m, v)| {
                let header = if response_header_version(m.api_key, v) == 1 {
                    5 // correlation id, tagged fields
                } else {
                    4 // correlation id
                };
                header + min_size(m.body, v, m.is_flexible(v))
            })
            .min()
            .unwrap();
        assert_eq!(smallest, MIN_GUESSED_RESPONSE_SIZE as usize);
    }
}
