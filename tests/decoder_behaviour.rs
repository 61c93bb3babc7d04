//! Decoder behaviour on hand-built messages: embedded consumer protocol, tagged
//! fields, unknown apis and versions, hostile counts, secrets, header rules,
//! and every-prefix truncation of real messages.

use kafkashark::kafka::tree::{Node, Value};
use kafkashark::kafka::{decode_request, decode_response, DecodeOptions};

/// A tiny encoder for building test messages field by field.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn i8(mut self, v: i8) -> Self {
        self.0.push(v as u8);
        self
    }
    fn i16(mut self, v: i16) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i32(mut self, v: i32) -> Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn uv(mut self, mut v: u32) -> Self {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }
    fn str16(self, s: &str) -> Self {
        let mut e = self.i16(s.len() as i16);
        e.0.extend_from_slice(s.as_bytes());
        e
    }
    fn cstr(self, s: &str) -> Self {
        let mut e = self.uv(s.len() as u32 + 1);
        e.0.extend_from_slice(s.as_bytes());
        e
    }
    fn bytes32(self, b: &[u8]) -> Self {
        let mut e = self.i32(b.len() as i32);
        e.0.extend_from_slice(b);
        e
    }
    fn cbytes(self, b: &[u8]) -> Self {
        let mut e = self.uv(b.len() as u32 + 1);
        e.0.extend_from_slice(b);
        e
    }
    fn raw(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    /// Prepends the int32 size.
    fn framed(self) -> Vec<u8> {
        let mut m = (self.0.len() as i32).to_be_bytes().to_vec();
        m.extend_from_slice(&self.0);
        m
    }
}

/// Request header v1: key, version, correlation id, client id.
fn header_v1(key: i16, version: i16, corr: i32) -> Enc {
    Enc::default().i16(key).i16(version).i32(corr).str16("test")
}

/// Request header v2: v1 plus an empty tagged-field section.
fn header_v2(key: i16, version: i16, corr: i32) -> Enc {
    header_v1(key, version, corr).uv(0)
}

fn opts() -> DecodeOptions {
    DecodeOptions::default()
}

/// ConsumerProtocolSubscription v1: Topics ["orders"], UserData null, OwnedPartitions [].
fn subscription_v1() -> Vec<u8> {
    Enc::default()
        .i16(1) // version
        .i32(1) // Topics: 1 element
        .str16("orders")
        .i32(-1) // UserData null
        .i32(0) // OwnedPartitions: 0 elements
        .0
}

fn join_group_v5(protocol_type: &str) -> Vec<u8> {
    header_v1(11, 5, 9)
        .str16("g1") // GroupId
        .i32(10_000) // SessionTimeoutMs
        .i32(30_000) // RebalanceTimeoutMs
        .str16("") // MemberId
        .i16(-1) // GroupInstanceId null
        .str16(protocol_type) // ProtocolType
        .i32(1) // Protocols: 1 element
        .str16("range") // Name
        .bytes32(&subscription_v1()) // Metadata
        .framed()
}

#[test]
fn consumer_subscription_inside_join_group_is_decoded_with_spans() {
    let msg = join_group_v5("consumer");
    let d = decode_request(&msg, &opts());
    assert_eq!(d.error, None);
    let meta = d
        .root
        .path(&[
            "JoinGroupRequest",
            "Protocols",
            "JoinGroupRequestProtocol[0]",
            "Metadata",
        ])
        .expect("metadata node");
    let version = meta.child("Version").expect("embedded version");
    // The embedded bytes start right after Metadata's int32 length.
    assert_eq!(version.offset, meta.offset + 4);
    assert_eq!(version.value, Value::Int(1));
    let topic = meta
        .path(&["Topics", "Topics[0]"])
        .expect("subscribed topic");
    assert_eq!(topic.value, Value::Str("orders".into()));
    assert_eq!(&msg[topic.offset + 2..topic.end()], b"orders");
    let last = meta.children.last().expect("children");
    assert_eq!(
        last.end(),
        meta.end(),
        "embedded nodes cover the bytes exactly"
    );
}

#[test]
fn other_protocol_types_are_left_as_bytes() {
    let d = decode_request(&join_group_v5("connect"), &opts());
    assert_eq!(d.error, None);
    let meta = d
        .root
        .path(&[
            "JoinGroupRequest",
            "Protocols",
            "JoinGroupRequestProtocol[0]",
            "Metadata",
        ])
        .expect("metadata node");
    assert!(meta.children.is_empty());
}

