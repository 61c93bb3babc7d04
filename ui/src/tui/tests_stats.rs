//! The stats view (`S`): state tests through `App::update` on real captures.
//! Each row's filter is applied with `Enter` and the list it leaves is checked
//! against an independent count from the entries (not through the filter).

use std::collections::{BTreeMap, BTreeSet};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::errors::error_code;
use kafkashark::kafka::schema::ApiKey;
use kafkashark::kafka::{DecodeOptions, Value};

use super::app::{decode_entry, App, Config, Effect, Msg, Pane, SourceKind};
use super::stats_view::{bucket_of, StatsTab};
use super::testutil::{app_with, entries};
use super::ui;
use kafkashark::stats::text::ms;

const A2: &str = "captures/a2-confluent-compression-codecs.pcap";
const B2: &str = "captures/b2-errors-and-acks0.pcap";

fn key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn click(app: &mut App, column: u16, row: u16) {
    app.update(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }));
}

/// Opens the stats view (when closed) on section `tab`, row `row`, with keys only.
fn stats_select(app: &mut App, tab: StatsTab, row: usize) {
    if app.stats_view.is_none() {
        key(app, KeyCode::Char('S'));
    }
    let digit = char::from(b'1' + tab.index() as u8);
    key(app, KeyCode::Char(digit));
    key(app, KeyCode::Char('g'));
    for _ in 0..row {
        key(app, KeyCode::Char('j'));
    }
    let v = app.stats_view.as_ref().expect("stats view open");
    assert_eq!(v.tab, tab);
    assert_eq!(v.sel[tab.index()], row);
}

/// The cells of every row of a section.
fn cells(app: &mut App, tab: StatsTab) -> Vec<Vec<String>> {
    if app.stats_view.is_none() {
        key(app, KeyCode::Char('S'));
    }
    let v = app.stats_view.as_ref().expect("open");
    v.data.rows(tab).iter().map(|r| r.cells.clone()).collect()
}

/// Selects a row, presses Enter, checks the view closed and the filter is the row's.
fn enter_row(app: &mut App, tab: StatsTab, row: usize) -> String {
    stats_select(app, tab, row);
    let want = app
        .stats_view
        .as_ref()
        .and_then(|v| v.selected_row())
        .expect("row")
        .filter
        .clone();
    key(app, KeyCode::Enter);
    assert!(app.stats_view.is_none(), "Enter closes the stats view");
    assert_eq!(app.filter_text, want);
    assert!(app.filter.is_some());
    assert_eq!(app.focus, Pane::List);
    if let Some(&first) = app.view.first() {
        assert_eq!(app.selected, Some(first as usize));
    }
    want
}

fn shown(app: &App, kind: Kind) -> BTreeSet<usize> {
    app.view
        .iter()
        .copied()
        .map(|i| i as usize)
        .filter(|&i| app.entries.at(i).info().kind == kind)
        .collect()
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s}"))
}

/// Latency rows: the list shows every request and response of the row's api,
/// as many as the row counts; the max and the histogram agree with the entries.
fn check_latency_rows(capture: &str) {
    let mut app = app_with(capture, 120, 40);
    let rows = cells(&mut app, StatsTab::Latency);
    let keys: BTreeSet<i16> = app
        .entries
        .all()
        .into_iter()
        .filter_map(|e| e.info().api_key.map(|k| k.0))
        .collect();
    assert_eq!(rows.len(), keys.len());
    let apis: Vec<i16> = app
        .stats_view
        .as_ref()
        .map(|v| v.data.report.apis.iter().map(|a| a.api_key).collect())
        .unwrap_or_default();
    for (r, c) in rows.iter().enumerate() {
        let k = apis[r];
        // The histogram: every measured exchange in its log bucket.
        let lat: Vec<u64> = app
            .entries
            .all()
            .into_iter()
            .filter(|e| e.info().kind == Kind::Response && e.info().api_key == Some(ApiKey(k)))
            .filter_map(|e| e.info().latency_ns)
            .collect();
        let mut buckets = [0u64; 12];
        for &ns in &lat {
            buckets[bucket_of(ns)] += 1;
        }
        if app.stats_view.is_none() {
            key(&mut app, KeyCode::Char('S'));
        }
        let v = app.stats_view.as_ref().expect("open");
        if lat.is_empty() {
            assert!(!v.data.hist.contains_key(&k));
            assert_eq!(c[6], "-");
        } else {
            assert_eq!(v.data.hist[&k], buckets, "histogram of api {k}");
            let max = *lat.iter().max().expect("max") as f64 / 1e6;
            assert_eq!(c[6], ms(max), "max of api {k}");
        }
        let f = enter_row(&mut app, StatsTab::Latency, r);
        assert!(f.starts_with("api="), "{f}");
        let of = |kind: Kind| -> BTreeSet<usize> {
            app.entries
                .all()
                .into_iter()
                .enumerate()
                .filter(|(_, e)| e.info().kind == kind && e.info().api_key == Some(ApiKey(k)))
                .map(|(i, _)| i)
                .collect()
        };
        let (req, resp) = (of(Kind::Request), of(Kind::Response));
        assert_eq!(shown(&app, Kind::Request), req, "{f}");
        assert_eq!(shown(&app, Kind::Response), resp, "{f}");
        assert_eq!(req.len() as u64, num(&c[1]), "{f}: requests");
        assert_eq!(resp.len() as u64, num(&c[2]), "{f}: responses");
        assert_eq!(app.view.len(), req.len() + resp.len());
    }
}

