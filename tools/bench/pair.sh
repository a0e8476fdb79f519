# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the bench scripts that run in the VM (module-ab.sh, send-write.sh): two srdma
# devices of one namespace over a veth (the kselftests' srdma_pair) and a perftest pair between
# them, pinned as `make bench` pins them.
# The kselftests' helpers, as `make ktest` installed them.
. "${SRDMA_KSELFTEST:?no SRDMA_KSELFTEST: run through tools/vm/run.sh}/lib.sh"

# Creates srdma_a and srdma_b and sets ga and gb, the indexes of their RoCEv2 IPv4 GIDs.
bench_pair() {
	srdma_pair
	wait_for 10 has_gid srdma_a "$(ipv4_gid 10.51.0.1)"
	wait_for 10 has_gid srdma_b "$(ipv4_gid 10.51.0.2)"
	ga=$(gid_index srdma_a "$(ipv4_gid 10.51.0.1)")
	gb=$(gid_index srdma_b "$(ipv4_gid 10.51.0.2)")
}

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
