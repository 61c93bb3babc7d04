//! The generated schema tables: drift against Kafka's JSON definitions, and
//! spot checks of what the tables say, through kafkashark's public API.
//!
//! The drift test regenerates `src/kafka/schema/generated.rs` in memory with
//! `schemagen` and compares it byte for byte with the checked-in file. It
//! needs the schema directory `../shared/kafka-message-schemas` next to the
//! workspace; when that is absent the tests that need it print a line and
//! pass (the table checks that need only the compiled tables always run).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kafkashark::kafka::schema::{
    api_name, definitions, known_versions, message, request_header_version,
    response_header_version, ApiKey, Elem, FieldDef, FieldKind, Marks, MessageDef, MessageKind,
    Prim, SchemaSet, StructDef, Versions, CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION, DATA_SCHEMAS, MESSAGES, REQUEST_HEADER, RESPONSE_HEADER,
};

const SCHEMA_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/kafka-message-schemas"
);
const GENERATED: &str = include_str!("../src/kafka/schema/generated.rs");

/// The schema directory, or `None` (after saying so) when it is not there.
fn schema_dir() -> Option<PathBuf> {
    let dir = Path::new(SCHEMA_DIR);
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        println!("skipping: ../shared not present ({SCHEMA_DIR} is not a directory)");
        None
    }
}

#[test]
fn generated_file_matches_the_schemas() {
    let Some(dir) = schema_dir() else { return };
    let fresh = schemagen::generate(&dir).unwrap_or_else(|e| panic!("schemagen failed: {e}"));
    if fresh != GENERATED {
        let line = fresh
            .lines()
            .zip(GENERATED.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or_else(|| fresh.lines().count().min(GENERATED.lines().count()) + 1);
        panic!(
            "src/kafka/schema/generated.rs is out of date (first difference at line {line}): \
             run `cargo run -p schemagen` from the workspace root and commit the result"
        );
    }
}

#[test]
fn generation_is_deterministic() {
    let Some(dir) = schema_dir() else { return };
    let a = schemagen::generate(&dir).expect("generate");
    let b = schemagen::generate(&dir).expect("generate");
    assert!(a == b, "two runs over the same input differ");
}

fn field<'a>(s: &'a StructDef, name: &str) -> &'a FieldDef {
    s.fields
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{} has no field {name}", s.name))
}

fn inner(f: &FieldDef) -> &'static StructDef {
    match f.kind {
        FieldKind::Struct(s) | FieldKind::Array(Elem::Struct(s)) => s,
        other => panic!("{} is not a struct or struct array: {other:?}", f.name),
    }
}

#[test]
fn produce_request_v12() {
    let m = message(0, MessageKind::Request, 12).expect("Produce v12");
    assert_eq!(m.name, "ProduceRequest");
    assert_eq!(m.set, SchemaSet::Current);
    assert!(m.is_flexible(12));
    assert!(!m.is_flexible(8));
    let names: Vec<&str> = m.body.fields.iter().map(|f| f.name).collect();
    for want in ["TransactionalId", "Acks", "TimeoutMs", "TopicData"] {
        assert!(
            names.contains(&want),
            "ProduceRequest body lacks {want}: {names:?}"
        );
    }
    assert_eq!(m.body.name, "ProduceRequest");
    let tid = field(m.body, "TransactionalId");
    assert!(tid.nullable.contains(12));
    assert_eq!(tid.default, "null");
    assert_eq!(tid.entity_type, "transactionalId");

    let topic_data = field(m.body, "TopicData");
    assert_eq!(topic_data.type_name, "[]TopicProduceData");
    let topic = inner(topic_data);
    assert_eq!(topic.name, "TopicProduceData");
    assert!(field(topic, "Name").map_key);
    assert_eq!(
        field(topic, "TopicId").versions,
        Versions::new(13, i16::MAX)
    );
    let part = inner(field(topic, "PartitionData"));
    let records = field(part, "Records");
    assert!(matches!(records.kind, FieldKind::Prim(Prim::Records)));
}

