//! Unit tests of the accumulator with hand-built messages: throttle series,
//! slow-list bound, caps, unanswered requests, KIP-848 heartbeats.

use crate::kafka::schema::ApiKey;
use crate::vocab::Timestamp;
use std::net::SocketAddr;

use super::*;
use crate::kafka::tree::{Node, Role, Value};
use crate::pairing::PendingRequest;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A message at `ms` milliseconds after epoch second 1000.
pub(super) fn msg(
    index: u64,
    kind: Kind,
    api: i16,
    version: i16,
    frame: u64,
    ms: u64,
) -> MessageInfo {
    let ts = Timestamp::new(1000 + (ms / 1000) as i64, ((ms % 1000) * 1_000_000) as u32);
    MessageInfo {
        index,
        frame,
        first_frame: frame,
        ts,
        first_ts: ts,
        stream: 0,
        client: addr("10.0.0.1:40000"),
        broker: addr("10.0.0.2:9092"),
        kind,
        api_key: Some(ApiKey(api)),
        api_version: Some(version),
        correlation_id: Some(index as i32),
        length: 10,
        client_id: (kind == Kind::Request).then(|| "app".to_string()),
        paired: false,
        peer: None,
        inferred: false,
        expects_response: kind == Kind::Request,
        latency_ns: None,
        hol_wait_ns: None,
        rtt: None,
        fetch: None,
        throttle_time_ms: None,
        error_codes: Vec::new(),
        decode_error: None,
        decode_warning: None,
        resynced: false,
        skipped_before: 0,
        topics: Default::default(),
        capture: 0,
        also: None,
    }
}

/// Feeds a request and its response; returns the next free index.
#[allow(clippy::too_many_arguments)]
pub(super) fn exchange(
    s: &mut Stats,
    index: u64,
    api: i16,
    at_ms: u64,
    latency_ms: u64,
    throttle: Option<i32>,
    errors: Vec<i16>,
    client_id: &str,
) -> u64 {
    let mut req = msg(index, Kind::Request, api, 9, index + 1, at_ms);
    req.client_id = Some(client_id.to_string());
    s.message_info(&req, None);
    let mut rsp = msg(
        index + 1,
        Kind::Response,
        api,
        9,
        index + 2,
        at_ms + latency_ms,
    );
    rsp.paired = true;
    rsp.peer = Some(index);
    rsp.latency_ns = Some(latency_ms * 1_000_000);
    rsp.throttle_time_ms = throttle;
    rsp.error_codes = errors;
    s.message_info(&rsp, None);
    index + 2
}

#[test]
fn throttle_series_per_second_client_and_api() {
    let mut s = Stats::new(StatsConfig::default());
    let mut i = 0;
    // second 1000: two throttled (30, 50) and one not; 1001: one (20); 1003: one (70).
    i = exchange(&mut s, i, 0, 100, 5, Some(30), vec![], "p");
    i = exchange(&mut s, i, 0, 200, 5, Some(50), vec![], "p");
    i = exchange(&mut s, i, 0, 300, 5, Some(0), vec![], "p");
    i = exchange(&mut s, i, 1, 1100, 7, Some(20), vec![], "p");
    exchange(&mut s, i, 0, 3100, 9, Some(70), vec![], "q");
    let r = s.report();
    assert_eq!(r.throttle.throttled, 4);
    assert_eq!((r.throttle.sum_ms, r.throttle.max_ms), (170, 70));
    assert_eq!(
        r.throttle.series,
        vec![
            ThrottleSecond {
                second: 1000,
                count: 2,
                sum_ms: 80,
                max_ms: 50
            },
            ThrottleSecond {
                second: 1001,
                count: 1,
                sum_ms: 20,
                max_ms: 20
            },
            ThrottleSecond {
                second: 1003,
                count: 1,
                sum_ms: 70,
                max_ms: 70
            },
        ]
    );
    let produce = r.apis.iter().find(|a| a.api_key == 0).unwrap();
    assert_eq!(produce.throttled, 3);
    assert_eq!(produce.throttle_time_ms, ThrottleMs { max: 70, sum: 150 });
    let by: Vec<(Option<&str>, i16, u64, i64, i64)> = r
        .throttle
        .by_client
        .iter()
        .map(|t| {
            (
                t.client_id.as_deref(),
                t.api_key,
                t.count,
                t.sum_ms,
                t.max_ms,
            )
        })
        .collect();
    assert_eq!(
        by,
        vec![
            (Some("p"), 0, 2, 80, 50),
            (Some("p"), 1, 1, 20, 20),
            (Some("q"), 0, 1, 70, 70)
        ]
    );
    // Throttle and latency apart: the most throttled first, each with its own latency.
    let ex: Vec<(i32, Option<f64>)> = r
        .throttle
        .exchanges
        .iter()
        .map(|e| (e.throttle_ms, e.latency_ms))
        .collect();
    assert_eq!(
        ex,
        vec![
            (70, Some(9.0)),
            (50, Some(5.0)),
            (30, Some(5.0)),
            (20, Some(7.0))
        ]
    );
    assert_eq!(
        r.throttle.throttled_latency_ms.as_ref().map(|l| l.count),
        Some(4)
    );
    // "p" was throttled in 2 distinct seconds: below the sustained threshold.
    assert!(r.hints.iter().all(|h| h.kind != "throttling"));
}

