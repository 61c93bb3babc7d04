//! A Kafka exchange whose client id, topic, header key and record value all
//! carry terminal escape sequences, for the terminal-safety tests of the engine
//! (tests/terminal_safety.rs) and of the binary (ui/tests/terminal_safety.rs).

use kafkashark::vocab::Timestamp;
use kafkashark_harness as harness;
use std::net::{Ipv4Addr, SocketAddr};

use super::{Seg, ACK, PSH, SYN};

/// The payload every hostile string carries.
pub const EVIL: &[u8] = b"\x1b[2J\x1b]0;pwned\x07";

pub fn framed(body: &[u8]) -> Vec<u8> {
    let mut m = (body.len() as i32).to_be_bytes().to_vec();
    m.extend_from_slice(body);
    m
}

pub fn str16(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s);
}

/// Hostile strings: client id, topic, record key, value and header.
pub fn client_id() -> Vec<u8> {
    [b"cli".as_slice(), EVIL, b"\r\x08\xff"].concat()
}

pub fn topic() -> Vec<u8> {
    [b"top".as_slice(), EVIL, b"\x9b"].concat()
}

/// A Produce v3 request and its response, all strings hostile.
pub fn produce_exchange() -> Vec<(bool, Vec<u8>)> {
    // Records built by the harness: [klen, key, vlen, value, hlen, header].
    let key = [b"k".as_slice(), EVIL].concat();
    let value = [b"v".as_slice(), EVIL, b"\xff\xfe\x00\x7f"].concat();
    let header = [b"h".as_slice(), b"\x1b[31m\x07"].concat();
    let mut spec = vec![key.len() as u8];
    spec.extend_from_slice(&key);
    spec.push(value.len() as u8);
    spec.extend_from_slice(&value);
    spec.push(header.len() as u8);
    spec.extend_from_slice(&header);
    let (n, recs) = harness::records_from(&spec);
    let batch = harness::record_batch(0, n, &recs);

    let mut req = Vec::new();
    req.extend_from_slice(&0i16.to_be_bytes()); // Produce
    req.extend_from_slice(&3i16.to_be_bytes()); // v3
    req.extend_from_slice(&1i32.to_be_bytes()); // correlation id
    str16(&mut req, &client_id());
    str16(&mut req, &[b"tx".as_slice(), EVIL].concat()); // TransactionalId
    req.extend_from_slice(&1i16.to_be_bytes()); // Acks
    req.extend_from_slice(&1000i32.to_be_bytes()); // TimeoutMs
    req.extend_from_slice(&1i32.to_be_bytes()); // TopicData: 1
    str16(&mut req, &topic());
    req.extend_from_slice(&1i32.to_be_bytes()); // PartitionData: 1
    req.extend_from_slice(&0i32.to_be_bytes()); // Index
    req.extend_from_slice(&(batch.len() as i32).to_be_bytes());
    req.extend_from_slice(&batch);

    let mut resp = 1i32.to_be_bytes().to_vec(); // correlation id
    resp.extend_from_slice(&1i32.to_be_bytes()); // Responses: 1
    str16(&mut resp, &topic());
    resp.extend_from_slice(&1i32.to_be_bytes()); // PartitionResponses: 1
    resp.extend_from_slice(&0i32.to_be_bytes()); // Index
    resp.extend_from_slice(&6i16.to_be_bytes()); // NOT_LEADER_OR_FOLLOWER
    resp.extend_from_slice(&0i64.to_be_bytes()); // BaseOffset
    resp.extend_from_slice(&(-1i64).to_be_bytes()); // LogAppendTimeMs
    resp.extend_from_slice(&0i32.to_be_bytes()); // ThrottleTimeMs
    vec![(true, framed(&req)), (false, framed(&resp))]
}

/// The exchange as TCP segments with a handshake.
pub fn segments(msgs: &[(bool, Vec<u8>)]) -> Vec<Seg> {
    let c: SocketAddr = (Ipv4Addr::LOCALHOST, 40_000).into();
    let b: SocketAddr = (Ipv4Addr::LOCALHOST, 9092).into();
    let (mut cs, mut bs) = (1000u32, 5000u32);
    let mut t = 0u32;
    let mut seg = |src, dst, seq, ack, flags, payload: Vec<u8>| {
        t += 1;
        Seg {
            frame: 0,
            ts: Timestamp::new(1_700_000_000, t * 1000),
            src,
            dst,
            seq,
            ack,
            flags,
            payload: payload.into(),
        }
    };
    let mut v = vec![
        seg(c, b, cs, 0, SYN, vec![]),
        seg(b, c, bs, cs + 1, SYN | ACK, vec![]),
    ];
    cs += 1;
    bs += 1;
    v.push(seg(c, b, cs, bs, ACK, vec![]));
    for (to_broker, m) in msgs {
        if *to_broker {
            v.push(seg(c, b, cs, bs, PSH | ACK, m.clone()));
            cs += m.len() as u32;
        } else {
            v.push(seg(b, c, bs, cs, PSH | ACK, m.clone()));
            bs += m.len() as u32;
        }
    }
    v
}