#[test]
fn unknown_api_key_decodes_the_header_and_says_so() {
    let msg = header_v1(10_000, 0, 1).raw(&[1, 2, 3]).framed();
    let d = decode_request(&msg, &opts());
    assert_eq!(d.correlation_id, Some(1));
    assert_eq!(d.client_id.as_deref(), Some("test"));
    let e = d.error.expect("error");
    assert!(e.what.contains("unknown api key 10000"), "{e}");
    assert_eq!(e.offset, 18);
    let last = d.root.children.last().expect("nodes");
    assert_eq!((last.offset, last.length), (18, 3));
}

#[test]
fn version_beyond_the_tables_is_not_guessed() {
    let msg = header_v2(0, 99, 1).raw(&[0; 10]).framed();
    let d = decode_request(&msg, &opts());
    let e = d.error.expect("error");
    assert!(
        e.what.contains("Produce v99 is beyond the known versions"),
        "{e}"
    );
}

#[test]
fn hostile_array_count_is_refused_without_allocating() {
    // DeleteTopics v0: TopicNames claims a billion elements with 2 bytes left.
    let msg = header_v1(20, 0, 1).i32(1_000_000_000).raw(&[0, 0]).framed();
    let d = decode_request(&msg, &opts());
    let e = d.error.expect("error");
    assert!(e.what.contains("1000000000 element(s) claimed"), "{e}");
    assert_eq!(e.path, "DeleteTopicsRequest.TopicNames");
    // No node per claimed element: the tree stays the size of the bytes.
    let mut nodes = 0;
    d.root.walk(&mut |_, _| nodes += 1);
    assert!(nodes < 20, "{nodes} nodes");
}

#[test]
fn hostile_string_length_is_checked_against_what_remains() {
    // CreateTopics v7 flexible: a topic name claiming 2^31 bytes.
    let msg = header_v2(19, 7, 1)
        .uv(2)
        .uv(0x7fff_ffff)
        .raw(b"abc")
        .raw(&[0; 40])
        .framed();
    let d = decode_request(&msg, &opts());
    let e = d.error.expect("error");
    assert!(e.what.contains("truncated"), "{e}");
}

#[test]
fn unknown_tagged_fields_are_shown_raw_and_known_ones_decoded() {
    // Produce v13 response: Responses [], ThrottleTimeMs 7, tagged: unknown tag 5
    // (3 bytes) and NodeEndpoints (tag 0) with one endpoint.
    let endpoints = Enc::default()
        .uv(2) // 1 element
        .i32(1)
        .cstr("b1")
        .i32(9092)
        .uv(0) // Rack null
        .uv(0) // tagged fields of the endpoint
        .0;
    let msg = Enc::default()
        .i32(42) // correlation id
        .uv(0) // header tagged fields
        .uv(1) // Responses: 0 elements
        .i32(7) // ThrottleTimeMs
        .uv(2) // two tagged fields
        .uv(0)
        .uv(endpoints.len() as u32)
        .raw(&endpoints) // tag 0, size, NodeEndpoints
        .uv(5)
        .uv(3)
        .raw(&[1, 2, 3]) // tag 5, size 3, data
        .framed();
    // Tags must be ascending on the wire; kafkashark decodes them in wire order.
    let d = decode_response(&msg, 0, 13, &opts());
    assert_eq!(d.error, None, "{}", d.root);
    let tagged = d
        .root
        .path(&["ProduceResponse", "tagged_fields"])
        .expect("tagged");
    assert_eq!(tagged.value, Value::Int(2));
    let ne = tagged.child("NodeEndpoints").expect("known tag decoded");
    let host = ne
        .path(&["NodeEndpoints", "NodeEndpoint[0]", "Host"])
        .expect("host");
    assert_eq!(host.value, Value::Str("b1".into()));
    let unknown = tagged.child("unknown tag 5").expect("unknown tag kept");
    let data = unknown.child("data").expect("raw bytes");
    assert_eq!(&msg[data.offset..data.end()], &[1, 2, 3]);
}

#[test]
fn api_versions_response_always_uses_header_v0() {
    // ApiVersions v3 response: header v0 (no tagged fields), ErrorCode 0,
    // ApiKeys [ {0, 0, 13, tagged 0} ], ThrottleTimeMs 0, tagged 0.
    let msg = Enc::default()
        .i32(5)
        .i16(0)
        .uv(2)
        .i16(0)
        .i16(0)
        .i16(13)
        .uv(0)
        .i32(0)
        .uv(0)
        .framed();
    let d = decode_response(&msg, 18, 3, &opts());
    assert_eq!(d.error, None, "{}", d.root);
    let h = d.root.child("ResponseHeader").expect("header");
    assert_eq!(h.ty, "v0");
    assert_eq!(h.length, 4);
    let key = d
        .root
        .path(&["ApiVersionsResponse", "ApiKeys", "ApiVersion[0]", "ApiKey"])
        .expect("api key");
    assert_eq!(key.value_text(), "0 (Produce)");
}

