//! Fuzz target `tls_records`: calls `kafkashark_harness::tls_records` (see `harness/src/tls.rs`);
//! `tests/fuzz_replay.rs` replays the corpus.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kafkashark_harness::tls_records(data));
