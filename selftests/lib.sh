#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Shared helpers for the srdma kselftests: TAP output (kselftest's ktap_helpers.sh) and test
# fixtures. Each test script prints "TAP version 13", one "ok"/"not ok" line per check, the
# plan at the end, and exits 0 (all passed or skipped) or 1 (a failure); one that cannot run
# at all prints "1..0 # SKIP" and exits 4.

_srdma_dir=$(dirname "${BASH_SOURCE[0]}")
# kselftest's TAP helpers, beside this directory's in the kernel tree and in an installed suite.
# shellcheck source=../../../kselftest/ktap_helpers.sh
. "$_srdma_dir/../../../kselftest/ktap_helpers.sh"

ktap_print_header

# Prints a diagnostic line per line of its arguments, whitespace kept.
diag() {
	local line
	while IFS= read -r line; do
		printf '# %s\n' "$line"
	done <<<"$*"
}

# The ktap helpers print descriptions unquoted: no globbing, so "srdma:*" stays as it is.
ok() {
	local -
	set -f
	ktap_test_pass "$1"
}

# fail DESC [DETAILS...]
fail() {
	local -
	set -f
	ktap_test_fail "$1"
	shift
	[ $# -eq 0 ] || diag "$*"
}

# skip DESC REASON
skip() {
	local -
	set -f
	ktap_test_skip "$1: $2"
}

# check DESC CMD...: passes when CMD succeeds; its output is shown on failure.
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		fail "$desc" "command: $*" "$out"
	fi
}

# check_eq DESC EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		fail "$1" "expected: '$2'" "actual:   '$3'"
	fi
}

# check_fails_with DESC ERRNO_TEXT CMD...: passes when CMD fails and its error says ERRNO_TEXT
# (strerror text, as iproute2 prints it: "error: File exists").
check_fails_with() {
	local desc=$1 want=$2 out
	shift 2
	if out=$("$@" 2>&1); then
		fail "$desc" "command succeeded but should fail with '$want': $*"
	elif grep -qF -- "$want" <<<"$out"; then
		ok "$desc"
	else
		fail "$desc" "expected error '$want' from: $*" "got: $out"
	fi
}

# wait_for TIMEOUT_SECONDS CMD...: retries CMD every 0.1 s until it succeeds.
wait_for() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s%N)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# tcp_listening PORT [NETNS]: whether a process listens on TCP port PORT (servers that exchange
# QP numbers over TCP before the client may connect), in network namespace NETNS if given.
tcp_listening() {
	if [ -n "${2:-}" ]; then
		[ -n "$(ip netns exec "$2" ss -Hltn "sport = :$1")" ]
	else
		[ -n "$(ss -Hltn "sport = :$1")" ]
	fi
}

# cm_listening PORT: whether an rdma_cm ID listens on PORT.
cm_listening() {
	rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b"
}

# Ends the test: the plan is the results printed; exits with the kselftest code.
finish() {
	ktap_set_plan $((KTAP_TESTNO - 1))
	ktap_finished
}

# Skips the whole test (prerequisite missing).
skip_all() {
	ktap_skip_all "$1"
	exit "$KSFT_SKIP"
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip_all "$c not installed"
	done
}

# --- fixtures ---------------------------------------------------------------------------------

SYSFS_IB=/sys/class/infiniband

# load_srdma: makes sure ib_core's netlink and srdma are there.
load_srdma() {
	modprobe srdma 2>/dev/null || skip_all "srdma.ko cannot be loaded"
}

# load_rxe: loads rdma_rxe; unload_rxe (from the suite's cleanup) unloads it if load_rxe did,
# so that a suite leaves the module as it found it (srdma_link.sh wants UDP 4791 free of rxe).
load_rxe() {
	[ -d /sys/module/rdma_rxe ] && return 0
	modprobe rdma_rxe 2>/dev/null && RXE_LOADED_HERE=1
}
unload_rxe() {
	if [ "${RXE_LOADED_HERE:-0}" = 1 ]; then
		# Processes just killed may hold its devices a moment longer.
		wait_for 10 modprobe -r rdma_rxe 2>/dev/null && RXE_LOADED_HERE=0
	fi
	return 0
}

# setup_veth A B ADDR_A ADDR_B: a veth pair, both ends up, with IPv4 addresses.
setup_veth() {
	ip link add "$1" type veth peer name "$2" || return 1
	ip addr add "$3" dev "$1"
	ip addr add "$4" dev "$2"
	ip link set "$1" up
	ip link set "$2" up
}

# netns_veth NS_A IF_A ADDR_A NS_B IF_B ADDR_B: two new network namespaces joined by a veth
# pair, each end with its IPv4 address (ADDR/24) and up, loopback up too. Fails if any step
# does.
netns_veth() {
	ip netns add "$1" && ip netns add "$4" &&
		ip link add "$2" netns "$1" type veth peer name "$5" netns "$4" &&
		ip -n "$1" addr add "$3/24" dev "$2" && ip -n "$4" addr add "$6/24" dev "$5" &&
		ip -n "$1" link set "$2" up && ip -n "$4" link set "$5" up &&
		ip -n "$1" link set lo up && ip -n "$4" link set lo up
}

