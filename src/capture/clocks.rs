//! Clocks of captures read together: how far one capture's clock is from
//! another's, estimated from packets both captures saw.
//!
//! Place in the data path: before the merge. Two capture points on one
//! connection (a client host and its broker's host) see the same packets:
//! the same endpoints, sequence and acknowledgment numbers, flags and
//! payload length. For such a packet, `t_later − t_earlier` is the offset
//! between the two clocks plus the time the packet took from one point to
//! the other. As NTP does, the two directions of a connection cancel the
//! path: with `f` the smallest difference over packets one way and `b` the
//! smallest over packets the other way (the other sign), the offset is
//! `(f − b) / 2`, exact when the path takes as long both ways and never
//! further off than the half round trip `(f + b) / 2`, the bound reported.
//! When the capture that saw the packets first is the other one (the
//! differences are negative), the largest differences play that part.
//!
//! Invariants: pure (the reading is `source`'s); memory is bounded by the
//! packets wanted ([`ClockMatch::want`]), which the caller limits.

use super::Segment;
use crate::vocab::Timestamp;
use rustc_hash::FxHashMap;
use std::net::SocketAddr;

/// A packet as both capture points see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack: u32,
    len: u32,
    flags: u8,
}

impl Key {
    fn of(seg: &Segment) -> Key {
        let f = seg.flags;
        Key {
            src: seg.src,
            dst: seg.dst,
            seq: seg.seq,
            ack: seg.ack,
            len: (seg.payload.len() as u32).saturating_add(seg.payload_truncated_by),
            flags: u8::from(f.syn)
                | u8::from(f.fin) << 1
                | u8::from(f.rst) << 2
                | u8::from(f.ack) << 3,
        }
    }
}

/// Smallest and largest of a connection direction's differences.
#[derive(Clone, Copy, Debug)]
struct Range {
    min: i64,
    max: i64,
}

impl Range {
    fn add(r: &mut Option<Range>, d: i64) {
        match r {
            Some(r) => {
                r.min = r.min.min(d);
                r.max = r.max.max(d);
            }
            None => *r = Some(Range { min: d, max: d }),
        }
    }
}

/// One connection's differences: `fwd` for packets from its lower
/// endpoint, `t_wanted − t_found`; `back` for the others, `t_found − t_wanted`.
#[derive(Clone, Copy, Debug, Default)]
struct Spread {
    fwd: Option<Range>,
    back: Option<Range>,
}

/// What the packets in common say of one capture's clock against another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// The wanted capture's clock less the found one's, in nanoseconds.
    pub offset_ns: i64,
    /// How far off `offset_ns` can be: half the round trip between the
    /// two capture points, on the connection that gave the estimate.
    pub bound_ns: u64,
    /// Packets seen in both captures.
    pub packets: u64,
}

/// Packets of one capture looked for in another.
#[derive(Default)]
pub struct ClockMatch {
    wanted: FxHashMap<Key, Timestamp>,
    conns: FxHashMap<(SocketAddr, SocketAddr), Spread>,
    packets: u64,
}

impl ClockMatch {
    /// A packet of the capture whose clock is wanted; a copy of one already
    /// wanted (a retransmission) is not.
    pub fn want(&mut self, seg: &Segment, ts: Timestamp) {
        self.wanted.entry(Key::of(seg)).or_insert(ts);
    }

    /// Packets wanted and not yet found.
    pub fn wanted(&self) -> usize {
        self.wanted.len()
    }

    /// Packets found so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// A packet of the other capture: true when it is one wanted (each is
    /// found once, its first copy).
    pub fn find(&mut self, seg: &Segment, ts: Timestamp) -> bool {
        let Some(t) = self.wanted.remove(&Key::of(seg)) else {
            return false;
        };
        self.packets += 1;
        let d = t.signed_nanos_since(ts);
        let fwd = (seg.src.ip(), seg.src.port()) < (seg.dst.ip(), seg.dst.port());
        let key = if fwd {
            (seg.src, seg.dst)
        } else {
            (seg.dst, seg.src)
        };
        let s = self.conns.entry(key).or_default();
        if fwd {
            Range::add(&mut s.fwd, d);
        } else {
            Range::add(&mut s.back, d.saturating_neg());
        }
        true
    }

