//! A message's JSON and text written while it is decoded (`stream_json`,
//! `stream_text`), against its tree's, on every message of every capture
//! (`captures/` and `../shared/captures` when present): the same bytes, the
//! same error, the same facts; written in parts or dry, the same again; the
//! same with records kept as bytes (`records_deferred`).

mod support;

use kafkashark::analyzer::{response_facts, MessageInfo};
use kafkashark::kafka::decode::{
    decode_request, decode_response, decode_streamed, DecodeOptions, Decoded, Kind,
};
use kafkashark::kafka::schema::ApiKey;
use kafkashark::kafka::stream_json::{JsonSink, Stream, StreamFacts};
use kafkashark::kafka::tree::{Layout, Node, SourceBytes, Spill, Value};
use kafkashark_harness::{self as harness, put_varint};

/// How `print -V` decodes a message: `Some(None)` a request, `Some(Some(
/// (key, version)))` a response with its request's; `None` neither.
fn how(i: &MessageInfo) -> Option<Option<(i16, i16)>> {
    match (i.kind, i.api_key, i.api_version) {
        (Kind::Request, _, _) => Some(None),
        (Kind::Response, Some(k), Some(v)) => Some(Some((k.0, v))),
        _ => None,
    }
}

/// The message decoded both ways, with `annotate` (if any) applied to the
/// tree's nodes and handed to the sink: (tree, tree's JSON, streamed,
/// its JSON, its facts). Without an annotation the sink takes leaves by
/// their parts.
fn both(
    raw: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    mut annotate: Option<&mut dyn FnMut(&mut Node)>,
) -> (Decoded, Vec<u8>, Decoded, Vec<u8>, StreamFacts) {
    let mut tree = match response {
        None => decode_request(raw, opts),
        Some((k, v)) => decode_response(raw, k, v, opts),
    };
    if let Some(a) = annotate.as_mut() {
        tree.root.walk_mut(*a);
    }
    let mut want = b"[".to_vec();
    let bytes = SourceBytes {
        message: raw,
        sources: &tree.sources,
    };
    tree.root.write_json_in(&mut want, &bytes);
    let mut got = b"[".to_vec();
    let annotate: Option<&mut dyn FnMut(&mut Node)> = match annotate {
        Some(a) => Some(a),
        None => None,
    };
    let mut sink = JsonSink::new(&mut got, raw, annotate);
    let streamed = decode_streamed(raw, response, opts, Stream::Json(&mut sink));
    let facts = sink.facts();
    (tree, want, streamed, got, facts)
}

/// Calls `f` with every message of every capture (`captures/` and
/// `../shared/captures` when present) that `print -V --format jsonl`
/// streams — where it is, its bytes, how it is decoded (as [`how`]) —
/// and the options, with records written from their bytes and not.
fn each_streamed(mut f: impl FnMut(&str, &[u8], Option<(i16, i16)>, &DecodeOptions)) {
    for records_json in [true, false] {
        let opts = DecodeOptions {
            records: true,
            records_json,
            ..DecodeOptions::default()
        };
        for p in support::capture_files(true) {
            for m in support::full_trees(&p) {
                let Some(response) = how(&m.info) else {
                    continue;
                };
                let at = format!("{} frame {}", p.display(), m.info.frame);
                f(&at, &m.raw.bytes, response, &opts);
            }
        }
    }
}

/// A stream's decode (`s`) that found an error or a warning: so did the
/// tree's — but for a ControlledShutdown v0 request, which
/// `decode_request` decodes again with header v1 (a stream's caller takes
/// the tree's path for anything not clean).
fn assert_fails_as_tree(at: &str, tree: &Decoded, s: &Decoded) {
    let retried =
        s.api_key.map(ApiKey) == Some(ApiKey::CONTROLLED_SHUTDOWN) && s.api_version == Some(0);
    assert!(!tree.clean() || retried, "{at}: only the stream failed");
}

