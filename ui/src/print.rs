//! `kafkashark print`: one line (or one JSON object) per Kafka message, from a
//! capture file, standard input or a live interface. A thin shell: it feeds
//! frames to the engine's `Analyzer` and formats what comes out.

use std::io::Write;
use std::time::{Duration, Instant};

use kafkashark::capture::{
    CaptureError, FileSource, Frame, FrameSource, LiveConfig, LiveSource, Polled, Timestamp,
};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::kafka::errors::error_name;
use kafkashark::kafka::tree;
use kafkashark::model::{Analyzer, AnalyzerConfig, MessageRecord, Notice, Output, Reorder};
use kafkashark::pipeline::{Event, PipelineConfig};

use crate::cli_error::CliError;

/// Where frames come from.
pub enum Input {
    /// A pcap/pcapng file, or `-` for standard input.
    File(String),
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

/// Options of `print`.
pub struct PrintOptions {
    /// Frames source.
    pub input: Input,
    /// Broker ports.
    pub ports: Ports,
    /// Output format.
    pub format: PrintFormat,
    /// Full field trees.
    pub verbose: bool,
    /// Stop after this many messages.
    pub count: Option<u64>,
    /// Stop after this long (live).
    pub duration: Option<Duration>,
    /// Reveal secrets.
    pub show_secrets: bool,
    /// Decompression cap per batch.
    pub max_decompressed: usize,
}

/// Builds the default BPF filter for the broker ports.
pub fn default_filter(ports: &Ports) -> Option<String> {
    match ports {
        Ports::Any => Some("tcp".into()),
        Ports::List(l) => Some(
            l.iter()
                .map(|p| format!("tcp port {p}"))
                .collect::<Vec<_>>()
                .join(" or "),
        ),
    }
}

/// Runs `print`; returns the number of messages with a decode error.
pub fn run(opts: &PrintOptions) -> Result<u64, CliError> {
    let mut source: Box<dyn FrameSource> = match &opts.input {
        Input::File(path) => Box::new(FileSource::open(path).map_err(CliError::Capture)?),
        Input::Live { iface, filter } => {
            let mut cfg = LiveConfig::new(iface);
            cfg.filter = filter.clone().or_else(|| default_filter(&opts.ports));
            Box::new(crate::privilege::after_open(LiveSource::open(&cfg))?)
        }
    };
    let name = match &opts.input {
        Input::File(p) => p.clone(),
        Input::Live { iface, .. } => iface.clone(),
    };
    let mut cfg = AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(opts.ports.clone()),
        keep_trees: opts.verbose,
        ..AnalyzerConfig::default()
    };
    cfg.decode.records = opts.verbose;
    cfg.decode.show_secrets = opts.show_secrets;
    cfg.decode.max_decompressed = opts.max_decompressed;
    let mut analyzer = Analyzer::new(cfg);
    let live = matches!(opts.input, Input::Live { .. });
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let mut out = Vec::new();
    let mut ready = Vec::new();
    // Requests wait (bounded) for their responses so `paired` is final when printed.
    let mut reorder = Reorder::new(if live { 1024 } else { 65_536 });
    let mut printer = Printer {
        format: opts.format,
        verbose: opts.verbose,
        first_ts: None,
        printed: 0,
        malformed: 0,
        name,
    };
    let started = Instant::now();
    let mut read_error: Option<CaptureError> = None;
    loop {
        if opts.count.is_some_and(|c| printer.printed >= c)
            || opts.duration.is_some_and(|d| started.elapsed() >= d)
        {
            break;
        }
        let frame: Frame = match source.poll() {
            Ok(Polled::Frame(f)) => f,
            Ok(Polled::Timeout) => {
                if live {
                    w.flush().map_err(CliError::Output)?;
                }
                continue;
            }
            Ok(Polled::End) => break,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        };
        if printer.first_ts.is_none() {
            printer.first_ts = Some(frame.ts);
        }
        analyzer.push(&frame, &mut out);
        for o in out.drain(..) {
            reorder.push(o, &mut ready);
        }
        printer.emit(&mut ready, &mut w, opts.count)?;
        if live {
            w.flush().map_err(CliError::Output)?;
        }
    }
    if opts.count.is_none_or(|c| printer.printed < c) {
        analyzer.finish(&mut out);
        for o in out.drain(..) {
            reorder.push(o, &mut ready);
        }
        reorder.flush(&mut ready);
        printer.emit(&mut ready, &mut w, opts.count)?;
    }
    w.flush().map_err(CliError::Output)?;
    if let Some(e) = read_error {
        // Everything before the bad frame was printed; say what stopped the read.
        eprintln!("kafkashark: {e}");
    }
    Ok(printer.malformed)
}

struct Printer {
    format: PrintFormat,
    verbose: bool,
    first_ts: Option<Timestamp>,
    printed: u64,
    malformed: u64,
    name: String,
}

impl Printer {
    fn emit(
        &mut self,
        out: &mut Vec<Output>,
        w: &mut impl Write,
        count: Option<u64>,
    ) -> Result<(), CliError> {
        for o in out.drain(..) {
            match o {
                Output::Message(m) => {
                    if count.is_some_and(|c| self.printed >= c) {
                        continue;
                    }
                    self.printed += 1;
                    if m.info.decode_error.is_some() {
                        self.malformed += 1;
                    }
                    let line = match self.format {
                        PrintFormat::Jsonl => {
                            let mut s = serde_json::to_string(&message_json(&m, self.verbose))
                                .unwrap_or_default();
                            s.push('\n');
                            s
                        }
                        PrintFormat::Text => self.text_line(&m),
                    };
                    w.write_all(line.as_bytes()).map_err(CliError::Output)?;
                }
                Output::Notice(n) => {
                    if let Some(text) = notice_text(&n) {
                        eprintln!("kafkashark: {}: {text}", self.name);
                    }
                }
            }
        }
        Ok(())
    }

