//! The Produce v13 response of ../shared/seeds/produce-response-v13-wire-format.txt:
//! its "Example" values are encoded by the `kafka-protocol` crate (an encoder
//! independent of ours) as a v13 response with header v1 and a size prefix,
//! and kafkashark must decode every value — including the tagged
//! `CurrentLeader` (tag 0 of each partition response) and `NodeEndpoints`
//! (tag 0 of the body) — with spans that nest, and at the byte offsets worked
//! out by hand below.
//!
//! The example values are embedded here; when the seed file is present its
//! Example JSON block is parsed and must hold the same values.

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    ProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ResponseHeader};
use kafka_protocol::protocol::{Encodable, StrBytes};
use kafkashark::kafka::{decode_response, DecodeOptions, Node, Value};

/// The seed's example, one element per array as in the seed.
#[derive(Clone, Debug, PartialEq)]
struct Example {
    topic_id: [u8; 16],
    index: i32,
    error_code: i16,
    base_offset: i64,
    log_append_time_ms: i64,
    log_start_offset: i64,
    batch_index: i32,
    batch_index_error_message: Option<String>,
    error_message: Option<String>,
    leader_id: i32,
    leader_epoch: i32,
    throttle_time_ms: i32,
    node_id: i32,
    host: String,
    port: i32,
    rack: Option<String>,
}

/// The correlation id of the response (not part of the seed).
const CORRELATION_ID: i32 = 7;

fn embedded() -> Example {
    Example {
        topic_id: uuid_bytes("550e8400-e29b-41d4-a716-446655440000"),
        index: 3,
        error_code: 0,
        base_offset: 284_729,
        log_append_time_ms: 1_711_648_200_000,
        log_start_offset: 284_729,
        batch_index: 0,
        batch_index_error_message: None,
        error_message: None,
        leader_id: 1,
        leader_epoch: 17,
        throttle_time_ms: 0,
        node_id: 1,
        host: "broker-1.kafka.local".into(),
        port: 9092,
        rack: Some("us-east-1a".into()),
    }
}

fn uuid_bytes(s: &str) -> [u8; 16] {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    assert_eq!(hex.len(), 32, "uuid {s}");
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex uuid");
    }
    out
}

fn seed_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/seeds/produce-response-v13-wire-format.txt")
}

/// Parses the JSON object that follows the seed's `Example` line.
fn parse_seed(text: &str) -> Example {
    let at = text
        .lines()
        .scan(0usize, |pos, line| {
            let start = *pos;
            *pos += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, line)| line.trim() == "Example")
        .map(|(start, _)| start)
        .expect("seed has an Example section");
    let open = at + text[at..].find('{').expect("Example JSON opens");
    let mut depth = 0usize;
    let mut close = None;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&text[open..close.expect("Example JSON closes")])
            .expect("Example is JSON");
    let topic = &json["Responses"][0];
    let part = &topic["PartitionResponses"][0];
    let rec_err = &part["RecordErrors"][0];
    let node = &json["NodeEndpoints"][0];
    let int = |v: &serde_json::Value| v.as_i64().unwrap_or_else(|| panic!("integer, got {v}"));
    let opt_str = |v: &serde_json::Value| v.as_str().map(str::to_string);
    Example {
        topic_id: uuid_bytes(topic["TopicId"].as_str().expect("TopicId")),
        index: int(&part["Index"]) as i32,
        error_code: int(&part["ErrorCode"]) as i16,
        base_offset: int(&part["BaseOffset"]),
        log_append_time_ms: int(&part["LogAppendTimeMs"]),
        log_start_offset: int(&part["LogStartOffset"]),
        batch_index: int(&rec_err["BatchIndex"]) as i32,
        batch_index_error_message: opt_str(&rec_err["BatchIndexErrorMessage"]),
        error_message: opt_str(&part["ErrorMessage"]),
        leader_id: int(&part["CurrentLeader"]["LeaderId"]) as i32,
        leader_epoch: int(&part["CurrentLeader"]["LeaderEpoch"]) as i32,
        throttle_time_ms: int(&json["ThrottleTimeMs"]) as i32,
        node_id: int(&node["NodeId"]) as i32,
        host: node["Host"].as_str().expect("Host").to_string(),
        port: int(&node["Port"]) as i32,
        rack: opt_str(&node["Rack"]),
    }
}

