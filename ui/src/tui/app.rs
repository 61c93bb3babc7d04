//! The terminal UI's state and its update function.
//!
//! Place in the data path: the loader's batches of [`Entry`]s and the
//! terminal's key, mouse and resize events arrive as [`Msg`]s; [`App::update`]
//! folds them into the state and returns [`Effect`]s for the shell. No I/O
//! happens here: no clock, no terminal, no files — decoding a selected message
//! is a pure function of its bytes. The render (`ui.rs`) reads this state only.
//!
//! Invariants: `entries.get(i).index() == i`; `matched.get(i)` says whether
//! entry `i` passes the filter; `view` lists the matched entries in the current
//! sort order (as `u32` positions: ring mode keeps fewer than 2^31 entries);
//! while the sort is not capture order, `keys` holds every entry's sort key; `selected`, when set, is an entry index and `list_pos` its position
//! in `view` (or the nearest row when the filter hides it); the decoded tree
//! cached in `detail` is always the selected message's.

use kafkashark::kafka::schema::ApiKey;
use kafkashark::vocab::Timestamp;
use std::collections::{HashMap, HashSet};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use kafkashark::analyzer::MessageInfo;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::framing::RawMessage;
use kafkashark::kafka::{ByteSource, DecodeOptions, Decoded, Node, Role};
use kafkashark::tls::conn::TlsEvent;
use kafkashark::topics::TopicNames;
use ratatui::layout::Position;
use std::net::SocketAddr;

use super::columns::{self, Col};
use super::index::{FactsEntry, IndexEntry};
use super::stats_view::{self, StatsData, StatsTab, SECTION_COUNT};
use super::store::{Bitset, EntryStore, Geometry, Lru};
use super::ui;
use crate::filter::{Facts, Filter, Tree};

/// One message as the loader gives it: its facts and its bytes, or where to read
/// them again (the tree is decoded on demand). The index keeps it compact
/// ([`IndexEntry`]).
#[derive(Clone, Debug)]
pub struct Entry {
    /// The facts (the JSONL contract's keys).
    pub info: MessageInfo,
    /// The message as it crossed the wire, with provenance. When `sum` is set its
    /// `bytes` were dropped: `raw.file_pieces` says where to read them again.
    pub raw: RawMessage,
    /// Fingerprint ([`fingerprint`]) of the dropped bytes: bytes read again must match it.
    pub sum: Option<u64>,
}

impl Entry {
    /// An entry that holds its message's bytes.
    pub fn new(info: MessageInfo, raw: RawMessage) -> Entry {
        Entry {
            info,
            raw,
            sum: None,
        }
    }

    /// An entry for the index: when the message says where its bytes lie in the
    /// capture file, the bytes are dropped (their fingerprint kept) and read again
    /// when shown; otherwise they are kept.
    pub fn indexed(info: MessageInfo, mut raw: RawMessage) -> Entry {
        let located: u64 = raw.file_pieces.iter().map(|&(_, n)| u64::from(n)).sum();
        if raw.file_pieces.is_empty() || located != raw.bytes.len() as u64 {
            raw.file_pieces = Vec::new();
            return Entry::new(info, raw);
        }
        let sum = fingerprint(&raw.bytes);
        raw.bytes = Default::default();
        Entry {
            info,
            raw,
            sum: Some(sum),
        }
    }

    /// True when the bytes are read again from the capture file when needed.
    #[cfg(test)]
    pub fn in_file(&self) -> bool {
        self.sum.is_some()
    }
}

/// Reads bytes of the capture file again, for entries that do not hold them.
pub trait ByteStore: Send {
    /// Fills `buf` with the file's bytes at `offset` (all of it, or an error).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

/// A 64-bit fingerprint of a message's bytes (not cryptographic: it tells a file
/// that changed under the TUI from the one that was loaded).
pub fn fingerprint(b: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (b.len() as u64).wrapping_mul(K);
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(a)).wrapping_mul(K).rotate_left(29);
    }
    for &x in words.remainder() {
        h = (h ^ u64::from(x)).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 31)
}

/// The message of `e` with its bytes: its own, or read again through `store` and
/// checked against the length and fingerprint taken when it was loaded.
pub fn message_of(e: &IndexEntry, store: Option<&dyn ByteStore>) -> Result<RawMessage, String> {
    let mut raw = e.raw();
    let Some(sum) = e.sum() else {
        return Ok(raw);
    };
    let frame = e.first_frame();
    let store = store.ok_or_else(|| format!("frame {frame}: the capture file is not open"))?;
    let bytes = RawMessage::reread(&raw.file_pieces, |off, buf| store.read_at(off, buf))
        .map_err(|err| format!("frame {frame}: cannot read the message again: {err}"))?;
    if fingerprint(&bytes) != sum {
        return Err(format!(
            "frame {frame}: the capture file changed since it was loaded"
        ));
    }
    raw.bytes = bytes.into();
    Ok(raw)
}

/// A TLS connection's event as the loader hands it on: stream, client,
/// broker, frame, what.
pub type TlsNote = (u64, u16, SocketAddr, SocketAddr, u64, TlsEvent);

/// TLS connections the UI remembers.
const TLS_SESSIONS: usize = 100_000;

/// Everything that can happen to the UI.
#[derive(Debug)]
pub enum Msg {
    /// A key was pressed.
    Key(KeyEvent),
    /// The mouse was clicked, dragged or scrolled.
    Mouse(MouseEvent),
    /// The terminal now has this size (columns, rows).
    Resize(u16, u16),
    /// Messages decoded by the loader, in capture order.
    Loaded(Vec<Entry>),
    /// Bytes of the input read so far, and its size when known.
    Progress(u64, Option<u64>),
    /// Capture counters.
    Stats(LoadStats),
    /// The time of the first frame: relative times count from it.
    Origin(Timestamp),
    /// Topic names learned by the loader (for topic-id annotations).
    Topics(Box<TopicNames>),
    /// The input could not be read further.
    LoadError(String),
    /// Something the user should know about the input (no Kafka found in it).
    Notice(String),
    /// What TLS connections showed (stream, client, broker, event).
    Tls(Vec<TlsNote>),
    /// The input has ended.
    LoadDone,
    /// Time passes (for the spinner).
    Tick,
}

/// `bytes` as a hex dump: per 16 bytes, the offset, the bytes in hex
/// (two groups of eight) and as ASCII (`.` for the others).
pub fn hex_dump(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() / 16 * 78 + 78);
    for (row, chunk) in bytes.chunks(16).enumerate() {
        let _ = write!(s, "{:08x} ", row * 16);
        for i in 0..16 {
            if i == 8 {
                s.push(' ');
            }
            match chunk.get(i) {
                Some(b) => {
                    let _ = write!(s, " {b:02x}");
                }
                None => s.push_str("   "),
            }
        }
        s.push_str("  |");
        s.extend(chunk.iter().map(|&b| match b {
            0x20..=0x7e => char::from(b),
            _ => '.',
        }));
        s.push_str("|\n");
    }
    s
}

/// What the shell must do after an update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Leave the UI.
    Quit,
    /// Save the packets of the messages listed (the view) to this file.
    Save(std::path::PathBuf),
    /// Write these bytes (an export of the selected message) to this file.
    Export(std::path::PathBuf, Vec<u8>),
}

/// Where the input comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A capture file or standard input.
    File,
    /// A live interface.
    Live,
    /// One size-prefixed message.
    Message,
}

/// Fixed settings of a session.
#[derive(Clone, Debug)]
pub struct Config {
    /// The file or interface name shown in the status bar.
    pub title: String,
    /// The kind of input.
    pub kind: SourceKind,
    /// Colours on (`--no-color` and `NO_COLOR` turn them off).
    pub color: bool,
}

/// The panes, in Tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pane {
    /// The message list.
    List,
    /// The field tree.
    Tree,
    /// The byte layout.
    Hex,
}

/// Order of the message list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Capture order.
    Capture,
    /// Slowest responses first.
    LatencyDesc,
    /// Largest messages first.
    SizeDesc,
}

impl Sort {
    /// Every order, in the order `s` steps through them.
    pub const ALL: [Sort; 3] = [Sort::Capture, Sort::LatencyDesc, Sort::SizeDesc];

    /// The name shown in the status bar.
    pub fn label(self) -> &'static str {
        match self {
            Sort::Capture => "capture",
            Sort::LatencyDesc => "latency↓",
            Sort::SizeDesc => "size↓",
        }
    }
}

/// What the bar asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BarKind {
    /// A display filter (`/`).
    #[default]
    Filter,
    /// A file to save the listed messages' packets to (`w`).
    Save,
    /// A file to export the selected message to (`x`; its extension says
    /// what: [`App::export`]).
    Export,
    /// The list's columns (`C`; [`super::columns`]).
    Columns,
}

/// The `/` bar being edited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterBar {
    /// What it asks for.
    pub kind: BarKind,
    /// The text typed.
    pub text: String,
    /// Cursor position in characters.
    pub cursor: usize,
    /// The parse error of the text, with its 0-based character column.
    pub error: Option<(usize, String)>,
    /// The words Tab could complete to, when there were several.
    pub choices: Option<String>,
    /// While Up/Down step through the filter history: the entry shown, and
    /// the text that was being typed before.
    pub recall: Option<(usize, String)>,
}

/// The stats view (`S`): its figures, section and selection.
#[derive(Clone, Debug)]
pub struct StatsView {
    /// The section shown.
    pub tab: StatsTab,
    /// Selected row of each section.
    pub sel: [usize; SECTION_COUNT],
    /// First row shown of each section.
    pub offset: [usize; SECTION_COUNT],
    /// The figures, as of the last refresh.
    pub data: StatsData,
    /// `App::ticks` at the last refresh.
    pub tick: u64,
}

impl StatsView {
    /// The selected row of the section shown.
    pub fn selected_row(&self) -> Option<&stats_view::StatsRow> {
        let t = self.tab.index();
        self.data.rows[t].get(self.sel[t])
    }
}

/// Capture counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Frames read.
    pub frames: u64,
    /// Kafka connections seen.
    pub streams: u64,
    /// Gaps in the TCP streams.
    pub gaps: u64,
    /// TCP segments that arrived after later data or after the ACK covering
    /// them (capture order), reassembled in sequence order.
    pub late: u64,
    /// Resynchronisations of the framing.
    pub resyncs: u64,
    /// Packets the kernel dropped (live only).
    pub kernel_drops: Option<u64>,
}

