//! Several captures read together (`FileSource::open_all`): merged by time
//! as `mergecap` merges them, each frame and message marked with its
//! capture, two captures' packets never one connection's, a bad file named
//! while the others are read on.

mod support;

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, MessageRecord, Output};
use kafkashark::capture::{FileSource, Frame, FrameSource, InLine, Join, Seen};
use kafkashark::flow::Ports;
use kafkashark::pipeline::PipelineConfig;
use std::path::Path;
use support::{recorded, write_frames, Format, TempCapture};

/// Every frame of one file, as its own reader gives them.
fn frames(path: &Path) -> Vec<Frame> {
    let mut src = FileSource::open(path.to_str().unwrap()).unwrap();
    std::iter::from_fn(|| src.next_frame().unwrap()).collect()
}

/// A copy of the capture at `path` with every frame `by_ns` later (the
/// frames' bytes and link type as they were).
fn shifted(path: &Path, by_ns: u64, tag: &str) -> TempCapture {
    let fs = frames(path);
    let link = fs.first().map_or(1, |f| f.link.0);
    let moved: Vec<_> = fs
        .iter()
        .map(|f| (f.ts.add_nanos(by_ns), f.data.to_vec()))
        .collect();
    write_frames(tag, link, Format::PcapNanos, &moved)
}

fn paths(ps: &[&Path]) -> Vec<String> {
    ps.iter().map(|p| p.to_str().unwrap().to_string()).collect()
}

/// The messages of the files at `ps` read together; with `twins`, a
/// connection the files share is one (the source's twin window).
fn analyze_all(ps: &[&Path], twins: bool) -> Vec<MessageRecord> {
    let mut src = FileSource::open_all(&paths(ps), &InLine).unwrap();
    let mut pipeline = PipelineConfig::with_ports(Ports::default());
    if twins {
        pipeline.twin_window_ns = src.twin_window_ns();
    }
    let mut an = Analyzer::new(AnalyzerConfig {
        pipeline,
        ..AnalyzerConfig::default()
    });
    let mut out = Vec::new();
    while let Some(f) = src.next_frame().unwrap() {
        an.push(&f, &mut out);
    }
    an.finish(&mut out);
    out.into_iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(*m),
            Output::Notice(_) => None,
        })
        .collect()
}

/// What a message is, leaving out where it lies in the capture (frame
/// numbers, times, connection numbers change when files are merged).
type Exchange = (
    String,
    Option<i16>,
    Option<i32>,
    String,
    i32,
    Option<u64>,
    Vec<i16>,
    bool,
);

fn exchanges(ms: &[MessageRecord]) -> Vec<Exchange> {
    let mut v: Vec<Exchange> = ms
        .iter()
        .map(|m| {
            let i = &m.info;
            (
                format!("{:?} {:?} {}->{}", i.kind, i.api_key, i.client, i.broker),
                i.api_version,
                i.correlation_id,
                i.decode_error.clone().unwrap_or_default(),
                i.length,
                i.latency_ns,
                i.error_codes.clone(),
                i.paired,
            )
        })
        .collect();
    v.sort();
    v
}

/// The same capture twice, the second copy's clock a quarter second late:
/// the same packets at two capture points. The clock is found (exact: the
/// copies agree to the nanosecond), and with the twin step the copies are
/// one set of connections, each message once with the other copy's frame
/// and latency; without it (the engine's default for one pipeline), two
/// sets, each decoded and paired as the capture alone is.
#[test]
fn the_same_capture_twice_is_one_connection_seen_twice() {
    let Some(a1) = recorded("a1-kcat-produce-consume-group.pcap") else {
        return;
    };
    let later = shifted(&a1, 250_000_000, "a1-later");
    let src = FileSource::open_all(&paths(&[&a1, &later.path]), &InLine).unwrap();
    let [c] = src.clocks() else {
        panic!("one clock: {:?}", src.clocks())
    };
    assert_eq!(
        (c.capture, c.against, c.offset_ns, c.bound_ns),
        (1, 0, 250_000_000, 0)
    );
    assert!(c.packets > 100, "{c:?}");
    let alone = analyze_all(&[&a1], false);
    assert!(alone.len() > 100 && alone.iter().all(|m| m.info.capture == 0));
    let apart = analyze_all(&[&a1, &later.path], false);
    assert_eq!(apart.len(), 2 * alone.len());
    for capture in [0, 1] {
        let of: Vec<MessageRecord> = (apart.iter())
            .filter(|m| m.info.capture == capture)
            .cloned()
            .collect();
        assert_eq!(exchanges(&of), exchanges(&alone), "capture {capture}");
    }
    let both = analyze_all(&[&a1, &later.path], true);
    assert_eq!(exchanges(&both), exchanges(&alone));
    for (m, a) in both.iter().zip(&alone) {
        let also = m.info.also.as_deref().expect("seen at both");
        assert_eq!((m.info.capture, also.capture), (0, 1));
        // The copy's times, set back onto the first clock, are the same.
        assert_eq!((also.ts, m.info.ts), (a.info.ts, a.info.ts));
        if m.info.kind == kafkashark::kafka::decode::Kind::Response && a.info.paired {
            assert_eq!(also.latency_ns, a.info.latency_ns);
        }
    }
}