fn str_bytes(s: &Option<String>) -> Option<StrBytes> {
    s.as_ref().map(|s| StrBytes::from_string(s.clone()))
}

/// The example as a whole message, encoded by the `kafka-protocol` crate.
fn encode_with_crate(x: &Example) -> Vec<u8> {
    let topic_id = crate_uuid(&x.topic_id);
    let body = ProduceResponse::default()
        .with_responses(vec![TopicProduceResponse::default()
            .with_topic_id(topic_id)
            .with_partition_responses(vec![PartitionProduceResponse::default()
                .with_index(x.index)
                .with_error_code(x.error_code)
                .with_base_offset(x.base_offset)
                .with_log_append_time_ms(x.log_append_time_ms)
                .with_log_start_offset(x.log_start_offset)
                .with_record_errors(vec![BatchIndexAndErrorMessage::default()
                    .with_batch_index(x.batch_index)
                    .with_batch_index_error_message(str_bytes(&x.batch_index_error_message))])
                .with_error_message(str_bytes(&x.error_message))
                .with_current_leader(
                    LeaderIdAndEpoch::default()
                        .with_leader_id(BrokerId(x.leader_id))
                        .with_leader_epoch(x.leader_epoch),
                )])])
        .with_throttle_time_ms(x.throttle_time_ms)
        .with_node_endpoints(vec![NodeEndpoint::default()
            .with_node_id(BrokerId(x.node_id))
            .with_host(StrBytes::from_string(x.host.clone()))
            .with_port(x.port)
            .with_rack(str_bytes(&x.rack))]);
    let mut msg = vec![0; 4];
    ResponseHeader::default()
        .with_correlation_id(CORRELATION_ID)
        .encode(&mut msg, 1)
        .expect("header v1 encodes");
    body.encode(&mut msg, 13)
        .expect("ProduceResponse v13 encodes");
    let size = (msg.len() - 4) as i32;
    msg[..4].copy_from_slice(&size.to_be_bytes());
    msg
}

/// The crate's uuid type is not re-exported; it is reached through `FromStr`.
fn crate_uuid<U: std::str::FromStr>(b: &[u8; 16]) -> U
where
    U::Err: std::fmt::Debug,
{
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let s = format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    );
    s.parse().expect("uuid")
}

fn node<'a>(root: &'a Node, path: &[&str]) -> &'a Node {
    root.path(path)
        .unwrap_or_else(|| panic!("no node {}\n{root}", path.join("/")))
}

/// Asserts a node's type, value and span.
#[track_caller]
fn is(root: &Node, path: &[&str], ty: &str, value: Value, span: (usize, usize)) {
    let n = node(root, path);
    assert_eq!(
        (n.ty.as_ref(), &n.value, (n.offset, n.length)),
        (ty, &value, span),
        "{}\n{root}",
        path.join("/")
    );
}

fn str_or_null(s: &Option<String>) -> Value {
    s.as_ref().map_or(Value::Null, |s| Value::Str(s.clone()))
}

/// Every child lies inside its parent and after its previous sibling.
fn assert_spans_nest(n: &Node, path: &str) {
    let mut prev = n.offset;
    for c in &n.children {
        let p = format!("{path}/{}", c.name);
        assert!(
            c.offset >= n.offset && c.end() <= n.end(),
            "{p} outside its parent"
        );
        assert!(c.offset >= prev, "{p} overlaps its previous sibling");
        prev = c.end();
        assert_spans_nest(c, &p);
    }
}

/// Compact string/array length prefixes below are single bytes: every length here is < 127.
fn compact_len(s: &Option<String>) -> usize {
    1 + s.as_ref().map_or(0, String::len)
}