#[test]
fn latency_rows_lead_to_their_api_b2() {
    check_latency_rows(B2);
}

#[test]
fn latency_rows_lead_to_their_api_a2() {
    check_latency_rows(A2);
    // a2 has no errors, no throttling and no groups: the sections say so and Enter does nothing.
    let mut app = app_with(A2, 120, 40);
    for t in [StatsTab::Throttle, StatsTab::Errors, StatsTab::Groups] {
        assert!(cells(&mut app, t).is_empty(), "{t:?}");
        key(&mut app, KeyCode::Char(char::from(b'1' + t.index() as u8)));
        key(&mut app, KeyCode::Enter);
        assert!(app.stats_view.is_some());
        assert!(app.filter_text.is_empty());
    }
    assert_eq!(cells(&mut app, StatsTab::Clients).len(), 6);
}

/// Error rows: the responses shown carry the row's error as many times as the
/// row counts, from its first to its last frame; the requests shown are theirs.
#[test]
fn error_rows_lead_to_the_responses_that_carry_them() {
    let mut app = app_with(B2, 120, 40);
    let rows = cells(&mut app, StatsTab::Errors);
    assert_eq!(rows.len(), 8);
    // Independent: every error occurrence in the entries is in exactly one row.
    let total: u64 = app
        .entries
        .all()
        .into_iter()
        .map(|e| e.info().error_codes.len() as u64)
        .sum();
    assert_eq!(rows.iter().map(|c| num(&c[4])).sum::<u64>(), total);
    for (r, c) in rows.iter().enumerate() {
        let f = enter_row(&mut app, StatsTab::Errors, r);
        let code = error_code(&c[0]).expect("known error");
        let resp = shown(&app, Kind::Response);
        assert!(!resp.is_empty(), "{f}");
        let mut n = 0u64;
        for &i in &resp {
            let e = &app.entries.at(i).info();
            assert_eq!(e.api_name(), Some(c[1].as_str()), "{f}");
            n += e.error_codes.iter().filter(|&&x| x == code).count() as u64;
        }
        assert_eq!(n, num(&c[4]), "{f}: count");
        let frames: Vec<u64> = resp
            .iter()
            .map(|&i| app.entries.at(i).info().frame)
            .collect();
        assert_eq!(frames.iter().min(), Some(&num(&c[5])), "{f}: first");
        assert_eq!(frames.iter().max(), Some(&num(&c[6])), "{f}: last");
        let peers: BTreeSet<usize> = resp
            .iter()
            .filter_map(|&i| app.entries.at(i).info().peer.map(|p| p as usize))
            .collect();
        assert_eq!(shown(&app, Kind::Request), peers, "{f}");
        // The filter bar opens on the row's expression, ready to edit.
        key(&mut app, KeyCode::Char('/'));
        assert_eq!(app.bar.as_ref().map(|b| b.text.clone()), Some(f.clone()));
        key(&mut app, KeyCode::Esc);
    }
    // The example of the brief: an error with its topic.
    let f = enter_row(&mut app, StatsTab::Errors, 2);
    assert_eq!(
        f,
        "error=UNKNOWN_TOPIC_OR_PARTITION and api=Metadata and topic=\"no-such-topic\""
    );
    let frames: Vec<u64> = app
        .view
        .iter()
        .map(|&i| app.entries.at(i as usize).info().frame)
        .collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[1], 29);
}

/// Client rows: the requests shown are exactly those with the row's client id,
/// as many as the row counts, and the responses are theirs.
#[test]
fn client_rows_lead_to_their_requests() {
    let mut app = app_with(B2, 120, 40);
    let rows = cells(&mut app, StatsTab::Clients);
    assert_eq!(rows.len(), 6);
    for (r, c) in rows.iter().enumerate() {
        let id = c[0].trim_matches('"').to_string();
        let f = enter_row(&mut app, StatsTab::Clients, r);
        assert_eq!(f, format!("client_id=\"{id}\""));
        let req: BTreeSet<usize> = app
            .entries
            .all()
            .into_iter()
            .enumerate()
            .filter(|(_, e)| {
                e.info().kind == Kind::Request && e.info().client_id.as_deref() == Some(id.as_str())
            })
            .map(|(i, _)| i)
            .collect();
        assert_eq!(shown(&app, Kind::Request), req, "{f}");
        assert_eq!(req.len() as u64, num(&c[3]), "{f}: requests");
        let resp: BTreeSet<usize> = req
            .iter()
            .filter_map(|&i| app.entries.at(i).info().peer.map(|p| p as usize))
            .collect();
        assert_eq!(shown(&app, Kind::Response), resp, "{f}");
        assert_eq!(resp.len() as u64, num(&c[4]), "{f}: responses");
    }
    // Software from ApiVersions v3+, and versions per api.
    assert_eq!(rows[1][1], "kafka-python 3.0.12");
    assert_eq!(rows[3][6].split(' ').nth(3), Some("v12,17"));
}

