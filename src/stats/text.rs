//! The readable rendering of a [`StatsReport`]: one aligned table per section.
//!
//! Invariants: plain text, no terminal control codes — captured strings
//! (client ids, topics, group and member ids) go through `escape_text`; empty
//! sections are left out; numbers in a column are right-aligned.

use std::collections::BTreeMap;
use std::fmt::{Display, Write as _};

use super::report::*;
use crate::kafka::tree::escape_text;

/// An aligned table: a header line, then a line per row.
struct Table<'h> {
    head: Vec<&'h str>,
    rows: Vec<Vec<String>>,
    /// Left-aligned columns (text); the others are right-aligned (numbers).
    left: Vec<bool>,
}

impl<'h> Table<'h> {
    /// A table of the columns `head` names, separated by `|`: a name that
    /// starts with `<` is left-aligned (text), the others right-aligned (numbers).
    fn new(head: &'h str) -> Table<'h> {
        let cols = head.split('|');
        Table {
            head: cols.clone().map(|c| c.trim_start_matches('<')).collect(),
            left: cols.map(|c| c.starts_with('<')).collect(),
            rows: Vec::new(),
        }
    }

    /// Writes the header and the rows, each column as wide as its widest cell.
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

/// Milliseconds: three decimals, one from 100 on.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The cells of [`LAT_HEAD`]: count and percentiles, dashes without latencies.
fn lat_cells(l: &Option<LatencyMs>) -> Vec<String> {
    let Some(l) = l else {
        return cells(&[&0, &"-", &"-", &"-", &"-", &"-", &"-"]);
    };
    let mut cells = vec![l.count.to_string()];
    cells.extend([l.p50, l.p90, l.p99, l.p999, l.max, l.mean].map(ms));
    cells
}

/// The columns of [`lat_cells`].
const LAT_HEAD: &str = "n|p50|p90|p99|p99.9|max|mean";

/// A row's cells: each value as it displays.
fn cells(values: &[&dyn Display]) -> Vec<String> {
    values.iter().map(ToString::to_string).collect()
}

/// The value, or `-`.
fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string)
}

/// The captured text escaped, or `-`.
pub fn text(v: &Option<String>) -> String {
    v.as_deref().map_or_else(|| "-".to_string(), escape_text)
}

/// The API's name, or `api N` for a key this build does not name.
pub fn api(name: Option<&str>, key: i16) -> String {
    name.map_or_else(|| format!("api {key}"), str::to_string)
}

/// `"client-id" (software)`, escaped; `(none)` without an id.
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

/// The last [`SPARK`] values as a line of eighth blocks, scaled to their
/// largest (`▁` for 0).
fn sparkline(values: impl DoubleEndedIterator<Item = i64> + ExactSizeIterator) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let skip = values.len().saturating_sub(SPARK);
    let v: Vec<i64> = values.skip(skip).map(|x| x.max(0)).collect();
    let top = v.iter().copied().max().unwrap_or(0).max(1);
    v.iter()
        .map(|&x| {
            BARS[usize::try_from(x.saturating_mul(7) / top)
                .unwrap_or(0)
                .min(7)]
        })
        .collect()
}

/// Samples a [`sparkline`] shows.
const SPARK: usize = 24;

/// Rows a table of many shows at most ([`most`]).
const MOST_ROWS: usize = 50;

/// `items` when at most [`MOST_ROWS`]; else the [`MOST_ROWS`] greatest by
/// `key`, in their order.
fn most<T>(items: &[T], key: impl Fn(&T) -> i64) -> Vec<&T> {
    let mut v: Vec<(usize, &T)> = items.iter().enumerate().collect();
    if v.len() > MOST_ROWS {
        v.sort_by_key(|(i, x)| (std::cmp::Reverse(key(x)), *i));
        v.truncate(MOST_ROWS);
        v.sort_by_key(|(i, _)| *i);
    }
    v.into_iter().map(|(_, x)| x).collect()
}

