//! Facts the stats read from a decoded field tree: errors with the topic and
//! partition they belong to, record sets (batches, records, codecs, sizes),
//! consumer-group fields and the client software an ApiVersions request names.
//!
//! Invariants: reading only, never decoding; every lookup is by node name and
//! value type, so a malformed or partial tree yields fewer facts, never a panic.
//! The error walk visits exactly the nodes `analyzer::response_facts` counts
//! (every `*ErrorCode` with a non-zero int16 value in the body: both ask
//! [`error_code`]), so the per-API error counts here always equal the JSONL
//! `error_codes`.

use std::borrow::Cow;
use std::sync::Arc;

use super::lag::{FetchAnswer, Lag, TopicId, TopicMemo};
use super::report::TopicPartitions;
use crate::kafka::decode::{Decoded, ScanFacts, ScanPlace, ScanSet, ScanTopic};
use crate::kafka::records::{stored_crc, BatchHead, SetCounts};
use crate::kafka::tree::{ByteSource, Node, Value};
use crate::topics::TopicNames;

/// The message body: the root's child typed `struct` (as `Decoded::body`).
pub(crate) fn body(root: &Node) -> Option<&Node> {
    root.children.iter().find(|n| n.ty == "struct")
}

/// What `f` finds at the nodes of `root`'s body, in tree order: `f` is
/// given each node with the chain of its ancestors (nearest last).
fn in_body<'a, T>(root: &'a Node, mut f: impl FnMut(&'a Node, &[&'a Node]) -> Option<T>) -> Vec<T> {
    fn walk<'a, T>(
        n: &'a Node,
        path: &mut Vec<&'a Node>,
        f: &mut dyn FnMut(&'a Node, &[&'a Node]) -> Option<T>,
        out: &mut Vec<T>,
    ) {
        out.extend(f(n, path));
        path.push(n);
        for c in &n.children {
            walk(c, path, f, out);
        }
        path.pop();
    }
    let mut out = Vec::new();
    if let Some(b) = body(root) {
        walk(b, &mut Vec::new(), &mut f, &mut out);
    }
    out
}

/// A child's string value.
pub(crate) fn str_child<'a>(n: &'a Node, name: &str) -> Option<&'a str> {
    match &n.child(name)?.value {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

/// A child's integer value, when it fits a `T`.
pub(crate) fn int_child<T: TryFrom<i64>>(n: &Node, name: &str) -> Option<T> {
    let v = match n.child(name)?.value {
        Value::Int(v) => v,
        Value::Uint(v) => i64::try_from(v).ok()?,
        _ => return None,
    };
    T::try_from(v).ok()
}

/// The elements of an array node (children named `X[i]`).
pub(crate) fn elements(arr: &Node) -> impl Iterator<Item = &Node> {
    arr.children.iter().filter(|c| c.name.ends_with(']'))
}

/// What `f` reads from each element of `n`'s array child `name` (none without it).
fn list_of<T>(n: &Node, name: &str, f: impl FnMut(&Node) -> Option<T>) -> Vec<T> {
    n.child(name)
        .map(|a| elements(a).filter_map(f).collect())
        .unwrap_or_default()
}

/// The code of an `*ErrorCode` node, when it is a non-zero int16: an error
/// the per-API counts and the JSONL `error_codes` hold.
pub(crate) fn error_code(n: &Node) -> Option<i16> {
    match n.value {
        Value::Int(v) if v != 0 && n.name.ends_with("ErrorCode") => i16::try_from(v).ok(),
        _ => None,
    }
}

/// Where a node sits: the topic and partition of the nearest enclosing
/// element that names them (siblings first, then each ancestor's children).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) topic: Option<String>,
    pub(crate) partition: Option<i32>,
}

// The names the summary scan marks too (`Marks::PLACE_TOPIC`, `PLACE_PARTITION`).
use crate::kafka::schema::{
    ApiKey, PLACED_INT_APIS, PLACED_INT_NAMES, PLACE_PARTITION_NAMES as PARTITION_NAMES,
    PLACE_TOPIC_NAMES as TOPIC_NAMES,
};

