//! Capture files and link layers: the `link` harness and `pcap_file`, which
//! writes each input to a temp file and reads it with both file readers.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use kafkashark::analyzer::{Analyzer, AnalyzerConfig};
use kafkashark::capture::{decode_segment, FileSource, Frame, FrameSource, LinkType};
use kafkashark::flow::Ports;
use kafkashark::pipeline::PipelineConfig;
use kafkashark::vocab::Timestamp;

use crate::tree::check_outputs;
use crate::{fuzz_opts, Choices};

/// Link decoding. Byte 0 picks a link type, bytes 1–2 how many bytes the
/// snaplen cut (origlen − caplen); the rest is the frame.
pub fn link(data: &[u8]) {
    const LINKS: [u32; 12] = [0, 1, 12, 101, 108, 113, 228, 229, 276, 147, 9999, 1];
    let mut c = Choices::new(data);
    let l = LINKS[usize::from(c.byte()) % LINKS.len()];
    let cut = u32::from(c.u16());
    let bytes = Bytes::copy_from_slice(c.rest());
    let caplen = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    let frame = Frame {
        index: 1,
        ts: Timestamp::default(),
        caplen,
        origlen: caplen.saturating_add(cut),
        file_offset: None,
        capture: 0,
        link: LinkType(l),
        data: bytes.clone(),
    };
    match decode_segment(&frame) {
        Ok(seg) => {
            let base = bytes.as_ptr() as usize;
            let p = seg.payload.as_ptr() as usize;
            assert!(
                seg.payload.is_empty()
                    || (p >= base && p + seg.payload.len() <= base + bytes.len()),
                "payload is not a slice of the frame"
            );
            assert!(
                seg.payload_truncated_by <= cut,
                "payload cut by {} but the snaplen cut only {cut}",
                seg.payload_truncated_by
            );
        }
        Err(skip) => {
            let _ = skip.to_string();
            if let kafkashark::capture::Skip::Malformed { offset, .. } = skip {
                assert!(offset <= bytes.len(), "skip offset beyond the frame");
            }
        }
    }
}

static TEMP_N: AtomicU64 = AtomicU64::new(0);

/// A file in the temp dir removed on drop.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whole-file ingest: the input is written to a temp file, read with
/// `FileSource` (the zero-copy reader, or libpcap for what it declines) and
/// fed to an `Analyzer` keeping trees. When the zero-copy reader read it,
/// libpcap must read the same frames from the same file and stop at the same
/// frame (cleanly or with an error), and every frame's `file_offset` must
/// point at its bytes.
pub fn pcap_file(data: &[u8]) {
    let n = TEMP_N.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "kafkashark-fuzz-{}-{}-{n}.pcap",
        std::process::id(),
        std::thread::current()
            .name()
            .unwrap_or("t")
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    ));
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let tmp = TempFile(path);
    let Some(p) = tmp.0.to_str() else { return };
    let Ok(mut src) = FileSource::open(p) else {
        return;
    };
    let fast = !src.uses_libpcap();
    let mut an = Analyzer::new(AnalyzerConfig {
        keep_trees: true,
        decode: fuzz_opts(),
        pipeline: PipelineConfig::with_ports(Ports::Any),
        ..AnalyzerConfig::default()
    });
    let mut outs = Vec::new();
    let mut frames = Vec::new();
    let end = loop {
        match src.next_frame() {
            Ok(Some(f)) => {
                // Each record costs at least a 16-byte record header (pcap) or a
                // 16-byte block (pcapng SPB).
                assert!(
                    frames.len() < data.len() / 16 + 1,
                    "{} frames from a {}-byte file",
                    frames.len() + 1,
                    data.len()
                );
                assert_eq!(f.data.len() as u64, u64::from(f.caplen));
                assert!(f.data.len() <= data.len(), "a frame longer than the file");
                if let Some(off) = f.file_offset {
                    let at = usize::try_from(off).unwrap_or(usize::MAX);
                    assert_eq!(
                        data.get(at..at.saturating_add(f.data.len())),
                        Some(&f.data[..]),
                        "frame {} is not at its file offset {off}",
                        f.index
                    );
                }
                let _ = decode_segment(&f);
                an.push(&f, &mut outs);
                check_outputs(&mut outs);
                frames.push(f);
            }
            Ok(None) => break None,
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(p), "read error without the file name: {msg}");
                break Some(msg);
            }
        }
    };
    an.finish(&mut outs);
    check_outputs(&mut outs);
    if fast {
        same_as_libpcap(p, &frames, end.as_deref());
    }
}

/// libpcap reads `frames` from `path` and ends as `end` says (an error or not).
fn same_as_libpcap(path: &str, frames: &[Frame], end: Option<&str>) {
    let Ok(mut src) = FileSource::open_libpcap(path) else {
        panic!("the zero-copy reader opened a file libpcap does not open");
    };
    let mut i = 0;
    let theirs = loop {
        match src.next_frame() {
            Ok(Some(f)) => {
                let Some(ours) = frames.get(i) else {
                    panic!(
                        "libpcap reads frame {} past the {} read ({end:?})",
                        f.index,
                        frames.len()
                    );
                };
                assert_eq!(
                    (
                        ours.index,
                        ours.ts,
                        ours.caplen,
                        ours.origlen,
                        ours.link,
                        &ours.data
                    ),
                    (f.index, f.ts, f.caplen, f.origlen, f.link, &f.data),
                    "frame {} differs from libpcap's",
                    f.index
                );
                i += 1;
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    // libpcap compares a later pcapng interface's raw LINKTYPE_RAW (101) with
    // the first one's mapped DLT_RAW (12) and stops; the zero-copy reader
    // reads on (see `capture::fastfile`).
    if theirs
        .as_deref()
        .is_some_and(|e| e.contains("an interface has a type 101 different"))
    {
        return;
    }
    assert_eq!(
        i,
        frames.len(),
        "libpcap read {i} frames, the zero-copy reader {} ({end:?}, {theirs:?})",
        frames.len()
    );
    assert_eq!(
        end.is_some(),
        theirs.is_some(),
        "one reader stopped with an error, the other not: {end:?} / {theirs:?}"
    );
}