/// The line under a table that [`most`] cut: how many of `all` it shows.
fn more(o: &mut String, all: usize, shown: usize, what: &str) {
    if all > shown {
        let _ = writeln!(o, "  ({shown} of {all} {what}; all in --format json)");
    }
}

/// `1,2,3`.
fn list<T: ToString>(items: &[T]) -> String {
    items.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// `NAME×count` for each entry, space-separated.
pub fn counts(m: &BTreeMap<String, u64>) -> String {
    let each = m.iter().map(|(k, v)| format!("{k}×{v}"));
    each.collect::<Vec<_>>().join(" ")
}

/// A table of `items`, a row each made by `row`, its header even with no rows.
fn table<T>(o: &mut String, head: &str, items: &[T], row: impl FnMut(&T) -> Vec<String>) {
    let mut t = Table::new(head);
    t.rows = items.iter().map(row).collect();
    t.render(o);
}

/// `title` and the [`table`] of `items`; nothing when there are none.
fn section<T>(
    o: &mut String,
    title: &str,
    head: &str,
    items: &[T],
    row: impl FnMut(&T) -> Vec<String>,
) {
    if !items.is_empty() {
        o.push_str(title);
        table(o, head, items, row);
    }
}

impl StatsReport {
    /// The report as readable tables. `title` heads it (the file or interface).
    pub fn to_text(&self, title: &str) -> String {
        let mut o = self.text_head(title);
        self.text_tail(&mut o);
        o
    }

    /// The first tables of [`StatsReport::to_text`]: those of
    /// [`super::Stats::report_rest`]'s part alone, which a front end may
    /// write while the side part is made ([`StatsReport::with_side`]).
    pub fn text_head(&self, title: &str) -> String {
        let mut o = String::new();
        self.head_text(&mut o, title);
        self.apis_text(&mut o);
        self.parts_text(&mut o);
        self.fetch_text(&mut o);
        self.slow_text(&mut o);
        self.throttle_text(&mut o);
        self.errors_text(&mut o);
        self.topics_text(&mut o);
        o
    }

    /// The tables of [`StatsReport::to_text`] after [`StatsReport::text_head`]'s,
    /// appended to `o`.
    pub fn text_tail(&self, o: &mut String) {
        self.lag_text(o);
        self.delivery_text(o);
        self.clients_text(o);
        self.links_text(o);
        section(
            o,
            "\nPRODUCE ACKS\n",
            "acks|requests|<frames",
            &self.acks,
            |a| cells(&[&a.acks, &a.requests, &list(&a.frames)]),
        );
        for g in &self.groups {
            group_text(o, g);
        }
        if !self.hints.is_empty() {
            o.push_str("\nHINTS\n");
            for h in &self.hints {
                let (severity, kind, message) = (h.severity, h.kind, escape_text(&h.message));
                let frames = list(&h.frames);
                let _ = writeln!(o, "  [{severity}] {kind}: {message}  (frames {frames})");
            }
        }
        self.tls_text(o);
        section(
            o,
            "\nREORDERED (segments the capture put after data beyond them or after their ACK; reassembled in order)\n",
            "stream|late segments",
            &self.reordered,
            |r| cells(&[&r.stream, &r.late_segments]),
        );
        self.points_text(o);
        self.overflow_text(o);
    }

    /// Capture points: the captures' clocks and latency at each point.
    fn points_text(&self, o: &mut String) {
        let Some(p) = &self.capture_points else {
            return;
        };
        o.push_str("\nCAPTURE POINTS (a connection seen in two captures is reported once, from the first)\n");
        table(
            o,
            "<capture|<against|clock offset s|±s|packets in common",
            &p.clocks,
            |c| {
                vec![
                    escape_text(&c.capture),
                    escape_text(&c.against),
                    format!("{:+.6}", c.offset_s),
                    format!("{:.6}", c.bound_s),
                    c.packets.to_string(),
                ]
            },
        );
        let _ = writeln!(
            o,
            "  {} connections and {} messages seen at both points",
            p.connections, p.messages
        );
        let rows = [
            ("latency at the first point", &p.latency_first_ms),
            ("latency at the other point", &p.latency_other_ms),
            ("difference (round trip between the points)", &p.between_ms),
        ];
        table(
            o,
            &format!("<exchanges seen at both|{LAT_HEAD}"),
            &rows,
            |(name, l)| {
                let mut c = vec![name.to_string()];
                c.extend(lat_cells(l));
                c
            },
        );
    }

    /// The title, the summary line and what latency means.
    fn head_text(&self, o: &mut String, title: &str) {
        let s = &self.summary;
        let span = span(s.first_ts, s.last_ts);
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
    }

    /// APIS: a row per API, and a row per version when it used several or a removed one.
    fn apis_text(&self, o: &mut String) {
        if self.apis.is_empty() {
            return;
        }
        o.push_str("\nAPIS\n");
        let head =
            format!("<api|<ver|req|resp|unpaired|{LAT_HEAD}|throttled|thr max|thr sum|<errors");
        let mut t = Table::new(&head);
        for a in &self.apis {
            let several = a.versions.len() > 1 || a.versions.iter().any(|v| v.removed_in_kafka_4);
            let ver = match a.versions.first() {
                Some(v) if !several => format!("v{}", v.version),
                _ => "all".into(),
            };
            let name = api(a.api_name, a.api_key);
            let mut r = cells(&[&name, &ver, &a.requests, &a.responses, &a.unpaired]);
            r.extend(lat_cells(&a.latency_ms));
            let (thr, errors) = (&a.throttle_time_ms, counts(&a.errors));
            r.extend(cells(&[&a.throttled, &thr.max, &thr.sum, &errors]));
            t.rows.push(r);
            for v in a.versions.iter().filter(|_| several) {
                let mark = if v.removed_in_kafka_4 { "*" } else { "" };
                let ver = format!("v{}{mark}", v.version);
                let mut r = cells(&[&"", &ver, &v.requests, &v.responses, &""]);
                r.extend(lat_cells(&v.latency_ms));
                r.extend(cells(&[&"", &"", &"", &""]));
                t.rows.push(r);
            }
        }
        t.render(o);
    }

    /// SLOWEST EXCHANGES.
    fn slow_text(&self, o: &mut String) {
        let title = format!(
            "\nSLOWEST EXCHANGES (top {}, by service time: latency less the wait behind earlier responses)\n",
            self.slow.len()
        );
        let head =
            "service ms|latency ms|hol wait ms|req frame|resp frame|<api|<client|<conn|throttle";
        section(o, &title, head, &self.slow, |x| {
            let api_text = format!("{} v{}", api(x.api_name, x.api_key), opt(&x.api_version));
            vec![
                ms(x.service_ms),
                ms(x.latency_ms),
                ms(x.hol_wait_ms),
                opt(&x.request_frame),
                x.response_first_frame.to_string(),
                if x.long_poll {
                    format!("{api_text} long-poll")
                } else {
                    api_text
                },
                client(&x.client_id, &x.software),
                format!("s{} {} → {}", x.stream, x.client, x.broker),
                opt(&x.throttle_time_ms),
            ]
        });
        if self.slow_long_polls_left_out > 0 {
            let n = self.slow_long_polls_left_out;
            let _ = writeln!(
                o,
                "  {n} long-poll Fetches (no records after waiting out MaxWaitMs) left out; --long-polls lists them"
            );
        }
    }

    /// LATENCY PARTS: per API (and version), latency beside the service
    /// time and the waits behind earlier responses.
    fn parts_text(&self, o: &mut String) {
        let any = self
            .apis
            .iter()
            .any(|a| a.parts.hol_waits > 0 || a.parts.long_polls > 0);
        if !any {
            return;
        }
        o.push_str("\nLATENCY PARTS (service = latency less the wait behind the connection's earlier responses)\n");
        let head =
            "<api|<ver|n|hol waits|long-polls|lat p50|lat p99|svc p50|svc p90|svc p99|svc max";
        let mut t = Table::new(head);
        let row = |name: &str, ver: &str, l: &Option<LatencyMs>, p: &PartsMs| {
            let (n, lp50, lp99) = l.as_ref().map_or((0, "-".into(), "-".into()), |l| {
                (l.count, ms(l.p50), ms(l.p99))
            });
            let s = |f: fn(&LatencyMs) -> f64| {
                p.service_ms
                    .as_ref()
                    .map_or_else(|| "-".into(), |x| ms(f(x)))
            };
            let mut r = cells(&[&name, &ver, &n, &p.hol_waits, &p.long_polls]);
            r.extend([
                lp50,
                lp99,
                s(|x| x.p50),
                s(|x| x.p90),
                s(|x| x.p99),
                s(|x| x.max),
            ]);
            r
        };
        for a in &self.apis {
            let several = a.versions.len() > 1;
            let ver = match a.versions.first() {
                Some(v) if !several => format!("v{}", v.version),
                _ => "all".into(),
            };
            t.rows.push(row(
                &api(a.api_name, a.api_key),
                &ver,
                &a.latency_ms,
                &a.parts,
            ));
            for v in a.versions.iter().filter(|_| several) {
                t.rows
                    .push(row("", &format!("v{}", v.version), &v.latency_ms, &v.parts));
            }
        }
        t.render(o);
    }

    /// FETCH OUTCOMES: per Fetch and ShareFetch version, the exchanges
    /// that returned data, waited out MaxWaitMs, or came back empty early.
    fn fetch_text(&self, o: &mut String) {
        let rows: Vec<(String, &FetchSplitMs)> = self
            .apis
            .iter()
            .flat_map(|a| {
                let name = api(a.api_name, a.api_key);
                let each = a.versions.iter();
                each.filter_map(move |v| {
                    Some((format!("{name} v{}", v.version), v.fetch.as_ref()?))
                })
            })
            .collect();
        let title = "\nFETCH OUTCOMES (ms: data returned / long-poll: MaxWaitMs waited out with nothing / empty early)\n";
        let head = "<api|data n|min bytes met|p50|p99|waited out n|p50|p99|empty early n|p50|p99";
        section(o, title, head, &rows, |(name, f)| {
            let mut r = vec![name.clone()];
            let part = |l: &Option<LatencyMs>| match l {
                Some(l) => vec![l.count.to_string(), ms(l.p50), ms(l.p99)],
                None => vec!["0".into(), "-".into(), "-".into()],
            };
            let data = part(&f.data_ms);
            r.extend(data.first().cloned());
            r.push(f.min_bytes_met.to_string());
            r.extend(data.into_iter().skip(1));
            r.extend(part(&f.waited_out_ms));
            r.extend(part(&f.empty_early_ms));
            r
        });
    }

    /// THROTTLE: by client and API, the throttled latency, per second and the most throttled.
    fn throttle_text(&self, o: &mut String) {
        let th = &self.throttle;
        if th.throttled == 0 {
            return;
        }
        let (n, sum, max) = (th.throttled, th.sum_ms, th.max_ms);
        let _ = writeln!(
            o,
            "\nTHROTTLE  {n} throttled responses, {sum} ms in all, max {max} ms"
        );
        table(o, "<client|<api|count|sum ms|max ms", &th.by_client, |c| {
            let who = client(&c.client_id, &c.software);
            let name = api(c.api_name, c.api_key);
            cells(&[&who, &name, &c.count, &c.sum_ms, &c.max_ms])
        });
        if let Some(l) = &th.throttled_latency_ms {
            let (p50, p99, max) = (ms(l.p50), ms(l.p99), ms(l.max));
            let _ = writeln!(o, "  latency of throttled exchanges (throttle not included): p50 {p50} p99 {p99} max {max} ms");
        }
        o.push_str("  per second:\n");
        table(o, "second|count|sum ms|max ms", &th.series, |x| {
            cells(&[&x.second, &x.count, &x.sum_ms, &x.max_ms])
        });
        o.push_str("  most throttled (throttle and latency apart):\n");
        let head = "throttle ms|latency ms|req frame|resp frame|<api|<client";
        table(o, head, &th.exchanges, |x| {
            vec![
                x.throttle_ms.to_string(),
                x.latency_ms.map_or_else(|| "-".into(), ms),
                opt(&x.request_frame),
                x.response_frame.to_string(),
                api(x.api_name, x.api_key),
                client(&x.client_id, &None),
            ]
        });
    }

    /// ERRORS by error, API and place, RECORD ERRORS and WARNINGS.
    fn errors_text(&self, o: &mut String) {
        let head = "<error|<api|<topic|partition|count|first|last";
        section(o, "\nERRORS\n", head, &self.errors, |e| {
            let mut r = vec![e.error.clone(), api(e.api_name, e.api_key)];
            r.extend([text(&e.topic), opt(&e.partition), e.count.to_string()]);
            r.extend([e.first_frame.to_string(), e.last_frame.to_string()]);
            r
        });
        let head = "<topic|partition|batch index|frame|<message";
        section(o, "\nRECORD ERRORS\n", head, &self.record_errors, |e| {
            let mut r = vec![text(&e.topic), opt(&e.partition), e.batch_index.to_string()];
            r.extend([e.frame.to_string(), text(&e.message)]);
            r
        });
        let title = "\nWARNINGS (messages that decoded, with something unusual)\n";
        let head = "<warning|<api|count|first|last";
        section(o, title, head, &self.warnings, |w| {
            let version = (w.api_version >= 0).then(|| format!(" v{}", w.api_version));
            let name = api(w.api_name, w.api_key) + &version.unwrap_or_default();
            let (n, first, last) = (w.count, w.first_frame, w.last_frame);
            cells(&[&w.warning, &name, &n, &first, &last])
        });
    }

    /// TOPICS: produced and fetched record sets per partition.
    fn topics_text(&self, o: &mut String) {
        let title = "\nTOPICS (record sets in Produce requests / Fetch responses)\n";
        let head = "<topic|part|prod bytes|batches|records|rec/batch|<codecs|ratio|<acks|fetch bytes|batches|records|partial|<codecs";
        section(o, title, head, &self.topics, |x| {
            let (p, f) = (&x.produce, &x.fetch);
            let two = |r: Option<f64>| r.map_or_else(|| "-".into(), |r| format!("{r:.2}"));
            let mut r = vec![text(&x.topic), opt(&x.partition)];
            r.extend([p.bytes, p.batches, p.records].map(|n| n.to_string()));
            let (per_batch, ratio) = (two(p.records_per_batch), two(p.compression_ratio));
            r.extend(cells(&[
                &per_batch,
                &counts(&p.codecs),
                &ratio,
                &counts(&x.acks),
            ]));
            r.extend([f.bytes, f.batches, f.records, f.partial_batches].map(|n| n.to_string()));
            r.push(counts(&f.codecs));
            r
        });
    }

    /// CONSUMER LAG per consumer and partition, GROUP LAG per group.
    fn lag_text(&self, o: &mut String) {
        let title = "\nCONSUMER LAG (records: high watermark − next offset after each Fetch response; committed: − the group's last OffsetCommit)\n";
        let head = "<client|<group|<topic|part|fetches|records|next offset|high wm|lag|max lag|trend/s|committed|committed lag|<lag over the capture";
        let rows = most(&self.lag.partitions, |p| {
            p.lag.max(p.committed_lag.unwrap_or(0))
        });
        section(o, title, head, &rows, |p| {
            let trend = p.trend_per_s.map(|t| format!("{t:+.1}"));
            let mut r = vec![
                escape_text(&p.client),
                text(&p.group),
                escape_text(&p.topic),
            ];
            r.extend(cells(&[
                &p.partition,
                &p.fetches,
                &p.records,
                &p.next_offset,
                &p.high_watermark,
                &p.lag,
                &p.max_lag,
                &opt(&trend),
                &opt(&p.committed_offset),
                &opt(&p.committed_lag),
                &sparkline(p.series.iter().map(|s| s.1)),
            ]));
            r
        });
        more(
            o,
            self.lag.partitions.len(),
            rows.len(),
            "rows, the most lagging shown",
        );
        let title = "\nGROUP LAG (summed over the group's partitions)\n";
        section(
            o,
            title,
            "<group|partitions|committed lag|fetch lag",
            &self.lag.groups,
            |g| {
                cells(&[
                    &escape_text(&g.group),
                    &g.partitions,
                    &g.committed_lag,
                    &g.fetch_lag,
                ])
            },
        );
    }

    /// RECORD AGE per partition, DELIVERY per consumer, PRODUCERS.
    fn delivery_text(&self, o: &mut String) {
        let d = &self.delivery;
        let title = "\nRECORD AGE (ms: Fetch response's first frame − batch maxTimestamp)\n";
        let head = format!("<topic|part|batches|log-append|future|{LAT_HEAD}");
        let ages = most(&d.record_age, |a| {
            a.age_ms.as_ref().map_or(0, |l| (l.max * 1e3) as i64)
        });
        section(o, title, &head, &ages, |a| {
            let mut r = vec![escape_text(&a.topic)];
            r.extend(cells(&[
                &a.partition,
                &a.batches,
                &a.log_append_time,
                &a.future,
            ]));
            r.extend(lat_cells(&a.age_ms));
            r
        });
        more(
            o,
            d.record_age.len(),
            ages.len(),
            "partitions, the oldest shown",
        );
        let title = format!(
            "\nDELIVERY (ms: Produce request → the Fetch response carrying the same batch; {} fetched batches not seen produced, {} forgotten)\n",
            d.unmatched_batches, d.forgotten_batches
        );
        section(
            o,
            &title,
            &format!("<consumer|{LAT_HEAD}"),
            &d.delivery,
            |x| {
                let mut r = vec![escape_text(&x.consumer)];
                r.extend(lat_cells(&x.delivery_ms));
                r
            },
        );
        let title =
            "\nPRODUCERS (batch gap: ms between a producer's requests for the same partition)\n";
        let head = "<producer|requests|batches|records|rec/batch|bytes|mean batch|max batch|gap p50|gap p99";
        section(o, title, head, &d.producers, |p| {
            let one = |r: Option<f64>| r.map_or_else(|| "-".into(), |r| format!("{r:.1}"));
            let gap = |f: fn(&LatencyMs) -> f64| {
                p.batch_gap_ms
                    .as_ref()
                    .map_or_else(|| "-".into(), |g| ms(f(g)))
            };
            let mut r = vec![escape_text(&p.producer)];
            r.extend(cells(&[
                &p.requests,
                &p.batches,
                &p.records,
                &one(p.records_per_batch),
                &p.bytes,
                &one(p.mean_batch_bytes),
                &p.max_batch_bytes,
                &gap(|g| g.p50),
                &gap(|g| g.p99),
            ]));
            r
        });
    }

    /// CLIENTS: counts, latency and the API versions each used.
    fn clients_text(&self, o: &mut String) {
        let title = "\nCLIENTS (* = a version Kafka 4.0 removed)\n";
        let head = "<client|<addresses|req|unans|errors|throttled|p50|p99|max|<apis";
        section(o, title, head, &self.clients, |c| {
            let sw = super::software(&c.software_name, &c.software_version);
            let n = c.addresses.len();
            let addrs = match c.addresses.get(..2) {
                Some(two) if n > 3 => format!("{} (+{})", two.join(" "), n - 2),
                _ => c.addresses.join(" "),
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
            let latency = match &c.latency_ms {
                Some(l) => [l.p50, l.p99, l.max].map(ms),
                None => ["-", "-", "-"].map(String::from),
            };
            let mut r = vec![client(&c.client_id, &sw), addrs];
            r.extend([c.requests, c.unanswered, c.errors, c.throttled].map(|n| n.to_string()));
            r.extend(latency);
            r.push(apis.join(" "));
            r
        });
    }

    /// BROKERS and CONNECTIONS: their latencies and network round trips
    /// (a broker's: the median of its connections').
    fn links_text(&self, o: &mut String) {
        let rtt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), ms);
        let head = format!("<broker|req|resp|{LAT_HEAD}|rtt");
        section(o, "\nBROKERS (latency ms)\n", &head, &self.brokers, |b| {
            let mut r = cells(&[&b.broker, &b.requests, &b.responses]);
            r.extend(lat_cells(&b.latency_ms));
            r.push(rtt(b.rtt_ms));
            r
        });
        let head = format!("<conn|<client|<broker|<client id|req|{LAT_HEAD}|rtt|<rtt from");
        let title = "\nCONNECTIONS (latency ms)\n";
        section(o, title, &head, &self.connections, |c| {
            let (conn, id) = (format!("s{}", c.stream), text(&c.client_id));
            let mut r = cells(&[&conn, &c.client, &c.broker, &id, &c.requests]);
            r.extend(lat_cells(&c.latency_ms));
            r.push(rtt(c.rtt_ms));
            r.push(c.rtt_from.unwrap_or("-").to_string());
            r
        });
    }

    /// TLS: each TLS connection's handshake, keys, alerts and bytes.
    fn tls_text(&self, o: &mut String) {
        let head = "<conn|<client|<broker|<version|<suite|<sni|handshake ms|<keys|records c/s|bytes c/s|decrypted c/s|<alerts";
        section(o, "\nTLS\n", head, &self.tls, |t| {
            let version = match (&t.version, t.offered) {
                (Some(v), true) => format!("{v} offered"),
                (Some(v), false) if t.resumed => format!("{v} resumed"),
                (Some(v), false) => v.clone(),
                (None, _) => "-".into(),
            };
            let pair = |p: [u64; 2]| format!("{}/{}", p[0], p[1]);
            let hs = t.handshake_ms.map_or_else(|| "-".to_string(), ms);
            let conn = format!("s{}", t.stream);
            let suite = text(&t.suite);
            let sni = text(&t.server_name);
            let alerts = if t.alerts.is_empty() {
                "-".to_string()
            } else {
                t.alerts.join(", ")
            };
            cells(&[
                &conn,
                &t.client,
                &t.broker,
                &version,
                &suite,
                &sni,
                &hs,
                &t.keys,
                &pair(t.records),
                &pair(t.bytes),
                &pair(t.decrypted),
                &escape_text(&alerts),
            ])
        });
        for t in &self.tls {
            if let Some(d) = &t.detail {
                let _ = writeln!(o, "  s{}: {}", t.stream, escape_text(d));
            }
            if let Some(c) = &t.certificate {
                let bad = if c.invalid {
                    " — NOT VALID when sent"
                } else {
                    ""
                };
                let (subject, issuer) = (escape_text(&c.subject), escape_text(&c.issuer));
                let _ = writeln!(
                    o,
                    "  s{}: certificate {subject} (issuer {issuer}), valid until {}{bad}",
                    t.stream, c.until
                );
            }
        }
    }

    /// The OVERFLOW line, when a bounded table was full.
    fn overflow_text(&self, o: &mut String) {
        let ov = &self.overflow;
        let dropped = [ov.apis, ov.clients, ov.histograms, ov.topics, ov.errors]
            .into_iter()
            .chain([ov.groups, ov.series, ov.pending, ov.streams, ov.lists])
            .sum::<u64>();
        if dropped > 0 {
            let _ = writeln!(
                o,
                "\nOVERFLOW: {dropped} facts not kept because a bounded table was full (see the JSON `overflow`)"
            );
        }
    }
}

