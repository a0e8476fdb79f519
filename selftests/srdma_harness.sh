#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The harness itself: a test program that crashes, hangs, stops early or exits non-zero must
# fail the run even when every result it printed passed (lib.sh: tap_run, c_tap); its subject
# is srdma_harness_prog.c.

. "$(dirname "$0")/lib.sh"
require_cmd timeout
prog srdma_harness_prog || finish

# verdict DESC WANT_PASS WANT_FAIL ARGS...: runs the program under tap_run in a subshell and
# checks how many results passed and failed there.
verdict() {
	local desc=$1 want="$2 passed, $3 failed" got
	shift 3
	got=$( (
		KTAP_TESTNO=1 KTAP_CNT_PASS=0 KTAP_CNT_FAIL=0 KTAP_CNT_SKIP=0
		tap_run prog 3 "$PROG" "$@" >/dev/null
		echo "$KTAP_CNT_PASS passed, $KTAP_CNT_FAIL failed"
	) 2>/dev/null)
	check_eq "$desc" "$want" "$got"
}

verdict "a program that ends as planned passes" 3 0 "ok" "ok" "ok" "plan"
verdict "a failing result fails once, not again for the exit status" 1 1 \
	"ok" "notok" "plan" "exit=1"
verdict "a crash after two passes fails" 2 1 "ok" "ok" "crash" "ok" "plan"
verdict "a hang is cut by the timeout and fails" 1 1 "ok" "hang"
verdict "an early exit with the plan first fails" 2 1 "plan=5" "ok" "ok"
verdict "an exit with no plan fails" 2 1 "ok" "ok"
verdict "a non-zero exit with every result passing fails" 2 1 "ok" "ok" "plan" "exit=3"
verdict "a plan that promises fewer results than printed fails" 3 1 "ok" "ok" "ok" "plan=2"
verdict "a skipped program (1..0, exit 4) does not fail" 0 0 "plan=0" "exit=4"

# c_tap: a program that was not built is a failure, not silence.
got=$( (
	KTAP_TESTNO=1 KTAP_CNT_PASS=0 KTAP_CNT_FAIL=0 KTAP_CNT_SKIP=0
	_prog_dir=$(mktemp -d)
	c_tap missing 3 srdma_missing >/dev/null
	rmdir "$_prog_dir"
	echo "$KTAP_CNT_FAIL failed"
) 2>&1)
check_eq "a program that was not built fails" "1 failed" "$got"

finish
