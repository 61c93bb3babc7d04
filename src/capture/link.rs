//! Link-layer decoding: one captured frame → one TCP [`Segment`] (or a reason to skip it).
//!
//! Place in the data path: between the capture adapters and TCP reassembly.
//! Pure: a function of the frame's link type and bytes, testable without libpcap.
//!
//! Link types: Ethernet II with 802.1Q/QinQ tags, Linux SLL (113) and SLL2
//! (276), BSD NULL (0) and LOOP (108) in either byte order, raw IP (12, 101)
//! and raw IPv4/IPv6 (228/229). The link header is read here; IPv4, IPv6
//! (extension headers included) and TCP are sliced by etherparse's lax parser,
//! which tolerates packets cut by the snaplen.
//!
//! Invariants: `Segment::payload` is a zero-copy slice of `Frame::data`;
//! `payload_truncated_by` counts the TCP payload bytes the snaplen removed
//! (never more than `origlen - caplen`); trailing link padding is excluded
//! because the IP length bounds the payload. The TCP checksum is not verified
//! (captures on the sending host see unfinished offloaded checksums).

use super::{Frame, LinkType};
use bytes::{Buf, Bytes};
use etherparse::{EtherType, LaxNetSlice, LaxSlicedPacket, TransportSlice};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// The TCP flags the reassembler uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags {
    /// SYN: the sequence number is the initial one.
    pub syn: bool,
    /// FIN: the sender has no more data after this segment.
    pub fin: bool,
    /// RST: the connection is aborted.
    pub rst: bool,
    /// ACK: the acknowledgment number is valid.
    pub ack: bool,
}

/// One TCP segment, decoded from a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Sender address and port.
    pub src: SocketAddr,
    /// Receiver address and port.
    pub dst: SocketAddr,
    /// Sequence number of the first payload byte (of the SYN when `flags.syn`).
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// SYN/FIN/RST/ACK.
    pub flags: TcpFlags,
    /// TCP payload bytes present in the capture: a slice of the frame's data.
    pub payload: Bytes,
    /// Payload bytes that were on the wire but cut by the snaplen.
    pub payload_truncated_by: u32,
    /// Which of the captures read together it was seen in (0 for the first
    /// or only one): two captures' segments are never one connection's.
    pub capture: u16,
}

/// Why a frame yields no segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The link type is not one we decode.
    UnsupportedLink(LinkType),
    /// The frame carries no IP packet (ARP, LLDP, an unknown EtherType or family).
    NotIp,
    /// The IP packet is not TCP.
    NotTcp {
        /// IP protocol number (17 = UDP, ...).
        protocol: u8,
    },
    /// The IP packet is a fragment; IP reassembly is not supported.
    Fragmented,
    /// A header could not be read.
    Malformed {
        /// The layer that failed (`"Ethernet"`, `"IPv4"`, `"TCP"`, ...).
        layer: &'static str,
        /// Offset in the frame where that layer starts.
        offset: usize,
        /// What was wrong.
        detail: String,
    },
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::UnsupportedLink(l) => write!(f, "unsupported link type {}", l.0),
            Skip::NotIp => write!(f, "not an IP packet"),
            Skip::NotTcp { protocol } => write!(f, "not TCP (IP protocol {protocol})"),
            Skip::Fragmented => write!(f, "fragmented IP packet (IP reassembly unsupported)"),
            Skip::Malformed {
                layer,
                offset,
                detail,
            } => write!(f, "malformed {layer} header at offset {offset}: {detail}"),
        }
    }
}

impl std::error::Error for Skip {}

impl Skip {
    /// The `layer` header at `offset` could not be read: `detail`.
    fn malformed(layer: &'static str, offset: usize, detail: impl ToString) -> Skip {
        Skip::Malformed {
            layer,
            offset,
            detail: detail.to_string(),
        }
    }
}

/// Decode a frame into a TCP segment.
pub fn decode_segment(frame: &Frame) -> Result<Segment, Skip> {
    decode_link_owned(frame.link, frame.data.clone(), frame.origlen)
}

