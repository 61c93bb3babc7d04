//! Fuzz target `declared`: calls `kafkashark_harness::declared`, which checks that
//! a compressed payload's declared size is its decoded size (see `harness/`);
//! `tests/fuzz_replay.rs` replays the corpus.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kafkashark_harness::declared(data));
