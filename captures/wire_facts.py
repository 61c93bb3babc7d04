#!/usr/bin/env python3
"""Independent reading of the timing and offset facts in a Kafka capture, for checking
kafkashark's latency parts, consumer lag and record age. It shares only the pcap reader,
the TCP header parser and the length-prefixed framing with kafka_streams.py (no tshark,
nothing from kafkashark): its own per-direction reassembly with a time per byte, its own
hand-written field readers for Fetch (v4+), OffsetCommit (v2+), Produce (v3+) and Metadata (v10+).

usage: wire_facts.py FILE [--port 9092]
Prints tab-separated rows, one kind per first column:
  conn     conn client syn_ts synack_ts ack_ts               (handshake, '-' where missing)
  exch     conn api ver corr client req_end_ts rsp_first_ts rsp_last_ts
  fetchreq conn corr max_wait_ms min_bytes topic partition fetch_offset
  fetchrsp conn corr topic partition error hw lso log_start batches records last_offset max_ts ts_type
  commit   conn corr group topic partition committed_offset
  produce  conn corr acks topic partition producer_id epoch base_seq crc records max_ts
  fetched  conn corr topic partition producer_id epoch base_seq crc records max_ts
  topic    id name                                           (Metadata v10+ responses)
Times are capture seconds (float, as in the pcap); topics are names or 32-hex ids.
req_end_ts is the time of the segment carrying the request's last byte, rsp_first_ts and
rsp_last_ts those carrying the response's first and last bytes.
"""
import argparse
import ipaddress
import struct
import sys

from kafka_streams import MOD, frames, packets, tcp_of


class Timed:
    """one direction of one connection: segments by sequence, with their capture time"""

    def __init__(self):
        self.isn = None
        self.segs = []  # (seq, ts, payload)

    def data(self):
        """-> (bytes, times) where times[i] is the capture time of the segment that first
        delivered byte i (retransmissions do not move a byte's time)"""
        if not self.segs:
            return b'', []
        base = (self.isn + 1) % MOD if self.isn is not None else self.segs[0][0]
        buf, times = bytearray(), []
        items = []
        for seq, ts, p in self.segs:
            rel = (seq - base) % MOD
            if rel >= 1 << 31:
                rel -= MOD
            items.append((rel, ts, p))
        # a byte's time is the earliest segment carrying it, in capture order
        items.sort(key=lambda x: (x[0], x[1]))
        start = items[0][0]
        for rel, ts, p in items:
            rel -= start
            if rel > len(buf):
                return bytes(buf), times  # a gap: stop where the bytes stop
            if rel + len(p) > len(buf):
                new = p[len(buf) - rel:]
                buf.extend(new)
                times.extend([ts] * len(new))
            else:
                for i in range(rel, rel + len(p)):
                    times[i] = min(times[i], ts)
        return bytes(buf), times


class R:
    """a big-endian reader over one message body"""

    def __init__(self, b, o=0):
        self.b, self.o = b, o

    def take(self, fmt):
        v = struct.unpack_from('>' + fmt, self.b, self.o)
        self.o += struct.calcsize('>' + fmt)
        return v[0] if len(v) == 1 else v

    def uvarint(self):
        v, s = 0, 0
        while True:
            c = self.b[self.o]
            self.o += 1
            v |= (c & 0x7f) << s
            if not c & 0x80:
                return v
            s += 7

    def string(self, flex):
        n = self.uvarint() - 1 if flex else self.take('h')
        if n < 0:
            return None
        s = self.b[self.o:self.o + n].decode('utf-8', 'replace')
        self.o += n
        return s

    def bytes_(self, flex):
        n = self.uvarint() - 1 if flex else self.take('i')
        if n < 0:
            return None
        s = self.b[self.o:self.o + n]
        self.o += n
        return s

    def count(self, flex):
        return self.uvarint() - 1 if flex else self.take('i')

    def tags(self, flex):
        if flex:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.o += self.uvarint()

    def uuid(self):
        u = self.b[self.o:self.o + 16]
        self.o += 16
        return u.hex()


