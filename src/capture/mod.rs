//! Capture: where packets enter kafkashark.
//!
//! Place in the data path: the first stage. A [`FrameSource`] (a pcap/pcapng
//! file — read by the zero-copy [`fastfile`] reader, or libpcap — standard
//! input or a live interface through libpcap) yields
//! [`Frame`]s; [`link::decode_segment`] turns one frame into a TCP
//! [`Segment`] for the reassembler in `flow`.
//!
//! Invariants:
//! - `Frame::index` is the 1-based pcap frame number, counted over every
//!   record the source delivered, so it matches Wireshark's `frame.number`.
//! - `Frame::data` holds exactly `caplen` bytes; `origlen >= caplen` is not
//!   assumed (a corrupt file may claim less) and every reader uses checked
//!   arithmetic.
//! - The adapters in [`source`] are the only I/O in the engine; link-layer
//!   decoding is a pure function of the frame bytes.

#![deny(clippy::indexing_slicing)]

pub mod clocks;
pub mod fastfile;
pub mod link;
pub mod source;

use crate::vocab::Timestamp;
use bytes::Bytes;
use std::fmt;

pub use link::{decode_link_owned, decode_segment, FramePlace, Segment, Skip, TcpFlags};
pub use source::{
    CaptureStats, ClockOffset, FileSource, InLine, Join, LiveConfig, LiveSource, Polled, Seen,
    TcpFrame,
};

/// A link-layer header type, by its pcap `LINKTYPE_`/`DLT_` number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkType(pub u32);

impl LinkType {
    /// BSD loopback: 4-byte address family in the writer's byte order.
    pub const NULL: LinkType = LinkType(0);
    /// Ethernet II (with optional 802.1Q / QinQ tags).
    pub const ETHERNET: LinkType = LinkType(1);
    /// Raw IP as libpcap's `DLT_RAW` on Linux and most systems.
    pub const RAW_DLT: LinkType = LinkType(12);
    /// Raw IP, `LINKTYPE_RAW` as written in files.
    pub const RAW: LinkType = LinkType(101);
    /// OpenBSD loopback: 4-byte address family in network byte order.
    pub const LOOP: LinkType = LinkType(108);
    /// Linux cooked capture v1 (`-i any` on older libpcap).
    pub const LINUX_SLL: LinkType = LinkType(113);
    /// Raw IPv4.
    pub const IPV4: LinkType = LinkType(228);
    /// Raw IPv6.
    pub const IPV6: LinkType = LinkType(229);
    /// Linux cooked capture v2 (`-i any` on libpcap >= 1.10).
    pub const LINUX_SLL2: LinkType = LinkType(276);

    /// A short name for messages (`"EN10MB"`-style names are libpcap's; these are ours).
    pub fn name(self) -> &'static str {
        match self {
            LinkType::NULL => "NULL",
            LinkType::ETHERNET => "Ethernet",
            LinkType::RAW_DLT | LinkType::RAW => "raw IP",
            LinkType::LOOP => "LOOP",
            LinkType::LINUX_SLL => "Linux SLL",
            LinkType::IPV4 => "raw IPv4",
            LinkType::IPV6 => "raw IPv6",
            LinkType::LINUX_SLL2 => "Linux SLL2",
            _ => "unsupported",
        }
    }

    /// Whether [`link::decode_segment`] decodes frames of this type (the
    /// file reader opens files of these types only; libpcap reads the rest).
    pub fn decoded(self) -> bool {
        self.name() != "unsupported"
    }
}

