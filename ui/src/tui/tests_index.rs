//! The message index: entries that leave their bytes in the capture file and
//! read them again when shown, and ring mode. State tests through
//! `App::update`; the file is an in-memory store.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Config, Entry, Msg, SourceKind};
use super::index::{IndexEntry, Interner};
use super::testutil::{entries, located_entries, MemStore};
use super::ui;

const A2: &str = "captures/a2-confluent-compression-codecs.pcap";
const B3: &str = "captures/b3-large-messages.pcap";
const A6: &str = "captures/a6-confluent-multisegment-pdus.pcap";

fn app(store: Option<Vec<u8>>) -> App {
    let mut app = App::new(
        Config {
            title: "index".into(),
            kind: SourceKind::File,
            color: false,
        },
        (120, 40),
    );
    app.store = store.map(|b| Box::new(MemStore(b)) as Box<dyn super::ByteStore>);
    app
}

fn key(app: &mut App, code: KeyCode) {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

/// Every message of captures with multi-segment and large messages keeps no
/// bytes in the index, and reads back byte for byte the bytes it was framed
/// from, with the same tree as from the bytes themselves.
#[test]
fn every_message_reads_back_identical_bytes_and_tree() {
    for cap in [A2, B3, A6] {
        let (indexed, full, file) = located_entries(cap);
        assert!(!indexed.is_empty(), "{cap}");
        assert!(
            indexed
                .iter()
                .all(|e| e.in_file() && e.raw.bytes.is_empty()),
            "{cap}: every message is located in the file"
        );
        let mut a = app(Some(file));
        let mut b = app(None);
        a.update(Msg::Loaded(indexed));
        b.update(Msg::Loaded(full.clone()));
        for pos in 0..a.view.len() {
            a.select_pos(pos);
            b.select_pos(pos);
            let (da, db) = (a.detail.as_ref().unwrap(), b.detail.as_ref().unwrap());
            assert_eq!(da.raw.bytes, full[da.entry].raw.bytes, "{cap} #{pos}");
            assert_eq!(da.raw, db.raw, "{cap} #{pos}");
            assert_eq!(da.decoded.root, db.decoded.root, "{cap} #{pos}");
            assert_eq!(a.hex_bytes(), b.hex_bytes(), "{cap} #{pos}");
        }
    }
}

/// The stats view decodes located entries from the file: same figures.
#[test]
fn stats_view_reads_located_entries_back() {
    let (indexed, full, file) = located_entries(A2);
    let mut a = app(Some(file));
    let mut b = app(None);
    a.update(Msg::Loaded(indexed));
    b.update(Msg::Loaded(full));
    a.update(Msg::LoadDone);
    b.update(Msg::LoadDone);
    a.refresh_stats();
    b.refresh_stats();
    let (sa, sb) = (
        a.stats_view.as_ref().unwrap(),
        b.stats_view.as_ref().unwrap(),
    );
    assert_eq!(format!("{:?}", sa.data), format!("{:?}", sb.data));
}

/// A file that changed under the TUI (or cannot be read) shows a notice, never
/// other bytes.
#[test]
fn a_changed_file_is_reported_not_shown() {
    let (indexed, _, mut file) = located_entries(A2);
    let first = indexed[0].raw.file_pieces[0].0 as usize;
    file[first + 10] ^= 0xff;
    let mut a = app(Some(file));
    a.update(Msg::Loaded(indexed.clone()));
    assert!(a.detail.is_none());
    let notice = a.notice.clone().unwrap_or_default();
    assert!(notice.contains("changed since it was loaded"), "{notice}");
    // The next message is fine.
    key(&mut a, KeyCode::Down);
    assert!(a.detail.is_some());

    let mut none = app(None);
    none.update(Msg::Loaded(indexed));
    assert!(none.detail.is_none());
    assert!(none.notice.unwrap_or_default().contains("not open"));
}

/// Going back to a recent message does not read the file again.
#[test]
fn recently_shown_messages_are_kept() {
    let (indexed, _, file) = located_entries(A2);
    let mut a = app(Some(file));
    a.update(Msg::Loaded(indexed));
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Up);
    // Swap in an empty file: the two shown messages still come from memory.
    a.store = Some(Box::new(MemStore(Vec::new())));
    key(&mut a, KeyCode::Down);
    assert!(a.detail.is_some(), "{:?}", a.notice);
    key(&mut a, KeyCode::Up);
    assert!(a.detail.is_some());
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Down);
    assert!(a.detail.is_none(), "a third message needs the file");
}