#[test]
fn produce_response_v13_tagged_fields() {
    let m = message(0, MessageKind::Response, 13).expect("ProduceResponse v13");
    let endpoints = field(m.body, "NodeEndpoints");
    assert_eq!(endpoints.tag, Some(0));
    assert!(endpoints.tagged.contains(13));
    assert!(
        matches!(endpoints.kind, FieldKind::Array(Elem::Struct(s)) if s.name == "NodeEndpoint")
    );

    let partitions = inner(field(
        inner(field(m.body, "Responses")),
        "PartitionResponses",
    ));
    let leader = field(partitions, "CurrentLeader");
    assert_eq!(leader.type_name, "LeaderIdAndEpoch");
    assert!(matches!(leader.kind, FieldKind::Struct(s) if s.name == "LeaderIdAndEpoch"));
    assert_eq!(leader.tag, Some(0));
    assert_eq!(leader.tagged, Versions::new(10, i16::MAX));
}

#[test]
fn produce_legacy_versions_come_from_kafka_3_9() {
    for v in 0..=2 {
        let m = message(0, MessageKind::Request, v).expect("Produce v0-2");
        assert_eq!(m.set, SchemaSet::Legacy, "v{v}");
        assert_eq!(m.valid, Versions::new(0, 2));
        assert!(!m.is_flexible(v));
    }
    assert_eq!(
        message(0, MessageKind::Request, 3).unwrap().set,
        SchemaSet::Current
    );
    assert_eq!(
        message(0, MessageKind::Response, 2).unwrap().set,
        SchemaSet::Legacy
    );
    assert!(message(0, MessageKind::Request, 14).is_none());
    assert_eq!(known_versions(0), Some(Versions::new(0, 13)));
    let defs: Vec<&MessageDef> = definitions(0, MessageKind::Request).collect();
    assert_eq!(defs.len(), 2);
    assert_eq!(defs[0].set, SchemaSet::Current);
}

#[test]
fn api_names() {
    assert_eq!(api_name(0), Some("Produce"));
    assert_eq!(api_name(1), Some("Fetch"));
    assert_eq!(api_name(4), Some("LeaderAndIsr"));
    assert_eq!(api_name(18), Some("ApiVersions"));
    assert_eq!(api_name(74), Some("ListConfigResources"));
    assert_eq!(api_name(89), Some("StreamsGroupDescribe"));
    assert_eq!(api_name(92), Some("DeleteShareGroupOffsets"));
    assert_eq!(api_name(93), None);
    assert_eq!(api_name(-1), None);
}

/// The named api keys are Kafka's numbers, the legacy-only ones included,
/// and name their APIs.
#[test]
fn api_key_constants() {
    assert_eq!(ApiKey::PRODUCE, ApiKey(0));
    assert_eq!(ApiKey::METADATA, ApiKey(3));
    assert_eq!(ApiKey::CONTROLLED_SHUTDOWN, ApiKey(7));
    assert_eq!(ApiKey::JOIN_GROUP, ApiKey(11));
    assert_eq!(ApiKey::SASL_HANDSHAKE, ApiKey(17));
    assert_eq!(ApiKey::API_VERSIONS, ApiKey(18));
    assert_eq!(ApiKey::CONSUMER_GROUP_HEARTBEAT, ApiKey(68));
    assert_eq!(ApiKey::DESCRIBE_TOPIC_PARTITIONS, ApiKey(75));
    assert_eq!(ApiKey::SHARE_FETCH, ApiKey(78));
    assert_eq!(ApiKey::DELETE_SHARE_GROUP_OFFSETS, ApiKey(92));
    assert_eq!(
        ApiKey::DESCRIBE_TOPIC_PARTITIONS.name(),
        Some("DescribeTopicPartitions")
    );
    assert_eq!(ApiKey(93).name(), None);
}

#[test]
fn removed_apis_have_legacy_definitions() {
    for (key, name, max) in [
        (4, "LeaderAndIsr", 7),
        (5, "StopReplica", 4),
        (6, "UpdateMetadata", 8),
        (7, "ControlledShutdown", 3),
    ] {
        for kind in [MessageKind::Request, MessageKind::Response] {
            let defs: Vec<&MessageDef> = definitions(key, kind).collect();
            assert_eq!(defs.len(), 1, "{name} {kind:?}");
            assert_eq!(defs[0].set, SchemaSet::Legacy);
            assert_eq!(defs[0].valid, Versions::new(0, max), "{name} {kind:?}");
            assert!(defs[0].name.starts_with(name));
        }
    }
    // ControlledShutdown v0 is the one request that uses request header v0.
    assert_eq!(request_header_version(7, 0), 0);
    assert_eq!(request_header_version(7, 1), 1);
    assert_eq!(request_header_version(7, 3), 2);
}

