//! State tests: everything through `App::update`, no rendering, no threads,
//! no sleeps. Entries come from the real captures in `captures/`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::schema::ApiKey;

use super::app::{App, Config, Effect, LoadStats, Msg, Pane, Sort, SourceKind};
use super::testutil::{app_with, entries, message_app};
use super::ui;
use crate::timefmt::TimeFormat;

const A1: &str = "captures/a1-kcat-produce-consume-group.pcap";
const A2: &str = "captures/a2-confluent-compression-codecs.pcap";
const SEED: &str = "captures/messages/produce-v12-request-minimal.hex";

fn key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn selected_name(app: &App) -> String {
    app.selected_node()
        .map(|n| n.name.to_string())
        .unwrap_or_default()
}

/// Selects the first message listed whose tree `want` accepts.
fn select_first(app: &mut App, want: impl Fn(&super::app::Detail) -> bool) {
    (0..app.view.len())
        .find(|&p| {
            app.select_pos(p);
            app.detail.as_ref().is_some_and(&want)
        })
        .expect("a message the test looks for");
}

/// Focus the tree and put its cursor on the first row whose node is named `name`.
fn tree_to(app: &mut App, name: &str) {
    while app.focus != Pane::Tree {
        key(app, KeyCode::Tab);
    }
    key(app, KeyCode::Char('g'));
    for _ in 0..app.tree.rows.len() {
        if selected_name(app) == name {
            return;
        }
        key(app, KeyCode::Down);
    }
    panic!("no field {name} in the tree");
}

#[test]
fn batches_load_incrementally_and_pair_requests() {
    let all = entries(A2);
    let mut app = App::new(
        Config {
            title: "a2".into(),
            kind: SourceKind::File,
            color: true,
        },
        (120, 40),
    );
    assert!(app.selected.is_none());
    for chunk in all.chunks(7) {
        app.update(Msg::Loaded(chunk.to_vec()));
        // The first screen shows as soon as the first batch arrives.
        assert_eq!(app.selected, Some(0));
        assert!(app.detail.is_some());
    }
    app.update(Msg::LoadDone);
    assert!(app.done);
    assert_eq!(app.entries.len(), all.len());
    assert_eq!(app.view, (0..all.len() as u32).collect::<Vec<_>>());
    // Requests learn their response's index even when it came in a later batch.
    let mut pairs = 0;
    for (i, e) in app.entries.all().into_iter().enumerate() {
        if e.info().kind == Kind::Response && e.info().paired {
            let req = e.info().peer.expect("peer") as usize;
            assert_eq!(app.entries.at(req).info().peer, Some(i as u64));
            assert!(app.entries.at(req).info().paired);
            pairs += 1;
        }
    }
    assert!(pairs > 10, "{pairs}");
}

#[test]
fn progress_and_stats_are_kept() {
    let mut app = app_with(A1, 200, 40);
    app.update(Msg::Progress(10, Some(100)));
    app.update(Msg::Stats(LoadStats {
        frames: 336,
        streams: 19,
        gaps: 1,
        late: 4,
        resyncs: 2,
        kernel_drops: Some(3),
    }));
    assert_eq!(app.progress, (10, Some(100)));
    assert_eq!(app.stats.streams, 19);
    assert_eq!(app.stats.kernel_drops, Some(3));
    let bar = super::tests_render::screen_text(&super::tests_render::draw(&app));
    assert!(bar.contains("gaps 1") && bar.contains("late 4"), "{bar}");
}

#[test]
fn selection_moves_with_keys() {
    let mut app = app_with(A1, 120, 40);
    assert_eq!(app.list_pos, 0);
    keys(&mut app, "jj");
    assert_eq!(app.list_pos, 2);
    assert_eq!(app.selected, Some(2));
    key(&mut app, KeyCode::Up);
    assert_eq!(app.selected, Some(1));
    key(&mut app, KeyCode::Char('G'));
    assert_eq!(app.selected, Some(app.entries.len() - 1));
    // The list scrolled so the selection is visible.
    let rows = ui::layout(&app).list_rows;
    assert!(app.list_pos >= app.list_offset && app.list_pos < app.list_offset + rows);
    key(&mut app, KeyCode::Char('g'));
    assert_eq!(app.selected, Some(0));
    assert_eq!(app.list_offset, 0);
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.list_pos, rows - 1);
    key(&mut app, KeyCode::PageUp);
    assert_eq!(app.list_pos, 0);
    // The tree is decoded for the selected message only.
    let d = app.detail.as_ref().expect("decoded");
    assert_eq!(d.entry, 0);
    assert_eq!(d.decoded.root.name, "ApiVersionsRequest");
}

#[test]
fn tab_cycles_panes_and_quit_keys() {
    let mut app = app_with(A1, 120, 40);
    assert_eq!(app.focus, Pane::List);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Tree);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Hex);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::List);
    key(&mut app, KeyCode::BackTab);
    assert_eq!(app.focus, Pane::Hex);
    assert_eq!(key(&mut app, KeyCode::Char('q')), vec![Effect::Quit]);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.update(Msg::Key(ctrl_c)), vec![Effect::Quit]);
}

