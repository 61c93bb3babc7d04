//! The terminal UI: a message list, a field tree and a byte layout, for
//! capture files, standard input, live interfaces and single messages.
//!
//! Place in the data path: a shell around the engine. A loader thread feeds
//! frames to the [`Analyzer`] and sends [`Msg::Loaded`] batches over a bounded
//! channel; the UI thread polls the terminal with a short timeout, drains the
//! channel, folds everything into [`App::update`] and draws with
//! [`ui::render`]. All OS access (terminal, files, pcap, threads, the message
//! index's scratch files) lives in this file; `app.rs` and `ui.rs` are pure,
//! and `store.rs` reads and writes its scratch files through the [`Scratch`]
//! trait only.
//!
//! Invariant: the terminal is restored (raw mode off, main screen, mouse
//! released, cursor shown) on every exit path: normal quit, errors (the
//! [`TerminalGuard`] drop) and panics (the panic hook).

pub mod app;
pub mod columns;
mod history;
pub mod index;
pub mod stats_view;
pub mod store;
pub mod ui;

#[cfg(test)]
mod tests_index;
#[cfg(test)]
mod tests_load;
#[cfg(test)]
mod tests_render;
#[cfg(test)]
mod tests_stats;
#[cfg(test)]
mod tests_store;
#[cfg(test)]
mod tests_update;
#[cfg(test)]
mod testutil;

use kafkashark::kafka::schema::ApiKey;
use kafkashark::vocab::{Direction, Timestamp};
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event};
use crossterm::execute;
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use kafkashark::analyzer::{
    expects_response, new_record, Analyzer, AnalyzerConfig, Notice, Output,
};
use kafkashark::capture::{FrameSource, Polled};
use kafkashark::flow::Ports;
use kafkashark::kafka::framing::RawMessage;
use kafkashark::kafka::{decode_request, DecodeOptions};
use kafkashark::pipeline::{Event as PipeEvent, PipelineConfig, PipelineStats};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use crate::cli_error::CliError;
use crate::metrics::{Feed, MetricsServer};
use crate::print;
pub use app::{App, ByteStore, Config, Effect, Entry, LoadStats, Msg, SourceKind};
use store::Scratch;

/// What the TUI reads.
pub enum Input {
    /// pcap/pcapng files (`-` for standard input), several merged by time.
    Files(Vec<String>),
    /// A live interface and its BPF filter.
    Live {
        /// Interface name.
        iface: String,
        /// BPF filter (default: the broker ports).
        filter: Option<String>,
    },
    /// One size-prefixed message (the bytes) and where it came from.
    Message {
        /// The message.
        bytes: Vec<u8>,
        /// Its file name.
        name: String,
    },
}

/// Options of a TUI session.
pub struct Options {
    /// The input.
    pub input: Input,
    /// Broker ports.
    pub ports: Ports,
    /// The reorder window.
    pub reorder: kafkashark::flow::ReorderWindow,
    /// TLS session keys.
    pub keys: kafkashark::tls::keylog::Keys,
    /// Colours on.
    pub color: bool,
    /// Most messages the list keeps (ring mode); `None` for the default.
    pub max_messages: Option<u64>,
    /// Where the capture's figures are served for Prometheus
    /// (`--metrics`): the loader feeds them.
    pub metrics: Option<MetricsServer>,
    /// The list's columns for this session (`--columns`); `None`: the
    /// config file's, else the default.
    pub columns: Option<Vec<columns::Col>>,
}

/// Default cap of the message list for files and standard input.
pub const MAX_MESSAGES_FILE: u64 = 2_000_000;
/// Default cap of the message list for live capture.
pub const MAX_MESSAGES_LIVE: u64 = 250_000;

/// A file read at given offsets (`pread`: no shared cursor): the capture file
/// read again, or a scratch file of the message index (a temporary file
/// already unlinked), written the same way.
struct PreadFile(std::fs::File);

impl ByteStore for PreadFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.0, buf, offset)
    }
}

impl Scratch for PreadFile {
    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.0, data, offset)
    }
}

