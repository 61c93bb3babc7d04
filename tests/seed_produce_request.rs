//! The founding seed: the 94-byte Produce v12 request in
//! ../shared/seeds/produce-request-v12-minimal.txt must decode to the seed's
//! tree exactly — every node's depth, name, type, value, offset and size.
//!
//! The bytes are built here, field by field, from the seed's description; the
//! expected tree is read from the seed file itself (skipped when ../shared is
//! absent, with the shipped copy of the bytes still checked).

use kafkashark::kafka::{decode_request, tree::render_text, DecodeOptions};

/// The seed message, built by hand. Offsets are from the first byte of the size prefix.
fn seed_bytes() -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&90i32.to_be_bytes()); // 0x00 size: 90 bytes follow
    m.extend_from_slice(&0i16.to_be_bytes()); // 0x04 request_api_key 0 (Produce)
    m.extend_from_slice(&12i16.to_be_bytes()); // 0x06 request_api_version 12
    m.extend_from_slice(&0i32.to_be_bytes()); // 0x08 correlation_id 0
    m.extend_from_slice(&0i16.to_be_bytes()); // 0x0c client_id "" (int16 length 0)
    m.push(0); // 0x0e header tagged fields: 0
    m.push(1); // 0x0f TransactionalId "" (compact length+1 = 1)
    m.extend_from_slice(&0i16.to_be_bytes()); // 0x10 Acks 0
    m.extend_from_slice(&0i32.to_be_bytes()); // 0x12 TimeoutMs 0
    m.push(2); // 0x16 TopicData: 1 element (compact n+1 = 2)
    m.push(1); // 0x17 Name "" (compact)
    m.push(2); // 0x18 PartitionData: 1 element
    m.extend_from_slice(&0i32.to_be_bytes()); // 0x19 Index 0
    m.push(62); // 0x1d Records: 61 bytes (compact n+1 = 62)
    let batch_start = m.len(); // 0x1e RecordBatch v2
    m.extend_from_slice(&0i64.to_be_bytes()); // baseOffset 0
    m.extend_from_slice(&49i32.to_be_bytes()); // batchLength 49
    m.extend_from_slice(&(-1i32).to_be_bytes()); // partitionLeaderEpoch -1
    m.push(2); // magic 2
    let crc_at = m.len();
    m.extend_from_slice(&[0; 4]); // crc, filled below
    m.extend_from_slice(&0i16.to_be_bytes()); // attributes 0
    m.extend_from_slice(&(-1i32).to_be_bytes()); // lastOffsetDelta -1
    m.extend_from_slice(&(-1i64).to_be_bytes()); // baseTimestamp -1
    m.extend_from_slice(&(-1i64).to_be_bytes()); // maxTimestamp -1
    m.extend_from_slice(&(-1i64).to_be_bytes()); // producerId -1
    m.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch -1
    m.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence -1
    m.extend_from_slice(&0i32.to_be_bytes()); // recordsCount 0
    assert_eq!(m.len() - batch_start, 61);
    let crc = crc32c::crc32c(&m[crc_at + 4..]);
    m[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    m.push(0); // 0x5b partition tagged fields
    m.push(0); // 0x5c topic tagged fields
    m.push(0); // 0x5d body tagged fields
    assert_eq!(m.len(), 94);
    m
}

/// One line of a tree: depth, name, type, value, offset, size.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    depth: usize,
    name: String,
    ty: String,
    value: String,
    offset: usize,
    size: usize,
}

/// Parses the seed's tree layout (which `render_text` also writes): a guide
/// prefix of `|   `, `    ` and `+-- `, then fixed columns name (to col 54),
/// type (to 78), value (to 113), then `[0xOFFS, NB]` and a description.
fn parse_tree(text: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let Some(span_at) = line.find("[0x") else {
            continue;
        };
        let chars: Vec<char> = line.chars().collect();
        let col = |a: usize, b: usize| -> String {
            chars
                .get(a..b.min(chars.len()))
                .unwrap_or(&[])
                .iter()
                .collect::<String>()
        };
        let name_col = col(0, 54);
        let guide: String = name_col
            .chars()
            .take_while(|c| matches!(c, '|' | '+' | '-' | ' '))
            .collect();
        let depth = if guide.is_empty() { 0 } else { guide.len() / 4 };
        let name = name_col[guide.len()..].trim().to_string();
        let ty = col(54, 78).trim().to_string();
        let value = col(78, 113).trim().trim_start_matches("= ").to_string();
        let span = &line[span_at..];
        let close = span.find(']').expect("span closes");
        let inner = &span[1..close];
        let (off, size) = inner.split_once(", ").expect("offset, size");
        rows.push(Row {
            depth,
            name,
            ty,
            value,
            offset: usize::from_str_radix(off.trim_start_matches("0x"), 16).expect("hex offset"),
            size: size.trim_end_matches('B').parse().expect("size"),
        });
    }
    rows
}

