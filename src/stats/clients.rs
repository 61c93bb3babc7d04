//! The client table of [`super::Stats`]: every client key that holds a
//! counters entry or a latency histogram, interned once, so that the hot path
//! passes a slot number ([`Who::Slot`]) instead of cloning and comparing the
//! key's strings for every message.
//!
//! Invariants: it behaves as the two capped maps it replaces — counters keyed
//! by [`ClientKey`] (at most `acc_cap` entries) and latency histograms keyed by
//! [`ClientKey`] (at most `hist_cap`) — each refusal counted once per attempt;
//! a key is interned only when one of them takes it, so the table holds at
//! most `acc_cap + hist_cap` keys; slots are never removed, so a slot number
//! stays valid for the table's life. Reports list the keys in key order.

use rustc_hash::FxHashMap as HashMap;

use super::{ClientKey, Timing};

/// A client on the hot path: its slot, or its key while no table took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Who {
    /// Interned at this slot.
    Slot(u32),
    /// Not interned (every table that could take it was full).
    Key(Box<ClientKey>),
}

/// What a slot may hold, each capped on its own.
#[derive(Clone, Copy)]
enum Column {
    Acc,
    Latency,
}

/// One interned client key and what it holds.
#[derive(Debug)]
pub(crate) struct ClientSlot<A> {
    pub(crate) key: ClientKey,
    pub(crate) acc: Option<A>,
    pub(crate) latency: Option<Timing>,
}

/// Interned client keys with their counters (`A`) and latency histograms.
#[derive(Debug)]
pub(crate) struct ClientTable<A> {
    slots: Vec<ClientSlot<A>>,
    ids: HashMap<ClientKey, u32>,
    accs: usize,
    acc_cap: usize,
    /// Counters refused (table full), one per attempt.
    pub(crate) acc_overflow: u64,
    hists: usize,
    hist_cap: usize,
    /// Histograms refused (table full), one per attempt.
    pub(crate) hist_overflow: u64,
}

impl<A: Default> ClientTable<A> {
    /// An empty table taking at most `acc_cap` counters and `hist_cap` histograms.
    pub(crate) fn new(acc_cap: usize, hist_cap: usize) -> Self {
        ClientTable {
            slots: Vec::new(),
            ids: HashMap::default(),
            accs: 0,
            acc_cap,
            acc_overflow: 0,
            hists: 0,
            hist_cap,
            hist_overflow: 0,
        }
    }

    /// The slot of an interned key.
    pub(crate) fn find(&self, key: &ClientKey) -> Option<u32> {
        self.ids.get(key).copied()
    }

    /// The key of `who`.
    pub(crate) fn key<'a>(&'a self, who: &'a Who) -> Option<&'a ClientKey> {
        match who {
            Who::Slot(i) => self.slots.get(*i as usize).map(|s| &s.key),
            Who::Key(k) => Some(k),
        }
    }

    /// The slot of `who`, if it has one.
    fn slot_of(&self, who: &Who) -> Option<u32> {
        match who {
            Who::Slot(i) => Some(*i),
            Who::Key(k) => self.find(k),
        }
    }

    /// The slot index of `who`, turning a key found in the table into its slot.
    fn resolve(&self, who: &mut Who) -> Option<usize> {
        let i = self.slot_of(who)?;
        *who = Who::Slot(i);
        Some(i as usize)
    }

    /// Interns the key of `who` (not yet in the table) and returns its slot index.
    fn intern(&mut self, who: &mut Who) -> Option<usize> {
        let Who::Key(k) = who else {
            return None;
        };
        let at = u32::try_from(self.slots.len()).ok()?;
        let key = (**k).clone();
        self.ids.insert(key.clone(), at);
        self.slots.push(ClientSlot {
            key,
            acc: None,
            latency: None,
        });
        *who = Who::Slot(at);
        Some(at as usize)
    }

    /// The counters of `who`, made if there is room; `None` (counted) if full.
    pub(crate) fn acc(&mut self, who: &mut Who) -> Option<&mut A> {
        let at = self.made(who, Column::Acc)?;
        self.slots.get_mut(at)?.acc.as_mut()
    }

    /// The latency histogram of `who`, made if there is room; `None` (counted) if full.
    pub(crate) fn latency(&mut self, who: &mut Who) -> Option<&mut Timing> {
        let at = self.made(who, Column::Latency)?;
        self.slots.get_mut(at)?.latency.as_mut()
    }

    /// The slot of `who` once its entry in `column` exists: made (and the key
    /// interned) if the column has room, else `None`, the refusal counted.
    fn made(&mut self, who: &mut Who, column: Column) -> Option<usize> {
        let at = self.resolve(who);
        let has = at
            .and_then(|i| self.slots.get(i))
            .is_some_and(|s| match column {
                Column::Acc => s.acc.is_some(),
                Column::Latency => s.latency.is_some(),
            });
        if has {
            return at;
        }
        let (made, cap, overflow) = match column {
            Column::Acc => (&mut self.accs, self.acc_cap, &mut self.acc_overflow),
            Column::Latency => (&mut self.hists, self.hist_cap, &mut self.hist_overflow),
        };
        if *made >= cap {
            *overflow += 1;
            return None;
        }
        let at = match at {
            Some(i) => i,
            None => self.intern(who)?,
        };
        let slot = self.slots.get_mut(at)?;
        match column {
            Column::Acc => {
                slot.acc = Some(A::default());
                self.accs += 1;
            }
            Column::Latency => {
                slot.latency = Some(Timing::default());
                self.hists += 1;
            }
        }
        Some(at)
    }

