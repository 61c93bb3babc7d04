//! `read-frames`: reads every frame of a capture through kafkashark's own
//! `FileSource::open` (the zero-copy reader for regular pcap/pcapng files,
//! libpcap otherwise — the path every command takes) and does nothing else:
//! the "bare read" that `scripts/bench.sh` compares the commands with. Prints
//! frames and bytes; `READER=libpcap` reads through libpcap instead.
//! `PIPELINE=1` also runs every frame through TCP reassembly and Kafka
//! framing (`Pipeline`, on the same thread) and counts the messages: the cost
//! of everything before decoding.

use kafkashark::capture::{FileSource, FrameSource, Polled};
use kafkashark::pipeline::{Event, Pipeline, PipelineConfig};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: read-frames FILE");
        std::process::exit(2);
    };
    let open = if std::env::var("READER").is_ok_and(|r| r == "libpcap") {
        FileSource::open_libpcap
    } else {
        FileSource::open
    };
    let mut src = match open(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("read-frames: {e}");
            std::process::exit(1);
        }
    };
    let mut pipeline = std::env::var("PIPELINE")
        .is_ok_and(|v| v == "1")
        .then(|| Pipeline::new(PipelineConfig::default()));
    let (mut frames, mut bytes, mut messages) = (0u64, 0u64, 0u64);
    let mut events = Vec::new();
    let mut count = |events: &mut Vec<Event>| {
        messages += events
            .drain(..)
            .filter(|e| matches!(e, Event::Message(_)))
            .count() as u64;
    };
    match &mut pipeline {
        // Frames as the commands read them: decoded to their segments in the
        // read buffer where they can be (`FileSource::poll_with`).
        Some(p) => {
            while let Ok(Some(n)) = src.poll_with(|seen| {
                let len = seen.place().1;
                p.push(seen, &mut events);
                len
            }) {
                frames += 1;
                bytes += n as u64;
                count(&mut events);
            }
        }
        None => {
            while let Ok(Polled::Frame(f)) = src.poll() {
                frames += 1;
                bytes += f.data.len() as u64;
            }
        }
    }
    match &mut pipeline {
        Some(p) => {
            p.finish(&mut events);
            count(&mut events);
            println!("{frames} frames, {bytes} bytes, {messages} messages");
        }
        None => println!("{frames} frames, {bytes} bytes"),
    }
}
