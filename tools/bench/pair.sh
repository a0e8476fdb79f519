# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the bench scripts that run in the VM (module-ab.sh, send-write.sh): the kselftests'
# helpers (srdma_pair_up: two srdma devices of one namespace over a veth) and a perftest pair
# between those devices, pinned as `make bench` pins them.
# The kselftests' helpers, as `make ktest` installed them.
. "${SRDMA_KSELFTEST:?no SRDMA_KSELFTEST: run through tools/vm/run.sh}/lib.sh"

# bench_perftest PORT PROG ARGS...: PROG's server on srdma_a (vCPU 0) and client on srdma_b
# (vCPU 1) over TCP port PORT; prints the client's last result line.
bench_perftest() {
	local port=$1 p=$2 srv
	shift 2
	timeout 120 taskset -c 0 "$p" -F -d srdma_a -x "$ga" -p "$port" "$@" > /tmp/srv.log 2>&1 &
	srv=$!
	wait_for 10 tcp_listening "$port"
	timeout 110 taskset -c 1 "$p" -F -d srdma_b -x "$gb" -p "$port" "$@" 10.51.0.1 \
		> /tmp/cli.log 2>&1
	wait "$srv"
	grep -E "^ *[0-9]+ +[0-9]+ " /tmp/cli.log | tail -1
}