/// Decode link-layer bytes of the type `link`, given up by the caller;
/// `origlen` is the on-the-wire length. On the common path
/// (Ethernet, IPv4, TCP) the payload is `data` itself, cut to the payload's
/// range, with no reference count taken or dropped (`Bytes::slice` and the
/// frame's drop are two atomic operations on a count the analyzer's thread
/// also changes).
pub fn decode_link_owned(link: LinkType, mut data: Bytes, origlen: u32) -> Result<Segment, Skip> {
    if link == LinkType::ETHERNET {
        if let Some((mut seg, payload)) = ethernet_ipv4_tcp(&data) {
            if !payload.is_empty() {
                data.truncate(payload.end);
                data.advance(payload.start);
                seg.payload = data;
            }
            return Ok(seg);
        }
    }
    decode_link_lax(link, &data, origlen)
}

/// [`decode_link_owned`] by etherparse's lax slicing alone.
fn decode_link_lax(link: LinkType, data: &Bytes, origlen: u32) -> Result<Segment, Skip> {
    let bytes: &[u8] = data;
    let short =
        |layer, need| Skip::malformed(layer, 0, format!("need {need} bytes, have {}", bytes.len()));
    let pkt = match link {
        LinkType::ETHERNET => {
            LaxSlicedPacket::from_ethernet(bytes).map_err(|e| Skip::malformed("Ethernet", 0, e))?
        }
        LinkType::LINUX_SLL | LinkType::LINUX_SLL2 => {
            // SLL: packet type(2) ARPHRD type(2) address length(2) address(8) protocol(2).
            // SLL2: protocol(2) reserved(2) ifindex(4) ARPHRD type(2) packet type(1)
            // address length(1) address(8).
            let (layer, protocol, len) = match link {
                LinkType::LINUX_SLL => ("Linux SLL", 14..16, 16),
                _ => ("Linux SLL2", 0..2, 20),
            };
            let proto = be16(bytes.get(protocol)).ok_or_else(|| short(layer, len))?;
            let rest = bytes.get(len..).ok_or_else(|| short(layer, len))?;
            from_protocol(proto, rest)?
        }
        LinkType::NULL | LinkType::LOOP => {
            // A 4-byte address family in the writer's byte order (NULL) or network order (LOOP).
            let Some(&[a, b, c, d]) = bytes.get(0..4) else {
                return Err(short("NULL/LOOP", 4));
            };
            let le = u32::from_le_bytes([a, b, c, d]);
            let be = u32::from_be_bytes([a, b, c, d]);
            let family = le.min(be);
            // AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24 (NetBSD/OpenBSD),
            // 28 (FreeBSD), 30 (macOS).
            if !matches!(family, 2 | 10 | 24 | 28 | 30) {
                return Err(Skip::NotIp);
            }
            let rest = bytes.get(4..).unwrap_or_default();
            from_raw_ip(rest)?
        }
        LinkType::RAW_DLT | LinkType::RAW | LinkType::IPV4 | LinkType::IPV6 => from_raw_ip(bytes)?,
        other => return Err(Skip::UnsupportedLink(other)),
    };
    segment_from(pkt, data, origlen)
}

