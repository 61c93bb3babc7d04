#!/usr/bin/env bash
# Live-capture benchmark on loopback: does a live capture keep up with
# 100,000 Kafka messages per second on loopback with zero kernel drops?
#
#   sudo scripts/live_bench.sh FILE [RATE] [SECONDS]     # e.g. /tmp/c50.pcap 100000 10
#   CMD=stats MAXMSG=1024 PORT=19092 scripts/live_bench.sh FILE 100000 10
#   VERBOSE=1 scripts/live_bench.sh FILE 20000 5             # print -V (field trees)
#
# Starts `kafkashark print -i lo --ports PORT --format jsonl` (or `stats` with
# CMD=stats), replays the Kafka conversations of FILE over loopback with the
# `loopback-load` example at RATE messages per second for SECONDS, then
# compares: messages the load wrote, messages kafkashark printed (or counted),
# the streams with lost bytes, and the kernel/interface drops kafkashark
# reports at the end of a live capture. Zero lost messages and zero kernel
# drops is "keeping up". Needs capture rights on lo (root or cap_net_raw).
# The load runs on the same machine and takes CPU of its own: the achieved
# rate it prints is the load actually offered.
set -euo pipefail

FILE=${1:?usage: scripts/live_bench.sh FILE [RATE] [SECONDS]}
RATE=${2:-100000}
SECS=${3:-10}
PORT=${PORT:-19092}
CMD=${CMD:-print}
MAXMSG=${MAXMSG:-65536}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=${KAFKASHARK:-$ROOT/target/release/kafkashark}
LOAD=$ROOT/target/release/examples/loopback-load
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [[ -z ${KAFKASHARK:-} ]]; then
    (cd "$ROOT" && cargo build -q --release -p kafkashark-ui && cargo build -q --release -p kafkashark --example loopback-load)
fi

if [[ $CMD == stats ]]; then
    "$K" stats -i lo --ports "$PORT" --format json --duration $((SECS + 4)) >"$TMP/out" 2>"$TMP/err" &
else
    # VERBOSE=1: `print -V` (each line then carries its field tree).
    "$K" print ${VERBOSE:+-V} -i lo --ports "$PORT" --format jsonl --duration $((SECS + 4)) >"$TMP/out" 2>"$TMP/err" &
fi
kpid=$!
sleep 1.5
"$LOAD" "$FILE" --rate "$RATE" --seconds "$SECS" --port "$PORT" --max-message "$MAXMSG" 2>/dev/null | tee "$TMP/load"
wait "$kpid" || true

sent=$(sed -n 's/^sent \([0-9]*\) messages.*/\1/p' "$TMP/load")
if [[ $CMD == stats ]]; then
    # A live stats run prints a report every second: the last one counts.
    got=$(python3 -c '
import json, sys
text, dec, last, i = open(sys.argv[1]).read(), json.JSONDecoder(), None, 0
while True:
    i = text.find("{", i)
    if i < 0:
        break
    last, i = dec.raw_decode(text, i)
print(last["summary"]["messages"] if last else 0)' "$TMP/out")
else
    got=$(wc -l <"$TMP/out")
    if [[ -n ${VERBOSE:-} ]]; then
        echo "lines with a field tree: $(grep -c '"fields":{' "$TMP/out" || true)"
    fi
fi
lost=$(grep -c "missing before frame" "$TMP/err" || true)
echo "kafkashark $CMD: $got of $sent messages; $lost gap(s) reported"
grep -i "dropped by the kernel" "$TMP/err" || echo "(no drop line on stderr)"
[[ $got == "$sent" && $lost == 0 ]] && echo "KEPT UP" || echo "DID NOT KEEP UP"
