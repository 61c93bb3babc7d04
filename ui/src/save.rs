//! Saving what was found: the packets that carried chosen messages, with
//! their connections' handshakes and closes, as a pcapng or pcap file that
//! kafkashark, tshark and Wireshark reopen.
//!
//! Place in the data path: a front end runs the analysis as usual and hands
//! each chosen message (with its provenance, the frames that carried its
//! bytes) to a [`Chosen`]; [`write`] then reads the capture again and copies
//! those frames, byte for byte with their times, and each chosen
//! connection's SYN, SYN/ACK, the client's ACK of it, FIN and RST segments.
//!
//! Invariants:
//! - a frame is saved at most once and in capture order, unchanged;
//! - a message's frames are the ones whose bytes it was framed from: a
//!   retransmission the reassembler did not use is not saved, a segment
//!   that also carried part of another message is (the packet is whole);
//! - what is remembered between the passes is one bit per frame of the
//!   capture up to the last chosen one, and one entry per chosen connection.

use std::collections::hash_map::Entry;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use kafkashark::capture::{decode_segment, FileSource, Frame, FrameSource, LinkType};
use kafkashark::kafka::framing::RawMessage;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, TsResolution};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::cli_error::CliError;
use crate::tui::store::Bitset;

/// A connection as the files saved from see it: the capture it is in
/// (its place among the files read together), client, broker.
type Conn = (u16, SocketAddr, SocketAddr);

/// The messages chosen for saving: their frames and connections.
#[derive(Debug, Default)]
pub struct Chosen {
    /// Bit `n` set: frame `n` carried bytes of a chosen message.
    frames: Bitset,
    /// Every connection with a chosen message.
    conns: FxHashSet<Conn>,
    /// The TLS connections seen, with their client randoms: one with a
    /// chosen message is saved whole (its records cannot be decrypted
    /// without every one before them).
    tls: FxHashMap<Conn, [u8; 32]>,
    /// Messages chosen.
    pub messages: u64,
}

impl Chosen {
    /// Chooses the message `raw` of the connection `client` → `broker` in
    /// capture `capture`: the frames that carried its bytes, and its
    /// connection.
    pub fn add(&mut self, capture: u16, client: SocketAddr, broker: SocketAddr, raw: &RawMessage) {
        self.messages += 1;
        self.conns.insert((capture, client, broker));
        self.set(raw.first_frame);
        for &(_, f) in &raw.provenance {
            self.set(f);
        }
    }

    /// Notes that `client` → `broker` in capture `capture` is a TLS
    /// connection, its session `random`.
    pub fn tls(&mut self, capture: u16, client: SocketAddr, broker: SocketAddr, random: [u8; 32]) {
        self.tls.insert((capture, client, broker), random);
    }

    /// Whether the connection is saved whole: TLS with a chosen message.
    fn whole(&self, key: &Conn) -> bool {
        self.conns.contains(key) && self.tls.contains_key(key)
    }

    /// The client randoms of the TLS connections saved, sorted.
    pub fn tls_randoms(&self) -> Vec<[u8; 32]> {
        let mut r: Vec<[u8; 32]> = (self.tls.iter())
            .filter(|(k, _)| self.conns.contains(k))
            .map(|(_, r)| *r)
            .collect();
        r.sort_unstable();
        r
    }

    fn set(&mut self, frame: u64) {
        if let Ok(i) = usize::try_from(frame) {
            self.frames.insert(i);
        }
    }

    /// Whether frame `frame` carried bytes of a chosen message.
    pub fn has(&self, frame: u64) -> bool {
        usize::try_from(frame).is_ok_and(|i| self.frames.get(i))
    }
}

/// What [`write`] saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saved {
    /// Frames written.
    pub frames: u64,
    /// Of them, handshake and close segments (no message bytes).
    pub control: u64,
}

/// The file formats [`write`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// pcapng: any mix of link types, nanosecond times.
    PcapNg,
    /// pcap (nanosecond): one link type.
    Pcap,
}

impl Format {
    /// pcap for a name ending in `.pcap` (any case), pcapng otherwise.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("pcap") => Format::Pcap,
            _ => Format::PcapNg,
        }
    }
}

