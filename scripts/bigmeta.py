#!/usr/bin/env python3
"""Writes a capture of big Metadata responses, for memory figures.

    python3 scripts/bigmeta.py OUT.pcap [N [PARTITIONS]]

One TCP connection (10.0.0.1:40000 -> 10.0.0.2:9092, LINKTYPE_RAW IPv4,
handshake included) carries N (default 10) Metadata v1 requests, each
answered by a response naming one broker and one topic of PARTITIONS
(default 50,000) partitions of three replicas: about 2.1 MB, cut into 64 KB
segments as on loopback. Such a response is no record batch but a tree of
some 900,000 nodes, which `print -V` (text) decodes twice and writes as it
goes rather than building (docs/performance.md). The defaults
give 21 MB.
"""
import struct
import sys

from pcapwrite import Connection, string


def main():
    if len(sys.argv) not in (2, 3, 4):
        sys.exit(__doc__)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 50_000
    with open(sys.argv[1], "wb") as out:
        c = Connection(out)
        replicas = struct.pack(">iiii", 3, 0, 1, 2)
        partitions = b"".join(
            struct.pack(">hii", 0, p, p % 3) + replicas + replicas for p in range(count))
        for corr in range(1, n + 1):
            # Metadata v1 request: all topics (a null array).
            body = struct.pack(">hhi", 3, 1, corr) + string(b"admin") + struct.pack(">i", -1)
            c.request(struct.pack(">i", len(body)) + body)
            # Response v1: one broker (no rack), the controller, one topic.
            rsp = struct.pack(">i", corr) + struct.pack(">ii", 1, 0) + string(b"broker0")
            rsp += struct.pack(">ih", 9092, -1) + struct.pack(">i", 0)
            rsp += struct.pack(">ih", 1, 0) + string(b"big-topic") + b"\x00"
            rsp += struct.pack(">i", count) + partitions
            c.response(struct.pack(">i", len(rsp)) + rsp)


if __name__ == "__main__":
    main()
