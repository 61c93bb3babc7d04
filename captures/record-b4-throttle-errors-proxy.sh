#!/usr/bin/env bash
# B4: throttling and errors, made faithful with a rewriting proxy (tansu 0.6.0 has no quotas).
# IPv4 loopback only, tcpdump -i lo on port 9092 = the CLIENT side of throttle-proxy.py.
#
#   clients --(127.0.0.1:9092, captured)--> throttle-proxy.py --(127.0.0.1:9093)--> tansu
#
# tansu listens on 127.0.0.1:9093 but advertises 127.0.0.1:9092, so every connection the
# clients make (bootstrap and the broker connections Metadata hands out) goes through the
# proxy. The proxy forwards every byte unchanged except ThrottleTimeMs in Fetch and Produce
# responses during a 4-second window, and one partition ErrorCode (6 NOT_LEADER_OR_FOLLOWER)
# in one Produce and one Fetch response later on; see throttle-proxy.py. It logs every
# rewrite to b4-throttle-errors-proxy.pcap.proxy.tsv. The clients (librdkafka 2.16.0 via
# confluent-kafka 2.16.1, kafka-python 3.0.12) are real and obey the throttle (KIP-219),
# see throttle-workload.py. The topic is created before the capture starts.
source "$(dirname "$0")/reclib.sh"          # PORT=9092: the captured, client-facing port
BACKEND_PORT=${BACKEND_PORT:-9093}
CAP=$OUT/b4-throttle-errors-proxy.pcap
PROXY_LOG=$CAP.proxy.tsv
PROXY_PID=""
TOPIC=b4-throttle

cleanup_b4() { [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null; cleanup; }
trap cleanup_b4 EXIT

broker_behind "$BACKEND_PORT" "$PORT" "$TOPIC" 2

python3 -u "$HERE/throttle-proxy.py" "$PORT" "$BACKEND_PORT" "$PROXY_LOG" >"$RUNDIR/proxy.log" 2>&1 &
PROXY_PID=$!
for _ in $(seq 100); do ss -ltnH "sport = :$PORT" | grep -q . && break; sleep 0.1; done

cap_start lo "$CAP"
timeout 60 python3 "$HERE/throttle-workload.py" "127.0.0.1:$PORT" "$TOPIC" 11
cap_stop
kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true; PROXY_PID=""
cat "$RUNDIR/proxy.log"
broker_stop
echo "proxy rewrites: $(grep -vc -e '^#' -e '^t_s' "$PROXY_LOG")"

python3 "$HERE/summarize.py" "$CAP" --port "$PORT" \
  --client "confluent-kafka 2.16.1 on librdkafka 2.16.0 (Producer b4-rdk-producer, Consumer b4-rdk-consumer) + kafka-python 3.0.12 (KafkaConsumer b4-kp-consumer), all through throttle-proxy.py" \
  --broker "tansu 0.6.0 (built with --features dynostore), storage memory://tansu/, listening on 127.0.0.1:$BACKEND_PORT, advertising 127.0.0.1:$PORT = throttle-proxy.py (the captured side)" \
  --workload "see throttle-workload.py: topic $TOPIC (2 partitions, created before the capture); a librdkafka producer sends one record every 100 ms (acks=all) for 10 s; a librdkafka consumer (group b4-rdk-group) and a kafka-python consumer (group b4-kp-group) read it with fetch max wait 200 ms for 11 s." \
  --notes "ThrottleTimeMs values and the two NOT_LEADER_OR_FOLLOWER (6) codes were INJECTED by throttle-proxy.py (tansu has no quotas): Fetch responses 3-7 s after the first connection get 100,200,300,400 ms in turn, Produce responses 50,100,150 ms in turn; from 8 s the first Produce response and the first Fetch response to b4-kp-consumer that carry a partition get error 6 on their first partition. Every rewrite is listed in $(basename "$PROXY_LOG"). Everything else is the broker's bytes; the clients' reactions (delayed requests after a throttle, metadata refresh and retry after error 6) are real."
