#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# srdma on the wire: RoCEv2 packets between srdma and the kernel's rxe across a veth pair,
# rxe in the initial namespace, srdma in a namespace of its own (each holds UDP 4791 in its
# own namespace). UD in both directions with checked payloads, the packets counted, and
# forged packets dropped.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip ibv_ud_pingpong timeout
load_srdma
modprobe rdma_rxe 2>/dev/null || skip_all "rdma_rxe not available"

NS=srdma_wire
R=rw0 S=rw1
RXE_IP=10.61.0.1 SRDMA_IP=10.61.0.2
in_ns() { ip netns exec "$NS" "$@"; }
cleanup() {
	kill $(jobs -p) 2>/dev/null
	in_ns rdma link delete srdma_w 2>/dev/null
	rdma link delete rxe_w 2>/dev/null
	ip link del "$R" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
cleanup

ip netns add "$NS" || skip_all "cannot create a network namespace"
ip link add "$R" type veth peer name "$S" netns "$NS" || skip_all "cannot create a veth pair"
ip addr add "$RXE_IP/24" dev "$R"
ip link set "$R" up
in_ns ip addr add "$SRDMA_IP/24" dev "$S"
in_ns ip link set "$S" up
in_ns ip link set lo up

check "rxe on $R (initial namespace)" rdma link add rxe_w type rxe netdev "$R"
check "srdma on $S (namespace $NS)" in_ns rdma link add srdma_w type srdma netdev "$S"
check "srdma holds UDP 4791 in its namespace" sh -c "ip netns exec $NS cat /proc/net/udp | grep -q ':12B7 '"

# gid_index DEV ADDR: the index of the RoCE v2 GID of an IPv4 address.
gid_index() {
	local f n want
	want=$(ipv4_gid "$2")
	for f in "$SYSFS_IB/$1"/ports/1/gids/*; do
		n=${f##*/}
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] || continue
		grep -qx "RoCE v2" "$SYSFS_IB/$1/ports/1/gid_attrs/types/$n" 2>/dev/null || continue
		echo "$n"
		return 0
	done
	return 1
}
check "rxe has the RoCE v2 GID of $RXE_IP" wait_for 10 gid_index rxe_w "$RXE_IP"
check "srdma has the RoCE v2 GID of $SRDMA_IP" wait_for 10 gid_index srdma_w "$SRDMA_IP"
rg=$(gid_index rxe_w "$RXE_IP")
sg=$(gid_index srdma_w "$SRDMA_IP")

hw=$SYSFS_IB/srdma_w/ports/1/hw_counters
counter() { cat "$hw/$1"; }

# pingpong PROG NAME PORT SERVER_SIDE SIZE ITERS: an ibv_*_pingpong between the two devices,
# the server on SERVER_SIDE (rxe or srdma), payloads checked on both ends.
pingpong() {
	local prog=$1 name=$2 port=$3 server=$4 size=$5 iters=$6 out_s out_c rc_s rc_c
	local rxe=("$prog" -d rxe_w -g "$rg" -p "$port" -s "$size" -n "$iters" -c)
	local srdma=(ip netns exec "$NS" "$prog" -d srdma_w -g "$sg" -p "$port" -s "$size" -n "$iters" -c)
	out_s=$(mktemp) out_c=$(mktemp)
	if [ "$server" = srdma ]; then
		timeout 120 "${srdma[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port" "$NS"
		timeout 120 "${rxe[@]}" "$SRDMA_IP" >"$out_c" 2>&1
	else
		timeout 120 "${rxe[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port"
		timeout 120 "${srdma[@]}" "$RXE_IP" >"$out_c" 2>&1
	fi
	rc_c=$?
	wait $!
	rc_s=$?
	if [ "$rc_s" = 0 ] && [ "$rc_c" = 0 ] && grep -q "$iters iters" "$out_s" && grep -q "$iters iters" "$out_c"; then
		ok "$name"
	else
		fail "$name" "server ($server) exit $rc_s: $(cat "$out_s")" "client exit $rc_c: $(cat "$out_c")"
	fi
	rm -f "$out_s" "$out_c"
}

