#!/usr/bin/env python3
"""A small Kafka-aware TCP proxy on loopback that injects ThrottleTimeMs (and two error
codes) into real broker responses, for captures/b4-throttle-errors-proxy.pcap.

usage: throttle-proxy.py LISTEN_PORT BROKER_PORT LOGFILE

It listens on 127.0.0.1:LISTEN_PORT and opens one connection to the broker at
127.0.0.1:BROKER_PORT per client connection. Every byte is forwarded unchanged, whole Kafka
messages at a time, except these response fields:

- ThrottleTimeMs of Fetch (v1+) and Produce (v1+) responses sent while the throttle window
  is open: from THROTTLE_FROM to THROTTLE_UNTIL seconds after the first client connection.
  On each connection, the n-th throttled Fetch response (n = 0, 1, ...) gets
  FETCH_THROTTLE[n % 4] ms, the n-th throttled Produce response PRODUCE_THROTTLE[n % 3] ms. Outside the window the broker's value (always 0: tansu 0.6.0
  has no quotas) is kept. Fetch: ThrottleTimeMs is the first body field. Produce: it comes
  after the Responses array, which is walked to find it (v1-v8 classic, v9+ flexible).
- From ERRORS_FROM seconds on: the ErrorCode of the first partition of the first Produce
  response that carries a partition, and of the first Fetch response to client id
  ERROR_FETCH_CLIENT that carries a partition, becomes 6 NOT_LEADER_OR_FOLLOWER. Once each.

Like a Kafka broker since KIP-219 (2.0), the proxy then mutes the connection: a request
that arrives within T ms after a response with ThrottleTimeMs T was forwarded is held until
those T ms have passed, and only then sent on to the broker. (A client that obeys the
throttle itself, like kafka-python, never meets the mute; one that does not, like
librdkafka, which only reports throttle times to the application, sees its next response
delayed by the broker, as it would against Kafka.)

The request header (api key, version, correlation id, client id) of every request is
remembered per connection, so each response is read with its request's version: response
header v1 (correlation id + tagged fields) for flexible versions, v0 otherwise.

Every rewrite is logged as one TSV line in LOGFILE:
  t_s  client  correlation_id  api_key  api_version  client_id  field  old  new
(t_s: seconds since the first client connection; client: the client's ip:port as seen on
the proxy's listening socket, i.e. in the capture).
"""
import socket
import struct
import sys
import threading
import time

FETCH_THROTTLE = [100, 200, 300, 400]
PRODUCE_THROTTLE = [50, 100, 150]
THROTTLE_FROM, THROTTLE_UNTIL = 3.0, 7.0
ERRORS_FROM = 8.0
ERROR_FETCH_CLIENT = 'b4-kp-consumer'
NOT_LEADER_OR_FOLLOWER = 6

# First flexible version (response header v1, compact types) per api key, for the two
# APIs rewritten here.
FLEXIBLE_FROM = {0: 9, 1: 12}

lock = threading.Lock()
state = {'t0': None, 'produce_err': False, 'fetch_err': False}
log_fh = None


def now():
    return time.monotonic() - state['t0']


def log(client, corr, key, ver, cid, field, old, new):
    log_fh.write('%.6f\t%s\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n' % (now(), client, corr, key, ver, cid or '',
                                                         field, old, new))
    log_fh.flush()


def uvarint(b, o):
    v = s = 0
    while True:
        x = b[o]
        o += 1
        v |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            return v, o


def skip_tags(b, o):
    n, o = uvarint(b, o)
    for _ in range(n):
        _, o = uvarint(b, o)
        size, o = uvarint(b, o)
        o += size
    return o


