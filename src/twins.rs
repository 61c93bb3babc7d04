//! Twins: the same connection seen at two capture points, reported once.
//!
//! Place in the data path: the pipeline's last step, when several captures
//! are read together ([`crate::pipeline::PipelineConfig::twin_window_ns`]).
//! A client host's capture and its broker's both hold the connection: the
//! same endpoints, and bytes at the same TCP sequence numbers. The
//! reassembler keeps them apart (a connection per capture); here they meet.
//!
//! - **Twin connections.** A connection opening while one with the same
//!   client and broker endpoints is open in another capture is its twin.
//!   The one from the capture given first is the connection reported (its
//!   stream number, its frames and times); the other's opening, gaps,
//!   round trip and close are not reported.
//! - **Twin messages.** A message is known by its direction, the TCP
//!   sequence number of its first byte and its size (a decrypted TLS
//!   connection's by its offset in the plaintext, both captures having
//!   seen its SYN). Each message of twin connections waits for its copy
//!   from the other capture point, at most the window of packet time (or
//!   [`RECENT_WINDOWS`] windows while the other point's connection, seen
//!   from mid-stream, has framed nothing in that direction: its first
//!   boundary waits for the message after it to confirm it): the
//!   first capture's copy is reported, with the other's frames and times
//!   ([`Twin::Also`]); a message only one capture saw is reported alone, on
//!   the reported connection ([`Twin::Only`] when the other capture saw it).
//! - **Order.** Events keep their order: one that waits holds back those
//!   after it; a matched message takes the place of its earlier copy. A
//!   connection whose twin may still open (it opened less than a window
//!   ago) waits too, so that its twin's events are never reported.
//!
//! The window is packet time on the merged clock: the files' clocks are
//! set onto the first's before the merge
//! ([`FileSource::align_clocks`](crate::capture::FileSource::align_clocks)), so a
//! message's two copies come a network path apart.
//!
//! Invariants: pure; events wait at most the window ([`RECENT_WINDOWS`]
//! windows behind a message whose copy a connection seen from mid-stream
//! has not framed its first message for yet), and at most [`MAX_HELD`] at
//! once (past that the oldest goes on alone).

use crate::flow::Opened;
use crate::kafka::framing::{RawMessage, Sighting, Twin};
use crate::pipeline::Event;
use crate::vocab::{Direction, Timestamp};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Most events held at once.
pub const MAX_HELD: usize = 1 << 16;

/// One connection as the twin step knows it.
struct Conn {
    ends: (SocketAddr, SocketAddr),
    capture: u16,
    opened: Timestamp,
    /// The twin connection, once found.
    twin: Option<u64>,
    /// True when this is the connection reported (its capture came first).
    reported: bool,
    closed: bool,
    /// Its opening has gone out.
    public: bool,
}

/// A message as both capture points know it: the reported connection,
/// direction, sequence number of its first byte, size.
type Key = (u64, Direction, u32, i32);

struct Held {
    id: u64,
    /// `None` once dropped or moved.
    ev: Option<Event>,
    /// Waits until then; `None` when it need not.
    until: Option<Timestamp>,
    key: Option<Key>,
}

/// The twin step: events of the pipeline in, the same events out with
/// twin connections' reported once.
pub struct Twins {
    window: u64,
    conns: FxHashMap<u64, Conn>,
    open: FxHashMap<(SocketAddr, SocketAddr), Vec<u64>>,
    queue: VecDeque<Held>,
    next_id: u64,
    waiting: FxHashMap<Key, u64>,
    /// Each Kafka connection's direction's start.
    seq0: FxHashMap<(u64, usize), Start>,
    scratch: Vec<Event>,
    /// Messages that went out without their copy, by key, with when (at
    /// most [`MAX_HELD`], for [`RECENT_WINDOWS`] windows): a copy that
    /// comes later still (framing held it, resynchronising a connection
    /// seen from mid-stream) is known and not reported again.
    recent: FxHashMap<Key, Timestamp>,
    recent_order: VecDeque<(Timestamp, Key)>,
    now: Timestamp,
}