#[test]
fn tree_expands_and_collapses() {
    let mut app = app_with(A1, 120, 40);
    // The first CreateTopics response: its Topics array starts collapsed (level 3).
    let pos = app
        .view
        .iter()
        .position(|&i| {
            let e = &app.entries.at(i as usize);
            e.info().api_key == Some(ApiKey::CREATE_TOPICS) && e.info().kind == Kind::Response
        })
        .expect("a CreateTopics response");
    app.select_pos(pos);
    // Default: the root and its children are expanded.
    let shown: Vec<String> = app.tree.rows.iter().map(|r| r.guides.clone()).collect();
    assert!(shown.iter().all(|g| g.len() <= 8), "{shown:?}");
    tree_to(&mut app, "Topics");
    let before = app.tree.rows.len();
    key(&mut app, KeyCode::Enter);
    assert!(app.tree.rows.len() > before);
    key(&mut app, KeyCode::Char(' '));
    assert_eq!(app.tree.rows.len(), before);
    key(&mut app, KeyCode::Right);
    assert!(app.tree.rows.len() > before);
    // Right again goes to the first child.
    key(&mut app, KeyCode::Char('l'));
    assert_eq!(selected_name(&app), "length");
    // Left on a leaf goes to the parent, then collapses it.
    key(&mut app, KeyCode::Char('h'));
    assert_eq!(selected_name(&app), "Topics");
    key(&mut app, KeyCode::Left);
    assert_eq!(app.tree.rows.len(), before);
    // Expand all, collapse all.
    key(&mut app, KeyCode::Char('e'));
    let mut n = 0;
    app.detail
        .as_ref()
        .expect("decoded")
        .decoded
        .root
        .walk(&mut |_, _| n += 1);
    assert_eq!(app.tree.rows.len(), n);
    key(&mut app, KeyCode::Char('c'));
    assert_eq!(app.tree.rows.len(), 4);
}

/// What the user opens or closes in one message's tree stays so in the
/// next message with the same fields (by name, array elements alike).
#[test]
fn tree_expansion_carries_to_the_next_message() {
    let mut app = app_with(A1, 120, 40);
    let produce_requests: Vec<usize> = (0..app.view.len())
        .filter(|&p| {
            let i = app.entries.at(app.view[p] as usize).info();
            i.api_key == Some(ApiKey::PRODUCE) && i.kind == Kind::Request
        })
        .collect();
    assert!(produce_requests.len() >= 2);
    let is_open = |app: &App, name: &str| {
        let d = app.detail.as_ref().expect("a tree");
        app.tree.rows.iter().any(|r| {
            app.tree.expanded.contains(&r.path)
                && super::app::node_at(&d.decoded.root, &r.path).is_some_and(|n| n.name == name)
        })
    };
    app.select_pos(produce_requests[0]);
    assert!(!is_open(&app, "TopicData"), "collapsed by default");
    assert!(is_open(&app, "RequestHeader"), "open by default");
    tree_to(&mut app, "TopicData");
    key(&mut app, KeyCode::Right);
    tree_to(&mut app, "RequestHeader");
    key(&mut app, KeyCode::Left);
    app.select_pos(produce_requests[1]);
    assert!(is_open(&app, "TopicData"), "opened in the message before");
    assert!(
        !is_open(&app, "RequestHeader"),
        "closed in the message before"
    );
    // Another api's tree keeps its defaults where the names differ.
    let other = (0..app.view.len())
        .find(|&p| {
            let i = app.entries.at(app.view[p] as usize).info();
            i.api_key == Some(ApiKey::METADATA) && i.kind == Kind::Request
        })
        .expect("a Metadata request");
    app.select_pos(other);
    assert!(is_open(&app, "RequestHeader"), "its own default");
    app.select_pos(produce_requests[0]);
    assert!(is_open(&app, "TopicData"));
}

#[test]
fn p_jumps_between_request_and_response() {
    let mut app = app_with(A1, 120, 40);
    let req = app
        .entries
        .all()
        .into_iter()
        .position(|e| e.info().kind == Kind::Request && e.info().paired)
        .expect("a paired request");
    let resp = app.entries.at(req).info().peer.expect("peer") as usize;
    app.select_pos(
        app.view
            .iter()
            .position(|&i| i as usize == req)
            .expect("shown"),
    );
    key(&mut app, KeyCode::Char('p'));
    assert_eq!(app.selected, Some(resp));
    assert_eq!(app.detail.as_ref().map(|d| d.entry), Some(resp));
    key(&mut app, KeyCode::Char('p'));
    assert_eq!(app.selected, Some(req));
}

#[test]
fn filter_applies_and_bad_filter_is_shown_not_applied() {
    let mut app = app_with(A1, 120, 40);
    let total = app.view.len();
    key(&mut app, KeyCode::Char('/'));
    assert!(app.bar.is_some());
    keys(&mut app, "produce");
    assert_eq!(app.bar.as_ref().map(|b| b.error.clone()), Some(None));
    key(&mut app, KeyCode::Enter);
    assert!(app.bar.is_none());
    assert_eq!(app.filter_text, "produce");
    assert!(!app.view.is_empty() && app.view.len() < total);
    assert!(app
        .view
        .iter()
        .all(|&i| app.entries.at(i as usize).info().api_key == Some(ApiKey::PRODUCE)));
    // The selection moved onto a shown message.
    let sel = app.selected.expect("selected");
    assert_eq!(app.entries.at(sel).info().api_key, Some(ApiKey::PRODUCE));

    // A bad filter: the error and its column are shown as it is typed.
    key(&mut app, KeyCode::Char('/'));
    for _ in 0..10 {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "produce and");
    let err = app
        .bar
        .as_ref()
        .and_then(|b| b.error.clone())
        .expect("error");
    assert_eq!(err.0, 11);
    assert!(err.1.contains("expected a predicate"), "{}", err.1);
    key(&mut app, KeyCode::Enter);
    // Not applied: the bar stays open, the old filter stays.
    assert!(app.bar.is_some());
    assert_eq!(app.filter_text, "produce");
    key(&mut app, KeyCode::Esc);
    assert!(app.bar.is_none());
    assert_eq!(app.filter_text, "produce");

    // An empty filter shows everything again.
    key(&mut app, KeyCode::Char('/'));
    for _ in 0..10 {
        key(&mut app, KeyCode::Backspace);
    }
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view.len(), total);
}

