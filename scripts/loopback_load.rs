//! `loopback-load`: replays the Kafka conversations of a capture over real TCP
//! connections on loopback, at a chosen message rate, so that a live capture
//! (`kafkashark … -i lo`) can be measured against a known load (the live
//! target: keep up with 100,000 Kafka messages per second on loopback).
//!
//!     cargo run --release --example loopback-load -- FILE [--rate 100000]
//!         [--seconds 10] [--port 19092] [--connections 0] [--max-message 65536]
//!
//! The capture's messages are read with kafkashark's own pipeline (requests
//! and responses of each connection, in capture order). The load opens a
//! client/server socket pair on 127.0.0.1:PORT per capture connection (or
//! `--connections N` pairs, capture connection *i* on pair *i mod N*) and
//! writes each connection's messages on its pair: requests from the
//! client socket, responses from the server socket, one message at a time in
//! capture order, paced to `--rate` messages per second, looping over the
//! capture until `--seconds` have passed. Each loop over the capture starts
//! fresh connections, so correlation ids never repeat on a connection.
//! Consecutive messages in one direction of a connection are written with one
//! `write` (flushed at every pacing tick, every 256 messages), as pipelining
//! clients do. Messages larger than `--max-message` are left out, and with a
//! request its response. One thread reads and discards what every socket receives. At the end it prints the messages and bytes written and
//! the rate achieved: that is the load the capture side must keep up with.
//! Loopback only: it never connects anywhere else.

use kafkashark::vocab::Direction;
use std::collections::hash_map::{Entry, HashMap};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafkashark::capture::{FileSource, FrameSource, Polled};
use kafkashark::pipeline::{Event, Pipeline, PipelineConfig};

struct Args {
    file: String,
    rate: u64,
    seconds: u64,
    port: u16,
    connections: usize,
    max_message: usize,
}

fn usage() -> ! {
    eprintln!(
        "usage: loopback-load FILE [--rate N] [--seconds S] [--port P] [--connections C] [--max-message B]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        file: String::new(),
        rate: 100_000,
        seconds: 10,
        port: 19092,
        connections: 0,
        max_message: 65536,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        let num = |it: &mut dyn Iterator<Item = String>| -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match s.as_str() {
            "--rate" => a.rate = num(&mut it).max(1),
            "--seconds" => a.seconds = num(&mut it),
            "--port" => a.port = u16::try_from(num(&mut it)).unwrap_or_else(|_| usage()),
            "--connections" => a.connections = num(&mut it) as usize,
            "--max-message" => a.max_message = num(&mut it) as usize,
            f if !f.starts_with("--") && a.file.is_empty() => a.file = f.to_string(),
            _ => usage(),
        }
    }
    if a.file.is_empty() {
        usage()
    }
    a
}

/// The capture's complete messages: (capture connection, direction, bytes).
fn messages(path: &str, max_message: usize) -> Vec<(u64, Direction, Bytes)> {
    let mut src = FileSource::open(path).unwrap_or_else(|e| {
        eprintln!("loopback-load: {e}");
        std::process::exit(1)
    });
    let mut pipe = Pipeline::new(PipelineConfig::default());
    let (mut events, mut out) = (Vec::new(), Vec::new());
    // A request left out takes its response with it (a response without its
    // request is not what a real client sees).
    let mut left_out = std::collections::HashSet::new();
    let mut take = |events: &mut Vec<Event>| {
        for e in events.drain(..) {
            if let Event::Message(m) = e {
                let key = (m.stream, m.correlation_id());
                let keep = match m.dir {
                    Direction::ClientToBroker if m.bytes.len() > max_message => {
                        left_out.insert(key);
                        false
                    }
                    Direction::ClientToBroker => true,
                    Direction::BrokerToClient => {
                        !left_out.remove(&key) && m.bytes.len() <= max_message
                    }
                };
                if keep {
                    out.push((m.stream, m.dir, m.bytes));
                }
            }
        }
    };
    while let Ok(Polled::Frame(f)) = src.poll() {
        pipe.push(f, &mut events);
        take(&mut events);
    }
    pipe.finish(&mut events);
    take(&mut events);
    out
}

/// Reads and throws away what arrives on every socket handed to it, so that
/// writes never stall: one thread polling non-blocking sockets in turn (a
/// thread per socket runs into the thread limit at a few thousand connections).
struct Drainer(std::sync::mpsc::Sender<TcpStream>);