def batches(records):
    """v2 batch headers in a record set: (base_offset, last_offset, producer_id, epoch,
    base_seq, crc, count, max_ts, log_append_time)"""
    out, o = [], 0
    while records is not None and o + 61 <= len(records):
        base, blen = struct.unpack_from('>qi', records, o)
        if blen < 49 or o + 12 + blen > len(records) or records[o + 16] != 2:
            break
        crc, attr, lod, _bts, mts, pid, ep, bseq, cnt = struct.unpack_from('>IhiqqqhiI', records, o + 17)
        out.append((base, base + lod, pid, ep, bseq, crc, cnt, mts, bool(attr & 0x08)))
        o += 12 + blen
    return out


def request_body(body):
    """-> (api, ver, corr, client, reader at the body, flexible)"""
    r = R(body)
    api, ver, corr = r.take('hhi')
    client = r.string(False)
    flex = (api == 1 and ver >= 12) or (api == 8 and ver >= 8) or (api == 0 and ver >= 9)
    r.tags(flex)
    return api, ver, corr, client, r, flex


def fetch_request(r, ver, flex, emit):
    if ver <= 14:
        r.take('i')  # ReplicaId
    max_wait, min_bytes = r.take('ii')
    r.take('i')  # MaxBytes
    r.take('b')  # IsolationLevel
    if ver >= 7:
        r.take('ii')  # SessionId, SessionEpoch
    for _ in range(r.count(flex)):
        topic = r.uuid() if ver >= 13 else r.string(flex)
        for _ in range(r.count(flex)):
            part = r.take('i')
            if ver >= 9:
                r.take('i')  # CurrentLeaderEpoch
            off = r.take('q')
            if ver >= 12:
                r.take('i')  # LastFetchedEpoch
            r.take('q')  # LogStartOffset
            r.take('i')  # PartitionMaxBytes
            r.tags(flex)
            emit(max_wait, min_bytes, topic, part, off)
        r.tags(flex)


def fetch_response(body, ver, emit):
    flex = ver >= 12
    r = R(body, 4)
    r.tags(flex)
    r.take('i')  # ThrottleTimeMs
    if ver >= 7:
        r.take('hi')  # ErrorCode, SessionId
    for _ in range(r.count(flex)):
        topic = r.uuid() if ver >= 13 else r.string(flex)
        for _ in range(r.count(flex)):
            part, err, hw, lso, lstart = r.take('ihqqq')
            n = r.count(flex)
            for _ in range(max(n, 0)):
                r.take('qq')
                r.tags(flex)
            if ver >= 11:
                r.take('i')  # PreferredReadReplica
            emit(topic, part, err, hw, lso, lstart, batches(r.bytes_(flex)))
            r.tags(flex)
        r.tags(flex)


def commit_request(r, ver, flex, emit):
    group = r.string(flex)
    if ver >= 1:
        r.take('i')
        r.string(flex)
    if ver >= 7:
        r.string(flex)
    if 2 <= ver <= 4:
        r.take('q')
    for _ in range(r.count(flex)):
        topic = r.uuid() if ver >= 10 else r.string(flex)
        for _ in range(r.count(flex)):
            part, off = r.take('iq')
            if ver >= 6:
                r.take('i')
            r.string(flex)
            r.tags(flex)
            emit(group, topic, part, off)
        r.tags(flex)


def produce_request(r, ver, flex, emit):
    r.string(flex)  # TransactionalId
    acks = r.take('h')
    r.take('i')
    for _ in range(r.count(flex)):
        topic = r.uuid() if ver >= 13 else r.string(flex)
        for _ in range(r.count(flex)):
            part = r.take('i')
            emit(acks, topic, part, batches(r.bytes_(flex)))
            r.tags(flex)
        r.tags(flex)


