#!/usr/bin/env bash
# D1/D2: Kafka over TLS, with the key logs, and the same bytes in plaintext.
#
#   clients --TLS, 127.0.0.1:9093--> tls-proxy.py --plaintext, 127.0.0.1:9094--> tansu
#
#   record-d1-tls.sh 1.3  -> tls/d1-tls13.pcap, tls/d1-tls13-plain.pcap (+ .server.keys, .client.keys)
#   record-d1-tls.sh 1.2  -> tls/d2-tls12.pcap, tls/d2-tls12-plain.pcap (one TLS 1.2 suite per
#                            connection, in turn)
#   record-d1-tls.sh extras -> tls/d3-tls-extras.pcap, tls/d3-tls-extras-plain.pcap (and
#                            tls/d3-tls-extras-keys.pcapng): what d1
#                            and d2 lack: kafkajs resuming its sessions (TLS 1.3 tickets),
#                            OpenSSL's s_client sending a KeyUpdate each way between two
#                            ApiVersions (tls-keyupdate.py), and kafka-python and librdkafka
#                            bootstrapping through a second proxy on 9095 whose TLS 1.2 CBC
#                            suites run MAC-then-encrypt (--no-etm: HMAC-SHA384, SHA256, SHA1)
#   record-d1-tls.sh sasl   -> tls/d4-sasl-ssl.pcap, tls/d4-sasl-ssl-plain.pcap (and
#                            tls/d4-sasl-ssl-keys.pcapng): SASL_SSL over TLS 1.3, SCRAM-SHA-256
#                            and SCRAM-SHA-512 logins and a PLAIN login refused
#                            (tls-sasl.py), to a tansu requiring them; needs TANSU_SQL, a tansu
#                            0.6.0 built with --features dynostore,libsql (users are kept
#                            across the restart that turns authentication on)
#   record-d1-tls.sh plain  -> tls/d5-sasl-plain.pcap, tls/d5-sasl-plain-plain.pcap (and
#                            tls/d5-sasl-plain-keys.pcapng): SASL_SSL over TLS 1.2, PLAIN logins
#                            (tls-sasl.py plain); needs TANSU_PLAIN, tansu 0.6.0 built with
#                            PLAIN by build-tansu-plain.sh (a stock tansu offers SCRAM only)
#   record-d1-tls.sh bulk MB DIR -> DIR/bulk-tls13.pcap, DIR/bulk-tls13-plain.pcap: TLS 1.3,
#                            kafka-python producing MB megabytes and reading them back, for
#                            scripts/bench-tls.sh (not shipped: large)
#
# tansu listens on 9094 and advertises 9093, the proxy's port, so every connection goes
# through the proxy. One tcpdump records both ports; the capture is then split: FILE.pcap
# holds port 9093 (TLS) and FILE-plain.pcap port 9094 (the proxy's plaintext side: the
# same Kafka bytes, byte for byte, so a decrypted FILE.pcap must decode to FILE-plain.pcap's
# messages). Key logs: FILE.server.keys is written by the proxy for every connection (a
# broker-side key log); FILE.client.keys by the clients that can (kafka-python 3.0.12
# through SSLContext.keylog_filename, kafkajs 2.2.4 through node's 'keylog' event;
# librdkafka 2.16.0 has no key log setting, so its connections are missing from it).
# The broker certificate is self-signed, made here, for IP 127.0.0.1, valid 10 years.
# Needs what reclib.sh needs, openssl, kafka-python, confluent-kafka and kafkajs
# (NODE_PATH pointing at a node_modules holding kafkajs 2.2.4).
set -euo pipefail
VERSION=${1:?usage: record-d1-tls.sh 1.2|1.3|extras|sasl|plain|bulk MB DIR}
EXTRAS=""
if [ "$VERSION" = extras ]; then EXTRAS=1; VERSION=1.3; fi
SASL=""
if [ "$VERSION" = sasl ]; then SASL=1; VERSION=1.3; fi
# PLAIN: the SASL part of sasl with another broker build and TLS 1.2 (d4 is TLS 1.3).
SASL_MODE=scram
if [ "$VERSION" = plain ]; then
  SASL=1; SASL_MODE=plain; VERSION=1.2
  TANSU_SQL=${TANSU_PLAIN:?plain needs TANSU_PLAIN: tansu 0.6.0 built by build-tansu-plain.sh}
fi
BULK_MB=""
if [ "$VERSION" = bulk ]; then
  BULK_MB=${2:?bulk MB DIR}
  BULK_DIR=$(cd "${3:?bulk MB DIR}" && pwd)
  VERSION=1.3
