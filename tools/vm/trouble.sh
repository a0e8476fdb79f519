#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Inside the VM: the faults of the troubleshooting guide (Documentation/infiniband/srdma.rst,
# "Troubleshooting"), each provoked with stock tools, and what the counters, the kernel log,
# `rdma res -dd` and the tracepoints show of it. Prints each command and its output; the guide
# quotes them.
#   make vm CMD='tools/vm/trouble.sh [N...]'   (scenario numbers; all by default)
# The kselftests' helpers and programs, as `make ktest` installed them (make vm does).
ksft=${SRDMA_KSELFTEST:?no SRDMA_KSELFTEST: run through make vm}
. "$ksft/lib.sh"
load_srdma
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T"

# show CMD...: prints the command as typed, then its output.
show() {
	echo "\$ $*"
	"$@" 2>&1
	echo
}
# moved DEV: the hw_counters of DEV that are not 0.
moved() {
	grep -H . /sys/class/infiniband/"$1"/ports/1/hw_counters/* | grep -v -e ':0$' -e lifespan |
		sed 's|.*/||'
}
klog_mark() { echo "trouble: $1" > /dev/kmsg; }
klog_since() { dmesg | sed -n "/trouble: $1/,\$p" | grep -v "trouble: $1" | cut -c16-; }
traced_on() { echo > "$T/trace"; echo "$1" > "$T/events/srdma/$2/filter"; echo 1 > "$T/events/srdma/$2/enable"; }
traced_off() { echo 0 > "$T/events/srdma/enable"; echo 0 > "$T/events/srdma/$1/filter"; }
trace_lines() { grep -v '^#' "$T/trace" | head -"$1"; }

scenario_1() {
	echo "=== 1. The receiver posts too slowly: RNR NAKs"
	srdma_pair_up
	traced_on 0 srdma_rnr_wait
	timeout 120 ib_send_bw -d srdma_a -x "$ga" -r 1 -s 4096 -n 2000 -p 18101 >/dev/null 2>&1 &
	wait_for 10 tcp_listening 18101
	timeout 120 ib_send_bw -d srdma_b -x "$gb" -t 64 -s 4096 -n 2000 -p 18101 10.51.0.1 > /tmp/bw.log 2>&1
	wait
	echo "\$ ib_send_bw -d srdma_a -x $ga -r 1 -s 4096 -n 2000 &   # the server: 1 receive at a time"
	echo "\$ ib_send_bw -d srdma_b -x $gb -t 64 -s 4096 -n 2000 10.51.0.1"
	grep -A1 '#bytes' /tmp/bw.log
	echo "\$ grep . /sys/class/infiniband/srdma_{a,b}/ports/1/hw_counters/* | grep -v ':0\$'"
	for d in srdma_a srdma_b; do moved "$d" | sed "s/^/$d: /"; done
	echo
	echo "\$ cat /sys/kernel/tracing/trace   # srdma_rnr_wait on"
	trace_lines 3
	traced_off srdma_rnr_wait
}

scenario_2() {
	echo "=== 2. The CQ is too small for the work: CQ overflow"
	prog srdma_events
	klog_mark cq
	echo "\$ srdma_events srdma_a overrun 3   # selftests/: 3 more completions than the CQ holds"
	"$PROG" srdma_a overrun 3 >/dev/null
	echo "\$ dmesg | grep srdma"
	klog_since cq | grep srdma
	echo "\$ cat /sys/class/infiniband/srdma_a/ports/1/hw_counters/cq_overflows"
	cat /sys/class/infiniband/srdma_a/ports/1/hw_counters/cq_overflows
}

scenario_3() {
	echo "=== 3. An error completion: a message longer than the receive buffer"
	srdma_pair_up
	klog_mark len
	traced_on 'status != 0' srdma_cqe
	timeout 60 ibv_rc_pingpong -d srdma_a -g "$ga" -s 1024 -n 1 -p 18102 > /tmp/pp-srv.log 2>&1 &
	wait_for 10 tcp_listening 18102
	echo "\$ ibv_rc_pingpong -d srdma_b -g $gb -s 4096 -n 1 10.51.0.1   # server: -s 1024"
	timeout 60 ibv_rc_pingpong -d srdma_b -g "$gb" -s 4096 -n 1 -p 18102 10.51.0.1 2>&1 |
		grep -v address
	wait
	echo "the server: $(grep -v address /tmp/pp-srv.log)"
	echo "\$ dmesg | grep srdma"
	klog_since len | grep srdma
	for d in srdma_a srdma_b; do moved "$d" | grep err_ | sed "s/^/$d: /"; done
	echo "\$ cat /sys/kernel/tracing/trace   # srdma_cqe with filter 'status != 0'"
	trace_lines 4
	traced_off srdma_cqe
}

