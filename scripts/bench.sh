#!/usr/bin/env bash
# Whole-command benchmark: kafkashark (release build) against tshark on one file.
#
#   scripts/bench.sh FILE            # e.g. a corpus from make-corpus (docs/performance.md)
#   RUNS=5 PORT=9092 JSON=1 scripts/bench.sh FILE
#   MEMFILES="/tmp/large.pcap /tmp/bigframes.pcap" scripts/bench.sh FILE
#
# Runs each command RUNS times (default 3) on a warm page cache, in rounds of
# every command once, and prints the median wall time (to the millisecond,
# from the shell's clock around each run), the largest peak RSS
# (/usr/bin/time -v "Maximum resident set size") and the ratios of the speed
# targets. Before timing it checks
# that the commands compared read the same messages: kafkashark's JSONL lines,
# its -V JSONL lines, its stats message count and tshark's Kafka PDU count
# (kafka.correlation_id per PDU, comma-separated per frame) must all agree,
# and no kafkashark message may carry a decode error. Exits 1 if a check fails.
#
# Environment: RUNS, PORT (broker port, default 9092), JSON=1 adds tshark -T json,
# TSHARK=0 skips tshark, KAFKASHARK (binary; default target/release/kafkashark),
# PGO=1 (the binary built by scripts/pgo.sh, profile-guided, instead),
# MEMFILES (more captures, e.g. of big messages in big frames: each kafkashark
# command runs once on each and its peak RSS is printed; nothing is timed).
set -euo pipefail
# EPOCHREALTIME and awk's numbers with a decimal point, whatever the locale.
export LC_ALL=C

FILE=${1:?usage: scripts/bench.sh FILE}
RUNS=${RUNS:-3}
PORT=${PORT:-9092}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=${KAFKASHARK:-$ROOT/target/release/kafkashark}
if [[ ${PGO:-0} == 1 && -z ${KAFKASHARK:-} ]]; then
    K=$("$ROOT/scripts/pgo.sh" | tail -1)
fi
READ=$ROOT/target/release/examples/read-frames
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [[ -z ${KAFKASHARK:-} ]]; then
    (cd "$ROOT" && cargo build -q --release -p kafkashark-ui)
fi
# The bare read is kafkashark's own frame loop, whichever binary is measured.
(cd "$ROOT" && cargo build -q --release -p kafkashark --example read-frames)
echo "kafkashark: $K"
command -v /usr/bin/time >/dev/null || { echo "bench.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
HAVE_TSHARK=0
if [[ ${TSHARK:-1} != 0 ]] && command -v tshark >/dev/null; then HAVE_TSHARK=1; fi
TS=(tshark -n -r "$FILE" -d "tcp.port==$PORT,kafka")

# The file in the page cache as a read from disk leaves it: dropped from the
# cache, then read once. A file cached since long ago, partly evicted and
# read back in pieces, may be held in 4 KB pages, a file read from disk in
# folios of up to 2 MB, and reading 4 KB pages costs the kernel up to 40 %
# more CPU: the same state for every run and every tool (docs/performance.md,
# "The whole-command benchmark").
dd if="$FILE" iflag=nocache count=0 status=none 2>/dev/null ||
    echo "bench.sh: could not drop $FILE from the page cache; measuring it as cached" >&2
cat "$FILE" >/dev/null
echo "file: $FILE ($(stat -c %s "$FILE") bytes), runs: $RUNS, machine: $(nproc) cores"
command -v capinfos >/dev/null && capinfos -c -M "$FILE" 2>/dev/null | grep -i "number of packets" || true
[[ $HAVE_TSHARK == 1 ]] && tshark --version 2>/dev/null | head -1

# ---------------------------------------------------------------- checks
echo "checking that every tool reads the same messages…"
fail=0
"$K" print "$FILE" --ports "$PORT" --format jsonl >"$TMP/print.jsonl" 2>/dev/null
"$K" print "$FILE" --ports "$PORT" -V --format jsonl >"$TMP/printv.jsonl" 2>/dev/null
"$K" stats "$FILE" --ports "$PORT" --format json >"$TMP/stats.json" 2>/dev/null
n_print=$(wc -l <"$TMP/print.jsonl")
n_printv=$(wc -l <"$TMP/printv.jsonl")
n_stats=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["messages"])' "$TMP/stats.json")
n_err=$(grep -c '"decode_error":"' "$TMP/print.jsonl" || true)
n_errv=$(grep -c '"decode_error":"' "$TMP/printv.jsonl" || true)
rm -f "$TMP/printv.jsonl"
echo "  kafkashark print jsonl: $n_print messages ($n_err with a decode error)"
echo "  kafkashark print -V jsonl: $n_printv messages ($n_errv with a decode error)"
echo "  kafkashark stats: $n_stats messages"
[[ $n_print == "$n_printv" && $n_print == "$n_stats" ]] || { echo "  MISMATCH between kafkashark commands"; fail=1; }
[[ $n_err == 0 && $n_errv == 0 ]] || { echo "  decode errors present"; fail=1; }
if [[ $HAVE_TSHARK == 1 ]]; then
    n_tshark=$("${TS[@]}" -Y kafka -T fields -e kafka.correlation_id 2>/dev/null | tr ',' '\n' | grep -c .)
    echo "  tshark: $n_tshark Kafka PDUs"
    [[ $n_tshark == "$n_print" ]] || { echo "  MISMATCH: tshark $n_tshark vs kafkashark $n_print"; fail=1; }
