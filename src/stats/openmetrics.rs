//! The figures of a [`Stats`] as an OpenMetrics text exposition, for
//! Prometheus to scrape (`kafkashark stats --metrics`, `kafkashark live
//! --metrics`; docs/stats.md, "Metrics").
//!
//! Place in the data path: `Stats` → [`Stats::openmetrics`] → the page a
//! front end serves. Pure: it returns the text; sockets and threads are the
//! front end's.
//!
//! Invariants:
//! - OpenMetrics 1.0 text: every family is written once, with `# TYPE`,
//!   `# UNIT` (its name ends with the unit) and `# HELP` before its samples,
//!   which come together; a counter's samples end in `_total`; a histogram's
//!   `_bucket` counts are cumulative, end with `le="+Inf"` equal to its
//!   `_count`, and come with its `_sum`; the page ends with `# EOF`. A family
//!   without data is written without samples.
//! - label values are escaped (`\\`, `\"`, `\n`); a family's label sets are
//!   unique: keys that render alike (a client without an id and one with an
//!   empty id) are added up.
//! - the figures are the report's (`StatsReport`): the same counters and
//!   the same histograms, read at fixed bounds; so is their cardinality,
//!   bounded by `StatsConfig` and the lag and delivery caps.

use std::collections::BTreeMap;
use std::fmt::{Display, Write};

use super::hist::{LatencyHist, Timing};
use super::{api_timing, by_label, schema, with_held, Stats};

