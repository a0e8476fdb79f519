#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Turns the raw output of tools/bench/guest.sh into results.md and plot.svg.

    report.py OUTDIR REPORTDIR

OUTDIR holds runs.tsv, env.txt and raw/ (see guest.sh). Each figure is the median over the
runs; the spread is the smallest and largest value seen. Standard library only: the plot is
SVG written by hand, so `make bench` needs nothing beyond Debian's python3.
"""

import math
import os
import re
import statistics
import sys
from collections import defaultdict

# The copy routines limits.c measures.
COPIERS = ("memcpy", "copy", "kcopy", "movsb")
LAT_TESTS = ["ib_send_lat", "ib_write_lat", "ib_read_lat"]
BW_TESTS = ["ib_send_bw", "ib_write_bw", "ib_read_bw"]
# Fields of perftest's result lines (split on whitespace).
LAT_FIELDS = {"iters": 1, "typical": 4, "avg": 5, "p99": 7, "p999": 8}
# The samples a percentile needs beyond it to mean something: 10.
MIN_ITERS = {"p99": 1000, "p999": 10000}
# hw_counters that say something went wrong or was retried (the ones shown next to a figure).
TROUBLE = re.compile(r"(^|_)err(ors)?($|_)|retr|rnr|drop|timeout|dup|seq_err|out_of|icrc|malformed|overflow")
BW_FIELDS = {"bw": 3, "mpps": 4}
COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def result_line(size, path):
    """perftest's result line for size in the log at path, split into fields."""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                w = line.split()
                if len(w) >= 5 and w[0] == str(size):
                    try:
                        float(w[2])
                        return w
                    except ValueError:
                        continue
    except OSError:
        pass
    return None


def bw_contradicted(size, w, env):
    """Whether a bandwidth result line w prints an average of 0.00 MB/s although its count of
    messages in the measured time (perftest -D measures all but a second at each end) makes at
    least 0.005 MB/s: perftest's timing failed, as it now and then does under emulation."""
    secs = float(env.get("bw_secs", "4")) - 2
    try:
        return secs > 0 and float(w[3]) == 0 and int(w[1]) * size / 2**20 / secs >= 0.005
    except (IndexError, ValueError):
        return False


def fmt(x, digits=3):
    """A figure with about `digits` significant digits, or n/a."""
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    d = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{d}f}"


def ratio(a, b):
    return f"{fmt(a / b, 2)}×" if a is not None and b else "n/a"


def size_name(s):
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return f"{s >> 20} MiB"
    if s >= 1024 and s % 1024 == 0:
        return f"{s >> 10} KiB"
    return f"{s} B"