/// The common case read directly: an untagged Ethernet II frame holding one
/// whole, unfragmented IPv4 packet (its total length within the frame) whose
/// TCP header is whole. Anything else is `None` and goes to etherparse. For
/// the frames it takes, the answer is the one etherparse's lax slicing gives
/// (`fast_path_agrees_with_etherparse` compares the two).
/// The segment comes without its payload, whose range in `b` is given
/// beside it (the callers cut it as their ownership of the bytes allows:
/// the file reader decodes frames in its read buffer this way, see
/// [`super::FileSource::poll_with`]).
#[inline(always)]
pub(crate) fn ethernet_ipv4_tcp(b: &[u8]) -> Option<(Segment, std::ops::Range<usize>)> {
    const ETH: usize = 14;
    let ip = b.get(ETH..)?;
    if b.get(12..14)? != [0x08, 0x00] {
        return None;
    }
    let (&vihl, ip_fixed) = ip.split_first()?;
    let ip_fixed: &[u8; 19] = ip_fixed.get(..19)?.try_into().ok()?;
    if vihl >> 4 != 4 {
        return None;
    }
    let hl = usize::from(vihl & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip_fixed[1], ip_fixed[2]]));
    // Flags and fragment offset: only DF may be set.
    let frag = u16::from_be_bytes([ip_fixed[5], ip_fixed[6]]) & 0x3fff;
    if hl < 20 || total < hl || total > ip.len() || frag != 0 || ip_fixed[8] != 6 {
        return None;
    }
    let src = std::net::Ipv4Addr::new(ip_fixed[11], ip_fixed[12], ip_fixed[13], ip_fixed[14]);
    let dst = std::net::Ipv4Addr::new(ip_fixed[15], ip_fixed[16], ip_fixed[17], ip_fixed[18]);
    let tcp = ip.get(hl..total)?;
    let t: &[u8; 20] = tcp.get(..20)?.try_into().ok()?;
    let thl = usize::from(t[12] >> 4) * 4;
    if thl < 20 || thl > tcp.len() {
        return None;
    }
    let start = ETH + hl + thl;
    let end = ETH + total;
    let flags = t[13];
    let seg = Segment {
        src: SocketAddr::new(IpAddr::V4(src), u16::from_be_bytes([t[0], t[1]])),
        dst: SocketAddr::new(IpAddr::V4(dst), u16::from_be_bytes([t[2], t[3]])),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: TcpFlags {
            syn: flags & 0x02 != 0,
            fin: flags & 0x01 != 0,
            rst: flags & 0x04 != 0,
            ack: flags & 0x10 != 0,
        },
        payload: Bytes::new(),
        payload_truncated_by: 0,
        capture: 0,
    };
    Some((seg, start..end))
}

fn be16(b: Option<&[u8]>) -> Option<u16> {
    match b {
        Some(&[a, b]) => Some(u16::from_be_bytes([a, b])),
        _ => None,
    }
}

fn from_protocol(proto: u16, rest: &[u8]) -> Result<LaxSlicedPacket<'_>, Skip> {
    // Linux SLL carries an EtherType for IP; other values (e.g. 0x0004 for 802.2) are not IP.
    if proto <= 0x05ff {
        return Err(Skip::NotIp);
    }
    Ok(LaxSlicedPacket::from_ether_type(EtherType(proto), rest))
}

fn from_raw_ip(rest: &[u8]) -> Result<LaxSlicedPacket<'_>, Skip> {
    match rest.first().map(|b| b >> 4) {
        Some(4) | Some(6) => {}
        Some(_) => return Err(Skip::NotIp),
        None => return Err(Skip::malformed("IP", 0, "no bytes")),
    }
    LaxSlicedPacket::from_ip(rest).map_err(|e| Skip::malformed("IP", 0, e))
}

/// Offset of `sub` inside `whole` (both from the same allocation).
fn offset_in(whole: &[u8], sub: &[u8]) -> Option<usize> {
    let o = (sub.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    if o.checked_add(sub.len())? <= whole.len() {
        Some(o)
    } else {
        None
    }
}

fn layer_name(l: etherparse::err::Layer) -> &'static str {
    use etherparse::err::Layer as L;
    match l {
        L::LinuxSllHeader => "Linux SLL",
        L::Ethernet2Header => "Ethernet",
        L::VlanHeader => "VLAN",
        L::Ipv4Header | L::Ipv4Packet => "IPv4",
        L::Ipv6Header | L::Ipv6Packet => "IPv6",
        L::TcpHeader => "TCP",
        _ => "IP",
    }
}

