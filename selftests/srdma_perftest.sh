#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# perftest between two srdma devices on this host: every latency and bandwidth test of SEND,
# RDMA WRITE, RDMA READ and atomics, with and without -I where perftest takes it, a few
# iterations each. A case passes when both sides exit 0 and the client printed its result line.
# The rdma_cm case (ib_send_lat -R) runs over ib_mad's GSI QP on each device; rping runs in
# srdma_data.sh. SRDMA_RDMACM=0 skips it.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip ss timeout ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat \
	ib_send_bw ib_write_bw ib_read_bw
load_srdma

srdma_pair
ADDR_A=10.51.0.1
# perftest's -x: the RoCEv2 GID that maps the IPv4 address.
gid_index=$(gid_index srdma_a "$(ipv4_gid "$ADDR_A")")
[ -n "$gid_index" ] || skip_all "srdma_a has no RoCEv2 IPv4 GID"

port=18600
# perftest DESC PROGRAM ARGS...: server on srdma_a, client on srdma_b; perftest's TCP exchange,
# or rdma_cm when ARGS has -R.
perftest() {
	local desc=$1 prog=$2 out srv crc src try listening=tcp_listening limit=60
	shift 2
	port=$((port + 1))
	# rdma_cm failures leave the server waiting: give up sooner.
	case " $* " in *" -R "*) listening=cm_listening limit=20 ;; esac
	out=$(mktemp)
	for try in 1 2 3; do
		timeout "$limit" "$prog" -d srdma_a -p "$port" -F "$@" > "$out.srv" 2>&1 &
		srv=$!
		# Starting takes a while under emulation; if the listener is not seen, try anyway.
		wait_for 10 "$listening" "$port"
		timeout "$limit" "$prog" -d srdma_b -p "$port" -F "$@" "$ADDR_A" > "$out" 2>&1
		crc=$?
		wait "$srv"
		src=$?
		# perftest calibrates its cycle counter against the clock first; on a busy host
		# under emulation the two may not line up, and it prints no figures (inf); that can
		# happen in consecutive runs, so up to twice more.
		grep -q 'Correlation coefficient r^2' "$out" && [ "$try" -lt 3 ] || break
		diag "$desc: perftest could not calibrate its clock; running it again"
		port=$((port + 1))
	done
	if [ "$crc" = 0 ] && [ "$src" = 0 ] && grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+ ' "$out"; then
		ok "$desc"
		# perftest turns -I off for devices it does not know by vendor ID: say so.
		if grep -q 'Device not recognized to implement inline feature' "$out" &&
			[[ " $* " == *" -I "* ]]; then
			diag "perftest disabled -I on srdma (unknown vendor ID): the SGE path ran"
		fi
	else
		fail "$desc" "$(printf 'client exit %s, server exit %s\n' "$crc" "$src"
			printf -- '--- client:\n%s\n--- server:\n%s' "$(cat "$out")" \
				"$(cat "$out.srv")")"
	fi
	rm -f "$out" "$out.srv"
}

x=(-x "$gid_index")
perftest "ib_send_lat: 64 B" ib_send_lat "${x[@]}" -s 64 -n 200
perftest "ib_send_lat: 64 B, -I 64" ib_send_lat "${x[@]}" -s 64 -n 200 -I 64
perftest "ib_send_lat: 64 KiB" ib_send_lat "${x[@]}" -s 65536 -n 50
perftest "ib_write_lat: 64 B" ib_write_lat "${x[@]}" -s 64 -n 200
perftest "ib_write_lat: 64 B, -I 64" ib_write_lat "${x[@]}" -s 64 -n 200 -I 64
perftest "ib_write_lat: 64 KiB" ib_write_lat "${x[@]}" -s 65536 -n 50
perftest "ib_read_lat: 64 B" ib_read_lat "${x[@]}" -s 64 -n 200
perftest "ib_read_lat: 64 KiB" ib_read_lat "${x[@]}" -s 65536 -n 50
perftest "ib_atomic_lat: fetch and add" ib_atomic_lat "${x[@]}" -n 200
perftest "ib_atomic_lat: compare and swap" ib_atomic_lat "${x[@]}" -n 200 -A CMP_AND_SWAP
perftest "ib_send_bw: 4 KiB" ib_send_bw "${x[@]}" -s 4096 -n 200
perftest "ib_send_bw: 64 B, -I 64" ib_send_bw "${x[@]}" -s 64 -n 200 -I 64
perftest "ib_send_bw: 1 MiB" ib_send_bw "${x[@]}" -s 1048576 -n 20
perftest "ib_write_bw: 4 KiB" ib_write_bw "${x[@]}" -s 4096 -n 200
perftest "ib_write_bw: 64 B, -I 64" ib_write_bw "${x[@]}" -s 64 -n 200 -I 64
perftest "ib_write_bw: 1 MiB" ib_write_bw "${x[@]}" -s 1048576 -n 20
perftest "ib_read_bw: 4 KiB" ib_read_bw "${x[@]}" -s 4096 -n 200
perftest "ib_read_bw: 1 MiB" ib_read_bw "${x[@]}" -s 1048576 -n 20

if [ "${SRDMA_RDMACM:-1}" = 1 ]; then
	# librdmacm needs /dev/infiniband/rdma_cm; nothing else loads rdma_ucm.
	modprobe rdma_ucm 2>/dev/null || diag "rdma_ucm cannot be loaded"
	perftest "ib_send_lat -R (rdma_cm): 64 B" ib_send_lat -R -s 64 -n 200
else
	skip "ib_send_lat -R (rdma_cm): 64 B" "SRDMA_RDMACM=0"
fi
# ib_mad's GSI QPs (comm [ib_core]) belong to the devices.
left=$(rdma res show qp 2>/dev/null | grep srdma_ | grep -v "comm \[ib_core\]")
if [ -z "$left" ]; then
	ok "rdma res: no QP left"
else
	fail "rdma res: no QP left" "$left"
fi

finish
