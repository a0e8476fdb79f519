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
. "${SRDMA_KSELFTEST:?no SRDMA_KSELFTEST: run through tools/vm/run.sh}/lib.sh"
modprobe srdma
srdma_pair
wait_for 10 has_gid srdma_a "$(ipv4_gid 10.51.0.1)"
wait_for 10 has_gid srdma_b "$(ipv4_gid 10.51.0.2)"
ga=$(gid_index srdma_a "$(ipv4_gid 10.51.0.1)") gb=$(gid_index srdma_b "$(ipv4_gid 10.51.0.2)")
size=${SIZE:-8} iters=${ITERS:-20000} port=19600
# Prints the client's average MB/s. Runs in a subshell ($(...)), so the port moves on by
# the round and the run, not by a counter.
run() {
	local p=$1 port=$2 srv
	shift 2
	timeout 120 taskset -c 0 "$p" -F -d srdma_a -x "$ga" -p "$port" -s "$size" -n "$iters" \
		"$@" > /tmp/srv.log 2>&1 &
	srv=$!
	wait_for 10 tcp_listening "$port"
	timeout 110 taskset -c 1 "$p" -F -d srdma_b -x "$gb" -p "$port" -s "$size" -n "$iters" \
		"$@" 10.51.0.1 > /tmp/cli.log 2>&1
	wait "$srv"
	grep -E "^ *[0-9]+ +[0-9]+ " /tmp/cli.log | tail -1 | awk '{ print $4 }'
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
