#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Moving data: rdma-core's pingpong programs between two srdma devices on this host (RC and UC,
# UD and SRQ; SEND through the SGE path, small and 64 KiB messages, received buffers checked).

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong rping timeout
load_srdma

srdma_pair

port=18515
# pingpong PROGRAM DESC ARGS...: server on srdma_a, client on srdma_b.
pingpong() {
	local prog=$1 desc=$2 out rc srv
	shift 2
	port=$((port + 1))
	out=$(mktemp)
	timeout 60 "$prog" -d srdma_a -g 1 -p "$port" "$@" > "$out" 2>&1 &
	srv=$!
	wait_for 20 tcp_listening "$port"
	if timeout 60 "$prog" -d srdma_b -g 1 -p "$port" "$@" 127.0.0.1 >> "$out" 2>&1 &&
		wait "$srv"; then
		ok "$desc"
	else
		rc=$?
		wait "$srv" 2>/dev/null
		fail "$desc" "exit $rc" "$(cat "$out")"
	fi
	rm -f "$out"
}

pingpong ibv_rc_pingpong "ibv_rc_pingpong: 100 iterations of 4 KiB, buffers checked" -n 100 -c
pingpong ibv_rc_pingpong "ibv_rc_pingpong: 200 iterations of 64 KiB, buffers checked" \
	-n 200 -s 65536 -c
pingpong ibv_rc_pingpong "ibv_rc_pingpong: 1 byte" -n 50 -s 1 -c
pingpong ibv_uc_pingpong "ibv_uc_pingpong: 100 iterations of 4 KiB, buffers checked" -n 100 -c
pingpong ibv_srq_pingpong "ibv_srq_pingpong: 16 QPs on one SRQ, buffers checked" -n 100 -c
pingpong ibv_ud_pingpong "ibv_ud_pingpong: 100 datagrams of 512 bytes" -n 100 -s 512
pingpong ibv_ud_pingpong "ibv_ud_pingpong: datagrams of one path MTU (1024 bytes)" -n 50 -s 1024
pingpong ibv_rc_pingpong "ibv_rc_pingpong -e: completion channel events" -n 100 -e -c
pingpong ibv_ud_pingpong "ibv_ud_pingpong -e: completion channel events" -n 50 -s 512 -e
# rdma_cm: connection management MADs through ib_mad's QP1 on each device.
rs=$(mktemp) rc_out=$(mktemp)
timeout 60 rping -s -a 10.51.0.1 -p 7174 -C 10 -v > "$rs" 2>&1 &
srv=$!
wait_for 20 cm_listening 7174
if timeout 60 rping -c -a 10.51.0.1 -p 7174 -C 10 -v > "$rc_out" 2>&1 && wait "$srv" &&
	[ "$(grep -c '^ping data: rdma-ping' "$rc_out")" -eq 10 ] &&
	[ "$(grep -c '^server ping data: rdma-ping' "$rs")" -eq 10 ]; then
	ok "rping over rdma_cm: 10 pings, data checked (-v)"
else
	wait "$srv" 2>/dev/null
	fail "rping over rdma_cm" "$(cat "$rc_out" "$rs")"
fi
rm -f "$rs" "$rc_out"
c_tap data 120 srdma_data srdma_a
c_tap events 120 srdma_events srdma_a
c_tap cqmod 120 srdma_cq_mod srdma_a srdma_b
c_tap null 120 srdma_null_mr srdma_a srdma_b
# Doorbell mode "poll": the same programs with the devices' pollers watching the doorbells.
hw() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }
mode=/sys/class/infiniband/srdma_a/doorbell_mode
check_eq "doorbell_mode: kick by default" kick "$(cat "$mode")"
check_fails_with "doorbell_mode: other values are refused" "Invalid argument" \
	bash -c "echo fast > $mode"
w0=$(hw srdma_a poller_wakeups) s0=$(hw srdma_a poller_sleeps)
pingpong ibv_rc_pingpong "kick mode: ibv_rc_pingpong" -n 100 -c
check_eq "kick mode: the poller never woke" "$w0 $s0" \
	"$(hw srdma_a poller_wakeups) $(hw srdma_a poller_sleeps)"
echo poll > "$mode"
echo poll > /sys/class/infiniband/srdma_b/doorbell_mode
check_eq "doorbell_mode: poll reads back" poll "$(cat "$mode")"
k0=$(hw srdma_a kicks) d0=$(hw srdma_a doorbells)
pingpong ibv_rc_pingpong "poll mode: ibv_rc_pingpong, buffers checked" -n 200 -c
pingpong ibv_ud_pingpong "poll mode: ibv_ud_pingpong" -n 50 -s 512
check "poll mode: the poller woke and slept" \
	test "$(hw srdma_a poller_wakeups)" -gt "$w0" -a "$(hw srdma_a poller_sleeps)" -gt "$s0"
# How many posts still kick depends on timing (the poller naps when the gaps between
# messages exceed its idle time), so the counts are shown, not asserted.
k1=$(hw srdma_a kicks) d1=$(hw srdma_a doorbells)
diag "poll mode: $((k1 - k0)) kicks for $((d1 - d0)) doorbells"
c_tap data-poll 120 srdma_data srdma_a
c_tap edges-poll 60 srdma_edges srdma_a srdma_b poller
c_tap events-poll 120 srdma_events srdma_a
echo kick > "$mode"
echo kick > /sys/class/infiniband/srdma_b/doorbell_mode
c_tap fuzz 300 srdma_fuzz srdma_a 3000
no_user_qps_left

finish
