//! Expert hints: short statements about Kafka behaviour in the capture, like
//! Wireshark's expert info, each naming the frames that show it.
//!
//! Invariants: computed from the accumulated (bounded) state only, when a
//! report is made; every hint carries at least one frame; the thresholds are
//! the constants below, documented in docs/stats.md.

use std::collections::BTreeMap;

use super::{ClientAcc, ClientKey, Evidence, Hint, Stats};
use crate::kafka::schema;

/// A client throttled in at least this many distinct seconds is throttled "sustainedly".
pub const THROTTLE_SECONDS: u64 = 3;
/// Tiny batches: at least this many produced batches to a partition…
pub const TINY_BATCHES_MIN: u64 = 20;
/// …averaging fewer records per batch than this.
pub const TINY_BATCH_RECORDS: f64 = 2.0;
/// Compression off: a client producing at least this many record-set bytes…
pub const LARGE_PRODUCE_BYTES: u64 = 1 << 20;
/// …of which at least this fraction is in uncompressed batches.
pub const PLAIN_FRACTION: f64 = 0.9;
/// Rebalance loop: this many generations of one group…
pub const LOOP_GENERATIONS: usize = 3;
/// …within this many seconds.
pub const LOOP_WINDOW_S: f64 = 60.0;
/// Repeated error: the same error on the same topic at least this many times.
pub const REPEATED_ERRORS: u64 = 3;
/// Errors that, repeated, mean stale metadata or a missing topic.
pub const METADATA_ERRORS: &[&str] = &[
    "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
    "UNKNOWN_TOPIC_ID",
];

/// `1 request`, `3 requests`.
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn who(k: &ClientKey) -> String {
    let id = k
        .client_id
        .as_deref()
        .map_or_else(|| "(no client id)".to_string(), |c| format!("{c:?}"));
    match k.software() {
        Some(s) => format!("client {id} ({s})"),
        None => format!("client {id}"),
    }
}

fn topic(t: &Option<String>, p: &Option<i32>) -> String {
    match (t, p) {
        (Some(t), Some(p)) => format!("{t}-{p}"),
        (Some(t), None) => t.clone(),
        (None, Some(p)) => format!("partition {p}"),
        (None, None) => "(no topic)".into(),
    }
}

/// Every hint the state supports, warnings first.
pub(crate) fn hints(s: &Stats) -> Vec<Hint> {
    let mut out = Vec::new();
    for (_, x) in s.clients.sorted() {
        if let Some(c) = &x.acc {
            client_hints(&mut out, &x.key, c);
        }
    }
    tiny_batches(&mut out, s);
    rebalance_loops(&mut out, s);
    repeated_errors(&mut out, s);
    if s.unanswered.count > 0 {
        out.push(Hint {
            kind: "unanswered",
            severity: "note",
            message: format!(
                "{} never got a response in the capture (closed connection, capture end or a lost reply)",
                plural(s.unanswered.count, "request")
            ),
            frames: s.unanswered.frames(),
        });
    }
    out.sort_by_key(|h| (h.severity != "warning", h.frames.first().copied()));
    out
}

