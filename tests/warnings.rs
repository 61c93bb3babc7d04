//! Messages that are well-formed but unusual: bytes after a body that decoded
//! whole are a warning (the receiver ignores them), not a decode error. Real
//! captures: librdkafka 2.16's Metadata v12 requests carry 3 such bytes
//! (`captures/a5-…`), and older rdkafka ApiVersions v0 requests 4
//! (`ndpi__kafka.pcapng` in ../shared, skipped when absent).

mod support;

use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::schema::ApiKey;
use kafkashark::kafka::{decode_request, DecodeOptions, DecodeWarning};
use std::path::Path;

const SHARED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/captures/public");

#[test]
fn trailing_bytes_after_a_whole_body_are_a_warning() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures/a5-ipv6-confluent-admin-produce-consume.pcap");
    let a = support::analyze(&path, Ports::default());
    let warned: Vec<_> = a
        .messages
        .iter()
        .filter(|m| m.info.decode_warning.is_some())
        .collect();
    assert_eq!(
        warned.iter().map(|m| m.info.frame).collect::<Vec<_>>(),
        [27, 155]
    );
    for m in &warned {
        let i = &m.info;
        assert_eq!(i.api_key, Some(ApiKey::METADATA));
        assert_eq!(i.api_version, Some(12));
        assert_eq!(i.decode_error, None, "a warning is not a decode failure");
        assert!(
            a.messages.iter().any(|r| r.info.kind == Kind::Response
                && r.info.stream == i.stream
                && r.info.correlation_id == i.correlation_id
                && r.info.paired
                && r.info.decode_error.is_none()),
            "the request's response pairs with it"
        );
        let w = i.decode_warning.expect("warning");
        assert_eq!(
            w,
            DecodeWarning::Trailing {
                offset: 0x1b,
                len: 3,
                kind: Kind::Request
            }
        );
        assert_eq!(
            w.to_string(),
            "3 bytes after the body at 0x001b, ignored by the broker"
        );

        // The tree shows every field, then the three bytes as one node.
        let d = decode_request(&m.raw.bytes, &DecodeOptions::default());
        assert!(d.error.is_none() && !d.clean());
        assert_eq!(d.warning, Some(w));
        let body = d.body().expect("body");
        for f in [
            "Topics",
            "AllowAutoTopicCreation",
            "IncludeTopicAuthorizedOperations",
        ] {
            assert!(body.child(f).is_some(), "{f}");
        }
        let last = d.root.children.last().expect("children");
        assert_eq!(last.name, "trailing bytes");
        assert_eq!((last.offset, last.length), (0x1b, 3));
        assert_eq!(last.error, None);
        assert!(last
            .about
            .as_deref()
            .is_some_and(|a| a.starts_with("warning: 3 bytes")));
        assert_eq!(last.end(), m.raw.bytes.len());
    }
    // Every other message decodes clean.
    assert!(a
        .messages
        .iter()
        .filter(|m| m.info.decode_warning.is_none())
        .all(|m| m.info.decode_error.is_none()));
}

#[test]
fn rdkafka_api_versions_v0_with_trailing_bytes() {
    let path = Path::new(SHARED).join("ndpi__kafka.pcapng");
    if !path.exists() {
        println!("skipping: {} not present", path.display());
        return;
    }
    let a = support::analyze(&path, Ports::default());
    let warned: Vec<_> = a
        .messages
        .iter()
        .filter_map(|m| m.info.decode_warning.map(|w| (m.info.api_key, w)))
        .collect();
    assert_eq!(warned.len(), 4, "{warned:?}");
    for (api, w) in warned {
        assert_eq!(api, Some(ApiKey::API_VERSIONS));
        assert!(matches!(
            w,
            DecodeWarning::Trailing {
                len: 4,
                kind: Kind::Request,
                ..
            }
        ));
    }
}

/// ControlledShutdown v0 is defined with header v0 (no client id), but
/// clients send it with header v1: read with header v0 its client id would
/// pass for bytes after the body. The header that decodes clean wins, in
/// the tree and in the analyzer (whose summary leaves a warning to the tree).
#[test]
fn controlled_shutdown_v0_with_header_v1_is_not_a_warning() {
    let mut body = Vec::new();
    body.extend_from_slice(&7i16.to_be_bytes()); // ControlledShutdown
    body.extend_from_slice(&0i16.to_be_bytes()); // v0
    body.extend_from_slice(&1i32.to_be_bytes()); // correlation id
    body.extend_from_slice(&[0, 4, b't', b'e', b's', b't']); // client id (header v1)
    body.extend_from_slice(&5i32.to_be_bytes()); // BrokerId
    let mut msg = (body.len() as i32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    let d = decode_request(&msg, &DecodeOptions::default());
    assert!(d.clean(), "{:?} {:?}", d.error, d.warning);
    assert_eq!(d.client_id.as_deref(), Some("test"));

    let path =
        Path::new(SHARED).join("wireshark-wiki-kafka-testcases-v4__unsupported-version.pcapng");
    if !path.exists() {
        println!("skipping: {} not present", path.display());
        return;
    }
    let a = support::analyze(&path, Ports::default());
    let m = a
        .messages
        .iter()
        .find(|m| {
            m.info.api_key == Some(ApiKey::CONTROLLED_SHUTDOWN) && m.info.api_version == Some(0)
        })
        .expect("ControlledShutdown v0");
    assert_eq!(m.info.client_id.as_deref(), Some("test"));
    assert_eq!(
        (&m.info.decode_error, &m.info.decode_warning),
        (&None, &None)
    );
}
