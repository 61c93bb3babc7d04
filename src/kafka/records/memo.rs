//! The declared sizes of CRC-verified batches, remembered by their CRC.
//!
//! Place in the data path: the counting output of the record-set walk
//! ([`super::count_record_set`]) asks [`declared::declared_len`] what a
//! compressed payload decompresses to. For zstd frames without a content
//! size and LZ4 blocks that answer is a walk over every sequence of the
//! payload, the largest single cost of `stats` (docs/performance.md,
//! "Record batches and compression sizes"). A broker stores a produced batch
//! as it came and serves the same bytes to every follower and consumer that
//! fetches it (the batch's CRC-32C covers everything from its attributes
//! on, and not the base offset or leader epoch the broker rewrites), so a
//! capture taken at a broker holds each batch once per produce and once per
//! fetch of it. The walk's answer is remembered for the next time.
//!
//! Invariants:
//! - only batches whose stored CRC-32C matches their bytes are looked up or
//!   remembered, and what is remembered is `declared_len`'s answer, a
//!   function of the codec and the payload's bytes alone; the caller applies
//!   the same limit to it as to a fresh answer, so the counts are the ones a
//!   walk gives;
//! - an entry is found only by the same CRC, payload length, codec and two
//!   of the payload's bytes (its middle and last): two different payloads of
//!   one length under one CRC-32C is a 1 in 2^32 chance between two given
//!   batches, and the two bytes make it 1 in 2^48 (a capture crafted to
//!   collide can make a compression figure wrong, nothing else);
//! - a fixed table of [`SLOTS`] entries (256 KB), one per slot, the newest
//!   replacing the older: memory does not grow with the capture;
//! - a table belongs to one analysis: the [`crate::analyzer::Analyzer`] that
//!   counts record sets makes it and hands it, in its scan options
//!   ([`DecodeOptions::batch_sizes`](crate::kafka::DecodeOptions)), to the
//!   [`crate::analyzer::AheadScanner`] a front end may run on another thread;
//! - the table is shared by the scans of one analysis without a lock:
//!   each entry is two atomic words, the key stored XORed with the value, so
//!   that a torn read (a word of one entry, a word of another) fails the
//!   key's check instead of giving another batch's size.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::declared;

/// Entries in a table. On the read-back corpus (docs/performance.md, "The
/// corpus"), of 95,149 sizes asked for, 4,096 entries found 45 % again,
/// 16,384 entries 51 % and 65,536 53 %: a fetch reads near the end of its
/// partition's log, soon after the produce.
pub(crate) const SLOTS: usize = 16384;

/// The low bits of an entry's value: the size.
const SIZE_BITS: u32 = 40;
const SIZE_MASK: u64 = (1 << SIZE_BITS) - 1;
/// Set in every stored value, so that an empty entry (zeros) matches nothing.
const PRESENT: u64 = 1 << 63;

/// A table of remembered sizes.
pub struct BatchSizes {
    slots: Box<[[AtomicU64; 2]]>,
}

impl std::fmt::Debug for BatchSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BatchSizes({} slots)", self.slots.len())
    }
}

impl Default for BatchSizes {
    fn default() -> Self {
        BatchSizes::new()
    }
}

/// Where a size came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    Remembered,
    Walked,
}

impl BatchSizes {
    /// An empty table.
    pub fn new() -> BatchSizes {
        BatchSizes {
            slots: (0..SLOTS)
                .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                .collect(),
        }
    }

    /// `declared_len(codec, payload)` for a payload whose batch's CRC-32C
    /// `crc` matched its bytes: remembered, or worked out and remembered.
    pub(crate) fn declared_len(
        &self,
        crc: u32,
        codec: u8,
        payload: &[u8],
    ) -> Option<(usize, Found)> {
        let Some((key, tag, slot)) = self.entry(crc, codec, payload) else {
            return declared::declared_len(codec, payload).map(|n| (n, Found::Walked));
        };
        let [k, v] = slot;
        let value = v.load(Relaxed);
        if value & !SIZE_MASK == tag && k.load(Relaxed) ^ value == key {
            if let Ok(n) = usize::try_from(value & SIZE_MASK) {
                return Some((n, Found::Remembered));
            }
        }
        let n = declared::declared_len(codec, payload)?;
        if (n as u64) <= SIZE_MASK {
            let value = tag | n as u64;
            k.store(key ^ value, Relaxed);
            v.store(value, Relaxed);
        }
        Some((n, Found::Walked))
    }

    /// The key, the value's tag (every bit but the size's) and the slot of
    /// a payload.
    fn entry(&self, crc: u32, codec: u8, payload: &[u8]) -> Option<(u64, u64, &[AtomicU64; 2])> {
        let len = payload.len();
        let key = (u64::from(crc) << 32) | (len as u64 & 0xFFFF_FFFF);
        let middle = payload.get(len / 2).copied().unwrap_or(0);
        let last = payload.last().copied().unwrap_or(0);
        let tag = PRESENT
            | (u64::from(codec & 7) << 56)
            | (u64::from(middle) << 48)
            | (u64::from(last) << SIZE_BITS);
        // The CRC's low bits spread batches evenly; the length breaks ties.
        let at = (crc as usize ^ len.wrapping_mul(0x9E37)) % SLOTS;
        // `at` < SLOTS: the table always has the slot.
        let slot = self.slots.get(at)?;
        Some((key, tag, slot))
    }

