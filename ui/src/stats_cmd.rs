//! `kafkashark stats`: latency, throttle, errors, traffic shape, clients and
//! groups of a capture, as readable tables or JSON. A thin shell: frames go to
//! the engine's `Analyzer`, its outputs to `kafkashark::stats::Stats`, and the
//! report is printed — once for a file, every second for a live interface.
//! With `--metrics ADDR:PORT` the same figures are served for Prometheus
//! (`crate::metrics`): after every refresh live; for a file, its final
//! figures, served until the process is interrupted.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageAnalyzer, Notice, Output};
use kafkashark::capture::{CaptureError, FrameSource};
use kafkashark::flow::ReorderWindow;
use kafkashark::kafka::tree;
use kafkashark::pipeline::{Event, Warning};
use kafkashark::stats::lag::LagReport;
use kafkashark::stats::{Stats, StatsConfig, StatsReport};

use crate::cli_error::CliError;
use crate::metrics::MetricsServer;
use crate::print::{report_end, CaptureArgs, Input};
use crate::reorder::Reorder;

/// Output format of `stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Readable tables.
    Text,
    /// One JSON object: the report of docs/stats.md, "The JSON output" (live: one a
    /// second, each on one line).
    Json,
}

/// Clears the terminal before a live refresh: cursor home, erase display.
const CLEAR: &str = "\x1b[H\x1b[2J";

/// Runs `stats` from its command-line arguments.
pub fn run(a: &StatsArgs) -> Result<(), CliError> {
    if a.merge {
        return run_merge(a);
    }
    crate::privilege::configure(&a.privilege);
    let input = a.capture.input()?;
    a.capture.load_keys()?;
    let duration = crate::print::duration_arg(a.duration)?;
    // Bound before reading anything: a bad address fails at once.
    let metrics = a.metrics.as_deref().map(MetricsServer::start).transpose()?;
    if let (Input::Files(paths), None) = (&input, duration) {
        return run_file(a, paths, &input.name(), metrics);
    }
    let mut source = input.open(&a.capture.ports, &a.capture.keys())?;
    let (title, live) = match &input {
        Input::Files(_) => (input.name(), false),
        Input::Live { iface, .. } => (format!("live on {iface}"), true),
    };
    let (mut cfg, mut stats) = engine(a);
    cfg.pipeline.twin_window_ns = source.twin_window_ns();
    stats.set_capture_points(&input.captures(), source.clocks());
    let mut analyzer = Analyzer::new(cfg);
    let mut chosen = Chosen::new(a, &input.captures());
    let tty = std::io::stdout().is_terminal();
    let started = Instant::now();
    let mut last_draw = Instant::now();
    let mut out = Vec::new();
    let mut read_error: Option<CaptureError> = None;
    if let (Some(m), true) = (&metrics, live) {
        m.announce();
    }
    while duration.is_none_or(|d| started.elapsed() < d) {
        if !crate::print::pump(source.as_mut(), &mut analyzer, &mut out, &mut read_error) {
            break;
        }
        chosen.pass(&mut out, false);
        for o in out.drain(..) {
            stats.push(&o);
        }
        if live && last_draw.elapsed() >= Duration::from_secs(1) {
            last_draw = Instant::now();
            stats.settle();
            if let Some(m) = &metrics {
                m.publish_stats(&stats);
            }
            // In a terminal, each refresh is one screen: the report's
            // first lines, each cut to the width (the last report is whole).
            let screen = tty.then(|| crossterm::terminal::size().ok()).flatten();
            refresh(&report(&stats), &title, a.format, tty, screen)?;
        }
    }
    analyzer.finish(&mut out);
    let told = no_kafka(&title, &out);
    chosen.pass(&mut out, true);
    for o in out.drain(..) {
        stats.push(&o);
    }
    stats.settle();
    emit_final(&stats, &title, a.format, live, live && tty)?;
    told.iter().for_each(|l| eprintln!("{l}"));
    report_end(live.then_some(&mut *source), &title, read_error);
    match metrics {
        Some(m) if !live => serve_final(&m, &stats),
        Some(m) => m.publish_stats(&stats),
        None => {}
    }
    Ok(())
}

/// Publishes the final figures of a capture file and serves them until the
/// process is interrupted.
fn serve_final(m: &MetricsServer, stats: &Stats) -> ! {
    m.publish_stats(stats);
    m.announce();
    m.serve_forever()
}