fi
rm -f "$TMP/print.jsonl"

# ---------------------------------------------------------------- timing
# The commands run in rounds, each once per round, so that all of them see
# the same moments of a noisy host (a command run five times in a row can
# fall in a quiet or a busy minute the others miss).
names=(bare_read_tcpdump bare_read_kafkashark ks_print_jsonl ks_stats_json ks_print_V_jsonl ks_print_V_text)
if [[ $HAVE_TSHARK == 1 ]]; then
    names+=(tshark_Y_kafka tshark_V)
    [[ ${JSON:-0} == 1 ]] && names+=(tshark_T_json)
fi
# command_of NAME → sets CMD to the command line measured as NAME.
command_of() {
    case $1 in
        bare_read_tcpdump) CMD=(tcpdump -r "$FILE" -w /dev/null) ;;
        bare_read_kafkashark) CMD=("$READ" "$FILE") ;;
        ks_print_jsonl) CMD=("$K" print "$FILE" --ports "$PORT" --format jsonl) ;;
        ks_stats_json) CMD=("$K" stats "$FILE" --ports "$PORT" --format json) ;;
        ks_print_V_jsonl) CMD=("$K" print "$FILE" --ports "$PORT" -V --format jsonl) ;;
        ks_print_V_text) CMD=("$K" print "$FILE" --ports "$PORT" -V) ;;
        tshark_Y_kafka) CMD=("${TS[@]}" -Y kafka) ;;
        tshark_V) CMD=("${TS[@]}" -Y kafka -V) ;;
        tshark_T_json) CMD=("${TS[@]}" -Y kafka -T json) ;;
    esac
}
# What starting /usr/bin/time itself takes (about 2.5 ms here; the median of
# five runs of `true`), taken off every time below.
overhead=$(for _ in 1 2 3 4 5; do
    t0=$EPOCHREALTIME
    /usr/bin/time -v -o "$TMP/time" true
    t1=$EPOCHREALTIME
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
done | sort -g | sed -n 3p)
declare -A times rss
for ((i = 0; i < RUNS; i++)); do
    for name in "${names[@]}"; do
        command_of "$name"
        # Wall time from the shell's microsecond clock around the run, less
        # the overhead above (/usr/bin/time prints hundredths, cut, not
        # rounded: 0.249 s showed as 0.24); peak RSS from /usr/bin/time.
        t0=$EPOCHREALTIME
        /usr/bin/time -v -o "$TMP/time" "${CMD[@]}" >/dev/null 2>"$TMP/stderr" || {
            echo "bench.sh: $name failed:" >&2; tail -3 "$TMP/stderr" >&2; exit 1; }
        t1=$EPOCHREALTIME
        m=$(grep "Maximum resident set size" "$TMP/time" | awk '{print $NF}')
        wall=$(awk -v a="$t0" -v b="$t1" -v o="$overhead" 'BEGIN { w = b - a - o; printf "%.3f", (w > 0) ? w : 0 }')
        times[$name]="${times[$name]:-} $wall"
        ((m > ${rss[$name]:-0})) && rss[$name]=$m
    done
