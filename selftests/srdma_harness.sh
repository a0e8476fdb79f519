#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The harness itself: a test program that crashes, hangs, stops early or exits non-zero must
# fail the run even when every result it printed passed (lib.sh: tap_run, c_tap).

. "$(dirname "$0")/lib.sh"
require_cmd cc timeout

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# A program that prints the TAP its arguments ask for, then ends as the last one says.
cat > "$dir/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "ok"))
			printf("ok %d step\n", ++n);
		else if (!strcmp(argv[i], "notok"))
			printf("not ok %d step\n", ++n);
		else if (!strncmp(argv[i], "plan=", 5))
			printf("1..%s\n", argv[i] + 5);
		else if (!strcmp(argv[i], "plan"))
			printf("1..%d\n", n);
		else if (!strcmp(argv[i], "crash")) {
			fflush(stdout);
			*(volatile int *)0 = 1;
		} else if (!strcmp(argv[i], "hang")) {
			fflush(stdout);
			pause();
		} else if (!strncmp(argv[i], "exit=", 5))
			return atoi(argv[i] + 5);
	}
	return 0;
}
EOF
if ! out=$(cc -O2 -Wall -Werror -o "$dir/prog" "$dir/prog.c" 2>&1); then
	fail "build the harness test program" "$out"
	finish
fi

# verdict DESC WANT_PASS WANT_FAIL ARGS...: runs the program under tap_run in a subshell and
# checks how many results passed and failed there.
verdict() {
	local desc=$1 want="$2 passed, $3 failed" got
	shift 3
	got=$( (
		_tap_n=0 _tap_pass=0 _tap_fail=0 _tap_skip=0
		tap_run prog 3 "$dir/prog" "$@" >/dev/null
		echo "$_tap_pass passed, $_tap_fail failed"
	) 2>/dev/null)
	check_eq "$desc" "$want" "$got"
}

verdict "a program that ends as planned passes" 3 0 ok ok ok plan
verdict "a failing result fails once, not again for the exit status" 1 1 ok notok plan exit=1
verdict "a crash after two passes fails" 2 1 ok ok crash ok plan
verdict "a hang is cut by the timeout and fails" 1 1 ok hang
verdict "an early exit with the plan first fails" 2 1 plan=5 ok ok
verdict "an exit with no plan fails" 2 1 ok ok
verdict "a non-zero exit with every result passing fails" 2 1 ok ok plan exit=3
verdict "a plan that promises fewer results than printed fails" 3 1 ok ok ok plan=2
verdict "a skipped program (1..0, exit 4) does not fail" 0 0 plan=0 exit=4

# c_tap: a program that does not build is a failure, not silence.
printf 'int main(void) { return undefined; }\n' > "$dir/broken.c"
got=$( (
	_tap_n=0 _tap_pass=0 _tap_fail=0 _tap_skip=0
	_prog_src=$dir
	c_tap broken 3 broken >/dev/null
	echo "$_tap_fail failed"
) 2>&1)
check_eq "a program that does not compile fails" "1 failed" "$got"

finish
