//! The render: draws an [`App`] into a ratatui frame. A pure function of the
//! state; it reads, never changes. Only the visible rows of the list, tree and
//! byte view are built, so a million messages cost no more than a hundred.
//!
//! Every string that came from the capture (client ids, topics, values,
//! names) passes through `escape_text` before it reaches the terminal.

use kafkashark::analyzer::MessageInfo;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::schema::ApiKey;
use kafkashark::kafka::tree::escape_text;
use kafkashark::kafka::Role;
use kafkashark::stats::text::{api, ms};
use kafkashark::vocab::Timestamp;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Bar, BarChart, BarGroup, Block, BorderType, Borders, Clear, Paragraph, Sparkline,
};
use ratatui::Frame;

use super::app::{node_at, App, BarKind, Pane, SourceKind, StatsView};
use super::columns::{self, Col};
use super::index::IndexEntry;
use super::stats_view::{self, col_plan, columns, StatsTab, BUCKETS, SERIES_COL};
use crate::filter::Facts;
use crate::print::{api_text, error_names, pairing_marks};
use crate::timefmt::TimeFormat;

/// Where each pane goes, and how many content rows it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The message list (none for a single message).
    pub list: Option<Rect>,
    /// The field tree.
    pub tree: Rect,
    /// The byte view.
    pub hex: Rect,
    /// The filter bar or notice line, when there is one.
    pub line: Option<Rect>,
    /// The status bar.
    pub status: Rect,
    /// Message rows in the list (header excluded).
    pub list_rows: usize,
    /// Rows of the tree.
    pub tree_rows: usize,
    /// Rows of 16 bytes in the byte view (legend excluded).
    pub hex_rows: usize,
}

/// Whether the line above the status bar is shown: the filter bar, a notice or a read error.
fn has_line(app: &App) -> bool {
    app.bar.is_some() || app.notice.is_some() || app.load_error.is_some()
}

/// Width of the byte view's content: offset, 16 hex bytes, ASCII.
const HEX_WIDTH: u16 = 72;

/// Splits the terminal among the panes. Wide terminals put the tree and the
/// bytes side by side; otherwise list, tree and bytes are stacked and the
/// byte view shrinks on short terminals.
pub fn layout(app: &App) -> Layout {
    let (w, h) = app.size;
    let full = Rect::new(0, 0, w, h);
    let status = Rect::new(0, h.saturating_sub(1), w, h.min(1));
    let has_line = has_line(app);
    let line = has_line.then(|| Rect::new(0, h.saturating_sub(2), w, h.min(2) - h.min(1)));
    let main_h = h.saturating_sub(1 + u16::from(has_line));
    let has_list = app.cfg.kind != SourceKind::Message;
    let hex_needed = u16::try_from(app.hex_bytes().len().div_ceil(16).max(1)).unwrap_or(u16::MAX);
    let rows = u16::try_from(app.view.len().max(1)).unwrap_or(u16::MAX);
    let list_wanted = u16::from(has_list) * rows.saturating_add(3).min((main_h * 35 / 100).max(5));
    let side_by_side = w >= 160 && main_h >= 20;
    let (list, tree, hex) = if side_by_side {
        let list_h = u16::from(has_list) * (main_h * 40 / 100).max(5);
        let rest = main_h.saturating_sub(list_h);
        let hex_w = HEX_WIDTH + 2;
        let tree = Rect::new(0, list_h, w.saturating_sub(hex_w), rest);
        let hex_h = hex_needed.saturating_add(3).min(rest);
        let hex = Rect::new(tree.width, list_h, hex_w.min(w), hex_h);
        (Rect::new(0, 0, w, list_h), tree, hex)
    } else {
        let cap = if main_h >= 30 { 8 } else { 4 };
        let mut hex_h = hex_needed.min(cap) + 3;
        let mut list_h = list_wanted;
        // The tree keeps at least four rows: shrink the bytes, then the list.
        hex_h = hex_h
            .min(main_h.saturating_sub(list_h + 6))
            .max(hex_h.min(4));
        list_h = list_h
            .min(main_h.saturating_sub(hex_h + 6))
            .max(list_h.min(4));
        let tree_h = main_h.saturating_sub(list_h + hex_h);
        (
            Rect::new(0, 0, w, list_h),
            Rect::new(0, list_h, w, tree_h),
            Rect::new(
                0,
                list_h + tree_h,
                w,
                hex_h.min(main_h - list_h.min(main_h)),
            ),
        )
    };
    let clip = |r: Rect| r.intersection(full);
    let rows = |r: Rect, extra: u16| usize::from(r.height.saturating_sub(2 + extra));
    Layout {
        list: has_list.then(|| clip(list)),
        tree: clip(tree),
        hex: clip(hex),
        line,
        status,
        list_rows: if has_list { rows(list, 1) } else { 0 },
        tree_rows: rows(tree, 0),
        hex_rows: rows(hex, 1),
    }
}

/// Colours and emphasis, or none of them with `--no-color`.
struct Palette {
    color: bool,
}

impl Palette {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    /// `colored` with colours, else plain text with `plain` emphasis.
    fn or(&self, colored: Style, plain: Modifier) -> Style {
        if self.color {
            colored
        } else {
            Style::default().add_modifier(plain)
        }
    }

    fn role(&self, r: Role) -> Style {
        match r {
            Role::Message => self.fg(Color::Gray),
            Role::Frame => self.fg(Color::LightBlue),
            Role::Header => self.fg(Color::Cyan),
            Role::RequestBody => self.fg(Color::Green),
            Role::ResponseBody => self.fg(Color::LightGreen),
            Role::RecordBatch => self.fg(Color::Yellow),
            Role::Record => self.fg(Color::LightYellow),
            Role::TaggedFields => self.fg(Color::DarkGray),
            Role::Malformed => self.or(
                Style::default().fg(Color::White).bg(Color::Magenta),
                Modifier::UNDERLINED,
            ),
        }
    }
}

/// The legend of the byte view, in the seed's words.
pub const LEGEND: [(Role, &str); 7] = [
    (Role::Frame, "frame"),
    (Role::Header, "rpc header"),
    (Role::RequestBody, "request body"),
    (Role::RecordBatch, "RecordBatch"),
    (Role::Record, "Record"),
    (Role::ResponseBody, "response body"),
    (Role::TaggedFields, "tagged_fields"),
];

/// Draws the whole UI.
pub fn render(f: &mut Frame, app: &App) {
    let lay = layout(app);
    let pal = Palette {
        color: app.cfg.color,
    };
    if let Some(v) = &app.stats_view {
        render_stats(f, app, v, &pal);
    } else {
        if let Some(r) = lay.list {
            render_list(f, app, &pal, r, lay.list_rows);
        }
        render_tree(f, app, &pal, lay.tree, lay.tree_rows);
        render_hex(f, app, &pal, lay.hex, lay.hex_rows);
    }
    if let Some(r) = lay.line {
        render_line(f, app, &pal, r);
    }
    render_status(f, app, &pal, lay.status);
    if app.help {
        render_help(f, app.help_scroll, &pal, f.area());
    }
}

fn block<'a>(title: Line<'a>, focused: bool, pal: &Palette) -> Block<'a> {
    let (style, ty) = if focused {
        let bold = pal.fg(Color::LightCyan).add_modifier(Modifier::BOLD);
        (bold, BorderType::Thick)
    } else {
        (pal.fg(Color::DarkGray), BorderType::Plain)
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(ty)
        .border_style(style)
        .title(title)
}

/// A [`block`] whose title is cut to the `w` columns inside it.
fn titled(title: &str, w: usize, focused: bool, pal: &Palette) -> Block<'static> {
    block(Line::from(fit_title(title, w)), focused, pal)
}

