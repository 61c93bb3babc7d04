//! Throttle figures of `kafkashark::stats` on `captures/b4-throttle-errors-proxy.pcap`,
//! the capture whose ThrottleTimeMs values were injected by `captures/throttle-proxy.py`
//! between real clients and a real tansu broker (tansu has no quotas).
//!
//! Checked against computations made here, not through the stats code:
//! - per api: throttled responses, max and sum of ThrottleTimeMs, and the per-second
//!   series, recomputed from the `MessageInfo`s;
//! - every ThrottleTimeMs > 0 and every NOT_LEADER_OR_FOLLOWER in the capture is one the
//!   proxy logged (`….pcap.proxy.tsv`, matched by client address and correlation id), and
//!   every logged rewrite is in the capture;
//! - the values follow the proxy's rule: per connection, the n-th throttled Fetch response
//!   gets 100, 200, 300, 400 ms in turn and the n-th throttled Produce response 50, 100,
//!   150 ms, only 3–7 s after the first connection;
//! - the clients' real reaction: kafka-python waits the throttle time before its next Fetch
//!   request on that connection (KIP-219 client side); librdkafka does not wait (it only
//!   reports throttle times to the application), so the proxy's broker-side mute holds its
//!   next request and the next Fetch response comes at least the throttle time later.
//!
//! Skips cleanly when the capture or its proxy log is missing.

use kafkashark::vocab::Timestamp;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageInfo, Output};
use kafkashark::capture::{FileSource, FrameSource, Polled};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::PipelineConfig;
use kafkashark::stats::{Stats, StatsConfig, StatsReport};

const CAPTURE: &str = "b4-throttle-errors-proxy.pcap";
/// The port the clients talk to: the proxy's listening port (tansu itself is on 9093,
/// behind the proxy, and not in the capture).
const PORT: u16 = 9092;
const FETCH: i16 = 1;
const PRODUCE: i16 = 0;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
/// The proxy's schedule (throttle-proxy.py).
const FETCH_THROTTLE: [i32; 4] = [100, 200, 300, 400];
const PRODUCE_THROTTLE: [i32; 3] = [50, 100, 150];
const THROTTLE_FROM_S: f64 = 3.0;
const THROTTLE_UNTIL_S: f64 = 7.0;
const ERRORS_FROM_S: f64 = 8.0;

/// The capture and the proxy's log, both shipped in captures/.
fn paths() -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
    let cap = dir.join(CAPTURE);
    let log = dir.join(format!("{CAPTURE}.proxy.tsv"));
    assert!(
        cap.is_file() && log.is_file(),
        "{} and its .proxy.tsv ship in captures/",
        cap.display()
    );
    (cap, log)
}

fn secs(t: Timestamp) -> f64 {
    t.secs as f64 + f64::from(t.nanos) / 1e9
}

struct Run {
    report: StatsReport,
    infos: Vec<MessageInfo>,
}

fn run(path: &Path) -> Run {
    let mut src = FileSource::open(path.to_str().expect("utf-8 path")).expect("open capture");
    let mut a = Analyzer::new(Stats::analyzer_config(AnalyzerConfig {
        pipeline: PipelineConfig::with_ports(Ports::List(vec![PORT])),
        ..AnalyzerConfig::default()
    }));
    let mut stats = Stats::new(StatsConfig::default());
    let mut infos = Vec::new();
    let mut out = Vec::new();
    let take = |out: &mut Vec<Output>, stats: &mut Stats, infos: &mut Vec<MessageInfo>| {
        for o in out.drain(..) {
            stats.push(&o);
            if let Output::Message(m) = o {
                infos.push(m.info);
            }
        }
    };
    loop {
        match src.poll() {
            Ok(Polled::Frame(f)) => a.push(&f, &mut out),
            Ok(Polled::Timeout) => continue,
            Ok(Polled::End) | Err(_) => break,
        }
        take(&mut out, &mut stats, &mut infos);
    }
    a.finish(&mut out);
    take(&mut out, &mut stats, &mut infos);
    Run {
        report: stats.report(),
        infos,
    }
}

/// One rewrite the proxy logged.
#[derive(Debug, Clone)]
struct Rewrite {
    t_s: f64,
    client: String,
    correlation_id: i32,
    api_key: i16,
    client_id: String,
    field: String,
    new: i32,
}

fn proxy_log(path: &Path) -> Vec<Rewrite> {
    let text = fs::read_to_string(path).expect("proxy log");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("t_s\t") && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 9, "proxy log line: {l}");
            Rewrite {
                t_s: f[0].parse().expect("t_s"),
                client: f[1].to_string(),
                correlation_id: f[2].parse().expect("correlation id"),
                api_key: f[3].parse().expect("api key"),
                client_id: f[5].to_string(),
                field: f[6].to_string(),
                new: f[8].parse().expect("new"),
            }
        })
        .collect()
}

