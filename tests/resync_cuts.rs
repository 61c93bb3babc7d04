//! Captures cut inside a connection: what survives a mid-stream start.
//!
//! For every capture in `captures/` and, when present, `../shared/captures`,
//! each connection is replayed through the [`Pipeline`] from a cut: for each
//! direction, at byte offsets inside its first three messages, the capture is
//! made to start at the frame carrying that byte, with the bytes before it
//! removed from that frame. Everything earlier (both directions, the
//! handshake) is gone, so both directions start untrusted: the cut direction
//! at the cut byte, the other at the first payload byte after it.
//!
//! Against the uncut connection (the same frames from the start) the test
//! counts, per cut, the ideal (every uncut message whose first byte is at or
//! after the start of its direction in the cut capture), the survivors (framed
//! messages equal, offset for offset and byte for byte, to an uncut one) and
//! the invented (any other `Message` or `Partial`). It asserts that nothing is
//! invented and prints a table of the counts per capture.
//!
//! Offsets, sampled to keep the test under a minute in a debug build: every
//! byte of each of the first three messages when the message is at most 32
//! bytes; for a longer one, its first 16 bytes (the size and header, where
//! false boundaries are likeliest) and 16 evenly spaced offsets after them;
//! the first four connections (by address pair) of each capture. A replay stops once both directions framed a
//! message equal to the uncut one: from there both framers are trusted at true
//! boundaries, as in the uncut run, and the rest of the uncut messages are
//! counted as survivors.
//!
//! Frames are rebuilt from each capture's TCP segments as raw IP packets once
//! per capture; a cut changes only its first frame.

mod support;

use bytes::Bytes;
use kafkashark::capture::{Frame, LinkType};
use kafkashark::flow::Ports;
use kafkashark::pipeline::{Event, Pipeline, PipelineConfig};
use kafkashark::vocab::Direction;
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use support::{Seg, SYN};

/// The capture's TCP segments, or `None` when a payload was cut by the snaplen
/// (a cut capture would then hold gaps the uncut one explains differently).
fn segments(path: &Path) -> Option<Vec<Seg>> {
    support::try_extract(path).ok()
}

fn frame_of(s: &Seg) -> Frame {
    let ip = support::ip_packet(s);
    Frame {
        index: s.frame,
        ts: s.ts,
        caplen: ip.len() as u32,
        origlen: ip.len() as u32,
        link: LinkType::RAW,
        data: Bytes::from(ip),
        file_offset: None,
        capture: 0,
    }
}

/// One connection: its segments and frames in capture order, its broker.
struct Conn {
    segs: Vec<Seg>,
    frames: Vec<Frame>,
    broker: SocketAddr,
}

impl Conn {
    fn dir_of(&self, s: &Seg) -> Direction {
        if s.src == self.broker {
            Direction::BrokerToClient
        } else {
            Direction::ClientToBroker
        }
    }

    /// Sequence number of offset 0 of each direction in the uncut run.
    fn bases(&self) -> [Option<u32>; 2] {
        let mut b = [None; 2];
        for s in &self.segs {
            let i = self.dir_of(s).index();
            if b[i].is_none() && (s.syn() || !s.payload.is_empty()) {
                b[i] = Some(s.data_seq());
            }
        }
        b
    }

    fn config(&self) -> PipelineConfig {
        PipelineConfig::with_ports(Ports::List(vec![self.broker.port()]))
    }
}

/// Splits a capture into connections (by address pair); the broker of each is
/// what `Ports::Any` finds, else the lower port.
fn connections(segs: &[Seg]) -> Vec<Conn> {
    let key = |s: &Seg| {
        if s.src < s.dst {
            (s.src, s.dst)
        } else {
            (s.dst, s.src)
        }
    };
    let mut brokers = HashMap::new();
    let mut p = Pipeline::new(PipelineConfig::with_ports(Ports::Any));
    let mut out = Vec::new();
    for s in segs {
        p.push(frame_of(s), &mut out);
    }
    p.finish(&mut out);
    for e in &out {
        if let Event::StreamOpen(kafkashark::flow::Opened { client, broker, .. }) = e {
            let k = if client < broker {
                (*client, *broker)
            } else {
                (*broker, *client)
            };
            brokers.insert(k, *broker);
        }
    }
    let mut by: BTreeMap<(SocketAddr, SocketAddr), Vec<Seg>> = BTreeMap::new();
    for s in segs {
        by.entry(key(s)).or_default().push(s.clone());
    }
    by.into_iter()
        .map(|(k, segs)| {
            let broker = brokers
                .get(&k)
                .copied()
                .unwrap_or(if k.0.port() < k.1.port() { k.0 } else { k.1 });
            let frames = segs.iter().map(frame_of).collect();
            Conn {
                segs,
                frames,
                broker,
            }
        })
        .collect()
}