/// Group rows: the requests shown are the group's (their GroupId, decoded
/// independently), as many of each api as the row counts.
#[test]
fn group_rows_lead_to_the_group_requests() {
    let mut app = app_with(B2, 120, 40);
    let rows = cells(&mut app, StatsTab::Groups);
    let names: Vec<&str> = rows.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(
        names,
        ["\"err-group\"", "\"err-group-rdk\"", "\"ghost-group\""]
    );
    for (r, c) in rows.iter().enumerate() {
        let group = c[0].trim_matches('"').to_string();
        let f = enter_row(&mut app, StatsTab::Groups, r);
        // Independent: the group requests of the whole capture with this GroupId.
        let mut want: BTreeMap<i16, usize> = BTreeMap::new();
        let mut req = BTreeSet::new();
        for (i, e) in app.entries.all().into_iter().enumerate() {
            if e.info().kind != Kind::Request
                || !matches!(
                    e.info().api_key,
                    Some(
                        ApiKey::JOIN_GROUP
                            | ApiKey::HEARTBEAT
                            | ApiKey::LEAVE_GROUP
                            | ApiKey::SYNC_GROUP
                    )
                )
            {
                continue;
            }
            let d = decode_entry(&e, &DecodeOptions::default());
            let g = d.body().and_then(|b| b.child("GroupId")).map(|n| &n.value);
            if matches!(g, Some(Value::Str(s)) if *s == group) {
                *want.entry(e.info().api_key.map_or(0, |k| k.0)).or_default() += 1;
                req.insert(i);
            }
        }
        assert_eq!(shown(&app, Kind::Request), req, "{f}");
        let jshl: Vec<u64> = c[4].split('/').map(num).collect();
        for (k, n) in [11i16, 14, 12, 13].iter().zip(jshl) {
            assert_eq!(want.get(k).copied().unwrap_or(0) as u64, n, "{f}: api {k}");
        }
        let resp: BTreeSet<usize> = req
            .iter()
            .filter_map(|&i| app.entries.at(i).info().peer.map(|p| p as usize))
            .collect();
        assert_eq!(shown(&app, Kind::Response), resp, "{f}");
    }
}

/// a2 with throttle put on its responses: the sparkline holds the per-second
/// sums, and the rows lead to the throttled messages.
#[test]
fn throttle_series_and_rows() {
    let mut es = entries(A2);
    let mut sum = 0u64;
    for (n, e) in es.iter_mut().enumerate() {
        if e.info.kind == Kind::Response
            && matches!(e.info.api_key, Some(ApiKey::PRODUCE | ApiKey::FETCH))
        {
            let t = 10 * (n as i32 % 7 + 1);
            e.info.throttle_time_ms = Some(t);
            sum += t as u64;
        }
    }
    let throttled = es
        .iter()
        .filter(|e| e.info.throttle_time_ms.is_some_and(|t| t > 0))
        .count();
    let mut app = App::new(
        Config {
            title: "a2 throttled".into(),
            kind: SourceKind::File,
            color: true,
        },
        (120, 40),
    );
    app.update(Msg::Loaded(es));
    app.update(Msg::LoadDone);
    let rows = cells(&mut app, StatsTab::Throttle);
    let v = app.stats_view.as_ref().expect("open");
    assert_eq!(v.data.throttle.iter().sum::<u64>(), sum);
    let first = app.entries.at(0).info().ts.secs;
    let last = app.entries.at(app.entries.len() - 1).info().ts.secs;
    assert_eq!(v.data.throttle.len() as i64, last - first + 1);
    assert_eq!(rows[0][3], throttled.to_string());
    assert_eq!(rows[0][4], sum.to_string());
    let f = enter_row(&mut app, StatsTab::Throttle, 0);
    assert_eq!(f, "throttled");
    assert_eq!(shown(&app, Kind::Response).len(), throttled);
    // A per-client row: its client's throttled responses of one api.
    let c = rows[1].clone();
    let f = enter_row(&mut app, StatsTab::Throttle, 1);
    assert!(f.starts_with("throttled and api="), "{f}");
    let resp = shown(&app, Kind::Response);
    assert_eq!(resp.len() as u64, num(&c[3]));
    let total: u64 = resp
        .iter()
        .map(|&i| app.entries.at(i).info().throttle_time_ms.unwrap_or(0) as u64)
        .sum();
    assert_eq!(total, num(&c[4]));
}