/// A table's header row: bold, fitted to `w`.
fn header_line(text: &str, w: usize) -> Line<'static> {
    Line::from(Span::styled(
        fit(text, w),
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// The items as text, joined by `sep`.
pub fn joined<T: std::fmt::Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    items
        .into_iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(sep)
}

/// The time of day (UTC) of an epoch second: `HH:MM:SS`.
fn clock(secs: i64) -> String {
    let s = secs.rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Truncates to `w` characters (with `…`) and pads to exactly `w`.
fn fit(s: &str, w: usize) -> String {
    match s.chars().count() {
        n if n <= w => format!("{s:w$}"),
        _ if w == 0 => String::new(),
        _ => s.chars().take(w - 1).chain(['…']).collect(),
    }
}

/// Like [`fit`], keeping the last column as a gap.
fn fit_gap(s: &str, w: usize) -> String {
    match w {
        0 => String::new(),
        _ => fit(s, w - 1) + " ",
    }
}

/// Like [`fit`], right-aligned.
fn fit_right(s: &str, w: usize) -> String {
    if s.chars().count() > w {
        fit(s, w)
    } else {
        format!("{s:>w$}")
    }
}

/// API families for the list's colours: produce, fetch, groups,
/// coordinators and transactions, the client's housekeeping, and the rest.
fn api_color(key: Option<ApiKey>) -> Color {
    let Some(key) = key else {
        return Color::Reset;
    };
    match key {
        ApiKey::PRODUCE => Color::Green,
        ApiKey::FETCH => Color::Cyan,
        ApiKey::OFFSET_COMMIT
        | ApiKey::OFFSET_FETCH
        | ApiKey::FIND_COORDINATOR
        | ApiKey::JOIN_GROUP
        | ApiKey::HEARTBEAT
        | ApiKey::LEAVE_GROUP
        | ApiKey::SYNC_GROUP
        | ApiKey::DESCRIBE_GROUPS
        | ApiKey::LIST_GROUPS
        | ApiKey::INIT_PRODUCER_ID
        | ApiKey::ADD_PARTITIONS_TO_TXN
        | ApiKey::ADD_OFFSETS_TO_TXN
        | ApiKey::END_TXN
        | ApiKey::WRITE_TXN_MARKERS
        | ApiKey::TXN_OFFSET_COMMIT
        | ApiKey::DELETE_GROUPS
        | ApiKey::OFFSET_DELETE
        | ApiKey::CONSUMER_GROUP_HEARTBEAT
        | ApiKey::CONSUMER_GROUP_DESCRIBE
        | ApiKey::SHARE_GROUP_HEARTBEAT
        | ApiKey::SHARE_GROUP_DESCRIBE
        | ApiKey::SHARE_FETCH
        | ApiKey::SHARE_ACKNOWLEDGE
        | ApiKey::ADD_RAFT_VOTER
        | ApiKey::STREAMS_GROUP_HEARTBEAT
        | ApiKey::STREAMS_GROUP_DESCRIBE => Color::LightBlue,
        ApiKey::LIST_OFFSETS
        | ApiKey::METADATA
        | ApiKey::SASL_HANDSHAKE
        | ApiKey::API_VERSIONS
        | ApiKey::SASL_AUTHENTICATE
        | ApiKey::DESCRIBE_CLUSTER
        | ApiKey::DESCRIBE_TOPIC_PARTITIONS => Color::Reset,
        _ => Color::LightMagenta,
    }
}

/// Cells fitted to their columns (`(width, right-aligned)`), space-separated;
/// cells past the last column as they are.
fn row_text<S: AsRef<str>>(cols: &[(usize, bool)], cells: &[S]) -> String {
    let cell = |(k, s): (usize, &S)| match cols.get(k) {
        Some(&(w, true)) => fit_right(s.as_ref(), w),
        Some(&(w, false)) => fit(s.as_ref(), w),
        None => s.as_ref().to_string(),
    };
    joined(cells.iter().enumerate().map(cell), " ")
}

/// The time column of `e`, shown after a row of time `prev` (none for the
/// first row).
pub fn time_text(app: &App, e: &IndexEntry, prev: Option<Timestamp>) -> String {
    app.time.text(e.ts(), app.origin, prev)
}

/// Sender → receiver.
fn route(i: &MessageInfo) -> String {
    match i.kind {
        Kind::Request => format!("{} → {}", i.client, i.broker),
        Kind::Response => format!("{} → {}", i.broker, i.client),
    }
}

fn latency_text(ns: u64) -> String {
    let ms = ns as f64 / 1e6;
    if ms >= 10_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        format!("{ms:.3}ms")
    }
}

/// A paired response's timing: its latency and, when it waited behind the
/// connection's earlier responses, the parts (`latency 503.2 ms = hol 502.9 +
/// service 0.225 ms`, as `stats` writes milliseconds); `[long-poll]`, the
/// throttle and the connection's round trip when there; the latency at the
/// other capture point, for a connection read from two.
fn timing_text(r: &MessageInfo) -> Option<String> {
    let in_ms = |ns: u64| ms(ns as f64 / 1e6);
    let mut s = format!("latency {}", in_ms(r.latency_ns?));
    if let (Some(h), Some(svc)) = (r.hol_wait_ns.filter(|&h| h > 0), r.service_ns()) {
        s.push_str(&format!(" ms = hol {} + service {}", in_ms(h), in_ms(svc)));
    }
    s.push_str(" ms");
    if r.long_poll() {
        s.push_str(" [long-poll]");
    }
    if let Some(t) = r.throttle_time_ms.filter(|&t| t > 0) {
        s.push_str(&format!(" throttle {t} ms"));
    }
    if let Some(rtt) = r.rtt {
        s.push_str(&format!(" rtt {} ms", in_ms(rtt.ns)));
    }
    // The same exchange as the other capture point saw it.
    if let Some(l) = r.also.as_ref().and_then(|a| a.latency_ns) {
        s.push_str(&format!(" │ other point {} ms", in_ms(l)));
    }
    Some(s)
}

/// Throttle (with `throttle`), errors (with `errors`) and marks of a message.
pub fn notes_text(e: &IndexEntry, throttle: bool, errors: bool) -> String {
    let i = &e.info();
    let mut s = Vec::new();
    if let Some(t) = i.throttle_time_ms.filter(|&t| t > 0).filter(|_| throttle) {
        s.push(format!("throttle={t}ms"));
    }
    if !i.error_codes.is_empty() && errors {
        s.push(error_names(&i.error_codes));
    }
    // What went wrong first: the column is often too narrow for all.
    if let Some(err) = &i.decode_error {
        s.push(format!("[malformed: {}]", escape_text(err)));
    }
    if e.missing() > 0 {
        s.push(format!("[{} bytes missing]", e.missing()));
    }
    s.extend(pairing_marks(i));
    if let Some(w) = &i.decode_warning {
        s.push(format!("[warning: {w}]"));
    }
    s.join(" ")
}

/// The text of column `c` for entry `e` (facts `i`, at index `idx`), shown
/// after a row of time `prev`; `notes` is made once the columns are laid out.
pub fn cell(app: &App, c: Col, e: &IndexEntry, i: &MessageInfo, prev: Option<Timestamp>) -> String {
    info_cell(c, i, &app.captures).unwrap_or_else(|| match c {
        Col::Time => time_text(app, e, prev),
        Col::Partitions => app.row_facts(e.index() as usize).0,
        Col::Records => app.row_facts(e.index() as usize).1,
        _ => String::new(),
    })
}

/// The text of column `c` that a message's facts alone give (the list's,
/// and what `App` measures as messages load); `None` for the time, the
/// partitions and records (read from the tree) and the notes. A message's
/// capture is shown by its file's name, of the `captures` read.
pub fn info_cell(c: Col, i: &MessageInfo, captures: &[String]) -> Option<String> {
    Some(match c {
        Col::Capture => {
            let name = captures
                .get(usize::from(i.capture))
                .map_or("", String::as_str);
            let path = std::path::Path::new(name);
            path.file_name()
                .map_or(name.into(), |n| n.to_string_lossy().into_owned())
        }
        Col::No => i.frame.to_string(),
        Col::Stream => format!("s{}", i.stream),
        Col::Route => route(i),
        Col::Client => i.client.to_string(),
        Col::Broker => i.broker.to_string(),
        Col::Api => api_text(i),
        Col::Kind => match i.kind {
            Kind::Request => "Req".into(),
            Kind::Response => "Resp".into(),
        },
        Col::Corr => i.correlation_id.map_or("?".into(), |c| c.to_string()),
        Col::Size => i.length.to_string(),
        Col::Latency => i.latency_ns.map(latency_text).unwrap_or_default(),
        Col::ClientId => i.client_id.clone().unwrap_or_default(),
        Col::Topics => i.topics.join(","),
        Col::Errors => error_names(&i.error_codes),
        Col::Throttle => i
            .throttle_time_ms
            .filter(|&t| t > 0)
            .map_or(String::new(), |t| format!("{t}ms")),
        Col::Time | Col::Partitions | Col::Records | Col::Notes => return None,
    })
}

fn render_list(f: &mut Frame, app: &App, pal: &Palette, area: Rect, rows: usize) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let end = (app.list_offset + rows).min(app.view.len());
    let shown = app.view.get(app.list_offset..end).unwrap_or(&[]);
    // Each shown row's entry and cells (or why its entry could not be read).
    let mut rows_data = Vec::with_capacity(shown.len());
    for (pos, &at) in (app.list_offset..).zip(shown) {
        let e = match app.entries.try_get(at as usize) {
            Ok(e) => e,
            Err(err) => {
                rows_data.push(Err(err.to_string()));
                continue;
            }
        };
        let i = e.info();
        // The row above's time, for `-t d` (delta to the message shown before).
        let prev = pos
            .checked_sub(1)
            .and_then(|p| app.view.get(p))
            .and_then(|&j| app.entries.get(j as usize))
            .map(|p| p.ts())
            .filter(|_| app.time == TimeFormat::Delta);
        let cells: Vec<String> = (app.columns.iter())
            .map(|&c| cell(app, c, &e, &i, prev))
            .collect();
        rows_data.push(Ok((pos, e, i, cells)));
    }
    // Each column as wide as its widest text loaded or shown.
    let want: Vec<(Col, usize)> = (app.columns.iter().enumerate())
        .map(|(k, &c)| {
            let shown = (rows_data.iter().flatten())
                .map(|r| r.3[k].chars().count())
                .max()
                .unwrap_or(0);
            let loaded = match c {
                Col::Time => app.time.width(),
                c => app.col_want[c as usize],
            };
            (c, shown.max(loaded))
        })
        .collect();
    let lay = columns::layout(&want, inner_w);
    let has = |c: Col| lay.iter().any(|(l, _)| *l == c);
    let text = |c: Col, w: usize, s: &str| {
        if c.spec().right {
            fit_right(s, w)
        } else {
            fit(s, w)
        }
    };
    let header = joined(lay.iter().map(|&(c, w)| text(c, w, c.spec().header)), " ");
    let mut lines = vec![header_line(&header, inner_w)];
    for r in rows_data {
        let (pos, e, i, cells) = match r {
            Ok(r) => r,
            Err(err) => {
                // The index could not be read back: the row says why.
                let text = fit(&format!("{:>7} {err}", "?"), inner_w);
                lines.push(Line::from(Span::styled(text, pal.fg(Color::Magenta))));
                continue;
            }
        };
        let trouble = [
            (i.decode_error.is_some(), Color::Magenta),
            (!i.error_codes.is_empty(), Color::LightRed),
            (i.throttle_time_ms.is_some_and(|t| t > 0), Color::Yellow),
        ]
        .into_iter()
        .find_map(|(on, c)| on.then_some(c));
        let base = trouble.map_or(Style::default(), |c| pal.fg(c));
        let api_style = trouble.map_or_else(|| pal.fg(api_color(i.api_key)), |c| pal.fg(c));
        let mut spans = Vec::with_capacity(2 * lay.len());
        for (n, &(c, w)) in lay.iter().enumerate() {
            if n > 0 {
                spans.push(Span::styled(" ", base));
            }
            let k = app.columns.iter().position(|x| *x == c).unwrap_or(0);
            let t = match c {
                // What no column of its own shows.
                Col::Notes => notes_text(&e, !has(Col::Throttle), !has(Col::Errors)),
                _ => cells.get(k).cloned().unwrap_or_default(),
            };
            let style = if c == Col::Api { api_style } else { base };
            spans.push(Span::styled(text(c, w, &t), style));
        }
        let mut line = Line::from(spans);
        if pos == app.list_pos && app.selected == Some(e.index() as usize) {
            line = line.patch_style(Style::default().add_modifier(Modifier::REVERSED));
        }
        lines.push(line);
    }
    let title = match &app.followed {
        Some((stream, ends, _)) => format!(
            " stream {stream}: {ends} · messages {}/{} ",
            app.view.len(),
            app.entries.len()
        ),
        None => format!(" messages {}/{} ", app.view.len(), app.entries.len()),
    };
    let mut b = block(Line::from(title), app.focus == Pane::List, pal);
    // The selected message's marks in full (the Notes column may be cut short).
    if let Some(e) = app.selected_entry() {
        let notes = notes_text(&e, true, true);
        if !notes.is_empty() {
            let t = fit_title(&format!(" {notes} "), inner_w.saturating_sub(2));
            b = b.title_bottom(Line::from(t).alignment(Alignment::Right));
        }
    }
    let p = Paragraph::new(lines).block(b);
    f.render_widget(p, area);
}