/// A Kafka connection's direction as it started.
#[derive(Clone, Copy)]
struct Start {
    /// The TCP sequence number of its offset 0.
    seq0: u32,
    /// Its SYN was seen.
    syn: bool,
    /// False while its SYN was not seen and it has framed no message: its
    /// framer is still looking for a first boundary.
    locked: bool,
}

/// How many windows a message that went out alone is remembered for.
pub const RECENT_WINDOWS: u64 = 50;

impl Twins {
    /// A twin step waiting `window_ns` of packet time for a message's copy.
    pub fn new(window_ns: u64) -> Twins {
        Twins {
            window: window_ns,
            conns: FxHashMap::default(),
            open: FxHashMap::default(),
            queue: VecDeque::new(),
            next_id: 0,
            waiting: FxHashMap::default(),
            seq0: FxHashMap::default(),
            scratch: Vec::new(),
            recent: FxHashMap::default(),
            recent_order: VecDeque::new(),
            now: Timestamp::default(),
        }
    }

    /// A Kafka connection's direction started: the TCP sequence number of
    /// its offset 0, and whether its SYN was seen.
    pub fn start(&mut self, stream: u64, dir: Direction, seq0: u32, syn_seen: bool) {
        let start = Start {
            seq0,
            syn: syn_seen,
            locked: syn_seen,
        };
        self.seq0.insert((stream, dir.index()), start);
    }

    /// Takes the pipeline's new events out of `out[from..]` and puts back
    /// those that need not wait, in order; `now` is the packet time.
    pub fn pass(&mut self, out: &mut Vec<Event>, from: usize, now: Timestamp) {
        self.now = self.now.max(now);
        if out.len() > from {
            let mut new = std::mem::take(&mut self.scratch);
            new.extend(out.drain(from..));
            for ev in new.drain(..) {
                self.event(ev);
            }
            self.scratch = new;
        }
        self.release(out, false);
    }