/// The decoded tree of the selected message.
#[derive(Clone, Debug)]
pub struct Detail {
    /// The entry it belongs to.
    pub entry: usize,
    /// The tree and its byte sources.
    pub decoded: Decoded,
    /// The message with its bytes (read again from the file when the entry does not hold them).
    pub raw: RawMessage,
}

impl Detail {
    /// Byte source `n` of the tree (nodes count them from 1; 0 is the message).
    pub fn source(&self, n: u16) -> Option<&ByteSource> {
        self.decoded.sources.get(usize::from(n).checked_sub(1)?)
    }
}

/// One visible row of the field tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeRow {
    /// Child indices from the root.
    pub path: Vec<u32>,
    /// The seed's guides before the name: `|   +-- `.
    pub guides: String,
    /// The node has children.
    pub has_children: bool,
}

/// The field tree's expansion, cursor and scroll.
#[derive(Clone, Debug, Default)]
pub struct TreeState {
    /// Paths of expanded nodes.
    pub expanded: HashSet<Vec<u32>>,
    /// Whether the user left each kind of node open, by its name path
    /// ([`kind_name`]s from the root): carried from one message to the next, as Wireshark
    /// keeps a subtree type open. At most [`MAX_REMEMBERED`] paths.
    pub remembered: HashMap<Vec<String>, bool>,
    /// The visible rows, flattened.
    pub rows: Vec<TreeRow>,
    /// Row of the cursor.
    pub cursor: usize,
    /// First row shown.
    pub offset: usize,
}

/// The byte view's source, cursor and scroll.
#[derive(Clone, Debug, Default)]
pub struct HexState {
    /// 0 = the message, n = `decoded.sources[n - 1]`.
    pub source: u16,
    /// Byte under the cursor.
    pub cursor: usize,
    /// First row (of 16 bytes) shown.
    pub offset_row: usize,
    /// What each byte of the source belongs to (the deepest node's role).
    pub roles: Vec<Role>,
    /// Bytes of redacted secrets, masked in the view.
    pub secret: Vec<bool>,
}

/// The whole UI state.
pub struct App {
    /// Session settings.
    pub cfg: Config,
    /// Every message loaded, in capture order (most of them in scratch files).
    pub entries: EntryStore,
    /// Whether each entry passes the filter.
    pub matched: Bitset,
    /// The entries shown, in sort order.
    pub view: Vec<u32>,
    /// Every entry's [`sort_key`], while the sort is not capture order.
    keys: Vec<u64>,
    /// The applied filter.
    pub filter: Option<Filter>,
    /// Its text.
    pub filter_text: String,
    /// The `/` bar, while open.
    pub bar: Option<FilterBar>,
    /// List order.
    pub sort: Sort,
    /// Time column mode.
    pub time: crate::timefmt::TimeFormat,
    /// Time of the first frame.
    pub origin: Option<Timestamp>,
    /// Focused pane.
    pub focus: Pane,
    /// Selected entry.
    pub selected: Option<usize>,
    /// Row of the selection in `view`.
    pub list_pos: usize,
    /// First list row shown.
    pub list_offset: usize,
    /// The selected message's tree.
    pub detail: Option<Detail>,
    /// Field tree state.
    pub tree: TreeState,
    /// Byte view state.
    pub hex: HexState,
    /// The key list is shown over the panes.
    pub help: bool,
    /// The first line of the help shown (a short terminal scrolls it).
    pub help_scroll: usize,
    /// A one-line message for the user (frames of a field, peer hidden, …).
    pub notice: Option<String>,
    /// Keep the newest message selected as messages arrive.
    pub follow: bool,
    /// Terminal size.
    pub size: (u16, u16),
    /// Load counters.
    pub stats: LoadStats,
    /// Bytes read and input size.
    pub progress: (u64, Option<u64>),
    /// The input has ended.
    pub done: bool,
    /// Why loading stopped early.
    pub load_error: Option<String>,
    /// Topic ids → names.
    pub topics: TopicNames,
    /// Ticks seen (spinner).
    pub ticks: u64,
    /// The stats view, while open (it replaces the panes).
    pub stats_view: Option<StatsView>,
    /// Most messages the stats view decodes per refresh.
    pub stats_limit: usize,
    /// Reads entries' bytes again from the capture file (`None`: entries hold them).
    pub store: Option<Box<dyn ByteStore>>,
    /// Most entries the index keeps (ring mode): past it the oldest are dropped.
    pub max_entries: usize,
    /// While one connection is followed (`F`): its stream, its endpoints'
    /// text, and the filter to go back to.
    pub followed: Option<(u64, String, String)>,
    /// Filters applied, oldest first (at most [`HISTORY`]); the shell keeps
    /// them between sessions.
    pub history: Vec<String>,
    /// The capture files the listed messages can be saved from (`w`), as
    /// read together: `None` for standard input, a live capture or a
    /// single message.
    pub save_from: Option<Vec<String>>,
    /// The TLS connections: what each showed (the stats view's TLS section).
    pub tls: kafkashark::stats::tls::TlsTable,
    /// The TLS connections' client randoms by (capture, client, broker):
    /// saved whole (`w`) when a message of theirs is.
    pub tls_sessions: rustc_hash::FxHashMap<(u16, SocketAddr, SocketAddr), [u8; 32]>,
    /// Entries dropped from the front of the index by ring mode.
    pub dropped: u64,
    /// Messages recently read again from the file, by entry index plus `dropped`.
    recent: Lru<RawMessage>,
    /// The list's columns, in order ([`columns`]).
    pub columns: Vec<Col>,
    /// False once the `C` bar changed them: the shell keeps them at exit.
    pub columns_saved: bool,
    /// The widest text of each column shown among the messages loaded, by
    /// [`Col`] (`partitions`, `records` and `notes` are measured on screen).
    pub col_want: [usize; columns::SPECS.len()],
    /// The highest connection whose endpoints were measured for `col_want`.
    widest_stream: Option<u64>,
    /// The names of the captures read together (a message's
    /// `MessageInfo::capture` is its place in them): the `capture` column
    /// and filter field.
    pub captures: Vec<String>,
    /// Partitions and records of listed messages, read from their trees
    /// (those columns): by entry index plus `dropped`, at most [`ROW_FACTS`].
    row_facts: std::cell::RefCell<HashMap<u64, (String, String)>>,
}

/// Most rows whose tree facts are kept for the `partitions` and `records` columns.
const ROW_FACTS: usize = 4096;

/// Messages read again from the file that are kept for going back to them.
const RECENT: usize = 8;

/// Most entries ring mode keeps, whatever `max_entries` says: `view` holds `u32` positions.
const MAX_POSITIONS: usize = (u32::MAX / 2) as usize;

/// The sort key of an entry with latency `ns` and length `len`: larger keys
/// first, ties in capture order (every latency before none).
fn sort_key(sort: Sort, (ns, len): (Option<u64>, i32)) -> u64 {
    match sort {
        Sort::Capture => 0,
        Sort::LatencyDesc => ns.map_or(0, |n| n.saturating_add(1)),
        // The sign bit flipped: i32 order as u32 order.
        Sort::SizeDesc => u64::from(len.cast_unsigned() ^ (1 << 31)),
    }
}

/// The order of entries `a` and `b` under `keys` (none: capture order).
fn by_key(keys: &[u64], a: usize, b: usize) -> std::cmp::Ordering {
    keys.get(b).cmp(&keys.get(a)).then(a.cmp(&b))
}

/// An entry's position as `view` holds it.
fn pos32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Rows the wheel scrolls.
const WHEEL_ROWS: usize = 3;

impl App {
    /// An empty UI for this input, of this size.
    pub fn new(cfg: Config, size: (u16, u16)) -> App {
        let follow = cfg.kind == SourceKind::Live;
        let focus = if cfg.kind == SourceKind::Message {
            Pane::Tree
        } else {
            Pane::List
        };
        App {
            cfg,
            entries: new_store(),
            matched: Bitset::default(),
            view: Vec::new(),
            keys: Vec::new(),
            filter: None,
            filter_text: String::new(),
            bar: None,
            sort: Sort::Capture,
            time: crate::timefmt::TimeFormat::Relative,
            origin: None,
            focus,
            selected: None,
            list_pos: 0,
            list_offset: 0,
            detail: None,
            tree: TreeState::default(),
            hex: HexState::default(),
            help: false,
            help_scroll: 0,
            notice: None,
            follow,
            size,
            stats: LoadStats::default(),
            progress: (0, None),
            done: false,
            load_error: None,
            topics: TopicNames::default(),
            ticks: 0,
            stats_view: None,
            stats_limit: stats_view::DECODE_LIMIT,
            store: None,
            max_entries: usize::MAX,
            save_from: None,
            tls: Default::default(),
            tls_sessions: Default::default(),
            history: Vec::new(),
            followed: None,
            dropped: 0,
            recent: Lru::new(RECENT),
            columns: columns::DEFAULT.to_vec(),
            columns_saved: true,
            col_want: [0; columns::SPECS.len()],
            widest_stream: None,
            captures: Vec::new(),
            row_facts: std::cell::RefCell::default(),
        }
    }

    /// Widens `col_want` to hold message `i`'s cells in the columns shown
    /// (`ui::info_cell`'s texts); a connection's endpoints once, at its
    /// first message.
    fn measure(&mut self, i: &MessageInfo) {
        let new_stream = self.widest_stream.is_none_or(|s| i.stream > s);
        if new_stream {
            self.widest_stream = Some(i.stream);
        }
        for &c in &self.columns {
            if matches!(c, Col::Route | Col::Client | Col::Broker) && !new_stream {
                continue;
            }
            if let Some(t) = ui::info_cell(c, i, &self.captures) {
                let slot = &mut self.col_want[c as usize];
                *slot = (*slot).max(t.chars().count());
            }
        }
    }

    /// Shows `cols`, measured anew on every message loaded.
    pub fn set_columns(&mut self, cols: Vec<Col>) {
        self.columns = cols;
        self.col_want = [0; columns::SPECS.len()];
        self.widest_stream = None;
        for k in 0..self.entries.len() {
            if let Some(e) = self.entries.get(k) {
                self.measure(&e.info());
            }
        }
    }