/// Bucket bounds of latencies, service times and delivery times, in
/// microseconds: 0.5 ms to 60 s.
pub const LATENCY_BOUNDS_US: [u64; 16] = [
    500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// Bucket bounds of record ages, in microseconds: 0.5 ms to 1 h.
pub const AGE_BOUNDS_US: [u64; 19] = [
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    30_000_000,
    60_000_000,
    300_000_000,
    900_000_000,
    3_600_000_000,
];

/// Rows of a family by their label values (in the order of its label
/// names); rows that render alike are added up with `add`.
fn rows<T>(
    items: impl IntoIterator<Item = (Vec<String>, T)>,
    add: impl Fn(&mut T, T),
) -> BTreeMap<Vec<String>, T> {
    let mut out: BTreeMap<Vec<String>, T> = BTreeMap::new();
    for (k, v) in items {
        match out.get_mut(&k) {
            Some(have) => add(have, v),
            None => {
                out.insert(k, v);
            }
        }
    }
    out
}

/// Timings added up.
fn timings(
    items: impl IntoIterator<Item = (Vec<String>, Timing)>,
) -> BTreeMap<Vec<String>, Timing> {
    rows(items, |a, b| a.merge(&b))
}

/// An API's label: its name, or its key for one this build does not know.
fn api_label(key: i16) -> String {
    schema::api_name(key).map_or_else(|| key.to_string(), str::to_string)
}

/// An optional label value: empty when absent.
fn or_empty(v: Option<&str>) -> String {
    v.unwrap_or_default().to_string()
}

/// A bound in microseconds as an `le` value in seconds (`0.0005`, `1.0`).
fn le(us: u64) -> String {
    format!("{:?}", us as f64 / 1e6)
}

/// The exposition being written.
struct Page {
    out: String,
}

impl Page {
    /// Starts a family: `# TYPE`, `# UNIT` (when `unit` is not empty: the
    /// name ends with it) and `# HELP`.
    fn family(&mut self, name: &str, kind: &str, unit: &str, help: &str) {
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        if !unit.is_empty() {
            let _ = writeln!(self.out, "# UNIT {name} {unit}");
        }
        let _ = writeln!(self.out, "# HELP {name} {help}");
    }

    /// One sample: `name{labels} value`, with `extra` (`le`) last.
    fn sample(
        &mut self,
        name: &str,
        names: &[&str],
        values: &[String],
        extra: Option<(&str, &str)>,
        value: impl Display,
    ) {
        self.out.push_str(name);
        let pairs = names.iter().copied().zip(values.iter().map(String::as_str));
        let mut pairs = pairs.chain(extra).peekable();
        if pairs.peek().is_some() {
            self.out.push('{');
            for (at, (n, v)) in pairs.enumerate() {
                if at > 0 {
                    self.out.push(',');
                }
                self.out.push_str(n);
                self.out.push_str("=\"");
                escape_into(&mut self.out, v);
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// A family of `kind` with one sample per row (named `name_total` for a counter).
    fn scalars<V: Display>(
        &mut self,
        kind: &str,
        (name, unit, help): (&str, &str, &str),
        names: &[&str],
        rows: impl IntoIterator<Item = (Vec<String>, V)>,
    ) {
        self.family(name, kind, unit, help);
        let sample = match kind {
            "counter" => format!("{name}_total"),
            _ => name.to_string(),
        };
        for (values, v) in rows {
            self.sample(&sample, names, &values, None, v);
        }
    }

    /// A histogram family in seconds, its buckets at `bounds` (µs).
    fn histogram<'h>(
        &mut self,
        (name, help): (&str, &str),
        names: &[&str],
        bounds: &[u64],
        rows: impl IntoIterator<Item = (Vec<String>, &'h LatencyHist)>,
    ) {
        self.family(name, "histogram", "seconds", help);
        let (bucket, count, sum) = (
            format!("{name}_bucket"),
            format!("{name}_count"),
            format!("{name}_sum"),
        );
        let les: Vec<String> = bounds.iter().map(|&b| le(b)).collect();
        for (values, h) in rows {
            let b = h.buckets(bounds);
            for (l, n) in les.iter().zip(&b.cumulative) {
                self.sample(&bucket, names, &values, Some(("le", l)), n);
            }
            self.sample(&bucket, names, &values, Some(("le", "+Inf")), b.count);
            self.sample(&count, names, &values, None, b.count);
            self.sample(&sum, names, &values, None, b.sum_ns as f64 / 1e9);
        }
    }
}

/// Appends `v` escaped as an OpenMetrics label value.
fn escape_into(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

impl Stats {
    /// The figures fed so far as an OpenMetrics text exposition (docs/stats.md,
    /// "Metrics"): per API, client and broker counters and latency
    /// histograms, throttle per client, consumer and committed lag, record
    /// age and produce → fetch delivery. Call [`Stats::settle`] first, as
    /// before a report, or every histogram is read from a settled copy.
    pub fn openmetrics(&self) -> String {
        let mut p = Page { out: String::new() };
        self.api_families(&mut p);
        self.client_families(&mut p);
        let mut held = self.broker_held();
        let brokers = self.brokers.sorted().into_iter().map(|(b, x)| {
            let timing = with_held(&x.latency, held.remove(b)).into_owned();
            (vec![b.to_string()], timing)
        });
        let brokers = timings(brokers);
        p.histogram(
            (
                "kafkashark_broker_latency_seconds",
                "Latency (request complete to first response byte) per broker.",
            ),
            &["broker"],
            &LATENCY_BOUNDS_US,
            brokers.iter().map(|(k, t)| (k.clone(), t.latency())),
        );
        self.lag_families(&mut p);
        self.delivery_families(&mut p);
        p.out.push_str("# EOF\n");
        p.out
    }

    /// Requests, responses, errors, long-polls, head-of-line waits, latency
    /// and service time per API.
    fn api_families(&self, p: &mut Page) {
        let versions = self.versions.sorted();
        let apis: Vec<(Vec<String>, &super::ApiAcc, Timing)> = (self.apis.sorted().into_iter())
            .map(|(&k, a)| {
                let timing = api_timing(a, super::api_versions(&versions, k));
                (vec![api_label(k)], a, timing)
            })
            .collect();
        let each = |f: fn(&super::ApiAcc, &Timing) -> u64| {
            apis.iter().map(move |(l, a, t)| (l.clone(), f(a, t)))
        };
        let api = &["api"];
        p.scalars(
            "counter",
            ("kafkashark_requests", "", "Requests per API."),
            api,
            each(|a, _| a.requests),
        );
        p.scalars(
            "counter",
            ("kafkashark_responses", "", "Responses per API."),
            api,
            each(|a, _| a.responses),
        );
        p.scalars(
            "counter",
            (
                "kafkashark_unanswered_requests",
                "",
                "Requests per API whose response never came (connection closed or capture ended).",
            ),
            api,
            each(|a, _| a.unanswered),
        );
        let errors = apis.iter().flat_map(|(l, a, _)| {
            by_label(&a.errors)
                .into_iter()
                .map(|(e, n)| (vec![l[0].clone(), e], n))
        });
        p.scalars(
            "counter",
            (
                "kafkashark_errors",
                "",
                "Error codes answered, per API and error name.",
            ),
            &["api", "error"],
            errors,
        );
        p.scalars(
            "counter",
            (
                "kafkashark_long_polls",
                "",
                "Fetches that waited out their MaxWaitMs with nothing to return, per API.",
            ),
            api,
            each(|_, t| t.long_polls()),
        );
        p.scalars(
            "counter",
            (
                "kafkashark_head_of_line_waits",
                "",
                "Responses that waited behind the previous response on their connection, per API.",
            ),
            api,
            each(|_, t| t.hol_waits()),
        );
        p.histogram(
            (
                "kafkashark_latency_seconds",
                "Latency (request complete to first response byte) per API.",
            ),
            api,
            &LATENCY_BOUNDS_US,
            apis.iter().map(|(l, _, t)| (l.clone(), t.latency())),
        );
        p.histogram(
            (
                "kafkashark_service_seconds",
                "Service time (latency less the head-of-line wait) per API.",
            ),
            api,
            &LATENCY_BOUNDS_US,
            apis.iter().map(|(l, _, t)| (l.clone(), t.service())),
        );
    }

    /// Latency and throttle per client.
    fn client_families(&self, p: &mut Page) {
        let sorted = self.clients.sorted();
        let mut held = self.client_held();
        let label = |k: &super::ClientKey| {
            vec![
                or_empty(k.client_id.as_deref()),
                or_empty(k.software().as_deref()),
            ]
        };
        let latency = sorted.iter().filter_map(|&(at, s)| {
            let t = s.latency.as_ref()?;
            Some((label(&s.key), with_held(t, held.remove(&at)).into_owned()))
        });
        let latency = timings(latency);
        let accs = || {
            sorted
                .iter()
                .filter_map(|(_, s)| Some((label(&s.key), s.acc.as_ref()?)))
        };
        let throttled = rows(accs().map(|(l, c)| (l, c.throttle.count)), |a, b| *a += b);
        let throttle_ms = rows(accs().map(|(l, c)| (l, c.throttle.sum.max(0))), |a, b| {
            *a = a.saturating_add(b)
        });
        let client = &["client_id", "software"];
        p.histogram(
            (
                "kafkashark_client_latency_seconds",
                "Latency (request complete to first response byte) per client.",
            ),
            client,
            &LATENCY_BOUNDS_US,
            latency.iter().map(|(k, t)| (k.clone(), t.latency())),
        );
        p.scalars(
            "counter",
            (
                "kafkashark_throttled_responses",
                "",
                "Responses with a ThrottleTimeMs above 0, per client.",
            ),
            client,
            throttled,
        );
        p.scalars(
            "counter",
            (
                "kafkashark_throttle_seconds",
                "seconds",
                "ThrottleTimeMs summed over the responses, per client.",
            ),
            client,
            throttle_ms.into_iter().map(|(k, ms)| (k, ms as f64 / 1e3)),
        );
    }

    /// Consumer lag per (client, group, topic, partition) and committed lag
    /// per (group, topic, partition).
    fn lag_families(&self, p: &mut Page) {
        let lag = self.lag.settled();
        let fetch = lag.lags().map(|(who, group, topic, partition, lag)| {
            let labels = vec![
                who.client.clone(),
                who.host.clone(),
                or_empty(group),
                topic.to_string(),
                partition.to_string(),
            ];
            (labels, lag)
        });
        p.scalars(
            "gauge",
            (
                "kafkashark_consumer_lag_records",
                "records",
                "HighWatermark less the consumer's next offset after its last Fetch response.",
            ),
            &["client", "host", "group", "topic", "partition"],
            rows(fetch, |a, b| *a = a.saturating_add(b)),
        );
        let committed = lag
            .committed_lags()
            .map(|(g, t, part, lag)| (vec![g.to_string(), t.to_string(), part.to_string()], lag));
        p.scalars(
            "gauge",
            (
                "kafkashark_committed_lag_records",
                "records",
                "The partition's latest HighWatermark less the group's latest committed offset.",
            ),
            &["group", "topic", "partition"],
            committed,
        );
    }

    /// Record age per (topic, partition) and produce → fetch delivery per consumer.
    fn delivery_families(&self, p: &mut Page) {
        let ages = (self.delivery.age_hists(&self.lag).into_iter())
            .map(|(t, part, h)| (vec![t.to_string(), part.to_string()], h));
        p.histogram(
            (
                "kafkashark_record_age_seconds",
                "Fetch response time less the fetched batch's MaxTimestamp, per partition.",
            ),
            &["topic", "partition"],
            &AGE_BOUNDS_US,
            ages,
        );
        let delivered = self.delivery.delivery_hists(&self.lag);
        let delivered = delivered.iter().map(|(c, h)| (vec![c.to_string()], h));
        p.histogram(
            (
                "kafkashark_delivery_seconds",
                "Produce request to the Fetch response delivering the same batch, per consumer.",
            ),
            &["consumer"],
            &LATENCY_BOUNDS_US,
            delivered,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{exchange, msg};
    use super::*;
    use crate::analyzer::MessageInfo;
    use crate::kafka::decode::Kind;
    use crate::kafka::records::BatchHead;
    use crate::stats::lag::{FetchAnswer, FetchAsks};
    use crate::stats::StatsConfig;
    use crate::vocab::Timestamp;

    /// The page's lines that start with `prefix`.
    fn lines<'a>(page: &'a str, prefix: &str) -> Vec<&'a str> {
        page.lines().filter(|l| l.starts_with(prefix)).collect()
    }

    /// A histogram's samples of one label set (`labels` as written, without `le`).
    fn histogram(page: &str, name: &str, labels: &str) -> Vec<String> {
        let mut v: Vec<String> = lines(page, &format!("{name}_bucket{{{labels}"))
            .into_iter()
            .map(|l| l.rsplit_once("le=").unwrap().1.to_string())
            .collect();
        for part in ["count", "sum"] {
            let l = lines(page, &format!("{name}_{part}{{{labels}}} "));
            v.push(format!("{part} {}", l[0].rsplit_once(' ').unwrap().1));
        }
        v
    }

    #[test]
    fn api_counters_and_histograms_count_what_was_fed() {
        let mut s = Stats::new(StatsConfig::default());
        let mut i = 0;
        // Produce: 3 ms throttled 30 ms, 40 ms with two NOT_LEADER_OR_FOLLOWER.
        i = exchange(&mut s, i, 0, 100, 3, Some(30), vec![], "p");
        i = exchange(&mut s, i, 0, 200, 40, None, vec![6, 6], "p");
        // Metadata: 700 ms, throttled 1.5 s, from a client id that needs escaping.
        i = exchange(&mut s, i, 3, 300, 700, Some(1500), vec![], "q\"\\\nx");
        // Fetch: 10 ms of which 8 waiting behind another response.
        let req = msg(i, Kind::Request, 1, 12, 50, 1_000);
        s.message_info(&req, None);
        let rsp = MessageInfo {
            paired: true,
            peer: Some(i),
            latency_ns: Some(10_000_000),
            hol_wait_ns: Some(8_000_000),
            ..msg(i + 1, Kind::Response, 1, 12, 51, 1_010)
        };
        s.message_info(&rsp, None);
        s.settle();
        let page = s.openmetrics();
        assert!(page.ends_with("\n# EOF\n"), "{page}");
        for want in [
            "kafkashark_requests_total{api=\"Produce\"} 2",
            "kafkashark_responses_total{api=\"Produce\"} 2",
            "kafkashark_responses_total{api=\"Metadata\"} 1",
            "kafkashark_errors_total{api=\"Produce\",error=\"NOT_LEADER_OR_FOLLOWER\"} 2",
            "kafkashark_head_of_line_waits_total{api=\"Fetch\"} 1",
            "kafkashark_head_of_line_waits_total{api=\"Produce\"} 0",
            "kafkashark_long_polls_total{api=\"Fetch\"} 0",
            "kafkashark_throttled_responses_total{client_id=\"p\",software=\"\"} 1",
            "kafkashark_throttle_seconds_total{client_id=\"p\",software=\"\"} 0.03",
            "kafkashark_throttled_responses_total{client_id=\"q\\\"\\\\\\nx\",software=\"\"} 1",
            "kafkashark_throttle_seconds_total{client_id=\"q\\\"\\\\\\nx\",software=\"\"} 1.5",
            "# TYPE kafkashark_throttle_seconds counter",
            "# UNIT kafkashark_throttle_seconds seconds",
        ] {
            assert!(page.lines().any(|l| l == want), "{want} in\n{page}");
        }
        // A family's samples come in API key order (Metadata, key 3, came before Fetch, key 1).
        let order: Vec<&str> = lines(&page, "kafkashark_requests_total{")
            .into_iter()
            .map(|l| l.split('"').nth(1).unwrap_or(""))
            .collect();
        assert_eq!(order, ["Produce", "Fetch", "Metadata"]);
        // 3 ms and 40 ms: at or below 5 ms one, 50 ms both; sum 0.043 s.
        let produce = histogram(&page, "kafkashark_latency_seconds", "api=\"Produce\"");
        let counts = [0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2];
        let les = LATENCY_BOUNDS_US.iter().map(|&b| le(b));
        let les = les.chain(["+Inf".to_string()]);
        let mut want: Vec<String> = les
            .zip(counts)
            .map(|(l, n)| format!("\"{l}\"}} {n}"))
            .collect();
        want.extend(["count 2".to_string(), "sum 0.043".to_string()]);
        assert_eq!(produce, want);
        // Fetch: latency 10 ms, service 2 ms.
        let latency = histogram(&page, "kafkashark_latency_seconds", "api=\"Fetch\"");
        let service = histogram(&page, "kafkashark_service_seconds", "api=\"Fetch\"");
        assert_eq!(
            &latency[2..5],
            ["\"0.0025\"} 0", "\"0.005\"} 0", "\"0.01\"} 1"]
        );
        assert_eq!(
            &service[2..5],
            ["\"0.0025\"} 1", "\"0.005\"} 1", "\"0.01\"} 1"]
        );
        assert_eq!(service[17..], ["count 1", "sum 0.002"]);
        // The client and broker histograms hold the same latencies.
        let client = histogram(
            &page,
            "kafkashark_client_latency_seconds",
            "client_id=\"p\",software=\"\"",
        );
        assert_eq!(client, produce);
        let broker = histogram(
            &page,
            "kafkashark_broker_latency_seconds",
            "broker=\"10.0.0.2:9092\"",
        );
        assert_eq!(broker[17..], ["count 4", "sum 0.753"]);
    }

    #[test]
    fn lag_and_delivery_families_are_written_when_fed() {
        let mut s = Stats::new(StatsConfig::default());
        let empty = s.openmetrics();
        assert!(lines(&empty, "kafkashark_consumer_lag_records").is_empty());
        assert!(empty.contains("# TYPE kafkashark_consumer_lag_records gauge\n"));
        let t = |ms: i64| Timestamp::new(1000 + ms / 1000, ((ms % 1000) * 1_000_000) as u32);
        let c = s.lag.consumer("c", [10, 0, 0, 1].into()).unwrap();
        let topic = s.lag.topic("t").unwrap();
        // Asked 10, got 10..=19 of 100: lag 80; the group committed 40: 60.
        let asks = FetchAsks::new(vec![(topic, 0, 10)]);
        let answer = FetchAnswer {
            topic,
            partition: 0,
            error: 0,
            high_watermark: 100,
            last_stable_offset: 100,
            log_start_offset: 0,
            last_offset: Some(19),
            records: 10,
        };
        s.lag.member(c, "g");
        s.lag.commit("g", "t", 0, 40, t(0));
        s.lag.fetch(c, t(500), &asks, &[answer]);
        // A batch made at 0 ms, produced at 100 ms, fetched at 2600 ms.
        let batch = BatchHead {
            producer_id: 7,
            crc: 42,
            max_timestamp: 1_000_000,
            records: 10,
            bytes: 100,
            ..BatchHead::default()
        };
        let p = s.lag.consumer("p", "10.0.0.9".parse().unwrap()).unwrap();
        let t0 = (s.lag.topic("t").unwrap(), 0);
        s.delivery.produced(p, t(100), true, t0, &[batch]);
        s.delivery.fetched(Some(c), t(2600), t0, &[batch]);
        s.settle();
        let page = s.openmetrics();
        let lag = "kafkashark_consumer_lag_records{client=\"c\",host=\"10.0.0.1\",group=\"g\",topic=\"t\",partition=\"0\"} 80";
        assert!(page.lines().any(|l| l == lag), "{page}");
        let committed =
            "kafkashark_committed_lag_records{group=\"g\",topic=\"t\",partition=\"0\"} 60";
        assert!(page.lines().any(|l| l == committed), "{page}");
        let age = histogram(
            &page,
            "kafkashark_record_age_seconds",
            "topic=\"t\",partition=\"0\"",
        );
        assert_eq!(age.len(), AGE_BOUNDS_US.len() + 3);
        assert_eq!(age[10..12], ["\"1.0\"} 0", "\"2.5\"} 0"]);
        assert_eq!(age[12], "\"5.0\"} 1");
        assert_eq!(age[AGE_BOUNDS_US.len() + 1..], ["count 1", "sum 2.6"]);
        let delivery = histogram(&page, "kafkashark_delivery_seconds", "consumer=\"c\"");
        assert_eq!(delivery[10..12], ["\"1.0\"} 0", "\"2.5\"} 1"]);
        assert_eq!(
            delivery[LATENCY_BOUNDS_US.len() + 1..],
            ["count 1", "sum 2.5"]
        );
    }

    #[test]
    fn every_family_is_written_once_with_its_samples_together() {
        let mut s = Stats::new(StatsConfig::default());
        let mut i = 0;
        for n in 0..50u64 {
            let client = ["a", "b", ""][n as usize % 3];
            i = exchange(
                &mut s,
                i,
                (n % 4) as i16,
                n * 10,
                n,
                Some(n as i32),
                vec![],
                client,
            );
        }
        s.settle();
        let page = s.openmetrics();
        let mut families: Vec<&str> = Vec::new();
        let mut current = "";
        for l in page.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                current = rest.split(' ').next().unwrap();
                assert!(!families.contains(&current), "{current} twice");
                families.push(current);
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap();
                let suffix = name.strip_prefix(current).unwrap_or("?");
                let ok = ["", "_total", "_bucket", "_count", "_sum"];
                assert!(ok.contains(&suffix), "{name} outside {current}");
            }
        }
        assert_eq!(families.len(), 16, "{families:?}");
        assert_eq!(page.matches("# EOF").count(), 1);
    }
}
