//! `--metrics ADDR:PORT`: the figures of `stats` served over HTTP for
//! Prometheus to scrape. The engine writes the page
//! (`kafkashark::stats::openmetrics`); this front end owns the socket and
//! the one thread that answers scrapes.
//!
//! Place in the data path: the `stats` loop (after every refresh) or the
//! live TUI's loader thread ([`Feed`], every second) →
//! [`MetricsServer::publish_stats`] → the page the server thread hands to
//! each scrape.
//!
//! Invariants: one thread, one scrape at a time; a scrape must send its
//! request and read the answer within [`IO_TIMEOUT`] in all (however it
//! trickles its bytes), or it is cut off, so no client holds the server
//! longer; a request is read up to [`MAX_REQUEST`] bytes, never more. `GET /metrics` (and `/`)
//! answer the last published page, `HEAD` its headers; anything else gets
//! 404 or 405. The page is OpenMetrics text, sent as
//! `application/openmetrics-text` to a scraper that accepts it, and
//! otherwise rewritten as the Prometheus text format 0.0.4 ([`text_004`]:
//! the same samples, with a counter's type on its `_total` samples).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kafkashark::analyzer::{AnalyzerConfig, Output};
use kafkashark::stats::{Stats, StatsConfig};

use crate::cli_error::CliError;

/// How long a scrape may take, from its request's first byte read to the
/// answer's last byte written.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Most bytes of a request (request line and headers) read.
pub const MAX_REQUEST: u64 = 16 * 1024;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The server: where it listens and the page it serves.
pub struct MetricsServer {
    addr: SocketAddr,
    page: Arc<Mutex<String>>,
}

impl MetricsServer {
    /// Binds `addr` (`HOST:PORT`; port 0 picks a free one) and starts the
    /// thread that answers scrapes. Until the first [`publish`](Self::publish)
    /// the page is an empty exposition (`# EOF`).
    pub fn start(addr: &str) -> Result<MetricsServer, CliError> {
        let bad = |why: String| CliError::Input {
            what: format!("--metrics {addr}"),
            why,
        };
        let listener = TcpListener::bind(addr).map_err(|e| bad(e.to_string()))?;
        let addr = listener.local_addr().map_err(|e| bad(e.to_string()))?;
        let page = Arc::new(Mutex::new("# EOF\n".to_string()));
        let served = Arc::clone(&page);
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for conn in listener.incoming().flatten() {
                    // A scrape that fails (reset, timeout) concerns that scrape only.
                    let _ = answer(&conn, &served, IO_TIMEOUT);
                }
            })
            .map_err(|e| bad(e.to_string()))?;
        Ok(MetricsServer { addr, page })
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes `page` the one the next scrapes get.
    pub fn publish(&self, page: String) {
        *self.page.lock().unwrap_or_else(PoisonError::into_inner) = page;
    }

    /// Publishes the figures of `stats` (settled: [`Stats::settle`]).
    pub fn publish_stats(&self, stats: &Stats) {
        self.publish(stats.openmetrics());
    }

    /// Says on standard error where the figures are served.
    pub fn announce(&self) {
        eprintln!("metrics on http://{}/metrics", self.addr());
    }

    /// Serves the last page until the process is interrupted (SIGINT or
    /// SIGTERM end it): the figures of a capture file stay up to be scraped.
    pub fn serve_forever(&self) -> ! {
        loop {
            std::thread::park();
        }
    }
}

/// How often a [`Feed`] publishes.
pub const REFRESH: Duration = Duration::from_secs(1);

/// A `Stats` fed beside another consumer of the analyzer's outputs (the
/// live TUI's loader) and published every [`REFRESH`].
pub struct Feed {
    server: MetricsServer,
    stats: Stats,
    last: Instant,
}

impl Feed {
    /// A feed publishing to `server`.
    pub fn new(server: MetricsServer) -> Feed {
        Feed {
            server,
            stats: Stats::new(StatsConfig::default()),
            last: Instant::now(),
        }
    }

