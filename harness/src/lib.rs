//! Fuzz harnesses for kafkashark: one entry point per stage of the data path,
//! each taking arbitrary bytes and asserting the engine's invariants on what
//! comes out, and the byte builders they and the tests make inputs with.
//!
//! Place in the project: beside the data path, not in it. The engine
//! (`kafkashark`) knows nothing of this crate. The cargo-fuzz targets in
//! `fuzz/` call these functions, and `tests/fuzz_replay.rs` calls the same
//! functions over the committed corpus (`fuzz/corpus/<target>/`), so a crash
//! found by a fuzzer becomes a stable regression test by copying its input
//! into the corpus.
//!
//! Every harness asserts, besides "no panic":
//! - spans: every node lies inside its byte source, and a child in the same
//!   source as its parent lies inside the parent's span;
//! - error offsets lie within their byte source;
//! - work is bounded by the input: the number of nodes, events and bytes
//!   produced is at most a fixed factor of the input (plus what decompression
//!   may add, itself capped), so decode time cannot run away from input size.
//!
//! Inputs are read with small byte-driven choices (see [`Choices`]); a
//! harness never rejects an input, it only interprets it.
//!
//! Modules: [`tree`] the invariants of a decoded tree and its streamed
//! outputs, [`decode`] the request and response harnesses, [`records`] record
//! sets and their byte builders, [`streams`] framing, reassembly and the
//! pipeline, [`stats`] the pipeline's messages counted and reported,
//! [`capture`] link layers and whole capture files (the one harness
//! that writes files: a temp file per input).

use kafkashark::kafka::DecodeOptions;

pub mod capture;
pub mod decode;
pub mod records;
pub mod stats;
pub mod streams;
pub mod tls;
pub mod tree;

pub use capture::{link, pcap_file};
pub use decode::{
    request_decode, request_decode_scanned, response_decode, response_decode_scanned,
};
pub use records::{
    check_declared, check_record_set, compress, declared, legacy_message, mixed, put_varint,
    record_batch, record_set, records_from,
};
pub use stats::{check_exposition, stats, stats_report};
pub use streams::{frame_of_segment, framing, messages, pipeline, pipeline_frames, reassembly};
pub use tls::{tls_keylog, tls_records};
pub use tree::{check_decoded, deferred_differs, streamed_text};

/// Decompression cap used by the harnesses: small, so bombs hit it fast.
pub const FUZZ_MAX_DECOMPRESSED: usize = 1 << 20;

/// Nodes a decoded tree may hold per byte of input (message plus decompressed
/// sources), on top of [`NODE_SLACK`]. A field takes at least one byte except
/// zero-size array elements, which the decoder caps.
pub const NODES_PER_BYTE: usize = 8;

/// Nodes allowed whatever the input size (zero-size elements, headers, notes).
pub const NODE_SLACK: usize = 200_000;

/// Reads choices from the front of an input; past its end every choice is 0.
pub struct Choices<'a> {
    data: &'a [u8],
}

impl<'a> Choices<'a> {
    /// Choices over `data`.
    pub fn new(data: &'a [u8]) -> Choices<'a> {
        Choices { data }
    }

    /// One byte (0 when exhausted).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// A big-endian u16.
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }

    /// A big-endian u32.
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.byte(), self.byte(), self.byte(), self.byte()])
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (a, b) = self.data.split_at(n.min(self.data.len()));
        self.data = b;
        a
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// The options every harness decodes with: record sets in full, decompression
/// capped at [`FUZZ_MAX_DECOMPRESSED`].
fn fuzz_opts() -> DecodeOptions {
    DecodeOptions {
        max_decompressed: FUZZ_MAX_DECOMPRESSED,
        records: true,
        records_headers_only: false,
        records_json: false,
        records_deferred: false,
        show_secrets: false,
        summary_topics: true,
        batch_sizes: None,
    }
}

/// [`fuzz_opts`] with records written straight to JSON (`print -V --format jsonl`).
fn records_json_opts() -> DecodeOptions {
    DecodeOptions {
        records_json: true,
        ..fuzz_opts()
    }
}

/// A harness: arbitrary bytes in, invariants asserted.
pub type Harness = fn(&[u8]);

/// Every harness by the name of its fuzz target (and corpus directory).
pub const TARGETS: &[(&str, Harness)] = &[
    ("request_decode", request_decode),
    ("response_decode", response_decode),
    ("record_set", record_set),
    ("framing", framing),
    ("reassembly", reassembly),
    ("pipeline", pipeline),
    ("stats", stats),
    ("link", link),
    ("pcap_file", pcap_file),
    ("declared", declared),
    ("tls_keylog", tls_keylog),
    ("tls_records", tls_records),
];
