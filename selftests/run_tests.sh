#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the srdma kselftests (inside the VM), in the order of TEST_PROGS in the Makefile or the
# ones named, and prints one TAP stream: each test's own TAP indented as "# ", then its result.
#   run_tests.sh OUTDIR [TEST...]
# Each test's TAP is also kept in OUTDIR/TEST.tap.

here=$(dirname "$(readlink -f "$0")")
out=${1:?usage: run_tests.sh OUTDIR [TEST...]}
shift
mkdir -p "$out"
if [ $# -gt 0 ]; then
	tests=("$@")
else
	read -r -a tests <<<"$(sed -n 's/^TEST_PROGS *:\?= *//p' "$here/Makefile")"
fi
timeout=${SRDMA_TEST_TIMEOUT:-1800}

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	echo "# selftests: srdma: $t"
	timeout -k 10 "$timeout" "$here/$t" 2>&1 | tee "$out/$t.tap" | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	echo "$rc" > "$out/$t.rc"
	case $rc in
	0) echo "ok $n selftests: srdma: $t" ;;
	4) echo "ok $n selftests: srdma: $t # SKIP" ;;
	124) echo "not ok $n selftests: srdma: $t # TIMEOUT $timeout seconds" ;;
	*) echo "not ok $n selftests: srdma: $t # exit=$rc" ;;
	esac
done
