//! Fuzz target `stats`: calls `kafkashark_harness::stats`, which asserts the
//! invariants (see `harness/`); `tests/fuzz_replay.rs` replays the corpus.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kafkashark_harness::stats(data));