fn render_tree(f: &mut Frame, app: &App, pal: &Palette, area: Rect, rows: usize) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let mut lines = Vec::new();
    let title = match app.selected_entry() {
        Some(e) => {
            let i = &e.info();
            let (kind, peer) = match i.kind {
                Kind::Request => ("Request", "response"),
                Kind::Response => ("Response", "request"),
            };
            let mut t = format!(" frame {}: {} {kind} ", i.frame, api_text(i));
            let p = i.peer.and_then(|p| app.entries.get(p as usize));
            // The exchange's timing first (the title is cut on narrow
            // terminals), from the response: a request's is its peer's.
            let response = match i.kind {
                Kind::Response => Some(i.clone()),
                Kind::Request => p
                    .as_ref()
                    .map(|p| p.info())
                    .filter(|r| r.kind == Kind::Response),
            };
            if let Some(parts) = response.as_ref().and_then(timing_text) {
                t.push_str(&format!("│ {parts} │ "));
            }
            if app.cfg.kind != SourceKind::Message {
                t.push_str(&format!("{} ", route(i)));
            }
            if let Some(p) = &p {
                t.push_str(&format!("│ {peer} in frame {} ", p.frame()));
            }
            if let Some(c) = &i.client_id {
                t.push_str(&format!("client_id={:?} ", escape_text(c)));
            }
            t
        }
        None => " fields ".into(),
    };
    if let Some(d) = &app.detail {
        let end = (app.tree.offset + rows).min(app.tree.rows.len());
        let visible = app.tree.rows.get(app.tree.offset..end).unwrap_or(&[]);
        // Name (marker, guides, name), type, value and span; column widths
        // from the rows shown, shrunk to fit the pane.
        let cells: Vec<_> = visible
            .iter()
            .filter_map(|r| {
                let n = node_at(&d.decoded.root, &r.path)?;
                let marker = match (r.has_children, app.tree.expanded.contains(&r.path)) {
                    (false, _) => "  ",
                    (true, true) => "▾ ",
                    (true, false) => "▸ ",
                };
                let v = n.value_text();
                let mut value = if v.is_empty() {
                    String::new()
                } else {
                    format!("= {}", escape_text(&v))
                };
                if let Some(e) = &n.error {
                    value.push_str(&format!("  MALFORMED: {}", escape_text(e)));
                }
                let src = match n.source {
                    0 => String::new(),
                    s => format!("#{s}:"),
                };
                let name = escape_text(&n.name);
                let span = format!("[{src}0x{:04x}, {}B]", n.offset, n.length);
                Some((
                    (marker, r.guides.as_str(), name),
                    [escape_text(&n.ty), value, span],
                    n,
                ))
            })
            .collect();
        let span_w = cells.iter().map(|(_, c, _)| c[2].chars().count()).max();
        let avail = inner_w.saturating_sub(span_w.unwrap_or(0));
        // The guides at four cells a level, or two where the deepest name
        // would not fit whole beside the type and value.
        let deepest = cells
            .iter()
            .map(|((m, g, name), _, _)| {
                m.chars().count() + g.chars().count() + name.chars().count()
            })
            .max();
        let tight = deepest.unwrap_or(0) + 2 + TREE_MIN_TYPE + TREE_MIN_VALUE > avail;
        let cells: Vec<([String; 4], &kafkashark::kafka::Node)> = cells
            .into_iter()
            .map(|((marker, guides, name), [ty, value, span], n)| {
                let name = match tight {
                    true => format!("{marker}{}{name}", compact_guides(guides)),
                    false => format!("{marker}{guides}{name}"),
                };
                ([name, ty, value, span], n)
            })
            .collect();
        let maxw = |k: usize| cells.iter().map(|(c, _)| c[k].chars().count()).max();
        let (name_w, ty_w, val_w) = tree_columns(
            avail,
            maxw(0).unwrap_or(0) + 2,
            maxw(1).unwrap_or(0) + 2,
            maxw(2).unwrap_or(0),
        );
        for (k, ([name, ty, value, span], n)) in cells.into_iter().enumerate() {
            let row = app.tree.offset + k;
            let vstyle = if n.error.is_some() {
                pal.role(Role::Malformed)
            } else {
                Style::default()
            };
            let mut line = Line::from(vec![
                Span::styled(fit_gap(&name, name_w), pal.role(n.role)),
                Span::styled(fit_gap(&ty, ty_w), pal.fg(Color::Gray)),
                Span::styled(fit(&value, val_w), vstyle),
                Span::styled(span, pal.fg(Color::DarkGray)),
            ]);
            if row == app.tree.cursor {
                line = line.patch_style(Style::default().add_modifier(Modifier::REVERSED));
            }
            lines.push(line);
        }
    } else if app.entries.is_empty() {
        lines.push(Line::from(if app.done {
            "no Kafka messages found (try --ports)"
        } else {
            "loading…"
        }));
    }
    let mut b = titled(&title, inner_w, app.focus == Pane::Tree, pal);
    // The field's problem first, else its description.
    let bottom = app
        .selected_node()
        .and_then(|n| match (&n.error, &n.about) {
            (Some(e), _) => Some((
                format!(" MALFORMED: {} ", escape_text(e)),
                pal.role(Role::Malformed),
            )),
            (None, Some(a)) => Some((format!(" {} ", escape_text(a)), Style::default())),
            (None, None) => None,
        });
    if let Some((text, style)) = bottom {
        b = b.title_bottom(Span::styled(
            fit_title(&text, inner_w.saturating_sub(2)),
            style,
        ));
    }
    f.render_widget(Paragraph::new(lines).block(b), area);
}

