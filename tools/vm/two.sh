#!/usr/bin/env bash
# The two-VM run (`make check-2vm`): two guests of the built kernel, each with one more
# virtio-net NIC, joined by a QEMU dgram netdev (UDP datagrams between two sockets on the host's
# loopback): srdma in guest A, rxe in guest B (SRDMA_2VM_PEER=srdma for srdma). Both run
# selftests/srdma_2vm.sh (installed by make ktest), which prints TAP for its side; the run fails if either side fails.
#   two.sh [OUTDIR]
# It boots two emulated guests at once: expect it to take a while, and give it the machine.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${SRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/srdma}
# srdma_2vm.sh as `make ktest` installed it, beside its helpers.
ksft=${SRDMA_BUILD:-$cache/build}/kselftest/kselftest_install/drivers/infiniband/srdma
out=${1:-$here/../../out/check-2vm}
peer=${SRDMA_2VM_PEER:-rxe}
base=${SRDMA_2VM_PORT:-47000}
rm -rf "$out"
mkdir -p "$out/a" "$out/b"

# guest SIDE LOCAL_PORT REMOTE_PORT MAC: one guest, its TAP in OUTDIR/SIDE.tap.
guest() {
	local nic="-netdev dgram,id=wire,local.type=inet,local.host=127.0.0.1,local.port=$2"
	nic+=",remote.type=inet,remote.host=127.0.0.1,remote.port=$3"
	nic+=" -device virtio-net-pci,netdev=wire,mac=$4"
	SRDMA_VM_LOG=$out/$1/dmesg.log "$here/run.sh" --timeout "${SRDMA_2VM_TIMEOUT:-3600}" \
		--qemu-opts "$nic" -- "$ksft/srdma_2vm.sh" "$1" "$peer" "$out" >"$out/$1.tap" 2>&1
}

echo "check-2vm: srdma in guest A, $peer in guest B (output in $out)"
guest a "$base" $((base + 1)) 52:54:00:64:00:01 &
a=$!
guest b $((base + 1)) "$base" 52:54:00:64:00:02 &
b=$!
wait "$a"
rc_a=$?
wait "$b"
rc_b=$?

pass=0 failed=0 skipped=0
for side in a b; do
	sed "s/^/$side: /" "$out/$side.tap"
	pass=$((pass + $(grep -c '^ok ' "$out/$side.tap")))
	failed=$((failed + $(grep -c '^not ok ' "$out/$side.tap")))
	skipped=$((skipped + $(grep -c '^ok .*# SKIP' "$out/$side.tap")))
	for pat in 'WARNING:' 'BUG:' 'Oops'; do
		if grep -q "$pat" "$out/$side/dmesg.log" 2>/dev/null; then
			echo "$side: not ok kernel log has '$pat' (see $out/$side/dmesg.log)"
			failed=$((failed + 1))
		fi
	done
done
for r in "a $rc_a" "b $rc_b"; do
	set -- $r
	if [ "$2" != 0 ]; then
		echo "$1: not ok guest exited with $2"
		failed=$((failed + 1))
	fi
done
echo "$((pass - skipped)) passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
