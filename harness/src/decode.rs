//! The request and response harnesses: one message decoded every way the
//! engine decodes it (tree, records as JSON, records deferred, streamed JSON
//! and text, the summary scans), each checked against the tree.

use kafkashark::kafka::schema::{self, MessageKind};
use kafkashark::kafka::{decode_request, decode_response, DecodeOptions, Decoded};

use crate::tree::{
    check_decoded, check_deferred, check_records_json, check_streamed, check_text_streamed,
};
use crate::{fuzz_opts, records_json_opts, Choices};

/// Prepends a size prefix matching the rest when `fix` is set, else uses the input as is.
fn message_bytes(fix: bool, body: &[u8]) -> Vec<u8> {
    if fix {
        let mut m = u32::try_from(body.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes()
            .to_vec();
        m.extend_from_slice(body);
        m
    } else {
        body.to_vec()
    }
}

/// Request decode. Byte 0: bit 0 set → the rest gets a correct size prefix
/// (so the fuzzer explores bodies), clear → the rest is the whole message.
pub fn request_decode(data: &[u8]) {
    request_decode_scanned(data);
}

/// [`request_decode`], returning how many of the summary scans (print's,
/// stats') answered, and so were compared with the tree.
pub fn request_decode_scanned(data: &[u8]) -> usize {
    let mut c = Choices::new(data);
    let fix = c.byte() & 1 == 1;
    let msg = message_bytes(fix, c.rest());
    let d = decode_request(&msg, &fuzz_opts());
    check_decoded(&msg, &d);
    let fast = decode_request(&msg, &records_json_opts());
    check_records_json(&msg, &d, &fast);
    check_deferred(&msg, &d, |o| decode_request(&msg, o));
    check_text_streamed(&msg, &d, None);
    check_streamed(&msg, &fast, None);
    let mut answered = 0;
    for opts in scan_opts() {
        let s = kafkashark::kafka::decode::summarize_request(&msg, &opts);
        check_without_topics(
            s.clone(),
            |o| kafkashark::kafka::decode::summarize_request(&msg, o),
            &opts,
        );
        answered += usize::from(check_summary(s, &decode_request(&msg, &opts), false));
    }
    answered
}

/// The summary scan without topic names noted (`summary_topics` off, as for
/// `stats`' responses) answers as with them, with the same facts, and only
/// `Summary::topics` empty.
fn check_without_topics(
    with: Option<kafkashark::kafka::decode::Summary>,
    scan: impl Fn(&DecodeOptions) -> Option<kafkashark::kafka::decode::Summary>,
    opts: &DecodeOptions,
) {
    let without = scan(&DecodeOptions {
        summary_topics: false,
        ..opts.clone()
    });
    match (with, without) {
        (Some(mut w), Some(o)) => {
            assert!(o.topics.is_empty(), "topics noted: {:?}", o.topics);
            w.topics.clear();
            assert_eq!(w, o, "the same summary but for its topics");
        }
        (None, None) => {}
        (w, o) => panic!(
            "the scan answered {} with topics, {} without",
            w.is_some(),
            o.is_some()
        ),
    }
}

/// The options the analyzer's summary scan runs with: `print`'s and `stats`'.
fn scan_opts() -> [DecodeOptions; 2] {
    let print = DecodeOptions {
        records: false,
        ..fuzz_opts()
    };
    let stats = DecodeOptions {
        records_headers_only: true,
        ..print.clone()
    };
    [print, stats]
}

/// Where the summary scan answers, it says what the tree of the same bytes
/// says (the analyzer takes one for the other): the message decodes
/// cleanly (no error, no warning), with the same header, throttle time, error codes and topics.
/// True when the scan answered.
fn check_summary(
    s: Option<kafkashark::kafka::decode::Summary>,
    d: &Decoded,
    response: bool,
) -> bool {
    let Some(s) = s else { return false };
    assert!(
        d.clean(),
        "the scan answered, the decoder found {:?} {:?}",
        d.error,
        d.warning
    );
    assert_eq!(
        (s.api_key, s.api_version, s.correlation_id),
        (d.api_key, d.api_version, d.correlation_id),
        "header"
    );
    if response {
        let (throttle, errors) = kafkashark::analyzer::response_facts(&d.root);
        assert_eq!(s.throttle_time_ms, throttle, "throttle time");
        assert_eq!(s.error_codes, errors, "error codes");
    } else {
        assert_eq!(s.client_id, d.client_id, "client id");
    }
    assert_eq!(s.topics, d.topics, "topics");
    assert_eq!(s.topic_ids, d.topic_ids, "topic ids");
    true
}

/// Response decode. Byte 0 picks a response definition, byte 1 a version in
/// (and just beyond) its range, byte 2 bit 0 the size prefix as in
/// [`request_decode`].
pub fn response_decode(data: &[u8]) {
    response_decode_scanned(data);
}

/// [`response_decode`], returning how many summary scans answered.
pub fn response_decode_scanned(data: &[u8]) -> usize {
    let mut c = Choices::new(data);
    let defs: Vec<_> = schema::MESSAGES
        .iter()
        .filter(|m| m.kind == MessageKind::Response)
        .collect();
    let pick = usize::from(c.byte());
    let vbyte = c.byte();
    let (key, version) = match defs.get(pick % defs.len().max(1)) {
        Some(def) if pick < 250 => {
            let span = i32::from(def.valid.max) - i32::from(def.valid.min) + 2;
            let v = i32::from(def.valid.min) + i32::from(vbyte) % span.max(1);
            (def.api_key, i16::try_from(v).unwrap_or(0))
        }
        // Keys and versions outside the tables.
        _ => (i16::from(vbyte as i8), i16::from(pick as u8 as i8)),
    };
    let fix = c.byte() & 1 == 1;
    let msg = message_bytes(fix, c.rest());
    let d = decode_response(&msg, key, version, &fuzz_opts());
    check_decoded(&msg, &d);
    let fast = decode_response(&msg, key, version, &records_json_opts());
    check_records_json(&msg, &d, &fast);
    check_deferred(&msg, &d, |o| decode_response(&msg, key, version, o));
    check_text_streamed(&msg, &d, Some((key, version)));
    check_streamed(&msg, &fast, Some((key, version)));
    let mut answered = 0;
    for opts in scan_opts() {
        let s = kafkashark::kafka::decode::summarize_response(&msg, key, version, &opts);
        check_without_topics(
            s.clone(),
            |o| kafkashark::kafka::decode::summarize_response(&msg, key, version, o),
            &opts,
        );
        answered += usize::from(check_summary(
            s,
            &decode_response(&msg, key, version, &opts),
            true,
        ));
    }
    answered
}