    /// End of input: every held event goes out.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.release(out, true);
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::StreamOpen(o) => self.opened(o),
            Event::Message(m) => self.message(m),
            ev => {
                let stream = ev.stream();
                // The twin's own view of its connection is not reported.
                let (hidden, until) = match stream.and_then(|s| self.conns.get(&s)) {
                    Some(c) if c.twin.is_some() && !c.reported => (true, None),
                    Some(c) if c.twin.is_none() && self.young(c) => {
                        (false, Some(self.settle_by(c)))
                    }
                    _ => (false, None),
                };
                if let Event::StreamClosed { stream, .. } = &ev {
                    self.close(*stream);
                }
                if !hidden {
                    self.push(ev, until);
                }
            }
        }
    }

    /// Until when a connection's twin may still open.
    fn settle_by(&self, c: &Conn) -> Timestamp {
        c.opened.add_nanos(self.window)
    }

    fn young(&self, c: &Conn) -> bool {
        self.now < self.settle_by(c)
    }

    fn close(&mut self, stream: u64) {
        if let Some(c) = self.conns.get_mut(&stream) {
            c.closed = true;
            let ends = c.ends;
            if let (Some(t), false) = (c.twin, c.reported) {
                if !self.conns.contains_key(&t) {
                    // Its reported twin is done: so is it.
                    self.conns.remove(&stream);
                    for d in 0..2 {
                        self.seq0.remove(&(stream, d));
                    }
                }
            }
            if let Some(v) = self.open.get_mut(&ends) {
                v.retain(|&s| s != stream);
                if v.is_empty() {
                    self.open.remove(&ends);
                }
            }
        }
    }

    fn opened(&mut self, o: Opened) {
        let ends = (o.client, o.broker);
        let twin = (self.open.get(&ends).into_iter().flatten())
            .copied()
            .find(|&s| {
                self.conns
                    .get(&s)
                    .is_some_and(|c| c.capture != o.capture && c.twin.is_none())
                    && self.same_start(s, o.stream)
            });
        self.conns.insert(
            o.stream,
            Conn {
                ends,
                capture: o.capture,
                opened: o.ts,
                twin: None,
                reported: true,
                closed: false,
                public: false,
            },
        );
        self.open.entry(ends).or_default().push(o.stream);
        let Some(t) = twin else {
            let until = Some(o.ts.add_nanos(self.window));
            self.push(Event::StreamOpen(o), until);
            return;
        };
        // The connection from the capture given first is reported, unless
        // the other's opening has gone out already: that one stays.
        let earlier_reported = self
            .conns
            .get(&t)
            .is_some_and(|c| c.public || c.capture < o.capture);
        let (rep, other) = if earlier_reported {
            (t, o.stream)
        } else {
            (o.stream, t)
        };
        if let Some(c) = self.conns.get_mut(&rep) {
            c.twin = Some(other);
            c.reported = true;
        }
        if let Some(c) = self.conns.get_mut(&other) {
            c.twin = Some(rep);
            c.reported = false;
        }
        // The held events of the twin that is not reported: its opening
        // becomes the reported one's (when that is the one opening now),
        // its messages wait for their copies, the rest goes.
        let o_capture_other = self.conns.get(&other).map_or(0, |c| c.capture);
        let mut open = (!earlier_reported).then_some(Event::StreamOpen(o));
        let mut offer = Vec::new();
        for h in &mut self.queue {
            let Some(ev) = &mut h.ev else { continue };
            let s = ev.stream();
            if s == Some(rep) {
                if let Event::Message(_) = ev {
                    offer.push(h.id);
                } else {
                    h.until = None;
                }
            } else if s == Some(other) {
                match ev {
                    Event::StreamOpen(_) => {
                        h.ev = open.take();
                        h.until = None;
                    }
                    Event::Message(m) => {
                        m.stream = rep;
                        m.twin = Some(Box::new(Twin::Only(o_capture_other)));
                        offer.push(h.id);
                    }
                    _ => h.ev = None,
                }
            }
        }
        if let Some(ev) = open {
            self.push(ev, None);
        }
        for id in offer {
            self.offer(id);
        }
    }

    /// False when both connections' SYNs were seen in a direction with
    /// different sequence numbers: then they are not one connection (its
    /// endpoints used again).
    fn same_start(&self, a: u64, b: u64) -> bool {
        (0..2).all(|d| match (self.seq0.get(&(a, d)), self.seq0.get(&(b, d))) {
            (Some(x), Some(y)) if x.syn && y.syn => x.seq0 == y.seq0,
            _ => true,
        })
    }

    fn message(&mut self, mut m: RawMessage) {
        let start = self.seq0.get_mut(&(m.stream, m.dir.index()));
        if let Some(st) = start.filter(|st| !st.locked) {
            st.locked = true;
            self.locked(m.stream, m.dir);
        }
        let Some(c) = self.conns.get(&m.stream) else {
            self.push(Event::Message(m), None);
            return;
        };
        if let (Some(t), false) = (c.twin, c.reported) {
            if !self.conns.contains_key(&t) {
                // The reported connection is over: a copy too late to meet.
                return;
            }
            m.twin = Some(Box::new(Twin::Only(c.capture)));
            m.stream = t;
        }
        let linked = c.twin.is_some();
        // A message waits for a copy even while its connection has no
        // twin: the twin may open with that copy (a capture that starts
        // while the connection is open sees it from mid-stream).
        let until = self.hold_until(&m);
        self.push(Event::Message(m), Some(until));
        if linked {
            let id = self.next_id - 1;
            self.offer(id);
        }
    }

    /// A held message of twin connections: matched with its waiting copy,
    /// or waiting for it.
    fn offer(&mut self, id: u64) {
        let Some(pos) = self.pos(id) else { return };
        let Some(Held {
            ev: Some(Event::Message(m)),
            ..
        }) = self.queue.get(pos)
        else {
            return;
        };
        let Some(key) = self.key(m) else {
            if let Some(h) = self.queue.get_mut(pos) {
                h.until = None;
            }
            return;
        };
        if self.recent.remove(&key).is_some() {
            // Its copy went out alone already.
            if let Some(h) = self.queue.get_mut(pos) {
                h.ev = None;
            }
            return;
        }
        let Some(other_id) = self.waiting.get(&key).copied().filter(|&o| o != id) else {
            let until = self.hold_until(m);
            self.waiting.insert(key, id);
            if let Some(h) = self.queue.get_mut(pos) {
                h.until = Some(until);
                h.key = Some(key);
            }
            return;
        };
        let Some(opos) = self.pos(other_id) else {
            return;
        };
        let cap = |m: &RawMessage| self.capture_of(m);
        let same = match (self.queue.get(opos).and_then(|h| h.ev.as_ref()), m) {
            (Some(Event::Message(o)), m) => cap(o) == cap(m),
            _ => true,
        };
        if same {
            return;
        }
        self.waiting.remove(&key);
        let (early, late) = (pos.min(opos), pos.max(opos));
        let a = self.queue.get_mut(late).and_then(|h| h.ev.take());
        let b = self.queue.get_mut(early).and_then(|h| h.ev.take());
        let (Some(Event::Message(a)), Some(Event::Message(b))) = (a, b) else {
            return;
        };
        let cap = |m: &RawMessage| self.capture_of(m);
        let (mut kept, seen) = if cap(&a) <= cap(&b) { (a, b) } else { (b, a) };
        kept.twin = Some(Box::new(Twin::Also(Sighting {
            capture: cap(&seen),
            first_frame: seen.first_frame,
            last_frame: seen.last_frame,
            first_ts: seen.first_ts,
            last_ts: seen.last_ts,
        })));
        if let Some(h) = self.queue.get_mut(early) {
            h.ev = Some(Event::Message(kept));
            h.until = None;
            h.key = None;
        }
    }

    /// Until when message `m` waits for its copy: a window after it, or
    /// [`RECENT_WINDOWS`] windows while the other point's connection, seen
    /// from mid-stream, has framed nothing in its direction yet (its framer
    /// takes a boundary once the message after it confirms it: the copy of
    /// the message in flight when that capture started comes as late as
    /// the next one).
    fn hold_until(&self, m: &RawMessage) -> Timestamp {
        let base = self.now.max(m.last_ts);
        let resyncing = other_point(&self.conns, m)
            .and_then(|o| self.seq0.get(&(o, m.dir.index())))
            .is_some_and(|st| !st.locked);
        let windows = if resyncing { RECENT_WINDOWS } else { 1 };
        base.add_nanos(self.window.saturating_mul(windows))
    }

    /// Direction `dir` of `stream` framed its first message: the messages
    /// waiting longer for a copy from it ([`Twins::hold_until`]) wait a
    /// window now (their copies come in order behind this one, or never).
    fn locked(&mut self, stream: u64, dir: Direction) {
        let until = self.now.add_nanos(self.window);
        for h in &mut self.queue {
            if let (Some(Event::Message(m)), Some(_)) = (&h.ev, h.key) {
                if m.dir == dir && other_point(&self.conns, m) == Some(stream) {
                    h.until = h.until.map(|u| u.min(until));
                }
            }
        }
    }

    /// The capture a message of twin connections came from: its frames'.
    fn capture_of(&self, m: &RawMessage) -> u16 {
        match m.twin.as_deref() {
            Some(Twin::Only(c)) => *c,
            _ => self.conns.get(&m.stream).map_or(0, |c| c.capture),
        }
    }

    fn key(&self, m: &RawMessage) -> Option<Key> {
        // The stream the message came on: for a copy moved onto the
        // reported connection, its `Only` capture tells its own.
        let c = self.conns.get(&m.stream)?;
        let own = match m.twin.as_deref() {
            Some(Twin::Only(_)) => c.twin?,
            _ => m.stream,
        };
        let &Start { seq0, syn, .. } = self.seq0.get(&(own, m.dir.index()))?;
        // A decrypted connection's offsets are the plaintext's: the same
        // at both points when both saw it from its SYN.
        let seq = if !m.tls_records.is_empty() {
            if !syn {
                return None;
            }
            m.stream_offset as u32
        } else {
            seq0.wrapping_add(m.stream_offset as u32)
        };
        Some((m.stream, m.dir, seq, m.size()?))
    }

    fn pos(&self, id: u64) -> Option<usize> {
        let first = self.queue.front()?.id;
        let pos = usize::try_from(id.checked_sub(first)?).ok()?;
        (pos < self.queue.len()).then_some(pos)
    }

    fn push(&mut self, ev: Event, until: Option<Timestamp>) {
        self.queue.push_back(Held {
            id: self.next_id,
            ev: Some(ev),
            until,
            key: None,
        });
        self.next_id += 1;
    }

    /// Events at the front that need not wait go out (all at the end).
    fn release(&mut self, out: &mut Vec<Event>, all: bool) {
        while let Some(h) = self.queue.front() {
            let due = all
                || self.queue.len() > MAX_HELD
                || h.ev.is_none()
                || h.until.is_none_or(|u| u <= self.now);
            if !due {
                break;
            }
            let Some(h) = self.queue.pop_front() else {
                break;
            };
            if let Some(k) = h.key {
                if self.waiting.get(&k) == Some(&h.id) {
                    self.waiting.remove(&k);
                }
            }
            let Some(mut ev) = h.ev else { continue };
            if let Event::Message(m) = &mut ev {
                // Only a connection with a twin can see a copy come late:
                // one without has no other point that saw this message.
                let linked = self.conns.get(&m.stream).is_some_and(|c| c.twin.is_some());
                if linked && !matches!(m.twin.as_deref(), Some(Twin::Also(_))) {
                    if let Some(k) = self.key(m) {
                        self.remember(k);
                    }
                }
            }
            if let Event::StreamOpen(o) = &ev {
                if let Some(c) = self.conns.get_mut(&o.stream) {
                    c.public = true;
                }
            }
            if let Event::StreamClosed { stream, .. } = &ev {
                self.forget(*stream);
            }
            out.push(ev);
        }
    }

    /// A message that goes out without its copy, remembered for a late one.
    fn remember(&mut self, k: Key) {
        let horizon = self.window.saturating_mul(RECENT_WINDOWS);
        while let Some(&(t, old)) = self.recent_order.front() {
            if self.recent_order.len() < MAX_HELD && t.add_nanos(horizon) > self.now {
                break;
            }
            self.recent_order.pop_front();
            if self.recent.get(&old) == Some(&t) {
                self.recent.remove(&old);
            }
        }
        self.recent.insert(k, self.now);
        self.recent_order.push_back((self.now, k));
    }

    /// A reported connection's close went out: it and its twin are done.
    fn forget(&mut self, stream: u64) {
        let Some(c) = self.conns.remove(&stream) else {
            return;
        };
        for d in 0..2 {
            self.seq0.remove(&(stream, d));
        }
        if let Some(t) = c.twin {
            if self.conns.get(&t).is_some_and(|t| t.closed) {
                self.conns.remove(&t);
                for d in 0..2 {
                    self.seq0.remove(&(t, d));
                }
            }
        }
    }
}

