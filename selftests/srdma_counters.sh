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
		fail "kernel log: $1" "no line matches: srdma: $2" "$(grep srdma <<<"$log" | tail -20)"
	fi
}
logged "a receive too short: WC error on srdma_b's RQ" \
	"srdma_b: QP [0-9]+: WC error: local length error \(status 1\) on the RQ; QP moved to the error state"
logged "an unknown opcode: WC error on srdma_a's SQ" \
	"srdma_a: QP [0-9]+: WC error: local QP operation error \(status 2\) on the SQ; QP moved"
logged "a producer index beyond the ring: ring garbage, QP fatal" \
	"srdma_a: QP [0-9]+: ring garbage: SQ producer index 1000 is 1000 WQEs ahead of consumer index 0, more than the ring's [0-9]+; QP fatal error"

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
		[ "$(cat "$file" 2>/dev/null)" = "$2" ] || echo "$1: rdma $2, sysfs $(cat "$file" 2>&1)"
		n=$((n + 1))
		shift 2
	done
	files=$(ls "/sys/class/infiniband/$dev/ports/1/hw_counters" | grep -v -x -c lifespan)
	[ "$n" -eq "$files" ] && [ "$n" -eq 34 ] || echo "$n counters from rdma, $files in sysfs"
}
for dev in srdma_a srdma_b; do
	for _ in $(seq 20); do
		bad=$(compare "$dev")
		[ -z "$bad" ] && break
		sleep 0.1
	done
	if [ -z "$bad" ]; then
		ok "$dev: rdma statistic agrees with sysfs on all 25 counters"
	else
		fail "$dev: rdma statistic agrees with sysfs" "$bad"
	fi
done
check_eq "srdma_a: sent_pkts moved" "yes" \
	"$([ "$(cat /sys/class/infiniband/srdma_a/ports/1/hw_counters/sent_pkts)" -gt 0 ] && echo yes)"

finish