/// A new scratch file for the message index, in the temporary directory
/// (`TMPDIR`, else `/tmp`), readable by its owner only and removed from the
/// directory at once: nothing is left behind, even after a crash.
pub fn scratch_file() -> io::Result<Box<dyn Scratch>> {
    scratch_file_in(&std::env::temp_dir())
}

/// A new scratch file in `dir`, unlinked at once (see [`scratch_file`]).
fn scratch_file_in(dir: &std::path::Path) -> io::Result<Box<dyn Scratch>> {
    use std::os::unix::fs::OpenOptionsExt;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let context = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("cannot use a temporary file in {}: {e}", dir.display()),
        )
    };
    let mut tries = 0;
    loop {
        tries += 1;
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".kafkashark-index-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => {
                std::fs::remove_file(&path).map_err(context)?;
                return Ok(Box::new(PreadFile(f)));
            }
            // Left by another process of the same id (a container restart): the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 64 => {}
            Err(e) => return Err(context(e)),
        }
    }
}

/// Messages per batch sent by the loader.
const BATCH: usize = 2000;
/// Longest a loader batch waits before it is sent.
const BATCH_WAIT: Duration = Duration::from_millis(50);
/// Batches in flight between loader and UI.
const CHANNEL: usize = 4;
/// How long the UI waits for a key before it looks at the channel again.
const POLL: Duration = Duration::from_millis(40);

/// Runs the TUI until the user quits.
pub fn run(opts: Options) -> Result<(), CliError> {
    // Open the input before touching the terminal, so errors print plainly.
    let (title, kind, capture) = match &opts.input {
        Input::Files(p) => {
            let files = print::Input::Files(p.clone());
            (files.name(), SourceKind::File, Some(files))
        }
        Input::Live { iface, filter } => {
            let live = print::Input::Live {
                iface: iface.clone(),
                filter: filter.clone(),
            };
            (format!("live: {iface}"), SourceKind::Live, Some(live))
        }
        Input::Message { name, .. } => (name.clone(), SourceKind::Message, None),
    };
    // Files are read by a reader thread of their own (`load_files`).
    let source = capture
        .map(|c| c.open_source(&opts.ports, &opts.keys, false))
        .transpose()?;
    let meta = match &opts.input {
        Input::Files(p) if p.len() == 1 && p[0] != "-" => {
            std::fs::metadata(&p[0]).ok().map(|m| (&p[0], m))
        }
        _ => None,
    };
    let total = meta.as_ref().map(|(_, m)| m.len());
    // The file opened again for reading messages back (the file reader gives
    // every frame's offset; libpcap's fallback does not, and then bytes stay).
    let store = meta
        .filter(|(_, m)| m.is_file())
        .and_then(|(p, _)| std::fs::File::open(p).ok())
        .map(|f| Box::new(PreadFile(f)) as Box<dyn ByteStore>);
    let reread = store.is_some();
    let size = crossterm::terminal::size().unwrap_or((80, 24));
    let mut app = App::new(
        Config {
            title,
            kind,
            color: opts.color,
        },
        size,
    );
    app.store = store;
    match history::load() {
        Ok(h) => app.history = h,
        Err(e) => app.notice = Some(e),
    }
    match opts
        .columns
        .clone()
        .map_or_else(columns::load, |c| Ok(Some(c)))
    {
        Ok(Some(c)) => app.set_columns(c),
        Ok(None) => {}
        Err(e) => app.notice = Some(e),
    }
    // Several captures: the list shows each message's, after the stream
    // when the columns chosen do not place it.
    if let Input::Files(p) = &opts.input {
        app.captures = p.clone();
        if p.len() > 1 && !app.columns.contains(&columns::Col::Capture) {
            let mut cols = app.columns.clone();
            let at = cols
                .iter()
                .position(|&c| c == columns::Col::Stream)
                .map_or(0, |k| k + 1);
            cols.insert(at, columns::Col::Capture);
            app.set_columns(cols);
        }
    }
    // The listed messages' packets can be saved from the files read again
    // (regular files: not standard input, nor a pipe).
    let again = |p: &[String]| p.iter().all(|f| std::path::Path::new(f).is_file());
    app.save_from = match &opts.input {
        Input::Files(p) if again(p) => Some(p.clone()),
        _ => None,
    };
    if kind != SourceKind::Message {
        app.entries.set_scratch(Box::new(scratch_file));
    }
    let cap = opts.max_messages.unwrap_or(if kind == SourceKind::Live {
        MAX_MESSAGES_LIVE
    } else {
        MAX_MESSAGES_FILE
    });
    app.max_entries = usize::try_from(cap).unwrap_or(usize::MAX);
    let stop = Arc::new(AtomicBool::new(false));
    let feed = opts.metrics.map(|m| {
        m.announce();
        Feed::new(m)
    });
    let rx = match (source, opts.input) {
        (Some(src), _) => {
            let (tx, rx) = sync_channel(CHANNEL);
            let stop2 = Arc::clone(&stop);
            let ports = (opts.ports.clone(), opts.reorder, opts.keys.clone());
            std::thread::Builder::new()
                .name("kafkashark-loader".into())
                .spawn(move || {
                    let loading = Loading::new(&tx, reread, feed, total);
                    match src {
                        print::Source::Files(f) => {
                            let shards = crate::shards::default_shards();
                            load_files(f, ports, &stop2, loading, shards);
                        }
                        print::Source::Frames(f) => load(f, ports, &stop2, loading),
                    }
                })
                .map_err(|e| CliError::Io {
                    path: "loader thread".into(),
                    err: e,
                })?;
            Some(rx)
        }
        (None, Input::Message { bytes, .. }) => {
            app.update(Msg::Loaded(vec![message_entry(bytes)]));
            app.update(Msg::LoadDone);
            None
        }
        (None, _) => None,
    };
    let res = event_loop(&mut app, rx.as_ref());
    stop.store(true, Ordering::Relaxed);
    // The terminal is back: a history that could not be kept says so.
    if let Err(e) = history::save(&app.history) {
        eprintln!("kafkashark: {e}");
    }
    // Columns changed with `C` are kept for the next session.
    if !app.columns_saved {
        if let Err(e) = columns::save(&app.columns) {
            eprintln!("kafkashark: {e}");
        }
    }
    res
}

