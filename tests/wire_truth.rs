//! Latency taken apart, checked against an independent reading of real
//! captures: `captures/wire_facts.py` (its own pcap reassembly with a
//! capture time per byte and hand-written Fetch readers, nothing from
//! kafkashark) wrote `FILE.wire.tsv` for a1 (kcat's consumer group, whose
//! FindCoordinator, GetTelemetrySubscriptions and ListOffsets waited behind
//! long-poll Fetches) and b6 (a group that keeps up and long-polls, one that
//! lags).
//!
//! From those rows this file computes, for every exchange: the latency
//! (response's first byte − request's last byte), the head-of-line wait
//! (the part before the connection's previous response had finished), the
//! service time, and whether a Fetch waited out its MaxWaitMs with no
//! records. The analyzer must give the same for every paired response, read
//! by its summary scan and by full trees alike.
//!
//! Each connection's round trip from its handshake is checked against
//! the reading's `conn` rows (ack − syn); a public capture that starts
//! mid-connection exercises the data/ACK estimate.
//!
//! Skips cleanly when a capture or its reading is missing.

mod wire;

use wire::{micros, outputs, paths};

use std::collections::HashMap;
use std::path::Path;

use kafkashark::analyzer::{AnalyzerConfig, MessageInfo, Notice, Output, LONG_POLL_SHARE};
use kafkashark::flow::{Rtt, RttFrom};
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::Event;
use kafkashark::stats::{Stats, StatsConfig};

const CAPTURES: [&str; 2] = ["a1-kcat-produce-consume-group.pcap", "b6-consumer-lag.pcap"];

/// One exchange as the independent reading gives it.
/// Times are whole microseconds (the captures' resolution), so every
/// figure compares exactly.
#[derive(Debug, Clone)]
struct Exchange {
    api: i16,
    latency_us: i64,
    hol_us: i64,
    long_poll: bool,
}

/// (client address, correlation id) → the exchange, computed from the rows.
fn expected(wire: &Path) -> HashMap<(String, i32), Exchange> {
    let text = wire::read(wire);
    let rows = wire::rows(&text);
    let client: HashMap<&str, &str> = rows
        .iter()
        .filter(|r| r[0] == "conn")
        .map(|r| (r[1], r[2]))
        .collect();
    let key = |r: &Vec<&str>| (r[1].to_string(), r[2].parse::<i32>().unwrap());
    // Fetch exchanges: MaxWaitMs asked, batches returned.
    let mut max_wait: HashMap<(String, i32), i32> = HashMap::new();
    let mut batches: HashMap<(String, i32), u64> = HashMap::new();
    for r in &rows {
        match r[0] {
            "fetchreq" => {
                max_wait.insert(key(r), r[3].parse().unwrap());
            }
            "fetchrsp" => *batches.entry(key(r)).or_default() += r[9].parse::<u64>().unwrap(),
            _ => {}
        }
    }
    // Exchanges per connection, in the order their responses came.
    let mut by_conn: HashMap<&str, Vec<&Vec<&str>>> = HashMap::new();
    for r in rows.iter().filter(|r| r[0] == "exch") {
        by_conn.entry(r[1]).or_default().push(r);
    }
    let mut out = HashMap::new();
    for (conn, mut ex) in by_conn {
        ex.sort_by_key(|r| micros(r[7]));
        let mut previous_end: Option<i64> = None;
        for r in ex {
            let (api, corr) = (r[2].parse::<i16>().unwrap(), r[4].parse::<i32>().unwrap());
            let (req_end, first, last) = (micros(r[6]), micros(r[7]), micros(r[8]));
            let hol_us = previous_end
                .filter(|&e| e > req_end)
                .map_or(0, |e| e.min(first) - req_end);
            previous_end = Some(last);
            let latency_us = first - req_end;
            let k = (conn.to_string(), corr);
            let long_poll = api == 1
                && batches.get(&k).copied().unwrap_or(0) == 0
                && max_wait.get(&k).is_some_and(|&w| {
                    w > 0 && (latency_us - hol_us) as f64 >= LONG_POLL_SHARE * f64::from(w) * 1e3
                });
            out.insert(
                (client[conn].to_string(), corr),
                Exchange {
                    api,
                    latency_us,
                    hol_us,
                    long_poll,
                },
            );
        }
    }
    out
}

/// Per connection: its client address, the round trips reported for it
/// in order, and its messages' round trips.
#[derive(Debug, Default)]
struct Trips {
    client: Option<String>,
    reported: Vec<Rtt>,
    stamped: Vec<Option<Rtt>>,
}

