//! Hostile TCP and link-layer variants of the real recorded captures.
//!
//! Each test takes a clean recorded capture (shipped in captures/), runs the
//! [`Analyzer`] on it for reference, then rewrites the same TCP segments into a
//! hostile capture — 1-byte segments, reordering, retransmissions and
//! overlaps, VLAN tags, another IP version, sequence numbers wrapping past
//! 2^32, other link types, pcapng, a start inside a message, a lost segment —
//! and checks that the same Kafka messages come out: same bytes, same
//! direction, api key/version, correlation id, pairing and decode results.
//! Frame numbers may differ; per direction the order of messages may not.
//!
//! The rewriting is seeded, so every run builds the same files. Every test
//! skips (with a line on stderr) when ../shared/captures is absent.

mod support;

use bytes::Bytes;
use kafkashark::analyzer::{MessageRecord, Notice};
use kafkashark::flow::Ports;
use kafkashark::kafka::decode::Kind;
use kafkashark::pipeline::Event;
use kafkashark::vocab::Timestamp;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::SocketAddr;
use support::{
    analyze, extract, map_addrs, recorded, v4_to_v6, v6_to_v4_map, write_capture, Analysis, Format,
    Link, Seg, ACK, FIN, PSH, RST, SYN,
};

const A1: &str = "a1-kcat-produce-consume-group.pcap";
const A5: &str = "a5-ipv6-confluent-admin-produce-consume.pcap";
const A6: &str = "a6-confluent-multisegment-pdus.pcap";

// ---------------------------------------------------------------------------
// What must survive a rewrite.

/// FNV-1a, to name a message's bytes in identities and failure messages.
fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A message's identity across captures: connection, direction, correlation id, bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Id {
    client: SocketAddr,
    broker: SocketAddr,
    request: bool,
    corr: Option<i32>,
    len: usize,
    hash: u64,
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}{}{} corr {:?} ({} bytes, #{:016x})",
            if self.request { "request" } else { "response" },
            self.client,
            if self.request { "->" } else { "<-" },
            self.broker,
            self.corr,
            self.len,
            self.hash
        )
    }
}

/// The facts compared between the clean and the hostile run.
#[derive(Clone)]
struct Msg {
    id: Id,
    /// Frame numbers in the capture the message came from (for failure messages only).
    first_frame: u64,
    frame: u64,
    stream: u64,
    bytes: Bytes,
    api_key: Option<i16>,
    api_version: Option<i16>,
    client_id: Option<String>,
    paired: bool,
    peer: Option<Id>,
    inferred: bool,
    expects_response: bool,
    throttle_time_ms: Option<i32>,
    error_codes: Vec<i16>,
    decode_error: Option<String>,
}

impl Msg {
    fn key(&self) -> (SocketAddr, SocketAddr, bool) {
        (self.id.client, self.id.broker, self.id.request)
    }
}

fn id_of(r: &MessageRecord, map: &dyn Fn(SocketAddr) -> SocketAddr) -> Id {
    Id {
        client: map(r.info.client),
        broker: map(r.info.broker),
        request: r.info.kind == Kind::Request,
        corr: r.info.correlation_id,
        len: r.raw.bytes.len(),
        hash: fnv(&r.raw.bytes),
    }
}

/// The messages of an analysis, with addresses passed through `map`.
fn messages(a: &Analysis, map: &dyn Fn(SocketAddr) -> SocketAddr) -> Vec<Msg> {
    let by_index: HashMap<u64, Id> = a
        .messages
        .iter()
        .map(|r| (r.info.index, id_of(r, map)))
        .collect();
    a.messages
        .iter()
        .map(|r| {
            let i = &r.info;
            assert_eq!(
                r.raw.bytes.len(),
                4 + usize::try_from(i.length).unwrap(),
                "message bytes = size prefix + size"
            );
            Msg {
                id: id_of(r, map),
                first_frame: i.first_frame,
                frame: i.frame,
                stream: i.stream,
                bytes: r.raw.bytes.clone(),
                api_key: i.api_key.map(|k| k.0),
                api_version: i.api_version,
                client_id: i.client_id.clone(),
                paired: i.paired,
                peer: i.peer.map(|p| by_index[&p]),
                inferred: i.inferred,
                expects_response: i.expects_response,
                throttle_time_ms: i.throttle_time_ms,
                error_codes: i.error_codes.clone(),
                decode_error: i.decode_error.clone(),
            }
        })
        .collect()
}

/// Requests reported unanswered, as identities, sorted.
fn unanswered(a: &Analysis, map: &dyn Fn(SocketAddr) -> SocketAddr) -> Vec<Id> {
    let by_index: HashMap<u64, Id> = a
        .messages
        .iter()
        .map(|r| (r.info.index, id_of(r, map)))
        .collect();
    let mut v: Vec<Id> = a
        .notices
        .iter()
        .filter_map(|n| match n {
            Notice::Unanswered { request, .. } => Some(by_index[&request.index]),
            _ => None,
        })
        .collect();
    v.sort();
    v
}

/// Partial messages reported: (connection, direction, correlation id, bytes received, missing).
fn partials(a: &Analysis, map: &dyn Fn(SocketAddr) -> SocketAddr) -> Vec<(Id, Bytes, u64)> {
    let streams = stream_addrs(a);
    a.notices
        .iter()
        .filter_map(|n| match n {
            Notice::Stream(Event::Partial(m)) => {
                let (client, broker) = streams[&m.stream];
                Some((
                    Id {
                        client: map(client),
                        broker: map(broker),
                        request: m.is_request(),
                        corr: m.correlation_id(),
                        len: m.bytes.len(),
                        hash: fnv(&m.bytes),
                    },
                    m.bytes.clone(),
                    m.missing,
                ))
            }
            _ => None,
        })
        .collect()
}

