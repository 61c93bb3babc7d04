//! The entry store: entries round trip through their records and blobs, the
//! memory held stays bounded by the geometry whatever the number of entries,
//! updates and ring-mode drops match a naive model (a `Vec` of entries), and a
//! scratch file that fails or lies gives errors or the in-memory fallback,
//! never a panic. Scratch files here are in-memory fakes, except where the
//! real temporary file is the point.

use kafkashark::kafka::schema::ApiKey;
use kafkashark::vocab::Timestamp;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, ByteStore, Config, Entry, Msg, SourceKind};
use super::index::record::{decode_raw, decode_shared, encode_raw, encode_shared};
use super::index::{FactsEntry, IndexEntry, Interner};
use super::store::{Bitset, EntryStore, Geometry, Scratch, ScratchMaker, StoreError};
use super::testutil::{entries, located_entries};

const A2: &str = "captures/a2-confluent-compression-codecs.pcap";
const B2: &str = "captures/b2-errors-and-acks0.pcap";
const A6: &str = "captures/a6-confluent-multisegment-pdus.pcap";

/// What a fake scratch file does.
const OK: u8 = 0;
/// Writes fail (a full disk).
const FULL: u8 = 1;
/// Reads give other bytes (a file changed under the TUI).
const FLIPPED: u8 = 2;
/// Reads fail.
const UNREADABLE: u8 = 3;

/// A scratch file in memory, its behaviour switched from the test.
struct FakeScratch {
    bytes: Mutex<Vec<u8>>,
    mode: Arc<AtomicU8>,
}

impl Scratch for FakeScratch {
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        if self.mode.load(Ordering::Relaxed) == FULL {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        let mut b = self.bytes.lock().expect("lock");
        let at = offset as usize;
        if b.len() < at + data.len() {
            b.resize(at + data.len(), 0);
        }
        b[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }
}

impl ByteStore for FakeScratch {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let mode = self.mode.load(Ordering::Relaxed);
        if mode == UNREADABLE {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let b = self.bytes.lock().expect("lock");
        let at = offset as usize;
        let src = b
            .get(at..at + buf.len())
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        if mode == FLIPPED {
            for x in buf.iter_mut() {
                *x = !*x;
            }
        }
        Ok(())
    }
}

/// A maker of fake scratch files sharing one mode, and the count of files made.
fn fakes(mode: &Arc<AtomicU8>, made: &Arc<AtomicU64>) -> ScratchMaker {
    let (mode, made) = (Arc::clone(mode), Arc::clone(made));
    Box::new(move || {
        made.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(FakeScratch {
            bytes: Mutex::new(Vec::new()),
            mode: Arc::clone(&mode),
        }) as Box<dyn Scratch>)
    })
}

fn tiny_store(mode: &Arc<AtomicU8>) -> EntryStore {
    let mut s = EntryStore::new(Geometry::TINY);
    s.set_scratch(fakes(mode, &Arc::new(AtomicU64::new(0))));
    s
}

/// Every field of the entry, as the App reads it.
fn same(a: &IndexEntry, b: &IndexEntry, what: &str) {
    assert_eq!(a.info(), b.info(), "{what}");
    assert_eq!(a.raw(), b.raw(), "{what}");
    assert_eq!(a.sum(), b.sum(), "{what}");
    assert_eq!(a.in_file(), b.in_file(), "{what}");
    assert_eq!(a.missing(), b.missing(), "{what}");
}