fn segment_from(pkt: LaxSlicedPacket<'_>, data: &Bytes, origlen: u32) -> Result<Segment, Skip> {
    let whole: &[u8] = data;
    let malformed = |pkt: &LaxSlicedPacket<'_>| match &pkt.stop_err {
        Some((e, layer)) => Skip::malformed(layer_name(*layer), 0, e),
        None => Skip::NotIp,
    };
    let (src_ip, dst_ip, ip_payload, ip_start, claimed): (IpAddr, IpAddr, _, _, Option<usize>) =
        match &pkt.net {
            Some(LaxNetSlice::Ipv4(ip)) => {
                let h = ip.header();
                let hl = usize::from(h.ihl()) * 4;
                let total = usize::from(h.total_len());
                (
                    h.source_addr().into(),
                    h.destination_addr().into(),
                    ip.payload().clone(),
                    offset_in(whole, h.slice()),
                    // A zero total length is what TSO leaves on the sending host: unknown.
                    (total >= hl).then_some(total),
                )
            }
            Some(LaxNetSlice::Ipv6(ip)) => {
                let h = ip.header();
                let pl = usize::from(h.payload_length());
                (
                    h.source_addr().into(),
                    h.destination_addr().into(),
                    ip.payload().clone(),
                    offset_in(whole, h.slice()),
                    // Zero means a jumbogram or offload: unknown.
                    (pl > 0).then_some(40 + pl),
                )
            }
            Some(LaxNetSlice::Arp(_)) => return Err(Skip::NotIp),
            None => return Err(malformed(&pkt)),
        };
    if ip_payload.fragmented {
        return Err(Skip::Fragmented);
    }
    if ip_payload.ip_number != etherparse::IpNumber::TCP {
        return Err(Skip::NotTcp {
            protocol: ip_payload.ip_number.0,
        });
    }
    let tcp = match &pkt.transport {
        Some(TransportSlice::Tcp(t)) => t,
        _ => {
            let mut e = malformed(&pkt);
            if e == Skip::NotIp {
                e = Skip::malformed("TCP", 0, "no TCP header");
            }
            if let (Skip::Malformed { offset, .. }, Some(o)) =
                (&mut e, offset_in(whole, ip_payload.payload))
            {
                *offset = o;
            }
            return Err(e);
        }
    };
    let payload = tcp.payload();
    let start = offset_in(whole, payload)
        .ok_or_else(|| Skip::malformed("TCP", 0, "payload outside frame"))?;
    let end = start.checked_add(payload.len()).ok_or(Skip::NotIp)?;
    let caplen = u32::try_from(whole.len()).unwrap_or(u32::MAX);
    let snap_cut = origlen.saturating_sub(caplen);
    let cut = match (claimed, ip_start) {
        (Some(claimed), Some(ip_start)) if snap_cut > 0 => {
            let available = whole.len().saturating_sub(ip_start);
            let missing = u32::try_from(claimed.saturating_sub(available)).unwrap_or(u32::MAX);
            missing.min(snap_cut)
        }
        _ => 0,
    };
    let port = |p: u16, ip: IpAddr| SocketAddr::new(ip, p);
    Ok(Segment {
        src: port(tcp.source_port(), src_ip),
        dst: port(tcp.destination_port(), dst_ip),
        seq: tcp.sequence_number(),
        ack: tcp.acknowledgment_number(),
        flags: TcpFlags {
            syn: tcp.syn(),
            fin: tcp.fin(),
            rst: tcp.rst(),
            ack: tcp.ack(),
        },
        payload: data.slice(start..end),
        payload_truncated_by: cut,
        capture: 0,
    })
}

/// Where a frame's bytes lie, in memory and in its capture file: enough to
/// say where a segment's payload starts in the file once the frame's bytes
/// have become that payload ([`decode_link_owned`]).
#[derive(Clone, Copy, Debug)]
pub struct FramePlace {
    file_offset: Option<u64>,
    addr: usize,
    len: usize,
}

impl FramePlace {
    /// The place of `frame`'s bytes.
    pub fn of(frame: &Frame) -> FramePlace {
        FramePlace {
            file_offset: frame.file_offset,
            addr: frame.data.as_ptr() as usize,
            len: frame.data.len(),
        }
    }