#[test]
fn sustained_throttling_is_a_hint_with_frames() {
    let mut s = Stats::new(StatsConfig::default());
    let mut i = 0;
    for sec in 0..4 {
        i = exchange(&mut s, i, 0, sec * 1000 + 10, 1, Some(100), vec![], "p");
    }
    let r = s.report();
    let h = r
        .hints
        .iter()
        .find(|h| h.kind == "throttling")
        .expect("hint");
    assert_eq!(h.frames, vec![2, 4, 6, 8]);
}

#[test]
fn slow_list_keeps_the_n_slowest_in_order() {
    let mut s = Stats::new(StatsConfig {
        slow: 3,
        ..StatsConfig::default()
    });
    let lat = [5u64, 50, 1, 40, 40, 7, 60, 2];
    let mut i = 0;
    for (k, l) in lat.iter().enumerate() {
        i = exchange(&mut s, i, 3, k as u64 * 100, *l, None, vec![], "c");
    }
    let r = s.report();
    let got: Vec<(f64, u64)> = r
        .slow
        .iter()
        .map(|x| (x.latency_ms, x.response_frame))
        .collect();
    // Ties keep the earlier exchange.
    assert_eq!(got, vec![(60.0, 14), (50.0, 4), (40.0, 8)]);
    assert_eq!(r.slow[0].request_frame, Some(13));
    assert_eq!(r.slow[0].client_id.as_deref(), Some("c"));
    let api = &r.apis[0];
    assert_eq!(
        api.latency_ms.as_ref().map(|l| (l.count, l.max)),
        Some((8, 60.0))
    );
}

#[test]
fn tables_are_capped_and_overflow_is_counted() {
    let mut s = Stats::new(StatsConfig {
        max_keys: 2,
        max_histograms: 2,
        max_pending: 2,
        ..StatsConfig::default()
    });
    let mut i = 0;
    for c in ["a", "b", "c", "d", "e"] {
        i = exchange(&mut s, i, 3, i * 10, 1, None, vec![], c);
    }
    let r = s.report();
    assert_eq!(r.clients.len(), 2);
    // Requests and responses of the three refused clients.
    assert_eq!(r.overflow.clients, 6);
    // Client latency histograms: 2 kept, 3 refused.
    assert_eq!(
        r.clients.iter().filter(|c| c.latency_ms.is_some()).count(),
        2
    );
    assert!(r.overflow.histograms >= 3);
    // The per-API figures are complete regardless.
    assert_eq!((r.apis[0].requests, r.apis[0].responses), (5, 5));

    // Pending requests: only the newest 2 are remembered.
    for k in 0..4u64 {
        s.message_info(&msg(100 + k, Kind::Request, 3, 9, 200 + k, 50_000), None);
    }
    assert_eq!(s.report().overflow.pending, 2);
    assert_eq!(s.report().summary.in_flight, 2);
}

/// The client a connection remembers follows its client id and its software:
/// a new id, a new ApiVersions software, a response without its request (the
/// connection's last id) each count for the right key.
#[test]
fn connection_clients_follow_id_and_software_changes() {
    let mut s = Stats::new(StatsConfig::default());
    let mut i = exchange(&mut s, 0, 3, 0, 1, None, vec![], "a");
    i = exchange(&mut s, i, 3, 10, 1, None, vec![], "a");
    // ApiVersions v3 names the software: the same id is now another client.
    let mut av = msg(i, Kind::Request, 18, 3, i + 1, 20);
    av.client_id = Some("a".into());
    let sw = vec![
        node(
            "ClientSoftwareName",
            "string",
            Value::Str("lib".into()),
            vec![],
        ),
        node(
            "ClientSoftwareVersion",
            "string",
            Value::Str("1.0".into()),
            vec![],
        ),
    ];
    s.message_info(&av, Some(&decoded(Kind::Request, sw)));
    i += 1;
    i = exchange(&mut s, i, 3, 30, 1, None, vec![], "a");
    i = exchange(&mut s, i, 3, 40, 1, None, vec![], "b");
    // A response whose request was not seen: the connection's last client id.
    let mut orphan = msg(i, Kind::Response, 3, 9, i + 1, 50);
    orphan.latency_ns = None;
    s.message_info(&orphan, None);
    i += 1;
    exchange(&mut s, i, 3, 60, 1, None, vec![], "a");
    let r = s.report();
    let got: Vec<(Option<&str>, Option<&str>, u64, u64)> = r
        .clients
        .iter()
        .map(|c| {
            (
                c.client_id.as_deref(),
                c.software_name.as_deref(),
                c.requests,
                c.responses,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Some("a"), None, 2, 2),
            (Some("a"), Some("lib"), 3, 2),
            (Some("b"), Some("lib"), 1, 2),
        ]
    );
    let o = &r.overflow;
    assert_eq!((o.clients, o.histograms, o.streams), (0, 0, 0));
}