/// Connection index → (client, broker), from the messages seen on it.
fn stream_addrs(a: &Analysis) -> HashMap<u64, (SocketAddr, SocketAddr)> {
    a.messages
        .iter()
        .map(|r| (r.info.stream, (r.info.client, r.info.broker)))
        .collect()
}

/// Counts of stream trouble: (gaps, partials, resyncs, discarded, warnings).
fn trouble(a: &Analysis) -> (usize, usize, usize, usize, usize) {
    let mut t = (0, 0, 0, 0, 0);
    for n in &a.notices {
        match n {
            Notice::Stream(Event::Gap { .. }) => t.0 += 1,
            Notice::Stream(Event::Partial(_)) => t.1 += 1,
            Notice::Stream(Event::Resync { .. }) => t.2 += 1,
            Notice::Stream(Event::Discarded { .. }) => t.3 += 1,
            // Late segments are reported, not trouble: reordering loses nothing.
            Notice::Stream(Event::Warning {
                what: kafkashark::pipeline::Warning::Reordered { .. },
                ..
            }) => {}
            Notice::Stream(Event::Warning { .. }) => t.4 += 1,
            _ => {}
        }
    }
    t
}

/// How closely a hostile message must match its clean twin.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Match {
    /// Every compared fact is the same.
    Exact,
    /// A response whose request was not captured: same bytes, and unpaired.
    RequestLost,
}