/// The tree's name, type and value column widths in `avail` cells, for
/// the widths the rows shown want. Names come first: a field's name (after
/// its guides, deep in a record batch) is what says what it is, so it gets
/// all it wants but a few cells left for the type and the value; the type
/// then takes at most 35 % of the rest, and the value what remains.
pub fn tree_columns(avail: usize, name: usize, ty: usize, value: usize) -> (usize, usize, usize) {
    let least = ty.min(TREE_MIN_TYPE) + value.min(TREE_MIN_VALUE);
    let name_w = name.min(avail.saturating_sub(least)).max(10.min(avail));
    let rest = avail.saturating_sub(name_w);
    let ty_w = ty
        .min((rest * 35 / 100).max(ty.min(TREE_MIN_TYPE)))
        .min(rest);
    (name_w, ty_w, rest - ty_w)
}

/// Cells the tree's type and value columns keep before names are cut.
const TREE_MIN_TYPE: usize = 8;
const TREE_MIN_VALUE: usize = 12;

/// A tree row's guides ([`super::app::TreeRow::guides`]) at two cells a
/// level instead of four (`|   ` → `| `, `+-- ` → `+ `).
pub fn compact_guides(guides: &str) -> String {
    let chars: Vec<char> = guides.chars().collect();
    chars
        .chunks(4)
        .map(|c| match c.first() {
            Some('|') => "| ",
            Some('+') => "+ ",
            _ => "  ",
        })
        .collect()
}

fn fit_title(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        fit(s, w.saturating_sub(1)) + " "
    }
}

/// Width of the offset column for a source of `len` bytes.
fn offset_width(len: usize) -> usize {
    let bits = usize::BITS - len.saturating_sub(1).leading_zeros();
    (bits as usize).div_ceil(4).max(4)
}

/// The byte under a screen position of the byte view.
pub fn hex_byte_at(app: &App, lay: &Layout, col: u16, row: u16) -> Option<usize> {
    let r = lay.hex;
    let y = usize::from(row.checked_sub(r.y + 1)?);
    if y >= lay.hex_rows {
        return None;
    }
    let x = usize::from(col.checked_sub(r.x + 1)?);
    let len = app.hex_bytes().len();
    let ow = offset_width(len);
    let hex0 = ow + 2;
    let j = if x >= hex0 && x < hex0 + 49 {
        let rel = x - hex0;
        let rel = if rel >= 24 { rel - 1 } else { rel };
        rel / 3
    } else if x >= hex0 + 50 && x < hex0 + 66 {
        x - hex0 - 50
    } else {
        return None;
    };
    let b = (app.hex.offset_row + y) * 16 + j.min(15);
    (b < len).then_some(b)
}

fn render_hex(f: &mut Frame, app: &App, pal: &Palette, area: Rect, rows: usize) {
    let bytes = app.hex_bytes();
    let inner_w = usize::from(area.width.saturating_sub(2));
    let ow = offset_width(bytes.len());
    let hl = app.highlight();
    let in_hl = |b: usize| hl.is_some_and(|(s, e)| (s..e).contains(&b));
    let cursor = app.hex.cursor;
    let mut lines = Vec::new();
    for r in app.hex.offset_row..app.hex.offset_row + rows {
        let start = r * 16;
        if start >= bytes.len() {
            break;
        }
        let mut hex_spans = vec![Span::styled(
            format!("{start:0ow$x}  "),
            pal.fg(Color::DarkGray),
        )];
        let mut ascii_spans = vec![Span::raw(" ")];
        for j in 0..16 {
            let b = start + j;
            if j == 8 {
                hex_spans.push(Span::raw(" "));
            }
            let Some(&v) = bytes.get(b) else {
                hex_spans.push(Span::raw("   "));
                continue;
            };
            let role = app.hex.roles.get(b).copied().unwrap_or(Role::Message);
            let mut style = pal.role(role);
            if in_hl(b) {
                style = style.add_modifier(Modifier::REVERSED);
            }
            let mut cstyle = style;
            if b == cursor && app.focus == Pane::Hex {
                cstyle = cstyle.add_modifier(Modifier::UNDERLINED | Modifier::BOLD);
            }
            // Secret bytes (SASL tokens, passwords, HMACs) are never drawn.
            let (text, ch) = match app.hex.secret.get(b) {
                Some(true) => ("••".to_string(), '•'),
                _ if v.is_ascii_graphic() || v == b' ' => (format!("{v:02x}"), v as char),
                _ => (format!("{v:02x}"), '.'),
            };
            hex_spans.push(Span::styled(text, cstyle));
            // The gap after a byte takes the highlight when the next byte has it too.
            let gap = in_hl(b) && in_hl(b + 1) && j != 7 && j != 15;
            hex_spans.push(Span::styled(
                " ",
                if gap { style } else { Style::default() },
            ));
            ascii_spans.push(Span::styled(ch.to_string(), cstyle));
        }
        hex_spans.extend(ascii_spans);
        lines.push(Line::from(hex_spans));
    }
    // The legend, in the seed's words.
    let wide = inner_w >= 96;
    let mut legend = Vec::new();
    for (k, (role, label)) in LEGEND.iter().enumerate() {
        if k > 0 {
            legend.push(Span::raw(if wide { "  " } else { " " }));
        }
        if wide {
            legend.push(Span::styled("■ ", pal.role(*role)));
        }
        legend.push(Span::styled(*label, pal.role(*role)));
    }
    while lines.len() < rows {
        lines.push(Line::default());
    }
    lines.push(Line::from(legend));
    // A message decrypted from TLS records says so, with the connection's TLS.
    let tls = (app.detail.as_ref())
        .and_then(|d| app.tls.get(d.raw.stream))
        .filter(|t| t.keys == "decrypted" || t.decrypted.iter().any(|&n| n > 0));
    let title = match (app.hex.source, &app.detail) {
        (0, _) if tls.is_some() => {
            let t = tls.map_or(String::new(), |t| {
                let v = t.version.as_deref().unwrap_or("TLS");
                format!("{v} {}", t.suite.as_deref().unwrap_or(""))
            });
            format!(
                " bytes: message, decrypted from {t} records ({} bytes) ",
                bytes.len()
            )
        }
        (0, _) => format!(" bytes: message ({} bytes) ", bytes.len()),
        (n, Some(d)) => {
            let name = d.source(n).map_or(String::new(), |s| escape_text(&s.name));
            format!(" bytes: #{n} {name} ({} bytes) ", bytes.len())
        }
        (n, None) => format!(" bytes: #{n} "),
    };
    let mut b = titled(&title, inner_w, app.focus == Pane::Hex, pal);
    if !bytes.is_empty() {
        let pos = match hl {
            Some((s, e)) => format!(" 0x{cursor:04x} · field 0x{s:04x}..0x{e:04x} ({}B) ", e - s),
            None => format!(" 0x{cursor:04x} "),
        };
        b = b.title_bottom(Line::from(pos).alignment(Alignment::Right));
    }
    f.render_widget(Paragraph::new(lines).block(b), area);
}