/// A filter applied far down the list shows its matches from the top, not
/// blank rows; one that matches nothing leaves no tree of a hidden message.
#[test]
fn a_filter_shows_its_matches_and_nothing_else() {
    let mut app = app_with(A1, 120, 40);
    let rows = ui::layout(&app).list_rows;
    assert!(app.view.len() > 3 * rows);
    key(&mut app, KeyCode::End);
    assert!(app.list_offset > rows);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "produce");
    key(&mut app, KeyCode::Enter);
    let n = app.view.len();
    assert!(n > 0 && n < rows, "{n} matches, {rows} rows");
    assert_eq!(app.list_offset, 0, "every match in sight");
    assert!(app.detail.is_some());
    // No match at all: no selection, no tree.
    key(&mut app, KeyCode::Char('/'));
    for _ in 0..10 {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "latency>100s");
    key(&mut app, KeyCode::Enter);
    assert!(app.view.is_empty());
    assert!(app.selected.is_none() && app.detail.is_none());
    let screen = super::tests_render::screen_text(&super::tests_render::draw(&app));
    assert!(!screen.contains("ProduceRequest"), "{screen}");
    // The filter cleared: a message is selected and shown again.
    key(&mut app, KeyCode::Char('/'));
    for _ in 0..12 {
        key(&mut app, KeyCode::Backspace);
    }
    key(&mut app, KeyCode::Enter);
    assert!(app.selected.is_some() && app.detail.is_some());
}

#[test]
fn filter_is_applied_to_batches_as_they_arrive() {
    let all = entries(A1);
    let mut app = App::new(
        Config {
            title: "a1".into(),
            kind: SourceKind::File,
            color: false,
        },
        (120, 40),
    );
    key(&mut app, KeyCode::Char('/'));
    // Requests match latency through their response, which arrives later.
    keys(&mut app, "latency>0");
    key(&mut app, KeyCode::Enter);
    for chunk in all.chunks(5) {
        app.update(Msg::Loaded(chunk.to_vec()));
    }
    let mut whole = app_with(A1, 120, 40);
    key(&mut whole, KeyCode::Char('/'));
    keys(&mut whole, "latency>0");
    key(&mut whole, KeyCode::Enter);
    assert_eq!(app.view, whole.view);
    assert!(app
        .view
        .iter()
        .any(|&i| app.entries.at(i as usize).info().kind == Kind::Request));
}

#[test]
fn sort_cycles_capture_latency_size() {
    let mut app = app_with(A2, 120, 40);
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.sort, Sort::LatencyDesc);
    let lat: Vec<Option<u64>> = app
        .view
        .iter()
        .map(|&i| app.entries.at(i as usize).info().latency_ns)
        .collect();
    let known: Vec<u64> = lat.iter().flatten().copied().collect();
    assert!(known.windows(2).all(|w| w[0] >= w[1]));
    // Messages without a latency come after those with one.
    let first_none = lat.iter().position(Option::is_none).unwrap_or(lat.len());
    assert!(lat[first_none..].iter().all(Option::is_none));
    // The selection stays on the same message.
    assert_eq!(
        app.view[app.list_pos] as usize,
        app.selected.expect("selected")
    );
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.sort, Sort::SizeDesc);
    let sizes: Vec<i32> = app
        .view
        .iter()
        .map(|&i| app.entries.at(i as usize).info().length)
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]));
    key(&mut app, KeyCode::Char('s'));
    assert_eq!(app.sort, Sort::Capture);
    assert_eq!(app.view, (0..app.entries.len() as u32).collect::<Vec<_>>());
}

#[test]
fn sorted_view_stays_sorted_as_batches_arrive() {
    let all = entries(A2);
    let mut app = App::new(
        Config {
            title: "a2".into(),
            kind: SourceKind::File,
            color: true,
        },
        (120, 40),
    );
    key(&mut app, KeyCode::Char('s'));
    key(&mut app, KeyCode::Char('s'));
    for chunk in all.chunks(9) {
        app.update(Msg::Loaded(chunk.to_vec()));
    }
    let mut whole = app_with(A2, 120, 40);
    keys(&mut whole, "ss");
    assert_eq!(app.view, whole.view);
}

#[test]
fn follow_keeps_the_newest_selected() {
    let all = entries(A1);
    let mut app = App::new(
        Config {
            title: "lo".into(),
            kind: SourceKind::Live,
            color: true,
        },
        (80, 24),
    );
    // Live captures start in follow mode.
    assert!(app.follow);
    for chunk in all.chunks(10) {
        app.update(Msg::Loaded(chunk.to_vec()));
        assert_eq!(app.selected, Some(app.entries.len() - 1));
        let rows = ui::layout(&app).list_rows;
        assert!(app.list_pos < app.list_offset + rows);
    }
    // Moving up leaves follow mode; G (or End) turns it back on and jumps
    // to the newest.
    key(&mut app, KeyCode::Up);
    assert!(!app.follow);
    key(&mut app, KeyCode::Char('G'));
    assert!(app.follow);
    assert_eq!(app.selected, Some(app.entries.len() - 1));
    key(&mut app, KeyCode::Char('k'));
    assert!(!app.follow);
    key(&mut app, KeyCode::End);
    assert!(app.follow);
}

