#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Whose is the gap between ib_send_bw and ib_write_bw on loopback: srdma's receive work or the
# VM? ib_send_bw's server busy-polls its CQ, ib_write_bw's waits in a socket, and on a host
# with a CPU quota a second busy vCPU slows the first. Runs in the VM, ROUNDS rounds (4) of
# four perftest runs at SIZE bytes (8) and ITERS iterations (20000), pinned as `make bench`
# pins them, in one line per round:
#   write       ib_write_bw
#   write+spin  ib_write_bw with a busy loop on the server's vCPU
#   send        ib_send_bw
#   send-e      ib_send_bw with completion events (no busy-polling server)
# Measure on the bench kernel:
#   SRDMA_BUILD=$SRDMA_BENCH_BUILD tools/vm/run.sh --append tsc=reliable -- \
#       env SIZE=1048576 ITERS=1000 "$PWD/tools/bench/send-write.sh"
. "$(dirname "$0")/pair.sh"
modprobe srdma
srdma_pair_up
size=${SIZE:-8} iters=${ITERS:-20000} port=19600
# run PROG PORT ARGS...: prints the client's average MB/s.
run() {
	local p=$1 port=$2
	shift 2
	bench_perftest "$port" "$p" -s "$size" -n "$iters" "$@" | awk '{ print $4 }'
}
# `run` with a busy loop on vCPU 0, the server's.
spinning() {
	local spin out
	taskset -c 0 bash -c 'while :; do :; done' &
	spin=$!
	out=$(run "$@")
	kill "$spin"
	wait "$spin" 2> /dev/null
	echo "$out"
}
run ib_write_bw $port > /dev/null
for round in $(seq "${ROUNDS:-4}"); do
	p=$((port + 4 * round))
	echo "round $round, $size B: write $(run ib_write_bw $p)" \
		"write+spin $(spinning ib_write_bw $((p + 1)))" \
		"send $(run ib_send_bw $((p + 2)))" \
		"send-e $(run ib_send_bw $((p + 3)) -e)"
done
