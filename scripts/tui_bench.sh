#!/usr/bin/env bash
# The TUI on a big capture: time to the first screen, time to the
# last message's tree and bytes once loaded, and peak RSS.
#
#   scripts/tui_bench.sh FILE                    # e.g. /tmp/corpus1g.pcap
#   KAFKASHARK=/path/to/kafkashark RUNS=3 scripts/tui_bench.sh FILE
#   ARGS="--max-messages 100000" scripts/tui_bench.sh FILE   # extra TUI arguments
#   FILTER="api=Fetch" SORT=1 scripts/tui_bench.sh FILE      # also time a filter and a sort
#
# Runs the release binary in a private tmux server (120x40) under
# /usr/bin/time, polls the screen (`tmux capture-pane`, about every 5 ms, so
# figures include up to one poll of latency) and prints per run:
#   first    start → a screen showing the first message's tree ("frame N:" in its title)
#   loaded   start → the status bar no longer says "loading"
#   last     `End` pressed after loading → the tree of the last message shown
#            (its frame: the largest `frame` of `print --format jsonl`)
#   rss      peak resident set size of the TUI (KB), from /usr/bin/time
# and, when asked for, after `End`:
#   filter   FILTER typed in the `/` bar, then Enter → the list filtered (the
#            status bar's "N/M msgs" with N < M)
#   sort     `s` → the list sorted by latency ("sort latency" in the status bar)
# then the medians. Nothing is asserted. Needs tmux and GNU time.
set -euo pipefail

FILE=${1:?usage: scripts/tui_bench.sh FILE}
RUNS=${RUNS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K=${KAFKASHARK:-$ROOT/target/release/kafkashark}
if [[ -z ${KAFKASHARK:-} ]]; then
    (cd "$ROOT" && cargo build -q --release -p kafkashark-ui)
fi
TMP=$(mktemp -d)
SOCK=kafkashark-tui-bench-$$
trap 'tmux -L "$SOCK" kill-server 2>/dev/null || true; rm -rf "$TMP"' EXIT

now() { date +%s.%N; }
fmt() { if [[ $1 == - ]]; then echo -; else printf '%.1f' "$1"; fi; }
screen() { tmux -L "$SOCK" capture-pane -p -t bench 2>/dev/null || true; }
# wait_for PATTERN TIMEOUT_S: polls until the screen matches (grep -E); prints the time.
wait_for() {
    local deadline
    deadline=$(echo "$(now) + $2" | bc)
    while :; do
        if screen | grep -qE -- "$1"; then now; return 0; fi
        if (( $(echo "$(now) > $deadline" | bc) )); then echo "timeout waiting for: $1" >&2; screen >&2; return 1; fi
        sleep 0.005
    done
}

cat "$FILE" > /dev/null # warm the page cache
LAST=$("$K" print "$FILE" --format jsonl 2>/dev/null | grep -o '"frame":[0-9]*' | cut -d: -f2 | sort -n | tail -1)
echo "file: $FILE ($(stat -c %s "$FILE") bytes), last message frame $LAST, binary $K"
# wait_filtered TIMEOUT_S: polls until the status bar says "N/M msgs" with N < M; prints the time.
wait_filtered() {
    local deadline n m
    deadline=$(echo "$(now) + $1" | bc)
    while :; do
        read -r n m < <(screen | grep -oE '[0-9]+/[0-9]+ msgs' | head -1 | tr '/' ' ' | cut -d' ' -f1,2) || true
        if [[ -n ${n:-} && -n ${m:-} && $n -lt $m ]]; then now; return 0; fi
        if (( $(echo "$(now) > $deadline" | bc) )); then echo "timeout waiting for the filter" >&2; screen >&2; return 1; fi
        sleep 0.005
    done
}

printf '%-4s %9s %9s %9s %10s %9s %9s\n' run first_s loaded_s last_ms rss_KB filter_ms sort_ms
for run in $(seq "$RUNS"); do
    rm -f "$TMP/time"
    t0=$(now)
    tmux -L "$SOCK" new-session -d -s bench -x 120 -y 40 \
        "/usr/bin/time -f %M -o $TMP/time $K $FILE ${ARGS:-}"
    t1=$(wait_for "[┏┌] frame [0-9]+:" 60)
    t2=$(wait_for 'msgs' 600)
    while screen | grep -q 'loading'; do sleep 0.01; done
    t2=$(now)
    tmux -L "$SOCK" send-keys -t bench End
    t3=$(now)
    t4=$(wait_for "[┏┌] frame $LAST:" 60)
    filter=-; sort=-
    if [[ -n ${FILTER:-} ]]; then
        tmux -L "$SOCK" send-keys -t bench /
        tmux -L "$SOCK" send-keys -t bench -l "$FILTER"
        wait_for "/$FILTER" 10 > /dev/null
        t5=$(now)
        tmux -L "$SOCK" send-keys -t bench Enter
        t6=$(wait_filtered 120)
        filter=$(echo "($t6 - $t5) * 1000" | bc)
    fi
    if [[ -n ${SORT:-} ]]; then
        t7=$(now)
        tmux -L "$SOCK" send-keys -t bench s
        t8=$(wait_for "sort latency" 120)
        sort=$(echo "($t8 - $t7) * 1000" | bc)
    fi
    tmux -L "$SOCK" send-keys -t bench q
    for _ in $(seq 500); do [[ -s $TMP/time ]] && break; sleep 0.01; done
    rss=$(tail -1 "$TMP/time")
    tmux -L "$SOCK" kill-server 2>/dev/null || true
    first=$(echo "$t1 - $t0" | bc); loaded=$(echo "$t2 - $t0" | bc); last=$(echo "($t4 - $t3) * 1000" | bc)
    printf '%-4s %9.3f %9.3f %9.1f %10s %9s %9s\n' "$run" "$first" "$loaded" "$last" "$rss" \
        "$(fmt "$filter")" "$(fmt "$sort")" | tee -a "$TMP/rows"
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-4s %9.3f %9.3f %9.1f %10s %9s %9s\n' med \
    "$(awk '{print $2}' "$TMP/rows" | median)" "$(awk '{print $3}' "$TMP/rows" | median)" \
    "$(awk '{print $4}' "$TMP/rows" | median)" "$(awk '{print $5}' "$TMP/rows" | median)" \
    "$(awk '{print $6}' "$TMP/rows" | median)" "$(awk '{print $7}' "$TMP/rows" | median)"
