#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# srdma devices on network devices: rdma link add/delete, the attributes ib_core and sysfs
# report, RoCE GIDs that follow the addresses, a port that follows the link, and bad input.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip
load_srdma

A=sl0 B=sl1
cleanup() {
	for d in srdma0 srdma1 srdma_tmp rxe_sl; do rdma link delete "$d" 2>/dev/null; done
	ip link del "$A" 2>/dev/null
	ip link del sl_dummy 2>/dev/null
}
trap cleanup EXIT
cleanup

# The PIDs of the receive threads of device $1 (a name or pattern; all srdma devices by default).
rx_threads() {
	grep -lx -- "${1:-srdma.*}-rx" /proc/[0-9]*/comm 2>/dev/null | cut -d/ -f3
}

setup_veth "$A" "$B" 10.11.0.1/24 10.11.0.2/24 || skip_all "cannot create a veth pair"
mac=$(cat /sys/class/net/$A/address)

# --- creation and attributes
check "link add srdma0 on $A" rdma link add srdma0 type srdma netdev "$A"
check "rdma dev show: node_type ca" sh -c 'rdma dev show srdma0 | grep -q "node_type ca"'
check "rdma dev show: node_guid from the MAC" \
	sh -c "rdma dev show srdma0 | grep -q 'node_guid $(node_guid_of "$mac")'"
link=$(rdma link show srdma0/1)
check "rdma link show: ACTIVE LINK_UP netdev $A" \
	grep -q "state ACTIVE physical_state LINK_UP netdev $A" <<<"$link"
check_eq "sysfs node_type" "1: CA" "$(cat $SYSFS_IB/srdma0/node_type)"
check_eq "sysfs node_guid" "$(node_guid_of "$mac")" "$(cat $SYSFS_IB/srdma0/node_guid)"
check_eq "sysfs node_desc" "srdma" "$(cat $SYSFS_IB/srdma0/node_desc)"
check_eq "sysfs port 1 state" "ACTIVE" "$(port_state srdma0)"
check_eq "sysfs port 1 phys_state" "5: LinkUp" "$(cat $SYSFS_IB/srdma0/ports/1/phys_state)"
check_eq "sysfs port 1 link_layer" "Ethernet" "$(cat $SYSFS_IB/srdma0/ports/1/link_layer)"
check "sysfs port 1 rate from the veth speed" grep -q "Gb/sec" $SYSFS_IB/srdma0/ports/1/rate
check_eq "sysfs pkey 0" "0xffff" "$(cat $SYSFS_IB/srdma0/ports/1/pkeys/0)"
check "sysfs port 1 gid_attrs: RoCE v2" grep -qx "RoCE v2" \
	$SYSFS_IB/srdma0/ports/1/gid_attrs/types/0
check "only one device" test "$(rdma_devs)" = srdma0
rx=$(rx_threads srdma0)
check "one receive thread, srdma0-rx" test "$(wc -w <<<"$rx")" = 1
# /proc/PID/stat after "PID (COMM) ": nice and policy are the 17th and 39th fields.
check_eq "srdma0-rx: normal policy (0) at nice -20" "0 -20" \
	"$(sed 's/^.*) //' "/proc/$rx/stat" | awk '{ print $39, $17 }')"
if grep -q '^se.slice ' "/proc/$rx/sched" 2>/dev/null; then
	check_eq "srdma0-rx: a time slice of 0.1 ms" 100000 \
		"$(awk '/^se.slice / { print $3 }' "/proc/$rx/sched")"
else
	skip "srdma0-rx: a time slice of 0.1 ms" "no se.slice in /proc/PID/sched (SCHED_DEBUG)"
fi

# --- GIDs follow the netdev's addresses
check "GID: link-local from the MAC" grep -qx "$(eui64_gid "$mac")" <<<"$(gids srdma0)"
check "GID: IPv4-mapped 10.11.0.1" grep -qx "$(ipv4_gid 10.11.0.1)" <<<"$(gids srdma0)"
ip addr add 10.12.0.1/24 dev "$A"
check "GID appears for an added IPv4 address" wait_for 5 has_gid srdma0 "$(ipv4_gid 10.12.0.1)"
ip addr del 10.12.0.1/24 dev "$A"
check "GID goes away with the address" wait_for 5 eval '! has_gid srdma0 "$(ipv4_gid 10.12.0.1)"'
ip -6 addr add 2001:db8:5::1/64 dev "$A" nodad
check "GID appears for an added IPv6 address" \
	wait_for 5 has_gid srdma0 2001:0db8:0005:0000:0000:0000:0000:0001
ip -6 addr del 2001:db8:5::1/64 dev "$A"

# --- the port follows the netdev
ip link set "$B" down
check "peer down (no carrier): port DOWN" wait_for 5 port_is srdma0 DOWN
check_eq "peer down: phys_state Polling" "2: Polling" "$(cat $SYSFS_IB/srdma0/ports/1/phys_state)"
ip link set "$B" up
check "peer up: port ACTIVE" wait_for 5 port_is srdma0 ACTIVE
ip link set "$A" down
check "netdev down: port DOWN" wait_for 5 port_is srdma0 DOWN
check_eq "netdev down: phys_state Disabled" "3: Disabled" \
	"$(cat $SYSFS_IB/srdma0/ports/1/phys_state)"
