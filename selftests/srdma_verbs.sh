#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Userspace verbs on srdma: the stock rdma-core tools see the device through the srdma
# provider; srdma_verbs.c creates objects and checks their errors, srdma_states.c posts in each
# QP state; `rdma res` tracks them and a killed process leaves nothing behind.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip ibv_devices ibv_devinfo cc
load_srdma

A=sv0 B=sv1
cleanup() {
	[ -n "${holder:-}" ] && kill -9 "$holder" 2>/dev/null
	rdma link delete srdma0 2>/dev/null
	ip link del "$A" 2>/dev/null
}
trap cleanup EXIT
cleanup
setup_veth "$A" "$B" 10.31.0.1/24 10.31.0.2/24 || skip_all "cannot create a veth pair"
rdma link add srdma0 type srdma netdev "$A" || skip_all "cannot create srdma0"

if kmemleak_available; then
	kmemleak_clear
	leak=1
else
	leak=0
fi

prog srdma_verbs || finish
bin=$PROG

check "ibv_devices lists srdma0" sh -c 'ibv_devices | grep -q "srdma0"'
info=$(ibv_devinfo -v -d srdma0 2>&1)
info_has() {
	local p
	for p in "$@"; do
		grep -q -- "$p" <<<"$info" || return 1
	done
}
check "ibv_devinfo: transport InfiniBand, link layer Ethernet" \
	info_has 'transport:.*InfiniBand' 'link_layer:.*Ethernet'
check "ibv_devinfo: max_qp 16384, max_cqe 65536" info_has 'max_qp:.*16384' 'max_cqe:.*65536'
check "ibv_devinfo: port ACTIVE, GID from 10.31.0.1" \
	info_has PORT_ACTIVE '::ffff:10.31.0.1, RoCE v2'
check "ibv_devinfo: node_guid matches sysfs" info_has \
	"node_guid:.*$(cat $SYSFS_IB/srdma0/node_guid)"

# Port events reach userspace: the link goes down and up under ibv_asyncwatch.
events=$(mktemp)
stdbuf -oL ibv_asyncwatch -d srdma0 > "$events" 2>&1 &
watcher=$!
# It announces its event FD once it listens; a loaded machine may take a while.
wait_for 20 grep -q "async event FD" "$events"
ip link set "$B" down
wait_for 5 port_is srdma0 DOWN
ip link set "$B" up
wait_for 5 port_is srdma0 ACTIVE
sleep 1
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
check "async event: IBV_EVENT_PORT_ERR when the link went down" grep -q "IBV_EVENT_PORT_ERR" \
	"$events"
check "async event: IBV_EVENT_PORT_ACTIVE when it came back" grep -q "IBV_EVENT_PORT_ACTIVE" \
	"$events"
rm -f "$events"

# The objects program, its subtests folded into ours.
tap_run verbs 300 "$bin" srdma0
# Posting in each QP state.
c_tap states 120 srdma_states srdma0

res() { rdma res show | sed -n "s/.* $1 \([0-9]*\) .*/\1/p" | head -1; }
check_eq "rdma res: no contexts before" 0 "$(res ctx)"
# ib_mad's QP1 and its PD and CQ belong to the device from the start.
base_pd=$(res pd) base_cq=$(res cq) base_qp=$(res qp)
coproc HOLD { exec "$bin" srdma0 hold 3; }
holder=$HOLD_PID
read -r -t 60 line <&"${HOLD[0]}"
check_eq "holder is ready" ready "$line"
check_eq "rdma res: 3 contexts" 3 "$(res ctx)"
check_eq "rdma res: 3 PDs" $((base_pd + 3)) "$(res pd)"
check_eq "rdma res: 3 CQs" $((base_cq + 3)) "$(res cq)"
check_eq "rdma res: 3 QPs" $((base_qp + 3)) "$(res qp)"
check_eq "rdma res: 3 MRs" 3 "$(res mr)"
kill -9 "$holder"
wait "$holder" 2>/dev/null
holder=
check "SIGKILL: contexts released" wait_for 10 eval '[ "$(res ctx)" = 0 ]'
check_eq "SIGKILL: PDs released" "$base_pd" "$(res pd)"
check_eq "SIGKILL: CQs released" "$base_cq" "$(res cq)"
check_eq "SIGKILL: QPs released" "$base_qp" "$(res qp)"
check_eq "SIGKILL: MRs released" 0 "$(res mr)"

# Pinning is charged to RLIMIT_MEMLOCK for a process without CAP_IPC_LOCK.
if command -v setpriv >/dev/null; then
	tap_run memlock 60 bash -c 'ulimit -l 64; exec setpriv --inh-caps=-ipc_lock \
		--bounding-set=-ipc_lock "$0" srdma0 memlock' "$bin"
else
	skip "memlock: MR beyond RLIMIT_MEMLOCK" "setpriv not installed"
fi
check "device can be deleted after all that" rdma link delete srdma0

if [ "$leak" = 1 ]; then
	report=$(kmemleak_report)
	ours=$(grep -E -A20 'unreferenced object' <<<"$report" | grep -E \
		'srdma|ib_|rdma|uverbs|umem' || true)
	if [ -z "$ours" ]; then
		ok "kmemleak: nothing leaked by the verbs tests and the killed process"
	else
		fail "kmemleak: nothing leaked by the verbs tests and the killed process" "$report"
	fi
else
	skip "kmemleak: nothing leaked" "kmemleak not available"
fi

finish