/// The topic and partition of a node whose ancestors are `path` (nearest last).
/// An array names nothing: its children are its elements, never read here
/// (reading them would make placing every field of a large array quadratic).
pub(crate) fn place(path: &[&Node], topics: &TopicNames) -> Place {
    let mut p = Place::default();
    for anc in path.iter().rev().filter(|a| !a.ty.starts_with("[]")) {
        if p.partition.is_none() {
            p.partition = anc.children.iter().find_map(|c| match c.value {
                Value::Int(v) if PARTITION_NAMES.contains(&&*c.name) => i32::try_from(v).ok(),
                _ => None,
            });
        }
        if p.topic.is_none() {
            p.topic = topic_of(anc, topics);
        }
        if p.topic.is_some() {
            break;
        }
    }
    p
}

/// The topic an element names: a non-empty name string, else its `TopicId`
/// (the learned name, or the id itself when the capture never named it).
fn topic_of(n: &Node, topics: &TopicNames) -> Option<String> {
    let by_name = n.children.iter().find_map(|c| match &c.value {
        Value::Str(s) if TOPIC_NAMES.contains(&&*c.name) && !s.is_empty() => Some(s.clone()),
        _ => None,
    });
    by_name.or_else(|| {
        n.children.iter().find_map(|c| match &c.value {
            Value::Uuid(u) if c.name == "TopicId" && *u != [0; 16] => {
                Some(topics.label(u).into_owned())
            }
            _ => None,
        })
    })
}

/// One non-zero error code found in a response body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ErrorAt {
    pub(crate) code: i16,
    pub(crate) place: Place,
    /// Inside an element of the body (not a top-level field of the response).
    pub(crate) nested: bool,
}

/// Every non-zero `*ErrorCode` of a response, with its place.
pub(crate) fn errors(root: &Node, topics: &TopicNames) -> Vec<ErrorAt> {
    in_body(root, |n, path| {
        Some(ErrorAt {
            code: error_code(n)?,
            place: place(path, topics),
            nested: path.len() > 1,
        })
    })
}

/// A record-level error of a Produce response (KIP-467).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RecordError {
    pub(crate) place: Place,
    pub(crate) batch_index: i32,
    pub(crate) message: Option<String>,
}

/// Every `BatchIndex` (+ `BatchIndexErrorMessage`) of a response.
pub(crate) fn record_errors(root: &Node, topics: &TopicNames) -> Vec<RecordError> {
    in_body(root, |n, path| {
        let batch_index = int_child(n, "BatchIndex")?;
        let mut full = path.to_vec();
        full.push(n);
        Some(RecordError {
            place: place(&full, topics),
            batch_index,
            message: str_child(n, "BatchIndexErrorMessage").map(str::to_string),
        })
    })
}

/// What one `records` field held.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SetFacts<'a> {
    /// Its topic (borrowed from the message when it names it).
    pub(crate) topic: Option<Cow<'a, str>>,
    /// Its partition.
    pub(crate) partition: Option<i32>,
    /// Bytes of the record set (the field without its length prefix).
    pub(crate) bytes: u64,
    /// Its batches (RecordBatches plus top-level legacy messages), records
    /// (legacy: leaf messages), codecs, sizes and batch headers (borrowed
    /// from the summary scan when it counted them).
    pub(crate) counts: Counts<'a>,
}

/// A record set's counts: the summary scan's, borrowed, or counted from its
/// nodes. The counted ones are boxed: a set's facts go by value to each
/// counter, and with the counts in place they were 184 bytes to copy.
#[derive(Clone, Debug)]
pub(crate) enum Counts<'a> {
    /// The scan's.
    Borrowed(&'a SetCounts),
    /// Counted from the set's nodes.
    Owned(Box<SetCounts>),
}

/// Counts are equal by what they count, borrowed or not.
impl PartialEq for Counts<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl std::ops::Deref for Counts<'_> {
    type Target = SetCounts;

    fn deref(&self) -> &SetCounts {
        match self {
            Counts::Borrowed(c) => c,
            Counts::Owned(c) => c,
        }
    }
}

