//! The `stats` harness: what the pipeline harness's frames make, counted by
//! `Stats` (latency parts, consumer lag, record age, delivery, producers)
//! and reported in every form the front ends write.

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
use kafkashark::stats::merge::{Mergeable, Merged};
use kafkashark::stats::{Stats, StatsConfig, StatsReport};

use crate::fuzz_opts;
use crate::streams::pipeline_frames;

/// `Stats` fed [`crate::pipeline`]'s frames (the same input) through an
/// analyzer with `stats`' settings (`Stats::analyzer_config`: the summary
/// scan's placed facts, batch headers), with limits small enough for an
/// input to reach them; byte 0 bit 1 puts long-polls in the slow list.
///
/// Checks, besides no panic: the report counts every message the analyzer
/// made; made in parts (`report_side_but_lag`, `lag_report` and
/// `report_rest`, as `stats` makes its last report) it is the report made
/// at once; its JSON written around the lag section, with the lag section's
/// JSON put in its place, made of its rows' text in pieces (as `stats
/// --format json` writes it), is serde_json's JSON of the report
/// (the same value); its `merge` section reads back and merges into the
/// same totals; its text holds no ESC (names from the wire are escaped);
/// the OpenMetrics exposition is well formed ([`check_exposition`]) whatever
/// names the wire gave.
pub fn stats(data: &[u8]) {
    stats_report(data);
}

/// [`stats`], giving back the report it checked.
pub fn stats_report(data: &[u8]) -> StatsReport {
    let (mut pipeline, frames) = pipeline_frames(data);
    // Every connection the frames may open (a producer, a consumer and one
    // more: a batch delivered to two consumers), where the pipeline
    // harness keeps two so that inputs reach the cap.
    pipeline.flow.max_connections = 3;
    let mut an = Analyzer::new(Stats::analyzer_config(AnalyzerConfig {
        pipeline,
        decode: fuzz_opts(),
        ..AnalyzerConfig::default()
    }));
    let mut st = Stats::new(StatsConfig {
        slow: 3,
        slow_long_polls: data.first().is_some_and(|b| b & 2 != 0),
        max_keys: 4,
        max_histograms: 4,
        max_series: 8,
        max_pending: 8,
        max_list: 4,
    });
    let mut outs = Vec::new();
    let mut messages = 0u64;
    let mut count = |outs: &mut Vec<Output>, st: &mut Stats| {
        for o in outs.drain(..) {
            messages += u64::from(matches!(o, Output::Message(_)));
            st.push(&o);
        }
    };
    for f in frames {
        an.push(&f, &mut outs);
        count(&mut outs, &mut st);
    }
    an.finish(&mut outs);
    count(&mut outs, &mut st);
    st.settle();
    let r = st.report();
    assert_eq!(r.summary.messages, messages, "messages counted");
    let whole = serde_json::to_value(&r).expect("the report as JSON");
    let side = st.report_side_but_lag();
    let lag = st.lag_report();
    let parts = st.report_rest().with_side(side);
    let lag_json = StatsReport::lag_json(&lag).expect("the lag section as JSON");
    // The lag section as `stats` writes it: its rows' text in pieces (of
    // three rows here), around them the section's text without rows.
    let without_rows =
        StatsReport::lag_json_without_rows(&lag).expect("the lag section without rows");
    let pieces: Vec<Vec<u8>> = (lag.partitions.chunks(3))
        .map(|rows| StatsReport::lag_rows_json(rows).expect("lag rows as JSON"))
        .collect();
    let lag_parts =
        StatsReport::lag_json_parts(&without_rows, &pieces).expect("the lag section in parts");
    assert!(lag_parts.concat() == lag_json, "the lag section in pieces");
    let (around, place) = parts
        .json_around_lag()
        .expect("the report around its lag section");
    let spliced = [
        around.get(..place.start).expect("the lag section's place"),
        &lag_parts.concat(),
        around.get(place.end..).expect("the lag section's place"),
    ]
    .concat();
    let read: serde_json::Value =
        serde_json::from_slice(&spliced).expect("the spliced report is JSON");
    assert_eq!(read, whole, "the report in parts, as stats writes it");
    let m = Mergeable::from_report(spliced.as_slice()).expect("the merge section reads back");
    let mut merged = Merged::new();
    merged.add(&m).expect("one report merges");
    let totals = merged.report().summary;
    assert_eq!(totals.messages, r.summary.messages, "merged messages");
    let text = r.to_text("fuzz");
    assert!(!text.contains('\x1b'), "ESC in the report's text");
    check_exposition(&st.openmetrics());
    r
}

