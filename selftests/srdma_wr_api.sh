#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The work-request API (ibv_qp_ex, ibv_wr_*) of the provider between two srdma devices on this
# host: srdma_wr_api.c's checks, folded into this test's TAP.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

A=sd0 B=sd1
cleanup() {
	rdma link delete srdma_a 2>/dev/null
	rdma link delete srdma_b 2>/dev/null
	ip link del "$A" 2>/dev/null
}
trap cleanup EXIT
cleanup
setup_veth "$A" "$B" 10.51.0.1/24 10.51.0.2/24 || skip_all "cannot create a veth pair"
# Two local addresses talk to each other only with accept_local (ib_core resolves the path).
sysctl -qw net.ipv4.conf.all.accept_local=1 "net.ipv4.conf.$A.accept_local=1" \
	"net.ipv4.conf.$B.accept_local=1"
rdma link add srdma_a type srdma netdev "$A" || skip_all "cannot create srdma_a"
rdma link add srdma_b type srdma netdev "$B" || skip_all "cannot create srdma_b"

bin=$(mktemp -d)/srdma_wr_api
if cc -O2 -Wall -Werror -o "$bin" "$(dirname "$0")/srdma_wr_api.c" -libverbs; then
	fold_tap wr < <(timeout 180 "$bin" srdma_a srdma_b 2>&1)
else
	fail "build srdma_wr_api.c"
fi
rm -rf "$(dirname "$bin")"
# ib_mad's GSI QPs (comm [ib_core]) belong to the devices.
check "rdma res: nothing left" eval '[ -z "$(rdma res show qp 2>/dev/null | grep srdma_ | grep -v "comm \[ib_core\]")" ]'

finish