/// Every record set (`records`-typed field) of a message, with its place.
pub(crate) fn record_sets(d: &Decoded, topics: &TopicNames) -> Vec<SetFacts<'static>> {
    in_body(&d.root, |n, path| {
        if n.ty != "records" || n.source != 0 {
            return None;
        }
        let prefix = n.child("length").map_or(0, |l| l.length);
        let p = place(path, topics);
        Some(SetFacts {
            topic: p.topic.map(Cow::Owned),
            partition: p.partition,
            bytes: n.length.saturating_sub(prefix) as u64,
            counts: Counts::Owned(Box::new(set_counts(&n.children, &d.sources))),
        })
    })
}

/// The counts of one record set: its batch and legacy message nodes `kids`
/// (other nodes are skipped) and the byte sources of the message.
fn set_counts(kids: &[Node], sources: &[ByteSource]) -> SetCounts {
    let mut f = SetCounts::default();
    for c in kids {
        let codec = match &*c.name {
            "RecordBatch" if c.ty == "v2" => {
                f.records += int_child(c, "recordsCount").unwrap_or(0);
                f.heads.push(batch_head(c));
                int_child::<i64>(c, "attributes")
            }
            name if name.starts_with("Message[") => {
                f.records += leaves(c);
                // A top-level legacy message's offset is its last one (a
                // v1 wrapper carries its last inner message's).
                f.heads.push(BatchHead {
                    base_offset: int_child(c, "offset").unwrap_or(-1),
                    max_timestamp: int_child(c, "timestamp").unwrap_or(-1),
                    producer_id: -1,
                    producer_epoch: -1,
                    base_sequence: -1,
                    crc: c.child("crc").and_then(stored_crc).unwrap_or(0),
                    records: i32::try_from(leaves(c)).unwrap_or(i32::MAX),
                    bytes: c.length as u64,
                    ..BatchHead::default()
                });
                int_child::<i64>(c, "attributes")
            }
            "partial batch" | "partial message" => {
                f.partial += 1;
                continue;
            }
            _ => continue,
        };
        f.batches += 1;
        let code = codec.map_or(0, |a| (a & 0x07) as u8);
        f.codecs.add(code, 1);
        if code == 0 {
            f.plain_bytes += c.length as u64;
        }
        // Top-level decompressed sources whose compressed bytes lie in this batch.
        for s in sources.iter().filter(|s| {
            s.parent == c.source && s.parent_offset >= c.offset && s.parent_offset < c.end()
        }) {
            f.compressed += s.parent_length as u64;
            f.decompressed += s.len as u64;
        }
    }
    f
}

/// The header facts of a v2 `RecordBatch` node (as the record walk reads them).
fn batch_head(c: &Node) -> BatchHead {
    BatchHead {
        base_offset: int_child(c, "baseOffset").unwrap_or(-1),
        last_offset_delta: int_child(c, "lastOffsetDelta").unwrap_or(0),
        max_timestamp: int_child(c, "maxTimestamp").unwrap_or(-1),
        attributes: int_child(c, "attributes").unwrap_or(0),
        producer_id: int_child(c, "producerId").unwrap_or(-1),
        producer_epoch: int_child(c, "producerEpoch").unwrap_or(-1),
        base_sequence: int_child(c, "baseSequence").unwrap_or(-1),
        crc: c.child("crc").and_then(stored_crc).unwrap_or(0),
        records: int_child(c, "recordsCount").unwrap_or(0),
        bytes: c.length as u64,
    }
}

/// A topic of the summary scan: its name, borrowed, or its id resolved as
/// [`place`] does.
fn scanned_topic<'a>(t: &'a ScanTopic, topics: &'a TopicNames) -> Cow<'a, str> {
    match t {
        ScanTopic::Name(n) => Cow::Borrowed(n),
        ScanTopic::Id(u) => topics.label(u),
    }
}

/// A place of the summary scan, with topic ids resolved as [`place`] does.
fn scanned_place(p: &ScanPlace, topics: &TopicNames) -> Place {
    Place {
        topic: p
            .topic
            .as_ref()
            .map(|t| scanned_topic(t, topics).into_owned()),
        partition: p.partition,
    }
}