/// Messages of one run, per direction: `(stream offset, bytes)`, complete or partial.
#[derive(Default)]
struct Framed {
    whole: [Vec<(u64, Bytes)>; 2],
    partial: [Vec<(u64, Bytes)>; 2],
    streams: usize,
}

impl Framed {
    fn take(&mut self, e: &Event) {
        match e {
            Event::Message(m) => self.whole[m.dir.index()].push((m.stream_offset, m.bytes.clone())),
            Event::Partial(m) => {
                self.partial[m.dir.index()].push((m.stream_offset, m.bytes.clone()))
            }
            Event::StreamOpen(_) => self.streams += 1,
            _ => {}
        }
    }
}

fn run_uncut(c: &Conn) -> Framed {
    let mut p = Pipeline::new(c.config());
    let mut out = Vec::new();
    for f in &c.frames {
        p.push(f.clone(), &mut out);
    }
    p.finish(&mut out);
    let mut fr = Framed::default();
    out.iter().for_each(|e| fr.take(e));
    fr
}

/// Counts of one or more cuts.
#[derive(Clone, Copy, Default, Debug)]
struct Count {
    cuts: u64,
    ideal: u64,
    survived: u64,
    /// Invented requests and responses.
    invented: [u64; 2],
}

impl std::ops::AddAssign for Count {
    fn add_assign(&mut self, o: Count) {
        self.cuts += o.cuts;
        self.ideal += o.ideal;
        self.survived += o.survived;
        self.invented[0] += o.invented[0];
        self.invented[1] += o.invented[1];
    }
}

/// Offsets (uncut) to cut at inside message `[at, at + len)`.
fn offsets(at: u64, len: u64) -> Vec<u64> {
    if len <= 32 {
        return (at..at + len).collect();
    }
    let mut v: Vec<u64> = (at..at + 16).collect();
    let (lo, hi) = (at + 16, at + len);
    v.extend((0..16).map(|i| lo + (hi - lo) * i / 16));
    v.dedup();
    v
}

/// Replays `c` cut at uncut offset `cut` of direction `d`.
fn cut_run(c: &Conn, uncut: &Framed, bases: [Option<u32>; 2], d: Direction, cut: u64) -> Count {
    let Some(base) = bases[d.index()] else {
        return Count::default();
    };
    // The segment carrying the cut byte: the first, in capture order, that holds it.
    let Some(i) = c.segs.iter().position(|s| {
        let off = u64::from(s.data_seq().wrapping_sub(base));
        c.dir_of(s) == d && off <= cut && cut < off + s.payload.len() as u64
    }) else {
        return Count::default();
    };
    let s = &c.segs[i];
    let skip = cut - u64::from(s.data_seq().wrapping_sub(base));
    let first = Seg {
        seq: s.data_seq().wrapping_add(skip as u32),
        flags: s.flags & !SYN,
        payload: s.payload.slice(skip as usize..),
        ..s.clone()
    };
    let e = d.reverse();
    // Where the other direction starts in the cut capture (uncut offset).
    let mut start = [u64::MAX; 2];
    start[d.index()] = cut;
    let mut e_seen = false;
    if let Some(eb) = bases[e.index()] {
        if let Some(s) = c.segs[i + 1..]
            .iter()
            .find(|s| c.dir_of(s) == e && !s.payload.is_empty())
        {
            start[e.index()] = u64::from(s.data_seq().wrapping_sub(eb));
            e_seen = true;
        }
    }
    let mut p = Pipeline::new(c.config());
    let mut out = Vec::new();
    let mut count = Count {
        cuts: 1,
        ..Count::default()
    };
    let mut locked = [false, !e_seen];
    let mut locked_at = [None; 2];
    if d == Direction::BrokerToClient {
        locked.swap(0, 1);
    }
    let frames = std::iter::once(frame_of(&first)).chain(c.frames[i + 1..].iter().cloned());
    let mut done = false;
    for f in frames {
        p.push(f, &mut out);
        done = score(&out, uncut, start, &mut count, &mut locked, &mut locked_at);
        out.clear();
        if done {
            break;
        }
    }
    if !done {
        p.finish(&mut out);
        score(&out, uncut, start, &mut count, &mut locked, &mut locked_at);
    }
    for x in [Direction::ClientToBroker, Direction::BrokerToClient] {
        let k = x.index();
        let from = start[k];
        count.ideal += uncut.whole[k].iter().filter(|m| m.0 >= from).count() as u64;
        if let (Some(after), true) = (locked_at[k], done) {
            // The rest is framed as in the uncut run.
            count.survived += uncut.whole[k].iter().filter(|m| m.0 > after).count() as u64;
        }
    }
    count
}

