#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Hardware counters: exact deltas for known work between two srdma devices on a veth pair
# (srdma_counters.c), and `rdma statistic` agreeing with sysfs hw_counters.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair

hw=/sys/class/infiniband/srdma_a/ports/1/hw_counters
check "sysfs: hw_counters/ exists with a lifespan" test -r "$hw/lifespan"
nonzero=$(cd "$hw" && for f in *; do
	[ "$f" = lifespan ] || [ "$(cat "$f")" = 0 ] || echo "$f"
done)
check_eq "a new device counts nothing yet" "" "$nonzero"

# The program's diagnostics say which counter moved how; tap_run shows them on a failure.
mark="srdma_counters start $$"
echo "$mark" > /dev/kmsg
c_tap counters 300 srdma_counters srdma_a srdma_b

# The kernel log names the device and the QP of each fault the program made (log.rs); fewer
# than the limit of 10 lines per device.
log=$(dmesg | sed -n "/$mark/,\$p")
logged() {
	if grep -Eq "srdma: $2" <<<"$log"; then
		ok "kernel log: $1"
	else
		fail "kernel log: $1" "no line matches: srdma: $2" \
			"$(grep srdma <<<"$log" | tail -20)"
	fi
}
logged "a receive too short: WC error on srdma_b's RQ" \
	"srdma_b: QP [0-9]+: WC error: local length error \(status 1\) on the RQ; "\
"QP moved to the error state"
logged "an unknown opcode: WC error on srdma_a's SQ" \
	"srdma_a: QP [0-9]+: WC error: local QP operation error \(status 2\) on the SQ; QP moved"
logged "a producer index beyond the ring: ring garbage, QP fatal" \
	"srdma_a: QP [0-9]+: ring garbage: SQ producer index 1000 is 1000 WQEs ahead of "\
"consumer index 0, more than the ring's [0-9]+; QP fatal error"