fn render_line(f: &mut Frame, app: &App, pal: &Palette, area: Rect) {
    let line = if let Some(bar) = &app.bar {
        let prompt = match bar.kind {
            BarKind::Save => "save to: ",
            BarKind::Export => "export to: ",
            BarKind::Columns => "columns: ",
            BarKind::Filter => "/",
        };
        let mut spans = vec![Span::styled(
            prompt,
            pal.fg(Color::LightCyan).add_modifier(Modifier::BOLD),
        )];
        let err_col = bar.error.as_ref().map(|(c, _)| *c);
        let bad = pal.or(
            Style::default().fg(Color::White).bg(Color::Red),
            Modifier::UNDERLINED,
        );
        // Every character, then the cell after the last (where the cursor may stand).
        for (k, c) in bar.text.chars().map(Some).chain([None]).enumerate() {
            let c = c.map_or(" ".to_string(), |c| escape_text(&c.to_string()));
            let mut st = Style::default();
            if err_col == Some(k) {
                st = bad;
            }
            if k == bar.cursor {
                st = st.add_modifier(Modifier::REVERSED);
            }
            spans.push(Span::styled(c, st));
        }
        spans.push(match &bar.error {
            // What Tab could complete to, before the half-typed word's error.
            _ if bar.choices.is_some() => Span::styled(
                format!("  Tab: {}", bar.choices.as_deref().unwrap_or_default()),
                pal.fg(Color::LightCyan),
            ),
            Some((col, msg)) => Span::styled(
                format!("  ✗ col {col}: {}", escape_text(msg)),
                pal.fg(Color::LightRed).add_modifier(Modifier::BOLD),
            ),
            None if bar.kind == BarKind::Export => Span::styled(
                "  Enter writes: .txt tree, .json tree, .hex dump, .bin bytes, .key/.value of the record at the cursor; Esc cancels",
                pal.fg(Color::Green),
            ),
            None if bar.kind == BarKind::Save => Span::styled(
                format!(
                    "  Enter saves the packets of the {} messages listed (pcap if .pcap), Esc cancels",
                    app.view.len()
                ),
                pal.fg(Color::Green),
            ),
            None if bar.kind == BarKind::Columns => Span::styled(
                format!(
                    "  ✓ Enter shows them (kept for next time), Esc cancels; Tab completes: {}",
                    columns::names().join(" ")
                ),
                pal.fg(Color::Green),
            ),
            None => Span::styled("  ✓ Enter applies, Esc cancels", pal.fg(Color::Green)),
        });
        Line::from(spans)
    } else if let Some(n) = &app.notice {
        Line::from(Span::styled(escape_text(n), pal.fg(Color::LightYellow)))
    } else if let Some(e) = &app.load_error {
        Line::from(Span::styled(
            format!("read error: {}", escape_text(e)),
            pal.fg(Color::LightRed),
        ))
    } else {
        Line::default()
    };
    f.render_widget(Paragraph::new(line), area);
}

fn render_status(f: &mut Frame, app: &App, pal: &Palette, area: Rect) {
    let s = &app.stats;
    let name = std::path::Path::new(&app.cfg.title)
        .file_name()
        .map_or(app.cfg.title.clone(), |n| n.to_string_lossy().into_owned());
    let mut parts = vec![escape_text(&name)];
    parts.push(format!("{}/{} msgs", app.view.len(), app.entries.len()));
    if app.dropped > 0 {
        // Ring mode: the oldest messages left the list.
        parts.push(format!("{} oldest dropped", app.dropped));
    }
    // Counters that give way first on narrow terminals.
    let mut optional = Vec::new();
    if app.cfg.kind != SourceKind::Message {
        optional.push(format!("{} pkts", s.frames));
        optional.push(format!("{} streams", s.streams));
        optional.push(format!("gaps {}", s.gaps));
        if s.late > 0 {
            optional.push(format!("late {}", s.late));
        }
        optional.push(format!("resyncs {}", s.resyncs));
    }
    if let Some(d) = s.kernel_drops {
        parts.push(format!("drops {d}"));
    }
    if !app.done {
        const SPIN: [char; 4] = ['|', '/', '-', '\\'];
        let spin = SPIN[(app.ticks % 4) as usize];
        parts.push(match app.progress {
            (b, Some(t)) if t > 0 && app.cfg.kind == SourceKind::File => {
                format!("loading {}% {spin}", (b.min(t) * 100 / t))
            }
            _ if app.cfg.kind == SourceKind::Live => format!("capturing {spin}"),
            _ => format!("loading {spin}"),
        });
    }
    if app.follow {
        parts.push("FOLLOW".into());
    }
    if app.stats_view.is_some() {
        parts.push("STATS".into());
    }
    parts.push(format!("sort {}", app.sort.label()));
    if app.time != TimeFormat::Relative {
        parts.push(format!("time {}", app.time.name()));
    }
    if !app.filter_text.is_empty() {
        parts.push(format!("filter: {}", escape_text(&app.filter_text)));
    }
    let right = "? help";
    let w = usize::from(area.width);
    let join = |opt: &[String]| [&parts[..2], opt, &parts[2..]].concat().join(" │ ");
    let mut left = join(&optional);
    while left.chars().count() + right.len() + 2 > w && !optional.is_empty() {
        optional.pop();
        left = join(&optional);
    }
    let text = if left.chars().count() + right.len() + 2 <= w {
        format!("{}{right}", fit(&left, w - right.len()))
    } else {
        fit(&left, w)
    };
    let style = pal.or(
        Style::default().bg(Color::DarkGray).fg(Color::White),
        Modifier::REVERSED,
    );
    f.render_widget(Paragraph::new(Line::from(Span::styled(text, style))), area);
}

/// Every key, for the help screen and docs/tui.md.
pub const KEYS: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "this help (any key closes it)"),
    ("Tab, Shift-Tab", "next / previous pane"),
    ("↑ ↓, j k", "move (list, tree; bytes: a row)"),
    ("← →, h l", "tree: collapse/parent, expand; bytes: a byte"),
    ("PgUp, PgDn", "a page up / down"),
    (
        "g, G, Home, End",
        "first / last (list: G stays with the newest)",
    ),
    ("Enter, Space", "tree: expand/collapse; list: go to tree"),
    ("e, c", "expand all / collapse all"),
    ("p", "jump request ↔ response (peer)"),
    ("f", "frames/TLS records carrying its bytes"),
    ("/", "filter (Enter applies, ↑↓ history, Tab completes)"),
    (
        "w, x",
        "save the listed packets / export this message, to a file",
    ),
    ("C", "list columns: which, in what order (kept)"),
    ("s", "sort: capture → latency desc → size desc"),
    ("t", "time: relative, delta, local, UTC, epoch"),
    (
        "F",
        "follow the selected message's connection (again: back)",
    ),
    (
        "S",
        "stats: latency, errors, clients, groups, lag, delivery",
    ),
    (
        "1-8, r",
        "stats: section, refresh (Enter: the row's messages)",
    ),
    (
        "mouse",
        "click selects a message, field or byte; wheel scrolls",
    ),
];

/// The help's closing note, below the keys.
const HELP_NOTE: &str =
    "Bytes are coloured by what they belong to; the selected field is reversed.";

/// The help's lines in all, and how many a terminal `height` rows high shows.
pub fn help_rows(height: u16) -> (usize, usize) {
    let total = KEYS.len() + 2;
    (total, total.min(usize::from(height.saturating_sub(2))))
}