fn seed_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/seeds/produce-request-v12-minimal.txt")
}

#[test]
fn seed_request_decodes_to_the_seed_tree_exactly() {
    let path = seed_path();
    let Ok(seed) = std::fs::read_to_string(&path) else {
        eprintln!("skipping: {} not present", path.display());
        return;
    };
    let start = seed.find("object tree").expect("seed has an object tree");
    let end = seed.find("kafka message schema").expect("seed tree ends");
    let expected = parse_tree(&seed[start..end]);
    assert_eq!(expected.len(), 40, "the seed tree has 40 nodes");

    let d = decode_request(&seed_bytes(), &DecodeOptions::default());
    assert_eq!(d.error, None);
    let text = render_text(&d.root);
    let got = parse_tree(&text);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "row {i} differs\nours:\n{text}");
    }
    assert_eq!(got.len(), expected.len(), "ours:\n{text}");

    // Our renderer puts every column where the seed does: each line agrees
    // with the seed's up to the end of its span.
    let seed_lines: Vec<&str> = seed[start..end]
        .lines()
        .filter(|l| l.contains("[0x"))
        .collect();
    for (ours, theirs) in text.lines().zip(seed_lines) {
        let cut = theirs.find(']').expect("span") + 1;
        assert_eq!(
            &ours[..cut.min(ours.len())],
            &theirs[..cut],
            "column layout"
        );
    }
}

#[test]
fn seed_request_facts_hold_without_the_seed_file() {
    let d = decode_request(&seed_bytes(), &DecodeOptions::default());
    assert_eq!(d.error, None);
    assert_eq!(
        (d.api_key, d.api_version, d.correlation_id),
        (Some(0), Some(12), Some(0))
    );
    assert_eq!(d.client_id.as_deref(), Some(""));
    let batch = d
        .root
        .path(&[
            "ProduceRequest",
            "TopicData",
            "TopicProduceData[0]",
            "PartitionData",
            "PartitionProduceData[0]",
            "Records",
            "RecordBatch",
        ])
        .expect("batch node");
    assert_eq!((batch.offset, batch.length), (0x1e, 61));
    let crc = batch.child("crc").expect("crc");
    assert_eq!(crc.value_text(), "crc32c of the bytes that follow");
    // The shipped copy of the seed (used by the README's run command) is these bytes.
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures/messages/produce-v12-request-minimal.hex"),
    )
    .expect("shipped seed hex");
    let digits: String = shipped.split_whitespace().collect();
    let shipped: Vec<u8> = (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex"))
        .collect();
    assert_eq!(shipped, seed_bytes());
}

#[test]
fn every_prefix_of_the_seed_decodes_without_panic_and_keeps_what_came_before() {
    let full = seed_bytes();
    let whole = decode_request(&full, &DecodeOptions::default());
    for cut in 0..full.len() {
        let d = decode_request(&full[..cut], &DecodeOptions::default());
        let e = d
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("prefix {cut} must report an error"));
        assert!(
            e.offset <= cut,
            "error offset {} beyond the cut {cut}",
            e.offset
        );
        // Every node that ends before the cut in the full tree and decoded in the
        // prefix tree has the same span and value.
        let mut full_nodes = Vec::new();
        whole.root.walk(&mut |n, depth| {
            full_nodes.push((
                depth,
                n.name.to_string(),
                n.offset,
                n.length,
                n.value_text(),
            ))
        });
        let mut cut_nodes = Vec::new();
        d.root.walk(&mut |n, depth| {
            if n.error.is_none() && n.end() <= cut && depth > 1 && n.children.is_empty() {
                cut_nodes.push((
                    depth,
                    n.name.to_string(),
                    n.offset,
                    n.length,
                    n.value_text(),
                ));
            }
        });
        for node in &cut_nodes {
            assert!(
                full_nodes.contains(node),
                "prefix {cut}: {node:?} not in the full tree"
            );
        }
        // The leaf nodes of the full tree that lie wholly before the last
        // fully-read field are present in the prefix tree.
        if cut >= 15 {
            assert!(
                d.root.path(&["RequestHeader", "client_id"]).is_some(),
                "prefix {cut} lost the header"
            );
        }
    }
}