/// As [`errors`], for a message read by the summary scan.
pub(crate) fn scanned_errors(x: &ScanFacts, topics: &TopicNames) -> Vec<ErrorAt> {
    x.errors
        .iter()
        .map(|e| ErrorAt {
            code: e.code,
            place: scanned_place(&e.place, topics),
            nested: e.nested,
        })
        .collect()
}

/// As [`record_sets`], for a message read by the summary scan: topic names
/// borrowed from the scan's facts (the tests compare both; `Stats` takes
/// them one at a time, [`each_set`]).
#[cfg(test)]
pub(crate) fn scanned_sets<'a>(x: &'a ScanFacts, topics: &'a TopicNames) -> Vec<SetFacts<'a>> {
    x.sets.iter().map(|s| scanned_set(s, x, topics)).collect()
}

/// The facts of one record set of the summary scan (`x` holds it).
fn scanned_set<'a>(s: &'a ScanSet, x: &'a ScanFacts, topics: &'a TopicNames) -> SetFacts<'a> {
    SetFacts {
        topic: s.place.topic.as_ref().map(|t| scanned_topic(t, topics)),
        partition: s.place.partition,
        bytes: s.bytes as u64,
        counts: match &s.counts {
            Some(c) => Counts::Borrowed(c),
            None => Counts::Owned(Box::new(set_counts(&s.nodes, &x.sources))),
        },
    }
}

/// Each record set of a message, in order, from its summary scan (without
/// a vector of them) or its tree ([`record_sets`]).
pub(crate) fn each_set<'d>(
    d: &'d Decoded,
    topics: &'d TopicNames,
    mut f: impl FnMut(SetFacts<'d>),
) {
    match &d.facts {
        Some(x) => x.sets.iter().for_each(|s| f(scanned_set(s, x, topics))),
        None => record_sets(d, topics).into_iter().for_each(f),
    }
}

/// A placed integer (`schema::PLACED_INT_NAMES`: `FetchOffset`,
/// `HighWatermark`, …) of a message, with its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IntAt<'a> {
    pub(crate) name: &'a str,
    pub(crate) value: i64,
    pub(crate) topic: Option<Cow<'a, str>>,
    pub(crate) partition: Option<i32>,
}

/// Each placed integer of a message of `schema::PLACED_INT_APIS`, in order,
/// from its summary scan or its tree (fields of the body, not inside a
/// tagged field's entry, as the scan takes them).
pub(crate) fn each_int<'d>(d: &'d Decoded, topics: &'d TopicNames, mut f: impl FnMut(IntAt<'d>)) {
    if let Some(x) = &d.facts {
        for n in &x.ints {
            f(IntAt {
                name: n.name,
                value: n.value,
                topic: n.place.topic.as_ref().map(|t| scanned_topic(t, topics)),
                partition: n.place.partition,
            });
        }
        return;
    }
    if !d
        .api_key
        .is_some_and(|k| PLACED_INT_APIS.contains(&ApiKey(k)))
    {
        return;
    }
    let found = in_body(&d.root, |n, path| {
        let Value::Int(value) = n.value else {
            return None;
        };
        if !PLACED_INT_NAMES.contains(&&*n.name) || path.iter().any(|a| a.name == "tagged_fields") {
            return None;
        }
        let p = place(path, topics);
        Some(IntAt {
            name: &n.name,
            value,
            topic: p.topic.map(Cow::Owned),
            partition: p.partition,
        })
    });
    found.into_iter().for_each(f);
}

/// The partitions a Fetch response answers, for consumer lag. Made from
/// the response's placed integers ([`FetchAnswers::new`]); its errors and
/// record sets are placed in them as `Stats` counts those
/// ([`FetchAnswers::error`], [`FetchAnswers::set`]), not in walks of their own.
#[derive(Debug, Default)]
pub(crate) struct FetchAnswers {
    list: Vec<FetchAnswer>,
    /// Positions in `list` in (topic, partition) order, stable: the last of
    /// a partition answered twice is the last of its run.
    index: Vec<usize>,
}