/// Copies the frames of `inputs` that `chosen` names, and its connections'
/// handshake and close segments, to `out`: the files read together again,
/// merged by time and numbered as their analysis numbered them
/// ([`FileSource::open_all`]). Each input must be a file that reads the
/// same frames again (not standard input), and not `out` itself. With
/// `secrets` (pcapng only), a Decryption Secrets Block holding those TLS
/// key log lines comes before the frames.
pub fn write(
    inputs: &[String],
    chosen: &Chosen,
    out: &Path,
    secrets: Option<&str>,
) -> Result<Saved, CliError> {
    let written = std::fs::canonicalize(out).ok();
    let same = inputs
        .iter()
        .any(|i| written.is_some() && std::fs::canonicalize(i).ok() == written);
    if same {
        return Err(CliError::Usage(format!(
            "-w {}: that is a capture being read; save to another file",
            out.display()
        )));
    }
    let mut src = FileSource::open_all(inputs, &crate::Both).map_err(CliError::Capture)?;
    let name = out.display().to_string();
    let io = |err: std::io::Error| CliError::Io {
        path: name.clone(),
        err,
    };
    let file = std::fs::File::create(out).map_err(io)?;
    let mut w = Writer::new(Format::of(out), BufWriter::new(file), src.link())
        .map_err(|e| io(std::io::Error::other(e)))?;
    if let Some(s) = secrets.filter(|s| !s.is_empty()) {
        w.secrets(s.as_bytes())
            .map_err(|e| io(std::io::Error::other(e)))?;
    }
    let mut saved = Saved {
        frames: 0,
        control: 0,
    };
    let mut handshakes = Handshakes::default();
    while let Some(frame) = src.next_frame().map_err(CliError::Capture)? {
        let carried = chosen.has(frame.index);
        if !carried && !handshakes.keep(chosen, &frame) {
            continue;
        }
        w.frame(&frame).map_err(|why| CliError::Input {
            what: format!(
                "{}: frame {}",
                inputs
                    .get(usize::from(frame.capture))
                    .map_or("", String::as_str),
                frame.index
            ),
            why: format!("cannot save it to {name}: {why}"),
        })?;
        saved.frames += 1;
        saved.control += u64::from(!carried);
    }
    w.finish().map_err(io)?;
    Ok(saved)
}

/// Which segments of chosen connections carry no message bytes but are
/// saved: SYN, SYN/ACK, FIN, RST, and the client's ACK of the SYN/ACK (the
/// handshake's round trip needs it).
#[derive(Default)]
struct Handshakes {
    /// Per chosen connection whose SYN/ACK was seen: the acknowledgment
    /// number the client's ACK of it carries.
    expect: FxHashMap<Conn, u32>,
}

impl Handshakes {
    fn keep(&mut self, chosen: &Chosen, frame: &Frame) -> bool {
        let Ok(seg) = decode_segment(frame) else {
            return false;
        };
        let c = frame.capture;
        let (key, from_client) = if chosen.conns.contains(&(c, seg.src, seg.dst)) {
            ((c, seg.src, seg.dst), true)
        } else if chosen.conns.contains(&(c, seg.dst, seg.src)) {
            ((c, seg.dst, seg.src), false)
        } else {
            return false;
        };
        if chosen.whole(&key) {
            return true;
        }
        let f = seg.flags;
        if f.syn && f.ack && !from_client {
            self.expect.insert(key, seg.seq.wrapping_add(1));
            return true;
        }
        if f.syn || f.fin || f.rst {
            return true;
        }
        let bare = seg.payload.is_empty() && seg.payload_truncated_by == 0;
        match self.expect.entry(key) {
            Entry::Occupied(e) if from_client && f.ack && bare && *e.get() == seg.ack => {
                e.remove();
                true
            }
            _ => false,
        }
    }
}

/// The longest frame a saved pcap declares (its snaplen): libpcap's and
/// Wireshark's own limit.
const PCAP_SNAPLEN: u32 = 262_144;

/// A pcap or pcapng file being written.
enum Writer<W: Write> {
    Pcap(PcapWriter<W>, LinkType),
    Ng(PcapNgWriter<W>, Vec<LinkType>),
}