/// Restores the terminal when dropped.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn restore_terminal() {
    let _ = disable_raw_mode();
    let mut out = io::stdout();
    let _ = execute!(
        out,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = out.flush();
}

fn term_err(e: io::Error) -> CliError {
    CliError::Io {
        path: "terminal".into(),
        err: e,
    }
}

fn event_loop(app: &mut App, rx: Option<&Receiver<Msg>>) -> Result<(), CliError> {
    enable_raw_mode().map_err(term_err)?;
    let guard = TerminalGuard;
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        prev(info);
    }));
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture).map_err(term_err)?;
    let mut term = Terminal::new(CrosstermBackend::new(io::stdout())).map_err(term_err)?;
    term.clear().map_err(term_err)?;
    if let Ok(s) = term.size() {
        app.update(Msg::Resize(s.width, s.height));
    }
    let mut dirty = true;
    let mut last_tick = Instant::now();
    let mut loader_open = rx.is_some();
    let (saved_tx, saved_rx) = std::sync::mpsc::channel();
    'main: loop {
        if dirty {
            term.draw(|f| ui::render(f, app)).map_err(term_err)?;
            dirty = false;
        }
        // Keys first: the UI never waits behind the loader.
        let wait = if loader_open {
            Duration::from_millis(5)
        } else {
            POLL
        };
        if event::poll(wait).map_err(term_err)? {
            loop {
                let msg = match event::read().map_err(term_err)? {
                    Event::Key(k) => Some(Msg::Key(k)),
                    Event::Mouse(m) => Some(Msg::Mouse(m)),
                    Event::Resize(w, h) => Some(Msg::Resize(w, h)),
                    _ => None,
                };
                if let Some(m) = msg {
                    for effect in app.update(m) {
                        match effect {
                            Effect::Quit => break 'main,
                            Effect::Save(path) => start_save(app, path, &saved_tx),
                            Effect::Export(path, bytes) => {
                                let text = match std::fs::write(&path, &bytes) {
                                    Ok(()) => format!(
                                        "exported {} bytes to {}",
                                        bytes.len(),
                                        path.display()
                                    ),
                                    Err(e) => format!("not exported: {}: {e}", path.display()),
                                };
                                app.update(Msg::Notice(text));
                            }
                        }
                    }
                    dirty = true;
                }
                if !event::poll(Duration::ZERO).map_err(term_err)? {
                    break;
                }
            }
        }
        if let Some(rx) = rx {
            // A bounded number of batches per frame keeps keys responsive.
            for _ in 0..4 {
                match rx.try_recv() {
                    Ok(m) => {
                        app.update(m);
                        dirty = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        loader_open = false;
                        break;
                    }
                }
            }
        }
        // A save finished: what it did, or why it could not.
        while let Ok(m) = saved_rx.try_recv() {
            app.update(m);
            dirty = true;
        }
        if last_tick.elapsed() >= Duration::from_millis(200) {
            last_tick = Instant::now();
            app.update(Msg::Tick);
            dirty |= !app.done;
        }
    }
    drop(term);
    drop(guard);
    Ok(())
}