/// Ring mode: the index never holds more than its cap, the oldest go first and
/// are counted, positions stay indices, and pairs point at the right peers.
#[test]
fn ring_mode_drops_the_oldest_and_counts_them() {
    let all = entries(A2);
    let cap = 40;
    let mut a = app(None);
    a.max_entries = cap;
    let mut loaded = 0usize;
    for chunk in all.chunks(7) {
        a.update(Msg::Loaded(chunk.to_vec()));
        loaded += chunk.len();
        assert!(a.entries.len() <= cap);
        assert_eq!(a.dropped as usize + a.entries.len(), loaded);
    }
    assert!(a.dropped > 0);
    let first = a.dropped as usize;
    let mut b = app(None);
    b.update(Msg::Loaded(all.clone()));
    for (i, e) in a.entries.all().into_iter().enumerate() {
        let orig = &all[first + i];
        assert_eq!(e.info().index, i as u64);
        assert_eq!(e.info().frame, orig.info.frame);
        assert_eq!(e.raw().bytes, orig.raw.bytes);
        // The peer is the same message as in the full list, or gone with the dropped ones.
        let want = b
            .entries
            .at(first + i)
            .info()
            .peer
            .and_then(|p| (p as usize).checked_sub(first));
        assert_eq!(e.info().peer.map(|p| p as usize), want, "entry {i}");
    }
    assert_eq!(a.view, (0..a.entries.len() as u32).collect::<Vec<_>>());
    let sel = a.selected.expect("a selection");
    assert_eq!(a.detail.as_ref().unwrap().entry, sel);
    // The status bar says how many left.
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    term.draw(|f| ui::render(f, &a)).unwrap();
    let screen: String = term
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(
        screen.contains(&format!("{} oldest dropped", a.dropped)),
        "status bar"
    );
}

/// Ring mode keeps a selection that is still in the list, and moves one that
/// was dropped to the oldest message left.
#[test]
fn ring_mode_keeps_or_moves_the_selection() {
    let all = entries(A2);
    let mut a = app(None);
    a.max_entries = 16;
    a.update(Msg::Loaded(all[..10].to_vec()));
    // Down to the 10th (End would stay with the newest as more arrive).
    for _ in 0..9 {
        key(&mut a, KeyCode::Down);
    }
    assert_eq!(a.list_pos, 9);
    let frame = a.selected_entry().unwrap().info().frame;
    a.update(Msg::Loaded(all[10..16].to_vec()));
    assert_eq!(a.selected_entry().unwrap().info().frame, frame);
    a.update(Msg::Loaded(all[16..20].to_vec()));
    // 20 > 16: down to 14, the 6 oldest gone; the selection (the 10th) stays.
    assert_eq!(a.dropped, 6);
    assert_eq!(a.selected_entry().unwrap().info().frame, frame);
    assert_eq!(a.view[a.list_pos] as usize, a.selected.unwrap());
    key(&mut a, KeyCode::Home);
    a.update(Msg::Loaded(all[20..24].to_vec()));
    // The selected first entry was dropped: the oldest left is selected.
    assert_eq!(a.selected, Some(0));
    assert_eq!(a.list_pos, 0);
    assert_eq!(
        a.selected_entry().unwrap().info().frame,
        all[a.dropped as usize].info.frame
    );
    assert_eq!(a.detail.as_ref().unwrap().entry, 0);
}

/// Entries without file pieces keep their bytes.
#[test]
fn unlocated_messages_keep_their_bytes() {
    let e = entries(A2).remove(0);
    assert!(e.raw.file_pieces.is_empty());
    let kept = Entry::indexed(e.info.clone(), e.raw.clone());
    assert!(!kept.in_file());
    assert_eq!(kept.raw.bytes, e.raw.bytes);
}

const ALL: [&str; 11] = [
    "captures/a1-kcat-produce-consume-group.pcap",
    A2,
    "captures/a3-kafka-python-admin.pcap",
    "captures/a4-kafkajs-produce-consume-sll2.pcap",
    "captures/a5-ipv6-confluent-admin-produce-consume.pcap",
    A6,
    "captures/b1-port-19092-mixed-clients.pcap",
    "captures/b2-errors-and-acks0.pcap",
    B3,
    "captures/b4-throttle-errors-proxy.pcap",
    "captures/a1-kcat-produce-consume-group.pcap",
];