#[test]
fn sasl_auth_bytes_are_redacted_unless_asked() {
    // SaslAuthenticate v2 (flexible): AuthBytes = "\0user\0secret" (PLAIN).
    let token = b"\0user\0hunter2";
    let msg = header_v2(36, 2, 3).cbytes(token).uv(0).framed();
    let d = decode_request(&msg, &opts());
    assert_eq!(d.error, None);
    let auth = d
        .root
        .path(&["SaslAuthenticateRequest", "AuthBytes"])
        .expect("auth");
    let shown = auth.value_text();
    assert!(shown.contains("redacted"), "{shown}");
    assert!(!format!("{}", d.root).contains("hunter2"));
    assert!(!d.root.to_json().to_string().contains(&hex(b"hunter2")));
    let revealed = decode_request(
        &msg,
        &DecodeOptions {
            show_secrets: true,
            ..opts()
        },
    );
    let auth = revealed
        .root
        .path(&["SaslAuthenticateRequest", "AuthBytes"])
        .expect("auth");
    assert!(auth.value_text().contains(&hex(b"hunter2")[..8]));
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn nullable_struct_marker() {
    // ConsumerGroupHeartbeat v0 response: ThrottleTimeMs, ErrorCode, ErrorMessage null,
    // MemberId "m", MemberEpoch 3, HeartbeatIntervalMs 500, Assignment null (-1), tagged 0.
    let msg = Enc::default()
        .i32(1)
        .uv(0)
        .i32(0)
        .i16(0)
        .uv(0)
        .cstr("m")
        .i32(3)
        .i32(500)
        .i8(-1)
        .uv(0)
        .framed();
    let d = decode_response(&msg, 68, 0, &opts());
    assert_eq!(d.error, None, "{}", d.root);
    let a = d
        .root
        .path(&["ConsumerGroupHeartbeatResponse", "Assignment"])
        .expect("assignment");
    assert_eq!(a.value, Value::Null);
    assert_eq!(a.length, 1);
}

/// Checks the tree invariants: children lie inside their parent, in order, in
/// the same byte source.
fn assert_spans(n: &Node) {
    let mut prev_end = n.offset;
    for c in &n.children {
        if c.source == n.source {
            assert!(
                c.offset >= n.offset && c.end() <= n.end(),
                "{} [{}, {}] outside {} [{}, {}]",
                c.name,
                c.offset,
                c.length,
                n.name,
                n.offset,
                n.length
            );
            assert!(
                c.offset >= prev_end,
                "{} at {} overlaps its previous sibling (ends {prev_end}) in {}:\n{}",
                c.name,
                c.offset,
                n.name,
                kafkashark::kafka::tree::render_text(n)
            );
            prev_end = c.end();
        }
        assert_spans(c);
    }
}

#[test]
fn every_prefix_of_real_messages_decodes_without_panic() {
    // Recorded captures shipped in the repository.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
    use kafkashark::capture::{FileSource, FrameSource};
    let mut checked = 0;
    for name in [
        "a1-kcat-produce-consume-group.pcap",
        "a2-confluent-compression-codecs.pcap",
        "a3-kafka-python-admin.pcap",
        "a4-kafkajs-produce-consume-sll2.pcap",
    ] {
        let mut src = FileSource::open(dir.join(name).to_str().expect("path")).expect("open");
        let mut a = Analyzer::new(AnalyzerConfig::default());
        let mut out = Vec::new();
        while let Some(f) = src.next_frame().expect("read") {
            a.push(&f, &mut out);
        }
        a.finish(&mut out);
        for o in out {
            let Output::Message(m) = o else { continue };
            let bytes = &m.raw.bytes[..];
            let decode = |b: &[u8]| match (m.info.kind, m.info.api_key, m.info.api_version) {
                (kafkashark::kafka::decode::Kind::Response, Some(k), Some(v)) => {
                    decode_response(b, k.0, v, &opts())
                }
                _ => decode_request(b, &opts()),
            };
            let whole = decode(bytes);
            assert_spans(&whole.root);
            if bytes.len() > 2048 {
                continue;
            }
            for cut in 0..bytes.len() {
                let d = decode(&bytes[..cut]);
                let e = d.error.unwrap_or_else(|| {
                    panic!(
                        "{name} frame {}: prefix {cut} reported no error",
                        m.info.frame
                    )
                });
                assert!(
                    e.offset <= cut,
                    "{name} frame {}: error at {} beyond cut {cut}",
                    m.info.frame,
                    e.offset
                );
                assert_spans(&d.root);
                checked += 1;
            }
        }
    }
    assert!(checked > 10_000, "only {checked} prefixes checked");
}
