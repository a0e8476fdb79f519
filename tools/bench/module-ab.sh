#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What a build-time choice of the module costs: runs in the VM and loads, in turn, the built
# srdma.ko of the booted kernel ("built") and the modules named on the command line
# (LABEL=PATH), ROUNDS rounds each (3, `env ROUNDS=5` in the VM command), and prints
# perftest's figures for all, pinned as `make bench` pins them: the runs TESTS names (`env
# TESTS="write_bw1M send_bw1M"`; the table below). Measure on the bench kernel.
# What the tracepoints cost when off, against a module whose events fire nothing:
#   SRDMA_NO_TRACE_EVENTS=1 make bench-kernel
#   cp "$SRDMA_BENCH_BUILD/drivers/infiniband/sw/srdma/srdma.ko" /tmp/srdma-notrace.ko
#   make bench-kernel
#   SRDMA_BUILD=$SRDMA_BENCH_BUILD tools/vm/run.sh --append tsc=reliable -- env ROUNDS=5 \
#       "$PWD/tools/bench/module-ab.sh" notrace=/tmp/srdma-notrace.ko
# What counting costs: the same with the counters' adds compiled out, by building with
# tools/bench/no-counting.patch applied (`git apply`, and `git apply -R` after the copy).
# The inline path against the SGE path (tools/bench/inline.c, built on the host with
# `cc -O2 -o /tmp/inline tools/bench/inline.c -libverbs` and named by INLINE): the runs
# MODE_KIND_SIZE, e.g. `env INLINE=/tmp/inline TESTS="inline_lat_256 sge_lat_256
# inline_bw_256 sge_bw_256"` (typical latency in µs, bandwidth in MB/s).
# On the wire (RoCEv2 packets between two namespaces, make bench's srdma-wire): `env WIRE=1`;
# with NETEM as well, both ends of the veth send through tc-netem with those parameters, to see
# what recovering from losses costs: `env WIRE=1 NETEM="loss 0.1%"`.
# What moved the figures: `env COUNTERS="rcvd_rnr_err out_of_sequence"` prints after each figure
# how much each of those hw_counters moved during its run, summed over the two devices.
[ $# -gt 0 ] || { echo "usage: module-ab.sh LABEL=KO..." >&2; exit 2; }
. "$(dirname "$0")/pair.sh"
# What srdma.ko needs (ib_uverbs, the UDP tunnel) is loaded once; insmod does not resolve it.
modprobe srdma && rmmod srdma
port=19500
# counters: the sum over the pair's two devices of each hw_counter COUNTERS names.
counters() {
	local c d sum
	for c in ${COUNTERS:-}; do
		sum=0
		for d in $pair_a $pair_b; do
			sum=$((sum + $(cat "/sys/class/infiniband/$d/ports/1/hw_counters/$c")))
		done
		echo "$c $sum"
	done
}
# Prints the typical latency (µs) of a latency test, else the average bandwidth (MB/s), then
# what the COUNTERS moved (name+N).
run() {
	local p=$1 before
	port=$((port + 1))
	before=$(counters)
	bench_perftest $port "$@" | awk -v p="$p" '{ if (p ~ /lat/) print $5; else print $4 }'
	[ -z "${COUNTERS:-}" ] ||
		paste <(echo "$before") <(counters) | awk '{ printf " %s+%d", $1, $4 - $2 }'
}
# run_inline MODE KIND SIZE: inline.c's figure of KIND (lat, bw) for MODE (inline, sge).
run_inline() {
	taskset -c 1 "${INLINE:?INLINE names the inline.c binary}" srdma_a srdma_b "$ga" "$3" |
		awk -v m="$1" -v k="$2" '$1 == k && $2 == m { print $4 }'
}
# Bandwidth runs last as long as make bench's (guest.sh): 4 s, of which perftest measures the
# middle 2 s, whatever the module's speed.
bw_time="-D 4"
# The runs, by name; TESTS (environment) picks some, in order.
declare -A runs=(
	[send_lat8]="ib_send_lat -s 8 -n 3000"
	[write_lat8]="ib_write_lat -s 8 -n 3000"
	[read_lat8]="ib_read_lat -s 8 -n 3000"
	[send_lat64K]="ib_send_lat -s 65536 -n 1000"
	[write_lat1M]="ib_write_lat -s 1048576 -n 200"
	[send_bw8]="ib_send_bw -s 8 $bw_time"
	[write_bw8]="ib_write_bw -s 8 $bw_time"
	[send_bw64]="ib_send_bw -s 64 $bw_time"
	[write_bw64_l32]="ib_write_bw -s 64 $bw_time -l 32 -Q 32"
	[write_bw64K]="ib_write_bw -s 65536 $bw_time"
	[send_bw1M]="ib_send_bw -s 1048576 $bw_time"
	[write_bw1M]="ib_write_bw -s 1048576 $bw_time"
	[read_bw64K]="ib_read_bw -s 65536 $bw_time"
	[read_bw1M]="ib_read_bw -s 1048576 $bw_time"
)
tests=${TESTS:-"send_lat8 write_lat8 send_bw64 write_bw64_l32 write_bw64K"}
mods=("built=$SRDMA_BUILD/drivers/infiniband/sw/srdma/srdma.ko" "$@")
for round in $(seq "${ROUNDS:-3}"); do
# Odd rounds in the order given, even rounds reversed: what the position in a round does to the
# figures (a host that warms up or quietens) falls on every module alike.
order=("${mods[@]}")
if [ $((round % 2)) = 0 ]; then
	order=()
	for ((i = ${#mods[@]} - 1; i >= 0; i--)); do order+=("${mods[i]}"); done
fi
for arg in "${order[@]}"; do
	mod=${arg%%=*}
	insmod "${arg#*=}"
	if [ "${WIRE:-0}" = 1 ]; then
		bench_wire_up
		# shellcheck disable=SC2086 # NETEM is tc's words
		[ -z "${NETEM:-}" ] || for n in a b; do
			ip netns exec "bench_$n" tc qdisc add dev "w$n" root netem $NETEM
		done
	else
		srdma_pair_up
	fi
	line="$mod round $round:"
	for t in $tests; do
		case $t in
		inline_* | sge_*)
			IFS=_ read -r m k s <<< "$t"
			line+=" $t $(run_inline "$m" "$k" "$s")"
			;;
		*) line+=" $t $(run ${runs[$t]:?"no test $t (module-ab.sh names them)"} | tr -d '\n')" ;;
		esac
	done
	echo "$line"
	if [ "${WIRE:-0}" = 1 ]; then bench_wire_down; else srdma_pair_cleanup; fi
	rmmod srdma
done
done