impl FetchAnswers {
    /// Each `HighWatermark` opens an answer at its place, the
    /// `LastStableOffset` and `LogStartOffset` at the same place fill it (a
    /// partition's `HighWatermark` comes first in its struct). A place
    /// without a topic takes `fallback` (the request's one topic); topics are
    /// interned by `lag` (a topic past its cap answers nothing).
    pub(crate) fn new<'d>(
        d: &'d Decoded,
        topics: &'d TopicNames,
        fallback: Option<&'d str>,
        lag: &mut Lag,
    ) -> FetchAnswers {
        // Three integers a partition, in the usual response.
        let ints = d.facts.as_ref().map_or(0, |x| x.ints.len());
        let mut list: Vec<FetchAnswer> = Vec::with_capacity(ints.div_ceil(3));
        let mut memo = TopicMemo::default();
        each_int(d, topics, |n| {
            let Some(partition) = n.partition else { return };
            let last = list.last_mut().filter(|a| a.partition == partition);
            if n.name != "HighWatermark" && last.is_none() {
                return;
            }
            let topic = n.topic.or(fallback.map(Cow::Borrowed));
            let Some(topic) = topic.and_then(|t| memo.topic(lag, &t)) else {
                return;
            };
            match n.name {
                "HighWatermark" => list.push(FetchAnswer {
                    topic,
                    partition,
                    error: 0,
                    high_watermark: n.value,
                    last_stable_offset: -1,
                    log_start_offset: -1,
                    last_offset: None,
                    records: 0,
                }),
                name => {
                    if let Some(a) = list.last_mut().filter(|a| a.topic == topic) {
                        match name {
                            "LastStableOffset" => a.last_stable_offset = n.value,
                            "LogStartOffset" => a.log_start_offset = n.value,
                            _ => {}
                        }
                    }
                }
            }
        });
        // Errors and record sets find their partition's answer by binary
        // search: a response may hold thousands.
        let mut index: Vec<usize> = (0..list.len()).collect();
        let key = |i: usize| list.get(i).map(|a| (a.topic, a.partition));
        index.sort_by_key(|&i| key(i));
        FetchAnswers { list, index }
    }

    /// The answers, in the response's order.
    pub(crate) fn list(&self) -> &[FetchAnswer] {
        &self.list
    }

    /// The answer of (`topic`, `partition`) (the last, if named twice).
    fn at(&mut self, topic: TopicId, partition: i32) -> Option<&mut FetchAnswer> {
        let list = &self.list;
        let end = self.index.partition_point(|&i| {
            list.get(i)
                .is_some_and(|a| (a.topic, a.partition) <= (topic, partition))
        });
        let i = *self.index.get(end.checked_sub(1)?)?;
        let a = self.list.get_mut(i)?;
        (a.topic == topic && a.partition == partition).then_some(a)
    }

    /// A non-zero error `code` at (`topic`, `partition`).
    pub(crate) fn error(&mut self, topic: TopicId, partition: i32, code: i16) {
        if let Some(a) = self.at(topic, partition) {
            a.error = code;
        }
    }

    /// A record set of (`topic`, `partition`) with `counts`.
    pub(crate) fn set(&mut self, topic: TopicId, partition: i32, counts: &SetCounts) {
        if let Some(a) = self.at(topic, partition) {
            a.records += counts.records;
            a.last_offset = counts.heads.iter().map(BatchHead::last_offset).max();
        }
    }
}

/// Leaf messages of a legacy message (a wrapper holds its inner messages).
fn leaves(n: &Node) -> u64 {
    fn inner(n: &Node) -> u64 {
        n.children
            .iter()
            .map(|c| {
                if c.name.starts_with("Message[") {
                    leaves(c)
                } else {
                    inner(c)
                }
            })
            .sum()
    }
    inner(n).max(1)
}