/// Figures are recomputed when the view opens, on `r`, about once a second
/// (five ticks) while loading and when loading ends — never per frame.
#[test]
fn refreshes_on_open_r_ticks_and_load_done() {
    let all = entries(B2);
    let mut app = App::new(
        Config {
            title: "b2".into(),
            kind: SourceKind::File,
            color: true,
        },
        (120, 40),
    );
    app.update(Msg::Loaded(all[..50].to_vec()));
    key(&mut app, KeyCode::Char('S'));
    let msgs = |app: &App| app.stats_view.as_ref().map(|v| v.data.messages);
    assert_eq!(msgs(&app), Some(50));
    app.update(Msg::Loaded(all[50..100].to_vec()));
    app.update(Msg::Tick);
    assert_eq!(msgs(&app), Some(50), "not every tick");
    for _ in 0..4 {
        app.update(Msg::Tick);
    }
    assert_eq!(msgs(&app), Some(100), "about once a second while loading");
    app.update(Msg::Loaded(all[100..150].to_vec()));
    key(&mut app, KeyCode::Char('r'));
    assert_eq!(msgs(&app), Some(150), "r refreshes");
    app.update(Msg::Loaded(all[150..].to_vec()));
    app.update(Msg::LoadDone);
    assert_eq!(msgs(&app), Some(all.len()), "load done refreshes");
    let n = app
        .stats_view
        .as_ref()
        .map_or(0, |v| v.data.report.summary.messages);
    assert_eq!(n, all.len() as u64);
}

/// At most `stats_limit` messages are decoded per refresh; the view says so.
#[test]
fn decoding_is_bounded() {
    let mut app = app_with(B2, 120, 40);
    key(&mut app, KeyCode::Char('S'));
    let (wanted, decoded) = app
        .stats_view
        .as_ref()
        .map(|v| (v.data.wanted, v.data.decoded))
        .expect("open");
    assert_eq!(wanted, decoded);
    assert!(wanted > 10 && wanted < app.entries.len(), "{wanted}");
    key(&mut app, KeyCode::Esc);
    app.stats_limit = 10;
    key(&mut app, KeyCode::Char('S'));
    let v = app.stats_view.as_ref().expect("open");
    assert_eq!(v.data.decoded, 10);
    assert!(v.data.truncated());
    // The facts-only figures stay complete.
    assert_eq!(v.data.report.summary.messages, app.entries.len() as u64);
    // Lag and delivery have a budget of their own, the same size.
    assert_eq!(v.data.lag_decoded, 10);
    assert!(v.data.lag_truncated() && v.data.lag_wanted > 10);
    let screen = super::tests_render::screen_text(&super::tests_render::draw(&app));
    assert!(screen.contains("TRUNCATED: 10 of"), "{screen}");
}

/// The Fetch exchanges, Produce and OffsetCommit requests that feed lag and
/// delivery are decoded (with their batch headers) on their own budget: b6's
/// are all of its Fetch and Produce messages and OffsetCommit requests.
#[test]
fn lag_and_delivery_decode_their_messages() {
    let mut app = app_with("captures/b6-consumer-lag.pcap", 120, 40);
    key(&mut app, KeyCode::Char('S'));
    let feeding = app
        .entries
        .all()
        .into_iter()
        .filter(|e| {
            let i = e.info();
            match (i.kind, i.api_key) {
                (_, Some(ApiKey::FETCH)) => true,
                (Kind::Request, Some(k)) => [ApiKey::PRODUCE, ApiKey::OFFSET_COMMIT].contains(&k),
                _ => false,
            }
        })
        .count();
    let v = app.stats_view.as_ref().expect("open");
    assert!(feeding > 100);
    // Those with errors are decoded for their places instead.
    assert!(v.data.lag_wanted <= feeding && v.data.lag_wanted + v.data.wanted >= feeding);
    assert_eq!(v.data.lag_decoded, v.data.lag_wanted);
}