class Data:
    def __init__(self, out):
        self.out = out
        self.env = {}
        with open(os.path.join(out, "env.txt")) as f:
            for line in f:
                k, _, v = line.strip().partition(" ")
                self.env[k] = v
        # (variant, test, mode, size) -> list of dicts of figures; status notes for failures.
        self.runs = defaultdict(list)
        self.notes = defaultdict(list)
        self.variants = []
        self.tests = []
        self.sizes = set()
        self.inline_probe = {}
        self.trouble = []
        with open(os.path.join(out, "runs.tsv")) as f:
            for line in f:
                v, test, mode, size, run, status, log = line.rstrip("\n").split("\t")
                if v not in self.variants:
                    self.variants.append(v)
                if test == "inline-probe":
                    self.inline_probe[v] = status
                    continue
                size = int(size)
                if test != "msgrate":
                    self.sizes.add(size)
                key = (v, test, mode, size)
                if test not in self.tests:
                    self.tests.append(test)
                w = result_line(size, os.path.join(out, log)) if status == "ok" else None
                if w is None:
                    self.notes[key].append(status if status != "ok" else "no result line")
                    continue
                fields = LAT_FIELDS if test.endswith("_lat") else BW_FIELDS
                fig = {k: float(w[i]) for k, i in fields.items()}
                if not test.endswith("_lat") and bw_contradicted(size, w, self.env):
                    self.notes[key].append(
                        f"run {run}: perftest printed {w[3]} MB/s for {w[1]} messages "
                        "in the measured time (its timing failed)"
                    )
                    continue
                for k, need in MIN_ITERS.items():
                    if k in fig and fig["iters"] < need:
                        del fig[k]
                self.runs[key].append(fig)
                self._counters(key, run, os.path.join(out, log).replace(".log", ".counters"))
        self.sizes = sorted(self.sizes)
        self.limits = self._limits()
        self.crossover = self._crossover()
        self.batches = self._batches()

    def _counters(self, key, run, path):
        """Keeps the trouble counters that moved during one run."""
        try:
            with open(path) as f:
                moved = [line.split() for line in f]
        except OSError:
            return
        moved = [m for m in moved if len(m) == 3 and TROUBLE.search(m[1]) and m[2] != "0"]
        if moved:
            self.trouble.append((key, run, moved))

    def _runs_of(self, prefix):
        raw = os.path.join(self.out, "raw")
        return sorted(
            os.path.join(raw, f) for f in os.listdir(raw) if f.startswith(prefix)
        )

    def _limits(self):
        copies = {k: defaultdict(list) for k in COPIERS}
        pingpong, syscall, sysping, tsc, stalls = [], [], [], [], []
        jitter = defaultdict(list)
        for path in self._runs_of("limits-r"):
            with open(path) as f:
                for line in f:
                    w = line.split()
                    if w[:1] and w[0] in copies and len(w) == 3:
                        copies[w[0]][int(w[1])].append(float(w[2]))
                    elif w[:1] == ["pingpong"] and len(w) == 5:
                        pingpong.append(float(w[1]))
                    elif w[:1] == ["syscall"] and len(w) == 2:
                        syscall.append(float(w[1]))
                    elif w[:1] == ["sysping"] and len(w) == 5:
                        sysping.append(float(w[1]))
                    elif w[:1] == ["tsc"] and len(w) == 3:
                        tsc.append((float(w[1]), float(w[2])))
                    elif w[:1] == ["jitter"] and len(w) == 5:
                        jitter[int(w[1])].append(tuple(float(x) for x in w[2:]))
                    elif w[:1] == ["stalls"] and len(w) == 5:
                        stalls.append(tuple(float(x) for x in w[1:]))
        lim = {k: {s: statistics.median(v) for s, v in c.items()} for k, c in copies.items()}
        lim["rtt"] = statistics.median(pingpong) if pingpong else None
        lim["rtt_spread"] = (min(pingpong), max(pingpong)) if pingpong else None
        lim["syscall"] = statistics.median(syscall) if syscall else None
        lim["sysping"] = statistics.median(sysping) if sysping else None
        lim["sysping_spread"] = (min(sysping), max(sysping)) if sysping else None
        lim["tsc"] = tsc
        # Per CPU, medians over the runs: (interruptions per second, typical µs, 99 % µs).
        lim["jitter"] = {
            cpu: tuple(statistics.median(x[i] for x in runs) for i in range(3))
            for cpu, runs in sorted(jitter.items())
        }
        # Summed over the runs: (seconds watched, stalls, longest ms, stalled ms).
        lim["stalls"] = (
            (
                sum(x[0] for x in stalls),
                int(sum(x[1] for x in stalls)),
                max(x[2] for x in stalls),
                sum(x[3] for x in stalls),
            )
            if stalls
            else None
        )
        return lim

    def _raw_lines(self, v, prefix):
        """The lines of variant v's raw files named PREFIX-rN (one per run), split in words."""
        d = os.path.join(self.out, "raw", v)
        if not os.path.isdir(d):
            return
        for f in sorted(os.listdir(d)):
            if f.startswith(prefix + "-r"):
                with open(os.path.join(d, f), errors="replace") as fh:
                    for line in fh:
                        yield line.split()

    def _batches(self):
        """variant -> {"rate": {mode: [Mpps per run]}, "skip": {mode: reason}} from batch.c."""
        res = {}
        for v in self.variants:
            x = {"rate": defaultdict(list), "skip": {}}
            for w in self._raw_lines(v, "batch"):
                if w[:1] == ["rate"] and len(w) == 3:
                    x["rate"][w[1]].append(float(w[2]))
                elif w[:1] == ["skip"] and len(w) > 2:
                    x["skip"][w[1]] = " ".join(w[2:])
            if x["rate"] or x["skip"]:
                res[v] = x
        return res

    def _crossover(self):
        """variant -> {"max_inline": n, (kind, mode, size): [figures...], "skip": [...]}."""
        res = {}
        for v in self.variants:
            x = defaultdict(list)
            x["errors"] = []
            seen = False
            for w in self._raw_lines(v, "crossover"):
                seen = True
                if w[:1] == ["max_inline"]:
                    x["max_inline"] = int(w[1])
                elif w[:1] in (["lat"], ["bw"]):
                    x[(w[0], w[1], int(w[2]))].append([float(y) for y in w[3:]])
                elif w[:1] == ["skip"]:
                    pass
                elif w:
                    x["errors"].append(" ".join(w))
            if not seen:
                continue
            res[v] = x
        return res

    def fig(self, v, test, size, field, mode="sge"):
        """Median of one figure over the runs, and its (min, max)."""
        vals = [r[field] for r in self.runs.get((v, test, mode, size), []) if field in r]
        if not vals:
            return None, None
        return statistics.median(vals), (min(vals), max(vals))

    def why(self, v, test, size, mode="sge"):
        notes = self.notes.get((v, test, mode, size))
        return notes[0] if notes else "not run"

    def limit(self, test, size):
        """The floor for any device: for bandwidth the fastest copy measured (a device copies
        no faster than the fastest routine this machine has); for latency one one-way trip of
        the ping-pong with a system call before each answer (the doorbell and the cache-line
        transfer, measured as a chain; for ib_read_lat, which perftest reports as a round trip,
        half a cache-line round trip more) and the copy."""
        bw = max(
            (b for b in (self.limits[k].get(size) for k in COPIERS) if b), default=None
        )
        if test.endswith("_bw"):
            return bw
        rtt, sp = self.limits["rtt"], self.limits["sysping"]
        if sp is None and rtt is not None and self.limits["syscall"] is not None:
            # Runs from before the chained measurement: the sum of its parts.
            sp = rtt + 2 * self.limits["syscall"]
        if sp is None or rtt is None or not bw:
            return None
        copy_us = size / (bw * 0x100000) * 1e6
        return sp / 2 + (rtt / 2 if test == "ib_read_lat" else 0) + copy_us