/// Variants of real entries: each optional field absent and present (with
/// extreme and negative values), IPv4 and IPv6 (flow and scope ids) ends,
/// messages held, located in one piece (inline) and in several (spilled),
/// decrypted ones naming their TLS records (spilled).
fn variants() -> Vec<Entry> {
    let (located, _, _) = located_entries(A6);
    let base = [
        entries(A2).swap_remove(0),
        entries(B2).swap_remove(3),
        located[0].clone(),
        located
            .iter()
            .find(|e| e.raw.file_pieces.len() > 1)
            .expect("a multi-piece message")
            .clone(),
    ];
    let mut out = Vec::new();
    for mask in 0u32..1 << 10 {
        let mut e = base[mask as usize % base.len()].clone();
        let on = |bit: u32| mask & (1 << bit) != 0;
        let i = &mut e.info;
        i.api_key = on(0).then_some(ApiKey(i16::MIN));
        i.api_version = on(1).then_some(-1);
        i.correlation_id = on(2).then_some(i32::MIN + mask as i32);
        i.peer = on(3).then_some(u64::from(mask));
        i.latency_ns = on(4).then_some(u64::MAX - u64::from(mask));
        i.throttle_time_ms = on(5).then_some(-(mask as i32));
        i.paired = on(6);
        i.inferred = on(7);
        i.expects_response = on(8);
        i.resynced = on(9);
        i.client_id = (mask % 3 != 0).then(|| format!("client-{}", mask % 5));
        i.decode_error = (mask % 7 == 0).then(|| "bad \u{1b} thing".into());
        i.error_codes = (0..mask % 4).map(|k| -(k as i16)).collect();
        i.topics = (0..mask % 3)
            .map(|k| format!("topic-é{k}").into())
            .collect();
        i.capture = [0, 1, u16::MAX][mask as usize % 3];
        i.length = if mask % 2 == 0 { i32::MIN } else { i32::MAX };
        i.ts = Timestamp {
            secs: -(i64::from(mask)),
            nanos: 999_999_999,
        };
        i.first_ts = Timestamp {
            secs: i64::MIN,
            nanos: 0,
        };
        if mask % 5 == 0 {
            let v6 = SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 9092, mask, 7));
            i.client = v6;
        }
        if mask % 13 == 0 {
            // Decrypted from TLS records: spilled with them.
            e.raw.tls_records = vec![(0, 1), (40, u64::MAX - u64::from(mask))];
        }
        if mask % 11 == 0 {
            e.raw.missing = 17;
            e.raw.skipped_before = 3;
        } else {
            // Consistent with its facts: a located message of one piece is kept inline.
            e.raw.first_ts = i.first_ts;
            e.raw.last_ts = i.ts;
            e.raw.resynced = i.resynced;
        }
        out.push(e);
    }
    out
}

/// The record and blobs of an entry give it back: every optional field absent
/// and present, negative and extreme values, spilled messages with and without
/// their bytes, IPv6 scope ids; through the codec with dropped messages
/// before it, and through a store that pages.
#[test]
fn entries_round_trip_through_the_store_encoding() {
    let vs = variants();
    let mut interner = Interner::default();
    let mut store = tiny_store(&Arc::new(AtomicU8::new(OK)));
    let mut spilled = 0;
    let mut model = Vec::new();
    for (n, mut v) in vs.into_iter().enumerate() {
        v.info.index = n as u64;
        let e = IndexEntry::new(v.clone(), &mut interner);
        // The compact form loses nothing ...
        assert_eq!(e.info(), v.info, "variant {n}");
        assert_eq!(e.raw(), v.raw, "variant {n}");
        spilled += usize::from(e.spilled());
        // ... nor does the record, its facts and its side blob.
        let facts = encode_shared(e.shared());
        assert_eq!(**e.shared(), decode_shared(&facts).expect("facts"));
        let side = e.side_blob();
        if let Some(b) = &side {
            assert_eq!(
                Some(decode_raw(b).expect("raw")),
                e.spilled().then(|| e.raw())
            );
            assert_eq!(encode_raw(&decode_raw(b).expect("raw")), *b);
        }
        let at = |addr| super::index::record::SideRef {
            addr,
            len: side.as_ref().map_or(0, |b| b.len() as u64),
        };
        let facts_ref = super::index::record::SideRef {
            addr: 9,
            len: facts.len() as u64,
        };
        let rec = e.encode(facts_ref, side.as_ref().map(|_| at(1 << 40)), 1000);
        let back = IndexEntry::decode(&rec, n as u64, 1000, e.shared().clone(), side.as_deref())
            .expect("decodes");
        same(&back, &e, &format!("variant {n} through the codec"));
        store.push(e.clone());
        model.push(e);
    }
    assert!(spilled > 300 && spilled < model.len(), "{spilled}");
    for (i, want) in model.iter().enumerate() {
        same(&store.at(i), want, &format!("entry {i} through the store"));
    }
    for (i, (got, want)) in store.iter().zip(&model).enumerate() {
        same(&got.expect("reads"), want, &format!("entry {i} iterated"));
    }
}

