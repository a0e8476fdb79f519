#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The provider's extended verbs between two srdma devices on this host: the work-request API
# (ibv_qp_ex, ibv_wr_*, srdma_wr_api.c) and the extended CQ (ibv_create_cq_ex, ibv_start_poll,
# ibv_wc_read_*, completion timestamps, srdma_cq_ex.c), folded into this test's TAP.

. "$(dirname "$0")/lib.sh"
require_cmd rdma ip cc timeout
load_srdma

srdma_pair

c_tap wr 180 srdma_wr_api srdma_a srdma_b
c_tap cqx 180 srdma_cq_ex srdma_a srdma_b
no_user_qps_left

finish
