//! The display filter's fields read from messages' trees (`partition`,
//! `group`, `records` and field paths), end to end through `print -Y` and
//! `stats -Y`, on real captures: checked against `captures/wire_facts.py`'s
//! independent reading (`FILE.wire.tsv`) of b6, a consumer group lagging
//! behind a steady producer, and against what a1's recording script sent.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

fn repo(p: &str) -> String {
    format!("{}/../{p}", env!("CARGO_MANIFEST_DIR"))
}

/// A message as (client address, correlation id, kind).
type Key = (String, i64, String);

/// What `print CAP -Y FILTER` prints, as keys, in order.
fn printed(cap: &str, filter: &str, extra: &[&str]) -> Vec<Key> {
    let out = bin()
        .args(
            [
                &["print", cap, "--format", "jsonl", "-Y", filter][..],
                extra,
            ]
            .concat(),
        )
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{filter}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let m: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                m["client"].as_str().unwrap().to_string(),
                m["correlation_id"].as_i64().unwrap(),
                m["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn set(keys: Vec<Key>) -> BTreeSet<Key> {
    keys.into_iter().collect()
}

/// b6's `wire.tsv` rows by kind, connections named by their client address.
struct Wire {
    rows: Vec<Vec<String>>,
    clients: BTreeMap<String, String>,
}

impl Wire {
    fn read(name: &str) -> Option<(String, Wire)> {
        let cap = repo(&format!("captures/{name}"));
        let text = std::fs::read_to_string(format!("{cap}.wire.tsv")).ok()?;
        let rows: Vec<Vec<String>> = text
            .lines()
            .map(|l| l.split('\t').map(String::from).collect())
            .collect();
        let clients = rows
            .iter()
            .filter(|r| r[0] == "conn")
            .map(|r| (r[1].clone(), r[2].clone()))
            .collect();
        Some((cap, Wire { rows, clients }))
    }

    fn of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Vec<String>> + 'a {
        self.rows.iter().filter(move |r| r[0] == kind)
    }

    /// The message of row `r` (connection, correlation id) as `kind`.
    fn key(&self, r: &[String], kind: &str) -> Key {
        (
            self.clients[&r[1]].clone(),
            r[2].parse().unwrap(),
            kind.to_string(),
        )
    }
}

fn b6() -> Option<(String, Wire)> {
    let got = Wire::read("b6-consumer-lag.pcap");
    if got.is_none() {
        eprintln!("skipping: b6 or its wire.tsv missing");
    }
    got
}

#[test]
fn partition_matches_the_partitions_each_message_names() {
    let Some((cap, wire)) = b6() else { return };
    let partitions: BTreeSet<&str> = wire.of("fetchreq").map(|r| r[6].as_str()).collect();
    assert!(partitions.len() >= 3, "{partitions:?}");
    for p in partitions {
        // Fetch, Produce and OffsetCommit requests by the partitions they
        // name; Fetch responses by theirs (a fetch session's response may
        // name partitions its request did not).
        let mut want = BTreeSet::new();
        for (kind, col) in [("fetchreq", 6), ("produce", 5), ("commit", 5)] {
            want.extend(
                wire.of(kind)
                    .filter(|r| r[col] == p)
                    .map(|r| wire.key(r, "request")),
            );
        }
        want.extend(
            wire.of("fetchrsp")
                .filter(|r| r[4] == p)
                .map(|r| wire.key(r, "response")),
        );
        let filter = format!(
            "partition={p} and (request and (fetch or produce or offsetcommit) or response and fetch)"
        );
        let got = set(printed(&cap, &filter, &[]));
        assert!(!want.is_empty());
        assert_eq!(got, want, "{filter}");
        // != : messages naming partitions, none of them p.
        let other = set(printed(
            &cap,
            &format!("partition!={p} and produce and request"),
            &[],
        ));
        let named: BTreeSet<Key> = wire
            .of("produce")
            .filter(|r| r[5] != p)
            .map(|r| wire.key(r, "request"))
            .collect();
        let with_p: BTreeSet<Key> = wire
            .of("produce")
            .filter(|r| r[5] == p)
            .map(|r| wire.key(r, "request"))
            .collect();
        assert_eq!(other, &named - &with_p, "partition!={p}");
    }
}