def interrupted(d, test, typical):
    """The share of a latency test's round trips that the VM's interruptions (Limits) fall
    in: the round trip times the two vCPUs' interruptions per second."""
    jit = d.limits["jitter"]
    if not jit or typical is None:
        return None
    # perftest reports half the round trip, except for ib_read_lat.
    rtt = typical if test == "ib_read_lat" else 2 * typical
    return rtt * sum(rate for rate, _, _ in jit.values()) / 1e6


def write_targets(d, L):
    """The data path's targets (the benchmark issue's part 2), each as a ratio measured in this
    boot, with whether it is met."""
    small, big = 8, 1 << 20
    rows = []

    def add(v, what, value, target, ok, spread=None):
        if value is None:
            rows.append([v, what, "n/a", target, "not measured"])
            return
        verdict = "met" if ok(value) else "not met"
        # Runs on either side of the target: the median's verdict is not the runs' verdict.
        if spread is not None and ok(spread[0]) != ok(spread[1]):
            verdict += (f"; the runs span the target ({fmt(spread[0], 2)}–"
                        f"{fmt(spread[1], 2)}×)")
        rows.append([v, what, f"{fmt(value, 2)}×", target, verdict])

    def q(a, b):
        return a / b if a is not None and b else None

    def runs_ratio(a, b):
        """The ratio of two figures' medians, and the least and most of any run of `a` over
        any run of `b`."""
        (ma, ra), (mb, rb) = a, b
        if ma is None or not mb or ra is None or not rb[0]:
            return q(ma, mb), None
        return ma / mb, (ra[0] / rb[1], ra[1] / rb[0])

    for v in srdma_variants(d):
        for t in ("ib_write_lat", "ib_send_lat"):
            typ = d.fig(v, t, small, "typical")
            add(v, f"{t} {size_name(small)} typical / limit", q(typ[0], d.limit(t, small)),
                "≤ 2×", lambda x: x <= 2)
            value, spread = runs_ratio(typ, d.fig("rxe", t, small, "typical"))
            add(v, f"{t} {size_name(small)} typical / rxe", value, "≤ 0.1×", lambda x: x <= 0.1,
                spread)
        for t in ("ib_write_bw", "ib_send_bw"):
            add(v, f"{t} {size_name(big)} / limit", q(d.fig(v, t, big, "bw")[0], d.limit(t, big)),
                "≥ 0.5×", lambda x: x >= 0.5)
        for size in (small, big):
            value, spread = runs_ratio(d.fig(v, "ib_send_bw", size, "bw"),
                                  d.fig(v, "ib_write_bw", size, "bw"))
            add(v, f"ib_send_bw / ib_write_bw, {size_name(size)}", value, "≥ 1×",
                lambda x: x >= 1, spread)
        for t in LAT_TESTS:
            typ = d.fig(v, t, small, "typical")[0]
            add(v, f"{t} {size_name(small)} 99 % / typical",
                q(d.fig(v, t, small, "p99")[0], typ),
                "≤ 5×", lambda x: x <= 5)
            share = interrupted(d, t, typ)
            if share is not None and share >= 0.01 and rows[-1][-1] == "not met":
                rows[-1][-1] = (
                    f"not met; the VM interrupts ~{fmt(100 * share, 2)} % of these round trips"
                )
    if not rows:
        return
    L.append("## Targets")
    L.append("")
    L.append(
        "What the data path aims for, as ratios of figures from this boot: the latency floor "
        "and the copy limit are the `limit` column's (the Limits section says how they are "
        "made). `srdma` is the loopback transport, `srdma-wire` the RoCEv2 one; a target is "
        "about srdma's own path, so both are shown. A 99 % target missed where this VM's "
        "interruptions (Limits) fall in 1 % or more of the round trips says so: the 99 % is "
        "then one of those interruptions, and this VM cannot tell whether srdma meets it. "
        "Where a ratio of two figures has runs on both sides of its target (the least and "
        "the most of any run over any run), the row says so: its verdict is the medians', "
        "and these runs cannot tell."
    )
    L.append("")
    L.append("| Device | Ratio | Measured | Target | |")
    L.append("|---|---|---|---|---|")
    for r in rows:
        L.append("| " + " | ".join(r) + " |")
    L.append("")


