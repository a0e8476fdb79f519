# SPDX-License-Identifier: GPL-2.0-only
# What the wire tests share: srdma_w in namespace $NS on one end of a veth pair, a peer RDMA
# device on the other end, and the exchanges between them. Sourced after lib.sh; the caller
# sets up the topology and sets
#   NS SRDMA_IP           srdma's namespace and address
#   PEER PEER_DEV PEER_IP the peer's kind for the test names ("rxe", "srdma"), device, address
#   PEER_NS               the peer's namespace ("" for the initial one)
#   sg pg                 the RoCE v2 GID indices of srdma_w and of the peer

in_ns() { ip netns exec "$NS" "$@"; }
# The command prefixes that run something on either side (for timeout(1) and the like).
srdma_side() { SRDMA_SIDE=(ip netns exec "$NS"); }
peer_side() {
	PEER_SIDE=()
	[ -z "$PEER_NS" ] || PEER_SIDE=(ip netns exec "$PEER_NS")
}

counter() { cat "$SYSFS_IB/srdma_w/ports/1/hw_counters/$1"; }

# pingpong PROG NAME PORT SERVER_SIDE SIZE ITERS: an ibv_*_pingpong between the two devices,
# the server on SERVER_SIDE (srdma or peer), payloads checked on both ends.
pingpong() {
	local prog=$1 name=$2 port=$3 server=$4 size=$5 iters=$6 out_s out_c rc_s rc_c
	local start=$SECONDS
	srdma_side
	peer_side
	local peer=("${PEER_SIDE[@]}" "$prog" -d "$PEER_DEV" -g "$pg" -p "$port" \
		-s "$size" -n "$iters" -c)
	local srdma=("${SRDMA_SIDE[@]}" "$prog" -d srdma_w -g "$sg" -p "$port" \
		-s "$size" -n "$iters" -c)
	out_s=$(mktemp) out_c=$(mktemp)
	if [ "$server" = srdma ]; then
		timeout 120 "${srdma[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port" "$NS"
		timeout 120 "${peer[@]}" "$SRDMA_IP" >"$out_c" 2>&1
	else
		timeout 120 "${peer[@]}" >"$out_s" 2>&1 &
		wait_for 10 tcp_listening "$port" "$PEER_NS"
		timeout 120 "${srdma[@]}" "$PEER_IP" >"$out_c" 2>&1
	fi
	rc_c=$?
	wait $!
	rc_s=$?
	if [ "$rc_s" = 0 ] && [ "$rc_c" = 0 ] && grep -q "$iters iters" "$out_s" &&
		grep -q "$iters iters" "$out_c"; then
		ok "$name"
	else
		fail "$name" "server ($server) exit $rc_s: $(cat "$out_s")" \
			"client exit $rc_c: $(cat "$out_c")"
	fi
	rm -f "$out_s" "$out_c"
	time_diag "$name" "$start"
}

# perftest NAME PORT SERVER_SIDE PROG ARGS...: perftest between the two devices, the server
# (the responder of the RC operations) on SERVER_SIDE, the client its requester; both exit 0.
# With -R the connection is made by rdma_cm, whose MADs travel through each device's QP1.
perftest() {
	local name=$1 port=$2 server=$3 prog=$4 out_s out_c rc_s rc_c xs=() xp=() cm=
	local start=$SECONDS
	shift 4
	case " $* " in
	*" -R "*) cm=1 ;;
	*) xs=(-x "$sg") xp=(-x "$pg") ;;
	esac
	srdma_side
	peer_side
	local peer=(timeout 120 "${PEER_SIDE[@]}" "$prog" -d "$PEER_DEV" "${xp[@]}" \
		-p "$port" -F "$@")
	local srdma=(timeout 120 "${SRDMA_SIDE[@]}" "$prog" -d srdma_w "${xs[@]}" \
		-p "$port" -F "$@")
	out_s=$(mktemp) out_c=$(mktemp)
	if [ "$server" = srdma ]; then
		"${srdma[@]}" >"$out_s" 2>&1 &
		if [ -n "$cm" ]; then
			wait_for 20 cm_listening "$port"
		else
			wait_for 10 tcp_listening "$port" "$NS"
		fi
		"${peer[@]}" "$SRDMA_IP" >"$out_c" 2>&1
	else
		"${peer[@]}" >"$out_s" 2>&1 &
		if [ -n "$cm" ]; then
			wait_for 20 cm_listening "$port"
		else
			wait_for 10 tcp_listening "$port" "$PEER_NS"
		fi
		"${srdma[@]}" "$PEER_IP" >"$out_c" 2>&1
	fi
	rc_c=$?
	wait $!
	rc_s=$?
	if [ "$rc_s" = 0 ] && [ "$rc_c" = 0 ]; then
		ok "$name"
	else
		fail "$name" "server ($server) exit $rc_s: $(tail -5 "$out_s")" \
			"client exit $rc_c: $(tail -5 "$out_c")"
	fi
	rm -f "$out_s" "$out_c"
	time_diag "$name" "$start"
}

