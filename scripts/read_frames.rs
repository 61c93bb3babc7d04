//! `read-frames`: reads every frame of a capture through kafkashark's own
//! `FileSource::open` (the zero-copy reader for regular pcap/pcapng files,
//! libpcap otherwise — the path every command takes) and does nothing else:
//! the "bare read" that `scripts/bench.sh` compares the commands with. Prints
//! frames and bytes; `READER=libpcap` reads through libpcap instead.

use kafkashark::capture::{FileSource, FrameSource, Polled};

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
    let (mut frames, mut bytes) = (0u64, 0u64);
    while let Ok(Polled::Frame(f)) = src.poll() {
        frames += 1;
        bytes += f.data.len() as u64;
    }
    println!("{frames} frames, {bytes} bytes");
}
