#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Captures what rxe puts on the wire, for the KUnit tests of the RoCEv2 headers and ICRC
# (rust/kernel/rdma/roce.rs): rxe on one end of a veth pair sends to a made-up peer at the
# other end, in another network namespace, where only a packet capture listens. Run in the VM:
#   make vm CMD='tools/roce/capture-rxe.sh OUTDIR'
# OUTDIR gets one file per case, one packet per line in hex from the IP header on.
set -euo pipefail
out=${1:?usage: capture-rxe.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

modprobe rdma_rxe
ip netns add cap
ip link add veth0 type veth peer name veth1 netns cap
ip addr add 10.0.0.1/24 dev veth0
ip -6 addr add fd00::1/64 dev veth0 nodad
ip link set veth0 up
ip -n cap link set lo up
ip -n cap addr add 10.0.0.2/24 dev veth1
ip -n cap -6 addr add fd00::2/64 dev veth1 nodad
ip -n cap link set veth1 up
ip -n cap link set veth1 address 02:00:00:00:00:02
rdma link add rxe0 type rxe netdev veth0
sleep 3

# The GID index of an address: sysfs lists them per port.
gid_index() {
	local want=$1 i
	for i in $(seq 0 15); do
		[ "$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null)" = "$want" ] && { echo "$i"; return; }
	done
	echo "capture: no GID $want on rxe0" >&2
	exit 1
}
v4=$(gid_index 0000:0000:0000:0000:0000:ffff:0a00:0001)
v6=$(gid_index fd00:0000:0000:0000:0000:0000:0000:0001)

# capture NAME COUNT PEER_GID_HEX CLIENT_ARGS...
capture() {
	local name=$1 count=$2 gid=$3
	shift 3
	ip netns exec cap python3 "$here/capture.py" veth1 "$count" 60 > "$out/$name.hex" \
		2> "$out/$name.cap" &
	local cap=$!
	ip netns exec cap python3 "$here/fake_peer.py" "$gid" 0x000123 0x0abcde 2> "$out/$name.peer" &
	local peer=$!
	# Both say "ready" once they listen.
	local i
	for i in $(seq 100); do
		grep -q ready "$out/$name.cap" "$out/$name.peer" 2>/dev/null &&
			[ "$(grep -l ready "$out/$name.cap" "$out/$name.peer" | wc -l)" = 2 ] && break
		sleep 0.2
	done
	timeout 15 "$@" 10.0.0.2 > "$out/$name.log" 2>&1 || true
	wait "$cap" || true
	kill "$peer" 2>/dev/null || true
	wait "$peer" 2>/dev/null || true
	echo "capture: $name: $(wc -l < "$out/$name.hex") packets"
}

peer4=00000000000000000000ffff0a000002
peer6=fd000000000000000000000000000002
# RC SEND of 5000 bytes at MTU 1024 over IPv4: FIRST, 3 MIDDLE, LAST.
capture rc_send_v4 5 $peer4 ibv_rc_pingpong -d rxe0 -g "$v4" -s 5000 -m 1024 -n 1
# RC SEND ONLY of 64 bytes over IPv6.
capture rc_send_v6 1 $peer6 ibv_rc_pingpong -d rxe0 -g "$v6" -s 64 -m 1024 -n 1
# UD SEND ONLY with DETH over IPv4.
capture ud_send_v4 1 $peer4 ibv_ud_pingpong -d rxe0 -g "$v4" -s 64 -n 1
