//! The invariants of a decoded tree — spans, error offsets, the bound on its
//! nodes — and of its other outputs: the same message decoded with records
//! deferred, written straight to JSON, or streamed as JSON or text must say
//! what the tree says.

use kafkashark::analyzer::Output;
use kafkashark::kafka::schema;
use kafkashark::kafka::tree::{Node, SourceBytes};
use kafkashark::kafka::{DecodeOptions, Decoded};

use crate::{fuzz_opts, records_json_opts, FUZZ_MAX_DECOMPRESSED, NODES_PER_BYTE, NODE_SLACK};

/// Checks a decoded message: spans nested and inside their sources, the error
/// inside its source, and the node count bounded by the bytes decoded.
pub fn check_decoded(msg: &[u8], d: &Decoded) {
    let source_len = |s: u16| -> usize {
        if s == 0 {
            msg.len()
        } else {
            d.sources.get(usize::from(s) - 1).map_or_else(
                || panic!("node points at missing byte source #{s}"),
                |b| b.data.len(),
            )
        }
    };
    for (i, s) in d.sources.iter().enumerate() {
        let parent_len = if s.parent == 0 {
            msg.len()
        } else {
            assert!(
                usize::from(s.parent) <= i,
                "byte source #{} names a later parent #{}",
                i + 1,
                s.parent
            );
            source_len(s.parent)
        };
        assert!(
            s.parent_offset.saturating_add(s.parent_length) <= parent_len,
            "byte source #{} covers [{}, +{}) beyond its parent's {} bytes",
            i + 1,
            s.parent_offset,
            s.parent_length,
            parent_len
        );
    }
    assert_eq!(d.root.source, 0, "the root lies in the message");
    assert_eq!(
        (d.root.offset, d.root.length),
        (0, msg.len()),
        "the root spans the whole message"
    );
    let nodes = check_nodes(&d.root, &source_len);
    let inflated: usize = d.sources.iter().map(|s| s.data.len()).sum();
    let bound = msg
        .len()
        .saturating_add(inflated)
        .saturating_mul(NODES_PER_BYTE)
        .saturating_add(NODE_SLACK);
    assert!(
        nodes <= bound,
        "{nodes} nodes for {} message bytes and {inflated} decompressed bytes",
        msg.len()
    );
    assert!(
        inflated <= FUZZ_MAX_DECOMPRESSED * kafkashark::kafka::records::TOTAL_FACTOR + 1,
        "{inflated} bytes decompressed for one message"
    );
    if let Some(e) = &d.error {
        let len = source_len(e.source);
        assert!(
            e.offset <= len,
            "decode error offset 0x{:x} beyond byte source #{} ({len} bytes): {e}",
            e.offset,
            e.source
        );
        // Problems with the size prefix itself (a message cut short by a gap or
        // the snaplen, a negative size) are told by `error` alone: every byte
        // present decoded.
        let frame_level =
            e.what.starts_with("message truncated") || e.what.starts_with("negative message size");
        assert!(
            frame_level || d.root.first_error().is_some(),
            "a decode error without a malformed node: {e}"
        );
    }
    // Rendering and JSON must work on anything the decoder produced.
    let text = kafkashark::kafka::tree::render_text(&d.root);
    assert!(
        !text.contains('\u{1b}'),
        "escape character in the text tree"
    );
    // The JSON `print` writes is serde_json's own text: read back
    // (`to_json`) and written again, the same bytes.
    let s = serde_json::to_string(&d.root.to_json()).expect("tree serialises");
    let mut direct = Vec::new();
    d.root.write_json(&mut direct);
    assert!(
        direct == s.as_bytes(),
        "write_json is not serde_json's text"
    );
    assert!(
        !direct.contains(&0x1b),
        "raw escape character in the JSON tree"
    );
}

/// Checks spans of `n` and its subtree; returns the node count.
fn check_nodes(n: &Node, source_len: &dyn Fn(u16) -> usize) -> usize {
    let mut count = 0usize;
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        count += 1;
        let len = source_len(n.source);
        assert!(
            n.offset.checked_add(n.length).is_some_and(|e| e <= len),
            "node {} [{}:0x{:x}, {}B] lies beyond its byte source ({len} bytes)",
            n.name,
            n.source,
            n.offset,
            n.length
        );
        for c in &n.children {
            if c.source == n.source {
                assert!(
                    c.offset >= n.offset && c.end() <= n.end(),
                    "child {} [0x{:x}, {}B] outside parent {} [0x{:x}, {}B] (source {})",
                    c.name,
                    c.offset,
                    c.length,
                    n.name,
                    n.offset,
                    n.length,
                    n.source
                );
            }
            stack.push(c);
        }
    }
    count
}
/// the text and JSON of `d`, the tree decoded without it, and has its error.
pub(crate) fn check_deferred(msg: &[u8], d: &Decoded, decode: impl Fn(&DecodeOptions) -> Decoded) {
    let kept = decode(&DecodeOptions {
        records_deferred: true,
        ..fuzz_opts()
    });
    if let Some(what) = deferred_differs(msg, d, &kept) {
        panic!("records_deferred {what}");
    }
}

