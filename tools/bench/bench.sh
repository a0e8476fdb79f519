#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench`: perftest on srdma, rxe and siw plus the machine's limits, in one boot of the bench
# kernel (tools/kernel/bench.config, built by `make bench-kernel` in $SRDMA_BENCH_BUILD), then the
# tables and the plot.
#   bench.sh [OUTDIR]      (default: out/bench of the checkout)
# BENCH_QUICK=1 runs the smoke subset (a few minutes) and leaves bench/ alone; a full run
# writes bench/results.md and bench/plot.svg (BENCH_REPORT=DIR: there instead). Raw logs stay
# in OUTDIR. See bench/README.md.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/out/bench}
quick=${BENCH_QUICK:-0}

rm -rf "$out"
mkdir -p "$out/bin"
export SRDMA_VM_LOG=$out/dmesg.log

# The kernel the figures come from, and its config beside them.
cache=${SRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srdma}
export SRDMA_BUILD=${SRDMA_BENCH_BUILD:-$cache/build-bench}
[ -f "$SRDMA_BUILD/.config" ] || { echo "bench: no kernel in $SRDMA_BUILD: run 'make bench-kernel'" >&2; exit 2; }
cp "$SRDMA_BUILD/.config" "$out/kernel.config"
if grep -Eq '^CONFIG_(DEBUG_KMEMLEAK|PROVE_LOCKING|KASAN|UBSAN)=y' "$out/kernel.config"; then
	kind=debug
else
	kind=bench
fi

# The root filesystem is the host's: what builds here runs in the VM.
cc -O2 -Wall -pthread -o "$out/bin/limits" "$top/tools/bench/limits.c"
cc -O2 -Wall -o "$out/bin/inline" "$top/tools/bench/inline.c" -libverbs
cc -O2 -Wall -o "$out/bin/batch" "$top/tools/bench/batch.c" -libverbs

# The guest does not inherit this environment: the settings go on its command line.
settings=(BENCH_QUICK="$quick" BENCH_KERNEL_KIND="$kind"
	BENCH_CONFIG_SHA="$(sha256sum < "$out/kernel.config" | cut -c1-16)")
for var in BENCH_VARIANTS BENCH_TESTS BENCH_SIZES BENCH_RUNS BENCH_MSGRATE; do
	[ -z "${!var:-}" ] || settings+=("$var=${!var}")
done
if [ "$quick" = 1 ]; then timeout=1200; else timeout=${BENCH_TIMEOUT:-7200}; fi
echo "bench: booting the VM (output in $out)"
start=$(date +%s)
rc=0
# tsc=reliable: under QEMU TCG the emulated HPET lags the TSC (the host's clock) when the host
# is busy, and the clocksource watchdog then switches the guest to the HPET in the middle of a
# run, which makes every later clock read a trap into QEMU.
"$top/tools/vm/run.sh" --timeout "$timeout" --append tsc=reliable -- env "${settings[@]}" \
	"$top/tools/bench/guest.sh" "$out" 2>&1 | tee "$out/console.log" || rc=$?
echo "bench: the VM ran for $(($(date +%s) - start)) s"

if [ -n "${BENCH_REPORT:-}" ]; then
	report=$BENCH_REPORT
elif [ "$quick" = 1 ]; then
	report=$out
else
	report=$top/bench
fi
python3 "$top/tools/bench/report.py" "$out" "$report"
echo "bench: results in $report/results.md, plot in $report/plot.svg"
exit "$rc"
