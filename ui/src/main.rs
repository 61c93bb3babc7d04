//! The `kafkashark` command: a thin shell over the engine in the `kafkashark`
//! library. It parses arguments, reads files, and writes what the engine
//! decoded; it never decodes anything itself.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use kafkashark::kafka::{decode_request, decode_response, tree, DecodeOptions, Decoded};

mod alloc;
mod cli_error;
mod export_cmd;
mod fields_cmd;
mod filter;
mod keylog;
mod metrics;
mod print;
mod privilege;
mod render_pool;
mod reorder;
mod save;
mod shards;
mod stats_cmd;
mod timefmt;
mod tui;
use cli_error::CliError;
use kafkashark::flow::{Ports, ReorderWindow};

/// The allocator: mimalloc for small blocks, glibc's for large ones
/// ([`alloc`]).
#[global_allocator]
static GLOBAL: alloc::Hybrid = alloc::Hybrid;

/// Wireshark for Kafka, in the terminal.
///
/// `kafkashark FILE` opens a capture (or `-` for standard input) in the
/// terminal UI; `kafkashark live -i IFACE` captures live into it.
#[derive(Parser, Debug)]
#[command(
    name = "kafkashark",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    tui: TuiArgs,
}

/// Opening a file in the terminal UI (no subcommand).
#[derive(clap::Args, Debug)]
struct TuiArgs {
    /// A pcap or pcapng file to open in the terminal UI; `-` reads standard input.
    /// Several files or globs are read together, merged by time. A `.hex`
    /// file (or any file with --message) is one size-prefixed message.
    files: Vec<String>,
    /// Open FILE as one size-prefixed Kafka message (raw bytes or hex text).
    #[arg(long)]
    message: bool,
    #[command(flatten)]
    view: ViewArgs,
    /// Most messages the list keeps; past it the oldest are dropped and counted
    /// (ring mode). Default: 2,000,000 for files, 250,000 for live capture.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_messages: Option<u64>,
}

/// Live capture into the terminal UI.
#[derive(clap::Args, Debug)]
struct LiveArgs {
    /// Capture on this interface (`any` for all).
    #[arg(short = 'i', long = "interface")]
    interface: String,
    /// BPF filter (default: the Kafka ports).
    #[arg(short = 'f', long = "filter")]
    filter: Option<String>,
    #[command(flatten)]
    view: ViewArgs,
    /// Most messages the list keeps; past it the oldest are dropped and counted
    /// (ring mode). Default: 250,000.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_messages: Option<u64>,
    /// Serve the capture's figures (those of `stats`) for Prometheus at
    /// http://ADDR:PORT/metrics, refreshed every second (OpenMetrics text;
    /// port 0 picks a free one, said on standard error before the UI starts).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    #[command(flatten)]
    privilege: privilege::PrivilegeArgs,
}

/// What the terminal UI's views take, opening a file or live.
#[derive(clap::Args, Debug)]
struct ViewArgs {
    /// Broker ports: `auto` (9092 and 9093, and Kafka found by content on
    /// any other port), a comma-separated list (only these), or `any` (found by
    /// content on every port).
    #[arg(long, default_value = "auto", value_parser = parse_ports)]
    ports: Ports,
    /// No colours (also when the NO_COLOR environment variable is set).
    #[arg(long)]
    no_color: bool,
    /// The reorder window: how long a hole the peer acknowledged waits for a
    /// segment the capture puts late, as PACKETS,TIME,BYTES (any of them, any
    /// order: `64`, `1s`, `250ms`, `1MiB`), or `off`. Default 64,1s,1MiB.
    #[arg(long, value_name = "SPEC", default_value = "64,1s,1MiB", value_parser = crate::parse_reorder_window)]
    reorder_window: ReorderWindow,
    /// The list's columns, in order, for this session: names from no, time,
    /// stream, route, client, broker, api, kind, corr, size, latency,
    /// client_id, topics, partitions, errors, records, throttle, notes
    /// (default no,time,stream,route,api,kind,corr,size,latency,notes, or
    /// the config file's; `C` in the UI changes and keeps them).
    #[arg(long, value_name = "LIST", value_parser = parse_columns)]
    columns: Option<ColumnList>,
    /// TLS key log (`SSLKEYLOGFILE`'s NSS format): TLS connections whose
    /// sessions it holds are decrypted; live, it is re-read as it grows.
    #[arg(long, value_name = "FILE")]
    tls_keylog: Option<PathBuf>,
}

