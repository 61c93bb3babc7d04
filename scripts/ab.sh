#!/usr/bin/env bash
# Before/after on a noisy machine: runs each binary on the same arguments in
# turn, N rounds, and prints each one's minimum wall time and minimum CPU time
# (user + system): wall from the shell's clock, CPU from /usr/bin/time.
# Alternating spreads the host's noise over both binaries; the minimum is the
# run the noise touched least. With several binaries, each one's wall time is
# also divided by the first one's of the same round, and the median of those
# ratios printed: the host's speed drifts from minute to minute, and a
# round's binaries ran within a second of each other.
#
#   scripts/ab.sh N "ARGS" BIN...
#   scripts/ab.sh 5 "print -V --format jsonl /tmp/corpus.pcap" /tmp/old /tmp/new
set -euo pipefail
# EPOCHREALTIME and awk's numbers with a decimal point, whatever the locale.
export LC_ALL=C
if [ $# -lt 3 ]; then
  echo "usage: scripts/ab.sh N \"ARGS\" BIN..." >&2
  exit 2
fi
n=$1
args=$2
shift 2
t=$(mktemp)
trap 'rm -f "$t"' EXIT
declare -A wall cpu ratios
for _ in $(seq "$n"); do
  first=""
  for b in "$@"; do
    # Wall time to the millisecond from the shell's clock (/usr/bin/time
    # gives hundredths); CPU time (user + system) from /usr/bin/time.
    t0=$EPOCHREALTIME
    # shellcheck disable=SC2086 # ARGS is a list of words
    /usr/bin/time -o "$t" -f "%U %S" "$b" $args > /dev/null 2>&1 || true
    t1=$EPOCHREALTIME
    read -r u s < <(tail -n 1 "$t")
    w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    wall[$b]=$(awk -v a="$w" -v b="${wall[$b]:-999}" 'BEGIN { print (a < b) ? a : b }')
    cpu[$b]=$(awk -v a="$c" -v b="${cpu[$b]:-999}" 'BEGIN { print (a < b) ? a : b }')
    first=${first:-$w}
    ratios[$b]+="$(awk -v a="$w" -v b="$first" 'BEGIN { printf "%.4f", (b > 0) ? a / b : 1 }') "
  done
done
median() {
  tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for b in "$@"; do
  line="$b wall_min=${wall[$b]} s cpu_min=${cpu[$b]} s"
  if [ $# -gt 1 ]; then
    line+=" ratio_to_first_median=$(echo "${ratios[$b]}" | median)"
  fi
  echo "$line"
done