#[test]
fn keys_of_the_stats_view() {
    let mut app = app_with(B2, 120, 40);
    key(&mut app, KeyCode::Char('S'));
    assert_eq!(
        app.stats_view.as_ref().map(|v| v.tab),
        Some(StatsTab::Latency)
    );
    let tab = |app: &App| app.stats_view.as_ref().map(|v| v.tab);
    key(&mut app, KeyCode::Tab);
    assert_eq!(tab(&app), Some(StatsTab::Throttle));
    key(&mut app, KeyCode::Right);
    assert_eq!(tab(&app), Some(StatsTab::Errors));
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    assert_eq!(tab(&app), Some(StatsTab::Tls), "wraps to the last");
    key(&mut app, KeyCode::Left);
    assert_eq!(tab(&app), Some(StatsTab::Delivery));
    key(&mut app, KeyCode::Left);
    assert_eq!(tab(&app), Some(StatsTab::Lag));
    key(&mut app, KeyCode::Char('5'));
    assert_eq!(tab(&app), Some(StatsTab::Groups));
    key(&mut app, KeyCode::Char('9'));
    assert_eq!(tab(&app), Some(StatsTab::Groups), "no ninth section");
    key(&mut app, KeyCode::Char('7'));
    assert_eq!(tab(&app), Some(StatsTab::Delivery));
    key(&mut app, KeyCode::Char('4'));
    assert_eq!(tab(&app), Some(StatsTab::Clients));
    // Selections are kept per section; G and g go to the ends.
    key(&mut app, KeyCode::Char('G'));
    assert_eq!(app.stats_view.as_ref().map(|v| v.sel[3]), Some(5));
    key(&mut app, KeyCode::Char('1'));
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Up);
    assert_eq!(
        app.stats_view.as_ref().map(|v| v.sel),
        Some([1, 0, 0, 5, 0, 0, 0, 0])
    );
    // Help opens over it, and any key closes help only.
    key(&mut app, KeyCode::Char('?'));
    assert!(app.help);
    key(&mut app, KeyCode::Char('x'));
    assert!(!app.help && app.stats_view.is_some());
    // Esc and S close it; the list is as it was.
    key(&mut app, KeyCode::Esc);
    assert!(app.stats_view.is_none());
    assert_eq!(app.view.len(), app.entries.len());
    key(&mut app, KeyCode::Char('S'));
    key(&mut app, KeyCode::Char('S'));
    assert!(app.stats_view.is_none());
    // `/` leaves the view for the filter bar.
    key(&mut app, KeyCode::Char('S'));
    key(&mut app, KeyCode::Char('/'));
    assert!(app.stats_view.is_none() && app.bar.is_some());
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('S'));
    assert_eq!(key(&mut app, KeyCode::Char('q')), vec![Effect::Quit]);
}

#[test]
fn mouse_selects_tabs_and_rows() {
    let mut app = app_with(B2, 120, 40);
    key(&mut app, KeyCode::Char('S'));
    let lay = ui::stats_layout(&app);
    // The third tab, " 3 Errors (8) ", starts after " 1 Latency (15) " and " 2 Throttle (0) ".
    let x = " 1 Latency (15)   2 Throttle (0)  ".chars().count() as u16 + 2;
    click(&mut app, x, lay.tabs.y);
    assert_eq!(
        app.stats_view.as_ref().map(|v| v.tab),
        Some(StatsTab::Errors)
    );
    let lay = ui::stats_layout(&app);
    // Border, header, then rows: the third row.
    click(&mut app, 5, lay.table.y + 2 + 2);
    assert_eq!(app.stats_view.as_ref().map(|v| v.sel[2]), Some(2));
    // A click on the selected row shows its messages.
    click(&mut app, 5, lay.table.y + 2 + 2);
    assert!(app.stats_view.is_none());
    assert!(app
        .filter_text
        .starts_with("error=UNKNOWN_TOPIC_OR_PARTITION"));
}

/// b4 (real clients throttled by a proxy): every throttle row shows exactly the
/// throttled responses it counts (counted here from the entries' facts), with
/// the same sum.
#[test]
fn throttle_rows_on_a_throttled_capture() {
    let mut app = app_with("captures/b4-throttle-errors-proxy.pcap", 120, 40);
    let rows = cells(&mut app, StatsTab::Throttle);
    assert!(rows.len() > 1, "{rows:?}");
    let throttled: Vec<usize> = (0..app.entries.len())
        .filter(|&i| {
            app.entries
                .at(i)
                .info()
                .throttle_time_ms
                .is_some_and(|t| t > 0)
        })
        .collect();
    assert_eq!(num(&rows[0][3]), throttled.len() as u64);
    let v = app.stats_view.as_ref().expect("open");
    let sum: u64 = throttled
        .iter()
        .map(|&i| app.entries.at(i).info().throttle_time_ms.unwrap_or(0) as u64)
        .sum();
    assert_eq!(v.data.throttle.iter().sum::<u64>(), sum);
    for (r, c) in rows.iter().enumerate().skip(1) {
        let f = enter_row(&mut app, StatsTab::Throttle, r);
        let id = c[0].trim_matches('"');
        let want: BTreeSet<usize> = throttled
            .iter()
            .copied()
            .filter(|&i| {
                let e = &app.entries.at(i).info();
                let req = e.peer.map(|p| app.entries.at(p as usize).info());
                e.api_name() == Some(c[2].as_str())
                    && req.as_ref().and_then(|q| q.client_id.as_deref()) == Some(id)
            })
            .collect();
        assert_eq!(shown(&app, Kind::Response), want, "{f}");
        assert_eq!(want.len() as u64, num(&c[3]), "{f}");
        let s: u64 = want
            .iter()
            .map(|&i| app.entries.at(i).info().throttle_time_ms.unwrap_or(0) as u64)
            .sum();
        assert_eq!(s, num(&c[4]), "{f}");
    }
}