    /// The partitions and records of entry `idx` (its `partitions` and
    /// `records` cells), read from its tree the first time they are shown.
    pub fn row_facts(&self, idx: usize) -> (String, String) {
        let key = self.dropped + idx as u64;
        if let Some(f) = self.row_facts.borrow().get(&key) {
            return f.clone();
        }
        let opts = DecodeOptions {
            records_headers_only: true,
            ..DecodeOptions::default()
        };
        let tree = self.tree_of(&opts, idx as u64);
        let facts = crate::filter::partitions(&tree)
            .map(|mut parts| {
                parts.sort_unstable();
                parts.dedup();
                let records = crate::filter::records(&tree);
                (
                    parts
                        .iter()
                        .map(i128::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                    records.map_or(String::new(), |r| r.to_string()),
                )
            })
            .unwrap_or_default();
        let mut cache = self.row_facts.borrow_mut();
        if cache.len() >= ROW_FACTS {
            cache.clear();
        }
        cache.insert(key, facts.clone());
        facts
    }

    /// Folds one message into the state.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(k) => return self.key(k),
            Msg::Mouse(m) => self.mouse(m),
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.scroll_all();
                self.scroll_stats();
            }
            Msg::Loaded(batch) => self.loaded(batch),
            Msg::Progress(bytes, total) => self.progress = (bytes, total),
            Msg::Stats(s) => self.stats = s,
            Msg::Origin(ts) => self.origin = Some(ts),
            Msg::Topics(t) => self.topics = *t,
            Msg::LoadError(e) => self.load_error = Some(e),
            Msg::Notice(n) => self.notice = Some(n),
            Msg::Tls(notes) => {
                for (stream, capture, client, broker, frame, what) in notes {
                    if let TlsEvent::ClientHello { random, .. } = &what {
                        if self.tls_sessions.len() < TLS_SESSIONS {
                            self.tls_sessions.insert((capture, client, broker), *random);
                        }
                    }
                    self.tls
                        .add((stream, client, broker), frame, &what, TLS_SESSIONS);
                }
            }
            Msg::LoadDone => {
                self.done = true;
                if self.stats_view.is_some() {
                    self.refresh_stats();
                }
            }
            Msg::Tick => {
                self.ticks = self.ticks.wrapping_add(1);
                // While loading, the open stats view follows about once a second
                // (less often for big inputs: a refresh costs time per message).
                let every = stats_view::REFRESH_TICKS * (1 + self.entries.len() as u64 / 200_000);
                let stale = self.stats_view.as_ref().is_some_and(|v| {
                    v.data.messages != self.entries.len()
                        && self.ticks.wrapping_sub(v.tick) >= every
                });
                if stale && !self.done {
                    self.refresh_stats();
                }
            }
        }
        Vec::new()
    }

    // ----- loading and the view -------------------------------------------

    fn loaded(&mut self, batch: Vec<Entry>) {
        let start = self.entries.len();
        let mut touched: Vec<usize> = Vec::new();
        for e in batch {
            let idx = self.entries.len();
            self.measure(&e.info);
            let mut e = IndexEntry::new(e, self.entries.interner_mut());
            e.set_index(idx as u64);
            // The loader numbers messages from the start of the input; ring mode
            // dropped the first `dropped` of them.
            let peer = e.peer().and_then(|p| p.checked_sub(self.dropped));
            e.set_peer(peer);
            if let (Kind::Response, true, Some(p)) = (e.kind(), e.paired(), e.peer()) {
                let p = usize::try_from(p).unwrap_or(usize::MAX);
                let paired = self.entries.update(p, |req| {
                    req.set_paired(true);
                    req.set_peer(Some(idx as u64));
                });
                if paired.is_ok() && p < start {
                    touched.push(p);
                }
            }
            if self.origin.is_none() {
                self.origin = Some(e.first_ts());
            }
            if self.sort != Sort::Capture {
                self.keys
                    .push(sort_key(self.sort, (e.latency_ns(), e.length())));
            }
            self.entries.push(e);
        }
        if let Some(w) = self.entries.take_warning() {
            self.notice = Some(w);
        }
        for i in start..self.entries.len() {
            let m = self.eval(i);
            self.matched.push(m);
        }
        let mut changed = false;
        for r in touched {
            let m = self.eval(r);
            if self.matched.get(r) != m {
                self.matched.set(r, m);
                changed = true;
            }
        }
        if changed {
            self.rebuild_view();
        } else {
            let mut fresh: Vec<u32> = (start..self.entries.len())
                .filter(|&i| self.matched.get(i))
                .map(pos32)
                .collect();
            if self.sort == Sort::Capture {
                self.view.extend(fresh);
            } else {
                let keys = &self.keys;
                let cmp = |a: u32, b: u32| by_key(keys, a as usize, b as usize);
                fresh.sort_by(|&a, &b| cmp(a, b));
                let old = std::mem::take(&mut self.view);
                self.view = merge(old, fresh, cmp);
            }
            self.sync_list_pos();
        }
        let cap = self.max_entries.min(MAX_POSITIONS);
        if self.entries.len() > cap {
            // Down to 7/8 of the cap in one pass: what follows a drop is paid once per cap/8 messages.
            let keep = cap - cap / 8;
            self.drop_oldest(self.entries.len() - keep);
        }
        if self.follow && !self.view.is_empty() {
            self.select_pos(self.view.len() - 1);
        } else if self.selected.is_none() && !self.view.is_empty() {
            self.select_pos(0);
        }
    }

    /// Ring mode: drops the `k` oldest entries, counts them in `dropped`, and
    /// moves the rest down so that `entries.get(i).index() == i` still holds (a
    /// response whose request was dropped loses its peer).
    fn drop_oldest(&mut self, k: usize) {
        let k = k.min(self.entries.len());
        if k == 0 {
            return;
        }
        self.entries.drop_front(k);
        if let Some(w) = self.entries.take_warning() {
            self.notice = Some(w);
        }
        self.matched.drain_front(k);
        self.keys.drain(..k.min(self.keys.len()));
        let k32 = pos32(k);
        let gone_before =
            |pos: usize, view: &[u32]| view.iter().take(pos).filter(|&&i| i < k32).count();
        let (pos_gone, offset_gone) = (
            gone_before(self.list_pos, &self.view),
            gone_before(self.list_offset, &self.view),
        );
        self.view.retain(|&i| i >= k32);
        for i in &mut self.view {
            *i -= k32;
        }
        self.list_pos = self.list_pos.saturating_sub(pos_gone);
        self.list_offset = self.list_offset.saturating_sub(offset_gone);
        self.dropped += k as u64;
        match self.selected {
            Some(s) if s >= k => {
                self.selected = Some(s - k);
                if let Some(d) = &mut self.detail {
                    d.entry = s - k;
                }
            }
            Some(_) => {
                self.selected = None;
                self.detail = None;
            }
            None => {}
        }
        self.sync_list_pos();
        if self.selected.is_none() && !self.view.is_empty() {
            self.select_pos(self.list_pos.min(self.view.len() - 1));
        }
    }

    /// Whether entry `e` passes the filter, its peer's facts read from the index.
    fn passes(&self, f: &Filter, e: &FactsEntry) -> bool {
        let peer = e
            .peer()
            .and_then(|p| self.entries.facts(usize::try_from(p).ok()?));
        self.test(f, e, peer.as_ref())
    }

    /// Whether `e` with `peer` passes `f`: from the index, or, when `f`
    /// reads fields, with the trees of the two decoded from their bytes
    /// (read again from the capture) as a predicate asks for them.
    fn test(&self, f: &Filter, e: &FactsEntry, peer: Option<&FactsEntry>) -> bool {
        if !f.needs_tree() {
            return f.matches(e, peer);
        }
        let opts = f.decode_options();
        let tree = self.tree_of(&opts, e.index());
        let peer_tree = peer.map_or_else(Tree::none, |p| self.tree_of(&opts, p.index()));
        f.matches_with(e, peer, &tree, &peer_tree)
    }

    /// The tree of entry `i`, decoded with `opts` when first asked for;
    /// none when its bytes cannot be read.
    fn tree_of(&self, opts: &DecodeOptions, i: u64) -> Tree<'_> {
        let opts = opts.clone();
        Tree::new(move || {
            let e = self.entries.try_get(usize::try_from(i).ok()?).ok()?;
            let raw = if e.in_file() {
                message_of(&e, self.store.as_deref()).ok()?
            } else {
                e.raw()
            };
            let d = kafkashark::analyzer::redecode(&e.info(), &raw, &opts);
            Some((d, raw.bytes))
        })
    }

    fn eval(&self, i: usize) -> bool {
        let Some(f) = &self.filter else { return true };
        self.entries.facts(i).is_some_and(|e| self.passes(f, &e))
    }

    /// Recomputes `view` from `matched` and the sort.
    fn rebuild_view(&mut self) {
        let mut v: Vec<u32> = (0..self.entries.len())
            .filter(|&i| self.matched.get(i))
            .map(pos32)
            .collect();
        if self.sort != Sort::Capture {
            v.sort_by(|&a, &b| by_key(&self.keys, a as usize, b as usize));
        }
        self.view = v;
        self.sync_list_pos();
    }

    /// Puts `list_pos` on the selected entry (or the nearest row when it is hidden).
    fn sync_list_pos(&mut self) {
        if let Some(sel) = self.selected {
            if let Some(p) = self.view_position(sel) {
                self.list_pos = p;
            } else {
                self.list_pos = self.list_pos.min(self.view.len().saturating_sub(1));
            }
        }
        self.scroll_list();
    }

    fn view_position(&self, entry: usize) -> Option<usize> {
        let entry = u32::try_from(entry).ok()?;
        if self.sort == Sort::Capture {
            self.view.binary_search(&entry).ok()
        } else {
            self.view.iter().position(|&i| i == entry)
        }
    }

    /// `F`: lists only the selected message's connection, both directions in
    /// capture order (tshark's Follow TCP Stream); `F` or `Esc` again goes
    /// back to the filter before, the same message selected.
    fn follow_connection(&mut self) {
        if let Some((_, _, before)) = self.followed.take() {
            self.apply_filter(&before);
            self.notice = None;
            return;
        }
        let Some(e) = self.selected_entry() else {
            self.notice = Some("no message selected: nothing to follow".into());
            return;
        };
        let (stream, (client, broker)) = (e.stream(), e.endpoints());
        let ends = format!("{client} ↔ {broker}");
        let before = std::mem::take(&mut self.filter_text);
        if self.sort != Sort::Capture {
            self.set_sort(Sort::Capture);
        }
        self.apply_filter(&format!("stream={stream}"));
        self.notice = Some(format!(
            "following stream {stream} ({ends}): both directions in capture order; F or Esc goes back"
        ));
        self.followed = Some((stream, ends, before));
    }

    fn apply_filter(&mut self, text: &str) {
        self.filter = Filter::parse(text).ok().filter(|f| !f.is_empty());
        if let Some(f) = &mut self.filter {
            f.set_captures(&self.captures);
        }
        self.filter_text = self.filter.as_ref().map_or(String::new(), |_| text.into());
        self.matched = match &self.filter {
            None => Bitset::filled(self.entries.len(), true),
            Some(f) => self.filter_all(f),
        };
        self.rebuild_view();
        self.after_view_change();
    }

    /// Which entries pass `f`, in one pass over the index. The peer of a
    /// response is most often a request read a moment before: the last entries
    /// read are kept (by position modulo `RING`) so that it is not read again.
    fn filter_all(&self, f: &Filter) -> Bitset {
        const RING: usize = 4096;
        let mut ring: Vec<Option<FactsEntry>> = vec![None; RING];
        let mut m = Bitset::default();
        for (i, e) in self.entries.iter_facts().enumerate() {
            let Ok(e) = e else {
                m.push(false);
                continue;
            };
            let fetched;
            let peer = match e.peer().and_then(|p| usize::try_from(p).ok()) {
                None => None,
                Some(p) => match ring.get(p % RING) {
                    Some(Some(r)) if r.index() == p as u64 => Some(r),
                    _ => {
                        fetched = self.entries.facts(p);
                        fetched.as_ref()
                    }
                },
            };
            m.push(self.test(f, &e, peer));
            if let Some(slot) = ring.get_mut(i % RING) {
                *slot = Some(e);
            }
        }
        m
    }

    /// Changes the sort, its keys read in one pass.
    fn set_sort(&mut self, sort: Sort) {
        self.sort = sort;
        self.keys = match sort {
            Sort::Capture => Vec::new(),
            _ => (self.entries.sort_keys())
                .map(|k| sort_key(sort, k.unwrap_or((None, 0))))
                .collect(),
        };
        self.rebuild_view();
        self.after_view_change();
    }

    /// After the view was rebuilt under the selection (`list_pos` on it when
    /// shown): a hidden selection gives way to the nearest row.
    fn after_view_change(&mut self) {
        let shown = self.selected.and_then(|s| self.view_position(s)).is_some();
        if !shown && !self.view.is_empty() {
            self.select_pos(self.list_pos.min(self.view.len() - 1));
        }
        // Nothing shown: nothing selected, no tree of a message not listed.
        if self.view.is_empty() {
            self.selected = None;
            self.detail = None;
            self.tree = TreeState::default();
            self.hex = HexState::default();
            self.list_pos = 0;
        }
        self.scroll_list();
    }

    // ----- selection --------------------------------------------------------

    /// Selects the list row `pos`.
    pub fn select_pos(&mut self, pos: usize) {
        let Some(idx) = self.view.get(pos).map(|&i| i as usize) else {
            return;
        };
        self.list_pos = pos;
        self.scroll_list();
        if self.selected != Some(idx) || self.detail.is_none() {
            self.select_entry(idx);
        }
    }

    /// The message of entry `idx` with its bytes: held by the entry, recently read,
    /// or read again from the capture file (then kept among the recent ones).
    pub fn message(&mut self, idx: usize) -> Result<RawMessage, String> {
        let e = self.entries.try_get(idx).map_err(|e| e.to_string())?;
        if !e.in_file() {
            return Ok(e.raw());
        }
        let key = self.dropped + idx as u64;
        if let Some(m) = self.recent.get(key) {
            return Ok(m);
        }
        let m = message_of(&e, self.store.as_deref())?;
        self.recent.insert(key, m.clone());
        Ok(m)
    }

    fn select_entry(&mut self, idx: usize) {
        self.selected = Some(idx);
        let raw = match self.message(idx) {
            Ok(raw) => raw,
            Err(why) => {
                self.notice = Some(why);
                self.detail = None;
                self.tree = TreeState::default();
                self.hex = HexState::default();
                return;
            }
        };
        let Some(e) = self.entries.get(idx) else {
            return;
        };
        let mut decoded =
            kafkashark::analyzer::redecode(&e.info(), &raw, &DecodeOptions::default());
        if e.kind() == Kind::Response {
            self.topics.learn(e.api_key().map(ApiKey), &decoded.root);
        }
        self.topics.annotate(&mut decoded.root);
        // The root and its children open.
        let kids = 0..decoded.root.children.len() as u32;
        let mut remembered = std::mem::take(&mut self.tree.remembered);
        if let Some(d) = &self.detail {
            remember_open(&d.decoded.root, &self.tree.expanded, &mut remembered);
        }
        let mut expanded: HashSet<Vec<u32>> = std::iter::once(Vec::new())
            .chain(kids.map(|i| vec![i]))
            .collect();
        reopen(&decoded.root, &remembered, &mut expanded);
        self.detail = Some(Detail {
            entry: idx,
            decoded,
            raw,
        });
        self.tree = TreeState {
            expanded,
            remembered,
            ..TreeState::default()
        };
        self.rebuild_rows();
        self.hex = HexState::default();
        self.field_selected();
    }

    /// The selected entry (read from the index).
    pub fn selected_entry(&self) -> Option<IndexEntry> {
        self.selected.and_then(|i| self.entries.get(i))
    }

    /// The node under the tree cursor.
    pub fn selected_node(&self) -> Option<&Node> {
        let d = self.detail.as_ref()?;
        let row = self.tree.rows.get(self.tree.cursor)?;
        node_at(&d.decoded.root, &row.path)
    }

    /// The bytes of the hex view's current source.
    pub fn hex_bytes(&self) -> &[u8] {
        let Some(d) = &self.detail else { return &[] };
        match self.hex.source {
            0 => &d.raw.bytes[..],
            n => d.source(n).map_or(&[][..], |s| &s.data[..]),
        }
    }

    /// The span (start, end) the selected field covers in the current source.
    pub fn highlight(&self) -> Option<(usize, usize)> {
        let n = self.selected_node()?;
        (n.source == self.hex.source).then(|| (n.offset, n.end()))
    }

    /// Which peer of the selected message, and whether it is shown.
    fn jump_peer(&mut self) {
        let Some(e) = self.selected_entry() else {
            return;
        };
        let Some(p) = e.peer() else {
            self.notice = Some(match e.kind() {
                Kind::Request if !e.expects_response() => {
                    "this request expects no response (acks=0)".into()
                }
                Kind::Request => "no response to this request was captured".into(),
                Kind::Response => "the request of this response was not captured".into(),
            });
            return;
        };
        let p = p as usize;
        match self.view_position(p) {
            Some(pos) => {
                self.follow = false;
                self.select_pos(pos);
            }
            None => {
                let frame = self.entries.get(p).map_or(0, |e| e.frame());
                self.notice = Some(format!("its peer (frame {frame}) is hidden by the filter"));
            }
        }
    }

    // ----- tree ------------------------------------------------------------

    fn rebuild_rows(&mut self) {
        let keep = self.tree.rows.get(self.tree.cursor).map(|r| r.path.clone());
        self.tree.rows = match &self.detail {
            Some(d) => flatten(&d.decoded.root, &self.tree.expanded),
            None => Vec::new(),
        };
        if let Some(path) = keep {
            self.tree.cursor = self.row_of(&path);
        }
        self.tree.cursor = self.tree.cursor.min(self.tree.rows.len().saturating_sub(1));
        self.scroll_tree();
    }

    /// Row of `path`, or of its nearest visible ancestor.
    fn row_of(&self, path: &[u32]) -> usize {
        let mut p = path.to_vec();
        loop {
            if let Some(i) = self.tree.rows.iter().position(|r| r.path == p) {
                return i;
            }
            if p.pop().is_none() {
                return 0;
            }
        }
    }

    fn tree_move(&mut self, to: usize) {
        if self.tree.rows.is_empty() {
            return;
        }
        self.tree.cursor = to.min(self.tree.rows.len() - 1);
        self.scroll_tree();
        self.field_selected();
    }

    /// Expands (`Some(true)`), collapses (`Some(false)`) or toggles (`None`)
    /// the node under the cursor. Expanding an expanded node goes to its
    /// first child; collapsing a collapsed one (or a leaf) goes to its parent.
    fn tree_fold(&mut self, open: Option<bool>) {
        let Some(row) = self.tree.rows.get(self.tree.cursor) else {
            return;
        };
        let (path, kids) = (row.path.clone(), row.has_children);
        let is_open = self.tree.expanded.contains(&path);
        if kids && open.unwrap_or(!is_open) != is_open {
            if is_open {
                self.tree.expanded.remove(&path);
            } else {
                self.tree.expanded.insert(path);
            }
            self.rebuild_rows();
        } else if open == Some(true) && kids {
            self.tree_move(self.tree.cursor + 1);
        } else if let (Some(false), Some((_, parent))) = (open, path.split_last()) {
            let r = self.row_of(parent);
            self.tree_move(r);
        }
    }

    fn expand_all(&mut self, on: bool) {
        let Some(d) = &self.detail else { return };
        if on {
            let mut all = HashSet::new();
            walk_paths(&d.decoded.root, &mut Vec::new(), &mut |n, path| {
                if !n.children.is_empty() {
                    all.insert(path.to_vec());
                }
            });
            self.tree.expanded = all;
        } else {
            self.tree.expanded = std::iter::once(Vec::new()).collect();
        }
        self.rebuild_rows();
        self.field_selected();
    }

    /// The tree cursor moved: the hex view follows the field (switching source).
    fn field_selected(&mut self) {
        let Some(n) = self.selected_node() else {
            self.hex = HexState::default();
            return;
        };
        let (source, offset) = (n.source, n.offset);
        if source != self.hex.source || self.hex.roles.is_empty() {
            self.hex.source = source;
            let len = self.hex_bytes().len();
            (self.hex.roles, self.hex.secret) = match &self.detail {
                Some(d) => byte_marks(&d.decoded.root, source, len),
                None => Default::default(),
            };
        }
        self.hex.cursor = offset.min(self.hex_bytes().len().saturating_sub(1));
        self.scroll_hex();
    }

    /// The hex cursor moved to `byte`: select the deepest field holding it.
    fn hex_move(&mut self, byte: usize) {
        let len = self.hex_bytes().len();
        if len == 0 {
            return;
        }
        self.hex.cursor = byte.min(len - 1);
        self.scroll_hex();
        let Some(d) = &self.detail else { return };
        let Some(path) = deepest_at(&d.decoded.root, self.hex.source, self.hex.cursor) else {
            return;
        };
        for k in 0..path.len() {
            self.tree.expanded.insert(path[..k].to_vec());
        }
        self.rebuild_rows();
        self.tree.cursor = self.row_of(&path);
        self.scroll_tree();
    }

    /// The frames that carried the selected field's bytes.
    fn frames_notice(&mut self) {
        let (Some(n), Some(d)) = (self.selected_node(), &self.detail) else {
            return;
        };
        // A field in decompressed bytes came from the compressed blob it was inflated from.
        let (mut start, mut end, mut src, mut via) = (n.offset, n.end(), n.source, None);
        while src != 0 {
            let Some(s) = d.source(src) else { break };
            via.get_or_insert_with(|| format!(" (compressed in #{src})"));
            start = s.parent_offset;
            end = s.parent_offset + s.parent_length;
            src = s.parent;
        }
        let frames = frames_of(&d.raw, start, end.max(start + 1));
        let list = ui::joined(&frames, ", ");
        let word = if frames.len() == 1 { "frame" } else { "frames" };
        // Decrypted: the TLS records too, counted in their direction.
        let records = tls_records_of(&d.raw, start, end.max(start + 1));
        let tls = match records.as_slice() {
            [] => String::new(),
            [r] => format!(", TLS record {r} of the {}'s", side(&d.raw)),
            rs => format!(
                ", TLS records {} of the {}'s",
                ui::joined(rs, ", "),
                side(&d.raw)
            ),
        };
        self.notice = Some(format!(
            "bytes 0x{start:04x}..0x{end:04x} of {}{} came in {word} {list}{tls}",
            kafkashark::kafka::tree::escape_text(&n.name),
            via.unwrap_or_default()
        ));
    }

    // ----- scrolling ---------------------------------------------------------

    fn scroll_all(&mut self) {
        self.scroll_list();
        self.scroll_tree();
        self.scroll_hex();
    }

    /// Keeps the selected row in sight, and the list full: never scrolled
    /// past its last row (a view that shrank, under a filter, shows its
    /// rows from the top instead of blank ones).
    fn scroll_list(&mut self) {
        let rows = ui::layout(self).list_rows.max(1);
        let last_page = self.view.len().saturating_sub(rows);
        self.list_offset = keep_visible(self.list_offset, self.list_pos, rows).min(last_page);
    }

    fn scroll_tree(&mut self) {
        let rows = ui::layout(self).tree_rows.max(1);
        self.tree.offset = keep_visible(self.tree.offset, self.tree.cursor, rows);
    }

    fn scroll_hex(&mut self) {
        let rows = ui::layout(self).hex_rows.max(1);
        let total = self.hex_bytes().len().div_ceil(16);
        let row = self.hex.cursor / 16;
        // Show as much of the selected field as fits.
        let mut off = keep_visible(self.hex.offset_row, row, rows);
        if let Some((s, e)) = self.highlight() {
            let (fs, fe) = (s / 16, e.saturating_sub(1) / 16);
            if fs >= off && fe >= off + rows && fs == row {
                off = fs.min(fe + 1 - rows.min(fe + 1));
                off = off.max(row + 1 - rows.min(row + 1)).min(row);
            }
        }
        self.hex.offset_row = off.min(total.saturating_sub(1));
    }

    // ----- input -----------------------------------------------------------------

    fn key(&mut self, k: KeyEvent) -> Vec<Effect> {
        if k.kind == crossterm::event::KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(k.code, KeyCode::Char('c')) {
            return vec![Effect::Quit];
        }
        if self.bar.is_some() {
            return self.bar_key(k);
        }
        if self.help {
            self.help_key(k.code);
            return Vec::new();
        }
        self.notice = None;
        match k.code {
            KeyCode::Char('q') => return vec![Effect::Quit],
            KeyCode::Char('?') => self.help = true,
            KeyCode::Char('/') => self.open_bar(),
            _ if self.stats_view.is_some() => self.stats_key(k.code),
            code => self.pane_key(code),
        }
        Vec::new()
    }

    /// A key while the help is shown: the motion keys scroll it when it is
    /// taller than the terminal, any other key closes it.
    fn help_key(&mut self, code: KeyCode) {
        let (total, rows) = ui::help_rows(self.size.1);
        let last = total.saturating_sub(rows);
        match motion(code, self.help_scroll, 1, rows.saturating_sub(1).max(1)) {
            Some(to) if last > 0 => self.help_scroll = to.min(last),
            _ => {
                self.help = false;
                self.help_scroll = 0;
            }
        }
    }

    /// Opens the `/` bar on the applied filter (leaving the stats view).
    fn open_bar(&mut self) {
        self.stats_view = None;
        let text = self.filter_text.clone();
        let cursor = text.chars().count();
        self.bar = Some(FilterBar {
            text,
            cursor,
            ..FilterBar::default()
        });
        self.validate_bar();
    }

    /// Opens the bar that asks where to save the listed messages (`w`),
    /// with a name made from the capture's.
    fn open_save_bar(&mut self) {
        let Some(from) = self.save_from.as_ref().and_then(|f| f.first()) else {
            self.notice = Some(
                "saving needs a capture file: standard input and live captures cannot be read again (capture with tcpdump -w)"
                    .into(),
            );
            return;
        };
        if self.view.is_empty() {
            self.notice = Some("no messages listed: nothing to save".into());
            return;
        }
        let stem = std::path::Path::new(from)
            .file_stem()
            .map_or("capture".into(), |s| s.to_string_lossy().into_owned());
        let what = if self.filter.is_some() {
            "filtered"
        } else {
            "saved"
        };
        let text = format!("{stem}-{what}.pcapng");
        self.bar = Some(FilterBar {
            kind: BarKind::Save,
            cursor: text.chars().count(),
            text,
            ..FilterBar::default()
        });
    }

    /// Opens the bar that asks where to export the selected message (`x`),
    /// suggesting `<capture>-frame<N>.txt`.
    fn open_export_bar(&mut self) {
        let Some(d) = &self.detail else {
            self.notice = Some("no message selected: nothing to export".into());
            return;
        };
        let stem = std::path::Path::new(&self.cfg.title)
            .file_stem()
            .map_or("message".into(), |s| s.to_string_lossy().into_owned());
        let text = format!("{stem}-frame{}.txt", d.raw.last_frame);
        self.bar = Some(FilterBar {
            kind: BarKind::Export,
            cursor: text.chars().count(),
            text,
            ..FilterBar::default()
        });
    }

    /// What exporting the selected message to `name` writes, chosen by its
    /// extension: `.txt` the field tree as the tree pane shows it, `.json`
    /// its JSON (`print -V --format jsonl`'s `fields`), `.hex` a hex dump
    /// of the message, `.bin` its bytes, `.key` / `.value` the key or value
    /// of the record at the tree's cursor (or holding it), as the wire
    /// carries them (decompressed). Else why not.
    pub fn export(&self, name: &str) -> Result<(Vec<u8>, String), String> {
        let d = self.detail.as_ref().ok_or("no message selected")?;
        let ext = std::path::Path::new(name)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let bytes = kafkashark::kafka::tree::SourceBytes {
            message: &d.raw.bytes,
            sources: &d.decoded.sources,
        };
        Ok(match ext.as_str() {
            "txt" => (
                kafkashark::kafka::tree::render_text(&d.decoded.root).into_bytes(),
                "the field tree".into(),
            ),
            "json" => {
                let mut v = Vec::new();
                d.decoded.root.write_json_in(&mut v, &bytes);
                v.push(b'\n');
                (v, "the field tree as JSON".into())
            }
            "hex" => (hex_dump(&d.raw.bytes).into_bytes(), "a hex dump".into()),
            "bin" => (d.raw.bytes.to_vec(), "the message's bytes".into()),
            "key" | "value" => {
                let path = self.tree.rows.get(self.tree.cursor).map(|r| r.path.clone());
                let mut chain = vec![&d.decoded.root];
                for &i in path.as_deref().unwrap_or_default() {
                    match chain.last().and_then(|n| n.children.get(i as usize)) {
                        Some(c) => chain.push(c),
                        None => break,
                    }
                }
                let field = chain.iter().rev().find_map(|n| n.child(&ext));
                let Some(f) = field else {
                    return Err(format!(
                        "put the tree's cursor on a record (or in one) to export its {ext}"
                    ));
                };
                if matches!(f.value, kafkashark::kafka::tree::Value::Null) {
                    return Err(format!("the record's {ext} is null"));
                }
                let b = bytes.span(f.source, f.offset, f.length);
                let b = b.ok_or_else(|| format!("the record's {ext} bytes are not at hand"))?;
                (b.to_vec(), format!("the record's {ext}"))
            }
            _ => {
                return Err(
                    "name the file .txt (tree), .json (tree as JSON), .hex (hex dump), .bin (bytes), .key or .value (the record at the cursor)"
                        .into(),
                )
            }
        })
    }

    /// A key for the panes (the stats view closed).
    fn pane_key(&mut self, code: KeyCode) {
        match code {
            KeyCode::Tab => self.focus = self.next_pane(true),
            KeyCode::BackTab => self.focus = self.next_pane(false),
            KeyCode::Char('F') => self.follow_connection(),
            KeyCode::Esc if self.followed.is_some() => self.follow_connection(),
            KeyCode::Char('t') => {
                self.time = cycle(&crate::timefmt::TimeFormat::ALL, self.time, true)
            }
            KeyCode::Char('s') => self.set_sort(cycle(&Sort::ALL, self.sort, true)),
            KeyCode::Char('S') => self.refresh_stats(),
            KeyCode::Char('p') => self.jump_peer(),
            KeyCode::Char('f') => self.frames_notice(),
            KeyCode::Char('w') => self.open_save_bar(),
            KeyCode::Char('x') => self.open_export_bar(),
            KeyCode::Char('C') => {
                let text = columns::text(&self.columns);
                self.bar = Some(FilterBar {
                    kind: BarKind::Columns,
                    cursor: text.chars().count(),
                    text,
                    ..FilterBar::default()
                });
            }
            KeyCode::Char('e') => self.expand_all(true),
            KeyCode::Char('c') => self.expand_all(false),
            code => self.focus_key(code),
        }
    }

    /// The next pane in Tab order (the list is skipped for a single message).
    fn next_pane(&self, forward: bool) -> Pane {
        let panes = [Pane::List, Pane::Tree, Pane::Hex];
        let no_list = usize::from(self.cfg.kind == SourceKind::Message);
        cycle(&panes[no_list..], self.focus, forward)
    }

    /// A key for the focused pane: its own keys, else a cursor motion.
    fn focus_key(&mut self, code: KeyCode) {
        use KeyCode::{Char, Enter, Left, Right};
        match (self.focus, code) {
            (Pane::List, Enter | Right | Char('l' | ' ')) | (Pane::Hex, Enter | Char(' ')) => {
                self.focus = Pane::Tree;
            }
            (Pane::Tree, Enter | Char(' ')) => self.tree_fold(None),
            (Pane::Tree, Right | Char('l')) => self.tree_fold(Some(true)),
            (Pane::Tree, Left | Char('h')) => self.tree_fold(Some(false)),
            (Pane::Hex, Right | Char('l')) => self.hex_move(self.hex.cursor + 1),
            (Pane::Hex, Left | Char('h')) => self.hex_move(self.hex.cursor.saturating_sub(1)),
            (pane, _) => {
                let lay = ui::layout(self);
                let rows = match pane {
                    Pane::List => lay.list_rows,
                    Pane::Tree => lay.tree_rows,
                    Pane::Hex => lay.hex_rows,
                };
                self.pane_motion(pane, code, 1, rows.saturating_sub(1).max(1), self.follow);
            }
        }
    }

    /// Moves `pane`'s cursor for a motion key ([`motion`]), `lines` lines a
    /// step (a row of 16 bytes in the byte view) and `page` steps a page; the
    /// list keeps `follow` on only at its last row.
    fn pane_motion(&mut self, pane: Pane, code: KeyCode, lines: usize, page: usize, follow: bool) {
        let (cur, step) = match pane {
            Pane::List => (self.list_pos, lines),
            Pane::Tree => (self.tree.cursor, lines),
            Pane::Hex => (self.hex.cursor, 16 * lines),
        };
        let Some(to) = motion(code, cur, step, page) else {
            return;
        };
        match pane {
            Pane::List => {
                let last = self.view.len().saturating_sub(1);
                // `G` / `End` go to the newest and stay with it as messages
                // arrive; any move keeps that only at the last row.
                let newest = matches!(code, KeyCode::Char('G') | KeyCode::End);
                self.follow = (follow || newest) && to >= last;
                self.select_pos(to.min(last));
            }
            Pane::Tree => self.tree_move(to),
            // `hex_move` stops at the last byte.
            Pane::Hex => self.hex_move(to),
        }
    }

    fn bar_key(&mut self, k: KeyEvent) -> Vec<Effect> {
        let Some(bar) = &mut self.bar else {
            return Vec::new();
        };
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Esc => {
                self.bar = None;
                return Vec::new();
            }
            KeyCode::Enter if bar.kind == BarKind::Export => {
                let text = bar.text.trim().to_string();
                match self.export(&text) {
                    Ok((bytes, what)) => {
                        self.bar = None;
                        self.notice = Some(format!("writing {what} to {text} …"));
                        return vec![Effect::Export(text.into(), bytes)];
                    }
                    Err(e) => self.notice = Some(format!("not exported: {e}")),
                }
                return Vec::new();
            }
            KeyCode::Enter if bar.kind == BarKind::Save => {
                let text = bar.text.trim().to_string();
                if text.is_empty() {
                    self.notice = Some("type the name of the file to save to".into());
                    return Vec::new();
                }
                self.bar = None;
                let n = self.view.len();
                self.notice = Some(format!(
                    "saving the packets of {n} message{} to {text} …",
                    if n == 1 { "" } else { "s" }
                ));
                return vec![Effect::Save(text.into())];
            }
            KeyCode::Enter if bar.kind == BarKind::Columns => {
                if let Some((_, msg)) = &bar.error {
                    self.notice = Some(format!("columns not changed: {msg}"));
                    return Vec::new();
                }
                if let Ok(cols) = columns::parse(&bar.text) {
                    self.bar = None;
                    self.notice = Some(format!("columns: {}", columns::text(&cols)));
                    self.columns_saved = false;
                    self.set_columns(cols);
                }
                return Vec::new();
            }
            KeyCode::Enter => {
                if let Some((col, msg)) = &bar.error {
                    self.notice = Some(format!("filter not applied: col {col}: {msg}"));
                    return Vec::new();
                }
                let text = bar.text.clone();
                self.bar = None;
                self.remember(&text);
                self.followed = None;
                self.apply_filter(&text);
                return Vec::new();
            }
            KeyCode::Up | KeyCode::Down if bar.kind == BarKind::Filter => {
                recall(bar, &self.history, k.code == KeyCode::Up);
            }
            KeyCode::Tab if bar.kind == BarKind::Filter => complete(bar),
            KeyCode::Tab if bar.kind == BarKind::Columns => complete_column(bar),
            // Readline's keys: to the start, to the end, delete to the
            // start, to the end, the word before the cursor.
            KeyCode::Char('a') if ctrl => bar.cursor = 0,
            KeyCode::Char('e') if ctrl => bar.cursor = bar.text.chars().count(),
            KeyCode::Char('u') if ctrl => {
                let at = byte_index(&bar.text, bar.cursor);
                bar.text.replace_range(..at, "");
                bar.cursor = 0;
            }
            KeyCode::Char('k') if ctrl => {
                let at = byte_index(&bar.text, bar.cursor);
                bar.text.truncate(at);
            }
            KeyCode::Char('w') if ctrl => {
                let chars: Vec<char> = bar.text.chars().collect();
                let mut from = bar.cursor.min(chars.len());
                while from > 0 && chars.get(from - 1).is_some_and(|c| c.is_whitespace()) {
                    from -= 1;
                }
                while from > 0 && chars.get(from - 1).is_some_and(|c| !c.is_whitespace()) {
                    from -= 1;
                }
                let (a, b) = (
                    byte_index(&bar.text, from),
                    byte_index(&bar.text, bar.cursor),
                );
                bar.text.replace_range(a..b, "");
                bar.cursor = from;
            }
            KeyCode::Char(_) if ctrl => return Vec::new(),
            KeyCode::Backspace => {
                if bar.cursor > 0 {
                    bar.cursor -= 1;
                    remove_char(&mut bar.text, bar.cursor);
                }
            }
            KeyCode::Delete => remove_char(&mut bar.text, bar.cursor),
            KeyCode::Left => bar.cursor = bar.cursor.saturating_sub(1),
            KeyCode::Right => bar.cursor = (bar.cursor + 1).min(bar.text.chars().count()),
            KeyCode::Home => bar.cursor = 0,
            KeyCode::End => bar.cursor = bar.text.chars().count(),
            KeyCode::Char(c) => {
                let at = byte_index(&bar.text, bar.cursor);
                bar.text.insert(at, c);
                bar.cursor += 1;
            }
            _ => return Vec::new(),
        }
        if k.code != KeyCode::Tab {
            if let Some(b) = &mut self.bar {
                b.choices = None;
            }
        }
        self.validate_bar();
        Vec::new()
    }

    /// Adds an applied filter to the history (last; an earlier copy goes).
    fn remember(&mut self, text: &str) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.history.retain(|h| h != text);
        self.history.push(text.to_string());
        let over = self.history.len().saturating_sub(HISTORY);
        self.history.drain(..over);
    }

    fn validate_bar(&mut self) {
        let Some(bar) = self.bar.as_mut() else { return };
        bar.error = match bar.kind {
            BarKind::Filter => Filter::parse(&bar.text)
                .err()
                .map(|e| (e.column, e.message)),
            BarKind::Columns => columns::parse(&bar.text)
                .err()
                .map(|e| (e.column, e.message)),
            BarKind::Save | BarKind::Export => None,
        };
    }

    fn mouse(&mut self, m: MouseEvent) {
        if self.help || self.bar.is_some() {
            return;
        }
        if self.stats_view.is_some() {
            self.stats_mouse(m);
            return;
        }
        let lay = ui::layout(self);
        let at = Position::new(m.column, m.row);
        let panes = [
            (lay.list, Pane::List),
            (Some(lay.tree), Pane::Tree),
            (Some(lay.hex), Pane::Hex),
        ];
        let Some(pane) = panes
            .into_iter()
            .find_map(|(r, p)| r?.contains(at).then_some(p))
        else {
            return;
        };
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                match pane {
                    Pane::List => {
                        // Border, then the header row.
                        let top = lay.list.map_or(0, |r| usize::from(r.y)) + 2;
                        let (offset, len) = (self.list_offset, self.view.len());
                        if let Some(pos) = item_at(m.row, top, lay.list_rows, offset, len) {
                            self.follow = false;
                            self.select_pos(pos);
                        }
                    }
                    Pane::Tree => {
                        let top = usize::from(lay.tree.y) + 1;
                        let (offset, len) = (self.tree.offset, self.tree.rows.len());
                        if let Some(idx) = item_at(m.row, top, lay.tree_rows, offset, len) {
                            let was = self.tree.cursor;
                            self.tree_move(idx);
                            // A click on the marker column toggles.
                            if was == idx || m.column <= lay.tree.x + 2 {
                                self.tree_fold(None);
                            }
                        }
                    }
                    Pane::Hex => {
                        if let Some(b) = ui::hex_byte_at(self, &lay, m.column, m.row) {
                            self.hex_move(b);
                        }
                    }
                }
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let down = m.kind == MouseEventKind::ScrollDown;
                let code = if down { KeyCode::Down } else { KeyCode::Up };
                self.pane_motion(pane, code, WHEEL_ROWS, 1, false);
            }
            _ => {}
        }
    }
}