# `rdma statistic show link DEV/1` prints "link DEV/1 NAME VALUE NAME VALUE ...". sysfs may
# serve values cached for a lifespan (10 ms of jiffies), so compare until they agree.
# compare DEV: prints the disagreements, nothing when every counter agrees.
compare() {
	local dev=$1 stat n=0 files file
	stat=$(rdma statistic show link "$dev/1" 2>&1)
	set -- $stat
	shift 2
	while [ $# -ge 2 ]; do
		file=/sys/class/infiniband/$dev/ports/1/hw_counters/$1
		[ "$(cat "$file" 2>/dev/null)" = "$2" ] || echo \
			"$1: rdma $2, sysfs $(cat "$file" 2>&1)"
		n=$((n + 1))
		shift 2
	done
	files=$(ls "/sys/class/infiniband/$dev/ports/1/hw_counters" | grep -v -x -c lifespan)
	[ "$n" -eq "$files" ] && [ "$n" -eq 36 ] || echo "$n counters from rdma, $files in sysfs"
}
for dev in srdma_a srdma_b; do
	for _ in $(seq 20); do
		bad=$(compare "$dev")
		[ -z "$bad" ] && break
		sleep 0.1
	done
	if [ -z "$bad" ]; then
		ok "$dev: rdma statistic agrees with sysfs on all 36 counters"
	else
		fail "$dev: rdma statistic agrees with sysfs" "$bad"
	fi
done
check_eq "srdma_a: sent_pkts moved" "yes" \
	"$([ "$(cat "$SYSFS_IB/srdma_a/ports/1/hw_counters/sent_pkts")" -gt 0 ] && echo yes)"


# Per-QP counters (`rdma statistic qp`): while a QP is bound to a counter, what it counts shows
# there; the port's figures (sysfs, `rdma statistic show`) stay the exact totals across bind,
# unbind, auto mode and destroy, also while traffic runs during a bind or unbind.
prog srdma_qpstat || finish
coproc QPS { exec "$PROG" srdma_a srdma_b 2>&1; }
qps_pid=$QPS_PID qps_in=${QPS[1]}
# ask CMD...: sends a command to srdma_qpstat and prints its answer.
ask() {
	local reply
	echo "$*" >&"${QPS[1]}"
	read -r -t 120 reply <&"${QPS[0]}" && echo "$reply"
}
# port DEV NAME: a counter of DEV's port, once sysfs's lifespan (10 ms) has passed.
port() {
	sleep 0.05
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"
}
# stat DEV CNTN NAME: counter CNTN's value of NAME in `rdma statistic qp show`.
stat() {
	rdma statistic qp show link "$1/1" cntn "$2" | tr ' ' '\n' | sed -n "/^$3\$/{n;p;q}"
}
# cntn DEV QPN: the counter QPN is bound to, from `rdma statistic qp show`.
cntn() {
	rdma statistic qp show link "$1/1" lqpn "$2" | sed -n 's/.* cntn \([0-9]*\) .*/\1/p' \
		| head -1
}
# counters DEV: how many counters `rdma statistic qp show` lists for DEV.
counters() {
	rdma statistic qp show link "$1/1" | grep -c " cntn "
}

set -- $(ask pair)
check_eq "qpstat: a QP pair" pair "${1:-}"
qa=${3:-0} qb=${4:-0}
sent0=$(port srdma_a sent_pkts) sends0=$(port srdma_a rdma_sends)
rcvd0=$(port srdma_b rcvd_pkts) recvs0=$(port srdma_b rdma_recvs)
check_eq "qpstat: 10 SENDs unbound" "sent 0 10" "$(ask send 0 10)"
check_eq "port: sent_pkts +10 before any binding" $((sent0 + 10)) "$(port srdma_a sent_pkts)"

check "rdma statistic qp bind: the requester QP" rdma statistic qp bind link srdma_a/1 lqpn "$qa"
check "rdma statistic qp bind: the responder QP" rdma statistic qp bind link srdma_b/1 lqpn "$qb"
ca=$(cntn srdma_a "$qa") cb=$(cntn srdma_b "$qb")
check "rdma statistic qp show: the QPs have counters" test -n "$ca" -a -n "$cb"
check_eq "a new counter counts nothing yet" 0 "$(stat srdma_a "$ca" sent_pkts)"
check_eq "qpstat: 7 SENDs bound" "sent 0 7" "$(ask send 0 7)"
check_eq "counter: sent_pkts 7" 7 "$(stat srdma_a "$ca" sent_pkts)"
check_eq "counter: rdma_sends 7" 7 "$(stat srdma_a "$ca" rdma_sends)"
check_eq "counter: rcvd_pkts 7 at the responder" 7 "$(stat srdma_b "$cb" rcvd_pkts)"
check_eq "counter: rdma_recvs 7 at the responder" 7 "$(stat srdma_b "$cb" rdma_recvs)"
check_eq "port: sent_pkts +17 with the QP bound" $((sent0 + 17)) "$(port srdma_a sent_pkts)"
check_eq "port: rdma_recvs +17 with the QP bound" $((recvs0 + 17)) "$(port srdma_b rdma_recvs)"
check_eq "rdma statistic show: the same total as sysfs" $((sent0 + 17)) \
	"$(rdma statistic show link srdma_a/1 | tr ' ' '\n' | sed -n '/^sent_pkts$/{n;p;q}')"

check "rdma statistic qp unbind: the requester QP" \
	rdma statistic qp unbind link srdma_a/1 cntn "$ca" lqpn "$qa"
check_eq "a counter without QPs goes" 0 "$(counters srdma_a)"
check_eq "port: sent_pkts +17 after the unbind" $((sent0 + 17)) "$(port srdma_a sent_pkts)"
check_eq "qpstat: 5 SENDs unbound again" "sent 0 5" "$(ask send 0 5)"
check_eq "port: sent_pkts +22" $((sent0 + 22)) "$(port srdma_a sent_pkts)"
check_eq "port: rdma_sends +22" $((sends0 + 22)) "$(port srdma_a rdma_sends)"

# A racing operator: bind and unbind over and over while 400 SENDs run.
echo "send 0 400" >&"${QPS[1]}"
races=0
for _ in $(seq 8); do
	rdma statistic qp bind link srdma_a/1 lqpn "$qa" 2>/dev/null &&
		c=$(cntn srdma_a "$qa") &&
		rdma statistic qp unbind link srdma_a/1 cntn "$c" lqpn "$qa" 2>/dev/null &&
		races=$((races + 1))
done
read -r -t 300 reply <&"${QPS[0]}"
check_eq "qpstat: 400 SENDs while the QP was bound and unbound" "sent 0 400" "$reply"
check "8 binds and unbinds during the traffic" test "$races" -eq 8
check_eq "port: sent_pkts +422, exact across the races" $((sent0 + 422)) "$(port srdma_a sent_pkts)"

# Auto mode groups new QPs by type at RESET->INIT; destroying the last QP frees the counter.
check "rdma statistic qp set auto type on" rdma statistic qp set link srdma_a/1 auto type on
set -- $(ask pair)
qa2=${3:-0}
c2=$(cntn srdma_a "$qa2")
check "auto mode: the new QP has a counter" test -n "$c2"
check_eq "qpstat: 3 SENDs on the new pair" "sent 1 3" "$(ask send 1 3)"
check_eq "auto counter: sent_pkts 3" 3 "$(stat srdma_a "$c2" sent_pkts)"
check_eq "port: sent_pkts +425" $((sent0 + 425)) "$(port srdma_a sent_pkts)"
check_eq "qpstat: the new pair destroyed" "destroyed 1" "$(ask destroy 1)"
check_eq "the auto counter went with its QP" 0 "$(counters srdma_a)"
check_eq "port: sent_pkts +425 after the destroy" $((sent0 + 425)) "$(port srdma_a sent_pkts)"
check "rdma statistic qp set auto off" rdma statistic qp set link srdma_a/1 auto off

# A QP destroyed while bound by hand.
check "bind the first pair again" rdma statistic qp bind link srdma_a/1 lqpn "$qa"
check_eq "qpstat: 2 SENDs bound" "sent 0 2" "$(ask send 0 2)"
check_eq "qpstat: the bound pair destroyed" "destroyed 0" "$(ask destroy 0)"
check_eq "no counters left" 0/0 "$(counters srdma_a)/$(counters srdma_b)"
check_eq "port: sent_pkts +427 in all" $((sent0 + 427)) "$(port srdma_a sent_pkts)"
check_eq "port: rcvd_pkts +427 in all at the responder" $((rcvd0 + 427)) \
	"$(port srdma_b rcvd_pkts)"
check_eq "port: rdma_recvs +427 in all at the responder" $((recvs0 + 427)) \
	"$(port srdma_b rdma_recvs)"
eval "exec $qps_in>&-"
wait "$qps_pid"
check_eq "qpstat: exited cleanly" 0 "$?"

finish
