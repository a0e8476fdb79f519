#!/bin/bash
# `make demo`, inside the VM: create an srdma device on a veth pair and show what ib_core and
# the tools see.
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

step "delete srdma0 and unload"
run rdma link delete srdma0
run rdma dev
run modprobe -r srdma
echo
echo "demo: done"