/// A client's hints: sustained throttling, no compression, acks=0, mixed versions.
fn client_hints(out: &mut Vec<Hint>, k: &ClientKey, c: &ClientAcc) {
    if c.throttle_seconds >= THROTTLE_SECONDS {
        out.push(Hint {
            kind: "throttling",
            severity: "warning",
            message: format!(
                "{} was throttled in {} distinct seconds ({} responses, {} ms in all, max {} ms): it exceeds a quota",
                who(k),
                c.throttle_seconds,
                c.throttle.count,
                c.throttle.sum,
                c.throttle.max
            ),
            frames: c.throttle_frames.frames(),
        });
    }
    if c.produce_bytes >= LARGE_PRODUCE_BYTES
        && c.produce_plain_bytes as f64 >= PLAIN_FRACTION * c.produce_bytes as f64
    {
        out.push(Hint {
            kind: "no_compression",
            severity: "note",
            message: format!(
                "{} produced {} bytes of records, {} of them uncompressed: compression.type would cut network and disk",
                who(k),
                c.produce_bytes,
                c.produce_plain_bytes
            ),
            frames: c.produce_frames.frames(),
        });
    }
    if let Some(e) = c.acks.get(&0) {
        out.push(Hint {
            kind: "acks_0",
            severity: "warning",
            message: format!(
                "{} sent {} with acks=0: the broker never answers them, so failed writes go unnoticed",
                who(k),
                plural(e.count, "Produce request")
            ),
            frames: e.frames(),
        });
    }
    let mut by_api: BTreeMap<i16, Vec<(i16, u64)>> = BTreeMap::new();
    for (&(api, v), &(_, first)) in &c.apis {
        // Clients retry ApiVersions at a lower version by design (KIP-511).
        if schema::ApiKey(api) != schema::ApiKey::API_VERSIONS {
            by_api.entry(api).or_default().push((v, first));
        }
    }
    for (api, vs) in by_api.into_iter().filter(|(_, vs)| vs.len() > 1) {
        let list: Vec<String> = vs.iter().map(|(v, _)| format!("v{v}")).collect();
        out.push(Hint {
            kind: "mixed_versions",
            severity: "note",
            message: format!(
                "{} used {} {} (several versions of one API: several client libraries or a downgrade)",
                who(k),
                schema::api_name(api).unwrap_or("?"),
                list.join(", ")
            ),
            frames: vs.iter().map(|(_, f)| *f).collect(),
        });
    }
}

/// Partitions produced to in many batches of few records.
fn tiny_batches(out: &mut Vec<Hint>, s: &Stats) {
    for ((t, p), x) in s.parts.sorted() {
        let b = x.produce.batches;
        if b >= TINY_BATCHES_MIN && (x.produce.records as f64) < TINY_BATCH_RECORDS * b as f64 {
            out.push(Hint {
                kind: "tiny_batches",
                severity: "note",
                message: format!(
                    "{}: {} produced batches averaging {:.2} records: raise linger.ms / batch.size",
                    topic(t, p),
                    b,
                    x.produce.records as f64 / b as f64
                ),
                frames: x.produce_frames.frames(),
            });
        }
    }
}

/// Groups that went through several generations in a short time.
fn rebalance_loops(out: &mut Vec<Hint>, s: &Stats) {
    for (g, acc) in &s.groups.map {
        let gens = &acc.generations;
        let looped = (0..gens.len()).find_map(|i| {
            let end = i + LOOP_GENERATIONS - 1;
            let (a, b) = (gens.get(i)?, gens.get(end)?);
            (b.ts - a.ts <= LOOP_WINDOW_S).then(|| gens.get(i..=end))?
        });
        if let Some(w) = looped {
            out.push(Hint {
                kind: "rebalance_loop",
                severity: "warning",
                message: format!(
                    "group {g:?} went through {} generations in {:.1} s ({} in all): members keep rejoining (session or poll timeouts?)",
                    w.len(),
                    w.last().map_or(0.0, |l| l.ts) - w.first().map_or(0.0, |f| f.ts),
                    gens.len()
                ),
                frames: w.iter().map(|e| e.join_response_frame).collect(),
            });
        }
    }
}

/// Metadata errors repeated for one topic.
fn repeated_errors(out: &mut Vec<Hint>, s: &Stats) {
    let mut repeated: BTreeMap<(&str, &Option<String>), Evidence> = BTreeMap::new();
    for (k, e) in &s.errors.map {
        if METADATA_ERRORS.contains(&&*k.name) {
            let ev = repeated.entry((&k.name, &k.topic)).or_default();
            ev.count += e.count;
            for f in [e.first, e.last] {
                if ev.first.len() < super::EVIDENCE && !ev.first.contains(&f) {
                    ev.first.push(f);
                }
                ev.last = ev.last.max(f);
            }
        }
    }
    for ((name, t), mut ev) in repeated {
        if ev.count >= REPEATED_ERRORS {
            ev.first.sort_unstable();
            out.push(Hint {
                kind: "repeated_error",
                severity: "warning",
                message: format!(
                    "{name} {} times for {}: stale metadata or a missing topic",
                    ev.count,
                    topic(t, &None)
                ),
                frames: ev.frames(),
            });
        }
    }
}
