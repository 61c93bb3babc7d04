//! Render snapshots: the UI drawn into ratatui's `TestBackend` at 80x24,
//! 120x40, 160x45 and 200x50, kept as text in `snapshots/`. Cells drawn in reverse video (the
//! selection and the selected field's bytes) are listed under the screen.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::schema::ApiKey;
use kafkashark::kafka::DecodeOptions;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Modifier;
use ratatui::Terminal;

use super::app::{decode_entry, App, Config, Msg, Pane, SourceKind};
use super::testutil::{app_with, entries, message_app};
use super::ui;
use crate::filter::Facts;

const A1: &str = "captures/a1-kcat-produce-consume-group.pcap";
const SEED: &str = "captures/messages/produce-v12-request-minimal.hex";
const SIZES: [(u16, u16); 4] = [(120, 40), (80, 24), (160, 45), (200, 50)];

fn key(app: &mut App, code: KeyCode) {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn keys(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, KeyCode::Char(c));
    }
}

pub fn draw(app: &App) -> Buffer {
    let (w, h) = app.size;
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| ui::render(f, app)).expect("draw");
    t.backend().buffer().clone()
}

/// The screen as text, one line per row, trailing spaces trimmed.
pub fn screen_text(b: &Buffer) -> String {
    let mut s = String::new();
    for y in 0..b.area.height {
        let mut line = String::new();
        for x in 0..b.area.width {
            line.push_str(b[(x, y)].symbol());
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// The screen, then the runs of reverse-video cells per row.
fn snapshot_text(app: &App) -> String {
    let b = draw(app);
    let mut s = screen_text(&b);
    s.push_str("--- reversed cells (row: columns) ---\n");
    for y in 0..b.area.height {
        let mut runs: Vec<(u16, u16)> = Vec::new();
        for x in 0..b.area.width {
            if b[(x, y)].modifier.contains(Modifier::REVERSED) {
                match runs.last_mut() {
                    Some((_, e)) if *e + 1 == x => *e = x,
                    _ => runs.push((x, x)),
                }
            }
        }
        if !runs.is_empty() {
            let r: Vec<String> = runs.iter().map(|(a, e)| format!("{a}-{e}")).collect();
            s.push_str(&format!("{y:2}: {}\n", r.join(" ")));
        }
    }
    s
}

fn tree_to(app: &mut App, name: &str) {
    while app.focus != Pane::Tree {
        key(app, KeyCode::Tab);
    }
    key(app, KeyCode::Char('g'));
    for _ in 0..app.tree.rows.len() {
        if app.selected_node().is_some_and(|n| n.name == name) {
            return;
        }
        key(app, KeyCode::Down);
    }
    panic!("no field {name}");
}

fn select_where(app: &mut App, f: impl Fn(&super::index::IndexEntry) -> bool) {
    let pos = app
        .view
        .iter()
        .position(|&i| f(&app.entries.at(i as usize)))
        .expect("a matching message");
    app.select_pos(pos);
}

#[test]
fn message_list() {
    for (w, h) in SIZES {
        let app = app_with(A1, w, h);
        insta::assert_snapshot!(format!("list_{w}x{h}"), snapshot_text(&app));
    }
}

#[test]
fn selected_field_with_its_bytes_highlighted() {
    for (w, h) in SIZES {
        let mut app = app_with(A1, w, h);
        select_where(&mut app, |e| {
            e.info().api_key == Some(ApiKey::PRODUCE) && e.info().kind == Kind::Request
        });
        tree_to(&mut app, "client_id");
        let text = snapshot_text(&app);
        let (s, e) = app.highlight().expect("highlight");
        assert!(e > s);
        insta::assert_snapshot!(format!("field_bytes_{w}x{h}"), text);
    }
}

#[test]
fn malformed_message() {
    for (w, h) in SIZES {
        let mut es = entries(A1);
        es.truncate(40);
        // A real Produce request cut 20 bytes short (the size prefix still claims them all).
        let mut bad = es
            .iter()
            .find(|e| e.info.api_key == Some(ApiKey::PRODUCE) && e.info.kind == Kind::Request)
            .expect("produce")
            .clone();
        let n = bad.raw.bytes.len() - 20;
        bad.raw.bytes = bad.raw.bytes.slice(..n);
        bad.info.paired = false;
        bad.info.peer = None;
        bad.info.frame = 9999;
        bad.info.decode_error = decode_entry(&bad, &DecodeOptions::default())
            .error
            .map(|e| e.to_string());
        assert!(bad.info.decode_error.is_some());
        es.push(bad);
        let mut app = App::new(
            Config {
                title: "malformed".into(),
                kind: SourceKind::File,
                color: true,
            },
            (w, h),
        );
        app.update(Msg::Origin(es[0].info.first_ts));
        app.update(Msg::Loaded(es));
        app.update(Msg::LoadDone);
        key(&mut app, KeyCode::Char('G'));
        key(&mut app, KeyCode::Char('e'));
        key(&mut app, KeyCode::Tab);
        key(&mut app, KeyCode::Char('G'));
        assert!(app.selected_node().is_some_and(|n| n.error.is_some()));
        insta::assert_snapshot!(format!("malformed_{w}x{h}"), snapshot_text(&app));
    }
}

#[test]
fn response_paired_to_its_request() {
    for (w, h) in SIZES {
        let mut app = app_with(A1, w, h);
        select_where(&mut app, |e| {
            e.info().api_key == Some(ApiKey::PRODUCE)
                && e.info().kind == Kind::Request
                && e.info().paired
        });
        key(&mut app, KeyCode::Char('p'));
        assert_eq!(
            app.selected_entry().map(|e| e.info().kind),
            Some(Kind::Response)
        );
        insta::assert_snapshot!(format!("paired_response_{w}x{h}"), snapshot_text(&app));
    }
}

/// The detail title takes the latency apart: a1's FindCoordinator (frame
/// 243) waited 502.944 ms behind a long-poll Fetch and took 0.225 ms itself
/// (tests/wire_truth.rs checks these against an independent reading);
/// its request shows the same; the long-poll before it says so.
#[test]
fn detail_title_shows_the_latency_parts() {
    for (w, h) in SIZES {
        let mut app = app_with(A1, w, h);
        select_where(&mut app, |e| e.frame() == 243);
        let text = snapshot_text(&app);
        let parts = "latency 503.2 ms = hol 502.9 + service 0.225 ms";
        // From 160 columns the tree shares the width with the bytes: at
        // 160 the title keeps the wait behind the long-poll, not the rest.
        match w {
            160 => assert!(text.contains(&parts[..28]), "{text}"),
            120.. => assert!(text.contains(parts), "{text}"),
            _ => {}
        }
        insta::assert_snapshot!(format!("latency_parts_{w}x{h}"), text);
        // Its request (frame 234) shows its response's timing.
        key(&mut app, KeyCode::Char('p'));
        assert_eq!(app.selected_entry().map(|e| e.frame()), Some(234));
        let title = screen_text(&draw(&app));
        assert!(
            title.contains("FindCoordinator v2 Request │ latency 503.2 ms = hol"),
            "{title}"
        );
    }
    let mut app = app_with(A1, 120, 40);
    select_where(&mut app, |e| e.frame() == 241);
    let title = screen_text(&draw(&app));
    assert!(
        title.contains("Fetch v16 Response │ latency 503.0 ms [long-poll] rtt 0.0"),
        "{title}"
    );
    // A response with no wait behind another shows its latency alone, and
    // the round trip of its connection's handshake (a1's are 13–31 µs:
    // captures/a1-….wire.tsv).
    select_where(&mut app, |e| e.frame() == 78);
    let title = screen_text(&draw(&app));
    assert!(
        title.contains("Produce v10 Response │ latency 0.376 ms rtt 0.0"),
        "{title}"
    );
}

/// A connection read from two capture points (`captures/two-points`): a
/// response's title adds the latency the other point saw.
#[test]
fn detail_title_shows_the_other_capture_points_latency() {
    let files = [
        "captures/two-points/e1-client-side.pcap",
        "captures/two-points/e1-broker-side.pcap",
    ];
    let es = crate::tui::testutil::merged_entries(&files);
    let Some(at) = es
        .iter()
        .position(|e| e.info.also.as_ref().is_some_and(|a| a.latency_ns.is_some()))
    else {
        panic!("a response seen at both points")
    };
    let (frame, l) = (
        es[at].info.frame,
        es[at].info.also.as_ref().and_then(|a| a.latency_ns),
    );
    let mut app = crate::tui::testutil::app_of(files[0], es, 120, 40);
    select_where(&mut app, |e| e.frame() == frame);
    let title = screen_text(&draw(&app));
    let want = format!(
        "│ other point {} ms",
        kafkashark::stats::text::ms(l.unwrap_or(0) as f64 / 1e6)
    );
    assert!(title.contains(&want), "{want} in {title}");
}

/// A throttled response says so in the title (b4's proxy throttles).
#[test]
fn detail_title_shows_the_throttle() {
    let mut app = app_with("captures/b4-throttle-errors-proxy.pcap", 200, 40);
    select_where(&mut app, |e| {
        e.info().throttle_time_ms.is_some_and(|t| t > 0) && e.info().latency_ns.is_some()
    });
    let i = app.selected_entry().expect("selected").info();
    let want = format!("throttle {} ms", i.throttle_time_ms.unwrap_or(0));
    let title = screen_text(&draw(&app));
    assert!(title.contains(&want), "{want}: {title}");
}

/// The help lists every key; on a terminal too short for it, it scrolls
/// (and says where it is) until its last line shows, and any other key
/// closes it.
#[test]
fn help_screen() {
    for (w, h) in SIZES.into_iter().chain([(70, 14)]) {
        let mut app = app_with(A1, w, h);
        key(&mut app, KeyCode::Char('?'));
        let text = snapshot_text(&app);
        insta::assert_snapshot!(format!("help_{w}x{h}"), text);
        let fits = usize::from(h) >= ui::KEYS.len() + 4;
        assert_eq!(text.contains("PgDn scroll"), !fits, "{w}x{h}");
        let mut seen = text.clone();
        for _ in 0..ui::KEYS.len() {
            key(&mut app, KeyCode::Char('j'));
            if !app.help {
                break;
            }
            seen.push_str(&screen_text(&draw(&app)));
        }
        for (k, _) in ui::KEYS {
            assert!(seen.contains(k), "{k} missing at {w}x{h}");
        }
        assert!(seen.contains("Bytes are coloured"), "{w}x{h}");
        assert_eq!(fits, h > 14);
        if !fits {
            // Scrolled to the end, the help stays open; a page up, then any
            // other key closes it.
            assert!(app.help);
            let end = screen_text(&draw(&app));
            assert!(end.contains("Bytes are coloured"), "{end}");
            insta::assert_snapshot!(format!("help_end_{w}x{h}"), end);
            let last = app.help_scroll;
            key(&mut app, KeyCode::Char('k'));
            assert!(app.help && app.help_scroll == last - 1);
            key(&mut app, KeyCode::PageUp);
            assert_eq!(app.help_scroll, 0);
            key(&mut app, KeyCode::Char('G'));
            assert_eq!(app.help_scroll, last);
        }
        key(&mut app, KeyCode::Esc);
        assert!(!app.help);
    }
}

#[test]
fn bad_filter() {
    for (w, h) in SIZES {
        let mut app = app_with(A1, w, h);
        key(&mut app, KeyCode::Char('/'));
        keys(&mut app, "produce and latency>");
        let text = snapshot_text(&app);
        assert!(text.contains("✗ col 20"), "{text}");
        insta::assert_snapshot!(format!("bad_filter_{w}x{h}"), text);
    }
}

/// Two captures read together: the list shows each message's capture by
/// its file's name, and `capture` in the filter picks one capture's.
#[test]
fn several_captures_are_shown_and_filtered() {
    use super::columns::Col;
    const A3: &str = "captures/a3-kafka-python-admin.pcap";
    let es = super::testutil::merged_entries(&[A1, A3]);
    let from3 = es.iter().filter(|e| e.info.capture == 1).count();
    assert_eq!(from3, entries(A3).len());
    let mut app = super::testutil::app_of(A1, Vec::new(), 160, 45);
    app.captures = vec![super::testutil::repo(A1), super::testutil::repo(A3)];
    app.set_columns(vec![
        Col::No,
        Col::Stream,
        Col::Capture,
        Col::Api,
        Col::Kind,
    ]);
    app.update(Msg::Loaded(es));
    let text = screen_text(&draw(&app));
    // a3 was recorded first: its messages open the list.
    assert!(text.contains("a3-kafka-python-admin.pcap"), "{text}");
    assert_eq!(
        app.col_want[Col::Capture as usize],
        A1.len() - "captures/".len()
    );
    key(&mut app, KeyCode::Char('/'));
    keys(&mut app, "capture~python");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view.len(), from3);
    key(&mut app, KeyCode::Char('/'));
    for _ in 0.."capture~python".len() {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "capture~kcat");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.view.len(), app.entries.len() - from3);
    let text = screen_text(&draw(&app));
    assert!(
        text.contains("a1-kcat-produce-consume-group.pcap"),
        "{text}"
    );
    assert!(!text.contains("a3-kafka"), "{text}");
}

#[test]
fn no_color_still_marks_the_selection() {
    let mut app = app_with(A1, 120, 40);
    app.cfg.color = false;
    let b = draw(&app);
    for y in 0..b.area.height {
        for x in 0..b.area.width {
            let c = &b[(x, y)];
            assert_eq!(c.fg, ratatui::style::Color::Reset, "{x},{y}");
            assert_eq!(c.bg, ratatui::style::Color::Reset, "{x},{y}");
        }
    }
    assert!(snapshot_text(&app).contains(" 2: 1-118"));
}

/// The seed message: its whole tree and its 94 bytes in six rows of 16 with
/// the seed's legend.
#[test]
fn seed_message() {
    let mut app = message_app(SEED, 140, 60);
    key(&mut app, KeyCode::Char('e'));
    let text = snapshot_text(&app);
    let hex_rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.len() > 6 && l.starts_with('│') && {
                let t = l.trim_start_matches('│');
                t.len() > 6 && t[..4].chars().all(|c| c.is_ascii_hexdigit()) && &t[4..6] == "  "
            }
        })
        .collect();
    assert_eq!(hex_rows.len(), 6, "{text}");
    for (i, r) in hex_rows.iter().enumerate() {
        assert!(r
            .trim_start_matches('│')
            .starts_with(&format!("{:04x}", i * 16)));
    }
    assert!(hex_rows[0].contains("00 00 00 5a 00 00 00 0c  00 00 00 00 00 00 00 01"));
    assert!(
        hex_rows[5].contains("ff ff ff ff ff ff ff 00  00 00 00 00 00 00"),
        "{}",
        hex_rows[5]
    );
    assert!(text.contains(
        "■ frame  ■ rpc header  ■ request body  ■ RecordBatch  ■ Record  ■ response body  ■ tagged_fields"
    ));
    assert!(text.contains("bytes: message (94 bytes)"));
    // Every node of the seed's tree, in order, with the seed's guides.
    let seed =
        kafkashark::kafka::tree::render_text(&app.detail.as_ref().expect("decoded").decoded.root);
    let mut at = 0;
    for line in seed.lines() {
        let name = line.split("  ").next().unwrap_or("").trim_end();
        let found = text[at..]
            .find(name)
            .unwrap_or_else(|| panic!("{name} missing"));
        at += found + name.len();
    }
    assert_eq!(seed.lines().count(), 40);
    insta::assert_snapshot!("seed_140x60", text);
    // And the default view at 120x40: two levels open.
    let app = message_app(SEED, 120, 40);
    insta::assert_snapshot!("seed_120x40", snapshot_text(&app));
}