/// A connection's histogram stands for its broker's and its client's while
/// all its latencies are theirs; a new client id or another broker on the
/// connection hands what it held over: every histogram counts what it saw.
#[test]
fn broker_and_client_latencies_follow_the_connection() {
    let mut s = Stats::new(StatsConfig::default());
    let mut i = exchange(&mut s, 0, 3, 0, 1, None, vec![], "a");
    i = exchange(&mut s, i, 3, 10, 2, None, vec![], "a");
    i = exchange(&mut s, i, 3, 20, 3, None, vec![], "b");
    // A response from another broker address on the same connection.
    let mut req = msg(i, Kind::Request, 3, 9, i + 1, 30);
    req.client_id = Some("b".into());
    s.message_info(&req, None);
    let mut rsp = msg(i + 1, Kind::Response, 3, 9, i + 2, 34);
    rsp.broker = addr("10.0.0.3:9092");
    (rsp.paired, rsp.peer, rsp.latency_ns) = (true, Some(i), Some(4_000_000));
    s.message_info(&rsp, None);
    i += 2;
    exchange(&mut s, i, 3, 40, 5, None, vec![], "a");
    let r = s.report();
    let lat = |l: Option<&LatencyMs>| l.map(|l| (l.count, l.min, l.max));
    let clients: Vec<_> = r
        .clients
        .iter()
        .map(|c| lat(c.latency_ms.as_ref()))
        .collect();
    assert_eq!(clients, vec![Some((3, 1.0, 5.0)), Some((2, 3.0, 4.0))]);
    let brokers: Vec<_> = r
        .brokers
        .iter()
        .map(|b| (b.broker.as_str(), lat(b.latency_ms.as_ref())))
        .collect();
    assert_eq!(
        brokers,
        vec![
            ("10.0.0.2:9092", Some((4, 1.0, 5.0))),
            ("10.0.0.3:9092", Some((1, 4.0, 4.0)))
        ]
    );
    assert_eq!(
        lat(r.connections[0].latency_ms.as_ref()),
        Some((5, 1.0, 5.0))
    );
    assert_eq!(lat(r.apis[0].latency_ms.as_ref()), Some((5, 1.0, 5.0)));
}

/// Clients past `max_keys` may still have a latency histogram (its own cap):
/// refusals are counted per attempt in each table, as two capped maps would.
#[test]
fn client_counters_and_histograms_have_their_own_caps() {
    let mut s = Stats::new(StatsConfig {
        max_keys: 1,
        max_histograms: 2,
        ..StatsConfig::default()
    });
    let mut i = 0;
    for c in ["a", "b", "b", "c"] {
        i = exchange(&mut s, i, 3, i * 10, 1, None, vec![], c);
    }
    let r = s.report();
    assert_eq!(r.clients.len(), 1);
    assert_eq!(r.clients[0].latency_ms.as_ref().map(|l| l.count), Some(1));
    // b and c: every request and response refused a counters entry.
    assert_eq!(r.overflow.clients, 6);
    // b took the second histogram; c's response was refused one.
    assert_eq!(r.overflow.histograms, 1);
    // The slow list names every client, kept or not.
    let mut ids: Vec<&str> = r
        .slow
        .iter()
        .filter_map(|x| x.client_id.as_deref())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["a", "b", "b", "c"]);
}

#[test]
fn unanswered_requests_and_orphan_responses_are_unpaired() {
    let mut s = Stats::new(StatsConfig::default());
    let req = msg(0, Kind::Request, 1, 12, 5, 0);
    s.message_info(&req, None);
    s.notice(&Notice::Unanswered {
        stream: 0,
        request: PendingRequest {
            index: 0,
            api_key: ApiKey::FETCH,
            api_version: 12,
            frame: 5,
            wait: None,
            ts: req.ts,
            also_ts: None,
        },
    });
    let orphan = msg(1, Kind::Response, 1, 12, 9, 10);
    s.message_info(&orphan, None);
    let r = s.report();
    let f = &r.apis[0];
    assert_eq!(
        (f.unanswered, f.responses_without_request, f.unpaired),
        (1, 1, 2)
    );
    assert_eq!(r.summary.in_flight, 0);
    assert_eq!(r.clients[0].unanswered, 1);
    let h = r
        .hints
        .iter()
        .find(|h| h.kind == "unanswered")
        .expect("hint");
    assert_eq!(h.frames, vec![5]);
}