/// Merged frames come in `mergecap`'s order and numbering (by time, a tie
/// to the file given first), each with its file's place in the list and no
/// file offset; `poll_with` (the file reader's segments) gives the same
/// frames as `poll`. Checked against mergecap when it is installed.
#[test]
fn merged_frames_are_mergecaps() {
    let (Some(a1), Some(a3)) = (
        recorded("a1-kcat-produce-consume-group.pcap"),
        recorded("a3-kafka-python-admin.pcap"),
    ) else {
        return;
    };
    // a3 moved into a1's time, and a1 again at the very same times (ties).
    let (f1, f3) = (frames(&a1), frames(&a3));
    let into = f1[0].ts.nanos_since(f3[0].ts) + 1_000_000_000;
    let a3_in = shifted(&a3, into, "a3-in-a1");
    let a1_again = shifted(&a1, 0, "a1-again");
    let files = [a1.as_path(), a3_in.path.as_path(), a1_again.path.as_path()];
    let mut src = FileSource::open_all(&paths(&files), &InLine).unwrap();
    let merged: Vec<Frame> = std::iter::from_fn(|| src.next_frame().unwrap()).collect();
    assert_eq!(merged.len(), 2 * f1.len() + f3.len());
    for (k, f) in merged.iter().enumerate() {
        assert_eq!(f.index, k as u64 + 1);
        assert_eq!(f.file_offset, None);
    }
    let from = |c: u16| merged.iter().filter(|f| f.capture == c).count();
    assert_eq!((from(0), from(1), from(2)), (f1.len(), f3.len(), f1.len()));
    // Each file's frames keep their order; times never go back across files
    // where each file's own do not.
    for c in 0..3u16 {
        let own: Vec<&Frame> = merged.iter().filter(|f| f.capture == c).collect();
        let want = [&f1, &f3, &f1][usize::from(c)];
        assert!(own.iter().zip(want.iter()).all(|(a, b)| a.data == b.data));
    }
    // poll_with: the same frames, numbers and captures.
    let mut src = FileSource::open_all(&paths(&files), &InLine).unwrap();
    let mut seen = Vec::new();
    while let Some(s) = src
        .poll_with(|s| match s {
            Seen::Tcp(t) => (t.index, t.ts, t.seg.capture, t.file_offset),
            Seen::Frame(f) => (f.index, f.ts, f.capture, f.file_offset),
        })
        .unwrap()
    {
        seen.push(s);
    }
    let want: Vec<_> = merged
        .iter()
        .map(|f| (f.index, f.ts, f.capture, None))
        .collect();
    assert_eq!(seen, want);
    // mergecap's merge of the same files, frame for frame.
    let out = support::temp_path("mergecap", "pcap");
    let Ok(run) = std::process::Command::new("mergecap")
        .args(["-F", "pcap", "-w"])
        .arg(&out)
        .args(files)
        .output()
    else {
        eprintln!("no mergecap: its order not compared");
        return;
    };
    assert!(run.status.success(), "{run:?}");
    let theirs = frames(&out);
    let _ = std::fs::remove_file(&out);
    assert_eq!(theirs.len(), merged.len());
    for (a, b) in merged.iter().zip(&theirs) {
        assert_eq!((a.index, a.ts, &a.data), (b.index, b.ts, &b.data));
    }
}