#[test]
fn records_counts_the_records_of_every_batch() {
    let Some((cap, wire)) = b6() else { return };
    // Records per Fetch response and per Produce request, from the batch headers.
    let mut count: BTreeMap<Key, i64> = BTreeMap::new();
    for (kind, side, col) in [("fetchrsp", "response", 10), ("produce", "request", 10)] {
        for r in wire.of(kind) {
            *count.entry(wire.key(r, side)).or_default() += r[col].parse::<i64>().unwrap();
        }
    }
    let most = count.values().copied().max().unwrap();
    assert!(most > 1, "{count:?}");
    for k in [0, 1, most / 2, most - 1] {
        let want: BTreeSet<Key> = count
            .iter()
            .filter(|(_, n)| **n > k)
            .map(|(m, _)| m.clone())
            .collect();
        let filter = format!("records>{k} and (fetch and response or produce and request)");
        assert_eq!(set(printed(&cap, &filter, &[])), want, "{filter}");
    }
    // A Fetch request has no records of its own: it takes its response's,
    // so the exchanges show whole.
    let pairs = printed(&cap, &format!("fetch and records>{}", most / 2), &[]);
    let requests = pairs.iter().filter(|k| k.2 == "request").count();
    let responses = pairs.iter().filter(|k| k.2 == "response").count();
    assert!(requests > 0 && requests == responses, "{pairs:?}");
    // `records=0`: the Fetch responses with a record set and no records
    // (the long-polls), not the messages without a record set.
    let empty: BTreeSet<Key> = count
        .iter()
        .filter(|(k, n)| **n == 0 && k.2 == "response")
        .map(|(m, _)| m.clone())
        .collect();
    assert!(!empty.is_empty());
    assert_eq!(set(printed(&cap, "records=0 and response", &[])), empty);
}

#[test]
fn group_names_the_group_of_each_commit() {
    let Some((cap, wire)) = b6() else { return };
    let groups: BTreeSet<&str> = wire.of("commit").map(|r| r[3].as_str()).collect();
    assert!(groups.len() >= 2, "{groups:?}");
    for g in &groups {
        let want: BTreeSet<Key> = wire
            .of("commit")
            .filter(|r| r[3] == *g)
            .map(|r| wire.key(r, "request"))
            .collect();
        let got = set(printed(
            &cap,
            &format!("group={g} and offsetcommit and request"),
            &[],
        ));
        assert_eq!(got, want, "group={g}");
        // A response names no group: it takes its request's.
        let responses = printed(
            &cap,
            &format!("group={g} and offsetcommit and response"),
            &[],
        );
        assert_eq!(responses.len(), want.len(), "group={g} responses");
    }
    // Every group api of the consumers matches one of the groups; nothing else does.
    let any = printed(&cap, "group=*", &[]);
    let by_group: usize = groups
        .iter()
        .map(|g| printed(&cap, &format!("group={g}"), &[]).len())
        .sum();
    assert_eq!(any.len(), by_group);
    let apis = printed(&cap, "group=* and not (findcoordinator or joingroup or syncgroup or heartbeat or offsetcommit or offsetfetch or leavegroup or consumergroupheartbeat)", &[]);
    assert!(apis.is_empty(), "{apis:?}");
    // ~ finds a part of the name, any case.
    assert_eq!(
        printed(&cap, "group~SLOW", &[]),
        printed(&cap, "group=slow*", &[])
    );
}

