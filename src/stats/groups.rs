//! Consumer groups: joins, syncs, heartbeats and leaves per group, its
//! generations (who led, which members, how long the rebalance took) and its
//! KIP-848 heartbeat members, counted from the group requests and the
//! responses that answer them.
//!
//! Invariants: every list of a group holds at most `max_list` items; what a
//! full list refuses is returned by [`GroupAcc::request`] and
//! [`GroupAcc::response`], for [`super::Overflow::groups`].

use std::collections::{BTreeMap, BTreeSet};

use super::by_label;
use super::facts::{GroupRequest, GroupResponse};
use super::report::{GenerationReport, GroupReport, HeartbeatMember, TopicPartitions};
use crate::analyzer::MessageInfo;
use crate::vocab::Timestamp;

/// One generation of a group, from its JoinGroup responses and SyncGroup answers.
#[derive(Debug, Default)]
pub(super) struct GenerationAcc {
    generation_id: i32,
    protocol_name: Option<String>,
    leader: Option<String>,
    members: BTreeSet<String>,
    listed: u64,
    /// The first JoinGroup response's time, epoch seconds.
    pub(super) ts: f64,
    join_request_frame: Option<u64>,
    pub(super) join_response_frame: u64,
    sync_frames: Vec<u64>,
    rebalance_ns: Option<u64>,
}

/// A KIP-848 member, from its ConsumerGroupHeartbeat responses.
#[derive(Debug, Default)]
struct HeartbeatAcc {
    epochs: Vec<i32>,
    assignment: Option<Vec<(String, Vec<i32>)>>,
    heartbeats: u64,
    first: u64,
    last: u64,
}

/// A group's counters.
#[derive(Debug, Default)]
pub(super) struct GroupAcc {
    protocol_type: Option<String>,
    protocols: BTreeSet<String>,
    members: BTreeSet<String>,
    joins: u64,
    syncs: u64,
    heartbeats: u64,
    leaves: u64,
    /// Error code → count (labelled when reported).
    pub(super) errors: BTreeMap<i16, u64>,
    pub(super) generations: Vec<GenerationAcc>,
    /// Per connection: the first JoinGroup request (frame, time) of the open round.
    rounds: BTreeMap<u64, (u64, Timestamp)>,
    cgh: BTreeMap<String, HeartbeatAcc>,
}

impl GroupAcc {
    /// Counts group request `g` (api `api`, message `i`); gives the facts refused.
    pub(super) fn request(
        &mut self,
        api: i16,
        g: &GroupRequest,
        i: &MessageInfo,
        max_list: usize,
    ) -> u64 {
        let mut refused = 0;
        match api {
            11 => {
                self.joins += 1;
                if self.protocol_type.is_none() {
                    self.protocol_type.clone_from(&g.protocol_type);
                }
                for p in &g.protocols {
                    if self.protocols.len() < max_list {
                        self.protocols.insert(p.clone());
                    }
                }
                if !self.rounds.contains_key(&i.stream) {
                    if self.rounds.len() < max_list {
                        self.rounds.insert(i.stream, (i.frame, i.ts));
                    } else {
                        refused += 1;
                    }
                }
            }
            12 => self.heartbeats += 1,
            13 => self.leaves += 1,
            14 => self.syncs += 1,
            _ => {}
        }
        if let Some(mid) = g.member_id.as_ref().filter(|m| !m.is_empty()) {
            if self.members.len() < max_list {
                self.members.insert(mid.clone());
            } else if !self.members.contains(mid) {
                refused += 1;
            }
        }
        refused
    }

    /// Counts response `r` (message `i`) to group request `g`; gives the facts refused.
    pub(super) fn response(
        &mut self,
        api: i16,
        g: &GroupRequest,
        r: &GroupResponse,
        i: &MessageInfo,
        max_list: usize,
    ) -> u64 {
        match api {
            11 if r.error == 0 => self.joined(r, i, max_list),
            14 if r.error == 0 => {
                self.synced(g, r, i, max_list);
                0
            }
            68 => self.heartbeat(g, r, i, max_list),
            _ => 0,
        }
    }