    /// The analyzer settings of `base` with what `Stats` reads added (the
    /// trees it reads, record batch headers); the messages keep the topics
    /// `base` gives them.
    pub fn analyzer_config(base: AnalyzerConfig) -> AnalyzerConfig {
        let (info_topics, response_topics) = (base.info_topics, base.response_topics);
        AnalyzerConfig {
            info_topics,
            response_topics,
            ..Stats::analyzer_config(base)
        }
    }

    /// Counts one output.
    pub fn push(&mut self, o: &Output) {
        self.stats.push(o);
    }

    /// Publishes when the last page is [`REFRESH`] old, or at once with `now`.
    pub fn tick(&mut self, now: bool) {
        if now || self.last.elapsed() >= REFRESH {
            self.last = Instant::now();
            self.stats.settle();
            self.server.publish_stats(&self.stats);
        }
    }
}

/// Reads one request from `conn` and answers it.
/// A scrape's connection whose reads and writes all end by one deadline.
struct Deadline<'a> {
    conn: &'a TcpStream,
    until: Instant,
}

impl Deadline<'_> {
    /// The time left, or `TimedOut` when none is.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.conn.set_read_timeout(Some(self.left()?))?;
        self.conn.read(buf)
    }
}

impl Write for Deadline<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.conn.set_write_timeout(Some(self.left()?))?;
        self.conn.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.conn.flush()
    }
}

