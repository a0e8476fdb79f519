#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The trust boundary (Documentation/infiniband/srdma.rst, "Security model"), between two srdma
# devices on this host: srdma_attack.c's victim and attacker processes, srdma_edges.c's huge
# messages and a QP destroyed with work pending, and the kernel log clean of anything they
# might provoke.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout dmesg
load_srdma

srdma_pair
# A second address on srdma_a's netdev: a source GID that the victim's address vector does not
# name.
ip addr add 10.51.0.11/24 dev sd0
wait_for 5 has_gid srdma_a "$(ipv4_gid 10.51.0.11)" || skip_all "no GID for a second address"

mark="srdma_security start $$"
echo "$mark" > /dev/kmsg
c_tap attack 300 srdma_attack srdma_a srdma_b
c_tap edges 300 srdma_edges srdma_a srdma_b
no_user_qps_left
log=$(dmesg | sed -n "/$mark/,\$p")
check "kernel log: no warning or oops during the attacks" \
	eval '! grep -Eq "WARNING:|BUG:|Oops|Call Trace:" <<<"$log"'

finish
