#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# srdma's tracepoints (events/srdma/ in tracefs) fire with the fields of a workload the test
# knows: one RC ping-pong of 4096 B between srdma_a and srdma_b of one namespace (QP states,
# doorbells, WQEs, CQEs), then one between two namespaces on the wire (packets sent and
# received) and a malformed datagram at port 4791 (a drop).

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip ibv_rc_pingpong timeout python3
load_srdma

T=/sys/kernel/tracing
mountpoint -q "$T" || mount -t tracefs nodev "$T" 2>/dev/null
[ -d "$T/events/srdma" ] || skip_all "no srdma events in tracefs (CONFIG_FTRACE)"

# traced CMD...: runs CMD with every srdma event on and prints what they recorded.
traced() {
	echo > "$T/trace"
	echo 1 > "$T/events/srdma/enable"
	"$@"
	echo 0 > "$T/events/srdma/enable"
	cat "$T/trace"
}
# seen DESC PATTERN: passes when a recorded line matches the extended regex PATTERN.
seen() {
	if grep -Eq "$2" <<<"$log"; then
		ok "$1"
	else
		fail "$1" "no line matches: $2" "$(grep -v '^#' <<<"$log" | head -20)"
	fi
}

# --- one namespace: the loopback transport.
srdma_pair_up
pingpong_once() {
	timeout 60 ibv_rc_pingpong -d srdma_a -g "$ga" -p 18950 -s 4096 -n 1 >/dev/null 2>&1 &
	wait_for 10 tcp_listening 18950
	timeout 60 ibv_rc_pingpong -d srdma_b -g "$gb" -p 18950 -s 4096 -n 1 10.51.0.1 \
		>/dev/null 2>&1
	wait
}
log=$(traced pingpong_once)
seen "srdma_qp_state: RESET to INIT" 'srdma_qp_state: qpn=[0-9]+ 0->1'
seen "srdma_qp_state: INIT to RTR" 'srdma_qp_state: qpn=[0-9]+ 1->2'
seen "srdma_qp_state: RTR to RTS" 'srdma_qp_state: qpn=[0-9]+ 2->3'
seen "srdma_doorbell: a send queue run up to its producer index" \
	'srdma_doorbell: qpn=[0-9]+ sq_ci=0 sq_pi=1'
seen "srdma_wqe: a SEND of 4096 B from the SGEs" 'srdma_wqe: qpn=[0-9]+ opcode=2 len=4096 sge'
seen "srdma_cqe: the receive, 4096 B" \
	'srdma_cqe: cqn=[0-9]+ qpn=[0-9]+ opcode=128 status=0 byte_len=4096'
seen "srdma_cqe: the send" 'srdma_cqe: cqn=[0-9]+ qpn=[0-9]+ opcode=0 status=0'
check "no packets on the loopback transport" eval '! grep -q "srdma_[tr]x:" <<<"$log"'

# --- two namespaces: the wire.
NS=srdma_trace_a PEER_NS=srdma_trace_b
cleanup() {
	ip netns exec "$NS" rdma link delete srdma_ta 2>/dev/null
	ip netns exec "$PEER_NS" rdma link delete srdma_tb 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	ip netns del "$PEER_NS" 2>/dev/null
	srdma_pair_cleanup
}
trap cleanup EXIT
netns_veth "$NS" ta 10.63.0.1 "$PEER_NS" tb 10.63.0.2 ||
	skip_all "cannot create network namespaces joined by a veth pair"
ip netns exec "$NS" rdma link add srdma_ta type srdma netdev ta &&
	ip netns exec "$PEER_NS" rdma link add srdma_tb type srdma netdev tb ||
	skip_all "cannot create srdma devices in the namespaces"
wait_for 10 gid_index srdma_ta "$(ipv4_gid 10.63.0.1)"
wait_for 10 gid_index srdma_tb "$(ipv4_gid 10.63.0.2)"
ta=$(gid_index srdma_ta "$(ipv4_gid 10.63.0.1)")
tb=$(gid_index srdma_tb "$(ipv4_gid 10.63.0.2)")
wire_once() {
	timeout 60 ip netns exec "$NS" ibv_rc_pingpong -d srdma_ta -g "$ta" -p 18951 -s 4096 -n 1 \
		>/dev/null 2>&1 &
	wait_for 10 tcp_listening 18951 "$NS"
	timeout 60 ip netns exec "$PEER_NS" ibv_rc_pingpong -d srdma_tb -g "$tb" -p 18951 -s 4096 \
		-n 1 10.63.0.1 >/dev/null 2>&1
	wait
	# Too short to be a RoCEv2 packet.
	ip netns exec "$PEER_NS" python3 -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x" * 8, ("10.63.0.1", 4791))'
	sleep 1
}
log=$(traced wire_once)
# 4096 B at the path MTU of 1024: SEND FIRST (0x00) ... SEND LAST (0x02), and ACKs (0x11).
seen "srdma_tx: the first packet of the SEND" 'srdma_tx: qpn=[0-9]+ opcode=0x00 psn=[0-9]+ len=1024'
seen "srdma_tx: the last packet of the SEND" 'srdma_tx: qpn=[0-9]+ opcode=0x02 psn=[0-9]+ len=1024'
seen "srdma_rx: the SEND's packets arrive" 'srdma_rx: qpn=[0-9]+ opcode=0x01 psn=[0-9]+ len=1024'
seen "srdma_rx: the acknowledgment arrives" 'srdma_rx: qpn=[0-9]+ opcode=0x11'
seen "srdma_drop: the short datagram, as malformed" 'srdma_drop: reason=malformed'

finish