// ----- the stats view ----------------------------------------------------------

impl App {
    /// Opens the stats view on its first section, or recomputes the open one
    /// keeping its section and selections: from every message loaded so far.
    pub fn refresh_stats(&mut self) {
        let mut data = stats_view::compute(&self.entries, self.stats_limit, self.store.as_deref());
        // TLS connections come from the loader (one without keys has no entry).
        data.report.tls = self.tls.report();
        data.rows[StatsTab::Tls.index()] = stats_view::tls_rows(&data.report.tls);
        let tick = self.ticks;
        match &mut self.stats_view {
            Some(v) => {
                v.data = data;
                v.tick = tick;
                for (t, sel) in v.sel.iter_mut().enumerate() {
                    *sel = (*sel).min(v.data.rows[t].len().saturating_sub(1));
                }
            }
            None => {
                self.stats_view = Some(StatsView {
                    tab: StatsTab::Latency,
                    sel: [0; SECTION_COUNT],
                    offset: [0; SECTION_COUNT],
                    data,
                    tick,
                });
            }
        }
        self.scroll_stats();
    }

    fn scroll_stats(&mut self) {
        let rows = ui::stats_layout(self).table_rows.max(1);
        if let Some(v) = &mut self.stats_view {
            let t = v.tab.index();
            v.offset[t] = keep_visible(v.offset[t], v.sel[t], rows);
        }
    }