/// `F` follows the selected message's connection: only its messages, both
/// directions, in capture order (the sort set back to it), the list titled
/// with the connection; `F` again goes back to the filter before with the
/// same message selected; `Esc` does too, and a filter applied ends it.
#[test]
fn f_follows_the_selected_connection() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "not metadata");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Char('s'));
    let produce = app
        .view
        .iter()
        .map(|&i| app.entries.at(i as usize))
        .find(|e| e.info().api_key == Some(ApiKey::PRODUCE))
        .expect("a Produce");
    let at = app
        .view
        .iter()
        .position(|&i| i as u64 == produce.index())
        .expect("listed");
    app.select_pos(at);
    let stream = produce.info().stream;
    key(&mut app, KeyCode::Char('F'));
    assert_eq!(app.sort, Sort::Capture);
    assert_eq!(app.filter_text, format!("stream={stream}"));
    let shown: Vec<_> = app
        .view
        .iter()
        .map(|&i| app.entries.at(i as usize).info())
        .collect();
    // Every message of that connection (independently: a pass over all entries).
    let all: Vec<u64> = (0..app.entries.len())
        .filter(|&i| app.entries.at(i).info().stream == stream)
        .map(|i| i as u64)
        .collect();
    assert_eq!(
        app.view.iter().map(|&i| u64::from(i)).collect::<Vec<_>>(),
        all
    );
    assert!(shown.iter().any(|i| i.kind == Kind::Request));
    assert!(shown.iter().any(|i| i.kind == Kind::Response));
    assert!(shown.windows(2).all(|w| w[0].index < w[1].index));
    assert_eq!(app.selected, Some(produce.index() as usize));
    let screen = super::tests_render::screen_text(&super::tests_render::draw(&app));
    let (c, b) = (produce.info().client, produce.info().broker);
    assert!(
        screen.contains(&format!("stream {stream}: {c} ↔ {b}")),
        "{screen}"
    );
    // Back: the filter before, the same message.
    key(&mut app, KeyCode::Char('F'));
    assert!(app.followed.is_none());
    assert_eq!(app.filter_text, "not metadata");
    assert_eq!(app.selected, Some(produce.index() as usize));
    // Esc leaves too; a filter applied while following ends it.
    key(&mut app, KeyCode::Char('F'));
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.filter_text, "not metadata");
    key(&mut app, KeyCode::Char('F'));
    key(&mut app, KeyCode::Char('/'));
    ctrl(&mut app, 'u');
    keys(&mut app, "fetch");
    key(&mut app, KeyCode::Enter);
    assert!(app.followed.is_none());
    assert_eq!(app.filter_text, "fetch");
}

/// `t` steps through tshark's time formats; the list writes each as
/// `print -t` does, a delta from the row shown above.
#[test]
fn time_mode_toggles() {
    let mut app = app_with(A1, 120, 40);
    assert_eq!(app.time, TimeFormat::Relative);
    let (a, b) = (app.entries.at(0), app.entries.at(1));
    assert_eq!(ui::time_text(&app, &a, None), "0.000000");
    for want in TimeFormat::ALL
        .iter()
        .skip(1)
        .chain([&TimeFormat::Relative])
    {
        key(&mut app, KeyCode::Char('t'));
        assert_eq!(app.time, *want);
        let screen = super::tests_render::screen_text(&super::tests_render::draw(&app));
        let first = want.text(a.ts(), app.origin, None);
        let second = want.text(b.ts(), app.origin, Some(a.ts()));
        assert!(
            screen.contains(&first) && screen.contains(&second),
            "{want:?}:\n{screen}"
        );
        assert_eq!(
            screen.contains(&format!("time {}", want.name())),
            *want != TimeFormat::Relative
        );
    }
    // Delta: the second row's time since the first's (a1's frames 4 and 6).
    assert_eq!(
        TimeFormat::Delta.text(b.ts(), app.origin, Some(a.ts())),
        format!("{:.6}", b.ts().as_f64() - a.ts().as_f64())
    );
}

#[test]
fn field_selection_highlights_its_bytes() {
    let mut app = message_app(SEED, 120, 40);
    tree_to(&mut app, "correlation_id");
    assert_eq!(app.highlight(), Some((8, 12)));
    assert_eq!(app.hex.cursor, 8);
    assert_eq!(app.hex.source, 0);
    tree_to(&mut app, "TimeoutMs");
    assert_eq!(app.highlight(), Some((0x12, 0x16)));
}

#[test]
fn hex_cursor_selects_the_deepest_field() {
    let mut app = message_app(SEED, 120, 40);
    // Without a list the tree has the focus; Tab goes to the bytes and back.
    assert_eq!(app.focus, Pane::Tree);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Hex);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Tree);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Hex);
    key(&mut app, KeyCode::Char('g'));
    assert_eq!(selected_name(&app), "size");
    key(&mut app, KeyCode::Right);
    assert_eq!(app.hex.cursor, 1);
    assert_eq!(selected_name(&app), "size");
    // Down a row: byte 0x11 is inside Acks (0x10, 2 bytes).
    key(&mut app, KeyCode::Down);
    assert_eq!(app.hex.cursor, 0x11);
    assert_eq!(selected_name(&app), "Acks");
    assert_eq!(app.highlight(), Some((0x10, 0x12)));
    // Deep inside the RecordBatch (collapsed by default): the tree opens to it.
    for _ in 0..3 {
        key(&mut app, KeyCode::Down);
    }
    assert_eq!(app.hex.cursor, 0x41);
    assert_eq!(selected_name(&app), "maxTimestamp");
    let rows = ui::layout(&app).tree_rows;
    assert!(app.tree.cursor >= app.tree.offset && app.tree.cursor < app.tree.offset + rows);
    key(&mut app, KeyCode::Char('G'));
    assert_eq!(app.hex.cursor, 93);
    assert_eq!(selected_name(&app), "tagged_fields");
}

