#!/bin/bash
# `make demo`, inside the VM: create an srdma device on a veth pair, show what ib_core and the
# tools see, move data between two srdma devices and watch the counters move.
# A step that fails is named at once and again at the end, and the demo exits non-zero.
set -u
failed=()
# listening CMD: waits up to 20 s for a server to listen (CMD prints something once it does).
listening() {
	for _ in $(seq 200); do
		[ -z "$(eval "$1" 2>/dev/null)" ] || return 0
		sleep 0.1
	done
}
# server_done PID NAME LOG: the server's exit status counts like a step's.
server_done() {
	local rc=0
	wait "$1" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "demo: FAILED (exit $rc): the $2 server; its output:"
		cat "$3"
		failed+=("the $2 server")
	fi
}
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() {
	local rc=0
	printf '$ %s\n' "$*"
	"$@" || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "demo: FAILED (exit $rc): $*"
		failed+=("$*")
	fi
	return "$rc"
}

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
srv=$!
listening "ss -Hltn sport = :18515"
run ibv_rc_pingpong -d srdma1 -g 1 -n 500 -s 4096 -c 10.0.0.1
server_done "$srv" ibv_rc_pingpong /tmp/demo-srv.log
echo "srdma0 counters after:  rdma_recvs $(cat $hw/rdma_recvs) rdma_sends $(cat $hw/rdma_sends) sge_bytes $(cat $hw/sge_bytes) kicks $(cat $hw/kicks)"
run rdma statistic show link srdma0/1

step "rdma_cm through ib_mad's GSI QP: rping between the two devices"
modprobe rdma_ucm
rping -s -a 10.0.0.1 -C 3 -v > /tmp/demo-rping.log 2>&1 &
srv=$!
listening "rdma res show cm_id | grep LISTEN"
run rping -c -a 10.0.0.1 -C 3 -v
server_done "$srv" "rping server" /tmp/demo-rping.log
run rdma link delete srdma1

step "delete srdma0 and unload"
run rdma link delete srdma0
run rdma dev
run modprobe -r srdma
echo
if [ ${#failed[@]} -gt 0 ]; then
	echo "demo: ${#failed[@]} steps failed:"
	printf '  %s\n' "${failed[@]}"
	echo "demo: the kernel log is in ${SRDMA_VM_LOG:-the build directory (vm-dmesg.log)}"
	exit 1
fi
echo "demo: done"
