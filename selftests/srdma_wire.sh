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

# gid_index DEV GID: the index of a RoCE v2 GID, as sysfs prints it.
gid_index() {
	local f n
	for f in "$SYSFS_IB/$1"/ports/1/gids/*; do
		n=${f##*/}
		[ "$(cat "$f" 2>/dev/null)" = "$2" ] || continue
		grep -qx "RoCE v2" "$SYSFS_IB/$1/ports/1/gid_attrs/types/$n" 2>/dev/null || continue
		echo "$n"
		return 0
	done
	return 1
}
check "rxe has the RoCE v2 GID of $RXE_IP" wait_for 10 gid_index rxe_w "$(ipv4_gid "$RXE_IP")"
check "srdma has the RoCE v2 GID of $SRDMA_IP" wait_for 10 gid_index srdma_w "$(ipv4_gid "$SRDMA_IP")"
rg=$(gid_index rxe_w "$(ipv4_gid "$RXE_IP")")
sg=$(gid_index srdma_w "$(ipv4_gid "$SRDMA_IP")")

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

# The same over IPv6 GIDs (the exchange of QP numbers still over IPv4 TCP).
ip -6 addr add 2001:db8:61::1/64 dev "$R" nodad
in_ns ip -6 addr add 2001:db8:61::2/64 dev "$S" nodad
if wait_for 10 gid_index rxe_w 2001:0db8:0061:0000:0000:0000:0000:0001 &&
	wait_for 10 gid_index srdma_w 2001:0db8:0061:0000:0000:0000:0000:0002; then
	rg4=$rg sg4=$sg
	rg=$(gid_index rxe_w 2001:0db8:0061:0000:0000:0000:0000:0001)
	sg=$(gid_index srdma_w 2001:0db8:0061:0000:0000:0000:0000:0002)
	pingpong ibv_rc_pingpong "RC over IPv6: srdma server, rxe client, 4096 B x 50, checked" \
		$((port++)) srdma 4096 50
	pingpong ibv_rc_pingpong "RC over IPv6: rxe server, srdma client, 4096 B x 50, checked" \
		$((port++)) rxe 4096 50
	pingpong ibv_ud_pingpong "UD over IPv6: srdma server, rxe client, 1000 B x 50, checked" \
		$((port++)) srdma 1000 50
	rg=$rg4 sg=$sg4
else
	fail "RC and UD over IPv6" "no RoCE v2 GIDs for the IPv6 addresses"
fi

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

# --- forged packets (srdma_forge.py): a peer at an address no RDMA device answers for talks to
# an ibv_rc_pingpong client of srdma and fires malformed, misaddressed and out-of-sequence
# packets at its live QP. Each is dropped and counted; the conversation completes.
FORGE_IP=10.61.0.3
ip addr add "$FORGE_IP/24" dev "$R"
# forge PORT MODE: runs the forger and the client; sets rc_c and leaves the outputs in
# $out_f and $out_c.
forge() {
	out_f=$(mktemp) out_c=$(mktemp)
	timeout 90 python3 "$(dirname "$0")/srdma_forge.py" "$1" "$FORGE_IP" "$SRDMA_IP" 64 "$hw" "$2" \
		>"$out_f" 2>&1 &
	wait_for 10 tcp_listening "$1"
	timeout 60 ip netns exec "$NS" ibv_rc_pingpong -d srdma_w -g "$sg" -p "$1" -s 64 -n 1 \
		"$FORGE_IP" >"$out_c" 2>&1
	rc_c=$?
	wait $!
}
declare -A before
for c in rx_icrc_errors rx_malformed rx_not_ours out_of_sequence; do before[$c]=$(counter $c); done
forge 18700 drops
if [ "$rc_c" = 0 ]; then
	ok "forged packets: the conversation completes"
else
	fail "forged packets: the conversation completes" "client exit $rc_c: $(cat "$out_c")" \
		"forger: $(cat "$out_f")"
fi
sent_of() { awk -v k="$1" '$1 == k { n = $2 } END { print n + 0 }' "$out_f"; }
check_eq "bad ICRC: dropped and counted" "$(sent_of icrc)" \
	$(($(counter rx_icrc_errors) - before[rx_icrc_errors]))
check_eq "truncated, undefined opcodes, TVer 1: dropped as malformed" "$(sent_of malformed)" \
	$(($(counter rx_malformed) - before[rx_malformed]))
check_eq "unknown QP, GSI QP, foreign source, stray response: dropped as not ours" \
	$(($(sent_of not_ours) + $(sent_of stray_response))) \
	$(($(counter rx_not_ours) - before[rx_not_ours]))
check_eq "PSNs far ahead: dropped, counted out of sequence" "$(sent_of psn_ahead)" \
	$(($(counter out_of_sequence) - before[out_of_sequence]))
rm -f "$out_f" "$out_c"

# A well-formed request the QP must refuse (an RDMA WRITE of 4 GiB with a bad rkey to a QP
# without remote write access): a NAK, the QP fails, the client sees an error completion.
forge 18701 fatal
if [ "$rc_c" != 0 ] && grep -q -i "fail\|error" "$out_c"; then
	ok "a forged RDMA WRITE of 4 GiB with a bad rkey: refused, the QP fails cleanly"
else
	fail "a forged RDMA WRITE of 4 GiB with a bad rkey: refused, the QP fails cleanly" \
		"client exit $rc_c: $(cat "$out_c")" "forger: $(cat "$out_f")"
fi
rm -f "$out_f" "$out_c"
ip addr del "$FORGE_IP/24" dev "$R"

# --- a lossy link (netem on both ends): RC completes with every byte checked, the counters
# say what happened.
netem="netem loss 3% duplicate 3% delay 1ms reorder 5%"
if ip netns exec "$NS" tc qdisc add dev "$S" root $netem 2>/dev/null &&
	tc qdisc add dev "$R" root $netem; then
	rt0=$(counter local_ack_timeout_err) sq0=$(counter packet_seq_err)
	dup0=$(counter duplicate_request) oos0=$(counter out_of_sequence)
	pingpong ibv_rc_pingpong "RC over loss, duplication and reordering: srdma server, 4096 B x 200" \
		18710 srdma 4096 200
	pingpong ibv_rc_pingpong "RC over loss, duplication and reordering: srdma client, 4096 B x 200" \
		18711 rxe 4096 200
	lost=$(($(counter local_ack_timeout_err) - rt0 + $(counter packet_seq_err) - sq0))
	seen=$(($(counter duplicate_request) - dup0 + $(counter out_of_sequence) - oos0))
	check "srdma's requester recovered lost packets (timeouts or sequence NAKs: $lost)" test "$lost" -gt 0
	check "srdma's responder saw duplicates or gaps ($seen)" test "$seen" -gt 0
	# Corruption on the way to srdma (rxe's end).
	ip netns exec "$NS" tc qdisc del dev "$S" root
	tc qdisc replace dev "$R" root netem corrupt 5%
	icrc0=$(counter rx_icrc_errors)
	pingpong ibv_rc_pingpong "RC over a corrupting link: srdma server, 1024 B x 100" 18712 srdma 1024 100
	check "corrupted packets dropped as ICRC errors" test "$(counter rx_icrc_errors)" -gt "$icrc0"
	tc qdisc del dev "$R" root
else
	skip "RC over a lossy link" "no netem (tc qdisc ... netem)"
fi

finish
