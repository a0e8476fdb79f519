#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Memory windows (type 1 and 2, BIND_MW, LOCAL_INV, SEND_WITH_INV) between two srdma devices on
# this host: srdma_mw.c's checks, folded into this test's TAP.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair

c_tap mw 180 srdma_mw srdma_a srdma_b
no_user_qps_left

finish
