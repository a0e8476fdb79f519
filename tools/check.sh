#!/usr/bin/env bash
# `make check`: every test of srdma in one VM boot, then the verdict.
#   check.sh OUTDIR
# Runs the kselftests (selftests/), the KUnit tests and Rust doctests of the kernel crate (at
# boot, kunit.enable=1), checks the kernel log for warnings, then the benchmark's smoke run and
# make lint.
# Ends with the line "N passed, N failed, N skipped" and exits non-zero on any failure.
# SRDMA_CHECK_TESTS="srdma_data.sh ..." runs only those kselftests (while developing).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: check.sh OUTDIR}
rm -rf "$out"
mkdir -p "$out"
export SRDMA_VM_LOG=$out/dmesg.log

pass=0 fail=0 skip=0
failed=()
# CI has a time budget: each phase says what it spent.
lap_start=$SECONDS
lap() { # lap PHASE
	echo "check: $1 took $((SECONDS - lap_start)) s"
	lap_start=$SECONDS
}
result() { # result pass|fail|skip NAME
	case $1 in
	pass) pass=$((pass + 1)) ;;
	fail) fail=$((fail + 1)); failed+=("$2") ;;
	skip) skip=$((skip + 1)) ;;
	esac
}

# Host side: the provider's unit tests (ABI layouts).
echo "check: provider unit tests"
if (cd "$top/tools/provider" && CARGO_TARGET_DIR="${SRDMA_CACHE:?}/provider-target" \
	LIBCLANG_PATH=/usr/lib/llvm-16/lib cargo test --release --quiet 2>&1) > "$out/provider-test.log"; then
	:
fi
cat "$out/provider-test.log"
ran=0
while read -r p f; do
	ran=1
	pass=$((pass + p))
	[ "$f" -eq 0 ] || { fail=$((fail + f)); failed+=("provider: $f cargo tests"); }