/// The connection at the other capture point that may hold message `m`'s
/// copy: its own connection's twin (for a copy moved onto the reported
/// connection, the reported one).
fn other_point(conns: &FxHashMap<u64, Conn>, m: &RawMessage) -> Option<u64> {
    match m.twin.as_deref() {
        Some(Twin::Only(_)) => Some(m.stream),
        _ => conns.get(&m.stream).and_then(|c| c.twin),
    }
}

#[cfg(test)]
mod tests {
    use super::Twins;
    use crate::analyzer::{Analyzer, AnalyzerConfig, MessageInfo, Notice, Output};
    use crate::capture::{ClockOffset, FileSource, FrameSource, Polled};
    use crate::flow::Opened;
    use crate::kafka::decode::Kind;
    use crate::pipeline::Event;
    use crate::vocab::{Direction, Timestamp};
    use std::collections::HashMap;
    use std::path::Path;

    /// A message by what both capture points see alike: client port,
    /// request or response, correlation id, size.
    type Id = (u16, bool, Option<i32>, i32);

    fn id(i: &MessageInfo) -> Id {
        (
            i.client.port(),
            i.kind == Kind::Request,
            i.correlation_id,
            i.length,
        )
    }

    /// What `files` read together give.
    struct Run {
        infos: Vec<MessageInfo>,
        clocks: Vec<ClockOffset>,
        /// Connections reported closed.
        closed: usize,
    }