/// Puts a hand-made lag and delivery report into the open stats view of a1
/// (kcat's consumer "rdkafka" fetching "kcat-demo"), with its rows: a
/// partition falling behind, one caught up, one with a single sample;
/// record ages, a delivery and a producer.
pub fn hand_made(app: &mut App) {
    use kafkashark::stats::delivery::{AgeReport, DeliveryReport, DeliveryReports, ProducerReport};
    use kafkashark::stats::lag::{GroupLag, LagReport, PartitionLag};
    use kafkashark::stats::LatencyMs;
    let t0 = 1_795_954_062.0;
    let row = |partition: i32, series: Vec<(f64, i64)>, trend: Option<f64>| {
        let lag = series.last().map_or(0, |s| s.1);
        PartitionLag {
            client: "rdkafka".into(),
            host: "127.0.0.1".into(),
            group: Some("kcat-group".into()),
            topic: "kcat-demo".into(),
            partition,
            fetches: series.len() as u64,
            records: 40,
            fetch_offset: 100,
            next_offset: 120,
            high_watermark: 120 + lag,
            last_stable_offset: 120 + lag,
            log_start_offset: 0,
            lag,
            max_lag: series.iter().map(|s| s.1).max().unwrap_or(0),
            trend_per_s: trend,
            committed_offset: Some(90),
            committed_lag: Some(30 + lag),
            first_ts: series.first().map_or(t0, |s| s.0),
            last_ts: series.last().map_or(t0, |s| s.0),
            series,
        }
    };
    let growing: Vec<(f64, i64)> = (0..40)
        .map(|k| (t0 + f64::from(k), i64::from(k * k / 4)))
        .collect();
    let flat: Vec<(f64, i64)> = (0..40)
        .map(|k| (t0 + f64::from(k), i64::from(k % 3)))
        .collect();
    let lat = |p50: f64, max: f64| LatencyMs {
        count: 10,
        p50,
        p90: max,
        p99: max,
        p999: max,
        min: p50 / 2.0,
        max,
        mean: p50,
    };
    let v = app.stats_view.as_mut().expect("stats view open");
    let r = &mut v.data.report;
    r.lag = LagReport {
        partitions: vec![
            row(0, growing, Some(9.5)),
            row(1, flat, Some(-0.1)),
            row(2, vec![(t0, 7)], None),
        ],
        groups: vec![GroupLag {
            group: "kcat-group".into(),
            partitions: 3,
            committed_lag: 270,
            fetch_lag: 380,
        }],
        overflow: 0,
    };
    r.delivery = DeliveryReports {
        record_age: vec![
            AgeReport {
                topic: "kcat-demo".into(),
                partition: 0,
                batches: 12,
                log_append_time: 0,
                future: 1,
                age_ms: Some(lat(2.5, 480.0)),
            },
            AgeReport {
                topic: "kcat-demo".into(),
                partition: 1,
                batches: 3,
                log_append_time: 3,
                future: 0,
                age_ms: None,
            },
        ],
        delivery: vec![DeliveryReport {
            consumer: "rdkafka".into(),
            batches: 9,
            delivery_ms: Some(lat(251.4, 503.0)),
        }],
        unmatched_batches: 3,
        forgotten_batches: 0,
        producers: vec![ProducerReport {
            producer: "rdkafka".into(),
            requests: 23,
            batches: 27,
            records: 54,
            records_per_batch: Some(2.0),
            bytes: 2700,
            mean_batch_bytes: Some(100.0),
            max_batch_bytes: 180,
            batch_gap_ms: Some(lat(5.1, 1000.0)),
        }],
        overflow: 0,
    };
    v.data.rows[StatsTab::Lag.index()] = super::stats_view::lag_rows(&v.data.report);
    v.data.rows[StatsTab::Delivery.index()] = super::stats_view::delivery_rows(&v.data.report);
}