/// The one topic a request names (by name, or by id: learned name or the id
/// itself), if it names exactly one.
pub(crate) fn single_topic(d: &Decoded, topics: &TopicNames) -> Option<Arc<str>> {
    // Every non-empty name counts (a name listed twice is two); an id counts
    // unless it names a topic already counted.
    let mut names = d.topics.iter().filter(|t| !t.is_empty());
    let mut one: Option<Arc<str>> = names.next().cloned();
    if names.next().is_some() {
        return None;
    }
    for id in d.topic_ids.iter().filter(|u| **u != [0; 16]) {
        let t = topics.label(id);
        match &one {
            None => one = Some(t.as_ref().into()),
            Some(o) if **o == *t => {}
            Some(_) => return None,
        }
    }
    one
}

/// `ClientSoftwareName` and `ClientSoftwareVersion` of an ApiVersions v3+ request.
pub(crate) fn client_software(root: &Node) -> Option<(String, String)> {
    let b = body(root)?;
    let name = str_child(b, "ClientSoftwareName")?;
    let version = str_child(b, "ClientSoftwareVersion").unwrap_or("");
    Some((name.to_string(), version.to_string()))
}

/// The `Acks` of a Produce request.
pub(crate) fn acks(root: &Node) -> Option<i16> {
    int_child(body(root)?, "Acks")
}

/// The fields of a group request the stats follow.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct GroupRequest {
    pub(crate) group: String,
    pub(crate) member_id: Option<String>,
    pub(crate) generation: Option<i32>,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocols: Vec<String>,
    pub(crate) member_epoch: Option<i32>,
}

/// Group facts of a JoinGroup, Heartbeat, LeaveGroup, SyncGroup or
/// ConsumerGroupHeartbeat request.
pub(crate) fn group_request(root: &Node) -> Option<GroupRequest> {
    let b = body(root)?;
    let s = |n: &Node, name: &str| str_child(n, name).map(str::to_string);
    Some(GroupRequest {
        group: s(b, "GroupId")?,
        member_id: s(b, "MemberId"),
        generation: int_child(b, "GenerationId"),
        protocol_type: s(b, "ProtocolType"),
        protocols: list_of(b, "Protocols", |e| s(e, "Name")),
        member_epoch: int_child(b, "MemberEpoch"),
    })
}

/// The fields of a group response the stats follow.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct GroupResponse {
    pub(crate) error: i16,
    pub(crate) generation: Option<i32>,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader: Option<String>,
    pub(crate) member_id: Option<String>,
    /// Members listed (JoinGroup: only the leader's response lists them).
    pub(crate) members: Vec<String>,
    pub(crate) member_epoch: Option<i32>,
    /// ConsumerGroupHeartbeat: `Some` when the response carries an assignment.
    pub(crate) assignment: Option<Vec<TopicPartitions>>,
}