done
echo
printf '%-28s %10s  %11s\n' command median "peak RSS"
for name in "${names[@]}"; do
    # shellcheck disable=SC2086 # the times are one word each
    med=$(printf '%s\n' ${times[$name]} | sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
    printf '%-28s %8.3f s  %8.1f MB   (runs:%s)\n' "$name" "$med" "$(echo "${rss[$name]}/1024" | bc -l)" "${times[$name]}"
    echo "$name $med ${rss[$name]}" >>"$TMP/results"
done

# ---------------------------------------------------------------- ratios
echo
python3 - "$TMP/results" <<'PY'
import sys
r = {}
for line in open(sys.argv[1]):
    n, t, m = line.split()
    r[n] = (float(t), int(m) / 1024)
def ratio(a, b):
    return r[a][0] / r[b][0] if a in r and b in r and r[b][0] > 0 else None
# "bare read": the faster of tcpdump's and kafkashark's own frame loop (the
# stricter comparison); the tcpdump-only ratios follow for reference.
bare = min((r[k][0], k) for k in r if k.startswith("bare_read"))[1]
rows = [
    ("tshark -Y kafka / ks print jsonl", ratio("tshark_Y_kafka", "ks_print_jsonl"), ">= 25"),
    ("tshark -Y kafka / ks stats", ratio("tshark_Y_kafka", "ks_stats_json"), ">= 20"),
    ("ks print jsonl / bare read", ratio("ks_print_jsonl", bare), "<= 3"),
    ("ks stats / bare read", ratio("ks_stats_json", bare), "<= 3"),
    ("ks print jsonl / tcpdump read", ratio("ks_print_jsonl", "bare_read_tcpdump"), "(<= 3)"),
    ("ks stats / tcpdump read", ratio("ks_stats_json", "bare_read_tcpdump"), "(<= 3)"),
    ("tshark -V / ks print -V jsonl", ratio("tshark_V", "ks_print_V_jsonl"), ">= 10"),
    ("tshark -V / ks print -V text", ratio("tshark_V", "ks_print_V_text"), ">= 10"),
]
print(f"{'ratio':36} {'value':>8}  target")
for name, v, want in rows:
    print(f"{name:36} {('%.2f' % v) if v is not None else 'n/a':>8}  {want}")
peak = max(m for k, (t, m) in r.items() if k.startswith("ks_"))
print(f"{'kafkashark peak RSS (MB)':36} {peak:8.1f}  < 100")
PY

# ---------------------------------------------------------------- memory
# Peak RSS on other captures (big messages in big frames: `make-corpus
# --large`, scripts/bigframes.py), where memory must not follow the file.
if [[ -n ${MEMFILES:-} ]]; then
    echo
    printf '%-44s %-26s %11s\n' file command "peak RSS"
    for f in $MEMFILES; do
        for args in "stats --format json" "print --format jsonl" "print" "print -V --format jsonl" "print -V"; do
            # shellcheck disable=SC2086 # ARGS is a list of words
            /usr/bin/time -v -o "$TMP/time" "$K" $args "$f" --ports "$PORT" >/dev/null 2>"$TMP/stderr" || true
            m=$(grep "Maximum resident set size" "$TMP/time" | awk '{print $NF}')
            mark=""
            ((m >= 100 * 1024)) && mark="  (>= 100 MB)"
            printf '%-44s %-26s %8.1f MB%s\n' "$(basename "$f")" "$args" "$(echo "$m/1024" | bc -l)" "$mark"
        done
    done
fi
exit $fail