/// A peer dropped by ring mode before its entry is forgotten, as the App's
/// renumbering did.
#[test]
fn a_peer_dropped_before_the_entry_is_forgotten() {
    let mut interner = Interner::default();
    let mut e = entries(A2).swap_remove(1);
    e.info.peer = Some(4);
    let e = IndexEntry::new(e, &mut interner);
    let facts = super::index::record::SideRef { addr: 0, len: 0 };
    let side = e.side_blob();
    let side_ref = side.as_ref().map(|b| super::index::record::SideRef {
        addr: 0,
        len: b.len() as u64,
    });
    // Written with 10 dropped: absolute peer 14.
    let rec = e.encode(facts, side_ref, 10);
    for (dropped, want) in [(10, Some(4)), (14, Some(0)), (15, None), (u64::MAX, None)] {
        let back = IndexEntry::decode(&rec, 0, dropped, e.shared().clone(), side.as_deref())
            .expect("decodes");
        assert_eq!(back.peer(), want, "{dropped} dropped");
    }
}

/// Every truncated prefix of a blob, and a blob with garbage in each byte, is an
/// error or another value, never a panic; counts beyond the bytes are refused
/// before anything is allocated.
#[test]
fn truncated_and_damaged_blobs_are_errors() {
    let mut interner = Interner::default();
    for v in variants().into_iter().step_by(37) {
        let e = IndexEntry::new(v, &mut interner);
        let facts = encode_shared(e.shared());
        let side = e.side_blob();
        let blobs: [(&[u8], bool); 2] = [
            (&facts, decode_shared(&facts).is_ok()),
            (side.as_deref().unwrap_or(&[]), side.is_some()),
        ];
        for (k, (b, whole)) in blobs.into_iter().enumerate() {
            let dec = |x: &[u8]| match k {
                0 => decode_shared(x).map(|_| ()),
                _ => decode_raw(x).map(|_| ()),
            };
            assert_eq!(dec(b).is_ok(), whole);
            for n in 0..b.len() {
                assert!(dec(&b[..n]).is_err(), "prefix of {n} bytes");
                let mut d = b.to_vec();
                d[n] ^= 0xff;
                let _ = dec(&d);
            }
            let mut long = b.to_vec();
            long.push(0);
            assert!(dec(&long).is_err());
        }
    }
    // A count of 2^61 topics in a few bytes.
    let mut v = entries(A2).swap_remove(0);
    v.info.client = "10.0.0.1:1".parse().expect("addr");
    v.info.broker = "10.0.0.2:2".parse().expect("addr");
    v.info.client_id = None;
    let mut b = encode_shared(IndexEntry::new(v, &mut interner).shared());
    let huge = (1u64 << 61).to_le_bytes();
    let at = 2 * 7 + 1; // two IPv4 addresses, no client id: the topic count
    b.splice(at.., huge.iter().copied());
    let err = decode_shared(&b).expect_err("refused");
    assert_eq!(err.what, "topic count");
}

