mod support;
use support::*;
use kafkashark::flow::Ports;

#[test]
fn explore() {
    for name in ["a1-kcat-produce-consume-group.pcap", "a5-ipv6-confluent-admin-produce-consume.pcap", "a6-confluent-multisegment-pdus.pcap"] {
        let p = recorded(name).unwrap();
        let segs = extract(&p);
        let a = analyze(&p, Ports::List(vec![9092]));
        println!("== {name}: {} segs, {} msgs, {} notices", segs.len(), a.messages.len(), a.notices.len());
        if name.starts_with("a6") {
            for m in &a.messages {
                let i = &m.info;
                println!("{:3} s{} {:?} k{:?} v{:?} c{:?} len{} ff{} f{} paired{} err{:?} prov{:?}", i.index, i.stream, i.kind, i.api_key, i.api_version, i.correlation_id, i.length, i.first_frame, i.frame, i.paired, i.decode_error, m.raw.provenance);
            }
            for s in &segs { println!("f{} {} {}->{} seq{} len{} fl{:x}", s.frame, s.ts, s.src, s.dst, s.seq, s.payload.len(), s.flags); }
        }
        for n in &a.notices { println!("{n:?}"); }
    }
}