    /// Where `seg`'s payload starts in the capture file: the frame's file
    /// offset plus the payload's offset in the frame's bytes (the payload is
    /// a zero-copy slice of them). `None` when the frame has no file offset,
    /// or the payload is empty or not a slice of the frame's bytes.
    pub fn payload_offset(self, seg: &Segment) -> Option<u64> {
        let base = self.file_offset?;
        let start = (seg.payload.as_ptr() as usize).checked_sub(self.addr)?;
        let end = start.checked_add(seg.payload.len())?;
        if seg.payload.is_empty() || end > self.len {
            return None;
        }
        base.checked_add(u64::try_from(start).ok()?)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// IPv4 (20 bytes) + TCP (20 bytes) + "KAFKA", 10.0.0.1:40000 → 10.0.0.2:9092.
    fn ipv4_tcp() -> Vec<u8> {
        vec![
            0x45, 0x00, // version 4, IHL 5 (20 bytes); DSCP/ECN 0
            0x00, 0x2d, // total length 45 = 20 IP + 20 TCP + 5 payload
            0x12, 0x34, // identification
            0x40, 0x00, // flags DF, fragment offset 0
            0x40, 0x06, // TTL 64, protocol 6 = TCP
            0x00, 0x00, // header checksum (not checked)
            10, 0, 0, 1, // source 10.0.0.1
            10, 0, 0, 2, // destination 10.0.0.2
            0x9c, 0x40, // source port 40000
            0x23, 0x84, // destination port 9092
            0xff, 0xff, 0xff, 0xf0, // sequence number 0xfffffff0 (near the wrap)
            0x00, 0x00, 0x00, 0x07, // acknowledgment number 7
            0x50, 0x18, // data offset 5 (20 bytes); flags PSH|ACK
            0xff, 0xff, // window
            0x00, 0x00, // checksum (not checked: offload)
            0x00, 0x00, // urgent pointer
            b'K', b'A', b'F', b'K', b'A', // payload
        ]
    }

    fn check_kafka(seg: &Segment) {
        assert_eq!(seg.src, "10.0.0.1:40000".parse().unwrap());
        assert_eq!(seg.dst, "10.0.0.2:9092".parse().unwrap());
        assert_eq!(seg.seq, 0xffff_fff0);
        assert_eq!(seg.ack, 7);
        assert_eq!(
            seg.flags,
            TcpFlags {
                syn: false,
                fin: false,
                rst: false,
                ack: true
            }
        );
        assert_eq!(&seg.payload[..], b"KAFKA");
        assert_eq!(seg.payload_truncated_by, 0);
    }

    fn decode_link(link: LinkType, data: &Bytes, origlen: u32) -> Result<Segment, Skip> {
        decode_link_owned(link, data.clone(), origlen)
    }

    fn decode(link: LinkType, bytes: Vec<u8>) -> Result<Segment, Skip> {
        let origlen = bytes.len() as u32;
        decode_link(link, &Bytes::from(bytes), origlen)
    }

    #[test]
    fn ethernet_ipv4_with_padding() {
        let mut f = vec![
            0x02, 0, 0, 0, 0, 0x02, // destination MAC
            0x02, 0, 0, 0, 0, 0x01, // source MAC
            0x08, 0x00, // EtherType IPv4
        ];
        f.extend(ipv4_tcp());
        f.extend([0u8; 6]); // Ethernet padding / FCS: not payload
        let data = Bytes::from(f);
        let seg = decode_link(LinkType::ETHERNET, &data, data.len() as u32).unwrap();
        check_kafka(&seg);
        // Zero copy: the payload points into the frame buffer.
        assert_eq!(seg.payload.as_ptr(), data[54..].as_ptr());
    }

    #[test]
    fn ethernet_qinq() {
        let mut f = vec![
            0x02, 0, 0, 0, 0, 0x02, // destination MAC
            0x02, 0, 0, 0, 0, 0x01, // source MAC
            0x88, 0xa8, // EtherType 802.1ad (outer tag follows)
            0x00, 0x64, // outer TCI: VLAN 100
            0x81, 0x00, // EtherType 802.1Q (inner tag follows)
            0x00, 0xc8, // inner TCI: VLAN 200
            0x08, 0x00, // EtherType IPv4
        ];
        f.extend(ipv4_tcp());
        check_kafka(&decode(LinkType::ETHERNET, f).unwrap());
    }

    #[test]
    fn ethernet_single_vlan() {
        let mut f = vec![
            0x02, 0, 0, 0, 0, 0x02, // destination MAC
            0x02, 0, 0, 0, 0, 0x01, // source MAC
            0x81, 0x00, // 802.1Q
            0x00, 0x0a, // VLAN 10
            0x08, 0x00, // IPv4
        ];
        f.extend(ipv4_tcp());
        check_kafka(&decode(LinkType::ETHERNET, f).unwrap());
    }

    #[test]
    fn linux_sll() {
        let mut f = vec![
            0x00, 0x00, // packet type: to us
            0x00, 0x01, // ARPHRD_ETHER
            0x00, 0x06, // address length 6
            0x02, 0, 0, 0, 0, 0x01, 0, 0, // address, padded to 8
            0x08, 0x00, // protocol: IPv4
        ];
        f.extend(ipv4_tcp());
        check_kafka(&decode(LinkType::LINUX_SLL, f).unwrap());
    }

    #[test]
    fn linux_sll2() {
        let mut f = vec![
            0x08, 0x00, // protocol: IPv4
            0x00, 0x00, // reserved
            0x00, 0x00, 0x00, 0x01, // interface index 1 (lo)
            0x03, 0x04, // ARPHRD_LOOPBACK (772)
            0x00, // packet type: to us
            0x06, // address length 6
            0, 0, 0, 0, 0, 0, 0, 0, // address, padded to 8
        ];
        f.extend(ipv4_tcp());
        check_kafka(&decode(LinkType::LINUX_SLL2, f).unwrap());
    }

    #[test]
    fn null_and_loop_both_byte_orders() {
        let mut le = vec![0x02, 0x00, 0x00, 0x00]; // AF_INET, little-endian writer
        le.extend(ipv4_tcp());
        check_kafka(&decode(LinkType::NULL, le).unwrap());
        let mut be = vec![0x00, 0x00, 0x00, 0x02]; // AF_INET, big-endian (LOOP)
        be.extend(ipv4_tcp());
        check_kafka(&decode(LinkType::LOOP, be.clone()).unwrap());
        check_kafka(&decode(LinkType::NULL, be).unwrap());
        let mut other = vec![0x07, 0x00, 0x00, 0x00]; // family 7: not IP
        other.extend(ipv4_tcp());
        assert_eq!(decode(LinkType::NULL, other), Err(Skip::NotIp));
    }

    #[test]
    fn raw_ip_all_numbers() {
        for l in [LinkType::RAW, LinkType::RAW_DLT, LinkType::IPV4] {
            check_kafka(&decode(l, ipv4_tcp()).unwrap());
        }
    }

    #[test]
    fn ipv6_with_hop_by_hop() {
        let f = vec![
            0x60, 0x00, 0x00, 0x00, // version 6, traffic class, flow label
            0x00, 0x22, // payload length 34 = 8 ext + 20 TCP + 6 payload
            0x00, 0x40, // next header 0 = hop-by-hop options; hop limit 64
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, // source ::1
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, // destination ::2
            0x06, 0x00, // hop-by-hop: next header TCP, length 0 (8 bytes)
            0x01, 0x04, 0, 0, 0, 0, // PadN option filling the 8 bytes
            0x23, 0x84, // source port 9092 (a response)
            0x9c, 0x40, // destination port 40000
            0x00, 0x00, 0x00, 0x01, // sequence number 1
            0x00, 0x00, 0x00, 0x02, // acknowledgment number 2
            0x50, 0x11, // data offset 5; FIN|ACK
            0xff, 0xff, 0x00, 0x00, 0x00, 0x00, // window, checksum, urgent
            b'k', b'a', b'f', b'k', b'a', b'!', // payload
        ];
        let seg = decode(LinkType::IPV6, f).unwrap();
        assert_eq!(seg.src, "[::1]:9092".parse().unwrap());
        assert_eq!(seg.dst, "[::2]:40000".parse().unwrap());
        assert!(seg.flags.fin && seg.flags.ack && !seg.flags.syn);
        assert_eq!(&seg.payload[..], b"kafka!");
    }

    #[test]
    fn snaplen_cut_counts_missing_payload() {
        let mut f = ipv4_tcp();
        f.truncate(42); // keep 2 of the 5 payload bytes
        let seg = decode_link(LinkType::RAW, &Bytes::from(f), 45).unwrap();
        assert_eq!(&seg.payload[..], b"KA");
        assert_eq!(seg.payload_truncated_by, 3);
    }

    #[test]
    fn fragments_udp_and_garbage() {
        let mut frag = ipv4_tcp();
        frag[6] = 0x20; // MF set: first fragment
        assert_eq!(decode(LinkType::RAW, frag), Err(Skip::Fragmented));
        let mut udp = ipv4_tcp();
        udp[9] = 17;
        assert_eq!(
            decode(LinkType::RAW, udp),
            Err(Skip::NotTcp { protocol: 17 })
        );
        assert_eq!(
            decode(LinkType(147), ipv4_tcp()),
            Err(Skip::UnsupportedLink(LinkType(147)))
        );
        // Every prefix of an Ethernet frame decodes or fails cleanly.
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend(ipv4_tcp());
        for n in 0..f.len() {
            let _ = decode_link(
                LinkType::ETHERNET,
                &Bytes::copy_from_slice(&f[..n]),
                f.len() as u32,
            );
        }
        // A cut inside the TCP header is malformed, not a segment.
        assert!(matches!(
            decode_link(LinkType::ETHERNET, &Bytes::copy_from_slice(&f[..40]), 59),
            Err(Skip::Malformed { .. })
        ));
    }

    /// An Ethernet II frame around [`ipv4_tcp`].
    fn ethernet_ipv4_tcp_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend(ipv4_tcp());
        f
    }

