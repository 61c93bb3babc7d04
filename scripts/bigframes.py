#!/usr/bin/env python3
"""Writes a capture of big Kafka messages in big frames, for memory figures.

    python3 scripts/bigframes.py OUT.pcap [N]

One TCP connection (10.0.0.1:40000 -> 10.0.0.2:9092, LINKTYPE_RAW IPv4,
handshake included) carries N (default 300) Produce v8 requests of 1 MiB
each, cut into 64 KB segments as on loopback, each answered by a small
Produce response. The request's record set is 1 MiB of filler, which the
decoder marks as a partial batch: the file is about frames and message
sizes, not about records (`make-corpus --large` has real batches). N = 300
gives 315 MB. See docs/performance.md, items 64-65.
"""
import struct
import sys

MSG = 1 << 20
MSS = 65483
CLIENT, BROKER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CPORT, BPORT = 40000, 9092


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 300
    with open(sys.argv[1], "wb") as out:
        # Classic pcap, microseconds, snaplen 262144, LINKTYPE_RAW.
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        clock = [1_700_000_000, 0]

        def frame(src, dst, sport, dport, seq, ack, flags, payload=b""):
            tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF,
                              ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload),
                             0, 0x4000, 64, 6, 0, src, dst)
            data = ip + tcp + payload
            clock[1] += 10
            if clock[1] >= 1_000_000:
                clock[0] += 1
                clock[1] -= 1_000_000
            out.write(struct.pack("<IIII", clock[0], clock[1], len(data), len(data)))
            out.write(data)

        def string(s):
            return struct.pack(">h", len(s)) + s

        cseq, bseq = 1000, 5000
        frame(CLIENT, BROKER, CPORT, BPORT, cseq, 0, 0x02)
        cseq += 1
        frame(BROKER, CLIENT, BPORT, CPORT, bseq, cseq, 0x12)
        bseq += 1
        frame(CLIENT, BROKER, CPORT, BPORT, cseq, bseq, 0x10)
        for corr in range(1, n + 1):
            records = bytes((corr + i) & 0x7F for i in range(256)) * (MSG // 256)
            body = struct.pack(">hhi", 0, 8, corr) + string(b"big") + struct.pack(">h", -1)
            body += struct.pack(">hi", 1, 30000) + struct.pack(">i", 1) + string(b"topic")
            body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(records)) + records
            msg = struct.pack(">i", len(body)) + body
            for at in range(0, len(msg), MSS):
                seg = msg[at:at + MSS]
                frame(CLIENT, BROKER, CPORT, BPORT, cseq, bseq, 0x18, seg)
                cseq += len(seg)
            rsp = struct.pack(">i", corr) + struct.pack(">i", 1) + string(b"topic")
            rsp += struct.pack(">i", 1) + struct.pack(">ihqqq", 0, 0, corr, -1, 0)
            rsp += struct.pack(">i", 0) + struct.pack(">h", -1) + struct.pack(">i", 0)
            rsp = struct.pack(">i", len(rsp)) + rsp
            frame(BROKER, CLIENT, BPORT, CPORT, bseq, cseq, 0x18, rsp)
            bseq += len(rsp)


if __name__ == "__main__":
    main()
