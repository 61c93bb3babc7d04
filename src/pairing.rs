//! Pairing: matching each response to the request it answers.
//!
//! Place in the data path: framing → decode → **pairing** → exchanges. Kafka
//! answers requests on a connection in order, and every response echoes its
//! request's correlation id; the response itself does not say which API it
//! belongs to, so its api key and version come from the paired request.
//!
//! Invariants: per connection, at most `max_pending` requests wait for an
//! answer (beyond that the oldest is evicted, for the caller to report), so
//! memory follows what is in flight, never the capture's length. When a correlation id is
//! reused while an earlier request with it is still waiting, a response pairs
//! with the nearest earlier request (the latest one sent).

use crate::kafka::schema::ApiKey;
use crate::vocab::Timestamp;
use std::collections::VecDeque;

use rustc_hash::FxHashMap;

/// What a Fetch or ShareFetch request asks of its response's timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FetchAsk {
    /// `MaxWaitMs`: how long the broker may hold the response for data.
    pub max_wait_ms: i32,
    /// `MinBytes`: how much data ends that wait early.
    pub min_bytes: i32,
}

/// A request that waits for its response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRequest {
    /// Index of the request in the message sequence.
    pub index: u64,
    /// Its api key.
    pub api_key: ApiKey,
    /// Its api version.
    pub api_version: i16,
    /// The frame that completed it.
    pub frame: u64,
    /// What a Fetch or ShareFetch request asked its answer to wait for.
    pub wait: Option<FetchAsk>,
    /// The time of that frame.
    pub ts: Timestamp,
    /// When another capture point saw it complete (the connection read
    /// from two captures, [`crate::twins`]).
    pub also_ts: Option<Timestamp>,
}

/// The requests waiting with one correlation id, oldest first: nearly
/// always one, held inline (no allocation per request); `more` only when an
/// id is reused while its earlier request still waits. `first` is `None`
/// only when `more` is empty.
#[derive(Default)]
struct SameId {
    first: Option<PendingRequest>,
    more: Vec<PendingRequest>,
}

impl SameId {
    fn push(&mut self, p: PendingRequest) {
        match self.first {
            None => self.first = Some(p),
            Some(_) => self.more.push(p),
        }
    }

    /// The latest request.
    fn last(&self) -> Option<&PendingRequest> {
        self.more.last().or(self.first.as_ref())
    }

    fn iter(&self) -> impl Iterator<Item = &PendingRequest> {
        self.first.iter().chain(&self.more)
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Takes out the request `index`.
    fn remove(&mut self, index: u64) -> Option<PendingRequest> {
        if self.first.is_some_and(|p| p.index == index) {
            let next = (!self.more.is_empty()).then(|| self.more.remove(0));
            return std::mem::replace(&mut self.first, next);
        }
        let pos = self.more.iter().position(|p| p.index == index)?;
        Some(self.more.remove(pos))
    }
}

#[derive(Default)]
struct StreamPending {
    by_corr: FxHashMap<i32, SameId>,
    /// Arrival order, for evicting the oldest; may hold entries already answered.
    order: VecDeque<(i32, u64)>,
    live: usize,
    /// The latest requests that expect no response (Produce with acks=0), kept
    /// only so that a broker answering them anyway is still paired.
    optional: VecDeque<(i32, PendingRequest)>,
}

/// Requests without an expected response remembered per connection.
const OPTIONAL_PER_STREAM: usize = 64;

impl StreamPending {
    fn remove(&mut self, corr: i32, index: u64) -> Option<PendingRequest> {
        let list = self.by_corr.get_mut(&corr)?;
        let p = list.remove(index)?;
        if list.is_empty() {
            self.by_corr.remove(&corr);
        }
        self.live -= 1;
        Some(p)
    }
}

/// Per-connection tables of requests waiting for responses.
pub struct Pairer {
    max_pending: usize,
    streams: FxHashMap<u64, StreamPending>,
}

impl Pairer {
    /// A pairer remembering at most `max_pending` unanswered requests per connection.
    pub fn new(max_pending: usize) -> Pairer {
        Pairer {
            max_pending: max_pending.max(1),
            streams: FxHashMap::default(),
        }
    }

    /// Remembers a request that expects a response. Returns the request evicted to
    /// make room, if the connection already had `max_pending` waiting.
    pub fn request(
        &mut self,
        stream: u64,
        corr: i32,
        req: PendingRequest,
    ) -> Option<PendingRequest> {
        let max = self.max_pending;
        let st = self.streams.entry(stream).or_default();
        st.by_corr.entry(corr).or_default().push(req);
        st.order.push_back((corr, req.index));
        st.live += 1;
        let mut evicted = None;
        while st.live > max {
            let Some((c, i)) = st.order.pop_front() else {
                break;
            };
            evicted = st.remove(c, i).or(evicted);
        }
        // Answered requests leave stale entries in `order`; compact so it stays
        // proportional to what is in flight.
        if st.order.len() > 2 * st.live + 64 {
            let by_corr = &st.by_corr;
            st.order.retain(|(c, i)| {
                by_corr
                    .get(c)
                    .is_some_and(|l| l.iter().any(|p| p.index == *i))
            });
        }
        evicted
    }