#[test]
fn decompressed_field_switches_the_byte_source() {
    let mut app = app_with(A2, 120, 40);
    // The first Produce request whose records decompress into a byte source.
    select_first(&mut app, |d| !d.decoded.sources.is_empty());
    let src_name = app.detail.as_ref().expect("d").decoded.sources[0]
        .name
        .clone();
    assert!(src_name.contains("decompressed"), "{src_name}");
    key(&mut app, KeyCode::Char('e'));
    while app.focus != Pane::Tree {
        key(&mut app, KeyCode::Tab);
    }
    key(&mut app, KeyCode::Char('g'));
    let mut found = false;
    for _ in 0..app.tree.rows.len() {
        if app.selected_node().is_some_and(|n| n.source == 1) {
            found = true;
            break;
        }
        key(&mut app, KeyCode::Down);
    }
    assert!(found, "a field in source #1");
    assert_eq!(app.hex.source, 1);
    let data = app.detail.as_ref().expect("d").decoded.sources[0]
        .data
        .clone();
    assert_eq!(app.hex_bytes(), &data[..]);
    let n = app.selected_node().expect("node");
    assert_eq!(app.highlight(), Some((n.offset, n.end())));
    assert_eq!(app.hex.roles.len(), data.len());
    // In the decompressed source the byte cursor selects fields of that source.
    while app.focus != Pane::Hex {
        key(&mut app, KeyCode::Tab);
    }
    key(&mut app, KeyCode::Char('G'));
    assert_eq!(app.hex.source, 1);
    assert_eq!(app.hex.cursor, data.len() - 1);
    assert!(app.selected_node().is_some_and(|n| n.source == 1));
    while app.focus != Pane::Tree {
        key(&mut app, KeyCode::Tab);
    }
    // Back to a field of the message: the view switches back.
    key(&mut app, KeyCode::Char('g'));
    assert_eq!(app.hex.source, 0);
}

#[test]
fn frames_key_names_the_carrying_frames() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('f'));
    let n = app.notice.clone().expect("notice");
    let frame = app.entries.at(0).info().frame;
    assert!(n.contains(&format!("frame {frame}")), "{n}");
    assert!(!n.contains("TLS"), "{n}");
    // Any other key clears it.
    key(&mut app, KeyCode::Char('j'));
    assert!(app.notice.is_none());
}

/// A message decrypted from TLS: `f` names the frames and the TLS records
/// (counted in the sender's direction) its bytes came from.
#[test]
fn frames_key_names_the_tls_records_of_a_decrypted_message() {
    const D1: &str = "captures/tls/d1-tls13.pcap";
    if !std::path::Path::new(&super::testutil::repo(D1)).is_file() {
        return;
    }
    let es = super::testutil::tls_entries(D1);
    let want: Vec<(u64, bool, u64)> = es
        .iter()
        .map(|e| (e.info.frame, e.raw.is_request(), e.raw.tls_records[0].1))
        .collect();
    let mut app = super::testutil::app_of(D1, es, 160, 40);
    for (frame, request, r) in want.iter().take(6) {
        key(&mut app, KeyCode::Char('f'));
        let n = app.notice.clone().expect("notice");
        let who = if *request { "client" } else { "broker" };
        assert!(
            n.contains(&format!("frame {frame}, TLS record {r} of the {who}'s")),
            "{n}"
        );
        key(&mut app, KeyCode::Char('j'));
    }
}

#[test]
fn help_opens_and_any_key_closes_it() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('?'));
    assert!(app.help);
    // q closes the help rather than quitting.
    assert!(key(&mut app, KeyCode::Char('q')).is_empty());
    assert!(!app.help);
}

#[test]
fn mouse_clicks_and_wheel() {
    let mut app = app_with(A1, 120, 40);
    let lay = ui::layout(&app);
    let list = lay.list.expect("list");
    let click = |col: u16, row: u16| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: col,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    // Border, header, then rows: the fourth row.
    app.update(click(10, list.y + 2 + 3));
    assert_eq!(app.selected, Some(3));
    // Wheel over the list moves the selection.
    app.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: 10,
        row: list.y + 3,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.selected, Some(6));
    // A click in the tree focuses it and selects the row.
    let lay = ui::layout(&app);
    app.update(click(40, lay.tree.y + 1 + 2));
    assert_eq!(app.focus, Pane::Tree);
    assert_eq!(app.tree.cursor, 2);
    // A click on a byte selects it and its field.
    let lay = ui::layout(&app);
    let (x, y) = (lay.hex.x + 1 + 6 + 3 * 9 + 1, lay.hex.y + 1);
    app.update(click(x, y));
    assert_eq!(app.focus, Pane::Hex);
    assert_eq!(app.hex.cursor, 9);
    assert!(app.highlight().is_some_and(|(s, e)| s <= 9 && 9 < e));
}

