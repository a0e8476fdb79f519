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

# pingpong NAME PORT SERVER_SIDE SIZE ITERS: ibv_ud_pingpong between the two devices, the
# server on SERVER_SIDE (rxe or srdma), payloads checked on both ends.
pingpong() {
	local name=$1 port=$2 server=$3 size=$4 iters=$5 out_s out_c rc_s rc_c
	local rxe=(ibv_ud_pingpong -d rxe_w -g "$rg" -p "$port" -s "$size" -n "$iters" -c)
	local srdma=(ip netns exec "$NS" ibv_ud_pingpong -d srdma_w -g "$sg" -p "$port" -s "$size" -n "$iters" -c)
	out_s=$(mktemp) out_c=$(mktemp)
	if [ "$server" = srdma ]; then
		timeout 60 "${srdma[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port" "$NS"
		timeout 60 "${rxe[@]}" "$SRDMA_IP" >"$out_c" 2>&1
	else
		timeout 60 "${rxe[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port"
		timeout 60 "${srdma[@]}" "$RXE_IP" >"$out_c" 2>&1
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

# perftest NAME PORT PROG ARGS...: perftest with srdma as the server (the responder of the
# RC operations) and rxe as the client (their requester), both exit 0.
perftest() {
	local name=$1 port=$2 prog=$3 out_s out_c rc_s rc_c
	shift 3
	out_s=$(mktemp) out_c=$(mktemp)
	timeout 120 ip netns exec "$NS" "$prog" -d srdma_w -x "$sg" -p "$port" -F "$@" >"$out_s" 2>&1 &
	wait_for 10 tcp_listening "$port" "$NS"
	timeout 120 "$prog" -d rxe_w -x "$rg" -p "$port" -F "$@" "$SRDMA_IP" >"$out_c" 2>&1
	rc_c=$?
	wait $!
	rc_s=$?
	if [ "$rc_s" = 0 ] && [ "$rc_c" = 0 ]; then
		ok "$name"
	else
		fail "$name" "server (srdma) exit $rc_s: $(tail -5 "$out_s")" "client (rxe) exit $rc_c: $(tail -5 "$out_c")"
	fi
	rm -f "$out_s" "$out_c"
}

sent0=$(counter sent_pkts)
rcvd0=$(counter rcvd_pkts)
pingpong "UD: srdma server, rxe client, 1 B x 50, checked" 18601 srdma 1 50
pingpong "UD: rxe server, srdma client, 1 B x 50, checked" 18602 rxe 1 50
pingpong "UD: srdma server, rxe client, 1024 B (the path MTU) x 200, checked" 18603 srdma 1024 200
pingpong "UD: rxe server, srdma client, 1000 B x 200, checked" 18604 rxe 1000 200
# Each exchange is a ping and a pong per iteration.
check_eq "sent_pkts: one per datagram srdma sent (500)" 500 $(($(counter sent_pkts) - sent0))
check_eq "rcvd_pkts: one per datagram srdma received (500)" 500 $(($(counter rcvd_pkts) - rcvd0))

# RC with srdma as the responder, at sizes around the path MTU (1024 B) and beyond.
port=18610
for size in 1 1023 1024 1025 65536; do
	perftest "RC SEND, rxe -> srdma: $size B" $((port++)) ib_send_bw -s "$size" -n 20
	perftest "RC WRITE, rxe -> srdma: $size B" $((port++)) ib_write_bw -s "$size" -n 20
	perftest "RC READ, rxe <- srdma: $size B" $((port++)) ib_read_bw -s "$size" -n 20
done
perftest "RC atomics, rxe -> srdma" $((port++)) ib_atomic_bw -n 20

check_eq "no ICRC errors" 0 "$(counter rx_icrc_errors)"
check_eq "no malformed packets" 0 "$(counter rx_malformed)"
check_eq "no send errors" 0 "$(counter send_err)"

finish