#[test]
fn docs_list_every_key() {
    let doc = std::fs::read_to_string(super::testutil::repo("docs/tui.md")).expect("docs/tui.md");
    for (k, _) in ui::KEYS {
        for part in k.split(", ") {
            let part = part.trim();
            let shown = match part {
                "↑ ↓" => "`↑` `↓`".to_string(),
                "← →" => "`←` `→`".to_string(),
                "j k" => "`j` `k`".to_string(),
                "h l" => "`h` `l`".to_string(),
                p if p.starts_with("mouse") => p.to_string(),
                p => format!("`{p}`"),
            };
            assert!(doc.contains(&shown), "docs/tui.md lacks {shown}");
        }
    }
    // The screens in docs/screens are the current snapshots.
    for name in [
        "list_120x40",
        "paired_response_120x40",
        "seed_140x60",
        "stats_latency_120x40",
        "stats_errors_120x40",
        "stats_clients_120x40",
        "stats_groups_80x24",
        "stats_throttled_120x40",
        "stats_lag_b6_120x40",
        "stats_delivery_b6_120x40",
    ] {
        let screen =
            std::fs::read_to_string(super::testutil::repo(&format!("docs/screens/{name}.txt")))
                .expect("screen");
        let snap = std::fs::read_to_string(format!(
            "{}/src/tui/snapshots/kafkashark__tui__tests_render__{name}.snap",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("snapshot");
        assert!(snap.contains(&screen), "docs/screens/{name}.txt is stale");
    }
}

const B2: &str = "captures/b2-errors-and-acks0.pcap";

/// The stats view of b2 (errors, groups, acks=0 clients), every section, both sizes.
#[test]
fn stats_view() {
    for (w, h) in SIZES {
        let mut app = app_with(B2, w, h);
        key(&mut app, KeyCode::Char('S'));
        // The Fetch row: its histogram has bars at 100 ms, 300 ms and 1 s.
        key(&mut app, KeyCode::Down);
        for (i, t) in super::stats_view::StatsTab::ALL.iter().enumerate() {
            keys(&mut app, &(i + 1).to_string());
            if *t == super::stats_view::StatsTab::Errors {
                keys(&mut app, "jj");
            }
            let text = snapshot_text(&app);
            assert!(
                text.contains(t.title()) || text.contains(t.short()),
                "{text}"
            );
            let empty = app
                .stats_view
                .as_ref()
                .is_some_and(|v| v.data.rows(*t).is_empty());
            assert!(text.contains("Enter → ") || empty, "{text}");
            let name = format!("stats_{}_{w}x{h}", t.title().to_lowercase());
            insta::assert_snapshot!(name, text);
        }
    }
}

/// The Lag section (a sparkline per row, the selected row's series below)
/// and the Delivery section, on a hand-made report, both sizes.
#[test]
fn stats_lag_and_delivery_hand_made() {
    for (w, h) in SIZES {
        let mut app = app_with(A1, w, h);
        key(&mut app, KeyCode::Char('S'));
        super::tests_stats::hand_made(&mut app);
        keys(&mut app, "6");
        let text = snapshot_text(&app);
        assert!(
            text.contains("\"rdkafka\"") && text.contains("kcat-demo"),
            "{text}"
        );
        // The growing partition's sparkline rises to a full block.
        let row = text.lines().find(|l| l.contains("+9.5")).expect("row 0");
        assert!(row.contains('█') && row.contains('▁'), "{row}");
        insta::assert_snapshot!(format!("stats_lag_hand_made_{w}x{h}"), text);
        keys(&mut app, "7j");
        let text = snapshot_text(&app);
        assert!(text.contains("LogAppendTime"), "{text}");
        insta::assert_snapshot!(format!("stats_delivery_hand_made_{w}x{h}"), text);
    }
}

/// b6's consumer lag: the slow group's partitions falling behind, the fast
/// group's at 0; and its record age and delivery.
#[test]
fn stats_lag_b6() {
    for (w, h) in SIZES {
        let mut app = app_with("captures/b6-consumer-lag.pcap", w, h);
        key(&mut app, KeyCode::Char('S'));
        keys(&mut app, "6G");
        let text = snapshot_text(&app);
        assert!(
            text.contains("slow-consumer") && text.contains("lag-topic"),
            "{text}"
        );
        // One scale: the fast group's rows draw nothing, the most lagging reaches the top.
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("┃\"")).collect();
        let bars = |l: &str| l.chars().filter(|c| ('▁'..='█').contains(c)).count();
        assert_eq!(rows.len(), 6, "{text}");
        assert!(rows
            .iter()
            .filter(|l| l.contains("fast-consumer"))
            .all(|l| bars(l) == 0));
        assert!(rows
            .iter()
            .any(|l| l.contains("slow-consumer") && l.contains('█')));
        if w >= 120 {
            let g = app
                .stats_view
                .as_ref()
                .map(|v| v.data.report.lag.groups.clone());
            let slow = g
                .iter()
                .flatten()
                .find(|g| g.group == "slow-group")
                .expect("group");
            let sums = format!(
                "Σ lag {}, Σ committed lag {}",
                slow.fetch_lag, slow.committed_lag
            );
            assert!(
                slow.committed_lag >= 300 && text.contains(&sums),
                "{sums}: {text}"
            );
        }
        insta::assert_snapshot!(format!("stats_lag_b6_{w}x{h}"), text);
        keys(&mut app, "7");
        let text = snapshot_text(&app);
        assert!(text.contains("lag-producer"), "{text}");
        insta::assert_snapshot!(format!("stats_delivery_b6_{w}x{h}"), text);
    }
}

/// Throttling (put on a2's Produce and Fetch responses): the sparkline and the
/// per-client rows; and the note when the decode bound was hit.
#[test]
fn stats_view_throttle_and_truncated() {
    let mut es = entries("captures/a2-confluent-compression-codecs.pcap");
    for (n, e) in es.iter_mut().enumerate() {
        if e.info.kind == Kind::Response
            && matches!(e.info.api_key, Some(ApiKey::PRODUCE | ApiKey::FETCH))
        {
            e.info.throttle_time_ms = Some(10 * (n as i32 % 7 + 1));
        }
    }
    let mut app = App::new(
        Config {
            title: "a2-throttled".into(),
            kind: SourceKind::File,
            color: true,
        },
        (120, 40),
    );
    app.update(Msg::Origin(es[0].info.first_ts));
    app.update(Msg::Loaded(es));
    app.update(Msg::LoadDone);
    app.stats_limit = 5;
    key(&mut app, KeyCode::Char('S'));
    key(&mut app, KeyCode::Char('2'));
    let text = snapshot_text(&app);
    assert!(text.contains("TRUNCATED: 5 of"), "{text}");
    assert!(text.contains("throttle over time"), "{text}");
    insta::assert_snapshot!("stats_throttled_120x40", text);
}

/// librdkafka's Metadata v12 request with 3 bytes after its body: the list
/// marks it with the warning (not as malformed), in the list's colours of a
/// clean message, and the bytes show as the tree's last node.
#[test]
fn a_warning_shows_in_the_list_and_the_tree() {
    let app = app_with(
        "captures/a5-ipv6-confluent-admin-produce-consume.pcap",
        200,
        240,
    );
    let screen = screen_text(&draw(&app));
    let warned: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("[warning: 3 bytes"))
        .collect();
    assert!(!warned.is_empty(), "{screen}");
    assert!(warned
        .iter()
        .all(|l| l.contains("Metadata") && !l.contains("malformed")));
    let e = entries("captures/a5-ipv6-confluent-admin-produce-consume.pcap")
        .into_iter()
        .find(|e| e.info.decode_warning.is_some())
        .expect("a warned entry");
    let d = decode_entry(&e, &DecodeOptions::default());
    assert!(d.error.is_none());
    let last = d.root.children.last().expect("children");
    assert_eq!((last.name.as_ref(), last.length), ("trailing bytes", 3));
}

