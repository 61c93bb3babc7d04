#!/usr/bin/env bash
# The release binary built with profile-guided optimization (PGO): built
# once instrumented, run on training captures, rebuilt with the profile of
# those runs. Same code, same outputs; the compiler lays out and inlines the
# hot paths from measured counts instead of guesses (docs/performance.md:
# about 3-5 % less CPU for `stats` and `print -V`).
#
#   scripts/pgo.sh                 # → target/pgo/kafkashark
#   PGO_DIR=/tmp/pgo scripts/pgo.sh
#   PGO_CPU=x86-64-v2 scripts/pgo.sh   # a binary for other machines
#
# The binary is built for the CPU of the machine that builds it
# (`-Ctarget-cpu=native`, or PGO_CPU): it is a local build, for the
# benchmarks and for whoever runs it where it was made (about 2 %
# less CPU for `stats` on an AVX-512 Xeon). Both builds of the script use the
# same CPU, so the comparison of their outputs holds for it. PGO_CPU=generic
# gives the default x86-64 target, as `cargo build --release`.
#
# Training: every capture shipped in captures/ and a 40 MB corpus from
# make-corpus with a seed of its own (not the benchmark corpus; its fetches
# read back what was produced, `--read-back`, so both the sizing walks and
# the sizes remembered from them are trained), through the
# commands the benchmark times (`stats`, `print`, `print -V`, text and JSON). The final binary then runs the same commands and
# must print byte for byte what the instrumented one printed (exit 1
# otherwise). Takes about 6 minutes on two cores (two builds with fat LTO,
# each in a target directory of its own so that the normal release build is
# left alone; .ci/run makes them without LTO). Needs llvm-profdata of the
# toolchain's LLVM: the rustup component llvm-tools, added here when
# missing (exit 3 when it cannot be).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DIR=${PGO_DIR:-$ROOT/target/pgo}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

profdata() {
    find "$(rustc --print sysroot)/lib/rustlib" -name llvm-profdata -type f 2>/dev/null | head -1
}
PROFDATA=$(profdata)
if [[ -z $PROFDATA ]]; then
    rustup component add llvm-tools >&2 || true
    PROFDATA=$(profdata)
fi
# Exit code 3: the toolchain has no llvm-profdata and rustup could not add it.
[[ -n $PROFDATA ]] || { echo "pgo.sh: no llvm-profdata (rustup component add llvm-tools failed)" >&2; exit 3; }

CPU=${PGO_CPU:-native}
CPUFLAG=-Ctarget-cpu=$CPU
[[ $CPU == generic ]] && CPUFLAG=
# A CPU change rebuilds everything: the target directories remember the flags.

# 1. Instrumented build.
rm -rf "$DIR/raw"
RUSTFLAGS="-Cprofile-generate=$DIR/raw $CPUFLAG" \
    cargo build -q --release -p kafkashark-ui --target-dir "$DIR/gen"

# 2. Training runs: the commands the benchmark times, on every shipped
# capture and the training corpus. Their outputs are kept, to compare with
# the final binary's (their SHA-256: `print -V` of the corpus is large).
TRAIN=$DIR/train.pcap
if [[ ! -s $TRAIN ]]; then
    # The generator in the dev profile: it writes the same bytes as a
    # release build in about 12 s, and the build it needs is the tests'
    # (or a short one), not a third optimized build of the library.
    cargo run -q --example make-corpus -- --size 40M --seed 7 --read-back --out "$TRAIN" >&2
fi
OUT=$DIR/out
rm -rf "$OUT"
mkdir -p "$OUT"
# run BINARY TAG: every training command, outputs in $OUT/TAG.*
run() {
    local k=$1 tag=$2 i=0
    for f in "$TRAIN" captures/*.pcap captures/*.pcapng; do
        [[ -e $f ]] || continue
        i=$((i + 1))
        p=(--ports 9092,19092) # b1's broker listens on 19092
        "$k" stats "$f" "${p[@]}" --format json 2>/dev/null | sha256sum >"$OUT/$tag.$i.stats.json"
        "$k" stats "$f" "${p[@]}" 2>/dev/null | sha256sum >"$OUT/$tag.$i.stats.txt"
        "$k" print "$f" "${p[@]}" --format jsonl 2>/dev/null | sha256sum >"$OUT/$tag.$i.print.jsonl"
        "$k" print "$f" "${p[@]}" 2>/dev/null | sha256sum >"$OUT/$tag.$i.print.txt"
        "$k" print -V "$f" "${p[@]}" --format jsonl 2>/dev/null | sha256sum >"$OUT/$tag.$i.printv.jsonl"
        "$k" print -V "$f" "${p[@]}" 2>/dev/null | sha256sum >"$OUT/$tag.$i.printv.txt"
    done
    "$k" stats - --format json <"$TRAIN" 2>/dev/null | sha256sum >"$OUT/$tag.stdin.stats.json"
}
run "$DIR/gen/release/kafkashark" gen

# 3. The profile, and the build that uses it.
"$PROFDATA" merge -o "$DIR/merged.profdata" "$DIR/raw"
RUSTFLAGS="-Cprofile-use=$DIR/merged.profdata $CPUFLAG" \
    cargo build -q --release -p kafkashark-ui --target-dir "$DIR/use"

# 4. The same outputs as the instrumented build's, command by command.
run "$DIR/use/release/kafkashark" use
n=0
for g in "$OUT"/gen.*; do
    u=$OUT/use.${g#"$OUT"/gen.}
    cmp -s "$g" "$u" || { echo "pgo.sh: $u differs from $g" >&2; exit 1; }
    n=$((n + 1))
done
echo "pgo.sh: $n outputs identical to the instrumented build's" >&2
rm -rf "$OUT"
cp "$DIR/use/release/kafkashark" "$DIR/kafkashark"
echo "$DIR/kafkashark"
