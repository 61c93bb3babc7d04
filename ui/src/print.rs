//! `kafkashark print`: one line (or one JSON object) per Kafka message, from a
//! capture file, standard input or a live interface. A thin shell: it feeds
//! frames to the engine's `Analyzer` and formats what comes out.

use crate::timefmt::TimeFormat;
use kafkashark::vocab::Timestamp;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafkashark::analyzer::{
    AheadScanner, Also, Analyzer, MessageAnalyzer, MessageInfo, MessageRecord, Notice, Output,
};
use kafkashark::capture::{CaptureError, FileSource, FrameSource, LiveConfig, LiveSource, Polled};
use kafkashark::flow::{Ports, ReorderWindow};
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::errors::error_name;
use kafkashark::kafka::tree;
use kafkashark::pipeline::{Event, PipelineConfig};
use kafkashark::tls::conn::TlsEvent;
use kafkashark::tls::keylog::Keys;

use crate::cli_error::CliError;
use crate::reorder::Reorder;

/// Where frames come from.
pub enum Input {
    /// pcap/pcapng files (`-` for standard input), several read together
    /// merged by time ([`FileSource::open_all`]).
    Files(Vec<String>),
    /// A live interface, with an optional BPF filter.
    Live {
        /// Interface name (`lo`, `eth0`, `any`).
        iface: String,
        /// BPF filter; default built from the Kafka ports.
        filter: Option<String>,
    },
}

/// Output format of `print`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PrintFormat {
    /// One summary line per message.
    Text,
    /// One JSON object per message (the JSONL contract).
    Jsonl,
}

/// How many notices `print` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Notices {
    /// The first of each kind, and a count of the rest.
    Summary,
    /// Every one.
    All,
}

/// The arguments of `kafkashark print`.
#[derive(clap::Args, Debug)]
pub struct PrintArgs {
    #[command(flatten)]
    capture: CaptureArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PrintFormat::Text)]
    format: PrintFormat,
    /// The reorder window: how long a hole the peer acknowledged waits for a
    /// segment the capture puts late, as PACKETS,TIME,BYTES (any of them, any
    /// order: `64`, `1s`, `250ms`, `1MiB`), or `off`. Default 64,1s,1MiB.
    #[arg(long, value_name = "SPEC", default_value = "64,1s,1MiB", value_parser = crate::parse_reorder_window)]
    reorder_window: ReorderWindow,
    /// Print only the messages this display filter matches (the TUI's
    /// filter language, docs/filter.md): `-Y 'produce and latency>50ms'`.
    #[arg(short = 'Y', long = "display-filter", value_name = "EXPR", value_parser = crate::parse_display_filter)]
    display_filter: Option<crate::filter::Filter>,
    /// Notices on standard error: `summary` prints the first 5 of each kind
    /// and counts the rest, `all` prints every one.
    #[arg(long, value_enum, default_value_t = Notices::Summary)]
    notices: Notices,
    /// Show the field tree of every message, one compact line a field
    /// (name, value, type, bytes); `-VV` adds each field's description.
    #[arg(short = 'V', long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// How text lines write the time: `r` since the first frame, `d` since
    /// the message before, `a`/`ad` local time of day / date and time,
    /// `u`/`ud` the same in UTC, `e` seconds since the epoch.
    #[arg(short = 't', long = "time-format", value_enum, default_value = "r")]
    time: TimeFormat,
    /// Save the packets that carried the messages (those `-Y` matches, up to
    /// `-c`), with their connections' handshakes, to FILE instead of printing
    /// them: pcapng, or pcap when FILE ends in `.pcap`.
    #[arg(short = 'w', long = "write", value_name = "FILE", conflicts_with_all = ["verbose", "format", "duration"])]
    write: Option<std::path::PathBuf>,
    /// With -w to a pcapng: the TLS session keys of the connections saved
    /// (from --tls-keylog or the capture's own) go into the file, in a
    /// Decryption Secrets Block, so it decrypts without a key log.
    #[arg(long, requires = "write")]
    embed_keys: bool,
    /// Stop after this many messages.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Stop after this many seconds (live capture).
    #[arg(long)]
    duration: Option<f64>,
    /// Show SASL passwords, SCRAM proofs and tokens instead of redacting them.
    #[arg(long)]
    show_secrets: bool,
    /// Most bytes a compressed batch may decompress to.
    #[arg(long, default_value_t = 64 << 20)]
    max_decompressed: usize,
    /// Threads that decode the messages of capture files: summaries in
    /// shards of the connections (by default one per core but the
    /// reader's; one runs on the thread that routes them), `-V` trees by
    /// message (by default one per core, at most 4). The output is the
    /// same with any number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
    #[command(flatten)]
    privilege: crate::privilege::PrivilegeArgs,
}

/// Builds the default BPF filter for the broker ports.
pub fn default_filter(ports: &Ports) -> Option<String> {
    Some(match ports {
        Ports::Any | Ports::Detect(_) => "tcp".into(),
        Ports::List(l) => l
            .iter()
            .map(|p| format!("tcp port {p}"))
            .collect::<Vec<_>>()
            .join(" or "),
    })
}

/// The pipeline's settings for broker `ports`, a reorder window and TLS keys.
pub(crate) fn pipeline_config(
    ports: &Ports,
    reorder: ReorderWindow,
    keys: &Keys,
) -> PipelineConfig {
    let mut cfg = PipelineConfig::with_ports(ports.clone());
    cfg.flow.reorder = reorder;
    cfg.tls_keys = keys.clone();
    cfg
}

/// What `print` and `stats` read: a file or a live interface, and the
/// broker ports.
#[derive(clap::Args, Debug)]
pub struct CaptureArgs {
    /// pcap or pcapng files (`-` reads standard input), or globs
    /// (`'broker-*.pcapng'`); several are read together, merged by time,
    /// each message naming its capture.
    #[arg(required_unless_present = "interface", conflicts_with = "interface")]
    files: Vec<String>,
    /// Capture live on this interface (`any` for all).
    #[arg(short = 'i', long = "interface")]
    interface: Option<String>,
    /// BPF filter for live capture (default: the Kafka ports); needs -i.
    #[arg(short = 'f', long = "filter")]
    filter: Option<String>,
    /// Broker ports: `auto` (9092 and 9093, and Kafka found by content on
    /// any other port), a comma-separated list (only these), or `any` (found by
    /// content on every port).
    #[arg(long, default_value = "auto", value_parser = crate::parse_ports)]
    pub ports: Ports,
    /// TLS key log (`SSLKEYLOGFILE`'s NSS format): TLS connections whose
    /// sessions it holds are decrypted; live, it is re-read as it grows.
    #[arg(long, value_name = "FILE")]
    tls_keylog: Option<std::path::PathBuf>,
    /// The key log once read (`load_keys`).
    #[arg(skip)]
    keys: std::sync::OnceLock<Keys>,
}

impl CaptureArgs {
    /// The files (or globs) named, as given.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Reads `--tls-keylog` (once; followed as it grows when live).
    pub fn load_keys(&self) -> Result<(), CliError> {
        let live = self.interface.is_some();
        let keys = crate::keylog::open(self.tls_keylog.as_deref(), live)?;
        let _ = self.keys.set(keys);
        Ok(())
    }

    /// The key log read by `load_keys` (none before).
    pub fn keys(&self) -> Keys {
        self.keys.get().cloned().unwrap_or_default()
    }

    /// The input: a file, or live on an interface with a BPF filter (which
    /// needs it).
    pub fn input(&self) -> Result<Input, CliError> {
        let filter = self.filter.clone();
        match (self.interface.clone(), self.files.is_empty()) {
            (Some(iface), _) => Ok(Input::Live { iface, filter }),
            // A BPF filter applies to live capture only: said, not ignored.
            (None, false) if filter.is_some() => Err(CliError::Usage(
                "-f/--filter is a BPF filter for live capture with -i/--interface; a file is read whole"
                    .into(),
            )),
            (None, false) => Ok(Input::Files(expand_globs(&self.files)?)),
            (None, true) => Err(CliError::Usage("give a FILE or -i IFACE".into())),
        }
    }
}

/// The files `args` name: each as it is when it names a file (or is `-`),
/// else, when it has a wildcard (`*`, `?`, `[`), the files it matches, in
/// name order (a glob the shell did not expand, as on a quoted argument).
pub fn expand_globs(args: &[String]) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    for a in args {
        let wild = a.contains(['*', '?', '[']);
        if a == "-" || !wild || std::path::Path::new(a).exists() {
            out.push(a.clone());
            continue;
        }
        let paths = glob::glob(a).map_err(|e| CliError::Usage(format!("{a}: {e}")))?;
        let before = out.len();
        for p in paths {
            let p = p.map_err(|e| CliError::Usage(format!("{a}: {e}")))?;
            out.push(p.to_string_lossy().into_owned());
        }
        if out.len() == before {
            return Err(CliError::Usage(format!("{a}: no file matches")));
        }
    }
    Ok(out)
}

impl Input {
    /// What it is called in messages: the file (the first and how many
    /// more, when several), or the interface.
    pub fn name(&self) -> String {
        match self {
            Input::Files(p) if p.len() > 1 => format!("{} and {} more", p[0], p.len() - 1),
            Input::Files(p) => p.first().cloned().unwrap_or_default(),
            Input::Live { iface, .. } => iface.clone(),
        }
    }

    /// The names of the captures read together (one for a single file or
    /// an interface).
    pub fn captures(&self) -> Vec<String> {
        match self {
            Input::Files(p) => p.clone(),
            Input::Live { iface, .. } => vec![iface.clone()],
        }
    }

    /// Opens it as a whole: capture files as they are (to be read on a
    /// reader thread: `crate::shards::FileAnalysis`), unless `by_frame`
    /// (a read for a while); else as [`Input::open`] does.
    pub fn open_source(
        &self,
        ports: &Ports,
        keys: &Keys,
        by_frame: bool,
    ) -> Result<Source, CliError> {
        match self {
            Input::Files(paths) if !by_frame => Ok(Source::Files(open_files(paths, keys)?)),
            _ => self.open(ports, keys).map(Source::Frames),
        }
    }

    /// Opens it frame by frame: a file, or a live interface (its BPF filter
    /// defaulting to the Kafka `ports`), privileges dropped once it is open.
    pub fn open(
        &self,
        ports: &Ports,
        keys: &Keys,
    ) -> Result<Box<dyn FrameSource + Send>, CliError> {
        Ok(match self {
            Input::Files(paths) => Box::new(open_files(paths, keys)?),
            Input::Live { iface, filter } => {
                let mut cfg = LiveConfig::new(iface);
                cfg.filter = filter.clone().or_else(|| default_filter(ports));
                Box::new(crate::privilege::after_open(LiveSource::open(&cfg))?)
            }
        })
    }
}

/// What a command reads ([`Input::open_source`]).
pub enum Source {
    /// Capture files, read whole on a reader thread.
    Files(FileSource),
    /// Frame by frame: a live capture, or files read for a while.
    Frames(Box<dyn FrameSource + Send>),
}

impl Source {
    /// The pipeline's twin window for what it reads
    /// (`FrameSource::twin_window_ns`).
    pub fn twin_window_ns(&self) -> Option<u64> {
        match self {
            Source::Files(f) => f.twin_window_ns(),
            Source::Frames(f) => f.twin_window_ns(),
        }
    }
}

