//! Capture points: connections read from two captures ([`crate::twins`]),
//! their clocks, and latency as each point saw it.
//!
//! A message seen at two capture points carries the other point's frames
//! and times ([`MessageInfo::also`]); a response whose request the other
//! point saw too, that point's latency. The difference between the two
//! latencies of one exchange is the round trip between the points (the
//! client's point sees the request leave earlier and the response come
//! later by the network between them).

use super::hist::{LatencyHist, LatencyMs};
use crate::analyzer::MessageInfo;
use crate::capture::ClockOffset;
use crate::kafka::decode::Kind;
use rustc_hash::FxHashSet;
use serde::Serialize;

/// What the counter keeps.
#[derive(Clone, Debug, Default)]
pub struct Points {
    names: Vec<String>,
    clocks: Vec<ClockOffset>,
    streams: FxHashSet<u64>,
    max_streams: usize,
    messages: u64,
    first: LatencyHist,
    other: LatencyHist,
    between: LatencyHist,
}

/// A capture's clock against an earlier one's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockReport {
    /// The capture.
    pub capture: String,
    /// The capture it was measured against.
    pub against: String,
    /// `capture`'s clock less `against`'s, in seconds; its times are shown
    /// set back by it (on the first capture's clock).
    pub offset_s: f64,
    /// How far off `offset_s` can be, in seconds (half the round trip
    /// between the two points).
    pub bound_s: f64,
    /// Packets seen in both captures.
    pub packets: u64,
}

/// The capture points section of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointsReport {
    /// Clocks of the captures that share packets with an earlier one.
    pub clocks: Vec<ClockReport>,
    /// Connections seen at two capture points (reported once).
    pub connections: u64,
    /// Messages seen at both.
    pub messages: u64,
    /// Latency of the exchanges whose request and response both points
    /// saw, as the first capture point saw them (the captures' order on
    /// the command line).
    pub latency_first_ms: Option<LatencyMs>,
    /// The same exchanges as the other point saw them.
    pub latency_other_ms: Option<LatencyMs>,
    /// Per exchange, the difference between the two: the round trip
    /// between the points.
    pub between_ms: Option<LatencyMs>,
}

impl Points {
    /// Counting at most `max_streams` connections.
    pub fn new(max_streams: usize) -> Points {
        Points {
            max_streams,
            ..Points::default()
        }
    }

    /// The captures' names and the clocks found.
    pub fn set_clocks(&mut self, names: &[String], clocks: &[ClockOffset]) {
        self.names = names.to_vec();
        self.clocks = clocks.to_vec();
    }

    /// A message: counted when the other point saw it too.
    pub fn message(&mut self, i: &MessageInfo) {
        let Some(a) = &i.also else { return };
        self.messages += 1;
        if self.streams.len() < self.max_streams {
            self.streams.insert(i.stream);
        }
        if let (Kind::Response, Some(l1), Some(l2)) = (i.kind, i.latency_ns, a.latency_ns) {
            self.first.record(l1);
            self.other.record(l2);
            self.between.record(l1.abs_diff(l2));
        }
    }

    fn name(&self, c: u16) -> String {
        self.names
            .get(usize::from(c))
            .cloned()
            .unwrap_or_else(|| format!("capture {c}"))
    }

    /// The section; `None` when no clock was found and no message was seen twice.
    pub fn report(&self) -> Option<PointsReport> {
        if self.clocks.is_empty() && self.messages == 0 {
            return None;
        }
        Some(PointsReport {
            clocks: (self.clocks.iter())
                .map(|c| ClockReport {
                    capture: self.name(c.capture),
                    against: self.name(c.against),
                    offset_s: c.offset_ns as f64 / 1e9,
                    bound_s: c.bound_ns as f64 / 1e9,
                    packets: c.packets,
                })
                .collect(),
            connections: self.streams.len() as u64,
            messages: self.messages,
            latency_first_ms: self.first.summary(),
            latency_other_ms: self.other.summary(),
            between_ms: self.between.summary(),
        })
    }
}
