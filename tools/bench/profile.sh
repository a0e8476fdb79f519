#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Inside the VM: one perftest run between the two devices of a bench variant, with `perf record`
# sampling every CPU (cpu-clock: the emulated CPU has no PMU), and the profile as text.
#   profile.sh OUTDIR [VARIANT [TEST [SIZE [ITERS]]]]   (default: srdma ib_send_lat 8 10000)
# PROFILE_ARGS (environment): more perftest flags for both sides, e.g. "-l 32 -Q 32".
# Writes OUTDIR/perf.data, OUTDIR/report.txt (symbols by share of samples, both CPUs: where
# the sample was, what was on its stack, and the callers of the busiest) and the two perftest
# logs. `make profile` boots the bench kernel and runs it (PROFILE_VARIANT, PROFILE_TEST,
# PROFILE_SIZE, PROFILE_ITERS, PROFILE_ARGS).
here=$(dirname "$(readlink -f "$0")")
out=${1:?usage: profile.sh OUTDIR [VARIANT [TEST [SIZE [ITERS]]]]}
variant=${2:-srdma}
test=${3:-ib_send_lat}
size=${4:-8}
iters=${5:-10000}
extra=${PROFILE_ARGS:-}
. "$here/variants.sh"
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"
mkdir -p "$out"

modprobe rdma_rxe 2>/dev/null
SRV_NS= CLI_NS= GID_INDEX= PT_FLAGS=
"variant_${variant//-/_}_setup" > "$out/setup.log" 2>&1 ||
	{ echo "profile: $variant: set-up failed"; cat "$out/setup.log"; exit 1; }
sns=() cns=()
[ -z "$SRV_NS" ] || sns=(ip netns exec "$SRV_NS")
[ -z "$CLI_NS" ] || cns=(ip netns exec "$CLI_NS")

# A warm-up outside the profile, as make bench settles before it measures.
run() {
	# shellcheck disable=SC2086
	"${sns[@]}" taskset -c 0 "$test" -F -s "$size" -n "$1" -d "$SRV_DEV" -p "$2" $PT_FLAGS $extra \
		> "$out/srv.log" 2>&1 &
	local srv=$! i
	for i in $(seq 100); do
		[ -n "$("${sns[@]}" ss -Hltn "sport = :$2" 2>/dev/null)" ] && break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	"${cns[@]}" taskset -c 1 "$test" -F -s "$size" -n "$1" -d "$CLI_DEV" -p "$2" $PT_FLAGS $extra \
		"$SRV_ADDR" > "$out/cli.log" 2>&1
	local rc=$?
	wait "$srv" || rc=1
	return $rc
}
# 1024: a multiple of the post list sizes perftest may be given (-l).
run 1024 19500 || echo "profile: the warm-up failed"

# Kernel symbols for perf: addresses readable, every event allowed.
sysctl -qw kernel.kptr_restrict=0 kernel.perf_event_paranoid=-1
perf record -a -g -e cpu-clock -F 4000 -o "$out/perf.data" -- \
	bash -c "$(declare -f run); out=$out test=$test size=$size SRV_DEV=$SRV_DEV CLI_DEV=$CLI_DEV \
		SRV_ADDR=$SRV_ADDR PT_FLAGS='$PT_FLAGS' extra='$extra' sns=(${sns[*]}) cns=(${cns[*]}); run $iters 19501" \
	2> "$out/perf-record.log"
rc=$?
cat /proc/kallsyms > "$out/kallsyms"
perf script -i "$out/perf.data" -F comm,ip,sym 2>/dev/null |
	python3 "$here/perfsyms.py" "$out/kallsyms" ${PROFILE_SYSTEM_MAP:+"$PROFILE_SYSTEM_MAP"} \
	> "$out/report.txt"
grep -E "^ *$size +[0-9]+ " "$out/cli.log"
"variant_${variant//-/_}_teardown" >/dev/null 2>&1
exit $rc
