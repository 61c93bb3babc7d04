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
use super::report::{GenerationReport, GroupReport, HeartbeatMember};
use crate::analyzer::MessageInfo;
use crate::kafka::schema::ApiKey;
use crate::vocab::Timestamp;

/// A group's counters; its generations and KIP-848 members are kept as
/// they are reported (a generation's members in order, at most `max_list`).
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
    pub(super) generations: Vec<GenerationReport>,
    /// Per connection: the first JoinGroup request (frame, time) of the open round.
    rounds: BTreeMap<u64, (u64, Timestamp)>,
    /// KIP-848 members by member id.
    cgh: BTreeMap<String, HeartbeatMember>,
    /// Most items in each list.
    max_list: usize,
}

impl GroupAcc {
    /// A group with nothing counted, whose lists hold at most `max_list` items.
    pub(super) fn new(max_list: usize) -> GroupAcc {
        GroupAcc {
            max_list,
            ..GroupAcc::default()
        }
    }

    /// Counts group request `g` (api `api`, message `i`); gives the facts refused.
    pub(super) fn request(&mut self, api: i16, g: &GroupRequest, i: &MessageInfo) -> u64 {
        let (mut refused, max_list) = (0, self.max_list);
        match ApiKey(api) {
            ApiKey::JOIN_GROUP => {
                self.joins += 1;
                keep_first(&mut self.protocol_type, &g.protocol_type);
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
            ApiKey::HEARTBEAT => self.heartbeats += 1,
            ApiKey::LEAVE_GROUP => self.leaves += 1,
            ApiKey::SYNC_GROUP => self.syncs += 1,
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
    ) -> u64 {
        match ApiKey(api) {
            ApiKey::JOIN_GROUP if r.error == 0 => self.joined(r, i),
            ApiKey::SYNC_GROUP if r.error == 0 => {
                self.synced(g, r, i);
                0
            }
            ApiKey::CONSUMER_GROUP_HEARTBEAT => self.heartbeat(g, r, i),
            _ => 0,
        }
    }

    /// A member joined: its generation, made when new, and the members.
    fn joined(&mut self, r: &GroupResponse, i: &MessageInfo) -> u64 {
        let Some(gen) = r.generation else { return 0 };
        let max_list = self.max_list;
        keep_first(&mut self.protocol_type, &r.protocol_type);
        let round = self.rounds.get(&i.stream).map(|x| x.0);
        let pos = self
            .generations
            .iter()
            .rposition(|x| x.generation_id == gen);
        let mut refused = 0;
        let e = match pos {
            Some(p) => self.generations.get_mut(p),
            None if self.generations.len() < max_list => {
                self.generations.push(GenerationReport {
                    generation_id: gen,
                    protocol_name: None,
                    leader: None,
                    members: Vec::new(),
                    listed_members: 0,
                    ts: i.ts.as_f64(),
                    join_request_frame: round,
                    join_response_frame: i.frame,
                    sync_response_frames: Vec::new(),
                    rebalance_ms: None,
                });
                self.generations.last_mut()
            }
            None => {
                refused += 1;
                None
            }
        };
        if let Some(e) = e {
            keep_first(&mut e.protocol_name, &r.protocol_name);
            keep_first(&mut e.leader, &r.leader);
            e.listed_members = e.listed_members.max(r.members.len() as u64);
            if let Some(mid) = &r.member_id {
                if let (Err(at), true) = (e.members.binary_search(mid), e.members.len() < max_list)
                {
                    e.members.insert(at, mid.clone());
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
    fn synced(&mut self, g: &GroupRequest, r: &GroupResponse, i: &MessageInfo) {
        keep_first(&mut self.protocol_type, &r.protocol_type);
        let started = self.rounds.remove(&i.stream);
        let gen = g.generation;
        let e = self
            .generations
            .iter_mut()
            .rev()
            .find(|x| Some(x.generation_id) == gen);
        if let Some(e) = e {
            if e.sync_response_frames.len() < self.max_list {
                e.sync_response_frames.push(i.frame);
            }
            if let Some((_, t0)) = started {
                let ms = i.first_ts.nanos_since(t0) as f64 / 1e6;
                e.rebalance_ms = Some(e.rebalance_ms.map_or(ms, |x| x.max(ms)));
            }
        }
    }

    /// A KIP-848 heartbeat answered: the member's epochs and assignment.
    fn heartbeat(&mut self, g: &GroupRequest, r: &GroupResponse, i: &MessageInfo) -> u64 {
        let max_list = self.max_list;
        let mid = r
            .member_id
            .clone()
            .or_else(|| g.member_id.clone())
            .unwrap_or_default();
        if self.cgh.len() >= max_list && !self.cgh.contains_key(&mid) {
            return 1;
        }
        let h = self
            .cgh
            .entry(mid)
            .or_insert_with_key(|mid| HeartbeatMember {
                member_id: mid.clone(),
                epochs: Vec::new(),
                assignment: None,
                heartbeats: 0,
                first_frame: i.frame,
                last_frame: i.frame,
            });
        h.heartbeats += 1;
        h.last_frame = i.frame;
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
            generations: self.generations.clone(),
            heartbeat_members: self.cgh.values().cloned().collect(),
        }
    }
}

/// Sets `v` from `first` unless it holds a value already (the first message that names one).
fn keep_first(v: &mut Option<String>, first: &Option<String>) {
    if v.is_none() {
        v.clone_from(first);
    }
}