/// The analyzer's settings and the stats of a run.
fn engine(a: &StatsArgs) -> (AnalyzerConfig, Stats) {
    let mut cfg = Stats::analyzer_config(AnalyzerConfig {
        pipeline: crate::print::pipeline_config(
            &a.capture.ports,
            a.reorder_window,
            &a.capture.keys(),
        ),
        ..AnalyzerConfig::default()
    });
    cfg.decode.max_decompressed = a.max_decompressed;
    let stats = Stats::new(StatsConfig {
        slow: a.slow,
        slow_long_polls: a.long_polls,
        ..StatsConfig::default()
    });
    (cfg, stats)
}

/// `stats` of files: read, reassembled and framed on a reader thread, which
/// also scans the requests ahead (`crate::shards::FileAnalysis`), decoded and
/// paired in `--threads` shards (each connection's messages in its shard;
/// one shard on this thread, as it routes, more on a thread each), merged
/// back in order and counted here, batch by batch — the same outputs in the
/// same order as one thread, so the same report. On two cores the reader
/// and this thread keep both busy; a third thread for the counting only
/// shared them, and took the reader's scan of the requests onto this one
/// (docs/performance.md, "Threads in `stats`").
fn run_file(
    a: &StatsArgs,
    paths: &[String],
    path: &str,
    metrics: Option<MetricsServer>,
) -> Result<(), CliError> {
    let src = crate::print::open_files(paths, &a.capture.keys())?;
    let (cfg, mut stats) = engine(a);
    stats.set_capture_points(paths, src.clocks());
    let analyzer = MessageAnalyzer::new(cfg);
    let mut chosen = Chosen::new(a, paths);
    // `Stats` reads facts, never bytes: the shards drop them, unless the
    // filter reads fields.
    let keep = crate::print::Keep {
        frames: false,
        bytes: chosen.0.as_ref().is_some_and(Reorder::needs_tree),
    };
    let shards = a
        .threads
        .map_or_else(crate::shards::default_shards, usize::from);
    let mut files =
        crate::shards::FileAnalysis::spawn(src, &analyzer, shards, keep).map_err(|err| {
            CliError::Io {
                path: "the analysis threads".into(),
                err,
            }
        })?;
    let (mut out, mut told, mut read_error) = (Vec::new(), Vec::new(), None);
    let mut flushed = false;
    while let Some(b) = files.next(&mut out) {
        read_error = read_error.or(b.error);
        told.extend(no_kafka(path, &out));
        // The last batch ends with the shards' end-of-input reports: the
        // filter gives back what it held.
        flushed = b.last;
        chosen.pass(&mut out, flushed);
        for o in &out {
            stats.push(o);
        }
        files.recycle(std::mem::take(&mut out));
    }
    if !flushed {
        chosen.pass(&mut out, true);
        for o in &out {
            stats.push(o);
        }
    }
    stats.settle();
    emit_final(&stats, path, a.format, false, false)?;
    told.iter().for_each(|l| eprintln!("{l}"));
    if let Some(e) = read_error {
        eprintln!("kafkashark: {}", tree::escape_text(&e.to_string()));
    }
    if let Some(m) = metrics {
        serve_final(&m, &stats);
    }
    Ok(())
}

/// The messages a display filter (`-Y`) chooses: held by a [`Reorder`]
/// until a request's response is known, then tested with it, as `print -Y`
/// and the TUI test them. Without a filter, everything passes untouched.
struct Chosen(Option<Reorder>);

impl Chosen {
    fn new(a: &StatsArgs, captures: &[String]) -> Chosen {
        Chosen(a.display_filter.clone().map(|mut f| {
            f.set_captures(captures);
            let mut r = Reorder::new(crate::print::HELD_MESSAGES);
            r.limit_bytes(crate::print::HELD_BYTES);
            r.filter(f);
            r
        }))
    }

    /// Replaces `out` by what leaves the filter now (everything held, at `end`).
    /// The messages' bytes are dropped first, unless the filter reads their
    /// fields: `Stats` never reads them, and the buffer would otherwise
    /// copy every held message's.
    fn pass(&mut self, out: &mut Vec<Output>, end: bool) {
        let Some(r) = &mut self.0 else { return };
        if !r.needs_tree() {
            crate::print::strip_bytes(out, false);
        }
        let mut chosen = Vec::with_capacity(out.len());
        for o in out.drain(..) {
            r.push(o, &mut chosen);
        }
        if end {
            r.flush(&mut chosen);
        }
        *out = chosen;
    }
}