/// The compact index entry gives back exactly the facts and the message it was
/// made from, for entries that hold their bytes and for located ones; located
/// messages of one piece from their first frame on are stored inline.
#[test]
fn index_entries_lose_nothing() {
    for cap in ALL {
        let mut interner = Interner::default();
        let mut check = |e: Entry| {
            let c = IndexEntry::new(e.clone(), &mut interner);
            assert_eq!(c.info(), e.info, "{cap}");
            assert_eq!(c.raw(), e.raw, "{cap}");
            assert_eq!(c.sum(), e.sum, "{cap}");
            assert_eq!(c.in_file(), e.in_file(), "{cap}");
            assert_eq!(c.ts(), e.info.ts, "{cap}");
            assert_eq!(c.missing(), e.raw.missing, "{cap}");
            c
        };
        for e in entries(cap) {
            assert!(check(e).spilled(), "{cap}: bytes held, so boxed");
        }
        if let Ok((indexed, _, _)) = std::panic::catch_unwind(|| located_entries(cap)) {
            let mut inline = 0;
            for e in indexed {
                let one_piece = e.raw.file_pieces.len() == 1 && e.raw.provenance.is_empty();
                let spilled = check(e).spilled();
                assert_eq!(spilled, !one_piece, "{cap}");
                inline += usize::from(!spilled);
            }
            assert!(inline > 0 || cap != A2, "{cap}");
        }
        // Entries of one connection share their endpoints' text: one
        // interned text per (client, broker) pair, however many messages.
        let all = entries(cap);
        let pairs: std::collections::HashSet<_> =
            all.iter().map(|e| (e.info.client, e.info.broker)).collect();
        assert!(
            all.is_empty() || pairs.len() < all.len(),
            "{cap}: pairs repeat"
        );
        assert_eq!(interner.len(), pairs.len(), "{cap}");
    }
}

/// Edge values survive the compact form: absent options, extreme numbers and
/// timestamps, a multi-piece message, a provenance that is not its first frame's.
#[test]
fn index_entries_keep_edge_values() {
    let mut es = entries(A2);
    let mut e = es.swap_remove(0);
    e.info.index = u64::MAX;
    e.info.frame = u64::MAX;
    e.info.first_frame = 0;
    e.info.ts.secs = i64::MIN;
    e.info.ts.nanos = 999_999_999;
    e.info.first_ts.secs = i64::MAX;
    e.info.api_key = None;
    e.info.api_version = Some(i16::MIN);
    e.info.correlation_id = Some(i32::MIN);
    e.info.peer = Some(0);
    e.info.latency_ns = Some(u64::MAX);
    e.info.throttle_time_ms = Some(0);
    e.info.length = i32::MIN;
    e.info.skipped_before = 7;
    e.info.decode_error = Some("x at 3".into());
    e.info.error_codes = vec![-1, 3];
    let mut interner = Interner::default();
    for pieces in [vec![], vec![(5, 1)], vec![(5, 1), (9, 2)]] {
        let mut raw = e.raw.clone();
        raw.bytes = Default::default();
        raw.provenance = vec![(0, 3), (1, 4)];
        raw.file_pieces = pieces;
        let f = Entry {
            info: e.info.clone(),
            raw,
            sum: Some(u64::MAX),
        };
        let c = IndexEntry::new(f.clone(), &mut interner);
        assert_eq!(c.info(), f.info);
        assert_eq!(c.raw(), f.raw);
        assert_eq!(c.sum(), Some(u64::MAX));
        assert!(c.spilled());
    }
    let mut c = IndexEntry::new(e.clone(), &mut interner);
    c.set_peer(None);
    c.set_paired(false);
    let mut want = e.info.clone();
    want.peer = None;
    want.paired = false;
    assert_eq!(c.info(), want);
}