/// How `kept`, the tree of `msg` decoded with `records_deferred`, differs
/// from `d`, decoded without it (the same options otherwise), if it does:
/// its error, its text (records' nodes made from their bytes) or its JSON.
pub fn deferred_differs(msg: &[u8], d: &Decoded, kept: &Decoded) -> Option<&'static str> {
    if d.error != kept.error {
        return Some("finds another error");
    }
    let bytes = SourceBytes {
        message: msg,
        sources: &kept.sources,
    };
    let (mut want, mut got) = (String::new(), String::new());
    kafkashark::kafka::tree::write_text(&mut want, &d.root, "  ");
    use kafkashark::kafka::tree::{write_text_in, Layout};
    write_text_in(&mut got, &kept.root, "  ", &bytes, Layout::Wide);
    if want != got {
        return Some("writes other text");
    }
    // Compact: the records' lines written straight from their bytes, into
    // a text (checked as UTF-8) and into bytes as `print -V` writes them
    // (written in place, unchecked).
    let none = SourceBytes::default();
    for about in [false, true] {
        let layout = Layout::Compact { about };
        let (mut want, mut got, mut raw) = (String::new(), String::new(), Vec::new());
        write_text_in(&mut want, &d.root, "    ", &none, layout);
        write_text_in(&mut got, &kept.root, "    ", &bytes, layout);
        write_text_in(&mut raw, &kept.root, "    ", &bytes, layout);
        if want != got || want.as_bytes() != raw {
            return Some("writes other compact text");
        }
    }
    let (mut want, mut got) = (Vec::new(), Vec::new());
    d.root.write_json(&mut want);
    kept.root.write_json_in(&mut got, &bytes);
    (want != got).then_some("writes other JSON")
}

/// The tree decoded from `msg` with `records_json` writes the same JSON (from
/// its bytes) as the tree decoded without it, and has the same error.
pub(crate) fn check_records_json(msg: &[u8], d: &Decoded, fast: &Decoded) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    d.root.write_json(&mut a);
    let bytes = SourceBytes {
        message: msg,
        sources: &fast.sources,
    };
    fast.root.write_json_in(&mut b, &bytes);
    assert!(a == b, "records_json writes other JSON");
    assert_eq!(d.error, fast.error, "records_json finds another error");
}

/// The tree's JSON written while decoding (`stream_json`, as `print -V
/// --format jsonl` writes it) is the JSON of `fast`, the tree decoded with
/// the same options, with the facts `response_facts` takes from it, when the
/// stream finds no error; when it finds one, so does the tree (a request
/// other than ControlledShutdown v0, which `decode_request` decodes again
/// with header v1). `response`: the api key and version a response is
/// decoded with; `None` for a request.
///
/// Written in parts of any size (`JsonSink::spilling`), the parts are that
/// JSON; a dry sink writes nothing and finds the same result and facts.
pub(crate) fn check_streamed(msg: &[u8], fast: &Decoded, response: Option<(i16, i16)>) {
    use kafkashark::kafka::decode::decode_streamed;
    use kafkashark::kafka::stream_json::{JsonSink, Stream};
    use kafkashark::kafka::tree::Spill;
    let opts = records_json_opts();
    let decode =
        |sink: &mut JsonSink<'_>| decode_streamed(msg, response, &opts, Stream::Json(sink));
    let mut got = Vec::new();
    let mut sink = JsonSink::new(&mut got, msg, None);
    let s = decode(&mut sink);
    let facts = sink.facts();
    let parts = std::cell::RefCell::new(Vec::new());
    let take = |b: &mut Vec<u8>| parts.borrow_mut().extend(b.drain(..));
    let mut rest = Vec::new();
    let at = msg.len() % 97 + 1;
    let mut sink = JsonSink::new(&mut rest, msg, None).spilling(Spill { at, take: &take });
    let _ = decode(&mut sink);
    let mut parts = parts.into_inner();
    parts.extend_from_slice(&rest);
    assert!(parts == got, "the JSON written in parts differs");
    let mut none = Vec::new();
    let mut sink = JsonSink::new(&mut none, msg, None).dry();
    let dry = decode(&mut sink);
    assert_eq!(sink.facts(), facts, "the dry sink's facts differ");
    assert!(none.is_empty(), "the dry sink wrote");
    assert_eq!(dry.error, s.error, "the dry sink's error differs");
    assert_eq!((&dry.topics, &dry.topic_ids), (&s.topics, &s.topic_ids));
    if !s.clean() {
        let retried = response.is_none()
            && s.api_key.map(schema::ApiKey) == Some(schema::ApiKey::CONTROLLED_SHUTDOWN)
            && s.api_version == Some(0);
        assert!(!fast.clean() || retried, "only the stream failed");
        return;
    }
    assert_eq!(s.error, fast.error, "only the tree failed");
    let mut want = Vec::new();
    let bytes = SourceBytes {
        message: msg,
        sources: &fast.sources,
    };
    fast.root.write_json_in(&mut want, &bytes);
    assert!(got == want, "the streamed JSON differs from the tree's");
    let (throttle, errors) = kafkashark::analyzer::response_facts(&fast.root);
    assert_eq!(
        (facts.throttle_time_ms, facts.error_codes),
        (throttle, errors),
        "streamed facts"
    );
    assert_eq!((&s.topics, &s.topic_ids), (&fast.topics, &fast.topic_ids));
}

