//! JSON writing benches: the string escapes `print -V --format jsonl` spends
//! most of its writing time in (record values shown twice, as `display` in
//! Rust's Debug form and as the JSON `value`), and a whole tree's JSON.
//! Throughput is input bytes.
//!
//! Quick mode for CI (no timing assertions):
//! `cargo bench --bench json -- --warm-up-time 0.1 --measurement-time 0.2 --sample-size 10`

// `criterion_group!` makes a public function without a doc comment.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use kafkashark::analyzer::AnalyzerConfig;
use kafkashark::kafka::tree::{json, SourceBytes};
use kafkashark::kafka::{decode_response, DecodeOptions};

mod common;

/// Texts as records carry them: a JSON document (dense in quotes), plain
/// words, field names, and text with control characters.
fn texts() -> Vec<(&'static str, String)> {
    let mut doc = String::from("{\"id\":1234,\"ts\":1700000004321,\"user\":\"u004711\",");
    doc.push_str("\"amount\":123.45,\"tags\":[");
    for (i, w) in ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
        .iter()
        .cycle()
        .take(24)
        .enumerate()
    {
        if i > 0 {
            doc.push(',');
        }
        doc.push('"');
        doc.push_str(w);
        doc.push('"');
    }
    doc.push_str("]}");
    let words = "the quick brown fox jumps over the lazy dog ".repeat(6);
    let names = "timestampDelta".to_string();
    let control = "line one\nline two\ttabbed \u{1} \"quoted\" back\\slash ".repeat(4);
    // Many different documents (about 16 KB): the branches on where quotes
    // fall cannot be learned from one text repeated.
    let mut docs = String::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    while docs.len() < 16 << 10 {
        docs.push('{');
        for f in 0..next(8) + 2 {
            if f > 0 {
                docs.push(',');
            }
            let key: String = (0..next(10) + 1)
                .map(|_| char::from(b'a' + next(26) as u8))
                .collect();
            docs.push_str(&format!("\"{key}\":"));
            match next(3) {
                0 => docs.push_str(&next(1 << 40).to_string()),
                1 => {
                    let v: String = (0..next(16))
                        .map(|_| char::from(b'A' + next(26) as u8))
                        .collect();
                    docs.push_str(&format!("\"{v}\""));
                }
                _ => docs.push_str(&format!("\"say \\\"{}\\\"\"", next(1000))),
            }
        }
        docs.push('}');
    }
    vec![
        ("json-doc", doc),
        ("json-docs-varied", docs),
        ("plain-words", words),
        ("field-name", names),
        ("control-chars", control),
    ]
}

fn escapes(c: &mut Criterion) {
    let mut g = c.benchmark_group("json-escape");
    let mut out = Vec::with_capacity(1 << 16);
    for (name, t) in texts() {
        g.throughput(Throughput::Bytes(t.len() as u64));
        g.bench_function(format!("escape_into/{name}"), |b| {
            b.iter(|| {
                out.clear();
                json::escape_into(&mut out, black_box(&t));
                black_box(out.len())
            })
        });
        if json::is_printable_ascii(t.as_bytes()) {
            g.bench_function(format!("debug_printable_into/{name}"), |b| {
                b.iter(|| {
                    out.clear();
                    json::debug_printable_into(&mut out, black_box(&t));
                    black_box(out.len())
                })
            });
            // A record value's two texts, one pass against two.
            let mut value = Vec::with_capacity(1 << 16);
            g.bench_function(format!("debug_and_escape_counted/{name}"), |b| {
                b.iter(|| {
                    out.clear();
                    value.clear();
                    let t = black_box(t.as_bytes());
                    let quotes = json::printable_ascii_quotes(t).unwrap_or(0);
                    json::debug_and_escape_counted(&mut out, &mut value, t, quotes);
                    black_box(out.len() + value.len())
                })
            });
            g.bench_function(format!("debug_then_escape_into/{name}"), |b| {
                b.iter(|| {
                    out.clear();
                    value.clear();
                    json::debug_printable_into(&mut out, black_box(&t));
                    json::escape_into(&mut value, black_box(&t));
                    black_box(out.len() + value.len())
                })
            });
        }
    }
    g.finish();
}

/// Integers as a tree's JSON has them, one after another into one buffer:
/// lengths and small values, offsets, and timestamps (13 digits), in a
/// mixed order.
fn integers(c: &mut Criterion) {
    let mut vals = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..1000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        vals.push(match i % 4 {
            0 => x % 10,
            1 => x % 1000,
            2 => x % 10_000_000,
            _ => 1_700_000_000_000 + x % 100_000_000_000,
        });
    }
    let mut out = Vec::with_capacity(1 << 16);
    let mut g = c.benchmark_group("json-integers");
    g.throughput(Throughput::Elements(vals.len() as u64));
    g.bench_function("u64/mixed", |b| {
        b.iter(|| {
            out.clear();
            for &v in black_box(&vals) {
                json::u64(&mut out, v);
                out.push(b',');
            }
            black_box(out.len())
        })
    });
    g.finish();
}

/// The JSON of whole trees: Fetch responses with record batches from the
/// compression-codecs capture; and the same responses decoded with
/// `records_json` and written from their bytes, as `print -V --format
/// jsonl` does (decoding included: the records are checked then).
fn trees(c: &mut Criterion) {
    let Some(p) = common::capture_paths(&["a2-confluent-compression-codecs.pcap"])
        .into_iter()
        .next()
    else {
        return;
    };
    let frames = common::frames(&p);
    let opts = DecodeOptions::default();
    let fetches: Vec<_> = kafkashark_harness::messages(&frames, AnalyzerConfig::default())
        .into_iter()
        .filter(|m| {
            m.info.api_key == Some(kafkashark::kafka::schema::ApiKey::FETCH)
                && m.info.kind == kafkashark::kafka::decode::Kind::Response
        })
        .filter_map(|m| Some((m.raw.bytes.clone(), m.info.api_version?)))
        .collect();
    let roots: Vec<_> = fetches
        .iter()
        .map(|(bytes, v)| decode_response(bytes, 1, *v, &opts).root)
        .collect();
    let mut out = Vec::with_capacity(1 << 20);
    let mut total = 0u64;
    for r in &roots {
        out.clear();
        r.write_json(&mut out);
        total += out.len() as u64;
    }
    let mut g = c.benchmark_group("json-tree");
    g.throughput(Throughput::Bytes(total));
    g.bench_function("write_json/fetch-responses", |b| {
        b.iter(|| {
            let mut n = 0;
            for r in &roots {
                out.clear();
                black_box(r).write_json(&mut out);
                n += out.len();
            }
            black_box(n)
        })
    });
    let json_opts = DecodeOptions {
        records_json: true,
        ..DecodeOptions::default()
    };
    g.bench_function("decode+write_json_in/records_json/fetch-responses", |b| {
        b.iter(|| {
            let mut n = 0;
            for (bytes, v) in &fetches {
                let d = decode_response(black_box(bytes), 1, *v, &json_opts);
                let src = SourceBytes {
                    message: bytes,
                    sources: &d.sources,
                };
                out.clear();
                d.root.write_json_in(&mut out, &src);
                n += out.len();
            }
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, escapes, integers, trees);
criterion_main!(benches);