/// Compares one message with its expected twin; pushes what differs.
fn compare(label: &str, want: &Msg, how: Match, got: &Msg, errs: &mut Vec<String>) {
    let mut d: Vec<String> = Vec::new();
    if want.id != got.id {
        d.push(format!("identity {:?}", got.id));
    }
    if want.bytes != got.bytes {
        let at = want
            .bytes
            .iter()
            .zip(got.bytes.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(want.bytes.len().min(got.bytes.len()));
        d.push(format!("bytes differ from offset {at}"));
    }
    match how {
        Match::Exact => {
            macro_rules! same {
                ($f:ident) => {
                    if want.$f != got.$f {
                        d.push(format!(
                            "{}: want {:?}, got {:?}",
                            stringify!($f),
                            want.$f,
                            got.$f
                        ));
                    }
                };
            }
            same!(api_key);
            same!(api_version);
            same!(client_id);
            same!(paired);
            same!(peer);
            same!(inferred);
            same!(expects_response);
            same!(throttle_time_ms);
            same!(error_codes);
            same!(decode_error);
        }
        Match::RequestLost => {
            if got.paired {
                d.push("paired, but its request was not captured".into());
            }
        }
    }
    if !d.is_empty() {
        errs.push(format!(
            "{label}: {:?} (clean frames {}..{}, hostile frames {}..{}): {}",
            want.id,
            want.first_frame,
            want.frame,
            got.first_frame,
            got.frame,
            d.join("; ")
        ));
    }
}

/// Compares per connection direction, in stream order.
fn compare_all(label: &str, want: &[(Msg, Match)], got: &[Msg]) -> Vec<String> {
    type Dir = (SocketAddr, SocketAddr, bool);
    let mut w: BTreeMap<Dir, Vec<&(Msg, Match)>> = BTreeMap::new();
    for m in want {
        w.entry(m.0.key()).or_default().push(m);
    }
    let mut g: BTreeMap<Dir, Vec<&Msg>> = BTreeMap::new();
    for m in got {
        g.entry(m.key()).or_default().push(m);
    }
    let mut errs = Vec::new();
    for (k, wl) in &w {
        let gl = g.get(k).map(Vec::as_slice).unwrap_or_default();
        for (i, (wm, how)) in wl.iter().map(|x| (&x.0, x.1)).enumerate() {
            match gl.get(i) {
                Some(gm) => compare(label, wm, how, gm, &mut errs),
                None => errs.push(format!("{label}: missing {:?}", wm.id)),
            }
        }
        for gm in gl.iter().skip(wl.len()) {
            errs.push(format!(
                "{label}: unexpected {:?} (frames {}..{})",
                gm.id, gm.first_frame, gm.frame
            ));
        }
    }
    for (k, gl) in &g {
        if !w.contains_key(k) {
            for gm in gl {
                errs.push(format!(
                    "{label}: unexpected {:?} on a direction with no messages expected",
                    gm.id
                ));
            }
        }
    }
    errs
}

fn fail_if(label: &str, errs: Vec<String>) {
    if !errs.is_empty() {
        let n = errs.len();
        let shown: Vec<String> = errs.into_iter().take(25).collect();
        panic!(
            "{label}: {n} difference(s) from the clean capture:\n  {}",
            shown.join("\n  ")
        );
    }
}

// ---------------------------------------------------------------------------
// The clean reference and the lossless check.

struct Clean {
    name: &'static str,
    segs: Vec<Seg>,
    analysis: Analysis,
}

fn ports() -> Ports {
    Ports::List(vec![9092])
}

fn clean(name: &'static str) -> Option<Clean> {
    let path = recorded(name)?;
    let segs = extract(&path);
    let analysis = analyze(&path, ports());
    assert!(!analysis.messages.is_empty(), "{name}: no messages");
    assert_eq!(
        trouble(&analysis),
        (0, 0, 0, 0, 0),
        "{name}: the clean capture has gaps, partials, resyncs or warnings"
    );
    Some(Clean {
        name,
        segs,
        analysis,
    })
}

fn same_addr(a: SocketAddr) -> SocketAddr {
    a
}

/// Writes `segs`, analyses the file, and checks that exactly the clean messages come
/// out (addresses of the clean run mapped through `map`). With `same_order`, the
/// global order of messages and their connection numbers must also be unchanged.
fn check_lossless(
    c: &Clean,
    variant: &str,
    segs: &[Seg],
    link: &Link,
    format: Format,
    map: &dyn Fn(SocketAddr) -> SocketAddr,
    same_order: bool,
) -> Analysis {
    let label = format!("{} [{variant}]", c.name);
    let file = write_capture(&label, segs, link, format);
    let a = analyze(&file.path, ports());
    assert_eq!(a.frames, segs.len() as u64, "{label}: frames read back");
    let want: Vec<(Msg, Match)> = messages(&c.analysis, map)
        .into_iter()
        .map(|m| (m, Match::Exact))
        .collect();
    let got = messages(&a, &same_addr);
    let mut errs = compare_all(&label, &want, &got);
    if trouble(&a) != (0, 0, 0, 0, 0) {
        errs.push(format!(
            "{label}: stream trouble (gaps, partials, resyncs, discarded, warnings) = {:?}",
            trouble(&a)
        ));
    }
    if a.stats.flow.overlap_conflicts != 0 || a.stats.flow.gaps != 0 {
        errs.push(format!(
            "{label}: reassembly saw {} overlap conflict(s) and {} gap(s) in lossless input",
            a.stats.flow.overlap_conflicts, a.stats.flow.gaps
        ));
    }
    if unanswered(&c.analysis, map) != unanswered(&a, &same_addr) {
        errs.push(format!(
            "{label}: unanswered requests differ: want {:?}, got {:?}",
            unanswered(&c.analysis, map),
            unanswered(&a, &same_addr)
        ));
    }
    if same_order && errs.is_empty() {
        let order =
            |ms: &[Msg]| -> Vec<(u64, Id)> { ms.iter().map(|m| (m.stream, m.id)).collect() };
        let w: Vec<Msg> = want.iter().map(|x| x.0.clone()).collect();
        if order(&w) != order(&got) {
            errs.push(format!(
                "{label}: global message order or connection numbers differ"
            ));
        }
    }
    fail_if(&label, errs);
    a
}

// ---------------------------------------------------------------------------
// Rewrites.

fn dir_of(s: &Seg) -> (SocketAddr, SocketAddr) {
    (s.src, s.dst)
}

fn is_plain_data(s: &Seg) -> bool {
    !s.payload.is_empty() && s.flags & (SYN | FIN | RST) == 0
}

/// Splits payloads into pieces of `1..=max` bytes (random lengths), for segments that
/// `pick` selects. FIN stays on the last piece; all pieces keep the segment's time.
fn resegment(segs: &[Seg], rng: &mut StdRng, max: usize, pick: &dyn Fn(&Seg) -> bool) -> Vec<Seg> {
    let mut out = Vec::with_capacity(segs.len());
    for s in segs {
        if s.payload.len() <= 1 || s.syn() || !pick(s) {
            out.push(s.clone());
            continue;
        }
        let mut at = 0;
        while at < s.payload.len() {
            let n = rng.gen_range(1..=max).min(s.payload.len() - at);
            let last = at + n == s.payload.len();
            let mut flags = s.flags & !(FIN | PSH);
            if last {
                flags |= s.flags & (FIN | PSH);
            }
            out.push(Seg {
                seq: s.seq.wrapping_add(at as u32),
                flags,
                payload: s.payload.slice(at..at + n),
                ..s.clone()
            });
            at += n;
        }
    }
    out
}

/// Shuffles windows of 2-5 consecutive data segments of one direction. Each position
/// keeps its time, so times stay monotonic and holes last only a few packets.
fn reorder(segs: Vec<Seg>, rng: &mut StdRng) -> (Vec<Seg>, usize) {
    let times: Vec<Timestamp> = segs.iter().map(|s| s.ts).collect();
    let mut segs = segs;
    let mut moved = 0;
    let mut i = 0;
    while i < segs.len() {
        if !is_plain_data(&segs[i]) {
            i += 1;
            continue;
        }
        let want = rng.gen_range(2..=5);
        let mut j = i + 1;
        while j < segs.len()
            && j - i < want
            && is_plain_data(&segs[j])
            && dir_of(&segs[j]) == dir_of(&segs[i])
        {
            j += 1;
        }
        let span = times[j - 1].nanos_since(times[i]);
        if j - i >= 2 && span < 1_000_000_000 {
            let before: Vec<u32> = segs[i..j].iter().map(|s| s.seq).collect();
            segs[i..j].shuffle(rng);
            moved += segs[i..j]
                .iter()
                .zip(&before)
                .filter(|(s, b)| s.seq != **b)
                .count();
        }
        i = j;
    }
    for (s, t) in segs.iter_mut().zip(times) {
        s.ts = t;
    }
    (segs, moved)
}

/// Duplicates about `rate` of the data segments: exact copies a few packets later,
/// copies of a prefix or a suffix, and copies spanning the tail of one segment and
/// the head of the next one of the same direction (placed before or after that next
/// one). Every copy carries the bytes the original had at those sequence numbers.
fn retransmit(segs: &[Seg], rng: &mut StdRng, rate: f64) -> (Vec<Seg>, usize) {
    // (position after which to insert, segment)
    let mut extra: Vec<(usize, Seg)> = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        if !is_plain_data(s) || !rng.gen_bool(rate) {
            continue;
        }
        let n = s.payload.len();
        let copy = |seq_off: usize, payload: Bytes| Seg {
            seq: s.seq.wrapping_add(seq_off as u32),
            flags: ACK | PSH,
            payload,
            ..s.clone()
        };
        match rng.gen_range(0..4) {
            0 => {
                let at = (i + rng.gen_range(0..=3)).min(segs.len() - 1);
                extra.push((at, s.clone()));
            }
            1 if n >= 2 => {
                let k = rng.gen_range(1..n);
                extra.push((i, copy(k, s.payload.slice(k..))));
            }
            2 if n >= 2 => {
                let k = rng.gen_range(1..n);
                extra.push((i, copy(0, s.payload.slice(..k))));
            }
            _ => {
                // The next data segment of this direction that continues this one.
                let end = s.seq.wrapping_add(n as u32);
                let Some((j, next)) = segs
                    .iter()
                    .enumerate()
                    .skip(i + 1)
                    .find(|(_, t)| dir_of(t) == dir_of(s) && !t.payload.is_empty())
                else {
                    extra.push((i, s.clone()));
                    continue;
                };
                if next.seq != end || next.syn() {
                    extra.push((i, s.clone()));
                    continue;
                }
                let k = rng.gen_range(0..n);
                let m = rng.gen_range(1..=next.payload.len());
                let mut p = Vec::with_capacity(n - k + m);
                p.extend_from_slice(&s.payload[k..]);
                p.extend_from_slice(&next.payload[..m]);
                let at = if rng.gen_bool(0.5) { i } else { j };
                extra.push((at, copy(k, Bytes::from(p))));
            }
        }
    }
    let added = extra.len();
    let mut by_pos: BTreeMap<usize, Vec<Seg>> = BTreeMap::new();
    for (at, s) in extra {
        by_pos.entry(at).or_default().push(s);
    }
    let mut out = Vec::with_capacity(segs.len() + added);
    for (i, s) in segs.iter().enumerate() {
        out.push(s.clone());
        for mut d in by_pos.remove(&i).unwrap_or_default() {
            d.ts = s.ts; // keep times monotonic: a copy is seen right after position i
            out.push(d);
        }
    }
    (out, added)
}