fn responses(infos: &[MessageInfo]) -> impl Iterator<Item = &MessageInfo> {
    infos.iter().filter(|i| i.kind == Kind::Response)
}

/// Client id per connection, from its requests.
fn client_ids(infos: &[MessageInfo]) -> HashMap<u64, String> {
    let mut m = HashMap::new();
    for i in infos.iter().filter(|i| i.kind == Kind::Request) {
        if let Some(c) = &i.client_id {
            m.entry(i.stream).or_insert_with(|| c.clone());
        }
    }
    m
}

#[test]
fn throttle_figures_match_the_messages() {
    let (cap, _) = paths();
    let r = run(&cap);
    assert!(r.infos.len() > 300, "{} messages", r.infos.len());

    // Per api: (throttled, max, sum).
    let mut per_api: BTreeMap<i16, (u64, i64, i64)> = BTreeMap::new();
    let mut series: BTreeMap<i64, (u64, i64, i64)> = BTreeMap::new();
    for i in responses(&r.infos) {
        let (Some(t), Some(k)) = (i.throttle_time_ms, i.api_key.map(|k| k.0)) else {
            continue;
        };
        if t <= 0 {
            continue;
        }
        let e = per_api.entry(k).or_default();
        e.0 += 1;
        e.1 = e.1.max(i64::from(t));
        e.2 += i64::from(t);
        let s = series.entry(i.ts.secs).or_default();
        s.0 += 1;
        s.1 += i64::from(t);
        s.2 = s.2.max(i64::from(t));
    }
    // Only Fetch and Produce were throttled, both in earnest.
    assert_eq!(
        per_api.keys().copied().collect::<Vec<_>>(),
        vec![PRODUCE, FETCH]
    );
    assert!(
        per_api[&FETCH].0 >= 10,
        "throttled fetches: {:?}",
        per_api[&FETCH]
    );
    assert!(
        per_api[&PRODUCE].0 >= 20,
        "throttled produces: {:?}",
        per_api[&PRODUCE]
    );
    assert_eq!(per_api[&FETCH].1, 400);
    assert_eq!(per_api[&PRODUCE].1, 150);

    for a in &r.report.apis {
        let want = per_api.get(&a.api_key).copied().unwrap_or_default();
        assert_eq!(
            (a.throttled, a.throttle_time_ms.max, a.throttle_time_ms.sum),
            want,
            "api {} ({:?}): throttled, max, sum",
            a.api_key,
            a.api_name
        );
    }
    let total = per_api.values().fold((0, 0, 0), |acc, v| {
        (acc.0 + v.0, acc.1.max(v.1), acc.2 + v.2)
    });
    let t = &r.report.throttle;
    assert_eq!((t.throttled, t.max_ms, t.sum_ms), total, "throttle totals");

    let got: BTreeMap<i64, (u64, i64, i64)> = t
        .series
        .iter()
        .map(|s| (s.second, (s.count, s.sum_ms, s.max_ms)))
        .collect();
    assert_eq!(got, series, "throttle series");
    // A 4-second window: the throttled responses fall in 4 or 5 epoch seconds.
    assert!((4..=5).contains(&series.len()), "series: {series:?}");

    // Per client and api.
    let cid = client_ids(&r.infos);
    let mut by_client: BTreeMap<(String, i16), (u64, i64, i64)> = BTreeMap::new();
    for i in responses(&r.infos) {
        if let (Some(t), Some(k)) = (
            i.throttle_time_ms.filter(|&t| t > 0),
            i.api_key.map(|k| k.0),
        ) {
            let e = by_client.entry((cid[&i.stream].clone(), k)).or_default();
            e.0 += 1;
            e.1 += i64::from(t);
            e.2 = e.2.max(i64::from(t));
        }
    }
    let got: BTreeMap<(String, i16), (u64, i64, i64)> = t
        .by_client
        .iter()
        .map(|b| {
            (
                (b.client_id.clone().unwrap_or_default(), b.api_key),
                (b.count, b.sum_ms, b.max_ms),
            )
        })
        .collect();
    assert_eq!(got, by_client, "throttle by client");
    assert_eq!(
        by_client.keys().cloned().collect::<Vec<_>>(),
        vec![
            ("b4-kp-consumer".to_string(), FETCH),
            ("b4-rdk-consumer".to_string(), FETCH),
            ("b4-rdk-producer".to_string(), PRODUCE),
        ]
    );

    // The throttling hint fires for each throttled client (≥ 3 distinct seconds).
    let hinted = r
        .report
        .hints
        .iter()
        .filter(|h| h.kind == "throttling")
        .count();
    assert_eq!(hinted, 3, "throttling hints: {:?}", r.report.hints);
}

