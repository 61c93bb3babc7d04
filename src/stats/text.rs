//! The readable rendering of a [`StatsReport`]: one aligned table per section.
//!
//! Invariants: plain text, no terminal control codes — captured strings
//! (client ids, topics, group and member ids) go through `escape_text`; empty
//! sections are left out; numbers in a column are right-aligned.

use std::fmt::Write as _;

use super::report::*;
use crate::kafka::tree::escape_text;

struct Table {
    head: Vec<&'static str>,
    rows: Vec<Vec<String>>,
    /// Left-aligned columns (text); the others are right-aligned (numbers).
    left: Vec<bool>,
}

impl Table {
    fn new(head: &[(&'static str, bool)]) -> Table {
        Table {
            head: head.iter().map(|h| h.0).collect(),
            left: head.iter().map(|h| h.1).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, r: Vec<String>) {
        self.rows.push(r);
    }

    fn render(&self, out: &mut String) {
        let n = self.head.len();
        let mut w: Vec<usize> = self.head.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                if let Some(x) = w.get_mut(i) {
                    *x = (*x).max(c.chars().count());
                }
            }
        }
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let width = w.get(i).copied().unwrap_or(0);
                let pad = width.saturating_sub(c.chars().count());
                let left = self.left.get(i).copied().unwrap_or(true);
                if i > 0 {
                    s.push_str("  ");
                }
                if left {
                    s.push_str(c);
                    s.extend(std::iter::repeat_n(' ', pad));
                } else {
                    s.extend(std::iter::repeat_n(' ', pad));
                    s.push_str(c);
                }
            }
            out.push_str("  ");
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(self.head.clone(), out);
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect(), out);
        }
    }
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn lat_cells(l: &Option<LatencyMs>) -> Vec<String> {
    match l {
        Some(l) => vec![
            l.count.to_string(),
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.p999),
            ms(l.max),
            ms(l.mean),
        ],
        None => vec![
            "0".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ],
    }
}

const LAT_HEAD: [(&str, bool); 7] = [
    ("n", false),
    ("p50", false),
    ("p90", false),
    ("p99", false),
    ("p99.9", false),
    ("max", false),
    ("mean", false),
];

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string)
}

fn text(v: &Option<String>) -> String {
    v.as_deref().map_or_else(|| "-".to_string(), escape_text)
}

fn api(name: Option<&str>, key: i16) -> String {
    name.map_or_else(|| format!("api {key}"), str::to_string)
}

fn client(id: &Option<String>, software: &Option<String>) -> String {
    let mut s = match id {
        Some(c) => format!("{:?}", escape_text(c)),
        None => "(none)".to_string(),
    };
    if let Some(sw) = software {
        let _ = write!(s, " ({})", escape_text(sw));
    }
    s
}