fn render_help(f: &mut Frame, scroll: usize, pal: &Palette, area: Rect) {
    let kw = KEYS.iter().map(|(k, _)| k.chars().count()).max();
    let key = pal.fg(Color::LightCyan).add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(fit(k, kw.unwrap_or(0) + 2), key),
                Span::raw(*d),
            ])
        })
        .collect();
    lines.push(Line::default());
    lines.push(Line::from(HELP_NOTE));
    let (total, rows) = help_rows(area.height);
    let first = scroll.min(total - rows);
    let lines: Vec<Line> = lines.into_iter().skip(first).take(rows).collect();
    let w = (area.width.saturating_sub(4)).min(78);
    let h = (u16::try_from(rows).unwrap_or(u16::MAX) + 2).min(area.height);
    let x = area.x + (area.width - w) / 2;
    let r = Rect::new(x, area.y + (area.height - h) / 2, w, h);
    f.render_widget(Clear, r);
    let mut b = block(Line::from(" kafkashark keys "), true, pal);
    if rows < total {
        // Not all of it fits: where this is, and how to see the rest.
        b = b.title_bottom(
            Line::from(format!(
                " {}-{} of {total} · j k PgUp PgDn scroll ",
                first + 1,
                first + rows
            ))
            .alignment(Alignment::Right),
        );
    }
    f.render_widget(Paragraph::new(lines).block(b), r);
}

// ----- the stats view ------------------------------------------------------------

/// Where the stats view's parts go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsLayout {
    /// The section tabs (one row).
    pub tabs: Rect,
    /// What the figures cover, and the keys (one row).
    pub note: Rect,
    /// The throttle sparkline (Throttle section).
    pub top: Option<Rect>,
    /// The section's table.
    pub table: Rect,
    /// Rows of the table (header excluded).
    pub table_rows: usize,
    /// The latency histogram (Latency), the generations (Groups), the
    /// client (Clients), the lag series (Lag) or the row in full (Delivery).
    pub detail: Option<Rect>,
}

/// Splits the screen for the stats view: it takes the place of the three panes.
pub fn stats_layout(app: &App) -> StatsLayout {
    let (w, h) = app.size;
    let main_h = h.saturating_sub(1 + u16::from(has_line(app)));
    let tabs = Rect::new(0, 0, w, main_h.min(1));
    let note = Rect::new(0, 1.min(main_h), w, main_h.saturating_sub(1).min(1));
    let top_y = main_h.min(2);
    let rest = main_h.saturating_sub(2);
    let tab = app.stats_view.as_ref().map_or(StatsTab::Latency, |v| v.tab);
    let (top_h, detail_h) = match tab {
        StatsTab::Latency
        | StatsTab::Groups
        | StatsTab::Clients
        | StatsTab::Lag
        | StatsTab::Delivery
            if rest >= 14 =>
        {
            (0, (rest * 2 / 5).clamp(6, 14))
        }
        StatsTab::Throttle if rest >= 9 => ((rest / 3).clamp(5, 10), 0),
        _ => (0, 0),
    };
    let table_h = rest.saturating_sub(top_h + detail_h);
    let top = (top_h > 0).then(|| Rect::new(0, top_y, w, top_h));
    let table = Rect::new(0, top_y + top_h, w, table_h);
    let detail = (detail_h > 0).then(|| Rect::new(0, top_y + top_h + table_h, w, detail_h));
    StatsLayout {
        tabs,
        note,
        top,
        table,
        table_rows: usize::from(table_h.saturating_sub(3)),
        detail,
    }
}

/// The tabs' labels (with their row counts) and the columns they take: the
/// full names when they fit in `width`, else the short ones.
fn stats_tabs(v: Option<&StatsView>, width: u16) -> Vec<(StatsTab, String, std::ops::Range<u16>)> {
    let count = |t: StatsTab| v.map_or(0, |v| v.data.rows(t).len());
    let full = |i: usize, t: StatsTab| format!(" {} {} ({}) ", i + 1, t.title(), count(t));
    let all: usize = StatsTab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| full(i, *t).chars().count() + 1)
        .sum();
    let short = all > usize::from(width) + 1;
    let mut x = 0u16;
    StatsTab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let label = match short {
                true => format!(" {} {} {} ", i + 1, t.short(), count(*t)),
                false => full(i, *t),
            };
            let (at, w) = (x, u16::try_from(label.chars().count()).unwrap_or(0));
            x += w + 1;
            (*t, label, at..at + w)
        })
        .collect()
}

/// The section whose tab is at column `x` of the tab row.
pub fn stats_tab_at(app: &App, tabs: Rect, x: u16) -> Option<StatsTab> {
    let x = x.checked_sub(tabs.x)?;
    stats_tabs(app.stats_view.as_ref(), tabs.width)
        .into_iter()
        .find_map(|(t, _, cols)| cols.contains(&x).then_some(t))
}

/// A section's table title, and what its table says when it has no rows.
fn section_text(t: StatsTab) -> (&'static str, &'static str) {
    match t {
        StatsTab::Latency => (
            " latency per API, ms (request's last frame → response's first frame) ",
            "no messages",
        ),
        StatsTab::Throttle => (" throttled responses, per client and API ", "no throttling"),
        StatsTab::Errors => (
            " error codes in responses, with their topic and partition ",
            "no errors",
        ),
        StatsTab::Clients => (
            " clients: id, software (ApiVersions v3+), addresses, versions ",
            "no clients",
        ),
        StatsTab::Groups => (" consumer groups ", "no consumer groups"),
        StatsTab::Lag => (
            " consumer lag, records: HighWatermark − next fetch offset, per consumer and partition ",
            "no lag: no Fetch response with a high watermark for a partition asked",
        ),
        StatsTab::Delivery => (
            " ms: record age (Fetch response − batch MaxTimestamp), Produce → Fetch delivery, producers' batch gaps ",
            "no record batches produced or fetched",
        ),
        StatsTab::Tls => (
            " TLS connections: version, suite, SNI, handshake ms, keys, bytes client/server, alerts ",
            "no TLS connections",
        ),
    }
}

fn render_stats(f: &mut Frame, app: &App, v: &StatsView, pal: &Palette) {
    let lay = stats_layout(app);
    let d = &v.data;
    // The tabs.
    let mut spans = Vec::new();
    for (t, label, _) in stats_tabs(Some(v), lay.tabs.width) {
        let n = d.rows(t).len();
        let st = if t == v.tab {
            pal.fg(Color::LightCyan)
                .add_modifier(Modifier::BOLD | Modifier::REVERSED)
        } else if n == 0 {
            pal.fg(Color::DarkGray)
        } else {
            Style::default()
        };
        spans.push(Span::styled(label, st));
        spans.push(Span::raw(" "));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), lay.tabs);
    // What the figures cover.
    let r = &d.report.summary;
    let secs = match (r.first_ts, r.last_ts) {
        (Some(a), Some(b)) => format!(", {:.3} s", b - a),
        _ => String::new(),
    };
    let mut note = vec![Span::raw(format!(
        "{} messages{secs}{}",
        d.messages,
        if app.done {
            ""
        } else {
            " (loading: refreshes every second)"
        }
    ))];
    // Each decode bound that was hit, and what it leaves partial.
    let cuts = [
        (
            d.truncated(),
            d.decoded,
            d.wanted,
            "trees",
            "error places, software and groups",
        ),
        (
            d.lag_truncated(),
            d.lag_decoded,
            d.lag_wanted,
            "Fetch/Produce trees",
            "lag and delivery",
        ),
    ];
    for (_, n, of, what, partial) in cuts.into_iter().filter(|c| c.0) {
        note.push(Span::styled(
            format!(" · TRUNCATED: {n} of {of} {what} decoded; {partial} are partial"),
            pal.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ));
    }
    note.push(Span::styled(
        " · Enter: its messages · Tab/1-8 · r refresh · Esc close",
        pal.fg(Color::DarkGray),
    ));
    f.render_widget(Paragraph::new(Line::from(note)), lay.note);

    if let Some(top) = lay.top {
        render_throttle_spark(f, v, pal, top);
    }
    render_stats_table(f, v, pal, &lay);
    if let Some(det) = lay.detail {
        match v.tab {
            StatsTab::Latency => render_histogram(f, v, pal, det),
            StatsTab::Groups => render_generations(f, v, pal, det),
            StatsTab::Clients => render_client(f, v, pal, det),
            StatsTab::Lag => render_lag(f, v, pal, det),
            StatsTab::Delivery => render_delivery_row(f, v, pal, det),
            _ => {}
        }
    }
}