/// At every width from 160 columns (tree and bytes side by side) to 199,
/// the names of a record batch's fields, seven levels deep, show whole
/// (their guides at two cells a level where four would cut them).
#[test]
fn deep_field_names_show_whole_where_the_panes_sit_side_by_side() {
    for w in 160..200u16 {
        let mut app = app_with(A1, w, 45);
        select_where(&mut app, |e| {
            e.info().api_key == Some(ApiKey::PRODUCE) && e.info().kind == Kind::Request
        });
        key(&mut app, KeyCode::Char('e'));
        tree_to(&mut app, "baseTimestamp");
        let text = screen_text(&draw(&app));
        for name in [
            "partitionLeaderEpoch",
            "baseTimestamp",
            "lastOffsetDelta",
            "baseOffset",
        ] {
            let whole = [format!("+-- {name} "), format!("+ {name} ")];
            assert!(
                whole.iter().any(|t| text.contains(t.as_str())),
                "{name} cut at {w} columns:\n{text}"
            );
        }
    }
}

/// The tree's columns: names first, the type and the value keep a few cells.
#[test]
fn tree_columns_give_names_room_first() {
    // All fits: everyone gets what they want.
    assert_eq!(ui::tree_columns(100, 30, 10, 20), (30, 10, 60));
    // Deep names: they take all but 8 + 12 cells.
    assert_eq!(ui::tree_columns(68, 55, 20, 40), (48, 8, 12));
    // A narrow pane keeps at least 10 for the name.
    assert_eq!(ui::tree_columns(15, 40, 20, 40), (10, 5, 0));
    // Nothing to show.
    assert_eq!(ui::tree_columns(0, 10, 10, 10), (0, 0, 0));
    // Guides at two cells a level.
    assert_eq!(ui::compact_guides("|   |       +-- "), "| |   + ");
    assert_eq!(ui::compact_guides(""), "");
}

