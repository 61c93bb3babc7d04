#!/usr/bin/env bash
# What decrypting costs: `stats` on a TLS capture with its key log against
# `stats` on the same Kafka bytes in plaintext (the TLS proxy's other side),
# as recorded by `captures/record-d1-tls.sh bulk MB DIR`.
#
#   captures/record-d1-tls.sh bulk 64 /tmp/bulk   # once: DIR/bulk-tls13.pcap, -plain.pcap, keys
#   scripts/bench-tls.sh /tmp/bulk
#   RUNS=5 KAFKASHARK=/path/to/kafkashark scripts/bench-tls.sh /tmp/bulk
#
# Checks first that both read the same Kafka messages (stats' message
# counts, the TLS one missing at most a response its client hung up on),
# then runs each command RUNS times (default 5) in rounds, alternating, on a
# warm page cache, and prints each one's median and smallest wall time, the
# largest peak RSS, and the TLS/plaintext ratio of the medians (the target:
# at most 2).
set -euo pipefail
export LC_ALL=C

DIR=${1:?usage: scripts/bench-tls.sh DIR (from captures/record-d1-tls.sh bulk MB DIR)}
RUNS=${RUNS:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=${KAFKASHARK:-$ROOT/target/release/kafkashark}
TLS=$DIR/bulk-tls13.pcap
PLAIN=$DIR/bulk-tls13-plain.pcap
KEYS=$TLS.server.keys
for f in "$TLS" "$PLAIN" "$KEYS"; do [ -f "$f" ] || { echo "bench-tls.sh: no $f" >&2; exit 2; }; done
if [[ -z ${KAFKASHARK:-} ]]; then
    (cd "$ROOT" && cargo build -q --release -p kafkashark-ui)
fi
command -v /usr/bin/time >/dev/null || { echo "bench-tls.sh: needs /usr/bin/time" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tls=("$K" stats "$TLS" --tls-keylog "$KEYS" --format json)
plain=("$K" stats "$PLAIN" --ports 9094 --format json)
messages() { "$@" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["messages"])'; }
mt=$(messages "${tls[@]}")
mp=$(messages "${plain[@]}")
echo "messages: TLS $mt, plaintext $mp"
if (( mt == 0 || mp - mt > 2 || mt > mp )); then
    echo "bench-tls.sh: the two captures do not read the same messages" >&2
    exit 1
fi
for f in "$TLS" "$PLAIN"; do cat "$f" >/dev/null; done
echo "files: $(stat -c %s "$TLS") and $(stat -c %s "$PLAIN") bytes, runs: $RUNS, machine: $(nproc) cores"

run() { # name, command...: appends its wall time (s) and peak RSS (KB)
    local name=$1; shift
    local t0=$EPOCHREALTIME
    /usr/bin/time -v "$@" >/dev/null 2>"$TMP/time"
    local t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >>"$TMP/$name.wall"
    awk -F': ' '/Maximum resident/ { print $2 }' "$TMP/time" >>"$TMP/$name.rss"
}
for _ in $(seq "$RUNS"); do
    run tls "${tls[@]}"
    run plain "${plain[@]}"
done
stat_of() { sort -n "$TMP/$1.wall" | awk '{ v[NR] = $1 } END { printf "%.3f %.3f", v[int((NR + 1) / 2)], v[1] }'; }
read -r tmed tmin <<<"$(stat_of tls)"
read -r pmed pmin <<<"$(stat_of plain)"
printf "%-34s median %8.3f s  min %8.3f s  peak RSS %6d MB\n" "stats, TLS 1.3 with its key log" "$tmed" "$tmin" "$(( $(sort -n "$TMP/tls.rss" | tail -1) / 1024 ))"
printf "%-34s median %8.3f s  min %8.3f s  peak RSS %6d MB\n" "stats, the same bytes in plaintext" "$pmed" "$pmin" "$(( $(sort -n "$TMP/plain.rss" | tail -1) / 1024 ))"
awk -v t="$tmed" -v p="$pmed" 'BEGIN { printf "TLS / plaintext: %.2f× (target ≤ 2×)\n", t / p }'