fn render_stats_table(f: &mut Frame, v: &StatsView, pal: &Palette, lay: &StatsLayout) {
    let area = lay.table;
    let inner_w = usize::from(area.width.saturating_sub(2));
    let cols = columns(v.tab);
    let plan = col_plan(cols, inner_w);
    let fitted: Vec<(usize, bool)> = plan.iter().map(|&(i, w)| (w, cols[i].right)).collect();
    let join = |cell: &dyn Fn(usize) -> String| {
        row_text(
            &fitted,
            &plan.iter().map(|&(i, _)| cell(i)).collect::<Vec<_>>(),
        )
    };
    let header = join(&|i| cols[i].title.to_string());
    let (title, empty) = section_text(v.tab);
    let mut spark_marks: Vec<(Rect, Vec<u64>)> = Vec::new();
    let mut lines = vec![header_line(&header, inner_w)];
    let t = v.tab.index();
    let rows = v.data.rows(v.tab);
    if rows.is_empty() {
        lines.push(Line::from(Span::styled(empty, pal.fg(Color::Green))));
    }
    let end = (v.offset[t] + lay.table_rows).min(rows.len());
    for (k, row) in rows.iter().enumerate().take(end).skip(v.offset[t]) {
        let text = join(&|i| row.cells.get(i).cloned().unwrap_or_default());
        let mut st = if row.trouble {
            pal.fg(Color::LightRed)
        } else {
            Style::default()
        };
        if k == v.sel[t] {
            st = st.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::from(Span::styled(fit(&text, inner_w), st)));
    }
    let mut b = titled(title, inner_w, true, pal);
    // The lag rows' series, a sparkline in their last column.
    let spark = plan
        .iter()
        .position(|&(i, _)| i == SERIES_COL)
        .filter(|_| v.tab == StatsTab::Lag);
    if let Some(k) = spark {
        let x = plan.iter().take(k).map(|&(_, w)| w + 1).sum::<usize>();
        let w = plan
            .get(k)
            .map_or(0, |&(_, w)| w)
            .min(inner_w.saturating_sub(x));
        let lag = &v.data.report.lag.partitions;
        for (line, p) in lag.iter().enumerate().take(end).skip(v.offset[t]) {
            let y = area.y + 2 + u16::try_from(line - v.offset[t]).unwrap_or(u16::MAX);
            let x = area.x + 1 + u16::try_from(x).unwrap_or(u16::MAX);
            let cell = Rect::new(x, y, u16::try_from(w).unwrap_or(0), 1).intersection(area);
            let data = lag_columns(&p.series, w);
            spark_marks.push((cell, data));
        }
    }
    if let Some(row) = v.selected_row() {
        let t = fit_title(
            &format!(" Enter → {} ", escape_text(&row.filter)),
            inner_w.saturating_sub(2),
        );
        b = b.title_bottom(Line::from(t).alignment(Alignment::Right));
    }
    f.render_widget(Paragraph::new(lines).block(b), area);
    // One scale for every row, so that rows compare: the largest lag of all.
    let top = v.data.report.lag.partitions.iter().map(|p| p.max_lag).max();
    let top = top.and_then(|m| u64::try_from(m).ok()).unwrap_or(0).max(1);
    for (cell, data) in spark_marks {
        let s = Sparkline::default()
            .data(&data)
            .max(top)
            .style(pal.fg(Color::Cyan));
        f.render_widget(s, cell);
    }
}