# port_state DEV: the port state name from sysfs ("ACTIVE", "DOWN").
port_state() {
	local s
	s=$(cat "$SYSFS_IB/$1/ports/1/state" 2>/dev/null) || return 1
	echo "${s#*: }"
}

# gids DEV: the non-zero GIDs of port 1, one per line.
# The table has 128 entries: they are read with the shell's own read, as a process per entry
# costs seconds per table on the emulated test VM.
gids() {
	local f g
	for f in "$SYSFS_IB/$1"/ports/1/gids/*; do
		{ read -r g < "$f"; } 2>/dev/null || continue
		[ "$g" = "0000:0000:0000:0000:0000:0000:0000:0000" ] || echo "$g"
	done
}

# gid_index DEV GID: the index of a RoCE v2 GID, as sysfs prints it.
gid_index() {
	local f n g
	for f in "$SYSFS_IB/$1"/ports/1/gids/*; do
		n=${f##*/}
		{ read -r g < "$f"; } 2>/dev/null || continue
		[ "$g" = "$2" ] || continue
		grep -qx "RoCE v2" "$SYSFS_IB/$1/ports/1/gid_attrs/types/$n" 2>/dev/null || continue
		echo "$n"
		return 0
	done
	return 1
}

# ipv4_gid A.B.C.D: the IPv4-mapped GID of an address, as sysfs prints it.
ipv4_gid() {
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}

# eui64_gid MAC: the link-local GID derived from a MAC address.
eui64_gid() {
	local IFS=:
	# shellcheck disable=SC2086
	set -- $1
	printf 'fe80:0000:0000:0000:%02x%s:%sff:fe%s:%s%s\n' $((0x$1 ^ 2)) "$2" "$3" "$4" "$5" "$6"
}

# node_guid_of MAC: the node GUID (EUI-64) derived from a MAC address.
node_guid_of() {
	local IFS=:
	# shellcheck disable=SC2086
	set -- $1
	printf '%02x%s:%sff:fe%s:%s%s\n' $((0x$1 ^ 2)) "$2" "$3" "$4" "$5" "$6"
}

# rdma_devs: the names of all RDMA devices.
rdma_devs() {
	ls "$SYSFS_IB" 2>/dev/null
}

# kmemleak_clear / kmemleak_report: the leak check around a test section.
KMEMLEAK=/sys/kernel/debug/kmemleak
kmemleak_available() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
	# The file is there even when kmemleak=off; any command but "clear" then fails.
	[ -w "$KMEMLEAK" ] && echo stack=on 2>/dev/null > "$KMEMLEAK"
}
kmemleak_clear() {
	echo scan > "$KMEMLEAK"
	echo clear > "$KMEMLEAK"
}
# Prints the leaks reported since the last clear (objects must be unreferenced for 5 s).
kmemleak_report() {
	sleep 6
	echo scan > "$KMEMLEAK"
	echo scan > "$KMEMLEAK"
	cat "$KMEMLEAK"
}

# has_gid DEV GID: whether port 1 of DEV has GID.
has_gid() {
	gids "$1" | grep -qx "$2"
}

# port_is DEV STATE: whether port 1 of DEV is in STATE ("ACTIVE", "DOWN").
port_is() {
	[ "$(port_state "$1")" = "$2" ]
}

# no_rdma_devs: whether no RDMA device exists.
no_rdma_devs() {
	[ -z "$(rdma_devs)" ]
}

# fold_tap PREFIX: reads a test program's TAP on stdin and reports its results as our own.
fold_tap() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok "[0-9]*" # SKIP"*) skip "$1" "${line#* # SKIP }" ;;
		"ok "*) ok "$1: ${line#ok [0-9]* }" ;;
		"not ok "*) fail "$1: ${line#not ok [0-9]* }" ;;
		"Bail out!"*) fail "$1: $line" ;;
		esac
	done
}