fn check(x: &Example) {
    let msg = encode_with_crate(x);
    let d = decode_response(&msg, 0, 13, &DecodeOptions::default());
    let root = &d.root;
    assert_eq!(d.error, None, "{root}");
    assert_eq!(d.correlation_id, Some(CORRELATION_ID));
    assert_eq!((root.offset, root.length), (0, msg.len()));
    assert_spans_nest(root, "");

    // Offsets worked out by hand from the v13 layout (header v1: correlation id,
    // empty tagged fields; TopicProduceResponse has no Name in v13).
    let body = 4 + 4 + 1; // size, correlation_id, header tagged fields
    let topic = body + 1; // Responses: compact length 2
    let part = topic + 16 + 1; // TopicId, PartitionResponses: compact length 2
    let rec_errs = part + 4 + 2 + 8 + 8 + 8; // Index .. LogStartOffset
    let rec_err = rec_errs + 1;
    let err_msg = rec_err + 4 + compact_len(&x.batch_index_error_message) + 1;
    let part_tags = err_msg + compact_len(&x.error_message);
    let leader = part_tags + 1 + 1 + 1; // count 1, tag 0, size 9
    let leader_len = 4 + 4 + 1; // LeaderId, LeaderEpoch, tagged fields
    let topic_tags = leader + leader_len;
    let throttle = topic_tags + 1;
    let body_tags = throttle + 4;
    let endpoints = body_tags + 1 + 1 + 1; // count 1, tag 0, size
    let endpoint = endpoints + 1; // compact length 2
    let host = endpoint + 4;
    let port = host + 1 + x.host.len();
    let rack = port + 4;
    let endpoints_end = rack + compact_len(&x.rack) + 1;
    assert_eq!(
        endpoints_end,
        msg.len(),
        "the hand layout covers every byte"
    );
    if *x == embedded() {
        assert_eq!(
            (throttle, leader, endpoints, msg.len()),
            (0x4e, 0x44, 0x55, 127)
        );
    }
    // The crate put the values where the hand layout says.
    assert_eq!(
        msg[throttle..throttle + 4],
        x.throttle_time_ms.to_be_bytes()
    );
    assert_eq!(msg[leader + 4..leader + 8], x.leader_epoch.to_be_bytes());
    assert_eq!(msg[port..port + 4], x.port.to_be_bytes());

    let i32v = |v: i32| Value::Int(v.into());
    let b = "ProduceResponse";
    is(
        root,
        &["Frame", "size"],
        "int32",
        Value::Int(msg.len() as i64 - 4),
        (0, 4),
    );
    is(
        root,
        &["ResponseHeader", "correlation_id"],
        "int32",
        i32v(CORRELATION_ID),
        (4, 4),
    );
    is(
        root,
        &["ResponseHeader", "tagged_fields"],
        "uvarint",
        Value::Int(0),
        (8, 1),
    );
    is(root, &[b], "struct", Value::None, (body, msg.len() - body));

    let t = [b, "Responses", "TopicProduceResponse[0]"];
    is(
        root,
        &t[..2],
        "[]TopicProduceResponse",
        Value::Text("1 element".into()),
        (body, throttle - body),
    );
    is(
        root,
        &[b, "Responses", "length"],
        "uvarint",
        Value::Int(2),
        (body, 1),
    );
    is(
        root,
        &t,
        "TopicProduceResponse",
        Value::Text("struct".into()),
        (topic, throttle - topic),
    );
    assert!(node(root, &t).child("Name").is_none(), "no Name in v13");
    is(
        root,
        &[t[0], t[1], t[2], "TopicId"],
        "uuid",
        Value::Uuid(x.topic_id),
        (topic, 16),
    );

    let p = [
        t[0],
        t[1],
        t[2],
        "PartitionResponses",
        "PartitionProduceResponse[0]",
    ];
    let pf = |f: &'static str| [p[0], p[1], p[2], p[3], p[4], f];
    is(
        root,
        &p,
        "PartitionProduceResponse",
        Value::Text("struct".into()),
        (part, topic_tags - part),
    );
    is(root, &pf("Index"), "int32", i32v(x.index), (part, 4));
    is(
        root,
        &pf("ErrorCode"),
        "int16",
        Value::Int(x.error_code.into()),
        (part + 4, 2),
    );
    is(
        root,
        &pf("BaseOffset"),
        "int64",
        Value::Int(x.base_offset),
        (part + 6, 8),
    );
    is(
        root,
        &pf("LogAppendTimeMs"),
        "int64",
        Value::Int(x.log_append_time_ms),
        (part + 14, 8),
    );
    is(
        root,
        &pf("LogStartOffset"),
        "int64",
        Value::Int(x.log_start_offset),
        (part + 22, 8),
    );
    if x.error_code == 0 {
        assert_eq!(node(root, &pf("ErrorCode")).value_text(), "0 (NONE)");
    }
    if *x == embedded() {
        assert_eq!(
            node(root, &pf("LogAppendTimeMs")).value_text(),
            "1711648200000 (2024-03-28T17:50:00.000Z)"
        );
    }
    is(
        root,
        &pf("RecordErrors"),
        "[]BatchIndexAndErrorMessage",
        Value::Text("1 element".into()),
        (rec_errs, err_msg - rec_errs),
    );
    let re = [
        p[0],
        p[1],
        p[2],
        p[3],
        p[4],
        "RecordErrors",
        "BatchIndexAndErrorMessage[0]",
    ];
    let rf = |f: &'static str| [re[0], re[1], re[2], re[3], re[4], re[5], re[6], f];
    is(
        root,
        &re,
        "BatchIndexAndErrorMessage",
        Value::Text("struct".into()),
        (rec_err, err_msg - rec_err),
    );
    is(
        root,
        &rf("BatchIndex"),
        "int32",
        i32v(x.batch_index),
        (rec_err, 4),
    );
    let bem = compact_len(&x.batch_index_error_message);
    is(
        root,
        &rf("BatchIndexErrorMessage"),
        "string",
        str_or_null(&x.batch_index_error_message),
        (rec_err + 4, bem),
    );
    is(
        root,
        &rf("tagged_fields"),
        "uvarint",
        Value::Int(0),
        (rec_err + 4 + bem, 1),
    );
    is(
        root,
        &pf("ErrorMessage"),
        "string",
        str_or_null(&x.error_message),
        (err_msg, compact_len(&x.error_message)),
    );

    // CurrentLeader: tag 0 of the partition response, 9 bytes.
    is(
        root,
        &pf("tagged_fields"),
        "uvarint",
        Value::Int(1),
        (part_tags, topic_tags - part_tags),
    );
    let cl = [
        p[0],
        p[1],
        p[2],
        p[3],
        p[4],
        "tagged_fields",
        "CurrentLeader",
    ];
    let entry = node(root, &cl);
    is(
        root,
        &cl,
        "LeaderIdAndEpoch",
        Value::Text(format!("tag 0, {leader_len} bytes").into()),
        (part_tags + 1, topic_tags - part_tags - 1),
    );
    let clf = |f: &'static str| [cl[0], cl[1], cl[2], cl[3], cl[4], cl[5], cl[6], f];
    is(
        root,
        &clf("tag"),
        "uvarint",
        Value::Int(0),
        (part_tags + 1, 1),
    );
    is(
        root,
        &clf("size"),
        "uvarint",
        Value::Int(leader_len as i64),
        (part_tags + 2, 1),
    );
    is(
        root,
        &clf("CurrentLeader"),
        "LeaderIdAndEpoch",
        Value::Text("struct".into()),
        (leader, leader_len),
    );
    assert_tagged_size(entry);
    let lf = |f: &'static str| {
        [
            cl[0],
            cl[1],
            cl[2],
            cl[3],
            cl[4],
            cl[5],
            cl[6],
            "CurrentLeader",
            f,
        ]
    };
    is(
        root,
        &lf("LeaderId"),
        "int32",
        i32v(x.leader_id),
        (leader, 4),
    );
    is(
        root,
        &lf("LeaderEpoch"),
        "int32",
        i32v(x.leader_epoch),
        (leader + 4, 4),
    );
    is(
        root,
        &lf("tagged_fields"),
        "uvarint",
        Value::Int(0),
        (leader + 8, 1),
    );
    is(
        root,
        &[t[0], t[1], t[2], "tagged_fields"],
        "uvarint",
        Value::Int(0),
        (topic_tags, 1),
    );

    is(
        root,
        &[b, "ThrottleTimeMs"],
        "int32",
        i32v(x.throttle_time_ms),
        (throttle, 4),
    );

    // NodeEndpoints: tag 0 of the body.
    is(
        root,
        &[b, "tagged_fields"],
        "uvarint",
        Value::Int(1),
        (body_tags, msg.len() - body_tags),
    );
    let ne = [b, "tagged_fields", "NodeEndpoints"];
    let ne_len = msg.len() - endpoints;
    is(
        root,
        &ne,
        "[]NodeEndpoint",
        Value::Text(format!("tag 0, {ne_len} bytes").into()),
        (body_tags + 1, msg.len() - body_tags - 1),
    );
    is(
        root,
        &[b, "tagged_fields", "NodeEndpoints", "tag"],
        "uvarint",
        Value::Int(0),
        (body_tags + 1, 1),
    );
    is(
        root,
        &[b, "tagged_fields", "NodeEndpoints", "size"],
        "uvarint",
        Value::Int(ne_len as i64),
        (body_tags + 2, 1),
    );
    let arr = [b, "tagged_fields", "NodeEndpoints", "NodeEndpoints"];
    is(
        root,
        &arr,
        "[]NodeEndpoint",
        Value::Text("1 element".into()),
        (endpoints, ne_len),
    );
    assert_tagged_size(node(root, &ne));
    let ep = [arr[0], arr[1], arr[2], arr[3], "NodeEndpoint[0]"];
    let epf = |f: &'static str| [ep[0], ep[1], ep[2], ep[3], ep[4], f];
    is(
        root,
        &ep,
        "NodeEndpoint",
        Value::Text("struct".into()),
        (endpoint, msg.len() - endpoint),
    );
    is(
        root,
        &epf("NodeId"),
        "int32",
        i32v(x.node_id),
        (endpoint, 4),
    );
    is(
        root,
        &epf("Host"),
        "string",
        Value::Str(x.host.clone()),
        (host, 1 + x.host.len()),
    );
    is(root, &epf("Port"), "int32", i32v(x.port), (port, 4));
    is(
        root,
        &epf("Rack"),
        "string",
        str_or_null(&x.rack),
        (rack, compact_len(&x.rack)),
    );
    is(
        root,
        &epf("tagged_fields"),
        "uvarint",
        Value::Int(0),
        (msg.len() - 1, 1),
    );
}

/// A tagged entry's `size` equals the bytes of the decoded field, which
/// directly follows it and ends the entry.
fn assert_tagged_size(entry: &Node) {
    let size = entry.child("size").expect("size");
    let field = entry.children.last().expect("field");
    assert_eq!(field.name, entry.name);
    assert_eq!(
        size.value,
        Value::Int(field.length as i64),
        "{}",
        entry.name
    );
    assert_eq!(field.offset, size.end(), "{}", entry.name);
    assert_eq!(field.end(), entry.end(), "{}", entry.name);
}

#[test]
fn seed_example_decodes_from_the_seed_file() {
    let path = seed_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipping: {} not present", path.display());
        return;
    };
    let x = parse_seed(&text);
    assert_eq!(x, embedded(), "the embedded values are the seed's");
    check(&x);
}

#[test]
fn seed_example_decodes_with_embedded_values() {
    check(&embedded());
}

#[test]
fn null_and_absent_variants_keep_the_layout() {
    // The same shape with the nullable strings flipped, so both branches of the
    // hand layout are exercised.
    let mut x = embedded();
    x.batch_index_error_message = Some("batch too large".into());
    x.error_message = Some("INVALID_RECORD".into());
    x.rack = None;
    x.error_code = 87;
    check(&x);
}