/// Saves the packets of the messages listed to `out` on a thread of its own
/// ([`crate::save`]); its result comes back to `done` as a notice.
fn start_save(app: &App, out: std::path::PathBuf, done: &std::sync::mpsc::Sender<Msg>) {
    let Some(input) = app.save_from.clone() else {
        return;
    };
    let mut chosen = crate::save::Chosen::default();
    for (&(capture, client, broker), &random) in &app.tls_sessions {
        chosen.tls(capture, client, broker, random);
    }
    for &i in &app.view {
        if let Some(e) = app.entries.get(i as usize) {
            let (client, broker) = e.endpoints();
            chosen.add(crate::filter::Facts::capture(&*e), client, broker, &e.raw());
        }
    }
    let tx = done.clone();
    let spawned = std::thread::Builder::new()
        .name("kafkashark-save".into())
        .spawn(move || {
            let text = match crate::save::write(&input, &chosen, &out, None) {
                Ok(s) => format!(
                    "saved {} message{} in {} frames ({} handshakes and closes) to {}",
                    chosen.messages,
                    if chosen.messages == 1 { "" } else { "s" },
                    s.frames,
                    s.control,
                    out.display()
                ),
                Err(e) => format!("not saved: {e}"),
            };
            let _ = tx.send(Msg::Notice(text));
        });
    if let Err(e) = spawned {
        let _ = done.send(Msg::Notice(format!("not saved: {e}")));
    }
}

/// The loader's settings: the analyzer's for `ports`, `reorder` and `keys`,
/// messages located in the file (`Entry::indexed` reads them back), and
/// with a `feed` (`--metrics`) the trees and record batch headers that
/// `Stats` reads.
fn loader_config(
    (ports, reorder, keys): &LoaderInput,
    twin_window_ns: Option<u64>,
    feed: bool,
) -> AnalyzerConfig {
    let mut cfg = AnalyzerConfig {
        pipeline: PipelineConfig {
            locate_in_file: true,
            twin_window_ns,
            ..print::pipeline_config(ports, *reorder, keys)
        },
        keep_trees: false,
        ..AnalyzerConfig::default()
    };
    cfg.decode.records = false;
    if feed {
        cfg = Feed::analyzer_config(cfg);
    }
    cfg
}

/// The broker ports, reorder window and TLS keys a loader reads with.
type LoaderInput = (
    Ports,
    kafkashark::flow::ReorderWindow,
    kafkashark::tls::keylog::Keys,
);

/// What a loader sends the UI, made of the analysis' outputs: entries in
/// batches of [`BATCH`] (or every [`BATCH_WAIT`]), each with the counters,
/// the progress and the topic names when they grew; TLS notes; the
/// `NoKafka` notice. With `reread`, messages located in the file leave
/// their bytes behind. With a `feed` (`--metrics`), every output is
/// counted for it too.
struct Loading<'a> {
    tx: &'a SyncSender<Msg>,
    reread: bool,
    feed: Option<Feed>,
    total: Option<u64>,
    batch: Vec<Entry>,
    tls: Vec<app::TlsNote>,
    gaps: u64,
    topics_known: usize,
    last: Instant,
}

