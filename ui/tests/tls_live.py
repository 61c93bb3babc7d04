#!/usr/bin/env python3
"""Kafka over TLS on loopback, for ui/tests/tls.rs's live test.

    tls_live.py PORT KEYLOG CERT KEY

A TLS server on 127.0.0.1:PORT (Python's ssl: OpenSSL) answers each Kafka
request with an ApiVersions v0 response (its correlation id, no error, one
API: ApiVersions 0..3). Two clients connect in turn, one over TLS 1.3 and one
over TLS 1.2, each sending one ApiVersions v0 request (correlation ids 42 and
43, client ids live-tls-13 and live-tls-12) and reading its answer. The
clients write their session keys to KEYLOG as they handshake
(SSLContext.keylog_filename, the NSS format SSLKEYLOGFILE writes), so a
capture started before them finds each key only after its connection began.
Prints one line per exchange; exits non-zero on any failure. Every socket
has a timeout.
"""

import socket
import ssl
import struct
import sys
import threading

port, keylog, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
TIMEOUT = 5


def read_exact(s, n):
    out = b""
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise EOFError("connection closed")
        out += b
    return out


def read_frame(s):
    (size,) = struct.unpack(">i", read_exact(s, 4))
    return read_exact(s, size)


server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
server_ctx.load_cert_chain(cert, key)
listener = socket.create_server(("127.0.0.1", port))
listener.settimeout(TIMEOUT)


def serve(n):
    for _ in range(n):
        raw, _ = listener.accept()
        raw.settimeout(TIMEOUT)
        with server_ctx.wrap_socket(raw, server_side=True) as s:
            req = read_frame(s)
            (corr,) = struct.unpack(">i", req[4:8])
            # Response header v0 (correlation id); ApiVersions v0 body:
            # error_code, [api_key, min_version, max_version].
            body = struct.pack(">ihihhh", corr, 0, 1, 18, 0, 3)
            s.sendall(struct.pack(">i", len(body)) + body)
            # Wait for the client to close first.
            try:
                s.recv(1)
            except (OSError, ssl.SSLError):
                pass


server = threading.Thread(target=serve, args=(2,))
server.start()

for version, corr, client_id in [
    (ssl.TLSVersion.TLSv1_3, 42, b"live-tls-13"),
    (ssl.TLSVersion.TLSv1_2, 43, b"live-tls-12"),
]:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = version
    ctx.maximum_version = version
    ctx.keylog_filename = keylog
    raw = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    with ctx.wrap_socket(raw) as s:
        # ApiVersions v0 request: api_key, api_version, correlation id,
        # client id (int16 length and bytes), no body.
        req = struct.pack(">hhih", 18, 0, corr, len(client_id)) + client_id
        s.sendall(struct.pack(">i", len(req)) + req)
        resp = read_frame(s)
        (got,) = struct.unpack(">i", resp[:4])
        assert got == corr, (got, corr)
        print(f"{s.version()} {s.cipher()[0]} correlation id {corr} answered")

server.join(TIMEOUT * 3)
listener.close()