/// The lag and delivery rows of a hand-made report: their cells, and their
/// filters lead to the consumer's Fetches of the topic and the producer's
/// Produce requests.
#[test]
fn lag_and_delivery_rows_of_a_hand_made_report() {
    let mut app = app_with("captures/a1-kcat-produce-consume-group.pcap", 120, 40);
    key(&mut app, KeyCode::Char('S'));
    hand_made(&mut app);
    let lag = cells(&mut app, StatsTab::Lag);
    assert_eq!(
        lag[0],
        [
            "\"rdkafka\"",
            "kcat-group",
            "kcat-demo",
            "0",
            "380",
            "380",
            "+9.5",
            "410",
            ""
        ]
    );
    assert_eq!(lag[1][4..8], ["0", "2", "-0.1", "30"]);
    assert_eq!(lag[2][4..8], ["7", "7", "-", "37"]);
    let delivery = cells(&mut app, StatsTab::Delivery);
    let of: Vec<&str> = delivery.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(of, ["age", "age", "delivery", "producer"]);
    assert_eq!(
        delivery[0][1..6],
        ["kcat-demo/0", "12", "2.500", "480.0", "480.0"]
    );
    assert_eq!(delivery[0][6], "1 timestamped after the fetch");
    assert_eq!(delivery[1][3..6], ["-", "-", "-"]);
    assert_eq!(
        delivery[3][6],
        "23 req, 2.0 rec/batch, 100.0 B/batch (max 180)"
    );
    // Enter on the lag row: rdkafka's Fetches of kcat-demo, requests and responses.
    let want: BTreeSet<usize> = app
        .entries
        .all()
        .into_iter()
        .filter(|e| {
            let i = e.info();
            i.api_key == Some(ApiKey::FETCH) && i.topics.iter().any(|t| &**t == "kcat-demo")
        })
        .filter(|e| {
            let i = e.info();
            let id = i.client_id.clone().or_else(|| {
                let p = app.entries.at(usize::try_from(i.peer?).ok()?);
                p.info().client_id
            });
            id.as_deref() == Some("rdkafka")
        })
        .map(|e| e.info().index as usize)
        .collect();
    assert!(want.len() > 10, "{}", want.len());
    let f = enter_row(&mut app, StatsTab::Lag, 0);
    assert_eq!(
        f,
        "api=Fetch and client=\"rdkafka\" and topic=\"kcat-demo\""
    );
    let shown: BTreeSet<usize> = app.view.iter().map(|&i| i as usize).collect();
    assert_eq!(shown, want);
    key(&mut app, KeyCode::Char('S'));
    hand_made(&mut app);
    let f = enter_row(&mut app, StatsTab::Delivery, 3);
    assert_eq!(f, "api=Produce and client=\"rdkafka\"");
    assert!(app
        .view
        .iter()
        .all(|&i| app.entries.at(i as usize).info().api_key == Some(ApiKey::PRODUCE)));
    assert!(!app.view.is_empty());
}

/// The `stats` command's report of a capture: the engine's analyzer and
/// statistics over the file, as `kafkashark stats` runs them.
fn stats_command_report(capture: &str) -> kafkashark::stats::StatsReport {
    use kafkashark::analyzer::{Analyzer, AnalyzerConfig};
    use kafkashark::capture::{FileSource, FrameSource};
    use kafkashark::stats::{Stats, StatsConfig};
    let mut src = FileSource::open(&super::testutil::repo(capture)).expect("capture opens");
    let mut an = Analyzer::new(Stats::analyzer_config(AnalyzerConfig::default()));
    let mut stats = Stats::new(StatsConfig::default());
    let mut out = Vec::new();
    while let Some(f) = src.next_frame().expect("frame") {
        an.push(&f, &mut out);
        out.drain(..).for_each(|o| stats.push(&o));
    }
    an.finish(&mut out);
    out.drain(..).for_each(|o| stats.push(&o));
    stats.settle();
    stats.report()
}