/// Shifts each direction's sequence numbers so its initial one lies just below
/// 2^32 and the numbers wrap half way through its bytes; acknowledgment numbers
/// follow the other direction's shift. Returns the segments and the number of
/// directions that wrap.
fn wrap_seqs(segs: &[Seg]) -> (Vec<Seg>, usize) {
    let mut isn: HashMap<(SocketAddr, SocketAddr), u32> = HashMap::new();
    let mut bytes: HashMap<(SocketAddr, SocketAddr), u64> = HashMap::new();
    for s in segs {
        isn.entry(dir_of(s)).or_insert(s.seq);
        if s.syn() {
            isn.insert(dir_of(s), s.seq);
        }
        *bytes.entry(dir_of(s)).or_default() += s.payload.len() as u64;
    }
    let shift: HashMap<(SocketAddr, SocketAddr), u32> = isn
        .iter()
        .map(|(d, &i)| {
            let half = u32::try_from(bytes[d] / 2).unwrap();
            let new_isn = 0u32.wrapping_sub(half).wrapping_sub(1);
            (*d, new_isn.wrapping_sub(i))
        })
        .collect();
    let wrapping = bytes.values().filter(|&&b| b >= 4).count();
    let out = segs
        .iter()
        .map(|s| {
            let back = (s.dst, s.src);
            Seg {
                seq: s.seq.wrapping_add(shift[&dir_of(s)]),
                ack: if s.flags & ACK != 0 {
                    s.ack.wrapping_add(shift.get(&back).copied().unwrap_or(0))
                } else {
                    s.ack
                },
                ..s.clone()
            }
        })
        .collect();
    (out, wrapping)
}

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn eth() -> Link {
    Link::Ethernet(Vec::new())
}

// ---------------------------------------------------------------------------
// The toolkit itself.