impl<'a> Loading<'a> {
    fn new(tx: &'a SyncSender<Msg>, reread: bool, feed: Option<Feed>, total: Option<u64>) -> Self {
        Loading {
            tx,
            reread,
            feed,
            total,
            batch: Vec::new(),
            tls: Vec::new(),
            gaps: 0,
            topics_known: 0,
            last: Instant::now(),
        }
    }

    /// Takes `out`'s outputs; false once the UI is gone.
    fn outputs(&mut self, out: &mut Vec<Output>) -> bool {
        for o in out.drain(..) {
            if let Some(f) = &mut self.feed {
                f.push(&o);
            }
            match o {
                Output::Message(m) if self.reread => {
                    self.batch.push(Entry::indexed(m.info, m.raw));
                }
                Output::Message(m) => self.batch.push(Entry::new(m.info, m.raw)),
                Output::Notice(n) => match *n {
                    Notice::Stream(PipeEvent::Gap { .. }) => self.gaps += 1,
                    Notice::Stream(PipeEvent::Warning {
                        what: what @ kafkashark::pipeline::Warning::NoKafka { .. },
                        ..
                    }) => {
                        let Ok(()) = self.tx.send(Msg::Notice(what.to_string())) else {
                            return false;
                        };
                    }
                    n => self.tls.extend(tls_note(n)),
                },
            }
        }
        true
    }

    /// Sends what was gathered when a batch is due, or at the end (`done`):
    /// with the pipeline's `counters` and the kernel's drops, `bytes` read
    /// and the topic `names` known. False once the UI is gone.
    fn send(
        &mut self,
        done: bool,
        counters: impl FnOnce() -> (PipelineStats, Option<u64>),
        bytes: u64,
        names: &kafkashark::topics::TopicNames,
    ) -> bool {
        if let Some(f) = &mut self.feed {
            f.tick(done);
        }
        if !done && self.batch.len() < BATCH && self.last.elapsed() < BATCH_WAIT {
            return true;
        }
        self.last = Instant::now();
        let (ps, drops) = counters();
        let mut msgs = vec![
            Msg::Stats(LoadStats {
                frames: ps.frames,
                streams: ps.kafka_streams,
                gaps: self.gaps,
                late: ps.flow.late_segments,
                resyncs: ps.resyncs,
                kernel_drops: drops,
            }),
            Msg::Progress(self.total.map_or(bytes, |t| bytes.min(t)), self.total),
        ];
        if names.len() != self.topics_known {
            self.topics_known = names.len();
            msgs.push(Msg::Topics(Box::new(names.clone())));
        }
        if !self.tls.is_empty() {
            msgs.push(Msg::Tls(std::mem::take(&mut self.tls)));
        }
        if !self.batch.is_empty() {
            msgs.push(Msg::Loaded(std::mem::take(&mut self.batch)));
        }
        msgs.into_iter().all(|m| self.tx.send(m).is_ok())
    }
}

/// The loader of a live capture or standard input: frames → analyzer →
/// [`Loading`], frame by frame.
fn load(
    mut src: Box<dyn FrameSource + Send>,
    input: LoaderInput,
    stop: &AtomicBool,
    mut loading: Loading<'_>,
) {
    let (tx, total) = (loading.tx, loading.total);
    let cfg = loader_config(&input, src.twin_window_ns(), loading.feed.is_some());
    let mut an = Analyzer::new(cfg);
    let mut out = Vec::new();
    let (mut bytes, mut first, mut done) = (24u64, true, false);
    while !done {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match src.poll() {
            Ok(Polled::Frame(f)) => {
                if first {
                    first = false;
                    if tx.send(Msg::Origin(f.ts)).is_err() {
                        return;
                    }
                }
                bytes += u64::from(f.caplen) + 16;
                an.push(&f, &mut out);
            }
            Ok(Polled::Timeout) => {}
            end @ (Ok(Polled::End) | Err(_)) => {
                if let Err(e) = end {
                    let _ = tx.send(Msg::LoadError(e.to_string()));
                }
                an.finish(&mut out);
                bytes = total.unwrap_or(bytes);
                done = true;
            }
        }
        if !loading.outputs(&mut out) {
            return;
        }
        let counters = || {
            let drops = src.stats().ok().and_then(|s| {
                s.dropped
                    .map(|d| u64::from(d) + u64::from(s.if_dropped.unwrap_or(0)))
            });
            (an.pipeline_stats(), drops)
        };
        if !loading.send(done, counters, bytes, an.messages().topic_names()) {
            return;
        }
    }
    let _ = tx.send(Msg::LoadDone);
}

