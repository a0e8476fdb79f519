#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# srdma and rxe over virtio-net: the VM's two virtio-net NICs, joined outside the guest by a
# QEMU hub (virtme-ng --network loop, as tools/vm/run.sh boots it), srdma on the first in a
# namespace of its own and rxe on the second in the initial one. The frames go through QEMU's
# virtio-net devices, which read them from guest memory themselves; the exchanges are
# wire_lib.sh's wire_matrix in both roles. Skipped where the VM has no such pair of NICs.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/wire_lib.sh"
require_cmd rdma ip ibv_ud_pingpong ibv_rc_pingpong ibv_uc_pingpong rping ib_send_bw timeout
load_srdma

mapfile -t nics < <(virtio_nics)
[ "${#nics[@]}" -ge 2 ] || skip_all \
	"no two virtio-net NICs (tools/vm/run.sh boots with --network loop)"
S=${nics[0]} R=${nics[1]}

NS=srdma_wire_v
RXE_IP=10.63.0.1 SRDMA_IP=10.63.0.2
PEER=rxe PEER_DEV=rxe_v PEER_IP=$RXE_IP PEER_NS=
cleanup() {
	kill $(jobs -p) 2>/dev/null
	in_ns rdma link delete srdma_w 2>/dev/null
	rdma link delete rxe_v 2>/dev/null
	unload_rxe
	# A NIC returns to the initial namespace when its namespace goes.
	ip netns del "$NS" 2>/dev/null
	ip addr flush dev "$R" 2>/dev/null
	wait_for 10 ip link show "$S" >/dev/null 2>&1
	ip addr flush dev "$S" 2>/dev/null
}
trap cleanup EXIT
cleanup
# Loaded after the first cleanup, so that only the one at exit unloads it.
load_rxe || skip_all "rdma_rxe not available"

# A device on a NIC sits under the NIC's device, as hardware RDMA functions do: tools find the
# network interface through /sys/class/infiniband/DEV/device/net/.
if check "srdma on virtio-net $S" rdma link add srdma_vt type srdma netdev "$S"; then
	nic=$(readlink -f "/sys/class/net/$S/device")
	check_eq "its device is the NIC's ($nic)" "$nic" \
		"$(readlink -f "$SYSFS_IB/srdma_vt/device")"
	check "device/net/ names $S" test -e "$SYSFS_IB/srdma_vt/device/net/$S"
	check "the device goes" rdma link delete srdma_vt
fi

ip netns add "$NS" || skip_all "cannot create a network namespace"
ip link set "$S" netns "$NS" || skip_all "cannot move $S"
ip addr add "$RXE_IP/24" dev "$R"
ip link set "$R" up
in_ns ip addr add "$SRDMA_IP/24" dev "$S"
in_ns ip link set "$S" up
in_ns ip link set lo up

check "rxe on $R (virtio-net, initial namespace)" rdma link add rxe_v type rxe netdev "$R"
check "srdma on $S (virtio-net, namespace $NS)" in_ns rdma link add srdma_w type srdma netdev "$S"
check "rxe has the RoCE v2 GID of $RXE_IP" wait_for 10 gid_index rxe_v "$(ipv4_gid "$RXE_IP")"
check "srdma has the RoCE v2 GID of $SRDMA_IP" wait_for 10 gid_index srdma_w \
	"$(ipv4_gid "$SRDMA_IP")"
pg=$(gid_index rxe_v "$(ipv4_gid "$RXE_IP")")
sg=$(gid_index srdma_w "$(ipv4_gid "$SRDMA_IP")")

nic_tx() { in_ns cat "/sys/class/net/$S/statistics/tx_packets"; }
tx0=$(nic_tx)
sent0=$(counter sent_pkts)

# The sizes that srdma_wire.sh does not cover already against rxe on a veth.
WIRE_SIZES="1 1025 65536" wire_matrix 18901

sent=$(($(counter sent_pkts) - sent0))
tx=$(($(nic_tx) - tx0))
check "the packets srdma sent left through virtio-net $S ($sent sent, $tx by the NIC)" \
	test "$sent" -gt 1000 -a "$tx" -ge "$sent"
check_eq "no ICRC errors" 0 "$(counter rx_icrc_errors)"
check_eq "no malformed packets" 0 "$(counter rx_malformed)"
check_eq "no send errors" 0 "$(counter send_err)"

finish