    /// The counters of `who` if it has some (never made, never counted).
    pub(crate) fn get_acc(&mut self, who: &Who) -> Option<&mut A> {
        let at = self.slot_of(who)?;
        self.slots.get_mut(at as usize)?.acc.as_mut()
    }

    /// Settles every client's timing ([`Timing::settle`]).
    pub(crate) fn settle(&mut self) {
        for h in self.slots.iter_mut().filter_map(|s| s.latency.as_mut()) {
            h.settle();
        }
    }

    /// The latency histogram at `slot`, if it has one.
    pub(crate) fn latency_at(&mut self, slot: u32) -> Option<&mut Timing> {
        self.slots.get_mut(slot as usize)?.latency.as_mut()
    }

    /// The clients with counters, with their slots, in key order.
    pub(crate) fn sorted(&self) -> Vec<(u32, &ClientSlot<A>)> {
        let mut v: Vec<(u32, &ClientSlot<A>)> = (0u32..)
            .zip(&self.slots)
            .filter(|(_, s)| s.acc.is_some())
            .collect();
        v.sort_by(|a, b| a.1.key.cmp(&b.1.key));
        v
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn key(n: u8) -> ClientKey {
        ClientKey {
            client_id: (!n.is_multiple_of(4)).then(|| format!("c{}", n % 5)),
            software_name: n.is_multiple_of(3).then(|| "sw".to_string()),
            software_version: n.is_multiple_of(2).then(|| format!("{}", n % 3)),
        }
    }

    /// What the table replaces: two capped maps keyed by the full key.
    #[derive(Default)]
    struct Model {
        accs: BTreeMap<ClientKey, u64>,
        hists: BTreeMap<ClientKey, u64>,
        acc_overflow: u64,
        hist_overflow: u64,
    }

    fn capped(m: &mut BTreeMap<ClientKey, u64>, cap: usize, k: &ClientKey) -> Option<()> {
        if !m.contains_key(k) && m.len() >= cap {
            return None;
        }
        *m.entry(k.clone()).or_default() += 1;
        Some(())
    }

    proptest! {
        /// Any sequence of counter, histogram and lookup operations gives the
        /// two capped maps' contents, order and refusals.
        #[test]
        fn behaves_as_two_capped_maps(
            acc_cap in 0usize..5,
            hist_cap in 0usize..5,
            ops in proptest::collection::vec((0u8..3, 0u8..30, any::<bool>()), 0..120),
        ) {
            let mut t: ClientTable<u64> = ClientTable::new(acc_cap, hist_cap);
            let mut m = Model::default();
            for (op, n, by_slot) in ops {
                let k = key(n);
                // The hot path's handle: a slot when already interned (and asked so), else the key.
                let mut who = match t.find(&k) {
                    Some(i) if by_slot => Who::Slot(i),
                    _ => Who::Key(Box::new(k.clone())),
                };
                match op {
                    0 => {
                        let got = t.acc(&mut who).map(|a| *a += 1);
                        let want = capped(&mut m.accs, acc_cap, &k);
                        if want.is_none() { m.acc_overflow += 1; }
                        prop_assert_eq!(got, want);
                    }
                    1 => {
                        let got = t.latency(&mut who).map(|h| h.add(1000, 1000, false, false));
                        let want = capped(&mut m.hists, hist_cap, &k);
                        if want.is_none() { m.hist_overflow += 1; }
                        prop_assert_eq!(got, want);
                    }
                    _ => {
                        let got = t.get_acc(&who).map(|a| *a += 1);
                        let want = m.accs.get_mut(&k).map(|a| *a += 1);
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(t.key(&who), Some(&k));
                // Once a table took the key, the handle names its slot.
                if op != 2 {
                    if let Some(i) = t.find(&k) {
                        prop_assert_eq!(&who, &Who::Slot(i));
                    }
                }
            }
            prop_assert_eq!(t.acc_overflow, m.acc_overflow);
            prop_assert_eq!(t.hist_overflow, m.hist_overflow);
            let got: Vec<(ClientKey, u64, Option<u64>)> = t
                .sorted()
                .into_iter()
                .map(|(_, s)| (s.key.clone(), s.acc.unwrap_or(0), s.latency.as_ref().map(Timing::count)))
                .collect();
            let want: Vec<(ClientKey, u64, Option<u64>)> = m
                .accs
                .iter()
                .map(|(k, &n)| (k.clone(), n, m.hists.get(k).copied()))
                .collect();
            prop_assert_eq!(got, want);
            // Only keys some map took are interned.
            let interned = m.accs.keys().chain(m.hists.keys()).collect::<std::collections::BTreeSet<_>>();
            prop_assert_eq!(t.slots.len(), interned.len());
        }
    }
}
