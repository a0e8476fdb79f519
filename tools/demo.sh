#!/bin/bash
# `make demo`, inside the VM: create an srdma device on a veth pair, show what ib_core and the
# tools see, move data between two srdma devices and watch the counters move.
set -u
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "load srdma and make a veth pair (10.0.0.1 <-> 10.0.0.2)"
run modprobe srdma
ip link add veth0 type veth peer name veth1
ip addr add 10.0.0.1/24 dev veth0
ip addr add 10.0.0.2/24 dev veth1
ip link set veth0 up
ip link set veth1 up
run ip -br addr show veth0

step "create srdma0 on veth0"
run rdma link add srdma0 type srdma netdev veth0
run rdma dev show srdma0
run rdma link show srdma0/1

step "what sysfs says"
d=/sys/class/infiniband/srdma0
for f in node_type node_guid node_desc ports/1/state ports/1/phys_state ports/1/link_layer ports/1/rate; do
	printf '%-20s %s\n' "$f" "$(cat $d/$f)"
done
echo "GIDs (RoCE v2, from veth0's addresses):"
for g in $d/ports/1/gids/*; do
	v=$(cat "$g" 2>/dev/null) || continue
	[ "$v" = 0000:0000:0000:0000:0000:0000:0000:0000 ] || printf '  %-3s %s  %s\n' "$(basename "$g")" "$v" "$(cat $d/ports/1/gid_attrs/types/$(basename "$g"))"
done

step "the port follows the link: veth1 down, then up"
ip link set veth1 down
sleep 0.3
run rdma link show srdma0/1
ip link set veth1 up
sleep 0.3
run rdma link show srdma0/1

step "move data: srdma1 on veth1, ibv_rc_pingpong from srdma1 to srdma0 (buffers checked)"
sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.veth0.accept_local=1 \
	net.ipv4.conf.veth1.accept_local=1
run rdma link add srdma1 type srdma netdev veth1
sleep 0.5
hw=$d/ports/1/hw_counters
echo "srdma0 counters before: rdma_recvs $(cat $hw/rdma_recvs) rdma_sends $(cat $hw/rdma_sends) sge_bytes $(cat $hw/sge_bytes) kicks $(cat $hw/kicks)"
ibv_rc_pingpong -d srdma0 -g 1 -n 500 -s 4096 -c > /tmp/demo-srv.log 2>&1 &
sleep 1
run ibv_rc_pingpong -d srdma1 -g 1 -n 500 -s 4096 -c 10.0.0.1
wait
echo "srdma0 counters after:  rdma_recvs $(cat $hw/rdma_recvs) rdma_sends $(cat $hw/rdma_sends) sge_bytes $(cat $hw/sge_bytes) kicks $(cat $hw/kicks)"
run rdma statistic show link srdma0/1

step "rdma_cm through ib_mad's GSI QP: rping between the two devices"
modprobe rdma_ucm
rping -s -a 10.0.0.1 -C 3 -v > /tmp/demo-rping.log 2>&1 &
sleep 1
run rping -c -a 10.0.0.1 -C 3 -v
wait
run rdma link delete srdma1

step "delete srdma0 and unload"
run rdma link delete srdma0
run rdma dev
run modprobe -r srdma
echo
echo "demo: done"