/// Many entries through a store with 3-record blocks and 2 cached: at most
/// 3 blocks of records and 2 shared facts are held in memory at any time, and
/// every entry reads back as a naive model says, through pairing updates (to
/// entries in old blocks, in the file) and ring-mode drops; the scratch files
/// of dropped entries are given back.
#[test]
fn memory_stays_bounded_and_entries_match_a_model() {
    let g = Geometry::TINY;
    let mode = Arc::new(AtomicU8::new(OK));
    let made = Arc::new(AtomicU64::new(0));
    let mut store = EntryStore::new(g);
    store.set_scratch(fakes(&mode, &made));
    let mut interner = Interner::default();
    let mut model: Vec<IndexEntry> = Vec::new();
    let mut dropped = 0u64;
    let pool: Vec<Entry> = [A2, B2, A6].iter().flat_map(|c| entries(c)).collect();
    let bound = (g.cache + 1) * g.block;
    for (n, mut v) in pool.iter().cycle().take(3000).cloned().enumerate() {
        v.info.index = model.len() as u64;
        v.info.peer = None;
        let e = IndexEntry::new(v, &mut interner);
        store.push(e.clone());
        model.push(e);
        // Pair the new entry with one 40 back (an old block, written out).
        let i = model.len() - 1;
        if n % 3 == 0 && i >= 40 {
            let p = i - 40;
            let set = |e: &mut FactsEntry| {
                e.set_paired(true);
                e.set_peer(Some(i as u64));
            };
            store.update(p, set).expect("update");
            set(&mut model[p]);
        }
        // Ring mode now and then: drop a few of the oldest.
        if n % 500 == 499 {
            let k = model.len() / 3;
            store.drop_front(k);
            model.drain(..k);
            dropped += k as u64;
            for (j, e) in model.iter_mut().enumerate() {
                e.set_index(j as u64);
                let peer = e.peer().and_then(|p| p.checked_sub(k as u64));
                e.set_peer(peer);
            }
        }
        assert!(
            store.resident() <= bound,
            "{} records held",
            store.resident()
        );
        let (held, written) = store.facts_held();
        assert!(
            held <= g.facts && written <= 4 * g.facts,
            "{held} {written}"
        );
        if n % 97 == 0 {
            for (j, want) in model.iter().enumerate() {
                same(&store.at(j), want, &format!("entry {j} after {n} pushes"));
                assert!(store.resident() <= bound);
            }
        }
    }
    assert!(dropped > 1000);
    assert_eq!(store.len(), model.len());
    for (j, (got, want)) in store.iter().zip(&model).enumerate() {
        same(&got.expect("reads"), want, &format!("entry {j} at the end"));
    }
    assert_eq!(store.get(model.len()).map(|e| e.index()), None);
    assert!(matches!(
        store.try_get(model.len()),
        Err(StoreError::Missing { .. })
    ));
    // The files of dropped entries were given back: those left hold the
    // entries left (each file at least one of their blocks).
    let made = made.load(Ordering::Relaxed) as usize;
    assert!(
        store.files() <= model.len() / g.block + 3 && made > 2 * store.files(),
        "{} files of {made} for {} entries",
        store.files(),
        model.len()
    );
    assert!(store.take_warning().is_none());
}

/// A full disk midway: entries written before stay readable from the file,
/// later ones (and old blocks that must change) live in memory; one warning.
/// A temporary directory where nothing can be created: the same, from the start.
#[test]
fn a_failing_scratch_file_keeps_the_index_in_memory() {
    let all: Vec<Entry> = entries(B2);
    let mode = Arc::new(AtomicU8::new(OK));
    let mut store = tiny_store(&mode);
    let mut interner = Interner::default();
    let mut model = Vec::new();
    for (n, mut v) in all.iter().cloned().enumerate() {
        if n == all.len() / 2 {
            mode.store(FULL, Ordering::Relaxed);
        }
        v.info.index = n as u64;
        let e = IndexEntry::new(v, &mut interner);
        store.push(e.clone());
        model.push(e);
    }
    // Old entries change after the failure: their blocks move to memory.
    for p in [0, 1, 5, 9] {
        store.update(p, |e| e.set_paired(false)).expect("update");
        model[p].set_paired(false);
    }
    let w = store.take_warning().expect("a warning");
    assert!(w.contains("kept in memory"), "{w}");
    assert!(store.take_warning().is_none(), "said once");
    for (i, want) in model.iter().enumerate() {
        same(&store.at(i), want, &format!("entry {i}"));
    }

    let mut none = EntryStore::new(Geometry::TINY);
    none.set_scratch(Box::new(|| {
        Err(std::io::Error::from(std::io::ErrorKind::ReadOnlyFilesystem))
    }));
    for e in &model {
        none.push(e.clone());
    }
    assert!(none.take_warning().is_some());
    assert_eq!(none.files(), 0);
    for (i, want) in model.iter().enumerate() {
        same(&none.at(i), want, &format!("entry {i} in memory"));
    }
}