# tap_verdict PREFIX STATUS SECONDS: reads the TAP a program printed on stdin, given its exit
# STATUS (from timeout(1) run with SECONDS), and fails the test if the program did not finish
# as it promised, whatever its printed results say: killed by the timeout or a signal, no
# plan line, a plan that does not match the results printed, or a non-zero exit that no
# failing result explains (exit 4 with a "1..0 # SKIP" plan is a skip).
tap_verdict() {
	local prefix=$1 status=$2 secs=$3 line results=0 failed=0 plan=
	while IFS= read -r line; do
		case $line in
		"ok "*) results=$((results + 1)) ;;
		"not ok "*) results=$((results + 1)); failed=$((failed + 1)) ;;
		"Bail out!"*) failed=$((failed + 1)) ;;
		1..[0-9]*) plan=${line#1..}; plan=${plan%%[!0-9]*} ;;
		esac
	done
	if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
		fail "$prefix: finished within $secs s" "timed out after $results results"
	elif [ "$status" -gt 128 ]; then
		fail "$prefix: ran to the end" \
			"killed by signal $((status - 128)) after $results results"
	elif [ -z "$plan" ]; then
		fail "$prefix: printed its plan" \
			"exit $status after $results results and no plan line"
	elif [ "$plan" -ne "$results" ]; then
		fail "$prefix: printed every planned result" \
			"plan 1..$plan, $results results, exit $status"
	elif [ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && ! [ "$status.$plan" = 4.0 ]; then
		fail "$prefix: exited 0" "exit $status with no failing result"
	fi
}

# time_diag NAME START: a TAP diagnostic (ignored by parsers) with the seconds NAME took since
# START (a $SECONDS), so that a suite's output says which program spends its time.
time_diag() {
	echo "# srdma-time: $1 $((SECONDS - $2)) s"
}

# tap_run PREFIX SECONDS CMD...: runs CMD, a program that prints TAP, for at most SECONDS,
# reports its results as this test's under PREFIX and fails the test if it did not finish as
# promised (tap_verdict). Its diagnostics are shown when something failed.
tap_run() {
	local prefix=$1 secs=$2 log status before=$KTAP_CNT_FAIL
	shift 2
	local start=$SECONDS
	log=$(mktemp)
	timeout -k 5 "$secs" "$@" > "$log" 2>&1
	status=$?
	time_diag "$prefix" "$start"
	fold_tap "$prefix" < "$log"
	tap_verdict "$prefix" "$status" "$secs" < "$log"
	if [ "$KTAP_CNT_FAIL" -gt "$before" ]; then
		diag "$(grep -v -e '^ok ' -e '^not ok ' "$log" | tail -40)"
	fi
	rm -f "$log"
}

# prog NAME: sets PROG to the test program NAME built beside this file (make's
# TEST_GEN_PROGS_EXTENDED); fails the test and returns 1 if it was not built.
_prog_dir=$_srdma_dir
prog() {
	PROG=$_prog_dir/$1
	[ -x "$PROG" ] && return 0
	fail "test program $1" "$PROG was not built" \
		"(make -C tools/testing/selftests TARGETS=drivers/infiniband/srdma)"
	return 1
}

# c_tap PREFIX SECONDS NAME ARGS...: runs test program NAME with ARGS as tap_run.
c_tap() {
	local prefix=$1 secs=$2
	prog "$3" || return
	shift 3
	tap_run "$prefix" "$secs" "$PROG" "$@"
}

# no_user_qps_left: checks that the processes left no QP on the srdma devices (ib_mad's GSI
# QPs, comm [ib_core], belong to the devices).
user_qps() {
	rdma res show qp 2>/dev/null | grep srdma_ | grep -v "comm \[ib_core\]"
}
no_user_qps_left() {
	check "rdma res: nothing left" eval '[ -z "$(user_qps)" ]'
}

# virtio_nics: the VM's virtio-net interfaces, one per line (udev may have renamed them).
virtio_nics() {
	local n
	for n in /sys/class/net/*; do
		[ "$(basename "$(readlink "$n/device/driver" 2>/dev/null)")" = virtio_net ] &&
			echo "${n##*/}"
	done
}

# srdma_pair: srdma_a on sd0 (10.51.0.1) and srdma_b on sd1 (10.51.0.2), a veth pair whose two
# local addresses talk to each other (accept_local: ib_core resolves the path); removed when
# the script exits. Skips the whole script if they cannot be made.
srdma_pair_cleanup() {
	rdma link delete srdma_a 2>/dev/null
	rdma link delete srdma_b 2>/dev/null
	ip link del sd0 2>/dev/null
}
srdma_pair() {
	trap srdma_pair_cleanup EXIT
	srdma_pair_cleanup
	setup_veth sd0 sd1 10.51.0.1/24 10.51.0.2/24 || skip_all "cannot create a veth pair"
	sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.sd0.accept_local=1 \
		net.ipv4.conf.sd1.accept_local=1
	rdma link add srdma_a type srdma netdev sd0 || skip_all "cannot create srdma_a"
	rdma link add srdma_b type srdma netdev sd1 || skip_all "cannot create srdma_b"
}

# srdma_pair_up: srdma_pair, then waits for the RoCEv2 GIDs of its two addresses and sets ga and
# gb to their indexes.
srdma_pair_up() {
	srdma_pair
	wait_for 10 has_gid srdma_a "$(ipv4_gid 10.51.0.1)"
	wait_for 10 has_gid srdma_b "$(ipv4_gid 10.51.0.2)"
	ga=$(gid_index srdma_a "$(ipv4_gid 10.51.0.1)")
	gb=$(gid_index srdma_b "$(ipv4_gid 10.51.0.2)")
}