/// An OpenMetrics text exposition, line by line: `# TYPE`, `# UNIT` and
/// `# HELP` of a family, then its samples, each `name{label="value",…}
/// number` with the name the family's (or its `_total`, `_bucket`,
/// `_count`, `_sum`), every label value escaped (a backslash only before
/// `\\`, `"` or `n`; so no line break or quote ends it early), the value a
/// number; and `# EOF` once, last.
pub fn check_exposition(page: &str) {
    let body = page
        .strip_suffix("# EOF\n")
        .expect("the exposition ends with # EOF");
    let mut family: Option<&str> = None;
    for line in body.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut w = meta.splitn(3, ' ');
            let (kind, name) = (w.next(), w.next());
            assert!(
                matches!(kind, Some("TYPE" | "UNIT" | "HELP")) && name.is_some_and(metric_name),
                "a metadata line: {line:?}"
            );
            if kind == Some("TYPE") {
                family = name;
            }
            continue;
        }
        let f = family.unwrap_or_else(|| panic!("a sample before any # TYPE: {line:?}"));
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let (name, mut rest) = line.split_at(end);
        let suffix = name
            .strip_prefix(f)
            .unwrap_or_else(|| panic!("{line:?} outside {f}"));
        assert!(
            ["", "_total", "_bucket", "_count", "_sum"].contains(&suffix),
            "{line:?} outside {f}"
        );
        if let Some(labels) = rest.strip_prefix('{') {
            rest = check_labels(labels).unwrap_or_else(|| panic!("labels of {line:?}"));
        }
        let value = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("a value in {line:?}"));
        assert!(
            value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value),
            "a number in {line:?}"
        );
    }
}

/// A metric or label name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
fn metric_name(n: &str) -> bool {
    let mut c = n.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `label="value",…}` read to its closing brace: what follows it, or
/// `None` when a name, a quote or an escape is wrong.
fn check_labels(mut s: &str) -> Option<&str> {
    loop {
        let (name, rest) = s.split_once("=\"")?;
        if !metric_name(name) || name.contains(':') {
            return None;
        }
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next()? {
                (_, '\\') => {
                    chars.next().filter(|c| matches!(c.1, '\\' | '"' | 'n'))?;
                }
                (at, '"') => break at,
                _ => {}
            }
        };
        let after = rest.get(close + 1..)?;
        if let Some(r) = after.strip_prefix('}') {
            return Some(r);
        }
        s = after.strip_prefix(',')?;
    }
}

#[cfg(test)]
mod tests {
    use super::check_exposition;

    const GOOD: &str = "# TYPE k_requests counter\n# HELP k_requests Requests.\n\
        k_requests_total{client=\"a\\\\b\\\"c\\nd\",api=\"Fetch\"} 3\n\
        # TYPE k_latency_seconds histogram\n# UNIT k_latency_seconds seconds\n\
        k_latency_seconds_bucket{le=\"+Inf\"} 1\nk_latency_seconds_sum 0.25\n# EOF\n";

    fn fails(page: &str) -> bool {
        std::panic::catch_unwind(|| check_exposition(page)).is_err()
    }

    #[test]
    fn a_well_formed_exposition_passes_and_each_break_of_it_fails() {
        check_exposition(GOOD);
        // Each of these breaks one rule of the exposition.
        for (what, from, to) in [
            ("no # EOF", "# EOF\n", ""),
            ("a quote not escaped", "a\\\\b", "a\"b"),
            ("a line break in a value", "c\\nd", "c\nd"),
            ("an unknown escape", "c\\nd", "c\\td"),
            (
                "a sample of another family",
                "k_latency_seconds_sum",
                "k_other_sum",
            ),
            ("no value", "_sum 0.25", "_sum"),
            ("a value not a number", "_sum 0.25", "_sum x"),
            ("a bad label name", "api=", "a-pi="),
            ("unclosed labels", "api=\"Fetch\"}", "api=\"Fetch\""),
            ("an unknown comment", "# UNIT", "# NOTE"),
        ] {
            let broken = GOOD.replacen(from, to, 1);
            assert_ne!(broken, GOOD, "{what}: the page unchanged");
            assert!(fails(&broken), "{what}: passed\n{broken}");
        }
    }
}