/// An OpenMetrics page in the Prometheus text format 0.0.4: the same
/// samples; a counter's `# TYPE` and `# HELP` name its `_total` samples (in
/// 0.0.4 the family is named as its samples), and `# UNIT` and `# EOF`,
/// which 0.0.4 does not have, go.
pub fn text_004(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut counter = "";
    for line in page.lines() {
        let mut words = line.splitn(4, ' ');
        let (hash, what, name) = (words.next(), words.next(), words.next().unwrap_or(""));
        match (hash, what) {
            (Some("#"), Some("UNIT" | "EOF")) => continue,
            (Some("#"), Some("TYPE")) if line.ends_with(" counter") => {
                counter = name;
                out.push_str(&format!("# TYPE {name}_total counter"));
            }
            (Some("#"), Some("HELP")) if name == counter => {
                let help = words.next().unwrap_or("");
                out.push_str(&format!("# HELP {name}_total {help}"));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Reads one request from `conn` and answers it, all within `timeout`.
fn answer(conn: &TcpStream, page: &Mutex<String>, timeout: Duration) -> std::io::Result<()> {
    let mut io = Deadline {
        conn,
        until: Instant::now() + timeout,
    };
    let mut reader = BufReader::new((&mut io).take(MAX_REQUEST));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let mut openmetrics = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            if name.trim().eq_ignore_ascii_case("accept") {
                openmetrics |= value.contains("application/openmetrics-text");
            }
        }
    }
    let path = path.split('?').next().unwrap_or("");
    let (status, kind, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            let page = page.lock().unwrap_or_else(PoisonError::into_inner);
            if openmetrics {
                ("200 OK", OPENMETRICS, page.clone())
            } else {
                ("200 OK", PROMETHEUS_TEXT, text_004(&page))
            }
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain",
            "not found: try /metrics\n".into(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics\n".into(),
        ),
    };
    drop(reader);
    let mut w = io;
    write!(
        w,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        w.write_all(body.as_bytes())?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_last_published_page_by_what_the_scraper_accepts() {
        let m = MetricsServer::start("127.0.0.1:0").unwrap();
        let om_request =
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0\r\n\r\n";
        let before = scrape(m.addr(), om_request);
        assert!(before.starts_with("HTTP/1.1 200 OK\r\n"), "{before}");
        assert!(before.ends_with("\r\n\r\n# EOF\n"), "{before}");
        let plain = scrape(m.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            plain.ends_with("Content-Length: 0\r\nConnection: close\r\n\r\n"),
            "{plain}"
        );
        m.publish("a_total 1\n# EOF\n".into());
        let om = scrape(m.addr(), om_request);
        assert!(
            om.contains(&format!("Content-Type: {OPENMETRICS}\r\n")),
            "{om}"
        );
        assert!(om.contains("Content-Length: 16\r\n"), "{om}");
        assert!(om.ends_with("\r\n\r\na_total 1\n# EOF\n"), "{om}");
        let plain = scrape(m.addr(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(
            plain.contains(&format!("Content-Type: {PROMETHEUS_TEXT}\r\n")),
            "{plain}"
        );
        assert!(plain.ends_with("\r\n\r\na_total 1\n"), "{plain}");
        let head = scrape(m.addr(), "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.ends_with("Connection: close\r\n\r\n"), "{head}");
    }

    #[test]
    fn other_paths_and_methods_are_refused() {
        let m = MetricsServer::start("127.0.0.1:0").unwrap();
        assert!(scrape(m.addr(), "GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
        assert!(scrape(m.addr(), "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405 "));
        assert!(scrape(m.addr(), "\r\n\r\n").starts_with("HTTP/1.1 405 "));
    }

    #[test]
    fn a_silent_or_endless_client_does_not_hold_the_server() {
        let m = MetricsServer::start("127.0.0.1:0").unwrap();
        // A request that never ends its headers, bigger than MAX_REQUEST.
        let mut hog = TcpStream::connect(m.addr()).unwrap();
        let junk = vec![b'x'; MAX_REQUEST as usize + 100];
        let _ = hog.write_all(&junk);
        // Served all the same once the hog's request is cut at MAX_REQUEST.
        assert!(scrape(m.addr(), "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 "));
    }

    #[test]
    fn a_scrape_that_trickles_its_request_is_cut_off_at_the_deadline() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let trickle = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            // A byte every 20 ms, each within any per-read timeout, never ending.
            for _ in 0..50 {
                if c.write_all(b"G").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let (conn, _) = listener.accept().unwrap();
        let page = Mutex::new("# EOF\n".to_string());
        let started = Instant::now();
        let e = answer(&conn, &page, Duration::from_millis(200)).unwrap_err();
        // The deadline, or the last read's timeout (EAGAIN) just before it.
        let kinds = [std::io::ErrorKind::TimedOut, std::io::ErrorKind::WouldBlock];
        assert!(kinds.contains(&e.kind()), "{e}");
        assert!(started.elapsed() < Duration::from_millis(600));
        drop(conn);
        trickle.join().unwrap();
    }

    #[test]
    fn text_004_types_counters_on_their_samples() {
        let om = "# TYPE a counter\n# HELP a As.\na_total{x=\"# TYPE\"} 1\n\
                  # TYPE b_seconds histogram\n# UNIT b_seconds seconds\n# HELP b_seconds Bs.\n\
                  b_seconds_count 0\n# TYPE c gauge\n# HELP c Cs.\nc 2\n# EOF\n";
        assert_eq!(
            text_004(om),
            "# TYPE a_total counter\n# HELP a_total As.\na_total{x=\"# TYPE\"} 1\n\
             # TYPE b_seconds histogram\n# HELP b_seconds Bs.\n\
             b_seconds_count 0\n# TYPE c gauge\n# HELP c Cs.\nc 2\n"
        );
    }

    #[test]
    fn a_taken_address_is_a_clear_error() {
        let m = MetricsServer::start("127.0.0.1:0").unwrap();
        let e = MetricsServer::start(&m.addr().to_string()).err().unwrap();
        assert!(
            e.to_string()
                .starts_with(&format!("--metrics {}: ", m.addr())),
            "{e}"
        );
        let e = MetricsServer::start("nonsense").err().unwrap();
        assert!(e.to_string().starts_with("--metrics nonsense: "), "{e}");
    }
}