#[test]
fn resize_keeps_the_selection_visible() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('G'));
    app.update(Msg::Resize(80, 24));
    let rows = ui::layout(&app).list_rows;
    assert!(rows >= 3);
    assert!(app.list_pos >= app.list_offset && app.list_pos < app.list_offset + rows);
}

fn ctrl(app: &mut App, c: char) -> Vec<Effect> {
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

/// The bar's readline keys: Ctrl-A / Ctrl-E move to the ends, Ctrl-W
/// deletes the word before the cursor, Ctrl-K to the end, Ctrl-U to the start.
#[test]
fn the_bar_edits_with_readline_keys() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "produce and latency>5ms");
    let bar = |app: &App| {
        let b = app.bar.as_ref().expect("bar");
        (b.text.clone(), b.cursor)
    };
    ctrl(&mut app, 'w');
    assert_eq!(bar(&app), ("produce and ".to_string(), 12));
    ctrl(&mut app, 'w');
    assert_eq!(bar(&app), ("produce ".to_string(), 8));
    ctrl(&mut app, 'a');
    assert_eq!(bar(&app).1, 0);
    keys(&mut app, "not ");
    assert_eq!(bar(&app), ("not produce ".to_string(), 4));
    ctrl(&mut app, 'k');
    assert_eq!(bar(&app), ("not ".to_string(), 4));
    ctrl(&mut app, 'e');
    keys(&mut app, "fetch");
    assert_eq!(bar(&app), ("not fetch".to_string(), 9));
    // Ctrl-W over spaces takes the word before them too.
    keys(&mut app, "  ");
    ctrl(&mut app, 'w');
    assert_eq!(bar(&app), ("not ".to_string(), 4));
    ctrl(&mut app, 'u');
    assert_eq!(bar(&app), (String::new(), 0));
    // Other control keys type nothing.
    ctrl(&mut app, 'x');
    assert_eq!(bar(&app), (String::new(), 0));
}

/// `w` asks where to save the listed messages, suggesting a name from the
/// capture's, and Enter hands the shell the file to save to; without a
/// capture file to read again it says why it cannot.
#[test]
fn w_asks_where_to_save_the_listed_messages() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('w'));
    assert!(app.bar.is_none());
    assert!(
        app.notice
            .as_deref()
            .is_some_and(|n| n.contains("saving needs a capture file")),
        "{:?}",
        app.notice
    );
    app.save_from = Some(vec![format!(
        "/some/dir/{}",
        A1.rsplit('/').next().expect("name")
    )]);
    key(&mut app, KeyCode::Char('w'));
    let b = app.bar.as_ref().expect("the save bar");
    assert!(b.kind == super::app::BarKind::Save && b.error.is_none());
    assert_eq!(b.text, "a1-kcat-produce-consume-group-saved.pcapng");
    // Esc: nothing saved.
    key(&mut app, KeyCode::Esc);
    assert!(app.bar.is_none());
    // With a filter the name says so; any name may be typed; Enter saves.
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "produce");
    key(&mut app, KeyCode::Enter);
    let n = app.view.len();
    key(&mut app, KeyCode::Char('w'));
    assert_eq!(
        app.bar.as_ref().map(|b| b.text.as_str()),
        Some("a1-kcat-produce-consume-group-filtered.pcapng")
    );
    ctrl(&mut app, 'u');
    // An empty name is refused, the bar stays.
    assert_eq!(key(&mut app, KeyCode::Enter), Vec::<Effect>::new());
    assert!(app.bar.is_some());
    keys(&mut app, "out.pcap");
    assert_eq!(
        key(&mut app, KeyCode::Enter),
        vec![Effect::Save("out.pcap".into())]
    );
    assert!(app.bar.is_none());
    assert_eq!(
        app.notice.as_deref(),
        Some(format!("saving the packets of {n} messages to out.pcap …").as_str())
    );
    // Nothing listed: nothing to save.
    key(&mut app, KeyCode::Char('/'));
    ctrl(&mut app, 'u');
    keys(&mut app, "produce and fetch");
    key(&mut app, KeyCode::Enter);
    assert!(app.view.is_empty());
    key(&mut app, KeyCode::Char('w'));
    assert!(app.bar.is_none());
    assert_eq!(
        app.notice.as_deref(),
        Some("no messages listed: nothing to save")
    );
}

/// Up and Down in the filter bar step through the filters applied (newest
/// first), Down past the newest gives back what was typed; a filter applied
/// twice is kept once, as the newest.
#[test]
fn the_filter_bar_recalls_the_history() {
    let mut app = app_with(A1, 120, 40);
    app.history = vec!["metadata".into()];
    for f in ["produce", "fetch and longpoll", "produce"] {
        key(&mut app, KeyCode::Char('/'));
        ctrl(&mut app, 'u');
        keys(&mut app, f);
        key(&mut app, KeyCode::Enter);
    }
    // A bad filter is not applied, so not kept.
    key(&mut app, KeyCode::Char('/'));
    ctrl(&mut app, 'u');
    keys(&mut app, "latency>");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.history, ["metadata", "fetch and longpoll", "produce"]);
    key(&mut app, KeyCode::Char('/'));
    ctrl(&mut app, 'u');
    keys(&mut app, "err");
    let text = |app: &App| app.bar.as_ref().map(|b| (b.text.clone(), b.cursor));
    key(&mut app, KeyCode::Up);
    assert_eq!(text(&app), Some(("produce".into(), 7)));
    key(&mut app, KeyCode::Up);
    assert_eq!(text(&app), Some(("fetch and longpoll".into(), 18)));
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    assert_eq!(text(&app), Some(("metadata".into(), 8)));
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    assert_eq!(text(&app), Some(("err".into(), 3)));
    key(&mut app, KeyCode::Down);
    assert_eq!(text(&app), Some(("err".into(), 3)));
    // A recalled filter applies like a typed one.
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.filter_text, "fetch and longpoll");
    assert_eq!(
        app.history.last().map(String::as_str),
        Some("fetch and longpoll")
    );
    // The history never grows past its bound.
    for i in 0..super::app::HISTORY + 10 {
        key(&mut app, KeyCode::Char('/'));
        ctrl(&mut app, 'u');
        keys(&mut app, &format!("corr={i}"));
        key(&mut app, KeyCode::Enter);
    }
    assert_eq!(app.history.len(), super::app::HISTORY);
}

