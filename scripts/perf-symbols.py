#!/usr/bin/env python3
"""CPU samples of two builds by thread and symbol, side by side.

Runs each binary on the same arguments in turn, RUNS rounds, under
`perf record -F FREQ`, and adds up the samples of every run by thread role
and symbol: `main` (the process's first thread), `reader` (the thread whose
samples include the file reader, `capture::fastfile`) and `other`. Prints
each role's milliseconds of CPU a run for each binary, then the symbols
whose time moved most from the first binary to the second (ms a run).

A whole run's time moves by 10 % and more from minute to minute on a
shared host; the samples of one symbol, added up over alternated runs,
move far less, and say where a change's time went (docs/performance.md,
"How to measure").

    scripts/perf-symbols.py -n 8 "stats /tmp/corpus-rb.pcap --format json" OLD NEW
    scripts/perf-symbols.py -n 8 --role main --top 40 "stats FILE" OLD NEW
"""

import argparse
import collections
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROW = re.compile(r"\s*(\d+)\s+(\d+):\S*\s+\[(.)\]\s+(.*)")


def run_once(binary, args, freq, data):
    """Per-tid symbol sample counts of one run of `binary`."""
    cmd = ["perf", "record", "-q", "-F", str(freq), "-o", data, binary] + args
    with open(os.devnull, "wb") as null:
        done = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE)
    if done.returncode != 0:
        sys.exit(f"perf-symbols: {' '.join(map(shlex.quote, cmd))} failed:\n"
                 + done.stderr.decode(errors="replace"))
    report = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--sort", "pid,sym",
         "--stdio", "-F", "sample,pid,sym"],
        capture_output=True, text=True, check=True).stdout
    per = collections.defaultdict(collections.Counter)
    for line in report.splitlines():
        m = ROW.match(line)
        if m:
            per[int(m.group(2))][m.group(4).strip()] += int(m.group(1))
    return per


def roles(per):
    """The samples of one run by role: main, reader, other."""
    out = collections.defaultdict(collections.Counter)
    if not per:
        return out
    main = min(per)
    for tid, syms in per.items():
        if tid == main:
            role = "main"
        elif any("fastfile" in s for s in syms):
            role = "reader"
        else:
            role = "other"
        out[role].update(syms)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", "--runs", type=int, default=8)
    p.add_argument("-F", "--freq", type=int, default=4999)
    p.add_argument("--role", choices=["all", "main", "reader", "other"], default="all")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("args", help="the binaries' arguments, one string")
    p.add_argument("old")
    p.add_argument("new")
    a = p.parse_args()
    args = shlex.split(a.args)
    totals = {b: collections.defaultdict(collections.Counter) for b in (a.old, a.new)}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        for _ in range(a.runs):
            for b in (a.old, a.new):
                for role, syms in roles(run_once(b, args, a.freq, data)).items():
                    totals[b][role].update(syms)
    ms = 1000.0 / a.freq / a.runs
    for role in ("main", "reader", "other"):
        old, new = (sum(totals[b][role].values()) * ms for b in (a.old, a.new))
        print(f"{role:7} {old:8.1f} {new:8.1f} ms a run")

    def pick(b):
        c = collections.Counter()
        for role, syms in totals[b].items():
            if a.role in ("all", role):
                c.update(syms)
        return c

    old, new = pick(a.old), pick(a.new)
    print(f"{a.role:7} {sum(old.values()) * ms:8.1f} {sum(new.values()) * ms:8.1f} ms a run")
    moved = sorted(set(old) | set(new), key=lambda s: -abs(new[s] - old[s]))
    print(f"{'moved':>8} {'old':>8} {'new':>8}  symbol (ms a run)")
    for s in moved[: a.top]:
        print(f"{(new[s] - old[s]) * ms:8.1f} {old[s] * ms:8.1f} {new[s] * ms:8.1f}  {s}")


if __name__ == "__main__":
    main()