class Reader:
    """Walks a response body; flexible or classic encodings."""

    def __init__(self, b, o, flex):
        self.b, self.o, self.flex = b, o, flex

    def i16(self):
        v = struct.unpack_from('>h', self.b, self.o)[0]
        self.o += 2
        return v

    def i32(self):
        v = struct.unpack_from('>i', self.b, self.o)[0]
        self.o += 4
        return v

    def skip(self, n):
        self.o += n

    def array_len(self):
        if self.flex:
            n, self.o = uvarint(self.b, self.o)
            return n - 1
        return self.i32()

    def skip_string(self):  # string or nullable string
        if self.flex:
            n, self.o = uvarint(self.b, self.o)
            self.o += max(n - 1, 0)
        else:
            n = self.i16()
            self.o += max(n, 0)

    def tags(self):
        if self.flex:
            self.o = skip_tags(self.b, self.o)


def body_offset(b, flex):
    """Offset of the response body: after the correlation id (and header tags if flexible)."""
    return skip_tags(b, 4) if flex else 4


def produce_offsets(b, ver, flex):
    """(offset of the first partition's ErrorCode or None, offset of ThrottleTimeMs)."""
    r = Reader(b, body_offset(b, flex), flex)
    first_err = None
    for _ in range(r.array_len()):
        if ver >= 13:
            r.skip(16)  # TopicId
        else:
            r.skip_string()  # Name
        for _ in range(r.array_len()):
            r.skip(4)  # Index
            if first_err is None:
                first_err = r.o
            r.skip(2 + 8)  # ErrorCode, BaseOffset
            if ver >= 2:
                r.skip(8)  # LogAppendTimeMs
            if ver >= 5:
                r.skip(8)  # LogStartOffset
            if ver >= 8:
                for _ in range(r.array_len()):  # RecordErrors
                    r.skip(4)
                    r.skip_string()
                    r.tags()
                r.skip_string()  # ErrorMessage
            r.tags()
        r.tags()
    return first_err, r.o


def fetch_first_partition_error(b, ver, flex):
    """Offset of the first partition's ErrorCode in a Fetch v7+ response, or None."""
    r = Reader(b, body_offset(b, flex), flex)
    r.skip(4 + 2 + 4)  # ThrottleTimeMs, ErrorCode, SessionId
    for _ in range(r.array_len()):
        if ver >= 13:
            r.skip(16)  # TopicId
        else:
            r.skip_string()  # Topic
        if r.array_len() > 0:
            r.skip(4)  # PartitionIndex
            return r.o
        return None
    return None


def rewrite(b, conn, client, corr, key, ver, cid):
    """Rewrite the response bytes b (without the size prefix) in place; return the throttle
    time set (0 when none)."""
    thr = 0
    flex = ver >= FLEXIBLE_FROM.get(key, 1 << 15)
    t = now()
    with lock:
        if key == 1 and ver >= 1:  # Fetch
            at = body_offset(b, flex)
            if THROTTLE_FROM <= t < THROTTLE_UNTIL:
                old = struct.unpack_from('>i', b, at)[0]
                new = thr = FETCH_THROTTLE[conn['fetch_n'] % len(FETCH_THROTTLE)]
                conn['fetch_n'] += 1
                struct.pack_into('>i', b, at, new)
                log(client, corr, key, ver, cid, 'ThrottleTimeMs', old, new)
            if (t >= ERRORS_FROM and not state['fetch_err'] and cid == ERROR_FETCH_CLIENT
                    and ver >= 7):
                e = fetch_first_partition_error(b, ver, flex)
                if e is not None:
                    old = struct.unpack_from('>h', b, e)[0]
                    struct.pack_into('>h', b, e, NOT_LEADER_OR_FOLLOWER)
                    state['fetch_err'] = True
                    log(client, corr, key, ver, cid, 'partitions[0].ErrorCode', old,
                        NOT_LEADER_OR_FOLLOWER)
        elif key == 0 and ver >= 1:  # Produce
            e, at = produce_offsets(b, ver, flex)
            if THROTTLE_FROM <= t < THROTTLE_UNTIL:
                old = struct.unpack_from('>i', b, at)[0]
                new = thr = PRODUCE_THROTTLE[conn['produce_n'] % len(PRODUCE_THROTTLE)]
                conn['produce_n'] += 1
                struct.pack_into('>i', b, at, new)
                log(client, corr, key, ver, cid, 'ThrottleTimeMs', old, new)
            if t >= ERRORS_FROM and not state['produce_err'] and e is not None:
                old = struct.unpack_from('>h', b, e)[0]
                struct.pack_into('>h', b, e, NOT_LEADER_OR_FOLLOWER)
                state['produce_err'] = True
                log(client, corr, key, ver, cid, 'partitions[0].ErrorCode', old,
                    NOT_LEADER_OR_FOLLOWER)
    return thr


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_message(s):
    head = recv_exact(s, 4)
    if head is None:
        return None
    size = struct.unpack('>i', head)[0]
    body = recv_exact(s, size)
    return body