    /// Shows section `tab`, its row `to` selected when given (the last when past it).
    fn stats_go(&mut self, tab: StatsTab, to: Option<usize>) {
        if let Some(v) = &mut self.stats_view {
            let t = tab.index();
            v.tab = tab;
            v.sel[t] = to
                .unwrap_or(v.sel[t])
                .min(v.data.rows[t].len().saturating_sub(1));
        }
        self.scroll_stats();
    }

    /// Enter on a row: close the view and show the row's messages in the list,
    /// through the filter bar's language (so `/` shows and edits it).
    fn stats_enter(&mut self) {
        let Some(text) = self
            .stats_view
            .as_ref()
            .and_then(StatsView::selected_row)
            .map(|r| r.filter.clone())
        else {
            self.notice = Some("no row selected".into());
            return;
        };
        if let Err(e) = Filter::parse(&text) {
            self.notice = Some(format!("filter not applied: {e}"));
            return;
        }
        self.stats_view = None;
        self.focus = Pane::List;
        self.follow = false;
        self.notice = Some(format!(
            "filter from stats: {} (/ edits it)",
            kafkashark::kafka::tree::escape_text(&text)
        ));
        self.apply_filter(&text);
        if !self.view.is_empty() {
            self.select_pos(0);
        }
    }

    fn stats_key(&mut self, code: KeyCode) {
        let Some(v) = &self.stats_view else { return };
        let (tab, sel) = (v.tab, v.sel[v.tab.index()]);
        let page = ui::stats_layout(self).table_rows.saturating_sub(1).max(1);
        match code {
            KeyCode::Char('S') | KeyCode::Esc => self.stats_view = None,
            KeyCode::Char('r') => self.refresh_stats(),
            KeyCode::Tab | KeyCode::Right | KeyCode::Char('l') => {
                self.stats_go(cycle(&StatsTab::ALL, tab, true), None)
            }
            KeyCode::BackTab | KeyCode::Left | KeyCode::Char('h') => {
                self.stats_go(cycle(&StatsTab::ALL, tab, false), None)
            }
            KeyCode::Char(c @ '1'..='9') => {
                let i = usize::from(c as u8 - b'1');
                if let Some(&t) = StatsTab::ALL.get(i) {
                    self.stats_go(t, None);
                }
            }
            KeyCode::Enter => self.stats_enter(),
            code => {
                if let Some(to) = motion(code, sel, 1, page) {
                    self.stats_go(tab, Some(to));
                }
            }
        }
    }