/// The columns `--columns` names (one value, a list).
#[derive(Clone, Debug)]
struct ColumnList(Vec<tui::columns::Col>);

/// `--columns`: names as the `C` bar takes them.
fn parse_columns(s: &str) -> Result<ColumnList, String> {
    tui::columns::parse(s)
        .map(ColumnList)
        .map_err(|e| format!("col {}: {}", e.column, e.message))
}

impl ViewArgs {
    /// The terminal UI's options for `input`.
    fn options(
        self,
        input: tui::Input,
        max_messages: Option<u64>,
    ) -> Result<tui::Options, CliError> {
        let live = matches!(input, tui::Input::Live { .. });
        let keys = keylog::open(self.tls_keylog.as_deref(), live)?;
        Ok(tui::Options {
            input,
            ports: self.ports,
            keys,
            reorder: self.reorder_window,
            // Colours unless `--no-color` or a non-empty NO_COLOR (no-color.org).
            color: !self.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            max_messages,
            metrics: None,
            columns: self.columns.map(|c| c.0),
        })
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Decode one size-prefixed Kafka message (binary or hex file, or --hex).
    Decode(DecodeArgs),
    /// Print every Kafka message of a capture (file, `-` for stdin, or -i IFACE).
    Print(print::PrintArgs),
    /// Capture live from an interface into the terminal UI.
    Live(LiveArgs),
    /// Latency, throttle, errors, traffic, clients and groups of a capture (file or -i IFACE).
    Stats(stats_cmd::StatsArgs),
    /// Every Kafka message as a row: Parquet, JSONL or CSV, hive-partitioned by date and api.
    Export(export_cmd::ExportArgs),
    /// The display filter's fields and words, or an api's message fields (`fields Produce`).
    Fields(fields_cmd::FieldsArgs),
}

/// A display filter (`-Y`), or where and why it does not parse.
fn parse_display_filter(s: &str) -> Result<filter::Filter, String> {
    filter::Filter::parse(s).map_err(|e| format!("col {}: {}", e.column, e.message))
}

/// `9092,9093`, `any` or `auto` (9092 and 9093, and Kafka found on any other port).
fn parse_ports(s: &str) -> Result<Ports, String> {
    if s.eq_ignore_ascii_case("any") {
        return Ok(Ports::Any);
    }
    if s.eq_ignore_ascii_case("auto") {
        return Ok(Ports::default());
    }
    // Never an empty list: `split` yields at least one part, and "" is no port.
    s.split(',')
        .map(|p| {
            p.trim()
                .parse::<u16>()
                .map_err(|_| format!("not a port: {p:?}"))
        })
        .collect::<Result<_, _>>()
        .map(Ports::List)
}

/// The units of `--reorder-window` (matched case-insensitively): which bound
/// each sets (0 packets, 1 time in ns, 2 bytes), and its factor.
const WINDOW_UNITS: &[(&str, usize, u64)] = &[
    ("", 0, 1),
    ("p", 0, 1),
    ("packets", 0, 1),
    ("s", 1, 1_000_000_000),
    ("ms", 1, 1_000_000),
    ("us", 1, 1_000),
    ("b", 2, 1),
    ("kib", 2, 1 << 10),
    ("mib", 2, 1 << 20),
    ("gib", 2, 1 << 30),
];

/// A reorder window: `off`, or comma-separated bounds, each given at most
/// once, that replace the default's: packets (`64`, `64p`), time (`1s`,
/// `250ms`, `500us`) and bytes (`1MiB`, `512KiB`, `65536B`). A bound of 0
/// ends the window at once, as `off` does.
fn parse_reorder_window(s: &str) -> Result<ReorderWindow, String> {
    if s.trim().eq_ignore_ascii_case("off") {
        return Ok(ReorderWindow::OFF);
    }
    let d = ReorderWindow::default();
    let mut bounds = [d.packets, d.time_ns, d.bytes as u64];
    let mut given = [false; 3];
    for part in s.split(',').map(str::trim) {
        let digits = part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(part.len());
        let (num, unit) = part.split_at(digits);
        let n: u64 = num
            .parse()
            .map_err(|_| format!("{part:?}: a number with a unit (64, 1s, 250ms, 1MiB)"))?;
        let lower = unit.to_ascii_lowercase();
        let Some(&(_, bound, factor)) = WINDOW_UNITS.iter().find(|(u, _, _)| *u == lower) else {
            return Err(format!(
                "{part:?}: unknown unit (packets, s, ms, us, B, KiB, MiB, GiB)"
            ));
        };
        if std::mem::replace(&mut given[bound], true) {
            let what = ["packets", "time", "bytes"][bound];
            return Err(format!("{part:?}: the {what} bound is given twice"));
        }
        bounds[bound] = n
            .checked_mul(factor)
            .ok_or_else(|| format!("{part:?}: too large"))?;
    }
    let [packets, time_ns, bytes] = bounds;
    Ok(ReorderWindow {
        packets,
        time_ns,
        bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
    })
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Format {
    /// The field tree as text: name, type, value, [offset, size], description.
    Text,
    /// `{kind, api_key, api_version, correlation_id, decode_error, fields, sources}`.
    Json,
}

#[derive(clap::Args, Debug)]
struct DecodeArgs {
    /// A file holding the message: raw bytes, or hex text (whitespace ignored); `-` reads standard input.
    #[arg(conflicts_with = "hex", required_unless_present = "hex")]
    file: Option<PathBuf>,
    /// The message as hex on the command line.
    #[arg(long)]
    hex: Option<String>,
    /// Decode as a response (needs --api-key and --api-version, the request's).
    #[arg(long, requires_all = ["api_key", "api_version"])]
    response: bool,
    /// The api key of the request this response answers.
    #[arg(long)]
    api_key: Option<i16>,
    /// The api version of the request this response answers.
    #[arg(long)]
    api_version: Option<i16>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Most bytes a compressed batch may decompress to.
    #[arg(long, default_value_t = 64 << 20)]
    max_decompressed: usize,
    /// Show SASL passwords, SCRAM proofs and tokens instead of redacting them.
    #[arg(long)]
    show_secrets: bool,
}

/// The command line: `-h` says what `--help` says (the long help), in
/// every subcommand.
fn command_line() -> clap::Command {
    let help = clap::Arg::new("help")
        .short('h')
        .long("help")
        .help("Print help")
        .action(clap::ArgAction::HelpLong);
    let with_help = |c: clap::Command| c.disable_help_flag(true).arg(help.clone());
    let cli = with_help(<Cli as clap::CommandFactory>::command());
    cli.mut_subcommands(with_help)
}

/// The subcommand `word` is a typo of, when it is not a file.
fn subcommand_like(word: &str) -> Option<String> {
    if word == "-" || std::path::Path::new(word).exists() {
        return None;
    }
    let cmd = command_line();
    let names: Vec<String> = (cmd.get_subcommands())
        .map(|c| c.get_name().to_string())
        .collect();
    if names.iter().any(|n| n == word) {
        return None;
    }
    (names.into_iter())
        .map(|n| (strsim::jaro_winkler(word, &n), n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

fn main() -> ExitCode {
    // A first word that is neither a file nor a command, but close to a
    // command, is a typo of it, whatever follows.
    let first = std::env::args().nth(1).filter(|w| !w.starts_with('-'));
    if let Some(word) = first {
        if let Some(sub) = subcommand_like(&word) {
            eprintln!(
                "kafkashark: no file or command {:?}; did you mean `kafkashark {sub}`?",
                tree::escape_text(&word)
            );
            return ExitCode::from(2);
        }
    }
    let matches = command_line().get_matches();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let res = match cli.command {
        Some(Command::Decode(a)) => run_decode(&a),
        Some(Command::Print(a)) => print::run(&a).map(|_| ExitCode::SUCCESS),
        Some(Command::Stats(a)) => stats_cmd::run(&a).map(|()| ExitCode::SUCCESS),
        Some(Command::Export(a)) => export_cmd::run(&a).map(|()| ExitCode::SUCCESS),
        Some(Command::Fields(a)) => fields_cmd::run(&a).map(|()| ExitCode::SUCCESS),
        Some(Command::Live(a)) => {
            privilege::configure(&a.privilege);
            let input = tui::Input::Live {
                iface: a.interface,
                filter: a.filter,
            };
            let metrics = a.metrics.as_deref().map(metrics::MetricsServer::start);
            match (metrics.transpose(), a.view.options(input, a.max_messages)) {
                (Ok(metrics), Ok(o)) => run_tui(tui::Options { metrics, ..o }),
                (Err(e), _) | (_, Err(e)) => Err(e),
            }
        }
        None => match open_tui_args(cli.tui) {
            Ok(Some(o)) => run_tui(o),
            Ok(None) => {
                let _ = command_line().print_long_help();
                return ExitCode::from(2);
            }
            Err(e) => Err(e),
        },
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kafkashark: {}", tree::escape_text(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// The TUI's input from the arguments given without a subcommand.
fn open_tui_args(a: TuiArgs) -> Result<Option<tui::Options>, CliError> {
    let Some(file) = a.files.first().cloned() else {
        return Ok(None);
    };
    let input = if a.message || file.ends_with(".hex") {
        if a.files.len() > 1 {
            return Err(CliError::Usage("one message file at a time".into()));
        }
        let bytes = read_message_file(&PathBuf::from(&file))?;
        tui::Input::Message { bytes, name: file }
    } else {
        tui::Input::Files(print::expand_globs(&a.files)?)
    };
    a.view.options(input, a.max_messages).map(Some)
}

fn run_tui(o: tui::Options) -> Result<ExitCode, CliError> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return Err(CliError::Usage(
            "the terminal UI needs a terminal; use `kafkashark print` for text output".into(),
        ));
    }
    tui::run(o)?;
    Ok(ExitCode::SUCCESS)
}

fn run_decode(a: &DecodeArgs) -> Result<ExitCode, CliError> {
    let bytes = match (&a.hex, &a.file) {
        (Some(h), _) => parse_hex(h).map_err(|e| CliError::Input {
            what: "--hex".into(),
            why: e,
        })?,
        (None, Some(p)) => read_message_file(p)?,
        (None, None) => return Err(CliError::Usage("give a FILE or --hex".into())),
    };
    let opts = DecodeOptions {
        max_decompressed: a.max_decompressed,
        show_secrets: a.show_secrets,
        ..DecodeOptions::default()
    };
    let d = if a.response {
        let (Some(k), Some(v)) = (a.api_key, a.api_version) else {
            return Err(CliError::Usage(
                "--response needs --api-key and --api-version".into(),
            ));
        };
        decode_response(&bytes, k, v, &opts)
    } else {
        decode_request(&bytes, &opts)
    };
    let out = match a.format {
        Format::Text => render_text(&d),
        Format::Json => serde_json::to_string_pretty(&decoded_json(&d)).unwrap_or_default() + "\n",
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(CliError::Output)?;
    if let Some(e) = &d.error {
        eprintln!(
            "kafkashark: decode error: {}",
            tree::escape_text(&e.to_string())
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn render_text(d: &Decoded) -> String {
    let mut s = tree::render_text(&d.root);
    for (i, src) in d.sources.iter().enumerate() {
        s.push_str(&format!(
            "\nbyte source #{}: {} ({} bytes)\n",
            i + 1,
            tree::escape_text(&src.name),
            src.data.len()
        ));
    }
    s
}

/// The JSON contract of `decode --format json`.
fn decoded_json(d: &Decoded) -> serde_json::Value {
    let mut v = serde_json::json!({
        "kind": d.kind,
        "api_key": d.api_key,
        "api_version": d.api_version,
        "correlation_id": d.correlation_id,
        "decode_error": d.error.as_ref().map(ToString::to_string),
        "sources": d.sources.iter().enumerate().map(|(i, s)| serde_json::json!({
            "id": i + 1, "name": s.name, "length": s.data.len(),
            "parent": s.parent, "parent_offset": s.parent_offset, "parent_length": s.parent_length,
        })).collect::<Vec<_>>(),
        "fields": d.root.to_json(),
    });
    if let (Some(w), Some(map)) = (&d.warning, v.as_object_mut()) {
        map.insert("decode_warning".into(), w.to_string().into());
    }
    v
}

fn read_message_file(p: &PathBuf) -> Result<Vec<u8>, CliError> {
    let mut raw = Vec::new();
    let res = if p.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut raw)
    } else {
        std::fs::File::open(p).and_then(|mut f| f.read_to_end(&mut raw))
    };
    res.map_err(|e| CliError::Io {
        path: p.display().to_string(),
        err: e,
    })?;
    // A file of hex digits and whitespace is hex text; anything else is raw bytes.
    let looks_hex = !raw.is_empty()
        && raw
            .iter()
            .all(|b| b.is_ascii_hexdigit() || b.is_ascii_whitespace());
    if looks_hex {
        let text = String::from_utf8_lossy(&raw);
        return parse_hex(&text).map_err(|why| CliError::Input {
            what: p.display().to_string(),
            why,
        });
    }
    Ok(raw)
}

/// Hex digits with any whitespace between them.
fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    digits
        .chunks(2)
        .enumerate()
        .map(|(i, pair)| {
            let t = std::str::from_utf8(pair).unwrap_or("??");
            u8::from_str_radix(t, 16).map_err(|_| format!("not hex at digit {}: {t:?}", i * 2))
        })
        .collect()
}

/// The cores this process may run on (at least one).
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The engine's [`Join`](kafkashark::capture::Join) on two threads: `b` on
/// a thread of its own (scoped: it may borrow), `a` on the caller's; both
/// on the caller's, one after the other, on one core or when no thread can
/// be started.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Both;

impl kafkashark::capture::Join for Both {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        if cores() < 2 {
            return (a(), b());
        }
        // `b` waits in a slot: the thread takes it out, or this one when
        // the thread could not be started.
        let slot = std::sync::Mutex::new(Some(b));
        let take = || slot.lock().ok().and_then(|mut s| s.take());
        std::thread::scope(|s| {
            let spawned = std::thread::Builder::new()
                .name("kafkashark-join".into())
                .spawn_scoped(s, || take().map(|b| b()));
            let ra = a();
            let rb = match spawned {
                Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                Err(_) => None,
            };
            match rb.or_else(|| take().map(|b| b())) {
                Some(rb) => (ra, rb),
                // Taken and run by the thread, which gave its result: not reached.
                None => unreachable!("the second job ran and returned"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_jobs_run_and_give_their_results() {
        use kafkashark::capture::Join;
        let here = std::thread::current().id();
        let (a, b) = Both.join(
            || (1, std::thread::current().id()),
            || ("b", std::thread::current().id()),
        );
        assert_eq!((a.0, b.0), (1, "b"));
        assert_eq!(a.1, here, "the first job runs on the caller's thread");
        if cores() >= 2 {
            assert_ne!(b.1, here, "the second job runs on a thread of its own");
        }
    }

    #[test]
    fn hex_parsing() {
        assert_eq!(parse_hex("00 0a\nff"), Ok(vec![0, 10, 255]));
        assert!(parse_hex("0").is_err());
        assert!(parse_hex("zz").is_err());
    }

    fn window(packets: u64, time_ns: u64, bytes: usize) -> ReorderWindow {
        ReorderWindow {
            packets,
            time_ns,
            bytes,
        }
    }

    /// The default spec is the documented default (docs/streams.md); each
    /// bound replaces the default's, in any order, in every unit accepted.
    #[test]
    fn reorder_window_specs() {
        let d = ReorderWindow::default();
        assert_eq!(d, window(64, 1_000_000_000, 1 << 20));
        assert_eq!(parse_reorder_window("64,1s,1MiB"), Ok(d));
        assert_eq!(parse_reorder_window(" 1MiB , 64 ,1s"), Ok(d));
        for (spec, want) in [
            ("200", window(200, 1_000_000_000, 1 << 20)),
            ("200p", window(200, 1_000_000_000, 1 << 20)),
            ("200Packets", window(200, 1_000_000_000, 1 << 20)),
            ("5s", window(64, 5_000_000_000, 1 << 20)),
            ("250ms", window(64, 250_000_000, 1 << 20)),
            ("500us", window(64, 500_000, 1 << 20)),
            ("65536B", window(64, 1_000_000_000, 65536)),
            ("512KiB", window(64, 1_000_000_000, 512 << 10)),
            ("2mib", window(64, 1_000_000_000, 2 << 20)),
            ("1GiB", window(64, 1_000_000_000, 1 << 30)),
            ("200,5s", window(200, 5_000_000_000, 1 << 20)),
        ] {
            assert_eq!(parse_reorder_window(spec), Ok(want), "{spec}");
        }
        assert_eq!(parse_reorder_window("off"), Ok(ReorderWindow::OFF));
        assert_eq!(parse_reorder_window(" OFF "), Ok(ReorderWindow::OFF));
        // A bound of 0 ends the window at once: the same as `off`.
        for spec in ["0", "0s", "0B"] {
            let w = parse_reorder_window(spec).expect(spec);
            assert!(!w.enabled(), "{spec}");
        }
    }

    /// What a bad spec is told.
    #[test]
    fn reorder_window_errors() {
        for (spec, want) in [
            ("", "\"\": a number with a unit (64, 1s, 250ms, 1MiB)"),
            ("64,", "\"\": a number with a unit (64, 1s, 250ms, 1MiB)"),
            ("-1", "\"-1\": a number with a unit (64, 1s, 250ms, 1MiB)"),
            ("s", "\"s\": a number with a unit (64, 1s, 250ms, 1MiB)"),
            (
                "1.5s",
                "\"1.5s\": unknown unit (packets, s, ms, us, B, KiB, MiB, GiB)",
            ),
            (
                "1m",
                "\"1m\": unknown unit (packets, s, ms, us, B, KiB, MiB, GiB)",
            ),
            (
                "1MB",
                "\"1MB\": unknown unit (packets, s, ms, us, B, KiB, MiB, GiB)",
            ),
            (
                "offf",
                "\"offf\": a number with a unit (64, 1s, 250ms, 1MiB)",
            ),
            ("64,128", "\"128\": the packets bound is given twice"),
            ("1s,250ms", "\"250ms\": the time bound is given twice"),
            (
                "64,1s,1MiB,2MiB",
                "\"2MiB\": the bytes bound is given twice",
            ),
            ("20000000000s", "\"20000000000s\": too large"),
            (
                "99999999999999999999",
                "\"99999999999999999999\": a number with a unit (64, 1s, 250ms, 1MiB)",
            ),
        ] {
            assert_eq!(parse_reorder_window(spec), Err(want.to_string()), "{spec}");
        }
    }
}
