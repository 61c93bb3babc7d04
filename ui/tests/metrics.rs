//! `--metrics` end to end: `kafkashark stats CAPTURE --metrics 127.0.0.1:0`
//! scraped over HTTP, the page parsed strictly as OpenMetrics by the Python
//! `prometheus_client` parser (skipped when it is not installed, except
//! under CI, which installs it), and its figures checked against the JSON
//! report of `stats` on the same capture and against the latencies and
//! throttle times `print --format jsonl` gives message by message.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

#[path = "../../tests/support/mod.rs"]
mod support;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

fn repo(p: &str) -> String {
    format!("{}/../{p}", env!("CARGO_MANIFEST_DIR"))
}

/// The shipped captures scraped: long-polls and head-of-line waits (a1),
/// a consumer group lagging (b6), throttling and errors (b4).
const CAPTURES: [&str; 3] = [
    "captures/a1-kcat-produce-consume-group.pcap",
    "captures/b6-consumer-lag.pcap",
    "captures/b4-throttle-errors-proxy.pcap",
];

/// The strict OpenMetrics parse (or with `0.0.4`, the Prometheus text
/// format's): the page on stdin, its samples out as JSON.
const PARSE: &str = r#"
import json, sys
if sys.argv[1:] == ["0.0.4"]:
    from prometheus_client.parser import text_string_to_metric_families
else:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
fams = list(text_string_to_metric_families(sys.stdin.read()))
print(json.dumps({
    "families": [[f.name, f.type, f.unit] for f in fams],
    "samples": [[s.name, s.labels, s.value] for f in fams for s in f.samples],
}))
"#;

/// Whether `program ARGS` runs and succeeds (`what` is here); under CI,
/// which installs it (.ci/run), it must.
fn present(what: &str, program: &str, args: &[&str]) -> bool {
    let ok = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "CI installs {what}");
        eprintln!("skipped: {what} is not installed");
    }
    ok
}

/// Whether Python with `prometheus_client` is here.
fn parser_present() -> bool {
    present(
        "python3 with prometheus_client",
        "python3",
        &["-c", "import prometheus_client"],
    )
}

/// A child process killed when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `kafkashark ARGS --metrics 127.0.0.1:0` and returns it with the
/// address it says it serves on (read from its standard error).
fn serve(args: &[&str]) -> (Running, String) {
    try_serve(args).unwrap_or_else(|err| panic!("no `metrics on http://`: {err}"))
}

/// [`serve`], or what the process said on standard error when it ended
/// without serving.
fn try_serve(args: &[&str]) -> Result<(Running, String), String> {
    let mut child = bin()
        .args(args)
        .args(["--metrics", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kafkashark");
    let stderr = child.stderr.take().expect("stderr");
    let running = Running(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let served = line
                .strip_prefix("metrics on http://")
                .map(|rest| rest.trim_end_matches("/metrics").to_string());
            let _ = tx.send(served.ok_or(line));
        }
    });
    let mut said = String::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Ok(addr)) => return Ok((running, addr)),
            Ok(Err(line)) => said.push_str(&line),
            Err(_) => return Err(said),
        }
    }
}

/// `GET /metrics` asking for OpenMetrics: the content type and the body.
fn scrape(addr: &str) -> (String, String) {
    scrape_accepting(addr, "application/openmetrics-text; version=1.0.0")
}

/// `GET /metrics` with `Accept: accept`: the content type and the body.
fn scrape_accepting(addr: &str, accept: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nHost: kafkashark\r\nAccept: {accept}\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("answer");
    let (head, body) = answer.split_once("\r\n\r\n").expect("headers end");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let kind = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .expect("content type");
    (kind.to_string(), body.to_string())
}

/// Samples by (name, labels).
type Samples = HashMap<(String, BTreeMap<String, String>), f64>;

/// The page parsed by `prometheus_client`: its families (name, type,
/// unit) and samples.
fn parse(page: &str) -> (Vec<(String, String, String)>, Samples) {
    parse_as(page, "openmetrics")
}

/// The page parsed by `prometheus_client` as `format` (`openmetrics` or `0.0.4`).
fn parse_as(page: &str, format: &str) -> (Vec<(String, String, String)>, Samples) {
    let mut py = Command::new("python3")
        .args(["-c", PARSE, format])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    py.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "not OpenMetrics: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let families = v["families"].as_array().unwrap().iter().map(|f| {
        let s = |i: usize| f[i].as_str().unwrap().to_string();
        (s(0), s(1), s(2))
    });
    let samples = v["samples"].as_array().unwrap().iter().map(|s| {
        let labels = s[1].as_object().unwrap().iter();
        let labels = labels.map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()));
        let key = (s[0].as_str().unwrap().to_string(), labels.collect());
        (key, s[2].as_f64().unwrap())
    });
    (families.collect(), samples.collect())
}