scenario_4() {
	echo "=== 4. The peer went away (on the wire): retransmits, then RETRY_EXC_ERR"
	srdma_pair_cleanup
	NS=trouble_a PEER_NS=trouble_b
	netns_veth $NS ta 10.64.0.1 $PEER_NS tb 10.64.0.2
	ip netns exec $NS rdma link add srdma_ta type srdma netdev ta
	ip netns exec $PEER_NS rdma link add srdma_tb type srdma netdev tb
	wait_for 10 has_gid srdma_ta "$(ipv4_gid 10.64.0.1)"
	wait_for 10 has_gid srdma_tb "$(ipv4_gid 10.64.0.2)"
	ta=$(gid_index srdma_ta "$(ipv4_gid 10.64.0.1)")
	tb=$(gid_index srdma_tb "$(ipv4_gid 10.64.0.2)")
	klog_mark wire
	echo > "$T/trace"
	echo 1 > "$T/events/srdma/srdma_retransmit/enable"
	echo 1 > "$T/events/srdma/srdma_drop/enable"
	# `ip netns exec` becomes the server: its PID is the process to kill.
	ip netns exec $NS ib_write_bw -d srdma_ta -x "$ta" -D 30 -p 18103 >/dev/null 2>&1 &
	srv=$!
	ip netns exec $NS bash -c '. '"$ksft"'/lib.sh >/dev/null; wait_for 10 tcp_listening 18103'
	ip netns exec $PEER_NS timeout 60 ib_write_bw -d srdma_tb -x "$tb" -D 30 -p 18103 10.64.0.1 \
		> /tmp/bw-cli.log 2>&1 &
	cli=$!
	sleep 8
	kill -9 $srv
	wait $srv $cli 2>/dev/null
	echo "\$ ib_write_bw -d srdma_tb -x $tb -D 30 10.64.0.1   # the server killed after 8 s"
	grep -v -e address -e GID -e '^ *[A-Z].*:' -e '^-*$' /tmp/bw-cli.log
	echo "\$ dmesg | grep srdma"
	klog_since wire | grep srdma
	echo "\$ grep . .../srdma_tb/.../hw_counters/* | grep -v ':0\$'   # the client's"
	moved srdma_tb
	echo "\$ grep . .../srdma_ta/.../hw_counters/* | grep -v ':0\$'   # the server's"
	moved srdma_ta
	echo "\$ cat /sys/kernel/tracing/trace   # srdma_retransmit and srdma_drop on"
	grep -v '^#' "$T/trace" | grep srdma_retransmit | head -3
	grep -v '^#' "$T/trace" | grep srdma_drop | head -3
	echo 0 > "$T/events/srdma/enable"
	ip netns exec $NS rdma link delete srdma_ta
	ip netns exec $PEER_NS rdma link delete srdma_tb
	ip netns del $NS; ip netns del $PEER_NS
}

scenario_5() {
	echo "=== 5. Where the time goes: perf on a ping-pong"
	srdma_pair_up
	timeout 60 ibv_rc_pingpong -d srdma_a -g "$ga" -s 64 -n 2 -p 18104 >/dev/null 2>&1 &
	wait_for 10 tcp_listening 18104
	echo "\$ perf record -a -e 'srdma:*' -- ibv_rc_pingpong -d srdma_b -g $gb -s 64 -n 2 10.51.0.1"
	perf record -q -a -e 'srdma:*' -o /tmp/perf.data -- \
		timeout 60 ibv_rc_pingpong -d srdma_b -g "$gb" -s 64 -n 2 -p 18104 10.51.0.1 >/dev/null 2>&1
	wait
	echo "\$ perf script -i /tmp/perf.data -F comm,time,event,trace"
	perf script -i /tmp/perf.data -F comm,time,event,trace 2>/dev/null | grep -v srdma_qp_state | head -14
}

scenario_6() {
	echo "=== 6. QPs and CQs at work: rdma res -dd"
	prog srdma_events
	timeout 60 ib_send_bw -d srdma_a -x "$ga" -s 65536 -D 20 -p 18105 >/dev/null 2>&1 &
	wait_for 10 tcp_listening 18105
	timeout 60 ib_send_bw -d srdma_b -x "$gb" -s 65536 -D 20 -p 18105 10.51.0.1 >/dev/null 2>&1 &
	sleep 8
	show rdma -dd res show qp link srdma_b/1 type RC
	show rdma -dd res show cq dev srdma_b
	wait
}

for n in ${@:-1 2 3 4 5 6}; do
	"scenario_$n"
	echo
done