/// A lag series (time, records) as `w` columns: the largest lag of the
/// samples each column takes (a series longer than `w`), else one a column.
/// A lag below zero (a high watermark older than the offset) draws as 0.
fn lag_columns(series: &[(f64, i64)], w: usize) -> Vec<u64> {
    let per = series.len().div_ceil(w.max(1)).max(1);
    series
        .chunks(per)
        .map(|c| {
            c.iter()
                .map(|&(_, l)| u64::try_from(l).unwrap_or(0))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// The selected lag row's series, as wide as the pane, with its figures.
fn render_lag(f: &mut Frame, v: &StatsView, pal: &Palette, area: Rect) {
    let inner_w = usize::from(area.width.saturating_sub(2)).max(1);
    let Some(p) = v
        .data
        .report
        .lag
        .partitions
        .get(v.sel[StatsTab::Lag.index()])
    else {
        f.render_widget(block(Line::from(" lag over time "), false, pal), area);
        return;
    };
    // The group's lag summed over its partitions, as `kafka-consumer-groups` gives it.
    let sums = |g: &str| {
        let lag = &v.data.report.lag.groups;
        lag.iter()
            .find(|x| x.group == g)
            .map_or(String::new(), |x| {
                format!(
                    ": Σ lag {}, Σ committed lag {}",
                    x.fetch_lag, x.committed_lag
                )
            })
    };
    let group = p.group.as_deref().map_or(String::new(), |g| {
        format!(" (group {}{})", escape_text(g), sums(g))
    });
    let title = format!(
        " {} at {}{group} on {}/{}: lag {} now, max {}, {} samples ",
        escape_text(stats_view::consumer_label(p)),
        escape_text(&p.host),
        escape_text(&p.topic),
        p.partition,
        p.lag,
        p.max_lag,
        p.series.len()
    );
    let offsets = format!(
        " fetch offset {} · next {} · high watermark {} · committed lag {} ",
        p.fetch_offset,
        p.next_offset,
        p.high_watermark,
        p.committed_lag.map_or("-".into(), |c| c.to_string())
    );
    let span = p
        .series
        .last()
        .zip(p.series.first())
        .map_or(0.0, |(b, a)| b.0 - a.0);
    let b = titled(&title, inner_w, false, pal)
        .title_bottom(Line::from(fit_title(&offsets, inner_w.saturating_sub(14))))
        .title_bottom(Line::from(format!(" +{span:.0}s ")).alignment(Alignment::Right));
    // Stretched so a short series fills the pane, as the throttle's.
    let cols = lag_columns(&p.series, inner_w);
    let stretch = (inner_w / cols.len().max(1)).max(1);
    let data: Vec<u64> = cols
        .iter()
        .flat_map(|&c| std::iter::repeat_n(c, stretch))
        .collect();
    let s = Sparkline::default()
        .block(b)
        .data(&data)
        .style(pal.fg(Color::Cyan));
    f.render_widget(s, area);
}

/// The selected Delivery row in full, wrapped (its notes are the first
/// column to go on a narrow terminal).
fn render_delivery_row(f: &mut Frame, v: &StatsView, pal: &Palette, area: Rect) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let mut spans = Vec::new();
    if let Some(row) = v.selected_row() {
        let label =
            |s: &'static str| Span::styled(s, pal.fg(Color::Gray).add_modifier(Modifier::BOLD));
        let cell = |k: usize| row.cells.get(k).cloned().unwrap_or_default();
        let (of, what) = match cell(0).as_str() {
            "age" => ("record age of ", "fetched batches, age"),
            "delivery" => (
                "produce → fetch delivery to ",
                "batches seen produced, delivered in",
            ),
            _ => (
                "batching of ",
                "batches, gap between batches for a partition",
            ),
        };
        spans.extend([label(of), Span::raw(format!("{}: ", cell(1)))]);
        spans.push(Span::raw(format!(
            "{} {what} p50 {} · p99 {} · max {} ms",
            cell(2),
            cell(3),
            cell(4),
            cell(5)
        )));
        if !cell(6).is_empty() {
            spans.extend([label(" · "), Span::raw(cell(6))]);
        }
    }
    let b = titled(" the row in full ", inner_w, false, pal);
    let p = Paragraph::new(Line::from(spans))
        .block(b)
        .wrap(ratatui::widgets::Wrap { trim: false });
    f.render_widget(p, area);
}

fn render_histogram(f: &mut Frame, v: &StatsView, pal: &Palette, area: Rect) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let row = v.data.report.apis.get(v.sel[StatsTab::Latency.index()]);
    let counts = row.and_then(|a| v.data.hist.get(&a.api_key));
    let name = row.map_or(String::new(), |a| api(a.api_name, a.api_key));
    let n: u64 = counts.map_or(0, |c| c.iter().sum());
    let title = format!(" latency histogram: {name}, {n} exchanges (log buckets, lower edges) ");
    let b = titled(&title, inner_w, false, pal);
    let Some(counts) = counts.filter(|_| n > 0) else {
        let p = Paragraph::new("no measured exchanges").block(b);
        f.render_widget(p, area);
        return;
    };
    let k = BUCKETS.len() as u16;
    let gap = 1u16;
    let bar_w = ((area.width.saturating_sub(2) + gap) / k)
        .saturating_sub(gap)
        .clamp(1, 9);
    let bars: Vec<Bar> = BUCKETS
        .iter()
        .zip(counts.iter())
        .map(|((_, label), &c)| {
            Bar::default()
                .value(c)
                .label(Line::from(*label))
                .text_value(if c == 0 { String::new() } else { c.to_string() })
        })
        .collect();
    let chart = BarChart::default()
        .block(b)
        .data(BarGroup::default().bars(&bars))
        .bar_width(bar_w)
        .bar_gap(gap)
        .bar_style(pal.fg(Color::Cyan))
        .value_style(pal.or(
            Style::default().fg(Color::Black).bg(Color::Cyan),
            Modifier::REVERSED,
        ));
    f.render_widget(chart, area);
}

fn render_throttle_spark(f: &mut Frame, v: &StatsView, pal: &Palette, area: Rect) {
    let d = &v.data;
    let inner_w = usize::from(area.width.saturating_sub(2)).max(1);
    let t = &d.report.throttle;
    if t.throttled == 0 {
        let b = block(Line::from(" throttle over time "), false, pal);
        let p = Paragraph::new(Line::from(Span::styled(
            "no throttling: no response had ThrottleTimeMs > 0",
            pal.fg(Color::Green),
        )))
        .block(b);
        f.render_widget(p, area);
        return;
    }
    // Seconds per column, so the whole capture fits; a short capture is
    // stretched, each second over the same number of columns.
    let per = d.throttle.len().div_ceil(inner_w).max(1);
    let stretch = (inner_w / d.throttle.len().max(1)).max(1);
    let data: Vec<u64> = d
        .throttle
        .chunks(per)
        .flat_map(|c| std::iter::repeat_n(c.iter().sum::<u64>(), stretch))
        .collect();
    let peak = data.iter().copied().max().unwrap_or(0);
    let unit = if per == 1 {
        "second".to_string()
    } else {
        format!("{per} s")
    };
    let title = format!(
        " throttle over time: sum of ThrottleTimeMs per {unit} (peak {peak} ms; total {} ms in {} responses, max {} ms) ",
        t.sum_ms, t.throttled, t.max_ms
    );
    let span = d.throttle.len();
    let b = titled(&title, inner_w, false, pal)
        .title_bottom(Line::from(format!(" {} UTC ", clock(d.throttle_start))))
        .title_bottom(Line::from(format!(" +{span}s ")).alignment(Alignment::Right));
    let s = Sparkline::default()
        .block(b)
        .data(&data)
        .style(pal.fg(Color::Yellow));
    f.render_widget(s, area);
}

fn render_generations(f: &mut Frame, v: &StatsView, pal: &Palette, area: Rect) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let g = v.data.report.groups.get(v.sel[StatsTab::Groups.index()]);
    let title = match g {
        Some(g) => format!(" group {}: generations ", escape_text(&g.group_id)),
        None => " generations ".into(),
    };
    let mut lines = Vec::new();
    if let Some(g) = g {
        if g.generations.is_empty() && g.heartbeat_members.is_empty() {
            lines.push(Line::from(
                "no generation seen (no successful JoinGroup response)",
            ));
        }
        let cols = [
            (5, true),
            (10, false),
            (7, true),
            (8, true),
            (9, true),
            (12, false),
            (8, true),
        ];
        if !g.generations.is_empty() {
            let head = [
                "gen",
                "protocol",
                "members",
                "join req",
                "join resp",
                "sync resp",
                "rebal ms",
                "leader",
            ];
            lines.push(header_line(&row_text(&cols, &head), inner_w));
        }
        for x in &g.generations {
            let syncs = joined(&x.sync_response_frames, ",");
            let cells = [
                x.generation_id.to_string(),
                x.protocol_name.as_deref().map_or("-".into(), escape_text),
                x.members.len().to_string(),
                x.join_request_frame.map_or("-".into(), |f| f.to_string()),
                x.join_response_frame.to_string(),
                if syncs.is_empty() { "-".into() } else { syncs },
                x.rebalance_ms.map_or("-".into(), ms),
                x.leader.as_deref().map_or("-".into(), escape_text),
            ];
            lines.push(Line::from(fit(&row_text(&cols, &cells), inner_w)));
        }
        for m in &g.heartbeat_members {
            let epochs = joined(&m.epochs, "→");
            lines.push(Line::from(fit(
                &format!(
                    "member {}: epochs {epochs}, {} heartbeats, frames {}–{}",
                    escape_text(&m.member_id),
                    m.heartbeats,
                    m.first_frame,
                    m.last_frame
                ),
                inner_w,
            )));
        }
        if !g.members.is_empty() {
            let members = joined(g.members.iter().map(|m| escape_text(m)), ", ");
            lines.push(Line::from(Span::styled(
                fit(&format!("members: {members}"), inner_w),
                pal.fg(Color::Gray),
            )));
        }
    }
    let b = titled(&title, inner_w, false, pal);
    f.render_widget(Paragraph::new(lines).block(b), area);
}

fn render_client(f: &mut Frame, v: &StatsView, pal: &Palette, area: Rect) {
    let inner_w = usize::from(area.width.saturating_sub(2));
    let c = v.data.report.clients.get(v.sel[StatsTab::Clients.index()]);
    let title = match c.map(|c| c.client_id.as_deref()) {
        Some(Some(id)) => format!(" client \"{}\" ", escape_text(id)),
        Some(None) => " client (no client id) ".into(),
        None => " client ".into(),
    };
    let mut lines = Vec::new();
    if let Some(c) = c {
        let label =
            |s: &'static str| Span::styled(s, pal.fg(Color::Gray).add_modifier(Modifier::BOLD));
        let software = match (&c.software_name, &c.software_version) {
            (Some(n), Some(v)) => format!("{} {}", escape_text(n), escape_text(v)),
            (Some(n), None) => escape_text(n),
            _ => "- (no ApiVersions v3+ request seen)".into(),
        };
        lines.push(Line::from(vec![label("software: "), Span::raw(software)]));
        let lat = c.latency_ms.as_ref().map_or("-".into(), |l| {
            format!("p50 {} p99 {} max {} ms", ms(l.p50), ms(l.p99), ms(l.max))
        });
        lines.push(Line::from(vec![
            label("requests: "),
            Span::raw(format!(
                "{} · responses {} · unanswered {} · errors {} · throttled {} · latency {lat}",
                c.requests, c.responses, c.unanswered, c.errors, c.throttled
            )),
        ]));
        let addrs = joined(c.addresses.iter().map(|a| escape_text(a)), " ");
        lines.push(Line::from(vec![label("addresses: "), Span::raw(addrs)]));
        let mut spans = vec![label("versions:")];
        let removed = pal.fg(Color::LightRed).add_modifier(Modifier::BOLD);
        for a in &c.apis {
            let text = format!(" {} v{}", api(a.api_name, a.api_key), a.version);
            spans.push(match a.removed_in_kafka_4 {
                true => Span::styled(text + "*", removed),
                false => Span::raw(text),
            });
        }
        lines.push(Line::from(spans));
        if c.apis.iter().any(|a| a.removed_in_kafka_4) {
            lines.push(Line::from(Span::styled(
                "* removed in Kafka 4.0 (KIP-896): this client cannot talk to a 4.0 broker with it",
                pal.fg(Color::LightRed),
            )));
        }
    }
    let b = titled(&title, inner_w, false, pal);
    let p = Paragraph::new(lines)
        .block(b)
        .wrap(ratatui::widgets::Wrap { trim: false });
    f.render_widget(p, area);
}
