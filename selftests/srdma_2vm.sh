#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# One side of the two-VM run (tools/vm/two.sh, `make check-2vm`): two guests whose NICs a QEMU
# dgram netdev joins through the host, srdma in guest A and rxe or srdma in guest B. Both sides
# run this script with the same list of exchanges; for each, one side is the server and the
# other the client, which tries again until the server listens, so the guests keep in step.
#   srdma_2vm.sh a|b PEER_KIND DIR
# PEER_KIND (rxe or srdma) is the device of guest B; DIR, a directory both guests see, is where
# they tell each other they are ready. Prints TAP for this side.

. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/wire_lib.sh"
require_cmd rdma ip ibv_rc_pingpong ibv_ud_pingpong rping ib_send_bw ib_write_bw ib_read_bw timeout

side=${1:?usage: srdma_2vm.sh a|b PEER_KIND DIR}
kind=${2:?usage: srdma_2vm.sh a|b PEER_KIND DIR}
meet=${3:?usage: srdma_2vm.sh a|b PEER_KIND DIR}
A_IP=10.64.0.1 B_IP=10.64.0.2
# two.sh gives the guests' wire NICs these addresses.
A_MAC=52:54:00:64:00:01 B_MAC=52:54:00:64:00:02
if [ "$side" = a ]; then
	me=$A_IP peer_ip=$B_IP mac=$A_MAC dev_kind=srdma
else
	me=$B_IP peer_ip=$A_IP mac=$B_MAC dev_kind=$kind
fi
[ "$dev_kind" = srdma ] && load_srdma
[ "$dev_kind" = rxe ] && { modprobe rdma_rxe 2>/dev/null || skip_all "rdma_rxe not available"; }

nic=
for n in /sys/class/net/*; do
	[ "$(cat "$n/address" 2>/dev/null)" = "$mac" ] && nic=${n##*/}
done
[ -n "$nic" ] || skip_all "no NIC with MAC $mac: run through tools/vm/two.sh"
ip addr add "$me/24" dev "$nic"
ip link set "$nic" up
dev=w2vm
check "$dev_kind device on $nic" rdma link add "$dev" type "$dev_kind" netdev "$nic"
check "the RoCE v2 GID of $me" wait_for 10 gid_index "$dev" "$(ipv4_gid "$me")"
gidx=$(gid_index "$dev" "$(ipv4_gid "$me")")
# The guests boot at their own pace: each waits for the other's device.
touch "$meet/ready.$side"
other=b
[ "$side" = a ] || other=a
check "the other guest's device is up" wait_for 900 test -e "$meet/ready.$other"
# The link itself first (ARP and IP between the guests): a TCP connection to a port nobody
# listens on is refused once packets go both ways, so that a link that does not carry them
# yet fails here and not as the first exchange's connection.
link_up() { timeout 2 bash -c "exec 3<>/dev/tcp/$peer_ip/7" 2>&1 | grep -q -i refused; }
check "the other guest answers on the link" wait_for 120 link_up

# exchange NAME SERVER_SIDE PORT CMD...: CMD is run as the server on SERVER_SIDE (a or b) and
# as the client on the other; "-p PORT" and, for the client, the server's address follow CMD
# (an @ in CMD is replaced by the address instead). A client that fails at once tries again for
# up to 120 s: the server is not listening yet.
exchange() {
	local name=$1 server=$2 port=$3 out rc t0 t1 args
	shift 3
	out=$(mktemp)
	if [ "$side" = "$server" ]; then
		args=("${@/#@/$me}" -p "$port")
		timeout 300 "${args[@]}" >"$out" 2>&1
		rc=$?
	else
		if [[ " $* " == *" @ "* ]]; then
			args=("${@/#@/$peer_ip}" -p "$port")
		else
			args=("$@" -p "$port" "$peer_ip")
		fi
		t0=$SECONDS
		while :; do
			t1=$SECONDS
			timeout 300 "${args[@]}" >"$out" 2>&1
			rc=$?
			[ "$rc" != 0 ] && [ $((SECONDS - t1)) -lt 5 ] &&
				[ $((SECONDS - t0)) -lt 120 ] || break
			sleep 1
		done
	fi
	if [ "$rc" = 0 ]; then
		ok "$name ($([ "$side" = "$server" ] && echo server || echo client) here)"
	else
		fail "$name" "exit $rc: $(tail -n 25 "$out")" \
			"$(grep -H . /sys/class/infiniband/$dev/ports/1/hw_counters/* 2>/dev/null |
				grep -v ":0$" | sed "s|.*/||")"
	fi
	rm -f "$out"
}

port=19001
exchange "RC pingpong, 4 KiB x 100, checked, srdma server" a $((port++)) \
	ibv_rc_pingpong -d "$dev" -g "$gidx" -s 4096 -n 100 -c
exchange "RC pingpong, 4 KiB x 100, checked, $kind server" b $((port++)) \
	ibv_rc_pingpong -d "$dev" -g "$gidx" -s 4096 -n 100 -c
exchange "UD pingpong, 1000 B x 100, checked, srdma server" a $((port++)) \
	ibv_ud_pingpong -d "$dev" -g "$gidx" -s 1000 -n 100 -c
exchange "UD pingpong, 1000 B x 100, checked, $kind server" b $((port++)) \
	ibv_ud_pingpong -d "$dev" -g "$gidx" -s 1000 -n 100 -c
for size in 1025 65536 1048576; do
	exchange "SEND $size B, $kind -> srdma" a $((port++)) ib_send_bw -d "$dev" -x "$gidx" -F \
		-s "$size" -n 20
	exchange "WRITE $size B, srdma -> $kind" b $((port++)) ib_write_bw -d "$dev" -x "$gidx" -F \
		-s "$size" -n 20
	exchange "READ $size B, srdma reads from $kind" b $((port++)) ib_read_bw -d "$dev" -x \
		"$gidx" -F -s "$size" -n 20
	exchange "READ $size B, $kind reads from srdma" a $((port++)) ib_read_bw -d "$dev" -x \
		"$gidx" -F -s "$size" -n 20
done
exchange "atomics, $kind -> srdma" a $((port++)) ib_atomic_bw -d "$dev" -x "$gidx" -F -n 20
# rdma_cm: the MADs cross the wire through each device's QP1.
if [ "$side" = a ]; then rs=-s; else rs=-c; fi
exchange "rping over rdma_cm, 4 KiB x 10, checked, srdma server" a $((port++)) \
	rping "$rs" -C 10 -S 4096 -V -a @
exchange "ib_send_bw -R (rdma_cm), srdma -> $kind" b $((port++)) ib_send_bw -d "$dev" -R -F -n 20

rdma link delete "$dev"
finish