/// GROUP: a group's line, its generations and its KIP-848 members.
fn group_text(o: &mut String, g: &GroupReport) {
    let protocols = (!g.protocols.is_empty()).then(|| g.protocols.join(","));
    let errors = (!g.errors.is_empty()).then(|| format!("  errors {}", counts(&g.errors)));
    let _ = writeln!(
        o,
        "\nGROUP {:?}  type {}  protocols {}  joins {} syncs {} heartbeats {} leaves {}  members {}{}",
        escape_text(&g.group_id),
        text(&g.protocol_type),
        text(&protocols),
        g.joins,
        g.syncs,
        g.heartbeats,
        g.leaves,
        g.members.len(),
        errors.unwrap_or_default(),
    );
    let head = "generation|<protocol|members|join req|join resp|<sync resp|rebalance ms|<leader";
    section(o, "", head, &g.generations, |e| {
        let members = e.members.len().max(e.listed_members as usize);
        let mut r = cells(&[&e.generation_id, &text(&e.protocol_name), &members]);
        r.extend([
            opt(&e.join_request_frame),
            e.join_response_frame.to_string(),
        ]);
        r.push(list(&e.sync_response_frames));
        r.extend([
            e.rebalance_ms.map_or_else(|| "-".into(), ms),
            text(&e.leader),
        ]);
        r
    });
    let head = "<member (KIP-848)|heartbeats|<epochs|<assignment";
    section(o, "", head, &g.heartbeat_members, |h| {
        let assignment = h.assignment.as_ref().map_or_else(
            || "-".to_string(),
            |a| {
                let tps = a
                    .iter()
                    .map(|tp| format!("{}[{}]", escape_text(&tp.topic), list(&tp.partitions)));
                tps.collect::<Vec<_>>().join(" ")
            },
        );
        let (member, heartbeats) = (escape_text(&h.member_id), h.heartbeats.to_string());
        vec![member, heartbeats, list(&h.epochs), assignment]
    });
}

