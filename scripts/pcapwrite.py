"""A classic pcap of one TCP connection's frames, for the capture scripts
(`bigframes.py`, `bigmeta.py`): LINKTYPE_RAW IPv4, microsecond times 10 us
apart from 1,700,000,000 s, no checksums, payloads cut into 64 KB segments
as on loopback.
"""
import struct

MSS = 65483
CLIENT, BROKER = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
CPORT, BPORT = 40000, 9092


class Connection:
    """10.0.0.1:40000 -> 10.0.0.2:9092 written to `out` (the file's header
    first, then the handshake)."""

    def __init__(self, out):
        self.out = out
        self.clock = [1_700_000_000, 0]
        # Classic pcap, microseconds, snaplen 262144, LINKTYPE_RAW.
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        self.cseq, self.bseq = 1000, 5000
        self.frame(CLIENT, BROKER, CPORT, BPORT, self.cseq, 0, 0x02)
        self.cseq += 1
        self.frame(BROKER, CLIENT, BPORT, CPORT, self.bseq, self.cseq, 0x12)
        self.bseq += 1
        self.frame(CLIENT, BROKER, CPORT, BPORT, self.cseq, self.bseq, 0x10)

    def frame(self, src, dst, sport, dport, seq, ack, flags, payload=b""):
        tcp = struct.pack(">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF,
                          ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload),
                         0, 0x4000, 64, 6, 0, src, dst)
        data = ip + tcp + payload
        self.clock[1] += 10
        if self.clock[1] >= 1_000_000:
            self.clock[0] += 1
            self.clock[1] -= 1_000_000
        self.out.write(struct.pack("<IIII", self.clock[0], self.clock[1], len(data), len(data)))
        self.out.write(data)

    def request(self, msg):
        """The client sends `msg` in 64 KB segments."""
        for at in range(0, len(msg), MSS):
            seg = msg[at:at + MSS]
            self.frame(CLIENT, BROKER, CPORT, BPORT, self.cseq, self.bseq, 0x18, seg)
            self.cseq += len(seg)

    def response(self, msg):
        """The broker sends `msg` in 64 KB segments."""
        for at in range(0, len(msg), MSS):
            seg = msg[at:at + MSS]
            self.frame(BROKER, CLIENT, BPORT, CPORT, self.bseq, self.cseq, 0x18, seg)
            self.bseq += len(seg)


def string(s):
    """A Kafka int16-prefixed string."""
    return struct.pack(">h", len(s)) + s
