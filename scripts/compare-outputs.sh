#!/usr/bin/env bash
# Every output of two kafkashark builds compared byte for byte: a change that
# should not change what kafkashark prints (a refactoring, a speed change) is
# checked with it against the build before it.
#
#   scripts/compare-outputs.sh OLD_BIN NEW_BIN [CAPTURE...]
#   scripts/compare-outputs.sh /tmp/old/kafkashark target/release/kafkashark
#
# Without captures it takes every .pcap/.pcapng in captures/ and in
# ../shared/captures (when present), and every .hex message in
# captures/messages. On each capture it runs, with both binaries:
#   print                          print -V
#   print --format jsonl           print -V --format jsonl
#   print --ports any --format jsonl
#   stats                          stats --format json
# and on each .hex message `decode` (text and json). Standard output, standard
# error and the exit code must all be identical. Prints one line per
# difference and a closing count; exits 1 when anything differs.
set -uo pipefail
export LC_ALL=C

if [ $# -lt 2 ]; then
  echo "usage: scripts/compare-outputs.sh OLD_BIN NEW_BIN [CAPTURE...]" >&2
  exit 2
fi
old=$1
new=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "compare-outputs: $b is not an executable" >&2; exit 2; }
done

captures=("$@")
hexes=()
if [ ${#captures[@]} -eq 0 ]; then
  while IFS= read -r f; do captures+=("$f"); done < <(
    find "$root/captures" "$root/../shared/captures" -type f \( -name '*.pcap' -o -name '*.pcapng' \) 2>/dev/null | sort)
  while IFS= read -r f; do hexes+=("$f"); done < <(find "$root/captures/messages" -name '*.hex' 2>/dev/null | sort)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=0
diffs=0

# Runs ARGS with both binaries and compares stdout, stderr and the exit code.
same() {
  local label=$1
  shift
  local b i
  i=0
  for b in "$old" "$new"; do
    "$b" "$@" >"$tmp/out$i" 2>"$tmp/err$i" </dev/null
    echo $? >"$tmp/rc$i"
    # The binary's own path may appear in usage text; nothing else may differ.
    sed -i "s|$b|kafkashark|g" "$tmp/err$i"
    i=$((i + 1))
  done
  runs=$((runs + 1))
  for part in out err rc; do
    if ! cmp -s "$tmp/${part}0" "$tmp/${part}1"; then
      diffs=$((diffs + 1))
      echo "DIFFERS ($part): $label"
      diff "$tmp/${part}0" "$tmp/${part}1" | head -n 6 | sed 's/^/    /'
    fi
  done
}

for c in "${captures[@]}"; do
  name=${c#"$root/"}
  same "print $name" print "$c"
  same "print -V $name" print -V "$c"
  same "print --format jsonl $name" print --format jsonl "$c"
  same "print -V --format jsonl $name" print -V --format jsonl "$c"
  same "print --ports any --format jsonl $name" print --ports any --format jsonl "$c"
  same "stats $name" stats "$c"
  same "stats --format json $name" stats --format json "$c"
done
for h in "${hexes[@]}"; do
  name=${h#"$root/"}
  same "decode $name" decode "$h"
  same "decode --format json $name" decode --format json "$h"
done

echo "compare-outputs: $runs commands on ${#captures[@]} captures and ${#hexes[@]} messages, $diffs differences"
[ "$diffs" -eq 0 ]