/// The standard error lines saying that capture `name` held no Kafka
/// (`Warning::NoKafka`, among the outputs of the analyzer's `finish`).
fn no_kafka(name: &str, outs: &[Output]) -> Vec<String> {
    let said = |o: &&Output| {
        matches!(
            o,
            Output::Notice(n) if matches!(**n, Notice::Stream(Event::Warning {
                what: Warning::NoKafka { .. },
                ..
            }))
        )
    };
    (outs.iter().filter(said))
        .filter_map(|o| match o {
            Output::Notice(n) => crate::print::notice_line(name, n),
            Output::Message(_) => None,
        })
        .collect()
}

/// Prints a live refresh: as [`emit`] does live, but text in a terminal of
/// `screen` (columns, rows) is cut to fit it ([`fit_screen`]).
fn refresh(
    r: &StatsReport,
    title: &str,
    format: StatsFormat,
    clear: bool,
    screen: Option<(u16, u16)>,
) -> Result<(), CliError> {
    let (StatsFormat::Text, Some((cols, rows))) = (format, screen) else {
        return emit(r, title, format, clear);
    };
    let text = fit_screen(&r.to_text(title), cols.into(), rows.into());
    let mut w = std::io::stdout().lock();
    w.write_all(CLEAR.as_bytes())
        .and_then(|()| w.write_all(text.as_bytes()))
        .and_then(|()| w.flush())
        .map_err(CliError::Output)
}