/// A file that stops short among several: its error names it and the
/// frame of its own that could not be read; the frames before it and every
/// other file's are read, and the other file's messages all decode.
#[test]
fn a_bad_file_among_several_is_named_and_the_others_read_on() {
    let (Some(a1), Some(a3)) = (
        recorded("a1-kcat-produce-consume-group.pcap"),
        recorded("a3-kafka-python-admin.pcap"),
    ) else {
        return;
    };
    let whole = std::fs::read(&a3).unwrap();
    let cut = support::temp_path("a3-cut", "pcap");
    // Into the middle of a record: a few bytes short of the end.
    std::fs::write(&cut, &whole[..whole.len() - 10]).unwrap();
    let n3 = frames(&a3).len() as u64;
    let files = [a1.as_path(), cut.as_path()];
    let mut src = FileSource::open_all(&paths(&files), &InLine).unwrap();
    let (mut got, mut errors) = (Vec::new(), Vec::new());
    loop {
        match src.next_frame() {
            Ok(Some(f)) => got.push(f.capture),
            Ok(None) => break,
            Err(e) => errors.push(e.to_string()),
        }
    }
    let _ = std::fs::remove_file(&cut);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains(cut.to_str().unwrap()), "{}", errors[0]);
    assert!(errors[0].contains(&format!("frame {n3}")), "{}", errors[0]);
    let count = |c: u16| got.iter().filter(|&&g| g == c).count() as u64;
    assert_eq!(count(0), frames(&a1).len() as u64);
    assert_eq!(count(1), n3 - 1);
}

/// A merged source is read with `poll_with` or with `poll`, not both: a
/// segment `poll_with` read ahead is not a whole frame, so `poll` coming to
/// it fails, naming the frame, where it would otherwise drop it unseen.
#[test]
fn poll_after_poll_with_refuses_a_segment_read_ahead() {
    let (Some(a1), Some(a3)) = (
        recorded("a1-kcat-produce-consume-group.pcap"),
        recorded("a3-kafka-python-admin.pcap"),
    ) else {
        return;
    };
    // a3 moved to a quarter second into a1 (no packet in common: the
    // clocks stay as they are).
    let into = frames(&a1)[0].ts.nanos_since(frames(&a3)[0].ts) + 250_000_000;
    let later = shifted(&a3, into, "poll-mix");
    let mut src = FileSource::open_all(&paths(&[&a1, &later.path]), &InLine).unwrap();
    // The first frame of each file read ahead, as segments.
    let first = src.poll_with(|s| matches!(s, Seen::Tcp(_))).unwrap();
    assert_eq!(first, Some(true));
    let mut whole = 0;
    let err = loop {
        match src.poll() {
            Ok(kafkashark::capture::Polled::Frame(_)) => whole += 1,
            Ok(_) => panic!("the end came without the segment read ahead"),
            Err(e) => break e.to_string(),
        }
    };
    // The first file's frames up to the second file's first (a tie goes to
    // the first file), the one `poll_with` took among them.
    let at = frames(&later.path)[0].ts;
    let before = frames(&a1).iter().filter(|f| f.ts <= at).count();
    assert!(before > 1);
    assert_eq!(whole + 1, before);
    assert!(err.contains("after poll_with"), "{err}");
}

/// [`Join`] on two threads, as the command line's is.
struct Threads;

impl Join for Threads {
    fn join<A: Send, B: Send>(
        &self,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
        std::thread::scope(|s| {
            let h = s.spawn(b);
            let ra = a();
            (ra, h.join().unwrap())
        })
    }
}

/// The two searches of a pair of files give the same clocks whether they
/// run one after the other or at once (the second then stops when the
/// first finds packets): the pair recorded at two points in both orders
/// (the file given second is the one starting late, then the one starting
/// first), and a capture with a shifted copy of itself.
#[test]
fn clocks_are_the_same_searched_at_once() {
    let (Some(client), Some(broker), Some(a1)) = (
        recorded("two-points/e1-client-side.pcap"),
        recorded("two-points/e1-broker-side.pcap"),
        recorded("a1-kcat-produce-consume-group.pcap"),
    ) else {
        return;
    };
    let later = shifted(&a1, 250_000_000, "a1-later-join");
    let pairs: [[&Path; 2]; 3] = [[&client, &broker], [&broker, &client], [&a1, &later.path]];
    for files in pairs {
        let one = FileSource::open_all(&paths(&files), &InLine).unwrap();
        let both = FileSource::open_all(&paths(&files), &Threads).unwrap();
        let [c] = one.clocks() else {
            panic!("one clock for {files:?}: {:?}", one.clocks())
        };
        assert!(c.packets > 100, "{c:?}");
        assert_eq!(one.clocks(), both.clocks(), "{files:?}");
    }
}
