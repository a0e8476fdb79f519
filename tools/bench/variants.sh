#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The devices `make bench` compares, sourced by tools/bench/guest.sh inside the VM.
#
# A variant is a name in BENCH_VARIANTS_ALL and two functions, variant_<name>_setup and
# variant_<name>_teardown (dashes in the name become underscores). Setup creates a server and a
# client device that reach each other over a fresh veth pair and sets:
#   SRV_DEV CLI_DEV  the two RDMA devices (server side, client side)
#   SRV_NS CLI_NS    the network namespaces the two sides run in (empty: the initial one)
#   SRV_ADDR         the server's IPv4 address (perftest's TCP exchange, or rdma_cm with -R)
#   PT_FLAGS         perftest flags the device needs (-x GID_INDEX, or -R for rdma_cm)
#   GID_INDEX        the RoCEv2 IPv4 GID index, empty for iWARP
#   CROSSOVER        1: also run the inline/SGE crossover benchmark (tools/bench/inline.c)
#   NA_TESTS         "TEST=reason ..." for perftest tests the device cannot run
# It returns non-zero when the device cannot be created; the variant is then reported n/a.
# Every variant is set up before the first run, so that runs of the devices interleave.
#
# srdma runs in its default doorbell mode ("kick"). Two srdma devices of one namespace talk
# through the loopback transport (page to page); srdma-wire puts them in two namespaces, so that
# every message travels as RoCEv2 packets through the veth, as rxe's do (rxe's two devices talk
# through the IP stack too). srdma-poll (not in the default list: ask for it with
# BENCH_VARIANTS="srdma srdma-poll") has its devices' pollers watch the doorbells.

BENCH_VARIANTS_ALL="srdma srdma-wire rxe siw"

# veth_pair A B NET: A gets NET.1, B gets NET.2; two local addresses talk only with accept_local.
veth_pair() {
	ip link add "$1" type veth peer name "$2" || return 1
	ip addr add "$3.1/24" dev "$1"
	ip addr add "$3.2/24" dev "$2"
	ip link set "$1" up
	ip link set "$2" up
	sysctl -qw net.ipv4.conf.all.accept_local=1 "net.ipv4.conf.$1.accept_local=1" \
		"net.ipv4.conf.$2.accept_local=1"
}

# roce_v2_ipv4_gid DEV: the index of port 1's RoCEv2 GID that maps an IPv4 address.
roce_v2_ipv4_gid() {
	local port=/sys/class/infiniband/$1/ports/1 f i g
	# The shell's read: a process per entry of the 128 costs seconds on the debug kernel,
	# which the bench smoke run of make check boots.
	for f in "$port"/gids/*; do
		i=${f##*/}
		{ read -r g < "$f"; } 2>/dev/null || continue
		case $g in
		0000:0000:0000:0000:0000:ffff:*)
			[ "$(cat "$port/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] &&
				{ echo "$i"; return 0; } ;;
		esac
	done
	return 1
}

# wait_gid DEV: waits (up to 5 s) for the IPv4 GID to appear after the link was added.
wait_gid() {
	local i
	for i in $(seq 50); do
		GID_INDEX=$(roce_v2_ipv4_gid "$1") && return 0
		sleep 0.1
	done
	return 1
}

# roce_pair TYPE A B NETDEV_A NETDEV_B NET: two RoCEv2 devices of TYPE on a veth pair.
roce_pair() {
	veth_pair "$4" "$5" "$6" || return 1
	rdma link add "$2" type "$1" netdev "$4" || return 1
	rdma link add "$3" type "$1" netdev "$5" || return 1
	SRV_DEV=$2 CLI_DEV=$3 SRV_ADDR=$6.1 SRV_NS= CLI_NS=
	wait_gid "$2" || return 1
	PT_FLAGS="-x $GID_INDEX"
	CROSSOVER=0 NA_TESTS=
}

# roce_unpair A B NETDEV_A
roce_unpair() {
	rdma link delete "$1" 2>/dev/null
	rdma link delete "$2" 2>/dev/null
	ip link del "$3" 2>/dev/null
}

variant_srdma_setup() {
	modprobe srdma || return 1
	roce_pair srdma srdma_a srdma_b sd0 sd1 10.51.0 || return 1
	CROSSOVER=1
}
variant_srdma_teardown() { roce_unpair srdma_a srdma_b sd0; }

# srdma on the wire: srdma_wa in namespace bench_a, srdma_wb in bench_b, a veth between.
variant_srdma_wire_setup() {
	modprobe srdma || return 1
	ip netns add bench_a && ip netns add bench_b || return 1
	ip link add wa netns bench_a type veth peer name wb netns bench_b || return 1
	ip -n bench_a addr add 10.54.0.1/24 dev wa
	ip -n bench_b addr add 10.54.0.2/24 dev wb
	for n in a b; do
		ip -n "bench_$n" link set "w$n" up
		ip -n "bench_$n" link set lo up
		ip netns exec "bench_$n" rdma link add "srdma_w$n" type srdma netdev "w$n" || return 1
	done
	SRV_DEV=srdma_wa CLI_DEV=srdma_wb SRV_ADDR=10.54.0.1 SRV_NS=bench_a CLI_NS=bench_b
	wait_gid srdma_wa || return 1
	PT_FLAGS="-x $GID_INDEX"
	CROSSOVER=0 NA_TESTS=
}
variant_srdma_wire_teardown() {
	ip netns exec bench_a rdma link delete srdma_wa 2>/dev/null
	ip netns exec bench_b rdma link delete srdma_wb 2>/dev/null
	ip netns del bench_a 2>/dev/null
	ip netns del bench_b 2>/dev/null
}

variant_srdma_poll_setup() {
	modprobe srdma || return 1
	roce_pair srdma srdma_pa srdma_pb sp0 sp1 10.55.0 || return 1
	echo poll > /sys/class/infiniband/srdma_pa/doorbell_mode || return 1
	echo poll > /sys/class/infiniband/srdma_pb/doorbell_mode || return 1
	CROSSOVER=0
}
variant_srdma_poll_teardown() { roce_unpair srdma_pa srdma_pb sp0; }

variant_rxe_setup() {
	modprobe rdma_rxe || return 1
	roce_pair rxe rxe_a rxe_b rx0 rx1 10.52.0
}
variant_rxe_teardown() { roce_unpair rxe_a rxe_b rx0; }

# siw is iWARP: no GIDs to exchange, connections only through rdma_cm (perftest -R; without
# it the QP cannot reach RTS: "Failed to modify QP to RTS").
variant_siw_setup() {
	modprobe siw && modprobe rdma_ucm || return 1
	veth_pair sw0 sw1 10.53.0 || return 1
	rdma link add siw_a type siw netdev sw0 || return 1
	rdma link add siw_b type siw netdev sw1 || return 1
	SRV_DEV=siw_a CLI_DEV=siw_b SRV_ADDR=10.53.0.1 SRV_NS= CLI_NS= GID_INDEX= PT_FLAGS=-R
	CROSSOVER=0 NA_TESTS=
}
variant_siw_teardown() { roce_unpair siw_a siw_b sw0; }