/// A clean stream's decode (`s`): the tree is clean too, and
/// the facts, topics and ids it took are those the tree gives.
fn assert_facts_are_trees(at: &str, tree: &Decoded, s: &Decoded, facts: StreamFacts) {
    assert!(tree.clean(), "{at}: only the tree failed");
    let (throttle, errors) = response_facts(&tree.root);
    assert_eq!(facts.throttle_time_ms, throttle, "{at}");
    assert_eq!(facts.error_codes, errors, "{at}");
    assert_eq!(s.topics, tree.topics, "{at}");
    assert_eq!(s.topic_ids, tree.topic_ids, "{at}");
}

/// Every message of every capture (`captures/` and `../shared/captures`
/// when present), decoded as `print -V --format jsonl` decodes it and as
/// the tests of the records' JSON do: where the streamed decode has no
/// error, its JSON is the tree's byte for byte, after the bytes written
/// before it, and its facts, topics and ids are the tree's; where it has
/// one, so does the tree.
#[test]
fn streamed_json_is_the_trees_on_every_capture() {
    let mut streamed = 0;
    let mut with_error = 0;
    each_streamed(|at, raw, response, opts| {
        let (tree, want, s, got, facts) = both(raw, response, opts, None);
        if !s.clean() {
            assert_fails_as_tree(at, &tree, &s);
            with_error += 1;
            return;
        }
        assert!(got == want, "{at}: JSON differs");
        assert_facts_are_trees(at, &tree, &s, facts);
        assert_eq!(s.correlation_id, tree.correlation_id, "{at}");
        streamed += 1;
    });
    assert!(streamed > 1000, "{streamed} messages streamed");
    eprintln!("{streamed} streamed, {with_error} with an error");
}