    /// Writes one word of `payload`'s entry, as a write torn by another
    /// thread's would leave it (tests).
    #[cfg(test)]
    pub(crate) fn tear(&self, crc: u32, codec: u8, payload: &[u8], value: u64) {
        let (_, _, [_, v]) = self.entry(crc, codec, payload).expect("a slot");
        v.store(value, Relaxed);
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn zstd(data: &[u8]) -> Vec<u8> {
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).expect("encoder");
        std::io::Write::write_all(&mut e, data).expect("write");
        e.finish().expect("finish")
    }

    fn text(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if i % 7 == 0 {
                    b'a' + (x >> 59) as u8
                } else {
                    b"kafka shark "[i % 12]
                }
            })
            .collect()
    }

    #[test]
    fn a_size_is_walked_once_then_remembered() {
        let memo = BatchSizes::new();
        let data = text(5000, 1);
        let z = zstd(&data);
        let want = declared::declared_len(4, &z);
        assert_eq!(want, Some(5000));
        assert_eq!(memo.declared_len(77, 4, &z), Some((5000, Found::Walked)));
        assert_eq!(
            memo.declared_len(77, 4, &z),
            Some((5000, Found::Remembered))
        );
        // Another CRC or last byte is another batch: walked.
        assert_eq!(memo.declared_len(78, 4, &z), Some((5000, Found::Walked)));
        let mut other = z.clone();
        let last = other.len() - 1;
        other[last] ^= 0x40;
        let fresh = declared::declared_len(4, &other).map(|n| (n, Found::Walked));
        assert_eq!(memo.declared_len(78, 4, &other), fresh);
        // Another length, codec or middle byte under the same CRC: another
        // key or tag, which no stored entry of this payload matches.
        let (key, tag, _) = memo.entry(77, 4, &z).expect("a slot");
        let mut middle = z.clone();
        middle[z.len() / 2] ^= 1;
        for (codec, p) in [(4, &z[..z.len() - 1]), (3, &z[..]), (4, &middle[..])] {
            let (k, t, _) = memo.entry(77, codec, p).expect("a slot");
            assert_ne!((k, t), (key, tag), "codec {codec}, {} bytes", p.len());
        }
    }

    #[test]
    fn what_is_not_declared_is_not_remembered() {
        let memo = BatchSizes::new();
        let junk = text(300, 2);
        assert_eq!(declared::declared_len(4, &junk), None);
        assert_eq!(memo.declared_len(5, 4, &junk), None);
        assert_eq!(memo.declared_len(5, 4, &junk), None);
    }

    #[test]
    fn a_torn_or_foreign_entry_is_not_taken() {
        let memo = BatchSizes::new();
        let z = zstd(&text(4000, 3));
        assert_eq!(memo.declared_len(9, 4, &z), Some((4000, Found::Walked)));
        // The value word of another entry over this key's word.
        let (_, tag, _) = memo.entry(9, 4, &z).expect("a slot");
        memo.tear(9, 4, &z, tag | 123);
        assert_eq!(memo.declared_len(9, 4, &z), Some((4000, Found::Walked)));
        assert_eq!(memo.declared_len(9, 4, &z), Some((4000, Found::Remembered)));
        // An empty entry: zeros match no payload, not even an empty one.
        memo.tear(9, 4, &z, 0);
        assert_eq!(memo.declared_len(9, 4, &z), Some((4000, Found::Walked)));
        let empty = BatchSizes::new();
        assert_eq!(empty.declared_len(0, 0, &[]), None);
    }

    /// The compressed batches of the shipped capture where a client
    /// produced batches of every codec and fetched them back, in capture
    /// order: their CRC-32C (verified), codec and payload.
    fn captured_batches() -> Vec<(u32, u8, Vec<u8>)> {
        use crate::test_captures;
        let mut out = Vec::new();
        for path in test_captures::shipped() {
            if !path
                .to_string_lossy()
                .contains("a2-confluent-compression-codecs")
            {
                continue;
            }
            for m in test_captures::messages(&path, test_captures::full_trees()) {
                let Some(d) = &m.decoded else { continue };
                for s in d.sources.iter().filter(|s| s.parent == 0) {
                    let raw: &[u8] = &m.raw.bytes;
                    let start = s.parent_offset - super::super::BATCH_HEADER_LEN;
                    let batch = &raw[start..s.parent_offset + s.parent_length];
                    let stored = u32::from_be_bytes(batch[17..21].try_into().expect("4 bytes"));
                    assert_eq!(crc32c::crc32c(&batch[21..]), stored);
                    let codec = batch[22] & 7;
                    out.push((stored, codec, batch[61..].to_vec()));
                }
            }
        }
        out
    }

    /// Every compressed batch of a real capture where a client produced
    /// and then fetched its batches: the sizes a walk gives, and each batch
    /// seen before found again.
    #[test]
    fn fetched_batches_of_a_real_capture_are_remembered_from_their_produce() {
        let batches = captured_batches();
        let codecs: std::collections::BTreeSet<u8> = batches.iter().map(|b| b.1).collect();
        assert_eq!(codecs.into_iter().collect::<Vec<_>>(), [1, 2, 3, 4]);
        let memo = BatchSizes::new();
        let mut seen = std::collections::HashSet::new();
        let mut remembered = 0;
        for (crc, codec, payload) in &batches {
            let got = memo.declared_len(*crc, *codec, payload);
            let want = declared::declared_len(*codec, payload);
            assert_eq!(got.map(|g| g.0), want);
            let again = !seen.insert((*crc, payload.clone()));
            if want.is_some() {
                let found = if again {
                    Found::Remembered
                } else {
                    Found::Walked
                };
                assert_eq!(got.map(|g| g.1), Some(found));
                remembered += usize::from(again);
            }
        }
        assert!(
            remembered >= 4,
            "{remembered} of {} batches found again",
            batches.len()
        );
    }
}
