#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# What srdma shows of its objects in `rdma resource show qp|cq|mr -dd` (the driver's details),
# for the QP, CQ and MR of selftests/srdma_target.c, whose values the test knows: a connected
# RC QP expecting PSN 0x1000 with nothing posted, a CQ of 4 entries, an MR of 256 pages. Once
# with the device's doorbell in kick mode, once in poll mode.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair
prog srdma_target || finish

ga=$(gid_index srdma_a "$(ipv4_gid 10.51.0.1)")
# The peer srdma_target connects to: srdma_b's GID (nothing is sent).
peer_gid=00000000000000000000ffff0a330002

# shown KIND PID: the resource of KIND (qp, cq, mr) that process PID holds on srdma_a, as
# NAME=VALUE lines from rdma's JSON output (the driver's details are named drv_NAME).
shown() {
	rdma -j -dd resource show "$1" 2>&1 | python3 -c '
import json, sys
for r in json.load(sys.stdin):
    if r.get("ifname") == "srdma_a" and str(r.get("pid")) == sys.argv[1]:
        print("\n".join(f"{k}={v}" for k, v in r.items()))
        break
' "$2"
}
# field NAME SHOWN: the value of NAME in what shown printed.
field() {
	sed -n "s/^$1=//p" <<<"$2"
}

for mode in kick poll; do
	echo "$mode" > /sys/class/infiniband/srdma_a/doorbell_mode
	coproc target { exec "$PROG" srdma_a "$ga" 2>&1; }
	read -r -t 30 qpn _ rkey _ <&"${target[0]}"
	echo "123 1000 $peer_gid" >&"${target[1]}"
	read -r -t 30 connected <&"${target[0]}"
	if [ "$connected" != connected ]; then
		fail "$mode: srdma_target connected" "it said: ${qpn:-nothing} ${connected:-}"
		continue
	fi
	qp=$(shown qp "$target_PID")
	check_eq "$mode: rdma res -dd shows the QP" $((16#$qpn)) "$(field lqpn "$qp")"
	for want in sq_pi=0 sq_ci=0 rq_pi=0 rq_ci=0 doorbell=$mode next_psn=0 expected_psn=4096; do
		check_eq "$mode: QP ${want%=*}" "${want#*=}" "$(field "drv_${want%=*}" "$qp")"
	done
	check_eq "$mode: no RNR wait shown" "" "$(field drv_rnr_retries_left "$qp")"

	cq=$(shown cq "$target_PID")
	depth=$(field drv_depth "$cq")
	check "$mode: rdma res -dd shows the CQ, deep enough for the 4 entries asked ($depth)" \
		test "${depth:-0}" -ge 4
	for want in pi=0 ci=0 armed=no overrun=0; do
		check_eq "$mode: CQ ${want%=*}" "${want#*=}" "$(field "drv_${want%=*}" "$cq")"
	done

	mr=$(shown mr "$target_PID")
	check_eq "$mode: rdma res -dd shows the MR" user "$(field drv_memory "$mr")"
	check_eq "$mode: MR pages" 256 "$(field drv_pages "$mr")"
	check_eq "$mode: MR key byte is the rkey's" $((16#$rkey & 0xff)) \
		"$(field drv_key_byte "$mr")"

	echo done >&"${target[1]}"
	wait "$target_PID"
done
echo kick > /sys/class/infiniband/srdma_a/doorbell_mode
no_user_qps_left

finish