/// The tree's text made while decoding (`stream_text`, as `print -V` writes
/// a big message's: measured, then written; records kept as bytes) is the
/// text of `d`, the tree decoded without it, with the facts
/// `response_facts` takes from it, when the measuring decode finds no
/// error; when it finds one, so does the tree (but for ControlledShutdown
/// v0, as [`check_streamed`]).
pub(crate) fn check_text_streamed(msg: &[u8], d: &Decoded, response: Option<(i16, i16)>) {
    let opts = DecodeOptions {
        records_deferred: true,
        ..fuzz_opts()
    };
    use kafkashark::kafka::tree::Layout;
    for layout in [Layout::Wide, Layout::Compact { about: true }] {
        let (s, text) = streamed_text(msg, response, &opts, "  ", layout, None);
        let Some((got, facts)) = text else {
            let retried = response.is_none()
                && s.api_key.map(schema::ApiKey) == Some(schema::ApiKey::CONTROLLED_SHUTDOWN)
                && s.api_version == Some(0);
            assert!(!d.clean() || retried, "only the text stream failed");
            return;
        };
        assert!(d.clean(), "only the tree failed");
        let mut want = String::new();
        let none = SourceBytes::default();
        kafkashark::kafka::tree::write_text_in(&mut want, &d.root, "  ", &none, layout);
        assert!(got == want, "the streamed text differs from the tree's");
        let (throttle, errors) = kafkashark::analyzer::response_facts(&d.root);
        assert_eq!(
            (facts.throttle_time_ms, facts.error_codes),
            (throttle, errors)
        );
    }
}

/// `msg` decoded twice into text streams, as `print -V` writes a big
/// message's text (`response`: the api key and version a response is
/// decoded with, `None` for a request; `annotate` applied to every node in
/// both): the measuring decode's result, and when it found no error, the
/// text (each line after `indent`, in `layout`) and the facts. A decode
/// without an error leaves no parent open.
pub fn streamed_text(
    msg: &[u8],
    response: Option<(i16, i16)>,
    opts: &DecodeOptions,
    indent: &str,
    layout: kafkashark::kafka::tree::Layout,
    mut annotate: Option<&mut dyn FnMut(&mut Node)>,
) -> (
    Decoded,
    Option<(String, kafkashark::kafka::stream_json::StreamFacts)>,
) {
    use kafkashark::kafka::decode::decode_streamed;
    use kafkashark::kafka::stream_json::Stream;
    use kafkashark::kafka::stream_text::TextStream;
    fn again<'a>(
        a: &'a mut Option<&mut dyn FnMut(&mut Node)>,
    ) -> Option<&'a mut dyn FnMut(&mut Node)> {
        match a {
            Some(a) => Some(&mut **a),
            None => None,
        }
    }
    let decode = |t: &mut TextStream<'_>| decode_streamed(msg, response, opts, Stream::Text(t));
    let mut measure = TextStream::measure(msg, layout, again(&mut annotate));
    let s = decode(&mut measure);
    if !s.clean() {
        return (s, None);
    }
    let Some((plan, facts)) = measure.finish() else {
        panic!("a parent left open by a decode without an error")
    };
    assert!(plan.streams(), "a root name with a line break");
    let mut got = String::new();
    let mut write = TextStream::write(msg, plan, &mut got, indent, again(&mut annotate));
    let _ = decode(&mut write);
    drop(write);
    (s, Some((got, facts)))
}

pub(crate) fn check_outputs(outs: &mut Vec<Output>) {
    for o in outs.drain(..) {
        if let Output::Message(m) = o {
            if let Some(d) = &m.decoded {
                check_decoded(&m.raw.bytes, d);
            }
            if let Some(e) = &m.info.decode_error {
                assert!(!e.is_empty());
            }
        }
    }
}