#[test]
fn errors_count_by_name_without_trees() {
    let mut s = Stats::new(StatsConfig::default());
    let mut i = 0;
    i = exchange(&mut s, i, 0, 0, 1, None, vec![6, 6, 3], "c");
    exchange(&mut s, i, 0, 10, 1, None, vec![6, -1, 30000], "c");
    let r = s.report();
    let e = &r.apis[0].errors;
    assert_eq!(e.get("NOT_LEADER_OR_FOLLOWER"), Some(&3));
    assert_eq!(e.get("UNKNOWN_TOPIC_OR_PARTITION"), Some(&1));
    assert_eq!(e.get("UNKNOWN_SERVER_ERROR"), Some(&1));
    assert_eq!(e.get("UNKNOWN(30000)"), Some(&1));
    let nl = r.errors.iter().find(|x| x.code == 6).unwrap();
    assert_eq!((nl.count, nl.first_frame, nl.last_frame), (3, 2, 4));
    assert!(r.hints.iter().any(|h| h.kind == "repeated_error"));
}

fn node(name: &str, ty: &str, value: Value, kids: Vec<Node>) -> Node {
    let mut n = Node::new(
        name.to_string(),
        ty.to_string(),
        value,
        0,
        0,
        Role::ResponseBody,
    );
    n.children = kids;
    n
}

fn decoded(kind: Kind, body: Vec<Node>) -> Decoded {
    Decoded {
        kind,
        api_key: Some(68),
        api_version: Some(0),
        correlation_id: Some(1),
        client_id: None,
        root: node(
            "M",
            "message v0",
            Value::None,
            vec![node("M", "struct", Value::None, body)],
        ),
        sources: Vec::new(),
        error: None,
        warning: None,
        topics: Default::default(),
        topic_ids: Vec::new(),
        facts: None,
    }
}

#[test]
fn consumer_group_heartbeat_epochs_and_assignment() {
    let mut s = Stats::new(StatsConfig::default());
    let s_ = |v: &str| Value::Str(v.to_string());
    let mut index = 0;
    for (epoch, parts) in [
        (0, None),
        (1, Some(vec![0, 2])),
        (1, None),
        (2, Some(vec![0])),
    ] {
        let req = decoded(
            Kind::Request,
            vec![
                node("GroupId", "string", s_("g848"), vec![]),
                node("MemberId", "string", s_("m-1"), vec![]),
                node("MemberEpoch", "int32", Value::Int(epoch - 1), vec![]),
            ],
        );
        s.message_info(
            &msg(index, Kind::Request, 68, 0, index + 1, index * 10),
            Some(&req),
        );
        let assignment = match parts {
            None => node("Assignment", "Assignment", Value::Null, vec![]),
            Some(ps) => node(
                "Assignment",
                "Assignment",
                Value::None,
                vec![node(
                    "TopicPartitions",
                    "[]TopicPartitions",
                    Value::None,
                    vec![node(
                        "TopicPartitions[0]",
                        "TopicPartitions",
                        Value::None,
                        vec![
                            node("TopicId", "uuid", Value::Uuid([9; 16]), vec![]),
                            node(
                                "Partitions",
                                "[]int32",
                                Value::None,
                                ps.iter()
                                    .enumerate()
                                    .map(|(k, p)| {
                                        node(
                                            &format!("Partitions[{k}]"),
                                            "int32",
                                            Value::Int(*p),
                                            vec![],
                                        )
                                    })
                                    .collect(),
                            ),
                        ],
                    )],
                )],
            ),
        };
        let rsp = decoded(
            Kind::Response,
            vec![
                node("ThrottleTimeMs", "int32", Value::Int(0), vec![]),
                node("ErrorCode", "int16", Value::Int(0), vec![]),
                node("MemberId", "string", s_("m-1"), vec![]),
                node("MemberEpoch", "int32", Value::Int(epoch), vec![]),
                assignment,
            ],
        );
        let mut info = msg(index + 1, Kind::Response, 68, 0, index + 2, index * 10 + 1);
        info.paired = true;
        info.peer = Some(index);
        info.latency_ns = Some(1_000_000);
        s.message_info(&info, Some(&rsp));
        index += 2;
    }
    let r = s.report();
    let g = r
        .groups
        .iter()
        .find(|g| g.group_id == "g848")
        .expect("group");
    let m = &g.heartbeat_members[0];
    assert_eq!(m.member_id, "m-1");
    assert_eq!(m.epochs, vec![0, 1, 2]);
    assert_eq!(m.heartbeats, 4);
    let a = m.assignment.as_ref().expect("assignment");
    assert_eq!(a[0].partitions, vec![0]);
    assert_eq!(a[0].topic, crate::kafka::tree::format_uuid(&[9; 16]));
}