    fn stats_mouse(&mut self, m: MouseEvent) {
        let lay = ui::stats_layout(self);
        let Some(v) = &self.stats_view else { return };
        let (tab, t) = (v.tab, v.tab.index());
        let (sel, offset, n) = (v.sel[t], v.offset[t], v.data.rows[t].len());
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if m.row == lay.tabs.y {
                    if let Some(t) = ui::stats_tab_at(self, lay.tabs, m.column) {
                        self.stats_go(t, None);
                    }
                    return;
                }
                if !lay.table.contains(Position::new(m.column, m.row)) {
                    return;
                }
                // Border, then the header row.
                let top = usize::from(lay.table.y) + 2;
                if let Some(pos) = item_at(m.row, top, lay.table_rows, offset, n) {
                    // A click on the selected row shows its messages.
                    if pos == sel {
                        self.stats_enter();
                    } else {
                        self.stats_go(tab, Some(pos));
                    }
                }
            }
            MouseEventKind::ScrollDown => self.stats_go(tab, Some(sel + WHEEL_ROWS)),
            MouseEventKind::ScrollUp => self.stats_go(tab, Some(sel.saturating_sub(WHEEL_ROWS))),
            _ => {}
        }
    }
}

/// The item after (or before) `at` in `order`, wrapping; the first when `at` is not in it.
fn cycle<T: Copy + PartialEq>(order: &[T], at: T, forward: bool) -> T {
    let n = order.len();
    let i = order.iter().position(|&x| x == at).unwrap_or(0);
    let j = if forward { i + 1 } else { i + n - 1 };
    order[j % n]
}