    /// Remembers a request that expects no response (Produce with acks=0), in a
    /// small per-connection ring: never reported as unanswered, but paired if a
    /// broker answers it anyway.
    pub fn optional_request(&mut self, stream: u64, corr: i32, req: PendingRequest) {
        let st = self.streams.entry(stream).or_default();
        if st.optional.len() >= OPTIONAL_PER_STREAM {
            st.optional.pop_front();
        }
        st.optional.push_back((corr, req));
    }

    /// Takes the request a response with `corr` answers: the latest one sent with
    /// that id that expects a response, else the latest acks=0 request with it.
    pub fn response(&mut self, stream: u64, corr: i32) -> Option<PendingRequest> {
        let st = self.streams.get_mut(&stream)?;
        if let Some(index) = st
            .by_corr
            .get(&corr)
            .and_then(|l| l.last())
            .map(|p| p.index)
        {
            return st.remove(corr, index);
        }
        let pos = st.optional.iter().rposition(|(c, _)| *c == corr)?;
        st.optional.remove(pos).map(|(_, p)| p)
    }

    /// Forgets a closed connection; returns the requests never answered, oldest first.
    pub fn close(&mut self, stream: u64) -> Vec<PendingRequest> {
        let Some(st) = self.streams.remove(&stream) else {
            return Vec::new();
        };
        let mut left: Vec<PendingRequest> = st
            .by_corr
            .into_values()
            .flat_map(|l| l.first.into_iter().chain(l.more))
            .collect();
        left.sort_by_key(|p| p.index);
        left
    }

    /// Requests waiting over all connections.
    pub fn pending(&self) -> usize {
        self.streams.values().map(|s| s.live).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(index: u64) -> PendingRequest {
        PendingRequest {
            index,
            api_key: ApiKey::METADATA,
            api_version: 12,
            frame: index + 1,
            wait: None,
            ts: Timestamp::new(0, 0),
            also_ts: None,
        }
    }

    #[test]
    fn pairs_by_correlation_id_per_stream() {
        let mut p = Pairer::new(16);
        p.request(0, 7, req(0));
        p.request(1, 7, req(1));
        assert_eq!(p.response(1, 7).map(|r| r.index), Some(1));
        assert_eq!(p.response(1, 7), None);
        assert_eq!(p.response(0, 7).map(|r| r.index), Some(0));
        assert_eq!(p.pending(), 0);
    }

    #[test]
    fn reused_id_pairs_with_the_nearest_earlier_request() {
        let mut p = Pairer::new(16);
        p.request(0, 1, req(0));
        p.request(0, 1, req(5));
        assert_eq!(p.response(0, 1).map(|r| r.index), Some(5));
        assert_eq!(p.response(0, 1).map(|r| r.index), Some(0));
    }

    #[test]
    fn a_reused_id_keeps_its_requests_in_order_when_the_oldest_goes() {
        let mut p = Pairer::new(2);
        p.request(0, 1, req(0));
        p.request(0, 1, req(1));
        // The third evicts the oldest (held inline): the others move up.
        assert_eq!(p.request(0, 1, req(2)).map(|r| r.index), Some(0));
        assert_eq!(p.response(0, 1).map(|r| r.index), Some(2));
        p.request(0, 1, req(3));
        let left: Vec<u64> = p.close(0).iter().map(|r| r.index).collect();
        assert_eq!(left, [1, 3]);
        assert_eq!(p.pending(), 0);
    }

    #[test]
    fn acks0_requests_pair_when_answered_and_are_never_unanswered() {
        let mut p = Pairer::new(16);
        for i in 0..100 {
            p.optional_request(0, i as i32, req(i));
        }
        assert_eq!(p.pending(), 0);
        assert_eq!(p.response(0, 99).map(|r| r.index), Some(99));
        assert_eq!(p.response(0, 0), None, "only the latest few are kept");
        assert!(p.close(0).is_empty());
    }

    #[test]
    fn bounded_per_stream_and_order_stays_compact() {
        let mut p = Pairer::new(4);
        let evicted: Vec<u64> = (0..10)
            .filter_map(|i| p.request(0, i as i32, req(i)))
            .map(|r| r.index)
            .collect();
        assert_eq!(p.pending(), 4);
        assert_eq!(evicted, [0, 1, 2, 3, 4, 5]);
        assert_eq!(p.response(0, 0), None, "the oldest were evicted");
        assert_eq!(p.response(0, 9).map(|r| r.index), Some(9));
        // Many answered requests leave no growth behind.
        for i in 100..10_000u64 {
            p.request(0, i as i32, req(i));
            p.response(0, i as i32);
        }
        let st = p.streams.get(&0).expect("stream");
        assert!(st.order.len() <= 2 * st.live + 64, "{}", st.order.len());
        let left = p.close(0);
        assert_eq!(left.len(), 3);
        assert!(left.windows(2).all(|w| w[0].index < w[1].index));
    }
}