    /// A member joined: its generation, made when new, and the members.
    fn joined(&mut self, r: &GroupResponse, i: &MessageInfo, max_list: usize) -> u64 {
        let Some(gen) = r.generation else { return 0 };
        if self.protocol_type.is_none() {
            self.protocol_type.clone_from(&r.protocol_type);
        }
        let round = self.rounds.get(&i.stream).map(|x| x.0);
        let pos = self
            .generations
            .iter()
            .rposition(|x| x.generation_id == gen);
        let mut refused = 0;
        let e = match pos {
            Some(p) => self.generations.get_mut(p),
            None if self.generations.len() < max_list => {
                self.generations.push(GenerationAcc {
                    generation_id: gen,
                    ts: i.ts.as_f64(),
                    join_response_frame: i.frame,
                    join_request_frame: round,
                    ..GenerationAcc::default()
                });
                self.generations.last_mut()
            }
            None => {
                refused += 1;
                None
            }
        };
        if let Some(e) = e {
            if e.protocol_name.is_none() {
                e.protocol_name.clone_from(&r.protocol_name);
            }
            if e.leader.is_none() {
                e.leader.clone_from(&r.leader);
            }
            e.listed = e.listed.max(r.members.len() as u64);
            if let Some(mid) = &r.member_id {
                if e.members.len() < max_list {
                    e.members.insert(mid.clone());
                }
            }
        }
        if let Some(mid) = &r.member_id {
            if self.members.len() < max_list {
                self.members.insert(mid.clone());
            }
        }
        refused
    }

    /// A member synced: its generation's sync frames and the rebalance's length,
    /// from the connection's first JoinGroup request of the round.
    fn synced(&mut self, g: &GroupRequest, r: &GroupResponse, i: &MessageInfo, max_list: usize) {
        if self.protocol_type.is_none() {
            self.protocol_type.clone_from(&r.protocol_type);
        }
        let started = self.rounds.remove(&i.stream);
        let gen = g.generation;
        let e = self
            .generations
            .iter_mut()
            .rev()
            .find(|x| Some(x.generation_id) == gen);
        if let Some(e) = e {
            if e.sync_frames.len() < max_list {
                e.sync_frames.push(i.frame);
            }
            if let Some((_, t0)) = started {
                let ns = i.first_ts.nanos_since(t0);
                e.rebalance_ns = Some(e.rebalance_ns.map_or(ns, |x| x.max(ns)));
            }
        }
    }

    /// A KIP-848 heartbeat answered: the member's epochs and assignment.
    fn heartbeat(
        &mut self,
        g: &GroupRequest,
        r: &GroupResponse,
        i: &MessageInfo,
        max_list: usize,
    ) -> u64 {
        let mid = r
            .member_id
            .clone()
            .or_else(|| g.member_id.clone())
            .unwrap_or_default();
        if self.cgh.len() >= max_list && !self.cgh.contains_key(&mid) {
            return 1;
        }
        let h = self.cgh.entry(mid).or_insert_with(|| HeartbeatAcc {
            first: i.frame,
            ..HeartbeatAcc::default()
        });
        h.heartbeats += 1;
        h.last = i.frame;
        if let Some(ep) = r.member_epoch.filter(|_| r.error == 0) {
            if h.epochs.last() != Some(&ep) && h.epochs.len() < max_list {
                h.epochs.push(ep);
            }
        }
        if r.assignment.is_some() {
            h.assignment.clone_from(&r.assignment);
        }
        0
    }

    /// The report of group `id`.
    pub(super) fn report(&self, id: &str) -> GroupReport {
        GroupReport {
            group_id: id.to_string(),
            protocol_type: self.protocol_type.clone(),
            protocols: self.protocols.iter().cloned().collect(),
            members: self.members.iter().cloned().collect(),
            joins: self.joins,
            syncs: self.syncs,
            heartbeats: self.heartbeats,
            leaves: self.leaves,
            errors: by_label(&self.errors),
            generations: self.generations.iter().map(GenerationAcc::report).collect(),
            heartbeat_members: self.cgh.iter().map(|(mid, h)| h.report(mid)).collect(),
        }
    }
}

impl GenerationAcc {
    /// The generation's report.
    fn report(&self) -> GenerationReport {
        GenerationReport {
            generation_id: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone(),
            members: self.members.iter().cloned().collect(),
            listed_members: self.listed,
            ts: self.ts,
            join_request_frame: self.join_request_frame,
            join_response_frame: self.join_response_frame,
            sync_response_frames: self.sync_frames.clone(),
            rebalance_ms: self.rebalance_ns.map(|n| n as f64 / 1e6),
        }
    }
}

impl HeartbeatAcc {
    /// The report of member `mid`.
    fn report(&self, mid: &str) -> HeartbeatMember {
        let parts = |a: &Vec<(String, Vec<i32>)>| {
            let each = a.iter().map(|(t, p)| TopicPartitions {
                topic: t.clone(),
                partitions: p.clone(),
            });
            each.collect()
        };
        HeartbeatMember {
            member_id: mid.to_string(),
            epochs: self.epochs.clone(),
            assignment: self.assignment.as_ref().map(parts),
            heartbeats: self.heartbeats,
            first_frame: self.first,
            last_frame: self.last,
        }
    }
}
