#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The work-request API (ibv_qp_ex, ibv_wr_*) of the provider between two srdma devices on this
# host: srdma_wr_api.c's checks, folded into this test's TAP.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair

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
