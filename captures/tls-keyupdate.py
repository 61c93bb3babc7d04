#!/usr/bin/env python3
"""Kafka over TLS 1.3 with a KeyUpdate in each direction, through OpenSSL's own client.

    tls-keyupdate.py HOST:PORT CAFILE KEYLOG

`openssl s_client` (its TLS stack, its key log) carries two ApiVersions v0 requests, written
here byte for byte (size, api key 18, version 0, correlation id, client id "tls-keyupdate");
between them it is told `K` on its standard input, which makes it send a KeyUpdate asking
the peer to update too (SSL_key_update with SSL_KEY_UPDATE_REQUESTED): both directions move
to their next traffic secrets, which the key log does not hold (they are derived from
CLIENT/SERVER_TRAFFIC_SECRET_0). Loopback only.
"""
import struct
import subprocess
import sys
import time

addr, cafile, keylog = sys.argv[1:4]


def api_versions(corr):
    client = b"tls-keyupdate"
    body = struct.pack(">hhih", 18, 0, corr, len(client)) + client
    return struct.pack(">i", len(body)) + body


p = subprocess.Popen(
    ["openssl", "s_client", "-connect", addr, "-tls1_3", "-CAfile", cafile,
     "-keylogfile", keylog, "-no_ign_eof"],
    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1.0)
for chunk in [api_versions(1), b"K\n", api_versions(2)]:
    # One write per command: s_client reads its standard input a write at a time.
    p.stdin.write(chunk)
    p.stdin.flush()
    time.sleep(0.5)
p.stdin.close()
p.wait(timeout=10)
print("s_client: two ApiVersions requests around a KeyUpdate")