#[test]
fn throttle_values_and_errors_are_exactly_what_the_proxy_injected() {
    let (cap, log) = paths();
    let r = run(&cap);
    let log = proxy_log(&log);
    let cid = client_ids(&r.infos);

    let key = |client: &str, corr: i32, api: i16| (client.to_string(), corr, api);
    let mut thr_log: HashMap<(String, i32, i16), &Rewrite> = HashMap::new();
    let mut err_log: HashMap<(String, i32, i16), &Rewrite> = HashMap::new();
    for w in &log {
        let k = key(&w.client, w.correlation_id, w.api_key);
        match w.field.as_str() {
            "ThrottleTimeMs" => assert!(thr_log.insert(k, w).is_none(), "twice: {w:?}"),
            "partitions[0].ErrorCode" => {
                assert_eq!(w.new, i32::from(NOT_LEADER_OR_FOLLOWER));
                assert!(err_log.insert(k, w).is_none(), "twice: {w:?}")
            }
            f => panic!("unexpected field {f}"),
        }
    }
    assert_eq!(err_log.len(), 2, "one Produce and one Fetch error");

    let mut seen_thr = 0;
    let mut seen_err = 0;
    for i in responses(&r.infos) {
        let (Some(k), Some(corr)) = (i.api_key.map(|k| k.0), i.correlation_id) else {
            continue;
        };
        let lk = key(&i.client.to_string(), corr, k);
        let t = i.throttle_time_ms.unwrap_or(0);
        match thr_log.get(&lk) {
            Some(w) => {
                assert_eq!(t, w.new, "frame {}: throttle vs proxy log {w:?}", i.frame);
                assert_eq!(cid[&i.stream], w.client_id, "frame {}", i.frame);
                seen_thr += 1;
            }
            None => assert_eq!(t, 0, "frame {}: throttle the proxy did not inject", i.frame),
        }
        let n6 = i
            .error_codes
            .iter()
            .filter(|&&c| c == NOT_LEADER_OR_FOLLOWER)
            .count();
        if err_log.contains_key(&lk) {
            assert_eq!(n6, 1, "frame {}: injected error", i.frame);
            seen_err += 1;
        } else {
            assert_eq!(n6, 0, "frame {}: error 6 the proxy did not inject", i.frame);
        }
    }
    assert_eq!(
        seen_thr,
        thr_log.len(),
        "every logged throttle is in the capture"
    );
    assert_eq!(seen_err, 2, "both logged errors are in the capture");

    // The report counts the two injected errors, one each on Produce and Fetch, with a place.
    for api in [PRODUCE, FETCH] {
        let a = r
            .report
            .apis
            .iter()
            .find(|a| a.api_key == api)
            .expect("api");
        assert_eq!(
            a.errors.get("NOT_LEADER_OR_FOLLOWER"),
            Some(&1),
            "api {api}"
        );
        let e: Vec<_> = r
            .report
            .errors
            .iter()
            .filter(|e| e.api_key == api)
            .collect();
        assert_eq!(e.len(), 1, "api {api}: {e:?}");
        assert_eq!(e[0].code, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(e[0].topic.as_deref(), Some("b4-throttle"), "api {api}");
        assert!(e[0].partition.is_some(), "api {api}: partition");
    }

    // The proxy's rule, re-derived from the capture alone: per connection, the n-th
    // throttled response of an api takes the n-th value of its cycle.
    let mut n: HashMap<(u64, i16), usize> = HashMap::new();
    for i in responses(&r.infos) {
        let (Some(k), Some(t)) = (
            i.api_key.map(|k| k.0),
            i.throttle_time_ms.filter(|&t| t > 0),
        ) else {
            continue;
        };
        let c = n.entry((i.stream, k)).or_default();
        let want = match k {
            FETCH => FETCH_THROTTLE[*c % 4],
            PRODUCE => PRODUCE_THROTTLE[*c % 3],
            _ => panic!("api {k} throttled"),
        };
        assert_eq!(t, want, "frame {}: rule", i.frame);
        *c += 1;
    }

    // ...and only within the window. t0 is the proxy's first accept, i.e. the first SYN
    // in the capture, which is the capture's first packet to carry a connection: take the
    // first message's connection start as t0 ≈ first frame. The log's own clock says the
    // same within a few ms.
    let t0 = r
        .infos
        .iter()
        .map(|i| secs(i.first_ts))
        .fold(f64::MAX, f64::min);
    for w in &log {
        if w.field == "ThrottleTimeMs" {
            assert!(
                (THROTTLE_FROM_S..THROTTLE_UNTIL_S).contains(&w.t_s),
                "{w:?}"
            );
        } else {
            assert!(w.t_s >= ERRORS_FROM_S, "{w:?}");
        }
    }
    let slack = 0.1;
    for i in responses(&r.infos) {
        let Some(k) = i
            .api_key
            .map(|k| k.0)
            .filter(|&k| k == FETCH || k == PRODUCE)
        else {
            continue;
        };
        let rel = secs(i.ts) - t0;
        let thr = i.throttle_time_ms.unwrap_or(0) > 0;
        if rel < THROTTLE_FROM_S - slack || rel > THROTTLE_UNTIL_S + slack {
            assert!(!thr, "frame {} (api {k}) at {rel:.3} s throttled", i.frame);
        } else if rel > THROTTLE_FROM_S + slack && rel < THROTTLE_UNTIL_S - slack {
            assert!(
                thr,
                "frame {} (api {k}) at {rel:.3} s not throttled",
                i.frame
            );
        }
    }
}

/// After a throttled Fetch response of T ms on a connection: the next Fetch request and the
/// next Fetch response on that connection, as (T, request gap ms, response gap ms).
fn fetch_gaps(infos: &[MessageInfo], stream: u64) -> Vec<(i32, f64, f64)> {
    let fetches: Vec<&MessageInfo> = infos
        .iter()
        .filter(|i| i.stream == stream && i.api_key.map(|k| k.0) == Some(FETCH))
        .collect();
    let mut v = Vec::new();
    for (n, m) in fetches.iter().enumerate() {
        let Some(t) = m.throttle_time_ms.filter(|&t| t > 0) else {
            continue;
        };
        if m.kind != Kind::Response {
            continue;
        }
        let req = fetches[n + 1..].iter().find(|i| i.kind == Kind::Request);
        let rsp = fetches[n + 1..].iter().find(|i| i.kind == Kind::Response);
        if let (Some(q), Some(s)) = (req, rsp) {
            v.push((
                t,
                (secs(q.first_ts) - secs(m.ts)) * 1e3,
                (secs(s.first_ts) - secs(m.ts)) * 1e3,
            ));
        }
    }
    v
}

#[test]
fn clients_really_wait_or_are_held_by_the_mute() {
    let (cap, _) = paths();
    let r = run(&cap);
    let cid = client_ids(&r.infos);
    let stream_of = |c: &str| -> u64 {
        let mut s: Vec<u64> = r
            .infos
            .iter()
            .filter(|i| {
                i.api_key.map(|k| k.0) == Some(FETCH) && cid.get(&i.stream).is_some_and(|x| x == c)
            })
            .map(|i| i.stream)
            .collect();
        s.dedup();
        assert_eq!(s.len(), 1, "{c}: fetch connections {s:?}");
        s[0]
    };
    // Timer slack: a client's timer may fire a little early relative to the capture clock.
    let slack_ms = 5.0;

    // kafka-python obeys KIP-219 itself: its next Fetch request waits the throttle time.
    let kp = fetch_gaps(&r.infos, stream_of("b4-kp-consumer"));
    assert!(kp.len() >= 4, "kafka-python throttled fetches: {kp:?}");
    for &(t, req_gap, _) in &kp {
        assert!(
            req_gap >= f64::from(t) - slack_ms,
            "kafka-python sent its next Fetch {req_gap:.1} ms after a {t} ms throttle"
        );
    }
    eprintln!("kafka-python (T, next request ms, next response ms): {kp:?}");

    // librdkafka 2.16 only reports the throttle (throttle_cb, statistics) and sends its next
    // Fetch at once; the broker-side mute (here: the proxy's) delays the answer instead.
    let rdk = fetch_gaps(&r.infos, stream_of("b4-rdk-consumer"));
    assert!(rdk.len() >= 4, "librdkafka throttled fetches: {rdk:?}");
    for &(t, req_gap, rsp_gap) in &rdk {
        assert!(
            req_gap < f64::from(t),
            "librdkafka waited {req_gap:.1} ms after {t} ms"
        );
        assert!(
            rsp_gap >= f64::from(t) - slack_ms,
            "librdkafka's next Fetch answered {rsp_gap:.1} ms after a {t} ms throttle"
        );
    }
    eprintln!("librdkafka (T, next request ms, next response ms): {rdk:?}");
}