impl Drainer {
    fn start() -> Drainer {
        let (tx, rx) = std::sync::mpsc::channel::<TcpStream>();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            let mut socks: Vec<TcpStream> = Vec::new();
            loop {
                loop {
                    match rx.try_recv() {
                        Ok(s) => {
                            if s.set_nonblocking(true).is_ok() {
                                socks.push(s);
                            }
                        }
                        Err(std::sync::mpsc::TryRecvError::Empty) => break,
                        Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
                    }
                }
                let mut read_any = false;
                socks.retain_mut(|s| loop {
                    match s.read(&mut buf) {
                        Ok(0) => return false,
                        Ok(_) => read_any = true,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                        Err(_) => return false,
                    }
                });
                if !read_any {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        });
        Drainer(tx)
    }

    fn add(&self, s: TcpStream) {
        let _ = self.0.send(s);
    }
}

/// A client/server socket pair with the bytes waiting to be written on each
/// side. Consecutive messages in one direction are written together (as a
/// pipelining client or a busy broker would); a message in the other direction
/// first flushes what is waiting, so each side sees the conversation in order.
struct Pair {
    socks: [TcpStream; 2],
    pending: [Vec<u8>; 2],
}

impl Pair {
    fn open(
        listener: &TcpListener,
        addr: SocketAddrV4,
        drainer: &Drainer,
    ) -> std::io::Result<Pair> {
        let client = TcpStream::connect(addr)?;
        let (server, _) = listener.accept()?;
        for s in [&client, &server] {
            s.set_nodelay(true)?;
            drainer.add(s.try_clone()?);
        }
        Ok(Pair {
            socks: [client, server],
            pending: [Vec::new(), Vec::new()],
        })
    }

    fn send(&mut self, dir: Direction, msg: &[u8]) -> std::io::Result<()> {
        let (this, other) = match dir {
            Direction::ClientToBroker => (0, 1),
            Direction::BrokerToClient => (1, 0),
        };
        self.flush_side(other)?;
        self.pending[this].extend_from_slice(msg);
        if self.pending[this].len() >= 64 * 1024 {
            self.flush_side(this)?;
        }
        Ok(())
    }

    fn flush_side(&mut self, i: usize) -> std::io::Result<()> {
        if !self.pending[i].is_empty() {
            self.socks[i].write_all(&self.pending[i])?;
            self.pending[i].clear();
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flush_side(0)?;
        self.flush_side(1)
    }
}

impl Drop for Pair {
    /// FIN both ways: the drainer then reads the end of both sockets and lets
    /// go of its handles, which closes them.
    fn drop(&mut self) {
        for s in &self.socks {
            let _ = s.shutdown(std::net::Shutdown::Write);
        }
    }
}

fn main() -> std::io::Result<()> {
    let a = parse_args();
    let msgs = messages(&a.file, a.max_message);
    if msgs.is_empty() {
        eprintln!("loopback-load: {}: no Kafka messages to replay", a.file);
        std::process::exit(1);
    }
    let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, a.port);
    let listener = TcpListener::bind(addr)?;
    eprintln!(
        "loopback-load: {} messages from {}; {} connections on {addr}, {} msg/s for {} s",
        msgs.len(),
        a.file,
        a.connections,
        a.rate,
        a.seconds
    );
    let drainer = Drainer::start();
    let start = Instant::now();
    let deadline = Duration::from_secs(a.seconds);
    let (mut sent, mut bytes, mut loops) = (0u64, 0u64, 0u64);
    'outer: loop {
        let mut pairs: HashMap<u64, Pair> = HashMap::new();
        loops += 1;
        for (stream, dir, b) in &msgs {
            // Pace: message `sent` is due at sent / rate seconds. Pending writes
            // go out at every tick.
            if sent % 256 == 0 {
                for p in pairs.values_mut() {
                    p.flush()?;
                }
                let due = Duration::from_nanos(sent.saturating_mul(1_000_000_000) / a.rate);
                let now = start.elapsed();
                if now >= deadline {
                    break 'outer;
                }
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            let key = match a.connections {
                0 => *stream,
                n => *stream % n as u64,
            };
            let p = match pairs.entry(key) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(Pair::open(&listener, addr, &drainer)?),
            };
            p.send(*dir, b)?;
            sent += 1;
            bytes += b.len() as u64;
        }
        for p in pairs.values_mut() {
            p.flush()?;
        }
        // Dropping the pairs closes this loop's connections (FIN both ways).
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "sent {sent} messages ({bytes} bytes) in {secs:.2} s over {loops} loop(s): {:.0} msg/s, {:.1} MB/s",
        sent as f64 / secs,
        bytes as f64 / secs / 1e6
    );
    Ok(())
}