# rping_between NAME PORT SERVER_SIDE: rping over rdma_cm (its MADs through QP1 on the wire),
# 10 pings of 4 KiB with the data checked on both sides (-V).
rping_between() {
	local name=$1 port=$2 server=$3 out_s out_c rc_s rc_c ip run_s run_c
	local start=$SECONDS
	srdma_side
	peer_side
	if [ "$server" = srdma ]; then
		ip=$SRDMA_IP run_s=("${SRDMA_SIDE[@]}") run_c=("${PEER_SIDE[@]}")
	else
		ip=$PEER_IP run_s=("${PEER_SIDE[@]}") run_c=("${SRDMA_SIDE[@]}")
	fi
	out_s=$(mktemp) out_c=$(mktemp)
	timeout 60 "${run_s[@]}" rping -s -a "$ip" -p "$port" -C 10 -S 4096 -V >"$out_s" 2>&1 &
	wait_for 20 cm_listening "$port"
	timeout 60 "${run_c[@]}" rping -c -a "$ip" -p "$port" -C 10 -S 4096 -V >"$out_c" 2>&1
	rc_c=$?
	wait $!
	rc_s=$?
	if [ "$rc_s" = 0 ] && [ "$rc_c" = 0 ]; then
		ok "$name"
	else
		fail "$name" "server ($server) exit $rc_s: $(tail -5 "$out_s")" \
			"client exit $rc_c: $(tail -5 "$out_c")"
	fi
	rm -f "$out_s" "$out_c"
	time_diag "$name" "$start"
}

# wire_matrix FIRST_PORT: the exchanges every peer must pass with srdma, in both roles: UD, RC
# and UC pingpong with checked payloads, perftest SEND/WRITE/READ at sizes around the path MTU
# (1024 B) and beyond (WIRE_SIZES, default 1 1023 1024 1025 65536), atomics, rdma_cm (rping,
# perftest -R), and srdma_wire.c (1 MiB and 8 MiB messages, reuse after RESET, destroy with
# WRITEs in flight).
wire_matrix() {
	local port=$1 sent0 rcvd0 size server dir
	sent0=$(counter sent_pkts)
	rcvd0=$(counter rcvd_pkts)
	pingpong ibv_ud_pingpong "UD: srdma server, $PEER client, 1 B x 50, checked" $((port++)) \
		srdma 1 50
	pingpong ibv_ud_pingpong "UD: $PEER server, srdma client, 1 B x 50, checked" $((port++)) \
		peer 1 50
	pingpong ibv_ud_pingpong \
		"UD: srdma server, $PEER client, 1024 B (the path MTU) x 200, checked" \
		$((port++)) srdma 1024 200
	pingpong ibv_ud_pingpong "UD: $PEER server, srdma client, 1000 B x 200, checked" \
		$((port++)) peer 1000 200
	# Each exchange is a ping and a pong per iteration.
	check_eq "sent_pkts: one per datagram srdma sent (500)" \
		500 $(($(counter sent_pkts) - sent0))
	check_eq "rcvd_pkts: one per datagram srdma received (500)" \
		500 $(($(counter rcvd_pkts) - rcvd0))

	rcvd0=$(counter rcvd_pkts) dup0=$(counter duplicate_request)
	for size in 1 1024 4096; do
		pingpong ibv_rc_pingpong "RC: srdma server, $PEER client, $size B x 100, checked" \
			$((port++)) srdma "$size" 100
		pingpong ibv_rc_pingpong "RC: $PEER server, srdma client, $size B x 100, checked" \
			$((port++)) peer "$size" 100
	done
	# In each role srdma receives 100 SENDs of 1, 1 and 4 packets (path MTU 1024), and a copy
	# of one again for each request a retransmission duplicated.
	check_eq "rcvd_pkts: one per RC request packet srdma received (1200)" \
		1200 $(($(counter rcvd_pkts) - rcvd0 - ($(counter duplicate_request) - dup0)))
	pingpong ibv_uc_pingpong "UC: srdma server, $PEER client, 1024 B x 100, checked" \
		$((port++)) srdma 1024 100
	pingpong ibv_uc_pingpong "UC: $PEER server, srdma client, 1024 B x 100, checked" \
		$((port++)) peer 1024 100

	for size in ${WIRE_SIZES:-1 1023 1024 1025 65536}; do
		for server in srdma peer; do
			if [ "$server" = srdma ]; then
				dir="$PEER -> srdma"
			else
				dir="srdma -> $PEER"
			fi
			perftest "RC SEND, $dir: $size B" $((port++)) "$server" \
				ib_send_bw -s "$size" -n 20
			perftest "RC WRITE, $dir: $size B" $((port++)) "$server" \
				ib_write_bw -s "$size" -n 20
			perftest "RC READ, $dir: $size B" $((port++)) "$server" \
				ib_read_bw -s "$size" -n 20
		done
	done
	perftest "RC atomics, $PEER -> srdma" $((port++)) srdma ib_atomic_bw -n 20
	perftest "RC atomics, srdma -> $PEER" $((port++)) peer ib_atomic_bw -n 20
	perftest "RC SEND latency, srdma and $PEER" $((port++)) srdma ib_send_lat -s 4096 -n 100

	rping_between "rdma_cm: rping, srdma server, $PEER client, 4 KiB x 10, checked" \
		$((port++)) srdma
	rping_between "rdma_cm: rping, $PEER server, srdma client, 4 KiB x 10, checked" \
		$((port++)) peer
	perftest "rdma_cm: ib_send_bw -R, $PEER -> srdma" $((port++)) srdma ib_send_bw -R -n 20
	perftest "rdma_cm: ib_send_bw -R, srdma -> $PEER" $((port++)) peer ib_send_bw -R -n 20

	# Both devices from one process (in the initial namespace: devices are seen from all).
	c_tap "one process" 900 srdma_wire srdma_w "$sg" "$PEER_DEV" "$pg"
}