#[test]
fn field_paths_reach_fields_in_requests_responses_and_batches() {
    let Some((cap, wire)) = b6() else { return };
    // A request field: each Fetch request asking MaxWaitMs, with its response.
    let waits: BTreeSet<&str> = wire.of("fetchreq").map(|r| r[3].as_str()).collect();
    for w in waits {
        let mut want: BTreeSet<Key> = wire
            .of("fetchreq")
            .filter(|r| r[3] == w)
            .map(|r| wire.key(r, "request"))
            .collect();
        let answered: BTreeSet<Key> = wire
            .of("fetchrsp")
            .map(|r| wire.key(r, "response"))
            .collect();
        want.extend(
            wire.of("fetchreq")
                .filter(|r| r[3] == w)
                .map(|r| wire.key(r, "response"))
                .filter(|k| answered.contains(k)),
        );
        let filter = format!("FetchRequest.MaxWaitMs=={w}");
        assert_eq!(set(printed(&cap, &filter, &[])), want, "{filter}");
    }
    // A nested one compared by order: FetchOffset at or past an offset.
    let offsets: Vec<i64> = wire.of("fetchreq").map(|r| r[7].parse().unwrap()).collect();
    let mid = offsets[offsets.len() / 2];
    let want: BTreeSet<Key> = wire
        .of("fetchreq")
        .filter(|r| r[7].parse::<i64>().unwrap() >= mid)
        .map(|r| wire.key(r, "request"))
        .collect();
    let filter = format!("fetchrequest.topics.partitions.fetchoffset>={mid} and request");
    assert_eq!(set(printed(&cap, &filter, &[])), want, "{filter}");
    // Into a record batch's header: the Produce request that sent a CRC.
    let row = wire.of("produce").nth(3).unwrap();
    let filter = format!(
        "ProduceRequest.TopicData.PartitionData.Records.RecordBatch.crc={} and request",
        row[9]
    );
    assert_eq!(printed(&cap, &filter, &[]), [wire.key(row, "request")]);
    // A response field: HighWatermark, the Fetch responses answering past an offset.
    let hw: Vec<i64> = wire.of("fetchrsp").map(|r| r[6].parse().unwrap()).collect();
    let top = *hw.iter().max().unwrap();
    let want: BTreeSet<Key> = wire
        .of("fetchrsp")
        .filter(|r| r[6].parse::<i64>().unwrap() == top)
        .map(|r| wire.key(r, "response"))
        .collect();
    let filter = format!("FetchResponse.Responses.Partitions.HighWatermark={top} and response");
    assert_eq!(set(printed(&cap, &filter, &[])), want, "{filter}");
    // The same through -V's render threads and through stats.
    let verbose = printed(&cap, &filter, &["-V"]);
    assert_eq!(set(verbose), want);
    let out = bin()
        .args(["stats", &cap, "--format", "json", "-Y", &filter])
        .output()
        .expect("run");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["summary"]["messages"].as_u64(), Some(want.len() as u64));
}

