#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# rdma-core's own Python test suite (pyverbs; Debian's python3-pyverbs ships it under
# /usr/share/doc/rdma-core/tests) against an srdma device, as a new user would run it: each of
# its tests becomes one TAP line, a skip keeps rdma-core's reason. Every test that runs must
# pass, and every test that rxe passes on this machine must pass on srdma too. The device sits
# on the VM's first virtio-net NIC, so that the rdma_cm tests find its network interface (on a
# veth pair, where there is no NIC, they skip themselves), in a namespace of its own with the
# suite: rxe, on the second NIC, needs UDP port 4791 of the initial namespace.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip python3 timeout gunzip
suite=/usr/share/doc/rdma-core/tests
[ -f "$suite/run_tests.py" ] || skip_all "rdma-core's tests are not installed (python3-pyverbs)"
python3 -c 'import pyverbs' 2>/dev/null || skip_all "no pyverbs (python3-pyverbs)"
load_srdma

mapfile -t nics < <(virtio_nics)
DEV=srdma_py NS=srdma_py
IN_NS=()
if [ "${#nics[@]}" -ge 1 ]; then
	S=${nics[0]} R=${nics[1]:-}
	IP=10.66.0.1 RXE_IP=10.66.0.2
	IN_NS=(ip netns exec "$NS")
	cleanup() {
		"${IN_NS[@]}" rdma link delete "$DEV" 2>/dev/null
		rdma link delete rxe_py 2>/dev/null
		# The NIC returns to the initial namespace when its namespace goes.
		ip netns del "$NS" 2>/dev/null
		wait_for 10 ip link show "$S" >/dev/null 2>&1
		ip addr flush dev "$S" 2>/dev/null
		[ -z "$R" ] || ip addr flush dev "$R" 2>/dev/null
	}
	trap cleanup EXIT
	cleanup
	ip netns add "$NS" && ip link set "$S" netns "$NS" || skip_all "cannot move $S"
	"${IN_NS[@]}" ip addr add "$IP/24" dev "$S" && "${IN_NS[@]}" ip link set "$S" up &&
		"${IN_NS[@]}" ip link set lo up || skip_all "cannot address $S"
	"${IN_NS[@]}" rdma link add "$DEV" type srdma netdev "$S" ||
		skip_all "cannot create $DEV on $S"
else
	diag "no virtio-net NIC: srdma on a veth, the rdma_cm tests will skip"
	srdma_pair
	DEV=srdma_a IP=10.51.0.1 R=
fi
wait_for 10 gid_index "$DEV" "$(ipv4_gid "$IP")" || skip_all "$DEV has no GID for $IP"
gidx=$(gid_index "$DEV" "$(ipv4_gid "$IP")")

work=$(mktemp -d)
cp -r "$suite" "$work/tests"
gunzip -f "$work"/tests/*.gz

# run_suite DEV GID_INDEX OUT [PREFIX...]: the whole suite against DEV, its output in OUT.
run_suite() {
	local dev=$1 gid=$2 out=$3
	shift 3
	(cd "$work" && timeout -k 10 1200 "$@" python3 tests/run_tests.py --dev "$dev" \
		--gid "$gid" -v) > "$out" 2>&1
}

# verdicts OUT: "VERDICT NAME" per test. unittest -v prints "test_name (module.Class.test_name)",
# the first line of the test's docstring if it has one, then " ... " and the verdict: ok,
# skipped 'why', FAIL, ERROR; what the test printed meanwhile may push the verdict onto a line
# of its own.
verdicts() {
	local line name=
	while IFS= read -r line; do
		case $line in
		"test_"*" ("*")"*) name="${line%%)*})" ;;
		esac
		case $line in
		*" ... ok" | ok) echo "ok $name" ;;
		*" ... skipped "*) echo "skip $name # ${line##* ... skipped }" ;;
		"skipped "*) echo "skip $name # ${line#skipped }" ;;
		*" ... FAIL" | *" ... ERROR" | *" ... unexpected success" | FAIL | ERROR)
			echo "fail $name # ${line##* ... }" ;;
		esac
	done < "$1"
}

run_suite "$DEV" "$gidx" "$work/out" "${IN_NS[@]}"
rc=$?
ran=0
while read -r verdict rest; do
	case $verdict in
	ok) ok "$rest"; ran=$((ran + 1)) ;;
	skip) skip "${rest%% # *}" "${rest#* # }" ;;
	fail) fail "${rest%% # *}" "rdma-core says ${rest#* # }" ;;
	esac
done < <(verdicts "$work/out")
if [ "$KTAP_CNT_FAIL" -gt 0 ] || [ "$ran" -eq 0 ]; then
	diag "$(sed -n '/^=\{20,\}$/,$p' "$work/out" | head -150)"
fi
diag "srdma: $(grep -E '^(Ran |OK|FAILED)' "$work/out" | tr '\n' ' ')"
# A failure the parsing above missed still fails here: unittest's own verdict must be OK.
check "the suite ran to its end and says OK (exit $rc, $ran tests passed)" \
	eval "grep -qE '^Ran [0-9]+ tests' '$work/out' && grep -qE '^OK' '$work/out' &&
		[ $rc -eq 0 ] && [ $ran -gt 0 ]"

# The same suite on rxe, on the other NIC: what it passes, srdma must pass.
rxe_ready() {
	[ -n "$R" ] || { echo "no second virtio-net NIC"; return 1; }
	modprobe rdma_rxe 2>&1 || return 1
	ip addr add "$RXE_IP/24" dev "$R" 2>&1 && ip link set "$R" up 2>&1 || return 1
	rdma link add rxe_py type rxe netdev "$R" 2>&1 || return 1
	wait_for 10 gid_index rxe_py "$(ipv4_gid "$RXE_IP")" || { echo "rxe_py: no GID"; return 1; }
}
if why=$(rxe_ready); then
	run_suite rxe_py "$(gid_index rxe_py "$(ipv4_gid "$RXE_IP")")" "$work/rxe"
	diag "rxe: $(grep -E '^(Ran |OK|FAILED)' "$work/rxe" | tr '\n' ' ')"
	missing=$(comm -23 <(verdicts "$work/rxe" | sed -n 's/^ok //p' | sort) \
		<(verdicts "$work/out" | sed -n 's/^ok //p' | sort))
	passed=$(verdicts "$work/rxe" | grep -c '^ok ')
	check "every test rxe passes ($passed), srdma passes ($ran)" test -z "$missing"
	[ -z "$missing" ] || diag "rxe passes, srdma does not: $missing"
	rdma link delete rxe_py
else
	skip "srdma passes what rxe passes" "rxe on the second NIC: $why"
fi
no_user_qps_left
rm -rf "$work"

finish