done < <(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$out/provider-test.log")
[ "$ran" = 1 ] || result fail "provider: cargo test did not run"
lap "provider unit tests"

# The set-up from nothing, without the kernel build: tools, unpack, in-tree hooks and config in
# a throwaway cache, so that a step that only a warm cache makes work fails here.
if [ "${SRDMA_CHECK_FRESH:-1}" = 1 ]; then
	echo "check: set-up from an empty cache (tools/fresh.sh --configure, log in $out/fresh.log)"
	if SRDMA_FRESH_KEEP=0 "$top/tools/fresh.sh" --configure > "$out/fresh.log" 2>&1; then
		result pass "set-up from an empty cache"
		tail -1 "$out/fresh.log"
	else
		result fail "set-up from an empty cache (see $out/fresh.log)"
		tail -20 "$out/fresh.log"
	fi
else
	result skip "set-up from an empty cache (SRDMA_CHECK_FRESH=0)"
fi
lap "set-up from an empty cache"

# The kselftests as `make ktest` installed them from the kernel tree (KSFT_INSTALL_PATH), run
# by the kernel's runner in the VM.
ksft=${SRDMA_BUILD:?}/kselftest/kselftest_install
echo "check: booting the VM and running the selftests (output in $out)"
# shellcheck disable=SC2086
"$top/tools/vm/run.sh" --timeout "${SRDMA_CHECK_TIMEOUT:-4200}" --append kunit.enable=1 \
	${SRDMA_VM_APPEND:+--append "$SRDMA_VM_APPEND"} \
	-- "$top/tools/vm/selftests.sh" "$ksft" "$out/selftests.tap" ${SRDMA_CHECK_TESTS:-} 2>&1 |
	tee "$out/vm-console.log"
vm_rc=${PIPESTATUS[0]}
if [ "$vm_rc" -ne 0 ]; then
	result fail "VM run (exit $vm_rc)"
fi
lap "VM boot and selftests"
echo "check: the slowest selftests (seconds):"
sed -n 's/^# srdma-time: \([^ ]*\) \([0-9]*\) s$/\2 \1/p' "$out/selftests.tap" | sort -rn | head -8 |
	sed 's/^/  /'

# The runner's stream, one test after another: "# selftests: COLLECTION: NAME", the test's own
# TAP with "# " in front, then the runner's "ok N ..." or "not ok N ... # exit=RC" line. Each
# test's TAP goes to selftests/NAME.tap and its exit status to NAME.rc (4: a skip, 124: timeout).
mkdir -p "$out/selftests"
awk -v dir="$out/selftests" '
	/^# selftests: drivers\/infiniband\/srdma: / { name = $NF; tap = dir "/" name ".tap"; printf "" > tap; next }
	name != "" && /^(not )?ok [0-9]+ selftests: drivers\/infiniband\/srdma: / {
		rc = 0
		if ($0 ~ /^not ok/) {
			rc = 1
			if ($0 ~ /# TIMEOUT/) rc = 124
			else if (match($0, /# exit=[0-9]+/)) rc = substr($0, RSTART + 7, RLENGTH - 7)
		} else if ($0 ~ /# SKIP/) rc = 4
		print rc > (dir "/" name ".rc")
		close(tap); close(dir "/" name ".rc"); name = ""; next
	}
	name != "" { line = $0; sub(/^# ?/, "", line); print line >> tap }
' "$out/selftests.tap" 2>/dev/null

# Subtests of every kselftest; a test that failed without a failing subtest (it crashed, timed
# out or lost its plan) counts as one failure.
for tap in "$out"/selftests/*.tap; do
	[ -e "$tap" ] || continue
	name=$(basename "$tap" .tap)
	rc=$(cat "$out/selftests/$name.rc" 2>/dev/null || echo missing)
	subfail=0 results=0 plan=
	while IFS= read -r line; do
		case $line in
		"not ok "*) result fail "$name: ${line#not ok }"; subfail=1 ;;
		"ok "*"# SKIP"*) result skip "" ;;
		"ok "*) result pass "" ;;
		1..[0-9]*) plan=${line#1..}; plan=${plan%%[!0-9]*}; continue ;;
		*) continue ;;
		esac
		results=$((results + 1))
	done < "$tap"
	if [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$subfail" = 0 ]; then
		result fail "$name (exit $rc)"
	elif [ "$plan" != "$results" ]; then
		# It stopped before its plan, or printed results its plan does not count.
		result fail "$name: plan '1..$plan', $results results"
	fi
done
if ! ls "$out"/selftests/*.tap >/dev/null 2>&1; then
	result fail "selftests did not run"
fi

# KUnit suites (including the Rust doctests) ran at boot; take their totals from the log.
if [ -s "$out/dmesg.log" ]; then
	suites=$(sed -n 's/^\[[ 0-9.]*\] *# \([a-z0-9_]*\): pass:\([0-9]*\) fail:\([0-9]*\) skip:\([0-9]*\) total:.*/\1 \2 \3 \4/p' "$out/dmesg.log")
	if [ -z "$suites" ]; then
		result fail "KUnit: no suite ran"
	fi
	while read -r suite p f s; do
		[ -n "$suite" ] || continue
		echo "check: KUnit $suite: $p passed, $f failed, $s skipped"
		pass=$((pass + p)); skip=$((skip + s))
		if [ "$f" -gt 0 ]; then
			fail=$((fail + f))
			while IFS= read -r l; do failed+=("KUnit $suite: $l"); done \
				< <(sed -n 's/^\[[ 0-9.]*\] *\(not ok [0-9]* .*\)/\1/p' "$out/dmesg.log")
		fi
	done <<<"$suites"
	grep -q 'rust_doctest_kernel_rdma' "$out/dmesg.log" ||
		result fail "KUnit: the kernel::rdma doctests did not run"

	# The kernel log must be clean.
	bad='WARNING:|BUG:|Oops|general protection fault|Call Trace:|UBSAN:|kernel BUG|refcount_t:|list_(add|del) corruption|unreferenced object|RCU stall|hung_task|blocked for more than'
	if grep -Eq "$bad" "$out/dmesg.log"; then
		result fail "kernel log: warnings (see $out/dmesg.log)"
		grep -E -A12 "$bad" "$out/dmesg.log" | head -60
	else
		result pass "kernel log clean"
	fi
else
	result fail "no kernel log from the VM"
fi

# `make vm CMD=...` runs the whole command line in the VM: its ";", "&&", "|", redirections and
# quotes stay intact, and nothing of it runs on the host (whose /tmp the guest cannot see).
# SRDMA_CHECK_VMCMD=0 leaves it out, because `make vm` first rebuilds the kernel from the
# working tree (while developing tests against a kernel someone else is changing).
if [ "${SRDMA_CHECK_VMCMD:-1}" = 1 ]; then
	probe=/tmp/srdma-vm-cmd.$$
	rm -f "$probe"
	vm_out=$out/vm-cmd.txt
	if make -s -C "$top" vm CMD="uname -r > $vm_out && echo 'two  words' | tr a-z A-Z >> $vm_out; touch $probe" \
		> "$out/vm-cmd.log" 2>&1 &&
		[ ! -e "$probe" ] &&
		[ "$(cat "$vm_out" 2>/dev/null)" = "$(cat "$SRDMA_BUILD/include/config/kernel.release")
TWO  WORDS" ]; then
		result pass "make vm CMD: a compound command runs whole in the VM"
	else
		result fail "make vm CMD: a compound command runs whole in the VM (see $out/vm-cmd.log)"
		cat "$out/vm-cmd.log" "$vm_out" 2>/dev/null | tail -20
		[ ! -e "$probe" ] || echo "check: part of CMD ran on the host: it created $probe"
	fi
	rm -f "$probe"
else
	result skip "make vm CMD (SRDMA_CHECK_VMCMD=0)"
fi
lap "make vm CMD"

# The benchmark's smoke run (another VM boot): it must complete; its numbers gate nothing, so
# it boots the test kernel rather than building the bench kernel too.
if [ "${SRDMA_CHECK_BENCH:-1}" = 1 ]; then
	echo "check: BENCH_QUICK=1 benchmark smoke run (output in $out/bench)"
	if BENCH_QUICK=1 SRDMA_BENCH_BUILD="${SRDMA_BUILD:?}" "$top/tools/bench/bench.sh" "$out/bench" \
		> "$out/bench.log" 2>&1 &&
		[ -s "$out/bench/results.md" ]; then
		result pass "bench smoke run"
	else
		result fail "bench smoke run (see $out/bench.log)"
		tail -20 "$out/bench.log"
	fi
else
	result skip "bench smoke run (SRDMA_CHECK_BENCH=0)"
fi
lap "bench smoke run"

# make lint, last because its clippy pass rebuilds the Rust objects of the test kernel:
# rustfmt, clippy, rustdoc, htmldocs and the patch series through checkpatch --strict.
if [ "${SRDMA_CHECK_LINT:-1}" = 1 ]; then
	echo "check: make lint (log in $out/lint.log)"
	# The series' author and sign-off are the git user's; a CI clone may have none.
	if ! git -C "$top" config user.email >/dev/null; then
		export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0="srdma check" \
			GIT_CONFIG_KEY_1=user.email GIT_CONFIG_VALUE_1="check@srdma.invalid"
	fi
	if SRDMA_SERIES_OUT=$out/series "$top/tools/lint.sh" > "$out/lint.log" 2>&1; then
		result pass "make lint: rustfmt, clippy, rustdoc, htmldocs, checkpatch --strict of make series"
	else
		result fail "make lint (see $out/lint.log)"
		tail -30 "$out/lint.log"
	fi
else
	result skip "make lint (SRDMA_CHECK_LINT=0)"
fi
lap "make lint"

if [ ${#failed[@]} -gt 0 ]; then
	echo "check: failures:"
	printf '  %s\n' "${failed[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
