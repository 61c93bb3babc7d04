//! Messages say where their bytes lie in the capture file
//! (`RawMessage::file_pieces`), so a shell can drop them and read them again.
//! Checked on every shipped capture, read in order and with frames reordered and
//! duplicated (retransmissions, overlaps): the pieces, read from the file, are
//! exactly the message's bytes.

use bytes::Bytes;
use kafkashark::capture::{Frame, LinkType};
use kafkashark::flow::{Late, Ports};
use kafkashark::kafka::framing::RawMessage;
use kafkashark::pipeline::{Event, Pipeline, PipelineConfig, Warning};
use kafkashark::vocab::{Direction, Timestamp};

/// Frames of a classic pcap file with their file offsets, parsed here independently
/// of the engine's readers.
fn frames(file: &[u8]) -> Vec<Frame> {
    let magic = u32::from_le_bytes(file[0..4].try_into().unwrap());
    let (le, nanos) = match magic {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        m => panic!("not a classic pcap: {m:#x}"),
    };
    let u32_at = |at: usize| {
        let b: [u8; 4] = file[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let link = LinkType(u32_at(20));
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let caplen = u32_at(at + 8);
        let data = at + 16;
        let end = data + caplen as usize;
        let frac = u32_at(at + 4);
        out.push(Frame {
            index: out.len() as u64 + 1,
            ts: Timestamp::new(
                i64::from(u32_at(at)),
                if nanos { frac } else { frac * 1000 },
            ),
            caplen,
            origlen: u32_at(at + 12),
            link,
            data: Bytes::copy_from_slice(&file[data..end]),
            file_offset: Some(data as u64),
            capture: 0,
        });
        at = end;
    }
    out
}

/// Every pipeline event of `frames`, with file pieces located.
fn events(frames: &[Frame], ports: Ports) -> Vec<Event> {
    let mut p = Pipeline::new(PipelineConfig {
        locate_in_file: true,
        ..PipelineConfig::with_ports(ports)
    });
    let mut ev = Vec::new();
    for f in frames {
        p.push(f.clone(), &mut ev);
    }
    p.finish(&mut ev);
    ev
}

fn messages(frames: &[Frame], ports: Ports) -> Vec<RawMessage> {
    events(frames, ports)
        .into_iter()
        .filter_map(|e| match e {
            Event::Message(m) | Event::Partial(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// A message as its connection's client, direction, stream offset and bytes.
type Key = (std::net::SocketAddr, bool, u64, Bytes);

/// The messages of `frames`, each as a [`Key`], sorted; and the (client,
/// direction) of every warning about bytes after a connection closed.
fn keyed(frames: &[Frame], ports: Ports) -> (Vec<Key>, Vec<(std::net::SocketAddr, bool)>) {
    let ev = events(frames, ports);
    let mut client = std::collections::HashMap::new();
    let (mut out, mut late) = (Vec::new(), Vec::new());
    for e in ev {
        match e {
            Event::StreamOpen(o) => {
                client.insert(o.stream, o.client);
            }
            Event::Message(m) | Event::Partial(m) => {
                let c = *client
                    .get(&m.stream)
                    .expect("a message of an opened stream");
                out.push((
                    c,
                    m.dir == Direction::ClientToBroker,
                    m.stream_offset,
                    m.bytes,
                ));
            }
            Event::Warning {
                what: Warning::AfterClose(Late { stream, dir, .. }),
                ..
            } => {
                let c = *client
                    .get(&stream)
                    .expect("a warning about an opened stream");
                late.push((c, dir == Direction::ClientToBroker));
            }
            _ => {}
        }
    }
    out.sort();
    (out, late)
}

fn check(name: &str, file: &[u8], msgs: &[RawMessage]) -> usize {
    assert!(!msgs.is_empty(), "{name}: no messages");
    for m in msgs {
        assert!(
            !m.file_pieces.is_empty(),
            "{name}: message at frame {} has no file pieces",
            m.first_frame
        );
        let back = RawMessage::reread(&m.file_pieces, |off, buf: &mut [u8]| {
            let s = usize::try_from(off).map_err(|_| ())?;
            buf.copy_from_slice(file.get(s..s + buf.len()).ok_or(())?);
            Ok::<(), ()>(())
        })
        .expect("pieces inside the file");
        assert_eq!(
            back,
            &m.bytes[..],
            "{name}: frame {} stream {} offset {}",
            m.first_frame,
            m.stream,
            m.stream_offset
        );
    }
    msgs.len()
}

fn captures() -> Vec<std::path::PathBuf> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/captures");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
        .collect();
    v.sort();
    assert!(v.len() >= 10);
    v
}

fn ports_of(path: &std::path::Path) -> Ports {
    if path.to_string_lossy().contains("19092") {
        Ports::List(vec![19092])
    } else {
        Ports::Any
    }
}

#[test]
fn every_message_of_every_capture_reads_back_from_its_pieces() {
    let mut total = 0;
    for path in captures() {
        let file = std::fs::read(&path).unwrap();
        let fr = frames(&file);
        let msgs = messages(&fr, ports_of(&path));
        total += check(&path.display().to_string(), &file, &msgs);
        // Without file offsets, no pieces: the bytes must be kept.
        let bare: Vec<Frame> = fr
            .iter()
            .cloned()
            .map(|mut f| {
                f.file_offset = None;
                f
            })
            .collect();
        assert!(messages(&bare, ports_of(&path))
            .iter()
            .all(|m| m.file_pieces.is_empty()));
    }
    assert!(total > 1000, "{total}");
}

/// Reordered and duplicated frames: retransmitted and overlapping bytes are
/// trimmed, out-of-order bytes wait in the reassembler; the pieces follow,
/// and the messages are those of the capture in order — but for bytes the
/// swaps put after their connection's RST, which are reported, not decoded.
#[test]
fn reordered_and_duplicated_frames_read_back_from_their_pieces() {
    let mut lost = 0;
    for path in captures() {
        let file = std::fs::read(&path).unwrap();
        let fr = frames(&file);
        // Swap neighbours in every third pair and send every fifth frame twice.
        let mut shuffled = Vec::new();
        let mut i = 0;
        while i < fr.len() {
            if i % 6 == 0 && i + 1 < fr.len() {
                shuffled.push(fr[i + 1].clone());
                shuffled.push(fr[i].clone());
                i += 2;
                continue;
            }
            shuffled.push(fr[i].clone());
            if i % 5 == 0 {
                shuffled.push(fr[i].clone());
            }
            i += 1;
        }
        let name = path.display().to_string();
        let msgs = messages(&shuffled, ports_of(&path));
        let n = check(&name, &file, &msgs);
        // Nothing doubled and nothing lost unsaid: the messages of the
        // in-order run, by connection, direction, place in the stream and
        // bytes (stream numbers follow the order connections show up, which
        // swaps change).
        let (got, late) = keyed(&shuffled, ports_of(&path));
        let (want, none) = keyed(&fr, ports_of(&path));
        assert!(
            none.is_empty(),
            "{name}: bytes after a close in capture order"
        );
        assert_eq!(n, got.len());
        // Every message of the shuffled run is one of the in-order run…
        let mut left = want.clone();
        for g in &got {
            let at = left
                .binary_search(g)
                .unwrap_or_else(|_| panic!("{name}: a message not in order: {g:?}"));
            left.remove(at);
        }
        // …and each one missing had its bytes put after its connection's
        // RST by the swaps, which a warning says.
        for m in &left {
            assert!(
                late.contains(&(m.0, m.1)),
                "{name}: lost without a warning: {m:?}"
            );
        }
        lost += left.len();
    }
    // The swaps do put one response behind its RST (b2): the warning was checked.
    assert!(lost > 0);
}
