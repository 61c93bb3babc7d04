//! Test data for the size walks, shared by the tests (`size_tests`) and
//! `benches/walks.rs` (included there by path): bytes that compress in
//! every way zstd and LZ4 know.

#![allow(clippy::indexing_slicing)]

/// Bytes that compress in every way zstd knows: runs, words, noise, and
/// copies of earlier bytes near and far (repeat offsets, long matches,
/// matches beyond small windows).
pub fn mixed(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 6] = [b"topic", b"partition", b"\"value\":", b"kafka", b"{}", b" "];
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        let r = next();
        let n = 1 + (r >> 8) as usize % 300;
        match r % 5 {
            0 => v.extend(std::iter::repeat_n((r >> 20) as u8, n)),
            1 => {
                for _ in 0..n.min(40) {
                    v.extend_from_slice(WORDS[next() as usize % WORDS.len()]);
                }
            }
            2 => v.extend((0..n).map(|_| next() as u8)),
            _ if !v.is_empty() => {
                let from = (r >> 32) as usize % v.len();
                let n = n.min(v.len() - from) * (1 + (r >> 60) as usize);
                for i in 0..n {
                    v.push(v[from + i]);
                }
            }
            _ => v.push(r as u8),
        }
    }
    v.truncate(len);
    v
}