/// Capture files opened together, with the TLS keys.
pub(crate) fn open_files(paths: &[String], keys: &Keys) -> Result<FileSource, CliError> {
    let mut src = FileSource::open_all(paths, &crate::Both).map_err(CliError::Capture)?;
    src.set_tls_keys(keys.clone());
    Ok(src)
}

/// A display filter that knows the names of the captures read (`capture`).
pub fn with_captures(
    filter: &Option<crate::filter::Filter>,
    captures: &[String],
) -> Option<crate::filter::Filter> {
    filter.clone().map(|mut f| {
        f.set_captures(captures);
        f
    })
}

/// One poll of `source` into `analyzer` (its outputs appended to `out`):
/// `false` at the end of the input, or after a read error, kept in `error`.
pub fn pump(
    source: &mut dyn FrameSource,
    analyzer: &mut Analyzer,
    out: &mut Vec<Output>,
    error: &mut Option<CaptureError>,
) -> bool {
    match source.poll() {
        Ok(Polled::Frame(f)) => analyzer.push(&f, out),
        Ok(Polled::Timeout) => {}
        Ok(Polled::End) => return false,
        Err(e) => {
            *error = Some(e);
            return false;
        }
    }
    true
}

/// `--duration SECONDS` of `print` or `stats`.
pub fn duration_arg(seconds: Option<f64>) -> Result<Option<Duration>, CliError> {
    match seconds {
        Some(d) if d.is_finite() && d >= 0.0 => Ok(Some(Duration::from_secs_f64(d))),
        Some(d) => Err(CliError::Usage(format!("--duration {d}: not a duration"))),
        None => Ok(None),
    }
}

/// The end of a read, on standard error: the kernel drops of a `live`
/// capture of `name` (lost messages: always said), then what stopped the
/// read early (everything before it was printed).
pub fn report_end(live: Option<&mut dyn FrameSource>, name: &str, error: Option<CaptureError>) {
    if let Some(line) = live.and_then(|s| s.stats().ok()?.drop_summary()) {
        eprintln!("kafkashark: {}: {line}", tree::escape_text(name));
    }
    if let Some(e) = error {
        eprintln!("kafkashark: {}", tree::escape_text(&e.to_string()));
    }
}

/// Runs `print`; returns the number of messages with a decode error.
pub fn run(a: &PrintArgs) -> Result<u64, CliError> {
    crate::privilege::configure(&a.privilege);
    let input = a.capture.input()?;
    a.capture.load_keys()?;
    let duration = duration_arg(a.duration)?;
    if a.embed_keys
        && a.write.as_deref().map(crate::save::Format::of) == Some(crate::save::Format::Pcap)
    {
        return Err(CliError::Usage(
            "--embed-keys writes a pcapng Decryption Secrets Block; save to a .pcapng".into(),
        ));
    }
    if a.write.is_some() && !matches!(&input, Input::Files(p) if !p.iter().any(|f| f == "-")) {
        return Err(CliError::Usage(
            "-w saves from capture files, which it reads twice (not standard input); a live capture is saved with tcpdump -w".into(),
        ));
    }
    // A file is read and reassembled on a thread of its own (see `FileReader`).
    let mut file = match &input {
        Input::Files(paths) if duration.is_none() => Some(open_files(paths, &a.capture.keys())?),
        _ => None,
    };
    let name = input.name();
    let captures = input.captures();
    // `-w` reads a file (checked above) without `--duration` (clap refuses
    // the two together): it is open.
    if let Some(out) = &a.write {
        if let Some(src) = file.take() {
            return save(a, src, &name, out);
        }
    }
    let verbose = a.verbose > 0;
    let layout = tree::Layout::Compact {
        about: a.verbose > 1,
    };
    // How `-V`'s trees are decoded; the analyzer reads only summaries.
    let decode = kafkashark::kafka::DecodeOptions {
        records: verbose,
        // The trees of `-V --format jsonl` are only written as JSON: their
        // records are written so as they are decoded (`render_pool::decode`).
        records_json: verbose && a.format == PrintFormat::Jsonl,
        show_secrets: a.show_secrets,
        max_decompressed: a.max_decompressed,
        ..Default::default()
    };
    if let Some(src) = file.take_if(|_| verbose) {
        // Trees decoded and formatted on every core (see `render_pool`).
        let settings = crate::render_pool::Settings {
            ports: a.capture.ports.clone(),
            reorder: a.reorder_window,
            keys: a.capture.keys(),
            format: a.format,
            count: a.count,
            decode,
            name,
            threads: a
                .threads
                .map_or_else(crate::render_pool::default_threads, usize::from),
            big_message: crate::render_pool::BIG_MESSAGE,
            held_bytes: HELD_BYTES,
            held_on_disk: Some(std::env::temp_dir()),
            filter: with_captures(&a.display_filter, &captures),
            all_notices: a.notices == Notices::All,
            time: a.time,
            layout,
        };
        return crate::render_pool::run(
            src,
            settings,
            || std::io::stdout().lock(),
            |line| eprintln!("{line}"),
        );
    }
    // Live `-V`, or a file read for a while: the analyzer reads summaries (as
    // `render_pool`'s does) and each message's tree is decoded once, as it
    // is printed (`Trees`), with the facts a tree-keeping analyzer takes from
    // it: the same output as `render_pool`, on one thread.
    let mut pipeline = pipeline_config(&a.capture.ports, a.reorder_window, &a.capture.keys());
    // Held messages keep their bytes for their trees: located in the file,
    // they are copied only once the file has moved on (`Reorder`).
    pipeline.locate_in_file = verbose;
    let cfg = crate::render_pool::summary_config(pipeline.clone(), &decode, verbose);
    let trees = verbose.then(|| Trees {
        opts: decode,
        stamps: std::sync::Arc::default(),
    });
    let live = matches!(input, Input::Live { .. });
    let (format, count, time) = (a.format, a.count, a.time);
    let filter = with_captures(&a.display_filter, &captures);
    let deep = filter
        .as_ref()
        .is_some_and(crate::filter::Filter::needs_tree);
    let all_notices = a.notices == Notices::All;
    // Made on the thread that writes: it locks standard output.
    let stage = move || {
        let printer = Printer {
            save: None,
            render: Render::new(format, verbose)
                .time(time)
                .layout(layout)
                .captures(&captures),
            malformed: 0,
            buf: Vec::with_capacity(1024),
            chunk: if live { 0 } else { OUT_CHUNK },
            trees,
            w: std::io::BufWriter::new(std::io::stdout().lock()),
        };
        let held = if live { 1024 } else { HELD_MESSAGES };
        ordered(printer, held, filter, count, name, all_notices)
    };
    if let Some(src) = file {
        let keep = Keep {
            frames: false,
            bytes: deep,
        };
        let analyzer = MessageAnalyzer::new(cfg);
        return run_file(src, pipeline, analyzer, keep, shards(a), stage).map(|(n, _)| n);
    }
    // Live, or a file read for a while (`--duration`): one thread, the same
    // last stage as for files' summaries.
    let mut source = input.open(&a.capture.ports, &a.capture.keys())?;
    let mut cfg = cfg;
    cfg.pipeline.twin_window_ns = source.twin_window_ns();
    let mut analyzer = Analyzer::new(cfg);
    let mut stage = stage();
    let mut out = Vec::new();
    let started = Instant::now();
    let mut last_flush = started;
    let mut read_error: Option<CaptureError> = None;
    while !stage.count_reached() && duration.is_none_or(|d| started.elapsed() < d) {
        let frame = match source.poll() {
            Ok(Polled::Frame(f)) => f,
            Ok(Polled::Timeout) => {
                if live {
                    stage.emit.flush()?;
                }
                continue;
            }
            Ok(Polled::End) => break,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        };
        stage.emit.render.first_ts.get_or_insert(frame.ts);
        analyzer.push(&frame, &mut out);
        stage.emit.learn(analyzer.messages(), &mut out);
        if !stage.frame(&mut out)? {
            break;
        }
        // Live output reaches the terminal within LIVE_FLUSH (and at every read
        // timeout), without a write per packet.
        if live && last_flush.elapsed() >= LIVE_FLUSH {
            stage.emit.flush()?;
            last_flush = Instant::now();
        }
    }
    if !stage.count_reached() {
        analyzer.finish(&mut out);
        stage.emit.learn(analyzer.messages(), &mut out);
    }
    stage.finish(std::mem::take(&mut out), None)?;
    stage.emit.flush()?;
    report_end(live.then_some(&mut *source), &stage.name, read_error);
    stage.end().map(|(n, _)| n)
}

/// `print -w`: the messages `-Y` matches (up to `-c`) are chosen as they
/// would be printed, then [`crate::save::write`] copies the frames that
/// carried them to `out`. Returns the number of malformed messages chosen.
fn save(
    a: &PrintArgs,
    src: FileSource,
    name: &str,
    out: &std::path::Path,
) -> Result<u64, CliError> {
    let pipeline = pipeline_config(&a.capture.ports, a.reorder_window, &a.capture.keys());
    let decode = kafkashark::kafka::DecodeOptions {
        max_decompressed: a.max_decompressed,
        ..Default::default()
    };
    let cfg = crate::render_pool::summary_config(pipeline.clone(), &decode, false);
    let captures: Vec<String> = src.paths().map(str::to_string).collect();
    let filter = with_captures(&a.display_filter, &captures);
    let (count, stage_name) = (a.count, name.to_string());
    let keep = Keep {
        frames: true,
        bytes: filter
            .as_ref()
            .is_some_and(crate::filter::Filter::needs_tree),
    };
    let all_notices = a.notices == Notices::All;
    let stage = move || {
        let printer = Printer {
            save: Some(crate::save::Chosen::default()),
            render: Render::new(PrintFormat::Text, false),
            malformed: 0,
            buf: Vec::new(),
            chunk: OUT_CHUNK,
            trees: None,
            w: std::io::BufWriter::new(std::io::stdout().lock()),
        };
        ordered(
            printer,
            HELD_MESSAGES,
            filter,
            count,
            stage_name,
            all_notices,
        )
    };
    let analyzer = MessageAnalyzer::new(cfg);
    let (malformed, chosen) = run_file(src, pipeline, analyzer, keep, shards(a), stage)?;
    let chosen = chosen.unwrap_or_default();
    let secrets = a.embed_keys.then(|| {
        let keys = a.capture.keys();
        let randoms = chosen.tls_randoms();
        keys.with(|k| randoms.iter().map(|r| k.lines_of(r)).collect::<String>())
    });
    let saved = crate::save::write(&captures, &chosen, out, secrets.as_deref())?;
    if let Some(s) = &secrets {
        let sessions = s
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .collect::<std::collections::BTreeSet<_>>();
        let tls = chosen.tls_randoms().len();
        eprintln!(
            "kafkashark: embedded the keys of {} of the {tls} TLS session{} saved",
            sessions.len(),
            if tls == 1 { "" } else { "s" }
        );
    }
    eprintln!(
        "kafkashark: saved {} message{} in {} frame{} ({} of them handshakes, closes and TLS records) to {}",
        chosen.messages,
        if chosen.messages == 1 { "" } else { "s" },
        saved.frames,
        if saved.frames == 1 { "" } else { "s" },
        saved.control,
        out.display()
    );
    Ok(malformed)
}