/// Scores one batch of events; true once both directions are locked.
fn score(
    out: &[Event],
    uncut: &Framed,
    start: [u64; 2],
    count: &mut Count,
    locked: &mut [bool; 2],
    locked_at: &mut [Option<u64>; 2],
) -> bool {
    for e in out {
        let (m, whole) = match e {
            Event::Message(m) => (m, true),
            Event::Partial(m) => (m, false),
            _ => continue,
        };
        let k = m.dir.index();
        let off = m.stream_offset.saturating_add(start[k]);
        let set = if whole {
            &uncut.whole[k]
        } else {
            &uncut.partial[k]
        };
        let real = set
            .binary_search_by_key(&off, |x| x.0)
            .ok()
            .and_then(|j| set.get(j))
            .is_some_and(|x| x.1 == m.bytes);
        if !real {
            count.invented[k] += 1;
            let j = set.partition_point(|x| x.0 < off);
            let near: Vec<(u64, usize)> = set[j.saturating_sub(1)..(j + 1).min(set.len())]
                .iter()
                .map(|x| (x.0, x.1.len()))
                .collect();
            eprintln!(
                "  invented {:?} at {off} ({} bytes): {:02x?} start {start:?} uncut near {near:?}",
                m.dir,
                m.bytes.len(),
                &m.bytes[..m.bytes.len().min(16)]
            );
        } else if whole {
            count.survived += 1;
            locked[k] = true;
            locked_at[k] = Some(off);
        }
    }
    locked[0] && locked[1]
}

/// Connections cut per capture (the first ones, by address pair).
const CONNECTIONS: usize = 4;

/// Counts for one capture: `[requests cut, responses cut]`.
fn capture_counts(path: &Path) -> Option<[Count; 2]> {
    let segs = segments(path)?;
    let mut total = [Count::default(); 2];
    for c in connections(&segs).into_iter().take(CONNECTIONS) {
        let uncut = run_uncut(&c);
        if uncut.streams != 1 {
            continue; // no Kafka, or an address pair reused: not one stream to cut.
        }
        let bases = c.bases();
        for d in [Direction::ClientToBroker, Direction::BrokerToClient] {
            let msgs = &uncut.whole[d.index()];
            for &(at, ref b) in msgs.iter().take(3) {
                for cut in offsets(at, b.len() as u64) {
                    total[d.index()] += cut_run(&c, &uncut, bases, d, cut);
                }
            }
        }
    }
    Some(total)
}

fn row(name: &str, c: &[Count; 2]) {
    let cell = |c: &Count| {
        format!(
            "{:>6} {:>15} {:>5} {:>5}",
            c.cuts,
            format!("{}/{}", c.survived, c.ideal),
            c.invented[0],
            c.invented[1]
        )
    };
    println!("{name:<56} {} | {}", cell(&c[0]), cell(&c[1]));
}

#[test]
fn cut_captures_keep_every_message_and_invent_none() {
    let t0 = std::time::Instant::now();
    let mut all = [Count::default(); 2];
    println!(
        "{:<56} {:>6} {:>15} {:>5} {:>5} | {:>6} {:>15} {:>5} {:>5}",
        "capture (requests cut | responses cut)",
        "cuts",
        "survived/ideal",
        "inv-q",
        "inv-r",
        "cuts",
        "survived/ideal",
        "inv-q",
        "inv-r"
    );
    // RESYNC_CUTS=NAME runs only the captures whose file name contains NAME.
    let only = std::env::var("RESYNC_CUTS").unwrap_or_default();
    for path in support::unique_names(support::capture_files(true)) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.contains(&only) {
            continue;
        }
        let Some(c) = capture_counts(&path) else {
            println!("{name:<56} skipped: a payload cut by the snaplen");
            continue;
        };
        row(&name, &c);
        all[0] += c[0];
        all[1] += c[1];
    }
    row("TOTAL", &all);
    println!("({:.1} s)", t0.elapsed().as_secs_f64());
    let invented = all
        .iter()
        .map(|c| c.invented[0] + c.invented[1])
        .sum::<u64>();
    assert_eq!(invented, 0, "invented messages");
}
