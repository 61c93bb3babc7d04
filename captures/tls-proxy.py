#!/usr/bin/env python3
"""A TLS-terminating proxy in front of a plaintext Kafka broker, for recording Kafka over TLS.

    clients --TLS, 127.0.0.1:LISTEN--> tls-proxy.py --plaintext, 127.0.0.1:BACKEND--> tansu

Every byte is forwarded unchanged in both directions (the proxy does not read Kafka). The
broker advertises the proxy's address, so every connection a client makes goes through it.
Because both sides are on loopback, one tcpdump of both ports records each conversation
twice: encrypted on LISTEN and in plaintext on BACKEND, byte for byte the same Kafka bytes.

The server side writes the NSS key log of every connection (Python's
SSLContext.keylog_filename), as a broker-side key log would be written. Connections take the
configured TLS settings in turn (--suites: one TLS 1.2 cipher suite per connection, round
robin), so one recording holds several suites.

    tls-proxy.py LISTEN BACKEND --cert C --key K --keylog FILE [--tls 1.2|1.3|any]
                 [--suites SUITE,SUITE,...] [--no-etm] [--log FILE]

--no-etm refuses RFC 7366's encrypt-then-MAC, so TLS 1.2 CBC suites run MAC-then-encrypt (as
servers without the extension do; OpenSSL agrees to it by default).

Loopback only. Stops on SIGTERM/SIGINT.
"""
import argparse
import itertools
import signal
import socket
import ssl
import sys
import threading
import time


def context(args, suite):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    ctx.keylog_filename = args.keylog
    if args.tls == "1.2":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    elif args.tls == "1.3":
        ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    else:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if suite:
        # OpenSSL names (TLS 1.2 suites); @SECLEVEL=0 lets the old CBC ones through.
        ctx.set_ciphers(suite + ":@SECLEVEL=0")
    # One ticket per connection is plenty; resumption is the client's choice.
    ctx.num_tickets = 1
    if args.no_etm:
        # SSL_OP_NO_ENCRYPT_THEN_MAC (OpenSSL 3), which Python's ssl does not name.
        ctx.options |= getattr(ssl, "OP_NO_ENCRYPT_THEN_MAC", 1 << 19)
    return ctx


def pump(src, dst, stop):
    try:
        while not stop.is_set():
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except (OSError, ssl.SSLError):
        pass
    finally:
        stop.set()
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, peer, ctx, args, log):
    t0 = time.time()
    try:
        tls = ctx.wrap_socket(conn, server_side=True)
    except (OSError, ssl.SSLError) as e:
        log(f"{peer[0]}:{peer[1]}\thandshake failed\t{e}")
        conn.close()
        return
    log(f"{peer[0]}:{peer[1]}\t{tls.version()}\t{tls.cipher()[0]}\thandshake {1000 * (time.time() - t0):.1f} ms")
    try:
        back = socket.create_connection(("127.0.0.1", args.backend))
    except OSError as e:
        log(f"{peer[0]}:{peer[1]}\tbackend refused\t{e}")
        tls.close()
        return
    back.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stop = threading.Event()
    a = threading.Thread(target=pump, args=(tls, back, stop), daemon=True)
    b = threading.Thread(target=pump, args=(back, tls, stop), daemon=True)
    a.start()
    b.start()
    a.join()
    b.join()
    tls.close()
    back.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("listen", type=int)
    p.add_argument("backend", type=int)
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--keylog", required=True)
    p.add_argument("--tls", choices=["1.2", "1.3", "any"], default="any")
    p.add_argument("--suites", default="")
    p.add_argument("--no-etm", action="store_true")
    p.add_argument("--log", default=None)
    args = p.parse_args()
    suites = [s for s in args.suites.split(",") if s] or [""]
    contexts = itertools.cycle([context(args, s) for s in suites])
    out = open(args.log, "a") if args.log else sys.stdout
    lock = threading.Lock()

    def log(line):
        with lock:
            out.write(line + "\n")
            out.flush()

    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", args.listen))
    srv.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    log(f"# listening on 127.0.0.1:{args.listen} -> 127.0.0.1:{args.backend}, tls {args.tls}, suites {suites}")
    while True:
        conn, peer = srv.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve, args=(conn, peer, next(contexts), args, log), daemon=True).start()


if __name__ == "__main__":
    main()