/// Every link layer and container the tests write reads back, frame by frame, as
/// the segments it was written from (through kafkashark's own capture layer), with
/// the link type and the VLAN tags really in the file.
#[test]
fn written_captures_read_back_as_written() {
    let Some(path) = recorded(A5) else { return };
    let v6 = extract(&path);
    let table = v6_to_v4_map(&v6);
    let v4 = map_addrs(&v6, &|a| SocketAddr::new(table[&a.ip()], a.port()));
    let (wrapped, _) = wrap_seqs(&v4);
    // libpcap reports the DLT, which for LINKTYPE_RAW (101) is DLT_RAW (12).
    let links: [(Link, &[u32]); 7] = [
        (eth(), &[1]),
        (Link::Ethernet(vec![(0x8100, 100)]), &[1]),
        (Link::Ethernet(vec![(0x88a8, 200), (0x8100, 300)]), &[1]),
        (Link::Sll2, &[276]),
        (Link::Null, &[0]),
        (Link::Loop, &[108]),
        (Link::Raw, &[101, 12]),
    ];
    let formats = [
        Format::PcapMicros,
        Format::PcapNanos,
        Format::PcapngMicros,
        Format::PcapngNanos,
    ];
    for segs in [&v6, &wrapped] {
        for (link, numbers) in &links {
            for format in formats {
                let label = format!("{link:?} {format:?}");
                let file = write_capture(&label, segs, link, format);
                let mut src = kafkashark::capture::FileSource::open(file.path_str()).unwrap();
                use kafkashark::capture::FrameSource;
                assert!(
                    numbers.contains(&src.link().0),
                    "{label}: link type {}",
                    src.link().0
                );
                let first = src.next_frame().unwrap().unwrap();
                if let Link::Ethernet(tags) = link {
                    for (i, (tpid, vid)) in tags.iter().enumerate() {
                        let at = 12 + 4 * i;
                        assert_eq!(&first.data[at..at + 2], &tpid.to_be_bytes(), "{label}");
                        assert_eq!(&first.data[at + 2..at + 4], &vid.to_be_bytes(), "{label}");
                    }
                }
                let back = extract(&file.path);
                assert_eq!(back.len(), segs.len(), "{label}: frames");
                for (i, (w, g)) in segs.iter().zip(&back).enumerate() {
                    let what = format!("{label}: segment {i}");
                    assert_eq!(
                        (g.src, g.dst, g.seq, g.ack),
                        (w.src, w.dst, w.seq, w.ack),
                        "{what}"
                    );
                    assert_eq!(g.flags & !PSH, w.flags & !PSH, "{what}: flags");
                    assert_eq!(g.payload, w.payload, "{what}: payload");
                    assert_eq!(g.ts, w.ts, "{what}: time (a5 has microsecond stamps)");
                    assert_eq!(g.frame, i as u64 + 1, "{what}: frame number");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Lossless variants.

/// The rewrite itself changes nothing: same segments, same link, pcap.
#[test]
fn identity_rewrite_is_lossless() {
    for name in [A1, A5, A6] {
        let Some(c) = clean(name) else { return };
        let link = eth();
        check_lossless(
            &c,
            "rewritten as is",
            &c.segs,
            &link,
            Format::PcapMicros,
            &same_addr,
            true,
        );
        check_lossless(
            &c,
            "pcap ns",
            &c.segs,
            &link,
            Format::PcapNanos,
            &same_addr,
            true,
        );
        check_lossless(
            &c,
            "pcapng us",
            &c.segs,
            &link,
            Format::PcapngMicros,
            &same_addr,
            true,
        );
        check_lossless(
            &c,
            "pcapng ns",
            &c.segs,
            &link,
            Format::PcapngNanos,
            &same_addr,
            true,
        );
    }
}

#[test]
fn single_byte_segments_a1() {
    let Some(c) = clean(A1) else { return };
    let segs = resegment(&c.segs, &mut rng(1), 1, &|_| true);
    let bytes: usize = c.segs.iter().map(|s| s.payload.len()).sum();
    let data = segs.iter().filter(|s| !s.payload.is_empty()).count();
    assert_eq!(data, bytes, "one segment per payload byte");
    check_lossless(
        &c,
        "1-byte segments",
        &segs,
        &eth(),
        Format::PcapNanos,
        &same_addr,
        true,
    );
}

#[test]
fn single_byte_segments_a5() {
    let Some(c) = clean(A5) else { return };
    let segs = resegment(&c.segs, &mut rng(5), 1, &|_| true);
    check_lossless(
        &c,
        "1-byte segments",
        &segs,
        &eth(),
        Format::PcapNanos,
        &same_addr,
        true,
    );
}

/// a6 is 1.7 MB: 1-byte segments for its first 50 KB of payload, random 1-1460
/// byte segments for all of it.
#[test]
fn small_segments_a6() {
    let Some(c) = clean(A6) else { return };
    let mut seen = 0usize;
    let mut first_50k = std::collections::HashSet::new();
    for s in &c.segs {
        if seen < 50_000 {
            first_50k.insert(s.frame);
        }
        seen += s.payload.len();
    }
    let segs = resegment(&c.segs, &mut rng(6), 1, &|s| first_50k.contains(&s.frame));
    check_lossless(
        &c,
        "1-byte segments, first 50 KB",
        &segs,
        &eth(),
        Format::PcapNanos,
        &same_addr,
        true,
    );
    let segs = resegment(&c.segs, &mut rng(60), 1460, &|_| true);
    check_lossless(
        &c,
        "1..1460-byte segments",
        &segs,
        &eth(),
        Format::PcapNanos,
        &same_addr,
        true,
    );
}

#[test]
fn reordered_segments() {
    for (name, seed, max) in [(A1, 11u64, 40usize), (A5, 15, 40), (A6, 16, 4000)] {
        let Some(c) = clean(name) else { return };
        let mut r = rng(seed);
        let small = resegment(&c.segs, &mut r, max, &|_| true);
        let (segs, moved) = reorder(small, &mut r);
        assert!(moved > 100, "{name}: only {moved} segments moved");
        // Reordering inside one direction's run keeps every message's completion in place.
        check_lossless(
            &c,
            "reordered",
            &segs,
            &eth(),
            Format::PcapNanos,
            &same_addr,
            true,
        );
        // The original segmentation, reordered where runs exist.
        let (segs, _) = reorder(c.segs.clone(), &mut r);
        check_lossless(
            &c,
            "reordered, original segments",
            &segs,
            &eth(),
            Format::PcapNanos,
            &same_addr,
            true,
        );
    }
}

#[test]
fn retransmitted_and_overlapping_segments() {
    for (name, seed, max) in [(A1, 21u64, 60usize), (A5, 25, 60), (A6, 26, 6000)] {
        let Some(c) = clean(name) else { return };
        let mut r = rng(seed);
        let (segs, added) = retransmit(&c.segs, &mut r, 0.2);
        assert!(added > 10, "{name}: only {added} copies");
        let clean_retrans = c.analysis.stats.flow.retransmitted_bytes;
        let a = check_lossless(
            &c,
            "retransmissions",
            &segs,
            &eth(),
            Format::PcapNanos,
            &same_addr,
            false,
        );
        assert!(
            a.stats.flow.retransmitted_bytes > clean_retrans,
            "{name}: the copies were not seen as retransmissions"
        );
        // Smaller segments give more overlaps; then reorder on top.
        let small = resegment(&c.segs, &mut r, max, &|_| true);
        let (segs, _) = retransmit(&small, &mut r, 0.2);
        let (segs, _) = reorder(segs, &mut r);
        check_lossless(
            &c,
            "small segments, retransmitted, reordered",
            &segs,
            &eth(),
            Format::PcapNanos,
            &same_addr,
            false,
        );
    }
}

#[test]
fn vlan_and_qinq_tags() {
    for name in [A1, A5, A6] {
        let Some(c) = clean(name) else { return };
        let vlan = Link::Ethernet(vec![(0x8100, 100)]);
        check_lossless(
            &c,
            "802.1Q",
            &c.segs,
            &vlan,
            Format::PcapMicros,
            &same_addr,
            true,
        );
        let qinq = Link::Ethernet(vec![(0x88a8, 200), (0x8100, 300)]);
        check_lossless(
            &c,
            "QinQ 802.1ad+802.1Q",
            &c.segs,
            &qinq,
            Format::PcapMicros,
            &same_addr,
            true,
        );
        let q_in_q = Link::Ethernet(vec![(0x8100, 10), (0x8100, 20)]);
        check_lossless(
            &c,
            "QinQ 802.1Q+802.1Q",
            &c.segs,
            &q_in_q,
            Format::PcapngNanos,
            &same_addr,
            true,
        );
    }
}

#[test]
fn ipv4_to_ipv6() {
    for name in [A1, A6] {
        let Some(c) = clean(name) else { return };
        let segs = map_addrs(&c.segs, &v4_to_v6);
        assert!(segs.iter().all(|s| s.src.is_ipv6()));
        check_lossless(
            &c,
            "IPv6",
            &segs,
            &eth(),
            Format::PcapMicros,
            &v4_to_v6,
            true,
        );
        let vlan = Link::Ethernet(vec![(0x8100, 7)]);
        check_lossless(
            &c,
            "IPv6 in 802.1Q",
            &segs,
            &vlan,
            Format::PcapMicros,
            &v4_to_v6,
            true,
        );
    }
}

#[test]
fn ipv6_to_ipv4() {
    let Some(c) = clean(A5) else { return };
    assert!(c.segs.iter().all(|s| s.src.is_ipv6()), "a5 is IPv6");
    let table = v6_to_v4_map(&c.segs);
    let map = move |a: SocketAddr| SocketAddr::new(table[&a.ip()], a.port());
    let segs = map_addrs(&c.segs, &map);
    check_lossless(&c, "IPv4", &segs, &eth(), Format::PcapMicros, &map, true);
}

#[test]
fn sequence_numbers_wrap_past_2_32() {
    for name in [A1, A5, A6] {
        let Some(c) = clean(name) else { return };
        let (segs, wrapping) = wrap_seqs(&c.segs);
        assert!(wrapping >= 4, "{name}: only {wrapping} directions wrap");
        // Some data segment straddles or follows the wrap.
        assert!(segs
            .iter()
            .any(|s| !s.payload.is_empty() && s.seq < 1 << 20));
        check_lossless(
            &c,
            "seq wrap",
            &segs,
            &eth(),
            Format::PcapMicros,
            &same_addr,
            true,
        );
        let mut r = rng(31);
        let small = resegment(&segs, &mut r, if name == A6 { 3000 } else { 30 }, &|_| true);
        let (segs, _) = retransmit(&small, &mut r, 0.2);
        let (segs, _) = reorder(segs, &mut r);
        check_lossless(
            &c,
            "seq wrap, small segments, retransmitted, reordered",
            &segs,
            &eth(),
            Format::PcapNanos,
            &same_addr,
            false,
        );
    }
}

#[test]
fn other_link_types() {
    for name in [A1, A5, A6] {
        let Some(c) = clean(name) else { return };
        for (label, link) in [
            ("Linux SLL2", Link::Sll2),
            ("BSD NULL", Link::Null),
            ("OpenBSD LOOP", Link::Loop),
            ("raw IP 101", Link::Raw),
        ] {
            check_lossless(
                &c,
                label,
                &c.segs,
                &link,
                Format::PcapMicros,
                &same_addr,
                true,
            );
            check_lossless(
                &c,
                &format!("{label}, pcapng"),
                &c.segs,
                &link,
                Format::PcapngNanos,
                &same_addr,
                true,
            );
        }
    }
}

/// a4 is SLL2 already: rewritten as Ethernet and as raw IP it reads the same.
#[test]
fn sll2_capture_to_ethernet_and_raw() {
    let Some(c) = clean("a4-kafkajs-produce-consume-sll2.pcap") else {
        return;
    };
    check_lossless(
        &c,
        "SLL2 as Ethernet",
        &c.segs,
        &eth(),
        Format::PcapMicros,
        &same_addr,
        true,
    );
    check_lossless(
        &c,
        "SLL2 as raw IP",
        &c.segs,
        &Link::Raw,
        Format::PcapngMicros,
        &same_addr,
        true,
    );
}

/// Everything at once on a6: IPv6, QinQ, wrapped sequence numbers, small segments,
/// retransmissions and reordering, pcapng.
#[test]
fn everything_at_once_a6() {
    let Some(c) = clean(A6) else { return };
    let mut r = rng(99);
    let segs = map_addrs(&c.segs, &v4_to_v6);
    let (segs, _) = wrap_seqs(&segs);
    let segs = resegment(&segs, &mut r, 2000, &|_| true);
    let (segs, _) = retransmit(&segs, &mut r, 0.2);
    let (segs, _) = reorder(segs, &mut r);
    let qinq = Link::Ethernet(vec![(0x88a8, 1), (0x8100, 2)]);
    check_lossless(
        &c,
        "everything",
        &segs,
        &qinq,
        Format::PcapngNanos,
        &v4_to_v6,
        false,
    );
}

// ---------------------------------------------------------------------------
// Lossy variants on a6.

/// The a6 message (by its clean-run record) that `pred` selects; panics if not exactly one.
fn pick<'a>(c: &'a Clean, what: &str, pred: &dyn Fn(&MessageRecord) -> bool) -> &'a MessageRecord {
    let found: Vec<&MessageRecord> = c.analysis.messages.iter().filter(|m| pred(m)).collect();
    assert_eq!(found.len(), 1, "{}: {what}: expected one message", c.name);
    found[0]
}

/// Frames of the clean capture that carry payload of `m`, in order.
fn frames_of(m: &MessageRecord) -> Vec<u64> {
    // An empty provenance: every byte came in the first frame.
    if m.raw.provenance.is_empty() {
        return vec![m.raw.first_frame];
    }
    let mut f: Vec<u64> = m.raw.provenance.iter().map(|&(_, f)| f).collect();
    f.dedup();
    f
}

/// The capture starts at clean frame `cut` (frames before it dropped). Messages whose
/// first byte came before the cut are lost; every other one comes out, paired
/// exactly when its request is after the cut.
fn check_cut(c: &Clean, cut: u64, expect_lost: usize) {
    let label = format!("{} [starts at frame {cut}]", c.name);
    let segs: Vec<Seg> = c.segs.iter().filter(|s| s.frame >= cut).cloned().collect();
    let file = write_capture(&label, &segs, &eth(), Format::PcapMicros);
    let a = analyze(&file.path, ports());
    let clean_msgs = messages(&c.analysis, &same_addr);
    let lost: Vec<&Msg> = clean_msgs.iter().filter(|m| m.first_frame < cut).collect();
    assert_eq!(
        lost.len(),
        expect_lost,
        "{label}: messages starting before the cut: {:?}",
        lost.iter().map(|m| m.id).collect::<Vec<_>>()
    );
    let lost_ids: std::collections::HashSet<Id> = lost.iter().map(|m| m.id).collect();
    let want: Vec<(Msg, Match)> = clean_msgs
        .iter()
        .filter(|m| m.first_frame >= cut)
        .map(|m| {
            let how = match m.peer {
                Some(p) if !m.id.request && lost_ids.contains(&p) => Match::RequestLost,
                _ => Match::Exact,
            };
            (m.clone(), how)
        })
        .collect();
    assert!(
        want.iter().any(|w| w.1 == Match::RequestLost),
        "{label}: the cut should orphan at least one response"
    );
    let got = messages(&a, &same_addr);
    let errs = compare_all(&label, &want, &got);
    fail_if(&label, errs);
    // Nothing lost after the cut is reported unanswered that was answered before.
    let want_unanswered: Vec<Id> = unanswered(&c.analysis, &same_addr)
        .into_iter()
        .filter(|id| !lost_ids.contains(id))
        .collect();
    assert_eq!(
        unanswered(&a, &same_addr),
        want_unanswered,
        "{label}: unanswered"
    );
}

/// The capture starts inside the second segment of a ~117 KB Produce request (3
/// segments): the request direction resynchronises on the next request.
#[test]
fn starts_inside_a_multi_segment_produce_request() {
    let Some(c) = clean(A6) else { return };
    let idx = first_multi(&c, 0, Kind::Request);
    let m = pick(&c, "first multi-segment Produce request", &|m| {
        m.info.index == idx
    });
    let frames = frames_of(m);
    let cut = frames[1];
    assert_eq!((m.info.correlation_id, frames.len(), cut), (Some(2), 3, 21));
    // Lost: the 4 messages of the first connection, and on the producer's connection
    // the ApiVersions request and response and the cut Produce request (its response
    // remains, unpaired).
    check_cut(&c, cut, 7);
}

/// The capture starts inside a ~371 KB Fetch response (10 segments): the response
/// direction resynchronises on the next response.
#[test]
fn starts_inside_a_multi_segment_fetch_response() {
    let Some(c) = clean(A6) else { return };
    let idx = first_multi(&c, 1, Kind::Response);
    let m = pick(&c, "first multi-segment Fetch response", &|m| {
        m.info.index == idx
    });
    let frames = frames_of(m);
    assert!(
        frames.len() >= 5,
        "Fetch response spans {} frames",
        frames.len()
    );
    let cut = frames[frames.len() / 2];
    assert_eq!(
        (m.info.correlation_id, frames.len(), cut),
        (Some(2), 10, 124)
    );
    // Lost: the 45 messages before the Fetch response, and the response itself. The
    // consumer's FindCoordinator (corr 3) and GetTelemetrySubscriptions (corr 4)
    // responses remain, unpaired; the Fetch requests 5-7 come after the cut and
    // their responses pair.
    check_cut(&c, cut, 46);
}

/// Index of the first message of `api_key` and `kind` that spans 3 frames or more.
fn first_multi(c: &Clean, api_key: i16, kind: Kind) -> u64 {
    c.analysis
        .messages
        .iter()
        .find(|m| {
            m.info.api_key.map(|k| k.0) == Some(api_key)
                && m.info.kind == kind
                && frames_of(m).len() >= 3
        })
        .map(|m| m.info.index)
        .unwrap_or_else(|| panic!("{}: no {kind:?} of api {api_key} over 3+ frames", c.name))
}

/// One middle segment of the message at clean index `idx` is never captured: that
/// message is reported partial (the bytes before the hole, and how many are
/// missing), its peer loses its pairing, and every other message is unchanged.
fn check_gap(c: &Clean, idx: u64) {
    let m = pick(c, "gap victim", &|m| m.info.index == idx);
    let frames = frames_of(m);
    let drop = frames[frames.len() / 2];
    let label = format!(
        "{} [frame {drop} of {:?} corr {:?} dropped]",
        c.name, m.info.kind, m.info.correlation_id
    );
    let dropped = c.segs.iter().find(|s| s.frame == drop).unwrap();
    let segs: Vec<Seg> = c.segs.iter().filter(|s| s.frame != drop).cloned().collect();
    let file = write_capture(&label, &segs, &eth(), Format::PcapMicros);
    let a = analyze(&file.path, ports());

    let clean_msgs = messages(&c.analysis, &same_addr);
    let victim = clean_msgs
        .iter()
        .find(|x| x.id == id_of(m, &same_addr))
        .unwrap();
    // The victim comes out as a partial message: the bytes before the hole.
    let offset_of_drop = m
        .raw
        .provenance
        .iter()
        .find(|&&(_, f)| f == drop)
        .map(|&(o, _)| o as usize)
        .unwrap();
    assert!(
        offset_of_drop > 0 && offset_of_drop + dropped.payload.len() < victim.bytes.len(),
        "{label}: the dropped segment is in the middle of the message"
    );
    let p = partials(&a, &same_addr);
    assert_eq!(
        p.len(),
        1,
        "{label}: partial messages {:?}",
        p.iter().map(|x| x.0).collect::<Vec<_>>()
    );
    let (pid, pbytes, missing) = &p[0];
    assert_eq!(
        (pid.client, pid.broker, pid.request, pid.corr),
        (
            victim.id.client,
            victim.id.broker,
            victim.id.request,
            victim.id.corr
        ),
        "{label}: the partial message is the victim"
    );
    assert_eq!(
        &pbytes[..],
        &victim.bytes[..offset_of_drop],
        "{label}: partial prefix"
    );
    // `missing` counts the rest of the message: the hole and what followed it.
    assert_eq!(
        pbytes.len() as u64 + *missing,
        victim.bytes.len() as u64,
        "{label}: partial prefix + missing = the whole message"
    );

    let want: Vec<(Msg, Match)> = clean_msgs
        .iter()
        .filter(|x| x.id != victim.id)
        .map(|x| {
            let how = if x.peer == Some(victim.id) && !x.id.request {
                Match::RequestLost
            } else {
                Match::Exact
            };
            (x.clone(), how)
        })
        .collect();
    let got = messages(&a, &same_addr);
    let errs = compare_all(&label, &want, &got);
    fail_if(&label, errs);
    let mut want_unanswered: Vec<Id> = unanswered(&c.analysis, &same_addr);
    if !victim.id.request {
        want_unanswered.push(victim.peer.unwrap());
        want_unanswered.sort();
    }
    assert_eq!(
        unanswered(&a, &same_addr),
        want_unanswered,
        "{label}: unanswered"
    );
}

/// A lost middle segment of a Fetch response carried by 3 or more segments.
#[test]
fn gap_inside_a_fetch_response() {
    let Some(c) = clean(A6) else { return };
    let idx = first_multi(&c, 1, Kind::Response);
    check_gap(&c, idx);
}

/// A lost middle segment of a 3-segment Produce request. The broker acknowledged
/// the bytes (it answered), so they will never be retransmitted: the requests
/// after it on the connection must still pair with their responses.
#[test]
fn gap_inside_a_produce_request() {
    let Some(c) = clean(A6) else { return };
    let idx = first_multi(&c, 0, Kind::Request);
    check_gap(&c, idx);
}

/// With a hole in the client's bytes, both FINs still close the connection (the
/// reassembly contract: "two FINs or one RST close the connection, buffered bytes
/// are flushed behind gaps"), at the second FIN, not at the end of the capture.
#[test]
fn both_fins_close_a_connection_with_a_hole() {
    let Some(c) = clean(A6) else { return };
    let idx = first_multi(&c, 0, Kind::Request);
    let m = pick(&c, "gap victim", &|m| m.info.index == idx);
    let frames = frames_of(m);
    let drop = frames[frames.len() / 2];
    let (client, broker) = (m.info.client, m.info.broker);
    // The clean capture closes this connection with FIN at the broker's FIN.
    let fin_of = |a: &Analysis, stream: u64| {
        a.notices.iter().find_map(|n| match n {
            Notice::Stream(Event::StreamClosed {
                stream: s,
                reason,
                frame,
                ..
            }) if *s == stream => Some((*reason, *frame)),
            _ => None,
        })
    };
    let clean_close = fin_of(&c.analysis, m.info.stream).unwrap();
    assert_eq!(clean_close.0, kafkashark::flow::CloseReason::Fin);
    let last_fin = c
        .segs
        .iter()
        .filter(|s| {
            s.fin() && (s.src == client || s.src == broker) && (s.dst == client || s.dst == broker)
        })
        .map(|s| s.frame)
        .max()
        .unwrap();
    assert_eq!(clean_close.1, last_fin);

    let segs: Vec<Seg> = c.segs.iter().filter(|s| s.frame != drop).cloned().collect();
    let file = write_capture("two FINs after a hole", &segs, &eth(), Format::PcapMicros);
    let a = analyze(&file.path, ports());
    let stream = a
        .messages
        .iter()
        .find(|r| r.info.client == client && r.info.broker == broker)
        .unwrap()
        .info
        .stream;
    // One frame fewer before the FIN in the hostile file.
    assert_eq!(
        fin_of(&a, stream),
        Some((kafkashark::flow::CloseReason::Fin, last_fin - 1)),
        "connection {client} -> {broker} with clean frame {drop} dropped"
    );
}
