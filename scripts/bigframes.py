#!/usr/bin/env python3
"""Writes a capture of big Kafka messages in big frames, for memory figures.

    python3 scripts/bigframes.py OUT.pcap [N]

One TCP connection (10.0.0.1:40000 -> 10.0.0.2:9092, LINKTYPE_RAW IPv4,
handshake included) carries N (default 300) Produce v8 requests of 1 MiB
each, cut into 64 KB segments as on loopback, each answered by a small
Produce response. The request's record set is 1 MiB of filler, which the
decoder marks as a partial batch: the file is about frames and message
sizes, not about records (`make-corpus --large` has real batches). N = 300
gives 315 MB. See docs/performance.md.
"""
import struct
import sys

from pcapwrite import Connection, string

MSG = 1 << 20


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    n = int(sys.argv[2]) if len(sys.argv) == 3 else 300
    with open(sys.argv[1], "wb") as out:
        c = Connection(out)
        for corr in range(1, n + 1):
            records = bytes((corr + i) & 0x7F for i in range(256)) * (MSG // 256)
            body = struct.pack(">hhi", 0, 8, corr) + string(b"big") + struct.pack(">h", -1)
            body += struct.pack(">hi", 1, 30000) + struct.pack(">i", 1) + string(b"topic")
            body += struct.pack(">ii", 1, 0) + struct.pack(">i", len(records)) + records
            c.request(struct.pack(">i", len(body)) + body)
            rsp = struct.pack(">i", corr) + struct.pack(">i", 1) + string(b"topic")
            rsp += struct.pack(">i", 1) + struct.pack(">ihqqq", 0, 0, corr, -1, 0)
            rsp += struct.pack(">i", 0) + struct.pack(">h", -1) + struct.pack(">i", 0)
            c.response(struct.pack(">i", len(rsp)) + rsp)


if __name__ == "__main__":
    main()