/// Tab completes the filter word before the cursor: to the one word it can
/// be (and a space), or to what the words it can be share (listed beside
/// the bar); values after an operator are left alone.
#[test]
fn tab_completes_filter_words() {
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('/'));
    let bar = |app: &App| {
        let b = app.bar.as_ref().expect("bar");
        (b.text.clone(), b.choices.clone())
    };
    keys(&mut app, "lon");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app).0, "long");
    let choices = bar(&app).1.expect("choices");
    assert_eq!(choices, "long_poll longpoll");
    keys(&mut app, "p");
    assert_eq!(bar(&app), ("longp".into(), None));
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app), ("longpoll ".into(), None));
    keys(&mut app, "and PRODU");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app).0, "longpoll and Produce ");
    // After an operator: a value, not completed.
    keys(&mut app, "or error=NOT_L");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app).0, "longpoll and Produce or error=NOT_L");
    // Nothing starts so: nothing changes.
    ctrl(&mut app, 'u');
    keys(&mut app, "zzz");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app), ("zzz".into(), None));
    // In the middle of the text, the word before the cursor.
    ctrl(&mut app, 'u');
    keys(&mut app, "thrott and fetch");
    for _ in 0.." and fetch".len() {
        key(&mut app, KeyCode::Left);
    }
    key(&mut app, KeyCode::Tab);
    let b = app.bar.as_ref().expect("bar");
    assert_eq!(b.text, "throttle and fetch");
    assert_eq!(b.choices.as_deref(), Some("throttle throttled"));
    assert_eq!(b.cursor, 8);
    // A field path, a name at a time: a body, then its fields.
    ctrl(&mut app, 'u');
    ctrl(&mut app, 'k');
    keys(&mut app, "ProduceReq");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app), ("ProduceRequest.".into(), None));
    keys(&mut app, "top");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app).0, "ProduceRequest.TopicData.");
    keys(&mut app, "PartitionData.i");
    key(&mut app, KeyCode::Tab);
    assert_eq!(bar(&app).0, "ProduceRequest.TopicData.PartitionData.Index ");
    keys(&mut app, "= 3");
    assert_eq!(app.bar.as_ref().and_then(|b| b.error.clone()), None);
}

#[test]
fn export_writes_the_tree_the_bytes_and_a_records_key_and_value() {
    let mut app = app_with(A2, 120, 40);
    // A Produce request of codec-gzip: its records are in a decompressed source.
    select_first(&mut app, |d| {
        d.decoded.kind == Kind::Request
            && d.decoded.api_key == Some(ApiKey::PRODUCE.0)
            && d.decoded.sources.iter().any(|s| s.name.contains("gzip"))
    });
    key(&mut app, KeyCode::Char('e'));
    while app.focus != Pane::Tree {
        key(&mut app, KeyCode::Tab);
    }
    key(&mut app, KeyCode::Char('g'));
    // At the top of the tree no record holds the cursor.
    let e = app.export("r.key").expect_err("no record");
    assert!(e.contains("put the tree's cursor on a record"), "{e}");
    tree_to(&mut app, "timestampDelta");
    let (k, what) = app.export("r.key").expect("key");
    assert_eq!(what, "the record's key");
    let (v, _) = app.export("R.VALUE").expect("value");
    // What captures/codecs.py wrote: key-(seq % 5), a JSON value naming the codec.
    let v: serde_json::Value = serde_json::from_slice(&v).expect("the value is the JSON produced");
    assert_eq!(v["codec"], "gzip");
    let seq = v["seq"].as_u64().expect("seq");
    assert_eq!(
        String::from_utf8(k).expect("utf-8"),
        format!("key-{}", seq % 5)
    );
    let text = format!("the quick brown fox jumps over the lazy dog {seq} ").repeat(4);
    assert_eq!(v["text"], text.as_str());
    // The message's bytes: its size prefix counts the rest.
    let (bin, _) = app.export("m.bin").expect("bin");
    let size = bin
        .get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    assert_eq!(size.map(|n| n as usize + 4), Some(bin.len()));
    // The hex dump reads back as those bytes, 16 a line, offsets counting them.
    let (hex, _) = app.export("m.hex").expect("hex");
    let hex = String::from_utf8(hex).expect("text");
    let mut back = Vec::new();
    for (i, line) in hex.lines().enumerate() {
        let (offset, rest) = line.split_once(' ').expect("offset");
        assert_eq!(usize::from_str_radix(offset, 16), Ok(i * 16), "{line}");
        let (cells, ascii) = rest.split_once("  |").expect("ascii column");
        let row: Vec<u8> = cells
            .split_whitespace()
            .map(|h| u8::from_str_radix(h, 16).expect("a hex byte"))
            .collect();
        assert_eq!(ascii.chars().count(), row.len() + 1, "{line}");
        back.extend(row);
    }
    assert_eq!(back, bin);
    // The tree as JSON (`print -V`'s `fields`) and as the pane's text.
    let (json, _) = app.export("m.json").expect("json");
    let j: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
    assert_eq!(
        (j["name"].as_str(), j["length"].as_u64()),
        (Some("ProduceRequest"), Some(bin.len() as u64))
    );
    let (txt, _) = app.export("m.txt").expect("txt");
    let root = &app.detail.as_ref().expect("detail").decoded.root;
    assert_eq!(txt, kafkashark::kafka::tree::render_text(root).into_bytes());
    let e = app.export("m.pdf").expect_err("unknown");
    assert!(e.contains(".txt (tree)"), "{e}");
    // The bar: `x` suggests a name, Enter hands the bytes to the shell.
    key(&mut app, KeyCode::Char('x'));
    let frame = app.detail.as_ref().expect("detail").raw.last_frame;
    let want = format!("a2-confluent-compression-codecs-frame{frame}.txt");
    assert_eq!(
        app.bar
            .as_ref()
            .map(|b| (b.kind == super::app::BarKind::Export, b.text.as_str())),
        Some((true, want.as_str()))
    );
    match key(&mut app, KeyCode::Enter).as_slice() {
        [Effect::Export(path, bytes)] => {
            assert_eq!(path, &std::path::PathBuf::from(&want));
            assert_eq!(bytes, &txt);
        }
        other => panic!("{other:?}"),
    }
    assert!(app.bar.is_none());
}