#[test]
fn removed_versions_follow_the_schema_sets() {
    // Produce v0-v2 and Fetch v0-v3 left in Kafka 4.0 (KIP-896).
    assert!(removed_in_kafka_4(0, 0));
    assert!(removed_in_kafka_4(0, 2));
    assert!(!removed_in_kafka_4(0, 3));
    assert!(removed_in_kafka_4(1, 3));
    assert!(!removed_in_kafka_4(1, 4));
    assert!(!removed_in_kafka_4(18, 3));
}

#[test]
fn text_report_escapes_captured_strings() {
    let mut s = Stats::new(StatsConfig::default());
    exchange(&mut s, 0, 3, 0, 1, None, vec![], "evil\u{1b}[2J");
    let t = s.report().to_text("file");
    assert!(!t.contains('\u{1b}'), "{t}");
    assert!(t.contains("APIS"));
}

#[test]
fn rebalance_loop_and_generation_timeline() {
    let mut s = Stats::new(StatsConfig::default());
    let s_ = |v: &str| Value::Str(v.to_string());
    let mut index = 0;
    // Three rounds, 10 s apart: JoinGroup (gen g) then SyncGroup 5 ms later.
    for gen in 1..=3i64 {
        let t0 = gen as u64 * 10_000;
        let join = decoded(
            Kind::Request,
            vec![
                node("GroupId", "string", s_("loop"), vec![]),
                node("MemberId", "string", s_("m"), vec![]),
                node("ProtocolType", "string", s_("consumer"), vec![]),
            ],
        );
        s.message_info(
            &msg(index, Kind::Request, 11, 5, index + 1, t0),
            Some(&join),
        );
        let joined = decoded(
            Kind::Response,
            vec![
                node("ErrorCode", "int16", Value::Int(0), vec![]),
                node("GenerationId", "int32", Value::Int(gen), vec![]),
                node("ProtocolName", "string", s_("range"), vec![]),
                node("Leader", "string", s_("m"), vec![]),
                node("MemberId", "string", s_("m"), vec![]),
            ],
        );
        let mut r = msg(index + 1, Kind::Response, 11, 5, index + 2, t0 + 2);
        (r.paired, r.peer, r.latency_ns) = (true, Some(index), Some(2_000_000));
        s.message_info(&r, Some(&joined));
        let sync = decoded(
            Kind::Request,
            vec![
                node("GroupId", "string", s_("loop"), vec![]),
                node("GenerationId", "int32", Value::Int(gen), vec![]),
                node("MemberId", "string", s_("m"), vec![]),
            ],
        );
        s.message_info(
            &msg(index + 2, Kind::Request, 14, 3, index + 3, t0 + 3),
            Some(&sync),
        );
        let synced = decoded(
            Kind::Response,
            vec![node("ErrorCode", "int16", Value::Int(0), vec![])],
        );
        let mut r = msg(index + 3, Kind::Response, 14, 3, index + 4, t0 + 5);
        (r.paired, r.peer, r.latency_ns) = (true, Some(index + 2), Some(2_000_000));
        s.message_info(&r, Some(&synced));
        index += 4;
    }
    let rep = s.report();
    let g = &rep.groups[0];
    assert_eq!((g.joins, g.syncs), (3, 3));
    // (generation, join request frame, …) as the report gives them.
    type Gen = (i32, Option<u64>, u64, Vec<u64>, Option<f64>);
    let gens: Vec<Gen> = g
        .generations
        .iter()
        .map(|e| {
            (
                e.generation_id,
                e.join_request_frame,
                e.join_response_frame,
                e.sync_response_frames.clone(),
                e.rebalance_ms,
            )
        })
        .collect();
    assert_eq!(
        gens,
        vec![
            (1, Some(1), 2, vec![4], Some(5.0)),
            (2, Some(5), 6, vec![8], Some(5.0)),
            (3, Some(9), 10, vec![12], Some(5.0)),
        ]
    );
    let h = rep
        .hints
        .iter()
        .find(|h| h.kind == "rebalance_loop")
        .expect("hint");
    assert_eq!(h.frames, vec![2, 6, 10]);
}

/// The JSON report of `path` with these analyzer settings.
fn report_json(path: &std::path::Path, cfg: AnalyzerConfig) -> String {
    let outputs = crate::test_captures::outputs(path, cfg);
    assert!(!outputs.is_empty(), "{}: nothing read", path.display());
    let mut stats = Stats::new(StatsConfig::default());
    for o in &outputs {
        stats.push(o);
    }
    serde_json::to_string(&stats.report()).expect("report JSON")
}

