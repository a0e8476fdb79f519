#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Memory windows (type 1 and 2, BIND_MW, LOCAL_INV, SEND_WITH_INV) between two srdma devices on
# this host: srdma_mw.c's checks, folded into this test's TAP.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair

bin=$(mktemp -d)/srdma_mw
if cc -O2 -Wall -Werror -o "$bin" "$(dirname "$0")/srdma_mw.c" -libverbs; then
	fold_tap mw < <(timeout 180 "$bin" srdma_a srdma_b 2>&1)
else
	fail "build srdma_mw.c"
fi
rm -rf "$(dirname "$bin")"
# ib_mad's GSI QPs (comm [ib_core]) belong to the devices.
check "rdma res: nothing left" eval '[ -z "$(rdma res show qp 2>/dev/null | grep srdma_ | grep -v "comm \[ib_core\]")" ]'

finish
