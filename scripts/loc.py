#!/usr/bin/env python3
"""Lines of non-test Rust in the engine and the binary.

    scripts/loc.py [ROOT]        # ROOT: a checkout (default: this one)

Counts every line of the .rs files under src/ and ui/src/, except:
- the generated schema tables (src/kafka/schema/generated.rs);
- test code: files named tests.rs, *_tests.rs, tests_*.rs or testutil.rs,
  `#[cfg(test)]` files (src/test_captures.rs), and every `#[cfg(test)]`
  item (a `mod tests { ... }` block or a single function), counted from its
  attribute to its closing brace.
Prints the total and the ten largest files.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
TEST_FILE = re.compile(r"(^tests?\.rs$|_tests\.rs$|^tests_.*\.rs$|^testutil\.rs$|^test_captures\.rs$)")


def code_lines(text):
    """Lines outside `#[cfg(test)]` items."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    keep = 0
    i = 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            # Skip the attribute, any further attributes, and the item up to
            # the line closing it at the same indentation.
            indent = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith("#["):
                j += 1
            item = lines[j] if j < len(lines) else ""
            if item.rstrip().endswith(";"):
                i = j + 1
                continue
            close = " " * indent + "}"
            k = j + 1
            while k < len(lines) and lines[k].rstrip() != close:
                k += 1
            i = k + 1
            continue
        keep += 1
        i += 1
    return keep


sizes = []
for top in ("src", os.path.join("ui", "src")):
    for dirpath, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            if not f.endswith(".rs") or TEST_FILE.search(f):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            if rel.replace(os.sep, "/") == "src/kafka/schema/generated.rs":
                continue
            with open(path, encoding="utf-8") as fh:
                sizes.append((code_lines(fh.read()), rel))

sizes.sort(reverse=True)
print(f"non-test Rust under src/ and ui/src/: {sum(n for n, _ in sizes)} lines in {len(sizes)} files")
for n, rel in sizes[: int(os.environ.get("LOC_TOP", "10"))]:
    print(f"  {n:6} {rel}")
