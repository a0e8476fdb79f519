#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The work-request API (ibv_qp_ex, ibv_wr_*) of the provider between two srdma devices on this
# host: srdma_wr_api.c's checks, folded into this test's TAP.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair

c_tap wr 180 srdma_wr_api srdma_a srdma_b
no_user_qps_left

finish