/// The sample `name{labels}`, 0 when absent.
fn get(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> f64 {
    let labels = labels.iter().map(|&(k, v)| (k.into(), v.into())).collect();
    samples
        .get(&(name.to_string(), labels))
        .copied()
        .unwrap_or(0.0)
}

/// `stats --format json` of a capture.
fn report(capture: &str) -> Value {
    let out = bin()
        .args(["stats", capture, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A latency summary's count (0 when there is none).
fn count(summary: &Value) -> f64 {
    summary["count"].as_f64().unwrap_or(0.0)
}

/// The report's API label: its name, else its key.
fn api(a: &Value) -> String {
    a["api_name"]
        .as_str()
        .map_or_else(|| a["api_key"].to_string(), str::to_string)
}

/// A histogram's buckets of one label set: (le, cumulative count), in order.
fn buckets(samples: &Samples, name: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
    let want: BTreeMap<String, String> =
        labels.iter().map(|&(k, v)| (k.into(), v.into())).collect();
    let mut v: Vec<(f64, f64)> = samples
        .iter()
        .filter(|((n, l), _)| {
            n == &format!("{name}_bucket") && {
                let mut l = l.clone();
                l.remove("le");
                l == want
            }
        })
        .map(|((_, l), &c)| (l["le"].parse::<f64>().unwrap(), c))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Checks a histogram against `values` (seconds): `_count` is their number,
/// `_sum` their sum, the buckets are cumulative and end at `+Inf` with the
/// count, and each bucket holds the values at or below its bound, give or
/// take those within the histogram's precision (0.1 % + 1 µs) of it.
fn check_histogram(samples: &Samples, name: &str, labels: &[(&str, &str)], values: &[f64]) {
    let n = values.len() as f64;
    assert_eq!(
        get(samples, &format!("{name}_count"), labels),
        n,
        "{name}{labels:?}"
    );
    let sum: f64 = values.iter().sum();
    let got = get(samples, &format!("{name}_sum"), labels);
    assert!(
        (got - sum).abs() <= 1e-6 * n + 1e-9,
        "{name}{labels:?} sum {got} vs {sum}"
    );
    let b = buckets(samples, name, labels);
    assert!(
        b.windows(2).all(|w| w[0].1 <= w[1].1),
        "{name}{labels:?} {b:?}"
    );
    assert_eq!(
        b.last().copied(),
        Some((f64::INFINITY, n)),
        "{name}{labels:?}"
    );
    for &(le, c) in &b {
        let at_most = |x: f64| values.iter().filter(|&&v| v <= x).count() as f64;
        let (lo, hi) = (at_most(le * 0.999 - 1e-6), at_most(le * 1.001 + 1e-6));
        assert!(
            lo <= c && c <= hi,
            "{name}{labels:?} le={le}: {c} not in {lo}..={hi}"
        );
    }
}

/// The paired responses of `print --format jsonl`: latency (s) by API, and
/// throttle times (ms) above 0 by API.
fn responses(capture: &str) -> (HashMap<String, Vec<f64>>, Vec<f64>) {
    let out = bin()
        .args(["print", capture, "--format", "jsonl"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let (mut latency, mut throttle) = (HashMap::<String, Vec<f64>>::new(), Vec::new());
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let m: Value = serde_json::from_str(line).unwrap();
        if m["kind"] != "response" {
            continue;
        }
        if let Some(ms) = m["latency_ms"].as_f64() {
            latency.entry(api(&m)).or_default().push(ms / 1e3);
        }
        if let Some(t) = m["throttle_time_ms"].as_f64().filter(|&t| t > 0.0) {
            throttle.push(t);
        }
    }
    (latency, throttle)
}

/// On each capture: the page parses as OpenMetrics, and per API, client,
/// broker, partition and consumer its figures are the JSON report's; the
/// latency buckets hold what `print` measured.
#[test]
fn a_scrape_is_openmetrics_with_the_figures_of_the_report() {
    if !parser_present() {
        return;
    }
    for capture in CAPTURES.map(repo) {
        let r = report(&capture);
        let (latencies, throttles) = responses(&capture);
        let (_server, addr) = serve(&["stats", &capture]);
        let (kind, page) = scrape(&addr);
        assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
        let (families, s) = parse(&page);
        assert_eq!(families.len(), 16, "{families:?}");
        // A scraper that does not ask for OpenMetrics gets the same samples
        // as the Prometheus text format 0.0.4, every family typed.
        let (kind, text) = scrape_accepting(&addr, "text/plain");
        assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
        let (families_004, s_004) = parse_as(&text, "0.0.4");
        let types = |f: &[(String, String, String)]| -> Vec<String> {
            f.iter().map(|f| f.1.clone()).collect()
        };
        assert_eq!(types(&families_004), types(&families));
        assert_eq!(s_004, s);
        for (name, _, unit) in &families {
            assert!(name.ends_with(&format!("_{unit}")) || unit.is_empty());
        }
        // Per API: the report's counters; latency and service histograms
        // of the report's counts, and the latencies print gives.
        let apis = r["apis"].as_array().unwrap();
        assert!(!apis.is_empty(), "{capture}");
        for a in apis {
            let name = api(a);
            let l = [("api", name.as_str())];
            for (metric, key) in [
                ("kafkashark_requests_total", "requests"),
                ("kafkashark_responses_total", "responses"),
                ("kafkashark_unanswered_requests_total", "unanswered"),
                ("kafkashark_long_polls_total", "long_polls"),
                ("kafkashark_head_of_line_waits_total", "hol_waits"),
            ] {
                let want = a[key].as_f64().unwrap();
                assert_eq!(get(&s, metric, &l), want, "{capture} {metric}{l:?}");
            }
            for (e, n) in a["errors"].as_object().unwrap() {
                let el = [("api", name.as_str()), ("error", e.as_str())];
                assert_eq!(get(&s, "kafkashark_errors_total", &el), n.as_f64().unwrap());
            }
            let values = latencies.get(&name).cloned().unwrap_or_default();
            assert_eq!(
                count(&a["latency_ms"]),
                values.len() as f64,
                "{capture} {name}"
            );
            check_histogram(&s, "kafkashark_latency_seconds", &l, &values);
            let service = get(&s, "kafkashark_service_seconds_count", &l);
            assert_eq!(service, count(&a["service_ms"]), "{capture} {name}");
        }
        let total = |metric: &str| {
            let each = s.iter().filter(|((n, _), _)| n == metric);
            each.map(|(_, v)| v).sum::<f64>()
        };
        let responses: f64 = apis.iter().map(|a| a["responses"].as_f64().unwrap()).sum();
        assert_eq!(total("kafkashark_responses_total"), responses);
        // Throttle per client: the report's, adding up to what print shows.
        for c in r["clients"].as_array().unwrap() {
            let id = c["client_id"].as_str().unwrap_or("");
            let software = match (c["software_name"].as_str(), c["software_version"].as_str()) {
                (Some(n), Some(v)) if !v.is_empty() => format!("{n} {v}"),
                (Some(n), _) => n.to_string(),
                (None, _) => String::new(),
            };
            let l = [("client_id", id), ("software", software.as_str())];
            let throttled = get(&s, "kafkashark_throttled_responses_total", &l);
            assert_eq!(
                throttled,
                c["throttled"].as_f64().unwrap(),
                "{capture} {l:?}"
            );
            let seconds = get(&s, "kafkashark_throttle_seconds_total", &l);
            let ms = c["throttle_time_ms"]["sum"].as_f64().unwrap();
            assert!((seconds - ms / 1e3).abs() < 1e-9, "{capture} {l:?}");
            let latency = get(&s, "kafkashark_client_latency_seconds_count", &l);
            assert_eq!(latency, count(&c["latency_ms"]), "{capture} {l:?}");
        }
        let throttled = total("kafkashark_throttled_responses_total");
        assert_eq!(throttled, throttles.len() as f64, "{capture}");
        let seconds = total("kafkashark_throttle_seconds_total");
        assert!((seconds - throttles.iter().sum::<f64>() / 1e3).abs() < 1e-6);
        for b in r["brokers"].as_array().unwrap() {
            let l = [("broker", b["broker"].as_str().unwrap())];
            let n = get(&s, "kafkashark_broker_latency_seconds_count", &l);
            assert_eq!(n, count(&b["latency_ms"]), "{capture} {l:?}");
        }
        // Lag, record age and delivery: the report's rows, one for one.
        let lag = r["lag"]["partitions"].as_array().unwrap();
        assert_eq!(
            s.keys()
                .filter(|(n, _)| n == "kafkashark_consumer_lag_records")
                .count(),
            lag.len()
        );
        for p in lag {
            let part = p["partition"].to_string();
            let l = [
                ("client", p["client"].as_str().unwrap()),
                ("host", p["host"].as_str().unwrap()),
                ("group", p["group"].as_str().unwrap_or("")),
                ("topic", p["topic"].as_str().unwrap()),
                ("partition", part.as_str()),
            ];
            let got = get(&s, "kafkashark_consumer_lag_records", &l);
            assert_eq!(got, p["lag"].as_f64().unwrap(), "{capture} {l:?}");
            if let (Some(g), Some(c)) = (p["group"].as_str(), p["committed_lag"].as_f64()) {
                let l = [("group", g), l[3], l[4]];
                assert_eq!(get(&s, "kafkashark_committed_lag_records", &l), c);
            }
        }
        for a in r["delivery"]["record_age"].as_array().unwrap() {
            let part = a["partition"].to_string();
            let l = [
                ("topic", a["topic"].as_str().unwrap()),
                ("partition", &part),
            ];
            let n = get(&s, "kafkashark_record_age_seconds_count", &l);
            assert_eq!(n, count(&a["age_ms"]), "{capture} {l:?}");
        }
        for d in r["delivery"]["delivery"].as_array().unwrap() {
            let l = [("consumer", d["consumer"].as_str().unwrap())];
            let n = get(&s, "kafkashark_delivery_seconds_count", &l);
            assert_eq!(n, count(&d["delivery_ms"]), "{capture} {l:?}");
        }
    }
}

/// A `--metrics` address already taken is refused at once, before any report.
#[test]
fn a_taken_address_fails_before_reading() {
    let (_server, addr) = serve(&["stats", &repo(CAPTURES[0])]);
    let out = bin()
        .args(["stats", &repo(CAPTURES[0]), "--metrics", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("kafkashark: --metrics {addr}: ")),
        "{err}"
    );
}

/// `GET path` on `addr` over HTTP/1.0 (the answer ends with the connection):
/// the body, when the status is 200.
fn http_get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    // `HTTP/1.0 200 OK` or `HTTP/1.1 200 OK`.
    (head.split(' ').nth(1) == Some("200")).then(|| body.to_string())
}

/// A PromQL query's vector: (labels, value) per series.
fn query(prometheus: &str, promql: &str) -> Vec<(Value, f64)> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let Some(body) = http_get(prometheus, &format!("/api/v1/query?query={q}")) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&body).unwrap();
    let each = v["data"]["result"].as_array().cloned().unwrap_or_default();
    let value = |r: &Value| r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
    each.iter()
        .map(|r| (r["metric"].clone(), value(r)))
        .collect()
}

/// A directory removed when the test ends.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A real Prometheus (Debian's `prometheus`, skipped when absent except
/// under CI) scrapes `stats --metrics` and answers PromQL with the report's figures.
#[test]
fn prometheus_scrapes_the_figures() {
    if !present("prometheus", "prometheus", &["--version"]) {
        return;
    }
    let capture = repo(CAPTURES[2]);
    let r = report(&capture);
    let (_server, target) = serve(&["stats", &capture]);
    let dir =
        TempDir(std::env::temp_dir().join(format!("kafkashark-prometheus-{}", std::process::id())));
    let dir = &dir.0;
    std::fs::create_dir_all(dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: kafkashark\n    \
             scrape_interval: 1s\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    // A free port for Prometheus' own API, on loopback.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let web = format!("127.0.0.1:{port}");
    let _prometheus = Running(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus"),
    );
    // Scraped once the target is up and its samples are stored.
    let throttled = "sum(kafkashark_throttled_responses_total)";
    let mut got = Vec::new();
    for _ in 0..120 {
        got = query(&web, throttled);
        if !got.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(got.len(), 1, "no scrape stored: {got:?}");
    assert_eq!(got[0].1, r["throttle"]["throttled"].as_f64().unwrap());
    let up = query(&web, "up{job=\"kafkashark\"}");
    assert_eq!(up.iter().map(|u| u.1).collect::<Vec<_>>(), [1.0]);
    // Every API's responses, and the latency histograms as PromQL reads them.
    for a in r["apis"].as_array().unwrap() {
        let name = api(a);
        let responses = query(
            &web,
            &format!("kafkashark_responses_total{{api=\"{name}\"}}"),
        );
        assert_eq!(responses.len(), 1, "{name}");
        assert_eq!(responses[0].1, a["responses"].as_f64().unwrap(), "{name}");
        let n = query(
            &web,
            &format!("kafkashark_latency_seconds_count{{api=\"{name}\"}}"),
        );
        assert_eq!(
            n.first().map(|n| n.1),
            Some(count(&a["latency_ms"])),
            "{name}"
        );
    }
    // histogram_quantile over the buckets lands within a bucket of the p50.
    let produce = r["apis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["api_name"] == "Produce")
        .expect("Produce");
    let p50 = produce["latency_ms"]["p50"].as_f64().unwrap() / 1e3;
    let q = query(
        &web,
        "histogram_quantile(0.5, kafkashark_latency_seconds_bucket{api=\"Produce\"})",
    );
    let est = q[0].1;
    assert!(
        est > 0.0 && est / p50 < 3.0 && p50 / est < 3.0,
        "{est} vs {p50}"
    );
}

/// Live: `stats -i lo` sees a shipped capture's connections replayed over
/// loopback and publishes their figures at its next refresh: the responses
/// per API and the throttling of the capture (skipped without the right to
/// capture on `lo`).
#[test]
fn stats_on_a_live_interface_publishes_at_every_refresh() {
    let capture = repo(CAPTURES[2]);
    let r = report(&capture);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let args = ["stats", "-i", "lo", "--ports", &port, "--duration", "120"];
    let (_server, addr) = match try_serve(&args) {
        Ok(s) => s,
        Err(said) => {
            eprintln!("skipped: no live capture on lo: {said}");
            return;
        }
    };
    // Before any traffic: a page, and no responses.
    let (_, page) = scrape(&addr);
    assert!(page.ends_with("# EOF\n"), "{page}");
    assert!(!page.contains("kafkashark_responses_total{"), "{page}");
    support::replay(&listener, &support::conversations(&capture));
    publishes_the_figures_of(&addr, &r);
}

/// Scrapes `addr` until its responses per API are the report's `r` (a minute
/// at most), and checks its throttle totals against the report's.
fn publishes_the_figures_of(addr: &str, r: &Value) {
    let want: Vec<String> = r["apis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!(
                "kafkashark_responses_total{{api=\"{}\"}} {}",
                api(a),
                a["responses"]
            )
        })
        .collect();
    let throttled = r["throttle"]["throttled"].as_u64().unwrap();
    let mut page = String::new();
    for _ in 0..120 {
        page = scrape(addr).1;
        if want.iter().all(|w| page.lines().any(|l| l == w)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    for w in &want {
        assert!(page.lines().any(|l| l == w), "{w} in\n{page}");
    }
    let sum = |prefix: &str| -> f64 {
        let each = page.lines().filter(|l| l.starts_with(prefix));
        each.map(|l| l.rsplit_once(' ').unwrap().1.parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(
        sum("kafkashark_throttled_responses_total{"),
        throttled as f64
    );
    let ms = r["throttle"]["sum_ms"].as_f64().unwrap();
    assert!((sum("kafkashark_throttle_seconds_total{") - ms / 1e3).abs() < 1e-6);
}

/// `live`: the terminal UI (in tmux) capturing on `lo` serves the figures of
/// the connections replayed there, and quits as usual (skipped without tmux
/// or the right to capture on `lo`).
#[test]
fn live_serves_the_figures_of_its_capture() {
    if !support::tmux::have_tmux() {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let capture = repo(CAPTURES[2]);
    let r = report(&capture);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = TempDir(
        std::env::temp_dir().join(format!("kafkashark-live-metrics-{}", std::process::id())),
    );
    std::fs::create_dir_all(&dir.0).unwrap();
    let err = dir.0.join("stderr");
    let bin = env!("CARGO_BIN_EXE_kafkashark");
    let cmd = format!(
        "'{bin}' live -i lo --ports {port} --metrics 127.0.0.1:0 2>'{}'; \
         echo \"kafkashark exited $?\"; sleep 60",
        err.display()
    );
    let t = support::tmux::Tmux::new("metrics", "metrics");
    let args = [
        "new-session",
        "-d",
        "-s",
        "metrics",
        "-x",
        "120",
        "-y",
        "40",
    ];
    assert!(t.run(&args).status.success());
    let _ = t.run(&["send-keys", "-t", "metrics", &cmd, "Enter"]);
    let mut said = String::new();
    for _ in 0..120 {
        said = std::fs::read_to_string(&err).unwrap_or_default();
        if !said.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let Some(addr) = said
        .lines()
        .find_map(|l| l.strip_prefix("metrics on http://"))
        .map(|a| a.trim_end_matches("/metrics").to_string())
    else {
        eprintln!("skipped: no live capture on lo: {said}");
        return;
    };
    t.wait_for("live: lo");
    support::replay(&listener, &support::conversations(&capture));
    publishes_the_figures_of(&addr, &r);
    t.keys(&["q"]);
    t.wait_for("kafkashark exited 0");
}