fn frames(f: &[u64]) -> String {
    f.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

fn place(t: &Option<String>, p: &Option<i32>) -> (String, String) {
    (text(t), opt(p))
}

impl StatsReport {
    /// The report as readable tables. `title` heads it (the file or interface).
    pub fn to_text(&self, title: &str) -> String {
        let mut o = String::new();
        let s = &self.summary;
        let span = match (s.first_ts, s.last_ts) {
            (Some(a), Some(b)) => format!(", {:.3} s", b - a),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "kafkashark stats — {}\n{} messages ({} requests, {} responses){span}; {} unanswered, {} in flight, {} without api",
            escape_text(title),
            s.messages,
            s.requests,
            s.responses,
            s.unanswered,
            s.in_flight,
            s.without_api
        );
        o.push_str("latency: ms from the frame that completed the request to the frame carrying the response's first byte\n");

        if !self.apis.is_empty() {
            o.push_str("\nAPIS\n");
            let mut head = vec![
                ("api", true),
                ("ver", true),
                ("req", false),
                ("resp", false),
                ("unpaired", false),
            ];
            head.extend(LAT_HEAD);
            head.extend([
                ("throttled", false),
                ("thr max", false),
                ("thr sum", false),
                ("errors", true),
            ]);
            let mut t = Table::new(&head);
            for a in &self.apis {
                let mut r = vec![
                    api(a.api_name, a.api_key),
                    "all".into(),
                    a.requests.to_string(),
                    a.responses.to_string(),
                    a.unpaired.to_string(),
                ];
                r.extend(lat_cells(&a.latency_ms));
                r.extend([
                    a.throttled.to_string(),
                    a.throttle_time_ms.max.to_string(),
                    a.throttle_time_ms.sum.to_string(),
                    a.errors
                        .iter()
                        .map(|(k, v)| format!("{k}×{v}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                ]);
                t.row(r);
                if a.versions.len() > 1 || a.versions.iter().any(|v| v.removed_in_kafka_4) {
                    for v in &a.versions {
                        let mark = if v.removed_in_kafka_4 { "*" } else { "" };
                        let mut r = vec![
                            String::new(),
                            format!("v{}{mark}", v.version),
                            v.requests.to_string(),
                            v.responses.to_string(),
                            String::new(),
                        ];
                        r.extend(lat_cells(&v.latency_ms));
                        r.extend([String::new(), String::new(), String::new(), String::new()]);
                        t.row(r);
                    }
                } else if let Some(v) = a.versions.first() {
                    if let Some(c) = t.rows.last_mut().and_then(|r| r.get_mut(1)) {
                        *c = format!("v{}", v.version);
                    }
                }
            }
            t.render(&mut o);
        }

        if !self.slow.is_empty() {
            let _ = writeln!(o, "\nSLOWEST EXCHANGES (top {})", self.slow.len());
            let mut t = Table::new(&[
                ("latency ms", false),
                ("req frame", false),
                ("resp frame", false),
                ("api", true),
                ("client", true),
                ("conn", true),
                ("throttle", false),
            ]);
            for x in &self.slow {
                t.row(vec![
                    ms(x.latency_ms),
                    opt(&x.request_frame),
                    x.response_first_frame.to_string(),
                    format!("{} v{}", api(x.api_name, x.api_key), opt(&x.api_version)),
                    client(&x.client_id, &x.software),
                    format!("s{} {} → {}", x.stream, x.client, x.broker),
                    opt(&x.throttle_time_ms),
                ]);
            }
            t.render(&mut o);
        }

        let th = &self.throttle;
        if th.throttled > 0 {
            let _ = writeln!(
                o,
                "\nTHROTTLE  {} throttled responses, {} ms in all, max {} ms",
                th.throttled, th.sum_ms, th.max_ms
            );
            let mut t = Table::new(&[
                ("client", true),
                ("api", true),
                ("count", false),
                ("sum ms", false),
                ("max ms", false),
            ]);
            for c in &th.by_client {
                t.row(vec![
                    client(&c.client_id, &c.software),
                    api(c.api_name, c.api_key),
                    c.count.to_string(),
                    c.sum_ms.to_string(),
                    c.max_ms.to_string(),
                ]);
            }
            t.render(&mut o);
            if let Some(l) = &th.throttled_latency_ms {
                let _ = writeln!(
                    o,
                    "  latency of throttled exchanges (throttle not included): p50 {} p99 {} max {} ms",
                    ms(l.p50),
                    ms(l.p99),
                    ms(l.max)
                );
            }
            o.push_str("  per second:\n");
            let mut t = Table::new(&[
                ("second", false),
                ("count", false),
                ("sum ms", false),
                ("max ms", false),
            ]);
            for x in &th.series {
                t.row(vec![
                    x.second.to_string(),
                    x.count.to_string(),
                    x.sum_ms.to_string(),
                    x.max_ms.to_string(),
                ]);
            }
            t.render(&mut o);
            o.push_str("  most throttled (throttle and latency apart):\n");
            let mut t = Table::new(&[
                ("throttle ms", false),
                ("latency ms", false),
                ("req frame", false),
                ("resp frame", false),
                ("api", true),
                ("client", true),
            ]);
            for x in &th.exchanges {
                t.row(vec![
                    x.throttle_ms.to_string(),
                    x.latency_ms.map_or_else(|| "-".into(), ms),
                    opt(&x.request_frame),
                    x.response_frame.to_string(),
                    api(x.api_name, x.api_key),
                    client(&x.client_id, &None),
                ]);
            }
            t.render(&mut o);
        }

        if !self.errors.is_empty() {
            o.push_str("\nERRORS\n");
            let mut t = Table::new(&[
                ("error", true),
                ("api", true),
                ("topic", true),
                ("partition", false),
                ("count", false),
                ("first", false),
                ("last", false),
            ]);
            for e in &self.errors {
                let (tp, p) = place(&e.topic, &e.partition);
                t.row(vec![
                    e.error.clone(),
                    api(e.api_name, e.api_key),
                    tp,
                    p,
                    e.count.to_string(),
                    e.first_frame.to_string(),
                    e.last_frame.to_string(),
                ]);
            }
            t.render(&mut o);
        }
        if !self.record_errors.is_empty() {
            o.push_str("\nRECORD ERRORS\n");
            let mut t = Table::new(&[
                ("topic", true),
                ("partition", false),
                ("batch index", false),
                ("frame", false),
                ("message", true),
            ]);
            for e in &self.record_errors {
                let (tp, p) = place(&e.topic, &e.partition);
                t.row(vec![
                    tp,
                    p,
                    e.batch_index.to_string(),
                    e.frame.to_string(),
                    text(&e.message),
                ]);
            }
            t.render(&mut o);
        }

        if !self.topics.is_empty() {
            o.push_str("\nTOPICS (record sets in Produce requests / Fetch responses)\n");
            let mut t = Table::new(&[
                ("topic", true),
                ("part", false),
                ("prod bytes", false),
                ("batches", false),
                ("records", false),
                ("rec/batch", false),
                ("codecs", true),
                ("ratio", false),
                ("acks", true),
                ("fetch bytes", false),
                ("batches", false),
                ("records", false),
                ("partial", false),
                ("codecs", true),
            ]);
            let counts = |m: &std::collections::BTreeMap<String, u64>| {
                m.iter()
                    .map(|(k, v)| format!("{k}×{v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            for x in &self.topics {
                let (tp, p) = place(&x.topic, &x.partition);
                t.row(vec![
                    tp,
                    p,
                    x.produce.bytes.to_string(),
                    x.produce.batches.to_string(),
                    x.produce.records.to_string(),
                    x.produce
                        .records_per_batch
                        .map_or_else(|| "-".into(), |r| format!("{r:.2}")),
                    counts(&x.produce.codecs),
                    x.produce
                        .compression_ratio
                        .map_or_else(|| "-".into(), |r| format!("{r:.2}")),
                    counts(&x.acks),
                    x.fetch.bytes.to_string(),
                    x.fetch.batches.to_string(),
                    x.fetch.records.to_string(),
                    x.fetch.partial_batches.to_string(),
                    counts(&x.fetch.codecs),
                ]);
            }
            t.render(&mut o);
        }

        if !self.clients.is_empty() {
            o.push_str("\nCLIENTS (* = a version Kafka 4.0 removed)\n");
            let mut head = vec![
                ("client", true),
                ("addresses", true),
                ("req", false),
                ("unans", false),
                ("errors", false),
                ("throttled", false),
            ];
            head.extend([
                ("p50", false),
                ("p99", false),
                ("max", false),
                ("apis", true),
            ]);
            let mut t = Table::new(&head);
            for c in &self.clients {
                let sw = c.software_name.as_ref().map(|n| match &c.software_version {
                    Some(v) if !v.is_empty() => format!("{n} {v}"),
                    _ => n.clone(),
                });
                let addrs = if c.addresses.len() > 3 {
                    format!(
                        "{} (+{})",
                        c.addresses.get(..2).unwrap_or_default().join(" "),
                        c.addresses.len() - 2
                    )
                } else {
                    c.addresses.join(" ")
                };
                let mut apis: Vec<String> = Vec::new();
                for a in &c.apis {
                    let mark = if a.removed_in_kafka_4 { "*" } else { "" };
                    let name = api(a.api_name, a.api_key);
                    match apis.last_mut() {
                        Some(last) if last.starts_with(&format!("{name} v")) => {
                            let _ = write!(last, ",{}{mark}", a.version);
                        }
                        _ => apis.push(format!("{name} v{}{mark}", a.version)),
                    }
                }
                let (p50, p99, max) = match &c.latency_ms {
                    Some(l) => (ms(l.p50), ms(l.p99), ms(l.max)),
                    None => ("-".into(), "-".into(), "-".into()),
                };
                t.row(vec![
                    client(&c.client_id, &sw),
                    addrs,
                    c.requests.to_string(),
                    c.unanswered.to_string(),
                    c.errors.to_string(),
                    c.throttled.to_string(),
                    p50,
                    p99,
                    max,
                    apis.join(" "),
                ]);
            }
            t.render(&mut o);
        }

        if !self.brokers.is_empty() {
            o.push_str("\nBROKERS (latency ms)\n");
            let mut head = vec![("broker", true), ("req", false), ("resp", false)];
            head.extend(LAT_HEAD);
            let mut t = Table::new(&head);
            for b in &self.brokers {
                let mut r = vec![
                    b.broker.clone(),
                    b.requests.to_string(),
                    b.responses.to_string(),
                ];
                r.extend(lat_cells(&b.latency_ms));
                t.row(r);
            }
            t.render(&mut o);
        }
        if !self.connections.is_empty() {
            o.push_str("\nCONNECTIONS (latency ms)\n");
            let mut head = vec![
                ("conn", true),
                ("client", true),
                ("broker", true),
                ("client id", true),
                ("req", false),
            ];
            head.extend(LAT_HEAD);
            let mut t = Table::new(&head);
            for c in &self.connections {
                let mut r = vec![
                    format!("s{}", c.stream),
                    c.client.clone(),
                    c.broker.clone(),
                    text(&c.client_id),
                    c.requests.to_string(),
                ];
                r.extend(lat_cells(&c.latency_ms));
                t.row(r);
            }
            t.render(&mut o);
        }

        if !self.acks.is_empty() {
            o.push_str("\nPRODUCE ACKS\n");
            let mut t = Table::new(&[("acks", false), ("requests", false), ("frames", true)]);
            for a in &self.acks {
                t.row(vec![
                    a.acks.to_string(),
                    a.requests.to_string(),
                    frames(&a.frames),
                ]);
            }
            t.render(&mut o);
        }

        for g in &self.groups {
            let _ = writeln!(
                o,
                "\nGROUP {:?}  type {}  protocols {}  joins {} syncs {} heartbeats {} leaves {}  members {}{}",
                escape_text(&g.group_id),
                text(&g.protocol_type),
                if g.protocols.is_empty() {
                    "-".to_string()
                } else {
                    escape_text(&g.protocols.join(","))
                },
                g.joins,
                g.syncs,
                g.heartbeats,
                g.leaves,
                g.members.len(),
                if g.errors.is_empty() {
                    String::new()
                } else {
                    format!(
                        "  errors {}",
                        g.errors
                            .iter()
                            .map(|(k, v)| format!("{k}×{v}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                }
            );
            if !g.generations.is_empty() {
                let mut t = Table::new(&[
                    ("generation", false),
                    ("protocol", true),
                    ("members", false),
                    ("join req", false),
                    ("join resp", false),
                    ("sync resp", true),
                    ("rebalance ms", false),
                    ("leader", true),
                ]);
                for e in &g.generations {
                    t.row(vec![
                        e.generation_id.to_string(),
                        text(&e.protocol_name),
                        e.members.len().max(e.listed_members as usize).to_string(),
                        opt(&e.join_request_frame),
                        e.join_response_frame.to_string(),
                        frames(&e.sync_response_frames),
                        e.rebalance_ms.map_or_else(|| "-".into(), ms),
                        text(&e.leader),
                    ]);
                }
                t.render(&mut o);
            }
            if !g.heartbeat_members.is_empty() {
                let mut t = Table::new(&[
                    ("member (KIP-848)", true),
                    ("heartbeats", false),
                    ("epochs", true),
                    ("assignment", true),
                ]);
                for h in &g.heartbeat_members {
                    let assignment = h.assignment.as_ref().map_or_else(
                        || "-".to_string(),
                        |a| {
                            a.iter()
                                .map(|tp| {
                                    format!(
                                        "{}[{}]",
                                        escape_text(&tp.topic),
                                        tp.partitions
                                            .iter()
                                            .map(i32::to_string)
                                            .collect::<Vec<_>>()
                                            .join(",")
                                    )
                                })
                                .collect::<Vec<_>>()
                                .join(" ")
                        },
                    );
                    t.row(vec![
                        escape_text(&h.member_id),
                        h.heartbeats.to_string(),
                        h.epochs
                            .iter()
                            .map(i32::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                        assignment,
                    ]);
                }
                t.render(&mut o);
            }
        }

        if !self.hints.is_empty() {
            o.push_str("\nHINTS\n");
            for h in &self.hints {
                let _ = writeln!(
                    o,
                    "  [{}] {}: {}  (frames {})",
                    h.severity,
                    h.kind,
                    escape_text(&h.message),
                    frames(&h.frames)
                );
            }
        }
        let ov = &self.overflow;
        let dropped = ov.apis
            + ov.clients
            + ov.histograms
            + ov.topics
            + ov.errors
            + ov.groups
            + ov.series
            + ov.pending
            + ov.streams
            + ov.lists;
        if dropped > 0 {
            let _ = writeln!(
                o,
                "\nOVERFLOW: {dropped} facts not kept because a bounded table was full (see the JSON `overflow`)"
            );
        }
        o
    }
}