    /// The messages of `files` read together, the clocks found and the
    /// connections closed.
    fn run(files: &[&str]) -> Option<Run> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/two-points");
        let paths: Vec<String> = (files.iter())
            .map(|f| dir.join(f).to_string_lossy().into_owned())
            .collect();
        if !paths.iter().all(|p| Path::new(p).exists()) {
            return None;
        }
        let mut src = FileSource::open_all(&paths, &crate::capture::InLine).expect("open");
        let mut cfg = AnalyzerConfig::default();
        cfg.pipeline.twin_window_ns = src.twin_window_ns();
        let mut a = Analyzer::new(cfg);
        let mut out = Vec::new();
        while let Ok(Polled::Frame(f)) = src.poll() {
            a.push(&f, &mut out);
        }
        a.finish(&mut out);
        let closed = (out.iter())
            .filter(|o| {
                matches!(
                    o.as_notice(),
                    Some(Notice::Stream(Event::StreamClosed { .. }))
                )
            })
            .count();
        let infos = (out.into_iter())
            .filter_map(|o| match o {
                Output::Message(m) => Some(m.info),
                _ => None,
            })
            .collect();
        Some(Run {
            infos,
            clocks: src.clocks().to_vec(),
            closed,
        })
    }

    fn opened(stream: u64, capture: u16, ms: i64) -> Event {
        Event::StreamOpen(Opened {
            stream,
            client: "10.0.0.1:40000".parse().expect("addr"),
            broker: "10.0.0.2:9092".parse().expect("addr"),
            frame: stream + 1,
            ts: Timestamp::new(100, 0).minus_nanos(-ms * 1_000_000),
            capture,
        })
    }

    /// Two captures' connections with the same endpoints whose SYNs carry
    /// other sequence numbers are two connections (the endpoints used
    /// again); with the same ones they are one, reported from the first
    /// capture.
    #[test]
    fn endpoints_used_again_are_not_one_connection() {
        for (isn, twins) in [(1000, false), (5000, true)] {
            let mut t = Twins::new(100_000_000);
            let mut out = Vec::new();
            t.start(0, Direction::ClientToBroker, 5000, true);
            t.start(1, Direction::ClientToBroker, isn, true);
            t.pass(&mut out, 0, Timestamp::new(100, 0));
            out.push(opened(0, 0, 0));
            out.push(opened(1, 1, 1));
            t.pass(&mut out, 0, Timestamp::new(100, 1_000_000));
            // Apart, each opening waits the window for a twin; one
            // connection, its opening goes at once.
            assert_eq!(out.len(), usize::from(twins), "{out:?}");
            t.finish(&mut out);
            let streams: Vec<u64> = (out.iter())
                .filter_map(|e| match e {
                    Event::StreamOpen(o) => Some(o.stream),
                    _ => None,
                })
                .collect();
            let want: &[u64] = if twins { &[0] } else { &[0, 1] };
            assert_eq!(streams, want, "isn {isn}");
        }
    }

    const CLIENT: &str = "e1-client-side.pcap";
    const BROKER: &str = "e1-broker-side.pcap";

    /// One run captured at two points (`captures/two-points`, recorded by
    /// `captures/record-e1-two-points.sh`:
    /// the broker side starts a second late, its clock 2.75 s ahead), read
    /// together in either order: the clock is found, each message is
    /// reported once, and the other point's times and latency are those
    /// the other capture gives read alone.
    #[test]
    fn two_capture_points_are_one_connection() {
        let Some(Run {
            infos: client,
            closed,
            ..
        }) = run(&[CLIENT])
        else {
            return;
        };
        assert_eq!(closed, 5, "the client side's connections");
        let broker = run(&[BROKER]).expect("broker side").infos;
        let by_id = |v: &[MessageInfo]| -> HashMap<Id, MessageInfo> {
            v.iter().map(|i| (id(i), i.clone())).collect()
        };
        let (client_ids, broker_ids) = (by_id(&client), by_id(&broker));
        assert_eq!(client_ids.len(), client.len(), "ids are unique");
        for (first, other, sign) in [(CLIENT, BROKER, 1), (BROKER, CLIENT, -1)] {
            let Run {
                infos: both,
                clocks,
                closed: both_closed,
            } = run(&[first, other]).expect("both");
            // Each connection closes once: the twin's close is not reported.
            assert_eq!(both_closed, closed, "{first} first");
            let [c] = clocks.as_slice() else {
                panic!("one clock: {clocks:?}")
            };
            assert_eq!((c.capture, c.against), (1, 0));
            let want = sign * 2_750_000_000;
            assert!((c.offset_ns - want).abs() < 20_000, "{c:?}");
            assert!(c.bound_ns < 20_000 && c.packets >= 100, "{c:?}");
            // Each message once: the client side saw them all.
            let mut ids: Vec<Id> = both.iter().map(id).collect();
            let mut want_ids: Vec<Id> = client.iter().map(id).collect();
            ids.sort_unstable();
            want_ids.sort_unstable();
            assert_eq!(ids, want_ids, "{first} first");
            let (mine, theirs) = if sign == 1 {
                (&client_ids, &broker_ids)
            } else {
                (&broker_ids, &client_ids)
            };
            let mut seen_both = 0;
            for i in &both {
                let Some(a) = &i.also else {
                    // Only where the other point did not see it (the
                    // broker side's late start).
                    continue;
                };
                seen_both += 1;
                let key = id(i);
                let (m, t) = (&mine[&key], &theirs[&key]);
                assert_eq!(i.ts, m.ts, "{key:?}");
                match (m.latency_ns, i.latency_ns) {
                    // A response whose request only the other point saw
                    // (reported on the connection from there): the
                    // exchange's latency is that point's, on one clock.
                    (None, Some(l)) => {
                        let theirs = t.latency_ns.expect("the other point's latency");
                        assert!(l.abs_diff(theirs) <= c.bound_ns, "{key:?}: {l} {theirs}");
                    }
                    (mine, l) => assert_eq!(l, mine, "{key:?}"),
                }
                assert_eq!(a.ts, t.ts.minus_nanos(c.offset_ns), "{key:?}");
                if i.kind == Kind::Response && a.latency_ns.is_some() {
                    assert_eq!(a.latency_ns, t.latency_ns, "{key:?}");
                }
            }
            // Every message the broker side saw (from its start) is seen
            // at both points: the first of a connection it joined
            // mid-stream too, whose copy waits for that side's framer.
            let common = broker_ids
                .keys()
                .filter(|k| client_ids.contains_key(k))
                .count();
            assert_eq!(common, broker.len(), "the broker side saw nothing new");
            assert_eq!(seen_both, common, "seen at both");
        }
    }
}