#[test]
fn the_light_analyzer_config_reports_what_full_trees_report() {
    use crate::flow::Ports;
    use crate::pipeline::PipelineConfig;
    let captures = crate::test_captures::shipped();
    assert!(!captures.is_empty());
    for p in captures {
        let base = AnalyzerConfig {
            pipeline: PipelineConfig::with_ports(Ports::Any),
            ..AnalyzerConfig::default()
        };
        // Every tree in full, records included: what `stats` read before.
        let mut full = base.clone();
        full.keep_trees = true;
        full.decode.records = true;
        let light = Stats::analyzer_config(base);
        assert!(light.tree_filter.is_some() && light.decode.records_headers_only);
        assert_eq!(
            report_json(&p, full),
            report_json(&p, light),
            "{}",
            p.display()
        );
    }
}

#[test]
fn the_summary_scan_places_what_the_full_tree_places() {
    use crate::kafka::decode::{summarize_request, summarize_response, DecodeOptions};
    let scan_opts = DecodeOptions {
        records: false,
        records_headers_only: true,
        ..DecodeOptions::default()
    };
    let topics = TopicNames::default();
    let (mut messages, mut placed, mut sets, mut errors, mut ints) = (0, 0, 0, 0, 0);
    let mut shared = 0;
    for p in crate::test_captures::all() {
        // Full trees, records decoded in full: what the facts must equal.
        for m in crate::test_captures::messages(&p, crate::test_captures::full_trees()) {
            let Some(d) = &m.decoded else { continue };
            messages += 1;
            let s = match (m.info.kind, m.info.api_key, m.info.api_version) {
                (Kind::Request, _, _) => summarize_request(&m.raw.bytes, &scan_opts),
                (Kind::Response, Some(k), Some(v)) if m.info.paired => {
                    summarize_response(&m.raw.bytes, k.0, v, &scan_opts)
                }
                _ => None,
            };
            let Some((x, names)) = s.and_then(|s| Some((s.facts?, s.topics))) else {
                continue;
            };
            placed += 1;
            let at = format!("{} frame {}", p.display(), m.info.frame);
            // Each list made to its size (the scan gathers in the thread's
            // lists), each place's topic name the message's own copy.
            assert_eq!(x.errors.capacity(), x.errors.len(), "{at}");
            assert_eq!(x.sets.capacity(), x.sets.len(), "{at}");
            assert_eq!(x.ints.capacity(), x.ints.len(), "{at}");
            let places = x.errors.iter().map(|e| &e.place);
            let places = places.chain(x.sets.iter().map(|s| &s.place));
            for place in places.chain(x.ints.iter().map(|n| &n.place)) {
                let Some(crate::kafka::decode::ScanTopic::Name(t)) = &place.topic else {
                    continue;
                };
                if let Some(listed) = names.iter().find(|n| n == &t) {
                    assert!(std::sync::Arc::ptr_eq(listed, t), "{at}: {t}");
                    shared += 1;
                }
            }
            assert_eq!(
                facts::scanned_errors(&x, &topics),
                facts::errors(&d.root, &topics),
                "{at}"
            );
            assert_eq!(
                facts::scanned_sets(&x, &topics),
                facts::record_sets(d, &topics),
                "{at}"
            );
            assert!(facts::record_errors(&d.root, &topics).is_empty(), "{at}");
            let mut from_tree = Vec::new();
            facts::each_int(d, &topics, |n| {
                from_tree.push((
                    n.name.to_string(),
                    n.value,
                    n.topic.map(|t| t.into_owned()),
                    n.partition,
                ))
            });
            let scanned: Vec<_> = x
                .ints
                .iter()
                .map(|n| {
                    let topic = n.place.topic.as_ref().map(|t| match t {
                        crate::kafka::decode::ScanTopic::Name(s) => s.to_string(),
                        crate::kafka::decode::ScanTopic::Id(u) => topics.label(u).into_owned(),
                    });
                    (n.name.to_string(), n.value, topic, n.place.partition)
                })
                .collect();
            assert_eq!(scanned, from_tree, "{at}");
            ints += scanned.len();
            if m.info.kind == Kind::Request {
                assert_eq!(
                    x.acks.and_then(|v| i16::try_from(v).ok()),
                    facts::acks(&d.root),
                    "{at}"
                );
                let group = facts::body(&d.root).and_then(|b| facts::str_child(b, "GroupId"));
                assert_eq!(x.group_id.as_deref(), group, "{at}");
            }
            sets += x.sets.len();
            errors += x.errors.len();
        }
    }
    assert!(
        placed > 0 && sets > 0 && errors > 0 && ints > 1000 && shared > 100,
        "{messages} {placed} {sets} {errors} {ints} {shared}"
    );
}