/// Where a movement key takes a cursor at `cur`, `step` a line and `page`
/// lines a page; `usize::MAX` for the end (the caller clamps). `None` for
/// any other key.
fn motion(code: KeyCode, cur: usize, step: usize, page: usize) -> Option<usize> {
    Some(match code {
        KeyCode::Down | KeyCode::Char('j') => cur + step,
        KeyCode::Up | KeyCode::Char('k') => cur.saturating_sub(step),
        KeyCode::PageDown => cur + step * page,
        KeyCode::PageUp => cur.saturating_sub(step * page),
        KeyCode::Char('g') | KeyCode::Home => 0,
        KeyCode::Char('G') | KeyCode::End => usize::MAX,
        _ => return None,
    })
}

/// The item under screen row `y` of a pane whose first item is drawn on row
/// `top`, `rows` rows showing items from `offset` of `len`.
fn item_at(y: u16, top: usize, rows: usize, offset: usize, len: usize) -> Option<usize> {
    let row = usize::from(y).checked_sub(top).filter(|&r| r < rows)?;
    Some(offset + row).filter(|&i| i < len)
}

/// A scroll offset that keeps `cursor` within `rows` rows.
fn keep_visible(offset: usize, cursor: usize, rows: usize) -> usize {
    offset.min(cursor).max((cursor + 1).saturating_sub(rows))
}

fn merge(a: Vec<u32>, b: Vec<u32>, cmp: impl Fn(u32, u32) -> std::cmp::Ordering) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if cmp(b[j], a[i]) == std::cmp::Ordering::Less {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Filters the history keeps.
pub const HISTORY: usize = 200;

/// Up (`older`) or Down in the filter bar: the previous or next filter of
/// `history`; Down past the newest gives back what was being typed.
fn recall(bar: &mut FilterBar, history: &[String], older: bool) {
    let at = match (&bar.recall, older) {
        (None, true) => history.len().checked_sub(1),
        (None, false) => None,
        (Some((i, _)), true) => Some(i.saturating_sub(1)),
        (Some((i, _)), false) => Some(i + 1).filter(|&n| n < history.len()),
    };
    let text = match at.and_then(|i| history.get(i).map(|h| (i, h))) {
        Some((i, h)) => {
            let draft = bar
                .recall
                .take()
                .map_or_else(|| bar.text.clone(), |(_, d)| d);
            bar.recall = Some((i, draft));
            h.clone()
        }
        None => match bar.recall.take() {
            Some((_, draft)) => draft,
            None => return,
        },
    };
    bar.cursor = text.chars().count();
    bar.text = text;
}

/// Tab in the columns bar: the name before the cursor completed to the one
/// column it can be (and a comma), or the names it can be listed.
fn complete_column(bar: &mut FilterBar) {
    let chars: Vec<char> = bar.text.chars().collect();
    let end = bar.cursor.min(chars.len());
    let start = chars[..end]
        .iter()
        .rposition(|c| *c == ',' || c.is_whitespace())
        .map_or(0, |i| i + 1);
    let word: String = chars[start..end]
        .iter()
        .collect::<String>()
        .to_ascii_lowercase();
    let fits: Vec<&str> = columns::names()
        .into_iter()
        .filter(|n| n.starts_with(&word))
        .collect();
    let fill = match fits.as_slice() {
        [] => return,
        [one] => format!("{one},"),
        more => {
            bar.choices = Some(more.join(" "));
            let n = (0..).take_while(|&k| {
                let c = more[0].as_bytes().get(k);
                c.is_some() && more.iter().all(|m| m.as_bytes().get(k) == c)
            });
            more[0][..n.count()].to_string()
        }
    };
    let (a, b) = (byte_index(&bar.text, start), byte_index(&bar.text, end));
    bar.text.replace_range(a..b, &fill);
    bar.cursor = start + fill.chars().count();
}

/// Tab in the filter bar: the word before the cursor completed to the one
/// filter word it can be ([`crate::filter::completions`]), or to what all
/// it can be share, the choices then shown.
fn complete(bar: &mut FilterBar) {
    let chars: Vec<char> = bar.text.chars().collect();
    let end = bar.cursor.min(chars.len());
    let stop = |c: &char| c.is_whitespace() || "()&|!=<>~\"".contains(*c);
    let start = chars[..end].iter().rposition(stop).map_or(0, |i| i + 1);
    // A value (after `=`, `<`, `>`, `~`) is not a filter word.
    let before = chars[..start].iter().rev().find(|c| !c.is_whitespace());
    if before.is_some_and(|c| "=<>~".contains(*c)) {
        return;
    }
    let word: String = chars[start..end].iter().collect();
    let words = crate::filter::completions(&word);
    let (fill, done) = match words.as_slice() {
        [] => return,
        [one] => (one.to_string(), true),
        [first, rest @ ..] => {
            // What they all start with (any case), in the first's spelling.
            let n = rest.iter().fold(first.chars().count(), |n, w| {
                first
                    .chars()
                    .zip(w.chars())
                    .take(n)
                    .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
                    .count()
            });
            let shown: Vec<&str> = words.iter().take(12).map(String::as_str).collect();
            let more = if words.len() > 12 { " …" } else { "" };
            bar.choices = Some(format!("{}{more}", shown.join(" ")));
            let keep = first.chars().take(n).collect::<String>();
            // Never shorter than what was typed.
            (
                if n >= word.chars().count() {
                    keep
                } else {
                    word.clone()
                },
                false,
            )
        }
    };
    // A whole word is followed by a space; a path's name with fields by
    // its `.` (`ProduceRequest.TopicData.`), for the next name.
    let fill = if done && !fill.ends_with('.') {
        format!("{fill} ")
    } else {
        fill
    };
    let (a, b) = (byte_index(&bar.text, start), byte_index(&bar.text, end));
    bar.text.replace_range(a..b, &fill);
    bar.cursor = start + fill.chars().count();
}

fn byte_index(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i)
}