/// The annotation reaches every node, parents included, before it is
/// written: details put on every uuid, int and struct node show as the
/// tree's.
#[test]
fn every_node_is_annotated_before_it_is_written() {
    let opts = DecodeOptions {
        records: true,
        records_json: true,
        ..DecodeOptions::default()
    };
    let mut mark = |n: &mut Node| match n.value {
        // Made at run time (and so escaped): a borrowed text must need
        // no escape.
        Value::Uuid(_) | Value::Int(_) => n.detail = Some("marked \"here\"".to_string().into()),
        Value::Text(_) => n.detail = Some(format!("{} marked", n.length).into()),
        _ => {}
    };
    let mut checked = 0;
    for p in support::capture_files(false) {
        for m in support::full_trees(&p) {
            let i = &m.info;
            let Some(response) = how(i) else { continue };
            let (_, want, s, got, _) = both(&m.raw.bytes, response, &opts, Some(&mut mark));
            if s.clean() {
                assert!(got == want, "{} frame {}", p.display(), i.frame);
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked}");
}

/// A message cut short streams with an error (its JSON is not used); the
/// tree has the same error.
#[test]
fn a_cut_message_reports_its_error() {
    let opts = DecodeOptions::default();
    let mut checked = 0;
    for p in support::capture_files(false) {
        for m in support::full_trees(&p) {
            let i = &m.info;
            if i.kind != Kind::Request || m.raw.bytes.len() < 12 {
                continue;
            }
            let cut = &m.raw.bytes[..m.raw.bytes.len() - 1];
            let (tree, _, s, _, _) = both(cut, None, &opts, None);
            assert!(s.error.is_some() && tree.error.is_some());
            assert_eq!(
                s.error.map(|e| e.to_string()),
                tree.error.map(|e| e.to_string())
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// The message streamed three ways: written whole, written with `spill`
/// taking the output once it holds `at` bytes (the parts it took, then
/// what was left), and dry. (Written whole: the JSON, the result, the
/// facts; spilled: the parts; dry: what it wrote, the result, the facts.)
#[allow(clippy::type_complexity)]
fn three_ways(
    raw: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    at: usize,
) -> (
    (Vec<u8>, Decoded, StreamFacts),
    Vec<Vec<u8>>,
    (Vec<u8>, Decoded, StreamFacts),
) {
    let decode = |sink: &mut JsonSink<'_>| decode_streamed(raw, response, opts, Stream::Json(sink));
    let mut whole = Vec::new();
    let mut sink = JsonSink::new(&mut whole, raw, None);
    let d = decode(&mut sink);
    let facts = sink.facts();
    let parts = std::cell::RefCell::new(Vec::new());
    let take = |b: &mut Vec<u8>| parts.borrow_mut().push(std::mem::take(b));
    let mut rest = Vec::new();
    let mut sink = JsonSink::new(&mut rest, raw, None).spilling(Spill { at, take: &take });
    let _ = decode(&mut sink);
    let mut parts = parts.into_inner();
    parts.push(rest);
    let mut none = Vec::new();
    let mut sink = JsonSink::new(&mut none, raw, None).dry();
    let dry = decode(&mut sink);
    let dry_facts = sink.facts();
    ((whole, d, facts), parts, (none, dry, dry_facts))
}

/// Every message of every capture, and every request cut one byte
/// short: spilled in parts, the JSON is the same bytes (however small
/// the parts); a dry sink writes nothing and gives the same result and
/// facts as writing (the same error, topics, ids), which is what lets
/// `print -V` decide before writing whether a big message's line stands.
#[test]
fn spilled_and_dry_streams_agree_on_every_capture() {
    let (mut checked, mut errors, mut cut_in_parts) = (0, 0, 0);
    each_streamed(|at, raw, response, opts| {
        let cut = raw.get(..raw.len().saturating_sub(1)).unwrap_or_default();
        let tries = [(raw, 512), (raw, 1)];
        let cut_try = (cut, 64);
        for (bytes, at_bytes) in tries
            .into_iter()
            .chain((response.is_none() && opts.records_json).then_some(cut_try))
        {
            let at = format!("{at}, {} bytes, parts from {at_bytes}", bytes.len());
            let ((whole, d, facts), parts, (none, dry, dry_facts)) =
                three_ways(bytes, response, opts, at_bytes);
            assert!(parts.concat() == whole, "{at}: parts differ");
            if whole.len() > 2 * at_bytes {
                cut_in_parts += 1;
                assert!(parts.len() > 1, "{at}");
            }
            assert!(none.is_empty(), "{at}: the dry sink wrote");
            assert_eq!(
                dry.error.map(|e| e.to_string()),
                d.error.as_ref().map(ToString::to_string),
                "{at}"
            );
            assert_eq!(dry_facts, facts, "{at}");
            assert_eq!(dry.topics, d.topics, "{at}");
            assert_eq!(dry.topic_ids, d.topic_ids, "{at}");
            assert_eq!(dry.correlation_id, d.correlation_id, "{at}");
            checked += 1;
            errors += usize::from(d.error.is_some());
        }
    });
    assert!(
        checked > 3000 && errors > 100 && cut_in_parts > 1000,
        "{checked} {errors} {cut_in_parts}"
    );
}

/// A Produce v3 request of `partitions` uncompressed batches of
/// `count` small records each.
fn big_produce(partitions: i32, count: i32) -> Vec<u8> {
    let mut records = Vec::new();
    for n in 0..count {
        let mut r = vec![0u8]; // attributes
        put_varint(&mut r, i64::from(n)); // timestampDelta
        put_varint(&mut r, i64::from(n)); // offsetDelta
        put_varint(&mut r, 3);
        r.extend_from_slice(b"key");
        put_varint(&mut r, 11);
        r.extend_from_slice(format!("value-{:05}", n % 100_000).as_bytes());
        put_varint(&mut r, 0); // no headers
        put_varint(&mut records, r.len() as i64);
        records.extend_from_slice(&r);
    }
    let batch = harness::record_batch(0, count, &records);
    let mut body = Vec::new();
    body.extend_from_slice(&0i16.to_be_bytes()); // Produce
    body.extend_from_slice(&3i16.to_be_bytes()); // v3
    body.extend_from_slice(&7i32.to_be_bytes()); // correlation id
    body.extend_from_slice(&2i16.to_be_bytes());
    body.extend_from_slice(b"me"); // client id
    body.extend_from_slice(&(-1i16).to_be_bytes()); // no transactional id
    body.extend_from_slice(&1i16.to_be_bytes()); // acks
    body.extend_from_slice(&30_000i32.to_be_bytes()); // timeout
    body.extend_from_slice(&1i32.to_be_bytes()); // one topic
    body.extend_from_slice(&1i16.to_be_bytes());
    body.extend_from_slice(b"t");
    body.extend_from_slice(&partitions.to_be_bytes());
    for p in 0..partitions {
        body.extend_from_slice(&p.to_be_bytes());
        body.extend_from_slice(&(batch.len() as i32).to_be_bytes());
        body.extend_from_slice(&batch);
    }
    let mut msg = (body.len() as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    msg
}

/// A Produce of 48 partitions of 4,000 records each (1.3 MB, as big as
/// librdkafka's default message.max.bytes allows): its JSON is about 20
/// times its bytes, yet spilled from 64 KB on, no part holds more than a
/// few hundred KB — a run of records is cut at `RUN_BYTES`, and the
/// output is offered between any two nodes, those of a node written
/// whole included.
#[test]
fn a_big_produce_is_handed_on_in_bounded_parts() {
    let raw = big_produce(48, 4000);
    let opts = DecodeOptions {
        records: true,
        records_json: true,
        ..DecodeOptions::default()
    };
    let ((whole, d, _), parts, (none, dry, _)) = three_ways(&raw, None, &opts, 64 << 10);
    assert!(d.error.is_none() && dry.error.is_none() && none.is_empty());
    assert!(parts.concat() == whole);
    let largest = parts.iter().map(Vec::len).max().unwrap_or(0);
    assert!(
        whole.len() > 15 * raw.len(),
        "{} {}",
        whole.len(),
        raw.len()
    );
    assert!(largest < (64 << 10) + (1 << 20), "{largest}");
    assert!(parts.len() > 100, "{}", parts.len());
    // The tree made with `records_json` has runs of at most RUN_BYTES
    // and one record, several per batch.
    let tree = decode_request(&raw, &opts);
    let mut runs = 0;
    tree.root.walk(&mut |n, _| {
        if matches!(n.value, Value::Records(_)) {
            runs += 1;
            assert!(
                n.length < kafkashark::kafka::records::RUN_BYTES + 64,
                "{}",
                n.length
            );
        }
    });
    assert!(runs >= 48 * 6, "{runs}");
}

/// Every message of every capture, decoded with `records_deferred` (runs
/// of clean records kept as bytes): its text, the records' nodes made as
/// it is written, is the text of the tree decoded without it, and so is
/// its JSON; the same error.
#[test]
fn deferred_records_write_the_trees_text_on_every_capture() {
    let (mut checked, mut deferred) = (0, 0);
    each_streamed(|at, raw, response, opts| {
        if opts.records_json {
            return;
        }
        let deferring = DecodeOptions {
            records_deferred: true,
            ..opts.clone()
        };
        let decode = |o: &DecodeOptions| match response {
            None => decode_request(raw, o),
            Some((k, v)) => decode_response(raw, k, v, o),
        };
        let (tree, kept) = (decode(opts), decode(&deferring));
        let differs = harness::deferred_differs(raw, &tree, &kept);
        assert!(differs.is_none(), "{at}: {differs:?}");
        let mut runs = 0;
        kept.root
            .walk(&mut |n, _| runs += usize::from(matches!(n.value, Value::Records(_))));
        deferred += usize::from(runs > 0);
        checked += 1;
    });
    assert!(checked > 1000 && deferred > 100, "{checked} {deferred}");
}

/// The big Produce's tree with `records_deferred` holds a few nodes per
/// run instead of ten per record.
#[test]
fn deferred_records_keep_a_big_tree_small() {
    let raw = big_produce(48, 4000);
    let nodes = |records_deferred| {
        let opts = DecodeOptions {
            records_deferred,
            ..DecodeOptions::default()
        };
        let d = decode_request(&raw, &opts);
        assert!(d.error.is_none());
        let mut n = 0usize;
        d.root.walk(&mut |_, _| n += 1);
        n
    };
    let (all, kept) = (nodes(false), nodes(true));
    assert!(all > 48 * 4000 * 5, "{all}");
    assert!(kept < 48 * 40, "{kept}");
}

/// The message's text in `layout` made as it is decoded (`stream_text`,
/// measured then written) and the text of its tree, with `annotate` (if any)
/// applied to both: (the tree, its text, the stream's result, its text
/// and facts when the measuring decode found no error).
#[allow(clippy::type_complexity)]
fn text_both(
    raw: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    layout: Layout,
    mut annotate: Option<&mut dyn FnMut(&mut Node)>,
) -> (Decoded, String, Decoded, Option<(String, StreamFacts)>) {
    let mut tree = match response {
        None => decode_request(raw, opts),
        Some((k, v)) => decode_response(raw, k, v, opts),
    };
    if let Some(a) = annotate.as_mut() {
        tree.root.walk_mut(*a);
    }
    let bytes = SourceBytes {
        message: raw,
        sources: &tree.sources,
    };
    let mut want = String::new();
    kafkashark::kafka::tree::write_text_in(&mut want, &tree.root, "    ", &bytes, layout);
    let (s, text) = harness::streamed_text(raw, response, opts, "    ", layout, annotate);
    (tree, want, s, text)
}

/// Every message of every capture, its records kept as bytes or not, in
/// the wide and the compact layout by turns: where the measuring decode
/// finds no error, the text written as the message is decoded is its
/// tree's, and the facts, topics and ids are the tree's; where it finds
/// one, so does the tree. With an annotation on every node, the same on the
/// shipped captures, compact with descriptions.
#[test]
fn streamed_text_is_the_trees_on_every_capture() {
    let (mut streamed, mut failed) = (0, 0);
    each_streamed(|at, raw, response, opts| {
        let opts = DecodeOptions {
            records_json: false,
            records_deferred: opts.records_json,
            ..opts.clone()
        };
        let layout = match (streamed + failed) % 2 {
            0 => Layout::Wide,
            _ => Layout::Compact { about: false },
        };
        let (tree, want, s, text) = text_both(raw, response, &opts, layout, None);
        let Some((got, facts)) = text else {
            assert_fails_as_tree(at, &tree, &s);
            failed += 1;
            return;
        };
        assert!(got == want, "{at}: text differs");
        assert_facts_are_trees(at, &tree, &s, facts);
        streamed += 1;
    });
    assert!(streamed > 1000, "{streamed} streamed, {failed} failed");
    let mut mark = |n: &mut Node| {
        if let Value::Int(_) | Value::Text(_) = n.value {
            n.detail = Some(format!("{} marked", n.length).into());
        }
    };
    let mut marked = 0;
    for p in support::capture_files(false) {
        for m in support::full_trees(&p) {
            let Some(response) = how(&m.info) else {
                continue;
            };
            let opts = DecodeOptions::default();
            let layout = Layout::Compact { about: true };
            let (_, want, _, text) =
                text_both(&m.raw.bytes, response, &opts, layout, Some(&mut mark));
            if let Some((got, _)) = text {
                assert!(got == want, "{} frame {}", p.display(), m.info.frame);
                marked += 1;
            }
        }
    }
    assert!(marked > 100, "{marked}");
}