/// a1's script sent keys alice, bob, carol, alice, dave with headers
/// (source=kcat, run=a1) uncompressed, then eve, bob, frank with snappy.
#[test]
fn record_keys_values_and_headers_are_compared_whole() {
    let cap = repo("captures/a1-kcat-produce-consume-group.pcap");
    let key = |k: &str| {
        printed(
            &cap,
            &format!("ProduceRequest.TopicData.PartitionData.Records.RecordBatch.Record.key={k}"),
            &[],
        )
    };
    let batch = "ProduceRequest.TopicData.PartitionData.Records.RecordBatch";
    let snappy = set(printed(&cap, &format!("{batch}.attributes~snappy"), &[]));
    let headed = set(printed(
        &cap,
        &format!("{batch}.Record.Header.headerValue=a1"),
        &[],
    ));
    assert!(!snappy.is_empty() && !headed.is_empty());
    assert!(snappy.is_disjoint(&headed));
    for k in ["alice", "bob", "carol", "dave"] {
        let got = set(key(k));
        assert!(got.iter().any(|m| m.2 == "request"), "{k}");
        if k != "bob" {
            assert!(got.is_subset(&headed), "{k}");
        }
    }
    // The second run sent no headers; librdkafka sent eve's batch
    // uncompressed (snappy did not make it smaller), frank's compressed.
    let eve = set(key("eve"));
    assert!(!eve.is_empty() && eve.is_disjoint(&headed) && eve.is_disjoint(&snappy));
    let frank = set(key("frank"));
    assert!(!frank.is_empty() && frank.is_subset(&snappy));
    assert!(key("mallory").is_empty());
    // Values longer than the tree's preview are read from the message (and
    // from the decompressed payload): `{"op":"logout","n":4}` and `{"op":"login","n":8}`.
    let value = |v: &str| {
        set(printed(
            &cap,
            &format!("{batch}.Record.value~{}", quote(v)),
            &[],
        ))
    };
    assert!(!value("logout").is_empty() && value("logout").is_subset(&headed));
    assert!(!value("\"n\":8").is_empty() && value("\"n\":8").is_subset(&snappy));
    // The consumer fetched them: the same key in a Fetch response.
    let fetched = printed(
        &cap,
        "FetchResponse.Responses.Partitions.Records.RecordBatch.Record.key=frank and response",
        &[],
    );
    assert!(!fetched.is_empty());
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[test]
fn misspelt_paths_are_named_with_the_nearest_field() {
    let cap = repo("captures/a1-kcat-produce-consume-group.pcap");
    for (filter, said) in [
        (
            "ProduceRequest.TopicData.PartitionData.Indx=2",
            "col 39: 'ProduceRequest.TopicData.PartitionData' has no field 'Indx'; did you mean 'Index'?",
        ),
        (
            "ProdcueRequest.Acks=1",
            "col 0: unknown message 'ProdcueRequest'",
        ),
        (
            "ProduceRequest.TopicData>1",
            "col 24: 'ProduceRequest.TopicData' holds fields",
        ),
        (
            "ProduceRequest.Acks.x",
            "col 20: 'ProduceRequest.Acks' is a int16: it has no fields",
        ),
        ("ProduceRequest.Acks>all", "expected an integer after 'ProduceRequest.Acks>', found 'all'"),
        ("partition=x", "expected an integer after 'partition='"),
    ] {
        let out = bin().args(["print", &cap, "-Y", filter]).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{filter}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{filter}: {err}");
    }
}

/// Every name `kafkashark fields` lists under a records field is one the
/// decoder writes: each reaches a field of a real capture (v2 batches in
/// a1, whose first producer sent headers; legacy messages in a public
/// capture of Produce v2, when it is there, but for their key: none of
/// the captures here has a legacy message with one).
#[test]
fn every_record_set_name_reaches_a_field_of_a_real_capture() {
    let out = bin().args(["fields", "produce"]).output().expect("run");
    let text = String::from_utf8(out.stdout).unwrap();
    let names: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Under a records field"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() > 20, "{text}");
    let legacy = format!(
        "{}/../../shared/captures/public/deepflow__00-produce-v2.pcap",
        env!("CARGO_MANIFEST_DIR")
    );
    for name in names {
        // Every legacy message in the captures here has a null key (no
        // `key` field, only `keyLength` -1).
        if name == "Message.key" {
            continue;
        }
        let cap = if name.starts_with("Message") {
            if !std::path::Path::new(&legacy).is_file() {
                eprintln!("skipping {name}: {legacy} missing");
                continue;
            }
            legacy.clone()
        } else {
            repo("captures/a1-kcat-produce-consume-group.pcap")
        };
        let filter = format!("ProduceRequest.TopicData.PartitionData.Records.{name}");
        assert!(!printed(&cap, &filter, &[]).is_empty(), "{filter} on {cap}");
    }
}
