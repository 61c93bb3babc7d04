# reclib.sh -- helpers sourced by the record-*.sh scripts in this folder.
#
# Needs: tansu 0.6.0 built WITH the memory storage engine, i.e.
#   cargo install tansu --version 0.6.0 --features dynostore --root /some/dir
# (a default `cargo install tansu` has no storage engine and refuses memory://),
# tcpdump, tshark 4.0, python3. Point TANSU at the binary.
# Everything listens on / talks to loopback only (127.0.0.1 or ::1), port 9092 unless PORT
# is set before sourcing (record-b1-*.sh uses 19092).
set -euo pipefail
TANSU=${TANSU:-tansu}
PORT=${PORT:-9092}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE}
RUNDIR=${RUNDIR:-$(mktemp -d /tmp/kafka-rec.XXXXXX)}

BROKER_PID=""
TCPDUMP_PID=""

# broker_start [HOST]   HOST is 127.0.0.1 (default) or [::1]
broker_start() {
  local host=${1:-127.0.0.1}
  BROKER_HOST=$host
  "$TANSU" broker --listener-url "tcp://$host:$PORT" --advertised-listener-url "tcp://$host:$PORT" \
     --storage-engine memory://tansu/ >"$RUNDIR/broker.log" 2>&1 &
  BROKER_PID=$!
  echo "broker pid $BROKER_PID on $host:$PORT (log $RUNDIR/broker.log)"
  for _ in $(seq 100); do
    if ss -ltnH "sport = :$PORT" | grep -q .; then sleep 0.3; return 0; fi
    sleep 0.1
  done
  echo "broker did not start:" >&2; cat "$RUNDIR/broker.log" >&2; return 1
}

# broker_behind BACKEND_PORT ADVERTISED_PORT TOPIC PARTITIONS -- tansu on 127.0.0.1:BACKEND_PORT
# advertising ADVERTISED_PORT (a proxy's, so that every client connection goes through it),
# with TOPIC created before anything is captured.
broker_behind() {
  "$TANSU" broker --listener-url "tcp://127.0.0.1:$1" --advertised-listener-url "tcp://127.0.0.1:$2" \
     --storage-engine memory://tansu/ >"$RUNDIR/broker.log" 2>&1 &
  BROKER_PID=$!
  for _ in $(seq 100); do ss -ltnH "sport = :$1" | grep -q . && break; sleep 0.1; done
  sleep 0.3
  "$TANSU" topic create --broker "tcp://127.0.0.1:$1" --partitions "$4" "$3" >/dev/null
}

broker_stop() {
  if [ -n "$BROKER_PID" ]; then kill "$BROKER_PID" 2>/dev/null || true; wait "$BROKER_PID" 2>/dev/null || true; fi
  BROKER_PID=""
}

# cap_start IFACE FILE   (IFACE lo -> Ethernet link type; any -> Linux cooked SLL2)
cap_start() {
  CAPFILE=$2
  rm -f "$CAPFILE"
  tcpdump -i "$1" -s 0 -B 262144 -w "$CAPFILE" "tcp port $PORT" 2>"$RUNDIR/tcpdump.log" &
  TCPDUMP_PID=$!
  for _ in $(seq 100); do grep -q "listening on" "$RUNDIR/tcpdump.log" && break; sleep 0.1; done
  sleep 0.5
  echo "tcpdump pid $TCPDUMP_PID -> $CAPFILE"
}

cap_stop() {
  sleep 1
  if [ -n "$TCPDUMP_PID" ]; then kill -INT "$TCPDUMP_PID" 2>/dev/null || true; wait "$TCPDUMP_PID" 2>/dev/null || true; fi
  TCPDUMP_PID=""
  cat "$RUNDIR/tcpdump.log"
  if grep -E "^[1-9][0-9]* packets dropped by kernel" "$RUNDIR/tcpdump.log"; then echo "WARNING: tcpdump dropped packets" >&2; fi
}

cleanup() { cap_stop >/dev/null 2>&1 || true; broker_stop; }
trap cleanup EXIT

# topic NAME PARTITIONS  -- create a topic with tansu's own client (run BEFORE cap_start
# unless the CreateTopics exchange is meant to be in the capture)
topic() { "$TANSU" topic create --broker "tcp://${BROKER_HOST:-127.0.0.1}:$PORT" --partitions "$2" "$1" >/dev/null; }

# summarize FILE CLIENT WORKLOAD  (optional $NOTES)  -- writes FILE.tshark.tsv and FILE.summary.txt
summarize() {
  python3 "$HERE/summarize.py" "$1" --port "$PORT" --client "$2" --workload "$3" ${NOTES:+--notes "$NOTES"} \
    --broker "tansu 0.6.0 (built with --features dynostore)${BROKER_NOTE:-}, storage memory://tansu/, listening on ${BROKER_HOST:-127.0.0.1}:$PORT"
}
