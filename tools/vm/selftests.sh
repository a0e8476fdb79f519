#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# In the VM: the installed srdma kselftests under the kernel's runner (run_kselftest.sh), all of
# them or the TESTs named; the runner's TAP, with each test's own, goes to stdout and TAPFILE.
#   selftests.sh KSFT_INSTALL_PATH TAPFILE [TEST...]
# SRDMA_TEST_TIMEOUT overrides the suite's per-test limit (its settings file), for slow kernels.
set -o pipefail
ksft=${1:?usage: selftests.sh KSFT_INSTALL_PATH TAPFILE [TEST...]}
tap=${2:?usage: selftests.sh KSFT_INSTALL_PATH TAPFILE [TEST...]}
shift 2
collection=drivers/infiniband/srdma
sel=()
for t in "$@"; do
	sel+=(-t "$collection:$t")
done
[ ${#sel[@]} -gt 0 ] || sel=(-c "$collection")
# Each test's own output goes to the runner's per-test log (/tmp/TEST, -p) and is put back in
# front of its result line: the runner's default, logging to /dev/stdout, does not reach a pipe
# in this guest but the console.
"$ksft/run_kselftest.sh" -p "${sel[@]}" ${SRDMA_TEST_TIMEOUT:+-o "$SRDMA_TEST_TIMEOUT"} 2>&1 |
	while IFS= read -r line; do
		case $line in
		"# selftests: $collection: "*)
			start=$SECONDS
			;;
		"ok "*" selftests: $collection: "* | "not ok "*" selftests: $collection: "*)
			name=${line#* selftests: "$collection": }
			cat "/tmp/${name%% *}" 2>/dev/null
			took=$((SECONDS - ${start:-0}))
			;;
		esac
		printf '%s\n' "$line"
		# A diagnostic after the result, where check.sh's parser ignores it: CI has a time
		# budget, and this says which test spends it.
		if [ -n "${took:-}" ]; then
			printf '# srdma-time: %s %d s\n' "${name%% *}" "$took"
			took=
		fi
	done | tee "$tap"