fn remove_char(s: &mut String, chars: usize) {
    let at = byte_index(s, chars);
    if at < s.len() {
        s.remove(at);
    }
}

/// The store of a new App: in memory until the shell gives it scratch files.
#[cfg(not(test))]
fn new_store() -> EntryStore {
    EntryStore::new(Geometry::DEFAULT)
}

/// In tests, tiny blocks and cache in temporary files, so that every path pages.
#[cfg(test)]
fn new_store() -> EntryStore {
    let mut s = EntryStore::new(Geometry::TINY);
    s.set_scratch(Box::new(super::scratch_file));
    s
}

/// Decodes an entry's tree: requests by their header, responses with the api
/// key and version of their request (the ApiVersions v0 fallback of KIP-511
/// as the model does), unknown responses header only.
#[cfg(test)]
pub fn decode_entry<E: Loaded>(e: &E, opts: &DecodeOptions) -> Decoded {
    let (info, raw) = e.parts();
    kafkashark::analyzer::redecode(&info, &raw, opts)
}

/// A message as loaded or as indexed: its facts and its message (bytes held).
#[cfg(test)]
pub trait Loaded {
    /// The facts and the message.
    fn parts(
        &self,
    ) -> (
        std::borrow::Cow<'_, MessageInfo>,
        std::borrow::Cow<'_, RawMessage>,
    );
}

#[cfg(test)]
impl Loaded for Entry {
    fn parts(
        &self,
    ) -> (
        std::borrow::Cow<'_, MessageInfo>,
        std::borrow::Cow<'_, RawMessage>,
    ) {
        (
            std::borrow::Cow::Borrowed(&self.info),
            std::borrow::Cow::Borrowed(&self.raw),
        )
    }
}

#[cfg(test)]
impl Loaded for IndexEntry {
    fn parts(
        &self,
    ) -> (
        std::borrow::Cow<'_, MessageInfo>,
        std::borrow::Cow<'_, RawMessage>,
    ) {
        (
            std::borrow::Cow::Owned(self.info()),
            std::borrow::Cow::Owned(self.raw()),
        )
    }
}

/// The node at a path of child indices.
pub fn node_at<'a>(root: &'a Node, path: &[u32]) -> Option<&'a Node> {
    let mut n = root;
    for &i in path {
        n = n.children.get(i as usize)?;
    }
    Some(n)
}

/// Most node kinds whose expansion [`TreeState::remembered`] keeps.
pub const MAX_REMEMBERED: usize = 10_000;

/// A node's name without an element index (`TopicData[3]` → `TopicData[]`):
/// the elements of an array are one kind of node.
fn kind_name(name: &str) -> &str {
    match name.rfind('[') {
        Some(i)
            if name.ends_with(']')
                && name[i + 1..name.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_digit()) =>
        {
            &name[..=i]
        }
        _ => name,
    }
}

/// Visits the nodes with children of the tree at `root`, depth first, each
/// with its name path ([`kind_name`]s from the root) and its path of child
/// indices; goes below a node only when `visit` says it is open.
fn walk_kinds(root: &Node, visit: &mut dyn FnMut(&[String], &[u32]) -> bool) {
    fn go(
        n: &Node,
        path: &mut Vec<u32>,
        names: &mut Vec<String>,
        visit: &mut dyn FnMut(&[String], &[u32]) -> bool,
    ) {
        if !visit(names, path) {
            return;
        }
        for (i, c) in n.children.iter().enumerate() {
            if c.children.is_empty() {
                continue;
            }
            path.push(i as u32);
            names.push(kind_name(&c.name).to_string());
            go(c, path, names, visit);
            names.pop();
            path.pop();
        }
    }
    let mut names = vec![kind_name(&root.name).to_string()];
    go(root, &mut Vec::new(), &mut names, visit);
}

/// Records, by name path, which nodes of the tree at `root` are open
/// (`expanded`) and which closed, below the open ones: what the user left
/// as it was is kept, what they changed updated.
fn remember_open(
    root: &Node,
    expanded: &HashSet<Vec<u32>>,
    remembered: &mut HashMap<Vec<String>, bool>,
) {
    walk_kinds(root, &mut |names, path| {
        let open = expanded.contains(path);
        if remembered.len() < MAX_REMEMBERED || remembered.contains_key(names) {
            remembered.insert(names.to_vec(), open);
        }
        open
    });
}

/// Opens or closes the nodes of the tree at `root` that [`remember_open`]
/// saw open or closed in earlier messages (the others keep `expanded`'s
/// default), below open ones only.
fn reopen(root: &Node, remembered: &HashMap<Vec<String>, bool>, expanded: &mut HashSet<Vec<u32>>) {
    walk_kinds(root, &mut |names, path| {
        match remembered.get(names) {
            Some(true) => {
                expanded.insert(path.to_vec());
            }
            Some(false) => {
                expanded.remove(path);
            }
            None => {}
        }
        expanded.contains(path)
    });
}

/// The visible rows of a tree given its expanded nodes, with the seed's guides.
pub fn flatten(root: &Node, expanded: &HashSet<Vec<u32>>) -> Vec<TreeRow> {
    fn go(
        n: &Node,
        path: &mut Vec<u32>,
        prefix: &str,
        guides: String,
        expanded: &HashSet<Vec<u32>>,
        out: &mut Vec<TreeRow>,
    ) {
        out.push(TreeRow {
            path: path.clone(),
            guides,
            has_children: !n.children.is_empty(),
        });
        if n.children.is_empty() || !expanded.contains(path) {
            return;
        }
        for (i, c) in n.children.iter().enumerate() {
            let bar = if i + 1 == n.children.len() {
                "    "
            } else {
                "|   "
            };
            path.push(i as u32);
            let guides = format!("{prefix}+-- ");
            go(c, path, &format!("{prefix}{bar}"), guides, expanded, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    go(root, &mut Vec::new(), "", String::new(), expanded, &mut out);
    out
}

/// Visits `n` and its descendants depth first, each with its path of child
/// indices (`path` is `n`'s).
fn walk_paths(n: &Node, path: &mut Vec<u32>, f: &mut dyn FnMut(&Node, &[u32])) {
    f(n, path);
    for (i, c) in n.children.iter().enumerate() {
        path.push(i as u32);
        walk_paths(c, path, f);
        path.pop();
    }
}

/// What each byte of a source belongs to (the role of the deepest node over
/// it), and which bytes belong to a redacted secret (never shown in the byte view).
pub fn byte_marks(root: &Node, source: u16, len: usize) -> (Vec<Role>, Vec<bool>) {
    let mut roles = vec![Role::Message; len];
    let mut secret = vec![false; len];
    root.walk(&mut |n, _| {
        if n.source == source && n.length > 0 {
            let end = n.end().min(len);
            let span = n.offset.min(end)..end;
            if let Some(slot) = roles.get_mut(span.clone()) {
                slot.fill(n.role);
            }
            if let Some(slot) = secret.get_mut(span).filter(|_| n.secret) {
                slot.fill(true);
            }
        }
    });
    (roles, secret)
}

/// The path of the deepest node of `source` whose span holds `byte`.
pub fn deepest_at(root: &Node, source: u16, byte: usize) -> Option<Vec<u32>> {
    let mut best = None;
    walk_paths(root, &mut Vec::new(), &mut |n, path| {
        if n.source == source && n.length > 0 && n.offset <= byte && byte < n.end() {
            best = Some(path.to_vec());
        }
    });
    best
}

/// The frames that carried bytes `start..end` of a message, in order.
pub fn frames_of(raw: &RawMessage, start: usize, end: usize) -> Vec<u64> {
    marks_of(&raw.provenance, raw.first_frame, start, end)
}

/// The TLS records (counted in their direction) that carried bytes
/// `start..end` of a decrypted message, in order; none for one in the clear.
pub fn tls_records_of(raw: &RawMessage, start: usize, end: usize) -> Vec<u64> {
    match raw.tls_records.first() {
        Some(&(_, first)) => marks_of(&raw.tls_records, first, start, end),
        None => Vec::new(),
    }
}

/// Who sent a message: "client" or "broker".
fn side(raw: &RawMessage) -> &'static str {
    if raw.is_request() {
        "client"
    } else {
        "broker"
    }
}

/// The marks of `(offset, mark)` changes (`first` before the first) that
/// bytes `start..end` lie under.
fn marks_of(changes: &[(u32, u64)], first: u64, start: usize, end: usize) -> Vec<u64> {
    let s = u32::try_from(start).unwrap_or(u32::MAX);
    let e = u32::try_from(end).unwrap_or(u32::MAX);
    let i = changes.partition_point(|&(o, _)| o <= s);
    let at_start = i.checked_sub(1).and_then(|i| changes.get(i));
    let mut out = vec![at_start.map_or(first, |&(_, m)| m)];
    for &(off, m) in changes.get(i..).unwrap_or_default() {
        if off < e && out.last() != Some(&m) {
            out.push(m);
        }
    }
    out
}