def srdma_variants(d):
    return [v for v in d.variants if v.startswith("srdma")]


def other_variants(d):
    return [v for v in d.variants if not v.startswith("srdma")]


def cell(value, spread):
    if value is None:
        return "n/a"
    lo, hi = spread
    if lo == hi:
        return fmt(value)
    return f"{fmt(value)} ({fmt(lo)}–{fmt(hi)})"


def write_markdown(d, path):
    env = d.env
    L = []
    L.append("# srdma benchmark results")
    L.append("")
    if env.get("kernel_kind") != "bench":
        L.append(
            f"**Not for comparison: these figures come from a {env.get('kernel_kind', 'unknown')} "
            "kernel** (debug options tax each device differently); `make bench` boots the bench "
            "kernel."
        )
        L.append("")
    L.append(
        f"Generated by `make bench` ({'BENCH_QUICK=1, smoke subset' if env.get('quick') == '1' else 'full run'}) "
        f"on {env.get('date', '?')}: kernel {env.get('kernel', '?')}, {env.get('cpus', '?')} vCPUs under QEMU TCG, "
        f"perftest {env.get('perftest', '?')}, sizes {env.get('sizes', '?')} B, "
        f"median of {env.get('runs', '?')} run(s) per figure "
        "(min–max over the runs in parentheses). Server and client are two devices of the same kind "
        "in one VM, joined by a veth pair; siw connects through rdma_cm (`-R`), rxe and srdma "
        "through perftest's TCP exchange with the RoCEv2 IPv4 GID (`-x`)."
    )
    L.append("")
    L.append(
        f"Kernel: {env.get('kernel_kind', '?')} kernel (config sha256 "
        f"{env.get('config_sha256', '?')}, debug options: {env.get('debug', '?').strip()}); "
        f"command line `{env.get('cmdline', '?')}`; {env.get('pinning', 'no pinning')}."
    )
    L.append("")
    L.append("### How to read this")
    L.append("")
    L.append(
        "- Every device ran in the same boot, its runs interleaved with the others' (for each "
        "run, test and size, every device in turn), "
        f"{'without a warm-up (the smoke subset)' if env.get('quick') == '1' else 'after a warm-up'}"
        "; client and server pinned "
        "to different vCPUs. Host noise falls on all alike, so the ratios are the result; the "
        "absolute figures are those of an emulated CPU."
    )
    L.append(
        "- Like for like: `srdma-wire` and `rxe` both carry every message as RoCEv2 packets "
        "through the kernel's IP stack (srdma-wire between two namespaces over a veth, rxe "
        "between two addresses of one namespace). `srdma` (two devices of one namespace) takes "
        "the loopback transport, a page-to-page copy with no packets: it is the figure for "
        "processes of one host, not a protocol comparison. siw is iWARP over TCP."
    )
    L.append(
        "- The limit is the floor for any device: for bandwidth the fastest of four copy "
        "routines between buffers of the message size, as perftest uses one buffer over and "
        "over (a device copies no faster than the fastest routine); for latency a one-way "
        "trip of a ping-pong between the two vCPUs in which each side makes a null system "
        "call before it answers (the doorbell and the cache-line transfer, measured as one "
        "chain; half a cache-line round trip more for ib_read_lat, which perftest reports as a "
        "round trip), plus the copy."
    )
    L.append(
        "- Percentiles rest on at least 10 samples beyond them or are left out (—): 99.9 % "
        "needs 10000 iterations, 99 % 1000."
    )
    secs = env.get("bw_secs")
    if secs:
        margin = int(secs) // 4
        window = (
            f"the middle {int(secs) - 2 * margin} s measured (perftest's margin of {margin} s "
            "at each end leaves out the ramp-up and the drain)"
            if margin
            else "all of it measured"
        )
        L.append(
            f"- Bandwidth and message rate: every run lasts {secs} s (perftest `-D {secs}`), "
            f"{window}; every device moves data for the same time, whatever its speed, so a "
            "fast device's figure does not rest on a run of a few milliseconds."
        )
    L.append(
        "- Counters: the hw_counters that report errors, retries or drops and moved during a "
        "run are listed at the end; a figure with a retry storm behind it says so there."
    )
    if d.limits["jitter"] or d.limits["stalls"]:
        L.append(
            "- Tails: a spinning vCPU is interrupted hundreds of times a second (the tick, the "
            "host: Limits), so a latency run whose round trips are long enough has those "
            "interruptions in its 99 %; and the host stops the whole VM now and then (Limits: "
            "stalls), which a long run has at its maximum and, when they are more than one in "
            "1000 of its samples, at its 99.9 %. On the wire a stall longer than the QP's "
            "timeout (67 ms, perftest's) also costs a retransmission, which the counters show. "
            "These tails are the VM's, alike for every device."
        )
    L.append("")
    L.append(
        "Latency ratios below 1× and bandwidth ratios above 1× favour srdma."
    )
    L.append("")
    by_status = defaultdict(list)
    for v, status in d.inline_probe.items():
        by_status[status].append(v)
    probe = "; ".join(f"{', '.join(vs)}: {status}" for status, vs in by_status.items())
    if probe:
        L.append(
            "perftest `-I` (inline): " + probe + ". perftest enables inline only for devices "
            "it knows by vendor ID, so the perftest figures below are the SGE path on every "
            "device; the inline path of srdma is measured by tools/bench/inline.c instead "
            "(the crossover table)."
        )
        L.append("")

    # The summary: the headline figure of every test and size, with the ratios.
    sv, ov = srdma_variants(d), other_variants(d)
    L.append("## Summary")
    L.append("")
    L.append(
        "Typical latency (µs) for the latency tests, average bandwidth (MB/s, 2^20 bytes as "
        "perftest counts) for the bandwidth tests."
    )
    L.append("")
    head = ["Test", "Size"] + d.variants + ["limit"]
    for s in sv:
        head += [f"{s}/{o}" for o in ov] + [f"{s}/limit"]
    L.append("| " + " | ".join(head) + " |")
    L.append("|" + "---|" * len(head))
    for test in [t for t in LAT_TESTS + BW_TESTS if t in d.tests]:
        field = "typical" if test.endswith("_lat") else "bw"
        for size in d.sizes:
            row = [test, size_name(size)]
            vals = {}
            for v in d.variants:
                vals[v], _ = d.fig(v, test, size, field)
                row.append(fmt(vals[v]))
            lim = d.limit(test, size)
            row.append(fmt(lim))
            for s in sv:
                row += [ratio(vals[s], vals[o]) for o in ov]
                row.append(ratio(vals[s], lim))
            L.append("| " + " | ".join(row) + " |")
    L.append("")

    write_targets(d, L)

    # One table per test: every size and device, the fields of its kind.
    lat_headers = ["iterations", "typical µs", "average µs", "99% µs", "99.9% µs"]
    bw_headers = ["BW average MB/s", "message rate Mpps"]
    tables = [(t, LAT_FIELDS, lat_headers) for t in LAT_TESTS]
    tables += [(t, BW_FIELDS, bw_headers) for t in BW_TESTS]
    for test, fields, headers in [t for t in tables if t[0] in d.tests]:
        L.append(f"## {test}")
        L.append("")
        L.append("| Size | Device | " + " | ".join(headers) + " |")
        L.append("|---|---|" + "---|" * len(headers))
        for size in d.sizes:
            for v in d.variants:
                row = [size_name(size), v]
                if not d.runs.get((v, test, "sge", size)):
                    row += [f"n/a ({d.why(v, test, size)})"] + [""] * (len(headers) - 1)
                else:
                    for f in fields:
                        if f == "iters":
                            row.append(f"{d.fig(v, test, size, f)[0]:.0f}")
                            continue
                        val = d.fig(v, test, size, f)
                        row.append("—" if val[0] is None and f in MIN_ITERS else cell(*val))
                L.append("| " + " | ".join(row) + " |")
        L.append("")

    msg_modes = sorted({k[2] for k in d.runs if k[1] == "msgrate"},
                       key=lambda m: (int(m[1:].split("q")[0]), int(m.split("q")[1])))
    if msg_modes:
        L.append("## Message rate (ib_write_bw, 64 B)")
        L.append("")
        L.append(
            "Mpps; `lNqM`: posted in lists of N (perftest `-l`: one ibv_post_send call, and for "
            "srdma one doorbell, per list), one completion per M WRITEs (`-Q`). The gain is over "
            "`l1q1` (one call and one completion per WRITE) of the same device."
        )
        L.append("")
        L.append("| Device | " + " | ".join(msg_modes) + " | " +
                 " | ".join(f"{m}/l1q1" for m in msg_modes if m != "l1q1") + " |")
        L.append("|---|" + "---|" * (2 * len(msg_modes) - ("l1q1" in msg_modes)))
        for v in d.variants:
            figs = {m: d.fig(v, "msgrate", 64, "mpps", m) for m in msg_modes}
            row = [v] + [cell(*figs[m]) for m in msg_modes]
            base = figs.get("l1q1", (None, None))[0]
            row += [ratio(figs[m][0], base) for m in msg_modes if m != "l1q1"]
            L.append("| " + " | ".join(row) + " |")
        L.append("")

    if d.batches:
        modes = ["post1", "list32", "wr1", "wr32"]
        L.append("## Message rate by post API (64 B RDMA WRITE)")
        L.append("")
        L.append(
            "Mpps; tools/bench/batch.c: one process, an RC QP on each device, 128 WRITEs in "
            "flight at most. `post1`: one ibv_post_send per WRITE, each signalled; `list32`: "
            "lists of 32 per ibv_post_send, the last signalled; `wr1` and `wr32`: the extended "
            "API (ibv_wr_start, ibv_wr_rdma_write and ibv_wr_set_sge per WRITE, "
            "ibv_wr_complete) with one and with 32 WRITEs per batch, signalled alike. perftest "
            "takes the extended API only for devices it knows by vendor ID; siw connects "
            "through rdma_cm only, so it is not here. The gain is over `post1` of the same "
            "device."
        )
        L.append("")
        L.append("| Device | " + " | ".join(modes) + " | " +
                 " | ".join(f"{m}/post1" for m in modes[1:]) + " |")
        L.append("|---|" + "---|" * (2 * len(modes) - 1))
        for v, x in d.batches.items():
            figs = {}
            for m in modes:
                vals = x["rate"].get(m)
                figs[m] = ((statistics.median(vals), (min(vals), max(vals))) if vals
                           else (None, None))
            row = [v]
            for m in modes:
                row.append(cell(*figs[m]) if figs[m][0] is not None
                           else "n/a" + (f" ({x['skip'][m]})" if m in x["skip"] else ""))
            row += [ratio(figs[m][0], figs["post1"][0]) for m in modes[1:]]
            L.append("| " + " | ".join(row) + " |")
        L.append("")

    for v, x in d.crossover.items():
        mi = x.get("max_inline")
        L.append(f"## Inline against SGE ({v}, max_inline_data {mi if mi is not None else 'n/a'} B)")
        L.append("")
        L.append(
            "tools/bench/inline.c: one process, an RC QP on each device; latency is a SEND "
            "ping-pong (typical, half the round trip, µs), bandwidth an RDMA WRITE stream with "
            "64 in flight. Inline copies the payload into the WQE at post time; SGE lets the "
            "kernel read it from the registered buffer. Above max_inline_data the inline mode "
            "does not exist (the QP refuses it), so those rows show SGE only."
        )
        L.append("")
        L.append(
            "| Size | SGE lat µs | inline lat µs | inline/SGE lat | SGE MB/s | inline MB/s | "
            "inline/SGE BW | SGE Mpps | inline Mpps |"
        )
        L.append("|---|---|---|---|---|---|---|---|---|")
        sizes = sorted({k[2] for k in x if isinstance(k, tuple)})
        for size in sizes:
            def med(kind, mode, i):
                vals = [r[i] for r in x.get((kind, mode, size), [])]
                return (statistics.median(vals), (min(vals), max(vals))) if vals else (None, None)
            sl, il = med("lat", "sge", 0), med("lat", "inline", 0)
            sb, ib = med("bw", "sge", 0), med("bw", "inline", 0)
            sm, im = med("bw", "sge", 1), med("bw", "inline", 1)
            above = mi is not None and size > mi
            na = "n/a (above max_inline_data)" if above else "n/a"
            L.append(
                "| "
                + " | ".join(
                    [
                        size_name(size),
                        cell(*sl),
                        cell(*il) if il[0] is not None else na,
                        ratio(il[0], sl[0]),
                        cell(*sb),
                        cell(*ib) if ib[0] is not None else na,
                        ratio(ib[0], sb[0]),
                        cell(*sm),
                        cell(*im) if im[0] is not None else "n/a",
                    ]
                )
                + " |"
            )
        if x["errors"]:
            L.append("")
            L.append("Errors: " + "; ".join(x["errors"][:5]))
        L.append("")

    L.append("## Limits (plain memory in the same VM)")
    L.append("")
    rtt, spread = d.limits["rtt"], d.limits["rtt_spread"]
    L.append(f"Cache-line ping-pong between the two vCPUs: round trip {cell(rtt, spread) if rtt else 'n/a'} µs (typical).")
    sc = d.limits["syscall"]
    L.append(f"A null system call (getppid): {fmt(sc) if sc else 'n/a'} µs (typical).")
    sp, spread = d.limits["sysping"], d.limits["sysping_spread"]
    L.append(
        "The same ping-pong with a null system call before each answer: round trip "
        f"{cell(sp, spread) if sp else 'n/a'} µs (typical); half of it is the latency floor."
    )
    jit = d.limits["jitter"]
    if jit:
        each = "; ".join(
            f"vCPU {cpu}: {fmt(rate)} a second, typically {fmt(typ)} µs (99 %: {fmt(p99)} µs)"
            for cpu, (rate, typ, p99) in jit.items()
        )
        L.append(
            "Interruptions of a thread that spins (a gap of 10 µs to 5 ms between two reads of "
            f"the clock: the timer tick, other work, the host): {each}. They are the floor of a "
            "latency tail: a ping-pong whose round trip takes R µs has about R × (the two "
            "rates) / 10^6 of its round trips interrupted, and once that is 1 % or more its "
            "99 % is an interruption, not the device."
        )
    st = d.limits["stalls"]
    if st:
        secs, n, longest, total = st
        L.append(
            f"Stalls of the whole VM: with a thread spinning on each of two vCPUs for {fmt(secs)} s "
            f"in all, both saw the clock jump at the same time {n} times, by up to "
            f"{fmt(longest)} ms ({fmt(100 * total / 1000 / secs)} % of the time). Neither vCPU ran: "
            "the host stopped the VM (a CPU quota of the host shows as ~100 ms stops on a "
            "100 ms grid). A run that lasts longer than the time between two stalls has one in "
            "its samples: at its maximum, and at its 99.9 % when the run is short of 1000 "
            "samples per stall."
        )
    L.append("")
    L.append(
        "Copies of the size from one buffer to another, the working set of a perftest run: "
        "glibc's memcpy (the routine glibc picks for the size and CPU, which under emulation "
        "can be much slower at some sizes), a plain 8-byte-word copy, the kernel's copy "
        "between two user buffers (process_vm_writev, which also pins the pages each call) "
        "and `rep movsb`, the instruction the kernel's copies use on CPUs with fast string "
        "moves (x86-64). The limit column takes the fastest."
    )
    L.append("")
    if d.limits["tsc"]:
        measured = ", ".join(fmt(m, 4) for m, _ in d.limits["tsc"])
        stated = d.limits["tsc"][0][1]
        L.append(
            "limits.c times these figures with the TSC, as perftest times its own, at the rate "
            f"it measured against CLOCK_MONOTONIC over a second ({measured} MHz); perftest "
            f"takes the rate /proc/cpuinfo states ({fmt(stated, 4)} MHz). The two agree within "
            f"{fmt(max(abs(m / stated - 1) for m, _ in d.limits['tsc']) * 100, 2)} %."
        )
        L.append("")
    L.append("| Size | memcpy MB/s | word copy MB/s | kernel copy MB/s | rep movsb MB/s |")
    L.append("|---|---|---|---|---|")
    for size in sorted(d.limits["memcpy"]):
        L.append(
            f"| {size_name(size)} | {fmt(d.limits['memcpy'].get(size))} | "
            f"{fmt(d.limits['copy'].get(size))} | {fmt(d.limits['kcopy'].get(size))} | "
            f"{fmt(d.limits['movsb'].get(size))} |"
        )
    L.append("")

    L.append("## Counters of trouble")
    L.append("")
    if d.trouble:
        L.append("hw_counters whose names say error, retry, drop or sequence and that moved during a run:")
        L.append("")
        for (v, test, mode, size), run, moved in d.trouble:
            what = ", ".join(f"{dev} {name} +{n}" for dev, name, n in moved)
            L.append(f"- {v} {test} {mode} {size_name(size)} run {run}: {what}")
    else:
        L.append("None moved: no error, retry, drop or sequence counter changed during any run.")
    L.append("")

    failed = [(k, n) for k, n in d.notes.items() if not n[0].startswith("n/a")]
    if failed:
        L.append("## Failed runs")
        L.append("")
        L.append(
            "A run fails when either side exits non-zero or the client prints no numeric result "
            "line (perftest prints `inf` when its timing goes wrong), or a bandwidth of 0.00 MB/s "
            "that its own count of messages in the measured time contradicts; the medians above "
            "use the other runs."
        )
        L.append("")
        for (v, test, mode, size), notes in sorted(failed):
            good = len(d.runs.get((v, test, mode, size), []))
            L.append(
                f"- {v} {test} {mode} {size_name(size)}: {len(notes)} of {len(notes) + good} "
                f"run(s) failed (logs in out/bench/raw/{v}/): {'; '.join(notes)}"
            )
        L.append("")
    L.append("Raw perftest logs: out/bench/raw/DEVICE/TEST-MODE-SIZE-rRUN.log (client) and .srv.log.")
    L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def write_svg(d, path):
    """A 2×3 grid, latency tests above and bandwidth tests below, log-log axes, one line per
    device and a dashed one for the limit."""
    pw, ph, ml, mr, mt, mb = 330, 250, 62, 12, 34, 44
    cols = 3
    legend_h = 30
    W, H = cols * pw, 2 * ph + legend_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
    ]
    series_names = d.variants + ["limit"]
    colour = {v: COLOURS[i % len(COLOURS)] for i, v in enumerate(d.variants)}
    colour["limit"] = "#555555"

    for i, test in enumerate(LAT_TESTS + BW_TESTS):
        ox, oy = (i % cols) * pw, (i // cols) * ph
        lat = test.endswith("_lat")
        field = "typical" if lat else "bw"
        series = {}
        for v in d.variants:
            pts = [(s, d.fig(v, test, s, field)[0]) for s in d.sizes]
            series[v] = [(s, y) for s, y in pts if y]
        series["limit"] = [(s, d.limit(test, s)) for s in d.sizes if d.limit(test, s)]
        ys = [y for pts in series.values() for _, y in pts]
        x0, x1 = math.log10(min(d.sizes)), math.log10(max(d.sizes))
        if x1 == x0:
            x1 = x0 + 1
        if ys:
            y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        else:
            y0, y1 = 0, 1
        if y1 == y0:
            y1 = y0 + 1
        left, top = ox + ml, oy + mt
        w, h = pw - ml - mr, ph - mt - mb

        def X(s):
            return left + (math.log10(s) - x0) / (x1 - x0) * w

        def Y(y):
            return top + h - (math.log10(y) - y0) / (y1 - y0) * h

        title = f"{test}: {'typical latency, µs' if lat else 'average bandwidth, MB/s'}"
        out.append(f'<text x="{ox + pw / 2}" y="{oy + 20}" text-anchor="middle" font-weight="bold">{title}</text>')
        out.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#888"/>')
        for e in range(y0, y1 + 1):
            y = Y(10 ** e)
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="#ddd"/>')
            label = f"{10 ** e:g}" if -3 <= e <= 5 else f"1e{e}"
            out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        for s in d.sizes:
            x = X(s)
            out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + h}" stroke="#eee"/>')
        # Size labels: not all of them where they would overlap.
        step = max(1, math.ceil(len(d.sizes) * 42 / w))
        for s in d.sizes[::step]:
            out.append(f'<text x="{X(s):.1f}" y="{top + h + 14}" text-anchor="middle">{size_name(s).replace(" ", "")}</text>')
        out.append(f'<text x="{left + w / 2}" y="{top + h + 32}" text-anchor="middle">message size</text>')
        for name, pts in series.items():
            if not pts:
                continue
            dash = ' stroke-dasharray="5,4"' if name == "limit" else ""
            p = " ".join(f"{X(s):.1f},{Y(y):.1f}" for s, y in pts)
            out.append(f'<polyline points="{p}" fill="none" stroke="{colour[name]}" stroke-width="2"{dash}/>')
            for s, y in pts:
                out.append(f'<circle cx="{X(s):.1f}" cy="{Y(y):.1f}" r="2.5" fill="{colour[name]}"/>')

    ly = 2 * ph + 18
    x = 20
    for name in series_names:
        dash = ' stroke-dasharray="5,4"' if name == "limit" else ""
        out.append(f'<line x1="{x}" y1="{ly - 4}" x2="{x + 28}" y2="{ly - 4}" stroke="{colour[name]}" stroke-width="2"{dash}/>')
        label = "limit (memcpy / shared-memory ping-pong)" if name == "limit" else name
        out.append(f'<text x="{x + 34}" y="{ly}">{label}</text>')
        x += 60 + 7 * len(label)
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: report.py OUTDIR REPORTDIR")
    d = Data(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    write_markdown(d, os.path.join(sys.argv[2], "results.md"))
    write_svg(d, os.path.join(sys.argv[2], "plot.svg"))


if __name__ == "__main__":
    main()