    /// The fast path takes the common frame, and its answer is etherparse's.
    #[test]
    fn fast_path_takes_plain_ipv4_tcp() {
        let f = Bytes::from(ethernet_ipv4_tcp_frame());
        let (mut fast, payload) = ethernet_ipv4_tcp(&f).expect("taken by the fast path");
        fast.payload = f.slice(payload);
        check_kafka(&fast);
        assert_eq!(
            Ok(fast.clone()),
            decode_link_lax(LinkType::ETHERNET, &f, f.len() as u32)
        );
        // Given up, the frame's bytes become the payload: the same bytes, in
        // the same place.
        let owned = decode_link_owned(LinkType::ETHERNET, f.clone(), f.len() as u32);
        let owned = owned.expect("decoded");
        assert_eq!(owned, fast);
        assert_eq!(owned.payload.as_ptr(), fast.payload.as_ptr());
        // Fragments, VLAN tags, IPv6, other protocols and cut packets are not taken.
        let mut frag = ethernet_ipv4_tcp_frame();
        frag[14 + 6] = 0x20; // more fragments
        let mut udp = ethernet_ipv4_tcp_frame();
        udp[14 + 9] = 17;
        let mut long = ethernet_ipv4_tcp_frame();
        long[14 + 3] = 0x40; // total length past the frame
        let mut vlan = ethernet_ipv4_tcp_frame();
        vlan[12] = 0x81;
        for f in [frag, udp, long, vlan] {
            assert!(ethernet_ipv4_tcp(&Bytes::from(f)).is_none());
        }
    }

