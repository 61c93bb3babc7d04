#!/usr/bin/env bash
# C1: TCP traffic that is not Kafka, on loopback: HTTP (python3 -m http.server,
# curl), TLS (openssl s_server -www, curl -k) and a length-prefixed JSON
# protocol (a 4-byte big-endian size before each message, as Kafka frames
# them), on ports 18080, 18443 and 16379. kafkashark must find no Kafka in
# it, whatever the ports, and say so with the busiest ports.
# Needs: tcpdump, python3, curl, openssl. Loopback only.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE}
CAP=$OUT/negative/c1-not-kafka.pcap
RUN=$(mktemp -d /tmp/not-kafka.XXXXXX)
mkdir -p "$OUT/negative"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

tcpdump -i lo -s 0 -w "$CAP" "tcp port 18080 or tcp port 18443 or tcp port 16379" 2>"$RUN/tcpdump.log" &
TCPDUMP=$!
for _ in $(seq 100); do grep -q "listening on" "$RUN/tcpdump.log" && break; sleep 0.1; done

# HTTP: a directory listing, a text file and a binary file.
mkdir -p "$RUN/www" && printf 'hello, not kafka\n' >"$RUN/www/hello.txt"
head -c 4096 /dev/urandom >"$RUN/www/blob.bin"
(cd "$RUN/www" && exec python3 -m http.server 18080 --bind 127.0.0.1 >/dev/null 2>&1) &
PIDS+=($!)
# TLS: a self-signed certificate, openssl's status page.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$RUN/key.pem" -out "$RUN/cert.pem" \
  -days 1 -subj /CN=localhost >/dev/null 2>&1
openssl s_server -accept 18443 -cert "$RUN/cert.pem" -key "$RUN/key.pem" -www -quiet >/dev/null 2>&1 &
PIDS+=($!)
# A length-prefixed JSON echo service.
python3 - <<'PY' &
import json, socket, struct, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 16379)); srv.listen()
def serve(c):
    with c:
        while True:
            head = c.recv(4, socket.MSG_WAITALL)
            if len(head) < 4: return
            body = c.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
            reply = json.dumps({"echo": json.loads(body)}).encode()
            c.sendall(struct.pack(">i", len(reply)) + reply)
while True:
    c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
PIDS+=($!)
sleep 1

curl -s http://127.0.0.1:18080/ >/dev/null
curl -s http://127.0.0.1:18080/hello.txt >/dev/null
curl -s http://127.0.0.1:18080/blob.bin >/dev/null
curl -sk https://127.0.0.1:18443/ >/dev/null
python3 - <<'PY'
import json, socket, struct
with socket.create_connection(("127.0.0.1", 16379)) as s:
    for n in range(5):
        body = json.dumps({"n": n, "op": "get", "key": f"user:{n}"}).encode()
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        s.recv(size, socket.MSG_WAITALL)
PY
sleep 1
kill -INT "$TCPDUMP"; wait "$TCPDUMP" || true
cat "$RUN/tcpdump.log"
rm -rf "$RUN"
