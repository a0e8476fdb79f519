#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Self and inclusive shares of the samples of `perf script -F comm,ip,sym` output, by
symbol, with kernel addresses resolved from a copy of /proc/kallsyms (the perf that Debian
ships may be older than the kernel and leave them unresolved).

    perfsyms.py SYMBOLS... < perf-script.txt

SYMBOLS are kallsyms-format files: /proc/kallsyms (modules; its addresses read as zero where
the kernel hides them) and the kernel's System.map (the kernel proper, booted without KASLR).
"""

import bisect
import re
import sys
from collections import Counter


def load_kallsyms(paths):
    syms = []
    for path in paths:
        with open(path) as f:
            for line in f:
                w = line.split()
                if len(w) >= 3 and w[1].lower() in "tw" and int(w[0], 16):
                    name = w[2] + (f" {w[3]}" if len(w) > 3 else "")
                    syms.append((int(w[0], 16), name))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def main():
    addrs, names = load_kallsyms(sys.argv[1:])
    samples, self_c, incl_c, comm_c = 0, Counter(), Counter(), Counter()
    # For each symbol: what called it (the next two frames up the stack).
    callers = {}
    frames, comm = [], None

    def name_of(ip, sym):
        if sym != "[unknown]" or ip < 0xFFFF000000000000:
            return sym
        i = bisect.bisect_right(addrs, ip) - 1
        return names[i] if i >= 0 else hex(ip)

    def flush():
        nonlocal samples
        if comm is None:
            return
        samples += 1
        comm_c[comm] += 1
        if frames:
            self_c[frames[0]] += 1
            for fr in set(frames):
                incl_c[fr] += 1
            for i, fr in enumerate(frames[:8]):
                up = " <- ".join(frames[i + 1:i + 3]) or "(top)"
                callers.setdefault(fr, Counter())[up] += 1

    for line in sys.stdin:
        if not line.strip():
            continue
        if not line.startswith(("\t", " ")):
            flush()
            comm, frames = line.split()[0], []
            continue
        m = re.match(r"\s*([0-9a-f]+)\s+(.*)$", line)
        if m:
            frames.append(name_of(int(m.group(1), 16), m.group(2).strip()))
    flush()
    if not samples:
        print("no samples")
        return
    print(f"{samples} samples")
    print("\nby command:")
    for c, n in comm_c.most_common(10):
        print(f"{100 * n / samples:6.2f}%  {c}")
    print("\nself (the symbol the sample was in):")
    for s, n in self_c.most_common(60):
        print(f"{100 * n / samples:6.2f}%  {s}")
    print("\ninclusive (the symbol was on the stack):")
    for s, n in incl_c.most_common(80):
        print(f"{100 * n / samples:6.2f}%  {s}")
    print("\ncallers (of the 40 symbols with the most self samples, the two frames above):")
    for s, _ in self_c.most_common(40):
        print(f"{s}")
        for up, n in callers.get(s, Counter()).most_common(3):
            print(f"  {100 * n / samples:6.2f}%  <- {up}")


if __name__ == "__main__":
    main()