/// The loader of capture files: read, reassembled and framed on a reader
/// thread (`print::FileReader`), decoded and paired in shards of the
/// connections (`crate::shards`: on this thread as it routes, or on shard
/// threads), merged back in order here → [`Loading`], batch by batch: the
/// same entries as [`load`] makes of the same files.
fn load_files(
    src: kafkashark::capture::FileSource,
    input: LoaderInput,
    stop: &AtomicBool,
    mut loading: Loading<'_>,
    shards: usize,
) {
    let (tx, total) = (loading.tx, loading.total);
    let cfg = loader_config(&input, src.twin_window_ns(), loading.feed.is_some());
    let analyzer = kafkashark::analyzer::MessageAnalyzer::new(cfg);
    // Entries keep what they are given: nothing is dropped on the shards.
    let keep = print::Keep {
        frames: true,
        bytes: true,
    };
    let mut files = match crate::shards::FileAnalysis::spawn(src, &analyzer, shards, keep) {
        Ok(f) => f,
        Err(e) => {
            let _ = tx.send(Msg::LoadError(format!("the analysis threads: {e}")));
            let _ = tx.send(Msg::LoadDone);
            return;
        }
    };
    let (mut out, mut bytes) = (Vec::new(), 24u64);
    while let Some(b) = files.next(&mut out) {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        if let Some(ts) = b.first_ts {
            if tx.send(Msg::Origin(ts)).is_err() {
                return;
            }
        }
        if let Some(e) = &b.error {
            let _ = tx.send(Msg::LoadError(e.to_string()));
        }
        bytes += b.bytes;
        if b.last {
            bytes = total.unwrap_or(bytes);
        }
        let counters = || (b.counters, None);
        if !(loading.outputs(&mut out)
            && loading.send(b.last, counters, bytes, files.topic_names()))
        {
            return;
        }
    }
    let _ = tx.send(Msg::LoadDone);
}

/// An entry for a single size-prefixed message read from a file (decoded as a
/// request: a request names its own api key and version).
pub fn message_entry(bytes: Vec<u8>) -> Entry {
    let d = decode_request(
        &bytes,
        &DecodeOptions {
            records: false,
            ..DecodeOptions::default()
        },
    );
    let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
    let raw = RawMessage {
        stream: 0,
        dir: Direction::ClientToBroker,
        bytes: bytes.into(),
        stream_offset: 0,
        first_frame: 1,
        last_frame: 1,
        first_ts: Timestamp::new(0, 0),
        last_ts: Timestamp::new(0, 0),
        // One carrying frame: no provenance (`RawMessage::provenance`).
        provenance: Vec::new(),
        resynced: false,
        skipped_before: 0,
        missing: 0,
        file_pieces: Vec::new(),
        tls_records: Vec::new(),
        twin: None,
    };
    let nowhere = SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0));
    let mut m = *new_record(0, raw, nowhere, nowhere);
    m.info.api_key = d.api_key.map(ApiKey);
    m.info.api_version = d.api_version;
    m.info.correlation_id = d.correlation_id;
    m.info.length = m.raw.size().unwrap_or(len);
    m.info.client_id = d.client_id.clone();
    m.info.expects_response = expects_response(&d);
    m.info.decode_error = d.error.as_ref().map(ToString::to_string);
    m.info.decode_warning = d.warning;
    m.info.topics = d.topics.clone();
    Entry::new(m.info, m.raw)
}

/// What a TLS notice tells the TUI (`Msg::Tls`); `None` for other notices.
pub(crate) fn tls_note(n: Notice) -> Option<app::TlsNote> {
    match n {
        Notice::Tls {
            stream,
            capture,
            client,
            broker,
            frame,
            what,
            ..
        } => Some((stream, capture, client, broker, frame, what)),
        _ => None,
    }
}
