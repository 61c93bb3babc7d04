//! Fuzz target `request_decode`: calls `kafkashark::harness::request_decode`, which asserts the
//! invariants (see src/harness.rs); `tests/fuzz_replay.rs` replays the corpus.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kafkashark::harness::request_decode(data));