impl fmt::Display for LinkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// One captured packet, as read from the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// 1-based pcap frame number.
    pub index: u64,
    /// Capture time (nanosecond precision when the source has it).
    pub ts: Timestamp,
    /// Bytes captured (`data.len()`).
    pub caplen: u32,
    /// Bytes on the wire; more than `caplen` when the snaplen cut the packet.
    pub origlen: u32,
    /// Link-layer header type of `data`.
    pub link: LinkType,
    /// The captured bytes, starting with the link-layer header.
    pub data: Bytes,
    /// Where `data` starts in the capture file, when the frame was read from a
    /// regular file by an offset-aware reader (`None` for live capture, stdin
    /// and synthetic frames). Lets the TUI re-read a message instead of
    /// keeping its bytes.
    pub file_offset: Option<u64>,
    /// Which of the captures read together it comes from (0 for the first
    /// or only one; see [`FileSource::open_all`]).
    pub capture: u16,
}

/// Why a capture source could not deliver a frame.
#[derive(Debug)]
pub enum CaptureError {
    /// The file (or `-` for stdin) could not be opened or is not a pcap/pcapng file.
    Open {
        /// Path as given.
        path: String,
        /// libpcap's reason.
        reason: String,
    },
    /// Reading stopped inside the file: truncated record, bad block, I/O error.
    Read {
        /// Path as given.
        path: String,
        /// 1-based frame number that could not be read (frames before it were delivered).
        frame: u64,
        /// libpcap's reason.
        reason: String,
    },
    /// The live interface could not be opened or configured.
    Live {
        /// Interface name.
        iface: String,
        /// What was being done (`"open"`, `"filter"`, ...).
        step: &'static str,
        /// libpcap's reason.
        reason: String,
    },
    /// Statistics could not be read from the capture handle.
    Stats {
        /// libpcap's reason.
        reason: String,
    },
}

/// What a live capture refused for want of privileges says to do
/// (docs/security.md, "Live capture without root").
pub const NEEDS_PRIVILEGE: &str = "capturing needs root, or the capabilities given once with \
     `sudo setcap cap_net_raw,cap_net_admin+eip \"$(command -v kafkashark)\"`";

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Open { path, reason } => {
                write!(f, "{path}: cannot open as pcap/pcapng: {reason}")
            }
            CaptureError::Read {
                path,
                frame,
                reason,
            } => write!(
                f,
                "{path}: frame {frame}: cannot read ({reason}); the {} frame(s) before it were read",
                frame.saturating_sub(1)
            ),
            CaptureError::Live {
                iface,
                step,
                reason,
            } => {
                write!(f, "interface {iface}: {step} failed: {reason}")?;
                let r = reason.to_ascii_lowercase();
                if r.contains("not permitted") || r.contains("permission") {
                    write!(f, "; {NEEDS_PRIVILEGE}")?;
                }
                Ok(())
            }
            CaptureError::Stats { reason } => write!(f, "capture statistics unavailable: {reason}"),
        }
    }
}

impl std::error::Error for CaptureError {}

/// A source of frames: a file, stdin or a live interface.
pub trait FrameSource {
    /// Wait for the next frame: `Frame`, `Timeout` (live only; lets callers tick), or `End`.
    fn poll(&mut self) -> Result<Polled, CaptureError>;

    /// The next frame, skipping live read timeouts; `None` at the end of the input.
    fn next_frame(&mut self) -> Result<Option<Frame>, CaptureError> {
        loop {
            match self.poll()? {
                Polled::Frame(f) => return Ok(Some(f)),
                Polled::Timeout => continue,
                Polled::End => return Ok(None),
            }
        }
    }

    /// Counters: frames delivered and, for live captures, kernel and interface drops.
    fn stats(&mut self) -> Result<CaptureStats, CaptureError>;

    /// The link type of the frames this source yields.
    fn link(&self) -> LinkType;

    /// Several captures read together: their clocks against each other
    /// ([`FileSource::clocks`]); empty otherwise.
    fn clocks(&self) -> &[ClockOffset] {
        &[]
    }

    /// Several captures read together: the pipeline's twin window
    /// ([`FileSource::twin_window_ns`]); `None` otherwise.
    fn twin_window_ns(&self) -> Option<u64> {
        None
    }
}
