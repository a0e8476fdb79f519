# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the bench scripts that run in the VM (module-ab.sh, send-write.sh): the kselftests'
# helpers (srdma_pair_up: two srdma devices of one namespace over a veth) and a perftest pair
# between those devices, pinned as `make bench` pins them.
# The kselftests' helpers, as `make ktest` installed them.
. "${SRDMA_KSELFTEST:?no SRDMA_KSELFTEST: run through tools/vm/run.sh}/lib.sh"

# pair_loopback: bench_perftest runs between srdma_pair_up's two devices (server, client),
# which take the loopback transport; bench_wire_up switches to the wire pair.
pair_loopback() {
	SRDMA_WIRE_NS= pair_a=srdma_a pair_b=srdma_b
}
pair_loopback

# bench_perftest PORT PROG ARGS...: PROG's server on $pair_a (vCPU 0) and client on $pair_b
# (vCPU 1) over TCP port PORT; prints the client's last result line. With SRDMA_WIRE_NS set
# (bench_wire_up), the two run in the namespaces of make bench's srdma-wire pair, where every
# message goes on the wire.
bench_perftest() {
	local port=$1 p=$2 srv sns=() cns=() addr=10.51.0.1
	shift 2
	if [ -n "${SRDMA_WIRE_NS:-}" ]; then
		sns=(ip netns exec "$SRV_NS") cns=(ip netns exec "$CLI_NS")
		addr=$SRV_ADDR
	fi
	timeout 120 "${sns[@]}" taskset -c 0 "$p" -F -d "$pair_a" -x "$ga" -p "$port" "$@" \
		> /tmp/srv.log 2>&1 &
	srv=$!
	wait_for 10 tcp_listening "$port" ${SRDMA_WIRE_NS:+"$SRV_NS"}
	timeout 110 "${cns[@]}" taskset -c 1 "$p" -F -d "$pair_b" -x "$gb" -p "$port" "$@" \
		"$addr" > /tmp/cli.log 2>&1
	wait "$srv"
	grep -E "^ *[0-9]+ +[0-9]+ " /tmp/cli.log | tail -1
}

# bench_wire_up, bench_wire_down: two srdma devices in two namespaces (make bench's srdma-wire),
# for bench_perftest.
bench_wire_up() {
	. "$(dirname "${BASH_SOURCE[0]}")/variants.sh"
	variant_srdma_wire_setup > /dev/null || return 1
	ga=$GID_INDEX gb=$GID_INDEX SRDMA_WIRE_NS=1 pair_a=$SRV_DEV pair_b=$CLI_DEV
}
bench_wire_down() {
	variant_srdma_wire_teardown
	pair_loopback
}