#[test]
fn every_listed_api_has_request_and_response() {
    let Some(dir) = schema_dir() else { return };
    let mut listed = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("read schema dir") {
        let path = entry.expect("dir entry").path();
        if path.extension() != Some(std::ffi::OsStr::new("json")) {
            continue;
        }
        let msg = schemagen::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
        if let (Some(key), false) = (msg.api_key, msg.valid.is_empty()) {
            listed.insert((key, msg.valid.min, msg.valid.max));
        }
    }
    assert!(
        listed.len() > 80,
        "found only {} listed api files",
        listed.len()
    );
    for key in 0..=92i16 {
        let ranges: Vec<_> = listed.iter().filter(|(k, ..)| *k == key).collect();
        if ranges.is_empty() {
            continue;
        }
        for kind in [MessageKind::Request, MessageKind::Response] {
            let defs: Vec<_> = definitions(key, kind).collect();
            assert!(!defs.is_empty(), "api key {key}: no {kind:?} definition");
            assert_eq!(defs[0].set, SchemaSet::Current, "api key {key} {kind:?}");
            for v in defs[0].valid.min..=defs[0].valid.max {
                assert!(
                    message(key, kind, v).is_some(),
                    "api key {key} {kind:?} v{v}"
                );
            }
        }
    }
}

#[test]
fn versions_per_api_do_not_overlap_and_are_sorted() {
    for (i, a) in MESSAGES.iter().enumerate() {
        assert!(!a.valid.is_empty(), "{} has an empty range", a.name);
        assert!(matches!(
            a.kind,
            MessageKind::Request | MessageKind::Response
        ));
        for b in &MESSAGES[i + 1..] {
            if a.api_key == b.api_key && a.kind == b.kind {
                assert!(
                    a.valid.max < b.valid.min || b.valid.max < a.valid.min,
                    "{} {} and {} overlap",
                    a.name,
                    a.valid,
                    b.valid
                );
            }
        }
    }
    let order = |m: &MessageDef| {
        (
            m.api_key,
            m.kind == MessageKind::Response,
            m.set == SchemaSet::Legacy,
        )
    };
    assert!(
        MESSAGES.windows(2).all(|w| order(&w[0]) < order(&w[1])),
        "MESSAGES is not sorted"
    );
}

#[test]
fn headers() {
    assert_eq!(REQUEST_HEADER.kind, MessageKind::Header);
    assert_eq!(REQUEST_HEADER.api_key, -1);
    assert_eq!(
        REQUEST_HEADER.valid,
        Versions::new(0, 2),
        "request header v0 must decode"
    );
    assert!(REQUEST_HEADER.is_flexible(2) && !REQUEST_HEADER.is_flexible(1));
    let client_id = field(REQUEST_HEADER.body, "ClientId");
    assert!(!client_id.versions.contains(0) && client_id.versions.contains(1));
    assert_eq!(client_id.flexible, Some(Versions::NONE));
    assert_eq!(field(REQUEST_HEADER.body, "CorrelationId").flexible, None);

    assert_eq!(RESPONSE_HEADER.valid, Versions::new(0, 1));
    assert_eq!(RESPONSE_HEADER.body.fields[0].name, "CorrelationId");
    assert_eq!(response_header_version(18, 4), 0);
    assert_eq!(response_header_version(0, 9), 1);
    assert_eq!(response_header_version(0, 8), 0);
}

#[test]
fn data_schemas() {
    let names: Vec<&str> = DATA_SCHEMAS.iter().map(|m| m.name).collect();
    assert_eq!(
        names,
        [
            "ConsumerProtocolAssignment",
            "ConsumerProtocolSubscription",
            "ControlRecordTypeSchema",
            "DefaultPrincipalData",
            "EndTxnMarker",
            "KRaftVersionRecord",
            "LeaderChangeMessage",
            "SnapshotFooterRecord",
            "SnapshotHeaderRecord",
            "VotersRecord",
        ]
    );
    assert!(DATA_SCHEMAS
        .iter()
        .all(|m| m.kind == MessageKind::Data && m.api_key == -1));
    for m in [
        &CONSUMER_PROTOCOL_SUBSCRIPTION,
        &CONSUMER_PROTOCOL_ASSIGNMENT,
    ] {
        assert_eq!(m.valid, Versions::new(0, 3));
        assert_eq!(m.flexible, Versions::NONE);
    }
    assert!(is_array(field(
        CONSUMER_PROTOCOL_SUBSCRIPTION.body,
        "Topics"
    )));
}