/// Group facts of a JoinGroup, SyncGroup or ConsumerGroupHeartbeat response.
pub(crate) fn group_response(root: &Node, topics: &TopicNames) -> Option<GroupResponse> {
    let b = body(root)?;
    let s = |name| {
        str_child(b, name)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let partitions = |p: &Node| match p.value {
        Value::Int(v) => i32::try_from(v).ok(),
        _ => None,
    };
    let assignment = b.child("Assignment").filter(|a| a.value != Value::Null);
    Some(GroupResponse {
        error: int_child(b, "ErrorCode").unwrap_or(0),
        generation: int_child(b, "GenerationId"),
        protocol_type: s("ProtocolType"),
        protocol_name: s("ProtocolName"),
        leader: s("Leader"),
        member_id: s("MemberId"),
        members: list_of(b, "Members", |e| {
            str_child(e, "MemberId").map(str::to_string)
        }),
        member_epoch: int_child(b, "MemberEpoch"),
        assignment: assignment.map(|a| {
            list_of(a, "TopicPartitions", |tp| {
                Some(TopicPartitions {
                    topic: topic_of(tp, topics).unwrap_or_default(),
                    partitions: list_of(tp, "Partitions", partitions),
                })
            })
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::schema::ApiKey;
    use crate::kafka::tree::{format_uuid, Role};

    fn n(name: &str, ty: &str, value: Value) -> Node {
        Node::new(
            name.to_string(),
            ty.to_string(),
            value,
            0,
            0,
            Role::ResponseBody,
        )
    }

    fn with(mut p: Node, kids: Vec<Node>) -> Node {
        p.children = kids;
        p
    }

    #[test]
    fn errors_take_the_nearest_topic_and_partition() {
        // ProduceResponse { Responses [ { Name "t", PartitionResponses [ { Index 3, ErrorCode 6 } ] } ] }
        let part = with(
            n(
                "PartitionProduceResponse[0]",
                "PartitionProduceResponse",
                Value::None,
            ),
            vec![
                n("Index", "int32", Value::Int(3)),
                n("ErrorCode", "int16", Value::Int(6)),
            ],
        );
        let topic = with(
            n(
                "TopicProduceResponse[0]",
                "TopicProduceResponse",
                Value::None,
            ),
            vec![
                n("Name", "string", Value::Str("t".into())),
                with(n("PartitionResponses", "[]", Value::None), vec![part]),
            ],
        );
        let root = with(
            n("ProduceResponse", "message v9", Value::None),
            vec![with(
                n("ProduceResponse", "struct", Value::None),
                vec![
                    n("ErrorCode", "int16", Value::Int(0)),
                    with(n("Responses", "[]", Value::None), vec![topic]),
                    n("ThrottleTimeMs", "int32", Value::Int(0)),
                ],
            )],
        );
        let e = errors(&root, &TopicNames::default());
        assert_eq!(
            e,
            vec![ErrorAt {
                code: 6,
                place: Place {
                    topic: Some("t".into()),
                    partition: Some(3)
                },
                nested: true,
            }]
        );
    }

    #[test]
    fn single_topic_counts_names_and_new_ids() {
        let mut topics = TopicNames::default();
        let (a, b) = ([1; 16], [2; 16]);
        let root = with(
            n("MetadataResponse", "message v12", Value::None),
            vec![with(
                n("MetadataResponse", "struct", Value::None),
                vec![with(
                    n("Topics", "[]", Value::None),
                    vec![with(
                        n("Topics[0]", "T", Value::None),
                        vec![
                            n("Name", "string", Value::Str("t".into())),
                            n("TopicId", "uuid", Value::Uuid(a)),
                        ],
                    )],
                )],
            )],
        );
        topics.learn(Some(ApiKey::METADATA), &root);
        let one = |names: &[&str], ids: &[[u8; 16]]| {
            let d = Decoded {
                kind: crate::kafka::decode::Kind::Request,
                api_key: Some(1),
                api_version: Some(13),
                correlation_id: Some(1),
                client_id: None,
                root: n("R", "message", Value::None),
                sources: Vec::new(),
                error: None,
                warning: None,
                topics: names.iter().map(|&s| s.into()).collect(),
                topic_ids: ids.to_vec(),
                facts: None,
            };
            single_topic(&d, &topics)
        };
        assert_eq!(one(&[], &[]), None);
        assert_eq!(one(&["t"], &[]).as_deref(), Some("t"));
        assert_eq!(one(&["", "t"], &[[0; 16]]).as_deref(), Some("t"));
        // A name listed twice is two names; an id naming a known one is not new.
        assert_eq!(one(&["t", "t"], &[]), None);
        assert_eq!(one(&["t"], &[a, a]).as_deref(), Some("t"));
        assert_eq!(one(&[], &[b, b]).as_deref(), Some(format_uuid(&b).as_str()));
        assert_eq!(one(&["t"], &[b]), None);
        assert_eq!(one(&["u"], &[a]), None);
    }

    #[test]
    fn unknown_topic_ids_show_as_uuids() {
        let t = with(
            n("T[0]", "T", Value::None),
            vec![
                n("TopicId", "uuid", Value::Uuid([1; 16])),
                n("ErrorCode", "int16", Value::Int(100)),
            ],
        );
        let root = with(
            n("R", "message", Value::None),
            vec![with(n("R", "struct", Value::None), vec![t])],
        );
        let e = errors(&root, &TopicNames::default());
        assert_eq!(
            e[0].place.topic.as_deref(),
            Some(format_uuid(&[1; 16]).as_str())
        );
        assert_eq!(e[0].place.partition, None);
    }
}
