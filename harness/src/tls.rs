//! The TLS harnesses: the key log reader and the record reader.

use kafkashark::tls::conn::{Conn, Out, TlsEvent};
use kafkashark::tls::keylog::{KeyLog, Keys};
use kafkashark::tls::wire::{
    ClientHello, Handshakes, Record, Records, ServerHello, HEADER, MAX_RECORD,
};
use kafkashark::vocab::Timestamp;

/// Where byte 0 says to cut the rest in two (its share of the length).
fn cut(data: &[u8]) -> (&[u8], usize) {
    match data.split_first() {
        Some((&b, rest)) => (rest, rest.len() * usize::from(b) / 255),
        None => (&[], 0),
    }
}

/// Fuzz target `tls_keylog`: the rest of the input (byte 0 says where to
/// cut it) read as a key log whole and in two pieces: the same sessions and
/// the same reported lines, each naming a line that was read.
pub fn tls_keylog(data: &[u8]) {
    let (rest, at) = cut(data);
    let (a, b) = rest.split_at(at.min(rest.len()));
    let mut whole = KeyLog::new();
    let mut errs = whole.feed(rest);
    errs.extend(whole.finish());
    let mut parts = KeyLog::new();
    let mut perrs = parts.feed(a);
    perrs.extend(parts.feed(b));
    perrs.extend(parts.finish());
    assert_eq!(errs, perrs, "reported lines differ by how the bytes came");
    assert_eq!(whole.len(), parts.len());
    assert_eq!(whole.lines(), parts.lines());
    // A report names a line that was read (its reason is a fixed text: no input in it).
    for e in &errs {
        assert!(e.line >= 1 && e.line <= whole.lines(), "{e}");
    }
}

/// Fuzz target `tls_records`: the rest of the input (byte 0 says where to
/// cut it) as one direction's bytes, read whole and in two pieces: the same
/// records and the same error; every record within `MAX_RECORD` and the
/// records covering the bytes up to the error (or the pending tail); every
/// handshake message gathered from them and every hello read without a
/// panic.
pub fn tls_records(data: &[u8]) {
    let (rest, at) = cut(data);
    let (a, b) = rest.split_at(at.min(rest.len()));
    let mut whole = (Records::new(), Vec::<Record>::new());
    let e1 = whole.0.push(rest, &mut whole.1).err();
    let mut parts = (Records::new(), Vec::<Record>::new());
    let e2 = parts.0.push(a, &mut parts.1).err();
    let e2 = e2.or(parts.0.push(b, &mut parts.1).err());
    assert_eq!(whole.1, parts.1, "records differ by how the bytes came");
    assert_eq!(e1, e2);
    let mut at = 0u64;
    for r in &whole.1 {
        assert!(r.body.len() <= MAX_RECORD);
        assert_eq!(r.at, at, "records are contiguous");
        at += (HEADER + r.body.len()) as u64;
    }
    assert!(at as usize <= rest.len());
    let mut h = (Handshakes::new(), Vec::new());
    for r in &whole.1 {
        h.0.push(&r.body, &mut h.1);
    }
    for (_, body) in &h.1 {
        let _ = ClientHello::parse(body);
        let _ = ServerHello::parse(body);
    }
    // A connection: the two pieces as the client's and the server's bytes,
    // in turns of up to the first piece's length (until the shorter runs
    // out): without keys no byte of plaintext, whatever the hellos say, and
    // one Closed at the end.
    for keys in [Keys::default(), Keys::new(KeyLog::new(), true)] {
        let mut c = Conn::new();
        let mut out = Vec::new();
        let step = a.len().clamp(1, 4096);
        let (mut ca, mut cb) = (0usize, 0usize);
        for (i, piece) in a
            .chunks(step)
            .zip(b.chunks(step))
            .flat_map(|(x, y)| [x, y])
            .enumerate()
        {
            let client = i % 2 == 0;
            let off = if client { &mut ca } else { &mut cb };
            c.push(
                client,
                piece,
                *off as u64,
                i as u64,
                Timestamp::default(),
                &keys,
                &mut out,
            );
            *off += piece.len();
        }
        c.finish(0, Timestamp::default(), &keys, &mut out);
        assert!(
            out.iter().all(|o| matches!(o, Out::Event { .. })),
            "plaintext without keys"
        );
        let closed = out
            .iter()
            .filter(|o| {
                matches!(
                    o,
                    Out::Event {
                        what: TlsEvent::Closed { .. },
                        ..
                    }
                )
            })
            .count();
        assert_eq!(closed, 1);
    }
}
