//! The loaders: capture files read through the reader thread and the shards
//! (`load_files`) give the UI what the frame-by-frame loader (`load`, one
//! `Analyzer` on the loader's thread, as for a live capture) gives it for
//! the same files: the same entries in the same order, the same counters
//! at the end, the same first time, topic names and notices.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::sync_channel;

use kafkashark::analyzer::MessageInfo;
use kafkashark::capture::FileSource;
use kafkashark::flow::Ports;
use kafkashark::vocab::Timestamp;

use super::app::{LoadStats, Msg};
use super::{load, load_files, LoaderInput, Loading};

/// What a loader sent, gathered.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    infos: Vec<MessageInfo>,
    origin: Option<Timestamp>,
    last_stats: Option<LoadStats>,
    progress: Option<(u64, Option<u64>)>,
    topics: usize,
    notices: Vec<String>,
    errors: Vec<String>,
    done: bool,
}

/// Runs a loader to its end and gathers what it sent.
fn seen(run: impl FnOnce(&std::sync::mpsc::SyncSender<Msg>)) -> Seen {
    let (tx, rx) = sync_channel(1 << 20);
    run(&tx);
    drop(tx);
    let mut s = Seen::default();
    for m in rx.iter() {
        match m {
            Msg::Loaded(es) => s.infos.extend(es.into_iter().map(|e| e.info)),
            Msg::Origin(t) => s.origin = Some(t),
            Msg::Stats(st) => s.last_stats = Some(st),
            Msg::Progress(a, b) => s.progress = Some((a, b)),
            Msg::Topics(t) => s.topics = t.len(),
            Msg::Notice(n) => s.notices.push(n),
            Msg::LoadError(e) => s.errors.push(e),
            Msg::LoadDone => s.done = true,
            _ => {}
        }
    }
    s
}

fn input() -> LoaderInput {
    (
        Ports::default(),
        kafkashark::flow::ReorderWindow::default(),
        kafkashark::tls::keylog::Keys::default(),
    )
}

/// Every shipped capture alone, then the two capture points of one run
/// read together: the file loader (one shard on its thread, and three on
/// threads of their own) sends what the frame-by-frame loader sends.
#[test]
fn the_file_loader_sends_what_the_frame_loader_sends() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../captures");
    let mut runs: Vec<Vec<String>> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .map(|p| vec![p.to_string_lossy().into_owned()])
        .collect();
    runs.sort();
    assert!(runs.len() >= 10, "{runs:?}");
    let points = ["e1-client-side.pcap", "e1-broker-side.pcap"].map(|f| {
        dir.join("two-points")
            .join(f)
            .to_string_lossy()
            .into_owned()
    });
    runs.push(points.to_vec());
    let stop = AtomicBool::new(false);
    let mut messages = 0;
    for files in &runs {
        let open = || FileSource::open_all(files, &crate::Both).unwrap();
        let total = Some(1 << 40);
        let reference = seen(|tx| {
            load(
                Box::new(open()),
                input(),
                &stop,
                Loading::new(tx, false, None, total),
            );
        });
        assert!(reference.done, "{files:?}");
        assert!(reference.origin.is_some(), "{files:?}");
        for shards in [1, 3] {
            let got = seen(|tx| {
                let loading = Loading::new(tx, false, None, total);
                load_files(open(), input(), &stop, loading, shards);
            });
            assert!(
                got == reference,
                "{files:?}, {shards} shards: {got:?}\n{reference:?}"
            );
        }
        messages += reference.infos.len();
    }
    assert!(messages > 1000, "{messages}");
}