impl super::merge::MergedReport {
    /// The merged report (`stats --merge`) as readable tables, in the
    /// cells of a report's.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let s = &self.summary;
        let span = span(s.first_ts, s.last_ts);
        let _ = writeln!(
            o,
            "kafkashark stats — {} reports merged\n{} messages ({} requests, {} responses){span}; {} unanswered",
            self.reports, s.messages, s.requests, s.responses, s.unanswered
        );
        let head =
            format!("<api|req|resp|unanswered|{LAT_HEAD}|service p99|long-polls|throttled|<errors");
        section(&mut o, "\nAPIS\n", &head, &self.apis, |a| {
            let name = api(a.api_name, a.api_key);
            let mut r = cells(&[&name, &a.requests, &a.responses, &a.unanswered]);
            r.extend(lat_cells(&a.latency_ms));
            let service = (a.parts.service_ms.as_ref()).map_or_else(|| "-".into(), |l| ms(l.p99));
            let errors = counts(&a.errors);
            r.extend(cells(&[
                &service,
                &a.parts.long_polls,
                &a.throttled,
                &errors,
            ]));
            r
        });
        let head = format!("<broker|req|resp|{LAT_HEAD}");
        section(&mut o, "\nBROKERS\n", &head, &self.brokers, |b| {
            let mut r = cells(&[&b.broker, &b.requests, &b.responses]);
            r.extend(lat_cells(&b.latency_ms));
            r
        });
        let head = "<topic|part|produce sets|bytes|records|fetch sets|bytes|records";
        section(&mut o, "\nTOPICS\n", head, &self.topics, |t| {
            let (p, f) = (&t.produce, &t.fetch);
            let (topic, part) = (text(&t.topic), opt(&t.partition));
            cells(&[&topic, &part, &p.record_sets, &p.bytes, &p.records])
                .into_iter()
                .chain(cells(&[&f.record_sets, &f.bytes, &f.records]))
                .collect()
        });
        o
    }
}

/// The time a report covers, as the summary line shows it (`, 1.234 s`).
fn span(first: Option<f64>, last: Option<f64>) -> String {
    match (first, last) {
        (Some(a), Some(b)) => format!(", {:.3} s", b - a),
        _ => String::new(),
    }
}
