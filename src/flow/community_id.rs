//! The Community ID of a TCP connection: the flow hash Zeek, Suricata,
//! Arkime and Wireshark write (Community ID Flow Hashing, version 1), so
//! that kafkashark's connections join with their logs.
//!
//! Definition (version 1, seed 0): the SHA-1 of the seed (2 bytes, network
//! order), the two addresses, the protocol number (6, TCP), a zero byte and
//! the two ports (network order), the endpoints ordered so that the lower
//! address comes first (the lower port when the addresses are the same);
//! written `1:` and the digest in standard base64.

use std::net::{IpAddr, SocketAddr};

use base64::Engine as _;
use sha1::{Digest, Sha1};

/// IANA protocol number of TCP.
const TCP: u8 = 6;

/// The Community ID (version 1, seed 0) of the TCP connection between `a`
/// and `b`, either way round.
pub fn tcp(a: SocketAddr, b: SocketAddr) -> String {
    let (lo, hi) = if (a.ip(), a.port()) <= (b.ip(), b.port()) {
        (a, b)
    } else {
        (b, a)
    };
    let mut h = Sha1::new();
    h.update(0u16.to_be_bytes());
    for ip in [lo.ip(), hi.ip()] {
        match ip {
            IpAddr::V4(v4) => h.update(v4.octets()),
            IpAddr::V6(v6) => h.update(v6.octets()),
        }
    }
    h.update([TCP, 0]);
    h.update(lo.port().to_be_bytes());
    h.update(hi.port().to_be_bytes());
    let digest = h.finalize();
    format!(
        "1:{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's TCP baseline (community-id-spec, seed 0), and
    /// either order of the endpoints giving the same ID.
    #[test]
    fn the_specification_baseline() {
        let a: SocketAddr = "128.232.110.120:34855".parse().unwrap();
        let b: SocketAddr = "66.35.250.204:80".parse().unwrap();
        assert_eq!(tcp(a, b), "1:LQU9qZlK+B5F3KDmev6m5PMibrg=");
        assert_eq!(tcp(b, a), tcp(a, b));
        // The same addresses: the lower port first.
        let c: SocketAddr = "10.0.0.1:9092".parse().unwrap();
        let d: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        assert_eq!(tcp(c, d), tcp(d, c));
    }
}