/// `text` cut to a screen of `cols` × `rows`: its first lines, each at most
/// `cols` characters (a cut line ends in `…`), and, when lines are left
/// out, a last line saying how many and where the whole report is.
fn fit_screen(text: &str, cols: usize, rows: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let cols = cols.max(1);
    let room = if lines.len() <= rows {
        lines.len()
    } else {
        rows.saturating_sub(1)
    };
    let mut out = String::with_capacity(text.len().min(cols * rows * 4));
    for line in lines.iter().take(room) {
        if line.chars().count() > cols {
            out.extend(line.chars().take(cols - 1));
            out.push('…');
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    let left = lines.len() - room;
    if left > 0 && rows > 0 {
        let note = format!(
            "… {left} more lines: a taller terminal shows them; the report at the end is whole"
        );
        out.extend(note.chars().take(cols));
        out.push('\n');
    }
    out
}

/// The lag rows whose text a thread makes at a time at the end of `stats`
/// in JSON (about 0.2 ms of rows with long series).
const LAG_ROWS: usize = 64;

/// Prints the last report of `stats`: as [`emit`] when `live`; else made
/// on two threads, the side part of the report beside the rest (as
/// [`report`]), and the text with them: the first tables while the side
/// part is made ([`StatsReport::text_head`]). In JSON the side part is
/// sent without the lag section, which the side thread makes after it
/// ([`Stats::lag_report`]); the lag rows' text (most of the text on a
/// capture of many partitions) is then made in pieces by both threads, the
/// calling thread once it has made the text around the section
/// ([`StatsReport::lag_rows_json`]), and written piece by piece
/// ([`StatsReport::lag_json_parts`]).
fn emit_final(
    stats: &Stats,
    title: &str,
    format: StatsFormat,
    live: bool,
    clear: bool,
) -> Result<(), CliError> {
    if live {
        return emit(&report(stats), title, format, clear);
    }
    let json = format == StatsFormat::Json;
    // In JSON, the lag rows' text, made a piece of `LAG_ROWS` rows at a
    // time by both threads: each takes the next piece until none is left.
    let next_piece = AtomicUsize::new(0);
    let pieces_of = |lag: &LagReport| {
        let mut made = Vec::new();
        loop {
            let i = next_piece.fetch_add(1, Ordering::Relaxed);
            let Some(rows) = lag.partitions.chunks(LAG_ROWS).nth(i) else {
                return Ok::<_, serde_json::Error>(made);
            };
            made.push((i, StatsReport::lag_rows_json(rows)?));
        }
    };
    // The side part, sent as soon as it is made; then, in JSON, the lag
    // section (made apart: the side part reaches the rest sooner), sent
    // for the rest to make pieces of its rows' text too, and this thread's
    // pieces.
    let side_part = |tx: SyncSender<_>, lag_tx: SyncSender<_>| {
        if !json {
            let _ = tx.send(stats.report_side());
            return Ok(None);
        }
        let _ = tx.send(stats.report_side_but_lag());
        let lag = Arc::new(stats.lag_report());
        let _ = lag_tx.send(Arc::clone(&lag));
        pieces_of(&lag).map(|made| Some((lag, made)))
    };
    let pieces = std::thread::scope(|sc| {
        let (tx, rx) = sync_channel(1);
        let (lag_tx, lag_rx) = sync_channel(1);
        let thread = std::thread::Builder::new().spawn_scoped(sc, {
            let (tx, lag_tx) = (tx.clone(), lag_tx.clone());
            move || side_part(tx, lag_tx)
        });
        // Without a thread the side part is made here first (the channels
        // hold what it sends); with one, only the thread may send, so that
        // a panic there leaves the channels closed, not waited on.
        let made_here = match &thread {
            Ok(_) => {
                drop((tx, lag_tx));
                None
            }
            Err(_) => Some(side_part(tx, lag_tx)),
        };
        let rest = stats.report_rest();
        let head = (!json).then(|| rest.text_head(title));
        // The text, and the place in it of the lag section's JSON (none in
        // the text).
        let around = rx.recv().map(|side| {
            let r = rest.with_side(side);
            match head {
                Some(mut text) => {
                    r.text_tail(&mut text);
                    let end = text.len();
                    Ok((text.into_bytes(), end..end))
                }
                None => r.json_around_lag(),
            }
        });
        // The lag rows' pieces the side thread has not taken.
        let mine = match lag_rx.recv() {
            Ok(lag) => pieces_of(&lag)?,
            Err(_) => Vec::new(),
        };
        let side = match (thread, made_here) {
            (Ok(h), _) => join(h),
            (Err(_), made) => made.unwrap_or(Ok(None)),
        };
        // The side part is sent first: only a panic, raised again by
        // `join`, leaves none.
        let no_side = |_| {
            let why = "the report's side part was not made";
            serde_json::Error::io(std::io::Error::other(why))
        };
        let (text, place) = around.map_err(no_side)??;
        // The lag section: its text without rows, and the rows' pieces in order.
        let lag = match side? {
            Some((lag, theirs)) => {
                let mut made = mine;
                made.extend(theirs);
                made.sort_unstable_by_key(|m| m.0);
                let made: Vec<Vec<u8>> = made.into_iter().map(|m| m.1).collect();
                Some((StatsReport::lag_json_without_rows(&lag)?, made))
            }
            None => None,
        };
        Ok::<_, serde_json::Error>((text, place, lag))
    })
    .map_err(|e| CliError::Output(e.into()))?;
    let (text, place, lag) = pieces;
    let lag_parts = match &lag {
        Some((without_rows, made)) => StatsReport::lag_json_parts(without_rows, made)
            .map_err(|e| CliError::Output(e.into()))?,
        None => Vec::new(),
    };
    let mut pieces = vec![text.get(..place.start).unwrap_or_default()];
    pieces.extend(lag_parts);
    pieces.push(text.get(place.end..).unwrap_or_default());
    // Ended by a line break, as `emit` ends a report.
    let last = pieces.iter().rev().find_map(|p| p.last().copied());
    let end: &[u8] = if last == Some(b'\n') { b"" } else { b"\n" };
    let mut w = std::io::stdout().lock();
    let written = pieces.iter().try_for_each(|p| w.write_all(p));
    written
        .and_then(|()| w.write_all(end))
        .and_then(|()| w.flush())
        .map_err(CliError::Output)
}

/// What a scoped thread returned; its panic raised again here.
fn join<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Prints a report: text (after a clear screen when `clear`), or JSON
/// (one compact line; a file's last report is [`emit_final`]'s).
fn emit(r: &StatsReport, title: &str, format: StatsFormat, clear: bool) -> Result<(), CliError> {
    let mut s = match format {
        StatsFormat::Text => Ok(format!(
            "{}{}",
            if clear { CLEAR } else { "" },
            r.to_text(title)
        )),
        StatsFormat::Json => serde_json::to_string(r),
    }
    .map_err(|e| CliError::Output(e.into()))?;
    if !s.ends_with('\n') {
        s.push('\n');
    }
    let mut w = std::io::stdout().lock();
    w.write_all(s.as_bytes())
        .and_then(|()| w.flush())
        .map_err(CliError::Output)
}

/// The arguments of `kafkashark stats`.
#[derive(clap::Args, Debug)]
#[command(mut_arg("interface", |a| a.help(
    "Capture live on this interface (`any` for all); the report refreshes every second",
)))]
pub struct StatsArgs {
    #[command(flatten)]
    capture: CaptureArgs,
    /// The reorder window: how long a hole the peer acknowledged waits for a
    /// segment the capture puts late, as PACKETS,TIME,BYTES (any of them, any
    /// order: `64`, `1s`, `250ms`, `1MiB`), or `off`. Default 64,1s,1MiB.
    #[arg(long, value_name = "SPEC", default_value = "64,1s,1MiB", value_parser = crate::parse_reorder_window)]
    reorder_window: ReorderWindow,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StatsFormat::Text)]
    format: StatsFormat,
    /// Count only the messages this display filter matches (the TUI's
    /// filter language, docs/filter.md): `-Y 'client_id="billing"'`.
    #[arg(short = 'Y', long = "display-filter", value_name = "EXPR", value_parser = crate::parse_display_filter)]
    display_filter: Option<crate::filter::Filter>,
    /// Length of the slowest-exchanges list.
    #[arg(long, default_value_t = 20)]
    slow: usize,
    /// Rank long-poll Fetches (no records after waiting out MaxWaitMs) in the
    /// slowest-exchanges list too; by default they are counted apart.
    #[arg(long)]
    long_polls: bool,
    /// Stop after this many seconds (live capture).
    #[arg(long)]
    duration: Option<f64>,
    /// Most bytes a compressed batch may decompress to.
    #[arg(long, default_value_t = 64 << 20)]
    max_decompressed: usize,
    /// Serve the figures for Prometheus at http://ADDR:PORT/metrics
    /// (OpenMetrics text; port 0 picks a free one, said on standard error):
    /// live, refreshed every second; for a file, its final figures, served
    /// until the process is interrupted.
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    /// Add up reports instead of reading captures: the FILEs are `stats
    /// --format json` reports (of captures, hosts, or earlier merges), and
    /// the counts, latency percentiles (from the merged histogram buckets),
    /// errors and record sets are those of one report of every capture.
    #[arg(long, conflicts_with_all = ["interface", "display_filter", "metrics", "duration", "tls_keylog"])]
    merge: bool,
    /// Shards that decode and pair the messages of capture files, each
    /// taking its share of the connections (by default one per core but
    /// the reader's; one runs on the thread that routes them, more on a
    /// thread each); the report is the same with any number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: Option<u16>,
    #[command(flatten)]
    privilege: crate::privilege::PrivilegeArgs,
}