/// A scratch file that gives other bytes, or none, makes errors for the
/// entries it holds, never a panic nor another entry; the open block still reads.
#[test]
fn a_lying_scratch_file_gives_errors_not_panics() {
    for bad in [FLIPPED, UNREADABLE] {
        let mode = Arc::new(AtomicU8::new(OK));
        let mut store = EntryStore::new(Geometry {
            buffer: 1,
            ..Geometry::TINY
        });
        store.set_scratch(fakes(&mode, &Arc::new(AtomicU64::new(0))));
        let mut interner = Interner::default();
        let mut model = Vec::new();
        for (n, mut v) in entries(A2).into_iter().enumerate() {
            v.info.index = n as u64;
            let e = IndexEntry::new(v, &mut interner);
            store.push(e.clone());
            model.push(e);
        }
        mode.store(bad, Ordering::Relaxed);
        let mut errors = 0;
        for (i, want) in model.iter().enumerate() {
            match store.try_get(i) {
                Ok(e) => same(&e, want, &format!("entry {i}")),
                Err(e) => {
                    errors += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        assert!(errors > model.len() / 2, "{errors}");
        assert!(store.iter().filter(Result::is_err).count() >= errors);
        // Updates and drops on unreadable entries: errors or nothing, no panic.
        let _ = store.update(0, |e| e.set_paired(true));
        store.drop_front(2);
        assert_eq!(store.len(), model.len() - 2);
    }
}

/// The App on a failing scratch file says so once in its status line and
/// keeps working.
#[test]
fn the_app_says_once_that_the_index_is_in_memory() {
    let mut app = App::new(
        Config {
            title: "store".into(),
            kind: SourceKind::File,
            color: false,
        },
        (120, 40),
    );
    let mut store = EntryStore::new(Geometry::TINY);
    store.set_scratch(Box::new(|| {
        Err(std::io::Error::from(std::io::ErrorKind::StorageFull))
    }));
    app.entries = store;
    let all = entries(A2);
    app.update(Msg::Loaded(all[..10].to_vec()));
    let notice = app.notice.clone().unwrap_or_default();
    assert!(notice.contains("kept in memory"), "{notice}");
    app.update(Msg::Key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
    app.update(Msg::Loaded(all[10..].to_vec()));
    assert_eq!(app.notice, None);
    assert_eq!(app.entries.len(), all.len());
    app.update(Msg::Key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE)));
    assert_eq!(
        app.selected_entry().map(|e| e.info().frame),
        all.last().map(|e| e.info.frame)
    );
    assert!(app.detail.is_some());
}

/// The real temporary file: created in the directory given and gone from it
/// at once; a directory where it cannot be made is an error that names it.
#[test]
fn the_scratch_file_leaves_nothing_behind() {
    let dir = std::env::temp_dir().join(format!("kafkashark-scratch-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("test dir");
    let f = super::scratch_file_in(&dir).expect("a scratch file");
    let g = super::scratch_file_in(&dir).expect("another");
    g.write_at(0, b"other").expect("write");
    f.write_at(5, b"hello").expect("write");
    let mut b = [0u8; 7];
    f.read_at(3, &mut b).expect("read");
    assert_eq!(&b, b"\0\0hello");
    let mut past = [0u8; 2];
    assert!(f.read_at(100, &mut past).is_err());
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
    std::fs::remove_dir(&dir).expect("empty");
    let err = super::scratch_file_in(&dir).err().expect("no directory");
    assert!(
        err.to_string().contains(&dir.display().to_string()),
        "{err}"
    );
}

/// The filter's bitset against a `Vec<bool>`: every push, set and drain.
#[test]
fn bitset_matches_a_vec_of_bools() {
    for len in [0usize, 1, 63, 64, 65, 130, 200] {
        for k in (0..=len + 2).step_by(7).chain([63, 64, 65]) {
            let bits: Vec<bool> = (0..len).map(|i| (i * 7 + len) % 3 == 0).collect();
            let mut b = Bitset::default();
            for &x in &bits {
                b.push(x);
            }
            let mut v = bits.clone();
            b.drain_front(k);
            v.drain(..k.min(len));
            assert_eq!(b.len(), v.len());
            assert_eq!(b.is_empty(), v.is_empty());
            for (i, &x) in v.iter().enumerate() {
                assert_eq!(b.get(i), x, "len {len} k {k} bit {i}");
            }
            assert!(!b.get(v.len()));
            b.push(true);
            assert!(b.get(v.len()));
            b.set(0, false);
            assert!(!b.get(0));
            let f = Bitset::filled(len, true);
            assert_eq!((0..len + 3).filter(|&i| f.get(i)).count(), len);
            // Insert grows the set to the bit, the bits between off.
            let mut g = Bitset::filled(len, false);
            g.insert(len + k);
            assert_eq!(g.len(), len + k + 1);
            assert_eq!(
                (0..len + k + 70).filter(|&i| g.get(i)).collect::<Vec<_>>(),
                [len + k]
            );
            g.insert(0);
            assert_eq!(g.len(), len + k + 1);
            assert!(g.get(0) && g.get(len + k));
        }
    }
}

/// The sort keys column keeps the same order as the entries: a latency sort on
/// a paging store lists the same frames as sorting the facts.
#[test]
fn sorts_on_a_paging_store_match_the_facts() {
    let all = entries(B2);
    let mut app = super::testutil::app_with(B2, 120, 40);
    for _ in 0..2 {
        app.update(Msg::Key(KeyEvent::new(
            KeyCode::Char('s'),
            KeyModifiers::NONE,
        )));
        let mut want: Vec<(usize, &Entry)> = all.iter().enumerate().collect();
        match app.sort {
            super::app::Sort::LatencyDesc => {
                want.sort_by(
                    |(a, x), (b, y)| match (x.info.latency_ns, y.info.latency_ns) {
                        (Some(p), Some(q)) => q.cmp(&p).then(a.cmp(b)),
                        (Some(_), None) => std::cmp::Ordering::Less,
                        (None, Some(_)) => std::cmp::Ordering::Greater,
                        (None, None) => a.cmp(b),
                    },
                )
            }
            _ => want.sort_by(|(a, x), (b, y)| y.info.length.cmp(&x.info.length).then(a.cmp(b))),
        }
        let want: Vec<u32> = want.iter().map(|(i, _)| *i as u32).collect();
        assert_eq!(app.view, want, "{:?}", app.sort);
        assert!(app.entries.iter().all(|e| e.is_ok()));
        assert!(app.selected_entry().is_some());
    }
}

/// The filter applied through the App on a paging store (the peers of
/// responses from the entries just read, the others from the store) shows
/// exactly the entries whose facts, and their peer's, pass it.
#[test]
fn the_app_filter_on_a_paging_store_matches_the_facts() {
    let texts = [
        "response",
        "topic=*a*",
        "error or throttled",
        "client_id~a and request",
        "unpaired or latency>1ms",
    ];
    for cap in [A2, B2, A6] {
        let mut app = super::testutil::app_with(cap, 120, 40);
        let infos: Vec<_> = app.entries.all().iter().map(|e| e.info()).collect();
        for text in texts {
            let press = |app: &mut App, code| {
                app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
            };
            press(&mut app, KeyCode::Char('/'));
            while app.bar.as_ref().is_some_and(|b| !b.text.is_empty()) {
                press(&mut app, KeyCode::Backspace);
            }
            for c in text.chars() {
                press(&mut app, KeyCode::Char(c));
            }
            press(&mut app, KeyCode::Enter);
            let f = crate::filter::Filter::parse(text).expect("parses");
            let want: Vec<u32> = (0..infos.len())
                .filter(|&i| {
                    let peer = infos[i].peer.and_then(|p| infos.get(p as usize));
                    f.matches(&infos[i], peer)
                })
                .map(|i| i as u32)
                .collect();
            assert_eq!(app.view, want, "{cap}: {text}");
        }
    }
}

/// Scratch files are taken only by a store never pushed to: entries already
/// in the log stay readable, and no scratch file is made for them.
#[test]
fn scratch_is_set_only_on_a_fresh_store() {
    let g = Geometry::TINY;
    let made = Arc::new(AtomicU64::new(0));
    let mut store = EntryStore::new(g);
    let mut interner = Interner::default();
    let mut model = Vec::new();
    for (n, mut v) in entries(A2)
        .into_iter()
        .cycle()
        .take(3 * g.block)
        .enumerate()
    {
        v.info.index = n as u64;
        v.info.peer = None;
        let e = IndexEntry::new(v, &mut interner);
        store.push(e.clone());
        model.push(e);
        if n == g.block / 2 {
            store.set_scratch(fakes(&Arc::new(AtomicU8::new(OK)), &made));
        }
    }
    assert_eq!(
        made.load(Ordering::Relaxed),
        0,
        "no scratch file for a used store"
    );
    for (i, e) in model.iter().enumerate() {
        same(&store.get(i).expect("entry"), e, "in memory");
    }
}