/// Chosen columns in their order, each as wide as its widest value: a1's
/// Produce request of frame 77 (kcat-demo, partition 2, five records, as
/// its script sent them), b2's errors in their own column (and not again
/// in the notes), addresses and error names whole on a wide terminal.
#[test]
fn chosen_columns_show_their_values_whole() {
    let mut app = app_with(A1, 200, 50);
    app.set_columns(
        super::columns::parse("no,api,client_id,topics,partitions,records,route,notes").unwrap(),
    );
    let text = screen_text(&draw(&app));
    let header = text.lines().nth(1).expect("header");
    let order: Vec<usize> = [
        "No.",
        "API",
        "Client id",
        "Topics",
        "Partitions",
        "Records",
        "From → To",
        "Notes",
    ]
    .iter()
    .map(|h| header.find(h).unwrap_or_else(|| panic!("{h} in {header}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{header}");
    select_where(&mut app, |e| e.info().frame == 77);
    let text = screen_text(&draw(&app));
    let row = text
        .lines()
        .find(|l| l.contains("┃ 77 "))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row
        .trim_matches(|c| c == '┃' || c == ' ')
        .split_whitespace()
        .collect();
    assert_eq!(
        &cells[..8],
        [
            "77",
            "Produce",
            "v10",
            "rdkafka",
            "kcat-demo",
            "2",
            "5",
            "127.0.0.1:35646"
        ],
        "{row}"
    );
    // No address is cut while the terminal has room.
    let rows = text.lines().filter(|l| l.starts_with('┃'));
    assert!(!rows.clone().any(|l| l.contains('…')), "{text}");
    assert!(rows.count() > 10);
    // b2: the errors column holds the names, the notes no longer do.
    let mut app = app_with("captures/b2-errors-and-acks0.pcap", 200, 50);
    app.set_columns(super::columns::parse("no,api,errors,notes").unwrap());
    let f = app.entries.len();
    let named = (0..f)
        .map(|i| app.entries.at(i).info())
        .find(|i| !i.error_codes.is_empty())
        .expect("an error");
    select_where(&mut app, |e| e.info().frame == named.frame);
    let text = screen_text(&draw(&app));
    let names = crate::print::error_names(&named.error_codes);
    let row = (text.lines())
        .find(|l| {
            l.contains(&format!(
                "┃{:>w$} ",
                named.frame,
                w = app.col_want[0].max(3)
            ))
        })
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(row.matches(&names).count(), 1, "{row}");
    // Narrow: the route goes first, `no` and `api` stay.
    let mut app = app_with(A1, 80, 24);
    app.set_columns(super::columns::parse("no,route,api,topics,notes").unwrap());
    let text = screen_text(&draw(&app));
    let header = text.lines().nth(1).expect("header");
    assert!(
        !header.contains("From → To") && header.contains("Topics"),
        "{header}"
    );
}

/// The widths measured as messages load (here again, once every column is
/// shown) are those of the widest cells of the list.
#[test]
fn loaded_widths_are_the_widest_cells() {
    use super::columns::Col;
    for cap in [A1, B2, "captures/b4-throttle-errors-proxy.pcap"] {
        let mut app = app_with(cap, 120, 40);
        // Measured anew for the columns shown, every one here.
        app.set_columns(super::columns::SPECS.iter().map(|s| s.col).collect());
        for c in [
            Col::No,
            Col::Stream,
            Col::Route,
            Col::Client,
            Col::Broker,
            Col::Api,
            Col::Corr,
            Col::Size,
            Col::Latency,
            Col::ClientId,
            Col::Topics,
            Col::Errors,
            Col::Throttle,
        ] {
            let widest = (0..app.entries.len())
                .map(|k| {
                    let e = app.entries.at(k);
                    ui::cell(&app, c, &e, &e.info(), None).chars().count()
                })
                .max()
                .unwrap_or(0);
            assert_eq!(app.col_want[c as usize], widest, "{cap}: {c:?}");
        }
    }
}