/// A filter that reads fields decodes the listed messages' trees: a1's
/// Produce requests naming partition 2 in their body, each with its
/// response (tested through its request's tree), and the same when the
/// messages arrive in batches after the filter.
#[test]
fn a_field_path_filter_reads_each_messages_tree() {
    use kafkashark::kafka::DecodeOptions;
    let all = entries(A1);
    // Read the trees directly: TopicData[*].PartitionData[*].Index.
    let opts = DecodeOptions::default();
    let names_2 = |e: &super::app::Entry| {
        let d = super::app::decode_entry(e, &opts);
        let body = d.root.child("ProduceRequest")?.child("TopicData")?;
        let hit = (body.children.iter())
            .filter_map(|t| t.child("PartitionData"))
            .flat_map(|p| p.children.iter())
            .filter_map(|p| p.child("Index"))
            .any(|i| i.value == kafkashark::kafka::tree::Value::Int(2));
        Some(hit)
    };
    let requests: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].info.kind == Kind::Request && names_2(&all[i]) == Some(true))
        .collect();
    assert!(!requests.is_empty());
    // The responses name their requests.
    let answers = (0..all.len()).filter(|&i| {
        all[i].info.kind == Kind::Response
            && all[i]
                .info
                .peer
                .is_some_and(|p| requests.contains(&(p as usize)))
    });
    let mut want: Vec<u32> = requests
        .iter()
        .copied()
        .chain(answers)
        .map(|i| i as u32)
        .collect();
    want.sort_unstable();
    assert_eq!(want.len(), 2 * requests.len());
    let filter = "ProduceRequest.TopicData.PartitionData.Index=2";
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, filter);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view, want);
    let mut batched = App::new(
        Config {
            title: "a1".into(),
            kind: SourceKind::File,
            color: false,
        },
        (120, 40),
    );
    key(&mut batched, KeyCode::Char('/'));
    keys(&mut batched, filter);
    key(&mut batched, KeyCode::Enter);
    for chunk in all.chunks(7) {
        batched.update(Msg::Loaded(chunk.to_vec()));
    }
    assert_eq!(batched.view, want);
}

/// `C` edits the list's columns: the bar shows them, a name it does not
/// know is marked and not applied, Tab completes a name, Enter shows them
/// and marks them to be kept.
#[test]
fn the_columns_bar_edits_completes_and_applies() {
    use super::app::BarKind;
    use super::columns::{self, Col};
    let mut app = app_with(A1, 120, 40);
    key(&mut app, KeyCode::Char('C'));
    let bar = app.bar.clone().expect("bar");
    assert_eq!(bar.kind, BarKind::Columns);
    assert_eq!(bar.text, columns::text(&columns::DEFAULT));
    ctrl(&mut app, 'u');
    keys(&mut app, "no,tiem");
    let err = app
        .bar
        .as_ref()
        .and_then(|b| b.error.clone())
        .expect("error");
    assert_eq!(err.0, 3);
    key(&mut app, KeyCode::Enter);
    assert!(app
        .notice
        .as_deref()
        .is_some_and(|n| n.contains("columns not changed")));
    assert_eq!(app.columns, columns::DEFAULT);
    ctrl(&mut app, 'w');
    keys(&mut app, "no,cl");
    key(&mut app, KeyCode::Tab);
    let bar = app.bar.clone().expect("bar");
    assert_eq!(
        (bar.text.as_str(), bar.choices.as_deref()),
        ("no,client", Some("client client_id"))
    );
    keys(&mut app, "_");
    key(&mut app, KeyCode::Tab);
    assert_eq!(
        app.bar.as_ref().map(|b| b.text.clone()).as_deref(),
        Some("no,client_id,")
    );
    keys(&mut app, "api");
    key(&mut app, KeyCode::Enter);
    assert!(app.bar.is_none());
    assert_eq!(app.columns, [Col::No, Col::ClientId, Col::Api]);
    assert!(!app.columns_saved);
}