check "netdev down: rdma link says DOWN" sh -c "rdma link show srdma0/1 | grep -q 'state DOWN'"
ip link set "$A" up
check "netdev up: port ACTIVE" wait_for 5 port_is srdma0 ACTIVE

# --- bad input: each a clear errno, and nothing created
check_fails_with "duplicate name: EEXIST" "File exists" rdma link add srdma0 type srdma netdev "$B"
check_fails_with "netdev already bound: EEXIST" "File exists" rdma link add srdma1 type srdma \
	netdev "$A"
check_fails_with "unknown netdev: ENODEV" "No such device" rdma link add srdma1 type srdma netdev \
	nosuchdev
check_fails_with "loopback (not Ethernet): EINVAL" "Invalid argument" rdma link add srdma1 type \
	srdma netdev lo
if ip link add sl_dummy type dummy 2>/dev/null || ip tuntap add sl_dummy mode tun 2>/dev/null; then
	if [ "$(cat /sys/class/net/sl_dummy/type)" != 1 ]; then
		check_fails_with "non-Ethernet netdev: EINVAL" "Invalid argument" \
			rdma link add srdma1 type srdma netdev sl_dummy
	fi
	ip link del sl_dummy 2>/dev/null
fi
check_fails_with "name with %: EINVAL" "Invalid argument" rdma link add 'srdma%d' type srdma \
	netdev "$B"
check "failed adds left nothing behind" test "$(rdma_devs)" = srdma0

# --- rxe and srdma share UDP 4791: the first in a namespace has it, and it is given back
check "srdma0 holds UDP 4791 in its namespace" grep -q ':12B7 ' /proc/net/udp
if modinfo rdma_rxe >/dev/null 2>&1; then
	check "rxe cannot load while srdma holds the port" sh -c '! modprobe rdma_rxe'
	rdma link delete srdma0
	check "the last srdma device of the namespace gives the port back" \
		sh -c '! grep -q ":12B7 " /proc/net/udp'
	check "then rxe loads" modprobe rdma_rxe
	rdma link add rxe_sl type rxe netdev "$B"
	check_fails_with "name taken by another driver (rxe): EEXIST" "File exists" \
		rdma link add rxe_sl type srdma netdev "$B"
	# The kernel log stays whole (make check reads all of it afterwards): only the lines from
	# here on are looked at.
	logged=$(dmesg | wc -l)
	check "srdma next to rxe in its namespace: created (without the port)" \
		rdma link add srdma0 type srdma netdev "$A"
	check "and the log says why RoCEv2 packets will not reach it" \
		sh -c "dmesg | tail -n +$((logged + 1)) |
			grep -q 'UDP port 4791 of the namespace of sl0 is in use'"
	rdma link delete srdma0
	rdma link delete rxe_sl
	rmmod rdma_rxe
	rdma link add srdma0 type srdma netdev "$A"
else
	skip "rxe next to srdma" "rdma_rxe not available"
fi

# --- deletion
check "link delete srdma0" rdma link delete srdma0
check "no device after delete" test -z "$(rdma_devs)"
check "no receive thread after delete" test -z "$(rx_threads srdma0)"
check_fails_with "delete again: no such device" "Wrong device name" rdma link delete srdma0

# --- a second device on the other end, then the netdev goes away under it
check "link add srdma1 on $B" rdma link add srdma1 type srdma netdev "$B"
ip link del "$A"
check "netdev unregister removes the device" wait_for 10 no_rdma_devs

# --- repeated add/delete leaks nothing
setup_veth "$A" "$B" 10.11.0.1/24 10.11.0.2/24
if kmemleak_available; then
	kmemleak_clear
	leak=1
else
	leak=0
fi
loops_ok=1
for i in $(seq 1 25); do
	rdma link add srdma0 type srdma netdev "$A" || { loops_ok=0; break; }
	rdma link add srdma1 type srdma netdev "$B" || { loops_ok=0; break; }
	rdma link delete srdma1 || { loops_ok=0; break; }
	rdma link delete srdma0 || { loops_ok=0; break; }
done
check_eq "25 add/delete rounds of two devices" 1 "$loops_ok"
check "no device after the rounds" test -z "$(rdma_devs)"
check "no receive thread after the rounds" test -z "$(rx_threads)"
if [ "$leak" = 1 ]; then
	report=$(kmemleak_report)
	ours=$(grep -E -B2 -A20 'unreferenced object' <<<"$report" | grep -E 'srdma|ib_|rdma|gid' \
		|| true)
	if [ -z "$ours" ]; then
		ok "kmemleak: nothing leaked by the rounds"
	else
		fail "kmemleak: nothing leaked by the rounds" "$report"
	fi
else
	skip "kmemleak: nothing leaked by the rounds" "kmemleak not available"
fi

finish
