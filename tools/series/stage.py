#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write one patch of the series into the kernel tree (tools/series/series.sh).

Usage: stage.py PLAN FINAL TREE KEY

FINAL holds every file the series adds or changes, as it is after the last patch, and, under
FINAL/.base, the pristine version of each changed file that the base tree already has.  The
series only adds lines to files of the base tree.  PLAN (tools/series/plan) says which patch
each added line belongs to:

    KEY commit            the patches, in order
    KEY file PATH         lines of PATH (a file, or PATH/ for a directory) belong to KEY
    KEY line PATH REGEX   added lines of PATH that match REGEX belong to KEY
    KEY block PATH REGEX  so do the added lines after one, up to and with an empty line
                          (a Kconfig entry)

A line matched by a `line` rule goes to that rule's patch; any other line goes to the patch
that owns its file; in a file no patch owns (a file of the base tree), to the patch of the
added line before it in the same run of added lines.  A line with no patch is an error, so a
new hook in tools/kernel/patches has to be given one here.

For patch KEY, each file is written as FINAL minus the lines of later patches; the paths
written are printed.
"""

import os
import re
import shutil
import subprocess
import sys


def die(msg):
    sys.exit(f"series: {msg}")


def read_plan(path):
    order, files, lines = [], [], []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 3)
            key, kind = parts[0], parts[1]
            if kind == "commit" and len(parts) == 2:
                order.append(key)
            elif kind == "file" and len(parts) == 3:
                files.append((parts[2], key))
            elif kind in ("line", "block") and len(parts) == 4:
                lines.append((parts[2], re.compile(parts[3]), key, kind == "block"))
            else:
                die(f"{path}:{n}: cannot parse: {line}")
    for _, key in files:
        if key not in order:
            die(f"{path}: {key} is not a commit")
    for _, _, key, _ in lines:
        if key not in order:
            die(f"{path}: {key} is not a commit")
    return order, files, lines


def owner(path, files):
    best = None
    for prefix, key in files:
        hit = path == prefix or (prefix.endswith("/") and path.startswith(prefix))
        if hit and (best is None or len(prefix) > len(best[0])):
            best = (prefix, key)
    return best[1] if best else None


def added_lines(base, final):
    """Indices (0-based, into final) of lines that final adds to base."""
    if base is None:
        return None  # all of them
    res = subprocess.run(["diff", base, final], capture_output=True, text=True)
    if res.returncode > 1:
        die(f"diff {base} {final}: {res.stderr.strip()}")
    added = []
    for cmd in res.stdout.splitlines():
        if cmd[:1] in "<>-\\":
            continue
        m = re.fullmatch(r"(\d+)a(\d+)(?:,(\d+))?", cmd)
        if not m:
            die(f"{final}: the series may only add lines to a file of the base tree ({cmd})")
        first = int(m.group(2))
        last = int(m.group(3) or first)
        added.extend(range(first - 1, last))
    return added


def tags(path, text, added, files, rules):
    """The patch of each line of the final file (None for lines of the base tree)."""
    own = owner(path, files)
    result = [None] * len(text)
    idx = range(len(text)) if added is None else added
    prev = None
    prev_i = -2
    block = None
    for i in idx:
        key = None
        if block is not None and prev_i == i - 1:
            key = block
            if not text[i].strip():
                block = None
        else:
            block = None
        for rpath, regex, rkey, is_block in rules:
            if key is None and rpath == path and regex.search(text[i]):
                key = rkey
                block = rkey if is_block else None
                break
        if key is None:
            if own is not None:
                key = own
            elif prev_i == i - 1 and prev is not None:
                key = prev
            else:
                die(f"{path}: no patch of tools/series/plan takes the line {text[i]!r}")
        result[i] = key
        prev, prev_i = key, i
    return result


def main():
    if len(sys.argv) != 5:
        die("usage: stage.py PLAN FINAL TREE KEY")
    plan, final, tree, key = sys.argv[1:]
    order, files, rules = read_plan(plan)
    if key not in order:
        die(f"{key} is not a commit of {plan}")
    rank = {k: n for n, k in enumerate(order)}
    upto = rank[key]
    for root, dirs, names in os.walk(final):
        if os.path.relpath(root, final).split(os.sep)[0] == ".base":
            continue
        for name in sorted(names):
            src = os.path.join(root, name)
            path = os.path.relpath(src, final)
            base = os.path.join(final, ".base", path)
            base = base if os.path.exists(base) else None
            with open(src, encoding="utf-8") as f:
                text = f.read().splitlines(keepends=True)
            tagged = tags(path, text, added_lines(base, src), files, rules)
            if key not in tagged:
                continue
            keep = [line for line, t in zip(text, tagged) if t is None or rank[t] <= upto]
            dst = os.path.join(tree, path)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "w", encoding="utf-8") as f:
                f.writelines(keep)
            shutil.copymode(src, dst)
            print(path)


if __name__ == "__main__":
    main()
