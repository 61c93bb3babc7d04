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
//! plausibly starts (requests: sane size, known api key, version in range,
//! plausible client id, and a plausible following boundary; responses: a
//! correlation id that is pending, or else a body no smaller than any known
//! response schema's and a chain of following responses whose ids are pending
//! or increase) and reports the bytes skipped.
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
use crate::kafka::schema;

use crate::vocab::{Direction, Timestamp};
use bytes::{Bytes, BytesMut};
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
    /// File offset of `data[0]`, when known.
    file: Option<u64>,
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

/// Smallest response size field a resync accepts without a pending correlation id:
/// a correlation id and an int16 ErrorCode (HeartbeatResponse v0, LeaveGroupResponse
/// v0, UpdateMetadataResponse v0-5). Every other response schema is longer; no
/// response of a known api has an empty body.
const MIN_GUESSED_RESPONSE_SIZE: i32 = 6;

/// Smallest request size field: api key, version and correlation id
/// (ControlledShutdown v0 has no client id).
const MIN_REQUEST_SIZE: i32 = 8;

/// Responses after a resync candidate that must look right before a boundary is
/// accepted on structure alone (no pending correlation id in the chain).
const RESPONSE_CHAIN: usize = 2;

/// Largest step between the correlation ids of consecutive responses.
const CORR_WINDOW: i64 = 1 << 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Accept,
    Reject,
    NeedMore,
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
        }
    }

    /// The connection index this framer belongs to.
    pub fn stream(&self) -> u64 {
        self.stream
    }

    /// The direction this framer cuts.
    pub fn dir(&self) -> Direction {
        self.dir
    }

    /// True while looking for a message boundary.
    pub fn is_resyncing(&self) -> bool {
        self.state == State::Resync
    }

    /// Bytes buffered and not yet part of a message.
    pub fn buffered(&self) -> u64 {
        self.avail
    }

    /// Stop trusting the current position: resynchronise from here.
    pub fn resync(&mut self) {
        self.state = State::Resync;
    }

    /// Appends in-order bytes at `stream_offset` (as delivered by `flow`),
    /// carried by `frame` at `ts`; when they lie at `file` in the capture
    /// file, messages made of them carry their [`RawMessage::file_pieces`].
    pub fn push(
        &mut self,
        data: Bytes,
        stream_offset: u64,
        frame: u64,
        ts: Timestamp,
        file: Option<u64>,
    ) {
        let mut file = file;
        let end = self.head + self.avail;
        let mut data = data;
        let mut off = stream_offset;
        if off > end {
            // Bytes are missing that no gap announced: treat them as one.
            self.gap(end, off - end, frame, &|_| false);
        } else if off < end {
            let dup = usize::try_from(end - off).unwrap_or(usize::MAX);
            if dup >= data.len() {
                return;
            }
            data = data.slice(dup..);
            file = file.and_then(|f| f.checked_add(dup as u64));
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
            file = file.and_then(|f| f.checked_add(n as u64));
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
            file,
        });
    }

    /// `len` bytes at `stream_offset` will never arrive. The bytes before the gap are
    /// framed as if the stream ended there (`is_pending` as for [`Framer::next_event`]).
    pub fn gap(
        &mut self,
        stream_offset: u64,
        len: u64,
        frame: u64,
        is_pending: &dyn Fn(i32) -> bool,
    ) {
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
                    if !self.scan(true, is_pending) {
                        break;
                    }
                }
                State::Skip(_) => break,
            }
        }
        let known_end = match (self.state, self.size_at(0)) {
            (State::Trusted, Some(size)) if self.trusted_size_ok(size) => {
                Some(self.head + 4 + u64::try_from(size).unwrap_or(0))
            }
            _ => None,
        };
        match known_end {
            Some(msg_end) => {
                let missing = msg_end.saturating_sub(self.head + self.avail);
                let mut m = self.take_all();
                if let Some(m) = m.as_mut() {
                    m.missing = missing;
                }
                if let Some(m) = m {
                    self.queue.push_back(FramerEvent::Partial(m));
                }
                if gap_end <= msg_end {
                    self.state = State::Skip(msg_end);
                } else {
                    self.state = State::Resync;
                }
            }
            None => {
                self.discard_all(frame);
                self.state = State::Resync;
            }
        }
        self.head = gap_end;
        self.avail = 0;
        self.chunks.clear();
    }

    /// The next event, if any; `is_pending(correlation_id)` tells response resync which ids
    /// have an outstanding request (pass `&|_| false` when unknown).
    pub fn next_event(&mut self, is_pending: &dyn Fn(i32) -> bool) -> Option<FramerEvent> {
        self.step(false, is_pending)
    }

    /// End of the stream: emit what can still be framed, then a `Partial` or `Discarded`
    /// for the rest.
    pub fn finish(&mut self, is_pending: &dyn Fn(i32) -> bool, out: &mut Vec<FramerEvent>) {
        while let Some(ev) = self.step(true, is_pending) {
            out.push(ev);
        }
        if self.avail == 0 && self.skipped == 0 {
            return;
        }
        match (self.state, self.size_at(0)) {
            (State::Trusted, Some(size)) if self.avail > 0 && self.trusted_size_ok(size) => {
                let missing = (4 + u64::try_from(size).unwrap_or(0)).saturating_sub(self.avail);
                if let Some(mut m) = self.take_all() {
                    m.missing = missing;
                    out.push(FramerEvent::Partial(m));
                }
            }
            _ => {
                let frame = if self.skipped > 0 {
                    self.skipped_frame
                } else {
                    self.chunks.front().map_or(0, |c| c.frame)
                };
                out.push(FramerEvent::Discarded {
                    bytes: self.avail + self.skipped,
                    frame,
                });
                self.skipped = 0;
                self.chunks.clear();
                self.head += self.avail;
                self.avail = 0;
            }
        }
    }

    fn step(&mut self, eof: bool, is_pending: &dyn Fn(i32) -> bool) -> Option<FramerEvent> {
        if let Some(ev) = self.queue.pop_front() {
            return Some(ev);
        }
        if self.state == State::Resync && !self.scan(eof, is_pending) {
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
    fn scan(&mut self, eof: bool, is_pending: &dyn Fn(i32) -> bool) -> bool {
        let mut p = 0u64;
        let found = loop {
            if p >= self.avail {
                break false;
            }
            let v = match self.dir {
                Direction::ClientToBroker => self.check_request(p, eof),
                Direction::BrokerToClient => self.check_response(p, eof, is_pending),
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
        let need_more = if eof {
            Verdict::Reject
        } else {
            Verdict::NeedMore
        };
        let Some(h) = self.read::<14>(p) else {
            return need_more;
        };
        let Some(size) = request_header_plausible(&h, self.cfg.max_message) else {
            return Verdict::Reject;
        };
        // A non-empty client id must look like text.
        if let Some(n) = client_id_len(&h) {
            let check = u64::from(n.min(64));
            let mut ok = true;
            for i in 0..check {
                match self.read::<1>(p + 14 + i) {
                    Some([b]) if (0x20..0x7f).contains(&b) => {}
                    Some(_) => {
                        ok = false;
                        break;
                    }
                    None => return need_more,
                }
            }
            if !ok {
                return Verdict::Reject;
            }
        }
        let q = p + 4 + u64::from(size);
        if let Some(h2) = self.read::<14>(q) {
            return if request_header_plausible(&h2, self.cfg.max_message).is_some() {
                Verdict::Accept
            } else {
                Verdict::Reject
            };
        }
        if self.avail == q || (eof && self.avail >= q) {
            // The candidate ends exactly where the data ends: segments end on messages.
            return Verdict::Accept;
        }
        if eof || (self.avail < q && q - p > self.cfg.resync_wait as u64) {
            return Verdict::Reject;
        }
        Verdict::NeedMore
    }

    /// Whether a response starts at buffer offset `p`. Without a pending correlation
    /// id the boundary must be confirmed by the responses that follow it: their sizes
    /// sane and their ids pending or increasing (Kafka answers a connection's requests
    /// in order, and clients number requests upwards).
    fn check_response(&self, p: u64, eof: bool, is_pending: &dyn Fn(i32) -> bool) -> Verdict {
        let Some(h) = self.read::<8>(p) else {
            return if eof {
                Verdict::Reject
            } else {
                Verdict::NeedMore
            };
        };
        // An unanswered request vouches for its response; anything else must look
        // like the response of a known api.
        let plausible = |size: i32, pending: bool| {
            self.size_sane(size) && (pending || size >= MIN_GUESSED_RESPONSE_SIZE)
        };
        let (size, corr) = split8(h);
        let pending = is_pending(corr);
        if !plausible(size, pending) || (!pending && corr < 0) {
            return Verdict::Reject;
        }
        let end = p + 4 + u64::try_from(size).unwrap_or(0);
        // Walk the chain of boundaries after the candidate.
        let (mut at, mut prev, mut followers, mut strong) = (end, corr, 0usize, pending);
        while followers < RESPONSE_CHAIN {
            let Some(h2) = self.read::<8>(at) else {
                break;
            };
            let (size2, corr2) = split8(h2);
            let pending2 = is_pending(corr2);
            let next = i64::from(corr2) - i64::from(prev);
            if !plausible(size2, pending2) || !(pending2 || (1..=CORR_WINDOW).contains(&next)) {
                return Verdict::Reject;
            }
            followers += 1;
            strong |= pending2;
            prev = corr2;
            at += 4 + u64::try_from(size2).unwrap_or(0);
        }
        if followers >= RESPONSE_CHAIN || strong {
            return Verdict::Accept;
        }
        if self.avail == at && (followers > 0 || (eof && p == 0 && self.skipped == 0)) {
            // The chain ends exactly where the data ends: segments end on messages. A
            // lone candidate proves nothing that way (any message ending in an int32
            // length-prefixed field has one) unless the data also starts with it: a
            // last, lone response in a stream seen from its middle.
            return Verdict::Accept;
        }
        if eof {
            // No more bytes will come. A chain that runs past the end proves too little,
            // and a false boundary before a gap would skip real messages after it.
            return Verdict::Reject;
        }
        if at + 8 - p > self.cfg.resync_wait as u64 {
            // Confirming would hold too much; a huge size is more often noise than a
            // real response, so give the candidate up.
            return Verdict::Reject;
        }
        Verdict::NeedMore
    }

    fn size_at(&self, p: u64) -> Option<i32> {
        self.read::<4>(p).map(i32::from_be_bytes)
    }

    /// `N` bytes at buffer offset `p`, if buffered.
    fn read<const N: usize>(&self, p: u64) -> Option<[u8; N]> {
        let end = p.checked_add(N as u64)?;
        if end > self.avail {
            return None;
        }
        let mut out = [0u8; N];
        let mut filled = 0usize;
        let mut base = 0u64;
        for c in &self.chunks {
            let clen = c.data.len() as u64;
            if base + clen > p + filled as u64 {
                let from = usize::try_from(p + filled as u64 - base).ok()?;
                let src = c.data.get(from..)?;
                let n = src.len().min(N - filled);
                out.get_mut(filled..filled + n)?
                    .copy_from_slice(src.get(..n)?);
                filled += n;
                if filled == N {
                    return Some(out);
                }
            }
            base += clen;
        }
        None
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
                c.file = c.file.and_then(|f| f.checked_add(k as u64));
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

    fn take_all(&mut self) -> Option<RawMessage> {
        if self.avail == 0 {
            return None;
        }
        self.take(self.avail)
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
        let (bytes, last_frame, last_ts) = if first.data.len() >= len {
            if let (Some(f), Ok(n)) = (first.file, u32::try_from(len)) {
                file_pieces.push((f, n));
            }
            // Cut off the front chunk in place (what `drop_front` would do
            // after a slice): one new handle, not a clone and a slice.
            let bytes = first.data.split_to(len);
            first.file = first.file.and_then(|f| f.checked_add(len as u64));
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
                let part = c.data.get(..room.min(c.data.len()))?;
                buf.extend_from_slice(part);
                last = (c.frame, c.ts);
                match (c.file, u32::try_from(part.len())) {
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
        };
        Some(m)
    }
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

    fn drain(f: &mut Framer, pending: &dyn Fn(i32) -> bool) -> Vec<FramerEvent> {
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
                None,
            );
            ev.extend(drain(&mut f, &|_| false));
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
        f.push(one.clone(), 0, 1, T, None);
        let ev = drain(&mut f, &|_| false);
        assert_eq!(messages(&ev)[0].bytes.as_ptr(), one.as_ptr());
        // One carrying frame: no provenance kept, every byte the first frame's.
        assert!(messages(&ev)[0].provenance.is_empty());
        assert_eq!(messages(&ev)[0].frame_of(5), 1);
        // One frame's bytes in two chunks: still one carrying frame.
        let two = request(8, b"defg");
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&two[..6]), 0, 4, T, None);
        f.push(Bytes::copy_from_slice(&two[6..]), 6, 4, T, None);
        let ev = drain(&mut f, &|_| false);
        let ms = messages(&ev);
        assert_eq!(&ms[0].bytes[..], &two[..]);
        assert!(ms[0].provenance.is_empty());
        assert_eq!(ms[0].frame_of(9), 4);
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
        f.push(chunk.clone(), 0, 1, T, Some(1000));
        let ev = drain(&mut f, &|_| false);
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
            Some(5000),
        );
        let ev = drain(&mut f, &|_| false);
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
            f.push(d, s0 as u64, 1 + s0 as u64, T, Some(at));
        }
        let d = Bytes::copy_from_slice(&stream[30..]);
        f.push(d, 30, 40, T, Some(500));
        let ev = drain(&mut f, &|_| false);
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
        f.push(Bytes::copy_from_slice(&a[..10]), 0, 1, T, Some(100));
        f.push(Bytes::copy_from_slice(&a[4..]), 4, 2, T, Some(300));
        let ev = drain(&mut f, &|_| false);
        assert_eq!(messages(&ev)[0].file_pieces, vec![(100, 10), (306, 17)]);
        // One chunk without an offset: no pieces at all.
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&a[..10]), 0, 1, T, Some(100));
        f.push(Bytes::copy_from_slice(&a[10..]), 10, 2, T, None);
        let ev = drain(&mut f, &|_| false);
        assert!(messages(&ev)[0].file_pieces.is_empty());
    }

    #[test]
    fn resync_requests_mid_stream() {
        let a = request(1, b"0123456789");
        let stream: Vec<u8> = [&a[5..], &request(2, b"")[..], &request(3, b"zz")[..]].concat();
        let mut f = Framer::new(4, Direction::ClientToBroker, false, FramerConfig::default());
        f.push(Bytes::from(stream), 100, 1, T, None);
        let ev = drain(&mut f, &|_| false);
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

    #[test]
    fn resync_responses_with_pending_ids() {
        let stream: Vec<u8> = [&response(41, &[0; 30])[9..], &response(42, &[1; 6])[..]].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, None);
        let ev = drain(&mut f, &|c| c == 42);
        let ms = messages(&ev);
        assert_eq!(ms.len(), 1);
        assert_eq!(ms[0].correlation_id(), Some(42));
        assert_eq!(ms[0].skipped_before, 38 - 9);
    }

    #[test]
    fn gap_inside_known_message_skips_exactly() {
        let a = request(1, &[b'a'; 40]);
        let b = request(2, b"b");
        let mut f = Framer::new(0, Direction::ClientToBroker, true, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&a[..20]), 0, 1, T, None);
        assert!(drain(&mut f, &|_| false).is_empty());
        f.gap(20, 10, 2, &|_| false);
        f.push(Bytes::copy_from_slice(&a[30..]), 30, 2, T, None);
        f.push(Bytes::from(b.clone()), a.len() as u64, 3, T, None);
        let ev = drain(&mut f, &|_| false);
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
        f.push(Bytes::from_static(&[0x80, 0]), 0, 1, T, None);
        assert!(drain(&mut f, &|_| false).is_empty()); // a partial prefix is "need more"
        f.push(Bytes::from_static(&[0, 0, 0, 3]), 2, 2, T, None);
        let ev = drain(&mut f, &|_| false);
        assert_eq!(
            ev,
            vec![FramerEvent::Desync {
                stream_offset: 0,
                size: i32::MIN,
                frame: 1
            }]
        );
        assert!(f.is_resyncing());
        let mut out = Vec::new();
        f.finish(&|_| false, &mut out);
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
            None,
        );
        assert!(drain(&mut f, &|_| false).is_empty());
        assert_eq!(f.buffered(), 8);
        let mut out = Vec::new();
        f.finish(&|_| false, &mut out);
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
        f.push(Bytes::from([&tail[..], &r3[..]].concat()), 1000, 1, T, None);
        ev.extend(drain(&mut f, &|_| false));
        // One response and nothing after it proves nothing yet: wait.
        assert!(messages(&ev).is_empty(), "{ev:?}");
        f.push(Bytes::from(r4), at4, 2, T, None);
        ev.extend(drain(&mut f, &|_| false));
        f.push(Bytes::from(r5), at5, 3, T, None);
        ev.extend(drain(&mut f, &|c| c == 5));
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
        for pending in [None, Some(11)] {
            let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
            f.push(Bytes::from([&junk[..], &real[..]].concat()), 0, 1, T, None);
            let mut ev = drain(&mut f, &|c| Some(c) == pending);
            f.finish(&|c| Some(c) == pending, &mut ev);
            assert_eq!(ids(&ev), [(24, 10), (41, 11)], "pending {pending:?}");
        }
    }

    #[test]
    fn a_lone_candidate_at_the_end_is_not_a_boundary() {
        // A message that ends in an int32 length-prefixed field reads as a response
        // ending exactly at the end of the data. Without a pending id or a following
        // response, that proves nothing: the bytes are discarded, not framed.
        let tail = [0xaa, 0xbb, 0, 0, 0, 6, 0, 0, 0, 0, 0, 4];
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&tail), 0, 1, T, None);
        let mut ev = drain(&mut f, &|_| false);
        f.finish(&|_| false, &mut ev);
        assert_eq!(
            ev,
            [FramerEvent::Discarded {
                bytes: 12,
                frame: 1
            }]
        );
        // The same bytes before a gap: discarded too, and framing resumes after it.
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::copy_from_slice(&tail), 0, 1, T, None);
        f.gap(12, 100, 2, &|_| false);
        let real: Vec<u8> = [response(40, &[0; 9]), response(41, &[0; 9])].concat();
        f.push(Bytes::from(real), 112, 2, T, None);
        let ev = drain(&mut f, &|_| false);
        assert_eq!(ids(&ev), [(112, 40), (129, 41)]);
        assert_eq!(messages(&ev)[0].skipped_before, 12);
        // Data that both starts and ends with one response: a sparse capture's lone
        // answer (ndpi__kafka.pcapng frame 5) is framed at the end of the stream.
        let mut f = Framer::new(0, Direction::BrokerToClient, false, FramerConfig::default());
        f.push(Bytes::from(response(131, &[0; 112])), 0, 5, T, None);
        let mut ev = drain(&mut f, &|_| false);
        assert!(ev.is_empty());
        f.finish(&|_| false, &mut ev);
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
        f.push(Bytes::from([&junk[..], &real[..]].concat()), 0, 1, T, None);
        let ev = drain(&mut f, &|_| false);
        assert_eq!(ids(&ev), [(19, 9000), (47, 9001)]);
    }

    #[test]
    fn trusted_response_may_hold_only_a_correlation_id() {
        // A broker may answer an api it does not know with the correlation id alone
        // (wireshark-wiki-kafka-testcases-v4/unsupported-version.pcapng).
        let stream: Vec<u8> = [response(0x2710_0000, &[]), response(2, &[0; 2])].concat();
        let mut f = Framer::new(0, Direction::BrokerToClient, true, FramerConfig::default());
        f.push(Bytes::from(stream), 0, 1, T, None);
        let ev = drain(&mut f, &|_| false);
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