# perftest NAME PORT SERVER_SIDE PROG ARGS...: perftest between the two devices, the server
# (the responder of the RC operations) on SERVER_SIDE, the client its requester; both exit 0.
perftest() {
	local name=$1 port=$2 server=$3 prog=$4 out_s out_c rc_s rc_c
	shift 4
	local rxe=(timeout 120 "$prog" -d rxe_w -x "$rg" -p "$port" -F "$@")
	local srdma=(timeout 120 ip netns exec "$NS" "$prog" -d srdma_w -x "$sg" -p "$port" -F "$@")
	out_s=$(mktemp) out_c=$(mktemp)
	if [ "$server" = srdma ]; then
		"${srdma[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port" "$NS"
		"${rxe[@]}" "$SRDMA_IP" >"$out_c" 2>&1
	else
		"${rxe[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port"
		"${srdma[@]}" "$RXE_IP" >"$out_c" 2>&1
	fi
	rc_c=$?
	wait $!
	rc_s=$?
	if [ "$rc_s" = 0 ] && [ "$rc_c" = 0 ]; then
		ok "$name"
	else
		fail "$name" "server ($server) exit $rc_s: $(tail -5 "$out_s")" "client exit $rc_c: $(tail -5 "$out_c")"
	fi
	rm -f "$out_s" "$out_c"
}

sent0=$(counter sent_pkts)
rcvd0=$(counter rcvd_pkts)
pingpong ibv_ud_pingpong "UD: srdma server, rxe client, 1 B x 50, checked" 18601 srdma 1 50
pingpong ibv_ud_pingpong "UD: rxe server, srdma client, 1 B x 50, checked" 18602 rxe 1 50
pingpong ibv_ud_pingpong "UD: srdma server, rxe client, 1024 B (the path MTU) x 200, checked" 18603 srdma 1024 200
pingpong ibv_ud_pingpong "UD: rxe server, srdma client, 1000 B x 200, checked" 18604 rxe 1000 200
# Each exchange is a ping and a pong per iteration.
check_eq "sent_pkts: one per datagram srdma sent (500)" 500 $(($(counter sent_pkts) - sent0))
check_eq "rcvd_pkts: one per datagram srdma received (500)" 500 $(($(counter rcvd_pkts) - rcvd0))

# RC and UC pingpong both ways, payloads checked, at sizes around the path MTU (1024 B).
port=18605
for size in 1 1024 4096; do
	pingpong ibv_rc_pingpong "RC: srdma server, rxe client, $size B x 100, checked" $((port++)) srdma "$size" 100
	pingpong ibv_rc_pingpong "RC: rxe server, srdma client, $size B x 100, checked" $((port++)) rxe "$size" 100
done
pingpong ibv_uc_pingpong "UC: srdma server, rxe client, 1024 B x 100, checked" $((port++)) srdma 1024 100
pingpong ibv_uc_pingpong "UC: rxe server, srdma client, 1024 B x 100, checked" $((port++)) rxe 1024 100

# perftest in both roles, at sizes around the path MTU and beyond.
port=18620
for size in 1 1023 1024 1025 65536; do
	for server in srdma rxe; do
		if [ "$server" = srdma ]; then dir="rxe -> srdma"; else dir="srdma -> rxe"; fi
		perftest "RC SEND, $dir: $size B" $((port++)) "$server" ib_send_bw -s "$size" -n 20
		perftest "RC WRITE, $dir: $size B" $((port++)) "$server" ib_write_bw -s "$size" -n 20
		perftest "RC READ, from the $server side: $size B" $((port++)) "$server" ib_read_bw -s "$size" -n 20
	done
done
perftest "RC atomics, rxe -> srdma" $((port++)) srdma ib_atomic_bw -n 20
perftest "RC atomics, srdma -> rxe" $((port++)) rxe ib_atomic_bw -n 20
perftest "RC SEND latency, srdma and rxe" $((port++)) srdma ib_send_lat -s 4096 -n 100

check_eq "no ICRC errors" 0 "$(counter rx_icrc_errors)"
check_eq "no malformed packets" 0 "$(counter rx_malformed)"
check_eq "no send errors" 0 "$(counter send_err)"

finish