fi
PORT=9093
source "$(dirname "$0")/reclib.sh"
# Kept apart from the plaintext captures (captures/tls/): not Kafka without their keys.
OUT=$HERE/tls
mkdir -p "$OUT"
BACKEND_PORT=9094
case $VERSION in
  1.3) NAME=d1-tls13; SUITES="" ;;
  # ECDHE and RSA key exchange; AES-GCM, ChaCha20-Poly1305, AES-CBC with SHA-1 and SHA-256.
  1.2) NAME=d2-tls12; SUITES="ECDHE-RSA-AES128-GCM-SHA256,ECDHE-RSA-AES256-GCM-SHA384,ECDHE-RSA-CHACHA20-POLY1305,ECDHE-RSA-AES128-SHA,AES256-SHA256,AES128-GCM-SHA256" ;;
  *) echo "TLS 1.2 or 1.3" >&2; exit 2 ;;
esac
if [ -n "$BULK_MB" ]; then OUT=$BULK_DIR; NAME=bulk-tls13; fi
if [ -n "$EXTRAS" ]; then NAME=d3-tls-extras; fi
if [ -n "$SASL" ]; then NAME=d4-sasl-ssl; TOPIC=sasl-topic; SUITES=""; fi
if [ "$SASL_MODE" = plain ]; then NAME=d5-sasl-plain; SUITES="ECDHE-RSA-AES256-GCM-SHA384,ECDHE-RSA-CHACHA20-POLY1305"; fi
# The extras' second proxy: TLS 1.2, CBC suites, MAC-then-encrypt.
MTE_PORT=9095
MTE_SUITES="ECDHE-RSA-AES256-SHA384,ECDHE-RSA-AES128-SHA256,ECDHE-RSA-AES128-SHA"
MTE_PID=""
CAP=$OUT/$NAME.pcap
PLAIN=$OUT/$NAME-plain.pcap
ALL=$RUNDIR/all.pcap
TOPIC=tls-topic
export NODE_PATH=${NODE_PATH:-./node_modules}
PROXY_PID=""
CLIENTS="kafka-python 3.0.12, confluent-kafka 2.16.1 (librdkafka 2.16.0), kafkajs 2.2.4 (node $(node --version)), over TLS $VERSION through tls-proxy.py"
WORKLOAD="see tls-workload.py and tls-kafkajs.js: topic $TOPIC (2 partitions, created before the capture); kafka-python produces 10 records and reads them back (partitions assigned); librdkafka produces 10 gzip records, a consumer in group tls-group reads all 20 and commits; kafkajs produces 5 records, a consumer in group tls-js-group reads all 25."
cleanup_d() { [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null; [ -n "$MTE_PID" ] && kill "$MTE_PID" 2>/dev/null; cleanup; }
trap cleanup_d EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=kafkashark-test-broker" \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
  -keyout "$RUNDIR/broker.key" -out "$RUNDIR/broker.crt" 2>/dev/null
rm -f "$CAP.server.keys" "$CAP.client.keys"

if [ -n "$SASL" ]; then
  # Users and topic made on an open broker, kept in SQLite, then the broker restarted
  # requiring SASL (tansu's own commands cannot log in).
  TANSU_SQL=${TANSU_SQL:?sasl needs TANSU_SQL: tansu 0.6.0 built with --features dynostore,libsql}
  sql_broker() {
    (cd "$RUNDIR" && exec "$TANSU_SQL" broker --listener-url "tcp://127.0.0.1:$BACKEND_PORT" \
      --advertised-listener-url "tcp://127.0.0.1:$PORT" --storage-engine sqlite://tansu.db "$@") \
      >>"$RUNDIR/broker.log" 2>&1 &
    BROKER_PID=$!
    for _ in $(seq 100); do ss -ltnH "sport = :$BACKEND_PORT" | grep -q . && break; sleep 0.1; done
    sleep 0.3
  }
  sql_broker
  "$TANSU_SQL" user create --broker "tcp://127.0.0.1:$BACKEND_PORT" --mechanism scram256 alice alice-secret
  "$TANSU_SQL" user create --broker "tcp://127.0.0.1:$BACKEND_PORT" --mechanism scram512 bob bob-secret
  "$TANSU_SQL" topic create --broker "tcp://127.0.0.1:$BACKEND_PORT" --partitions 2 "$TOPIC" >/dev/null
  broker_stop
  sql_broker --authentication
  BROKER_DESC="tansu 0.6.0 (built with --features dynostore,libsql), storage sqlite, --authentication (SASL SCRAM-SHA-256/512 required)"
  CLIENTS="kafka-python 3.0.12 and confluent-kafka 2.16.1 (librdkafka 2.16.0), SASL_SSL over TLS $VERSION through tls-proxy.py"
  WORKLOAD="see tls-sasl.py: topic $TOPIC (2 partitions); kafka-python logs in as alice with SCRAM-SHA-256, produces 5 records and reads them back; asks for PLAIN (refused: the broker offers SCRAM only); librdkafka logs in as bob with SCRAM-SHA-512 and produces 5 records."
  if [ "$SASL_MODE" = plain ]; then
    BROKER_DESC="tansu 0.6.0 (built with --features dynostore,libsql and rsasl's PLAIN: build-tansu-plain.sh), storage sqlite, --authentication (SASL required; PLAIN offered)"
    WORKLOAD="see tls-sasl.py plain: topic $TOPIC (2 partitions); kafka-python logs in as carol with PLAIN, produces 5 records and reads them back; librdkafka logs in as dave with PLAIN and produces 5 records."
  fi
else
  broker_behind "$BACKEND_PORT" "$PORT" "$TOPIC" 2
fi

python3 -u "$HERE/tls-proxy.py" "$PORT" "$BACKEND_PORT" --cert "$RUNDIR/broker.crt" --key "$RUNDIR/broker.key" \
  --keylog "$CAP.server.keys" --tls "$VERSION" --suites "$SUITES" --log "$RUNDIR/proxy.log" &
PROXY_PID=$!
for _ in $(seq 100); do ss -ltnH "sport = :$PORT" | grep -q . && break; sleep 0.1; done
if [ -n "$EXTRAS" ]; then
  python3 -u "$HERE/tls-proxy.py" "$MTE_PORT" "$BACKEND_PORT" --cert "$RUNDIR/broker.crt" --key "$RUNDIR/broker.key" \
    --keylog "$CAP.server.keys" --tls 1.2 --suites "$MTE_SUITES" --no-etm --log "$RUNDIR/proxy.log" &
  MTE_PID=$!
  for _ in $(seq 100); do ss -ltnH "sport = :$MTE_PORT" | grep -q . && break; sleep 0.1; done
fi

rm -f "$ALL"
tcpdump -i lo -s 0 -B 262144 -w "$ALL" "tcp port $PORT or tcp port $BACKEND_PORT or tcp port $MTE_PORT" 2>"$RUNDIR/tcpdump.log" &
TCPDUMP_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$RUNDIR/tcpdump.log" && break; sleep 0.1; done
sleep 0.5

# TLS 1.3 suites are the clients' choice here (Python's ssl cannot set a server's): an OpenSSL
# configuration for the client's process narrows what it offers: kafka-python
# TLS_AES_128_GCM_SHA256, librdkafka TLS_AES_256_GCM_SHA384; kafkajs ChaCha20-Poly1305.
suites13() {
  printf 'openssl_conf = d\n[d]\nssl_conf = s\n[s]\nsystem_default = t\n[t]\nCiphersuites = %s\n' "$1" >"$RUNDIR/$1.cnf"
  [ "$VERSION" = 1.3 ] && echo "$RUNDIR/$1.cnf" || true
}
[ "$VERSION" = 1.3 ] && JS_CIPHERS=TLS_CHACHA20_POLY1305_SHA256
if [ -n "$SASL" ]; then
  timeout 120 python3 "$HERE/tls-sasl.py" "127.0.0.1:$PORT" "$TOPIC" "$RUNDIR/broker.crt" "$CAP.client.keys" "$SASL_MODE"
fi
if [ -n "$EXTRAS" ]; then
  CLIENTS="kafkajs 2.2.4 (node $(node --version)) resuming sessions, OpenSSL $(openssl version | cut -d' ' -f2) s_client, kafka-python 3.0.12 and confluent-kafka 2.16.1 (librdkafka 2.16.0) bootstrapping over TLS 1.2 CBC MAC-then-encrypt"
  WORKLOAD="kafkajs (TLS 1.3, 9093) produces 5 records and a group reads them, each new socket offering the broker's last ticket (tls-kafkajs.js resume); s_client (TLS 1.3, 9093) sends ApiVersions v0, a KeyUpdate asking for one back, ApiVersions v0 (tls-keyupdate.py); kafka-python and librdkafka bootstrap through 127.0.0.1:$MTE_PORT (TLS 1.2, $MTE_SUITES in turn, no encrypt-then-MAC), then work through 9093 as in d1 (tls-workload.py)."
  timeout 60 node "$HERE/tls-kafkajs.js" "127.0.0.1:$PORT" "$TOPIC" "$RUNDIR/broker.crt" "$CAP.client.keys" "" resume
  timeout 30 python3 "$HERE/tls-keyupdate.py" "127.0.0.1:$PORT" "$RUNDIR/broker.crt" "$CAP.client.keys"
  for which in kafka-python librdkafka; do
    timeout 120 python3 "$HERE/tls-workload.py" "127.0.0.1:$MTE_PORT" "$TOPIC" "$RUNDIR/broker.crt" "$CAP.client.keys" $which
  done
  kill "$MTE_PID"; wait "$MTE_PID" 2>/dev/null || true; MTE_PID=""
fi
if [ -n "$BULK_MB" ]; then
  timeout 900 python3 "$HERE/tls-workload.py" "127.0.0.1:$PORT" "$TOPIC" "$RUNDIR/broker.crt" "$CAP.client.keys" bulk "$BULK_MB"
  cap_stop
  kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""
  broker_stop
  tcpdump -r "$ALL" -w "$CAP" "tcp port $PORT" 2>/dev/null
  tcpdump -r "$ALL" -w "$PLAIN" "tcp port $BACKEND_PORT" 2>/dev/null
  ls -l "$CAP" "$PLAIN" "$CAP.server.keys"
  exit 0
fi
if [ -z "$EXTRAS$SASL" ]; then
  for which in kafka-python librdkafka; do
    case $which in kafka-python) s=TLS_AES_128_GCM_SHA256 ;; *) s=TLS_AES_256_GCM_SHA384 ;; esac
    OPENSSL_CONF=$(suites13 $s) timeout 120 python3 "$HERE/tls-workload.py" "127.0.0.1:$PORT" "$TOPIC" "$RUNDIR/broker.crt" "$CAP.client.keys" $which
  done
  timeout 60 node "$HERE/tls-kafkajs.js" "127.0.0.1:$PORT" "$TOPIC" "$RUNDIR/broker.crt" "$CAP.client.keys" "${JS_CIPHERS:-}"