/// The filter gives the same answer on an index entry (and its peer) as on its
/// full facts, for every kind of predicate.
#[test]
fn filter_on_index_entries_matches_filter_on_facts() {
    let texts = [
        "produce",
        "request",
        "response and version>=3",
        "client~127",
        "client=rdkafka",
        "client_id~admin",
        "broker~9092",
        "stream=1 or corr<5",
        "frame=10",
        "size>1KB",
        "topic=*admin*",
        "topic!=x",
        "latency>1ms",
        "throttle>0",
        "throttled",
        "error",
        "error=NONE",
        "not error!=UNKNOWN_TOPIC_OR_PARTITION",
        "unpaired or inferred or resynced or malformed or noresponse",
        "longpoll",
        "hol>100us",
        "service>50ms and not longpoll",
    ];
    let filters: Vec<crate::filter::Filter> = texts
        .iter()
        .filter_map(|f| crate::filter::Filter::parse(f).ok())
        .collect();
    assert_eq!(filters.len(), 22, "the filters parse");
    // Per filter, over every capture: the entries it matched.
    let mut hits = vec![0usize; filters.len()];
    let mut total = 0;
    for cap in ALL {
        let mut a = app(None);
        a.update(Msg::Loaded(entries(cap)));
        let infos: Vec<_> = a.entries.all().into_iter().map(|e| e.info()).collect();
        total += infos.len();
        for (f, hits) in filters.iter().zip(hits.iter_mut()) {
            for (e, i) in a.entries.all().into_iter().zip(&infos) {
                let pe = e.peer().and_then(|p| a.entries.get(p as usize));
                let pi = i.peer.and_then(|p| infos.get(p as usize));
                let m = f.matches(&*e, pe.as_deref());
                assert_eq!(m, f.matches(i, pi), "{cap}: {f} on frame {}", i.frame);
                *hits += usize::from(m);
            }
        }
    }
    // Each filter picks some entries, and each but the broker port (every
    // capture here talks to one broker port) leaves some out: no comparison
    // above was between two empty answers alone.
    for (f, n) in texts.iter().zip(&hits) {
        assert!(*n > 0, "{f} matched nothing");
        if *f != "broker~9092" {
            assert!(*n < total, "{f} matched everything");
        }
    }
}

/// The latency parts through the TUI's filter bar, on the index entries (the
/// fetch wait and the long-poll mark survive the compact form and the store):
/// a1's three requests queued behind a long-poll, its seven long-polls and b6's
/// 23 (the figures tests/wire_truth.rs checks against an independent reading).
#[test]
fn latency_parts_filter_the_index() {
    let frames = |a: &App| -> Vec<u64> {
        a.view
            .iter()
            .map(|&i| a.entries.at(i as usize).info().frame)
            .collect()
    };
    // Typed into the `/` bar, once what it held is cleared.
    let filter = |a: &mut App, text: &str| {
        key(a, KeyCode::Char('/'));
        key(a, KeyCode::End);
        while a.bar.as_ref().is_some_and(|b| !b.text.is_empty()) {
            key(a, KeyCode::Backspace);
        }
        for c in text.chars() {
            key(a, KeyCode::Char(c));
        }
        key(a, KeyCode::Enter);
        assert_eq!(a.filter_text, text);
    };
    let mut a = app(None);
    a.update(Msg::Loaded(entries(ALL[0])));
    filter(&mut a, "hol>5ms and response");
    assert_eq!(frames(&a), [243, 245, 247]);
    filter(&mut a, "hol>5ms");
    assert_eq!(a.view.len(), 6, "with their requests");
    filter(&mut a, "latency>400ms and service<1ms");
    assert_eq!(a.view.len(), 6);
    filter(&mut a, "longpoll and response");
    assert_eq!(frames(&a), [177, 241, 249, 253, 299, 301, 335]);
    filter(
        &mut a,
        "fetch and response and service>50ms and not longpoll",
    );
    for &i in &a.view {
        let info = a.entries.at(i as usize).info();
        assert!(info.fetch.is_some_and(|f| f.record_bytes > 0), "{info:?}");
    }
    assert!(!a.view.is_empty());
    let mut b = app(None);
    b.update(Msg::Loaded(entries("captures/b6-consumer-lag.pcap")));
    filter(&mut b, "longpoll and response");
    assert_eq!(b.view.len(), 23);
    filter(&mut b, "longpoll");
    assert_eq!(b.view.len(), 46, "with their requests");
}

/// The index entry stays compact; whatever the messages, the store holds at
/// most its geometry's shared facts in memory.
#[test]
fn index_entries_are_compact_and_shared() {
    let size = size_of::<IndexEntry>();
    eprintln!(
        "size_of: IndexEntry {size}, Entry {} (MessageInfo {}, RawMessage {})",
        size_of::<Entry>(),
        size_of::<kafkashark::analyzer::MessageInfo>(),
        size_of::<kafkashark::kafka::framing::RawMessage>()
    );
    assert!(size <= 144, "IndexEntry is {size} bytes");
    let es = entries(A2);
    let n = es.len();
    let mut a = app(None);
    a.max_entries = 8;
    a.update(Msg::Loaded(es));
    let (held, written) = a.entries.facts_held();
    let g = super::store::Geometry::TINY;
    assert!(a.entries.len() <= 8);
    assert!(
        held <= g.facts && written <= 4 * g.facts,
        "{held} shared facts held, {written} remembered, for {} entries of {n}",
        a.entries.len()
    );
}