def pump_requests(c, bk, pending, conn):
    try:
        while True:
            m = recv_message(c)
            if m is None:
                break
            key, ver, corr = struct.unpack_from('>hhi', m, 0)
            n = struct.unpack_from('>h', m, 8)[0]
            cid = m[10:10 + n].decode('utf-8', 'replace') if n >= 0 else None
            pending[corr] = (key, ver, cid)
            wait = conn['mute_until'] - time.monotonic()
            if wait > 0:  # the broker-side mute of KIP-219
                time.sleep(wait)
            bk.sendall(struct.pack('>i', len(m)) + m)
    except OSError:
        pass
    finally:
        try:
            bk.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def pump_responses(c, bk, pending, conn, client):
    try:
        while True:
            m = recv_message(bk)
            if m is None:
                break
            corr = struct.unpack_from('>i', m, 0)[0]
            req = pending.pop(corr, None)
            thr = 0
            if req is not None:
                try:
                    thr = rewrite(m, conn, client, corr, *req)
                except (IndexError, struct.error) as e:  # never break the conversation
                    sys.stderr.write('proxy: cannot read response %s %d: %r\n' % (client, corr, e))
            c.sendall(struct.pack('>i', len(m)) + m)
            if thr > 0:
                conn['mute_until'] = max(conn['mute_until'], time.monotonic() + thr / 1000)
    except OSError:
        pass
    finally:
        try:
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(c, addr, broker_port):
    client = '%s:%d' % addr[:2]
    try:
        bk = socket.create_connection(('127.0.0.1', broker_port))
    except OSError:
        c.close()
        return
    for s in (c, bk):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    pending = {}
    conn = {'fetch_n': 0, 'produce_n': 0, 'mute_until': 0.0}
    t = threading.Thread(target=pump_responses, args=(c, bk, pending, conn, client), daemon=True)
    t.start()
    pump_requests(c, bk, pending, conn)
    t.join()
    c.close()
    bk.close()


def main():
    global log_fh
    listen_port, broker_port, logfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    log_fh = open(logfile, 'w')
    log_fh.write('# throttle-proxy.py: FETCH_THROTTLE=%s PRODUCE_THROTTLE=%s window=[%.1f,%.1f) s '
                 'ERRORS_FROM=%.1f s ERROR_FETCH_CLIENT=%s\n'
                 % (FETCH_THROTTLE, PRODUCE_THROTTLE, THROTTLE_FROM, THROTTLE_UNTIL, ERRORS_FROM,
                    ERROR_FETCH_CLIENT))
    log_fh.write('t_s\tclient\tcorrelation_id\tapi_key\tapi_version\tclient_id\tfield\told\tnew\n')
    log_fh.flush()
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('127.0.0.1', listen_port))
    ls.listen(64)
    print('proxy listening on 127.0.0.1:%d -> 127.0.0.1:%d' % (listen_port, broker_port), flush=True)
    while True:
        c, addr = ls.accept()
        with lock:
            if state['t0'] is None:
                state['t0'] = time.monotonic()
        threading.Thread(target=serve, args=(c, addr, broker_port), daemon=True).start()


if __name__ == '__main__':
    main()