impl<W: Write> Writer<W> {
    fn new(format: Format, w: W, link: LinkType) -> Result<Writer<W>, String> {
        Ok(match format {
            Format::Pcap => {
                let header = PcapHeader {
                    snaplen: PCAP_SNAPLEN,
                    datalink: DataLink::from(link.0),
                    ts_resolution: TsResolution::NanoSecond,
                    ..PcapHeader::default()
                };
                Writer::Pcap(
                    PcapWriter::with_header(w, header).map_err(|e| e.to_string())?,
                    link,
                )
            }
            Format::PcapNg => {
                // The capture's link type is interface 0 even when no frame
                // is saved: a pcapng without one does not open.
                let mut w =
                    Writer::Ng(PcapNgWriter::new(w).map_err(|e| e.to_string())?, Vec::new());
                w.interface(link)?;
                w
            }
        })
    }

    /// The pcapng interface of `link`, described on first use.
    fn interface(&mut self, link: LinkType) -> Result<u32, String> {
        let Writer::Ng(w, links) = self else {
            return Ok(0);
        };
        let id = match links.iter().position(|l| *l == link) {
            Some(i) => i,
            None => {
                w.write_pcapng_block(InterfaceDescriptionBlock {
                    linktype: DataLink::from(link.0),
                    snaplen: 0,
                    options: vec![InterfaceDescriptionOption::IfTsResol(9)],
                })
                .map_err(|e| e.to_string())?;
                links.push(link);
                links.len() - 1
            }
        };
        u32::try_from(id).map_err(|e| e.to_string())
    }

    fn frame(&mut self, frame: &Frame) -> Result<(), String> {
        let secs = u64::try_from(frame.ts.secs).map_err(|_| "a time before 1970".to_string())?;
        let ts = Duration::new(secs, frame.ts.nanos);
        let len = frame.origlen.max(frame.caplen);
        match self {
            Writer::Pcap(w, link) => {
                if frame.link != *link {
                    return Err(format!(
                        "its link type ({}) is not the file's ({}); save as .pcapng",
                        frame.link.name(),
                        link.name()
                    ));
                }
                if frame.caplen > PCAP_SNAPLEN {
                    return Err(format!(
                        "{} bytes is more than a pcap holds ({PCAP_SNAPLEN}); save as .pcapng",
                        frame.caplen
                    ));
                }
                w.write_packet(&PcapPacket::new(ts, len, &frame.data))
                    .map_err(|e| e.to_string())?;
            }
            Writer::Ng(..) => {
                let interface_id = self.interface(frame.link)?;
                let Writer::Ng(w, _) = self else {
                    return Ok(());
                };
                w.write_pcapng_block(EnhancedPacketBlock {
                    interface_id,
                    timestamp: ts,
                    original_len: len,
                    data: std::borrow::Cow::Borrowed(&frame.data),
                    options: Vec::new(),
                })
                .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// A Decryption Secrets Block of TLS key log lines (pcapng only).
    fn secrets(&mut self, keylog: &[u8]) -> Result<(), String> {
        let Writer::Ng(w, _) = self else {
            return Err("a pcap holds no keys".into());
        };
        let big = w.section().endianness == pcap_file::Endianness::Big;
        let word = |n: u32| {
            if big {
                n.to_be_bytes()
            } else {
                n.to_le_bytes()
            }
        };
        let len = u32::try_from(keylog.len()).map_err(|e| e.to_string())?;
        // Secrets type "TLSK", its length, the lines padded to 32 bits.
        let mut body = Vec::with_capacity(keylog.len() + 12);
        body.extend_from_slice(&word(0x544c_534b));
        body.extend_from_slice(&word(len));
        body.extend_from_slice(keylog);
        body.resize(body.len().next_multiple_of(4), 0);
        let total = u32::try_from(body.len() + 12).map_err(|e| e.to_string())?;
        let block =
            pcap_file::pcapng::blocks::unknown::UnknownBlock::new(0x0000_000A, total, &body);
        w.write_pcapng_block(block).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Writer::Pcap(w, _) => w.into_writer().flush(),
            Writer::Ng(w, _) => w.into_inner().flush(),
        }
    }
}
