//! `kafkashark export`: every Kafka message of the captures as a row of the
//! `messages` table, and each topic partition it places a fact at as a row
//! of the `partitions` table (`kafkashark::export`), written by
//! `kafkashark-export` (the `export/` package) as Parquet, JSONL or CSV,
//! hive-partitioned by date and api under `--out`.
//!
//! This shell reads and analyses the captures as `print` does (capture
//! files: read on a reader thread, decoded in shards of the connections)
//! and hands the rows, one JSON object a line, to `kafkashark-export`
//! through a pipe: the writer (the Arrow and Parquet crates) is a program
//! of its own, so that this binary's optimised build does not carry them,
//! and it writes on another core while this one analyses.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use kafkashark::analyzer::{Analyzer, MessageAnalyzer, Output};
use kafkashark::capture::{CaptureError, FrameSource};
use kafkashark::export::TableRows;
use kafkashark::flow::ReorderWindow;
use kafkashark::stats::Stats;

use crate::cli_error::CliError;
use crate::print::{
    duration_arg, notice_line, pipeline_config, report_end, CaptureArgs, Input, Source,
};

/// What `export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Apache Parquet (snappy), typed columns.
    Parquet,
    /// One JSON object a line.
    Jsonl,
    /// Comma-separated values with a header line.
    Csv,
}

/// `kafkashark export` arguments.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub capture: CaptureArgs,
    /// The directory the tables go in (`DIR/messages/date=…/api=…/part-N.…`,
    /// `DIR/partitions/…`).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The files' format.
    #[arg(long, value_enum, default_value = "parquet")]
    pub format: ExportFormat,
    /// Stop a live capture after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// How long a segment the capture puts late is waited for (see `print`).
    #[arg(long, value_name = "SPEC", default_value = "64,1s,1MiB", value_parser = crate::parse_reorder_window)]
    pub reorder_window: ReorderWindow,
    /// Shards that decode and pair the messages of capture files, each
    /// taking its share of the connections (by default one per core but
    /// the reader's; one runs on the thread that routes them, more on a
    /// thread each); the rows are the same with any number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub privilege: crate::privilege::PrivilegeArgs,
}

/// The writer program: beside this one, else on the `PATH`.
fn writer_program() -> PathBuf {
    let name = "kafkashark-export";
    std::env::current_exe()
        .ok()
        .map(|p| p.with_file_name(name))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Starts the writer on `out`.
fn spawn_writer(format: ExportFormat, out: &Path) -> Result<(Child, ChildStdin), CliError> {
    let program = writer_program();
    let format = match format {
        ExportFormat::Parquet => "parquet",
        ExportFormat::Jsonl => "jsonl",
        ExportFormat::Csv => "csv",
    };
    let mut child = Command::new(&program)
        .args(["--format", format, "--out"])
        .arg(out)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| {
            CliError::Usage(format!(
                "export writes through {} (built with `cargo build -p kafkashark-export`): {e}",
                program.display()
            ))
        })?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| CliError::Usage("the export writer has no input".into()))?;
    Ok((child, stdin))
}

/// Runs `export`.
pub fn run(a: &ExportArgs) -> Result<(), CliError> {
    crate::privilege::configure(&a.privilege);
    let input = a.capture.input()?;
    a.capture.load_keys()?;
    let duration = duration_arg(a.duration)?;
    // Capture files are read on a reader thread (below); a live capture,
    // or files read for a while, frame by frame.
    let source = input.open_source(&a.capture.ports, &a.capture.keys(), duration.is_some())?;
    let names = input.captures();
    let name = input.name();
    let mut pipeline = pipeline_config(&a.capture.ports, a.reorder_window, &a.capture.keys());
    pipeline.twin_window_ns = source.twin_window_ns();
    // What stats reads (each message's summary scan, or its tree where the
    // scan cannot place its facts), with the messages' topics named.
    let base = crate::render_pool::summary_config(pipeline, &Default::default(), false);
    let mut cfg = Stats::analyzer_config(base);
    cfg.info_topics = true;
    cfg.response_topics = true;
    let mut rows = TableRows::new();
    let (mut child, stdin) = spawn_writer(a.format, &a.out)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, stdin);
    let mut out = Vec::new();
    let mut row = Vec::with_capacity(1024);
    let started = std::time::Instant::now();
    let mut read_error: Option<CaptureError> = None;
    let mut write = |outs: &mut Vec<Output>, w: &mut dyn Write| -> std::io::Result<()> {
        for o in outs.drain(..) {
            match o {
                Output::Message(m) => {
                    row.clear();
                    rows.message(&mut row, &m, &names);
                    w.write_all(&row)?;
                }
                Output::Notice(n) => {
                    if let Some(line) = notice_line(&name, &n) {
                        // One write: the writer shares standard error.
                        let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
                    }
                }
            }
        }
        Ok(())
    };
    // The writer gone before its input ended: its own failure says why
    // (it wrote it), else the pipe's.
    let broken = |child: &mut Child, e: std::io::Error| match child.wait() {
        Ok(status) if !status.success() => failed(status),
        _ => CliError::Usage(format!("the export writer stopped: {e}")),
    };
    // A live source, kept for its kernel drops.
    let mut live_source = None;
    let written = match source {
        // Capture files: read, reassembled and framed on a reader thread,
        // decoded in shards of the connections, merged back in order here.
        Source::Files(src) => {
            let analyzer = MessageAnalyzer::new(cfg);
            let keep = crate::print::Keep {
                frames: false,
                bytes: false,
            };
            let shards = a
                .threads
                .map_or_else(crate::shards::default_shards, usize::from);
            let mut files = crate::shards::FileAnalysis::spawn(src, &analyzer, shards, keep)
                .map_err(|err| CliError::Io {
                    path: "the analysis threads".into(),
                    err,
                })?;
            let mut written = Ok(());
            while let Some(b) = files.next(&mut out) {
                read_error = read_error.or(b.error);
                written = write(&mut out, &mut w);
                if written.is_err() {
                    break;
                }
            }
            written
        }
        Source::Frames(mut source) => {
            let mut analyzer = Analyzer::new(cfg);
            while duration.is_none_or(|d| started.elapsed() < d) {
                if !crate::print::pump(source.as_mut(), &mut analyzer, &mut out, &mut read_error) {
                    break;
                }
                if let Err(e) = write(&mut out, &mut w) {
                    return Err(broken(&mut child, e));
                }
            }
            analyzer.finish(&mut out);
            live_source = Some(source);
            write(&mut out, &mut w)
        }
    }
    .and_then(|()| w.flush());
    drop(w);
    if let Err(e) = written {
        return Err(broken(&mut child, e));
    }
    let status = child
        .wait()
        .map_err(|e| CliError::Usage(format!("the export writer: {e}")))?;
    let live = matches!(input, Input::Live { .. });
    let live = live_source
        .as_mut()
        .filter(|_| live)
        .map(|s| s.as_mut() as &mut dyn FrameSource);
    report_end(live, &name, read_error);
    if !status.success() {
        return Err(failed(status));
    }
    Ok(())
}

/// The writer's failure (it said why on standard error).
fn failed(status: std::process::ExitStatus) -> CliError {
    CliError::Usage(format!(
        "the export writer failed ({status}); see its message above"
    ))
}