fn is_array(fd: &FieldDef) -> bool {
    matches!(fd.kind, FieldKind::Array(_))
}

/// Walks every struct reachable from `s` (each at most once per path; the tables have no cycles).
fn walk(s: &'static StructDef, f: &mut dyn FnMut(&'static StructDef, &'static FieldDef)) {
    for fd in s.fields {
        f(s, fd);
        if let FieldKind::Struct(inner) | FieldKind::Array(Elem::Struct(inner)) = fd.kind {
            walk(inner, f);
        }
    }
}

/// Every definition of the tables: the messages, both headers, the data schemas.
fn every_definition() -> impl Iterator<Item = &'static MessageDef> {
    MESSAGES
        .iter()
        .chain([&REQUEST_HEADER, &RESPONSE_HEADER])
        .chain(DATA_SCHEMAS.iter().copied())
}

#[test]
fn tagged_fields_are_consistent() {
    let mut tagged_count = 0;
    for m in every_definition() {
        walk(m.body, &mut |s, fd| {
            assert_eq!(
                fd.tag.is_some(),
                !fd.tagged.is_empty(),
                "{}.{} in {}",
                s.name,
                fd.name,
                m.name
            );
            if !fd.tagged.is_empty() {
                tagged_count += 1;
                // Tagged fields only exist in flexible versions.
                assert!(
                    m.flexible.contains(fd.tagged.min),
                    "{}.{} in {} is tagged outside the flexible versions",
                    s.name,
                    fd.name,
                    m.name
                );
            }
            let type_is_array = fd.type_name.starts_with("[]");
            assert_eq!(type_is_array, is_array(fd), "{}.{}", s.name, fd.name);
        });
    }
    assert!(tagged_count > 30, "only {tagged_count} tagged fields");
}

/// Every field's marks are what `Marks::of` makes of its name and entity
/// type (the generator writes them; the decoders test them instead of
/// comparing names), and the marks the decoders rely on are where Kafka's
/// definitions put those names.
#[test]
fn every_field_is_marked_by_its_name_and_entity_type() {
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for m in every_definition() {
        walk(m.body, &mut |s, fd| {
            assert_eq!(
                fd.marks,
                Marks::of(fd.name, fd.entity_type),
                "{}.{} in {}",
                s.name,
                fd.name,
                m.name
            );
            for (what, mark) in [
                ("error code", Marks::ERROR_CODE),
                ("batch index", Marks::BATCH_INDEX),
                ("top int", Marks::TOP_INT),
                ("topic id", Marks::TOPIC_ID),
                ("topic name", Marks::TOPIC_NAME),
                ("place topic", Marks::PLACE_TOPIC),
                ("place partition", Marks::PLACE_PARTITION),
            ] {
                if fd.marks.has(mark) {
                    *seen.entry(what).or_default() += 1;
                }
            }
        });
    }
    // Each mark is on fields of the tables (none is dead), the common ones
    // on many.
    assert_eq!(seen.len(), 7, "{seen:?}");
    assert!(
        seen["error code"] > 100 && seen["topic name"] > 50,
        "{seen:?}"
    );
    let produce = message(0, MessageKind::Request, 12).expect("Produce v12");
    assert!(field(produce.body, "Acks").marks.has(Marks::TOP_INT));
    let fetch = message(1, MessageKind::Request, 16).expect("Fetch v16");
    for name in ["MaxWaitMs", "MinBytes"] {
        assert_eq!(field(fetch.body, name).marks, Marks::TOP_INT, "{name}");
    }
    let topics = inner(field(produce.body, "TopicData"));
    let name = field(topics, "Name");
    assert!(name.marks.has(Marks::TOPIC_NAME) && name.marks.has(Marks::PLACE_TOPIC));
    let parts = inner(field(topics, "PartitionData"));
    assert!(field(parts, "Index").marks.has(Marks::PLACE_PARTITION));
    assert_eq!(field(parts, "Records").marks, Marks::NONE);
}