    /// The estimate from the connection whose packets bound it closest;
    /// `None` until some connection has packets found both ways.
    pub fn estimate(&self) -> Option<Estimate> {
        let best = (self.conns.values())
            .filter_map(|s| {
                let (f, b) = (s.fwd?, s.back?);
                let near = f.min.saturating_add(b.min);
                Some(if near >= 0 {
                    (near as u64 / 2, f.min / 2 - b.min / 2)
                } else {
                    let far = f.max.saturating_add(b.max);
                    (far.unsigned_abs() / 2, f.max / 2 - b.max / 2)
                })
            })
            .min_by_key(|&(bound, _)| bound)?;
        Some(Estimate {
            offset_ns: best.1,
            bound_ns: best.0,
            packets: self.packets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::TcpFlags;
    use bytes::Bytes;

    fn seg(from_client: bool, seq: u32, len: usize) -> Segment {
        let c: SocketAddr = "10.0.0.1:40000".parse().expect("addr");
        let b: SocketAddr = "10.0.0.2:9092".parse().expect("addr");
        let (src, dst) = if from_client { (c, b) } else { (b, c) };
        Segment {
            src,
            dst,
            seq,
            ack: 7,
            flags: TcpFlags {
                ack: true,
                ..TcpFlags::default()
            },
            payload: Bytes::from(vec![0; len]),
            payload_truncated_by: 0,
            capture: 0,
        }
    }

    fn at(ms: i64, us: i64) -> Timestamp {
        Timestamp::new(1000, 0).minus_nanos(-(ms * 1_000_000 + us * 1000))
    }

    /// Client host and broker host, the broker's clock 3 s ahead, 100 µs
    /// one way: the offset comes out exact and the bound is the one-way time.
    #[test]
    fn two_directions_cancel_the_path() {
        for broker_wanted in [true, false] {
            let mut m = ClockMatch::default();
            // (from client, seq, client time µs): the broker sees it 100 µs
            // later when the client sent it, 100 µs earlier otherwise.
            let pkts = [
                (true, 1, 0),
                (false, 1, 400),
                (true, 2, 900),
                (false, 2, 1500),
            ];
            let client = |c: bool, t: i64| at(0, t + if c { 0 } else { 100 });
            let broker = |c: bool, t: i64| at(3000, t + if c { 100 } else { 0 });
            for &(c, s, t) in &pkts {
                let w = if broker_wanted {
                    broker(c, t)
                } else {
                    client(c, t)
                };
                m.want(&seg(c, s, 10), w);
            }
            assert_eq!(m.wanted(), 4);
            for &(c, s, t) in &pkts {
                let f = if broker_wanted {
                    client(c, t)
                } else {
                    broker(c, t)
                };
                assert!(m.find(&seg(c, s, 10), f));
                assert!(!m.find(&seg(c, s, 10), f), "found twice");
            }
            let e = m.estimate().expect("estimate");
            let want = if broker_wanted {
                3_000_000_000
            } else {
                -3_000_000_000
            };
            assert_eq!(e.offset_ns, want, "broker wanted: {broker_wanted}");
            assert_eq!(e.bound_ns, 100_000);
            assert_eq!(e.packets, 4);
        }
    }

    /// One direction alone cannot tell the path from the offset.
    #[test]
    fn one_direction_gives_nothing() {
        let mut m = ClockMatch::default();
        m.want(&seg(true, 1, 10), at(5, 0));
        assert!(!m.find(&seg(true, 2, 10), at(0, 0)), "another packet");
        assert!(!m.find(&seg(true, 1, 11), at(0, 0)), "another length");
        assert!(m.find(&seg(true, 1, 10), at(0, 0)));
        assert_eq!(m.estimate(), None);
    }
}