proptest::proptest! {
    /// The pending-request table against a `BTreeMap` (what it replaced):
    /// requests come in index order, responses and evictions in any.
    #[test]
    fn the_pending_table_behaves_as_an_ordered_map(
        ops in proptest::collection::vec((0u8..3, 0u64..64), 0..400),
    ) {
        let mut t = PendingTable::default();
        let mut model = BTreeMap::new();
        let mut next = 0u64;
        let pending = |frame| Pending { frame, client: Who::Slot(0), topic: None, group: None, fetch: None };
        for (op, k) in ops {
            match op {
                0 => {
                    t.insert(next, pending(next));
                    model.insert(next, next);
                    next += 1;
                }
                1 => {
                    let i = next.saturating_sub(k + 1);
                    proptest::prop_assert_eq!(t.remove(&i).map(|p| p.frame), model.remove(&i));
                }
                _ => {
                    t.pop_first();
                    model.pop_first();
                }
            }
            proptest::prop_assert_eq!(t.len(), model.len());
            proptest::prop_assert!(t.order.len() <= 2 * t.map.len() + 65);
        }
        for (i, f) in model {
            proptest::prop_assert_eq!(t.remove(&i).map(|p| p.frame), Some(f));
        }
    }
}

/// Stats whose only figures are the lag of one consumer's partition, asked
/// from offset 10 at each (time, high watermark) of `fetches`.
fn one_lag_row(fetches: &[(Timestamp, i64)]) -> Stats {
    let mut s = Stats::new(StatsConfig::default());
    let c = s.lag.consumer("c", "10.0.0.1".parse().unwrap()).unwrap();
    let topic = s.lag.topic("t").unwrap();
    let asks = lag::FetchAsks::new(vec![(topic, 0, 10)]);
    for &(ts, hw) in fetches {
        let answer = lag::FetchAnswer {
            topic,
            partition: 0,
            error: 0,
            high_watermark: hw,
            last_stable_offset: hw,
            log_start_offset: 0,
            last_offset: None,
            records: 0,
        };
        s.lag.fetch(c, ts, &asks, &[answer]);
    }
    s
}

#[test]
fn the_json_report_is_indented_five_levels_and_compact_below() {
    let s = one_lag_row(&[
        (Timestamp::new(100, 0), 50),
        (Timestamp::new(102, 500_000_000), 70),
    ]);
    let r = s.report();
    let text = r.clone().into_json_pretty().unwrap();
    // The same value as serde_json's own layouts give.
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, serde_json::to_value(&r).unwrap());
    // Indented down to the series (depth 5); each sample on its line.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == "\"series\": [")
        .unwrap();
    assert_eq!(lines[at + 1].trim(), "[100.0,40],");
    assert_eq!(lines[at + 2].trim(), "[102.5,60]");
    assert_eq!(lines[at + 3].trim(), "]");
    assert!(
        lines[at + 1].starts_with("          ["),
        "{}",
        lines[at + 1]
    );
    assert!(text.starts_with("{\n  \"summary\": {\n"), "{}", &text[..40]);
}

#[test]
fn the_json_report_is_serde_json_s_pretty_layout_down_to_five_levels() {
    // A report with nothing nested deeper than five containers is laid out
    // exactly as serde_json's own pretty formatter lays it out.
    let s = one_lag_row(&[(Timestamp::new(100, 0), 50)]);
    for r in [Stats::new(StatsConfig::default()).report(), s.report()] {
        let ours = r.clone().into_json_pretty().unwrap();
        let theirs = serde_json::to_string_pretty(&r).unwrap();
        // serde_json's layout with the series' samples (the only containers
        // deeper than five here) each on one line.
        let series = |t: &str| {
            t.replace(
                "[\n            100.0,\n            40\n          ]",
                "[100.0,40]",
            )
        };
        assert_eq!(ours, series(&theirs));
    }
}

#[test]
fn fetch_answers_place_every_partition_of_a_large_response() {
    // 20,000 partitions of one topic in descending order, every third with
    // an error, each with records of its own: every answer carries its own
    // partition's figures, whatever the order the facts are found in.
    let int = |name: &str, v: i64| node(name, "int", Value::Int(v), vec![]);
    let n: i64 = 20_000;
    let parts: Vec<Node> = (0..n)
        .rev()
        .map(|p| {
            let kids = vec![
                int("PartitionIndex", p),
                int("ErrorCode", if p % 3 == 0 { 6 } else { 0 }),
                int("HighWatermark", p * 10),
                int("LastStableOffset", p * 10 - 1),
                int("LogStartOffset", p),
            ];
            node("Partitions", "PartitionData", Value::None, kids)
        })
        .collect();
    let topic = node(
        "Responses",
        "FetchableTopicResponse",
        Value::None,
        vec![
            node("Topic", "string", Value::Str("t".into()), vec![]),
            node("Partitions", "[]PartitionData", Value::None, parts),
        ],
    );
    let body = vec![node(
        "Responses",
        "[]FetchableTopicResponse",
        Value::None,
        vec![topic],
    )];
    let mut d = decoded(Kind::Response, body);
    d.api_key = Some(ApiKey::FETCH.0);
    let topics = TopicNames::default();
    let mut lag = lag::Lag::default();
    let mut answers = facts::FetchAnswers::new(&d, &topics, None, &mut lag);
    // The errors as `Stats::count_errors` places them.
    for e in facts::errors(&d.root, &topics) {
        let t = lag.topic(e.place.topic.as_deref().unwrap()).unwrap();
        answers.error(t, e.place.partition.unwrap(), e.code);
    }
    let t = lag.topic("t").unwrap();
    let answers = answers.list();
    assert_eq!(answers.len(), 20_000);
    for (a, p) in answers.iter().zip((0..n).rev()) {
        let want = (p, if p % 3 == 0 { 6 } else { 0 }, p * 10, p * 10 - 1, p);
        let got = (
            i64::from(a.partition),
            i64::from(a.error),
            a.high_watermark,
            a.last_stable_offset,
            a.log_start_offset,
        );
        assert_eq!((a.topic, got), (t, want));
    }
}