fi

cap_stop
kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""
cat "$RUNDIR/proxy.log"
broker_stop
tcpdump -r "$ALL" -w "$CAP" "tcp port $PORT or tcp port $MTE_PORT" 2>/dev/null
tcpdump -r "$ALL" -w "$PLAIN" "tcp port $BACKEND_PORT" 2>/dev/null
echo "$CAP: $(tcpdump -r "$CAP" 2>/dev/null | wc -l) packets; $PLAIN: $(tcpdump -r "$PLAIN" 2>/dev/null | wc -l) packets"
echo "key log lines: server $(wc -l <"$CAP.server.keys"), client $(wc -l <"$CAP.client.keys")"
# The same capture carrying its keys (pcapng Decryption Secrets Block), as
# operators make one with Wireshark's editcap: tls/d1-tls13-keys.pcapng,
# tls/d2-tls12-keys.pcapng, tls/d3-tls-extras-keys.pcapng, tls/d4-sasl-ssl-keys.pcapng,
# tls/d5-sasl-plain-keys.pcapng.
editcap --inject-secrets "tls,$CAP.server.keys" "$CAP" "${CAP%.pcap}-keys.pcapng"
# tshark's reading of the decrypted capture (its own TLS and Kafka dissectors).
tshark -n -r "$CAP" -o "tls.keylog_file:$CAP.server.keys" -d "tls.port==$PORT,kafka" -d "tls.port==$MTE_PORT,kafka" -Y kafka -T fields \
  -e frame.number -e frame.time_epoch -e tcp.stream -e tcp.srcport -e tcp.dstport -e tls.record.version \
  -e kafka.len -e kafka.request_key -e kafka.api_version -e kafka.correlation_id \
  -e kafka.response_frame -e kafka.request_frame >"$CAP.tshark.tsv" 2>/dev/null || true
echo "tshark decrypted $(wc -l <"$CAP.tshark.tsv") frames with Kafka"
python3 "$HERE/summarize.py" "$PLAIN" --port "$BACKEND_PORT" --client "$CLIENTS" --workload "$WORKLOAD" \
  --broker "${BROKER_DESC:-tansu 0.6.0 (built with --features dynostore), storage memory://tansu/}, listening on 127.0.0.1:$BACKEND_PORT behind tls-proxy.py on 127.0.0.1:$PORT" \
  --notes "The proxy's plaintext side of $(basename "$CAP"): the same Kafka bytes as its TLS connections carry."

