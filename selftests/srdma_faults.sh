#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Fault injection on the create paths: srdma_faults.c makes each kernel allocation of each
# create verb fail once (failslab and fail_page_alloc through fail-nth). Every failure must
# unwind: nothing leaked (kmemleak), nothing in the kernel log, and the device still works.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout dmesg
load_srdma

dbg=/sys/kernel/debug
mountpoint -q "$dbg" || mount -t debugfs none "$dbg" 2>/dev/null
[ -d "$dbg/failslab" ] && [ -w /proc/self/fail-nth ] ||
	skip_all "no fault injection (CONFIG_FAILSLAB, CONFIG_FAULT_INJECTION_DEBUG_FS)"

srdma_pair

# fail-nth decides which call fails; these make every allocation eligible, quietly.
for f in failslab fail_page_alloc; do
	echo N > "$dbg/$f/ignore-gfp-wait"
	echo 0 > "$dbg/$f/verbose"
done
echo 0 > "$dbg/fail_page_alloc/min-order"
echo N > "$dbg/fail_page_alloc/ignore-gfp-highmem"

leak=0
if kmemleak_available; then
	kmemleak_clear
	leak=1
fi
mark="srdma_faults start $$"
echo "$mark" > /dev/kmsg
c_tap faults 900 srdma_faults srdma_a
no_user_qps_left
check "the device still moves data: ibv_rc_pingpong" \
	bash -c 'ibv_rc_pingpong -d srdma_a -g 1 -n 20 -p 18600 > /dev/null 2>&1 &
		 for _ in $(seq 100); do
			ss -Hltn "sport = :18600" | grep -q . && break
			sleep 0.1
		 done
		 ibv_rc_pingpong -d srdma_b -g 1 -n 20 -p 18600 10.51.0.1 > /dev/null && wait $!'
log=$(dmesg | sed -n "/$mark/,\$p")
check "kernel log: no warning, oops or trace from the injected failures" \
	eval '! grep -Eq "WARNING:|BUG:|Oops|Call Trace:|UBSAN:" <<<"$log"'
if [ "$leak" = 1 ]; then
	report=$(kmemleak_report)
	ours=$(grep -E -A20 'unreferenced object' <<<"$report" | grep -E \
		'srdma|ib_|rdma|uverbs|umem' || true)
	if [ -z "$ours" ]; then
		ok "kmemleak: nothing leaked by the failed creations"
	else
		fail "kmemleak: nothing leaked by the failed creations" "$report"
	fi
else
	skip "kmemleak: nothing leaked by the failed creations" "kmemleak not available"
fi

finish
