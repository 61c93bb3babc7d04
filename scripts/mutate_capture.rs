//! `mutate-capture`: writes a copy of a real capture whose TCP data segments
//! are permuted in windows of 2 to 8 (never the identity), pure ACKs and every
//! other frame left in place, with optional 1-byte resplits and duplicates on
//! top; seeded and deterministic (the rules: `scripts/mutate.rs`).
//!
//! `cargo run --example mutate-capture -- IN OUT [--seed N] [--resplit] [--duplicate]`
//!
//! It prints what it did: data segments, moved, split, duplicated. The output
//! is a classic pcap (nanosecond times) of the input's link type.

#[path = "mutate.rs"]
mod mutate;

use mutate::{mutate, read_capture, write_pcap, Mutation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut files = Vec::new();
    let mut m = Mutation {
        seed: 1,
        resplit: false,
        duplicate: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => match it.next().and_then(|s| s.parse().ok()) {
                Some(s) => m.seed = s,
                None => usage(),
            },
            "--resplit" => m.resplit = true,
            "--duplicate" => m.duplicate = true,
            _ if a.starts_with("--") => usage(),
            _ => files.push(a.clone()),
        }
    }
    let [input, output] = files.as_slice() else {
        usage();
    };
    let Some((link, frames)) = read_capture(input) else {
        eprintln!("mutate-capture: {input}: cannot read it, or it mixes link types");
        std::process::exit(1);
    };
    let (records, report) = mutate(link, &frames, m);
    let written = std::fs::File::create(output).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        write_pcap(link, &records, &mut w)?;
        std::io::Write::flush(&mut w)
    });
    if let Err(e) = written {
        eprintln!("mutate-capture: {output}: {e}");
        std::process::exit(1);
    }
    println!(
        "{} frames written; {} data segments, {} moved, {} split, {} duplicated",
        records.len(),
        report.data_segments,
        report.moved,
        report.split,
        report.duplicated
    );
}

fn usage() -> ! {
    eprintln!("usage: mutate-capture IN OUT [--seed N] [--resplit] [--duplicate]");
    std::process::exit(2);
}