/// What a front end may make of a report on two threads is the report's
/// own text: on every capture, the first tables of the rest part alone are
/// those of the whole report, and the JSON of the lag section made apart,
/// put between the text around it, is serde_json's value of the report.
#[test]
fn a_report_made_in_parts_reads_as_the_whole() {
    let captures = crate::test_captures::all();
    assert!(!captures.is_empty());
    let mut lag_rows = 0;
    for p in captures {
        let mut stats = Stats::new(StatsConfig::default());
        let cfg = Stats::analyzer_config(AnalyzerConfig::default());
        for o in &crate::test_captures::outputs(&p, cfg) {
            stats.push(o);
        }
        let whole = stats.report();
        let title = p.display().to_string();
        let head = stats.report_rest().text_head(&title);
        assert!(whole.to_text(&title).starts_with(&head), "{title}");
        assert_eq!(head, whole.text_head(&title), "{title}");

        let mut rest = whole.clone();
        let lag = std::mem::take(&mut rest.lag);
        lag_rows += lag.partitions.len();
        let lag_text = StatsReport::lag_json(&lag).unwrap();
        // The section made of its rows' text in pieces, however cut (a
        // piece of no rows among them), is the section's text.
        let without_rows = StatsReport::lag_json_without_rows(&lag).unwrap();
        for size in [1, 2, 7, lag.partitions.len().max(1)] {
            let mut pieces: Vec<Vec<u8>> = (lag.partitions.chunks(size))
                .map(|rows| StatsReport::lag_rows_json(rows).unwrap())
                .collect();
            pieces.insert(pieces.len() / 2, StatsReport::lag_rows_json(&[]).unwrap());
            let parts = StatsReport::lag_json_parts(&without_rows, &pieces).unwrap();
            assert!(parts.concat() == lag_text, "{title}: pieces of {size} rows");
        }
        if !lag.partitions.is_empty() {
            // Rows given twice: in the text and as pieces.
            let pieces = [StatsReport::lag_rows_json(&lag.partitions).unwrap()];
            assert!(StatsReport::lag_json_parts(&lag_text, &pieces).is_err());
            // A piece that is not a rows' array.
            let pieces = [lag_text.clone()];
            assert!(StatsReport::lag_json_parts(&without_rows, &pieces).is_err());
        }
        let (mut json, place) = rest.json_around_lag().unwrap();
        json.splice(place, lag_text);
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(parsed, serde_json::to_value(&whole).unwrap(), "{title}");
    }
    // Lag rows were made somewhere: the section written apart held some.
    assert!(lag_rows > 0, "{lag_rows}");
}

/// The text around the lag section is made only of a report whose lag
/// section was taken out for writing apart: with it, an error, not the
/// section twice.
#[test]
fn the_text_around_the_lag_wants_the_lag_taken_out() {
    let r = one_lag_row(&[(Timestamp::new(100, 0), 50)]).report();
    assert!(!r.lag.partitions.is_empty());
    let err = r.json_around_lag().unwrap_err().to_string();
    assert!(err.contains("lag section"), "{err}");
    let mut rest = r.clone();
    rest.lag = Default::default();
    let (text, place) = rest.json_around_lag().unwrap();
    let (before, after) = (&text[..place.start], &text[place.end..]);
    assert!(
        before.ends_with(b"\n  \"lag\": "),
        "{:?}",
        String::from_utf8_lossy(before)
    );
    // The place holds the empty section's value.
    let empty: serde_json::Value = serde_json::from_slice(&text[place.clone()]).unwrap();
    assert_eq!(
        empty,
        serde_json::to_value(lag::LagReport::default()).unwrap()
    );
    assert!(
        after.starts_with(b",\n  \"delivery\": "),
        "{:?}",
        String::from_utf8_lossy(&after[..40])
    );
}