fn trips(out: &[Output]) -> HashMap<u64, Trips> {
    let mut by: HashMap<u64, Trips> = HashMap::new();
    for o in out {
        match o {
            Output::Message(m) => {
                let t = by.entry(m.info.stream).or_default();
                t.client = Some(m.info.client.to_string());
                t.stamped.push(m.info.rtt);
            }
            Output::Notice(n) => {
                if let Notice::Stream(Event::Rtt { stream, rtt, .. }) = &**n {
                    by.entry(*stream).or_default().reported.push(*rtt);
                }
            }
        }
    }
    by
}

/// Client address → ack − syn in microseconds, from the `conn` rows with both.
fn handshakes(wire: &Path) -> HashMap<String, i64> {
    let text = wire::read(wire);
    let rows = text.lines().map(|l| l.split('\t').collect::<Vec<_>>());
    rows.filter(|r| r[0] == "conn" && r[3] != "-" && r[5] != "-")
        .map(|r| (r[2].to_string(), micros(r[5]) - micros(r[3])))
        .collect()
}

/// The lower middle of `v` (a measured value), in milliseconds.
fn lower_median_ms(mut v: Vec<i64>) -> Option<f64> {
    v.sort_unstable();
    let mid = v.len().checked_sub(1)? / 2;
    Some(v[mid] as f64 / 1e3)
}

/// `stats`: every connection's `rtt_ms` is its handshake's, to the
/// microsecond; a broker's and a client's the median of their connections'.
/// `f` on each capture with its reading's handshakes (skipped when missing).
fn with_handshakes(mut f: impl FnMut(&str, &Path, HashMap<String, i64>)) {
    for name in CAPTURES {
        match paths(name) {
            Some((cap, wire)) => f(name, &cap, handshakes(&wire)),
            None => eprintln!("skipping {name}: capture or its wire.tsv missing"),
        }
    }
}

#[test]
fn stats_report_round_trips_per_connection_broker_and_client() {
    with_handshakes(|name, cap, want| {
        let mut stats = Stats::new(StatsConfig::default());
        for o in outputs(cap, Stats::analyzer_config(AnalyzerConfig::default())) {
            stats.push(&o);
        }
        let report = stats.report();
        assert_eq!(report.connections.len(), want.len(), "{name}");
        for c in &report.connections {
            let w = want[&c.client];
            assert_eq!(c.rtt_ms, Some(w as f64 / 1e3), "{name} {}", c.client);
            assert_eq!(c.rtt_from, Some("handshake"), "{name} {}", c.client);
        }
        for b in &report.brokers {
            let of = report.connections.iter().filter(|c| c.broker == b.broker);
            let v = of.map(|c| want[&c.client]).collect();
            assert_eq!(b.rtt_ms, lower_median_ms(v), "{name} {}", b.broker);
        }
        let mut with_rtt = 0;
        for c in &report.clients {
            let v: Vec<i64> = c
                .addresses
                .iter()
                .filter_map(|a| want.get(a))
                .copied()
                .collect();
            with_rtt += usize::from(!v.is_empty());
            assert_eq!(c.rtt_ms, lower_median_ms(v), "{name} {:?}", c.client_id);
        }
        assert!(with_rtt > 0 && !report.brokers.is_empty(), "{name}");
    });
}

#[test]
fn handshake_round_trips_match_the_independent_reading() {
    with_handshakes(|name, cap, want| {
        assert!(!want.is_empty(), "{name}: no handshake in the reading");
        let got = trips(&outputs(cap, AnalyzerConfig::default()));
        let mut checked = 0;
        for t in got.values() {
            let Some(client) = &t.client else { continue };
            let w = want
                .get(client)
                .unwrap_or_else(|| panic!("{name}: {client} has no handshake in the reading"));
            // One report, from the handshake, to the microsecond.
            assert_eq!(t.reported.len(), 1, "{name} {client}: {:?}", t.reported);
            let r = t.reported[0];
            assert_eq!(r.from, RttFrom::Handshake, "{name} {client}");
            assert_eq!(r.ns % 1000, 0, "{name} {client}: whole microseconds");
            assert_eq!(i64::try_from(r.ns / 1000).unwrap(), *w, "{name} {client}");
            // Every message of the connection (all after its handshake) carries it.
            assert!(t.stamped.iter().all(|s| *s == Some(r)), "{name} {client}");
            checked += 1;
        }
        assert_eq!(
            checked,
            want.len(),
            "{name}: every connection with a handshake"
        );
        eprintln!("{name}: {checked} handshake round trips match");
    });
}