/// b6: a slow librdkafka group whose lag grows to hundreds of records on
/// the three partitions of `lag-topic`, and a kafka-python group that keeps
/// up. The view's lag and delivery are the `stats` command's (which
/// tests/lag_truth.rs checks against an independent reading of the
/// capture), though the view reads its trees from the index; each lag row
/// leads to its consumer's Fetches of the topic.
#[test]
fn lag_and_delivery_of_b6_are_the_stats_commands() {
    const B6: &str = "captures/b6-consumer-lag.pcap";
    let mut app = app_with(B6, 120, 40);
    key(&mut app, KeyCode::Char('S'));
    let v = app.stats_view.as_ref().expect("open");
    assert!(!v.data.lag_truncated() && v.data.lag_decoded > 0);
    let want = stats_command_report(B6);
    assert_eq!(v.data.report.lag, want.lag);
    assert_eq!(v.data.report.delivery, want.delivery);
    let lag = cells(&mut app, StatsTab::Lag);
    assert_eq!(lag.len(), 6, "{lag:?}");
    for row in &lag {
        let (lag, max): (i64, i64) = (row[4].parse().unwrap(), row[5].parse().unwrap());
        match row[0].as_str() {
            "\"fast-consumer\"" => assert_eq!((row[1].as_str(), lag, max), ("fast-group", 0, 0)),
            "\"slow-consumer\"" => {
                assert_eq!(row[1], "slow-group");
                assert!(lag >= 100 && max >= lag, "{row:?}");
                assert!(row[6].starts_with('+'), "falling behind: {row:?}");
            }
            other => panic!("consumer {other}"),
        }
        assert_eq!(row[2], "lag-topic");
    }
    let slow = lag
        .iter()
        .position(|r| r[0] == "\"slow-consumer\"")
        .expect("slow row");
    let delivery = cells(&mut app, StatsTab::Delivery);
    let of: Vec<&str> = delivery.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(
        of,
        ["age", "age", "age", "delivery", "delivery", "producer"]
    );
    // Enter on a slow-consumer row: its Fetch requests and responses.
    let f = enter_row(&mut app, StatsTab::Lag, slow);
    assert_eq!(
        f,
        "api=Fetch and client=\"slow-consumer\" and topic=\"lag-topic\""
    );
    let want: BTreeSet<usize> = app
        .entries
        .all()
        .into_iter()
        .filter(|e| e.info().api_key == Some(ApiKey::FETCH))
        .filter(|e| {
            let i = e.info();
            let req = match i.kind {
                Kind::Request => i,
                Kind::Response => match i.peer {
                    Some(p) => app.entries.at(p as usize).info(),
                    None => return false,
                },
            };
            req.client_id.as_deref() == Some("slow-consumer")
                && req.topics.iter().any(|t| &**t == "lag-topic")
        })
        .map(|e| e.info().index as usize)
        .collect();
    let shown: BTreeSet<usize> = app.view.iter().map(|&i| i as usize).collect();
    assert_eq!(shown, want);
    assert!(want.len() >= 26, "{}", want.len());
}

/// The TLS section: the loader's TLS events of d2 (TLS 1.2) with the
/// proxy's key log — a row per connection, decrypted or refused with its
/// alert (red), `Enter` listing the stream's messages; without keys every
/// connection is there, red, `no key`.
#[test]
fn tls_section_lists_every_connection() {
    use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
    use kafkashark::capture::{FileSource, FrameSource};
    use kafkashark::tls::keylog::{KeyLog, Keys};
    let path = super::testutil::repo("captures/tls/d2-tls12.pcap");
    if !std::path::Path::new(&path).is_file() {
        return;
    }
    for with_keys in [true, false] {
        let keys = if with_keys {
            let mut k = KeyLog::new();
            assert!(k
                .feed(&std::fs::read(format!("{path}.server.keys")).unwrap())
                .is_empty());
            Keys::new(k, false)
        } else {
            Keys::default()
        };
        let mut cfg = AnalyzerConfig::default();
        cfg.pipeline.tls_keys = keys;
        cfg.decode.records = false;
        let mut an = Analyzer::new(cfg);
        let mut src = FileSource::open(&path).unwrap();
        let mut out = Vec::new();
        while let Some(f) = src.next_frame().unwrap() {
            an.push(&f, &mut out);
        }
        an.finish(&mut out);
        let (mut entries, mut notes) = (Vec::new(), Vec::new());
        for o in out {
            match o {
                Output::Message(m) => entries.push(super::app::Entry::new(m.info, m.raw)),
                Output::Notice(n) => notes.extend(crate::tui::tls_note(*n)),
            }
        }
        assert_eq!(entries.is_empty(), !with_keys);
        let mut app = App::new(
            Config {
                title: "d2".into(),
                kind: SourceKind::File,
                color: true,
            },
            (160, 40),
        );
        app.update(Msg::Tls(notes));
        app.update(Msg::Loaded(entries));
        let rows = cells(&mut app, StatsTab::Tls);
        assert_eq!(rows.len(), 15);
        let v = app.stats_view.as_ref().unwrap();
        let trouble: Vec<bool> = v
            .data
            .rows(StatsTab::Tls)
            .iter()
            .map(|r| r.trouble)
            .collect();
        for (r, red) in rows.iter().zip(&trouble) {
            match r[6].as_str() {
                "decrypted" => {
                    // Red only for a fatal alert (the proxy's decode_error
                    // when kafka-python hangs up).
                    assert!(with_keys, "{r:?}");
                    assert_eq!(*red, r[8].contains("fatal"), "{r:?}");
                    assert_eq!(r[2], "TLS 1.2");
                }
                "no handshake" => {
                    assert!(*red);
                    assert_eq!(r[2], "TLS 1.3 offered");
                    assert_eq!(r[8], "server fatal handshake_failure");
                }
                "no key" => {
                    assert!(!with_keys && *red, "{r:?}");
                    let why = &r[8];
                    assert!(
                        why.starts_with("no key for client random ") || why.contains("fatal"),
                        "{r:?}"
                    );
                }
                other => panic!("{other}: {r:?}"),
            }
        }
        if with_keys {
            // s0 holds kafka-python's first connection; Enter lists it.
            assert_eq!(enter_row(&mut app, StatsTab::Tls, 0), "stream=0");
            assert!(!app.view.is_empty());
        }
    }
}