/// The last stage of `print` around `printer`: a [`Reorder`] holding up to
/// `held` messages (and [`HELD_BYTES`]) for their pairing, `filter`
/// applied, `count` messages at most, notices of capture `name`.
fn ordered(
    printer: Printer,
    held: usize,
    filter: Option<crate::filter::Filter>,
    count: Option<u64>,
    name: String,
    all_notices: bool,
) -> Ordered<Printer> {
    let mut reorder = Reorder::new(held);
    reorder.limit_bytes(HELD_BYTES);
    if let Some(f) = filter {
        reorder.filter(f);
    }
    let mut ordered = Ordered::new(printer, reorder, count, name);
    ordered.notices.all = all_notices;
    ordered
}

/// Longest live output waits in the buffer while packets keep coming.
const LIVE_FLUSH: Duration = Duration::from_millis(50);

/// Analyzer outputs of consecutive frames, handed to the writer thread.
#[derive(Default)]
struct Work {
    /// The outputs, in order.
    outs: Vec<Output>,
    /// Where each frame's outputs end in `outs`.
    ends: Vec<usize>,
    /// The time of the capture's first frame (first work only).
    first_ts: Option<Timestamp>,
    /// Last work: the outputs of the pipeline's and the analyzer's `finish`.
    finish: Option<Vec<Output>>,
    /// Last work: what stopped the read early.
    error: Option<CaptureError>,
}

/// Output bytes gathered before they are written (larger than `BufWriter`'s
/// buffer, so it writes them without copying them again).
const OUT_CHUNK: usize = 64 * 1024;

/// What messages held for their pairing may cost in all (their bytes and a
/// per-message overhead, see `Reorder::limit_bytes`): with the message count
/// (65,536 for files) it bounds the memory a request that is never answered
/// can make the messages after it take.
pub(crate) const HELD_BYTES: usize = 32 << 20;

/// Messages held for their pairing when reading a file (1,024 live).
pub(crate) const HELD_MESSAGES: usize = 65_536;

/// What takes the messages and notice lines that leave an [`Ordered`], in
/// order: a [`Printer`], or `render_pool`'s render threads.
pub(crate) trait Emit {
    /// A message to print; `Ok(false)` once nothing more can be printed.
    fn message(&mut self, m: Box<MessageRecord>) -> Result<bool, CliError>;
    /// A line for standard error, after what came before it.
    fn line(&mut self, line: String) -> Result<bool, CliError>;
    /// Every notice, printed or not, before its line.
    fn notice(&mut self, _n: &Notice) {}
}

/// The last stage of `print`: orders the analyzer's outputs (requests wait,
/// bounded, in a [`Reorder`] so `paired` is final when printed) and hands
/// them to `E` frame by frame, messages up to `-c`, notices as lines.
pub(crate) struct Ordered<E> {
    pub(crate) emit: E,
    pub(crate) reorder: Reorder,
    ready: Vec<Output>,
    count: Option<u64>,
    printed: u64,
    /// The capture's name, for notices.
    pub(crate) name: String,
    /// Which notices are printed, and how many of each kind were.
    pub(crate) notices: NoticeTally,
}

impl<E: Emit> Ordered<E> {
    pub(crate) fn new(emit: E, reorder: Reorder, count: Option<u64>, name: String) -> Self {
        Ordered {
            emit,
            reorder,
            ready: Vec::new(),
            count,
            printed: 0,
            name,
            notices: NoticeTally::default(),
        }
    }

    /// True once `-c` messages were handed out.
    pub(crate) fn count_reached(&self) -> bool {
        self.count.is_some_and(|c| self.printed >= c)
    }

    /// The outputs of one frame (drained from `outs`); `Ok(false)` when
    /// nothing more is wanted (count reached, output stopped).
    pub(crate) fn frame(&mut self, outs: &mut Vec<Output>) -> Result<bool, CliError> {
        if self.count_reached() {
            return Ok(false);
        }
        for o in outs.drain(..) {
            self.reorder.push(o, &mut self.ready);
        }
        self.emit_ready()
    }

    /// The end of the input: `fin` (the outputs of the analyzer's `finish`),
    /// everything still held, then what stopped the read early.
    pub(crate) fn finish(
        &mut self,
        fin: Vec<Output>,
        error: Option<CaptureError>,
    ) -> Result<(), CliError> {
        if !self.count_reached() {
            for o in fin {
                self.reorder.push(o, &mut self.ready);
            }
            self.reorder.flush(&mut self.ready);
            self.emit_ready()?;
        }
        if let Some(e) = error {
            self.emit
                .line(format!("kafkashark: {}", tree::escape_text(&e.to_string())))?;
        }
        for line in self.notices.summary(&self.name) {
            self.emit.line(line)?;
        }
        Ok(())
    }