/// A public capture that starts mid-connection (no SYN anywhere): its
/// round trip comes from data/ACK pairs, checked against its segments as
/// `tshark -T fields -e tcp.analysis.ack_rtt` lists them. Its second
/// connection: the client's first request acknowledged 1.001 ms later
/// (by the response), that response acknowledged 0.042 ms later (a pure
/// ACK): 1.043 ms; the second request acknowledged in 0.277 ms: 0.319 ms;
/// its response in 0.030 ms: 0.307 ms. The first connection never has an
/// ACK of the broker's data.
#[test]
fn a_capture_without_handshakes_estimates_from_data_and_acks() {
    let cap = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/captures/public/deepflow__mixed-with-unsupported.pcap");
    if !cap.is_file() {
        eprintln!("skipping: {} missing", cap.display());
        return;
    }
    let got = trips(&outputs(&cap, AnalyzerConfig::default()));
    let est: Vec<(u64, Vec<Rtt>)> = {
        let mut v: Vec<_> = got
            .iter()
            .filter(|(_, t)| !t.reported.is_empty())
            .map(|(&s, t)| (s, t.reported.clone()))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    };
    let data_ack = |us: u64| Rtt {
        ns: us * 1000,
        from: RttFrom::DataAck,
    };
    assert_eq!(
        est,
        [(1, vec![data_ack(1043), data_ack(319), data_ack(307)])],
        "{got:#?}"
    );
    // The second exchange's messages carry the estimate known when they came.
    let stamped = &got[&1].stamped;
    assert!(stamped.contains(&Some(data_ack(319))), "{stamped:?}");
}

fn responses(cap: &Path, cfg: AnalyzerConfig) -> Vec<MessageInfo> {
    let each = outputs(cap, cfg).into_iter().filter_map(|o| match o {
        Output::Message(m) if m.info.kind == Kind::Response => Some(m.info),
        _ => None,
    });
    each.collect()
}

#[test]
fn head_of_line_wait_service_time_and_long_polls_match_the_independent_reading() {
    let trees = AnalyzerConfig {
        keep_trees: true,
        ..AnalyzerConfig::default()
    };
    let scans = Stats::analyzer_config(AnalyzerConfig::default());
    for name in CAPTURES {
        let Some((cap, wire)) = paths(name) else {
            eprintln!("skipping {name}: capture or its wire.tsv missing");
            continue;
        };
        let want = expected(&wire);
        for (how, cfg) in [("trees", trees.clone()), ("summary scans", scans.clone())] {
            let got = responses(&cap, cfg);
            let (mut checked, mut waited, mut polls) = (0, 0, 0);
            for i in got.iter().filter(|i| i.paired) {
                let k = (i.client.to_string(), i.correlation_id.unwrap());
                let w = want
                    .get(&k)
                    .unwrap_or_else(|| panic!("{name}: {k:?} not in the reading"));
                let ctx = format!("{name} ({how}) frame {} {:?}", i.frame, w);
                assert_eq!(i.api_key.map(|a| a.0), Some(w.api), "{ctx}");
                let us = |n: Option<u64>| i64::try_from(n.unwrap()).unwrap() / 1000;
                assert_eq!(us(i.latency_ns), w.latency_us, "{ctx}");
                assert_eq!(us(i.hol_wait_ns), w.hol_us, "{ctx}");
                assert_eq!(us(i.service_ns()), w.latency_us - w.hol_us, "{ctx}");
                assert_eq!(i.long_poll(), w.long_poll, "{ctx}");
                checked += 1;
                waited += usize::from(w.hol_us > 1000);
                polls += usize::from(w.long_poll);
            }
            assert_eq!(checked, want.len(), "{name} ({how}): every exchange paired");
            eprintln!("{name} ({how}): {checked} exchanges, {waited} waited > 1 ms behind another, {polls} long-polls");
            // What the captures are known to hold (captures/README.md).
            match name {
                "b6-consumer-lag.pcap" => assert_eq!(polls, 23, "{name}"),
                _ => assert!(waited >= 3 && polls >= 3, "{name}: {waited} {polls}"),
            }
        }
    }
}

#[test]
fn a1s_slow_requests_were_queued_behind_long_polls() {
    let Some((cap, _)) = paths(CAPTURES[0]) else {
        eprintln!("skipping: a1 missing");
        return;
    };
    let got = responses(&cap, AnalyzerConfig::default());
    // FindCoordinator, GetTelemetrySubscriptions and ListOffsets took 400-503 ms,
    // all but a fraction of a millisecond behind a long-poll Fetch.
    let queued: Vec<&MessageInfo> = got
        .iter()
        .filter(|i| [2, 10, 71].contains(&i.api_key.map_or(-1, |a| a.0)))
        .filter(|i| i.latency_ns.unwrap_or(0) > 400_000_000)
        .collect();
    assert_eq!(queued.len(), 3, "{queued:#?}");
    for i in queued {
        assert!(i.service_ns().unwrap() < 1_000_000, "{i:#?}");
    }
}
