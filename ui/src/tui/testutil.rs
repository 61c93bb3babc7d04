//! Test helpers: entries from the real captures in `captures/`, run through
//! the engine's Analyzer exactly as the loader does (records not decoded).

use kafkashark::analyzer::{Analyzer, AnalyzerConfig, Output};
use kafkashark::capture::{FileSource, FrameSource};

use super::app::{App, Config, Entry, LoadStats, Msg, SourceKind};

thread_local! {
    /// Frames, streams and resyncs of the last capture read by [`entries`].
    static STATS: std::cell::Cell<(u64, u64, u64)> = const { std::cell::Cell::new((0, 0, 0)) };
}

/// A file of the repository.
pub fn repo(p: &str) -> String {
    format!("{}/../{p}", env!("CARGO_MANIFEST_DIR"))
}

/// Every message of a capture in `captures/`, as the loader would send them.
pub fn entries(capture: &str) -> Vec<Entry> {
    entries_with(capture, AnalyzerConfig::default())
}

/// Every message of a TLS capture in `captures/tls/`, decrypted with the
/// proxy's key log beside it (`FILE.server.keys`).
pub fn tls_entries(capture: &str) -> Vec<Entry> {
    use kafkashark::tls::keylog::{KeyLog, Keys};
    let mut k = KeyLog::new();
    let log = std::fs::read(repo(&format!("{capture}.server.keys"))).expect("key log");
    assert!(k.feed(&log).is_empty());
    let mut cfg = AnalyzerConfig::default();
    cfg.pipeline.tls_keys = Keys::new(k, false);
    entries_with(capture, cfg)
}

/// Every message of several captures in `captures/` read together
/// (merged by time, as the loader reads them).
pub fn merged_entries(captures: &[&str]) -> Vec<Entry> {
    entries_of(captures, AnalyzerConfig::default())
}

fn entries_with(capture: &str, cfg: AnalyzerConfig) -> Vec<Entry> {
    entries_of(&[capture], cfg)
}

fn entries_of(captures: &[&str], mut cfg: AnalyzerConfig) -> Vec<Entry> {
    let paths: Vec<String> = captures.iter().map(|c| repo(c)).collect();
    let mut src = FileSource::open_all(&paths, &crate::Both).expect("captures open");
    cfg.decode.records = false;
    cfg.pipeline.twin_window_ns = src.twin_window_ns();
    let mut an = Analyzer::new(cfg);
    let mut out = Vec::new();
    while let Some(f) = src.next_frame().expect("frame") {
        an.push(&f, &mut out);
    }
    an.finish(&mut out);
    let ps = an.pipeline_stats();
    STATS.with(|s| s.set((ps.frames, ps.kafka_streams, ps.resyncs)));
    out.into_iter()
        .filter_map(|o| match o {
            Output::Message(m) => Some(Entry::new(m.info, m.raw)),
            Output::Notice(_) => None,
        })
        .collect()
}

/// An app of this size holding every message of a capture, loaded in one batch.
pub fn app_with(capture: &str, w: u16, h: u16) -> App {
    app_of(capture, entries(capture), w, h)
}

/// An app of this size holding these messages of a capture.
pub fn app_of(capture: &str, es: Vec<Entry>, w: u16, h: u16) -> App {
    let mut app = App::new(
        Config {
            title: capture.to_string(),
            kind: SourceKind::File,
            color: true,
        },
        (w, h),
    );
    if let Some(e) = es.first() {
        app.update(Msg::Origin(e.info.first_ts));
    }
    app.update(Msg::Loaded(es));
    let (frames, streams, resyncs) = STATS.with(std::cell::Cell::get);
    app.update(Msg::Stats(LoadStats {
        frames,
        streams,
        gaps: 0,
        late: 0,
        resyncs,
        kernel_drops: None,
    }));
    app.update(Msg::LoadDone);
    app
}

/// An app holding the one message of a hex file in `captures/messages/`.
pub fn message_app(file: &str, w: u16, h: u16) -> App {
    let text = std::fs::read_to_string(repo(file)).expect("message file");
    let digits: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes: Vec<u8> = (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex"))
        .collect();
    let mut app = App::new(
        Config {
            title: file.to_string(),
            kind: SourceKind::Message,
            color: true,
        },
        (w, h),
    );
    app.update(Msg::Loaded(vec![super::message_entry(bytes)]));
    app.update(Msg::LoadDone);
    app
}

/// A capture file held in memory, read back like the TUI's file store.
pub struct MemStore(pub Vec<u8>);

impl super::ByteStore for MemStore {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        let src = self
            .0
            .get(start..start + buf.len())
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// Every message of a classic-pcap capture in `captures/`, read with the frames'
/// file offsets (as the TUI's loader places them): `(indexed entries without
/// their bytes, the same entries with their bytes, the file's bytes)`.
pub fn located_entries(capture: &str) -> (Vec<Entry>, Vec<Entry>, Vec<u8>) {
    let path = repo(capture);
    let mut src = FileSource::open(&path).expect("capture opens");
    let mut cfg = AnalyzerConfig::default();
    cfg.decode.records = false;
    cfg.pipeline.locate_in_file = true;
    let mut an = Analyzer::new(cfg);
    let mut out = Vec::new();
    while let Some(f) = src.next_frame().expect("frame") {
        assert!(f.file_offset.is_some(), "the file reader gives offsets");
        an.push(&f, &mut out);
    }
    an.finish(&mut out);
    let (mut indexed, mut full) = (Vec::new(), Vec::new());
    for o in out {
        if let Output::Message(m) = o {
            full.push(Entry::new(m.info.clone(), m.raw.clone()));
            indexed.push(Entry::indexed(m.info, m.raw));
        }
    }
    (indexed, full, std::fs::read(&path).expect("capture read"))
}