    /// Every frame of every capture decodes the same with and without the fast path.
    #[test]
    fn fast_path_agrees_with_etherparse_on_captures() {
        use crate::capture::{FileSource, FrameSource, Polled};
        let (mut frames, mut taken) = (0u64, 0u64);
        for path in crate::test_captures::all() {
            let Ok(mut src) = FileSource::open(path.to_str().unwrap_or("")) else {
                continue;
            };
            while let Ok(Polled::Frame(f)) = src.poll() {
                frames += 1;
                if f.link == LinkType::ETHERNET && ethernet_ipv4_tcp(&f.data).is_some() {
                    taken += 1;
                }
                assert_eq!(
                    decode_link(f.link, &f.data, f.origlen),
                    decode_link_lax(f.link, &f.data, f.origlen),
                    "{} frame of {} bytes",
                    path.display(),
                    f.data.len()
                );
            }
        }
        assert!(
            frames > 1000 && taken > 1000,
            "{frames} frames, {taken} taken"
        );
    }

    proptest::proptest! {
        /// Damaged headers, cut frames and odd snap lengths: the same answer
        /// with and without the fast path.
        #[test]
        fn fast_path_agrees_with_etherparse(
            edits in proptest::collection::vec((0usize..80, proptest::num::u8::ANY), 0..6),
            cut in 0usize..100,
            extra in 0u32..100,
            pad in 0usize..8,
        ) {
            let mut f = ethernet_ipv4_tcp_frame();
            f.extend(std::iter::repeat_n(0u8, pad));
            for (at, v) in edits {
                if let Some(b) = f.get_mut(at) {
                    *b = v;
                }
            }
            f.truncate(f.len().saturating_sub(cut % 70));
            let origlen = f.len() as u32 + extra;
            let f = Bytes::from(f);
            proptest::prop_assert_eq!(
                decode_link(LinkType::ETHERNET, &f, origlen),
                decode_link_lax(LinkType::ETHERNET, &f, origlen)
            );
        }
    }
}