    fn text_line(&self, m: &MessageRecord) -> String {
        let i = &m.info;
        let rel = self.first_ts.map_or(0.0, |t| i.ts.as_f64() - t.as_f64());
        let (from, to) = match i.kind {
            Kind::Request => (i.client, i.broker),
            Kind::Response => (i.broker, i.client),
        };
        let api = match (i.api_name(), i.api_version) {
            (Some(n), Some(v)) => format!("{n} v{v}"),
            (None, _) => match i.api_key {
                Some(k) => format!("api {k}"),
                None => "unknown".into(),
            },
            (Some(n), None) => n.to_string(),
        };
        let kind = match i.kind {
            Kind::Request => "Request",
            Kind::Response => "Response",
        };
        let mut s = format!(
            "{:>6} {:>12.6} s{:<3} {from} → {to}  {api} {kind}  corr={} len={}",
            i.frame,
            rel,
            i.stream,
            i.correlation_id.map_or("?".into(), |c| c.to_string()),
            i.length
        );
        if let Some(c) = &i.client_id {
            s.push_str(&format!(" client_id={:?}", tree::escape_text(c)));
        }
        if let Some(l) = i.latency_ms() {
            s.push_str(&format!(" latency={l:.3}ms"));
        }
        if let Some(t) = i.throttle_time_ms.filter(|&t| t > 0) {
            s.push_str(&format!(" throttle={t}ms"));
        }
        if !i.error_codes.is_empty() {
            let mut names: Vec<String> = i
                .error_codes
                .iter()
                .map(|&c| error_name(c).map_or(c.to_string(), str::to_string))
                .collect();
            names.dedup();
            s.push_str(&format!(" errors={}", names.join(",")));
        }
        if i.kind == Kind::Request && !i.expects_response {
            s.push_str(" [no response expected]");
        }
        if i.kind == Kind::Response && !i.paired {
            s.push_str(if i.inferred {
                " [inferred]"
            } else {
                " [unpaired]"
            });
        }
        if i.resynced {
            s.push_str(&format!(" [resync, {} bytes skipped]", i.skipped_before));
        }
        if let Some(e) = &i.decode_error {
            s.push_str(&format!(" [malformed: {}]", tree::escape_text(e)));
        }
        s.push('\n');
        if self.verbose {
            if let Some(d) = &m.decoded {
                for line in tree::render_text(&d.root).lines() {
                    s.push_str("    ");
                    s.push_str(line);
                    s.push('\n');
                }
            }
        }
        s
    }
}

/// The JSONL contract of DESIGN.md, plus `fields` with `-V`.
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
        "topics": i.topics,
    });
    if let Some(map) = o.as_object_mut() {
        if i.kind == Kind::Request {
            map.insert("client_id".into(), i.client_id.clone().into());
            map.insert("expects_response".into(), i.expects_response.into());
        } else {
            map.insert("latency_ms".into(), i.latency_ms().into());
            map.insert("throttle_time_ms".into(), i.throttle_time_ms.into());
            map.insert("error_codes".into(), i.error_codes.clone().into());
            map.insert("inferred".into(), i.inferred.into());
        }
        if i.resynced {
            map.insert("resynced".into(), true.into());
            map.insert("skipped_before".into(), i.skipped_before.into());
        }
        if verbose {
            if let Some(d) = &m.decoded {
                map.insert("fields".into(), d.root.to_json());
            }
        }
    }
    o
}

fn notice_text(n: &Notice) -> Option<String> {
    match n {
        Notice::Unanswered { stream, request } => Some(format!(
            "stream {stream}: request at frame {} ({} v{}) got no response",
            request.frame,
            kafkashark::kafka::schema::api_name(request.api_key).unwrap_or("?"),
            request.api_version
        )),
        Notice::Stream(ev) => match ev {
            Event::Gap {
                stream,
                dir,
                len,
                frame,
                reason,
                ..
            } => Some(format!(
                "stream {stream} {dir:?}: {len} bytes missing before frame {frame} ({reason:?})"
            )),
            Event::Resync {
                stream,
                dir,
                skipped,
                frame,
                ..
            } => Some(format!(
                "stream {stream} {dir:?}: resynchronised at frame {frame} after skipping {skipped} bytes"
            )),
            Event::Discarded {
                stream,
                dir,
                bytes,
                frame,
            } => Some(format!(
                "stream {stream} {dir:?}: {bytes} bytes from frame {frame} formed no message"
            )),
            Event::Warning {
                frame,
                offset,
                what,
            } => Some(match offset {
                Some(o) => format!("frame {frame}, offset {o}: {what}"),
                None => format!("frame {frame}: {what}"),
            }),
            Event::Partial(m) => Some(format!(
                "stream {} {:?}: message at frame {} incomplete, {} bytes missing",
                m.stream, m.dir, m.first_frame, m.missing
            )),
            _ => None,
        },
    }
}
