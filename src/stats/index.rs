//! Numbers found by a key's hash, in a table whose places are known before
//! it is read.
//!
//! Place in the data path: the counting keeps what it finds by a key in a
//! vector or a ring of its own (delivery's remembered batches, the lag
//! rows) and their numbers here. What the counting reaches at random costs
//! a read from memory, not from a cache (the reader streams the file
//! through the caches: docs/performance.md, "What latency parts, lag, age
//! and delivery cost `stats`"). A key's first place is known from its hash
//! alone, so a caller holding many keys reads their places first, one
//! after the other, with nothing waiting on these reads, and their misses
//! in the cache overlap; a table that hides its places (hashbrown's) can
//! only be probed a key at a time, each read waiting on the one before.
//!
//! Invariants: an open-addressed table of 8-byte places, each 31 bits of
//! the hash beside a number (and a bit saying the place is used), probed in
//! order from the place the hash's low bits name; emptied by moving the
//! places after it back, so that no probe meets a hole before its key. Its
//! size is a power of two fixed at the first number, and the caller keeps
//! it from filling (every loop is bounded by the size anyway).

/// Keys a caller holds before it looks them up, at most: their places are
/// read one after the other, then looked up in order (a message carries a
/// few keys, too few for their misses to overlap much).
pub(crate) const HELD: usize = 64;

/// Holds `t` in `held` (room for [`HELD`] made at the first): `true` once
/// [`HELD`] are held, for the caller to read their places ahead and look
/// them up.
pub(crate) fn hold<T>(held: &mut Vec<T>, t: T) -> bool {
    if held.capacity() == 0 {
        held.reserve_exact(HELD);
    }
    held.push(t);
    held.len() >= HELD
}

/// A place in use (an empty place is 0).
const USED: u64 = 1 << 63;

/// The bits of a key's hash a place keeps (the first place is taken from
/// its low bits: a table's size is far below 2³¹).
const HASH_BITS: u64 = 0x7fff_ffff;

/// The hash bits place `e` keeps.
fn kept_hash(e: u64) -> u64 {
    (e >> 32) & HASH_BITS
}

/// Numbers by their key's hash (module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct Index {
    /// Empty until the first number; then a power of two long.
    places: Vec<u64>,
}

impl Index {
    /// The place a probe for `h` reads first.
    fn home(&self, h: u64) -> usize {
        (h as usize) & self.places.len().wrapping_sub(1)
    }

    /// The next place after `i`, wrapping.
    fn next(&self, i: usize) -> usize {
        (i + 1) & self.places.len().wrapping_sub(1)
    }

    /// The place holding a number with hash `h` for which `is` holds, and
    /// the number.
    pub(crate) fn find(&self, h: u64, is: impl Fn(u32) -> bool) -> Option<(usize, u32)> {
        let mut i = self.home(h);
        for _ in 0..self.places.len() {
            let e = *self.places.get(i)?;
            if e == 0 {
                return None;
            }
            let n = e as u32;
            if kept_hash(e) == h & HASH_BITS && is(n) {
                return Some((i, n));
            }
            i = self.next(i);
        }
        None
    }

    /// The place a probe for `h` reads first (0 when there is none), read
    /// for the caller to read ahead: nothing need look at it.
    pub(crate) fn home_place(&self, h: u64) -> u64 {
        self.places.get(self.home(h)).copied().unwrap_or(0)
    }

    /// The number in the first place with `h`'s hash bits, if any (the key
    /// of hash `h` may be further on, and this one another key's).
    pub(crate) fn candidate(&self, h: u64) -> Option<u32> {
        self.find(h, |_| true).map(|(_, n)| n)
    }

    /// Adds number `n` with hash `h` (the caller knows it is not there);
    /// the first one sizes the table at `places` (a power of two).
    pub(crate) fn insert(&mut self, h: u64, n: u32, places: usize) {
        if self.places.is_empty() {
            self.places = vec![0; places.next_power_of_two()];
        }
        let mut i = self.home(h);
        for _ in 0..self.places.len() {
            match self.places.get_mut(i) {
                Some(e) if *e == 0 => {
                    *e = USED | ((h & HASH_BITS) << 32) | u64::from(n);
                    return;
                }
                Some(_) => i = self.next(i),
                None => return,
            }
        }
    }

    /// Empties place `hole` ([`Index::find`] gives it), moving the places
    /// after it back where their probes would otherwise meet the hole.
    pub(crate) fn remove_at(&mut self, mut hole: usize) {
        let Some(e) = self.places.get_mut(hole) else {
            return;
        };
        *e = 0;
        let mut j = hole;
        for _ in 0..self.places.len() {
            j = self.next(j);
            let e = self.places.get(j).copied().unwrap_or(0);
            if e == 0 {
                return;
            }
            // The place at `j` fills the hole unless its first place lies
            // cyclically in (hole, j]: then its probe never passes the hole.
            let home = self.home(kept_hash(e));
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                if let Some(h) = self.places.get_mut(hole) {
                    *h = e;
                }
                if let Some(x) = self.places.get_mut(j) {
                    *x = 0;
                }
                hole = j;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The table's size in the tests: small, so that probes wrap often.
    const PLACES: usize = 1 << 10;

    proptest::proptest! {
        /// The index finds every number it holds and none it gave up, with
        /// keys sharing a first place and probes wrapping past the table's
        /// end (a removal moves the places after it back).
        #[test]
        fn the_index_finds_what_it_holds_and_nothing_removed(
            ops in proptest::collection::vec((0u8..3, 0u64..24, 0u64..1024), 1..400)
        ) {
            let mut index = Index::default();
            let mut held: BTreeMap<u32, u64> = BTreeMap::new();
            let mut gone: Vec<(u32, u64)> = Vec::new();
            let mut next = 0u32;
            for (op, home, tag) in ops {
                // First places at the table's start and at its end.
                let low = if home < 12 { home } else { PLACES as u64 - 24 + home };
                let h = (tag << 20) | low;
                if op < 2 || held.is_empty() {
                    index.insert(h, next, PLACES);
                    held.insert(next, h);
                    next += 1;
                } else {
                    let k = usize::try_from(tag).unwrap() % held.len();
                    let (&n, &hn) = held.iter().nth(k).unwrap();
                    let (i, _) = index.find(hn, |m| m == n).unwrap();
                    index.remove_at(i);
                    held.remove(&n);
                    gone.push((n, hn));
                }
                for (&n, &hn) in &held {
                    proptest::prop_assert_eq!(index.find(hn, |m| m == n).map(|x| x.1), Some(n));
                    // The first place with its hash bits is read ahead.
                    proptest::prop_assert!(index.candidate(hn).is_some());
                }
                for &(n, hn) in &gone {
                    proptest::prop_assert!(index.find(hn, |m| m == n).is_none());
                }
            }
        }
    }
}