/// The first node named `name` in `root`'s tree.
fn find<'a>(root: &'a kafkashark::kafka::Node, name: &str) -> Option<&'a kafkashark::kafka::Node> {
    let mut hit = None;
    root.walk(&mut |n, _| {
        if hit.is_none() && n.name == name {
            hit = Some(n);
        }
    });
    hit
}

/// `body` framed as a whole message: its 4-byte size prefix, then `body`.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut m = (body.len() as i32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

#[test]
fn kafka_4_3_0_versions() {
    use kafkashark::kafka::{decode_request, decode_response, DecodeOptions};
    assert_eq!(kafkashark::kafka::schema::KAFKA_RELEASE, "4.3.0");

    // BrokerHeartbeat v2: the tagged, nullable CordonedLogDirs (tag 1).
    let m = message(63, MessageKind::Request, 2).expect("BrokerHeartbeat v2");
    assert_eq!(m.set, SchemaSet::Current);
    let cordoned = field(m.body, "CordonedLogDirs");
    assert_eq!(
        (cordoned.tag, cordoned.tagged),
        (Some(1), Versions::new(2, i16::MAX))
    );
    assert!(cordoned.nullable.contains(2));
    assert!(message(63, MessageKind::Response, 2).is_some());
    assert!(message(63, MessageKind::Request, 3).is_none());
    let mut req = Vec::new();
    req.extend_from_slice(&63i16.to_be_bytes()); // api key
    req.extend_from_slice(&2i16.to_be_bytes()); // api version
    req.extend_from_slice(&7i32.to_be_bytes()); // correlation id
    req.extend_from_slice(&[0, 1, b'c', 0]); // client id "c", no header tags
    req.extend_from_slice(&1i32.to_be_bytes()); // BrokerId
    req.extend_from_slice(&5i64.to_be_bytes()); // BrokerEpoch
    req.extend_from_slice(&100i64.to_be_bytes()); // CurrentMetadataOffset
    req.extend_from_slice(&[0, 0]); // WantFence, WantShutDown
    req.extend_from_slice(&[1, 1, 17, 2]); // one tagged field: tag 1, 17 bytes, one uuid
    req.extend_from_slice(&[0xab; 16]);
    let d = decode_request(&framed(&req), &DecodeOptions::default());
    assert!(d.error.is_none(), "{:?}", d.error);
    let dirs = find(&d.root, "CordonedLogDirs").expect("CordonedLogDirs decoded");
    assert_eq!(dirs.value_text(), "tag 1, 17 bytes");
    let dir = find(dirs, "CordonedLogDirs[0]").expect("one directory");
    assert_eq!((dir.ty.as_ref(), dir.offset, dir.length), ("uuid", 42, 16));

    // DescribeLogDirs v5: IsCordoned on each result.
    let m = message(35, MessageKind::Response, 5).expect("DescribeLogDirs v5");
    let result = inner(field(m.body, "Results"));
    assert_eq!(
        field(result, "IsCordoned").versions,
        Versions::new(5, i16::MAX)
    );
    assert!(message(35, MessageKind::Request, 5).is_some());
    let mut resp = 9i32.to_be_bytes().to_vec(); // correlation id
    resp.push(0); // no header tags
    resp.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    resp.extend_from_slice(&0i16.to_be_bytes()); // ErrorCode
    resp.push(2); // one result
    resp.extend_from_slice(&0i16.to_be_bytes()); // its ErrorCode
    resp.extend_from_slice(&[3, b'/', b'd']); // LogDir "/d"
    resp.push(1); // no topics
    resp.extend_from_slice(&100i64.to_be_bytes()); // TotalBytes
    resp.extend_from_slice(&50i64.to_be_bytes()); // UsableBytes
    resp.extend_from_slice(&[1, 0]); // IsCordoned true, no tags
    resp.push(0); // no tags
    let d = decode_response(&framed(&resp), 35, 5, &DecodeOptions::default());
    assert!(d.error.is_none(), "{:?}", d.error);
    let flag = find(&d.root, "IsCordoned").expect("IsCordoned decoded");
    assert_eq!(flag.value_text(), "true");

    // The control-record key's data schema.
    let control = DATA_SCHEMAS
        .iter()
        .find(|m| m.name == "ControlRecordTypeSchema")
        .expect("ControlRecordTypeSchema");
    assert_eq!(control.body.fields.len(), 1);
    assert_eq!(field(control.body, "Type").type_name, "int16");
}
