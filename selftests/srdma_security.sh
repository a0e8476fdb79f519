#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The trust boundary (Documentation/infiniband/srdma.rst, "Security model"), between two srdma
# devices on this host: srdma_attack.c's victim and attacker processes, srdma_edges.c's huge
# messages and QPs destroyed with work pending or arriving (the latter read from srdma's
# tracepoints), srdma_limits.c's objects up to and past each
# advertised limit, and the kernel log clean of anything they might provoke.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout dmesg
load_srdma

srdma_pair
# A second address on srdma_a's netdev: a source GID that the victim's address vector does not
# name.
ip addr add 10.51.0.11/24 dev sd0
wait_for 5 has_gid srdma_a "$(ipv4_gid 10.51.0.11)" || skip_all "no GID for a second address"

# srdma_edges reads the order of a destroy and the CQEs around it from the trace.
T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" 2>/dev/null

mark="srdma_security start $$"
echo "$mark" > /dev/kmsg
c_tap attack 300 srdma_attack srdma_a srdma_b
c_tap edges 300 srdma_edges srdma_a srdma_b
c_tap limits 900 srdma_limits srdma_a
# Ring memory is charged to the creating process's memory cgroup: 64 CQs of 2 MiB do not fit
# under a 32 MiB limit.
cg=/sys/fs/cgroup
mountpoint -q "$cg" || mount -t cgroup2 none "$cg" 2>/dev/null
if grep -qw memory "$cg/cgroup.controllers" 2>/dev/null && prog srdma_limits; then
	echo +memory > "$cg/cgroup.subtree_control" 2>/dev/null
	mkdir -p "$cg/srdma-limits"
	echo 32M > "$cg/srdma-limits/memory.max"
	tap_run memcg 300 bash -c \
		'echo $$ > "$1/srdma-limits/cgroup.procs" && exec "$2" srdma_a rings 64' \
		_ "$cg" "$PROG"
	rmdir "$cg/srdma-limits"
else
	skip "memcg: ring memory charged to the cgroup" "no cgroup v2 memory controller"
fi

# No process floods the kernel log: what it does wrong is logged at most 10 times per 5 seconds
# per device (the kernel's default limit), each line naming the device, and the count of what
# was left out follows.
flood="srdma_security flood $$"
echo "$flood" > /dev/kmsg
overruns() {
	dmesg | sed -n "/$flood/,\$p" |
		grep -Ec \
			"srdma: srdma_[ab]: CQ overflow: the (send|receive) CQ of QP [0-9]+ is full"
}
if prog srdma_events; then
	# A fresh interval: the attacks above may have used some of srdma_a's.
	sleep 6
	tap_run flood-a 120 "$PROG" srdma_a overrun 40
	check_eq "log flood: 40 lost completions on srdma_a, 10 lines" 10 "$(overruns)"
	tap_run flood-b 120 "$PROG" srdma_b overrun 3
	check_eq "log flood: srdma_b has a limit of its own (3 more lines)" 13 "$(overruns)"
	sleep 6
	tap_run flood-a2 120 "$PROG" srdma_a overrun 1
	check_eq "log flood: after the interval srdma_a logs again" 14 "$(overruns)"
	check "log flood: the 30 left out are counted, for srdma_a" \
		eval 'dmesg | sed -n "/$flood/,\$p" | grep -q "srdma_a: 30 callbacks suppressed"'
fi
no_user_qps_left
log=$(dmesg | sed -n "/$mark/,\$p")
check "kernel log: no warning or oops during the attacks" \
	eval '! grep -Eq "WARNING:|BUG:|Oops|Call Trace:" <<<"$log"'

finish