def metadata_response(body, ver, emit):
    flex = ver >= 9
    r = R(body, 4)
    r.tags(flex)
    if ver >= 3:
        r.take('i')
    for _ in range(r.count(flex)):
        r.take('i')
        r.string(flex)
        r.take('i')
        if ver >= 1:
            r.string(flex)
        r.tags(flex)
    if ver >= 2:
        r.string(flex)
    if ver >= 1:
        r.take('i')
    for _ in range(r.count(flex)):
        r.take('h')
        name = r.string(flex)
        tid = r.uuid()
        r.take('b')
        for _ in range(r.count(flex)):
            r.take('hiii' if ver >= 7 else 'hii')
            for _ in range(3 if ver >= 5 else 2):
                for _ in range(r.count(flex)):
                    r.take('i')
            r.tags(flex)
        if ver >= 8:
            r.take('i')
        r.tags(flex)
        if name is not None and tid != '00' * 16:
            emit(tid, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('file')
    ap.add_argument('--port', type=int, default=9092)
    a = ap.parse_args()
    conns, names = {}, []
    for ts, lt, d in packets(a.file):
        t = tcp_of(lt, d)
        if t is None:
            continue
        src, dst, sport, dport, seq, flags, payload = t
        if a.port not in (sport, dport):
            continue
        c2s = dport == a.port
        key = (src, sport, dst) if c2s else (dst, dport, src)
        if key not in conns:
            conns[key] = {'c2s': Timed(), 's2c': Timed(), 'syn': None, 'synack': None, 'ack': None,
                          'name': 'c%d' % len(names)}
            names.append(key)
        c = conns[key]
        side = c['c2s' if c2s else 's2c']
        if flags & 2:
            side.isn = seq
            if c2s and not flags & 0x10 and c['syn'] is None:
                c['syn'] = ts
            if not c2s and flags & 0x10 and c['synack'] is None:
                c['synack'] = ts
        elif c2s and flags & 0x10 and c['synack'] is not None and c['ack'] is None:
            c['ack'] = ts
        if payload:
            side.segs.append((seq, ts, payload))
    out = sys.stdout
    topics = {}
    for key in names:
        c = conns[key]
        n = c['name']
        ip = ipaddress.ip_address(key[0])
        client = ('[%s]:%d' if ip.version == 6 else '%s:%d') % (ip, key[1])
        out.write('conn\t%s\t%s\t%s\t%s\t%s\n' % (n, client, *('%.6f' % t if t is not None else '-'
                                                            for t in (c['syn'], c['synack'], c['ack']))))
        req_data, req_t = c['c2s'].data()
        rsp_data, rsp_t = c['s2c'].data()
        pending = {}
        for off, body in frames(req_data)[0]:
            try:
                api, ver, corr, client, r, flex = request_body(body)
            except (struct.error, IndexError):
                continue
            pending[corr] = (api, ver, client, req_t[off + 3 + len(body)])
            try:
                if api == 1 and ver >= 4:
                    fetch_request(r, ver, flex, lambda *f: out.write(
                        'fetchreq\t%s\t%d\t%d\t%d\t%s\t%d\t%d\n' % (n, corr, *f)))
                elif api == 8 and ver >= 2:
                    commit_request(r, ver, flex, lambda *f: out.write(
                        'commit\t%s\t%d\t%s\t%s\t%d\t%d\n' % (n, corr, *f)))
                elif api == 0 and ver >= 3:
                    def produced(acks, topic, part, bs):
                        for b in bs:
                            out.write('produce\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n' % (
                                n, corr, acks, topic, part, b[2], b[3], b[4], b[5], b[6], b[7]))
                    produce_request(r, ver, flex, produced)
            except (struct.error, IndexError):
                pass
        for off, body in frames(rsp_data)[0]:
            if len(body) < 4:
                continue
            corr = struct.unpack('>i', body[:4])[0]
            if corr not in pending:
                continue
            api, ver, client, req_end = pending.pop(corr)
            out.write('exch\t%s\t%d\t%d\t%d\t%s\t%.6f\t%.6f\t%.6f\n' % (
                n, api, ver, corr, client, req_end, rsp_t[off], rsp_t[off + 3 + len(body)]))
            if api == 3 and ver >= 10:
                try:
                    metadata_response(body, ver, lambda i, nm: topics.setdefault(i, nm))
                except (struct.error, IndexError):
                    pass
            if api != 1 or ver < 4:
                continue

            def fetched(topic, part, err, hw, lso, lstart, bs):
                last = max((b[1] for b in bs), default=-1)
                mts = max((b[7] for b in bs), default=-1)
                lat = any(b[8] for b in bs)
                out.write('fetchrsp\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n' % (
                    n, corr, topic, part, err, hw, lso, lstart, len(bs), sum(b[6] for b in bs), last, mts,
                    'log_append' if lat else 'create'))
                for b in bs:
                    out.write('fetched\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n' % (
                        n, corr, topic, part, b[2], b[3], b[4], b[5], b[6], b[7]))
            try:
                fetch_response(body, ver, fetched)
            except (struct.error, IndexError):
                pass
    for tid, name in sorted(topics.items()):
        out.write('topic\t%s\t%s\n' % (tid, name))


if __name__ == '__main__':
    main()