    /// Hands on what left the reorder: messages past the count are dropped,
    /// notices are not; `Ok(false)` once the output stopped.
    fn emit_ready(&mut self) -> Result<bool, CliError> {
        let Ordered {
            emit,
            reorder,
            ready,
            count,
            printed,
            name,
            notices,
        } = self;
        for o in ready.drain(..) {
            let more = match o {
                Output::Message(_) if count.is_some_and(|c| *printed >= c) => continue,
                Output::Message(mut m) => {
                    // Its bytes, if they were held on disk.
                    reorder.fetch(&mut m);
                    *printed += 1;
                    emit.message(m)?
                }
                Output::Notice(n) => {
                    emit.notice(&n);
                    match notice_line(name, &n) {
                        Some(line) if notices.admit(&n) => emit.line(line)?,
                        _ => true,
                    }
                }
            };
            if !more {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl Ordered<Printer> {
    /// Takes one work; `Ok(false)` when it wants no more (count reached, end).
    fn take(&mut self, work: Work) -> Result<bool, CliError> {
        let first_ts = &mut self.emit.render.first_ts;
        *first_ts = first_ts.or(work.first_ts);
        let mut outs = work.outs.into_iter();
        let mut frame = Vec::new();
        let mut at = 0;
        // Frame by frame, as one thread running the analyzer would print them.
        for end in work.ends {
            frame.extend(outs.by_ref().take(end - at));
            at = end;
            if !self.frame(&mut frame)? {
                return Ok(false);
            }
        }
        match work.finish {
            Some(fin) => self.finish(fin, work.error).map(|()| false),
            None => Ok(true),
        }
    }

    /// Writes what is left; the number of malformed messages printed, and
    /// the messages chosen for saving (`-w`).
    fn end(mut self) -> Result<(u64, Option<crate::save::Chosen>), CliError> {
        self.emit.flush()?;
        Ok((self.emit.malformed, self.emit.save.take()))
    }
}

/// `print` of a file, summaries (`-V` goes to `render_pool`): the
/// `FileReader` reads, reassembles and frames on its own thread; this thread
/// routes its events to `threads` shard threads that decode and pair
/// (`crate::shards`: each connection's messages on its shard's thread);
/// `stage` (an [`Ordered`] [`Printer`]), made on a writer thread of its
/// own, takes their outputs merged back in order there, and orders, formats
/// and writes them. Each stage sees what one thread running them in turn
/// would see, in the same order, frame by frame, so the output is the same
/// (`-c` included: the stage checks the count at the same frame
/// boundaries). What the stage does not read of the messages (`keep`) is
/// released on the shard threads that made them.
fn run_file(
    src: FileSource,
    pipeline: PipelineConfig,
    analyzer: MessageAnalyzer,
    keep: Keep,
    threads: usize,
    stage: impl FnOnce() -> Ordered<Printer> + Send + 'static,
) -> Result<(u64, Option<crate::save::Chosen>), CliError> {
    let (mut dispatch, mut collect) =
        crate::shards::spawn(&analyzer, threads, keep).map_err(|err| CliError::Io {
            path: "the analysis threads".into(),
            err,
        })?;
    // The reader scans messages ahead while the shards are behind.
    let reader = FileReader::spawn(src, pipeline, BATCH_FRAMES, analyzer.ahead_scanner());
    // Where each batch's frames end among the events routed, sent before
    // the batch itself: the writer finds each frame's outputs by the places
    // of the events that made them. As many as the batches in flight.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Frames>(8);
    let writer = std::thread::spawn(move || {
        let mut stage = stage();
        let (mut outs, mut seqs) = (Vec::new(), Vec::new());
        // The last batch's outputs (the pipeline's `finish`), then the
        // shards' end reports: the stage's `finish`, with the read's error.
        let mut last: Option<(Vec<Output>, Option<CaptureError>)> = None;
        while collect.next(&mut outs, Some(&mut seqs)) {
            if collect.ended() {
                let (mut fin, error) = last.take().unwrap_or_default();
                fin.append(&mut outs);
                let work = Work {
                    finish: Some(fin),
                    error,
                    ..Work::default()
                };
                return stage.take(work).and_then(|_| stage.end());
            }
            let frames = rx.recv().unwrap_or_default();
            let outs = std::mem::take(&mut outs);
            if frames.last {
                last = Some((outs, frames.error));
                seqs.clear();
                continue;
            }
            let ends = frames.output_ends(&seqs, outs.len());
            seqs.clear();
            let work = Work {
                outs,
                ends,
                first_ts: frames.first_ts,
                ..Work::default()
            };
            // The stage wants no more (count reached, output error): what
            // the shards still make is dropped with the `Collect`.
            if !stage.take(work)? {
                return stage.end();
            }
        }
        stage.end()
    });
    for batch in reader.rx.iter() {
        let from = dispatch.seq();
        let frames = Frames {
            ends: batch.ends.iter().map(|&e| from + e as u64).collect(),
            first_ts: batch.first_ts,
            ..Frames::default()
        };
        let mut evs = batch.evs;
        if tx.send(frames).is_err() || !dispatch.push(&mut evs) {
            break;
        }
        if let Some(mut fin) = batch.finish {
            let last = Frames {
                last: true,
                error: batch.error,
                ..Frames::default()
            };
            if tx.send(last).is_ok() {
                dispatch.push(&mut fin);
            }
            break;
        }
    }
    // Input ends (or the writer stopped: the reader sees its channel closed).
    drop(dispatch);
    reader.end();
    writer
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// A batch's frames, for the writer of [`run_file`].
#[derive(Default)]
struct Frames {
    /// Where each frame's events end, as places in the order of all events
    /// ([`crate::shards::Dispatch::seq`]).
    ends: Vec<u64>,
    /// The time of the capture's first frame (first batch only).
    first_ts: Option<Timestamp>,
    /// The last batch: the events of the pipeline's `finish`.
    last: bool,
    /// The last batch: what stopped the read early.
    error: Option<CaptureError>,
}

impl Frames {
    /// Where each frame's outputs end among `n` outputs made by the events
    /// at `seqs` (in order): every output is its event's frame's.
    fn output_ends(&self, seqs: &[u64], n: usize) -> Vec<usize> {
        let mut at = 0;
        let mut ends: Vec<usize> = self
            .ends
            .iter()
            .map(|&e| {
                while seqs.get(at).is_some_and(|&s| s < e) {
                    at += 1;
                }
                at
            })
            .collect();
        // Outputs past the last frame's end cannot be: kept all the same.
        if ends.last().is_some_and(|&l| l < n) || ends.is_empty() && n > 0 {
            ends.push(n);
        }
        ends
    }
}

/// The shards of `print` of files: `--threads`, or `shards::default_shards`.
fn shards(a: &PrintArgs) -> usize {
    a.threads
        .map_or_else(crate::shards::default_shards, usize::from)
}

/// What of the messages a stage reads ([`run_file`]'s, `stats`'), the rest
/// released where they were made.
#[derive(Clone, Copy)]
pub(crate) struct Keep {
    /// Their frames (`print -w` saves them).
    pub(crate) frames: bool,
    /// Their bytes (a display filter reads their fields).
    pub(crate) bytes: bool,
}

/// Drops the bytes of the messages in `outs` (their facts and trees stay,
/// and their provenance with `keep_frames`): for stages that read only
/// facts (`print` summaries, `stats`) or frames (`print -w`).
pub fn strip_bytes(outs: &mut [Output], keep_frames: bool) {
    for o in outs {
        if let Output::Message(m) = o {
            m.raw.bytes = Default::default();
            if !keep_frames {
                m.raw.provenance = Vec::new();
            }
            m.raw.file_pieces = Vec::new();
            m.raw.tls_records = Vec::new();
        }
    }
}

/// Events of up to [`BATCH_FRAMES`] frames, made by the reader thread.
#[derive(Default)]
pub struct Batch {
    /// The pipeline events of the frames, in order.
    pub evs: Vec<Event>,
    /// Where each frame's events end in `evs`.
    pub ends: Vec<usize>,
    /// The time of the capture's first frame (first batch only).
    pub first_ts: Option<Timestamp>,
    /// Last batch: the events of `Pipeline::finish`.
    pub finish: Option<Vec<Event>>,
    /// Last batch: what stopped the read early.
    pub error: Option<CaptureError>,
    /// The frames' captured bytes, with 16 bytes of record header each (how
    /// far the file is read).
    pub bytes: u64,
    /// The pipeline's counters once the batch's frames were pushed.
    pub counters: kafkashark::pipeline::PipelineStats,
}

/// Frames per batch sent by the reader thread: enough that handing a batch
/// over is rare (a batch holds about 500 KB of frames), few enough that the
/// batches in flight and the messages made of them stay small. At 2,048
/// frames `stats` took 12 MB more memory and a fifth more CPU on the
/// benchmark corpus (docs/performance.md, "Batches").
pub const BATCH_FRAMES: usize = 512;

/// Captured bytes after which a batch is handed over even short of its
/// frames: frames of a loopback capture hold up to 64 KB each, and the
/// messages of a batch keep the buffers of those bytes alive.
pub const BATCH_BYTES: usize = 4 << 20;

/// Frames the reader reads between two offers of a batch it holds back
/// ([`Handover::poll`]).
const POLL_FRAMES: usize = 16;

/// Frames in the reader's first batch (each next one twice as many, up to
/// the batch size asked for).
const FIRST_BATCH_FRAMES: usize = 128;

/// The smallest batch, in captured bytes, that the reader makes near the
/// end of the file (see [`Tail`]).
const TAIL_BATCH_BYTES: usize = 64 << 10;

/// How the reader sizes its batches near the end of the file: at most an
/// eighth of what is left to read, down to [`TAIL_BATCH_BYTES`].
///
/// Why: the caller is usually behind by the batches in the channel and the
/// one it is on (it is the busier thread), and when the reader reaches the
/// end that backlog is decoded on one core while the other sits idle: the
/// analyzer of `stats` finished 5–5.6 ms after the read on the benchmark
/// corpus with batches of about 2 MB, 0.1 ms with these. Batches that
/// shrink with what is left make the backlog small when the read ends, and
/// the reader scans the requests of its last batches while it waits
/// ([`Handover::offer`]). Past the size the file had (one that grows while
/// read), its size is read again, at most once per [`TAIL_BATCH_BYTES`]
/// read.
struct Tail {
    /// The file's path; `None` when its size is not known (not a regular file).
    path: Option<String>,
    /// Its size when last read.
    size: u64,
    /// The offset from which its size may be read again.
    recheck: u64,
}

impl Tail {
    fn new(path: &str) -> Tail {
        let size = std::fs::metadata(path).ok().filter(|m| m.is_file());
        Tail {
            path: size.as_ref().map(|_| path.to_string()),
            size: size.map_or(0, |m| m.len()),
            recheck: 0,
        }
    }

    /// The captured bytes after which a batch that reached `offset` in
    /// the file is handed over.
    fn batch_bytes(&mut self, offset: Option<u64>) -> usize {
        let (Some(path), Some(at)) = (&self.path, offset) else {
            return BATCH_BYTES;
        };
        if at >= self.size && at >= self.recheck {
            if let Ok(m) = std::fs::metadata(path) {
                self.size = m.len();
            }
            self.recheck = at.saturating_add(TAIL_BATCH_BYTES as u64);
        }
        tail_bytes(self.size.saturating_sub(at))
    }
}

/// A batch's byte limit with `left` bytes of the file still to read.
fn tail_bytes(left: u64) -> usize {
    usize::try_from(left / 8)
        .unwrap_or(usize::MAX)
        .clamp(TAIL_BATCH_BYTES, BATCH_BYTES)
}

/// Reads a capture file and runs TCP reassembly and Kafka framing (the
/// `Pipeline`) on a thread of its own, handing batches of events through a
/// bounded channel; the caller decodes, pairs and prints them on its own
/// thread (`MessageAnalyzer::push`). Same events, same order as one thread
/// running `Analyzer::push`: two cores instead of one.
pub struct FileReader {
    /// The batches; the last one has `finish` set.
    pub rx: std::sync::mpsc::Receiver<Box<Batch>>,
    /// The reader thread, until it is waited for.
    handle: Option<std::thread::JoinHandle<()>>,
}

impl FileReader {
    /// Stops the reader (its channel closed: it ends at its next hand-over)
    /// and waits for it; a panic there is raised again here, rather than
    /// taken for the input's end.
    pub fn end(self) {
        let FileReader { rx, mut handle } = self;
        drop(rx);
        FileReader::joined(&mut handle);
    }

    /// Waits for the reader thread, once its channel is closed (it sent
    /// its last batch, or it stopped); a panic there is raised again here.
    pub fn join(&mut self) {
        FileReader::joined(&mut self.handle);
    }

    fn joined(handle: &mut Option<std::thread::JoinHandle<()>>) {
        if let Some(Err(p)) = handle.take().map(std::thread::JoinHandle::join) {
            std::panic::resume_unwind(p);
        }
    }

    /// Starts reading `src` through a pipeline with `cfg`, handing over
    /// `batch_frames` frames' events (at most about [`BATCH_BYTES`] of
    /// frames) at a time. With a `scanner`, requests are scanned here while
    /// the caller is behind ([`Handover`]); the analyzer takes their scans.
    pub fn spawn(
        mut src: FileSource,
        cfg: PipelineConfig,
        batch_frames: usize,
        mut scanner: Option<AheadScanner>,
    ) -> FileReader {
        // A few batches in flight bound the memory the reader can run ahead by.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Box<Batch>>(2);
        let cfg = PipelineConfig {
            twin_window_ns: src.twin_window_ns(),
            ..cfg
        };
        let handle = std::thread::spawn(move || {
            let mut pipeline = kafkashark::pipeline::Pipeline::new(cfg);
            let mut batch = Box::<Batch>::default();
            let mut first = true;
            // The first batches are small, growing to `batch_frames`: the
            // caller starts on the first frames at once instead of waiting
            // for a full batch to be read.
            let mut limit = batch_frames.clamp(1, FIRST_BATCH_FRAMES);
            // Captured bytes of the frames in `batch`.
            let mut held = 0usize;
            let mut tail = Tail::new(src.path());
            let mut out = Handover::new(tx);
            loop {
                // Frames decoded to their segments in the read buffer where
                // they can be (`poll_with`): a pure ACK makes no slice of it.
                let got = src.poll_with(|seen| {
                    let (ts, len, at) = seen.place();
                    pipeline.push(seen, &mut batch.evs);
                    (ts, len, at.map(|o| o.saturating_add(len as u64)))
                });
                let (ts, len, end) = match got {
                    Ok(Some(at)) => at,
                    Ok(None) => break,
                    Err(e) => {
                        batch.error = Some(e);
                        break;
                    }
                };
                if std::mem::take(&mut first) {
                    batch.first_ts = Some(ts);
                }
                held = held.saturating_add(len);
                batch.bytes = batch.bytes.saturating_add(len as u64 + 16);
                batch.ends.push(batch.evs.len());
                // A batch held back goes as soon as there is room.
                if batch.ends.len() % POLL_FRAMES == 0 && !out.poll() {
                    return;
                }
                if batch.ends.len() >= limit || held >= tail.batch_bytes(end) {
                    held = 0;
                    let grown = limit.saturating_mul(2).min(batch_frames).max(1);
                    // The next batch is sized as this one was (for
                    // its frames), with half again as much room: not
                    // grown by doubling (a copy of the whole batch, and
                    // page faults) when it holds a few more events.
                    let room = batch.evs.len().saturating_mul(grown / limit);
                    let room = room.saturating_add(room / 2);
                    limit = grown;
                    batch.counters = pipeline.stats();
                    let full = std::mem::replace(
                        &mut batch,
                        Box::new(Batch {
                            evs: Vec::with_capacity(room),
                            ends: Vec::with_capacity(limit),
                            ..Batch::default()
                        }),
                    );
                    if !out.offer(full, scanner.as_mut()) {
                        return;
                    }
                }
            }
            let mut fin = Vec::new();
            pipeline.finish(&mut fin);
            batch.finish = Some(fin);
            batch.counters = pipeline.stats();
            out.last(batch);
        });
        FileReader {
            rx,
            handle: Some(handle),
        }
    }
}

/// The reader's end of the channel to the caller, and the batch it holds
/// back: one whose messages it has all scanned while the channel stayed
/// full. The reader reads on instead of waiting idle, offers the held batch
/// again as it goes ([`Handover::poll`]) and scans the next batch while the
/// held one waits ([`Handover::offer`]); batches go over in order. When the
/// caller is behind, the reader thus scans for as long as it is, not only
/// until one batch is scanned (docs/performance.md, "Threads in `stats`").
struct Handover {
    /// Batches go boxed: an offer that finds the channel full gets its
    /// batch back, and a batch is offered after every message scanned
    /// while the caller is behind (moved in and out of `try_send` by value,
    /// its 368 bytes would be copied three times a message).
    tx: std::sync::mpsc::SyncSender<Box<Batch>>,
    /// A batch scanned through, waiting for room in the channel.
    held: Option<Box<Batch>>,
}

/// How far the reader's scan of one batch has come: its responses paired
/// (once, when the caller is found behind), the next request to look for,
/// the next paired response to scan.
struct ScanProgress {
    answers: Vec<kafkashark::analyzer::Answer>,
    paired: bool,
    next: Option<usize>,
    answer: usize,
}

impl ScanProgress {
    fn new() -> ScanProgress {
        ScanProgress {
            answers: Vec::new(),
            paired: false,
            next: Some(0),
            answer: 0,
        }
    }

    /// Scans one more message of `evs` with `scanner`: its requests first,
    /// then its responses paired with requests the scanner noted (those of
    /// the batches it found the caller behind on, which in a run where the
    /// caller is behind are nearly all); `false` when none is left.
    fn scan_one(&mut self, scanner: &mut AheadScanner, evs: &mut [Event]) -> bool {
        // Paired only when the caller is behind: a caller that keeps up
        // would have it cost the reader a lookup per message for nothing.
        if !std::mem::replace(&mut self.paired, true) {
            scanner.pair(evs, &mut self.answers);
        }
        if let Some(from) = self.next {
            self.next = scanner.scan_next(evs, from);
            if self.next.is_some() {
                return true;
            }
        }
        let Some(&(i, k, v)) = self.answers.get(self.answer) else {
            return false;
        };
        self.answer += 1;
        if let Some(ev) = evs.get_mut(i) {
            scanner.scan_response(ev, k, v);
        }
        true
    }
}

impl Handover {
    fn new(tx: std::sync::mpsc::SyncSender<Box<Batch>>) -> Handover {
        Handover { tx, held: None }
    }

    /// Hands over a full `batch` (after the held one); `false` when the
    /// caller has gone. While the channel is full (the caller is behind),
    /// the reader scans the batch's messages itself, one at a time, with
    /// `scanner`, and the caller's thread is spared their scans; a batch
    /// scanned through is held back while the reader reads on. When the
    /// caller keeps up, the batch goes at once and the caller scans its
    /// messages. Which thread scans a message changes nothing else (see
    /// [`AheadScanner`]).
    fn offer(&mut self, mut batch: Box<Batch>, scanner: Option<&mut AheadScanner>) -> bool {
        use std::sync::mpsc::TrySendError;
        let Some(scanner) = scanner else {
            return self.flush() && self.tx.send(batch).is_ok();
        };
        let mut progress = ScanProgress::new();
        // The held batch goes first; this one is scanned while it waits.
        if let Some(mut held) = self.held.take() {
            loop {
                match self.tx.try_send(held) {
                    Ok(()) => break,
                    Err(TrySendError::Disconnected(_)) => return false,
                    Err(TrySendError::Full(back)) => held = back,
                }
                if !progress.scan_one(scanner, &mut batch.evs) {
                    if self.tx.send(held).is_err() {
                        return false;
                    }
                    break;
                }
            }
        }
        loop {
            match self.tx.try_send(batch) {
                Ok(()) => return true,
                Err(TrySendError::Disconnected(_)) => return false,
                Err(TrySendError::Full(back)) => batch = back,
            }
            if !progress.scan_one(scanner, &mut batch.evs) {
                self.held = Some(batch);
                return true;
            }
        }
    }

    /// Hands over the held batch if the channel has room now; `false` when
    /// the caller has gone.
    fn poll(&mut self) -> bool {
        use std::sync::mpsc::TrySendError;
        let Some(held) = self.held.take() else {
            return true;
        };
        match self.tx.try_send(held) {
            Ok(()) => true,
            Err(TrySendError::Full(back)) => {
                self.held = Some(back);
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// Hands over the held batch, waiting for room; `false` when the caller
    /// has gone.
    fn flush(&mut self) -> bool {
        self.held.take().is_none_or(|b| self.tx.send(b).is_ok())
    }

    /// Hands over the last batch (after the held one).
    fn last(mut self, batch: Box<Batch>) {
        if self.flush() {
            let _ = self.tx.send(batch);
        }
    }
}

/// Formats and writes the messages that leave an [`Ordered`] (`print`
/// without `-V` of a file, or live), a notice's line once what came before
/// it is written.
struct Printer {
    /// `-w`: messages are chosen for saving, not printed.
    save: Option<crate::save::Chosen>,
    render: Render,
    malformed: u64,
    /// Lines written and not yet handed to the output.
    buf: Vec<u8>,
    /// Bytes gathered in `buf` before they are written (0: every line).
    chunk: usize,
    /// `-V` (live, or a file read for a while): how trees are decoded.
    trees: Option<Trees>,
    /// Standard output, locked by the thread that writes it.
    w: std::io::BufWriter<std::io::StdoutLock<'static>>,
}

/// How `Printer` gives each message its tree as it prints it: decoded with
/// `opts` (the analyzer read only summaries), its `TopicId`s named as the
/// analyzer knew them when it read the message (`stamps`); see
/// `render_pool::decode`.
struct Trees {
    opts: kafkashark::kafka::DecodeOptions,
    stamps: std::sync::Arc<crate::render_pool::Stamps>,
}

impl Emit for Printer {
    fn message(&mut self, mut m: Box<MessageRecord>) -> Result<bool, CliError> {
        if let Some(chosen) = &mut self.save {
            self.malformed += u64::from(m.info.decode_error.is_some());
            chosen.add(m.info.capture, m.info.client, m.info.broker, &m.raw);
            return Ok(true);
        }
        if let Some(t) = &self.trees {
            crate::render_pool::decode(&mut m, &t.opts, &t.stamps);
        }
        self.malformed += u64::from(m.info.decode_error.is_some());
        self.render.message(&mut self.buf, &m);
        if self.buf.len() >= self.chunk {
            self.drain()?;
        }
        Ok(true)
    }

    fn line(&mut self, line: String) -> Result<bool, CliError> {
        // What was printed before the line reaches stdout first, so a
        // terminal (or `2>&1`) shows them in order.
        self.flush()?;
        eprintln!("{line}");
        Ok(true)
    }

    fn notice(&mut self, n: &Notice) {
        if let (
            Some(chosen),
            Notice::Tls {
                client,
                broker,
                capture,
                what: TlsEvent::ClientHello { random, .. },
                ..
            },
        ) = (&mut self.save, n)
        {
            chosen.tls(*capture, *client, *broker, *random);
        }
    }
}

impl Printer {
    /// After the analyzer made `outs`: notes the topic ids they teach and
    /// drops the trees the analyzer made for that (`render_pool::Stamps`).
    fn learn(&self, analyzer: &MessageAnalyzer, outs: &mut [Output]) {
        if let Some(t) = &self.trees {
            t.stamps.learn(analyzer, outs);
        }
    }

    /// Writes the lines gathered in `buf`.
    fn drain(&mut self) -> Result<(), CliError> {
        let r = self.w.write_all(&self.buf).map_err(CliError::Output);
        self.buf.clear();
        // A huge tree's text made it grow: give that memory back.
        if self.buf.capacity() > 4 * OUT_CHUNK {
            self.buf = Vec::new();
        }
        r
    }

    /// Writes the lines gathered so far, through to the output.
    fn flush(&mut self) -> Result<(), CliError> {
        self.drain()?;
        self.w.flush().map_err(CliError::Output)
    }
}

/// Formats messages: a JSONL object or a text line (with its tree under `-V`)
/// per message. Each thread that formats has its own.
pub(crate) struct Render {
    /// Text or JSONL.
    pub(crate) format: PrintFormat,
    /// With the field tree.
    pub(crate) verbose: bool,
    /// How a text tree is laid out.
    pub(crate) layout: tree::Layout,
    /// The time of the capture's first frame (text times are relative to it).
    pub(crate) first_ts: Option<Timestamp>,
    /// How text lines write the time (`-t`).
    pub(crate) time: TimeFormat,
    /// The time of the last message written (`-t d`).
    pub(crate) prev_ts: Option<Timestamp>,
    /// The time's text, reused from line to line.
    time_buf: String,
    /// Writes the JSONL lines.
    pub(crate) json: JsonWriter,
    /// Writes the text trees.
    pub(crate) text: tree::TextWriter,
}

impl Render {
    /// A formatter for `format`, with trees when `verbose`.
    pub(crate) fn new(format: PrintFormat, verbose: bool) -> Render {
        Render {
            format,
            verbose,
            layout: tree::Layout::Wide,
            first_ts: None,
            time: TimeFormat::Relative,
            prev_ts: None,
            time_buf: String::new(),
            json: JsonWriter::default(),
            text: tree::TextWriter::default(),
        }
    }

    /// The same, writing times as `time` does.
    pub(crate) fn time(self, time: TimeFormat) -> Render {
        Render { time, ..self }
    }

    /// The same, writing text trees in `layout`.
    pub(crate) fn layout(self, layout: tree::Layout) -> Render {
        Render { layout, ..self }
    }

    /// The same, each JSONL line naming its capture when `names` are
    /// several ([`JsonWriter::with_captures`]).
    pub(crate) fn captures(self, names: &[String]) -> Render {
        Render {
            json: JsonWriter::with_captures(names),
            ..self
        }
    }

    /// Appends the line (JSONL) or lines (text) of `m` to `out`, with its
    /// tree (`m.decoded`) under `-V`.
    pub(crate) fn message(&mut self, out: &mut Vec<u8>, m: &MessageRecord) {
        match self.format {
            PrintFormat::Jsonl => {
                self.json.write(out, m, self.verbose);
                out.push(b'\n');
            }
            PrintFormat::Text => {
                self.summary_line(out, m);
                if self.verbose {
                    if let Some(d) = &m.decoded {
                        // Straight into `out`, sized once: a tree's text can be
                        // a hundred times its message's bytes.
                        let bytes = tree::SourceBytes::default();
                        self.text.write(out, &d.root, "    ", &bytes, self.layout);
                    }
                }
            }
        }
    }

    /// Appends the text summary line of `m` (without its tree), written
    /// into `out` piece by piece: no `format!` of the whole line, no
    /// `String` made for it or for its numbers (a line for every message of
    /// `print`).
    pub(crate) fn summary_line(&mut self, out: &mut Vec<u8>, m: &MessageRecord) {
        use tree::json;
        let i = &m.info;
        let mut time = std::mem::take(&mut self.time_buf);
        time.clear();
        self.time
            .write(&mut time, i.ts, self.first_ts, self.prev_ts);
        self.prev_ts = Some(i.ts);
        let (from, to, kind) = match i.kind {
            Kind::Request => (i.client, i.broker, "Request"),
            Kind::Response => (i.broker, i.client, "Response"),
        };
        // `{:>6} {time:>12} s{:<3} {from} → {to}  {api} {kind}  corr={} len={}`.
        spaces(out, 6usize.saturating_sub(decimal_len(i.frame)));
        json::u64(out, i.frame);
        out.push(b' ');
        spaces(out, 12usize.saturating_sub(time.chars().count()));
        out.extend_from_slice(time.as_bytes());
        self.time_buf = time;
        out.extend_from_slice(b" s");
        json::u64(out, i.stream);
        spaces(out, 3usize.saturating_sub(decimal_len(i.stream)));
        // Writing to a `Vec` cannot fail.
        let _ = write!(out, " {from} → {to}  ");
        put_api_text(out, i);
        out.push(b' ');
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"  corr=");
        match i.correlation_id {
            Some(c) => json::i64(out, c.into()),
            None => out.push(b'?'),
        }
        out.extend_from_slice(b" len=");
        json::i64(out, i.length.into());
        if let Some(c) = &i.client_id {
            let _ = write!(out, " client_id={:?}", tree::escape_text(c));
        }
        if let Some(l) = i.latency_ms() {
            let _ = write!(out, " latency={l:.3}ms");
        }
        if let Some(h) = i.hol_wait_ns.filter(|&h| h > 0) {
            let _ = write!(out, " hol_wait={:.3}ms", h as f64 / 1e6);
        }
        if let Some(r) = i.rtt.filter(|_| i.kind == Kind::Response) {
            let _ = write!(out, " rtt={:.3}ms", r.ms());
        }
        if let Some(a) = &i.also {
            let _ = write!(out, " also_frame={}", a.frame);
            if let Some(l) = a.latency_ns {
                let _ = write!(out, " also_latency={:.3}ms", l as f64 / 1e6);
            }
        }
        if i.long_poll() {
            out.extend_from_slice(b" [long-poll]");
        }
        if let Some(t) = i.throttle_time_ms.filter(|&t| t > 0) {
            let _ = write!(out, " throttle={t}ms");
        }
        if !i.error_codes.is_empty() {
            let _ = write!(out, " errors={}", error_names(&i.error_codes));
        }
        for m in pairing_marks(i) {
            out.push(b' ');
            out.extend_from_slice(m.as_bytes());
        }
        if let Some(e) = &i.decode_error {
            let _ = write!(out, " [malformed: {}]", tree::escape_text(e));
        }
        if let Some(w) = &i.decode_warning {
            let _ = write!(out, " [warning: {w}]");
        }
        out.push(b'\n');
    }
}

/// Appends `n` spaces.
fn spaces(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, b' ');
}

/// How many decimal digits `v` has.
fn decimal_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// The API and its version as the lines show them: `Produce v9`, `Produce`
/// (no version), `api 99` (a key this build does not name), `unknown`.
pub fn api_text(i: &MessageInfo) -> String {
    let mut b = Vec::new();
    put_api_text(&mut b, i);
    // Names and numbers: UTF-8 (checked, not copied).
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends [`api_text`].
fn put_api_text(out: &mut Vec<u8>, i: &MessageInfo) {
    match (i.api_name(), i.api_version, i.api_key) {
        (Some(n), v, _) => {
            out.extend_from_slice(n.as_bytes());
            if let Some(v) = v {
                out.extend_from_slice(b" v");
                tree::json::i64(out, v.into());
            }
        }
        (None, _, Some(k)) => {
            // Writing to a `Vec` cannot fail.
            let _ = write!(out, "api {k}");
        }
        (None, _, None) => out.extend_from_slice(b"unknown"),
    }
}

/// The names of error codes (the number for a code without one), a repeated
/// name once, comma-separated.
pub fn error_names(codes: &[i16]) -> String {
    let mut names: Vec<String> = codes
        .iter()
        .map(|&c| error_name(c).map_or(c.to_string(), str::to_string))
        .collect();
    names.dedup();
    names.join(",")
}

/// The JSONL contract of DESIGN.md, plus `fields` with `-V`, as a JSON value:
/// the reference [`JsonWriter`] is tested against.
#[cfg(test)]
pub fn message_json(m: &MessageRecord, verbose: bool) -> serde_json::Value {
    let i = &m.info;
    let mut o = serde_json::json!({
        "frame": i.frame,
        "first_frame": i.first_frame,
        "ts": i.ts.as_f64(),
        "stream": i.stream,
        "client": i.client.to_string(),
        "broker": i.broker.to_string(),
        "kind": i.kind,
        "api_key": i.api_key,
        "api_name": i.api_name(),
        "api_version": i.api_version,
        "correlation_id": i.correlation_id,
        "length": i.length,
        "paired": i.paired,
        "decode_error": i.decode_error,
        "topics": i.topics.iter().map(|t| &**t).collect::<Vec<_>>(),
    });
    if let Some(map) = o.as_object_mut() {
        if i.kind == Kind::Request {
            map.insert("client_id".into(), i.client_id.clone().into());
            map.insert("expects_response".into(), i.expects_response.into());
        } else {
            map.insert("latency_ms".into(), i.latency_ms().into());
            let ms = |n: Option<u64>| n.map(|n| n as f64 / 1e6);
            map.insert("hol_wait_ms".into(), ms(i.hol_wait_ns).into());
            map.insert("service_ms".into(), ms(i.service_ns()).into());
            map.insert("long_poll".into(), i.long_poll().into());
            map.insert("throttle_time_ms".into(), i.throttle_time_ms.into());
            map.insert("error_codes".into(), i.error_codes.clone().into());
            map.insert("inferred".into(), i.inferred.into());
        }
        if let Some(w) = &i.decode_warning {
            map.insert("decode_warning".into(), w.to_string().into());
        }
        if i.resynced {
            map.insert("resynced".into(), true.into());
            map.insert("skipped_before".into(), i.skipped_before.into());
        }
        if let Some(r) = i.rtt {
            map.insert("rtt_ms".into(), r.ms().into());
        }
        if verbose {
            if let Some(d) = &m.decoded {
                map.insert("fields".into(), d.root.to_json());
            }
        }
    }
    o
}

/// Streams whose endpoints [`JsonWriter`] keeps as JSON text (a direct-mapped
/// cache indexed by stream id: bounded, and streams are numbered in order).
const ADDR_CACHE: usize = 1024;

/// A stream's client, broker and capture, and their JSON text.
type Endpoints = (SocketAddr, SocketAddr, u16, Vec<u8>);

/// Writes messages as JSONL without building a JSON value: the same bytes
/// `serde_json::to_string(&message_json(m, verbose))` gives (keys in sorted
/// order, as serde_json's map keeps them; serde_json's number formats and
/// string escapes), with the endpoints of recent streams formatted once
/// instead of per message.
#[derive(Default)]
pub struct JsonWriter {
    /// `"broker":"…","client":"…"` of a client and broker, at `stream % ADDR_CACHE`.
    addrs: Vec<Option<Endpoints>>,
    /// The names of the captures read together, as JSON strings; empty
    /// when one is read (no `capture` key).
    captures: Vec<Vec<u8>>,
}

impl JsonWriter {
    /// Each message names the capture it came from (`"capture"`), of
    /// `names` when there are several.
    pub fn with_captures(names: &[String]) -> JsonWriter {
        let captures = if names.len() > 1 {
            names
                .iter()
                .map(|n| {
                    let mut s = Vec::new();
                    tree::json::str(&mut s, n);
                    s
                })
                .collect()
        } else {
            Vec::new()
        };
        JsonWriter {
            addrs: Vec::new(),
            captures,
        }
    }

    /// Appends the JSON object of `m` (with its tree, `m.decoded`, when
    /// `verbose`).
    pub fn write(&mut self, out: &mut Vec<u8>, m: &MessageRecord, verbose: bool) {
        self.head(out, m);
        if let (true, Some(d)) = (verbose, &m.decoded) {
            out.extend_from_slice(b",\"fields\":");
            // Records decoded with `records_json` are written from their
            // bytes, straight into `out`.
            let bytes = tree::SourceBytes {
                message: &m.raw.bytes,
                sources: &d.sources,
            };
            d.root.write_json_in(out, &bytes);
        }
        Self::tail(out, m);
    }

    /// The object's keys before `fields` (from its opening brace).
    pub fn head(&mut self, out: &mut Vec<u8>, m: &MessageRecord) {
        use kafkashark::kafka::tree::json;
        let i = &m.info;
        let req = i.kind == Kind::Request;
        out.push(b'{');
        if let Some(a) = &i.also {
            self.also(out, a, req);
            out.push(b',');
        }
        out.extend_from_slice(b"\"api_key\":");
        or_null(out, i.api_key.map(|k| i64::from(k.0)), json::i64);
        out.extend_from_slice(b",\"api_name\":");
        or_null(out, i.api_name(), json::str);
        out.extend_from_slice(b",\"api_version\":");
        or_null(out, i.api_version.map(i64::from), json::i64);
        out.push(b',');
        self.endpoints(out, i);
        if req {
            out.extend_from_slice(b",\"client_id\":");
            or_null(out, i.client_id.as_deref(), json::str);
        }
        out.extend_from_slice(b",\"correlation_id\":");
        or_null(out, i.correlation_id.map(i64::from), json::i64);
        out.extend_from_slice(b",\"decode_error\":");
        or_null(out, i.decode_error.as_deref(), json::str);
        if let Some(w) = &i.decode_warning {
            out.extend_from_slice(b",\"decode_warning\":");
            json::str(out, &w.to_string());
        }
        if req {
            out.extend_from_slice(b",\"expects_response\":");
            boolean(out, i.expects_response);
        } else {
            out.extend_from_slice(b",\"error_codes\":");
            list(out, &i.error_codes, |out, &c| json::i64(out, c.into()));
        }
    }

    /// The object's keys after `fields`, and its closing brace.
    pub fn tail(out: &mut Vec<u8>, m: &MessageRecord) {
        use kafkashark::kafka::tree::json;
        let i = &m.info;
        let req = i.kind == Kind::Request;
        out.extend_from_slice(b",\"first_frame\":");
        json::u64(out, i.first_frame);
        out.extend_from_slice(b",\"frame\":");
        json::u64(out, i.frame);
        if !req {
            out.extend_from_slice(b",\"hol_wait_ms\":");
            or_null(out, i.hol_wait_ns.map(|n| n as f64 / 1e6), json::f64);
            out.extend_from_slice(b",\"inferred\":");
            boolean(out, i.inferred);
        }
        out.extend_from_slice(if req {
            b",\"kind\":\"request\""
        } else {
            b",\"kind\":\"response\""
        });
        if !req {
            out.extend_from_slice(b",\"latency_ms\":");
            or_null(out, i.latency_ms(), json::f64);
        }
        out.extend_from_slice(b",\"length\":");
        json::i64(out, i.length.into());
        if !req {
            out.extend_from_slice(b",\"long_poll\":");
            boolean(out, i.long_poll());
        }
        out.extend_from_slice(b",\"paired\":");
        boolean(out, i.paired);
        if i.resynced {
            out.extend_from_slice(b",\"resynced\":true");
        }
        if let Some(r) = i.rtt {
            out.extend_from_slice(b",\"rtt_ms\":");
            json::f64(out, r.ms());
        }
        if !req {
            out.extend_from_slice(b",\"service_ms\":");
            or_null(out, i.service_ns().map(|n| n as f64 / 1e6), json::f64);
        }
        if i.resynced {
            out.extend_from_slice(b",\"skipped_before\":");
            json::u64(out, i.skipped_before);
        }
        out.extend_from_slice(b",\"stream\":");
        json::u64(out, i.stream);
        if !req {
            out.extend_from_slice(b",\"throttle_time_ms\":");
            or_null(out, i.throttle_time_ms.map(i64::from), json::i64);
        }
        out.extend_from_slice(b",\"topics\":");
        list(out, &i.topics, |out, t| json::str(out, t));
        out.extend_from_slice(b",\"ts\":");
        json::f64(out, i.ts.as_f64());
        out.push(b'}');
    }

    /// `"also":{…}`: where the other capture point saw the message.
    fn also(&self, out: &mut Vec<u8>, a: &Also, req: bool) {
        use kafkashark::kafka::tree::json;
        out.extend_from_slice(b"\"also\":{\"capture\":");
        match self.captures.get(usize::from(a.capture)) {
            Some(name) => out.extend_from_slice(name),
            None => json::u64(out, a.capture.into()),
        }
        out.extend_from_slice(b",\"first_frame\":");
        json::u64(out, a.first_frame);
        out.extend_from_slice(b",\"frame\":");
        json::u64(out, a.frame);
        if !req {
            out.extend_from_slice(b",\"latency_ms\":");
            or_null(out, a.latency_ns.map(|n| n as f64 / 1e6), json::f64);
        }
        out.extend_from_slice(b",\"ts\":");
        json::f64(out, a.ts.as_f64());
        out.push(b'}');
    }

    /// `"broker":"…","client":"…"` (socket addresses never need escaping),
    /// with `"capture":"…"` between them when several are read.
    fn endpoints(&mut self, out: &mut Vec<u8>, i: &MessageInfo) {
        if self.addrs.is_empty() {
            self.addrs = vec![None; ADDR_CACHE];
        }
        let slot = (i.stream % ADDR_CACHE as u64) as usize;
        let Some(entry) = self.addrs.get_mut(slot) else {
            return;
        };
        match entry {
            Some((c, b, k, text)) if *c == i.client && *b == i.broker && *k == i.capture => {
                out.extend_from_slice(text)
            }
            _ => {
                let mut text = Vec::with_capacity(64);
                let _ = write!(text, "\"broker\":\"{}\",", i.broker);
                if let Some(name) = self.captures.get(usize::from(i.capture)) {
                    text.extend_from_slice(b"\"capture\":");
                    text.extend_from_slice(name);
                    text.push(b',');
                }
                let _ = write!(text, "\"client\":\"{}\"", i.client);
                out.extend_from_slice(&text);
                *entry = Some((i.client, i.broker, i.capture, text));
            }
        }
    }
}

/// `v` written with `write`, or JSON's `null`.
fn or_null<T>(out: &mut Vec<u8>, v: Option<T>, write: impl FnOnce(&mut Vec<u8>, T)) {
    match v {
        Some(v) => write(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON boolean.
fn boolean(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(if v { b"true" } else { b"false" });
}

/// A JSON array of `items`, each written with `write`.
fn list<'a, T>(out: &mut Vec<u8>, items: &'a [T], write: impl Fn(&mut Vec<u8>, &'a T)) {
    out.push(b'[');
    for (k, t) in items.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        write(out, t);
    }
    out.push(b']');
}

/// How a message's text line (here and in the TUI's list) marks its
/// pairing and its framing: a request that went unanswered, or that was
/// answered though it expected no response (acks=0: an anomaly); a
/// response without its request; a message found after skipping bytes.
/// A mid-stream start whose first message began at the first byte captured
/// skipped nothing and is not marked (JSONL's `resynced` still says it).
pub(crate) fn pairing_marks(i: &MessageInfo) -> Vec<String> {
    let mut out = Vec::new();
    match (i.kind, i.expects_response, i.paired) {
        (Kind::Request, false, false) => out.push("[no response expected]".into()),
        (Kind::Request, false, true) => {
            out.push("[answered, though no response was expected]".into())
        }
        (Kind::Request, true, false) => out.push("[unpaired]".into()),
        (Kind::Response, _, false) if i.inferred => out.push("[inferred]".into()),
        (Kind::Response, _, false) => out.push("[unpaired]".into()),
        _ => {}
    }
    if i.resynced && i.skipped_before > 0 {
        out.push(format!("[resync, {} bytes skipped]", i.skipped_before));
    }
    out
}

/// Notices of one kind printed in full before the rest are only counted
/// (`--notices all` prints every one).
pub(crate) const FIRST_NOTICES: u64 = 5;

/// Repeated notices summarised: the first [`FIRST_NOTICES`] of each kind
/// are printed, the others counted and said in one line at the end.
#[derive(Debug, Default)]
pub(crate) struct NoticeTally {
    /// Print every notice.
    pub(crate) all: bool,
    /// (what, how many, frame of the first), in order of first appearance.
    kinds: Vec<(&'static str, u64, u64)>,
}

impl NoticeTally {
    /// Whether notice `n` is printed; it is counted either way.
    fn admit(&mut self, n: &Notice) -> bool {
        let Some((what, frame)) = notice_kind(n) else {
            return true;
        };
        match self.kinds.iter_mut().find(|k| k.0 == what) {
            Some(k) => k.1 += 1,
            None => self.kinds.push((what, 1, frame)),
        }
        self.all
            || self
                .kinds
                .iter()
                .any(|k| k.0 == what && k.1 <= FIRST_NOTICES)
    }

    /// A line for each kind of which some notices were not printed.
    fn summary(&self, name: &str) -> Vec<String> {
        (self.kinds.iter())
            .filter(|k| !self.all && k.1 > FIRST_NOTICES)
            .map(|&(what, n, first)| {
                format!(
                    "kafkashark: {}: {n} {what} in all, the first at frame {first}; {FIRST_NOTICES} listed, `--notices all` lists every one",
                    tree::escape_text(name)
                )
            })
            .collect()
    }
}

/// What kind of notice `n` is (said of many), and its first frame.
fn notice_kind(n: &Notice) -> Option<(&'static str, u64)> {
    use kafkashark::pipeline::Warning as W;
    Some(match n {
        Notice::Unanswered { request, .. } => ("requests got no response", request.frame),
        Notice::Tls { frame, what, .. } => (tls_problem(what)?, *frame),
        Notice::Stream(Event::Gap { frame, .. }) => ("gaps in the bytes", *frame),
        Notice::Stream(Event::Resync { frame, .. }) => ("resynchronisations", *frame),
        Notice::Stream(Event::Discarded { frame, .. }) => {
            ("runs of bytes formed no message", *frame)
        }
        Notice::Stream(Event::Partial(m)) => ("messages were incomplete", m.first_frame),
        Notice::Stream(Event::Warning { frame, what, .. }) => match what {
            W::Packet(_) => ("frames could not be used", *frame),
            W::AfterClose(_) => ("segments came after their connection closed", *frame),
            W::Reordered { .. } => ("connections had late segments", *frame),
            W::BadSize { .. } => ("impossible message sizes were read", *frame),
            W::NoKafka { .. } => return None,
        },
        Notice::Stream(_) => return None,
    })
}

/// The standard error line of a notice about the capture `name`, if it is shown.
pub(crate) fn notice_line(name: &str, n: &Notice) -> Option<String> {
    notice_text(n).map(|text| {
        format!(
            "kafkashark: {}: {}",
            tree::escape_text(name),
            tree::escape_text(&text)
        )
    })
}

/// The kind of a TLS event that is a problem: no key, a suite not
/// decrypted, a direction that stopped decrypting, a fatal alert.
fn tls_problem(what: &TlsEvent) -> Option<&'static str> {
    Some(match what {
        TlsEvent::NoKey { .. } => "TLS connections had no session key",
        TlsEvent::Unsupported { .. } => "TLS connections used a suite not decrypted",
        TlsEvent::Stopped { .. } => "TLS directions stopped decrypting",
        TlsEvent::Alert { level: 2, .. } => "TLS fatal alerts",
        TlsEvent::Certificate { invalid: true, .. } => "TLS certificates were not valid when sent",
        _ => return None,
    })
}

fn notice_text(n: &Notice) -> Option<String> {
    Some(match n {
        Notice::Tls { stream, what, .. } => {
            tls_problem(what)?;
            format!("stream {stream}: TLS: {what}")
        }
        Notice::Unanswered { stream, request } => format!(
            "stream {stream}: request at frame {} ({} v{}) got no response",
            request.frame,
            request.api_key.name().unwrap_or("?"),
            request.api_version
        ),
        Notice::Stream(Event::Gap {
            stream,
            dir,
            len,
            frame,
            reason,
            ..
        }) => format!(
            "stream {stream} {dir:?}: {len} bytes missing before frame {frame} ({reason:?})"
        ),
        Notice::Stream(Event::Resync {
            stream,
            dir,
            skipped,
            frame,
            ..
        }) => format!(
            "stream {stream} {dir:?}: resynchronised at frame {frame} after skipping {skipped} bytes"
        ),
        Notice::Stream(Event::Discarded {
            stream,
            dir,
            bytes,
            frame,
        }) => format!("stream {stream} {dir:?}: {bytes} bytes from frame {frame} formed no message"),
        Notice::Stream(Event::Warning {
            what: what @ kafkashark::pipeline::Warning::NoKafka { .. },
            ..
        }) => what.to_string(),
        Notice::Stream(Event::Warning {
            frame,
            offset: Some(o),
            what,
        }) => format!("frame {frame}, offset {o}: {what}"),
        Notice::Stream(Event::Warning { frame, what, .. }) => format!("frame {frame}: {what}"),
        Notice::Stream(Event::Partial(m)) => format!(
            "stream {} {:?}: message at frame {} incomplete, {} bytes missing",
            m.stream, m.dir, m.first_frame, m.missing
        ),
        Notice::Stream(_) => return None,
    })
}

/// The pcap files shipped in captures/, sorted (tests).
#[cfg(test)]
pub(crate) fn shipped_captures() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("captures/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "{paths:?}");
    paths
}

#[cfg(test)]
mod json_tests {
    use super::*;
    use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
    use kafkashark::capture::{FileSource, FrameSource, Polled};

    /// The direct writer gives exactly serde_json's bytes for every message of
    /// every shipped capture, with and without trees.
    #[test]
    fn direct_jsonl_equals_serde_json() {
        let mut checked = 0;
        for p in shipped_captures() {
            let mut src = FileSource::open(p.to_str().expect("path")).expect("open");
            let mut a = Analyzer::new(AnalyzerConfig {
                keep_trees: true,
                ..AnalyzerConfig::default()
            });
            let mut out = Vec::new();
            while let Ok(Polled::Frame(f)) = src.poll() {
                a.push(&f, &mut out);
            }
            a.finish(&mut out);
            // One writer per capture and mode, as `print` keeps one: its
            // cache of endpoints' text is used from the second message of a
            // stream on.
            let mut writers = [JsonWriter::default(), JsonWriter::default()];
            for o in &out {
                let Output::Message(m) = o else { continue };
                for (verbose, w) in [false, true].into_iter().zip(&mut writers) {
                    let want = serde_json::to_string(&message_json(m, verbose)).expect("json");
                    let mut got = Vec::new();
                    w.write(&mut got, m, verbose);
                    assert_eq!(
                        String::from_utf8(got).expect("utf8"),
                        want,
                        "{}",
                        p.display()
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 500, "{checked}");
    }
}

#[cfg(test)]
mod reader_tests {
    use super::*;
    use kafkashark::analyzer::AnalyzerConfig;

    /// A reader thread that panics closes its channel without a last
    /// batch; waiting for it raises its panic again, where taking the
    /// closed channel for the end of the input would print a truncated
    /// capture as if it were whole.
    #[test]
    fn a_reader_that_panics_is_not_taken_for_the_end_of_input() {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Box<Batch>>(1);
        let handle = std::thread::spawn(move || {
            drop(tx);
            panic!("the reader failed");
        });
        let mut reader = FileReader {
            rx,
            handle: Some(handle),
        };
        assert!(reader.rx.recv().is_err());
        let raised =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| reader.join())).unwrap_err();
        assert_eq!(raised.downcast_ref::<&str>(), Some(&"the reader failed"));
        // Waited for once: nothing is left to wait for.
        reader.end();
    }

    /// A reader stopped early (its channel dropped while it reads on)
    /// ends at its next hand-over, and `end` waits for it.
    #[test]
    fn a_reader_stopped_early_ends_and_is_waited_for() {
        let path = std::env::temp_dir().join(format!(
            "kafkashark-stopped-early-{}-{:?}.pcap",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, pcap_of_frames(20_000, 100)).expect("write");
        let src = FileSource::open(path.to_str().expect("path")).expect("open");
        let reader = FileReader::spawn(src, PipelineConfig::default(), 16, None);
        let first = reader.rx.recv().expect("a first batch");
        assert!(
            first.finish.is_none(),
            "the capture is read in many batches"
        );
        reader.end();
        let _ = std::fs::remove_file(&path);
    }

    /// A classic pcap (`LINKTYPE_RAW`) of `n` frames of `size` bytes each.
    fn pcap_of_frames(n: usize, size: usize) -> Vec<u8> {
        let mut f = Vec::with_capacity(24 + n * (16 + size));
        for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 262_144, 101] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        for i in 0..n {
            let len = size as u32;
            for v in [1_700_000_000, i as u32, len, len] {
                f.extend_from_slice(&v.to_le_bytes());
            }
            f.extend((0..size).map(|j| (i + j) as u8));
        }
        f
    }

    /// A batch is handed over at once when there is room; when there is
    /// none it is held (its messages scanned) while the reader reads on,
    /// and goes before the next one. Nothing goes to a caller that left.
    #[test]
    fn handover_holds_a_batch_and_keeps_the_order() {
        let batch = |frames: usize| {
            Box::new(Batch {
                ends: vec![0; frames],
                ..Batch::default()
            })
        };
        let mut cfg = AnalyzerConfig::default();
        cfg.decode.records = false;
        let mut scanner = MessageAnalyzer::new(cfg)
            .ahead_scanner()
            .expect("a scanner");
        let (tx, rx) = std::sync::mpsc::sync_channel::<Box<Batch>>(1);
        let mut out = Handover::new(tx);
        let frames = |b: Result<Box<Batch>, _>| b.map(|b| b.ends.len()).ok();
        assert!(out.offer(batch(1), Some(&mut scanner)));
        assert!(out.held.is_none());
        // The channel is full: the second is held, not waited on.
        assert!(out.offer(batch(2), Some(&mut scanner)));
        assert_eq!(out.held.as_ref().map(|b| b.ends.len()), Some(2));
        assert!(out.poll());
        assert!(out.held.is_some());
        assert_eq!(frames(rx.recv()), Some(1));
        // Room again: the held batch goes at the next poll.
        assert!(out.poll());
        assert!(out.held.is_none());
        assert_eq!(frames(rx.recv()), Some(2));
        // Held again; the next offer waits for room to send it first.
        assert!(out.offer(batch(3), Some(&mut scanner)));
        assert!(out.offer(batch(4), Some(&mut scanner)));
        let offering = std::thread::spawn(move || {
            let sent = out.offer(batch(5), Some(&mut scanner));
            (sent, out, scanner)
        });
        // The third taken: the fourth goes into the room, and the fifth,
        // finding the channel full again (the fourth not taken yet), is held.
        assert_eq!(frames(rx.recv()), Some(3));
        let (sent, out, mut scanner) = offering.join().expect("join");
        assert!(sent);
        assert_eq!(out.held.as_ref().map(|b| b.ends.len()), Some(5));
        assert_eq!(frames(rx.recv()), Some(4));
        // The last batch goes after the held one.
        let last = std::thread::spawn(move || out.last(batch(7)));
        let rest: Vec<usize> = rx.iter().map(|b| b.ends.len()).collect();
        last.join().expect("join");
        assert_eq!(rest, [5, 7]);
        // A caller that left takes nothing.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Box<Batch>>(1);
        drop(rx);
        let mut out = Handover::new(tx);
        assert!(!out.offer(batch(1), Some(&mut scanner)));
        assert!(!out.offer(batch(1), None));
    }

    /// The frames of each batch a `FileReader` hands over for a file of
    /// `n` frames of `size` bytes (written to a temporary file named after
    /// `name`), and the file's length.
    fn batches_of_file(name: &str, n: usize, size: usize) -> (Vec<usize>, u64) {
        batches_of_file_read(name, n, size, false)
    }

    /// [`batches_of_file`], read with a scanner by a caller that is slow
    /// (`slow`: it sleeps a millisecond per batch, so that the reader holds
    /// batches back): each batch's frames, checked to come in order.
    fn batches_of_file_read(name: &str, n: usize, size: usize, slow: bool) -> (Vec<usize>, u64) {
        let path = std::env::temp_dir().join(format!(
            "kafkashark-{name}-{}-{:?}.pcap",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = pcap_of_frames(n, size);
        let file_len = file.len() as u64;
        std::fs::write(&path, file).expect("write");
        let src = FileSource::open(path.to_str().expect("path")).expect("open");
        let scanner = slow.then(|| {
            let mut cfg = AnalyzerConfig::default();
            cfg.decode.records = false;
            MessageAnalyzer::new(cfg)
                .ahead_scanner()
                .expect("a scanner")
        });
        let reader = FileReader::spawn(src, PipelineConfig::default(), BATCH_FRAMES, scanner);
        let (mut frames, mut seen) = (Vec::new(), 0);
        for b in reader.rx.iter() {
            if slow {
                std::thread::sleep(Duration::from_millis(1));
            }
            // The pipeline's count of frames once the batch was read.
            seen += b.ends.len() as u64;
            assert_eq!(b.counters.frames, seen, "batches out of order");
            frames.push(b.ends.len());
            if b.finish.is_some() {
                break;
            }
        }
        reader.end();
        let _ = std::fs::remove_file(&path);
        (frames, file_len)
    }

    /// The reader cuts its batches by captured bytes as well as by frames:
    /// frames of 60 KB (a loopback capture's) make batches of about
    /// [`BATCH_BYTES`], not of [`BATCH_FRAMES`] frames (120 MB, all of it
    /// kept alive by the messages of one batch). Every frame still arrives.
    #[test]
    fn batches_are_bounded_by_bytes() {
        let (n, size) = (300, 60_000);
        let (frames, _) = batches_of_file("batches", n, size);
        for &k in &frames {
            assert!(
                k * size <= BATCH_BYTES + size,
                "a batch of {k} frames of {size} bytes"
            );
        }
        assert_eq!(frames.iter().sum::<usize>(), n);
        let batches = frames.len();
        assert!(
            batches >= n * size / (BATCH_BYTES + size),
            "{batches} batches"
        );
    }

    /// A reader whose caller falls behind holds a batch back while it
    /// reads on: every frame still arrives, in order, in batches cut as
    /// they are for a caller that keeps up.
    #[test]
    fn a_slow_caller_gets_every_batch_in_order() {
        let (n, size) = (6000, 200);
        let (fast, len) = batches_of_file_read("fast", n, size, false);
        let (slow, slow_len) = batches_of_file_read("slow", n, size, true);
        assert_eq!(slow.iter().sum::<usize>(), n);
        assert_eq!((slow, slow_len), (fast, len));
    }

    /// A batch's byte limit: [`BATCH_BYTES`] far from the end, an eighth
    /// of what is left near it, never below [`TAIL_BATCH_BYTES`].
    #[test]
    fn tail_batches_shrink_with_what_is_left() {
        assert_eq!(tail_bytes(u64::MAX), BATCH_BYTES);
        assert_eq!(tail_bytes(8 * BATCH_BYTES as u64), BATCH_BYTES);
        assert_eq!(tail_bytes(8 << 20), 1 << 20);
        assert_eq!(tail_bytes(8 * TAIL_BATCH_BYTES as u64), TAIL_BATCH_BYTES);
        assert_eq!(tail_bytes(1000), TAIL_BATCH_BYTES);
        assert_eq!(tail_bytes(0), TAIL_BATCH_BYTES);
        // A file that grows while read: its size is read again past the end
        // it had, at most once per `TAIL_BATCH_BYTES`.
        let path = std::env::temp_dir().join(format!(
            "kafkashark-tail-grows-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, vec![0u8; 1000]).expect("write");
        let mut t = Tail::new(path.to_str().expect("path"));
        assert_eq!((t.size, t.batch_bytes(Some(10))), (1000, TAIL_BATCH_BYTES));
        std::fs::write(&path, vec![0u8; 2000]).expect("write");
        assert_eq!(t.batch_bytes(Some(999)), TAIL_BATCH_BYTES);
        assert_eq!(t.size, 1000, "not read again before its end");
        assert_eq!(t.batch_bytes(Some(1000)), TAIL_BATCH_BYTES);
        assert_eq!(t.size, 2000, "read again at its end");
        std::fs::write(&path, vec![0u8; 64 << 20]).expect("write");
        assert_eq!(t.batch_bytes(Some(2000)), TAIL_BATCH_BYTES);
        assert_eq!(t.size, 2000, "not again within {TAIL_BATCH_BYTES} bytes");
        let far = 1000 + TAIL_BATCH_BYTES as u64;
        assert_eq!(t.batch_bytes(Some(far)), BATCH_BYTES);
        assert_eq!(t.size, 64 << 20, "again past them");
        let _ = std::fs::remove_file(&path);
        // Not a regular file: the size is unknown and batches keep their size.
        let mut t = Tail::new("/dev/null");
        assert_eq!(t.batch_bytes(Some(1)), BATCH_BYTES);
        assert_eq!(Tail::new("/no/such/file").batch_bytes(Some(0)), BATCH_BYTES);
    }

    /// The reader's batches near the end of a file are small (the caller's
    /// backlog when the read ends), far from it full-sized, and every frame
    /// arrives once, in order.
    #[test]
    fn the_reader_hands_over_smaller_batches_near_the_end() {
        let (n, size) = (700, 60_000);
        let (frames, file_len) = batches_of_file("tail", n, size);
        assert_eq!(frames.iter().sum::<usize>(), n);
        // Where frame `i` ends in the file: the header, then 16 + size per record.
        let end_of = |i: usize| 24 + (i as u64 + 1) * (16 + size as u64);
        let mut first = 0;
        let (mut full, mut small) = (0, 0);
        for &k in &frames {
            if k == 0 {
                continue;
            }
            let left = file_len - end_of(first);
            let bytes = k * size;
            assert!(
                bytes <= tail_bytes(left) + size,
                "{bytes} bytes with {left} left"
            );
            // Far from the end (after this batch too): full-sized.
            if file_len - end_of(first + k - 1) > 8 * BATCH_BYTES as u64 {
                assert!(bytes >= BATCH_BYTES, "{bytes} bytes with {left} left");
                full += 1;
            }
            if left < 8 * TAIL_BATCH_BYTES as u64 {
                assert!(
                    bytes <= TAIL_BATCH_BYTES + size,
                    "{bytes} bytes with {left} left"
                );
                small += 1;
            }
            first += k;
        }
        assert!(full >= 1 && small >= 1, "{frames:?}");
    }
}

#[cfg(test)]
mod notice_tests {
    use super::*;
    use kafkashark::vocab::Direction;

    fn resync(frame: u64) -> Notice {
        Notice::Stream(Event::Resync {
            stream: 1,
            dir: Direction::BrokerToClient,
            skipped: 7,
            stream_offset: 0,
            frame,
        })
    }

    fn gap(frame: u64) -> Notice {
        Notice::Stream(Event::Gap {
            stream: 2,
            dir: Direction::ClientToBroker,
            stream_offset: 0,
            len: 10,
            frame,
            reason: kafkashark::flow::GapReason::Lost,
        })
    }

    /// The first of each kind are printed, the rest counted and said once.
    #[test]
    fn repeated_notices_are_summarised_per_kind() {
        let mut t = NoticeTally::default();
        let mut printed: Vec<bool> = (0..8).map(|i| t.admit(&resync(100 + i))).collect();
        printed.push(t.admit(&gap(50)));
        assert_eq!(
            printed,
            [true, true, true, true, true, false, false, false, true]
        );
        assert_eq!(
            t.summary("cap.pcap"),
            ["kafkashark: cap.pcap: 8 resynchronisations in all, the first at frame 100; 5 listed, `--notices all` lists every one"]
        );
        let mut all = NoticeTally {
            all: true,
            ..NoticeTally::default()
        };
        assert!((0..8).all(|i| all.admit(&resync(i))));
        assert!(all.summary("cap.pcap").is_empty());
    }
}