/// `stats --merge`: the reports named, added up.
fn run_merge(a: &StatsArgs) -> Result<(), CliError> {
    let mut merged = kafkashark::stats::merge::Merged::new();
    for f in a.capture.files() {
        // `-`: a report on standard input.
        let read: Box<dyn std::io::Read> = if f == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(std::fs::File::open(f).map_err(|err| CliError::Io {
                path: f.clone(),
                err,
            })?)
        };
        let m = kafkashark::stats::merge::Mergeable::from_report(std::io::BufReader::new(read))
            .map_err(|why| CliError::Input {
                what: f.clone(),
                why,
            })?;
        merged.add(&m).map_err(|why| CliError::Input {
            what: f.clone(),
            why,
        })?;
    }
    let report = merged.report();
    let text = match a.format {
        StatsFormat::Text => report.to_text(),
        StatsFormat::Json => {
            let mut s =
                serde_json::to_string(&report).map_err(|e| CliError::Usage(e.to_string()))?;
            s.push('\n');
            s
        }
    };
    let mut w = std::io::stdout().lock();
    w.write_all(text.as_bytes())
        .and_then(|()| w.flush())
        .map_err(CliError::Output)
}

/// `stats.report()` made on two threads: the brokers' and connections'
/// latencies and the record age, delivery and lag sections (about half of
/// the work) beside the rest, when the capture has been read and the other
/// core is idle.
fn report(stats: &Stats) -> StatsReport {
    std::thread::scope(|sc| {
        let side = std::thread::Builder::new().spawn_scoped(sc, || stats.report_side());
        let rest = stats.report_rest();
        let side = match side {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Err(_) => stats.report_side(),
        };
        rest.with_side(side)
    })
}

#[cfg(test)]
mod tests {
    use super::fit_screen;

    #[test]
    fn a_refresh_fits_the_screen() {
        let text = "STATS title\nshort\n0123456789abcdef\nfour\nfive\n";
        // Room for all: unchanged but for the long line, cut with an ellipsis.
        assert_eq!(
            fit_screen(text, 10, 5),
            "STATS tit…\nshort\n012345678…\nfour\nfive\n"
        );
        // Two lines too many for 4 rows: 3 lines and what was left out.
        let cut = fit_screen(text, 80, 4);
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(&lines[..3], ["STATS title", "short", "0123456789abcdef"]);
        assert!(lines[3].starts_with("… 2 more lines"), "{cut}");
        // No line wider than the screen, in characters, whatever the text.
        let wide = "→".repeat(30);
        assert!(fit_screen(&wide, 7, 3)
            .lines()
            .all(|l| l.chars().count() <= 7));
        assert_eq!(fit_screen(text, 0, 0), "");
    }
}
